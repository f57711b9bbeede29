/* Views, the words: parsing KEY=VALUE words and view paths, and resolving
 * them against an array's bounds into a struct drx_view.  The copy engine
 * that moves a view's bytes is in view.c.
 */
#include "drx/view.h"

#include "array_i.h"
#include "drx/store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

void drx_view_spec_init(struct drx_view_spec *s)
{
    s->nwords = 0;
    s->file = NULL;
}

/* Strict signed integer: optional '-', digits, nothing else.  sat: a
 * value past 64 bits saturates (a slice's bounds and step, which Python
 * clamps to the dimension whatever their size); else it is refused (an
 * index, out of range as in Python). */
static bool parse_i64(const char *p, const char *end, bool sat, int64_t *out)
{
    bool neg = false, over = false;
    uint64_t v = 0;

    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (p == end)
        return false;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return false;
        if (over || v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
            over = true;
        else
            v = v * 10 + (uint64_t)(*p - '0');
    }
    if (over && !sat)
        return false;
    if (over)
        v = (uint64_t)INT64_MAX;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static int parse_slice(struct drx_view_word *w, const char *val, const char *word,
                       struct drx_err *err)
{
    const char *c1 = strchr(val, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    const char *end = val + strlen(val);

    w->step = 1;
    if (!c1) {
        w->single = true;
        w->has_start = w->has_stop = true;
        /* past 64 bits: saturated, so that it is out of range below */
        if (!parse_i64(val, end, true, &w->start))
            return drx_err_set(err, EINVAL, "'%.200s': '%.100s' is not an index or a slice", word,
                               val);
        return 0;
    }
    if (c2 && strchr(c2 + 1, ':'))
        return drx_err_set(err, EINVAL, "'%.200s': a slice is START:STOP[:STEP]", word);
    w->has_start = c1 > val;
    if (w->has_start && !parse_i64(val, c1, true, &w->start))
        return drx_err_set(err, EINVAL, "'%.200s': bad slice start", word);
    {
        const char *stop_end = c2 ? c2 : end;
        w->has_stop = stop_end > c1 + 1;
        if (w->has_stop && !parse_i64(c1 + 1, stop_end, true, &w->stop))
            return drx_err_set(err, EINVAL, "'%.200s': bad slice stop", word);
    }
    if (c2 && c2 + 1 < end) {
        if (!parse_i64(c2 + 1, end, true, &w->step))
            return drx_err_set(err, EINVAL, "'%.200s': bad slice step", word);
        if (w->step <= 0)
            return drx_err_set(err, EINVAL, "'%.200s': the step must be positive", word);
    }
    return 0;
}

/* The words with a fixed set of values: order= and rep=. */
static const struct enum_word {
    const char *key;
    int kind;    /* DRX_WORD_ORDER or DRX_WORD_REP */
    bool nocase; /* order=c is order=C */
    const char *names[2];
    int values[2];
    const char *help;
} enum_words[] = {
    {"order", DRX_WORD_ORDER, true, {"C", "F"}, {DRX_ORDER_C, DRX_ORDER_F}, "order is C or F"},
    {"rep",
     DRX_WORD_REP,
     false,
     {"native", "external32"},
     {DRX_REP_NATIVE, DRX_REP_EXTERNAL32},
     "rep is native or external32"},
};

/* 1 when KEY (klen bytes) is an enumerated word and was parsed into w, 0
 * when it is not one, or a negative errno. */
static int parse_enum(struct drx_view_word *w, const char *word, size_t klen, const char *val,
                      struct drx_err *err)
{
    for (size_t i = 0; i < sizeof enum_words / sizeof enum_words[0]; i++) {
        const struct enum_word *e = &enum_words[i];
        if (strlen(e->key) != klen || strncmp(word, e->key, klen) != 0)
            continue;
        w->kind = e->kind;
        for (int j = 0; j < 2; j++)
            if ((e->nocase ? strcasecmp : strcmp)(val, e->names[j]) == 0) {
                w->value = e->values[j];
                return 1;
            }
        return drx_err_set(err, EINVAL, "'%.200s': %s", word, e->help);
    }
    return 0;
}

/* The dimension a slice word names: dimN or a dimension name. */
static int parse_slice_key(struct drx_view_word *w, const char *word, size_t klen,
                           struct drx_err *err)
{
    if (klen > 3 && strncmp(word, "dim", 3) == 0 && isdigit((unsigned char)word[3])) {
        int64_t d;
        if (!parse_i64(word + 3, word + klen, false, &d) || d >= DRX_MAX_RANK ||
            (word[3] == '0' && klen > 4))
            return drx_err_set(err, EINVAL, "'%.200s': no such dimension", word);
        w->dim = (int)d;
        return 0;
    }
    if (klen == 0 || klen > DRX_MAX_DIM_NAME)
        return drx_err_set(err, EINVAL, "'%.200s': bad key", word);
    memcpy(w->name, word, klen);
    w->name[klen] = '\0';
    if (!drx_array_dim_name_valid(w->name))
        return drx_err_set(err, EINVAL, "'%.200s': unknown key '%s'", word, w->name);
    return 0;
}

int drx_view_spec_add(struct drx_view_spec *s, const char *word, struct drx_err *err)
{
    const char *eq = strchr(word, '=');
    struct drx_view_word w;
    size_t klen;
    int rc;

    if (s->nwords >= DRX_VIEW_MAX_WORDS)
        return drx_err_set(err, E2BIG, "more than %d view words", DRX_VIEW_MAX_WORDS);
    if (!eq)
        return drx_err_set(err, EINVAL, "'%.200s' is not a KEY=VALUE view word", word);
    memset(&w, 0, sizeof w);
    klen = (size_t)(eq - word);
    w.dim = -1;
    rc = parse_enum(&w, word, klen, eq + 1, err);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        w.kind = DRX_WORD_SLICE;
        if ((rc = parse_slice_key(&w, word, klen, err)) ||
            (rc = parse_slice(&w, eq + 1, word, err)))
            return rc;
    }
    s->word[s->nwords++] = w;
    return 0;
}

int drx_array_no_such(const char *path, struct drx_err *err)
{
    char buf[PATH_MAX];
    struct stat st;

    snprintf(buf, sizeof buf, "%s", path);
    /* a relative path (or "") has no '/' before its first component */
    for (char *p = buf + (buf[0] == '/');; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        int e = lstat(buf, &st) < 0 ? errno : 0;
        if (e && drx_store_classify(buf) == DRX_STORE_NONE) {
            /* a name the caller may not look at is not a missing one: a
             * user other than root asking for root's array in a 0700
             * directory was told "no such array" where ls says EACCES */
            if (e == EACCES)
                return drx_err_set(err, EACCES, "%.400s: %s", path, strerror(e));
            char *slash = strrchr(buf, '/');
            const char *missing = slash ? slash + 1 : buf;
            const char *parent = !slash ? "." : slash == buf ? "/" : buf;
            if (c == '\0')
                return drx_err_set(err, ENOENT, "%.400s: no such array", path);
            if (slash)
                *slash = '\0';
            return drx_err_set(err, ENOENT,
                               "%.400s: no such array ('%.100s' does not exist in %.200s)", path,
                               missing, parent);
        }
        if (c == '\0')
            break;
        *p = c;
    }
    switch (drx_store_classify(path)) {
    case DRX_STORE_STRIPED:
        return drx_err_set(err, ENOENT, "%.400s: not an array (a striped file)", path);
    case DRX_STORE_DIRECTORY:
        return drx_err_set(err, ENOENT, "%.400s: not an array (a directory)", path);
    default:
        return drx_err_set(err, ENOENT, "%.400s: not an array", path);
    }
}

/* name as the file of a view it names, or NULL */
static const char *view_file_name(const char *name)
{
    static const char *const files[] = {"data", "data.npy", "data.nc", "info"};

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (strcmp(name, files[i]) == 0)
            return files[i];
    return NULL;
}

/* Whether PATH (N bytes, copied in ARRAY) names an array's own .xmd or .xta
 * file; then ARRAY holds the array's path, else ARRAY is left as PATH. */
static bool split_array_file(const char *path, size_t n, char *array)
{
    if (n > 4 && (strcmp(path + n - 4, ".xmd") == 0 || strcmp(path + n - 4, ".xta") == 0)) {
        array[n - 4] = '\0';
        if (drx_store_classify(array) == DRX_STORE_ARRAY)
            return true;
        memcpy(array, path, n + 1);
    }
    return false;
}

/* The view words after the shortest prefix of PATH (N bytes, copied in
 * ARRAY) that is an array, with ARRAY cut to that prefix; NULL if none. */
static const char *split_array_prefix(const char *path, size_t n, char *array)
{
    /* Shortest prefix first: below an array every name is a view word,
     * whatever else the store holds (as at the mount point). */
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        array[i] = '\0';
        if (drx_store_classify(array) == DRX_STORE_ARRAY)
            return path + i;
        array[i] = path[i];
    }
    return NULL;
}

