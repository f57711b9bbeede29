/* File locks through the mount, shared with every other holder of the
 * file's locks.
 *
 * Without lock operations the kernel keeps flock(2) and fcntl(2)/lockf(3)
 * locks itself, per kernel inode: a lock through one hard link's name,
 * through a second mount of the store or on the store's file did not
 * exclude one through another, and SQLite with writers on two mounts lost
 * rows.  Here the daemon takes each lock on the store's own file with an
 * open file description (OFD) lock or flock of a description of its own:
 *
 *   - a pass-through file: the file itself (shared with local processes
 *     locking the store's path, with POSIX or OFD locks or flock);
 *   - a striped file: its metafile (the file's inode, whichever name or
 *     mount), fcntl ranges moved past the bytes libcore locks there (its
 *     first LK_BASE bytes; its pending marks at 2^62 and above);
 *   - anything else the mount shows (views, zarr keys, info): a memfd per
 *     mount path, so that locks on it exclude each other as before, within
 *     this mount.
 *
 * One description per lock owner: for fcntl locks the kernel's owner (a
 * process's file table), whose locks then merge and split as POSIX says
 * and are dropped whole when it closes the file: at the close's FLUSH
 * (libfuse unlocks everything of the owner) or, for an open that asks for
 * no FLUSH (read-only opens, drxfs_op_open), at the RELEASE of the open
 * file it locked through; for flock each open file, until it unlocks or
 * is released.
 * A blocking request is tried again, backing off to LK_NAP_MAX, until it
 * is granted or the caller is interrupted (a signal: EINTR): a waiting
 * lock holds one daemon thread.  At most half the worker threads wait at
 * once (none with -s); a request past that is ENOLCK at once, so that the
 * other half goes on serving, the holder's unlock and the kernel's
 * INTERRUPT among it (with every thread waiting, the mount hung for good:
 * found by the review of 2026-12-06).  Deadlocks between owners are not
 * detected (OFD locks have no EDEADLK). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/stripe.h"
#include "drxfs_i.h"
#include "drxfs_striped_i.h"

/* A striped file's fcntl ranges start this far into its metafile: past
 * the header libcore's readers and writers lock (512 bytes). */
#define LK_BASE ((off_t)4096)
/* ... and end before libcore's pending marks (stripe_pending.c, 2^62). */
#define LK_LIMIT (((off_t)1 << 62) - LK_BASE)
/* Lock descriptors the daemon keeps at most (each an open file). */
#define LK_MAX 4096
#define LK_NAP_MAX_NS 20000000L

/* What locks land on: a store file (by device and inode) or a virtual
 * file's memfd (by mount path). */
struct lk_target {
    struct lk_target *next;
    dev_t dev;
    ino_t ino;
    char *vpath; /* virtual: the mount path; NULL for a store file */
    int memfd;   /* virtual: the file locks are taken on */
    off_t base, limit;
    unsigned refs;
};

/* One owner's description of a target. */
struct lk_owner {
    struct lk_owner *next;
    struct lk_target *t;
    uint64_t owner; /* fcntl: the kernel's lock owner; flock: the handle */
    bool flock;
    const struct drxfs_fh *fh; /* the open file it last locked through */
    int fd;
};

static struct {
    pthread_mutex_t mutex;
    struct lk_target *targets;
    struct lk_owner *owners;
    unsigned nowners;
    unsigned waiters, waiters_max; /* blocked requests (mutex) and their cap */
} lk = {.mutex = PTHREAD_MUTEX_INITIALIZER};

void drxfs_locks_threads(unsigned max_threads, bool single)
{
    pthread_mutex_lock(&lk.mutex);
    lk.waiters_max = single ? 0 : max_threads / 2;
    pthread_mutex_unlock(&lk.mutex);
}

bool drxfs_wait_begin(const char *what)
{
    pthread_mutex_lock(&lk.mutex);
    bool ok = lk.waiters < lk.waiters_max;
    lk.waiters += ok;
    unsigned n = lk.waiters;
    pthread_mutex_unlock(&lk.mutex);
    if (!ok)
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s refused: %u requests wait already (for locks or lease breaks), "
                            "half the daemon's threads (-o max_threads)",
                            what, n);
    return ok;
}

