/* The FUSE operations on attributes, open files and extended attributes:
 * directories, plain files and symlinks of the store are passed through
 * (relative to the store's root descriptor); array and striped-file nodes
 * go to drxfs_array*.c and drxfs_striped*.c.  Names (create, remove, rename)
 * and directory listings are in drxfs_names.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

/* ---- attributes ---- */

/* st_ino of an array's or view's directory or file, which has no store
 * inode of its own: a hash of its mount path, with the top bit set (far
 * from a store's inode numbers), the same for stat and fstat. */
ino_t drxfs_virtual_ino(const char *dir, const char *name)
{
    uint64_t h = 0xcbf29ce484222325u;

    for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    if (name) {
        if (strcmp(dir, "/") != 0)
            h = (h ^ '/') * 0x100000001b3u;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            h = (h ^ *p) * 0x100000001b3u;
    }
    return (ino_t)(h | (uint64_t)1 << 63);
}

/* Files whose attributes and pages the kernel may cache (drxfs_kcache.c). */
static bool kc_kind(enum drxfs_kind k)
{
    return k == DRXFS_PLAIN || k == DRXFS_STRIPED || (drxfs_is_array_kind(k) && k != DRXFS_ARRAY);
}

/* What files opened earlier must keep reading, as a number (0: not
 * known): a view's shape follows from the .xmd; a striped file is its
 * handle (a new one when another file was put in its place: known only
 * to an open file, fh), a plain file its inode. */
static uint64_t kc_shape(enum drxfs_kind kind, const char *rel, const struct drxfs_fh *fh)
{
    char xmd[PATH_MAX];
    struct stat st;

    if (drxfs_is_array_kind(kind))
        return drxfs_rel_suffix(xmd, rel, DRXFS_XMD) == 0 &&
                       drx_store_entry_stat(drxfs.store, xmd, &st) == 0
                   ? drxfs_kc_sig(0, &st)
                   : 0;
    if (kind == DRXFS_STRIPED)
        return fh ? (uint64_t)(uintptr_t)fh->sf : 0;
    if (kind == DRXFS_PLAIN && (fh ? fstat(fh->fd, &st) : drx_store_entry_stat(drxfs.store, rel, &st)) == 0)
        return (uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 40);
    return 0;
}

/* The attributes of an open file; 1 when the path must be resolved. */
static int fh_getattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
    int rc;

    /* the file a create opened, whatever its name holds a moment later
     * (removed or made again through another mount: libfuse failed the
     * create, ENOENT, or gave the kernel another file's attributes) */
    bool by_create = __atomic_exchange_n(&fh->by_create, false, __ATOMIC_RELAXED);
    if (!ops->fgetattr || (rc = ops->fgetattr(fh, by_create ? NULL : path, st)) == 1)
        return 1;
    if (rc == DRXFS_FGETATTR_NEW) {
        /* the entry a create just made: unseen, as at its open */
        if (fh->kpath)
            drxfs_kc_seen(fh->kkey, path, 0, DRXFS_KC_OWN);
        return 0;
    }
    if (rc == 0 && fh->kpath) {
        uint64_t sig = drxfs_kc_sig_of(fh->kind, fh->kkey, st);
        /* a file of an older shape answers its own size, not the store's
         * now: the next open must not take what the kernel holds for it */
        if (drxfs_is_array_kind(fh->kind) && fh->kshape &&
            kc_shape(fh->kind, fh->kkey, NULL) != fh->kshape) {
            sig = 0;
            /* nor may a stat take it from the kernel's cache: it is the
             * path's size for whoever holds this file, and only while he
             * does (drxfs_kc_own_size); once he closed it, the current
             * one (the kernel kept it up to two clock ticks, past the
             * close: 18 of 250 stats right after it) */
            drxfs_reply_expires();
        }
        drxfs_kc_seen(fh->kkey, path ? path : fh->kpath, sig, DRXFS_KC_OWN);
    }
    return rc;
}

