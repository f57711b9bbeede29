/* Names and directories: mkdir, rmdir, symlink, link, unlink, mknod,
 * rename (plain names, arrays as their two store files, striped files as
 * their metafile) and directory listings that show the store as the mount
 * presents it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

/* ---- names ---- */

/* The guard of a call that makes (gone NULL) or removes or replaces
 * names (gone, store names) in directories the kernel checked the
 * caller on as it holds them (drxfs_guard_dir); drxfs_guard_done after. */
#define GUARD_DIR(a, b) drxfs_guard_dir((const char *[2]){(a), (b)})

/* Makes store name rel as the caller (drxfs_ids_caller: the kernel
 * checks him on the directory it is made in, whichever the name leads to
 * by then, and the entry is his from the start, its group by the
 * kernel's rule, as drxfs_chown_new's); where the daemon acts as itself
 * (root's calls, a daemon not run as root) as before, then given to the
 * caller by name.  A chown of the name after making it, as root, gave a
 * user exchanging his directory with root's behind the mount in between
 * root's entry of that name.  0 or -errno. */
static int make_as_caller(const char *rel, int (*make)(const char *rel, const void *arg),
                          const void *arg)
{
    struct drxfs_ids ids;
    int rc = drxfs_ids_caller(&ids, rel);

    if (rc < 0)
        return rc;
    bool his = ids.on;
    rc = make(rel, arg);
    drxfs_ids_restore(&ids);
    if (rc == 0 && !his)
        drxfs_chown_new(rel);
    return rc;
}

static int make_dir(const char *rel, const void *arg)
{
    return drx_store_entry_mkdir(drxfs.store, rel, *(const mode_t *)arg);
}

static int make_symlink(const char *rel, const void *arg)
{
    return drx_store_entry_symlink(drxfs.store, arg, rel);
}

struct node_args {
    mode_t mode;
    dev_t rdev;
};

static int make_node(const char *rel, const void *arg)
{
    const struct node_args *a = arg;
    return drx_store_entry_mknod(drxfs.store, rel, a->mode, a->rdev);
}

/* Refuses names the store reserves; EEXIST when name already stands for
 * something (an array NAME.xmd exists while NAME does not). */
int drxfs_check_new_name(const char *path, const char *rel, const char *name, bool at_root)
{
    if (drxfs.ro)
        return -EROFS;
    if (drxfs_name_reserved(name, at_root)) {
        drx_log(DRX_LOG_DEBUG, "%s: reserved name in the store", path);
        return -EPERM;
    }
    return drxfs_child_missing(path, rel, name, at_root);
}

int drxfs_op_mkdir(const char *path, mode_t mode)
{
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    if ((rc = drxfs_resolve_new(path, rel, &name, &at_root)) < 0)
        return rc;
    if ((rc = drxfs_check_new_name(path, rel, name, at_root)) < 0)
        return rc;
    mode = drxfs_new_mode(rel, mode) & 07777;
    if ((rc = make_as_caller(rel, make_dir, &mode)) < 0)
        return rc;
    drxfs_node_memo(path, rel, at_root);
    return 0;
}

int drxfs_op_symlink(const char *target, const char *path)
{
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    if ((rc = drxfs_resolve_new(path, rel, &name, &at_root)) < 0)
        return rc;
    if ((rc = drxfs_check_new_name(path, rel, name, at_root)) < 0)
        return rc;
    if ((rc = make_as_caller(rel, make_symlink, target)) < 0)
        return rc;
    drxfs_node_memo(path, rel, at_root);
    return 0;
}

