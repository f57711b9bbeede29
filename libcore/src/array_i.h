/* libcore-private parts of array handles, for the view engine. */
#ifndef DRX_ARRAY_I_H
#define DRX_ARRAY_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "drx/array.h"

/* Stripes of the per-chunk write lock table (see drx_array_span_lock). */
#define DRX_ARRAY_CHUNK_LOCKS 64
/* Handles of a process watching their .xta at once (array.c, watch_start). */
#define DRX_ARRAY_WATCH_MAX 32

/* Largest .xmd read (a million growths fit; a bigger file is hostile). */
#define DRX_XMD_MAX_BYTES ((size_t)64 << 20)

/* The .xmd version written: 2 may be followed by growth records, lines
 * "#+ grow dim=D from=N to=N chunk_count=N" (README, "The .xmd file").
 * Version 1 (no records) is read too. */
#define DRX_XMD_VERSION 2
#define DRX_XMD_GROW "#+ grow "

/* How far an .xmd was read, so that a reader takes only the growth
 * records appended since. */
struct drx_xmd_pos {
    uint64_t end;    /* offset after the last whole line taken */
    unsigned line;   /* lines before end */
    uint64_t torn;   /* bytes after end: a record cut short (ignored) */
    int version;
    bool appendable; /* version 2, and end starts a line */
    bool counts;     /* records change bounds and counts only (DRX_METAONLY) */
    struct stat st;  /* of the file read in full */
};

/* Elements in an array at most. */
#define DRX_ARRAY_MAX_ELEMS ((uint64_t)1 << 59)
/* Bytes of an .xta at most: its chunks, edge chunks' padding included, so
 * that every byte count of the array (a chunk's address, a view's data
 * with its .npy or .nc header) fits in an off_t.  The element bound alone
 * did not: 2^35 chunks of 1 GiB made an .xta of 2^65 bytes, counted as 0,
 * and chunk 2^34 was stored over chunk 0; a c128 array near 2^59 elements
 * gave its data.npy a size past 2^63 (EIO at every stat). */
#define DRX_ARRAY_MAX_XTA_BYTES ((uint64_t)1 << 62)

/* The directory of an array's path, opened once: every file of the array
 * is then reached in that one directory, as /proc/self/fd/N/NAME.xmd, so
 * that a directory on the way swapped for a symlink between two steps (by
 * its owner, while root runs drx in it) cannot make one command read the
 * owner from one array's .xmd and write another's, or remove one file of
 * each.  Messages name the directory it is (drx_err_set resolves
 * "/proc/self/fd/N" of a directory to its path). */
struct drx_pin {
    int fd;        /* O_PATH descriptor of the directory, or -1: by path */
    char self[32]; /* "/proc/self/fd/N" */
};

/* Pins the directory of path (nothing to pin for a name without '/', whose
 * directory is the working directory, nor for one already below
 * /proc/self/fd/N, as drxfs passes: fd -1).  A directory that cannot be
 * opened is left to the path (fd -1), whose use then says what is wrong,
 * and so is every directory when /proc/self/fd does not lead to it (no
 * /proc).  0. */
int drx_pin_open(struct drx_pin *p, const char *path);
/* path's last name with suffix in the pinned directory (or path + suffix
 * when there is no pin), malloc'ed; NULL without memory. */
char *drx_pin_name(const struct drx_pin *p, const char *path, const char *suffix);
void drx_pin_close(struct drx_pin *p);

/* An open array.  array.c opens, closes and does chunk I/O; array_meta.c
 * reads and writes the .xmd; array_extend.c changes the metadata (growth,
 * attributes); array_names.c renames and unshares.  xmd_path and xta_path
 * are for messages; xmd_at and xta_at reach the files (struct drx_pin). */
