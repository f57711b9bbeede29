/* The chunk cache: hits and misses, the byte budget and LRU order, pinned
 * entries, writes that overlap a load, and clears. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../src/cache_i.h"
#include "tap.h"

#define CB 64 /* chunk bytes */

struct loader {
    int loads;
    struct drx_cache *c; /* when set, the load races a write or a clear */
    int race;            /* 1: update of the chunk; 2: clear */
};

static int load(uint64_t q, void *buf, void *arg)
{
    struct loader *l = arg;
    l->loads++;
    memset(buf, (int)q, CB);
    if (l->race == 1) {
        unsigned char b = 0xee;
        drx_cache_update(l->c, q, 0, &b, 1);
    } else if (l->race == 2) {
        drx_cache_clear(l->c);
    }
    return 0;
}

static unsigned char *get(struct drx_cache *c, uint64_t q, struct loader *l, void **e)
{
    int rc = 0;
    return drx_cache_get(c, q, load, l, e, &rc);
}

static int load4(uint64_t q, void *buf, void *arg)
{
    (*(int *)arg)++;
    memset(buf, (int)q, 4);
    return 0;
}

/* A budget of 256 MiB in chunks of 4 bytes: the table is sized by the
 * chunks cached at most, not by the budget (1 GiB of buckets, allocated
 * and cleared at every first open of such an array). */
static void test_tiny_chunks(void)
{
    struct rusage r0, r1;
    struct timespec t0, t1;

    getrusage(RUSAGE_SELF, &r0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct drx_cache *c = drx_cache_create((size_t)256 << 20, 4);
    drx_cache_clear(c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &r1);
    long grew_kb = r1.ru_maxrss - r0.ru_maxrss;
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    tap_ok(c && grew_kb < 16 * 1024,
           "a 256 MiB cache of 4-byte chunks: peak memory grew %ld KiB (%.1f ms)", grew_kb, ms);
    /* it still caches: the same chunk twice is one load */
    int loads = 0, rc = 0;
    void *e;
    unsigned char *d = drx_cache_get(c, 7, load4, &loads, &e, &rc);
    if (d)
        drx_cache_put(c, e);
    d = drx_cache_get(c, 7, load4, &loads, &e, &rc);
    if (d)
        drx_cache_put(c, e);
    tap_ok(d && d[3] == 7 && loads == 1, "... and it caches");
    drx_cache_destroy(c);
}

int main(void)
{
    test_tiny_chunks();
    struct loader l = {0};
    struct drx_cache *c = drx_cache_create(3 * CB, CB);
    void *e, *e2;
    unsigned char *d;

    tap_ok(c != NULL, "a cache of three chunks");
    d = get(c, 1, &l, &e);
    tap_ok(d && d[0] == 1 && l.loads == 1, "a miss loads the chunk");
    drx_cache_put(c, e);
    d = get(c, 1, &l, &e);
    tap_ok(d && d[5] == 1 && l.loads == 1, "a hit does not load");
    drx_cache_put(c, e);
    {
        int rc = -1;
        d = drx_cache_get(c, 1, NULL, NULL, &e, &rc);
        tap_ok(d && d[5] == 1, "a lookup without a loader finds a cached chunk");
        drx_cache_put(c, e);
        rc = -1;
        d = drx_cache_get(c, 6, NULL, NULL, &e, &rc);
        tap_ok(!d && rc == 0 && l.loads == 1, "... and misses an absent one, loading nothing");
    }

    /* 1, 2, 3 fill the budget; 1 is used again, so 4 evicts 2 (the least
     * recently used), not 1 */
    drx_cache_put(c, (get(c, 2, &l, &e), e));
    drx_cache_put(c, (get(c, 3, &l, &e), e));
    drx_cache_put(c, (get(c, 1, &l, &e), e));
    drx_cache_put(c, (get(c, 4, &l, &e), e));
    l.loads = 0;
    drx_cache_put(c, (get(c, 1, &l, &e), e));
    tap_ok(l.loads == 0, "the budget evicts the least recently used chunk, not a recent one");
    drx_cache_put(c, (get(c, 2, &l, &e), e));
    tap_ok(l.loads == 1, "... which was chunk 2");

    /* a pinned entry survives eviction and clear until it is put back */
    d = get(c, 7, &l, &e);
    for (uint64_t q = 10; q < 20; q++)
        drx_cache_put(c, (get(c, q, &l, &e2), e2));
    tap_ok(d[0] == 7, "a pinned entry keeps its bytes while others come and go");
    drx_cache_clear(c);
    tap_ok(d[CB - 1] == 7, "a pinned entry keeps its bytes across a clear");
    drx_cache_put(c, e); /* freed now: ASan would see a use after free */
    l.loads = 0;
    drx_cache_put(c, (get(c, 7, &l, &e), e));
    tap_ok(l.loads == 1, "a clear forgets every chunk");

    /* an update copies into a cached chunk */
    {
        unsigned char b[4] = {9, 9, 9, 9};
        drx_cache_update(c, 7, 8, b, sizeof b);
        d = get(c, 7, &l, &e);
        tap_ok(d[8] == 9 && d[11] == 9 && d[12] == 7, "an update changes exactly its bytes");
        drx_cache_put(c, e);
    }

    /* a load that overlapped a write to its chunk, or a clear, serves its
     * reader but is not kept */
    l = (struct loader){.c = c, .race = 1};
    d = get(c, 30, &l, &e);
    tap_ok(d && d[0] == 30, "a load overlapping an update serves its own read");
    drx_cache_put(c, e);
    l.race = 0;
    drx_cache_put(c, (get(c, 30, &l, &e), e));
    tap_ok(l.loads == 2, "... and is not published (the next get loads again)");
    l = (struct loader){.c = c, .race = 2};
    drx_cache_put(c, (get(c, 31, &l, &e), e));
    l.race = 0;
    drx_cache_put(c, (get(c, 31, &l, &e), e));
    tap_ok(l.loads == 2, "a load overlapping a clear is not published");

    drx_cache_destroy(c);
    drx_cache_destroy(NULL);
    tap_ok(1, "destroy, and destroy(NULL)");
    return tap_done();
}
