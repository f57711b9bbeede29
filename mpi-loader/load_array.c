/* drx-load import and export: a view's raw bytes <-> the array's chunks.
 *
 * As in the paper (section IV.B): every rank opens the array read-only
 * (replicated metadata), the view's chunks, sorted by address, are dealt out
 * BLOCK over the ranks, and each rank moves its chunks with one collective
 * MPI_File_read_all/write_all per round over an hindexed file type of chunk
 * byte offsets.  The bridge between chunk order and the view's order is on
 * the raw side: each rank reads (import) or writes (export) exactly the
 * ranges of the raw file that its chunks hold, again with one collective
 * call over an hindexed file type.  So no rank ever holds more than a
 * round's chunks plus their packed view bytes, no data moves between ranks,
 * and the result does not depend on P.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/stripe.h"
#include "load_i.h"

int load_open_view(struct load_ctx *c, const char *path, bool write, char **words, int nwords,
                   struct drx_array **a, struct drx_view *v, char *store_path, size_t len)
{
    struct drx_err err = {{0}};
    struct drx_view_spec spec;
    int rc = load_resolve(path, write, store_path, len, &err);

    *a = NULL;
    if (rc == 0)
        rc = drx_array_open(store_path, DRX_RDONLY, a, &err);
    drx_view_spec_init(&spec);
    for (int i = 0; i < nwords && rc == 0; i++)
        rc = drx_view_spec_add(&spec, words[i], &err);
    if (rc == 0)
        rc = drx_view_resolve(&spec, drx_array_meta(*a), v, &err);
    if (rc < 0 && *a)
        drx_err_prefix(&err, "%s", path);
    rc = load_agree(c, rc, &err, NULL);
    if (rc < 0) {
        drx_array_close(*a);
        *a = NULL;
    }
    return rc;
}

int load_share_init(struct load_ctx *c, const struct drx_array_meta *m, const struct drx_view *v,
                    struct load_share *s)
{
    struct drx_err err = {{0}};
    uint64_t n = 0;
    int rc;

    memset(s, 0, sizeof(*s));
    /* Every rank counts the view's chunks (a product per F* segment) and
     * seeks to its own first one: nobody lists the others' chunks. */
    rc = drx_plan_create(m, v, &s->plan);
    if (rc == 0) {
        n = drx_plan_count(s->plan);
        load_start_count(c, n, &s->start, &s->n);
        rc = drx_plan_seek(s->plan, s->start);
    }
    if (rc < 0)
        drx_err_set(&err, -rc, "planning the view's chunks: %s", strerror(-rc));
    /* Rounds: a round moves at most `buffer` bytes of chunks per rank (at
     * least one chunk).  Every rank runs as many rounds as the rank with
     * the most chunks (rank 0 under BLOCK), so the collective calls match. */
    s->batch = c->buffer / m->chunk_bytes;
    if (s->batch == 0)
        s->batch = 1;
    uint64_t most = (n + (uint64_t)c->nprocs - 1) / (uint64_t)c->nprocs;
    s->rounds = (most + s->batch - 1) / s->batch;
    /* A rank with fewer chunks than a round (P larger than the chunk
     * count) needs no more buffer than its chunks. */
    s->bufchunks = s->n < s->batch ? (s->n ? s->n : 1) : s->batch;
    s->chunk_buf = malloc(s->bufchunks * m->chunk_bytes);
    if (rc == 0 && !s->chunk_buf)
        rc = drx_err_set(&err, ENOMEM, "out of memory for %llu chunks of %llu bytes",
                         (unsigned long long)s->bufchunks, (unsigned long long)m->chunk_bytes);
    rc = load_agree(c, rc, &err, NULL);
    if (rc < 0)
        load_share_fini(s);
    else if (c->rank == 0)
        drx_log(DRX_LOG_DEBUG, "%llu chunks of %llu bytes: %llu rounds of at most %llu per rank",
                (unsigned long long)n, (unsigned long long)m->chunk_bytes,
                (unsigned long long)s->rounds, (unsigned long long)s->batch);
    return rc;
}

