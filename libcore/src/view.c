/* Views, the copy engine: copying between a view and a caller's buffer
 * chunk by chunk.  Parsing and resolving view words is in view_spec.c.
 *
 * The engine works on a range of view elements [L0, L0+n) in the
 * view's linear order.  Such a range is a union of at most 2k "boxes"
 * (hyper-rectangles in view coordinates, each itself a contiguous run of
 * the linear order).  The engine visits every chunk that meets the boxes'
 * bounding box once, reads (or writes) only the span of the chunk the range
 * needs, and copies rows along the view's fastest dimension.
 */
#include "drx/view.h"

#include "array_i.h"
#include "drx/io.h"
#include "drx/plan.h"
#include "view_engine_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void engine_init(struct engine *e, struct drx_array *a, const struct drx_view *v)
{
    e->a = a;
    e->m = drx_array_meta(a);
    e->v = v;
    e->rank = v->rank;
    for (int i = 0; i < e->rank; i++)
        e->perm[i] = v->order == DRX_ORDER_C ? i : e->rank - 1 - i;
    {
        uint64_t s = 1;
        for (int i = e->rank - 1; i >= 0; i--) {
            e->lstride[e->perm[i]] = s;
            s *= v->count[e->perm[i]];
        }
    }
}

/* Splits [L0, L0+n) into boxes, each a contiguous run of the linear order. */
void drx_engine_boxes(struct engine *e, uint64_t L0, uint64_t n)
{
    uint64_t idx[DRX_MAX_RANK], L = L0, end = L0 + n;
    int k = e->rank;

    /* idx by position in perm */
    for (int i = 0; i < k; i++) {
        int d = e->perm[i];
        idx[i] = (L0 / e->lstride[d]) % e->v->count[d];
    }
    e->nbox = 0;
    while (L < end) {
        struct box *b = &e->box[e->nbox++];
        uint64_t rem = end - L, m;
        int t = k - 1;
        /* the slowest position whose faster positions are all at 0 ... */
        while (t > 0 && idx[t] == 0)
            t--;
        /* ... narrowed until a whole step along it fits in what remains */
        while (t < k - 1 && e->lstride[e->perm[t]] > rem)
            t++;
        {
            int dt = e->perm[t];
            uint64_t room = e->v->count[dt] - idx[t];
            m = rem / e->lstride[dt];
            if (m > room)
                m = room;
            for (int i = 0; i < k; i++) {
                int d = e->perm[i];
                if (i < t) {
                    b->lo[d] = idx[i];
                    b->hi[d] = idx[i] + 1;
                } else if (i == t) {
                    b->lo[d] = idx[i];
                    b->hi[d] = idx[i] + m;
                } else {
                    b->lo[d] = 0;
                    b->hi[d] = e->v->count[d];
                }
            }
            b->first = L - L0;
            L += m * e->lstride[dt];
            /* advance idx by m along t, carrying into slower positions */
            idx[t] += m;
            for (int i = t; i > 0 && idx[i] == e->v->count[e->perm[i]]; i--) {
                idx[i] = 0;
                idx[i - 1]++;
            }
        }
    }
}

/* View indices along d that fall in chunk coordinate K, within the box's
 * [lo, hi): [*wlo, *whi). */
static void chunk_range(const struct engine *e, int d, uint64_t K, uint64_t lo, uint64_t hi,
                        uint64_t *wlo, uint64_t *whi)
{
    drx_plan_view_range(e->m->chunk, e->v, d, K, wlo, whi);
    *wlo = *wlo > lo ? *wlo : lo;
    *whi = *whi < hi ? *whi : hi;
}

static inline void copy_elem(unsigned char *dst, const unsigned char *src, size_t es)
{
    switch (es) {
    case 1:
        *dst = *src;
        break;
    case 2:
        memcpy(dst, src, 2);
        break;
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    default:
        memcpy(dst, src, 16);
        break;
    }
}

static int scratch_ensure(struct engine *e, size_t bytes)
{
    if (bytes <= e->scratch_cap)
        return 0;
    unsigned char *p = realloc(e->scratch, bytes);
    if (!p)
        return -ENOMEM;
    e->scratch = p;
    e->scratch_cap = bytes;
    return 0;
}

/* One row of a part: run elements along the view's fastest dimension, at
 * element offset c0 of the chunk and `stride` elements apart there, and at
 * u in the caller's buffer. */
