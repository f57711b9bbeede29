/* The attributes of an array as user.NAME extended attributes of its
 * directory (and, read-only, of its views); and the operations of an
 * array's nodes (its directory, views and files): mode, owner and times
 * live on its store files, the rest is drxfs_array.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "drxfs_i.h"

/* ---- attributes as user.NAME extended attributes of the array directory ----
 * Only the user namespace maps to attributes; the value is the attribute as
 * text (drx_attr_format).  Setting makes a string attribute, except that an
 * existing number attribute keeps its type (setfattr -n user.scale_factor
 * -v 0.02 stays an f64).  Views show the array's attributes; only the array
 * directory itself changes them. */

#define USER_NS "user."

static int xattr_array(const struct drxfs_node *n, const char *name, bool wr,
                       struct drxfs_arr **out)
{
    int rc;

    if (name && strncmp(name, USER_NS, strlen(USER_NS)) != 0)
        return -ENOTSUP;
    if (wr && drxfs.ro)
        return -EROFS;
    if (wr && n->nwords)
        return -EPERM;
    if ((rc = drxfs_arr_get(n, out)) < 0)
        return rc;
    if (wr && (*out)->rdonly)
        rc = (*out)->rdonly_rc;
    else if (wr && (*out)->shared)
        rc = -EIO;
    /* the kernel checked the caller on the node it holds; the handle is
     * the array under the name now, which a user exchanging his array's
     * directory with root's behind the mount made root's: his attribute
     * was written into root's 0600 .xmd.  Checked on the .xmd the handle
     * read, which the change is made from */
    else if (wr)
        rc = drxfs_arr_caller_may(*out, n->rel, 2, true);
    if (rc < 0) {
        drxfs_arr_put(*out);
        *out = NULL;
    }
    return rc;
}

/* The caller's write permission on the .xmd an attribute change is made
 * from, checked by libcore under the extend lock after its reload: the
 * check in xattr_array was on the .xmd the handle held before, and a
 * user exchanging his .xmd's name with root's (same type and chunks)
 * while the change waited for the lock had his attribute set in root's. */
static int caller_may_write(int fd, const struct stat *st, void *arg)
{
    (void)arg;
    return drxfs_caller_may_fd(fd, st, 2) ? 0 : -EACCES;
}

/* An attribute is text without NUL bytes (netCDF's NC_CHAR is, too); one
 * terminating NUL is allowed. */
static bool value_is_text(const char *value, size_t size)
{
    return !memchr(value, '\0', size) ||
           (size && value[size - 1] == '\0' && !memchr(value, '\0', size - 1));
}

/* Sets attribute name of e to text, as setxattr with flags would: a
 * number attribute keeps its type.  err says why not. */
static int attr_set(struct drxfs_arr *e, const char *name, const char *text, int flags,
                    struct drx_attr *at, struct drx_err *err)
{
    const struct drx_attr *old;
    const char *type = NULL;
    int rc = 0;

    pthread_rwlock_wrlock(&e->lock);
    old = drx_array_attr_get(drx_array_meta(e->a), name);
    if ((flags & XATTR_CREATE) && old)
        rc = -EEXIST;
    else if ((flags & XATTR_REPLACE) && !old)
        rc = -ENODATA;
    if (rc == 0 && old && !old->is_string)
        type = drx_type_name(old->type);
    if (rc == 0 && (rc = drx_attr_parse(name, type, text, at, err)) == 0)
        rc = drx_array_attr_set_may(e->a, at, caller_may_write, NULL, err);
    pthread_rwlock_unlock(&e->lock);
    /* setfattr cannot say more than its status: the log says it */
    if (rc == 0 && !type && drx_attr_cf_number(name))
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "user.%s set as a string: CF readers (xarray) need a number; drx "
                            "attr set --type makes one (setfattr then keeps its type)",
                            name);
    return rc;
}

/* The extend lock held by another process past the bound: EBUSY.  The
 * kernel's setxattr takes a file system's EAGAIN for "no handler" and
 * gives the caller EOPNOTSUPP (fs/xattr.c), which said "attributes are
 * not supported here" until 2026-12-06. */
static int locked_busy(int rc)
{
    return rc == -EAGAIN ? -EBUSY : rc;
}

/* Logs why attribute name of n was not set (a bad value at debug) and
 * maps libcore's errors to setxattr's. */
