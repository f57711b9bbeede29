/* The table of array handles shared by the mount's lookups and open files
 * (the files themselves are drxfs_array.c).
 *
 * One drx_array handle per array serves every lookup and open file.  Its
 * rwlock is taken shared for chunk I/O and metadata reads, exclusive for
 * reload and cache resizing.  Freshness: every path operation stats the
 * .xmd anyway (resolution); when its inode, size or times differ from what
 * the handle last read, the handle reloads before answering, so a `drx
 * extend` by another process shows at once (the daemon runs with entry and
 * attribute timeouts of 0, and data files bypass the page cache).
 *
 * Chunk cache: only arrays with open files have one; cache.bytes is split
 * evenly between them.  libcore empties it before a read when the .xta was
 * written since (it watches the file); it is also emptied at open when the
 * .xta's size or times changed, for writers the watch cannot see (another
 * node of a network file system).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drxfs_i.h"

/* Idle handles kept open for fast lookups. */
#define DRXFS_ARR_IDLE_MAX 32

static struct {
    pthread_mutex_t mutex;
    struct drxfs_arr *head; /* most recently used first */
    unsigned count;
} table = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static void sig_of(struct drxfs_sig *s, const struct stat *st)
{
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtim = st->st_mtim;
    s->ctim = st->st_ctim;
}

/* Whether b (a stat by name) is the file of a; either unknown (dev 0: its
 * stat failed) counts as the same. */
static bool same_file(const struct drxfs_sig *a, const struct drxfs_sig *b)
{
    return a->dev == 0 || b->dev == 0 || (a->dev == b->dev && a->ino == b->ino);
}

