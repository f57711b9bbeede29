/* Striped files at the mount point: NAME.nafs in the store is regular file
 * NAME.  The work is libcore's stripe module; this file keeps one handle per
 * open file (shared by all its opens, as stripe.h asks) and maps FUSE
 * operations onto it.  drxfs_striped_names.c renames, links and removes
 * them; drxfs_striped_layout.c sums the stripe directories for statfs and
 * serves the user.drx.stripe attribute.
 *
 * Paths handed to libcore come from drx_store_path_pin(): they reach the
 * store through its root descriptor (nothing goes through the mount point)
 * and each file through its directory opened beneath the root (no symlink
 * swapped in on the way is followed).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drxfs_striped_i.h"

struct drxfs_stable drxfs_stable = {.mutex = PTHREAD_MUTEX_INITIALIZER};

void drxfs_sfile_put(struct drxfs_sfile *e);
static void sfile_detach_entry(struct drxfs_sfile *e, bool moved);
static bool s_is_at(struct drxfs_sfile *e, const char *path);

/* Whether store name rel leads to e's metafile now, by the name from the
 * store's root (true when it leads to none: the lookup's business). */
static bool name_leads_to(struct drxfs_sfile *e, const char *rel)
{
    char mrel[PATH_MAX];
    struct stat now;

    return drxfs_rel_suffix(mrel, rel, DRXFS_NAFS) < 0 ||
           drx_store_entry_stat(drxfs.store, mrel, &now) < 0 || drx_stripe_meta_is(e->f, &now);
}

/* The handle's view of the metafile, refreshed: another process may have
 * written the file since (drx-load), or put another file in its place
 * (drx-load copy renames a new file over it), or the name rel it is asked
 * for leads elsewhere now: the handle follows the directory it was opened
 * in (its pin), and a directory exchanged behind the mount with another
 * one holding a file of the same name left the table's handle of the
 * old name serving it (root's cat of his file read a user's, whose handle
 * waited for its batched commit).  In these cases e is taken out of the
 * table, serving its open files only, and false is returned: the name is
 * now another file, for a fresh handle. */
static bool sfile_refresh(struct drxfs_sfile *e, const char *rel)
{
    int rc = drx_stripe_reload(e->f);
    bool ok = rc != -ESTALE && name_leads_to(e, rel);

    /* once more after a reload: a metafile the handle's own persist
     * replaced in between is still its own */
    if (!ok && rc != -ESTALE) {
        rc = drx_stripe_reload(e->f);
        ok = rc != -ESTALE && name_leads_to(e, rel);
    }
    if (ok)
        return true;
    drx_log(DRX_LOG_DEBUG, "%s: replaced behind the mount; open files keep the old one", e->key);
    /* moved even when another file has its old name (-ESTALE): the file
     * renamed behind the mount and another put at the name, it is found
     * under its new name by the metafile it holds (s_find_moved), else
     * that name got a fresh handle with the recorded size */
    sfile_detach_entry(e, true);
    return false;
}

/* Takes e out of list *head (the table or the detached handles). */
static void s_unlink(struct drxfs_sfile **head, struct drxfs_sfile *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        *head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

struct drxfs_sfile *drxfs_sfile_find(const char *rel)
{
    for (struct drxfs_sfile *e = drxfs_stable.head; e; e = e->next)
        if (strcmp(e->key, rel) == 0)
            return e;
    return NULL;
}

/* True when e's own name still leads to the metafile *meta: an inode
 * number alone may be a reused one (e's file removed behind the mount). */
static bool s_same_inode(const struct drxfs_sfile *e, const struct stat *meta)
{
    char mrel[PATH_MAX];
    struct stat now;

    return e->st.st_ino == meta->st_ino && e->st.st_dev == meta->st_dev &&
           drxfs_rel_suffix(mrel, e->key, DRXFS_NAFS) == 0 &&
           drx_store_entry_stat(drxfs.store, mrel, &now) == 0 &&
           now.st_ino == meta->st_ino && now.st_dev == meta->st_dev;
}

/* Puts e in list *head (the table or the detached handles). */
static void s_insert(struct drxfs_sfile **head, struct drxfs_sfile *e)
{
    e->prev = NULL;
    e->next = *head;
    if (*head)
        (*head)->prev = e;
    *head = e;
}

/* e, holding the metafile rel leads to, is named rel now (stable.mutex
 * held): the old name no longer leads to it.  Its path too, through rel's
 * directory (pinned): the file itself renamed behind the mount (not its
 * directory, which the pin follows), the old path led to whatever was
 * made under the old name next, and the handle, reloading from there,
 * took itself for replaced: the new name got a fresh handle with the
 * recorded size, and an append wrote over the file's first bytes.
 * Unchanged when rel no longer leads to it by then.  Back in the table
 * when it was out of it. */
static void s_rename_moved(struct drxfs_sfile *e, const char *rel)
{
    char path[PATH_MAX + 64], *key = strdup(rel);
    int pin = -1;

    /* on failure the old name stays: a fresh handle serves rel */
    if (!key || store_path(path, rel, &pin) < 0 || !s_is_at(e, path) ||
        drx_stripe_set_path(e->f, path) < 0) {
        drxfs_unpin(pin);
        free(key);
        return;
    }
    int old = e->pin;
    e->pin = pin;
    drxfs_unpin(old);
    if (e->detached) {
        s_unlink(&drxfs_stable.detached, e);
        s_insert(&drxfs_stable.head, e);
        e->detached = e->moved = false;
        if (e->opens)
            drxfs_stable.ndetached--;
    }
    drx_log(DRX_LOG_DEBUG, "%s: moved behind the mount to %s", e->key, rel);
    drxfs_sfile_set_key(e, key);
}

/* The handle of metafile *meta (a stat of rel's now) under another name
 * than rel that no longer leads to it (stable.mutex held): its directory
 * was renamed or exchanged behind the mount.  Without this, rel got a
 * fresh handle reading the size recorded, not the one the old handle
 * held for the batched commit (root's cat of his file, in a directory a
 * user exchanged with his, read nothing).  Found by the metafile the
 * handle holds open, so the inode is no other file's; it takes rel as
 * its name. */
static struct drxfs_sfile *s_find_moved(const char *rel, const struct stat *meta)
{
    char mrel[PATH_MAX];
    struct stat now;

    /* The metafile's inode at the handle's open or last stamp (e->st) first,
     * neither a lock nor a system call per handle: a name missing from the
     * table is asked of every handle waiting for the commit (a thousand
     * after a cp -r).  One whose persist has replaced its metafile since
     * (an old unpadded one rewritten) is not found: a fresh handle then, as
     * before. */
    for (struct drxfs_sfile *e = drxfs_stable.head; e; e = e->next) {
        if (e->st.st_ino != meta->st_ino || e->st.st_dev != meta->st_dev ||
            !drx_stripe_holds(e->f, meta))
            continue;
        if (drxfs_rel_suffix(mrel, e->key, DRXFS_NAFS) < 0 ||
            drx_store_entry_stat(drxfs.store, mrel, &now) < 0 || !drx_stripe_meta_is(e->f, &now))
            s_rename_moved(e, rel);
        return e;
    }
    for (struct drxfs_sfile *e = drxfs_stable.detached; e; e = e->next)
        if (e->moved && e->st.st_ino == meta->st_ino && e->st.st_dev == meta->st_dev &&
            drx_stripe_holds(e->f, meta)) {
            s_rename_moved(e, rel);
            return e->detached ? NULL : e;
        }
    return NULL;
}

/* The handle, in the table or out of it, holding the metafile *held that
 * a fresh handle of rel holds (stable.mutex held): one handle per file.
 * Out of the table, it is named rel when rel still leads to it
 * (s_rename_moved), else serves this open out of the table.  Looked up by
 * name alone, an open racing an exchange of files or directories behind
 * the mount missed the file's handle, moved out of the table a moment
 * before, and got a second one: appends through the two wrote at their
 * own sizes, over each other (a thousand appends lost in 10 s, and zeros
 * recorded in the file). */
static struct drxfs_sfile *s_find_holder(const char *rel, const struct stat *held)
{
    for (int l = 0; l < 2; l++)
        for (struct drxfs_sfile *e = l ? drxfs_stable.detached : drxfs_stable.head; e;
             e = e->next) {
            if (!drx_stripe_holds(e->f, held))
                continue;
            if (e->detached)
                s_rename_moved(e, rel);
            return e;
        }
    return NULL;
}

/* The handle of rel, or of another name of the same metafile *meta (a
 * hard link, or the name it had before a rename behind the mount): one
 * handle per file, whatever name opened it. */
static struct drxfs_sfile *s_find_node(const char *rel, const struct stat *meta)
{
    struct drxfs_sfile *e = drxfs_sfile_find(rel);

    if (e || !meta)
        return e;
    for (e = drxfs_stable.head; meta->st_nlink >= 2 && e; e = e->next)
        if (s_same_inode(e, meta))
            return e;
    return s_find_moved(rel, meta);
}


int drxfs_striped_log_err(const char *what, const char *rel, int rc, const struct drx_err *err)
{
    enum drx_log_level lv = (rc == -ENOENT || rc == -EEXIST || rc == -ENOSPC ||
                             rc == -ENAMETOOLONG || rc == -EDQUOT || rc == -EFBIG)
                                ? DRX_LOG_DEBUG
                                : DRX_LOG_WARNING;
    drx_log_ratelimited(lv, "%s %s: %s", what, rel, err && err->msg[0] ? err->msg : strerror(-rc));
    return rc;
}

static void sfile_close(struct drxfs_sfile *e)
{
    int rc = drx_stripe_close(e->f);
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_ERROR, "%s: recording the size at close: %s", e->key,
                            strerror(-rc));
    drxfs_unpin(e->pin);
    for (unsigned i = 0; i < e->wb_n; i++)
        if (e->wb_fds[i] >= 0)
            close(e->wb_fds[i]);
    free(e->wb_fds);
    pthread_mutex_destroy(&e->times_lock);
    for (unsigned i = 0; i < e->nretired; i++)
        free(e->retired[i]);
    free(e->retired);
    for (unsigned i = 0; i < e->nnames; i++)
        free(e->names[i]);
    free(e->names);
    free(e->key);
    free(e);
}