void drxfs_wait_end(void)
{
    pthread_mutex_lock(&lk.mutex);
    lk.waiters--;
    pthread_mutex_unlock(&lk.mutex);
}

/* A blocked request begins to wait (true), or may not: the cap. */
static bool wait_begin(void)
{
    return drxfs_wait_begin("a blocking lock (ENOLCK)");
}

static void wait_end(void)
{
    drxfs_wait_end();
}

/* The descriptor locks are reopened from, and how ranges move: the
 * handle's store file, a striped file's metafile (a copy of the handle's,
 * which a persist may replace meanwhile: store_fd_done closes it), or -1
 * (virtual: kept by the mount path the handle opened, fh->lkpath). */
static int store_fd(const struct drxfs_fh *fh, off_t *base, off_t *limit)
{
    *base = 0;
    *limit = INT64_MAX;
    if (fh->kind == DRXFS_PLAIN)
        return fh->fd;
    if (fh->kind == DRXFS_STRIPED && fh->sf) {
        *base = LK_BASE;
        *limit = LK_LIMIT;
        int fd = drx_stripe_meta_dup(fh->sf->f);
        return fd >= 0 ? fd : -ENOLCK;
    }
    return -1;
}

/* Done with store_fd's descriptor sfd of fh. */
static void store_fd_done(const struct drxfs_fh *fh, int sfd)
{
    if (sfd >= 0 && fh->kind == DRXFS_STRIPED)
        close(sfd);
}

/* The key of fh's target when it is virtual: its mount path, or (a
 * handle opened without one) the handle itself, whose locks then exclude
 * only each other. */
static const char *vkey(const struct drxfs_fh *fh, char *buf, size_t len)
{
    if (fh->lkpath)
        return fh->lkpath;
    snprintf(buf, len, "\x01%p", (const void *)fh);
    return buf;
}

