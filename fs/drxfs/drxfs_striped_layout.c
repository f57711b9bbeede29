/* What striped files share through the stripe directories: statfs sums
 * them, and the user.drx.stripe attribute of a directory (or of a striped
 * file, read-only) is the layout new files get (or that file's); a new
 * file's layout and owner; chmod and chown, which the subfiles follow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/stripe.h"
#include "drxfs_i.h"
#include "drxfs_striped_i.h"

int drxfs_striped_statfs(struct statvfs *sv)
{
    /* The store root plus every stripe directory, each filesystem once;
     * counts are in units of the first one's fragment size. */
    struct statvfs seen[DRX_MAX_STRIPE_DIRS + 1];
    size_t nseen = 0;

    if (fstatvfs(drxfs.root_fd, sv) < 0)
        return -errno;
    seen[nseen++] = *sv;
    for (size_t i = 0; i < drxfs.store->cfg.stripe.ndirs; i++) {
        struct statvfs d;
        int fd = drxfs.store->dir_fds[i];
        bool dup = false;
        if (fd < 0 || fstatvfs(fd, &d) < 0)
            continue;
        for (size_t j = 0; j < nseen; j++)
            if (seen[j].f_fsid == d.f_fsid && seen[j].f_blocks == d.f_blocks &&
                seen[j].f_frsize == d.f_frsize)
                dup = true;
        if (dup || nseen >= DRX_MAX_STRIPE_DIRS + 1)
            continue;
        seen[nseen++] = d;
        double k = (double)d.f_frsize / (double)sv->f_frsize;
        sv->f_blocks += (fsblkcnt_t)((double)d.f_blocks * k);
        sv->f_bfree += (fsblkcnt_t)((double)d.f_bfree * k);
        sv->f_bavail += (fsblkcnt_t)((double)d.f_bavail * k);
        sv->f_files += d.f_files;
        sv->f_ffree += d.f_ffree;
        sv->f_favail += d.f_favail;
    }
    return 0;
}

/* XATTR_CREATE and XATTR_REPLACE against the layout directory path has
 * now: 0, or the error setxattr returns. */
static int layout_flags_check(const char *path, int flags, struct drx_err *err)
{
    struct drx_stripe_layout cur;
    int rc;

    if (!(flags & (XATTR_CREATE | XATTR_REPLACE)))
        return 0;
    rc = drx_stripe_layout_dir_get(drxfs.store, path, &cur, err);
    if (rc < 0 && rc != -EINVAL)
        return rc;
    if ((flags & XATTR_CREATE) && rc != 0)
        return -EEXIST;
    if ((flags & XATTR_REPLACE) && rc == 0)
        return -ENODATA;
    return 0;
}

/* The attribute's value as a string in text (of cap bytes), without the
 * trailing newline or NULs setfattr may pass. */
static int layout_text(const struct drxfs_node *n, const char *value, size_t size, char *text,
                       size_t cap)
{
    if (size >= cap) {
        drx_log(DRX_LOG_DEBUG, "%s: %s value too long", n->rel, DRXFS_STRIPE_XATTR);
        return -EINVAL;
    }
    memcpy(text, value, size);
    text[size] = '\0';
    /* setfattr may pass a trailing newline */
    while (size && (text[size - 1] == '\n' || text[size - 1] == '\0'))
        text[--size] = '\0';
    return 0;
}

/* Sets or (value NULL) removes the layout of directory n, at libcore path
 * path. */
