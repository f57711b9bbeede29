/* Whole-buffer I/O and directory syncs shared by libcore and the front ends:
 * the loops that retry on EINTR and short transfers, written once. */
#ifndef DRX_IO_H
#define DRX_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly len bytes at off.  0, -EIO if the file ends first, or
 * -errno. */
int drx_io_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* Writes exactly len bytes at off.  0 or -errno (-ENOSPC on a full disk). */
int drx_io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* write(2) until all of buf is out.  0 or -errno. */
int drx_io_write_all(int fd, const void *buf, size_t len);

/* read(2) until len bytes or end of input.  The count, or -errno. */
ssize_t drx_io_read_full(int fd, void *buf, size_t len);

/* fsync of a directory, and of the directory that holds path (so that a
 * rename or create in it is durable).  0 or -errno. */
int drx_io_fsync_dir(const char *dir);
int drx_io_fsync_parent(const char *path);

#endif
