/* The .xmd (array_meta.c, array_extend.c): validation by replay with
 * file:line errors, no file reached through it (@include, FIFOs), and the
 * growth records an extension appends: taken by readers incrementally,
 * cut-short ones ignored and cut, bad ones refused. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/attr.h"
#include "tap.h"
#include "test_files.h"

static char dir[] = "/tmp/drx-test-xmd-XXXXXX";

/* Replaces the first occurrence of `from` in the .xmd with `to` and returns
 * the load error. */
static int corrupt(const char *xmd, const char *good, const char *from, const char *to,
                   struct drx_err *err)
{
    struct drx_array_meta m;
    char *p = strstr(good, from), *text;
    int rc;
    if (!p)
        return 12345;
    text = malloc(strlen(good) + strlen(to) + 1);
    memcpy(text, good, (size_t)(p - good));
    strcpy(text + (p - good), to);
    strcat(text, p + strlen(from));
    spit(xmd, text);
    free(text);
    err->msg[0] = 0;
    rc = drx_array_meta_load(xmd, &m, err);
    if (rc == 0)
        drx_array_meta_fini(&m);
    return rc;
}

/* The array of validation() as drx wrote it whole before version 2 files
 * took growth records on writing (created 6x6, dimension 1 grown by 5,
 * dimension 0 by 3, an attribute set). */
static const char folded_valid[] =
    "# drx extendible array metadata; format in drxfs's README (\"The .xmd file\").\n"
    "version = 2;\ntype = \"u16\";\nrank = 2;\nchunk = [ 4L, 4L ];\nbounds = [ 9L, 11L ];\n"
    "initial = [ 6L, 6L ];\ndims = [ \"y\", \"x\" ];\nfill = \"0\";\n"
    "attrs = (\n  { name = \"units\"; type = \"string\"; value = \"K\"; }\n);\n"
    "chunk_count = 9L;\n"
    "history = (\n  { dim = 1; from = 6L; to = 11L; },\n  { dim = 0; from = 6L; to = 9L; }\n);\n"
    "axial = (\n"
    "  ( # dimension 0\n"
    "    { start = 0L; addr = 0L; coef = [ 2L, 1L ]; },\n"
    "    { start = 2L; addr = 6L; coef = [ 3L, 1L ]; }\n"
    "  ),\n"
    "  ( # dimension 1\n"
    "    { start = 0L; addr = -1L; coef = [ 0L, 0L ]; },\n"
    "    { start = 2L; addr = 4L; coef = [ 1L, 2L ]; }\n"
    "  )\n"
    ");\n";

