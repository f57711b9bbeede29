/* DRX-MP: extendible arrays for MPI programs (the paper's section IV.C).
 *
 * Every process of a communicator opens the same array; each owns a zone,
 * a rectilinear box of chunks (drx_mp_zone), and reads or writes any box
 * of elements, in C or Fortran order in its memory, with collective
 * MPI-IO.  The array grows along any dimension while the program runs
 * (drx_mp_extend); nothing already written moves.
 *
 * Calls marked collective must be made by every rank of the communicator
 * given at create/open, in the same order, with the same arguments where
 * the array is concerned (path, type, shape, chunk, dimension, count): they
 * return 0 or the same negative errno on every rank, and a rank that
 * passes different arguments makes the call fail with -EINVAL on every
 * rank, changing nothing.  drx_mp_error() then gives the reason, the same
 * line on every rank (from the lowest rank that failed).
 *
 * Boxes are element ranges [lo, hi) in array coordinates, each rank its
 * own; a box that is empty along any dimension still takes part in the
 * collective.  Memory holds the box's elements in the native
 * representation, row-major ('C') or column-major ('F').
 *
 * Build: mpicc app.c $(pkg-config --cflags --libs drxmp)
 */
#ifndef DRX_MP_H
#define DRX_MP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct drx_mp drx_mp;

/* Collective.  Creates array path (a store path, or the same path under a
 * drxfs mount; -EEXIST when it exists) of rank k, element type `type` (i8
 * i16 i32 i64 u8 u16 u32 u64 f32 f64 c64 c128), bounds shape[] and chunk
 * shape chunk[] (each >= 1), fill 0, and opens it writable.  *out is the
 * handle (NULL on failure); close with drx_mp_close. */
int drx_mp_create(MPI_Comm comm, const char *path, const char *type, int k, const int64_t shape[],
                  const int64_t chunk[], drx_mp **out);

/* Collective.  drx_mp_create with dimension names: dims "time,y,x" (as
 * `drx create --dims`: k names of letters, digits and _, not order, rep
 * or dimN, each at most 64 bytes; NULL or "": none), which view words,
 * data.nc and zarr/ use. */
int drx_mp_create_dims(MPI_Comm comm, const char *path, const char *type, int k,
                       const int64_t shape[], const int64_t chunk[], const char *dims,
                       drx_mp **out);

/* Collective.  Opens an existing array; writable != 0 allows write_all
 * and extend. */
int drx_mp_open(MPI_Comm comm, const char *path, int writable, drx_mp **out);

/* Not collective.  The array's rank k. */
int drx_mp_rank(const drx_mp *a);

/* Not collective.  The current bounds (k numbers); 0.  On a rank that
 * could not read the array's metadata back after an extension (its
 * collective calls fail with -EIO until drx_mp_sync opens the array
 * again): zeros and -EIO, as drx_mp_zone (the empty box). */
int drx_mp_bounds(const drx_mp *a, int64_t bounds[]);

/* Not collective.  The element box [lo, hi) of the zone of rank `proc` of
 * the communicator: the process grid MPI_Dims_create(P, k) over the chunk
 * grid, each dimension's chunk indices split BLOCK (the first ranks take
 * one more), ranks in row-major order of the grid; clamped to the bounds.
 * A rank without chunks gets the empty box lo = hi = 0.  Returns 0, or
 * -EINVAL for a proc outside 0..P-1.  Zones follow the chunk grid after
 * an extension. */
int drx_mp_zone(const drx_mp *a, int proc, int64_t lo[], int64_t hi[]);

/* Collective.  Reads this rank's box [lo, hi) into buf in order 'C' or
 * 'F'.  -EINVAL for a box outside the bounds (0 <= lo <= hi <= bounds) or
 * another order. */
int drx_mp_read_all(drx_mp *a, const int64_t lo[], const int64_t hi[], char order, void *buf);

/* Collective.  Writes this rank's box from buf.  Every write holds an OFD
 * lock on exactly the .xta bytes it writes, so other writers (drxfs, drx
 * put, drx-load) never lose bytes; chunks the box covers in part are
 * merged under the lock.  Boxes of different ranks may share chunks (the
 * ranks then take turns, in rank order: where boxes overlap, the highest
 * rank's elements stay).  The data is on disk after the next
 * drx_mp_extend (which fdatasyncs first; not in DRX_MP_SYNC_BATCH),
 * drx_mp_sync or drx_mp_close (MPI_File_sync; in DRX_MP_SYNC_NONE only
 * when the kernel writes it back). */
int drx_mp_write_all(drx_mp *a, const int64_t lo[], const int64_t hi[], char order,
                     const void *buf);

/* Collective.  Grows dimension dim by count (> 0) elements: rank 0 writes
 * the new segment (fill) and then the .xmd atomically; every rank sees the
 * new bounds on return, and so does a drxfs mount at once (in
 * DRX_MP_SYNC_BATCH: at the next drx_mp_sync).  A failing extension
 * changes nothing, except when rank 0 recorded it and another rank could
 * not read it back (-EIO, "the extension is recorded, but rank R could
 * not read it"): that rank's later calls fail (-EIO on every rank) until
 * drx_mp_sync opens the array again there. */
int drx_mp_extend(drx_mp *a, int dim, int64_t count);

