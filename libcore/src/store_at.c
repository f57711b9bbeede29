/* A store reached through its root directory's descriptor, and its entries
 * by store-relative name.
 *
 * drxfs opens the store before it mounts (the mount point may shadow the
 * store's path, `drxfs /data /data`), so everything after reaches the store
 * through that descriptor.  libcore's path-taking functions then get
 * "/proc/self/fd/N/REL" from drx_store_path(): this file is the one place
 * that knows the form, and messages show the store's path in its place
 * (msg_alias_i.h).  Entries are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS): a user who can write the store must not swap a
 * directory for a symlink between a lookup and an open, and so make a
 * daemon running as root open a file outside the store.
 */
#include "drx/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drx/log.h"
#include "msg_alias_i.h"
#include "store_i.h"

#define SELF_LEN 32

static void self_path(int fd, char out[SELF_LEN])
{
    snprintf(out, SELF_LEN, "/proc/self/fd/%d", fd);
}

/* The thread's opening and check of the next entry it changes
 * (drx_store_entry_guard). */
static __thread struct {
    int (*open)(const char *rel);
    int (*check)(int fd, const struct stat *st, const char *rel, void *arg);
    void *arg;
} guard;

void drx_store_entry_guard(int (*open)(const char *rel),
                           int (*check)(int fd, const struct stat *st, const char *rel, void *arg),
                           void *arg)
{
    guard.open = check ? open : NULL;
    guard.check = check;
    guard.arg = arg;
}

static int path_fd(const struct drx_store *s, const char *rel, struct stat *st);

int drx_store_load_config_at(int dirfd, const char *name, const char *config_path,
                             struct drx_config *cfg, struct drx_err *err)
{
    char self[SELF_LEN];
    int alias, rc;

    self_path(dirfd, self);
    alias = drx_msg_alias_add(self, name);
    rc = drx_store_load_config(self, config_path, cfg, err);
    if (alias == 0)
        drx_msg_alias_remove(self);
    return rc;
}

/* Removes the empty directories below dfd (depth first), then name in
 * parent (rmdir: only if empty by then).  depth bounds the walk. */
static void rmdir_empty(int parent, const char *name, int depth)
{
    int dfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    struct dirent *e;

    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    while (depth > 0 && (e = readdir(d)))
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rmdir_empty(dirfd(d), e->d_name, depth - 1);
    closedir(d);
    (void)unlinkat(parent, name, AT_REMOVEDIR);
}

void drx_store_unmake_at(int dirfd)
{
    (void)unlinkat(dirfd, DRX_STORE_CONF, 0);
    rmdir_empty(dirfd, DRX_STORE_DIR, 8);
}

int drx_store_init_at(int dirfd, const char *name, const struct drx_config *cfg, unsigned flags,
                      struct drx_err *err)
{
    char self[SELF_LEN];
    int alias, rc;

    self_path(dirfd, self);
    alias = drx_msg_alias_add(self, name);
    rc = drx_store_init(self, cfg, flags, err);
    if (alias == 0)
        drx_msg_alias_remove(self);
    return rc;
}

int drx_store_open_at(int dirfd, const char *name, const struct drx_config *cfg,
                      struct drx_store **out, struct drx_err *err)
{
    char self[SELF_LEN];
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0), rc;

    *out = NULL;
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", name, strerror(errno));
    self_path(fd, self);
    if (drx_msg_alias_add(self, name) < 0) {
        close(fd);
        return drx_err_set(err, ENOSPC, "%s: too many stores open by descriptor", name);
    }
    rc = drx_store_open_cfg(self, cfg, out, err);
    if (rc < 0 || !((*out)->name = strdup(name))) {
        drx_store_close(*out);
        *out = NULL;
        drx_msg_alias_remove(self);
        close(fd);
        return rc < 0 ? rc : drx_err_set(err, ENOMEM, "out of memory");
    }
    (*out)->at_fd = fd;
    return 0;
}

/* Called by drx_store_close() for a store opened by descriptor. */
void drx_store_at_close(struct drx_store *s)
{
    char self[SELF_LEN];

    if (s->at_fd < 0)
        return;
    self_path(s->at_fd, self);
    drx_msg_alias_remove(self);
    close(s->at_fd);
    s->at_fd = -1;
}

