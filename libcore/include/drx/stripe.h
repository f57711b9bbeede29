/* Striped files (NAFS): a metafile NAME.nafs in the store plus `count`
 * subfiles, one in each of `count` stripe directories of the store.
 *
 * Mapping (SPEC section 5): byte b is in extent e = b / extent, stored in
 * subfile e mod count at offset (e / count) * extent + b mod extent.
 *
 * METAFILE FORMAT (libconfig text; for the README):
 *
 *   # drxfs striped file (NAFS metafile)
 *   version  = 1;
 *   extent   = 65536;          # bytes per extent, 1..2^30
 *   count    = 2;              # subfiles, 1..64 and <= stripe dirs of the store
 *   size     = 1000000L;       # logical size in bytes (int or int64); drx
 *                               # pads it to 19 digits with blanks after it
 *   subfiles = ( { dir = 0; name = "5f3a9c0d12e4b7a1.0"; },
 *                { dir = 1; name = "5f3a9c0d12e4b7a1.1"; } );
 *
 * Subfile i holds extents e with e mod count == i.  `dir` is an index into
 * the store's stripe dirs (store.conf order), `name` is relative to that
 * directory: 1..64 characters of [A-Za-z0-9._-], not starting with '.'.
 * Names are a random 64-bit id plus the subfile number, fixed at creation
 * and never derived from NAME, so a rename touches only the metafile.
 * Anything else (absolute path, '/', "..", wrong type, count or extent out
 * of range, size above 2^62, duplicate subfile) is refused with -EIO and
 * logged; nothing is opened then.  Subfiles are opened with
 * openat(stripe-dir fd, name, O_NOFOLLOW|O_NONBLOCK) and must be regular
 * files: a symlink (even to a file inside the stripe dir) is refused with
 * -EIO and logged, so nothing outside the stripe directories is ever opened.
 *
 * CRASH ORDER:
 * - create: subfile 0 first, then the metafile (temp file, rename with
 *   RENAME_NOREPLACE).  A crash leaves at worst orphan subfiles (fsck).
 *   The other subfiles are created when the first byte reaches them (a
 *   write, including the holes a sparse write leaves before it, a growing
 *   truncate or fallocate), always before a size that needs them is
 *   recorded: a subfile the recorded size does not need may be absent and
 *   reads as holes; one it needs that is absent is damage (EIO, fsck).
 *   Temporary files (drx_stripe_create_temp) get all of them at once.
 *   Nothing is fsynced at create (tar of many small files stays fast);
 *   drx_stripe_fsync() makes a file durable: subfiles, their directories,
 *   then the metafile and its directory.
 * - write: data goes to the subfiles first; the in-memory size advances only
 *   over bytes that were written.  The size is persisted (rewritten in the
 *   metafile in place, one pwrite of its padded size setting under an OFD
 *   lock that readers share; an old unpadded metafile is replaced by temp
 *   `.NAME.nafs.XXXXXX` and rename) at drx_stripe_flush(),
 *   drx_stripe_fsync(), drx_stripe_close(), at every truncate, and whenever
 *   the file has grown 64 MiB past the persisted size, so the metafile is not
 *   rewritten per write and a crashed writer loses at most the tail it had
 *   not yet persisted (the bytes stay in the subfiles beyond the recorded
 *   size, where fsck reports them).
 * - a persist that advances the recorded size first fdatasyncs every
 *   subfile written (or cut) since the last sync, and on the handle's first
 *   such sync fsyncs their stripe directories, so even after a power loss
 *   the recorded size never covers bytes that did not reach the disk.  That
 *   is one sync per 64 MiB of growth plus one at close of a written file
 *   (0.2-1.3 ms per small file on the reference machine, cp -r of 1000
 *   files of 4 KiB through drxfs 1.3-2x as long; a large cp measured the
 *   same within noise).  The metafile itself is
 *   not fsynced then: after a power loss the size may be an older one (the
 *   bytes beyond it stay in the subfiles).  drx_stripe_fsync() makes all of
 *   it durable: subfiles, their directories, then the metafile (fsync of
 *   temp file and directory).
 * - truncate down: metafile first, made durable (fsync of it and its
 *   directory), then the subfiles are cut; truncate up cuts stale bytes
 *   beyond the old size off the subfiles first, so holes read zeros, and
 *   syncs that cut before the larger size is recorded (as above).
 * - a full disk: the update in place needs no block
 *   (drx_stripe_meta_size_in_place in stripe_meta.c says why it is as safe
 *   as a replacement); a write cut short leaves no bytes past the size; and what cannot
 *   be recorded at all is cut back at once (flush, fsync and close then
 *   fail with ENOSPC).
 * - unlink: metafile first, then subfiles (a crash leaves orphans).
 * - rename: one atomic rename(2) of the metafile; the subfiles of a striped
 *   file it replaces are removed after.
 * - built by other writers (drx_stripe_create_temp/commit_temp): subfiles
 *   synced, then the temporary metafile with the size, then the rename.
 *
 * CONCURRENCY: one handle may be used from many threads (pread/pwrite; the
 * size is under a mutex; truncate excludes concurrent writes).  Within one
 * process, keep ONE read-write handle per file (the daemon shares a handle
 * among opens of the same file): each handle has its own idea of the size.
 * Across processes (or handles), persisting takes an flock on subfile 0 and
 * keeps the larger of the on-disk and in-memory size (unless this handle
 * truncated), so parallel writers extending one file end with the right
 * size.  A handle knows its file by layout and subfile names, not by the
 * metafile's inode (drx-load's commit and an old metafile's replacement
 * make a new one): when NAME.nafs is gone or
 * names other subfiles, a persist writes nothing and keeps its size pending.
 * Parallel writers that write the subfiles themselves (drx-load over
 * MPI-IO) build the file under a temporary name instead: one rank
 * drx_stripe_create_temp(), every rank writes and syncs its part, and when
 * all have succeeded one rank drx_stripe_commit_temp() records the size and
 * renames it over NAME.  A writer killed on the way leaves NAME as it was
 * (or absent) and a temporary file for fsck; never a size over bytes that
 * were not written.
 *
 * TIMES, MODE, LINKS, XATTRS: the metafile's inode is the striped file's.
 * A persist keeps it (in place), so its other names (drx_stripe_link), user
 * xattrs, atime and mode stay; it marks mtime and ctime, as a write does.
 * libcore reads metafiles with O_NOATIME where it may.  A front end that
 * sets times (utimens) on an open file should drx_stripe_flush() first, so
 * a later persist does not override them.
 */
