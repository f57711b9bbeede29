/* The write side of the zarr/ group (see drxfs_zarr.c): temporary files
 * held by the daemon, and what renaming one over a name does: a chunk key
 * stores it into the chunk in place (drx_zarr_chunk_store: one pwrite under
 * the span lock), a metadata file takes it only when it changes nothing
 * or, for the array's .zarray, grows its shape (zarr's resize);
 * unlinking a key stores the fill (Zarr deletes chunks that hold only the
 * fill).  A refusal is logged and changes nothing in the .xta. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drxfs_zarr_i.h"

/* ---- temporary files ---- */

struct ztemp {
    struct ztemp *next;
    char *path; /* zkey(): ARRAY/zarr/[VAR/]NAME, store-relative */
    unsigned char *buf;
    size_t len, max;
    size_t cap; /* bytes of buf, what the pool counts (>= len) */
    unsigned refs;
    bool unlinked;
    unsigned frozen; /* stores of it under way: no more writes */
    uid_t uid;
    gid_t gid;
    pid_t tid; /* the creator's thread (the FUSE request's pid) */
    mode_t mode;
    struct timespec time;
    struct timespec used; /* CLOCK_MONOTONIC of its last write or creation */
};

static struct {
    pthread_mutex_t mutex;
    struct ztemp *head;
    /* unlinked or stored, still open: their memory is held until the last
     * close, and counted to their owner (uid_usage) */
    struct ztemp *gone;
    size_t bytes;
    unsigned count;
    /* writes waiting for others' temporaries to give memory back
     * (wait_room), signalled whenever some is given back */
    pthread_cond_t room;
    unsigned waiters, waiters_max;
} temps = {.mutex = PTHREAD_MUTEX_INITIALIZER, .room = PTHREAD_COND_INITIALIZER};

void drxfs_zarr_threads(unsigned max_threads, bool single)
{
    pthread_mutex_lock(&temps.mutex);
    temps.waiters_max = single ? 0 : max_threads / 2;
    pthread_mutex_unlock(&temps.mutex);
}

/* Memory of temporaries was given back (mutex held). */
static void room_given(void)
{
    pthread_cond_broadcast(&temps.room);
}

/* The temporary at path, with a reference, or NULL. */
struct ztemp *ztemp_get(const char *path)
{
    struct ztemp *t;

    pthread_mutex_lock(&temps.mutex);
    for (t = temps.head; t; t = t->next)
        if (strcmp(t->path, path) == 0) {
            t->refs++;
            break;
        }
    pthread_mutex_unlock(&temps.mutex);
    return t;
}

/* Takes t off the list at *pp (mutex held). */
static void list_drop(struct ztemp **pp, struct ztemp *t)
{
    for (; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

/* Marks t, off the table, unlinked and keeps it on the gone list until
 * its last reference goes (ztemp_put; mutex held). */
static void set_gone(struct ztemp *t)
{
    t->unlinked = true;
    t->next = temps.gone;
    temps.gone = t;
}

static void ztemp_free(struct ztemp *t)
{
    if (t->unlinked)
        list_drop(&temps.gone, t);
    temps.bytes -= t->cap;
    temps.count--;
    room_given();
    free(t->buf);
    free(t->path);
    free(t);
}

void ztemp_put(struct ztemp *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&temps.mutex);
    if (--t->refs == 0 && t->unlinked)
        ztemp_free(t);
    pthread_mutex_unlock(&temps.mutex);
}

/* Takes t out of the table (unlink, or renamed over a key). */
static void ztemp_unlink(struct ztemp *t)
{
    pthread_mutex_lock(&temps.mutex);
    if (!t->unlinked) {
        list_drop(&temps.head, t);
        set_gone(t);
    }
    pthread_mutex_unlock(&temps.mutex);
}

/* The temporaries uid holds: how many, and their buffers' bytes (mutex
 * held). */
static void uid_usage(uid_t uid, unsigned *count, size_t *bytes)
{
    *count = 0;
    *bytes = 0;
    for (int gone = 0; gone < 2; gone++)
        for (const struct ztemp *t = gone ? temps.gone : temps.head; t; t = t->next)
            if (t->uid == uid) {
                (*count)++;
                *bytes += t->cap;
            }
}

/* May t's owner hold grow more bytes in temporaries?  A user other than
 * root keeps to a share of the pool; his one temporary of a chunk larger
 * than the share may pass it, but not past half the pool: alone, it took
 * the whole pool (a chunk of 512 MiB) and every other user's zarr write
 * failed with ENOSPC (mutex held). */
static bool pool_room(const struct ztemp *t, size_t grow)
{
    unsigned n;
    size_t bytes;

    if (temps.bytes + grow > ZTEMP_TOTAL_MAX && temps.count > 1)
        return false;
    if (t->uid == 0)
        return true;
    uid_usage(t->uid, &n, &bytes);
    return bytes + grow <= ZTEMP_TOTAL_MAX / ZTEMP_USER_SHARE ||
           (n <= 1 && bytes + grow <= ZTEMP_TOTAL_MAX / 2);
}

/* When the pool is full: drops the temporaries no one has open that were
 * last written more than ZTEMP_IDLE_S ago (mutex held).  zarr renames its
 * temporary as soon as it is closed, so one left that long belongs to a
 * writer that was killed, and nobody can remove it (it is not listed).
 * Before, five killed to_zarr runs left 11 of them, and at 256 (64 for a
 * user but root) every zarr write failed (ENOSPC) until a remount. */
static unsigned drop_idle(bool all, uid_t uid)
{
    struct timespec now;
    unsigned dropped = 0;

    clock_gettime(CLOCK_MONOTONIC, &now);
    for (struct ztemp **pp = &temps.head; *pp;) {
        struct ztemp *t = *pp;
        if ((all || t->uid == uid) && t->refs == 0 && t->frozen == 0 &&
            now.tv_sec - t->used.tv_sec > ZTEMP_IDLE_S) {
            *pp = t->next;
            set_gone(t);
            ztemp_free(t);
            dropped++;
        } else {
            pp = &t->next;
        }
    }
    return dropped;
}

/* drop_idle for uid, whose temporary finds the pool full (mutex held):
 * every user's when the whole pool is, else his own; logged after. */
static unsigned drop_idle_for(uid_t uid)
{
    return drop_idle(temps.count >= ZTEMP_COUNT_MAX || temps.bytes >= ZTEMP_TOTAL_MAX / 2, uid);
}

static void dropped_log(unsigned n, uid_t uid)
{
    if (n)
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%u temporary zarr files closed and idle for more than %d s dropped "
                            "(a killed writer's?) to make room for user %u",
                            n, ZTEMP_IDLE_S, (unsigned)uid);
}

