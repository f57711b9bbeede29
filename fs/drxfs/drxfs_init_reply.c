/* Capabilities libfuse 3.14 does not know, added to the INIT reply on its
 * way to the kernel: FUSE_DIRECT_IO_ALLOW_MMAP (shared mmap of direct_io
 * files) and FUSE_HANDLE_KILLPRIV_V2 (set-ID bits and file capabilities
 * removed by the daemon at writes, drxfs_killpriv.c).
 *
 * The kernel (6.6 on) refuses MAP_SHARED on a file opened with direct_io
 * unless the INIT reply granted FUSE_DIRECT_IO_ALLOW_MMAP, a bit of the
 * flags2 word (protocol 7.39).  libfuse 3.14 sets FUSE_INIT_EXT in its
 * reply when the kernel offers it (protocol 7.36) and sends the whole
 * 64-byte fuse_init_out, but grants only capabilities it knows, and this
 * one came with libfuse 3.16.  Debian's 3.14 even answers minor 31 (its
 * fuse_kernel.h was reverted to 7.31), where bytes 32-35 are "unused".
 * The kernel (6.18) reads the flags of any reply of minor 6 or later, and
 * those bytes as flags2 whenever FUSE_INIT_EXT is set, whatever minor the
 * reply names.  Every request and reply passes through drxfs's custom io
 * (drxfs_notify.c), so the reply is amended there.
 *
 * FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33) is bit 28 of flags, which the
 * kernel reads from any reply of minor 6 or later.
 *
 * Only the reply to the INIT request seen last (its unique), each bit only
 * when that request offered it, only when libfuse's reply succeeded and is
 * long enough to carry the word the bit is in; the reply keeps libfuse's
 * length.  Anything else passes as libfuse made it: direct_io files then
 * refuse shared maps as before (ENODEV), and the kernel removes set-ID
 * bits and capabilities itself, asking for security.capability before
 * each write.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <linux/fuse.h>

/* FUSE_DIRECT_IO_ALLOW_MMAP: bit 36 of the 64-bit flags (bit 4 of flags2),
 * newer than Debian 12's linux/fuse.h */
#define INIT_DIO_ALLOW_MMAP (1ULL << 36)
/* The first protocol minor whose flags the kernel reads */
#define INIT_FLAGS_MINOR 6
/* What a reply must hold for the kernel to read flags2, or flags, from it */
#define INIT_OUT_FLAGS2_END (offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t))
#define INIT_OUT_FLAGS_END (offsetof(struct fuse_init_out, flags) + sizeof(uint32_t))

/* The INIT request being answered.  Read and answered by one worker
 * before the kernel sends any other request, but other workers' replies
 * and reads run meanwhile: pending is published after the rest. */
static struct {
    uint64_t unique;
    bool offered;     /* its flags2 offered FUSE_DIRECT_IO_ALLOW_MMAP */
    bool kp2_offered; /* its flags offered FUSE_HANDLE_KILLPRIV_V2 */
    bool pending;     /* awaiting its reply (atomic) */
} init;

/* FUSE_HANDLE_KILLPRIV_V2: asked for (-o killpriv=daemon, the default),
 * and granted in the last INIT reply (atomic). */
static bool kp2_wanted = true, kp2_granted;

void drxfs_init_want_killpriv(bool want)
{
    kp2_wanted = want;
}

bool drxfs_init_killpriv(void)
{
    return __atomic_load_n(&kp2_granted, __ATOMIC_RELAXED);
}

void drxfs_init_request(const void *buf, size_t len)
{
    struct fuse_in_header h;
    struct fuse_init_in in = {0};
    bool offered = false, kp2 = false;

    if (len < sizeof h)
        return;
    memcpy(&h, buf, sizeof h);
    if (h.opcode != FUSE_INIT)
        return;
    memcpy(&in, (const char *)buf + sizeof h,
           len - sizeof h < sizeof in ? len - sizeof h : sizeof in);
    /* flags2 counts only with FUSE_INIT_EXT; a short request offers none */
    if (len >= sizeof h + offsetof(struct fuse_init_in, flags2) + sizeof in.flags2 &&
        in.major == FUSE_KERNEL_VERSION && (in.flags & FUSE_INIT_EXT))
        offered = ((uint64_t)in.flags2 << 32) & INIT_DIO_ALLOW_MMAP;
    if (len >= sizeof h + offsetof(struct fuse_init_in, flags) + sizeof in.flags &&
        in.major == FUSE_KERNEL_VERSION)
        kp2 = in.flags & FUSE_HANDLE_KILLPRIV_V2;
    __atomic_store_n(&init.unique, h.unique, __ATOMIC_RELAXED);
    __atomic_store_n(&init.offered, offered, __ATOMIC_RELAXED);
    __atomic_store_n(&init.kp2_offered, kp2, __ATOMIC_RELAXED);
    __atomic_store_n(&init.pending, true, __ATOMIC_RELEASE);
}

