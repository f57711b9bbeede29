/* Read-ahead pool of libcore: drx_io_readahead and
 * drx_io_readahead_ordered (drx/io.h). */
#include "drx/io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* cachestat(2), Linux 6.5 (the same number on every architecture); glibc
 * 2.36 and Debian 12's kernel headers do not name it. */
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

/* A duplicate of the caller's descriptor, shared by its queued ranges: the
 * last range done closes it (the caller's number may be reused meanwhile). */
struct ra_file {
    int fd;
    int refs;
};

struct ra_job {
    struct ra_file *f;
    uint64_t off, len;
    bool ordered; /* drx_io_readahead_ordered's: kept DRX_RA_AHEAD ahead */
};

#define DRX_RA_THREADS 4
#define DRX_RA_QUEUE 256
/* Duplicated descriptors the pool holds at most: past them hints run in
 * their callers, so a slow disk and many readers cannot bring the
 * process near its descriptor limit, or keep many removed files' blocks. */
#define DRX_RA_FILES 16
/* Bytes of ordered ranges hinted that no pool thread has yet seen read:
 * past them, a thread waits for the oldest to be read before it hints
 * another.  A disk given every range at once reads them in its own order
 * (by address), and a reader needing them in the order given (a row
 * slab's first planes lie in every chunk) waits for nearly all of them;
 * kept a few MiB ahead, they come about in order, as fast
 * (doc/benchmarks.md, "Where the cold slabs' time goes"). */
#define DRX_RA_AHEAD ((uint64_t)4 << 20)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct ra_job ring[DRX_RA_QUEUE];
    unsigned head, count;                    /* ring[head] is the oldest of count jobs */
    int threads;                             /* started; 0: every hint runs in its caller */
    int files;                               /* struct ra_file alive (duplicates held) */
    struct ra_file *busy[DRX_RA_THREADS];    /* each thread's job's file, or NULL */
    struct ra_file *waiting[DRX_RA_THREADS]; /* the file each thread waits on, or NULL */
    /* ordered ranges hinted and not yet seen read, oldest first (each
     * holds a reference to its file) */
    struct ra_job flight[DRX_RA_QUEUE];
    unsigned fhead, fcount;
    uint64_t fbytes;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* A zero length would mean "to the end of the file" to posix_fadvise. */
static void hint(int fd, uint64_t off, uint64_t len)
{
    if (len > 0)
        posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

/* Drops one reference to f; called with the lock held.  The descriptor to
 * close after unlocking, or -1. */
static int file_unref(struct ra_file *f)
{
    if (--f->refs > 0)
        return -1;
    int fd = f->fd;
    free(f);
    pool.files--;
    return fd;
}

/* Drops a reference to f, closing its duplicate when it was the last;
 * called with the lock held, which it lets go around the close. */
static void file_drop(struct ra_file *f)
{
    int fd = file_unref(f);

    if (fd >= 0) {
        pthread_mutex_unlock(&pool.lock);
        close(fd);
        pthread_mutex_lock(&pool.lock);
    }
}

/* The oldest range in flight, taken off the list (its reference is the
 * caller's now).  Called with the lock held, pool.fcount > 0. */
static struct ra_job flight_pop(void)
{
    struct ra_job o = pool.flight[pool.fhead];

    pool.fhead = (pool.fhead + 1) % DRX_RA_QUEUE;
    pool.fcount--;
    pool.fbytes -= o.len;
    return o;
}

/* Before hinting len bytes: while more than DRX_RA_AHEAD would be in
 * flight, waits (lock let go) until the oldest range's last page is read:
 * a one-byte read of it waits for the disk read its hint started (or
 * reads the page itself if it was dropped meanwhile).  Called with the
 * lock held. */
static void flight_wait(uint64_t len, struct ra_file **waiting)
{
    while (pool.fcount > 0 && (pool.fcount == DRX_RA_QUEUE || pool.fbytes + len > DRX_RA_AHEAD)) {
        struct ra_job o = flight_pop();
        char c;
        *waiting = o.f; /* a fork meanwhile closes it in the child */
        pthread_mutex_unlock(&pool.lock);
        if (pread(o.f->fd, &c, 1, (off_t)(o.off + o.len - 1)) < 0) {
            /* a hint is only a hint: nothing to wait for */
        }
        pthread_mutex_lock(&pool.lock);
        *waiting = NULL;
        file_drop(o.f);
    }
}

/* Nothing queued: what is in flight is the kernel's business now, and the
 * duplicates it held are let go.  Called with the lock held. */
static void flight_forget(void)
{
    while (pool.fcount > 0)
        file_drop(flight_pop().f);
}

static void *ra_main(void *arg)
{
    struct ra_file **busy = arg, **waiting = &pool.waiting[busy - pool.busy];

    pthread_mutex_lock(&pool.lock);
    for (;;) {
        if (pool.count == 0)
            flight_forget();
        while (pool.count == 0)
            pthread_cond_wait(&pool.work, &pool.lock);
        struct ra_job j = pool.ring[pool.head];
        pool.head = (pool.head + 1) % DRX_RA_QUEUE;
        pool.count--;
        *busy = j.f;
        if (j.ordered && j.len > 0) {
            flight_wait(j.len, waiting);
            /* in flight from here: the list takes the job's reference */
            pool.flight[(pool.fhead + pool.fcount) % DRX_RA_QUEUE] = j;
            pool.fcount++;
            pool.fbytes += j.len;
            j.f->refs++;
        }
        pthread_mutex_unlock(&pool.lock);
        hint(j.f->fd, j.off, j.len);
        pthread_mutex_lock(&pool.lock);
        *busy = NULL;
        file_drop(j.f);
    }
    return NULL;
}

/* fork: no pool thread holds the lock while the process forks. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&pool.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&pool.lock);
}

/* The child has none of the threads: its hints run in their callers, and
 * the duplicates that the queued, running and in-flight jobs held are closed (their
 * files are the parent's business).  The condition variable is made anew:
 * the parent's waiters are not in the child (a broadcast would wait for
 * them). */
static void fork_child(void)
{
    for (; pool.count > 0; pool.count--) {
        int fd = file_unref(pool.ring[pool.head].f);
        pool.head = (pool.head + 1) % DRX_RA_QUEUE;
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < 2 * DRX_RA_THREADS; i++) {
        struct ra_file **f = i < DRX_RA_THREADS ? &pool.busy[i] : &pool.waiting[i - DRX_RA_THREADS];
        int fd = *f ? file_unref(*f) : -1;
        *f = NULL;
        if (fd >= 0)
            close(fd);
    }
    for (; pool.fcount > 0; pool.fcount--) {
        int fd = file_unref(pool.flight[pool.fhead].f);
        pool.fhead = (pool.fhead + 1) % DRX_RA_QUEUE;
        if (fd >= 0)
            close(fd);
    }
    pool.fbytes = 0;
    pool.threads = 0;
    pool.files = 0;
    pthread_cond_init(&pool.work, NULL);
    pthread_mutex_unlock(&pool.lock);
}

/* Registered once, at load: never twice, even when a fork interrupts the
 * pool's start in another thread (glibc then starts it again in the
 * child, whose pool_start must not register the handlers anew). */
__attribute__((constructor)) static void pool_atfork(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Starts the threads, detached and with every signal blocked (they never
 * end: a process's pool lives as long as it, and libdrxcore is never
 * unloaded, -z nodelete). */
static void pool_start(void)
{
    sigset_t all, old;
    pthread_attr_t at;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 << 10);
    for (int i = 0; i < DRX_RA_THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, ra_main, &pool.busy[i]) != 0)
            break;
        pool.threads++;
    }
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A new shared duplicate of fd with one reference (the caller's, until
 * its ranges are queued), counted in pool.files; NULL when the pool holds
 * DRX_RA_FILES already or the duplicate fails.  Called with the lock held. */
