/* The netCDF classic header of a view (see drx/format.h).  One writer does
 * both jobs: with no buffer it only counts, so the size is known without
 * formatting anything. */
#include "drx/format.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NC_DIMENSION 0x0A
#define NC_VARIABLE 0x0B
#define NC_ATTRIBUTE 0x0C

/* netCDF external types of drx's element types; 0: none (complex). */
static const uint32_t nc_type_of[DRX_NTYPES] = {
    [DRX_I8] = 1,  [DRX_I16] = 3,  [DRX_I32] = 4, [DRX_I64] = 10, [DRX_U8] = 7,  [DRX_U16] = 8,
    [DRX_U32] = 9, [DRX_U64] = 11, [DRX_F32] = 5, [DRX_F64] = 6,  [DRX_C64] = 0, [DRX_C128] = 0,
};
#define NC_CHAR 2
#define NC_INT 4
#define NC_INT64 10

/* Types CDF-2 has (byte, short, int, float, double); the others need CDF-5. */
static bool nc_classic(uint32_t type)
{
    return type == 1 || type == 3 || type == 4 || type == 5 || type == 6;
}

/* Longest name written: an array's base name is a file name. */
#define NC_NAME_MAX 255

struct out {
    unsigned char *p; /* NULL: count only */
    size_t pos;
    bool cdf5; /* NON_NEG is 8 bytes, else 4 */
};

static void put(struct out *o, const void *b, size_t n)
{
    if (o->p)
        memcpy(o->p + o->pos, b, n);
    o->pos += n;
}

static void put_be(struct out *o, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    put(o, b, (size_t)bytes);
}

static void pad4(struct out *o)
{
    static const unsigned char zero[4];
    put(o, zero, (4 - o->pos % 4) % 4);
}

static void put_nonneg(struct out *o, uint64_t v)
{
    put_be(o, v, o->cdf5 ? 8 : 4);
}

static void put_name(struct out *o, const char *name)
{
    size_t n = strlen(name);
    put_nonneg(o, n);
    put(o, name, n);
    pad4(o);
}

/* Integer attribute NAME: n values of type NC_INT or NC_INT64. */
static void put_attr_ints(struct out *o, const char *name, uint32_t type, const uint64_t *v, int n)
{
    put_name(o, name);
    put_be(o, type, 4);
    put_nonneg(o, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put_be(o, v[i], type == NC_INT ? 4 : 8);
}

/* The user's attribute: a string as NC_CHAR (its bytes, no NUL), numbers in
 * their netCDF type, big-endian. */
static void put_user_attr(struct out *o, const struct drx_attr *a)
{
    put_name(o, a->name);
    if (a->is_string) {
        put_be(o, NC_CHAR, 4);
        put_nonneg(o, a->n);
        put(o, a->value, a->n);
    } else {
        size_t size = drx_type_size(a->type);
        put_be(o, nc_type_of[a->type], 4);
        put_nonneg(o, a->n);
        for (size_t i = 0; i < a->n; i++) {
            unsigned char b[DRX_MAX_ELEM];
            memcpy(b, (const unsigned char *)a->value + i * size, size);
            drx_type_convert(a->type, DRX_REP_EXTERNAL32, b, 1);
            put(o, b, size);
        }
    }
    pad4(o);
}

/* Whether netCDF allows ASCII byte C at position N of a name: a letter, a
 * digit or '_' first (netCDF-C's NC_check_name: "2m_temp" is a name, which
 * ncdump shows as \2m_temp), then also ".@+-". */
static bool nc_name_char_ok(unsigned char c, size_t n)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')
        return true;
    return n > 0 && c && strchr(".@+-", c);
}

/* The bytes of the UTF-8 character at p when netCDF takes it in a name
 * as it is: a letter of U+00C0..U+024F (Latin-1 Supplement and Latin
 * Extended-A and B, but the signs x and /), which are their own NFC form,
 * as netCDF-C stores and looks up names; 0 for anything else (another
 * character's NFC form may differ from its bytes, and netCDF-C would then
 * not find the variable by the name it lists). */
