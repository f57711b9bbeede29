/* drx init, drx stripe get/set, drx fsck: the store's subcommands (fsck is
 * a loop over libcore's checker, drx/check.h). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/check.h"
#include "drx/config.h"
#include "drx/log.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "drx_cli.h"

/* libcore's errors go to stderr.  Its warnings (a refused metafile, a
 * missing stripe dir) are what these commands report themselves, in their
 * own one-line form, so they are not repeated. */
static void setup_log(void)
{
    drx_log_set_sink(drx_log_stderr_sink, (void *)"drx");
    drx_log_set_level(DRX_LOG_ERROR);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The layout options init and stripe set share, --count N and --extent
 * BYTES, checked into *count and *extent (0 when not given).  0, or 1 when
 * one is bad (reported, naming cmd). */
static int layout_opts(const char *cmd, unsigned *count, uint64_t *extent)
{
    const char *v;

    *count = 0;
    *extent = 0;
    if ((v = drx_cli.count)) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-' || n < 1 || n > DRX_MAX_STRIPE_DIRS)
            return drx_cli_fail("%s: --count %s: not a number in 1..%d", cmd, v,
                                DRX_MAX_STRIPE_DIRS);
        *count = (unsigned)n;
    }
    if ((v = drx_cli.extent)) {
        if (drx_config_parse_bytes(v, extent) < 0 || *extent < 1 || *extent > DRX_MAX_EXTENT)
            return drx_cli_fail("%s: --extent %s: not a byte count in 1..%llu", cmd, v,
                                (unsigned long long)DRX_MAX_EXTENT);
    }
    return 0;
}

/* ---- drx init -------------------------------------------------------------- */

/* --stripe-dirs D1,D2,... into cfg, each made absolute from where the user
 * typed it (not from the store); with no --count, new files stripe over
 * all of them.  0, or 1 when reported. */
static int init_dirs(const char *arg, unsigned count, struct drx_config *cfg)
{
    char *copy = strdup(arg), *save = NULL, **dirs = calloc(strlen(arg) + 1, sizeof(char *));
    size_t ndirs = 0;
    int ret = 0;

    if (!copy || !dirs) {
        ret = drx_cli_fail("init: out of memory");
        goto out;
    }
    for (char *d = strtok_r(copy, ",", &save); d && !ret; d = strtok_r(NULL, ",", &save)) {
        char abs[PATH_MAX];
        if (drx_store_abspath(d, abs, sizeof abs) < 0 || !(dirs[ndirs] = strdup(abs)))
            ret = drx_cli_fail("init: --stripe-dirs: bad directory '%s'", d);
        else
            ndirs++;
    }
    if (!ret && ndirs == 0)
        ret = drx_cli_fail("init: --stripe-dirs: no directory given");
    if (!ret && drx_config_set_dirs(cfg, (const char *const *)dirs, ndirs) < 0)
        ret = drx_cli_fail("init: out of memory");
    /* New disks are there to be used. */
    if (!ret && !count)
        cfg->stripe.count = (unsigned)(ndirs < DRX_MAX_STRIPE_DIRS ? ndirs : DRX_MAX_STRIPE_DIRS);
out:
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    free(dirs);
    free(copy);
    return ret;
}

/* The layout drx init asks for: defaults < the store's own settings (when
 * root is one already) < --config file < options, so that an existing
 * store is compared only on what was asked (`drx init STORE --count 1`
 * names the count, not other stripe dirs).  0, or 1 when reported. */
static int init_config(const char *root, struct drx_config *cfg)
{
    struct drx_err err = {{0}};
    unsigned count;
    uint64_t extent;
    int rc;

    if (layout_opts("init", &count, &extent))
        return 1;
    rc = drx_store_load_config(root, drx_cli.config_path, cfg, &err);
    if (rc < 0)
        return drx_cli_fail_err("init", rc, &err);
    if (drx_cli.stripe_dirs && init_dirs(drx_cli.stripe_dirs, count, cfg))
        return 1;
    if (count)
        cfg->stripe.count = count;
    if (extent)
        cfg->stripe.extent = extent;
    rc = drx_config_validate(cfg, &err);
    return rc < 0 ? drx_cli_fail_err("init", rc, &err) : 0;
}

/* What the store now remembers (the existing settings when it was already
 * a store). */
static void init_show(const char *root, bool existed)
{
    struct drx_err err = {{0}};
    struct drx_config have;

    if (drx_store_load_config(root, NULL, &have, &err) < 0)
        return;
    printf("%s: %s store: count=%u extent=%llu, stripe dirs:", root, existed ? "existing" : "new",
           have.stripe.count, (unsigned long long)have.stripe.extent);
    for (size_t i = 0; i < have.stripe.ndirs; i++)
        printf(" %s", have.stripe.dirs[i]);
    printf("\n");
    drx_config_fini(&have);
}

