/* Private to libcore: atomic replacement of a store file (.xmd, .nafs,
 * .drx/store.conf), the one "write a temporary, fsync, rename over" that
 * every writer of store metadata uses, so that temporary names, syncs and
 * the owner and mode of the new file follow one rule. */
#ifndef DRX_REPLACE_I_H
#define DRX_REPLACE_I_H

#include <stddef.h>
#include <sys/stat.h>

/* The directory of path into dir (len bytes: "." for a bare name, "/" at
 * the root) and its last component in *base: 0, -EISDIR for a path ending
 * in '/', -ENAMETOOLONG. */
int drx_path_split(const char *path, char *dir, size_t len, const char **base);

/* drx_replace_write() flags. */
enum {
    /* Fail with -EEXIST instead of replacing an existing file. */
    DRX_REPLACE_NOREPLACE = 1,
    /* Neither the file nor its directory is fsynced (a striped file's size
     * between syncs: only fsync promises durability there). */
    DRX_REPLACE_NOSYNC = 2,
};

/* Makes path hold exactly data[0..len): writes `.NAME.XXXXXX` beside it (X
 * from [A-Za-z0-9]: a name drxfs hides and drx fsck reports as a leftover,
 * drx_store_name_is_temp), fsyncs it, gives it its owner and mode, renames
 * it over path and fsyncs the directory.  Readers see the old file or the
 * new one, never a mix, and a crash leaves at worst the temporary.
 *
 * like: the file the new one stands in for; it keeps like's owner, group
 * and mode as far as the caller may (drx_replace_take_owner).  NULL: the
 * caller owns it, with exactly mode & 07777 whatever the umask.
 * *st (may be NULL) gets the new file's identity.  Returns 0, or -errno
 * with path untouched and no temporary left. */
int drx_replace_write(const char *path, const void *data, size_t len, const struct stat *like,
                      mode_t mode, unsigned flags, struct stat *st);

/* drx_replace_write() whose temporary may be an inode made ahead by store
 * s (drx_store_fresh_take; s NULL: never). */
struct drx_store;
int drx_replace_write_s(struct drx_store *s, const char *path, const void *data, size_t len,
                        const struct stat *like, mode_t mode, unsigned flags, struct stat *st);

/* The mode a new file made with mode gets in directory dfd: with a default
 * ACL there, mode masked by its owner, mask (or group) and other entries
 * (the umask ignored), as the kernel would; without one, mode. */
mode_t drx_replace_new_mode(int dfd, mode_t mode);

/* mode with group bits that the owning group has under the ACL xattr name
 * of path (system.posix_acl_access of a file, or system.posix_acl_default
 * of the directory a file is made in; followed: it can only narrow): where
 * the ACL has a mask (it names users or groups), the group bits of a mode
 * are the mask, what those may have, and the owning group has only its own
 * entry within it; without a mask, mode.  For copies of a file's bytes
 * that hold no ACL (a striped file's subfiles): a 0600 file given `setfacl
 * -m u:bob:r` shows 0640, and 0640 subfiles let every member of its group
 * read what the ACL refuses them. */
mode_t drx_replace_group_own(const char *path, const char *name, mode_t mode);

/* Gives the open file fd the owner, group and mode of like, as far as the
 * caller may.  Root keeps all three.  Anyone else becomes the owner (the
 * new file is theirs), keeps the group when they are in it, and where the
 * group could not be kept it gets only what others get (the old group's
 * rights must not go to the caller's group).  Set-user-ID is kept only with
 * the owner and set-group-ID only with owner and group: a daemon that
 * cannot chown must not leave a set-ID file of its own user behind.
 * 0 or -errno (of the fchmod). */
int drx_replace_take_owner(int fd, const struct stat *like);

/* Copies the extended attributes of `from` (not followed: the file being
 * replaced, stat like) to fd, its replacement, best effort: a replaced
 * file is the same file to its users.  Its POSIX ACL dropped, the mask
 * left in the mode became the owning group's bits (group::--- with
 * mask::r-- gave the group read) and a named user lost what it granted.
 * Only user.* names and the access ACL, the ACL only when fd kept like's
 * owner and group; read through a descriptor of `from` that must be the
 * file like describes (else nothing is copied). */
void drx_replace_copy_xattrs(const char *from, int fd, const struct stat *like);

#endif
