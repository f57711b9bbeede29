/* Zarr v2 metadata, chunk keys and chunk stores of libcore's format_zarr.c,
 * and the JSON of info (libjansson). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/format.h"
#include "tap.h"

static char dir[] = "/tmp/drx-test-zarr-XXXXXX";

static struct drx_zarr_var var_of(const struct drx_array_meta *m, const char *name)
{
    static const char *dims[2] = {"y", "x"};
    struct drx_zarr_var v = {.name = name, .meta = m};
    for (int d = 0; d < m->rank; d++) {
        v.shape[d] = m->bounds[d];
        v.dims[d] = dims[d];
    }
    return v;
}

static void keys(const struct drx_zarr_var *v)
{
    static const char *const bad[] = {"3.0",   "0.3",  "00.0", "0",
                                      "0.0.0", "-1.0", "0.0x", "0..0",
                                      "",      ".0",   "0.",   "18446744073709551616.0",
                                      " 0.0",  "+1.0"};
    uint64_t q, idx[2] = {2, 2};
    char name[64];

    TAP_CHECK_EQ_U64(drx_zarr_nkeys(v), 9, "3 x 3 keys after the extension");
    tap_ok(drx_zarr_key_parse(v, "0.0", &q) == 0 && q == 0, "0.0 is chunk 0");
    tap_ok(drx_zarr_key_parse(v, "2.2", &q) == 0 && q == drx_map_address(&v->meta->map, idx),
           "2.2 is at its F* address (%llu)", (unsigned long long)q);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        tap_ok(drx_zarr_key_parse(v, bad[i], &q) == -ENOENT, "'%s' is not a key", bad[i]);
    tap_ok(drx_zarr_key_name(v, 0, name, sizeof name) == 0 && strcmp(name, "0.0") == 0, "key 0");
    tap_ok(drx_zarr_key_name(v, 5, name, sizeof name) == 0 && strcmp(name, "1.2") == 0, "key 5");
    tap_ok(drx_zarr_key_name(v, 9, name, sizeof name) == -ERANGE, "no key 9");
}

static void store(struct drx_array *a, const struct drx_zarr_var *v)
{
    const struct drx_array_meta *m = drx_array_meta(a);
    uint16_t buf[4], got[4], before[4];
    uint64_t q;
    struct drx_err err = {{0}};
    int fd = drx_array_xta_fd(a);

    drx_zarr_key_parse(v, "2.2", &q);
    pread(fd, before, sizeof before, (off_t)(q * m->chunk_bytes));
    for (int i = 0; i < 4; i++)
        buf[i] = (uint16_t)(100 + i);
    tap_ok(drx_zarr_chunk_store(a, v, "2.2", buf, 3, &err) == -EINVAL && strstr(err.msg, "not 3"),
           "a short chunk is refused: %s", err.msg);
    tap_ok(drx_zarr_chunk_store(a, v, "3.0", buf, sizeof buf, &err) == -ENOENT,
           "a key outside the grid is refused: %s", err.msg);
    pread(fd, got, sizeof got, (off_t)(q * m->chunk_bytes));
    tap_ok(memcmp(got, before, sizeof got) == 0, "nothing written by the refusals");
    tap_ok(drx_zarr_chunk_store(a, v, "2.2", buf, sizeof buf, &err) == 0, "the edge chunk stored");
    pread(fd, got, sizeof got, (off_t)(q * m->chunk_bytes));
    /* bounds 5x5, chunk 2x2: of chunk (2,2) only element (4,4) is inside */
    tap_ok(got[0] == 100 && got[1] == 7 && got[2] == 7 && got[3] == 7,
           "inside stored, beyond the bounds the fill: %u %u %u %u", got[0], got[1], got[2],
           got[3]);
}

