/* Extendible array files: NAME.xmd (libconfig metadata) + NAME.xta (chunks).
 *
 * NAME.xta holds chunk q at byte q * chunk_bytes, elements row-major inside
 * a chunk, fill value beyond the bounds.  NAME.xmd is replaced atomically
 * (temporary file, fsync, rename, fsync of the directory) and always written
 * after the chunk data it describes, so a crash leaves at worst an .xta that
 * is longer than its metadata (harmless; `drx fsck` trims it).
 *
 * A handle is safe to use from several threads for chunk I/O; extend and
 * reload need the caller's exclusion against concurrent chunk I/O on the
 * same handle (the daemon takes a write lock).
 */
#ifndef DRX_ARRAY_H
#define DRX_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "drx/attr.h"
#include "drx/err.h"
#include "drx/io.h"
#include "drx/map.h"
#include "drx/types.h"

/* Largest chunk accepted (bytes): keeps "a few chunks" of memory sane. */
#define DRX_MAX_CHUNK_BYTES ((uint64_t)1 << 30)

/* Longest dimension name. */
#define DRX_MAX_DIM_NAME 64

/* One extension as the user asked for it (consecutive extensions of the same
 * dimension are merged): dimension dim went from `from` to `to` elements. */
struct drx_growth {
    int dim;
    uint64_t from, to;
};

struct drx_array_meta {
    enum drx_type type;
    int rank;
    uint64_t chunk[DRX_MAX_RANK];   /* chunk shape, elements */
    uint64_t bounds[DRX_MAX_RANK];  /* N[i], elements */
    uint64_t initial[DRX_MAX_RANK]; /* bounds at creation */
    char dim_name[DRX_MAX_RANK][DRX_MAX_DIM_NAME + 1]; /* "" when unnamed */
    unsigned char fill[DRX_MAX_ELEM];                  /* native bytes */
    size_t elem_size;
    uint64_t chunk_elems, chunk_bytes;
    struct drx_map map; /* chunk counts, nchunks, axial vectors */
    struct drx_growth *history;
    size_t nhistory;
    struct drx_attr *attrs; /* in the order they were first set */
    size_t nattrs;
};

/* What `drx create` asks for.  dim_name entries may be NULL; fill may be
 * NULL (zero). */
struct drx_array_spec {
    enum drx_type type;
    int rank;
    uint64_t shape[DRX_MAX_RANK];
    uint64_t chunk[DRX_MAX_RANK];
    const char *dim_name[DRX_MAX_RANK];
    const void *fill;
};

struct drx_array;

enum { DRX_RDONLY = 0, DRX_RDWR = 1 };
/* Or'ed into an open mode: a handle for the metadata alone (extension,
 * attributes, bounds and chunk counts).  Its growth records are checked as
 * always but build no axial vectors and no history, so opening it costs
 * the parse of the .xmd and nothing per record kept in memory: what `drx
 * extend` needs, whatever the history's length.  Its metadata has no F*
 * (map.vec empty, history empty): no view of it, and chunk I/O on it fails
 * with -EBADF. */
enum { DRX_METAONLY = 2 };

/* `path` is the array's name without suffix ("store/temp").  Creating fails
 * with -EEXIST if either file exists.  On success *out owns both files'
 * descriptors; close with drx_array_close(). */
int drx_array_create(const char *path, const struct drx_array_spec *spec,
                     struct drx_array **out, struct drx_err *err);
/* DRX_RDWR fails with -EMLINK when the .xta has other names
 * (drx_array_check_links). */
int drx_array_open(const char *path, int mode, struct drx_array **out, struct drx_err *err);
void drx_array_close(struct drx_array *a); /* NULL is a no-op */

/* Removes NAME.xmd then NAME.xta (metadata first, so a crash in between
 * leaves only an orphan .xta that fsck reports).  An .xta alone (that
 * crash's leftover) is removed: 1, so the caller can say so; -EBUSY when
 * a create or rename of it holds its lock; else 0 or -errno. */
int drx_array_remove(const char *path, struct drx_err *err);