size_t load_share_round(const struct load_share *s, uint64_t round)
{
    uint64_t first = round * s->batch;
    return first < s->n ? (size_t)(s->n - first < s->batch ? s->n - first : s->batch) : 0;
}

int load_share_ranges(struct load_share *s, int (*fn)(uint64_t q, uint64_t n, void *arg), void *arg)
{
    struct drx_plan_chunk c;
    uint64_t q = 0, run = 0;
    int rc = 0;

    for (uint64_t i = 0; i < s->n && rc == 0; i++) {
        if (drx_plan_next(s->plan, &c) != 1) {
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
    int back = drx_plan_seek(s->plan, s->start);
    return rc ? rc : back;
}

void load_share_fini(struct load_share *s)
{
    drx_plan_destroy(s->plan);
    free(s->chunk_buf);
    memset(s, 0, sizeof(*s));
}

/* --verbose: the hints the MPI library holds for an open file, its own
 * defaults included, so a user can check that a hint from --config,
 * ROMIO_HINTS or --hint arrived (MPI drops keys it does not know).  Rank 0
 * only; MPI_File_get_info is local.  A long list goes out in several
 * messages rather than being cut. */
static void log_file_hints(const struct load_ctx *c, MPI_File fh, const char *path)
{
    MPI_Info info = MPI_INFO_NULL;
    char msg[DRX_LOG_MSG_MAX / 2 + MPI_MAX_INFO_KEY + MPI_MAX_INFO_VAL + 4];
    int n = 0;
    size_t len = 0;

    if (c->rank != 0 || !drx_log_enabled(DRX_LOG_DEBUG))
        return;
    if (MPI_File_get_info(fh, &info) != MPI_SUCCESS)
        return;
    MPI_Info_get_nkeys(info, &n);
    msg[0] = '\0';
    for (int i = 0; i < n; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        if (MPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            continue;
#if MPI_VERSION >= 4
        int vlen = (int)sizeof(val);
        MPI_Info_get_string(info, key, &vlen, val, &flag);
#else
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
#endif
        if (!flag)
            continue;
        int w = snprintf(msg + len, sizeof(msg) - len, " %s=%s", key, val);
        len += w > 0 ? (size_t)w : 0;
        if (len >= DRX_LOG_MSG_MAX / 2) {
            drx_log(DRX_LOG_DEBUG, "hints of %s:%s", path, msg);
            len = 0;
            msg[0] = '\0';
        }
    }
    if (len > 0 || n == 0)
        drx_log(DRX_LOG_DEBUG, "hints of %s:%s", path, n ? msg : " (none)");
    MPI_Info_free(&info);
}

int load_open_file(struct load_ctx *c, const char *path, int amode, MPI_File *fh, const char *what)
{
    return load_open_file_info(c, path, amode, c->info, fh, what);
}

int load_open_file_info(struct load_ctx *c, const char *path, int amode, MPI_Info info,
                        MPI_File *fh, const char *what)
{
    struct drx_err err = {{0}};
    int mrc = MPI_File_open(MPI_COMM_WORLD, path, amode, info, fh);
    int rc = 0;
    if (mrc != MPI_SUCCESS) {
        *fh = MPI_FILE_NULL;
        rc = load_mpi_err(&err, mrc, "%s %s", what, path);
    } else {
        /* Errors of the I/O calls come back as codes, never abort. */
        MPI_File_set_errhandler(*fh, MPI_ERRORS_RETURN);
        log_file_hints(c, *fh, path);
    }
    rc = load_agree(c, rc, &err, NULL);
    if (rc < 0 && *fh != MPI_FILE_NULL)
        MPI_File_close(fh);
    return rc;
}

void load_close_file(MPI_File *fh)
{
    if (*fh != MPI_FILE_NULL)
        MPI_File_close(fh);
}

int load_check_output(const struct load_ctx *c, const char *path, struct drx_err *err)
{
    /* ROMIO names every failure to create "Invalid file name"; trying it
     * here (the collective open creates it anyway) gives the real reason. */
    if (c->rank != 0)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    close(fd);
    return 0;
}

int load_check_input(const char *path, uint64_t *size, struct drx_err *err)
{
    struct stat st;
    /* O_NONBLOCK: a FIFO must be refused, not waited on. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = drx_err_set(err, EISDIR, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        rc = drx_err_set(err, EINVAL, "%s: not a regular file", path);
    else {
        /* Read one byte: proves the data is readable (not just openable)
         * before anything is written anywhere. */
        char b;
        if (st.st_size > 0 && pread(fd, &b, 1, 0) < 0)
            rc = drx_err_set(err, errno, "%s: %s", path, strerror(errno));
        *size = (uint64_t)st.st_size;
    }
    close(fd);
    return rc;
}

/* Asks the kernel to read the round's raw ranges now, all at once: without
 * it, each of the many separate ranges of a round starts its own small
 * read-ahead and a cold import waits for the disk once per range.  Ranges
 * closer than a MiB are advised as one (the gap is other ranks' data, which
 * they are about to read anyway). */
static void advise_runs(int fd, const struct load_plan *p)
{
    const uint64_t gap = (uint64_t)1 << 20;
    for (size_t i = 0; fd >= 0 && i < p->nranges;) {
        uint64_t lo = p->roff[i], hi = lo + p->rlen[i];
        for (i++; i < p->nranges && p->roff[i] - hi < gap; i++)
            hi = p->roff[i] + p->rlen[i];
        posix_fadvise(fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_WILLNEED);
    }
}

void load_advise_chunks(int fd, const uint64_t *q, size_t n, uint64_t cb)
{
    for (size_t i = 0; fd >= 0 && i < n;) {
        size_t j = i + 1;
        while (j < n && q[j] == q[j - 1] + 1)
            j++;
        posix_fadvise(fd, (off_t)(q[i] * cb), (off_t)((j - i) * cb), POSIX_FADV_WILLNEED);
        i = j;
    }
}

/* Reads the round's chunks q (slot i of buf is q[i]) whose want[i] is set,
 * collectively; bytes past the end of the .xta keep what buf held (the
 * caller fills with the fill value first). */
static int read_chunks(struct load_plan *p, MPI_File xf, unsigned char *buf, const bool *want,
                       bool want_value, uint64_t *got, struct drx_err *err)
{
    const uint64_t cb = p->meta->chunk_bytes;
    size_t n = p->nchunks, k = 0;
    uint64_t *foff = malloc((n ? n : 1) * sizeof(*foff));
    uint64_t *moff = malloc((n ? n : 1) * sizeof(*moff));
    uint64_t *len = malloc((n ? n : 1) * sizeof(*len));
    MPI_Datatype ft = MPI_BYTE, mt = MPI_BYTE;
    uint64_t bytes = 0;
    int rc = -ENOMEM, mrc;

    if (!foff || !moff || !len) {
        drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (want && want[i] != want_value)
            continue;
        foff[k] = p->q[i] * cb;
        moff[k] = (uint64_t)i * cb;
        len[k++] = cb;
    }
    rc = load_type_ranges(foff, len, k, &ft, &bytes);
    if (rc == 0)
        rc = load_type_ranges(moff, len, k, &mt, NULL);
    if (rc < 0) {
        drx_err_set(err, -rc, "chunk type: %s", strerror(-rc));
        goto out;
    }
    MPI_Status st;
    int count = 0;
    mrc = MPI_File_set_view(xf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_read_all(xf, buf, k ? 1 : 0, mt, &st);
    if (mrc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &count);
    if (mrc != MPI_SUCCESS)
        rc = load_mpi_err(err, mrc, "reading chunks");
    if (got)
        *got = (uint64_t)(count > 0 ? count : 0);
out:
    load_type_free(&ft);
    load_type_free(&mt);
    free(foff);
    free(moff);
    free(len);
    return rc;
}

/* --- import --- */

/* Every writer of an array locks the .xta bytes it read-modify-writes
 * (libcore's span locks: the daemon and drx put), so an import locks its
 * round's chunks from reading the partly covered ones until every rank has
 * written them.  A rank holding its locks waits in collectives for ranks
 * still waiting for theirs, so locks are only tried: when any rank misses
 * one, every rank lets go of all and tries again a little later.  Two
 * imports into the same chunks then take turns instead of deadlocking,
 * and the daemon's and drx put's short locks are simply waited out. */
#define LOCK_GIVE_UP_S 120

static void unlock_round(int fd, const uint64_t *q, size_t n, uint64_t cb)
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
            unlock_round(fd, q, i, cb);
            return rc;
        }
    }
    return 0;
}

