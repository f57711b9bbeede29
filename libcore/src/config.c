/* Configuration: defaults and libconfig files, validated with line numbers. */
#include "drx/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgfile_i.h"
#include "config_i.h"

/* A configuration file is a few KiB; one this large is a mistake. */
#define CONF_MAX_BYTES ((size_t)1 << 20)

#define DRX_STR_(x) #x
#define DRX_STR(x) DRX_STR_(x)

int drx_config_defaults(struct drx_config *cfg, const char *store_root)
{
    char buf[4096];

    memset(cfg, 0, sizeof *cfg);
    cfg->stripe.dirs = calloc(2, sizeof *cfg->stripe.dirs);
    if (!cfg->stripe.dirs)
        goto nomem;
    cfg->stripe.ndirs = 2;
    for (int i = 0; i < 2; i++) {
        if (store_root) {
            const char *sep =
                (store_root[0] && store_root[strlen(store_root) - 1] == '/') ? "" : "/";
            snprintf(buf, sizeof buf, "%s%s.drx/stripes/%d", store_root, sep, i);
        } else {
            snprintf(buf, sizeof buf, ".drx/stripes/%d", i);
        }
        cfg->stripe.dirs[i] = strdup(buf);
        if (!cfg->stripe.dirs[i])
            goto nomem;
    }
    cfg->stripe.count = DRX_DEFAULT_STRIPE_COUNT;
    cfg->stripe.extent = DRX_DEFAULT_STRIPE_EXTENT;
    cfg->cache_bytes = DRX_DEFAULT_CACHE_BYTES;
    cfg->prefetch.enabled = false;
    cfg->prefetch.min_bytes = DRX_DEFAULT_PREFETCH_MIN_BYTES;
    cfg->prefetch.ranks = DRX_DEFAULT_PREFETCH_RANKS;
    cfg->prefetch.mpiexec = strdup("mpiexec");
    if (!cfg->prefetch.mpiexec)
        goto nomem;
    cfg->log_level = DRX_LOG_INFO;
    cfg->mpiio.buffer = DRX_DEFAULT_MPIIO_BUFFER;
    return 0;
nomem:
    drx_config_fini(cfg);
    return -ENOMEM;
}

void drx_config_fini(struct drx_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->stripe.ndirs && cfg->stripe.dirs; i++)
        free(cfg->stripe.dirs[i]);
    free(cfg->stripe.dirs);
    free(cfg->prefetch.mpiexec);
    for (size_t i = 0; i < cfg->mpiio.nhints && cfg->mpiio.hints; i++) {
        free(cfg->mpiio.hints[i].key);
        free(cfg->mpiio.hints[i].value);
    }
    free(cfg->mpiio.hints);
    memset(cfg, 0, sizeof *cfg);
}

