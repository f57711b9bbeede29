/* The kernel's caches of the mount: which mount paths it may hold
 * attributes or pages for, what each showed when last reported, and their
 * invalidation.
 *
 * The kernel keeps names and attributes for the entry/attr timeouts and a
 * file's pages across opens when open answers keep_cache.  Every path the
 * daemon reports (getattr, open) is recorded under its "group", the store
 * object behind it (an array's store name for every view of it and for
 * its zarr/ keys, also those a coordinate variable shows in another
 * array's group; a plain or striped file's name), with a signature of the store files it was made
 * from (inode, size, times of the .xmd and .xta, the metafile, the file;
 * plus a count of the daemon's own writes to the group).  Then:
 *
 *   - at open, a path whose signature changed since it was last reported
 *     loses its attributes and pages before open returns (close-to-open,
 *     also for changes nothing here can see: another node of a network
 *     file system, another drxfs of the same store);
 *   - a write through the mount invalidates every other path of its group
 *     (every cached view of the array), from a thread;
 *   - an inotify watch on each store directory holding something reported
 *     sees drx, drx-load and other processes finish a change (close after
 *     writing, rename over, removal, attribute change) and invalidates the
 *     group's paths, from the same thread.
 *
 * Invalidation is fuse_invalidate_path() (attributes and pages of the
 * node libfuse knows by that path), from the thread, sent through a child
 * process (drxfs_notify.c); at open and getattr the attributes alone
 * (drxfs_inval_attrs).  A page invalidation may wait for pages under I/O,
 * whose requests need the workers: it never runs with a lock of ours held.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "drx/stripe.h"
#include "drxfs_i.h"

/* Store directories watched at most (each costs the kernel about 1 KiB);
 * beyond, changes show at the next open only. */
#define KC_WATCHES_MAX 4096
#define KC_BUCKETS 4096
/* Paths are also hashed by name: a group may hold thousands (the keys of
 * a zarr/ variable), and every open and getattr looks one up. */
#define KC_PATH_BUCKETS 16384

#define KC_WATCH_MASK                                                                              \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_MOVE_SELF |         \
     IN_DELETE_SELF | IN_ONLYDIR)

/* An open file of a path: what a stat by its process shows while the
 * view has another shape (drxfs_kc_own_size). */
struct kc_open {
    struct kc_open *next;
    const struct drxfs_fh *owner; /* its handle (alive while recorded: its
                                   * release drops the record first) */
    pid_t tid;         /* the thread that opened it */
    pid_t tgid;        /* its process (0: not looked up, -1: not found) */
    uint64_t shape;
    off_t size; /* fixed at open, or -1 */
};

struct kc_group;
struct kc_path {
    struct kc_path *next;  /* in its group */
    struct kc_path *hnext; /* in its hash bucket */
    struct kc_group *group;
    uint64_t open_sig; /* pages when last opened (0: never) */
    uint64_t attr_sig; /* when attributes were last reported */
    unsigned nopen;    /* open files sharing its pages ... */
    uint64_t shape;    /* ... all opened on this shape of the view */
    bool conflict;     /* an open of another shape bypassed them */
    struct kc_open *opens; /* every open file, those that bypass them too */
    char path[];           /* mount path */
};

struct kc_group {
    struct kc_group *next; /* hash chain */
    struct kc_path *paths;
    uint64_t writes;  /* the daemon's writes: part of the signature */
    bool pending;     /* queued for invalidation */
    bool pending_all; /* ... of every path, not all but one */
    char *except;     /* the one path a write came through */
    struct kc_group *qnext;
    char key[]; /* store-relative name */
};

/* Watches are found by descriptor (each event) and by directory (each
 * new group): hashed both ways, as a user can make thousands. */
#define KC_WATCH_BUCKETS 1024
struct kc_watch {
    int wd;
    char *rel;
    struct kc_watch *wnext; /* in its descriptor's bucket */
    struct kc_watch *rnext; /* in its directory's bucket */
};

static struct {
    pthread_mutex_t mutex;
    struct kc_group *bucket[KC_BUCKETS];
    struct kc_path *pbucket[KC_PATH_BUCKETS];
    struct kc_group *queue;
    unsigned npaths;
    struct kc_watch *wbucket[KC_WATCH_BUCKETS];
    struct kc_watch *rbucket[KC_WATCH_BUCKETS];
    unsigned nwatches;
    bool flush_all; /* forget everything at the thread's next turn */
    struct fuse *fuse;
    int ifd, efd;
    bool started;
    pthread_t thread;
    /* counters for the log at unmount */
    unsigned long events, invalidations, kept, dropped, direct, overflows;
} kc = {.mutex = PTHREAD_MUTEX_INITIALIZER, .ifd = -1, .efd = -1};

