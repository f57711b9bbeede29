/* Striped files (NAFS): metafile NAME.nafs + round-robin subfiles.  Here:
 * handles, their size and its persistence, reads and writes, and files
 * created whole (also as a temporary).  Placement and layouts are in
 * stripe_layout.c, the metafile in stripe_meta.c, subfiles and whole files
 * on disk in stripe_names.c. */
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
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/io.h"
#include "drx/log.h"
#include "replace_i.h"
#include "stripe_i.h"

/* ---- names and paths --------------------------------------------------------- */

bool drx_stripe_subfile_name_valid(const char *name)
{
    size_t n = strlen(name);

    if (n < 1 || n > DRX_STRIPE_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return strstr(name, "..") == NULL;
}

bool drx_stripe_exists(const char *path)
{
    char mp[PATH_MAX];
    struct stat st;

    return drx_stripe_meta_path(path, mp, sizeof mp) == 0 && stat(mp, &st) == 0 &&
           S_ISREG(st.st_mode);
}

int drx_stripe_subfile_path(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            char *buf, size_t len)
{
    int n;

    if (i >= m->layout.count || m->sub[i].dir >= s->cfg.stripe.ndirs)
        return -EINVAL;
    n = snprintf(buf, len, "%s/%s", s->cfg.stripe.dirs[m->sub[i].dir], m->sub[i].name);
    return (n < 0 || (size_t)n >= len) ? -ERANGE : n;
}
int drx_stripe_meta_path_of(struct drx_stripe *f, char *buf, size_t len)
{
    int rc;

    pthread_mutex_lock(&f->lock); /* a rename replaces f->path */
    rc = drx_stripe_meta_path(f->path, buf, len);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

bool drx_stripe_hold_pending(struct drx_stripe *f)
{
    pthread_mutex_lock(&f->lock);
    bool ahead = f->size > f->persisted;
    if (ahead)
        drx_stripe_pend_take(f);
    pthread_mutex_unlock(&f->lock);
    return ahead;
}

/* ---- handles ------------------------------------------------------------------------ */

static struct drx_stripe *handle_new(struct drx_store *s, const char *path, int mode)
{
    struct drx_stripe *f = calloc(1, sizeof *f);

    if (!f)
        return NULL;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return NULL;
    }
    f->s = s;
    f->mode = mode;
    for (int i = 0; i < DRX_MAX_STRIPE_DIRS; i++)
        f->fds[i] = -1;
    f->meta_fd = -1;
    f->pend_fd = -1;
    pthread_rwlock_init(&f->io, NULL);
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

static void handle_free(struct drx_stripe *f)
{
    drx_stripe_pend_drop(f);
    for (int i = 0; i < DRX_MAX_STRIPE_DIRS; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    if (f->meta_fd >= 0)
        close(f->meta_fd);
    pthread_rwlock_destroy(&f->io);
    pthread_mutex_destroy(&f->lock);
    free(f->path);
    free(f);
}

/* True when metafile m may describe f's subfiles by the rule a subfile is
 * opened by (drx_stripe_subfile_open): a metafile of another user than
 * this process's names only that user's subfiles.  f's subfiles' owner is
 * that of an open one, else of the metafile it holds.  A copy of root's
 * readable metafile that a user put at its name (root's file, in the
 * user's directory, renamed away) was taken by root's daemon handle as
 * its own: the user's open of it, his, got root's handle and wrote
 * root's bytes. */
static bool trusted_with(const struct drx_stripe *f, const struct drx_stripe_meta *m)
{
    struct stat st;
    int fd = drx_stripe_lock_fd(f);

    if (!m->owned || m->owner == geteuid())
        return true;
    if (fd >= 0 && fstat(fd, &st) == 0)
        return st.st_uid == m->owner;
    if (f->meta_fd >= 0 && fstat(f->meta_fd, &st) == 0)
        return st.st_uid == m->owner;
    return f->meta.owned && f->meta.owner == m->owner;
}

/* True when m (a metafile read from disk) describes the file f opened: the
 * same layout and subfiles, which are what a handle's descriptors serve,
 * and trusted with them (trusted_with).  Not the inode: a persist into an
 * old unpadded metafile replaces it (a new inode, the same file). */
bool drx_stripe_same_file(const struct drx_stripe *f, const struct drx_stripe_meta *m)
{
    return drx_stripe_same_layout(&f->meta, m) && trusted_with(f, m);
}

/* The metafile mp (identity *st) is this handle's: remembered, and held
 * open (O_PATH) for persists after its name is gone (hard links). */
static void set_identity(struct drx_stripe *f, const char *mp, const struct stat *st)
{
    struct stat h;

    f->meta_dev = st->st_dev;
    f->meta_ino = st->st_ino;
    f->meta_ctim = st->st_ctim;
    if (f->meta_fd >= 0 && fstat(f->meta_fd, &h) == 0 && h.st_ino == st->st_ino &&
        h.st_dev == st->st_dev)
        return;
    if (f->meta_fd >= 0)
        close(f->meta_fd);
    f->meta_fd = drx_stripe_path_is_held(mp) ? -1 : open(mp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (f->meta_fd >= 0 &&
        (fstat(f->meta_fd, &h) < 0 || h.st_ino != st->st_ino || h.st_dev != st->st_dev)) {
        close(f->meta_fd); /* replaced meanwhile: not ours */
        f->meta_fd = -1;
    }
}

/* "/proc/self/fd/N" of the held metafile into buf when it still has a
 * name somewhere (a hard link) though not the handle's. */
static bool held_path(const struct drx_stripe *f, char *buf, size_t len)
{
    struct stat h;

    if (f->meta_fd < 0 || fstat(f->meta_fd, &h) < 0 || h.st_nlink == 0)
        return false;
    snprintf(buf, len, "/proc/self/fd/%d", f->meta_fd);
    return true;
}

int drx_stripe_meta_dup(struct drx_stripe *f)
{
    int fd = -1;

    pthread_mutex_lock(&f->lock); /* a persist may replace it meanwhile */
    if (f->meta_fd >= 0)
        fd = fcntl(f->meta_fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&f->lock);
    return fd;
}

bool drx_stripe_meta_is(struct drx_stripe *f, const struct stat *st)
{
    pthread_mutex_lock(&f->lock);
    bool is = st->st_dev == f->meta_dev && st->st_ino == f->meta_ino;
    pthread_mutex_unlock(&f->lock);
    return is;
}

bool drx_stripe_holds(struct drx_stripe *f, const struct stat *st)
{
    struct stat h;

    pthread_mutex_lock(&f->lock);
    /* the identity remembered first (set_identity keeps it the held
     * file's): no system call for the many handles of other files */
    bool is = f->meta_dev == st->st_dev && f->meta_ino == st->st_ino && f->meta_fd >= 0 &&
              fstat(f->meta_fd, &h) == 0 && h.st_dev == st->st_dev && h.st_ino == st->st_ino;
    pthread_mutex_unlock(&f->lock);
    return is;
}

int drx_stripe_lock_fd(const struct drx_stripe *f)
{
    for (unsigned i = 0; i < f->meta.layout.count; i++)
        if (f->fds[i] >= 0)
            return f->fds[i];
    return -1;
}

bool drx_stripe_lock_take(const struct drx_stripe *f, int lfd)
{
    int rc = lfd < 0 ? -EBADF : drx_io_flock_for(lfd, LOCK_EX, DRX_STRIPE_LOCK_WAIT_MS);

    if (rc == -EWOULDBLOCK)
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s" DRX_STRIPE_SUFFIX
                            ": a subfile locked by another process for %u ms; "
                            "recording without the lock",
                            f->path, DRX_STRIPE_LOCK_WAIT_MS);
    return rc == 0;
}

/* The lock of f without waiting: 1 held, 0 none to take (no subfile open,
 * or flock refused for another reason than a holder), -EAGAIN held by
 * another process. */
static int lock_try(int lfd)
{
    if (lfd < 0)
        return 0;
    while (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EINTR)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : 0;
    }
    return 1;
}

/* fdatasync of every subfile, and once per handle fsync of the stripe
 * directories holding them (a new file's subfile names must be durable
 * before a metafile naming them with a size). */
static int sync_subfiles(struct drx_stripe *f)
{
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};
    int rc = __atomic_exchange_n(&f->wb_err, 0, __ATOMIC_ACQ_REL);

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        if (f->fds[i] < 0)
            continue;
        if (fdatasync(f->fds[i]) < 0 && rc == 0)
            rc = -errno;
        dirs[f->meta.sub[i].dir] = true;
    }
    if (rc == 0 && !f->dirs_synced) {
        for (size_t d = 0; d < f->s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
            if (dirs[d] && f->s->dir_fds[d] >= 0 && fsync(f->s->dir_fds[d]) < 0 && rc == 0)
                rc = -errno;
        f->dirs_synced = rc == 0;
    }
    return rc;
}


/* Gives back what a full disk does not let this handle record: the size
 * falls back to the recorded one and the subfiles are cut to it, so the
 * space is free at once rather than after an rm or fsck --repair (f->io
 * held exclusively, so every finished write is under the size; f->lock and
 * the persist flock held).  recorded: the size in the metafile. */
static void give_back_locked(struct drx_stripe *f, uint64_t recorded)
{
    int rc;

    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s" DRX_STRIPE_SUFFIX
                        ": no space to record size %llu; the file is cut back to the "
                        "recorded %llu",
                        f->path, (unsigned long long)f->size, (unsigned long long)recorded);
    f->size = f->persisted = recorded;
    f->truncated = false;
    rc = drx_stripe_cut_subfiles(f, recorded);
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": cutting back: %s", f->path,
                            strerror(-rc));
}

