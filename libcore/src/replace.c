/* Atomic replacement of store files: temporary, fsync, rename, fsync. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "drx/io.h"
#include "drx/store.h"
#include "replace_i.h"
#include "store_i.h"

int drx_replace_take_owner(int fd, const struct stat *like)
{
    mode_t mode = like->st_mode & 07777;
    struct stat now;

    if (like->st_uid != geteuid() || like->st_gid != getegid())
        if (fchown(fd, like->st_uid, like->st_gid) < 0 && like->st_gid != getegid())
            (void)!fchown(fd, (uid_t)-1, like->st_gid);
    /* What we could not keep, we do not claim: unknown counts as lost. */
    if (fstat(fd, &now) < 0)
        now.st_uid = now.st_gid = (uid_t)-1;
    if (now.st_gid != like->st_gid)
        mode = (mode & ~(mode_t)0070) | ((mode & 07) << 3);
    if (now.st_uid != like->st_uid)
        mode &= ~(mode_t)(S_ISUID | S_ISGID);
    if (now.st_gid != like->st_gid)
        mode &= ~(mode_t)S_ISGID;
    /* After the fchown, which may itself clear the set-ID bits. */
    return fchmod(fd, mode) < 0 ? -errno : 0;
}

/* `.BASE.XXXXXX` in dfd, created exclusively: the fd, or -errno.  The six
 * characters are [A-Za-z0-9], as mkstemp's, which is what
 * drx_store_name_is_temp() recognises. */
static int create_temp(struct drx_store *s, int dfd, const char *base, char *tmp, size_t len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    int fd = -EEXIST;

    for (unsigned attempt = 0; attempt < 16 && fd == -EEXIST; attempt++) {
        uint64_t v;
        char x[7];
        if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            v = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (attempt * 0x9e3779b97f4a7c15u);
        }
        for (int i = 0; i < 6; i++, v /= sizeof abc - 1)
            x[i] = abc[v % (sizeof abc - 1)];
        x[6] = '\0';
        if (drx_store_temp_name(base, x, tmp, len) < 0)
            return -ENAMETOOLONG;
        fd = drx_store_fresh_take(s, dfd, tmp);
        if (fd == -ENOENT)
            fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd == -1)
            fd = -errno;
    }
    return fd;
}

