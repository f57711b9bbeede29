/* Small striped files made cheap: recorded in batches (drx_stripe_sync_mark,
 * _sync_store, _synced: after one sync of the store, a flush records the
 * size without syncs of its own, unless the file was written after its
 * mark), and subfiles created only when the first byte reaches them. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drx/check.h"
#include "drx/config.h"
#include "drx/log.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "tap.h"

static char base[256];

/* fsync(2) and fdatasync(2) calls, libcore's included (these definitions
 * interpose libc's). */
static int nsyncs;

int fsync(int fd)
{
    nsyncs++;
    return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
    nsyncs++;
    return (int)syscall(SYS_fdatasync, fd);
}

/* sync_file_range(2), libcore's: with wb_fail set, the next call fails with
 * EIO, as for a subfile whose write-back failed (the error the store's
 * syncfs reported to an earlier batch, still unseen by the subfile's own
 * descriptor). */
static bool wb_fail;

int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    if (wb_fail) {
        wb_fail = false;
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_sync_file_range, fd, off, n, flags);
}

static void rm_rf(const char *p)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd) != 0)
        fprintf(stderr, "# rm -rf %s failed\n", p);
}

static struct drx_store *make_store(char *root)
{
    struct drx_config cfg;
    struct drx_store *s = NULL;
    char d[2][512];
    const char *dirs[2];

    snprintf(root, 512, "%s/st", base);
    for (int i = 0; i < 2; i++) {
        snprintf(d[i], sizeof d[i], "%s/disk%d", base, i);
        dirs[i] = d[i];
    }
    drx_config_defaults(&cfg, NULL);
    drx_config_set_dirs(&cfg, dirs, 2);
    cfg.stripe.count = 2;
    cfg.stripe.extent = 4096;
    if (drx_store_init(root, &cfg, 0, NULL) == 0)
        drx_store_open(root, NULL, &s, NULL);
    drx_config_fini(&cfg);
    return s;
}

static uint64_t recorded(struct drx_store *s, const char *path)
{
    struct drx_stripe_meta m = {0};
    drx_stripe_stat(s, path, &m, NULL);
    return m.size;
}

static void report(const struct drx_check_finding *k, void *arg)
{
    (void)arg;
    printf("# fsck: %s: %s\n", k->where, k->what);
}

static bool subfile_there(struct drx_store *s, const char *path, unsigned i)
{
    struct drx_stripe_meta m = {0};
    return drx_stripe_stat(s, path, &m, NULL) == 0 && drx_stripe_subfile_check(s, &m, i, NULL, NULL) == 0;
}

/* A 4 KiB file of layout count=2 extent=4096 makes one subfile; the second
 * comes with the first byte that reaches it, a truncate or fallocate that
 * needs it; readers (another handle, fsck) take an absent one as holes. */
static void test_lazy(struct drx_store *s, const char *root, const unsigned char *data)
{
    struct drx_stripe *f, *r;
    unsigned char back[12288];
    char path[600];

    snprintf(path, sizeof path, "%s/small", root);
    drx_stripe_create(s, path, NULL, 0644, &f, NULL);
    drx_stripe_write(f, data, 4096, 0);
    drx_stripe_flush(f);
    tap_ok(subfile_there(s, path, 0) && !subfile_there(s, path, 1),
           "a 4 KiB file has its first subfile only");
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &r, NULL);
    tap_ok(drx_stripe_read(r, back, 4096, 0) == 4096 && memcmp(back, data, 4096) == 0,
           "and reads back");
    drx_stripe_write(f, data, 12288, 0);
    drx_stripe_flush(f);
    tap_ok(subfile_there(s, path, 1), "a write reaching the second subfile creates it");
    tap_ok(drx_stripe_reload(r) == 1 && drx_stripe_read(r, back, 12288, 0) == 12288 &&
               memcmp(back, data, 12288) == 0,
           "a handle opened before its creation reads it");
    drx_stripe_close(r);
    drx_stripe_close(f);
    drx_stripe_unlink(s, path, NULL);

    snprintf(path, sizeof path, "%s/grown", root);
    drx_stripe_create(s, path, NULL, 0644, &f, NULL);
    drx_stripe_write(f, data, 10, 0);
    tap_ok(drx_stripe_truncate(f, 10000) == 0 && subfile_there(s, path, 1),
           "truncate up creates the subfile the new size needs");
    drx_stripe_close(f);
    drx_stripe_open(s, path, DRX_STRIPE_RDONLY, &r, NULL);
    memset(back, 1, sizeof back);
    tap_ok(drx_stripe_read(r, back, 10000, 0) == 10000 && memcmp(back, data, 10) == 0 &&
               back[5000] == 0 && back[9999] == 0,
           "its holes read as zeros");
    drx_stripe_close(r);

    snprintf(path, sizeof path, "%s/empty", root);
    drx_stripe_create(s, path, NULL, 0644, NULL, NULL);
    struct drx_check_result res = {0};
    tap_ok(drx_store_check(s, false, report, NULL, &res, NULL) == 0 && res.problems == 0,
           "fsck: a subfile not created yet is no damage (%u findings)", res.problems);
    /* one the recorded size needs is, still */
    struct drx_stripe_meta m;
    char sub[1024];
    snprintf(path, sizeof path, "%s/grown", root);
    drx_stripe_stat(s, path, &m, NULL);
    drx_stripe_subfile_path(s, &m, 1, sub, sizeof sub);
    unlink(sub);
    res = (struct drx_check_result){0};
    drx_store_check(s, false, report, NULL, &res, NULL);
    tap_ok(res.problems == 1, "fsck: a subfile the size needs that is gone is (%u findings)",
           res.problems);
    drx_stripe_open(s, path, DRX_STRIPE_RDWR, &f, NULL);
    tap_ok(drx_stripe_read(f, back, 4096, 4096) == -EIO &&
               drx_stripe_write(f, data, 10, 5000) == -EIO && !subfile_there(s, path, 1),
           "and it gives EIO, never re-created as holes");
    drx_stripe_close(f);
}

