/* Extendible array files: metadata (.xmd) and chunk file (.xta). */
#include "drx/array.h"
#include "drx/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libconfig.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_i.h"
#include "cache_i.h"
#include "cfgfile_i.h"
#include "drx/attr.h"
#include "drx/io.h"
#include "replace_i.h"

#define XMD_VERSION 1

/* Stripes of the per-chunk write lock table (see array_i.h). */
#define CHUNK_LOCKS 64

/* Largest .xmd read (a million growths fit; a bigger file is hostile). */
#define XMD_MAX_BYTES ((size_t)64 << 20)

/* Elements in an array at most (keeps every byte count in 63 bits). */
#define MAX_ELEMS ((uint64_t)1 << 59)

struct drx_array {
    char *path, *xmd_path, *xta_path;
    int mode;
    int xta_fd;
    struct drx_array_meta meta;
    struct stat xmd_st; /* of the .xmd last read, to notice replacements */
    struct drx_cache *cache;
    bool cache_serves; /* the cache exists and a chunk fits it comfortably */
    int watch_fd;      /* inotify on the .xta while there is a cache, or -1 */
    pthread_mutex_t watch_lock;
    pthread_mutex_t chunk_lock[CHUNK_LOCKS];
};

static char *path_with(const char *path, const char *suffix)
{
    size_t n = strlen(path), s = strlen(suffix);
    char *p = malloc(n + s + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, s + 1);
    }
    return p;
}

bool drx_array_dim_name_valid(const char *name)
{
    size_t n = strlen(name);
    /* Names that would read as another view key are refused, so that a
     * view word always means one thing. */
    if (n == 0 || n > DRX_MAX_DIM_NAME || strcmp(name, "order") == 0 || strcmp(name, "rep") == 0)
        return false;
    if (strncmp(name, "dim", 3) == 0 && n > 3 && isdigit((unsigned char)name[3]))
        return false;
    if (!isalpha((unsigned char)name[0]) && name[0] != '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return false;
    return true;
}

int drx_array_dim_lookup(const struct drx_array_meta *m, const char *word)
{
    if (strncmp(word, "dim", 3) == 0 && isdigit((unsigned char)word[3])) {
        char *end;
        unsigned long d = strtoul(word + 3, &end, 10);
        if (*end == '\0' && d < (unsigned long)m->rank && (word[3] != '0' || word[4] == '\0'))
            return (int)d;
        return -1;
    }
    if (isdigit((unsigned char)word[0])) {
        char *end;
        unsigned long d = strtoul(word, &end, 10);
        if (*end == '\0' && d < (unsigned long)m->rank)
            return (int)d;
        return -1;
    }
    for (int d = 0; d < m->rank; d++)
        if (m->dim_name[d][0] && strcmp(m->dim_name[d], word) == 0)
            return d;
    return -1;
}

void drx_array_meta_fini(struct drx_array_meta *m)
{
    drx_map_fini(&m->map);
    free(m->history);
    for (size_t i = 0; i < m->nattrs; i++)
        drx_attr_fini(&m->attrs[i]);
    free(m->attrs);
    memset(m, 0, sizeof *m);
}

static bool fill_is_zero(const struct drx_array_meta *m)
{
    for (size_t i = 0; i < m->elem_size; i++)
        if (m->fill[i])
            return false;
    return true;
}

/* Derived sizes and the initial map, from type/rank/chunk/initial. */
static int meta_derive(struct drx_array_meta *m, struct drx_err *err)
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
        if (__builtin_mul_overflow(ne, m->initial[i], &ne) || ne > MAX_ELEMS)
            return drx_err_set(err, EFBIG, "array has more than 2^59 elements");
        b[i] = (m->initial[i] - 1) / m->chunk[i] + 1;
    }
    m->chunk_elems = ce;
    m->chunk_bytes = ce * m->elem_size;
    rc = drx_map_init(&m->map, m->rank, b);
    if (rc)
        return drx_err_set(err, -rc, "too many chunks");
    return 0;
}

/* Applies one growth to bounds and map; history is the caller's. */
static int meta_grow(struct drx_array_meta *m, int dim, uint64_t to, struct drx_err *err)
{
    uint64_t ne = 1, nb;
    int rc;

    for (int i = 0; i < m->rank; i++)
        if (__builtin_mul_overflow(ne, i == dim ? to : m->bounds[i], &ne) || ne > MAX_ELEMS)
            return drx_err_set(err, EFBIG, "array would have more than 2^59 elements");
    nb = (to - 1) / m->chunk[dim] + 1;
    if (nb > m->map.bound[dim]) {
        rc = drx_map_grow(&m->map, dim, nb);
        if (rc)
            return drx_err_set(err, -rc, "too many chunks");
    }
    m->bounds[dim] = to;
    return 0;
}

static int history_add(struct drx_array_meta *m, int dim, uint64_t from, uint64_t to)
{
    struct drx_growth *h;

    if (m->nhistory && m->history[m->nhistory - 1].dim == dim &&
        m->history[m->nhistory - 1].to == from) {
        m->history[m->nhistory - 1].to = to;
        return 0;
    }
    h = realloc(m->history, (m->nhistory + 1) * sizeof *h);
    if (!h)
        return -ENOMEM;
    m->history = h;
    m->history[m->nhistory++] = (struct drx_growth){dim, from, to};
    return 0;
}

/* ---- reading the .xmd ---- */