int drxfs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    int rc;

    drxfs_kc_first_request();
    if ((rc = drxfs_killpriv_getattr(fh, path)) < 0) /* after chown(file, -1, -1) */
        return rc;
    if (fh && (rc = fh_getattr(fh, path, st)) != 1)
        return rc;
    /* A name the kernel holds that the store no longer has (removed
     * through another mount): ESTALE once (drxfs_gone), on which stat(2)
     * and access(2) look the name up again; ENOENT left the kernel's
     * entry, and an rmdir of the name said ENOTDIR from it.  Not within
     * a LOOKUP (a gone name is a negative entry there) nor libfuse's own
     * getattr after a creation, whose callers retry nothing. */
    if (!(n = drxfs_node_get_memo(path, true, &rc))) {
        uint32_t op = drxfs_order_opcode();
        return !fi && (op == FUSE_GETATTR || op == FUSE_ACCESS) ? drxfs_gone(path, rc) : rc;
    }
    /* the lookups of a caller other than root: the name resolved as root
     * is one he reaches (drxfs_node_reached); resolved again when it
     * holds another file by then (an attribute set replaces an array's
     * .xmd: a user who may read the array was refused a stat, EACCES, a
     * few times in a thousand with a setter in a loop) */
    for (int tries = 1; (rc = drxfs_node_reached(n)) == -ESTALE && tries < REACH_TRIES; tries++) {
        free(n);
        if (!(n = drxfs_node_get(path, &rc)))
            return rc;
    }
    if (rc < 0) {
        if (rc == -ESTALE) {
            drx_log_ratelimited(DRX_LOG_WARNING,
                                "%s: replaced behind the mount, again and again, as the caller "
                                "(uid %u) looked: refused",
                                n->rel, (unsigned)fuse_get_context()->uid);
            rc = -EACCES;
        }
        free(n);
        return rc;
    }
    /* An open file whose name holds another type now (replaced through
     * another mount): the kernel, given that type for the inode of the
     * file, failed every later fstat, read, write and the close with EIO.
     * Its handle's own attributes (what the descriptor reads), or ESTALE,
     * as NFS says of a file another client removed. */
    if (fh && n->kind != DRXFS_ZARR && drxfs_node_type(n) != S_IFREG) {
        const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
        free(n);
        return ops->fgetattr && (rc = ops->fgetattr(fh, NULL, st)) != 1 ? rc : -ESTALE;
    }
    bool kc = kc_kind(n->kind) && drxfs_kc_active();
    /* an array's signature taken before its attributes, never newer than
     * what the kernel is given: an extension between them leaves it
     * older, and the next open invalidates what the kernel holds */
    uint64_t sig = kc && drxfs_is_array_kind(n->kind) ? drxfs_kc_sig_of(n->kind, n->rel, NULL) : 0;
    rc = drxfs_ops_of(n->kind)->getattr(n, path, st);
    if (rc == 0 && kc) {
        uint64_t shape = drxfs_kc_nopen(n->rel, path) ? kc_shape(n->kind, n->rel, NULL) : 0;
        /* a process holding the path open on an older shape of the view
         * (and not on this one) is shown its file's size, as its reads
         * and lseek get (numpy sizes a file by fstat) */
        off_t own = drxfs_is_array_kind(n->kind) ? drxfs_kc_own_size(n->rel, path, shape) : -1;
        if (own >= 0) {
            st->st_size = own;
            st->st_blocks = (blkcnt_t)((own + 511) / 512);
        }
        if (!drxfs_is_array_kind(n->kind))
            sig = drxfs_kc_sig_of(n->kind, n->rel, st);
        drxfs_kc_seen(n->rel, path, sig, shape);
    }
    /* by path: the kernel holds an inode of the type it was last told.
     * Not within a LOOKUP: the kernel compares the type of an entry it
     * looks up again with the inode it holds by itself (and then looks the
     * name up afresh), and a fresh lookup's error is the caller's: mkdir or
     * symlink of a name another mount had made anew as another type
     * failed with ESTALE (the creation's lookup is not retried; found by
     * the two-mount exerciser) */
    if (rc == 0 && !fi && path && (rc = drxfs_type_told(path, st->st_mode)) < 0 &&
        drxfs_order_opcode() == FUSE_LOOKUP)
        rc = 0;
    free(n);
    return rc;
}

/* access(2), faccessat, test -x, which, find -executable.  Asked only
 * without default_permissions (with it the kernel checks by itself and
 * never asks): the answer the kernel would give from the attributes
 * getattr shows, for the caller.  Before (up to 2026-12-06) there was no
 * access operation, the kernel took ENOSYS for "allowed", and a 0644 file
 * was executable to test -x and which (exec then failed). */