static int layout_set(const struct drxfs_node *n, const char *path, const char *value, size_t size,
                      int flags)
{
    char text[DRX_STRIPE_LAYOUT_LEN * 2];
    struct drx_stripe_layout l;
    struct drx_err err = {{0}};
    int rc;

    if ((rc = layout_flags_check(path, flags, &err)) < 0)
        return rc;
    if (!value) {
        rc = drx_stripe_layout_dir_set(drxfs.store, path, NULL, &err);
        return rc < 0 ? drxfs_striped_log_err("removing layout of", n->rel, rc, &err) : 0;
    }
    if ((rc = layout_text(n, value, size, text, sizeof(text))) < 0)
        return rc;
    rc = drx_stripe_layout_parse(text, drxfs.store->cfg.stripe.ndirs, &l, &err);
    if (rc < 0) {
        drx_log_ratelimited(DRX_LOG_INFO, "%s: %s: %s", n->rel, DRXFS_STRIPE_XATTR, err.msg);
        return -EINVAL;
    }
    rc = drx_stripe_layout_dir_set(drxfs.store, path, &l, &err);
    return rc < 0 ? drxfs_striped_log_err("setting layout of", n->rel, rc, &err) : 0;
}

int drxfs_striped_setxattr(const struct drxfs_node *n, const char *value, size_t size, int flags)
{
    char path[PATH_MAX + 64];
    int rc, pin;

    if (n->kind != DRXFS_DIR)
        return -EPERM; /* a file's layout is fixed when it is made */
    if ((rc = drxfs_lib_path(path, sizeof(path), n->rel, &pin)) < 0)
        return rc;
    rc = layout_set(n, path, value, size, flags);
    drxfs_unpin(pin);
    return rc;
}

/* The layout of directory or striped file n: 0, or -ENODATA when it has
 * none, or -errno. */
static int layout_of(const struct drxfs_node *n, struct drx_stripe_layout *l)
{
    char path[PATH_MAX + 64];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    int rc, pin;

    if (n->kind != DRXFS_DIR && n->kind != DRXFS_STRIPED)
        return -ENODATA;
    if ((rc = drxfs_lib_path(path, sizeof(path), n->rel, &pin)) < 0)
        return rc;
    if (n->kind == DRXFS_DIR)
        rc = drx_stripe_layout_dir_get(drxfs.store, path, l, &err);
    else
        rc = drx_stripe_stat(drxfs.store, path, &m, &err);
    drxfs_unpin(pin);
    if (n->kind == DRXFS_DIR)
        return rc == 1 ? 0 : rc == 0 || rc == -EINVAL ? -ENODATA : rc;
    if (rc < 0)
        return drxfs_striped_log_err("stat", n->rel, rc, &err);
    *l = m.layout;
    return 0;
}

int drxfs_striped_getxattr(const struct drxfs_node *n, char *value, size_t size)
{
    char text[DRX_STRIPE_LAYOUT_LEN];
    struct drx_stripe_layout l;
    int rc;

    if ((rc = layout_of(n, &l)) < 0)
        return rc;
    int len = drx_stripe_layout_format(&l, text, sizeof(text));
    if (len < 0)
        return -EIO;
    if (size == 0)
        return len;
    if ((size_t)len > size)
        return -ERANGE;
    memcpy(value, text, (size_t)len);
    return len;
}

int drxfs_striped_layout_for(const char *rel, struct drx_stripe_layout *out)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    int pin;

    snprintf(dir, sizeof dir, "%s", rel);
    out->count = drxfs.store->cfg.stripe.count;
    out->extent = drxfs.store->cfg.stripe.extent;
    for (;;) {
        char *slash = strrchr(dir, '/');
        struct drx_err err = {{0}};
        int rc;

        if (slash)
            *slash = '\0';
        else
            strcpy(dir, ".");
        if ((rc = drxfs_lib_path(path, sizeof path, dir, &pin)) < 0)
            return rc;
        rc = drx_stripe_layout_dir_get(drxfs.store, path, out, &err);
        drxfs_unpin(pin);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            drx_log_ratelimited(DRX_LOG_WARNING, "%s; ignored", err.msg);
            out->count = drxfs.store->cfg.stripe.count;
            out->extent = drxfs.store->cfg.stripe.extent;
        }
        if (strcmp(dir, ".") == 0)
            return 0;
    }
}

