/* Stores: init, remembered settings, find, path resolution through a
 * (fake) mountinfo, internal names. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "as_user.h"
#include "drx/config.h"
#include "drx/store.h"
#include "tap.h"

static char base[64];

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        abort();
    fputs(text, fp);
    fclose(fp);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_abspath(void)
{
    char out[PATH_MAX], cwd[PATH_MAX];
    static const char *const cases[][2] = {
        {"/a/b/../c/./d/", "/a/c/d"},
        {"/../..", "/"},
        {"//a//b", "/a/b"},
        {"/a/b/..", "/a"},
        {"/", "/"},
        {"/a/./../b/c/../../d", "/d"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tap_ok(drx_store_abspath(cases[i][0], out, sizeof out) > 0 && strcmp(out, cases[i][1]) == 0,
               "abspath %s -> %s (%s)", cases[i][0], cases[i][1], out);
    if (!getcwd(cwd, sizeof cwd))
        abort();
    char want[PATH_MAX + 8];
    snprintf(want, sizeof want, "%s/x", strcmp(cwd, "/") ? cwd : "");
    tap_ok(drx_store_abspath("x/y/..", out, sizeof out) > 0 && strcmp(out, want) == 0,
           "relative path gets the cwd");
    tap_ok(drx_store_abspath("/abc", out, 3) == -ENAMETOOLONG, "too small a buffer");
}

static void test_resolve(void)
{
    char mi[128], out[PATH_MAX];

    snprintf(mi, sizeof mi, "%s/mountinfo", base);
    write_file(mi, "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
                   "80 22 0:50 / /mnt/drx rw,nosuid,nodev shared:40 - fuse.drxfs /data/store "
                   "rw,user_id=0\n"
                   "81 22 0:51 / /mnt/my\\040mount rw master:3 - fuse.drxfs /data/my\\040store rw\n"
                   "82 80 0:52 / /mnt/drx/inner rw - fuse.drxfs /data/inner rw\n"
                   "83 22 0:53 / /mnt/other rw - fuse.sshfs /data/ssh rw\n"
                   "84 22 0:54 / /mnt/rel rw - fuse.drxfs relative-source rw\n"
                   "garbage line without separator\n");
    static const char *const cases[][2] = {
        {"/mnt/drx/a/b", "/data/store/a/b"},
        {"/mnt/drx", "/data/store"},
        {"/mnt/drx/", "/data/store"},
        {"/mnt/drx/x/../y", "/data/store/y"},
        {"/mnt/drx2/a", "/mnt/drx2/a"},
        {"/mnt/drx/inner/q", "/data/inner/q"},
        {"/mnt/my mount/f", "/data/my store/f"},
        {"/mnt/other/f", "/mnt/other/f"},
        {"/mnt/rel/f", "/mnt/rel/f"},
        {"/elsewhere", "/elsewhere"},
        {"/mnt/drx/../drx/z", "/data/store/z"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tap_ok(drx_store_resolve_path_mi(mi, cases[i][0], out, sizeof out) > 0 &&
                   strcmp(out, cases[i][1]) == 0,
               "resolve %s -> %s (%s)", cases[i][0], cases[i][1], out);
    snprintf(out, sizeof out, "%s/none", base);
    tap_ok(drx_store_resolve_path_mi(out, "/mnt/drx/a", out, sizeof out) > 0 &&
               strcmp(out, "/mnt/drx/a") == 0,
           "unreadable mountinfo: path unchanged");
    tap_ok(drx_store_resolve_path("/definitely/not/mounted", out, sizeof out) > 0 &&
               strcmp(out, "/definitely/not/mounted") == 0,
           "the real /proc/self/mountinfo works");
}

/* A path under a read-only drxfs mount is refused for writing. */
static void test_resolve_ro(void)
{
    char mi[128], out[PATH_MAX];
    struct drx_err err = {{0}};

    snprintf(mi, sizeof mi, "%s/mountinfo-ro", base);
    write_file(mi, "90 22 0:60 / /mnt/ro ro,nosuid,nodev,relatime shared:1 - fuse.drxfs /data/ro "
                   "ro,user_id=0\n"
                   "91 22 0:61 / /mnt/bindro ro,relatime - fuse.drxfs /data/rw rw,user_id=0\n"
                   "92 22 0:61 / /mnt/rw rw,relatime - fuse.drxfs /data/rw rw,user_id=0\n"
                   "93 90 0:63 / /mnt/ro/inner rw - fuse.drxfs /data/inner rw\n"
                   "94 22 0:64 / /mnt/rosb rw - fuse.drxfs /data/rosb ro\n"
                   "95 22 0:65 / /mnt/ctx rw,rootcontext=x - fuse.drxfs /data/ctx rw,romode=1\n");
    static const struct {
        const char *path, *want; /* want NULL: EROFS */
    } cases[] = {
        {"/mnt/ro/a", NULL},           {"/mnt/ro", NULL},
        {"/mnt/bindro/a", NULL},       {"/mnt/rosb/a", NULL},
        {"/mnt/rw/a", "/data/rw/a"},   {"/mnt/ro/inner/a", "/data/inner/a"},
        {"/mnt/ctx/a", "/data/ctx/a"}, {"/data/ro/a", "/data/ro/a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = drx_store_resolve_path_for(mi, cases[i].path, DRX_STORE_FOR_WRITE, out, sizeof out,
                                            &err);
        if (cases[i].want)
            tap_ok(rc > 0 && strcmp(out, cases[i].want) == 0, "for writing: %s -> %s (%s)",
                   cases[i].path, cases[i].want, out);
        else
            tap_ok(rc == -EROFS && strstr(err.msg, "read-only drxfs mount") &&
                       strstr(err.msg, cases[i].path),
                   "for writing: %s is refused: %s", cases[i].path, err.msg);
    }
    tap_ok(drx_store_resolve_path_for(mi, "/mnt/ro/a", 0, out, sizeof out, &err) > 0 &&
               strcmp(out, "/data/ro/a") == 0,
           "for reading: /mnt/ro/a -> /data/ro/a");
    tap_ok(drx_store_resolve_path_mi(mi, "/mnt/bindro/a", out, sizeof out) > 0 &&
               strcmp(out, "/data/rw/a") == 0,
           "drx_store_resolve_path_mi reads (%s)", out);
}

