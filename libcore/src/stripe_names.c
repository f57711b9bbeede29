/* Striped files on disk outside any handle: subfiles checked and opened
 * without following links, and whole files unlinked, renamed and
 * committed from a temporary. */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/io.h"
#include "drx/log.h"
#include "replace_i.h"
#include "stripe_i.h"

/* ---- subfiles -------------------------------------------------------------------- */

/* True when m comes from a metafile of another user than this process's
 * and the subfile (st) is not that user's: a metafile names its subfiles
 * by name only, and anyone who may write a metafile (in his own directory
 * of the store) may name another user's subfiles in it.  A process of
 * another user (the root daemon, root's drx fsck --repair) would then
 * serve that user's bytes to him, write or truncate them, chmod them or
 * remove them.  A metafile of this process's own user is trusted: that
 * user reaches the subfile anyway. */
static bool subfile_not_owners(const struct drx_stripe_meta *m, const struct stat *st)
{
    return m && m->owned && m->owner != geteuid() && st->st_uid != m->owner;
}

/* Why a file with this stat cannot be a subfile of m, or NULL (m NULL:
 * one this process just made, its owner not checked).  A hard link's
 * other name may be any file its maker could write, outside the store:
 * reading it would serve that file, writing or truncating it would change
 * it, so only a file with one link is used (SPEC 9). */
static const char *subfile_refusal(const struct drx_stripe_meta *m, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "is not a regular file";
    if (st->st_nlink > 1)
        return "has other hard links";
    if (subfile_not_owners(m, st))
        return "belongs to another user than its metafile";
    return NULL;
}

int drx_stripe_subfile_check(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                             struct stat *st, struct drx_err *err)
{
    const struct drx_stripe_subfile *sf = &m->sub[i];
    const char *why;
    struct stat buf;
    int dfd;

    if (!st)
        st = &buf;
    if (i >= m->layout.count || sf->dir >= s->cfg.stripe.ndirs ||
        !drx_stripe_subfile_name_valid(sf->name))
        return drx_err_set(err, EIO, "subfile %u: not a subfile name", i);
    dfd = s->dir_fds[sf->dir];
    if (dfd < 0)
        return drx_err_set(err, ENOENT, "subfile %u (%s/%s): stripe directory unusable", i,
                           s->cfg.stripe.dirs[sf->dir], sf->name);
    if (fstatat(dfd, sf->name, st, AT_SYMLINK_NOFOLLOW) < 0)
        return drx_err_set(err, errno, "subfile %u (%s/%s): %s", i, s->cfg.stripe.dirs[sf->dir],
                           sf->name, strerror(errno));
    why = S_ISLNK(st->st_mode) ? "is a symbolic link" : subfile_refusal(m, st);
    if (why) /* not logged: the caller reports it, once */
        return drx_err_set(err, EIO, "subfile %u (%s/%s) %s (refused)", i,
                           s->cfg.stripe.dirs[sf->dir], sf->name, why);
    return 0;
}

int drx_stripe_subfile_open(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            int flags, mode_t mode, const char *who)
{
    const struct drx_stripe_subfile *sf = &m->sub[i];
    const char *why;
    struct stat st;
    int fd, dfd;

    if (i >= m->layout.count || sf->dir >= s->cfg.stripe.ndirs ||
        !drx_stripe_subfile_name_valid(sf->name))
        return -EIO;
    dfd = s->dir_fds[sf->dir];
    if (dfd < 0)
        return -ENOENT;
    fd = openat(dfd, sf->name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP) {
            drx_log_ratelimited(DRX_LOG_ERROR, "%s: subfile %u (%s/%s) is a symbolic link: refused",
                                who, i, s->cfg.stripe.dirs[sf->dir], sf->name);
            return -EIO;
        }
        return -e;
    }
    /* On the descriptor: what was checked is what is used.  A subfile this
     * open created (O_EXCL) is this process's until its caller chowns it. */
    why =
        fstat(fd, &st) < 0 ? "cannot be examined" : subfile_refusal(flags & O_EXCL ? NULL : m, &st);
    if (why) {
        drx_log_ratelimited(DRX_LOG_ERROR, "%s: subfile %u (%s/%s) %s: refused", who, i,
                            s->cfg.stripe.dirs[sf->dir], sf->name, why);
        close(fd);
        return -EIO;
    }
    /* O_NONBLOCK only guarded the open against a FIFO planted in its place. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* Subfile i of m for a chmod or chown to uid (O_PATH): also when a chown
 * cut short (a crash, a stripe directory that refused it) left it the new
 * owner's already, so that the same chown finishes it. */
