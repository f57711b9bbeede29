/* The order in which the kernel sent its requests, for an answer that
 * depends on what an earlier one changed.
 *
 * A stat of an array file by a process that holds it open on an older
 * shape of its view shows that file's size (drxfs_kc_own_size); once the
 * process has closed it, the current size.  But the kernel tells the close
 * in the background: close(2) returns when the RELEASE is queued, not
 * answered, and the workers take requests from the device in the order
 * they were queued but handle them side by side.  The stat the process
 * made right after its close could be answered first, with the size of
 * the file it no longer held (mount_write.bats: 27 of 40 stats after 64
 * closes; once in a loaded CI run after one close).
 *
 * So every request is seen as it is taken from the device (the session's
 * io, drxfs_notify.c): a RELEASE marks its file as closing there, before
 * any worker handles it, and the request's number (the kernel's unique,
 * which grows by 2 with each request queued) is noted.  An answer that
 * depends on which files a process holds first waits until every request
 * numbered below its own was taken in (drxfs_order_wait), which the
 * workers do within microseconds; one that never comes (a request the
 * kernel dropped while queued: its caller was killed) is waited for
 * ORDER_WAIT_NS at most, once.
 *
 * The kernel queues a RELEASE at the close only while fewer than its
 * max_background background requests are in flight; beyond, it is queued
 * when one ends, maybe after the stat (README, Known limitations).
 */
#include <stdint.h>
#include <time.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

/* Requests remembered; far more than the workers can be taking in at
 * once (one each). */
#define ORDER_SLOTS 1024
/* An interrupt's unique is its request's with this bit set (the kernel's
 * FUSE_INT_REQ_BIT, not in its uapi header). */
#define ORDER_INT_BIT 1ULL
/* How long an answer waits for an earlier request that is not taken in:
 * a worker preempted between the device and the note, or one the kernel
 * dropped, which never comes. */
#define ORDER_WAIT_NS 50000000LL

static struct {
    uint64_t taken[ORDER_SLOTS]; /* the latest unique taken in each slot (atomic) */
    uint64_t low;                /* every request below was taken in, or given up on (atomic) */
} order;

/* The request this thread handles (0: none known, e.g. libfuse's own),
 * and its opcode. */
static __thread uint64_t current;
static __thread uint32_t current_opcode;

uint32_t drxfs_order_opcode(void)
{
    return current_opcode;
}

/* Raises *v to at least x (atomic). */
static void raise_to(uint64_t *v, uint64_t x)
{
    uint64_t old = __atomic_load_n(v, __ATOMIC_RELAXED);
    while (old < x &&
           !__atomic_compare_exchange_n(v, &old, x, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

void drxfs_order_taken(const void *buf, size_t len)
{
    const struct fuse_in_header *in = buf;

    current = 0;
    current_opcode = len >= sizeof *in ? in->opcode : 0;
    if (len < sizeof *in || (in->unique & ORDER_INT_BIT))
        return; /* an interrupt's number is its request's */
    if (in->opcode == FUSE_RELEASE && len >= sizeof *in + sizeof(struct fuse_release_in)) {
        const struct fuse_release_in *rel = (const void *)(in + 1);
        /* the handle the open gave the kernel (libfuse passes it as is),
         * alive until this worker handles the RELEASE */
        if (rel->fh)
            drxfs_fh_closing((struct drxfs_fh *)(uintptr_t)rel->fh);
    }
    /* the first request (INIT) starts the count */
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&order.low, &zero, in->unique, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    raise_to(&order.taken[(in->unique >> 1) % ORDER_SLOTS], in->unique);
    current = in->unique;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whether request u was taken in (or one ORDER_SLOTS later: long ago). */
static bool was_taken(uint64_t u)
{
    return __atomic_load_n(&order.taken[(u >> 1) % ORDER_SLOTS], __ATOMIC_ACQUIRE) >= u;
}

bool drxfs_order_wait(void)
{
    uint64_t u = current, v = __atomic_load_n(&order.low, __ATOMIC_ACQUIRE);
    long long deadline = 0;
    bool all = true;

    if (!u)
        return false;
    if (u > 2 * ORDER_SLOTS && v < u - 2 * ORDER_SLOTS)
        v = u - 2 * ORDER_SLOTS;
    for (; v < u; v += 2) {
        while (all && !was_taken(v)) {
            if (!deadline)
                deadline = now_ns() + ORDER_WAIT_NS;
            if (now_ns() > deadline) {
                all = false; /* given up on: not waited for again */
                break;
            }
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
        }
    }
    raise_to(&order.low, u);
    return all;
}