/* Whether uid may hold no more temporaries (mutex held). */
static bool pool_full(uid_t uid)
{
    unsigned mine = 0;
    size_t bytes;

    if (uid != 0)
        uid_usage(uid, &mine, &bytes);
    return temps.count >= ZTEMP_COUNT_MAX || mine >= ZTEMP_COUNT_MAX / ZTEMP_USER_SHARE;
}

static int ztemp_new(const char *path, size_t max, mode_t mode, struct ztemp **out)
{
    struct fuse_context *ctx = fuse_get_context();
    struct ztemp *t = calloc(1, sizeof *t);
    int rc = 0;

    if (!t || !(t->path = strdup(path))) {
        free(t);
        return -ENOMEM;
    }
    t->max = max;
    t->refs = 1;
    t->uid = ctx ? ctx->uid : getuid();
    t->gid = ctx ? ctx->gid : getgid();
    t->tid = ctx ? ctx->pid : 0;
    clock_gettime(CLOCK_MONOTONIC, &t->used);
    t->mode = S_IFREG | (mode & 0666);
    clock_gettime(CLOCK_REALTIME, &t->time);
    pthread_mutex_lock(&temps.mutex);
    unsigned dropped = pool_full(t->uid) ? drop_idle_for(t->uid) : 0;
    if (pool_full(t->uid)) {
        rc = -ENOSPC;
    } else {
        t->next = temps.head;
        temps.head = t;
        temps.count++;
    }
    pthread_mutex_unlock(&temps.mutex);
    dropped_log(dropped, t->uid);
    if (rc < 0) {
        drx_log_ratelimited(
            DRX_LOG_WARNING, "%s: more than %d temporary zarr files held (%d by user %u): refused",
            path, ZTEMP_COUNT_MAX, ZTEMP_COUNT_MAX / ZTEMP_USER_SHARE, (unsigned)t->uid);
        free(t->path);
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Counted: two stores of one temporary at once (renames to two keys)
 * each keep it frozen until they end. */
static void ztemp_freeze(struct ztemp *t, bool frozen)
{
    pthread_mutex_lock(&temps.mutex);
    if (frozen)
        t->frozen++;
    else
        t->frozen--;
    pthread_mutex_unlock(&temps.mutex);
}

/* Whether t could grow by grow bytes were it the only temporary (mutex
 * held): when not, no other's memory coming back helps. */
static bool room_alone(const struct ztemp *t, size_t grow)
{
    return t->uid == 0 || t->cap + grow <= ZTEMP_TOTAL_MAX / 2;
}

/* Whether a temporary other than t that keeps t from growing by grow
 * bytes is being written: open, or written in the last second (zarr
 * renames it right after closing it), so that its memory comes back soon
 * (mutex held).  Closed and idle ones are a killed writer's, which only
 * drop_idle gives back. */
static bool others_writing(const struct ztemp *t, size_t grow, const struct timespec *now)
{
    bool pool = temps.bytes + grow > ZTEMP_TOTAL_MAX;

    for (int gone = 0; gone < 2; gone++)
        for (const struct ztemp *u = gone ? temps.gone : temps.head; u; u = u->next)
            if (u != t && u->cap && (pool || u->uid == t->uid) &&
                (u->refs || now->tv_sec - u->used.tv_sec <= 1))
                return true;
    return false;
}

/* Waits, mutex held, up to ZTEMP_WAIT_S for the temporaries of other
 * writes under way to give back room for t to grow by grow bytes; whether
 * it is there.  Writers running at once, as dask's threads under
 * to_zarr, each hold a chunk here from its first byte to its rename: six
 * of 128 MiB (dask's own chunk size) passed the pool and two failed with
 * ENOSPC, and for a user other than root the second of two did.  At most
 * half the worker threads wait, so that the other half serves the writes
 * that give the room back (none with -s). */
static bool wait_room(struct ztemp *t, size_t grow)
{
    struct timespec now, until;

    if (!room_alone(t, grow) || temps.waiters >= temps.waiters_max)
        return false;
    temps.waiters++;
    clock_gettime(CLOCK_MONOTONIC, &now);
    time_t end = now.tv_sec + ZTEMP_WAIT_S;
    while (!pool_room(t, grow) && others_writing(t, grow, &now) && now.tv_sec < end) {
        /* a tenth of a second at a time: a writer gone quiet stops
         * counting (others_writing), and nothing signals that */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&temps.room, &temps.mutex, &until);
        clock_gettime(CLOCK_MONOTONIC, &now);
    }
    temps.waiters--;
    return pool_room(t, grow);
}

/* Makes t->buf hold at least end bytes (mutex held).  Its first bytes
 * take the whole chunk (t->max) when the pool has room for it, at once or
 * once other writes give it back (wait_room): only a temporary holding
 * nothing waits, so writers never wait for each other's growth.  Else the
 * capacity at least doubles, within t->max and the pool, so that a key
 * written in many pieces (the kernel's 128 KiB requests) is not copied at
 * each one; what the pool cannot give beyond end is not taken.  0 or
 * -errno. */
static int ztemp_reserve(struct ztemp *t, size_t end)
{
    size_t want = t->cap < t->max / 2 ? 2 * t->cap : t->max;

    if (end <= t->cap)
        return 0;
    if (t->cap == 0 && !pool_room(t, t->max) && drop_idle_for(t->uid))
        drx_log_ratelimited(DRX_LOG_INFO, "%s: idle temporaries dropped to make room", t->path);
    if (t->cap == 0 && (pool_room(t, t->max) || wait_room(t, t->max)))
        want = t->max;
    else if (want < end || !pool_room(t, want - t->cap))
        want = end;
    if (!pool_room(t, want - t->cap) && drop_idle_for(t->uid))
        drx_log_ratelimited(DRX_LOG_INFO, "%s: idle temporaries dropped to make room", t->path);
    if (!pool_room(t, want - t->cap)) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: temporary zarr files hold %zu bytes already (at most %zu in all, "
                            "%zu of a user other than root): refused",
                            t->path, temps.bytes, ZTEMP_TOTAL_MAX,
                            ZTEMP_TOTAL_MAX / ZTEMP_USER_SHARE);
        return -ENOSPC;
    }
    /* a store of t may have begun while this waited: it reads t->buf
     * without the mutex, which a realloc would move */
    if (t->frozen)
        return -EIO;
    unsigned char *nb = realloc(t->buf, want);
    if (!nb)
        return -ENOMEM;
    temps.bytes += want - t->cap;
    t->buf = nb;
    t->cap = want;
    return 0;
}

