/* Private to libcore: reading a libconfig file (.xmd, .nafs, store.conf,
 * a --config file) so that the file cannot make the reader open another.
 *
 * libconfig 1.5 follows `@include "PATH"` wherever it parses, and has no
 * hook to stop it (config_set_include_func came in 1.7); config_read() on a
 * FILE* also blocks on a FIFO.  So every libconfig file drx reads comes
 * through drx_cfgfile_read(): one open that never blocks, a regular file
 * of bounded size read whole, @include lines refused, then
 * config_read_string().  Nothing else in libcore calls config_read*(). */
#ifndef DRX_CFGFILE_I_H
#define DRX_CFGFILE_I_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "drx/err.h"

/* drx_cfgfile_read() flags. */
enum {
    /* The user's own configuration file (--config, -o config=): a symlink
     * is followed (they named it), and messages call it a configuration
     * file.  Without it: a store file, whose last component is never
     * followed. */
    DRX_CFGFILE_USER = 1,
    /* The file may grow while it is read (an .xmd takes growth records
     * at its end): exactly the bytes the fstat saw are read, and what was
     * appended since is left for the next read. */
    DRX_CFGFILE_APPENDS = 2,
    /* A striped file's metafile, whose inode is the file's: read without
     * touching its atime (O_NOATIME where the reader may), and under an
     * OFD read lock on its first DRX_CFGFILE_LOCK_SPAN bytes, where an
     * update in place takes a write lock, so that no reader sees a size
     * half written. */
    DRX_CFGFILE_META = 4,
    /* drx_cfgfile_parse(): the text passed drx_cfgfile_check() already. */
    DRX_CFGFILE_CHECKED = 8,
};

/* The bytes a metafile's in-place update may change lie in this span. */
#define DRX_CFGFILE_LOCK_SPAN 512

/* Takes (type F_RDLCK or F_WRLCK) an OFD lock on the first
 * DRX_CFGFILE_LOCK_SPAN bytes of fd, waiting at most about 100 ms: a
 * holder that never lets go (another user's process) delays a reader, it
 * does not stop it.  True when taken; drop it with
 * drx_cfgfile_lock(fd, F_UNLCK). */
bool drx_cfgfile_lock(int fd, short type);

/* A file read and parsed: release with drx_cfgfile_fini(). */
struct drx_cfgfile {
    config_t cfg;
    char *text; /* the file's bytes, NUL-terminated */
    size_t len;
    struct stat st; /* of the file that was read */
};

/* Opens name (relative to dirfd, or a path with AT_FDCWD) with O_RDONLY,
 * O_NONBLOCK and O_CLOEXEC (and O_NOFOLLOW for store files), refuses
 * anything but a regular file of at most max bytes, reads it, refuses NUL
 * bytes and @include lines, and parses it.  shown names the file in
 * messages.  Returns 0 with *out filled, or -errno with one line in err:
 * the open's errno (-ENOENT, -EACCES, ...; -ELOOP for a store file that is
 * a symlink), -EIO when it is not a regular file, -EFBIG when it is larger
 * than max, -EINVAL with "FILE:LINE: reason" for its content.  *refused
 * (when non-NULL) is set when the failure is the file's fault (its kind,
 * size or content) rather than the system's. */
int drx_cfgfile_read(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                     struct drx_cfgfile *out, bool *refused, struct drx_err *err);

/* The open, checks and read of drx_cfgfile_read() without the parse:
 * out->text and out->len hold the bytes (out->cfg is not set up; free
 * text yourself or with drx_cfgfile_fini() after a parse).  With fdp, the
 * file stays open and *fdp is its descriptor (the caller closes it). */
int drx_cfgfile_slurp(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                      struct drx_cfgfile *out, int *fdp, bool *refused, struct drx_err *err);

/* The open and checks of drx_cfgfile_read() alone: the descriptor (with
 * *st) of a regular file of at most max bytes, or -errno as there.  For a
 * reader that takes the file in pieces (an .xmd's growth records); the
 * text it hands to libconfig goes through drx_cfgfile_parse(). */
int drx_cfgfile_open(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                     struct stat *st, bool *refused, struct drx_err *err);

/* The checks of drx_cfgfile_parse() alone (NUL bytes, @include lines,
 * strings libconfig would leak, nesting): 0, or -EINVAL as there. */
int drx_cfgfile_check(const char *text, size_t len, const char *shown, unsigned flags,
                      struct drx_err *err);

/* The checks and parse of drx_cfgfile_read() on text already in memory
 * (text[len] must be '\0'): NUL bytes and @include lines refused, then
 * config_read_string() into cfg (config_destroy() it after a success);
 * with DRX_CFGFILE_CHECKED in flags, the caller made the checks.
 * 0, or -EINVAL with "SHOWN[:LINE]: reason" in err (and *refused set). */
int drx_cfgfile_parse(const char *text, size_t len, const char *shown, unsigned flags,
                      config_t *cfg, bool *refused, struct drx_err *err);

/* Releases what drx_cfgfile_read() filled; safe on a zeroed struct. */
void drx_cfgfile_fini(struct drx_cfgfile *f);

#endif
