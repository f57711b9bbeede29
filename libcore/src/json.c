/* JSON helpers over libjansson (see json_i.h). */
#include "json_i.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* The mark of a raw token: control bytes that jansson always escapes and a
 * random nonce of this process, so in the dump the token's string reads
 * "\u0001\u0002drx\u0003NONCE:TOKEN", which no string of a user (who
 * cannot know the nonce) can imitate. */
#define RAW_MARK                                                                                   \
    "\x01\x02"                                                                                     \
    "drx\x03"
#define RAW_DUMPED "\"\\u0001\\u0002drx\\u0003"

static pthread_once_t nonce_once = PTHREAD_ONCE_INIT;
static char nonce[20];

static void nonce_init(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint64_t)(uintptr_t)&r ^ (uint64_t)rand();
    snprintf(nonce, sizeof nonce, "%016" PRIx64 ":", r);
}

json_t *drx_json_raw(const char *token)
{
    char s[100];
    size_t n = strlen(token);

    if (n == 0 || n > 63 ||
        strspn(token, "0123456789abcdefghijklmnopqrstuvwxyz"
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+-") != n)
        return NULL;
    pthread_once(&nonce_once, nonce_init);
    snprintf(s, sizeof s, "%s%s%s", RAW_MARK, nonce, token);
    return json_string(s);
}

json_t *drx_json_u64(uint64_t v)
{
    char s[24];

    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    snprintf(s, sizeof s, "%" PRIu64, v);
    return drx_json_raw(s);
}

json_t *drx_json_u64_list(const uint64_t *v, int n)
{
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, drx_json_u64(v[i])) < 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

static json_t *nonfinite(double d, enum drx_json_nonfinite nf)
{
    static const char *const text[3][3] = {
        {"nan", "inf", "-inf"},
        {"NaN", "Infinity", "-Infinity"},
        {"NaN", "Infinity", "-Infinity"},
    };
    int which = isnan(d) ? 0 : d > 0 ? 1 : 2;

    if (nf == DRX_JSON_NONFINITE_BARE)
        return drx_json_raw(text[nf][which]);
    return json_string(text[nf][which]);
}

json_t *drx_json_value(enum drx_type t, const void *p, enum drx_json_nonfinite nf)
{
    char num[64];

    if (t == DRX_F32 || t == DRX_F64) {
        double d;
        if (t == DRX_F32) {
            float f;
            memcpy(&f, p, sizeof f);
            d = f;
        } else {
            memcpy(&d, p, sizeof d);
        }
        if (!isfinite(d))
            return nonfinite(d, nf);
        drx_type_format_value(t, p, num, sizeof num); /* the shortest that reads back */
        /* "1" is an integer to a JSON reader: keep floats floats */
        if (!strpbrk(num, ".eE"))
            strcat(num, ".0");
        return drx_json_raw(num);
    }
    drx_type_format_value(t, p, num, sizeof num);
    return drx_json_raw(num);
}

int drx_json_set(json_t *obj, const char *key, json_t *value)
{
    if (!value)
        return -ENOMEM;
    return json_object_set_new(obj, key, value) < 0 ? -ENOMEM : 0;
}

/* Counts the raw tokens of a tree, to check the dump against. */
static size_t count_raw(const json_t *j)
{
    size_t n = 0, i;
    const char *key;
    json_t *v;

    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        size_t m = strlen(RAW_MARK);
        return strncmp(s, RAW_MARK, m) == 0 && strncmp(s + m, nonce, strlen(nonce)) == 0;
    }
    if (json_is_array(j))
        json_array_foreach(j, i, v) n += count_raw(v);
    if (json_is_object(j))
        json_object_foreach((json_t *)j, key, v) n += count_raw(v);
    return n;
}

/* Length of a string literal starting at p (the quote), quotes included. */
static size_t string_len(const char *p)
{
    const char *q = p + 1;
    while (*q && *q != '"')
        q += (*q == '\\' && q[1]) ? 2 : 1;
    return (size_t)(q - p) + (*q == '"');
}

/* A bare token of a JSON text that jansson cannot hold (see
 * drx_json_load): NaN, Infinity, -Infinity or an integer outside int64. */
static bool token_raw(const char *t, size_t n)
{
    static const char *const names[] = {"NaN", "Infinity", "-Infinity"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && memcmp(t, names[i], n) == 0)
            return true;
    size_t sign = n > 0 && t[0] == '-', digits = 0;
    while (sign + digits < n && t[sign + digits] >= '0' && t[sign + digits] <= '9')
        digits++;
    if (digits == 0 || sign + digits != n)
        return false;
    /* past 19 digits always out of range; at 19, compare with the limit */
    const char *lim = sign ? "9223372036854775808" : "9223372036854775807";
    while (digits > 1 && t[sign] == '0')
        sign++, digits--;
    return digits > 19 || (digits == 19 && memcmp(t + sign, lim, 19) > 0);
}

json_t *drx_json_load(const void *text, size_t len)
{
    static const char tokchars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-";
    char mark[64];
    const char *in = text;
    size_t raws = 0;

    pthread_once(&nonce_once, nonce_init);
    size_t mlen = (size_t)snprintf(mark, sizeof mark, "%s%s", RAW_DUMPED, nonce);
    /* one pass to size the copy, one to make it: a token grows by the
     * mark and two quotes, and is at most 63 bytes (longer ones stay as
     * they are, for jansson to refuse) */
    char *out = NULL, *w = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (raws > (SIZE_MAX - len - 1) / (mlen + 2) ||
                !(out = w = malloc(len + raws * (mlen + 2) + 1)))
                return NULL;
        }
        for (size_t i = 0; i < len;) {
            size_t n = 1;
            if (in[i] == '"') {
                while (i + n < len && in[i + n] != '"')
                    n += in[i + n] == '\\' && i + n + 1 < len ? 2 : 1;
                n += i + n < len;
            } else if (strchr(tokchars, in[i]) && in[i]) {
                while (i + n < len && in[i + n] && strchr(tokchars, in[i + n]))
                    n++;
                if (n <= 63 && token_raw(in + i, n)) {
                    if (pass == 0)
                        raws++;
                    else
                        w += sprintf(w, "%s%.*s\"", mark, (int)n, in + i);
                    i += n;
                    continue;
                }
            }
            if (pass == 1) {
                memcpy(w, in + i, n);
                w += n;
            }
            i += n;
        }
    }
    json_t *j = json_loadb(out, (size_t)(w - out), 0, NULL);
    free(out);
    return j;
}

