/* Benchmark of libdrxmp against parallel HDF5 (meson test --benchmark
 * drx-mp; run under mpiexec -n 2 by meson).
 *
 *   bench_mp DIR
 *
 * Grow and write: a 3-D f64 array time x y x of chunks CT x CY x CX starts
 * one chunk thick in time; each step grows time by one chunk and the ranks
 * write the new slab, split along y at chunk boundaries (rank r the r-th
 * part).  drx: drx_mp_extend + drx_mp_write_all, in the default mode
 * (every extension a durable commit, after an fdatasync of what was
 * written before it), in DRX_MP_SYNC_BATCH (durable at close: drx_mp_close
 * syncs) and in DRX_MP_SYNC_NONE (at close the growths are recorded, the
 * data is in the page cache, as HDF5's).  HDF5: H5Dset_extent + collective H5Dwrite,
 * same chunk shape and bytes, through the MPI-IO driver, with its default
 * fill (every new chunk written with zeros when it is allocated, then with
 * the data) and with H5D_FILL_TIME_NEVER (each chunk written once, as drx,
 * whose zero fill is a hole); timed to H5Fclose, when the data has reached
 * the file system (the page cache), and again after an fsync of the file
 * (durable, as drx in the first two modes after close).  Each pairing is
 * printed at one guarantee, with its ratio against the 2x target: drx
 * NONE / HDF5 without the fsync, drx BATCH / HDF5 with it.  A floor: each
 * rank pwrites the same bytes to a plain file, step by step, in pieces
 * copied through a buffer hot in the cache, timed without sync and again
 * after an fsync; the times over the floor's are printed too (a variant
 * whose time is below 2x the floor's cannot be beaten 2x by any writer
 * of these bytes to one file through the page cache).  Every variant runs
 * DRX_BENCH_MP_RUNS times (2), interleaved, and the best time counts.
 * Then a whole-array read: every rank reads its zone (drx_mp_zone) in C
 * order with drx_mp_read_all, and the same box with a collective H5Dread,
 * 7 passes of each, alternating, after one untimed of each (page cache
 * hot, buffers faulted in): the medians and the best.
 * Environment: DRX_BENCH_MP_STEPS (64), DRX_BENCH_MP_YX (512),
 * DRX_BENCH_MP_RUNS (2).
 */
#include <fcntl.h>
#include <hdf5.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/mp.h"

#define CT 4
#define CY 128
#define CX 128

static int me, np, steps, yx;

/* A grow-and-write run: its time from create to close (and after the
 * fsync, for HDF5); drx's time in extend, write_all and close. */
struct run {
    double t, tsync, extend, write, close;
};

/* The best of each variant over the runs. */
static void keep_best(struct run *best, const struct run *r)
{
    if (best->t == 0 || r->t < best->t) {
        double ts = best->tsync;
        *best = *r;
        best->tsync = ts;
    }
    if (best->tsync == 0 || (r->tsync > 0 && r->tsync < best->tsync))
        best->tsync = r->tsync;
}

/* Rank 0 removes what the variant's previous run left (the array's or
 * the file's names), and writes back what earlier runs left dirty in the
 * page cache (the variants that do not sync), so that every run starts
 * from the same state instead of paying for the one before.  The same
 * state includes the memory: in a VM that reports free pages to the host
 * (virtio-balloon free page reporting, as here), pages that have been
 * free for a few seconds are given back, and the next write into the
 * page cache pays a host fault for each (about 1 s for 537 MB here,
 * against 0.08 s for pages freed a moment before).  So every variant,
 * the floor too, removes its previous run's file just before it starts
 * and writes into the pages that file freed; the first run of each
 * variant pays for cold pages, and the best of the runs counts.  The
 * floor, the last variant of a round, comes after the others' memory is
 * taken and runs twice a round. */
