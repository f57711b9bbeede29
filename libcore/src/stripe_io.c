/* Striped files: reads, writes and truncation through a handle (the
 * striping formula is stripe_layout.c's, persisting sizes stripe.c's). */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/io.h"
#include "drx/log.h"
#include "stripe_i.h"

/* ---- I/O ------------------------------------------------------------------------------ */

static int missing(struct drx_stripe *f, unsigned i)
{
    if (!atomic_exchange(&f->warned[i], true))
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s" DRX_STRIPE_SUFFIX ": subfile %u (%s) is unavailable", f->path, i,
                            f->meta.sub[i].name);
    return -EIO;
}

/* Subfiles past the first are made when a byte reaches them, under names
 * the stripe directory shows before: one found there that no recorded
 * size needs (another writer of this file made it first, or a third user
 * planted it to be written into) is used only when its owner is the
 * file's (the owner of the handle's first subfile, rst) or this process.
 * Returns fd, or -EIO with fd closed. */
static int subfile_theirs(struct drx_stripe *f, unsigned i, int fd, const struct stat *rst)
{
    struct stat st;

    if (fstat(fd, &st) == 0 && (st.st_uid == rst->st_uid || st.st_uid == geteuid()))
        return fd;
    drx_log_ratelimited(DRX_LOG_ERROR,
                        "%s" DRX_STRIPE_SUFFIX ": subfile %u (%s) belongs to another user: refused",
                        f->path, i, f->meta.sub[i].name);
    close(fd);
    return -EIO;
}

/* The owner of f's subfiles (of the first one open; this process when
 * none is).  0 or -errno. */
static int subfile_owner(const struct drx_stripe *f, struct stat *rst)
{
    int ref = drx_stripe_lock_fd(f);

    memset(rst, 0, sizeof *rst);
    rst->st_uid = geteuid();
    rst->st_gid = getegid();
    return ref >= 0 && fstat(ref, rst) < 0 ? -errno : 0;
}

/* Subfile i, created now (f->lock held, read-write handle).  It belongs
 * to whoever owns the file's other subfiles, as drx_stripe_create's do (a
 * daemon running as root gives new files to their caller); one already
 * there must be theirs (subfile_theirs). */
static int subfile_create(struct drx_stripe *f, unsigned i)
{
    struct stat rst;
    char mp[PATH_MAX];

    /* The file removed at once while open (drxfs on a full store, or on
     * another file system than its hidden directory's): a subfile made now
     * would belong to no metafile, an orphan until drx fsck.  ESTALE, as
     * NFS answers for a file removed on the server. */
    bool gone = f->meta_fd >= 0 ? fstat(f->meta_fd, &rst) == 0 && rst.st_nlink == 0
                                : drx_stripe_meta_path(f->path, mp, sizeof mp) == 0 &&
                                      lstat(mp, &rst) < 0 && errno == ENOENT;
    if (gone) {
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%s" DRX_STRIPE_SUFFIX ": removed while open: subfile %u not made "
                            "(ESTALE)",
                            f->path, i);
        return -ESTALE;
    }
    int fd = subfile_owner(f, &rst);

    if (fd < 0)
        return fd;
    fd = drx_stripe_subfile_new(f->s, &f->meta, i, f->sub_mode, f->path);
    if (fd >= 0 && geteuid() == 0 && (rst.st_uid != 0 || rst.st_gid != 0))
        (void)!fchown(fd, rst.st_uid, rst.st_gid);
    if (fd != -EEXIST)
        return fd;
    fd = drx_stripe_subfile_open(f->s, &f->meta, i, O_RDWR, 0, f->path);
    return fd < 0 ? fd : subfile_theirs(f, i, fd, &rst);
}

/* Subfile i opened without creating it; one no recorded size needs must
 * be the file owner's (subfile_theirs). */
static int subfile_open_existing(struct drx_stripe *f, unsigned i, bool needed)
{
    struct stat rst;
    int fd = drx_stripe_subfile_open(f->s, &f->meta, i,
                                     f->mode == DRX_STRIPE_RDWR ? O_RDWR : O_RDONLY, 0, f->path);

    if (fd < 0 || needed)
        return fd;
    if (subfile_owner(f, &rst) < 0) {
        close(fd);
        return -EIO;
    }
    return subfile_theirs(f, i, fd, &rst);
}