/* If p (a '[') opens a list of scalars, writes it as "[a, b]" at w and
 * returns the bytes of text it covered; 0 otherwise. */
static size_t inline_list(const char *p, char *w, size_t *wrote)
{
    const char *q = p + 1;
    char *o = w;

    *o++ = '[';
    while (*q && *q != ']') {
        if (*q == '{' || *q == '[')
            return 0;
        if (*q == '"') {
            size_t n = string_len(q);
            memcpy(o, q, n);
            o += n;
            q += n;
        } else if (*q == ',') {
            o += sprintf(o, ", ");
            q++;
        } else if (*q == ' ' || *q == '\n') {
            q++;
        } else {
            *o++ = *q++;
        }
    }
    if (*q != ']')
        return 0;
    *o++ = ']';
    *wrote = (size_t)(o - w);
    return (size_t)(q + 1 - p);
}

/* Lists of numbers and strings on one line ("shape": [4, 6]), objects
 * indented: the layout `drx info --json` has always had.  In place (the
 * text only gets shorter). */
static void inline_lists(char *text)
{
    char *r = text, *w = text;

    while (*r) {
        size_t used, wrote;
        if (*r == '"') {
            size_t n = string_len(r);
            memmove(w, r, n);
            w += n;
            r += n;
        } else if (*r == '[' && (used = inline_list(r, w, &wrote)) > 0) {
            r += used;
            w += wrote;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

char *drx_json_dump_lines(const json_t *root, size_t flags)
{
    char *text = drx_json_dump(root, flags);
    if (text)
        inline_lists(text);
    return text;
}

char *drx_json_dump(const json_t *root, size_t flags)
{
    char *text = json_dumps(root, flags), *out, *w;
    const char *r;
    size_t raws, seen = 0, mlen;
    char mark[64];

    pthread_once(&nonce_once, nonce_init);
    raws = count_raw(root);
    mlen = (size_t)snprintf(mark, sizeof mark, "%s%s", RAW_DUMPED, nonce);

    if (!text)
        return NULL;
    if (!(out = malloc(strlen(text) + 2))) {
        free(text);
        return NULL;
    }
    /* every marked string becomes its token; the tokens are shorter */
    for (r = text, w = out; *r;) {
        if (strncmp(r, mark, mlen) == 0) {
            const char *end = strchr(r + mlen, '"');
            if (!end)
                break;
            memcpy(w, r + mlen, (size_t)(end - r - mlen));
            w += end - r - mlen;
            r = end + 1;
            seen++;
        } else {
            *w++ = *r++;
        }
    }
    *w++ = '\n';
    *w = '\0';
    free(text);
    /* a key that looks like a mark (it would have to hold the nonce) makes
     * the counts differ */
    if (seen != raws) {
        free(out);
        return NULL;
    }
    return out;
}