#ifndef DRX_STRIPE_H
#define DRX_STRIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "drx/config.h"
#include "drx/err.h"
#include "drx/store.h"

#define DRX_STRIPE_SUFFIX ".nafs"
/* Extended attribute holding "count=N extent=BYTES" on store directories
 * (inherited by new files below) and shown on striped files. */
#define DRX_STRIPE_XATTR "user.drx.stripe"
/* Longest subfile name. */
#define DRX_STRIPE_NAME_MAX 64
/* Largest logical size accepted in a metafile (keeps offsets far from
 * overflow). */
#define DRX_STRIPE_MAX_SIZE ((uint64_t)1 << 62)
/* The size is persisted when it has grown this much since last persisted. */
#define DRX_STRIPE_PERSIST_BYTES ((uint64_t)64 << 20)
/* Length of a buffer large enough for drx_stripe_layout_format(). */
#define DRX_STRIPE_LAYOUT_LEN 64

struct drx_stripe_layout {
    unsigned count;  /* subfiles, 1..DRX_MAX_STRIPE_DIRS */
    uint64_t extent; /* bytes, 1..DRX_MAX_EXTENT */
};

struct drx_stripe_subfile {
    unsigned dir; /* index into the store's stripe dirs */
    char name[DRX_STRIPE_NAME_MAX + 1];
};

/* A parsed and validated metafile. */
struct drx_stripe_meta {
    struct drx_stripe_layout layout;
    uint64_t size;
    struct drx_stripe_subfile sub[DRX_MAX_STRIPE_DIRS]; /* [0..layout.count) */
    /* Loaded from a metafile (owned): its owner, who must own the
     * subfiles too (drx_stripe_subfile_check); a meta made in memory is
     * not owned. */
    bool owned;
    uid_t owner;
};