/* Whether rc is the system's want of room or descriptors, or the file's
 * removal (ESTALE, subfile_create), not damage: passed to the caller as it
 * is (a full stripe directory is ENOSPC, as README promises, not
 * "unavailable" and EIO). */
static bool not_damage(int rc)
{
    return rc == -ENOSPC || rc == -EDQUOT || rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM ||
           rc == -ESTALE;
}

int drx_stripe_subfile_fd_locked(struct drx_stripe *f, unsigned i, bool create)
{
    int fd = __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE);
    bool rw = f->mode == DRX_STRIPE_RDWR;
    bool needed = drx_stripe_subfile_len(&f->meta.layout, i, f->persisted) > 0;

    if (fd >= 0)
        return fd;
    /* Never re-created once a recorded size needed it: then its absence
     * is damage (EIO), not a subfile not written yet. */
    create = create && rw && !needed;
    fd = create ? subfile_create(f, i) : subfile_open_existing(f, i, needed);
    if (fd == -ENOENT && !needed)
        return -ENOENT;
    if (not_damage(fd)) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": subfile %u (%s): %s%s",
                            f->path, i, f->meta.sub[i].name, create ? "cannot create it: " : "",
                            strerror(-fd));
        return fd;
    }
    if (fd < 0)
        return missing(f, i);
    if (create) {
        /* its name must be durable before a size covering it */
        f->dirs_synced = false;
        f->wgen++;
    }
    __atomic_store_n(&f->fds[i], fd, __ATOMIC_RELEASE);
    return fd;
}

int drx_stripe_subfile_fd(struct drx_stripe *f, unsigned i, bool create)
{
    int fd = __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE);

    if (fd >= 0)
        return fd;
    pthread_mutex_lock(&f->lock);
    fd = drx_stripe_subfile_fd_locked(f, i, create);
    pthread_mutex_unlock(&f->lock);
    return fd;
}

int drx_stripe_subfiles_for(struct drx_stripe *f, uint64_t size)
{
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        if (drx_stripe_subfile_len(&f->meta.layout, i, size) == 0)
            continue;
        int fd = drx_stripe_subfile_fd_locked(f, i, true);
        if (fd < 0)
            return fd == -ENOENT ? -EIO : fd;
    }
    return 0;
}

/* ---- small extents: one system call per subfile ------------------------------------ */

/* A request over extents smaller than this goes through a buffer: each
 * subfile's part of it is one run in the subfile (its extents follow each
 * other there), read or written with one call, and the extents are copied
 * between the buffer and the caller's in memory.  Piece by piece, a layout
 * of 1-byte extents cost a system call per byte (a user's 1 MiB write
 * about a second of a daemon thread). */
#define GATHER_EXTENT_MAX 16384
/* Logical bytes per round through the buffer. */
#define GATHER_WINDOW ((size_t)1 << 20)

static bool gathered(const struct drx_stripe_layout *l, size_t len)
{
    return l->extent < GATHER_EXTENT_MAX && len > l->extent;
}

/* Where subfile i's part of logical bytes [a, b) lies in it: [*s0, *s1),
 * empty when none of them is its. */
static void subfile_run(const struct drx_stripe_layout *l, unsigned i, uint64_t a, uint64_t b,
                        uint64_t *s0, uint64_t *s1)
{
    const uint64_t ext = l->extent, cnt = l->count;
    uint64_t e0 = a / ext, e1 = (b - 1) / ext; /* first and last extent */
    uint64_t first = e0 + (i + cnt - e0 % cnt) % cnt;
    uint64_t last = e1 - (e1 % cnt + cnt - i) % cnt;

    *s0 = *s1 = 0;
    if (e1 < i || first > e1 || last < e0)
        return;
    *s0 = first / cnt * ext + (first == e0 ? a % ext : 0);
    *s1 = last / cnt * ext + (last == e1 ? (b - 1) % ext + 1 : ext);
}

/* The buffer of a gathered request: each subfile's run at at[i] (n[i]
 * bytes, from subfile offset s0[i]), in subfile order. */
struct gather {
    unsigned char *buf;
    size_t *at, *n;
    uint64_t *s0;
};

static int gather_new(struct gather *g, unsigned count, size_t window)
{
    g->buf = malloc(window);
    g->at = calloc(count, sizeof *g->at);
    g->n = calloc(count, sizeof *g->n);
    g->s0 = calloc(count, sizeof *g->s0);
    return g->buf && g->at && g->n && g->s0 ? 0 : -ENOMEM;
}

