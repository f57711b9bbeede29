/* The baseline of the drx benchmarks: a flat row-major file of the same
 * array, read or grown the way a program without drx would.
 *
 *   bench_flat slab FILE N0xN1xN2 ELEM D LO HI   pread every contiguous run of
 *                                                 the slab [LO,HI) along D
 *   bench_flat grow FILE N0xN1xN2 ELEM D COUNT OUT
 *                                                 rewrite the file with
 *                                                 dimension D grown by COUNT
 *                                                 (zeros), fsync
 * Prints the bytes moved.  Rank 3 only: it is a benchmark tool.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

#define BUF_MAX ((size_t)64 << 20)

/* pread of len bytes at off in pieces of at most BUF_MAX into buf. */
static uint64_t read_span(int fd, char *buf, uint64_t off, uint64_t len)
{
    uint64_t total = 0;

    while (len) {
        size_t want = len < BUF_MAX ? (size_t)len : BUF_MAX;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got <= 0)
            die("pread");
        off += (uint64_t)got;
        len -= (uint64_t)got;
        total += (uint64_t)got;
    }
    return total;
}

/* The slab [lo, hi) along dimension d: runs along the last dimension are
 * contiguous; a row slab (d == 0) is one run. */
static uint64_t slab(int fd, const uint64_t *n, uint64_t es, uint64_t d, uint64_t lo, uint64_t hi)
{
    uint64_t b[3] = {0, 0, 0}, e[3] = {n[0], n[1], n[2]}, total = 0;
    size_t run;
    char *buf;

    b[d] = lo;
    e[d] = hi;
    run = d == 0 ? (size_t)((hi - lo) * n[1] * n[2] * es) : (size_t)((e[2] - b[2]) * es);
    buf = malloc(run < BUF_MAX ? run : BUF_MAX);
    if (d == 0)
        total = read_span(fd, buf, lo * n[1] * n[2] * es, run);
    for (uint64_t i = b[0]; d != 0 && i < e[0]; i++)
        for (uint64_t j = b[1]; j < e[1]; j++) {
            uint64_t off = ((i * n[1] + j) * n[2] + b[2]) * es;
            if (pread(fd, buf, run, (off_t)off) != (ssize_t)run)
                die("pread");
            total += run;
        }
    free(buf);
    return total;
}

/* Old row i (of the slowest dimension) into its place in the grown row
 * buf (zeros elsewhere). */
static void grown_row(int fd, const uint64_t *n, const uint64_t *m, uint64_t es, uint64_t d,
                      uint64_t i, char *buf)
{
    size_t in_row = (size_t)(n[1] * n[2] * es);
    char *row;

    if (d == 0 || d == 1) {
        if (pread(fd, buf, in_row, (off_t)(i * in_row)) != (ssize_t)in_row)
            die("pread");
        return;
    }
    row = malloc(in_row);
    if (pread(fd, row, in_row, (off_t)(i * in_row)) != (ssize_t)in_row)
        die("pread");
    for (uint64_t j = 0; j < n[1]; j++)
        memcpy(buf + j * m[2] * es, row + j * n[2] * es, n[2] * es);
    free(row);
}

/* Rewrites the file into out with dimension d grown by count (zeros). */
static uint64_t grow(int fd, const uint64_t *n, uint64_t es, uint64_t d, uint64_t count,
                     const char *path)
{
    uint64_t m[3] = {n[0], n[1], n[2]}, total = 0;
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t out_row;
    char *buf;

    if (out < 0)
        die(path);
    m[d] += count;
    out_row = (size_t)(m[1] * m[2] * es);
    buf = calloc(1, out_row);
    for (uint64_t i = 0; i < m[0]; i++) {
        memset(buf, 0, out_row);
        if (i < n[0])
            grown_row(fd, n, m, es, d, i, buf);
        if (write(out, buf, out_row) != (ssize_t)out_row)
            die("write");
        total += out_row;
    }
    if (fsync(out))
        die("fsync");
    close(out);
    free(buf);
    return total;
}

int main(int argc, char **argv)
{
    uint64_t n[3], es, d, total;
    int fd;

    if (argc < 7 || sscanf(argv[3], "%lux%lux%lu", &n[0], &n[1], &n[2]) != 3) {
        fprintf(stderr, "usage: see the comment in bench_flat.c\n");
        return 2;
    }
    es = strtoull(argv[4], NULL, 10);
    d = strtoull(argv[5], NULL, 10);
    fd = open(argv[2], O_RDONLY);
    if (fd < 0)
        die(argv[2]);
    if (strcmp(argv[1], "slab") == 0 && argc == 8) {
        total = slab(fd, n, es, d, strtoull(argv[6], NULL, 10), strtoull(argv[7], NULL, 10));
    } else if (strcmp(argv[1], "grow") == 0 && argc == 8) {
        total = grow(fd, n, es, d, strtoull(argv[6], NULL, 10), argv[7]);
    } else {
        fprintf(stderr, "bench_flat: unknown mode %s\n", argv[1]);
        return 2;
    }
    close(fd);
    printf("%lu\n", (unsigned long)total);
    return 0;
}
