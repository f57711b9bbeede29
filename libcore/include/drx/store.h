/* Stores: a directory tree with `.drx/` at its root.
 *
 * `.drx/` is reserved for the store's own use:
 *   .drx/store.conf      the store's remembered settings (format below)
 *   .drx/stripes/0, /1   the default stripe directories
 *
 * STORE.CONF FORMAT (libconfig text, replaced atomically; for the README):
 *
 *   # drxfs store settings (written by drx init / drxfs at first mount)
 *   version = 1;
 *   stripe = {
 *     dirs   = [ ".drx/stripes/0", ".drx/stripes/1" ];
 *     count  = 2;        # default subfiles of a new striped file
 *     extent = 65536;    # default extent of a new striped file (bytes)
 *   };
 *
 * A dir inside the store is written relative to the store root (so the store
 * can be moved or copied whole); others are absolute.  The order of `dirs`
 * matters: a metafile names each subfile's directory by its index.  The file
 * accepts only `version` and `stripe`; it is read with the same checks as a
 * --config file (unknown key, wrong type, impossible value: "FILE:LINE:
 * reason").
 *
 * Paths: every function here takes store paths (the store's real files).
 * A path under a drxfs mount point is turned into the store path by
 * drx_store_resolve_path(); drx and drx-load never go through FUSE.
 *
 * The daemon mounts with `-o fsname=<absolute store root>,subtype=drxfs`, so
 * /proc/self/mountinfo shows fstype `fuse.drxfs` and the store root as the
 * mount source; that is how a mount point is mapped back to its store.
 */
#ifndef DRX_STORE_H
#define DRX_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "drx/config.h"
#include "drx/err.h"

/* Name of the reserved directory at a store's root. */
#define DRX_STORE_DIR ".drx"
#define DRX_STORE_CONF ".drx/store.conf"
/* Files a drxfs mount removed while they were open, until their last close
 * (fs/drxfs/drxfs_hidden.c); drx fsck knows them. */
#define DRX_STORE_HIDDEN ".drx/hidden"
/* The filesystem type drxfs mounts show in /proc/self/mountinfo. */
#define DRX_STORE_FSTYPE "fuse.drxfs"

/* An open store.  All fields are read-only for users of the handle. */
struct drx_stripe_pool; /* private to libcore */
struct drx_store_fresh;

struct drx_store {
    char *root; /* absolute, normalised, no trailing '/' (except "/") */
    /* Effective configuration (defaults < store.conf < config file < what
     * the caller passed): cfg.stripe.dirs are absolute and normalised. */
    struct drx_config cfg;
    /* O_RDONLY|O_DIRECTORY descriptors of cfg.stripe.dirs[i], or -1 when that
     * directory is missing or unusable at open (a warning is logged; the
     * subfiles it holds then give -EIO, the rest of the store works). */
    int *dir_fds;
    int root_fd; /* O_RDONLY|O_DIRECTORY descriptor of root */
    /* Opened by drx_store_open_at(): the store's path for messages (root is
     * then the descriptor's name in this process), and that descriptor. */
    char *name;
    int at_fd; /* -1 otherwise */
    /* libcore's own: the stripe directories' pools of recycled subfiles. */
    struct drx_stripe_pool *pool;
    /* libcore's own: inodes made ahead for new metafiles, or NULL
     * (drx_store_fresh_start). */
    struct drx_store_fresh *fresh;
};

/* Starts a thread that keeps empty files made ahead in `.drx/fresh/`, which
 * new metafiles of s then take instead of allocating an inode while their
 * creator waits (store_fresh.c says why and when).  For long-lived
 * processes (drxfs); drx_store_close stops it.  0, or -errno (-EPERM: the
 * directory is not this user's alone), with nothing started. */
int drx_store_fresh_start(struct drx_store *s);
/* Stops that thread (the files made stay for a later start); no-op when
 * none runs. */
void drx_store_fresh_stop(struct drx_store *s);

/* drx_store_init() flags. */
enum {
    /* An existing store keeps its remembered settings whatever cfg says
     * (drxfs at mount, `drx init STORE` without layout options). */
    DRX_STORE_INIT_KEEP = 1,
    /* Only an empty (or missing) directory becomes a new store: one that
     * holds anything and has no `.drx/` gives -ENOTEMPTY (drxfs at mount
     * without -o create: a mount must not quietly take over a directory
     * of other files). */
    DRX_STORE_INIT_EMPTY_ONLY = 2,
};