int drx_store_path(const struct drx_store *s, const char *rel, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%s", s->root, rel);
    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

/* Room libcore needs past a path it is given: `.` before the name, and
 * `.nafs.XXXXXX` or `.xmd.XXXXXX` after it (temporaries beside it). */
#define LIB_PATH_ROOM 16

int drx_store_dir_get(const struct drx_store *s, const char *rel, const char **name)
{
    const char *slash = strrchr(rel, '/');
    char dir[PATH_MAX];

    *name = slash ? slash + 1 : rel;
    if (!slash)
        return s->root_fd;
    if ((size_t)(slash - rel) >= sizeof dir)
        return -ENAMETOOLONG;
    memcpy(dir, rel, (size_t)(slash - rel));
    dir[slash - rel] = '\0';
    return drx_store_entry_open(s, dir, O_PATH | O_DIRECTORY, 0);
}

void drx_store_dir_put(const struct drx_store *s, int fd)
{
    if (fd >= 0 && fd != s->root_fd)
        close(fd);
}

int drx_store_path_pin(const struct drx_store *s, const char *rel, char *out, size_t len,
                       int *pin)
{
    const char *slash = strrchr(rel, '/'), *name;
    char self[SELF_LEN];
    int fd, n;

    *pin = -1;
    /* An entry of the root: the root's own descriptor is the pin.  Deeper:
     * its directory opened beneath the root, so that no directory swapped
     * for a symlink on the way leads libcore out of the store. */
    if (!slash)
        return strlen(s->root) + 1 + strlen(rel) + LIB_PATH_ROOM < PATH_MAX
                   ? drx_store_path(s, rel, out, len)
                   : -ENAMETOOLONG;
    if ((fd = drx_store_dir_get(s, rel, &name)) < 0)
        return fd;
    self_path(fd, self);
    n = snprintf(out, len, "%s/%s", self, name);
    if (n < 0 || (size_t)n >= len) {
        close(fd);
        return -ENAMETOOLONG;
    }
    *pin = fd;
    return 0;
}

/* ---- lookup ---------------------------------------------------------------- */

/* The one rule of what a store name means (see drx_store_kind): rel of
 * dirfd; statflags 0 follows a final symlink (paths typed by users),
 * AT_SYMLINK_NOFOLLOW does not (the daemon's walk). */
static int kind_at(int dirfd, const char *rel, int statflags, enum drx_store_kind *kind,
                   struct stat *st)
{
    static const struct {
        const char *suffix;
        enum drx_store_kind kind;
    } objects[] = {{".xmd", DRX_STORE_ARRAY}, {".nafs", DRX_STORE_STRIPED}};
    char path[PATH_MAX];

    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        int n = snprintf(path, sizeof path, "%s%s", rel, objects[i].suffix);
        /* no room for the suffix: no such object (none can be made) */
        if (n > 0 && (size_t)n < sizeof path && fstatat(dirfd, path, st, statflags) == 0 &&
            S_ISREG(st->st_mode)) {
            *kind = objects[i].kind;
            return 0;
        }
    }
    if (fstatat(dirfd, rel, st, statflags) < 0) {
        *kind = DRX_STORE_NONE;
        return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
    }
    if (S_ISDIR(st->st_mode))
        *kind = DRX_STORE_DIRECTORY;
    else if (S_ISREG(st->st_mode))
        *kind = DRX_STORE_PLAIN;
    else if (S_ISLNK(st->st_mode))
        *kind = DRX_STORE_SYMLINK;
    else
        *kind = DRX_STORE_SPECIAL;
    return 0;
}

enum drx_store_kind drx_store_classify(const char *path)
{
    enum drx_store_kind kind;
    struct stat st;

    return kind_at(AT_FDCWD, path, 0, &kind, &st) < 0 ? DRX_STORE_NONE : kind;
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && strcmp(name + n - s, suffix) == 0;
}

bool drx_store_name_reserved(const char *name, bool at_root)
{
    return drx_store_name_internal(name, at_root) || has_suffix(name, ".xmd") ||
           has_suffix(name, ".xta") || has_suffix(name, ".nafs");
}

