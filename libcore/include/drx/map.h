/* The axial-vector mapping F* of Otoo & Rotem for extendible arrays.
 *
 * Pure in-memory arithmetic over chunk indices: no files.  An array of rank
 * k in units of chunks has bounds B[0..k-1].  The first allocation numbers
 * B[0] x ... x B[k-1] chunks in row-major order; each growth of dimension l
 * appends one segment in which l varies slowest.  Each dimension keeps an
 * axial vector of records; F* finds, by binary search in each vector, the
 * covering record with the largest start address, in O(k + log E).
 */
#ifndef DRX_MAP_H
#define DRX_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "drx/types.h"

/* One expansion record: the segment of dimension `dim` whose chunk indices
 * start at `start` and whose first chunk has address `addr`.  addr is -1 for
 * the placeholder that opens every vector but dimension 0's (the paper's
 * Fig. 3b).  coef[j] multiplies I[j] (I[dim] - start for j == dim). */
struct drx_axial_rec {
    uint64_t start;
    int64_t addr;
    uint64_t coef[DRX_MAX_RANK];
    /* addr - start * coef[dim] (mod 2^64), so that F* is one dot product:
     * q = base + sum_j I[j] * coef[j].  Derived; not stored in the .xmd. */
    uint64_t base;
};

struct drx_axial_vec {
    struct drx_axial_rec *rec;
    /* rec[i].start and rec[i].addr again, packed, for the binary searches
     * (a record is 144 bytes; the search touches only these). */
    uint64_t *start;
    int64_t *addr;
    size_t n, cap;
};

struct drx_map {
    int rank;
    uint64_t bound[DRX_MAX_RANK]; /* chunk counts B[i] */
    uint64_t nchunks;             /* product of the allocated segments */
    int last_dim;                 /* dimension of the newest segment */
    struct drx_axial_vec vec[DRX_MAX_RANK];
};

/* Initial allocation of bound[0..rank-1] chunks (each >= 1).  0 or -errno
 * (-EOVERFLOW when the chunk count does not fit in 63 bits). */
int drx_map_init(struct drx_map *m, int rank, const uint64_t *bound);
void drx_map_fini(struct drx_map *m);

/* Grows dimension dim to new_bound chunks (> bound[dim]).  Appends one
 * segment; consecutive growths of the same dimension extend one record. */
int drx_map_grow(struct drx_map *m, int dim, uint64_t new_bound);

/* Makes room for `records` more records in every vector, so that a replay
 * of a long history (an .xmd's growth records) does not reallocate as it
 * goes; memory a vector does not use is never touched.  0 or -ENOMEM. */
int drx_map_reserve(struct drx_map *m, size_t records);

/* F*: chunk index -> chunk address.  idx[i] < bound[i] is the caller's
 * promise (checked only by assert). */
uint64_t drx_map_address(const struct drx_map *m, const uint64_t *idx);

/* F*^-1: chunk address (< nchunks) -> chunk index. */
void drx_map_index(const struct drx_map *m, uint64_t q, uint64_t *idx);

/* Total records over all vectors, placeholders included. */
size_t drx_map_records(const struct drx_map *m);

#endif