/* Gives the caller the metafile and the subfiles of a new file (made with
 * mode).  The new metafile is the daemon's (its group the directory's in a
 * set-group-ID one, which drxfs_chown_new keeps): for a caller of the
 * daemon's own user and group that chown would change nothing but clear
 * set-ID bits, so it is made only when mode has some. */
void drxfs_striped_chown_new(struct drx_stripe *f, const char *rel, mode_t mode)
{
    char meta[PATH_MAX];
    struct drx_stripe_meta m;

    if (!drxfs.root_euid || drxfs_rel_suffix(meta, rel, DRXFS_NAFS) < 0)
        return;
    struct fuse_context *ctx = fuse_get_context();
    /* the subfiles first: a metafile of another user than the daemon's
     * has its subfiles used only when they are that user's too; their
     * group is the metafile's, the directory's in a set-group-ID one (a
     * project's group quota counts the bytes, not the caller's group) */
    drx_stripe_meta_get(f, &m);
    drx_stripe_subfiles_setattr(drxfs.store, &m, (mode_t)-1, ctx->uid, drxfs_new_gid(rel), rel);
    /* the metafile the handle made and holds, not the name's: a user
     * exchanging his directory with root's behind the mount as he
     * created f was given root's f.nafs */
    if (ctx->uid != geteuid() || ctx->gid != getegid() || (mode & (S_ISUID | S_ISGID))) {
        int fd = drx_stripe_meta_dup(f);
        if (fd >= 0) {
            drxfs_chown_new_fd(fd, meta);
            close(fd);
        } else {
            drx_log_ratelimited(DRX_LOG_WARNING, "%s: made, but its handle holds no metafile "
                                "to give its maker: left the daemon's", rel);
        }
    }
}

/* ---- the operations of striped files (drxfs_striped.c) ---- */

static int striped_getattr(const struct drxfs_node *n, const char *path, struct stat *st)
{
    (void)path;
    return drxfs_striped_getattr(n, st);
}

/* With a name, by its path: its metafile may have changed under it.  Not
 * the entry libfuse asks for right after the create made it: that one is
 * the handle's, as the create left it (no lookup, no stat, no read of the
 * metafile). */
static int striped_fgetattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    if (!path)
        return drxfs_striped_fgetattr(fh, st);
    if (!__atomic_exchange_n(&fh->created, false, __ATOMIC_RELAXED))
        return 1;
    int rc = drxfs_striped_fgetattr_new(fh, st);
    return rc == 0 ? DRXFS_FGETATTR_NEW : rc;
}

/* The last close of a file removed while open frees it (drxfs_hidden.c). */
static void striped_release(struct drxfs_fh *fh)
{
    dev_t dev = 0;
    ino_t ino = 0;

    drxfs_striped_ino(fh, &dev, &ino);
    drxfs_hidden_releasing(dev, ino);
    drxfs_striped_release(fh);
    drxfs_hidden_released(dev, ino);
}

static int striped_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    (void)path;
    return drxfs_striped_open(n, fi);
}

/* A chmod or chown done on the metafile of rel, carried to its subfiles
 * (drx_stripe_subfiles_setattr), and a chmod to the subfiles an open
 * handle of it makes from now on: the bytes in the stripe directories were
 * left 0644 under a 0600 file, readable by every user who may enter them,
 * and the owner's (for quota) stayed whoever first wrote it. */