/* Renames the array oldname in directory olddirfd to newname in newdirfd
 * (single path components without suffix; AT_FDCWD works), crash safe:
 * under the array's extend lock (the flock drx_array_extend takes) it links
 * NEW.xta to the chunks, makes that durable, renames OLD.xmd to NEW.xmd
 * (the switch: before it the array is OLD, after it NEW) and removes
 * OLD.xta, syncing the directories in between.  A crash in between leaves
 * the array whole under one name plus a second name of its .xta without an
 * .xmd, which `drx fsck --repair` removes; until then drx_array_open()
 * refuses to write it (-EMLINK).  Running it again finishes the rename.
 * Like rename(2) of a directory onto a non-empty one, an existing array
 * newname gives -ENOTEMPTY; a NEW.xta that is another file (an orphan)
 * gives -EEXIST; no array oldname gives -ENOENT; a file system without
 * hard links gives their error (EPERM, EOPNOTSUPP, EXDEV) and changes
 * nothing.  Returns 0 or -errno with a message in err. */
int drx_array_rename(int olddirfd, const char *oldname, int newdirfd, const char *newname,
                     struct drx_err *err);

/* 0 when the handle's .xta has no other name, else -EMLINK with a message
 * naming `drx fsck --repair`: two names of one chunk file with their own
 * metadata would diverge at the first extension (one would cut the
 * other's chunks), so writers refuse such an array.  A rename in progress
 * (it holds the extend lock while both names exist) is waited for.
 * drx_array_open(DRX_RDWR) and drx_array_extend() check this themselves;
 * writers that do their own I/O on the .xta (drx-load) call it. */
int drx_array_check_links(const struct drx_array *a, struct drx_err *err);

/* Gives the array at path its own .xta and .xmd when either has other
 * names (what a crash of an older drxfs during a rename left, or a hand
 * made hard link): the .xta is copied (holes stay holes) into a temporary
 * `.NAME.xta.XXXXXX` beside it, synced and renamed over its name; a shared
 * .xmd is rewritten the same way.  The other names keep the old files.
 * Runs under the extend lock, -EWOULDBLOCK when an extension holds it.
 * Returns 1 when something was copied, 0 when nothing was shared, or
 * -errno with a message in err.  For drx fsck --repair. */
int drx_array_unshare(const char *path, struct drx_err *err);

/* A growth record that an extension was appending to the .xmd of the
 * array at path (no suffix) when it was killed, left cut short at the
 * file's end: its length in bytes (0: none; readers ignore it and the next
 * extension cuts it off), or -errno with a message (the .xmd is bad).  For
 * drx fsck. */
long long drx_array_torn_record(const char *path, struct drx_err *err);

/* Cuts such a record off, under the extend lock: 1 when it did, 0 when
 * there was none, -EWOULDBLOCK when an extension holds the lock, or
 * -errno.  For drx fsck --repair. */
int drx_array_cut_torn_record(const char *path, struct drx_err *err);

/* Cuts the .xta of the array at path (no suffix) to what its metadata
 * commits, under the extend lock: drx_array_extend holds it while it
 * writes chunks past the committed count and until its growth record
 * names them, so those are not leftovers; the metadata is read again
 * under it.  1 when trimmed, 0 when nothing is to trim (any more),
 * -EWOULDBLOCK when an extension holds the lock, -EIO for an .xta with
 * other names (never cut), or -errno.  *committed and *len get the
 * committed bytes and the .xta's length found under the lock.  For drx
 * fsck --repair. */
int drx_array_trim_uncommitted(const char *path, uint64_t *committed, long long *len);

/* True when path (no suffix) has an .xmd file. */
bool drx_array_exists(const char *path);

/* The metadata as of the last open/extend/reload.  Owned by the handle. */
const struct drx_array_meta *drx_array_meta(const struct drx_array *a);
const char *drx_array_path(const struct drx_array *a);

/* Grows dimension dim by count (> 0) elements.  Writes fill into any new
 * chunks (or just grows the file when the fill is zero), then commits the
 * metadata.  Takes an exclusive lock on the .xta against other processes
 * (the extend lock), and refuses (-EMLINK) an .xta with other names. */
int drx_array_extend(struct drx_array *a, int dim, uint64_t count, struct drx_err *err);

