/* Path resolution: what a path at the mount point is in the store.
 *
 * The walk asks libcore's drx_store_lookup() (the rule of
 * drx_store_classify()) what each component NAME is: an array NAME.xmd wins
 * over a striped file NAME.nafs, which wins over a directory or file NAME.  Below an array, components are view words (KEY=VALUE) and
 * a last component data, data.npy or info.  Store names with our suffixes
 * and the internal names (.drx, temporary files) never show as themselves.
 * Every stat is relative to the store's root descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

bool drxfs_name_reserved(const char *name, bool at_root)
{
    return drx_store_name_reserved(name, at_root) || drxfs_hidden_name(name);
}

int drxfs_rel_suffix(char *out, const char *rel, const char *suffix)
{
    int n = snprintf(out, PATH_MAX, "%s%s", rel, suffix);
    return (n < 0 || n >= PATH_MAX) ? -ENAMETOOLONG : 0;
}

int drxfs_lib_path(char *out, size_t len, const char *rel, int *pin)
{
    return drx_store_path_pin(drxfs.store, rel, out, len, pin);
}

/* The directory holding rel into dir (PATH_MAX bytes). */
static void parent_of(const char *rel, char *dir)
{
    const char *slash = strrchr(rel, '/');

    if (slash) {
        memcpy(dir, rel, (size_t)(slash - rel));
        dir[slash - rel] = '\0';
    } else {
        strcpy(dir, ".");
    }
}

/* True when the directory holding rel is set-group-ID; its group in *gid. */
static bool parent_setgid(const char *rel, gid_t *gid)
{
    char dir[PATH_MAX];
    struct stat st;

    parent_of(rel, dir);
    if (drx_store_entry_stat(drxfs.store, dir, &st) < 0 || !(st.st_mode & S_ISGID))
        return false;
    *gid = st.st_gid;
    return true;
}

gid_t drxfs_new_gid(const char *rel)
{
    gid_t gid;
    return parent_setgid(rel, &gid) ? gid : fuse_get_context()->gid;
}

mode_t drxfs_new_mode(const char *rel, mode_t mode)
{
    char dir[PATH_MAX];
    struct drx_xattr_req r = {.op = DRX_XATTR_GET, .name = "system.posix_acl_default"};

    parent_of(rel, dir);
    if (drx_store_entry_xattr(drxfs.store, dir, &r) > 0) /* its size */
        return mode;
    return mode & ~fuse_get_context()->umask;
}

void drxfs_chown_new(const char *rel)
{
    drxfs_chown_new_fd(-1, rel);
}

void drxfs_chown_new_fd(int fd, const char *rel)
{
    if (!drxfs.root_euid)
        return;
    struct fuse_context *ctx = fuse_get_context();
    /* In a set-group-ID directory the new entry keeps the directory's group,
     * which our mkdir/open already gave it, as on any local filesystem. */
    gid_t dgid, gid = parent_setgid(rel, &dgid) ? (gid_t)-1 : ctx->gid;
    int rc = fd < 0 ? drx_store_entry_chown(drxfs.store, rel, ctx->uid, gid)
             : fchownat(fd, "", ctx->uid, gid, AT_EMPTY_PATH) < 0 ? -errno
                                                                  : 0;
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "chown %s to %u:%u: %s", rel, (unsigned)ctx->uid,
                            (unsigned)ctx->gid, strerror(-rc));
}

/* Classifies the store name rel (a child of a directory) by libcore's one
 * rule.  0 with n->kind and n->st set, or -errno. */
static int classify(struct drxfs_node *n, const char *rel, bool at_root)
{
    static const enum drxfs_kind kinds[] = {
        [DRX_STORE_ARRAY] = DRXFS_ARRAY,  [DRX_STORE_STRIPED] = DRXFS_STRIPED,
        [DRX_STORE_DIRECTORY] = DRXFS_DIR, [DRX_STORE_PLAIN] = DRXFS_PLAIN,
        [DRX_STORE_SYMLINK] = DRXFS_LINK,  [DRX_STORE_SPECIAL] = DRXFS_SPECIAL,
    };
    enum drx_store_kind k;
    int rc = drx_store_lookup(drxfs.store, rel, at_root, &k, &n->st, n->rel);

    if (rc == 0)
        n->kind = kinds[k]; /* SPECIAL: the kernel serves it, never the daemon */
    return rc;
}