/* Makes `root` a store: creates root (one level, like mkdir) if missing,
 * `.drx/`, the stripe directories of cfg (with parents), and writes
 * `.drx/store.conf` remembering cfg->stripe (dirs, count, extent).  cfg must
 * be valid (drx_config_validate); relative dirs are relative to root.
 *
 * Existing store (`.drx/store.conf` present): nothing is rewritten.  With
 * DRX_STORE_INIT_KEEP, or when cfg's stripe dirs, count and extent equal the
 * remembered ones, returns 1 (missing stripe directories are re-created).
 * Otherwise returns -EEXIST with a message naming the difference: changing
 * the stripe dirs of a store would orphan every striped file, and its default
 * layout is changed with `drx stripe set STORE ...` instead.
 * A `.drx/` without store.conf (drxfs made it, crash during init) is
 * completed.  Returns 0 when a store was made, 1 when it existed, or -errno
 * with a message in err. */
int drx_store_init(const char *root, const struct drx_config *cfg, unsigned flags,
                   struct drx_err *err);

/* The effective configuration of the store at `root` without opening it:
 * defaults(root) < root/.drx/store.conf (when present) < config_path (when
 * non-NULL).  cfg need not be initialised; on success release with
 * drx_config_fini().  Stripe dirs stay as written (relative = to root).
 * Returns 0 or -errno/-EINVAL with "FILE:LINE: reason" in err. */
int drx_store_load_config(const char *root, const char *config_path, struct drx_config *cfg,
                          struct drx_err *err);

/* Opens the store at root with the configuration cfg (typically from
 * drx_store_load_config() plus command-line edits; it is copied and
 * validated).  root must have `.drx/` (-ENOENT "not a drx store" otherwise).
 * Missing default stripe dirs inside `.drx/` are created; a missing stripe
 * dir elsewhere gets dir_fds[i] = -1 and a logged warning.  *out owns its
 * descriptors; close with drx_store_close().  Handles of striped files opened
 * through the store must be closed before the store. */
int drx_store_open_cfg(const char *root, const struct drx_config *cfg, struct drx_store **out,
                       struct drx_err *err);

/* drx_store_load_config(root, config_path) + drx_store_open_cfg(). */
int drx_store_open(const char *root, const char *config_path, struct drx_store **out,
                   struct drx_err *err);

void drx_store_close(struct drx_store *s); /* NULL is a no-op */

/* Lexically normalises path into an absolute path: prefixes getcwd() when
 * relative, removes "." and empty components, folds ".." (never above "/"),
 * drops a trailing '/'.  Never stats or follows anything.  Returns the length,
 * or -ENAMETOOLONG / -errno from getcwd. */
int drx_store_abspath(const char *path, char *out, size_t outlen);

/* Absolutises path (drx_store_abspath) and, if it lies under a mount point
 * whose fstype is fuse.drxfs in /proc/self/mountinfo, rewrites the mount
 * point prefix to the mount's source (the store root).  The deepest matching
 * mount wins; mountinfo's octal escapes (\040 space, \011, \012, \134) are
 * decoded.  Never touches the mount itself.  Returns the length of out, or
 * -errno. */
int drx_store_resolve_path(const char *path, char *out, size_t outlen);

/* The same with the mountinfo file given (NULL: /proc/self/mountinfo), for
 * tests.  An unreadable mountinfo means "no mounts" (not an error). */
int drx_store_resolve_path_mi(const char *mountinfo, const char *path, char *out, size_t outlen);

/* Setting this extended attribute on a drxfs mount point (any value)
 * records every striped file's size waiting for the mount's batched commit
 * and returns when it is done.  drx_store_resolve_path*() ask it of the
 * mount a path lies under, so that drx and drx-load read the sizes the
 * mount shows: only a mount whose daemon runs as the caller's effective
 * user (mountinfo's user_id=), through its mount point opened without
 * following symlinks and checked to be that mount's root, waiting at most
 * 10 s for the answer (a stopped or hung daemon: a warning, and the sizes
 * recorded so far). */
#define DRX_STORE_COMMIT_XATTR "user.drx.commit"

