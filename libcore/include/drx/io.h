/* Whole-buffer I/O and directory syncs shared by libcore and the front ends:
 * the loops that retry on EINTR and short transfers, written once. */
#ifndef DRX_IO_H
#define DRX_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Whose blocks: a root daemon serving another user (drxfs with
 * allow_other) registers fn, which says whether the calling thread serves
 * a user now and who (uid, gid); then each call of libcore's that
 * allocates blocks (the write calls below, drx_reserve's fallocate,
 * copies) runs with that user's fsuid and fsgid and without
 * CAP_SYS_RESOURCE, so that ext4's root reserve and the user's quota
 * limits stop it as they stop the user's own writes (charge.c).  Ignored
 * unless the process is root. */
void drx_io_set_charge_fn(bool (*fn)(uid_t *uid, gid_t *gid));

/* One pwrite(2) and one fallocate(2), charged as above (the front ends'
 * own allocating calls): bytes written, 0, or -errno. */
ssize_t drx_io_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int drx_io_fallocate(int fd, int mode, uint64_t off, uint64_t len);

/* Reads exactly len bytes at off.  0, -EIO if the file ends first, or
 * -errno. */
int drx_io_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* Writes exactly len bytes at off.  0 or -errno (-ENOSPC on a full disk). */
int drx_io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* The same for the n pieces of iov, read or written whole from off on;
 * iov is consumed (its entries are advanced past what moved). */
int drx_io_preadv_all(int fd, struct iovec *iov, int n, uint64_t off);
int drx_io_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off);

/* Read-ahead: asks the kernel to read ranges[0..n-1] of fd into the page
 * cache (POSIX_FADV_WILLNEED), in order, on a pool of libcore threads
 * (started at the first call, 4 of them), and returns at once.  The
 * kernel queues a hint's disk reads and returns, but queuing itself waits
 * while the disk's queue is full: done by the reader, the hint for the
 * next chunks would hold up the read of the current ones; here several
 * run at a time beside it.  Only the page cache receives bytes: nothing is
 * held in the process, a write through any path is never shadowed, and
 * memory pressure evicts the pages as any.  At most 256 ranges wait in the
 * pool, and the pool holds at most 16 files' duplicated descriptors (past
 * either, a range is hinted in the caller's thread).  fd is duplicated:
 * the caller may close it at once.  A zero-length range is no hint.  Thread-safe; never fails
 * (a hint is only a hint).  The copy engine (drx_view_read: drx get, the
 * daemon) and drx-load use it. */
struct drx_io_range {
    uint64_t off, len;
};
void drx_io_readahead(int fd, const struct drx_io_range *ranges, int n);
/* The same for ranges wanted in the order given, when they are more than
 * the disk needs in flight to go at its speed: the pool keeps at most 4
 * MiB of such ranges hinted that it has not seen read (then a thread
 * waits for the oldest one's last page before it hints the next), so that
 * the disk reads them about in that order.  Given all at once, a disk
 * reads them in its own (address) order, and a reader needing them in
 * order waits for nearly all: the first planes of a cold row slab lie in
 * every chunk it meets (the copy engine's first read hands its spans over
 * in pieces, round by round, this way).  Unordered ranges are not held
 * back: past a span, the kernel's own read-ahead on a miss is what a
 * streaming read wants. */
void drx_io_readahead_ordered(int fd, const struct drx_io_range *ranges, int n);

/* Whether every page of [off, off+len) of fd is in the page cache now
 * (cachestat(2)); false when one is not, or the kernel cannot tell
 * (before Linux 6.5).  A hint for a choice, stale at once. */
bool drx_io_cached(int fd, uint64_t off, uint64_t len);
/* False once drx_io_cached() found that the kernel cannot tell. */
bool drx_io_cache_visible(void);

/* Byte-range write locks on [off, off+len) of fd, honoured by every
 * process that takes them (open file description locks: the daemon, drx
 * put and drx-load each lock the span of a chunk they read-modify-write,
 * so none writes back another's old bytes).  Threads sharing one
 * descriptor share its locks: they need a lock of their own beside it.
 * wait=false fails with -EAGAIN instead of blocking; wait=true waits at
 * most drx_io_lock_wait_ms(), then -EAGAIN too.  0 or -errno. */