int drxfs_op_mknod(const char *path, mode_t mode, dev_t rdev)
{
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    if (!S_ISREG(mode)) {
        /* A FIFO, socket or device node is made as what it is; the kernel
         * serves it at the mount point (the daemon never opens it).  The
         * kernel checked CAP_MKNOD for devices; they are made for root
         * only, whatever the daemon may do. */
        if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode))
            return -EINVAL;
        if ((S_ISCHR(mode) || S_ISBLK(mode)) && fuse_get_context()->uid != 0)
            return -EPERM;
        if ((rc = drxfs_resolve_new(path, rel, &name, &at_root)) < 0)
            return rc;
        if ((rc = drxfs_check_new_name(path, rel, name, at_root)) < 0)
            return rc;
        mode = drxfs_new_mode(rel, mode);
        return make_as_caller(rel, make_node,
                              &(struct node_args){mode & (S_IFMT | 07777), rdev});
    }
    struct fuse_file_info fi = {.flags = O_WRONLY | O_CREAT | O_EXCL};
    rc = drxfs_op_create(path, mode, &fi);
    if (rc == 0)
        drxfs_op_release(path, &fi);
    return rc;
}

mode_t drxfs_node_type(const struct drxfs_node *n)
{
    switch (n->kind) {
    case DRXFS_DIR:
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
    case DRXFS_LINK:
        return n->st.st_mode & S_IFMT;
    case DRXFS_ARRAY:
        return S_IFDIR;
    default:
        return S_IFREG;
    }
}

int drxfs_op_link(const char *from, const char *to)
{
    struct drxfs_node *n;
    char rel[PATH_MAX];
    const char *name;
    bool at_root;
    int rc;

    if ((rc = drxfs_resolve_new(to, rel, &name, &at_root)) < 0)
        return rc;
    if ((rc = drxfs_check_new_name(to, rel, name, at_root)) < 0)
        return rc;
    if (!(n = drxfs_node_get(from, &rc)))
        return drxfs_gone(from, rc);
    /* The kernel links the inode it holds for from, and fails the link
     * with EIO when the new name's type is another: a source replaced
     * behind the mount (a symlink the kernel holds, a file now, made
     * through another mount) was linked, and the caller told EIO.  ESTALE
     * first: link(2) looks the source up again and retries. */
    if (n->kind != DRXFS_ZARR && (rc = drxfs_type_told(from, drxfs_node_type(n))) < 0) {
        free(n);
        return rc;
    }
    /* A striped file's second name links its metafile; an array is two
     * store files and a directory of views: no hard links. */
    if (n->kind == DRXFS_STRIPED)
        rc = drxfs_striped_link(n, rel);
    else if (n->kind != DRXFS_PLAIN && n->kind != DRXFS_SPECIAL && n->kind != DRXFS_LINK)
        rc = -EPERM;
    else {
        drxfs_guard_link((const char *[2]){n->rel, rel});
        rc = drx_store_entry_link(drxfs.store, n->rel, rel);
        drxfs_guard_done();
    }
    free(n);
    return rc;
}

/* Processes refused the removal of an array's own file (data, info, ...),
 * of a metadata file or directory of zarr/, or of an array directory, a
 * moment ago: `rm -r` of an array, or of a directory holding arrays, is
 * refused those, then goes on to the chunk keys of zarr/, and removing a
 * key stores the fill (Zarr deletes a chunk that holds only the fill).
 * Such a process is refused key removals too, while it keeps being
 * refused (each refusal renews its mark for RM_MARK_SECONDS), so that a
 * failed `rm -rf` leaves the array's data.  zarr-python removes keys
 * only, never metadata (its mode="w" stops at the first refusal). */
#define RM_MARKS 256
/* Live marks one user may hold: another user's refused processes never
 * push out this user's marks (a table full of one user's marks would
 * let that user's flood end a victim's mark during its rm -rf). */
#define RM_MARKS_PER_USER 64
#define RM_MARK_SECONDS 30
static struct {
    pthread_mutex_t mutex;
    pid_t pid[RM_MARKS]; /* 0: free */
    uid_t uid[RM_MARKS];
    struct timespec at[RM_MARKS];
} rm_marks = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* The slot for a new mark of uid's: the user's oldest live mark when it
 * holds RM_MARKS_PER_USER of them, else a free or expired slot, else the
 * oldest mark of all.  rm_marks locked. */
