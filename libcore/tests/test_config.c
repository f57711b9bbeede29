/* Configuration: defaults, overlays, and every error class with its line. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/config.h"
#include "drx/store.h"
#include "tap.h"

static char dir[64];

static const char *write_conf(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    if (!fp)
        abort();
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* The value of hint key in cfg, or NULL. */
static const char *hint(const struct drx_config *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->mpiio.nhints; i++) {
        if (strcmp(cfg->mpiio.hints[i].key, key) == 0)
            return cfg->mpiio.hints[i].value;
    }
    return NULL;
}

static bool hint_is(const struct drx_config *cfg, const char *key, const char *value)
{
    const char *v = hint(cfg, key);
    return v && strcmp(v, value) == 0;
}

/* Loads text over the defaults; expects failure with "FILE:LINE:" and a
 * reason containing `why`, and the config unchanged. */
static void expect_error(const char *tag, const char *text, int line, const char *why)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    char want[300];

    drx_config_defaults(&cfg, NULL);
    const char *path = write_conf(tag, text);
    int rc = drx_config_load_file(&cfg, path, &err);
    snprintf(want, sizeof want, "%s:%d: ", path, line);
    tap_ok(rc == -EINVAL && strncmp(err.msg, want, strlen(want)) == 0 && strstr(err.msg, why) &&
               cfg.stripe.count == 2 && cfg.stripe.extent == 65536 && cfg.stripe.ndirs == 2 &&
               cfg.cache_bytes == DRX_DEFAULT_CACHE_BYTES &&
               cfg.mpiio.buffer == DRX_DEFAULT_MPIIO_BUFFER && cfg.mpiio.nhints == 0,
           "%s: line %d, \"%s\"", tag, line, err.msg);
    drx_config_fini(&cfg);
}

static void on_alarm(int sig)
{
    (void)sig; /* only interrupts a blocked open */
}

/* drx_config_load_file, or drx_store_load_config when root is given, cut
 * off after 5 s: a regression that blocks on a FIFO fails instead of
 * hanging the suite. */
static int load_guarded(const char *root, const char *path, struct drx_err *err)
{
    struct sigaction sa = {.sa_handler = on_alarm}, old;
    struct drx_config cfg;
    int rc;

    drx_config_defaults(&cfg, NULL);
    sigaction(SIGALRM, &sa, &old); /* no SA_RESTART: open() gets EINTR */
    alarm(5);
    if (root) {
        drx_config_fini(&cfg);
        rc = drx_store_load_config(root, path, &cfg, err);
    } else {
        rc = drx_config_load_file(&cfg, path, err);
    }
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    /* load_file leaves cfg as it was on failure; store_load_config frees it */
    if (rc == 0 || !root)
        drx_config_fini(&cfg);
    return rc;
}

/* No configuration file makes drx open another file: @include lines are
 * refused (libconfig would follow them), a FIFO is refused without
 * blocking, and store.conf is never a symlink.  The user's own --config
 * may be a symlink (they named it). */
