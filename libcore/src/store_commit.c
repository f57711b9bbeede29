/* Asking a drxfs mount to commit (DRX_STORE_COMMIT_XATTR) before reading
 * its store directly: only a mount of the caller's own (mountinfo's
 * user_id=), reached without following a symlink, checked to be that
 * mount's root, and with a bounded wait, so that a stopped or hung daemon
 * does not hang drx or drx-load. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"
#include "store_i.h"
#include "stripe_i.h"

struct ask {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int refs; /* the asker and the thread: the last one frees */
    int rc;
    dev_t dev;
    char mnt[PATH_MAX];
};

bool drx_store_commit_owner_ok(long owner, uid_t euid)
{
    return owner >= 0 && (uid_t)owner == euid;
}

int drx_store_commit_at(const char *mnt, dev_t dev)
{
    struct open_how how = {
        .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    struct statx stx;
    char self[64];
    long fd = syscall(SYS_openat2, AT_FDCWD, mnt, &how, sizeof how);
    int rc = 0;

    if (fd < 0)
        return -errno; /* ELOOP: a symlink in the way; ENOSYS: too old a kernel */
    /* The mount's root: not a directory of another filesystem put in its
     * place (a parent renamed), nor one inside it.  DONT_SYNC: no request
     * to the daemon. */
    if (statx((int)fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx) < 0)
        rc = -errno;
    else if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev ||
             !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
             !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
        rc = -ESTALE;
    /* An O_PATH descriptor takes no fsetxattr; its /proc name leads to
     * that inode, whatever the path now names. */
    snprintf(self, sizeof self, "/proc/self/fd/%ld", fd);
    if (rc == 0 && setxattr(self, DRX_STORE_COMMIT_XATTR, "1", 1, 0) < 0)
        rc = -errno;
    close((int)fd);
    return rc;
}

static void ask_put(struct ask *a)
{
    pthread_mutex_lock(&a->lock);
    bool last = --a->refs == 0;
    pthread_mutex_unlock(&a->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->cond);
    free(a);
}

static void *ask_main(void *arg)
{
    struct ask *a = arg;
    int rc = drx_store_commit_at(a->mnt, a->dev);

    pthread_mutex_lock(&a->lock);
    a->rc = rc;
    a->done = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    ask_put(a);
    return NULL;
}

void drx_store_ask_commit(const char *mnt, dev_t dev, long owner)
{
    struct timespec until;
    pthread_attr_t attr;
    pthread_t t;
    struct ask *a;
    int rc = 0;

    if (!drx_store_commit_owner_ok(owner, geteuid()) || !(a = calloc(1, sizeof *a)))
        return;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    a->refs = 2;
    a->dev = dev;
    snprintf(a->mnt, sizeof a->mnt, "%s", mnt);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, ask_main, a) != 0) {
        pthread_attr_destroy(&attr);
        a->refs = 1;
        ask_put(a);
        return;
    }
    pthread_attr_destroy(&attr);
    /* A daemon that does not answer (stopped, hung) leaves the thread
     * waiting until the process exits (which ends the request). */
    unsigned wait_ms = drx_stripe_pending_wait_ms();
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a->lock);
    while (!a->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&a->cond, &a->lock, &until);
    if (a->done && a->rc < 0 && a->rc != -ENOTSUP && a->rc != -EROFS)
        drx_log(DRX_LOG_WARNING, "%s: not asked to commit: %s", mnt, strerror(-a->rc));
    else if (!a->done) /* an error: what is read may be older than the mount shows */
        drx_log(DRX_LOG_ERROR,
                "%s: no answer to the commit request in %g s: sizes it has not recorded yet "
                "are not seen",
                mnt, wait_ms / 1000.0);
    pthread_mutex_unlock(&a->lock);
    ask_put(a);
}
