/* Striped files (NAFS): metafile NAME.nafs + round-robin subfiles. */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cfgfile_i.h"
#include "drx/io.h"
#include "drx/log.h"
#include "replace_i.h"

/* A metafile is a few hundred bytes; anything much larger is not ours. */
#define META_MAX_BYTES 65536

struct drx_stripe {
    struct drx_store *s;
    char *path; /* NAME, without suffix */
    int mode;
    struct drx_stripe_meta meta; /* layout and subfiles; meta.size unused */
    int fds[DRX_MAX_STRIPE_DIRS];
    atomic_bool warned[DRX_MAX_STRIPE_DIRS]; /* missing subfile logged */

    /* Writes hold io shared; truncate holds it exclusive, so no write lands
     * between cutting the subfiles and recording the new size. */
    pthread_rwlock_t io;
    pthread_mutex_t lock; /* guards everything below */
    uint64_t size;        /* logical size, in memory */
    uint64_t persisted;   /* size as last written to/read from the metafile */
    bool truncated;       /* size was set by truncate since the last persist */
    bool meta_synced;     /* the metafile on disk is known durable */
    /* Subfile changes (writes, cuts) counted; synced_gen is the count the
     * last fdatasync of every subfile covered.  A persist that advances the
     * recorded size syncs first when they differ (SPEC 9: data before the
     * metadata that points to it). */
    uint64_t wgen, synced_gen;
    bool dirs_synced; /* the subfiles' directory entries are durable */
    dev_t meta_dev;   /* identity of the metafile this handle wrote/read */
    ino_t meta_ino;
    struct timespec meta_ctim; /* and its ctime then: an update in place keeps the inode */
};

/* ---- mapping ------------------------------------------------------------------- */

uint64_t drx_stripe_subfile_len(const struct drx_stripe_layout *l, unsigned i, uint64_t size)
{
    uint64_t full = size / l->extent, rem = size % l->extent;
    uint64_t n = full / l->count + (i < full % l->count ? 1 : 0);

    /* The partial last extent, if any, is extent `full`, in subfile full % count. */
    if (rem && full % l->count == i)
        return n * l->extent + rem;
    return n * l->extent;
}

void drx_stripe_locate(const struct drx_stripe_layout *l, uint64_t b, uint64_t left,
                       struct drx_stripe_piece *out)
{
    uint64_t e = b / l->extent, within = b % l->extent;

    out->subfile = (unsigned)(e % l->count);
    out->offset = (e / l->count) * l->extent + within;
    out->logical = b;
    out->len = l->extent - within < left ? l->extent - within : left;
}

/* Extents [*e0, *e1) that logical bytes [a, b) touch (none when a == b). */
static void range_extents(const struct drx_stripe_layout *l, uint64_t a, uint64_t b, uint64_t *e0,
                          uint64_t *e1)
{
    *e0 = a / l->extent;
    *e1 = b > a ? (b - 1) / l->extent + 1 : *e0;
}

size_t drx_stripe_range_pieces_max(const struct drx_stripe_layout *l, uint64_t a, uint64_t b)
{
    uint64_t e0, e1;

    range_extents(l, a, b, &e0, &e1);
    return (size_t)((e1 - e0) / l->count + 2);
}

size_t drx_stripe_range_pieces(const struct drx_stripe_layout *l, unsigned i, uint64_t a,
                               uint64_t b, struct drx_stripe_piece *out, size_t max)
{
    const uint64_t ext = l->extent, cnt = l->count;
    uint64_t e0, e1;
    size_t k = 0;

    range_extents(l, a, b, &e0, &e1);
    /* The first extent at or after e0 that lives in subfile i; then every
     * count-th one. */
    for (uint64_t x = e0 + (i + cnt - e0 % cnt) % cnt; x < e1; x += cnt, k++) {
        uint64_t lo = x * ext > a ? x * ext : a;
        uint64_t hi = (x + 1) * ext < b ? (x + 1) * ext : b;

        if (k < max)
            out[k] = (struct drx_stripe_piece){
                .subfile = i, .offset = (x / cnt) * ext + lo % ext, .logical = lo, .len = hi - lo};
    }
    return k;
}

void drx_stripe_pieces_fill_holes(const struct drx_stripe_piece *p, size_t n, uint64_t got,
                                  unsigned char *buf, uint64_t base)
{
    for (size_t j = 0; j < n; j++) {
        if (got >= p[j].len) {
            got -= p[j].len;
            continue;
        }
        memset(buf + (p[j].logical - base) + got, 0, p[j].len - got);
        got = 0;
    }
}

/* ---- names and paths --------------------------------------------------------- */