int drxfs_op_access(const char *path, int mask)
{
    const struct fuse_context *c = fuse_get_context();
    struct stat st;
    int rc;

    if ((rc = drxfs_op_getattr(path, &st, NULL)) < 0 || mask == F_OK)
        return rc;
    /* a read-only mount, or a store whose file system went read-only
     * (errors=remount-ro), where writes say EROFS: so does test -w */
    struct statvfs sv;
    if ((mask & W_OK) &&
        (drxfs.ro || (fstatvfs(drxfs.root_fd, &sv) == 0 && (sv.f_flag & ST_RDONLY))) &&
        (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
        return -EROFS;
    if (c->uid == 0) {
        /* root reads and writes anything; executes a file only when one
         * of its x bits is set (a directory is always searched) */
        if ((mask & X_OK) && !S_ISDIR(st.st_mode) && !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
            return -EACCES;
        return 0;
    }
    mode_t bits;
    if (c->uid == st.st_uid)
        bits = (st.st_mode >> 6) & 7;
    else if (drxfs_caller_in_group(st.st_gid)) /* drxfs_acl.c */
        bits = (st.st_mode >> 3) & 7;
    else
        bits = st.st_mode & 7;
    return (mask & (R_OK | W_OK | X_OK) & ~bits) ? -EACCES : 0;
}

int drxfs_op_readlink(const char *path, char *buf, size_t size)
{
    struct drxfs_node *n;
    int rc;

    if (size == 0)
        return -EINVAL;
    /* gone (removed through another mount): ESTALE once, as getattr */
    if (!(n = drxfs_node_get(path, &rc)))
        return drxfs_gone(path, rc);
    if (n->kind != DRXFS_LINK) {
        /* the kernel asks only of what it holds as a symlink: replaced
         * behind the mount (drxfs_types.c) */
        rc = drxfs_stale_once(path, -EINVAL);
    } else {
        ssize_t len = drx_store_entry_readlink(drxfs.store, n->rel, buf, size - 1);
        if (len < 0) {
            rc = (int)len;
        } else {
            buf[len] = '\0';
            rc = 0;
        }
    }
    free(n);
    return rc;
}

/* chmod, chown, utimens, truncate: of an open file when libfuse gives one
 * (1 from the kind: by its path after all), else of the node at path. */
enum attr_op { A_CHMOD, A_CHOWN, A_UTIMENS, A_TRUNCATE };
struct attr_args {
    enum attr_op op;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    const struct timespec *tv;
    off_t size;
};

static int attr_call(const struct drxfs_kind_ops *ops, const struct drxfs_node *n,
                     struct drxfs_fh *fh, const struct attr_args *a)
{
    switch (a->op) {
    case A_CHMOD:
        return ops->chmod(n, fh, a->mode);
    case A_CHOWN:
        return ops->chown(n, fh, a->uid, a->gid);
    case A_UTIMENS:
        return ops->utimens(n, fh, a->tv);
    default:
        return ops->truncate(n, fh, a->size);
    }
}

static int attr_change(const char *path, struct fuse_file_info *fi, const struct attr_args *a)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    struct stat before; /* a flagged chown's file, whose group it changes */
    bool chown_kill;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (fh && a->op == A_TRUNCATE)
        drxfs_killpriv_truncate(NULL, fh, path);
    chown_kill = fh && a->op == A_CHOWN && drxfs_killpriv_chown_before(NULL, fh, path, &before);
    if (fh && (rc = attr_call(drxfs_ops_of(fh->kind), NULL, fh, a)) != 1) {
        if (rc == 0 && chown_kill)
            drxfs_killpriv_chown(NULL, fh, path, &before);
        return rc;
    }
    if (!(n = drxfs_node_get_memo(path, false, &rc)))
        return fh ? rc : drxfs_gone(path, rc);
    if (!fh && a->op == A_TRUNCATE)
        drxfs_killpriv_truncate(n, NULL, path);
    chown_kill = a->op == A_CHOWN && drxfs_killpriv_chown_before(n, NULL, path, &before);
    rc = attr_call(drxfs_ops_of(n->kind), n, NULL, a);
    if (rc == 0 && chown_kill)
        drxfs_killpriv_chown(n, NULL, path, &before);
    if (rc == 0)
        drxfs_node_memo_of(path, n);
    free(n);
    return rc;
}

int drxfs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    const struct attr_args a = {.op = A_CHMOD, .mode = mode};
    return attr_change(path, fi, &a);
}

int drxfs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    const struct attr_args a = {.op = A_CHOWN, .uid = uid, .gid = gid};
    return attr_change(path, fi, &a);
}

int drxfs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    const struct attr_args a = {.op = A_UTIMENS, .tv = tv};
    return attr_change(path, fi, &a);
}

int drxfs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    const struct attr_args a = {.op = A_TRUNCATE, .size = size};
    return attr_change(path, fi, &a);
}

/* ---- files ---- */

/* The mount path and store object of an open file, for the kernel cache's
 * records (drxfs_kc_*): 0, or -1 when out of memory (not recorded). */
static int kc_names(struct drxfs_fh *fh, const char *path, const char *rel)
{
    if ((fh->kpath = strdup(path)) && (fh->kkey = strdup(rel)))
        return 0;
    free(fh->kpath);
    fh->kpath = NULL;
    return -1;
}

/* A file was opened: may the kernel keep the pages of earlier opens?
 * Only when what it showed then is what it shows now. */
