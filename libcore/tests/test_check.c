/* The store checker (drx/check.h): findings through the callback, repair,
 * and a clean store afterwards; arrays' growth records cut short and .xta
 * files longer than their metadata, under the extend lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/check.h"
#include "drx/config.h"
#include "drx/store.h"
#include "tap.h"

static char base[] = "/tmp/drx-test-check-XXXXXX";

/* Every finding, one per line: "where: what [action] [repaired]". */
struct seen {
    char text[8192];
    unsigned n;
};

static void collect(const struct drx_check_finding *f, void *arg)
{
    struct seen *s = arg;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "%s: %s [%s]%s\n", f->where, f->what,
             f->action ? f->action : "-", f->repaired ? " repaired" : "");
    s->n++;
}

/* The findings as TAP comments. */
static void show(const struct seen *s)
{
    for (const char *p = s->text; *p;) {
        size_t n = strcspn(p, "\n");
        printf("# %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static void put_text(const char *path, const char *text, const char *mode)
{
    FILE *f = fopen(path, mode);
    fputs(text, f);
    fclose(f);
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : st.st_size;
}

static int check(struct drx_store *s, bool repair, struct seen *seen, struct drx_check_result *res,
                 struct drx_err *err)
{
    memset(seen, 0, sizeof *seen);
    return drx_store_check(s, repair, collect, seen, res, err);
}

/* The broken array's files and their good sizes. */
struct broken {
    char xta[300], xmd[300];
    off_t good_xta, good_xmd;
};

/* An array whose extension never committed (a long .xta) and whose record
 * was cut short, an orphan chunk file and a leftover temporary. */
static void break_store(const char *root, struct broken *b)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 2, .shape = {4, 4}, .chunk = {2, 2}};
    struct drx_err err = {{0}};
    struct drx_array *a;
    char path[256];

    snprintf(path, sizeof path, "%s/arr", root);
    snprintf(b->xta, sizeof b->xta, "%s.xta", path);
    snprintf(b->xmd, sizeof b->xmd, "%s.xmd", path);
    drx_array_create(path, &spec, &a, &err);
    drx_array_extend(a, 0, 2, &err);
    drx_array_close(a);
    b->good_xta = size_of(b->xta);
    b->good_xmd = size_of(b->xmd);
    if (truncate(b->xta, b->good_xta + 40) < 0)
        abort();
    put_text(b->xmd, "#+ grow dim=1 from=4 to", "a");
    snprintf(path, sizeof path, "%s/lost.xta", root);
    put_text(path, "", "w");
    snprintf(path, sizeof path, "%s/.arr.xmd.Ab3dE9", root);
    put_text(path, "partial", "w");
}

static void report_only(struct drx_store *s, const struct broken *b)
{
    struct drx_check_result res;
    struct drx_err err = {{0}};
    struct seen seen;
    int rc = check(s, false, &seen, &res, &err);

    tap_ok(rc == 0 && res.problems == 4 && res.repaired == 0 && seen.n == 4,
           "four findings reported (%u)", res.problems);
    show(&seen);
    tap_ok(strstr(seen.text, "arr.xta: ") && strstr(seen.text, "longer than its metadata's 24") &&
               strstr(seen.text, "[trim it]\n"),
           "the long .xta, with what a repair does");
    tap_ok(strstr(seen.text, "arr.xmd: ends in a growth record cut short (23 bytes") != NULL,
           "the growth record cut short");
    tap_ok(strstr(seen.text, "lost.xta: orphan chunk file") &&
               strstr(seen.text, ".arr.xmd.Ab3dE9: "),
           "the orphan and the temporary");
    tap_ok(size_of(b->xta) == b->good_xta + 40 && size_of(b->xmd) == b->good_xmd + 23,
           "reporting changes nothing");
}

static void repair(struct drx_store *s, const struct broken *b, const char *root)
{
    struct drx_check_result res;
    struct drx_err err = {{0}};
    struct drx_array *a;
    struct seen seen;
    char path[256];
    int rc, fd = open(b->xta, O_RDONLY);

    /* an extension holding the lock: its chunks and record are left alone */
    flock(fd, LOCK_EX);
    rc = check(s, true, &seen, &res, &err);
    tap_ok(rc == 0 && res.problems == 4 && res.repaired == 2 &&
               size_of(b->xta) == b->good_xta + 40 && size_of(b->xmd) == b->good_xmd + 23 &&
               strstr(seen.text, "an extension holds its lock"),
           "under an extension's lock only the orphan and temporary go");
    show(&seen);
    close(fd);
    rc = check(s, true, &seen, &res, &err);
    tap_ok(rc == 0 && res.problems == 2 && res.repaired == 2 && size_of(b->xta) == b->good_xta &&
               size_of(b->xmd) == b->good_xmd,
           "repair trims the .xta and cuts the record");
    show(&seen);
    rc = check(s, false, &seen, &res, &err);
    tap_ok(rc == 0 && res.problems == 0, "then the store is clean");
    show(&seen);
    snprintf(path, sizeof path, "%s/arr", root);
    rc = drx_array_open(path, DRX_RDWR, &a, &err);
    tap_ok(rc == 0 && drx_array_meta(a)->bounds[0] == 6 && drx_array_extend(a, 1, 1, &err) == 0,
           "the array opens and extends: %s", err.msg);
    drx_array_close(a);
}

int main(void)
{
    char root[128];
    struct drx_check_result res;
    struct drx_config cfg;
    struct drx_store *s;
    struct drx_err err = {{0}};
    struct broken b;
    struct seen seen;
    int rc, fd;

    if (!mkdtemp(base))
        return 1;
    snprintf(root, sizeof root, "%s/st", base);
    drx_config_defaults(&cfg, NULL);
    if (drx_store_init(root, &cfg, 0, &err) < 0 || drx_store_open(root, NULL, &s, &err) < 0) {
        tap_ok(0, "store: %s", err.msg);
        return tap_done();
    }
    rc = check(s, false, &seen, &res, &err);
    tap_ok(rc == 0 && res.problems == 0 && seen.n == 0, "a new store is clean");
    break_store(root, &b);
    report_only(s, &b);
    repair(s, &b, root);
    /* a repair needs the store's lock */
    fd = drx_store_lock(s, false);
    rc = check(s, true, &seen, &res, &err);
    tap_ok(rc == -EWOULDBLOCK && strstr(err.msg, "is in use") && seen.n == 0,
           "no repair while the store's lock is held: %s", err.msg);
    close(fd);
    drx_store_close(s);
    drx_config_fini(&cfg);
    {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf %s", base);
        if (system(cmd) != 0)
            return 1;
    }
    return tap_done();
}
