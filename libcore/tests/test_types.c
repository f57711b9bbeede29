/* Element types: names, sizes, values, and external32 conversion. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drx/types.h"
#include "tap.h"

/* external32 is big-endian: the most significant byte of each number first
 * (each half of a complex number on its own). */
static void to_be_by_hand(enum drx_type t, const unsigned char *in, unsigned char *out)
{
    size_t size = drx_type_size(t), unit = drx_type_is_complex(t) ? size / 2 : size;
    for (size_t u = 0; u < size; u += unit)
        for (size_t i = 0; i < unit; i++)
            out[u + i] = in[u + unit - 1 - i];
}

int main(void)
{
    struct drx_err err;
    enum drx_type t;

    for (int i = 0; i < DRX_NTYPES; i++) {
        enum drx_type back;
        tap_ok(drx_type_parse(drx_type_name((enum drx_type)i), &back, &err) == 0 && (int)back == i,
               "type %s parses back", drx_type_name((enum drx_type)i));
    }
    tap_ok(drx_type_parse("f128", &t, &err) == -EINVAL && strstr(err.msg, "f128"),
           "unknown type names the word: %s", err.msg);

    /* external32 round trip and byte order, every type */
    for (int i = 0; i < DRX_NTYPES; i++) {
        enum drx_type ty = (enum drx_type)i;
        size_t es = drx_type_size(ty);
        unsigned char native[5 * DRX_MAX_ELEM], conv[5 * DRX_MAX_ELEM], hand[5 * DRX_MAX_ELEM];
        for (size_t b = 0; b < 5 * es; b++)
            native[b] = (unsigned char)(b * 37 + 11);
        memcpy(conv, native, 5 * es);
        /* an odd start: FUSE buffers have any alignment */
        drx_type_convert(ty, DRX_REP_EXTERNAL32, conv, 5);
        for (int e = 0; e < 5; e++)
            to_be_by_hand(ty, native + e * es, hand + e * es);
        tap_ok(memcmp(conv, hand, 5 * es) == 0, "%s: external32 is big-endian per component",
               drx_type_name(ty));
        drx_type_convert(ty, DRX_REP_EXTERNAL32, conv, 5);
        tap_ok(memcmp(conv, native, 5 * es) == 0, "%s: external32 round trip", drx_type_name(ty));
        drx_type_convert(ty, DRX_REP_NATIVE, conv, 5);
        tap_ok(memcmp(conv, native, 5 * es) == 0, "%s: native changes nothing", drx_type_name(ty));
    }
    {
        unsigned char buf[1 + 3 * 8];
        double d[3] = {1.5, -2.25, 1e300};
        memcpy(buf + 1, d, sizeof d);
        drx_type_convert(DRX_F64, DRX_REP_EXTERNAL32, buf + 1, 3);
        tap_ok(buf[1] == 0x3f && buf[2] == 0xf8, "1.5 as external32 f64 starts 3f f8 (unaligned)");
    }

    /* values */
    {
        unsigned char v[DRX_MAX_ELEM], w[DRX_MAX_ELEM];
        char text[128];
        const char *ok[][2] = {{"i8", "-128"}, {"u8", "255"}, {"i16", "-32768"}, {"u16", "65535"},
                               {"i32", "-7"}, {"u32", "4294967295"}, {"i64", "-9223372036854775808"},
                               {"u64", "18446744073709551615"}, {"f32", "0.1"}, {"f64", "-2.5e-300"},
                               {"c64", "1.5,-2"}, {"c128", "0.1,0.2"}, {"f64", "nan"},
                               {"f32", "1e-40"}, {"f64", "5e-324"}, {"f32", "3.4028235e38"},
                               {"f32", "-inf"}, {"f64", "-0"}};
        const char *badv[][2] = {{"i8", "128"}, {"u8", "-1"}, {"u16", "65536"}, {"i32", "1.5"},
                                 {"f64", "abc"}, {"c64", "1,x"}, {"u64", "18446744073709551616"},
                                 /* no silent infinity or 0 for a finite, non-zero number */
                                 {"f32", "1e40"}, {"f32", "-1e39"}, {"f32", "1e-50"},
                                 {"f64", "1e400"}, {"f64", "-1e-400"}, {"c64", "1,1e40"}};
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
            drx_type_parse(ok[i][0], &t, NULL);
            int rc = drx_type_parse_value(t, ok[i][1], v, &err);
            drx_type_format_value(t, v, text, sizeof text);
            rc |= drx_type_parse_value(t, text, w, &err);
            tap_ok(rc == 0 && memcmp(v, w, drx_type_size(t)) == 0,
                   "%s value %s formats as %s and parses back to the same bytes", ok[i][0],
                   ok[i][1], text);
        }
        for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
            drx_type_parse(badv[i][0], &t, NULL);
            tap_ok(drx_type_parse_value(t, badv[i][1], v, &err) < 0, "%s value %s refused: %s",
                   badv[i][0], badv[i][1], err.msg);
        }
    }
    /* floats as the shortest text that reads back (as JSON and ncdump
     * show them; found in the twelfth session: drx info showed a fill of
     * 0.1 as 0.10000000000000001), for random bit patterns too */
    {
        char text[128];
        float f = 0.1f;
        double d = 0.1;
        drx_type_format_value(DRX_F32, &f, text, sizeof text);
        tap_ok(strcmp(text, "0.1") == 0, "f32 0.1 formats as 0.1 (%s)", text);
        drx_type_format_value(DRX_F64, &d, text, sizeof text);
        tap_ok(strcmp(text, "0.1") == 0, "f64 0.1 formats as 0.1 (%s)", text);
        /* the digits placed as Python's repr places them (%g wrote 1e+02
         * for 100: 2026-12-06) */
        static const struct {
            double v;
            const char *text;
        } placed[] = {{100, "100"},       {40, "40"},        {-2500, "-2500"},
                      {123.25, "123.25"}, {0.001, "0.001"},  {1e-5, "1e-05"},
                      {1e15, "1000000000000000"},            {1e16, "1e+16"},
                      {1e11, "100000000000"},                {1.2e12, "1200000000000"}};
        for (size_t i = 0; i < sizeof placed / sizeof placed[0]; i++) {
            f = (float)placed[i].v;
            drx_type_format_value(DRX_F64, &placed[i].v, text, sizeof text);
            tap_ok(strcmp(text, placed[i].text) == 0, "f64 %s formats as such (%s)",
                   placed[i].text, text);
            /* f32 holds these digits too (1e11 is 99999997952 as an integer) */
            if (fabs(placed[i].v) < 1e7 || placed[i].v >= 1e11) {
                drx_type_format_value(DRX_F32, &f, text, sizeof text);
                tap_ok(strcmp(text, placed[i].text) == 0, "f32 %s formats as such (%s)",
                       placed[i].text, text);
            }
        }
        uint64_t x = 0x9e3779b97f4a7c15u;
        int bad = 0;
        for (int i = 0; i < 200000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint32_t b32 = (uint32_t)x;
            memcpy(&f, &b32, sizeof f);
            memcpy(&d, &x, sizeof d);
            if (isfinite(f)) {
                drx_type_format_value(DRX_F32, &f, text, sizeof text);
                bad += strtof(text, NULL) != f || (float)strtod(text, NULL) != f;
            }
            if (isfinite(d)) {
                drx_type_format_value(DRX_F64, &d, text, sizeof text);
                bad += strtod(text, NULL) != d;
            }
        }
        tap_ok(bad == 0, "200000 random f32 and f64 read back from their text (%d did not)", bad);
    }
    tap_ok(strcmp(drx_type_npy_descr(DRX_F64, DRX_REP_EXTERNAL32), ">f8") == 0 &&
               strcmp(drx_type_npy_descr(DRX_F64, DRX_REP_NATIVE), "<f8") == 0 &&
               strcmp(drx_type_npy_descr(DRX_U8, DRX_REP_EXTERNAL32), "|u1") == 0 &&
               strcmp(drx_type_npy_descr(DRX_C128, DRX_REP_NATIVE), "<c16") == 0,
           "NumPy descr strings");
    return tap_done();
}
