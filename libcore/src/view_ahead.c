/* The copy engine's read-ahead (view.c calls it): before a read, the
 * chunks the view needs next are announced to the kernel, through
 * libcore's pool (drx_io_readahead); and before a chunk span is read
 * from the file, bytes the kernel's own read-ahead would overshoot are
 * announced exactly. */
#include "view_engine_i.h"

#include "drx/plan.h"

#include <fcntl.h>

/* Read-ahead of a read: view bytes beyond it whose chunks are announced,
 * and the most chunk bytes announced per read. */
#define DRX_READ_AHEAD_VIEW ((uint64_t)16 << 20)
#define DRX_READ_AHEAD_MAX ((uint64_t)64 << 20)
/* ... and the size of the pieces they are handed to the pool in, at most
 * DRX_READ_AHEAD_PIECES at a time. */
#define DRX_READ_AHEAD_PIECE ((uint64_t)256 << 10)
#define DRX_READ_AHEAD_PIECES 256

/* Whether the view holds the first (or, with last, the last) element of
 * chunk K. */
static bool corner_in_view(const struct engine *e, const uint64_t *K, bool last)
{
    for (int d = 0; d < e->rank; d++) {
        uint64_t a = K[d] * e->m->chunk[d] + (last ? e->m->chunk[d] - 1 : 0);
        uint64_t o = e->v->origin[d], s = e->v->step[d];
        if (a < o || (a - o) % s || (a - o) / s >= e->v->count[d])
            return false;
    }
    return true;
}

/* Before bytes [off, off+len) of chunk q are read from the file: when
 * their first or last page is not in the page cache (the read-ahead pass
 * has not announced them yet, or its pool has not run: the first
 * request's own spans, a request the kernel sent ahead of the pool's
 * hints, or a piece that one pool thread hints after another thread
 * hinted the next), they are announced here, exactly.  A pread that misses makes the kernel read
 * ahead past what it asked, as far as the disk's read-ahead window (8 MiB
 * on the development VM), into the chunks next in the file, which a slab
 * does not need (the column slab read 54-70 MiB for its 50).  Left to the
 * kernel only when the view needs the chunk's end and the start of the
 * chunk after it: a whole array streams on (an exact hint there cost a
 * cold whole read 12 %, doc/benchmarks.md).  Only the two ends are
 * looked at: a cachestat(2) of a whole 416 KiB span cost a hot column
 * slab 12 % more of the daemon's CPU, of its last page 3 %. */
void drx_engine_miss_hint(struct engine *e, const uint64_t *K, uint64_t q, uint64_t off,
                          uint64_t len)
{
    int fd = drx_array_xta_fd(e->a);
    uint64_t at = q * e->m->chunk_bytes + off, next[DRX_MAX_RANK];

    if (q + 1 < e->m->map.nchunks && corner_in_view(e, K, true)) {
        drx_map_index(&e->m->map, q + 1, next);
        if (corner_in_view(e, next, false))
            return;
    }
    /* before Linux 6.5 the kernel cannot tell: its read-ahead, as before */
    if ((!drx_io_cached(fd, at, 1) || !drx_io_cached(fd, at + len - 1, 1)) &&
        drx_io_cache_visible())
        posix_fadvise(fd, (off_t)at, (off_t)len, POSIX_FADV_WILLNEED);
}

/* Hands the gathered spans to the pool; for a read from the view's start,
 * in pieces, in the order the view needs them: of all pieces not yet
 * handed over, the one needed first.  A view whose first rows lie in many
 * chunks (a row slab's every plane meets all of them) then finds its
 * beginning read first (a piece of every chunk, then the next piece of
 * every chunk) and is copied while the disk reads the rest, instead of
 * waiting for every chunk's whole span; one that goes through its chunks
 * a few at a time (a column slab meets 5 chunks per 5 MiB of its 25)
 * finds those chunks' pieces first, not those of chunks it needs only
 * later.  Pieces handed over after the reader asked for their bytes would
 * cost more than time: the reader's pread misses, and the kernel's
 * read-ahead of the miss reads on past the span, into chunks the view
 * does not need (the column slab read 54-70 MiB for its 50). */
static void advise_flush(struct engine *e)
{
    struct drx_io_range piece[DRX_READ_AHEAD_PIECES];
    uint64_t at[DRX_READ_AHEAD_BATCH] = {0}; /* bytes of each range handed over */
    int fd = drx_array_xta_fd(e->a), n = 0;

    /* Later reads announce only the chunks entering the window, one at a
     * time as the view goes: whole spans, in fewer calls (pieces there cost
     * a hot whole-array read 8 %). */
    if (!e->pieces) {
        drx_io_readahead(fd, e->ra, e->nra);
        e->nra = 0;
        return;
    }

    for (;;) {
        int b = -1;
        double bneed = 0;
        for (int i = 0; i < e->nra; i++) {
            const struct drx_io_range *r = &e->ra[i];
            double need = e->need[i][0] + (e->need[i][1] - e->need[i][0]) * (double)at[i] /
                                              (double)(r->len ? r->len : 1);
            if (at[i] < r->len && (b < 0 || need < bneed)) {
                b = i;
                bneed = need;
            }
        }
        if (b < 0)
            break;
        uint64_t len = e->ra[b].len - at[b];
        if (len > DRX_READ_AHEAD_PIECE)
            len = DRX_READ_AHEAD_PIECE;
        piece[n++] = (struct drx_io_range){e->ra[b].off + at[b], len};
        at[b] += len;
        if (n == DRX_READ_AHEAD_PIECES) {
            drx_io_readahead_ordered(fd, piece, n);
            n = 0;
        }
    }
    drx_io_readahead_ordered(fd, piece, n);
    e->nra = 0;
}

