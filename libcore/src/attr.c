/* Array attributes: names, values from text, values as text. */
#include "drx/attr.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int drx_attr_name_check(const char *name, struct drx_err *err)
{
    size_t n = strlen(name);

    if (n == 0)
        return drx_err_set(err, EINVAL, "an attribute name is empty");
    if (n > DRX_MAX_ATTR_NAME)
        return drx_err_set(err, EINVAL, "attribute name '%.40s...' is longer than %d bytes", name,
                           DRX_MAX_ATTR_NAME);
    if (!isalpha((unsigned char)name[0]) && name[0] != '_')
        return drx_err_set(err, EINVAL, "attribute name '%.80s' must start with a letter or '_'",
                           name);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_.@+-", name[i]))
            return drx_err_set(err, EINVAL,
                               "attribute name '%.80s' has a character outside "
                               "[A-Za-z0-9_.@+-]",
                               name);
    /* The fill is the array's own (drx create); drx_* are the names data.nc
     * gives the view's origin and step. */
    if (strcmp(name, "_FillValue") == 0)
        return drx_err_set(err, EINVAL, "_FillValue is the array's fill, not an attribute");
    if (strncmp(name, "drx_", 4) == 0)
        return drx_err_set(err, EINVAL, "attribute names drx_* are reserved for drxfs");
    return 0;
}

bool drx_attr_cf_number(const char *name)
{
    static const char *const names[] = {"scale_factor", "add_offset",  "missing_value",
                                        "valid_min",    "valid_max",   "valid_range",
                                        "actual_range", "flag_values", "flag_masks"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* Length of the UTF-8 sequence at p (1..4), or 0 when it is not valid
 * UTF-8 (overlong forms, surrogates and code points past U+10FFFF are not). */
/* The length a UTF-8 sequence starting with byte b has (0: b cannot
 * start one) and the bits b gives of its code point. */
static int utf8_lead(unsigned char b, uint32_t *c)
{
    static const struct {
        unsigned char lo, hi, mask;
        int n;
    } leads[] = {{0xc2, 0xdf, 0x1f, 2}, {0xe0, 0xef, 0x0f, 3}, {0xf0, 0xf4, 0x07, 4}};

    for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++)
        if (b >= leads[i].lo && b <= leads[i].hi) {
            *c = b & leads[i].mask;
            return leads[i].n;
        }
    return 0;
}

/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
static bool utf8_code_ok(int n, uint32_t c)
{
    if (n == 3)
        return c >= 0x800 && (c < 0xd800 || c > 0xdfff);
    return n != 4 || (c >= 0x10000 && c <= 0x10ffff);
}

static int utf8_len(const unsigned char *p)
{
    uint32_t c = 0;
    int n;

    if (p[0] < 0x80)
        return 1;
    if (!(n = utf8_lead(p[0], &c)))
        return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    return utf8_code_ok(n, c) ? n : 0;
}

static int parse_numbers(struct drx_attr *a, const char *text, struct drx_err *err)
{
    size_t size = drx_type_size(a->type), cap = 0;
    const char *p = text;
    char *word = NULL;
    int rc = 0;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        unsigned char *grown;
        struct drx_err sub;

        if ((a->n + 1) * size > DRX_MAX_ATTR_BYTES) {
            rc = drx_err_set(err, E2BIG, "attribute %s: more than %d bytes of numbers", a->name,
                             DRX_MAX_ATTR_BYTES);
            goto out;
        }
        free(word);
        if (!(word = strndup(p, len))) {
            rc = drx_err_set(err, ENOMEM, "out of memory");
            goto out;
        }
        if (a->n == cap) {
            cap = cap ? 2 * cap : 4;
            if (!(grown = realloc(a->value, cap * size))) {
                rc = drx_err_set(err, ENOMEM, "out of memory");
                goto out;
            }
            a->value = grown;
        }
        rc = drx_type_parse_value(a->type, word, (unsigned char *)a->value + a->n * size, &sub);
        if (rc) {
            rc = drx_err_set(err, -rc, "attribute %s: value %zu: %s", a->name, a->n + 1, sub.msg);
            goto out;
        }
        a->n++;
        if (!comma)
            break;
        p = comma + 1;
    }
out:
    free(word);
    return rc;
}

int drx_attr_parse(const char *name, const char *type, const char *text, struct drx_attr *out,
                   struct drx_err *err)
{
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = drx_attr_name_check(name, err)))
        return rc;
    if (!(out->name = strdup(name))) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    if (!type || strcmp(type, "string") == 0) {
        out->is_string = true;
        out->n = strlen(text);
        if (out->n > DRX_MAX_ATTR_BYTES) {
            rc = drx_err_set(err, E2BIG, "attribute %s: a string longer than %d bytes", name,
                             DRX_MAX_ATTR_BYTES);
            goto out;
        }
        /* text for every reader: info's JSON and netCDF's char data would
         * otherwise carry bytes no UTF-8 reader accepts */
        for (size_t i = 0; i < out->n;) {
            int l = utf8_len((const unsigned char *)text + i);
            if (!l) {
                rc = drx_err_set(err, EINVAL, "attribute %s: byte %zu is not UTF-8 text", name,
                                 i + 1);
                goto out;
            }
            i += (size_t)l;
        }
        if (!(out->value = strdup(text)))
            rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    if (drx_type_parse(type, &out->type, NULL) || drx_type_is_complex(out->type)) {
        rc = drx_err_set(err, EINVAL,
                         "attribute %s: type '%.40s' is not string or a non-complex element "
                         "type (i8 ... u64, f32, f64)",
                         name, type);
        goto out;
    }
    rc = parse_numbers(out, text, err);
out:
    if (rc)
        drx_attr_fini(out);
    return rc;
}

char *drx_attr_format(const struct drx_attr *a)
{
    size_t size, len = 0;
    char *text;

    if (a->is_string)
        return strdup(a->value);
    size = drx_type_size(a->type);
    /* drx_type_format_value needs at most ~40 bytes per number */
    if (!(text = malloc(a->n * 48 + 1)))
        return NULL;
    text[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        if (i)
            text[len++] = ',';
        drx_type_format_value(a->type, (const unsigned char *)a->value + i * size, text + len, 48);
        len += strlen(text + len);
    }
    return text;
}

const char *drx_attr_type_name(const struct drx_attr *a)
{
    return a->is_string ? "string" : drx_type_name(a->type);
}

int drx_attr_copy(struct drx_attr *dst, const struct drx_attr *src)
{
    size_t bytes = src->is_string ? src->n + 1 : src->n * drx_type_size(src->type);

    *dst = *src;
    dst->name = strdup(src->name);
    dst->value = malloc(bytes ? bytes : 1);
    if (!dst->name || !dst->value) {
        drx_attr_fini(dst);
        return -ENOMEM;
    }
    memcpy(dst->value, src->value, bytes);
    return 0;
}

void drx_attr_fini(struct drx_attr *a)
{
    free(a->name);
    free(a->value);
    memset(a, 0, sizeof *a);
}
