/* A store opened by its root descriptor: messages name the store's path,
 * lookup follows the one classification rule, entries are reached beneath
 * the root and never through a symlink. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/config.h"
#include "drx/log.h"
#include "drx/store.h"
#include "tap.h"
#include "test_files.h"

static char base[64], root[256], outside[256];

static void touch(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    spit(path, text);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char last_log[DRX_LOG_MSG_MAX];
static void keep_sink(void *arg, enum drx_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    snprintf(last_log, sizeof last_log, "%s", msg);
}

static struct drx_store *open_at(int fd, const char *name)
{
    struct drx_config cfg = {0};
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};

    if (drx_store_load_config_at(fd, name, NULL, &cfg, &err) < 0 ||
        drx_store_init_at(fd, name, &cfg, DRX_STORE_INIT_KEEP, &err) < 0 ||
        drx_store_open_at(fd, name, &cfg, &s, &err) < 0)
        tap_ok(0, "open by descriptor: %s", err.msg);
    drx_config_fini(&cfg);
    return s;
}

static void test_messages(struct drx_store *s)
{
    char path[PATH_MAX + 64], want[PATH_MAX + 16];
    struct drx_array *a = NULL;
    struct drx_err err = {{0}};

    /* A libcore error about a store file names the store's path. */
    tap_ok(drx_store_path(s, "broken", path, sizeof path) == 0, "path of an entry");
    touch(root, "broken.xmd", "version = 2;\nrank = 1;\n");
    touch(root, "broken.xta", "");
    tap_ok(drx_array_open(path, DRX_RDONLY, &a, &err) < 0, "a broken array does not open");
    snprintf(want, sizeof want, "%s/broken", root);
    tap_ok(strstr(err.msg, want) && !strstr(err.msg, "/proc/"), "the error names the store: %s",
           err.msg);
    /* And so does a log line. */
    drx_log_set_sink(keep_sink, NULL);
    drx_log(DRX_LOG_ERROR, "seen: %s/x", s->root);
    drx_log_set_sink(NULL, NULL);
    snprintf(want, sizeof want, "seen: %s/x", root);
    tap_ok(strcmp(last_log, want) == 0, "a log line names the store: %s", last_log);
    /* A longer descriptor number is not the store's. */
    snprintf(want, sizeof want, "%s9/x", s->root);
    tap_ok(drx_err_set(&err, EIO, "%s", want) == -EIO && strcmp(err.msg, want) == 0,
           "another descriptor's path is left alone: %s", err.msg);
}

static void test_lookup(struct drx_store *s)
{
    static const struct {
        const char *rel;
        bool at_root;
        int rc;
        enum drx_store_kind kind;
    } cases[] = {
        {"arr", true, 0, DRX_STORE_ARRAY},      {"sf", true, 0, DRX_STORE_STRIPED},
        {"both", true, 0, DRX_STORE_ARRAY},     {"dir", true, 0, DRX_STORE_DIRECTORY},
        {"plain", true, 0, DRX_STORE_PLAIN},    {"link", true, 0, DRX_STORE_SYMLINK},
        {"fifo", true, 0, DRX_STORE_SPECIAL},   {"arr.xmd", true, -ENOENT, DRX_STORE_NONE},
        {"arr.xta", true, -ENOENT, DRX_STORE_NONE}, {"sf.nafs", true, -ENOENT, DRX_STORE_NONE},
        {".drx", true, -ENOENT, DRX_STORE_NONE},  {"dir/.drx", false, 0, DRX_STORE_DIRECTORY},
        {"nothing", true, -ENOENT, DRX_STORE_NONE}, {"notxmd", true, 0, DRX_STORE_PLAIN},
        {".a.xmd.Ab12Cd", true, -ENOENT, DRX_STORE_NONE},
    };
    char path[PATH_MAX];
    struct stat st;

    touch(root, "arr.xmd", "");
    touch(root, "arr.xta", "");
    touch(root, "sf.nafs", "");
    touch(root, "both.xmd", "");
    touch(root, "both.nafs", "");
    touch(root, "plain", "");
    touch(root, "notxmd", "");
    touch(root, ".a.xmd.Ab12Cd", "");
    snprintf(path, sizeof path, "%s/notxmd.xmd", root);
    mkdir(path, 0755); /* not a regular file: no array */
    snprintf(path, sizeof path, "%s/dir", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/dir/.drx", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/link", root);
    symlink("/etc/passwd", path);
    snprintf(path, sizeof path, "%s/fifo", root);
    mkfifo(path, 0644);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum drx_store_kind k;
        int rc = drx_store_lookup(s, cases[i].rel, cases[i].at_root, &k, &st, NULL);
        tap_ok(rc == cases[i].rc && k == cases[i].kind, "lookup %s: %d kind %d", cases[i].rel, rc,
               (int)k);
    }
    /* classify (paths typed by users) applies the same rule */
    snprintf(path, sizeof path, "%s/both", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_ARRAY, "classify: the array wins");
    snprintf(path, sizeof path, "%s/notxmd", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_PLAIN, "classify: a directory NAME.xmd is no array");
}