static void open_cache(const char *path, enum drxfs_kind kind, const char *rel,
                       struct fuse_file_info *fi, uint64_t shape, uint64_t sig0)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    struct stat st;
    const struct stat *rep = NULL;

    fi->keep_cache = 0;
    if (!drxfs_kc_active() || !kc_kind(kind) || kc_names(fh, path, rel) < 0)
        return;
    if (fi->direct_io)
        return; /* no pages; writes still tell the other views */
    if (kind == DRXFS_STRIPED && drxfs_striped_fgetattr(fh, &st) == 0)
        rep = &st;
    if (!drxfs_is_array_kind(kind))
        shape = kc_shape(kind, rel, fh);
    uint64_t sig = drxfs_kc_sig_of(kind, rel, rep);
    /* an array changed while the open resolved its view: what the kernel
     * holds is not to be trusted (0 invalidates it) */
    if (drxfs_is_array_kind(kind) && sig != sig0)
        sig = 0;
    /* an array file's size is its view's as opened, whatever comes after */
    struct drxfs_kc_opener who = {fh, -1};
    if (drxfs_is_array_kind(kind) && drxfs_array_fgetattr(fh, &st) == 0)
        who.size = st.st_size;
    int rc = drxfs_kc_open(rel, path, sig, drxfs_kc_page_sig(kind, rel, sig), shape, &who);
    fh->kshape = shape;
    fi->keep_cache = rc == 1;
    fh->kcounted = rc >= 0;
    if (rc == -1)
        fi->direct_io = 1;
}

/* An open of path by who succeeded (rc 0): its handle is charged what it
 * keeps, and released again (-ENOMEM) when who holds his share of the
 * memory of files made at open; else the descriptor drxfs_share_take
 * charged is given back. */
static int share_charge(const char *path, struct fuse_file_info *fi, uid_t who, int rc)
{
    if (rc < 0) {
        drxfs_share_give(who, 1, 0);
        return rc;
    }
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    fh->share_uid = who;
    fh->share_cost = drxfs_share_cost(fh);
    drxfs_share_add(who, fh->share_cost - 1);
    if ((rc = drxfs_share_hold(who, fh->text_len)) < 0) {
        drxfs_op_release(path, fi);
        return rc;
    }
    fh->share_bytes = fh->text_len;
    return 0;
}

/* The paths an open answered ESTALE for lately, each with the thread it
 * was said to (a hash of both and the time, a slot per hash): the kernel
 * retries such an open once, after a fresh lookup, and the retry of one
 * that is still gone is ENOENT, never a second ESTALE the caller would see
 * (a name made and removed again and again through another mount
 * meanwhile; found by the review of 2026-12-06).  A create of the name,
 * or an open of it that succeeds, ends the retry: the slot is cleared, or
 * the caller's next open of the name within the window that met a stale
 * entry again got ENOENT (open(O_CREAT) of SQLite's journal through two
 * mounts, whose retry is a CREATE: "unable to open database file", 1 run
 * in 15 of locks.bats; every second time in a loop of the same steps).  A
 * lookup that finds the name gone does not end it: the kernel may look the
 * name up once more, find it made again, and retry the OPEN. */
#define STALE_SLOTS 64
#define STALE_RETRY_NS 200000000LL
static struct {
    pthread_mutex_t mutex;
    unsigned armed; /* slots in use: most lookups find none and skip the lock */
    struct {
        uint64_t hash;
        long long ns;
    } slot[STALE_SLOTS];
} stale = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* The slot key of path for the request's thread (never 0). */
static uint64_t stale_key(const char *path)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = path; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    h = (h ^ (uint64_t)(uint32_t)fuse_get_context()->pid) * 1099511628211ULL;
    return h ? h : 1;
}

/* Set while a create opens the name it found: no ESTALE then. */
static __thread bool stale_off;

int drxfs_stale_once(const char *path, int err)
{
    if (stale_off)
        return err;
    uint64_t h = stale_key(path);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
    pthread_mutex_lock(&stale.mutex);
    unsigned i = (unsigned)(h % STALE_SLOTS);
    bool retry = stale.slot[i].hash == h && now - stale.slot[i].ns < STALE_RETRY_NS;
    if (retry)
        __atomic_sub_fetch(&stale.armed, 1, __ATOMIC_RELAXED);
    else if (stale.slot[i].hash == 0)
        __atomic_add_fetch(&stale.armed, 1, __ATOMIC_RELAXED);
    stale.slot[i].hash = retry ? 0 : h;
    stale.slot[i].ns = now;
    pthread_mutex_unlock(&stale.mutex);
    return retry ? err : -ESTALE;
}

