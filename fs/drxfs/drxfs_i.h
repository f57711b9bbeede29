/* Private pieces of the drxfs daemon, shared by its files:
 *
 *   drxfs.c         main, options, configuration, init/destroy, ops table
 *   drxfs_node.c    path resolution (mount path -> what it is in the store)
 *   drxfs_pass.c    attributes, open files, xattrs; plain files passed through
 *   drxfs_names.c   names (mkdir, rename, unlink, ...) and directory listings
 *   drxfs_array.c   arrays and views: data, data.npy, data.nc, info
 *   drxfs_array_table.c  the table of array handles (reload, chunk cache)
 *   drxfs_array_attr.c   array attributes as user.NAME xattrs
 *   drxfs_striped.c striped files (NAME.nafs)
 *   drxfs_striped_layout.c  statfs over the stripe directories, user.drx.stripe
 *   drxfs_zarr.c    the zarr/ group of an array directory (and _write.c)
 *   drxfs_info.c    sizes of info files, cached per metadata generation
 *   drxfs_kcache.c  the kernel's caches: what it holds, when to drop it
 *   drxfs_notify.c  invalidations: attributes only, or pages through a relay
 *   drxfs_init_reply.c  shared mmap of direct_io files, granted in INIT's reply
 *   drxfs_commit.c  batched commits of striped files' sizes (ordered mode)
 *
 * Every store access goes through libcore's store handle (drxfs.store),
 * opened by the store root's descriptor before the mount (the mount point
 * may shadow the store path): entries by store-relative name
 * (drx_store_entry_*), and drx_store_path() for libcore's path-taking calls.
 */
#ifndef DRXFS_I_H
#define DRXFS_I_H

#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "drx/array.h"
#include "drx/format.h"
#include "drx/log.h"
#include "drx/store.h"
#include "drx/view.h"

/* Suffixes of the store files behind arrays and striped files. */
#define DRXFS_XMD ".xmd"
#define DRXFS_XTA ".xta"
#define DRXFS_NAFS ".nafs"

/* Block size reported for array data files: tools that size their reads by
 * st_blksize (cat, cp) then send 1 MiB requests, the largest FUSE request. */
#define DRXFS_DATA_BLKSIZE (1 << 20)

/* The kernel's read-ahead window for the mount, KiB (its own default is
 * 128 KiB, which also caps each read request at 128 KiB; see the README's
 * Benchmarks for what each size measured). */
#define DRXFS_READ_AHEAD_KB 4096
/* Paths the kernel cache records at most (-o kcache_paths=N); beyond,
 * everything but the paths of open files is invalidated and forgotten
 * (the kernel then asks again).  Each chunk key of a zarr/ group read is
 * one: this many keys stay hot.  About 100 bytes each. */
#define DRXFS_KCACHE_PATHS 65536
#define DRXFS_KCACHE_PATHS_MAX (1U << 24)
/* How long (ms) a request waits for a lock another process holds on a
 * store file before it fails with EAGAIN (drx_io_set_lock_wait_ms). */
#define DRXFS_LOCK_WAIT_MS 10000u
/* How long (ms) a drxfs waits for another one mounting on the same point
 * (opening its store may first wait for drx's lock). */
#define DRXFS_MNT_LOCK_WAIT_MS 30000u

/* The mount's state (one mount per process). */
/* Kernel cache timeouts the user may set; the others are 0 (see op_init). */
enum { DRXFS_ENTRY_TO = 1, DRXFS_ATTR_TO = 2, DRXFS_NEGATIVE_TO = 4 };

struct drxfs {
    struct drx_store *store;
    int store_lock; /* drx_store_lock(shared) for the mount's life, or -1 */
    int mnt_lock;   /* flock of the mount point until the mount is there, or -1 */
    bool made_store; /* this mount made the store's .drx/ (undone if it fails) */
    int root_fd;
    bool ro;
    bool foreground;
    bool data_direct_io;              /* data files bypass the page cache (default) */
    bool npy_direct_io;               /* data.npy too (off: keeps mmap of .npy working) */
    bool striped_direct_io;           /* striped files bypass the page cache */
    bool split_reads;                 /* large array reads use two threads */
    bool kernel_cache;                /* kernel caches kept while unchanged (kcache=) */
    unsigned read_ahead_kb;           /* the mount's read-ahead window, 0: the kernel's */
    unsigned kcache_paths;            /* paths the kernel cache records at most (kcache_paths=) */
    unsigned commit_interval;         /* s between batched commits of striped files, 0: at close */
    char *mountpoint;                 /* absolute, or NULL */
    bool root_euid;                   /* we may chown what we create */
    unsigned timeouts_given;          /* DRXFS_ENTRY_TO... bits of the timeouts the user set */
    bool implied_default_permissions; /* allow_other came alone: we added it */
    bool check_perms;                 /* default_permissions (or allow_other, adding it) */
    unsigned max_read;                /* -o max_read=N, or 0 */
    uint64_t cache_bytes;
    const char *store_path;          /* absolute, for messages and drx-load */
    struct drxfs_prefetch *prefetch; /* NULL unless prefetch.enabled */
};
extern struct drxfs drxfs;

/* What a mount path is.  The pass-through kinds come first (rename relies
 * on kind <= DRXFS_LINK meaning "one plain store entry"). */
enum drxfs_kind {
    DRXFS_DIR,     /* store directory */
    DRXFS_PLAIN,   /* regular file passed through */
    DRXFS_SPECIAL, /* FIFO, socket or device node passed through */
    DRXFS_LINK,    /* symlink passed through */
    DRXFS_ARRAY,   /* array or view directory */
    DRXFS_ADATA,   /* .../data */
    DRXFS_ANPY,    /* .../data.npy */
    DRXFS_AINFO,   /* .../info */
    DRXFS_ANC,     /* .../data.nc */
    DRXFS_STRIPED, /* NAME.nafs */
    DRXFS_ZARR,    /* ARRAY/zarr and below (drxfs_zarr.c) */
};

struct drxfs_node {
    enum drxfs_kind kind;
    /* Store-relative path: "." for the root; for arrays and striped files
     * the name without suffix. */
    char rel[PATH_MAX];
    /* The store object's stat: itself, the .xmd of an array, the .nafs of
     * a striped file. */
    struct stat st;
    /* View words below the array (array kinds only): nwords words of the
     * path resolved, '/'-separated from words on (the node lives no longer
     * than the request's path); drxfs_node_spec() parses them. */
    int nwords;
    const char *words;
    /* DRXFS_ZARR: the group (zlevel 0), a variable's directory zvar (1), or
     * file zname of the group (zvar "") or of variable zvar (2). */
    int zlevel;
    char zvar[NAME_MAX + 1];
    char zname[NAME_MAX + 1];
};

static inline bool drxfs_is_array_kind(enum drxfs_kind k)
{
    return k == DRXFS_ARRAY || k == DRXFS_ADATA || k == DRXFS_ANPY || k == DRXFS_AINFO ||
           k == DRXFS_ANC;
}

/* -o options: each module takes its own NAME=VALUE (0), refuses a bad
 * value after saying why on stderr (-1), or passes (1). */
int drxfs_array_option(const char *name, const char *value);   /* drxfs_array.c */
int drxfs_striped_option(const char *name, const char *value); /* drxfs_striped_layout.c */
int drxfs_commit_option(const char *name, const char *value);  /* drxfs_commit.c */
int drxfs_kc_option(const char *name, const char *value);      /* drxfs_kcache.c */
int drxfs_killpriv_option(const char *name, const char *value); /* drxfs_killpriv.c */
/* Helpers for them (drxfs.c): value is yes or no (as given) into *out;
 * a count of unit from 0 to max. */
