/* drx init, drx stripe get/set, drx fsck: the store's subcommands. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/array.h"
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

int drx_cmd_init(int argc, char **argv)
{
    const char *store = argv[1], *dirs_arg = drx_cli.stripe_dirs;
    unsigned count;
    uint64_t extent;
    struct drx_config cfg = {0};
    struct drx_err err = {{0}};
    char root[PATH_MAX];
    char **dirs = NULL;
    size_t ndirs = 0;
    int rc, ret = 1;

    (void)argc;
    setup_log();
    if (layout_opts("init", &count, &extent))
        return 1;
    rc = drx_store_resolve_path_for(NULL, store, DRX_STORE_FOR_WRITE, root, sizeof root, &err);
    if (rc < 0)
        return drx_cli_fail_err("init", rc, &err);

    /* defaults < --config file < options */
    rc = drx_config_defaults(&cfg, NULL);
    if (rc == 0 && drx_cli.config_path)
        rc = drx_config_load_file(&cfg, drx_cli.config_path, &err);
    if (rc < 0) {
        ret = drx_cli_fail_err("init", rc, &err);
        goto out;
    }
    if (dirs_arg) {
        char *copy = strdup(dirs_arg), *save = NULL;
        dirs = calloc(strlen(dirs_arg) + 1, sizeof *dirs);
        if (!copy || !dirs) {
            free(copy);
            ret = drx_cli_fail("init: out of memory");
            goto out;
        }
        for (char *d = strtok_r(copy, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
            char abs[PATH_MAX];
            /* Relative to where the user typed it, not to the store. */
            if (drx_store_abspath(d, abs, sizeof abs) < 0 || !(dirs[ndirs] = strdup(abs))) {
                free(copy);
                ret = drx_cli_fail("init: --stripe-dirs: bad directory '%s'", d);
                goto out;
            }
            ndirs++;
        }
        free(copy);
        if (ndirs == 0) {
            ret = drx_cli_fail("init: --stripe-dirs: no directory given");
            goto out;
        }
        if (drx_config_set_dirs(&cfg, (const char *const *)dirs, ndirs) < 0) {
            ret = drx_cli_fail("init: out of memory");
            goto out;
        }
        /* New disks are there to be used: stripe over all of them unless
         * told otherwise. */
        if (!count)
            cfg.stripe.count =
                (unsigned)(ndirs < DRX_MAX_STRIPE_DIRS ? ndirs : DRX_MAX_STRIPE_DIRS);
    }
    if (count)
        cfg.stripe.count = count;
    if (extent)
        cfg.stripe.extent = extent;
    rc = drx_config_validate(&cfg, &err);
    if (rc < 0) {
        ret = drx_cli_fail_err("init", rc, &err);
        goto out;
    }
    bool layout_given = dirs_arg || count || extent;
    rc = drx_store_init(root, &cfg, layout_given ? 0 : DRX_STORE_INIT_KEEP, &err);
    if (rc < 0) {
        ret = drx_cli_fail_err("init", rc, &err);
        goto out;
    }
    /* Show what the store now remembers (the existing settings when it was
     * already a store). */
    struct drx_config have;
    if (drx_store_load_config(root, NULL, &have, &err) == 0) {
        printf("%s: %s store: count=%u extent=%llu, stripe dirs:", root,
               rc == 1 ? "existing" : "new", have.stripe.count,
               (unsigned long long)have.stripe.extent);
        for (size_t i = 0; i < have.stripe.ndirs; i++)
            printf(" %s", have.stripe.dirs[i]);
        printf("\n");
        drx_config_fini(&have);
    }
    ret = 0;
out:
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    free(dirs);
    drx_config_fini(&cfg);
    return ret;
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
        for (unsigned i = 0; i < m.layout.count; i++) {
            drx_stripe_subfile_path(s, &m, i, sub, sizeof sub);
            uint64_t want = drx_stripe_subfile_len(&m.layout, i, m.size);
            if (lstat(sub, &st) == 0)
                printf("subfile %u: %s (%lld bytes, size needs %llu)\n", i, sub,
                       (long long)st.st_size, (unsigned long long)want);
            else
                printf("subfile %u: %s (missing: %s)\n", i, sub, strerror(errno));
        }
        ret = 0;
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
    if (!clear && !count && !extent)
        return drx_cli_fail("stripe set: usage: drx stripe set DIR --count N --extent BYTES "
                            "(or --clear)");
    if (clear && (count || extent))
        return drx_cli_fail("stripe set: --clear takes no --count or --extent");
    if (open_store_of("stripe set", dir, true, &s, sp))
        return 1;
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
        if (drx_cli.count || drx_cli.extent || drx_cli.clear)
            return drx_cli_fail("stripe get: takes no --count, --extent or --clear");
        return stripe_get(argv[2]);
    }
    if (strcmp(argv[1], "set") == 0)
        return stripe_set(argv[2]);
    return drx_cli_fail("stripe: usage: drx stripe get FILE | drx stripe set DIR --count N "
                        "--extent BYTES");
}