bool drx_stripe_subfile_name_valid(const char *name)
{
    size_t n = strlen(name);

    if (n < 1 || n > DRX_STRIPE_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return strstr(name, "..") == NULL;
}

static int meta_path(const char *path, char *buf, size_t len)
{
    if ((size_t)snprintf(buf, len, "%s" DRX_STRIPE_SUFFIX, path) >= len)
        return -ENAMETOOLONG;
    return 0;
}

bool drx_stripe_exists(const char *path)
{
    char mp[PATH_MAX];
    struct stat st;

    return meta_path(path, mp, sizeof mp) == 0 && stat(mp, &st) == 0 && S_ISREG(st.st_mode);
}

int drx_stripe_subfile_path(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            char *buf, size_t len)
{
    int n;

    if (i >= m->layout.count || m->sub[i].dir >= s->cfg.stripe.ndirs)
        return -EINVAL;
    n = snprintf(buf, len, "%s/%s", s->cfg.stripe.dirs[m->sub[i].dir], m->sub[i].name);
    return (n < 0 || (size_t)n >= len) ? -ERANGE : n;
}

/* ---- layouts ------------------------------------------------------------------- */

int drx_stripe_layout_parse(const char *text, size_t ndirs, struct drx_stripe_layout *out,
                            struct drx_err *err)
{
    char buf[256];
    bool have_count = false, have_extent = false;
    struct drx_stripe_layout l = {0};
    char *save = NULL;

    if (ndirs > DRX_MAX_STRIPE_DIRS)
        ndirs = DRX_MAX_STRIPE_DIRS;
    if (!text || strlen(text) >= sizeof buf)
        return drx_err_set(err, EINVAL, "layout: expected \"count=N extent=BYTES\"");
    strcpy(buf, text);
    for (char *w = strtok_r(buf, " \t\n,", &save); w; w = strtok_r(NULL, " \t\n,", &save)) {
        uint64_t v;
        if (strncmp(w, "count=", 6) == 0 && !have_count) {
            if (drx_config_parse_bytes(w + 6, &v) < 0 || strpbrk(w + 6, "kKmMgGtT"))
                return drx_err_set(err, EINVAL, "layout: count \"%s\" is not a number", w + 6);
            if (v < 1 || v > ndirs)
                return drx_err_set(err, EINVAL,
                                   "layout: count=%llu is not in 1..%zu (the stripe dirs)",
                                   (unsigned long long)v, ndirs);
            l.count = (unsigned)v;
            have_count = true;
        } else if (strncmp(w, "extent=", 7) == 0 && !have_extent) {
            if (drx_config_parse_bytes(w + 7, &v) < 0)
                return drx_err_set(err, EINVAL, "layout: extent \"%s\" is not a byte count", w + 7);
            if (v < 1 || v > DRX_MAX_EXTENT)
                return drx_err_set(err, EINVAL, "layout: extent=%llu is not in 1..%llu",
                                   (unsigned long long)v, (unsigned long long)DRX_MAX_EXTENT);
            l.extent = v;
            have_extent = true;
        } else {
            return drx_err_set(err, EINVAL,
                               "layout: unexpected \"%s\", expected \"count=N extent=BYTES\"", w);
        }
    }
    if (!have_count || !have_extent)
        return drx_err_set(err, EINVAL, "layout: expected \"count=N extent=BYTES\"");
    *out = l;
    return 0;
}

int drx_stripe_layout_format(const struct drx_stripe_layout *l, char *buf, size_t len)
{
    int n = snprintf(buf, len, "count=%u extent=%llu", l->count, (unsigned long long)l->extent);

    return (n < 0 || (size_t)n >= len) ? -ERANGE : n;
}

int drx_stripe_layout_dir_get(const struct drx_store *s, const char *dir_path,
                              struct drx_stripe_layout *out, struct drx_err *err)
{
    char val[256];
    ssize_t n = getxattr(dir_path, DRX_STRIPE_XATTR, val, sizeof val - 1);
    int rc;

    if (n < 0) {
        if (errno == ENODATA || errno == ENOTSUP)
            return 0;
        if (errno == ERANGE)
            return drx_err_set(err, EINVAL, "%s: %s too long", dir_path, DRX_STRIPE_XATTR);
        return drx_err_set(err, errno, "%s: %s", dir_path, strerror(errno));
    }
    val[n] = '\0';
    rc = drx_stripe_layout_parse(val, s->cfg.stripe.ndirs, out, err);
    if (rc < 0) {
        drx_err_prefix(err, "%s: %s", dir_path, DRX_STRIPE_XATTR);
        return rc;
    }
    return 1;
}

int drx_stripe_layout_dir_set(const struct drx_store *s, const char *dir_path,
                              const struct drx_stripe_layout *l, struct drx_err *err)
{
    char val[DRX_STRIPE_LAYOUT_LEN];
    struct stat st;

    if (stat(dir_path, &st) < 0)
        return drx_err_set(err, errno, "%s: %s", dir_path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return drx_err_set(err, ENOTDIR, "%s: not a directory (a layout is set on directories)",
                           dir_path);
    if (!l) {
        if (removexattr(dir_path, DRX_STRIPE_XATTR) < 0 && errno != ENODATA)
            return drx_err_set(err, errno, "%s: %s", dir_path, strerror(errno));
        return 0;
    }
    if (l->count < 1 || l->count > s->cfg.stripe.ndirs)
        return drx_err_set(err, EINVAL, "count=%u is not in 1..%zu (the store's stripe dirs)",
                           l->count, s->cfg.stripe.ndirs);
    if (l->extent < 1 || l->extent > DRX_MAX_EXTENT)
        return drx_err_set(err, EINVAL, "extent=%llu is not in 1..%llu",
                           (unsigned long long)l->extent, (unsigned long long)DRX_MAX_EXTENT);
    drx_stripe_layout_format(l, val, sizeof val);
    if (setxattr(dir_path, DRX_STRIPE_XATTR, val, strlen(val), 0) < 0)
        return drx_err_set(err, errno, "%s: cannot set %s: %s", dir_path, DRX_STRIPE_XATTR,
                           strerror(errno));
    return 0;
}

int drx_stripe_layout_for_new(const struct drx_store *s, const char *dir_path,
                              struct drx_stripe_layout *out, struct drx_err *err)
{
    char cur[PATH_MAX];
    size_t rootlen = strlen(s->root);
    int n = drx_store_abspath(dir_path, cur, sizeof cur);

    if (n < 0)
        return drx_err_set(err, -n, "%s: %s", dir_path, strerror(-n));
    out->count = s->cfg.stripe.count;
    out->extent = s->cfg.stripe.extent;
    /* Only directories of this store count: walking on above the root would
     * let an unrelated directory decide. */
    bool inside = strcmp(s->root, "/") == 0 || (strncmp(cur, s->root, rootlen) == 0 &&
                                                (cur[rootlen] == '\0' || cur[rootlen] == '/'));
    if (!inside)
        return 0;
    for (;;) {
        struct drx_err e2 = {{0}};
        int rc = drx_stripe_layout_dir_get(s, cur, out, &e2);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            /* A bad value set behind the daemon's back must not stop file
             * creation: say so and let the next directory up decide. */
            drx_log(DRX_LOG_WARNING, "%s; ignored", e2.msg);
            out->count = s->cfg.stripe.count;
            out->extent = s->cfg.stripe.extent;
        }
        if (strlen(cur) <= rootlen)
            return 0;
        char *slash = strrchr(cur, '/');
        if (slash == cur)
            cur[1] = '\0';
        else
            *slash = '\0';
    }
}

/* ---- metafiles ----------------------------------------------------------------- */

static int bad_meta(struct drx_err *err, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad_meta(struct drx_err *err, const char *path, int line, const char *fmt, ...)
{
    char why[DRX_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    drx_log(DRX_LOG_WARNING, "%s:%d: refused metafile: %s", path, line, why);
    return drx_err_set(err, EIO, "%s:%d: bad metafile: %s", path, line, why);
}

static bool get_int(const config_setting_t *s, long long *v)
{
    int t = config_setting_type(s);

    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return false;
    *v = config_setting_get_int64(s);
    return true;
}

/* A metafile being checked: where it came from and what it gives. */
struct meta_parser {
    const char *path;
    size_t ndirs;
    struct drx_stripe_meta *m;
    const config_setting_t *subs;
    struct drx_err *err;
};

static int key_version(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v != 1)
        return bad_meta(p->err, p->path, line, "version must be 1");
    return 0;
}

static int key_extent(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 1 || (unsigned long long)v > DRX_MAX_EXTENT)
        return bad_meta(p->err, p->path, line, "extent must be an integer in 1..%llu",
                        (unsigned long long)DRX_MAX_EXTENT);
    p->m->layout.extent = (uint64_t)v;
    return 0;
}

static int key_count(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 1 || v > DRX_MAX_STRIPE_DIRS || (size_t)v > p->ndirs)
        return bad_meta(p->err, p->path, line,
                        "count must be an integer in 1..%zu (the store's stripe dirs)",
                        p->ndirs < DRX_MAX_STRIPE_DIRS ? p->ndirs : (size_t)DRX_MAX_STRIPE_DIRS);
    p->m->layout.count = (unsigned)v;
    return 0;
}

static int key_size(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 0 || (unsigned long long)v > DRX_STRIPE_MAX_SIZE)
        return bad_meta(p->err, p->path, line, "size must be an integer in 0..%llu",
                        (unsigned long long)DRX_STRIPE_MAX_SIZE);
    p->m->size = (uint64_t)v;
    return 0;
}

/* The list is checked once count is known (keys come in any order). */
static int key_subfiles(struct meta_parser *p, const config_setting_t *s, int line)
{
    if (config_setting_type(s) != CONFIG_TYPE_LIST)
        return bad_meta(p->err, p->path, line, "subfiles must be a list ( {dir; name}, ... )");
    p->subs = s;
    return 0;
}

/* Every key of a metafile, each required; "missing" names the first absent
 * one in this order. */
static const struct meta_key {
    const char *name;
    int (*check)(struct meta_parser *p, const config_setting_t *s, int line);
} meta_keys[] = {
    {"version", key_version}, {"extent", key_extent},     {"count", key_count},
    {"size", key_size},       {"subfiles", key_subfiles},
};
#define META_NKEYS (sizeof(meta_keys) / sizeof(meta_keys[0]))

/* Checks one top-level setting; marks its key in *seen. */
static int meta_setting(struct meta_parser *p, const config_setting_t *s, unsigned *seen)
{
    const char *k = config_setting_name(s);
    int line = config_setting_source_line(s);

    for (unsigned j = 0; j < META_NKEYS; j++) {
        if (strcmp(k, meta_keys[j].name) == 0) {
            *seen |= 1u << j;
            return meta_keys[j].check(p, s, line);
        }
    }
    return bad_meta(p->err, p->path, line, "unknown key %s", k);
}

/* The dir and name settings of subfile group g, and nothing else. */
static int subfile_settings(struct meta_parser *p, unsigned i, const config_setting_t *g,
                            const config_setting_t **d, const config_setting_t **nm)
{
    *d = *nm = NULL;
    for (int j = 0; j < config_setting_length(g); j++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)j);
        if (strcmp(config_setting_name(e), "dir") == 0)
            *d = e;
        else if (strcmp(config_setting_name(e), "name") == 0)
            *nm = e;
        else
            return bad_meta(p->err, p->path, config_setting_source_line(e),
                            "subfile %u: unknown key %s", i, config_setting_name(e));
    }
    return 0;
}

/* The name of subfile i: a plain name, not one of an earlier subfile in
 * the same directory. */