static int subfiles_setattr(const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
    char path[PATH_MAX + 64];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    struct drxfs_sfile *e;
    int rc, pin;

    if ((rc = drxfs_lib_path(path, sizeof path, rel, &pin)) < 0)
        return rc;
    rc = drx_stripe_stat(drxfs.store, path, &m, &err);
    /* the bits its group has when an ACL's mask is the group bits */
    if (mode != (mode_t)-1)
        mode = drx_stripe_sub_mode(path, mode);
    /* the handle of the file the name leads to: not another's under the
     * name (its directory exchanged behind the mount), whose subfiles
     * made from now on would get this mode */
    e = rc < 0 ? NULL : drxfs_sfile_ref_at(rel, path);
    drxfs_unpin(pin);
    if (rc < 0)
        return drxfs_striped_log_err("chmod", rel, rc, &err);
    /* read again by name after the metafile's own change, checked on the
     * metafile changed (drxfs_guard_owner): a rename behind the mount in
     * between gave the chmod or chown of a caller other than root to
     * another user's subfiles, made 0666 or his in the stripe
     * directories.  Only the caller's own are his to change (the kernel
     * let him change only a file of his), and a metafile is trusted only
     * with its owner's subfiles (drx_stripe_subfile_open). */
    uid_t caller = fuse_get_context()->uid;
    if (caller != 0 && (!m.owned || m.owner != caller)) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: replaced behind the mount by a striped file the caller (uid %u) "
                            "may not change so: its subfiles left as they are",
                            rel, (unsigned)caller);
        if (e)
            drxfs_sfile_put(e);
        return -EPERM;
    }
    if (e && mode != (mode_t)-1)
        drx_stripe_set_mode(e->f, mode);
    if (e)
        drxfs_sfile_put(e);
    rc = drx_stripe_subfiles_setattr(drxfs.store, &m, mode, uid, gid, rel);
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: chmod or chown of its subfiles: %s", rel,
                            strerror(-rc));
    return rc;
}

/* The open file a chmod, chown or utimens of n or fh changes when its name
 * may lead to another: fh's (with a truncation's chmod: the only one the
 * kernel sends with a handle), or the one a caller's fchmod, fchown or
 * futimens means (drxfs_striped_fd_target); with a reference, or NULL. */
static struct drxfs_sfile *open_target(const struct drxfs_node *n, struct drxfs_fh *fh)
{
    if (!fh)
        return drxfs_striped_fd_target(n);
    pthread_mutex_lock(&drxfs_stable.mutex);
    fh->sf->refs++;
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return fh->sf;
}

/* A chmod (mode, unless -1) or chown (uid, gid) of e's subfiles, taken
 * from its own metafile (at fd, of stat st) rather than by the name: the
 * mode the group's ACL entries give (drx_stripe_sub_mode_fd), and owned
 * by that metafile's owner (drx_stripe_subfile_check). */
static int held_subfiles(struct drxfs_sfile *e, int fd, const struct stat *st, mode_t mode,
                         uid_t uid, gid_t gid)
{
    struct drx_stripe_meta m;

    drx_stripe_meta_get(e->f, &m);
    m.owned = true;
    m.owner = st->st_uid;
    if (mode != (mode_t)-1) {
        mode = drx_stripe_sub_mode_fd(fd, mode);
        drx_stripe_set_mode(e->f, mode);
    }
    int rc = drx_stripe_subfiles_setattr(drxfs.store, &m, mode, uid, gid, e->key);
    if (rc < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: chmod or chown of its subfiles: %s", e->key,
                            strerror(-rc));
    return rc;
}

/* chmod (chown: uid, gid) of open file e through the metafile it holds,
 * and its subfiles: 1 when it holds none (by the name then), else 0 or
 * -errno.  A caller other than root must own it, as the kernel checked by
 * the attributes it holds, which may be the name's file's.  clear: the
 * kernel's clearing of set-ID bits at a truncation, with a mode it worked
 * out from the name's attributes: only the set-ID bits that mode lacks go,
 * from the file's own mode, which its writer may (ext4's rule). */