typedef int (*row_fn)(struct engine *e, uint64_t c0, unsigned char *u, uint64_t run,
                      uint64_t stride, void *ctx);

/* Calls fn for every row of the part of box b inside chunk K (view ranges
 * lo..hi), stopping at the first non-zero return. */
static int walk_rows(struct engine *e, const struct box *b, const uint64_t *K, const uint64_t *lo,
                     const uint64_t *hi, row_fn fn, void *ctx)
{
    const size_t es = e->v->elem_size;
    const int k = e->rank, f = e->perm[k - 1];
    const uint64_t run = hi[f] - lo[f], stride = drx_plan_chunk_stride(e->m->chunk, e->v, f);
    uint64_t w[DRX_MAX_RANK], cs[DRX_MAX_RANK], lin = b->first, c0;

    /* the row's place in the buffer (lin) and in the chunk (c0) move by a
     * stride per step of the odometer: no products per row */
    for (int d = 0; d < k; d++) {
        lin += (lo[d] - b->lo[d]) * e->lstride[d];
        cs[d] = drx_plan_chunk_stride(e->m->chunk, e->v, d);
    }
    c0 = drx_plan_chunk_offset(e->m->chunk, e->v, K, lo);
    memcpy(w, lo, sizeof(uint64_t) * (size_t)k);
    for (;;) {
        int rc = fn(e, c0, e->buf + lin * es, run, stride, ctx);
        if (rc)
            return rc;
        /* odometer over every dimension but the fastest, fastest-first */
        int i = k - 2;
        for (; i >= 0; i--) {
            int d = e->perm[i];
            if (++w[d] < hi[d]) {
                lin += e->lstride[d];
                c0 += cs[d];
                break;
            }
            lin -= (hi[d] - 1 - lo[d]) * e->lstride[d];
            c0 -= (hi[d] - 1 - lo[d]) * cs[d];
            w[d] = lo[d];
        }
        if (i < 0)
            return 0;
    }
}

/* Rows between the caller's buffer and chunk bytes held in memory. */
struct in_span {
    unsigned char *span;
    uint64_t span0; /* chunk element offset of span[0] */
};

static int row_mem(struct engine *e, uint64_t c0, unsigned char *u, uint64_t run, uint64_t stride,
                   void *ctx)
{
    const struct in_span *sp = ctx;
    const size_t es = e->v->elem_size, sstride = (size_t)stride * es;
    unsigned char *c = sp->span + (c0 - sp->span0) * es;

    if (stride == 1) {
        if (e->writing)
            memcpy(c, u, run * es);
        else
            memcpy(u, c, run * es);
    } else if (e->writing) {
        for (uint64_t i = 0; i < run; i++, c += sstride, u += es)
            copy_elem(c, u, es);
    } else {
        for (uint64_t i = 0; i < run; i++, c += sstride, u += es)
            copy_elem(u, c, es);
    }
    return 0;
}

/* Writes whole bytes [off, off+len) of chunk q under their span lock. */
static int write_locked(struct engine *e, uint64_t q, uint64_t off, uint64_t len,
                        const unsigned char *buf)
{
    int rc = drx_array_span_lock(e->a, q, off, len);
    if (rc)
        return rc;
    rc = drx_array_chunk_write(e->a, q, off, len, buf);
    drx_array_span_unlock(e->a, q, off, len);
    return rc;
}

/* Rows read or written straight from the file, for chunks whose span in a
 * request is larger than DRX_SPAN_MAX: a contiguous row moves between the
 * file and the caller's buffer directly, a strided one through scratch
 * when its extent fits (merged under the lock when writing), else element
 * by element. */
static int row_io(struct engine *e, uint64_t c0, unsigned char *u, uint64_t run, uint64_t stride,
                  void *ctx)
{
    const uint64_t q = *(const uint64_t *)ctx;
    const size_t es = e->v->elem_size;
    const uint64_t ext = ((run - 1) * stride + 1) * es, off = c0 * es;
    int rc;

    if (stride == 1)
        return e->writing ? write_locked(e, q, off, ext, u)
                          : drx_array_chunk_read(e->a, q, off, ext, u);
    if (ext <= DRX_SPAN_MAX) {
        struct in_span sp = {NULL, c0};
        if ((rc = scratch_ensure(e, (size_t)ext)))
            return rc;
        sp.span = e->scratch;
        if (e->writing && (rc = drx_array_span_lock(e->a, q, off, ext)))
            return rc;
        rc = drx_array_chunk_read(e->a, q, off, ext, e->scratch);
        if (rc == 0)
            row_mem(e, c0, u, run, stride, &sp);
        if (e->writing) {
            if (rc == 0)
                rc = drx_array_chunk_write(e->a, q, off, ext, e->scratch);
            drx_array_span_unlock(e->a, q, off, ext);
        }
        return rc;
    }
    for (uint64_t i = 0; i < run; i++, u += es) {
        uint64_t o = off + i * stride * es;
        rc = e->writing ? write_locked(e, q, o, es, u) : drx_array_chunk_read(e->a, q, o, es, u);
        if (rc)
            return rc;
    }
    return 0;
}