struct drx_stripe;

/* Open modes (the same values as DRX_RDONLY/DRX_RDWR of array.h). */
enum { DRX_STRIPE_RDONLY = 0, DRX_STRIPE_RDWR = 1 };

/* ---- layouts ---------------------------------------------------------- */

/* Parses "count=N extent=BYTES" (either order, separated by spaces or
 * commas; BYTES may carry a K/M/G suffix).  count must be 1..ndirs (pass
 * DRX_MAX_STRIPE_DIRS when unknown), extent 1..DRX_MAX_EXTENT.  Returns 0 or
 * -EINVAL with a reason in err. */
int drx_stripe_layout_parse(const char *text, size_t ndirs, struct drx_stripe_layout *out,
                            struct drx_err *err);

/* Writes "count=N extent=BYTES" (plain decimal) into buf.  Returns the
 * length, or -ERANGE when len is too small. */
int drx_stripe_layout_format(const struct drx_stripe_layout *l, char *buf, size_t len);

/* The layout a new file in store directory dir_path gets: the
 * user.drx.stripe xattr of dir_path or of its nearest ancestor up to the
 * store root that has one, else the store's default (cfg.stripe).  dir_path
 * is a store path (absolute or relative to the cwd).  An invalid xattr is
 * logged as a warning and skipped.  Returns 0 or -errno. */
int drx_stripe_layout_for_new(const struct drx_store *s, const char *dir_path,
                              struct drx_stripe_layout *out, struct drx_err *err);

/* Reads the user.drx.stripe xattr of one directory: returns 1 and fills out
 * when set and valid, 0 when not set, -EINVAL (err) when invalid, -errno. */
int drx_stripe_layout_dir_get(const struct drx_store *s, const char *dir_path,
                              struct drx_stripe_layout *out, struct drx_err *err);

/* Sets (l non-NULL, validated against the store's ndirs) or removes (l NULL;
 * no error when absent) the user.drx.stripe xattr of a store directory.
 * Returns 0 or -errno (-ENOTDIR for a non-directory, -ENOTSUP when the
 * filesystem has no user xattrs). */
int drx_stripe_layout_dir_set(const struct drx_store *s, const char *dir_path,
                              const struct drx_stripe_layout *l, struct drx_err *err);

/* ---- metafiles without a handle ---------------------------------------- */

/* Loads and validates metafile `metafile_path` (the .nafs file itself).
 * ndirs: the store's number of stripe dirs (subfile dirs must be below it).
 * Returns 0, -ENOENT, -EIO for anything malformed or hostile (reason in
 * err and logged), or -errno. */
int drx_stripe_meta_load(const char *metafile_path, size_t ndirs, struct drx_stripe_meta *m,
                         struct drx_err *err);

/* A writer that hands f to a later commit (drxfs's batched commit, up to
 * commit_interval after a close) with its size ahead of the metafile
 * says so to other processes, with a lock on the metafile that the
 * persist recording the size lets go: until then the recorded size is
 * short of its bytes, and they wait (drx_stripe_wait_recorded).  A file
 * being written, with no close since, says nothing: two writers of one
 * file in two processes coordinate themselves, as on any file system.
 * True when f's size is ahead of the metafile (to be recorded). */
bool drx_stripe_hold_pending(struct drx_stripe *f);

/* Waits (at most 10 s) until no other process holds a size of the striped
 * file NAME (path without suffix) it has not recorded yet
 * (drx_stripe_hold_pending): the recorded size is then short of its
 * bytes.  drx_stripe_open,
 * drx_stripe_reload and drx_stripe_truncate wait so themselves; drxfs
 * calls it before a getattr from the metafile, so that a stat or a
 * lookup (whose size O_APPEND writes at) sees what a close in another
 * process left.  0, or -EAGAIN when one still has after the wait. */
int drx_stripe_wait_recorded(const char *path);