/* Adds the '/'-separated view WORDS to S, up to a file of the view (which
 * must be the last name). */
static int add_view_words(const char *words, struct drx_view_spec *s, struct drx_err *err)
{
    while (*words) {
        char word[NAME_MAX + 1];
        size_t wl;
        int rc;

        while (*words == '/')
            words++;
        wl = strcspn(words, "/");
        if (wl == 0)
            break;
        if (wl > NAME_MAX)
            return drx_err_set(err, ENAMETOOLONG, "'%.100s...': name too long", words);
        memcpy(word, words, wl);
        word[wl] = '\0';
        words += wl;
        if ((s->file = view_file_name(word))) {
            if (words[strspn(words, "/")] != '\0')
                return drx_err_set(err, ENOTDIR, "%s: a file of the view, not a directory", word);
            break;
        }
        if ((rc = drx_view_spec_add(s, word, err)) < 0)
            return rc;
    }
    return 0;
}

int drx_view_path_split(const char *path, char *array, size_t len, struct drx_view_spec *s,
                        struct drx_err *err)
{
    size_t n = strlen(path);
    const char *words;

    if (n >= len || n >= PATH_MAX)
        return drx_err_set(err, ENAMETOOLONG, "%.400s: path too long", path);
    memcpy(array, path, n + 1);
    if (split_array_file(path, n, array))
        return 0;
    words = split_array_prefix(path, n, array);
    if (!words)
        return drx_array_no_such(path, err);
    return add_view_words(words, s, err);
}