/* The parts of one chunk that the boxes need: per box, its element range
 * in the chunk (or none), and the span of the chunk they cover together. */
struct parts {
    uint64_t lo[2 * DRX_MAX_RANK][DRX_MAX_RANK], hi[2 * DRX_MAX_RANK][DRX_MAX_RANK];
    bool any[2 * DRX_MAX_RANK];
    bool runs[2 * DRX_MAX_RANK]; /* read run by run: set by parts_in_runs */
    uint64_t span0, span1;       /* chunk element offsets, [span0, span1) */
    uint64_t elems;              /* elements the parts hold */
};

/* Box j's part of chunk K; false when the box misses the chunk. */
static bool box_part(const struct engine *e, int j, const uint64_t *K, struct parts *p)
{
    uint64_t n = 1, last[DRX_MAX_RANK], o0, o1;

    for (int d = 0; d < e->rank; d++) {
        chunk_range(e, d, K[d], e->box[j].lo[d], e->box[j].hi[d], &p->lo[j][d], &p->hi[j][d]);
        if (p->lo[j][d] >= p->hi[j][d])
            return false;
        last[d] = p->hi[j][d] - 1;
        n *= p->hi[j][d] - p->lo[j][d];
    }
    p->elems += n;
    o0 = drx_plan_chunk_offset(e->m->chunk, e->v, K, p->lo[j]);
    o1 = drx_plan_chunk_offset(e->m->chunk, e->v, K, last) + 1;
    if (o0 < p->span0)
        p->span0 = o0;
    if (o1 > p->span1)
        p->span1 = o1;
    return true;
}

static void chunk_parts(const struct engine *e, const uint64_t *K, struct parts *p)
{
    p->span0 = UINT64_MAX;
    p->span1 = 0;
    p->elems = 0;
    for (int j = 0; j < e->nbox; j++)
        p->any[j] = box_part(e, j, K, p);
}

/* Runs fn over the rows of every part. */
static int walk_parts(struct engine *e, const uint64_t *K, struct parts *p, row_fn fn, void *ctx)
{
    int rc = 0;

    for (int j = 0; j < e->nbox && rc == 0; j++)
        if (p->any[j])
            rc = walk_rows(e, &e->box[j], K, p->lo[j], p->hi[j], fn, ctx);
    return rc;
}

/* Runs: a part's chunk elements as contiguous stretches of the .xta.  A
 * part whose runs are DRX_RUN_MIN bytes or longer with DRX_RUN_GAP bytes or
 * more between every two (a slab across a chunk's middle dimension: 16 KiB
 * of every 32 KiB of a 64^3 f64 chunk) is read, and read ahead, run by run:
 * the bytes between stay on the disk.  Any other part is read as one span. */
#define DRX_RUN_MIN ((uint64_t)16 << 10)
#define DRX_RUN_GAP ((uint64_t)16 << 10)

/* Elements per run of the part lo..hi of a chunk, and in *outer the
 * slowest dimension inside a run minus one: dimensions 0..*outer step from
 * run to run (-1: one run).  Runs go on through faster dimensions that the
 * part covers whole, with a step of 1. */
static uint64_t run_shape(const struct engine *e, const uint64_t *lo, const uint64_t *hi,
                          int *outer)
{
    uint64_t len = 1;
    int t = e->rank - 1;

    for (; t >= 0; t--) {
        uint64_t n = hi[t] - lo[t];
        if (n > 1 && e->v->step[t] != 1)
            break;
        len *= n;
        if (n != e->m->chunk[t]) {
            t--;
            break;
        }
    }
    *outer = t;
    return len;
}

/* Steps the odometer w over [lo, hi) in dimensions 0..last, the last
 * fastest: false once it has gone past the end. */