/* True when another process holds a size of the striped file NAME not
 * recorded yet (as drx_stripe_wait_recorded, without waiting): what
 * `drx stripe get` reports. */
bool drx_stripe_size_pending(const char *path);

/* The same for the striped file NAME (path without suffix): layout, size and
 * subfiles as recorded in NAME.nafs (what `drx stripe get` shows and what
 * getattr of a file without an open handle uses). */
int drx_stripe_stat(const struct drx_store *s, const char *path, struct drx_stripe_meta *m,
                    struct drx_err *err);

/* True when the striped file NAME exists (NAME.nafs is present). */
bool drx_stripe_exists(const char *path);

/* True when name is acceptable as a subfile name (see the format above). */
bool drx_stripe_subfile_name_valid(const char *name);

/* ---- handles -------------------------------------------------------------- */

/* Creates the striped file NAME (path: store path without ".nafs") with
 * layout l (NULL: drx_stripe_layout_for_new() of its directory) and file
 * mode `mode` (metafile and subfiles, & 0666 for subfiles).  Subfiles are
 * placed in stripe dirs (start + i) mod ndirs, start chosen at random;
 * subfile 0 is created first, then the metafile appears by rename (the
 * others later, see CRASH ORDER).  -EEXIST when NAME.nafs
 * exists.  With out non-NULL, *out is a read-write handle; else the file is
 * only created.  Returns 0 or -errno with err. */
int drx_stripe_create(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                      mode_t mode, struct drx_stripe **out, struct drx_err *err);

/* Opens NAME (path without suffix).  mode: DRX_STRIPE_RDONLY or _RDWR.
 * A missing subfile (or missing stripe dir) is not an error here: its
 * extents give -EIO at read/write time (logged once); one not created yet
 * (the recorded size does not need it) reads as holes and is created by
 * the first write that reaches it.  A hostile metafile is
 * -EIO.  *out keeps a pointer to s: close handles before the store. */
int drx_stripe_open(struct drx_store *s, const char *path, int mode, struct drx_stripe **out,
                    struct drx_err *err);

/* The same, the metafile being the file open at metafd (any descriptor,
 * O_PATH too), not what NAME.nafs holds: a caller that opened and checked
 * that file gets a handle serving it, even when another was renamed over
 * the name meanwhile (the handle then serves its open files as one whose
 * name was replaced does).  metafd stays the caller's. */
int drx_stripe_open_meta_fd(struct drx_store *s, const char *path, int metafd, int mode,
                            struct drx_stripe **out, struct drx_err *err);

/* Whether a subfile that the handle's size needs is not open: missing
 * when the handle was opened (the file removed, or renamed over and its
 * subfiles removed, between the read of its metafile and the opens of
 * its subfiles; or a damaged store), so that its extents fail with EIO. */
bool drx_stripe_incomplete(struct drx_stripe *f);

/* Persists a changed size (as drx_stripe_flush), closes every descriptor and
 * frees.  Returns 0 or the flush error (the handle is freed anyway).  NULL is
 * a no-op returning 0. */
int drx_stripe_close(struct drx_stripe *f);

/* Reads up to len bytes at off.  Bytes beyond the end of a short subfile but
 * below the logical size read as zeros (holes).  Returns the count (short
 * only at end of file, or when a later extent's subfile is missing: the
 * bytes before it are returned), 0 at or past the end, -EIO when the first
 * extent touched lies in a missing subfile, or -errno. */
ssize_t drx_stripe_read(struct drx_stripe *f, void *buf, size_t len, uint64_t off);

/* Writes len bytes at off (any offset; a gap reads as zeros) and advances
 * the size to cover what was written.  Returns len, or a shorter count when
 * an error (e.g. ENOSPC) stopped it after some bytes (the size then covers
 * exactly those), or -errno when nothing was written (-EBADF on a read-only
 * handle, -EFBIG past DRX_STRIPE_MAX_SIZE, -ENOSPC, -EIO for a missing
 * subfile). */
ssize_t drx_stripe_write(struct drx_stripe *f, const void *buf, size_t len, uint64_t off);