/* drx_store_resolve_path*() and drx_store_locate*() flags. */
enum {
    /* The caller will change what the path names (put, extend, create, rm,
     * stripe set, fsck --repair, drx-load destinations): a path under a
     * read-only drxfs mount (its own options or its superblock's say ro) is
     * refused with -EROFS, as the mount itself would refuse it.  A path
     * given in the store itself is not a mount's business. */
    DRX_STORE_FOR_WRITE = 1,
    /* Do not ask the mount to commit (DRX_STORE_COMMIT_XATTR): another
     * process asks for this caller (drx-load and libdrxmp: rank 0 asks
     * for its communicator). */
    DRX_STORE_NO_COMMIT = 2,
};

/* drx_store_resolve_path_mi() with flags; messages in err ("PATH:
 * read-only file system (MNT is a read-only drxfs mount)"). */
int drx_store_resolve_path_for(const char *mountinfo, const char *path, unsigned flags, char *out,
                               size_t outlen, struct drx_err *err);

/* Whether the store at root is mounted: a fuse.drxfs mount in
 * /proc/self/mountinfo whose source is root (the same path after
 * drx_store_abspath, or the same directory by stat).  Returns 1 and the
 * (first) mount point in mnt (mntlen bytes; mnt may be NULL), 0 when not
 * mounted or mountinfo is unreadable, or -errno.  Only this mount
 * namespace and this machine are seen. */
int drx_store_mounted(const char *root, char *mnt, size_t mntlen);

/* The same with the mountinfo file given (NULL: /proc/self/mountinfo), for
 * tests. */
int drx_store_mounted_mi(const char *mountinfo, const char *root, char *mnt, size_t mntlen);

/* Whether the directory mnt (an absolute, canonical path) is the mount
 * point of a drxfs mount in mountinfo (NULL: /proc/self/mountinfo): 1 and
 * its store in src (srclen bytes), 0 when not, or -errno. */
int drx_store_mount_at(const char *mountinfo, const char *mnt, char *src, size_t srclen);

/* The store's activity lock, an flock on its .drx directory.  Whoever makes
 * files in steps that a repair must not see half done holds it shared:
 * drxfs while mounted (from any mount namespace or with any mount source),
 * drx-load copy from creating its temporary file to committing it.
 * drx fsck --repair takes it exclusive, without waiting, for the whole
 * repair.  Returns a descriptor holding the lock (close it to release), or
 * -errno: -EWOULDBLOCK when an exclusive lock finds the store in use.  A
 * shared lock waits for a repair to end. */
int drx_store_lock(const struct drx_store *s, bool exclusive);

/* Nearest ancestor-or-self of path (taken lexically: absolutised with
 * drx_store_abspath, NOT resolved through drxfs mounts; resolve first) that
 * has a `.drx` directory.  Writes the root to root (rootlen bytes).  Returns
 * the root's length, -ENOENT when there is none, or -errno. */
int drx_store_find(const char *path, char *root, size_t rootlen);

/* For a file a command is about to write by the user's path (shown: as
 * messages name it): when path, its directory resolved, lies in a store
 * and a name on its way from the root is one the store keeps for its own
 * files (drx_store_name_reserved: `.drx` at the root, an array's .xta and
 * .xmd, a .nafs, temporaries), -EINVAL with err ("SHOWN: the store keeps
 * the name NAME for its own files ...: nothing written"); 0 when there is
 * none or path is in no store; -errno with err. */
int drx_store_path_reserved(const char *path, const char *shown, struct drx_err *err);
/* For a plain file a command writes by the user's path (drx get -o,
 * drx-load export): drx_store_path_reserved, and in a store also -EEXIST
 * with err when the name is an array's or a striped file's there
 * (drx_store_classify), which the store's rule shows instead of the file
 * ("SHOWN: is an array of the store ...: nothing written"). */
int drx_store_path_plain(const char *path, const char *shown, struct drx_err *err);

/* For the command-line tools: resolve_path + find.  root gets the store root,
 * store_path the resolved absolute path (may equal root), rel the part below
 * the root ("" for the root itself); rel may be NULL.  Each buffer is
 * PATH_MAX long.  Returns 0, -ENOENT with "PATH: not inside a drx store" in
 * err, or -errno. */
int drx_store_locate(const char *path, char *root, char *store_path, char *rel,
                     struct drx_err *err);
