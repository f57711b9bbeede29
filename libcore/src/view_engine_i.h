/* The copy engine of views (view.c) and its read-ahead pass
 * (view_ahead.c): the state they share. */
#ifndef DRX_VIEW_ENGINE_I_H
#define DRX_VIEW_ENGINE_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array_i.h"
#include "drx/io.h"
#include "view_walk_i.h"

/* Ranges the read-ahead pass hands to the pool at a time. */
#define DRX_READ_AHEAD_BATCH 64

struct engine {
    struct drx_array *a;
    const struct drx_array_meta *m;
    const struct drx_view *v;
    int rank;
    int perm[DRX_MAX_RANK];         /* dimensions, slowest to fastest in the view order */
    uint64_t lstride[DRX_MAX_RANK]; /* linear stride of each dimension (by dimension) */
    struct box box[2 * DRX_MAX_RANK];
    int nbox;
    unsigned char *buf; /* the caller's elements, view order, native */
    bool writing;
    unsigned char *scratch; /* chunk bytes, grown as needed up to DRX_SPAN_MAX */
    size_t scratch_cap;
    /* Read-ahead pass: the view's span of each chunk whose first view
     * element lies in [ra_lo, ra_hi) is announced to the kernel
     * (POSIX_FADV_WILLNEED, by drx_io_readahead's pool), up to
     * `advise_left` bytes; ranges gathers them, adjacent ones merged
     * unless they go in pieces. */
    bool pieces; /* hand spans over in pieces (advise_flush): a read from the start */
    uint64_t advise_left, ra_lo, ra_hi;
    struct drx_io_range ra[DRX_READ_AHEAD_BATCH];
    /* where in the view each range's first and last bytes are needed
     * (view elements, estimated: need_at) */
    double need[DRX_READ_AHEAD_BATCH][2];
    int nra;
    /* the chunk being announced: its first and last view elements, and
     * the chunk elements [ck_o0, ck_o1) of the view's span of it */
    double ck_first, ck_last;
    uint64_t ck_o0, ck_o1;
};

/* Called with a run's chunk element offset and length; non-zero stops. */
typedef int (*run_fn)(struct engine *e, uint64_t off, uint64_t len, void *ctx);

/* view.c: splits the view elements [L0, L0+n) into e's boxes. */
void drx_engine_boxes(struct engine *e, uint64_t L0, uint64_t n);
/* view.c: whether the part lo..hi of chunk K is read run by run. */
bool drx_engine_part_in_runs(struct engine *e, const uint64_t *K, const uint64_t *lo,
                             const uint64_t *hi);
/* view.c: fn for each run of the part lo..hi of chunk K when it is read
 * run by run (runs), else once for its span. */
int drx_engine_part_io(struct engine *e, const uint64_t *K, const uint64_t *lo, const uint64_t *hi,
                       bool runs, run_fn fn, void *ctx);

/* view_ahead.c: before a read of elements [L0, L0+n), announces the
 * chunks the view needs next to the kernel. */
void drx_engine_read_ahead(struct engine *e, uint64_t L0, uint64_t n);
/* view_ahead.c: before bytes [off, off+len) of chunk q (index K) are read
 * from the file, announces them when the kernel's own read-ahead of a
 * miss would read past them into bytes the view does not need. */
void drx_engine_miss_hint(struct engine *e, const uint64_t *K, uint64_t q, uint64_t off,
                          uint64_t len);

#endif