static unsigned rm_mark_slot(uid_t uid, const struct timespec *now)
{
    unsigned mine = 0, my_oldest = 0, oldest = 0, free_slot = RM_MARKS;

    for (unsigned i = 0; i < RM_MARKS; i++) {
        if (rm_marks.pid[i] == 0 || now->tv_sec - rm_marks.at[i].tv_sec >= RM_MARK_SECONDS) {
            if (free_slot == RM_MARKS)
                free_slot = i;
            continue;
        }
        if (rm_marks.at[i].tv_sec < rm_marks.at[oldest].tv_sec || rm_marks.pid[oldest] == 0)
            oldest = i;
        if (rm_marks.uid[i] == uid &&
            (mine++ == 0 || rm_marks.at[i].tv_sec < rm_marks.at[my_oldest].tv_sec))
            my_oldest = i;
    }
    if (mine >= RM_MARKS_PER_USER)
        return my_oldest;
    return free_slot < RM_MARKS ? free_slot : oldest;
}

/* Whether the calling process was marked within RM_MARK_SECONDS; with
 * mark, (re)marks it. */
static bool rm_marked(bool mark)
{
    const struct fuse_context *c = fuse_get_context();
    struct timespec now;
    bool found = false;
    unsigned i;

    if (c->pid <= 0)
        return false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&rm_marks.mutex);
    for (i = 0; i < RM_MARKS; i++)
        if (rm_marks.pid[i] == c->pid && rm_marks.uid[i] == c->uid) {
            found = now.tv_sec - rm_marks.at[i].tv_sec < RM_MARK_SECONDS;
            break;
        }
    if (mark) {
        /* a pid another user's process had (reused) gets a slot anew */
        if (i == RM_MARKS)
            i = rm_mark_slot(c->uid, &now);
        rm_marks.pid[i] = c->pid;
        rm_marks.uid[i] = c->uid;
        rm_marks.at[i] = now;
    }
    pthread_mutex_unlock(&rm_marks.mutex);
    return found;
}

int drxfs_op_unlink(const char *path)
{
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (drxfs_hidden_zarr_done(path)) {
        drxfs_hidden_unlinked(path);
        return 0;
    }
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_PLAIN:
    case DRXFS_SPECIAL:
    case DRXFS_LINK:
        GUARD_DIR(n->rel, NULL);
        rc = drx_store_entry_unlink(drxfs.store, n->rel, 0);
        drxfs_guard_done();
        break;
    case DRXFS_STRIPED:
        rc = drxfs_striped_unlink(n);
        break;
    case DRXFS_ZARR:
        rc = drxfs_zarr_unlink(n, rm_marked(false));
        if (rc == -EPERM || rc == -EISDIR)
            rm_marked(true);
        /* a hidden name's record goes with its last close's unlink,
         * whatever became of the file meanwhile */
        if (rc < 0)
            drxfs_hidden_unlinked(path);
        break;
    case DRXFS_DIR:
    case DRXFS_ARRAY:
        rc = -EISDIR;
        break;
    default:
        /* the files of a view: remove arrays with `drx rm` */
        rm_marked(true);
        rc = -EPERM;
        break;
    }
    free(n);
    if (rc == 0)
        drxfs_hidden_unlinked(path);
    return rc;
}

int drxfs_op_rmdir(const char *path)
{
    struct drxfs_node *n;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (!(n = drxfs_node_get(path, &rc)))
        return rc;
    switch (n->kind) {
    case DRXFS_DIR:
        if (strcmp(n->rel, ".") == 0)
            rc = -EBUSY;
        else {
            GUARD_DIR(n->rel, NULL);
            rc = drx_store_entry_unlink(drxfs.store, n->rel, AT_REMOVEDIR);
            drxfs_guard_done();
            if (rc == 0)
                drxfs_arr_forget(n->rel);
        }
        break;
    case DRXFS_ARRAY:
        /* An array always holds data, data.npy and info; `drx rm` removes
         * it.  A view is not a thing that can be removed. */
        rc = n->nwords ? -EPERM : -ENOTEMPTY;
        rm_marked(true);
        break;
    case DRXFS_ZARR:
        rc = -EPERM;
        rm_marked(true);
        break;
    default:
        rc = -ENOTDIR;
        break;
    }
    free(n);
    return rc;
}

