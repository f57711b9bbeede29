/* The chunk cache of an array handle (private to libcore).
 *
 * Whole chunks, keyed by chunk address, bounded in bytes, LRU among entries
 * nobody holds.  Entries are pinned while a caller copies from them, so the
 * cache may briefly exceed its budget when every entry is pinned.
 */
#ifndef DRX_CACHE_I_H
#define DRX_CACHE_I_H

#include <stddef.h>
#include <stdint.h>

struct drx_cache;

struct drx_cache *drx_cache_create(size_t bytes, size_t chunk_bytes);
void drx_cache_destroy(struct drx_cache *c); /* NULL is a no-op */

/* Returns the pinned entry's data for chunk q, loading it with
 * load(q, buf, arg) on a miss.  NULL with *rc set on failure; with load
 * NULL, a miss returns NULL with *rc 0 (a lookup only). */
void *drx_cache_get(struct drx_cache *c, uint64_t q, int (*load)(uint64_t q, void *buf, void *arg),
                    void *arg, void **entry, int *rc);
void drx_cache_put(struct drx_cache *c, void *entry);

/* After a write to the file: copies the bytes into the cached chunk if it is
 * cached, and keeps loads of that chunk in flight from publishing what they
 * read (it may predate the write). */
void drx_cache_update(struct drx_cache *c, uint64_t q, uint64_t off, const void *buf, size_t len);

/* Forgets every entry nobody holds and marks held ones stale; loads in
 * flight do not publish what they read. */
void drx_cache_clear(struct drx_cache *c);

#endif