static void gather_free(struct gather *g)
{
    free(g->buf);
    free(g->at);
    free(g->n);
    free(g->s0);
}

/* Lays out the runs of logical bytes [a, a + len) in g. */
static void gather_plan(const struct drx_stripe_layout *l, struct gather *g, uint64_t a, size_t len)
{
    size_t at = 0;

    for (unsigned i = 0; i < l->count; i++) {
        uint64_t s1;
        subfile_run(l, i, a, a + len, &g->s0[i], &s1);
        g->at[i] = at;
        g->n[i] = (size_t)(s1 - g->s0[i]);
        at += g->n[i];
    }
}

/* Copies logical bytes [a, a + len) between the caller's buffer and g's
 * runs: from `in` into the runs for a write, out of them into `out` for a
 * read (the other NULL).  Uses g->at as cursors. */
static void gather_copy(const struct drx_stripe_layout *l, struct gather *g,
                        const unsigned char *in, unsigned char *out, uint64_t a, size_t len)
{
    uint64_t within = a % l->extent;
    unsigned sf = (unsigned)(a / l->extent % l->count);

    for (size_t pos = 0; pos < len;) {
        size_t n = l->extent - within < len - pos ? (size_t)(l->extent - within) : len - pos;
        unsigned char *run = g->buf + g->at[sf];
        if (in)
            memcpy(run, in + pos, n);
        else
            memcpy(out + pos, run, n);
        g->at[sf] += n;
        pos += n;
        within = 0;
        if (++sf == l->count)
            sf = 0;
    }
}

/* Reads subfile run i of g from fd: past the subfile's end, zeros (a hole
 * up to the logical size).  0 or -errno. */
