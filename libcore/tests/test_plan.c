/* The planner against brute force: random arrays grown along random
 * dimensions, random views (steps larger than the chunk, single indices,
 * empty slices, both orders) and random shares of the chunk list. */
#include "drx/plan.h"
#include "drx/view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define MAX_CHUNKS 6000

static uint64_t rnd(uint64_t n)
{
    return (uint64_t)random() % n;
}

/* An in-memory array: bounds, chunk shape and F* map, grown at random. */
static int make_meta(struct drx_array_meta *m)
{
    uint64_t B[DRX_MAX_RANK];
    int rank = 1 + (int)rnd(4), rc;

    memset(m, 0, sizeof *m);
    m->rank = rank;
    m->type = DRX_F64;
    m->elem_size = 8;
    m->chunk_elems = 1;
    for (int d = 0; d < rank; d++) {
        m->chunk[d] = 1 + rnd(rank > 2 ? 2 : 4);
        m->bounds[d] = 1 + rnd(rank > 2 ? 6 : 12);
        B[d] = (m->bounds[d] + m->chunk[d] - 1) / m->chunk[d];
        m->chunk_elems *= m->chunk[d];
    }
    m->chunk_bytes = m->chunk_elems * m->elem_size;
    if ((rc = drx_map_init(&m->map, rank, B)))
        return rc;
    for (int g = (int)rnd(12); g > 0; g--) {
        int d = (int)rnd((uint64_t)rank);
        uint64_t nb = m->bounds[d] + 1 + rnd(rank > 2 ? 4 : 8);
        uint64_t nB = (nb + m->chunk[d] - 1) / m->chunk[d];
        /* keep the brute force cheap */
        if (m->map.nchunks / m->map.bound[d] * nB > MAX_CHUNKS)
            break;
        m->bounds[d] = nb;
        if (nB > m->map.bound[d] && (rc = drx_map_grow(&m->map, d, nB)))
            return rc;
    }
    return 0;
}

static void make_view(const struct drx_array_meta *m, struct drx_view *v)
{
    memset(v, 0, sizeof *v);
    v->rank = m->rank;
    v->type = m->type;
    v->elem_size = m->elem_size;
    v->order = rnd(2) ? DRX_ORDER_C : DRX_ORDER_F;
    v->nelem = 1;
    for (int d = 0; d < m->rank; d++) {
        uint64_t n = m->bounds[d], kind = rnd(16);
        /* mostly long slices, so that views meet many chunks */
        uint64_t o = rnd(2) ? rnd(n) : rnd(m->chunk[d] < n ? m->chunk[d] : n);
        v->origin[d] = o;
        v->step[d] = 1;
        if (kind < 2) { /* single index */
            v->count[d] = 1;
        } else if (kind == 2 && rnd(8) == 0) { /* empty slice */
            v->count[d] = 0;
        } else {
            /* steps up to over twice the chunk */
            if (rnd(3))
                v->step[d] = 1 + rnd(2 * m->chunk[d] + 2);
            uint64_t most = (n - o + v->step[d] - 1) / v->step[d];
            v->count[d] = rnd(2) ? most : 1 + rnd(most);
        }
        v->nelem *= v->count[d];
    }
}

/* Brute force: every address, kept when some view element lies in it. */
static uint64_t brute_list(const struct drx_array_meta *m, const struct drx_view *v, uint64_t *out)
{
    static bool hit[DRX_MAX_RANK][4096];
    uint64_t n = 0, K[DRX_MAX_RANK];

    memset(hit, 0, sizeof hit);
    for (int d = 0; d < m->rank; d++)
        for (uint64_t w = 0; w < v->count[d]; w++)
            hit[d][(v->origin[d] + w * v->step[d]) / m->chunk[d]] = true;
    for (uint64_t q = 0; q < m->map.nchunks; q++) {
        bool all = true;
        drx_map_index(&m->map, q, K);
        for (int d = 0; d < m->rank; d++)
            all = all && hit[d][K[d]];
        if (all)
            out[n++] = q;
    }
    return n;
}

struct run_check {
    const struct drx_array_meta *m;
    const struct drx_view *v;
    const struct drx_plan_chunk *c;
    unsigned char *seen; /* per view element */
    uint64_t elems;      /* elements of this chunk's runs */
    uint64_t last_end;   /* runs ascending in view order */
    int bad;
};