/* A long name's array or striped file is found and listed through its stem
 * (its symlink records the name). */
static void test_long_names(struct drx_store *s)
{
    char name[NAME_MAX + 1], stem[DRX_STORE_LONG_STEM_LEN + 1], srel[PATH_MAX], path[PATH_MAX];
    char shown[NAME_MAX + 1];
    enum drx_store_kind k;
    struct stat st;
    mode_t type;

    memset(name, 'L', 253);
    name[253] = '\0';
    drx_store_long_stem(name, stem, sizeof stem);
    mkdir(strcat(strcpy(path, root), "/ld"), 0755);
    snprintf(path, sizeof path, "%s/ld/%s", root, stem);
    symlink(name, path);
    snprintf(path, sizeof path, "%s/ld", root);
    touch(path, strcat(strcpy(srel, stem), ".nafs"), "");
    snprintf(path, sizeof path, "ld/%s", name);
    tap_ok(drx_store_lookup(s, path, false, &k, &st, srel) == 0 && k == DRX_STORE_STRIPED &&
               strcmp(srel, "ld/") > 0 && strcmp(srel + 3, stem) == 0,
           "a long name is found through its stem: %s", srel);
    name[0] = 'M';
    snprintf(path, sizeof path, "ld/%s", name);
    tap_ok(drx_store_lookup(s, path, false, &k, &st, NULL) == -ENOENT,
           "another long name is not (the symlink records the name)");
    snprintf(path, sizeof path, "%s.nafs", stem);
    int dfd = openat(s->root_fd, "ld", O_RDONLY | O_DIRECTORY);
    name[0] = 'L';
    tap_ok(drx_store_list_name(dfd, path, DT_REG, false, shown, &k, &type) &&
               strcmp(shown, name) == 0 && k == DRX_STORE_STRIPED,
           "the stem's metafile lists as the long name");
    tap_ok(!drx_store_list_name(dfd, stem, DT_LNK, false, shown, &k, &type),
           "the stem's symlink is not listed");
    close(dfd);

    /* making a long name records it first; dropping removes the record
     * only once no file of the stem is left */
    name[0] = 'N';
    snprintf(path, sizeof path, "ld/%s", name);
    tap_ok(drx_store_long_new(s, path, srel) == 0 && strncmp(srel, "ld/.drx-long.", 13) == 0,
           "a new long name's store name is its stem: %s", srel);
    tap_ok(drx_store_long_new(s, path, srel) == 0, "made again: the same record is kept");
    char target[NAME_MAX + 1] = {0};
    tap_ok(readlinkat(s->root_fd, srel, target, NAME_MAX) == 253 && strcmp(target, name) == 0,
           "the stem's symlink records the name");
    char xmd[PATH_MAX + 300];
    snprintf(xmd, sizeof xmd, "%s/%s.xmd", root, srel);
    spit(xmd, "");
    drx_store_long_drop(s, srel);
    tap_ok(readlinkat(s->root_fd, srel, target, NAME_MAX) == 253, "kept while a file of it is left");
    unlink(xmd);
    drx_store_long_drop(s, srel);
    tap_ok(readlinkat(s->root_fd, srel, target, NAME_MAX) < 0, "dropped once none is left");
    tap_ok(drx_store_long_rel("a/b", srel) == 0 && strcmp(srel, "a/b") == 0,
           "a short name is its own store name");
}