/* drx_stripe_write at the end of the file as this handle knows it (its
 * size, with every write through it), taken and covered with no other
 * write of the handle between, so that two appenders never write at the
 * same end (O_APPEND).  *at (may be NULL): the offset written at. */
/* A descriptor of its own (O_PATH, close it) of the metafile f holds
 * open (the file's inode, whatever its names), or -1: drxfs takes the
 * locks users ask for on it, past libcore's own, and reads its mode and
 * capability at writes.  A copy, taken under f's lock: a persist may
 * replace the descriptor f holds, and a number read without the lock may
 * be another file's by the time it is used. */
int drx_stripe_meta_dup(struct drx_stripe *f);
/* Whether st (a stat) is of the metafile f reads and writes: its device
 * and inode, under f's lock. */
bool drx_stripe_meta_is(struct drx_stripe *f, const struct stat *st);
/* Whether st (a stat of a name now) is of the metafile f holds open,
 * whatever names it has: the descriptor keeps its inode, whose number is
 * then no other file's (an inode number alone may be reused once its file
 * is gone).  False when f holds none. */
bool drx_stripe_holds(struct drx_stripe *f, const struct stat *st);

ssize_t drx_stripe_append(struct drx_stripe *f, const void *buf, size_t len, uint64_t *at);

/* Sets the logical size (down or up; new bytes read as zeros) and persists
 * it at once.  Returns 0 or -errno. */
int drx_stripe_truncate(struct drx_stripe *f, uint64_t size);

/* Persists the in-memory size into the metafile if it changed (atomic
 * replace, no fsync).  If NAME.nafs is no longer the file this handle
 * opened (renamed away, unlinked, replaced: missing, or naming other
 * subfiles), nothing is written, the size stays pending and 0 is returned:
 * an unlinked file stays readable through its handle until close.
 * Returns 0 or -errno. */
int drx_stripe_flush(struct drx_stripe *f);

/* drx_stripe_flush without waiting for the file's lock: -EAGAIN at once,
 * nothing done, while another process holds it (one that may only read a
 * subfile can hold it for ever), or with unlocked_ok recorded at once
 * without it (logged; a growth still never records less than the
 * metafile holds).  For a caller with other files to record, which tries
 * this one again later (drxfs's batched commit). */
int drx_stripe_flush_try(struct drx_stripe *f, bool unlocked_ok);

/* fdatasync (datasync) or fsync of every subfile, then persists the size
 * with fsync of the metafile and its directory.  Returns 0 or -errno. */
int drx_stripe_fsync(struct drx_stripe *f, bool datasync);

/* Batched durability, for a front end that records many files' sizes at
 * once (drxfs's commit thread): take gen = drx_stripe_sync_mark(f) of each
 * file, then one drx_stripe_sync_store(s), then for each file, when that
 * succeeded, drx_stripe_synced(f, gen) before drx_stripe_flush(f).  The
 * flush then records the size without syncs of its own, unless f changed
 * after its mark (it syncs its subfiles then, as always): the recorded size
 * is never ahead of durable data.  (When the sync failed, skip
 * drx_stripe_synced: each flush syncs file by file.)
 * drx_stripe_sync_mark: f's count of subfile changes, a value to hand back.
 * drx_stripe_sync_store: syncfs(2) of each filesystem holding one of s's
 * stripe directories (the data and the directory entries of every
 * subfile, a device flush each); 0 or -errno (writeback errors included,
 * Linux 5.8 and later).
 * drx_stripe_synced: the changes of f up to gen are durable, with the names
 * of its subfiles (which existed before the mark), unless a subfile's own
 * write-back error shows up (one the store's sync reported to an earlier
 * batch): then -errno, and f's next flush fails with it, as when its own
 * fdatasync fails, recording no size over the lost data. */
uint64_t drx_stripe_sync_mark(struct drx_stripe *f);
int drx_stripe_sync_store(const struct drx_store *s);
int drx_stripe_synced(struct drx_stripe *f, uint64_t gen);

/* Re-reads the size from the metafile when this handle has no unpersisted
 * change (another process wrote the file).  Returns 1 when the size changed,
 * 0 when not, -ESTALE when NAME.nafs is now another file (replaced, e.g. by
 * drx_stripe_commit_temp; checked with or without unpersisted changes), or
 * -errno (-ENOENT when it is gone). */