static int attr_set_failed(const struct drxfs_node *n, const char *name, int rc,
                           const struct drx_err *err)
{
    if (err->msg[0])
        /* the reason the caller's EINVAL cannot carry: at info, where the
         * default log shows it */
        drx_log_ratelimited(rc == -EINVAL || rc == -ERANGE || rc == -E2BIG ? DRX_LOG_INFO
                                                                           : DRX_LOG_WARNING,
                            "%s: setxattr user.%s: %s", n->rel, name, err->msg);
    if (rc == -ERANGE || rc == -E2BIG)
        rc = rc == -ERANGE ? -EINVAL : -ENOSPC;
    return locked_busy(rc);
}

int drxfs_array_setxattr(const struct drxfs_node *n, const char *name, const char *value,
                         size_t size, int flags)
{
    struct drxfs_arr *e = NULL;
    struct drx_attr at = {0};
    struct drx_err err = {{0}};
    char *text = NULL;
    int rc;

    if ((rc = xattr_array(n, name, true, &e)) < 0)
        return rc;
    name += strlen(USER_NS);
    if (!value_is_text(value, size)) {
        drx_log(DRX_LOG_DEBUG, "%s: setxattr user.%s: a value with NUL bytes", n->rel, name);
        rc = -EINVAL;
        goto out;
    }
    if (!(text = strndup(value, size))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = attr_set(e, name, text, flags, &at, &err)) < 0)
        rc = attr_set_failed(n, name, rc, &err);
out:
    drx_attr_fini(&at);
    free(text);
    drxfs_arr_put(e);
    return rc;
}

int drxfs_array_getxattr(const struct drxfs_node *n, const char *name, char *value, size_t size)
{
    struct drxfs_arr *e = NULL;
    const struct drx_attr *at;
    char *text = NULL;
    int rc;

    if ((rc = xattr_array(n, name, false, &e)) < 0)
        return rc == -ENOTSUP ? -ENODATA : rc;
    /* a user attribute is read by whoever may read the directory (its
     * .xmd's mode), checked again on the .xmd the handle read */
    if ((rc = drxfs_arr_caller_may(e, n->rel, 4, true)) < 0) {
        drxfs_arr_put(e);
        return rc;
    }
    pthread_rwlock_rdlock(&e->lock);
    at = drx_array_attr_get(drx_array_meta(e->a), name + strlen(USER_NS));
    if (!at)
        rc = -ENODATA;
    else if (!(text = drx_attr_format(at)))
        rc = -ENOMEM;
    pthread_rwlock_unlock(&e->lock);
    if (rc == 0) {
        size_t len = strlen(text);
        if (size && len > size)
            rc = -ERANGE;
        else if (size)
            memcpy(value, text, len);
        rc = rc ? rc : (int)len;
    }
    free(text);
    drxfs_arr_put(e);
    return rc;
}

int drxfs_array_listxattr(const struct drxfs_node *n, char *list, size_t size)
{
    struct drxfs_arr *e = NULL;
    const struct drx_array_meta *m;
    size_t len = 0;
    int rc;

    if ((rc = xattr_array(n, NULL, false, &e)) < 0)
        return rc;
    /* the names: whoever reaches the .xmd the handle read */
    if ((rc = drxfs_arr_caller_may(e, n->rel, 0, true)) < 0) {
        drxfs_arr_put(e);
        return rc;
    }
    pthread_rwlock_rdlock(&e->lock);
    m = drx_array_meta(e->a);
    for (size_t i = 0; i < m->nattrs && rc == 0; i++) {
        size_t l = strlen(USER_NS) + strlen(m->attrs[i].name) + 1;
        if (size && len + l > size)
            rc = -ERANGE;
        else if (size)
            snprintf(list + len, l, "%s%s", USER_NS, m->attrs[i].name);
        len += l;
    }
    pthread_rwlock_unlock(&e->lock);
    drxfs_arr_put(e);
    return rc ? rc : (int)len;
}

int drxfs_array_removexattr(const struct drxfs_node *n, const char *name)
{
    struct drxfs_arr *e = NULL;
    struct drx_err err = {{0}};
    int rc;

    if ((rc = xattr_array(n, name, true, &e)) < 0)
        return rc;
    pthread_rwlock_wrlock(&e->lock);
    rc = drx_array_attr_rm_may(e->a, name + strlen(USER_NS), caller_may_write, NULL, &err);
    pthread_rwlock_unlock(&e->lock);
    if (rc == -ENOENT)
        rc = -ENODATA;
    else if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: removexattr %s: %s", n->rel, name, err.msg);
    drxfs_arr_put(e);
    return locked_busy(rc);
}

