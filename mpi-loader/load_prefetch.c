/* drx-load prefetch: bring a view's chunks into the page cache.
 *
 * Each rank first asks the kernel for read-ahead of all its chunks at once
 * (posix_fadvise WILLNEED starts the disk reads without waiting), then
 * reads them with the same collective rounds as export, which waits until
 * they are really cached (WILLNEED alone is only a hint the kernel may drop
 * under memory pressure).  The bytes read are thrown away.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load_i.h"

struct advice {
    int fd;
    uint64_t cb; /* chunk bytes */
};

/* posix_fadvise(WILLNEED) of chunks [q, q + n): a hint, so never an error */
static int advise_range(uint64_t q, uint64_t n, void *arg)
{
    const struct advice *a = arg;
    posix_fadvise(a->fd, (off_t)(q * a->cb), (off_t)(n * a->cb), POSIX_FADV_WILLNEED);
    return 0;
}

int load_cmd_prefetch(struct load_ctx *c, int argc, char **argv)
{
    struct drx_err err = {{0}};
    struct drx_array *a = NULL;
    struct drx_view v;
    struct load_share s = {0};
    struct load_plan p = {0};
    struct load_progress pr;
    MPI_File xf = MPI_FILE_NULL;
    MPI_Datatype ft = MPI_BYTE;
    char path[PATH_MAX], xta[PATH_MAX + 8];
    int rc, status = 1;

    if (argc < 2) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: prefetch ARRAY [VIEW...]\n");
        return 2;
    }
    if (load_open_view(c, argv[1], false, argv + 2, argc - 2, &a, &v, path, sizeof(path)) < 0)
        goto out;
    const struct drx_array_meta *m = drx_array_meta(a);
    snprintf(xta, sizeof(xta), "%s.xta", path);
    if (load_open_file(c, xta, MPI_MODE_RDONLY, &xf, "opening") < 0)
        goto out;
    if (load_share_init(c, m, &v, &s) < 0)
        goto out;
    /* Read-ahead advice for all of this rank's chunks at once (one pass
     * of the planner over the share; it comes back to the share's start). */
    struct advice adv = {open(xta, O_RDONLY | O_CLOEXEC), m->chunk_bytes};
    if (adv.fd >= 0) {
        (void)load_share_ranges(&s, advise_range, &adv); /* a hint: nothing to fail */
        close(adv.fd);
    }
    load_plan_init(&p, m, &v);

    load_progress_start(c, &pr, "prefetch", 0);
    for (uint64_t r = 0; r < s.rounds; r++) {
        size_t n;
        int mrc;

        /* Only the chunk list matters here, no runs. */
        rc = load_plan_round(&p, s.plan, load_share_round(&s, r), false);
        n = p.nchunks;
        if (rc == 0)
            rc = load_type_chunks(&p, &ft);
        if (rc < 0)
            drx_err_set(&err, -rc, "chunk type: %s", strerror(-rc));
        if (rc == 0) {
            mrc = MPI_File_set_view(xf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            if (mrc == MPI_SUCCESS)
                mrc = MPI_File_read_all(xf, s.chunk_buf, (int)(n * m->chunk_bytes), MPI_BYTE,
                                        MPI_STATUS_IGNORE);
            if (mrc != MPI_SUCCESS)
                rc = load_mpi_err(&err, mrc, "reading %s", xta);
        }
        load_type_free(&ft);
        if (load_agree(c, rc, &err, "prefetch") < 0)
            goto out;
        load_progress_add(c, &pr, n * m->chunk_bytes);
    }
    load_progress_end(&pr);
    status = 0;
out:
    load_type_free(&ft);
    load_close_file(&xf);
    load_plan_fini(&p);
    load_share_fini(&s);
    drx_array_close(a);
    return status;
}
