#include "cache_i.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    uint64_t q;
    unsigned refs;
    bool stale;                /* dropped from the table while held */
    struct entry *hnext;       /* hash chain */
    struct entry *prev, *next; /* LRU list, most recent at head */
    unsigned char *data;       /* the chunk, allocated with the entry */
};

/* Write generations, by chunk address modulo GENS: a load that overlapped a
 * write to its chunk must not publish what it read (it may predate the
 * write, and nothing would ever correct it). */
#define GENS 256

struct drx_cache {
    pthread_mutex_t lock;
    uint64_t gen[GENS];
    uint64_t epoch; /* clears so far: a load that overlapped one is stale */
    size_t budget, chunk_bytes, used;
    size_t nbuckets;
    struct entry **bucket;
    struct entry lru; /* sentinel */
};

static size_t hash(const struct drx_cache *c, uint64_t q)
{
    return (size_t)((q * 0x9E3779B97F4A7C15ull) >> 17) % c->nbuckets;
}

/* Chunks cached at most, whatever the budget: the table is sized by the
 * chunks the budget holds, and a budget of 256 MiB in chunks of 4 bytes
 * made a table of 1 GiB, allocated and cleared at every first open of
 * such an array.  Caching chunks that small saves nothing anyway. */
#define CACHE_MAX_CHUNKS 65536

struct drx_cache *drx_cache_create(size_t bytes, size_t chunk_bytes)
{
    struct drx_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (chunk_bytes == 0)
        chunk_bytes = 1;
    if (bytes / chunk_bytes > CACHE_MAX_CHUNKS)
        bytes = CACHE_MAX_CHUNKS * chunk_bytes;
    c->budget = bytes;
    c->chunk_bytes = chunk_bytes;
    c->nbuckets = bytes / chunk_bytes * 2 + 16;
    c->bucket = calloc(c->nbuckets, sizeof *c->bucket);
    if (!c->bucket) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->lru.prev = c->lru.next = &c->lru;
    return c;
}

static void lru_unlink(struct entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

static void lru_push(struct drx_cache *c, struct entry *e)
{
    e->next = c->lru.next;
    e->prev = &c->lru;
    c->lru.next->prev = e;
    c->lru.next = e;
}

static struct entry *lookup(struct drx_cache *c, uint64_t q)
{
    for (struct entry *e = c->bucket[hash(c, q)]; e; e = e->hnext)
        if (e->q == q)
            return e;
    return NULL;
}

static void unhash(struct drx_cache *c, struct entry *e)
{
    struct entry **p = &c->bucket[hash(c, e->q)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    lru_unlink(e);
    c->used -= c->chunk_bytes;
}

/* Drops least recently used entries nobody holds until there is room. */
static void evict(struct drx_cache *c, size_t need)
{
    struct entry *e = c->lru.prev;
    while (c->used + need > c->budget && e != &c->lru) {
        struct entry *prev = e->prev;
        if (e->refs == 0) {
            unhash(c, e);
            free(e);
        }
        e = prev;
    }
}

void *drx_cache_get(struct drx_cache *c, uint64_t q, int (*load)(uint64_t q, void *buf, void *arg),
                    void *arg, void **entry, int *rc)
{
    struct entry *e, *other;

    pthread_mutex_lock(&c->lock);
    e = lookup(c, q);
    if (e) {
        e->refs++;
        lru_unlink(e);
        lru_push(c, e);
        pthread_mutex_unlock(&c->lock);
        *entry = e;
        return e->data;
    }
    uint64_t gen = c->gen[q % GENS], epoch = c->epoch;
    pthread_mutex_unlock(&c->lock);
    if (!load) {
        *rc = 0;
        return NULL;
    }

    /* Load without the lock so other chunks are served meanwhile; if two
     * threads load the same chunk, the second copy is dropped. */
    e = malloc(sizeof *e + c->chunk_bytes);
    if (!e) {
        *rc = -ENOMEM;
        return NULL;
    }
    e->data = (unsigned char *)(e + 1);
    *rc = load(q, e->data, arg);
    if (*rc) {
        free(e);
        return NULL;
    }
    e->q = q;
    e->refs = 1;
    e->stale = false;

    pthread_mutex_lock(&c->lock);
    if (c->gen[q % GENS] != gen || c->epoch != epoch) {
        /* A write to this chunk (or the file, seen by a clear) ran during
         * the load: serve this read from the private copy (the read
         * overlapped the write, so either bytes are right for it) and leave
         * the cache to a later load. */
        e->stale = true;
        pthread_mutex_unlock(&c->lock);
        *entry = e;
        return e->data;
    }
    other = lookup(c, q);
    if (other) {
        other->refs++;
        pthread_mutex_unlock(&c->lock);
        free(e);
        *entry = other;
        return other->data;
    }
    evict(c, c->chunk_bytes);
    e->hnext = c->bucket[hash(c, q)];
    c->bucket[hash(c, q)] = e;
    lru_push(c, e);
    c->used += c->chunk_bytes;
    pthread_mutex_unlock(&c->lock);
    *entry = e;
    return e->data;
}

void drx_cache_put(struct drx_cache *c, void *entry)
{
    struct entry *e = entry;
    bool drop;

    pthread_mutex_lock(&c->lock);
    drop = --e->refs == 0 && e->stale;
    if (!drop && e->refs == 0 && c->used > c->budget)
        evict(c, 0);
    pthread_mutex_unlock(&c->lock);
    if (drop)
        free(e);
}

void drx_cache_update(struct drx_cache *c, uint64_t q, uint64_t off, const void *buf, size_t len)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    c->gen[q % GENS]++;
    e = lookup(c, q);
    if (e)
        memcpy(e->data + off, buf, len);
    pthread_mutex_unlock(&c->lock);
}

void drx_cache_clear(struct drx_cache *c)
{
    pthread_mutex_lock(&c->lock);
    c->epoch++;
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct entry *e = c->bucket[i];
        while (e) {
            struct entry *next = e->hnext;
            lru_unlink(e);
            c->used -= c->chunk_bytes;
            if (e->refs)
                e->stale = true;
            else
                free(e);
            e = next;
        }
        c->bucket[i] = NULL;
    }
    pthread_mutex_unlock(&c->lock);
}

void drx_cache_destroy(struct drx_cache *c)
{
    if (!c)
        return;
    drx_cache_clear(c);
    free(c->bucket);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
