/* Path resolution: what a path at the mount point is in the store.
 *
 * The walk follows drx_store_classify(): for each component NAME, an array
 * NAME.xmd wins over a striped file NAME.nafs, which wins over a directory
 * or file NAME.  Below an array, components are view words (KEY=VALUE) and
 * a last component data, data.npy or info.  Store names with our suffixes
 * and the internal names (.drx, temporary files) never show as themselves.
 * Every stat is relative to the store's root descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drxfs_i.h"

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len > n && memcmp(s + len - n, suffix, n) == 0;
}

/* Names that are store files of arrays or striped files, never shown. */
static bool name_has_internal_suffix(const char *name, size_t len)
{
    return has_suffix(name, len, DRXFS_XMD) || has_suffix(name, len, DRXFS_XTA) ||
           has_suffix(name, len, DRXFS_NAFS);
}

bool drxfs_name_reserved(const char *name, bool at_root)
{
    return drx_store_name_internal(name, at_root) || drxfs_hidden_name(name) ||
           name_has_internal_suffix(name, strlen(name));
}

int drxfs_rel_suffix(char *out, const char *rel, const char *suffix)
{
    int n = snprintf(out, PATH_MAX, "%s%s", rel, suffix);
    return (n < 0 || n >= PATH_MAX) ? -ENAMETOOLONG : 0;
}

int drxfs_proc_path(char *out, size_t len, const char *rel)
{
    int n = snprintf(out, len, "%s/%s", drxfs.proc_root, rel);
    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

/* Room libcore needs past a path it is given: `.` before the name, and
 * `.nafs.XXXXXX` or `.xmd.XXXXXX` after it (temporaries beside it). */
#define LIB_PATH_ROOM 16

int drxfs_lib_path(char *out, size_t len, const char *rel, int *pin)
{
    const char *slash = strrchr(rel, '/');
    char dir[PATH_MAX];
    int fd, n;

    *pin = -1;
    if (strlen(drxfs.proc_root) + 1 + strlen(rel) + LIB_PATH_ROOM < PATH_MAX)
        return drxfs_proc_path(out, len, rel);
    /* A store path near PATH_MAX: libcore gets the entry through its
     * directory's descriptor, which the caller keeps open while libcore
     * may use the path. */
    if (!slash)
        return -ENAMETOOLONG;
    memcpy(dir, rel, (size_t)(slash - rel));
    dir[slash - rel] = '\0';
    if ((fd = drxfs_open_beneath(dir, O_PATH | O_DIRECTORY, 0)) < 0)
        return fd;
    n = snprintf(out, len, "/proc/self/fd/%d/%s", fd, slash + 1);
    if (n < 0 || (size_t)n >= len) {
        close(fd);
        return -ENAMETOOLONG;
    }
    *pin = fd;
    return 0;
}

int drxfs_open_beneath(const char *rel, int flags, mode_t mode)
{
    /* The daemon runs as root for allow_other mounts: a user who can write
     * the store must not swap a directory for a symlink between our lookup
     * and our open and so make us open a file outside it. */
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, drxfs.root_fd, rel, &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS)
        fd = openat(drxfs.root_fd, rel, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0 && errno == ELOOP)
        drx_log(DRX_LOG_WARNING, "%s: a symlink in the way: refused", rel);
    return fd < 0 ? -errno : (int)fd;
}

/* True when the directory holding rel is set-group-ID. */
static bool parent_setgid(const char *rel)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(rel, '/');
    struct stat st;

    if (slash) {
        memcpy(dir, rel, (size_t)(slash - rel));
        dir[slash - rel] = '\0';
    } else {
        strcpy(dir, ".");
    }
    return fstatat(drxfs.root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_ISGID);
}

/* Attribute changes of a store entry by its store-relative name, never
 * through a symlink on the way or at the end: the entry is opened O_PATH
 * beneath the store first (a user who can write the store could otherwise
 * swap NAME.xta for a link to a root file between our lookup and a chmod),
 * and changed through that descriptor.  Symlinks themselves have no mode;
 * their owner and times change as lchown/lutimes would. */