/* True when symlink stem of dirfd records name (a long name's). */
static bool long_name_is(int dirfd, const char *stem, const char *name)
{
    char target[NAME_MAX + 2];
    ssize_t n = readlinkat(dirfd, stem, target, sizeof target);
    return n > 0 && (size_t)n == strlen(name) && memcmp(target, name, (size_t)n) == 0;
}

/* An array or striped file under long name `name`, the last component of
 * rel, in directory dirfd (rel's): its stem's path into stem.  0, or 1
 * when there is none. */
static int long_lookup(int dirfd, const char *rel, const char *name, enum drx_store_kind *kind,
                       struct stat *st, char stem[PATH_MAX])
{
    size_t dlen = (size_t)(name - rel);
    char s[DRX_STORE_LONG_STEM_LEN + 1];

    drx_store_long_stem(name, s, sizeof s);
    if (dlen + sizeof s > PATH_MAX)
        return 1;
    memcpy(stem, rel, dlen);
    memcpy(stem + dlen, s, sizeof s);
    if (!long_name_is(dirfd, s, name) || kind_at(dirfd, s, AT_SYMLINK_NOFOLLOW, kind, st) < 0 ||
        (*kind != DRX_STORE_ARRAY && *kind != DRX_STORE_STRIPED))
        return 1;
    return 0;
}

/* One call on the last component of an entry, in the directory
 * drx_store_dir_get() opened (the drx_store_entry_* calls by name). */
enum name_op { NAME_STAT, NAME_MKDIR, NAME_MKNOD, NAME_SYMLINK, NAME_UNLINK, NAME_READLINK,
               NAME_UTIMENS };
struct name_call {
    enum name_op op;
    mode_t mode;
    dev_t dev;
    int flags;
    const char *target;
    void *out; /* stat: struct stat; readlink: the buffer of size bytes */
    size_t size;
    const struct timespec *tv;
};

static ssize_t name_call(int dfd, const char *name, const struct name_call *c)
{
    switch (c->op) {
    case NAME_STAT:
        return fstatat(dfd, name, c->out, AT_SYMLINK_NOFOLLOW);
    case NAME_MKDIR:
        return mkdirat(dfd, name, c->mode);
    case NAME_MKNOD:
        return mknodat(dfd, name, c->mode, c->dev);
    case NAME_SYMLINK:
        return symlinkat(c->target, dfd, name);
    case NAME_UNLINK:
        return unlinkat(dfd, name, c->flags);
    case NAME_READLINK:
        return readlinkat(dfd, name, c->out, c->size);
    case NAME_UTIMENS: /* a symlink's own times, as lutimes */
        return utimensat(dfd, name, c->tv, AT_SYMLINK_NOFOLLOW);
    }
    errno = EINVAL;
    return -1;
}

/* The directory holding rel, for a call that changes its entries: with
 * the thread's guard, opened by its opener and checked by it (the
 * directory's rel its name), the guard kept for a second directory
 * (keep); else drx_store_dir_get's.  *name: rel's last component. */
static int entry_dir(const struct drx_store *s, const char *rel, const char **name, bool *held,
                     bool keep)
{
    const char *slash = strrchr(rel, '/');
    char dir[PATH_MAX];
    struct stat st;
    int fd;

    *held = guard.check != NULL;
    if (!*held)
        return drx_store_dir_get(s, rel, name);
    if (slash && (size_t)(slash - rel) >= sizeof dir)
        return -ENAMETOOLONG;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
    *name = slash ? slash + 1 : rel;
    int (*open)(const char *) = guard.open;
    int (*check)(int, const struct stat *, const char *, void *) = guard.check;
    void *arg = guard.arg;
    fd = path_fd(s, dir, &st);
    if (keep)
        drx_store_entry_guard(open, check, arg);
    if (fd >= 0 && !S_ISDIR(st.st_mode)) {
        close(fd);
        fd = -ENOTDIR;
    }
    return fd;
}

static void entry_dir_put(const struct drx_store *s, int fd, bool held)
{
    if (held)
        close(fd);
    else
        drx_store_dir_put(s, fd);
}