/* Only durability is missing: fsync the metafile as it is, and its
 * directory.  Opened O_NONBLOCK, as every other open of a metafile: the
 * name was read a moment ago, and a FIFO its owner renamed over it since
 * (behind a mount) held the thread in open(2), and the file's lock, until
 * someone opened the FIFO for writing; a lease its owner holds fails the
 * fsync (EWOULDBLOCK) rather than waiting lease-break-time. */
static int meta_fsync(const char *mp)
{
    bool held = drx_stripe_path_is_held(mp);
    int rc = 0, fd = open(mp, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (held ? 0 : O_NOFOLLOW));
    struct stat st;

    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return -EIO; /* not a metafile: its load refuses it next time */
    }
    if (fd < 0 || fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    if (rc == 0 && !held)
        rc = drx_io_fsync_parent(mp);
    return rc;
}

/* Records m's size in metafile mp (identity *st): in place, so that the
 * metafile keeps its inode, which is the striped file's (its other names,
 * user xattrs, atime, ctime; drx_stripe_meta_size_in_place says why that
 * is as safe as a replacement).  A metafile not in the padded form (an
 * older drx's), or one this writer may not write (it writes the subfiles
 * and the directory: it becomes the metafile's owner, replace.c's rule),
 * is replaced instead, unless it has other names.  *nst: the identity of
 * the metafile written. */