static uint64_t mix(uint64_t h, uint64_t v)
{
    /* FNV-1a over the 8 bytes of v */
    for (int i = 0; i < 8; i++, v >>= 8) {
        h ^= v & 0xff;
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t drxfs_kc_sig(uint64_t h, const struct stat *st)
{
    if (!h)
        h = 0xcbf29ce484222325ULL;
    h = mix(h, (uint64_t)st->st_dev);
    h = mix(h, (uint64_t)st->st_ino);
    h = mix(h, (uint64_t)st->st_size);
    h = mix(h, (uint64_t)st->st_mtim.tv_sec);
    h = mix(h, (uint64_t)st->st_mtim.tv_nsec);
    h = mix(h, (uint64_t)st->st_ctim.tv_sec);
    h = mix(h, (uint64_t)st->st_ctim.tv_nsec);
    return h ? h : 1;
}

/* The signature of what the kernel was told about store object rel of
 * kind k: the store files it is made of, stat'ed now (the same way for
 * getattr and open, whatever each kind's code reports), the size reported
 * (a striped file's handle knows sizes not yet recorded) and the daemon's
 * writes to it.  Stat'ed in rel's directory opened beneath the store
 * (drx_store_dir_get()), as everything the daemon does by name: by path
 * from the root, a directory swapped for a symlink to a hung mount hung
 * the daemon's thread there (a getattr by handle of a file opened
 * before the swap). */
static int stat_suffixed(int dfd, const char *name, const char *suffix, struct stat *st)
{
    char file[NAME_MAX + 8];
    int n = snprintf(file, sizeof file, "%s%s", name, suffix);

    if (n < 0 || (size_t)n >= sizeof file)
        return -1;
    return fstatat(dfd, file, st, AT_SYMLINK_NOFOLLOW);
}

uint64_t drxfs_kc_sig_of(enum drxfs_kind k, const char *rel, const struct stat *reported)
{
    const char *name;
    struct stat st;
    uint64_t h = mix(0xcbf29ce484222325ULL, drxfs_kc_writes(rel));
    int dfd = drx_store_dir_get(drxfs.store, rel, &name);

    if (dfd < 0)
        return 0;
    if (k == DRXFS_STRIPED && reported)
        h = mix(h, (uint64_t)reported->st_size);
    if (k == DRXFS_PLAIN || k == DRXFS_STRIPED)
        h = stat_suffixed(dfd, name, k == DRXFS_PLAIN ? "" : DRXFS_NAFS, &st) == 0
                ? drxfs_kc_sig(h, &st)
                : 0;
    else if (stat_suffixed(dfd, name, DRXFS_XMD, &st) < 0)
        h = 0;
    else {
        h = drxfs_kc_sig(h, &st);
        h = stat_suffixed(dfd, name, DRXFS_XTA, &st) == 0 ? drxfs_kc_sig(h, &st) : 0;
    }
    drx_store_dir_put(drxfs.store, dfd);
    return h;
}

/* The signature of a file's bytes, for keep_cache: its attributes'
 * signature, and for a striped file also its subfiles (written by another
 * node, or removed, behind the metafile's back). */
uint64_t drxfs_kc_page_sig(enum drxfs_kind k, const char *rel, uint64_t attr_sig)
{
    char path[PATH_MAX + 64];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    struct stat st;
    uint64_t h = attr_sig;

    if (k == DRXFS_ANC)
        return 0; /* coordinate variables come from other arrays */
    if (k != DRXFS_STRIPED || !h)
        return h;
    int pin, rc = drxfs_lib_path(path, sizeof(path), rel, &pin);

    if (rc == 0)
        rc = drx_stripe_stat(drxfs.store, path, &m, &err);
    drxfs_unpin(pin);
    if (rc < 0)
        return 0;
    for (unsigned i = 0; i < m.layout.count; i++) {
        int dfd = m.sub[i].dir < DRX_MAX_STRIPE_DIRS ? drxfs.store->dir_fds[m.sub[i].dir] : -1;
        if (dfd < 0 || fstatat(dfd, m.sub[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return 0;
        h = drxfs_kc_sig(h, &st);
    }
    return h;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static unsigned hash_key(const char *s)
{
    return (unsigned)(hash_str(s) % KC_BUCKETS);
}

static struct kc_path **path_bucket(const char *path)
{
    return &kc.pbucket[hash_str(path) % KC_PATH_BUCKETS];
}

/* Mutex held. */
static struct kc_group *group_find(const char *key, bool make)
{
    unsigned b = hash_key(key);
    struct kc_group *g;
    for (g = kc.bucket[b]; g; g = g->next)
        if (strcmp(g->key, key) == 0)
            return g;
    if (!make)
        return NULL;
    size_t len = strlen(key) + 1;
    if (!(g = calloc(1, sizeof(*g) + len)))
        return NULL;
    memcpy(g->key, key, len);
    g->next = kc.bucket[b];
    kc.bucket[b] = g;
    return g;
}

/* Mutex held. */
static struct kc_path *path_find(struct kc_group *g, const char *path, bool make)
{
    struct kc_path **b = path_bucket(path), *p;
    for (p = *b; p; p = p->hnext)
        if (p->group == g && strcmp(p->path, path) == 0)
            return p;
    if (!make)
        return NULL;
    size_t len = strlen(path) + 1;
    if (!(p = calloc(1, sizeof(*p) + len)))
        return NULL;
    memcpy(p->path, path, len);
    p->group = g;
    p->next = g->paths;
    g->paths = p;
    p->hnext = *b;
    *b = p;
    if (++kc.npaths > drxfs.kcache_paths)
        kc.flush_all = true;
    return p;
}

static void wake(void)
{
    uint64_t one = 1;
    if (kc.efd >= 0 && write(kc.efd, &one, sizeof(one)) < 0)
        drx_log(DRX_LOG_DEBUG, "kernel cache: wake: %s", strerror(errno));
}

/* The watch of descriptor wd, or of directory rel: where it is linked
 * (*result NULL when there is none).  Mutex held. */
static struct kc_watch **watch_of_wd(int wd)
{
    struct kc_watch **wp = &kc.wbucket[(unsigned)wd % KC_WATCH_BUCKETS];
    while (*wp && (*wp)->wd != wd)
        wp = &(*wp)->wnext;
    return wp;
}

static struct kc_watch **watch_of_rel(const char *rel)
{
    struct kc_watch **wp = &kc.rbucket[hash_str(rel) % KC_WATCH_BUCKETS];
    while (*wp && strcmp((*wp)->rel, rel) != 0)
        wp = &(*wp)->rnext;
    return wp;
}

/* Takes w out of both tables and frees it.  Mutex held. */
static void watch_drop(struct kc_watch *w)
{
    *watch_of_wd(w->wd) = w->wnext;
    *watch_of_rel(w->rel) = w->rnext;
    free(w->rel);
    free(w);
    kc.nwatches--;
}

/* Watches the store directory of group key (mutex held). */
static void watch_dir_of(const char *key)
{
    char rel[PATH_MAX];
    const char *slash = strrchr(key, '/');
    struct kc_watch *w, **wp;

    if (kc.ifd < 0 || kc.nwatches >= KC_WATCHES_MAX)
        return;
    snprintf(rel, sizeof(rel), "%.*s", slash ? (int)(slash - key) : 1, slash ? key : ".");
    if (*watch_of_rel(rel))
        return;
    int wd = drx_store_entry_watch(drxfs.store, kc.ifd, rel, KC_WATCH_MASK);
    if (wd < 0) {
        drx_log(DRX_LOG_DEBUG, "kernel cache: cannot watch %s: %s", rel, strerror(-wd));
        return;
    }
    if (*(wp = watch_of_wd(wd)))
        watch_drop(*wp); /* the same directory under another name (renamed) */
    if (!(w = calloc(1, sizeof(*w))) || !(w->rel = strdup(rel))) {
        free(w);
        inotify_rm_watch(kc.ifd, wd);
        return;
    }
    w->wd = wd;
    w->wnext = *watch_of_wd(wd);
    *watch_of_wd(wd) = w;
    wp = watch_of_rel(rel);
    w->rnext = *wp;
    *wp = w;
    kc.nwatches++;
}

/* Records what the kernel was told about path; returns the path record
 * (mutex held) or NULL. */
static struct kc_path *note(const char *key, const char *path)
{
    struct kc_group *g = group_find(key, true);
    if (!g)
        return NULL;
    if (!g->paths)
        watch_dir_of(key);
    return path_find(g, path, true);
}

uint64_t drxfs_kc_writes(const char *key)
{
    uint64_t w = 0;
    pthread_mutex_lock(&kc.mutex);
    struct kc_group *g = group_find(key, false);
    if (g)
        w = g->writes;
    pthread_mutex_unlock(&kc.mutex);
    return w;
}

unsigned drxfs_kc_nopen(const char *key, const char *path)
{
    unsigned n = 0;

    pthread_mutex_lock(&kc.mutex);
    struct kc_group *g = group_find(key, false);
    struct kc_path *p = g ? path_find(g, path, false) : NULL;
    for (struct kc_open *o = p ? p->opens : NULL; o; o = o->next)
        n++;
    pthread_mutex_unlock(&kc.mutex);
    return n;
}

/* The process of thread tid (the kernel gives a request's thread), from
 * /proc; -1 when it is gone. */
static pid_t tgid_of(pid_t tid)
{
    char name[64], buf[512];
    ssize_t n;
    int fd;

    snprintf(name, sizeof name, "/proc/%d/status", (int)tid);
    if ((fd = open(name, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *t = strstr(buf, "\nTgid:");
    return t ? (pid_t)strtol(t + 7, NULL, 10) : -1;
}

/* Whether open o is the process's of thread tid (process tgid, -1 when
 * not found). */
static bool same_process(const struct kc_open *o, pid_t tid, pid_t tgid)
{
    if (o->tgid > 0)
        return o->tgid == tgid;
    return o->tid == tid; /* not looked up: its thread alone */
}

/* Whether open o is closed: its RELEASE was taken in, maybe not handled
 * yet (mutex held, which keeps o's handle alive). */
static bool closing(const struct kc_open *o)
{
    return o->owner && __atomic_load_n(&o->owner->closing, __ATOMIC_ACQUIRE);
}

/* drxfs_kc_own_size for thread tid of process tgid; *older set when the
 * process holds a file of another shape (what it is shown then depends on
 * which files it still holds). */
static off_t own_size(const char *key, const char *path, uint64_t shape, pid_t tid, pid_t tgid,
                      bool *older)
{
    bool current = false;
    off_t size = -1;

    pthread_mutex_lock(&kc.mutex);
    struct kc_group *g = group_find(key, false);
    struct kc_path *p = g ? path_find(g, path, false) : NULL;
    for (struct kc_open *o = p ? p->opens : NULL; o && !current; o = o->next) {
        if (!same_process(o, tid, tgid) || closing(o))
            continue;
        if (o->shape == shape)
            current = true;
        else if (o->size >= 0) {
            size = o->size;
            *older = true;
        }
    }
    pthread_mutex_unlock(&kc.mutex);
    return current ? -1 : size;
}

off_t drxfs_kc_own_size(const char *key, const char *path, uint64_t shape)
{
    struct fuse_context *c = kc.fuse ? fuse_get_context() : NULL;
    pid_t tid = c ? c->pid : 0;
    bool older = false;

    if (tid <= 0 || !shape)
        return -1;
    pid_t tgid = tgid_of(tid); /* outside the mutex */
    off_t size = own_size(key, path, shape, tid, tgid, &older);
    /* The process may have closed that file before it asked: the kernel
     * sent the RELEASE first, but in the background, and another worker
     * may not have taken it in yet (drxfs_order.c).  Asked again once
     * every request sent before this one is in (or the wait gave up:
     * what came in meanwhile counts all the same). */
    if (older) {
        drxfs_order_wait();
        size = own_size(key, path, shape, tid, tgid, &older);
    }
    return size;
}

/* Records who's open of p (mutex held); out of memory, it is not. */
static void open_add(struct kc_path *p, uint64_t shape, const struct drxfs_kc_opener *who,
                     pid_t tid, pid_t tgid)
{
    struct kc_open *o;

    if (!who || !(o = calloc(1, sizeof *o)))
        return;
    o->owner = who->owner;
    o->size = who->size;
    o->shape = shape;
    o->tid = tid;
    o->tgid = tgid;
    o->next = p->opens;
    p->opens = o;
}

static void opens_free(struct kc_path *p)
{
    for (struct kc_open *o = p->opens, *on; o; o = on) {
        on = o->next;
        free(o);
    }
    p->opens = NULL;
}

void drxfs_kc_seen(const char *key, const char *path, uint64_t sig, uint64_t shape)
{
    bool drop = false;

    if (!path || !kc.fuse)
        return;
    pthread_mutex_lock(&kc.mutex);
    struct kc_path *p = note(key, path);
    if (p) {
        drop = shape != DRXFS_KC_OWN && p->conflict;
        for (struct kc_open *o = p->opens; o && shape && shape != DRXFS_KC_OWN && !drop;
             o = o->next)
            drop = o->shape != shape && !closing(o);
        /* dropped, the kernel keeps what it had: no signature of it */
        p->attr_sig = drop ? 0 : sig;
    }
    pthread_mutex_unlock(&kc.mutex);
    /* The kernel keeps one size per path, which its page-cache reads stop
     * at and lseek(SEEK_END) gives.  An open file's own attributes land:
     * lseek(SEEK_END) asks for them (a file opened on an older shape of
     * the view gets its own size, and so does one opened since, on the
     * new shape).  Attributes asked by path (stat, fstat) while a file of
     * another shape is open are answered, and invalidated before the
     * answer lands, so that the kernel discards them (a newer attribute
     * version) but stat shows them: the open files' sizes stay. */
    if (drop)
        drxfs_inval_attrs(kc.fuse, path);
    if (kc.flush_all)
        wake();
}

int drxfs_kc_open(const char *key, const char *path, uint64_t attr_sig, uint64_t page_sig,
                  uint64_t shape, const struct drxfs_kc_opener *who)
{
    bool keep = false, stale = true;

    if (!path || !kc.fuse)
        return 0;
    /* the opener's process now, while its thread lives (a pool's thread
     * may be gone by the time its process stats the file), and outside
     * the mutex; only where a size is kept */
    struct fuse_context *c = fuse_get_context();
    pid_t tid = c ? c->pid : 0;
    pid_t tgid = who && who->size >= 0 && tid > 0 ? tgid_of(tid) : 0;
    pthread_mutex_lock(&kc.mutex);
    struct kc_path *p = note(key, path);
    if (p)
        open_add(p, shape, who, tid, tgid);
    if (p && p->nopen && p->shape != shape) {
        p->conflict = true;
        /* Files opened on an older shape of this view (or on the file that
         * another replaced) share the pages and keep reading what they
         * opened (SPEC 4): this open bypasses them. */
        pthread_mutex_unlock(&kc.mutex);
        __atomic_add_fetch(&kc.direct, 1, __ATOMIC_RELAXED);
        return -1;
    }
    if (p) {
        keep = page_sig && p->open_sig == page_sig;
        stale = !keep || !attr_sig || p->attr_sig != attr_sig;
        p->open_sig = page_sig;
        p->attr_sig = attr_sig;
        p->nopen++;
        p->shape = shape;
    }
    pthread_mutex_unlock(&kc.mutex);
    /* The attributes the kernel holds may be older than this open (it does
     * not ask for them again at open); its pages go anyway without
     * keep_cache. */
    if (stale) {
        drxfs_inval_attrs(kc.fuse, path);
        __atomic_add_fetch(&kc.invalidations, 1, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(keep ? &kc.kept : &kc.dropped, 1, __ATOMIC_RELAXED);
    return p ? (keep ? 1 : 0) : -2;
}

void drxfs_kc_close(const char *key, const char *path, const struct drxfs_fh *owner, bool counted)
{
    pthread_mutex_lock(&kc.mutex);
    struct kc_group *g = group_find(key, false);
    struct kc_path *p = g ? path_find(g, path, false) : NULL;
    for (struct kc_open **op = p ? &p->opens : NULL; op && *op; op = &(*op)->next)
        if ((*op)->owner == owner) {
            struct kc_open *o = *op;
            *op = o->next;
            free(o);
            break;
        }
    if (counted && p && p->nopen && --p->nopen == 0)
        p->conflict = false;
    pthread_mutex_unlock(&kc.mutex);
}

/* Mutex held. */
static void enqueue(struct kc_group *g, const char *except)
{
    if (g->pending && !g->pending_all && except && g->except && strcmp(g->except, except) == 0)
        return;
    if (g->pending && (!except || !g->except || strcmp(g->except, except) != 0)) {
        g->pending_all = true;
        return;
    }
    if (!g->pending) {
        g->pending = true;
        g->pending_all = !except;
        free(g->except);
        g->except = except ? strdup(except) : NULL;
        if (except && !g->except)
            g->pending_all = true;
        g->qnext = kc.queue;
        kc.queue = g;
    }
}

void drxfs_kc_changed(const char *key, const char *except)
{
    if (!kc.fuse)
        return;
    pthread_mutex_lock(&kc.mutex);
    struct kc_group *g = group_find(key, false);
    bool queued = false;
    if (g) {
        g->writes++;
        if (g->paths &&
            !(g->paths->next == NULL && except && strcmp(g->paths->path, except) == 0)) {
            queued = !g->pending;
            enqueue(g, except);
        }
    }
    pthread_mutex_unlock(&kc.mutex);
    if (queued)
        wake();
}

/* ---- the thread ---- */

struct kc_todo {
    char **paths;
    size_t n, cap;
};

static void todo_add(struct kc_todo *t, const char *path)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **np = realloc(t->paths, cap * sizeof(*np));
        if (!np)
            return;
        t->paths = np;
        t->cap = cap;
    }
    if ((t->paths[t->n] = strdup(path)))
        t->n++;
}

/* Takes every queued group's paths into t (mutex held). */
static void take_queue(struct kc_todo *t)
{
    for (struct kc_group *g = kc.queue, *next; g; g = next) {
        next = g->qnext;
        for (struct kc_path *p = g->paths; p; p = p->next)
            if (g->pending_all || !g->except || strcmp(p->path, g->except) != 0)
                todo_add(t, p->path);
        g->pending = g->pending_all = false;
        free(g->except);
        g->except = NULL;
        g->qnext = NULL;
    }
    kc.queue = NULL;
}

/* Frees g's paths but those with open files (all: every one), taking them
 * into t to invalidate (mutex held); what is left of g. */
static struct kc_path *forget_paths(struct kc_group *g, struct kc_todo *t, bool all)
{
    struct kc_path *kept = NULL;

    for (struct kc_path *p = g->paths, *pn; p; p = pn) {
        pn = p->next;
        if ((p->nopen || p->opens) && !all) {
            p->next = kept;
            kept = p;
            continue;
        }
        todo_add(t, p->path);
        opens_free(p);
        free(p);
    }
    return kept;
}

/* Forgets every path, taking them into t to invalidate (mutex held).  But
 * for `all` (unmount), the paths of open files stay, with their groups: a
 * record with open files is what keeps files opened on an older shape
 * apart from later opens (SPEC 4: a user's flood of paths must not undo
 * that), and it stays accurate (changes still invalidate it).  Queued
 * invalidations are taken first. */
static void take_all(struct kc_todo *t, bool all)
{
    struct kc_group *keep = NULL;

    take_queue(t);
    for (unsigned b = 0; b < KC_BUCKETS; b++) {
        for (struct kc_group *g = kc.bucket[b], *gn; g; g = gn) {
            gn = g->next;
            if ((g->paths = forget_paths(g, t, all))) {
                g->next = keep;
                keep = g;
                continue;
            }
            free(g->except);
            free(g);
        }
        kc.bucket[b] = NULL;
    }
    memset(kc.pbucket, 0, sizeof(kc.pbucket));
    kc.npaths = 0;
    for (struct kc_group *g = keep, *gn; g; g = gn) {
        gn = g->next;
        struct kc_group **b = &kc.bucket[hash_key(g->key)];
        g->next = *b;
        *b = g;
        for (struct kc_path *p = g->paths; p; p = p->next) {
            struct kc_path **hb = path_bucket(p->path);
            p->hnext = *hb;
            *hb = p;
            kc.npaths++;
        }
    }
    kc.flush_all = false;
}

/* Drops a path libfuse no longer knows (mutex held). */
static void forget_path(const char *path)
{
    struct kc_path **hp, **pp, *p;

    for (hp = path_bucket(path); *hp && strcmp((*hp)->path, path) != 0; hp = &(*hp)->hnext)
        ;
    if (!(p = *hp) || p->nopen || p->opens)
        return;
    for (pp = &p->group->paths; *pp != p; pp = &(*pp)->next)
        ;
    *pp = p->next;
    *hp = p->hnext;
    free(p);
    kc.npaths--;
}

static void run_todo(struct fuse *f, struct kc_todo *t)
{
    size_t gone = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (fuse_invalidate_path(f, t->paths[i]) == -ENOENT)
            gone++;
        else {
            __atomic_add_fetch(&kc.invalidations, 1, __ATOMIC_RELAXED);
            free(t->paths[i]);
            t->paths[i] = NULL;
        }
    }
    if (gone) {
        pthread_mutex_lock(&kc.mutex);
        for (size_t i = 0; i < t->n; i++)
            if (t->paths[i])
                forget_path(t->paths[i]);
        pthread_mutex_unlock(&kc.mutex);
    }
    for (size_t i = 0; i < t->n; i++)
        free(t->paths[i]);
    t->n = 0;
}

/* The group of a name in store directory rel: arrays and striped files
 * drop their suffix.  Returns true when the name is an array's file. */
static bool event_key(char *key, size_t len, const char *rel, const char *name)
{
    static const char *const suffixes[] = {DRXFS_XMD, DRXFS_XTA, DRXFS_NAFS};
    size_t nlen = strlen(name), i;
    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        size_t sl = strlen(suffixes[i]);
        if (nlen > sl && strcmp(name + nlen - sl, suffixes[i]) == 0) {
            nlen -= sl;
            break;
        }
    }
    if (strcmp(rel, ".") == 0)
        snprintf(key, len, "%.*s", (int)nlen, name);
    else
        snprintf(key, len, "%s/%.*s", rel, (int)nlen, name);
    return i < 2;
}

/* Queues every group with paths for invalidation (mutex held). */
static void enqueue_all(void)
{
    for (unsigned b = 0; b < KC_BUCKETS; b++)
        for (struct kc_group *g = kc.bucket[b]; g; g = g->next)
            if (g->paths)
                enqueue(g, NULL);
}

/* One inotify event (mutex held). */
static void handle_event(const struct inotify_event *ev)
{
    struct kc_watch *w;
    char key[PATH_MAX];

    if (ev->mask & IN_Q_OVERFLOW) {
        /* Events were dropped (a flood of them, maybe a user's): any change
         * may be among them, so every path is invalidated. */
        kc.overflows++;
        enqueue_all();
        return;
    }
    if (!(w = *watch_of_wd(ev->wd)))
        return;
    if (ev->mask & (IN_IGNORED | IN_MOVE_SELF | IN_DELETE_SELF)) {
        /* gone or renamed: its name no longer says where it is */
        if (!(ev->mask & IN_IGNORED))
            inotify_rm_watch(kc.ifd, w->wd);
        watch_drop(w);
        return;
    }
    if (!ev->len)
        return;
    if (event_key(key, sizeof(key), w->rel, ev->name) && (ev->mask & (IN_DELETE | IN_MOVED_FROM)))
        /* removed or renamed away by another process (drx rm, drx mv):
         * an idle handle would keep its .xta, and the space, forever */
        drxfs_arr_forget(key);
    struct kc_group *g = group_find(key, false);
    if (g && g->paths)
        enqueue(g, NULL);
}

static void read_events(void)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len;

    while ((len = read(kc.ifd, buf, sizeof(buf))) > 0) {
        pthread_mutex_lock(&kc.mutex);
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            kc.events++;
            handle_event(ev);
            p += sizeof(*ev) + ev->len;
        }
        pthread_mutex_unlock(&kc.mutex);
    }
}

static void *kc_main(void *arg)
{
    struct kc_todo t = {0};
    (void)arg;
    for (;;) {
        struct pollfd pf[2] = {{.fd = kc.efd, .events = POLLIN}, {.fd = kc.ifd, .events = POLLIN}};
        if (poll(pf, kc.ifd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
            break;
        if (pf[0].revents) {
            uint64_t v;
            if (read(kc.efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                break;
        }
        if (kc.ifd >= 0 && pf[1].revents)
            read_events();
        pthread_mutex_lock(&kc.mutex);
        struct fuse *f = kc.fuse;
        if (kc.flush_all)
            take_all(&t, false);
        else
            take_queue(&t);
        pthread_mutex_unlock(&kc.mutex);
        if (!f)
            break;
        run_todo(f, &t);
    }
    for (size_t i = 0; i < t.n; i++)
        free(t.paths[i]);
    free(t.paths);
    return NULL;
}

void drxfs_kc_start(struct fuse *f)
{
    kc.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (kc.efd < 0) {
        drx_log(DRX_LOG_WARNING, "kernel cache: eventfd: %s; the kernel caches nothing",
                strerror(errno));
        return;
    }
    kc.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (kc.ifd < 0)
        drx_log(DRX_LOG_WARNING,
                "kernel cache: inotify: %s; changes by other processes show at the next open",
                strerror(errno));
    kc.fuse = f;
    if (pthread_create(&kc.thread, NULL, kc_main, NULL) != 0) {
        kc.fuse = NULL;
        drx_log(DRX_LOG_WARNING, "kernel cache: no thread; the kernel caches nothing");
        return;
    }
    kc.started = true;
}

bool drxfs_kc_active(void)
{
    return kc.fuse != NULL;
}

void drxfs_kc_stop(void)
{
    if (kc.efd < 0)
        return; /* never started, or stopped already */
    pthread_mutex_lock(&kc.mutex);
    kc.fuse = NULL;
    pthread_mutex_unlock(&kc.mutex);
    if (kc.started) {
        wake();
        pthread_join(kc.thread, NULL);
        kc.started = false;
    }
    drx_log(DRX_LOG_DEBUG,
            "kernel cache: %lu opens kept pages, %lu dropped, %lu direct (older shape "
            "open); %lu invalidations, %lu inotify events (%lu overflows), %u directories "
            "watched",
            kc.kept, kc.dropped, kc.direct, kc.invalidations, kc.events, kc.overflows, kc.nwatches);
    struct kc_todo t = {0};
    pthread_mutex_lock(&kc.mutex);
    take_all(&t, true);
    for (unsigned b = 0; b < KC_WATCH_BUCKETS; b++)
        while (kc.wbucket[b])
            watch_drop(kc.wbucket[b]);
    pthread_mutex_unlock(&kc.mutex);
    for (size_t i = 0; i < t.n; i++)
        free(t.paths[i]);
    free(t.paths);
    if (kc.ifd >= 0)
        close(kc.ifd);
    if (kc.efd >= 0)
        close(kc.efd);
    kc.ifd = kc.efd = -1;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

void drxfs_kc_read_ahead(const char *mnt, unsigned kb)
{
    char line[PATH_MAX * 2 + 512], dev[64] = "", path[128];
    FILE *f = fopen("/proc/self/mountinfo", "re");

    if (!f)
        return;
    /* the last mount at mnt is ours (init runs right after the mount) */
    while (fgets(line, sizeof(line), f)) {
        char mdev[64], point[PATH_MAX + 1];
        if (sscanf(line, "%*s %*s %63s %*s %4096s", mdev, point) != 2)
            continue;
        unescape(point);
        if (strcmp(point, mnt) == 0 && strstr(line, " - fuse"))
            snprintf(dev, sizeof(dev), "%s", mdev);
    }
    fclose(f);
    if (!dev[0])
        return;
    snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    char num[32];
    int len = snprintf(num, sizeof(num), "%u\n", kb);
    if (fd < 0 || write(fd, num, (size_t)len) != len)
        drx_log(DRX_LOG_INFO, "read-ahead stays at the kernel's: %s: %s", path, strerror(errno));
    else
        drx_log(DRX_LOG_DEBUG, "read-ahead %u KiB (%s)", kb, path);
    if (fd >= 0)
        close(fd);
}

void drxfs_kc_first_request(void)
{
    static bool done;
    /* the kernel sets the window from init's reply (at most 128 KiB from
     * libfuse 3.14) after init() returns: ours goes in after that */
    if (__atomic_load_n(&done, __ATOMIC_RELAXED) ||
        __atomic_exchange_n(&done, true, __ATOMIC_RELAXED))
        return;
    if (drxfs.read_ahead_kb && drxfs.mountpoint)
        drxfs_kc_read_ahead(drxfs.mountpoint, drxfs.read_ahead_kb);
}

/* kcache=, kcache_paths=N, read_ahead=KB. */
int drxfs_kc_option(const char *name, const char *value)
{
    if (strcmp(name, "kcache") == 0)
        return drxfs_opt_choice(name, value, "yes", "no", &drxfs.kernel_cache);
    if (strcmp(name, "kcache_paths") == 0) {
        unsigned n;
        if (drxfs_opt_count(name, value, "paths", DRXFS_KCACHE_PATHS_MAX, &n) < 0)
            return -1;
        if (n < 64) {
            fprintf(stderr, "drxfs: %s=%s: expected paths, 64 to %u\n", name, value,
                    DRXFS_KCACHE_PATHS_MAX);
            return -1;
        }
        drxfs.kcache_paths = n;
        return 0;
    }
    if (strcmp(name, "read_ahead") == 0)
        return drxfs_opt_count(name, value, "KiB", 1UL << 20, &drxfs.read_ahead_kb);
    return 1;
}