int drxfs_opt_choice(const char *name, const char *value, const char *yes, const char *no,
                     bool *out);
int drxfs_opt_count(const char *name, const char *value, const char *unit, unsigned long max,
                    unsigned *out);

/* drxfs_node.c */
int drxfs_resolve(const char *path, struct drxfs_node *n);
/* The view words of array node n, parsed into spec.  0 or -errno. */
int drxfs_node_spec(const struct drxfs_node *n, struct drx_view_spec *spec);
/* Logs why a view name does not exist: info level, at most 10 a minute. */
void drxfs_log_no_view(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* drxfs_resolve() into a node on the heap (a node holds a PATH_MAX name).  NULL with *rc = -errno on failure; free() the result. */
struct drxfs_node *drxfs_node_get(const char *path, int *rc);
/* After an operation by path that succeeded (node n, or the new child rel
 * of drxfs_resolve_new): remembers it for the getattr libfuse makes next
 * on this thread.  drxfs_node_get_memo: drxfs_node_get(), answered from
 * that memo (one lookup of the last component) when it is of path and
 * fresh; consume: the memo is used up (getattr). */
void drxfs_node_memo(const char *path, const char *rel, bool at_root);
void drxfs_node_memo_of(const char *path, const struct drxfs_node *n);
struct drxfs_node *drxfs_node_get_memo(const char *path, bool consume, int *rc);
/* Resolves the parent of path, which must be a directory, and returns the
 * store-relative path of the new child in rel (PATH_MAX) and its last
 * component in *name.  -EPERM when the parent is an array or view. */
int drxfs_resolve_new(const char *path, char *rel, const char **name, bool *at_root);
/* 0 when the child rel (of drxfs_resolve_new(), last component name) is
 * missing, -EEXIST when it stands for something, else -errno: one lookup
 * of the child, its directory already resolved. */
int drxfs_child_missing(const char *path, const char *rel, const char *name, bool at_root);
/* Joins the store-relative rel with suffix into out (PATH_MAX). */
int drxfs_rel_suffix(char *out, const char *rel, const char *suffix);
/* drx_store_path() for a store entry that libcore may give a suffix or a
 * temporary name beside: near PATH_MAX the path goes through rel's
 * directory, whose descriptor comes back in *pin (drx_store_path_pin:
 * close it with drxfs_unpin when libcore no longer uses the path).  0 or
 * -errno. */
int drxfs_lib_path(char *out, size_t len, const char *rel, int *pin);
/* Closes pin unless it is -1. */
void drxfs_unpin(int pin);
/* True for names a user may not create in the store: drx_store_name_reserved
 * and libfuse's hidden names. */
bool drxfs_name_reserved(const char *name, bool at_root);
/* Gives the calling user the new store object rel (when we run as root). */
void drxfs_chown_new(const char *rel);
/* The same through descriptor fd (O_PATH too) of the new entry rel, -1:
 * by the name. */
void drxfs_chown_new_fd(int fd, const char *rel);
/* The group a new entry rel belongs to: its directory's in a set-group-ID
 * directory, else the caller's. */
gid_t drxfs_new_gid(const char *rel);
/* The mode new entry rel is made with: the caller's mode less the caller's
 * umask (the kernel leaves it to us: FUSE_CAP_DONT_MASK), except in a
 * directory with a default ACL, which replaces the umask (POSIX.1e): the
 * store's filesystem (or libcore, for a striped file's metafile) applies the
 * ACL to the mode, as on a local disk. */
mode_t drxfs_new_mode(const char *rel, mode_t mode);

/* drxfs_hidden.c: files removed while open (libfuse's hidden names). */
/* True for libfuse's hidden names (".fuse_hidden" and 16 hex digits). */
bool drxfs_hidden_name(const char *name);
/* Makes .drx/hidden at mount, so that hiding a file needs no new
 * directory on a disk that has filled up since. */
void drxfs_hidden_start(void);
/* The store-relative name (.drx/hidden/MOUNT-HEX) of hidden name `name`. */
int drxfs_hidden_rel(const char *name, char *rel, size_t len);
/* The same for hidden name `name` met in store directory dir ("." for the
 * root): -ENOENT unless this mount hid a file there under that name. */
int drxfs_hidden_lookup(const char *dir, const char *name, char *rel, size_t len);
/* Store directory from was renamed to: its hidden files follow. */
void drxfs_hidden_dir_renamed(const char *from, const char *to);
/* libfuse renames open file `from` to hidden name `to` (instead of removing
 * it): moves it out of its directory into .drx/hidden (a zarr/ key:
 * removed now unless zarr's rename over it follows, no_keys as for
 * drxfs_zarr_unlink).  0 or -errno. */
int drxfs_hidden_hide(const char *from, const char *to, bool no_keys);
/* The mount path a hidden name of a zarr/ file stands for (free it), or
 * NULL. */
char *drxfs_hidden_zarr_path(const char *path);
/* path was renamed over: a zarr/ key's hidden records are done (nothing
 * to remove at the last close).  Hidden name path was removed: records
 * dropped. */
void drxfs_hidden_replaced(const char *path);
/* Whether hidden name path is a zarr/ file's that was removed or replaced
 * already: its unlink at the last close only drops the record. */
bool drxfs_hidden_zarr_done(const char *path);
void drxfs_hidden_unlinked(const char *path);
/* An open file of store inode dev/ino was released: when it was the last
 * open of a hidden object, the object is removed. */
/* A release: drxfs_hidden_releasing before the file stops counting as
 * open (its descriptor closed, its open count dropped), so that an unlink
 * racing with it finds the file open or released a moment ago, never
 * neither; drxfs_hidden_released after. */
void drxfs_hidden_releasing(dev_t dev, ino_t ino);
void drxfs_hidden_released(dev_t dev, ino_t ino);
/* Unmount: removes the hidden objects left. */
void drxfs_hidden_shutdown(void);
/* rename over an open file: libfuse hides the target (drxfs_hidden_hide),
 * then renames the source onto its name.  drxfs_hidden_pending_take(to),
 * first in a rename: whether this thread's last hiding was of to, by the
 * same process.  drxfs_hidden_same_file(src, to_rel) then: 1 when src is
 * that very file (another hard link of it), after giving to_rel back (a
 * link to the hidden object): the rename has nothing to do (POSIX);
 * 0 when it is another file, or -errno.  drxfs_hidden_pending_end: any
 * other path resolved on the thread (drxfs_node.c). */
bool drxfs_hidden_pending_take(const char *to);
int drxfs_hidden_same_file(const struct drxfs_node *src, const char *to_rel);
/* The rename that followed a hiding of its target failed (the source gone,
 * say, when the kernel held a name another mount removed): the hidden
 * object gets to_rel back, as a rename that fails leaves its target. */
int drxfs_hidden_give_back(const char *to_rel);
void drxfs_hidden_pending_end(void);

/* drxfs_names.c: refuses names the store reserves; -EEXIST when the name
 * already stands for something.  rel: the child's store path from
 * drxfs_resolve_new(), whose parent is not looked up again. */
int drxfs_check_new_name(const char *path, const char *rel, const char *name, bool at_root);

/* st_ino of an array's or view's directory or file (no store inode of its
 * own): a hash of its mount path dir[/name], top bit set, so far from a
 * store's inode numbers; the same for stat, fstat and readdir. */
ino_t drxfs_virtual_ino(const char *dir, const char *name);

/* drxfs_pass.c and drxfs_names.c: the operations, dispatching to the array
 * and striped code. */
int drxfs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
int drxfs_op_access(const char *path, int mask);
int drxfs_op_readlink(const char *path, char *buf, size_t size);
/* drxfs_types.c: the type the kernel was last told for a path.  Records
 * mode's type for path; -ESTALE when the path was last told another type
 * (it changed behind the mount: the kernel looks the name up again). */
int drxfs_type_told(const char *path, mode_t mode);
/* A name this mount makes or removes: no type known. */
void drxfs_type_forget(const char *path);
/* A rename through this mount: to takes from's type. */
void drxfs_type_moved(const char *from, const char *to);
/* -ESTALE for an open of path that found what the kernel could not hold
 * (gone, or of another type), or err when it was just said for the same
 * path (the kernel's one retry, after looking the name up again). */
int drxfs_stale_once(const char *path, int err);
/* rc, or ESTALE once (drxfs_stale_once) when it is ENOENT: a call by path
 * on a name the kernel holds but the store has no more (removed through
 * another mount) left the kernel's entry for later calls (rmdir of the
 * name said ENOTDIR from it); the retry looks the name up again.  For
 * calls by path only: an fd's call, whose ESTALE nothing retries, keeps
 * its ENOENT where the daemon can tell. */
int drxfs_gone(const char *path, int rc);
/* The caller's retry of a stale open of path, if any, is over (an open of
 * it succeeded, or a create): the next ESTALE is a new one. */
void drxfs_stale_done(const char *path);
int drxfs_op_mknod(const char *path, mode_t mode, dev_t rdev);
int drxfs_op_mkdir(const char *path, mode_t mode);
int drxfs_op_unlink(const char *path);
int drxfs_op_rmdir(const char *path);
int drxfs_op_symlink(const char *target, const char *path);
int drxfs_op_rename(const char *from, const char *to, unsigned int flags);
int drxfs_op_link(const char *from, const char *to);
int drxfs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int drxfs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int drxfs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int drxfs_op_open(const char *path, struct fuse_file_info *fi);
int drxfs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int drxfs_op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi);
int drxfs_op_write(const char *path, const char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi);
int drxfs_op_statfs(const char *path, struct statvfs *sv);
int drxfs_op_flush(const char *path, struct fuse_file_info *fi);
/* drxfs_locks.c: flock and fcntl locks, taken on the store's files */
int drxfs_op_lock(const char *path, struct fuse_file_info *fi, int cmd, struct flock *fl);
int drxfs_op_flock(const char *path, struct fuse_file_info *fi, int op);
int drxfs_op_release(const char *path, struct fuse_file_info *fi);
int drxfs_op_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int drxfs_op_opendir(const char *path, struct fuse_file_info *fi);
int drxfs_op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int drxfs_op_releasedir(const char *path, struct fuse_file_info *fi);
int drxfs_op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);
int drxfs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);
int drxfs_op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi);
off_t drxfs_op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi);
int drxfs_op_setxattr(const char *path, const char *name, const char *value, size_t size,
                      int flags);