static int meta_replace_size(const char *mp, const struct stat *st, const struct drx_stripe_meta *m,
                             size_t ndirs, bool sync, struct stat *nst, uint64_t *larger)
{
    int rc = drx_stripe_meta_size_in_place_grow(mp, st, m, ndirs, NULL, sync, nst, larger);

    if (rc != -EOPNOTSUPP && rc != -EACCES && rc != -EPERM)
        return rc;
    if (st->st_nlink > 1) {
        drx_log_ratelimited(DRX_LOG_ERROR,
                            "%s: a metafile with other names not in drx's padded form: "
                            "size not recorded",
                            mp);
        return -EIO;
    }
    return drx_stripe_meta_write(mp, m, false, sync, st, 0, nst);
}

/* Records f->size, which differs from disk->size, in metafile mp (identity
 * *st).  give_back as for persist_locked. */
static int persist_new_size(struct drx_stripe *f, const char *mp,
                            const struct drx_stripe_meta *disk, const struct stat *st, bool sync,
                            bool give_back)
{
    struct drx_stripe_meta m = f->meta;
    struct stat nst;
    int rc;

    m.size = f->size;
    /* A size past the recorded one covers bytes this handle wrote (or a
     * truncate's cut): they reach the disk before the metafile does, or a
     * power loss could leave a size over bytes never written.  At most once
     * per DRX_STRIPE_PERSIST_BYTES of growth, and at close. */
    if (f->size > disk->size && f->wgen != f->synced_gen) {
        rc = sync_subfiles(f);
        if (rc < 0)
            return rc;
        f->synced_gen = f->wgen;
    }
    /* a growth never records less than another writer recorded meanwhile */
    uint64_t larger = 0;
    bool grow = !f->truncated && f->size > disk->size;
    rc = meta_replace_size(mp, st, &m, f->s->cfg.stripe.ndirs, sync, &nst, grow ? &larger : NULL);
    if (rc == 1) {
        f->size = larger;
        rc = 0;
    }
    if (rc == 0)
        set_identity(f, mp, &nst);
    else if ((rc == -ENOSPC || rc == -EDQUOT) && give_back)
        give_back_locked(f, disk->size);
    return rc;
}

/* The metafile f records its size in, loaded into *disk (identity *st):
 * NAME.nafs (mp), or, when that name is gone or now another file's while
 * the file still has other names (hard links), the metafile held open
 * (struct drx_stripe.meta_fd).  at gets the path to use.  0, 1 when this
 * file has no name left to record a size under, or -errno. */
static int load_current(struct drx_stripe *f, const char *mp, char *at, size_t len,
                        struct drx_stripe_meta *disk, struct stat *st)
{
    size_t ndirs = f->s->cfg.stripe.ndirs;
    int rc = drx_stripe_meta_load_st(mp, ndirs, disk, st, NULL);

    snprintf(at, len, "%s", mp);
    if (rc == 0 && drx_stripe_same_file(f, disk))
        return 0;
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if (held_path(f, at, len) && drx_stripe_meta_load_st(at, ndirs, disk, st, NULL) == 0 &&
        drx_stripe_same_file(f, disk))
        return 0;
    return 1;
}

/* drx_stripe_persist_locked() once the metafile at `at` is loaded as disk: merges the
 * size on disk with ours and records the result (f->lock and the flock
 * held). */
static int persist_merge(struct drx_stripe *f, const char *at, const struct drx_stripe_meta *disk,
                         const struct stat *st, bool sync, bool give_back)
{
    int rc;

    if (!f->truncated && disk->size > f->size)
        f->size = disk->size; /* another process extended it further */
    if (f->size == disk->size && !sync) {
        f->persisted = f->size;
        f->truncated = false;
        drx_stripe_pend_drop(f);
        return 0;
    }
    if (f->size == disk->size)
        rc = meta_fsync(at);
    else
        rc = persist_new_size(f, at, disk, st, sync, give_back);
    if (rc == 0) {
        f->persisted = f->size;
        f->truncated = false;
        f->meta_synced = sync;
        drx_stripe_pend_drop(f);
    }
    return rc;
}

/* Writes the in-memory size to the metafile (f->lock held).  See the
 * header for the merge with other processes' sizes.  give_back (f->io held
 * exclusively): when even the in-place update finds no space, give the
 * unrecordable bytes back (give_back_locked).  The file's flock is waited
 * for (drx_stripe_lock_take), or with nowait tried once: held by another
 * process, -EAGAIN, or with unlocked_ok the work done without it
 * (logged). */