static ssize_t on_entry(const struct drx_store *s, const char *rel, const struct name_call *c)
{
    const char *name;
    bool held = false;
    /* a name made or removed: in the directory the guard checked, if any
     * (a directory swapped behind a root daemon for root's, the caller's
     * unlink took root's file) */
    bool change = c->op == NAME_MKDIR || c->op == NAME_MKNOD || c->op == NAME_SYMLINK ||
                  c->op == NAME_UNLINK;
    int dfd = change ? entry_dir(s, rel, &name, &held, false) : drx_store_dir_get(s, rel, &name);

    if (dfd < 0)
        return dfd;
    ssize_t rc = name_call(dfd, name, c);
    rc = rc < 0 ? -errno : rc;
    entry_dir_put(s, dfd, held);
    return rc;
}

int drx_store_entry_stat(const struct drx_store *s, const char *rel, struct stat *st)
{
    int rc = (int)on_entry(s, rel, &(struct name_call){.op = NAME_STAT, .out = st});
    return rc == -ELOOP ? -ENOENT : rc;
}

int drx_store_entry_mkdir(const struct drx_store *s, const char *rel, mode_t mode)
{
    return (int)on_entry(s, rel, &(struct name_call){.op = NAME_MKDIR, .mode = mode});
}

int drx_store_entry_mknod(const struct drx_store *s, const char *rel, mode_t mode, dev_t dev)
{
    return (int)on_entry(s, rel, &(struct name_call){.op = NAME_MKNOD, .mode = mode, .dev = dev});
}

int drx_store_entry_symlink(const struct drx_store *s, const char *target, const char *rel)
{
    return (int)on_entry(s, rel, &(struct name_call){.op = NAME_SYMLINK, .target = target});
}

int drx_store_entry_unlink(const struct drx_store *s, const char *rel, int flags)
{
    return (int)on_entry(s, rel, &(struct name_call){.op = NAME_UNLINK, .flags = flags});
}

ssize_t drx_store_entry_readlink(const struct drx_store *s, const char *rel, char *buf,
                                 size_t size)
{
    return on_entry(s, rel, &(struct name_call){.op = NAME_READLINK, .out = buf, .size = size});
}

int drx_store_entry_utimens(const struct drx_store *s, const char *rel,
                            const struct timespec tv[2])
{
    if (guard.check) {
        /* guarded: on the descriptor checked, a symlink's too (its own
         * times, AT_EMPTY_PATH: Linux 5.8).  A symlink's by its name again
         * set the times of whatever the name held by then: a user's own
         * symlink, checked, exchanged with root's 0600 file behind the
         * mount, gave root's file the times he asked (45 rounds) */
        char self[SELF_LEN];
        struct stat st;
        int fd = path_fd(s, rel, &st), rc;
        if (fd < 0)
            return fd;
        if (S_ISLNK(st.st_mode)) {
            rc = utimensat(fd, "", tv, AT_EMPTY_PATH) < 0 ? -errno : 0;
        } else {
            self_path(fd, self);
            rc = utimensat(AT_FDCWD, self, tv, 0) < 0 ? -errno : 0;
        }
        close(fd);
        return rc;
    }
    return (int)on_entry(s, rel, &(struct name_call){.op = NAME_UTIMENS, .tv = tv});
}

/* The two-name calls: both directories reached as above. */
static int two_names(const struct drx_store *s, const char *from, const char *to, int op,
                     unsigned flags)
{
    const char *fname, *tname;
    bool fheld, theld;
    int fdir = entry_dir(s, from, &fname, &fheld, true), tdir, rc;

    if (fdir < 0) {
        guard.check = NULL;
        guard.open = NULL;
        return fdir;
    }
    if ((tdir = entry_dir(s, to, &tname, &theld, false)) < 0) {
        entry_dir_put(s, fdir, fheld);
        return tdir;
    }
    if (op == 'l')
        rc = linkat(fdir, fname, tdir, tname, 0);
    else if (flags)
        rc = renameat2(fdir, fname, tdir, tname, flags);
    else
        rc = renameat(fdir, fname, tdir, tname);
    rc = rc < 0 ? -errno : 0;
    entry_dir_put(s, fdir, fheld);
    entry_dir_put(s, tdir, theld);
    return rc;
}