int drx_stripe_reload(struct drx_stripe *f);
/* drx_stripe_reload without waiting for a size another process holds:
 * the size recorded now (never ahead of the bytes), for a reader of an
 * open file that must not stall while a writer elsewhere goes on. */
int drx_stripe_reload_nowait(struct drx_stripe *f);

/* The daemon renamed the file while this handle was open: later size
 * updates go to the new name (path without suffix).  0 or -ENOMEM.  (For a
 * rename of the file itself use drx_stripe_rename_handle(); this is for a
 * directory above it.  A persist that runs between the rename and this call
 * finds no metafile and keeps the size pending for the new name.) */
int drx_stripe_set_path(struct drx_stripe *f, const char *path);

/* drx_stripe_rename() of the file open as f, from path `from` (NULL: its
 * current path) to `to`, and drx_stripe_set_path(f, to), with f's
 * persists held off in between, so a flush or close racing the rename can
 * neither record the size under the old name nor lose it.  Returns 0 or
 * -errno: -ESTALE when the metafile at `from` is not f's (another file
 * has the name now). */
int drx_stripe_rename_handle(struct drx_stripe *f, const char *from, const char *to,
                             unsigned flags, struct drx_err *err);

/* ---- space: blocks, preallocation, holes (stripe_space.c) ---------------- */

/* Sum of the st_blocks (512-byte units) of m's subfiles, as stat(2) shows
 * them (a missing or refused subfile counts nothing).  Returns 0. */
int drx_stripe_blocks(const struct drx_store *s, const struct drx_stripe_meta *m, uint64_t *blocks);

/* fallocate(2) of logical [off, off + len) mapped onto the subfiles: mode
 * 0 (allocate, then grow the size to off + len), FALLOC_FL_KEEP_SIZE,
 * FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE (with or
 * without KEEP_SIZE).  Subfiles keep their own sizes (blocks past a
 * subfile's end read as the holes they are).  Returns 0, -EOPNOTSUPP for
 * other modes or a filesystem without the mode, -EBADF on a read-only
 * handle, -EIO when a subfile is missing, or -errno. */
int drx_stripe_fallocate(struct drx_stripe *f, int mode, uint64_t off, uint64_t len);

/* lseek SEEK_DATA or SEEK_HOLE from logical offset off: the nearest data
 * (hole) of any subfile at or after it, as lseek(2) gives it on a local
 * file (the end of the file is a hole; -ENXIO at or past the end, or
 * when no data follows).  Returns the offset or -errno. */
int64_t drx_stripe_seek(struct drx_stripe *f, uint64_t off, int whence);

uint64_t drx_stripe_size(struct drx_stripe *f);
void drx_stripe_layout(const struct drx_stripe *f, struct drx_stripe_layout *out);
/* The metafile contents as of the last open/persist/reload, size included. */
void drx_stripe_meta_get(struct drx_stripe *f, struct drx_stripe_meta *out);

/* ---- names ----------------------------------------------------------------- */

/* Removes NAME.nafs, then, when that was its last name (see
 * drx_stripe_link), its subfiles (a missing subfile is not an error;
 * hostile subfile names are skipped and logged).  Open handles keep reading
 * and writing through their descriptors.  Returns 0 or -errno. */
int drx_stripe_unlink(struct drx_store *s, const char *path, struct drx_err *err);

/* drx_stripe_unlink(), but the subfiles of a file that lost its last name
 * are left in place and described in *gone (layout.count 0: none), for
 * drx_stripe_subfiles_drop() once the caller has closed its own handles of
 * the file: a removed file's subfiles are recycled (stripe_pool.c) only
 * when no descriptor has them open.  A crash in between leaves orphans for
 * drx fsck.  Returns 0 or -errno. */
int drx_stripe_unlink_keep(struct drx_store *s, const char *path, struct drx_stripe_meta *gone,
                           struct drx_err *err);