/* Each element of the run, decoded independently of the planner: its
 * view index from the linear offset, its array index, the chunk it lies in
 * and its row-major offset there. */
static int check_run(const struct drx_plan_run *r, void *arg)
{
    struct run_check *x = arg;
    const struct drx_view *v = x->v;
    const int k = v->rank;

    if (r->count == 0 || r->view_off < x->last_end)
        x->bad++;
    x->last_end = r->view_off + r->count;
    for (uint64_t i = 0; i < r->count; i++) {
        uint64_t L = r->view_off + i, rem = L, off = 0;
        for (int j = k - 1; j >= 0; j--) {
            int d = v->order == DRX_ORDER_C ? j : k - 1 - j;
            uint64_t w = rem % v->count[d], a = v->origin[d] + w * v->step[d];
            rem /= v->count[d];
            if (a / x->m->chunk[d] != x->c->idx[d])
                x->bad++;
        }
        rem = L;
        uint64_t idx[DRX_MAX_RANK];
        for (int j = k - 1; j >= 0; j--) {
            int d = v->order == DRX_ORDER_C ? j : k - 1 - j;
            idx[d] = v->origin[d] + rem % v->count[d] * v->step[d];
            rem /= v->count[d];
        }
        for (int d = 0; d < k; d++)
            off = off * x->m->chunk[d] + idx[d] - x->c->idx[d] * x->m->chunk[d];
        if (L >= v->nelem || off != r->chunk_off + i * r->stride || x->seen[L]++)
            x->bad++;
    }
    x->elems += r->count;
    return 0;
}

/* The chunk's flags and counts, recomputed from its index. */
static int check_chunk(const struct drx_array_meta *m, const struct drx_plan_chunk *c,
                       uint64_t elems)
{
    uint64_t K[DRX_MAX_RANK], in = 1;
    bool inside = true;

    drx_map_index(&m->map, c->q, K);
    for (int d = 0; d < m->rank; d++) {
        uint64_t a0 = c->idx[d] * m->chunk[d], a1 = a0 + m->chunk[d];
        if (K[d] != c->idx[d])
            return 0;
        if (a1 > m->bounds[d]) {
            inside = false;
            a1 = m->bounds[d];
        }
        in *= a1 - a0;
    }
    return c->nelem == elems && elems > 0 && c->inside == inside && c->covered == (elems == in);
}

static int collect(uint64_t q, void *arg)
{
    uint64_t **p = arg;
    *(*p)++ = q;
    return 0;
}