static bool sig_same(const struct drxfs_sig *a, const struct drxfs_sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

/* Arrays whose open failed on what their files hold (EINVAL, EFBIG: a bad
 * or oversized .xmd, an .xta too short for it), with the signatures of the
 * .xmd and .xta taken before the attempt: while both are unchanged, every
 * access gets the same error for the price of a stat, where a new attempt
 * would read and parse up to 64 MiB again.  A few entries, reused in turn:
 * an entry lost only costs a parse. */
#define DRXFS_ARR_FAILED_MAX 64

static struct {
    pthread_mutex_t mutex;
    unsigned next;
    struct arr_failed {
        char key[PATH_MAX];
        struct drxfs_sig xmd, xta;
        int rc;
        char msg[DRX_ERR_LEN];
    } e[DRXFS_ARR_FAILED_MAX];
} failed = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* The signature of rel's .xta now, zeroed when it cannot be stat'ed. */
static void xta_sig(const char *rel, struct drxfs_sig *s)
{
    char xta[PATH_MAX];
    struct stat st;

    memset(s, 0, sizeof *s);
    if (drxfs_rel_suffix(xta, rel, DRXFS_XTA) == 0 &&
        drx_store_entry_stat(drxfs.store, xta, &st) == 0)
        sig_of(s, &st);
}

/* The entry of key, or a free or the oldest one to reuse (key empty).
 * failed.mutex held. */
static struct arr_failed *failed_slot(const char *key, bool reuse)
{
    for (unsigned i = 0; i < DRXFS_ARR_FAILED_MAX; i++)
        if (strcmp(failed.e[i].key, key) == 0)
            return &failed.e[i];
    if (!reuse)
        return NULL;
    failed.next = (failed.next + 1) % DRXFS_ARR_FAILED_MAX;
    return &failed.e[failed.next];
}

/* The error an earlier open of n's array got, when its files are as they
 * were then (the .xmd as n's stat saw it); 0 otherwise. */
static int failed_again(const struct drxfs_node *n)
{
    struct drxfs_sig xmd, xta;
    struct arr_failed *f;
    int rc = 0;

    pthread_mutex_lock(&failed.mutex);
    f = failed_slot(n->rel, false);
    pthread_mutex_unlock(&failed.mutex);
    if (!f)
        return 0;
    sig_of(&xmd, &n->st);
    xta_sig(n->rel, &xta);
    pthread_mutex_lock(&failed.mutex);
    if (strcmp(f->key, n->rel) == 0 && sig_same(&f->xmd, &xmd) && sig_same(&f->xta, &xta)) {
        rc = f->rc;
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cannot open array: %s", n->rel, f->msg);
    }
    pthread_mutex_unlock(&failed.mutex);
    return rc;
}

static void failed_keep(const struct drxfs_node *n, const struct drxfs_sig *xta, int rc,
                        const char *msg)
{
    struct arr_failed *f;

    if (strlen(n->rel) >= sizeof f->key)
        return;
    pthread_mutex_lock(&failed.mutex);
    f = failed_slot(n->rel, true);
    strcpy(f->key, n->rel);
    sig_of(&f->xmd, &n->st);
    f->xta = *xta;
    f->rc = rc;
    snprintf(f->msg, sizeof f->msg, "%s", msg);
    pthread_mutex_unlock(&failed.mutex);
}

static void arr_destroy(struct drxfs_arr *e)
{
    if (!e)
        return;
    drx_array_close(e->a);
    if (e->pin >= 0)
        close(e->pin);
    pthread_rwlock_destroy(&e->lock);
    free(e->key);
    free(e);
}

static void list_unlink(struct drxfs_arr *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        table.head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
    table.count--;
}

static void list_push(struct drxfs_arr *e)
{
    e->prev = NULL;
    e->next = table.head;
    if (table.head)
        table.head->prev = e;
    table.head = e;
    table.count++;
}

/* Closes idle entries beyond the limit, oldest first.  Table locked. */
static void trim_idle(void)
{
    struct drxfs_arr *e = table.head, *last = NULL;
    unsigned idle = 0;
    for (; e; e = e->next) {
        last = e;
        if (e->refs == 0)
            idle++;
    }
    for (e = last; e && idle > DRXFS_ARR_IDLE_MAX;) {
        struct drxfs_arr *prev = e->prev;
        if (e->refs == 0) {
            list_unlink(e);
            arr_destroy(e);
            idle--;
        }
        e = prev;
    }
}

/* Opens e's array at libcore path path for reading and writing when it
 * can, else for reading (e->rdonly, or e->shared when its chunk file has a
 * second name). */
static int arr_open_rw_or_ro(struct drxfs_arr *e, const struct drxfs_node *n, const char *path,
                             struct drx_err *err)
{
    int rc = -EROFS;

    if (!drxfs.ro)
        rc = drx_array_open(path, DRX_RDWR, &e->a, err);
    if (rc == -EMLINK) {
        /* A crash left a second name of its chunks: reads go on, writes
         * get EIO until drx fsck --repair (the message says so). */
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: %s", n->rel, err->msg);
        e->shared = true;
    }
    if (rc == -EACCES || rc == -EPERM || rc == -EROFS || rc == -EMLINK) {
        err->msg[0] = '\0';
        e->rdonly = !e->shared;
        /* the store's file system gone read-only (errors=remount-ro)
         * says so to writers, as striped and plain files do */
        e->rdonly_rc = rc == -EROFS ? -EROFS : -EACCES;
        rc = drx_array_open(path, DRX_RDONLY, &e->a, err);
    }
    return rc;
}

static int arr_open(const struct drxfs_node *n, struct drxfs_arr **out)
{
    char path[PATH_MAX + 64];
    struct drx_err err = {{0}};
    struct drxfs_arr *e = calloc(1, sizeof(*e));
    struct drxfs_sig xta;
    struct stat st;
    int rc;

    if (!e)
        return -ENOMEM;
    e->pin = -1;
    pthread_rwlock_init(&e->lock, NULL);
    if (!(e->key = strdup(n->rel))) {
        rc = -ENOMEM;
        goto out;
    }
    /* the handle keeps the path (reload): and its pin, if any */
    if ((rc = drxfs_lib_path(path, sizeof(path), n->rel, &e->pin)) < 0)
        goto out;
    xta_sig(n->rel, &xta); /* before the open: a change meanwhile is seen next time */
    if ((rc = arr_open_rw_or_ro(e, n, path, &err)) < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cannot open array: %s", n->rel,
                            err.msg[0] ? err.msg : strerror(-rc));
        if (rc == -EINVAL || rc == -EFBIG)
            failed_keep(n, &xta, -EIO, err.msg[0] ? err.msg : strerror(-rc));
        rc = (rc == -ENOENT || rc == -ENOMEM || rc == -EACCES) ? rc : -EIO;
        goto out;
    }
    /* The stat the resolution saw may predate what open read; a second
     * reload on the next access is harmless. */
    sig_of(&e->xmd, &n->st);
    if (fstat(drx_array_xta_fd(e->a), &st) == 0)
        sig_of(&e->xta, &st);
    *out = e;
    return 0;
out:
    arr_destroy(e);
    return rc;
}

/* The .xmd changed: reload the metadata, or tell the caller the array was
 * replaced (the .xta is another file) by returning 1.  e->lock held
 * exclusive. */