static bool odometer_next(uint64_t *w, const uint64_t *lo, const uint64_t *hi, int last)
{
    for (int d = last; d >= 0; d--) {
        if (++w[d] < hi[d])
            return true;
        w[d] = lo[d];
    }
    return false;
}

/* Calls fn for every run of the part lo..hi of chunk K, in file order. */
static int part_runs(struct engine *e, const uint64_t *K, const uint64_t *lo, const uint64_t *hi,
                     run_fn fn, void *ctx)
{
    uint64_t w[DRX_MAX_RANK];
    int t;
    const uint64_t len = run_shape(e, lo, hi, &t);

    memcpy(w, lo, sizeof(uint64_t) * (size_t)e->rank);
    for (;;) {
        int rc = fn(e, drx_plan_chunk_offset(e->m->chunk, e->v, K, w), len, ctx);
        if (rc)
            return rc;
        if (!odometer_next(w, lo, hi, t))
            return 0;
    }
}

struct run_gap {
    uint64_t end; /* element after the last run seen, or UINT64_MAX */
};

static int run_gap_check(struct engine *e, uint64_t off, uint64_t len, void *ctx)
{
    struct run_gap *g = ctx;

    if (g->end != UINT64_MAX && (off - g->end) * e->v->elem_size < DRX_RUN_GAP)
        return 1;
    g->end = off + len;
    return 0;
}

/* Whether the part lo..hi of chunk K is read run by run. */
bool drx_engine_part_in_runs(struct engine *e, const uint64_t *K, const uint64_t *lo,
                             const uint64_t *hi)
{
    int t;
    struct run_gap g = {UINT64_MAX};

    if (run_shape(e, lo, hi, &t) * e->v->elem_size < DRX_RUN_MIN || t < 0)
        return false;
    return part_runs(e, K, lo, hi, run_gap_check, &g) == 0;
}

/* Whether a part of the chunk is read run by run (then each of the others
 * is read as its own span, not the chunk's: a request's first and last
 * parts are often a piece of one layer, a run too short to qualify); sets
 * p->runs of every part, which the reads then follow. */
static bool parts_in_runs(struct engine *e, const uint64_t *K, struct parts *p)
{
    bool any = false;

    for (int j = 0; j < e->nbox; j++) {
        p->runs[j] = p->any[j] && drx_engine_part_in_runs(e, K, p->lo[j], p->hi[j]);
        any |= p->runs[j];
    }
    return any;
}

/* fn for each run of the part lo..hi of chunk K when it is read run by run
 * (runs), else once for its span. */
int drx_engine_part_io(struct engine *e, const uint64_t *K, const uint64_t *lo, const uint64_t *hi,
                       bool runs, run_fn fn, void *ctx)
{
    uint64_t last[DRX_MAX_RANK], o0;

    if (runs)
        return part_runs(e, K, lo, hi, fn, ctx);
    for (int d = 0; d < e->rank; d++)
        last[d] = hi[d] - 1;
    o0 = drx_plan_chunk_offset(e->m->chunk, e->v, K, lo);
    return fn(e, o0, drx_plan_chunk_offset(e->m->chunk, e->v, K, last) + 1 - o0, ctx);
}

struct run_read {
    uint64_t q, span0;
};

/* One run from the file into scratch, at its place in the span. */
static int run_read(struct engine *e, uint64_t off, uint64_t len, void *ctx)
{
    const struct run_read *r = ctx;
    const size_t es = e->v->elem_size;

    return drx_array_chunk_read(e->a, r->q, off * es, len * es, e->scratch + (off - r->span0) * es);
}

/* A run announced to the kernel from the reading thread. */
static int run_hint(struct engine *e, uint64_t off, uint64_t len, void *ctx)
{
    const struct run_read *r = ctx;
    const size_t es = e->v->elem_size;

    posix_fadvise(drx_array_xta_fd(e->a), (off_t)(r->q * e->m->chunk_bytes + off * es),
                  (off_t)(len * es), POSIX_FADV_WILLNEED);
    return 0;
}

/* Reading run by run: every part's runs (or span) into scratch, then its
 * rows.  A
 * span wholly in the page cache is read with one pread instead.  Else the
 * runs are announced first, all of them, here: a pread that finds a page
 * missing makes the kernel read ahead past its run, into the gap (the
 * read-ahead pass's hints for this request's own chunks may not have run
 * yet). */