static int ztemp_write(struct ztemp *t, const char *buf, size_t size, off_t off)
{
    size_t end = (size_t)off + size;
    int rc = (int)size;

    if (off < 0 || (uint64_t)off + size > t->max) {
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%s: a temporary zarr file holds at most %zu bytes (one chunk)",
                            t->path, t->max);
        return -EFBIG;
    }
    pthread_mutex_lock(&temps.mutex);
    /* Under the mutex: a rename being stored reads t->buf without it, and
     * a write that passed the check before the freeze could realloc it
     * under that reader. */
    if (t->frozen) {
        rc = -EIO;
    } else if (end > t->len) {
        int e = ztemp_reserve(t, end);
        if (e < 0) {
            rc = e;
        } else {
            /* past the end: zeros (a hole, or what a truncate cut) */
            memset(t->buf + t->len, 0, end - t->len);
            t->len = end;
        }
    }
    if (rc > 0)
        memcpy(t->buf + off, buf, size);
    clock_gettime(CLOCK_REALTIME, &t->time);
    clock_gettime(CLOCK_MONOTONIC, &t->used);
    pthread_mutex_unlock(&temps.mutex);
    return rc;
}

/* Gives back what t's buffer holds past its end (the growth's slack),
 * at the close of a handle: a finished temporary counts what it holds. */
void ztemp_trim(struct ztemp *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&temps.mutex);
    /* not while a rename being stored reads t->buf without the mutex */
    if (!t->frozen && t->len && t->cap > t->len) {
        unsigned char *nb = realloc(t->buf, t->len);
        if (nb) {
            t->buf = nb;
            temps.bytes -= t->cap - t->len;
            t->cap = t->len;
            room_given();
        }
    }
    pthread_mutex_unlock(&temps.mutex);
}