static char **dup_dirs(const char *const *dirs, size_t n)
{
    char **out = calloc(n ? n : 1, sizeof *out);

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        out[i] = strdup(dirs[i]);
        if (!out[i]) {
            for (size_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

int drx_config_copy(struct drx_config *dst, const struct drx_config *src)
{
    *dst = *src;
    dst->stripe.dirs = NULL;
    dst->stripe.ndirs = 0;
    dst->prefetch.mpiexec = NULL;
    dst->mpiio.hints = NULL;
    dst->mpiio.nhints = 0;
    dst->stripe.dirs = dup_dirs((const char *const *)src->stripe.dirs, src->stripe.ndirs);
    if (!dst->stripe.dirs)
        goto nomem;
    dst->stripe.ndirs = src->stripe.ndirs;
    if (src->prefetch.mpiexec) {
        dst->prefetch.mpiexec = strdup(src->prefetch.mpiexec);
        if (!dst->prefetch.mpiexec)
            goto nomem;
    }
    /* A plain copy, not drx_config_set_hint(): copying never judges. */
    if (src->mpiio.nhints) {
        dst->mpiio.hints = calloc(src->mpiio.nhints, sizeof *dst->mpiio.hints);
        if (!dst->mpiio.hints)
            goto nomem;
        for (size_t i = 0; i < src->mpiio.nhints; i++) {
            struct drx_config_hint *h = &dst->mpiio.hints[i];
            dst->mpiio.nhints = i + 1; /* so fini frees a partial copy */
            h->key = src->mpiio.hints[i].key ? strdup(src->mpiio.hints[i].key) : NULL;
            h->value = src->mpiio.hints[i].value ? strdup(src->mpiio.hints[i].value) : NULL;
            if ((src->mpiio.hints[i].key && !h->key) || (src->mpiio.hints[i].value && !h->value))
                goto nomem;
        }
    }
    return 0;
nomem:
    drx_config_fini(dst);
    return -ENOMEM;
}

int drx_config_set_dirs(struct drx_config *cfg, const char *const *dirs, size_t n)
{
    char **copy = dup_dirs(dirs, n);

    if (!copy)
        return -ENOMEM;
    for (size_t i = 0; i < cfg->stripe.ndirs; i++)
        free(cfg->stripe.dirs[i]);
    free(cfg->stripe.dirs);
    cfg->stripe.dirs = copy;
    cfg->stripe.ndirs = n;
    return 0;
}

/* What is wrong with an MPI-IO hint, or NULL.  The key's alphabet is
 * ROMIO's (and every MPI's we know); libconfig names would also allow '-'
 * and '*', which no hint uses, so they are refused as likely typos. */
static const char *hint_problem(const char *key, const char *value)
{
    size_t n = strlen(key);

    if (n == 0)
        return "empty hint name";
    if (n > DRX_MAX_HINT_KEY)
        return "hint name longer than " DRX_STR(DRX_MAX_HINT_KEY) " characters";
    if (strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return "hint name may hold only letters, digits and _";
    if (!value[0])
        return "empty value";
    if (strlen(value) > DRX_MAX_HINT_VALUE)
        return "value longer than " DRX_STR(DRX_MAX_HINT_VALUE) " characters";
    return NULL;
}

int drx_config_set_hint(struct drx_config *cfg, const char *key, const char *value)
{
    struct drx_config_hint *h = NULL;
    char *v;

    if (hint_problem(key, value))
        return -EINVAL;
    for (size_t i = 0; i < cfg->mpiio.nhints; i++) {
        if (strcmp(cfg->mpiio.hints[i].key, key) == 0)
            h = &cfg->mpiio.hints[i];
    }
    if (!h && cfg->mpiio.nhints >= DRX_MAX_MPIIO_HINTS)
        return -E2BIG;
    v = strdup(value);
    if (!v)
        return -ENOMEM;
    if (h) {
        free(h->value);
        h->value = v;
        return 0;
    }
    /* At most 64 entries: growing by one each time costs nothing. */
    h = realloc(cfg->mpiio.hints, (cfg->mpiio.nhints + 1) * sizeof *h);
    if (!h) {
        free(v);
        return -ENOMEM;
    }
    cfg->mpiio.hints = h;
    h += cfg->mpiio.nhints;
    h->key = strdup(key);
    if (!h->key) {
        free(v);
        return -ENOMEM;
    }
    h->value = v;
    cfg->mpiio.nhints++;
    return 0;
}

/* Checks shared by validate and the file loader; the loader adds the line
 * of the key at fault, so each check names its key. */
enum check_key {
    K_NONE,
    K_DIRS,
    K_COUNT,
    K_EXTENT,
    K_CACHE,
    K_RANKS,
    K_MPIEXEC,
    K_BUFFER,
    K_HINTS
};

/* Each checker below: true when its key is wrong, with why filled. */
static bool bad_dirs(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->stripe.ndirs < 1 || cfg->stripe.ndirs > DRX_MAX_STRIPE_DIRS) {
        snprintf(why, len, "stripe.dirs: %zu directories, must be 1..%d", cfg->stripe.ndirs,
                 DRX_MAX_STRIPE_DIRS);
        return true;
    }
    for (size_t i = 0; i < cfg->stripe.ndirs; i++) {
        if (!cfg->stripe.dirs[i] || !cfg->stripe.dirs[i][0]) {
            snprintf(why, len, "stripe.dirs: entry %zu is empty", i);
            return true;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->stripe.dirs[i], cfg->stripe.dirs[j]) == 0) {
                snprintf(why, len, "stripe.dirs: \"%s\" is listed twice", cfg->stripe.dirs[i]);
                return true;
            }
    }
    return false;
}

static bool bad_count(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->stripe.count >= 1 && cfg->stripe.count <= cfg->stripe.ndirs)
        return false;
    snprintf(why, len, "stripe.count: %u is not in 1..%zu (the number of stripe.dirs)",
             cfg->stripe.count, cfg->stripe.ndirs);
    return true;
}

static bool bad_extent(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->stripe.extent >= 1 && cfg->stripe.extent <= DRX_MAX_EXTENT)
        return false;
    snprintf(why, len, "stripe.extent: %llu is not in 1..%llu bytes",
             (unsigned long long)cfg->stripe.extent, (unsigned long long)DRX_MAX_EXTENT);
    return true;
}

