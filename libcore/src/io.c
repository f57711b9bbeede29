#include "drx/io.h"
#include "charge_i.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
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
        ssize_t n = drx_io_pwrite(fd, p, len, off);
        if (n < 0) {
            if (n == -EINTR)
                continue;
            return (int)n;
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

#define LOCK_WAIT_UNSET UINT_MAX
static unsigned lock_wait_ms = LOCK_WAIT_UNSET;

void drx_io_set_lock_wait_ms(unsigned ms)
{
    __atomic_store_n(&lock_wait_ms, ms == LOCK_WAIT_UNSET ? ms - 1 : ms, __ATOMIC_RELAXED);
}

unsigned drx_io_lock_wait_ms(void)
{
    unsigned ms = __atomic_load_n(&lock_wait_ms, __ATOMIC_RELAXED);
    if (ms != LOCK_WAIT_UNSET)
        return ms;
    /* the environment's, when it is a number of milliseconds */
    const char *env = getenv("DRX_LOCK_WAIT_MS");
    char *end;
    unsigned long v = env && *env ? strtoul(env, &end, 10) : ULONG_MAX;
    ms = env && *env && !*end && v < LOCK_WAIT_UNSET ? (unsigned)v : DRX_IO_LOCK_WAIT_MS;
    __atomic_store_n(&lock_wait_ms, ms, __ATOMIC_RELAXED);
    return ms;
}

/* A bounded wait for a lock: polled, from 50 us between tries up to 5 ms
 * (a holder keeps it for milliseconds).  false once the bound has passed. */
struct lock_wait {
    struct timespec start;
    long step_ns;
    unsigned bound;
};

static bool lock_wait_more(struct lock_wait *w)
{
    unsigned bound = w->bound;
    struct timespec now;

    if (w->step_ns == 0) {
        clock_gettime(CLOCK_MONOTONIC, &w->start);
        w->step_ns = 50000;
    } else if (bound) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long ms = (now.tv_sec - w->start.tv_sec) * 1000LL +
                       (now.tv_nsec - w->start.tv_nsec) / 1000000;
        if (ms >= bound)
            return false;
    }
    struct timespec d = {0, w->step_ns};
    nanosleep(&d, NULL);
    if (w->step_ns < 5000000)
        w->step_ns *= 2;
    return true;
}

static int range_lock(int fd, short type, uint64_t off, uint64_t len, bool wait)
{
    struct flock fl = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)off, .l_len = (off_t)len};
    struct lock_wait w = {{0, 0}, 0, drx_io_lock_wait_ms()};

    while (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
        if (errno == EINTR)
            continue;
        if (errno != EACCES && errno != EAGAIN)
            return -errno;
        if (!wait || !lock_wait_more(&w))
            return -EAGAIN;
    }
    return 0;
}

int drx_io_lock(int fd, uint64_t off, uint64_t len, int wait)
{
    if (len == 0)
        return 0;
    return range_lock(fd, F_WRLCK, off, len, wait != 0);
}

int drx_io_flock(int fd, int op)
{
    return drx_io_flock_for(fd, op, drx_io_lock_wait_ms());
}

int drx_io_flock_for(int fd, int op, unsigned ms)
{
    struct lock_wait w = {{0, 0}, 0, ms};

    while (flock(fd, op | LOCK_NB) < 0) {
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return -errno;
        if (!lock_wait_more(&w))
            return -EWOULDBLOCK;
    }
    return 0;
}

