/* Names of an array: the link check, crash-safe rename, unsharing. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_i.h"
#include "drx/io.h"
#include "charge_i.h"
#include "drx/log.h"
#include "replace_i.h"

/* ---- names: links, rename, unshare ---- */

static int links_refused(const char *xta_path, nlink_t n, struct drx_err *err)
{
    return drx_err_set(err, EMLINK,
                       "%s has %ju names (left by an interrupted rename?): writing or extending "
                       "the array through one would change or cut the other's chunks; refused "
                       "until `drx fsck --repair` settles it",
                       xta_path, (uintmax_t)n);
}

/* The link check; wait: look again once a rename in progress (holding the
 * extend lock) is done.  The wait uses a descriptor of its own, since a
 * lock taken and dropped through xta_fd would drop one its holder has. */
int drx_array_xta_links(const struct drx_array *a, bool wait, struct drx_err *err)
{
    char self[64];
    struct stat st;
    int fd;

    if (fstat(a->xta_fd, &st))
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    if (st.st_nlink <= 1 || !wait)
        return st.st_nlink <= 1 ? 0 : links_refused(a->xta_path, st.st_nlink, err);
    snprintf(self, sizeof self, "/proc/self/fd/%d", a->xta_fd);
    fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        /* past the wait, another name is counted as it is now */
        (void)drx_io_flock(fd, LOCK_SH);
        if (fstat(fd, &st))
            st.st_nlink = 2;
        close(fd);
    }
    return st.st_nlink <= 1 ? 0 : links_refused(a->xta_path, st.st_nlink, err);
}

int drx_array_check_links(const struct drx_array *a, struct drx_err *err)
{
    return drx_array_xta_links(a, true, err);
}