/* The table's handle of rel for metafile meta, with a reference, when it
 * is there and still that file; else NULL.  Twice: the handle under the
 * name may be another file's (moved out of the table now), and the
 * name's file may have one under its old name (s_find_moved). */
static struct drxfs_sfile *sfile_find_ref(const char *rel, const struct stat *meta)
{
    for (int tries = 0; tries < 2; tries++) {
        pthread_mutex_lock(&drxfs_stable.mutex);
        struct drxfs_sfile *e = s_find_node(rel, meta);
        if (e)
            e->refs++;
        pthread_mutex_unlock(&drxfs_stable.mutex);
        if (!e || sfile_refresh(e, rel))
            return e;
        drxfs_sfile_put(e);
    }
    return NULL;
}

/* Opens rel afresh (for writing when the mount and the file allow it, else
 * for reading), in *out with one reference.  meta: its metafile's stat
 * when it was looked up.  metafd >= 0: the metafile is the file open
 * there (of stat *meta), not what the name holds now. */
static int sfile_open(const char *rel, const struct stat *meta, int metafd,
                      struct drxfs_sfile **out)
{
    char path[PATH_MAX + 64], mrel[PATH_MAX];
    struct drx_err err = {{0}};
    struct drxfs_sfile *fresh;
    int rc, pin;

    if ((rc = store_path(path, rel, &pin)) < 0)
        return rc;
    if (!(fresh = calloc(1, sizeof(*fresh))) || !(fresh->key = strdup(rel))) {
        free(fresh);
        drxfs_unpin(pin);
        return -ENOMEM;
    }
    fresh->pin = pin;
    fresh->refs = 1;
    pthread_mutex_init(&fresh->times_lock, NULL);
    rc = -EROFS;
    if (!drxfs.ro) {
        rc = metafd >= 0 ? drx_stripe_open_meta_fd(drxfs.store, path, metafd, DRX_STRIPE_RDWR,
                                                   &fresh->f, &err)
                         : drx_stripe_open(drxfs.store, path, DRX_STRIPE_RDWR, &fresh->f, &err);
        fresh->rw = rc == 0;
    }
    /* the store's file system gone read-only (errors=remount-ro) says so
     * to writers, as plain files and arrays do */
    fresh->ro_rc = rc == -EROFS ? -EROFS : -EACCES;
    if (rc == -EACCES || rc == -EPERM || rc == -EROFS) {
        err.msg[0] = '\0';
        rc = metafd >= 0 ? drx_stripe_open_meta_fd(drxfs.store, path, metafd, DRX_STRIPE_RDONLY,
                                                   &fresh->f, &err)
                         : drx_stripe_open(drxfs.store, path, DRX_STRIPE_RDONLY, &fresh->f, &err);
    }
    if (rc < 0) {
        drxfs_unpin(fresh->pin);
        pthread_mutex_destroy(&fresh->times_lock);
        free(fresh->key);
        free(fresh);
        return drxfs_striped_log_err("open", rel, rc, &err);
    }
    /* the name removed meanwhile (through another mount): the stat it was
     * looked up with, never none (a create that opened the file took mode
     * 0 from its handle for no file, and failed with EIO) */
    if (metafd >= 0 || drxfs_rel_suffix(mrel, rel, DRXFS_NAFS) < 0 ||
        drx_store_entry_stat(drxfs.store, mrel, &fresh->st) < 0)
        fresh->st = *meta;
    *out = fresh;
    return 0;
}

/* Puts fresh in the table, or takes the handle another thread put there
 * meanwhile (closing fresh): the handle, with a reference.  exact: only
 * a handle of fresh's own metafile will do; when the table's serves
 * another, fresh is handed out on its own (detached: the handle of a file
 * whose name leads to another now). */
static struct drxfs_sfile *sfile_insert(const char *rel, struct drxfs_sfile *fresh, bool exact)
{
    struct drxfs_sfile *e;
    struct stat held;
    int fd = drxfs_sfile_held_fd(fresh, &held);

    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&drxfs_stable.mutex);
    e = fd >= 0 ? s_find_holder(rel, &held) : NULL;
    if (!e)
        e = s_find_node(rel, &fresh->st);
    if (e && exact && !drx_stripe_meta_is(e->f, &fresh->st)) {
        fresh->detached = true;
        s_insert(&drxfs_stable.detached, fresh);
        e = fresh;
        fresh = NULL;
    } else if (e) {
        e->refs++;
    } else {
        s_insert(&drxfs_stable.head, fresh);
        e = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (fresh)
        sfile_close(fresh); /* another thread was quicker */
    return e;
}

