#include "drx/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int drx_io_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    char *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int drx_io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int drx_io_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t drx_io_read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int drx_io_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

int drx_io_fsync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int rc;

    if (!slash)
        return drx_io_fsync_dir(".");
    if (slash == path)
        return drx_io_fsync_dir("/");
    dir = strndup(path, (size_t)(slash - path));
    if (!dir)
        return -ENOMEM;
    rc = drx_io_fsync_dir(dir);
    free(dir);
    return rc;
}
