/* What the store's own entries do at the mount: directories, regular files,
 * FIFOs/sockets/devices and symlinks pass through to the store, each entry
 * reached beneath the store's root (drx_store_entry_*), an open file by
 * its descriptor.  And the table of every kind's operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/io.h"
#include "drxfs_i.h"

/* ---- every kind ---- */

static int entry_getattr(const struct drxfs_node *n, const char *path, struct stat *st)
{
    (void)path;
    *st = n->st;
    if (drxfs.ro)
        st->st_mode &= ~(mode_t)0222;
    return 0;
}

static int entry_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode)
{
    if (fh)
        return fchmod(fh->fd, mode & 07777) < 0 ? -errno : 0;
    return drx_store_entry_chmod(drxfs.store, n->rel, mode);
}

static int entry_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    if (fh)
        return fchown(fh->fd, uid, gid) < 0 ? -errno : 0;
    return drx_store_entry_chown(drxfs.store, n->rel, uid, gid);
}

static int entry_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                         const struct timespec tv[2])
{
    if (fh)
        return futimens(fh->fd, tv) < 0 ? -errno : 0;
    return drx_store_entry_utimens(drxfs.store, n->rel, tv);
}

/* ---- directories, FIFOs, sockets, devices, symlinks: no open of ours ---- */

static int dir_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    (void)n, (void)fh, (void)size;
    return -EISDIR;
}

static int dir_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    (void)path, (void)n, (void)fi;
    return -EISDIR;
}

static int nonreg_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    (void)n, (void)fh, (void)size;
    return -EINVAL;
}

static int special_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    (void)path, (void)n, (void)fi;
    return -ENXIO; /* the kernel opens these itself */
}

static int link_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    (void)path, (void)n, (void)fi;
    return -ELOOP;
}

static int link_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode)
{
    (void)n, (void)fh, (void)mode;
    return -EOPNOTSUPP; /* a symlink has no mode */
}

static int link_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                        const struct timespec tv[2])
{
    (void)fh;
    return drx_store_entry_utimens(drxfs.store, n->rel, tv);
}

const struct drxfs_kind_ops drxfs_dir_ops = {
    .getattr = entry_getattr,
    .chmod = entry_chmod,
    .chown = entry_chown,
    .utimens = entry_utimens,
    .truncate = dir_truncate,
    .open = dir_open,
};

const struct drxfs_kind_ops drxfs_special_ops = {
    .getattr = entry_getattr,
    .chmod = entry_chmod,
    .chown = entry_chown,
    .utimens = entry_utimens,
    .truncate = nonreg_truncate,
    .open = special_open,
};

const struct drxfs_kind_ops drxfs_link_ops = {
    .getattr = entry_getattr,
    .chmod = link_chmod,
    .chown = entry_chown,
    .utimens = link_utimens,
    .truncate = nonreg_truncate,
    .open = link_open,
};

/* ---- regular files ---- */

static int plain_fgetattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    (void)path;
    return fstat(fh->fd, st) < 0 ? -errno : 0;
}

static int plain_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    int fd = fh ? fh->fd : drx_store_entry_open(drxfs.store, n->rel, O_WRONLY, 0), rc;

    if (fd < 0)
        return fd;
    rc = ftruncate(fd, size) < 0 ? -errno : 0;
    if (!fh)
        close(fd);
    return rc;
}

static int plain_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = calloc(1, sizeof(*fh));
    (void)path;

    if (!fh)
        return -ENOMEM;
    fh->kind = DRXFS_PLAIN;
    fh->fd = drx_store_entry_open(drxfs.store, n->rel, fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY),
                                  0);
    if (fh->fd < 0) {
        int rc = fh->fd;
        free(fh);
        return rc;
    }
    fi->fh = (uint64_t)(uintptr_t)fh;
    return 0;
}

static int plain_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off)
{
    ssize_t n = pread(fh->fd, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int plain_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off)
{
    return (int)drx_io_pwrite(fh->fd, buf, size, (uint64_t)off);
}

static int plain_fsync(struct drxfs_fh *fh, int datasync)
{
    return (datasync ? fdatasync(fh->fd) : fsync(fh->fd)) < 0 ? -errno : 0;
}

/* The last close of a file removed while open frees it (drxfs_hidden.c). */
static void plain_release(struct drxfs_fh *fh)
{
    struct stat st = {0};

    fstat(fh->fd, &st);
    drxfs_hidden_releasing(st.st_dev, st.st_ino);
    close(fh->fd);
    free(fh);
    drxfs_hidden_released(st.st_dev, st.st_ino);
}

static int plain_fallocate(struct drxfs_fh *fh, int mode, off_t off, off_t len)
{
    return drx_io_fallocate(fh->fd, mode, (uint64_t)off, (uint64_t)len);
}

static off_t plain_lseek(struct drxfs_fh *fh, off_t off, int whence)
{
    off_t r = lseek(fh->fd, off, whence);
    return r < 0 ? -errno : r;
}

const struct drxfs_kind_ops drxfs_plain_ops = {
    .getattr = entry_getattr,
    .fgetattr = plain_fgetattr,
    .chmod = entry_chmod,
    .chown = entry_chown,
    .utimens = entry_utimens,
    .truncate = plain_truncate,
    .open = plain_open,
    .read = plain_read,
    .write = plain_write,
    .fsync = plain_fsync,
    .release = plain_release,
    .fallocate = plain_fallocate,
    .lseek = plain_lseek,
};

const struct drxfs_kind_ops *drxfs_ops_of(enum drxfs_kind k)
{
    switch (k) {
    case DRXFS_DIR:
        return &drxfs_dir_ops;
    case DRXFS_PLAIN:
        return &drxfs_plain_ops;
    case DRXFS_SPECIAL:
        return &drxfs_special_ops;
    case DRXFS_LINK:
        return &drxfs_link_ops;
    case DRXFS_STRIPED:
        return &drxfs_striped_ops;
    case DRXFS_ZARR:
        return &drxfs_zarr_ops;
    default:
        return &drxfs_array_ops; /* the array's directory and its files */
    }
}
