/* The JSON of `drx info --json` and of the `info` file at the mount point. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "drx/array.h"
#include "drx/view.h"

static void put_list(FILE *f, const char *key, int n, const uint64_t *v)
{
    fprintf(f, "  \"%s\": [", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? ", " : "", v[i]);
    fprintf(f, "],\n");
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
