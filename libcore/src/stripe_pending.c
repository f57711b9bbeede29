/* Sizes another process has not recorded yet.
 *
 * A striped file's size is its metafile's, and bytes of its subfiles past
 * it are a crashed writer's leftovers, which a growing truncate cuts (they
 * would show through the new hole).  But drxfs's batched commit records a
 * closed file's size up to commit_interval later (so that small files
 * share one sync), and another process trusting the metafile meanwhile (a
 * second mount of the store, another node's on a shared file system)
 * took the file for shorter than it is: its truncate cut the writer's
 * bytes, and its appends landed over them.
 *
 * So a file handed to a later commit with its size ahead of the metafile
 * holds an OFD write lock on one byte of the metafile far past the text
 * (PENDING_OFF; the text's own locks cover its first bytes only), let go
 * once the size is recorded: at most commit_interval.  A process about to
 * trust the recorded size (an open, a lookup or stat by drxfs, a
 * truncate) first waits for no such lock to be held, then reads it.  A
 * write lock, asked about as a read lock: only a process that may write
 * the metafile can make others wait.  A read lock there (anyone who may
 * read the file can take one) made every open and stat of the file by
 * others wait 10 s and fail.  Each writer takes its own byte of
 * PENDING_SLOTS (two mounts closing one file both hold one).  A writer
 * that may not write the metafile (a 0444 file, a daemon without
 * CAP_DAC_OVERRIDE, root on NFS with root_squash) takes a read lock on
 * PENDING_RD instead, asked about as a write lock, and only on a file
 * without write bits (mark_held): there a reader's lock makes others
 * wait, once each (stuck_has).  OFD
 * locks are per open file, so a process's own lock would stop it too: the
 * metafiles this process holds one on are remembered, and its own
 * handles are trusted (drxfs keeps one handle per file).  On a network
 * file system the locks go to the server, so two nodes wait for each
 * other the same way (two drxfs of one store stand in for them in the
 * tests).  drxfs sets the mark at a close's FLUSH, which close(2) waits
 * for (the RELEASE comes after close(2) has returned: a process acting
 * right after the close found neither mark nor size), and the commit
 * records the size within commit_interval even if the file is still open
 * (a child closed its copy of the descriptor).  A file being written with
 * no close since holds none: two writers of one file in two processes
 * coordinate themselves, as anywhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"
#include "stripe_i.h"

#define PENDING_OFF ((off_t)1 << 62)
/* Write marks: one byte per writer holding one at once (two mounts, two
 * handles of one process for hard links). */
#define PENDING_SLOTS 16
/* The read mark of a writer that may not write the metafile: asked about
 * as a write lock, so a reader's lock there is taken for one (waited for
 * once: stuck_has). */
#define PENDING_RD (PENDING_OFF + 64)

/* The metafiles of this process's pending locks: drxfs's batched commit
 * waits for 512 files at most, each counted once. */
#define OWN_MAX 1024
static struct {
    dev_t dev;
    ino_t ino;
    unsigned n;
} own[OWN_MAX];
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;

static bool own_add(dev_t dev, ino_t ino)
{
    int free_at = -1;
    bool ok = false;

    pthread_mutex_lock(&own_lock);
    for (int i = 0; i < OWN_MAX; i++) {
        if (own[i].n && own[i].dev == dev && own[i].ino == ino) {
            own[i].n++;
            ok = true;
            break;
        }
        if (!own[i].n && free_at < 0)
            free_at = i;
    }
    if (!ok && free_at >= 0) {
        own[free_at].dev = dev;
        own[free_at].ino = ino;
        own[free_at].n = 1;
        ok = true;
    }
    pthread_mutex_unlock(&own_lock);
    return ok;
}

static void own_remove(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&own_lock);
    for (int i = 0; i < OWN_MAX; i++)
        if (own[i].n && own[i].dev == dev && own[i].ino == ino) {
            own[i].n--;
            break;
        }
    pthread_mutex_unlock(&own_lock);
}