static void validation(void)
{
    struct drx_array_spec spec = {.type = DRX_U16, .rank = 2, .shape = {6, 6}, .chunk = {4, 4},
                                  .dim_name = {"y", "x"}};
    struct drx_array *a;
    struct drx_err err = {{0}};
    char path[300], xmd[310];
    char *good;
    size_t n;
    int rc;

    snprintf(path, sizeof path, "%s/valid", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    drx_array_create(path, &spec, &a, &err);
    drx_array_extend(a, 1, 5, &err);
    drx_array_extend(a, 0, 3, &err);
    {
        /* an attribute change writes the .xmd whole: the array as
         * created, then its growths as records */
        struct drx_attr at;
        drx_attr_parse("units", "string", "K", &at, &err);
        tap_ok(drx_array_attr_set(a, &at, &err) == 0, "attribute set: %s", err.msg);
        drx_attr_fini(&at);
    }
    drx_array_close(a);
    good = slurp(xmd, &n);
    tap_ok(strstr(good, "bounds = [ 6L, 6L ];") && strstr(good, "history = ( );") &&
               strstr(good, ");\n#+ grow dim=1 from=6 to=11 chunk_count=6\n"
                            "#+ grow dim=0 from=6 to=9 chunk_count=9\n"),
           "written whole, the growths are records after the array as created");
    free(good);
    /* The cases corrupt the same array as earlier versions wrote it whole,
     * growths folded into `history` and `axial`: still read, and checked. */
    good = strdup(folded_valid);
    spit(xmd, good);
    err.msg[0] = '\0';
    tap_ok(drx_array_open(path, DRX_RDONLY, &a, &err) == 0 && drx_array_meta(a)->bounds[1] == 11 &&
               drx_array_meta(a)->map.nchunks == 9,
           "a file with the growths folded in reads: %s", err.msg);
    drx_array_close(a);

    struct {
        const char *from, *to, *expect;
    } cases[] = {
        {"type = \"u16\"", "type = \"u17\"", "unknown element type 'u17'"},
        {"rank = 2", "rank = 0", "rank 0"},
        {"rank = 2", "rank = 3", "entries for rank 3"},
        {"chunk = [ 4L, 4L ]", "chunk = [ 4L, 0L ]", "chunk extent of dimension 1 is 0"},
        {"chunk = [ 4L, 4L ]", "chunk = [ 4L, -4L ]", "negative"},
        {"chunk = [ 4L, 4L ]", "chunk = [ 65536L, 65536L ]", "chunk is larger"},
        {"chunk_count = ", "chunk_count = 1", "does not match"},
        {"bounds = [ 9L, 11L ]", "bounds = [ 9L, 12L ]", "bounds do not match"},
        {"addr = 4L", "addr = 400L", "does not match the extension history"},
        {"dims = [ \"y\", \"x\" ]", "dims = [ \"y\", \"y\" ]", "used twice"},
        {"dims = [ \"y\", \"x\" ]", "dims = [ \"y\", \"order\" ]", "not a valid dimension name"},
        {"fill = \"0\"", "fill = \"-3\"", "fill"},
        {"version = 2", "version = 9", "version 9"},
        {"from = 6L", "from = 5L", "does not follow"},
        {"rank = 2;", "rank = = 2;", "valid.xmd:4: syntax error"},
        {"type = \"u16\";", "", "missing 'type'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rc = corrupt(xmd, good, cases[i].from, cases[i].to, &err);
        tap_ok(rc < 0 && rc != 12345 && strstr(err.msg, cases[i].expect) && strstr(err.msg, "valid.xmd"),
               "corrupt .xmd (%s -> %s): %s", cases[i].from, cases[i].to, err.msg);
    }
    rc = corrupt(xmd, good, "chunk = [ 4L, 4L ]", "chunk = [ 4L, 0L ]", &err);
    tap_ok(strstr(err.msg, "valid.xmd:5:") != NULL, "the error names file and line: %s", err.msg);
    spit(xmd, good);
    tap_ok(drx_array_open(path, DRX_RDONLY, &a, &err) == 0, "the restored .xmd opens");
    drx_array_close(a);
    /* a truncated .xta is reported, not read past */
    {
        char xta[310];
        snprintf(xta, sizeof xta, "%s.xta", path);
        tap_ok(truncate(xta, 100) == 0, "truncate the .xta");
        tap_ok(drx_array_open(path, DRX_RDONLY, &a, &err) == -EIO && strstr(err.msg, "shorter"),
               "a short .xta is an error: %s", err.msg);
    }
    free(good);
}

static void on_alarm(int sig)
{
    (void)sig; /* only interrupts a blocked open */
}

/* Loads `text` as xmd; a blocking open (a FIFO) is cut off after 5 s, so a
 * regression fails the test instead of hanging it. */
static int load_text(const char *xmd, const char *text, struct drx_err *err)
{
    struct sigaction sa = {.sa_handler = on_alarm}, old;
    struct drx_array_meta m;
    int rc;

    spit(xmd, text);
    sigaction(SIGALRM, &sa, &old); /* no SA_RESTART: open() gets EINTR */
    alarm(5);
    rc = drx_array_meta_load(xmd, &m, err);
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    if (rc == 0)
        drx_array_meta_fini(&m);
    return rc;
}

/* `attrs` of n attributes after the text of good in buf: u8 ones with
 * `values` values each, or, with values 0, strings holding commas,
 * brackets and a comment's '#' (text, not structure). */
static void attrs_text(char *buf, size_t cap, const char *good, int n, int values)
{
    size_t at = (size_t)snprintf(buf, cap, "%sattrs = ( # not ( a [ list {\n", good);

    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(buf + at, cap - at, "%s{ name = \"a%d\"; type = \"%s\"; value = ",
                               i ? ", " : "", i, values ? "u8" : "string");
        if (!values)
            at += (size_t)snprintf(buf + at, cap - at, "\"x,]})([{#,\\\"y\"");
        for (int k = 0; k < values; k++)
            at += (size_t)snprintf(buf + at, cap - at, "%s\"%d\"", k ? ", " : "[ ", k % 256);
        at += (size_t)snprintf(buf + at, cap - at, "%s; }\n", values ? " ]" : "");
    }
    snprintf(buf + at, cap - at, ");\n");
}

/* The libconfig part's shape is bounded by the format (array_shape.c):
 * at the bounds the file loads, past them it is refused before libconfig
 * reads it, with the line where the container opens. */
static void shape_bounds(void)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 1, .shape = {1}, .chunk = {1}};
    struct drx_array *a;
    struct drx_err err = {{0}};
    char path[300], xmd[310], *good, *text;
    size_t len, cap = (size_t)8 << 20;

    snprintf(path, sizeof path, "%s/shape", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    if (drx_array_create(path, &spec, &a, &err) < 0) {
        tap_ok(0, "create: %s", err.msg);
        return;
    }
    drx_array_close(a);
    good = slurp(xmd, &len);
    text = malloc(cap);
    attrs_text(text, cap, good, DRX_MAX_ATTRS, 0);
    tap_ok(load_text(xmd, text, &err) == 0, "1024 attributes (strings of brackets) load: %s",
           err.msg);
    attrs_text(text, cap, good, DRX_MAX_ATTRS + 1, 0);
    tap_ok(load_text(xmd, text, &err) == -EINVAL &&
               strstr(err.msg, "shape.xmd:17: more than 1024 attributes (refused before parsing)"),
           "1025 are refused unparsed: %s", err.msg);
    attrs_text(text, cap, good, 1, DRX_MAX_ATTR_BYTES);
    tap_ok(load_text(xmd, text, &err) == 0, "a u8 attribute of 65536 values loads: %s", err.msg);
    attrs_text(text, cap, good, 1, DRX_MAX_ATTR_BYTES + 1);
    tap_ok(load_text(xmd, text, &err) == -EINVAL &&
               strstr(err.msg, ":18: an array of more than 65536 values (refused before parsing)"),
           "65537 are refused unparsed: %s", err.msg);
    snprintf(text, cap, "%sjunk = ( 1, 2 );\n", good);
    tap_ok(load_text(xmd, text, &err) == -EINVAL && strstr(err.msg, ":17: unknown setting 'junk'"),
           "an unknown top-level setting is refused: %s", err.msg);
    spit(xmd, good);
    tap_ok(load_text(xmd, good, &err) == 0, "the genuine .xmd loads");
    free(text);
    free(good);
}

