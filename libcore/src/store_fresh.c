/* Inodes made ahead for new metafiles: a thread keeps up to FRESH_SLOTS
 * empty files in `.drx/fresh/` (mode 0700, this process's), and the
 * creation of a striped file renames one to its metafile's temporary name
 * instead of allocating an inode while the caller waits (made in
 * `.drx/fresh/new/`, then moved in).  Why: ext4
 * without a journal passes over every inode freed in the last minutes when
 * it allocates one (doc/benchmarks.md, "cp -r and git clone, measured"); made ahead,
 * that cost leaves the creation's path.  The subfiles have their own pool
 * (stripe_pool.c).
 *
 * A fresh file was never anything else: it holds no bytes and no
 * descriptor of another life.  Only empty single-link regular files of
 * this process's user are taken (a planted entry is removed), and only
 * into a directory that gives new files nothing an inode made elsewhere
 * would lack: not set-group-ID, no default ACL.  Its times are set to now
 * (its birth time stays the earlier one).  A kill leaves empty files in
 * `.drx/fresh/` (harmless; used later) or a metafile temporary, as a
 * creation always could. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/store.h"
#include "store_i.h"

#define FRESH_SLOTS 1024
#define WORDS (FRESH_SLOTS / 64)

struct drx_store_fresh {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    bool stop;
    int fd;               /* .drx/fresh */
    int newfd;            /* .drx/fresh/new: where the thread makes them */
    uint64_t full[WORDS]; /* slots holding a file (as far as this process knows) */
    unsigned nfull, cursor;
};

static bool bit(const struct drx_store_fresh *f, unsigned i)
{
    return f->full[i / 64] >> (i % 64) & 1;
}

static void set_bit(struct drx_store_fresh *f, unsigned i, bool on)
{
    uint64_t m = (uint64_t)1 << (i % 64);
    if (on != bit(f, i)) {
        f->full[i / 64] ^= m;
        f->nfull += on ? 1 : -1;
    }
}

bool drx_store_inodes_plenty(int fd)
{
    struct statvfs v;

    if (fstatvfs(fd, &v) < 0 || v.f_files == 0)
        return true;
    return v.f_favail >= 16384 && v.f_favail >= v.f_files / 10;
}

/* Removes every file held (f->lock held): the filesystem runs short of
 * inodes, its user's files come first. */
static void give_back(struct drx_store_fresh *f)
{
    for (unsigned i = 0; i < FRESH_SLOTS && f->nfull; i++) {
        if (!bit(f, i))
            continue;
        char sn[16];
        snprintf(sn, sizeof sn, "%04u", i);
        unlinkat(f->fd, sn, 0);
        set_bit(f, i, false);
    }
}

/* Waits up to ms for a signal on f->cond (f->lock held). */
static void wait_ms(struct drx_store_fresh *f, long ms)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&f->cond, &f->lock, &t);
}

/* Makes files in empty slots until every slot is full or stop, while the
 * filesystem has inodes to spare; gives them back when it has not. */
