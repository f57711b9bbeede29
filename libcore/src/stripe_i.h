/* Private to libcore's striped-file module (stripe.c: handles and I/O;
 * stripe_layout.c: placement and layouts; stripe_meta.c: the metafile;
 * stripe_names.c: subfiles and whole files on disk).  What one part of the
 * module needs of another; nothing here is for front ends. */
#ifndef DRX_STRIPE_I_H
#define DRX_STRIPE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "drx/err.h"
#include "drx/stripe.h"

/* ---- stripe.c: a handle (stripe_space.c works on it too) ---- */

struct drx_stripe {
    struct drx_store *s;
    char *path; /* NAME, without suffix */
    int mode;
    struct drx_stripe_meta meta; /* layout and subfiles; meta.size unused */
    /* Subfile descriptors, -1 when missing or not created yet (atomic:
     * drx_stripe_subfile_fd() fills them in under lock). */
    int fds[DRX_MAX_STRIPE_DIRS];
    mode_t sub_mode; /* of subfiles created later: the metafile's & 0666 */
    atomic_bool warned[DRX_MAX_STRIPE_DIRS]; /* missing subfile logged */

    /* Writes hold io shared; truncate holds it exclusive, so no write lands
     * between cutting the subfiles and recording the new size. */
    pthread_rwlock_t io;
    pthread_mutex_t lock; /* guards everything below */
    uint64_t size;        /* logical size, in memory */
    uint64_t persisted;   /* size as last written to/read from the metafile */
    bool truncated;       /* size was set by truncate since the last persist */
    bool meta_synced;     /* the metafile on disk is known durable */
    /* Subfile changes (writes, cuts) counted; synced_gen is the count the
     * last fdatasync of every subfile covered.  A persist that advances the
     * recorded size syncs first when they differ (SPEC 9: data before the
     * metadata that points to it). */
    uint64_t wgen, synced_gen;
    bool dirs_synced; /* the subfiles' directory entries are durable */
    /* A subfile's write-back error that drx_stripe_synced collected (the
     * store's syncfs reported it elsewhere): the next sync of the subfiles
     * returns it, as their fdatasync would have, so no size is recorded
     * over the lost data.  0 or -errno. */
    int wb_err;
    dev_t meta_dev;   /* identity of the metafile this handle wrote/read */
    ino_t meta_ino;
    struct timespec meta_ctim; /* and its ctime then: an update in place keeps the inode */
    /* That metafile held open (O_PATH), or -1: when the handle's name is
     * removed while the file has other names (hard links), persists go to
     * the inode through it ("/proc/self/fd/N", drx_stripe_path_is_held). */
    int meta_fd;
    /* While the size runs ahead of the metafile: a read descriptor of the
     * metafile holding the pending-size lock (stripe_pending.c), else -1;
     * and the metafile it is of. */
    int pend_fd;
    dev_t pend_dev;
    ino_t pend_ino;
};

/* NAME.nafs of f into buf, f->path read under f->lock (a rename frees
 * it).  0 or -ENAMETOOLONG. */
int drx_stripe_meta_path_of(struct drx_stripe *f, char *buf, size_t len);

/* ---- stripe_pending.c ---- */

/* How long (ms) an open or a truncate waits for another process to record
 * the size it has written (drxfs's batched commit: commit_interval, 5 s
 * by default, and the sync before it), and drx for a mount to answer a
 * commit request: DRX_COMMIT_WAIT_MS from the environment when it is a
 * number of milliseconds (read once), else 10000. */
unsigned drx_stripe_pending_wait_ms(void);

/* Takes the pending-size lock for f's metafile, once (f->lock held): its
 * size runs ahead of the metafile until a later commit.  Best effort:
 * without it (no descriptor left, a metafile replaced; logged) others
 * read the recorded size as before. */
void drx_stripe_pend_take(struct drx_stripe *f);
/* Lets it go: the size is recorded (f->lock held, or f not shared). */
void drx_stripe_pend_drop(struct drx_stripe *f);
/* Waits up to ms for no other process to hold the pending-size lock of
 * metafile mp: 0 (none, or this process's own, or mp not there), or
 * -EAGAIN when one still does. */