/* An .xmd never makes the reader open another file: libconfig follows a
 * line "@include PATH", so every such line is refused, with its line. */
static void includes_refused(void)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 1, .shape = {8}, .chunk = {4}};
    struct drx_array *a;
    struct drx_err err = {{0}};
    char path[300], xmd[310], outside[310], fifo[310], *good, *text;
    size_t len;

    snprintf(path, sizeof path, "%s/inc", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    snprintf(outside, sizeof outside, "%s/outside.cfg", dir);
    snprintf(fifo, sizeof fifo, "%s/inc.fifo", dir);
    spit(outside, "evil = 1;\n");
    tap_ok(mkfifo(fifo, 0600) == 0, "a FIFO outside the array");
    if (drx_array_create(path, &spec, &a, &err) < 0) {
        tap_ok(0, "create: %s", err.msg);
        return;
    }
    drx_array_close(a);
    good = slurp(xmd, &len);
    text = malloc(len + 600);

    snprintf(text, len + 600, "@include \"%s\"\n%s", outside, good);
    tap_ok(load_text(xmd, text, &err) == -EINVAL && strstr(err.msg, ":1: @include is not allowed"),
           "@include of a regular file is refused: %s", err.msg);
    snprintf(text, len + 600, "%s \t@include \"%s\"\n", good, fifo);
    tap_ok(load_text(xmd, text, &err) == -EINVAL && strstr(err.msg, "@include is not allowed"),
           "@include of a FIFO after blanks is refused without blocking: %s", err.msg);
    snprintf(text, len + 600, "# version = 1;\r@INCLUDE \"%s\"\n%s", outside, good);
    tap_ok(load_text(xmd, text, &err) == -EINVAL && strstr(err.msg, "@include is not allowed"),
           "any case, after a CR: refused (conservative): %s", err.msg);
    snprintf(text, len + 600, "# a comment naming @include \"%s\"\n%s", fifo, good);
    tap_ok(load_text(xmd, text, &err) == 0, "@include inside a line is text, not a directive (%s)",
           err.msg);
    tap_ok(load_text(xmd, good, &err) == 0, "the genuine .xmd still loads (%s)", err.msg);
    free(text);
    free(good);
}