/* A listing of the root shows each name once, as lookup sees it. */
static void test_listing(struct drx_store *s)
{
    static const char *const want =
        " arr:1:d both:1:d broken:1:d dir:3:d fifo:6:p link:5:l notxmd:4:- plain:4:- sf:2:-";
    char got[512] = "", shown[NAME_MAX + 1];
    const char *names[64];
    size_t n = 0;
    DIR *dp = fdopendir(dup(s->root_fd));
    struct dirent *de;

    while (dp && (de = readdir(dp)) && n < 64) {
        enum drx_store_kind kind;
        mode_t type;
        if (!drx_store_list_name(dirfd(dp), de->d_name, de->d_type, true, shown, &kind, &type))
            continue;
        char *e = malloc(NAME_MAX + 16);
        snprintf(e, NAME_MAX + 16, "%s:%d:%c", shown, (int)kind,
                 S_ISDIR(type) ? 'd' : S_ISLNK(type) ? 'l' : S_ISFIFO(type) ? 'p' : '-');
        names[n++] = e;
    }
    if (dp)
        closedir(dp);
    qsort(names, n, sizeof names[0], cmp_str);
    for (size_t i = 0; i < n; i++) {
        snprintf(got + strlen(got), sizeof got - strlen(got), " %s", names[i]);
        free((void *)names[i]);
    }
    tap_ok(strcmp(got, want) == 0, "listing:%s", got);
}

/* The daemon's calls by name on nested entries go through the entry's
 * directory opened beneath the root: each works in a real directory, and
 * none reaches beyond a symlink in its place (out -> outside, which holds
 * "secret"). */
static void names_beneath(struct drx_store *s)
{
    struct timespec tv[2] = {{3000000, 0}, {4000000, 0}};
    char path[PATH_MAX], buf[64];
    struct stat st;

    tap_ok(drx_store_entry_mkdir(s, "dir/sub", 0750) == 0 &&
               drx_store_entry_stat(s, "dir/sub", &st) == 0 && S_ISDIR(st.st_mode),
           "mkdir and stat of a nested entry");
    tap_ok(drx_store_entry_symlink(s, "target", "dir/sub/ln") == 0 &&
               drx_store_entry_readlink(s, "dir/sub/ln", buf, sizeof buf) == 6 &&
               memcmp(buf, "target", 6) == 0,
           "symlink and readlink of a nested entry");
    tap_ok(drx_store_entry_utimens(s, "dir/sub/ln", tv) == 0 &&
               drx_store_entry_stat(s, "dir/sub/ln", &st) == 0 && S_ISLNK(st.st_mode) &&
               st.st_mtim.tv_sec == 4000000,
           "utimens of a symlink sets its own times");
    tap_ok(drx_store_entry_rename(s, "dir/sub/ln", "dir/ln2", 0) == 0 &&
               drx_store_entry_link(s, "dir/ln2", "dir/sub/ln3") == 0 &&
               drx_store_entry_rename(s, "dir/ln2", "dir/sub/ln3", RENAME_NOREPLACE) == -EEXIST,
           "rename, link and rename(RENAME_NOREPLACE) of nested entries");
    tap_ok(drx_store_entry_unlink(s, "dir/ln2", 0) == 0 &&
               drx_store_entry_unlink(s, "dir/sub/ln3", 0) == 0 &&
               drx_store_entry_unlink(s, "dir/sub", AT_REMOVEDIR) == 0 &&
               drx_store_entry_stat(s, "dir/sub", &st) == -ENOENT,
           "unlink and rmdir of nested entries");

    tap_ok(drx_store_entry_stat(s, "out/secret", &st) == -ENOENT, "no stat through a symlink");
    tap_ok(drx_store_entry_unlink(s, "out/secret", 0) == -ELOOP &&
               drx_store_entry_mkdir(s, "out/made", 0777) == -ELOOP &&
               drx_store_entry_symlink(s, "x", "out/ln") == -ELOOP &&
               drx_store_entry_mknod(s, "out/fifo", S_IFIFO | 0600, 0) == -ELOOP &&
               drx_store_entry_link(s, "plain", "out/hard") == -ELOOP &&
               drx_store_entry_rename(s, "out/secret", "stolen", 0) == -ELOOP &&
               drx_store_entry_rename(s, "plain", "out/planted", 0) == -ELOOP &&
               drx_store_entry_utimens(s, "out/secret", tv) == -ELOOP &&
               drx_store_entry_readlink(s, "out/secret", buf, sizeof buf) == -ELOOP,
           "unlink, mkdir, symlink, mknod, link, rename, utimens, readlink through a symlink: "
           "ELOOP");
    snprintf(path, sizeof path, "%s/secret", outside);
    DIR *d = opendir(outside);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    tap_ok(stat(path, &st) == 0 && st.st_mtim.tv_sec != 4000000 && n == 1,
           "the outside directory holds its one file, untouched");
    enum drx_store_kind k;
    tap_ok(drx_store_lookup(s, "out/secret", false, &k, &st, NULL) == -ENOENT &&
               k == DRX_STORE_NONE,
           "a lookup through a symlink finds nothing");
}

