/* POSIX ACLs at the mount.
 *
 * drxfs asks for FUSE_POSIX_ACL at init, so the kernel checks each node's
 * access ACL as default_permissions checks its mode bits, with the same
 * generic code as a local file system (the owner by the mode, everyone
 * else by the ACL when the mode has group bits, which are then the ACL's
 * mask).  It asks system.posix_acl_access of a node here, and caches the
 * answer as long as the node's attributes (one tick, or until an
 * invalidation).  A pass-through node answers its store file's ACL; a
 * node made from an array answers the ACL of the store file its mode
 * comes from, mapped as the mode is: a directory gets x wherever r is, a
 * file keeps only the bits it shows (`info` and `data.nc` r, `data` rw),
 * and a read-only mount or array drops w.  So a user whom the store
 * file's ACL denies is denied through the mount, and one it grants gets
 * what it grants (README, "Permissions and other users").
 *
 * Never an error the kernel would take for a failed check of every other
 * node: "no ACL" (the store's file system has none or keeps none) is
 * ENODATA. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drxfs_i.h"

/* An ACL in xattr form (linux/posix_acl_xattr.h): a version 2 header,
 * then entries of tag, perm (16 bits each) and id (32 bits),
 * little-endian.  The kernel asks with a page: at most 511 entries. */
#define ACL_VERSION 2
#define ACL_BYTES_MAX DRXFS_ACL_MAX
#define ACL_TAG_USER_OBJ 0x01
#define ACL_TAG_USER 0x02
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_GROUP 0x08
#define ACL_TAG_MASK 0x10
#define ACL_TAG_OTHER 0x20

static unsigned le16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

bool drxfs_acl_name(const char *name)
{
    return strcmp(name, DRXFS_ACL_ACCESS) == 0 || strcmp(name, DRXFS_ACL_DEFAULT) == 0;
}

/* Whether src (n bytes) is an ACL in xattr form. */
static bool acl_valid(const unsigned char *src, ssize_t n)
{
    return n >= 4 && (n - 4) % 8 == 0 && le32(src) == ACL_VERSION;
}

int drxfs_acl_mapped(const unsigned char *src, ssize_t n, struct drxfs_acl_map map, char *value,
                     size_t size)
{
    if (n == -ENODATA || n == -EOPNOTSUPP || n == 0)
        return -ENODATA;
    if (n < 0)
        return (int)n;
    if (!acl_valid(src, n) || n > ACL_BYTES_MAX)
        return -EIO;
    if (size == 0)
        return (int)n;
    if ((size_t)n > size)
        return -ERANGE;
    memcpy(value, src, (size_t)n);
    for (ssize_t off = 4; off < n; off += 8) {
        unsigned p = le16(src + off + 2);
        if (map.dir)
            p |= (p & 4) >> 2;
        p &= map.keep;
        value[off + 2] = (char)(p & 0xff);
        value[off + 3] = (char)(p >> 8);
    }
    return (int)n;
}

int drxfs_acl_of_fd(int fd, struct drxfs_acl_map map, char *value, size_t size)
{
    unsigned char buf[ACL_BYTES_MAX];
    ssize_t n = fgetxattr(fd, DRXFS_ACL_ACCESS, buf, sizeof buf);

    if (n < 0)
        n = errno == ERANGE ? -EIO : -errno;
    return drxfs_acl_mapped(buf, n, map, value, size);
}

int drxfs_acl_of_entry(const char *rel, const char *name, struct drxfs_acl_map map, char *value,
                       size_t size)
{
    unsigned char buf[ACL_BYTES_MAX];
    struct drx_xattr_req r = {DRX_XATTR_GET, name, buf, sizeof buf, 0};
    ssize_t n = drx_store_entry_xattr(drxfs.store, rel, &r);

    if (n == -ERANGE)
        n = -EIO;
    return drxfs_acl_mapped(buf, n, map, value, size);
}

/* Whether the ACL src (n bytes, valid) gives user uid of groups every
 * bit of want (rwx), as the kernel's posix_acl_permission decides for
 * anyone but the owner: a named user entry, else any group entry (the
 * owning group's or a named one) of his that holds all of want, each
 * limited by the mask; a user in a group entry none of which holds want
 * is refused; everyone else has other. */