/* drx fsck --repair refuses a mounted store: which stores are mounted. */
static void test_mounted(void)
{
    char mi[128], mnt[PATH_MAX], real[128], link[128], text[600];

    snprintf(mi, sizeof mi, "%s/mountinfo-m", base);
    write_file(mi, "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
                   "80 22 0:50 / /mnt/drx rw,nosuid,nodev shared:40 - fuse.drxfs /data/store "
                   "rw,user_id=0\n"
                   "81 22 0:51 / /mnt/my\\040mount rw master:3 - fuse.drxfs /data/my\\040store rw\n"
                   "83 22 0:53 / /mnt/other rw - fuse.sshfs /data/ssh rw\n"
                   "84 22 0:54 / /mnt/rel rw - fuse.drxfs relative-source rw\n"
                   "garbage line without separator\n");
    tap_ok(drx_store_mounted_mi(mi, "/data/store", mnt, sizeof mnt) == 1 &&
               strcmp(mnt, "/mnt/drx") == 0,
           "mounted: /data/store at %s", mnt);
    tap_ok(drx_store_mounted_mi(mi, "/data/x/../store/", NULL, 0) == 1,
           "mounted: the same path written differently");
    tap_ok(drx_store_mounted_mi(mi, "/data/my store", mnt, sizeof mnt) == 1 &&
               strcmp(mnt, "/mnt/my mount") == 0,
           "mounted: escapes decoded (%s)", mnt);
    tap_ok(drx_store_mounted_mi(mi, "/data/stor", mnt, sizeof mnt) == 0, "not mounted: a prefix");
    tap_ok(drx_store_mounted_mi(mi, "/data/ssh", mnt, sizeof mnt) == 0,
           "not mounted: another fstype");
    tap_ok(drx_store_mounted_mi(mi, "/data", mnt, sizeof mnt) == 0, "not mounted: a parent");
    /* drxfs refuses a mount point that is a drxfs mount already */
    tap_ok(drx_store_mount_at(mi, "/mnt/drx", mnt, sizeof mnt) == 1 &&
               strcmp(mnt, "/data/store") == 0,
           "/mnt/drx is a drxfs mount of %s", mnt);
    tap_ok(drx_store_mount_at(mi, "/mnt/my mount", mnt, sizeof mnt) == 1 &&
               strcmp(mnt, "/data/my store") == 0,
           "a mount point with escapes (%s)", mnt);
    tap_ok(drx_store_mount_at(mi, "/mnt/other", NULL, 0) == 0 &&
               drx_store_mount_at(mi, "/mnt", NULL, 0) == 0 &&
               drx_store_mount_at(mi, "/mnt/dr", NULL, 0) == 0,
           "not a drxfs mount point: another fstype, a parent, a prefix");
    snprintf(real, sizeof real, "%s/real-store", base);
    snprintf(link, sizeof link, "%s/link-store", base);
    mkdir(real, 0755);
    if (symlink(real, link) < 0)
        abort();
    snprintf(text, sizeof text, "90 22 0:60 / /mnt/l rw - fuse.drxfs %s rw\n", link);
    write_file(mi, text);
    tap_ok(drx_store_mounted_mi(mi, real, mnt, sizeof mnt) == 1 && strcmp(mnt, "/mnt/l") == 0,
           "mounted: through a symlink to it (same directory)");
    snprintf(mi, sizeof mi, "%s/none", base);
    tap_ok(drx_store_mounted_mi(mi, real, mnt, sizeof mnt) == 0,
           "unreadable mountinfo: not mounted");
    tap_ok(drx_store_mounted(base, mnt, sizeof mnt) == 0, "the real /proc/self/mountinfo works");
}