void drxfs_stale_done(const char *path)
{
    if (!__atomic_load_n(&stale.armed, __ATOMIC_RELAXED))
        return;
    uint64_t h = stale_key(path);
    unsigned i = (unsigned)(h % STALE_SLOTS);
    pthread_mutex_lock(&stale.mutex);
    if (stale.slot[i].hash == h) {
        stale.slot[i].hash = 0;
        __atomic_sub_fetch(&stale.armed, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&stale.mutex);
}

int drxfs_gone(const char *path, int rc)
{
    return rc == -ENOENT ? drxfs_stale_once(path, rc) : rc;
}

int drxfs_op_open(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_node *n;
    uid_t who;
    int rc;

    if (drxfs.ro && (fi->flags & O_ACCMODE) != O_RDONLY)
        return -EROFS;
    /* A name the kernel still holds (its entry timeout) that is gone from
     * the store (removed through another mount, or behind this one):
     * ESTALE makes the kernel look the name up again and retry the open
     * once, as NFS's does, so that open(O_CREAT) makes the file and a
     * plain open says ENOENT (drxfs_stale_once: the retry never ESTALE).  ENOENT here failed open(O_CREAT) of a
     * name another mount had just removed (SQLite's journal through two
     * mounts: "unable to open database file"). */
    if (!(n = drxfs_node_get(path, &rc)))
        return rc == -ENOENT ? drxfs_stale_once(path, -ENOENT) : rc;
    /* The kernel sends OPEN for what it holds as a file: a directory here
     * replaced that file behind the mount (drxfs_types.c) */
    if (n->kind == DRXFS_DIR || n->kind == DRXFS_ARRAY) {
        free(n);
        return drxfs_stale_once(path, -EISDIR);
    }
    /* and a symlink here too, which the kernel follows once it knows it:
     * the open of the link itself (openat2 without symlinks) was ELOOP,
     * `cat` of a file another mount replaced by a symlink failed until the
     * entry expired (found by the two-mount exerciser) */
    if (n->kind == DRXFS_LINK) {
        free(n);
        return drxfs_stale_once(path, -ELOOP);
    }
    if ((rc = drxfs_share_take(&who)) < 0) {
        free(n);
        return rc;
    }
    /* a view's shape as it was before the open resolved the view: older
     * than the view when an extension came between (then a stat by the
     * process shows the file's own size, drxfs_kc_own_size), never newer */
    bool array_kc = drxfs_is_array_kind(n->kind) && drxfs_kc_active();
    uint64_t shape = array_kc ? kc_shape(n->kind, n->rel, NULL) : 0;
    uint64_t sig0 = array_kc ? drxfs_kc_sig_of(n->kind, n->rel, NULL) : 0;
    rc = share_charge(path, fi, who, drxfs_ops_of(n->kind)->open(path, n, fi));
    /* nothing of a reader's to flush at its close (drxfs_op_flush), unless
     * the file has locks: a close by their owner lets them go (POSIX),
     * which the daemon learns from the FLUSH (drxfs_locks.c) */
    /* a zarr/ node keeps its own records: a key's bytes are its variable's,
     * which may be another array than the node's (a coordinate) */
    if (rc == 0 && n->kind != DRXFS_ZARR)
        open_cache(path, n->kind, n->rel, fi, shape, sig0);
    /* the name locks on a file the store does not hold are kept by
     * (drxfs_locks.c; libfuse passes no path with a handle) */
    if (rc == 0 && n->kind != DRXFS_PLAIN && n->kind != DRXFS_STRIPED)
        drxfs_fh_of(fi)->lkpath = strdup(path);
    if (rc == 0 && (fi->flags & O_ACCMODE) == O_RDONLY && !drxfs_locks_held(drxfs_fh_of(fi)))
        fi->noflush = 1;
    if (rc == 0)
        drxfs_stale_done(path); /* a retry of a stale open, if this was one, is over */
    free(n);
    return rc;
}

/* open_cache for the striped file a create just made: no page of it can be
 * cached, and no signature of it could match a later open (its first write
 * counts in the next one's), so none is taken (no stat of the new files,
 * no read of its metafile): recorded as opened, its attributes unseen, so
 * that the next open drops whatever the kernel holds for the path. */
static void open_cache_new(const char *path, const char *rel, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);

    fi->keep_cache = 0;
    if (!drxfs_kc_active() || kc_names(fh, path, rel) < 0 || fi->direct_io)
        return;
    struct drxfs_kc_opener who = {fh, -1};
    int rc = drxfs_kc_open(rel, path, 0, 0, (uint64_t)(uintptr_t)fh->sf, &who);
    fh->kcounted = rc >= 0;
    if (rc == -1)
        fi->direct_io = 1;
}

/* create_once's answer for a name that exists (O_CREAT without O_EXCL):
 * to be opened */
#define CREATE_OPEN 2

