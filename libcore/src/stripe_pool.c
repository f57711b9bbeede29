/* Recycled subfiles: each stripe directory keeps, in `.pool/` (mode 0700,
 * its owner's), up to DRX_STRIPE_POOL_SLOTS emptied subfiles of removed
 * striped files, and a new subfile takes one of them by rename instead of
 * allocating an inode.  Why: ext4 without a journal passes over every
 * inode freed in the last minutes when it allocates one, one by one, and
 * the stripe directories see every removal of the store (doc/benchmarks.md,
 * "cp -r and git clone, measured"): a creation there cost 400-1000 us, a rename
 * costs tens.
 *
 * What keeps a recycled subfile from showing anybody's old bytes, or from
 * being written through a descriptor of its old life:
 * - it is first moved under a claim name into the pool's private
 *   directory, out of other users' reach, then emptied (ftruncate to 0)
 *   and stripped of its extended attributes (an ACL would keep granting
 *   its old owner access after the chown) while nobody else has it open
 *   (a write lease, F_SETLEASE F_WRLCK, is granted only then; a break of
 *   it, by root, signals SIGURG, ignored by default, not SIGIO);
 * - none are kept while the filesystem is short of free inodes
 *   (drx_store_inodes_plenty): the user's files come first;
 * - it leaves the pool by a rename to a claim name that only its taker
 *   knows, then, again under a write lease, it is emptied, given its mode
 *   (and, for root, this process's owner: the caller's chown follows, as for
 *   a new file; no one may open it between the checks and the changes),
 *   and only then renamed to its new name (RENAME_NOREPLACE, as O_EXCL).  A descriptor still open
 * on it from its old life (another process's handle of the removed file) makes the lease fail: the
 * file is then removed instead and a new one created. A kill at any point leaves an emptied file in
 * the pool, or a claim that a later scan removes, or a file under a new name that no metafile names
 * yet (an orphan for fsck, as a new subfile would be); never a name that a
 * metafile knows holding another file's bytes.
 *
 * Slots are the names "0000".."1023": the bound is in the names, whatever
 * number of processes share the pool.  A process only uses a pool it owns
 * and that belongs to the stripe directory's owner (root: any such; a pool
 * root makes is given to that owner, so the store's owner keeps using it).  When anything is not as
 * expected the caller falls back to unlink and O_CREAT|O_EXCL, as before the pool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/store.h"
#include "store_i.h"
#include "stripe_i.h"

#define WORDS (DRX_STRIPE_POOL_SLOTS / 64)
#define POOL_UNTRIED (-1) /* not opened yet */
#define POOL_MISSING (-2) /* no .pool yet: created by the first put */
#define POOL_UNUSABLE (-3)
/* A claim older than this is a killed taker's leftover. */
#define CLAIM_STALE_S 60
/* A scan that found the pool empty is not repeated sooner (other
 * processes' removals; this one's own are known without a scan). */
#define EMPTY_RESCAN_NS 1000000000LL

struct pool_dir {
    int fd;    /* .pool, or POOL_* */
    uid_t uid; /* its owner, who owns the files in it */
    gid_t gid;
    uint64_t full[WORDS]; /* slots believed to hold a file */
    unsigned nfull;
    unsigned cursor;      /* where the next search for a full slot starts */
    long long empty_scan; /* CLOCK_MONOTONIC ns of the last empty scan, or 0 */
};

struct drx_stripe_pool {
    pthread_mutex_t lock;
    mode_t umask; /* of this process, read once (new subfiles' modes) */
    bool umask_known;
    size_t ndirs;
    struct pool_dir d[];
};

int drx_stripe_pool_new(size_t ndirs, struct drx_stripe_pool **out)
{
    struct drx_stripe_pool *p = calloc(1, sizeof *p + ndirs * sizeof p->d[0]);

    *out = NULL;
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->ndirs = ndirs;
    for (size_t i = 0; i < ndirs; i++)
        p->d[i].fd = POOL_UNTRIED;
    *out = p;
    return 0;
}

void drx_stripe_pool_free(struct drx_stripe_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->ndirs; i++)
        if (p->d[i].fd >= 0)
            close(p->d[i].fd);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

