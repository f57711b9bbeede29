/* The chunk-by-chunk planner of a view: which chunks a view meets, in
 * address order, and which of each chunk's elements it needs.
 *
 * F* lays the .xta out as a sequence of segments (the initial allocation,
 * then one per growth record), each a box of chunk indices numbered with
 * the grown dimension slowest and the others row-major.  The chunks a view
 * meets form a box too (with holes along a dimension whose step exceeds the
 * chunk), so their intersection with each segment has a size that is a
 * product: counts per segment locate the i-th chunk of the view in O(E),
 * and a segment's own order is address order.  A caller (a drx-load rank)
 * can so seek to its share and stream it, holding O(E + k) memory whatever
 * the number of chunks.
 *
 * No MPI, no I/O: pure arithmetic over the metadata.
 */
#ifndef DRX_PLAN_H
#define DRX_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "drx/array.h"
#include "drx/view.h"

/* One chunk of the view. */
struct drx_plan_chunk {
    uint64_t q;                 /* chunk address */
    uint64_t idx[DRX_MAX_RANK]; /* chunk index (F*^-1 of q) */
    /* view indices along each dimension that fall in the chunk: [vlo, vhi) */
    uint64_t vlo[DRX_MAX_RANK], vhi[DRX_MAX_RANK];
    uint64_t nelem; /* view elements in the chunk (> 0) */
    bool covered;   /* the view has every in-bounds element of the chunk */
    bool inside;    /* the chunk lies wholly inside the array's bounds */
};

/* A run of a chunk: `count` elements that are consecutive in the view's
 * linear order (its order= included), starting at view element `view_off`,
 * at chunk element `chunk_off` and then every `stride` chunk elements. */
struct drx_plan_run {
    uint64_t view_off;
    uint64_t chunk_off;
    uint64_t count;
    uint64_t stride;
};

struct drx_plan;

/* A planner of view v over m's chunks as they are now (it copies what it
 * needs; m and v may change or go after the call).  The cursor starts at
 * the view's first chunk.  0, -EINVAL (view and array disagree) or
 * -ENOMEM.  Free with drx_plan_destroy (NULL is a no-op). */
int drx_plan_create(const struct drx_array_meta *m, const struct drx_view *v,
                    struct drx_plan **out);
void drx_plan_destroy(struct drx_plan *p);

/* Number of chunks holding at least one element of the view. */
uint64_t drx_plan_count(const struct drx_plan *p);

/* Moves the cursor so that the next chunk is number i (0-based) of the
 * view's address-ordered list.  i == count is the end.  O(log E + k).
 * 0 or -EINVAL for i > count. */
int drx_plan_seek(struct drx_plan *p, uint64_t i);

/* The chunk under the cursor into *c, and the cursor moves on.  1 when a
 * chunk was given, 0 at the end.  Amortized O(k). */
int drx_plan_next(struct drx_plan *p, struct drx_plan_chunk *c);

/* Calls fn for each run of chunk c (from drx_plan_next of this planner), in
 * ascending view_off; the runs cover exactly the view's elements in the
 * chunk, each once.  Runs go along the view's fastest dimension that has
 * more than one element, so that a slice like dim2=0:1 still gets long
 * runs.  Stops at and returns the first non-zero return of fn; else 0. */
int drx_plan_runs(const struct drx_plan *p, const struct drx_plan_chunk *c,
                  int (*fn)(const struct drx_plan_run *r, void *arg), void *arg);

/* Helpers shared with the copy engine of view.c, which walks boxes of a
 * byte range rather than whole chunks (inline: they sit under every row
 * the engine copies).  chunk is the array's chunk shape (meta->chunk). */

/* The first view index along dimension d whose element lies at or after
 * chunk coordinate K, or the view's count there when none does. */
static inline uint64_t drx_plan_first_index(const uint64_t *chunk, const struct drx_view *v, int d,
                                            uint64_t K)
{
    uint64_t a = K * chunk[d], o = v->origin[d], s = v->step[d], w = 0;

    if (a > o)
        w = (a - o) / s + ((a - o) % s != 0); /* no a - o + s - 1: it could wrap */
    return w < v->count[d] ? w : v->count[d];
}

/* View indices along dimension d whose elements lie in chunk coordinate K:
 * [*wlo, *whi), empty (wlo == whi) when there are none. */
static inline void drx_plan_view_range(const uint64_t *chunk, const struct drx_view *v, int d,
                                       uint64_t K, uint64_t *wlo, uint64_t *whi)
{
    *wlo = drx_plan_first_index(chunk, v, d, K);
    *whi = drx_plan_first_index(chunk, v, d, K + 1);
}

/* Chunk elements between consecutive view elements along dimension d. */
static inline uint64_t drx_plan_chunk_stride(const uint64_t *chunk, const struct drx_view *v, int d)
{
    uint64_t s = v->step[d];
    for (int j = d + 1; j < v->rank; j++)
        s *= chunk[j];
    return s;
}

/* Element offset, inside chunk K, of view element w (which lies in it):
 * row-major, by Horner's rule. */
static inline uint64_t drx_plan_chunk_offset(const uint64_t *chunk, const struct drx_view *v,
                                             const uint64_t *K, const uint64_t *w)
{
    uint64_t off = 0;
    for (int d = 0; d < v->rank; d++)
        off = off * chunk[d] + (v->origin[d] + w[d] * v->step[d] - K[d] * chunk[d]);
    return off;
}

#endif