/* One attempt at drxfs_op_create: 0, -errno, or CREATE_OPEN. */
static int create_once(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    /* a zarr temporary is no store file: no ACL, the caller's umask */
    if ((rc = drxfs_zarr_create(path, mode & ~fuse_get_context()->umask, fi)) != 1)
        return rc;
    if ((rc = drxfs_resolve_new(path, rel, &name, &at_root)) < 0)
        return rc;
    if (drxfs.ro)
        return -EROFS;
    if (drxfs_name_reserved(name, at_root)) {
        drx_log(DRX_LOG_DEBUG, "%s: reserved name in the store", path);
        return -EPERM;
    }
    if ((rc = drxfs_check_new_name(path, rel, name, at_root)) < 0) {
        /* O_CREAT without O_EXCL on an existing name opens it */
        return rc == -EEXIST && !(fi->flags & O_EXCL) ? CREATE_OPEN : rc;
    }
    /* a long name's metafile is named by its stem, the name recorded
     * first (drx/store.h) */
    uid_t who;
    if ((rc = drxfs_share_take(&who)) < 0)
        return rc;
    if ((rc = drx_store_long_new(drxfs.store, rel, rel)) < 0) {
        drxfs_share_give(who, 1, 0);
        return rc;
    }
    rc = drxfs_striped_create(rel, drxfs_new_mode(rel, mode), fi);
    if ((rc = share_charge(path, fi, who, rc)) == 0) {
        open_cache_new(path, rel, fi);
        /* the kernel holds a file of the name now (libfuse's getattr
         * after the create, by the handle, records no type): a stat after
         * another mount put something else there is ESTALE, not the other
         * type's attributes for this file's inode (EIO, and every call on
         * its descriptors EIO after) */
        (void)drxfs_type_told(path, S_IFREG);
        return 0;
    }
    drx_store_long_drop(drxfs.store, rel);
    /* made meanwhile by someone else (another mount): opened, as above
     * (it was EEXIST for an open without O_EXCL) */
    return rc == -EEXIST && !(fi->flags & O_EXCL) ? CREATE_OPEN : rc;
}

/* A name made and removed again through another mount between a create's
 * look and its open is created again, this many times at most. */
#define CREATE_TRIES 4

int drxfs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int rc, tries = 0;

    /* O_CREAT without O_EXCL opens an existing name, and one gone again
     * before the open is made anew: a create answers neither ESTALE (it
     * may be the kernel's one retry of a stale open, whose ESTALE the
     * caller would get) nor ENOENT. */
    while ((rc = create_once(path, mode, fi)) == CREATE_OPEN) {
        stale_off = true;
        rc = drxfs_op_open(path, fi);
        stale_off = false;
        if (rc == 0)
            drxfs_fh_of(fi)->by_create = true;
        if (rc != -ENOENT || ++tries == CREATE_TRIES)
            break;
    }
    /* the kernel's retry of a stale open, if this was one, ends here */
    drxfs_stale_done(path);
    return rc;
}

int drxfs_op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    int (*read_some)(struct drxfs_fh *, char *, size_t, off_t) = drxfs_ops_of(fh->kind)->read;
    int done = 0, n;
    (void)path;
    /* A short read means the end of the file to the page cache (the
     * kernel cuts its size there): one that stopped at an error must fail,
     * so that the kernel retries page by page and the caller gets the
     * bytes before the error, then the error. */
    while ((n = read_some(fh, buf + done, size - (size_t)done, off + done)) > 0) {
        done += n;
        if ((size_t)done == size)
            break;
    }
    return n < 0 ? n : done;
}

int drxfs_op_write(const char *path, const char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path;
    if (drxfs.ro)
        return -EROFS;
    /* the file's flags as they are at this write (fcntl F_SETFL changes
     * O_APPEND after the open): a striped file appends at its own end */
    __atomic_store_n(&fh->append, (fi->flags & O_APPEND) != 0, __ATOMIC_RELAXED);
    if (!fi->writepage) /* write(2), not a mapping's pages */
        drxfs_killpriv_write(fh, path);
    return drxfs_ops_of(fh->kind)->write(fh, buf, size, off);
}

int drxfs_op_flush(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
    (void)path;
    /* A striped file's close hands the size to the batched commit here,
     * before close(2) returns (the RELEASE comes after); a zarr
     * temporary's gives its buffer's slack back.  Opens for reading ask
     * for no FLUSH at all (noflush, drxfs_op_open): a round trip less per
     * file. */
    return ops->flush ? ops->flush(fh) : 0;
}

int drxfs_op_release(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path;
    if (fh->kpath)
        drxfs_kc_close(fh->kkey, fh->kpath, fh, fh->kcounted);
    free(fh->kpath);
    free(fh->kkey);
    drxfs_share_give(fh->share_uid, fh->share_cost, fh->share_bytes);
    drxfs_locks_release(fh);
    free(fh->lkpath);
    drxfs_ops_of(fh->kind)->release(fh);
    return 0;
}

int drxfs_op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
    (void)path;
    return ops->fsync ? ops->fsync(fh, datasync) : 0;
}

int drxfs_op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    (void)path;
    if (drxfs.ro)
        return -EROFS;
    if (!fh)
        return -EOPNOTSUPP;
    if (off < 0 || len <= 0)
        return -EINVAL;
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
    if (ops->fallocate)
        drxfs_killpriv_fallocate(fh, path);
    return ops->fallocate ? ops->fallocate(fh, mode, off, len) : -EOPNOTSUPP;
}

