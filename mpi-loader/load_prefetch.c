/* drx-load prefetch: bring a view's chunks into the page cache.
 *
 * Each rank first asks the kernel for read-ahead of all its chunks at once
 * (posix_fadvise WILLNEED starts the disk reads without waiting), then
 * reads them with libdrxmp's rounds, as export does, which waits until
 * they are really cached (WILLNEED alone is only a hint the kernel may drop
 * under memory pressure).  The bytes read are thrown away.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "load_i.h"
#include "mp_i.h"

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
    drx_mp *a = NULL;
    struct drx_view v;
    struct mp_xfer s;
    struct load_progress pr;
    int status = 1;

    if (argc < 2) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: prefetch ARRAY [VIEW...]\n");
        return 2;
    }
    if (load_open_view(c, argv[1], false, argv + 2, argc - 2, &a, &v, NULL) < 0)
        return 1;
    /* only whole chunks: no runs */
    if (load_share_begin(c, a, &v, false, &s) < 0)
        goto out;
    /* Read-ahead advice for all of this rank's chunks at once (one pass
     * of the planner over the share; it comes back to the share's start). */
    struct advice adv = {mp_xta_open(a, O_RDONLY), s.m->chunk_bytes};
    if (adv.fd >= 0) {
        (void)mp_xfer_ranges(&s, advise_range, &adv); /* a hint: nothing to fail */
        close(adv.fd);
    }
    load_progress_start(c, &pr, "prefetch", 0);
    uint64_t r;
    for (r = 0; r < s.rounds; r++) {
        if (load_mp_report(c, mp_xfer_round(&s, r), "prefetch") < 0 ||
            load_mp_report(c, mp_xfer_read(&s), "prefetch") < 0)
            break;
        load_progress_add(c, &pr, s.p.nchunks * s.m->chunk_bytes);
    }
    load_progress_end(&pr);
    status = r < s.rounds;
    mp_xfer_end(&s);
out:
    drx_mp_close(&a);
    return status;
}
