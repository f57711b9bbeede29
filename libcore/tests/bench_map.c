/* F* lookups per second: rank 3, 100 axial records per dimension, random
 * chunk indices; the inverse too.  One core. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drx/map.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    struct drx_map m;
    uint64_t b[3] = {2, 2, 2}, *idx, sum = 0;
    const size_t n = 1 << 22;
    double t0, t1, best = 0, best_inv = 0;

    drx_map_init(&m, 3, b);
    /* interleaved growths: every growth opens a record in its vector */
    while (m.vec[0].n < 100 || m.vec[1].n < 100 || m.vec[2].n < 100)
        for (int d = 0; d < 3; d++)
            drx_map_grow(&m, d, m.bound[d] + 1);
    idx = malloc(3 * n * sizeof *idx);
    srand(1);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++)
            idx[3 * i + d] = (uint64_t)rand() % m.bound[d];
    for (int rep = 0; rep < 5; rep++) {
        t0 = now();
        for (size_t i = 0; i < n; i++)
            sum += drx_map_address(&m, &idx[3 * i]);
        t1 = now();
        if (n / (t1 - t0) > best)
            best = (double)n / (t1 - t0);
        t0 = now();
        for (size_t i = 0; i < n; i++) {
            uint64_t back[3];
            drx_map_index(&m, (sum + i * 7919) % m.nchunks, back);
            sum += back[0];
        }
        t1 = now();
        if (n / (t1 - t0) > best_inv)
            best_inv = (double)n / (t1 - t0);
    }
    printf("F* rank 3, records per dimension %zu/%zu/%zu, %llu chunks\n", m.vec[0].n, m.vec[1].n,
           m.vec[2].n, (unsigned long long)m.nchunks);
    printf("F*      %.1f million lookups/s (target >= 20)  %s\n", best / 1e6,
           best >= 20e6 ? "MET" : "MISSED");
    printf("F*^-1   %.1f million lookups/s\n", best_inv / 1e6);
    printf("(checksum %llu)\n", (unsigned long long)sum);
    drx_map_fini(&m);
    free(idx);
    return 0;
}