static int chunk_in_runs(struct engine *e, const uint64_t *K, struct parts *p, uint64_t q,
                         uint64_t off, uint64_t len)
{
    struct run_read r = {q, p->span0};
    int rc = scratch_ensure(e, (size_t)len);

    if (rc == 0 && drx_io_cached(drx_array_xta_fd(e->a), q * e->m->chunk_bytes + off, len)) {
        rc = drx_array_chunk_read(e->a, q, off, len, e->scratch);
    } else {
        for (int j = 0; j < e->nbox && rc == 0; j++)
            if (p->any[j])
                rc = drx_engine_part_io(e, K, p->lo[j], p->hi[j], p->runs[j], run_hint, &r);
        for (int j = 0; j < e->nbox && rc == 0; j++)
            if (p->any[j])
                rc = drx_engine_part_io(e, K, p->lo[j], p->hi[j], p->runs[j], run_read, &r);
    }
    if (rc == 0) {
        struct in_span sp = {e->scratch, p->span0};
        walk_parts(e, K, p, row_mem, &sp);
    }
    return rc;
}

/* Reading: one span of the chunk, from the cache when there is one, or
 * its runs alone. */
static int chunk_in(struct engine *e, const uint64_t *K, struct parts *p, uint64_t q, uint64_t off,
                    uint64_t len)
{
    struct drx_chunk_ref ref;
    int rc;

    if (parts_in_runs(e, K, p))
        return chunk_in_runs(e, K, p, q, off, len);
    if (!drx_array_chunk_get_loads(e->a, len)) {
        if ((rc = scratch_ensure(e, (size_t)len)))
            return rc;
        drx_engine_miss_hint(e, K, q, off, len);
    }
    rc = drx_array_chunk_get(e->a, q, off, len, e->scratch, &ref);
    if (rc)
        return rc;
    struct in_span sp = {(unsigned char *)ref.data, p->span0};
    walk_parts(e, K, p, row_mem, &sp);
    drx_array_chunk_put(e->a, &ref);
    return 0;
}

/* Writing: under the span lock, merge with the stored bytes (read from the
 * file, not the cache) unless the parts cover the span. */
static int chunk_out(struct engine *e, const uint64_t *K, struct parts *p, uint64_t q, uint64_t off,
                     uint64_t len)
{
    int rc;

    if ((rc = scratch_ensure(e, (size_t)len)))
        return rc;
    if ((rc = drx_array_span_lock(e->a, q, off, len)))
        return rc;
    if (p->elems != p->span1 - p->span0)
        rc = drx_array_chunk_read(e->a, q, off, len, e->scratch);
    if (rc == 0) {
        struct in_span sp = {e->scratch, p->span0};
        walk_parts(e, K, p, row_mem, &sp);
        rc = drx_array_chunk_write(e->a, q, off, len, e->scratch);
    }
    drx_array_span_unlock(e->a, q, off, len);
    return rc;
}

/* Handles one chunk: every box's part in it, with one read (and one write)
 * of the chunk span they need. */
static int do_chunk(struct engine *e, const uint64_t *K)
{
    struct parts p;
    const size_t es = e->v->elem_size;
    uint64_t q, off, len;

    chunk_parts(e, K, &p);
    if (p.span0 >= p.span1)
        return 0;
    q = drx_map_address(&e->m->map, K);
    off = p.span0 * es;
    len = (p.span1 - p.span0) * es;
    /* A giant chunk met sparsely: row by row, never the whole span. */
    if (len > DRX_SPAN_MAX)
        return walk_parts(e, K, &p, row_io, &q);
    return e->writing ? chunk_out(e, K, &p, q, off, len) : chunk_in(e, K, &p, q, off, len);
}

/* Visits the chunks holding elements of the boxes, in chunk-grid
 * row-major order, each once (view_walk.c). */
static int engine_run(struct engine *e)
{
    struct walk w;
    bool more = drx_walk_first(&w, e->m->chunk, e->v, e->box, e->nbox);

    for (; more; more = drx_walk_next(&w, e->m->chunk, e->v, e->box, e->nbox)) {
        int rc = do_chunk(e, w.K);
        if (rc)
            return rc;
    }
    return 0;
}

/* The chunk spans of e's boxes that a write stores through a span (not
 * row by row): fn(off, len) for each run of adjacent ones in the .xta. */