static bool own_has(dev_t dev, ino_t ino)
{
    bool has = false;

    pthread_mutex_lock(&own_lock);
    for (int i = 0; i < OWN_MAX && !has; i++)
        has = own[i].n && own[i].dev == dev && own[i].ino == ino;
    pthread_mutex_unlock(&own_lock);
    return has;
}

/* Takes a mark on metafile descriptor fd: a write lock on the first free
 * of PENDING_SLOTS bytes (each writer its own: two mounts closing one
 * file both say so), else, on a descriptor that may only read, a read
 * lock on PENDING_RD.  0 or -errno. */
static int mark_set(int fd, bool writable)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};

    if (!writable) {
        fl.l_type = F_RDLCK;
        fl.l_start = PENDING_RD;
        return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
    }
    for (int k = 0; k < PENDING_SLOTS; k++) {
        fl.l_start = PENDING_OFF + k;
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
            return 0;
        if (errno != EAGAIN && errno != EACCES)
            return -errno;
    }
    return -EAGAIN;
}

void drx_stripe_pend_take(struct drx_stripe *f)
{
    char mp[PATH_MAX];
    struct stat st;
    int fd;

    if (f->pend_fd >= 0)
        return;
    if (f->meta_fd >= 0)
        snprintf(mp, sizeof mp, "/proc/self/fd/%d", f->meta_fd);
    else if (drx_stripe_meta_path(f->path, mp, sizeof mp) < 0)
        mp[0] = '\0';
    int nofollow = f->meta_fd >= 0 ? 0 : O_NOFOLLOW;
    fd = mp[0] ? open(mp, O_RDWR | nofollow | O_NONBLOCK | O_CLOEXEC) : -1;
    /* a file its writer may not write (0444, a daemon without
     * CAP_DAC_OVERRIDE, root on NFS with root_squash): the read mark */
    bool writable = fd >= 0;
    if (fd < 0 && mp[0] && (errno == EACCES || errno == EPERM || errno == EROFS))
        fd = open(mp, O_RDONLY | nofollow | O_NONBLOCK | O_CLOEXEC);
    const char *why = NULL;
    int rc;
    if (fd < 0)
        why = strerror(errno);
    else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != f->meta_dev ||
             st.st_ino != f->meta_ino)
        why = "the metafile was replaced";
    else if (!own_add(st.st_dev, st.st_ino))
        why = "too many files waiting in this process";
    else if ((rc = mark_set(fd, writable)) < 0) {
        why = rc == -EAGAIN ? "every slot of the mark is taken" : strerror(-rc);
        own_remove(st.st_dev, st.st_ino);
    }
    if (why) {
        /* others then see the recorded size until the commit, as before */
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s" DRX_STRIPE_SUFFIX ": cannot tell other processes that its size "
                            "is not recorded yet: %s",
                            f->path, why);
        if (fd >= 0)
            close(fd);
        return;
    }
    f->pend_fd = fd;
    f->pend_dev = st.st_dev;
    f->pend_ino = st.st_ino;
}

void drx_stripe_pend_drop(struct drx_stripe *f)
{
    if (f->pend_fd < 0)
        return;
    own_remove(f->pend_dev, f->pend_ino);
    close(f->pend_fd); /* the lock goes with it */
    f->pend_fd = -1;
}

/* Marks this process waited out in full and still finds held: a mark kept
 * past the wait is no commit's (a commit records within its interval) but
 * a holder's who keeps it, as the file's owner can: each lookup of the
 * file through a mount waited 10 s, every `ls -l` 10 s a file (the
 * thirteenth review).  Such a mark is waited for once; until it is seen
 * gone, a later wait answers at once as timed out, for STUCK_SECONDS.
 * A small table: a file pushed out of it is waited for once more. */