/* za: a rank-2 document of shape [5, 5], chunks [2, 2], fill 7 */
static void zarray_grown(const char *za)
{
    static const char *const docs[] = {
        "{\"zarr_format\":2,\"shape\":[8,5],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"dimension_separator\":\".\","
        "\"compressor\":null,\"chunks\":[2,2]}",
        /* the same shape, a smaller extent, another rank, another chunk */
        "{\"zarr_format\":2,\"shape\":[5,5],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"dimension_separator\":\".\","
        "\"compressor\":null,\"chunks\":[2,2]}",
        "{\"zarr_format\":2,\"shape\":[9,4],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"dimension_separator\":\".\","
        "\"compressor\":null,\"chunks\":[2,2]}",
        "{\"zarr_format\":2,\"shape\":[9,5,1],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"dimension_separator\":\".\","
        "\"compressor\":null,\"chunks\":[2,2]}",
        "{\"zarr_format\":2,\"shape\":[9,5],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"dimension_separator\":\".\","
        "\"compressor\":null,\"chunks\":[4,2]}",
    };
    static const char nosep[] =
        "{\"zarr_format\":2,\"shape\":[5,6],\"order\":\"C\",\"filters\":null,"
        "\"fill_value\":7,\"dtype\":\"<u2\",\"compressor\":null,\"chunks\":[2,2]}";
    uint64_t shape[2] = {0, 0};

    tap_ok(drx_zarr_zarray_grown(za, nosep, strlen(nosep), 2, shape) == 1 && shape[1] == 6,
           "a growth without dimension_separator (Zarr's default \".\", as zarr writes it)");

    tap_ok(drx_zarr_zarray_grown(za, docs[0], strlen(docs[0]), 2, shape) == 1 && shape[0] == 8 &&
               shape[1] == 5,
           "a larger shape, all else the same, is a growth to it");
    for (size_t i = 1; i < sizeof docs / sizeof docs[0]; i++)
        tap_ok(drx_zarr_zarray_grown(za, docs[i], strlen(docs[i]), 2, shape) == 0,
               "not a growth: document %zu", i);
    tap_ok(drx_zarr_zarray_grown(za, "{not json", 9, 2, shape) == 0, "garbage is not a growth");
}

/* Documents holding what jansson cannot hold (NaN, infinities, integers
 * past int64), as drxfs writes them and as Python's json writes them back
 * (other layout, keys sorted): the same values are the same document. */
static void raw_tokens(void)
{
    static const char ours[] =
        "{\n  \"fill_value\": 18446744073709551615,\n  \"a\": [NaN, Infinity, -Infinity],\n"
        "  \"b\": -9223372036854775808,\n  \"c\": 9223372036854775808,\n"
        "  \"s\": \"NaN \\\" Infinity\",\n  \"shape\": [4]\n}\n";
    static const char python[] =
        "{\"a\": [NaN, Infinity, -Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808, \"fill_value\": 18446744073709551615, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [4]}";
    static const char grown[] =
        "{\"a\": [NaN, Infinity, -Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808, \"fill_value\": 18446744073709551615, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [6]}";
    static const char *const other[] = {
        "{\"a\": [NaN, Infinity, Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808, \"fill_value\": 18446744073709551615, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [4]}",
        "{\"a\": [NaN, Infinity, -Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808, \"fill_value\": 18446744073709551614, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [4]}",
        "{\"a\": [\"NaN\", Infinity, -Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808, \"fill_value\": 18446744073709551615, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [4]}",
        "{\"a\": [NaN, Infinity, -Infinity], \"b\": -9223372036854775808, "
        "\"c\": 9223372036854775808.0, \"fill_value\": 18446744073709551615, "
        "\"s\": \"NaN \\\" Infinity\", \"shape\": [4]}",
    };
    uint64_t shape[1] = {0};

    /* it was: jansson refused both, so nothing but the same bytes was the
     * same document, and zarr's consolidation and resize were EPERM */
    tap_ok(drx_zarr_json_same(ours, python, strlen(python)),
           "NaN, infinities and integers past int64 as Python writes them back: the same");
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        tap_ok(!drx_zarr_json_same(ours, other[i], strlen(other[i])), "not the same: document %zu",
               i);
    tap_ok(drx_zarr_zarray_grown(ours, grown, strlen(grown), 1, shape) == 1 && shape[0] == 6,
           "a growth of a document with a u64 fill past int64");
    tap_ok(!drx_zarr_json_same(ours, "{\"a\": NaNx}", 12), "a token that is not one is refused");
}

