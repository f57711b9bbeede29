/* The .xmd's libconfig part: validated parse (by replay of the history) and writing. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_i.h"
#include "cfgfile_i.h"
#include "drx/io.h"
#include "drx/attr.h"
#include "replace_i.h"

void drx_array_meta_fini(struct drx_array_meta *m)
{
    drx_map_fini(&m->map);
    free(m->history);
    for (size_t i = 0; i < m->nattrs; i++)
        drx_attr_fini(&m->attrs[i]);
    free(m->attrs);
    memset(m, 0, sizeof *m);
}

/* Derived sizes and the initial map, from type/rank/chunk/initial. */
int drx_xmd_derive(struct drx_array_meta *m, struct drx_err *err)
{
    uint64_t ce = 1, ne = 1, b[DRX_MAX_RANK];
    int rc;

    m->elem_size = drx_type_size(m->type);
    for (int i = 0; i < m->rank; i++) {
        if (m->chunk[i] == 0)
            return drx_err_set(err, EINVAL, "chunk extent of dimension %d is 0", i);
        if (m->initial[i] == 0)
            return drx_err_set(err, EINVAL, "extent of dimension %d is 0", i);
        if (__builtin_mul_overflow(ce, m->chunk[i], &ce) || ce * m->elem_size > DRX_MAX_CHUNK_BYTES)
            return drx_err_set(err, EFBIG, "chunk is larger than %" PRIu64 " bytes",
                               (uint64_t)DRX_MAX_CHUNK_BYTES);
        if (__builtin_mul_overflow(ne, m->initial[i], &ne) || ne > DRX_ARRAY_MAX_ELEMS)
            return drx_err_set(err, EFBIG, "array has more than 2^59 elements");
        b[i] = (m->initial[i] - 1) / m->chunk[i] + 1;
    }
    m->chunk_elems = ce;
    m->chunk_bytes = ce * m->elem_size;
    rc = drx_map_init(&m->map, m->rank, b);
    if (rc)
        return drx_err_set(err, -rc, "too many chunks");
    if (!drx_xmd_chunks_fit(m, m->map.nchunks))
        return drx_err_set(err, EFBIG, "%s", drx_xmd_too_big(-EOVERFLOW));
    return 0;
}

/* Applies one growth to bounds and map; history is the caller's. */
int drx_xmd_grow(struct drx_array_meta *m, int dim, uint64_t to, struct drx_err *err)
{
    uint64_t nb, chunks;
    int rc;

    if ((rc = drx_xmd_grown_chunks(m, dim, to, &chunks)))
        return drx_err_set(err, EFBIG, "%s", drx_xmd_too_big(rc));
    nb = (to - 1) / m->chunk[dim] + 1;
    if (nb > m->map.bound[dim]) {
        rc = drx_map_grow(&m->map, dim, nb);
        if (rc)
            return drx_err_set(err, -rc, "too many chunks");
    }
    m->bounds[dim] = to;
    return 0;
}

int drx_xmd_history_add(struct drx_array_meta *m, int dim, uint64_t from, uint64_t to)
{
    struct drx_growth *h;
    size_t n = m->nhistory;

    if (n && m->history[n - 1].dim == dim && m->history[n - 1].to == from) {
        m->history[n - 1].to = to;
        return 0;
    }
    /* Capacity is the next power of two: a replay of a long history
     * (growth records) reallocates log n times, not n. */
    if ((n & (n - 1)) == 0) {
        h = realloc(m->history, (n ? 2 * n : 1) * sizeof *h);
        if (!h)
            return -ENOMEM;
        m->history = h;
    }
    m->history[m->nhistory++] = (struct drx_growth){dim, from, to};
    return 0;
}

/* ---- reading the .xmd: the libconfig part, key by key ---- */

struct xmd_reader {
    const char *file;
    struct drx_err *err;
    const config_setting_t *root;
    int version;
    uint64_t stored_bounds[DRX_MAX_RANK]; /* `bounds` as written, checked by the history */
};