static int gather_read_run(int fd, struct gather *g, unsigned i)
{
    unsigned char *run = g->buf + g->at[i];
    size_t got = 0;

    while (got < g->n[i]) {
        ssize_t r = pread(fd, run + got, g->n[i] - got, (off_t)(g->s0[i] + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0) {
            memset(run + got, 0, g->n[i] - got);
            break;
        }
        got += (size_t)r;
    }
    return 0;
}

/* Reads logical bytes [a, a + w) into out through g's runs (g planned
 * for them).  0 or -errno. */
static int window_read(struct drx_stripe *f, struct gather *g, unsigned char *out, uint64_t a,
                       size_t w)
{
    const struct drx_stripe_layout *l = &f->meta.layout;

    for (unsigned i = 0; i < l->count; i++) {
        if (!g->n[i])
            continue;
        int fd = drx_stripe_subfile_fd(f, i, false), rc = 0;
        if (fd == -ENOENT) /* not created: nothing written there yet */
            memset(g->buf + g->at[i], 0, g->n[i]);
        else
            rc = fd < 0 ? fd : gather_read_run(fd, g, i);
        if (rc < 0)
            return rc;
    }
    gather_copy(l, g, NULL, out, a, w);
    return 0;
}

/* Writes logical bytes [a, a + w) from in through g's runs (g planned for
 * them).  0 or -errno. */
static int window_write(struct drx_stripe *f, struct gather *g, const unsigned char *in, uint64_t a,
                        size_t w)
{
    const struct drx_stripe_layout *l = &f->meta.layout;
    size_t at = 0;
    int rc = 0;

    /* A subfile written whole before a later one fails would hold bytes
     * past what the write reports (inside the size: overwritten, or space
     * taken for good).  So what can fail fails before any byte is written:
     * every subfile open, and its run's blocks allocated (a full disk, a
     * quota; where fallocate is not supported, the window goes piece by
     * piece).  Left: an I/O error in the pwrites themselves. */
    for (unsigned i = 0; i < l->count && rc == 0; i++) {
        if (!g->n[i])
            continue;
        int fd = drx_stripe_subfile_fd(f, i, true);
        if (fd < 0)
            rc = fd == -ENOENT ? -EIO : fd;
        else
            rc = drx_io_fallocate(fd, FALLOC_FL_KEEP_SIZE, g->s0[i], g->n[i]);
    }
    if (rc < 0)
        return rc;
    gather_copy(l, g, in, NULL, a, w);
    for (unsigned i = 0; i < l->count && rc == 0; i++) {
        if (g->n[i])
            rc = drx_io_pwrite_all(drx_stripe_subfile_fd(f, i, true), g->buf + at, g->n[i],
                                   g->s0[i]);
        at += g->n[i];
    }
    return rc;
}

/* drx_stripe_read's (into out) or drx_stripe_write's (from in) loop for
 * small extents (gathered()), window by window: *done counts whole
 * windows; after an error the caller goes on piece by piece from there,
 * which stops exactly where the error is. */
static int io_gathered(struct drx_stripe *f, const unsigned char *in, unsigned char *out,
                       size_t len, uint64_t off, size_t *done)
{
    struct gather g;
    int rc = gather_new(&g, f->meta.layout.count, len < GATHER_WINDOW ? len : GATHER_WINDOW);

    while (rc == 0 && *done < len) {
        size_t w = len - *done < GATHER_WINDOW ? len - *done : GATHER_WINDOW;
        gather_plan(&f->meta.layout, &g, off + *done, w);
        rc = in ? window_write(f, &g, in + *done, off + *done, w)
                : window_read(f, &g, out + *done, off + *done, w);
        if (rc == 0)
            *done += w;
    }
    gather_free(&g);
    return rc;
}

ssize_t drx_stripe_read(struct drx_stripe *f, void *buf, size_t len, uint64_t off)
{
    unsigned char *p = buf;
    uint64_t size = drx_stripe_size(f);
    size_t done = 0;

    if (off >= size || len == 0)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    /* on an error (a missing subfile, no memory) the windows not read go
     * piece by piece, which stops exactly where the error is */
    if (gathered(&f->meta.layout, len) && io_gathered(f, NULL, p, len, off, &done) == 0)
        return (ssize_t)done;
    while (done < len) {
        struct drx_stripe_piece pc;
        drx_stripe_locate(&f->meta.layout, off + done, len - done, &pc);
        size_t n = (size_t)pc.len, got = 0;
        uint64_t so = pc.offset;
        int fd = drx_stripe_subfile_fd(f, pc.subfile, false);

        if (fd == -ENOENT) {
            /* not created: nothing written there yet, a hole */
            memset(p + done, 0, n);
            done += n;
            continue;
        }
        if (fd < 0)
            return done ? (ssize_t)done : fd;
        /* Not drx_io_pread_all: the end of a subfile is a hole here, not an
         * error. */
        while (got < n) {
            ssize_t r = pread(fd, p + done + got, n - got, (off_t)(so + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return done ? (ssize_t)done : -errno;
            if (r == 0) {
                /* Short subfile: a hole up to the logical size. */
                memset(p + done + got, 0, n - got);
                break;
            }
            got += (size_t)r;
        }
        done += n;
    }
    return (ssize_t)done;
}

/* After a run cut short by a full disk: the bytes it did write lie past the
 * size, unseen, holding space; cut them now.  Writers are shut out, so
 * every finished write is under the size, and the recorded size (another
 * process may have written further) is never cut below. */
static void cut_unrecorded(struct drx_stripe *f)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta disk;
    uint64_t keep;
    int lfd, rc;

    /* bytes past the recorded size while another process's size is not
     * recorded yet may be its (stripe_pending.c): left for a later grow */
    if (drx_stripe_meta_path_of(f, mp, sizeof mp) == 0 && drx_stripe_pending_wait(mp, 0) < 0)
        return;
    pthread_rwlock_wrlock(&f->io);
    pthread_mutex_lock(&f->lock);
    keep = f->size;
    lfd = drx_stripe_lock_fd(f);
    bool locked = drx_stripe_lock_take(f, lfd);
    if (drx_stripe_meta_path(f->path, mp, sizeof mp) == 0 &&
        drx_stripe_meta_load_st(mp, f->s->cfg.stripe.ndirs, &disk, NULL, NULL) == 0 &&
        drx_stripe_same_file(f, &disk) && disk.size > keep)
        keep = disk.size;
    rc = drx_stripe_cut_subfiles(f, keep);
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s" DRX_STRIPE_SUFFIX ": cutting an unfinished write: %s", f->path,
                            strerror(-rc));
    if (locked)
        flock(lfd, LOCK_UN);
    pthread_mutex_unlock(&f->lock);
    pthread_rwlock_unlock(&f->io);
}

/* Writes len bytes at off into the subfiles, piece by piece (f->io held
 * shared); *done counts the bytes written before any error. */
static int write_pieces(struct drx_stripe *f, const unsigned char *p, size_t len, uint64_t off,
                        size_t *done)
{
    int rc = 0;

    while (*done < len) {
        struct drx_stripe_piece pc;
        drx_stripe_locate(&f->meta.layout, off + *done, len - *done, &pc);
        size_t n = (size_t)pc.len;

        int fd = drx_stripe_subfile_fd(f, pc.subfile, true);
        if (fd < 0) {
            rc = fd == -ENOENT ? -EIO : fd;
            break;
        }
        /* A run cut short (ENOSPC) counts for nothing: its bytes lie beyond
         * the size, unseen, and a later grow cuts them off. */
        rc = drx_io_pwrite_all(fd, p + *done, n, pc.offset);
        if (rc < 0)
            break;
        *done += n;
    }
    return rc;
}

/* Extends the size to end after a write (f->io held shared); true when
 * enough has grown unrecorded that the metafile should be updated. */
static bool note_written(struct drx_stripe *f, uint64_t end)
{
    bool grown;

    /* Only now, with the bytes in the subfiles, may the size cover them. */
    pthread_mutex_lock(&f->lock);
    if (end > f->size)
        f->size = end;
    f->wgen++;
    grown = f->size > f->persisted && f->size - f->persisted >= DRX_STRIPE_PERSIST_BYTES;
    pthread_mutex_unlock(&f->lock);
    return grown;
}

/* Before a write that may grow the file to end: every subfile a size of
 * end needs exists, the holes a sparse write leaves before it included (no
 * size may cover a subfile not created). */
static int subfiles_before_write(struct drx_stripe *f, uint64_t end)
{
    bool all = true;
    int rc = 0;

    for (unsigned i = 0; i < f->meta.layout.count && all; i++)
        all = __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE) >= 0;
    if (all)
        return 0;
    pthread_mutex_lock(&f->lock);
    if (end > f->size)
        rc = drx_stripe_subfiles_for(f, end);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* drx_stripe_write at off, or (append) at the size, with f->io held
 * exclusively from taking the size until the size covers the bytes, so
 * that two appends never take the same end; *at: where it wrote. */
static ssize_t stripe_write(struct drx_stripe *f, const void *buf, size_t len, uint64_t off,
                            bool append, uint64_t *at)
{
    size_t done = 0;
    int rc = 0;
    bool grown = false;

    if (f->mode != DRX_STRIPE_RDWR)
        return -EBADF;
    if (len == 0)
        return 0;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    if (append) {
        pthread_rwlock_wrlock(&f->io);
        pthread_mutex_lock(&f->lock);
        off = f->size;
        pthread_mutex_unlock(&f->lock);
    }
    if (at)
        *at = off;
    if (off > DRX_STRIPE_MAX_SIZE || len > DRX_STRIPE_MAX_SIZE - off) {
        if (append)
            pthread_rwlock_unlock(&f->io);
        return -EFBIG;
    }
    if (!append)
        pthread_rwlock_rdlock(&f->io);
    rc = subfiles_before_write(f, off + len);
    /* on an error the windows not written go piece by piece, which stops
     * exactly where the error is (rewriting what the window wrote) */
    if (rc == 0 &&
        (!gathered(&f->meta.layout, len) || io_gathered(f, buf, NULL, len, off, &done) < 0))
        rc = write_pieces(f, buf, len, off, &done);
    if (done > 0)
        grown = note_written(f, off + done);
    pthread_rwlock_unlock(&f->io);
    if (rc == -ENOSPC || rc == -EDQUOT)
        cut_unrecorded(f);
    if (grown) {
        /* No give-back here: this write succeeded; a size that cannot be
         * recorded is the close's (or fsync's) error. */
        int prc = drx_stripe_persist(f, false, false);
        if (prc < 0)
            drx_log_ratelimited(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": cannot record size: %s",
                                f->path, strerror(-prc));
    }
    return done > 0 ? (ssize_t)done : rc;
}

ssize_t drx_stripe_write(struct drx_stripe *f, const void *buf, size_t len, uint64_t off)
{
    return stripe_write(f, buf, len, off, false, NULL);
}

ssize_t drx_stripe_append(struct drx_stripe *f, const void *buf, size_t len, uint64_t *at)
{
    return stripe_write(f, buf, len, 0, true, at);
}

/* Cuts every subfile to what `size` needs, when longer (f->io held
 * exclusively). */
int drx_stripe_cut_subfiles(struct drx_stripe *f, uint64_t size)
{
    int rc = 0;

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        struct stat st;
        uint64_t want = drx_stripe_subfile_len(&f->meta.layout, i, size);
        int fd = drx_stripe_subfile_fd_locked(f, i, false);
        if (fd < 0)
            continue; /* not created (nothing to cut), or missing */
        if (fstat(fd, &st) < 0) {
            rc = rc ? rc : -errno;
            continue;
        }
        if ((uint64_t)st.st_size > want) {
            if (ftruncate(fd, (off_t)want) < 0)
                rc = rc ? rc : -errno;
            f->wgen++; /* a later size over the cut needs it durable */
        }
    }
    return rc;
}

