/* Stores: `.drx/` at the root, remembered settings, path mapping. */
#include "drx/store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config_i.h"
#include "drx/io.h"
#include "drx/log.h"
#include "replace_i.h"
#include "store_i.h"
#include "stripe_i.h"

/* ---- lexical paths ---------------------------------------------------------- */

/* Appends component p[0..len) to buf[0..*n), folding "." and "..". */
static int add_component(char *buf, size_t size, size_t *n, const char *p, size_t len)
{
    if (len == 1 && p[0] == '.')
        return 0;
    if (len == 2 && p[0] == '.' && p[1] == '.') {
        while (*n > 0 && buf[*n - 1] != '/')
            (*n)--;
        if (*n > 0)
            (*n)--; /* the '/' before the removed component */
        return 0;
    }
    if (*n + 1 + len + 1 > size)
        return -ENAMETOOLONG;
    buf[(*n)++] = '/';
    memcpy(buf + *n, p, len);
    *n += len;
    return 0;
}

int drx_store_abspath(const char *path, char *out, size_t outlen)
{
    char buf[PATH_MAX * 2];
    size_t n = 0;

    if (!path || !path[0])
        return -ENOENT;
    if (path[0] != '/') {
        if (!getcwd(buf, PATH_MAX))
            return -errno;
        n = strlen(buf);
    }
    /* Append component by component, folding "." and "..": never looks at
     * the filesystem, so symlinks keep the meaning the user typed (as a
     * shell's logical cd does), and no drxfs mount is entered here (only
     * drx_store_resolve_path_for's commit request goes to one, with a
     * bounded wait). */
    for (const char *p = path; *p;) {
        size_t len;
        p += strspn(p, "/");
        len = strcspn(p, "/");
        if (len && add_component(buf, sizeof buf, &n, p, len) < 0)
            return -ENAMETOOLONG;
        p += len;
    }
    if (n == 0)
        buf[n++] = '/';
    buf[n] = '\0';
    if (n + 1 > outlen)
        return -ENAMETOOLONG;
    memcpy(out, buf, n + 1);
    return (int)n;
}

/* Joins root and a relative path, then normalises. */
static int join_abs(const char *root, const char *rel, char *out, size_t outlen)
{
    char buf[PATH_MAX * 2];

    if (rel[0] == '/')
        return drx_store_abspath(rel, out, outlen);
    if ((size_t)snprintf(buf, sizeof buf, "%s/%s", root, rel) >= sizeof buf)
        return -ENAMETOOLONG;
    return drx_store_abspath(buf, out, outlen);
}

/* Length of prefix when path equals prefix or continues with '/' below it. */
static size_t under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);

    if (strcmp(prefix, "/") == 0)
        return path[0] == '/' ? 0 : (size_t)-1;
    if (strncmp(path, prefix, n) != 0 || (path[n] != '\0' && path[n] != '/'))
        return (size_t)-1;
    return n;
}

/* ---- mountinfo ----------------------------------------------------------- */

