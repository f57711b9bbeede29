/* The chunk-by-chunk planner (see drx/plan.h).
 *
 * Along one dimension d, the chunk coordinates that hold elements of the
 * view ("hits") are either every coordinate of [K0, K1) (step < chunk: the
 * view cannot jump over a chunk) or one coordinate per view index (step >=
 * chunk: no two view indices share a chunk).  Either way the hits inside a
 * coordinate range are counted and the j-th one found in O(1), which is all
 * the segment walk needs: a segment's hits are the product of its
 * dimensions' hits, visited as a mixed-radix counter in the segment's own
 * order (grown dimension slowest, the others row-major), which is address
 * order.
 */
#include "drx/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One F* segment and the view's chunks in it. */
struct seg {
    int order[DRX_MAX_RANK]; /* dimensions, slowest first: the grown one, then ascending */
    uint64_t lo[DRX_MAX_RANK], hi[DRX_MAX_RANK]; /* chunk index box */
    uint64_t coef[DRX_MAX_RANK], base;           /* address = base + sum idx[j] * coef[j] */
    uint64_t n[DRX_MAX_RANK];                    /* hits per dimension inside the box */
    uint64_t first, count;                       /* place in the view's list, and size */
};

struct drx_plan {
    int rank;
    struct drx_view v;
    uint64_t chunk[DRX_MAX_RANK], bounds[DRX_MAX_RANK];
    uint64_t K0[DRX_MAX_RANK], K1[DRX_MAX_RANK]; /* bounding chunk box of the view */
    bool sparse[DRX_MAX_RANK];                   /* step >= chunk: one hit per view index */
    int ord[DRX_MAX_RANK];                       /* view's dimensions, slowest first */
    int run_dim;
    uint64_t vstride[DRX_MAX_RANK];
    struct seg *seg;
    size_t nseg;
    uint64_t total;
    /* cursor: segment cs, digit dig[d] of each dimension, its coordinate K[d] */
    size_t cs;
    uint64_t dig[DRX_MAX_RANK], K[DRX_MAX_RANK];
};

/* The first view index along d at or after chunk coordinate x. */
static uint64_t first_w(const struct drx_plan *p, int d, uint64_t x)
{
    return drx_plan_first_index(p->chunk, &p->v, d, x);
}

/* Hits along d in chunk coordinates [a, b). */
static uint64_t hits_in(const struct drx_plan *p, int d, uint64_t a, uint64_t b)
{
    if (a >= b)
        return 0;
    if (p->sparse[d])
        return first_w(p, d, b) - first_w(p, d, a);
    a = a > p->K0[d] ? a : p->K0[d];
    b = b < p->K1[d] ? b : p->K1[d];
    return b > a ? b - a : 0;
}

/* The j-th hit along d at or after coordinate a (there is one). */
static uint64_t hit_nth(const struct drx_plan *p, int d, uint64_t a, uint64_t j)
{
    if (p->sparse[d])
        return (p->v.origin[d] + (first_w(p, d, a) + j) * p->v.step[d]) / p->chunk[d];
    return (a > p->K0[d] ? a : p->K0[d]) + j;
}

/* A growth record and the dimension whose vector holds it. */
struct rec_dim {
    const struct drx_axial_rec *r;
    int dim;
};

static int cmp_rec(const void *x, const void *y)
{
    const struct rec_dim *a = x, *b = y;
    return (a->r->addr > b->r->addr) - (a->r->addr < b->r->addr);
}

/* The segment of record r of dimension l holding `size` chunks.  Its
 * coefficients give its box: for j other than l, coef[j] times the extent
 * of j is the coefficient of the next slower dimension (coef[l] for the
 * slowest), and the extent along l follows from the size. */
static void seg_init(struct seg *s, const struct drx_axial_rec *r, int l, uint64_t size, int rank)
{
    uint64_t slower = r->coef[l];
    int k = 0;

    s->order[k++] = l;
    for (int j = 0; j < rank; j++) {
        s->coef[j] = r->coef[j];
        if (j == l)
            continue;
        s->order[k++] = j;
        s->lo[j] = 0;
        s->hi[j] = slower / s->coef[j];
        slower = s->coef[j];
    }
    s->lo[l] = r->start;
    s->hi[l] = r->start + size / s->coef[l];
    s->base = (uint64_t)r->addr - r->start * s->coef[l];
}

