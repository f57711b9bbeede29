/* libdrxmp I/O: a rank's box of elements <-> the array's chunks, with
 * collective MPI-IO in rounds (the paper's section IV.B).
 *
 * Each rank plans its own box with libcore's planner (drx/plan.h): the
 * chunks the box meets, in address order, each with its runs (elements
 * consecutive in the box's memory order).  Every rank runs as many rounds
 * as the rank with the most chunks, so the collective calls match also on
 * ranks with nothing (or nothing more) to move.  A round moves at most
 * `buffer` bytes of whole chunks per rank with one MPI_File_read_all or
 * write_all over an hindexed file type of chunk byte ranges; the copy
 * between chunks and the caller's memory is the runs'.
 *
 * Writes keep the rules every writer of an array keeps (README, "Mixed
 * writers"): the round's chunks are locked (OFD locks, tried on every rank
 * at once, all or none) before the chunks the box covers only in part are
 * read and merged, and stay locked until every rank has written.  Data
 * sieving is off on the .xta (mp.c), so no write widens into a
 * read-modify-write of bytes we do not hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "drx/plan.h"
#include "mp_i.h"

/* --- locks (shared with drx-load import) --- */

#define LOCK_GIVE_UP_S 120

void mp_unlock_round(int fd, const uint64_t *q, size_t n, uint64_t cb)
{
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && q[j] == q[j - 1] + 1; j++)
            ;
        drx_io_unlock(fd, q[i] * cb, (j - i) * cb);
    }
}

static int try_lock_round(int fd, const uint64_t *q, size_t n, uint64_t cb)
{
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && q[j] == q[j - 1] + 1; j++)
            ;
        int rc = drx_io_lock(fd, q[i] * cb, (j - i) * cb, 0);
        if (rc) {
            mp_unlock_round(fd, q, i, cb);
            return rc;
        }
    }
    return 0;
}

/* A rank holding its locks waits in collectives for ranks still waiting
 * for theirs, so locks are only tried: when any rank misses one, every
 * rank lets go of all and tries again a little later.  Two collective
 * writers of the same chunks then take turns instead of deadlocking, and
 * the short locks of drxfs and drx put are waited out. */
int mp_lock_round(MPI_Comm comm, int fd, const uint64_t *q, size_t n, uint64_t cb, int *need_read,
                  struct drx_err *err)
{
    double start = MPI_Wtime();
    int rank;
    MPI_Comm_rank(comm, &rank);
    unsigned pause_us = 1000 + 997u * (unsigned)rank % 4000;

    for (;;) {
        int rc = try_lock_round(fd, q, n, cb);
        /* -EAGAIN: somebody holds one; anything else is an error.  The
         * same reduction tells whether any rank has chunks to merge. */
        int expired = MPI_Wtime() - start > LOCK_GIVE_UP_S;
        /* the clocks of the ranks differ: giving up is voted on too, so
         * that all leave the loop in the same round */
        int mine[3] = {rc == 0 ? 1 : rc == -EAGAIN ? 0 : rc, -*need_read, -expired}, all[3];
        load_allreduce(mine, all, 3, MPI_INT, MPI_MIN, comm);
        if (all[0] == 1) {
            *need_read = -all[1];
            return 0;
        }
        if (rc == 0)
            mp_unlock_round(fd, q, n, cb);
        if (all[0] < 0)
            return mine[0] < 0
                       ? drx_err_set(err, -mine[0], "locking chunks: %s", strerror(-mine[0]))
                       : drx_err_set(err, EIO, "another rank could not lock its chunks");
        if (all[2] < 0)
            return drx_err_set(err, EDEADLK,
                               "the chunks stayed locked by another writer for %d s; "
                               "nothing of this round written",
                               LOCK_GIVE_UP_S);
        usleep(pause_us);
        if (pause_us < 50000)
            pause_us *= 2;
    }
}

/* --- whole chunks in and out --- */

/* File and memory types of the round's chunks whose want[i] is
 * want_value (all when want is NULL).  *k gets their number. */
static int chunk_types(const struct load_plan *p, const bool *want, bool want_value,
                       MPI_Datatype *ft, MPI_Datatype *mt, size_t *k)
{
    const uint64_t cb = p->meta->chunk_bytes;
    size_t n = p->nchunks, m = 0;
    uint64_t *foff = malloc((n ? n : 1) * sizeof(*foff));
    uint64_t *moff = malloc((n ? n : 1) * sizeof(*moff));
    uint64_t *len = malloc((n ? n : 1) * sizeof(*len));
    int rc = -ENOMEM;

    if (foff && moff && len) {
        for (size_t i = 0; i < n; i++) {
            if (want && want[i] != want_value)
                continue;
            foff[m] = p->q[i] * cb;
            moff[m] = (uint64_t)i * cb;
            len[m++] = cb;
        }
        rc = load_type_ranges(foff, len, m, ft, NULL);
        if (rc == 0)
            rc = load_type_ranges(moff, len, m, mt, NULL);
    }
    *k = rc == 0 ? m : 0;
    free(foff);
    free(moff);
    free(len);
    return rc;
}