/* ---- the operations of an array's nodes ---- */

/* The store files an array's chmod/chown/utimens apply to (rel: the
 * array's store name): views and the zarr group are refused, their modes
 * are the array directory's. */
static int array_files(const char *rel, int nwords, char *xmd, char *xta)
{
    int rc;

    if (nwords > 0)
        return -EPERM;
    if ((rc = drxfs_rel_suffix(xmd, rel, DRXFS_XMD)) < 0)
        return rc;
    return drxfs_rel_suffix(xta, rel, DRXFS_XTA);
}

static int node_files(const struct drxfs_node *n, struct drxfs_fh *fh, char *xmd, char *xta)
{
    return fh ? array_files(drxfs_array_fh_rel(fh), fh->nwords, xmd, xta)
              : array_files(n->rel, n->nwords, xmd, xta);
}

int drxfs_array_kill_fds(const struct drxfs_node *n, struct drxfs_fh *fh, int fds[2])
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc = node_files(n, fh, xmd, xta);

    fds[0] = fds[1] = -1;
    if (rc < 0)
        return rc;
    if (fh && fh->arr) {
        int m = drx_array_xmd_fd(fh->arr->a);
        fds[0] = fcntl(drx_array_xta_fd(fh->arr->a), F_DUPFD_CLOEXEC, 0);
        fds[1] = m >= 0 ? fcntl(m, F_DUPFD_CLOEXEC, 0) : -1;
    } else if (!fh) {
        fds[0] = drxfs_caller_entry_open(xta);
        fds[1] = drxfs_caller_entry_open(xmd);
    }
    return 0;
}

/* The stat of store file rel (of the array of a node the kernel let the
 * caller change) when the caller owns it too: the kernel checked him
 * against the node's own file only, and the other may have another owner
 * (a .xta given away with chown behind the mount).  0 or -errno. */
static int owned_stat(const char *rel, struct stat *st)
{
    uid_t uid = fuse_get_context()->uid;
    int rc = drx_store_entry_stat(drxfs.store, rel, st);

    if (rc == 0 && uid != 0 && uid != st->st_uid)
        rc = -EPERM;
    return rc;
}

/* The mode of a store file of stat st after a chmod to mode asked
 * through a mount file that shows the bits `shows` of it: those bits
 * become the request's, the others stay.  The set-group-ID bit goes
 * unless the caller is root or of the file's group, as chmod(2) clears
 * it: the kernel checked the group of the node's own file only, and the
 * other file's may be another (a .xta of a group he is not in made
 * set-group-ID ran as that group). */
static mode_t shown_mode(const struct stat *st, mode_t mode, mode_t shows)
{
    mode_t m = (mode & shows) | (st->st_mode & 07777 & ~shows);

    if ((m & S_ISGID) && fuse_get_context()->uid != 0 && !drxfs_caller_in_group(st->st_gid))
        m &= ~(mode_t)S_ISGID;
    return m;
}

/* The bits (07777) a node of kind k shows of its store files' modes: the
 * directory all (and x wherever r is, dir_mode: that x is the r's, only
 * an x without r goes to the files), data and data.npy the read and write
 * bits, data.nc and info the read bits. */
static mode_t kind_shows(enum drxfs_kind k)
{
    return k == DRXFS_ARRAY ? 07777 : k == DRXFS_ADATA || k == DRXFS_ANPY ? 07666 : 0444;
}

/* chmod of an array: its chunk file, then its metadata file, of the bits
 * the file asked shows (kind_shows), the others kept.  So `chmod -R g+w`,
 * which asks 0464 of data.nc of a 0644 array, does not take the owner's
 * write bit, and `chmod 600 A/data.nc` still makes the array 0600. */
static int array_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode)
{
    enum drxfs_kind k = fh ? fh->kind : n->kind;
    char xmd[PATH_MAX], xta[PATH_MAX];
    mode_t shows = kind_shows(k);
    struct stat sx, sm;
    int rc;

    if (k == DRXFS_ARRAY)
        mode &= ~((mode & 0444) >> 2);
    /* each call checked again on the file it changes (drxfs_guard_owner):
     * owned_stat looks at the names, which may be other files' by then */
    if ((rc = node_files(n, fh, xmd, xta)) < 0 || (rc = owned_stat(xta, &sx)) < 0 ||
        (rc = owned_stat(xmd, &sm)) < 0 || (drxfs_guard_owner(), 0) ||
        (rc = drx_store_entry_chmod(drxfs.store, xta, shown_mode(&sx, mode, shows))) < 0) {
        drxfs_guard_done();
        return rc;
    }
    /* all or nothing: the .xta as it was when the .xmd refuses */
    drxfs_guard_owner();
    if ((rc = drx_store_entry_chmod(drxfs.store, xmd, shown_mode(&sm, mode, shows))) < 0) {
        drxfs_guard_owner();
        (void)drx_store_entry_chmod(drxfs.store, xta, sx.st_mode & 07777);
    }
    drxfs_guard_done();
    return rc;
}

