/* Striped files: round-robin placement, holes, truncate, rename, unlink,
 * hostile metafiles, missing subfiles, ENOSPC, threads, size persistence. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "as_user.h"
#include "drx/config.h"
#include "drx/log.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "tap.h"

static char base[256];
static int nlogged;
static char lastlog[1024];

static void sink(void *arg, enum drx_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    nlogged++;
    snprintf(lastlog, sizeof lastlog, "%s", msg);
}

static void rm_rf(const char *p)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd) != 0)
        fprintf(stderr, "# rm -rf %s failed\n", p);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fwrite(data, 1, len, fp) != len)
        abort();
    fclose(fp);
}

/* Reads a whole file (up to cap); returns its length or -1. */
static long read_file(const char *path, unsigned char *buf, size_t cap)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return (long)n;
}

static void fill_random(unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (unsigned char)(seed >> 16);
    }
}

/* The setup of several tests: striped file path holding data[0..len),
 * closed, its metafile read into *m.  Aborts on failure, as the tests
 * below it would only fail confusingly. */
static void make_striped(struct drx_store *s, const char *path, const struct drx_stripe_layout *l,
                         mode_t mode, const void *data, size_t len, struct drx_stripe_meta *m)
{
    struct drx_stripe *f;
    struct drx_err err = {{0}};

    if (drx_stripe_create(s, path, l, mode, &f, &err) < 0 ||
        drx_stripe_write(f, data, len, 0) != (ssize_t)len || drx_stripe_close(f) < 0 ||
        drx_stripe_stat(s, path, m, &err) < 0) {
        fprintf(stderr, "# make_striped %s: %s\n", path, err.msg);
        abort();
    }
}

/* A store with 4 stripe dirs under base/NAME. */
static struct drx_store *make_store(const char *name, char *root)
{
    struct drx_config cfg;
    struct drx_store *s = NULL;
    struct drx_err err = {{0}};
    char d[4][512];
    const char *dirs[4];

    snprintf(root, 512, "%s/%s", base, name);
    for (int i = 0; i < 4; i++) {
        snprintf(d[i], sizeof d[i], "%s/%s-disk%d", base, name, i);
        dirs[i] = d[i];
    }
    drx_config_defaults(&cfg, NULL);
    drx_config_set_dirs(&cfg, dirs, 4);
    cfg.stripe.count = 2;
    cfg.stripe.extent = 16;
    int rc = drx_store_init(root, &cfg, 0, &err);
    if (rc < 0)
        fprintf(stderr, "# init: %s\n", err.msg);
    rc = drx_store_open(root, NULL, &s, &err);
    if (rc < 0)
        fprintf(stderr, "# open: %s\n", err.msg);
    drx_config_fini(&cfg);
    return s;
}

/* Every byte of every subfile against the formula. */
static int check_placement(struct drx_store *s, const char *path, const unsigned char *data,
                           uint64_t size)
{
    struct drx_stripe_meta m;
    unsigned char *sub = malloc(size + 64);
    int ok = 1;

    if (drx_stripe_stat(s, path, &m, NULL) < 0 || m.size != size) {
        free(sub);
        return 0;
    }
    for (unsigned i = 0; i < m.layout.count && ok; i++) {
        char sp[1024];
        drx_stripe_subfile_path(s, &m, i, sp, sizeof sp);
        long n = read_file(sp, sub, size + 64);
        uint64_t want = drx_stripe_subfile_len(&m.layout, i, size);
        if (n < 0 && want == 0)
            continue; /* not created: no byte reached it */
        if (n < 0 || (uint64_t)n != want)
            ok = 0;
        for (long k = 0; ok && k < n; k++) {
            /* Invert the mapping: subfile i offset k holds byte b. */
            uint64_t row = (uint64_t)k / m.layout.extent, within = (uint64_t)k % m.layout.extent;
            uint64_t b = (row * m.layout.count + i) * m.layout.extent + within;
            if (b >= size || sub[k] != data[b])
                ok = 0;
        }
    }
    free(sub);
    return ok;
}

static void test_round_robin(struct drx_store *s, const char *root)
{
    static const unsigned counts[] = {1, 2, 3, 4};
    static const uint64_t extents[] = {1, 7, 16, 4096};
    char path[600];
    int nfile = 0;

    for (size_t ci = 0; ci < 4; ci++) {
        for (size_t ei = 0; ei < 4; ei++) {
            uint64_t ext = extents[ei];
            uint64_t sizes[] = {
                0, 1, ext > 1 ? ext - 1 : 1, ext, ext * counts[ci] * 3 + 5, ext * 5 + ext / 2 + 1};
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                struct drx_stripe_layout l = {counts[ci], ext};
                struct drx_stripe *f;
                uint64_t size = sizes[si];
                unsigned char *data = malloc(size + 1), *back = malloc(size + 1);
                int ok = 1;
                fill_random(data, size, (unsigned)(ci * 100 + ei * 10 + si));
                snprintf(path, sizeof path, "%s/rr%d", root, nfile++);
                ok &= drx_stripe_create(s, path, &l, 0644, &f, NULL) == 0;
                /* Odd-sized pieces in reverse order: every write extends
                 * over a gap or fills one. */
                size_t piece = 5;
                for (uint64_t end = size; ok && end > 0;) {
                    uint64_t start = end > piece ? end - piece : 0;
                    ok &= drx_stripe_write(f, data + start, end - start, start) ==
                          (ssize_t)(end - start);
                    end = start;
                }
                ok &= drx_stripe_size(f) == size;
                ok &= drx_stripe_read(f, back, size + 1, 0) == (ssize_t)size;
                ok &= memcmp(back, data, size) == 0;
                ok &= drx_stripe_close(f) == 0;
                ok &= check_placement(s, path, data, size);
                tap_ok(ok, "count=%u extent=%llu size=%llu: subfiles follow the formula",
                       counts[ci], (unsigned long long)ext, (unsigned long long)size);
                free(data);
                free(back);
            }
        }
    }
}

static void test_truncate(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {3, 10};
    struct drx_stripe *f;
    unsigned char data[100], back[200], zero[200] = {0};
    char path[600];

    snprintf(path, sizeof path, "%s/trunc", root);
    fill_random(data, sizeof data, 7);
    drx_stripe_create(s, path, &l, 0644, &f, NULL);
    drx_stripe_write(f, data, 100, 0);
    tap_ok(drx_stripe_truncate(f, 33) == 0 && drx_stripe_size(f) == 33, "truncate down to 33");
    struct drx_stripe_meta m;
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 33, "truncate is recorded in the metafile at once");
    tap_ok(check_placement(s, path, data, 33), "subfiles cut to the new size");
    tap_ok(drx_stripe_truncate(f, 150) == 0 && drx_stripe_size(f) == 150, "truncate up to 150");
    ssize_t n = drx_stripe_read(f, back, sizeof back, 0);
    tap_ok(n == 150 && memcmp(back, data, 33) == 0 && memcmp(back + 33, zero, 117) == 0,
           "truncate down then up: old bytes gone, hole reads zeros (%zd)", n);
    /* A write past the end leaves a hole of zeros. */
    drx_stripe_write(f, data, 5, 190);
    n = drx_stripe_read(f, back, sizeof back, 0);
    tap_ok(n == 195 && memcmp(back + 150, zero, 40) == 0 && memcmp(back + 190, data, 5) == 0,
           "write past the end: gap reads zeros");
    tap_ok(drx_stripe_read(f, back, 10, 195) == 0, "read at the end gives 0");
    drx_stripe_close(f);

    /* Stale bytes left in a subfile beyond the recorded size (a crashed
     * writer) must not show through a truncate up. */
    snprintf(path, sizeof path, "%s/stale", root);
    make_striped(s, path, &l, 0644, data, 10, &m);
    char sp[1024];
    drx_stripe_subfile_path(s, &m, 0, sp, sizeof sp);
    memset(back, 'S', 30);
    write_file(sp, back, 30); /* subfile 0 now claims extents 0, 3, 6 */
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    drx_stripe_truncate(f, 80);
    n = drx_stripe_read(f, back, sizeof back, 0);
    tap_ok(n == 80 && memcmp(back + 30, zero, 10) == 0 && memcmp(back + 60, zero, 10) == 0,
           "truncate up hides stale subfile bytes");
    drx_stripe_close(f);
}