/* ---- drx fsck ----------------------------------------------------------------------- */

struct ref {
    unsigned dir;
    char name[DRX_STRIPE_NAME_MAX + 1];
    char *owner; /* store-relative path of the metafile */
};

/* An .xta with more than one name: settled after the walk, when every
 * name of it in the store is known. */
struct xname {
    dev_t dev;
    ino_t ino;
    bool whole; /* an .xmd beside it */
    char *path;
};

struct fsck {
    struct drx_store *s;
    bool repair;
    unsigned problems, repaired;
    bool bad_meta; /* some metafile could not be read: orphans are unsafe to remove */
    struct ref *refs;
    size_t nrefs, caprefs;
    struct xname *xnames;
    size_t nxnames, capxnames;
    struct stat *linked; /* metafiles with several names, checked once */
    size_t nlinked;
};

/* True when metafile st (with other names: a striped file's hard links)
 * was checked under another name already; else remembers it. */
static bool metafile_seen(struct fsck *k, const struct stat *st)
{
    if (st->st_nlink < 2)
        return false;
    for (size_t i = 0; i < k->nlinked; i++)
        if (k->linked[i].st_ino == st->st_ino && k->linked[i].st_dev == st->st_dev)
            return true;
    struct stat *l = realloc(k->linked, (k->nlinked + 1) * sizeof *l);
    if (l) {
        k->linked = l;
        k->linked[k->nlinked++] = *st;
    }
    return false;
}