/* SEEK_DATA and SEEK_HOLE (the kernel does the others itself). */
off_t drxfs_op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    (void)path;
    if (!fh)
        return -EINVAL;
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh->kind);
    if (ops->lseek)
        return ops->lseek(fh, off, whence);
    /* A file without holes of its own (a view's data, data.npy, data.nc,
     * info, a zarr key): all data up to its size.  Never ENOSYS, which
     * the kernel takes as "no lseek on this connection" and answers every
     * later SEEK_DATA/SEEK_HOLE of the mount itself, striped files' too,
     * as if nothing had holes. */
    struct stat st;
    int rc = drxfs_op_getattr(path, &st, fi);
    if (rc < 0)
        return rc;
    if (off < 0 || off >= st.st_size)
        return -ENXIO;
    return whence == SEEK_DATA ? off : whence == SEEK_HOLE ? st.st_size : -EINVAL;
}

int drxfs_op_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    return drxfs_striped_statfs(sv);
}

/* ---- extended attributes ----
 * user.drx.stripe is handled by the striped-file code; other attributes of
 * plain files, directories, FIFOs, sockets and device nodes (an ACL a
 * default ACL gave them) and striped files (kept on the metafile, whose
 * inode is the striped file's) pass through, so cp -a and rsync -AX keep
 * them; an array directory's user.NAME are the array's attributes
 * (drxfs_array_*xattr, returned as 1 here: *out is that node), and the
 * access ACL of every array node is its store files' (drxfs_array_setacl);
 * array files and symlinks have no other.  The store entry is opened O_PATH
 * beneath the store and reached through its descriptor (a FIFO is never
 * opened for I/O). */

/* What xattr_node returns for an array directory (not an errno). */
#define XATTR_ARRAY (-100000)

/* The node of path in *out and the store entry holding its attributes in
 * entry (PATH_MAX): 0, XATTR_ARRAY, or -errno. */
static int xattr_node(const char *path, struct drxfs_node **out, char *entry)
{
    int rc;

    if (!(*out = drxfs_node_get(path, &rc)))
        return rc;
    if ((*out)->kind == DRXFS_ARRAY)
        return XATTR_ARRAY;
    if ((*out)->kind != DRXFS_DIR && (*out)->kind != DRXFS_PLAIN &&
        (*out)->kind != DRXFS_STRIPED && (*out)->kind != DRXFS_SPECIAL)
        return -ENOTSUP;
    return drxfs_rel_suffix(entry, (*out)->rel, (*out)->kind == DRXFS_STRIPED ? DRXFS_NAFS : "");
}

static int entry_xattr(const char *entry, enum drx_xattr_op op, const char *name, void *value,
                       size_t size, int flags)
{
    struct drx_xattr_req r = {op, name, value, size, flags};
    ssize_t rc = drx_store_entry_xattr(drxfs.store, entry, &r);
    return rc < 0 ? (int)rc : (int)(rc > INT_MAX ? INT_MAX : rc);
}

int drxfs_op_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
    struct drxfs_node *n = NULL;
    char entry[PATH_MAX];
    int rc;

    if (strcmp(name, DRXFS_COMMIT_XATTR) == 0) {
        /* asked: record every size now, of the files waiting for the
         * commit and of those still open for writing */
        drxfs_striped_commit_open();
        drxfs_commit_now();
        return 0;
    }
    if (drxfs.ro)
        return -EROFS;
    if ((rc = xattr_node(path, &n, entry)) < 0 && !n)
        return drxfs_gone(path, rc);
    if (drxfs_is_array_kind(n->kind) && drxfs_acl_name(name))
        rc = drxfs_array_setacl(n, name, value, size);
    else if (rc == XATTR_ARRAY)
        rc = drxfs_array_setxattr(n, name, value, size, flags);
    else if (rc == 0 && strcmp(name, DRXFS_STRIPE_XATTR) == 0)
        rc = drxfs_striped_setxattr(n, value, size, flags);
    else if (rc == 0) {
        drxfs_guard_xattr(name);
        rc = entry_xattr(entry, DRX_XATTR_SET, name, (void *)value, size, flags);
        drxfs_guard_done();
    }
    /* setfacl -m o::- is a chmod o-rwx the subfiles must follow */
    if (rc == 0 && n->kind == DRXFS_STRIPED && strcmp(name, "system.posix_acl_access") == 0)
        rc = drxfs_striped_acl_set(n);
    free(n);
    return rc;
}

/* An ACL attribute of path, which the kernel asks before it lets anyone
 * but the owner in (drxfs_acl.c): never an error that would fail the
 * check of a node that has none. */
static int acl_get(const char *path, const char *name, char *value, size_t size)
{
    bool access = strcmp(name, DRXFS_ACL_ACCESS) == 0;
    struct drxfs_node *n;
    char entry[PATH_MAX];
    int rc;

    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_DIR:
    case DRXFS_PLAIN:
    case DRXFS_STRIPED:
    case DRXFS_SPECIAL:
        /* a default ACL is a directory's only */
        if (!access && n->kind != DRXFS_DIR)
            rc = -ENODATA;
        else if ((rc = drxfs_rel_suffix(entry, n->rel,
                                        n->kind == DRXFS_STRIPED ? DRXFS_NAFS : "")) == 0)
            rc = drxfs_acl_of_entry(entry, name, DRXFS_ACL_SAME, value, size);
        break;
    case DRXFS_LINK:
        rc = -ENODATA;
        break;
    case DRXFS_ZARR:
        rc = access ? drxfs_zarr_getacl(n, value, size) : -ENODATA;
        break;
    default:
        rc = access ? drxfs_array_getacl(n, value, size) : -ENODATA;
        break;
    }
    free(n);
    return rc;
}

