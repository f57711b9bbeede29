/* Striped files recorded in batches (drx_stripe_sync_mark, _sync_store,
 * _synced): after one sync of the store, a flush records the size without
 * syncs of its own, unless the file was written after its mark. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int main(void)
{
    static unsigned char data[20000];
    struct drx_stripe *f[3];
    char root[512], path[3][600];
    uint64_t gen[3];
    struct drx_store *s;

    snprintf(base, sizeof base, "/tmp/drx-test-batch-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    drx_log_set_level(DRX_LOG_ERROR);
    memset(data, 'b', sizeof data);
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
    drx_store_close(s);
    rm_rf(base);
    return tap_done();
}