static bool acl_grants(const unsigned char *src, ssize_t n, uid_t uid, const gid_t *groups,
                       int ngroups, gid_t owning, unsigned want)
{
    unsigned mask = 7, other = 0;
    bool in_group = false, group_ok = false;

    for (ssize_t off = 4; off < n; off += 8)
        if (le16(src + off) == ACL_TAG_MASK)
            mask = le16(src + off + 2) & 7;
    for (ssize_t off = 4; off < n; off += 8) {
        unsigned tag = le16(src + off), p = le16(src + off + 2) & 7;
        gid_t id = (gid_t)le32(src + off + 4);
        bool member = false;
        if (tag == ACL_TAG_USER && (uid_t)id == uid)
            return (p & mask & want) == want;
        if (tag == ACL_TAG_GROUP_OBJ)
            id = owning;
        if (tag == ACL_TAG_GROUP_OBJ || tag == ACL_TAG_GROUP)
            for (int i = 0; i < ngroups; i++)
                member |= groups[i] == id;
        if (member) {
            in_group = true;
            group_ok |= (p & mask & want) == want;
        }
        if (tag == ACL_TAG_OTHER)
            other = p;
    }
    if (in_group)
        return group_ok;
    return (other & want) == want;
}

int drxfs_caller_groups(gid_t *groups, int max)
{
    int n = max > 1 ? fuse_getgroups(max - 1, groups + 1) : 0;

    groups[0] = fuse_get_context()->gid;
    return 1 + (n < 0 ? 0 : n > max - 1 ? max - 1 : n);
}

bool drxfs_caller_in_group(gid_t gid)
{
    gid_t groups[DRXFS_CALLER_GROUPS];
    int n = drxfs_caller_groups(groups, DRXFS_CALLER_GROUPS);

    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    return false;
}

int drxfs_caller_syscall(long *nr, unsigned long args[2])
{
    char p[40], buf[256];

    snprintf(p, sizeof p, "/proc/%d/syscall", (int)fuse_get_context()->pid);
    /* "running" while the caller is not asleep in its system call (a
     * wakeup in its wait for this request): read again */
    for (int tries = 0; tries < 20; tries++) {
        FILE *f = fopen(p, "re");
        if (!f)
            return -1;
        buf[0] = '\0';
        bool got = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        args[0] = args[1] = 0;
        if (got && sscanf(buf, "%ld %lx %lx", nr, &args[0], &args[1]) >= 1)
            return *nr >= 0 ? 0 : -1;
        if (strncmp(buf, "running", 7) != 0)
            return -1;
        sched_yield();
    }
    return -1;
}

int drxfs_caller_by_fd(void)
{
    unsigned long a[2];
    long nr;

    if (drxfs_caller_syscall(&nr, a) < 0)
        return -1;
    /* futimens(3) is utimensat(fd, NULL, ...); the calls on a name
     * (chmod, fchmodat, fchownat: also with AT_EMPTY_PATH, whose
     * descriptor may be an O_PATH one, of no open file) are not */
    return nr == SYS_fchmod || nr == SYS_fchown || (nr == SYS_utimensat && a[1] == 0)
#ifdef SYS_futimesat
           || (nr == SYS_futimesat && a[1] == 0)
#endif
        ;
}

/* drxfs_acl_may with the file's access ACL read by get (rel or fd). */
static bool may_with(const struct stat *st, uid_t uid, const gid_t *groups, int ngroups,
                     unsigned want, ssize_t (*get)(const void *, unsigned char *, size_t),
                     const void *of)
{
    unsigned char buf[ACL_BYTES_MAX];
    bool member = false;

    if (uid == 0)
        return true;
    if (uid == st->st_uid)
        return ((st->st_mode >> 6) & want) == want;
    /* an ACL decides only when the mode has group bits (its mask), as in
     * the kernel's acl_permission_check */
    if (st->st_mode & 070) {
        ssize_t n = get(of, buf, sizeof buf);
        if (n > 0)
            return acl_valid(buf, n) && acl_grants(buf, n, uid, groups, ngroups, st->st_gid, want);
        if (n < 0 && n != -ENODATA && n != -EOPNOTSUPP)
            return false;
    }
    for (int i = 0; i < ngroups; i++)
        member |= groups[i] == st->st_gid;
    return (((member ? st->st_mode >> 3 : st->st_mode) & 7 & want) == want);
}

static ssize_t acl_of_rel(const void *rel, unsigned char *buf, size_t size)
{
    struct drx_xattr_req r = {DRX_XATTR_GET, DRXFS_ACL_ACCESS, buf, size, 0};
    return drx_store_entry_xattr(drxfs.store, rel, &r);
}

