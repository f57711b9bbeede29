/* Byte formats of a view's files beyond raw `data`: the NumPy header of
 * `data.npy` and the netCDF classic header of `data.nc` (SPEC section 4).
 *
 * A format is a header followed by the view's elements in the format's
 * representation and a few bytes of padding; the header is computed from
 * the metadata alone, so a file's size is known without reading a chunk.
 */
#ifndef DRX_FORMAT_H
#define DRX_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drx/array.h"
#include "drx/view.h"

/* NumPy .npy v1.0: descr, fortran_order, shape, byte for byte as NumPy
 * 1.24 writes it (padded to 64 bytes), so np.save() of a same-shaped array
 * writes through it.  Writes the header to buf when buf is not NULL (buf
 * holds *len bytes from an earlier call with buf NULL) and sets *len
 * either way.  -EFBIG when the header would pass 64 KiB (rank 16 of huge
 * extents cannot). */
int drx_npy_header(const struct drx_view *v, char *buf, size_t *len);

/* netCDF classic, one variable.  Its name is `name` with every character
 * outside netCDF's rules ([A-Za-z0-9_.@+-], not starting with a digit or
 * one of ".@+-") replaced by '_'; dimensions are the array's names (dimK
 * when unnamed), reversed for order=F; the first of them (the slowest) is
 * the record (unlimited) dimension, whose extent is the number of records;
 * attributes _FillValue and the view's
 * drx_origin and drx_step in array coordinates (in the variable's dimension
 * order).  CDF-2 (64-bit offset) when the type is i8, i16, i32, f32 or f64
 * and every extent fits in 31 bits, CDF-5 otherwise.  The data that
 * follows the header is the view's elements in order v->order, big-endian
 * (rep=external32): the one record variable's records, one after the
 * other, unpadded (netCDF's special case), and no padding after them.
 *
 * Writes the header to buf when buf is not NULL (buf holds *len bytes from
 * an earlier call with buf NULL) and sets *len to its size either way; with
 * buf NULL nothing is formatted.
 * -ENOTSUP for complex types, -ENOENT for an empty view (an extent of 0
 * in the header marks the record dimension). */
int drx_nc_header(const struct drx_array_meta *m, const struct drx_view *v, const char *name,
                  unsigned char *buf, size_t *len);

/* A coordinate variable of data.nc: the 1-D array `meta` labels array
 * dimension `dim` (a named one; the variable takes its name).  data: the
 * view's v->count[dim] elements of it (its elements origin[dim] + i *
 * step[dim]), big-endian; NULL when only the size is asked for. */
struct drx_nc_coord {
    int dim;
    const struct drx_array_meta *meta;
    const void *data;
};

/* The records of a data.nc: `count` of them, `size` bytes apart, from the
 * end of the header and fixed coordinates (drx_nc_file_header's *len).
 * Without a coordinate of the record dimension (coord 0) the variable is
 * the only record variable, size == slab: its elements are contiguous.
 * With one, each record is that coordinate's element (coord bytes, of
 * coord_data, zeros to 4 bytes), then the variable's slab bytes of the
 * record (zeros to 4 bytes). */
struct drx_nc_records {
    uint64_t count;         /* records: the view's extent along its first dimension */
    uint64_t slab;          /* bytes of the variable in one record */
    uint64_t size;          /* bytes from one record to the next */
    uint64_t coord;         /* bytes of the record coordinate in a record; 0: none */
    const void *coord_data; /* its count elements, big-endian (coords[]'s data) */
};

/* drx_nc_header with coordinate variables: they come first (in the order
 * given), each with the coordinate array's attributes, and *len covers the
 * header and the data of those of fixed size (each padded to 4 bytes),
 * which buf then holds; the records follow, as *records (may be NULL)
 * says: the coordinate of the record dimension, if given, is in them.
 * -EINVAL for a coordinate that is not 1-D, is complex, or labels an
 * unnamed or unknown dimension. */