static void test_rename_unlink(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 4};
    struct drx_stripe *f;
    struct drx_stripe_meta m, m2;
    unsigned char data[50], back[60];
    char a[600], b[600], sp[1024], sp2[1024];
    struct stat st;

    snprintf(a, sizeof a, "%s/ren_a", root);
    snprintf(b, sizeof b, "%s/ren_b", root);
    fill_random(data, sizeof data, 9);
    make_striped(s, a, &l, 0640, data, 50, &m);
    tap_ok(drx_stripe_rename(s, a, b, 0, NULL) == 0, "rename");
    tap_ok(!drx_stripe_exists(a) && drx_stripe_exists(b), "old name gone, new name there");
    drx_stripe_stat(s, b, &m2, NULL);
    tap_ok(strcmp(m.sub[0].name, m2.sub[0].name) == 0 && m2.size == 50,
           "rename keeps the subfiles (only the metafile moved)");
    drx_stripe_open(s, b, DRX_STRIPE_RDONLY, &f, NULL);
    tap_ok(drx_stripe_read(f, back, 60, 0) == 50 && memcmp(back, data, 50) == 0,
           "renamed file reads the same bytes");
    drx_stripe_close(f);
    snprintf(sp, sizeof sp, "%s.nafs", b);
    stat(sp, &st);
    tap_ok((st.st_mode & 0777) == 0640, "metafile mode is the create mode");

    /* Rename over an existing striped file removes that file's subfiles. */
    make_striped(s, a, &l, 0644, "xyz", 3, &m);
    drx_stripe_subfile_path(s, &m2, 0, sp2, sizeof sp2); /* b's (the victim's) */
    tap_ok(drx_stripe_rename(s, a, b, RENAME_NOREPLACE, NULL) == -EEXIST,
           "RENAME_NOREPLACE refuses an existing target");
    tap_ok(drx_stripe_rename(s, a, b, 0, NULL) == 0 && access(sp2, F_OK) != 0,
           "rename over a striped file removes the replaced file's subfiles");
    drx_stripe_stat(s, b, &m2, NULL);
    tap_ok(m2.size == 3 && strcmp(m2.sub[0].name, m.sub[0].name) == 0, "target is the moved file");
    tap_ok(drx_stripe_rename(s, b, b, 0, NULL) == 0 && drx_stripe_stat(s, b, &m2, NULL) == 0 &&
               drx_stripe_subfile_path(s, &m2, 0, sp, sizeof sp) > 0 && access(sp, F_OK) == 0,
           "rename onto itself keeps the subfiles");

    /* Unlink: metafile and subfiles go; an open handle keeps reading. */
    drx_stripe_open(s, b, DRX_STRIPE_RDWR, &f, NULL);
    tap_ok(drx_stripe_unlink(s, b, NULL) == 0, "unlink");
    tap_ok(!drx_stripe_exists(b), "metafile gone");
    int gone = 1;
    for (unsigned i = 0; i < m2.layout.count; i++) {
        drx_stripe_subfile_path(s, &m2, i, sp, sizeof sp);
        gone &= access(sp, F_OK) != 0;
    }
    tap_ok(gone, "subfiles gone");
    tap_ok(drx_stripe_read(f, back, 10, 0) == 3 && memcmp(back, "xyz", 3) == 0,
           "open handle still reads an unlinked file");
    drx_stripe_write(f, "more", 4, 3);
    drx_stripe_close(f);
    tap_ok(!drx_stripe_exists(b), "closing an unlinked file does not resurrect it");
    tap_ok(drx_stripe_unlink(s, b, NULL) == -ENOENT, "unlink of a missing file: ENOENT");

    /* Rename while open: set_path sends the size to the new name. */
    drx_stripe_create(s, a, &l, 0644, &f, NULL);
    drx_stripe_write(f, data, 20, 0);
    drx_stripe_rename(s, a, b, 0, NULL);
    drx_stripe_set_path(f, b);
    drx_stripe_write(f, data, 30, 0);
    drx_stripe_close(f);
    tap_ok(!drx_stripe_exists(a) && drx_stripe_stat(s, b, &m2, NULL) == 0 && m2.size == 30,
           "rename of an open file + set_path: size recorded under the new name");
}

/* A handle of the metafile a descriptor holds, not of what the name holds
 * by then: drxfs opens a striped file for a user other than root from the
 * metafile he reached, whatever was renamed over the name since. */
static void test_open_meta_fd(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 4};
    struct drx_stripe_meta old, m;
    struct drx_stripe *f = NULL;
    unsigned char back[16];
    char a[600], b[600], amp[700], bmp[700], sp[1024];

    snprintf(a, sizeof a, "%s/mfd_a", root);
    snprintf(b, sizeof b, "%s/mfd_b", root);
    snprintf(amp, sizeof amp, "%s.nafs", a);
    snprintf(bmp, sizeof bmp, "%s.nafs", b);
    make_striped(s, a, &l, 0640, "old", 3, &old);
    make_striped(s, b, &l, 0640, "newer", 5, &m);
    int fd = open(amp, O_PATH | O_NOFOLLOW);
    /* b's metafile renamed over a's, a's subfiles left (as while another
     * process's rename over it has not removed them yet) */
    tap_ok(fd >= 0 && rename(bmp, amp) == 0, "metafile held, another renamed over its name");
    tap_ok(drx_stripe_open_meta_fd(s, a, fd, DRX_STRIPE_RDWR, &f, NULL) == 0 &&
               drx_stripe_read(f, back, sizeof back, 0) == 3 && memcmp(back, "old", 3) == 0 &&
               !drx_stripe_incomplete(f),
           "open by the held metafile serves that file, not the name's");
    drx_stripe_close(f);
    f = NULL;
    tap_ok(drx_stripe_open(s, a, DRX_STRIPE_RDONLY, &f, NULL) == 0 &&
               drx_stripe_read(f, back, sizeof back, 0) == 5 && memcmp(back, "newer", 5) == 0,
           "open by name serves the file renamed over it");
    drx_stripe_close(f);
    f = NULL;
    /* the replaced file's subfiles removed before its handle opened them */
    for (unsigned i = 0; i < old.layout.count; i++)
        if (drx_stripe_subfile_path(s, &old, i, sp, sizeof sp) > 0)
            unlink(sp);
    tap_ok(drx_stripe_open_meta_fd(s, a, fd, DRX_STRIPE_RDONLY, &f, NULL) == 0 &&
               drx_stripe_incomplete(f) && drx_stripe_read(f, back, sizeof back, 0) == -EIO,
           "a held metafile whose subfiles are gone: incomplete, its reads EIO");
    drx_stripe_close(f);
    f = NULL;
    tap_ok(drx_stripe_open_meta_fd(s, a, -1, DRX_STRIPE_RDONLY, &f, NULL) == -EBADF && !f,
           "no descriptor: EBADF");
    if (fd >= 0)
        close(fd);
    drx_stripe_unlink(s, a, NULL);
}

/* Writes a metafile by hand. */
static void hostile(struct drx_store *s, const char *root, const char *tag, const char *text,
                    int expect_open)
{
    char path[600], mp[700];
    struct drx_stripe *f = NULL;
    struct drx_err err = {{0}};

    snprintf(path, sizeof path, "%s/hostile_%s", root, tag);
    snprintf(mp, sizeof mp, "%s.nafs", path);
    write_file(mp, text, strlen(text));
    int before = nlogged;
    int rc = drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, &err);
    /* logged, or past the rate limit's burst counted: the flush says so */
    drx_log_limits_flush();
    tap_ok(rc == expect_open && (rc == 0 || (err.msg[0] && nlogged > before)),
           "hostile metafile (%s): %d, \"%s\"", tag, rc, err.msg);
    drx_stripe_close(f);
}