/* When written data and growths become durable.  DRX_MP_SYNC_EXTEND (the
 * default): every drx_mp_extend is a durable commit, after syncing what
 * was written before it, and a drxfs mount shows it at once.
 * DRX_MP_SYNC_BATCH (as HDF5 until H5Fflush): drx_mp_extend grows the
 * array for the ranks at once, but its growth is recorded in the .xmd
 * only by the next drx_mp_sync or drx_mp_close, after the data written so
 * far is on disk; until then other programs (a mount, drx) see the array
 * as of the last sync, and other extensions of it wait.  A crash keeps
 * everything up to the last sync and loses the growths after it (drx fsck
 * --repair cuts their chunks); later writes into chunks committed before
 * it may or may not have reached the disk, as any unsynced write.
 * DRX_MP_SYNC_NONE (HDF5's and netCDF's guarantee at close): as
 * DRX_MP_SYNC_BATCH, but drx_mp_sync and drx_mp_close record the growths
 * without syncing the data first; the data is in the page cache, durable
 * when the kernel writes it back.  A killed process (any rank, kill -9)
 * loses nothing that was written before the last drx_mp_sync or
 * drx_mp_close returned; a power loss may leave growth records that name
 * chunks whose bytes never reached the disk: they read as zeros (or as
 * the bytes that were there before), and drx fsck does not see that; or
 * an .xta shorter than its metadata, which drx fsck reports ("chunks
 * lost") and does not repair.  The SPEC's rule that no record names data
 * not on disk holds only in the two other modes.
 * Collective (the same mode on every rank).  Switching to a mode that
 * promises more (NONE < BATCH < EXTEND) first makes everything written
 * and grown durable; switching to one that promises less keeps pending
 * growths pending.  0 or -EINVAL. */
#define DRX_MP_SYNC_EXTEND 0
#define DRX_MP_SYNC_BATCH 1
#define DRX_MP_SYNC_NONE 2
int drx_mp_set_sync(drx_mp *a, int mode);
/* Collective.  What write_all wrote is on disk (MPI_File_sync), then the
 * growths pending in DRX_MP_SYNC_BATCH are recorded; in DRX_MP_SYNC_NONE
 * the growths are recorded and nothing is synced but the records. */
int drx_mp_sync(drx_mp *a);
/* Collective.  drx_mp_sync, then closes *a and sets it to NULL (NULL or *a
 * NULL: no-op, 0). */
int drx_mp_close(drx_mp **a);

/* Collective.  Sets attribute `name` of the array (units, long_name,
 * scale_factor, ...: what `drx attr set` sets, shown in info, data.nc and
 * zarr/), replacing one of that name: `type` NULL, "" or "string" keeps
 * value as it is (UTF-8 text); an element type name but c64 and c128
 * ("f64", ...) parses one number or several separated by commas.  The
 * same name, type and value on every rank.  Growths pending in
 * DRX_MP_SYNC_BATCH or _NONE are recorded first, as drx_mp_sync records
 * them (the .xmd is rewritten whole); then rank 0 records the attribute
 * and every rank sees it on return.  -EINVAL for a name netCDF refuses,
 * "_FillValue", "_ARRAY_DIMENSIONS" or "drx_*" (the array's own), or a
 * value that does not parse; -EBADF on a read-only handle. */
int drx_mp_attr_set(drx_mp *a, const char *name, const char *type, const char *value);

/* Collective.  Removes attribute `name` (-ENOENT when there is none),
 * as drx_mp_attr_set changes one. */
int drx_mp_attr_rm(drx_mp *a, const char *name);

/* Not collective.  Attribute `name` as text, as `drx attr get` prints it
 * (a string as it is, numbers separated by commas), into buf (size bytes,
 * always NUL-terminated when size > 0, cut when short): the text's length
 * (as snprintf: size <= that means it was cut), or -ENOENT when there is
 * none (-EINVAL without a name or buffer, -EIO on a broken rank, -ENOMEM).
 * What this rank read last: another program's change shows after this
 * program's next drx_mp_extend or attribute change, which read the
 * metadata again (drx_mp_sync does not). */
int drx_mp_attr_get(const drx_mp *a, const char *name, char *buf, size_t size);

/* Not collective.  Bytes of one element. */
size_t drx_mp_elem_size(const drx_mp *a);

/* Not collective.  Bytes per rank per round of I/O (default 64 MiB, at
 * least one chunk is moved per round); 0 or -EINVAL outside 1..1 GiB. */
int drx_mp_set_buffer(drx_mp *a, size_t bytes);

/* The reason of this process's last failed call (one line), or "". */
const char *drx_mp_error(void);

/* For the Fortran module (MPI_Comm as its Fortran handle).
 * drx_mp_create_fk takes the lengths of shape and chunk (Fortran's size()
 * of each), which must agree, else -EINVAL on every rank (a short chunk
 * was read past its end); dims "" for none.  The module calls it; the _f
 * forms without the lengths stay for modules built before 2026-12-07. */
int drx_mp_create_fk(MPI_Fint comm, const char *path, const char *type, int k, int kchunk,
                     const int64_t shape[], const int64_t chunk[], const char *dims,
                     drx_mp **out);
int drx_mp_create_f(MPI_Fint comm, const char *path, const char *type, int k, const int64_t shape[],
                    const int64_t chunk[], drx_mp **out);
int drx_mp_create_dims_f(MPI_Fint comm, const char *path, const char *type, int k,
                         const int64_t shape[], const int64_t chunk[], const char *dims,
                         drx_mp **out);
int drx_mp_open_f(MPI_Fint comm, const char *path, int writable, drx_mp **out);

#ifdef __cplusplus
}
#endif

#endif