int drx_nc_file_header(const struct drx_array_meta *m, const struct drx_view *v, const char *name,
                       const struct drx_nc_coord *coords, int ncoords, unsigned char *buf,
                       size_t *len, struct drx_nc_records *records);

/* Zarr v2: the `zarr/` group of an array directory (README, "Zarr").  A
 * variable is an array of the store seen as a Zarr array: the array itself,
 * or a coordinate variable cut to its dimension's length.  Chunks are the
 * array's own chunks: key "i.j.k" is chunk (i, j, k), whose bytes are the
 * chunk's bytes in the .xta at its F* address, so dtype is the native
 * (little-endian) type, order "C", no compressor and no filters. */
struct drx_zarr_var {
    const char *name;                  /* its key in the group */
    const struct drx_array_meta *meta; /* its array */
    uint64_t shape[DRX_MAX_RANK];      /* meta->bounds, or less (a coordinate) */
    const char *dims[DRX_MAX_RANK];    /* dimension names (_ARRAY_DIMENSIONS) */
    bool coord;                        /* a coordinate variable: fill_value null */
};

/* The documents, malloc'ed JSON text written with libjansson, or NULL when
 * out of memory.  .zarray: chunks, dtype, fill_value (NaN and infinities
 * as the strings Zarr writes; null for a coordinate, which data.nc gives no
 * _FillValue either, so that readers mask none of its values), shape.
 * .zattrs: _ARRAY_DIMENSIONS and the array's attributes (a single number
 * as a scalar, NaN and infinities as Python's json writes them).  The
 * group's .zgroup and .zattrs ({}), and .zmetadata: all of them,
 * consolidated, for vars[0..n-1]. */
char *drx_zarr_zarray(const struct drx_zarr_var *v);
char *drx_zarr_zattrs(const struct drx_zarr_var *v);
char *drx_zarr_zgroup(void);
char *drx_zarr_group_zattrs(void);
char *drx_zarr_zmetadata(const struct drx_zarr_var *vars, int n);

/* Chunks in the grid of v: ceil(shape / chunk) along each dimension. */
uint64_t drx_zarr_nkeys(const struct drx_zarr_var *v);
/* The i-th key (grid row-major order) into buf.  0, or -ERANGE. */
int drx_zarr_key_name(const struct drx_zarr_var *v, uint64_t i, char *buf, size_t len);
/* The chunk address (F*) of key: 0 with *q set, or -ENOENT when key is not
 * "i.j..." in decimal with one index per dimension inside the grid. */
int drx_zarr_key_parse(const struct drx_zarr_var *v, const char *key, uint64_t *q);

/* Stores buf, a whole chunk of v's array (chunk_bytes long), as chunk `key`
 * in place: one pwrite at its F* address under the chunk's span lock.
 * Elements beyond the array's bounds are stored as the fill whatever buf
 * holds (buf is changed), and for a coordinate cut shorter than its array
 * only the part inside the cut is written.  a must be v->meta's handle,
 * opened DRX_RDWR.  0, or -ENOENT (key), -EINVAL (size), -errno of the
 * write, with one line in err; nothing is written unless 0. */
int drx_zarr_chunk_store(struct drx_array *a, const struct drx_zarr_var *v, const char *key,
                         void *buf, size_t len, struct drx_err *err);

/* True when text (len bytes) is the document ours: the same bytes, or JSON
 * that parses equal (a client writing back what it read). */
bool drx_zarr_json_same(const char *ours, const void *text, size_t len);

/* True (1) when text (len bytes) is the .zarray document ours of a
 * rank-`rank` variable with a larger shape (zarr's resize, as xarray's
 * to_zarr(append_dim=...) does): every other member the same, no extent
 * smaller, one larger at least; shape[] then holds the new extents.
 * Else 0. */
int drx_zarr_zarray_grown(const char *ours, const void *text, size_t len, int rank,
                          uint64_t shape[]);

#endif