static void includes_and_kinds(void)
{
    struct drx_err err = {{0}};
    char fifo[128], link[128], root[128], sc[160], scdir[140];

    expect_error("include", "log = { level = \"info\"; };\n  @include \"/etc/hostname\"\n", 2,
                 "@include is not allowed in a configuration file");
    write_conf("comment.conf", "# not a directive: @include \"/etc/hostname\"\n"
                               "log = { level = \"info\"; };\n");
    snprintf(link, sizeof link, "%s/comment.conf", dir);
    tap_ok(load_guarded(NULL, link, &err) == 0, "@include inside a comment line is text (%s)",
           err.msg);
    snprintf(fifo, sizeof fifo, "%s/fifo.conf", dir);
    mkfifo(fifo, 0600);
    tap_ok(load_guarded(NULL, fifo, &err) < 0 && strstr(err.msg, "not a regular file"),
           "a FIFO as --config is refused without blocking (%s)", err.msg);
    snprintf(link, sizeof link, "%s/link.conf", dir);
    tap_ok(symlink("comment.conf", link) == 0 && load_guarded(NULL, link, &err) == 0,
           "the user's own --config may be a symlink (%s)", err.msg);

    /* store.conf: a store file, never followed anywhere */
    snprintf(root, sizeof root, "%s/incstore", dir);
    snprintf(scdir, sizeof scdir, "%s/.drx", root);
    snprintf(sc, sizeof sc, "%s/store.conf", scdir);
    mkdir(root, 0755);
    mkdir(scdir, 0755);
    FILE *fp = fopen(sc, "w");
    if (!fp)
        abort();
    fprintf(fp, "version = 1;\n@include \"%s\"\n", fifo);
    fclose(fp);
    tap_ok(load_guarded(root, NULL, &err) == -EINVAL &&
               strstr(err.msg, "store.conf:2: @include is not allowed in a store file"),
           "store.conf with @include of a FIFO: refused at once (%s)", err.msg);
    unlink(sc);
    tap_ok(symlink("../../link.conf", sc) == 0 && load_guarded(root, NULL, &err) == -ELOOP,
           "store.conf as a symlink is refused (%s)", err.msg);
    unlink(sc);
    tap_ok(mkfifo(sc, 0600) == 0 && load_guarded(root, NULL, &err) < 0 &&
               strstr(err.msg, "not a regular file"),
           "store.conf as a FIFO is refused without blocking (%s)", err.msg);
    unlink(sc);
}

static void test_defaults(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    /* Defaults. */
    tap_ok(drx_config_defaults(&cfg, "/s") == 0, "defaults");
    tap_ok(cfg.stripe.ndirs == 2 && strcmp(cfg.stripe.dirs[0], "/s/.drx/stripes/0") == 0 &&
               strcmp(cfg.stripe.dirs[1], "/s/.drx/stripes/1") == 0,
           "default stripe dirs under STORE/.drx/stripes");
    tap_ok(cfg.stripe.count == 2 && cfg.stripe.extent == 65536 &&
               cfg.cache_bytes == ((uint64_t)256 << 20) && !cfg.prefetch.enabled &&
               cfg.prefetch.min_bytes == ((uint64_t)64 << 20) && cfg.prefetch.ranks == 2 &&
               strcmp(cfg.prefetch.mpiexec, "mpiexec") == 0 && cfg.log_level == DRX_LOG_INFO &&
               cfg.mpiio.buffer == ((uint64_t)64 << 20) && cfg.mpiio.nhints == 0 &&
               !cfg.mpiio.hints,
           "default values of SPEC section 8 (mpiio: 64 MiB buffer, no hints)");
    tap_ok(drx_config_validate(&cfg, NULL) == 0, "defaults are valid");
    {
        /* libconfig's scanner would exit the process reading a directory */
        tap_ok(drx_config_load_file(&cfg, dir, &err) == -EISDIR && strstr(err.msg, dir) &&
                   strstr(err.msg, "Is a directory") && cfg.stripe.count == 2,
               "a directory as the file: EISDIR, config unchanged (%s)", err.msg);
    }
    drx_config_fini(&cfg);
    drx_config_defaults(&cfg, NULL);
    tap_ok(strcmp(cfg.stripe.dirs[1], ".drx/stripes/1") == 0, "without a root: relative dirs");
    drx_config_fini(&cfg);
}