static int persist_locked_how(struct drx_stripe *f, bool sync, bool give_back, bool nowait,
                              bool unlocked_ok)
{
    char mp[PATH_MAX], at[PATH_MAX];
    struct drx_stripe_meta disk;
    struct stat st;
    int lfd = drx_stripe_lock_fd(f), rc = 0;
    bool locked;

    if (f->size == f->persisted && !f->truncated && (!sync || f->meta_synced))
        return 0;
    if (drx_stripe_meta_path(f->path, mp, sizeof mp) < 0)
        return -ENAMETOOLONG;
    if (nowait) {
        rc = lock_try(lfd);
        if (rc < 0 && !unlocked_ok)
            return rc;
        if (rc < 0)
            drx_log_ratelimited(DRX_LOG_WARNING,
                                "%s" DRX_STRIPE_SUFFIX
                                ": a subfile locked by another process again; "
                                "recording without the lock",
                                f->path);
        locked = rc == 1;
        rc = 0;
    } else {
        locked = drx_stripe_lock_take(f, lfd);
    }
    /* again when the metafile loaded is not the one at its name by the
     * time it is written (exchanged behind a mount with another file's:
     * meta_replace_size's -ESTALE) */
    for (int tries = 0;; tries++) {
        rc = load_current(f, mp, at, sizeof at, &disk, &st);
        if (rc != 0)
            break;
        rc = persist_merge(f, at, &disk, &st, sync, give_back);
        if (rc != -ESTALE || tries == 4)
            goto out;
    }
    if (rc == 1) {
        /* Unlinked, renamed away or replaced, with no other name: writing
         * the name would resurrect or clobber another file.  The size stays
         * pending: after a rename the new name comes with
         * drx_stripe_set_path() and the next persist records it there. */
        drx_log(DRX_LOG_DEBUG, "%s: metafile gone or replaced; size %llu not recorded (yet)", mp,
                (unsigned long long)f->size);
        rc = 0;
        goto out;
    }
out:
    if (locked)
        flock(lfd, LOCK_UN);
    return rc;
}

int drx_stripe_persist_locked(struct drx_stripe *f, bool sync, bool give_back)
{
    return persist_locked_how(f, sync, give_back, false, true);
}

/* drx_stripe_persist_locked() from outside the locks.  give_back: on a full disk,
 * once more with writes shut out, so that what cannot be recorded is given
 * back (the writer learns of it from this call's -ENOSPC). */
int drx_stripe_persist(struct drx_stripe *f, bool sync, bool give_back)
{
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return 0;
    pthread_mutex_lock(&f->lock);
    rc = drx_stripe_persist_locked(f, sync, false);
    pthread_mutex_unlock(&f->lock);
    if (give_back && (rc == -ENOSPC || rc == -EDQUOT)) {
        pthread_rwlock_wrlock(&f->io);
        pthread_mutex_lock(&f->lock);
        rc = drx_stripe_persist_locked(f, sync, true);
        pthread_mutex_unlock(&f->lock);
        pthread_rwlock_unlock(&f->io);
    }
    return rc;
}

int drx_stripe_flush(struct drx_stripe *f)
{
    return drx_stripe_persist(f, false, true);
}

int drx_stripe_flush_try(struct drx_stripe *f, bool unlocked_ok)
{
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return 0;
    pthread_mutex_lock(&f->lock);
    rc = persist_locked_how(f, false, false, true, unlocked_ok);
    pthread_mutex_unlock(&f->lock);
    if (rc == -ENOSPC || rc == -EDQUOT)
        rc = drx_stripe_flush(f); /* gives back what cannot be recorded */
    return rc;
}

/* fsync (fdatasync) of every subfile there is, then of their stripe
 * directories: their names must be durable before a metafile that names
 * them with a size. */
static int fsync_subfiles_and_dirs(struct drx_stripe *f, bool datasync)
{
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};
    int rc = __atomic_exchange_n(&f->wb_err, 0, __ATOMIC_ACQ_REL);

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        int fd = __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE);
        if (fd < 0)
            continue;
        if ((datasync ? fdatasync(fd) : fsync(fd)) < 0 && rc == 0)
            rc = -errno;
        dirs[f->meta.sub[i].dir] = true;
    }
    for (size_t d = 0; d < f->s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
        if (dirs[d] && f->s->dir_fds[d] >= 0 && fsync(f->s->dir_fds[d]) < 0 && rc == 0)
            rc = -errno;
    return rc;
}

int drx_stripe_fsync(struct drx_stripe *f, bool datasync)
{
    uint64_t gen;
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return 0;
    /* Changes counted before the syncs below are covered by them. */
    pthread_mutex_lock(&f->lock);
    gen = f->wgen;
    pthread_mutex_unlock(&f->lock);
    if ((rc = fsync_subfiles_and_dirs(f, datasync)) < 0)
        return rc;
    pthread_mutex_lock(&f->lock);
    if (gen - f->synced_gen < ((uint64_t)1 << 63)) /* gen is not older */
        f->synced_gen = gen;
    if (f->wgen == gen) /* no subfile created since the loop above */
        f->dirs_synced = true;
    pthread_mutex_unlock(&f->lock);
    return drx_stripe_persist(f, true, true);
}

