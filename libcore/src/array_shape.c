/* The .xmd's libconfig part: its shape checked against the format's bounds
 * in one pass over the text, before libconfig builds a tree of it. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "array_i.h"
#include "drx/attr.h"

/* libconfig builds a tree of the whole text before drx can look at it, at
 * about 130 bytes a setting (measured), so 64 MiB of tiny entries cost the
 * reader 1.9 GB however wrong they are.  Every container a valid .xmd has
 * is bounded by the format: the top level holds only the keys of
 * array_meta.c's table, a group (an attribute, a growth, an axial record)
 * 3 settings, an array (an attribute's values; chunk, dims, coef...)
 * DRX_MAX_ATTR_BYTES values (a u8 attribute), a list DRX_MAX_ATTRS
 * entries (attrs; axial has rank <= 16), except `history` and the vectors
 * in `axial`, as long as the growths of a file written by an earlier
 * version (their entries are groups, bounded).  So a file whose text
 * breaks one of these bounds is refused here, by one pass over the text,
 * before libconfig sees it.  Strings and comments are skipped as
 * cfgfile.c's scanner skips them. */
#define XMD_MAX_DEPTH 8 /* axial ( ( { coef [ ] } ) ) is 4 deep */
#define XMD_MAX_GROUP 3
#define XMD_NO_LIMIT ((size_t)-1)

struct shape_level {
    char open;    /* '{', '[', '(' or 0 for the top level */
    bool fresh;   /* the next value starts an entry */
    size_t n, max; /* entries so far, most allowed */
    unsigned line; /* where it opens */
};

struct shape_scan {
    const char *t;
    size_t len, i;
    unsigned line;
    int depth;
    char key[16]; /* the top-level setting being read ("" for an unknown one) */
    struct shape_level lvl[XMD_MAX_DEPTH + 1];
};

static size_t shape_max(const struct shape_scan *s, char open)
{
    if (open == '{')
        return XMD_MAX_GROUP;
    if (open == '[')
        return DRX_MAX_ATTR_BYTES;
    if ((s->depth == 0 && strcmp(s->key, "history") == 0) ||
        (s->depth == 1 && strcmp(s->key, "axial") == 0))
        return XMD_NO_LIMIT;
    return DRX_MAX_ATTRS;
}

static int shape_bad(const struct shape_scan *s, const char *file, struct drx_err *err)
{
    const struct shape_level *l = &s->lvl[s->depth];
    const char *what = l->open == '{' ? "a group of more than %zu settings"
                       : l->open == '[' ? "an array of more than %zu values"
                                        : "a list of more than %zu entries";
    char msg[96];

    if (s->depth == 1 && l->open == '(' && strcmp(s->key, "attrs") == 0)
        return drx_err_set(err, EINVAL, "%s:%u: more than %d attributes (refused before parsing)",
                           file, l->line, DRX_MAX_ATTRS);
    snprintf(msg, sizeof msg, what, l->max);
    return drx_err_set(err, EINVAL, "%s:%u: %s (refused before parsing)", file, l->line, msg);
}

/* A value (or, at the top level, a setting's name: word w of n bytes)
 * starts at the current level: one more entry when it opens one. */
static int shape_value(struct shape_scan *s, const char *w, size_t n, const char *file,
                       struct drx_err *err)
{
    struct shape_level *l = &s->lvl[s->depth];

    if (!l->fresh)
        return 0;
    l->fresh = false;
    if (s->depth == 0) {
        if (!w || !drx_xmd_known_key(w, n))
            return drx_err_set(err, EINVAL, "%s:%u: unknown setting '%.*s'", file, s->line,
                               w ? (int)(n < 40 ? n : 40) : 1, w ? w : "?");
        memcpy(s->key, w, n);
        s->key[n] = '\0';
    }
    return ++l->n > l->max ? shape_bad(s, file, err) : 0;
}

static const char *skip_string(struct shape_scan *s, const char *p, const char *end)
{
    for (p++; p < end && *p != '"'; p++) {
        if (*p == '\\' && p + 1 < end)
            p++;
        s->line += *p == '\n';
    }
    return p < end ? p + 1 : p;
}

static const char *skip_block_comment(struct shape_scan *s, const char *p, const char *end)
{
    for (p += 2; p < end && !(*p == '*' && p + 1 < end && p[1] == '/'); p++)
        s->line += *p == '\n';
    return p < end ? p + 2 : p;
}

/* Skips a string, a comment or a word at s->i; its first byte is c. */
static void shape_skip(struct shape_scan *s, char c)
{
    const char *end = s->t + s->len, *p = s->t + s->i;

    if (c == '"') {
        p = skip_string(s, p, end);
    } else if (c == '#' || (c == '/' && p + 1 < end && p[1] == '/')) {
        p = memchr(p, '\n', (size_t)(end - p));
        p = p ? p : end;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
        p = skip_block_comment(s, p, end);
    } else {
        while (p < end && !strchr(" \t\r\n\f\"{}[](),;=:#", *p))
            p++;
    }
    s->i = (size_t)(p - s->t);
}

/* One bracket at s->i: a container opens (a value of the level it is in)
 * or closes. */
static int shape_bracket(struct shape_scan *s, char c, const char *file, struct drx_err *err)
{
    struct shape_level *l;
    size_t max;
    int rc;

    s->i++;
    if (c == '}' || c == ']' || c == ')') {
        s->depth -= s->depth > 0;
        return 0;
    }
    if ((rc = shape_value(s, NULL, 0, file, err)))
        return rc;
    if (s->depth == XMD_MAX_DEPTH)
        return drx_err_set(err, EINVAL, "%s:%u: settings nested more than %d deep", file, s->line,
                           XMD_MAX_DEPTH);
    max = shape_max(s, c);
    l = &s->lvl[++s->depth];
    *l = (struct shape_level){.open = c, .fresh = true, .max = max, .line = s->line};
    return 0;
}

int drx_xmd_shape(const char *file, const char *text, size_t len, struct drx_err *err)
{
    struct shape_scan s = {.t = text, .len = len, .line = 1};
    int rc = 0;

    s.lvl[0] = (struct shape_level){.fresh = true, .max = XMD_NO_LIMIT, .line = 1};
    while (s.i < s.len && rc == 0) {
        char c = text[s.i];
        if (strchr(" \t\r\f\n", c)) {
            s.line += c == '\n';
            s.i++;
        } else if (strchr("{}[]()", c)) {
            rc = shape_bracket(&s, c, file, err);
        } else if (strchr(",;=:", c)) {
            s.lvl[s.depth].fresh |= c == ',' || c == ';';
            s.i++;
        } else if (c == '#' || (c == '/' && s.i + 1 < len && strchr("/*", text[s.i + 1]))) {
            shape_skip(&s, c);
        } else {
            size_t at = s.i;
            shape_skip(&s, c);
            rc = shape_value(&s, c == '"' ? NULL : text + at, s.i - at, file, err);
        }
    }
    return rc;
}