static int path_fd(const char *rel, struct stat *st)
{
    int fd = drxfs_open_beneath(rel, O_PATH | O_NOFOLLOW, 0);
    if (fd >= 0 && fstat(fd, st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

/* The entry opened O_PATH beneath the store, named by its descriptor's
 * magic link for calls that take no descriptor.  A symlink has no mode and
 * its magic link would be followed: -EOPNOTSUPP. */
int drxfs_self_beneath(const char *rel, char *self, size_t len)
{
    struct stat st;
    int fd = path_fd(rel, &st);

    if (fd >= 0 && S_ISLNK(st.st_mode)) {
        close(fd);
        return -EOPNOTSUPP;
    }
    if (fd >= 0)
        snprintf(self, len, "/proc/self/fd/%d", fd);
    return fd;
}

int drxfs_chmod_beneath(const char *rel, mode_t mode)
{
    char self[64];
    int fd = drxfs_self_beneath(rel, self, sizeof self), rc;

    if (fd < 0)
        return fd;
    rc = chmod(self, mode & 07777) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int drxfs_chown_beneath(const char *rel, uid_t uid, gid_t gid)
{
    struct stat st;
    int fd = path_fd(rel, &st), rc;

    if (fd < 0)
        return fd;
    rc = fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int drxfs_utimens_beneath(const char *rel, const struct timespec tv[2])
{
    char self[64];
    int fd = drxfs_self_beneath(rel, self, sizeof self), rc;

    if (fd < 0)
        return fd;
    rc = utimensat(AT_FDCWD, self, tv, 0) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

void drxfs_chown_new(const char *rel)
{
    if (!drxfs.root_euid)
        return;
    struct fuse_context *ctx = fuse_get_context();
    /* In a set-group-ID directory the new entry keeps the directory's group,
     * which our mkdir/open already gave it, as on any local filesystem. */
    gid_t gid = parent_setgid(rel) ? (gid_t)-1 : ctx->gid;
    if (fchownat(drxfs.root_fd, rel, ctx->uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
        drx_log(DRX_LOG_WARNING, "chown %s to %u:%u: %s", rel, (unsigned)ctx->uid,
                (unsigned)ctx->gid, strerror(errno));
}

static int stat_rel(const char *rel, struct stat *st)
{
    if (fstatat(drxfs.root_fd, rel, st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    return 0;
}

static int plain_classify(struct drxfs_node *n, const char *rel);

/* ---- long names (drx/store.h: STEM.nafs, STEM.xmd beside symlink STEM) ---- */

bool drxfs_name_long(const char *name)
{
    return strlen(name) > DRX_STORE_SHORT_MAX;
}

int drxfs_long_rel(const char *rel, char *out)
{
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    size_t dlen = (size_t)(name - rel);
    char stem[DRX_STORE_LONG_STEM_LEN + 1];

    /* the store path of an array or striped file must have room for its
     * suffix (classify stats NAME.nafs beneath the store root) */
    if (!drxfs_name_long(name)) {
        if (strlen(rel) + strlen(DRXFS_NAFS) >= PATH_MAX)
            return -ENAMETOOLONG;
        if (out != rel)
            memmove(out, rel, strlen(rel) + 1);
        return 0;
    }
    drx_store_long_stem(name, stem, sizeof stem);
    if (dlen + sizeof stem + strlen(DRXFS_NAFS) > PATH_MAX)
        return -ENAMETOOLONG;
    memmove(out, rel, dlen);
    memcpy(out + dlen, stem, sizeof stem);
    return 1;
}

bool drxfs_is_long_stem(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    size_t suffix;
    return drx_store_name_is_long(slash ? slash + 1 : rel, &suffix) && suffix == 0;
}

/* True when symlink stem (store-relative) records name. */
static bool long_name_is(const char *stem, const char *name)
{
    char target[NAME_MAX + 2];
    ssize_t n = readlinkat(drxfs.root_fd, stem, target, sizeof target);
    return n > 0 && (size_t)n == strlen(name) && memcmp(target, name, (size_t)n) == 0;
}

int drxfs_long_name_set(const char *stem, const char *name)
{
    if (symlinkat(name, drxfs.root_fd, stem) == 0 || (errno == EEXIST && long_name_is(stem, name)))
        return 0;
    if (errno == EEXIST) {
        /* two names with one hash: not seen in practice, refused */
        drx_log(DRX_LOG_WARNING, "%s: long name's hash is taken by another name", stem);
        return -ENAMETOOLONG;
    }
    return -errno;
}

int drxfs_long_new(const char *rel, char *out)
{
    const char *base = strrchr(rel, '/');
    char name[NAME_MAX + 1];

    /* out may be rel */
    snprintf(name, sizeof name, "%s", base ? base + 1 : rel);
    int rc = drxfs_long_rel(rel, out);
    return rc == 1 ? drxfs_long_name_set(out, name) : rc;
}

void drxfs_unpin(int pin)
{
    if (pin >= 0)
        close(pin);
}

void drxfs_long_name_drop(const char *stem)
{
    char path[PATH_MAX];
    struct stat st;

    if (!drxfs_is_long_stem(stem))
        return;
    /* an array and a striped file of one name share it */
    if ((drxfs_rel_suffix(path, stem, DRXFS_XMD) == 0 &&
         fstatat(drxfs.root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) ||
        (drxfs_rel_suffix(path, stem, DRXFS_NAFS) == 0 &&
         fstatat(drxfs.root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0))
        return;
    unlinkat(drxfs.root_fd, stem, 0);
}

/* An array or striped file under long name `name` (n->rel holds the
 * name's store path): n->rel becomes its stem.  1 when there is none. */
static int long_classify(struct drxfs_node *n, const char *name)
{
    char stem[PATH_MAX], path[PATH_MAX];
    int rc;

    if ((rc = drxfs_long_rel(n->rel, stem)) < 0)
        return rc;
    if (!long_name_is(stem, name))
        return 1;
    if ((rc = drxfs_rel_suffix(path, stem, DRXFS_XMD)) == 0 && stat_rel(path, &n->st) == 0 &&
        S_ISREG(n->st.st_mode)) {
        n->kind = DRXFS_ARRAY;
    } else if ((rc = drxfs_rel_suffix(path, stem, DRXFS_NAFS)) == 0 &&
               stat_rel(path, &n->st) == 0 && S_ISREG(n->st.st_mode)) {
        n->kind = DRXFS_STRIPED;
    } else {
        return rc < 0 ? rc : 1;
    }
    memcpy(n->rel, stem, strlen(stem) + 1);
    return 0;
}

/* Classifies the store name `rel` (a child of a directory).  0 with n->kind
 * and n->st set, or -errno. */
static int classify(struct drxfs_node *n, const char *rel, const char *name, size_t nlen,
                    bool at_root)
{
    char path[PATH_MAX];
    int rc;

    if (drx_store_name_internal(name, at_root))
        return -ENOENT;
    if (nlen > DRX_STORE_SHORT_MAX)
        return (rc = long_classify(n, name)) <= 0 ? rc : plain_classify(n, rel);
    /* a store path with no room for a suffix has no array nor striped file
     * (drxfs_long_rel refuses to make one) */
    if (drxfs_rel_suffix(path, rel, DRXFS_XMD) == 0 && stat_rel(path, &n->st) == 0 &&
        S_ISREG(n->st.st_mode)) {
        n->kind = DRXFS_ARRAY;
        return 0;
    }
    if (drxfs_rel_suffix(path, rel, DRXFS_NAFS) == 0 && stat_rel(path, &n->st) == 0 &&
        S_ISREG(n->st.st_mode)) {
        n->kind = DRXFS_STRIPED;
        return 0;
    }
    if (name_has_internal_suffix(name, nlen))
        return -ENOENT;
    return plain_classify(n, rel);
}

/* Store entry rel as it is: a directory, file, symlink or special file. */
static int plain_classify(struct drxfs_node *n, const char *rel)
{
    int rc;

    if ((rc = stat_rel(rel, &n->st)) < 0)
        return rc;
    if (S_ISDIR(n->st.st_mode))
        n->kind = DRXFS_DIR;
    else if (S_ISREG(n->st.st_mode))
        n->kind = DRXFS_PLAIN;
    else if (S_ISLNK(n->st.st_mode))
        n->kind = DRXFS_LINK;
    else
        n->kind = DRXFS_SPECIAL; /* the kernel serves it, never the daemon */
    return 0;
}

/* libfuse's hidden name of an open file that was removed: the store
 * object is in .drx/hidden (drxfs_hidden.c), whatever the directory. */
static int hidden_classify(struct drxfs_node *n, const char *name, size_t len)
{
    int rc = drxfs_hidden_rel(name, n->rel, sizeof n->rel);

    return rc < 0 ? rc : classify(n, n->rel, name, len, false);
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
static int array_child(struct drxfs_node *n, const char *name)
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
    } else if (strcmp(name, "zarr") == 0 && n->spec.nwords == 0) {
        n->kind = DRXFS_ZARR;
        n->zlevel = 0;
        n->zvar[0] = n->zname[0] = '\0';
    } else if (!strchr(name, '=')) {
        drxfs_log_no_view("%s: %s: not a view (KEY=VALUE) nor a file of a view", n->rel, name);
        return -ENOENT;
    } else if (n->spec.nwords >= DRX_VIEW_MAX_WORDS) {
        drxfs_log_no_view("%s: more than %d view words", n->rel, DRX_VIEW_MAX_WORDS);
        return -ENOENT;
    } else if (drx_view_spec_add(&n->spec, name, &err) < 0) {
        drxfs_log_no_view("%s: not a view: %s", n->rel, err.msg);
        return -ENOENT;
    }
    return 0;
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
        rc = hidden_classify(n, name, len);
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
    return classify(n, n->rel, name, len, at_root);
}

int drxfs_resolve(const char *path, struct drxfs_node *n)
{
    size_t used = 0;
    const char *p = path;
    int rc;

    n->kind = DRXFS_DIR;
    drx_view_spec_init(&n->spec);
    strcpy(n->rel, ".");
    if (fstat(drxfs.root_fd, &n->st) < 0)
        return -errno;

    while (*p == '/')
        p++;
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
            if ((rc = array_child(n, name)) < 0)
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

struct drxfs_node *drxfs_node_get(const char *path, int *rc)
{
    struct drxfs_node *n;

    char *zpath;

    if (!path) {
        /* libfuse passes no path with a file handle (nullpath_ok) */
        *rc = -ENOENT;
        return NULL;
    }
    if (!(n = malloc(sizeof(*n)))) {
        *rc = -ENOMEM;
        return NULL;
    }
    /* a hidden name of a zarr/ file stands for its mount path */
    zpath = drxfs_hidden_zarr_path(path);
    *rc = drxfs_resolve(zpath ? zpath : path, n);
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