/* by the descriptor's /proc name: getxattr works on O_PATH descriptors
 * so, fgetxattr does not */
static ssize_t acl_of_fd(const void *fdp, unsigned char *buf, size_t size)
{
    char self[32];
    snprintf(self, sizeof self, "/proc/self/fd/%d", *(const int *)fdp);
    ssize_t n = getxattr(self, DRXFS_ACL_ACCESS, buf, size);
    return n < 0 ? -errno : n;
}

bool drxfs_acl_may(const char *rel, const struct stat *st, uid_t uid, const gid_t *groups,
                   int ngroups, unsigned want)
{
    return may_with(st, uid, groups, ngroups, want, acl_of_rel, rel);
}

/* Whether the daemon opens rel for the caller as him: a caller other than
 * root, a daemon run as root, and no name in the daemon's own .drx. */
static bool daemons_own(const char *rel)
{
    return strncmp(rel, DRX_STORE_DIR "/", sizeof DRX_STORE_DIR) == 0 ||
           strcmp(rel, DRX_STORE_DIR) == 0;
}

static bool caller_checked(const char *rel)
{
    struct fuse_context *ctx = fuse_get_context();

    /* the daemon's own directory (.drx/hidden: files removed while open)
     * is no user's to reach, and a daemon not run as root opens nothing
     * its own user could not */
    return ctx && ctx->uid != 0 && drxfs.root_euid && !daemons_own(rel);
}

int drxfs_ids_caller(struct drxfs_ids *ids, const char *rel)
{
    struct fuse_context *ctx = fuse_get_context();
    gid_t groups[DRXFS_CALLER_GROUPS];

    ids->on = false;
    if (!caller_checked(rel))
        return 0;
    int n = drxfs_caller_groups(groups, DRXFS_CALLER_GROUPS);
    ids->ns = syscall(SYS_getgroups, DRXFS_CALLER_GROUPS, ids->saved);
    /* the thread's own credentials (the system calls, not glibc's
     * wrappers, which change every thread's groups) */
    if (ids->ns < 0 || syscall(SYS_setgroups, (size_t)n, groups) < 0)
        return -EACCES;
    ids->ogid = setfsgid(ctx->gid);
    ids->ouid = setfsuid(ctx->uid);
    ids->on = true;
    return 0;
}

void drxfs_ids_restore(struct drxfs_ids *ids)
{
    if (!ids->on)
        return;
    setfsuid((uid_t)ids->ouid);
    setfsgid((gid_t)ids->ogid);
    if (syscall(SYS_setgroups, (size_t)ids->ns, ids->saved) < 0)
        drx_log_ratelimited(DRX_LOG_ERROR, "putting back the daemon's groups: %s", strerror(errno));
    ids->on = false;
}

int drxfs_caller_entry_open(const char *rel)
{
    struct drxfs_ids ids;

    if (drxfs_ids_caller(&ids, rel) < 0)
        return -EACCES;
    bool as_caller = ids.on;
    int fd = drx_store_entry_open(drxfs.store, rel, O_PATH | O_NOFOLLOW, 0);
    drxfs_ids_restore(&ids);
    return !as_caller || fd >= 0 || fd == -ENOENT || fd == -ENOTDIR ? fd : -EACCES;
}

/* 0, -errno of the caller's open (EACCES: a directory on the way he may
 * not search; ENOENT), or -ESTALE when the name is another file's now. */
int drxfs_caller_reach(const char *rel, const struct stat *st)
{
    struct stat got;

    if (!caller_checked(rel))
        return 0;
    int fd = drxfs_caller_entry_open(rel);
    if (fd < 0)
        return fd;
    int rc = fstat(fd, &got) < 0                                    ? -EACCES
             : got.st_dev == st->st_dev && got.st_ino == st->st_ino ? 0
                                                                    : -ESTALE;
    close(fd);
    return rc;
}

int drxfs_caller_open_checked(const char *rel, mode_t type, unsigned want, struct stat *st)
{
    int fd = drxfs_caller_entry_open(rel);

    if (fd < 0)
        return fd;
    if (fstat(fd, st) < 0 || (st->st_mode & S_IFMT) != type) {
        close(fd);
        return -ESTALE;
    }
    if (!drxfs_caller_may_fd(fd, st, want)) {
        close(fd);
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: replaced behind the mount by a file the caller (uid %u) may not "
                            "open so: refused",
                            rel, (unsigned)fuse_get_context()->uid);
        return -EACCES;
    }
    return fd;
}

