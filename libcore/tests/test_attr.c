/* Attributes (drx/attr.h): names, strings (UTF-8 only), numbers of every
 * non-complex type, formatting back, copies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drx/attr.h"
#include "tap.h"

/* 0 when text makes a string attribute. */
static int string_ok(const char *text)
{
    struct drx_attr a;
    struct drx_err err;
    int rc = drx_attr_parse("s", "string", text, &a, &err);

    if (rc == 0)
        drx_attr_fini(&a);
    return rc;
}

static void names(void)
{
    struct drx_err err;

    tap_ok(drx_attr_name_check("units", &err) == 0 && drx_attr_name_check("_x.y@z+1-2", &err) == 0,
           "netCDF names pass");
    tap_ok(drx_attr_name_check("1abc", &err) == -EINVAL && drx_attr_name_check("", &err) == -EINVAL &&
               drx_attr_name_check("a b", &err) == -EINVAL,
           "a digit first, empty, a blank: refused");
    tap_ok(drx_attr_name_check("_FillValue", &err) == -EINVAL &&
               drx_attr_name_check("drx_origin", &err) == -EINVAL,
           "_FillValue and drx_* are reserved: %s", err.msg);
}

static void utf8(void)
{
    tap_ok(string_ok("K") == 0 && string_ok("") == 0 && string_ok("m s\xc2\xb2") == 0 &&
               string_ok("\xe2\x82\xac") == 0 && string_ok("\xf0\x9f\x8c\x8d") == 0,
           "ASCII, empty, 2-, 3- and 4-byte UTF-8 pass");
    tap_ok(string_ok("\xc0\xaf") < 0 && string_ok("\xe0\x80\xaf") < 0 &&
               string_ok("\xf0\x80\x80\xaf") < 0,
           "overlong forms are refused");
    tap_ok(string_ok("\xed\xa0\x80") < 0 && string_ok("\xf4\x90\x80\x80") < 0 &&
               string_ok("\xf5\x80\x80\x80") < 0,
           "surrogates and code points past U+10FFFF are refused");
    tap_ok(string_ok("\x80") < 0 && string_ok("\xc2") < 0 && string_ok("\xe2\x82") < 0 &&
               string_ok("\xc2\x41") < 0,
           "a lone continuation byte and cut sequences are refused");
}

static void numbers(void)
{
    struct drx_attr a, b;
    struct drx_err err;
    char *text;

    tap_ok(drx_attr_parse("r", "i16", "-5,300", &a, &err) == 0 && !a.is_string && a.n == 2 &&
               ((short *)a.value)[0] == -5 && ((short *)a.value)[1] == 300,
           "i16 list: %s", err.msg);
    text = drx_attr_format(&a);
    tap_ok(text && strcmp(text, "-5,300") == 0, "formats back: %s", text ? text : "?");
    free(text);
    tap_ok(drx_attr_copy(&b, &a) == 0 && b.value != a.value && b.n == 2 &&
               memcmp(b.value, a.value, 4) == 0 && strcmp(drx_attr_type_name(&b), "i16") == 0,
           "deep copy");
    drx_attr_fini(&b);
    drx_attr_fini(&a);
    tap_ok(drx_attr_parse("r", "u8", "256", &a, &err) == -ERANGE, "u8 256: %s", err.msg);
    tap_ok(drx_attr_parse("r", "c64", "1", &a, &err) < 0, "complex types are refused: %s",
           err.msg);
    tap_ok(drx_attr_parse("r", "f64", "nan,-inf,0.01", &a, &err) == 0 && a.n == 3,
           "f64 with nan and inf: %s", err.msg);
    drx_attr_fini(&a);
    drx_attr_fini(&a); /* twice is safe */
}

int main(void)
{
    names();
    utf8();
    numbers();
    return tap_done();
}