static void test_full(void)
{
    struct drx_config cfg;
    struct drx_config copy;
    struct drx_err err = {{0}};
    drx_config_defaults(&cfg, NULL);
    /* A full file overlays everything. */
    const char *full =
        write_conf("full.conf", "# comment\n"
                                "stripe = {\n"
                                "  dirs = [ \"/d0\", \"/d1\", \"/d2\" ];\n"
                                "  count = 3;\n"
                                "  extent = 4096;\n"
                                "};\n"
                                "cache = { bytes = 8589934592; };\n"
                                "prefetch = { enabled = true; min_bytes = 1048576L; ranks = 4;"
                                " mpiexec = \"/usr/bin/mpiexec.hydra\"; };\n"
                                "log = { level = \"debug\"; };\n"
                                "mpiio = {\n"
                                "  buffer = 8388608;\n"
                                "  hints = {\n"
                                "    romio_cb_write = \"enable\";\n"
                                "    cb_buffer_size = 8589934592;\n"
                                "    ind_rd_buffer_size = 4194304L;\n"
                                "    romio_no_indep_rw = true;\n"
                                "    romio_ds_read = false;\n"
                                "    cb_nodes = 010;\n"
                                "    striping_unit = 0x10000;\n"
                                "    CB_Config_List2 = \"*:1\";\n"
                                "  };\n"
                                "};\n");
    tap_ok(drx_config_load_file(&cfg, full, &err) == 0, "full file loads (%s)", err.msg);
    tap_ok(cfg.stripe.ndirs == 3 && strcmp(cfg.stripe.dirs[2], "/d2") == 0 &&
               cfg.stripe.count == 3 && cfg.stripe.extent == 4096,
           "stripe overlay");
    TAP_CHECK_EQ_U64(cfg.cache_bytes, 8589934592ULL, "a large integer without L is not wrapped");
    tap_ok(cfg.prefetch.enabled && cfg.prefetch.min_bytes == 1048576 && cfg.prefetch.ranks == 4 &&
               strcmp(cfg.prefetch.mpiexec, "/usr/bin/mpiexec.hydra") == 0 &&
               cfg.log_level == DRX_LOG_DEBUG,
           "prefetch and log overlay");
    TAP_CHECK_EQ_U64(cfg.mpiio.buffer, 8388608, "mpiio.buffer");
    tap_ok(cfg.mpiio.nhints == 8 && strcmp(cfg.mpiio.hints[0].key, "romio_cb_write") == 0 &&
               strcmp(cfg.mpiio.hints[7].key, "CB_Config_List2") == 0,
           "mpiio.hints: 8 hints in file order");
    tap_ok(hint_is(&cfg, "romio_cb_write", "enable") && hint_is(&cfg, "CB_Config_List2", "*:1"),
           "string hints kept as written");
    tap_ok(hint_is(&cfg, "cb_buffer_size", "8589934592") &&
               hint_is(&cfg, "ind_rd_buffer_size", "4194304"),
           "integer hints as decimal text, large ones without L not wrapped (%s)",
           hint(&cfg, "cb_buffer_size"));
    tap_ok(hint_is(&cfg, "cb_nodes", "10") && hint_is(&cfg, "striping_unit", "65536"),
           "010 is ten as libconfig reads it; 0x10000 is 65536 (%s, %s)", hint(&cfg, "cb_nodes"),
           hint(&cfg, "striping_unit"));
    tap_ok(hint_is(&cfg, "romio_no_indep_rw", "true") && hint_is(&cfg, "romio_ds_read", "false"),
           "boolean hints as \"true\" / \"false\"");
    tap_ok(drx_config_copy(&copy, &cfg) == 0 && copy.stripe.dirs[0] != cfg.stripe.dirs[0] &&
               strcmp(copy.stripe.dirs[0], "/d0") == 0 && copy.mpiio.nhints == 8 &&
               copy.mpiio.hints != cfg.mpiio.hints &&
               copy.mpiio.hints[3].key != cfg.mpiio.hints[3].key &&
               copy.mpiio.hints[3].value != cfg.mpiio.hints[3].value &&
               hint_is(&copy, "romio_no_indep_rw", "true") && copy.mpiio.buffer == 8388608,
           "deep copy");
    drx_config_fini(&copy);
    drx_config_fini(&cfg);
}

static void test_overlays(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    char full[300];

    snprintf(full, sizeof full, "%s/full.conf", dir);
    drx_config_defaults(&cfg, NULL);
    if (drx_config_load_file(&cfg, full, &err) < 0)
        abort();
    /* A partial file keeps the rest. */
    const char *part = write_conf("part.conf", "stripe = { extent = 100; };\n");
    tap_ok(drx_config_load_file(&cfg, part, &err) == 0 && cfg.stripe.extent == 100 &&
               cfg.stripe.count == 3 && cfg.stripe.ndirs == 3 && cfg.cache_bytes == 8589934592ULL,
           "partial file overlays only its keys");

    /* Hints overlay key by key: replace a value, add a key, keep the rest. */
    const char *more = write_conf("more.conf", "mpiio = {\n"
                                               "  hints = {\n"
                                               "    romio_cb_write = \"disable\";\n"
                                               "    romio_ds_write = \"automatic\";\n"
                                               "  };\n"
                                               "};\n");
    tap_ok(drx_config_load_file(&cfg, more, &err) == 0 && cfg.mpiio.nhints == 9 &&
               hint_is(&cfg, "romio_cb_write", "disable") &&
               strcmp(cfg.mpiio.hints[0].key, "romio_cb_write") == 0 &&
               strcmp(cfg.mpiio.hints[8].key, "romio_ds_write") == 0 &&
               hint_is(&cfg, "cb_nodes", "10") && cfg.mpiio.buffer == 8388608,
           "a second file replaces one hint, adds one, keeps the others and the buffer");
    drx_config_fini(&cfg);
    drx_config_fini(&cfg); /* twice is safe */
}

