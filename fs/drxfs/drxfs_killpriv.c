/* Set-ID bits and file capabilities taken off a file that is written or
 * truncated: by the daemon, not the kernel.
 *
 * Why: the kernel, before each write(2) of a FUSE file, asks the daemon
 * for the file's security.capability (a GETXATTR round trip per write:
 * half the requests of a stream of 4 KiB writes), because nothing tells it
 * the answer still holds.  With FUSE_HANDLE_KILLPRIV_V2 granted at INIT
 * (libfuse 3.14 does not know it: drxfs_init_reply.c adds it) the kernel
 * marks an inode it has checked once (S_NOSEC) and checks again only after
 * its attributes are refreshed, and leaves the removal to the daemon: it
 * flags each WRITE, and each truncating or chowning SETATTR, of a caller
 * without CAP_FSETID (FUSE_WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID).  Here:
 *
 *   - the flag of the request each worker has just read is noted
 *     (drxfs_killpriv_request, from the device io; libfuse's high-level
 *     API passes it to no handler, and each worker serves what it read);
 *   - for a flagged write or truncation the file loses its set-user-ID
 *     bit, and its set-group-ID bit when its group may execute it or the
 *     writer is not of its group (ext4's rule; the kernel's fuse_setattr
 *     of Linux 6.18 cleared it on group execute only);
 *   - at every write(2) and truncation, whoever asks, a security.capability
 *     the file holds is removed (the kernel's rule too), also one set
 *     behind the mount since the kernel last looked.
 *
 * Which file: a striped file's metafile (its mode and attributes; a chmod
 * reaches the subfiles), a plain file itself, an array's files through
 * its chmod.  A plain file's writes need nothing: the daemon writes as the
 * caller (charge.c) or as the mounting user, without CAP_FSETID, and the
 * store's file system clears the bits and the capability itself; nor does
 * chown, which the store's file system applies the same rule to, but for
 * chown(file, -1, -1), which on Linux clears them too: the kernel then
 * sends a SETATTR that sets nothing, for which libfuse calls no handler,
 * only the getattr after it (drxfs_killpriv_getattr).  (The kernel sends
 * the same when a write by a caller without CAP_FSETID found a set-ID bit
 * or a capability: the bits go then too, as they would at the write; and
 * when root's write found a capability: the bits stay, as CAP_FSETID keeps
 * them, the caller's system call, in /proc/TID/syscall, telling it from a
 * chown.)  A chown(-1, -1) of a file its caller does not own, which the
 * kernel lets through (it leaves ATTR_MODE out), is refused when it would
 * clear a bit (EPERM, as on ext4): else anyone could strip another's
 * set-user-ID program.  A
 * FALLOCATE comes without a flag: there a caller other than root is taken
 * to lack CAP_FSETID.  A write through a shared mapping never removed
 * anything.  With -o killpriv=kernel the kernel removes them, but not at a
 * write of a direct_io file (fuse_direct_write_iter calls no
 * file_remove_privs), which it flags whatever was granted: such a write
 * is served here then too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drxfs_striped_i.h" /* drxfs_i.h: FUSE_USE_VERSION first */

#include <linux/fuse.h>

#define CAPS_XATTR "security.capability"

/* The request this worker thread read last asks for set-ID bits to go;
 * it is a SETATTR that sets nothing (chown -1 -1).  fsetid: the caller
 * may keep a set-group-ID bit its group cannot execute, though not of
 * his group (CAP_FSETID; for the kernel's flagged requests, never). */
static __thread bool kill_suidgid, nothing_set, fsetid;
/* At an empty SETATTR (chown(-1, -1)) of a caller other than root: the
 * bits go only from his own files; refused: another's had some to clear
 * (EPERM at a chown). */
static __thread bool chowning, refused;
/* A chown's set-group-ID bit goes even without group execute (the caller
 * was not of the file's group before it). */
static __thread bool sgid_drop;

void drxfs_killpriv_request(const void *buf, size_t len)
{
    struct fuse_in_header h;
    const char *arg = (const char *)buf + sizeof h;

    kill_suidgid = nothing_set = false;
    if (len < sizeof h)
        return;
    memcpy(&h, buf, sizeof h);
    len -= sizeof h;
    if (h.opcode == FUSE_WRITE) {
        struct fuse_write_in in;
        if (len >= sizeof in) {
            memcpy(&in, arg, sizeof in);
            kill_suidgid = in.write_flags & FUSE_WRITE_KILL_SUIDGID;
        }
    } else if (h.opcode == FUSE_SETATTR) {
        struct fuse_setattr_in in;
        if (len >= sizeof in) {
            memcpy(&in, arg, sizeof in);
            kill_suidgid = in.valid & FATTR_KILL_SUIDGID;
            nothing_set = !(in.valid & ~(uint32_t)(FATTR_FH | FATTR_LOCKOWNER));
        }
    }
}

