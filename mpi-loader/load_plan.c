/* Chunk order <-> view order for drx-load.
 *
 * A chunk covers a box of array elements; the view's elements inside that
 * box form a box in view coordinates (a step selects every step-th element,
 * so the view indices in a chunk are one contiguous range per dimension).
 * Along the view's fastest dimension that has more than one element, the
 * box's elements are consecutive in the view's data (a "run") and evenly
 * spaced in the chunk.  A round is the list of its runs sorted by their
 * place in the view's data: MPI file views need ascending displacements, and
 * sorted runs let the packed view bytes be read or written with one
 * collective call per round.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "load_i.h"

/* Dimension order of the view's data, slowest first. */
static void view_dims(const struct drx_view *v, int *ord)
{
    for (int i = 0; i < v->rank; i++)
        ord[i] = v->order == DRX_ORDER_C ? i : v->rank - 1 - i;
}

/* The run dimension: the fastest (in the view's order) with more than one
 * element, so that a column slice like dim2=0:1 still gets long runs. */
static int run_dim(const struct drx_view *v)
{
    int ord[DRX_MAX_RANK];
    view_dims(v, ord);
    for (int i = v->rank - 1; i >= 0; i--)
        if (v->count[ord[i]] > 1)
            return ord[i];
    return ord[v->rank - 1];
}

/* Element strides of the view's data and of a chunk, per dimension. */
static void strides(const struct drx_array_meta *m, const struct drx_view *v, uint64_t *vstride,
                    uint64_t *cstride)
{
    int ord[DRX_MAX_RANK];
    view_dims(v, ord);
    uint64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        vstride[ord[i]] = s;
        s *= v->count[ord[i]];
    }
    s = 1;
    for (int d = m->rank - 1; d >= 0; d--) {
        cstride[d] = s;
        s *= m->chunk[d];
    }
}

void load_plan_init(struct load_plan *p, const struct drx_array_meta *m, const struct drx_view *v)
{
    memset(p, 0, sizeof(*p));
    p->meta = m;
    p->view = v;
    uint64_t vs[DRX_MAX_RANK], cs[DRX_MAX_RANK];
    strides(m, v, vs, cs);
    int g = run_dim(v);
    p->run_stride = v->step[g] * cs[g] * v->elem_size;
}

void load_plan_fini(struct load_plan *p)
{
    free(p->covered);
    free(p->inside);
    free(p->run);
    free(p->roff);
    free(p->rlen);
    memset(p, 0, sizeof(*p));
}

uint64_t load_plan_runs_per_chunk(const struct drx_array_meta *m, const struct drx_view *v)
{
    int g = run_dim(v);
    uint64_t n = 1;
    for (int d = 0; d < m->rank; d++)
        if (d != g)
            n *= m->chunk[d] < v->count[d] ? m->chunk[d] : v->count[d];
    return n;
}

/* View index range [*vlo, *vhi) of dimension d whose elements fall in the
 * array element range [lo, hi). */
static void view_range(const struct drx_view *v, int d, uint64_t lo, uint64_t hi, uint64_t *vlo,
                       uint64_t *vhi)
{
    uint64_t o = v->origin[d], st = v->step[d];
    uint64_t a = lo <= o ? 0 : (lo - o + st - 1) / st;
    uint64_t b = hi <= o ? 0 : (hi - o + st - 1) / st;
    if (b > v->count[d])
        b = v->count[d];
    if (a > b)
        a = b;
    *vlo = a;
    *vhi = b;
}

static int run_cmp(const void *x, const void *y)
{
    const struct load_run *a = x, *b = y;
    return (a->raw_off > b->raw_off) - (a->raw_off < b->raw_off);
}

static int run_cmp_buf(const void *x, const void *y)
{
    const struct load_run *a = x, *b = y;
    return (a->buf_off > b->buf_off) - (a->buf_off < b->buf_off);
}

/* With the runs in raw_off order: their packed offsets and the merged
 * byte ranges of the view's data. */
static int plan_ranges(struct load_plan *p)
{
    const size_t es = p->view->elem_size;
    uint64_t pk = 0;
    p->nranges = 0;
    for (size_t i = 0; i < p->nruns; i++) {
        struct load_run *r = &p->run[i];
        uint64_t len = r->len * es;
        r->pk_off = pk;
        pk += len;
        if (p->nranges > 0 &&
            p->roff[p->nranges - 1] + p->rlen[p->nranges - 1] == r->raw_off) {
            p->rlen[p->nranges - 1] += len;
            continue;
        }
        if (p->nranges == p->rcap) {
            size_t cap = p->rcap ? 2 * p->rcap : 256;
            uint64_t *o = realloc(p->roff, cap * sizeof(*o));
            if (!o)
                return -ENOMEM;
            p->roff = o;
            uint64_t *l = realloc(p->rlen, cap * sizeof(*l));
            if (!l)
                return -ENOMEM;
            p->rlen = l;
            p->rcap = cap;
        }
        p->roff[p->nranges] = r->raw_off;
        p->rlen[p->nranges++] = len;
    }
    return 0;
}