/* Decodes mountinfo's octal escapes (\040 etc.) in place. */
static void unescape(char *s)
{
    char *w = s;

    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* True when the comma-separated option list opts holds opt. */
static bool has_opt(const char *opts, const char *opt)
{
    size_t n = strlen(opt);

    for (const char *p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* The numeric value of option name (with its "=") in list opts; -1 when
 * absent. */
static long opt_num(const char *opts, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] >= '0' && p[n] <= '9')
            return strtol(p + n, NULL, 10);
    return -1;
}

/* A drxfs mount's superblock (maj:min) and owner (the daemon's user_id=,
 * -1 unknown), for asking it to commit. */
struct mi_ids {
    dev_t dev;
    long owner;
};

/* One line of mountinfo (changed in place): true for a drxfs mount made by
 * our daemon, with its mount point and source (the store root) decoded;
 * *ro when the mount (its own options: a read-only bind of a writable
 * mount counts) or its superblock is read-only; ids (when not NULL) its
 * superblock and owner. */
static bool mi_drxfs_line(char *line, char **mnt, char **source, bool *ro, struct mi_ids *ids)
{
    /* id parent maj:min root MOUNTPOINT opts [optional...] - FSTYPE SOURCE sopts */
    char *f[6] = {0}, *save = NULL, *tok;
    int i = 0;
    line[strcspn(line, "\n")] = '\0';
    char *sep = strstr(line, " - ");
    if (!sep)
        return false;
    *sep = '\0';
    for (tok = strtok_r(line, " ", &save); tok && i < 6; tok = strtok_r(NULL, " ", &save))
        f[i++] = tok;
    if (i < 6)
        return false;
    save = NULL;
    char *fstype = strtok_r(sep + 3, " ", &save);
    char *src = fstype ? strtok_r(NULL, " ", &save) : NULL;
    char *sopts = src ? strtok_r(NULL, " ", &save) : NULL;
    if (!fstype || !src || strcmp(fstype, DRX_STORE_FSTYPE) != 0)
        return false;
    unescape(f[4]);
    unescape(src);
    if (src[0] != '/')
        return false; /* not mounted by our daemon with fsname=STORE */
    *mnt = f[4];
    *source = src;
    *ro = has_opt(f[5], "ro") || (sopts && has_opt(sopts, "ro"));
    if (ids) {
        unsigned maj = 0, min = 0;
        sscanf(f[2], "%u:%u", &maj, &min);
        ids->dev = makedev(maj, min);
        ids->owner = opt_num(sopts, "user_id=");
    }
    return true;
}

int drx_store_mounted_mi(const char *mountinfo, const char *root, char *mnt, size_t mntlen)
{
    char abs[PATH_MAX];
    char *line = NULL, *m, *src;
    size_t cap = 0;
    struct stat rst, sst;
    bool have_rst;
    int n = drx_store_abspath(root, abs, sizeof abs), found = 0;
    FILE *fp;

    if (n < 0)
        return n;
    have_rst = stat(abs, &rst) == 0;
    fp = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
    if (!fp)
        return 0;
    while (!found && getline(&line, &cap, fp) > 0) {
        bool ro;
        if (!mi_drxfs_line(line, &m, &src, &ro, NULL))
            continue;
        char norm[PATH_MAX];
        /* The same directory by name, or by identity (mounted through a
         * symlink or a bind mount of it). */
        if ((drx_store_abspath(src, norm, sizeof norm) >= 0 && strcmp(norm, abs) == 0) ||
            (have_rst && stat(src, &sst) == 0 && sst.st_dev == rst.st_dev &&
             sst.st_ino == rst.st_ino)) {
            found = 1;
            if (mnt && (size_t)snprintf(mnt, mntlen, "%s", m) >= mntlen)
                found = -ENAMETOOLONG;
        }
    }
    free(line);
    fclose(fp);
    return found;
}

int drx_store_mount_at(const char *mountinfo, const char *mnt, char *src, size_t srclen)
{
    char *line = NULL, *m, *source;
    size_t cap = 0;
    int found = 0;
    FILE *fp = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");

    if (!fp)
        return 0;
    while (!found && getline(&line, &cap, fp) > 0) {
        bool ro;
        if (mi_drxfs_line(line, &m, &source, &ro, NULL) && strcmp(m, mnt) == 0) {
            found = 1;
            if (src && (size_t)snprintf(src, srclen, "%s", source) >= srclen)
                found = -ENAMETOOLONG;
        }
    }
    free(line);
    fclose(fp);
    return found;
}

int drx_store_lock(const struct drx_store *s, bool exclusive)
{
    int fd = openat(s->root_fd, DRX_STORE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return -errno;
    do
        rc = exclusive ? flock(fd, LOCK_EX | LOCK_NB) : drx_io_flock(fd, LOCK_SH);
    while (rc < 0 && errno == EINTR && exclusive);
    if (rc < 0) {
        rc = exclusive ? -errno : rc;
        close(fd);
        return rc;
    }
    return fd;
}

int drx_store_mounted(const char *root, char *mnt, size_t mntlen)
{
    return drx_store_mounted_mi(NULL, root, mnt, mntlen);
}

/* The drxfs mount that holds abs, the deepest (a store mounted inside
 * another; of mounts on one point, the last, the one on top). */
struct holder {
    bool found, ro;
    struct mi_ids ids;
    size_t len; /* of the mount point's part of abs */
    char src[PATH_MAX], mnt[PATH_MAX];
};

static void find_holder(const char *mountinfo, const char *abs, struct holder *h)
{
    char *line = NULL;
    size_t cap = 0;
    FILE *fp = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");

    memset(h, 0, sizeof *h);
    if (!fp)
        return;
    while (getline(&line, &cap, fp) > 0) {
        char *mnt, *source;
        bool ro;
        struct mi_ids ids;
        size_t m;
        if (!mi_drxfs_line(line, &mnt, &source, &ro, &ids) || (m = under(abs, mnt)) == (size_t)-1)
            continue;
        if (!h->found || m >= h->len) {
            h->len = m;
            h->ro = ro;
            h->ids = ids;
            snprintf(h->mnt, sizeof h->mnt, "%s", mnt);
            h->found = snprintf(h->src, sizeof h->src, "%s", source) < (int)sizeof h->src;
        }
    }
    free(line);
    fclose(fp);
}

/* A mount found in the real mount table is trusted as the way to its
 * store only when it is root's or the caller's (any user may mount a FUSE
 * program that calls itself drxfs and names any directory as its source),
 * and when its source is still a directory reached without a symlink
 * (drxfs records the store's real path: a name swapped for a symlink after
 * the mount leads elsewhere).  0 or -errno with err. */
static int holder_trusted(const struct holder *h, const char *path, struct drx_err *err)
{
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };

    if (h->ids.owner >= 0 && h->ids.owner != 0 && (uid_t)h->ids.owner != geteuid())
        return drx_err_set(err, EPERM,
                           "%s: under %s, a drxfs mount of another user (uid %ld): give the "
                           "store's own path instead",
                           path, h->mnt, h->ids.owner);
    long fd = syscall(SYS_openat2, AT_FDCWD, h->src, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS)
        return 0; /* a kernel before 5.6: as before */
    if (fd < 0)
        return drx_err_set(err, errno == ELOOP ? EXDEV : errno,
                           "%s: the store of %s, %s, is no longer a directory reached without "
                           "a symlink (moved or replaced after the mount): refused",
                           path, h->mnt, h->src);
    close((int)fd);
    return 0;
}

int drx_store_resolve_path_for(const char *mountinfo, const char *path, unsigned flags, char *out,
                               size_t outlen, struct drx_err *err)
{
    char abs[PATH_MAX], tmp[PATH_MAX * 2];
    struct holder h;
    int n;

    n = drx_store_abspath(path, abs, sizeof abs);
    if (n < 0)
        return drx_err_set(err, -n, "%s: %s", path, strerror(-n));
    find_holder(mountinfo, abs, &h);
    if (!h.found) {
        if ((size_t)n + 1 > outlen)
            return drx_err_set(err, ENAMETOOLONG, "%s: path too long", path);
        memcpy(out, abs, (size_t)n + 1);
        return n;
    }
    /* drx and drx-load reach the store's files directly, past the mount:
     * what a read-only mount shows must stay read-only for them too. */
    if (h.ro && (flags & DRX_STORE_FOR_WRITE))
        return drx_err_set(err, EROFS, "%s: read-only file system (%s is a read-only drxfs mount)",
                           path, h.mnt);
    if (!mountinfo && (n = holder_trusted(&h, path, err)) < 0)
        return n;
    /* The store must show what the mount shows: sizes of striped files
     * waiting for the mount's batched commit are recorded first.  A hint
     * (one request to the daemon, answered after the commit), asked of the
     * caller's own mounts only, with a bounded wait (store_commit.c): one
     * not asked or that refuses (read-only, an older drxfs) is not an
     * error.  Only with the real mount table: a test's table names no
     * daemon. */
    if (!mountinfo && !(flags & DRX_STORE_NO_COMMIT))
        drx_store_ask_commit(h.mnt, h.ids.dev, h.ids.owner);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s", h.src, abs + h.len) >= sizeof tmp)
        return drx_err_set(err, ENAMETOOLONG, "%s: path too long", path);
    n = drx_store_abspath(tmp, out, outlen);
    if (n < 0)
        return drx_err_set(err, -n, "%s: %s", path, strerror(-n));
    return n;
}

int drx_store_resolve_path_mi(const char *mountinfo, const char *path, char *out, size_t outlen)
{
    return drx_store_resolve_path_for(mountinfo, path, 0, out, outlen, NULL);
}

int drx_store_resolve_path(const char *path, char *out, size_t outlen)
{
    return drx_store_resolve_path_for(NULL, path, 0, out, outlen, NULL);
}

/* ---- finding stores -------------------------------------------------------- */

static bool is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int drx_store_find(const char *path, char *root, size_t rootlen)
{
    char cur[PATH_MAX], probe[PATH_MAX + 8];
    int n = drx_store_abspath(path, cur, sizeof cur);

    if (n < 0)
        return n;
    for (;;) {
        snprintf(probe, sizeof probe, "%s%s" DRX_STORE_DIR, cur, strcmp(cur, "/") == 0 ? "" : "/");
        if (is_dir(probe)) {
            n = (int)strlen(cur);
            if ((size_t)n + 1 > rootlen)
                return -ENAMETOOLONG;
            memcpy(root, cur, (size_t)n + 1);
            return n;
        }
        if (strcmp(cur, "/") == 0)
            return -ENOENT;
        char *slash = strrchr(cur, '/');
        if (slash == cur)
            cur[1] = '\0';
        else
            *slash = '\0';
    }
}

/* drx_store_path_reserved into abs (PATH_MAX): path absolute, its
 * directory resolved.  The store root's length in abs, 0 when abs is in
 * no store, or -errno with err. */
static int path_reserved_at(const char *path, const char *shown, char *abs, struct drx_err *err)
{
    char root[PATH_MAX], dir[PATH_MAX], names[PATH_MAX];
    int rc = drx_store_abspath(path, abs, PATH_MAX);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", shown, strerror(-rc));
    /* where the file will be: its directory as it resolves (a symlink in
     * the store to a directory elsewhere leads out of it) */
    char *slash = strrchr(abs, '/');
    if (slash && slash != abs) {
        size_t bl = strlen(slash + 1);
        *slash = '\0';
        if (realpath(abs, dir) && strlen(dir) + 1 + bl < sizeof dir) {
            size_t dl = strcmp(dir, "/") ? strlen(dir) : 0;
            dir[dl] = '/';
            memcpy(dir + dl + 1, slash + 1, bl + 1);
            memcpy(abs, dir, dl + bl + 2);
        } else {
            *slash = '/';
        }
    }
    int n = drx_store_find(abs, root, sizeof root);
    if (n == -ENOENT)
        return 0;
    if (n < 0)
        return drx_err_set(err, -n, "%s: %s", shown, strerror(-n));
    bool at_root = true;
    char *save = NULL;
    memcpy(names, abs, strlen(abs) + 1);
    for (char *e = strtok_r(names + n, "/", &save); e; e = strtok_r(NULL, "/", &save)) {
        if (drx_store_name_reserved(e, at_root))
            return drx_err_set(err, EINVAL,
                               "%s: the store keeps the name %s for its own files (.drx/, an "
                               "array's .xta and .xmd, a striped file's .nafs): nothing written",
                               shown, e);
        at_root = false;
    }
    return n;
}

int drx_store_path_reserved(const char *path, const char *shown, struct drx_err *err)
{
    char abs[PATH_MAX];
    int n = path_reserved_at(path, shown, abs, err);

    return n < 0 ? n : 0;
}

int drx_store_path_plain(const char *path, const char *shown, struct drx_err *err)
{
    char abs[PATH_MAX];
    int n = path_reserved_at(path, shown, abs, err);

    if (n <= 0 || abs[n] == '\0')
        return n < 0 ? n : 0;
    /* SPEC 2: in a store, NAME is the array or striped file of that name
     * when there is one; a plain NAME beside it would never show. */
    switch (drx_store_classify(abs)) {
    case DRX_STORE_ARRAY:
        return drx_err_set(err, EEXIST,
                           "%s: is an array of the store (a plain file of its name would hide "
                           "behind it): nothing written", shown);
    case DRX_STORE_STRIPED:
        return drx_err_set(err, EEXIST,
                           "%s: is a striped file of the store, and this writes plain files "
                           "(drx-load copy one over it): nothing written", shown);
    default:
        return 0;
    }
}

int drx_store_locate_for(const char *path, unsigned flags, char *root, char *store_path, char *rel,
                         struct drx_err *err)
{
    int n = drx_store_resolve_path_for(NULL, path, flags, store_path, PATH_MAX, err);

    if (n < 0)
        return n;
    n = drx_store_find(store_path, root, PATH_MAX);
    if (n == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: not inside a drx store (no %s/ above it)", path,
                           DRX_STORE_DIR);
    if (n < 0)
        return drx_err_set(err, -n, "%s: %s", path, strerror(-n));
    if (rel) {
        const char *r = store_path + under(store_path, root);
        while (*r == '/')
            r++;
        snprintf(rel, PATH_MAX, "%s", r);
    }
    return 0;
}

int drx_store_locate(const char *path, char *root, char *store_path, char *rel, struct drx_err *err)
{
    return drx_store_locate_for(path, 0, root, store_path, rel, err);
}

/* ---- names ------------------------------------------------------------------ */

bool drx_store_name_is_temp(const char *name)
{
    size_t n = strlen(name);
    static const char *const kinds[] = {".xmd", ".xta", ".nafs"};
    const size_t sl = sizeof DRX_STORE_TEMP_SHORT - 1;

    if (n < 8 || name[0] != '.' || name[n - 7] != '.')
        return false;
    for (size_t i = n - 6; i < n; i++)
        if (!isalnum((unsigned char)name[i]))
            return false;
    if (n == sl + 6 && memcmp(name, DRX_STORE_TEMP_SHORT, sl) == 0)
        return true;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t kl = strlen(kinds[k]);
        /* "." + at least one character of NAME + kind + ".XXXXXX" */
        if (n >= 1 + 1 + kl + 7 && memcmp(name + n - 7 - kl, kinds[k], kl) == 0)
            return true;
    }
    return false;
}