uint64_t drx_stripe_sync_mark(struct drx_stripe *f)
{
    uint64_t gen;

    pthread_mutex_lock(&f->lock);
    gen = f->wgen;
    pthread_mutex_unlock(&f->lock);
    return gen;
}

int drx_stripe_sync_store(const struct drx_store *s)
{
    dev_t done[DRX_MAX_STRIPE_DIRS];
    size_t ndone = 0;

    for (size_t d = 0; d < s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++) {
        struct stat st;
        size_t k = 0;

        if (s->dir_fds[d] < 0)
            continue;
        if (fstat(s->dir_fds[d], &st) < 0)
            return -errno;
        while (k < ndone && done[k] != st.st_dev)
            k++;
        if (k < ndone)
            continue; /* that filesystem is synced already */
        if (syncfs(s->dir_fds[d]) < 0)
            return -errno;
        done[ndone++] = st.st_dev;
    }
    return 0;
}

int drx_stripe_synced(struct drx_stripe *f, uint64_t gen)
{
    int rc = 0;

    /* syncfs reports a write-back error once per stripe directory's
     * descriptor: one that hit a subfile before an earlier batch went to
     * that batch.  Each subfile's own descriptor still holds it; its
     * sync_file_range (nothing left to write after the syncfs) reports it. */
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        int fd = __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE);
        if (fd >= 0 &&
            sync_file_range(fd, 0, 0,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) < 0 &&
            rc == 0)
            rc = -errno;
    }
    pthread_mutex_lock(&f->lock);
    if (rc < 0) {
        /* for the next sync of the subfiles: no size recorded over it */
        __atomic_store_n(&f->wb_err, rc, __ATOMIC_RELEASE);
    } else {
        if (gen - f->synced_gen < ((uint64_t)1 << 63)) /* gen is not older */
            f->synced_gen = gen;
        if (f->wgen == gen) /* no subfile created since the mark */
            f->dirs_synced = true;
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* The layout of new file `path`: l, or the one its directory asks for;
 * -EINVAL when the store cannot hold it. */
static int create_layout(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                         struct drx_stripe_layout *lay, struct drx_err *err)
{
    char dir[PATH_MAX];
    const char *base;
    int rc;

    if (l) {
        *lay = *l;
    } else {
        drx_stripe_split_path(path, dir, sizeof dir, &base);
        rc = drx_stripe_layout_for_new(s, dir, lay, err);
        if (rc < 0)
            return rc;
    }
    if (lay->count < 1 || lay->count > s->cfg.stripe.ndirs || lay->count > DRX_MAX_STRIPE_DIRS)
        return drx_err_set(err, EINVAL, "%s: count=%u is not in 1..%zu (the store's stripe dirs)",
                           path, lay->count, s->cfg.stripe.ndirs);
    if (lay->extent < 1 || lay->extent > DRX_MAX_EXTENT)
        return drx_err_set(err, EINVAL, "%s: extent=%llu is not in 1..%llu", path,
                           (unsigned long long)lay->extent, (unsigned long long)DRX_MAX_EXTENT);
    return 0;
}

/* One try at creating f's first n subfiles under a fresh random id (the
 * others are named, for later); on failure the ones created are closed and
 * removed again (-EEXIST: the id is taken). */
static int create_subfiles_once(struct drx_stripe *f, const char *path, const char *mp, mode_t mode,
                                unsigned n, struct drx_err *err)
{
    struct drx_store *s = f->s;
    unsigned count = f->meta.layout.count;
    uint64_t id;
    int rc = 0;

    drx_stripe_random_id(&id);
    unsigned start = (unsigned)(id % s->cfg.stripe.ndirs);
    for (unsigned i = 0; i < count; i++) {
        f->meta.sub[i].dir = (start + i) % (unsigned)s->cfg.stripe.ndirs;
        snprintf(f->meta.sub[i].name, sizeof f->meta.sub[i].name, "%016llx.%u",
                 (unsigned long long)id, i);
    }
    for (unsigned i = 0; i < n && rc == 0; i++) {
        int fd = drx_stripe_subfile_new(s, &f->meta, i, mode & 0666, mp);
        if (fd < 0) {
            rc = fd;
            if (fd == -ENOENT)
                rc = -EIO; /* stripe dir missing */
            drx_err_set(err, -rc, "%s: cannot create subfile in %s: %s", path,
                        s->cfg.stripe.dirs[f->meta.sub[i].dir], strerror(-rc));
            for (unsigned j = 0; j < i; j++) {
                close(f->fds[j]);
                f->fds[j] = -1;
                unlinkat(s->dir_fds[f->meta.sub[j].dir], f->meta.sub[j].name, 0);
            }
        } else {
            f->fds[i] = fd;
        }
    }
    return rc;
}

/* Creates f's subfiles: all of them (lazy false), or only the first, which
 * holds a file's first bytes and the lock of persists (lazy true; the
 * others come with the first byte that reaches them,
 * drx_stripe_subfile_fd: one stripe-directory inode for a small file).
 * Subfiles first: a crash now leaves orphans for fsck, never a metafile
 * naming subfiles that a size needs and that do not exist.  An id
 * collision is retried. */
static int create_subfiles(struct drx_stripe *f, const char *path, const char *mp, mode_t mode,
                           bool lazy, struct drx_err *err)
{
    unsigned n = lazy ? 1 : f->meta.layout.count;
    int rc = 0;

    f->sub_mode = mode & 0666;
    for (int attempt = 0; attempt < 8; attempt++) {
        rc = create_subfiles_once(f, path, mp, mode, n, err);
        if (rc != -EEXIST)
            break;
    }
    return rc;
}

/* The mode a new metafile mp made with mode gets (drx_replace_new_mode in
 * its directory); the owner's bits alone when that cannot be read. */
static mode_t meta_new_mode(const char *mp, mode_t mode)
{
    char dir[PATH_MAX];
    const char *base;

    drx_stripe_split_path(mp, dir, sizeof dir, &base);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return mode & ~(mode_t)077;
    mode = drx_replace_new_mode(dfd, mode);
    close(dfd);
    return mode;
}

/* The mode of the subfiles of a new metafile mp of mode (meta_new_mode):
 * the group's own bits under its directory's default ACL, which the
 * metafile inherits (drx_replace_group_own). */
static mode_t sub_new_mode(const char *mp, mode_t mode)
{
    char dir[PATH_MAX];
    const char *base;

    drx_stripe_split_path(mp, dir, sizeof dir, &base);
    return drx_replace_group_own(dir, "system.posix_acl_default", mode);
}

mode_t drx_stripe_sub_mode(const char *path, mode_t mode)
{
    char mp[PATH_MAX];

    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return mode & ~(mode_t)077;
    return drx_replace_group_own(mp, "system.posix_acl_access", mode);
}

mode_t drx_stripe_sub_mode_fd(int fd, mode_t mode)
{
    char self[32];

    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    return drx_replace_group_own(self, "system.posix_acl_access", mode);
}

/* drx_stripe_create() with the metafile at mp: NAME.nafs (temp false), or
 * a temporary name, written in place (temp true); -EEXIST when mp exists by
 * then. */
static int create_meta(struct drx_store *s, const char *path, const char *mp, bool temp,
                       const struct drx_stripe_layout *l, mode_t mode, struct drx_stripe **out,
                       struct drx_err *err)
{
    struct drx_stripe_layout lay;
    struct drx_stripe *f = NULL;
    struct stat st;
    int rc;

    rc = create_layout(s, path, l, &lay, err);
    if (rc < 0)
        return rc;
    f = handle_new(s, path, DRX_STRIPE_RDWR);
    if (!f)
        return drx_err_set(err, ENOMEM, "out of memory");
    f->meta.layout = lay;
    /* The subfiles hold the bytes: never a mode the metafile will not
     * have, a default ACL of its directory included (else the umask's
     * absence left them 0666 in stripe directories any user may enter). */
    mode = (mode & ~(mode_t)0777) | (meta_new_mode(mp, mode) & 0777);
    /* temporary files are filled behind libcore's back (drx-load over
     * MPI-IO opens every subfile by path): all of them now */
    rc = create_subfiles(f, path, mp, sub_new_mode(mp, mode), !temp, err);
    if (rc < 0)
        goto out;
    f->meta.size = 0;
    if (temp)
        rc = drx_stripe_meta_write_here(mp, &f->meta, O_EXCL, mode, NULL, false, &st);
    else
        rc = drx_stripe_meta_create(s, mp, &f->meta, mode, &st);
    if (rc < 0) {
        drx_err_set(err, -rc, "%s: %s", mp, strerror(-rc));
        for (unsigned j = 0; j < lay.count; j++)
            unlinkat(s->dir_fds[f->meta.sub[j].dir], f->meta.sub[j].name, 0);
        goto out;
    }
    set_identity(f, mp, &st);
    f->meta_synced = false;
    if (out) {
        *out = f;
        f = NULL;
    }
    rc = 0;
out:
    if (f)
        handle_free(f);
    return rc;
}

int drx_stripe_create(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                      mode_t mode, struct drx_stripe **out, struct drx_err *err)
{
    char mp[PATH_MAX];
    struct stat st;

    if (out)
        *out = NULL;
    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    if (lstat(mp, &st) == 0)
        return drx_err_set(err, EEXIST, "%s: exists", mp);
    return create_meta(s, path, mp, false, l, mode, out, err);
}

/* ---- files built behind a handle's back ------------------------------------------ */

int drx_stripe_create_temp(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                           mode_t mode, char *tmp, size_t tmplen, struct drx_err *err)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char mp[PATH_MAX], dir[PATH_MAX];
    const char *base;
    int rc = -EEXIST;

    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    drx_stripe_split_path(mp, dir, sizeof dir, &base);
    /* `.NAME.nafs.XXXXXX`, as drx_stripe_meta_write's temporaries: a name the daemon
     * hides and fsck knows as a leftover of an interrupted update. */
    for (int attempt = 0; attempt < 8 && rc == -EEXIST; attempt++) {
        uint64_t id;
        char x[7];
        drx_stripe_random_id(&id);
        for (int i = 0; i < 6; i++, id /= sizeof abc - 1)
            x[i] = abc[id % (sizeof abc - 1)];
        x[6] = '\0';
        char tname[NAME_MAX + 1];
        if (drx_store_temp_name(base, x, tname, sizeof tname) < 0 ||
            (size_t)snprintf(tmp, tmplen, "%s/%s", dir, tname) >= tmplen)
            return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
        rc = create_meta(s, path, tmp, true, l, mode, NULL, err);
    }
    return rc;
}