/* Opens the directory holding store-relative rel, never through a symlink
 * nor out of the store, and points *base at rel's last component. */
static int open_parent(const char *rel, const char **base)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(rel, '/');

    if (slash) {
        memcpy(dir, rel, (size_t)(slash - rel));
        dir[slash - rel] = '\0';
        *base = slash + 1;
    } else {
        strcpy(dir, ".");
        *base = rel;
    }
    return drx_store_entry_open(drxfs.store, dir, O_RDONLY | O_DIRECTORY, 0);
}

/* Moves array `from` to `to` (store-relative, no suffix): libcore's
 * crash-safe rename, relative to directories opened beneath the store. */
static int rename_array(const char *from, const char *to)
{
    struct drx_err err = {{0}};
    const char *fbase, *tbase;
    int fdir, tdir = -1, rc;

    if ((fdir = open_parent(from, &fbase)) < 0)
        return fdir;
    if ((tdir = open_parent(to, &tbase)) < 0) {
        rc = tdir;
        goto out;
    }
    /* in the directories held, checked as the caller's (drxfs_guard_dir) */
    if ((rc = drxfs_caller_dir_may(fdir, from, NULL)) < 0 ||
        (rc = drxfs_caller_dir_may(tdir, to, NULL)) < 0)
        goto out;
    rc = drx_array_rename(fdir, fbase, tdir, tbase, &err);
    if (rc < 0)
        drx_log_ratelimited(rc == -ENOTEMPTY ? DRX_LOG_DEBUG : DRX_LOG_WARNING,
                            "rename %s -> %s: %s", from, to, err.msg[0] ? err.msg : strerror(-rc));
out:
    close(fdir);
    if (tdir >= 0)
        close(tdir);
    return rc;
}

/* Renames a pass-through entry (directory, file, special file, symlink)
 * src onto rel, whose current node is dst (or NULL). */
static int rename_entry(const struct drxfs_node *src, const struct drxfs_node *dst, const char *rel,
                        unsigned int flags)
{
    if (dst && (dst->kind == DRXFS_ARRAY || dst->kind == DRXFS_STRIPED)) {
        int rc;
        if (src->kind == DRXFS_DIR)
            rc = dst->kind == DRXFS_ARRAY ? -ENOTEMPTY : -ENOTDIR;
        else if (dst->kind == DRXFS_ARRAY)
            rc = -EISDIR;
        else if ((rc = drxfs_striped_unlink(dst)) == 0) {
            GUARD_DIR(src->rel, NULL);
            rc = drx_store_entry_rename(drxfs.store, src->rel, rel, 0);
            drxfs_guard_done();
        }
        return rc;
    }
    GUARD_DIR(src->rel, dst ? dst->rel : NULL);
    int rc = drx_store_entry_rename(drxfs.store, src->rel, rel, flags);
    drxfs_guard_done();
    if (rc < 0)
        return rc;
    if (src->kind == DRXFS_DIR) {
        drxfs_arr_forget(src->rel);
        if (flags & RENAME_EXCHANGE)
            drxfs_arr_forget(rel);
        else
            drxfs_striped_dir_renamed(src->rel, rel);
        if (!(flags & RENAME_EXCHANGE))
            drxfs_hidden_dir_renamed(src->rel, rel);
    }
    return 0;
}

/* Renames array src (not a view) onto rel: over nothing or an empty
 * directory, as rename(2) allows. */