static int subfile_name(struct meta_parser *p, unsigned i, const config_setting_t *nm, int line)
{
    struct drx_stripe_meta *m = p->m;

    if (!nm || config_setting_type(nm) != CONFIG_TYPE_STRING)
        return bad_meta(p->err, p->path, nm ? (int)config_setting_source_line(nm) : line,
                        "subfile %u: name must be a string", i);
    const char *name = config_setting_get_string(nm);
    /* Absolute paths, "..", '/' and odd characters all end here: a subfile
     * can only be a plain name inside its stripe dir. */
    if (!drx_stripe_subfile_name_valid(name))
        return bad_meta(p->err, p->path, config_setting_source_line(nm),
                        "subfile %u: name \"%.80s\" is not a plain name inside its stripe "
                        "directory",
                        i, name);
    strcpy(m->sub[i].name, name);
    for (unsigned j = 0; j < i; j++)
        if (m->sub[j].dir == m->sub[i].dir && strcmp(m->sub[j].name, name) == 0)
            return bad_meta(p->err, p->path, config_setting_source_line(nm),
                            "subfile %u: same as subfile %u", i, j);
    return 0;
}

static int meta_subfile(struct meta_parser *p, unsigned i)
{
    const config_setting_t *g = config_setting_get_elem(p->subs, i), *d, *nm;
    int line = config_setting_source_line(g);
    long long v;

    if (config_setting_type(g) != CONFIG_TYPE_GROUP)
        return bad_meta(p->err, p->path, line,
                        "subfile %u must be a group { dir = N; name = \"...\"; }", i);
    int rc = subfile_settings(p, i, g, &d, &nm);
    if (rc < 0)
        return rc;
    if (!d || !get_int(d, &v) || v < 0 || (unsigned long long)v >= p->ndirs)
        return bad_meta(p->err, p->path, d ? (int)config_setting_source_line(d) : line,
                        "subfile %u: dir must be an index in 0..%zu", i, p->ndirs - 1);
    p->m->sub[i].dir = (unsigned)v;
    return subfile_name(p, i, nm, line);
}

/* Checks a parsed metafile and fills m. */
static int meta_parse(config_t *lc, const char *path, size_t ndirs, struct drx_stripe_meta *m,
                      struct drx_err *err)
{
    struct meta_parser p = {path, ndirs, m, NULL, err};
    const config_setting_t *root = config_root_setting(lc);
    unsigned seen = 0;
    int rc = 0;

    memset(m, 0, sizeof *m);
    for (int i = 0; i < config_setting_length(root) && rc == 0; i++)
        rc = meta_setting(&p, config_setting_get_elem(root, (unsigned)i), &seen);
    for (unsigned j = 0; j < META_NKEYS && rc == 0; j++)
        if (!(seen & (1u << j)))
            rc = bad_meta(err, path, 0, "missing %s", meta_keys[j].name);
    if (rc == 0 && config_setting_length(p.subs) != (int)m->layout.count)
        rc = bad_meta(err, path, config_setting_source_line(p.subs),
                      "%d subfiles listed, count is %u", config_setting_length(p.subs),
                      m->layout.count);
    for (unsigned i = 0; i < m->layout.count && rc == 0; i++)
        rc = meta_subfile(&p, i);
    return rc;
}

/* Reads and parses metafile mp; *st gets the identity of the file parsed.
 * A file refused for what it is (a symlink, a FIFO, too large, not
 * libconfig text, an @include) is -EIO, logged, like any bad metafile. */
static int meta_load_st(const char *mp, size_t ndirs, struct drx_stripe_meta *m, struct stat *st,
                        struct drx_err *err)
{
    struct drx_cfgfile cf;
    struct drx_err why = {{0}};
    bool refused;
    int rc;

    rc = drx_cfgfile_read(AT_FDCWD, mp, mp, 0, META_MAX_BYTES, &cf, &refused, &why);
    if (rc < 0) {
        if (!refused)
            return drx_err_set(err, -rc, "%s", why.msg);
        drx_log(DRX_LOG_WARNING, "refused metafile: %s", why.msg);
        return drx_err_set(err, EIO, "%s (bad metafile)", why.msg);
    }
    rc = meta_parse(&cf.cfg, mp, ndirs, m, err);
    if (rc == 0 && st)
        *st = cf.st;
    drx_cfgfile_fini(&cf);
    return rc;
}

int drx_stripe_meta_load(const char *metafile_path, size_t ndirs, struct drx_stripe_meta *m,
                         struct drx_err *err)
{
    return meta_load_st(metafile_path, ndirs, m, NULL, err);
}

int drx_stripe_stat(const struct drx_store *s, const char *path, struct drx_stripe_meta *m,
                    struct drx_err *err)
{
    char mp[PATH_MAX];

    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    return meta_load_st(mp, s->cfg.stripe.ndirs, m, NULL, err);
}

/* Decimal digits of the largest size (2^62), and of v. */
#define SIZE_DIGITS 19

static int digits(uint64_t v)
{
    int n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static int meta_format(const struct drx_stripe_meta *m, char *buf, size_t len)
{
    size_t n = 0;
    int w;

    w = snprintf(buf, len,
                 "# drxfs striped file (NAFS metafile): subfile i holds extents e with\n"
                 "# e mod count == i; dir indexes the store's stripe dirs.\n"
                 "version = 1;\nextent = %llu;\ncount = %u;\n",
                 (unsigned long long)m->layout.extent, m->layout.count);
    if (w < 0 || (size_t)w >= len)
        return -ERANGE;
    n = (size_t)w;
    /* The size is padded to the width of the largest size, so that it can
     * be rewritten in place, byte for byte, when the disk is too full for
     * a new metafile (meta_size_in_place). */
    w = snprintf(buf + n, len - n,
                 "size = %lldL;%-*s # padded: updated in place when full\n"
                 "subfiles = (\n",
                 (long long)m->size, SIZE_DIGITS - digits((uint64_t)m->size), "");
    if (w < 0 || (size_t)w >= len - n)
        return -ERANGE;
    n += (size_t)w;
    for (unsigned i = 0; i < m->layout.count; i++) {
        w = snprintf(buf + n, len - n, "  { dir = %u; name = \"%s\"; }%s\n", m->sub[i].dir,
                     m->sub[i].name, i + 1 < m->layout.count ? "," : "");
        if (w < 0 || (size_t)w >= len - n)
            return -ERANGE;
        n += (size_t)w;
    }
    w = snprintf(buf + n, len - n, ");\n");
    if (w < 0 || (size_t)w >= len - n)
        return -ERANGE;
    return (int)(n + (size_t)w);
}

static void split_path(const char *mp, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(mp, '/');

    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = mp;
    } else if (slash == mp) {
        snprintf(dir, dlen, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - mp), mp);
        *base = slash + 1;
    }
}

/* Writes m as metafile mp by temp file + rename (drx_replace_write).
 * noreplace: fail with -EEXIST instead of replacing.  sync: the file and its
 * directory are fsynced.  like: an existing metafile whose mode and owner
 * the new one keeps (NULL: `mode`).  *st_out: identity of the new file. */
static int meta_write(const char *mp, const struct drx_stripe_meta *m, bool noreplace, bool sync,
                      const struct stat *like, mode_t mode, struct stat *st_out)
{
    char text[8192];
    int len = meta_format(m, text, sizeof text);

    if (len < 0)
        return len;
    return drx_replace_write(
        mp, text, (size_t)len, like, mode,
        (noreplace ? DRX_REPLACE_NOREPLACE : 0) | (sync ? 0 : DRX_REPLACE_NOSYNC), st_out);
}

/* Writes m into mp itself, no temp file and no rename: only for temporary
 * metafiles (drx_stripe_create_temp), which fsck removes in whatever state a
 * crash left them.  flags: O_EXCL to create (with `mode`), O_TRUNC to
 * rewrite.  like: an existing metafile whose mode and owner it takes. */