static int array_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    struct stat sx, sm;
    int rc;

    if ((rc = node_files(n, fh, xmd, xta)) < 0 || (rc = owned_stat(xta, &sx)) < 0 ||
        (rc = owned_stat(xmd, &sm)) < 0 || (drxfs_guard_owner(), 0) ||
        (rc = drx_store_entry_chown(drxfs.store, xta, uid, gid)) < 0) {
        drxfs_guard_done();
        return rc;
    }
    /* all or nothing: the .xta's owner, group and mode (a chown clears
     * set-ID bits) as they were when the .xmd refuses (a caller other
     * than root keeps the owner: the .xta is still his) */
    drxfs_guard_owner();
    if ((rc = drx_store_entry_chown(drxfs.store, xmd, uid, gid)) < 0) {
        drxfs_guard_owner();
        if (drx_store_entry_chown(drxfs.store, xta, sx.st_uid, sx.st_gid) == 0) {
            drxfs_guard_owner();
            (void)drx_store_entry_chmod(drxfs.store, xta, sx.st_mode & 07777);
        }
    }
    drxfs_guard_done();
    return rc;
}

/* One store file's new access ACL: req merged with its own (size bytes
 * into out), or *len 0 to remove it (req NULL). */
static int acl_for(const char *rel, const struct stat *st, const char *req, size_t size,
                   struct drxfs_acl_map map, unsigned char *out, size_t *len)
{
    unsigned char cur[DRXFS_ACL_MAX];
    struct drx_xattr_req r = {DRX_XATTR_GET, DRXFS_ACL_ACCESS, cur, sizeof cur, 0};
    ssize_t ncur;
    int rc;

    *len = 0;
    if (!req)
        return 0;
    ncur = drx_store_entry_xattr(drxfs.store, rel, &r);
    if (ncur == -ENODATA)
        ncur = 0;
    else if (ncur < 0)
        return ncur == -ERANGE ? -EIO : (int)ncur;
    if ((rc = drxfs_acl_merge((const unsigned char *)req, size, cur, ncur, st->st_mode, map,
                              out)) < 0)
        return rc;
    *len = (size_t)rc;
    return 0;
}

