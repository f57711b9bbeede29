/* The netCDF header of data.nc against ncgen's: for the same dimensions
 * (the first the record dimension), variable, attributes and records, the
 * header bytes must be the same, and the data's layout, for CDF-2 and
 * CDF-5, C and F order, sliced views, with a coordinate of the record
 * dimension and without. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drx/array.h"
#include "drx/format.h"
#include "drx/view.h"
#include "tap.h"

static char dir[] = "/tmp/drx-test-format-XXXXXX";

/* ncgen's header for CDL text, or NULL when ncgen is missing. */
static unsigned char *ncgen_header(const char *cdl, const char *kind, size_t want, size_t *got)
{
    char cdlpath[256], ncpath[256], cmd[700];
    unsigned char *buf = malloc(want);
    FILE *f;

    snprintf(cdlpath, sizeof cdlpath, "%s/t.cdl", dir);
    snprintf(ncpath, sizeof ncpath, "%s/t.nc", dir);
    f = fopen(cdlpath, "w");
    fputs(cdl, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "ncgen -k %s -o %s %s 2>&1", kind, ncpath, cdlpath);
    if (!buf || system(cmd) != 0 || !(f = fopen(ncpath, "rb"))) {
        free(buf);
        return NULL;
    }
    *got = fread(buf, 1, want, f);
    fclose(f);
    return buf;
}

/* cdl (ending " }\n") with a data section giving variable var nelem
 * fills ("_"), so that ncgen makes that many elements' records; static. */
static const char *cdl_with_fills(const char *cdl, const char *var, uint64_t nelem)
{
    static char out[8192];
    size_t n = strlen(cdl) - 3;
    int at = snprintf(out, sizeof out, "%.*s data: %s%s = ", (int)n, cdl,
                      var[0] >= '0' && var[0] <= '9' ? "\\" : "", var);
    for (uint64_t i = 0; i < nelem && at < (int)sizeof out - 16; i++)
        at += snprintf(out + at, sizeof out - (size_t)at, i ? ", _" : "_");
    snprintf(out + at, sizeof out - (size_t)at, " ; }\n");
    return out;
}

/* attrs: NULL, or NAME, TYPE, VALUE triples (as drx attr set takes them)
 * then NULL, set on the array before the header is made. */
static void check(const char *name, const char *type, int rank, const char *shape,
                  const char *words, const char *const *attrs, const char *cdl, const char *kind)
{
    struct drx_array_spec spec = {.rank = rank};
    struct drx_array *a;
    struct drx_view_spec s;
    struct drx_view v;
    struct drx_err err;
    char path[256], w[128];
    size_t len = 0, len2 = 0, got = 0;
    unsigned char *hdr, *ref;
    int64_t dims[DRX_MAX_RANK];

    drx_type_parse(type, &spec.type, &err);
    sscanf(shape, "%ld %ld %ld", (long *)&dims[0], (long *)&dims[1], (long *)&dims[2]);
    for (int i = 0; i < rank; i++) {
        spec.shape[i] = (uint64_t)dims[i];
        spec.chunk[i] = 2;
    }
    spec.dim_name[0] = "time";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (drx_array_create(path, &spec, &a, &err)) {
        tap_ok(0, "%s: create: %s", name, err.msg);
        return;
    }
    for (int i = 0; attrs && attrs[i]; i += 3) {
        struct drx_attr at;
        if (drx_attr_parse(attrs[i], attrs[i + 1], attrs[i + 2], &at, &err) ||
            drx_array_attr_set(a, &at, &err))
            tap_ok(0, "%s: attribute %s: %s", name, attrs[i], err.msg);
        drx_attr_fini(&at);
    }
    drx_view_spec_init(&s);
    snprintf(w, sizeof w, "%s", words);
    for (char *t = strtok(w, " "); t; t = strtok(NULL, " "))
        drx_view_spec_add(&s, t, &err);
    drx_view_resolve(&s, drx_array_meta(a), &v, &err);
    v.rep = DRX_REP_EXTERNAL32;
    drx_nc_header(drx_array_meta(a), &v, path, NULL, &len);
    hdr = malloc(len);
    drx_nc_header(drx_array_meta(a), &v, path, hdr, &len2);
    tap_ok(len == len2, "%s: the size without formatting is the formatted size (%zu)", name, len);
    ref = ncgen_header(cdl_with_fills(cdl, name, v.nelem), kind, len + v.nelem * v.elem_size + 64,
                       &got);
    if (!ref) {
        printf("ok %d - # SKIP ncgen not found\n", ++tap_n);
    } else {
        tap_ok(got >= len && memcmp(hdr, ref, len) == 0,
               "%s: the header is ncgen's byte for byte (%s, %zu bytes)", name, kind, len);
        /* one record variable: its records unpadded, one after another,
         * and nothing after them */
        tap_ok(got == len + v.nelem * v.elem_size,
               "%s: the data follows, unpadded (file %zu bytes)", name, got);
    }
    free(ref);
    free(hdr);
    drx_array_close(a);
}

