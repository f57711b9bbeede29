/* Private pieces of stores shared by store.c and store_at.c. */
#ifndef DRX_STORE_I_H
#define DRX_STORE_I_H

#include <stdbool.h>
#include <sys/types.h>

#include "drx/store.h"

/* Releases what drx_store_open_at added to s (its descriptor, the name of
 * that descriptor in messages); nothing for other stores. */
void drx_store_at_close(struct drx_store *s);

/* ---- store_commit.c ---- */

/* True when a mount of owner (mountinfo's user_id=, -1 unknown) is one the
 * caller (euid) may ask to commit: its own only (root asks only root's). */
bool drx_store_commit_owner_ok(long owner, uid_t euid);

/* Sets DRX_STORE_COMMIT_XATTR on mount point mnt when, reached without
 * following a symlink, it is the root of a mount of device dev.  0, or
 * -ELOOP (a symlink in the way), -ESTALE (not that mount's root), -errno. */
int drx_store_commit_at(const char *mnt, dev_t dev);

/* drx_store_commit_at(mnt, dev) when owner is the caller, waiting at most
 * drx_stripe_pending_wait_ms() for the answer (in a thread: a stopped or
 * hung daemon is left waiting, and warned of). */
void drx_store_ask_commit(const char *mnt, dev_t dev, long owner);

/* ---- store_fresh.c ---- */

/* True when the filesystem of fd has free inodes to spare for those held
 * in reserve (inodes made ahead, recycled subfiles): it keeps no count, or
 * at least 16384 and a tenth of them are free.  When not, none are held:
 * a store short of inodes gives them to its user's files. */
bool drx_store_inodes_plenty(int fd);

/* True when `name` in dfd is the file open as fd: the rename moved what
 * was checked (a pool's or .drx/fresh's owner, when it is not this
 * process, could have swapped the entry between the checks and the
 * rename).  When not, the name is removed again. */
bool drx_store_moved_ours(int fd, int dfd, const char *name);

/* An empty file made ahead, of this user, renamed to `name` in directory
 * dfd (never over an existing entry) with its times set to now: its
 * O_WRONLY descriptor, -EEXIST when name exists, or -ENOENT when there is
 * none to give or dfd gives new files what it lacks (set-group-ID, a
 * default ACL): the caller creates the file itself.  s may be NULL. */
int drx_store_fresh_take(struct drx_store *s, int dfd, const char *name);

#endif