int drxfs_op_getxattr(const char *path, const char *name, char *value, size_t size);
int drxfs_op_listxattr(const char *path, char *list, size_t size);
int drxfs_op_removexattr(const char *path, const char *name);

/* An open file. */
struct drxfs_arr;
struct drxfs_sfile;
struct drxfs_zfile;
struct drxfs_fh {
    enum drxfs_kind kind;
    int fd;                /* DRXFS_PLAIN */
    struct drxfs_arr *arr; /* array kinds */
    int nwords;            /* view words of the path opened */
    bool read_seen;        /* a read happened (prefetch is asked once) */
    char *prefetch_path;   /* store path of the array, when prefetch applies */
    char **words;          /* its view words, for drx-load */
    struct drx_view view;  /* resolved at open */
    char *text;            /* .npy or netCDF header, or info JSON */
    size_t text_len;
    struct drx_nc_records nc_rec; /* DRXFS_ANC: its records (coord_data: nc_coord) */
    void *nc_coord;               /* the record coordinate's elements, or NULL */
    struct stat times;      /* DRXFS_ANC: the .xmd's and coordinates' latest
                             * times at open, beside the .xta's (fgetattr);
                             * DRXFS_AINFO: the .xmd's stat at open */
    struct drxfs_sfile *sf; /* DRXFS_STRIPED */
    ino_t ino;              /* array kinds: st_ino, from the path opened */
    struct drxfs_zfile *zf; /* DRXFS_ZARR */
    char *kpath;            /* mount path opened, for the kernel cache records */
    char *kkey;             /* ... and its store object (drxfs_kc_*) */
    bool kcounted;          /* counted by drxfs_kc_open() */
    uint64_t kshape;        /* ... on this shape (drxfs_pass.c, kc_shape), 0: not known */
    bool append;            /* DRXFS_STRIPED: O_APPEND at the last write (atomic;
                             * drxfs_op_write): writes at the end */
    char *lkpath;           /* not a store file: the mount path opened, which
                             * its locks are kept by (drxfs_locks.c) */
    bool created;           /* DRXFS_STRIPED: made by this handle's create, and
                             * libfuse's getattr of the new entry not yet
                             * answered (from the handle, not the path) */
    bool by_create;         /* opened by a create that found the name made
                             * (drxfs_op_create): libfuse's getattr right after,
                             * by the path, is answered from the handle */
    uid_t share_uid;        /* charged share_cost of the daemon's descriptors */
    unsigned share_cost;    /* and share_bytes of its memory (drxfs_share.c) */
    size_t share_bytes;
    bool closing;           /* its RELEASE was taken from the device (atomic;
                             * drxfs_order.c): no process holds it */
};

/* fh's RELEASE was taken from the device, to be handled. */
static inline void drxfs_fh_closing(struct drxfs_fh *fh)
{
    __atomic_store_n(&fh->closing, true, __ATOMIC_RELEASE);
}

/* drxfs_order.c: the order of the kernel's requests.  The request in buf
 * (len bytes, as read from the device) was taken in by this thread, which
 * handles it next. */
void drxfs_order_taken(const void *buf, size_t len);
/* drxfs_names.c: the request in buf, read from fd, is a RENAME of a name
 * onto itself, which libfuse would wait on for ever: answered ESTALE on
 * fd (the kernel looks the names up again), true. */
bool drxfs_rename_self(int fd, const void *buf, size_t len);
/* drxfs_names.c: the type node n shows (its S_IFMT; not for zarr/ nodes). */
mode_t drxfs_node_type(const struct drxfs_node *n);
/* The opcode (FUSE_*) of the request the calling thread handles, 0 when
 * not known. */
uint32_t drxfs_order_opcode(void);
/* Waits until every request the kernel sent before the calling thread's
 * was taken in (a RELEASE among them marks its file closing), at most
 * 50 ms; false when one did not come in time, or the thread's request is
 * not known. */
bool drxfs_order_wait(void);
/* drxfs_notify.c: the attributes the calling thread answers (its GETATTR)
 * are to expire at once: the kernel takes them (its size, which reads stop
 * at) and asks again at the next stat. */
void drxfs_reply_expires(void);

/* How many worker threads there are (-o max_threads; single: -s): at most
 * half of them wait for a lock (drxfs_locks.c). */
void drxfs_locks_threads(unsigned max_threads, bool single);
/* A request begins to wait in a daemon thread (a blocked lock; an open
 * waiting for a lease's break, drxfs_plain.c): true, or false when half
 * the worker threads wait already (logged, saying what was refused), so
 * that the other half serves on.  drxfs_wait_end when done. */
bool drxfs_wait_begin(const char *what);
void drxfs_wait_end(void);
/* How many worker threads writes to zarr/ temporaries may wait in for
 * memory (half of max_threads; none with -s). */
