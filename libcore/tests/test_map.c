/* F* and F*^-1: the paper's test vector, then a property test against a
 * brute-force allocator that numbers chunks exactly as SPEC section 3 says. */
#include <stdlib.h>
#include <string.h>

#include "drx/map.h"
#include "tap.h"

/* Brute force: a dense table over the current chunk grid, re-laid out on
 * every growth by appending the new segment in its defined order. */
struct brute {
    int rank;
    uint64_t bound[DRX_MAX_RANK], n;
    uint64_t *addr; /* row-major over a fixed maximum grid */
    uint64_t max[DRX_MAX_RANK];
};

static uint64_t brute_slot(const struct brute *b, const uint64_t *idx)
{
    uint64_t s = 0;
    for (int i = 0; i < b->rank; i++)
        s = s * b->max[i] + idx[i];
    return s;
}

/* Numbers the chunks of the box lo..hi with dimension `slow` varying
 * slowest and the rest row-major, starting at b->n. */
static void brute_number(struct brute *b, const uint64_t *lo, const uint64_t *hi, int slow)
{
    uint64_t idx[DRX_MAX_RANK];
    int order[DRX_MAX_RANK], k = 0;

    order[k++] = slow;
    for (int i = 0; i < b->rank; i++)
        if (i != slow)
            order[k++] = i;
    memcpy(idx, lo, sizeof idx);
    for (;;) {
        b->addr[brute_slot(b, idx)] = b->n++;
        int p = b->rank - 1;
        for (; p >= 0; p--) {
            int d = order[p];
            if (++idx[d] < hi[d])
                break;
            idx[d] = lo[d];
        }
        if (p < 0)
            return;
    }
}

static void brute_grow(struct brute *b, int dim, uint64_t to)
{
    uint64_t lo[DRX_MAX_RANK] = {0}, hi[DRX_MAX_RANK];
    memcpy(hi, b->bound, sizeof hi);
    lo[dim] = b->bound[dim];
    hi[dim] = to;
    brute_number(b, lo, hi, dim);
    b->bound[dim] = to;
}

static int check_all(const struct drx_map *m, const struct brute *b)
{
    uint64_t idx[DRX_MAX_RANK] = {0}, back[DRX_MAX_RANK];
    int ok = 1;
    if (m->nchunks != b->n)
        return 0;
    for (;;) {
        uint64_t q = drx_map_address(m, idx);
        if (q != b->addr[brute_slot(b, idx)])
            ok = 0;
        drx_map_index(m, q, back);
        if (memcmp(back, idx, sizeof(uint64_t) * (size_t)m->rank))
            ok = 0;
        int d = m->rank - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < m->bound[d])
                break;
            idx[d] = 0;
        }
        if (d < 0 || !ok)
            return ok;
    }
}

static void paper_vector(void)
{
    struct drx_map m;
    uint64_t b[3] = {4, 3, 1};
    uint64_t i1[3] = {2, 1, 0}, i2[3] = {3, 1, 2}, i3[3] = {4, 2, 2}, back[3];

    tap_ok(drx_map_init(&m, 3, b) == 0, "paper: init 4x3x1");
    tap_ok(drx_map_grow(&m, 2, 3) == 0, "paper: grow dim 2 by 2");
    tap_ok(drx_map_grow(&m, 1, 4) == 0, "paper: grow dim 1 by 1");
    tap_ok(drx_map_grow(&m, 0, 6) == 0, "paper: grow dim 0 by 2");
    tap_ok(drx_map_grow(&m, 2, 4) == 0, "paper: grow dim 2 by 1");
    TAP_CHECK_EQ_U64(drx_map_address(&m, i1), 7, "paper: F*(2,1,0) = 7");
    TAP_CHECK_EQ_U64(drx_map_address(&m, i2), 34, "paper: F*(3,1,2) = 34");
    TAP_CHECK_EQ_U64(drx_map_address(&m, i3), 56, "paper: F*(4,2,2) = 56");
    TAP_CHECK_EQ_U64(m.nchunks, 96, "paper: 96 chunks");
    drx_map_index(&m, 56, back);
    tap_ok(back[0] == 4 && back[1] == 2 && back[2] == 2, "paper: F*^-1(56) = (4,2,2)");
    /* Fig. 3b: E0 = 2, E1 = 2, E2 = 3 */
    tap_ok(m.vec[0].n == 2 && m.vec[1].n == 2 && m.vec[2].n == 3,
           "paper: axial vector lengths 2, 2, 3 (got %zu %zu %zu)", m.vec[0].n, m.vec[1].n,
           m.vec[2].n);
    tap_ok(m.vec[1].rec[0].addr == -1 && m.vec[0].rec[1].addr == 48 && m.vec[2].rec[1].addr == 12,
           "paper: records M = -1, 48, 12");
    drx_map_fini(&m);
}

static void consecutive_share_record(void)
{
    struct drx_map m;
    uint64_t b[2] = {2, 2};
    drx_map_init(&m, 2, b);
    drx_map_grow(&m, 1, 3);
    drx_map_grow(&m, 1, 5);
    drx_map_grow(&m, 1, 6);
    tap_ok(m.vec[1].n == 2, "three consecutive growths of dim 1 share one record");
    drx_map_grow(&m, 0, 3);
    drx_map_grow(&m, 1, 7);
    tap_ok(m.vec[1].n == 3, "an interrupted growth opens a new record");
    drx_map_fini(&m);
}

static void property(unsigned seed, int rounds)
{
    int failures = 0;
    srand(seed);
    for (int r = 0; r < rounds; r++) {
        struct brute br;
        struct drx_map m;
        uint64_t total = 1;
        int rank = 1 + rand() % 5, growths = rand() % 12;

        memset(&br, 0, sizeof br);
        br.rank = rank;
        for (int i = 0; i < rank; i++) {
            br.bound[i] = 1 + (uint64_t)(rand() % 3);
            br.max[i] = br.bound[i] + (uint64_t)growths * 2 + 1;
            total *= br.max[i];
        }
        if (total > 4000000) {
            r--;
            continue;
        }
        br.addr = calloc(total, sizeof *br.addr);
        {
            uint64_t lo[DRX_MAX_RANK] = {0};
            brute_number(&br, lo, br.bound, 0);
        }
        drx_map_init(&m, rank, br.bound);
        for (int g = 0; g < growths; g++) {
            int dim = rand() % rank;
            uint64_t by = 1 + (uint64_t)(rand() % 2);
            brute_grow(&br, dim, br.bound[dim] + by);
            if (drx_map_grow(&m, dim, br.bound[dim]))
                failures++;
        }
        if (!check_all(&m, &br))
            failures++;
        drx_map_fini(&m);
        free(br.addr);
    }
    tap_ok(failures == 0, "property: %d random growth sequences, F* = brute force and "
                          "F*^-1(F*(I)) = I for every chunk (%d failures)",
           rounds, failures);
}

static void overflow(void)
{
    struct drx_map m;
    uint64_t b[2] = {(uint64_t)1 << 40, (uint64_t)1 << 20};
    tap_ok(drx_map_init(&m, 2, b) == 0, "2^60 chunks fit");
    tap_ok(drx_map_grow(&m, 1, (uint64_t)1 << 24) < 0, "growth past 2^63 chunks is refused");
    drx_map_fini(&m);
}

int main(void)
{
    paper_vector();
    consecutive_share_record();
    property(1, 500);
    property(2, 500);
    overflow();
    return tap_done();
}