/* The subfiles of a handle being opened that its recorded size needs, and
 * the first (mp: its metafile's path, for messages).  One the size does
 * not need is opened when a byte reaches it (drx_stripe_subfile_fd): not
 * created yet, or created by another writer, or planted under its name by
 * a third user (refused there).  A missing or refused one is not an
 * error: its extents fail with EIO, the rest of the file stays usable. */
static int open_subfiles(struct drx_stripe *f, const char *mp, struct drx_err *err)
{
    int flags = f->mode == DRX_STRIPE_RDWR ? O_RDWR : O_RDONLY;

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        bool needed = drx_stripe_subfile_len(&f->meta.layout, i, f->meta.size) > 0;
        if (i > 0 && !needed)
            continue;
        int fd = drx_stripe_subfile_open(f->s, &f->meta, i, flags, 0, mp);
        if (fd == -ENOENT && !needed)
            continue; /* not created yet: no byte reached it */
        if (fd == -ENOENT || fd == -EIO) {
            if (fd == -ENOENT)
                drx_log_ratelimited(DRX_LOG_WARNING, "%s: subfile %u (%s) is missing", mp, i,
                                    f->meta.sub[i].name);
            atomic_store(&f->warned[i], true);
            continue;
        }
        if (fd < 0)
            return drx_err_set(err, -fd, "%s: subfile %u (%s): %s", mp, i, f->meta.sub[i].name,
                               strerror(-fd));
        f->fds[i] = fd;
    }
    return 0;
}