/* Hands e out in *out, unless the caller writes and e cannot. */
static int sfile_hand_out(struct drxfs_sfile *e, bool want_rw, struct drxfs_sfile **out)
{
    if (want_rw && !e->rw) {
        int rc = e->ro_rc;
        drxfs_sfile_put(e);
        return rc;
    }
    *out = e;
    return 0;
}

/* The shared handle of rel, opened when needed.  want_rw: the caller
 * writes.  metafd >= 0: the handle of the metafile open there (of stat
 * *meta), the table's when it is that file's, else one of its own. */
static int sfile_get(const char *rel, const struct stat *meta, int metafd, bool want_rw,
                     struct drxfs_sfile **out)
{
    struct drxfs_sfile *e, *fresh = NULL;
    int rc;

    if ((e = sfile_find_ref(rel, meta))) {
        if (metafd < 0 || drx_stripe_meta_is(e->f, meta))
            return sfile_hand_out(e, want_rw, out);
        drxfs_sfile_put(e);
    }
    if ((rc = sfile_open(rel, meta, metafd, &fresh)) < 0)
        return rc;
    return sfile_hand_out(sfile_insert(rel, fresh, metafd >= 0), want_rw, out);
}

void drxfs_sfile_put(struct drxfs_sfile *e)
{
    bool last;
    pthread_mutex_lock(&drxfs_stable.mutex);
    last = --e->refs == 0;
    if (last)
        s_unlink(e->detached ? &drxfs_stable.detached : &drxfs_stable.head, e);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (last)
        sfile_close(e);
}

/* Takes e out of the table, into the detached handles (stable.mutex
 * held). */
static void s_detach(struct drxfs_sfile *e)
{
    s_unlink(&drxfs_stable.head, e);
    s_insert(&drxfs_stable.detached, e);
    e->detached = true;
    if (e->opens)
        drxfs_stable.ndetached++;
}

/* An open file of e begins (d 1) or ends (d -1), stable.mutex held.
 * drxfs_striped_is_open counts these only: a reference the batched commit
 * or a path operation holds is no open file, and a file removed with no
 * open file left goes at once (drxfs_hidden.c). */
static void s_opens_add(struct drxfs_sfile *e, int d)
{
    bool was = e->opens > 0;

    e->opens = (unsigned)((int)e->opens + d);
    if (e->detached && was != (e->opens > 0))
        drxfs_stable.ndetached = (unsigned)((int)drxfs_stable.ndetached + d);
}

/* Takes e out of the table if it is still there under its key. */
static void sfile_detach_entry(struct drxfs_sfile *e, bool moved)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    if (!e->detached && drxfs_sfile_find(e->key) == e) {
        s_detach(e);
        e->moved = moved;
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
}

/* Whether e's metafile is the one at libcore path `path` now (stable.mutex
 * may be held). */
static bool s_is_at(struct drxfs_sfile *e, const char *path)
{
    char mp[PATH_MAX + 64 + sizeof DRX_STRIPE_SUFFIX];
    struct stat st;

    return (size_t)snprintf(mp, sizeof mp, "%s" DRX_STRIPE_SUFFIX, path) < sizeof mp &&
           lstat(mp, &st) == 0 && drx_stripe_meta_is(e->f, &st);
}

struct drxfs_sfile *drxfs_sfile_ref_at(const char *rel, const char *path)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    struct drxfs_sfile *e = drxfs_sfile_find(rel);
    if (e && !s_is_at(e, path))
        e = NULL;
    if (e)
        e->refs++;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return e;
}

struct drxfs_sfile *drxfs_sfile_detach(const char *rel, const char *path)
{
    struct drxfs_sfile *idle = NULL;