struct drx_array {
    char *path, *xmd_path, *xta_path;
    struct drx_pin pin;
    char *xmd_at, *xta_at;
    int mode;       /* DRX_RDONLY or DRX_RDWR */
    bool meta_only; /* DRX_METAONLY: no axial vectors, no chunk I/O */
    int xta_fd;
    struct drx_array_meta meta;
    struct stat xmd_st; /* of the .xmd last read, to notice replacements */
    int xmd_fd;         /* that .xmd, open: read on from xmd_pos when it grows */
    struct drx_xmd_pos xmd_pos;
    struct drx_cache *cache;
    bool cache_serves; /* the cache exists and a chunk fits it comfortably */
    int watch_fd;      /* inotify on the .xta while there is a cache, or -1 */
    bool watch_told;   /* why there is no watch was logged */
    pthread_mutex_t watch_lock;
    pthread_mutex_t chunk_lock[DRX_ARRAY_CHUNK_LOCKS];
    /* Growths not committed yet (drx_array_extend_pending): their records,
     * to append at the commit; the chunk count committed before them; and
     * whether this handle holds the extend lock and grows the .xta. */
    char *pend_lines;
    size_t pend_len, pend_cap;
    uint64_t pend_from;
    bool pend_file;
};

/* ---- array.c ---- */

/* A handle with its paths and locks but no files open; NULL without
 * memory.  drx_array_close() releases it. */
struct drx_array *drx_array_alloc(const char *path, int mode);

/* Opens an array file: never through a symlink, only a regular file.  The
 * descriptor with *st, or -errno with a message. */
int drx_array_open_regular(const char *path, int flags, struct stat *st, struct drx_err *err);

/* Reads the .xmd again in full (held open after), e.g. after the handle
 * replaced it.  0, or -errno with the handle unchanged (-ESTALE: another
 * array now has the name). */
int drx_array_reread(struct drx_array *a, struct drx_err *err);
/* Whether a's .xmd name still leads to the .xmd it holds (xmd_fd) and
 * its .xta name to xta_fd: 0 with the held .xmd's stat in *st (may be
 * NULL), else -ESTALE with a message naming the .xmd ("not changed": for
 * the writers that call it before they replace the file).  A rewrite of
 * the .xmd takes its content and its owner and mode from the held file
 * and calls this right before the rename: a user exchanging his .xmd's
 * name with root's (in a directory he owns) as the daemon rewrote his
 * got his metadata written as root's file. */
int drx_array_held_xmd(const struct drx_array *a, struct stat *st, struct drx_err *err);
/* -ENOENT with why path names no array: the first component that is
 * missing ("no such array ('tmep' does not exist in DIR)"), or what the
 * path is instead ("not an array (a striped file)"); -EACCES ("PATH:
 * Permission denied") when a component is one the caller may not look
 * up.  The message names the path. */
int drx_array_no_such(const char *path, struct drx_err *err);

/* ---- array_meta.c: the .xmd's libconfig part; array_records.c: its
 * growth records and the reading of the whole ---- */

/* Derived sizes and the initial map, from type/rank/chunk/initial. */
int drx_xmd_derive(struct drx_array_meta *m, struct drx_err *err);
/* Applies one growth of dimension dim to `to` elements to bounds and map
 * (the history is the caller's). */
int drx_xmd_grow(struct drx_array_meta *m, int dim, uint64_t to, struct drx_err *err);
/* Appends a growth to the history, merged with the last one when it
 * continues it.  0 or -ENOMEM. */
int drx_xmd_history_add(struct drx_array_meta *m, int dim, uint64_t from, uint64_t to);
/* The libconfig part of an .xmd, text[0..len) (text[len] is written and
 * restored: libconfig reads up to a NUL), into m, validated by replay of
 * its history; *version the file's.  0 or -errno with "FILE:LINE: reason". */
int drx_xmd_parse_base(const char *file, char *text, size_t len, struct drx_array_meta *m,
                       int *version, struct drx_err *err);
/* Whether w[0..n) is a top-level key of the .xmd's libconfig part. */
bool drx_xmd_known_key(const char *w, size_t n);
/* The shape of the libconfig part text[0..len) (no NUL bytes: it passed
 * drx_cfgfile_check) within what a valid .xmd can hold (array_shape.c),
 * checked without libconfig: 0, or -EINVAL with "FILE:LINE: reason". */
int drx_xmd_shape(const char *file, const char *text, size_t len, struct drx_err *err);
/* Reads the .xmd at xmd_path in full, growth records included, into m and
 * pos; with fdp, the file stays open as *fdp.  With counts, the growth
 * records are checked as always but change only the bounds and the map's
 * chunk counts: m gets no axial vectors and no history (so the cost of
 * the records is their parse alone), and pos->counts makes
 * drx_xmd_catch_up do the same.  0 or -errno with "FILE:LINE: reason" in
 * err. */