static int rename_array_node(const struct drxfs_node *src, const struct drxfs_node *dst,
                             const char *rel, unsigned int flags)
{
    int rc;

    (void)flags;
    if (src->nwords)
        return -EPERM;
    if (dst) {
        if (dst->kind != DRXFS_DIR && dst->kind != DRXFS_ARRAY)
            return -ENOTDIR;
        if (dst->kind == DRXFS_ARRAY)
            return -ENOTEMPTY;
        /* an empty directory may be replaced, as rename(2) allows */
        GUARD_DIR(dst->rel, NULL);
        rc = drx_store_entry_unlink(drxfs.store, dst->rel, AT_REMOVEDIR);
        drxfs_guard_done();
        if (rc < 0)
            return rc;
    }
    /* a long name: the array's files are named by its stem (drx/store.h) */
    char stem[PATH_MAX];
    if ((rc = drx_store_long_new(drxfs.store, rel, stem)) < 0)
        return rc;
    if ((rc = rename_array(src->rel, stem)) == 0) {
        drxfs_arr_forget(src->rel);
        drxfs_arr_forget(stem);
        drx_store_long_drop(drxfs.store, src->rel);
    } else {
        drx_store_long_drop(drxfs.store, stem);
    }
    return rc;
}

/* Renames striped file src onto rel: over nothing, a plain entry or
 * another striped file. */
static int rename_striped_node(const struct drxfs_node *src, const struct drxfs_node *dst,
                               const char *rel, unsigned int flags)
{
    (void)flags;
    if (dst && (dst->kind == DRXFS_DIR || (dst->kind > DRXFS_LINK && dst->kind != DRXFS_STRIPED)))
        return (dst->kind == DRXFS_DIR || dst->kind == DRXFS_ARRAY) ? -EISDIR : -EPERM;
    return drxfs_striped_rename(src, dst, rel);
}

/* rename by the kind of the source; the kinds left out (data, data.npy,
 * info, data.nc: they belong to their view; zarr/ has its own) get EPERM. */
typedef int rename_fn(const struct drxfs_node *src, const struct drxfs_node *dst, const char *rel,
                      unsigned int flags);
static rename_fn *const rename_by_kind[] = {
    [DRXFS_DIR] = rename_entry,
    [DRXFS_PLAIN] = rename_entry,
    [DRXFS_SPECIAL] = rename_entry,
    [DRXFS_LINK] = rename_entry,
    [DRXFS_ARRAY] = rename_array_node,
    [DRXFS_STRIPED] = rename_striped_node,
    [DRXFS_ZARR] = NULL,
};

/* What flags allow of renaming src onto dst (NULL: nothing there): 0 to go
 * on, 1 when both are the same object (nothing to do), or an error. */
static int rename_flags_check(const struct drxfs_node *src, const struct drxfs_node *dst,
                              unsigned int flags)
{
    if (dst && (flags & RENAME_NOREPLACE))
        return -EEXIST;
    if ((flags & RENAME_EXCHANGE) && (!dst || src->kind > DRXFS_LINK || dst->kind > DRXFS_LINK))
        return dst ? -EINVAL : -ENOENT;
    if (dst && strcmp(src->rel, dst->rel) == 0 && src->kind == dst->kind)
        return 1;
    return 0;
}

/* The store name rel of a new name `to`, refused when reserved. */
static int rename_target(const char *to, char rel[PATH_MAX])
{
    const char *name;
    bool at_root;
    int rc;

    if ((rc = drxfs_resolve_new(to, rel, &name, &at_root)) < 0)
        return rc;
    return drxfs_name_reserved(name, at_root) ? -EPERM : 0;
}

/* A RENAME of a name onto itself (same directory node, same name) is
 * answered ESTALE from the device io, before libfuse sees it.  The kernel
 * sends one only when the two lookups found different inodes: the source's
 * entry it still held (the entry timeout) and the target's, which a rename
 * target always looks up again, of another type, after the name was
 * replaced behind the mount (another mount, another node).  libfuse's
 * high-level rename locks the source's node for writing, then waits for
 * the target's, the same node, for ever: the caller hung in the kernel,
 * unkillable, and with it every later request on the name (the two-mount
 * exerciser, two_mounts.bats).  On ESTALE the kernel looks both names up
 * again and retries: the same inode, and rename(2) succeeds doing
 * nothing, as it would have on a local disk. */