int drxfs_reopen(int pfd, int flags)
{
    char self[32];

    snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
    int fd = open(self, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_PATH)) | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int drxfs_node_reached(const struct drxfs_node *n)
{
    char entry[PATH_MAX];
    const char *suffix = "";
    int rc;

    if (fuse_get_context()->uid == 0)
        return 0;
    if (n->kind == DRXFS_STRIPED)
        suffix = DRXFS_NAFS;
    else if (drxfs_is_array_kind(n->kind) || n->kind == DRXFS_ZARR)
        suffix = DRXFS_XMD;
    /* another file under the name now: the caller resolves it again; none
     * (removed meanwhile): ENOENT, which is no refusal to log */
    if ((rc = drxfs_rel_suffix(entry, n->rel, suffix)) < 0 ||
        (rc = drxfs_caller_reach(entry, &n->st)) == 0 || rc == -ESTALE || rc == -ENOENT)
        return rc;
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: replaced behind the mount by a file the caller (uid %u) does not "
                        "reach: refused",
                        entry, (unsigned)fuse_get_context()->uid);
    return rc;
}

bool drxfs_caller_may_fd(int fd, const struct stat *st, unsigned want)
{
    struct fuse_context *ctx = fuse_get_context();
    gid_t groups[DRXFS_CALLER_GROUPS];

    if (!ctx || ctx->uid == 0)
        return true;
    int n = drxfs_caller_groups(groups, DRXFS_CALLER_GROUPS);
    return may_with(st, ctx->uid, groups, n, want, acl_of_fd, &fd);
}

/* The bits of entry (tag, id) in the ACL acl (n bytes; n <= 0: none, the
 * mode's bits then, as the file system derives them): an entry it lacks
 * has none, but a missing mask, which is the owning group's entry. */
static unsigned acl_perm_of(const unsigned char *acl, ssize_t n, mode_t mode, unsigned tag,
                            uint32_t id)
{
    unsigned group_obj = (mode >> 3) & 7;

    if (n <= 0) {
        if (tag == ACL_TAG_USER_OBJ)
            return (mode >> 6) & 7;
        if (tag == ACL_TAG_GROUP_OBJ || tag == ACL_TAG_MASK)
            return group_obj;
        return tag == ACL_TAG_OTHER ? mode & 7 : 0;
    }
    for (ssize_t off = 4; off < n; off += 8) {
        unsigned t = le16(acl + off), p = le16(acl + off + 2) & 7;
        bool named = t == ACL_TAG_USER || t == ACL_TAG_GROUP;
        if (t == tag && (!named || le32(acl + off + 4) == id))
            return p;
        if (t == ACL_TAG_GROUP_OBJ)
            group_obj = p;
    }
    return tag == ACL_TAG_MASK ? group_obj : 0;
}

int drxfs_acl_merge(const unsigned char *req, size_t n, const unsigned char *cur, ssize_t ncur,
                    mode_t mode, struct drxfs_acl_map map, unsigned char *out)
{
    if (n > ACL_BYTES_MAX || !acl_valid(req, (ssize_t)n))
        return -EINVAL;
    if (ncur > 0 && !acl_valid(cur, ncur))
        return -EIO;
    memcpy(out, req, n);
    for (size_t off = 4; off < n; off += 8) {
        unsigned tag = le16(req + off), p = le16(req + off + 2) & 7;
        /* a directory's x where r is shows the r (drxfs_acl_mapped) */
        if (map.dir)
            p &= ~((p & 4) >> 2);
        p = (p & map.keep) |
            (acl_perm_of(cur, ncur, mode, tag, le32(req + off + 4)) & 7 & ~map.keep);
        out[off + 2] = (unsigned char)p;
        out[off + 3] = 0;
    }
    return (int)n;
}

/* ---- the caller's rights on the entry changed (drx_store_entry_guard) ---- */

static int guard_refused(int fd, const struct stat *st, int rc)
{
    char self[32], name[PATH_MAX];
    ssize_t n;

    (void)st;
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    n = readlink(self, name, sizeof name - 1);
    name[n < 0 ? 0 : n] = '\0';
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: replaced behind the mount by a file the caller (uid %u) may not "
                        "change or read so: refused",
                        name, (unsigned)fuse_get_context()->uid);
    return rc;
}

/* The rules the guards apply, for a caller other than root: 0, or the
 * error of the refusal. */
static int owner_rule(const struct stat *st)
{
    return st->st_uid == fuse_get_context()->uid ? 0 : -EPERM;
}