static void test_hostile(struct drx_store *s, const char *root)
{
    char outside[600], text[2048], path[600], sp[1024];
    unsigned char back[64];
    struct drx_stripe *f;
    struct drx_stripe_meta m;

    snprintf(outside, sizeof outside, "%s/secret", base);
    write_file(outside, "SECRET-SECRET-SECRET", 20);
#define META(SUBS, EXTRA)                                                                          \
    "version = 1; extent = 4; count = 2; size = 20L; " EXTRA " subfiles = ( " SUBS " );"
    snprintf(text, sizeof text, META("{ dir = 0; name = \"%s\"; }, { dir = 1; name = \"b\"; }", ""),
             outside);
    hostile(s, root, "absolute", text, -EIO);
    hostile(s, root, "dotdot",
            META("{ dir = 0; name = \"../../secret\"; }, { dir = 1; name = \"b\"; }", ""), -EIO);
    hostile(s, root, "dotdot2", META("{ dir = 0; name = \"..\"; }, { dir = 1; name = \"b\"; }", ""),
            -EIO);
    hostile(s, root, "slash", META("{ dir = 0; name = \"x/y\"; }, { dir = 1; name = \"b\"; }", ""),
            -EIO);
    hostile(s, root, "empty", META("{ dir = 0; name = \"\"; }, { dir = 1; name = \"b\"; }", ""),
            -EIO);
    hostile(s, root, "dir_range",
            META("{ dir = 9; name = \"a\"; }, { dir = 1; name = \"b\"; }", ""), -EIO);
    hostile(s, root, "dir_negative",
            META("{ dir = -1; name = \"a\"; }, { dir = 1; name = \"b\"; }", ""), -EIO);
    hostile(s, root, "duplicate",
            META("{ dir = 1; name = \"b\"; }, { dir = 1; name = \"b\"; }", ""), -EIO);
    hostile(s, root, "huge_count",
            "version = 1; extent = 4; count = 1000000; size = 0; subfiles = ();", -EIO);
    hostile(s, root, "zero_extent",
            "version = 1; extent = 0; count = 1; size = 0; subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "size_overflow",
            "version = 1; extent = 4; count = 1; size = 9223372036854775807L; "
            "subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "size_negative",
            "version = 1; extent = 4; count = 1; size = -5; subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "wrong_type",
            "version = 1; extent = \"4\"; count = 1; size = 0; subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "name_type",
            "version = 1; extent = 4; count = 1; size = 0; subfiles = ({dir=0; name=5;});", -EIO);
    hostile(s, root, "count_mismatch",
            "version = 1; extent = 4; count = 2; size = 0; subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "missing_key", "version = 1; count = 1; size = 0; subfiles = ();", -EIO);
    hostile(s, root, "unknown_key",
            "version = 1; extent = 4; count = 1; size = 0; evil = 1; "
            "subfiles = ({dir=0; name=\"a\";});",
            -EIO);
    hostile(s, root, "syntax", "version = 1; extent = 4 count", -EIO);
    snprintf(text, sizeof text,
             "@include \"%s\"\nversion = 1; extent = 4; count = 1; size = 0; "
             "subfiles = ({dir=0; name=\"a\";});",
             outside);
    hostile(s, root, "include", text, -EIO);
    {
        /* after blanks, on line 2, naming a FIFO: refused with its line, the
         * FIFO never opened (it would block) */
        char fifo[700], mp[700];
        struct drx_stripe *g = NULL;
        struct drx_err err = {{0}};
        snprintf(fifo, sizeof fifo, "%s/include.fifo", base);
        mkfifo(fifo, 0600);
        snprintf(text, sizeof text,
                 "version = 1; extent = 4; count = 1; size = 0;\n \t@include \"%s\"\n"
                 "subfiles = ({dir=0; name=\"a\";});",
                 fifo);
        snprintf(path, sizeof path, "%s/hostile_include2", root);
        snprintf(mp, sizeof mp, "%s.nafs", path);
        write_file(mp, text, strlen(text));
        tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &g, &err) == -EIO &&
                   /* read through the descriptor it is held by: a link
                    * followed, as for a user's configuration file */
                   strstr(err.msg, ".nafs:2: @include is not allowed in a"),
               "@include after blanks: refused with its line (%s)", err.msg);
        drx_stripe_close(g);
    }
    hostile(s, root, "binary", "\x01\x02\xff\xfe garbage", -EIO);

    /* A genuine file whose subfile is replaced by a link to an outside file:
     * the link is never followed, its extents give EIO. */
    struct drx_stripe_layout l = {2, 4};
    snprintf(path, sizeof path, "%s/linked", root);
    make_striped(s, path, &l, 0644, "0123456789abcdefghij", 20, &m);
    drx_stripe_subfile_path(s, &m, 1, sp, sizeof sp);
    unlink(sp);
    tap_ok(symlink(outside, sp) == 0, "subfile replaced by a symlink to an outside file");
    int before = nlogged;
    tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL) == 0, "file still opens");
    memset(back, 0, sizeof back);
    ssize_t n1 = drx_stripe_read(f, back, 4, 4);
    ssize_t n2 = drx_stripe_read(f, back + 4, 20, 0);
    tap_ok(n1 == -EIO && n2 == 4 && memmem(back, sizeof back, "SECRET", 6) == NULL &&
               nlogged > before,
           "symlinked subfile: EIO, logged, no outside bytes (%zd %zd) [%s]", n1, n2, lastlog);
    tap_ok(drx_stripe_read(f, back, 4, 8) == 4 && memcmp(back, "89ab", 4) == 0,
           "the other subfile's extents still read");
    drx_stripe_close(f);

    /* A hard link to an outside file in place of a subfile: neither read
     * nor written nor cut (its other name may be any file). */
    unlink(sp);
    tap_ok(link(outside, sp) == 0, "subfile replaced by a hard link to an outside file");
    struct drx_err err = {{0}};
    tap_ok(drx_stripe_subfile_check(s, &m, 1, NULL, &err) == -EIO && strstr(err.msg, "hard link"),
           "subfile_check refuses it: %s", err.msg);
    before = nlogged;
    tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL) == 0, "file still opens");
    memset(back, 0, sizeof back);
    n1 = drx_stripe_read(f, back, 4, 4);
    tap_ok(n1 == -EIO && memmem(back, sizeof back, "SECRET", 6) == NULL && nlogged > before,
           "hard-linked subfile: EIO, logged, no outside bytes (%zd) [%s]", n1, lastlog);
    tap_ok(drx_stripe_write(f, "XXXX", 4, 4) == -EIO, "a write to its extents is EIO");
    tap_ok(drx_stripe_truncate(f, 10) == 0, "truncate cuts the other subfiles only");
    drx_stripe_close(f);
    unsigned char out[64];
    tap_ok(read_file(outside, out, sizeof out) == 20 &&
               memcmp(out, "SECRET-SECRET-SECRET", 20) == 0,
           "the outside file is unchanged");

    /* A FIFO in place of a subfile must not block the open. */
    unlink(sp);
    mkfifo(sp, 0644);
    tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL) == 0 &&
               drx_stripe_read(f, back, 4, 4) == -EIO,
           "a FIFO subfile is refused without blocking");
    drx_stripe_close(f);
}

static void test_missing(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {3, 4};
    struct drx_stripe *f;
    struct drx_stripe_meta m;
    unsigned char data[40], back[40];
    char path[600], sp[1024];

    snprintf(path, sizeof path, "%s/missing", root);
    fill_random(data, sizeof data, 3);
    make_striped(s, path, &l, 0644, data, 40, &m);
    drx_stripe_subfile_path(s, &m, 1, sp, sizeof sp);
    unlink(sp);
    tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL) == 0,
           "a file with a missing subfile opens");
    int ok = 1;
    for (int e = 0; e < 10; e++) {
        ssize_t n = drx_stripe_read(f, back, 4, (uint64_t)e * 4);
        if (e % 3 == 1)
            ok &= n == -EIO;
        else
            ok &= n == 4 && memcmp(back, data + e * 4, 4) == 0;
    }
    tap_ok(ok, "missing subfile: EIO exactly for its extents, the rest reads");
    tap_ok(drx_stripe_read(f, back, 40, 0) == 4, "a read reaching a missing extent stops there");
    drx_stripe_close(f);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    tap_ok(drx_stripe_write(f, data, 4, 4) == -EIO && drx_stripe_write(f, data, 4, 8) == 4,
           "writes to a missing subfile's extents give EIO, others work");
    /* through the buffer (40 bytes over extents of 4): the write stops at
     * the missing extent and changes nothing past it (subfile 0's extents
     * 3, 6, 9 and subfile 2's keep their bytes; extent 2 holds data[0..4)
     * since the write above) */
    unsigned char ones[40];
    memset(ones, 0xee, sizeof ones);
    ssize_t n = drx_stripe_write(f, ones, 40, 0);
    drx_stripe_close(f);
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL);
    memcpy(back, data, sizeof back);
    ok = n == 4 && drx_stripe_read(f, back, 4, 0) == 4 && memcmp(back, ones, 4) == 0;
    for (int e = 2; e < 10; e++)
        ok &= e % 3 == 1 || (drx_stripe_read(f, back, 4, (uint64_t)e * 4) == 4 &&
                             memcmp(back, data + (e == 2 ? 0 : e * 4), 4) == 0);
    tap_ok(
        ok,
        "a write over many small extents stops at the missing one, nothing past it changed (%zd)",
        n);
    drx_stripe_close(f);
}

struct worker {
    struct drx_stripe *f;
    const unsigned char *data;
    int id;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int k = w->id; k < 64; k += 4)
        drx_stripe_write(w->f, w->data + k * 1000, 1000, (uint64_t)k * 1000);
    return NULL;
}

static void test_threads_and_persist(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {3, 512};
    struct drx_stripe *f, *g;
    struct drx_stripe_meta m;
    static unsigned char data[64000], back[64000];
    pthread_t th[4];
    struct worker w[4];
    char path[600];

    snprintf(path, sizeof path, "%s/threads", root);
    fill_random(data, sizeof data, 11);
    drx_stripe_create(s, path, &l, 0644, &f, NULL);
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){f, data, i};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    tap_ok(drx_stripe_size(f) == 64000 && drx_stripe_read(f, back, 64000, 0) == 64000 &&
               memcmp(back, data, 64000) == 0,
           "4 threads writing one handle");
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 0, "small writes do not rewrite the metafile");
    tap_ok(drx_stripe_flush(f) == 0 && drx_stripe_stat(s, path, &m, NULL) == 0 && m.size == 64000,
           "flush records the size");
    drx_stripe_write(f, "z", 1, (uint64_t)100 << 20);
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, ((uint64_t)100 << 20) + 1, "growing 64 MiB records the size");
    tap_ok(drx_stripe_fsync(f, false) == 0, "fsync");
    drx_stripe_close(f);

    /* Two handles (as two processes) extending one file: the larger size
     * wins whichever closes last. */
    snprintf(path, sizeof path, "%s/two", root);
    drx_stripe_create(s, path, &l, 0644, NULL, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &g, NULL);
    drx_stripe_write(f, data, 1000, 0);
    drx_stripe_write(g, data + 1000, 1000, 1000);
    drx_stripe_close(g);
    drx_stripe_close(f);
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 2000, "two writers: the larger size survives the smaller close");

    /* reload picks up another handle's persisted size. */
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &g, NULL);
    drx_stripe_write(g, data, 500, 2000);
    drx_stripe_close(g);
    tap_ok(drx_stripe_size(f) == 2000 && drx_stripe_reload(f) == 1 && drx_stripe_size(f) == 2500,
           "reload sees another writer's size");
    tap_ok(drx_stripe_write(f, data, 1, 0) == -EBADF, "write on a read-only handle: EBADF");
    drx_stripe_close(f);

    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    tap_ok(drx_stripe_write(f, data, 10, DRX_STRIPE_MAX_SIZE - 5) == -EFBIG,
           "write past the largest size: EFBIG");
    drx_stripe_close(f);
}