bool drxfs_rename_self(int fd, const void *buf, size_t len)
{
    struct fuse_in_header h;
    uint64_t newdir;
    size_t arg;

    if (len < sizeof h)
        return false;
    memcpy(&h, buf, sizeof h);
    if (h.opcode == FUSE_RENAME)
        arg = sizeof(struct fuse_rename_in);
    else if (h.opcode == FUSE_RENAME2)
        arg = sizeof(struct fuse_rename2_in);
    else
        return false;
    if (len < sizeof h + arg + 2 || h.len > len)
        return false;
    /* newdir is the first field of both arguments */
    memcpy(&newdir, (const char *)buf + sizeof h, sizeof newdir);
    const char *from = (const char *)buf + sizeof h + arg, *end = (const char *)buf + h.len;
    const char *z = memchr(from, '\0', (size_t)(end - from));
    if (!z || newdir != h.nodeid)
        return false;
    const char *to = z + 1;
    if (to >= end || !memchr(to, '\0', (size_t)(end - to)) || strcmp(from, to) != 0)
        return false;
    struct fuse_out_header out = {.len = sizeof out, .error = -ESTALE, .unique = h.unique};
    drx_log(DRX_LOG_DEBUG, "rename of %s onto itself, two inodes to the kernel: ESTALE", from);
    return write(fd, &out, sizeof out) == (ssize_t)sizeof out;
}

int drxfs_op_rename(const char *from, const char *to, unsigned int flags)
{
    struct drxfs_node *src = NULL, *dst = NULL;
    char rel[PATH_MAX];
    rename_fn *fn;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
        return -EINVAL;
    /* libfuse hides an open file it is asked to remove or rename over */
    if (flags == 0 && drxfs_hidden_name(strrchr(to, '/') ? strrchr(to, '/') + 1 : to))
        return drxfs_hidden_hide(from, to, rm_marked(false));
    /* taken before any path is resolved (which ends what it took) */
    bool after_hide = flags == 0 && drxfs_hidden_pending_take(to);
    drxfs_hidden_replaced(to);
    if ((rc = drxfs_zarr_rename(from, to, flags)) != 1)
        return rc;
    if ((rc = rename_target(to, rel)) < 0)
        return rc;
    if (!(src = drxfs_node_get(from, &rc)))
        goto out;
    dst = drxfs_node_get(to, &rc);
    if (!dst && rc != -ENOENT)
        goto out;
    /* libfuse hid the open target a moment ago: when the source is
     * another name of that same file, nothing is to be done (POSIX), and
     * the target's name comes back (before 2026-12-06 it was lost) */
    if (!dst && after_hide && (rc = drxfs_hidden_same_file(src, rel)) != 0) {
        rc = rc > 0 ? 0 : rc;
        goto out;
    }
    if ((rc = rename_flags_check(src, dst, flags)) != 0) {
        rc = rc > 0 ? 0 : rc; /* same object: nothing to do */
        goto out;
    }
    fn = (size_t)src->kind < sizeof(rename_by_kind) / sizeof(rename_by_kind[0])
             ? rename_by_kind[src->kind]
             : NULL;
    rc = fn ? fn(src, dst, rel, flags) : -EPERM;
out:
    /* libfuse hid the open target before asking for the rename, which
     * failed: the target was lost (a rename whose source another mount
     * had removed made the destination vanish; the two-mount exerciser) */
    if (rc < 0 && after_hide)
        (void)drxfs_hidden_give_back(rel);
    free(src);
    free(dst);
    return rc;
}

/* ---- directories ---- */

struct drxfs_dirh {
    DIR *dp;              /* NULL for an array or view */
    bool at_root;         /* listing the store root */
    bool nc;              /* the array or view has a data.nc */
    char *path;           /* the mount path listed (readdir gets none: nullpath_ok) */
    bool zarr;            /* an array directory (not a view): it has zarr/ */
    struct drxfs_zdir *z; /* listing in a zarr group */
    uid_t share_uid;      /* charged one of the daemon's descriptors */
};

/* A listing handle of mount path path, or NULL (out of memory). */
static struct drxfs_dirh *dirh_new(const char *path)
{
    struct drxfs_dirh *dh = calloc(1, sizeof(*dh));
    if (dh && !(dh->path = strdup(path))) {
        free(dh);
        dh = NULL;
    }
    return dh;
}