/* Where in the view chunk element off of the chunk being announced is
 * needed, estimated as if the view went through the chunk's span at an
 * even pace (true of a C-order view of C-order chunks; the order of the
 * pieces handed over is all it decides). */
static double need_at(const struct engine *e, uint64_t off)
{
    if (e->ck_o1 <= e->ck_o0)
        return e->ck_first;
    return e->ck_first +
           (e->ck_last - e->ck_first) * (double)(off - e->ck_o0) / (double)(e->ck_o1 - e->ck_o0);
}

/* Read-ahead pass: gathers a chunk span for the pool, which asks the
 * kernel to start reading it, so that the disk has the next chunks in
 * flight while the current ones are copied.  1 stops the pass once its
 * budget is spent. */
static int advise_span(struct engine *e, uint64_t q, uint64_t off, uint64_t len)
{
    const size_t es = e->v->elem_size;

    if (len > e->advise_left)
        len = e->advise_left;
    if (q < e->m->map.nchunks) {
        uint64_t at = q * e->m->chunk_bytes + off;
        struct drx_io_range *last = e->nra ? &e->ra[e->nra - 1] : NULL;
        /* pieces are handed over in need order: a range joining two
         * chunks' spans would blur it */
        if (!last || last->off + last->len != at || e->pieces) {
            if (e->nra == DRX_READ_AHEAD_BATCH)
                advise_flush(e);
            last = &e->ra[e->nra++];
            *last = (struct drx_io_range){at, 0};
            e->need[e->nra - 1][0] = need_at(e, off / es);
        }
        last->len += len;
        e->need[e->nra - 1][1] = need_at(e, (off + len) / es);
    }
    e->advise_left -= len;
    return e->advise_left == 0;
}

/* Read-ahead pass, one run of a chunk read run by run. */
static int advise_run(struct engine *e, uint64_t off, uint64_t len, void *ctx)
{
    const size_t es = e->v->elem_size;

    return advise_span(e, *(const uint64_t *)ctx, off * es, len * es);
}

/* Read-ahead pass, one chunk: the span of the chunk that the whole view
 * needs (what all reads of the view together take from it), announced by
 * the one read whose window holds the chunk's first view element.  So a
 * reader going through the view in order announces each chunk once, and
 * whole: a row slab, whose every request meets all its chunks, reads
 * them as a few large spans, not one thin layer per request.  A chunk
 * read run by run (drx_engine_part_in_runs) is announced run by run. */
static int advise_chunk(struct engine *e, const uint64_t *K)
{
    uint64_t lo[DRX_MAX_RANK], hi[DRX_MAX_RANK], last[DRX_MAX_RANK], first = 0, end = 0, o0, o1, q;

    for (int d = 0; d < e->rank; d++) {
        drx_plan_view_range(e->m->chunk, e->v, d, K[d], &lo[d], &hi[d]);
        if (lo[d] >= hi[d])
            return 0;
        last[d] = hi[d] - 1;
        first += lo[d] * e->lstride[d];
        end += last[d] * e->lstride[d];
    }
    if (first < e->ra_lo || first >= e->ra_hi)
        return 0;
    q = drx_map_address(&e->m->map, K);
    o0 = drx_plan_chunk_offset(e->m->chunk, e->v, K, lo);
    o1 = drx_plan_chunk_offset(e->m->chunk, e->v, K, last) + 1;
    e->ck_first = (double)first;
    e->ck_last = (double)end;
    e->ck_o0 = o0;
    e->ck_o1 = o1;
    return drx_engine_part_io(e, K, lo, hi, drx_engine_part_in_runs(e, K, lo, hi), advise_run, &q);
}

/* Before reading elements [L0, L0+n): the chunks whose first view element
 * lies in the view's next DRX_READ_AHEAD_VIEW bytes are announced to the
 * kernel, each with the span the whole view needs of it (advise_chunk; at
 * most DRX_READ_AHEAD_MAX bytes of chunks), so that a cold read keeps
 * several requests in flight instead of one chunk at a time.  A read from
 * the start announces its own chunks too; any other announces only where
 * the window's end moved to ([L0+ahead, L0+n+ahead)), which a sequential
 * reader's previous read did not (reads come in order, or split in parts
 * that together cover the same window).  Only chunks that meet that band
 * are visited, and spans never reach past what the view needs.  The pages
 * are the kernel's: nothing is held here, a write is never shadowed, and
 * memory pressure evicts them as any. */
void drx_engine_read_ahead(struct engine *e, uint64_t L0, uint64_t n)
{
    uint64_t total = e->v->nelem, ahead = DRX_READ_AHEAD_VIEW / e->v->elem_size;
    uint64_t lo = L0 == 0 ? 0 : L0 + ahead, hi = L0 + n + ahead;
    struct walk w;
    bool more;

    if (hi > total)
        hi = total;
    if (lo >= hi)
        return;
    e->pieces = L0 == 0;
    e->advise_left = DRX_READ_AHEAD_MAX;
    e->ra_lo = lo;
    e->ra_hi = hi;
    e->nra = 0;
    drx_engine_boxes(e, lo, hi - lo);
    for (more = drx_walk_first(&w, e->m->chunk, e->v, e->box, e->nbox); more;
         more = drx_walk_next(&w, e->m->chunk, e->v, e->box, e->nbox))
        if (advise_chunk(e, w.K))
            break; /* the budget is spent */
    advise_flush(e);
}
