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
#include <sys/xattr.h>
#include <unistd.h>

#include "drxfs_i.h"

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

/* The attributes of an open file; 1 when the path must be resolved (a
 * striped file with a name: its metafile may have changed under it). */
static int fh_getattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    int rc;

    if (fh->kind == DRXFS_PLAIN)
        rc = fstat(fh->fd, st) < 0 ? -errno : 0;
    else if (fh->kind == DRXFS_STRIPED)
        rc = path ? 1 : drxfs_striped_fgetattr(fh, st);
    else if (fh->kind == DRXFS_ZARR)
        rc = drxfs_zarr_fgetattr(fh, st);
    else if (drxfs_is_array_kind(fh->kind))
        rc = drxfs_array_fgetattr(fh, st);
    else
        return 1;
    if (fh->kind == DRXFS_ZARR || drxfs_is_array_kind(fh->kind))
        st->st_ino = fh->ino;
    if (rc == 0 && fh->kpath)
        drxfs_kc_seen(fh->kkey, path ? path : fh->kpath, drxfs_kc_sig_of(fh->kind, fh->kkey, st),
                      fh->kcounted);
    return rc;
}

int drxfs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    int rc;

    drxfs_kc_first_request();
    if (fh && (rc = fh_getattr(fh, path, st)) != 1)
        return rc;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    if (drxfs_is_array_kind(n->kind)) {
        rc = drxfs_array_getattr(n, st);
        st->st_ino = drxfs_virtual_ino(path, NULL);
    } else if (n->kind == DRXFS_ZARR) {
        rc = drxfs_zarr_getattr(n, st);
        st->st_ino = drxfs_virtual_ino(path, NULL);
    } else if (n->kind == DRXFS_STRIPED) {
        rc = drxfs_striped_getattr(n, st);
    } else {
        *st = n->st;
        if (drxfs.ro)
            st->st_mode &= ~(mode_t)0222;
    }
    if (rc == 0 && kc_kind(n->kind) && drxfs_kc_active())
        drxfs_kc_seen(n->rel, path, drxfs_kc_sig_of(n->kind, n->rel, st), false);
    free(n);
    return rc;
}

int drxfs_op_readlink(const char *path, char *buf, size_t size)
{
    struct drxfs_node *n;
    int rc;

    if (size == 0)
        return -EINVAL;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    if (n->kind != DRXFS_LINK) {
        rc = -EINVAL;
    } else {
        ssize_t len = readlinkat(drxfs.root_fd, n->rel, buf, size - 1);
        if (len < 0) {
            rc = -errno;
        } else {
            buf[len] = '\0';
            rc = 0;
        }
    }
    free(n);
    return rc;
}

/* The store files an array node's chmod/chown/utimens apply to: the array
 * itself and its top-level files name the array; views are refused. */
static int array_files(const struct drxfs_node *n, char *xmd, char *xta)
{
    int rc;
    /* views and the zarr group: their modes are the array directory's */
    if (n->spec.nwords > 0 || n->kind == DRXFS_ZARR)
        return -EPERM;
    if ((rc = drxfs_rel_suffix(xmd, n->rel, DRXFS_XMD)) < 0)
        return rc;
    return drxfs_rel_suffix(xta, n->rel, DRXFS_XTA);
}

/* The same for an open file of an array (libfuse passes no path). */
static int array_fh_files(const struct drxfs_fh *fh, char *xmd, char *xta)
{
    int rc;
    if (fh->nwords > 0)
        return -EPERM;
    if ((rc = drxfs_rel_suffix(xmd, drxfs_array_fh_rel(fh), DRXFS_XMD)) < 0)
        return rc;
    return drxfs_rel_suffix(xta, drxfs_array_fh_rel(fh), DRXFS_XTA);
}

/* chmod of an array: its chunk file, then its metadata file. */
static int chmod_array(const char *xmd, const char *xta, mode_t mode)
{
    int rc;
    if ((rc = drxfs_chmod_beneath(xta, mode)) < 0)
        return rc;
    return drxfs_chmod_beneath(xmd, mode);
}