/* The segments of m's map in address order, one per record of every axial
 * vector (placeholders excluded). */
static int build_segments(struct drx_plan *p, const struct drx_map *map)
{
    size_t n = 0, total = drx_map_records(map);
    struct rec_dim *rec = malloc((total ? total : 1) * sizeof *rec);

    p->seg = calloc(total ? total : 1, sizeof *p->seg);
    if (!rec || !p->seg) {
        free(rec);
        return -ENOMEM;
    }
    for (int j = 0; j < map->rank; j++)
        for (size_t i = 0; i < map->vec[j].n; i++)
            if (map->vec[j].rec[i].addr >= 0)
                rec[n++] = (struct rec_dim){&map->vec[j].rec[i], j};
    qsort(rec, n, sizeof *rec, cmp_rec);
    for (size_t t = 0; t < n; t++) {
        uint64_t end = t + 1 < n ? (uint64_t)rec[t + 1].r->addr : map->nchunks;
        seg_init(&p->seg[t], rec[t].r, rec[t].dim, end - (uint64_t)rec[t].r->addr, map->rank);
    }
    p->nseg = n;
    free(rec);
    return 0;
}

/* Counts of the view's chunks in each segment and where each starts. */
static void count_segments(struct drx_plan *p)
{
    p->total = 0;
    for (size_t t = 0; t < p->nseg; t++) {
        struct seg *s = &p->seg[t];
        s->count = p->v.nelem ? 1 : 0;
        for (int d = 0; d < p->rank; d++) {
            s->n[d] = p->v.nelem ? hits_in(p, d, s->lo[d], s->hi[d]) : 0;
            s->count *= s->n[d];
        }
        s->first = p->total;
        p->total += s->count;
    }
}

static void view_geometry(struct drx_plan *p)
{
    const struct drx_view *v = &p->v;
    uint64_t s = 1;

    for (int i = 0; i < p->rank; i++)
        p->ord[i] = v->order == DRX_ORDER_C ? i : p->rank - 1 - i;
    for (int i = p->rank - 1; i >= 0; i--) {
        p->vstride[p->ord[i]] = s;
        s *= v->count[p->ord[i]];
    }
    /* runs along the fastest dimension with more than one element */
    p->run_dim = p->ord[p->rank - 1];
    for (int i = p->rank - 1; i >= 0; i--)
        if (v->count[p->ord[i]] > 1) {
            p->run_dim = p->ord[i];
            break;
        }
    for (int d = 0; d < p->rank; d++) {
        p->sparse[d] = v->step[d] >= p->chunk[d];
        p->K0[d] = v->origin[d] / p->chunk[d];
        p->K1[d] = v->count[d] ? (v->origin[d] + (v->count[d] - 1) * v->step[d]) / p->chunk[d] + 1
                               : p->K0[d];
    }
}

int drx_plan_create(const struct drx_array_meta *m, const struct drx_view *v, struct drx_plan **out)
{
    struct drx_plan *p;
    int rc;

    *out = NULL;
    if (v->rank != m->rank || m->map.rank != m->rank)
        return -EINVAL;
    for (int d = 0; d < v->rank; d++)
        if (v->step[d] == 0 || m->chunk[d] == 0 ||
            (v->count[d] && v->origin[d] + (v->count[d] - 1) * v->step[d] >= m->bounds[d]))
            return -EINVAL;
    p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->rank = m->rank;
    p->v = *v;
    memcpy(p->chunk, m->chunk, sizeof p->chunk);
    memcpy(p->bounds, m->bounds, sizeof p->bounds);
    view_geometry(p);
    rc = build_segments(p, &m->map);
    if (rc) {
        drx_plan_destroy(p);
        return rc;
    }
    count_segments(p);
    drx_plan_seek(p, 0);
    *out = p;
    return 0;
}