bool drx_stripe_pool_slot_name(const char *n)
{
    if (strlen(n) != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (n[i] < '0' || n[i] > '9')
            return false;
    return atoi(n) < DRX_STRIPE_POOL_SLOTS;
}

bool drx_stripe_pool_claim_name(const char *n)
{
    if (strlen(n) != 17 || n[0] != 'c')
        return false;
    for (int i = 1; i < 17; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    return true;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bool bit(const struct pool_dir *pd, unsigned i)
{
    return pd->full[i / 64] >> (i % 64) & 1;
}

static void set_bit(struct pool_dir *pd, unsigned i, bool on)
{
    uint64_t m = (uint64_t)1 << (i % 64);
    if (on && !bit(pd, i)) {
        pd->full[i / 64] |= m;
        pd->nfull++;
    } else if (!on && bit(pd, i)) {
        pd->full[i / 64] &= ~m;
        pd->nfull--;
    }
}

/* This process's umask, from /proc (umask(2) cannot read it without
 * setting it, which other threads would see).  022 when unknown. */
static mode_t read_umask(void)
{
    char line[128];
    unsigned m = 022;
    FILE *f = fopen("/proc/self/status", "re");

    if (!f)
        return 022;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &m) == 1)
            break;
    fclose(f);
    return (mode_t)(m & 0777);
}

/* True when pool fd (of stripe directory dfd) may be used: a directory of
 * the stripe directory's owner alone, and this process is that owner or
 * root.  In a sticky directory others may write to, another user's
 * `.pool` would let them swap entries. */
static bool pool_usable(struct pool_dir *pd, int fd, int dfd)
{
    struct stat st, dst;

    if (fstat(fd, &st) < 0 || fstat(dfd, &dst) < 0 || !S_ISDIR(st.st_mode) ||
        (st.st_mode & 077) != 0 || st.st_uid != dst.st_uid)
        return false;
    if (st.st_uid != geteuid() && geteuid() != 0)
        return false;
    pd->uid = st.st_uid;
    pd->gid = st.st_gid;
    return true;
}

/* Opens (create: makes) the pool of stripe directory dfd. */
static int pool_open(struct pool_dir *pd, int dfd, bool create, const char *dname)
{
    struct stat dst;
    int fd;

    if (dfd < 0)
        return POOL_UNUSABLE;
    if (create && mkdirat(dfd, DRX_STRIPE_POOL_DIR, 0700) == 0 && geteuid() == 0 &&
        fstat(dfd, &dst) == 0) /* the store's owner keeps using it */
        (void)!fchownat(dfd, DRX_STRIPE_POOL_DIR, dst.st_uid, dst.st_gid, AT_SYMLINK_NOFOLLOW);
    fd = openat(dfd, DRX_STRIPE_POOL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT && !create ? POOL_MISSING : POOL_UNUSABLE;
    if (!pool_usable(pd, fd, dfd)) {
        drx_log(DRX_LOG_DEBUG,
                "%s/" DRX_STRIPE_POOL_DIR ": not the stripe directory owner's alone, or not "
                "this user's: not used",
                dname);
        close(fd);
        return POOL_UNUSABLE;
    }
    return fd;
}

/* The pool descriptor of stripe directory dir, or POOL_*. */
static int pool_fd(struct drx_store *s, unsigned dir, bool create)
{
    struct drx_stripe_pool *p = s->pool;
    int fd;

    if (!p || dir >= p->ndirs)
        return POOL_UNUSABLE;
    pthread_mutex_lock(&p->lock);
    struct pool_dir *pd = &p->d[dir];
    if (pd->fd == POOL_UNTRIED || (pd->fd == POOL_MISSING && create))
        pd->fd = pool_open(pd, s->dir_fds[dir], create, s->cfg.stripe.dirs[dir]);
    fd = pd->fd;
    pthread_mutex_unlock(&p->lock);
    return fd;
}

/* A claim entry n of pool pfd older than CLAIM_STALE_S: a killed taker's. */
static void drop_stale_claim(int pfd, const char *n)
{
    struct stat st;
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    if (fstatat(pfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        now.tv_sec - st.st_ctim.tv_sec > CLAIM_STALE_S)
        unlinkat(pfd, n, 0);
}

/* Reads which slots hold a file (p->lock held). */
static void scan(struct pool_dir *pd)
{
    struct dirent *e;
    int fd = openat(pd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((e = readdir(d))) {
        if (drx_stripe_pool_slot_name(e->d_name))
            set_bit(pd, (unsigned)atoi(e->d_name), true);
        else if (drx_stripe_pool_claim_name(e->d_name))
            drop_stale_claim(pd->fd, e->d_name);
    }
    closedir(d);
    pd->empty_scan = pd->nfull ? 0 : now_ns();
}

/* A slot believed full, taken out of the bitmap; -1 when none. */
static int pick_full(struct drx_stripe_pool *p, unsigned dir)
{
    struct pool_dir *pd = &p->d[dir];
    int slot = -1;

    pthread_mutex_lock(&p->lock);
    if (pd->nfull == 0 && (pd->empty_scan == 0 || now_ns() - pd->empty_scan > EMPTY_RESCAN_NS))
        scan(pd);
    for (unsigned k = 0; pd->nfull && k < DRX_STRIPE_POOL_SLOTS; k++) {
        unsigned i = (pd->cursor + k) % DRX_STRIPE_POOL_SLOTS;
        if (bit(pd, i)) {
            set_bit(pd, i, false);
            pd->cursor = i + 1;
            slot = (int)i;
            break;
        }
    }
    if (!p->umask_known) {
        p->umask = read_umask();
        p->umask_known = true;
    }
    pthread_mutex_unlock(&p->lock);
    return slot;
}

/* Renames entry `from` of directory ffd into a free slot of the pool (a
 * few tries at random places).  True when done. */
static bool into_slot(struct drx_stripe_pool *p, unsigned dir, int ffd, const char *from)
{
    struct pool_dir *pd = &p->d[dir];
    uint64_t r;

    drx_stripe_random_id(&r);
    for (unsigned k = 0; k < 16; k++) {
        unsigned i = (unsigned)((r + k * 61) % DRX_STRIPE_POOL_SLOTS);
        char sn[16];
        pthread_mutex_lock(&p->lock);
        bool known = bit(pd, i);
        pthread_mutex_unlock(&p->lock);
        if (known)
            continue;
        snprintf(sn, sizeof sn, "%04u", i);
        int rc = renameat2(ffd, from, pd->fd, sn, RENAME_NOREPLACE);
        pthread_mutex_lock(&p->lock);
        if (rc == 0 || errno == EEXIST)
            set_bit(pd, i, true);
        pd->empty_scan = 0;
        pthread_mutex_unlock(&p->lock);
        if (rc == 0)
            return true;
        if (errno != EEXIST)
            return false;
    }
    return false;
}

/* Removes the extended attributes a subfile may carry from its previous
 * life: its owner's POSIX ACL (which would keep granting that user access
 * after the chown), user.* and trusted.* attributes, file capabilities.
 * Security labels (security.* but capabilities) are the system's, not the
 * owner's, and stay.  False when one cannot be removed. */
static bool strip_xattrs(int fd)
{
    char names[4096];
    ssize_t n = flistxattr(fd, names, sizeof names);

    if (n < 0)
        return errno == ENOTSUP;
    for (char *x = names; x < names + n; x += strlen(x) + 1) {
        if (strncmp(x, "security.", 9) == 0 && strcmp(x, "security.capability") != 0)
            continue;
        if (fremovexattr(fd, x) < 0 && errno != ENODATA)
            return false;
    }
    return true;
}

/* For root, owner uid:gid (-1: unchanged), and mode unless (mode_t)-1,
 * for the file fd whose stat is st. */
static bool give_to(int fd, const struct stat *st, uid_t uid, gid_t gid, mode_t mode)
{
    if (geteuid() == 0 && uid != (uid_t)-1 && (st->st_uid != uid || st->st_gid != gid) &&
        fchown(fd, uid, gid) < 0)
        return false;
    return mode == (mode_t)-1 || (st->st_mode & 07777) == mode || fchmod(fd, mode) == 0;
}

/* Empties the regular file fd and, for root, gives it owner uid:gid (-1:
 * unchanged) and, when mode is not (mode_t)-1, that mode, all under a write
 * lease, so that nobody may open it between the checks and the changes.
 * False when another descriptor has it open, or it is not a single-link
 * regular file, or a change fails. */
static bool empty_alone(int fd, uid_t uid, gid_t gid, mode_t mode)
{
    struct stat st;
    bool ok;

    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
        return false;
    /* An open(2) of the file by anyone while the lease is held breaks it,
     * and the kernel then signals the holder: SIGIO by default, whose
     * default action ends the process.  SIGURG's default is to ignore it
     * (the lease is given up within microseconds anyway).  The file is in
     * the pool's private directory by now, so only root can open it. */
    if (fcntl(fd, F_SETSIG, SIGURG) < 0 || fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
        return false;
    ok = (st.st_size == 0 || ftruncate(fd, 0) == 0) && strip_xattrs(fd) &&
         give_to(fd, &st, uid, gid, mode);
    /* Broken meanwhile: an open that passed its permission check before
     * the changes is waiting to finish with a descriptor on this file,
     * which must then not be reused (the caller removes it). */
    if (fcntl(fd, F_GETLEASE) != F_WRLCK)
        ok = false;
    fcntl(fd, F_SETLEASE, F_UNLCK);
    return ok;
}

/* Takes slot `slot` of pool dir as subfile `name`: the descriptor,
 * -EEXIST when name exists, -EAGAIN for anything else (next slot). */
static int take_slot(struct drx_store *s, unsigned dir, unsigned slot, const char *name,
                     mode_t mode)
{
    struct drx_stripe_pool *p = s->pool;
    struct pool_dir *pd = &p->d[dir];
    char sn[16], cn[24];
    uint64_t id;
    int fd, e;

    snprintf(sn, sizeof sn, "%04u", slot);
    drx_stripe_random_id(&id);
    snprintf(cn, sizeof cn, "c%016llx", (unsigned long long)id);
    if (renameat2(pd->fd, sn, pd->fd, cn, RENAME_NOREPLACE) < 0)
        return -EAGAIN; /* another process took it */
    fd = openat(pd->fd, cn, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    bool ok = fd >= 0 && empty_alone(fd, geteuid(), getegid(), mode & 0666 & ~p->umask);
    if (!ok) {
        if (fd >= 0)
            close(fd);
        unlinkat(pd->fd, cn, 0);
        return -EAGAIN;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (renameat2(pd->fd, cn, s->dir_fds[dir], name, RENAME_NOREPLACE) == 0) {
        if (drx_store_moved_ours(fd, s->dir_fds[dir], name))
            return fd;
        close(fd);
        return -EAGAIN;
    }
    e = errno;
    close(fd);
    /* emptied and ours: back into the pool when it can go */
    if (!into_slot(p, dir, pd->fd, cn))
        unlinkat(pd->fd, cn, 0);
    return e == EEXIST ? -EEXIST : -EAGAIN;
}

int drx_stripe_pool_take(struct drx_store *s, unsigned dir, const char *name, mode_t mode)
{
    if (pool_fd(s, dir, false) < 0)
        return -ENOENT;
    for (int tries = 0; tries < 8; tries++) {
        int slot = pick_full(s->pool, dir);
        if (slot < 0)
            return -ENOENT;
        int fd = take_slot(s, dir, (unsigned)slot, name, mode);
        if (fd != -EAGAIN)
            return fd;
    }
    return -ENOENT;
}

bool drx_stripe_pool_put(struct drx_store *s, unsigned dir, const char *name)
{
    int dfd = dir < s->cfg.stripe.ndirs ? s->dir_fds[dir] : -1;
    bool ok;

    if (dfd < 0 || pool_fd(s, dir, true) < 0)
        return false;
    if (!drx_store_inodes_plenty(dfd))
        return false; /* give the inode back: the store runs short of them */
    struct pool_dir *pd = &s->pool->d[dir];
    char cn[24];
    uint64_t id;
    /* Moved out of the world's reach first: under a claim name in the
     * private pool, where nobody but root opens it while it is emptied. */
    drx_stripe_random_id(&id);
    snprintf(cn, sizeof cn, "c%016llx", (unsigned long long)id);
    if (renameat2(dfd, name, pd->fd, cn, RENAME_NOREPLACE) < 0)
        return false;
    int fd = openat(pd->fd, cn, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    ok = fd >= 0 && empty_alone(fd, pd->uid, pd->gid, 0600);
    if (fd >= 0)
        close(fd);
    if (!ok || !into_slot(s->pool, dir, pd->fd, cn))
        unlinkat(pd->fd, cn, 0);
    return true; /* the name is gone either way */
}