static int meta_write_here(const char *mp, const struct drx_stripe_meta *m, int flags, mode_t mode,
                           const struct stat *like, bool sync, struct stat *st_out)
{
    char text[8192];
    int len = meta_format(m, text, sizeof text), fd, rc;

    if (len < 0)
        return len;
    fd = open(mp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, mode & 07777);
    if (fd < 0)
        return -errno;
    rc = 0;
    if (like)
        rc = drx_replace_take_owner(fd, like); /* the rule of replaced files */
    else if ((flags & O_EXCL) && fchmod(fd, mode & 07777) < 0)
        rc = -errno; /* exactly mode, whatever the umask */
    if (rc == 0)
        rc = drx_io_write_all(fd, text, (size_t)len);
    if (rc == 0 && sync && fsync(fd) < 0)
        rc = -errno;
    if (rc == 0 && st_out && fstat(fd, st_out) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* True when a and b describe the same file: layout and subfiles. */
static bool same_layout(const struct drx_stripe_meta *a, const struct drx_stripe_meta *b)
{
    if (a->layout.count != b->layout.count || a->layout.extent != b->layout.extent)
        return false;
    for (unsigned i = 0; i < a->layout.count; i++)
        if (a->sub[i].dir != b->sub[i].dir || strcmp(a->sub[i].name, b->sub[i].name) != 0)
            return false;
    return true;
}

/* Where text (a metafile) sets the size: the setting "size = 123L;" at the
 * start of a line and the blanks after it, the bytes an update may
 * rewrite.  *off, *n; false when there is none in that form. */
static bool size_span(const char *text, size_t len, size_t *off, size_t *n)
{
    for (size_t i = 0; i < len; i = (size_t)(strchrnul(text + i, '\n') - text) + 1) {
        size_t p = i + strspn(text + i, " \t");
        if (strncmp(text + p, "size", 4) != 0)
            continue;
        size_t q = p + 4;
        q += strspn(text + q, " \t");
        if (text[q] != '=' && text[q] != ':')
            continue;
        q++;
        q += strspn(text + q, " \t");
        size_t d = strspn(text + q, "0123456789");
        if (d == 0)
            continue;
        q += d;
        q += text[q] == 'L';
        q += strspn(text + q, " \t");
        if (text[q] != ';')
            continue;
        q++;
        q += strspn(text + q, " \t");
        *off = p;
        *n = q - p;
        return true;
    }
    return false;
}

/* The metafile update for a full disk: records m->size in metafile mp (the
 * file `was`, whose text gave m under the persist lock) by rewriting its
 * size setting in place, when the new value fits the bytes the old one
 * holds (drx pads it to the widest size).  like: an owner and mode to give
 * it (a temporary being committed), or NULL.
 *
 * Why this is as safe as the atomic replacement it stands in for: only the
 * bytes of the size setting change, with one pwrite of the same number of
 * bytes inside the first 512 bytes of the file.  The file keeps its length,
 * inode and blocks, so (on ext4, xfs, tmpfs) nothing is allocated; on a
 * copy-on-write filesystem the write itself may fail with ENOSPC, and then
 * the caller gives the unrecordable bytes back.  A process killed at any
 * point leaves the old text or the new one (a pwrite within one page lands
 * whole in the page cache); a power loss leaves the old sector or the new
 * one (disks write a sector whole).  The data the new size covers was
 * synced before (persist_locked), as for a replacement.  The text is
 * parsed before it is written: it must give the same file with the new
 * size.  A metafile with other hard links is never written in place (its
 * other name would change too).  Returns 0, -EOPNOTSUPP when the update
 * cannot be made in place, or -errno. */
static int meta_size_in_place(const char *mp, const struct stat *was,
                              const struct drx_stripe_meta *m, size_t ndirs,
                              const struct stat *like, bool sync, struct stat *st_out)
{
    char *text = NULL, field[64];
    struct drx_stripe_meta check;
    struct stat st;
    size_t off, n;
    ssize_t len;
    config_t lc;
    int fd, w, rc = 0;

    fd = open(mp, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        st.st_dev != was->st_dev || st.st_ino != was->st_ino || st.st_size > META_MAX_BYTES) {
        rc = -EOPNOTSUPP;
        goto out;
    }
    text = malloc((size_t)st.st_size + 1);
    if (!text) {
        rc = -ENOMEM;
        goto out;
    }
    len = pread(fd, text, (size_t)st.st_size, 0);
    if (len < 0) {
        rc = -errno;
        goto out;
    }
    text[len] = '\0';
    w = snprintf(field, sizeof field, "size = %lluL;", (unsigned long long)m->size);
    if (!size_span(text, (size_t)len, &off, &n) || (size_t)w > n || off + n > 512) {
        rc = -EOPNOTSUPP;
        goto out;
    }
    memset(field + w, ' ', n - (size_t)w);
    memcpy(text + off, field, n);
    /* The new text, as a reader will parse it: this file, this size. */
    if (drx_cfgfile_parse(text, (size_t)len, mp, 0, &lc, NULL, NULL) < 0) {
        rc = -EOPNOTSUPP;
        goto out;
    }
    rc = meta_parse(&lc, mp, ndirs, &check, NULL);
    config_destroy(&lc);
    if (rc < 0 || check.size != m->size || !same_layout(&check, m)) {
        rc = -EOPNOTSUPP;
        goto out;
    }
    if (like && (rc = drx_replace_take_owner(fd, like)) < 0)
        goto out;
    rc = drx_io_pwrite_all(fd, field, n, off);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (rc == 0 && sync)
        rc = drx_io_fsync_parent(mp);
    if (rc == 0 && st_out && fstat(fd, st_out) < 0)
        rc = -errno;
out:
    free(text);
    close(fd);
    return rc;
}

/* ---- subfiles -------------------------------------------------------------------- */

/* Why a file with this stat cannot be a subfile, or NULL.  A hard link's
 * other name may be any file its maker could write, outside the store:
 * reading it would serve that file, writing or truncating it would change
 * it, so only a file with one link is used (SPEC 9). */
static const char *subfile_refusal(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "is not a regular file";
    if (st->st_nlink > 1)
        return "has other hard links";
    return NULL;
}

int drx_stripe_subfile_check(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                             struct stat *st, struct drx_err *err)
{
    const struct drx_stripe_subfile *sf = &m->sub[i];
    const char *why;
    struct stat buf;
    int dfd;

    if (!st)
        st = &buf;
    if (i >= m->layout.count || sf->dir >= s->cfg.stripe.ndirs ||
        !drx_stripe_subfile_name_valid(sf->name))
        return drx_err_set(err, EIO, "subfile %u: not a subfile name", i);
    dfd = s->dir_fds[sf->dir];
    if (dfd < 0)
        return drx_err_set(err, ENOENT, "subfile %u (%s/%s): stripe directory unusable", i,
                           s->cfg.stripe.dirs[sf->dir], sf->name);
    if (fstatat(dfd, sf->name, st, AT_SYMLINK_NOFOLLOW) < 0)
        return drx_err_set(err, errno, "subfile %u (%s/%s): %s", i, s->cfg.stripe.dirs[sf->dir],
                           sf->name, strerror(errno));
    why = S_ISLNK(st->st_mode) ? "is a symbolic link" : subfile_refusal(st);
    if (why) /* not logged: the caller reports it, once */
        return drx_err_set(err, EIO, "subfile %u (%s/%s) %s (refused)", i,
                           s->cfg.stripe.dirs[sf->dir], sf->name, why);
    return 0;
}

int drx_stripe_subfile_open(const struct drx_store *s, const struct drx_stripe_meta *m, unsigned i,
                            int flags, mode_t mode, const char *who)
{
    const struct drx_stripe_subfile *sf = &m->sub[i];
    const char *why;
    struct stat st;
    int fd, dfd;

    if (i >= m->layout.count || sf->dir >= s->cfg.stripe.ndirs ||
        !drx_stripe_subfile_name_valid(sf->name))
        return -EIO;
    dfd = s->dir_fds[sf->dir];
    if (dfd < 0)
        return -ENOENT;
    fd = openat(dfd, sf->name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP) {
            drx_log(DRX_LOG_ERROR, "%s: subfile %u (%s/%s) is a symbolic link: refused", who, i,
                    s->cfg.stripe.dirs[sf->dir], sf->name);
            return -EIO;
        }
        return -e;
    }
    /* On the descriptor: what was checked is what is used. */
    why = fstat(fd, &st) < 0 ? "cannot be examined" : subfile_refusal(&st);
    if (why) {
        drx_log(DRX_LOG_ERROR, "%s: subfile %u (%s/%s) %s: refused", who, i,
                s->cfg.stripe.dirs[sf->dir], sf->name, why);
        close(fd);
        return -EIO;
    }
    /* O_NONBLOCK only guarded the open against a FIFO planted in its place. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static void random_id(uint64_t *id)
{
    if (getrandom(id, sizeof *id, 0) != (ssize_t)sizeof *id) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *id = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
    }
}

/* ---- handles ------------------------------------------------------------------------ */

static struct drx_stripe *handle_new(struct drx_store *s, const char *path, int mode)
{
    struct drx_stripe *f = calloc(1, sizeof *f);

    if (!f)
        return NULL;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return NULL;
    }
    f->s = s;
    f->mode = mode;
    for (int i = 0; i < DRX_MAX_STRIPE_DIRS; i++)
        f->fds[i] = -1;
    pthread_rwlock_init(&f->io, NULL);
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

static void handle_free(struct drx_stripe *f)
{
    for (int i = 0; i < DRX_MAX_STRIPE_DIRS; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    pthread_rwlock_destroy(&f->io);
    pthread_mutex_destroy(&f->lock);
    free(f->path);
    free(f);
}

/* True when m (a metafile read from disk) describes the file f opened: the
 * same layout and subfiles.  Not the inode: every persist replaces the
 * metafile, so another handle's persist (another process, or a second
 * handle in this one) gives the same file a new inode. */
static bool same_file(const struct drx_stripe *f, const struct drx_stripe_meta *m)
{
    return same_layout(&f->meta, m);
}

static void set_identity(struct drx_stripe *f, const struct stat *st)
{
    f->meta_dev = st->st_dev;
    f->meta_ino = st->st_ino;
    f->meta_ctim = st->st_ctim;
}

static int lock_fd(const struct drx_stripe *f)
{
    for (unsigned i = 0; i < f->meta.layout.count; i++)
        if (f->fds[i] >= 0)
            return f->fds[i];
    return -1;
}

/* fdatasync of every subfile, and once per handle fsync of the stripe
 * directories holding them (a new file's subfile names must be durable
 * before a metafile naming them with a size). */
static int sync_subfiles(struct drx_stripe *f)
{
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};
    int rc = 0;

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        if (f->fds[i] < 0)
            continue;
        if (fdatasync(f->fds[i]) < 0 && rc == 0)
            rc = -errno;
        dirs[f->meta.sub[i].dir] = true;
    }
    if (rc == 0 && !f->dirs_synced) {
        for (size_t d = 0; d < f->s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
            if (dirs[d] && f->s->dir_fds[d] >= 0 && fsync(f->s->dir_fds[d]) < 0 && rc == 0)
                rc = -errno;
        f->dirs_synced = rc == 0;
    }
    return rc;
}

static int cut_subfiles(struct drx_stripe *f, uint64_t size);

/* Gives back what a full disk does not let this handle record: the size
 * falls back to the recorded one and the subfiles are cut to it, so the
 * space is free at once rather than after an rm or fsck --repair (f->io
 * held exclusively, so every finished write is under the size; f->lock and
 * the persist flock held).  recorded: the size in the metafile. */
static void give_back_locked(struct drx_stripe *f, uint64_t recorded)
{
    int rc;

    drx_log(DRX_LOG_WARNING,
            "%s" DRX_STRIPE_SUFFIX ": no space to record size %llu; the file is cut back to the "
            "recorded %llu",
            f->path, (unsigned long long)f->size, (unsigned long long)recorded);
    f->size = f->persisted = recorded;
    f->truncated = false;
    rc = cut_subfiles(f, recorded);
    if (rc < 0)
        drx_log(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": cutting back: %s", f->path,
                strerror(-rc));
}

/* Only durability is missing: fsync the metafile as it is, and its
 * directory. */
static int meta_fsync(const char *mp)
{
    int rc = 0, fd = open(mp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0 || fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = drx_io_fsync_parent(mp);
    return rc;
}

/* Replaces metafile mp (identity *st) by m; on a full disk rewrites the
 * size in the old one instead (meta_size_in_place says why that is safe).
 * *nst: the identity of the metafile written. */
static int meta_replace_size(const char *mp, const struct stat *st, const struct drx_stripe_meta *m,
                             size_t ndirs, bool sync, struct stat *nst)
{
    int rc = meta_write(mp, m, false, sync, st, 0, nst);

    if (rc == -ENOSPC || rc == -EDQUOT) {
        /* No block for a new metafile. */
        int irc = meta_size_in_place(mp, st, m, ndirs, NULL, sync, nst);
        if (irc == 0)
            rc = 0;
        else
            drx_log(DRX_LOG_DEBUG, "%s: size not recordable in place either: %s", mp,
                    strerror(-irc));
    }
    return rc;
}

/* Records f->size, which differs from disk->size, in metafile mp (identity
 * *st).  give_back as for persist_locked. */
static int persist_new_size(struct drx_stripe *f, const char *mp,
                            const struct drx_stripe_meta *disk, const struct stat *st, bool sync,
                            bool give_back)
{
    struct drx_stripe_meta m = f->meta;
    struct stat nst;
    int rc;

    m.size = f->size;
    /* A size past the recorded one covers bytes this handle wrote (or a
     * truncate's cut): they reach the disk before the metafile does, or a
     * power loss could leave a size over bytes never written.  At most once
     * per DRX_STRIPE_PERSIST_BYTES of growth, and at close. */
    if (f->size > disk->size && f->wgen != f->synced_gen) {
        rc = sync_subfiles(f);
        if (rc < 0)
            return rc;
        f->synced_gen = f->wgen;
    }
    rc = meta_replace_size(mp, st, &m, f->s->cfg.stripe.ndirs, sync, &nst);
    if (rc == 0)
        set_identity(f, &nst);
    else if ((rc == -ENOSPC || rc == -EDQUOT) && give_back)
        give_back_locked(f, disk->size);
    return rc;
}

/* Writes the in-memory size to the metafile (f->lock held).  See the
 * header for the merge with other processes' sizes.  give_back (f->io held
 * exclusively): when even the in-place update finds no space, give the
 * unrecordable bytes back (give_back_locked). */
static int persist_locked(struct drx_stripe *f, bool sync, bool give_back)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta disk;
    struct stat st;
    int lfd = lock_fd(f), rc = 0;

    if (f->size == f->persisted && !f->truncated && (!sync || f->meta_synced))
        return 0;
    if (meta_path(f->path, mp, sizeof mp) < 0)
        return -ENAMETOOLONG;
    if (lfd >= 0)
        while (flock(lfd, LOCK_EX) < 0 && errno == EINTR)
            ;
    rc = meta_load_st(mp, f->s->cfg.stripe.ndirs, &disk, &st, NULL);
    if (rc == -ENOENT || (rc == 0 && !same_file(f, &disk))) {
        /* Unlinked, renamed away or replaced: the name is no longer this
         * file, and writing it would resurrect or clobber another file.
         * The size stays pending: after a rename the new name comes with
         * drx_stripe_set_path() and the next persist records it there. */
        drx_log(DRX_LOG_DEBUG, "%s: metafile gone or replaced; size %llu not recorded (yet)", mp,
                (unsigned long long)f->size);
        rc = 0;
        goto out;
    }
    if (rc < 0)
        goto out;
    if (!f->truncated && disk.size > f->size)
        f->size = disk.size; /* another process extended it further */
    if (f->size == disk.size && !sync) {
        f->persisted = f->size;
        f->truncated = false;
        goto out;
    }
    if (f->size == disk.size)
        rc = meta_fsync(mp);
    else
        rc = persist_new_size(f, mp, &disk, &st, sync, give_back);
    if (rc == 0) {
        f->persisted = f->size;
        f->truncated = false;
        f->meta_synced = sync;
    }
out:
    if (lfd >= 0)
        flock(lfd, LOCK_UN);
    return rc;
}

/* persist_locked() from outside the locks.  give_back: on a full disk,
 * once more with writes shut out, so that what cannot be recorded is given
 * back (the writer learns of it from this call's -ENOSPC). */
static int persist(struct drx_stripe *f, bool sync, bool give_back)
{
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return 0;
    pthread_mutex_lock(&f->lock);
    rc = persist_locked(f, sync, false);
    pthread_mutex_unlock(&f->lock);
    if (give_back && (rc == -ENOSPC || rc == -EDQUOT)) {
        pthread_rwlock_wrlock(&f->io);
        pthread_mutex_lock(&f->lock);
        rc = persist_locked(f, sync, true);
        pthread_mutex_unlock(&f->lock);
        pthread_rwlock_unlock(&f->io);
    }
    return rc;
}

int drx_stripe_flush(struct drx_stripe *f)
{
    return persist(f, false, true);
}

int drx_stripe_fsync(struct drx_stripe *f, bool datasync)
{
    int rc = 0;
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};
    uint64_t gen;

    if (f->mode != DRX_STRIPE_RDWR)
        return 0;
    /* Changes counted before the syncs below are covered by them. */
    pthread_mutex_lock(&f->lock);
    gen = f->wgen;
    pthread_mutex_unlock(&f->lock);
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        if (f->fds[i] < 0)
            continue;
        if ((datasync ? fdatasync(f->fds[i]) : fsync(f->fds[i])) < 0 && rc == 0)
            rc = -errno;
        dirs[f->meta.sub[i].dir] = true;
    }
    /* The subfiles' names must be durable before a metafile that names them. */
    for (size_t d = 0; d < f->s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
        if (dirs[d] && f->s->dir_fds[d] >= 0 && fsync(f->s->dir_fds[d]) < 0 && rc == 0)
            rc = -errno;
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&f->lock);
    if (gen - f->synced_gen < ((uint64_t)1 << 63)) /* gen is not older */
        f->synced_gen = gen;
    f->dirs_synced = true;
    pthread_mutex_unlock(&f->lock);
    return persist(f, true, true);
}