/* Long names (drx/store.h): a stem per name, recognised with its suffixes,
 * internal; names that only look alike are not stems. */
static void test_long_names(void)
{
    char a[NAME_MAX + 1], b[NAME_MAX + 1], sa[64], sb[64], sa2[64], name[80];
    size_t suffix = 99;

    memset(a, 'a', NAME_MAX);
    a[NAME_MAX] = '\0';
    memcpy(b, a, sizeof a);
    b[NAME_MAX - 1] = 'b';
    drx_store_long_stem(a, sa, sizeof sa);
    drx_store_long_stem(a, sa2, sizeof sa2);
    drx_store_long_stem(b, sb, sizeof sb);
    tap_ok(strcmp(sa, sa2) == 0 && strcmp(sa, sb) != 0, "stems: one per name (%s, %s)", sa, sb);
    tap_ok(strlen(sa) == DRX_STORE_LONG_STEM_LEN && strncmp(sa, DRX_STORE_LONG_PREFIX, 10) == 0,
           "a stem is .drx-long. and 32 hex digits");
    tap_ok(drx_store_name_is_long(sa, &suffix) && suffix == 0, "the stem is recognised");
    snprintf(name, sizeof name, "%s.nafs", sa);
    tap_ok(drx_store_name_is_long(name, &suffix) && suffix == 5, "and its metafile, suffix 5");
    tap_ok(drx_store_name_internal(sa, false) && drx_store_name_internal(name, false),
           "stems and their files are internal");
    tap_ok(!drx_store_name_is_long(".drx-long.0123", &suffix), "too short: not a stem");
    snprintf(name, sizeof name, "%s", sa);
    name[12] = 'G';
    tap_ok(!drx_store_name_is_long(name, &suffix), "not hex: not a stem");
    tap_ok(DRX_STORE_SHORT_MAX + strlen(".nafs") == NAME_MAX, "the longest short name has room");
}

