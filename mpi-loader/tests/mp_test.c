/* Driver of bats-tests/mp.bats: runs libdrxmp calls under mpiexec.
 *
 *   mpiexec -n P mp_test ARRAY OP...
 *
 * OPs, run in order by every rank (OP@R=ALT: rank R runs ALT instead):
 *   create:TYPE:N0xN1..:C0xC1..[:DIMS]   open:r | open:w      close
 *                                 (DIMS "a,b,c": drx_mp_create_dims)
 *                                 (create and open close the handle first)
 *   extend:DIM:COUNT              zones (rank 0 prints every zone and its chunks)
 *   write:ORDER:SEED              each rank writes its zone, values from value()
 *   writebox:ORDER:SEED:LO:HI     LO, HI as i,j,k
 *   readbox:ORDER:LO:HI           reads a box (and drops it)
 *   read:ORDER:REF:NBOX:SEED[:whole]  NBOX random boxes per rank compared with
 *                                 REF, the whole array in C order (drx get);
 *                                 whole: the boxes widened to whole chunks
 *   bounds                        rank 0 prints the bounds
 *   samebounds                    rank 0 says when the ranks' bounds differ
 *   buffer:BYTES                  drx_mp_set_buffer
 *   mode:batch | mode:extend | mode:none | mode:N   drx_mp_set_sync
 *   sync                          drx_mp_sync
 *   attr:NAME:TYPE:VALUE          drx_mp_attr_set (TYPE "" or "string": text)
 *   attrrm:NAME                   drx_mp_attr_rm
 *   attrget:NAME                  each rank prints "rank R: NAME=VALUE"
 *                                 (drx_mp_attr_get)
 *   path:P                        the array path of the words after it (P)
 *   chdir:DIR                     chdir(DIR) (a relative path's meaning)
 *   opennull                      drx_mp_open with out NULL
 *   zoneof:P                      drx_mp_zone of process P (dropped)
 *   create17                      drx_mp_create with k 17 and arrays of 2
 *   system:CMD                    rank 0 runs CMD (the rest of the word) with
 *                                 system(3), between barriers
 *   kill                          every rank kills itself (SIGKILL): a crash
 *                                 (a second after a barrier, for the output)
 *   nodac:R                       rank R drops CAP_DAC_OVERRIDE and
 *                                 CAP_DAC_READ_SEARCH: file modes bind it
 *                                 (root's other ranks read what it cannot)
 *   crash:R                       rank R kills itself (SIGKILL) a second
 *                                 after a barrier; the others wait in a second one
 *                                 until mpiexec ends them: one rank's crash
 *                                 while the others still run
 * Values: element (i0, i1, ...) holds (seed + sum_d i_d * prime_d) % 113, in
 * the array's type (complex: that, and minus it).  A failing OP prints
 * "rank R: OP: RC: MESSAGE" for each rank it failed on, and every rank
 * ends after it with status 3; a failing ?OP prints the same and the run
 * goes on.
 *
 * Output: only rank 0 writes stdout.  Each rank collects its lines of a
 * word; after the word rank 0 prints every rank's, in rank order, with one
 * fwrite and a flush (word_end).  mpiexec merges what several ranks write at the same
 * moment even inside a line ("bounds 64x64" of rank 0 cut in two by rank
 * 1's error line), which the tests' anchored patterns then miss.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/mp.h"

static int me, nprocs;
static char *path;
static drx_mp *A;
static char type_name[8] = "";
static int64_t chunk_shape[16]; /* from libcore, at open */

static const int primes[16] = {7, 13, 31, 61, 3, 5, 11, 17, 19, 23, 29, 37, 41, 43, 47, 53};

/* This rank's output of the current word, for word_end. */
static struct {
    char *text;
    size_t len, cap;
} out;

/* Where a gather cannot happen (no memory to collect or to receive):
 * the text goes to stderr, from this rank, as it is. */
static void say_stderr(const char *text, size_t len)
{
    fwrite(text, 1, len, stderr);
    fflush(stderr);
}

