/* Whose blocks a write takes: a root daemon serving another user
 * (drxfs with allow_other) allocates the blocks of that user's writes as
 * that user, so that the blocks ext4 keeps back for root and the user's
 * quota stop them as they would stop a direct write (README, "Known
 * limitations" had the gap until 2026-12-07: a user stopped at 11 MiB
 * wrote 21 MiB more through the mount).
 *
 * ext4 lets a write into its reserve when the writer's fsuid is the
 * reserve's owner (root) or it has CAP_SYS_RESOURCE, which also lifts
 * quota limits.  Both belong to the calling thread, so around each call
 * that allocates blocks (pwrite, pwritev, fallocate) the thread takes the
 * user's fsuid and fsgid and drops CAP_SYS_RESOURCE from its effective
 * set, and puts both back after.  Only that call: opens, renames and new
 * files of the same request stay the daemon's, whose owners and modes
 * libcore sets itself.  Six system calls per charged call, none when the
 * caller is root or the process is not. */
#include "drx/io.h"
#include "charge_i.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic(bool (*)(uid_t *, gid_t *)) charge_fn;

void drx_io_set_charge_fn(bool (*fn)(uid_t *uid, gid_t *gid))
{
    atomic_store(&charge_fn, geteuid() == 0 ? fn : NULL);
}

static int caps(int set, struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(set ? SYS_capset : SYS_capget, &h, d);
}

void drx_io_charge_begin(struct drx_io_charge *c)
{
    bool (*fn)(uid_t *, gid_t *) = atomic_load_explicit(&charge_fn, memory_order_relaxed);
    uid_t uid;
    gid_t gid;

    c->on = false;
    if (!fn || !fn(&uid, &gid) || uid == 0)
        return;
    struct __user_cap_data_struct d[2];
    if (caps(0, d) < 0)
        return;
    c->eff0 = d[0].effective;
    c->eff1 = d[1].effective;
    d[CAP_TO_INDEX(CAP_SYS_RESOURCE)].effective &= ~CAP_TO_MASK(CAP_SYS_RESOURCE);
    if (caps(1, d) < 0)
        return;
    c->gid = (gid_t)setfsgid(gid);
    c->uid = (uid_t)setfsuid(uid);
    c->on = true;
}

void drx_io_charge_end(struct drx_io_charge *c)
{
    if (!c->on)
        return;
    int e = errno;
    struct __user_cap_data_struct d[2];
    /* fsuid back to root first: the kernel gives back the file system
     * capabilities it took when fsuid left root */
    setfsuid(c->uid);
    setfsgid(c->gid);
    if (caps(0, d) == 0) {
        d[0].effective = c->eff0;
        d[1].effective = c->eff1;
        (void)caps(1, d);
    }
    c->on = false;
    errno = e;
}

ssize_t drx_io_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
    struct drx_io_charge c;
    drx_io_charge_begin(&c);
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    drx_io_charge_end(&c);
    return n < 0 ? -errno : n;
}

int drx_io_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
    struct drx_io_charge c;
    drx_io_charge_begin(&c);
    int rc = fallocate(fd, mode, (off_t)off, (off_t)len) < 0 ? -errno : 0;
    drx_io_charge_end(&c);
    return rc;
}
