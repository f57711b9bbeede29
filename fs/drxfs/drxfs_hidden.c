/* Files removed while open: what keeps fstat working until the last close.
 *
 * The kernel asks the attributes of an open file (fstat, fchmod, ...) by
 * its inode, without the file handle, and libfuse's high-level API answers
 * only for nodes that still have a path.  With hard_remove, an unlinked
 * node has none (ESTALE); without it, libfuse renames a file that is open
 * to a hidden name in the same directory (".fuse_hidden" and 16 hex
 * digits) instead of removing it, serves the open descriptors through that
 * name, and unlinks the name at the last close.  We let libfuse do that
 * (hard_remove off) and give the hidden name its meaning here, which the
 * rename by libfuse alone cannot: left in its directory, a hidden file
 * would make rmdir of that directory fail with ENOTEMPTY (and show in
 * listings), as it does on any libfuse file system.  So the store object
 * moves out of the directory into .drx/hidden/MOUNT-HEX (a striped file's
 * metafile with its .nafs suffix; its subfiles stay where they are), and a
 * mount path whose last component is libfuse's hidden name resolves there
 * (drxfs_node.c), whatever the directory libfuse names.  MOUNT is a random
 * id of this mount, so two mounts of a store never meet.  The last close's
 * unlink of that name removes the object as an unlink would (a striped
 * file's subfiles with its last name).
 *
 * A daemon killed in between leaves the objects in .drx/hidden/: drx fsck
 * counts the subfiles of their metafiles as used while the store is in use
 * and reports them as leftovers when it is idle; --repair removes them.
 * The .drx directory lives at the store's root: an object on another file
 * system (a directory of the store that is a mount point) cannot move
 * there (EXDEV) and is removed at once, as before (fstat then fails).
 *
 * Files of the zarr/ group are not store objects: a hidden name of one is
 * remembered here with its mount path, so that the open descriptors'
 * fstat still finds it (their reads go by their handle).  libfuse hides a
 * name either to remove it or to rename another file over it, and cannot
 * say which: a chunk key is removed at once (the fill stored, as an
 * unlink stores it: a write through data or drx put after the removal
 * must not be undone at the last close), unless one of zarr's
 * temporaries for it (KEY.UUID.partial) waits, whose rename over it comes
 * right after; a temporary is removed at the last close, through the
 * hidden name.  A record stays until that close's unlink of the hidden
 * name, which then does nothing more for a key (drxfs_hidden_zarr_done).
 * Before, a rename over an open key dropped its record, and the readers'
 * fstat failed (ENOENT, which zarr takes for a missing chunk: the fill).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drx/io.h"
#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

#define HIDDEN_PREFIX ".fuse_hidden"
#define HIDDEN_LEN (sizeof HIDDEN_PREFIX - 1 + 16)

static char mount_id[17];
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

static void make_id(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
    snprintf(mount_id, sizeof mount_id, "%016llx", (unsigned long long)v);
}

/* Store objects moved to .drx/hidden by this mount, until removed. */
struct hobj {
    char rel[sizeof DRX_STORE_HIDDEN + 40]; /* without a striped file's suffix */
    /* The store directory it was hidden from: its hidden name means it
     * there only (a user who may not enter that directory must not reach
     * it through the same name elsewhere). */
    char dir[PATH_MAX];
    dev_t dev;
    ino_t ino;
    bool striped;
    struct hobj *next;
};
static struct {
    pthread_mutex_t mutex;
    struct hobj *head;
} htab = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* Files released lately.  libfuse counts a file open until after our
 * release has returned, so an unlink racing with the last close gets the
 * file hidden though we closed it already (SQLite closes its journal, then
 * removes it): such a file is libfuse's to hide, and libfuse removes its
 * hidden name when it has counted the close. */
#define RECENT_SLOTS 64
#define RECENT_NS 500000000LL /* 0.5 s: far above a thread's delay under load */
static struct {
    pthread_mutex_t mutex;
    struct {
        dev_t dev;
        ino_t ino;
        long long t;
    } r[RECENT_SLOTS];
    unsigned next;
} recent = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void recent_add(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&recent.mutex);
    unsigned i = recent.next++ % RECENT_SLOTS;
    recent.r[i].dev = dev;
    recent.r[i].ino = ino;
    recent.r[i].t = now_ns();
    pthread_mutex_unlock(&recent.mutex);
}