/* Batched growth (libdrxmp's DRX_MP_SYNC_BATCH): grows the handle's
 * metadata in memory and, with file, the .xta (fill written, or just a
 * longer file when the fill is zero), but syncs and records nothing: the
 * growth is pending until drx_array_commit() records every pending growth
 * at once, after one fdatasync of the .xta, so that no record ever names
 * data that is not on disk.  With file, the handle takes the extend lock
 * at its first pending growth and holds it to the commit (other
 * extensions, attribute changes and fsck's trim wait or refuse meanwhile),
 * and the growth of other handles' (file false) follows in memory only.
 * A crash before the commit leaves an .xta longer than its metadata, which
 * the next extension or `drx fsck --repair` cuts: the array as of the last
 * commit.  drx_array_extend and attribute changes on a handle with pending
 * growths fail with -EBUSY.  On failure nothing of this growth stays (the
 * earlier pending ones do).  A DRX_METAONLY handle is refused (-EINVAL):
 * a commit may write the .xmd whole, history included. */
int drx_array_extend_pending(struct drx_array *a, int dim, uint64_t count, bool file,
                             struct drx_err *err);

/* drx_array_extend_pending to `to` elements along dim: grows by what dim
 * lacks of it, *by elements (0 when it has that many already), the
 * comparison made with file under the extend lock, after the metadata is
 * read again (an extension by another process meanwhile counts). */
int drx_array_grow_pending(struct drx_array *a, int dim, uint64_t to, bool file, uint64_t *by,
                           struct drx_err *err);

/* Commits the pending growths (a file handle: sync, records, sync of the
 * .xmd, then the extend lock goes; a follower reads the committed metadata
 * again, after the file handle committed).  0 when none were pending or
 * all are committed; on failure the .xta is cut back and the handle holds
 * the metadata committed before them. */
int drx_array_commit(struct drx_array *a, struct drx_err *err);

/* drx_array_commit without the fdatasync of the .xta before the records
 * (libdrxmp's DRX_MP_SYNC_NONE, HDF5's guarantee at close): the records
 * are appended and synced, the data stays wherever the page cache has it.
 * A process crash loses nothing (the page cache survives it); after a
 * power loss the records may name chunks whose bytes never reached the
 * disk (they read as zeros, or as what was there before) or lie past the
 * end of an .xta whose new length was not written back (drx fsck:
 * "shorter than its metadata's ... (chunks lost)", not repaired). */
int drx_array_commit_unsynced(struct drx_array *a, struct drx_err *err);

/* Forgets the pending growths without recording them: the .xta cut back
 * (file handle; the lock goes), the committed metadata read again. */
int drx_array_pending_drop(struct drx_array *a, struct drx_err *err);

/* Attributes.  Setting and removing rewrite the .xmd atomically under the
 * extend lock (so neither races an extension), on a DRX_RDWR handle.  set
 * replaces an attribute of the same name (keeping its place) or adds one
 * at the end; the attribute is copied.  rm: -ENOENT when there is none.
 * get: the attribute in m, or NULL. */
int drx_array_attr_set(struct drx_array *a, const struct drx_attr *attr, struct drx_err *err);
int drx_array_attr_rm(struct drx_array *a, const char *name, struct drx_err *err);
/* A check of the .xmd an attribute change is made from (open as fd, st
 * its stat), called under the extend lock after the reload, right before
 * the change: 0 lets it go ahead, -errno refuses it (nothing changed). */
typedef int drx_array_may_fn(int fd, const struct stat *st, void *arg);
/* drx_array_attr_set and drx_array_attr_rm with may(arg) checked on that
 * .xmd: a daemon acting for a user checks him there.  Checked before the
 * call, it was the .xmd the handle held then, and the reload under the
 * lock takes whatever file the names lead to by then: a user exchanging
 * his .xmd's name with root's as he set an attribute of his array set it
 * in root's (same type and chunks). */
int drx_array_attr_set_may(struct drx_array *a, const struct drx_attr *attr, drx_array_may_fn *may,
                           void *arg, struct drx_err *err);
int drx_array_attr_rm_may(struct drx_array *a, const char *name, drx_array_may_fn *may, void *arg,
                          struct drx_err *err);
const struct drx_attr *drx_array_attr_get(const struct drx_array_meta *m, const char *name);

/* Re-reads the .xmd if it changed on disk since it was read (another process
 * extended the array).  Returns 1 when it changed, 0 when not, or -errno. */
int drx_array_reload(struct drx_array *a, struct drx_err *err);

