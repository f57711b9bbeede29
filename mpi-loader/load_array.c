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

int load_cmd_import(struct load_ctx *c, int argc, char **argv)
{
    struct drx_err err = {{0}};
    struct drx_array *a = NULL;
    struct drx_view v;
    struct load_share s = {0};
    struct load_plan p = {0}, ahead = {0};
    struct load_progress pr;
    struct drx_reserve res = {.fd = -1};
    MPI_File rf = MPI_FILE_NULL, xf = MPI_FILE_NULL;
    MPI_Info xinfo = MPI_INFO_NULL;
    MPI_Datatype ft = MPI_BYTE;
    char path[PATH_MAX], raw[PATH_MAX], xta[PATH_MAX + 8];
    unsigned char *packed = NULL;
    uint64_t size = 0;
    int rc, status = 1, rawfd = -1, lockfd = -1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: import ARRAY RAWFILE [VIEW...]\n");
        return 2;
    }
    /* Validate everything before the first byte is written: the array and
     * view, a readable raw file of exactly the view's size. */
    if (load_open_view(c, argv[1], true, argv + 3, argc - 3, &a, &v, path, sizeof(path)) < 0)
        goto out;
    const struct drx_array_meta *m = drx_array_meta(a);
    /* Our writes go to the .xta by MPI-IO, past drx_array_open's check: an
     * .xta with another name (a rename cut short) is not written. */
    rc = drx_array_check_links(a, &err);
    if (rc == 0)
        rc = load_resolve(argv[2], false, raw, sizeof(raw), &err);
    if (rc == 0)
        rc = load_check_input(raw, &size, &err);
    if (rc == -ENOENT && drx_stripe_exists(raw))
        rc = drx_err_set(&err, EINVAL,
                         "%s: is a striped file; import reads plain files "
                         "(drx-load copy it out first)",
                         argv[2]);
    if (rc == 0 && size != drx_view_bytes(&v))
        rc = drx_err_set(&err, EINVAL, "%s: %llu bytes, but the view holds %llu", argv[2],
                         (unsigned long long)size, (unsigned long long)drx_view_bytes(&v));
    if (load_agree(c, rc, &err, "import") < 0)
        goto out;
    if (load_open_file(c, raw, MPI_MODE_RDONLY, &rf, "opening") < 0)
        goto out;
    rawfd = open(raw, O_RDONLY | O_CLOEXEC); /* for read-ahead advice only */
    snprintf(xta, sizeof(xta), "%s.xta", path);
    /* Data sieving locks with classic POSIX locks, which would wait forever
     * for this process's own chunk locks: never on the .xta. */
    MPI_Info_dup(c->info, &xinfo);
    MPI_Info_set(xinfo, "romio_ds_write", "disable");
    if (load_open_file_info(c, xta, MPI_MODE_RDWR, xinfo, &xf, "opening") < 0)
        goto out;
    lockfd = open(xta, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    rc = lockfd >= 0 ? 0 : drx_err_set(&err, errno, "%s: %s", xta, strerror(errno));
    if (load_agree(c, rc, &err, "import") < 0)
        goto out;
    if (load_share_init(c, m, &v, &s) < 0)
        goto out;
    packed = malloc(s.bufchunks * m->chunk_bytes);
    rc = packed ? 0 : drx_err_set(&err, ENOMEM, "out of memory");
    if (rc == 0)
        rc = reserve_share(&s, m, xta, &res, &err);
    /* every rank gives back its reservation when any rank could not */
    rc = load_agree(c, rc, &err, "import");
    reserve_end(&res, rc < 0);
    if (rc < 0)
        goto out;
    load_plan_init(&p, m, &v);
    load_plan_init(&ahead, m, &v);

    const bool swap = drx_type_rep_swaps(v.type, v.rep);
    load_progress_start(c, &pr, "import", drx_view_bytes(&v));
    /* The planner streams the share, so a round is planned once: ahead,
     * while the previous one moves, from the first round on. */
    int ahead_rc = load_plan_round(&p, s.plan, load_share_round(&s, 0), true);
    for (uint64_t r = 0; r < s.rounds; r++) {
        const uint64_t *q = p.q;
        size_t n = p.nchunks;
        uint64_t bytes = 0;
        int mrc;
        MPI_Status st;

        rc = ahead_rc;
        if (rc == 0)
            rc = load_type_runs(&p, &ft);
        if (rc < 0)
            drx_err_set(&err, -rc, "planning: %s", strerror(-rc));
        bytes = load_plan_bytes(&p);
        /* Read-ahead: this round's raw ranges (first round) and the next
         * round's, asked for before this round's read so the disk has the
         * next round queued while this one is unpacked and written. */
        if (rc == 0 && r == 0)
            advise_runs(rawfd, &p);
        if (rc == 0 && r + 1 < s.rounds) {
            ahead_rc = load_plan_round(&ahead, s.plan, load_share_round(&s, r + 1), true);
            if (ahead_rc == 0)
                advise_runs(rawfd, &ahead);
        }
        /* 1. This rank's pieces of the raw file, packed in raw order. */
        if (rc == 0) {
            mrc = MPI_File_set_view(rf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            if (mrc == MPI_SUCCESS)
                mrc = MPI_File_read_all(rf, packed, (int)bytes, MPI_BYTE, &st);
            int got = 0;
            if (mrc == MPI_SUCCESS)
                MPI_Get_count(&st, MPI_BYTE, &got);
            if (mrc != MPI_SUCCESS)
                rc = load_mpi_err(&err, mrc, "reading %s", argv[2]);
            else if ((uint64_t)got != bytes)
                rc = drx_err_set(&err, EIO, "%s: short read (file changed?)", argv[2]);
        }
        if (rc == 0 && swap)
            drx_type_convert(v.type, v.rep, packed, bytes / v.elem_size);
        /* 2. Chunks the view covers only in part keep their other elements:
         * read them first (read-modify-write).  Beyond the bounds a chunk
         * holds the fill value. */
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (!p.covered[i] || !p.inside[i])
                load_fill(s.chunk_buf + i * m->chunk_bytes, m->chunk_bytes, m->fill, m->elem_size);
        if (load_agree(c, rc, &err, "import") < 0)
            goto out;
        rc = lock_round(c, lockfd, q, n, m->chunk_bytes, &err);
        if (load_agree(c, rc, &err, "import") < 0)
            goto out;
        rc = read_chunks(&p, xf, s.chunk_buf, p.covered, false, NULL, &err);
        if (load_agree(c, rc, &err, "import") < 0)
            goto out;
        /* 3. Scatter the view's bytes into the chunks and write them. */
        load_plan_unpack(&p, packed, s.chunk_buf);
        load_type_free(&ft);
        rc = load_type_chunks(&p, &ft);
        if (rc < 0)
            drx_err_set(&err, -rc, "chunk type: %s", strerror(-rc));
        if (rc == 0) {
            mrc = MPI_File_set_view(xf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            if (mrc == MPI_SUCCESS)
                mrc = MPI_File_write_all(xf, s.chunk_buf, (int)(n * m->chunk_bytes), MPI_BYTE,
                                         MPI_STATUS_IGNORE);
            if (mrc != MPI_SUCCESS)
                rc = load_mpi_err(&err, mrc, "writing %s", xta);
        }
        load_type_free(&ft);
        /* every rank has written (collective buffering included) once all
         * agree: only then may others merge with these chunks */
        rc = load_agree(c, rc, &err, "import");
        unlock_round(lockfd, q, n, m->chunk_bytes);
        if (rc < 0)
            goto out;
        load_progress_add(c, &pr, bytes);
        /* the plan made ahead becomes the next round's */
        struct load_plan t = p;
        p = ahead;
        ahead = t;
    }
    /* Exit 0 means the data is on disk. */
    int mrc = MPI_File_sync(xf);
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "syncing %s", xta);
    if (load_agree(c, rc, &err, "import") < 0)
        goto out;
    load_progress_end(&pr);
    status = 0;
out:
    load_type_free(&ft);
    load_close_file(&rf);
    load_close_file(&xf);
    if (xinfo != MPI_INFO_NULL)
        MPI_Info_free(&xinfo);
    if (lockfd >= 0)
        close(lockfd); /* lets go of any chunk lock still held */
    if (rawfd >= 0)
        close(rawfd);
    load_plan_fini(&ahead);
    load_plan_fini(&p);
    load_share_fini(&s);
    free(packed);
    drx_array_close(a);
    return status;
}

/* --- export --- */

int load_cmd_export(struct load_ctx *c, int argc, char **argv)
{
    struct drx_err err = {{0}};
    struct drx_array *a = NULL;
    struct drx_view v;
    struct load_share s = {0};
    struct load_plan p = {0}, ahead = {0};
    struct load_progress pr;
    MPI_File of = MPI_FILE_NULL, xf = MPI_FILE_NULL;
    MPI_Datatype ft = MPI_BYTE;
    char path[PATH_MAX], out[PATH_MAX], xta[PATH_MAX + 8];
    unsigned char *packed = NULL;
    int rc, status = 1, xtafd = -1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: export ARRAY OUTFILE [VIEW...]\n");
        return 2;
    }
    if (load_open_view(c, argv[1], false, argv + 3, argc - 3, &a, &v, path, sizeof(path)) < 0)
        goto out;
    const struct drx_array_meta *m = drx_array_meta(a);
    rc = load_resolve(argv[2], true, out, sizeof(out), &err);
    if (rc == 0)
        rc = load_check_output(c, out, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        goto out;
    snprintf(xta, sizeof(xta), "%s.xta", path);
    if (load_open_file(c, xta, MPI_MODE_RDONLY, &xf, "opening") < 0)
        goto out;
    xtafd = open(xta, O_RDONLY | O_CLOEXEC); /* for read-ahead advice only */
    if (load_open_file(c, out, MPI_MODE_WRONLY | MPI_MODE_CREATE, &of, "creating") < 0)
        goto out;
    /* The output is exactly the view's bytes, whatever the file held. */
    int mrc = MPI_File_set_size(of, (MPI_Offset)drx_view_bytes(&v));
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "truncating %s", argv[2]);
    if (load_agree(c, rc, &err, "export") < 0)
        goto out;
    if (load_share_init(c, m, &v, &s) < 0)
        goto out;
    packed = malloc(s.bufchunks * m->chunk_bytes);
    rc = packed ? 0 : drx_err_set(&err, ENOMEM, "out of memory");
    if (load_agree(c, rc, &err, "export") < 0)
        goto out;
    load_plan_init(&p, m, &v);
    load_plan_init(&ahead, m, &v);

    const bool swap = drx_type_rep_swaps(v.type, v.rep);
    load_progress_start(c, &pr, "export", drx_view_bytes(&v));
    /* Rounds planned one ahead, as in import, to advise the next one. */
    int ahead_rc = load_plan_round(&p, s.plan, load_share_round(&s, 0), true);
    for (uint64_t r = 0; r < s.rounds; r++) {
        const uint64_t *q = p.q;
        size_t n = p.nchunks;
        uint64_t bytes;

        rc = ahead_rc;
        if (rc < 0)
            drx_err_set(&err, -rc, "planning: %s", strerror(-rc));
        if (load_agree(c, rc, &err, "export") < 0)
            goto out;
        /* Read-ahead as in import: this round's chunks (first round) and
         * the next round's, so they come in while this round is written. */
        if (r == 0)
            load_advise_chunks(xtafd, q, n, m->chunk_bytes);
        if (r + 1 < s.rounds) {
            ahead_rc = load_plan_round(&ahead, s.plan, load_share_round(&s, r + 1), true);
            if (ahead_rc == 0)
                load_advise_chunks(xtafd, ahead.q, ahead.nchunks, m->chunk_bytes);
        }
        uint64_t got = 0;
        rc = read_chunks(&p, xf, s.chunk_buf, NULL, false, &got, &err);
        if (load_agree(c, rc, &err, "export") < 0)
            goto out;
        /* Chunks past the end of the .xta (a short file) read as the fill
         * value; the chunks are contiguous in the buffer, so that is the
         * tail after what was read. */
        if (got < n * m->chunk_bytes)
            load_fill_range(s.chunk_buf, got, n * m->chunk_bytes, m->fill, m->elem_size);
        load_plan_pack(&p, s.chunk_buf, packed);
        bytes = load_plan_bytes(&p);
        if (swap)
            drx_type_convert(v.type, v.rep, packed, bytes / v.elem_size);
        rc = load_type_runs(&p, &ft);
        if (rc < 0)
            drx_err_set(&err, -rc, "planning: %s", strerror(-rc));
        if (rc == 0) {
            mrc = MPI_File_set_view(of, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            if (mrc == MPI_SUCCESS)
                mrc = MPI_File_write_all(of, packed, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
            if (mrc != MPI_SUCCESS)
                rc = load_mpi_err(&err, mrc, "writing %s", argv[2]);
        }
        load_type_free(&ft);
        if (load_agree(c, rc, &err, "export") < 0)
            goto out;
        load_progress_add(c, &pr, bytes);
        struct load_plan tmp = p;
        p = ahead;
        ahead = tmp;
    }
    mrc = MPI_File_sync(of);
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "syncing %s", argv[2]);
    if (load_agree(c, rc, &err, "export") < 0)
        goto out;
    load_progress_end(&pr);
    status = 0;
out:
    load_type_free(&ft);
    load_close_file(&of);
    load_close_file(&xf);
    if (xtafd >= 0)
        close(xtafd);
    load_plan_fini(&ahead);
    load_plan_fini(&p);
    load_share_fini(&s);
    free(packed);
    drx_array_close(a);
    return status;
}