static void test_entries(struct drx_store *s)
{
    char path[PATH_MAX], value[16] = {0};
    struct drx_xattr_req set = {DRX_XATTR_SET, "user.k", "v1", 2, 0};
    struct drx_xattr_req get = {DRX_XATTR_GET, "user.k", value, sizeof value, 0};
    struct timespec tv[2] = {{1000000, 0}, {2000000, 0}};
    struct stat st;
    int fd, ifd;

    /* a symlink on the way out of the store is refused */
    touch(outside, "secret", "root only");
    snprintf(path, sizeof path, "%s/out", root);
    symlink(outside, path);
    tap_ok(drx_store_entry_open(s, "out/secret", O_RDONLY, 0) == -ELOOP,
           "open through a symlink: ELOOP");
    tap_ok(drx_store_entry_chmod(s, "out/secret", 0777) == -ELOOP, "chmod through a symlink");
    snprintf(path, sizeof path, "%s/secret", outside);
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 07777) != 0777, "the outside file kept its mode");
    tap_ok(drx_store_entry_open(s, "../x", O_RDONLY, 0) < 0, "open above the root refused");
    tap_ok(drx_store_entry_chmod(s, "link", 0600) == -EOPNOTSUPP, "a symlink has no mode");
    /* libcore's paths of nested entries go through their directory, opened
     * beneath the root: never through a symlink on the way */
    char lp[PATH_MAX + 64];
    int pin;
    tap_ok(drx_store_path_pin(s, "out/secret", lp, sizeof lp, &pin) == -ELOOP && pin == -1,
           "a libcore path through a symlink: ELOOP");
    tap_ok(drx_store_path_pin(s, "dir/x", lp, sizeof lp, &pin) == 0 && pin >= 0 &&
               strstr(lp, "/x") && !strstr(lp, "dir"),
           "a nested entry's path goes through its pinned directory: %s", lp);
    if (pin >= 0)
        close(pin);
    tap_ok(drx_store_path_pin(s, "plain", lp, sizeof lp, &pin) == 0 && pin == -1,
           "an entry of the root needs no pin");

    fd = drx_store_entry_open(s, "plain", O_RDONLY, 0);
    tap_ok(fd >= 0, "open an entry beneath");
    if (fd >= 0)
        close(fd);
    tap_ok(drx_store_entry_chmod(s, "plain", 0640) == 0 && fstatat(s->root_fd, "plain", &st, 0) == 0 &&
               (st.st_mode & 07777) == 0640,
           "chmod an entry");
    tap_ok(drx_store_entry_utimens(s, "plain", tv) == 0 &&
               fstatat(s->root_fd, "plain", &st, 0) == 0 && st.st_mtim.tv_sec == 2000000,
           "utimens an entry");
    tap_ok(drx_store_entry_chown(s, "plain", getuid(), getgid()) == 0, "chown an entry");
    if (drx_store_entry_xattr(s, "plain", &set) == 0) {
        tap_ok(drx_store_entry_xattr(s, "plain", &get) == 2 && memcmp(value, "v1", 2) == 0,
               "xattr set and get");
    } else {
        tap_ok(1, "# skip: no user xattrs on this filesystem");
    }
    names_beneath(s);
    ifd = inotify_init1(IN_CLOEXEC);
    tap_ok(ifd >= 0 && drx_store_entry_watch(s, ifd, "dir", IN_CREATE | IN_ONLYDIR) >= 0,
           "watch a directory");
    tap_ok(drx_store_entry_watch(s, ifd, "out", IN_CREATE | IN_ONLYDIR) < 0,
           "no watch through a symlink");
    if (ifd >= 0)
        close(ifd);
}

/* drx_store_entry_guard: its opener picks the file the call acts on (for
 * drxfs, the one the caller reaches, opened as him), its check sees that
 * file, and both go after one call. */
static struct drx_store *guard_store;
static ino_t guard_seen;