int drx_xmd_read(const char *xmd_path, struct drx_array_meta *m, struct drx_xmd_pos *pos, int *fdp,
                 bool counts, struct drx_err *err);
/* Reads the .xmd open as fd in full, from its start, into m (the whole
 * metadata, as drx_array_meta_load): a handle's change of its metadata
 * starts from the file it holds, not from whatever its name leads to.  0
 * or -errno with "FILE:LINE: reason" (xmd_path, for messages). */
int drx_xmd_read_fd(int fd, const char *xmd_path, struct drx_array_meta *m, struct drx_err *err);
/* Takes the growth records appended to the .xmd open as fd (now size
 * bytes) since pos, applying each to m.  The count taken, -ESTALE when the
 * file was not appended to (read it again in full), or -errno. */
int drx_xmd_catch_up(int fd, const char *xmd_path, uint64_t size, struct drx_array_meta *m,
                     struct drx_xmd_pos *pos, struct drx_err *err);
/* The growth record line (newline included) into buf; its length or
 * -ENAMETOOLONG. */
int drx_xmd_grow_line(char *buf, size_t len, int dim, uint64_t from, uint64_t to, uint64_t nchunks);
/* The chunk count after growing dimension dim of m to `to` elements: 0,
 * -EFBIG past 2^59 elements, or -EOVERFLOW past DRX_ARRAY_MAX_XTA_BYTES
 * of chunks. */
int drx_xmd_grown_chunks(const struct drx_array_meta *m, int dim, uint64_t to, uint64_t *n);
/* Whether n chunks of m fit in an .xta (DRX_ARRAY_MAX_XTA_BYTES). */
bool drx_xmd_chunks_fit(const struct drx_array_meta *m, uint64_t n);
/* What a growth drx_xmd_grown_chunks refused with rc would pass. */
const char *drx_xmd_too_big(int rc);
/* Writes m's history as growth records, replayed on b (m as created,
 * its chunk counts only; they become m's).  0, or -EINVAL when the
 * history does not lead from b to m's bounds and chunk count. */
int drx_xmd_put_records(FILE *f, struct drx_array_meta *b, const struct drx_array_meta *m);
/* Replaces the .xmd atomically with m.  like: the file whose owner, group
 * and mode the new one takes (drx_replace_write), never looked up by name
 * here: a handle's rewrite passes the .xmd it holds (drx_array_held_xmd),
 * a first .xmd its .xta.  flags: DRX_REPLACE_NOREPLACE for a first one. */
int drx_xmd_write(const char *xmd_path, const struct stat *like, unsigned flags,
                  const struct drx_array_meta *m, struct drx_err *err);

/* ---- array_extend.c ---- */

/* Makes chunks [from, to) of the .xta open as fd hold the fill value,
 * cutting the file to `from` chunks first.  0 or -errno. */
int drx_array_fill_chunks(int fd, const struct drx_array_meta *m, uint64_t from, uint64_t to);

/* ---- array_names.c ---- */

/* 0 when the .xta has one name, else -EMLINK with a message; wait: look
 * again once a rename in progress is done. */
int drx_array_xta_links(const struct drx_array *a, bool wait, struct drx_err *err);

/* Most bytes of one chunk a view copy reads or writes in one piece: a
 * request never holds more than this beside the caller's buffer, whatever
 * the chunk size, and larger chunks are never cached whole. */
#define DRX_SPAN_MAX ((uint64_t)8 << 20)

/* Every write of chunk bytes happens under a lock on exactly the bytes it
 * writes, taken by every writer (threads of this process through a lock
 * table, other processes through an open file description lock on the
 * .xta): a write that merges with stored bytes (read, patch, write back)
 * then never writes back another writer's old bytes, and the bytes it
 * merges with are read from the file under the lock, never from a cache.
 * 0 or -errno (the lock could not be had; nothing is held then). */
int drx_array_span_lock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len);
void drx_array_span_unlock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len);

/* Bytes [off, off+len) of chunk q from the file itself, never the cache. */
int drx_array_chunk_read(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *buf);

/* Empties the chunk cache when another process (or this one) wrote the
 * .xta since the last call: every read calls it first. */
void drx_array_cache_sync(struct drx_array *a);

#endif