/* A subfile's write-back error seen after the store's sync succeeded: the
 * size is not recorded over the lost data. */
static void test_wb_error(struct drx_store *s, const char *root, const unsigned char *data)
{
    struct drx_stripe *f;
    char path[600];

    snprintf(path, sizeof path, "%s/wberr", root);
    drx_stripe_create(s, path, NULL, 0644, &f, NULL);
    drx_stripe_write(f, data, 6000, 0);
    uint64_t gen = drx_stripe_sync_mark(f);
    tap_ok(drx_stripe_sync_store(s) == 0, "the store's sync succeeds");
    wb_fail = true;
    int rc = drx_stripe_synced(f, gen);
    tap_ok(rc == -EIO, "a subfile's own write-back error is reported by synced (%d)", rc);
    rc = drx_stripe_flush(f);
    tap_ok(rc == -EIO && recorded(s, path) == 0,
           "the flush fails with it and records no size (%d, %llu)", rc,
           (unsigned long long)recorded(s, path));
    drx_stripe_close(f);
}

int main(void)
{
    static unsigned char data[20000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    struct drx_stripe *f[3];
    char root[512], path[3][600];
    uint64_t gen[3];
    struct drx_store *s;

    snprintf(base, sizeof base, "/tmp/drx-test-batch-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    drx_log_set_level(DRX_LOG_ERROR);
    s = make_store(root);
    tap_ok(s != NULL, "store with 2 stripe dirs");
    if (!s) {
        rm_rf(base);
        return tap_done();
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof path[i], "%s/f%d", root, i);
        drx_stripe_create(s, path[i], NULL, 0644, &f[i], NULL);
        drx_stripe_write(f[i], data, 5000 + (size_t)i, 0);
        gen[i] = drx_stripe_sync_mark(f[i]);
    }
    tap_ok(drx_stripe_sync_store(s) == 0, "one sync of the store");
    /* f2 is written after its mark: its flush must sync it itself */
    drx_stripe_write(f[2], data, 20000, 0);
    for (int i = 0; i < 3; i++)
        drx_stripe_synced(f[i], gen[i]);
    nsyncs = 0;
    drx_stripe_flush(f[0]);
    drx_stripe_flush(f[1]);
    tap_ok(nsyncs == 0 && recorded(s, path[0]) == 5000 && recorded(s, path[1]) == 5001,
           "sizes recorded after the store's sync, no sync of their own (%d)", nsyncs);
    drx_stripe_flush(f[2]);
    tap_ok(nsyncs >= 2 && recorded(s, path[2]) == 20000,
           "a file written after its mark syncs its subfiles first (%d syncs)", nsyncs);
    /* without drx_stripe_synced, a flush syncs as always */
    drx_stripe_write(f[0], data, 9000, 0);
    nsyncs = 0;
    drx_stripe_flush(f[0]);
    tap_ok(nsyncs >= 2 && recorded(s, path[0]) == 9000, "unmarked: synced at flush (%d)", nsyncs);
    for (int i = 0; i < 3; i++)
        drx_stripe_close(f[i]);
    test_wb_error(s, root, data);
    test_lazy(s, root, data);
    drx_store_close(s);
    rm_rf(base);
    return tap_done();
}