/* Appends `text` to the file. */
static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    fputs(text, f);
    fclose(f);
}

static int count_of(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}

/* The array the growth-log tests share: a writer and a reader handle. */
struct glog {
    struct drx_array *a, *r;
    char path[300], xmd[310];
};

/* Three extensions append three records; the reader takes them. */
static void glog_append(struct glog *g)
{
    struct drx_err err = {{0}};
    const struct drx_array_meta *m;
    struct drx_array *fresh;
    uint64_t idx[2] = {2, 3};
    size_t n, before;
    char *text = slurp(g->xmd, &before);
    int rc;

    free(text);
    drx_array_extend(g->a, 0, 2, &err);
    drx_array_extend(g->a, 1, 2, &err);
    drx_array_extend(g->a, 1, 1, &err);
    text = slurp(g->xmd, &n);
    tap_ok(strstr(text, "version = 2;") && count_of(text, "\n#+ grow ") == 3 &&
               strstr(text, "#+ grow dim=0 from=4 to=6 chunk_count=6\n#+ grow dim=1 from=4 to=6 "
                            "chunk_count=9\n#+ grow dim=1 from=6 to=7 chunk_count=12\n"),
           "three extensions append three records");
    tap_ok(n - before < 3 * 64, "the file grew by the records only (%zu bytes)", n - before);
    free(text);
    rc = drx_array_reload(g->r, &err);
    m = drx_array_meta(g->r);
    tap_ok(rc == 1 && m->bounds[0] == 6 && m->bounds[1] == 7 && m->map.nchunks == 12 &&
               m->nhistory == 2 && m->history[1].from == 4 && m->history[1].to == 7,
           "a reader takes the appended records (%d: %llu x %llu, %zu growths)", rc,
           (unsigned long long)m->bounds[0], (unsigned long long)m->bounds[1], m->nhistory);
    tap_ok(drx_array_reload(g->r, &err) == 0, "and nothing when nothing was appended");
    drx_array_open(g->path, DRX_RDONLY, &fresh, &err);
    tap_ok(drx_map_address(&drx_array_meta(fresh)->map, idx) == drx_map_address(&m->map, idx),
           "incremental and full reads agree on F*");
    drx_array_close(fresh);
}

