/* An .xmd as a user may plant it: read in full as drxfs and drx read it
 * (full metadata, and counts only for DRX_METAONLY handles), then its first
 * half read and the rest taken as appended growth records (a reader
 * following an extension).  What is accepted must keep F* inside the
 * chunks the file counts. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_i.h"
#include "drx/format.h"
#include "drx/view.h"
#include "fuzz.h"

/* F* of the first chunk, the last, and the last along each dimension:
 * each below nchunks, or the metadata would send I/O outside the .xta. */
static void check_map(const struct drx_array_meta *m)
{
    uint64_t idx[DRX_MAX_RANK] = {0}, last[DRX_MAX_RANK];

    if (m->map.rank != m->rank || m->map.nchunks == 0)
        abort();
    for (int d = 0; d < m->rank; d++) {
        last[d] = m->map.bound[d] - 1;
        if (m->bounds[d] == 0 || (m->bounds[d] - 1) / m->chunk[d] != last[d])
            abort();
    }
    if (drx_map_address(&m->map, idx) >= m->map.nchunks ||
        drx_map_address(&m->map, last) >= m->map.nchunks)
        abort();
    for (int d = 0; d < m->rank; d++) {
        idx[d] = last[d];
        if (drx_map_address(&m->map, idx) >= m->map.nchunks)
            abort();
        idx[d] = 0;
    }
}

/* What drxfs makes of the metadata, attributes included: the headers of
 * data.npy and data.nc and the Zarr documents. */
static void formats(const struct drx_array_meta *m)
{
    struct drx_zarr_var var = {.name = "a", .meta = m};
    struct drx_view v;
    unsigned char *buf;
    size_t len;

    drx_view_whole(m, &v);
    if (drx_nc_header(m, &v, "a", NULL, &len) == 0 && (buf = malloc(len))) {
        if (drx_nc_header(m, &v, "a", buf, &len) < 0)
            abort();
        free(buf);
    }
    memcpy(var.shape, m->bounds, sizeof var.shape);
    for (int d = 0; d < m->rank; d++)
        var.dims[d] = m->dim_name[d][0] ? m->dim_name[d] : "dim";
    free(drx_zarr_zarray(&var));
    free(drx_zarr_zattrs(&var));
}

/* Read in full, both ways; both must agree on what they accept. */
static void read_whole(const char *path)
{
    struct drx_array_meta m, c;
    struct drx_xmd_pos pos;
    struct drx_err err;
    int full = drx_xmd_read(path, &m, &pos, NULL, false, &err);
    int counts = drx_xmd_read(path, &c, &pos, NULL, true, &err);

    if ((full == 0) != (counts == 0))
        abort();
    if (full == 0) {
        check_map(&m);
        formats(&m);
        if (memcmp(m.bounds, c.bounds, sizeof m.bounds) || m.map.nchunks != c.map.nchunks)
            abort();
    }
    drx_array_meta_fini(&m);
    drx_array_meta_fini(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[PATH_MAX];
    struct drx_array_meta m;
    struct drx_xmd_pos pos;
    struct drx_err err;
    size_t half = size / 2;
    int fd = -1;

    if (fuzz_write("a.xmd", data, size, path, sizeof path) < 0)
        abort();
    read_whole(path);
    if (fuzz_write("a.xmd", data, half, path, sizeof path) < 0)
        abort();
    if (drx_xmd_read(path, &m, &pos, &fd, false, &err) < 0)
        return 0;
    if (fuzz_append(path, data + half, size - half) < 0)
        abort();
    if (drx_xmd_catch_up(fd, path, size, &m, &pos, &err) >= 0)
        check_map(&m);
    close(fd);
    drx_array_meta_fini(&m);
    return 0;
}