int drx_stripe_pending_wait(const char *mp, unsigned ms);

/* ---- stripe_meta.c ---- */

/* True when p is "/proc/self/fd/N": a handle's own descriptor of its
 * metafile (struct drx_stripe.meta_fd), the one link libcore follows. */
bool drx_stripe_path_is_held(const char *p);

/* NAME + ".nafs" into buf.  0 or -ENAMETOOLONG. */
int drx_stripe_meta_path(const char *path, char *buf, size_t len);

/* Reads and checks metafile mp; *st (may be NULL) gets the identity of the
 * file parsed.  0, -ENOENT, -EIO for a bad or refused metafile (logged),
 * or -errno; err may be NULL. */
int drx_stripe_meta_load_st(const char *mp, size_t ndirs, struct drx_stripe_meta *m,
                            struct stat *st, struct drx_err *err);
/* The same, its messages naming it `shown` (mp: a held descriptor's
 * /proc name). */
int drx_stripe_meta_load_as(const char *mp, const char *shown, size_t ndirs,
                            struct drx_stripe_meta *m, struct stat *st, struct drx_err *err);

/* The directory of mp into dir, and *base pointing at its last name. */
void drx_stripe_split_path(const char *mp, char *dir, size_t dlen, const char **base);

/* Replaces metafile mp by m atomically (drx_replace_write): noreplace
 * gives -EEXIST over an existing file; sync fsyncs file and directory;
 * like (or mode, when NULL) gives owner and mode; *st_out (may be NULL) the
 * new file's identity.  0 or -errno. */
int drx_stripe_meta_write(const char *mp, const struct drx_stripe_meta *m, bool noreplace,
                          bool sync, const struct stat *like, mode_t mode, struct stat *st_out);

/* The metafile mp of a new file (never over an existing one: -EEXIST), not
 * synced, with mode; its inode may be one store s made ahead
 * (drx_store_fresh_take).  0 or -errno. */
int drx_stripe_meta_create(struct drx_store *s, const char *mp, const struct drx_stripe_meta *m,
                           mode_t mode, struct stat *st_out);

/* Writes m into mp itself (temporary metafiles only): flags O_EXCL to
 * create with mode, O_TRUNC to rewrite.  0 or -errno. */
int drx_stripe_meta_write_here(const char *mp, const struct drx_stripe_meta *m, int flags,
                               mode_t mode, const struct stat *like, bool sync,
                               struct stat *st_out);

/* True when metafile mp sets its size in the padded form that
 * drx_stripe_meta_size_in_place can rewrite for every size. */
bool drx_stripe_meta_padded(const char *mp);

/* True when a and b describe the same file: layout and subfiles. */
bool drx_stripe_same_layout(const struct drx_stripe_meta *a, const struct drx_stripe_meta *b);

/* On a full disk: records m->size in metafile mp (the file `was`) by
 * rewriting its size setting in place (stripe_meta.c says why that is
 * safe).  0, -ESTALE when mp is not `was` any more, -EOPNOTSUPP when it
 * cannot be done in place, or -errno. */
int drx_stripe_meta_size_in_place(const char *mp, const struct stat *was,
                                  const struct drx_stripe_meta *m, size_t ndirs,
                                  const struct stat *like, bool sync, struct stat *st_out);
/* The same for a growth (larger not NULL): when the metafile already
 * records a larger size (another writer's, since the caller read it),
 * writes nothing and returns 1 with that size in *larger. */
int drx_stripe_meta_size_in_place_grow(const char *mp, const struct stat *was,
                                       const struct drx_stripe_meta *m, size_t ndirs,
                                       const struct stat *like, bool sync, struct stat *st_out,
                                       uint64_t *larger);

/* ---- stripe_names.c ---- */

/* 64 random bits (for subfile and temporary names; the clock when the
 * kernel has none to give). */
void drx_stripe_random_id(uint64_t *id);

/* Shared by stripe.c (handles, persisting sizes) and stripe_io.c (reads,
 * writes, truncation): the metafile descriptor to lock; whether metafile m
 * is f's file; recording the size (sync: the subfiles' data first;
 * give_back: space past the size returned), with f->lock held or not;
 * cutting the subfiles to what a size of the file needs. */