/* Two 64-bit FNV-1a hashes of name (different bases), each mixed: a
 * collision of all 128 bits is not a practical concern, and every lookup
 * compares the name the symlink records anyway. */
void drx_store_long_stem(const char *name, char *out, size_t len)
{
    uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};

    for (int k = 0; k < 2; k++) {
        for (const unsigned char *c = (const unsigned char *)name; *c; c++)
            h[k] = (h[k] ^ *c) * 0x100000001b3ULL;
        h[k] ^= h[k] >> 33;
        h[k] *= 0xff51afd7ed558ccdULL;
        h[k] ^= h[k] >> 33;
    }
    snprintf(out, len, DRX_STORE_LONG_PREFIX "%016llx%016llx", (unsigned long long)h[0],
             (unsigned long long)h[1]);
}

bool drx_store_name_is_long(const char *name, size_t *suffix)
{
    const size_t pl = sizeof DRX_STORE_LONG_PREFIX - 1;
    size_t n = strlen(name);

    if (n < DRX_STORE_LONG_STEM_LEN || memcmp(name, DRX_STORE_LONG_PREFIX, pl) != 0)
        return false;
    for (size_t i = pl; i < DRX_STORE_LONG_STEM_LEN; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i]))
            return false;
    *suffix = n - DRX_STORE_LONG_STEM_LEN;
    return true;
}