int mp_read_chunks(const struct load_plan *p, MPI_File xf, unsigned char *buf, const bool *want,
                   bool want_value, uint64_t *got, struct drx_err *err)
{
    MPI_Datatype ft = MPI_BYTE, mt = MPI_BYTE;
    MPI_Status st;
    size_t k = 0;
    int count = 0;

    /* A local failure still takes part in the collective, with nothing. */
    int rc = chunk_types(p, want, want_value, &ft, &mt, &k);
    if (rc < 0) {
        load_type_free(&ft);
        load_type_free(&mt);
        k = 0;
        drx_err_set(err, -rc, "chunk types: %s", strerror(-rc));
    }
    int mrc = MPI_File_set_view(xf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_read_all(xf, buf, k ? 1 : 0, mt, &st);
    if (mrc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &count);
    if (mrc != MPI_SUCCESS && rc == 0)
        rc = load_mpi_err(err, mrc, "reading chunks");
    if (got)
        *got = (uint64_t)(count > 0 ? count : 0);
    load_type_free(&ft);
    load_type_free(&mt);
    return rc;
}

int mp_write_chunks(const struct load_plan *p, MPI_File xf, const unsigned char *buf,
                    struct drx_err *err)
{
    MPI_Datatype ft = MPI_BYTE;
    size_t n = p->nchunks;
    int rc = load_type_chunks(p, &ft);

    if (rc < 0) {
        load_type_free(&ft);
        n = 0;
        drx_err_set(err, -rc, "chunk type: %s", strerror(-rc));
    }
    int mrc = MPI_File_set_view(xf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_write_all(xf, buf, (int)(n * p->meta->chunk_bytes), MPI_BYTE,
                                 MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS && rc == 0)
        rc = load_mpi_err(err, mrc, "writing chunks");
    load_type_free(&ft);
    return rc;
}

/* --- a rank's chunks of a view, in rounds --- */

void mp_xfer_end(struct mp_xfer *x)
{
    load_plan_fini(&x->p);
    load_plan_fini(&x->ahead);
    drx_plan_destroy(x->plan);
    /* the round buffer stays with the handle for the next call */
    memset(x, 0, sizeof(*x));
}

/* BLOCK share of n chunks (as mfu_get_start_count): the first n % P
 * ranks take one more. */
static void block_share(const drx_mp *a, uint64_t n, uint64_t *start, uint64_t *count)
{
    uint64_t p = (uint64_t)a->nprocs, r = (uint64_t)a->rank;
    uint64_t base = n / p, rem = n % p;
    *count = base + (r < rem ? 1 : 0);
    *start = r * base + (r < rem ? r : rem);
}

/* The handle's round buffer, grown to at least len bytes: a program that
 * writes a step at a time reuses it instead of faulting in fresh pages at
 * every call.  NULL when out of memory (the old one stays). */
static unsigned char *round_buffer(drx_mp *a, uint64_t len)
{
    if (len > a->rbuf_len) {
        unsigned char *b = realloc(a->rbuf, len);
        if (!b)
            return NULL;
        a->rbuf = b;
        a->rbuf_len = len;
    }
    return a->rbuf;
}

/* The local part of mp_xfer_begin: x over this rank's chunks of v, its
 * round buffer, x->rounds this rank's own count.  0, or -errno with err;
 * x always takes mp_xfer_end. */
static int xfer_setup(drx_mp *a, const struct drx_view *v, bool share, bool runs,
                      struct mp_xfer *x, struct drx_err *err)
{
    memset(x, 0, sizeof(*x));
    x->a = a;
    x->m = drx_array_meta(a->arr);
    x->runs = runs;
    x->ahead_round = UINT64_MAX;
    const uint64_t cb = x->m->chunk_bytes;

    /* Every rank counts the view's chunks (a product per F* segment) and
     * seeks to its own first one: nobody lists the others' chunks. */
    int rc = drx_plan_create(x->m, v, &x->plan);
    uint64_t total = rc == 0 ? drx_plan_count(x->plan) : 0;
    if (share)
        block_share(a, total, &x->start, &x->n);
    else
        x->n = total;
    if (rc == 0)
        rc = drx_plan_seek(x->plan, x->start);
    if (rc < 0)
        drx_err_set(err, -rc, "planning the chunks: %s", strerror(-rc));
    x->batch = a->buffer / cb ? a->buffer / cb : 1;
    x->rounds = (x->n + x->batch - 1) / x->batch;
    /* a rank with fewer chunks than a round needs no more buffer */
    x->bufchunks = x->n < x->batch ? x->n : x->batch;
    if (rc == 0 && x->bufchunks && !(x->chunks = round_buffer(a, x->bufchunks * cb)))
        rc = drx_err_set(err, ENOMEM, "out of memory for %llu chunks of %llu bytes",
                         (unsigned long long)x->bufchunks, (unsigned long long)cb);
    load_plan_init(&x->p, x->m, v);
    load_plan_init(&x->ahead, x->m, v);
    return rc;
}

int mp_xfer_begin(drx_mp *a, const struct drx_view *v, bool share, bool runs, struct mp_xfer *x)
{
    struct drx_err err = {{0}};
    int rc = xfer_setup(a, v, share, runs, x, &err);
    /* every rank runs as many rounds as the busiest */
    uint64_t mine = x->rounds;
    load_allreduce(&mine, &x->rounds, 1, MPI_UINT64_T, MPI_MAX, a->comm);
    /* round 0 is planned now, so that this agreement covers it too */
    if (rc == 0 && x->rounds > 0 && (rc = mp_xfer_ahead(x, 0)) < 0)
        drx_err_set(&err, -rc, "planning a round: %s", strerror(-rc));
    rc = mp_agree(a->comm, rc, &err);
    if (rc < 0)
        mp_xfer_end(x);
    return rc;
}

static size_t round_chunks(const struct mp_xfer *x, uint64_t r)
{
    uint64_t first = r * x->batch;
    return first < x->n ? (size_t)(x->n - first < x->batch ? x->n - first : x->batch) : 0;
}

int mp_xfer_ahead(struct mp_xfer *x, uint64_t r)
{
    if (r >= x->rounds || x->ahead_round == r)
        return 0;
    x->ahead_round = r;
    x->taken += round_chunks(x, r);
    x->ahead_rc = load_plan_round(&x->ahead, x->plan, round_chunks(x, r), x->runs);
    return x->ahead_rc;
}

/* Local: round r becomes the current one. */
static int xfer_take(struct mp_xfer *x, uint64_t r)
{
    int rc = mp_xfer_ahead(x, r);

    if (rc == 0) {
        struct load_plan t = x->p;
        x->p = x->ahead;
        x->ahead = t;
        x->ahead_round = UINT64_MAX;
    }
    return rc;
}

int mp_xfer_round(struct mp_xfer *x, uint64_t r)
{
    struct drx_err err = {{0}};
    bool agreed = r == 0; /* mp_xfer_begin planned it and agreed */
    int rc = xfer_take(x, r);

    if (rc < 0)
        drx_err_set(&err, -rc, "planning a round: %s", strerror(-rc));
    return agreed ? rc : mp_agree(x->a->comm, rc, &err);
}

int mp_xfer_ranges(struct mp_xfer *x, int (*fn)(uint64_t q, uint64_t n, void *arg), void *arg)
{
    struct drx_plan_chunk c;
    uint64_t q = 0, run = 0;
    int rc = drx_plan_seek(x->plan, x->start);

    for (uint64_t i = 0; i < x->n && rc == 0; i++) {
        if (drx_plan_next(x->plan, &c) != 1) {
            rc = -EIO;
            break;
        }
        if (run && c.q == q + run) {
            run++;
            continue;
        }
        if (run)
            rc = fn(q, run, arg);
        q = c.q;
        run = 1;
    }
    if (rc == 0 && run)
        rc = fn(q, run, arg);
    /* back to where the rounds planned so far left the cursor */
    int back = drx_plan_seek(x->plan, x->start + x->taken);
    return rc ? rc : back;
}

int mp_xfer_read(struct mp_xfer *x)
{
    struct drx_err err = {{0}};
    const uint64_t want = x->p.nchunks * x->m->chunk_bytes;
    uint64_t got = 0;

    int rc = mp_read_chunks(&x->p, x->a->xf, x->chunks, NULL, false, &got, &err);
    /* chunks past the end of the .xta read as the fill value */
    if (rc == 0 && got < want)
        load_fill_range(x->chunks, got, want, x->m->fill, x->m->elem_size);
    return mp_agree(x->a->comm, rc, &err);
}

int mp_xfer_write(struct mp_xfer *x, mp_merge_fn merge, const void *src)
{
    struct drx_err err = {{0}};
    drx_mp *a = x->a;
    const uint64_t cb = x->m->chunk_bytes;
    const struct load_plan *p = &x->p;

    /* chunks the view covers in part, and edge chunks, keep their other
     * elements (read next, under the lock: past the bounds this handle
     * knows, another program may have extended the array and written) */
    for (size_t i = 0; i < p->nchunks; i++)
        if (!p->covered[i] || !p->inside[i])
            load_fill(x->chunks + i * cb, cb, x->m->fill, x->m->elem_size);
    int need_read = 0;
    for (size_t i = 0; i < p->nchunks && !need_read; i++)
        need_read = !p->covered[i];
    int rc = mp_lock_round(a->comm, a->lockfd, p->q, p->nchunks, cb, &need_read, &err);
    /* its reduction made the outcome the same everywhere: only a failure
     * needs the agreement, for one reason on every rank */
    if (rc < 0)
        return mp_agree(a->comm, rc, &err);
    /* the collective read only when some rank has chunks to merge */
    if (need_read)
        rc = mp_read_chunks(p, a->xf, x->chunks, p->covered, false, NULL, &err);
    if (need_read)
        rc = mp_agree(a->comm, rc, &err);
    if (rc == 0) {
        merge(p, src, x->chunks);
        rc = mp_write_chunks(p, a->xf, x->chunks, &err);
        /* every rank has written once all agree: only then may others
         * merge with these chunks */
        rc = mp_agree(a->comm, rc, &err);
    }
    mp_unlock_round(a->lockfd, p->q, p->nchunks, cb);
    return rc;
}

static void merge_memory(const struct load_plan *p, const void *src, unsigned char *chunks)
{
    load_plan_scatter(p, src, chunks);
}

int mp_box_read(drx_mp *a, const struct drx_view *v, void *buf)
{
    struct mp_xfer x;
    int rc = mp_xfer_begin(a, v, false, true, &x);
    if (rc < 0)
        return rc;
    for (uint64_t r = 0; rc == 0 && r < x.rounds; r++) {
        rc = mp_xfer_round(&x, r);
        if (rc == 0)
            rc = mp_xfer_read(&x);
        if (rc == 0)
            load_plan_gather(&x.p, x.chunks, buf);
    }
    mp_xfer_end(&x);
    return rc;
}

int mp_box_write(drx_mp *a, const struct drx_view *v, const void *buf)
{
    struct mp_xfer x;
    int rc = mp_xfer_begin(a, v, false, true, &x);
    if (rc < 0)
        return rc;
    for (uint64_t r = 0; rc == 0 && r < x.rounds; r++) {
        rc = mp_xfer_round(&x, r);
        if (rc == 0)
            rc = mp_xfer_write(&x, merge_memory, buf);
    }
    mp_xfer_end(&x);
    return rc;
}

/* --- whole chunks of a rank's own, written alone --- */

/* Locks chunks q[0..n-1], all or none, trying again until they are free
 * (up to LOCK_GIVE_UP_S).  A rank writing alone holds no lock while it
 * waits, so its waits cannot deadlock with anybody's. */
static int lock_alone(int fd, const uint64_t *q, size_t n, uint64_t cb, struct drx_err *err)
{
    double start = MPI_Wtime();
    unsigned pause_us = 1000;

    for (;;) {
        int rc = try_lock_round(fd, q, n, cb);
        if (rc == 0)
            return 0;
        if (rc != -EAGAIN)
            return drx_err_set(err, -rc, "locking chunks: %s", strerror(-rc));
        if (MPI_Wtime() - start > LOCK_GIVE_UP_S)
            return drx_err_set(err, EDEADLK,
                               "the chunks stayed locked by another writer for %d s; "
                               "nothing of this round written",
                               LOCK_GIVE_UP_S);
        usleep(pause_us);
        if (pause_us < 50000)
            pause_us *= 2;
    }
}

static int run_cmp_chunk(const void *x, const void *y)
{
    const struct load_run *a = x, *b = y;
    return (a->buf_off > b->buf_off) - (a->buf_off < b->buf_off);
}

/* The round's runs in chunk buffer (file) order, in the handle's scratch.
 * The plan keeps them in memory order; each chunk's runs in memory order
 * are in buffer order too in C order, so a stable counting sort by chunk
 * slot puts them in order in one pass (qsort of the 4096 runs of a 4 MiB
 * round cost more than the rest of the planning).  Checked: qsort when
 * the layout is not so.  NULL when out of memory. */
static const struct load_run *runs_by_chunk(drx_mp *a, const struct load_plan *p)
{
    const size_t n = p->nruns, k = p->nchunks;
    const uint64_t cb = p->meta->chunk_bytes;
    size_t i = 1;

    /* planned in chunk order (the calls alone): nothing to sort */
    while (i < n && p->run[i].buf_off > p->run[i - 1].buf_off)
        i++;
    if (i >= n)
        return p->run;
    size_t *at = calloc(k + 1, sizeof(*at));
    if (!at)
        return NULL;

    if (n > a->runs_cap) {
        struct load_run *r = realloc(a->runs, n * sizeof(*r));
        if (!r) {
            free(at);
            return NULL;
        }
        a->runs = r;
        a->runs_cap = n;
    }
    for (i = 0; i < n; i++)
        at[p->run[i].buf_off / cb + 1]++;
    for (size_t c = 1; c <= k; c++)
        at[c] += at[c - 1];
    for (i = 0; i < n; i++)
        a->runs[at[p->run[i].buf_off / cb]++] = p->run[i];
    free(at);
    for (i = 1; i < n; i++)
        if (a->runs[i].buf_off < a->runs[i - 1].buf_off) {
            qsort(a->runs, n, sizeof(*a->runs), run_cmp_chunk);
            break;
        }
    return a->runs;
}

/* The .xta offset of byte off of the round's chunk buffer. */
static uint64_t file_off(const struct load_plan *p, uint64_t off)
{
    uint64_t cb = p->meta->chunk_bytes;
    return p->q[off / cb] * cb + off % cb;
}

/* The round's chunks read straight into the caller's memory: each run
 * of elements (consecutive in memory and in its chunk) one iovec, in file
 * order; pieces adjacent in memory and in the file merged; one
 * drx_io_preadv_all per IOV_MAX pieces or gap in the file (reads take no
 * exclusive inode lock: the ranks' reads overlap, unlike writes, see
 * write_staged).  Only for chunks that the box covers and that lie inside
 * the bounds, in a layout whose runs are consecutive (C order). */
static int read_runs(drx_mp *a, const struct load_plan *p, unsigned char *mem)
{
    int (*io)(int, struct iovec *, int, uint64_t) = drx_io_preadv_all;
    const struct load_run *run = runs_by_chunk(a, p);
    struct iovec iov[IOV_MAX];
    uint64_t at = 0, end = 0; /* file range of the pieces in iov */
    int n = 0, rc = 0, fd = a->lockfd;

    if (!run)
        return -ENOMEM;
    for (size_t i = 0; i < p->nruns && rc == 0; i++) {
        uint64_t off = file_off(p, run[i].buf_off), len = run[i].len * p->view->elem_size;
        unsigned char *at_mem = mem + run[i].raw_off;
        if (n > 0 && off == end &&
            (unsigned char *)iov[n - 1].iov_base + iov[n - 1].iov_len == at_mem) {
            iov[n - 1].iov_len += len;
            end += len;
            continue;
        }
        if (n > 0 && (off != end || n == IOV_MAX)) {
            rc = io(fd, iov, n, at);
            n = 0;
        }
        if (n == 0)
            at = end = off;
        iov[n].iov_base = at_mem;
        iov[n++].iov_len = len;
        end += len;
    }
    if (rc == 0 && n > 0)
        rc = io(fd, iov, n, at);
    return rc;
}

/* Bytes of runs gathered per pwrite by write_staged: a chunk of the
 * benchmark's 4x128x128 f64, well inside a core's L2 cache. */
#define MP_STAGE_BYTES ((uint64_t)512 << 10)

/* The round's runs written in file order through a staging buffer (stage,
 * cap bytes): runs adjacent in the file are copied into it and written
 * with one pwrite when it is full or the next run is not adjacent; a run
 * of cap bytes or more goes straight from memory.  Why not pwritev of the
 * runs from memory: ext4 holds the inode lock through a buffered write,
 * so the ranks' writes into the one .xta take turns, and the kernel's
 * walk over thousands of 1 KiB pieces is done inside the lock.  Copied
 * here, outside it, one rank gathers while the other writes, and the
 * kernel copies from a buffer hot in the cache: for the benchmark's
 * steps (4096 runs of 1 KiB per rank), 0.076-0.078 s where pwritev took
 * 0.097-0.100 s and one contiguous pwrite of the same bytes (the floor)
 * 0.078-0.088 s (a standalone test, P=2, best of 5).  Only for runs
 * consecutive in memory (C order) of chunks the box covers inside the
 * bounds. */
static int write_staged(drx_mp *a, const struct load_plan *p, const unsigned char *mem,
                        unsigned char *stage, uint64_t cap)
{
    const struct load_run *run = runs_by_chunk(a, p);
    uint64_t at = 0, have = 0; /* the file range [at, at + have) in stage */
    int rc = 0;

    if (!run)
        return -ENOMEM;
    for (size_t i = 0; i < p->nruns && rc == 0; i++) {
        uint64_t off = file_off(p, run[i].buf_off), len = run[i].len * p->view->elem_size;
        const unsigned char *src = mem + run[i].raw_off;
        if (have && (off != at + have || have + len > cap)) {
            rc = drx_io_pwrite_all(a->lockfd, stage, have, at);
            have = 0;
        }
        if (rc == 0 && len >= cap) {
            rc = drx_io_pwrite_all(a->lockfd, src, len, off);
            continue;
        }
        if (have == 0)
            at = off;
        memcpy(stage + have, src, len);
        have += len;
    }
    if (rc == 0 && have)
        rc = drx_io_pwrite_all(a->lockfd, stage, have, at);
    return rc;
}

/* len bytes of the .xta at off into buf, what lies past its end as the
 * fill.  0 or -errno. */
static int pread_or_fill(const struct mp_xfer *x, unsigned char *buf, uint64_t len, uint64_t off)
{
    uint64_t got = 0;

    while (got < len) {
        ssize_t r = pread(x->a->lockfd, buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (uint64_t)r;
    }
    if (got < len)
        load_fill_range(buf, got, len, x->m->fill, x->m->elem_size);
    return 0;
}

/* The round's chunks assembled in the round buffer (an edge chunk read
 * first, under the round's lock: past the bounds this handle knows,
 * another program may have extended the array and written there since;
 * filled, those elements were lost), the box's elements scattered in,
 * written by adjacent ranges. */
static int write_buffered(const struct mp_xfer *x, const void *src)
{
    const struct load_plan *p = &x->p;
    const uint64_t cb = x->m->chunk_bytes;
    int rc = 0;

    for (size_t i = 0; i < p->nchunks && rc == 0; i++)
        if (!p->inside[i])
            rc = pread_or_fill(x, x->chunks + i * cb, cb, p->q[i] * cb);
    if (rc < 0)
        return rc;
    load_plan_scatter(p, src, x->chunks);
    for (size_t i = 0, j; i < p->nchunks && rc == 0; i = j) {
        for (j = i + 1; j < p->nchunks && p->q[j] == p->q[j - 1] + 1; j++)
            ;
        rc = drx_io_pwrite_all(x->a->lockfd, x->chunks + i * cb, (j - i) * cb, p->q[i] * cb);
    }
    return rc;
}

/* The calls alone move runs in file order and need neither the runs in
 * memory order nor their ranges (MPI file types, read-ahead): planned in
 * chunk order, nothing is sorted. */
static void chunk_order(struct mp_xfer *x)
{
    x->p.chunk_order = x->ahead.chunk_order = true;
}

/* Starts the writeback of the round's chunks (not waited for): in the
 * durable modes the sync at the next extension, drx_mp_sync or close then
 * finds most of the data on the disk, and the disk works while the
 * program goes on.  A hint that changes nothing recorded: a write-back
 * error is reported by that sync (the mapping keeps it for every open
 * file), so the call's own status is not looked at. */
static void start_writeback(int fd, const struct load_plan *p, uint64_t cb)
{
    for (size_t i = 0, j; i < p->nchunks; i = j) {
        for (j = i + 1; j < p->nchunks && p->q[j] == p->q[j - 1] + 1; j++)
            ;
        (void)sync_file_range(fd, (off_t)(p->q[i] * cb), (off_t)((j - i) * cb),
                              SYNC_FILE_RANGE_WRITE);
    }
}

/* This rank's current round, alone: locked, written, unlocked. */
static int write_round_alone(struct mp_xfer *x, const void *src, struct drx_err *err)
{
    const struct load_plan *p = &x->p;
    const uint64_t cb = x->m->chunk_bytes;
    bool direct = p->run_stride == x->m->elem_size;

    for (size_t i = 0; i < p->nchunks && direct; i++)
        direct = p->inside[i];
    int rc = lock_alone(x->a->lockfd, p->q, p->nchunks, cb, err);
    if (rc < 0)
        return rc;
    /* the round buffer holds at least one chunk: its start is the stage */
    uint64_t cap = x->bufchunks * cb < MP_STAGE_BYTES ? x->bufchunks * cb : MP_STAGE_BYTES;
    rc = direct ? write_staged(x->a, p, src, x->chunks, cap) : write_buffered(x, src);
    mp_unlock_round(x->a->lockfd, p->q, p->nchunks, cb);
    if (rc == 0 && x->a->sync_mode != DRX_MP_SYNC_NONE)
        start_writeback(x->a->lockfd, p, cb);
    return rc < 0 ? drx_err_set(err, -rc, "writing %s: %s", x->a->xta, strerror(-rc)) : 0;
}

int mp_box_write_alone(drx_mp *a, const struct drx_view *v, const void *buf)
{
    struct drx_err err = {{0}};
    struct mp_xfer x;
    /* no collective until the end: only this rank's rounds (under load,
     * each collective costs a wait for the other ranks' turn on a core) */
    int rc = xfer_setup(a, v, false, true, &x, &err);
    chunk_order(&x);
    for (uint64_t r = 0; rc == 0 && r < x.rounds; r++) {
        if ((rc = xfer_take(&x, r)) < 0)
            drx_err_set(&err, -rc, "planning a round: %s", strerror(-rc));
        else
            rc = write_round_alone(&x, buf, &err);
    }
    mp_xfer_end(&x);
    return mp_agree(a->comm, rc, &err);
}

/* --- whole chunks read alone --- */

/* The round's chunks into the round buffer by adjacent ranges (what lies
 * past the end of the .xta is the fill), then gathered. */
static int read_buffered(const struct mp_xfer *x, void *dst)
{
    const struct load_plan *p = &x->p;
    const uint64_t cb = x->m->chunk_bytes;

    for (size_t i = 0, j; i < p->nchunks; i = j) {
        for (j = i + 1; j < p->nchunks && p->q[j] == p->q[j - 1] + 1; j++)
            ;
        int rc = pread_or_fill(x, x->chunks + i * cb, (j - i) * cb, p->q[i] * cb);
        if (rc < 0)
            return rc;
    }
    load_plan_gather(p, x->chunks, dst);
    return 0;
}

int mp_box_read_alone(drx_mp *a, const struct drx_view *v, void *buf)
{
    struct drx_err err = {{0}};
    struct mp_xfer x;
    struct stat st;
    int rc = xfer_setup(a, v, false, true, &x, &err);
    chunk_order(&x);
    /* chunks past the end of the .xta (none in a sound array) go the
     * buffered way, which reads them as the fill */
    uint64_t size = fstat(a->lockfd, &st) == 0 ? (uint64_t)st.st_size : 0;
    for (uint64_t r = 0; rc == 0 && r < x.rounds; r++) {
        if ((rc = xfer_take(&x, r)) < 0) {
            drx_err_set(&err, -rc, "planning a round: %s", strerror(-rc));
            break;
        }
        const struct load_plan *p = &x.p;
        bool direct = p->run_stride == x.m->elem_size;
        for (size_t i = 0; i < p->nchunks && direct; i++)
            direct = p->inside[i] && (p->q[i] + 1) * x.m->chunk_bytes <= size;
        rc = direct ? read_runs(a, p, buf) : read_buffered(&x, buf);
        if (rc < 0)
            drx_err_set(&err, -rc, "reading %s: %s", a->xta, strerror(-rc));
    }
    mp_xfer_end(&x);
    return mp_agree(a->comm, rc, &err);
}

/* --- the public calls --- */

/* The box [lo, hi) in order as a view of the array; local checks. */
static int box_view(const drx_mp *a, const int64_t lo[], const int64_t hi[], char order,
                    const void *buf, struct drx_view *v, struct drx_err *err)
{
    const struct drx_array_meta *m = drx_array_meta(a->arr);

    if (!lo || !hi)
        return drx_err_set(err, EINVAL, "no box given");
    if (order != 'C' && order != 'F')
        return drx_err_set(err, EINVAL, "order '%c' (%d): expected 'C' or 'F'",
                           order ? order : '?', order);
    memset(v, 0, sizeof(*v));
    v->rank = m->rank;
    v->type = m->type;
    v->order = order == 'C' ? DRX_ORDER_C : DRX_ORDER_F;
    v->rep = DRX_REP_NATIVE;
    v->elem_size = m->elem_size;
    v->nelem = 1;
    for (int d = 0; d < m->rank; d++) {
        /* ranges as the boxes are written, [lo, hi): the view words'
         * "outside 0..N-1" names the last index instead */
        if (lo[d] > hi[d])
            return drx_err_set(err, EINVAL,
                               "box [%lld, %lld) along dimension %d is reversed (lo > hi)",
                               (long long)lo[d], (long long)hi[d], d);
        if (lo[d] < 0 || (uint64_t)hi[d] > m->bounds[d])
            return drx_err_set(err, EINVAL,
                               "box [%lld, %lld) along dimension %d is outside the bounds "
                               "[0, %llu)",
                               (long long)lo[d], (long long)hi[d], d,
                               (unsigned long long)m->bounds[d]);
        v->origin[d] = (uint64_t)lo[d];
        v->step[d] = 1;
        v->count[d] = (uint64_t)(hi[d] - lo[d]);
        v->nelem *= v->count[d];
    }
    if (v->nelem && !buf)
        return drx_err_set(err, EINVAL, "no buffer given for %llu elements",
                           (unsigned long long)v->nelem);
    return 0;
}

/* Whether the box covers every chunk it meets: it starts and ends at
 * chunk boundaries (or the bounds) in every dimension. */
static bool box_whole_chunks(const struct drx_array_meta *m, const struct drx_view *v)
{
    bool whole = true;
    for (int d = 0; v->nelem && d < m->rank && whole; d++) {
        uint64_t end = v->origin[d] + v->count[d];
        whole = v->origin[d] % m->chunk[d] == 0 && (end % m->chunk[d] == 0 || end == m->bounds[d]);
    }
    return whole;
}

/* Whether two ranks' chunk boxes in the gather buffer (k dimensions)
 * have a chunk in common. */
static bool boxes_meet(const drx_mp *a, int k)
{
    const size_t w = 2 * (size_t)k + 2;
    for (int i = 0; i < a->nprocs; i++)
        for (int j = i + 1; j < a->nprocs; j++) {
            const uint64_t *x = a->gather + (size_t)i * w + 1;
            const uint64_t *y = a->gather + (size_t)j * w + 1;
            bool meet = x[1] > x[0] && y[1] > y[0];
            for (int d = 0; d < k && meet; d++)
                meet = x[2 * d] < y[2 * d + 1] && y[2 * d] < x[2 * d + 1];
            if (meet)
                return true;
        }
    return false;
}

/* Collective: the agreement on the boxes, whether two ranks' boxes meet
 * a common chunk (their writes would each merge the chunk without the
 * other's elements) and whether every box covers its chunks whole, in one
 * MPI_Allgather of every rank's status, chunk box and that flag into the
 * handle's gather buffer.  Returns the agreed status; *shared and *whole
 * are set when it is 0. */
static int boxes_agree(drx_mp *a, int rc, const struct drx_view *v, const struct drx_err *err,
                       bool *shared, bool *whole)
{
    const struct drx_array_meta *m = drx_array_meta(a->arr);
    const int k = m->rank, w = 2 * k + 2;
    uint64_t mine[MP_GATHER_WIDTH] = {(uint64_t)(int64_t)rc};
    for (int d = 0; rc == 0 && v->nelem && d < k; d++) {
        mine[1 + 2 * d] = v->origin[d] / m->chunk[d];
        mine[2 + 2 * d] = (v->origin[d] + v->count[d] - 1) / m->chunk[d] + 1;
    }
    mine[w - 1] = rc == 0 && box_whole_chunks(m, v);
    load_allgather(mine, w, MPI_UINT64_T, a->gather, a->comm);
    bool failed = false;
    *whole = true;
    for (int i = 0; i < a->nprocs; i++) {
        failed = failed || (int64_t)a->gather[(size_t)i * (size_t)w] < 0;
        *whole = *whole && a->gather[(size_t)i * (size_t)w + (size_t)w - 1];
    }
    if (failed) /* every rank saw it: the lowest status and its reason */
        return mp_agree(a->comm, rc, err);
    *shared = boxes_meet(a, k);
    return 0;
}

int drx_mp_read_all(drx_mp *a, const int64_t lo[], const int64_t hi[], char order, void *buf)
{
    struct drx_err err = {{0}};
    struct drx_view v;

    if (!a) {
        mp_set_error("drx_mp_read_all: no array");
        return -EINVAL;
    }
    int rc = a->broken ? mp_broken(a, &err) : box_view(a, lo, hi, order, buf, &v, &err);
    /* the status and whether every box covers its chunks whole, in one
     * reduction: MIN of (status, flag) */
    int mine[2] = {rc < 0 ? rc : 0, rc == 0 && box_whole_chunks(drx_array_meta(a->arr), &v)};
    int all[2];
    load_allreduce(mine, all, 2, MPI_INT, MPI_MIN, a->comm);
    if (all[0] < 0)
        return mp_agree(a->comm, rc, &err);
    return all[1] ? mp_box_read_alone(a, &v, buf) : mp_box_read(a, &v, buf);
}

int drx_mp_write_all(drx_mp *a, const int64_t lo[], const int64_t hi[], char order, const void *buf)
{
    struct drx_err err = {{0}};
    struct drx_view v, none;

    if (!a) {
        mp_set_error("drx_mp_write_all: no array");
        return -EINVAL;
    }
    bool shared = true, whole = false;
    int rc = !a->writable ? drx_err_set(&err, EBADF, "%s: opened read-only", a->path)
             : a->broken  ? mp_broken(a, &err)
                          : box_view(a, lo, hi, order, buf, &v, &err);
    if ((rc = boxes_agree(a, rc, &v, &err, &shared, &whole)) < 0)
        return rc;
    /* Every rank's chunks its own and whole: nothing to merge and nobody
     * to wait for, each rank writes alone. */
    if (!shared && whole)
        return mp_box_write_alone(a, &v, buf);
    if (!shared)
        return mp_box_write(a, &v, buf);
    /* Ranks sharing chunks take turns, in rank order, each merging with
     * what the one before wrote. */
    none = v;
    memset(none.count, 0, sizeof(none.count));
    none.nelem = 0;
    for (int t = 0; rc == 0 && t < a->nprocs; t++)
        rc = mp_box_write(a, a->rank == t ? &v : &none, buf);
    return rc;
}