/* opendir of a node in a zarr group: its listing is drxfs_zarr.c's. */
static int opendir_zarr(const struct drxfs_node *n, const char *path, struct fuse_file_info *fi)
{
    struct drxfs_zdir *z = NULL;
    struct drxfs_dirh *dh = NULL;
    int rc;

    if ((rc = drxfs_zarr_opendir(n, &z)) == 0 && !(dh = dirh_new(path))) {
        drxfs_zarr_closedir(z);
        rc = -ENOMEM;
    }
    if (rc == 0) {
        dh->z = z;
        fi->fh = (uint64_t)(uintptr_t)dh;
    }
    return rc;
}

/* Opens store directory n for dh's listing, beneath the store. */
static int dirh_open_store_dir(struct drxfs_dirh *dh, const struct drxfs_node *n)
{
    struct stat st;
    int fd;

    /* the kernel checked the directory it holds, which a rename behind the
     * mount may have made root's 0700 one since: a caller other than root
     * lists the directory the name leads him to now, if he may read it
     * (drxfs_caller_open_checked).  A check by name after the open
     * refused a user who may read both 73 listings in 1000 of a
     * directory removed and made anew behind the mount (and retries
     * leave a few under load) */
    if (fuse_get_context()->uid != 0) {
        int pfd = drxfs_caller_open_checked(n->rel, S_IFDIR, 4, &st);
        fd = pfd < 0 ? pfd : drxfs_reopen(pfd, O_RDONLY | O_DIRECTORY);
        if (pfd >= 0)
            close(pfd);
    } else {
        fd = drx_store_entry_open(drxfs.store, n->rel, O_RDONLY | O_DIRECTORY, 0);
    }
    if (fd < 0)
        errno = -fd;
    if (fd < 0 || !(dh->dp = fdopendir(fd))) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    dh->at_root = strcmp(n->rel, ".") == 0;
    return 0;
}

/* opendir of n. */
static int opendir_node(const struct drxfs_node *n, const char *path, struct fuse_file_info *fi)
{
    struct drxfs_dirh *dh = NULL;
    int rc = 0;

    if (n->kind == DRXFS_ARRAY) {
        struct stat st;
        /* a view that does not resolve does not exist */
        rc = drxfs_array_getattr(n, &st);
    } else if (n->kind == DRXFS_ZARR) {
        rc = opendir_zarr(n, path, fi);
        goto out;
    } else if (n->kind != DRXFS_DIR) {
        rc = -ENOTDIR;
    }
    if (rc < 0)
        goto out;
    if (!(dh = dirh_new(path))) {
        rc = -ENOMEM;
        goto out;
    }
    if (n->kind == DRXFS_DIR) {
        if ((rc = dirh_open_store_dir(dh, n)) < 0) {
            free(dh->path);
            free(dh);
            goto out;
        }
    } else {
        dh->nc = drxfs_array_has_nc(n);
        dh->zarr = n->nwords == 0 && drxfs_zarr_name_ok(n->rel);
    }
    fi->fh = (uint64_t)(uintptr_t)dh;
out:
    return rc;
}

int drxfs_op_opendir(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_node *n;
    uid_t who;
    int rc;

    /* The kernel sends OPENDIR for what it holds as a directory: a file
     * here replaced it behind the mount (drxfs_types.c) */
    if (!(n = drxfs_node_get(path, &rc)))
        return rc == -ENOTDIR ? drxfs_stale_once(path, rc) : rc;
    /* a listing keeps a descriptor (a store directory's), charged to its
     * user like an open file's */
    if ((rc = drxfs_share_take(&who)) == 0 && (rc = opendir_node(n, path, fi)) < 0)
        drxfs_share_give(who, 1, 0);
    if (rc == 0)
        ((struct drxfs_dirh *)(uintptr_t)fi->fh)->share_uid = who;
    free(n);
    return rc == -ENOTDIR ? drxfs_stale_once(path, rc) : rc;
}