/* chmod of an open file (libfuse passes no path). */
static int chmod_fh(struct drxfs_fh *fh, mode_t mode)
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc;

    if (fh->kind == DRXFS_PLAIN)
        return fchmod(fh->fd, mode & 07777) < 0 ? -errno : 0;
    if (fh->kind == DRXFS_STRIPED)
        return drxfs_striped_chmod(NULL, fh, mode);
    if (!drxfs_is_array_kind(fh->kind))
        return 1; /* by its path */
    if ((rc = array_fh_files(fh, xmd, xta)) < 0)
        return rc;
    return chmod_array(xmd, xta, mode);
}

/* chmod of node n. */
static int chmod_node(const struct drxfs_node *n, mode_t mode)
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc;

    switch (n->kind) {
    case DRXFS_DIR:
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
        return drxfs_chmod_beneath(n->rel, mode);
    case DRXFS_LINK:
        return -EOPNOTSUPP;
    case DRXFS_STRIPED:
        return drxfs_striped_chmod(n, NULL, mode);
    default:
        if ((rc = array_files(n, xmd, xta)) < 0)
            return rc;
        return chmod_array(xmd, xta, mode);
    }
}

int drxfs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (fh && (rc = chmod_fh(fh, mode)) <= 0)
        return rc;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    rc = chmod_node(n, mode);
    free(n);
    return rc;
}

/* chown of an array: its chunk file, then its metadata file. */
static int chown_array(const char *xmd, const char *xta, uid_t uid, gid_t gid)
{
    int rc;
    if ((rc = drxfs_chown_beneath(xta, uid, gid)) < 0)
        return rc;
    return drxfs_chown_beneath(xmd, uid, gid);
}

/* chown of an open file (libfuse passes no path). */
static int chown_fh(struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc;

    if (fh->kind == DRXFS_PLAIN)
        return fchown(fh->fd, uid, gid) < 0 ? -errno : 0;
    if (fh->kind == DRXFS_STRIPED)
        return drxfs_striped_chown(NULL, fh, uid, gid);
    if (!drxfs_is_array_kind(fh->kind))
        return 1; /* by its path */
    if ((rc = array_fh_files(fh, xmd, xta)) < 0)
        return rc;
    return chown_array(xmd, xta, uid, gid);
}

/* chown of node n. */
static int chown_node(const struct drxfs_node *n, uid_t uid, gid_t gid)
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc;

    switch (n->kind) {
    case DRXFS_DIR:
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
    case DRXFS_LINK:
        return drxfs_chown_beneath(n->rel, uid, gid);
    case DRXFS_STRIPED:
        return drxfs_striped_chown(n, NULL, uid, gid);
    default:
        if ((rc = array_files(n, xmd, xta)) < 0)
            return rc;
        return chown_array(xmd, xta, uid, gid);
    }
}

int drxfs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (fh && (rc = chown_fh(fh, uid, gid)) <= 0)
        return rc;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    rc = chown_node(n, uid, gid);
    free(n);
    return rc;
}

/* utimens of array rel's file of kind k: `touch A/data` must work, and the
 * times live on the store files: the elements' on the .xta, the others'
 * (info, the directory) on the .xmd. */
static int utimens_array(const char *rel, enum drxfs_kind k, const struct timespec tv[2])
{
    char xmd[PATH_MAX], xta[PATH_MAX];
    int rc;

    if ((rc = drxfs_rel_suffix(xmd, rel, DRXFS_XMD)) < 0 ||
        (rc = drxfs_rel_suffix(xta, rel, DRXFS_XTA)) < 0)
        return rc;
    return drxfs_utimens_beneath(
        (k == DRXFS_ADATA || k == DRXFS_ANPY || k == DRXFS_ANC) ? xta : xmd, tv);
}