int drxfs_op_getxattr(const char *path, const char *name, char *value, size_t size)
{
    struct drxfs_node *n = NULL;
    char entry[PATH_MAX];
    int rc;

    /* The kernel asks this one before every write(2) (libfuse 3.14 cannot
     * ask it not to: README, Benchmarks): for a striped file open under
     * that name, its metafile is known without resolving the path.  Still
     * read from the metafile each time (set behind the mount, it must be
     * removed by the next write). */
    if (strcmp(name, "security.capability") == 0 && drxfs_striped_open_meta(path, entry) == 0)
        return entry_xattr(entry, DRX_XATTR_GET, name, value, size, 0);
    if (drxfs_acl_name(name))
        return acl_get(path, name, value, size);
    /* (the security namespace is the kernel's own asking: as it was) */
    if ((rc = xattr_node(path, &n, entry)) < 0 && !n)
        return strncmp(name, "security.", 9) == 0 ? rc : drxfs_gone(path, rc);
    if (rc == XATTR_ARRAY)
        rc = drxfs_array_getxattr(n, name, value, size);
    else if (rc == 0 && strcmp(name, DRXFS_STRIPE_XATTR) == 0)
        rc = drxfs_striped_getxattr(n, value, size);
    else if (rc == 0) {
        /* checked on the entry read, which a rename behind the mount may
         * have made another user's since the kernel's check */
        drxfs_guard_xattr_read(name);
        rc = entry_xattr(entry, DRX_XATTR_GET, name, value, size, 0);
        drxfs_guard_done();
    }
    free(n);
    return rc;
}

/* The names of entry's attributes but user.drx.stripe (which lives on store
 * directories and is not copied by cp -a or rsync -X) into list. */
static int list_but_layout(const char *entry, char *list, size_t size)
{
    char *all = NULL;
    size_t outlen = 0;
    int len, rc = 0;

    drxfs_guard_xattr_read(NULL);
    len = entry_xattr(entry, DRX_XATTR_LIST, NULL, NULL, 0, 0);
    drxfs_guard_done();
    if (len <= 0)
        return len;
    if (!(all = malloc((size_t)len)))
        return -ENOMEM;
    drxfs_guard_xattr_read(NULL);
    len = entry_xattr(entry, DRX_XATTR_LIST, NULL, all, (size_t)len, 0);
    drxfs_guard_done();
    if (len < 0)
        rc = len;
    for (int i = 0; rc == 0 && i < len;) {
        size_t l = strnlen(all + i, (size_t)(len - i)) + 1;
        if (strcmp(all + i, DRXFS_STRIPE_XATTR) != 0) {
            if (size && outlen + l > size)
                rc = -ERANGE;
            else if (size)
                memcpy(list + outlen, all + i, l);
            outlen += l;
        }
        i += (int)l;
    }
    free(all);
    return rc < 0 ? rc : (int)outlen;
}

int drxfs_op_listxattr(const char *path, char *list, size_t size)
{
    struct drxfs_node *n = NULL;
    char entry[PATH_MAX];
    int rc;

    if ((rc = xattr_node(path, &n, entry)) < 0 && !n)
        return drxfs_gone(path, rc);
    if (rc == XATTR_ARRAY)
        rc = drxfs_array_listxattr(n, list, size);
    else if (rc == 0)
        rc = list_but_layout(entry, list, size);
    else if (rc == -ENOTSUP)
        rc = 0;
    free(n);
    return rc;
}

int drxfs_op_removexattr(const char *path, const char *name)
{
    struct drxfs_node *n = NULL;
    char entry[PATH_MAX];
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if ((rc = xattr_node(path, &n, entry)) < 0 && !n)
        return drxfs_gone(path, rc);
    if (drxfs_is_array_kind(n->kind) && drxfs_acl_name(name))
        rc = drxfs_array_setacl(n, name, NULL, 0);
    else if (rc == XATTR_ARRAY)
        rc = drxfs_array_removexattr(n, name);
    else if (rc == 0 && strcmp(name, DRXFS_STRIPE_XATTR) == 0)
        rc = drxfs_striped_setxattr(n, NULL, 0, 0);
    else if (rc == 0) {
        drxfs_guard_xattr(name);
        rc = entry_xattr(entry, DRX_XATTR_REMOVE, name, NULL, 0, 0);
        drxfs_guard_done();
    }
    free(n);
    return rc;
}