void drx_io_unlock(int fd, uint64_t off, uint64_t len)
{
    if (len)
        range_lock(fd, F_UNLCK, off, len, false);
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

int drx_io_fsync_dirfd(int dirfd)
{
    return drx_io_fsync_dir_at(dirfd, ".");
}

int drx_io_fsync_dir(const char *dir)
{
    return drx_io_fsync_dir_at(AT_FDCWD, dir);
}

int drx_io_fsync_dir_at(int dirfd, const char *dir)
{
    int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
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

void drx_reserve_init(struct drx_reserve *r, int fd)
{
    *r = (struct drx_reserve){.fd = fd};
}

/* Records the hole [off, off+len), then allocates it.  It is recorded first
 * because a failed fallocate may have allocated part of it: undo punches
 * the whole range, which held no data before. */
static int reserve_hole(struct drx_reserve *r, uint64_t off, uint64_t len)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        struct drx_reserve_hole *h = realloc(r->holes, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        r->holes = h;
        r->cap = cap;
    }
    r->holes[r->n++] = (struct drx_reserve_hole){off, len};
    int rc = drx_io_fallocate(r->fd, FALLOC_FL_KEEP_SIZE, off, len);
    if (rc == -EOPNOTSUPP || rc == -ENOSYS) {
        r->n--;
        return 0;
    }
    return rc;
}

/* Calls fn(arg, off, len) for each hole of [off, off+len) (SEEK_DATA and
 * SEEK_HOLE; past the last data is one hole), stopping at its first error.
 * 0, fn's error, or -errno (-EINVAL where the file system cannot tell). */
static int each_hole(int fd, uint64_t off, uint64_t len, int (*fn)(void *, uint64_t, uint64_t),
                     void *arg)
{
    uint64_t pos = off, end = off + len;

    while (pos < end) {
        off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
        if (d < 0 && errno != ENXIO)
            return -errno;
        uint64_t data = d < 0 || (uint64_t)d > end ? end : (uint64_t)d;
        if (data > pos) {
            int rc = fn(arg, pos, data - pos);
            if (rc)
                return rc;
        }
        if (data >= end)
            break;
        off_t h = lseek(fd, (off_t)data, SEEK_HOLE);
        if (h < 0)
            return -errno;
        pos = (uint64_t)h;
    }
    return 0;
}

static int reserve_visit(void *r, uint64_t off, uint64_t len)
{
    return reserve_hole(r, off, len);
}

int drx_reserve_add(struct drx_reserve *r, uint64_t off, uint64_t len)
{
    int rc = each_hole(r->fd, off, len, reserve_visit, r);
    return rc == -EINVAL ? 0 : rc; /* holes unknown here: reserve nothing */
}

/* Punches a hole back.  Called only on what still reads as a hole: a block
 * reserved and not written is one to SEEK_DATA (ext4, xfs, tmpfs), one that
 * someone wrote meanwhile (another process, before or after a sync) is data
 * and is kept.  Where reserved blocks count as data, the space stays. */
static int unreserve_visit(void *fd, uint64_t off, uint64_t len)
{
    if (fallocate(*(int *)fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
        return -errno;
    return 0;
}

int drx_reserve_undo_range(struct drx_reserve *r, uint64_t off, uint64_t len)
{
    return each_hole(r->fd, off, len, unreserve_visit, &r->fd);
}

int drx_reserve_undo_locked(struct drx_reserve *r)
{
    int rc = 0;

    for (size_t i = 0; i < r->n; i++) {
        uint64_t off = r->holes[i].off, len = r->holes[i].len;
        int e = drx_io_lock(r->fd, off, len, 1);
        if (e == 0) {
            e = drx_reserve_undo_range(r, off, len);
            drx_io_unlock(r->fd, off, len);
        }
        if (e && !rc)
            rc = e;
    }
    r->n = 0;
    return rc;
}

int drx_reserve_undo(struct drx_reserve *r)
{
    int rc = 0;

    for (size_t i = 0; i < r->n; i++) {
        int e = each_hole(r->fd, r->holes[i].off, r->holes[i].len, unreserve_visit, &r->fd);
        if (e && !rc)
            rc = e;
    }
    r->n = 0;
    return rc;
}

void drx_reserve_fini(struct drx_reserve *r)
{
    free(r->holes);
    *r = (struct drx_reserve){.fd = -1};
}

bool drx_fd_open_on(dev_t dev, ino_t ino)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    struct stat st;
    bool found = false;

    if (!d)
        return true;
    while (!found && (e = readdir(d)))
        found = e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
                S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino;
    closedir(d);
    return found;
}

/* Advances *iov / *n past done bytes. */
static void iov_advance(struct iovec **iov, int *n, size_t done)
{
    for (; *n > 0 && done >= (*iov)->iov_len; (*n)--, (*iov)++)
        done -= (*iov)->iov_len;
    if (*n > 0) {
        (*iov)->iov_base = (char *)(*iov)->iov_base + done;
        (*iov)->iov_len -= done;
    }
}

int drx_io_preadv_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t got = preadv(fd, iov, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -errno : -EIO;
        off += (uint64_t)got;
        iov_advance(&iov, &n, (size_t)got);
    }
    return 0;
}

int drx_io_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        struct drx_io_charge c;
        drx_io_charge_begin(&c);
        ssize_t w = pwritev(fd, iov, n, (off_t)off);
        drx_io_charge_end(&c);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        off += (uint64_t)w;
        iov_advance(&iov, &n, (size_t)w);
    }
    return 0;
}
