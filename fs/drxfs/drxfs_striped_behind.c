/* A striped file's writes, off the write path: the subfiles' writeback is
 * started every DRXFS_WRITE_BEHIND bytes, and the size is recorded every
 * DRX_STRIPE_PERSIST_BYTES of growth by a thread of its own, not by the
 * write that crosses the mark.
 *
 * Recording a grown size first syncs the subfiles (the size must never be
 * ahead of durable data).  Done in the write request, as libcore does
 * without a front end's help, that sync stalls the writer: a cp of 1 GiB
 * through the mount waited 16 times for 64 MiB to reach the disk and ran
 * at half the speed it has without (doc/benchmarks.md).  Here a helper
 * thread takes the size, syncs what is written so far while the writes go
 * on, and records that size (drx_stripe_persist_behind); a writer that
 * outruns the disk by DRX_STRIPE_BEHIND_MAX persists inline again, so the
 * unrecorded tail stays bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "drxfs_striped_i.h"

/* Helper threads recording sizes at once, at most: beyond that a file
 * waits for a later write (or persists itself past the bound). */
#define BEHIND_THREADS 4

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t idle;
    unsigned running;
} bh = {.mutex = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

/* Opens e's subfiles for write-behind (e->wb_busy held). */
static int wb_open(struct drxfs_sfile *e)
{
    struct drx_stripe_meta m;

    drx_stripe_meta_get(e->f, &m);
    if (!(e->wb_fds = malloc(m.layout.count * sizeof(*e->wb_fds))))
        return -ENOMEM;
    for (unsigned i = 0; i < m.layout.count; i++)
        e->wb_fds[i] = drx_stripe_subfile_open(drxfs.store, &m, i, O_RDONLY, 0, e->key);
    e->wb_n = m.layout.count;
    return 0;
}

/* Starts the subfiles' writeback (sync_file_range, which does not wait for
 * it), so that the sync before a size is recorded finds most of the data
 * on the disk already.  A hint only: it changes nothing that is recorded. */
static void write_behind(struct drxfs_sfile *e, size_t n)
{
    if (__atomic_add_fetch(&e->wb_pending, n, __ATOMIC_RELAXED) < DRXFS_WRITE_BEHIND ||
        __atomic_exchange_n(&e->wb_busy, true, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&e->wb_pending, 0, __ATOMIC_RELAXED);
    if (e->wb_fds || wb_open(e) == 0)
        for (unsigned i = 0; i < e->wb_n; i++)
            if (e->wb_fds[i] >= 0)
                sync_file_range(e->wb_fds[i], 0, 0, SYNC_FILE_RANGE_WRITE);
    __atomic_store_n(&e->wb_busy, false, __ATOMIC_RELEASE);
}

static void *persist_main(void *arg)
{
    struct drxfs_sfile *e = arg;
    int rc = drx_stripe_persist_behind(e->f);

    if (rc < 0)
        drx_log(rc == -ENOSPC || rc == -EDQUOT ? DRX_LOG_DEBUG : DRX_LOG_WARNING,
                "%s: recording the size while writing: %s (left to the close)", e->key,
                strerror(-rc));
    __atomic_store_n(&e->persist_busy, false, __ATOMIC_RELEASE);
    drxfs_sfile_put(e);
    pthread_mutex_lock(&bh.mutex);
    if (--bh.running == 0)
        pthread_cond_broadcast(&bh.idle);
    pthread_mutex_unlock(&bh.mutex);
    return NULL;
}

/* Hands e's grown size to a helper thread, when none has it yet. */
static void persist_behind(struct drxfs_sfile *e)
{
    pthread_attr_t attr;
    pthread_t t;

    if (drx_stripe_unrecorded(e->f) < DRX_STRIPE_PERSIST_BYTES ||
        __atomic_exchange_n(&e->persist_busy, true, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&bh.mutex);
    bool room = bh.running < BEHIND_THREADS;
    bh.running += room;
    pthread_mutex_unlock(&bh.mutex);
    if (room) {
        pthread_mutex_lock(&drxfs_stable.mutex);
        e->refs++;
        pthread_mutex_unlock(&drxfs_stable.mutex);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, persist_main, e) == 0) {
            pthread_attr_destroy(&attr);
            return;
        }
        pthread_attr_destroy(&attr);
        drxfs_sfile_put(e);
        pthread_mutex_lock(&bh.mutex);
        bh.running--;
        pthread_mutex_unlock(&bh.mutex);
    }
    __atomic_store_n(&e->persist_busy, false, __ATOMIC_RELEASE);
}

void drxfs_striped_wrote(struct drxfs_sfile *e, size_t n)
{
    write_behind(e, n);
    persist_behind(e);
}

void drxfs_striped_behind_drain(void)
{
    pthread_mutex_lock(&bh.mutex);
    while (bh.running)
        pthread_cond_wait(&bh.idle, &bh.mutex);
    pthread_mutex_unlock(&bh.mutex);
}