/* Validated parse of an .xmd file into meta (for fsck and tests).  Frees
 * with drx_array_meta_fini(). */
int drx_array_meta_load(const char *xmd_path, struct drx_array_meta *meta, struct drx_err *err);
void drx_array_meta_fini(struct drx_array_meta *meta);

/* Chunk I/O.  Bytes [off, off+len) of chunk q (q < nchunks, off + len <=
 * chunk_bytes).  drx_array_chunk_get returns a pointer to the bytes, either
 * in the handle's chunk cache or in scratch (len bytes); release it
 * with drx_array_chunk_put.  The cache is off unless drx_array_set_cache()
 * gave it bytes. */
struct drx_chunk_ref {
    const unsigned char *data; /* points at byte off of the chunk */
    void *entry;               /* cache entry pinned, or NULL */
};
int drx_array_chunk_get(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len,
                        void *scratch, struct drx_chunk_ref *ref);
void drx_array_chunk_put(struct drx_array *a, struct drx_chunk_ref *ref);
int drx_array_chunk_write(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len,
                          const void *buf);

/* drx_reserve_add() of chunks [q, q + n) to r, which the caller set up with
 * drx_reserve_init(r, drx_array_xta_fd(a)): bulk writers (drx put) reserve
 * the chunks they will write before their first byte, and undo it when they
 * give up.  -EBADF on a read-only handle, -EINVAL past the last chunk. */
int drx_array_reserve(struct drx_array *a, uint64_t q, uint64_t n, struct drx_reserve *r);

/* drx_reserve_undo() of r (made on a's .xta) chunk span by chunk span,
 * each under its span lock (drx_array_span_lock): another writer of the
 * array, in this process or another, is never between its check of a
 * hole and its punch, so bytes it stores there stay.  A span whose lock
 * cannot be had keeps its space (the first error is returned). */
int drx_array_reserve_undo(struct drx_array *a, struct drx_reserve *r);

/* Gives the handle a chunk cache of at most `bytes` (0 turns it off).
 * Chunks are cached whole; writes go through to the file and the cache. */
int drx_array_set_cache(struct drx_array *a, size_t bytes);

/* True when the handle has a chunk cache. */
bool drx_array_has_cache(const struct drx_array *a);

/* True when drx_array_chunk_get of a len-byte span goes through the cache
 * whole (it then needs no scratch): the handle has a cache and the span is
 * at least half a chunk.  A shorter span is served from the cache only if
 * its chunk is there, else read alone into scratch (len bytes): a cold
 * read then reads only what it needs. */
bool drx_array_chunk_get_loads(const struct drx_array *a, uint64_t len);

/* File descriptors, for callers that do their own I/O (drx-load, fsync). */
int drx_array_xta_fd(const struct drx_array *a);
/* The .xmd the handle's metadata was read from, held open (-1: none). */
int drx_array_xmd_fd(const struct drx_array *a);

/* ".xta" or ".xmd" when fd is open on that file of a (the same inode),
 * else NULL: an output that would cut the array it is read from, or an
 * input that would be read while it is overwritten (as cp's "are the same
 * file").  NULL too when fd cannot be examined. */
const char *drx_array_own_file(const struct drx_array *a, int fd);

/* Byte offset of element idx[] in the .xta and its chunk index/address. */
void drx_array_locate(const struct drx_array_meta *m, const uint64_t *idx, uint64_t *chunk_idx,
                      uint64_t *q, uint64_t *byte_off);

/* Name checks shared by all front ends. */
bool drx_array_dim_name_valid(const char *name);
/* Index of a dimension given by number or name, or -1. */
int drx_array_dim_lookup(const struct drx_array_meta *m, const char *word);
/* The dimensions' names, ", " between them (unnamed ones left out), into
 * buf of len bytes (DRX_ARRAY_DIM_NAMES_LEN holds them all), for the
 * errors of a word that named none: its length, 0 when none is named. */
#define DRX_ARRAY_DIM_NAMES_LEN (DRX_MAX_RANK * (DRX_MAX_DIM_NAME + 2) + 1)
size_t drx_array_dim_names(const struct drx_array_meta *m, char *buf, size_t len);

/* JSON for `drx info --json` and the `info` file (see view.h for views). */
struct drx_view;
char *drx_array_info_json(const struct drx_array_meta *m, const struct drx_view *v);

#endif