static int bad(struct xmd_reader *r, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct xmd_reader *r, const config_setting_t *s, const char *fmt, ...)
{
    char what[DRX_ERR_LEN / 2];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (s)
        return drx_err_set(r->err, EINVAL, "%s:%u: %s", r->file, config_setting_source_line(s),
                           what);
    return drx_err_set(r->err, EINVAL, "%s: %s", r->file, what);
}

/* True when setting type t is what a key of type `want` takes (an INT64
 * key takes a small integer too). */
static bool type_fits(int t, int want)
{
    return want == CONFIG_TYPE_INT64 ? (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) : t == want;
}

static const config_setting_t *need(struct xmd_reader *r, const config_setting_t *root,
                                    const char *name, int type, int *rc)
{
    const config_setting_t *s = config_setting_get_member(root, name);

    if (!s) {
        *rc = bad(r, NULL, "missing '%s'", name);
        return NULL;
    }
    if (!type_fits(config_setting_type(s), type)) {
        *rc = bad(r, s, "'%s' has the wrong type", name);
        return NULL;
    }
    return s;
}

static int get_u64(struct xmd_reader *r, const config_setting_t *s, const char *what, uint64_t *out)
{
    long long v;

    if (!type_fits(config_setting_type(s), CONFIG_TYPE_INT64))
        return bad(r, s, "%s is not an integer", what);
    v = config_setting_get_int64(s);
    if (v < 0)
        return bad(r, s, "%s is negative", what);
    *out = (uint64_t)v;
    return 0;
}

/* The u64 member `name` of group g. */
static int member_u64(struct xmd_reader *r, const config_setting_t *g, const char *name,
                      uint64_t *out)
{
    int rc = 0;
    const config_setting_t *f = need(r, g, name, CONFIG_TYPE_INT64, &rc);

    return f ? get_u64(r, f, name, out) : rc;
}