/* The size to truncate from: ours, or a larger one another process has
 * recorded since we last looked (f->lock held): a growing truncate cuts
 * what lies past it, which must not be that process's bytes. */
static uint64_t size_now(struct drx_stripe *f)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta disk;

    if (f->size == f->persisted && !f->truncated &&
        drx_stripe_meta_path(f->path, mp, sizeof mp) == 0 &&
        drx_stripe_meta_load_st(mp, f->s->cfg.stripe.ndirs, &disk, NULL, NULL) == 0 &&
        drx_stripe_same_file(f, &disk) && disk.size > f->size)
        f->size = f->persisted = disk.size;
    return f->size;
}

/* -EFBIG when a subfile cannot be as long as size needs, past the largest
 * file of its stripe directory's file system (where lseek to an offset is
 * EINVAL): the truncate fails there, as it would on that disk, rather than
 * record a size no write can reach (f->lock held, the subfiles made).  The
 * file system's own limit only: not RLIMIT_FSIZE, nor a network file
 * system's server that holds less than its client says. */
static int subfiles_can_hold(struct drx_stripe *f, uint64_t size)
{
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        uint64_t need = drx_stripe_subfile_len(&f->meta.layout, i, size);
        int fd = need ? drx_stripe_subfile_fd_locked(f, i, false) : -1;
        if (fd >= 0 && lseek(fd, (off_t)need, SEEK_SET) < 0 && errno == EINVAL)
            return -EFBIG;
    }
    return 0;
}

