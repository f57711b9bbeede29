/* A round of drx-load: its chunks and the runs that connect them to the
 * view's data, both from libcore's planner (drx/plan.h), which owns all
 * chunk-to-view arithmetic.  What is left here is MPI's: a round is the
 * list of its runs sorted by their place in the view's data, because MPI
 * file views need ascending displacements and sorted runs let the packed
 * view bytes be read or written with one collective call per round; and
 * the datatypes of those calls.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "load_i.h"

void load_plan_init(struct load_plan *p, const struct drx_array_meta *m, const struct drx_view *v)
{
    memset(p, 0, sizeof(*p));
    p->meta = m;
    p->view = v;
}

void load_plan_fini(struct load_plan *p)
{
    free(p->q);
    free(p->covered);
    free(p->inside);
    free(p->run);
    free(p->roff);
    free(p->rlen);
    memset(p, 0, sizeof(*p));
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
        if (p->nranges > 0 && p->roff[p->nranges - 1] + p->rlen[p->nranges - 1] == r->raw_off) {
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

/* The planner's runs of one chunk, placed in the round's buffer. */
struct round_slot {
    struct load_plan *p;
    uint64_t base; /* byte offset of the chunk's slot */
};

static int add_run(const struct drx_plan_run *r, void *arg)
{
    struct round_slot *rs = arg;
    const size_t es = rs->p->view->elem_size;
    struct load_run run = {
        .raw_off = r->view_off * es, .buf_off = rs->base + r->chunk_off * es, .len = r->count};

    rs->p->run_stride = r->stride * es; /* the same for every run of a view */
    return plan_push(rs->p, &run);
}

/* Room for n chunks in the round's lists. */
static int plan_reserve(struct load_plan *p, size_t n)
{
    if (n <= p->qcap)
        return 0;
    uint64_t *q = realloc(p->q, n * sizeof(*q));
    if (!q)
        return -ENOMEM;
    p->q = q;
    bool *c = realloc(p->covered, n * sizeof(*c));
    if (!c)
        return -ENOMEM;
    p->covered = c;
    bool *in = realloc(p->inside, n * sizeof(*in));
    if (!in)
        return -ENOMEM;
    p->inside = in;
    p->qcap = n;
    return 0;
}

int load_plan_round(struct load_plan *p, struct drx_plan *src, size_t n, bool runs)
{
    struct drx_plan_chunk c;
    int rc = plan_reserve(p, n);

    if (rc < 0)
        return rc;
    p->nchunks = 0;
    p->nruns = 0;
    p->nranges = 0;
    for (size_t i = 0; i < n; i++) {
        if (drx_plan_next(src, &c) != 1)
            return -EIO; /* the share was counted by the same planner */
        struct round_slot rs = {p, (uint64_t)i * p->meta->chunk_bytes};
        p->q[i] = c.q;
        /* an edge chunk is never covered: past the bounds this handle
         * knows it may hold another writer's elements since an extension
         * (written whole, they were overwritten with the fill) */
        p->covered[i] = c.covered && c.inside;
        p->inside[i] = c.inside;
        p->nchunks = i + 1;
        if (runs && (rc = drx_plan_runs(src, &c, add_run, &rs)) < 0)
            return rc;
    }
    if (!runs || p->chunk_order)
        return 0;
    if (p->nruns > 1)
        qsort(p->run, p->nruns, sizeof(*p->run), run_cmp);
    rc = plan_ranges(p);
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

void load_plan_gather(const struct load_plan *p, const unsigned char *chunks, unsigned char *view)
{
    const size_t es = p->view->elem_size;
    for (size_t i = 0; i < p->nruns; i++) {
        const struct load_run *r = &p->run[i];
        strided_copy(view + r->raw_off, es, chunks + r->buf_off, p->run_stride, r->len, es);
    }
}

void load_plan_scatter(const struct load_plan *p, const unsigned char *view, unsigned char *chunks)
{
    const size_t es = p->view->elem_size;
    for (size_t i = 0; i < p->nruns; i++) {
        const struct load_run *r = &p->run[i];
        strided_copy(chunks + r->buf_off, p->run_stride, view + r->raw_off, es, r->len, es);
    }
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