static int held_attr(struct drxfs_sfile *e, bool chown, mode_t mode, uid_t uid, gid_t gid,
                     bool clear)
{
    struct stat st;
    char self[32];
    int fd = drxfs_sfile_held_fd(e, &st), rc = 0;

    if (fd < 0)
        return fd == -ENOENT ? 1 : fd;
    if (clear && !chown) {
        mode = st.st_mode & 07777 & ~(~mode & (S_ISUID | S_ISGID));
    } else if ((rc = drxfs_held_owner(&st, e->key)) < 0) {
        goto out;
    } else if (!chown && (mode & S_ISGID) && fuse_get_context()->uid != 0 &&
               !drxfs_caller_in_group(st.st_gid)) {
        mode &= ~(mode_t)S_ISGID; /* as chmod(2), by the group the file has */
    }
    if (chown) {
        /* the subfiles first, as by the name (drxfs_striped_chown) */
        if ((rc = held_subfiles(e, fd, &st, (mode_t)-1, uid, gid)) == 0 &&
            fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0)
            rc = -errno;
        goto out;
    }
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (chmod(self, mode & 07777) < 0)
        rc = -errno;
    else
        rc = held_subfiles(e, fd, &st, mode, (uid_t)-1, (gid_t)-1);
out:
    close(fd);
    return rc;
}

/* held_attr of the open file n or fh means, if any: 1 when none. */
static int open_attr(const struct drxfs_node *n, struct drxfs_fh *fh, bool chown, mode_t mode,
                     uid_t uid, gid_t gid)
{
    struct drxfs_sfile *e = open_target(n, fh);

    if (!e)
        return 1;
    int rc = held_attr(e, chown, mode, uid, gid, fh != NULL);
    drxfs_sfile_put(e);
    return rc;
}

int drxfs_striped_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode)
{
    char meta[PATH_MAX], key[PATH_MAX];
    int rc = open_attr(n, fh, false, mode, (uid_t)-1, (gid_t)-1);

    if (rc != 1 || (rc = drxfs_striped_meta_rel(n, fh, meta, key)) < 0)
        return rc;
    drxfs_guard_owner();
    rc = drx_store_entry_chmod(drxfs.store, meta, mode);
    drxfs_guard_done();
    if (rc < 0)
        return rc;
    return subfiles_setattr(key, mode, (uid_t)-1, (gid_t)-1);
}

int drxfs_striped_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    char meta[PATH_MAX], key[PATH_MAX];
    int rc = open_attr(n, fh, true, (mode_t)-1, uid, gid);

    if (rc != 1)
        return rc;
    rc = drxfs_striped_meta_rel(n, fh, meta, key);
    /* The subfiles first, checked against the metafile's owner as it is:
     * the other order left them refused (another user's than the
     * metafile's, drx_stripe_subfile_check), never given. */
    if (rc < 0 || (rc = subfiles_setattr(key, (mode_t)-1, uid, gid)) < 0)
        return rc;
    drxfs_guard_owner();
    rc = drx_store_entry_chown(drxfs.store, meta, uid, gid);
    drxfs_guard_done();
    return rc;
}

int drxfs_striped_acl_set(const struct drxfs_node *n)
{
    char meta[PATH_MAX], key[PATH_MAX];
    struct stat st;
    int rc = drxfs_striped_meta_rel(n, NULL, meta, key);

    if (rc < 0 || (rc = drx_store_entry_stat(drxfs.store, meta, &st)) < 0)
        return rc;
    return subfiles_setattr(n->rel, st.st_mode & 07777, (uid_t)-1, (gid_t)-1);
}

const struct drxfs_kind_ops drxfs_striped_ops = {
    .getattr = striped_getattr,
    .fgetattr = striped_fgetattr,
    .chmod = drxfs_striped_chmod,
    .chown = drxfs_striped_chown,
    .utimens = drxfs_striped_utimens,
    .truncate = drxfs_striped_truncate,
    .open = striped_open,
    .read = drxfs_striped_read,
    .write = drxfs_striped_write,
    .flush = drxfs_striped_flush,
    .fsync = drxfs_striped_fsync,
    .release = striped_release,
    .fallocate = drxfs_striped_fallocate,
    .lseek = drxfs_striped_lseek,
};

/* striped_io=. */
int drxfs_striped_option(const char *name, const char *value)
{
    if (strcmp(name, "striped_io") == 0)
        return drxfs_opt_choice(name, value, "direct", "cached", &drxfs.striped_direct_io);
    return 1;
}