static void test_names(void)
{
    tap_ok(drx_store_name_internal(".drx", true), ".drx at the root is internal");
    tap_ok(!drx_store_name_internal(".drx", false), ".drx below the root is not");
    tap_ok(drx_store_name_internal(".temp.xmd.Ab12Cd", false), "array temp file is internal");
    tap_ok(drx_store_name_internal(".my file.nafs.zZ09aa", false), "metafile temp is internal");
    tap_ok(drx_store_name_internal(".temp.xta.Ab12Cd", false), "chunk file copy temp is internal");
    tap_ok(!drx_store_name_internal("temp.xmd", false), "an array's .xmd is not internal");
    tap_ok(!drx_store_name_internal(".xmd.Ab12Cd", false), "no NAME: not a temp file");
    tap_ok(!drx_store_name_internal(".temp.xmd.Ab12C", false), "five X: not a temp file");
    tap_ok(!drx_store_name_internal(".temp.xmd.Ab12C!", false), "odd X: not a temp file");
    tap_ok(!drx_store_name_internal(".bashrc", false), "dot files are not internal");
    tap_ok(drx_store_name_is_temp(".a.nafs.XXXXXX"), "is_temp");
    test_long_names();
}

/* The paths the store tests share, all under base. */
static void store_paths(char *root, char *root2, char *d0, char *d1, char *inside)
{
    snprintf(root, 128, "%s/store", base);
    snprintf(root2, 128, "%s/store2", base);
    snprintf(d0, 160, "%s/disk0", base);
    snprintf(d1, 160, "%s/disk1/deep", base);
    snprintf(inside, 200, "%s/.drx/extra", root2);
}

static void test_init_again(void)
{
    char root[128], root2[128], d0[160], d1[160], inside[200], path[256];
    struct drx_config cfg;
    struct drx_err err = {{0}};

    store_paths(root, root2, d0, d1, inside);
    drx_config_defaults(&cfg, NULL);
    tap_ok(drx_store_init(root, &cfg, 0, &err) == 0, "init a new store (%s)", err.msg);
    snprintf(path, sizeof path, "%s/.drx/stripes/1", root);
    tap_ok(is_dir(path), "default stripe dirs made");
    snprintf(path, sizeof path, "%s/.drx/store.conf", root);
    tap_ok(access(path, R_OK) == 0, "store.conf written");
    tap_ok(drx_store_init(root, &cfg, 0, &err) == 1, "init again with the same settings: 1");
    cfg.stripe.count = 1;
    tap_ok(drx_store_init(root, &cfg, 0, &err) == -EEXIST && strstr(err.msg, "count=2"),
           "init with another count: EEXIST (%s)", err.msg);
    tap_ok(drx_store_init(root, &cfg, DRX_STORE_INIT_KEEP, &err) == 1,
           "init with KEEP on an existing store: 1");
    tap_ok(drx_store_init(root, &cfg, DRX_STORE_INIT_KEEP | DRX_STORE_INIT_EMPTY_ONLY, &err) == 1,
           "EMPTY_ONLY: an existing store (not empty) is fine");
    const char *other[] = {"/tmp/x0", "/tmp/x1"};
    drx_config_set_dirs(&cfg, other, 2);
    tap_ok(drx_store_init(root, &cfg, 0, &err) == -EEXIST && strstr(err.msg, "stripe dirs"),
           "init with other dirs: EEXIST (%s)", err.msg);
    drx_config_fini(&cfg);

}