/* drx_stripe_create() with the metafile at mp: NAME.nafs (temp false), or
 * a temporary name, written in place (temp true); -EEXIST when mp exists by
 * then. */
static int create_meta(struct drx_store *s, const char *path, const char *mp, bool temp,
                       const struct drx_stripe_layout *l, mode_t mode, struct drx_stripe **out,
                       struct drx_err *err)
{
    char dir[PATH_MAX];
    const char *base;
    struct drx_stripe_layout lay;
    struct drx_stripe *f = NULL;
    struct stat st;
    int rc;

    if (l) {
        lay = *l;
    } else {
        split_path(path, dir, sizeof dir, &base);
        rc = drx_stripe_layout_for_new(s, dir, &lay, err);
        if (rc < 0)
            return rc;
    }
    if (lay.count < 1 || lay.count > s->cfg.stripe.ndirs || lay.count > DRX_MAX_STRIPE_DIRS)
        return drx_err_set(err, EINVAL, "%s: count=%u is not in 1..%zu (the store's stripe dirs)",
                           path, lay.count, s->cfg.stripe.ndirs);
    if (lay.extent < 1 || lay.extent > DRX_MAX_EXTENT)
        return drx_err_set(err, EINVAL, "%s: extent=%llu is not in 1..%llu", path,
                           (unsigned long long)lay.extent, (unsigned long long)DRX_MAX_EXTENT);
    f = handle_new(s, path, DRX_STRIPE_RDWR);
    if (!f)
        return drx_err_set(err, ENOMEM, "out of memory");
    f->meta.layout = lay;