static void remove_files(const char *path, bool array)
{
    char x[4200];
    if (me == 0 && !array)
        unlink(path);
    for (int i = 0; me == 0 && array && i < 2; i++) {
        snprintf(x, sizeof(x), "%s.%s", path, i ? "xta" : "xmd");
        unlink(x);
    }
    if (me == 0)
        sync();
    MPI_Barrier(MPI_COMM_WORLD);
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_mp: %s: %s\n", what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* This rank's part of a slab: y rows [*y0, *y1), split at chunk rows. */
static void my_rows(int64_t *y0, int64_t *y1)
{
    int64_t rows = yx / CY, base = rows / np, extra = rows % np;
    int64_t first = me * base + (me < extra ? me : extra);
    *y0 = first * CY;
    *y1 = (first + base + (me < extra ? 1 : 0)) * CY;
}

static double *slab(int64_t y0, int64_t y1, int s)
{
    size_t n = (size_t)CT * (size_t)(y1 - y0) * (size_t)yx;
    double *v = malloc((n ? n : 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = s + (double)i * 1e-6;
    return v;
}

static struct run drx_grow(const char *path, int mode)
{
    struct run r = {0};
    drx_mp *a;
    int64_t shape[3] = {CT, yx, yx}, chunk[3] = {CT, CY, CX}, y0, y1;
    my_rows(&y0, &y1);
    double *v = slab(y0, y1, 1);
    remove_files(path, true);
    double t0 = MPI_Wtime();
    if (drx_mp_create(MPI_COMM_WORLD, path, "f64", 3, shape, chunk, &a) < 0)
        die("drx_mp_create", drx_mp_error());
    if (drx_mp_set_sync(a, mode) < 0)
        die("drx_mp_set_sync", drx_mp_error());
    for (int s = 1; s <= steps; s++) {
        int64_t lo[3] = {(int64_t)s * CT, y0, 0}, hi[3] = {(int64_t)(s + 1) * CT, y1, yx};
        double t1 = MPI_Wtime();
        if (drx_mp_extend(a, 0, CT) < 0)
            die("drx_mp_extend", drx_mp_error());
        double t2 = MPI_Wtime();
        if (drx_mp_write_all(a, lo, hi, 'C', v) < 0)
            die("drx_mp_write_all", drx_mp_error());
        r.extend += t2 - t1;
        r.write += MPI_Wtime() - t2;
    }
    double t3 = MPI_Wtime();
    if (drx_mp_close(&a) < 0)
        die("drx_mp_close", drx_mp_error());
    r.t = r.tsync = MPI_Wtime() - t0;
    r.close = r.t - (t3 - t0);
    free(v);
    return r;
}

/* The floor: the same bytes by pwrite into a plain file, each rank its
 * part of every step, no sync: what the page cache takes.  Each rank's
 * part goes in pieces of FLOOR_PIECE bytes copied first into a buffer
 * hot in the cache: the fastest plain pwrite of these bytes found here
 * (one 4 MiB pwrite from the slab, or pieces of it straight from the
 * slab, took 3-5 % longer in a standalone test), so that no writer of
 * the same bytes, drx's staged writes included, should beat it.  Timed
 * to the last pwrite and again after rank 0's fsync.  With early, each
 * rank also starts the writeback of its part of every step at once
 * (sync_file_range, not waited for), as drx does in its durable modes:
 * slower to the last pwrite, faster to the end of the fsync. */
#define FLOOR_PIECE ((size_t)512 << 10)

static struct run raw_grow(const char *path, bool early)
{
    struct run r = {0};
    int64_t y0, y1;
    my_rows(&y0, &y1);
    double *v = slab(y0, y1, 1);
    size_t mine = (size_t)CT * (size_t)(y1 - y0) * (size_t)yx * sizeof(*v);
    size_t step = (size_t)CT * (size_t)yx * (size_t)yx * sizeof(*v);
    char *stage = malloc(FLOOR_PIECE);
    if (!stage)
        die("malloc", "out of memory");
    memset(stage, 0, FLOOR_PIECE);
    remove_files(path, false);
    double t0 = MPI_Wtime();
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0)
        die("open", path);
    for (int s = 1; s <= steps; s++) {
        off_t at = (off_t)((size_t)s * step + (size_t)y0 * (size_t)yx * CT * sizeof(*v));
        for (size_t o = 0; o < mine; o += FLOOR_PIECE) {
            size_t len = mine - o < FLOOR_PIECE ? mine - o : FLOOR_PIECE;
            memcpy(stage, (const char *)v + o, len);
            if (pwrite(fd, stage, len, at + (off_t)o) != (ssize_t)len)
                die("pwrite", path);
        }
        if (early)
            sync_file_range(fd, at, (off_t)mine, SYNC_FILE_RANGE_WRITE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    r.t = MPI_Wtime() - t0;
    /* durable, as HDF5 with its fsync */
    if (me == 0)
        fsync(fd);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    r.tsync = MPI_Wtime() - t0;
    free(stage);
    free(v);
    return r;
}

static hid_t h5_open_file(const char *path, bool create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = create ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                     : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0)
        die("H5Fopen", path);
    return f;
}

static void h5_write(hid_t d, hid_t dx, const hsize_t *start, const hsize_t *count, const double *v)
{
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(3, count, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    if (H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, dx, v) < 0)
        die("H5Dwrite", "failed");
    H5Sclose(ms);
    H5Sclose(fs);
}

static struct run h5_grow(const char *path, bool fill_never)
{
    struct run r = {0};
    int64_t y0, y1;
    my_rows(&y0, &y1);
    double *v = slab(y0, y1, 1);
    hsize_t dims[3] = {CT, (hsize_t)yx, (hsize_t)yx}, maxd[3] = {H5S_UNLIMITED, dims[1], dims[2]};
    hsize_t ch[3] = {CT, CY, CX};
    remove_files(path, false);
    double t0 = MPI_Wtime();
    hid_t f = h5_open_file(path, true);
    hid_t sp = H5Screate_simple(3, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, ch);
    if (fill_never)
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t d = H5Dcreate2(f, "a", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t dx = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE);
    for (int s = 1; s <= steps; s++) {
        hsize_t now[3] = {(hsize_t)(s + 1) * CT, dims[1], dims[2]};
        hsize_t start[3] = {(hsize_t)s * CT, (hsize_t)y0, 0};
        hsize_t count[3] = {CT, (hsize_t)(y1 - y0), (hsize_t)yx};
        if (H5Dset_extent(d, now) < 0)
            die("H5Dset_extent", "failed");
        h5_write(d, dx, start, count, v);
    }
    H5Pclose(dx);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    r.t = MPI_Wtime() - t0;
    if (me == 0) {
        int fd = open(path, O_RDONLY);
        fsync(fd);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    r.tsync = MPI_Wtime() - t0;
    free(v);
    return r;
}

/* The whole-array read: every rank its zone, through drx and HDF5,
 * both opened once and read in alternating passes. */
struct reader {
    drx_mp *a;
    int64_t lo[3], hi[3];
    hid_t f, d, dx;
    size_t n;
    double *v;
};

static void reader_open(struct reader *r, const char *drxpath, const char *h5path)
{
    if (drx_mp_open(MPI_COMM_WORLD, drxpath, 0, &r->a) < 0)
        die("drx_mp_open", drx_mp_error());
    drx_mp_zone(r->a, me, r->lo, r->hi);
    r->n = 1;
    for (int d = 0; d < 3; d++)
        r->n *= (size_t)(r->hi[d] - r->lo[d]);
    r->v = malloc((r->n ? r->n : 1) * sizeof(*r->v));
    r->f = h5_open_file(h5path, false);
    r->d = H5Dopen2(r->f, "a", H5P_DEFAULT);
    r->dx = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(r->dx, H5FD_MPIO_COLLECTIVE);
}

static double sum_of(const struct reader *r)
{
    double sum = 0;
    for (size_t i = 0; i < r->n; i++)
        sum += r->v[i];
    return sum;
}

/* One timed pass of each; *sum gets the values' sum (the same from both,
 * or the run fails). */
static double drx_read_pass(struct reader *r, double *sum)
{
    memset(r->v, 0, r->n * sizeof(*r->v));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (drx_mp_read_all(r->a, r->lo, r->hi, 'C', r->v) < 0)
        die("drx_mp_read_all", drx_mp_error());
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    *sum = sum_of(r);
    return t;
}

static double h5_read_pass(struct reader *r, double *sum)
{
    hsize_t start[3], count[3];
    for (int d = 0; d < 3; d++) {
        start[d] = (hsize_t)r->lo[d];
        count[d] = (hsize_t)(r->hi[d] - r->lo[d]);
    }
    hid_t fs = H5Dget_space(r->d), ms = H5Screate_simple(3, count, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    memset(r->v, 0, r->n * sizeof(*r->v));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (H5Dread(r->d, H5T_NATIVE_DOUBLE, ms, fs, r->dx, r->v) < 0)
        die("H5Dread", "failed");
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    H5Sclose(ms);
    H5Sclose(fs);
    *sum = sum_of(r);
    return t;
}

static void reader_close(struct reader *r)
{
    drx_mp_close(&r->a);
    H5Pclose(r->dx);
    H5Dclose(r->d);
    H5Fclose(r->f);
    free(r->v);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

#define READ_PASSES 7

/* READ_PASSES alternating passes of each after one untimed (page cache
 * hot, buffer faulted in); t[0] drx's median, t[1] HDF5's, t[2] and t[3]
 * their best.  Returns whether every pass read the same sums. */
static bool read_both(const char *drxpath, const char *h5path, double t[4])
{
    struct reader r = {0};
    double td[READ_PASSES], th[READ_PASSES], sd, sh, sum0 = 0;
    bool same = true;

    reader_open(&r, drxpath, h5path);
    drx_read_pass(&r, &sum0);
    h5_read_pass(&r, &sh);
    same = sh == sum0;
    for (int i = 0; i < READ_PASSES; i++) {
        td[i] = drx_read_pass(&r, &sd);
        th[i] = h5_read_pass(&r, &sh);
        same = same && sd == sum0 && sh == sum0;
    }
    reader_close(&r);
    qsort(td, READ_PASSES, sizeof(double), cmp_double);
    qsort(th, READ_PASSES, sizeof(double), cmp_double);
    t[0] = td[READ_PASSES / 2];
    t[1] = th[READ_PASSES / 2];
    t[2] = td[0];
    t[3] = th[0];
    return same;
}

static const char *verdict(double ratio)
{
    return ratio >= 2 ? "met" : "MISSED";
}

/* One drx variant's line. */
static void print_drx(const char *what, const struct run *r, double mb)
{
    printf("  drx, %s: %.3f s (%.0f MB/s): extend %.3f s, write_all %.3f s, close %.3f s\n", what,
           r->t, mb / r->t, r->extend, r->write, r->close);
}

/* Rank 0 prints the grow-and-write figures: each variant, then each
 * pairing at one guarantee with its ratio against the 2x target. */
static void print_grow(const struct run v[5], const struct run *raw, int runs)
{
    const struct run *dd = &v[0], *db = &v[1], *dn = &v[2], *hd = &v[3], *hn = &v[4];
    double mb = (double)steps * CT * yx * yx * 8 / 1e6, x;

    printf("grow and write, P=%d, %d steps of %dx%dx%d f64 (%.0f MB), chunks %dx%dx%d, best of "
           "%d runs:\n",
           np, steps, CT, yx, yx, mb, CT, CY, CX, runs);
    print_drx("DRX_MP_SYNC_EXTEND (default, durable at every extend)", dd, mb);
    print_drx("DRX_MP_SYNC_BATCH (durable at close)", db, mb);
    print_drx("DRX_MP_SYNC_NONE (page cache at close)", dn, mb);
    printf("  HDF5, default fill (chunks written twice): %.3f s to H5Fclose, %.3f s with an "
           "fsync\n",
           hd->t, hd->tsync);
    printf("  HDF5, H5D_FILL_TIME_NEVER: %.3f s to H5Fclose, %.3f s with an fsync\n", hn->t,
           hn->tsync);
    printf("  floor, pwrite of the same bytes in 512 KiB pieces: %.3f s (%.0f MB/s), %.3f s with "
           "an fsync (the better of plain and early writeback)\n",
           raw->t, mb / raw->t, raw->tsync);
    printf("speed ratios at the same guarantee (target >= 2x):\n");
    x = hd->t / dn->t;
    printf("  page cache at close: drx NONE / HDF5 default fill:   %.2fx  %s\n", x, verdict(x));
    x = hn->t / dn->t;
    printf("  page cache at close: drx NONE / HDF5 fill-never:     %.2fx  %s\n", x, verdict(x));
    x = hd->tsync / db->t;
    printf("  durable at close: drx BATCH / HDF5 default fill + fsync: %.2fx  %s\n", x,
           verdict(x));
    x = hn->tsync / db->t;
    printf("  durable at close: drx BATCH / HDF5 fill-never + fsync:   %.2fx  %s\n", x,
           verdict(x));
    printf("  (drx default, durable at every extend / HDF5 fill-never + fsync: %.2fx)\n",
           hn->tsync / dd->t);
    /* what a writer at the floor would reach: the most any ratio can be */
    printf("  time over the floor's at the same guarantee: drx NONE %.2f, BATCH %.2f; HDF5 "
           "default fill %.2f, fill-never %.2f; with an fsync %.2f, %.2f\n",
           dn->t / raw->t, db->t / raw->tsync, hd->t / raw->t, hn->t / raw->t,
           hd->tsync / raw->tsync, hn->tsync / raw->tsync);
}

int main(int argc, char **argv)
{
    char drx[4096], h5[4096], raw[4096];
    /* drx extend, batch, none; HDF5 default fill, fill never */
    struct run v[5] = {{0}}, rw = {0}, r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    steps = getenv("DRX_BENCH_MP_STEPS") ? atoi(getenv("DRX_BENCH_MP_STEPS")) : 64;
    yx = getenv("DRX_BENCH_MP_YX") ? atoi(getenv("DRX_BENCH_MP_YX")) : 512;
    int runs = getenv("DRX_BENCH_MP_RUNS") ? atoi(getenv("DRX_BENCH_MP_RUNS")) : 2;
    snprintf(drx, sizeof(drx), "%s/bench_mp_drx", argc > 1 ? argv[1] : ".");
    snprintf(h5, sizeof(h5), "%s/bench_mp.h5", argc > 1 ? argv[1] : ".");
    snprintf(raw, sizeof(raw), "%s/bench_mp.raw", argc > 1 ? argv[1] : ".");
    for (int i = 0; i < runs; i++) {
        r = drx_grow(drx, DRX_MP_SYNC_EXTEND);
        keep_best(&v[0], &r);
        r = h5_grow(h5, false);
        keep_best(&v[3], &r);
        r = drx_grow(drx, DRX_MP_SYNC_BATCH);
        keep_best(&v[1], &r);
        r = h5_grow(h5, true);
        keep_best(&v[4], &r);
        r = drx_grow(drx, DRX_MP_SYNC_NONE);
        keep_best(&v[2], &r);
        /* plain, with early writeback, plain: a plain run writes into
         * the folios the run before freed (see remove_files), whatever
         * memory the first was given */
        for (int j = 0; j < 3; j++) {
            r = raw_grow(raw, j == 1);
            keep_best(&rw, &r);
        }
    }
    double t[4];
    bool same = read_both(drx, h5, t);
    double all = (double)(steps + 1) * CT * yx * yx * 8 / 1e6;
    if (me == 0) {
        print_grow(v, &rw, runs);
        printf("whole-array read_all (zones, C order, hot), %.0f MB, %d alternating passes:\n", all,
               READ_PASSES);
        printf("  drx median %.4f s (%.0f MB/s), best %.4f s; HDF5 collective H5Dread median %.4f s "
               "(%.0f MB/s), best %.4f s\n",
               t[0], all / t[0], t[2], t[1], all / t[1], t[3]);
        printf("  speed drx / HDF5: %.2fx median, %.2fx best\n", t[1] / t[0], t[3] / t[2]);
    }
    /* the same values were read from both (rank sums compared) */
    if (!same)
        fprintf(stderr, "bench_mp: rank %d: drx and HDF5 read different sums\n", me);
    remove_files(drx, true);
    remove_files(h5, false);
    remove_files(raw, false);
    MPI_Finalize();
    return !same;
}
