/* Private pieces of the striped-file code shared by drxfs_striped.c (the
 * table of handles, I/O, attributes) and drxfs_striped_names.c (unlink,
 * link, rename). */
#ifndef DRXFS_STRIPED_I_H
#define DRXFS_STRIPED_I_H

#include "drx/stripe.h"
#include "drxfs_i.h"

/* Bytes written to a striped file between two starts of its subfiles'
 * writeback (write_behind). */
#define DRXFS_WRITE_BEHIND ((uint64_t)8 << 20)

struct drxfs_sfile {
    /* Store-relative name without suffix; replaced (stable.mutex) when a
     * rename moves the file, the old string kept until the handle goes
     * (retired), so that a thread reading it without the mutex (logs,
     * paths) never reads freed memory. */
    char *key;
    char **retired;
    unsigned nretired;
    struct drx_stripe *f;
    bool rw;
    int ro_rc;     /* when not rw, what a write gets: -EROFS on a read-only
                    * file system, else -EACCES */
    bool detached; /* unlinked or replaced: serves its open files only */
    /* Detached because its name led to another file (its directory
     * exchanged or renamed behind the mount): its file, found under its
     * new name (s_find_moved), gets it back with its waiting size. */
    bool moved;
    /* Written since the last flush (atomic): the metafile's mtime is the
     * file's, and a write that does not change the size does not rewrite
     * the metafile, so flush sets it. */
    bool dirty;
    /* The time of the file's last change through this mount (atomic; ns
     * since the epoch), set by mark_changed with dirty: the mtime its
     * stamp gives the metafile (ext4's mtime is the write's, not that of
     * a stat or a size record after it).  A record that moves the mtime
     * of a file with no unstamped change puts back the one it had before
     * (stamp_times). */
    int64_t mtime_ns;
    /* Times a utimens set on the metafile (stable.mutex): recording a
     * waiting size rewrites the metafile, which moves them, so they are put
     * back after it (drxfs_sfile_flush, fsync) instead of the size being
     * recorded, with its syncs, before the utimens.  An update in place
     * moves only the mtime: the atime is put back only when the metafile
     * was replaced (times_ino, the metafile's inode at the utimens), or a
     * read since then (relatime) would be undone. */
    bool keep_times;
    struct timespec times[2];
    dev_t times_dev;
    ino_t times_ino;
    /* Orders what moves the metafile's times: a utimens and the times it
     * reads back, a stamp of unstamped writes, and a size recorded with
     * the stamp after it (drxfs_sfile_flush, fsync).  Without it a commit
     * between a utimens and its read-back, or a stamp between a utimens
     * and the commit, put the wrong times back.  Taken before
     * stable.mutex, never while holding it. */
    pthread_mutex_t times_lock;
    unsigned refs;  /* protected by stable.mutex */
    unsigned opens; /* open files among refs (stable.mutex; s_opens_add) */
    uint64_t commit_gen; /* drx_stripe_sync_mark() of the batched commit */
    /* Handed to the batched commit by a close's flush and not committed
     * yet (atomic): the release that follows leaves the size to it. */
    bool queued;
    int pin;        /* directory descriptor f's path goes through, or -1 */
    struct stat st; /* metafile at open (for fstat of an unlinked file) */
    /* Write-behind (atomic): bytes written since the subfiles' writeback
     * was last started, whether a thread is starting it, and the subfiles
     * it is started on (opened at the first start; -1 when missing). */
    uint64_t wb_pending;
    bool wb_busy;
    unsigned wb_n;
    int *wb_fds;
    /* The names (store-relative, without suffix) its files were opened
     * by (stable.mutex; at most DRXFS_SFILE_NAMES): hard links, whose
     * kernel inodes an append through one name leaves behind. */
    char **names;
    unsigned nnames;
    struct drxfs_sfile *prev, *next;
};
#define DRXFS_SFILE_NAMES 8

/* The table of handles: one per open striped file. */
struct drxfs_stable {
    pthread_mutex_t mutex;
    struct drxfs_sfile *head;
    unsigned ndetached; /* handles out of the table with open files */
    /* The handles out of the table (detached), until their last
     * reference goes: which open file a call without a handle may mean
     * (drxfs_striped_fd_target). */
    struct drxfs_sfile *detached;
};
extern struct drxfs_stable drxfs_stable;

/* libcore's path of rel; *pin: a descriptor to close after (-1: none). */
#define store_path(out, rel, pin) drxfs_lib_path(out, PATH_MAX + 64, rel, pin)

/* drxfs_striped.c: the handle of rel in the table (mutex held), NULL if
 * none; a reference dropped; the size persisted and mtime set after
 * writes. */
struct drxfs_sfile *drxfs_sfile_find(const char *rel);
void drxfs_sfile_put(struct drxfs_sfile *e);
int drxfs_sfile_flush(struct drxfs_sfile *e);
/* The table's handle of rel with a reference, when its metafile is the
 * one at libcore path `path` (rel's, through the directory the caller
 * pinned) now; else NULL.  A handle under a name may be another file's:
 * it follows the directory it was opened in, which may have been
 * exchanged behind the mount (then a user's rename of his file moved
 * root's, whose handle had his file's name). */
struct drxfs_sfile *drxfs_sfile_ref_at(const char *rel, const char *path);
/* Takes rel's handle out of the table, when it is the file at `path` (as
 * drxfs_sfile_ref_at): its open files keep it.  Returns the handle with a
 * reference when no file has it open (the batched commit may still hold
 * it), for drxfs_sfile_forget() once the name is gone; else NULL. */
struct drxfs_sfile *drxfs_sfile_detach(const char *rel, const char *path);
/* The name of e is gone (unlinked, renamed over): a size waiting for the
 * batched commit has no name to be recorded under, and the handle would
 * keep the removed subfiles' space until the commit; the commit lets it go
 * now.  Drops drxfs_sfile_detach's reference; NULL is a no-op. */
void drxfs_sfile_forget(struct drxfs_sfile *e);

/* The open file a chmod, chown or utimens of node n without a handle
 * means, when it is not the file n's name leads to now (another renamed
 * over it behind the mount): the one open file of that name, with a
 * reference, when the caller is in fchmod, fchown or futimens
 * (drxfs_caller_by_fd), which the kernel sends by the node alone.  NULL
 * when the call is by the name, or which open file it means cannot be
 * told (none, or several open by that name): then by the name. */
struct drxfs_sfile *drxfs_striped_fd_target(const struct drxfs_node *n);

/* The metafile open file e holds (its inode, whatever its names now),
 * opened O_PATH (close it), with its stat in *st: the descriptor,
 * -ENOENT when e holds none, or -errno. */
int drxfs_sfile_held_fd(struct drxfs_sfile *e, struct stat *st);

/* drxfs_striped_names.c: e->key becomes key (stable.mutex held). */
void drxfs_sfile_set_key(struct drxfs_sfile *e, char *key);

#endif