static void test_init_empty_only(void)
{
    char path[256];
    struct drx_config cfg;
    struct drx_err err = {{0}};

    /* Only an empty directory becomes a store unasked (drxfs without -o
     * create); a missing one too. */
    char busy[128], empty[128], missing[128];
    snprintf(busy, sizeof busy, "%s/busy", base);
    snprintf(empty, sizeof empty, "%s/empty", base);
    snprintf(missing, sizeof missing, "%s/missing", base);
    mkdir(busy, 0755);
    mkdir(empty, 0755);
    snprintf(path, sizeof path, "%s/notes.txt", busy);
    write_file(path, "mine\n");
    drx_config_defaults(&cfg, NULL);
    snprintf(path, sizeof path, "%s/.drx", busy);
    tap_ok(drx_store_init(busy, &cfg, DRX_STORE_INIT_EMPTY_ONLY, &err) == -ENOTEMPTY &&
               strstr(err.msg, "not a drx store") && !is_dir(path),
           "EMPTY_ONLY: a directory of files is refused, no .drx/ made (%s)", err.msg);
    tap_ok(drx_store_init(busy, &cfg, 0, &err) == 0 && is_dir(path),
           "without it (drx init, -o create) it becomes a store");
    tap_ok(drx_store_init(empty, &cfg, DRX_STORE_INIT_EMPTY_ONLY, &err) == 0,
           "EMPTY_ONLY: an empty directory becomes a store");
    tap_ok(drx_store_init(missing, &cfg, DRX_STORE_INIT_EMPTY_ONLY, &err) == 0,
           "EMPTY_ONLY: a missing one is made");
    drx_config_fini(&cfg);

}

static void test_init_dirs(void)
{
    char root[128], root2[128], d0[160], d1[160], inside[200];
    struct drx_config cfg, loaded;
    struct drx_err err = {{0}};

    store_paths(root, root2, d0, d1, inside);
    /* A store with its own dirs; store.conf keeps them, relative inside. */
    const char *dirs[] = {d0, d1, inside};
    drx_config_defaults(&cfg, NULL);
    drx_config_set_dirs(&cfg, dirs, 3);
    cfg.stripe.count = 3;
    cfg.stripe.extent = 1000;
    tap_ok(drx_store_init(root2, &cfg, 0, &err) == 0 && is_dir(d1) && is_dir(inside),
           "init with three dirs makes them (%s)", err.msg);
    tap_ok(drx_store_load_config(root2, NULL, &loaded, &err) == 0 && loaded.stripe.ndirs == 3 &&
               strcmp(loaded.stripe.dirs[0], d0) == 0 &&
               strcmp(loaded.stripe.dirs[2], ".drx/extra") == 0 && loaded.stripe.count == 3 &&
               loaded.stripe.extent == 1000,
           "store.conf remembers dirs (inside ones relative), count and extent");
    drx_config_fini(&loaded);
    drx_config_fini(&cfg);

    /* Stripe dirs elsewhere inside the store are refused, before anything
     * is created. */
    char root3[128], bad[200];
    snprintf(root3, sizeof root3, "%s/store3", base);
    snprintf(bad, sizeof bad, "%s/visible", root3);
    const char *bdirs[] = {bad};
    drx_config_defaults(&cfg, NULL);
    drx_config_set_dirs(&cfg, bdirs, 1);
    cfg.stripe.count = 1;
    tap_ok(drx_store_init(root3, &cfg, 0, &err) == -EINVAL && access(root3, F_OK) != 0,
           "stripe dir inside the store outside .drx: refused, nothing made (%s)", err.msg);
    drx_config_fini(&cfg);

}