/* A record cut short: readers ignore it, the next extension cuts it. */
static void glog_torn(struct glog *g)
{
    struct drx_err err = {{0}};
    struct drx_array_meta lm;
    size_t n;
    char *good = slurp(g->xmd, &n), *text;

    append(g->xmd, "#+ grow dim=0 from=6 to=");
    tap_ok(drx_array_reload(g->r, &err) == 0 && drx_array_meta(g->r)->bounds[0] == 6,
           "a record cut short is not taken: %s", err.msg);
    tap_ok(drx_array_meta_load(g->xmd, &lm, &err) == 0 && lm.bounds[0] == 6,
           "nor by a full read: %s", err.msg);
    drx_array_meta_fini(&lm);
    tap_ok(drx_array_extend(g->a, 0, 1, &err) == 0, "extension after a cut-short record: %s",
           err.msg);
    text = slurp(g->xmd, &n);
    tap_ok(strncmp(text, good, strlen(good)) == 0 &&
               strcmp(text + strlen(good), "#+ grow dim=0 from=6 to=7 chunk_count=16\n") == 0,
           "it cut the partial record off and appended its own");
    free(text);
    tap_ok(drx_array_reload(g->r, &err) == 1 && drx_array_meta(g->r)->bounds[0] == 7,
           "the reader takes it");
    append(g->xmd, "#");
    tap_ok(drx_array_extend(g->a, 1, 1, &err) == 0 && drx_array_reload(g->r, &err) == 1 &&
               drx_array_meta(g->r)->bounds[1] == 8,
           "a lone '#' left by a crash is cut too: %s", err.msg);
    free(good);
}

/* A record cut short as long as the next one: the extension replaces the
 * file whole (a cut and an append would keep its size), readers see it. */
static void glog_same_length(struct glog *g)
{
    struct drx_err err = {{0}};
    size_t n;
    char *text;
    struct stat before, after;

    drx_array_close(g->r); /* glog_bad left it a file that is gone */
    drx_array_open(g->path, DRX_RDONLY, &g->r, &err);
    /* the next record: "#+ grow dim=0 from=7 to=8 chunk_count=16\n", 42 bytes */
    append(g->xmd, "#+ grow dim=0 from=7 to=8 chunk_count=166");
    tap_ok(drx_array_reload(g->r, &err) == 0, "a 42-byte record cut short is not taken");
    stat(g->xmd, &before);
    tap_ok(drx_array_extend(g->a, 0, 1, &err) == 0, "extension: %s", err.msg);
    stat(g->xmd, &after);
    text = slurp(g->xmd, &n);
    tap_ok(after.st_ino != before.st_ino && strstr(text, "history = ( );") &&
               strstr(text, "#+ grow dim=0 from=7 to=8 chunk_count=16\n") &&
               !strstr(text, "chunk_count=166") && text[n - 1] == '\n',
           "the file was replaced whole, its growths as records, without the cut one");
    free(text);
    tap_ok(drx_array_reload(g->r, &err) == 1 && drx_array_meta(g->r)->bounds[0] == 8,
           "the reader reads it again: %s", err.msg);
}

/* Bad records: file and line, nothing taken; a reader reads the file
 * again in full once it is good. */