    /* Subfiles first: a crash now leaves orphans for fsck, never a metafile
     * naming subfiles that do not exist.  An id collision is retried. */
    for (int attempt = 0; attempt < 8; attempt++) {
        uint64_t id;
        random_id(&id);
        unsigned start = (unsigned)(id % s->cfg.stripe.ndirs);
        rc = 0;
        for (unsigned i = 0; i < lay.count; i++) {
            f->meta.sub[i].dir = (start + i) % (unsigned)s->cfg.stripe.ndirs;
            snprintf(f->meta.sub[i].name, sizeof f->meta.sub[i].name, "%016llx.%u",
                     (unsigned long long)id, i);
        }
        for (unsigned i = 0; i < lay.count && rc == 0; i++) {
            int fd =
                drx_stripe_subfile_open(s, &f->meta, i, O_RDWR | O_CREAT | O_EXCL, mode & 0666, mp);
            if (fd < 0) {
                rc = fd;
                if (fd == -ENOENT)
                    rc = -EIO; /* stripe dir missing */
                drx_err_set(err, -rc, "%s: cannot create subfile in %s: %s", path,
                            s->cfg.stripe.dirs[f->meta.sub[i].dir], strerror(-rc));
                for (unsigned j = 0; j < i; j++) {
                    close(f->fds[j]);
                    f->fds[j] = -1;
                    unlinkat(s->dir_fds[f->meta.sub[j].dir], f->meta.sub[j].name, 0);
                }
            } else {
                f->fds[i] = fd;
            }
        }
        if (rc != -EEXIST)
            break;
    }
    if (rc < 0)
        goto out;
    f->meta.size = 0;
    if (temp)
        rc = meta_write_here(mp, &f->meta, O_EXCL, mode, NULL, false, &st);
    else
        rc = meta_write(mp, &f->meta, true, false, NULL, mode, &st);
    if (rc < 0) {
        drx_err_set(err, -rc, "%s: %s", mp, strerror(-rc));
        for (unsigned j = 0; j < lay.count; j++)
            unlinkat(s->dir_fds[f->meta.sub[j].dir], f->meta.sub[j].name, 0);
        goto out;
    }
    set_identity(f, &st);
    f->meta_synced = false;
    if (out) {
        *out = f;
        f = NULL;
    }
    rc = 0;
out:
    if (f)
        handle_free(f);
    return rc;
}

int drx_stripe_create(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                      mode_t mode, struct drx_stripe **out, struct drx_err *err)
{
    char mp[PATH_MAX];
    struct stat st;

    if (out)
        *out = NULL;
    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    if (lstat(mp, &st) == 0)
        return drx_err_set(err, EEXIST, "%s: exists", mp);
    return create_meta(s, path, mp, false, l, mode, out, err);
}

/* ---- files built behind a handle's back ------------------------------------------ */

int drx_stripe_create_temp(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                           mode_t mode, char *tmp, size_t tmplen, struct drx_err *err)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char mp[PATH_MAX], dir[PATH_MAX];
    const char *base;
    int rc = -EEXIST;

    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    split_path(mp, dir, sizeof dir, &base);
    /* `.NAME.nafs.XXXXXX`, as meta_write's temporaries: a name the daemon
     * hides and fsck knows as a leftover of an interrupted update. */
    for (int attempt = 0; attempt < 8 && rc == -EEXIST; attempt++) {
        uint64_t id;
        char x[7];
        random_id(&id);
        for (int i = 0; i < 6; i++, id /= sizeof abc - 1)
            x[i] = abc[id % (sizeof abc - 1)];
        x[6] = '\0';
        if ((size_t)snprintf(tmp, tmplen, "%s/.%s.%s", dir, base, x) >= tmplen)
            return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
        rc = create_meta(s, path, tmp, true, l, mode, NULL, err);
    }
    return rc;
}

int drx_stripe_open(struct drx_store *s, const char *path, int mode, struct drx_stripe **out,
                    struct drx_err *err)
{
    char mp[PATH_MAX];
    struct drx_stripe *f;
    struct stat st;
    int rc;

    *out = NULL;
    if (mode != DRX_STRIPE_RDONLY && mode != DRX_STRIPE_RDWR)
        return drx_err_set(err, EINVAL, "%s: bad open mode %d", path, mode);
    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    f = handle_new(s, path, mode);
    if (!f)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = meta_load_st(mp, s->cfg.stripe.ndirs, &f->meta, &st, err);
    if (rc < 0)
        goto out;
    f->size = f->persisted = f->meta.size;
    set_identity(f, &st);
    f->meta_synced = true; /* as far as we know: we did not write it */
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        int fd = drx_stripe_subfile_open(s, &f->meta, i,
                                         mode == DRX_STRIPE_RDWR ? O_RDWR : O_RDONLY, 0, mp);
        if (fd == -ENOENT || fd == -EIO) {
            /* Missing or refused: its extents fail with EIO, the rest of the
             * file stays usable. */
            if (fd == -ENOENT)
                drx_log(DRX_LOG_WARNING, "%s: subfile %u (%s) is missing", mp, i,
                        f->meta.sub[i].name);
            atomic_store(&f->warned[i], true);
            continue;
        }
        if (fd < 0) {
            rc = drx_err_set(err, -fd, "%s: subfile %u (%s): %s", mp, i, f->meta.sub[i].name,
                             strerror(-fd));
            goto out;
        }
        f->fds[i] = fd;
    }
    *out = f;
    f = NULL;
    rc = 0;
out:
    if (f)
        handle_free(f);
    return rc;
}

int drx_stripe_close(struct drx_stripe *f)
{
    int rc;

    if (!f)
        return 0;
    rc = drx_stripe_flush(f);
    handle_free(f);
    return rc;
}

