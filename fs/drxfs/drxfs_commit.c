/* Batched durability of striped files, as ext4's ordered mode does it
 * (-o commit_interval=S, default DRXFS_COMMIT_INTERVAL; 0: at each close).
 *
 * A striped file's recorded size must never be ahead of its durable data,
 * so recording it at close costs an fdatasync of every subfile written
 * and of their directories: four device flushes per small file on a
 * journal-less ext4, which dominated copies of many small files.  With a
 * commit interval, the last close of a file written through the mount
 * hands its handle to this module instead: a thread, every S seconds (or
 * at once when asked with `setfattr -n user.drx.commit MOUNTPOINT`, or
 * when many files wait), marks each file, syncs the store once (the
 * barrier: syncfs of the stripe directories' filesystems), then records
 * each size (the striped code's flush, which syncs again only what changed
 * after its mark) and lets the file go.  fsync and fdatasync stay
 * synchronous; unmount commits everything.  Until its commit, the new size
 * of a file is what this mount shows, while the metafile (other processes,
 * other mounts, a crash) still says the old one: at most S seconds.
 *
 * The module knows nothing of striped files: it holds opaque objects with
 * their functions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drxfs_i.h"

/* Files waiting at most before the thread commits at once; twice that and
 * closes commit themselves (each holds its subfiles open). */
#define COMMIT_BATCH_MAX 256

struct commit_item {
    void *obj;
    const struct drxfs_commit_ops *ops;
    unsigned tries; /* rounds that put it back */
    struct commit_item *next;
};

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond, done;
    struct commit_item *head;
    unsigned count;
    unsigned interval; /* seconds, 0: off */
    int (*barrier)(void);
    bool started, stop, asked, busy;
    unsigned long rounds, committed;
    pthread_t thread;
} cm = {.mutex = PTHREAD_MUTEX_INITIALIZER,
        .cond = PTHREAD_COND_INITIALIZER,
        .done = PTHREAD_COND_INITIALIZER};

/* A size not recorded for want of descriptors or memory (the daemon's
 * table full of a user's opens, say) waits for the next round, unless
 * the mount stops: released, the file's bytes would stay past its old
 * size, and fsck --repair would cut them.  True when it was put back. */
static bool commit_again(struct commit_item *it, int rc)
{
    bool again = rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM || rc == -EAGAIN;

    pthread_mutex_lock(&cm.mutex);
    again = again && !cm.stop;
    if (again) {
        it->next = cm.head;
        cm.head = it;
        cm.count++;
    }
    pthread_mutex_unlock(&cm.mutex);
    return again;
}

/* Marks every file, pays the sync once for all, then records each.
 * Returns how many were put back for the next round (commit_again). */
static unsigned run_batch(struct commit_item *it)
{
    unsigned again = 0;
    int why = 0;
    bool synced = false;
    int rc;

    for (struct commit_item *m = it; m; m = m->next)
        m->ops->mark(m->obj);
    if (it && (rc = cm.barrier()) < 0)
        drx_log(DRX_LOG_WARNING, "commit: syncing the store: %s; syncing file by file",
                strerror(-rc));
    else
        synced = it != NULL;
    /* files put back before (their lock held by another process) after
     * the others, and this time recorded without that lock: no other
     * file's size waits behind them, and theirs is recorded within two
     * rounds */
    struct commit_item *later = NULL, **tail = &later, **pp = &it;
    while (*pp) {
        struct commit_item *m = *pp;
        if (!m->tries) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        m->next = NULL;
        *tail = m;
        tail = &m->next;
    }
    *pp = later; /* pp: the end of the first-try files */
    while (it) {
        struct commit_item *next = it->next;
        rc = it->ops->commit(it->obj, synced, it->tries > 0);
        if (rc < 0)
            it->tries++;
        if (rc < 0 && commit_again(it, rc)) {
            again++;
            why = rc;
            it = next;
            continue;
        }
        if (rc < 0)
            drx_log_ratelimited(DRX_LOG_ERROR, "commit of a striped file: %s", strerror(-rc));
        it->ops->release(it->obj);
        free(it);
        it = next;
        __atomic_add_fetch(&cm.committed, 1, __ATOMIC_RELAXED);
    }
    if (again)
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "commit of %u striped files: %s; tried again next round", again,
                            strerror(-why));
    return again;
}