int drx_cmd_init(int argc, char **argv)
{
    struct drx_config cfg = {0};
    struct drx_err err = {{0}};
    char root[PATH_MAX];
    bool layout_given = drx_cli.stripe_dirs || drx_cli.count || drx_cli.extent;
    int rc;

    unsigned count;
    uint64_t extent;

    (void)argc;
    setup_log();
    if (layout_opts("init", &count, &extent)) /* bad options first, as ever */
        return 1;
    rc = drx_store_resolve_path_for(NULL, argv[1], DRX_STORE_FOR_WRITE, root, sizeof root, &err);
    if (rc < 0)
        return drx_cli_fail_err("init", rc, &err);
    if (init_config(root, &cfg)) {
        drx_config_fini(&cfg);
        return 1;
    }
    rc = drx_store_init(root, &cfg, layout_given ? 0 : DRX_STORE_INIT_KEEP, &err);
    drx_config_fini(&cfg);
    if (rc < 0)
        return drx_cli_fail_err("init", rc, &err);
    init_show(root, rc == 1);
    return 0;
}

/* ---- drx stripe ---------------------------------------------------------------- */

/* Opens the store holding path; fills store_path (the resolved path).
 * write: the command changes the store (not through a read-only mount). */
static int open_store_of(const char *what, const char *path, bool write, struct drx_store **s,
                         char *store_path)
{
    char root[PATH_MAX];
    struct drx_err err = {{0}};
    int rc =
        drx_store_locate_for(path, write ? DRX_STORE_FOR_WRITE : 0, root, store_path, NULL, &err);

    if (rc == 0)
        rc = drx_store_open(root, drx_cli.config_path, s, &err);
    if (rc < 0)
        return drx_cli_fail_err(what, rc, &err);
    return 0;
}

/* One line on standard output, escaped as the log escapes its messages
 * (README, Logging): the store's names in it are another user's, and one
 * holding a newline or an escape sequence must neither forge a line nor
 * reach the terminal (drx fsck, drx stripe get).  Before (up to
 * 2026-12-06) they were printed raw. */
static void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void print_line(const char *fmt, ...)
{
    static char raw[4 * PATH_MAX], out[4 * sizeof raw];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    drx_msg_escape(raw, out, sizeof out, true);
    printf("%s\n", out);
}

static int stripe_get(const char *file)
{
    char sp[PATH_MAX], sub[PATH_MAX + 80], lay[DRX_STRIPE_LAYOUT_LEN];
    struct drx_store *s = NULL;
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    struct stat st;
    int ret;

    if (open_store_of("stripe get", file, false, &s, sp))
        return 1;
    if (ends_with(sp, DRX_STRIPE_SUFFIX) && !drx_stripe_exists(sp))
        sp[strlen(sp) - strlen(DRX_STRIPE_SUFFIX)] = '\0';
    if (drx_stripe_exists(sp)) {
        int rc = drx_stripe_stat(s, sp, &m, &err);
        if (rc < 0) {
            ret = drx_cli_fail_err("stripe get", rc, &err);
            goto out;
        }
        drx_stripe_layout_format(&m.layout, lay, sizeof lay);
        printf("%s\n", lay);
        printf("size=%llu\n", (unsigned long long)m.size);
        ret = 0;
        for (unsigned i = 0; i < m.layout.count; i++) {
            drx_stripe_subfile_path(s, &m, i, sub, sizeof sub);
            uint64_t want = drx_stripe_subfile_len(&m.layout, i, m.size);
            /* the rule the mount, drx-load and fsck apply: a symlink, a
             * hard link, a FIFO is no subfile of this file */
            rc = drx_stripe_subfile_check(s, &m, i, &st, &err);
            if (rc == 0) {
                print_line("subfile %u: %s (%lld bytes, size needs %llu)", i, sub,
                       (long long)st.st_size, (unsigned long long)want);
            } else if (rc == -ENOENT && want == 0) {
                print_line("subfile %u: %s (not created yet: no byte reached it)", i, sub);
            } else if (rc == -ENOENT) {
                print_line("subfile %u: %s (missing)", i, sub);
            } else {
                char why[sizeof err.msg + PATH_MAX + 80];
                if (err.msg[0]) /* "subfile I (PATH) is a ... (refused)" */
                    snprintf(why, sizeof why, "%s", err.msg);
                else
                    snprintf(why, sizeof why, "subfile %u: %s (%s)", i, sub, strerror(-rc));
                /* in the listing, and the reason in the failure's line */
                print_line("%s", why);
                drx_cli_flush();
                ret = drx_cli_fail("stripe get: %s: %s", file, why);
            }
        }
        if (drx_stripe_size_pending(sp))
            printf("size pending: closed larger through a mount, whose commit records "
                   "it (commit_interval)\n");
    } else if (stat(sp, &st) == 0 && S_ISDIR(st.st_mode)) {
        struct drx_stripe_layout l;
        int rc = drx_stripe_layout_dir_get(s, sp, &l, &err);
        if (rc < 0) {
            ret = drx_cli_fail_err("stripe get", rc, &err);
            goto out;
        }
        if (rc == 0)
            drx_stripe_layout_for_new(s, sp, &l, &err);
        drx_stripe_layout_format(&l, lay, sizeof lay);
        printf("%s\n", lay);
        printf("%s\n",
               rc == 1 ? "(set on this directory)" : "(inherited: new files here get this layout)");
        ret = 0;
    } else {
        ret = drx_cli_fail("stripe get: %s: not a striped file or directory", file);
    }
out:
    drx_store_close(s);
    return ret;
}