void drxfs_zarr_threads(unsigned max_threads, bool single);
/* Whether some owner holds locks (or a description) on the file fh is
 * open on: its close must then come as a FLUSH, which lets the closer's
 * locks go. */
bool drxfs_locks_held(const struct drxfs_fh *fh);
/* The locks taken through fh (drxfs_locks.c) let go: its RELEASE. */
void drxfs_locks_release(const struct drxfs_fh *fh);

static inline struct drxfs_fh *drxfs_fh_of(const struct fuse_file_info *fi)
{
    return (struct drxfs_fh *)(uintptr_t)fi->fh;
}

/* What each kind of node does: the FUSE handlers (drxfs_pass.c) look the
 * table up by kind and call it, with no kind tests of their own.  Each
 * module defines the tables of its kinds.  Operations on a node take it
 * (path given) or an open file fh (n NULL: libfuse passed no path); those
 * on open files only exist for kinds that open.  A NULL entry: flush and
 * fsync do nothing, fallocate is EOPNOTSUPP, lseek ENOSYS (the kernel's
 * answer for SEEK_DATA/SEEK_HOLE: all data). */
#define DRXFS_FGETATTR_NEW 2
struct drxfs_kind_ops {
    /* Attributes of n, whose mount path is path. */
    int (*getattr)(const struct drxfs_node *n, const char *path, struct stat *st);
    /* Attributes of an open file; 1: resolve its path instead;
     * DRXFS_FGETATTR_NEW: those of the entry its create just made,
     * reported without a signature (drxfs_kc_seen). */
    int (*fgetattr)(struct drxfs_fh *fh, const char *path, struct stat *st);
    int (*chmod)(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode);
    int (*chown)(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid);
    int (*utimens)(const struct drxfs_node *n, struct drxfs_fh *fh, const struct timespec tv[2]);
    int (*truncate)(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size);
    /* Opens n (fi->fh set on success). */
    int (*open)(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi);
    int (*read)(struct drxfs_fh *fh, char *buf, size_t size, off_t off);
    int (*write)(struct drxfs_fh *fh, const char *buf, size_t size, off_t off);
    int (*flush)(struct drxfs_fh *fh);
    int (*fsync)(struct drxfs_fh *fh, int datasync);
    void (*release)(struct drxfs_fh *fh);
    int (*fallocate)(struct drxfs_fh *fh, int mode, off_t off, off_t len);
    off_t (*lseek)(struct drxfs_fh *fh, off_t off, int whence);
};
extern const struct drxfs_kind_ops drxfs_dir_ops, drxfs_plain_ops, drxfs_special_ops,
    drxfs_link_ops;                           /* drxfs_plain.c */
extern const struct drxfs_kind_ops drxfs_array_ops;   /* drxfs_array_attr.c */
extern const struct drxfs_kind_ops drxfs_striped_ops; /* drxfs_striped_layout.c */
extern const struct drxfs_kind_ops drxfs_zarr_ops;    /* drxfs_zarr.c */
const struct drxfs_kind_ops *drxfs_ops_of(enum drxfs_kind k);

/* drxfs_array_table.c */
/* What a handle last saw of a store file: a change means another writer. */
struct drxfs_sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
};

/* An array handle of the table (see drxfs_array_table.c for its locks). */
struct drxfs_arr {
    char *key; /* store-relative name without suffix */
    struct drx_array *a;
    pthread_rwlock_t lock;
    bool rdonly;   /* the .xta could only be opened read-only */
    int rdonly_rc; /* then what a write gets: -EROFS on a read-only file
                    * system, else -EACCES */
    bool shared;   /* opened read-only: the .xta had other names (EMLINK) */
    bool detached; /* no longer in the table (renamed, replaced) */
    int pin;       /* directory descriptor a's path goes through, or -1 */
    /* Below: protected by table.mutex. */
    unsigned refs;
    unsigned nopen;
    size_t cache_set;
    struct drxfs_arr *prev, *next;
    /* Protected by lock (exclusive to write). */
    struct drxfs_sig xmd; /* .xmd as last read */
    struct drxfs_sig xta; /* .xta when the cache was last emptied */
};

/* The table of open arrays: one handle per array, shared by every open file
 * and lookup, refcounted.  drxfs_arr_get() checks the .xmd it was given
 * (n->st) against what the handle last read and reloads it when another
 * process extended the array. */
int drxfs_arr_get(const struct drxfs_node *n, struct drxfs_arr **out);
void drxfs_arr_put(struct drxfs_arr *e);
/* Logs a failed read of size bytes at off of e's array (rc, -errno); for
 * EIO with the reason when the .xta was cut short behind the handle.
 * e->lock held (read). */
void drxfs_arr_read_failed(struct drxfs_arr *e, size_t size, uint64_t off, int rc);
/* The handle's array with its read lock taken (metadata stays put until
 * drxfs_arr_unlock), and whether the mount may write it. */
struct drx_array *drxfs_arr_rdlock(struct drxfs_arr *e);
void drxfs_arr_unlock(struct drxfs_arr *e);
bool drxfs_arr_writable(const struct drxfs_arr *e);
/* Whether e's nodes show no w (mode and ACL): a read-only mount, or an
 * array the daemon may not write.  One on a file system gone read-only
 * keeps its w, as the store's own files do: the kernel's permission
 * check (default_permissions) would else answer a user EACCES before
 * the daemon's EROFS. */
static inline bool drxfs_arr_shows_ro(const struct drxfs_arr *e)
{
    return (e->rdonly && e->rdonly_rc != -EROFS) || drxfs.ro;
}
/* Its store-relative name (no suffix). */
const char *drxfs_arr_key(const struct drxfs_arr *e);
/* Forgets cached handles (after rename or removal in the store): open files
 * keep theirs, new lookups reopen.  rel NULL: all. */
void drxfs_arr_forget(const char *rel);
void drxfs_arr_shutdown(void);
/* Takes e out of the table: it serves only those who hold it. */
void drxfs_arr_detach(struct drxfs_arr *e);
/* Counts an open file of e (its chunk cache is emptied when the .xta changed
 * since, and cache.bytes shared again); drxfs_arr_closed() uncounts it. */
void drxfs_arr_opened(struct drxfs_arr *e);
/* The .xta of e stat'ed now (st): when it changed since e last looked
 * (another process, another node wrote chunks), its chunk cache is
 * emptied.  At open, and at each getattr of a data file, which the kernel
 * asks before it reads an open file again once its attributes expired: on
 * a network file system, whose watch sees nothing of another node, that
 * is what makes a descriptor opened before another node's write read the
 * new bytes (the kernel drops its pages when the mtime it gets changed).
 * Takes e->lock: not to be held. */
void drxfs_arr_xta_seen(struct drxfs_arr *e, const struct stat *st);
void drxfs_arr_closed(struct drxfs_arr *e);
/* 0 when the caller may have every bit of want (4 r, 2 w) of the .xta
 * (xmd: the .xmd) handle e of the array of store name rel reads and
 * writes, and reaches it by its name (owner, mode, ACL, the directories
 * on its way), else -EACCES (logged); root may all.  The kernel checked
 * the node it holds, whose store files a user who may write a directory
 * on the way can have swapped for another user's since, behind the mount
 * (a rename of the directory holding them: drxfs_plain.c says how); the
 * handle's descriptors are the files served (data, its metadata). */
int drxfs_arr_caller_may(struct drxfs_arr *e, const char *rel, unsigned want, bool xmd);