static void target_put(struct lk_target *t)
{
    if (--t->refs)
        return;
    for (struct lk_target **p = &lk.targets; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    if (t->memfd >= 0)
        close(t->memfd);
    free(t->vpath);
    free(t);
}

/* The target of the file fh is open on, with a reference, made when
 * create (lk.mutex held): 0 with *out (NULL when there is none and create
 * is false) and *sfd (store_fd's: store_fd_done after), or -errno. */
static int target_get(const struct drxfs_fh *fh, bool create, int *sfd, struct lk_target **out)
{
    off_t base, limit;
    struct stat st = {0};
    char buf[32];
    const char *path = vkey(fh, buf, sizeof buf);

    *out = NULL;
    if ((*sfd = store_fd(fh, &base, &limit)) < -1)
        return *sfd;
    if (*sfd >= 0 && fstat(*sfd, &st) < 0) {
        int rc = -errno;
        store_fd_done(fh, *sfd);
        *sfd = -1;
        return rc;
    }
    for (struct lk_target *t = lk.targets; t; t = t->next)
        if (*sfd >= 0 ? !t->vpath && t->dev == st.st_dev && t->ino == st.st_ino
                      : t->vpath && strcmp(t->vpath, path) == 0) {
            t->refs++;
            *out = t;
            return 0;
        }
    if (!create)
        return 0;
    struct lk_target *t = calloc(1, sizeof *t);
    if (!t) {
        store_fd_done(fh, *sfd);
        *sfd = -1;
        return -ENOMEM;
    }
    t->memfd = -1;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->base = base;
    t->limit = limit;
    if (*sfd < 0 && (!(t->vpath = strdup(path)) ||
                    (t->memfd = memfd_create("drxfs-lock", MFD_CLOEXEC)) < 0)) {
        int rc = t->vpath ? -errno : -ENOMEM;
        free(t->vpath);
        free(t);
        return rc;
    }
    t->refs = 1;
    t->next = lk.targets;
    lk.targets = t;
    *out = t;
    return 0;
}

/* A description of its own of the file at fd: read-write when the daemon
 * may (an F_WRLCK needs it; the kernel checked the caller's open), else
 * read-only. */
static int reopen(int fd)
{
    char self[32];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int n = open(self, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (n < 0 && (errno == EACCES || errno == EPERM || errno == EROFS || errno == ETXTBSY))
        n = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    return n < 0 ? -errno : n;
}

static struct lk_owner *owner_find(const struct lk_target *t, uint64_t owner, bool flk)
{
    for (struct lk_owner *o = lk.owners; o; o = o->next)
        if (o->t == t && o->owner == owner && o->flock == flk)
            return o;
    return NULL;
}

/* The owner's description of fh's target, made when create (lk.mutex
 * held): NULL with *rc 0 when there is none and create is false. */
static struct lk_owner *owner_get(const struct drxfs_fh *fh, uint64_t owner, bool flk, bool create,
                                  int *rc)
{
    struct lk_target *t;
    int sfd;

    if ((*rc = target_get(fh, true, &sfd, &t)) < 0)
        return NULL;
    struct lk_owner *o = owner_find(t, owner, flk);
    if (o || !create) {
        target_put(t);
        store_fd_done(fh, sfd);
        return o;
    }
    if (lk.nowners >= LK_MAX) {
        drx_log_ratelimited(DRX_LOG_WARNING, "a lock refused: the daemon holds %u lock "
                            "descriptors already (ENOLCK)", lk.nowners);
        *rc = -ENOLCK;
    } else if (!(o = calloc(1, sizeof *o))) {
        *rc = -ENOMEM;
    } else if ((o->fd = reopen(sfd >= 0 ? sfd : t->memfd)) < 0) {
        *rc = o->fd;
        free(o);
        o = NULL;
    }
    store_fd_done(fh, sfd);
    if (!o) {
        target_put(t);
        return NULL;
    }
    o->t = t; /* keeps the reference */
    o->owner = owner;
    o->flock = flk;
    o->next = lk.owners;
    lk.owners = o;
    lk.nowners++;
    return o;
}

static void owner_drop(struct lk_owner *o)
{
    for (struct lk_owner **p = &lk.owners; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            break;
        }
    close(o->fd);
    target_put(o->t);
    lk.nowners--;
    free(o);
}

/* Sleeps before the next try of a blocking request: 0, or -EINTR when
 * the caller was interrupted. */
static int nap(long *ns)
{
    if (fuse_interrupted())
        return -EINTR;
    struct timespec ts = {0, *ns};
    nanosleep(&ts, NULL);
    *ns = *ns * 2 > LK_NAP_MAX_NS ? LK_NAP_MAX_NS : *ns * 2;
    return 0;
}

/* The caller's range moved onto the target's: -EINVAL past its limit.
 * (OFD requests carry no pid.) */
static int map_range(const struct lk_target *t, struct flock *fl)
{
    fl->l_pid = 0;
    if (fl->l_whence != SEEK_SET || fl->l_start < 0 || fl->l_len < 0 || fl->l_start >= t->limit ||
        (fl->l_len && fl->l_len > t->limit - fl->l_start))
        return -EINVAL;
    if (t->base) {
        fl->l_len = fl->l_len ? fl->l_len : t->limit - fl->l_start;
        fl->l_start += t->base;
    }
    return 0;
}

static void unmap_range(const struct lk_target *t, struct flock *fl)
{
    if (!t->base || fl->l_type == F_UNLCK)
        return;
    fl->l_start -= t->base;
    if (fl->l_start < 0)
        fl->l_start = 0;
    if (fl->l_len == 0 || fl->l_start + fl->l_len >= t->limit)
        fl->l_len = 0;
}

/* F_GETLK: the first lock of another owner that would conflict, asked
 * through the owner's description (its own locks conflict with nothing),
 * or one made for the question when it holds none. */
static int getlk(struct drxfs_fh *fh, uint64_t owner, struct flock *fl)
{
    struct lk_target *t;
    int sfd, rc, fd;

    pthread_mutex_lock(&lk.mutex);
    if ((rc = target_get(fh, true, &sfd, &t)) < 0) {
        pthread_mutex_unlock(&lk.mutex);
        return rc;
    }
    struct lk_owner *o = owner_find(t, owner, false);
    struct flock m = *fl;
    if ((fd = o ? o->fd : reopen(sfd >= 0 ? sfd : t->memfd)) < 0)
        rc = fd;
    else if ((rc = map_range(t, &m)) == 0 && fcntl(fd, F_OFD_GETLK, &m) < 0)
        rc = -errno;
    if (rc == 0) {
        unmap_range(t, &m);
        *fl = m; /* an OFD lock's holder has no pid: -1 */
    }
    if (!o && fd >= 0)
        close(fd);
    store_fd_done(fh, sfd);
    target_put(t);
    pthread_mutex_unlock(&lk.mutex);
    return rc;
}

int drxfs_op_lock(const char *path, struct fuse_file_info *fi, int cmd, struct flock *fl)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path; /* none with a handle (nullpath_ok) */
    uint64_t owner = fi->lock_owner;
    int rc;

    if (cmd == F_GETLK)
        return getlk(fh, owner, fl);
    if (cmd != F_SETLK && cmd != F_SETLKW)
        return -EINVAL;
    bool whole = fl->l_start == 0 && fl->l_len == 0, waiting = false;
    long ns = 1000000;
    for (;;) {
        pthread_mutex_lock(&lk.mutex);
        struct lk_owner *o = owner_get(fh, owner, false, fl->l_type != F_UNLCK, &rc);
        if (!o) {
            pthread_mutex_unlock(&lk.mutex);
            return rc; /* an unlock of nothing held: 0 */
        }
        struct flock m = *fl;
        o->fh = fh;
        if ((rc = map_range(o->t, &m)) == 0 && fcntl(o->fd, F_OFD_SETLK, &m) < 0)
            rc = -errno;
        /* everything let go (a close): the description goes */
        if (fl->l_type == F_UNLCK && whole && rc == 0)
            owner_drop(o);
        pthread_mutex_unlock(&lk.mutex);
        if (rc == -EAGAIN && cmd == F_SETLKW && !waiting && !(waiting = wait_begin()))
            return -ENOLCK;
        if (rc != -EAGAIN || cmd != F_SETLKW || (rc = nap(&ns)) < 0) {
            if (waiting)
                wait_end();
            return rc;
        }
    }
}

int drxfs_op_flock(const char *path, struct fuse_file_info *fi, int op)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path;
    uint64_t owner = (uint64_t)(uintptr_t)fh;
    bool wait = !(op & LOCK_NB), un = (op & LOCK_UN) != 0, waiting = false;
    long ns = 1000000;
    int rc;

    for (;;) {
        pthread_mutex_lock(&lk.mutex);
        struct lk_owner *o = owner_get(fh, owner, true, !un, &rc);
        if (!o) {
            pthread_mutex_unlock(&lk.mutex);
            return rc;
        }
        o->fh = fh;
        rc = flock(o->fd, (op & ~LOCK_NB) | LOCK_NB) < 0 ? -errno : 0;
        if (un && rc == 0)
            owner_drop(o);
        pthread_mutex_unlock(&lk.mutex);
        if (rc == -EWOULDBLOCK && wait && !waiting && !(waiting = wait_begin()))
            return -ENOLCK;
        if (rc != -EWOULDBLOCK || !wait || (rc = nap(&ns)) < 0) {
            if (waiting)
                wait_end();
            return rc;
        }
    }
}

bool drxfs_locks_held(const struct drxfs_fh *fh)
{
    struct lk_target *t = NULL;
    int sfd;

    pthread_mutex_lock(&lk.mutex);
    /* a target outlives no owner (but under the mutex): one found is held;
     * nothing to look at while nobody holds a lock */
    if (lk.owners && target_get(fh, false, &sfd, &t) == 0) {
        store_fd_done(fh, sfd);
        if (t)
            target_put(t);
    }
    pthread_mutex_unlock(&lk.mutex);
    return t != NULL;
}

void drxfs_locks_release(const struct drxfs_fh *fh)
{
    pthread_mutex_lock(&lk.mutex);
    for (struct lk_owner *o = lk.owners, *next; o; o = next) {
        next = o->next;
        if (o->fh == fh)
            owner_drop(o);
    }
    pthread_mutex_unlock(&lk.mutex);
}