static int plan_push(struct load_plan *p, const struct load_run *r)
{
    if (p->nruns == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        struct load_run *n = realloc(p->run, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        p->run = n;
        p->cap = cap;
    }
    p->run[p->nruns++] = *r;
    return 0;
}

/* Appends the runs of chunk q (slot `slot` of the round's buffer). */
static int plan_chunk(struct load_plan *p, uint64_t q, size_t slot)
{
    const struct drx_array_meta *m = p->meta;
    const struct drx_view *v = p->view;
    int k = m->rank, g = run_dim(v), ord[DRX_MAX_RANK];
    uint64_t idx[DRX_MAX_RANK], lo[DRX_MAX_RANK], vlo[DRX_MAX_RANK], vhi[DRX_MAX_RANK];
    uint64_t vs[DRX_MAX_RANK], cs[DRX_MAX_RANK], cur[DRX_MAX_RANK];
    bool covered = true, inside = true;

    p->covered[slot] = false;
    p->inside[slot] = false;
    view_dims(v, ord);
    strides(m, v, vs, cs);
    drx_map_index(&m->map, q, idx);
    for (int d = 0; d < k; d++) {
        lo[d] = idx[d] * m->chunk[d];
        uint64_t hi = lo[d] + m->chunk[d];
        if (hi > m->bounds[d]) {
            hi = m->bounds[d];
            inside = false;
        }
        view_range(v, d, lo[d], hi, &vlo[d], &vhi[d]);
        if (vlo[d] == vhi[d])
            return 0; /* not in the view: drx_view_chunks promised otherwise */
        if (vhi[d] - vlo[d] != hi - lo[d])
            covered = false;
        cur[d] = vlo[d];
    }
    p->covered[slot] = covered;
    p->inside[slot] = inside;

    const size_t es = v->elem_size;
    const uint64_t base = (uint64_t)slot * m->chunk_bytes;
    for (;;) {
        uint64_t raw = 0, in = 0;
        for (int d = 0; d < k; d++) {
            raw += cur[d] * vs[d];
            in += (v->origin[d] + cur[d] * v->step[d] - lo[d]) * cs[d];
        }
        struct load_run r = {.raw_off = raw * es, .buf_off = base + in * es, .len = vhi[g] - vlo[g]};
        int rc = plan_push(p, &r);
        if (rc < 0)
            return rc;
        /* Odometer over the other dimensions, the view's fastest first, so
         * that one chunk's runs come out nearly sorted. */
        int i;
        for (i = k - 1; i >= 0; i--) {
            int d = ord[i];
            if (d == g)
                continue;
            if (++cur[d] < vhi[d])
                break;
            cur[d] = vlo[d];
        }
        if (i < 0)
            return 0;
    }
}

int load_plan_round(struct load_plan *p, const uint64_t *q, size_t n)
{
    bool *c = realloc(p->covered, (n ? n : 1) * sizeof(*c));
    if (!c)
        return -ENOMEM;
    p->covered = c;
    bool *in = realloc(p->inside, (n ? n : 1) * sizeof(*in));
    if (!in)
        return -ENOMEM;
    p->inside = in;
    p->q = q;
    p->nchunks = n;
    p->nruns = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = plan_chunk(p, q[i], i);
        if (rc < 0)
            return rc;
    }
    if (p->nruns > 1)
        qsort(p->run, p->nruns, sizeof(*p->run), run_cmp);
    int rc = plan_ranges(p);
    if (rc < 0)
        return rc;
    /* Strided runs (order=F, steps) copied in raw order would touch a new
     * cache line of some chunk per element; in buffer order, consecutive
     * runs share their chunk's cache lines. */
    if (p->run_stride != p->view->elem_size && p->nruns > 1)
        qsort(p->run, p->nruns, sizeof(*p->run), run_cmp_buf);
    return 0;
}

uint64_t load_plan_bytes(const struct load_plan *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nruns; i++)
        n += p->run[i].len;
    return n * p->view->elem_size;
}

/* n elements of es bytes from src (every sstride bytes) to dst (every
 * dstride).  A constant size per case lets the compiler turn each memcpy
 * into one load and store: this loop is the whole cost of a transpose
 * (order=F or a step), one element at a time. */
static void strided_copy(unsigned char *dst, uint64_t dstride, const unsigned char *src,
                         uint64_t sstride, uint64_t n, size_t es)
{
    if (dstride == es && sstride == es) {
        memcpy(dst, src, n * es);
        return;
    }
#define STRIDED(SIZE)                                                                          \
    for (uint64_t j = 0; j < n; j++, dst += dstride, src += sstride)                          \
        memcpy(dst, src, SIZE);                                                                \
    return
    switch (es) {
    case 1: STRIDED(1);
    case 2: STRIDED(2);
    case 4: STRIDED(4);
    case 8: STRIDED(8);
    case 16: STRIDED(16);
    default: STRIDED(es);
    }
#undef STRIDED
}