static bool bad_cache(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->cache_bytes <= DRX_MAX_CACHE_BYTES)
        return false;
    snprintf(why, len, "cache.bytes: %llu is above the limit %llu",
             (unsigned long long)cfg->cache_bytes, (unsigned long long)DRX_MAX_CACHE_BYTES);
    return true;
}

static bool bad_ranks(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->prefetch.ranks >= 1 && cfg->prefetch.ranks <= DRX_MAX_PREFETCH_RANKS)
        return false;
    snprintf(why, len, "prefetch.ranks: %u is not in 1..%d", cfg->prefetch.ranks,
             DRX_MAX_PREFETCH_RANKS);
    return true;
}

static bool bad_mpiexec(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->prefetch.mpiexec && cfg->prefetch.mpiexec[0])
        return false;
    snprintf(why, len, "prefetch.mpiexec: empty program name");
    return true;
}

static bool bad_buffer(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->mpiio.buffer >= DRX_MIN_MPIIO_BUFFER && cfg->mpiio.buffer <= DRX_MAX_MPIIO_BUFFER)
        return false;
    snprintf(why, len, "mpiio.buffer: %llu is not in %llu..%llu bytes (1 MiB..1 GiB)",
             (unsigned long long)cfg->mpiio.buffer, (unsigned long long)DRX_MIN_MPIIO_BUFFER,
             (unsigned long long)DRX_MAX_MPIIO_BUFFER);
    return true;
}

static bool bad_hints(const struct drx_config *cfg, char *why, size_t len)
{
    if (cfg->mpiio.nhints > DRX_MAX_MPIIO_HINTS) {
        snprintf(why, len, "mpiio.hints: %zu hints, at most %d", cfg->mpiio.nhints,
                 DRX_MAX_MPIIO_HINTS);
        return true;
    }
    for (size_t i = 0; i < cfg->mpiio.nhints; i++) {
        const struct drx_config_hint *h = &cfg->mpiio.hints[i];
        const char *bad = h->key && h->value ? hint_problem(h->key, h->value) : "missing";
        if (bad) {
            snprintf(why, len, "mpiio.hints.%.40s: %s", h->key ? h->key : "?", bad);
            return true;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(h->key, cfg->mpiio.hints[j].key) == 0) {
                snprintf(why, len, "mpiio.hints.%.40s: set twice", h->key);
                return true;
            }
    }
    return false;
}

/* The checks in the order they are reported, each with its key. */
static const struct {
    enum check_key key;
    bool (*bad)(const struct drx_config *cfg, char *why, size_t len);
} checks[] = {
    {K_DIRS, bad_dirs},   {K_COUNT, bad_count},     {K_EXTENT, bad_extent},
    {K_CACHE, bad_cache}, {K_RANKS, bad_ranks},     {K_MPIEXEC, bad_mpiexec},
    {K_BUFFER, bad_buffer}, {K_HINTS, bad_hints},
};

static enum check_key check(const struct drx_config *cfg, char *why, size_t len)
{
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].bad(cfg, why, len))
            return checks[i].key;
    return K_NONE;
}

int drx_config_validate(const struct drx_config *cfg, struct drx_err *err)
{
    char why[DRX_ERR_LEN];

    if (check(cfg, why, sizeof why) != K_NONE)
        return drx_err_set(err, EINVAL, "%s", why);
    return 0;
}

/* ---- file loading --------------------------------------------------------- */

struct loader {
    const char *path;
    const char *text; /* the file's text, for integers libconfig truncated */
    struct drx_err *err;
    int line[K_HINTS + 1]; /* line where each checked key was set, 0: not */
};