/* libfuse's hidden name of an open file that was removed, in directory n:
 * the store object is in .drx/hidden (drxfs_hidden.c), when this mount hid
 * it from this directory.  One no longer there (its last close removed
 * it) is a stale node of the kernel's, ESTALE, as libfuse answers itself
 * for a node it holds no name for: the kernel's path walk may still hold
 * it (a user's open of a name whose file was renamed over just then, and
 * open a moment before: the walk's permission check asks the ACL of the
 * node), and ESTALE makes it walk the name again, where ENOENT failed
 * the open (hostile_users3.bats).  Only in the requests the kernel sends
 * for a node it holds: a LOOKUP of such a name (typed by a user) finds
 * nothing, and libfuse's own search for a free hidden name (the getattr of
 * a RENAME or UNLINK hiding an open file) takes only ENOENT for free (it
 * failed the rename with EBUSY). */
static int hidden_classify(struct drxfs_node *n, const char *name)
{
    char dir[PATH_MAX];

    memcpy(dir, n->rel, strlen(n->rel) + 1);
    int rc = drxfs_hidden_lookup(dir, name, n->rel, sizeof n->rel);
    uint32_t op = drxfs_order_opcode();

    if (rc == -ENOENT && (op == FUSE_GETXATTR || op == FUSE_LISTXATTR || op == FUSE_OPEN ||
                          op == FUSE_GETATTR || op == FUSE_ACCESS || op == FUSE_SETATTR))
        return -ESTALE;
    return rc < 0 ? rc : classify(n, n->rel, false);
}

/* Component name (len bytes) below store directory n, whose store path
 * is *used bytes long. */
static int dir_child(struct drxfs_node *n, const char *name, size_t len, size_t *used)
{
    bool at_root = *used == 0;
    int rc;

    /* a hidden name's store path is not below its directory's (it may be
     * longer than the name it replaced) */
    if (drxfs_hidden_name(name)) {
        rc = hidden_classify(n, name);
        *used = strlen(n->rel);
        return rc;
    }
    if (*used + len + 2 > PATH_MAX)
        return -ENAMETOOLONG;
    if (*used)
        n->rel[(*used)++] = '/';
    memcpy(n->rel + *used, name, len + 1);
    *used += len;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -ENOENT;
    rc = classify(n, n->rel, at_root);
    /* a long name's files are named by its stem, also the path's */
    *used = strlen(n->rel);
    return rc;
}

void drxfs_unpin(int pin)
{
    if (pin >= 0)
        close(pin);
}

/* A user of a background daemon sees only ENOENT for a mistyped view, so
 * the reason goes to the log at info level; anyone can look names up in a
 * loop, hence the limit (10 a minute). */
static struct drx_log_limit no_view_limit = DRX_LOG_LIMIT_INIT(10, 60);

void drxfs_log_no_view(const char *fmt, ...)
{
    char msg[DRX_LOG_MSG_MAX];
    va_list ap;

    if (!drx_log_enabled(DRX_LOG_INFO))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    drx_log_limited(&no_view_limit, DRX_LOG_INFO, "%s", msg);
}

/* Component name below array or view n: a file of the view, zarr/ (the
 * array directory only: README), or a view word. */
static int array_child(struct drxfs_node *n, const char *name, const char *at,
                       struct drx_view_spec *spec)
{
    struct drx_err err = {{0}};

