/* Views, the words: parsing KEY=VALUE words into a view spec, and splitting
 * a path ARRAY/WORD/.../FILE into the array and its words (view.c resolves
 * and copies).
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
#include <sys/stat.h>

void drx_view_spec_init(struct drx_view_spec *s)
{
    s->nwords = 0;
}

/* Strict signed integer: optional '-', digits, nothing else. */
static bool parse_i64(const char *p, const char *end, int64_t *out)
{
    bool neg = false;
    uint64_t v = 0;

    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (p == end)
        return false;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p) || v > (uint64_t)INT64_MAX / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > (uint64_t)INT64_MAX)
            return false;
    }
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
        if (!parse_i64(val, end, &w->start))
            return drx_err_set(err, EINVAL, "'%.200s': '%.100s' is not an index or a slice", word,
                               val);
        return 0;
    }
    if (c2 && strchr(c2 + 1, ':'))
        return drx_err_set(err, EINVAL, "'%.200s': a slice is START:STOP[:STEP]", word);
    w->has_start = c1 > val;
    if (w->has_start && !parse_i64(val, c1, &w->start))
        return drx_err_set(err, EINVAL, "'%.200s': bad slice start", word);
    {
        const char *stop_end = c2 ? c2 : end;
        w->has_stop = stop_end > c1 + 1;
        if (w->has_stop && !parse_i64(c1 + 1, stop_end, &w->stop))
            return drx_err_set(err, EINVAL, "'%.200s': bad slice stop", word);
    }
    if (c2 && c2 + 1 < end) {
        if (!parse_i64(c2 + 1, end, &w->step))
            return drx_err_set(err, EINVAL, "'%.200s': bad slice step", word);
        if (w->step <= 0)
            return drx_err_set(err, EINVAL, "'%.200s': the step must be positive", word);
    }
    return 0;
}

int drx_view_spec_add(struct drx_view_spec *s, const char *word, struct drx_err *err)
{
    const char *eq = strchr(word, '=');
    struct drx_view_word w;
    size_t klen;
    const char *val;

    if (s->nwords >= DRX_VIEW_MAX_WORDS)
        return drx_err_set(err, E2BIG, "more than %d view words", DRX_VIEW_MAX_WORDS);
    if (!eq)
        return drx_err_set(err, EINVAL, "'%.200s' is not a KEY=VALUE view word", word);
    memset(&w, 0, sizeof w);
    klen = (size_t)(eq - word);
    val = eq + 1;
    w.dim = -1;
    if (klen == 5 && strncmp(word, "order", 5) == 0) {
        w.kind = DRX_WORD_ORDER;
        if (strcmp(val, "C") == 0 || strcmp(val, "c") == 0)
            w.value = DRX_ORDER_C;
        else if (strcmp(val, "F") == 0 || strcmp(val, "f") == 0)
            w.value = DRX_ORDER_F;
        else
            return drx_err_set(err, EINVAL, "'%.200s': order is C or F", word);
    } else if (klen == 3 && strncmp(word, "rep", 3) == 0) {
        w.kind = DRX_WORD_REP;
        if (strcmp(val, "native") == 0)
            w.value = DRX_REP_NATIVE;
        else if (strcmp(val, "external32") == 0)
            w.value = DRX_REP_EXTERNAL32;
        else
            return drx_err_set(err, EINVAL, "'%.200s': rep is native or external32", word);
    } else {
        int rc;
        w.kind = DRX_WORD_SLICE;
        if (klen > 3 && strncmp(word, "dim", 3) == 0 && isdigit((unsigned char)word[3])) {
            int64_t d;
            if (!parse_i64(word + 3, eq, &d) || d >= DRX_MAX_RANK || (word[3] == '0' && klen > 4))
                return drx_err_set(err, EINVAL, "'%.200s': no such dimension", word);
            w.dim = (int)d;
        } else if (klen == 0 || klen > DRX_MAX_DIM_NAME) {
            return drx_err_set(err, EINVAL, "'%.200s': bad key", word);
        } else {
            memcpy(w.name, word, klen);
            w.name[klen] = '\0';
            if (!drx_array_dim_name_valid(w.name))
                return drx_err_set(err, EINVAL, "'%.200s': unknown key '%s'", word, w.name);
        }
        rc = parse_slice(&w, val, word, err);
        if (rc)
            return rc;
    }
    s->word[s->nwords++] = w;
    return 0;
}

/* Why path names no array: the first component that is missing, or what
 * the path is instead. */
static int no_array(const char *path, struct drx_err *err)
{
    char buf[PATH_MAX];
    struct stat st;

    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (lstat(buf, &st) < 0 && drx_store_classify(buf) == DRX_STORE_NONE) {
            char *slash = strrchr(buf, '/');
            const char *missing = slash + 1, *parent = slash == buf ? "/" : buf;
            if (c == '\0')
                return drx_err_set(err, ENOENT, "%.400s: no such array", path);
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

static bool view_file_name(const char *name)
{
    return strcmp(name, "data") == 0 || strcmp(name, "data.npy") == 0 ||
           strcmp(name, "data.nc") == 0 || strcmp(name, "info") == 0;
}

int drx_view_path_split(const char *path, char *array, size_t len, struct drx_view_spec *s,
                        struct drx_err *err)
{
    size_t n = strlen(path);
    const char *words = NULL;

    if (n >= len || n >= PATH_MAX)
        return drx_err_set(err, ENAMETOOLONG, "%.400s: path too long", path);
    memcpy(array, path, n + 1);
    if (n > 4 && (strcmp(path + n - 4, ".xmd") == 0 || strcmp(path + n - 4, ".xta") == 0)) {
        array[n - 4] = '\0';
        if (drx_store_classify(array) == DRX_STORE_ARRAY)
            return 0;
        memcpy(array, path, n + 1);
    }
    /* Shortest prefix first: below an array every name is a view word,
     * whatever else the store holds (as at the mount point). */
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        array[i] = '\0';
        if (drx_store_classify(array) == DRX_STORE_ARRAY) {
            words = path + i;
            break;
        }
        array[i] = path[i];
    }
    if (!words)
        return no_array(path, err);
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
        if (view_file_name(word)) {
            if (words[strspn(words, "/")] != '\0')
                return drx_err_set(err, ENOTDIR, "%s: a file of the view, not a directory", word);
            break;
        }
        if ((rc = drx_view_spec_add(s, word, err)) < 0)
            return rc;
    }
    return 0;
}