static void one_case(int t, uint64_t *want, uint64_t *got)
{
    struct drx_array_meta m;
    struct drx_view v;
    struct drx_plan *p = NULL;
    struct drx_plan_chunk c;
    unsigned char *seen = NULL;
    uint64_t n, i = 0, runs_bad = 0, chunks_bad = 0;
    int rc;

    if ((rc = make_meta(&m))) {
        tap_ok(0, "case %d: map: %d", t, rc);
        return;
    }
    make_view(&m, &v);
    n = brute_list(&m, &v, want);
    rc = drx_plan_create(&m, &v, &p);
    if (!tap_ok(rc == 0, "case %d: plan created (%d)", t, rc))
        goto out;
    seen = calloc(v.nelem ? v.nelem : 1, 1);

    /* the whole list, with runs */
    while (drx_plan_next(p, &c) == 1 && i <= n) {
        struct run_check x = {&m, &v, &c, seen, 0, 0, 0};
        got[i++] = c.q;
        drx_plan_runs(p, &c, check_run, &x);
        runs_bad += x.bad;
        chunks_bad += !check_chunk(&m, &c, x.elems);
    }
    bool same = i == n && drx_plan_count(p) == n && memcmp(want, got, n * sizeof *got) == 0;
    bool all = true;
    for (uint64_t L = 0; L < v.nelem; L++)
        all = all && seen[L] == 1;
    tap_ok(same && runs_bad == 0 && chunks_bad == 0 && all,
           "case %d: rank %d, %llu chunks, %llu of them the view's, %llu elements: list %s, "
           "runs %s, flags %s, elements %s",
           t, m.rank, (unsigned long long)m.map.nchunks, (unsigned long long)n,
           (unsigned long long)v.nelem, same ? "ok" : "WRONG", runs_bad ? "WRONG" : "ok",
           chunks_bad ? "WRONG" : "ok", all ? "ok" : "WRONG");

    /* random shares, and a random partition whose shares concatenate to
     * the whole list */
    bool shares = true;
    for (int s = 0; s < 20; s++) {
        uint64_t start = rnd(n + 1), count = rnd(n - start + 1), j = 0;
        shares = shares && drx_plan_seek(p, start) == 0;
        while (j < count && drx_plan_next(p, &c) == 1)
            shares = shares && c.q == want[start + j++];
        shares = shares && j == count;
    }
    shares = shares && drx_plan_seek(p, n + 1) == -EINVAL;
    uint64_t at = 0, *g = got;
    while (at < n) {
        uint64_t count = 1 + rnd(n - at);
        drx_plan_seek(p, at);
        for (uint64_t j = 0; j < count && drx_plan_next(p, &c) == 1; j++)
            *g++ = c.q;
        at += count;
    }
    shares = shares && drx_plan_seek(p, n) == 0 && drx_plan_next(p, &c) == 0;
    shares = shares && (uint64_t)(g - got) == n && memcmp(want, got, n * sizeof *got) == 0;
    tap_ok(shares, "case %d: shares and a partition of the list", t);

    /* drx_view_chunks goes through the planner: the same list */
    g = got;
    rc = drx_view_chunks(&m, &v, collect, &g);
    tap_ok(rc == 0 && (uint64_t)(g - got) == n && memcmp(want, got, n * sizeof *got) == 0,
           "case %d: drx_view_chunks", t);
out:
    free(seen);
    drx_plan_destroy(p);
    drx_map_fini(&m.map);
}

/* The paper's test vector (SPEC section 3): the whole 5x4x4 array of
 * 1x1x1 chunks is every address in order; a single element is F* of it. */
static void paper(uint64_t *got)
{
    struct drx_array_meta m;
    struct drx_view v;
    struct drx_plan *p = NULL;
    struct drx_plan_chunk c;
    uint64_t B[3] = {4, 3, 1}, n = 0;
    bool ok = true;

    memset(&m, 0, sizeof m);
    m.rank = 3;
    m.type = DRX_F64;
    m.elem_size = 8;
    for (int d = 0; d < 3; d++)
        m.chunk[d] = 1;
    drx_map_init(&m.map, 3, B);
    drx_map_grow(&m.map, 2, 3);
    drx_map_grow(&m.map, 1, 4);
    drx_map_grow(&m.map, 0, 6);
    drx_map_grow(&m.map, 2, 4);
    m.bounds[0] = 6, m.bounds[1] = 4, m.bounds[2] = 4;
    drx_view_whole(&m, &v);
    ok = drx_plan_create(&m, &v, &p) == 0 && drx_plan_count(p) == 96;
    while (ok && drx_plan_next(p, &c) == 1)
        got[n] = c.q, ok = c.q == n, n++;
    tap_ok(ok && n == 96, "paper: the whole array is addresses 0..95 in order");
    drx_plan_destroy(p);

    v.origin[0] = 3, v.origin[1] = 1, v.origin[2] = 2;
    v.count[0] = v.count[1] = v.count[2] = 1;
    v.nelem = 1;
    ok = drx_plan_create(&m, &v, &p) == 0 && drx_plan_next(p, &c) == 1 && c.q == 34 &&
         drx_plan_next(p, &c) == 0;
    tap_ok(ok, "paper: F*(3,1,2) = 34");
    drx_plan_destroy(p);
    drx_map_fini(&m.map);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 2000;
    uint64_t *want = malloc(MAX_CHUNKS * 8 * sizeof *want);
    uint64_t *got = malloc(MAX_CHUNKS * 8 * sizeof *got);

    srandom(argc > 2 ? (unsigned)atoi(argv[2]) : 15);
    paper(got);
    for (int t = 0; t < cases; t++)
        one_case(t, want, got);
    free(want);
    free(got);
    return tap_done();
}