int drx_store_temp_name(const char *base, const char *x, char *out, size_t len)
{
    size_t n = strlen(base);
    int w;

    if (n > NAME_MAX)
        return -ENAMETOOLONG;
    /* The long form tells fsck's reader whose temporary it is; the short
     * one keeps names of 243-255 bytes writable (the long form would not
     * fit in NAME_MAX). */
    if (1 + n + 1 + 6 <= NAME_MAX)
        w = snprintf(out, len, ".%s.%.6s", base, x);
    else
        w = snprintf(out, len, DRX_STORE_TEMP_SHORT "%.6s", x);
    return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

bool drx_store_name_internal(const char *name, bool at_root)
{
    size_t suffix;

    if (at_root && strcmp(name, DRX_STORE_DIR) == 0)
        return true;
    return drx_store_name_is_temp(name) || drx_store_name_is_long(name, &suffix);
}

/* ---- store.conf ------------------------------------------------------------ */

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];

    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
            *p = c;
            if (!c)
                break;
        }
    }
    return is_dir(path) ? 0 : -ENOTDIR;
}

/* 1 when the directory at path holds any entry, 0 when it is empty or
 * missing, or -errno. */
static int dir_has_entries(const char *path)
{
    struct dirent *e;
    DIR *d = opendir(path);
    int found = 0;

    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while (!found && (e = readdir(d)))
        found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return found;
}