struct xmd_reader {
    const char *file;
    struct drx_err *err;
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

static const config_setting_t *need(struct xmd_reader *r, const config_setting_t *root,
                                    const char *name, int type, int *rc)
{
    const config_setting_t *s = config_setting_get_member(root, name);
    int t;

    if (!s) {
        *rc = bad(r, NULL, "missing '%s'", name);
        return NULL;
    }
    t = config_setting_type(s);
    if (type == CONFIG_TYPE_INT64 ? (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) : t != type) {
        *rc = bad(r, s, "'%s' has the wrong type", name);
        return NULL;
    }
    return s;
}

static int get_u64(struct xmd_reader *r, const config_setting_t *s, const char *what, uint64_t *out)
{
    int t = config_setting_type(s);
    long long v;

    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return bad(r, s, "%s is not an integer", what);
    v = config_setting_get_int64(s);
    if (v < 0)
        return bad(r, s, "%s is negative", what);
    *out = (uint64_t)v;
    return 0;
}

static int get_vec(struct xmd_reader *r, const config_setting_t *root, const char *name, int rank,
                   uint64_t *out)
{
    int rc = 0;
    const config_setting_t *s = need(r, root, name, CONFIG_TYPE_ARRAY, &rc);

    if (!s)
        return rc;
    if (config_setting_length(s) != rank)
        return bad(r, s, "'%s' has %d entries for rank %d", name, config_setting_length(s), rank);
    for (int i = 0; i < rank; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s[%d]", name, i);
        rc = get_u64(r, config_setting_get_elem(s, (unsigned)i), what, &out[i]);
        if (rc)
            return rc;
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
    size_t size;
    int rc = 0;
    struct drx_err sub;

    if (!config_setting_is_group(g))
        return bad(r, g, "attrs[%d] is not a group", i);
    for (int k = 0; k < config_setting_length(g); k++) {
        const char *key = config_setting_name(config_setting_get_elem(g, (unsigned)k));
        if (strcmp(key, "name") && strcmp(key, "type") && strcmp(key, "value"))
            return bad(r, g, "attrs[%d]: unknown setting '%s'", i, key);
    }
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
    size = drx_type_size(a->type);
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

/* The optional attrs list: every attribute valid, no name twice. */
static int parse_attrs(struct xmd_reader *r, const config_setting_t *root, struct drx_array_meta *m)
{
    const config_setting_t *s = config_setting_get_member(root, "attrs");
    int n, rc;

    if (!s)
        return 0;
    if (config_setting_type(s) != CONFIG_TYPE_LIST)
        return bad(r, s, "'attrs' is not a list ( ... )");
    n = config_setting_length(s);
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

static int parse_meta(struct xmd_reader *r, config_t *cfg, struct drx_array_meta *m)
{
    const config_setting_t *root = config_root_setting(cfg), *s;
    struct drx_map stored;
    uint64_t u;
    int rc = 0;
    struct drx_err sub;

    memset(&stored, 0, sizeof stored);
    if (!(s = need(r, root, "version", CONFIG_TYPE_INT, &rc)))
        return rc;
    if (config_setting_get_int(s) != XMD_VERSION)
        return bad(r, s, "version %d is not supported (this drx reads version %d)",
                   config_setting_get_int(s), XMD_VERSION);
    if (!(s = need(r, root, "type", CONFIG_TYPE_STRING, &rc)))
        return rc;
    if (drx_type_parse(config_setting_get_string(s), &m->type, &sub))
        return bad(r, s, "%s", sub.msg);
    if (!(s = need(r, root, "rank", CONFIG_TYPE_INT, &rc)))
        return rc;
    m->rank = config_setting_get_int(s);
    if (m->rank < 1 || m->rank > DRX_MAX_RANK)
        return bad(r, s, "rank %d is not in 1..%d", m->rank, DRX_MAX_RANK);
    if ((rc = get_vec(r, root, "chunk", m->rank, m->chunk)) ||
        (rc = get_vec(r, root, "initial", m->rank, m->initial)) ||
        (rc = get_vec(r, root, "bounds", m->rank, m->bounds)))
        return rc;
    if (meta_derive(m, &sub)) {
        s = config_setting_get_member(root, "chunk");
        return bad(r, s, "%s", sub.msg);
    }

    if (!(s = need(r, root, "dims", CONFIG_TYPE_ARRAY, &rc)))
        return rc;
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

    if (!(s = need(r, root, "fill", CONFIG_TYPE_STRING, &rc)))
        return rc;
    if (drx_type_parse_value(m->type, config_setting_get_string(s), m->fill, &sub))
        return bad(r, s, "fill: %s", sub.msg);
    if ((rc = parse_attrs(r, root, m)))
        return rc;

    /* The history decides the map; the stored axial vectors and counts must
     * agree with it, so a tampered file cannot send F* outside the .xta. */
    if (!(s = need(r, root, "history", CONFIG_TYPE_LIST, &rc)))
        return rc;
    {
        uint64_t stored_bounds[DRX_MAX_RANK];
        const config_setting_t *hist = s;
        memcpy(stored_bounds, m->bounds, sizeof stored_bounds);
        memcpy(m->bounds, m->initial, sizeof m->bounds);
        for (int i = 0; i < config_setting_length(hist); i++) {
            const config_setting_t *h = config_setting_get_elem(hist, (unsigned)i), *f;
            uint64_t from, to;
            int dim;
            if (!config_setting_is_group(h))
                return bad(r, h, "history[%d] is not a group", i);
            if (!(f = need(r, h, "dim", CONFIG_TYPE_INT, &rc)))
                return rc;
            dim = config_setting_get_int(f);
            if (dim < 0 || dim >= m->rank)
                return bad(r, f, "history[%d]: dimension %d out of range", i, dim);
            if (!(f = need(r, h, "from", CONFIG_TYPE_INT64, &rc)) ||
                (rc = get_u64(r, f, "from", &from)))
                return rc;
            if (!(f = need(r, h, "to", CONFIG_TYPE_INT64, &rc)) || (rc = get_u64(r, f, "to", &to)))
                return rc;
            if (from != m->bounds[dim] || to <= from)
                return bad(r, h,
                           "history[%d]: growth %" PRIu64 "->%" PRIu64
                           " does not follow extent %" PRIu64,
                           i, from, to, m->bounds[dim]);
            if (meta_grow(m, dim, to, &sub) || history_add(m, dim, from, to))
                return bad(r, h, "history[%d]: %s", i, sub.msg);
        }
        if (memcmp(stored_bounds, m->bounds, sizeof(uint64_t) * (size_t)m->rank))
            return bad(r, config_setting_get_member(root, "bounds"),
                       "bounds do not match the extension history");
    }

    if (!(s = need(r, root, "chunk_count", CONFIG_TYPE_INT64, &rc)) ||
        (rc = get_u64(r, s, "chunk_count", &u)))
        return rc;
    if (u != m->map.nchunks)
        return bad(r, s,
                   "chunk_count %" PRIu64 " does not match the extension history (%" PRIu64 ")", u,
                   m->map.nchunks);

    if (!(s = need(r, root, "axial", CONFIG_TYPE_LIST, &rc)))
        return rc;
    if (config_setting_length(s) != m->rank)
        return bad(r, s, "'axial' has %d vectors for rank %d", config_setting_length(s), m->rank);
    stored.rank = m->rank;
    stored.nchunks = m->map.nchunks;
    stored.last_dim = m->map.last_dim;
    memcpy(stored.bound, m->map.bound, sizeof stored.bound);
    for (int j = 0; j < m->rank && rc == 0; j++) {
        const config_setting_t *vec = config_setting_get_elem(s, (unsigned)j);
        if (config_setting_type(vec) != CONFIG_TYPE_LIST) {
            rc = bad(r, vec, "axial[%d] is not a list", j);
            break;
        }
        if ((size_t)config_setting_length(vec) != m->map.vec[j].n) {
            rc = bad(r, vec, "axial[%d] has %d records; the extension history gives %zu", j,
                     config_setting_length(vec), m->map.vec[j].n);
            break;
        }
        for (int i = 0; i < config_setting_length(vec) && rc == 0; i++) {
            const config_setting_t *g = config_setting_get_elem(vec, (unsigned)i), *f;
            const struct drx_axial_rec *want = &m->map.vec[j].rec[i];
            uint64_t coef[DRX_MAX_RANK];
            long long addr;
            if (!config_setting_is_group(g) || !(f = need(r, g, "start", CONFIG_TYPE_INT64, &rc)) ||
                (rc = get_u64(r, f, "start", &u)))
                rc = rc ? rc : bad(r, g, "axial[%d][%d] is not a record", j, i);
            else if (!(f = need(r, g, "addr", CONFIG_TYPE_INT64, &rc)))
                ;
            else if ((addr = config_setting_get_int64(f)),
                     (rc = get_vec(r, g, "coef", m->rank, coef)))
                ;
            else if (u != want->start || addr != want->addr ||
                     memcmp(coef, want->coef, sizeof(uint64_t) * (size_t)m->rank))
                rc = bad(r, g, "axial[%d][%d] does not match the extension history", j, i);
        }
    }
    return rc;
}

/* Opens an array file without following a symlink in its last component
 * and requires a regular file: the daemon runs as root on a store users can
 * write, and NAME.xta -> /etc/shadow must not become readable.  A hard
 * link's other name (any file its maker could write) must not be changed
 * by a put or an extension: writers check the link count on top. */
static int open_regular(const char *path, int flags, struct stat *st, struct drx_err *err)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        if (errno == ELOOP)
            return drx_err_set(err, ELOOP, "%s is a symbolic link (refused)", path);
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return drx_err_set(err, EIO, "%s is not a regular file (refused)", path);
    }
    /* Other hard links are the writers' concern (drx_array_check_links):
     * reading one is safe, since the mount reports the file's own owner and
     * mode and the kernel checks them. */
    /* O_NONBLOCK was only for the open (a FIFO must not hang us) */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int drx_array_meta_load(const char *xmd_path, struct drx_array_meta *m, struct drx_err *err)
{
    struct xmd_reader r = {xmd_path, err};
    struct drx_cfgfile cf;
    int rc;

    memset(m, 0, sizeof *m);
    /* Never a symlink, a FIFO or an @include: the daemon reads .xmd files
     * users can write, as root. */
    rc = drx_cfgfile_read(AT_FDCWD, xmd_path, xmd_path, 0, XMD_MAX_BYTES, &cf, NULL, err);
    if (rc < 0)
        return rc;
    rc = parse_meta(&r, &cf.cfg, m);
    drx_cfgfile_fini(&cf);
    if (rc)
        drx_array_meta_fini(m);
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

static int write_meta_stream(FILE *f, const struct drx_array_meta *m)
{
    char fill[160];

    drx_type_format_value(m->type, m->fill, fill, sizeof fill);
    fprintf(f, "# drx extendible array metadata; format in drxfs's README (\"The .xmd file\").\n");
    fprintf(f, "version = %d;\ntype = \"%s\";\nrank = %d;\n", XMD_VERSION, drx_type_name(m->type),
            m->rank);
    put_vec(f, "chunk", m->rank, m->chunk, ";\n");
    put_vec(f, "bounds", m->rank, m->bounds, ";\n");
    put_vec(f, "initial", m->rank, m->initial, ";\n");
    fprintf(f, "dims = [");
    for (int i = 0; i < m->rank; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : " ", m->dim_name[i]);
    fprintf(f, " ];\nfill = \"%s\";\n", fill);
    put_attrs(f, m);
    fprintf(f, "chunk_count = %" PRIu64 "L;\n", m->map.nchunks);
    fprintf(f, "history = (");
    for (size_t i = 0; i < m->nhistory; i++)
        fprintf(f, "%s\n  { dim = %d; from = %" PRIu64 "L; to = %" PRIu64 "L; }", i ? "," : "",
                m->history[i].dim, m->history[i].from, m->history[i].to);
    fprintf(f, "%s);\n", m->nhistory ? "\n" : " ");
    fprintf(f, "axial = (\n");
    for (int j = 0; j < m->rank; j++) {
        const struct drx_axial_vec *v = &m->map.vec[j];
        fprintf(f, "  ( # dimension %d\n", j);
        for (size_t i = 0; i < v->n; i++) {
            fprintf(f, "    { start = %" PRIu64 "L; addr = %" PRId64 "L; ", v->rec[i].start,
                    v->rec[i].addr);
            put_vec(f, "coef", m->rank, v->rec[i].coef, i + 1 < v->n ? "; },\n" : "; }\n");
        }
        fprintf(f, "  )%s\n", j + 1 < m->rank ? "," : "");
    }
    fprintf(f, ");\n");
    return ferror(f) ? -EIO : 0;
}

/* Replaces the .xmd atomically (drx_replace_write: readers see the old or
 * the new metadata, never a mix).  The new .xmd keeps the mode and owner of
 * the one it replaces (a chmod or chown of the array survives an extension
 * by anyone allowed to extend); a first one takes those of the .xta (open
 * as xta_fd), so umask applies to both. */
static int write_meta(const char *xmd_path, int xta_fd, const struct drx_array_meta *m,
                      struct drx_err *err)
{
    struct stat like;
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
    if (!(lstat(xmd_path, &like) == 0 && S_ISREG(like.st_mode)) && fstat(xta_fd, &like) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", xmd_path, strerror(errno));
        goto out;
    }
    rc = drx_replace_write(xmd_path, text, len, &like, 0, 0, NULL);
    if (rc)
        rc = drx_err_set(err, -rc, "%s: %s", xmd_path, strerror(-rc));
out:
    free(text);
    return rc;
}

/* ---- chunk file ---- */

/* Makes chunks [from, to) hold the fill value.  The file is first cut to
 * `from` chunks so that bytes a crash left past the committed end never show
 * up as data. */
static int fill_chunks(int fd, const struct drx_array_meta *m, uint64_t from, uint64_t to)
{
    uint64_t start = from * m->chunk_bytes, end = to * m->chunk_bytes;
    size_t blen;
    unsigned char *buf;
    int rc = 0;

    if (ftruncate(fd, (off_t)start))
        return -errno;
    if (fill_is_zero(m))
        return ftruncate(fd, (off_t)end) ? -errno : 0;
    blen = m->chunk_bytes < ((size_t)4 << 20) ? m->chunk_bytes : ((size_t)4 << 20);
    blen -= blen % m->elem_size;
    buf = malloc(blen);
    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < blen; i += m->elem_size)
        memcpy(buf + i, m->fill, m->elem_size);
    for (uint64_t off = start; off < end && rc == 0;) {
        size_t n = end - off < blen ? (size_t)(end - off) : blen;
        rc = drx_io_pwrite_all(fd, buf, n, off);
        off += n;
    }
    free(buf);
    return rc;
}

static int check_xta_size(struct drx_array *a, struct drx_err *err)
{
    struct stat st;
    uint64_t need = a->meta.map.nchunks * a->meta.chunk_bytes;

    if (fstat(a->xta_fd, &st))
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    if ((uint64_t)st.st_size < need)
        return drx_err_set(err, EIO,
                           "%s is %jd bytes, shorter than the %" PRIu64
                           " its metadata needs (run drx fsck)",
                           a->xta_path, (intmax_t)st.st_size, need);
    return 0;
}

static struct drx_array *array_alloc(const char *path, int mode)
{
    struct drx_array *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->mode = mode;
    a->xta_fd = -1;
    a->watch_fd = -1;
    pthread_mutex_init(&a->watch_lock, NULL);
    for (int i = 0; i < CHUNK_LOCKS; i++)
        pthread_mutex_init(&a->chunk_lock[i], NULL);
    a->path = strdup(path);
    a->xmd_path = path_with(path, ".xmd");
    a->xta_path = path_with(path, ".xta");
    if (!a->path || !a->xmd_path || !a->xta_path) {
        drx_array_close(a);
        return NULL;
    }
    return a;
}

int drx_array_create(const char *path, const struct drx_array_spec *spec, struct drx_array **out,
                     struct drx_err *err)
{
    struct drx_array *a = array_alloc(path, DRX_RDWR);
    struct drx_array_meta *m;
    struct stat st;
    int rc;

    *out = NULL;
    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    m = &a->meta;
    if (spec->rank < 1 || spec->rank > DRX_MAX_RANK) {
        rc = drx_err_set(err, EINVAL, "rank %d is not in 1..%d", spec->rank, DRX_MAX_RANK);
        goto fail;
    }
    if ((unsigned)spec->type >= DRX_NTYPES) {
        rc = drx_err_set(err, EINVAL, "unknown element type");
        goto fail;
    }
    m->type = spec->type;
    m->rank = spec->rank;
    for (int i = 0; i < m->rank; i++) {
        const char *name = spec->dim_name[i] ? spec->dim_name[i] : "";
        m->chunk[i] = spec->chunk[i];
        m->initial[i] = m->bounds[i] = spec->shape[i];
        if (name[0] && !drx_array_dim_name_valid(name)) {
            rc = drx_err_set(err, EINVAL,
                             "'%.80s' is not a valid dimension name (letters, digits, _; not "
                             "order, rep or dimN)",
                             name);
            goto fail;
        }
        for (int j = 0; j < i; j++)
            if (name[0] && strcmp(name, m->dim_name[j]) == 0) {
                rc = drx_err_set(err, EINVAL, "dimension name '%s' is used twice", name);
                goto fail;
            }
        strcpy(m->dim_name[i], name);
    }
    rc = meta_derive(m, err);
    if (rc)
        goto fail;
    if (spec->fill)
        memcpy(m->fill, spec->fill, m->elem_size);

    if (lstat(a->xmd_path, &st) == 0 || lstat(a->xta_path, &st) == 0) {
        rc = drx_err_set(err, EEXIST, "%s: an array (or its .xmd/.xta) already exists", path);
        goto fail;
    }
    /* Chunks first, metadata last: a crash leaves an orphan .xta at worst. */
    a->xta_fd = open(a->xta_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (a->xta_fd < 0) {
        rc = drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
        goto fail;
    }
    rc = fill_chunks(a->xta_fd, m, 0, m->map.nchunks);
    if (rc == 0 && fdatasync(a->xta_fd))
        rc = -errno;
    if (rc) {
        drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
        unlink(a->xta_path);
        goto fail;
    }
    rc = write_meta(a->xmd_path, a->xta_fd, m, err);
    if (rc) {
        unlink(a->xta_path);
        goto fail;
    }
    lstat(a->xmd_path, &a->xmd_st);
    *out = a;
    return 0;
fail:
    drx_array_close(a);
    return rc;
}

int drx_array_open(const char *path, int mode, struct drx_array **out, struct drx_err *err)
{
    struct drx_array *a = array_alloc(path, mode);
    int rc;

    *out = NULL;
    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    if (lstat(a->xmd_path, &a->xmd_st)) {
        rc = errno == ENOENT ? drx_err_set(err, ENOENT, "%s: no such array", path)
                             : drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
        goto fail;
    }
    rc = drx_array_meta_load(a->xmd_path, &a->meta, err);
    if (rc)
        goto fail;
    {
        struct stat st;
        rc = open_regular(a->xta_path, mode == DRX_RDWR ? O_RDWR : O_RDONLY, &st, err);
        if (rc < 0)
            goto fail;
        a->xta_fd = rc;
    }
    rc = check_xta_size(a, err);
    if (rc == 0 && mode == DRX_RDWR)
        rc = drx_array_check_links(a, err);
    if (rc)
        goto fail;
    *out = a;
    return 0;
fail:
    drx_array_close(a);
    return rc;
}

void drx_array_close(struct drx_array *a)
{
    if (!a)
        return;
    if (a->xta_fd >= 0)
        close(a->xta_fd);
    drx_array_set_cache(a, 0);
    if (a->watch_fd >= 0)
        close(a->watch_fd);
    pthread_mutex_destroy(&a->watch_lock);
    for (int i = 0; i < CHUNK_LOCKS; i++)
        pthread_mutex_destroy(&a->chunk_lock[i]);
    drx_array_meta_fini(&a->meta);
    free(a->path);
    free(a->xmd_path);
    free(a->xta_path);
    free(a);
}

bool drx_array_exists(const char *path)
{
    char *xmd = path_with(path, ".xmd");
    struct stat st;
    bool yes = xmd && stat(xmd, &st) == 0 && S_ISREG(st.st_mode);
    free(xmd);
    return yes;
}

int drx_array_remove(const char *path, struct drx_err *err)
{
    char *xmd = path_with(path, ".xmd"), *xta = path_with(path, ".xta");
    int rc = 0;

    if (!xmd || !xta) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    if (unlink(xmd)) {
        rc = errno == ENOENT ? drx_err_set(err, ENOENT, "%s: no such array", path)
                             : drx_err_set(err, errno, "%s: %s", xmd, strerror(errno));
        goto out;
    }
    if (unlink(xta) && errno != ENOENT)
        rc = drx_err_set(err, errno, "%s: %s", xta, strerror(errno));
out:
    free(xmd);
    free(xta);
    return rc;
}

const struct drx_array_meta *drx_array_meta(const struct drx_array *a)
{
    return &a->meta;
}

const char *drx_array_path(const struct drx_array *a)
{
    return a->path;
}

int drx_array_xta_fd(const struct drx_array *a)
{
    return a->xta_fd;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int drx_array_reload(struct drx_array *a, struct drx_err *err)
{
    struct drx_array_meta fresh;
    struct stat st;
    int rc;

    if (lstat(a->xmd_path, &st))
        return drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
    if (same_file_state(&st, &a->xmd_st))
        return 0;
    rc = drx_array_meta_load(a->xmd_path, &fresh, err);
    if (rc)
        return rc;
    /* Only growth is possible: chunk shape and type never change, so cached
     * chunks stay valid. */
    if (fresh.type != a->meta.type || fresh.rank != a->meta.rank ||
        memcmp(fresh.chunk, a->meta.chunk, sizeof fresh.chunk)) {
        drx_array_meta_fini(&fresh);
        return drx_err_set(err, ESTALE, "%s: the array was replaced by a different one",
                           a->xmd_path);
    }
    drx_array_meta_fini(&a->meta);
    a->meta = fresh;
    a->xmd_st = st;
    return 1;
}

/* ---- names: links, rename, unshare ---- */

static int links_refused(const char *xta_path, nlink_t n, struct drx_err *err)
{
    return drx_err_set(err, EMLINK,
                       "%s has %ju names (left by an interrupted rename?): writing or extending "
                       "the array through one would change or cut the other's chunks; refused "
                       "until `drx fsck --repair` settles it",
                       xta_path, (uintmax_t)n);
}

/* The link check; wait: look again once a rename in progress (holding the
 * extend lock) is done.  The wait uses a descriptor of its own, since a
 * lock taken and dropped through xta_fd would drop one its holder has. */
static int xta_links(const struct drx_array *a, bool wait, struct drx_err *err)
{
    char self[64];
    struct stat st;
    int fd;

    if (fstat(a->xta_fd, &st))
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    if (st.st_nlink <= 1 || !wait)
        return st.st_nlink <= 1 ? 0 : links_refused(a->xta_path, st.st_nlink, err);
    snprintf(self, sizeof self, "/proc/self/fd/%d", a->xta_fd);
    fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
            ;
        if (fstat(fd, &st))
            st.st_nlink = 2;
        close(fd);
    }
    return st.st_nlink <= 1 ? 0 : links_refused(a->xta_path, st.st_nlink, err);
}

int drx_array_check_links(const struct drx_array *a, struct drx_err *err)
{
    return xta_links(a, true, err);
}

/* name + suffix into out (NAME_MAX + 1): a single path component. */
static int component(char *out, const char *name, const char *suffix, struct drx_err *err)
{
    size_t n = strlen(name), s = strlen(suffix);

    if (n == 0 || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return drx_err_set(err, EINVAL, "'%s' is not an array name", name);
    if (n + s > NAME_MAX)
        return drx_err_set(err, ENAMETOOLONG, "%s%s: name too long", name, suffix);
    memcpy(out, name, n);
    memcpy(out + n, suffix, s + 1);
    return 0;
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int drx_array_rename(int odfd, const char *oname, int ndfd, const char *nname, struct drx_err *err)
{
    char ox[NAME_MAX + 1], om[NAME_MAX + 1], nx[NAME_MAX + 1], nm[NAME_MAX + 1];
    struct stat xst, st, od, nd;
    bool linked = false, one_dir;
    int fd = -1, rc;

    if ((rc = component(ox, oname, ".xta", err)) || (rc = component(om, oname, ".xmd", err)) ||
        (rc = component(nx, nname, ".xta", err)) || (rc = component(nm, nname, ".xmd", err)))
        return rc;
    if (fstatat(odfd, ".", &od, 0) || fstatat(ndfd, ".", &nd, 0))
        return drx_err_set(err, errno, "%s: %s", oname, strerror(errno));
    one_dir = same_inode(&od, &nd);
    if (one_dir && strcmp(oname, nname) == 0)
        return 0; /* rename(2) of a name onto itself */
    fd = openat(odfd, ox, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        rc = errno == ENOENT ? drx_err_set(err, ENOENT, "%s: no such array", oname)
                             : drx_err_set(err, errno, "%s: %s", ox, strerror(errno));
        goto out;
    }
    if (fstat(fd, &xst) || !S_ISREG(xst.st_mode)) {
        rc = drx_err_set(err, EIO, "%s is not a regular file (refused)", ox);
        goto out;
    }
    /* The extend lock: no extension runs while the chunks have two names,
     * so the metadata they follow is one and the same throughout. */
    while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
        ;
    if (rc < 0) {
        rc = drx_err_set(err, errno, "%s: lock: %s", ox, strerror(errno));
        goto out;
    }
    if (fstatat(odfd, om, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) {
        rc = drx_err_set(err, ENOENT, "%s: no such array", oname);
        goto out;
    }
    if (fstatat(odfd, ox, &st, AT_SYMLINK_NOFOLLOW) || !same_inode(&st, &xst)) {
        rc = drx_err_set(err, EAGAIN, "%s: replaced while being renamed; try again", ox);
        goto out;
    }
    if (fstatat(ndfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = drx_err_set(err, ENOTEMPTY, "%s: an array of that name exists", nname);
        goto out;
    }
    if (linkat(odfd, ox, ndfd, nx, 0) == 0) {
        linked = true;
    } else if (errno != EEXIST) {
        rc = drx_err_set(err, errno, "%s -> %s: %s", ox, nx, strerror(errno));
        goto out;
    } else if (fstatat(ndfd, nx, &st, AT_SYMLINK_NOFOLLOW) || !same_inode(&st, &xst)) {
        rc = drx_err_set(err, EEXIST, "%s exists without %s (an orphan chunk file? see drx fsck)",
                         nx, nm);
        goto out;
    } /* else: the new name from an interrupted rename of this array; go on */
    /* The new name of the chunks is durable before the switch can be. */
    if ((rc = drx_io_fsync_dirfd(ndfd)) < 0) {
        drx_err_set(err, -rc, "%s: syncing its directory: %s", nx, strerror(-rc));
        goto undo;
    }
    rc = renameat2(odfd, om, ndfd, nm, RENAME_NOREPLACE);
    if (rc < 0 && errno == EINVAL) /* no RENAME_NOREPLACE here; checked above */
        rc = renameat(odfd, om, ndfd, nm);
    if (rc < 0) {
        rc = errno == EEXIST
                 ? drx_err_set(err, ENOTEMPTY, "%s: an array of that name exists", nname)
                 : drx_err_set(err, errno, "%s -> %s: %s", om, nm, strerror(errno));
        goto undo;
    }
    /* Switched: from here on the array is nname whatever happens. */
    if (drx_io_fsync_dirfd(ndfd) < 0 || (!one_dir && drx_io_fsync_dirfd(odfd) < 0))
        drx_log(DRX_LOG_WARNING, "rename %s -> %s: syncing the directories: %s", oname, nname,
                strerror(errno));
    if (unlinkat(odfd, ox, 0) < 0 || drx_io_fsync_dirfd(odfd) < 0)
        drx_log(DRX_LOG_WARNING,
                "rename %s -> %s: removing the old name %s: %s (drx fsck --repair removes it)",
                oname, nname, ox, strerror(errno));
    rc = 0;
    goto out;
undo:
    if (linked)
        unlinkat(ndfd, nx, 0);
out:
    if (fd >= 0)
        close(fd); /* and the lock with it */
    return rc;
}

/* Copies size bytes of in to out, leaving holes where in has them. */
static int copy_sparse(int in, int out, off_t size)
{
    static const size_t blen = (size_t)1 << 20;
    char *buf = NULL;
    off_t data = 0, hole;
    int rc = 0;

    if (ftruncate(out, size))
        return -errno;
    while (data < size) {
        data = lseek(in, data, SEEK_DATA);
        if (data < 0) {
            rc = errno == ENXIO ? 0 : -errno; /* ENXIO: only a hole is left */
            break;
        }
        hole = lseek(in, data, SEEK_HOLE);
        if (hole < 0) {
            rc = -errno;
            break;
        }
        if (hole > size)
            hole = size;
        for (off_t off = data; off < hole;) {
            loff_t ioff = off, ooff = off;
            ssize_t n = copy_file_range(in, &ioff, out, &ooff, (size_t)(hole - off), 0);
            if (n < 0 &&
                (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
                size_t len = (size_t)(hole - off) < blen ? (size_t)(hole - off) : blen;
                if (!buf && !(buf = malloc(blen))) {
                    rc = -ENOMEM;
                    goto out;
                }
                if ((rc = drx_io_pread_all(in, buf, len, (uint64_t)off)) ||
                    (rc = drx_io_pwrite_all(out, buf, len, (uint64_t)off)))
                    goto out;
                n = (ssize_t)len;
            } else if (n < 0) {
                if (errno == EINTR)
                    continue;
                rc = -errno;
                goto out;
            } else if (n == 0) {
                rc = -EIO;
                goto out;
            }
            off += n;
        }
        data = hole;
    }
out:
    free(buf);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Replaces the name xta_path of the file open as fd (whose stat is st) by
 * a copy: other names keep the old file. */
static int xta_copy_over(const char *xta_path, int fd, const struct stat *st, struct drx_err *err)
{
    const char *base = base_name(xta_path);
    size_t dirlen = (size_t)(base - xta_path);
    char *tmp = malloc(dirlen + strlen(base) + 16);
    int out = -1, rc;

    if (!tmp)
        return drx_err_set(err, ENOMEM, "out of memory");
    sprintf(tmp, "%.*s.%s.XXXXXX", (int)dirlen, xta_path, base);
    out = mkstemp(tmp);
    if (out < 0) {
        rc = drx_err_set(err, errno, "%s: %s", tmp, strerror(errno));
        tmp[0] = '\0';
        goto out;
    }
    /* The copy keeps owner and mode (only root can give it the owner). */
    rc = fchown(out, st->st_uid, st->st_gid) < 0 && geteuid() == 0 ? -errno : 0;
    if (rc == 0 && fchmod(out, st->st_mode & 07777) < 0)
        rc = -errno;
    if (rc == 0)
        rc = copy_sparse(fd, out, st->st_size);
    if (rc == 0 && fsync(out) < 0)
        rc = -errno;
    if (rc < 0) {
        drx_err_set(err, -rc, "copying %s: %s", xta_path, strerror(-rc));
        goto out;
    }
    if (rename(tmp, xta_path) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", xta_path, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
    if ((rc = drx_io_fsync_parent(xta_path)) < 0)
        drx_err_set(err, -rc, "%s: syncing its directory: %s", xta_path, strerror(-rc));
out:
    if (out >= 0)
        close(out);
    if (tmp[0])
        unlink(tmp);
    free(tmp);
    return rc;
}

int drx_array_unshare(const char *path, struct drx_err *err)
{
    struct drx_array *a = array_alloc(path, DRX_RDONLY);
    struct drx_array_meta m = {0};
    struct stat xst, mst;
    int rc, changed = 0;

    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = open_regular(a->xta_path, O_RDONLY, &xst, err);
    if (rc < 0)
        goto out;
    a->xta_fd = rc;
    if (flock(a->xta_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", a->xta_path,
                         errno == EWOULDBLOCK ? "an extension holds its lock" : strerror(errno));
        goto out;
    }
    if ((rc = drx_array_meta_load(a->xmd_path, &m, err)) < 0 || lstat(a->xmd_path, &mst) < 0 ||
        fstat(a->xta_fd, &xst) < 0) {
        rc = rc ? rc : drx_err_set(err, errno, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (xst.st_nlink > 1) {
        if ((rc = xta_copy_over(a->xta_path, a->xta_fd, &xst, err)) < 0)
            goto out;
        changed = 1;
    }
    /* A shared .xmd is harmless alone (an extension replaces it by
     * rename), but the names must not share anything afterwards. */
    if (mst.st_nlink > 1) {
        if ((rc = write_meta(a->xmd_path, a->xta_fd, &m, err)) < 0)
            goto out;
        changed = 1;
    }
    rc = changed;
out:
    drx_array_meta_fini(&m);
    drx_array_close(a); /* and the lock with it */
    return rc;
}

/* True when the .xmd on disk has more than old_chunks chunks (or cannot be
 * read: then nothing is cut back). */
static bool extension_committed(const char *xmd_path, uint64_t old_chunks)
{
    struct drx_array_meta m;
    struct drx_err e;
    bool more;

    if (drx_array_meta_load(xmd_path, &m, &e))
        return true;
    more = m.map.nchunks > old_chunks;
    drx_array_meta_fini(&m);
    return more;
}

/* Ends a change of the metadata that landed on disk: the handle takes the
 * new metadata (next is moved, not copied) and the .xmd's state, so that a
 * reload does not read back what it wrote. */
static void meta_adopt(struct drx_array *a, struct drx_array_meta *next)
{
    drx_array_meta_fini(&a->meta);
    a->meta = *next;
    lstat(a->xmd_path, &a->xmd_st);
}

/* Starts a change of the metadata (an extension, an attribute): takes the
 * array's extend lock (one changer at a time, across processes), reloads
 * what another changed meanwhile, and refuses an .xta with a second name:
 * under the lock no rename is half done, so another name is a crash's
 * leftover whose metadata this change would leave behind.  The caller
 * lets go with flock(LOCK_UN) whatever this returns (harmless when the
 * lock itself failed).  0 or -errno. */
static int meta_change_begin(struct drx_array *a, struct drx_err *err)
{
    int rc;

    if (flock(a->xta_fd, LOCK_EX))
        return drx_err_set(err, errno, "%s: lock: %s", a->xta_path, strerror(errno));
    rc = drx_array_reload(a, err);
    if (rc < 0)
        return rc;
    return xta_links(a, false, err);
}

int drx_array_extend(struct drx_array *a, int dim, uint64_t count, struct drx_err *err)
{
    struct drx_array_meta next;
    uint64_t from, to, old_chunks;
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if (dim < 0 || dim >= a->meta.rank)
        return drx_err_set(err, EINVAL, "dimension %d out of range (rank %d)", dim, a->meta.rank);
    if (count == 0)
        return drx_err_set(err, EINVAL, "extension count must be > 0");
    if ((rc = meta_change_begin(a, err)) < 0)
        goto out;
    from = a->meta.bounds[dim];
    if (__builtin_add_overflow(from, count, &to)) {
        rc = drx_err_set(err, EFBIG, "extent of dimension %d would overflow", dim);
        goto out;
    }

    /* Build the new metadata on a copy: the handle changes only once the
     * new metadata is on disk. */
    rc = drx_array_meta_load(a->xmd_path, &next, err);
    if (rc)
        goto out;
    old_chunks = next.map.nchunks;
    rc = meta_grow(&next, dim, to, err);
    if (rc == 0 && history_add(&next, dim, from, to))
        rc = drx_err_set(err, ENOMEM, "out of memory");
    if (rc == 0) {
        rc = fill_chunks(a->xta_fd, &next, old_chunks, next.map.nchunks);
        if (rc == 0 && fdatasync(a->xta_fd))
            rc = -errno;
        if (rc)
            rc = drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    }
    if (rc == 0)
        rc = write_meta(a->xmd_path, a->xta_fd, &next, err);
    if (rc) {
        drx_array_meta_fini(&next);
        /* A full disk and the like: give back what the failed extension
         * added, unless its metadata did land (a failure after the rename). */
        if (!extension_committed(a->xmd_path, old_chunks) &&
            ftruncate(a->xta_fd, (off_t)(old_chunks * a->meta.chunk_bytes)))
            drx_log(DRX_LOG_WARNING, "%s: cutting back a failed extension: %s", a->xta_path,
                    strerror(errno));
        goto out;
    }
    meta_adopt(a, &next);
out:
    flock(a->xta_fd, LOCK_UN);
    return rc < 0 ? rc : 0;
}

void drx_array_locate(const struct drx_array_meta *m, const uint64_t *idx, uint64_t *chunk_idx,
                      uint64_t *q, uint64_t *byte_off)
{
    uint64_t inner = 0;
    for (int i = 0; i < m->rank; i++) {
        chunk_idx[i] = idx[i] / m->chunk[i];
        inner = inner * m->chunk[i] + idx[i] % m->chunk[i];
    }
    *q = drx_map_address(&m->map, chunk_idx);
    *byte_off = *q * m->chunk_bytes + inner * m->elem_size;
}

/* ---- chunk I/O ---- */

static int load_chunk(uint64_t q, void *buf, void *arg)
{
    struct drx_array *a = arg;
    return drx_io_pread_all(a->xta_fd, buf, a->meta.chunk_bytes, q * a->meta.chunk_bytes);
}

/* The cache must never serve bytes older than a write someone else
 * completed (drx put, drx-load, another daemon on this machine).  The
 * kernel queues an inotify event on the .xta before such a write returns,
 * so a read that drains the queue first and finds an event empties the
 * cache.  Draining and emptying happen under one lock: a reader that
 * finds the queue empty because another drained it must not go on before
 * that one has emptied the cache. */
static int watch_start(struct drx_array *a)
{
    char self[64];

    a->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (a->watch_fd < 0)
        return -errno;
    /* the descriptor's own file, whatever happened to its name since */
    snprintf(self, sizeof self, "/proc/self/fd/%d", a->xta_fd);
    if (inotify_add_watch(a->watch_fd, self, IN_MODIFY) < 0) {
        int rc = -errno;
        close(a->watch_fd);
        a->watch_fd = -1;
        return rc;
    }
    return 0;
}

void drx_array_cache_sync(struct drx_array *a)
{
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool changed = false;

    if (!a->cache_serves)
        return;
    pthread_mutex_lock(&a->watch_lock);
    for (;;) {
        ssize_t n = read(a->watch_fd, ev, sizeof ev);
        if (n > 0) {
            changed = true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EAGAIN: drained */
    }
    if (changed)
        drx_cache_clear(a->cache);
    pthread_mutex_unlock(&a->watch_lock);
}

int drx_array_set_cache(struct drx_array *a, size_t bytes)
{
    int rc;

    drx_cache_destroy(a->cache);
    a->cache = NULL;
    a->cache_serves = false;
    /* Whole chunks are cached: one larger than a quarter of the budget
     * would evict everything else, and one larger than a request's span
     * cap would make a small read load (and hold) a giant chunk, so such
     * arrays read only the bytes they need. */
    if (bytes == 0 || a->meta.chunk_bytes > bytes / 4 || a->meta.chunk_bytes > DRX_SPAN_MAX)
        return 0;
    /* The watch lives as long as the handle (tearing an inotify instance
     * down waits for an RCU grace period: milliseconds).  Events queued
     * while there was no cache only empty an empty cache. */
    if (a->watch_fd < 0 && (rc = watch_start(a))) {
        drx_log(DRX_LOG_WARNING, "%s: no chunk cache (cannot watch the .xta: %s)", a->xta_path,
                strerror(-rc));
        return 0;
    }
    a->cache = drx_cache_create(bytes, a->meta.chunk_bytes);
    if (!a->cache)
        return -ENOMEM;
    a->cache_serves = true;
    return 0;
}

bool drx_array_has_cache(const struct drx_array *a)
{
    return a->cache_serves;
}

int drx_array_span_lock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len)
{
    int rc;

    pthread_mutex_lock(&a->chunk_lock[q % CHUNK_LOCKS]);
    rc = drx_io_lock(a->xta_fd, q * a->meta.chunk_bytes + off, len, 1);
    if (rc)
        pthread_mutex_unlock(&a->chunk_lock[q % CHUNK_LOCKS]);
    return rc;
}

void drx_array_span_unlock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len)
{
    drx_io_unlock(a->xta_fd, q * a->meta.chunk_bytes + off, len);
    pthread_mutex_unlock(&a->chunk_lock[q % CHUNK_LOCKS]);
}

int drx_array_chunk_read(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *buf)
{
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    return drx_io_pread_all(a->xta_fd, buf, len, q * a->meta.chunk_bytes + off);
}

int drx_array_chunk_get(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *scratch,
                        struct drx_chunk_ref *ref)
{
    int rc = 0;

    ref->entry = NULL;
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    if (a->cache_serves) {
        unsigned char *d = drx_cache_get(a->cache, q, load_chunk, a, &ref->entry, &rc);
        if (!d)
            return rc;
        ref->data = d + off;
        return 0;
    }
    rc = drx_io_pread_all(a->xta_fd, scratch, len, q * a->meta.chunk_bytes + off);
    ref->data = scratch;
    return rc;
}

void drx_array_chunk_put(struct drx_array *a, struct drx_chunk_ref *ref)
{
    if (ref->entry)
        drx_cache_put(a->cache, ref->entry);
    ref->entry = NULL;
}

int drx_array_reserve(struct drx_array *a, uint64_t q, uint64_t n, struct drx_reserve *r)
{
    if (a->mode != DRX_RDWR)
        return -EBADF;
    if (q > a->meta.map.nchunks || n > a->meta.map.nchunks - q)
        return -EINVAL;
    return drx_reserve_add(r, q * a->meta.chunk_bytes, n * a->meta.chunk_bytes);
}

int drx_array_chunk_write(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len,
                          const void *buf)
{
    int rc;

    if (a->mode != DRX_RDWR)
        return -EBADF;
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    rc = drx_io_pwrite_all(a->xta_fd, buf, len, q * a->meta.chunk_bytes + off);
    if (rc == 0 && a->cache)
        drx_cache_update(a->cache, q, off, buf, len);
    return rc;
}

/* ---- attributes ---- */

const struct drx_attr *drx_array_attr_get(const struct drx_array_meta *m, const char *name)
{
    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, name) == 0)
            return &m->attrs[i];
    return NULL;
}

typedef int attr_change_fn(struct drx_array_meta *m, const void *arg, struct drx_err *err);

/* Applies change() to the metadata read afresh under the extend lock and
 * commits it as an extension does, so that an attribute update and an
 * extension by another process never undo each other. */
static int attrs_update(struct drx_array *a, attr_change_fn *change, const void *arg,
                        struct drx_err *err)
{
    struct drx_array_meta next;
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if ((rc = meta_change_begin(a, err)) < 0)
        goto out;
    rc = drx_array_meta_load(a->xmd_path, &next, err);
    if (rc)
        goto out;
    rc = change(&next, arg, err);
    if (rc == 0)
        rc = write_meta(a->xmd_path, a->xta_fd, &next, err);
    if (rc) {
        drx_array_meta_fini(&next);
        goto out;
    }
    meta_adopt(a, &next);
out:
    flock(a->xta_fd, LOCK_UN);
    return rc < 0 ? rc : 0;
}

static int attr_put(struct drx_array_meta *m, const void *arg, struct drx_err *err)
{
    const struct drx_attr *attr = arg;
    struct drx_attr copy, *grown;

    if (drx_attr_copy(&copy, attr))
        return drx_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, attr->name) == 0) {
            drx_attr_fini(&m->attrs[i]);
            m->attrs[i] = copy;
            return 0;
        }
    if (m->nattrs >= DRX_MAX_ATTRS) {
        drx_attr_fini(&copy);
        return drx_err_set(err, ENOSPC, "the array has %d attributes already (the most)",
                           DRX_MAX_ATTRS);
    }
    if (!(grown = realloc(m->attrs, (m->nattrs + 1) * sizeof *grown))) {
        drx_attr_fini(&copy);
        return drx_err_set(err, ENOMEM, "out of memory");
    }
    m->attrs = grown;
    m->attrs[m->nattrs++] = copy;
    return 0;
}

static int attr_drop(struct drx_array_meta *m, const void *arg, struct drx_err *err)
{
    const char *name = arg;

    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, name) == 0) {
            drx_attr_fini(&m->attrs[i]);
            memmove(&m->attrs[i], &m->attrs[i + 1], (m->nattrs - i - 1) * sizeof *m->attrs);
            m->nattrs--;
            return 0;
        }
    return drx_err_set(err, ENOENT, "no attribute '%.80s'", name);
}

int drx_array_attr_set(struct drx_array *a, const struct drx_attr *attr, struct drx_err *err)
{
    size_t bytes;
    int rc;

    /* the attribute may come from anywhere: check it as the .xmd reader
     * would, so that nothing written can fail to load */
    if ((rc = drx_attr_name_check(attr->name, err)))
        return rc;
    if (!attr->is_string &&
        (attr->type < 0 || attr->type >= DRX_NTYPES || drx_type_is_complex(attr->type)))
        return drx_err_set(err, EINVAL, "attribute %s: a complex or unknown type", attr->name);
    bytes = attr->is_string ? attr->n : attr->n * drx_type_size(attr->type);
    if ((!attr->is_string && attr->n == 0) || bytes > DRX_MAX_ATTR_BYTES ||
        (attr->is_string && strlen(attr->value) != attr->n))
        return drx_err_set(err, EINVAL, "attribute %s: bad value size", attr->name);
    return attrs_update(a, attr_put, attr, err);
}

int drx_array_attr_rm(struct drx_array *a, const char *name, struct drx_err *err)
{
    return attrs_update(a, attr_drop, name, err);
}