static const char *rel_of(const struct fsck *k, const char *path)
{
    size_t n = strlen(k->s->root);
    if (strncmp(path, k->s->root, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

/* One line per finding; repaired says whether --repair fixed it (then the
 * action is named), -1 when it is not repairable. */
static void finding(struct fsck *k, const char *where, bool fixed, const char *action,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void finding(struct fsck *k, const char *where, bool fixed, const char *action,
                    const char *fmt, ...)
{
    va_list ap;
    printf("%s: ", where);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (fixed)
        printf(" (repaired: %s)", action);
    else if (action && !k->repair)
        printf(" (--repair would %s)", action);
    printf("\n");
    k->problems++;
    if (fixed)
        k->repaired++;
}

static void add_ref(struct fsck *k, unsigned dir, const char *name, const char *owner)
{
    if (k->nrefs == k->caprefs) {
        size_t cap = k->caprefs ? k->caprefs * 2 : 64;
        struct ref *r = realloc(k->refs, cap * sizeof *r);
        if (!r)
            return;
        k->refs = r;
        k->caprefs = cap;
    }
    struct ref *r = &k->refs[k->nrefs];
    r->dir = dir;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->owner = strdup(owner);
    if (r->owner)
        k->nrefs++;
}

static int ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir < y->dir ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void check_striped(struct fsck *k, const char *mp)
{
    char name[PATH_MAX], sub[PATH_MAX + 80];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    const char *rel = rel_of(k, mp);
    struct stat st;

    if (lstat(mp, &st) == 0 && metafile_seen(k, &st))
        return; /* its subfiles are counted once, not shared */
    snprintf(name, sizeof name, "%.*s", (int)(strlen(mp) - strlen(DRX_STRIPE_SUFFIX)), mp);
    int rc = drx_stripe_stat(k->s, name, &m, &err);
    if (rc < 0) {
        k->bad_meta = true;
        finding(k, rel, false, NULL, "unreadable metafile: %s", err.msg);
        return;
    }
    for (unsigned i = 0; i < m.layout.count; i++) {
        add_ref(k, m.sub[i].dir, m.sub[i].name, rel);
        drx_stripe_subfile_path(k->s, &m, i, sub, sizeof sub);
        rc = drx_stripe_subfile_check(k->s, &m, i, &st, &err);
        if (rc == -ENOENT) {
            finding(k, rel, false, NULL, "subfile %u (%s) is missing: its extents read as EIO", i,
                    sub);
            continue;
        }
        if (rc < 0) {
            /* a symlink, not a regular file, a hard link: never touched */
            finding(k, rel, false, NULL, "%s: its extents read as EIO", err.msg);
            continue;
        }
        uint64_t want = drx_stripe_subfile_len(&m.layout, i, m.size);
        if ((uint64_t)st.st_size > want) {
            /* Bytes past the recorded size are not part of the file (a
             * writer crashed before recording them): cutting is safe. */
            bool fixed = false;
            if (k->repair) {
                int fd = drx_stripe_subfile_open(k->s, &m, i, O_WRONLY, 0, rel);
                fixed = fd >= 0 && ftruncate(fd, (off_t)want) == 0;
                if (fd >= 0)
                    close(fd);
            }
            finding(k, rel, fixed, "trim it",
                    "subfile %u (%s) is %lld bytes, longer than the %llu the recorded size "
                    "%llu needs",
                    i, sub, (long long)st.st_size, (unsigned long long)want,
                    (unsigned long long)m.size);
        }
    }
}

/* Trims xta to what its metadata commits, under the lock `drx extend`
 * (drx_array_extend) holds while it writes chunks past the committed count
 * and until its new metadata names them: those chunks are not leftovers.
 * The metadata is read again under the lock (an extension may have
 * committed since).  Returns 1 trimmed, 0 nothing to trim any more,
 * -EWOULDBLOCK when an extension holds the lock, or -errno.  *committed and
 * *len get what was found under the lock. */
static int trim_xta(const char *xmd, const char *xta, uint64_t *committed, long long *len)
{
    struct drx_array_meta meta;
    struct stat st;
    int rc, fd = open(xta, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        rc = -errno;
        goto out;
    }
    memset(&meta, 0, sizeof meta);
    rc = drx_array_meta_load(xmd, &meta, NULL);
    if (rc < 0)
        goto out;
    *committed = meta.map.nchunks * meta.chunk_bytes;
    drx_array_meta_fini(&meta);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        rc = -EIO; /* as drx_array_open: never cut a file linked elsewhere */
        goto out;
    }
    *len = (long long)st.st_size;
    rc = 0;
    if ((uint64_t)st.st_size > *committed)
        rc = ftruncate(fd, (off_t)*committed) < 0 ? -errno : 1;
out:
    close(fd); /* and the lock with it */
    return rc;
}

static void check_array(struct fsck *k, const char *xmd)
{
    char xta[PATH_MAX];
    struct drx_array_meta meta;
    struct drx_err err = {{0}};
    const char *rel = rel_of(k, xmd);
    struct stat st;

    snprintf(xta, sizeof xta, "%.*s.xta", (int)(strlen(xmd) - 4), xmd);
    memset(&meta, 0, sizeof meta);
    int rc = drx_array_meta_load(xmd, &meta, &err);
    if (rc < 0) {
        finding(k, rel, false, NULL, "unreadable array metadata: %s", err.msg);
        return;
    }
    uint64_t committed = meta.map.nchunks * meta.chunk_bytes;
    drx_array_meta_fini(&meta);
    if (lstat(xta, &st) < 0) {
        finding(k, rel_of(k, xta), false, NULL, "missing (the metadata names %llu bytes of chunks)",
                (unsigned long long)committed);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        finding(k, rel_of(k, xta), false, NULL, "not a regular file");
        return;
    }
    /* Its other names are settled after the walk (check_shared); its
     * length must wait for that: trimming it to this metadata could cut
     * chunks another name's metadata commits. */
    if (st.st_nlink > 1)
        return;
    if (lstat(xmd, &st) == 0 && st.st_nlink > 1) {
        /* Harmless alone (an extension replaces the .xmd by rename), but
         * the names must not share anything. */
        char name[PATH_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(xmd) - 4), xmd);
        int urc = k->repair ? drx_array_unshare(name, &err) : 0;
        if (urc < 0)
            finding(k, rel, false, NULL, "metadata file has %ju names; cannot give it its own: %s",
                    (uintmax_t)st.st_nlink, err.msg);
        else
            finding(k, rel, urc > 0, "give it its own copy", "metadata file has %ju names",
                    (uintmax_t)st.st_nlink);
    }
    if (lstat(xta, &st) < 0)
        return;
    if ((uint64_t)st.st_size > committed) {
        /* Chunks past the metadata's count were written by an extension
         * that never committed (or one still running: see trim_xta). */
        long long len = (long long)st.st_size;
        int trc = k->repair ? trim_xta(xmd, xta, &committed, &len) : 1;
        if (trc == 0)
            return; /* an extension committed them meanwhile: all is well */
        if (trc == -EWOULDBLOCK)
            finding(k, rel_of(k, xta), false, NULL,
                    "%lld bytes, longer than its metadata's %llu: an extension holds its lock "
                    "(drx extend running?); not trimmed, run fsck again when it is done",
                    len, (unsigned long long)committed);
        else if (trc < 0)
            finding(k, rel_of(k, xta), false, NULL,
                    "%lld bytes, longer than its metadata's %llu (uncommitted extension); "
                    "cannot trim it: %s",
                    len, (unsigned long long)committed, strerror(-trc));
        else
            finding(k, rel_of(k, xta), k->repair, "trim it",
                    "%lld bytes, longer than its metadata's %llu (uncommitted extension)", len,
                    (unsigned long long)committed);
    } else if ((uint64_t)st.st_size < committed) {
        finding(k, rel_of(k, xta), false, NULL,
                "%lld bytes, shorter than its metadata's %llu (chunks lost)", (long long)st.st_size,
                (unsigned long long)committed);
    }
}

static bool is_stripe_dir(const struct fsck *k, const char *path)
{
    for (size_t i = 0; i < k->s->cfg.stripe.ndirs; i++)
        if (strcmp(k->s->cfg.stripe.dirs[i], path) == 0)
            return true;
    return false;
}

static void add_xname(struct fsck *k, const struct stat *st, const char *path, bool whole)
{
    if (k->nxnames == k->capxnames) {
        size_t cap = k->capxnames ? k->capxnames * 2 : 16;
        struct xname *x = realloc(k->xnames, cap * sizeof *x);
        if (!x)
            return;
        k->xnames = x;
        k->capxnames = cap;
    }
    struct xname *x = &k->xnames[k->nxnames];
    *x = (struct xname){.dev = st->st_dev, .ino = st->st_ino, .whole = whole, .path = strdup(path)};
    if (x->path)
        k->nxnames++;
}

static int xname_cmp(const void *a, const void *b)
{
    const struct xname *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* The names of one chunk file g[0..n) (an .xta with more than one link).
 * A name without an .xmd beside a whole array's is what a rename cut short
 * left (drx_array_rename links NEW.xta, renames the .xmd, removes OLD.xta):
 * removed.  Whole arrays that still share a chunk file (an older drxfs's
 * rename, a hard link made by hand) would diverge at their first extension:
 * each but one gets its own copy.  Their lengths are checked last. */
static void check_shared_one(struct fsck *k, const struct xname *g, size_t n)
{
    const struct xname *keeper = NULL;
    struct drx_err err = {{0}};
    size_t nleft = 0;

    for (size_t i = 0; i < n; i++) {
        if (g[i].whole && !keeper)
            keeper = &g[i];
        nleft += !g[i].whole;
    }
    for (size_t i = 0; i < n; i++) {
        if (g[i].whole)
            continue;
        bool fixed = k->repair && unlink(g[i].path) == 0;
        if (keeper)
            finding(k, rel_of(k, g[i].path), fixed, "remove it",
                    "a second name of %s, left by an interrupted rename (no .xmd beside it); "
                    "writes to the array are refused until it is gone",
                    rel_of(k, keeper->path));
        else
            finding(k, rel_of(k, g[i].path), fixed, "remove it",
                    "orphan chunk file: no .xmd beside it nor beside its other names");
    }
    for (size_t i = 0; i < n; i++) {
        char name[PATH_MAX], xmd[PATH_MAX];
        struct stat st;
        size_t len = strlen(g[i].path) - 4;
        if (!g[i].whole || lstat(g[i].path, &st) < 0)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)len, g[i].path);
        snprintf(xmd, sizeof xmd, "%.*s.xmd", (int)len, g[i].path);
        /* without --repair: what would be left once the leftovers are gone */
        uintmax_t names = (uintmax_t)st.st_nlink - (k->repair ? 0 : nleft);
        if (names > 1) {
            const struct xname *other = NULL; /* another whole array of the group */
            for (size_t j = 0; j < n && !other; j++)
                if (j != i && g[j].whole)
                    other = &g[j];
            int urc = k->repair ? drx_array_unshare(name, &err) : 0;
            char what[PATH_MAX + 200];
            if (other)
                snprintf(what, sizeof what,
                         "shares its chunk file with %s (a rename cut short by an older drxfs?)",
                         rel_of(k, other->path));
            else
                snprintf(what, sizeof what, "its chunk file has %ju names, %ju outside the store",
                         names, names - 1);
            if (urc < 0)
                finding(k, rel_of(k, g[i].path), false, NULL, "%s; cannot give it its own: %s",
                        what, err.msg);
            else
                finding(k, rel_of(k, g[i].path), urc > 0, "give it its own copy",
                        "%s: writing or extending one would change or cut the other's chunks",
                        what);
        }
        if (k->repair)
            check_array(k, xmd);
    }
}

static void check_shared(struct fsck *k)
{
    if (k->nxnames)
        qsort(k->xnames, k->nxnames, sizeof *k->xnames, xname_cmp);
    for (size_t i = 0, j; i < k->nxnames; i = j) {
        for (j = i + 1; j < k->nxnames && k->xnames[j].dev == k->xnames[i].dev &&
                        k->xnames[j].ino == k->xnames[i].ino;
             j++)
            ;
        check_shared_one(k, &k->xnames[i], j - i);
    }
}

static void walk(struct fsck *k, const char *dir, int depth)
{
    DIR *d;
    struct dirent *e;
    char path[PATH_MAX];
    struct stat st;

    if (depth > 256 || !(d = opendir(dir))) {
        finding(k, rel_of(k, dir), false, NULL, "cannot read directory: %s",
                depth > 256 ? "too deep" : strerror(errno));
        return;
    }
    bool at_root = strcmp(dir, k->s->root) == 0;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
            (at_root && strcmp(n, DRX_STORE_DIR) == 0))
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, n) >= sizeof path)
            continue;
        if (lstat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (!is_stripe_dir(k, path))
                walk(k, path, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        if (drx_store_name_is_temp(n)) {
            bool fixed = k->repair && unlink(path) == 0;
            finding(k, rel_of(k, path), fixed, "remove it",
                    "leftover temporary file of an interrupted update");
        } else if (ends_with(n, DRX_STRIPE_SUFFIX)) {
            check_striped(k, path);
        } else if (ends_with(n, ".xmd")) {
            check_array(k, path);
        } else if (ends_with(n, ".xta")) {
            char xmd[PATH_MAX];
            snprintf(xmd, sizeof xmd, "%.*s.xmd", (int)(strlen(path) - 4), path);
            bool whole = access(xmd, F_OK) == 0;
            if (st.st_nlink > 1) {
                add_xname(k, &st, path, whole);
            } else if (!whole) {
                bool fixed = k->repair && unlink(path) == 0;
                finding(k, rel_of(k, path), fixed, "remove it",
                        "orphan chunk file: no %s beside it", strrchr(xmd, '/') + 1);
            }
        }
    }
    closedir(d);
}

