/* Zarr v2 metadata and chunk keys of an array (see drx/format.h): the JSON
 * is built with libjansson (json_i.h), and a chunk written through a key is
 * stored by one pwrite under the span lock every .xta writer takes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_i.h"
#include "drx/format.h"
#include "json_i.h"

/* Zarr's fill_value: a number, the string "NaN", "Infinity" or
 * "-Infinity", and [real, imaginary] for complex types. */
static json_t *fill_json(const struct drx_array_meta *m)
{
    if (drx_type_is_complex(m->type)) {
        enum drx_type part = m->type == DRX_C64 ? DRX_F32 : DRX_F64;
        json_t *pair = json_array();
        if (pair && (json_array_append_new(
                         pair, drx_json_value(part, m->fill, DRX_JSON_NONFINITE_ZARR)) < 0 ||
                     json_array_append_new(pair, drx_json_value(part, m->fill + drx_type_size(part),
                                                                DRX_JSON_NONFINITE_ZARR)) < 0)) {
            json_decref(pair);
            return NULL;
        }
        return pair;
    }
    return drx_json_value(m->type, m->fill, DRX_JSON_NONFINITE_ZARR);
}

static json_t *zarray_tree(const struct drx_zarr_var *v)
{
    const struct drx_array_meta *m = v->meta;
    json_t *j = json_object();
    int rc = 0;

    if (!j)
        return NULL;
    rc |= drx_json_set(j, "chunks", drx_json_u64_list(m->chunk, m->rank));
    rc |= drx_json_set(j, "compressor", json_null());
    rc |= drx_json_set(j, "dimension_separator", json_string("."));
    rc |= drx_json_set(j, "dtype", json_string(drx_type_npy_descr(m->type, DRX_REP_NATIVE)));
    rc |= drx_json_set(j, "fill_value", v->coord ? json_null() : fill_json(m));
    rc |= drx_json_set(j, "filters", json_null());
    rc |= drx_json_set(j, "order", json_string("C"));
    rc |= drx_json_set(j, "shape", drx_json_u64_list(v->shape, m->rank));
    rc |= drx_json_set(j, "zarr_format", json_integer(2));
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* An attribute's value: a string, one number, or a list of numbers. */
static json_t *attr_value(const struct drx_attr *a)
{
    size_t size = drx_type_size(a->type);
    json_t *list;

    if (a->is_string)
        return json_string(a->value);
    if (a->n == 1)
        return drx_json_value(a->type, a->value, DRX_JSON_NONFINITE_BARE);
    list = json_array();
    for (size_t k = 0; list && k < a->n; k++) {
        json_t *x =
            drx_json_value(a->type, (const char *)a->value + k * size, DRX_JSON_NONFINITE_BARE);
        if (!x || json_array_append_new(list, x) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

static json_t *zattrs_tree(const struct drx_zarr_var *v)
{
    const struct drx_array_meta *m = v->meta;
    json_t *j = json_object(), *dims = json_array();
    int rc = dims ? 0 : -ENOMEM;

    for (int i = 0; dims && i < m->rank && rc == 0; i++)
        if (json_array_append_new(dims, json_string(v->dims[i])) < 0)
            rc = -ENOMEM;
    if (!j || rc || drx_json_set(j, "_ARRAY_DIMENSIONS", dims) < 0) {
        json_decref(j);
        return NULL;
    }
    for (size_t i = 0; i < m->nattrs; i++) {
        /* xarray's own key wins over an attribute of that name */
        if (strcmp(m->attrs[i].name, "_ARRAY_DIMENSIONS") == 0)
            continue;
        if (drx_json_set(j, m->attrs[i].name, attr_value(&m->attrs[i])) < 0) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

/* zarr-python reads metadata as ASCII: other characters as \uXXXX escapes */
#define ZARR_DUMP (JSON_INDENT(4) | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

static char *dump_tree(json_t *j)
{
    char *text = j ? drx_json_dump(j, ZARR_DUMP) : NULL;
    json_decref(j);
    return text;
}

char *drx_zarr_zarray(const struct drx_zarr_var *v)
{
    return dump_tree(zarray_tree(v));
}

char *drx_zarr_zattrs(const struct drx_zarr_var *v)
{
    return dump_tree(zattrs_tree(v));
}

static json_t *zgroup_tree(void)
{
    json_t *j = json_object();
    if (j && drx_json_set(j, "zarr_format", json_integer(2)) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

char *drx_zarr_zgroup(void)
{
    return dump_tree(zgroup_tree());
}

char *drx_zarr_group_zattrs(void)
{
    return dump_tree(json_object());
}

char *drx_zarr_zmetadata(const struct drx_zarr_var *vars, int n)
{
    json_t *j = json_object(), *meta = json_object();
    int rc = (j && meta) ? 0 : -ENOMEM;
    char key[600];

    rc |= drx_json_set(meta, ".zattrs", json_object());
    rc |= drx_json_set(meta, ".zgroup", zgroup_tree());
    for (int i = 0; i < n && rc == 0; i++) {
        snprintf(key, sizeof key, "%s/.zarray", vars[i].name);
        rc |= drx_json_set(meta, key, zarray_tree(&vars[i]));
        snprintf(key, sizeof key, "%s/.zattrs", vars[i].name);
        rc |= drx_json_set(meta, key, zattrs_tree(&vars[i]));
    }
    if (rc || drx_json_set(j, "metadata", meta) < 0) {
        if (rc)
            json_decref(meta);
        json_decref(j);
        return NULL;
    }
    if (drx_json_set(j, "zarr_consolidated_format", json_integer(1)) < 0) {
        json_decref(j);
        return NULL;
    }
    return dump_tree(j);
}

/* ---- chunk keys ---- */

static void grid_of(const struct drx_zarr_var *v, uint64_t *g)
{
    for (int d = 0; d < v->meta->rank; d++)
        g[d] = (v->shape[d] + v->meta->chunk[d] - 1) / v->meta->chunk[d];
}

uint64_t drx_zarr_nkeys(const struct drx_zarr_var *v)
{
    uint64_t g[DRX_MAX_RANK], n = 1;

    grid_of(v, g);
    for (int d = 0; d < v->meta->rank; d++)
        n *= g[d];
    return n;
}

int drx_zarr_key_name(const struct drx_zarr_var *v, uint64_t i, char *buf, size_t len)
{
    uint64_t g[DRX_MAX_RANK], idx[DRX_MAX_RANK];
    size_t used = 0;

    grid_of(v, g);
    for (int d = v->meta->rank - 1; d >= 0; d--) {
        idx[d] = i % g[d];
        i /= g[d];
    }
    if (i)
        return -ERANGE;
    for (int d = 0; d < v->meta->rank; d++) {
        int w = snprintf(buf + used, len - used, d ? ".%" PRIu64 : "%" PRIu64, idx[d]);
        if (w < 0 || (size_t)w >= len - used)
            return -ERANGE;
        used += (size_t)w;
    }
    return 0;
}

/* Chunk indices of key: decimal, no sign, no leading zero, one per
 * dimension, inside the grid. */
static int key_indices(const struct drx_zarr_var *v, const char *key, uint64_t *idx)
{
    uint64_t g[DRX_MAX_RANK];
    const char *p = key;

    grid_of(v, g);
    for (int d = 0; d < v->meta->rank; d++) {
        uint64_t x = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9') {
            if (x > g[d])
                return -ENOENT;
            x = x * 10 + (uint64_t)(*p++ - '0');
        }
        if (p == start || (*start == '0' && p - start > 1) || x >= g[d])
            return -ENOENT;
        if (*p != (d + 1 < v->meta->rank ? '.' : '\0'))
            return -ENOENT;
        if (*p)
            p++;
        idx[d] = x;
    }
    return 0;
}

int drx_zarr_key_parse(const struct drx_zarr_var *v, const char *key, uint64_t *q)
{
    uint64_t idx[DRX_MAX_RANK];
    int rc = key_indices(v, key, idx);

    if (rc == 0)
        *q = drx_map_address(&v->meta->map, idx);
    return rc;
}

/* Sets the elements of chunk idx beyond the array's bounds to the fill:
 * row by row (the last dimension is contiguous in a chunk). */
static void fill_beyond(const struct drx_array_meta *m, const uint64_t *idx, unsigned char *buf)
{
    const int k = m->rank;
    const size_t es = m->elem_size;
    uint64_t valid[DRX_MAX_RANK], rows = m->chunk_elems / m->chunk[k - 1];

    for (int d = 0; d < k; d++) {
        uint64_t start = idx[d] * m->chunk[d];
        valid[d] = m->bounds[d] > start ? m->bounds[d] - start : 0;
        if (valid[d] > m->chunk[d])
            valid[d] = m->chunk[d];
    }
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t rest = r, from = valid[k - 1];
        for (int d = k - 2; d >= 0; d--) {
            if (rest % m->chunk[d] >= valid[d])
                from = 0;
            rest /= m->chunk[d];
        }
        unsigned char *row = buf + r * m->chunk[k - 1] * es;
        for (uint64_t e = from; e < m->chunk[k - 1]; e++)
            memcpy(row + e * es, m->fill, es);
    }
}

int drx_zarr_chunk_store(struct drx_array *a, const struct drx_zarr_var *v, const char *key,
                         void *buf, size_t len, struct drx_err *err)
{
    const struct drx_array_meta *m = drx_array_meta(a);
    uint64_t idx[DRX_MAX_RANK], q, bytes = m->chunk_bytes;
    int rc;

    if (m->rank != v->meta->rank || m->type != v->meta->type ||
        memcmp(m->chunk, v->meta->chunk, sizeof m->chunk) != 0)
        return drx_err_set(err, EINVAL, "%s/%s: not this variable's array", v->name, key);
    if (key_indices(v, key, idx) < 0)
        return drx_err_set(err, ENOENT, "%s/%s: not a chunk key of the grid", v->name, key);
    if (len != m->chunk_bytes)
        return drx_err_set(err, EINVAL,
                           "%s/%s: a chunk is %" PRIu64 " bytes, not %zu: nothing stored", v->name,
                           key, m->chunk_bytes, len);
    q = drx_map_address(&m->map, idx);
    if (q >= m->map.nchunks)
        return drx_err_set(err, ENOENT, "%s/%s: chunk not allocated", v->name, key);
    /* a coordinate cut short keeps its elements past the cut (1-D: they
     * are the chunk's tail); otherwise the chunk is whole, fill beyond the
     * bounds as SPEC section 3 says */
    if (m->rank == 1 && v->shape[0] < m->bounds[0]) {
        uint64_t start = idx[0] * m->chunk[0], keep = v->shape[0] - start;
        if (keep < m->chunk[0])
            bytes = keep * m->elem_size;
    } else {
        fill_beyond(m, idx, buf);
    }
    /* the chunk's blocks first: a key is replaced whole or not at all, so
     * a full disk must fail before its first byte, not after a pwrite
     * that stored part of it (the rest then keeps the old bytes).  What
     * a failed reservation took is given back under the span lock (never
     * between another writer's check and store); once the chunk is being
     * written the reservation stays (a block never written reads as
     * zeros, as the hole did). */
    struct drx_reserve res;
    drx_reserve_init(&res, drx_array_xta_fd(a));
    rc = drx_array_reserve(a, q, 1, &res);
    if (rc == -ENOSPC || rc == -EDQUOT) { /* else written as before */
        drx_array_reserve_undo(a, &res);
        drx_reserve_fini(&res);
        return drx_err_set(err, -rc, "%s/%s: reserving the chunk's space: %s; nothing stored",
                           v->name, key, strerror(-rc));
    }
    drx_reserve_fini(&res);
    if ((rc = drx_array_span_lock(a, q, 0, bytes)) < 0)
        return drx_err_set(err, -rc, "%s/%s: locking the chunk: %s", v->name, key, strerror(-rc));
    rc = drx_array_chunk_write(a, q, 0, bytes, buf);
    drx_array_span_unlock(a, q, 0, bytes);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s/%s: writing the chunk: %s", v->name, key, strerror(-rc));
    return 0;
}

bool drx_zarr_json_same(const char *ours, const void *text, size_t len)
{
    json_t *a, *b;
    bool same;

    if (strlen(ours) == len && memcmp(ours, text, len) == 0)
        return true;
    a = drx_json_load(ours, strlen(ours));
    b = drx_json_load(text, len);
    same = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return same;
}

/* The extents of shape list nw when each is at least old's and one is
 * larger (rank entries each): 1 with shape[] set, else 0. */
static int shape_grown(const json_t *old, const json_t *nw, int rank, uint64_t shape[])
{
    bool larger = false;

    if (!json_is_array(old) || !json_is_array(nw) || json_array_size(old) != (size_t)rank ||
        json_array_size(nw) != (size_t)rank)
        return 0;
    for (int d = 0; d < rank; d++) {
        const json_t *o = json_array_get(old, (size_t)d), *n = json_array_get(nw, (size_t)d);
        if (!json_is_integer(o) || !json_is_integer(n) ||
            json_integer_value(n) < json_integer_value(o))
            return 0;
        larger |= json_integer_value(n) > json_integer_value(o);
        shape[d] = (uint64_t)json_integer_value(n);
    }
    return larger;
}

int drx_zarr_zarray_grown(const char *ours, const void *text, size_t len, int rank,
                          uint64_t shape[])
{
    json_t *a = drx_json_load(ours, strlen(ours)), *b = drx_json_load(text, len);
    int grown = 0;

    if (json_is_object(a) && json_is_object(b))
        grown = shape_grown(json_object_get(a, "shape"), json_object_get(b, "shape"), rank, shape);
    /* zarr-python leaves out dimension_separator when it is the default
     * (Zarr v2: absent means "."), as in a resize through xarray */
    if (grown && !json_object_get(b, "dimension_separator") &&
        json_is_string(json_object_get(a, "dimension_separator")) &&
        strcmp(json_string_value(json_object_get(a, "dimension_separator")), ".") == 0)
        json_object_del(a, "dimension_separator");
    /* everything but the shape must be ours */
    if (grown &&
        (json_object_del(a, "shape") < 0 || json_object_del(b, "shape") < 0 || !json_equal(a, b)))
        grown = 0;
    json_decref(a);
    json_decref(b);
    return grown;
}