#define STUCK_MAX 64
/* Seconds an entry holds: then such a mark is waited for once more (a
 * holder may have let go and a commit's mark come in the meantime). */
#define STUCK_SECONDS 30
static struct {
    dev_t dev;
    ino_t ino;
    time_t at;
} stuck[STUCK_MAX];
static unsigned stuck_next;
static pthread_mutex_t stuck_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether (dev, ino) is in the table; add: put it there; drop: take it out. */
static bool stuck_has(dev_t dev, ino_t ino, int op)
{
    bool has = false;
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&stuck_lock);
    for (unsigned i = 0; i < STUCK_MAX; i++)
        if (stuck[i].ino == ino && stuck[i].dev == dev && ino) {
            has = now.tv_sec - stuck[i].at < STUCK_SECONDS;
            if (op < 0 || !has)
                stuck[i].ino = 0;
            break;
        }
    if (!has && op > 0) {
        stuck[stuck_next].dev = dev;
        stuck[stuck_next].ino = ino;
        stuck[stuck_next].at = now.tv_sec;
        stuck_next = (stuck_next + 1) % STUCK_MAX;
    }
    pthread_mutex_unlock(&stuck_lock);
    return has;
}

/* Whether any writer's mark is on metafile descriptor fd (mode: the
 * metafile's).  The read mark counts only on a file nobody may write by
 * its mode (0444), the only kind whose writer sets one: any reader can
 * take that lock, and on every other file it made each wait 10 s. */
static bool mark_held(int fd, mode_t mode)
{
    struct flock w = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = PENDING_OFF,
                      .l_len = PENDING_SLOTS};
    struct flock r = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = PENDING_RD, .l_len = 1};

    if (fcntl(fd, F_OFD_GETLK, &w) == 0 && w.l_type != F_UNLCK)
        return true;
    return !(mode & 0222) && fcntl(fd, F_OFD_GETLK, &r) == 0 && r.l_type != F_UNLCK;
}

int drx_stripe_pending_wait(const char *mp, unsigned ms)
{
    bool held = drx_stripe_path_is_held(mp);
    int fd = open(mp, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (held ? 0 : O_NOFOLLOW));
    struct stat st;
    struct timespec t0, now;
    int rc = 0;

    if (fd < 0)
        return 0; /* the caller's load says why */
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || own_has(st.st_dev, st.st_ino)) {
        close(fd);
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (!mark_held(fd, st.st_mode)) {
            (void)stuck_has(st.st_dev, st.st_ino, -1);
            break;
        }
        if (stuck_has(st.st_dev, st.st_ino, 0)) {
            rc = -EAGAIN;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= (long)ms) {
            if (ms)
                (void)stuck_has(st.st_dev, st.st_ino, 1);
            rc = -EAGAIN;
            break;
        }
        const struct timespec tick = {0, 10 * 1000000};
        nanosleep(&tick, NULL);
    }
    close(fd);
    return rc;
}

unsigned drx_stripe_pending_wait_ms(void)
{
    static unsigned ms; /* 0: not read yet */
    unsigned got = __atomic_load_n(&ms, __ATOMIC_RELAXED);

    if (got)
        return got;
    const char *env = getenv("DRX_COMMIT_WAIT_MS");
    char *end;
    unsigned long v = env && *env ? strtoul(env, &end, 10) : 0;
    got = env && *env && !*end && v > 0 && v <= 3600000 ? (unsigned)v : 10000;
    __atomic_store_n(&ms, got, __ATOMIC_RELAXED);
    return got;
}

int drx_stripe_wait_recorded(const char *path)
{
    char mp[PATH_MAX];

    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return 0;
    return drx_stripe_pending_wait(mp, drx_stripe_pending_wait_ms());
}

bool drx_stripe_size_pending(const char *path)
{
    char mp[PATH_MAX];

    return drx_stripe_meta_path(path, mp, sizeof mp) == 0 && drx_stripe_pending_wait(mp, 0) < 0;
}