static int times_rule(int fd, const struct stat *st, const struct timespec *tv)
{
    bool now = !tv || (tv[0].tv_nsec == UTIME_NOW && tv[1].tv_nsec == UTIME_NOW);

    if (st->st_uid == fuse_get_context()->uid)
        return 0;
    if (!now)
        return -EPERM;
    return drxfs_caller_may_fd(fd, st, 2) ? 0 : -EACCES;
}

/* The guards below check the entry drxfs_caller_entry_open opened: the
 * file the caller reaches by its name, every directory on the way
 * searchable to him (a file in root's 0700 directory, swapped in behind
 * the mount, is none he reaches).  A check by name after opening it as
 * root refused a user who may read both the user. attribute of a plain
 * file that root kept writing whole and renaming over it 19 times in
 * 1000, and retries left some under load. */
static int guard_owner(int fd, const struct stat *st, const char *rel, void *arg)
{
    int rc = owner_rule(st);

    (void)rel;
    (void)arg;
    return rc ? guard_refused(fd, st, rc) : 0;
}

static int guard_write(int fd, const struct stat *st, const char *rel, void *arg)
{
    (void)rel;
    (void)arg;
    return drxfs_caller_may_fd(fd, st, 2) ? 0 : guard_refused(fd, st, -EACCES);
}

static int guard_times(int fd, const struct stat *st, const char *rel, void *arg)
{
    int rc = times_rule(fd, st, arg);

    (void)rel;
    return rc ? guard_refused(fd, st, rc) : 0;
}

void drxfs_guard_owner(void)
{
    if (fuse_get_context()->uid != 0)
        drx_store_entry_guard(drxfs_caller_entry_open, guard_owner, NULL);
}

void drxfs_guard_times(const struct timespec tv[2])
{
    if (fuse_get_context()->uid != 0)
        drx_store_entry_guard(drxfs_caller_entry_open, guard_times, (void *)tv);
}

void drxfs_guard_xattr(const char *name)
{
    if (fuse_get_context()->uid == 0)
        return;
    /* an ACL is its owner's to set, as chmod; other attributes are set
     * by whoever may write the file (the kernel checked CAP_SYS_ADMIN
     * for trusted.*, CAP_SETFCAP for a capability) */
    drx_store_entry_guard(drxfs_caller_entry_open, drxfs_acl_name(name) ? guard_owner : guard_write,
                          NULL);
}

static int guard_reach(int fd, const struct stat *st, const char *rel, void *arg)
{
    (void)fd;
    (void)st;
    (void)rel;
    (void)arg;
    return 0; /* reached: opened as the caller */
}

static int guard_read(int fd, const struct stat *st, const char *rel, void *arg)
{
    (void)rel;
    (void)arg;
    return drxfs_caller_may_fd(fd, st, 4) ? 0 : guard_refused(fd, st, -EACCES);
}

void drxfs_guard_xattr_read(const char *name)
{
    if (fuse_get_context()->uid == 0)
        return;
    /* a user attribute's value is read by whoever may read the file, as
     * the kernel's xattr_permission decides; names (name NULL: a listing)
     * and the other namespaces' values by whoever reaches it (the kernel
     * checked CAP_SYS_ADMIN for trusted.*) */
    drx_store_entry_guard(drxfs_caller_entry_open,
                          name && strncmp(name, "user.", 5) == 0 ? guard_read : guard_reach, NULL);
}

/* Whether store name name (NULL: none) is in directory rel ("." the
 * root's): its last component then in *base. */
static bool in_dir(const char *rel, const char *name, const char **base)
{
    const char *slash = name ? strrchr(name, '/') : NULL;
    size_t dlen = slash ? (size_t)(slash - name) : 1;

    *base = slash ? slash + 1 : name;
    return name && strlen(rel) == dlen && strncmp(rel, slash ? name : ".", dlen) == 0;
}

/* The directory a name is made or removed in: the caller may write and
 * search it, and in a sticky one owns it or the entries named arg
 * (names[2], store-relative, NULL or made) of it that exist, as the
 * kernel's may_delete. */