/* printf into this rank's output of the word. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if (out.len + (size_t)n + 1 > out.cap) {
        size_t cap = 2 * (out.len + (size_t)n + 1) + 256;
        char *t = realloc(out.text, cap);
        if (!t) {
            char line[512];
            va_start(ap, fmt);
            vsnprintf(line, sizeof(line), fmt, ap);
            va_end(ap);
            say_stderr(line, strlen(line));
            return;
        }
        out.text = t;
        out.cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(out.text + out.len, out.cap - out.len, fmt, ap);
    va_end(ap);
    out.len += (size_t)n;
}

/* After a word, on every rank (collective): rank 0 writes what every rank
 * said, in rank order, with one fwrite and a flush, so that no two ranks
 * ever write stdout at once.  True when the word failed on some rank
 * (failed: on this one): then every rank stops.  A rank that dies in the
 * word never gets here; mpiexec ends the others, which wait in it. */
static bool word_end(bool failed)
{
    int mine[2] = {(int)out.len, failed}, *all = calloc((size_t)nprocs * 4, sizeof(int));
    char *text = NULL;
    int total = 0, any = 0;
    if (!all) {
        say_stderr(out.text, out.len);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    /* every rank learns every length and failure: all stop together */
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    int *counts = all + 2 * nprocs, *displs = counts + nprocs;
    for (int r = 0; r < nprocs; r++) {
        counts[r] = all[2 * r];
        displs[r] = total;
        total += counts[r];
        any |= all[2 * r + 1];
    }
    if (me == 0 && !(text = malloc((size_t)total + 1))) {
        say_stderr(out.text, out.len);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Gatherv(out.text, (int)out.len, MPI_CHAR, text, counts, displs, MPI_CHAR, 0,
                MPI_COMM_WORLD);
    if (me == 0 && total > 0) {
        fwrite(text, 1, (size_t)total, stdout);
        fflush(stdout);
    }
    out.len = 0;
    free(text);
    free(all);
    return any != 0;
}

static int parse_list(const char *s, char sep, int64_t *v)
{
    int n = 0;
    while (s && *s && n < 16) {
        char *end;
        v[n++] = strtoll(s, &end, 10);
        s = *end == sep ? end + 1 : NULL;
    }
    return n;
}

static double value_of(const int64_t *idx, int k, int seed)
{
    int64_t s = seed;
    for (int d = 0; d < k; d++)
        s += idx[d] * primes[d];
    return (double)(s % 113);
}

/* Element value v in the array's type at dst. */
static void put_value(void *dst, double v)
{
    static const struct {
        const char *name;
        int kind; /* 0 signed, 1 unsigned, 2 float, 3 complex */
        int size;
    } types[] = {{"i8", 0, 1},  {"i16", 0, 2}, {"i32", 0, 4}, {"i64", 0, 8},
                 {"u8", 1, 1},  {"u16", 1, 2}, {"u32", 1, 4}, {"u64", 1, 8},
                 {"f32", 2, 4}, {"f64", 2, 8}, {"c64", 3, 4}, {"c128", 3, 8}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcmp(types[i].name, type_name))
            continue;
        int64_t iv = (int64_t)v;
        float f[2] = {(float)v, (float)-v};
        double dd[2] = {v, -v};
        if (types[i].kind < 2)
            memcpy(dst, &iv, (size_t)types[i].size); /* little-endian */
        else if (types[i].size == 4)
            memcpy(dst, f, (size_t)types[i].size * (types[i].kind == 3 ? 2 : 1));
        else
            memcpy(dst, dd, (size_t)types[i].size * (types[i].kind == 3 ? 2 : 1));
        return;
    }
}

/* Offset (elements) of box element idx (relative) in order. */
static int64_t box_offset(const int64_t *rel, const int64_t *n, int k, char order)
{
    int64_t off = 0;
    if (order == 'C')
        for (int d = 0; d < k; d++)
            off = off * n[d] + rel[d];
    else
        for (int d = k - 1; d >= 0; d--)
            off = off * n[d] + rel[d];
    return off;
}

/* Calls fn for every element of the box [lo, hi). */
static void box_walk(const int64_t *lo, const int64_t *hi, int k,
                     void (*fn)(const int64_t *idx, void *arg), void *arg)
{
    int64_t idx[16];
    for (int d = 0; d < k; d++) {
        if (hi[d] <= lo[d])
            return;
        idx[d] = lo[d];
    }
    for (;;) {
        fn(idx, arg);
        int d = k - 1;
        while (d >= 0 && ++idx[d] == hi[d]) {
            idx[d] = lo[d];
            d--;
        }
        if (d < 0)
            return;
    }
}

struct fill_arg {
    const int64_t *lo;
    int64_t n[16];
    int k, seed;
    char order;
    unsigned char *buf;
    size_t es;
    const unsigned char *ref; /* read: the whole array, C order */
    const int64_t *bounds;
    long bad;
};

static void fill_one(const int64_t *idx, void *arg)
{
    struct fill_arg *f = arg;
    int64_t rel[16];
    for (int d = 0; d < f->k; d++)
        rel[d] = idx[d] - f->lo[d];
    put_value(f->buf + (size_t)box_offset(rel, f->n, f->k, f->order) * f->es,
              value_of(idx, f->k, f->seed));
}

static void check_one(const int64_t *idx, void *arg)
{
    struct fill_arg *f = arg;
    int64_t rel[16];
    for (int d = 0; d < f->k; d++)
        rel[d] = idx[d] - f->lo[d];
    const unsigned char *got = f->buf + (size_t)box_offset(rel, f->n, f->k, f->order) * f->es;
    const unsigned char *want = f->ref + (size_t)box_offset(idx, f->bounds, f->k, 'C') * f->es;
    if (memcmp(got, want, f->es))
        f->bad++;
}

static unsigned char *box_buffer(const int64_t *lo, const int64_t *hi, int k, int64_t *n)
{
    size_t count = 1;
    for (int d = 0; d < k; d++) {
        n[d] = hi[d] > lo[d] ? hi[d] - lo[d] : 0;
        count *= (size_t)n[d];
    }
    return malloc(count * drx_mp_elem_size(A) + 1);
}

static int write_box(const int64_t *lo, const int64_t *hi, char order, int seed)
{
    int k = drx_mp_rank(A);
    struct fill_arg f = {.lo = lo, .k = k, .seed = seed, .order = order, .es = drx_mp_elem_size(A)};
    f.buf = box_buffer(lo, hi, k, f.n);
    box_walk(lo, hi, k, fill_one, &f);
    int rc = drx_mp_write_all(A, lo, hi, order, f.buf);
    free(f.buf);
    return rc;
}

static int op_write(char **w, int nw)
{
    int64_t lo[16], hi[16];
    char order = nw > 1 ? w[1][0] : 'C';
    int seed = nw > 2 ? atoi(w[2]) : 0;
    if (nw > 4) {
        parse_list(w[3], ',', lo);
        parse_list(w[4], ',', hi);
    } else {
        drx_mp_zone(A, me, lo, hi);
    }
    return write_box(lo, hi, order, seed);
}

static unsigned char *load_ref(const char *file, size_t *len)
{
    FILE *f = fopen(file, "rb");
    unsigned char *b = NULL;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc(*len + 1);
    if (b && fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* A random box inside the bounds; about one in five is empty.  whole:
 * widened to the chunks it meets (clamped to the bounds). */
static void random_box(const int64_t *bounds, int k, bool whole, int64_t *lo, int64_t *hi)
{
    for (int d = 0; d < k; d++) {
        lo[d] = rand() % (bounds[d] + 1);
        hi[d] = lo[d] + rand() % (bounds[d] - lo[d] + 1);
    }
    for (int d = 0; whole && d < k; d++) {
        int64_t c = chunk_shape[d], end = (hi[d] + c - 1) / c * c;
        lo[d] -= lo[d] % c;
        hi[d] = hi[d] == 0 ? 0 : end < bounds[d] ? end : bounds[d];
        lo[d] = lo[d] > hi[d] ? hi[d] : lo[d];
    }
}

static int op_readbox(char **w, int nw)
{
    int64_t lo[16] = {0}, hi[16] = {0}, n[16];
    if (nw < 4)
        return -EINVAL;
    parse_list(w[2], ',', lo);
    parse_list(w[3], ',', hi);
    unsigned char *buf = box_buffer(lo, hi, drx_mp_rank(A), n);
    int rc = drx_mp_read_all(A, lo, hi, w[1][0], buf);
    free(buf);
    return rc;
}

static int op_read(char **w, int nw)
{
    int k = drx_mp_rank(A), rc = 0;
    int64_t bounds[16], lo[16], hi[16];
    size_t len = 0;
    if (nw < 5)
        return -EINVAL;
    drx_mp_bounds(A, bounds);
    struct fill_arg f = {.k = k, .order = w[1][0], .es = drx_mp_elem_size(A), .bounds = bounds};
    f.ref = load_ref(w[2], &len);
    size_t want = f.es;
    for (int d = 0; d < k; d++)
        want *= (size_t)bounds[d];
    if (f.ref && len != want) {
        say("rank %d: read: %s has %zu bytes, the array %zu\n", me, w[2], len, want);
        free((void *)f.ref);
        return -EINVAL;
    }
    srand((unsigned)(atoi(w[4]) * 1000 + me));
    for (int i = 0; i < atoi(w[3]) && rc == 0; i++) {
        random_box(bounds, k, nw > 5 && !strcmp(w[5], "whole"), lo, hi);
        f.lo = lo;
        f.buf = box_buffer(lo, hi, k, f.n);
        rc = drx_mp_read_all(A, lo, hi, f.order, f.buf);
        if (rc == 0 && f.ref)
            box_walk(lo, hi, k, check_one, &f);
        free(f.buf);
    }
    if (rc == 0 && (!f.ref || f.bad)) {
        say("rank %d: read: %ld elements differ from the reference\n", me, f.bad);
        rc = -EIO;
    }
    free((void *)f.ref);
    return rc;
}

static void print_zone_chunks(const int64_t *lo, const int64_t *hi, int k,
                              const struct drx_array_meta *m)
{
    int64_t clo[16] = {0}, chi[16] = {0};
    for (int d = 0; d < k; d++) {
        clo[d] = lo[d] / (int64_t)m->chunk[d];
        chi[d] = hi[d] > lo[d] ? (hi[d] - 1) / (int64_t)m->chunk[d] + 1 : clo[d];
    }
    uint64_t idx[16];
    int64_t cur[16];
    memcpy(cur, clo, sizeof(cur));
    for (int d = 0; d < k; d++)
        if (chi[d] <= clo[d])
            return;
    for (;;) {
        for (int d = 0; d < k; d++)
            idx[d] = (uint64_t)cur[d];
        say(" %" PRIu64, drx_map_address(&m->map, idx));
        int d = k - 1;
        while (d >= 0 && ++cur[d] == chi[d]) {
            cur[d] = clo[d];
            d--;
        }
        if (d < 0)
            break;
    }
}

/* Rank 0 prints every rank's zone: "zone R LO HI: chunks...". */
static int op_zones(void)
{
    struct drx_array *arr = NULL;
    int k = drx_mp_rank(A);
    if (me != 0)
        return 0;
    if (drx_array_open(path, DRX_RDONLY, &arr, NULL) < 0)
        return -EIO;
    for (int p = 0; p < nprocs; p++) {
        int64_t lo[16], hi[16];
        drx_mp_zone(A, p, lo, hi);
        say("zone %d", p);
        for (int d = 0; d < k; d++)
            say("%c%" PRId64, d ? ',' : ' ', lo[d]);
        for (int d = 0; d < k; d++)
            say("%c%" PRId64, d ? ',' : ' ', hi[d]);
        say(":");
        print_zone_chunks(lo, hi, k, drx_array_meta(arr));
        say("\n");
    }
    drx_array_close(arr);
    return 0;
}

static int op_create(char **w, int nw)
{
    int64_t shape[16] = {0}, chunk[16] = {0};
    int k = nw > 2 ? parse_list(w[2], 'x', shape) : 0;
    if (nw > 3)
        parse_list(w[3], 'x', chunk);
    memcpy(chunk_shape, chunk, sizeof(chunk_shape));
    snprintf(type_name, sizeof(type_name), "%s", nw > 1 ? w[1] : "");
    drx_mp_close(&A); /* a second create or open: the first handle goes */
    if (nw > 4)
        return drx_mp_create_dims(MPI_COMM_WORLD, path, w[1], k, shape, chunk, w[4], &A);
    return drx_mp_create(MPI_COMM_WORLD, path, nw > 1 ? w[1] : NULL, k, shape, chunk, &A);
}

static int op_bounds(void)
{
    int64_t b[16];
    char line[256] = "bounds ";
    int rc = drx_mp_bounds(A, b);
    size_t at = strlen(line);
    for (int d = 0; rc == 0 && d < drx_mp_rank(A) && at < sizeof(line); d++)
        at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%" PRId64, d ? "x" : "", b[d]);
    if (me == 0)
        say("%s\n", line);
    return rc;
}

static int op_open(char **w, int nw)
{
    struct drx_array *arr;
    /* the type, for values: from libcore (not part of drx/mp.h) */
    if (drx_array_open(path, DRX_RDONLY, &arr, NULL) == 0) {
        snprintf(type_name, sizeof(type_name), "%s", drx_type_name(drx_array_meta(arr)->type));
        for (int d = 0; d < drx_array_meta(arr)->rank; d++)
            chunk_shape[d] = (int64_t)drx_array_meta(arr)->chunk[d];
        drx_array_close(arr);
    }
    drx_mp_close(&A);
    return drx_mp_open(MPI_COMM_WORLD, path, nw > 1 && w[1][0] == 'w', &A);
}

static int op_close(char **w, int nw)
{
    (void)w, (void)nw;
    return drx_mp_close(&A);
}

static int op_extend(char **w, int nw)
{
    return drx_mp_extend(A, nw > 1 ? atoi(w[1]) : -1, nw > 2 ? atoll(w[2]) : 0);
}

static int op_zones_w(char **w, int nw)
{
    (void)w, (void)nw;
    return op_zones();
}

static int op_buffer(char **w, int nw)
{
    return drx_mp_set_buffer(A, nw > 1 ? (size_t)atoll(w[1]) : 0);
}

static int op_bounds_w(char **w, int nw)
{
    (void)w, (void)nw;
    return op_bounds();
}

/* Rank 0 says so when the ranks' bounds differ (drx_mp_bounds). */
static int op_samebounds(char **w, int nw)
{
    int64_t b[16] = {0}, lo[16], hi[16];
    int rc = drx_mp_bounds(A, b);
    (void)w, (void)nw;
    MPI_Allreduce(b, lo, 16, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(b, hi, 16, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0 && memcmp(lo, hi, sizeof(lo)) != 0)
        say("the ranks hold different bounds\n");
    return rc;
}

static int op_sync(char **w, int nw)
{
    (void)w, (void)nw;
    return drx_mp_sync(A);
}

static int op_mode(char **w, int nw)
{
    int mode = nw < 2                    ? -1
               : !strcmp(w[1], "batch")  ? DRX_MP_SYNC_BATCH
               : !strcmp(w[1], "extend") ? DRX_MP_SYNC_EXTEND
               : !strcmp(w[1], "none")   ? DRX_MP_SYNC_NONE
                                         : atoi(w[1]);
    return drx_mp_set_sync(A, mode);
}

static int op_attr(char **w, int nw)
{
    if (!strcmp(w[0], "attrrm"))
        return drx_mp_attr_rm(A, nw > 1 ? w[1] : NULL);
    if (!strcmp(w[0], "attr"))
        return drx_mp_attr_set(A, nw > 1 ? w[1] : NULL, nw > 2 ? w[2] : NULL,
                               nw > 3 ? w[3] : "");
    char buf[64];
    int n = drx_mp_attr_get(A, nw > 1 ? w[1] : NULL, buf, sizeof(buf));
    if (n >= 0)
        say("rank %d: %s=%s%s\n", me, w[1], buf, n >= (int)sizeof(buf) ? "..." : "");
    return n < 0 ? n : 0;
}

static int op_kill(char **w, int nw)
{
    (void)w, (void)nw;
    /* what rank 0 printed (word_end) reaches mpiexec's output before the
     * crash and mpiexec's report of it (on its stderr) */
    MPI_Barrier(MPI_COMM_WORLD);
    sleep(1);
    raise(SIGKILL);
    return -EINTR;
}

static int op_crash(char **w, int nw)
{
    MPI_Barrier(MPI_COMM_WORLD);
    /* as kill: the output first, then mpiexec's report of the crash */
    if (nw > 1 && atoi(w[1]) == me) {
        sleep(1);
        raise(SIGKILL);
    }
    /* never completes: mpiexec ends this rank when rank R dies */
    MPI_Barrier(MPI_COMM_WORLD);
    return -EINTR;
}

/* Rank R's capabilities without those that let root ignore file modes,
 * in every set: a real EACCES for it alone. */
static int op_nodac(char **w, int nw)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    const unsigned drop = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH;

    if (nw < 2 || atoi(w[1]) != me)
        return 0;
    if (syscall(SYS_capget, &h, d))
        return -errno;
    d[0].effective &= ~drop;
    d[0].permitted &= ~drop;
    d[0].inheritable &= ~drop;
    return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static int op_path(char **w, int nw)
{
    if (nw < 2)
        return -EINVAL;
    path = w[1];
    return 0;
}

static int op_opennull(char **w, int nw)
{
    (void)w;
    (void)nw;
    return drx_mp_open(MPI_COMM_WORLD, path, 1, NULL);
}

static int op_zoneof(char **w, int nw)
{
    int64_t lo[16], hi[16];
    return drx_mp_zone(A, nw > 1 ? atoi(w[1]) : 0, lo, hi);
}

static int op_create17(char **w, int nw)
{
    /* each rank's own values past the two a caller's k of 17 overstates */
    int64_t shape[2] = {4, 4 + me}, chunk[2] = {2, 2};
    (void)w;
    (void)nw;
    drx_mp_close(&A);
    return drx_mp_create(MPI_COMM_WORLD, path, "f64", 17, shape, chunk, &A);
}

static int op_chdir(char **w, int nw)
{
    return nw < 2 ? -EINVAL : chdir(w[1]) ? -errno : 0;
}

static int run_op(char **w, int nw)
{
    static const struct {
        const char *name;
        int (*fn)(char **w, int nw);
    } ops[] = {{"create", op_create}, {"open", op_open},       {"close", op_close},
               {"extend", op_extend}, {"write", op_write},     {"writebox", op_write},
               {"read", op_read},     {"readbox", op_readbox}, {"zones", op_zones_w},
               {"buffer", op_buffer}, {"bounds", op_bounds_w}, {"sync", op_sync},
               {"mode", op_mode},     {"kill", op_kill},       {"crash", op_crash},
               {"nodac", op_nodac},   {"attr", op_attr},       {"attrrm", op_attr},
               {"attrget", op_attr},  {"path", op_path},     {"chdir", op_chdir},
               {"opennull", op_opennull}, {"zoneof", op_zoneof},
               {"create17", op_create17}, {"samebounds", op_samebounds}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (!strcmp(w[0], ops[i].name))
            return ops[i].fn(w, nw);
    return -ENOSYS;
}

/* "OP@R=ALT@S=ALT2": this rank's variant. */
static char *my_variant(char *arg)
{
    char *at = strchr(arg, '@'), *pick = arg;
    while (at) {
        *at = '\0';
        char *eq = strchr(at + 1, '=');
        if (eq && atoi(at + 1) == me)
            pick = eq + 1;
        at = eq ? strchr(eq + 1, '@') : NULL;
    }
    return pick;
}

/* One word of the command line, on every rank.  Returns 0, 1 when it
 * failed on this rank and the run goes on (?OP), 3 when it failed. */
static int run_word(char *arg)
{
    if (!strncmp(arg, "system:", 7)) {
        /* what another program sees at this point of the run: rank 0's
         * stdout is flushed (word_end), the command's output follows in
         * order; the others wait in word_end until it is done */
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0 && system(arg + 7) != 0)
            say("system: %s: failed\n", arg + 7);
        return 0;
    }
    char *w[8], *save = NULL, *text = my_variant(arg);
    /* "?OP": a failure is printed and the run goes on */
    bool may_fail = text[0] == '?';
    text += may_fail;
    char shown[256];
    snprintf(shown, sizeof(shown), "%s", text);
    int nw = 0;
    for (char *t = strtok_r(text, ":", &save); t && nw < 8; t = strtok_r(NULL, ":", &save))
        w[nw++] = t;
    /* "rep:N:OP...": OP N times (mpiexec fails on a thousand words) */
    int skip = 0, reps = 1;
    if (nw > 2 && !strcmp(w[0], "rep")) {
        reps = atoi(w[1]);
        skip = 2;
    }
    int rc = nw > skip ? 0 : -EINVAL;
    for (int k = 0; rc == 0 && k < reps; k++)
        rc = run_op(w + skip, nw - skip);
    if (rc >= 0)
        return 0;
    say("rank %d: %s: %d: %s\n", me, shown, rc, drx_mp_error());
    return may_fail ? 1 : 3;
}

int main(int argc, char **argv)
{
    int status = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    path = argc > 1 ? argv[1] : "";
    for (int i = 2; i < argc && status == 0; i++)
        if (word_end(run_word(argv[i]) == 3))
            status = 3;
    drx_mp_close(&A);
    free(out.text);
    MPI_Finalize();
    return status;
}
