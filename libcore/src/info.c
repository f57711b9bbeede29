/* The JSON of `drx info --json` and of the `info` file at the mount point,
 * built with libjansson (json_i.h). */
#include <stdlib.h>
#include <string.h>

#include "drx/array.h"
#include "drx/view.h"
#include "json_i.h"

/* A number attribute's values; JSON has no NaN or infinity, so those are
 * the strings "nan", "inf" and "-inf". */
static json_t *attr_numbers(const struct drx_attr *a)
{
    json_t *list = json_array();
    size_t size = drx_type_size(a->type);

    for (size_t k = 0; list && k < a->n; k++) {
        json_t *v =
            drx_json_value(a->type, (const char *)a->value + k * size, DRX_JSON_NONFINITE_STRING);
        if (!v || json_array_append_new(list, v) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

/* "attrs": {"NAME": {"type": "string", "value": "..."}, "NAME": {"type":
 * "f64", "value": [0.01]}}, in the order they were set. */
static json_t *attrs_json(const struct drx_array_meta *m)
{
    json_t *all = json_object();

    for (size_t i = 0; all && i < m->nattrs; i++) {
        const struct drx_attr *a = &m->attrs[i];
        json_t *one = json_object();
        if (!one || drx_json_set(one, "type", json_string(drx_attr_type_name(a))) < 0 ||
            drx_json_set(one, "value", a->is_string ? json_string(a->value) : attr_numbers(a)) <
                0 ||
            drx_json_set(all, a->name, one) < 0) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}

static json_t *history_json(const struct drx_array_meta *m)
{
    json_t *list = json_array();

    for (size_t i = 0; list && i < m->nhistory; i++) {
        json_t *h = json_object();
        if (!h || drx_json_set(h, "dim", json_integer(m->history[i].dim)) < 0 ||
            drx_json_set(h, "from", drx_json_u64(m->history[i].from)) < 0 ||
            drx_json_set(h, "to", drx_json_u64(m->history[i].to)) < 0 ||
            json_array_append_new(list, h) < 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

static json_t *dims_json(const struct drx_array_meta *m)
{
    json_t *list = json_array();

    for (int i = 0; list && i < m->rank; i++)
        if (json_array_append_new(list, json_string(m->dim_name[i])) < 0) {
            json_decref(list);
            list = NULL;
        }
    return list;
}

/* The view's part: what its files hold. */
static int view_part(json_t *j, const struct drx_array_meta *m, const struct drx_view *v)
{
    int rc = 0;

    rc |= drx_json_set(j, "dtype", json_string(drx_type_name(m->type)));
    rc |= drx_json_set(j, "npy_descr", json_string(drx_type_npy_descr(m->type, v->rep)));
    rc |= drx_json_set(j, "shape", drx_json_u64_list(v->count, v->rank));
    rc |= drx_json_set(j, "order", json_string(v->order == DRX_ORDER_C ? "C" : "F"));
    rc |= drx_json_set(j, "rep", json_string(v->rep == DRX_REP_NATIVE ? "native" : "external32"));
    rc |= drx_json_set(j, "bytes", drx_json_u64(drx_view_bytes(v)));
    rc |= drx_json_set(j, "origin", drx_json_u64_list(v->origin, v->rank));
    rc |= drx_json_set(j, "step", drx_json_u64_list(v->step, v->rank));
    return rc;
}

/* The array's part: bounds, chunks, names, fill, attributes, history. */
static int array_part(json_t *j, const struct drx_array_meta *m)
{
    char fill[160];
    int rc = 0;

    drx_type_format_value(m->type, m->fill, fill, sizeof fill);
    rc |= drx_json_set(j, "bounds", drx_json_u64_list(m->bounds, m->rank));
    rc |= drx_json_set(j, "chunk", drx_json_u64_list(m->chunk, m->rank));
    rc |= drx_json_set(j, "chunk_grid", drx_json_u64_list(m->map.bound, m->rank));
    rc |= drx_json_set(j, "chunk_count", drx_json_u64(m->map.nchunks));
    rc |= drx_json_set(j, "chunk_bytes", drx_json_u64(m->chunk_bytes));
    rc |= drx_json_set(j, "dims", dims_json(m));
    rc |= drx_json_set(j, "fill", json_string(fill));
    rc |= drx_json_set(j, "attrs", attrs_json(m));
    rc |= drx_json_set(j, "initial", drx_json_u64_list(m->initial, m->rank));
    rc |= drx_json_set(j, "history", history_json(m));
    rc |= drx_json_set(j, "axial_records", drx_json_u64(drx_map_records(&m->map)));
    return rc;
}

char *drx_array_info_json(const struct drx_array_meta *m, const struct drx_view *v)
{
    struct drx_view whole;
    json_t *j = json_object();
    char *text = NULL;

    if (!j)
        return NULL;
    if (!v) {
        drx_view_whole(m, &whole);
        v = &whole;
    }
    if (view_part(j, m, v) == 0 && array_part(j, m) == 0)
        text = drx_json_dump_lines(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return text;
}