int drxfs_killpriv_option(const char *name, const char *value)
{
    bool daemon;

    if (strcmp(name, "killpriv") != 0)
        return 1;
    if (drxfs_opt_choice(name, value, "daemon", "kernel", &daemon) < 0)
        return -1;
    drxfs_init_want_killpriv(daemon);
    return 0;
}

/* The mode of a file of stat st without the set-ID bits a write by a
 * caller without CAP_FSETID clears: set-user-ID, and set-group-ID when its
 * group may execute it, or when the caller is not of its group (without
 * group execute it marks mandatory locking; the kernel's rule,
 * setattr_should_drop_sgid). */
static mode_t killed(const struct stat *st)
{
    mode_t m = st->st_mode & 07777 & ~(mode_t)S_ISUID;
    if ((m & S_ISGID) &&
        ((m & S_IXGRP) || sgid_drop || (!fsetid && !drxfs_caller_in_group(st->st_gid))))
        m &= ~(mode_t)S_ISGID;
    return m;
}

/* Whether the set-ID bits of a file of stat st are to be cleared now:
 * some would go and, at a chown of a caller other than root, he owns it;
 * else the kernel's chmod of them is refused, as on ext4 (notify_change
 * adds ATTR_MODE, which setattr_prepare checks; FUSE leaves it out). */
static bool to_clear(const struct stat *st)
{
    if (killed(st) == (st->st_mode & 07777))
        return false;
    if (chowning && st->st_uid != fuse_get_context()->uid) {
        refused = true;
        return false;
    }
    return true;
}

static void log_failure(const char *what, const char *name, int rc)
{
    drx_log_ratelimited(DRX_LOG_WARNING, "%s: %s at a write: %s", name, what, strerror(-rc));
}

/* The file to clear: a descriptor of it (O_PATH will do), held (the
 * open file's; a duplicate of the metafile a striped file's handle holds,
 * own: closed here when refused), or else name rel opened as
 * the caller reaches it (drxfs_caller_entry_open), with its stat in *st;
 * -1 when there is none to clear, or it is no regular file.  Everything
 * is then done on that descriptor: the stat that says which bits go and
 * the chmod that clears them were by name, and a user who exchanged his
 * own set-user-ID file (04666) and root's 0600 one behind the mount
 * between the two had root's made 0666, its subfiles too.  A file
 * reached by name is one the caller may write (or, at a chown, owns:
 * to_clear): another's set-ID program, renamed over his file, is not
 * his to strip at a truncate the open refuses after. */
static int kill_target(int held, bool own, const char *rel, struct stat *st)
{
    int fd = held >= 0 ? held : rel ? drxfs_caller_entry_open(rel) : -1;

    if (fd < 0)
        return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
        (held < 0 && !chowning && !drxfs_caller_may_fd(fd, st, 2))) {
        if (held < 0 || own)
            close(fd);
        return -1;
    }
    return fd;
}

/* The capability of the file open at fd removed, should it hold one (by
 * its /proc/self/fd name: the inode whatever its names).  0 or -errno. */
static int caps_of_fd(int fd)
{
    char p[32];

    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    if (removexattr(p, CAPS_XATTR) < 0 && errno != ENODATA && errno != ENOTSUP)
        return -errno;
    return 0;
}

/* The set-ID bits of the file open at fd (of stat st) cleared, as to_clear
 * and killed say.  0 or -errno. */
static int clear_of_fd(int fd, const struct stat *st)
{
    char p[32];

    if (!kill_suidgid || !to_clear(st))
        return 0;
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    return chmod(p, killed(st)) < 0 ? -errno : 0;
}

/* A striped file: its metafile (its mode and attributes).  Its subfiles
 * keep theirs: they take the rwx bits only (mode & 0666), which the
 * clearing leaves. */
