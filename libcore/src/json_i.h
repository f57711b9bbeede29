/* libcore-private JSON helpers over libjansson: every JSON document libcore
 * writes (info, the Zarr metadata) is built as a jansson tree and dumped by
 * the library, so strings are always escaped correctly.
 *
 * jansson has no value for a number it cannot hold (NaN, infinities, a u64
 * above INT64_MAX) nor for the shortest text of a float: such a number is a
 * raw token, a marked string that drx_json_dump replaces by the token. */
#ifndef DRX_JSON_I_H
#define DRX_JSON_I_H

#include <jansson.h>
#include <stdint.h>

#include "drx/types.h"

/* A number written as `token` ([0-9A-Za-z.+-], at most 63 bytes), or NULL. */
json_t *drx_json_raw(const char *token);

/* A u64 as a JSON number (raw above INT64_MAX). */
json_t *drx_json_u64(uint64_t v);

/* An array of n u64 numbers. */
json_t *drx_json_u64_list(const uint64_t *v, int n);

/* How a value that is not a finite number is written. */
enum drx_json_nonfinite {
    DRX_JSON_NONFINITE_STRING, /* "nan", "inf", "-inf" (strict JSON: info) */
    DRX_JSON_NONFINITE_BARE,   /* NaN, Infinity, -Infinity (Python's json, Zarr's .zattrs) */
    DRX_JSON_NONFINITE_ZARR,   /* "NaN", "Infinity", "-Infinity" (Zarr's fill_value) */
};

/* One value of the non-complex type t (native bytes at p) as a JSON
 * number: integers exact, floats in the shortest text that reads back bit
 * for bit. */
json_t *drx_json_value(enum drx_type t, const void *p, enum drx_json_nonfinite nf);

/* Dumps root (not consumed) with jansson's flags plus a final newline, the
 * raw tokens put in.  A malloc'ed string, or NULL (out of memory, or a
 * string of the document that imitates a raw token's mark). */
char *drx_json_dump(const json_t *root, size_t flags);

/* drx_json_dump with every list of scalars on one line ("shape": [4, 6]):
 * JSON_INDENT objects, compact lists. */
char *drx_json_dump_lines(const json_t *root, size_t flags);

/* Parses len bytes of JSON (not NUL-terminated) as drx_json_dump writes
 * it: NaN, Infinity, -Infinity and integers past json_int_t (which
 * jansson refuses) become the raw tokens they are, so two documents are
 * json_equal when their values are, whoever wrote them (Python's json
 * writes such tokens as they are).  NULL when it is not JSON or out of
 * memory. */
json_t *drx_json_load(const void *text, size_t len);

/* json_object_set_new that reports failure (value NULL counts as one).
 * 0 or -ENOMEM. */
int drx_json_set(json_t *obj, const char *key, json_t *value);

#endif