void drx_view_whole(const struct drx_array_meta *m, struct drx_view *v)
{
    memset(v, 0, sizeof *v);
    v->rank = m->rank;
    v->type = m->type;
    v->order = DRX_ORDER_C;
    v->rep = DRX_REP_NATIVE;
    v->elem_size = m->elem_size;
    v->nelem = 1;
    for (int d = 0; d < m->rank; d++) {
        v->step[d] = 1;
        v->count[d] = m->bounds[d];
        v->nelem *= m->bounds[d];
    }
}

/* Python's slice.indices() for a positive step over n elements. */
static int64_t clamp_index(int64_t i, int64_t n)
{
    if (i < 0) {
        i += n;
        return i < 0 ? 0 : i;
    }
    return i > n ? n : i;
}

/* The word as the user wrote it, near enough to point at it in a message
 * (parsing dropped the text: "+5" comes back as "5"). */
static void word_format(const struct drx_view_word *w, char *buf, size_t len)
{
    int n = w->dim >= 0 ? snprintf(buf, len, "dim%d=", w->dim) : snprintf(buf, len, "%s=", w->name);
    size_t used = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;

    if (w->single) {
        snprintf(buf + used, len - used, "%" PRId64, w->start);
        return;
    }
    if (w->has_start)
        used += (size_t)snprintf(buf + used, len - used, "%" PRId64, w->start);
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, ":");
    if (w->has_stop && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%" PRId64, w->stop);
    if (w->step != 1 && used < len)
        snprintf(buf + used, len - used, ":%" PRId64, w->step);
}

/* Why a dimension word does not resolve, naming the word, the dimension
 * and what would have been right. */
static int word_error(const struct drx_view_word *w, const struct drx_array_meta *m, int d,
                      int64_t n, struct drx_err *err)
{
    char word[DRX_MAX_DIM_NAME + 80];

    word_format(w, word, sizeof word);
    if (d < 0) {
        char names[DRX_ARRAY_DIM_NAMES_LEN];
        if (!drx_array_dim_names(m, names, sizeof names))
            return drx_err_set(err, ENOENT,
                               "%s: no dimension named '%s' (the dimensions have "
                               "no names: use dim0..dim%d)",
                               word, w->name, m->rank - 1);
        return drx_err_set(err, ENOENT, "%s: no dimension named '%s' (names: %.300s)", word,
                           w->name, names);
    }
    if (d >= m->rank)
        return drx_err_set(err, ENOENT, "%s: no dimension %d (rank %d: dim0..dim%d)", word, d,
                           m->rank, m->rank - 1);
    /* an index past 64 bits was saturated (parse_i64): said so, not the
     * saturated number */
    char index[32];
    snprintf(index, sizeof(index), "%s", w->start < 0 ? " <= -(2^63-1)" : " >= 2^63-1");
    if (w->start != INT64_MAX && w->start != -INT64_MAX)
        snprintf(index, sizeof(index), " %" PRId64, w->start);
    else if (strchr(word, '='))
        *strchr(word, '=') = '\0';
    if (n == 0)
        return drx_err_set(err, ENOENT, "%s: index%s of an empty dimension %d", word, index, d);
    if (w->start < 0)
        return drx_err_set(err, ENOENT, "%s: index%s outside -%" PRId64 "..-1", word, index, n);
    return drx_err_set(err, ENOENT, "%s: index%s outside 0..%" PRId64, word, index, n - 1);
}