static void striped_kill(const struct drxfs_node *n, struct drxfs_fh *fh)
{
    char meta[PATH_MAX], key[PATH_MAX];
    int held = fh ? drx_stripe_meta_dup(fh->sf->f) : -1, rc;
    struct stat st;

    if (held < 0 && drxfs_striped_meta_rel(n, fh, meta, key) < 0)
        return; /* removed: nothing to change */
    int fd = kill_target(held, true, meta, &st);
    if (fd < 0)
        return;
    if ((rc = caps_of_fd(fd)) < 0)
        log_failure("removing its capability", fh ? fh->sf->key : meta, rc);
    else if ((rc = clear_of_fd(fd, &st)) < 0)
        log_failure("clearing its set-ID bits", fh ? fh->sf->key : meta, rc);
    close(fd);
}

/* A plain file's truncation (its writes: the store's file system). */
static void plain_kill(const struct drxfs_node *n, struct drxfs_fh *fh)
{
    const char *name = n ? n->rel : "(open file)";
    struct stat st;
    int rc, fd = kill_target(fh ? fh->fd : -1, false, n ? n->rel : NULL, &st);

    if (fd < 0)
        return;
    if ((rc = caps_of_fd(fd)) < 0)
        log_failure("removing its capability", name, rc);
    if ((rc = clear_of_fd(fd, &st)) < 0)
        log_failure("clearing its set-ID bits", name, rc);
    if (!fh)
        close(fd);
}

/* ops->chmod for the kernel, not the caller: an array's chmod refuses a
 * caller who does not own its files (array_chmod), and the writer of a
 * view need not (the kernel's own clearing is not checked either). */
static int chmod_as_root(const struct drxfs_kind_ops *ops, const struct drxfs_node *n,
                         struct drxfs_fh *fh, mode_t mode)
{
    struct fuse_context *c = fuse_get_context();
    uid_t uid = c->uid;
    int rc;

    c->uid = 0;
    rc = ops->chmod(n, fh, mode);
    c->uid = uid;
    return rc;
}

/* The stat the mount shows of n or fh (by its kind's table, nothing
 * recorded of it).  0 or -errno. */
static int mount_stat(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path,
                      struct stat *st)
{
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh ? fh->kind : n->kind);
    int rc = fh && ops->fgetattr ? ops->fgetattr(fh, path, st) : 1;

    if (rc == 1 || rc == DRXFS_FGETATTR_NEW)
        rc = n ? ops->getattr(n, path, st) : -ENOENT;
    return rc;
}

/* An array's files (not its directory: chown(-1, -1) keeps a
 * directory's bits), only for a flagged request: each loses its own
 * set-ID bits, on the descriptor stat'ed (drxfs_array_kill_fds).  Its
 * chmod by name, as root, with the mode the mount showed, made root's
 * 0600 array, exchanged for the caller's set-ID one behind the mount in
 * between, 0666.  A file reached by name is one he may write (or, at a
 * chown, owns). */
static void array_kill(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path)
{
    int fds[2];

    if (!kill_suidgid || (fh ? fh->kind : n->kind) == DRXFS_ARRAY)
        return;
    /* at each write of another's array view: one fstat, not the view's
     * attributes, which empty its chunk cache when the .xta changed (as
     * it does at every write) */
    if (fh && (fh->kind == DRXFS_ADATA || fh->kind == DRXFS_ANPY) && !drxfs_array_setid(fh))
        return;
    if (drxfs_array_kill_fds(n, fh, fds) < 0)
        return;
    for (int i = 0; i < 2; i++) {
        struct stat st;
        int rc = 0;
        if (fds[i] < 0)
            continue;
        if (fstat(fds[i], &st) == 0 && S_ISREG(st.st_mode) &&
            (fh || chowning || drxfs_caller_may_fd(fds[i], &st, 2)))
            rc = clear_of_fd(fds[i], &st);
        if (rc < 0)
            log_failure("clearing its set-ID bits", path ? path : "(open file)", rc);
        close(fds[i]);
    }
}

/* Any other kind that can hold set-ID bits: through its chmod, only for
 * a flagged request. */
static void other_kill(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path)
{
    const struct drxfs_kind_ops *ops = drxfs_ops_of(fh ? fh->kind : n->kind);
    struct stat st;
    int rc;

    if (drxfs_is_array_kind(fh ? fh->kind : n->kind)) {
        array_kill(n, fh, path);
        return;
    }
    if (!kill_suidgid || !ops->chmod)
        return;
    rc = mount_stat(n, fh, path, &st);
    if (rc == 0 && S_ISDIR(st.st_mode))
        return; /* an array's directory: chown(-1, -1) keeps its bits */
    if (rc == 0 && to_clear(&st) && (rc = chmod_as_root(ops, n, fh, killed(&st))) < 0)
        log_failure("clearing its set-ID bits", path ? path : "(open file)", rc);
}

