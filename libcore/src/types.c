#include "drx/types.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct type_info {
    const char *name;
    size_t size;
    size_t unit;   /* bytes swapped as one number (half an element for complex) */
    char kind;     /* 'i' signed, 'u' unsigned, 'f' float, 'c' complex */
    const char *npy; /* NumPy type code without the byte-order mark */
};

static const struct type_info types[DRX_NTYPES] = {
    [DRX_I8] = {"i8", 1, 1, 'i', "i1"},     [DRX_I16] = {"i16", 2, 2, 'i', "i2"},
    [DRX_I32] = {"i32", 4, 4, 'i', "i4"},   [DRX_I64] = {"i64", 8, 8, 'i', "i8"},
    [DRX_U8] = {"u8", 1, 1, 'u', "u1"},     [DRX_U16] = {"u16", 2, 2, 'u', "u2"},
    [DRX_U32] = {"u32", 4, 4, 'u', "u4"},   [DRX_U64] = {"u64", 8, 8, 'u', "u8"},
    [DRX_F32] = {"f32", 4, 4, 'f', "f4"},   [DRX_F64] = {"f64", 8, 8, 'f', "f8"},
    [DRX_C64] = {"c64", 8, 4, 'c', "c8"},   [DRX_C128] = {"c128", 16, 8, 'c', "c16"},
};

int drx_type_parse(const char *name, enum drx_type *out, struct drx_err *err)
{
    for (int t = 0; t < DRX_NTYPES; t++) {
        if (strcmp(name, types[t].name) == 0) {
            *out = (enum drx_type)t;
            return 0;
        }
    }
    return drx_err_set(err, EINVAL,
                       "unknown element type '%s' (one of i8 i16 i32 i64 u8 u16 u32 u64 f32 "
                       "f64 c64 c128)",
                       name);
}

const char *drx_type_name(enum drx_type t)
{
    return types[t].name;
}

size_t drx_type_size(enum drx_type t)
{
    return types[t].size;
}

bool drx_type_is_complex(enum drx_type t)
{
    return types[t].kind == 'c';
}

static bool host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

const char *drx_type_npy_descr(enum drx_type t, enum drx_rep rep)
{
    static char descr[2][DRX_NTYPES][8];
    bool big = rep == DRX_REP_EXTERNAL32 || !host_little_endian();
    char *d = descr[big][t];

    if (!d[0]) {
        /* Single-byte types have no byte order in NumPy: '|'. */
        char mark = types[t].size == 1 ? '|' : (big ? '>' : '<');
        snprintf(d, sizeof descr[0][0], "%c%s", mark, types[t].npy);
    }
    return d;
}

/* The integer v in the type's width, little or big as this machine is. */
static void store_int(size_t size, uint64_t v, void *out)
{
    switch (size) {
    case 1: *(uint8_t *)out = (uint8_t)v; break;
    case 2: *(uint16_t *)out = (uint16_t)v; break;
    case 4: *(uint32_t *)out = (uint32_t)v; break;
    default: *(uint64_t *)out = v; break;
    }
}

static int does_not_fit(enum drx_type t, const char *text, struct drx_err *err)
{
    return drx_err_set(err, ERANGE, "value '%s' does not fit in %s", text, types[t].name);
}

/* Each parser: 0, -ERANGE (reported), or 1 when text is no number at all. */
static int parse_signed(enum drx_type t, const char *text, void *out, struct drx_err *err)
{
    long long lo = types[t].size == 8 ? INT64_MIN : -(1LL << (8 * types[t].size - 1));
    long long hi = types[t].size == 8 ? INT64_MAX : (1LL << (8 * types[t].size - 1)) - 1;
    char *end;
    long long v;

    errno = 0;
    v = strtoll(text, &end, 0);
    if (end == text || *end)
        return 1;
    if (errno == ERANGE || v < lo || v > hi)
        return does_not_fit(t, text, err);
    store_int(types[t].size, (uint64_t)v, out);
    return 0;
}

static int parse_unsigned(enum drx_type t, const char *text, void *out, struct drx_err *err)
{
    unsigned long long v;
    char *end;

    if (text[0] == '-')
        return does_not_fit(t, text, err);
    errno = 0;
    v = strtoull(text, &end, 0);
    if (end == text || *end)
        return 1;
    if (errno == ERANGE || (types[t].size < 8 && v >> (8 * types[t].size)))
        return does_not_fit(t, text, err);
    store_int(types[t].size, v, out);
    return 0;
}

static int parse_float(enum drx_type t, const char *text, void *out, struct drx_err *err)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (end == text || *end)
        return 1;
    /* A finite number past the type's range would be stored as an
     * infinity, a non-zero one below its smallest subnormal as 0 (a fill
     * of 1e-50 that xarray then takes for missing wherever the data is 0):
     * refused, as an integer out of range is, and as netCDF's NC_ERANGE.
     * strtod's ERANGE with a subnormal, non-zero result is kept. */
    if (errno == ERANGE && (isinf(v) || v == 0))
        return does_not_fit(t, text, err);
    if (types[t].unit == 4) {
        float f = (float)v;
        if ((isinf(f) && !isinf(v)) || (f == 0 && v != 0))
            return does_not_fit(t, text, err);
        memcpy(out, &f, sizeof f);
    } else {
        memcpy(out, &v, sizeof v);
    }
    return 0;
}