static int arr_refresh(struct drxfs_arr *e, const struct drxfs_node *n)
{
    char xta[PATH_MAX];
    struct stat st_now, st_ours;
    struct drx_err err = {{0}};
    int rc;

    if ((rc = drxfs_rel_suffix(xta, n->rel, DRXFS_XTA)) < 0)
        return rc;
    if ((rc = drx_store_entry_stat(drxfs.store, xta, &st_now)) < 0)
        return rc == -ENOENT ? -ENOENT : -EIO;
    if (fstat(drx_array_xta_fd(e->a), &st_ours) < 0)
        return -EIO;
    if (st_now.st_ino != st_ours.st_ino || st_now.st_dev != st_ours.st_dev)
        return 1;
    rc = drx_array_reload(e->a, &err);
    /* another array under the name now (libcore's pair check): replaced */
    if (rc == -ESTALE)
        return 1;
    if (rc < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: reloading metadata: %s", n->rel,
                            err.msg[0] ? err.msg : strerror(-rc));
        return -EIO;
    }
    if (rc > 0)
        drx_log(DRX_LOG_DEBUG, "%s: metadata changed on disk, reloaded", n->rel);
    sig_of(&e->xmd, &n->st);
    return 0;
}

void drxfs_arr_detach(struct drxfs_arr *e)
{
    pthread_mutex_lock(&table.mutex);
    if (!e->detached) {
        e->detached = true;
        list_unlink(e);
    }
    pthread_mutex_unlock(&table.mutex);
}

/* -EIO, logged with the reason, when e's .xta no longer holds every chunk
 * its metadata names; 0 otherwise.  Its size from an open of the name (on
 * NFS an open revalidates what a stat may take from the client's cache).
 * e->lock held. */
static int cut_short(struct drxfs_arr *e)
{
    const struct drx_array_meta *m = drx_array_meta(e->a);
    uint64_t need = m->map.nchunks * m->chunk_bytes;
    char xta[PATH_MAX];
    struct stat st;
    int fd = -1;

    if (drxfs_rel_suffix(xta, e->key, DRXFS_XTA) < 0 ||
        (fd = drx_store_entry_open(drxfs.store, xta, O_RDONLY | O_NONBLOCK, 0)) < 0 ||
        fstat(fd, &st) < 0 || (uint64_t)st.st_size >= need) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    close(fd);
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: cannot open array: %s is %jd bytes, shorter than the %" PRIu64
                        " its metadata needs (run drx fsck)",
                        e->key, xta, (intmax_t)st.st_size, need);
    return -EIO;
}

void drxfs_arr_read_failed(struct drxfs_arr *e, size_t size, uint64_t off, int rc)
{
    if (rc != -EIO || cut_short(e) == 0)
        drx_log_ratelimited(DRX_LOG_ERROR, "%s: read of %zu bytes at %" PRIu64 ": %s", e->key,
                            size, off, strerror(-rc));
}

int drxfs_arr_get(const struct drxfs_node *n, struct drxfs_arr **out)
{
    struct drxfs_arr *e, *fresh = NULL;
    struct drxfs_sig now;
    int rc;

    sig_of(&now, &n->st);
again:
    pthread_mutex_lock(&table.mutex);
    for (e = table.head; e; e = e->next)
        if (strcmp(e->key, n->rel) == 0)
            break;
    if (e) {
        e->refs++;
        if (e != table.head) {
            list_unlink(e);
            list_push(e);
        }
    } else if (fresh) {
        e = fresh;
        fresh = NULL;
        e->refs = 1;
        list_push(e);
        trim_idle();
    }
    pthread_mutex_unlock(&table.mutex);
    if (fresh) {
        /* Another thread opened it meanwhile. */
        arr_destroy(fresh);
        fresh = NULL;
    }
    if (!e) {
        if ((rc = failed_again(n)) < 0 || (rc = arr_open(n, &fresh)) < 0)
            return rc;
        goto again;
    }

    /* The .xta by its name now: replaced by a rename while the .xmd stayed
     * (an rsync or a restore of the chunks alone), the handle serves
     * another file's bytes, mode and ACL. */
    struct drxfs_sig xnow = {0};
    xta_sig(n->rel, &xnow);
    pthread_rwlock_rdlock(&e->lock);
    bool same = sig_same(&e->xmd, &now) && same_file(&e->xta, &xnow);
    /* The same .xta cut behind the handle (truncate, a restore in place):
     * EIO at every access with the reason, as an open of it gets, not a
     * bare EIO from the reads of its open files alone (those log it too:
     * drxfs_arr_read_failed).  Grown back, it serves again. */
    const struct drx_array_meta *m = drx_array_meta(e->a);
    if (same && xnow.dev && (uint64_t)xnow.size < m->map.nchunks * m->chunk_bytes &&
        (rc = cut_short(e)) < 0) {
        pthread_rwlock_unlock(&e->lock);
        drxfs_arr_put(e);
        return rc;
    }
    pthread_rwlock_unlock(&e->lock);
    if (!same) {
        pthread_rwlock_wrlock(&e->lock);
        rc = sig_same(&e->xmd, &now) && same_file(&e->xta, &xnow) ? 0 : arr_refresh(e, n);
        pthread_rwlock_unlock(&e->lock);
        if (rc != 0) {
            /* Replaced or gone: this handle serves only its open files. */
            drxfs_arr_detach(e);
            drxfs_arr_put(e);
            if (rc < 0)
                return rc;
            goto again;
        }
    }
    *out = e;
    return 0;
}