/* drx_stripe_open, or drx_stripe_open_meta_fd when metafd >= 0. */
static int stripe_open(struct drx_store *s, const char *path, int metafd, int mode,
                       struct drx_stripe **out, struct drx_err *err)
{
    char mp[PATH_MAX], held[32];
    struct drx_stripe *f;
    struct stat st;
    int rc, own = -1;

    *out = NULL;
    if (mode != DRX_STRIPE_RDONLY && mode != DRX_STRIPE_RDWR)
        return drx_err_set(err, EINVAL, "%s: bad open mode %d", path, mode);
    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    /* Another process's size not recorded yet (stripe_pending.c): the
     * recorded one would be short of its bytes. */
    if (drx_stripe_pending_wait(mp, drx_stripe_pending_wait_ms()) < 0)
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: another process has not recorded its size in %g s (a commit "
                            "interval longer than that?); opened with the size recorded before",
                            path, drx_stripe_pending_wait_ms() / 1000.0);
    f = handle_new(s, path, mode);
    if (!f)
        return drx_err_set(err, ENOMEM, "out of memory");
    /* Without one, the metafile the name holds now, opened first: loaded
     * by the name and then opened by it to be held (set_identity), a
     * metafile exchanged with another file's in between (behind a mount)
     * was not held at all, and the handle, unknown by its file, was a
     * second one of a file whose handle drxfs had: appends through the
     * two wrote over each other. */
    if (metafd < 0 && !drx_stripe_path_is_held(mp) &&
        (own = open(mp, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 && errno != ENOENT) {
        rc = drx_err_set(err, errno, "%s: %s", mp, strerror(errno));
        goto out;
    }
    if (metafd < 0 && own < 0 && !drx_stripe_path_is_held(mp)) {
        rc = drx_err_set(err, ENOENT, "%s: %s", mp, strerror(ENOENT));
        goto out;
    }
    /* the file open at metafd: read through its /proc name, which is
     * that inode whatever the name holds by now */
    snprintf(held, sizeof held, "/proc/self/fd/%d", metafd >= 0 ? metafd : own);
    const char *from = metafd >= 0 || own >= 0 ? held : mp;
    rc = drx_stripe_meta_load_as(from, own >= 0 ? mp : from, s->cfg.stripe.ndirs, &f->meta, &st,
                                 err);
    if (rc < 0)
        goto out;
    f->size = f->persisted = f->meta.size;
    f->sub_mode = drx_replace_group_own(from, "system.posix_acl_access", st.st_mode) & 0666;
    if (metafd >= 0 || own >= 0)
        f->meta_fd = fcntl(metafd >= 0 ? metafd : own, F_DUPFD_CLOEXEC, 0);
    set_identity(f, mp, &st);
    f->meta_synced = true; /* as far as we know: we did not write it */
    rc = open_subfiles(f, mp, err);
    if (rc < 0)
        goto out;
    *out = f;
    f = NULL;
    rc = 0;
out:
    if (own >= 0)
        close(own);
    if (f)
        handle_free(f);
    return rc;
}

int drx_stripe_open(struct drx_store *s, const char *path, int mode, struct drx_stripe **out,
                    struct drx_err *err)
{
    return stripe_open(s, path, -1, mode, out, err);
}

int drx_stripe_open_meta_fd(struct drx_store *s, const char *path, int metafd, int mode,
                            struct drx_stripe **out, struct drx_err *err)
{
    if (metafd < 0) {
        *out = NULL;
        return drx_err_set(err, EBADF, "%s: no metafile descriptor", path);
    }
    return stripe_open(s, path, metafd, mode, out, err);
}

bool drx_stripe_incomplete(struct drx_stripe *f)
{
    uint64_t size = drx_stripe_size(f);

    for (unsigned i = 0; i < f->meta.layout.count; i++)
        if (drx_stripe_subfile_len(&f->meta.layout, i, size) > 0 &&
            __atomic_load_n(&f->fds[i], __ATOMIC_ACQUIRE) < 0)
            return true;
    return false;
}

int drx_stripe_close(struct drx_stripe *f)
{
    int rc;

    if (!f)
        return 0;
    rc = drx_stripe_flush(f);
    handle_free(f);
    return rc;
}

uint64_t drx_stripe_size(struct drx_stripe *f)
{
    uint64_t v;

    pthread_mutex_lock(&f->lock);
    v = f->size;
    pthread_mutex_unlock(&f->lock);
    return v;
}

void drx_stripe_layout(const struct drx_stripe *f, struct drx_stripe_layout *out)
{
    *out = f->meta.layout;
}

void drx_stripe_meta_get(struct drx_stripe *f, struct drx_stripe_meta *out)
{
    *out = f->meta;
    out->size = drx_stripe_size(f);
}

void drx_stripe_set_mode(struct drx_stripe *f, mode_t mode)
{
    pthread_mutex_lock(&f->lock);
    f->sub_mode = mode & 0666;
    pthread_mutex_unlock(&f->lock);
}

int drx_stripe_set_path(struct drx_stripe *f, const char *path)
{
    char *copy = strdup(path);

    if (!copy)
        return -ENOMEM;
    pthread_mutex_lock(&f->lock);
    free(f->path);
    f->path = copy;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

int drx_stripe_rename_handle(struct drx_stripe *f, const char *from, const char *to,
                             unsigned flags, struct drx_err *err)
{
    char *copy = strdup(to), mp[PATH_MAX];
    struct stat st;
    int rc;

    if (!copy)
        return drx_err_set(err, ENOMEM, "out of memory");
    /* f->lock keeps this handle's persists out from between the rename and
     * the new path: one that read the metafile under the old name before
     * the rename would otherwise write it back there after it, a second
     * metafile naming the same subfiles. */
    pthread_mutex_lock(&f->lock);
    if (!from)
        from = f->path;
    if (drx_stripe_meta_path(from, mp, sizeof mp) < 0)
        rc = drx_err_set(err, ENAMETOOLONG, "%s: name too long", from);
    else if (lstat(mp, &st) < 0)
        rc = drx_err_set(err, errno, "%s: %s", mp, strerror(errno));
    else if (st.st_dev != f->meta_dev || st.st_ino != f->meta_ino)
        rc = drx_err_set(err, ESTALE, "%s: another file has this name now", from);
    else
        rc = drx_stripe_rename(f->s, from, to, flags, err);
    if (rc == 0) {
        free(f->path);
        f->path = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&f->lock);
    free(copy);
    return rc;
}

/* drx_stripe_reload, waiting for a size another process holds or not. */
static int reload(struct drx_stripe *f, bool wait)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta m;
    struct stat st;
    int rc;

    /* a size another process has not recorded yet: once it is (an open
     * sees what a close elsewhere left; stripe_pending.c) */
    if (wait && drx_stripe_meta_path_of(f, mp, sizeof mp) == 0)
        (void)drx_stripe_pending_wait(mp, drx_stripe_pending_wait_ms());
    pthread_mutex_lock(&f->lock);
    rc = drx_stripe_meta_path(f->path, mp, sizeof mp);
    if (rc < 0)
        goto out;
    if (stat(mp, &st) == 0 && st.st_ino == f->meta_ino && st.st_dev == f->meta_dev &&
        st.st_ctim.tv_sec == f->meta_ctim.tv_sec && st.st_ctim.tv_nsec == f->meta_ctim.tv_nsec) {
        rc = 0;
        goto out;
    }
    rc = drx_stripe_meta_load_st(mp, f->s->cfg.stripe.ndirs, &m, &st, NULL);
    if (rc < 0)
        goto out;
    if (!drx_stripe_same_file(f, &m)) {
        rc = -ESTALE; /* another file now has this name */
        goto out;
    }
    set_identity(f, mp, &st);
    if (f->size != f->persisted || f->truncated) {
        /* Our own changes are newer than the disk's; the next persist
         * merges a larger size from it. */
        rc = 0;
        goto out;
    }
    rc = m.size != f->size;
    f->size = f->persisted = m.size;
out:
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int drx_stripe_reload(struct drx_stripe *f)
{
    return reload(f, true);
}

int drx_stripe_reload_nowait(struct drx_stripe *f)
{
    return reload(f, false);
}