/* A subfile name as drx makes them: 16 hex digits, '.', subfile number. */
static bool our_subfile_name(const char *n)
{
    size_t i;
    for (i = 0; i < 16; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    if (n[i++] != '.' || !n[i])
        return false;
    for (; n[i]; i++)
        if (n[i] < '0' || n[i] > '9')
            return false;
    return true;
}

static void check_stripe_dirs(struct fsck *k)
{
    if (k->nrefs) /* qsort's base may not be NULL, even for no elements */
        qsort(k->refs, k->nrefs, sizeof *k->refs, ref_cmp);
    for (size_t i = 1; i < k->nrefs; i++)
        if (ref_cmp(&k->refs[i - 1], &k->refs[i]) == 0)
            finding(k, k->refs[i].owner, false, NULL,
                    "shares subfile %s with %s (writing one changes the other)", k->refs[i].name,
                    k->refs[i - 1].owner);

    for (size_t di = 0; di < k->s->cfg.stripe.ndirs; di++) {
        const char *dname = k->s->cfg.stripe.dirs[di];
        if (k->s->dir_fds[di] < 0) {
            finding(k, dname, false, NULL, "stripe directory %zu is missing or unreadable", di);
            continue;
        }
        int fd = openat(k->s->dir_fds[di], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        if (!d) {
            if (fd >= 0)
                close(fd);
            finding(k, dname, false, NULL, "cannot read stripe directory: %s", strerror(errno));
            continue;
        }
        while ((e = readdir(d))) {
            const char *n = e->d_name;
            if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
                continue;
            struct ref key = {.dir = (unsigned)di};
            size_t nl = strlen(n);
            if (nl <= DRX_STRIPE_NAME_MAX) {
                memcpy(key.name, n, nl + 1);
                if (k->nrefs && bsearch(&key, k->refs, k->nrefs, sizeof *k->refs, ref_cmp))
                    continue;
            }
            char where[PATH_MAX + 300];
            snprintf(where, sizeof where, "%s/%s", dname, n);
            if (!our_subfile_name(n)) {
                finding(k, where, false, NULL, "unknown file in a stripe directory (left alone)");
            } else if (k->bad_meta) {
                finding(k, where, false, NULL,
                        "orphan subfile, kept because some metafile is unreadable and may "
                        "name it");
            } else {
                bool fixed = k->repair && unlinkat(k->s->dir_fds[di], n, 0) == 0;
                finding(k, where, fixed, "remove it", "orphan subfile: no metafile names it");
            }
        }
        closedir(d);
    }
}

/* .drx/ itself: leftover store.conf temporaries. */
static void check_drx_dir(struct fsck *k)
{
    char dir[PATH_MAX + 8], path[PATH_MAX * 2];
    struct dirent *e;
    DIR *d;

    snprintf(dir, sizeof dir, "%s/" DRX_STORE_DIR, k->s->root);
    if (!(d = opendir(dir)))
        return;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, ".store.conf.", 12) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bool fixed = k->repair && unlink(path) == 0;
        finding(k, rel_of(k, path), fixed, "remove it",
                "leftover temporary file of an interrupted update");
    }
    closedir(d);
}