/* Why the INIT reply of len bytes at out cannot carry a bit the kernel
 * offered (offered), which needs the reply to reach `end` (NULL: it can).
 * out holds min(len, its size) bytes of it. */
static const char *reply_unfit(const struct fuse_out_header *h, size_t len,
                               const struct fuse_init_out *out, bool offered, size_t end)
{
    if (h->error != 0)
        return "the reply is an error";
    if (!offered)
        return "the kernel did not offer it";
    if (len < end || len > sizeof *out)
        return "the reply is too short for it or of an unknown length";
    if (out->major != FUSE_KERNEL_VERSION || out->minor < INIT_FLAGS_MINOR)
        return "the reply's protocol has no flags";
    return NULL;
}

bool drxfs_init_reply(const struct iovec *iov, int count, struct iovec v[2],
                      struct fuse_init_out *out)
{
    struct fuse_out_header h;

    if (!__atomic_load_n(&init.pending, __ATOMIC_ACQUIRE) || count < 1 ||
        iov[0].iov_len != sizeof h)
        return false;
    memcpy(&h, iov[0].iov_base, sizeof h);
    if (h.unique == 0 || h.unique != __atomic_load_n(&init.unique, __ATOMIC_RELAXED))
        return false; /* a notification, or another request's reply */
    __atomic_store_n(&init.pending, false, __ATOMIC_RELAXED);
    /* an error comes without argument (one piece) */
    size_t len = count == 2 ? iov[1].iov_len : 0;
    memset(out, 0, sizeof *out);
    if (len)
        memcpy(out, iov[1].iov_base, len < sizeof *out ? len : sizeof *out);
    /* why each bit cannot be granted (NULL: it can) */
    const char *dio_why = count > 2 ? "the reply is in pieces" : NULL, *kp2_why = dio_why;
    if (!dio_why)
        dio_why = reply_unfit(&h, len, out, __atomic_load_n(&init.offered, __ATOMIC_RELAXED),
                              INIT_OUT_FLAGS2_END);
    if (!kp2_why && !kp2_wanted)
        kp2_why = "-o killpriv=kernel";
    if (!kp2_why)
        kp2_why = reply_unfit(&h, len, out, __atomic_load_n(&init.kp2_offered, __ATOMIC_RELAXED),
                              INIT_OUT_FLAGS_END);
    __atomic_store_n(&kp2_granted, !kp2_why, __ATOMIC_RELAXED);
    if (dio_why)
        drx_log(DRX_LOG_DEBUG,
                "FUSE_DIRECT_IO_ALLOW_MMAP not granted (%s): direct_io files refuse shared mmap",
                dio_why);
    if (kp2_why)
        drx_log(DRX_LOG_DEBUG,
                "FUSE_HANDLE_KILLPRIV_V2 not granted (%s): the kernel asks for "
                "security.capability before each write",
                kp2_why);
    if (dio_why && kp2_why)
        return false;
    if (!dio_why) {
        out->flags |= FUSE_INIT_EXT;
        out->flags2 |= (uint32_t)(INIT_DIO_ALLOW_MMAP >> 32);
    }
    if (!kp2_why)
        out->flags |= FUSE_HANDLE_KILLPRIV_V2;
    v[0] = iov[0];
    v[1] = (struct iovec){.iov_base = out, .iov_len = len};
    if (!dio_why)
        drx_log(DRX_LOG_DEBUG,
                "INIT reply %u.%u: FUSE_DIRECT_IO_ALLOW_MMAP granted (flags 0x%08x, flags2 "
                "0x%08x): direct_io files allow shared mmap",
                out->major, out->minor, out->flags, out->flags2);
    if (!kp2_why)
        drx_log(DRX_LOG_DEBUG,
                "INIT reply %u.%u: FUSE_HANDLE_KILLPRIV_V2 granted (flags 0x%08x): the daemon "
                "removes set-ID bits and capabilities at writes",
                out->major, out->minor, out->flags);
    return true;
}