static int fail(struct loader *ld, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct loader *ld, const config_setting_t *s, const char *fmt, ...)
{
    char why[DRX_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return drx_err_set(ld->err, EINVAL, "%s:%u: %s", ld->path,
                       s ? (unsigned)config_setting_source_line(s) : 0u, why);
}

/* Full dotted name of a setting ("stripe.count"), for messages. */
static void key_name(const config_setting_t *s, char *buf, size_t len)
{
    const config_setting_t *p = config_setting_parent(s);

    if (p && config_setting_name(p) && !config_setting_is_root(p))
        snprintf(buf, len, "%s.%s", config_setting_name(p), config_setting_name(s));
    else
        snprintf(buf, len, "%s", config_setting_name(s) ? config_setting_name(s) : "?");
}

/* The start of 1-based line `line` of text, or NULL. */
static const char *line_start(const char *text, unsigned line)
{
    const char *p = text;

    for (unsigned l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return p;
}

/* In the line [p, end): where the value of setting `name` starts (after
 * "name =" or "name:", name a whole word), or NULL. */
static const char *setting_value(const char *p, const char *end, const char *name)
{
    size_t nl = strlen(name);

    for (const char *q = p; (q = strstr(q, name)) && q < end; q++) {
        bool word = (q == p || !(isalnum((unsigned char)q[-1]) || q[-1] == '_')) &&
                    !(isalnum((unsigned char)q[nl]) || q[nl] == '_');
        const char *r = q + nl;
        if (!word)
            continue;
        r += strspn(r, " \t");
        if (*r != '=' && *r != ':')
            continue;
        r++;
        return r + strspn(r, " \t");
    }
    return NULL;
}

/* The integer literal at r as libconfig means it (decimal, or hex after
 * 0x; "010" is ten), saturated; false when there is none. */
static bool int_literal(const char *r, long long *v)
{
    const char *digits = r + (*r == '-' || *r == '+');
    int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
    char *e;
    long long x;

    errno = 0;
    x = strtoll(r, &e, base);
    if (e == r)
        return false;
    if (errno == ERANGE)
        x = *r == '-' ? LLONG_MIN : LLONG_MAX;
    *v = x;
    return true;
}

/* libconfig 1.5 keeps a plain integer literal (no L suffix) in 32 bits and
 * silently wraps larger ones ("9000000000" reads as 410065408).  Users write
 * byte counts that large, so such a setting's literal is re-read from its
 * source line; returns false when it cannot be found there. */
static bool literal_int(const struct loader *ld, const config_setting_t *s, long long *v)
{
    unsigned line = config_setting_source_line(s);
    const char *name = config_setting_name(s), *p, *end, *r;

    if (!ld->text || !name || line == 0 || !(p = line_start(ld->text, line)))
        return false;
    end = strchr(p, '\n');
    if (!end)
        end = p + strlen(p);
    r = setting_value(p, end, name);
    return r && int_literal(r, v);
}

static int get_u64(struct loader *ld, const config_setting_t *s, uint64_t max, uint64_t *out)
{
    char name[128];
    long long v, lit;

    key_name(s, name, sizeof name);
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return fail(ld, s, "%s: wrong type, expected an integer", name);
    v = config_setting_get_int64(s);
    if (t == CONFIG_TYPE_INT && literal_int(ld, s, &lit) && lit != v)
        v = lit;
    if (v < 0)
        return fail(ld, s, "%s: %lld is negative", name, v);
    if ((unsigned long long)v > max)
        return fail(ld, s, "%s: %lld is above the limit %llu", name, v, (unsigned long long)max);
    *out = (uint64_t)v;
    return 0;
}

static int get_string(struct loader *ld, const config_setting_t *s, const char **out)
{
    char name[128];

    key_name(s, name, sizeof name);
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return fail(ld, s, "%s: wrong type, expected a string", name);
    *out = config_setting_get_string(s);
    return 0;
}

static int load_dirs(struct loader *ld, const config_setting_t *s, struct drx_config *cfg)
{
    const char *dirs[DRX_MAX_STRIPE_DIRS];
    int n, rc;

    if (config_setting_type(s) != CONFIG_TYPE_ARRAY && config_setting_type(s) != CONFIG_TYPE_LIST)
        return fail(ld, s, "stripe.dirs: wrong type, expected a list of strings [ \"...\", ... ]");
    n = config_setting_length(s);
    if (n < 1)
        return fail(ld, s, "stripe.dirs: empty, at least one directory is needed");
    if (n > DRX_MAX_STRIPE_DIRS)
        return fail(ld, s, "stripe.dirs: %d directories, at most %d", n, DRX_MAX_STRIPE_DIRS);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING)
            return fail(ld, e, "stripe.dirs[%d]: wrong type, expected a string", i);
        dirs[i] = config_setting_get_string(e);
        if (!dirs[i][0])
            return fail(ld, e, "stripe.dirs[%d]: empty directory name", i);
    }
    rc = drx_config_set_dirs(cfg, dirs, (size_t)n);
    if (rc < 0)
        return drx_err_set(ld->err, -rc, "%s: out of memory", ld->path);
    ld->line[K_DIRS] = config_setting_source_line(s);
    return 0;
}