int main(void)
{
    struct drx_array_spec spec = {.type = DRX_C64, .rank = 1, .shape = {4}, .chunk = {2}};
    struct drx_array *a;
    struct drx_view v;
    struct drx_err err;
    size_t len;
    char path[256];

    if (!mkdtemp(dir))
        return 1;
    check("temp", "f64", 3, "4 3 5", "", NULL,
          "netcdf t { dimensions: time = UNLIMITED ; dim1 = 3 ; dim2 = 5 ;\n"
          "variables: double temp(time, dim1, dim2) ; temp:_FillValue = 0. ;\n"
          "temp:drx_origin = 0, 0, 0 ; temp:drx_step = 1, 1, 1 ; }\n",
          "64-bit-offset");
    check("b", "i8", 2, "3 7", "dim1=1::3 order=F", NULL,
          "netcdf t { dimensions: dim1 = UNLIMITED ; time = 3 ;\n"
          "variables: byte b(dim1, time) ; b:_FillValue = 0b ;\n"
          "b:drx_origin = 1, 0 ; b:drx_step = 3, 1 ; }\n",
          "64-bit-offset");
    check("u", "u16", 2, "3 3", "dim0=1:", NULL,
          "netcdf t { dimensions: time = UNLIMITED ; dim1 = 3 ;\n"
          "variables: ushort u(time, dim1) ; u:_FillValue = 0US ;\n"
          "u:drx_origin = 1LL, 0LL ; u:drx_step = 1LL, 1LL ; }\n",
          "cdf5");
    /* a leading digit is netCDF's (CDL escapes it) */
    check("3dx", "u32", 1, "5", "", NULL,
          "netcdf t { dimensions: time = UNLIMITED ;\n"
          "variables: uint \\3dx(time) ; \\3dx:_FillValue = 0U ;\n"
          "\\3dx:drx_origin = 0LL ; \\3dx:drx_step = 1LL ; }\n",
          "cdf5");
    /* user attributes: after _FillValue, in the order set, strings as
     * NC_CHAR; only classic types keep CDF-2 */
    {
        /* clang-format off */ /* one attribute a line */
        const char *const classic[] = {"units", NULL, "K",
                                       "long_name", "string", "air \"temp\" at 2 m",
                                       "scale_factor", "f64", "0.01",
                                       "valid_range", "i16", "-5,300",
                                       "weights", "f32", "0.5,1.5,2",
                                       "flag", "i8", "-1",
                                       "count", "i32", "7",
                                       NULL};
        const char *const wide[] = {"units", NULL, "m",
                                    "mask", "u8", "255",
                                    "big", "i64", "-9000000000",
                                    "ubig", "u64", "18446744073709551615",
                                    NULL};
        /* clang-format on */
        check("ta", "f64", 2, "4 3", "dim0=1:3", classic,
              "netcdf t { dimensions: time = UNLIMITED ; dim1 = 3 ;\n"
              "variables: double ta(time, dim1) ; ta:_FillValue = 0. ;\n"
              "ta:units = \"K\" ; ta:long_name = \"air \\\"temp\\\" at 2 m\" ;\n"
              "ta:scale_factor = 0.01 ; ta:valid_range = -5s, 300s ;\n"
              "ta:weights = 0.5f, 1.5f, 2.f ; ta:flag = -1b ; ta:count = 7 ;\n"
              "ta:drx_origin = 1, 0 ; ta:drx_step = 1, 1 ; }\n",
              "64-bit-offset");
        check("tw", "f32", 1, "5", "", wide,
              "netcdf t { dimensions: time = UNLIMITED ;\n"
              "variables: float tw(time) ; tw:_FillValue = 0.f ;\n"
              "tw:units = \"m\" ; tw:mask = 255UB ; tw:big = -9000000000LL ;\n"
              "tw:ubig = 18446744073709551615ULL ;\n"
              "tw:drx_origin = 0LL ; tw:drx_step = 1LL ; }\n",
              "cdf5");
    }

    /* coordinate variables: first, with their own attributes, their data
     * (sliced to the view) right after the header */
    {
        struct drx_array_spec ts = {.type = DRX_I32, .rank = 1, .shape = {5}, .chunk = {2}};
        struct drx_array_spec ls = {.type = DRX_F32, .rank = 1, .shape = {3}, .chunk = {2}};
        struct drx_array_spec as = {.type = DRX_F64,
                                    .rank = 2,
                                    .shape = {4, 3},
                                    .chunk = {2, 2},
                                    .dim_name = {"time", "lat"}};
        struct drx_array *t, *l;
        struct drx_attr at;
        struct drx_view_spec vs;
        /* time[1:3] = 20, 30 and lat = 0.5, 1.5, 2.5, big-endian */
        const unsigned char tdata[] = {0, 0, 0, 20, 0, 0, 0, 30};
        const unsigned char ldata[] = {0x3f, 0, 0, 0, 0x3f, 0xc0, 0, 0, 0x40, 0x20, 0, 0};
        struct drx_nc_coord c[2];
        unsigned char *hdr, *ref;
        size_t hl = 0, got = 0;

        snprintf(path, sizeof path, "%s/time", dir);
        drx_array_create(path, &ts, &t, &err);
        drx_attr_parse("units", NULL, "days since 2000-01-01", &at, &err);
        drx_array_attr_set(t, &at, &err);
        drx_attr_fini(&at);
        snprintf(path, sizeof path, "%s/lat", dir);
        drx_array_create(path, &ls, &l, &err);
        snprintf(path, sizeof path, "%s/tc", dir);
        drx_array_create(path, &as, &a, &err);
        drx_view_spec_init(&vs);
        drx_view_spec_add(&vs, "time=1:3", &err);
        drx_view_resolve(&vs, drx_array_meta(a), &v, &err);
        c[0] = (struct drx_nc_coord){0, drx_array_meta(t), tdata};
        c[1] = (struct drx_nc_coord){1, drx_array_meta(l), ldata};
        struct drx_nc_records rec;
        drx_nc_file_header(drx_array_meta(a), &v, path, c, 2, NULL, &len, NULL);
        hdr = malloc(len + 2 * 28);
        drx_nc_file_header(drx_array_meta(a), &v, path, c, 2, hdr, &hl, &rec);
        tap_ok(rec.count == 2 && rec.slab == 24 && rec.coord == 4 && rec.size == 28 &&
                   rec.coord_data == tdata,
               "coordinates: 2 records of 28 bytes, time's 4 then tc's 24");
        /* the records as drxfs lays them out: time's element, tc's (fill) */
        memset(hdr + len, 0, 2 * 28);
        for (unsigned r = 0; r < rec.count; r++)
            memcpy(hdr + len + r * rec.size, tdata + r * rec.coord, rec.coord);
        ref = ncgen_header("netcdf t { dimensions: time = UNLIMITED ; lat = 3 ;\n"
                           "variables: int time(time) ; time:units = \"days since 2000-01-01\" ;\n"
                           "float lat(lat) ;\n"
                           "double tc(time, lat) ; tc:_FillValue = 0. ;\n"
                           "tc:drx_origin = 1, 0 ; tc:drx_step = 1, 1 ;\n"
                           "data: time = 20, 30 ; lat = 0.5, 1.5, 2.5 ; }\n",
                           "64-bit-offset", len + 2 * 28 + 64, &got);
        if (!ref)
            printf("ok %d - # SKIP ncgen not found\n", ++tap_n);
        else
            tap_ok(hl == len && got == len + 2 * 28 && memcmp(hdr, ref, got) == 0,
                   "coordinates: header, lat's data and the records (time's with tc's) are "
                   "ncgen's byte for byte (%zu + %zu)",
                   len, got - len);
        c[1].dim = 5;
        tap_ok(drx_nc_file_header(drx_array_meta(a), &v, path, c, 2, NULL, &len, NULL) ==
                   -EINVAL,
               "a coordinate of an unknown dimension is refused");
        free(ref);
        free(hdr);
        drx_array_close(a);
        drx_array_close(t);
        drx_array_close(l);
    }

    /* .npy: the size without formatting is the size formatted, and the
     * header is NumPy's (a multiple of 64, version 1.0, the dict) */
    {
        struct drx_view nv = {.rank = 3, .type = DRX_F64, .order = DRX_ORDER_F,
                              .rep = DRX_REP_EXTERNAL32, .elem_size = 8,
                              .count = {7, 123456789, 1}};
        char h[256];
        size_t n1 = 0, n2 = 0;
        drx_npy_header(&nv, NULL, &n1);
        tap_ok(n1 <= sizeof h && drx_npy_header(&nv, h, &n2) == 0 && n1 == n2 && n1 % 64 == 0 &&
                   memcmp(h, "\x93NUMPY\x01\x00", 8) == 0 && h[n1 - 1] == '\n' &&
                   (size_t)(unsigned char)h[8] + 256 * (unsigned char)h[9] == n1 - 10 &&
                   strstr(h + 10, "{'descr': '>f8', 'fortran_order': True, 'shape': (7, "
                                  "123456789, 1), }"),
               "the .npy header: counted size, magic, length, dict (%zu bytes)", n1);
    }

    snprintf(path, sizeof path, "%s/cx", dir);
    drx_array_create(path, &spec, &a, &err);
    drx_view_whole(drx_array_meta(a), &v);
    tap_ok(drx_nc_header(drx_array_meta(a), &v, path, NULL, &len) == -ENOTSUP,
           "complex elements have no netCDF header");
    drx_array_close(a);
    spec.type = DRX_F32;
    snprintf(path, sizeof path, "%s/empty", dir);
    drx_array_create(path, &spec, &a, &err);
    drx_view_whole(drx_array_meta(a), &v);
    v.count[0] = 0;
    v.nelem = 0;
    tap_ok(drx_nc_header(drx_array_meta(a), &v, path, NULL, &len) == -ENOENT,
           "an empty view has no netCDF header (an extent of 0 would mean a record dimension)");
    drx_array_close(a);
    {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return tap_done();
}