static int for_spans(struct engine *e, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
    const uint64_t es = e->v->elem_size, cb = e->m->chunk_bytes;
    uint64_t off0 = 0, len0 = 0;
    struct walk w;
    int rc = 0;

    for (bool more = drx_walk_first(&w, e->m->chunk, e->v, e->box, e->nbox); more && rc == 0;
         more = drx_walk_next(&w, e->m->chunk, e->v, e->box, e->nbox)) {
        struct parts p;
        chunk_parts(e, w.K, &p);
        if (p.span0 >= p.span1 || (p.span1 - p.span0) * es > DRX_SPAN_MAX)
            continue;
        uint64_t off = drx_map_address(&e->m->map, w.K) * cb + p.span0 * es;
        uint64_t len = (p.span1 - p.span0) * es;
        if (len0 && off == off0 + len0) {
            len0 += len;
            continue;
        }
        if (len0)
            rc = fn(arg, off0, len0);
        off0 = off;
        len0 = len;
    }
    if (rc == 0 && len0)
        rc = fn(arg, off0, len0);
    return rc;
}

struct span_bounds {
    uint64_t lo, hi;
};

static int span_bounds_add(void *arg, uint64_t off, uint64_t len)
{
    struct span_bounds *b = arg;

    if (off < b->lo)
        b->lo = off;
    if (off + len > b->hi)
        b->hi = off + len;
    return 0;
}

static int span_reserve(void *res, uint64_t off, uint64_t len)
{
    return drx_reserve_add(res, off, len);
}

/* Gives the spans a write of view elements [L0, L0+n) of v will store
 * (do_chunk's, adjacent ones as one range) their blocks before its first
 * byte: on a full disk the write then fails with ENOSPC having changed
 * nothing.  Without it a pwrite cut short left part of the write stored
 * under an error that says none was (the engine goes chunk by chunk, not
 * in the caller's byte order, so no short count could say which part).  A
 * giant chunk met sparsely (a span past DRX_SPAN_MAX, written row by row)
 * reserves nothing.  Most writes meet no hole (an array written once has
 * none): one SEEK_HOLE over the bounds of all their spans says so, and
 * only a write that meets one looks span by span. */
static int view_reserve(struct drx_array *a, const struct drx_view *v, uint64_t L0, uint64_t n,
                        struct drx_reserve *res)
{
    struct engine e;
    struct span_bounds b = {UINT64_MAX, 0};

    if (n == 0)
        return 0;
    engine_init(&e, a, v);
    drx_engine_boxes(&e, L0, n);
    for_spans(&e, span_bounds_add, &b);
    if (b.lo >= b.hi)
        return 0;
    off_t h = lseek(drx_array_xta_fd(a), (off_t)b.lo, SEEK_HOLE);
    if (h >= 0 && (uint64_t)h >= b.hi)
        return 0;
    return for_spans(&e, span_reserve, res);
}

/* Copies elements [L0, L0+n) (whole elements, native bytes in buf; only
 * read from when writing). */
static int copy_elems(struct drx_array *a, const struct drx_view *v, uint64_t L0, uint64_t n,
                      unsigned char *buf, bool writing)
{
    struct engine e;
    int rc;

    if (n == 0)
        return 0;
    if (!writing)
        drx_array_cache_sync(a);
    engine_init(&e, a, v);
    e.buf = buf;
    e.writing = writing;
    /* scratch is allocated as spans need it: a read served by the chunk
     * cache needs none (the daemon calls this once per FUSE request) */
    e.scratch = NULL;
    e.scratch_cap = 0;
    if (!writing)
        drx_engine_read_ahead(&e, L0, n);
    drx_engine_boxes(&e, L0, n);
    rc = engine_run(&e);
    free(e.scratch);
    return rc;
}

ssize_t drx_view_read(struct drx_array *a, const struct drx_view *v, uint64_t off, void *buf,
                      size_t len)
{
    const size_t es = v->elem_size;
    uint64_t total = drx_view_bytes(v), e0, e1;
    unsigned char *tmp;
    int rc;

    if (off >= total || len == 0)
        return 0;
    if (len > total - off)
        len = (size_t)(total - off);
    if (len > SSIZE_MAX)
        len = SSIZE_MAX - SSIZE_MAX % es;
    e0 = off / es;
    e1 = (off + len + es - 1) / es;
    if (off % es == 0 && len % es == 0) {
        rc = copy_elems(a, v, e0, e1 - e0, buf, false);
        if (rc)
            return rc;
        drx_type_convert(v->type, v->rep, buf, len / es);
        return (ssize_t)len;
    }
    tmp = malloc((e1 - e0) * es);
    if (!tmp)
        return -ENOMEM;
    rc = copy_elems(a, v, e0, e1 - e0, tmp, false);
    if (rc == 0) {
        drx_type_convert(v->type, v->rep, tmp, e1 - e0);
        memcpy(buf, tmp + off % es, len);
    }
    free(tmp);
    return rc ? rc : (ssize_t)len;
}