static void test_mpiio_section(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    /* The mpiio section alone; buffer bounds are inclusive. */
    drx_config_defaults(&cfg, NULL);
    const char *lo = write_conf("lo.conf", "mpiio = { buffer = 1048576; hints = { }; };\n");
    tap_ok(drx_config_load_file(&cfg, lo, &err) == 0 && cfg.mpiio.buffer == 1048576 &&
               cfg.mpiio.nhints == 0,
           "mpiio.buffer = 1 MiB, empty hints group (%s)", err.msg);
    const char *hi = write_conf("hi.conf", "mpiio = { buffer = 1073741824; };\n");
    tap_ok(drx_config_load_file(&cfg, hi, &err) == 0 && cfg.mpiio.buffer == 1073741824,
           "mpiio.buffer = 1 GiB (%s)", err.msg);
    drx_config_fini(&cfg);
}

static void test_set_hint(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    /* drx_config_set_hint() */
    drx_config_defaults(&cfg, NULL);
    char key[DRX_MAX_HINT_KEY + 2], val[DRX_MAX_HINT_VALUE + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    memset(val, 'v', sizeof val - 1);
    val[sizeof val - 1] = '\0';
    tap_ok(drx_config_set_hint(&cfg, "", "x") == -EINVAL &&
               drx_config_set_hint(&cfg, "a-b", "x") == -EINVAL &&
               drx_config_set_hint(&cfg, "a b", "x") == -EINVAL &&
               drx_config_set_hint(&cfg, "a=b", "x") == -EINVAL &&
               drx_config_set_hint(&cfg, key, "x") == -EINVAL &&
               drx_config_set_hint(&cfg, "ok", "") == -EINVAL &&
               drx_config_set_hint(&cfg, "ok", val) == -EINVAL && cfg.mpiio.nhints == 0,
           "set_hint refuses bad names, empty and overlong values");
    key[DRX_MAX_HINT_KEY] = '\0';
    val[DRX_MAX_HINT_VALUE] = '\0';
    tap_ok(drx_config_set_hint(&cfg, key, val) == 0 && cfg.mpiio.nhints == 1,
           "set_hint takes a %d-character name and a %d-character value", DRX_MAX_HINT_KEY,
           DRX_MAX_HINT_VALUE);
    int rc = 0;
    for (int i = 1; i < DRX_MAX_MPIIO_HINTS && rc == 0; i++) {
        char k[16];
        snprintf(k, sizeof k, "h%d", i);
        rc = drx_config_set_hint(&cfg, k, "1");
    }
    tap_ok(rc == 0 && cfg.mpiio.nhints == DRX_MAX_MPIIO_HINTS &&
               drx_config_set_hint(&cfg, "one_more", "1") == -E2BIG &&
               drx_config_set_hint(&cfg, "h5", "2") == 0 && hint_is(&cfg, "h5", "2") &&
               cfg.mpiio.nhints == DRX_MAX_MPIIO_HINTS,
           "set_hint: %d hints at most; replacing one still works when full", DRX_MAX_MPIIO_HINTS);
    tap_ok(drx_config_validate(&cfg, &err) == 0, "validate accepts a full hint table (%s)",
           err.msg);
    drx_config_fini(&cfg);
}

static void test_errors(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    /* Every class of error, with its line. */
    expect_error("syntax", "stripe = {\n  count = 2;\n  extent = = 4;\n};\n", 3, "syntax error");
    expect_error("unknown_top", "\n\nfoo = 1;\n", 3, "unknown key foo");
    expect_error("unknown_sub", "stripe = {\n  count = 1;\n  colour = 2;\n};\n", 3,
                 "unknown key stripe.colour");
    expect_error("unknown_cache", "cache = { bytes = 1; size = 2; };\n", 1,
                 "unknown key cache.size");
    expect_error("group_type", "stripe = 5;\n", 1, "stripe: wrong type");
    expect_error("count_type", "stripe = {\n  count = \"two\";\n};\n", 2,
                 "stripe.count: wrong type");
    expect_error("count_float", "stripe = {\n  count = 2.5;\n};\n", 2, "stripe.count: wrong type");
    expect_error("count_zero", "stripe = {\n\n  count = 0;\n};\n", 3, "stripe.count: 0");
    expect_error("count_gt_inherited", "stripe = {\n  count = 3;\n};\n", 2,
                 "stripe.count: 3 is not in 1..2");
    expect_error("dirs_shrink", "stripe = {\n  dirs = [ \"/only\" ];\n};\n", 2,
                 "stripe.count: 2 is not in 1..1");
    expect_error("dirs_empty", "stripe = {\n  dirs = [ ];\n};\n", 2, "stripe.dirs: empty");
    expect_error("dirs_type", "stripe = {\n  dirs = \"/d0\";\n};\n", 2, "stripe.dirs: wrong type");
    expect_error("dirs_elem", "stripe = {\n  dirs = ( \"/d0\",\n   5 );\n};\n", 3,
                 "stripe.dirs[1]: wrong type");
    expect_error("dirs_dup", "stripe = {\n  dirs = [ \"/a\", \"/a\" ];\n};\n", 2, "listed twice");
    expect_error("dirs_blank", "stripe = {\n  dirs = [ \"/a\", \"\" ];\n};\n", 2, "empty");
    expect_error("extent_zero", "stripe = { extent = 0; };\n", 1, "stripe.extent: 0");
    expect_error("extent_huge", "stripe = {\n extent = 4294967296L;\n};\n", 2, "above the limit");
    expect_error("extent_neg", "stripe = {\n extent = -4;\n};\n", 2, "negative");
    expect_error("cache_neg", "cache = {\n  bytes = -1;\n};\n", 2, "cache.bytes: -1 is negative");
    expect_error("cache_overflow", "cache = {\n  bytes = 99999999999999999999;\n};\n", 2,
                 "above the limit");
    expect_error("enabled_type", "prefetch = {\n  enabled = 1;\n};\n", 2,
                 "prefetch.enabled: wrong type");
    expect_error("ranks_zero", "prefetch = {\n  ranks = 0;\n};\n", 2, "prefetch.ranks: 0");
    expect_error("mpiexec_empty", "prefetch = {\n  mpiexec = \"\";\n};\n", 2, "empty program");
    expect_error("level_bad", "log = {\n  level = \"loud\";\n};\n", 2, "\"loud\" is not one of");
    expect_error("level_type", "log = {\n  level = 3;\n};\n", 2, "log.level: wrong type");
    expect_error("version_in_config", "version = 1;\n", 1, "unknown key version");
    expect_error("unknown_top_lists_mpiio", "mpiio = { };\nmpi = { };\n", 2,
                 "(known: stripe, cache, prefetch, log, mpiio)");
    expect_error("mpiio_type", "\nmpiio = 5;\n", 2, "mpiio: wrong type, expected a group");
    expect_error("mpiio_unknown", "mpiio = {\n  buffer = 2097152;\n  hint = { };\n};\n", 3,
                 "unknown key mpiio.hint (known: buffer, hints)");
    expect_error("buffer_type", "mpiio = {\n  buffer = \"64M\";\n};\n", 2,
                 "mpiio.buffer: wrong type, expected an integer");
    expect_error("buffer_small", "mpiio = {\n\n  buffer = 65536;\n};\n", 3,
                 "mpiio.buffer: 65536 is below the minimum 1048576");
    expect_error("buffer_zero", "mpiio = { buffer = 0; };\n", 1, "below the minimum");
    expect_error("buffer_neg", "mpiio = {\n  buffer = -1;\n};\n", 2,
                 "mpiio.buffer: -1 is negative");
    expect_error("buffer_huge", "mpiio = {\n  buffer = 17179869184;\n};\n", 2,
                 "mpiio.buffer: 17179869184 is above the limit 1073741824");
    expect_error("hints_list", "mpiio = {\n  hints = ( \"romio_cb_write\" );\n};\n", 2,
                 "mpiio.hints: wrong type, expected a group");
    expect_error("hints_string", "mpiio = {\n  hints = \"romio_cb_write=enable\";\n};\n", 2,
                 "mpiio.hints: wrong type");
    expect_error("hint_float", "mpiio = { hints = {\n  a = \"x\";\n  cb_nodes = 1.5;\n}; };\n", 3,
                 "mpiio.hints.cb_nodes: wrong type, expected a string");
    expect_error("hint_group", "mpiio = { hints = {\n  cb = { nodes = 1; };\n}; };\n", 2,
                 "mpiio.hints.cb: wrong type");
    expect_error("hint_array", "mpiio = { hints = {\n\n  cb_nodes = [ 1, 2 ];\n}; };\n", 3,
                 "mpiio.hints.cb_nodes: wrong type");
    expect_error("hint_name", "mpiio = { hints = {\n  romio-cb-write = \"enable\";\n}; };\n", 2,
                 "mpiio.hints.romio-cb-write: hint name may hold only letters, digits and _");
    expect_error("hint_star", "mpiio = { hints = {\n  cb* = \"enable\";\n}; };\n", 2,
                 "hint name may hold only");
    expect_error("hint_empty",
                 "mpiio = { hints = {\n  a = \"1\";\n  romio_cb_write = \"\";\n}; };\n", 3,
                 "mpiio.hints.romio_cb_write: empty value");
    {
        /* a name one too long; a value one too long */
        char text[2300], name[DRX_MAX_HINT_KEY + 2], value[DRX_MAX_HINT_VALUE + 2];
        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = '\0';
        memset(value, 'v', sizeof value - 1);
        value[sizeof value - 1] = '\0';
        snprintf(text, sizeof text, "mpiio = {\n hints = {\n  %s = \"x\";\n };\n};\n", name);
        expect_error("hint_name_long", text, 3, "nnn...: hint name longer than 127 characters");
        snprintf(text, sizeof text, "mpiio = {\n hints = {\n  x = 1;\n  y = \"%s\";\n };\n};\n",
                 value);
        expect_error("hint_value_long", text, 4,
                     "mpiio.hints.y: value longer than 1023 characters");
    }
    {
        /* 65 hints: the 65th line is blamed */
        char text[4096];
        int n = snprintf(text, sizeof text, "mpiio = {\n  hints = {\n");
        for (int i = 0; i <= DRX_MAX_MPIIO_HINTS; i++)
            n += snprintf(text + n, sizeof text - (size_t)n, "    h%d = %d;\n", i, i);
        snprintf(text + n, sizeof text - (size_t)n, "  };\n};\n");
        expect_error("hints_too_many", text, 3 + DRX_MAX_MPIIO_HINTS,
                     "mpiio.hints: more than 64 hints");
    }
    expect_error("hint_dup", "mpiio = { hints = {\n  a = \"1\";\n  a = \"2\";\n}; };\n", 3,
                 "duplicate setting name");
    includes_and_kinds();

    drx_config_defaults(&cfg, NULL);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope.conf", dir);
    tap_ok(drx_config_load_file(&cfg, missing, &err) == -ENOENT && strstr(err.msg, "nope.conf"),
           "missing file: ENOENT naming it (%s)", err.msg);
    drx_config_fini(&cfg);
}

static void test_validate_edits(void)
{
    struct drx_config cfg;
    struct drx_config copy;
    struct drx_err err = {{0}};
    drx_config_defaults(&cfg, NULL);
    /* validate() for command-line edits. */
    cfg.stripe.count = 5;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "stripe.count"),
           "validate: %s", err.msg);
    cfg.stripe.count = 1;
    cfg.stripe.extent = 0;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "stripe.extent"),
           "validate: %s", err.msg);
    cfg.stripe.extent = 1;
    cfg.mpiio.buffer = DRX_MIN_MPIIO_BUFFER - 1;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "mpiio.buffer"),
           "validate: %s", err.msg);
    cfg.mpiio.buffer = DRX_MAX_MPIIO_BUFFER + 1;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "mpiio.buffer"),
           "validate: %s", err.msg);
    cfg.mpiio.buffer = DRX_MAX_MPIIO_BUFFER;
    drx_config_set_hint(&cfg, "cb_nodes", "2");
    drx_config_set_hint(&cfg, "romio_cb_read", "enable");
    tap_ok(drx_config_validate(&cfg, &err) == 0, "validate: hints and a 1 GiB buffer (%s)",
           err.msg);
    /* hand edits that set_hint would refuse */
    free(cfg.mpiio.hints[1].key);
    cfg.mpiio.hints[1].key = strdup("cb_nodes");
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "set twice"),
           "validate: %s", err.msg);
    tap_ok(drx_config_copy(&copy, &cfg) == 0 && copy.mpiio.nhints == 2 &&
               strcmp(copy.mpiio.hints[1].key, "cb_nodes") == 0 &&
               strcmp(copy.mpiio.hints[1].value, "enable") == 0,
           "copy copies even what validate refuses");
    drx_config_fini(&copy);
    cfg.mpiio.hints[1].key[0] = '-';
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "hint name"),
           "validate: %s", err.msg);
    drx_config_fini(&cfg);
}