void drxfs_killpriv_write(struct drxfs_fh *fh, const char *path)
{
    /* -o killpriv=kernel: the kernel does it, but at a direct_io write,
     * which it flags always and never clears at (fuse_direct_io) */
    if (!drxfs_init_killpriv() && !kill_suidgid)
        return;
    if (fh->kind == DRXFS_STRIPED)
        striped_kill(NULL, fh);
    else if (fh->kind != DRXFS_PLAIN)
        other_kill(NULL, fh, path);
}

void drxfs_killpriv_fallocate(struct drxfs_fh *fh, const char *path)
{
    /* the kernel flags no FALLOCATE: a caller other than root is taken to
     * lack CAP_FSETID (the capability is not in the request) */
    if (!drxfs_init_killpriv())
        return;
    kill_suidgid = fuse_get_context()->uid != 0;
    drxfs_killpriv_write(fh, path);
    kill_suidgid = false;
}

/* Whether the caller (blocked in the system call that sent this request)
 * is in chown(2) or its kin (drxfs_caller_syscall): 1 or 0; -1 unknown. */
static int caller_chowns(void)
{
    unsigned long args[2];
    long nr;

    if (drxfs_caller_syscall(&nr, args) < 0)
        return -1;
    return nr == SYS_fchown || nr == SYS_fchownat
#ifdef SYS_chown
           || nr == SYS_chown || nr == SYS_lchown
#endif
        ;
}

int drxfs_killpriv_getattr(struct drxfs_fh *fh, const char *path)
{
    uid_t uid = fuse_get_context()->uid;

    if (!nothing_set)
        return 0;
    nothing_set = false;
    if (!drxfs_init_killpriv())
        return 0;
    /* a write(2) sends the same empty SETATTR (file_remove_privs): root's
     * (which found a capability, the kernel has just removed it) keeps
     * them, CAP_FSETID; another's clears them at its WRITE, which the
     * kernel flags.  So a caller other than root clears them here from
     * his own files only, whatever his system call (a caller who exits
     * before /proc is read must not pass for a writer), and is refused
     * another's at a chown only. */
    int chowns = caller_chowns();
    if (uid == 0 && chowns == 0)
        return 0;
    /* as chown_common does for any caller: set-user-ID always, set-group-ID
     * as at a write, root (CAP_FSETID) keeping it without group execute */
    kill_suidgid = true;
    fsetid = uid == 0;
    chowning = uid != 0;
    refused = false;
    if (fh) {
        drxfs_killpriv_truncate(NULL, fh, path);
    } else if (path) {
        int rc;
        struct drxfs_node *n = drxfs_node_get_memo(path, false, &rc);
        if (n && n->kind != DRXFS_DIR)
            drxfs_killpriv_truncate(n, NULL, path);
        free(n);
    }
    bool eperm = refused && chowns == 1;
    kill_suidgid = fsetid = chowning = refused = false;
    return eperm ? -EPERM : 0;
}

void drxfs_killpriv_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path)
{
    if (!drxfs_init_killpriv())
        return;
    enum drxfs_kind k = fh ? fh->kind : n->kind;
    if (k == DRXFS_STRIPED)
        striped_kill(n, fh);
    else if (k == DRXFS_PLAIN)
        plain_kill(n, fh);
    else if (k != DRXFS_DIR)
        other_kill(n, fh, path);
}

bool drxfs_killpriv_chown_before(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path,
                                 struct stat *before)
{
    return kill_suidgid && drxfs_init_killpriv() && mount_stat(n, fh, path, before) == 0 &&
           !S_ISDIR(before->st_mode);
}

void drxfs_killpriv_chown(const struct drxfs_node *n, struct drxfs_fh *fh, const char *path,
                          const struct stat *before)
{
    /* the store's file was chowned as root, which keeps a set-group-ID bit
     * without group execute; chown_common drops it for a caller without
     * CAP_FSETID outside the group the file had (the set-user-ID bit and
     * the rest went with the store's chown) */
    if (!(before->st_mode & S_ISGID) || fuse_get_context()->uid == 0 ||
        drxfs_caller_in_group(before->st_gid))
        return;
    sgid_drop = true;
    drxfs_killpriv_truncate(n, fh, path);
    sgid_drop = false;
}