/* Two read-write handles on one file (two processes, or drxfs and
 * drx-load): each persist replaces the metafile, which must not make the
 * other handle think its file was replaced and drop its size.  And a size
 * pending while the file is renamed under the handle is kept for the new
 * name, never written back under the old one. */
static void test_shared_handles(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 64};
    struct drx_stripe *a, *b;
    struct drx_stripe_meta m;
    unsigned char buf[400];
    char path[600], to[600];

    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/shared", root);
    drx_stripe_create(s, path, &l, 0644, NULL, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &a, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &b, NULL);
    drx_stripe_write(a, buf, 100, 0);
    drx_stripe_write(b, buf, 100, 100);
    tap_ok(drx_stripe_flush(a) == 0 && drx_stripe_flush(b) == 0, "flush A, then B");
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 200, "B's larger size survives A's persist");
    drx_stripe_write(a, buf, 100, 300);
    drx_stripe_write(b, buf, 50, 200);
    drx_stripe_flush(a);
    drx_stripe_flush(b);
    drx_stripe_close(a);
    drx_stripe_close(b);
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 400, "A's larger size survives B's later persist and both closes");

    /* renamed by someone else: nothing is written under the old name; the
     * size goes to the file itself (its metafile held open), under its new
     * name, and set_path then points the handle there */
    snprintf(to, sizeof to, "%s/shared-moved", root);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &a, NULL);
    drx_stripe_write(a, buf, 100, 400);
    drx_stripe_rename(s, path, to, 0, NULL);
    tap_ok(drx_stripe_flush(a) == 0 && !drx_stripe_exists(path),
           "flush after a rename: the old name is not brought back");
    drx_stripe_stat(s, to, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 500, "the size is the file's, under its new name");
    drx_stripe_set_path(a, to);
    drx_stripe_flush(a);
    drx_stripe_stat(s, to, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 500, "the pending size is recorded under the new name");

    /* rename through the handle: the pending size follows */
    drx_stripe_write(a, buf, 100, 500);
    tap_ok(drx_stripe_rename_handle(a, NULL, path, 0, NULL) == 0 && !drx_stripe_exists(to),
           "rename_handle");
    drx_stripe_close(a);
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 600, "close after rename_handle records the size under the new name");
    tap_ok(!drx_stripe_exists(to), "and not under the old one");

    /* a rename from a name another file has now (a directory exchanged
     * behind drxfs's handle): refused, and neither file moves */
    char other[600];
    snprintf(other, sizeof other, "%s/shared-other", root);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &a, NULL);
    drx_stripe_create(s, other, &l, 0644, &b, NULL);
    tap_ok(drx_stripe_rename_handle(a, other, to, 0, NULL) == -ESTALE,
           "rename_handle from another file's name: ESTALE");
    tap_ok(drx_stripe_exists(other) && drx_stripe_exists(path) && !drx_stripe_exists(to),
           "and nothing was renamed");
    tap_ok(drx_stripe_rename_handle(b, other, to, 0, NULL) == 0 && drx_stripe_exists(to) &&
               !drx_stripe_exists(other),
           "rename_handle from the handle's own name given");
    drx_stripe_close(b);
    drx_stripe_close(a);
    drx_stripe_unlink(s, to, NULL);

    /* replaced by another file: its metafile is left alone */
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &a, NULL);
    drx_stripe_create(s, to, &l, 0644, &b, NULL);
    drx_stripe_write(b, buf, 10, 0);
    drx_stripe_close(b);
    drx_stripe_rename(s, to, path, 0, NULL);
    drx_stripe_write(a, buf, 100, 600);
    drx_stripe_close(a);
    drx_stripe_stat(s, path, &m, NULL);
    TAP_CHECK_EQ_U64(m.size, 10, "a handle on a replaced file does not write the new file's size");
    drx_stripe_unlink(s, path, NULL);
}

/* Writes data[0..len) into the subfiles of m where SPEC section 5 puts
 * them, as drx-load does over MPI-IO. */
static int write_subfiles(struct drx_store *s, const struct drx_stripe_meta *m,
                          const unsigned char *data, uint64_t len)
{
    char sub[700];
    uint64_t ext = m->layout.extent, cnt = m->layout.count;

    for (uint64_t b = 0; b < len; b += ext) {
        uint64_t e = b / ext, n = len - b < ext ? len - b : ext;
        drx_stripe_subfile_path(s, m, (unsigned)(e % cnt), sub, sizeof sub);
        int fd = open(sub, O_WRONLY);
        if (fd < 0 || pwrite(fd, data + b, n, (off_t)((e / cnt) * ext)) != (ssize_t)n) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
    }
    return 0;
}

/* drx-load's way to fill a striped file: a hidden temporary file, its
 * subfiles written directly, then the size and one rename over NAME. */
static void test_temp(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 16}, l3 = {3, 32};
    struct drx_stripe_meta m, old, t;
    struct drx_err err = {{0}};
    struct drx_stripe *f;
    static unsigned char a[1000], b[5000], back[6000];
    char path[600], tmp[PATH_MAX], sub[700], fresh[600];
    struct stat st;

    fill_random(a, sizeof a, 31);
    fill_random(b, sizeof b, 32);
    snprintf(path, sizeof path, "%s/dst", root);
    make_striped(s, path, &l, 0640, a, sizeof a, &old);
    int rc = drx_stripe_create_temp(s, path, &l3, 0600, tmp, sizeof tmp, &err);
    const char *tbase = strrchr(tmp, '/') + 1;
    tap_ok(rc == 0 && drx_store_name_is_temp(tbase) && strncmp(tbase, ".dst.nafs.", 10) == 0,
           "create_temp: %s (%s)", tbase, err.msg);
    tap_ok(drx_stripe_meta_load(tmp, s->cfg.stripe.ndirs, &t, NULL) == 0 && t.size == 0 &&
               t.layout.count == 3 && t.layout.extent == 32,
           "the temporary metafile: size 0, the layout asked for");
    tap_ok(write_subfiles(s, &t, b, sizeof b) == 0, "subfiles written directly");
    tap_ok(drx_stripe_stat(s, path, &m, NULL) == 0 && m.size == sizeof a && m.layout.count == 2 &&
               strcmp(m.sub[0].name, old.sub[0].name) == 0,
           "NAME is untouched meanwhile");
    rc = drx_stripe_commit_temp(s, tmp, path, sizeof b, &err);
    tap_ok(rc == 0, "commit_temp (%s)", err.msg);
    tap_ok(drx_stripe_stat(s, path, &m, NULL) == 0 && m.size == sizeof b && m.layout.count == 3 &&
               strcmp(m.sub[0].name, t.sub[0].name) == 0,
           "NAME is now the new file, with its size");
    tap_ok(drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL) == 0 &&
               drx_stripe_read(f, back, sizeof back, 0) == (ssize_t)sizeof b &&
               memcmp(back, b, sizeof b) == 0,
           "and reads the new bytes");
    drx_stripe_close(f);
    snprintf(sub, sizeof sub, "%s.nafs", path);
    memset(&st, 0, sizeof st);
    rc = stat(sub, &st);
    tap_ok(access(tmp, F_OK) < 0 && rc == 0 && (st.st_mode & 07777) == 0640,
           "the temporary name is gone; the replaced file's mode stays (%o)",
           (unsigned)(st.st_mode & 07777));
    drx_stripe_subfile_path(s, &old, 0, sub, sizeof sub);
    tap_ok(access(sub, F_OK) < 0, "the replaced file's subfiles are removed");

    /* a new name; then one given up */
    snprintf(fresh, sizeof fresh, "%s/fresh", root);
    tap_ok(drx_stripe_create_temp(s, fresh, NULL, 0600, tmp, sizeof tmp, &err) == 0 &&
               !drx_stripe_exists(fresh),
           "create_temp of a new name: NAME does not exist yet");
    drx_stripe_meta_load(tmp, s->cfg.stripe.ndirs, &t, NULL);
    write_subfiles(s, &t, a, 100);
    snprintf(sub, sizeof sub, "%s.nafs", fresh);
    tap_ok(drx_stripe_commit_temp(s, tmp, fresh, 100, &err) == 0 &&
               drx_stripe_stat(s, fresh, &m, NULL) == 0 && m.size == 100 && m.layout.count == 2 &&
               m.layout.extent == 16 && stat(sub, &st) == 0 && (st.st_mode & 07777) == 0600,
           "commit_temp to a new name: the directory's layout, the temporary's mode");
    tap_ok(drx_stripe_create_temp(s, fresh, NULL, 0600, tmp, sizeof tmp, &err) == 0,
           "create_temp again");
    drx_stripe_meta_load(tmp, s->cfg.stripe.ndirs, &t, NULL);
    drx_stripe_subfile_path(s, &t, 1, sub, sizeof sub);
    tap_ok(drx_stripe_discard_temp(s, tmp, &err) == 0 && access(tmp, F_OK) < 0 &&
               access(sub, F_OK) < 0 && drx_stripe_stat(s, fresh, &m, NULL) == 0 && m.size == 100,
           "discard_temp removes it and its subfiles, NAME stays");
    drx_stripe_unlink(s, path, NULL);
    drx_stripe_unlink(s, fresh, NULL);
}

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* Linux 6.5, the same number on every architecture */
#endif