static void zarray_doc(const struct drx_zarr_var *v)
{
    static const char compact[] = "{\"zarr_format\":2,\"shape\":[5,5],\"order\":\"C\","
                                  "\"filters\":null,\"fill_value\":7,\"dtype\":\"<u2\","
                                  "\"dimension_separator\":\".\",\"compressor\":null,"
                                  "\"chunks\":[2,2]}";
    char *za = drx_zarr_zarray(v);

    if (!tap_ok(za != NULL, ".zarray made"))
        return;
    tap_ok(strstr(za, "\"dtype\": \"<u2\"") && strstr(za, "\"fill_value\": 7,") &&
               strstr(za, "\"compressor\": null") && strstr(za, "\"order\": \"C\""),
           ".zarray: dtype, fill_value, compressor, order");
    tap_ok(drx_zarr_json_same(za, za, strlen(za)), "a document is itself");
    tap_ok(drx_zarr_json_same(za, compact, strlen(compact)), "the same JSON in another layout");
    tap_ok(!drx_zarr_json_same(za, compact, strlen(compact) - 1), "cut short, it is not");
    tap_ok(!drx_zarr_json_same(za, "{not json", 9), "garbage is not the document");
    zarray_grown(za);
    free(za);
}

static void set_attr(struct drx_array *a, const char *name, const char *type, const char *text)
{
    struct drx_attr at;
    struct drx_err err = {{0}};

    drx_attr_parse(name, type, text, &at, &err);
    tap_ok(drx_array_attr_set(a, &at, &err) == 0, "attribute %s set", name);
    drx_attr_fini(&at);
}

static void attr_docs(struct drx_array *a)
{
    struct drx_zarr_var v = var_of(drx_array_meta(a), "t");
    char *zt, *zm, *info;

    set_attr(a, "nans", "f64", "nan,-inf,0.1");
    set_attr(a, "big", "u64", "18446744073709551615");
    /* a string that imitates the internal mark of raw tokens stays a string */
    set_attr(a, "mark", NULL,
             "\x01\x02"
             "drx\x03"
             "0123456789abcdef:NaN");
    v = var_of(drx_array_meta(a), "t");
    zt = drx_zarr_zattrs(&v);
    tap_ok(zt && strstr(zt, "\"nans\": [\n        NaN,\n        -Infinity,\n        0.1\n    ]"),
           ".zattrs: numbers as Python's json writes them");
    tap_ok(zt && strstr(zt, "\"big\": 18446744073709551615,"), ".zattrs: the largest u64 exact");
    tap_ok(zt && strstr(zt, "\"mark\": \"\\u0001\\u0002drx\\u0003"),
           ".zattrs: a look-alike mark is a string");
    tap_ok(zt && strstr(zt, "\"_ARRAY_DIMENSIONS\": [\n        \"y\",\n        \"x\"\n    ]"),
           ".zattrs: _ARRAY_DIMENSIONS");
    zm = drx_zarr_zmetadata(&v, 1);
    tap_ok(zm && strstr(zm, "\"t/.zarray\"") && strstr(zm, "\"zarr_consolidated_format\": 1"),
           ".zmetadata");
    info = drx_array_info_json(drx_array_meta(a), NULL);
    tap_ok(info && strstr(info, "\"value\": [\"nan\", \"-inf\", 0.1]") &&
               strstr(info, "\"value\": [18446744073709551615]") &&
               strstr(info, "\"shape\": [5, 5]"),
           "info: NaN as strings, the largest u64 exact, lists on one line");
    free(info);
    free(zt);
    free(zm);
}

int main(void)
{
    struct drx_array_spec spec = {.type = DRX_U16, .rank = 2, .shape = {5, 3}, .chunk = {2, 2}};
    uint16_t fill = 7;
    struct drx_array *a;
    struct drx_err err = {{0}};
    char path[256];

    if (!mkdtemp(dir))
        return 1;
    spec.fill = &fill;
    snprintf(path, sizeof path, "%s/t", dir);
    if (drx_array_create(path, &spec, &a, &err) < 0 || drx_array_extend(a, 1, 2, &err) < 0) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    struct drx_zarr_var v = var_of(drx_array_meta(a), "t");
    keys(&v);
    store(a, &v);
    zarray_doc(&v);
    raw_tokens();
    attr_docs(a);
    drx_array_close(a);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path) != 0)
        return 1;
    return tap_done();
}