static void test_store_conf(void)
{
    struct drx_config cfg;
    struct drx_err err = {{0}};
    /* store.conf knows only version and stripe: mpiio there is refused with
     * its line, while a --config file on top of it may set mpiio. */
    char root[128], sc[200];
    snprintf(root, sizeof root, "%s/store", dir);
    snprintf(sc, sizeof sc, "%s/.drx", root);
    if (mkdir(root, 0755) < 0 || mkdir(sc, 0755) < 0)
        abort();
    snprintf(sc, sizeof sc, "%s/.drx/store.conf", root);
    FILE *fp = fopen(sc, "w");
    if (!fp)
        abort();
    fputs("version = 1;\nstripe = { count = 1; };\nmpiio = { buffer = 2097152; };\n", fp);
    fclose(fp);
    tap_ok(drx_store_load_config(root, NULL, &cfg, &err) == -EINVAL &&
               strstr(err.msg, "store.conf:3: unknown key mpiio (known: version, stripe)"),
           "store.conf refuses mpiio (%s)", err.msg);
    fp = fopen(sc, "w");
    if (!fp)
        abort();
    fputs("version = 1;\nstripe = { count = 1; };\n", fp);
    fclose(fp);
    const char *over =
        write_conf("over.conf", "mpiio = { buffer = 2097152; hints = { a = 1; }; };\n");
    tap_ok(drx_store_load_config(root, over, &cfg, &err) == 0 && cfg.stripe.count == 1 &&
               cfg.mpiio.buffer == 2097152 && hint_is(&cfg, "a", "1"),
           "store.conf < --config with mpiio (%s)", err.msg);
    drx_config_fini(&cfg);
}

static void test_byte_counts(void)
{
    uint64_t v;
    /* Byte counts of command-line options. */
    tap_ok(drx_config_parse_bytes("65536", &v) == 0 && v == 65536, "parse 65536");
    tap_ok(drx_config_parse_bytes("64K", &v) == 0 && v == 65536, "parse 64K");
    tap_ok(drx_config_parse_bytes("1MiB", &v) == 0 && v == 1048576, "parse 1MiB");
    tap_ok(drx_config_parse_bytes("2G", &v) == 0 && v == ((uint64_t)2 << 30), "parse 2G");
    tap_ok(drx_config_parse_bytes("", &v) < 0 && drx_config_parse_bytes("-1", &v) < 0 &&
               drx_config_parse_bytes("12x", &v) < 0 && drx_config_parse_bytes("K", &v) < 0 &&
               drx_config_parse_bytes("99999999999999999999", &v) < 0 &&
               drx_config_parse_bytes("20000000000T", &v) < 0,
           "bad byte counts refused");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/drx-test-config-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_defaults();
    test_full();
    test_overlays();
    test_mpiio_section();
    test_set_hint();
    test_errors();
    test_validate_edits();
    test_store_conf();
    test_byte_counts();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