    pthread_mutex_lock(&drxfs_stable.mutex);
    struct drxfs_sfile *e = drxfs_sfile_find(rel);
    if (e && !s_is_at(e, path))
        e = NULL;
    if (e)
        s_detach(e);
    if (e && !e->opens) {
        e->refs++;
        idle = e;
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return idle;
}

void drxfs_sfile_forget(struct drxfs_sfile *e)
{
    if (!e)
        return;
    drxfs_commit_forget(e);
    __atomic_store_n(&e->queued, false, __ATOMIC_SEQ_CST);
    drxfs_sfile_put(e);
}

void drxfs_striped_shutdown(void)
{
    /* Every file is released before destroy; whatever is left (a killed
     * client) still gets its size recorded. */
    pthread_mutex_lock(&drxfs_stable.mutex);
    struct drxfs_sfile *e = drxfs_stable.head;
    drxfs_stable.head = NULL;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    while (e) {
        struct drxfs_sfile *next = e->next;
        sfile_close(e);
        e = next;
    }
}

/* The file's attributes: its metafile's inode (links, owner, mode, times),
 * the size of m (or of the handle), and the subfiles' blocks, so du and
 * tar -S see holes. */
static void fill_stat(struct stat *st, const struct stat *meta, const struct drx_stripe_meta *m,
                      uint64_t size)
{
    uint64_t blocks = 0;

    if (m)
        drx_stripe_blocks(drxfs.store, m, &blocks);
    *st = *meta;
    st->st_size = (off_t)size;
    st->st_blocks = (blkcnt_t)blocks;
    /* cp, cat, rsync size their buffers by st_blksize: 1 MiB buffers make
     * 1 MiB FUSE requests (reads through read-ahead, writes as written). */
    st->st_blksize = DRXFS_DATA_BLKSIZE;
    if (drxfs.ro)
        st->st_mode &= ~(mode_t)0222;
}

/* A change of the file's bytes or size: mtime and ctime marked for
 * update at this moment; the metafile is stamped later (stamp_if_dirty,
 * stamp_times), with this time. */
static void mark_changed(struct drxfs_sfile *e)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    int64_t old = __atomic_load_n(&e->mtime_ns, __ATOMIC_RELAXED);
    /* the latest of two writers' times, whichever stores last */
    while (old < ns && !__atomic_compare_exchange_n(&e->mtime_ns, &old, ns, false,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    __atomic_store_n(&e->dirty, true, __ATOMIC_RELEASE);
}

/* e->mtime_ns as a timespec. */
static struct timespec mtime_of(struct drxfs_sfile *e)
{
    int64_t ns = __atomic_load_n(&e->mtime_ns, __ATOMIC_RELAXED);
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

/* The metafile handle e holds (its file, whatever its name leads to now):
 * with tv (not NULL) its times set, then its stat in *st.  0, or -errno
 * (-ENOENT: none held).  Not by name: a handle still in the table whose
 * name another user renamed another file over behind the mount (root's
 * 0600 striped file over his own, open) put the times of his writes, or
 * those he set, on that file, as root. */
static int held_meta(struct drxfs_sfile *e, const struct timespec tv[2], struct stat *st)
{
    char self[32];
    int fd = drx_stripe_meta_dup(e->f), rc = 0;

    if (fd < 0)
        return -ENOENT;
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if ((tv && utimensat(AT_FDCWD, self, tv, 0) < 0) || fstat(fd, st) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* POSIX: a write marks mtime and ctime for update, and stat must show it.
 * Writes only set `dirty` (stamping the metafile per write would cost a
 * syscall each); a stat of a file with unstamped writes stamps it now and
 * returns the metafile's fresh times in *meta.  0 when nothing changed. */
static int stamp_if_dirty(struct drxfs_sfile *e, struct stat *meta)
{
    struct timespec now[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
    bool ours;
    int rc = 0;

    if (!__atomic_load_n(&e->dirty, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&e->times_lock);
    if (!__atomic_exchange_n(&e->dirty, false, __ATOMIC_ACQUIRE))
        goto out;
    now[1] = mtime_of(e); /* the change's, not the stat's */
    pthread_mutex_lock(&drxfs_stable.mutex);
    ours = !e->detached;
    /* written after the times a utimens set: a later commit must not put
     * them back over this stamp */
    e->keep_times = false;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (ours && held_meta(e, now, meta) == 0)
        rc = 1;
out:
    pthread_mutex_unlock(&e->times_lock);
    return rc;
}

/* The metafile of rel as it is in the store. */
static int stat_meta(const char *rel, struct drx_stripe_meta *m, struct drx_err *err)
{
    char path[PATH_MAX + 64];
    int rc, pin;

    if ((rc = store_path(path, rel, &pin)) < 0)
        return rc;
    /* a size another mount or process has not recorded yet: once it has
     * (a lookup's size is where O_APPEND writes) */
    (void)drx_stripe_wait_recorded(path);
    rc = drx_stripe_stat(drxfs.store, path, m, err);
    drxfs_unpin(pin);
    return rc;
}

int drxfs_striped_getattr(const struct drxfs_node *n, struct stat *st)
{
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    struct drxfs_sfile *e;
    uint64_t size = 0;
    const struct drx_stripe_meta *mp = NULL;
    struct stat meta = n->st;
    int rc;

    if ((e = sfile_find_ref(n->rel, &n->st))) {
        /* An open handle knows writes not yet recorded in the metafile. */
        drx_stripe_meta_get(e->f, &m);
        size = m.size;
        mp = &m;
        if (stamp_if_dirty(e, &meta)) {
            pthread_mutex_lock(&drxfs_stable.mutex);
            e->st = meta;
            pthread_mutex_unlock(&drxfs_stable.mutex);
        }
        drxfs_sfile_put(e);
    } else if ((rc = stat_meta(n->rel, &m, &err)) < 0) {
        if (rc == -ENOENT)
            return rc;
        /* A broken or hostile metafile: the name stays visible (so it can
         * be removed); opening it fails with EIO. */
        drxfs_striped_log_err("stat", n->rel, rc, &err);
    } else {
        size = m.size;
        mp = &m;
    }
    fill_stat(st, &meta, mp, size);
    return 0;
}

/* The metafile as a getattr by path sees it now (recording the size may
 * have replaced it since the open): the kernel drops a file's pages when
 * the mtime it is given changes, so both must say the same.  When its name
 * is gone (unlinked, through another mount too), the metafile the handle
 * holds; and when that too fails, false (then e->st stays).  Before
 * (until 2026-12-07) a file opened, not made, by this handle kept e->st
 * empty then: an open(O_CREAT) of a name another mount removed right
 * after failed with EIO (libfuse's create took mode 0 for no file). */
static bool meta_now(struct drxfs_sfile *e, struct stat *out)
{
    char rel[PATH_MAX];
    bool ours;
    int fd;

    pthread_mutex_lock(&drxfs_stable.mutex);
    ours = !e->detached && drxfs_rel_suffix(rel, e->key, DRXFS_NAFS) == 0;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (ours && drx_store_entry_stat(drxfs.store, rel, out) == 0)
        return true;
    if ((fd = drx_stripe_meta_dup(e->f)) < 0)
        return false;
    ours = fstat(fd, out) == 0;
    close(fd);
    return ours;
}

int drxfs_striped_fgetattr(struct drxfs_fh *fh, struct stat *st)
{
    struct stat meta, fresh;
    struct drx_stripe_meta m;
    /* just created: e->st is the metafile's stat of a moment ago */
    bool created = __atomic_load_n(&fh->created, __ATOMIC_RELAXED);
    bool stamped = stamp_if_dirty(fh->sf, &fresh) || (!created && meta_now(fh->sf, &fresh));
    /* The size another mount (another node) or drx-load recorded since:
     * the kernel asks this before it reads an open file again once its
     * attributes expired, and reads stop at the size given here.  Not
     * waited for while another process holds a size it has not recorded
     * (a writer still going on): its bytes show once recorded.  Before
     * (until 2026-12-07) only a new open or a stat by name reloaded it, and
     * `tail -f` of a file appended through another mount saw no new byte. */
    if (!created)
        (void)drx_stripe_reload_nowait(fh->sf->f);
    pthread_mutex_lock(&drxfs_stable.mutex);
    if (stamped)
        fh->sf->st = fresh;
    meta = fh->sf->st;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    drx_stripe_meta_get(fh->sf->f, &m);
    fill_stat(st, &meta, &m, m.size);
    return 0;
}

/* The entry a create just made, as libfuse asks for it right after (in
 * the same request): the metafile's stat the create took after its chown,
 * and no blocks while nothing is written (its subfiles are new, or
 * recycled ones, emptied), so nothing is stat'ed again. */
int drxfs_striped_fgetattr_new(struct drxfs_fh *fh, struct stat *st)
{
    struct stat meta;
    struct drx_stripe_meta m;

    if (stamp_if_dirty(fh->sf, &meta)) /* not after a create alone */
        return drxfs_striped_fgetattr(fh, st);
    pthread_mutex_lock(&drxfs_stable.mutex);
    meta = fh->sf->st;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    drx_stripe_meta_get(fh->sf->f, &m);
    fill_stat(st, &meta, m.size ? &m : NULL, m.size);
    return 0;
}

/* Remembers rel as a name e was opened by (stable.mutex held): best
 * effort, a name left out is only not invalidated by an append. */
static void s_add_name(struct drxfs_sfile *e, const char *rel)
{
    for (unsigned i = 0; i < e->nnames; i++)
        if (strcmp(e->names[i], rel) == 0)
            return;
    if (e->nnames == DRXFS_SFILE_NAMES)
        return;
    char **more = realloc(e->names, (e->nnames + 1) * sizeof(*more));
    if (!more)
        return;
    e->names = more;
    if ((more[e->nnames] = strdup(rel)))
        e->nnames++;
}

static int attach_fh(struct drxfs_sfile *e, const char *rel, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = calloc(1, sizeof(*fh));
    if (!fh)
        return -ENOMEM;
    fh->kind = DRXFS_STRIPED;
    fh->fd = -1;
    fh->sf = e;
    fi->fh = (uint64_t)(uintptr_t)fh;
    /* direct_io (default): one copy less each way for large transfers, and
     * nothing cached that another process could make stale.  Page-cache
     * mode (-o striped_io=cached): shared mmap works, small reads are served
     * by read-ahead; without keep_cache each open drops stale pages. */
    fi->direct_io = drxfs.striped_direct_io;
    fi->keep_cache = 0;
    pthread_mutex_lock(&drxfs_stable.mutex);
    s_opens_add(e, 1);
    s_add_name(e, rel);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return 0;
}

/* The handle of striped file node n for the caller, who wants every bit
 * of want (4 r, 2 w) of it; wr: a handle that writes.  The kernel checked
 * the file it holds under the name, which a user who may write the
 * directory can have renamed another user's metafile over since, behind
 * the mount (drxfs_plain.c says how).  So for a caller other than root
 * the metafile is the one the name leads him to now
 * (drxfs_caller_open_checked: its owner, mode and ACL), and the handle
 * serves that file: never another, and no check by name after (which
 * refused a user who may read both 27 opens in 1000 of a file that root
 * kept writing whole and renaming over it through another mount, and
 * after 16 tries still 1-2 in 1000 under load).  That file renamed over
 * meanwhile and its subfiles removed before the handle opened them
 * (15-20 reads in 4000 failed with EIO so) is taken anew from the name,
 * REACH_TRIES times.  -ESTALE when the name leads nowhere now: the kernel
 * walks it again. */
static int sfile_get_for_caller(const struct drxfs_node *n, bool wr, unsigned want,
                                struct drxfs_sfile **out)
{
    char mrel[PATH_MAX];
    struct stat meta = n->st, now;

    if (fuse_get_context()->uid == 0)
        return sfile_get(n->rel, &meta, -1, wr, out);
    if (drxfs_rel_suffix(mrel, n->rel, DRXFS_NAFS) < 0)
        return -ENAMETOOLONG;
    for (int tries = 1;; tries++) {
        int mfd = drxfs_caller_open_checked(mrel, S_IFREG, want, &meta);
        if (mfd < 0)
            return mfd == -ENOENT ? -ESTALE : mfd;
        int rc = sfile_get(n->rel, &meta, mfd, wr, out);
        bool gone = rc == 0 && tries < REACH_TRIES && drx_stripe_incomplete((*out)->f) &&
                    fstat(mfd, &now) == 0 && now.st_nlink == 0;
        close(mfd);
        if (!gone)
            return rc;
        drxfs_sfile_put(*out);
    }
}

int drxfs_striped_open(const struct drxfs_node *n, struct fuse_file_info *fi)
{
    struct drxfs_sfile *e;
    bool wr = (fi->flags & O_ACCMODE) != O_RDONLY;
    int rc;

    if (wr && drxfs.ro)
        return -EROFS;
    unsigned want = ((fi->flags & O_ACCMODE) != O_WRONLY ? 4 : 0) |
                    (wr || (fi->flags & O_TRUNC) ? 2 : 0);
    if ((rc = sfile_get_for_caller(n, wr, want, &e)) < 0)
        return rc;
    if (wr && (fi->flags & O_TRUNC) && (rc = drx_stripe_truncate(e->f, 0)) < 0) {
        drxfs_striped_log_err("truncate", n->rel, rc, NULL);
        drxfs_sfile_put(e);
        return rc;
    }
    if (wr && (fi->flags & O_TRUNC)) /* mtime and ctime, as open(2) says */
        mark_changed(e);
    if ((rc = attach_fh(e, n->rel, fi)) < 0)
        drxfs_sfile_put(e);
    return rc;
}

int drxfs_striped_create(const char *rel, mode_t mode, struct fuse_file_info *fi)
{
    char path[PATH_MAX + 64];
    struct drx_err err = {{0}};
    struct drxfs_sfile *e;
    int rc, pin;

    if ((rc = store_path(path, rel, &pin)) < 0)
        return rc;
    /* in the directory held (pin), checked as the caller's: one exchanged
     * behind the mount with root's got a user's new files */
    if ((rc = drxfs_caller_dir_may(pin, rel, NULL)) < 0) {
        drxfs_unpin(pin);
        return rc;
    }
    if (!(e = calloc(1, sizeof(*e))) || !(e->key = strdup(rel))) {
        free(e);
        drxfs_unpin(pin);
        return -ENOMEM;
    }
    e->pin = pin;
    pthread_mutex_init(&e->times_lock, NULL);
    /* libcore finds the layout by walking up the path it is given: not
     * through a directory's descriptor */
    struct drx_stripe_layout l;
    rc = pin < 0 ? 0 : drxfs_striped_layout_for(rel, &l);
    if (rc == 0)
        rc = drx_stripe_create(drxfs.store, path, pin < 0 ? NULL : &l, mode & 07777, &e->f, &err);
    if (rc < 0) {
        drxfs_unpin(pin);
        pthread_mutex_destroy(&e->times_lock);
        free(e->key);
        free(e);
        return drxfs_striped_log_err("create", rel, rc, &err);
    }
    drxfs_striped_chown_new(e->f, rel, mode);
    char meta[PATH_MAX];
    int mfd;
    /* removed at once through another mount: the metafile made, by the
     * handle's descriptor (an empty e->st is mode 0 to libfuse's getattr
     * right after, which failed the create with EIO) */
    if ((drxfs_rel_suffix(meta, rel, DRXFS_NAFS) < 0 ||
         drx_store_entry_stat(drxfs.store, meta, &e->st) < 0) &&
        (mfd = drx_stripe_meta_dup(e->f)) >= 0) {
        if (fstat(mfd, &e->st) < 0)
            memset(&e->st, 0, sizeof e->st);
        close(mfd);
    }
    if (!S_ISREG(e->st.st_mode)) { /* not even that: what the create made */
        const struct fuse_context *c = fuse_get_context();
        memset(&e->st, 0, sizeof e->st);
        e->st.st_mode = S_IFREG | (mode & 07777);
        e->st.st_nlink = 1;
        e->st.st_uid = c->uid;
        e->st.st_gid = c->gid;
        clock_gettime(CLOCK_REALTIME, &e->st.st_mtim);
        e->st.st_atim = e->st.st_ctim = e->st.st_mtim;
    }
    e->rw = true;
    e->refs = 1;
    pthread_mutex_lock(&drxfs_stable.mutex);
    struct drxfs_sfile *old = drxfs_sfile_find(rel);
    /* a stale entry of a file removed or renamed behind our back: found
     * by its file under its new name, if any (s_find_moved), with the size
     * it holds; taken for good, that name got a fresh handle, and an
     * append wrote over the file's first bytes */
    if (old) {
        s_detach(old);
        old->moved = true;
    }
    s_insert(&drxfs_stable.head, e);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if ((rc = attach_fh(e, rel, fi)) < 0)
        drxfs_sfile_put(e);
    else
        drxfs_fh_of(fi)->created = true;
    return rc;
}

/* The file's atime is its metafile's, which the daemon's own reads leave
 * alone (O_NOATIME).  A read of the file reads a byte of the metafile
 * without it, once per open, so the store's own atime rule (relatime,
 * strictatime, noatime) applies as it would to a local file. */
static void touch_atime(struct drxfs_sfile *e)
{
    char meta[PATH_MAX], c;
    int rc, fd;

    pthread_mutex_lock(&drxfs_stable.mutex);
    rc = e->detached ? -ENOENT : drxfs_rel_suffix(meta, e->key, DRXFS_NAFS);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (rc < 0 || (fd = drx_store_entry_open(drxfs.store, meta, O_RDONLY | O_NONBLOCK, 0)) < 0)
        return;
    if (read(fd, &c, 1) < 0)
        drx_log(DRX_LOG_DEBUG, "%s: atime: %s", meta, strerror(errno));
    close(fd);
}

int drxfs_striped_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off)
{
    if (!__atomic_exchange_n(&fh->read_seen, true, __ATOMIC_RELAXED))
        touch_atime(fh->sf);
    ssize_t n = drx_stripe_read(fh->sf->f, buf, size, (uint64_t)off);
    if (n < 0)
        drxfs_striped_log_err("read", fh->sf->key, (int)n, NULL);
    return (int)n;
}

/* Opens e's subfiles for write-behind (e->wb_busy held). */
static int wb_open(struct drxfs_sfile *e)
{
    struct drx_stripe_meta m;

    drx_stripe_meta_get(e->f, &m);
    if (!(e->wb_fds = malloc(m.layout.count * sizeof(*e->wb_fds))))
        return -ENOMEM;
    for (unsigned i = 0; i < m.layout.count; i++)
        e->wb_fds[i] = drx_stripe_subfile_open(drxfs.store, &m, i, O_RDONLY, 0, e->key);
    e->wb_n = m.layout.count;
    return 0;
}

/* Recording a grown size first syncs the subfiles (libcore does it every
 * DRX_STRIPE_PERSIST_BYTES of growth and at close), and a write that waits
 * for 64 MiB to reach the disk stalls the writer: cp through the mount
 * spent about half its time there.  So every DRXFS_WRITE_BEHIND bytes the
 * subfiles' writeback is started (sync_file_range, which does not wait for
 * it), and the sync finds most of the data on the disk already.  A hint
 * only: it changes nothing that is recorded. */
static void write_behind(struct drxfs_sfile *e, size_t n)
{
    if (__atomic_add_fetch(&e->wb_pending, n, __ATOMIC_RELAXED) < DRXFS_WRITE_BEHIND ||
        __atomic_exchange_n(&e->wb_busy, true, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&e->wb_pending, 0, __ATOMIC_RELAXED);
    if (e->wb_fds || wb_open(e) == 0)
        for (unsigned i = 0; i < e->wb_n; i++)
            if (e->wb_fds[i] >= 0)
                sync_file_range(e->wb_fds[i], 0, 0, SYNC_FILE_RANGE_WRITE);
    __atomic_store_n(&e->wb_busy, false, __ATOMIC_RELEASE);
}

/* After an append at `at` by fh, which the kernel asked at off: the
 * kernel's size of every other name of the file is behind now (each name
 * is its own kernel inode), and that of fh's own name too when off was
 * not the end (a write through another name since its size was taken; in
 * page-cache mode its pages then hold the bytes at off): their attributes
 * and pages are dropped, from the kernel cache's thread. */
static void appended(struct drxfs_fh *fh, uint64_t at, off_t off)
{
    struct drxfs_sfile *e = fh->sf;
    char *names[DRXFS_SFILE_NAMES];
    unsigned n = 0;

    if (!fh->kkey)
        return; /* no kernel cache records: nothing is kept a tick */
    pthread_mutex_lock(&drxfs_stable.mutex);
    for (unsigned i = 0; i < e->nnames; i++)
        if ((names[n] = strdup(e->names[i])))
            n++;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    for (unsigned i = 0; i < n; i++) {
        bool own = strcmp(names[i], fh->kkey) == 0;
        drxfs_kc_changed(names[i], own && at == (uint64_t)off ? fh->kpath : NULL);
        free(names[i]);
    }
}

int drxfs_striped_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off)
{
    uint64_t at = (uint64_t)off;
    bool append = __atomic_load_n(&fh->append, __ATOMIC_RELAXED);

    if (!fh->sf->rw)
        return -EBADF;
    /* O_APPEND: at the end as the daemon knows it, not at the kernel's
     * offset, which is the size of the name's own kernel inode: that of
     * another hard link's lags up to the entry timeout */
    ssize_t n = append ? drx_stripe_append(fh->sf->f, buf, size, &at)
                       : drx_stripe_write(fh->sf->f, buf, size, (uint64_t)off);
    if (n > 0) {
        mark_changed(fh->sf);
        write_behind(fh->sf, (size_t)n);
        if (append)
            appended(fh, at, off);
    }
    if (n < 0)
        drxfs_striped_log_err("write", fh->sf->key, (int)n, NULL);
    return (int)n;
}

int drxfs_striped_fallocate(struct drxfs_fh *fh, int mode, off_t off, off_t len)
{
    if (!fh->sf->rw)
        return -EBADF;
    int rc = drx_stripe_fallocate(fh->sf->f, mode, (uint64_t)off, (uint64_t)len);
    if (rc == 0) /* as ext4: KEEP_SIZE too moves mtime and ctime */
        mark_changed(fh->sf);
    return rc < 0 && rc != -EOPNOTSUPP ? drxfs_striped_log_err("fallocate", fh->sf->key, rc, NULL)
                                       : rc;
}

off_t drxfs_striped_lseek(struct drxfs_fh *fh, off_t off, int whence)
{
    if (off < 0)
        return -ENXIO;
    int64_t r = drx_stripe_seek(fh->sf->f, (uint64_t)off, whence);
    return (off_t)r;
}

/* The metafile as it was before a size is recorded into it. */
struct record_before {
    struct timespec mtime; /* its mtime then */
    struct timespec start; /* when the record began (the kernel's coarse clock) */
    dev_t dev;
    ino_t ino;
};

/* The metafile's mtime before a size is recorded into it, for
 * stamp_times: false when e has unstamped changes (their time is put
 * then) or its metafile cannot be seen. */
static bool mtime_before(struct drxfs_sfile *e, struct record_before *b)
{
    struct stat st;

    if (__atomic_load_n(&e->dirty, __ATOMIC_ACQUIRE))
        return false;
    pthread_mutex_lock(&drxfs_stable.mutex);
    bool ours = !e->detached;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (!ours || held_meta(e, NULL, &st) < 0)
        return false;
    b->mtime = st.st_mtim;
    b->dev = st.st_dev;
    b->ino = st.st_ino;
    clock_gettime(CLOCK_REALTIME_COARSE, &b->start);
    return true;
}

static bool ts_eq(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool ts_before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* Whether the metafile of stat st is the one b saw, rewritten in place
 * since: a record's pwrite gives mtime and ctime one time, no earlier
 * than its start.  A touch through another name or mount (its own mtime,
 * a later ctime) or a replaced metafile is not the record's, and stays.
 * Left: a touch to now in the record's window looks like it. */
static bool rewritten_by_record(const struct stat *st, const struct record_before *b)
{
    return st->st_dev == b->dev && st->st_ino == b->ino && ts_eq(st->st_mtim, st->st_ctim) &&
           !ts_before(st->st_mtim, b->start);
}

/* After the metafile may have been rewritten (a size recorded): changed
 * since the last stamp, its mtime is the last change's (mark_changed);
 * else the times a utimens set meanwhile are put back, or the mtime it
 * had before (before, NULL: unknown), when the rewrite moved them. */
static void stamp_times(struct drxfs_sfile *e, const struct record_before *before)
{
    struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
    bool dirty = __atomic_exchange_n(&e->dirty, false, __ATOMIC_ACQUIRE);
    struct stat st;

    pthread_mutex_lock(&drxfs_stable.mutex);
    bool ours = !e->detached;
    bool keep = e->keep_times && !dirty;
    dev_t dev = e->times_dev;
    ino_t ino = e->times_ino;
    if (keep)
        memcpy(tv, e->times, sizeof tv);
    else if (dirty)
        tv[1] = mtime_of(e); /* the last change's */
    else if (before)
        tv[1] = before->mtime; /* whoever set it: a touch through another name */
    e->keep_times = false;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (!ours || (!dirty && !keep && !before))
        return;
    if (!dirty && !keep &&
        (held_meta(e, NULL, &st) < 0 || ts_eq(st.st_mtim, tv[1]) ||
         !rewritten_by_record(&st, before)))
        return; /* not rewritten, or by someone else: no ctime change for nothing */
    if (keep && held_meta(e, NULL, &st) == 0) {
        /* rewritten in place: the atime is still the file's own, perhaps
         * moved by a read since the utimens; only the mtime moved */
        bool same = st.st_dev == dev && st.st_ino == ino;
        if (same)
            tv[0].tv_nsec = UTIME_OMIT;
        if (same && st.st_mtim.tv_sec == tv[1].tv_sec && st.st_mtim.tv_nsec == tv[1].tv_nsec)
            return; /* not rewritten: no ctime change for nothing */
    }
    (void)held_meta(e, tv, &st);
}

int drxfs_sfile_flush(struct drxfs_sfile *e)
{
    struct record_before before;
    pthread_mutex_lock(&e->times_lock);
    bool known = mtime_before(e, &before);
    int rc = drx_stripe_flush(e->f);
    if (rc == 0)
        stamp_times(e, known ? &before : NULL);
    pthread_mutex_unlock(&e->times_lock);
    return rc < 0 ? drxfs_striped_log_err("flush", e->key, rc, NULL) : 0;
}

/* The batched commit's flush: a file whose lock another process holds
 * (anyone who may read a subfile can take it and keep it) is put back for
 * the next round (-EAGAIN, commit_again) rather than waited for, so that
 * it holds up no other file's size (a legitimate holder keeps it for
 * milliseconds); the next round (again), after the other files, and the
 * last, at unmount, record it without the lock, as a close does after
 * its 1 s. */
static int sfile_commit_flush(struct drxfs_sfile *e, bool again)
{
    struct record_before before;
    pthread_mutex_lock(&e->times_lock);
    bool known = mtime_before(e, &before);
    int rc = drx_stripe_flush_try(e->f, again || drxfs_commit_stopping());
    if (rc == 0)
        stamp_times(e, known ? &before : NULL);
    pthread_mutex_unlock(&e->times_lock);
    if (rc == -EAGAIN)
        return rc; /* logged by the commit, with the count */
    return rc < 0 ? drxfs_striped_log_err("flush", e->key, rc, NULL) : 0;
}

/* The batched commit (drxfs_commit.c) holds a reference of a file until
 * it has recorded its size: marked before the batch's one sync of the
 * store, recorded after it without syncs of its own (unless written since
 * the mark). */
static void sfile_mark_cb(void *obj)
{
    struct drxfs_sfile *e = obj;
    e->commit_gen = drx_stripe_sync_mark(e->f);
}

static int sfile_commit_cb(void *obj, bool synced, bool again)
{
    struct drxfs_sfile *e = obj;
    /* A subfile's write-back error makes this flush fail (logged there),
     * as its fdatasync would. */
    if (synced)
        drx_stripe_synced(e->f, e->commit_gen);
    /* before the flush: a release seeing it still set leaves the size to
     * this flush, which then records all that release's handle wrote */
    __atomic_store_n(&e->queued, false, __ATOMIC_SEQ_CST);
    int rc = sfile_commit_flush(e, again);
    if (rc == -EAGAIN) /* put back: still queued, no second item */
        __atomic_store_n(&e->queued, true, __ATOMIC_SEQ_CST);
    return rc;
}

static void sfile_put_cb(void *obj)
{
    drxfs_sfile_put(obj);
}

static const struct drxfs_commit_ops sfile_commit_ops = {
    .mark = sfile_mark_cb,
    .commit = sfile_commit_cb,
    .release = sfile_put_cb,
};

int drxfs_striped_sync_store(void)
{
    return drx_stripe_sync_store(drxfs.store);
}

/* With a commit interval, a close hands the file to the commit here, at
 * its FLUSH, which close(2) waits for: the RELEASE comes after close(2)
 * has returned, and a process acting right after the close (another
 * mount's truncate or append, drx) must find the pending mark already
 * set (drx_stripe_hold_pending).  The commit records the size within the
 * interval even if the file stays open (a child closed its copy of the
 * descriptor), so the mark never outlives it by more. */
int drxfs_striped_flush(struct drxfs_fh *fh)
{
    struct drxfs_sfile *e = fh->sf;
    struct stat meta;

    if (!e->rw)
        return 0;
    /* The times of the writes, on the metafile before close(2) returns,
     * whatever the commit does with the size: another mount (another
     * node) shows the file's mtime from there, and its kernel drops the
     * pages of its open descriptors when that mtime moves.  Left to the
     * commit, a same-size overwrite showed the old mtime there for the
     * commit interval, and its open descriptors read the old bytes. */
    (void)stamp_if_dirty(e, &meta);
    if (!drxfs_commit_active())
        return drxfs_sfile_flush(e);
    if (!drx_stripe_hold_pending(e->f) || __atomic_exchange_n(&e->queued, true, __ATOMIC_SEQ_CST))
        return 0;
    pthread_mutex_lock(&drxfs_stable.mutex);
    e->refs++; /* the commit's */
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (drxfs_commit_defer(e, &sfile_commit_ops))
        return 0;
    /* the queue is full: recorded now, as without a commit interval */
    __atomic_store_n(&e->queued, false, __ATOMIC_SEQ_CST);
    drxfs_sfile_put(e); /* not the last: fh holds one */
    return drxfs_sfile_flush(e);
}

static int sfile_fsync(struct drxfs_sfile *e, bool datasync)
{
    struct record_before before;
    pthread_mutex_lock(&e->times_lock);
    bool known = mtime_before(e, &before);
    int rc = drx_stripe_fsync(e->f, datasync);
    if (rc == 0)
        stamp_times(e, known ? &before : NULL);
    pthread_mutex_unlock(&e->times_lock);
    return rc < 0 ? drxfs_striped_log_err("fsync", e->key, rc, NULL) : 0;
}

int drxfs_striped_fsync(struct drxfs_fh *fh, int datasync)
{
    return fh->sf->rw ? sfile_fsync(fh->sf, datasync != 0) : 0;
}

void drxfs_striped_commit_open(void)
{
    struct drxfs_sfile **open = NULL;
    size_t n = 0, cap = 0;

    pthread_mutex_lock(&drxfs_stable.mutex);
    for (struct drxfs_sfile *e = drxfs_stable.head; e; e = e->next) {
        if (!e->rw || !e->opens)
            continue;
        if (n == cap) {
            size_t more = cap ? 2 * cap : 16;
            struct drxfs_sfile **grown = realloc(open, more * sizeof(*grown));
            if (!grown)
                break; /* the rest at their close */
            open = grown;
            cap = more;
        }
        e->refs++;
        open[n++] = e;
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
    for (size_t i = 0; i < n; i++) {
        sfile_fsync(open[i], true);
        drxfs_sfile_put(open[i]);
    }
    free(open);
}

bool drxfs_striped_is_open(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    /* a handle out of the table may be that file: cannot tell */
    bool open = drxfs_stable.ndetached > 0;
    for (struct drxfs_sfile *e = drxfs_stable.head; e && !open; e = e->next)
        open = e->opens && e->st.st_dev == dev && e->st.st_ino == ino;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return open;
}

void drxfs_striped_ino(const struct drxfs_fh *fh, dev_t *dev, ino_t *ino)
{
    *dev = fh->sf->st.st_dev;
    *ino = fh->sf->st.st_ino;
}

void drxfs_striped_release(struct drxfs_fh *fh)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    s_opens_add(fh->sf, -1);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    /* with a commit interval, the commit takes this reference; until it
     * records the size, other processes wait for it rather than take the
     * recorded one (drx_stripe_hold_pending; before the hand-over, so
     * that no moment is left unsaid) */
    if (fh->sf->rw && drxfs_commit_active())
        drx_stripe_hold_pending(fh->sf->f);
    /* the flush of the close before handed it over already (with its own
     * reference), unless written since that was committed */
    if (!fh->sf->rw || __atomic_load_n(&fh->sf->queued, __ATOMIC_SEQ_CST) ||
        !drxfs_commit_defer(fh->sf, &sfile_commit_ops))
        drxfs_sfile_put(fh->sf);
    free(fh);
}

int drxfs_striped_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    struct drxfs_sfile *e;
    int rc;

    if (size < 0)
        return -EINVAL;
    if (fh) {
        if (!fh->sf->rw)
            return fh->sf->ro_rc;
        rc = drx_stripe_truncate(fh->sf->f, (uint64_t)size);
        if (rc < 0) /* a failed truncate changes no time */
            return drxfs_striped_log_err("truncate", fh->sf->key, rc, NULL);
        mark_changed(fh->sf);
        return 0;
    }
    if ((rc = sfile_get_for_caller(n, true, 2, &e)) < 0)
        return rc;
    rc = drx_stripe_truncate(e->f, (uint64_t)size);
    if (rc < 0)
        drxfs_striped_log_err("truncate", n->rel, rc, NULL);
    else /* truncate(2) marks mtime and ctime, whether the size changed or not */
        mark_changed(e);
    drxfs_sfile_flush(e);
    drxfs_sfile_put(e);
    return rc;
}

struct drxfs_sfile *drxfs_striped_fd_target(const struct drxfs_node *n)
{
    struct drxfs_sfile *found = NULL;
    unsigned count = 0;

    /* every open file of the node was opened by its name (a rename
     * through the mount moves the table's key with libfuse's path);
     * handles out of the table keep the name they had */
    pthread_mutex_lock(&drxfs_stable.mutex);
    for (int l = 0; l < 2; l++)
        for (struct drxfs_sfile *e = l ? drxfs_stable.detached : drxfs_stable.head; e; e = e->next)
            if (e->opens && strcmp(e->key, n->rel) == 0) {
                found = e;
                count++;
            }
    /* the name's own file: by the name is the same */
    if (count != 1 || drx_stripe_meta_is(found->f, &n->st))
        found = NULL;
    else
        found->refs++;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (found && drxfs_caller_by_fd() != 1) {
        drxfs_sfile_put(found);
        found = NULL;
    }
    return found;
}

int drxfs_striped_meta_rel(const struct drxfs_node *n, struct drxfs_fh *fh, char *out, char *key)
{
    int rc = 0;

    if (n) {
        snprintf(key, PATH_MAX, "%s", n->rel);
    } else {
        /* a rename of a directory above replaces the key meanwhile */
        pthread_mutex_lock(&drxfs_stable.mutex);
        if (fh->sf->detached)
            rc = -ENOENT;
        else if ((size_t)snprintf(key, PATH_MAX, "%s", fh->sf->key) >= PATH_MAX)
            rc = -ENAMETOOLONG;
        pthread_mutex_unlock(&drxfs_stable.mutex);
    }
    return rc < 0 ? rc : drxfs_rel_suffix(out, key, DRXFS_NAFS);
}

/* The times a utimens set on e's metafile (of stat st now), put back
 * after a size recorded later rewrites it (stamp_times); e->times_lock
 * held. */
static void keep_times(struct drxfs_sfile *e, const struct stat *st)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    e->times[0] = st->st_atim;
    e->times[1] = st->st_mtim;
    e->times_dev = st->st_dev;
    e->times_ino = st->st_ino;
    e->keep_times = true;
    pthread_mutex_unlock(&drxfs_stable.mutex);
}

int drxfs_sfile_held_fd(struct drxfs_sfile *e, struct stat *st)
{
    int fd = drx_stripe_meta_dup(e->f);

    if (fd < 0)
        return -ENOENT;
    if (fstat(fd, st) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* utimens of open file e on the metafile it holds: 1 when it holds none
 * (by the name then), else 0 or -errno. */
static int held_utimens(struct drxfs_sfile *e, const struct timespec tv[2])
{
    struct stat st;
    char self[32];
    int fd = drxfs_sfile_held_fd(e, &st), rc;

    if (fd < 0)
        return fd == -ENOENT ? 1 : fd;
    if ((rc = drxfs_held_times(fd, &st, tv, e->key)) < 0)
        goto out;
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    pthread_mutex_lock(&e->times_lock);
    /* written bytes get the times set now, not those of a later flush */
    __atomic_store_n(&e->dirty, false, __ATOMIC_RELAXED);
    rc = utimensat(AT_FDCWD, self, tv, 0) < 0 ? -errno : 0;
    if (rc == 0 && e->rw && fstat(fd, &st) == 0)
        keep_times(e, &st);
    pthread_mutex_unlock(&e->times_lock);
out:
    close(fd);
    return rc;
}

int drxfs_striped_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                          const struct timespec tv[2])
{
    char meta[PATH_MAX], key[PATH_MAX];
    struct drxfs_sfile *e = NULL;
    int rc;

    /* an open file's (futimens), which its name may no longer lead to */
    if (fh) {
        pthread_mutex_lock(&drxfs_stable.mutex);
        (e = fh->sf)->refs++;
        pthread_mutex_unlock(&drxfs_stable.mutex);
    } else {
        e = drxfs_striped_fd_target(n);
    }
    if (e) {
        rc = held_utimens(e, tv);
        drxfs_sfile_put(e);
        if (rc != 1)
            return rc;
    }
    if ((rc = drxfs_striped_meta_rel(n, fh, meta, key)) < 0)
        return rc;
    pthread_mutex_lock(&drxfs_stable.mutex);
    e = drxfs_sfile_find(key);
    if (e)
        e->refs++;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    if (e)
        pthread_mutex_lock(&e->times_lock);
    /* written bytes get the times set now, not those of a later flush */
    if (e)
        __atomic_store_n(&e->dirty, false, __ATOMIC_RELAXED);
    drxfs_guard_times(tv);
    rc = drx_store_entry_utimens(drxfs.store, meta, tv);
    drxfs_guard_done();
    /* A size waiting to be recorded (batched commit) is recorded later,
     * rewriting the metafile: the times set now are put back then
     * (stamp_times), rather than the size recorded now with its syncs.
     * Not those of another file renamed over the name behind the mount,
     * which the handle's metafile is not. */
    struct stat st;
    if (e && e->rw && rc == 0 && drx_store_entry_stat(drxfs.store, meta, &st) == 0 &&
        drx_stripe_meta_is(e->f, &st))
        keep_times(e, &st);
    if (e) {
        pthread_mutex_unlock(&e->times_lock);
        drxfs_sfile_put(e);
    }
    return rc;
}