int drx_io_lock(int fd, uint64_t off, uint64_t len, int wait);
void drx_io_unlock(int fd, uint64_t off, uint64_t len);

/* flock(fd, op) (LOCK_SH or LOCK_EX) waiting at most drx_io_lock_wait_ms()
 * for another holder: 0, -EWOULDBLOCK after the wait, or -errno. */
int drx_io_flock(int fd, int op);
/* The same with a bound of its own (0: forever). */
int drx_io_flock_for(int fd, int op, unsigned ms);

/* Every lock libcore waits for is on a file that anyone who may read it
 * can lock too (flock and read locks need only a read descriptor), and
 * hold as long as they like: so no wait is endless.  A legitimate holder
 * keeps a lock for a write of a chunk, the recording of a size, or an
 * extension (milliseconds), or a program's pending growths until it
 * commits (DRX-MP, drx-load: longer).  The bound, per process, in
 * milliseconds: the environment's DRX_LOCK_WAIT_MS when set, else
 * DRX_IO_LOCK_WAIT_MS (drxfs sets its own then); 0 waits forever. */
#define DRX_IO_LOCK_WAIT_MS 30000u
void drx_io_set_lock_wait_ms(unsigned ms);
unsigned drx_io_lock_wait_ms(void);

/* write(2) until all of buf is out.  0 or -errno. */
int drx_io_write_all(int fd, const void *buf, size_t len);

/* read(2) until len bytes or end of input.  The count, or -errno. */
ssize_t drx_io_read_full(int fd, void *buf, size_t len);

/* fsync of a directory, and of the directory that holds path (so that a
 * rename or create in it is durable).  0 or -errno. */
int drx_io_fsync_dir(const char *dir);
/* The same for directory dir relative to dirfd, and for dirfd itself. */
int drx_io_fsync_dir_at(int dirfd, const char *dir);
int drx_io_fsync_dirfd(int dirfd);
int drx_io_fsync_parent(const char *path);

/* Disk space reserved ahead of a bulk write, so that a full disk fails the
 * write before its first byte rather than half way (drx put, drx-load
 * import).  drx_reserve_add() gives blocks (fallocate, KEEP_SIZE) to the
 * holes of [off, off+len) and remembers them; data already on disk costs
 * nothing and is never touched.  When the write is given up,
 * drx_reserve_undo() punches back what of them still reads as a hole, so a
 * failed write leaves neither changed bytes nor used space, and bytes
 * another process wrote there meanwhile stay (on ext4 so does a reserved
 * block someone read meanwhile: in the page cache, SEEK_DATA calls it data;
 * its space stays, its bytes are zeros).  Where the file system cannot
 * reserve (EOPNOTSUPP), add() succeeds without reserving. */
struct drx_reserve_hole {
    uint64_t off, len;
};
struct drx_reserve {
    int fd;
    size_t n, cap;
    struct drx_reserve_hole *holes;
};
void drx_reserve_init(struct drx_reserve *r, int fd);
int drx_reserve_add(struct drx_reserve *r, uint64_t off, uint64_t len); /* 0 or -errno */
int drx_reserve_undo(struct drx_reserve *r);  /* 0 or the first -errno (space kept) */
/* What of [off, off+len) still reads as a hole punched back (part of
 * drx_reserve_undo, for a caller that holds the range's lock). */
int drx_reserve_undo_range(struct drx_reserve *r, uint64_t off, uint64_t len);
/* drx_reserve_undo with each reserved range under a byte-range lock of
 * r->fd (drx_io_lock, waiting): a writer that takes the same locks (every
 * libcore writer of a .xta, by chunk span) is never between the check of a
 * hole and its punch.  A range whose lock cannot be had keeps its space. */
int drx_reserve_undo_locked(struct drx_reserve *r);
void drx_reserve_fini(struct drx_reserve *r); /* keeps the space; frees the record */

/* True when this process holds a descriptor open on regular file dev/ino
 * (the daemon: another open of a file removed while open); true also when
 * it cannot tell. */
bool drx_fd_open_on(dev_t dev, ino_t ino);

#endif
