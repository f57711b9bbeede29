/* libcore-private parts of array handles, for the view engine. */
#ifndef DRX_ARRAY_I_H
#define DRX_ARRAY_I_H

#include <stdint.h>

#include "drx/array.h"

/* A write that merges with stored bytes (read, patch, write back) must not
 * interleave with another write to the same chunk, or one of them writes
 * back the other's old bytes.  These lock chunk q's stripe of a small lock
 * table (threads of one process; drx and drxfs in different processes are
 * not serialised). */
void drx_array_chunk_lock(struct drx_array *a, uint64_t q);
void drx_array_chunk_unlock(struct drx_array *a, uint64_t q);

#endif
