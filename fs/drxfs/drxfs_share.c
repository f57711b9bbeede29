/* Each user's share of the daemon's descriptors.
 *
 * A file or directory open through the mount keeps descriptors of the
 * daemon open: a plain file's or a store directory's own, an array's
 * (its directory, .xmd, .xta and an inotify instance), a striped file's
 * (its directory, metafile, subfiles and their write-behind descriptors).
 * The daemon has one table for everybody: one user who held opens until
 * it was full made every other user's open, create and listing fail with
 * EMFILE, and the batched commit unable to record sizes, for as long as he
 * liked.  So the daemon raises its soft limit to the hard one at start,
 * and a user other than root (and than the daemon's own user, whose table
 * it is) may hold opens that keep at most a quarter of it; past that his
 * next open fails with EMFILE, as his own table's limit would.  An open is counted at what its kind keeps (drxfs_share_cost),
 * even when it shares a handle with other opens, so the count is an upper
 * bound; a user is refused only before an open, which then changes
 * nothing.
 *
 * Memory likewise: info, data.nc, data.npy and the zarr/ metadata are
 * made at open, and each open holds its own copy until its release (an
 * info or data.nc of a valid .xmd at its 64 MiB bound is 67 MB; 20 opens
 * of one held 1.4 GB of the daemon).  A user other than root may hold
 * SHARE_BYTES of them; the open past that fails with ENOMEM.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "drxfs_striped_i.h"

#define SHARE_BUCKETS 64
/* At least this many per user, whatever the limit. */
#define SHARE_MIN 64
/* Bytes made at open a user may hold. */
#define SHARE_BYTES ((uint64_t)256 << 20)

struct share_user {
    uid_t uid;
    uint64_t held;  /* descriptors */
    uint64_t bytes; /* made at open */
    struct share_user *next;
};

static struct {
    pthread_mutex_t mutex;
    struct share_user *bucket[SHARE_BUCKETS];
    uint64_t share;
} sh = {.mutex = PTHREAD_MUTEX_INITIALIZER, .share = SHARE_MIN};

void drxfs_share_init(void)
{
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
        return;
    if (lim.rlim_cur < lim.rlim_max) {
        struct rlimit raised = {lim.rlim_max, lim.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            lim.rlim_cur = lim.rlim_max;
    }
    sh.share = lim.rlim_cur / 4 > SHARE_MIN ? lim.rlim_cur / 4 : SHARE_MIN;
    drx_log(DRX_LOG_DEBUG, "descriptors: %llu, a user's share %llu",
            (unsigned long long)lim.rlim_cur, (unsigned long long)sh.share);
}

/* uid's entry (mutex held), made when create; NULL if none or no memory. */
static struct share_user *user_of(uid_t uid, bool create)
{
    struct share_user **pp = &sh.bucket[uid % SHARE_BUCKETS];

    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->uid == uid)
            return *pp;
    if (create && (*pp = calloc(1, sizeof(**pp))))
        (*pp)->uid = uid;
    return *pp;
}

int drxfs_share_take(uid_t *who)
{
    const struct fuse_context *ctx = fuse_get_context();
    struct share_user *u;
    int rc = 0;

    *who = ctx ? ctx->uid : 0;
    if (*who == geteuid())
        *who = 0; /* the daemon's own user (its whole table, as root's) */
    if (*who == 0)
        return 0;
    pthread_mutex_lock(&sh.mutex);
    if (!(u = user_of(*who, true)))
        rc = -ENOMEM;
    else if (u->held >= sh.share)
        rc = -EMFILE;
    else
        u->held++;
    pthread_mutex_unlock(&sh.mutex);
    if (rc == -EMFILE)
        drx_log(DRX_LOG_DEBUG, "uid %u holds his share of the daemon's descriptors (%llu)",
                (unsigned)*who, (unsigned long long)sh.share);
    return rc;
}

void drxfs_share_add(uid_t who, unsigned more)
{
    struct share_user *u;

    if (who == 0 || !more)
        return;
    pthread_mutex_lock(&sh.mutex);
    if ((u = user_of(who, false)))
        u->held += more;
    pthread_mutex_unlock(&sh.mutex);
}

int drxfs_share_hold(uid_t who, size_t bytes)
{
    struct share_user *u;
    int rc = 0;

    if (who == 0 || !bytes)
        return 0;
    pthread_mutex_lock(&sh.mutex);
    if (!(u = user_of(who, true)) || bytes > SHARE_BYTES - u->bytes)
        rc = -ENOMEM;
    else
        u->bytes += bytes;
    pthread_mutex_unlock(&sh.mutex);
    if (rc < 0)
        drx_log(DRX_LOG_DEBUG, "uid %u holds his share of the files made at open (%llu bytes)",
                (unsigned)who, (unsigned long long)SHARE_BYTES);
    return rc;
}

void drxfs_share_give(uid_t who, unsigned cost, size_t bytes)
{
    struct share_user **pp, *u;

    if (who == 0 || (!cost && !bytes))
        return;
    pthread_mutex_lock(&sh.mutex);
    for (pp = &sh.bucket[who % SHARE_BUCKETS]; *pp && (*pp)->uid != who;)
        pp = &(*pp)->next;
    if ((u = *pp)) {
        u->held = u->held > cost ? u->held - cost : 0;
        u->bytes = u->bytes > bytes ? u->bytes - bytes : 0;
        if (!u->held && !u->bytes) {
            *pp = u->next;
            free(u);
        }
    }
    pthread_mutex_unlock(&sh.mutex);
}

unsigned drxfs_share_cost(const struct drxfs_fh *fh)
{
    struct drx_stripe_layout l;

    switch (fh->kind) {
    case DRXFS_STRIPED:
        /* its subfiles, with the metafile's O_PATH descriptor and, while
         * it waits for the batched commit, the pending-size lock's
         * (stripe_pending.c) */
        drx_stripe_layout(fh->sf->f, &l);
        return 3 + 2 * l.count;
    case DRXFS_ADATA:
    case DRXFS_ANPY:
    case DRXFS_AINFO:
    case DRXFS_ANC:
    case DRXFS_ZARR:
        return 4;
    default:
        return 1;
    }
}