/* Cuts or extends t to size; a cut gives the buffer's memory back. */
int ztemp_truncate(struct ztemp *t, off_t size)
{
    if (size < 0 || (uint64_t)size > t->max)
        return -EFBIG;
    pthread_mutex_lock(&temps.mutex);
    /* a rename being stored reads t->len and t->buf without the mutex */
    if (t->frozen) {
        pthread_mutex_unlock(&temps.mutex);
        return -EIO;
    }
    if ((size_t)size < t->len) {
        /* the memory cut goes back to the pool (a failed shrink keeps it) */
        unsigned char *nb = size ? realloc(t->buf, (size_t)size) : NULL;
        if (nb || !size) {
            if (!size)
                free(t->buf);
            t->buf = nb;
            temps.bytes -= t->cap - (size_t)size;
            t->cap = (size_t)size;
            room_given();
        }
        t->len = (size_t)size;
    }
    bool grow = (size_t)size > t->len;
    pthread_mutex_unlock(&temps.mutex);
    if (grow) {
        int rc = ztemp_write(t, "", 0, size);
        return rc < 0 ? rc : 0;
    }
    return 0;
}

void ztemp_stat(struct ztemp *t, struct stat *st)
{
    pthread_mutex_lock(&temps.mutex);
    memset(st, 0, sizeof *st);
    st->st_mode = t->mode;
    st->st_nlink = 1;
    st->st_uid = t->uid;
    st->st_gid = t->gid;
    st->st_size = (off_t)t->len;
    st->st_blocks = (blkcnt_t)((t->len + 511) / 512);
    st->st_blksize = DRXFS_DATA_BLKSIZE;
    st->st_atim = st->st_mtim = st->st_ctim = t->time;
    pthread_mutex_unlock(&temps.mutex);
}

int ztemp_read(struct ztemp *t, char *buf, size_t size, uint64_t off)
{
    size_t n = 0;

    pthread_mutex_lock(&temps.mutex);
    if (off < t->len) {
        n = t->len - (size_t)off < size ? t->len - (size_t)off : size;
        memcpy(buf, t->buf + off, n);
    }
    pthread_mutex_unlock(&temps.mutex);
    return (int)n;
}

bool ztemp_exists(const struct drxfs_node *n, const char *var, const char *name)
{
    char key[ZKEY_MAX];
    struct ztemp *t = NULL;

    if (zkey(n, var, name, key, sizeof key) == 0 && (t = ztemp_get(key)))
        ztemp_put(t);
    return t != NULL;
}

int drxfs_zarr_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off)
{
    if (!fh->zf->t)
        return -EPERM;
    return ztemp_write(fh->zf->t, buf, size, off);
}

int drxfs_zarr_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    struct stat st;
    char key[ZKEY_MAX];
    struct ztemp *t;
    int rc;

    if (fh && fh->zf->t)
        return ztemp_truncate(fh->zf->t, size);
    if (fh)
        return size == fh->zf->st.st_size ? 0 : -EPERM;
    if (n->zlevel == ZL_FILE && zkey(n, n->zvar, n->zname, key, sizeof key) == 0 &&
        (t = ztemp_get(key))) {
        rc = ztemp_truncate(t, size);
        ztemp_put(t);
        return rc;
    }
    if ((rc = drxfs_zarr_getattr(n, &st)) < 0)
        return rc;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    return size == st.st_size ? 0 : -EPERM;
}

/* ---- names: create, unlink, rename ---- */

/* True for paths that may lie in a zarr group: the hooks below resolve
 * only those. */
static bool maybe_zarr(const char *path)
{
    return path && strstr(path, "/zarr");
}

/* The parent of path as a node, and path's last component in *name.  Its
 * view words (an array view's) point into a buffer gone on return: callers
 * read only its kind and zarr fields. */
static struct drxfs_node *parent_of(const char *path, const char **name, int *rc)
{
    char ppath[PATH_MAX];
    const char *slash = strrchr(path, '/');

    if (!slash || (size_t)(slash - path) >= sizeof ppath) {
        *rc = -ENAMETOOLONG;
        return NULL;
    }
    memcpy(ppath, path, (size_t)(slash - path));
    ppath[slash - path] = '\0';
    *name = slash + 1;
    return drxfs_node_get(ppath[0] ? ppath : "/", rc);
}

/* A name at the group level that is not a variable: a file there. */
static void as_group_file(struct drxfs_node *n)
{
    if (n->zlevel != ZL_VAR)
        return;
    memcpy(n->zname, n->zvar, sizeof n->zname);
    n->zvar[0] = '\0';
    n->zlevel = ZL_FILE;
}

/* Creates temporary file `name` in the zarr directory p: at most a chunk
 * of its variable (metadata size at the group level). */
/* The limits of a new temporary in p: -EEXIST when name is taken. */
static int temp_check(const struct drxfs_node *p, struct drxfs_node *n, const struct zctx *zc,
                      size_t *max)
{
    struct zinfo zi;
    int vi = p->zvar[0] ? zctx_find(zc, p->zvar) : 0;

    if (vi < 0)
        return -ENOENT;
    /* a chunk, or a metadata file rewritten */
    if (p->zvar[0] && drx_array_meta(zc->a[vi])->chunk_bytes > *max)
        *max = drx_array_meta(zc->a[vi])->chunk_bytes;
    if (!p->zvar[0] && n->zlevel == ZL_VAR && zctx_find(zc, n->zvar) < 0)
        as_group_file(n);
    if (n->kind != DRXFS_ZARR || n->zlevel != ZL_FILE || zclassify(n, zc, &zi) == 0 ||
        ztemp_exists(n, n->zvar, n->zname))
        return -EEXIST;
    return drxfs_arr_writable(zc->arr[vi]) ? 0 : -EACCES;
}