int drx_store_entry_rename(const struct drx_store *s, const char *from, const char *to,
                           unsigned flags)
{
    return two_names(s, from, to, 'r', flags);
}

int drx_store_entry_link(const struct drx_store *s, const char *from, const char *to)
{
    return two_names(s, from, to, 'l', 0);
}

int drx_store_lookup(const struct drx_store *s, const char *rel, bool at_root,
                     enum drx_store_kind *kind, struct stat *st, char *srel)
{
    const char *name;
    char stem[PATH_MAX];
    int rc, dfd;

    *kind = DRX_STORE_NONE;
    if ((dfd = drx_store_dir_get(s, rel, &name)) < 0)
        return dfd == -ENOTDIR || dfd == -ELOOP ? -ENOENT : dfd;
    if (drx_store_name_internal(name, at_root)) {
        drx_store_dir_put(s, dfd);
        return -ENOENT;
    }
    if (strlen(name) > DRX_STORE_SHORT_MAX &&
        long_lookup(dfd, rel, name, kind, st, stem) == 0) {
        drx_store_dir_put(s, dfd);
        if (srel)
            memcpy(srel, stem, strlen(stem) + 1);
        return 0;
    }
    rc = kind_at(dfd, name, AT_SYMLINK_NOFOLLOW, kind, st);
    drx_store_dir_put(s, dfd);
    if (rc < 0)
        return rc;
    /* NAME.xmd, NAME.xta and NAME.nafs are the store's own: never entries */
    if ((*kind != DRX_STORE_ARRAY && *kind != DRX_STORE_STRIPED &&
         drx_store_name_reserved(name, at_root)) ||
        *kind == DRX_STORE_NONE) {
        *kind = DRX_STORE_NONE;
        return -ENOENT;
    }
    if (srel && srel != rel)
        memcpy(srel, rel, strlen(rel) + 1);
    return 0;
}

/* ---- long names: making and dropping a stem ---------------------------------- */

int drx_store_long_rel(const char *rel, char *out)
{
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    size_t dlen = (size_t)(name - rel);
    char stem[DRX_STORE_LONG_STEM_LEN + 1];

    /* the store path of an array or striped file must have room for its
     * suffix (lookup stats NAME.nafs beneath the store root) */
    if (strlen(name) <= DRX_STORE_SHORT_MAX) {
        if (strlen(rel) + sizeof ".nafs" > PATH_MAX)
            return -ENAMETOOLONG;
        if (out != rel)
            memmove(out, rel, strlen(rel) + 1);
        return 0;
    }
    drx_store_long_stem(name, stem, sizeof stem);
    if (dlen + sizeof stem + sizeof ".nafs" - 1 > PATH_MAX)
        return -ENAMETOOLONG;
    memmove(out, rel, dlen);
    memcpy(out + dlen, stem, sizeof stem);
    return 1;
}

int drx_store_long_new(const struct drx_store *s, const char *rel, char *out)
{
    const char *base = strrchr(rel, '/'), *stem;
    char name[NAME_MAX + 1];
    int rc, dfd;

    /* out may be rel */
    snprintf(name, sizeof name, "%s", base ? base + 1 : rel);
    if ((rc = drx_store_long_rel(rel, out)) != 1)
        return rc;
    if ((dfd = drx_store_dir_get(s, out, &stem)) < 0)
        return dfd;
    rc = symlinkat(name, dfd, stem) == 0 ? 0 : -errno;
    if (rc == -EEXIST && long_name_is(dfd, stem, name))
        rc = 0;
    drx_store_dir_put(s, dfd);
    if (rc == -EEXIST) {
        /* two names with one hash: not seen in practice, refused */
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: long name's hash is taken by another name", out);
        return -ENAMETOOLONG;
    }
    return rc;
}

