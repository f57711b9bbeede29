/* The JSON of `drx info --json` and of the `info` file at the mount point. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drx/array.h"
#include "drx/view.h"

static void put_list(FILE *f, const char *key, int n, const uint64_t *v)
{
    fprintf(f, "  \"%s\": [", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? ", " : "", v[i]);
    fprintf(f, "],\n");
}

/* A JSON string: quote, backslash and control bytes escaped; other bytes
 * (UTF-8 text) as they are. */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* "attrs": {"NAME": {"type": "string", "value": "..."}, "NAME": {"type":
 * "f64", "value": [0.01]}}.  JSON has no NaN or infinity: those numbers
 * are the strings "nan", "inf" and "-inf". */
static void put_attrs(FILE *f, const struct drx_array_meta *m)
{
    char num[160];

    fprintf(f, "  \"attrs\": {");
    for (size_t i = 0; i < m->nattrs; i++) {
        const struct drx_attr *a = &m->attrs[i];
        fprintf(f, "%s", i ? ", " : "");
        put_json_string(f, a->name);
        fprintf(f, ": {\"type\": \"%s\", \"value\": ", drx_attr_type_name(a));
        if (a->is_string) {
            put_json_string(f, a->value);
        } else {
            fputc('[', f);
            for (size_t k = 0; k < a->n; k++) {
                drx_type_format_value(a->type, (const char *)a->value + k * drx_type_size(a->type),
                                      num, sizeof num);
                fprintf(f, "%s", k ? ", " : "");
                if (strspn(num, "0123456789-+.eE") == strlen(num) && strcmp(num, "-") != 0)
                    fputs(num, f);
                else
                    put_json_string(f, num);
            }
            fputc(']', f);
        }
        fputc('}', f);
    }
    fprintf(f, "},\n");
}

char *drx_array_info_json(const struct drx_array_meta *m, const struct drx_view *v)
{
    struct drx_view whole;
    char *text = NULL, fill[160];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    if (!v) {
        drx_view_whole(m, &whole);
        v = &whole;
    }
    drx_type_format_value(m->type, m->fill, fill, sizeof fill);
    fprintf(f, "{\n  \"dtype\": \"%s\",\n  \"npy_descr\": \"%s\",\n", drx_type_name(m->type),
            drx_type_npy_descr(m->type, v->rep));
    put_list(f, "shape", v->rank, v->count);
    fprintf(f, "  \"order\": \"%s\",\n  \"rep\": \"%s\",\n  \"bytes\": %" PRIu64 ",\n",
            v->order == DRX_ORDER_C ? "C" : "F",
            v->rep == DRX_REP_NATIVE ? "native" : "external32", drx_view_bytes(v));
    put_list(f, "origin", v->rank, v->origin);
    put_list(f, "step", v->rank, v->step);
    put_list(f, "bounds", m->rank, m->bounds);
    put_list(f, "chunk", m->rank, m->chunk);
    put_list(f, "chunk_grid", m->rank, m->map.bound);
    fprintf(f, "  \"chunk_count\": %" PRIu64 ",\n  \"chunk_bytes\": %" PRIu64 ",\n",
            m->map.nchunks, m->chunk_bytes);
    fprintf(f, "  \"dims\": [");
    for (int i = 0; i < m->rank; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", m->dim_name[i]);
    fprintf(f, "],\n  \"fill\": \"%s\",\n", fill);
    put_attrs(f, m);
    put_list(f, "initial", m->rank, m->initial);
    fprintf(f, "  \"history\": [");
    for (size_t i = 0; i < m->nhistory; i++)
        fprintf(f, "%s{\"dim\": %d, \"from\": %" PRIu64 ", \"to\": %" PRIu64 "}", i ? ", " : "",
                m->history[i].dim, m->history[i].from, m->history[i].to);
    fprintf(f, "],\n  \"axial_records\": %zu\n}\n", drx_map_records(&m->map));
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}