/* name + suffix into out (NAME_MAX + 1): a single path component. */
static int component(char *out, const char *name, const char *suffix, struct drx_err *err)
{
    size_t n = strlen(name), s = strlen(suffix);

    if (n == 0 || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return drx_err_set(err, EINVAL, "'%s' is not an array name", name);
    if (n + s > NAME_MAX)
        return drx_err_set(err, ENAMETOOLONG, "%s%s: name too long", name, suffix);
    memcpy(out, name, n);
    memcpy(out + n, suffix, s + 1);
    return 0;
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The four names of a rename, each checked as one path component. */
struct rename_names {
    char ox[NAME_MAX + 1], om[NAME_MAX + 1], nx[NAME_MAX + 1], nm[NAME_MAX + 1];
};

static int rename_names(struct rename_names *n, const char *oname, const char *nname,
                        struct drx_err *err)
{
    int rc;

    if ((rc = component(n->ox, oname, ".xta", err)) || (rc = component(n->om, oname, ".xmd", err)) ||
        (rc = component(n->nx, nname, ".xta", err)) || (rc = component(n->nm, nname, ".xmd", err)))
        return rc;
    return 0;
}

/* Opens OLD.xta (a regular file, *xst its stat) and takes the extend
 * lock on it: no extension runs while the chunks have two names, so the
 * metadata they follow is one and the same throughout.  The descriptor
 * (closing it lets go), or -errno. */
static int rename_lock(int odfd, const char *oname, const struct rename_names *n, struct stat *xst,
                       struct drx_err *err)
{
    int fd = openat(odfd, n->ox, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), rc;

    if (fd < 0)
        return errno == ENOENT ? drx_err_set(err, ENOENT, "%s: no such array", oname)
                               : drx_err_set(err, errno, "%s: %s", n->ox, strerror(errno));
    if (fstat(fd, xst) || !S_ISREG(xst->st_mode)) {
        rc = drx_err_set(err, EIO, "%s is not a regular file (refused)", n->ox);
        close(fd);
        return rc;
    }
    if ((rc = drx_io_flock(fd, LOCK_EX)) < 0) {
        rc = rc == -EWOULDBLOCK
                 ? drx_err_set(err, EAGAIN,
                               "%s: locked by another process for %u ms (an extension, or "
                               "growths it has not committed yet): not changed",
                               n->ox, drx_io_lock_wait_ms())
                 : drx_err_set(err, -rc, "%s: lock: %s", n->ox, strerror(-rc));
        close(fd);
        return rc;
    }
    return fd;
}

/* Under the lock: OLD is still this array and NEW is free. */
static int rename_check(int odfd, const char *oname, int ndfd, const char *nname,
                        const struct rename_names *n, const struct stat *xst, struct drx_err *err)
{
    struct stat st;

    if (fstatat(odfd, n->om, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
        return drx_err_set(err, ENOENT, "%s: no such array", oname);
    if (fstatat(odfd, n->ox, &st, AT_SYMLINK_NOFOLLOW) || !same_inode(&st, xst))
        return drx_err_set(err, EAGAIN, "%s: replaced while being renamed; try again", n->ox);
    if (fstatat(ndfd, n->nm, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return drx_err_set(err, ENOTEMPTY, "%s: an array of that name exists", nname);
    return 0;
}

/* Links NEW.xta to the chunks: 1 when linked, 0 when an interrupted
 * rename of this array left it already, or -errno. */
static int rename_link(int odfd, int ndfd, const struct rename_names *n, const struct stat *xst,
                       struct drx_err *err)
{
    struct stat st;

    if (linkat(odfd, n->ox, ndfd, n->nx, 0) == 0)
        return 1;
    if (errno != EEXIST)
        return drx_err_set(err, errno, "%s -> %s: %s", n->ox, n->nx, strerror(errno));
    if (fstatat(ndfd, n->nx, &st, AT_SYMLINK_NOFOLLOW) || !same_inode(&st, xst))
        return drx_err_set(err, EEXIST, "%s exists without %s (an orphan chunk file? see drx fsck)",
                           n->nx, n->nm);
    return 0;
}

/* The switch: OLD.xmd becomes NEW.xmd, never over an existing one. */
static int rename_switch(int odfd, int ndfd, const char *nname, const struct rename_names *n,
                         struct drx_err *err)
{
    int rc = renameat2(odfd, n->om, ndfd, n->nm, RENAME_NOREPLACE);

    if (rc < 0 && errno == EINVAL) /* no RENAME_NOREPLACE here; checked above */
        rc = renameat(odfd, n->om, ndfd, n->nm);
    if (rc == 0)
        return 0;
    return errno == EEXIST ? drx_err_set(err, ENOTEMPTY, "%s: an array of that name exists", nname)
                           : drx_err_set(err, errno, "%s -> %s: %s", n->om, n->nm, strerror(errno));
}

/* After the switch the array is NEW whatever happens: the rest is
 * tidying, and its failures are logged (fsck --repair finishes it). */
static void rename_finish(int odfd, const char *oname, int ndfd, const char *nname, bool one_dir,
                          const struct rename_names *n)
{
    if (drx_io_fsync_dirfd(ndfd) < 0 || (!one_dir && drx_io_fsync_dirfd(odfd) < 0))
        drx_log(DRX_LOG_WARNING, "rename %s -> %s: syncing the directories: %s", oname, nname,
                strerror(errno));
    if (unlinkat(odfd, n->ox, 0) < 0 || drx_io_fsync_dirfd(odfd) < 0)
        drx_log(DRX_LOG_WARNING,
                "rename %s -> %s: removing the old name %s: %s (drx fsck --repair removes it)",
                oname, nname, n->ox, strerror(errno));
}

int drx_array_rename(int odfd, const char *oname, int ndfd, const char *nname, struct drx_err *err)
{
    struct rename_names n;
    struct stat xst, od, nd;
    bool one_dir;
    int fd, linked = 0, rc;

    if ((rc = rename_names(&n, oname, nname, err)))
        return rc;
    if (fstatat(odfd, ".", &od, 0) || fstatat(ndfd, ".", &nd, 0))
        return drx_err_set(err, errno, "%s: %s", oname, strerror(errno));
    one_dir = same_inode(&od, &nd);
    if (one_dir && strcmp(oname, nname) == 0)
        return 0; /* rename(2) of a name onto itself */
    if ((fd = rename_lock(odfd, oname, &n, &xst, err)) < 0)
        return fd;
    if ((rc = rename_check(odfd, oname, ndfd, nname, &n, &xst, err)) < 0 ||
        (rc = linked = rename_link(odfd, ndfd, &n, &xst, err)) < 0)
        goto out;
    /* The new name of the chunks is durable before the switch can be. */
    if ((rc = drx_io_fsync_dirfd(ndfd)) < 0)
        drx_err_set(err, -rc, "%s: syncing its directory: %s", n.nx, strerror(-rc));
    else
        rc = rename_switch(odfd, ndfd, nname, &n, err);
    if (rc < 0) {
        if (linked > 0)
            unlinkat(ndfd, n.nx, 0);
        goto out;
    }
    rename_finish(odfd, oname, ndfd, nname, one_dir, &n);
    rc = 0;
out:
    close(fd); /* and the lock with it */
    return rc;
}

/* copy_file_range cannot do it here (across file systems, an old kernel,
 * a file system without it): copy through memory. */
static bool no_copy_range(int e)
{
    return e == EXDEV || e == ENOSYS || e == EINVAL || e == EOPNOTSUPP;
}

/* Copies bytes [off, end) of in to out at the same offsets: in the
 * kernel where it can, else through *buf (allocated on first need). */
static int copy_range(int in, int out, off_t off, off_t end, char **buf)
{
    static const size_t blen = (size_t)1 << 20;

    while (off < end) {
        loff_t ioff = off, ooff = off;
        struct drx_io_charge c;
        drx_io_charge_begin(&c);
        ssize_t n = copy_file_range(in, &ioff, out, &ooff, (size_t)(end - off), 0);
        drx_io_charge_end(&c);
        if (n < 0 && no_copy_range(errno)) {
            size_t len = (size_t)(end - off) < blen ? (size_t)(end - off) : blen;
            int rc;
            if (!*buf && !(*buf = malloc(blen)))
                return -ENOMEM;
            if ((rc = drx_io_pread_all(in, *buf, len, (uint64_t)off)) ||
                (rc = drx_io_pwrite_all(out, *buf, len, (uint64_t)off)))
                return rc;
            n = (ssize_t)len;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n <= 0) {
            return n < 0 ? -errno : -EIO;
        }
        off += n;
    }
    return 0;
}

/* Copies size bytes of in to out, leaving holes where in has them. */
static int copy_sparse(int in, int out, off_t size)
{
    char *buf = NULL;
    off_t data = 0, hole;
    int rc = 0;

    if (ftruncate(out, size))
        return -errno;
    while (data < size && rc == 0) {
        data = lseek(in, data, SEEK_DATA);
        if (data < 0) {
            rc = errno == ENXIO ? 0 : -errno; /* ENXIO: only a hole is left */
            break;
        }
        hole = lseek(in, data, SEEK_HOLE);
        if (hole < 0) {
            rc = -errno;
            break;
        }
        rc = copy_range(in, out, data, hole < size ? hole : size, &buf);
        data = hole;
    }
    free(buf);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Replaces the name xta_path of the file open as fd (whose stat is st) by
 * a copy: other names keep the old file. */
static int xta_copy_over(const char *xta_path, int fd, const struct stat *st, struct drx_err *err)
{
    const char *base = base_name(xta_path);
    size_t dirlen = (size_t)(base - xta_path);
    char *tmp = malloc(dirlen + strlen(base) + 16);
    int out = -1, rc;

    if (!tmp)
        return drx_err_set(err, ENOMEM, "out of memory");
    sprintf(tmp, "%.*s.%s.XXXXXX", (int)dirlen, xta_path, base);
    out = mkstemp(tmp);
    if (out < 0) {
        rc = drx_err_set(err, errno, "%s: %s", tmp, strerror(errno));
        tmp[0] = '\0';
        goto out;
    }
    /* The copy keeps owner and mode (only root can give it the owner). */
    rc = fchown(out, st->st_uid, st->st_gid) < 0 && geteuid() == 0 ? -errno : 0;
    if (rc == 0 && fchmod(out, st->st_mode & 07777) < 0)
        rc = -errno;
    if (rc == 0) /* and its xattrs and ACL, as replace.c's files */
        drx_replace_copy_xattrs(xta_path, out, st);
    if (rc == 0)
        rc = copy_sparse(fd, out, st->st_size);
    if (rc == 0 && fsync(out) < 0)
        rc = -errno;
    if (rc < 0) {
        drx_err_set(err, -rc, "copying %s: %s", xta_path, strerror(-rc));
        goto out;
    }
    if (rename(tmp, xta_path) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", xta_path, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
    if ((rc = drx_io_fsync_parent(xta_path)) < 0)
        drx_err_set(err, -rc, "%s: syncing its directory: %s", xta_path, strerror(-rc));
out:
    if (out >= 0)
        close(out);
    if (tmp[0])
        unlink(tmp);
    free(tmp);
    return rc;
}

int drx_array_unshare(const char *path, struct drx_err *err)
{
    struct drx_array *a = drx_array_alloc(path, DRX_RDONLY);
    struct stat xst, mst;
    int rc, changed = 0;

    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = drx_array_open_regular(a->xta_at, O_RDONLY, &xst, err);
    if (rc < 0)
        goto out;
    a->xta_fd = rc;
    if (flock(a->xta_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", a->xta_path,
                         errno == EWOULDBLOCK ? "an extension holds its lock" : strerror(errno));
        goto out;
    }
    /* the .xmd held open (and paired with the .xta) as a handle's: its
     * copy is written from it with its owner and mode, not from whatever
     * the name holds by then */
    if ((rc = drx_array_reread(a, err)) < 0 || (rc = drx_array_held_xmd(a, &mst, err)) < 0)
        goto out;
    if (fstat(a->xta_fd, &xst) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", path, strerror(errno));
        goto out;
    }
    /* A shared .xmd is harmless alone (an extension replaces it by
     * rename), but the names must not share anything afterwards.  First:
     * the .xta's copy takes its name from the descriptor held. */
    if (mst.st_nlink > 1) {
        if ((rc = drx_array_held_xmd(a, &mst, err)) < 0 ||
            (rc = drx_xmd_write(a->xmd_at, &mst, 0, &a->meta, err)) < 0)
            goto out;
        changed = 1;
    }
    if (xst.st_nlink > 1) {
        if ((rc = xta_copy_over(a->xta_at, a->xta_fd, &xst, err)) < 0)
            goto out;
        changed = 1;
    }
    rc = changed;
out:
    drx_array_close(a); /* and the lock with it */
    return rc;
}