static int create_temp(const char *path, const struct drxfs_node *p, const char *name, mode_t mode,
                       struct fuse_file_info *fi)
{
    char key[ZKEY_MAX];
    struct drxfs_node *n = NULL;
    struct ztemp *t;
    struct zctx zc;
    size_t max = ZTEMP_META_MAX;
    int rc;

    if ((rc = zkey(p, p->zvar, name, key, sizeof key)) < 0)
        return rc;
    if ((rc = zctx_open(&zc, p, false)) < 0)
        return rc;
    if ((n = drxfs_node_get(path, &rc)) && (rc = temp_check(p, n, &zc, &max)) == 0 &&
        (rc = ztemp_new(key, max, mode, &t)) == 0)
        rc = zarr_open_temp(t, fi);
    zctx_close(&zc);
    free(n);
    return rc;
}

int drxfs_zarr_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct drxfs_node *p;
    const char *name;
    int rc;

    if (!maybe_zarr(path))
        return 1;
    if (!(p = parent_of(path, &name, &rc)))
        return rc == -ENOENT ? 1 : rc;
    if (p->kind != DRXFS_ZARR) {
        free(p);
        return 1;
    }
    if (drxfs.ro)
        rc = -EROFS;
    else if (p->zlevel == ZL_FILE)
        rc = -ENOTDIR;
    else
        rc = create_temp(path, p, name, mode, fi);
    free(p);
    if (rc == -EEXIST && !(fi->flags & O_EXCL))
        rc = drxfs_op_open(path, fi);
    return rc;
}

/* Stores buf (len bytes) as chunk key of variable vi of zc, or logs why
 * not.  0 or -errno: EINVAL for a wrong size, EPERM for a key outside the
 * grid, EACCES for an array that cannot be written. */
static int store_chunk(const struct drxfs_node *dst, struct zctx *zc, int vi, void *buf, size_t len)
{
    struct drx_err err = {{0}};
    int rc;

    if (!drxfs_arr_writable(zc->arr[vi])) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s/zarr/%s/%s: the array is read-only here: not stored", dst->rel,
                            dst->zvar, dst->zname);
        return -EACCES;
    }
    if ((rc = drx_array_check_links(zc->a[vi], &err)) < 0) {
        drx_log_ratelimited(DRX_LOG_ERROR, "%s: writing refused: %s", dst->rel, err.msg);
        return -EIO;
    }
    rc = drx_zarr_chunk_store(zc->a[vi], &zc->var[vi], dst->zname, buf, len, &err);
    if (rc < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s/zarr: %s", dst->rel, err.msg);
        return rc == -ENOENT ? -EPERM : rc;
    }
    /* every view of the array the kernel caches is now stale */
    drxfs_kc_changed(drxfs_arr_key(zc->arr[vi]), NULL);
    return 0;
}

/* Temporary t takes the name key (replacing a temporary of that name). */
static int ztemp_rename(struct ztemp *t, const char *key)
{
    char *path = strdup(key);
    struct ztemp *old = NULL;

    if (!path)
        return -ENOMEM;
    pthread_mutex_lock(&temps.mutex);
    for (struct ztemp **pp = &temps.head; *pp; pp = &(*pp)->next)
        if (*pp != t && strcmp((*pp)->path, key) == 0) {
            old = *pp;
            *pp = old->next;
            break;
        }
    if (old && old->refs == 0) {
        old->unlinked = true; /* not on the gone list: freed now */
        ztemp_free(old);
    } else if (old) {
        set_gone(old);
    }
    free(t->path);
    t->path = path;
    pthread_mutex_unlock(&temps.mutex);
    return 0;
}

static bool looks_like_key(const char *name)
{
    return name[0] && strspn(name, "0123456789.") == strlen(name);
}

/* ---- growth through a .zarray (zarr's resize) ---- */

/* The coordinate variable of dimension d of zc's array, or -1. */
static int coord_of(const struct zctx *zc, int d)
{
    for (int i = 1; i < zc->nvars; i++)
        if (zc->var[i].dims[0] == zc->dim[d])
            return i;
    return -1;
}

/* True when the caller may write store file rel of stat st, as the
 * kernel checks a node (mode bits and POSIX ACL): a growth writes the
 * .xmd, whose permissions may be stricter than the .xta's (the group's
 * directories show the .xta's). */
static bool caller_may_write(const char *rel, const struct stat *st)
{
    gid_t groups[DRXFS_CALLER_GROUPS];
    int n = drxfs_caller_groups(groups, DRXFS_CALLER_GROUPS);

    return drxfs_acl_may(rel, st, fuse_get_context()->uid, groups, n, 2);
}

/* Grows zc's array to shape along every dimension where it is larger,
 * all or nothing: one handle of its own (whose bounds are the file's now:
 * the daemon's handles see the new records at their next access), each
 * growth pending (drx_array_grow_pending: the fill written, nothing
 * recorded), then one commit that syncs the .xta and appends every
 * dimension's record in one write.  A failure at any dimension (a full
 * disk for its fill) drops them all, so the array keeps its shape; a
 * crash before the commit leaves only an .xta longer than its records,
 * which the next extension or fsck cuts.  Then invalidates what the
 * kernel caches of it. */