static bool recent_has(dev_t dev, ino_t ino)
{
    long long t = now_ns();
    bool found = false;

    pthread_mutex_lock(&recent.mutex);
    for (unsigned i = 0; i < RECENT_SLOTS && !found; i++)
        found = recent.r[i].t && recent.r[i].dev == dev && recent.r[i].ino == ino &&
                t - recent.r[i].t < RECENT_NS;
    pthread_mutex_unlock(&recent.mutex);
    return found;
}

/* zarr/ files hidden by libfuse: hidden name -> mount path. */
struct zhidden {
    char name[HIDDEN_LEN + 1];
    char *path;
    bool done; /* removed or replaced already: the last close removes nothing */
    struct zhidden *next;
};
#define ZHIDDEN_MAX 4096
static struct {
    pthread_mutex_t mutex;
    struct zhidden *head;
    unsigned count;
} ztab = {.mutex = PTHREAD_MUTEX_INITIALIZER};

bool drxfs_hidden_name(const char *name)
{
    size_t p = sizeof HIDDEN_PREFIX - 1;

    if (strncmp(name, HIDDEN_PREFIX, p) != 0 || strlen(name) != HIDDEN_LEN)
        return false;
    for (const char *c = name + p; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

int drxfs_hidden_rel(const char *name, char *rel, size_t len)
{
    pthread_once(&id_once, make_id);
    int n = snprintf(rel, len, DRX_STORE_HIDDEN "/%s-%s", mount_id,
                     name + sizeof HIDDEN_PREFIX - 1);
    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int drxfs_hidden_lookup(const char *dir, const char *name, char *rel, size_t len)
{
    bool found = false;
    int rc = drxfs_hidden_rel(name, rel, len);

    if (rc < 0)
        return rc;
    pthread_mutex_lock(&htab.mutex);
    for (struct hobj *h = htab.head; h && !found; h = h->next)
        found = strcmp(h->rel, rel) == 0 && strcmp(h->dir, dir) == 0;
    pthread_mutex_unlock(&htab.mutex);
    return found ? 0 : -ENOENT;
}

void drxfs_hidden_dir_renamed(const char *from, const char *to)
{
    size_t flen = strlen(from);
    char dir[PATH_MAX];

    pthread_mutex_lock(&htab.mutex);
    for (struct hobj *h = htab.head; h; h = h->next)
        if (strncmp(h->dir, from, flen) == 0 && (h->dir[flen] == '\0' || h->dir[flen] == '/') &&
            (size_t)snprintf(dir, sizeof dir, "%s%s", to, h->dir + flen) < sizeof dir)
            memcpy(h->dir, dir, strlen(dir) + 1);
    pthread_mutex_unlock(&htab.mutex);
}

static const char *last_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The mount path a hidden zarr/ name stands for (malloc'd), or NULL. */
/* The record of hidden path `path` (its last component libfuse's hidden
 * name), or NULL (ztab.mutex held).  libfuse hides a file in its own
 * directory: only there. */
static struct zhidden *zfind(const char *path)
{
    const char *name = last_name(path);

    if (!drxfs_hidden_name(name))
        return NULL;
    for (struct zhidden *z = ztab.head; z; z = z->next)
        if (strcmp(z->name, name) == 0 && name - path == last_name(z->path) - z->path &&
            strncmp(path, z->path, (size_t)(name - path)) == 0)
            return z;
    return NULL;
}

char *drxfs_hidden_zarr_path(const char *path)
{
    pthread_mutex_lock(&ztab.mutex);
    struct zhidden *z = zfind(path);
    char *out = z ? strdup(z->path) : NULL;
    pthread_mutex_unlock(&ztab.mutex);
    return out;
}

/* Drops the records whose hidden name is name (path NULL) or whose mount
 * path is path (name NULL). */
static void zforget(const char *name, const char *path)
{
    pthread_mutex_lock(&ztab.mutex);
    for (struct zhidden **pp = &ztab.head; *pp;) {
        struct zhidden *z = *pp;
        if ((name && strcmp(z->name, name) == 0) || (path && strcmp(z->path, path) == 0)) {
            *pp = z->next;
            ztab.count--;
            free(z->path);
            free(z);
        } else {
            pp = &z->next;
        }
    }
    pthread_mutex_unlock(&ztab.mutex);
}

void drxfs_hidden_replaced(const char *path)
{
    pthread_mutex_lock(&ztab.mutex);
    for (struct zhidden *z = ztab.head; z; z = z->next)
        if (strcmp(z->path, path) == 0)
            z->done = true;
    pthread_mutex_unlock(&ztab.mutex);
}

bool drxfs_hidden_zarr_done(const char *path)
{
    pthread_mutex_lock(&ztab.mutex);
    struct zhidden *z = zfind(path);
    bool done = z && z->done;
    pthread_mutex_unlock(&ztab.mutex);
    return done;
}

/* Takes the record of store object rel (or of inode dev/ino: rel NULL)
 * out of the table; NULL when there is none. */
static struct hobj *htake(const char *rel, dev_t dev, ino_t ino)
{
    struct hobj *found = NULL;

    pthread_mutex_lock(&htab.mutex);
    for (struct hobj **pp = &htab.head; *pp; pp = &(*pp)->next) {
        struct hobj *h = *pp;
        if (rel ? strcmp(h->rel, rel) == 0 : (h->dev == dev && h->ino == ino)) {
            *pp = h->next;
            found = h;
            break;
        }
    }
    pthread_mutex_unlock(&htab.mutex);
    return found;
}

void drxfs_hidden_unlinked(const char *path)
{
    const char *name = last_name(path);
    char rel[PATH_MAX];

    if (!drxfs_hidden_name(name))
        return;
    zforget(name, NULL);
    if (drxfs_hidden_rel(name, rel, sizeof rel) == 0)
        free(htake(rel, 0, 0));
}

/* The store directory of n, "." for the root, into dir (PATH_MAX). */
static void dir_of(const struct drxfs_node *n, char *dir)
{
    const char *slash = strrchr(n->rel, '/');

    if (slash)
        snprintf(dir, PATH_MAX, "%.*s", (int)(slash - n->rel), n->rel);
    else
        strcpy(dir, ".");
}

static void hremember(const struct drxfs_node *n, const char *rel)
{
    struct hobj *h = calloc(1, sizeof *h);
    size_t len = strlen(rel);

    if (!h || len >= sizeof h->rel) {
        free(h);
        return; /* libfuse's unlink at the last close still removes it */
    }
    memcpy(h->rel, rel, len + 1);
    dir_of(n, h->dir);
    h->dev = n->st.st_dev;
    h->ino = n->st.st_ino;
    h->striped = n->kind == DRXFS_STRIPED;
    pthread_mutex_lock(&htab.mutex);
    h->next = htab.head;
    htab.head = h;
    pthread_mutex_unlock(&htab.mutex);
}

/* Removes hidden object h (and frees h). */
static void hremove(struct hobj *h)
{
    char meta[PATH_MAX + 8];
    struct drxfs_node *n;

    if (!h->striped) {
        int rc = drx_store_entry_unlink(drxfs.store, h->rel, 0);
        if (rc < 0 && rc != -ENOENT)
            drx_log_ratelimited(DRX_LOG_WARNING, "%s: cannot remove: %s", h->rel, strerror(-rc));
    } else if ((n = calloc(1, sizeof *n))) {
        snprintf(n->rel, sizeof n->rel, "%s", h->rel);
        n->kind = DRXFS_STRIPED;
        snprintf(meta, sizeof meta, "%s" DRXFS_NAFS, h->rel);
        if (drx_store_entry_stat(drxfs.store, meta, &n->st) == 0)
            drxfs_striped_unlink(n);
        free(n);
    }
    free(h);
}

void drxfs_hidden_releasing(dev_t dev, ino_t ino)
{
    recent_add(dev, ino);
}

void drxfs_hidden_released(dev_t dev, ino_t ino)
{
    struct hobj *h;

    if (!__atomic_load_n(&htab.head, __ATOMIC_RELAXED) || !(h = htake(NULL, dev, ino)))
        return;
    /* libfuse removes the hidden name after the last close, through its
     * path; it has none when the directory was removed meanwhile, so the
     * last close removes it here (libfuse's removal then finds nothing). */
    bool open = h->striped ? drxfs_striped_is_open(dev, ino) : drx_fd_open_on(dev, ino);
    if (!open) {
        hremove(h);
        return;
    }
    pthread_mutex_lock(&htab.mutex);
    h->next = htab.head;
    htab.head = h;
    pthread_mutex_unlock(&htab.mutex);
}

void drxfs_hidden_shutdown(void)
{
    pthread_mutex_lock(&htab.mutex);
    struct hobj *h = htab.head;
    htab.head = NULL;
    pthread_mutex_unlock(&htab.mutex);
    /* every file is closed: what libfuse could not remove goes now */
    while (h) {
        struct hobj *next = h->next;
        hremove(h);
        h = next;
    }
}

static int zremember(const char *name, const char *path, bool done)
{
    struct zhidden *z = calloc(1, sizeof *z);

    if (!z || !(z->path = strdup(path))) {
        free(z);
        return -ENOMEM;
    }
    snprintf(z->name, sizeof z->name, "%s", name);
    z->done = done;
    pthread_mutex_lock(&ztab.mutex);
    /* one per open file hidden (freed at its last close); a user's own
     * renames of closed keys to libfuse's names are bounded here */
    bool full = ztab.count >= ZHIDDEN_MAX;
    if (!full) {
        z->next = ztab.head;
        ztab.head = z;
        ztab.count++;
    }
    pthread_mutex_unlock(&ztab.mutex);
    if (full) {
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: more than %d hidden zarr/ names held: refused",
                            path, ZHIDDEN_MAX);
        free(z->path);
        free(z);
        return -EBUSY;
    }
    return 0;
}

/* .drx/hidden, made beneath the store like every entry the daemon makes
 * (no symlink followed on the way). */
static int hidden_dir(void)
{
    int rc = drx_store_entry_mkdir(drxfs.store, DRX_STORE_HIDDEN, 0700);
    struct stat drx;

    /* the owner of .drx's, as the pools and .drx/fresh: a daemon running
     * as root leaves the store's owner able to remove his store */
    if (rc == 0 && geteuid() == 0 && drx_store_entry_stat(drxfs.store, DRX_STORE_DIR, &drx) == 0)
        (void)drx_store_entry_chown(drxfs.store, DRX_STORE_HIDDEN, drx.st_uid, drx.st_gid);
    return rc == -EEXIST ? 0 : rc;
}

void drxfs_hidden_start(void)
{
    int rc = hidden_dir();

    if (rc < 0)
        drx_log(DRX_LOG_DEBUG, "%s: not made at mount: %s", DRX_STORE_HIDDEN, strerror(-rc));
}

/* Moves plain entry or striped file n to rel; on another file system, or
 * where the hidden name finds no room (a full disk: .drx/hidden not made
 * yet, or its directory needs a block), removes it instead (the old
 * hard_remove behaviour): a user removing the file that filled the disk
 * frees the space, as on a local disk. */
static int move_out(const struct drxfs_node *n, const char *rel)
{
    int rc = hidden_dir();

    if (rc == 0 && n->kind == DRXFS_STRIPED)
        rc = drxfs_striped_rename(n, NULL, rel);
    else if (rc == 0)
        rc = drx_store_entry_rename(drxfs.store, n->rel, rel, 0);
    if (rc == 0)
        hremember(n, rel);
    if (rc == -EXDEV || rc == -ENOSPC || rc == -EDQUOT) {
        if (rc == -EXDEV)
            drx_log(DRX_LOG_DEBUG, "%s: open, removed at once (not on the store's file system)",
                    n->rel);
        else
            drx_log_ratelimited(DRX_LOG_INFO,
                                "%s: open, removed at once (no room for a hidden name: %s): "
                                "fstat of its open descriptors fails",
                                n->rel, strerror(-rc));
        rc = n->kind == DRXFS_STRIPED ? drxfs_striped_unlink(n)
                                      : drx_store_entry_unlink(drxfs.store, n->rel, 0);
    }
    return rc;
}

/* libfuse hides a name its node of which has a file open, within an
 * UNLINK; what the name holds in the store is not that file (neither open
 * nor closed a moment ago) when another mount (another node) removed the
 * open file and made the name anew, or replaced it: the unlink asked is
 * for what the name holds now, as on a local disk, so that is removed (a
 * directory: EISDIR), and the descriptors open here are a removed file's,
 * as on NFS.  It was EPERM: two mounts, four processes creating and
 * unlinking one name, 5 unlinks of 8000 (the SQLite journal audit of
 * 2026-12-07).  Outside an UNLINK (a user's rename to a hidden name, or
 * libfuse's hiding of a rename's target) it stays EPERM. */
static int replaced_unlink(const struct drxfs_node *n)
{
    if (drxfs_order_opcode() != FUSE_UNLINK)
        return -EPERM;
    drx_log(DRX_LOG_DEBUG, "%s: replaced behind the mount while open here: removed", n->rel);
    switch (n->kind) {
    case DRXFS_STRIPED:
        return drxfs_striped_unlink(n);
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
    case DRXFS_LINK:
        return drx_store_entry_unlink(drxfs.store, n->rel, 0);
    case DRXFS_DIR:
    case DRXFS_ARRAY:
        return -EISDIR;
    default:
        return -EPERM;
    }
}

/* libfuse hides only files it has open.  Open here: kept in .drx/hidden
 * until the last close.  Closed here but released a moment ago (an unlink
 * racing with the last close): removed now, as no one holds it; libfuse's
 * removal of the hidden name after it has counted the close then finds
 * nothing, and if it counted the close already nothing is left behind.
 * Anything else is a user's rename to a name libfuse reserves: EPERM (a
 * user's rename of a file closed in the last half second to such a name
 * is taken for libfuse's, README: Known limitations). */
static int hide_file(const struct drxfs_node *n, const char *rel)
{
    bool open = n->kind == DRXFS_PLAIN ? drx_fd_open_on(n->st.st_dev, n->st.st_ino)
                                       : drxfs_striped_is_open(n->st.st_dev, n->st.st_ino);

    if (open) {
        int rc = move_out(n, rel);
        struct hobj *h;
        /* closed meanwhile: our release found no record yet, and libfuse
         * may have counted the close before it marked the file hidden */
        bool still = n->kind == DRXFS_PLAIN ? drx_fd_open_on(n->st.st_dev, n->st.st_ino)
                                            : drxfs_striped_is_open(n->st.st_dev, n->st.st_ino);
        if (rc == 0 && !still && (h = htake(rel, 0, 0)))
            hremove(h);
        return rc;
    }
    if (!recent_has(n->st.st_dev, n->st.st_ino))
        return replaced_unlink(n);
    drx_log(DRX_LOG_DEBUG, "%s: closed while libfuse hid it: removed at once", n->rel);
    return n->kind == DRXFS_STRIPED ? drxfs_striped_unlink(n)
                                    : drx_store_entry_unlink(drxfs.store, n->rel, 0);
}

/* The file this thread hid last, for the rename libfuse makes right after
 * it (drxfs_hidden_same_file).  libfuse renames over an open file by
 * hiding it first, then renaming the source onto its name; the hiding is
 * a rename of the target alone, so it cannot tell that the source is
 * another name of the same file, which POSIX says to leave alone.  Any
 * other path resolved on the thread ends it (drxfs_hidden_pending_end):
 * an unlink's hiding is followed by no rename of its own. */
static __thread struct {
    bool set;
    bool matched; /* taken by the rename that followed it */
    bool striped;
    pid_t pid;
    dev_t dev;
    ino_t ino;
    char to[PATH_MAX];                      /* the mount path hidden */
    char rel[sizeof DRX_STORE_HIDDEN + 40]; /* its hidden store object */
} pending;

void drxfs_hidden_pending_end(void)
{
    pending.set = false;
}

/* A bit no umask has: set in the request's context (libfuse's, this
 * thread's) by the hiding, it is still there when the rename that follows
 * belongs to the same request, and gone when libfuse has begun another
 * (req_fuse_prepare copies each request's umask in): an unlink hides an
 * open file the same way, and the rename a process makes after it must
 * not be taken for libfuse's own (found by the review of 2026-12-06). */
#define SAME_REQUEST_MARK 0x40000000u

static void pending_set(const struct drxfs_node *n, const char *path, const char *rel)
{
    const struct fuse_context *c = fuse_get_context();

    if (strlen(path) >= sizeof pending.to || strlen(rel) >= sizeof pending.rel)
        return;
    strcpy(pending.to, path);
    strcpy(pending.rel, rel);
    pending.dev = n->st.st_dev;
    pending.ino = n->st.st_ino;
    pending.striped = n->kind == DRXFS_STRIPED;
    pending.pid = c ? c->pid : 0;
    pending.set = c != NULL;
    if (c)
        ((struct fuse_context *)c)->umask |= SAME_REQUEST_MARK;
}

bool drxfs_hidden_pending_take(const char *to)
{
    const struct fuse_context *c = fuse_get_context();
    bool same = c && (c->umask & SAME_REQUEST_MARK);
    bool ok = pending.set && same && strcmp(pending.to, to) == 0 && c->pid == pending.pid;

    if (same)
        ((struct fuse_context *)c)->umask &= ~SAME_REQUEST_MARK;

    pending.set = false;
    pending.matched = ok;
    return ok;
}

/* Links the object the pending hiding moved to .drx/hidden back to to_rel
 * (it keeps its hidden name for the open descriptors). */
static int link_back(const char *to_rel)
{
    int rc;

    if (pending.striped) {
        struct drxfs_node *hn = calloc(1, sizeof *hn);
        if (!hn)
            return -ENOMEM;
        snprintf(hn->rel, sizeof hn->rel, "%s", pending.rel);
        hn->kind = DRXFS_STRIPED;
        rc = drxfs_striped_link(hn, to_rel);
        free(hn);
    } else {
        rc = drx_store_entry_link(drxfs.store, pending.rel, to_rel);
    }
    return rc;
}

int drxfs_hidden_give_back(const char *to_rel)
{
    bool held = false;

    if (!pending.matched)
        return 0;
    pending.matched = false;
    pthread_mutex_lock(&htab.mutex);
    for (struct hobj *h = htab.head; h && !held; h = h->next)
        held = strcmp(h->rel, pending.rel) == 0;
    pthread_mutex_unlock(&htab.mutex);
    if (!held)
        return 0;
    int rc = link_back(to_rel);
    if (rc < 0)
        drx_log(DRX_LOG_WARNING, "%s: a rename over it failed: cannot give the name back: %s",
                to_rel, strerror(-rc));
    else
        drx_log(DRX_LOG_DEBUG, "%s: a rename over it failed: the name given back", to_rel);
    return rc;
}

int drxfs_hidden_same_file(const struct drxfs_node *src, const char *to_rel)
{
    bool held = false;

    bool matched = pending.matched;

    pending.matched = false;
    if (!matched || (src->kind != DRXFS_PLAIN && src->kind != DRXFS_STRIPED) ||
        (src->kind == DRXFS_STRIPED) != pending.striped || src->st.st_dev != pending.dev ||
        src->st.st_ino != pending.ino)
        return 0;
    pthread_mutex_lock(&htab.mutex);
    for (struct hobj *h = htab.head; h && !held; h = h->next)
        held = strcmp(h->rel, pending.rel) == 0;
    pthread_mutex_unlock(&htab.mutex);
    if (!held)
        return 0; /* closed and removed meanwhile: a rename as any other */
    /* The hidden object keeps its hidden name for the open descriptors
     * (libfuse unlinks it at the last close); the target's name comes
     * back as one more link to it, and the source keeps its own. */
    int rc = link_back(to_rel);
    if (rc < 0) {
        drx_log(DRX_LOG_WARNING, "%s: rename onto another name of the same file: cannot give "
                "the name back: %s", to_rel, strerror(-rc));
        return rc;
    }
    drx_log(DRX_LOG_DEBUG, "%s: rename from another name of the same file: nothing done", to_rel);
    return 1;
}

int drxfs_hidden_hide(const char *from, const char *to, bool no_keys)
{
    const char *name = last_name(to);
    char rel[PATH_MAX];
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if ((rc = drxfs_hidden_rel(name, rel, sizeof rel)) < 0)
        return rc;
    if (!(n = drxfs_node_get(from, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_PLAIN:
    case DRXFS_STRIPED:
        /* libfuse hides only files it has open; anything else is a user's
         * rename to a name libfuse reserves (it would be removed at
         * unmount) */
        rc = hide_file(n, rel);
        if (rc == 0)
            pending_set(n, from, rel);
        break;
    case DRXFS_ZARR:
        if ((rc = drxfs_zarr_hide(n, no_keys)) >= 0)
            rc = zremember(name, from, rc == 1);
        break;
    case DRXFS_SPECIAL:
    case DRXFS_LINK:
    case DRXFS_DIR:
    case DRXFS_ARRAY:
        /* never open files: replaced behind the mount (replaced_unlink) */
        rc = replaced_unlink(n);
        break;
    default:
        /* the files of a view are never removed nor replaced */
        rc = -EPERM;
        break;
    }
    free(n);
    return rc;
}