/* drxfs_acl.c: POSIX ACLs, which the kernel checks (FUSE_POSIX_ACL) */
#define DRXFS_ACL_ACCESS "system.posix_acl_access"
#define DRXFS_ACL_DEFAULT "system.posix_acl_default"
/* An ACL in xattr form is at most a page (511 entries), as the kernel asks */
#define DRXFS_ACL_MAX 4096
/* How a node's permissions follow its store file's: dir adds x wherever r
 * is (then keep applies); keep is the rwx bits kept. */
struct drxfs_acl_map {
    bool dir;
    unsigned keep;
};
#define DRXFS_ACL_SAME ((struct drxfs_acl_map){false, 7})
/* name is one of the two ACL attributes. */
bool drxfs_acl_name(const char *name);
/* The ACL src (n bytes, or -errno as getxattr failed) mapped by map into
 * value (size 0: only its length): its length, -ENODATA when there is
 * none (also when the file system keeps none), -ERANGE, -EIO when src is
 * not an ACL. */
int drxfs_acl_mapped(const unsigned char *src, ssize_t n, struct drxfs_acl_map map, char *value,
                     size_t size);
/* The same of the access ACL of the file open at fd, or of attribute name
 * of store entry rel. */
int drxfs_acl_of_fd(int fd, struct drxfs_acl_map map, char *value, size_t size);
int drxfs_acl_of_entry(const char *rel, const char *name, struct drxfs_acl_map map, char *value,
                       size_t size);
/* Whether user uid, of groups (ngroups, his primary one among them), may
 * have every bit of want (4 r, 2 w, 1 x) of store entry rel of stat st,
 * as the kernel decides from the mode bits and the access ACL (a failure
 * to read the ACL refuses). */
bool drxfs_acl_may(const char *rel, const struct stat *st, uid_t uid, const gid_t *groups,
                   int ngroups, unsigned want);
/* Whether the caller may have every bit of want of the file open at fd
 * (any descriptor, O_PATH too), of stat st, as drxfs_acl_may decides; root
 * may all.  The kernel checked the node it holds, which the store's name
 * may no longer be (a rename behind the mount between its check and our
 * call by name): what the daemon does as root for a caller it checks again
 * on what it opened (drxfs_plain.c). */
bool drxfs_caller_may_fd(int fd, const struct stat *st, unsigned want);
/* Store entry rel opened O_PATH | O_NOFOLLOW with the caller's file system
 * IDs and groups (the thread's own), else as the daemon (root's call, a
 * daemon not run as root, a name in the daemon's own .drx/hidden: files
 * removed while open, no user's to reach): the file he reaches by that name now, each directory on the way
 * searchable to him (a directory only root may enter, swapped in for one
 * of his behind the mount, hides files that the modes alone would not).
 * The descriptor, or -ENOENT, -ENOTDIR or -EACCES.  Opening that file for
 * him (drxfs_reopen) after checking its mode and ACL
 * (drxfs_caller_may_fd) serves him what he reached, whatever the name
 * holds by then: no check by name again, which a file renamed over the
 * name every millisecond defeated. */
int drxfs_caller_entry_open(const char *rel);
/* drxfs_caller_entry_open of rel, a file of type (S_IFREG, S_IFDIR) whose
 * owner, mode and ACL give the caller every bit of want (4 r, 2 w): the
 * descriptor, with its stat in *st; -ESTALE when it is of another type
 * (the name replaced: the kernel walks it again), -EACCES (logged), or
 * the open's -errno. */
int drxfs_caller_open_checked(const char *rel, mode_t type, unsigned want, struct stat *st);
/* The file open at descriptor pfd (O_PATH too) opened anew with flags,
 * through its /proc/self/fd name, as the daemon: the descriptor or
 * -errno. */
int drxfs_reopen(int pfd, int flags);
/* Whether the caller reaches store entry rel as the file of stat st (its
 * device and inode) now: 0, -EACCES, -ENOENT, or -ESTALE when the name
 * leads to another file than st's now: replaced behind the mount, by an
 * attribute set (a new .xmd) as well as a swap, so that the caller takes
 * what the name holds (afresh) and checks again, REACH_TRIES times.  Each
 * try is checked in full, so more tries give a swapper nothing; 3 still
 * refused a reader of a file renamed over every 0.5 ms on a loaded
 * machine (CI, 2026-12-07): drxfs_caller_entry_open needs none.  0 where
 * drxfs_caller_entry_open opens as the daemon. */
int drxfs_caller_reach(const char *rel, const struct stat *st);
#define REACH_TRIES 16
/* The same for the store entry of node n as resolved (n->st: the entry
 * itself, an array's .xmd, a striped file's metafile): 0, or -EACCES
 * (logged) or -ENOENT, or -ESTALE (not logged) when the name holds
 * another file now (to be resolved again).  What a lookup, getattr or listing shows a caller
 * other than root, whose kernel checked the directories it holds: one
 * of them swapped behind the mount for root's 0700 directory showed him
 * the names and attributes of its files. */
int drxfs_node_reached(const struct drxfs_node *n);
/* Each checks, for a caller other than root, the entry the thread's next
 * drx_store_entry_chmod/_chown/_utimens/_xattr call changes, on the
 * descriptor that call acts through (drx_store_entry_guard), opened as
 * the caller reaches it (drxfs_caller_entry_open), as the kernel checked
 * the node it holds: the caller owns it (chmod, chown, an
 * ACL), or owns it or, for times set to now only, may write it (times),
 * or may write it (other attributes).  drxfs_guard_done after the call. */
void drxfs_guard_owner(void);
void drxfs_guard_times(const struct timespec tv[2]);
void drxfs_guard_xattr(const char *name);
/* The same for a read of attribute name (NULL: the list of names): the
 * caller reaches the entry, and may read it for a user.* value. */
void drxfs_guard_xattr_read(const char *name);
/* For the next call that makes or removes a name (drx_store_entry_mkdir,
 * _mknod, _symlink, _unlink, _rename, _link): the directories it changes,
 * opened as the caller reaches them, his to write and search, and in a
 * sticky one his or the entries of removed (two store names, NULL or
 * made: what goes or is replaced) his, as the kernel checked the
 * directory node it holds, which a directory swapped behind the mount
 * (root's in a directory of his) is not. */
void drxfs_guard_dir(const char *removed[2]);
/* The same for drx_store_entry_link of names[0] to names[1]: the
 * caller may write and search the directory of names[1], and search
 * that of names[0], as link(2) asks. */
void drxfs_guard_link(const char *names[2]);
/* The same for a directory the daemon holds open as dfd (a pin), to make
 * or remove store name rel in it: 0 for root or at the store's root,
 * -ESTALE when the caller's walk of its name leads elsewhere now, else
 * -EACCES or -EPERM (removed: the entry's name in it, for a sticky
 * directory's rule). */
int drxfs_caller_dir_may(int dfd, const char *rel, const char *removed);
/* The same for a directory the caller needs only to search (a link's
 * source's). */
int drxfs_caller_dir_search(int dfd, const char *rel);
void drxfs_guard_done(void);
/* The same checks of a file the caller holds open (of stat st, at fd;
 * who names it in the log): the kernel checked the attributes it holds,
 * which may be another file's than the open one (its name's, renamed over
 * behind the mount) or old (a chown behind the mount).  0 for root, or
 * -EPERM or -EACCES (logged). */
int drxfs_held_owner(const struct stat *st, const char *who);
int drxfs_held_times(int fd, const struct stat *st, const struct timespec tv[2], const char *who);
/* The caller's groups into groups (max of them): his primary group, then
 * his supplementary ones (fuse_getgroups); their count. */
#define DRXFS_CALLER_GROUPS 257
int drxfs_caller_groups(gid_t *groups, int max);
/* The thread's file system IDs and groups, made the caller's by
 * drxfs_ids_caller (when drxfs_caller_entry_open would open rel as him:
 * `on`) until drxfs_ids_restore. */
