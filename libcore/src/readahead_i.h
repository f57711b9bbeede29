/* Read-ahead pool of libcore (private): a few threads that ask the kernel
 * to read file ranges into the page cache (POSIX_FADV_WILLNEED) while the
 * caller goes on serving the current read.
 *
 * The kernel queues the disk reads of a hint and returns, but queuing
 * itself waits when the disk's queue is full: done in the reading thread,
 * a hint for the view's next chunks holds up the read that needs the
 * current ones.  Here the hints run on DRX_RA_THREADS threads, several at
 * a time, so that the disk has the next chunks in flight while the current
 * one is copied.  Only the page cache receives bytes: nothing is held in
 * the process, a write through any path is never shadowed, and memory
 * pressure evicts read-ahead pages as any others.  Memory: at most
 * DRX_RA_QUEUE queued ranges.  When the queue is full, the hint runs in
 * the caller's thread (as before the pool).  Thread-safe.
 */
#ifndef DRX_READAHEAD_I_H
#define DRX_READAHEAD_I_H

#include <stdint.h>

#define DRX_RA_THREADS 4
#define DRX_RA_QUEUE 256

struct drx_ra_range {
    uint64_t off, len;
};

/* Queues WILLNEED hints of ranges[0..n-1] of fd, in order (the pool takes
 * them first come, first served).  fd is duplicated: the caller may close
 * it at once.  Never fails: a hint that cannot be queued runs here. */
void drx_readahead(int fd, const struct drx_ra_range *ranges, int n);

#endif