static void test_open_layers(void)
{
    char root[128], root2[128], d0[160], d1[160], inside[200];
    struct drx_config cfg;
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};

    store_paths(root, root2, d0, d1, inside);
    /* Config file overrides store.conf; open makes dirs absolute. */
    char conf[160];
    snprintf(conf, sizeof conf, "%s/over.conf", base);
    write_file(conf, "stripe = { count = 1; extent = 7; };\ncache = { bytes = 5; };\n");
    tap_ok(drx_store_open(root2, conf, &s, &err) == 0, "open with a config file (%s)", err.msg);
    if (s) {
        tap_ok(s->cfg.stripe.count == 1 && s->cfg.stripe.extent == 7 && s->cfg.cache_bytes == 5 &&
                   s->cfg.stripe.ndirs == 3,
               "defaults < store.conf < config file");
        tap_ok(strcmp(s->cfg.stripe.dirs[2], inside) == 0 && s->dir_fds[0] >= 0 &&
                   s->dir_fds[2] >= 0 && strcmp(s->root, root2) == 0,
               "dirs absolute and open");
        drx_store_close(s);
    }
    write_file(conf, "stripe = {\n  count = 9;\n};\n");
    tap_ok(drx_store_open(root2, conf, &s, &err) == -EINVAL && strstr(err.msg, "over.conf:2:"),
           "a bad config file is reported with its line (%s)", err.msg);

    /* A bad store.conf is reported with its line too. */
    char root4[128], sc[200];
    snprintf(root4, sizeof root4, "%s/store4", base);
    drx_config_defaults(&cfg, NULL);
    drx_store_init(root4, &cfg, 0, NULL);
    drx_config_fini(&cfg);
    snprintf(sc, sizeof sc, "%s/.drx/store.conf", root4);
    write_file(sc, "version = 1;\nstripe = { count = 1; };\ncache = { bytes = 1; };\n");
    tap_ok(drx_store_open(root4, NULL, &s, &err) == -EINVAL && strstr(err.msg, "store.conf:3:") &&
               strstr(err.msg, "unknown key cache"),
           "store.conf accepts only version and stripe (%s)", err.msg);
    write_file(sc, "version = 2;\n");
    tap_ok(drx_store_open(root4, NULL, &s, &err) == -EINVAL && strstr(err.msg, "version"),
           "unknown store.conf version refused (%s)", err.msg);

    /* A missing external stripe dir does not stop the store. */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d0);
    if (system(cmd) != 0)
        abort();
    tap_ok(drx_store_open(root2, NULL, &s, &err) == 0 && s->dir_fds[0] == -1 && s->dir_fds[1] >= 0,
           "missing stripe dir: fd -1, store opens");
    tap_ok(!is_dir(d0), "and it is not silently recreated");
    drx_store_close(s);
    drx_store_close(NULL);

}

static void test_find_classify(void)
{
    char root[128], root2[128], d0[160], d1[160], inside[200], path[256], found[PATH_MAX],
        sp[PATH_MAX], rel[PATH_MAX], cmd[300];
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};

    store_paths(root, root2, d0, d1, inside);
    /* Not a store. */
    tap_ok(drx_store_open(base, NULL, &s, &err) == -ENOENT && strstr(err.msg, "not a drx store"),
           "open of a plain directory: %s", err.msg);

    /* find and locate. */
    snprintf(path, sizeof path, "%s/a/b/c", root);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    if (system(cmd) != 0)
        abort();
    tap_ok(drx_store_find(path, found, sizeof found) > 0 && strcmp(found, root) == 0,
           "find from a deep directory");
    snprintf(path, sizeof path, "%s/a/b/not-yet-there.nafs", root);
    tap_ok(drx_store_find(path, found, sizeof found) > 0 && strcmp(found, root) == 0,
           "find from a name that does not exist yet");
    tap_ok(drx_store_find(root, found, sizeof found) > 0 && strcmp(found, root) == 0,
           "find from the root itself");
    tap_ok(drx_store_find(base, found, sizeof found) == -ENOENT, "find outside any store: ENOENT");
    snprintf(path, sizeof path, "%s/a/./b/../b/arr", root);
    tap_ok(drx_store_locate(path, found, sp, rel, &err) == 0 && strcmp(found, root) == 0 &&
               strcmp(rel, "a/b/arr") == 0,
           "locate: root and relative name (%s)", rel);
    tap_ok(drx_store_locate(base, found, sp, rel, &err) == -ENOENT &&
               strstr(err.msg, "not inside a drx store"),
           "locate outside: %s", err.msg);

    /* classify */
    snprintf(path, sizeof path, "%s/arr.xmd", root);
    write_file(path, "");
    snprintf(path, sizeof path, "%s/sf.nafs", root);
    write_file(path, "");
    snprintf(path, sizeof path, "%s/plain", root);
    write_file(path, "");
    snprintf(path, sizeof path, "%s/arr", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_ARRAY, "classify array");
    snprintf(path, sizeof path, "%s/sf", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_STRIPED, "classify striped file");
    snprintf(path, sizeof path, "%s/plain", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_PLAIN, "classify plain file");
    snprintf(path, sizeof path, "%s/a", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_DIRECTORY, "classify directory");
    snprintf(path, sizeof path, "%s/nothing", root);
    tap_ok(drx_store_classify(path) == DRX_STORE_NONE, "classify nothing");}