/* Dirty or under-writeback pages of a file (cachestat(2)), -1 when the
 * kernel cannot tell. */
static long long unsynced_pages(const char *path)
{
    struct {
        uint64_t off, len;
    } range = {0, 0};
    struct {
        uint64_t cache, dirty, writeback, evicted, recently_evicted;
    } cs;
    int fd = open(path, O_RDONLY);
    long r = fd < 0 ? -1 : syscall(SYS_cachestat, fd, &range, &cs, 0);

    if (fd >= 0)
        close(fd);
    return r < 0 ? -1 : (long long)(cs.dirty + cs.writeback);
}

/* fsync(2) calls, libcore's included (this definition interposes libc's):
 * whether a metafile was made durable cannot be seen from its pages, ext4
 * writes a renamed-over file back at once anyway. */
static int nfsync;

int fsync(int fd)
{
    nfsync++;
    return (int)syscall(SYS_fsync, fd);
}

/* SPEC 9: data before the metadata that points to it.  A persist that
 * advances the recorded size must find the bytes it covers on disk already,
 * and a truncate down must have its metafile durable before the subfiles
 * are cut. */
static void test_crash_order(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 4096};
    struct drx_stripe *f;
    struct drx_stripe_meta m;
    static unsigned char data[256 << 10];
    char path[600], sub[700];
    long long dirty[2];

    snprintf(path, sizeof path, "%s/order", root);
    fill_random(data, sizeof data, 21);
    drx_stripe_create(s, path, &l, 0644, &f, NULL);
    drx_stripe_meta_get(f, &m);
    drx_stripe_write(f, data, sizeof data, 0);
    drx_stripe_subfile_path(s, &m, 0, sub, sizeof sub);
    if (unsynced_pages(sub) <= 0) {
        tap_ok(1, "# SKIP cachestat(2) does not show dirty pages here");
        drx_stripe_close(f);
        return;
    }
    drx_stripe_flush(f);
    for (unsigned i = 0; i < 2; i++) {
        drx_stripe_subfile_path(s, &m, i, sub, sizeof sub);
        dirty[i] = unsynced_pages(sub);
    }
    drx_stripe_stat(s, path, &m, NULL);
    tap_ok(m.size == sizeof data && dirty[0] == 0 && dirty[1] == 0,
           "recording a larger size syncs the subfiles first (%lld, %lld pages left dirty)",
           dirty[0], dirty[1]);

    drx_stripe_write(f, data, 1000, 0); /* inside the size: nothing to record */
    drx_stripe_flush(f);
    nfsync = 0;
    drx_stripe_truncate(f, 1000);
    drx_stripe_stat(s, path, &m, NULL);
    tap_ok(m.size == 1000 && nfsync >= 2,
           "truncate down: the metafile and its directory are fsynced before the cut (%d fsyncs)",
           nfsync);
    drx_stripe_close(f);
    drx_stripe_unlink(s, path, NULL);
}

static void test_layouts(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l;
    struct drx_err err = {{0}};
    char buf[64], sub[600], deep[700], path[800];
    struct drx_stripe_meta m;

    tap_ok(drx_stripe_layout_parse("count=3 extent=4096", 4, &l, NULL) == 0 && l.count == 3 &&
               l.extent == 4096,
           "parse count=3 extent=4096");
    tap_ok(drx_stripe_layout_parse("extent=64K,count=1", 4, &l, NULL) == 0 && l.extent == 65536,
           "parse reversed with suffix");
    tap_ok(drx_stripe_layout_parse("count=5 extent=1", 4, &l, &err) == -EINVAL,
           "count above ndirs refused: %s", err.msg);
    tap_ok(drx_stripe_layout_parse("count=0 extent=1", 4, &l, NULL) == -EINVAL, "count 0 refused");
    tap_ok(drx_stripe_layout_parse("count=1 extent=0", 4, &l, NULL) == -EINVAL, "extent 0 refused");
    tap_ok(drx_stripe_layout_parse("count=1", 4, &l, NULL) == -EINVAL, "extent missing refused");
    tap_ok(drx_stripe_layout_parse("count=1 extent=2 foo=3", 4, &l, NULL) == -EINVAL,
           "junk refused");
    tap_ok(drx_stripe_layout_parse("count=-1 extent=2", 4, &l, NULL) == -EINVAL,
           "negative refused");
    l = (struct drx_stripe_layout){3, 12345};
    tap_ok(drx_stripe_layout_format(&l, buf, sizeof buf) > 0 &&
               strcmp(buf, "count=3 extent=12345") == 0,
           "format: %s", buf);

    snprintf(sub, sizeof sub, "%s/lay", root);
    snprintf(deep, sizeof deep, "%s/lay/a/b", root);
    char cmd[900];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", deep);
    if (system(cmd) != 0)
        abort();
    tap_ok(drx_stripe_layout_for_new(s, deep, &l, NULL) == 0 && l.count == 2 && l.extent == 16,
           "no xattr: the store default");
    struct drx_stripe_layout want = {4, 100};
    int rc = drx_stripe_layout_dir_set(s, sub, &want, &err);
    if (rc == -ENOTSUP) {
        tap_ok(1, "# SKIP no user xattrs here");
        return;
    }
    tap_ok(rc == 0, "set layout on a directory");
    tap_ok(drx_stripe_layout_for_new(s, deep, &l, NULL) == 0 && l.count == 4 && l.extent == 100,
           "inherited from the nearest ancestor");
    snprintf(path, sizeof path, "%s/file", deep);
    drx_stripe_create(s, path, NULL, 0644, NULL, NULL);
    tap_ok(drx_stripe_stat(s, path, &m, NULL) == 0 && m.layout.count == 4 && m.layout.extent == 100,
           "create without a layout uses the inherited one");
    setxattr(deep, DRX_STRIPE_XATTR, "count=99 extent=1", 17, 0);
    tap_ok(drx_stripe_layout_for_new(s, deep, &l, NULL) == 0 && l.count == 4,
           "an invalid xattr is skipped (next ancestor decides)");
    want = (struct drx_stripe_layout){5, 1};
    tap_ok(drx_stripe_layout_dir_set(s, sub, &want, &err) == -EINVAL, "set refuses count > ndirs");
    tap_ok(drx_stripe_layout_dir_set(s, path, &want, &err) < 0, "set refuses a non-directory");
    tap_ok(drx_stripe_layout_dir_set(s, sub, NULL, NULL) == 0 &&
               drx_stripe_layout_dir_get(s, sub, &l, NULL) == 0,
           "remove the layout");
    snprintf(path, sizeof path, "%s", base);
    setxattr(base, DRX_STRIPE_XATTR, "count=1 extent=7", 16, 0);
    tap_ok(drx_stripe_layout_for_new(s, sub, &l, NULL) == 0 && l.count == 2,
           "directories above the store root do not count");
    removexattr(base, DRX_STRIPE_XATTR);
}