static int setattr_open(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                        uid_t uid, const char *who)
{
    int fd = drx_stripe_subfile_open(s, m, i, O_PATH, 0, who);

    if (fd == -EIO && uid != (uid_t)-1 && m->owned && uid != m->owner) {
        struct drx_stripe_meta to = *m;
        to.owner = uid;
        fd = drx_stripe_subfile_open(s, &to, i, O_PATH, 0, who);
    }
    return fd;
}

int drx_stripe_subfiles_setattr(const struct drx_store *s, const struct drx_stripe_meta *m,
                                mode_t mode, uid_t uid, gid_t gid, const char *who)
{
    int first = 0;

    for (unsigned i = 0; i < m->layout.count; i++) {
        char self[32];
        int fd = setattr_open(s, m, i, uid, who), rc = 0;
        if (fd == -ENOENT)
            continue;
        if (fd < 0) {
            first = first ? first : fd;
            continue;
        }
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        if (mode != (mode_t)-1 && chmod(self, mode & 0666) < 0)
            rc = -errno;
        if (rc == 0 && (uid != (uid_t)-1 || gid != (gid_t)-1) &&
            fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0)
            rc = -errno;
        close(fd);
        first = first ? first : rc;
    }
    return first;
}

int drx_stripe_subfile_new(struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                           mode_t mode, const char *who)
{
    const struct drx_stripe_subfile *sf = &m->sub[i];

    if (i < m->layout.count && sf->dir < s->cfg.stripe.ndirs &&
        drx_stripe_subfile_name_valid(sf->name)) {
        int fd = drx_stripe_pool_take(s, sf->dir, sf->name, mode);
        if (fd != -ENOENT)
            return fd;
    }
    return drx_stripe_subfile_open(s, m, i, O_RDWR | O_CREAT | O_EXCL, mode & 0666, who);
}

int drx_stripe_subfile_drop(struct drx_store *s, unsigned dir, const char *name)
{
    if (dir >= s->cfg.stripe.ndirs || s->dir_fds[dir] < 0 || !drx_stripe_subfile_name_valid(name))
        return 0;
    if (drx_stripe_pool_put(s, dir, name))
        return 0;
    return unlinkat(s->dir_fds[dir], name, 0) < 0 ? -errno : 0;
}

void drx_stripe_random_id(uint64_t *id)
{
    if (getrandom(id, sizeof *id, 0) != (ssize_t)sizeof *id) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *id = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
    }
}

/* ---- names -------------------------------------------------------------------------- */

/* The metafile mp held open (O_PATH, no link followed) while its name goes:
 * afterwards its link count says whether another name still holds the
 * striped file (drx_stripe_link).  The descriptor, or -errno. */