int drx_cmd_fsck(int argc, char **argv)
{
    const char *store = argv[1];
    struct fsck k = {0};
    char sp[PATH_MAX];

    (void)argc;
    setup_log();
    k.repair = drx_cli.repair;
    if (open_store_of("fsck", store, k.repair, &k.s, sp))
        return 1;
    /* A mounted store is not idle: the daemon records sizes lazily (bytes
     * past a recorded size may be written data), creates subfiles before
     * metafiles and hides temporaries it is about to rename.  Repairing it
     * would lose data; reporting is harmless. */
    char mnt[PATH_MAX];
    if (k.repair && drx_store_mounted(k.s->root, mnt, sizeof mnt) == 1) {
        drx_cli_fail("fsck: %s is mounted at %s (drxfs): --repair needs an idle store; "
                     "unmount it first",
                     k.s->root, mnt);
        drx_store_close(k.s);
        return 1;
    }
    /* Unmounted but busy: another namespace's mount, or a drx-load copy
     * between creating its temporary file and committing it.  Held to the
     * end, so none starts while the repair runs. */
    int lock = -1;
    if (k.repair) {
        lock = drx_store_lock(k.s, true);
        if (lock < 0) {
            if (lock == -EWOULDBLOCK)
                drx_cli_fail("fsck: %s is in use (a drxfs mount or a drx-load copy holds "
                             ".drx/): --repair needs an idle store; run it when they are done",
                             k.s->root);
            else
                drx_cli_fail("fsck: %s/.drx: cannot lock: %s", k.s->root, strerror(-lock));
            drx_store_close(k.s);
            return 1;
        }
    }
    walk(&k, k.s->root, 0);
    check_shared(&k);
    check_drx_dir(&k);
    check_stripe_dirs(&k);
    if (k.problems == 0)
        printf("%s: clean\n", k.s->root);
    else
        printf("%s: %u problem%s, %u repaired\n", k.s->root, k.problems, k.problems == 1 ? "" : "s",
               k.repaired);
    int ret = k.problems == k.repaired ? 0 : 1;
    for (size_t i = 0; i < k.nrefs; i++)
        free(k.refs[i].owner);
    free(k.refs);
    for (size_t i = 0; i < k.nxnames; i++)
        free(k.xnames[i].path);
    free(k.xnames);
    free(k.linked);
    if (lock >= 0)
        close(lock);
    drx_store_close(k.s);
    return ret;
}
