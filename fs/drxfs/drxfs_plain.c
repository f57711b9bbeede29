/* What the store's own entries do at the mount: directories, regular files,
 * FIFOs/sockets/devices and symlinks pass through to the store, each entry
 * reached beneath the store's root (drx_store_entry_*), an open file by
 * its descriptor.  And the table of every kind's operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
    drxfs_guard_owner();
    int rc = drx_store_entry_chmod(drxfs.store, n->rel, mode);
    drxfs_guard_done();
    return rc;
}

static int entry_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    if (fh)
        return fchown(fh->fd, uid, gid) < 0 ? -errno : 0;
    drxfs_guard_owner();
    int rc = drx_store_entry_chown(drxfs.store, n->rel, uid, gid);
    drxfs_guard_done();
    return rc;
}

static int entry_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                         const struct timespec tv[2])
{
    if (fh)
        return futimens(fh->fd, tv) < 0 ? -errno : 0;
    drxfs_guard_times(tv);
    int rc = drx_store_entry_utimens(drxfs.store, n->rel, tv);
    drxfs_guard_done();
    return rc;
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

/* checked as a plain entry's (entry_utimens): unchecked, a user's own
 * symlink exchanged with root's file behind the mount gave root's file
 * the times he set on his symlink (lutimes) */
static int link_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                        const struct timespec tv[2])
{
    (void)fh;
    drxfs_guard_times(tv);
    int rc = drx_store_entry_utimens(drxfs.store, n->rel, tv);
    drxfs_guard_done();
    return rc;
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

/* How long an open waits for another's lease on the file to break: past
 * the kernel's lease-break-time (45 s by default), after which the kernel
 * breaks it, unless its holder takes it again at once. */
#define LEASE_WAIT_NS (60 * 1000000000LL)
#define LEASE_NAP_MAX_NS 20000000L

/* Tries store file rel's open (flags with O_NONBLOCK) again while a lease
 * on it is being broken, as open(2) would wait, in one of the waiting
 * threads drxfs_wait_begin allows: the descriptor, or -errno (EWOULDBLOCK
 * when no thread may wait or the lease stays).  pfd >= 0: the file open
 * there (drxfs_reopen), not what the name holds. */
static int lease_wait(const char *rel, int pfd, int flags)
{
    struct timespec t0, t;
    long ns = 1000000;
    int fd = -EWOULDBLOCK;

    if (!drxfs_wait_begin("an open waiting for a lease on the file to break (EWOULDBLOCK)"))
        return fd;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (fuse_interrupted()) {
            fd = -EINTR;
            break;
        }
        struct timespec nap = {0, ns};
        nanosleep(&nap, NULL);
        ns = ns * 2 > LEASE_NAP_MAX_NS ? LEASE_NAP_MAX_NS : ns * 2;
        fd = pfd >= 0 ? drxfs_reopen(pfd, flags | O_NONBLOCK)
                      : drx_store_entry_open(drxfs.store, rel, flags | O_NONBLOCK, 0);
        if (fd != -EWOULDBLOCK)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) > LEASE_WAIT_NS)
            break;
    }
    drxfs_wait_end();
    if (fd == -EWOULDBLOCK)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: a lease on it was not given up: open refused",
                            rel);
    return fd;
}

/* Opens plain store file rel for the caller with flags: -ESTALE when it
 * is no regular file now, -EACCES when the caller may not open it so.
 * The kernel checked the file it holds under the name, which a user who
 * may write its directory can have renamed another file over behind the
 * mount since (a loop of renames found one in a few tries): the daemon,
 * root, would then open a file of root's for him.  So for a caller other
 * than root it opens what the name leads him to (drxfs_caller_entry_open),
 * checks that file's mode and ACL, and opens that very file: never
 * another, and no check by name after (which refused 9 opens in 1000 of
 * a file removed and written anew behind the mount; with retries, its
 * twin in the striped open still refused 1-2 in 1000 under load).
 * O_NONBLOCK for the open: a FIFO put there the same way would hold the
 * thread until a writer came, and a lease the file's owner holds
 * (F_SETLEASE, which any owner may take) held every thread opening it
 * for lease-break-time (45 s: ten opens of leased files hung the mount
 * for everyone); a lease is waited for in one of the threads
 * drxfs_wait_begin allows. */
static int plain_store_open(const char *rel, int flags)
{
    int acc = flags & O_ACCMODE, fd, pfd = -1;
    unsigned want = (acc != O_WRONLY ? 4 : 0) | (acc != O_RDONLY || (flags & O_TRUNC) ? 2 : 0);
    struct stat st;

    if (fuse_get_context()->uid != 0 &&
        (pfd = drxfs_caller_open_checked(rel, S_IFREG, want, &st)) < 0)
        return pfd;
    /* O_TRUNC (never sent while atomic O_TRUNC is off) only once the
     * caller is checked, as the striped open truncates */
    int oflags = flags & ~O_TRUNC;
    fd = pfd >= 0 ? drxfs_reopen(pfd, oflags | O_NONBLOCK)
                  : drx_store_entry_open(drxfs.store, rel, oflags | O_NONBLOCK, 0);
    if (fd == -EWOULDBLOCK && !(flags & O_NONBLOCK))
        fd = lease_wait(rel, pfd, oflags);
    if (pfd >= 0)
        close(pfd);
    if (fd < 0)
        return fd;
    if (pfd < 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return -ESTALE;
    }
    if ((flags & O_TRUNC) && ftruncate(fd, 0) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    if (!(flags & O_NONBLOCK))
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static int plain_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    int fd = fh ? fh->fd : plain_store_open(n->rel, O_WRONLY), rc;

    if (fd == -ESTALE)
        return -EINVAL;
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

    if (!fh)
        return -ENOMEM;
    fh->kind = DRXFS_PLAIN;
    fh->fd = plain_store_open(n->rel, fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY));
    if (fh->fd < 0) {
        int rc = fh->fd;
        free(fh);
        /* the kernel opens a FIFO or socket itself, once it knows */
        return rc == -ESTALE ? drxfs_stale_once(path, -ENXIO) : rc;
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
