/* The short values users hand the daemon and the tools: an attribute
 * (`user.` xattr name, type and value, `drx attr set`), element values
 * (fill, numbers), byte counts (cache_bytes=, --extent), a stripe layout
 * (user.drx.stripe), a Zarr chunk key written through the mount, and Zarr
 * metadata written over .zarray.  The input is "NAME\0TYPE\0TEXT": each
 * part as the one that takes it; the whole input as the written .zarray. */
#include <stdlib.h>
#include <string.h>

#include "array_i.h"
#include "drx/attr.h"
#include "drx/config.h"
#include "drx/format.h"
#include "drx/stripe.h"
#include "fuzz.h"

static struct drx_array_meta meta;
static struct drx_zarr_var var;
static char *zarray;

/* A 3-D f32 array grown once, in memory, and its Zarr variable. */
static void setup(void)
{
    struct drx_err err;

    meta.type = DRX_F32;
    meta.rank = 3;
    for (int d = 0; d < 3; d++) {
        meta.chunk[d] = (uint64_t)d + 2;
        meta.initial[d] = meta.bounds[d] = (uint64_t)d + 5;
    }
    strcpy(meta.dim_name[0], "time");
    if (drx_xmd_derive(&meta, &err) < 0 || drx_xmd_grow(&meta, 0, 9, &err) < 0)
        abort();
    var.name = "a";
    var.meta = &meta;
    memcpy(var.shape, meta.bounds, sizeof var.shape);
    var.dims[0] = "time";
    var.dims[1] = var.dims[2] = "dim1";
    if (!(zarray = drx_zarr_zarray(&var)))
        abort();
}

static void attribute(const char *name, const char *type, const char *text)
{
    struct drx_attr a, b;
    struct drx_err err;
    char *s;

    (void)drx_attr_name_check(name, &err);
    if (drx_attr_parse(name, *type ? type : NULL, text, &a, &err) < 0)
        return;
    if (!(s = drx_attr_format(&a)) || !drx_attr_type_name(&a))
        abort();
    free(s);
    if (drx_attr_copy(&b, &a) == 0)
        drx_attr_fini(&b);
    drx_attr_fini(&a);
}

/* text as a value of every element type, formatted back. */
static void values(const char *type, const char *text)
{
    unsigned char v[DRX_MAX_ELEM];
    char out[128];
    enum drx_type t;
    struct drx_err err;

    (void)drx_type_parse(type, &t, &err);
    for (int i = 0; i <= DRX_C128; i++)
        if (drx_type_parse_value((enum drx_type)i, text, v, &err) == 0)
            drx_type_format_value((enum drx_type)i, v, out, sizeof out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = fuzz_string(data, size);
    const char *name, *type, *text;
    struct drx_stripe_layout l;
    struct drx_err err;
    uint64_t n;

    if (!in)
        return 0;
    if (!zarray)
        setup();
    /* in[size] is a NUL: each part ends at a NUL, the last one there */
    name = in;
    type = name + strlen(name);
    type += type < in + size;
    text = type + strlen(type);
    text += text < in + size;
    attribute(name, type, text);
    values(type, text);
    (void)drx_config_parse_bytes(text, &n);
    (void)drx_stripe_layout_parse(text, 4, &l, &err);
    if (drx_zarr_key_parse(&var, text, &n) == 0 && n >= meta.map.nchunks)
        abort();
    (void)drx_zarr_json_same(zarray, data, size);
    uint64_t shape[DRX_MAX_RANK];
    if (drx_zarr_zarray_grown(zarray, data, size, meta.rank, shape) && shape[0] < meta.bounds[0])
        abort(); /* a growth never shrinks */
    free(in);
    return 0;
}