    if (strcmp(name, "data") == 0) {
        n->kind = DRXFS_ADATA;
    } else if (strcmp(name, "data.npy") == 0) {
        n->kind = DRXFS_ANPY;
    } else if (strcmp(name, "info") == 0) {
        n->kind = DRXFS_AINFO;
    } else if (strcmp(name, "data.nc") == 0) {
        n->kind = DRXFS_ANC;
    } else if (strcmp(name, "zarr") == 0 && n->nwords == 0 && !drxfs_zarr_name_ok(n->rel)) {
        drxfs_log_no_view("%s: no zarr/: an array named like a Zarr metadata key cannot be a "
                          "variable of its group (rename it for Zarr readers)",
                          n->rel);
        return -ENOENT;
    } else if (strcmp(name, "zarr") == 0 && n->nwords == 0) {
        n->kind = DRXFS_ZARR;
        n->zlevel = 0;
        n->zvar[0] = n->zname[0] = '\0';
    } else if (!strchr(name, '=')) {
        drxfs_log_no_view("%s: %s: not a view (KEY=VALUE) nor a file of a view", n->rel, name);
        return -ENOENT;
    } else if (n->nwords >= DRX_VIEW_MAX_WORDS) {
        drxfs_log_no_view("%s: more than %d view words", n->rel, DRX_VIEW_MAX_WORDS);
        return -ENOENT;
    } else if (drx_view_spec_add(spec, name, &err) < 0) {
        drxfs_log_no_view("%s: not a view: %s", n->rel, err.msg);
        return -ENOENT;
    } else if (n->nwords++ == 0) {
        n->words = at;
    }
    return 0;
}

int drxfs_node_spec(const struct drxfs_node *n, struct drx_view_spec *spec)
{
    const char *p = n->words;
    struct drx_err err = {{0}};
    char word[NAME_MAX + 1];

    drx_view_spec_init(spec);
    for (int i = 0; i < n->nwords; i++) {
        size_t len = strcspn(p, "/");
        if (len > NAME_MAX)
            return -ENAMETOOLONG;
        memcpy(word, p, len);
        word[len] = '\0';
        if (drx_view_spec_add(spec, word, &err) < 0)
            return -ENOENT; /* checked at resolution: the path changed */
        p += len;
        p += strspn(p, "/");
    }
    return 0;
}

int drxfs_resolve(const char *path, struct drxfs_node *n)
{
    struct drx_view_spec spec; /* checks the view words; the node keeps their place */
    size_t used = 0;
    const char *p = path;
    int rc;

    n->kind = DRXFS_DIR;
    n->nwords = 0;
    n->words = NULL;
    drx_view_spec_init(&spec);
    strcpy(n->rel, ".");
    while (*p == '/')
        p++;
    /* each component's lookup sets n->st: the root's is wanted only for
     * the root (one fstat less for every other request) */
    if (!*p && fstat(drxfs.root_fd, &n->st) < 0)
        return -errno;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *next = p + len;
        while (*next == '/')
            next++;
        char name[NAME_MAX + 1];

        if (len > NAME_MAX)
            return -ENAMETOOLONG;
        memcpy(name, p, len);
        name[len] = '\0';

        switch (n->kind) {
        case DRXFS_DIR:
            if ((rc = dir_child(n, name, len, &used)) < 0)
                return rc;
            break;
        case DRXFS_ARRAY:
            if ((rc = array_child(n, name, p, &spec)) < 0)
                return rc;
            break;
        case DRXFS_ZARR:
            if ((rc = drxfs_zarr_step(n, name)) < 0)
                return rc;
            break;
        default:
            /* A file has no children. */
            return -ENOTDIR;
        }
        p = next;
    }
    return 0;
}

int drxfs_child_missing(const char *path, const char *rel, const char *name, bool at_root)
{
    struct drxfs_node *n;
    int rc;

    /* what dir_child does not reach by rel alone: a path from the root */
    if (drxfs_hidden_name(name) || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        if ((n = drxfs_node_get(path, &rc)))
            rc = -EEXIST;
    } else if (!(n = malloc(sizeof(*n)))) {
        return -ENOMEM;
    } else {
        rc = classify(n, rel, at_root);
        rc = rc == 0 ? -EEXIST : rc;
    }
    free(n);
    return rc == -ENOENT ? 0 : rc;
}

/* The node an operation by path just resolved, for libfuse's getattr of
 * the same path that follows it in the same request, on the same thread
 * (setattr, mkdir, symlink: fuse.c asks for the attributes of the result):
 * only the last component is looked up again, not every directory above
 * it.  Kept 2 ms at most, so that a memo whose getattr never came (an
 * error in between) is never used for a later request. */
#define MEMO_NS 2000000L
static __thread struct {
    bool set, at_root;
    struct timespec t;
    char path[PATH_MAX];
    char rel[PATH_MAX];
} memo;