/* "an f32", "an i8", "a u8", "a c64": the article as the name is read */
static const char *article(const char *name)
{
    return name[0] == 'f' || name[0] == 'i' ? "an" : "a";
}

static int parse_real(enum drx_type t, const char *text, void *out, struct drx_err *err)
{
    int rc = types[t].kind == 'i'   ? parse_signed(t, text, out, err)
             : types[t].kind == 'u' ? parse_unsigned(t, text, out, err)
                                    : parse_float(t, text, out, err);

    if (rc == 1)
        return drx_err_set(err, EINVAL, "'%s' is not %s %s value", text,
                               article(types[t].name),
                               types[t].name);
    return rc;
}

int drx_type_parse_value(enum drx_type t, const char *text, void *out, struct drx_err *err)
{
    if (types[t].kind == 'c') {
        /* "re,im" or just "re" */
        char re[128];
        const char *comma = strchr(text, ',');
        size_t n = comma ? (size_t)(comma - text) : strlen(text);
        enum drx_type part = t == DRX_C64 ? DRX_F32 : DRX_F64;
        int rc;

        if (n >= sizeof re)
            return drx_err_set(err, EINVAL, "'%s' is not %s %s value", text,
                               article(types[t].name),
                               types[t].name);
        memcpy(re, text, n);
        re[n] = '\0';
        rc = parse_real(part, re, out, err);
        if (rc == 0)
            rc = parse_real(part, comma ? comma + 1 : "0", (char *)out + types[t].unit, err);
        return rc;
    }
    return parse_real(t, text, out, err);
}

static void format_real(enum drx_type t, const void *v, char *buf, size_t len)
{
    switch (types[t].kind) {
    case 'i': {
        int64_t x = types[t].size == 1   ? *(const int8_t *)v
                    : types[t].size == 2 ? *(const int16_t *)v
                    : types[t].size == 4 ? *(const int32_t *)v
                                         : *(const int64_t *)v;
        snprintf(buf, len, "%" PRId64, x);
        break;
    }
    case 'u': {
        uint64_t x = types[t].size == 1   ? *(const uint8_t *)v
                     : types[t].size == 2 ? *(const uint16_t *)v
                     : types[t].size == 4 ? *(const uint32_t *)v
                                          : *(const uint64_t *)v;
        snprintf(buf, len, "%" PRIu64, x);
        break;
    }
    default: {
        /* the shortest text that reads back as the same value, as JSON
         * (info, .zarray) and ncdump show it: 0.1, not 0.100000001 */
        bool single = types[t].unit == 4;
        double d;
        if (single) {
            float f;
            memcpy(&f, v, sizeof f);
            d = f;
        } else {
            memcpy(&d, v, sizeof d);
        }
        if (!isfinite(d)) {
            snprintf(buf, len, "%g", d);
            break;
        }
        /* an f32 read back either way (libconfig reads a double, then
         * cast): never a text one of them rounds elsewhere */
        int prec;
        for (prec = 1; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, d);
            if (single ? strtof(buf, NULL) == (float)d && (float)strtod(buf, NULL) == (float)d
                       : strtod(buf, NULL) == d)
                break;
        }
        /* those digits as Python's repr places them: 40 and 0.001, not
         * %g's 4e+01 for one digit; an exponent below -4 or from 16 on
         * stays (1e-05, 1e+16) */
        char *e = strchr(buf, 'e');
        int exp10 = e ? atoi(e + 1) : 0;
        if (e && exp10 >= -4 && exp10 < 16)
            /* of the digits found, not of d: an f32 of 1e11 is 99999997952 */
            snprintf(buf, len, "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0,
                     strtod(buf, NULL));
    }
    }
}

void drx_type_format_value(enum drx_type t, const void *value, char *buf, size_t len)
{
    if (types[t].kind == 'c') {
        enum drx_type part = t == DRX_C64 ? DRX_F32 : DRX_F64;
        char re[64], im[64];
        format_real(part, value, re, sizeof re);
        format_real(part, (const char *)value + types[t].unit, im, sizeof im);
        snprintf(buf, len, "%s,%s", re, im);
        return;
    }
    format_real(t, value, buf, len);
}

bool drx_type_rep_swaps(enum drx_type t, enum drx_rep rep)
{
    return rep == DRX_REP_EXTERNAL32 && host_little_endian() && types[t].unit > 1;
}

void drx_type_convert(enum drx_type t, enum drx_rep rep, void *buf, size_t n)
{
    size_t units;

    if (!drx_type_rep_swaps(t, rep))
        return;
    units = n * (types[t].size / types[t].unit);
    /* memcpy keeps this correct for unaligned buffers (FUSE hands us any
     * offset); compilers turn it into plain loads and stores. */
    switch (types[t].unit) {
    case 2:
        for (unsigned char *p = buf, *e = p + 2 * units; p < e; p += 2) {
            uint16_t x;
            memcpy(&x, p, 2);
            x = __builtin_bswap16(x);
            memcpy(p, &x, 2);
        }
        break;
    case 4:
        for (unsigned char *p = buf, *e = p + 4 * units; p < e; p += 4) {
            uint32_t x;
            memcpy(&x, p, 4);
            x = __builtin_bswap32(x);
            memcpy(p, &x, 4);
        }
        break;
    case 8:
        for (unsigned char *p = buf, *e = p + 8 * units; p < e; p += 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            x = __builtin_bswap64(x);
            memcpy(p, &x, 8);
        }
        break;
    }
}