static void glog_bad(struct glog *g)
{
    static const struct {
        const char *text, *expect;
    } cases[] = {
        {"#+ grow dim=0 from=6 to=9 chunk_count=18\n", "does not follow extent 7"},
        {"#+ grow dim=0 from=7 to=9 chunk_count=99\n", "chunk_count 99 does not match"},
        {"#+ grow dim=2 from=7 to=9 chunk_count=20\n", "growth of dimension 2"},
        {"#+ grow dim=0 from=7 to=7 chunk_count=16\n", "does not follow"},
        {"#+ grow dim=0 from=7 to=9 chunk_count=20 \n", "not a growth record"},
        {"#+ grow dim=0 from=-7 to=9 chunk_count=20\n", "not a growth record"},
        {"#+ grow dim=0 from=7 to=99999999999999999999 chunk_count=20\n", "not a growth record"},
        {"hello = 1;\n", "not a growth record"},
        {"#+ grow dim=0 from=7 to=1152921504606846976 chunk_count=20\n", "2^59"},
    };
    struct drx_err err = {{0}};
    struct drx_array_meta lm;
    size_t n;
    char *good = slurp(g->xmd, &n), want[64];
    int lines = count_of(good, "\n"), rc;

    snprintf(want, sizeof want, "glog.xmd:%d: ", lines + 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spit(g->xmd, good);
        append(g->xmd, cases[i].text);
        rc = drx_array_meta_load(g->xmd, &lm, &err);
        tap_ok(rc == -EINVAL && strstr(err.msg, want) && strstr(err.msg, cases[i].expect),
               "bad record %zu refused: %s", i, err.msg);
        if (rc == 0)
            drx_array_meta_fini(&lm);
    }
    spit(g->xmd, good);
    append(g->xmd,
           "#+ grow dim=0 from=7 to=9 chunk_count=20\n#+ grow dim=0 from=9 to=99 chunk_count=9\n");
    rc = drx_array_reload(g->r, &err);
    tap_ok(rc == -EINVAL && strstr(err.msg, "chunk_count 9 does not match"),
           "a reader refuses a bad record: %s", err.msg);
    spit(g->xmd, good);
    append(g->xmd, "#+ grow dim=0 from=7 to=9 chunk_count=20\n");
    rc = drx_array_reload(g->r, &err);
    tap_ok(rc == 1 && drx_array_meta(g->r)->bounds[0] == 9,
           "and reads the file again once it is good (%d: %s)", rc, err.msg);
    spit(g->xmd, good);
    free(good);
}

/* Version 1 takes no records, and is folded into version 2 at its first
 * extension. */
static void glog_v1(void)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 2, .shape = {4, 4}, .chunk = {2, 2}};
    struct drx_err err = {{0}};
    struct drx_array_meta lm;
    struct drx_array *a;
    char path[300], xmd[310], *v1;
    size_t n;
    int rc;

    snprintf(path, sizeof path, "%s/old", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    drx_array_create(path, &spec, &a, &err);
    drx_array_extend(a, 0, 3, &err);
    drx_array_close(a);
    v1 = slurp(xmd, &n);
    strstr(v1, "version = 2;")[10] = '1';
    spit(xmd, v1);
    rc = drx_array_meta_load(xmd, &lm, &err);
    tap_ok(rc == -EINVAL && strstr(err.msg, "need version 2"), "version 1 takes no records: %s",
           err.msg);
    strstr(v1, "\n#+ grow")[1] = '\0';
    spit(xmd, v1);
    free(v1);
    tap_ok(drx_array_open(path, DRX_RDWR, &a, &err) == 0 && drx_array_meta(a)->bounds[0] == 4 &&
               drx_array_extend(a, 0, 1, &err) == 0,
           "a version 1 file opens and extends: %s", err.msg);
    drx_array_close(a);
    v1 = slurp(xmd, &n);
    tap_ok(strstr(v1, "version = 2;") && strstr(v1, "\n#+ grow dim=0 from=4 to=5 "),
           "into a version 2 file with the growth as a record");
    free(v1);
}

/* An extension appends one growth record to the .xmd; readers take the
 * records appended since they last read; a record cut short by a crash is
 * ignored and cut off by the next extension; a bad record is refused with
 * file and line. */
static void growth_log(void)
{
    struct drx_array_spec spec = {.type = DRX_I16, .rank = 2, .shape = {4, 4}, .chunk = {2, 2}};
    struct drx_err err = {{0}};
    struct glog g;

    snprintf(g.path, sizeof g.path, "%s/glog", dir);
    snprintf(g.xmd, sizeof g.xmd, "%s.xmd", g.path);
    if (drx_array_create(g.path, &spec, &g.a, &err) < 0 ||
        drx_array_open(g.path, DRX_RDONLY, &g.r, &err) < 0) {
        tap_ok(0, "create: %s", err.msg);
        return;
    }
    glog_append(&g);
    glog_torn(&g);
    glog_bad(&g);
    glog_same_length(&g);
    drx_array_close(g.r);
    drx_array_close(g.a);
    glog_v1();
}