static int load_stripe(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;
    uint64_t v;

    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *k = config_setting_name(s);
        if (strcmp(k, "dirs") == 0) {
            rc = load_dirs(ld, s, cfg);
        } else if (strcmp(k, "count") == 0) {
            rc = get_u64(ld, s, DRX_MAX_STRIPE_DIRS, &v);
            if (rc == 0 && v == 0)
                rc = fail(ld, s, "stripe.count: 0, a file needs at least one subfile");
            cfg->stripe.count = (unsigned)v;
            ld->line[K_COUNT] = config_setting_source_line(s);
        } else if (strcmp(k, "extent") == 0) {
            rc = get_u64(ld, s, DRX_MAX_EXTENT, &v);
            if (rc == 0 && v == 0)
                rc = fail(ld, s, "stripe.extent: 0, an extent is at least 1 byte");
            cfg->stripe.extent = v;
            ld->line[K_EXTENT] = config_setting_source_line(s);
        } else {
            rc = fail(ld, s, "unknown key stripe.%s (known: dirs, count, extent)", k);
        }
    }
    return rc;
}

static int load_cache(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;

    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        if (strcmp(config_setting_name(s), "bytes") == 0) {
            rc = get_u64(ld, s, DRX_MAX_CACHE_BYTES, &cfg->cache_bytes);
            ld->line[K_CACHE] = config_setting_source_line(s);
        } else {
            rc = fail(ld, s, "unknown key cache.%s (known: bytes)", config_setting_name(s));
        }
    }
    return rc;
}

static int load_prefetch(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;
    uint64_t v;

    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *k = config_setting_name(s);
        if (strcmp(k, "enabled") == 0) {
            if (config_setting_type(s) != CONFIG_TYPE_BOOL)
                rc = fail(ld, s, "prefetch.enabled: wrong type, expected true or false");
            else
                cfg->prefetch.enabled = config_setting_get_bool(s) != 0;
        } else if (strcmp(k, "min_bytes") == 0) {
            rc = get_u64(ld, s, UINT64_MAX >> 1, &cfg->prefetch.min_bytes);
        } else if (strcmp(k, "ranks") == 0) {
            rc = get_u64(ld, s, DRX_MAX_PREFETCH_RANKS, &v);
            if (rc == 0 && v == 0)
                rc = fail(ld, s, "prefetch.ranks: 0, at least one rank is needed");
            cfg->prefetch.ranks = (unsigned)v;
            ld->line[K_RANKS] = config_setting_source_line(s);
        } else if (strcmp(k, "mpiexec") == 0) {
            const char *str = NULL;
            rc = get_string(ld, s, &str);
            if (rc == 0 && !str[0])
                rc = fail(ld, s, "prefetch.mpiexec: empty program name");
            if (rc == 0) {
                char *copy = strdup(str);
                if (!copy)
                    return drx_err_set(ld->err, ENOMEM, "%s: out of memory", ld->path);
                free(cfg->prefetch.mpiexec);
                cfg->prefetch.mpiexec = copy;
            }
        } else {
            rc = fail(ld, s, "unknown key prefetch.%s (known: enabled, min_bytes, ranks, mpiexec)",
                      k);
        }
    }
    return rc;
}