void drxfs_node_memo(const char *path, const char *rel, bool at_root)
{
    memo.set = false;
    if (!path || strlen(path) >= sizeof memo.path || strlen(rel) >= sizeof memo.rel)
        return;
    strcpy(memo.path, path);
    strcpy(memo.rel, rel);
    memo.at_root = at_root;
    memo.set = clock_gettime(CLOCK_MONOTONIC, &memo.t) == 0;
}

void drxfs_node_memo_of(const char *path, const struct drxfs_node *n)
{
    bool plainish = n->kind == DRXFS_DIR || n->kind == DRXFS_PLAIN || n->kind == DRXFS_STRIPED ||
                    n->kind == DRXFS_LINK || n->kind == DRXFS_SPECIAL;

    memo.set = false;
    if (plainish && n->nwords == 0 && strcmp(n->rel, ".") != 0)
        drxfs_node_memo(path, n->rel, !strchr(n->rel, '/'));
}

static bool memo_fresh(const char *path)
{
    struct timespec now;

    if (!memo.set || !path || strcmp(path, memo.path) != 0 ||
        clock_gettime(CLOCK_MONOTONIC, &now) != 0)
        return false;
    long ns = (now.tv_sec - memo.t.tv_sec) * 1000000000L + (now.tv_nsec - memo.t.tv_nsec);
    return ns >= 0 && ns <= MEMO_NS;
}

struct drxfs_node *drxfs_node_get_memo(const char *path, bool consume, int *rc)
{
    struct drxfs_node *n = NULL;

    drxfs_hidden_pending_end();

    if (memo_fresh(path) && (n = malloc(sizeof(*n)))) {
        n->nwords = 0;
        n->words = NULL;
        if (classify(n, memo.rel, memo.at_root) < 0) {
            free(n); /* changed since: the whole path again */
            n = NULL;
        }
    }
    if (consume)
        memo.set = false;
    return n ? n : drxfs_node_get(path, rc);
}

struct drxfs_node *drxfs_node_get(const char *path, int *rc)
{
    struct drxfs_node *n;

    char *zpath;

    drxfs_hidden_pending_end();

    if (!path) {
        /* libfuse passes no path with a file handle (nullpath_ok) */
        *rc = -ENOENT;
        return NULL;
    }
    if (!(n = malloc(sizeof(*n)))) {
        *rc = -ENOMEM;
        return NULL;
    }
    /* a hidden name of a zarr/ file stands for its mount path (a zarr
     * node has no view words, which would point into zpath) */
    zpath = drxfs_hidden_zarr_path(path);
    *rc = drxfs_resolve(zpath ? zpath : path, n);
    if (*rc == 0 && zpath && n->nwords)
        *rc = -ENOENT;
    free(zpath);
    if (*rc < 0) {
        free(n);
        return NULL;
    }
    return n;
}

int drxfs_resolve_new(const char *path, char *rel, const char **name, bool *at_root)
{
    struct drxfs_node *parent = malloc(sizeof(*parent));
    char ppath[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int rc = 0;

    if (!parent)
        return -ENOMEM;
    if (!slash || strlen(path) >= PATH_MAX) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    memcpy(ppath, path, (size_t)(slash - path));
    ppath[slash - path] = '\0';
    *name = slash + 1;
    if (strlen(*name) > NAME_MAX) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    if ((rc = drxfs_resolve(ppath, parent)) < 0)
        goto out;
    if (parent->kind != DRXFS_DIR) {
        rc = (parent->kind == DRXFS_ARRAY || parent->kind == DRXFS_ZARR) ? -EPERM : -ENOTDIR;
        /* zarr-python turns the refused mkdir of a new variable into a
         * bare KeyError ('extra/.zarray'): the log says why */
        if (parent->kind == DRXFS_ZARR)
            drx_log_ratelimited(DRX_LOG_WARNING,
                                "%s: not made: a zarr/ group holds the array and its coordinate "
                                "variables only (a new variable is a new array: drx create)",
                                path + 1);
        goto out;
    }
    *at_root = strcmp(parent->rel, ".") == 0;
    int len = *at_root ? snprintf(rel, PATH_MAX, "%s", *name)
                       : snprintf(rel, PATH_MAX, "%s/%s", parent->rel, *name);
    if (len < 0 || len >= PATH_MAX)
        rc = -ENAMETOOLONG;
out:
    free(parent);
    return rc;
}