static int stripe_set(const char *dir)
{
    unsigned count;
    uint64_t extent;
    bool clear = drx_cli.clear;
    char sp[PATH_MAX];
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};
    struct drx_stripe_layout l;
    int rc, ret;

    if (layout_opts("stripe set", &count, &extent))
        return 1;
    /* the line is wrong, as for a missing argument: 2 */
    if (!clear && !count && !extent) {
        drx_cli_fail("stripe set: usage: drx stripe set DIR --count N --extent BYTES "
                     "(or --clear)");
        return 2;
    }
    if (clear && (count || extent)) {
        drx_cli_fail("stripe set: --clear takes no --count or --extent");
        return 2;
    }
    if (open_store_of("stripe set", dir, true, &s, sp))
        return 1;
    if (drx_stripe_exists(sp)) {
        ret = drx_cli_fail("stripe set: %s: a striped file, not a directory (a layout is set "
                           "on directories; a file keeps the one it was made with)",
                           dir);
        drx_store_close(s);
        return ret;
    }
    if (clear) {
        rc = drx_stripe_layout_dir_set(s, sp, NULL, &err);
    } else {
        /* An option left out keeps what new files here would get now. */
        rc = drx_stripe_layout_for_new(s, sp, &l, &err);
        if (count)
            l.count = count;
        if (extent)
            l.extent = extent;
        if (rc == 0)
            rc = drx_stripe_layout_dir_set(s, sp, &l, &err);
    }
    if (rc < 0) {
        ret = drx_cli_fail_err("stripe set", rc, &err);
    } else {
        if (!clear) {
            char lay[DRX_STRIPE_LAYOUT_LEN];
            drx_stripe_layout_format(&l, lay, sizeof lay);
            printf("%s: %s\n", dir, lay);
        }
        ret = 0;
    }
    drx_store_close(s);
    return ret;
}

int drx_cmd_stripe(int argc, char **argv)
{
    (void)argc;
    setup_log();
    if (strcmp(argv[1], "get") == 0) {
        if (drx_cli.count || drx_cli.extent || drx_cli.clear) {
            drx_cli_fail("stripe get: takes no --count, --extent or --clear");
            return 2;
        }
        return stripe_get(argv[2]);
    }
    if (strcmp(argv[1], "set") == 0)
        return stripe_set(argv[2]);
    return drx_cli_fail("stripe: usage: drx stripe get FILE | drx stripe set DIR --count N "
                        "--extent BYTES");
}

/* ---- drx fsck: a loop over libcore's checker ---------------------------------- */

/* One finding per line; with --repair, what was done, else what it would do. */
static void print_finding(const struct drx_check_finding *f, void *arg)
{
    bool repair = *(const bool *)arg;

    if (f->repaired)
        print_line("%s: %s (repaired: %s)", f->where, f->what, f->action);
    else if (f->action && !repair)
        print_line("%s: %s (--repair would %s)", f->where, f->what, f->action);
    else
        print_line("%s: %s", f->where, f->what);
}

int drx_cmd_fsck(int argc, char **argv)
{
    struct drx_check_result res;
    struct drx_err err = {{0}};
    struct drx_store *s;
    bool repair = drx_cli.repair;
    char sp[PATH_MAX];
    int rc;

    (void)argc;
    setup_log();
    /* a store's path, or one in it; a path that is not there names no
     * store (its parent's would be checked instead) */
    struct stat st;
    if (stat(argv[1], &st) < 0) {
        drx_cli_fail("fsck: %s: %s", argv[1], strerror(errno));
        return 1;
    }
    if (open_store_of("fsck", argv[1], repair, &s, sp))
        return 1;
    rc = drx_store_check(s, repair, print_finding, &repair, &res, &err);
    if (rc < 0) {
        drx_cli_fail("fsck: %s", err.msg);
        drx_store_close(s);
        return 1;
    }
    if (res.problems == 0)
        print_line("%s: clean", s->root);
    else
        print_line("%s: %u problem%s, %u repaired", s->root, res.problems,
               res.problems == 1 ? "" : "s", res.repaired);
    /* the report is on standard output (as e2fsck's); the failure has its
     * one line on standard error, as every command's */
    drx_cli_flush();
    if (res.problems > res.repaired)
        drx_cli_fail("fsck: %s: %u problem%s left%s", s->root, res.problems - res.repaired,
                     res.problems - res.repaired == 1 ? "" : "s",
                     repair ? " (see above)" : " (see above; --repair fixes what it can)");
    drx_store_close(s);
    return res.problems == res.repaired ? 0 : 1;
}