static int load_log(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;

    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        if (strcmp(config_setting_name(s), "level") == 0) {
            const char *str = NULL;
            rc = get_string(ld, s, &str);
            if (rc == 0 && drx_log_level_parse(str, &cfg->log_level) < 0)
                rc =
                    fail(ld, s, "log.level: \"%s\" is not one of error, warning, info, debug", str);
        } else {
            rc = fail(ld, s, "unknown key log.%s (known: level)", config_setting_name(s));
        }
    }
    return rc;
}

/* One hint's value as text.  MPI info values are strings, but users write
 * cb_buffer_size = 16777216 or romio_no_indep_rw = true; those become
 * "16777216" and "true".  Floats, lists and groups are refused. */
static int hint_value(struct loader *ld, const config_setting_t *s, char *buf, size_t len,
                      const char **out)
{
    const char *k = config_setting_name(s);
    long long v, lit;

    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING:
        *out = config_setting_get_string(s);
        return 0;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        v = config_setting_get_int64(s);
        if (config_setting_type(s) == CONFIG_TYPE_INT && literal_int(ld, s, &lit) && lit != v)
            v = lit;
        snprintf(buf, len, "%lld", v);
        *out = buf;
        return 0;
    case CONFIG_TYPE_BOOL:
        *out = config_setting_get_bool(s) ? "true" : "false";
        return 0;
    default:
        return fail(ld, s,
                    "mpiio.hints.%.40s: wrong type, expected a string (an integer or true/false "
                    "is taken as its text)",
                    k);
    }
}

static int load_hints(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;

    if (config_setting_type(g) != CONFIG_TYPE_GROUP)
        return fail(ld, g, "mpiio.hints: wrong type, expected a group { key = \"value\"; ... }");
    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *k = config_setting_name(s), *value = NULL, *bad;
        char num[32];

        rc = hint_value(ld, s, num, sizeof num, &value);
        if (rc < 0)
            break;
        bad = hint_problem(k, value);
        if (bad) {
            rc = fail(ld, s, "mpiio.hints.%.40s%s: %s", k, strlen(k) > 40 ? "..." : "", bad);
            break;
        }
        rc = drx_config_set_hint(cfg, k, value);
        if (rc == -E2BIG)
            rc = fail(ld, s, "mpiio.hints: more than %d hints", DRX_MAX_MPIIO_HINTS);
        else if (rc < 0)
            rc = drx_err_set(ld->err, -rc, "%s: out of memory", ld->path);
    }
    ld->line[K_HINTS] = config_setting_source_line(g);
    return rc;
}

static int load_mpiio(struct loader *ld, const config_setting_t *g, struct drx_config *cfg)
{
    int rc = 0;

    for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *k = config_setting_name(s);
        if (strcmp(k, "buffer") == 0) {
            rc = get_u64(ld, s, DRX_MAX_MPIIO_BUFFER, &cfg->mpiio.buffer);
            if (rc == 0 && cfg->mpiio.buffer < DRX_MIN_MPIIO_BUFFER)
                rc = fail(ld, s, "mpiio.buffer: %llu is below the minimum %llu (1 MiB)",
                          (unsigned long long)cfg->mpiio.buffer,
                          (unsigned long long)DRX_MIN_MPIIO_BUFFER);
            ld->line[K_BUFFER] = config_setting_source_line(s);
        } else if (strcmp(k, "hints") == 0) {
            rc = load_hints(ld, s, cfg);
        } else {
            rc = fail(ld, s, "unknown key mpiio.%s (known: buffer, hints)", k);
        }
    }
    return rc;
}

typedef int group_loader(struct loader *ld, const config_setting_t *g, struct drx_config *cfg);

/* The top-level keys: store.conf has version and stripe, a --config file
 * all the groups. */
static const struct {
    const char *name;
    bool store; /* allowed in store.conf */
    group_loader *load;
} groups[] = {
    {"stripe", true, load_stripe}, {"cache", false, load_cache}, {"prefetch", false, load_prefetch},
    {"log", false, load_log},      {"mpiio", false, load_mpiio},
};

