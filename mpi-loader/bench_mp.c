/* Benchmark of libdrxmp against parallel HDF5 (meson test --benchmark
 * drx-mp; run under mpiexec -n 2 by meson).
 *
 *   bench_mp DIR
 *
 * Grow and write: a 3-D f64 array time x y x of chunks CT x CY x CX starts
 * one chunk thick in time; each step grows time by one chunk and the ranks
 * write the new slab, split along y at chunk boundaries (rank r the r-th
 * part).  drx: drx_mp_extend + drx_mp_write_all; HDF5: H5Dset_extent +
 * collective H5Dwrite, same chunk shape, through the MPI-IO driver.  Both
 * timed from create to close (drx_mp_close syncs the data; drx_mp_extend
 * fdatasyncs before every .xmd, HDF5 syncs nothing: the HDF5 file is
 * fsynced after its close, and that is timed too, as a second figure).
 * Then a whole-array read: every rank reads its zone (drx_mp_zone) in C
 * order with drx_mp_read_all, and the same box with a collective H5Dread;
 * page cache hot for both (each read once untimed first).
 * Environment: DRX_BENCH_MP_STEPS (64), DRX_BENCH_MP_YX (512).
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
static double t_extend, t_write; /* drx's time in each call, summed */

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

static double drx_grow(const char *path)
{
    drx_mp *a;
    int64_t shape[3] = {CT, yx, yx}, chunk[3] = {CT, CY, CX}, y0, y1;
    my_rows(&y0, &y1);
    double *v = slab(y0, y1, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (drx_mp_create(MPI_COMM_WORLD, path, "f64", 3, shape, chunk, &a) < 0)
        die("drx_mp_create", drx_mp_error());
    for (int s = 1; s <= steps; s++) {
        int64_t lo[3] = {(int64_t)s * CT, y0, 0}, hi[3] = {(int64_t)(s + 1) * CT, y1, yx};
        double t1 = MPI_Wtime();
        if (drx_mp_extend(a, 0, CT) < 0)
            die("drx_mp_extend", drx_mp_error());
        double t2 = MPI_Wtime();
        if (drx_mp_write_all(a, lo, hi, 'C', v) < 0)
            die("drx_mp_write_all", drx_mp_error());
        t_extend += t2 - t1;
        t_write += MPI_Wtime() - t2;
    }
    if (drx_mp_close(&a) < 0)
        die("drx_mp_close", drx_mp_error());
    double t = MPI_Wtime() - t0;
    free(v);
    return t;
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

static double h5_grow(const char *path, double *tsync)
{
    int64_t y0, y1;
    my_rows(&y0, &y1);
    double *v = slab(y0, y1, 1);
    hsize_t dims[3] = {CT, (hsize_t)yx, (hsize_t)yx}, maxd[3] = {H5S_UNLIMITED, dims[1], dims[2]};
    hsize_t ch[3] = {CT, CY, CX};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    hid_t f = h5_open_file(path, true);
    hid_t sp = H5Screate_simple(3, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, ch);
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
    double t = MPI_Wtime() - t0;
    if (me == 0) {
        int fd = open(path, O_RDONLY);
        fsync(fd);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    *tsync = MPI_Wtime() - t0;
    free(v);
    return t;
}

static double drx_read(const char *path, double *sum)
{
    drx_mp *a;
    int64_t lo[3], hi[3];
    if (drx_mp_open(MPI_COMM_WORLD, path, 0, &a) < 0)
        die("drx_mp_open", drx_mp_error());
    drx_mp_zone(a, me, lo, hi);
    size_t n = (size_t)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
    double *v = malloc((n ? n : 1) * sizeof(*v)), t = 0;
    for (int pass = 0; pass < 2; pass++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (drx_mp_read_all(a, lo, hi, 'C', v) < 0)
            die("drx_mp_read_all", drx_mp_error());
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime() - t0;
    }
    *sum = 0;
    for (size_t i = 0; i < n; i++)
        *sum += v[i];
    drx_mp_close(&a);
    free(v);
    return t;
}

/* The same boxes as drx's zones (a drx handle tells them). */
static double h5_read(const char *path, const char *drxpath, double *sum)
{
    drx_mp *a;
    int64_t lo[3], hi[3];
    if (drx_mp_open(MPI_COMM_WORLD, drxpath, 0, &a) < 0)
        die("drx_mp_open", drx_mp_error());
    drx_mp_zone(a, me, lo, hi);
    drx_mp_close(&a);
    hsize_t start[3], count[3];
    size_t n = 1;
    for (int d = 0; d < 3; d++) {
        start[d] = (hsize_t)lo[d];
        count[d] = (hsize_t)(hi[d] - lo[d]);
        n *= count[d];
    }
    double *v = malloc((n ? n : 1) * sizeof(*v)), t = 0;
    hid_t f = h5_open_file(path, false), d = H5Dopen2(f, "a", H5P_DEFAULT);
    hid_t dx = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE);
    for (int pass = 0; pass < 2; pass++) {
        hid_t fs = H5Dget_space(d), ms = H5Screate_simple(3, count, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, dx, v) < 0)
            die("H5Dread", "failed");
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime() - t0;
        H5Sclose(ms);
        H5Sclose(fs);
    }
    *sum = 0;
    for (size_t i = 0; i < n; i++)
        *sum += v[i];
    H5Pclose(dx);
    H5Dclose(d);
    H5Fclose(f);
    free(v);
    return t;
}

int main(int argc, char **argv)
{
    char drx[4096], h5[4096];
    double th5sync, sd, sh;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    steps = getenv("DRX_BENCH_MP_STEPS") ? atoi(getenv("DRX_BENCH_MP_STEPS")) : 64;
    yx = getenv("DRX_BENCH_MP_YX") ? atoi(getenv("DRX_BENCH_MP_YX")) : 512;
    snprintf(drx, sizeof(drx), "%s/bench_mp_drx", argc > 1 ? argv[1] : ".");
    snprintf(h5, sizeof(h5), "%s/bench_mp.h5", argc > 1 ? argv[1] : ".");
    if (me == 0) {
        unlink(h5);
        char x[4200];
        snprintf(x, sizeof(x), "%s.xmd", drx);
        unlink(x);
        snprintf(x, sizeof(x), "%s.xta", drx);
        unlink(x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double mb = (double)steps * CT * yx * yx * 8 / 1e6;
    double td = drx_grow(drx), th = h5_grow(h5, &th5sync);
    double rd = drx_read(drx, &sd), rh = h5_read(h5, drx, &sh);
    double all = (double)(steps + 1) * CT * yx * yx * 8 / 1e6;
    if (me == 0) {
        printf("grow and write, P=%d, %d steps of %dx%dx%d f64 (%.0f MB), chunks %dx%dx%d:\n", np,
               steps, CT, yx, yx, mb, CT, CY, CX);
        printf("  drx: %.3f s (%.0f MB/s)   HDF5: %.3f s (%.0f MB/s), %.3f s with an fsync\n", td,
               mb / td, th, mb / th, th5sync);
        printf("  drx's time in extend %.3f s, in write_all %.3f s\n", t_extend, t_write);
        printf("  speed drx / HDF5: %.2fx (%.2fx against HDF5 with its fsync)  target >= 2x: %s\n",
               th / td, th5sync / td, th / td >= 2 ? "met" : "MISSED");
        printf("whole-array read_all (zones, C order, hot), %.0f MB:\n", all);
        printf("  drx: %.3f s (%.0f MB/s)   HDF5: %.3f s (%.0f MB/s)   speed drx / HDF5: %.2fx\n",
               rd, all / rd, rh, all / rh, rh / rd);
    }
    /* the same values were read from both (rank sums compared) */
    if (sd != sh)
        fprintf(stderr, "bench_mp: rank %d: drx and HDF5 read different sums\n", me);
    MPI_Finalize();
    return sd != sh;
}