struct drxfs_ids {
    bool on;
    long ns;
    int ouid, ogid;
    gid_t saved[DRXFS_CALLER_GROUPS];
};
int drxfs_ids_caller(struct drxfs_ids *ids, const char *rel);
void drxfs_ids_restore(struct drxfs_ids *ids);
/* Whether gid is one of the caller's groups. */
bool drxfs_caller_in_group(gid_t gid);
/* The system call the caller makes, blocked in it while the daemon serves
 * the request it sent, by /proc/TID/syscall: its number in *nr and its
 * first two arguments in args.  0, or -1 when not known (not readable:
 * another pid namespace, a daemon not root under Yama's ptrace_scope; or
 * the caller gone). */
int drxfs_caller_syscall(long *nr, unsigned long args[2]);
/* Whether the caller's system call is fchmod, fchown or futimens: of an
 * open file, which the kernel sends by its node alone, with no handle (it
 * sends one with a truncation only).  1, 0, or -1 when not known. */
int drxfs_caller_by_fd(void);
/* The access ACL req (n bytes) set through a node that shows its store
 * file's permissions by map, made that file's into out (n bytes): each
 * entry takes the bits the node shows of it from req (a directory's x
 * where r is dropped: drxfs_acl_mapped shows it) and keeps the others
 * from the file's ACL cur (ncur bytes; ncur <= 0: none, its mode's).  n
 * or -EINVAL (req is not an ACL), -EIO (cur is not). */
int drxfs_acl_merge(const unsigned char *req, size_t n, const unsigned char *cur, ssize_t ncur,
                    mode_t mode, struct drxfs_acl_map map, unsigned char *out);

/* drxfs_coord.c */
/* Why the array of store name coord may not be a coordinate variable of
 * the array of store name rel (in its data.nc and zarr/), or NULL when it
 * may: it must be trusted as rel's own writers are (its owner root, rel's
 * owner or of rel's project group; nobody else may write it, by mode or
 * ACL), and readable by everyone whom rel's mode bits let read rel. */
const char *drxfs_coord_refusal(const char *rel, const char *coord);

/* drxfs_array.c */
/* The attributes of an array kind node (no chunk data is read). */
int drxfs_array_getattr(const struct drxfs_node *n, struct stat *st);
/* The same for an open file (libfuse passes no path then): its view as
 * resolved at open. */
int drxfs_array_fgetattr(struct drxfs_fh *fh, struct stat *st);
/* Whether the .xta of fh's array has a set-ID bit (or cannot be looked
 * at): what a write's check needs before the attributes, whose reading
 * (drxfs_arr_xta_seen) empties the chunk cache after any write. */
bool drxfs_array_setid(struct drxfs_fh *fh);
/* The store files of the array of node n or handle fh (not a view's:
 * -EPERM), for the clearing of set-ID bits at a write or truncation
 * (drxfs_killpriv.c): the .xta in fds[0] and the .xmd in fds[1] (-1
 * where none), the handle's own (duplicated) or, for a node, the names
 * opened O_PATH as the caller reaches them (drxfs_caller_entry_open).
 * 0 or -errno. */
int drxfs_array_kill_fds(const struct drxfs_node *n, struct drxfs_fh *fh, int fds[2]);
/* Store-relative name (no suffix) of the array of an open file. */
const char *drxfs_array_fh_rel(const struct drxfs_fh *fh);
int drxfs_array_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi);
int drxfs_array_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off);
int drxfs_array_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off);
int drxfs_array_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size);
int drxfs_array_fsync(struct drxfs_fh *fh, int datasync);
void drxfs_array_release(struct drxfs_fh *fh);
/* Stops the helper thread of split reads (at unmount). */
void drxfs_array_split_stop(void);
/* True when the array or view n has a data.nc (not complex, not empty). */
bool drxfs_array_has_nc(const struct drxfs_node *n);
/* drxfs_array_attr.c */
/* user.NAME extended attributes of an array directory (kind DRXFS_ARRAY):
 * the array's attributes.  Other namespaces: ENOTSUP. */
int drxfs_array_setxattr(const struct drxfs_node *n, const char *name, const char *value,
                         size_t size, int flags);
int drxfs_array_getxattr(const struct drxfs_node *n, const char *name, char *value, size_t size);
/* The access ACL of an array kind node (drxfs_acl.c), its .xmd's or .xta's
 * mapped as its mode is. */
int drxfs_array_getacl(const struct drxfs_node *n, char *value, size_t size);
/* setfacl of an array kind node: ACL attribute name set to value (size
 * bytes; NULL: removed) on the array's .xta and .xmd as a chmod of the
 * node changes their modes. */
int drxfs_array_setacl(const struct drxfs_node *n, const char *name, const char *value,
                       size_t size);
int drxfs_array_listxattr(const struct drxfs_node *n, char *list, size_t size);
int drxfs_array_removexattr(const struct drxfs_node *n, const char *name);

/* drxfs_info.c: the length of the info JSON of view v of array node n
 * (metadata m), formatted once per metadata generation. */
int drxfs_info_size(const struct drxfs_node *n, const struct drx_array_meta *m,
                    const struct drx_view *v, size_t *len);

/* drxfs_zarr.c: the zarr/ group (README, "Zarr").  The hooks that take a
 * path return 1 when the path is not in a zarr group (the caller goes on). */
/* Whether the array at store name rel may have a zarr/ group: one named
 * like a Zarr v2 metadata key (.zgroup, .zattrs, .zarray, .zmetadata)
 * would be a variable of that name beside the group's own file, whose
 * keys no reader reaches (xarray read its elements as missing). */
bool drxfs_zarr_name_ok(const char *rel);
int drxfs_zarr_step(struct drxfs_node *n, const char *name);
int drxfs_zarr_getattr(const struct drxfs_node *n, struct stat *st);
/* The access ACL of a zarr/ node: its array's .xta's, mapped as its mode. */
int drxfs_zarr_getacl(const struct drxfs_node *n, char *value, size_t size);
int drxfs_zarr_fgetattr(struct drxfs_fh *fh, struct stat *st);
/* Opens node n at mount path path; chunk keys and metadata files keep
 * their pages across opens while their signatures hold (drxfs_kc_open). */
int drxfs_zarr_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi);
int drxfs_zarr_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int drxfs_zarr_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off);
int drxfs_zarr_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off);
int drxfs_zarr_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size);
void drxfs_zarr_release(struct drxfs_fh *fh);
/* Unlink of a temporary or a chunk key (the key then reads as the fill);
 * keys are refused (EPERM, logged) when no_keys: the caller was refused
 * removing the array's files a moment ago (drxfs_names.c: rm -r). */
int drxfs_zarr_unlink(const struct drxfs_node *n, bool no_keys);
/* libfuse hides open zarr/ file n (drxfs_hidden_hide): 0 when it is
 * removed at the last close (a temporary), 1 when nothing is left to do
 * then (a key removed now, as drxfs_zarr_unlink, or one a temporary of
 * zarr's waits to be renamed over), or -errno (its unlink's). */
int drxfs_zarr_hide(const struct drxfs_node *n, bool no_keys);
int drxfs_zarr_rename(const char *from, const char *to, unsigned int flags);
struct drxfs_zdir;
int drxfs_zarr_opendir(const struct drxfs_node *n, struct drxfs_zdir **out);
int drxfs_zarr_readdir(struct drxfs_zdir *zd, const char *path, void *buf, fuse_fill_dir_t fill,
                       off_t off);
void drxfs_zarr_closedir(struct drxfs_zdir *zd);

