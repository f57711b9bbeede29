/* The yardstick of bench_mount.sh and bench_cache.sh: the least a FUSE
 * file system can do.  Given a FILE, it shows it as MOUNTPOINT/file and
 * answers every read with one pread.  Given a DIR, it shows DIR's tree and
 * answers each request with the one system call on DIR's file that does it
 * (creations, writes, renames, ...: the floor of cp -r and git clone), with
 * drxfs's caching (page cache, entry timeout 1 s, attributes one tick,
 * missing names not cached) and no extended attributes, so that the kernel
 * stops asking for security.capability at the first write.  Built for the
 * benchmark only (not installed).
 *
 *   bench_passthrough FILE|DIR MOUNTPOINT [-f] [-o direct] [other FUSE options]
 *
 * -o direct: the file bypasses the page cache (direct_io), as drxfs's
 * data_io=direct; otherwise page-cache mode, as drxfs's default.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

static struct {
    int fd;
    struct stat st;
    int direct;
} pt = {.fd = -1};

static const struct fuse_opt pt_opts[] = {
    {"direct", offsetof(__typeof__(pt), direct), 1},
    FUSE_OPT_END,
};

static int pt_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    memset(st, 0, sizeof(*st));
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (strcmp(path, "/file") != 0)
        return -ENOENT;
    *st = pt.st;
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    return 0;
}

static int pt_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    if (strcmp(path, "/") != 0)
        return -ENOTDIR;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    fill(buf, "file", NULL, 0, 0);
    return 0;
}

static int pt_open(const char *path, struct fuse_file_info *fi)
{
    if (strcmp(path, "/file") != 0)
        return -ENOENT;
    if ((fi->flags & O_ACCMODE) != O_RDONLY)
        return -EACCES;
    fi->direct_io = pt.direct;
    fi->keep_cache = 0;
    return 0;
}

static int pt_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    (void)fi;
    ssize_t n = pread(pt.fd, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static void *pt_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->entry_timeout = cfg->attr_timeout = 1;
    return NULL;
}

static const struct fuse_operations pt_ops = {
    .getattr = pt_getattr,
    .readdir = pt_readdir,
    .open = pt_open,
    .read = pt_read,
    .init = pt_init,
};

/* ---- DIR mode: each request is one *at call on DIR's file ---- */

/* the path relative to DIR ("/" is DIR itself) */
static const char *rel(const char *path)
{
    return path[1] ? path + 1 : ".";
}

static int neg(int rc)
{
    return rc < 0 ? -errno : rc;
}

static int d_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi)
        return neg(fstat((int)fi->fh, st));
    return neg(fstatat(pt.fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int d_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    int fd = openat(pt.fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (fill(buf, e->d_name, NULL, 0, 0))
            break;
    closedir(d);
    return 0;
}

static int d_mkdir(const char *path, mode_t mode)
{
    return neg(mkdirat(pt.fd, rel(path), mode));
}

static int d_unlink(const char *path)
{
    return neg(unlinkat(pt.fd, rel(path), 0));
}

static int d_rmdir(const char *path)
{
    return neg(unlinkat(pt.fd, rel(path), AT_REMOVEDIR));
}

static int d_symlink(const char *target, const char *path)
{
    return neg(symlinkat(target, pt.fd, rel(path)));
}

static int d_readlink(const char *path, char *buf, size_t size)
{
    ssize_t n = readlinkat(pt.fd, rel(path), buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int d_rename(const char *from, const char *to, unsigned int flags)
{
    return neg(renameat2(pt.fd, rel(from), pt.fd, rel(to), flags));
}

static int d_link(const char *from, const char *to)
{
    return neg(linkat(pt.fd, rel(from), pt.fd, rel(to), 0));
}

static int d_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi)
        return neg(fchmod((int)fi->fh, mode));
    return neg(fchmodat(pt.fd, rel(path), mode, 0));
}

static int d_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi)
        return neg(fchown((int)fi->fh, uid, gid));
    return neg(fchownat(pt.fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int d_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return neg(ftruncate((int)fi->fh, size));
    int fd = openat(pt.fd, rel(path), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = neg(ftruncate(fd, size));
    close(fd);
    return rc;
}

static int d_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (fi)
        return neg(futimens((int)fi->fh, tv));
    return neg(utimensat(pt.fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int d_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int fd = openat(pt.fd, rel(path), fi->flags | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int d_open(const char *path, struct fuse_file_info *fi)
{
    int fd = openat(pt.fd, rel(path), (fi->flags & ~O_NOFOLLOW) | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    fi->keep_cache = 1;
    return 0;
}

static int d_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    return neg((int)pread((int)fi->fh, buf, size, off));
}

static int d_write(const char *path, const char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    return neg((int)pwrite((int)fi->fh, buf, size, off));
}

static int d_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int d_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    return neg(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static int d_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    return neg(fstatvfs(pt.fd, sv));
}

static void *d_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
        conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    cfg->entry_timeout = 1.0;
    cfg->attr_timeout = 0.001;
    cfg->negative_timeout = 0;
    cfg->use_ino = 1;
    return NULL;
}

static const struct fuse_operations dir_ops = {
    .getattr = d_getattr,
    .readdir = d_readdir,
    .mkdir = d_mkdir,
    .unlink = d_unlink,
    .rmdir = d_rmdir,
    .symlink = d_symlink,
    .readlink = d_readlink,
    .rename = d_rename,
    .link = d_link,
    .chmod = d_chmod,
    .chown = d_chown,
    .truncate = d_truncate,
    .utimens = d_utimens,
    .create = d_create,
    .open = d_open,
    .read = d_read,
    .write = d_write,
    .release = d_release,
    .fsync = d_fsync,
    .statfs = d_statfs,
    .init = d_init,
};

int main(int argc, char *argv[])
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE MOUNTPOINT [FUSE options]\n", argv[0]);
        return 2;
    }
    pt.fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (pt.fd < 0 || fstat(pt.fd, &pt.st) < 0) {
        perror(argv[1]);
        return 1;
    }
    struct fuse_args args = FUSE_ARGS_INIT(argc - 1, argv + 1);
    args.argv[0] = argv[0];
    if (fuse_opt_parse(&args, &pt, pt_opts, NULL) < 0)
        return 1;
    const struct fuse_operations *ops = S_ISDIR(pt.st.st_mode) ? &dir_ops : &pt_ops;
    int rc = fuse_main(args.argc, args.argv, ops, NULL);
    fuse_opt_free_args(&args);
    return rc;
}