/* Applies dimension word W to V (a view of M): an index or a slice. */
static int resolve_dim_word(const struct drx_view_word *w, const struct drx_array_meta *m,
                            struct drx_view *v, struct drx_err *err)
{
    int64_t n, start, stop;
    uint64_t cnt;
    int d = w->dim >= 0 ? w->dim : drx_array_dim_lookup(m, w->name);

    if (d < 0 || d >= m->rank)
        return word_error(w, m, d, 0, err);
    n = (int64_t)v->count[d];
    if (w->single) {
        start = w->start < 0 ? w->start + n : w->start;
        if (start < 0 || start >= n)
            return word_error(w, m, d, n, err);
        cnt = 1;
    } else {
        start = w->has_start ? clamp_index(w->start, n) : 0;
        stop = w->has_stop ? clamp_index(w->stop, n) : n;
        cnt = stop > start ? (uint64_t)((stop - start - 1) / w->step + 1) : 0;
    }
    v->origin[d] += (uint64_t)start * v->step[d];
    /* A step only matters when two or more elements remain; nested steps
     * cannot overflow then because the elements lie inside the bounds. */
    v->step[d] = cnt > 1 ? v->step[d] * (uint64_t)w->step : 1;
    v->count[d] = cnt;
    return 0;
}

int drx_view_cut_note(const struct drx_view_spec *s, const struct drx_array_meta *m,
                      const char *array, char *buf, size_t len)
{
    struct drx_view v;

    drx_view_whole(m, &v);
    for (int i = 0; i < s->nwords; i++) {
        const struct drx_view_word *w = &s->word[i];
        int d;

        if (w->kind != DRX_WORD_SLICE)
            continue;
        d = w->dim >= 0 ? w->dim : drx_array_dim_lookup(m, w->name);
        if (d < 0 || d >= m->rank)
            return 0;
        int64_t n = (int64_t)v.count[d], past = 0;
        if (!w->single && w->has_stop && w->stop > n)
            past = w->stop;
        else if (!w->single && w->has_start && w->start > n)
            past = w->start;
        if (past) {
            char word[DRX_MAX_DIM_NAME + 80], dim[DRX_MAX_DIM_NAME + 8];
            word_format(w, word, sizeof word);
            if (m->dim_name[d][0])
                snprintf(dim, sizeof dim, "%s", m->dim_name[d]);
            else
                snprintf(dim, sizeof dim, "%d", d);
            /* the whole dimension so far: growing the array is the remedy */
            bool whole = v.origin[d] == 0 && v.step[d] == 1 && v.count[d] == m->bounds[d];
            if (whole)
                snprintf(buf, len,
                         "%s reaches past the end of dimension %s (%" PRId64
                         " long), and a slice is cut at the end: grow it first "
                         "(drx extend %s %s %" PRId64 ")",
                         word, dim, n, array, dim, past - n);
            else
                snprintf(buf, len,
                         "%s reaches past the end of dimension %s in the view before it "
                         "(%" PRId64 " long), and a slice is cut at the end",
                         word, dim, n);
            return 1;
        }
        if (resolve_dim_word(w, m, &v, NULL) < 0)
            return 0;
    }
    return 0;
}

int drx_view_resolve(const struct drx_view_spec *s, const struct drx_array_meta *m,
                     struct drx_view *v, struct drx_err *err)
{
    drx_view_whole(m, v);
    for (int i = 0; i < s->nwords; i++) {
        const struct drx_view_word *w = &s->word[i];
        int rc;

        if (w->kind == DRX_WORD_ORDER) {
            v->order = (enum drx_order)w->value;
            continue;
        }
        if (w->kind == DRX_WORD_REP) {
            v->rep = (enum drx_rep)w->value;
            continue;
        }
        if ((rc = resolve_dim_word(w, m, v, err)) < 0)
            return rc;
    }
    v->nelem = 1;
    for (int d = 0; d < v->rank; d++)
        v->nelem *= v->count[d];
    return 0;
}