/* Removes (or recycles) the subfiles drx_stripe_unlink_keep() left. */
void drx_stripe_subfiles_drop(struct drx_store *s, const struct drx_stripe_meta *gone);

/* Renames NAME from -> to (paths without suffix) with one rename(2) of the
 * metafile.  flags: 0 or RENAME_NOREPLACE (-EEXIST when to.nafs exists).
 * When to.nafs existed, its subfiles are removed after the rename.  Returns
 * 0 or -errno. */
int drx_stripe_rename(struct drx_store *s, const char *from, const char *to, unsigned flags,
                      struct drx_err *err);

/* Gives the striped file `from` a second name `to` (paths without suffix):
 * a hard link of its metafile, whose inode is the file's (mode, owner,
 * times, user xattrs, link count); the subfiles keep their one name each.
 * Sizes are then recorded in place, seen by every name (a metafile of an
 * older drx is first rewritten in the padded form).  drx_stripe_unlink()
 * and drx_stripe_rename() remove the subfiles only with the last name.
 * Returns 0 or -errno (-EEXIST when to.nafs exists). */
int drx_stripe_link(struct drx_store *s, const char *from, const char *to, struct drx_err *err);

/* ---- files written behind libcore's back (drx-load) --------------------------- */

/* Creates a hidden temporary striped file to build the new contents of NAME
 * (path without suffix): subfiles as drx_stripe_create() makes them (layout
 * l; NULL: what a new file in NAME's directory gets) and a metafile of size
 * 0 at `.BASE.nafs.XXXXXX` beside NAME.nafs, a temporary name
 * (drx_store_name_is_temp): drxfs does not show it, drx fsck reports it as
 * a leftover and --repair removes it (its subfiles then as orphans).  Its
 * path goes to tmp (tmplen bytes; PATH_MAX is enough).  Writers fill the
 * subfiles directly (drx_stripe_meta_load(tmp) names them) and finish with
 * drx_stripe_commit_temp() or drx_stripe_discard_temp().  NAME is not
 * touched.  Returns 0 or -errno with err. */
int drx_stripe_create_temp(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                           mode_t mode, char *tmp, size_t tmplen, struct drx_err *err);

/* Puts temporary file tmp in place as NAME with logical size `size`: each
 * subfile cut to what size needs and fdatasynced, their stripe directories
 * fsynced, then the size written into tmp, fsynced, and tmp renamed over
 * NAME.nafs (one rename(2), then an fsync of its directory): readers see the
 * old NAME or the whole new one, never a mix.  A striped NAME it replaces
 * gives its mode and owner and has its subfiles removed after.  Returns 0
 * or -errno with err (tmp is then left as it was). */
int drx_stripe_commit_temp(struct drx_store *s, const char *tmp, const char *path, uint64_t size,
                           struct drx_err *err);

/* Removes temporary file tmp and its subfiles.  Returns 0 or -errno. */
int drx_stripe_discard_temp(struct drx_store *s, const char *tmp, struct drx_err *err);

/* Whether subfile i of m may be used, looked at without opening it or
 * following a link (fstatat relative to its stripe directory): only a
 * regular file with one link is a subfile.  A symlink, FIFO or device, a
 * hard link (whose other name may be a file outside the store, changed by
 * every write and truncate), or, for a meta loaded from a metafile that
 * this process's user does not own, a file of another user than the
 * metafile's owner (a metafile anyone may write names any file of a stripe
 * directory: through a root daemon its writer would read, write, chmod and
 * remove another user's file) is refused: -EIO with the reason in err (not
 * logged: the caller reports it).  0 with *st filled (st may be NULL), -ENOENT when it
 * is missing (or its stripe directory is), or -errno.  Front ends that
 * open subfiles by path (drx-load's MPI-IO) or act on them (drx fsck) ask
 * this first; libcore's own opens apply the same rule to the descriptor. */
int drx_stripe_subfile_check(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                             struct stat *st, struct drx_err *err);

/* Opens subfile i of m with flags (O_RDONLY, O_WRONLY, O_RDWR; O_CREAT with
 * mode) relative to its stripe directory, never following a link and never
 * blocking on a FIFO, and only when it passes drx_stripe_subfile_check's
 * rule on the open descriptor.  who names the file in the log.  Returns the
 * descriptor, -ENOENT when missing, -EIO when refused (logged), or -errno. */