/* store.conf's version: 1 */
static int load_version(struct loader *ld, const config_setting_t *s)
{
    int t = config_setting_type(s);
    long long v;

    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return fail(ld, s, "version: wrong type, expected an integer");
    if ((v = config_setting_get_int64(s)) != 1)
        return fail(ld, s, "version: %lld is not supported (this drx knows version 1)", v);
    return 0;
}

/* One top-level setting into tmp. */
static int load_top(struct loader *ld, const config_setting_t *s, bool all, struct drx_config *tmp)
{
    const char *k = config_setting_name(s);

    if (strcmp(k, "version") == 0 && !all)
        return load_version(ld, s);
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        if (strcmp(k, groups[g].name) != 0 || !(all || groups[g].store))
            continue;
        if (config_setting_type(s) != CONFIG_TYPE_GROUP)
            return fail(ld, s, "%s: wrong type, expected a group { ... }", k);
        return groups[g].load(ld, s, tmp);
    }
    return fail(ld, s,
                all ? "unknown key %s (known: stripe, cache, prefetch, log, mpiio)"
                    : "unknown key %s (known: version, stripe)",
                k);
}

/* Validates the overlay as a whole, blaming the line of the key at fault,
 * or of the key that made it wrong (dirs shrunk under an inherited count). */
static int check_overlay(const struct loader *ld, const struct drx_config *tmp)
{
    char why[DRX_ERR_LEN];
    enum check_key bad = check(tmp, why, sizeof why);
    int line;

    if (bad == K_NONE)
        return 0;
    line = ld->line[bad];
    if (!line && bad == K_COUNT)
        line = ld->line[K_DIRS];
    return drx_err_set(ld->err, EINVAL, "%s:%d: %s", ld->path, line, why);
}

int drx_config_load_keys(struct drx_config *cfg, const char *path, int keys, struct drx_err *err)
{
    struct loader ld = {.path = path, .err = err};
    struct drx_config tmp = {0};
    const config_setting_t *root;
    struct drx_cfgfile cf;
    bool all = keys == DRX_CONFIG_KEYS_ALL;
    int rc;

    /* store.conf is a store file (never a symlink); a --config file is the
     * user's, who may point it through a symlink.  Neither may be a FIFO or
     * name another file with @include. */
    rc = drx_cfgfile_read(AT_FDCWD, path, path, all ? DRX_CFGFILE_USER : 0, CONF_MAX_BYTES, &cf,
                          NULL, err);
    if (rc < 0)
        return rc;
    ld.text = cf.text;
    rc = drx_config_copy(&tmp, cfg);
    if (rc < 0) {
        drx_err_set(err, -rc, "%s: out of memory", path);
        goto out;
    }
    root = config_root_setting(&cf.cfg);
    for (int i = 0; i < config_setting_length(root) && rc == 0; i++)
        rc = load_top(&ld, config_setting_get_elem(root, (unsigned)i), all, &tmp);
    if (rc == 0)
        rc = check_overlay(&ld, &tmp);
    if (rc < 0)
        goto out;
    drx_config_fini(cfg);
    *cfg = tmp;
    memset(&tmp, 0, sizeof tmp);
out:
    drx_config_fini(&tmp);
    drx_cfgfile_fini(&cf);
    return rc;
}

int drx_config_load_file(struct drx_config *cfg, const char *path, struct drx_err *err)
{
    return drx_config_load_keys(cfg, path, DRX_CONFIG_KEYS_ALL, err);
}

int drx_config_parse_bytes(const char *text, uint64_t *out)
{
    uint64_t v = 0, mul = 1;
    const char *p = text;

    if (!p || *p < '0' || *p > '9')
        return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    /* Binary units: the k-th letter of "kmgt" is 2^(10k). */
    static const char units[] = "kmgt";
    const char *u = *p ? strchr(units, tolower((unsigned char)*p)) : NULL;
    if (u) {
        mul = (uint64_t)1 << (10 * (u - units + 1));
        p++;
    }
    /* Accept "64K", "64KiB" and "64KB" alike. */
    if (mul > 1 && (strcmp(p, "iB") == 0 || strcmp(p, "B") == 0))
        p += strlen(p);
    if (*p)
        return -EINVAL;
    if (v > UINT64_MAX / mul)
        return -EINVAL;
    *out = v * mul;
    return 0;
}