static int guard_dir(int fd, const struct stat *st, const char *rel, void *arg)
{
    const char *const *names = arg;
    uid_t uid = fuse_get_context()->uid;

    if (!S_ISDIR(st->st_mode))
        return -ENOTDIR;
    /* .drx/hidden: where libfuse's hide of a file removed while open
     * puts it, the daemon's own (checked, sqlite's unlink of its open
     * -shm file was refused) */
    if (daemons_own(rel))
        return 0;
    if (!drxfs_caller_may_fd(fd, st, 3))
        return guard_refused(fd, st, -EACCES);
    if (!(st->st_mode & S_ISVTX) || st->st_uid == uid)
        return 0;
    for (int i = 0; i < 2; i++) {
        const char *base;
        struct stat e;
        if (in_dir(rel, names[i], &base) && fstatat(fd, base, &e, AT_SYMLINK_NOFOLLOW) == 0 &&
            e.st_uid != uid)
            return guard_refused(fd, st, -EPERM);
    }
    return 0;
}

/* A link's two directories (arg: its names, from and to): the one it is
 * made in the caller may write and search, the other search only, as
 * link(2) asks (guard_dir asked write of both, refusing a link of his
 * own file out of root's 0755 directory). */
static int guard_link_dir(int fd, const struct stat *st, const char *rel, void *arg)
{
    const char *const *names = arg;
    const char *base;

    if (!S_ISDIR(st->st_mode))
        return -ENOTDIR;
    if (!drxfs_caller_may_fd(fd, st, in_dir(rel, names[1], &base) ? 3 : 1))
        return guard_refused(fd, st, -EACCES);
    return 0;
}

/* drxfs_caller_dir_may, want 3 (write and search) or 1 (search). */
static int dir_may(int dfd, const char *rel, const char *removed, unsigned want)
{
    const char *slash = strrchr(rel, '/');
    char dir[PATH_MAX];
    struct stat st;
    int rc;

    /* the root is no directory anyone swaps; .drx/ is the daemon's own
     * (guard_dir) */
    if (dfd < 0 || fuse_get_context()->uid == 0 || !slash || daemons_own(rel))
        return 0;
    if ((size_t)(slash - rel) >= sizeof dir)
        return -ENAMETOOLONG;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
    if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode))
        return -ESTALE;
    /* the caller reaches it by its name, and may write and search it (or
     * search it only) */
    if ((rc = drxfs_caller_reach(dir, &st)) < 0)
        return rc == -ENOENT || rc == -ENOTDIR ? -ESTALE : rc;
    if (want != 3)
        return drxfs_caller_may_fd(dfd, &st, want) ? 0 : guard_refused(dfd, &st, -EACCES);
    if ((rc = guard_dir(dfd, &st, dir, (void *)(const char *[2]){NULL, NULL})) < 0)
        return rc;
    if (removed && (st.st_mode & S_ISVTX) && st.st_uid != fuse_get_context()->uid) {
        struct stat e;
        if (fstatat(dfd, removed, &e, AT_SYMLINK_NOFOLLOW) == 0 &&
            e.st_uid != fuse_get_context()->uid)
            return guard_refused(dfd, &st, -EPERM);
    }
    return 0;
}

int drxfs_caller_dir_may(int dfd, const char *rel, const char *removed)
{
    return dir_may(dfd, rel, removed, 3);
}

int drxfs_caller_dir_search(int dfd, const char *rel)
{
    return dir_may(dfd, rel, NULL, 1);
}

void drxfs_guard_dir(const char *removed[2])
{
    if (fuse_get_context()->uid != 0)
        drx_store_entry_guard(drxfs_caller_entry_open, guard_dir, (void *)removed);
}

void drxfs_guard_link(const char *names[2])
{
    if (fuse_get_context()->uid != 0)
        drx_store_entry_guard(drxfs_caller_entry_open, guard_link_dir, (void *)names);
}

void drxfs_guard_done(void)
{
    drx_store_entry_guard(NULL, NULL, NULL);
}

/* A refusal of a change of the open file who (of stat st), logged. */
static int held_refused(const char *who, const struct stat *st, int rc)
{
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: the open file is not the caller's (uid %u) to change so (owner uid "
                        "%u, mode %o): refused",
                        who, (unsigned)fuse_get_context()->uid, (unsigned)st->st_uid,
                        (unsigned)(st->st_mode & 07777));
    return rc;
}

int drxfs_held_owner(const struct stat *st, const char *who)
{
    int rc;

    if (fuse_get_context()->uid == 0 || (rc = owner_rule(st)) == 0)
        return 0;
    return held_refused(who, st, rc);
}

int drxfs_held_times(int fd, const struct stat *st, const struct timespec tv[2], const char *who)
{
    int rc;

    if (fuse_get_context()->uid == 0 || (rc = times_rule(fd, st, tv)) == 0)
        return 0;
    return held_refused(who, st, rc);
}
