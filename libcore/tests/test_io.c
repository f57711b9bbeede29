/* Whole-buffer I/O, byte-range locks between descriptors, and space
 * reservation. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drx/io.h"
#include "tap.h"

static char dir[] = "/tmp/drx-test-io-XXXXXX";

#define MIB (1 << 20)

/* Pages of [off, off+len) of the mapping that are in the page cache. */
static size_t resident(const void *map, size_t off, size_t len)
{
    unsigned char vec[MIB / 4096];
    size_t n = 0, pages = len / 4096;
    if (mincore((char *)map + off, len, vec) != 0)
        return 0;
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    return n;
}

/* drx_io_readahead: the ranges asked for come into the page cache (the
 * pool runs them after the call returns: waited for with a deadline) and
 * nothing between them, even with the caller's descriptor closed at once;
 * a zero-length range between them asks for nothing (posix_fadvise would
 * read to the end of the file). */
static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A lock anyone who may read the file can take (a read-only descriptor's
 * flock, or read lock) is waited for up to the bound only; one let go
 * within it is taken. */
static void test_bounded_locks(const char *path)
{
    int w = open(path, O_RDWR), r = open(path, O_RDONLY);
    struct flock rl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 4096};
    struct timespec t0;
    unsigned was = drx_io_lock_wait_ms();

    tap_ok(was == (getenv("DRX_LOCK_WAIT_MS") ? was : DRX_IO_LOCK_WAIT_MS),
           "the default bound is DRX_IO_LOCK_WAIT_MS");
    drx_io_set_lock_wait_ms(150);
    tap_ok(flock(r, LOCK_SH) == 0, "a read-only descriptor takes flock(LOCK_SH)");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = drx_io_flock(w, LOCK_EX);
    double ms = ms_since(&t0);
    tap_ok(rc == -EWOULDBLOCK && ms >= 140 && ms < 5000,
           "flock(LOCK_EX) past it: -EWOULDBLOCK after the bound (%.0f ms)", ms);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = drx_io_flock_for(w, LOCK_EX, 30);
    ms = ms_since(&t0);
    tap_ok(rc == -EWOULDBLOCK && ms >= 25 && ms < 5000, "... and after a bound of its own (%.0f ms)",
           ms);
    flock(r, LOCK_UN);
    tap_ok(drx_io_flock(w, LOCK_EX) == 0, "taken once let go");
    flock(w, LOCK_UN);

    tap_ok(fcntl(r, F_OFD_SETLK, &rl) == 0, "a read-only descriptor takes a read lock");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = drx_io_lock(w, 100, 50, 1);
    ms = ms_since(&t0);
    tap_ok(rc == -EAGAIN && ms >= 140 && ms < 5000,
           "a waiting write lock over it: -EAGAIN after the bound (%.0f ms)", ms);
    rl.l_type = F_UNLCK;
    fcntl(r, F_OFD_SETLK, &rl);
    tap_ok(drx_io_lock(w, 100, 50, 1) == 0, "taken once let go");
    drx_io_unlock(w, 100, 50);
    drx_io_set_lock_wait_ms(was);
    close(r);
    close(w);
}

static void test_readahead(const char *path)
{
    static char block[MIB];
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 8; i++)
        if (write(fd, block, MIB) != MIB)
            tap_ok(0, "write a file of 8 MiB");
    fsync(fd);
    posix_fadvise(fd, 0, 8 * MIB, POSIX_FADV_DONTNEED);
    void *map = mmap(NULL, 8 * MIB, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED || resident(map, 0, MIB) + resident(map, 4 * MIB, MIB) > 0) {
        tap_ok(1, "# SKIP drx_io_readahead: the file's pages cannot be dropped here");
        close(fd);
        return;
    }
    struct drx_io_range r[3] = {{0, MIB}, {2 * MIB, 0}, {4 * MIB, MIB}};
    drx_io_readahead(fd, r, 3);
    close(fd);
    /* the descriptor number reused at once must not matter */
    int other = open("/dev/null", O_RDONLY);
    struct timespec t0, t;
    size_t got = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        got = resident(map, 0, MIB) + resident(map, 4 * MIB, MIB);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (got < 2 * MIB / 4096 && t.tv_sec - t0.tv_sec < 10);
    tap_ok(got == 2 * MIB / 4096, "drx_io_readahead brings the ranges asked into the page cache");
    tap_ok(resident(map, 2 * MIB, MIB) + resident(map, 6 * MIB, MIB) + resident(map, 7 * MIB, MIB) == 0,
           "... and not the bytes between and after them (a zero-length range is no hint)");
    close(other);
    munmap(map, 8 * MIB);
}