void drx_plan_destroy(struct drx_plan *p)
{
    if (!p)
        return;
    free(p->seg);
    free(p);
}

uint64_t drx_plan_count(const struct drx_plan *p)
{
    return p->total;
}

/* Puts the cursor on element r of segment cs (r < its count). */
static void seg_set(struct drx_plan *p, uint64_t r)
{
    const struct seg *s = &p->seg[p->cs];
    for (int i = p->rank - 1; i >= 0; i--) {
        int d = s->order[i];
        p->dig[d] = r % s->n[d];
        r /= s->n[d];
        p->K[d] = hit_nth(p, d, s->lo[d], p->dig[d]);
    }
}

int drx_plan_seek(struct drx_plan *p, uint64_t i)
{
    if (i > p->total)
        return -EINVAL;
    /* segments are few (one per growth record): a scan is O(E) */
    for (p->cs = 0; p->cs < p->nseg; p->cs++) {
        const struct seg *s = &p->seg[p->cs];
        if (i < s->first + s->count) {
            seg_set(p, i - s->first);
            break;
        }
    }
    return 0;
}

int drx_plan_next(struct drx_plan *p, struct drx_plan_chunk *c)
{
    const struct seg *s;
    int i;

    if (p->cs >= p->nseg)
        return 0;
    s = &p->seg[p->cs];
    c->q = s->base;
    c->nelem = 1;
    c->covered = c->inside = true;
    for (int d = 0; d < p->rank; d++) {
        uint64_t a0 = p->K[d] * p->chunk[d], a1 = a0 + p->chunk[d];
        c->idx[d] = p->K[d];
        c->q += p->K[d] * s->coef[d];
        drx_plan_view_range(p->chunk, &p->v, d, p->K[d], &c->vlo[d], &c->vhi[d]);
        c->nelem *= c->vhi[d] - c->vlo[d];
        if (a1 > p->bounds[d]) {
            a1 = p->bounds[d];
            c->inside = false;
        }
        if (c->vhi[d] - c->vlo[d] != a1 - a0)
            c->covered = false;
    }
    /* the mixed-radix counter, fastest digit first */
    for (i = p->rank - 1; i >= 0; i--) {
        int d = s->order[i];
        if (++p->dig[d] < s->n[d]) {
            p->K[d] = hit_nth(p, d, s->lo[d], p->dig[d]);
            break;
        }
        p->dig[d] = 0;
        p->K[d] = hit_nth(p, d, s->lo[d], 0);
    }
    if (i < 0) {
        /* segment done: on to the next one that holds any of the view */
        for (p->cs++; p->cs < p->nseg && p->seg[p->cs].count == 0; p->cs++)
            ;
        if (p->cs < p->nseg)
            seg_set(p, 0);
    }
    return 1;
}

int drx_plan_runs(const struct drx_plan *p, const struct drx_plan_chunk *c,
                  int (*fn)(const struct drx_plan_run *r, void *arg), void *arg)
{
    const int k = p->rank, g = p->run_dim;
    uint64_t w[DRX_MAX_RANK];
    struct drx_plan_run r;

    r.count = c->vhi[g] - c->vlo[g];
    r.stride = drx_plan_chunk_stride(p->chunk, &p->v, g);
    memcpy(w, c->vlo, sizeof(uint64_t) * (size_t)k);
    for (;;) {
        int rc, i;
        r.view_off = 0;
        for (int d = 0; d < k; d++)
            r.view_off += w[d] * p->vstride[d];
        r.chunk_off = drx_plan_chunk_offset(p->chunk, &p->v, c->idx, w);
        if ((rc = fn(&r, arg)))
            return rc;
        /* odometer over the other dimensions, the view's fastest first,
         * so that the runs come out in view order */
        for (i = k - 1; i >= 0; i--) {
            int d = p->ord[i];
            if (d == g)
                continue;
            if (++w[d] < c->vhi[d])
                break;
            w[d] = c->vlo[d];
        }
        if (i < 0)
            return 0;
    }
}