uint64_t drx_stripe_size(struct drx_stripe *f)
{
    uint64_t v;

    pthread_mutex_lock(&f->lock);
    v = f->size;
    pthread_mutex_unlock(&f->lock);
    return v;
}

void drx_stripe_layout(const struct drx_stripe *f, struct drx_stripe_layout *out)
{
    *out = f->meta.layout;
}

void drx_stripe_meta_get(struct drx_stripe *f, struct drx_stripe_meta *out)
{
    *out = f->meta;
    out->size = drx_stripe_size(f);
}

int drx_stripe_set_path(struct drx_stripe *f, const char *path)
{
    char *copy = strdup(path);

    if (!copy)
        return -ENOMEM;
    pthread_mutex_lock(&f->lock);
    free(f->path);
    f->path = copy;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

int drx_stripe_rename_handle(struct drx_stripe *f, const char *to, unsigned flags,
                             struct drx_err *err)
{
    char *copy = strdup(to);
    int rc;

    if (!copy)
        return drx_err_set(err, ENOMEM, "out of memory");
    /* f->lock keeps this handle's persists out from between the rename and
     * the new path: one that read the metafile under the old name before
     * the rename would otherwise write it back there after it, a second
     * metafile naming the same subfiles. */
    pthread_mutex_lock(&f->lock);
    rc = drx_stripe_rename(f->s, f->path, to, flags, err);
    if (rc == 0) {
        free(f->path);
        f->path = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&f->lock);
    free(copy);
    return rc;
}

int drx_stripe_reload(struct drx_stripe *f)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta m;
    struct stat st;
    int rc;

    pthread_mutex_lock(&f->lock);
    rc = meta_path(f->path, mp, sizeof mp);
    if (rc < 0)
        goto out;
    if (stat(mp, &st) == 0 && st.st_ino == f->meta_ino && st.st_dev == f->meta_dev &&
        st.st_ctim.tv_sec == f->meta_ctim.tv_sec && st.st_ctim.tv_nsec == f->meta_ctim.tv_nsec) {
        rc = 0;
        goto out;
    }
    rc = meta_load_st(mp, f->s->cfg.stripe.ndirs, &m, &st, NULL);
    if (rc < 0)
        goto out;
    if (!same_file(f, &m)) {
        rc = -ESTALE; /* another file now has this name */
        goto out;
    }
    set_identity(f, &st);
    if (f->size != f->persisted || f->truncated) {
        /* Our own changes are newer than the disk's; the next persist
         * merges a larger size from it. */
        rc = 0;
        goto out;
    }
    rc = m.size != f->size;
    f->size = f->persisted = m.size;
out:
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* ---- I/O ------------------------------------------------------------------------------ */

static int missing(struct drx_stripe *f, unsigned i)
{
    if (!atomic_exchange(&f->warned[i], true))
        drx_log(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": subfile %u (%s) is unavailable", f->path,
                i, f->meta.sub[i].name);
    return -EIO;
}

ssize_t drx_stripe_read(struct drx_stripe *f, void *buf, size_t len, uint64_t off)
{
    unsigned char *p = buf;
    uint64_t size = drx_stripe_size(f);
    size_t done = 0;

    if (off >= size || len == 0)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    while (done < len) {
        struct drx_stripe_piece pc;
        drx_stripe_locate(&f->meta.layout, off + done, len - done, &pc);
        size_t n = (size_t)pc.len, got = 0;
        uint64_t so = pc.offset;
        int fd = f->fds[pc.subfile];

        if (fd < 0)
            return done ? (ssize_t)done : missing(f, pc.subfile);
        /* Not drx_io_pread_all: the end of a subfile is a hole here, not an
         * error. */
        while (got < n) {
            ssize_t r = pread(fd, p + done + got, n - got, (off_t)(so + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return done ? (ssize_t)done : -errno;
            if (r == 0) {
                /* Short subfile: a hole up to the logical size. */
                memset(p + done + got, 0, n - got);
                break;
            }
            got += (size_t)r;
        }
        done += n;
    }
    return (ssize_t)done;
}

/* After a run cut short by a full disk: the bytes it did write lie past the
 * size, unseen, holding space; cut them now.  Writers are shut out, so
 * every finished write is under the size, and the recorded size (another
 * process may have written further) is never cut below. */
static void cut_unrecorded(struct drx_stripe *f)
{
    char mp[PATH_MAX];
    struct drx_stripe_meta disk;
    uint64_t keep;
    int lfd, rc;

    pthread_rwlock_wrlock(&f->io);
    pthread_mutex_lock(&f->lock);
    keep = f->size;
    lfd = lock_fd(f);
    if (lfd >= 0)
        while (flock(lfd, LOCK_EX) < 0 && errno == EINTR)
            ;
    if (meta_path(f->path, mp, sizeof mp) == 0 &&
        meta_load_st(mp, f->s->cfg.stripe.ndirs, &disk, NULL, NULL) == 0 && same_file(f, &disk) &&
        disk.size > keep)
        keep = disk.size;
    rc = cut_subfiles(f, keep);
    if (rc < 0)
        drx_log(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": cutting an unfinished write: %s",
                f->path, strerror(-rc));
    if (lfd >= 0)
        flock(lfd, LOCK_UN);
    pthread_mutex_unlock(&f->lock);
    pthread_rwlock_unlock(&f->io);
}

ssize_t drx_stripe_write(struct drx_stripe *f, const void *buf, size_t len, uint64_t off)
{
    const unsigned char *p = buf;
    size_t done = 0;
    int rc = 0;
    bool grown = false;

    if (f->mode != DRX_STRIPE_RDWR)
        return -EBADF;
    if (len == 0)
        return 0;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    if (off > DRX_STRIPE_MAX_SIZE || len > DRX_STRIPE_MAX_SIZE - off)
        return -EFBIG;
    pthread_rwlock_rdlock(&f->io);
    while (done < len) {
        struct drx_stripe_piece pc;
        drx_stripe_locate(&f->meta.layout, off + done, len - done, &pc);
        size_t n = (size_t)pc.len;

        if (f->fds[pc.subfile] < 0) {
            rc = missing(f, pc.subfile);
            break;
        }
        /* A run cut short (ENOSPC) counts for nothing: its bytes lie beyond
         * the size, unseen, and a later grow cuts them off. */
        rc = drx_io_pwrite_all(f->fds[pc.subfile], p + done, n, pc.offset);
        if (rc < 0)
            break;
        done += n;
    }
    if (done > 0) {
        /* Only now, with the bytes in the subfiles, may the size cover them. */
        pthread_mutex_lock(&f->lock);
        if (off + done > f->size)
            f->size = off + done;
        f->wgen++;
        grown = f->size > f->persisted && f->size - f->persisted >= DRX_STRIPE_PERSIST_BYTES;
        pthread_mutex_unlock(&f->lock);
    }
    pthread_rwlock_unlock(&f->io);
    if (rc == -ENOSPC || rc == -EDQUOT)
        cut_unrecorded(f);
    if (grown) {
        /* No give-back here: this write succeeded; a size that cannot be
         * recorded is the close's (or fsync's) error. */
        int prc = persist(f, false, false);
        if (prc < 0)
            drx_log(DRX_LOG_WARNING, "%s" DRX_STRIPE_SUFFIX ": cannot record size: %s", f->path,
                    strerror(-prc));
    }
    return done > 0 ? (ssize_t)done : rc;
}

/* Cuts every subfile to what `size` needs, when longer (f->io held
 * exclusively). */
static int cut_subfiles(struct drx_stripe *f, uint64_t size)
{
    int rc = 0;

    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        struct stat st;
        uint64_t want = drx_stripe_subfile_len(&f->meta.layout, i, size);
        if (f->fds[i] < 0)
            continue;
        if (fstat(f->fds[i], &st) < 0) {
            rc = rc ? rc : -errno;
            continue;
        }
        if ((uint64_t)st.st_size > want) {
            if (ftruncate(f->fds[i], (off_t)want) < 0)
                rc = rc ? rc : -errno;
            f->wgen++; /* a later size over the cut needs it durable */
        }
    }
    return rc;
}

int drx_stripe_truncate(struct drx_stripe *f, uint64_t size)
{
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return -EBADF;
    if (size > DRX_STRIPE_MAX_SIZE)
        return -EFBIG;
    pthread_rwlock_wrlock(&f->io);
    pthread_mutex_lock(&f->lock);
    uint64_t old = f->size;
    if (size < old) {
        /* Metafile first, and durable (fsync of it and its directory): a
         * crash before the subfiles are cut leaves bytes beyond the size
         * (fsck trims them), never a size past the data, even when the cut
         * reached the disk and the new metafile did not. */
        f->size = size;
        f->truncated = true;
        rc = persist_locked(f, true, true);
        if (rc == 0)
            rc = cut_subfiles(f, size);
    } else {
        /* Stale bytes beyond the old size (a crashed writer's, or a cut that
         * did not finish) would show through the new hole: cut them first. */
        rc = cut_subfiles(f, old);
        if (rc == 0) {
            f->size = size;
            f->truncated = true;
            rc = persist_locked(f, false, true);
        }
    }
    pthread_mutex_unlock(&f->lock);
    pthread_rwlock_unlock(&f->io);
    return rc;
}

/* ---- names -------------------------------------------------------------------------- */

/* drx_stripe_unlink() of metafile mp (path: the name for messages). */
static int unlink_meta(struct drx_store *s, const char *path, const char *mp, struct drx_err *err)
{
    struct drx_stripe_meta m;
    struct drx_err e2 = {{0}};
    int rc;

    rc = meta_load_st(mp, s->cfg.stripe.ndirs, &m, NULL, &e2);
    if (rc == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: no such striped file", path);
    if (rc < 0 && rc != -EIO)
        return drx_err_set(err, -rc, "%s", e2.msg);
    bool valid = rc == 0;
    /* Metafile first: a crash after it leaves orphan subfiles (fsck), never
     * a metafile naming subfiles that are gone. */
    if (unlink(mp) < 0)
        return drx_err_set(err, errno, "%s: %s", mp, strerror(errno));
    if (!valid) {
        drx_log(DRX_LOG_WARNING,
                "%s: removed a bad metafile; its subfiles (if any) are left for "
                "drx fsck",
                mp);
        return 0;
    }
    for (unsigned i = 0; i < m.layout.count; i++) {
        int dfd = s->dir_fds[m.sub[i].dir];
        if (dfd < 0 || unlinkat(dfd, m.sub[i].name, 0) < 0) {
            if (dfd >= 0 && errno != ENOENT)
                drx_log(DRX_LOG_WARNING, "%s: cannot remove subfile %s: %s", mp, m.sub[i].name,
                        strerror(errno));
        }
    }
    return 0;
}

int drx_stripe_unlink(struct drx_store *s, const char *path, struct drx_err *err)
{
    char mp[PATH_MAX];

    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    return unlink_meta(s, path, mp, err);
}

/* drx_stripe_rename() of metafile mfrom to mto (from: the name for
 * messages). */
static int rename_meta(struct drx_store *s, const char *from, const char *mfrom, const char *mto,
                       unsigned flags, struct drx_err *err)
{
    struct drx_stripe_meta src, old;
    bool have_old = false;
    int rc;

    rc = meta_load_st(mfrom, s->cfg.stripe.ndirs, &src, NULL, NULL);
    bool src_ok = rc == 0;
    if (rc == -ENOENT)
        return drx_err_set(err, ENOENT, "%s: no such striped file", from);
    if (!(flags & RENAME_NOREPLACE))
        have_old = meta_load_st(mto, s->cfg.stripe.ndirs, &old, NULL, NULL) == 0;
    if (flags & RENAME_NOREPLACE)
        rc = renameat2(AT_FDCWD, mfrom, AT_FDCWD, mto, RENAME_NOREPLACE);
    else
        rc = rename(mfrom, mto);
    if (rc < 0)
        return drx_err_set(err, errno, "%s -> %s: %s", mfrom, mto, strerror(errno));
    if (!have_old)
        return 0;
    /* The replaced file's subfiles are now unreachable; remove them unless
     * they are the renamed file's own (a rename onto itself). */
    for (unsigned i = 0; i < old.layout.count; i++) {
        bool shared = false;
        for (unsigned j = 0; src_ok && j < src.layout.count; j++)
            shared |=
                src.sub[j].dir == old.sub[i].dir && strcmp(src.sub[j].name, old.sub[i].name) == 0;
        if (!shared && s->dir_fds[old.sub[i].dir] >= 0)
            unlinkat(s->dir_fds[old.sub[i].dir], old.sub[i].name, 0);
    }
    return 0;
}

int drx_stripe_rename(struct drx_store *s, const char *from, const char *to, unsigned flags,
                      struct drx_err *err)
{
    char mfrom[PATH_MAX], mto[PATH_MAX];

    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return drx_err_set(err, EINVAL, "%s: unsupported rename flags", from);
    if (meta_path(from, mfrom, sizeof mfrom) < 0 || meta_path(to, mto, sizeof mto) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", to);
    return rename_meta(s, from, mfrom, mto, flags, err);
}

int drx_stripe_commit_temp(struct drx_store *s, const char *tmp, const char *path, uint64_t size,
                           struct drx_err *err)
{
    char mp[PATH_MAX];
    bool dirs[DRX_MAX_STRIPE_DIRS] = {false};
    struct drx_stripe_meta m;
    struct stat old, tst, *like = NULL;
    int rc;

    if (meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    if (size > DRX_STRIPE_MAX_SIZE)
        return drx_err_set(err, EFBIG, "%s: size %llu is too large", path,
                           (unsigned long long)size);
    rc = meta_load_st(tmp, s->cfg.stripe.ndirs, &m, &tst, err);
    if (rc < 0)
        return rc;
    /* Data first (SPEC 9): every subfile on disk, cut to what the size
     * needs, and its name durable in its stripe directory. */
    for (unsigned i = 0; i < m.layout.count; i++) {
        struct stat st;
        uint64_t want = drx_stripe_subfile_len(&m.layout, i, size);
        int fd = drx_stripe_subfile_open(s, &m, i, O_RDWR, 0, tmp);
        if (fd < 0) {
            rc = fd == -ENOENT ? -EIO : fd;
            return drx_err_set(err, -rc, "%s: subfile %u (%s): %s", tmp, i, m.sub[i].name,
                               fd == -ENOENT ? "missing" : strerror(-fd));
        }
        rc = fstat(fd, &st) < 0 ? -errno : 0;
        if (rc == 0 && (uint64_t)st.st_size > want && ftruncate(fd, (off_t)want) < 0)
            rc = -errno;
        if (rc == 0 && fdatasync(fd) < 0)
            rc = -errno;
        close(fd);
        if (rc < 0)
            return drx_err_set(err, -rc, "%s: subfile %u (%s): %s", tmp, i, m.sub[i].name,
                               strerror(-rc));
        dirs[m.sub[i].dir] = true;
    }
    for (size_t d = 0; d < s->cfg.stripe.ndirs && d < DRX_MAX_STRIPE_DIRS; d++)
        if (dirs[d] && s->dir_fds[d] >= 0 && fsync(s->dir_fds[d]) < 0)
            return drx_err_set(err, errno, "%s: %s", s->cfg.stripe.dirs[d], strerror(errno));
    /* Then the metafile: the size written into the temporary one (nobody
     * else has it), durable, and renamed over NAME.nafs: readers see the
     * old file or the whole new one.  A file it replaces keeps its mode
     * and owner, as cp into an existing file does. */
    if (lstat(mp, &old) == 0 && S_ISREG(old.st_mode))
        like = &old;
    m.size = size;
    /* In place: the temporary is ours alone, and a full disk (the copy
     * filled it) has no block for a rewrite. */
    rc = meta_size_in_place(tmp, &tst, &m, s->cfg.stripe.ndirs, like, true, NULL);
    if (rc == -EOPNOTSUPP) /* not in this drx's padded form */
        rc = meta_write_here(tmp, &m, O_TRUNC, 0, like, true, NULL);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", tmp, strerror(-rc));
    rc = rename_meta(s, tmp, tmp, mp, 0, err);
    if (rc < 0)
        return rc;
    rc = drx_io_fsync_parent(mp);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", mp, strerror(-rc));
    return 0;
}

int drx_stripe_discard_temp(struct drx_store *s, const char *tmp, struct drx_err *err)
{
    return unlink_meta(s, tmp, tmp, err);
}