/* mkdir that accepts a directory already there, but nothing else. */
static int make_dir(const char *path, struct drx_err *err)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    if (!is_dir(path))
        return drx_err_set(err, ENOTDIR, "%s: exists and is not a directory", path);
    return 0;
}

/* Writes a libconfig string literal (escaping '"' and '\\'). */
static void put_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

/* dirs[] absolute; written relative to root when inside it.  Replaced
 * atomically (drx_replace_write: `.drx/.store.conf.XXXXXX`, which fsck
 * reports when a crash leaves it). */
static int write_store_conf(const char *root, char *const *dirs, size_t ndirs, unsigned count,
                            uint64_t extent, struct drx_err *err)
{
    char path[PATH_MAX + 32];
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    int rc;

    if (!fp)
        return drx_err_set(err, ENOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/" DRX_STORE_CONF, root);
    fprintf(fp, "# drxfs store settings (written by drx init / drxfs at first mount).\n"
                "# Stripe directories are in order: a metafile names a subfile's directory\n"
                "# by its index here, so do not reorder or remove entries of a store in use.\n"
                "# Relative directories are relative to the store root.\n"
                "version = 1;\n"
                "stripe = {\n"
                "  dirs = [ ");
    for (size_t i = 0; i < ndirs; i++) {
        size_t m = under(dirs[i], root);
        const char *d = dirs[i];
        if (m != (size_t)-1 && dirs[i][m] == '/')
            d = dirs[i] + m + 1;
        put_string(fp, d);
        fputs(i + 1 < ndirs ? ", " : " ", fp);
    }
    fprintf(fp, "];\n  count = %u;\n  extent = %llu;\n};\n", count, (unsigned long long)extent);
    if (fclose(fp) != 0) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    rc = drx_replace_write(path, text, len, NULL, 0644, 0, NULL);
    if (rc < 0)
        drx_err_set(err, -rc, "%s: %s", path, strerror(-rc));
out:
    free(text);
    return rc;
}

/* Makes cfg's dirs absolute against root. */
static int absolutise_dirs(struct drx_config *cfg, const char *root, struct drx_err *err)
{
    char buf[PATH_MAX];

    for (size_t i = 0; i < cfg->stripe.ndirs; i++) {
        int n = join_abs(root, cfg->stripe.dirs[i], buf, sizeof buf);
        if (n < 0)
            return drx_err_set(err, -n, "stripe dir %s: %s", cfg->stripe.dirs[i], strerror(-n));
        char *copy = strdup(buf);
        if (!copy)
            return drx_err_set(err, ENOMEM, "out of memory");
        free(cfg->stripe.dirs[i]);
        cfg->stripe.dirs[i] = copy;
    }
    return 0;
}

int drx_store_load_config(const char *root, const char *config_path, struct drx_config *cfg,
                          struct drx_err *err)
{
    char conf[PATH_MAX];
    int rc;

    rc = drx_config_defaults(cfg, NULL);
    if (rc < 0)
        return drx_err_set(err, -rc, "out of memory");
    if (snprintf(conf, sizeof conf, "%s/" DRX_STORE_CONF, root) >= (int)sizeof conf) {
        rc = drx_err_set(err, ENAMETOOLONG, "%s: path too long", root);
        goto out;
    }
    /* No stat first: the loader's own open decides (a store without
     * store.conf is one drxfs made at mount). */
    rc = drx_config_load_keys(cfg, conf, DRX_CONFIG_KEYS_STORE, err);
    if (rc == -ENOENT) {
        rc = 0;
        if (err)
            err->msg[0] = '\0';
    }
    if (rc < 0)
        goto out;
    if (config_path)
        rc = drx_config_load_file(cfg, config_path, err);
out:
    if (rc < 0)
        drx_config_fini(cfg);
    return rc;
}

/* A stripe dir elsewhere in the store's tree would show its subfiles at
 * the mount point as ordinary files: only under .drx/ or outside. */
static int check_dirs_placed(const struct drx_config *want, const char *root, struct drx_err *err)
{
    char drxdir[PATH_MAX + 32];

    snprintf(drxdir, sizeof drxdir, "%s/" DRX_STORE_DIR, root);
    for (size_t i = 0; i < want->stripe.ndirs; i++)
        if (under(want->stripe.dirs[i], root) != (size_t)-1 &&
            under(want->stripe.dirs[i], drxdir) == (size_t)-1)
            return drx_err_set(err, EINVAL,
                               "stripe dir %s is inside the store but not under %s/: it would "
                               "show at the mount point",
                               want->stripe.dirs[i], drxdir);
    return 0;
}

/* root and root/.drx exist afterwards; with empty_only, a directory that
 * is not a store yet must be empty. */
static int make_store_dirs(const char *root, bool empty_only, struct drx_err *err)
{
    char path[PATH_MAX + 32];
    int rc;

    snprintf(path, sizeof path, "%s/" DRX_STORE_DIR, root);
    if (empty_only && !is_dir(path) && (rc = dir_has_entries(root)) != 0)
        return rc > 0 ? drx_err_set(err, ENOTEMPTY, "%s: not a drx store (no %s/) and not empty",
                                    root, DRX_STORE_DIR)
                      : drx_err_set(err, -rc, "%s: %s", root, strerror(-rc));
    if ((rc = make_dir(root, err)) < 0)
        return rc;
    return make_dir(path, err);
}

/* An existing store asked for other settings than it has: refused. */
static int check_same_layout(const struct drx_config *have, const struct drx_config *want,
                             const char *root, struct drx_err *err)
{
    bool same = have->stripe.ndirs == want->stripe.ndirs;

    for (size_t i = 0; same && i < have->stripe.ndirs; i++)
        same = strcmp(have->stripe.dirs[i], want->stripe.dirs[i]) == 0;
    if (!same)
        return drx_err_set(err, EEXIST,
                           "%s is already a store with other stripe dirs (%s%s); changing "
                           "them would orphan its striped files",
                           root, have->stripe.dirs[0], have->stripe.ndirs > 1 ? ", ..." : "");
    if (have->stripe.count != want->stripe.count || have->stripe.extent != want->stripe.extent)
        return drx_err_set(err, EEXIST,
                           "%s is already a store with count=%u extent=%llu; use `drx "
                           "stripe set %s --count N --extent BYTES` to change the default "
                           "layout",
                           root, have->stripe.count, (unsigned long long)have->stripe.extent,
                           root);
    return 0;
}

/* Stripe directories: (re)create any missing, so a store whose default
 * dirs were removed by hand recovers; existing ones are left as they are. */
static int make_stripe_dirs(const struct drx_config *use, struct drx_err *err)
{
    for (size_t i = 0; i < use->stripe.ndirs; i++) {
        int rc = mkdir_p(use->stripe.dirs[i], 0755);
        if (rc < 0)
            return drx_err_set(err, -rc, "stripe dir %s: %s", use->stripe.dirs[i], strerror(-rc));
    }
    return 0;
}

/* The settings an existing store remembers, into have (absolute dirs). */
static int load_existing(const char *root, struct drx_config *have, struct drx_err *err)
{
    int rc = drx_store_load_config(root, NULL, have, err);

    return rc < 0 ? rc : absolutise_dirs(have, root, err);
}

/* A failed init takes back the directories it made: its stripe
 * directories inside .drx/, .drx/ and the root, each only if it made it
 * and it is empty (rmdir), so that a full disk leaves no half store.
 * made_root, made_drx: whether this init made them. */
static void init_undo(const char *root, const struct drx_config *want, bool made_root,
                      bool made_drx)
{
    char drx[PATH_MAX + 32];
    size_t n = (size_t)snprintf(drx, sizeof drx, "%s/" DRX_STORE_DIR, root);

    if (made_drx) {
        for (size_t i = 0; i < want->stripe.ndirs; i++) {
            char d[PATH_MAX], *slash;
            if (strncmp(want->stripe.dirs[i], drx, n) != 0 || want->stripe.dirs[i][n] != '/' ||
                (size_t)snprintf(d, sizeof d, "%s", want->stripe.dirs[i]) >= sizeof d)
                continue;
            /* the directory and the parents mkdir_p made for it, up to .drx */
            while (strlen(d) > n && rmdir(d) == 0 && (slash = strrchr(d, '/')))
                *slash = '\0';
        }
        (void)rmdir(drx);
    }
    if (made_root)
        (void)rmdir(root);
}

int drx_store_init(const char *root_in, const struct drx_config *cfg_in, unsigned flags,
                   struct drx_err *err)
{
    char root[PATH_MAX], path[PATH_MAX + 32];
    struct drx_config want = {0}, have = {0};
    struct stat st;
    int rc, existed;
    bool made_root, made_drx;

    rc = drx_store_abspath(root_in, root, sizeof root);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", root_in, strerror(-rc));
    rc = drx_config_validate(cfg_in, err);
    if (rc < 0)
        return rc;
    rc = drx_config_copy(&want, cfg_in);
    if (rc < 0) {
        drx_err_set(err, -rc, "out of memory");
        goto out;
    }
    if ((rc = absolutise_dirs(&want, root, err)) < 0 ||
        (rc = check_dirs_placed(&want, root, err)) < 0)
        goto out;
    snprintf(path, sizeof path, "%s/" DRX_STORE_DIR, root);
    made_root = !is_dir(root);
    made_drx = !is_dir(path);
    if ((rc = make_store_dirs(root, flags & DRX_STORE_INIT_EMPTY_ONLY, err)) < 0)
        goto undo;
    snprintf(path, sizeof path, "%s/" DRX_STORE_CONF, root);
    existed = stat(path, &st) == 0;
    if (existed && ((rc = load_existing(root, &have, err)) < 0 ||
                    (!(flags & DRX_STORE_INIT_KEEP) &&
                     (rc = check_same_layout(&have, &want, root, err)) < 0)))
        goto out;
    if ((rc = make_stripe_dirs(existed ? &have : &want, err)) < 0 ||
        (!existed && (rc = write_store_conf(root, want.stripe.dirs, want.stripe.ndirs,
                                            want.stripe.count, want.stripe.extent, err)) < 0))
        goto undo;
    rc = existed;
    goto out;
undo:
    init_undo(root, &want, made_root, made_drx);
out:
    drx_config_fini(&want);
    drx_config_fini(&have);
    return rc;
}

/* s->dir_fds from s->cfg (root: the store, for messages and its own
 * default dirs). */
static void open_stripe_dirs(struct drx_store *s, const char *root)
{
    char path[PATH_MAX + 32];

    snprintf(path, sizeof path, "%s/" DRX_STORE_DIR "/", root);
    for (size_t i = 0; i < s->cfg.stripe.ndirs; i++) {
        const char *d = s->cfg.stripe.dirs[i];
        /* Our own default dirs are ours to recreate; a missing external dir
         * is probably an unmounted disk, and creating an empty directory in
         * its place would hide that. */
        if (strncmp(d, path, strlen(path)) == 0 && !is_dir(d))
            mkdir_p(d, 0755);
        s->dir_fds[i] = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->dir_fds[i] < 0)
            drx_log(DRX_LOG_WARNING, "%s: stripe dir %zu (%s) unusable: %s; its subfiles give EIO",
                    root, i, d, strerror(errno));
    }
}