static int lock_round(struct load_ctx *c, int fd, const uint64_t *q, size_t n, uint64_t cb,
                      struct drx_err *err)
{
    double start = MPI_Wtime();
    unsigned pause_us = 1000 + 997u * (unsigned)c->rank % 4000;

    for (;;) {
        int rc = try_lock_round(fd, q, n, cb), all;
        /* -EAGAIN: somebody holds one; anything else is an error */
        int mine = rc == 0 ? 1 : rc == -EAGAIN ? 0 : rc;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (all == 1)
            return 0;
        if (rc == 0)
            unlock_round(fd, q, n, cb);
        if (all < 0)
            return mine < 0 ? drx_err_set(err, -mine, "locking chunks: %s", strerror(-mine))
                            : drx_err_set(err, EIO, "another rank could not lock its chunks");
        if (MPI_Wtime() - start > LOCK_GIVE_UP_S)
            return drx_err_set(err, EDEADLK,
                               "the view's chunks stayed locked by another writer for %d s; "
                               "nothing of this round written",
                               LOCK_GIVE_UP_S);
        usleep(pause_us);
        if (pause_us < 50000)
            pause_us *= 2;
    }
}

struct reserve_arg {
    struct drx_reserve *res;
    uint64_t cb; /* chunk bytes */
};