static void *commit_main(void *arg)
{
    (void)arg;
    unsigned again = 0;

    pthread_mutex_lock(&cm.mutex);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += cm.interval;
        /* after a round that put files back (no descriptors, no memory),
         * a full queue does not start the next one at once: the interval
         * is waited, not a loop of syncs while the shortage lasts */
        while (!cm.stop && !cm.asked && (again || cm.count < COMMIT_BATCH_MAX))
            if (pthread_cond_timedwait(&cm.cond, &cm.mutex, &until) == ETIMEDOUT)
                break;
        struct commit_item *batch = cm.head;
        cm.head = NULL;
        cm.count = 0;
        cm.asked = false;
        cm.busy = true;
        pthread_mutex_unlock(&cm.mutex);
        again = run_batch(batch);
        pthread_mutex_lock(&cm.mutex);
        cm.busy = false;
        cm.rounds++;
        pthread_cond_broadcast(&cm.done);
        if (cm.stop && !cm.head)
            break;
    }
    pthread_mutex_unlock(&cm.mutex);
    return NULL;
}

void drxfs_commit_start(unsigned interval, int (*barrier)(void))
{
    if (!interval)
        return;
    cm.interval = interval;
    cm.barrier = barrier;
    if (pthread_create(&cm.thread, NULL, commit_main, NULL) != 0) {
        drx_log(DRX_LOG_WARNING, "commit thread: cannot start; sizes are recorded at close");
        return;
    }
    cm.started = true;
}

bool drxfs_commit_active(void)
{
    return cm.started;
}

bool drxfs_commit_stopping(void)
{
    pthread_mutex_lock(&cm.mutex);
    bool stop = cm.stop;
    pthread_mutex_unlock(&cm.mutex);
    return stop;
}

bool drxfs_commit_defer(void *obj, const struct drxfs_commit_ops *ops)
{
    struct commit_item *it;

    if (!cm.started || !(it = malloc(sizeof(*it))))
        return false;
    it->obj = obj;
    it->ops = ops;
    it->tries = 0;
    pthread_mutex_lock(&cm.mutex);
    if (cm.stop || cm.count >= 2 * COMMIT_BATCH_MAX) {
        pthread_mutex_unlock(&cm.mutex);
        free(it);
        return false;
    }
    it->next = cm.head;
    cm.head = it;
    if (++cm.count >= COMMIT_BATCH_MAX)
        pthread_cond_signal(&cm.cond);
    pthread_mutex_unlock(&cm.mutex);
    return true;
}

void drxfs_commit_forget(void *obj)
{
    struct commit_item *gone = NULL;

    if (!cm.started)
        return;
    pthread_mutex_lock(&cm.mutex);
    for (struct commit_item **pp = &cm.head; *pp;) {
        struct commit_item *it = *pp;
        if (it->obj != obj) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        cm.count--;
        it->next = gone;
        gone = it;
    }
    pthread_mutex_unlock(&cm.mutex);
    while (gone) {
        struct commit_item *next = gone->next;
        gone->ops->release(gone->obj);
        free(gone);
        gone = next;
    }
}

void drxfs_commit_now(void)
{
    if (!cm.started)
        return;
    pthread_mutex_lock(&cm.mutex);
    unsigned long want = cm.rounds + (cm.busy ? 2 : 1);
    cm.asked = true;
    pthread_cond_signal(&cm.cond);
    while (cm.rounds < want && !cm.stop)
        pthread_cond_wait(&cm.done, &cm.mutex);
    pthread_mutex_unlock(&cm.mutex);
}

void drxfs_commit_stop(void)
{
    if (!cm.started)
        return;
    pthread_mutex_lock(&cm.mutex);
    cm.stop = true;
    pthread_cond_broadcast(&cm.cond);
    pthread_mutex_unlock(&cm.mutex);
    pthread_join(cm.thread, NULL);
    cm.started = false;
    drx_log(DRX_LOG_DEBUG, "commit: %lu files in %lu rounds", cm.committed, cm.rounds);
}

/* commit_interval=S (0: at each close; see DRXFS_COMMIT_INTERVAL). */
int drxfs_commit_option(const char *name, const char *value)
{
    if (strcmp(name, "commit_interval") == 0)
        return drxfs_opt_count(name, value, "seconds", 3600, &drxfs.commit_interval);
    return 1;
}
