/* Configuration: defaults, overlays, and every error class with its line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/config.h"
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
               cfg.cache_bytes == DRX_DEFAULT_CACHE_BYTES,
           "%s: line %d, \"%s\"", tag, line, err.msg);
    drx_config_fini(&cfg);
}

int main(void)
{
    struct drx_config cfg, copy;
    struct drx_err err = {{0}};
    uint64_t v;

    snprintf(dir, sizeof dir, "/tmp/drx-test-config-XXXXXX");
    if (!mkdtemp(dir))
        return 1;

    /* Defaults. */
    tap_ok(drx_config_defaults(&cfg, "/s") == 0, "defaults");
    tap_ok(cfg.stripe.ndirs == 2 && strcmp(cfg.stripe.dirs[0], "/s/.drx/stripes/0") == 0 &&
               strcmp(cfg.stripe.dirs[1], "/s/.drx/stripes/1") == 0,
           "default stripe dirs under STORE/.drx/stripes");
    tap_ok(cfg.stripe.count == 2 && cfg.stripe.extent == 65536 &&
               cfg.cache_bytes == ((uint64_t)256 << 20) && !cfg.prefetch.enabled &&
               cfg.prefetch.min_bytes == ((uint64_t)64 << 20) && cfg.prefetch.ranks == 2 &&
               strcmp(cfg.prefetch.mpiexec, "mpiexec") == 0 && cfg.log_level == DRX_LOG_INFO,
           "default values of SPEC section 8");
    tap_ok(drx_config_validate(&cfg, NULL) == 0, "defaults are valid");
    drx_config_fini(&cfg);
    drx_config_defaults(&cfg, NULL);
    tap_ok(strcmp(cfg.stripe.dirs[1], ".drx/stripes/1") == 0, "without a root: relative dirs");

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
                                "log = { level = \"debug\"; };\n");
    tap_ok(drx_config_load_file(&cfg, full, &err) == 0, "full file loads (%s)", err.msg);
    tap_ok(cfg.stripe.ndirs == 3 && strcmp(cfg.stripe.dirs[2], "/d2") == 0 &&
               cfg.stripe.count == 3 && cfg.stripe.extent == 4096,
           "stripe overlay");
    TAP_CHECK_EQ_U64(cfg.cache_bytes, 8589934592ULL, "a large integer without L is not wrapped");
    tap_ok(cfg.prefetch.enabled && cfg.prefetch.min_bytes == 1048576 && cfg.prefetch.ranks == 4 &&
               strcmp(cfg.prefetch.mpiexec, "/usr/bin/mpiexec.hydra") == 0 &&
               cfg.log_level == DRX_LOG_DEBUG,
           "prefetch and log overlay");
    tap_ok(drx_config_copy(&copy, &cfg) == 0 && copy.stripe.dirs[0] != cfg.stripe.dirs[0] &&
               strcmp(copy.stripe.dirs[0], "/d0") == 0,
           "deep copy");
    drx_config_fini(&copy);

    /* A partial file keeps the rest. */
    const char *part = write_conf("part.conf", "stripe = { extent = 100; };\n");
    tap_ok(drx_config_load_file(&cfg, part, &err) == 0 && cfg.stripe.extent == 100 &&
               cfg.stripe.count == 3 && cfg.stripe.ndirs == 3 && cfg.cache_bytes == 8589934592ULL,
           "partial file overlays only its keys");
    drx_config_fini(&cfg);
    drx_config_fini(&cfg); /* twice is safe */

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

    drx_config_defaults(&cfg, NULL);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope.conf", dir);
    tap_ok(drx_config_load_file(&cfg, missing, &err) == -ENOENT && strstr(err.msg, "nope.conf"),
           "missing file: ENOENT naming it (%s)", err.msg);

    /* validate() for command-line edits. */
    cfg.stripe.count = 5;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "stripe.count"),
           "validate: %s", err.msg);
    cfg.stripe.count = 1;
    cfg.stripe.extent = 0;
    tap_ok(drx_config_validate(&cfg, &err) == -EINVAL && strstr(err.msg, "stripe.extent"),
           "validate: %s", err.msg);
    drx_config_fini(&cfg);

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

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