/* utimens of an open file (libfuse passes no path); 1: by its path. */
static int utimens_fh(struct drxfs_fh *fh, const struct timespec tv[2])
{
    if (fh->kind == DRXFS_PLAIN)
        return futimens(fh->fd, tv) < 0 ? -errno : 0;
    if (fh->kind == DRXFS_STRIPED)
        return drxfs_striped_utimens(NULL, fh, tv);
    if (!drxfs_is_array_kind(fh->kind))
        return 1;
    return utimens_array(drxfs_array_fh_rel(fh), fh->kind, tv);
}

/* utimens of node n. */
static int utimens_node(const struct drxfs_node *n, const struct timespec tv[2])
{
    switch (n->kind) {
    case DRXFS_DIR:
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
        return drxfs_utimens_beneath(n->rel, tv);
    case DRXFS_LINK:
        return utimensat(drxfs.root_fd, n->rel, tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
    case DRXFS_STRIPED:
        return drxfs_striped_utimens(n, NULL, tv);
    case DRXFS_ZARR:
        return -EPERM;
    default:
        return utimens_array(n->rel, n->kind, tv);
    }
}

int drxfs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (fh && (rc = utimens_fh(fh, tv)) <= 0)
        return rc;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    rc = utimens_node(n, tv);
    free(n);
    return rc;
}

static int fh_truncate(struct drxfs_fh *fh, off_t size)
{
    switch (fh->kind) {
    case DRXFS_PLAIN:
        return ftruncate(fh->fd, size) < 0 ? -errno : 0;
    case DRXFS_STRIPED:
        return drxfs_striped_truncate(NULL, fh, size);
    case DRXFS_ZARR:
        return drxfs_zarr_truncate(NULL, fh, size);
    default:
        return drxfs_array_truncate(NULL, fh, size);
    }
}

int drxfs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    struct drxfs_node *n = NULL;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (fh)
        return fh_truncate(fh, size);
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_PLAIN: {
        int fd = drxfs_open_beneath(n->rel, O_WRONLY, 0);
        if (fd < 0) {
            rc = fd;
            break;
        }
        rc = ftruncate(fd, size) < 0 ? -errno : 0;
        close(fd);
        break;
    }
    case DRXFS_STRIPED:
        rc = drxfs_striped_truncate(n, NULL, size);
        break;
    case DRXFS_ZARR:
        rc = drxfs_zarr_truncate(n, NULL, size);
        break;
    case DRXFS_DIR:
    case DRXFS_ARRAY:
        rc = -EISDIR;
        break;
    case DRXFS_LINK:
    case DRXFS_SPECIAL:
        rc = -EINVAL;
        break;
    default:
        rc = drxfs_array_truncate(n, NULL, size);
        break;
    }
    free(n);
    return rc;
}

/* ---- files ---- */

/* A file was opened: may the kernel keep the pages of earlier opens?
 * Only when what it showed then is what it shows now. */
static void open_cache(const char *path, enum drxfs_kind kind, const char *rel,
                       struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    struct stat st;
    const struct stat *rep = NULL;
    uint64_t shape = 0;
    char xmd[PATH_MAX];

    fi->keep_cache = 0;
    if (!drxfs_kc_active() || !kc_kind(kind))
        return;
    if (!(fh->kpath = strdup(path)) || !(fh->kkey = strdup(rel))) {
        free(fh->kpath);
        fh->kpath = NULL;
        return;
    }
    if (fi->direct_io)
        return; /* no pages; writes still tell the other views */
    if (kind == DRXFS_STRIPED && drxfs_striped_fgetattr(fh, &st) == 0)
        rep = &st;
    /* What files opened earlier must keep reading: a view's shape follows
     * from the .xmd; a striped file is its handle (a new one when another
     * file was put in its place), a plain file its inode. */
    if (drxfs_is_array_kind(kind) && drxfs_rel_suffix(xmd, rel, DRXFS_XMD) == 0 &&
        fstatat(drxfs.root_fd, xmd, &st, AT_SYMLINK_NOFOLLOW) == 0)
        shape = drxfs_kc_sig(0, &st);
    else if (kind == DRXFS_STRIPED)
        shape = (uint64_t)(uintptr_t)fh->sf;
    else if (kind == DRXFS_PLAIN && fstat(fh->fd, &st) == 0)
        shape = (uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 40);
    uint64_t sig = drxfs_kc_sig_of(kind, rel, rep);
    int rc = drxfs_kc_open(rel, path, sig, drxfs_kc_page_sig(kind, rel, sig), shape);
    fi->keep_cache = rc == 1;
    fh->kcounted = rc >= 0;
    if (rc == -1)
        fi->direct_io = 1;
}

