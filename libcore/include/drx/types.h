/* Element types of arrays and their byte representations. */
#ifndef DRX_TYPES_H
#define DRX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drx/err.h"

/* Highest rank an array may have (HDF5 allows 32; 16 keeps records small). */
#define DRX_MAX_RANK 16

/* Largest element a type can have (c128). */
#define DRX_MAX_ELEM 16

enum drx_type {
    DRX_I8, DRX_I16, DRX_I32, DRX_I64,
    DRX_U8, DRX_U16, DRX_U32, DRX_U64,
    DRX_F32, DRX_F64, DRX_C64, DRX_C128,
    DRX_NTYPES
};

/* Byte order/representation of element data handed to a caller. */
enum drx_rep {
    DRX_REP_NATIVE,     /* this machine's */
    DRX_REP_EXTERNAL32, /* MPI external32: big-endian IEEE, two's complement */
};

/* Parses "f64" etc.  Returns 0, or -EINVAL with a message naming the word. */
int drx_type_parse(const char *name, enum drx_type *out, struct drx_err *err);
const char *drx_type_name(enum drx_type t);
size_t drx_type_size(enum drx_type t);
bool drx_type_is_complex(enum drx_type t);

/* NumPy descr string for a type in a representation, e.g. "<f8", ">c16". */
const char *drx_type_npy_descr(enum drx_type t, enum drx_rep rep);

/* Parses a value ("-1", "0.5", "nan", complex "1.5,-2") into its native
 * bytes at out (drx_type_size(t) bytes). 0 or -EINVAL/-ERANGE. */
int drx_type_parse_value(enum drx_type t, const char *text, void *out, struct drx_err *err);

/* Writes a value so that drx_type_parse_value() gives back the same bytes. */
void drx_type_format_value(enum drx_type t, const void *value, char *buf, size_t len);

/* Converts n elements in place between native and rep (the conversion is
 * its own inverse).  Complex numbers are swapped per component. */
void drx_type_convert(enum drx_type t, enum drx_rep rep, void *buf, size_t n);

/* True when converting to rep changes bytes on this machine. */
bool drx_type_rep_swaps(enum drx_type t, enum drx_rep rep);

#endif