/* drxfs_striped.c: striped files (NAME.nafs).
 * One drx_stripe handle per file, shared by its opens (stripe.h asks for
 * it: each handle has its own idea of the size). */
#define DRXFS_STRIPE_XATTR "user.drx.stripe"
int drxfs_striped_getattr(const struct drxfs_node *n, struct stat *st);
int drxfs_striped_fgetattr(struct drxfs_fh *fh, struct stat *st);
/* The same for libfuse's getattr of the entry the create just made. */
int drxfs_striped_fgetattr_new(struct drxfs_fh *fh, struct stat *st);
int drxfs_striped_open(const struct drxfs_node *n, struct fuse_file_info *fi);
int drxfs_striped_create(const char *rel, mode_t mode, struct fuse_file_info *fi);
int drxfs_striped_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off);
int drxfs_striped_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off);
int drxfs_striped_flush(struct drxfs_fh *fh);
int drxfs_striped_fallocate(struct drxfs_fh *fh, int mode, off_t off, off_t len);
off_t drxfs_striped_lseek(struct drxfs_fh *fh, off_t off, int whence);
int drxfs_striped_fsync(struct drxfs_fh *fh, int datasync);
/* Asked to commit (user.drx.commit): every file open for writing through
 * the mount is synced and its size recorded, as its fsync would.  A close
 * returns before the kernel's RELEASE reaches the daemon, so a file closed
 * just before the request may still be open here; and a program asking
 * for the commit (drx, drx-load) must read the sizes the mount shows. */
void drxfs_striped_commit_open(void);
void drxfs_striped_release(struct drxfs_fh *fh);
/* The batched commit's barrier: drx_stripe_sync_store() of the store. */
int drxfs_striped_sync_store(void);
/* These take a node (path given) or an open file (n NULL). */
int drxfs_striped_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size);
/* The metafile of a node or open file (-ENOENT for one removed), for
 * chmod/chown/utimens, into out, and its name without suffix into key
 * (both PATH_MAX): copies, since a rename of a directory above replaces
 * an open file's key meanwhile. */
int drxfs_striped_meta_rel(const struct drxfs_node *n, struct drxfs_fh *fh, char *out, char *key);
/* After an access ACL was set on striped file n's metafile: its mode bits
 * (which setfacl changes as chmod would) carried to the subfiles. */
int drxfs_striped_acl_set(const struct drxfs_node *n);
int drxfs_striped_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode);
int drxfs_striped_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid);
int drxfs_striped_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                          const struct timespec tv[2]);
int drxfs_striped_unlink(const struct drxfs_node *n);
/* A second name to_rel (store-relative, no suffix; a long name is stored
 * under its stem) for striped file n. */
int drxfs_striped_link(const struct drxfs_node *n, const char *to_rel);
/* Renames striped file src to store name to_rel (a long name: its stem);
 * dst is what to_rel was
 * (NULL, a plain file, a symlink or a striped file), replaced atomically. */
int drxfs_striped_rename(const struct drxfs_node *src, const struct drxfs_node *dst,
                         const char *to_rel);
/* Directory from was renamed to (store-relative): open striped files below
 * it follow. */
void drxfs_striped_dir_renamed(const char *from, const char *to);
void drxfs_striped_shutdown(void);
/* True while the daemon may hold a handle of the striped file whose
 * metafile is inode dev/ino. */
bool drxfs_striped_is_open(dev_t dev, ino_t ino);
/* The metafile (store-relative, into out, PATH_MAX) of the striped file
 * open through this mount under mount path path: 0, or -ENOENT. */
int drxfs_striped_open_meta(const char *path, char *out);
/* The metafile's inode of an open striped file. */
void drxfs_striped_ino(const struct drxfs_fh *fh, dev_t *dev, ino_t *ino);
/* Logs a failed libcore call on rel (expected failures at debug) and
 * returns rc. */
int drxfs_striped_log_err(const char *what, const char *rel, int rc, const struct drx_err *err);

/* drxfs_striped_layout.c: statfs over the store and its stripe
 * directories; user.drx.stripe. */
int drxfs_striped_statfs(struct statvfs *sv);
int drxfs_striped_setxattr(const struct drxfs_node *n, const char *value, size_t size, int flags);
int drxfs_striped_getxattr(const struct drxfs_node *n, char *value, size_t size);
/* The layout of new striped file rel (its nearest directory's
 * user.drx.stripe, else the store's), for a path libcore cannot walk up
 * (drxfs_lib_path gave it through a directory's descriptor). */
struct drx_stripe_layout;
int drxfs_striped_layout_for(const char *rel, struct drx_stripe_layout *out);
/* Gives the caller the metafile and the subfiles of new file f at rel. */
struct drx_stripe;
void drxfs_striped_chown_new(struct drx_stripe *f, const char *rel, mode_t mode);

/* drxfs_kcache.c: the kernel's attribute and page caches.  Keys are
 * store-relative names (an array's, for every view of it); paths are mount
 * paths.  Without drxfs_kc_start() (or after stop) nothing is recorded. */
void drxfs_kc_start(struct fuse *f);
/* drxfs_notify.c: libfuse reads and sends through drxfs's io from here on
 * (which grants shared mmap of direct_io files in the INIT reply), and,
 * with relay (the kernel cache), page invalidations go through a child
 * process, so that a kill -9 of the daemon never leaves one waiting on a
 * page in the kernel.  After daemonizing, before the session loop; 0, or
 * -1 when the relay did not start (logged; invalidations then run in the
 * daemon, and a relay is tried again at the next page invalidation). */
struct fuse_session;
int drxfs_notify_start(struct fuse_session *se, bool relay);
/* The mount stops: the relay answers what the kernel still queues with
 * EIO while an invalidation of its waits (the workers have stopped), and
 * later invalidations are skipped, so that the thread sending them can be
 * joined. */
void drxfs_notify_closing(void);
/* At the top of main(): when this process is the relay, exec'd by the
 * daemon (drxfs_notify.c), it runs as such and never returns. */
void drxfs_relay_entry(int argc, char *argv[]);
/* Ends the relay (after the threads that invalidate have stopped, and
 * after the unmount), continuing it first should it be stopped. */
void drxfs_notify_stop(void);
/* fuse_invalidate_path() of the attributes alone: the pages stay, and no
 * page under I/O is waited for.  fuse_invalidate_path()'s result. */
int drxfs_inval_attrs(struct fuse *f, const char *path);
/* drxfs_init_reply.c, from drxfs_notify.c's io: a request read from the
 * device (len bytes at buf), noted when it is INIT. */
void drxfs_init_request(const void *buf, size_t len);
/* A reply about to be written: when it is the INIT reply and can carry
 * FUSE_DIRECT_IO_ALLOW_MMAP or FUSE_HANDLE_KILLPRIV_V2, true, and v[0..1] is the reply to write
 * instead (of the same length, its argument amended in *out). */
struct iovec;
struct fuse_init_out;
bool drxfs_init_reply(const struct iovec *iov, int count, struct iovec v[2],
                      struct fuse_init_out *out);
/* Whether the next INIT reply asks for FUSE_HANDLE_KILLPRIV_V2 (default
 * yes), and whether the last one granted it: the daemon then removes
 * set-ID bits and capabilities at writes (drxfs_killpriv.c). */
void drxfs_init_want_killpriv(bool want);
bool drxfs_init_killpriv(void);
/* drxfs_killpriv.c: a request read from the device (its flags noted for
 * the worker that read it); before a write(2) of fh, and before a
 * truncation of n or fh (path: the mount path, may be NULL), what the
 * kernel no longer removes (FUSE_HANDLE_KILLPRIV_V2). */