int drxfs_op_open(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro && (fi->flags & O_ACCMODE) != O_RDONLY)
        return -EROFS;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_PLAIN: {
        struct drxfs_fh *fh = calloc(1, sizeof(*fh));
        if (!fh) {
            rc = -ENOMEM;
            break;
        }
        fh->kind = DRXFS_PLAIN;
        fh->fd = drxfs_open_beneath(n->rel, fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY), 0);
        if (fh->fd < 0) {
            rc = fh->fd;
            free(fh);
            break;
        }
        fi->fh = (uint64_t)(uintptr_t)fh;
        break;
    }
    case DRXFS_STRIPED:
        rc = drxfs_striped_open(n, fi);
        break;
    case DRXFS_ZARR:
        rc = drxfs_zarr_open(n, fi);
        if (rc == 0)
            drxfs_fh_of(fi)->ino = drxfs_virtual_ino(path, NULL);
        break;
    case DRXFS_DIR:
        rc = -EISDIR;
        break;
    case DRXFS_LINK:
        rc = -ELOOP;
        break;
    case DRXFS_SPECIAL:
        rc = -ENXIO; /* the kernel opens these itself */
        break;
    default:
        rc = drxfs_array_open(path, n, fi);
        if (rc == 0)
            drxfs_fh_of(fi)->ino = drxfs_virtual_ino(path, NULL);
        break;
    }
    if (rc == 0)
        open_cache(path, n->kind, n->rel, fi);
    free(n);
    return rc;
}

int drxfs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    if ((rc = drxfs_zarr_create(path, mode, fi)) != 1)
        return rc;
    if ((rc = drxfs_resolve_new(path, rel, &name, &at_root)) < 0)
        return rc;
    if (drxfs.ro)
        return -EROFS;
    if (drxfs_name_reserved(name, at_root)) {
        drx_log(DRX_LOG_DEBUG, "%s: reserved name in the store", path);
        return -EPERM;
    }
    if ((rc = drxfs_check_new_name(path, name, at_root)) < 0) {
        /* O_CREAT without O_EXCL on an existing name opens it */
        if (rc == -EEXIST && !(fi->flags & O_EXCL))
            return drxfs_op_open(path, fi);
        return rc;
    }
    /* a long name's metafile is named by its stem, the name recorded
     * first (drx/store.h) */
    if ((rc = drxfs_long_new(rel, rel)) < 0)
        return rc;
    if ((rc = drxfs_striped_create(rel, mode, fi)) == 0)
        open_cache(path, DRXFS_STRIPED, rel, fi);
    else
        drxfs_long_name_drop(rel);
    return rc;
}

static int read_some(struct drxfs_fh *fh, char *buf, size_t size, off_t off)
{
    switch (fh->kind) {
    case DRXFS_PLAIN: {
        ssize_t n = pread(fh->fd, buf, size, off);
        return n < 0 ? -errno : (int)n;
    }
    case DRXFS_STRIPED:
        return drxfs_striped_read(fh, buf, size, off);
    case DRXFS_ZARR:
        return drxfs_zarr_read(fh, buf, size, off);
    default:
        return drxfs_array_read(fh, buf, size, off);
    }
}

int drxfs_op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
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
    switch (fh->kind) {
    case DRXFS_PLAIN: {
        ssize_t n = pwrite(fh->fd, buf, size, off);
        return n < 0 ? -errno : (int)n;
    }
    case DRXFS_STRIPED:
        return drxfs_striped_write(fh, buf, size, off);
    case DRXFS_ZARR:
        return drxfs_zarr_write(fh, buf, size, off);
    default: {
        int rc = drxfs_array_write(fh, buf, size, off);
        /* every other view of the array the kernel caches is now stale */
        if (rc > 0 && fh->kpath)
            drxfs_kc_changed(fh->kkey, fh->kpath);
        return rc;
    }
    }
}