static int open_other(const char *rel)
{
    (void)rel;
    return drx_store_entry_open(guard_store, "g_other", O_PATH | O_NOFOLLOW, 0);
}

static int open_link(const char *rel)
{
    (void)rel;
    return drx_store_entry_open(guard_store, "g_link", O_PATH | O_NOFOLLOW, 0);
}

static int open_none(const char *rel)
{
    (void)rel;
    return -ENOENT;
}

static int check_pass(int fd, const struct stat *st, const char *rel, void *arg)
{
    (void)fd;
    (void)rel;
    (void)arg;
    guard_seen = st->st_ino;
    return 0;
}

static int check_refuse(int fd, const struct stat *st, const char *rel, void *arg)
{
    (void)fd;
    (void)st;
    (void)rel;
    (void)arg;
    return -EPERM;
}

static mode_t mode_of(struct drx_store *s, const char *rel)
{
    struct stat st;
    return fstatat(s->root_fd, rel, &st, 0) == 0 ? st.st_mode & 07777 : 0;
}

static void test_guard(struct drx_store *s)
{
    struct stat other;

    guard_store = s;
    touch(root, "g_name", "name");
    touch(root, "g_other", "other");
    fchmodat(s->root_fd, "g_name", 0644, 0);
    fchmodat(s->root_fd, "g_other", 0644, 0);
    fstatat(s->root_fd, "g_other", &other, 0);
    drx_store_entry_guard(open_other, check_pass, NULL);
    tap_ok(drx_store_entry_chmod(s, "g_name", 0600) == 0 && mode_of(s, "g_other") == 0600 &&
               mode_of(s, "g_name") == 0644 && guard_seen == other.st_ino,
           "a guarded call acts on the file its opener opened, which the check saw");
    tap_ok(drx_store_entry_chmod(s, "g_name", 0640) == 0 && mode_of(s, "g_name") == 0640 &&
               mode_of(s, "g_other") == 0600,
           "the guard goes after one call");
    drx_store_entry_guard(open_other, check_refuse, NULL);
    tap_ok(drx_store_entry_chmod(s, "g_name", 0666) == -EPERM && mode_of(s, "g_other") == 0600 &&
               mode_of(s, "g_name") == 0640,
           "a check's error ends the call, nothing changed");
    drx_store_entry_guard(open_none, check_pass, NULL);
    tap_ok(drx_store_entry_chown(s, "g_name", getuid(), getgid()) == -ENOENT,
           "an opener's error ends the call");
    drx_store_entry_guard(open_other, check_pass, NULL);
    drx_store_entry_guard(NULL, NULL, NULL);
    tap_ok(drx_store_entry_chmod(s, "g_name", 0644) == 0 && mode_of(s, "g_name") == 0644 &&
               mode_of(s, "g_other") == 0600,
           "a guard cleared before its call opens by name");
    /* a symlink the opener opened: its own times, not the name's file's
     * (which drxfs's caller never reached: his symlink exchanged with
     * root's file behind the mount) */
    struct timespec tv[2] = {{31536000, 0}, {31536000, 0}};
    struct stat ln, nm;
    symlinkat("target", s->root_fd, "g_link");
    drx_store_entry_guard(open_link, check_pass, NULL);
    tap_ok(drx_store_entry_utimens(s, "g_name", tv) == 0 &&
               fstatat(s->root_fd, "g_link", &ln, AT_SYMLINK_NOFOLLOW) == 0 &&
               fstatat(s->root_fd, "g_name", &nm, 0) == 0 && ln.st_mtime == 31536000 &&
               nm.st_mtime != 31536000,
           "a guarded utimens of a symlink sets the symlink's times, not the name's file's");
}

int main(void)
{
    char cmd[PATH_MAX + 16];
    int fd;

    snprintf(base, sizeof base, "/tmp/drx-test-storeat-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    snprintf(root, sizeof root, "%s/store", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    mkdir(root, 0755);
    mkdir(outside, 0700);
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct drx_store *s = open_at(fd, root);
    tap_ok(s != NULL, "store opened by descriptor");
    if (s) {
        close(fd); /* the store keeps its own */
        fd = -1;
        test_messages(s);
        test_lookup(s);
        test_listing(s);
        test_long_names(s);
        test_entries(s);
        test_guard(s);
        drx_store_close(s);
    }
    if (fd >= 0)
        close(fd);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
