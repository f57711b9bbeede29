/* Attributes of an array (units, long_name, scale_factor, ...): a string, or
 * one or more numbers of a non-complex element type.  Kept in the .xmd
 * (README, "The .xmd file"); shown in info and data.nc. */
#ifndef DRX_ATTR_H
#define DRX_ATTR_H

#include <stdbool.h>
#include <stddef.h>

#include "drx/err.h"
#include "drx/types.h"

/* Longest attribute name (netCDF's NC_MAX_NAME). */
#define DRX_MAX_ATTR_NAME 255
/* Largest value: a string's bytes, or numbers x element size.  Attributes
 * are labels, and every one is rewritten with each extension. */
#define DRX_MAX_ATTR_BYTES 65536
/* Attributes per array at most. */
#define DRX_MAX_ATTRS 1024

struct drx_attr {
    char *name;
    bool is_string;     /* else numbers of type */
    enum drx_type type; /* numbers only */
    size_t n;           /* numbers, or the string's length */
    void *value;        /* native elements, or the string NUL-terminated */
};

/* netCDF's rule, [A-Za-z_][A-Za-z0-9_.@+-]*, at most DRX_MAX_ATTR_NAME
 * bytes; "_FillValue" (the array's fill) and "drx_*" (data.nc's own) are
 * refused.  0, or -EINVAL with the reason in err. */
int drx_attr_name_check(const char *name, struct drx_err *err);

/* Whether name is a CF attribute that readers take as a number
 * (scale_factor, add_offset, missing_value, valid_*, actual_range,
 * flag_values, flag_masks): as a string, xarray's decoding fails on the
 * variable, so the front ends warn when one is made a string. */
bool drx_attr_cf_number(const char *name);

/* Builds an attribute from text: type NULL or "string" keeps text as it is;
 * an element type name ("f64", ...) parses one number or several separated
 * by commas.  0 with *out filled (drx_attr_fini it), or -EINVAL/-ERANGE/
 * -E2BIG/-ENOMEM with one line in err and *out zeroed. */
int drx_attr_parse(const char *name, const char *type, const char *text, struct drx_attr *out,
                   struct drx_err *err);

/* The value as text: the string itself, or the numbers as
 * drx_type_format_value writes them, separated by ",".  A malloc'ed string,
 * or NULL when out of memory. */
char *drx_attr_format(const struct drx_attr *a);

/* "string" or the element type's name. */
const char *drx_attr_type_name(const struct drx_attr *a);

/* Deep copy.  0 or -ENOMEM. */
int drx_attr_copy(struct drx_attr *dst, const struct drx_attr *src);

void drx_attr_fini(struct drx_attr *a); /* safe on a zeroed struct */

#endif