static void *filler(void *arg)
{
    struct drx_store_fresh *f = arg;

    /* Not at a lower priority: its move into .drx/fresh holds the
     * filesystem's rename mutex (lock_rename, for a rename between
     * directories), and a thread that only runs on idle time, preempted
     * there, would stall every such rename on the filesystem. */

    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        if (!drx_store_inodes_plenty(f->fd)) {
            give_back(f);
            wait_ms(f, 2000);
            continue;
        }
        if (f->nfull == FRESH_SLOTS) {
            wait_ms(f, 2000); /* and look at the free inodes again */
            continue;
        }
        unsigned i = 0;
        while (bit(f, i))
            i++;
        pthread_mutex_unlock(&f->lock);
        char sn[16];
        snprintf(sn, sizeof sn, "%04u", i);
        /* Made in new/, whose lock the slow allocation holds, then moved:
         * a creation renaming a file out of .drx/fresh never waits for it. */
        int fd = openat(f->newfd, sn, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (fd >= 0 || e == EEXIST) {
            fd = renameat2(f->newfd, sn, f->fd, sn, RENAME_NOREPLACE);
            e = fd < 0 ? errno : 0;
        }
        pthread_mutex_lock(&f->lock);
        if (fd >= 0 || e == EEXIST) {
            set_bit(f, i, true);
        } else if (!f->stop) {
            /* full disk, quota: try again only when asked.  Not once
             * stopped: the lock was let go above, and a stop signalled
             * meanwhile is not signalled again (the daemon hung at exit,
             * its store removed under it). */
            drx_log(DRX_LOG_DEBUG, "." DRX_STORE_DIR "/fresh: %s", strerror(e));
            pthread_cond_wait(&f->cond, &f->lock);
        }
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* Makes (when missing) and opens directory `name` in dfd, mode 0700 and
 * the owner of `.drx` (a daemon running as root leaves the store's owner
 * able to remove it): its descriptor, -EPERM when it is not that owner's
 * alone or this process is neither that owner nor root, or -errno. */
static int own_dir(int dfd, const char *name, const struct stat *drx)
{
    struct stat st;

    if (mkdirat(dfd, name, 0700) == 0 && geteuid() == 0)
        (void)!fchownat(dfd, name, drx->st_uid, drx->st_gid, AT_SYMLINK_NOFOLLOW);
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || st.st_uid != drx->st_uid || (st.st_mode & 077) != 0 ||
        (st.st_uid != geteuid() && geteuid() != 0)) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

int drx_store_fresh_start(struct drx_store *s)
{
    struct drx_store_fresh *f;
    struct stat drx;
    int fd;

    if (s->fresh)
        return 0;
    /* .drx opened first, no symlink followed: fresh is made in it */
    int drxfd = openat(s->root_fd, DRX_STORE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (drxfd < 0)
        return -errno;
    fd = fstat(drxfd, &drx) < 0 ? -errno : own_dir(drxfd, "fresh", &drx);
    close(drxfd);
    if (fd < 0)
        return fd;
    int newfd = own_dir(fd, "new", &drx);
    f = newfd >= 0 ? calloc(1, sizeof *f) : NULL;
    if (!f) {
        if (newfd >= 0)
            close(newfd);
        close(fd);
        return -ENOMEM;
    }
    f->fd = fd;
    f->newfd = newfd;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    /* what a run before left is used: slots found full as the filler goes */
    if (pthread_create(&f->thread, NULL, filler, f) != 0) {
        close(newfd);
        close(fd);
        free(f);
        return -EAGAIN;
    }
    s->fresh = f;
    return 0;
}

void drx_store_fresh_stop(struct drx_store *s)
{
    struct drx_store_fresh *f = s->fresh;

    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = true;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    close(f->newfd);
    close(f->fd);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
    s->fresh = NULL;
}

/* True when a file made in directory dfd would get nothing that a fresh
 * inode lacks: the directory is not set-group-ID and has no default ACL. */
static bool dir_plain(int dfd)
{
    struct stat st;

    if (fstat(dfd, &st) < 0 || (st.st_mode & S_ISGID))
        return false;
    return fgetxattr(dfd, "system.posix_acl_default", NULL, 0) < 0 && errno == ENODATA;
}

/* A full slot, taken out of the map; -1 when none. */
static int pick(struct drx_store_fresh *f)
{
    int slot = -1;

    pthread_mutex_lock(&f->lock);
    for (unsigned k = 0; f->nfull && k < FRESH_SLOTS; k++) {
        unsigned i = (f->cursor + k) % FRESH_SLOTS;
        if (bit(f, i)) {
            set_bit(f, i, false);
            f->cursor = i + 1;
            slot = (int)i;
            break;
        }
    }
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
    return slot;
}

bool drx_store_moved_ours(int fd, int dfd, const char *name)
{
    struct stat a, b;

    if (fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_ino == b.st_ino && a.st_dev == b.st_dev)
        return true;
    unlinkat(dfd, name, 0);
    return false;
}

/* Slot sn as `name` in dfd: the descriptor, -EEXIST, or -EAGAIN (next). */
static int take_slot(struct drx_store_fresh *f, const char *sn, int dfd, const char *name)
{
    struct stat st;
    int fd = openat(f->fd, sn, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0)
        return -EAGAIN; /* taken by another process */
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size != 0 ||
        st.st_uid != geteuid()) {
        close(fd);
        unlinkat(f->fd, sn, 0); /* not one of ours */
        return -EAGAIN;
    }
    if (renameat2(f->fd, sn, dfd, name, RENAME_NOREPLACE) < 0) {
        int e = errno;
        close(fd);
        return e == EEXIST ? -EEXIST : e == ENOENT ? -EAGAIN : -ENOENT;
    }
    if (!drx_store_moved_ours(fd, dfd, name)) {
        close(fd);
        return -EAGAIN;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)!futimens(fd, NULL);
    return fd;
}

int drx_store_fresh_take(struct drx_store *s, int dfd, const char *name)
{
    struct drx_store_fresh *f = s ? s->fresh : NULL;

    if (!f || !dir_plain(dfd))
        return -ENOENT;
    for (int tries = 0; tries < 4; tries++) {
        int slot = pick(f);
        if (slot < 0)
            return -ENOENT;
        char sn[16];
        snprintf(sn, sizeof sn, "%04d", slot);
        int fd = take_slot(f, sn, dfd, name);
        if (fd != -EAGAIN)
            return fd; /* -ENOENT (another filesystem...): create */
    }
    return -ENOENT;
}