void drx_store_long_drop(const struct drx_store *s, const char *stem)
{
    const char *name;
    char path[NAME_MAX + 8];
    struct stat st;
    size_t suffix;
    int dfd = drx_store_dir_get(s, stem, &name);

    if (dfd < 0)
        return;
    /* an array and a striped file of one name share it */
    if (drx_store_name_is_long(name, &suffix) && suffix == 0 &&
        !(snprintf(path, sizeof path, "%s.xmd", name) > 0 &&
          fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) &&
        !(snprintf(path, sizeof path, "%s.nafs", name) > 0 &&
          fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0))
        unlinkat(dfd, name, 0);
    drx_store_dir_put(s, dfd);
}

/* ---- listing ---------------------------------------------------------------- */

static bool regular_at(int dfd, const char *name)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* True when base (blen bytes) + suffix names a regular file of dfd. */
static bool suffixed_is_reg(int dfd, const char *base, size_t blen, const char *suffix)
{
    char name[NAME_MAX + 8];
    if (blen + strlen(suffix) > NAME_MAX)
        return false;
    memcpy(name, base, blen);
    strcpy(name + blen, suffix);
    return regular_at(dfd, name);
}

static bool strip_suffix(const char *name, size_t len, const char *suffix, size_t *blen)
{
    size_t n = strlen(suffix);
    if (len <= n || memcmp(name + len - n, suffix, n) != 0)
        return false;
    *blen = len - n;
    return true;
}

/* The type of a plain entry, asked of the filesystem when readdir did not
 * say; false when it cannot be known. */
static bool plain_type(int dfd, const char *name, unsigned char d_type,
                       enum drx_store_kind *kind, mode_t *type)
{
    struct stat st;

    if (d_type == DT_UNKNOWN) {
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return false;
        d_type = IFTODT(st.st_mode);
    }
    if (d_type == DT_UNKNOWN || d_type == DT_WHT)
        return false;
    *type = DTTOIF(d_type);
    *kind = S_ISDIR(*type)   ? DRX_STORE_DIRECTORY
            : S_ISREG(*type) ? DRX_STORE_PLAIN
            : S_ISLNK(*type) ? DRX_STORE_SYMLINK
                             : DRX_STORE_SPECIAL;
    return true;
}

/* A long name's stem file (suffix: its suffix's length): the .xmd of an
 * array or the metafile of a striped file shows as the name the stem's
 * symlink records; the symlink and the .xta are not shown. */
static bool long_list_name(int dfd, const char *name, size_t suffix, char *shown,
                           enum drx_store_kind *kind, mode_t *type)
{
    char stem[DRX_STORE_LONG_STEM_LEN + 1];
    const char *sfx = name + DRX_STORE_LONG_STEM_LEN;
    ssize_t n;

    memcpy(stem, name, DRX_STORE_LONG_STEM_LEN);
    stem[DRX_STORE_LONG_STEM_LEN] = '\0';
    if (suffix == 0 || !regular_at(dfd, name))
        return false;
    if (strcmp(sfx, ".xmd") == 0) {
        *kind = DRX_STORE_ARRAY;
        *type = S_IFDIR;
    } else if (strcmp(sfx, ".nafs") == 0 &&
               !suffixed_is_reg(dfd, stem, DRX_STORE_LONG_STEM_LEN, ".xmd")) {
        *kind = DRX_STORE_STRIPED; /* (an array of the same name wins) */
        *type = S_IFREG;
    } else {
        return false;
    }
    n = readlinkat(dfd, stem, shown, NAME_MAX + 1);
    if (n <= DRX_STORE_SHORT_MAX || n > NAME_MAX)
        return false;
    shown[n] = '\0';
    return true;
}

bool drx_store_list_name(int dfd, const char *name, unsigned char d_type, bool at_root,
                         char *shown, enum drx_store_kind *kind, mode_t *type)
{
    size_t len = strlen(name), blen = len;

    if (drx_store_name_is_long(name, &blen))
        return long_list_name(dfd, name, blen, shown, kind, type);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        drx_store_name_internal(name, at_root) || strip_suffix(name, len, ".xta", &blen))
        return false;
    if (strip_suffix(name, len, ".xmd", &blen)) {
        if (!regular_at(dfd, name))
            return false;
        *kind = DRX_STORE_ARRAY;
        *type = S_IFDIR;
    } else if (strip_suffix(name, len, ".nafs", &blen)) {
        /* an array of the same name wins */
        if (!regular_at(dfd, name) || suffixed_is_reg(dfd, name, blen, ".xmd"))
            return false;
        *kind = DRX_STORE_STRIPED;
        *type = S_IFREG;
    } else if (suffixed_is_reg(dfd, name, len, ".xmd") ||
               suffixed_is_reg(dfd, name, len, ".nafs") ||
               !plain_type(dfd, name, d_type, kind, type)) {
        return false; /* hidden by an array or striped file of its name */
    }
    memcpy(shown, name, blen);
    shown[blen] = '\0';
    return !drx_store_name_internal(shown, at_root);
}

