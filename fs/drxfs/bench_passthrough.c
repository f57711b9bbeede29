/* The yardstick of bench_mount.sh: the least a FUSE file system can do to
 * serve one file.  It shows FILE as MOUNTPOINT/file and answers every read
 * with one pread.  Built for the benchmark only (not installed).
 *
 *   bench_passthrough FILE MOUNTPOINT [-f] [-o direct] [other FUSE options]
 *
 * -o direct: the file bypasses the page cache (direct_io), as drxfs's
 * data_io=direct; otherwise page-cache mode, as drxfs's default.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
    int rc = fuse_main(args.argc, args.argv, &pt_ops, NULL);
    fuse_opt_free_args(&args);
    return rc;
}