/* The same with flags (DRX_STORE_FOR_WRITE). */
int drx_store_locate_for(const char *path, unsigned flags, char *root, char *store_path, char *rel,
                         struct drx_err *err);

/* What a store name (no suffix) stands for, by looking at the store's files:
 * NAME.xmd -> array, NAME.nafs -> striped file, NAME a directory -> dir,
 * NAME any other file -> plain; nothing -> none.  NAME.xmd and NAME.nafs
 * count only as regular files.  When several exist the first in that order
 * wins.  drx_store_lookup() applies the same rule. */
enum drx_store_kind {
    DRX_STORE_NONE = 0,
    DRX_STORE_ARRAY,
    DRX_STORE_STRIPED,
    DRX_STORE_DIRECTORY,
    DRX_STORE_PLAIN,
    DRX_STORE_SYMLINK, /* drx_store_lookup only (classify follows links) */
    DRX_STORE_SPECIAL, /* FIFO, socket, device node */
};
enum drx_store_kind drx_store_classify(const char *path);

/* True for names the daemon hides: `.drx` in the store root (at_root), and
 * anywhere the temporary files of atomic replacement: `.NAME.xmd.XXXXXX`,
 * `.NAME.xta.XXXXXX` (drx_array_unshare), `.NAME.nafs.XXXXXX` (X: six
 * [A-Za-z0-9] characters, as mkstemp makes), and `.drx-tmp.XXXXXX`, the
 * temporary of a name too long for the first form; and the stems of long
 * names with their store files (DRX_STORE_LONG_PREFIX, below). */
bool drx_store_name_internal(const char *name, bool at_root);

/* Long names.  A striped file or array whose name is longer than
 * DRX_STORE_SHORT_MAX bytes has no room for its suffix (NAME.nafs,
 * NAME.xmd), so its store files are named by a stem made from a hash of
 * the name, `.drx-long.` and 32 hex digits (STEM.nafs, STEM.xmd and
 * STEM.xta), and the name itself is the target of a symlink STEM beside
 * them, one per directory entry (a hard link of a striped file has its
 * own).  The symlink is made first and removed last, so a crash leaves at
 * worst a symlink naming nothing (drx fsck removes it).  Stems are
 * internal names (drx_store_name_internal). */
#define DRX_STORE_SHORT_MAX (255 - 5) /* NAME_MAX - 5: room for ".nafs" */
#define DRX_STORE_LONG_PREFIX ".drx-long."
/* The stem of name (longer than DRX_STORE_SHORT_MAX) into out (at least
 * DRX_STORE_LONG_STEM_LEN + 1 bytes). */
#define DRX_STORE_LONG_STEM_LEN (sizeof DRX_STORE_LONG_PREFIX - 1 + 32)
void drx_store_long_stem(const char *name, char *out, size_t len);
/* True when name is a stem (with no suffix) or a stem's store file
 * (suffix: its length, 0 for the stem itself). */
bool drx_store_name_is_long(const char *name, size_t *suffix);

/* True for the temporary-file names above (for fsck). */
bool drx_store_name_is_temp(const char *name);

/* The prefix of the short temporary names. */
#define DRX_STORE_TEMP_SHORT ".drx-tmp."

/* The name of a temporary beside the final name base, with x (six
 * characters of [A-Za-z0-9]): `.BASE.XXXXXX` when that fits in NAME_MAX,
 * else `.drx-tmp.XXXXXX`, so that every name that fits has a temporary
 * that fits too.  out holds NAME_MAX + 1 bytes.  0 or -ENAMETOOLONG (base
 * itself too long). */
int drx_store_temp_name(const char *base, const char *x, char *out, size_t len);

/* True for names a user may not give a store entry: the internal names
 * above, and names ending in .xmd, .xta or .nafs (an array's or striped
 * file's own files). */
bool drx_store_name_reserved(const char *name, bool at_root);

/* ---- a store by its root descriptor; entries by store-relative name -------
 *
 * drxfs opens the store's root before mounting (the mount point may shadow
 * the store's path) and reaches everything through that descriptor.  name
 * is the store's path as messages show it.  These are drx_store_load_config,
 * drx_store_init and drx_store_open_cfg for a root given as a descriptor;
 * the store of drx_store_open_at keeps its own duplicate of dirfd. */
int drx_store_load_config_at(int dirfd, const char *name, const char *config_path,
                             struct drx_config *cfg, struct drx_err *err);