/* ---- entries --------------------------------------------------------------- */

int drx_store_entry_open(const struct drx_store *s, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, s->root_fd, rel, &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS)
        fd = openat(s->root_fd, rel, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0 && errno == ELOOP)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: a symlink in the way: refused", rel);
    return fd < 0 ? -errno : (int)fd;
}

/* rel opened O_PATH beneath the store with its stat; symlinks themselves
 * are opened (and have no mode: callers that would follow the descriptor's
 * name refuse them).  The thread's guard, if any, opens it (its opener)
 * and checks it, and goes. */
static int path_fd(const struct drx_store *s, const char *rel, struct stat *st)
{
    int (*check)(int, const struct stat *, const char *, void *) = guard.check;
    int (*opener)(const char *) = guard.open;
    int fd, e;

    guard.check = NULL;
    guard.open = NULL;
    fd = opener ? opener(rel) : drx_store_entry_open(s, rel, O_PATH | O_NOFOLLOW, 0);
    if (fd >= 0 && fstat(fd, st) < 0) {
        e = -errno;
        close(fd);
        return e;
    }
    if (fd < 0 || !check || (e = check(fd, st, rel, guard.arg)) == 0)
        return fd;
    close(fd);
    return e;
}

/* rel opened O_PATH beneath the store and named by its descriptor, for
 * calls that take no descriptor (chmod, utimensat, the xattr calls: none
 * works on an O_PATH descriptor).  -EOPNOTSUPP for a symlink, whose name
 * would be followed. */
static int self_fd(const struct drx_store *s, const char *rel, char self[SELF_LEN])
{
    struct stat st;
    int fd = path_fd(s, rel, &st);

    if (fd >= 0 && S_ISLNK(st.st_mode)) {
        close(fd);
        return -EOPNOTSUPP;
    }
    if (fd >= 0)
        self_path(fd, self);
    return fd;
}

int drx_store_entry_chmod(const struct drx_store *s, const char *rel, mode_t mode)
{
    char self[SELF_LEN];
    int fd = self_fd(s, rel, self), rc;

    if (fd < 0)
        return fd;
    rc = chmod(self, mode & 07777) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int drx_store_entry_chown(const struct drx_store *s, const char *rel, uid_t uid, gid_t gid)
{
    struct stat st;
    int fd = path_fd(s, rel, &st), rc;

    if (fd < 0)
        return fd;
    rc = fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

ssize_t drx_store_entry_xattr(const struct drx_store *s, const char *rel,
                              const struct drx_xattr_req *r)
{
    char self[SELF_LEN];
    int fd = self_fd(s, rel, self);
    ssize_t rc;

    if (fd < 0)
        return fd;
    switch (r->op) {
    case DRX_XATTR_GET:
        rc = getxattr(self, r->name, r->value, r->size);
        break;
    case DRX_XATTR_SET:
        rc = setxattr(self, r->name, r->value, r->size, r->flags);
        break;
    case DRX_XATTR_LIST:
        rc = listxattr(self, r->value, r->size);
        break;
    default:
        rc = removexattr(self, r->name);
        break;
    }
    rc = rc < 0 ? -errno : rc;
    close(fd);
    return rc;
}

int drx_store_entry_watch(const struct drx_store *s, int ifd, const char *rel, uint32_t mask)
{
    char self[SELF_LEN];
    int fd = self_fd(s, rel, self), wd;

    if (fd < 0)
        return fd;
    wd = inotify_add_watch(ifd, self, mask);
    wd = wd < 0 ? -errno : wd;
    close(fd);
    return wd;
}