int drxfs_op_flush(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path;
    if (fh->kind == DRXFS_STRIPED)
        return drxfs_striped_flush(fh);
    return 0;
}

int drxfs_op_release(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    struct stat st = {0};
    (void)path;
    if (fh->kcounted)
        drxfs_kc_close(fh->kkey, fh->kpath);
    free(fh->kpath);
    free(fh->kkey);
    switch (fh->kind) {
    case DRXFS_PLAIN:
        fstat(fh->fd, &st);
        close(fh->fd);
        free(fh);
        drxfs_hidden_released(st.st_dev, st.st_ino);
        break;
    case DRXFS_STRIPED:
        drxfs_striped_ino(fh, &st.st_dev, &st.st_ino);
        drxfs_striped_release(fh);
        drxfs_hidden_released(st.st_dev, st.st_ino);
        break;
    case DRXFS_ZARR:
        drxfs_zarr_release(fh);
        break;
    default:
        drxfs_array_release(fh);
        break;
    }
    return 0;
}

int drxfs_op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);
    (void)path;
    switch (fh->kind) {
    case DRXFS_PLAIN:
        return (datasync ? fdatasync(fh->fd) : fsync(fh->fd)) < 0 ? -errno : 0;
    case DRXFS_STRIPED:
        return drxfs_striped_fsync(fh, datasync);
    case DRXFS_ZARR:
        return 0; /* a chunk is stored at the rename, through the array's fd */
    default:
        return drxfs_array_fsync(fh, datasync);
    }
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
    switch (fh->kind) {
    case DRXFS_PLAIN:
        return fallocate(fh->fd, mode, off, len) < 0 ? -errno : 0;
    case DRXFS_STRIPED:
        return drxfs_striped_fallocate(fh, mode, off, len);
    default:
        return -EOPNOTSUPP; /* array files have the array's size */
    }
}

/* SEEK_DATA and SEEK_HOLE (the kernel does the others itself). */
off_t drxfs_op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = fi ? drxfs_fh_of(fi) : NULL;
    (void)path;
    if (!fh)
        return -EINVAL;
    switch (fh->kind) {
    case DRXFS_PLAIN: {
        off_t r = lseek(fh->fd, off, whence);
        return r < 0 ? -errno : r;
    }
    case DRXFS_STRIPED:
        return drxfs_striped_lseek(fh, off, whence);
    default:
        return -ENOSYS; /* the kernel's generic answer: all data */
    }
}

int drxfs_op_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    return drxfs_striped_statfs(sv);
}

/* ---- extended attributes ----
 * user.drx.stripe is handled by the striped-file code; other attributes of
 * plain files, directories and striped files (kept on the metafile, whose
 * inode is the striped file's) pass through, so cp -a and rsync -X keep
 * them; an array directory's user.NAME are the array's attributes
 * (drxfs_array_*xattr, returned as 1 here: *out is that node); array
 * files, symlinks and special files have none here.  The store entry is
 * opened O_PATH beneath the store and reached through its descriptor. */

/* What xattr_node returns for an array directory (not an errno). */
#define XATTR_ARRAY (-100000)

static int xattr_node(const char *path, struct drxfs_node **out, char *self, size_t len)
{
    char meta[PATH_MAX];
    int rc;

    if (!(*out = drxfs_node_get(path, &rc)))
        return rc;
    if ((*out)->kind == DRXFS_ARRAY)
        return XATTR_ARRAY;
    if ((*out)->kind != DRXFS_DIR && (*out)->kind != DRXFS_PLAIN && (*out)->kind != DRXFS_STRIPED)
        return -ENOTSUP;
    if ((*out)->kind == DRXFS_STRIPED && (rc = drxfs_rel_suffix(meta, (*out)->rel, DRXFS_NAFS)) < 0)
        return rc;
    return drxfs_self_beneath((*out)->kind == DRXFS_STRIPED ? meta : (*out)->rel, self, len);
}