static void test_enospc(void)
{
    char root[512], tiny[600], path[700];
    struct drx_config cfg;
    struct drx_store *s = NULL;
    struct drx_stripe *f = NULL;
    struct drx_stripe_layout l = {2, 65536};
    const char *dirs[2];
    char d0[600];

    snprintf(root, sizeof root, "%s/full", base);
    snprintf(d0, sizeof d0, "%s/full-d0", base);
    snprintf(tiny, sizeof tiny, "%s/full-tiny", base);
    mkdir(tiny, 0755);
    if (mount("tmpfs", tiny, "tmpfs", 0, "size=256k") < 0) {
        tap_ok(1, "# SKIP ENOSPC: cannot mount a tmpfs (%s)", strerror(errno));
        return;
    }
    dirs[0] = d0;
    dirs[1] = tiny;
    drx_config_defaults(&cfg, NULL);
    drx_config_set_dirs(&cfg, dirs, 2);
    drx_store_init(root, &cfg, 0, NULL);
    drx_store_open(root, NULL, &s, NULL);
    snprintf(path, sizeof path, "%s/big", root);
    size_t len = 4 << 20;
    unsigned char *data = malloc(len), *back = malloc(len);
    fill_random(data, len, 5);
    drx_stripe_create(s, path, &l, 0644, &f, NULL);
    uint64_t off = 0;
    ssize_t n = 0;
    while (off < len) {
        n = drx_stripe_write(f, data + off, 131072, off);
        if (n <= 0)
            break;
        off += (uint64_t)n;
    }
    tap_ok(n == -ENOSPC, "a full stripe dir gives ENOSPC (%zd after %llu bytes)", n,
           (unsigned long long)off);
    tap_ok(drx_stripe_size(f) == off, "size stays at what was written (%llu)",
           (unsigned long long)drx_stripe_size(f));
    drx_stripe_close(f);
    struct drx_stripe_meta m;
    drx_stripe_stat(s, path, &m, NULL);
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL);
    tap_ok(m.size == off && drx_stripe_read(f, back, len, 0) == (ssize_t)off &&
               memcmp(back, data, off) == 0,
           "recorded size and bytes are exactly what was written");
    drx_stripe_close(f);
    drx_store_close(s);
    drx_config_fini(&cfg);
    free(data);
    free(back);
    umount2(tiny, MNT_DETACH);
}

struct as_nobody {
    const char *root, *path; /* the store, the file */
    bool temp;               /* replace it by a temporary (drx-load copy) */
};

/* Opens the store, then rewrites the file's metafile: a write and close
 * (the size persisted), or a temporary committed over it (drx-load copy).
 * Run as another user by run_as(). */
static int rewrite_as_nobody(void *arg)
{
    const struct as_nobody *a = arg;
    struct drx_store *s = NULL;
    struct drx_stripe *f = NULL;
    struct drx_err err = {{0}};
    char tmp[PATH_MAX];
    int rc = drx_store_open(a->root, NULL, &s, &err);

    if (rc == 0 && a->temp) {
        rc = drx_stripe_create_temp(s, a->path, NULL, 0644, tmp, sizeof tmp, &err);
        if (rc == 0)
            rc = drx_stripe_commit_temp(s, tmp, a->path, 0, &err);
    } else if (rc == 0) {
        rc = drx_stripe_open(s, a->path, DRX_STRIPE_RDWR, &f, &err);
        if (rc == 0 && drx_stripe_write(f, "more", 4, 100) != 4)
            rc = -EIO;
        if (rc == 0)
            rc = drx_stripe_close(f);
    }
    if (rc)
        fprintf(stderr, "# as nobody: %d %s\n", rc, err.msg);
    drx_store_close(s);
    return rc ? 1 : 0;
}

/* A metafile replaced by someone who cannot keep its owner (a daemon or a
 * drx-load copy not running as root, or root without CAP_CHOWN: in a
 * container, on a root-squashed store) is theirs, without the set-ID bits,
 * its group getting only what others get; the owner keeps the whole mode.
 * Root without CAP_CHOWN is the case that matters: it keeps CAP_FSETID, so
 * nothing strips the bits of its writes, and a user's set-ID file would
 * become a set-ID root file at the mount. */
static void test_replaced_owner_mode(void)
{
    static const struct {
        const char *name;
        uid_t owner; /* of the file before */
        int who;     /* -1: this process (root); else an enum as_who */
        bool temp;   /* a temporary committed over it, else a size persisted */
        uid_t uid;   /* owner after */
        unsigned mode;
    } cases[] = {
        {"by its owner", 0, -1, false, 0, 06755},
        {"a size persisted by nobody", 0, AS_NOBODY, false, NOBODY_ID, 0755},
        {"a copy committed by nobody", 0, AS_NOBODY, true, NOBODY_ID, 0755},
        /* in place: the metafile is the file, and stays nobody's */
        {"a size persisted by root without CAP_CHOWN", NOBODY_ID, AS_ROOT_NO_CHOWN, false,
         NOBODY_ID, 06755},
        {"a copy committed by root without CAP_CHOWN", NOBODY_ID, AS_ROOT_NO_CHOWN, true, 0, 0755},
    };
    char root[512], path[600], mp[700], sp[1024];
    struct drx_store *s = make_store("own", root);
    struct drx_stripe_layout l = {2, 16};
    struct drx_stripe_meta m;
    struct stat st;

    if (!s) {
        tap_ok(0, "a store for the owner tests");
        return;
    }
    chmod(base, 0711);
    chmod(root, 0777);
    for (unsigned d = 0; d < s->cfg.stripe.ndirs; d++)
        chmod(s->cfg.stripe.dirs[d], 0777);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        snprintf(path, sizeof path, "%s/owned%zu", root, c);
        snprintf(mp, sizeof mp, "%s.nafs", path);
        make_striped(s, path, &l, 0644, "0123456789abcdefghij", 20, &m);
        /* the subfiles the metafile's owner's, as a chown at the mount
         * leaves them (another user's are refused) */
        for (unsigned i = 0; i < m.layout.count; i++) {
            drx_stripe_subfile_path(s, &m, i, sp, sizeof sp);
            if (chown(sp, cases[c].owner, cases[c].owner) < 0 || chmod(sp, 0666) < 0)
                abort();
        }
        /* the chown first: it clears set-ID bits */
        if (chown(mp, cases[c].owner, cases[c].owner) < 0 || chmod(mp, 06755) < 0)
            abort();
        struct as_nobody a = {root, path, cases[c].temp};
        int rc;
        if (cases[c].who < 0) {
            rc = rewrite_as_nobody(&a); /* the same steps, as this process */
        } else {
            rc = run_as(cases[c].who, rewrite_as_nobody, &a);
            if (rc == -2) {
                tap_ok(1, "# SKIP not root: cannot write as another user");
                continue;
            }
        }
        memset(&st, 0, sizeof st);
        stat(mp, &st);
        tap_ok(rc == 0 && st.st_uid == cases[c].uid && st.st_gid == cases[c].uid &&
                   (st.st_mode & 07777) == cases[c].mode,
               "%s: %u:%u %o (%d)", cases[c].name, (unsigned)st.st_uid, (unsigned)st.st_gid,
               (unsigned)(st.st_mode & 07777), rc);
    }
    drx_store_close(s);
}

/* Bytes the subfiles of m hold on disk past what size needs (0: none). */
static long long past_size(struct drx_store *s, const struct drx_stripe_meta *m, uint64_t size)
{
    long long extra = 0;
    char sp[1024];
    struct stat st;

    for (unsigned i = 0; i < m->layout.count; i++) {
        drx_stripe_subfile_path(s, m, i, sp, sizeof sp);
        if (stat(sp, &st) == 0 &&
            (uint64_t)st.st_size > drx_stripe_subfile_len(&m->layout, i, size))
            extra += (long long)(st.st_size - drx_stripe_subfile_len(&m->layout, i, size));
    }
    return extra;
}

static long long free_bytes(const char *path)
{
    struct statvfs sv;
    return statvfs(path, &sv) ? -1 : (long long)sv.f_bavail * (long long)sv.f_frsize;
}

/* Writes data at the end of f until the disk is full; returns the bytes
 * stored and the last result in *last. */
static uint64_t fill(struct drx_stripe *f, const unsigned char *data, size_t len, ssize_t *last)
{
    uint64_t off = 0;

    *last = 0;
    while (off < len) {
        *last = drx_stripe_write(f, data + off, 100000, off);
        if (*last <= 0)
            break;
        off += (uint64_t)*last;
    }
    return off;
}

/* Takes the last free block of the filesystem at dir (a filler file that
 * grows until ENOSPC): what a cut short run gave back must not be what lets
 * the metafile update through. */
static void take_the_rest(const char *dir, char *filler, size_t len)
{
    static const char zeros[4096];
    int fd;

    snprintf(filler, len, "%s/filler", dir);
    fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    while (fd >= 0 && write(fd, zeros, sizeof zeros) > 0)
        ;
    while (fd >= 0 && write(fd, zeros, 1) > 0)
        ;
    if (fd >= 0)
        close(fd);
}

/* A whole store (metafiles too) on a full filesystem: the size of what was
 * stored is recorded in place, no byte is left past it, and where even that
 * is impossible (a metafile of an older drx, without room for more digits)
 * the unrecordable bytes are given back at once and the close says ENOSPC. */