/* The files of an array or view; views themselves are not listed (there
 * are infinitely many). */
static int list_array(const struct drxfs_dirh *dh, void *buf, fuse_fill_dir_t fill)
{
    static const char *const files[] = {"data", "data.npy", "data.nc", "info", "zarr"};
    struct stat st = {0};

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if ((strcmp(files[i], "data.nc") == 0 && !dh->nc) ||
            (strcmp(files[i], "zarr") == 0 && !dh->zarr))
            continue;
        st.st_mode = strcmp(files[i], "zarr") == 0 ? S_IFDIR : S_IFREG;
        st.st_ino = drxfs_virtual_ino(dh->path, files[i]);
        fill(buf, files[i], &st, 0, 0);
    }
    return 0;
}

/* A store directory's entries from directory offset off (0: the start),
 * each given with the offset after it: without offsets libfuse would read
 * the whole directory into a buffer at the first read and keep it until
 * the close (25 MB a listing of 100,000 long names, per open listing). */
static int list_store_dir(struct drxfs_dirh *dh, void *buf, fuse_fill_dir_t fill, off_t off)
{
    struct stat st = {0};
    int dfd = dirfd(dh->dp);

    if (off == 0)
        rewinddir(dh->dp);
    else
        seekdir(dh->dp, (long)off);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(dh->dp);
        if (!de)
            return errno ? -errno : 0;
        off_t next = (off_t)telldir(dh->dp);
        char shown[NAME_MAX + 1];
        enum drx_store_kind kind;
        mode_t type;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            st.st_mode = S_IFDIR;
            st.st_ino = 1;
            if (fill(buf, de->d_name, &st, next, 0))
                return 0;
            continue;
        }
        if (drxfs_hidden_name(de->d_name) ||
            !drx_store_list_name(dfd, de->d_name, de->d_type, dh->at_root, shown, &kind, &type))
            continue;
        st.st_mode = type;
        /* an array's directory has no inode of its own */
        st.st_ino = kind == DRX_STORE_ARRAY ? drxfs_virtual_ino(dh->path, shown) : de->d_ino;
        if (fill(buf, shown, &st, next, 0))
            return 0;
    }
}

int drxfs_op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct drxfs_dirh *dh = (struct drxfs_dirh *)(uintptr_t)fi->fh;
    struct stat st = {0};
    (void)path;
    (void)flags;

    if (dh->z)
        return drxfs_zarr_readdir(dh->z, dh->path, buf, fill, off);
    /* use_ino: an entry's d_ino is its st_ino (0 would hide it: glibc
     * skips such entries). */
    st.st_mode = S_IFDIR;
    st.st_ino = 1;
    if (!dh->dp) {
        fill(buf, ".", &st, 0, 0);
        fill(buf, "..", &st, 0, 0);
        return list_array(dh, buf, fill);
    }
    return list_store_dir(dh, buf, fill, off);
}

/* fsync of a directory: the store directory's own (its entries: a rename,
 * create or unlink in it made durable, as a program that syncs the
 * directory after such a change asks).  An array or view has no entries
 * of its own.  Without it libfuse answered ENOSYS, which the kernel takes
 * for "nothing to do": every later fsync of a directory returned 0 having
 * synced nothing. */
int drxfs_op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct drxfs_dirh *dh = (struct drxfs_dirh *)(uintptr_t)fi->fh;
    (void)path;

    if (!dh->dp)
        return 0;
    return (datasync ? fdatasync(dirfd(dh->dp)) : fsync(dirfd(dh->dp))) < 0 ? -errno : 0;
}

int drxfs_op_releasedir(const char *path, struct fuse_file_info *fi)
{
    struct drxfs_dirh *dh = (struct drxfs_dirh *)(uintptr_t)fi->fh;
    (void)path;
    drxfs_share_give(dh->share_uid, 1, 0);
    if (dh->dp)
        closedir(dh->dp);
    free(dh->path);
    drxfs_zarr_closedir(dh->z);
    free(dh);
    return 0;
}
