/* The chunks a view's copy engine visits (view.c): those holding elements
 * of a few boxes of the view, in chunk-grid row-major order, each once. */
#ifndef DRX_VIEW_WALK_I_H
#define DRX_VIEW_WALK_I_H

#include <stdbool.h>
#include <stdint.h>

#include "drx/view.h"

/* A box of view coordinates: [lo[d], hi[d]) along each dimension d. */
struct box {
    uint64_t lo[DRX_MAX_RANK], hi[DRX_MAX_RANK]; /* view coordinates, by dimension */
    uint64_t first;                              /* linear index of lo, minus L0 */
};

/* The walk's state: box j is in mask[d] when it holds elements in chunk
 * coordinates K[0..d-1] (nbox <= 32). */
struct walk {
    uint64_t K[DRX_MAX_RANK];
    uint32_t mask[DRX_MAX_RANK + 1];
};

/* Puts w on the first chunk (chunk shape `chunk`) holding an element of
 * one of the nbox boxes of view v; false when none does. */
bool drx_walk_first(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                    const struct box *box, int nbox);
/* Moves w to the next such chunk; false after the last.  A step longer
 * than a chunk, or a gap between boxes, is skipped, not visited: a walk
 * costs what the boxes hold, not their bounding box. */
bool drx_walk_next(struct walk *w, const uint64_t *chunk, const struct drx_view *v,
                   const struct box *box, int nbox);

#endif