/* Takes back a store that drx_store_init_at just made (it returned 0) and
 * nothing used yet, as when the mount it was made for failed: its
 * .drx/store.conf, then .drx and every directory under it, each only
 * while empty (a file anyone put there meanwhile stays, and so does the
 * store).  Nothing is followed out of dirfd. */
void drx_store_unmake_at(int dirfd);
int drx_store_init_at(int dirfd, const char *name, const struct drx_config *cfg, unsigned flags,
                      struct drx_err *err);
int drx_store_open_at(int dirfd, const char *name, const struct drx_config *cfg,
                      struct drx_store **out, struct drx_err *err);

/* The path of store entry rel (store-relative, "." for the root) that
 * libcore's path-taking functions (drx_array_open, drx_stripe_*) accept: it
 * reaches the entry through the store's root, whatever is mounted over the
 * store's path, but follows the directories of rel as they are: for names
 * a hostile user may control, drx_store_path_pin.  0 or -ENAMETOOLONG. */
int drx_store_path(const struct drx_store *s, const char *rel, char *out, size_t len);

/* The same, safe for any store path below PATH_MAX: an entry below the
 * root is reached through its directory, opened beneath the root without
 * following a symlink (a user who can write the store cannot swap a
 * directory on the way for one), whose descriptor goes to *pin (close it
 * once libcore is done with the path; -1 for an entry of the root).  The
 * path leaves room for what libcore adds (a temporary's `.` and suffix). */
int drx_store_path_pin(const struct drx_store *s, const char *rel, char *out, size_t len,
                       int *pin);

/* What store-relative name rel stands for (the rule of drx_store_classify,
 * without following a final symlink), with the stat of the object behind it:
 * the .xmd of an array, the metafile of a striped file, else the entry.
 * Internal and reserved names (at_root: rel is in the root) are no entry.
 * An array or striped file with a long name (above) is found through its
 * stem.  srel (PATH_MAX bytes, may be rel itself, or NULL) gets the store
 * name of its files: rel, or the long name's stem beside it.  0, -ENOENT
 * (kind DRX_STORE_NONE) or -errno. */
int drx_store_lookup(const struct drx_store *s, const char *rel, bool at_root,
                     enum drx_store_kind *kind, struct stat *st, char *srel);

/* The store name of an array or striped file to be made at rel: rel with
 * its last component replaced by its stem when that is long (1), else rel
 * (0); out holds PATH_MAX bytes and may be rel.  -ENAMETOOLONG when the
 * store path leaves no room for a suffix. */
int drx_store_long_rel(const char *rel, char *out);
/* The same, with a long name recorded first (its stem's symlink, made
 * before the store files): the store name to make.  0 or -errno. */
int drx_store_long_new(const struct drx_store *s, const char *rel, char *out);
/* Removes stem's symlink once no store file of it is left (nothing for
 * other names): after the files of a long name were removed or renamed
 * away. */
void drx_store_long_drop(const struct drx_store *s, const char *stem);

/* Whether entry name of store directory dfd (d_type: readdir's, or
 * DT_UNKNOWN) shows in a listing, by the rule of drx_store_lookup: arrays
 * (NAME.xmd) as directories NAME, striped files (NAME.nafs) as regular files
 * NAME, other entries as themselves unless an array or striped file of
 * their name hides them; a long name's stem files as the name its symlink
 * records; .xta files and internal names never.  On true,
 * the name shown (shown: NAME_MAX + 1 bytes), what it is, and its file type
 * (S_IFDIR...). */
bool drx_store_list_name(int dfd, const char *name, unsigned char d_type, bool at_root,
                         char *shown, enum drx_store_kind *kind, mode_t *type);

/* openat(root, rel) that never follows a symlink on the way nor at the end,
 * and never leaves the store (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS:
 * a user who can write the store could otherwise swap a directory for a
 * symlink between a lookup and an open).  A descriptor or -errno. */
int drx_store_entry_open(const struct drx_store *s, const char *rel, int flags, mode_t mode);

/* The directory of entry rel, for a call on its last component (*name,
 * inside rel): the root's own descriptor for a name in the root, else the
 * directory opened O_PATH beneath the store with no symlink followed on the
 * way (-ELOOP when one is in the way).  Everything the daemon does to an
 * entry by name goes through it: a multi-component *at() from the root
 * follows a directory that a user who can write the store swapped for a
 * symlink after the walk looked at it, and a daemon running as root would
 * then stat, remove, rename or link outside the store.  The descriptor,
 * to give back with drx_store_dir_put(), or -errno. */