static int grow_all(const struct drxfs_node *dst, const struct zctx *zc, const uint64_t *shape)
{
    uint64_t by[DRX_MAX_RANK] = {0};
    const char *rel = drxfs_arr_key(zc->arr[0]);
    char path[PATH_MAX + 64];
    struct drx_err err = {{0}};
    struct drx_array *h = NULL;
    int pin, rc, rank = 0;

    if ((rc = drxfs_lib_path(path, sizeof path, rel, &pin)) < 0)
        return rc;
    /* a whole handle (not DRX_METAONLY): where the .xmd cannot be
     * appended to, the commit writes it whole from the handle's history */
    rc = drx_array_open(path, DRX_RDWR, &h, &err);
    if (rc == 0) {
        rank = drx_array_meta(h)->rank;
        /* each count decided under the extend lock: a drx extend by
         * another process since the open is counted, not added to */
        for (int d = 0; d < rank && rc == 0; d++)
            rc = drx_array_grow_pending(h, d, shape[d], true, &by[d], &err);
        if (rc == 0)
            rc = drx_array_commit(h, &err);
        else
            drx_array_pending_drop(h, &(struct drx_err){{0}});
    }
    drx_array_close(h);
    drxfs_unpin(pin); /* only now: an extension opens files by the path */
    if (rc < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s/zarr: growing %s: %s (its shape unchanged)",
                            dst->rel, rel, err.msg);
        return rc;
    }
    for (int d = 0; d < rank; d++)
        if (by[d])
            drx_log_ratelimited(DRX_LOG_INFO,
                                "%s/zarr: %s grown along dimension %d by %" PRIu64
                                " (a zarr resize)",
                                dst->rel, rel, d, by[d]);
    drxfs_kc_changed(rel, NULL);
    return 0;
}

/* Fill bytes a zarr resize may make the daemon write (a non-zero fill
 * is written into every new chunk; a zero fill grows the .xta sparse):
 * the request waits meanwhile (its blocks are the caller's: charge.c).
 * Larger growths are for drx extend. */
#define ZGROW_FILL_MAX ((uint64_t)1 << 30)

/* The fill bytes growing m to shape writes, saturated at UINT64_MAX. */
static uint64_t grow_fill_bytes(const struct drx_array_meta *m, const uint64_t *shape)
{
    static const unsigned char zero[DRX_MAX_ELEM];
    uint64_t chunks = 1, grid;

    if (memcmp(m->fill, zero, m->elem_size) == 0)
        return 0;
    for (int d = 0; d < m->rank; d++) {
        grid = shape[d] / m->chunk[d] + (shape[d] % m->chunk[d] != 0);
        if (grid && chunks > UINT64_MAX / grid)
            return UINT64_MAX;
        chunks *= grid;
    }
    chunks -= chunks > m->map.nchunks ? m->map.nchunks : chunks;
    return chunks > UINT64_MAX / m->chunk_bytes ? UINT64_MAX : chunks * m->chunk_bytes;
}

/* The caller may grow zc's array to shape: 0, or -EACCES or -EFBIG
 * (logged). */
static int grow_allowed(const struct drxfs_node *dst, const struct zctx *zc, const uint64_t *shape)
{
    char xmd[PATH_MAX];
    struct stat st;

    if (!drxfs_arr_writable(zc->arr[0]) || drxfs_rel_suffix(xmd, dst->rel, DRXFS_XMD) < 0 ||
        drx_store_entry_stat(drxfs.store, xmd, &st) < 0 || !caller_may_write(xmd, &st)) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s/zarr: a zarr resize needs write access to %s.xmd: refused",
                            dst->rel, dst->rel);
        return -EACCES;
    }
    if (grow_fill_bytes(zc->var[0].meta, shape) > ZGROW_FILL_MAX) {
        drx_log_ratelimited(
            DRX_LOG_WARNING,
            "%s/zarr: a zarr resize that writes more than 1 GiB of fill is refused: "
            "use drx extend",
            dst->rel);
        return -EFBIG;
    }
    return 0;
}

/* t, renamed over the array's own .zarray, has a larger shape (zarr's
 * resize, as xarray's to_zarr(append_dim=...) makes): the array grows to
 * it, unless a grown dimension has a coordinate variable.  zarr resizes
 * the variables of a dimension one by one, each from the shape it reads
 * then, in no fixed order (xarray's is a set's): growing the coordinate
 * with the array would grow it twice, and not growing it would drop it
 * from the group (shorter than its dimension) or cut its new values.
 * 1 when t is not such a document, else 0 or -errno (logged). */
static int grow_to(const struct ztemp *t, const struct drxfs_node *dst, const struct zctx *zc,
                   int vi, const char *ours)
{
    const struct drx_array_meta *m = zc->var[0].meta;
    uint64_t shape[DRX_MAX_RANK];
    int rc = 0;

    if (vi < 0 || strcmp(dst->zname, ".zarray") != 0 ||
        !drx_zarr_zarray_grown(ours, t->buf ? (char *)t->buf : "", t->len, zc->var[vi].meta->rank,
                               shape))
        return 1;
    for (int d = 0; d < m->rank; d++)
        if ((vi == 0 && shape[d] > m->bounds[d] && coord_of(zc, d) > 0) ||
            (vi > 0 && coord_of(zc, d) == vi)) {
            drx_log_ratelimited(DRX_LOG_WARNING,
                                "%s/zarr: dimension %s has a coordinate variable: a zarr resize "
                                "(append_dim) is refused; drx extend the array and %s, then write "
                                "with region=",
                                dst->rel, zc->dim[d], zc->dim[d]);
            return -EPERM;
        }
    if ((rc = grow_allowed(dst, zc, shape)) < 0)
        return rc;
    return grow_all(dst, zc, shape);
}