int drxfs_array_setacl(const struct drxfs_node *n, const char *name, const char *value,
                       size_t size)
{
    enum drxfs_kind k = n->kind;
    struct drxfs_acl_map map = {k == DRXFS_ARRAY, kind_shows(k) & 7};
    char rel[2][PATH_MAX];
    unsigned char acl[2][DRXFS_ACL_MAX], old[DRXFS_ACL_MAX];
    struct drx_xattr_req get = {DRX_XATTR_GET, DRXFS_ACL_ACCESS, old, sizeof old, 0};
    size_t len[2];
    ssize_t nold, w = 0;
    struct drxfs_arr *e;
    struct stat st[2];
    int rc, gone = 0;

    /* nothing is made in an array directory */
    if (strcmp(name, DRXFS_ACL_ACCESS) != 0)
        return -EOPNOTSUPP;
    if ((rc = array_files(n->rel, n->nwords, rel[1], rel[0])) < 0)
        return rc;
    /* a read-only array's nodes show no w (drxfs_array_getacl): the
     * files' own w stays, as setfacl hands back what it was shown */
    if ((rc = drxfs_arr_get(n, &e)) < 0)
        return rc;
    if (e->rdonly && e->rdonly_rc != -EROFS)
        map.keep &= ~2u;
    drxfs_arr_put(e);
    /* both worked out before either changes */
    for (int i = 0; i < 2; i++)
        if ((rc = owned_stat(rel[i], &st[i])) < 0 ||
            (rc = acl_for(rel[i], &st[i], value, size, map, acl[i], &len[i])) < 0)
            return rc;
    /* the .xta's ACL (or mode) as it was, put back if the .xmd's cannot
     * follow: the two stay alike */
    nold = drx_store_entry_xattr(drxfs.store, rel[0], &get);
    /* each set checked on the file it changes (drxfs_guard_xattr: the
     * owner), as chmod's: owned_stat looked at the names, and a user
     * exchanging his array's directory with root's behind the mount in
     * between gave root's 0600 array his ACL, granting him its bytes */
    for (int i = 0; i < 2 && w >= 0; i++) {
        struct drx_xattr_req r = {value ? DRX_XATTR_SET : DRX_XATTR_REMOVE, DRXFS_ACL_ACCESS,
                                  acl[i], len[i], 0};
        drxfs_guard_xattr(DRXFS_ACL_ACCESS);
        w = drx_store_entry_xattr(drxfs.store, rel[i], &r);
        if (w == -ENODATA && !value) {
            gone++;
            w = 0;
        } else if (w < 0 && i == 1) {
            struct drx_xattr_req back = {nold >= 0 ? DRX_XATTR_SET : DRX_XATTR_REMOVE,
                                         DRXFS_ACL_ACCESS, old, nold >= 0 ? (size_t)nold : 0, 0};
            drxfs_guard_xattr(DRXFS_ACL_ACCESS);
            ssize_t b = drx_store_entry_xattr(drxfs.store, rel[0], &back);
            drxfs_guard_owner();
            if (nold < 0 && (b >= 0 || b == -ENODATA))
                b = drx_store_entry_chmod(drxfs.store, rel[0], st[0].st_mode & 07777);
            if (b < 0)
                drx_log_ratelimited(DRX_LOG_WARNING,
                                    "%s: setfacl: the .xmd refused it (%s), and the .xta's "
                                    "ACL could not be put back (%s)",
                                    n->rel, strerror((int)-w), strerror((int)-b));
        }
    }
    drxfs_guard_done();
    if (w < 0)
        return (int)w;
    return gone == 2 ? -ENODATA : 0;
}

/* `touch A/data` must work, and the times live on the store files: the
 * elements' on the .xta, the others' (info, the directory) on the .xmd. */
static int array_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                         const struct timespec tv[2])
{
    enum drxfs_kind k = fh ? fh->kind : n->kind;
    char xmd[PATH_MAX], xta[PATH_MAX];
    const char *rel = fh ? drxfs_array_fh_rel(fh) : n->rel;
    int rc;

    if ((rc = drxfs_rel_suffix(xmd, rel, DRXFS_XMD)) < 0 ||
        (rc = drxfs_rel_suffix(xta, rel, DRXFS_XTA)) < 0)
        return rc;
    /* checked on the file changed, as a plain file's (unchecked, a user
     * exchanging his array's directory with root's behind the mount as he
     * touched it set root's array's times) */
    drxfs_guard_times(tv);
    rc = drx_store_entry_utimens(
        drxfs.store, (k == DRXFS_ADATA || k == DRXFS_ANPY || k == DRXFS_ANC) ? xta : xmd, tv);
    drxfs_guard_done();
    return rc;
}

static int array_getattr(const struct drxfs_node *n, const char *path, struct stat *st)
{
    int rc = drxfs_array_getattr(n, st);
    st->st_ino = drxfs_virtual_ino(path, NULL);
    return rc;
}

static int array_fgetattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    int rc = drxfs_array_fgetattr(fh, st);
    (void)path;
    st->st_ino = fh->ino;
    return rc;
}

static int array_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    int rc = drxfs_array_open(path, n, fi);
    if (rc == 0)
        drxfs_fh_of(fi)->ino = drxfs_virtual_ino(path, NULL);
    return rc;
}

static int array_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off)
{
    int rc = drxfs_array_write(fh, buf, size, off);
    /* every other view of the array the kernel caches is now stale */
    if (rc > 0 && fh->kpath)
        drxfs_kc_changed(fh->kkey, fh->kpath);
    return rc;
}

/* No fallocate (array files have the array's size), no SEEK_DATA. */
const struct drxfs_kind_ops drxfs_array_ops = {
    .getattr = array_getattr,
    .fgetattr = array_fgetattr,
    .chmod = array_chmod,
    .chown = array_chown,
    .utimens = array_utimens,
    .truncate = drxfs_array_truncate,
    .open = array_open,
    .read = drxfs_array_read,
    .write = array_write,
    .fsync = drxfs_array_fsync,
    .release = drxfs_array_release,
};