static size_t nc_name_utf8_ok(const unsigned char *p)
{
    unsigned cp;

    if (p[0] < 0xc3 || p[0] > 0xc9 || (p[1] & 0xc0) != 0x80)
        return 0;
    cp = ((unsigned)(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
    return cp >= 0xc0 && cp <= 0x24f && cp != 0xd7 && cp != 0xf7 ? 2 : 0;
}

/* The variable's name: the array's base name under netCDF's rules, each
 * character outside them one '_'. */
static void var_name(const char *name, char *out)
{
    const unsigned char *p = (const unsigned char *)strrchr(name, '/');
    size_t n = 0;

    p = p ? p + 1 : (const unsigned char *)name;
    while (*p && n < NC_NAME_MAX) {
        size_t u = nc_name_utf8_ok(p);
        if (u && n + u <= NC_NAME_MAX) {
            memcpy(out + n, p, u);
            n += u;
            p += u;
            continue;
        }
        out[n] = nc_name_char_ok(*p, n) ? (char)*p : '_';
        n++;
        /* the rest of a multi-byte character is part of this '_' */
        if (*p++ >= 0xc0)
            while ((*p & 0xc0) == 0x80)
                p++;
    }
    if (n == 0)
        out[n++] = '_';
    out[n] = '\0';
}

/* Bytes of a variable's data padded to 4, as its vsize says (CDF-2 caps a
 * last variable's past 32 bits). */
static uint64_t padded(uint64_t bytes)
{
    return (bytes + 3) / 4 * 4;
}

/* The variable's attributes: those of the array (none: ABSENT). */
static void put_user_attrs(struct out *o, const struct drx_array_meta *m)
{
    if (!m->nattrs) {
        put_be(o, 0, 4);
        put_nonneg(o, 0);
        return;
    }
    put_be(o, NC_ATTRIBUTE, 4);
    put_nonneg(o, m->nattrs);
    for (size_t i = 0; i < m->nattrs; i++)
        put_user_attr(o, &m->attrs[i]);
}

/* The name of the array's dimension d in the file: its own, or dimD. */
static void dim_label(const struct drx_array_meta *m, int d, char *out, size_t len)
{
    if (m->dim_name[d][0])
        snprintf(out, len, "%s", m->dim_name[d]);
    else
        snprintf(out, len, "dim%d", d);
}

/* The coordinate of the record dimension (the variable's first), or -1. */
static int record_coord(const int *dims, const struct drx_nc_coord *coords, int ncoords)
{
    for (int c = 0; c < ncoords; c++)
        if (coords[c].dim == dims[0])
            return c;
    return -1;
}

/* The header, with `base` the header's own size (0 on the counting pass:
 * only the begin offsets depend on it, and they have a fixed size).  The
 * variable's first dimension is the record (unlimited) dimension: the
 * variable, and the coordinate of that dimension if there is one, are
 * record variables, laid out after the other coordinates (rec). */
static void put_header(struct out *o, const struct drx_array_meta *m, const struct drx_view *v,
                       const char *vname, const int *dims, const uint64_t *origin,
                       const uint64_t *step, const struct drx_nc_coord *coords, int ncoords,
                       const struct drx_nc_records *rec, uint64_t base)
{
    const uint32_t type = nc_type_of[v->type];
    const int k = v->rank, rc = record_coord(dims, coords, ncoords);
    uint64_t at = base, rec_at = base;
    unsigned char fill[DRX_MAX_ELEM];

    put(o, o->cdf5 ? "CDF\x05" : "CDF\x02", 4);
    put_nonneg(o, rec->count); /* numrecs */
    put_be(o, NC_DIMENSION, 4);
    put_nonneg(o, (uint64_t)k);
    for (int i = 0; i < k; i++) {
        char dn[DRX_MAX_DIM_NAME + 8];
        dim_label(m, dims[i], dn, sizeof dn);
        put_name(o, dn);
        put_nonneg(o, i == 0 ? 0 : v->count[dims[i]]); /* 0: the record dimension */
    }
    put_be(o, 0, 4); /* no global attributes: ABSENT */
    put_nonneg(o, 0);

    put_be(o, NC_VARIABLE, 4);
    put_nonneg(o, 1 + (uint64_t)ncoords);
    /* the fixed coordinates' data first, then the records */
    for (int c = 0; c < ncoords; c++)
        if (c != rc)
            rec_at += padded(v->count[coords[c].dim] * coords[c].meta->elem_size);
    /* coordinate variables first, so that the array's own variable, which
     * may pass 4 GiB (a record of it), is the last one as CDF-2 requires */
    for (int c = 0; c < ncoords; c++) {
        const struct drx_array_meta *cm = coords[c].meta;
        /* the record coordinate: one element a record */
        uint64_t cbytes = (c == rc ? 1 : v->count[coords[c].dim]) * cm->elem_size;
        int pos = 0;
        while (dims[pos] != coords[c].dim)
            pos++;
        put_name(o, m->dim_name[coords[c].dim]);
        put_nonneg(o, 1);
        put_nonneg(o, (uint64_t)pos);
        put_user_attrs(o, cm);
        put_be(o, nc_type_of[cm->type], 4);
        put_nonneg(o, padded(cbytes));
        put_be(o, c == rc ? rec_at : at, 8);
        if (c != rc)
            at += padded(cbytes);
    }
    put_name(o, vname);
    put_nonneg(o, (uint64_t)k);
    for (int i = 0; i < k; i++)
        put_nonneg(o, (uint64_t)i);
    put_be(o, NC_ATTRIBUTE, 4);
    /* A 1-D variable named as its dimension is that dimension's
     * coordinate variable: no _FillValue, as the coordinates of other
     * arrays' data.nc (its 0 is a longitude, not missing). */
    char dn0[DRX_MAX_DIM_NAME + 8];
    dim_label(m, k == 1 ? dims[0] : 0, dn0, sizeof dn0);
    bool self_coord = k == 1 && strcmp(dn0, vname) == 0;
    put_nonneg(o, (self_coord ? 2 : 3) + m->nattrs);
    if (!self_coord) {
        /* _FillValue: the fill in the variable's type, big-endian */
        memcpy(fill, m->fill, v->elem_size);
        drx_type_convert(v->type, DRX_REP_EXTERNAL32, fill, 1);
        put_name(o, "_FillValue");
        put_be(o, type, 4);
        put_nonneg(o, 1);
        put(o, fill, v->elem_size);
        pad4(o);
    }
    for (size_t i = 0; i < m->nattrs; i++)
        put_user_attr(o, &m->attrs[i]);
    {
        uint32_t itype = o->cdf5 ? NC_INT64 : NC_INT;
        put_attr_ints(o, "drx_origin", itype, origin, k);
        put_attr_ints(o, "drx_step", itype, step, k);
    }
    put_be(o, type, 4);
    /* vsize: a record's data padded to 4 bytes; in CDF-2 a size past 32
     * bits is written as 2^32 - 1, which the format allows for the last
     * variable */
    {
        uint64_t vsize = padded(rec->slab);
        if (!o->cdf5 && vsize > UINT32_MAX)
            vsize = UINT32_MAX;
        put_nonneg(o, vsize);
    }
    put_be(o, rec_at + padded(rec->coord), 8); /* begin: its part of the first record */
}

/* The records of the view (rec, as drx_nc_file_header gives them). */
static void records_of(const struct drx_view *v, const int *dims, const struct drx_nc_coord *coords,
                       int ncoords, struct drx_nc_records *rec)
{
    int rc = record_coord(dims, coords, ncoords);

    rec->count = v->count[dims[0]];
    rec->slab = v->nelem / rec->count * v->elem_size;
    rec->coord = rc < 0 ? 0 : coords[rc].meta->elem_size;
    rec->coord_data = rc < 0 ? NULL : coords[rc].data;
    /* one record variable: its records unpadded, one after the other
     * (netCDF's special case), so that the variable's elements are
     * contiguous as in a fixed-size variable */
    rec->size = rc < 0 ? rec->slab : padded(rec->coord) + padded(rec->slab);
}

/* The variable's dimensions, slowest first (the view's order), with their
 * origins and steps; false if any needs more than 32 bits (CDF-5). */
static bool view_dims(const struct drx_view *v, int *dims, uint64_t *origin, uint64_t *step)
{
    const int k = v->rank;
    bool small = true;

    for (int i = 0; i < k; i++) {
        int d = v->order == DRX_ORDER_C ? i : k - 1 - i;
        dims[i] = d;
        origin[i] = v->origin[d];
        step[i] = v->step[d];
        if (v->count[d] > INT32_MAX || origin[i] > INT32_MAX || step[i] > INT32_MAX)
            small = false;
    }
    return small;
}

/* Whether an attribute of M has a type CDF-2 lacks (u8, i64, ...). */
static bool attrs_need_cdf5(const struct drx_array_meta *m)
{
    for (size_t i = 0; i < m->nattrs; i++)
        if (!m->attrs[i].is_string && !nc_classic(nc_type_of[m->attrs[i].type]))
            return true;
    return false;
}

/* Checks the coordinate variables against M's K dimensions; sets *cdf5 if
 * one needs CDF-5.  -EINVAL for a coordinate netCDF cannot hold. */
static int coords_check(const struct drx_array_meta *m, int k, const struct drx_nc_coord *coords,
                        int ncoords, bool *cdf5)
{
    for (int c = 0; c < ncoords; c++) {
        const struct drx_array_meta *cm = coords[c].meta;
        if (coords[c].dim < 0 || coords[c].dim >= k || !m->dim_name[coords[c].dim][0] ||
            cm->rank != 1 || nc_type_of[cm->type] == 0)
            return -EINVAL;
        if (!nc_classic(nc_type_of[cm->type]) || attrs_need_cdf5(cm))
            *cdf5 = true;
    }
    return 0;
}

int drx_nc_file_header(const struct drx_array_meta *m, const struct drx_view *v, const char *name,
                       const struct drx_nc_coord *coords, int ncoords, unsigned char *buf,
                       size_t *len, struct drx_nc_records *records)
{
    struct drx_nc_records rec_here;
    struct drx_nc_records *rec = records ? records : &rec_here;
    const uint32_t type = nc_type_of[v->type];
    struct out o = {NULL, 0, false};
    uint64_t origin[DRX_MAX_RANK], step[DRX_MAX_RANK];
    int dims[DRX_MAX_RANK];
    char vname[NC_NAME_MAX + 1];
    struct drx_nc_coord kept[DRX_MAX_RANK] = {{0}};
    int nkept = 0;
    size_t hlen;
    int rc;

    if (ncoords < 0 || ncoords > DRX_MAX_RANK)
        return -EINVAL;
    if (type == 0)
        return -ENOTSUP;
    if (v->nelem == 0)
        return -ENOENT;
    o.cdf5 = !view_dims(v, dims, origin, step) || !nc_classic(type) || attrs_need_cdf5(m);
    var_name(name, vname);
    bool unused = false;
    rc = coords_check(m, v->rank, coords, ncoords, &unused);
    if (rc < 0)
        return rc;
    /* A coordinate named as the variable (array "x y", variable x_y, over
     * dimension x_y, beside an array x_y) would be a second variable of
     * that name, which netCDF readers take one of: the variable is its
     * dimension's coordinate, as an array named like its own dimension. */
    for (int c = 0; c < ncoords; c++)
        if (strcmp(m->dim_name[coords[c].dim], vname) != 0)
            kept[nkept++] = coords[c];
    coords = kept;
    ncoords = nkept;
    coords_check(m, v->rank, coords, ncoords, &o.cdf5);
    records_of(v, dims, coords, ncoords, rec);
    int rc_at = record_coord(dims, coords, ncoords);

    put_header(&o, m, v, vname, dims, origin, step, coords, ncoords, rec, 0);
    hlen = o.pos;
    for (int c = 0; c < ncoords; c++)
        if (c != rc_at)
            o.pos += padded(v->count[coords[c].dim] * coords[c].meta->elem_size);
    *len = o.pos;
    if (!buf)
        return 0;
    /* the same header with the begin offsets, then each fixed coordinate's
     * data */
    o.p = buf;
    o.pos = 0;
    put_header(&o, m, v, vname, dims, origin, step, coords, ncoords, rec, hlen);
    for (int c = 0; c < ncoords; c++) {
        if (c == rc_at)
            continue;
        uint64_t cbytes = v->count[coords[c].dim] * coords[c].meta->elem_size;
        put(&o, coords[c].data, cbytes);
        pad4(&o);
    }
    return 0;
}

int drx_nc_header(const struct drx_array_meta *m, const struct drx_view *v, const char *name,
                  unsigned char *buf, size_t *len)
{
    return drx_nc_file_header(m, v, name, NULL, 0, buf, len, NULL);
}