/* An array setting s of `rank` non-negative integers. */
static int vec_of(struct xmd_reader *r, const config_setting_t *s, const char *name, int rank,
                  uint64_t *out)
{
    if (config_setting_length(s) != rank)
        return bad(r, s, "'%s' has %d entries for rank %d", name, config_setting_length(s), rank);
    for (int i = 0; i < rank; i++) {
        char what[64];
        int rc;
        snprintf(what, sizeof what, "%s[%d]", name, i);
        rc = get_u64(r, config_setting_get_elem(s, (unsigned)i), what, &out[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int get_vec(struct xmd_reader *r, const config_setting_t *root, const char *name, int rank,
                   uint64_t *out)
{
    int rc = 0;
    const config_setting_t *s = need(r, root, name, CONFIG_TYPE_ARRAY, &rc);

    return s ? vec_of(r, s, name, rank, out) : rc;
}

/* Only name, type and value in an attribute group. */
static int attr_keys(struct xmd_reader *r, const config_setting_t *g, int i)
{
    for (int k = 0; k < config_setting_length(g); k++) {
        const char *key = config_setting_name(config_setting_get_elem(g, (unsigned)k));
        if (strcmp(key, "name") && strcmp(key, "type") && strcmp(key, "value"))
            return bad(r, g, "attrs[%d]: unknown setting '%s'", i, key);
    }
    return 0;
}

/* The numbers of a number attribute of type a->type, each a string. */
static int attr_numbers(struct xmd_reader *r, const config_setting_t *v, int i, const char *name,
                        struct drx_attr *a)
{
    size_t size = drx_type_size(a->type);
    struct drx_err sub;

    if (config_setting_length(v) < 1 ||
        (size_t)config_setting_length(v) * size > DRX_MAX_ATTR_BYTES)
        return bad(r, v, "attrs[%d]: %d numbers (1..%zu allowed)", i, config_setting_length(v),
                   DRX_MAX_ATTR_BYTES / size);
    a->n = (size_t)config_setting_length(v);
    if (!(a->name = strdup(name)) || !(a->value = malloc(a->n * size))) {
        drx_attr_fini(a);
        return drx_err_set(r->err, ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < a->n; k++) {
        const char *text = config_setting_get_string_elem(v, (unsigned)k);
        if (!text || drx_type_parse_value(a->type, text, (char *)a->value + k * size, &sub)) {
            drx_attr_fini(a);
            return bad(r, v, "attrs[%d]: value %zu: %s", i, k + 1,
                       text ? sub.msg : "not a number in quotes");
        }
    }
    return 0;
}

/* One attribute group { name = "..."; type = "..."; value = ...; }: a
 * string value for type "string", else a non-empty array of numbers, each
 * written as a string so that every value (NaN, the largest u64) is kept
 * exactly; anything else in the group is refused. */
static int parse_attr(struct xmd_reader *r, const config_setting_t *g, int i, struct drx_attr *a)
{
    const config_setting_t *f, *v;
    const char *name, *type;
    int rc = 0;
    struct drx_err sub;

    if (!config_setting_is_group(g))
        return bad(r, g, "attrs[%d] is not a group", i);
    if ((rc = attr_keys(r, g, i)))
        return rc;
    if (!(f = need(r, g, "name", CONFIG_TYPE_STRING, &rc)))
        return rc;
    name = config_setting_get_string(f);
    if (drx_attr_name_check(name, &sub))
        return bad(r, f, "attrs[%d]: %s", i, sub.msg);
    if (!(f = need(r, g, "type", CONFIG_TYPE_STRING, &rc)))
        return rc;
    type = config_setting_get_string(f);
    if (strcmp(type, "string") == 0) {
        if (!(v = need(r, g, "value", CONFIG_TYPE_STRING, &rc)))
            return rc;
        if (drx_attr_parse(name, NULL, config_setting_get_string(v), a, &sub))
            return bad(r, v, "attrs[%d]: %s", i, sub.msg);
        return 0;
    }
    memset(a, 0, sizeof *a);
    if (drx_type_parse(type, &a->type, NULL) || drx_type_is_complex(a->type))
        return bad(r, f, "attrs[%d]: type '%.40s' is not string or a non-complex element type", i,
                   type);
    if (!(v = need(r, g, "value", CONFIG_TYPE_ARRAY, &rc)))
        return rc;
    return attr_numbers(r, v, i, name, a);
}

/* Each checker below takes the setting of its key (present, of the
 * table's type) and fills its part of m; the table gives their order,
 * which is the order of dependence (rank before vectors, the history
 * before what must agree with it). */
typedef int xmd_key_fn(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m);

static int key_version(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    (void)m;
    r->version = config_setting_get_int(s);
    if (r->version < 1 || r->version > DRX_XMD_VERSION)
        return bad(r, s, "version %d is not supported (this drx reads versions 1 to %d)",
                   r->version, DRX_XMD_VERSION);
    return 0;
}

static int key_type(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    struct drx_err sub;

    if (drx_type_parse(config_setting_get_string(s), &m->type, &sub))
        return bad(r, s, "%s", sub.msg);
    return 0;
}

static int key_rank(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    m->rank = config_setting_get_int(s);
    if (m->rank < 1 || m->rank > DRX_MAX_RANK)
        return bad(r, s, "rank %d is not in 1..%d", m->rank, DRX_MAX_RANK);
    return 0;
}

static int key_chunk(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    return vec_of(r, s, "chunk", m->rank, m->chunk);
}

static int key_initial(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    return vec_of(r, s, "initial", m->rank, m->initial);
}

/* The bounds as written are kept aside: the history decides them.  With
 * chunk and initial known, the sizes and the initial map follow. */
static int key_bounds(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    struct drx_err sub;
    int rc = vec_of(r, s, "bounds", m->rank, r->stored_bounds);

    if (rc)
        return rc;
    if (drx_xmd_derive(m, &sub))
        return bad(r, config_setting_get_member(r->root, "chunk"), "%s", sub.msg);
    memcpy(m->bounds, m->initial, sizeof m->bounds);
    return 0;
}

static int key_dims(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    if (config_setting_length(s) != m->rank)
        return bad(r, s, "'dims' has %d entries for rank %d", config_setting_length(s), m->rank);
    for (int i = 0; i < m->rank; i++) {
        const char *name = config_setting_get_string_elem(s, (unsigned)i);
        if (!name)
            return bad(r, s, "dims[%d] is not a string", i);
        if (name[0] && !drx_array_dim_name_valid(name))
            return bad(r, s, "dims[%d] '%.80s' is not a valid dimension name", i, name);
        for (int j = 0; j < i; j++)
            if (name[0] && strcmp(name, m->dim_name[j]) == 0)
                return bad(r, s, "dimension name '%s' is used twice", name);
        strcpy(m->dim_name[i], name);
    }
    return 0;
}

static int key_fill(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    struct drx_err sub;

    if (drx_type_parse_value(m->type, config_setting_get_string(s), m->fill, &sub))
        return bad(r, s, "fill: %s", sub.msg);
    return 0;
}

/* The optional attrs list: every attribute valid, no name twice. */
static int key_attrs(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    int n = config_setting_length(s), rc;

    if (n > DRX_MAX_ATTRS)
        return bad(r, s, "%d attributes (at most %d)", n, DRX_MAX_ATTRS);
    if (n == 0)
        return 0;
    if (!(m->attrs = calloc((size_t)n, sizeof *m->attrs)))
        return drx_err_set(r->err, ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(s, (unsigned)i);
        if ((rc = parse_attr(r, g, i, &m->attrs[i])))
            return rc;
        m->nattrs++;
        for (int j = 0; j < i; j++)
            if (strcmp(m->attrs[j].name, m->attrs[i].name) == 0)
                return bad(r, g, "attribute '%s' is set twice", m->attrs[i].name);
    }
    return 0;
}

/* history[i]: one growth, replayed onto m. */
static int history_rec(struct xmd_reader *r, const config_setting_t *h, int i,
                       struct drx_array_meta *m)
{
    const config_setting_t *f;
    uint64_t from, to;
    int dim, rc = 0;
    struct drx_err sub;

    if (!config_setting_is_group(h))
        return bad(r, h, "history[%d] is not a group", i);
    if (!(f = need(r, h, "dim", CONFIG_TYPE_INT, &rc)))
        return rc;
    dim = config_setting_get_int(f);
    if (dim < 0 || dim >= m->rank)
        return bad(r, f, "history[%d]: dimension %d out of range", i, dim);
    if ((rc = member_u64(r, h, "from", &from)) || (rc = member_u64(r, h, "to", &to)))
        return rc;
    if (from != m->bounds[dim] || to <= from)
        return bad(r, h,
                   "history[%d]: growth %" PRIu64 "->%" PRIu64 " does not follow extent %" PRIu64,
                   i, from, to, m->bounds[dim]);
    if (drx_xmd_grow(m, dim, to, &sub))
        return bad(r, h, "history[%d]: %s", i, sub.msg);
    if (drx_xmd_history_add(m, dim, from, to))
        return drx_err_set(r->err, ENOMEM, "out of memory");
    return 0;
}

/* The history decides the map; the stored axial vectors and counts must
 * agree with it, so a tampered file cannot send F* outside the .xta. */
static int key_history(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    int rc;

    for (int i = 0; i < config_setting_length(s); i++)
        if ((rc = history_rec(r, config_setting_get_elem(s, (unsigned)i), i, m)))
            return rc;
    if (memcmp(r->stored_bounds, m->bounds, sizeof(uint64_t) * (size_t)m->rank))
        return bad(r, config_setting_get_member(r->root, "bounds"),
                   "bounds do not match the extension history");
    return 0;
}

static int key_chunk_count(struct xmd_reader *r, const config_setting_t *s,
                           struct drx_array_meta *m)
{
    uint64_t u = 0;
    int rc = get_u64(r, s, "chunk_count", &u);

    if (rc)
        return rc;
    if (u != m->map.nchunks)
        return bad(r, s,
                   "chunk_count %" PRIu64 " does not match the extension history (%" PRIu64 ")", u,
                   m->map.nchunks);
    return 0;
}

/* axial[j][i] must be the record the history gave. */
static int axial_rec(struct xmd_reader *r, const config_setting_t *g, int j, int i,
                     const struct drx_array_meta *m)
{
    const struct drx_axial_rec *want = &m->map.vec[j].rec[i];
    const config_setting_t *f;
    uint64_t start = 0, coef[DRX_MAX_RANK];
    int rc = 0;

    if (!config_setting_is_group(g))
        return bad(r, g, "axial[%d][%d] is not a record", j, i);
    if ((rc = member_u64(r, g, "start", &start)))
        return rc;
    if (!(f = need(r, g, "addr", CONFIG_TYPE_INT64, &rc)))
        return rc;
    if ((rc = get_vec(r, g, "coef", m->rank, coef)))
        return rc;
    if (start != want->start || config_setting_get_int64(f) != want->addr ||
        memcmp(coef, want->coef, sizeof(uint64_t) * (size_t)m->rank))
        return bad(r, g, "axial[%d][%d] does not match the extension history", j, i);
    return 0;
}

static int key_axial(struct xmd_reader *r, const config_setting_t *s, struct drx_array_meta *m)
{
    int rc;

    if (config_setting_length(s) != m->rank)
        return bad(r, s, "'axial' has %d vectors for rank %d", config_setting_length(s), m->rank);
    for (int j = 0; j < m->rank; j++) {
        const config_setting_t *vec = config_setting_get_elem(s, (unsigned)j);
        if (config_setting_type(vec) != CONFIG_TYPE_LIST)
            return bad(r, vec, "axial[%d] is not a list", j);
        if ((size_t)config_setting_length(vec) != m->map.vec[j].n)
            return bad(r, vec, "axial[%d] has %d records; the extension history gives %zu", j,
                       config_setting_length(vec), m->map.vec[j].n);
        for (int i = 0; i < config_setting_length(vec); i++)
            if ((rc = axial_rec(r, config_setting_get_elem(vec, (unsigned)i), j, i, m)))
                return rc;
    }
    return 0;
}

static const struct xmd_key {
    const char *name;
    int type; /* CONFIG_TYPE_*; INT64 takes INT too */
    bool optional;
    xmd_key_fn *check;
} xmd_keys[] = {
    {"version", CONFIG_TYPE_INT, false, key_version},
    {"type", CONFIG_TYPE_STRING, false, key_type},
    {"rank", CONFIG_TYPE_INT, false, key_rank},
    {"chunk", CONFIG_TYPE_ARRAY, false, key_chunk},
    {"initial", CONFIG_TYPE_ARRAY, false, key_initial},
    {"bounds", CONFIG_TYPE_ARRAY, false, key_bounds},
    {"dims", CONFIG_TYPE_ARRAY, false, key_dims},
    {"fill", CONFIG_TYPE_STRING, false, key_fill},
    {"attrs", CONFIG_TYPE_LIST, true, key_attrs},
    {"history", CONFIG_TYPE_LIST, false, key_history},
    {"chunk_count", CONFIG_TYPE_INT64, false, key_chunk_count},
    {"axial", CONFIG_TYPE_LIST, false, key_axial},
};

bool drx_xmd_known_key(const char *w, size_t n)
{
    for (size_t k = 0; k < sizeof xmd_keys / sizeof xmd_keys[0]; k++)
        if (strlen(xmd_keys[k].name) == n && memcmp(xmd_keys[k].name, w, n) == 0)
            return true;
    return false;
}

static int parse_meta(struct xmd_reader *r, config_t *cfg, struct drx_array_meta *m)
{
    int rc;

    r->root = config_root_setting(cfg);
    for (size_t k = 0; k < sizeof xmd_keys / sizeof xmd_keys[0]; k++) {
        const struct xmd_key *key = &xmd_keys[k];
        const config_setting_t *s = config_setting_get_member(r->root, key->name);
        if (!s && key->optional)
            continue;
        if (!s)
            return bad(r, NULL, "missing '%s'", key->name);
        if (!type_fits(config_setting_type(s), key->type))
            return key->type == CONFIG_TYPE_LIST && key->optional
                       ? bad(r, s, "'%s' is not a list ( ... )", key->name)
                       : bad(r, s, "'%s' has the wrong type", key->name);
        if ((rc = key->check(r, s, m)))
            return rc;
    }
    return 0;
}

int drx_xmd_parse_base(const char *file, char *text, size_t len, struct drx_array_meta *m,
                       int *version, struct drx_err *err)
{
    struct xmd_reader r = {.file = file, .err = err};
    char keep = text[len];
    config_t cfg;
    int rc;

    /* libconfig's tree costs about 130 bytes a setting: a text whose shape
     * no valid .xmd has is refused before it is built */
    if ((rc = drx_cfgfile_check(text, len, file, 0, err)) ||
        (rc = drx_xmd_shape(file, text, len, err)))
        return rc;
    text[len] = '\0'; /* libconfig reads up to a NUL */
    rc = drx_cfgfile_parse(text, len, file, DRX_CFGFILE_CHECKED, &cfg, NULL, err);
    text[len] = keep;
    if (rc < 0)
        return rc;
    rc = parse_meta(&r, &cfg, m);
    config_destroy(&cfg);
    *version = r.version;
    return rc;
}

/* ---- writing the .xmd ---- */

/* "name = [ 1L, 2L ]" with the caller's terminator after it. */
static void put_vec(FILE *f, const char *name, int rank, const uint64_t *v, const char *end)
{
    fprintf(f, "%s = [", name);
    for (int i = 0; i < rank; i++)
        fprintf(f, "%s%" PRIu64 "L", i ? ", " : " ", v[i]);
    fprintf(f, " ]%s", end);
}

/* A libconfig string literal: quote and backslash escaped, control bytes
 * as \xNN (libconfig 1.5 reads them back), other bytes (UTF-8) as they are. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_attrs(FILE *f, const struct drx_array_meta *m)
{
    char num[160];

    if (!m->nattrs)
        return;
    fprintf(f, "attrs = (");
    for (size_t i = 0; i < m->nattrs; i++) {
        const struct drx_attr *a = &m->attrs[i];
        fprintf(f, "%s\n  { name = ", i ? "," : "");
        put_string(f, a->name);
        fprintf(f, "; type = \"%s\"; value = ", drx_attr_type_name(a));
        if (a->is_string) {
            put_string(f, a->value);
        } else {
            fprintf(f, "[");
            for (size_t k = 0; k < a->n; k++) {
                drx_type_format_value(a->type, (const char *)a->value + k * drx_type_size(a->type),
                                      num, sizeof num);
                fprintf(f, "%s\"%s\"", k ? ", " : " ", num);
            }
            fprintf(f, " ]");
        }
        fprintf(f, "; }");
    }
    fprintf(f, "\n);\n");
}

/* The libconfig part of an array as created (b: no history). */
static void put_base(FILE *f, const struct drx_array_meta *b)
{
    char fill[160];

    drx_type_format_value(b->type, b->fill, fill, sizeof fill);
    fprintf(f, "# drx extendible array metadata; format in drxfs's README (\"The .xmd file\").\n");
    fprintf(f, "version = %d;\ntype = \"%s\";\nrank = %d;\n", DRX_XMD_VERSION, drx_type_name(b->type),
            b->rank);
    put_vec(f, "chunk", b->rank, b->chunk, ";\n");
    put_vec(f, "bounds", b->rank, b->bounds, ";\n");
    put_vec(f, "initial", b->rank, b->initial, ";\n");
    fprintf(f, "dims = [");
    for (int i = 0; i < b->rank; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : " ", b->dim_name[i]);
    fprintf(f, " ];\nfill = \"%s\";\n", fill);
    put_attrs(f, b);
    fprintf(f, "chunk_count = %" PRIu64 "L;\n", b->map.nchunks);
    fprintf(f, "history = ( );\n");
    fprintf(f, "axial = (\n");
    for (int j = 0; j < b->rank; j++) {
        const struct drx_axial_vec *v = &b->map.vec[j];
        fprintf(f, "  ( # dimension %d\n", j);
        for (size_t i = 0; i < v->n; i++) {
            fprintf(f, "    { start = %" PRIu64 "L; addr = %" PRId64 "L; ", v->rec[i].start,
                    v->rec[i].addr);
            put_vec(f, "coef", b->rank, v->rec[i].coef, i + 1 < v->n ? "; },\n" : "; }\n");
        }
        fprintf(f, "  )%s\n", j + 1 < b->rank ? "," : "");
    }
    fprintf(f, ");\n");
}

/* The .xmd written whole: the array as it was created, then its history
 * as growth records.  The same growths as libconfig lists (`history`,
 * `axial`, which files written by earlier versions hold and which are
 * still read) cost about 3 us each to read against 20 ns for a record
 * (measured at 10,000), so a file written whole reads as fast as one
 * that was only appended to. */
static int write_meta_stream(FILE *f, const struct drx_array_meta *m)
{
    struct drx_array_meta b = {.type = m->type, .rank = m->rank, .attrs = m->attrs,
                               .nattrs = m->nattrs};
    struct drx_err sub;
    int rc;

    memcpy(b.chunk, m->chunk, sizeof b.chunk);
    memcpy(b.initial, m->initial, sizeof b.initial);
    memcpy(b.bounds, m->initial, sizeof b.bounds);
    memcpy(b.dim_name, m->dim_name, sizeof b.dim_name);
    memcpy(b.fill, m->fill, sizeof b.fill);
    if (drx_xmd_derive(&b, &sub))
        return -EINVAL;
    put_base(f, &b);
    rc = drx_xmd_put_records(f, &b, m);
    drx_map_fini(&b.map); /* attrs are m's */
    return rc ? rc : ferror(f) ? -EIO : 0;
}

/* Replaces the .xmd atomically (drx_replace_write: readers see the old or
 * the new metadata, never a mix).  The new .xmd keeps the mode and owner of
 * the one it replaces, like (a chmod or chown of the array survives an
 * extension by anyone allowed to extend); a first one takes those of the
 * .xta, so umask applies to both.  like is the caller's, never the name's
 * file at the time of the write: lstat(xmd_path) here gave a user who
 * exchanged his .xmd's name with root's as the daemon rewrote his a file
 * of root's holding his metadata. */
int drx_xmd_write(const char *xmd_path, const struct stat *like, unsigned flags,
                  const struct drx_array_meta *m, struct drx_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc;

    if (!f)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = write_meta_stream(f, m);
    if (fclose(f) && rc == 0)
        rc = -ENOMEM;
    if (rc) {
        rc = drx_err_set(err, -rc, "%s: %s", xmd_path, strerror(-rc));
        goto out;
    }
    /* Past what every reader takes, the file written would make the array
     * unreadable for good (an attribute more, a fold of the growths):
     * refused before anything is replaced. */
    if (len > DRX_XMD_MAX_BYTES) {
        rc = drx_err_set(err, EFBIG,
                         "%s: the metadata would take %zu bytes, more than the %zu a store "
                         "file may have: not changed",
                         xmd_path, len, DRX_XMD_MAX_BYTES);
        goto out;
    }
    rc = drx_replace_write(xmd_path, text, len, like, 0, flags, NULL);
    if (rc == -EACCES) {
        /* written whole, it is a new file beside it: the directory is
         * what refused (a user the .xmd's ACL lets write it, in a
         * directory he may not write, was told "X.xmd: Permission denied") */
        const char *base;
        char dir[PATH_MAX];
        if (drx_path_split(xmd_path, dir, sizeof dir, &base) == 0 && access(dir, W_OK) != 0)
            rc = drx_err_set(err, EACCES,
                             "%s: %s: the .xmd is written whole here (an attribute, or an "
                             "extension by another than its owner), which needs write access "
                             "to its directory %s",
                             xmd_path, strerror(EACCES), dir);
        else
            rc = drx_err_set(err, EACCES, "%s: %s", xmd_path, strerror(EACCES));
    } else if (rc) {
        rc = drx_err_set(err, -rc, "%s: %s", xmd_path, strerror(-rc));
    }
out:
    free(text);
    return rc;
}