/* Renames tmp to base in dfd; with noreplace, never over an existing file. */
static int put_in_place(int dfd, const char *tmp, const char *base, bool noreplace)
{
    if (!noreplace)
        return renameat(dfd, tmp, dfd, base) < 0 ? -errno : 0;
    if (renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    /* A filesystem without RENAME_NOREPLACE: link() refuses to replace as
     * well, and the temporary name goes after it. */
    if (linkat(dfd, tmp, dfd, base, 0) < 0)
        return -errno;
    unlinkat(dfd, tmp, 0);
    return 0;
}

int drx_path_split(const char *path, char *dir, size_t len, const char **base)
{
    const char *slash = strrchr(path, '/');

    *base = slash ? slash + 1 : path;
    if (!**base)
        return -EISDIR;
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else if ((size_t)(slash - path) >= len)
        return -ENAMETOOLONG;
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
    return 0;
}

/* The mode a new file made with mode gets in directory dfd: with a default
 * ACL there, mode masked by its owner, mask (or group) and other entries,
 * as the kernel makes an inode in such a directory (the umask ignored);
 * without one, mode.  The temporary inherited the ACL at its creation
 * (0600), and fchmod of what this returns gives it the entries and mode
 * an open(O_CREAT, mode) would have: never more than the ACL grants (an
 * exact fchmod(mode) gave a file `other::r--` where the ACL said `---`). */
mode_t drx_replace_new_mode(int dfd, mode_t mode)
{
    unsigned char acl[4 + 8 * 512];
    ssize_t n = fgetxattr(dfd, "system.posix_acl_default", acl, sizeof acl);
    mode_t u = 07, g = 07, o = 07;
    bool mask = false;

    if (n < 0 && errno == ERANGE)
        return mode & ~(mode_t)077; /* more entries than we read: the owner's */
    if (n < 4 || (n - 4) % 8 != 0)
        return mode; /* none, or not the kernel's format: nothing to apply */
    for (ssize_t i = 4; i < n; i += 8) {
        unsigned tag = acl[i] | (unsigned)acl[i + 1] << 8;
        mode_t perm = (mode_t)(acl[i + 2] & 07);
        if (tag == 0x01) /* ACL_USER_OBJ */
            u = perm;
        else if (tag == 0x10) { /* ACL_MASK: it bounds the group class */
            g = perm;
            mask = true;
        } else if (tag == 0x04 && !mask) /* ACL_GROUP_OBJ */
            g = perm;
        else if (tag == 0x20) /* ACL_OTHER */
            o = perm;
    }
    return (mode & ~(mode_t)0777) | (mode & (u << 6 | g << 3 | o));
}

mode_t drx_replace_group_own(const char *path, const char *name, mode_t mode)
{
    unsigned char acl[4 + 8 * 512];
    ssize_t n = getxattr(path, name, acl, sizeof acl);
    mode_t own = 07;
    bool mask = false;

    if (n < 0 && errno == ERANGE)
        return mode & ~(mode_t)070; /* more entries than we read: none */
    if (n < 4 || (n - 4) % 8 != 0)
        return mode; /* none, or not the kernel's format: the bits are the group's */
    for (ssize_t i = 4; i < n; i += 8) {
        unsigned tag = acl[i] | (unsigned)acl[i + 1] << 8;
        if (tag == 0x04) /* ACL_GROUP_OBJ */
            own = (mode_t)(acl[i + 2] & 07);
        else if (tag == 0x10) /* ACL_MASK */
            mask = true;
    }
    return mask ? mode & ~((~own & 07) << 3) : mode;
}

/* Names a replacement takes over: the user's own, and the access ACL.
 * Never trusted.* or security.* (a capability, a label): root may set
 * them, and a replacement written by root must not carry a user's choice
 * of them into a file of root's making. */
static bool xattr_copied(const char *name, bool acl)
{
    return strncmp(name, "user.", 5) == 0 || (acl && strcmp(name, "system.posix_acl_access") == 0);
}

/* drx_replace_copy_xattrs of `from`, a name in directory dfd (-1: a path
 * from the current directory); no /proc needed. */
static void copy_xattrs_at(int dfd, const char *from, int fd, const struct stat *like)
{
    const size_t cap = 65536;
    char *names = malloc(cap), *val = malloc(cap);
    struct stat now, src;
    /* The ACL only to a file that kept the owner and group: take_owner
     * narrowed the group bits of one that did not, and the ACL's mask
     * would widen them again for the new group. */
    bool same = fstat(fd, &now) == 0 && now.st_uid == like->st_uid && now.st_gid == like->st_gid;
    /* read through a descriptor of the very file like describes: a name
     * swapped meanwhile (for a link to another file) gives nothing */
    int in = openat(dfd < 0 ? AT_FDCWD : dfd, from,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    ssize_t n = -1;

    if (in >= 0 && fstat(in, &src) == 0 && S_ISREG(src.st_mode) && src.st_dev == like->st_dev &&
        src.st_ino == like->st_ino && names && val)
        n = flistxattr(in, names, cap);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
        if (!xattr_copied(names + i, same))
            continue;
        ssize_t v = fgetxattr(in, names + i, val, cap);
        if (v >= 0)
            (void)fsetxattr(fd, names + i, val, (size_t)v, 0);
    }
    if (in >= 0)
        close(in);
    free(names);
    free(val);
}

void drx_replace_copy_xattrs(const char *from, int fd, const struct stat *like)
{
    copy_xattrs_at(-1, from, fd, like);
}

/* The temporary's content, owner and mode, synced: 0 or -errno.  A
 * replacement (like) also takes the xattrs of base, the file it replaces. */
static int fill_temp(int dfd, const char *base, int fd, const void *data, size_t len,
                     const struct stat *like, mode_t mode, bool sync, struct stat *st)
{
    int rc = 0;

    if (like) {
        rc = drx_replace_take_owner(fd, like);
        if (rc == 0)
            copy_xattrs_at(dfd, base, fd, like);
    } else if (fchmod(fd, drx_replace_new_mode(dfd, mode) & 07777) < 0) {
        rc = -errno;
    }

    if (rc == 0)
        rc = drx_io_write_all(fd, data, len);
    if (rc == 0 && sync && fsync(fd) < 0)
        rc = -errno;
    if (rc == 0 && st && fstat(fd, st) < 0)
        rc = -errno;
    return rc;
}

int drx_replace_write(const char *path, const void *data, size_t len, const struct stat *like,
                      mode_t mode, unsigned flags, struct stat *st)
{
    return drx_replace_write_s(NULL, path, data, len, like, mode, flags, st);
}

int drx_replace_write_s(struct drx_store *s, const char *path, const void *data, size_t len,
                        const struct stat *like, mode_t mode, unsigned flags, struct stat *st)
{
    char dir[PATH_MAX], tmp[NAME_MAX + 1];
    const char *base;
    bool sync = !(flags & DRX_REPLACE_NOSYNC);
    int dfd, fd, rc;

    if ((rc = drx_path_split(path, dir, sizeof dir, &base)) < 0)
        return rc;
    /* One directory descriptor for the temporary, the rename and the sync:
     * all three happen in the same directory whatever its path does. */
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    /* The temporary's lock is held while it is written, synced and
     * renamed: drx fsck --repair leaves a locked temporary alone (it
     * removed one under way, and the update failed with ENOENT).  One
     * that --repair took between its creation and the lock is gone when
     * the lock comes (--repair removes it before it lets go): another. */
    for (int tries = 0;; tries++) {
        struct stat tst;
        fd = create_temp(s, dfd, base, tmp, sizeof tmp);
        if (fd < 0) {
            close(dfd);
            return fd;
        }
        if (drx_io_flock_for(fd, LOCK_EX, 1000) < 0 || fstat(fd, &tst) < 0 || tst.st_nlink > 0 ||
            tries == 3)
            break;
        close(fd);
    }
    rc = fill_temp(dfd, base, fd, data, len, like, mode, sync, st);
    if (rc == 0)
        rc = put_in_place(dfd, tmp, base, flags & DRX_REPLACE_NOREPLACE);
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
    close(fd);
    if (rc == 0 && sync && fsync(dfd) < 0)
        rc = -errno;
    close(dfd);
    return rc;
}