int drx_stripe_subfile_open(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            int flags, mode_t mode, const char *who);

/* chmod and chown of a striped file carried to its subfiles, so that the
 * bytes in the stripe directories are closed (and counted) as the file is:
 * each subfile of m that exists and passes drx_stripe_subfile_check's rule
 * gets mode & 0666 (unless mode is (mode_t)-1) and owner uid:gid (-1 keeps
 * either), through a descriptor of it (O_PATH: its mode may let nobody
 * open it).  A missing one is skipped (made later with the file's mode and
 * its first subfile's owner).  0, or the first -errno (the others tried). */
int drx_stripe_subfiles_setattr(const struct drx_store *s, const struct drx_stripe_meta *m,
                                mode_t mode, uid_t uid, gid_t gid, const char *who);

/* The mode the subfiles of the striped file at path get for its mode:
 * mode, with the group bits of its owning group alone when the file has
 * an ACL that names users or groups (the mode's group bits are then the
 * ACL's mask). */
mode_t drx_stripe_sub_mode(const char *path, mode_t mode);
/* The same for the metafile open at fd (O_PATH will do): that file's ACL,
 * whatever its name holds now (an open file's, renamed over). */
mode_t drx_stripe_sub_mode_fd(int fd, mode_t mode);

/* The mode f's subfiles made from now on get (a chmod of the open file;
 * drx_stripe_sub_mode's). */
void drx_stripe_set_mode(struct drx_stripe *f, mode_t mode);

/* Path of subfile i of m in s: "<stripe dir>/<name>" (for fsck and
 * `drx stripe get`; never used to open).  Returns the length or -ERANGE. */
int drx_stripe_subfile_path(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            char *buf, size_t len);

/* Logical size a subfile i needs to hold bytes [0, size) of a file with
 * layout l (what fsck compares subfile lengths against). */
uint64_t drx_stripe_subfile_len(const struct drx_stripe_layout *l, unsigned i, uint64_t size);

/* ---- placement (SPEC section 5) --------------------------------------------- */

/* One run of logical bytes that lies contiguously in one subfile. */
struct drx_stripe_piece {
    unsigned subfile; /* 0..layout.count-1 */
    uint64_t offset;  /* of the run's first byte in the subfile */
    uint64_t logical; /* of the run's first byte in the striped file */
    uint64_t len;     /* bytes, at least 1 */
};

/* Where logical byte b of a file with layout l lies: byte b is in extent
 * e = b / extent, which is in subfile e mod count at offset
 * (e / count) * extent + b mod extent.  Fills *out with the run from b to
 * the end of its extent, cut to at most `left` bytes (left >= 1). */
void drx_stripe_locate(const struct drx_stripe_layout *l, uint64_t b, uint64_t left,
                       struct drx_stripe_piece *out);

/* An upper bound on the pieces drx_stripe_range_pieces() gives for one
 * subfile and logical bytes [a, b) (a <= b); for sizing its array. */
size_t drx_stripe_range_pieces_max(const struct drx_stripe_layout *l, uint64_t a, uint64_t b);

/* The pieces of logical bytes [a, b) (a <= b) that subfile i holds, in
 * increasing order (of logical and of subfile offset alike).  Writes at
 * most max of them to out (out may be NULL when max is 0) and returns how
 * many there are. */
size_t drx_stripe_range_pieces(const struct drx_stripe_layout *l, unsigned i, uint64_t a,
                               uint64_t b, struct drx_stripe_piece *out, size_t max);

/* A subfile shorter than the logical size has a hole there, which reads as
 * zeros.  After reading pieces p[0..n) of one subfile of which only the
 * first `got` bytes (in piece order) arrived, zeros the rest of them in buf,
 * where buf[0] holds logical byte `base` (base <= every piece's logical). */
void drx_stripe_pieces_fill_holes(const struct drx_stripe_piece *p, size_t n, uint64_t got,
                                  unsigned char *buf, uint64_t base);

#endif