static struct ra_file *file_new(int fd)
{
    struct ra_file *f;

    if (pool.files >= DRX_RA_FILES || !(f = malloc(sizeof(*f))))
        return NULL;
    if ((f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        free(f);
        return NULL;
    }
    f->refs = 1;
    pool.files++;
    return f;
}

static void queue(int fd, const struct drx_io_range *ranges, int n, bool ordered)
{
    struct ra_file *f = NULL;
    int i = 0;

    if (n <= 0)
        return;
    pthread_once(&pool_once, pool_start);
    pthread_mutex_lock(&pool.lock);
    if (pool.threads > 0 && (f = file_new(fd))) {
        for (; i < n && pool.count < DRX_RA_QUEUE; i++) {
            pool.ring[(pool.head + pool.count) % DRX_RA_QUEUE] =
                (struct ra_job){f, ranges[i].off, ranges[i].len, ordered};
            pool.count++;
            f->refs++;
        }
        pthread_cond_broadcast(&pool.work);
    }
    int close_fd = f ? file_unref(f) : -1;
    pthread_mutex_unlock(&pool.lock);
    if (close_fd >= 0)
        close(close_fd);
    /* no pool, too many files held, no memory, no descriptor, or a full
     * queue */
    for (; i < n; i++)
        hint(fd, ranges[i].off, ranges[i].len);
}

void drx_io_readahead(int fd, const struct drx_io_range *ranges, int n)
{
    queue(fd, ranges, n, false);
}

void drx_io_readahead_ordered(int fd, const struct drx_io_range *ranges, int n)
{
    queue(fd, ranges, n, true);
}

/* Set once cachestat(2) is found missing (before Linux 6.5) or filtered
 * (seccomp): not asked again. */
static int cachestat_missing;

bool drx_io_cache_visible(void)
{
    return !__atomic_load_n(&cachestat_missing, __ATOMIC_RELAXED);
}

bool drx_io_cached(int fd, uint64_t off, uint64_t len)
{
    struct {
        uint64_t off, len;
    } range = {off, len};
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
    } cs;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pages;

    if (len == 0 || page <= 0 || !drx_io_cache_visible())
        return false;
    if (syscall(SYS_cachestat, fd, &range, &cs, 0) != 0) {
        if (errno == ENOSYS || errno == EPERM)
            __atomic_store_n(&cachestat_missing, 1, __ATOMIC_RELAXED);
        return false;
    }
    pages = (off + len + (uint64_t)page - 1) / (uint64_t)page - off / (uint64_t)page;
    return cs.nr_cache >= pages;
}