static void test_full_store(void)
{
    char tiny[600], root[700], path[800], mp[900], filler[700];
    struct drx_config cfg;
    struct drx_store *s = NULL;
    struct drx_stripe *f = NULL;
    struct drx_stripe_layout l = {2, 65536}; /* runs of 16 pages: one can end half way */
    struct drx_stripe_meta m;
    size_t len = 4 << 20;
    unsigned char *data = malloc(len), *back = malloc(len);
    ssize_t last;

    snprintf(tiny, sizeof tiny, "%s/fullstore", base);
    mkdir(tiny, 0755);
    if (mount("tmpfs", tiny, "tmpfs", 0, "size=1m") < 0) {
        tap_ok(1, "# SKIP full store: cannot mount a tmpfs (%s)", strerror(errno));
        free(data);
        free(back);
        return;
    }
    snprintf(root, sizeof root, "%s/s", tiny);
    drx_config_defaults(&cfg, NULL);
    drx_store_init(root, &cfg, 0, NULL);
    drx_store_open(root, NULL, &s, NULL);
    fill_random(data, len, 9);
    long long free0 = free_bytes(tiny);

    /* a padded metafile: the size is recorded in place */
    snprintf(path, sizeof path, "%s/big", root);
    drx_stripe_create(s, path, &l, 0644, &f, NULL);
    uint64_t stored = fill(f, data, len, &last);
    tap_ok(last == -ENOSPC && stored > 0, "the store fills: ENOSPC after %llu bytes",
           (unsigned long long)stored);
    drx_stripe_meta_get(f, &m);
    tap_ok(past_size(s, &m, m.size) == 0 && m.size == stored,
           "the run cut short left no bytes past the size");
    take_the_rest(tiny, filler, sizeof filler);
    tap_ok(drx_stripe_close(f) == 0, "close records the size though no block is free");
    unlink(filler);
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &f, NULL);
    tap_ok(drx_stripe_stat(s, path, &m, NULL) == 0 && m.size == stored &&
               drx_stripe_read(f, back, len, 0) == (ssize_t)stored &&
               memcmp(back, data, stored) == 0,
           "the recorded size and bytes are what was stored (%llu)", (unsigned long long)m.size);
    drx_stripe_close(f);
    drx_stripe_unlink(s, path, NULL);
    tap_ok(free_bytes(tiny) == free0, "rm gives all the space back");

    /* a metafile without room for more digits: the bytes are given back */
    snprintf(path, sizeof path, "%s/old", root);
    snprintf(mp, sizeof mp, "%s.nafs", path);
    drx_stripe_create(s, path, &l, 0644, NULL, NULL);
    drx_stripe_stat(s, path, &m, NULL);
    char text[600];
    snprintf(text, sizeof text,
             "version = 1;\nextent = 65536;\ncount = 2;\nsize = 0L;\nsubfiles = ( { dir = %u; "
             "name = \"%s\"; }, { dir = %u; name = \"%s\"; } );\n",
             m.sub[0].dir, m.sub[0].name, m.sub[1].dir, m.sub[1].name);
    write_file(mp, text, strlen(text));
    long long free1 = free_bytes(tiny);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    stored = fill(f, data, len, &last);
    take_the_rest(tiny, filler, sizeof filler);
    int rc = drx_stripe_close(f);
    unlink(filler);
    tap_ok(last == -ENOSPC && rc == -ENOSPC, "unrecordable: the close says ENOSPC (%d)", rc);
    tap_ok(drx_stripe_stat(s, path, &m, NULL) == 0 && m.size == 0 && past_size(s, &m, 0) == 0 &&
               free_bytes(tiny) == free1,
           "the size stays the recorded 0 and the space is free at once (%lld of %lld)",
           free_bytes(tiny), free1);
    drx_stripe_unlink(s, path, NULL);
    drx_store_close(s);
    drx_config_fini(&cfg);
    free(data);
    free(back);
    umount2(tiny, MNT_DETACH);
}

/* The placement functions against a byte map built the slow way: extents
 * dealt round-robin to subfiles, each subfile filled front to back. */
#define MAP_BYTES 97

struct byte_place {
    unsigned sub;
    uint64_t off;
};

static void brute_map(const struct drx_stripe_layout *l, struct byte_place *map)
{
    uint64_t fill[DRX_MAX_STRIPE_DIRS] = {0};

    for (uint64_t b = 0; b < MAP_BYTES; b += l->extent) {
        unsigned sub = (unsigned)((b / l->extent) % l->count);
        for (uint64_t j = 0; j < l->extent && b + j < MAP_BYTES; j++)
            map[b + j] = (struct byte_place){sub, fill[sub] + j};
        fill[sub] += l->extent;
    }
}

/* Number of mismatches of drx_stripe_locate against map. */
static int check_locate(const struct drx_stripe_layout *l, const struct byte_place *map)
{
    int bad = 0;

    for (uint64_t b = 0; b < MAP_BYTES; b++) {
        struct drx_stripe_piece pc;
        drx_stripe_locate(l, b, MAP_BYTES, &pc);
        bad += pc.subfile != map[b].sub || pc.offset != map[b].off || pc.logical != b ||
               pc.len < 1 || pc.len > l->extent;
        /* The run stays in one subfile, contiguously. */
        for (uint64_t j = 1; j < pc.len && b + j < MAP_BYTES; j++)
            bad += map[b + j].sub != pc.subfile || map[b + j].off != pc.offset + j;
    }
    return bad;
}

/* Mismatches of drx_stripe_range_pieces over [a, b): every byte covered
 * once, by its own subfile at its own offset, pieces in order. */
static int check_range(const struct drx_stripe_layout *l, const struct byte_place *map, uint64_t a,
                       uint64_t b)
{
    struct drx_stripe_piece p[MAP_BYTES + 2];
    unsigned char seen[MAP_BYTES] = {0};
    size_t max = drx_stripe_range_pieces_max(l, a, b);
    int bad = 0;

    for (unsigned i = 0; i < l->count; i++) {
        size_t k = drx_stripe_range_pieces(l, i, a, b, p, MAP_BYTES + 2);
        bad += k > max;
        for (size_t j = 0; j < k && j < MAP_BYTES + 2; j++) {
            bad += p[j].subfile != i || p[j].len < 1;
            bad += j > 0 && p[j].logical <= p[j - 1].logical;
            for (uint64_t x = 0; x < p[j].len; x++) {
                uint64_t byte = p[j].logical + x;
                if (byte < a || byte >= b) {
                    bad++;
                    continue;
                }
                seen[byte]++;
                bad += map[byte].sub != i || map[byte].off != p[j].offset + x;
            }
        }
    }
    for (uint64_t x = a; x < b; x++)
        bad += seen[x] != 1;
    return bad;
}

static void test_placement(void)
{
    struct byte_place map[MAP_BYTES];
    int bad_locate = 0, bad_range = 0;

    for (unsigned count = 1; count <= 5; count++)
        for (uint64_t extent = 1; extent <= 9; extent++) {
            struct drx_stripe_layout l = {count, extent};
            brute_map(&l, map);
            bad_locate += check_locate(&l, map);
            for (uint64_t a = 0; a <= MAP_BYTES; a += 3)
                for (uint64_t b = a; b <= MAP_BYTES; b += 5)
                    bad_range += check_range(&l, map, a, b);
        }
    tap_ok(bad_locate == 0, "drx_stripe_locate matches the byte map (%d wrong)", bad_locate);
    tap_ok(bad_range == 0, "drx_stripe_range_pieces matches the byte map (%d wrong)", bad_range);

    /* Pieces of 3 bytes at logical 10, 16, 22 read into a buffer from 10:
     * 4 bytes arrived, so the first piece and one byte of the second stay,
     * the rest reads as zeros. */
    struct drx_stripe_piece p[3] = {{0, 0, 10, 3}, {0, 3, 16, 3}, {0, 6, 22, 3}};
    unsigned char buf[15];
    memset(buf, 0xaa, sizeof buf);
    drx_stripe_pieces_fill_holes(p, 3, 4, buf, 10);
    static const unsigned char want[15] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0,
                                           0,    0xaa, 0xaa, 0xaa, 0,    0,    0};
    tap_ok(memcmp(buf, want, sizeof buf) == 0, "a short subfile's missing bytes read as zeros");
}

/* Extents under 16 KiB go through a buffer, a call per subfile and 1 MiB
 * window (stripe_io.c, gathered()): random writes and reads, some across
 * windows, some past the end (holes), against a copy in memory, then
 * every subfile byte against the formula. */
static void test_gathered(struct drx_store *s, const char *root)
{
    static const unsigned counts[] = {1, 2, 3, 4};
    static const uint64_t extents[] = {1, 3, 1000, 16383};
    const size_t cap = (5u << 19) + 777; /* 2.5 MiB and some: three windows */
    unsigned char *ref = calloc(1, cap), *buf = malloc(cap), *back = malloc(cap);
    unsigned seed = 7;
    char path[600];

    for (size_t ci = 0; ci < 4; ci++)
        for (size_t ei = 0; ei < 4; ei++) {
            struct drx_stripe_layout l = {counts[ci], extents[ei]};
            struct drx_stripe *f;
            uint64_t size = 0;
            int ok, bad = 0;
            memset(ref, 0, cap);
            snprintf(path, sizeof path, "%s/gathered%zu_%zu", root, ci, ei);
            ok = drx_stripe_create(s, path, &l, 0644, &f, NULL) == 0;
            for (int op = 0; ok && op < 40; op++) {
                seed = seed * 1103515245u + 12345u;
                /* every fourth a large one (up to 1.5 MiB), else small */
                size_t len = (seed >> 8) % (op % 4 == 0 ? (3u << 19) : 20000) + 1;
                seed = seed * 1103515245u + 12345u;
                uint64_t off = (seed >> 4) % (cap - len);
                if (op % 2 == 0) {
                    fill_random(buf, len, seed);
                    bad += drx_stripe_write(f, buf, len, off) != (ssize_t)len;
                    memcpy(ref + off, buf, len);
                    size = off + len > size ? off + len : size;
                } else {
                    ssize_t want = off >= size ? 0 : (ssize_t)(off + len > size ? size - off : len);
                    ssize_t got = drx_stripe_read(f, back, len, off);
                    bad += got != want || (want > 0 && memcmp(back, ref + off, (size_t)want));
                }
            }
            ok &= bad == 0 && drx_stripe_size(f) == size;
            ok &= drx_stripe_read(f, back, cap, 0) == (ssize_t)size && memcmp(back, ref, size) == 0;
            ok &= drx_stripe_close(f) == 0 && check_placement(s, path, ref, size);
            tap_ok(ok,
                   "count=%u extent=%llu: random reads and writes through the buffer (%d wrong)",
                   l.count, (unsigned long long)l.extent, bad);
        }
    free(ref);
    free(buf);
    free(back);
}