/* Stores n bytes of src at byte `at` of view element L, a part of it:
 * read, patch and write back the element under its span lock, so a
 * writer of the element's other bytes (a dd block edge in another
 * process) keeps them. */
static int patch_elem(struct drx_array *a, const struct drx_view *v, uint64_t L, size_t at,
                      const unsigned char *src, size_t n)
{
    const struct drx_array_meta *m = drx_array_meta(a);
    const size_t es = v->elem_size;
    uint64_t idx[DRX_MAX_RANK], K[DRX_MAX_RANK], q, pos, inner;
    unsigned char elem[16];
    struct engine e;
    int rc;

    engine_init(&e, a, v);
    for (int d = 0; d < v->rank; d++)
        idx[d] = v->origin[d] + (L / e.lstride[d]) % v->count[d] * v->step[d];
    drx_array_locate(m, idx, K, &q, &pos);
    inner = pos - q * m->chunk_bytes;
    rc = drx_array_span_lock(a, q, inner, es);
    if (rc)
        return rc;
    rc = drx_array_chunk_read(a, q, inner, es, elem);
    if (rc == 0) {
        drx_type_convert(v->type, v->rep, elem, 1);
        memcpy(elem + at, src, n);
        drx_type_convert(v->type, v->rep, elem, 1);
        rc = drx_array_chunk_write(a, q, inner, es, elem);
    }
    drx_array_span_unlock(a, q, inner, es);
    return rc;
}

ssize_t drx_view_write(struct drx_array *a, const struct drx_view *v, uint64_t off, const void *buf,
                       size_t len)
{
    const size_t es = v->elem_size;
    const unsigned char *src = buf;
    uint64_t total = drx_view_bytes(v), pos;
    size_t left, whole;
    int rc = 0;

    if (len == 0)
        return 0;
    if (off >= total)
        return -EFBIG;
    if (len > total - off)
        len = (size_t)(total - off);
    if (len > SSIZE_MAX)
        len = SSIZE_MAX - SSIZE_MAX % es;
    /* The blocks first, partial elements' included: only a full disk or
     * quota fails the write here (a file system that cannot say where its
     * holes are, or allocate them, is written as before), and then what
     * was reserved on the way is given back under the span locks.  Once
     * writing, the reservation stays whatever happens: a reserved block
     * never written reads as zeros, as the hole did. */
    struct drx_reserve res;
    drx_reserve_init(&res, drx_array_xta_fd(a));
    rc = view_reserve(a, v, off / es, (off + len + es - 1) / es - off / es, &res);
    if (rc == -ENOSPC || rc == -EDQUOT) {
        drx_array_reserve_undo(a, &res);
        drx_reserve_fini(&res);
        return rc;
    }
    drx_reserve_fini(&res);
    rc = 0;
    pos = off;
    left = len;
    if (pos % es) {
        size_t n = es - pos % es < left ? es - pos % es : left;
        rc = patch_elem(a, v, pos / es, pos % es, src, n);
        pos += n;
        src += n;
        left -= n;
    }
    whole = left - left % es;
    if (rc == 0 && whole) {
        /* The engine only reads the caller's elements; a copy is needed
         * only to change their byte order. */
        unsigned char *elems = (unsigned char *)(uintptr_t)src, *tmp = NULL;
        if (drx_type_rep_swaps(v->type, v->rep)) {
            tmp = malloc(whole);
            if (!tmp)
                return -ENOMEM;
            memcpy(tmp, src, whole);
            drx_type_convert(v->type, v->rep, tmp, whole / es);
            elems = tmp;
        }
        rc = copy_elems(a, v, pos / es, whole / es, elems, true);
        free(tmp);
        pos += whole;
        src += whole;
        left -= whole;
    }
    if (rc == 0 && left)
        rc = patch_elem(a, v, pos / es, 0, src, left);
    return rc ? rc : (ssize_t)len;
}