int drx_stripe_lock_fd(const struct drx_stripe *f);
/* Takes the lock of f (LOCK_EX on drx_stripe_lock_fd, when there is
 * one) for a size merge or cut: true when held.  Anyone who may read the
 * subfile can lock it too and keep it; past DRX_STRIPE_LOCK_WAIT_MS the
 * work goes on without it (logged): a merge with another writer of the
 * same file may then race, while waiting would leave this file's size,
 * and every other size behind it in the batched commit, unrecorded.  A
 * writer holds it for one metafile update (milliseconds). */
#define DRX_STRIPE_LOCK_WAIT_MS 1000u
bool drx_stripe_lock_take(const struct drx_stripe *f, int lfd);
bool drx_stripe_same_file(const struct drx_stripe *f, const struct drx_stripe_meta *m);
int drx_stripe_persist_locked(struct drx_stripe *f, bool sync, bool give_back);
int drx_stripe_persist(struct drx_stripe *f, bool sync, bool give_back);
int drx_stripe_cut_subfiles(struct drx_stripe *f, uint64_t size);
/* Subfile i's descriptor.  Subfiles past the first are created when the
 * first byte reaches them (a write, a growing truncate or fallocate): a
 * subfile that no recorded size has needed may be absent, and is created
 * here when create is set (and f is read-write), then its stripe
 * directory is synced before a size covering it is recorded.  A subfile
 * another handle created since this one opened is opened now.  Returns the
 * descriptor, -ENOENT when absent and not needed by the recorded size (and
 * not created), or -EIO (missing or refused, logged once). */
int drx_stripe_subfile_fd(struct drx_stripe *f, unsigned i, bool create);
int drx_stripe_subfile_fd_locked(struct drx_stripe *f, unsigned i, bool create);
/* Creates (or opens) every subfile that size needs (f->lock held): before
 * a growing size is recorded.  0 or -errno. */
int drx_stripe_subfiles_for(struct drx_stripe *f, uint64_t size);

/* ---- stripe_pool.c: recycled subfiles ---- */

/* Each stripe directory's pool of emptied subfiles, `.pool/`, and how many
 * it holds at most (its entries are named "0000".."1023"; a taker's claim
 * is "c" and 16 hex digits). */
#define DRX_STRIPE_POOL_DIR ".pool"
#define DRX_STRIPE_POOL_SLOTS 1024

/* The pools of a store of ndirs stripe directories (drx_store_open_cfg). */
int drx_stripe_pool_new(size_t ndirs, struct drx_stripe_pool **out);
void drx_stripe_pool_free(struct drx_stripe_pool *p);
bool drx_stripe_pool_slot_name(const char *n);
bool drx_stripe_pool_claim_name(const char *n);

/* A pooled subfile, emptied, given mode & 0666 less the umask (and, for
 * root, this process's owner), renamed to `name` in stripe directory dir
 * (which must not exist: RENAME_NOREPLACE).  Returns its O_RDWR
 * descriptor, -EEXIST when name exists, or -ENOENT when the pool has none
 * to give (the caller creates one). */
int drx_stripe_pool_take(struct drx_store *s, unsigned dir, const char *name, mode_t mode);

/* Subfile `name` of stripe directory dir, which no metafile names any
 * more, moved into the pool's private directory, then emptied and pooled,
 * or removed there when it cannot be (the pool full, the file open
 * elsewhere, not a single-link regular file, an attribute that will not
 * go): true, the name is gone.  False when nothing was done (no pool of
 * ours, the store short of free inodes): the caller removes it. */
bool drx_stripe_pool_put(struct drx_store *s, unsigned dir, const char *name);

/* A new subfile i of m (mode & 0666, less the umask): from the pool, else
 * created with O_EXCL.  The descriptor or -errno (-EEXIST: the name is
 * taken). */
int drx_stripe_subfile_new(struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                           mode_t mode, const char *who);

/* Disposes of subfile `name` of stripe directory dir that nothing names
 * any more: into the pool, else unlinked.  0 or -errno of the unlink. */
int drx_stripe_subfile_drop(struct drx_store *s, unsigned dir, const char *name);

#endif