void drxfs_killpriv_request(const void *buf, size_t len);
void drxfs_killpriv_write(struct drxfs_fh *fh, const char *path);
void drxfs_killpriv_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path);
/* At the getattr libfuse makes after a SETATTR that sets nothing, which
 * is chown(file, -1, -1): the set-ID bits it clears; -EPERM when they are
 * another's, whose chown (the SETATTR) is then to fail. */
int drxfs_killpriv_getattr(struct drxfs_fh *fh, const char *path);
/* A chown the kernel flagged (FATTR_KILL_SUIDGID, with killpriv=daemon):
 * before it, true and the file's stat in *before (not a directory); after
 * it (done) its set-group-ID bit goes as on ext4 (the caller was not of
 * the group in `before`). */
bool drxfs_killpriv_chown_before(const struct drxfs_node *n, struct drxfs_fh *fh,
                                 const char *path, struct stat *before);
void drxfs_killpriv_chown(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path,
                          const struct stat *before);
/* Before a fallocate of fh, which the kernel flags not: as a write by a
 * caller without CAP_FSETID unless root. */
void drxfs_killpriv_fallocate(struct drxfs_fh *fh, const char *path);
void drxfs_kc_stop(void);
bool drxfs_kc_active(void);
/* Signature of a stat (h: 0, or a previous signature to extend). */
uint64_t drxfs_kc_sig(uint64_t h, const struct stat *st);
/* Signature of store object rel of kind k as reported now (reported: the
 * attributes given to the kernel, for their size; may be NULL). */
uint64_t drxfs_kc_sig_of(enum drxfs_kind k, const char *rel, const struct stat *reported);
/* Writes through the mount to key so far. */
uint64_t drxfs_kc_writes(const char *key);
/* The kernel was given path's attributes, made from signature sig: an
 * open file's own (shape DRXFS_KC_OWN), or asked by path, of a store
 * object whose shape (what files opened on it keep reading: drxfs_pass.c,
 * kc_shape) is now shape (0: not known). */
#define DRXFS_KC_OWN UINT64_MAX
void drxfs_kc_seen(const char *key, const char *path, uint64_t sig, uint64_t shape);
/* Files of path (under key) open (drxfs_kc_open). */
unsigned drxfs_kc_nopen(const char *key, const char *path);
/* The signature of the bytes of rel (drxfs_kc_page_sig: a striped file's
 * subfiles too) given that of its attributes. */
uint64_t drxfs_kc_page_sig(enum drxfs_kind k, const char *rel, uint64_t attr_sig);
/* Who opens a file, for drxfs_kc_own_size: its handle (a key), and its
 * size, fixed at open (an array file's), or -1. */
struct drxfs_kc_opener {
    const struct drxfs_fh *owner;
    off_t size;
};
/* path is being opened with these signatures (shape: what earlier opens
 * must keep reading: a view's resolution, a striped file's handle, a plain
 * file's inode).  1: the kernel may keep the pages of
 * earlier opens (keep_cache); 0: not, and when the attributes changed too
 * they are invalidated before this returns; both count an open file until
 * drxfs_kc_close().  -1: files opened on another shape of the view are
 * open: this one must bypass the page cache (direct_io).  -2: nothing
 * recorded (no memory). */
int drxfs_kc_open(const char *key, const char *path, uint64_t attr_sig, uint64_t page_sig,
                  uint64_t shape, const struct drxfs_kc_opener *who);
/* owner's open of path is closed (counted: drxfs_kc_open returned >= 0). */
void drxfs_kc_close(const char *key, const char *path, const struct drxfs_fh *owner,
                    bool counted);
/* The size that a stat of path by the calling process shows, when the
 * view's shape is now shape: that of a file the process opened on another
 * shape (an older one: SPEC 4, it keeps reading it), when it has none
 * open on this one; else -1 (the current size). */
off_t drxfs_kc_own_size(const char *key, const char *path, uint64_t shape);
/* drxfs_run.c: fuse_main() in two steps, stopping the kernel cache's
 * thread before fuse_destroy().  drxfs_new: libfuse's options and the
 * session, before the store is opened (0, or fuse_main's exit status);
 * drxfs_new_undo: its end when the store fails; drxfs_run: mount and
 * serve (the exit status). */
int drxfs_new(struct fuse_args *args, const struct fuse_operations *ops);
void drxfs_new_undo(void);
int drxfs_run(void);
/* Lets go of the mount point's flock (cli_apply), once. */
void drxfs_mnt_unlock(void);

/* drxfs_commit.c: batched durability of striped files (commit_interval=).
 * The default window is ext4's own default commit interval (its mount
 * option commit=5): what a program on the local disk already risks, and
 * long enough that a copy of many small files pays one sync per few
 * hundred files (README, Striped files). */
#define DRXFS_COMMIT_INTERVAL 5
/* What a commit does with a file handed over: mark(obj) before the
 * batch's barrier, commit(obj, synced) after it (synced: the barrier
 * succeeded), then release(obj). */
struct drxfs_commit_ops {
    void (*mark)(void *obj);
    /* again: the object was put back before (-EAGAIN: its lock held by
     * another process): this time it is not put back */
    int (*commit)(void *obj, bool synced, bool again);
    void (*release)(void *obj);
};
/* Starts the thread (interval_s 0: none).  barrier: makes durable what
 * every file marked before it wrote, once per batch; 0 or -errno. */
void drxfs_commit_start(unsigned interval_s, int (*barrier)(void));
bool drxfs_commit_active(void);
/* True once the commit is stopping (unmount): a file a commit puts back
 * (-EAGAIN) is not tried again, so the last round waits for what it needs. */
bool drxfs_commit_stopping(void);
/* Hands obj to the next commit; false when there is no commit thread or
 * too much waits (then the caller releases it itself, which records at
 * once). */
bool drxfs_commit_defer(void *obj, const struct drxfs_commit_ops *ops);
/* Releases obj without committing it, if it waits (its name is gone); one
 * already in a running batch is committed as usual. */
void drxfs_commit_forget(void *obj);
/* Commits everything handed over so far before returning. */
void drxfs_commit_now(void);
/* Commits everything and stops (unmount). */
void drxfs_commit_stop(void);
#define DRXFS_COMMIT_XATTR DRX_STORE_COMMIT_XATTR

/* drxfs_share.c: each user's share of the daemon's descriptors and of
 * the memory of files made at open.  init raises the soft limit to the
 * hard one (before the mount); take charges one descriptor to the caller
 * of the request (*who; root is not counted), -EMFILE when he holds his
 * share already; add charges more; hold charges bytes, -ENOMEM past his
 * share; give gives cost descriptors and bytes back; cost is what an open
 * file fh keeps. */
void drxfs_share_init(void);
int drxfs_share_take(uid_t *who);
void drxfs_share_add(uid_t who, unsigned more);
int drxfs_share_hold(uid_t who, size_t bytes);
void drxfs_share_give(uid_t who, unsigned cost, size_t bytes);
unsigned drxfs_share_cost(const struct drxfs_fh *fh);

/* Sets the read-ahead window of the mount at mnt (its backing device in
 * /sys/class/bdi) to kb KiB; logs why not when it cannot. */
void drxfs_kc_read_ahead(const char *mnt, unsigned kb);
/* Called by every getattr and open: the first, after the kernel has taken
 * init's reply, sets the read-ahead window (read_ahead=). */
void drxfs_kc_first_request(void);
/* key changed through the mount (a write through path except, or NULL):
 * its other paths are invalidated soon, from a thread. */
void drxfs_kc_changed(const char *key, const char *except);

#endif