static int meta_hold(const char *mp)
{
    int fd = open(mp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* True when the metafile held as fd has no name left: its subfiles are
 * nobody's.  Unknown counts as still named (subfiles kept, fsck's). */
static bool meta_gone(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink == 0;
}

/* Removes m's subfiles, into the pool where they can go (mp names the
 * file in messages). */
static void remove_subfiles(struct drx_store *s, const char *mp, const struct drx_stripe_meta *m)
{
    for (unsigned i = 0; i < m->layout.count; i++) {
        struct stat st;
        /* another user's subfile named in this metafile is his, not its */
        if (m->owned && m->sub[i].dir < s->cfg.stripe.ndirs && s->dir_fds[m->sub[i].dir] >= 0 &&
            fstatat(s->dir_fds[m->sub[i].dir], m->sub[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            subfile_not_owners(m, &st)) {
            drx_log_ratelimited(DRX_LOG_WARNING,
                                "%s: subfile %s belongs to another user: not removed", mp,
                                m->sub[i].name);
            continue;
        }
        int rc = drx_stripe_subfile_drop(s, m->sub[i].dir, m->sub[i].name);
        if (rc < 0 && rc != -ENOENT)
            drx_log_ratelimited(DRX_LOG_WARNING, "%s: cannot remove subfile %s: %s", mp,
                                m->sub[i].name, strerror(-rc));
    }
}

/* Loads metafile mp, which must be the file held as fd: 0, -EAGAIN when
 * it was replaced meanwhile (its subfiles are then left alone), -EIO for
 * a bad one, or -errno with err. */
static int load_held(struct drx_store *s, const char *path, const char *mp, int fd,
                     struct drx_stripe_meta *m, struct drx_err *err)
{
    struct drx_err e2 = {{0}};
    struct stat held, st;
    int rc = drx_stripe_meta_load_st(mp, s->cfg.stripe.ndirs, m, &st, &e2);

    if (rc == 0 &&
        (fd < 0 || fstat(fd, &held) < 0 || held.st_ino != st.st_ino || held.st_dev != st.st_dev))
        return -EAGAIN;
    if (rc == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: no such striped file", path);
    if (rc < 0 && rc != -EIO)
        return drx_err_set(err, -rc, "%s", e2.msg);
    return rc;
}

/* drx_stripe_unlink() of metafile mp (path: the name for messages); with
 * gone, the subfiles to remove go there instead (count 0: none). */
static int unlink_meta(struct drx_store *s, const char *path, const char *mp,
                       struct drx_stripe_meta *gone, struct drx_err *err)
{
    struct drx_stripe_meta m;
    int rc, fd = meta_hold(mp);

    if (gone)
        gone->layout.count = 0;
    if (fd == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: no such striped file", path);
    rc = load_held(s, path, mp, fd, &m, err);
    if (rc < 0 && rc != -EIO && rc != -EAGAIN)
        goto out;
    bool valid = rc == 0, bad = rc == -EIO;
    /* Metafile first: a crash after it leaves orphan subfiles (fsck), never
     * a metafile naming subfiles that are gone. */
    rc = unlink(mp) < 0 ? drx_err_set(err, errno, "%s: %s", mp, strerror(errno)) : 0;
    if (rc == 0 && bad)
        drx_log_ratelimited(
            DRX_LOG_WARNING,
            "%s: removed a bad metafile; its subfiles (if any) are left for drx fsck", mp);
    /* Another name (a hard link) may still hold the file and its subfiles. */
    if (rc == 0 && valid && meta_gone(fd)) {
        if (gone)
            *gone = m;
        else
            remove_subfiles(s, mp, &m);
    }
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int drx_stripe_unlink(struct drx_store *s, const char *path, struct drx_err *err)
{
    return drx_stripe_unlink_keep(s, path, NULL, err);
}

int drx_stripe_unlink_keep(struct drx_store *s, const char *path, struct drx_stripe_meta *gone,
                           struct drx_err *err)
{
    char mp[PATH_MAX];

    if (gone)
        gone->layout.count = 0;
    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    return unlink_meta(s, path, mp, gone, err);
}

void drx_stripe_subfiles_drop(struct drx_store *s, const struct drx_stripe_meta *gone)
{
    if (gone && gone->layout.count > 0)
        remove_subfiles(s, "(removed file)", gone);
}

/* The subfiles of old, a file a rename replaced, now unreachable; not
 * those of src (the renamed file, when known) it shares (a rename onto
 * itself). */
static void remove_replaced(struct drx_store *s, const struct drx_stripe_meta *src,
                            const struct drx_stripe_meta *old)
{
    for (unsigned i = 0; i < old->layout.count; i++) {
        bool shared = false;
        for (unsigned j = 0; src && j < src->layout.count; j++)
            shared |= src->sub[j].dir == old->sub[i].dir &&
                      strcmp(src->sub[j].name, old->sub[i].name) == 0;
        if (!shared)
            drx_stripe_subfile_drop(s, old->sub[i].dir, old->sub[i].name);
    }
}

/* drx_stripe_rename() of metafile mfrom to mto (from: the name for
 * messages). */
static int rename_meta(struct drx_store *s, const char *from, const char *mfrom, const char *mto,
                       unsigned flags, struct drx_err *err)
{
    struct drx_stripe_meta src, old;
    bool have_old = false;
    int rc, ofd = -1;

    rc = drx_stripe_meta_load_st(mfrom, s->cfg.stripe.ndirs, &src, NULL, NULL);
    bool src_ok = rc == 0;
    if (rc == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: no such striped file", from);
    if (!(flags & RENAME_NOREPLACE)) {
        /* what is loaded must be the file held: a metafile put at mto
         * between the two is another file, whose subfiles are in use */
        struct drx_err scratch = {{0}};
        ofd = meta_hold(mto);
        have_old = ofd >= 0 && load_held(s, mto, mto, ofd, &old, &scratch) == 0;
    }
    if (flags & RENAME_NOREPLACE)
        rc = renameat2(AT_FDCWD, mfrom, AT_FDCWD, mto, RENAME_NOREPLACE);
    else
        rc = rename(mfrom, mto);
    if (rc < 0)
        rc = drx_err_set(err, errno, "%s -> %s: %s", mfrom, mto, strerror(errno));
    /* The replaced metafile may have other names (hard links, or the
     * renamed file itself): then its subfiles are still in use. */
    if (rc < 0 || !have_old || !meta_gone(ofd)) {
        if (ofd >= 0)
            close(ofd);
        return rc < 0 ? rc : 0;
    }
    close(ofd);
    remove_replaced(s, src_ok ? &src : NULL, &old);
    return 0;
}

int drx_stripe_rename(struct drx_store *s, const char *from, const char *to, unsigned flags,
                      struct drx_err *err)
{
    char mfrom[PATH_MAX], mto[PATH_MAX];

    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return drx_err_set(err, EINVAL, "%s: unsupported rename flags", from);
    if (drx_stripe_meta_path(from, mfrom, sizeof mfrom) < 0 ||
        drx_stripe_meta_path(to, mto, sizeof mto) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", to);
    return rename_meta(s, from, mfrom, mto, flags, err);
}

int drx_stripe_link(struct drx_store *s, const char *from, const char *to, struct drx_err *err)
{
    char mfrom[PATH_MAX], mto[PATH_MAX];
    struct drx_stripe_meta m;
    struct stat st;
    int rc;

    if (drx_stripe_meta_path(from, mfrom, sizeof mfrom) < 0 ||
        drx_stripe_meta_path(to, mto, sizeof mto) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", to);
    rc = drx_stripe_meta_load_st(mfrom, s->cfg.stripe.ndirs, &m, &st, err);
    if (rc < 0)
        return rc;
    /* Every name must see every later size: the size is then only ever
     * updated in place, which an older drx's unpadded metafile cannot
     * take.  Such a one (a single name yet) is rewritten first. */
    if (!drx_stripe_meta_padded(mfrom)) {
        if (st.st_nlink > 1)
            return drx_err_set(err, EIO, "%s: linked metafile not in the padded form", mfrom);
        rc = drx_stripe_meta_write(mfrom, &m, false, false, &st, 0, NULL);
        if (rc < 0)
            return drx_err_set(err, -rc, "%s: %s", mfrom, strerror(-rc));
    }
    if (link(mfrom, mto) < 0)
        return drx_err_set(err, errno, "%s -> %s: %s", mfrom, mto, strerror(errno));
    return 0;
}

/* Subfile i of temporary tmp cut to the `want` bytes its size needs (when
 * longer) and fdatasynced.  0 or -errno with err. */
static int subfile_commit(struct drx_store *s, const char *tmp, const struct drx_stripe_meta *m,
                          unsigned i, uint64_t want, struct drx_err *err)
{
    struct stat st;
    int rc, fd = drx_stripe_subfile_open(s, m, i, O_RDWR, 0, tmp);

    if (fd < 0) {
        rc = fd == -ENOENT ? -EIO : fd;
        return drx_err_set(err, -rc, "%s: subfile %u (%s): %s", tmp, i, m->sub[i].name,
                           fd == -ENOENT ? "missing" : strerror(-fd));
    }
    rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && (uint64_t)st.st_size > want && ftruncate(fd, (off_t)want) < 0)
        rc = -errno;
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: subfile %u (%s): %s", tmp, i, m->sub[i].name,
                           strerror(-rc));
    return 0;
}

/* Data first (SPEC 9): every subfile of temporary tmp on disk, cut to what
 * `size` needs, and its name durable in its stripe directory.  0 or -errno
 * with err. */
static int subfiles_commit(struct drx_store *s, const char *tmp, const struct drx_stripe_meta *m,
                           uint64_t size, struct drx_err *err)
{
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};

    for (unsigned i = 0; i < m->layout.count; i++) {
        int rc = subfile_commit(s, tmp, m, i, drx_stripe_subfile_len(&m->layout, i, size), err);
        if (rc < 0)
            return rc;
        dirs[m->sub[i].dir] = true;
    }
    for (size_t d = 0; d < s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
        if (dirs[d] && s->dir_fds[d] >= 0 && fsync(s->dir_fds[d]) < 0)
            return drx_err_set(err, errno, "%s: %s", s->cfg.stripe.dirs[d], strerror(errno));
    return 0;
}

int drx_stripe_commit_temp(struct drx_store *s, const char *tmp, const char *path, uint64_t size,
                           struct drx_err *err)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta m;
    struct stat old, tst, *like = NULL;
    int rc;

    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    if (size > DRX_STRIPE_MAX_SIZE)
        return drx_err_set(err, EFBIG, "%s: size %llu is too large", path,
                           (unsigned long long)size);
    rc = drx_stripe_meta_load_st(tmp, s->cfg.stripe.ndirs, &m, &tst, err);
    if (rc == 0)
        rc = subfiles_commit(s, tmp, &m, size, err);
    if (rc < 0)
        return rc;
    /* Then the metafile: the size written into the temporary one (nobody
     * else has it), durable, and renamed over NAME.nafs: readers see the
     * old file or the whole new one.  A file it replaces keeps its mode
     * and owner, as cp into an existing file does. */
    if (lstat(mp, &old) == 0 && S_ISREG(old.st_mode))
        like = &old;
    /* The subfiles first take what the metafile will (its owner: a
     * metafile of another user than the process's is trusted only with
     * that user's subfiles; its mode: the bytes no more open than the
     * file).  Best effort, as drx_replace_take_owner: who may not chown
     * keeps the file his, metafile and subfiles alike. */
    if (like)
        (void)drx_stripe_subfiles_setattr(
            s, &m, drx_replace_group_own(mp, "system.posix_acl_access", like->st_mode) & 07777,
            like->st_uid, like->st_gid, path);
    m.size = size;
    /* In place: the temporary is ours alone, and a full disk (the copy
     * filled it) has no block for a rewrite. */
    rc = drx_stripe_meta_size_in_place(tmp, &tst, &m, s->cfg.stripe.ndirs, like, true, NULL);
    if (rc == -EOPNOTSUPP) /* not in this drx's padded form */
        rc = drx_stripe_meta_write_here(tmp, &m, O_TRUNC, 0, like, true, NULL);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", tmp, strerror(-rc));
    /* and its xattrs (user ones, its ACL): the metafile is the striped
     * file's inode, which cp into an existing file keeps */
    if (like) {
        int tfd = open(tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (tfd >= 0) {
            drx_replace_copy_xattrs(mp, tfd, like);
            (void)fsync(tfd);
            close(tfd);
        }
    }
    rc = rename_meta(s, tmp, tmp, mp, 0, err);
    if (rc < 0)
        return rc;
    rc = drx_io_fsync_parent(mp);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", mp, strerror(-rc));
    return 0;
}

int drx_stripe_discard_temp(struct drx_store *s, const char *tmp, struct drx_err *err)
{
    return unlink_meta(s, tmp, tmp, NULL, err);
}