void drxfs_arr_put(struct drxfs_arr *e)
{
    bool destroy = false;
    if (!e)
        return;
    pthread_mutex_lock(&table.mutex);
    if (--e->refs == 0 && e->detached)
        destroy = true;
    pthread_mutex_unlock(&table.mutex);
    if (destroy)
        arr_destroy(e);
}

struct drx_array *drxfs_arr_rdlock(struct drxfs_arr *e)
{
    pthread_rwlock_rdlock(&e->lock);
    return e->a;
}

void drxfs_arr_unlock(struct drxfs_arr *e)
{
    pthread_rwlock_unlock(&e->lock);
}

bool drxfs_arr_writable(const struct drxfs_arr *e)
{
    return !e->rdonly && !e->shared && !drxfs.ro;
}

const char *drxfs_arr_key(const struct drxfs_arr *e)
{
    return e->key;
}

void drxfs_arr_forget(const char *rel)
{
    size_t len = rel ? strlen(rel) : 0;
    pthread_mutex_lock(&table.mutex);
    for (struct drxfs_arr *e = table.head, *next; e; e = next) {
        next = e->next;
        /* rel itself, or anything below it when rel is a directory */
        if (rel && !(strncmp(e->key, rel, len) == 0 && (e->key[len] == '\0' || e->key[len] == '/')))
            continue;
        list_unlink(e);
        e->detached = true;
        if (e->refs == 0)
            arr_destroy(e);
    }
    pthread_mutex_unlock(&table.mutex);
}

void drxfs_arr_shutdown(void)
{
    drxfs_arr_forget(NULL);
}

/* Splits cache.bytes evenly between the arrays that have open files.
 * Called without locks held. */
static void cache_rebalance(void)
{
    struct drxfs_arr **act = NULL;
    unsigned n = 0, nactive = 0;

    pthread_mutex_lock(&table.mutex);
    for (struct drxfs_arr *e = table.head; e; e = e->next)
        if (e->nopen)
            nactive++;
    if (nactive)
        act = calloc(nactive, sizeof(*act));
    for (struct drxfs_arr *e = table.head; e && act; e = e->next)
        if (e->nopen && n < nactive) {
            e->refs++;
            act[n++] = e;
        }
    pthread_mutex_unlock(&table.mutex);
    if (!act)
        return;
    size_t share = n ? (size_t)(drxfs.cache_bytes / n) : 0;
    for (unsigned i = 0; i < n; i++) {
        struct drxfs_arr *e = act[i];
        pthread_rwlock_wrlock(&e->lock);
        if (e->cache_set != share) {
            drx_array_set_cache(e->a, share);
            e->cache_set = share;
        }
        pthread_rwlock_unlock(&e->lock);
        drxfs_arr_put(e);
    }
    free(act);
}

void drxfs_arr_xta_seen(struct drxfs_arr *e, const struct stat *st)
{
    struct drxfs_sig now;
    bool same;

    sig_of(&now, st);
    pthread_rwlock_rdlock(&e->lock);
    same = sig_same(&now, &e->xta);
    pthread_rwlock_unlock(&e->lock);
    if (same)
        return;
    pthread_rwlock_wrlock(&e->lock);
    if (!sig_same(&now, &e->xta)) {
        if (e->cache_set) {
            drx_array_set_cache(e->a, 0);
            drx_array_set_cache(e->a, e->cache_set);
        }
        e->xta = now;
    }
    pthread_rwlock_unlock(&e->lock);
}

/* Counts an open file of e; empties its chunk cache when the .xta changed
 * since (another process wrote chunks). */
void drxfs_arr_opened(struct drxfs_arr *e)
{
    struct stat st;
    bool first;

    pthread_mutex_lock(&table.mutex);
    first = e->nopen++ == 0;
    pthread_mutex_unlock(&table.mutex);

    if (fstat(drx_array_xta_fd(e->a), &st) == 0)
        drxfs_arr_xta_seen(e, &st);
    if (first)
        cache_rebalance();
}

void drxfs_arr_closed(struct drxfs_arr *e)
{
    bool last;
    pthread_mutex_lock(&table.mutex);
    last = --e->nopen == 0;
    pthread_mutex_unlock(&table.mutex);
    if (last) {
        pthread_rwlock_wrlock(&e->lock);
        drx_array_set_cache(e->a, 0);
        e->cache_set = 0;
        pthread_rwlock_unlock(&e->lock);
        cache_rebalance();
    }
}