int drxfs_op_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
    struct drxfs_node *n = NULL;
    char self[64];
    int fd, rc;

    if (drxfs.ro)
        return -EROFS;
    if (strcmp(name, DRXFS_COMMIT_XATTR) == 0 && drxfs_commit_active()) {
        drxfs_commit_now(); /* asked: record every waiting size now */
        return 0;
    }
    fd = xattr_node(path, &n, self, sizeof(self));
    if (fd == XATTR_ARRAY)
        rc = drxfs_array_setxattr(n, name, value, size, flags);
    else if (fd < 0)
        rc = fd;
    else if (strcmp(name, DRXFS_STRIPE_XATTR) == 0)
        rc = drxfs_striped_setxattr(n, value, size, flags);
    else
        rc = setxattr(self, name, value, size, flags) < 0 ? -errno : 0;
    if (fd >= 0)
        close(fd);
    free(n);
    return rc;
}

int drxfs_op_getxattr(const char *path, const char *name, char *value, size_t size)
{
    struct drxfs_node *n = NULL;
    char self[64];
    int fd, rc;

    fd = xattr_node(path, &n, self, sizeof(self));
    if (fd == XATTR_ARRAY) {
        rc = drxfs_array_getxattr(n, name, value, size);
    } else if (fd < 0) {
        rc = fd;
    } else if (strcmp(name, DRXFS_STRIPE_XATTR) == 0) {
        rc = drxfs_striped_getxattr(n, value, size);
    } else {
        ssize_t len = getxattr(self, name, value, size);
        rc = len < 0 ? -errno : (int)len;
    }
    if (fd >= 0)
        close(fd);
    free(n);
    return rc;
}

/* The names of self's attributes but user.drx.stripe (which lives on store
 * directories and is not copied by cp -a or rsync -X) into list. */
static int list_but_layout(const char *self, char *list, size_t size)
{
    char *all = NULL;
    size_t outlen = 0;
    ssize_t len = listxattr(self, NULL, 0);
    int rc = 0;

    if (len <= 0)
        return len < 0 ? -errno : 0;
    if (!(all = malloc((size_t)len)))
        return -ENOMEM;
    len = listxattr(self, all, (size_t)len);
    if (len < 0)
        rc = -errno;
    for (ssize_t i = 0; rc == 0 && i < len;) {
        size_t l = strnlen(all + i, (size_t)(len - i)) + 1;
        if (strcmp(all + i, DRXFS_STRIPE_XATTR) != 0) {
            if (size && outlen + l > size)
                rc = -ERANGE;
            else if (size)
                memcpy(list + outlen, all + i, l);
            outlen += l;
        }
        i += (ssize_t)l;
    }
    free(all);
    return rc < 0 ? rc : (int)outlen;
}

int drxfs_op_listxattr(const char *path, char *list, size_t size)
{
    struct drxfs_node *n = NULL;
    char self[64];
    int fd, rc;

    fd = xattr_node(path, &n, self, sizeof(self));
    if (fd == XATTR_ARRAY)
        rc = drxfs_array_listxattr(n, list, size);
    else if (fd < 0)
        rc = fd == -ENOTSUP ? 0 : fd;
    else
        rc = list_but_layout(self, list, size);
    if (fd >= 0)
        close(fd);
    free(n);
    return rc;
}

int drxfs_op_removexattr(const char *path, const char *name)
{
    struct drxfs_node *n = NULL;
    char self[64];
    int fd, rc;

    if (drxfs.ro)
        return -EROFS;
    fd = xattr_node(path, &n, self, sizeof(self));
    if (fd == XATTR_ARRAY)
        rc = drxfs_array_removexattr(n, name);
    else if (fd < 0)
        rc = fd;
    else if (strcmp(name, DRXFS_STRIPE_XATTR) == 0)
        rc = drxfs_striped_setxattr(n, NULL, 0, 0);
    else
        rc = removexattr(self, name) < 0 ? -errno : 0;
    if (fd >= 0)
        close(fd);
    free(n);
    return rc;
}