/* The counts of a handle a and of the array read afresh in full agree. */
static bool counts_agree(const struct drx_array *a, const char *path)
{
    const struct drx_array_meta *m = drx_array_meta(a), *f;
    struct drx_array *full;
    struct drx_err err;
    bool same;

    if (drx_array_open(path, DRX_RDONLY, &full, &err) < 0)
        return false;
    f = drx_array_meta(full);
    same = m->map.nchunks == f->map.nchunks &&
           memcmp(m->bounds, f->bounds, sizeof m->bounds) == 0 &&
           memcmp(m->map.bound, f->map.bound, sizeof m->map.bound) == 0;
    drx_array_close(full);
    return same;
}

/* A DRX_METAONLY handle (what `drx extend` opens): the records are checked
 * and counted but build no axial vectors; its extensions are the same as a
 * full handle's, and it does no chunk I/O. */
static void meta_only(void)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 3, .shape = {3, 2, 5}, .chunk = {2, 2, 3}};
    static const int grow[][2] = {{0, 1}, {2, 3}, {0, 2}, {1, 1}, {1, 3}, {2, 1}, {0, 1}, {2, 9}};
    struct drx_err err = {{0}};
    struct drx_array *a, *w;
    struct drx_chunk_ref ref;
    char path[300], xmd[310], *good;
    unsigned char byte = 7;
    bool same = true;
    size_t n;

    snprintf(path, sizeof path, "%s/counts", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    if (drx_array_create(path, &spec, &w, &err) < 0) {
        tap_ok(0, "create: %s", err.msg);
        return;
    }
    for (int i = 0; i < 4; i++)
        drx_array_extend(w, grow[i][0], (uint64_t)grow[i][1], &err);
    drx_array_close(w);
    if (drx_array_open(path, DRX_RDWR | DRX_METAONLY, &a, &err) < 0) {
        tap_ok(0, "open DRX_METAONLY: %s", err.msg);
        return;
    }
    tap_ok(counts_agree(a, path) && drx_array_meta(a)->map.vec[0].n == 0 &&
               drx_array_meta(a)->nhistory == 0,
           "opened for its metadata: the counts of a full read, no vectors, no history");
    for (int i = 4; i < 8; i++)
        same = same && drx_array_extend(a, grow[i][0], (uint64_t)grow[i][1], &err) == 0 &&
               counts_agree(a, path);
    tap_ok(same, "its extensions agree with full reads after each: %s", err.msg);
    {
        struct drx_attr at;
        drx_attr_parse("units", "string", "K", &at, &err);
        tap_ok(drx_array_attr_set(a, &at, &err) == 0 && counts_agree(a, path) &&
                   drx_array_extend(a, 0, 1, &err) == 0 && counts_agree(a, path),
               "an attribute set through it writes the whole history: %s", err.msg);
        drx_attr_fini(&at);
    }
    tap_ok(drx_array_chunk_get(a, 0, 0, 1, &byte, &ref) == -EBADF &&
               drx_array_chunk_write(a, 0, 0, 1, &byte) == -EBADF,
           "no chunk I/O through it");
    drx_array_close(a);
    good = slurp(xmd, &n);
    append(xmd, "#+ grow dim=1 from=6 to=8 chunk_count=99\n");
    tap_ok(drx_array_open(path, DRX_RDWR | DRX_METAONLY, &a, &err) == -EINVAL &&
               strstr(err.msg, "chunk_count 99 does not match"),
           "a bad record is refused as by a full read: %s", err.msg);
    spit(xmd, good);
    free(good);
}

/* Bounds and chunk count of the array at path read in full (mode
 * DRX_RDONLY) or for its metadata (DRX_METAONLY) are n x n, chunks n * n. */
