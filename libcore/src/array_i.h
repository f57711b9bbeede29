/* libcore-private parts of array handles, for the view engine. */
#ifndef DRX_ARRAY_I_H
#define DRX_ARRAY_I_H

#include <stdint.h>

#include "drx/array.h"

/* Most bytes of one chunk a view copy reads or writes in one piece: a
 * request never holds more than this beside the caller's buffer, whatever
 * the chunk size, and larger chunks are never cached whole. */
#define DRX_SPAN_MAX ((uint64_t)8 << 20)

/* Every write of chunk bytes happens under a lock on exactly the bytes it
 * writes, taken by every writer (threads of this process through a lock
 * table, other processes through an open file description lock on the
 * .xta): a write that merges with stored bytes (read, patch, write back)
 * then never writes back another writer's old bytes, and the bytes it
 * merges with are read from the file under the lock, never from a cache.
 * 0 or -errno (the lock could not be had; nothing is held then). */
int drx_array_span_lock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len);
void drx_array_span_unlock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len);

/* Bytes [off, off+len) of chunk q from the file itself, never the cache. */
int drx_array_chunk_read(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *buf);

/* Empties the chunk cache when another process (or this one) wrote the
 * .xta since the last call: every read calls it first. */
void drx_array_cache_sync(struct drx_array *a);

#endif