void load_plan_unpack(const struct load_plan *p, const unsigned char *packed, unsigned char *chunks)
{
    const size_t es = p->view->elem_size;
    for (size_t i = 0; i < p->nruns; i++) {
        const struct load_run *r = &p->run[i];
        strided_copy(chunks + r->buf_off, p->run_stride, packed + r->pk_off, es, r->len, es);
    }
}

void load_plan_pack(const struct load_plan *p, const unsigned char *chunks, unsigned char *packed)
{
    const size_t es = p->view->elem_size;
    for (size_t i = 0; i < p->nruns; i++) {
        const struct load_run *r = &p->run[i];
        strided_copy(packed + r->pk_off, es, chunks + r->buf_off, p->run_stride, r->len, es);
    }
}

/* --- the view's chunk list --- */

struct chunk_walk {
    uint64_t seen, start, count;
    uint64_t *out;
};

static int chunk_visit(uint64_t q, void *arg)
{
    struct chunk_walk *w = arg;
    if (w->seen >= w->start && w->seen - w->start < w->count)
        w->out[w->seen - w->start] = q;
    w->seen++;
    /* Past our share: the rest of the walk would only count. */
    return w->out && w->seen >= w->start + w->count ? 1 : 0;
}

int load_plan_count(const struct drx_array_meta *m, const struct drx_view *v, uint64_t *n)
{
    struct chunk_walk w = {0, 0, 0, NULL};
    int rc = drx_view_chunks(m, v, chunk_visit, &w);
    if (rc < 0)
        return rc;
    *n = w.seen;
    return 0;
}

int load_plan_chunks(const struct drx_array_meta *m, const struct drx_view *v, uint64_t start,
                     uint64_t count, uint64_t *out)
{
    if (count == 0)
        return 0;
    struct chunk_walk w = {0, start, count, out};
    int rc = drx_view_chunks(m, v, chunk_visit, &w);
    if (rc < 0)
        return rc;
    return w.seen >= start + count ? 0 : -EIO;
}

/* --- MPI datatypes --- */

int load_type_ranges(const uint64_t *off, const uint64_t *len, size_t n, MPI_Datatype *t,
                     uint64_t *bytes)
{
    int rc = 0;
    int *bl = NULL;
    MPI_Aint *disp = NULL;
    size_t m = 0;
    uint64_t total = 0;

    *t = MPI_BYTE;
    for (size_t i = 0; i < n; i++)
        total += len[i];
    if (bytes)
        *bytes = total;
    if (n == 0)
        return 0;
    bl = malloc(n * sizeof(*bl));
    disp = malloc(n * sizeof(*disp));
    if (!bl || !disp) {
        rc = -ENOMEM;
        goto out;
    }
    /* Merge adjacent ranges: fewer blocks for ROMIO to flatten, and one
     * pwrite for what is contiguous on disk.  Block lengths are int, so a
     * merged block stops before INT_MAX. */
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && (uint64_t)disp[m - 1] + (uint64_t)bl[m - 1] == off[i] &&
            (uint64_t)bl[m - 1] + len[i] <= INT_MAX) {
            bl[m - 1] += (int)len[i];
            continue;
        }
        if (len[i] > INT_MAX) {
            rc = -EOVERFLOW;
            goto out;
        }
        disp[m] = (MPI_Aint)off[i];
        bl[m] = (int)len[i];
        m++;
    }
    if (m > INT_MAX) {
        rc = -EOVERFLOW;
        goto out;
    }
    if (MPI_Type_create_hindexed((int)m, bl, disp, MPI_BYTE, t) != MPI_SUCCESS ||
        MPI_Type_commit(t) != MPI_SUCCESS) {
        *t = MPI_BYTE;
        rc = -EIO;
    }
out:
    free(bl);
    free(disp);
    return rc;
}

void load_type_free(MPI_Datatype *t)
{
    if (*t != MPI_BYTE && *t != MPI_DATATYPE_NULL)
        MPI_Type_free(t);
    *t = MPI_BYTE;
}

int load_type_chunks(const struct load_plan *p, MPI_Datatype *t)
{
    size_t n = p->nchunks;
    uint64_t *off = malloc((n ? n : 1) * sizeof(*off));
    uint64_t *len = malloc((n ? n : 1) * sizeof(*len));
    int rc = -ENOMEM;
    if (off && len) {
        for (size_t i = 0; i < n; i++) {
            off[i] = p->q[i] * p->meta->chunk_bytes;
            len[i] = p->meta->chunk_bytes;
        }
        rc = load_type_ranges(off, len, n, t, NULL);
    }
    free(off);
    free(len);
    return rc;
}

int load_type_runs(const struct load_plan *p, MPI_Datatype *t)
{
    return load_type_ranges(p->roff, p->rlen, p->nranges, t, NULL);
}