static bool reads_as(const char *path, int mode, uint64_t n)
{
    struct drx_array *a;
    struct drx_err err;
    const struct drx_array_meta *m;
    bool ok;

    if (drx_array_open(path, mode, &a, &err) < 0)
        return false;
    m = drx_array_meta(a);
    ok = m->bounds[0] == n && m->bounds[1] == n && m->map.nchunks == n * n;
    drx_array_close(a);
    return ok;
}

/* The base of the .xmd `text` with a comment line after its first line
 * that makes it `len` bytes long, then the records `recs`. */
static char *padded(const char *text, const char *recs, size_t len)
{
    const char *nl = strchr(text, '\n') + 1;
    size_t head = (size_t)(nl - text), pad = len - strlen(text) - 1, n = strlen(recs);
    char *out = malloc(len + n + 1);

    memcpy(out, text, head);
    out[head] = '#';
    memset(out + head + 1, ' ', pad - 1);
    out[head + pad] = '\n';
    strcpy(out + head + pad + 1, nl);
    strcat(out, recs);
    return out;
}

/* A long .xmd is read block by block (64 KiB): the base ending just
 * before, at and after a block's end, records across blocks, a line
 * longer than a block; each read as a whole file would be. */
static void long_file(void)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 2, .shape = {2, 2}, .chunk = {1, 1}};
    struct drx_err err = {{0}};
    struct drx_array *a;
    char path[300], xmd[310], xta[310], *base, *recs, *text, *p, want[64];
    size_t n, lines;
    uint64_t b[2] = {2, 2};
    bool same = true;
    int rc;

    snprintf(path, sizeof path, "%s/long", dir);
    snprintf(xmd, sizeof xmd, "%s.xmd", path);
    if (drx_array_create(path, &spec, &a, &err) < 0) {
        tap_ok(0, "create: %s", err.msg);
        return;
    }
    drx_array_close(a);
    base = slurp(xmd, &n);
    p = recs = malloc(2000 * 64);
    for (int i = 0; i < 2000; i++) { /* chunks 1x1: the chunk count is the elements' */
        int d = i % 2;
        p += sprintf(p, "#+ grow dim=%d from=%llu to=%llu chunk_count=%llu\n", d,
                     (unsigned long long)b[d], (unsigned long long)b[d] + 1,
                     (unsigned long long)((b[d] + 1) * b[1 - d]));
        b[d]++;
    }
    snprintf(xta, sizeof xta, "%s.xta", path);
    if (truncate(xta, 1002 * 1002) < 0)
        tap_ok(0, "truncate: %s", strerror(errno));
    for (size_t len = 65534; len <= 65538; len++) {
        text = padded(base, recs, len);
        spit(xmd, text);
        free(text);
        same = same && reads_as(path, DRX_RDONLY, 1002) &&
               reads_as(path, DRX_RDONLY | DRX_METAONLY, 1002);
    }
    tap_ok(same, "base ending around a block's end, 2000 records over two blocks: 1002 x 1002");
    text = malloc(strlen(base) + strlen(recs) + 8 + 100000 + 1);
    lines = (size_t)count_of(base, "\n") + 2000;
    sprintf(text, "%s%s#+ grow ", base, recs);
    memset(text + strlen(text), 'x', 100000);
    text[strlen(base) + strlen(recs) + 8 + 100000] = '\0';
    spit(xmd, text);
    tap_ok(reads_as(path, DRX_RDONLY, 1002) && reads_as(path, DRX_RDONLY | DRX_METAONLY, 1002),
           "a last line longer than a block, without newline: cut short, ignored");
    append(xmd, "\n");
    snprintf(want, sizeof want, "long.xmd:%zu: not a growth record", lines + 1);
    rc = drx_array_open(path, DRX_RDONLY, &a, &err);
    tap_ok(rc == -EINVAL && strstr(err.msg, want), "with its newline, refused at its line: %s",
           err.msg);
    if (rc == 0)
        drx_array_close(a);
    free(text);
    free(recs);
    free(base);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    validation();
    includes_refused();
    shape_bounds();
    growth_log();
    meta_only();
    long_file();
    {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return tap_done();
}