/* Metadata file dst rewritten with t's bytes: accepted when they change
 * nothing, or when the array's .zarray grows its shape (grow_to). */
static int commit_meta(struct ztemp *t, const struct drxfs_node *dst, const struct zctx *zc,
                       const char *key)
{
    char *ours = NULL;
    size_t len;
    int rc = zdoc_get(zc, dst->rel, dst->zvar, dst->zname, &ours, &len);

    if (rc == 0 && !drx_zarr_json_same(ours, t->buf ? (char *)t->buf : "", t->len) &&
        (rc = grow_to(t, dst, zc, dst->zvar[0] ? zctx_find(zc, dst->zvar) : -1, ours)) == 1) {
        drx_log_ratelimited(
            DRX_LOG_WARNING,
            "%s: metadata comes from the array (drx attr, drx extend): a change is refused", key);
        rc = -EPERM;
    }
    free(ours);
    return rc;
}

/* Temporary t renamed over dst (a file name in the same zarr directory):
 * a chunk key stores it, a metadata file accepts it when it changes
 * nothing, another name renames the temporary. */
/* What renaming t over dst does in group zc: 0 stored or accepted, 1 a
 * rename to another temporary name, or -errno (logged). */
static int commit_to(struct ztemp *t, const struct drxfs_node *dst, struct zctx *zc,
                     const char *key)
{
    struct zinfo zi;
    int rc = zclassify(dst, zc, &zi);

    if (!dst->zvar[0] && zctx_find(zc, dst->zname) >= 0)
        return -EISDIR;
    if (rc == 0 && zi.what == ZW_META)
        return commit_meta(t, dst, zc, key);
    if (rc == 0 && zi.what == ZW_KEY)
        return store_chunk(dst, zc, zi.var, t->buf, t->len);
    if (rc == 0)
        return -EISDIR;
    if (dst->zvar[0] && zi.var >= 0 && looks_like_key(dst->zname))
        return store_chunk(dst, zc, zi.var, t->buf, t->len); /* refused, logged */
    if (!dst->zvar[0] || zi.var >= 0)
        return 1;
    return rc;
}

static int commit_temp(struct ztemp *t, const struct drxfs_node *dst)
{
    char key[ZKEY_MAX];
    struct zctx zc;
    int rc;

    if ((rc = zkey(dst, dst->zvar, dst->zname, key, sizeof key)) < 0)
        return rc;
    if (ztemp_exists(dst, dst->zvar, dst->zname))
        return ztemp_rename(t, key);
    if ((rc = zctx_open(&zc, dst, false)) < 0)
        return rc;
    ztemp_freeze(t, true); /* no write is in flight past this point */
    rc = commit_to(t, dst, &zc, key);
    if (rc == 0)
        ztemp_unlink(t);
    ztemp_freeze(t, false);
    zctx_close(&zc);
    return rc == 1 ? ztemp_rename(t, key) : rc;
}

/* The temporary file that from names, with a reference, or NULL (logged:
 * nothing else in a group is renamed, nor renamed into one). */
static struct ztemp *rename_source(const char *from, const char *to, struct drxfs_node *src,
                                   const struct drxfs_node *dp)
{
    char key[ZKEY_MAX];
    struct ztemp *t = NULL;

    if (src->kind == DRXFS_ZARR && dp && dp->kind == DRXFS_ZARR && src->zlevel == ZL_FILE && zkey(src, src->zvar, src->zname, key, sizeof key) == 0)
        t = ztemp_get(key);
    if (!t)
        drx_log_ratelimited(DRX_LOG_INFO,
                            "rename %s -> %s: in a zarr group only a temporary file is "
                            "renamed, within its directory",
                            from, to);
    return t;
}

static bool same_dir(const struct drxfs_node *src, const struct drxfs_node *dst)
{
    return dst->kind == DRXFS_ZARR && dst->zlevel == ZL_FILE && strcmp(dst->rel, src->rel) == 0 &&
           strcmp(dst->zvar, src->zvar) == 0;
}

