/* The chunks holding elements of a few boxes of a view (view_walk_i.h).
 *
 * The copy engine once visited every chunk of the boxes' bounding box.  A
 * read of 32 bytes across two rows of an 8 x 2^56 array (the end of one,
 * the start of the next) or of a view with a step of 2^56 elements met two
 * chunks and visited 2^36: a request any reader could send kept a daemon
 * thread busy for hours.  Here each dimension steps only to chunk
 * coordinates that some box still holds, given the slower coordinates. */
#include "view_walk_i.h"

#include "drx/plan.h"

/* Whether box b holds view indices along d in chunk coordinate K. */
static bool box_meets(const uint64_t *chunk, const struct drx_view *v, const struct box *b, int d,
                      uint64_t K)
{
    uint64_t wlo, whi;

    drx_plan_view_range(chunk, v, d, K, &wlo, &whi);
    return (wlo > b->lo[d] ? wlo : b->lo[d]) < (whi < b->hi[d] ? whi : b->hi[d]);
}

/* The first chunk coordinate at or after `from` along d holding a view
 * index of box b, or UINT64_MAX. */
static uint64_t box_next(const uint64_t *chunk, const struct drx_view *v, const struct box *b,
                         int d, uint64_t from)
{
    uint64_t w = drx_plan_first_index(chunk, v, d, from);

    if (w < b->lo[d])
        w = b->lo[d];
    return w < b->hi[d] ? (v->origin[d] + w * v->step[d]) / chunk[d] : UINT64_MAX;
}

/* The least chunk coordinate at or after `from` along d that a box of
 * w->mask[d] holds; sets mask[d + 1] to the boxes holding it.  False when
 * there is none. */
static bool step_dim(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                     const struct box *box, int nbox, int d, uint64_t from)
{
    uint64_t best = UINT64_MAX;

    for (int j = 0; j < nbox; j++)
        if (w->mask[d] & (UINT32_C(1) << j)) {
            uint64_t c = box_next(chunk, v, &box[j], d, from);
            best = c < best ? c : best;
        }
    if (best == UINT64_MAX)
        return false;
    w->K[d] = best;
    w->mask[d + 1] = 0;
    for (int j = 0; j < nbox; j++)
        if ((w->mask[d] & (UINT32_C(1) << j)) && box_meets(chunk, v, &box[j], d, best))
            w->mask[d + 1] |= UINT32_C(1) << j;
    return true;
}

/* Dimensions d0 and faster at their first coordinates under K[0..d0-1]. */
static bool fill_from(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                      const struct box *box, int nbox, int d0)
{
    for (int d = d0; d < v->rank; d++)
        if (!step_dim(w, chunk, v, box, nbox, d, 0))
            return false;
    return true;
}

bool drx_walk_first(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                    const struct box *box, int nbox)
{
    w->mask[0] = 0;
    for (int j = 0; j < nbox && j < 32; j++) {
        bool empty = false;
        for (int d = 0; d < v->rank; d++)
            empty |= box[j].lo[d] >= box[j].hi[d];
        if (!empty)
            w->mask[0] |= UINT32_C(1) << j;
    }
    return w->mask[0] && fill_from(w, chunk, v, box, nbox, 0);
}

bool drx_walk_next(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                   const struct box *box, int nbox)
{
    for (int d = v->rank - 1; d >= 0; d--)
        if (step_dim(w, chunk, v, box, nbox, d, w->K[d] + 1))
            return fill_from(w, chunk, v, box, nbox, d + 1);
    return false;
}