int drx_store_open_cfg(const char *root_in, const struct drx_config *cfg, struct drx_store **out,
                       struct drx_err *err)
{
    char root[PATH_MAX], path[PATH_MAX + 32];
    struct drx_store *s = NULL;
    int rc;

    *out = NULL;
    rc = drx_store_abspath(root_in, root, sizeof root);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", root_in, strerror(-rc));
    snprintf(path, sizeof path, "%s/" DRX_STORE_DIR, root);
    if (!is_dir(path))
        return drx_err_set(err, ENOENT, "%s: not a drx store (no %s/; run `drx init %s`)", root,
                           DRX_STORE_DIR, root);
    rc = drx_config_validate(cfg, err);
    if (rc < 0)
        return rc;
    s = calloc(1, sizeof *s);
    if (!s)
        return drx_err_set(err, ENOMEM, "out of memory");
    s->root_fd = -1;
    s->at_fd = -1;
    s->root = strdup(root);
    rc = drx_config_copy(&s->cfg, cfg);
    if (!s->root || rc < 0) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    rc = absolutise_dirs(&s->cfg, root, err);
    if (rc < 0)
        goto out;
    s->dir_fds = malloc(s->cfg.stripe.ndirs * sizeof *s->dir_fds);
    if (!s->dir_fds) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s->cfg.stripe.ndirs; i++)
        s->dir_fds[i] = -1;
    if (drx_stripe_pool_new(s->cfg.stripe.ndirs, &s->pool) < 0) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    s->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->root_fd < 0) {
        rc = drx_err_set(err, errno, "%s: %s", root, strerror(errno));
        goto out;
    }
    open_stripe_dirs(s, root);
    *out = s;
    s = NULL;
    rc = 0;
out:
    drx_store_close(s);
    return rc;
}

int drx_store_open(const char *root, const char *config_path, struct drx_store **out,
                   struct drx_err *err)
{
    struct drx_config cfg;
    int rc;

    *out = NULL;
    rc = drx_store_load_config(root, config_path, &cfg, err);
    if (rc < 0)
        return rc;
    rc = drx_store_open_cfg(root, &cfg, out, err);
    drx_config_fini(&cfg);
    return rc;
}

void drx_store_close(struct drx_store *s)
{
    if (!s)
        return;
    if (s->dir_fds) {
        for (size_t i = 0; i < s->cfg.stripe.ndirs; i++)
            if (s->dir_fds[i] >= 0)
                close(s->dir_fds[i]);
        free(s->dir_fds);
    }
    drx_store_fresh_stop(s);
    drx_stripe_pool_free(s->pool);
    if (s->root_fd >= 0)
        close(s->root_fd);
    drx_store_at_close(s);
    drx_config_fini(&s->cfg);
    free(s->root);
    free(s->name);
    free(s);
}