int drxfs_zarr_rename(const char *from, const char *to, unsigned int flags)
{
    struct drxfs_node *src = NULL, *dst = NULL, *dp = NULL;
    struct ztemp *t = NULL;
    const char *name;
    int rc;

    if (!maybe_zarr(from) && !maybe_zarr(to))
        return 1;
    if (!(src = drxfs_node_get(from, &rc)))
        return rc;
    dp = parent_of(to, &name, &rc);
    if (src->kind != DRXFS_ZARR && (!dp || dp->kind != DRXFS_ZARR)) {
        rc = dp || rc == -ENOENT ? 1 : rc;
        goto out;
    }
    /* RENAME_EXCHANGE is EINVAL as everywhere but between plain names
     * (drxfs_names.c); RENAME_NOREPLACE, which GNU mv asks for first when
     * the target is not there, renames as a plain rename does unless the
     * target exists (below). */
    if (flags & RENAME_EXCHANGE) {
        drx_log_ratelimited(DRX_LOG_INFO,
                            "rename %s <-> %s: names in a zarr group are not exchanged", from,
                            to);
        rc = -EINVAL;
        goto out;
    }
    rc = -EPERM;
    if (!(t = rename_source(from, to, src, dp)) || !(dst = drxfs_node_get(to, &rc)))
        goto out;
    if (!src->zvar[0])
        as_group_file(dst);
    if (!same_dir(src, dst)) {
        drx_log_ratelimited(DRX_LOG_INFO,
                            "rename %s -> %s: a temporary zarr file moves only within its "
                            "directory",
                            from, to);
        rc = -EPERM;
        goto out;
    }
    struct stat st;
    if ((flags & RENAME_NOREPLACE) && drxfs_zarr_getattr(dst, &st) == 0)
        rc = -EEXIST;
    else
        rc = drxfs.ro ? -EROFS : commit_temp(t, dst);
out:
    ztemp_put(t);
    free(src);
    free(dst);
    free(dp);
    return rc;
}

/* Whether t's name is zarr 2's for a temporary of key:
 * KEY.<32 hex digits>.partial. */
static bool zarr_temp_name(const char *path, const char *key, size_t len)
{
    const char *p = path + len;

    if (strncmp(path, key, len) != 0 || *p++ != '.')
        return false;
    for (int i = 0; i < 32; i++, p++)
        if (!isxdigit((unsigned char)*p))
            return false;
    return strcmp(p, ".partial") == 0;
}

/* Whether zarr is about to rename one of its temporaries over key: zarr
 * 2 writes KEY.UUID.partial beside KEY, closes it and replaces KEY from
 * the same thread at once.  So only such a name counts, closed, made by
 * the caller's thread and user, written within ZTEMP_IDLE_S: a killed
 * writer's leftover or a user's copy must not make a removal of the key
 * be skipped (it would read the old bytes back). */
static bool temp_for(const char *key)
{
    const struct fuse_context *ctx = fuse_get_context();
    size_t len = strlen(key);
    struct timespec now;
    bool found = false;

    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&temps.mutex);
    for (const struct ztemp *t = temps.head; t && !found; t = t->next)
        found = t->refs == 0 && t->frozen == 0 && t->uid == ctx->uid && t->tid == ctx->pid &&
                now.tv_sec - t->used.tv_sec <= ZTEMP_IDLE_S && zarr_temp_name(t->path, key, len);
    pthread_mutex_unlock(&temps.mutex);
    return found;
}

int drxfs_zarr_hide(const struct drxfs_node *n, bool no_keys)
{
    char key[ZKEY_MAX];
    struct ztemp *t;

    if (n->zlevel == ZL_FILE && zkey(n, n->zvar, n->zname, key, sizeof key) == 0) {
        if ((t = ztemp_get(key))) {
            ztemp_put(t);
            return 0;
        }
        if (temp_for(key))
            return 1;
    }
    int rc = drxfs_zarr_unlink(n, no_keys);
    /* metadata is never removed (its unlink is EPERM): hidden, a rename
     * over it follows, from any temporary */
    return rc == -EPERM && !no_keys ? 1 : rc < 0 ? rc : 1;
}

int drxfs_zarr_unlink(const struct drxfs_node *n, bool no_keys)
{
    char key[ZKEY_MAX];
    struct ztemp *t;
    struct zctx zc;
    struct zinfo zi;
    void *fill = NULL;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (n->zlevel == ZL_FILE && zkey(n, n->zvar, n->zname, key, sizeof key) == 0 &&
        (t = ztemp_get(key))) {
        ztemp_unlink(t);
        ztemp_put(t);
        return 0;
    }
    if ((rc = zctx_open(&zc, n, false)) < 0)
        return rc;
    if ((rc = zclassify(n, &zc, &zi)) == 0 && zi.what != ZW_KEY)
        rc = zi.what == ZW_META ? -EPERM : -EISDIR;
    if (rc == 0 && no_keys) {
        zkey(n, n->zvar, n->zname, key, sizeof key);
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: not removed: this process was refused removing the array's "
                            "files a moment ago (rm -r of an array stores the fill into no "
                            "chunk; remove arrays with drx rm)",
                            key);
        rc = -EPERM;
    }
    if (rc == 0) {
        /* Zarr deletes a chunk that holds only the fill: it reads as the
         * fill from now on */
        const struct drx_array_meta *m = drx_array_meta(zc.a[zi.var]);
        if (!(fill = malloc(m->chunk_bytes))) {
            rc = -ENOMEM;
        } else {
            for (uint64_t e = 0; e < m->chunk_elems; e++)
                memcpy((char *)fill + e * m->elem_size, m->fill, m->elem_size);
            rc = store_chunk(n, &zc, zi.var, fill, m->chunk_bytes);
        }
    }
    free(fill);
    zctx_close(&zc);
    return rc;
}