static int reserve_range(uint64_t q, uint64_t n, void *arg)
{
    const struct reserve_arg *r = arg;
    return drx_reserve_add(r->res, q * r->cb, n * r->cb);
}

/* Disk space for every chunk of this rank's share before the import's first
 * byte, through a descriptor of our own (the array handle is read-only
 * here), so that a full disk fails the import with the array unchanged
 * rather than half way.  res->fd is -1 when there is nothing to reserve. */
static int reserve_share(struct load_share *s, const struct drx_array_meta *m, const char *xta,
                         struct drx_reserve *res, struct drx_err *err)
{
    int fd, rc = 0;

    drx_reserve_init(res, -1);
    if (s->n == 0)
        return 0;
    fd = open(xta, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return drx_err_set(err, errno,
                           "%s: opening to reserve space for the view's chunks: %s; "
                           "nothing written",
                           xta, strerror(errno));
    drx_reserve_init(res, fd);
    struct reserve_arg ra = {res, m->chunk_bytes};
    rc = load_share_ranges(s, reserve_range, &ra);
    if (rc)
        drx_err_set(err, -rc, "%s: reserving space for the view's chunks: %s; nothing written", xta,
                    strerror(-rc));
    return rc;
}

/* Gives up (undo) or keeps the reservation, and closes its descriptor. */
static void reserve_end(struct drx_reserve *res, bool undo)
{
    if (res->fd < 0)
        return;
    int rc = undo ? drx_reserve_undo(res) : 0;
    if (rc)
        drx_log(DRX_LOG_WARNING, "giving back space reserved in the .xta: %s (kept)",
                strerror(-rc));
    close(res->fd);
    drx_reserve_fini(res);
}

/* One import or export, as every rank holds it from the first check to the
 * end.  The round planned ahead (ahead, ahead_rc) becomes the next round's
 * plan p once the round is done. */
struct xfer {
    const char *what;   /* "import" or "export", for messages */
    const char *rawarg; /* the raw file as the user wrote it */
    struct drx_array *a;
    const struct drx_array_meta *m;
    struct drx_view v;
    struct load_share s;
    struct load_plan p, ahead;
    int ahead_rc;
    struct load_progress pr;
    MPI_File rf, xf; /* the raw file, the .xta */
    MPI_Info xinfo;
    MPI_Datatype ft;
    char path[PATH_MAX], raw[PATH_MAX], xta[PATH_MAX + 8];
    unsigned char *packed;
    int advfd;  /* read-ahead advice only: the raw file (import), the .xta (export) */
    int lockfd; /* import: the .xta, for chunk locks */
    bool swap;
};

static void xfer_init(struct xfer *x, const char *what, const char *rawarg)
{
    memset(x, 0, sizeof(*x));
    x->what = what;
    x->rawarg = rawarg;
    x->rf = x->xf = MPI_FILE_NULL;
    x->xinfo = MPI_INFO_NULL;
    x->ft = MPI_BYTE;
    x->advfd = x->lockfd = -1;
}

/* Collective (the MPI files); closing the lock descriptor lets go of any
 * chunk lock still held. */
static void xfer_close(struct xfer *x)
{
    load_type_free(&x->ft);
    load_close_file(&x->rf);
    load_close_file(&x->xf);
    if (x->xinfo != MPI_INFO_NULL)
        MPI_Info_free(&x->xinfo);
    if (x->lockfd >= 0)
        close(x->lockfd);
    if (x->advfd >= 0)
        close(x->advfd);
    load_plan_fini(&x->ahead);
    load_plan_fini(&x->p);
    load_share_fini(&x->s);
    free(x->packed);
    drx_array_close(x->a);
}

/* The share of chunks and the round buffers (collective).  Import also
 * reserves the share's space in the .xta, and every rank gives back its
 * reservation when any rank could not.  Returns 0 or -EIO (reported). */
static int xfer_prepare(struct load_ctx *c, struct xfer *x, bool reserve)
{
    struct drx_err err = {{0}};
    struct drx_reserve res = {.fd = -1};

    if (load_share_init(c, x->m, &x->v, &x->s) < 0)
        return -EIO;
    x->packed = malloc(x->s.bufchunks * x->m->chunk_bytes);
    int rc = x->packed ? 0 : drx_err_set(&err, ENOMEM, "out of memory");
    if (rc == 0 && reserve)
        rc = reserve_share(&x->s, x->m, x->xta, &res, &err);
    rc = load_agree(c, rc, &err, x->what);
    reserve_end(&res, rc < 0);
    if (rc < 0)
        return -EIO;
    load_plan_init(&x->p, x->m, &x->v);
    load_plan_init(&x->ahead, x->m, &x->v);
    x->swap = drx_type_rep_swaps(x->v.type, x->v.rep);
    load_progress_start(c, &x->pr, x->what, drx_view_bytes(&x->v));
    /* The planner streams the share, so a round is planned once: ahead,
     * while the previous one moves, from the first round on. */
    x->ahead_rc = load_plan_round(&x->p, x->s.plan, load_share_round(&x->s, 0), true);
    return 0;
}

/* The plan made ahead becomes the next round's. */
static void xfer_next_round(struct xfer *x)
{
    struct load_plan t = x->p;
    x->p = x->ahead;
    x->ahead = t;
}

/* Exit 0 means the data is on disk. */
static int xfer_sync(struct load_ctx *c, struct xfer *x, MPI_File fh, const char *name)
{
    struct drx_err err = {{0}};
    int mrc = MPI_File_sync(fh);
    int rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "syncing %s", name);
    if (load_agree(c, rc, &err, x->what) < 0)
        return -EIO;
    load_progress_end(&x->pr);
    return 0;
}