/* Hard links of striped files (the metafile's), short temporary names,
 * fallocate and SEEK_DATA/SEEK_HOLE (stripe_space.c), blocks. */
static void test_links_and_space(struct drx_store *s, const char *root)
{
    struct drx_stripe_layout l = {2, 4096};
    struct drx_stripe *f;
    struct drx_stripe_meta m, m2;
    char a[600], b[600], sp[1024], mp[700], tmp[PATH_MAX];
    unsigned char data[8192];
    struct stat st;
    uint64_t blocks;

    snprintf(a, sizeof a, "%s/lk_a", root);
    snprintf(b, sizeof b, "%s/lk_b", root);
    fill_random(data, sizeof data, 3);
    make_striped(s, a, &l, 0644, data, 8192, &m);
    tap_ok(drx_stripe_link(s, a, b, NULL) == 0, "link of a striped file");
    tap_ok(drx_stripe_link(s, a, b, NULL) == -EEXIST, "link onto an existing name: EEXIST");
    snprintf(mp, sizeof mp, "%s.nafs", b);
    tap_ok(stat(mp, &st) == 0 && st.st_nlink == 2, "the metafile has two names");
    drx_stripe_open(s, a, DRX_STRIPE_RDWR, &f, NULL);
    drx_stripe_write(f, data, 100, 8192);
    drx_stripe_close(f);
    tap_ok(drx_stripe_stat(s, b, &m2, NULL) == 0 && m2.size == 8292 && stat(mp, &st) == 0 &&
               st.st_nlink == 2,
           "a size recorded under one name is the other's (in place)");
    tap_ok(drx_stripe_unlink(s, a, NULL) == 0 &&
               drx_stripe_subfile_path(s, &m, 0, sp, sizeof sp) > 0 && access(sp, F_OK) == 0,
           "unlink of one name keeps the subfiles");
    make_striped(s, a, &l, 0644, "x", 1, &m2);
    tap_ok(drx_stripe_link(s, b, "/nonexistent-dir/x", NULL) < 0,
           "link into a missing directory fails");
    tap_ok(drx_stripe_rename(s, a, b, 0, NULL) == 0 && access(sp, F_OK) != 0,
           "rename over the last name removes its subfiles");

    /* fallocate and holes: 4 extents of data at 0, a hole, data at 40960 */
    make_striped(s, a, &l, 0644, data, 4096, &m);
    drx_stripe_open(s, a, DRX_STRIPE_RDWR, &f, NULL);
    drx_stripe_write(f, data, 4096, 40960);
    tap_ok(drx_stripe_seek(f, 0, SEEK_DATA) == 0 && drx_stripe_seek(f, 0, SEEK_HOLE) == 4096 &&
               drx_stripe_seek(f, 4096, SEEK_DATA) == 40960 &&
               drx_stripe_seek(f, 40960, SEEK_HOLE) == 45056 &&
               drx_stripe_seek(f, 45056, SEEK_DATA) == -ENXIO,
           "SEEK_DATA and SEEK_HOLE across subfiles");
    tap_ok(drx_stripe_fallocate(f, 0, 0, 1 << 20) == 0 && drx_stripe_size(f) == 1 << 20,
           "fallocate mode 0 grows the size");
    drx_stripe_meta_get(f, &m);
    drx_stripe_blocks(s, &m, &blocks);
    tap_ok(blocks >= (1 << 20) / 512, "blocks of a preallocated file: %llu",
           (unsigned long long)blocks);
    tap_ok(drx_stripe_fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 8192) == 0 &&
               drx_stripe_read(f, data, 10, 4090) == 10 && data[0] == 0 && data[9] == 0,
           "punched bytes read as zeros");
    tap_ok(drx_stripe_fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, 10) == -EOPNOTSUPP &&
               drx_stripe_fallocate(f, FALLOC_FL_COLLAPSE_RANGE, 0, 4096) == -EOPNOTSUPP,
           "modes not mapped: EOPNOTSUPP");
    drx_stripe_close(f);

    /* a name too long for `.NAME.nafs.XXXXXX` gets `.drx-tmp.XXXXXX` */
    char longname[600];
    snprintf(longname, sizeof longname, "%s/%0249d", root, 7);
    struct drx_err err = {{0}};
    tmp[0] = '\0';
    int rc = drx_stripe_create_temp(s, longname, &l, 0644, tmp, sizeof tmp, &err);
    const char *tb = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
    tap_ok(rc == 0 && strncmp(tb, DRX_STORE_TEMP_SHORT, strlen(DRX_STORE_TEMP_SHORT)) == 0 &&
               drx_store_name_is_temp(tb),
           "the temporary of a 249-byte name: %s (%d %s)", tb, rc, err.msg);
    tap_ok(drx_stripe_commit_temp(s, tmp, longname, 0, NULL) == 0 && drx_stripe_exists(longname),
           "committed under the long name");
}

/* drx_stripe_sub_mode_fd reads the ACL of the metafile open at its
 * descriptor, not of what the name holds: drxfs carries an open file's
 * chmod to its subfiles after another file was renamed over its name. */
static void test_sub_mode_fd(void)
{
    /* user::rw- user:65534:rw- group::r-- mask::rw- other::--- */
    static const unsigned char acl[] = {
        2,    0, 0, 0,                         /* version 2 */
        0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, /* USER_OBJ rw */
        0x02, 0, 6, 0, 0xfe, 0xff, 0,    0,    /* USER 65534 rw */
        0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, /* GROUP_OBJ r */
        0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, /* MASK rw */
        0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, /* OTHER */
    };
    char name[600], mp[700], plain[700];

    snprintf(name, sizeof name, "%s/acl", base);
    snprintf(mp, sizeof mp, "%s.nafs", name);
    snprintf(plain, sizeof plain, "%s/plain.nafs", base);
    write_file(mp, "x", 1);
    write_file(plain, "x", 1);
    if (setxattr(mp, "system.posix_acl_access", acl, sizeof acl, 0) < 0) {
        tap_ok(1, "# SKIP sub mode by descriptor: no ACLs here (%s)", strerror(errno));
        return;
    }
    int a = open(mp, O_PATH | O_CLOEXEC), p = open(plain, O_PATH | O_CLOEXEC);
    tap_ok(a >= 0 && p >= 0, "metafiles opened O_PATH");
    tap_ok(drx_stripe_sub_mode_fd(a, 0660) == 0640 && drx_stripe_sub_mode(name, 0660) == 0640,
           "a named user's ACL: the subfiles get the owning group's own bits (0%o)",
           (unsigned)drx_stripe_sub_mode_fd(a, 0660));
    tap_ok(drx_stripe_sub_mode_fd(p, 0660) == 0660, "no ACL: the mode's group bits");
    /* another file renamed over the name: the descriptor's file still */
    tap_ok(rename(plain, mp) == 0, "a file without an ACL renamed over the name");
    tap_ok(drx_stripe_sub_mode_fd(a, 0660) == 0640, "the open metafile's ACL, not the name's");
    tap_ok(drx_stripe_sub_mode(name, 0660) == 0660, "by name: the name's file");
    if (a >= 0)
        close(a);
    if (p >= 0)
        close(p);
}

int main(void)
{
    char root[512];
    struct drx_store *s;

    snprintf(base, sizeof base, "/tmp/drx-test-stripe-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    drx_log_set_sink(sink, NULL);
    drx_log_set_level(DRX_LOG_DEBUG);
    test_placement();
    s = make_store("st", root);
    tap_ok(s != NULL, "store with 4 stripe dirs");
    if (s) {
        test_round_robin(s, root);
        test_gathered(s, root);
        test_truncate(s, root);
        test_rename_unlink(s, root);
        test_open_meta_fd(s, root);
        test_hostile(s, root);
        test_missing(s, root);
        test_threads_and_persist(s, root);
        test_shared_handles(s, root);
        test_crash_order(s, root);
        test_temp(s, root);
        test_layouts(s, root);
        test_links_and_space(s, root);
        drx_store_close(s);
    }
    test_enospc();
    test_full_store();
    test_replaced_owner_mode();
    test_sub_mode_fd();
    rm_rf(base);
    return tap_done();
}