static void test_init_open(void)
{
    test_init_again();
    test_init_empty_only();
    test_init_dirs();
    test_open_layers();
    test_find_classify();
}

/* The activity lock: shared holders coexist, exclusive fails at once while
 * one is held and works once all are gone. */
static void test_lock(void)
{
    char root[160];
    struct drx_config cfg;
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};

    snprintf(root, sizeof root, "%s/locked", base);
    drx_config_defaults(&cfg, NULL);
    tap_ok(drx_store_init(root, &cfg, 0, &err) >= 0 && drx_store_open(root, NULL, &s, &err) == 0,
           "a store to lock (%s)", err.msg);
    drx_config_fini(&cfg);
    if (!s)
        return;
    int a = drx_store_lock(s, false), b = drx_store_lock(s, false);
    tap_ok(a >= 0 && b >= 0, "two shared holders");
    tap_ok(drx_store_lock(s, true) == -EWOULDBLOCK, "exclusive fails at once while they hold it");
    close(a);
    tap_ok(drx_store_lock(s, true) == -EWOULDBLOCK, "and while one still does");
    close(b);
    int x = drx_store_lock(s, true);
    tap_ok(x >= 0, "exclusive once they are gone");
    tap_ok(x >= 0 && drx_store_lock(s, true) == -EWOULDBLOCK, "a second exclusive fails");
    if (x >= 0)
        close(x);
    drx_store_close(s);
}

static int init_as_nobody(void *root)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    int rc;

    umask(077); /* store.conf is 0644 whatever the umask */
    drx_config_defaults(&cfg, NULL);
    rc = drx_store_init(root, &cfg, 0, &err);
    if (rc)
        fprintf(stderr, "# init as nobody: %s\n", err.msg);
    drx_config_fini(&cfg);
    return rc ? 1 : 0;
}

/* store.conf is written by drx_replace_write like every store file: mode
 * 0644 (it is read by every user of the store), owned by who made the
 * store, no temporary left in .drx/. */
static void test_store_conf_writer(void)
{
    char dir[128], root[160], conf[200], cmd[300];
    struct stat st;

    snprintf(dir, sizeof dir, "%s/open", base);
    snprintf(root, sizeof root, "%s/bynobody", dir);
    snprintf(conf, sizeof conf, "%s/.drx/store.conf", root);
    mkdir(dir, 0777);
    chmod(dir, 0777);
    chmod(base, 0711);
    int rc = run_as(AS_NOBODY, init_as_nobody, root);
    if (rc == -2) {
        tap_ok(1, "# SKIP not root: cannot init as another user");
        return;
    }
    memset(&st, 0, sizeof st);
    stat(conf, &st);
    tap_ok(rc == 0 && st.st_uid == NOBODY_ID && (st.st_mode & 07777) == 0644,
           "store.conf made by nobody under umask 077: theirs, 0644 (%d, %u %o)", rc,
           (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    snprintf(cmd, sizeof cmd, "ls -A '%s/.drx' | grep -q '^\\.store\\.conf\\.'", root);
    tap_ok(system(cmd) != 0, "no temporary left in .drx/");
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/drx-test-store-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    test_abspath();
    test_resolve();
    test_resolve_ro();
    test_mounted();
    test_names();
    test_init_open();
    test_lock();
    test_store_conf_writer();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