int drx_stripe_truncate(struct drx_stripe *f, uint64_t size)
{
    char mp[PATH_MAX];
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return -EBADF;
    if (size > DRX_STRIPE_MAX_SIZE)
        return -EFBIG;
    /* another process's size not recorded yet: its bytes past the recorded
     * size are its data, not leftovers to cut (stripe_pending.c) */
    if (drx_stripe_meta_path_of(f, mp, sizeof mp) == 0 &&
        drx_stripe_pending_wait(mp, drx_stripe_pending_wait_ms()) < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s" DRX_STRIPE_SUFFIX ": truncate refused: another process has "
                            "written it and not recorded its size in %g s",
                            f->path, drx_stripe_pending_wait_ms() / 1000.0);
        return -EAGAIN;
    }
    pthread_rwlock_wrlock(&f->io);
    pthread_mutex_lock(&f->lock);
    uint64_t old = size_now(f);
    if (size < old) {
        /* Metafile first, and durable (fsync of it and its directory): a
         * crash before the subfiles are cut leaves bytes beyond the size
         * (fsck trims them), never a size past the data, even when the cut
         * reached the disk and the new metafile did not. */
        f->size = size;
        f->truncated = true;
        rc = drx_stripe_persist_locked(f, true, true);
        if (rc == 0)
            rc = drx_stripe_cut_subfiles(f, size);
    } else {
        /* Stale bytes beyond the old size (a crashed writer's, or a cut that
         * did not finish) would show through the new hole: cut them first. */
        rc = drx_stripe_cut_subfiles(f, old);
        if (rc == 0)
            rc = drx_stripe_subfiles_for(f, size);
        if (rc == 0)
            rc = subfiles_can_hold(f, size);
        if (rc == 0) {
            f->size = size;
            f->truncated = true;
            rc = drx_stripe_persist_locked(f, false, true);
        }
    }
    pthread_mutex_unlock(&f->lock);
    pthread_rwlock_unlock(&f->io);
    return rc;
}
