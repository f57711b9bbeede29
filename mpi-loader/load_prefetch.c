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
    /* Read-ahead advice for all of this rank's chunks at once. */
    int fd = open(xta, O_RDONLY | O_CLOEXEC);
    load_advise_chunks(fd, s.q, s.n, m->chunk_bytes);
    if (fd >= 0)
        close(fd);
    load_plan_init(&p, m, &v);

    load_progress_start(c, &pr, "prefetch", 0);
    for (uint64_t r = 0; r < s.rounds; r++) {
        const uint64_t *q;
        size_t n;
        int mrc;

        /* Only the chunk list matters here: p.q/p.nchunks, no runs. */
        load_share_round(&s, r, &q, &n);
        p.q = q;
        p.nchunks = n;
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
    p.q = NULL;
    load_plan_fini(&p);
    load_share_fini(&s);
    drx_array_close(a);
    return status;
}