int drx_store_dir_get(const struct drx_store *s, const char *rel, const char **name);
void drx_store_dir_put(const struct drx_store *s, int fd);

/* mkdirat, mknodat, symlinkat, unlinkat (flags 0 or AT_REMOVEDIR),
 * readlinkat, renameat2 (flags as its; 0 is renameat) and linkat (no
 * symlink followed) of entries rel, from and to, each reached through
 * drx_store_dir_get().  0 (readlink: the length) or -errno. */
int drx_store_entry_mkdir(const struct drx_store *s, const char *rel, mode_t mode);
int drx_store_entry_mknod(const struct drx_store *s, const char *rel, mode_t mode, dev_t dev);
int drx_store_entry_symlink(const struct drx_store *s, const char *target, const char *rel);
int drx_store_entry_unlink(const struct drx_store *s, const char *rel, int flags);
ssize_t drx_store_entry_readlink(const struct drx_store *s, const char *rel, char *buf,
                                 size_t size);
int drx_store_entry_rename(const struct drx_store *s, const char *from, const char *to,
                           unsigned flags);
int drx_store_entry_link(const struct drx_store *s, const char *from, const char *to);

/* lstat of entry rel, its directory reached as drx_store_entry_open
 * reaches it: a symlink on the way is no entry (-ENOENT), never followed.
 * The daemon reports what it stats, so no multi-component fstatat() of the
 * root.  0 or -errno. */
int drx_store_entry_stat(const struct drx_store *s, const char *rel, struct stat *st);

/* chmod, chown, utimensat of entry rel through a descriptor opened as
 * drx_store_entry_open does.  A symlink's owner and times change as lchown
 * and lutimes would; it has no mode (-EOPNOTSUPP).  0 or -errno. */
int drx_store_entry_chmod(const struct drx_store *s, const char *rel, mode_t mode);
int drx_store_entry_chown(const struct drx_store *s, const char *rel, uid_t uid, gid_t gid);
int drx_store_entry_utimens(const struct drx_store *s, const char *rel,
                            const struct timespec tv[2]);

/* An extended attribute call on entry rel, reached the same way: get (value,
 * size), set (value, size, flags), list (value: the list buffer, size), or
 * remove.  A symlink has none here (-EOPNOTSUPP).  As the system call
 * returns, -errno on failure. */
enum drx_xattr_op { DRX_XATTR_GET, DRX_XATTR_SET, DRX_XATTR_LIST, DRX_XATTR_REMOVE };
struct drx_xattr_req {
    enum drx_xattr_op op;
    const char *name;
    void *value;
    size_t size;
    int flags;
};
ssize_t drx_store_entry_xattr(const struct drx_store *s, const char *rel,
                              const struct drx_xattr_req *r);

/* A check of the entry the calling thread's next drx_store_entry_chmod,
 * _chown, _utimens or _xattr call reaches, made on the descriptor it
 * opened (fd, O_PATH; st its stat; rel its name) before it acts: 0 lets
 * the call go on, -errno ends it with that error.  open, when not NULL,
 * opens rel for it (O_PATH | O_NOFOLLOW beneath the store: the
 * descriptor or -errno), else the store's drx_store_entry_open does.
 * For a daemon acting for another user: the file opened as he reaches it
 * (open with his file system IDs), his permission checked on it, and the
 * call made on that very file, whatever the name holds by then (a rename
 * behind the daemon's back).  The calls that make or remove a name
 * (_mkdir, _mknod, _symlink, _unlink, _rename, _link) check and act in
 * the directory holding it instead (rel that directory's, "." the
 * root's; a rename's or link's two, each checked).  Used once, then cleared;
 * drx_store_entry_guard(NULL, NULL, NULL) clears it. */
void drx_store_entry_guard(int (*open)(const char *rel),
                           int (*check)(int fd, const struct stat *st, const char *rel, void *arg),
                           void *arg);

/* inotify_add_watch(ifd, entry rel, mask), the entry reached as above.
 * The watch descriptor or -errno. */
int drx_store_entry_watch(const struct drx_store *s, int ifd, const char *rel, uint32_t mask);

#endif
