/* Striped files: where a logical byte lies (SPEC section 5) and which
 * layout a new file gets (user.drx.stripe, the store's default). */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "drx/log.h"
#include "stripe_i.h"

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

/* ---- layouts ------------------------------------------------------------------- */

/* The value of a layout's "count=": a plain number in 1..ndirs. */
static int layout_count(const char *v, size_t ndirs, struct drx_stripe_layout *l,
                        struct drx_err *err)
{
    uint64_t n;

    if (drx_config_parse_bytes(v, &n) < 0 || strpbrk(v, "kKmMgGtT"))
        return drx_err_set(err, EINVAL, "layout: count \"%s\" is not a number", v);
    if (n < 1 || n > ndirs)
        return drx_err_set(err, EINVAL, "layout: count=%llu is not in 1..%zu (the stripe dirs)",
                           (unsigned long long)n, ndirs);
    l->count = (unsigned)n;
    return 0;
}

/* The value of a layout's "extent=": a byte count in 1..DRX_MAX_EXTENT. */
static int layout_extent(const char *v, size_t ndirs, struct drx_stripe_layout *l,
                         struct drx_err *err)
{
    uint64_t n;

    (void)ndirs;
    if (drx_config_parse_bytes(v, &n) < 0)
        return drx_err_set(err, EINVAL, "layout: extent \"%s\" is not a byte count", v);
    if (n < 1 || n > DRX_MAX_EXTENT)
        return drx_err_set(err, EINVAL, "layout: extent=%llu is not in 1..%llu",
                           (unsigned long long)n, (unsigned long long)DRX_MAX_EXTENT);
    l->extent = n;
    return 0;
}

/* The keys of a layout, each given exactly once. */
static const struct {
    const char *key;
    int (*parse)(const char *v, size_t ndirs, struct drx_stripe_layout *l, struct drx_err *err);
} layout_keys[] = {
    {"count=", layout_count},
    {"extent=", layout_extent},
};
#define NLAYOUT_KEYS (sizeof layout_keys / sizeof layout_keys[0])

/* The entry of layout_keys that word w sets and that is not set yet
 * (have[]); -1 if none. */
static int layout_key_find(const char *w, const bool *have)
{
    for (size_t k = 0; k < NLAYOUT_KEYS; k++)
        if (!have[k] && strncmp(w, layout_keys[k].key, strlen(layout_keys[k].key)) == 0)
            return (int)k;
    return -1;
}

int drx_stripe_layout_parse(const char *text, size_t ndirs, struct drx_stripe_layout *out,
                            struct drx_err *err)
{
    char buf[256];
    bool have[NLAYOUT_KEYS] = {false};
    struct drx_stripe_layout l = {0};
    char *save = NULL;

    if (ndirs > DRX_MAX_STRIPE_DIRS)
        ndirs = DRX_MAX_STRIPE_DIRS;
    if (!text || strlen(text) >= sizeof buf)
        return drx_err_set(err, EINVAL, "layout: expected \"count=N extent=BYTES\"");
    strcpy(buf, text);
    for (char *w = strtok_r(buf, " \t\n,", &save); w; w = strtok_r(NULL, " \t\n,", &save)) {
        int k = layout_key_find(w, have);
        int rc;

        if (k < 0)
            return drx_err_set(err, EINVAL,
                               "layout: unexpected \"%s\", expected \"count=N extent=BYTES\"", w);
        rc = layout_keys[k].parse(w + strlen(layout_keys[k].key), ndirs, &l, err);
        if (rc < 0)
            return rc;
        have[k] = true;
    }
    for (size_t k = 0; k < NLAYOUT_KEYS; k++)
        if (!have[k])
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
            drx_log_ratelimited(DRX_LOG_WARNING, "%s; ignored", e2.msg);
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