/* --- import --- */

/* Validate everything before the first byte is written: the array and
 * view, a readable raw file of exactly the view's size.  Collective;
 * returns 0 or -EIO (reported). */
static int import_validate(struct load_ctx *c, struct xfer *x, int argc, char **argv)
{
    struct drx_err err = {{0}};
    uint64_t size = 0;

    if (load_open_view(c, argv[1], true, argv + 3, argc - 3, &x->a, &x->v, x->path,
                       sizeof(x->path)) < 0)
        return -EIO;
    x->m = drx_array_meta(x->a);
    /* Our writes go to the .xta by MPI-IO, past drx_array_open's check: an
     * .xta with another name (a rename cut short) is not written. */
    int rc = drx_array_check_links(x->a, &err);
    if (rc == 0)
        rc = load_resolve(x->rawarg, false, x->raw, sizeof(x->raw), &err);
    if (rc == 0)
        rc = load_check_input(x->raw, &size, &err);
    if (rc == -ENOENT && drx_stripe_exists(x->raw))
        rc = drx_err_set(&err, EINVAL,
                         "%s: is a striped file; import reads plain files "
                         "(drx-load copy it out first)",
                         x->rawarg);
    if (rc == 0 && size != drx_view_bytes(&x->v))
        rc = drx_err_set(&err, EINVAL, "%s: %llu bytes, but the view holds %llu", x->rawarg,
                         (unsigned long long)size, (unsigned long long)drx_view_bytes(&x->v));
    return load_agree(c, rc, &err, "import") < 0 ? -EIO : 0;
}

