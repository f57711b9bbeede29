/* The axial-vector mapping F* and its inverse (Otoo & Rotem, section III).
 *
 * Every vector but dimension 0's opens with a placeholder record (start 0,
 * addr -1), as in the paper's Fig. 3b, so the binary search always finds a
 * record and the comparison of start addresses needs no special case.
 * Dimension 0's first record describes the initial row-major allocation,
 * which is exactly a segment of dimension 0 starting at index 0.
 */
#include "drx/map.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHUNKS ((uint64_t)INT64_MAX)

/* Room for cap records in v (never less than it has). */
static int vec_grow(struct drx_axial_vec *v, size_t cap)
{
    struct drx_axial_rec *p;
    uint64_t *s;
    int64_t *a;

    if (cap <= v->cap)
        return 0;
    if (!(p = realloc(v->rec, cap * sizeof *p)))
        return -ENOMEM;
    v->rec = p;
    if (!(s = realloc(v->start, cap * sizeof *s)))
        return -ENOMEM;
    v->start = s;
    if (!(a = realloc(v->addr, cap * sizeof *a)))
        return -ENOMEM;
    v->addr = a;
    v->cap = cap;
    return 0;
}

static int vec_push(struct drx_axial_vec *v, struct drx_axial_rec *r, int dim)
{
    int rc;

    r->base = (uint64_t)r->addr - r->start * r->coef[dim];
    if (v->n == v->cap && (rc = vec_grow(v, v->cap ? 2 * v->cap : 4)))
        return rc;
    v->start[v->n] = r->start;
    v->addr[v->n] = r->addr;
    v->rec[v->n++] = *r;
    return 0;
}

int drx_map_reserve(struct drx_map *m, size_t records)
{
    for (int i = 0; i < m->rank; i++) {
        struct drx_axial_vec *v = &m->vec[i];
        int rc;
        if (records > SIZE_MAX / sizeof *v->rec - v->n)
            return -ENOMEM;
        if ((rc = vec_grow(v, v->n + records)))
            return rc;
    }
    return 0;
}

/* Coefficients of a segment of dimension l over bounds B (B[l] excluded from
 * every product): l varies slowest, the others keep row-major order. */
static int segment_coefs(int rank, const uint64_t *bound, int l, uint64_t *coef)
{
    uint64_t prod = 1;
    for (int j = rank - 1; j >= 0; j--) {
        if (j == l)
            continue;
        coef[j] = prod;
        if (__builtin_mul_overflow(prod, bound[j], &prod) || prod > MAX_CHUNKS)
            return -EOVERFLOW;
    }
    coef[l] = prod;
    return 0;
}

int drx_map_init(struct drx_map *m, int rank, const uint64_t *bound)
{
    struct drx_axial_rec r;
    uint64_t n = 1;
    int rc;

    memset(m, 0, sizeof *m);
    if (rank < 1 || rank > DRX_MAX_RANK)
        return -EINVAL;
    m->rank = rank;
    for (int i = 0; i < rank; i++) {
        if (bound[i] == 0)
            return -EINVAL;
        if (__builtin_mul_overflow(n, bound[i], &n) || n > MAX_CHUNKS)
            return -EOVERFLOW;
        m->bound[i] = bound[i];
    }
    m->nchunks = n;
    m->last_dim = 0;

    memset(&r, 0, sizeof r);
    rc = segment_coefs(rank, bound, 0, r.coef);
    if (rc == 0)
        rc = vec_push(&m->vec[0], &r, 0);
    memset(&r, 0, sizeof r);
    r.addr = -1;
    for (int i = 1; i < rank && rc == 0; i++)
        rc = vec_push(&m->vec[i], &r, i);
    if (rc)
        drx_map_fini(m);
    return rc;
}

void drx_map_fini(struct drx_map *m)
{
    for (int i = 0; i < DRX_MAX_RANK; i++) {
        free(m->vec[i].rec);
        free(m->vec[i].start);
        free(m->vec[i].addr);
    }
    memset(m, 0, sizeof *m);
}

int drx_map_grow(struct drx_map *m, int l, uint64_t new_bound)
{
    uint64_t others, added, total;
    struct drx_axial_rec r;
    int rc;

    if (l < 0 || l >= m->rank || new_bound <= m->bound[l])
        return -EINVAL;
    memset(&r, 0, sizeof r);
    rc = segment_coefs(m->rank, m->bound, l, r.coef);
    if (rc)
        return rc;
    others = r.coef[l];
    if (__builtin_mul_overflow(others, new_bound - m->bound[l], &added) ||
        __builtin_add_overflow(m->nchunks, added, &total) || total > MAX_CHUNKS)
        return -EOVERFLOW;

    /* An uninterrupted growth of the newest segment's dimension continues
     * that segment: same start, address and coefficients. */
    if (m->last_dim != l) {
        r.start = m->bound[l];
        r.addr = (int64_t)m->nchunks;
        rc = vec_push(&m->vec[l], &r, l);
        if (rc)
            return rc;
        m->last_dim = l;
    }
    m->bound[l] = new_bound;
    m->nchunks = total;
    return 0;
}

/* Index of the last record whose start is <= i (the first record starts at
 * 0, so there always is one).  Branch-free: the loop runs log2(n) times
 * whatever the input, and the comparison becomes a conditional move, which
 * matters because F* sits under every chunk access. */
static size_t search_start(const struct drx_axial_vec *v, uint64_t i)
{
    const uint64_t *base = v->start;
    size_t n = v->n;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half] <= i ? base + half : base;
        n -= half;
    }
    return (size_t)(base - v->start);
}

/* Index of the last record whose addr is <= q (placeholders have -1). */
static size_t search_addr(const struct drx_axial_vec *v, int64_t q)
{
    const int64_t *base = v->addr;
    size_t n = v->n;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half] <= q ? base + half : base;
        n -= half;
    }
    return (size_t)(base - v->addr);
}

uint64_t drx_map_address(const struct drx_map *m, const uint64_t *idx)
{
    const struct drx_axial_rec *r;
    int64_t best = -2;
    size_t zi = 0;
    int z = 0;
    uint64_t q;

    /* Compare start addresses from the packed arrays; touch only the one
     * record that wins. */
    for (int j = 0; j < m->rank; j++) {
        size_t i;
        assert(idx[j] < m->bound[j]);
        i = search_start(&m->vec[j], idx[j]);
        if (m->vec[j].addr[i] > best) {
            best = m->vec[j].addr[i];
            z = j;
            zi = i;
        }
    }
    r = &m->vec[z].rec[zi];
    q = r->base;
    for (int j = 0; j < m->rank; j++)
        q += idx[j] * r->coef[j];
    return q;
}

void drx_map_index(const struct drx_map *m, uint64_t q, uint64_t *idx)
{
    const struct drx_axial_rec *best = NULL;
    int z = 0;
    uint64_t rem;

    assert(q < m->nchunks);
    for (int j = 0; j < m->rank; j++) {
        const struct drx_axial_rec *r = &m->vec[j].rec[search_addr(&m->vec[j], (int64_t)q)];
        if (!best || r->addr > best->addr) {
            best = r;
            z = j;
        }
    }
    rem = q - (uint64_t)best->addr;
    idx[z] = best->start + rem / best->coef[z];
    rem %= best->coef[z];
    for (int j = 0; j < m->rank; j++) {
        if (j == z)
            continue;
        idx[j] = rem / best->coef[j];
        rem %= best->coef[j];
    }
}

size_t drx_map_records(const struct drx_map *m)
{
    size_t n = 0;
    for (int j = 0; j < m->rank; j++)
        n += m->vec[j].n;
    return n;
}