int main(void)
{
    char path[256], buf[8192], back[8192];
    int fd, fd2, p[2];
    struct stat st;

    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/f", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    fd2 = open(path, O_RDWR);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i * 7);
    tap_ok(drx_io_pwrite_all(fd, buf, sizeof buf, 4096) == 0, "pwrite_all at an offset");
    tap_ok(drx_io_pread_all(fd, back, sizeof buf, 4096) == 0 && !memcmp(buf, back, sizeof buf),
           "pread_all reads it back");
    tap_ok(drx_io_pread_all(fd, back, 100, 4096 + sizeof buf - 50) == -EIO,
           "pread_all past the end is -EIO");
    struct iovec wv[3] = {{buf, 10}, {buf + 10, 3000}, {buf + 3010, 90}};
    struct iovec rv[2] = {{back, 1000}, {back + 1000, 2100}};
    tap_ok(drx_io_pwritev_all(fd, wv, 3, 20000) == 0 && drx_io_preadv_all(fd, rv, 2, 20000) == 0 &&
               !memcmp(buf, back, 3100),
           "pwritev_all and preadv_all of several pieces");
    struct iovec past = {back, 200};
    tap_ok(drx_io_preadv_all(fd, &past, 1, 20000 + 3000) == -EIO, "preadv_all past the end is -EIO");
    tap_ok(pipe(p) == 0 && drx_io_write_all(p[1], buf, 1000) == 0 && close(p[1]) == 0 &&
               drx_io_read_full(p[0], back, sizeof back) == 1000 && close(p[0]) == 0,
           "write_all and read_full through a pipe, to its end");

    /* open file description locks: one descriptor's lock stops another's,
     * never its own */
    tap_ok(drx_io_lock(fd, 100, 50, 1) == 0, "a lock on [100, 150)");
    tap_ok(drx_io_lock(fd, 120, 10, 0) == 0, "the same descriptor locks inside it again");
    tap_ok(drx_io_lock(fd2, 140, 20, 0) == -EAGAIN, "another descriptor cannot lock an overlap");
    tap_ok(drx_io_lock(fd2, 150, 20, 0) == 0, "... but can lock next to it");
    drx_io_unlock(fd2, 150, 20);
    drx_io_unlock(fd, 100, 50);
    tap_ok(drx_io_lock(fd2, 100, 50, 0) == 0, "after the unlock, the other descriptor locks it");
    drx_io_unlock(fd2, 100, 50);
    tap_ok(drx_io_lock(fd, 0, 0, 0) == 0 && drx_io_lock(fd2, 0, 0, 0) == 0,
           "a zero-length lock is a no-op (not 'to the end of the file')");

    /* reservation: blocks for the holes, the size unchanged; undo gives
     * back what is still a hole */
    {
        char sparse[256];
        struct drx_reserve r;
        blkcnt_t before;
        int s;
        snprintf(sparse, sizeof sparse, "%s/sparse", dir);
        s = open(sparse, O_RDWR | O_CREAT, 0644);
        if (ftruncate(s, 8 << 20) || fstat(s, &st))
            return 1;
        before = st.st_blocks;
        drx_reserve_init(&r, s);
        int rc = drx_reserve_add(&r, 1 << 20, 4 << 20);
        fstat(s, &st);
        if (rc == 0 && r.n == 0) {
            printf("ok %d - # SKIP this file system cannot reserve\n", ++tap_n);
        } else {
            tap_ok(rc == 0 && st.st_blocks >= before + (4 << 20) / 512 && st.st_size == 8 << 20,
                   "reserve gives the holes blocks and keeps the size");
            tap_ok(drx_reserve_undo(&r) == 0 && fstat(s, &st) == 0 && st.st_blocks == before,
                   "undo punches them back");
            /* locked: a range another descriptor holds locked keeps its
             * space, the other is given back */
            int other = open(sparse, O_RDWR | O_CLOEXEC);
            unsigned wait_was = drx_io_lock_wait_ms();
            drx_io_set_lock_wait_ms(50);
            rc = drx_reserve_add(&r, 1 << 20, 1 << 20);
            rc |= drx_reserve_add(&r, 4 << 20, 1 << 20);
            rc |= drx_io_lock(other, 4 << 20, 1 << 20, 1);
            int urc = drx_reserve_undo_locked(&r);
            fstat(s, &st);
            tap_ok(rc == 0 && urc == -EAGAIN && st.st_blocks >= before + (1 << 20) / 512 &&
                       st.st_blocks < before + (2 << 20) / 512,
                   "undo under the locks keeps the range another holds locked (%d, %lld blocks "
                   "over)",
                   urc, (long long)(st.st_blocks - before));
            drx_io_unlock(other, 4 << 20, 1 << 20);
            close(other);
            drx_io_set_lock_wait_ms(wait_was);
        }
        drx_reserve_fini(&r);
        close(s);
    }
    tap_ok(drx_io_fsync_dir(dir) == 0 && drx_io_fsync_parent(path) == 0, "directory syncs");
    close(fd);
    close(fd2);
    snprintf(path, sizeof path, "%s/ra", dir);
    test_readahead(path);
    test_bounded_locks(path);
    {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return tap_done();
}