/* Opens the raw file and the .xta (collective), and the descriptors for
 * advice and chunk locks.  Returns 0 or -EIO (reported). */
static int import_open(struct load_ctx *c, struct xfer *x)
{
    struct drx_err err = {{0}};

    if (load_open_file(c, x->raw, MPI_MODE_RDONLY, &x->rf, "opening") < 0)
        return -EIO;
    x->advfd = open(x->raw, O_RDONLY | O_CLOEXEC);
    snprintf(x->xta, sizeof(x->xta), "%s.xta", x->path);
    /* Data sieving locks with classic POSIX locks, which would wait forever
     * for this process's own chunk locks: never on the .xta. */
    MPI_Info_dup(c->info, &x->xinfo);
    MPI_Info_set(x->xinfo, "romio_ds_write", "disable");
    if (load_open_file_info(c, x->xta, MPI_MODE_RDWR, x->xinfo, &x->xf, "opening") < 0)
        return -EIO;
    x->lockfd = open(x->xta, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    int rc = x->lockfd >= 0 ? 0 : drx_err_set(&err, errno, "%s: %s", x->xta, strerror(errno));
    return load_agree(c, rc, &err, "import") < 0 ? -EIO : 0;
}

/* Read-ahead: this round's raw ranges (first round) and the next round's
 * (planned now), asked for before this round's read so the disk has the
 * next round queued while this one is unpacked and written. */
static void import_plan_ahead(struct xfer *x, uint64_t r)
{
    if (r == 0)
        advise_runs(x->advfd, &x->p);
    if (r + 1 < x->s.rounds) {
        x->ahead_rc = load_plan_round(&x->ahead, x->s.plan, load_share_round(&x->s, r + 1), true);
        if (x->ahead_rc == 0)
            advise_runs(x->advfd, &x->ahead);
    }
}

/* This rank's pieces of the raw file for round r, packed in raw order, in
 * the view's representation converted to the array's; the chunks the view
 * covers only in part or that reach beyond the bounds set to the fill
 * value.  Plans round r + 1 ahead.  Local errors are returned (not agreed);
 * the read is collective. */
static int import_read_raw(struct xfer *x, uint64_t r, uint64_t *bytes, struct drx_err *err)
{
    int rc = x->ahead_rc;
    MPI_Status st;

    if (rc == 0)
        rc = load_type_runs(&x->p, &x->ft);
    if (rc < 0)
        drx_err_set(err, -rc, "planning: %s", strerror(-rc));
    *bytes = load_plan_bytes(&x->p);
    if (rc < 0)
        return rc;
    import_plan_ahead(x, r);
    int mrc = MPI_File_set_view(x->rf, 0, MPI_BYTE, x->ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_read_all(x->rf, x->packed, (int)*bytes, MPI_BYTE, &st);
    int got = 0;
    if (mrc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &got);
    if (mrc != MPI_SUCCESS)
        return load_mpi_err(err, mrc, "reading %s", x->rawarg);
    if ((uint64_t)got != *bytes)
        return drx_err_set(err, EIO, "%s: short read (file changed?)", x->rawarg);
    if (x->swap)
        drx_type_convert(x->v.type, x->v.rep, x->packed, *bytes / x->v.elem_size);
    /* Chunks the view covers only in part keep their other elements: they
     * are read next (read-modify-write).  Beyond the bounds a chunk holds
     * the fill value. */
    for (size_t i = 0; i < x->p.nchunks; i++)
        if (!x->p.covered[i] || !x->p.inside[i])
            load_fill(x->s.chunk_buf + i * x->m->chunk_bytes, x->m->chunk_bytes, x->m->fill,
                      x->m->elem_size);
    return 0;
}

/* Scatters the view's bytes into the round's chunks and writes them
 * (collective).  Returns 0 or -errno with err. */
static int import_write_chunks(struct xfer *x, struct drx_err *err)
{
    size_t n = x->p.nchunks;

    load_plan_unpack(&x->p, x->packed, x->s.chunk_buf);
    load_type_free(&x->ft);
    int rc = load_type_chunks(&x->p, &x->ft);
    if (rc < 0) {
        drx_err_set(err, -rc, "chunk type: %s", strerror(-rc));
        goto out;
    }
    int mrc = MPI_File_set_view(x->xf, 0, MPI_BYTE, x->ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_write_all(x->xf, x->s.chunk_buf, (int)(n * x->m->chunk_bytes), MPI_BYTE,
                                 MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS)
        rc = load_mpi_err(err, mrc, "writing %s", x->xta);
out:
    load_type_free(&x->ft);
    return rc;
}

/* Round r: raw bytes in, chunks locked, read where the view covers them
 * only in part, filled in and written, unlocked.  Every step agreed on by
 * all ranks.  Returns 0 or -EIO (reported). */
static int import_round(struct load_ctx *c, struct xfer *x, uint64_t r)
{
    struct drx_err err = {{0}};
    const uint64_t *q = x->p.q;
    size_t n = x->p.nchunks;
    uint64_t bytes = 0;

    int rc = import_read_raw(x, r, &bytes, &err);
    if (load_agree(c, rc, &err, "import") < 0)
        return -EIO;
    rc = lock_round(c, x->lockfd, q, n, x->m->chunk_bytes, &err);
    if (load_agree(c, rc, &err, "import") < 0)
        return -EIO;
    rc = read_chunks(&x->p, x->xf, x->s.chunk_buf, x->p.covered, false, NULL, &err);
    if (load_agree(c, rc, &err, "import") < 0)
        return -EIO;
    rc = import_write_chunks(x, &err);
    /* every rank has written (collective buffering included) once all
     * agree: only then may others merge with these chunks */
    rc = load_agree(c, rc, &err, "import");
    unlock_round(x->lockfd, q, n, x->m->chunk_bytes);
    if (rc < 0)
        return -EIO;
    load_progress_add(c, &x->pr, bytes);
    xfer_next_round(x);
    return 0;
}

int load_cmd_import(struct load_ctx *c, int argc, char **argv)
{
    struct xfer x;
    int status = 1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: import ARRAY RAWFILE [VIEW...]\n");
        return 2;
    }
    xfer_init(&x, "import", argv[2]);
    if (import_validate(c, &x, argc, argv) < 0 || import_open(c, &x) < 0 ||
        xfer_prepare(c, &x, true) < 0)
        goto out;
    for (uint64_t r = 0; r < x.s.rounds; r++)
        if (import_round(c, &x, r) < 0)
            goto out;
    if (xfer_sync(c, &x, x.xf, x.xta) < 0)
        goto out;
    status = 0;
out:
    xfer_close(&x);
    return status;
}

/* --- export --- */

/* The array, view and output file, checked; the .xta and the output file
 * opened, the output cut to exactly the view's bytes.  Collective; returns
 * 0 or -EIO (reported). */
static int export_open(struct load_ctx *c, struct xfer *x, int argc, char **argv)
{
    struct drx_err err = {{0}};

    if (load_open_view(c, argv[1], false, argv + 3, argc - 3, &x->a, &x->v, x->path,
                       sizeof(x->path)) < 0)
        return -EIO;
    x->m = drx_array_meta(x->a);
    int rc = load_resolve(x->rawarg, true, x->raw, sizeof(x->raw), &err);
    if (rc == 0)
        rc = load_check_output(c, x->raw, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    snprintf(x->xta, sizeof(x->xta), "%s.xta", x->path);
    if (load_open_file(c, x->xta, MPI_MODE_RDONLY, &x->xf, "opening") < 0)
        return -EIO;
    x->advfd = open(x->xta, O_RDONLY | O_CLOEXEC);
    if (load_open_file(c, x->raw, MPI_MODE_WRONLY | MPI_MODE_CREATE, &x->rf, "creating") < 0)
        return -EIO;
    /* The output is exactly the view's bytes, whatever the file held. */
    int mrc = MPI_File_set_size(x->rf, (MPI_Offset)drx_view_bytes(&x->v));
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "truncating %s", x->rawarg);
    return load_agree(c, rc, &err, "export") < 0 ? -EIO : 0;
}

/* The round's packed view bytes written to this rank's pieces of the
 * output (collective).  Returns 0 or -errno with err. */
static int export_write_raw(struct xfer *x, uint64_t bytes, struct drx_err *err)
{
    int rc = load_type_runs(&x->p, &x->ft);
    if (rc < 0)
        drx_err_set(err, -rc, "planning: %s", strerror(-rc));
    if (rc == 0) {
        int mrc = MPI_File_set_view(x->rf, 0, MPI_BYTE, x->ft, "native", MPI_INFO_NULL);
        if (mrc == MPI_SUCCESS)
            mrc = MPI_File_write_all(x->rf, x->packed, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
        if (mrc != MPI_SUCCESS)
            rc = load_mpi_err(err, mrc, "writing %s", x->rawarg);
    }
    load_type_free(&x->ft);
    return rc;
}

/* Round r: chunks in, packed in the view's order and representation,
 * written out.  Every step agreed on by all ranks.  Returns 0 or -EIO
 * (reported). */
static int export_round(struct load_ctx *c, struct xfer *x, uint64_t r)
{
    struct drx_err err = {{0}};
    const uint64_t cb = x->m->chunk_bytes;
    size_t n = x->p.nchunks;
    uint64_t got = 0, bytes;

    int rc = x->ahead_rc;
    if (rc < 0)
        drx_err_set(&err, -rc, "planning: %s", strerror(-rc));
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    /* Read-ahead as in import: this round's chunks (first round) and the
     * next round's, so they come in while this round is written. */
    if (r == 0)
        load_advise_chunks(x->advfd, x->p.q, n, cb);
    if (r + 1 < x->s.rounds) {
        x->ahead_rc = load_plan_round(&x->ahead, x->s.plan, load_share_round(&x->s, r + 1), true);
        if (x->ahead_rc == 0)
            load_advise_chunks(x->advfd, x->ahead.q, x->ahead.nchunks, cb);
    }
    rc = read_chunks(&x->p, x->xf, x->s.chunk_buf, NULL, false, &got, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    /* Chunks past the end of the .xta (a short file) read as the fill
     * value; the chunks are contiguous in the buffer, so that is the tail
     * after what was read. */
    if (got < n * cb)
        load_fill_range(x->s.chunk_buf, got, n * cb, x->m->fill, x->m->elem_size);
    load_plan_pack(&x->p, x->s.chunk_buf, x->packed);
    bytes = load_plan_bytes(&x->p);
    if (x->swap)
        drx_type_convert(x->v.type, x->v.rep, x->packed, bytes / x->v.elem_size);
    rc = export_write_raw(x, bytes, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    load_progress_add(c, &x->pr, bytes);
    xfer_next_round(x);
    return 0;
}

int load_cmd_export(struct load_ctx *c, int argc, char **argv)
{
    struct xfer x;
    int status = 1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: export ARRAY OUTFILE [VIEW...]\n");
        return 2;
    }
    xfer_init(&x, "export", argv[2]);
    if (export_open(c, &x, argc, argv) < 0 || xfer_prepare(c, &x, false) < 0)
        goto out;
    for (uint64_t r = 0; r < x.s.rounds; r++)
        if (export_round(c, &x, r) < 0)
            goto out;
    if (xfer_sync(c, &x, x.rf, x.rawarg) < 0)
        goto out;
    status = 0;
out:
    xfer_close(&x);
    return status;
}
