/* drxfs_init_reply.c against INIT requests and replies the kernel and
 * libfuse never send here, and those they do: only the reply to the INIT
 * request, only when that request offered FUSE_DIRECT_IO_ALLOW_MMAP or
 * FUSE_HANDLE_KILLPRIV_V2 and the reply can carry it, is amended, and
 * never made longer.  (The bats suites
 * prove the grant through a mount: mount_cache.bats, data_io=direct.)
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "drxfs_i.h"

#include <linux/fuse.h>

#include "../../libcore/tests/tap.h"

#define ALLOW_MMAP2 (1U << 4) /* FUSE_DIRECT_IO_ALLOW_MMAP in flags2 */

/* The kernel's INIT request: unique, flags, flags2, and its length. */
static void request(uint64_t unique, uint32_t opcode, uint32_t flags, uint32_t flags2, size_t len)
{
    char buf[sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in)] = {0};
    struct fuse_in_header h = {.len = (uint32_t)len, .opcode = opcode, .unique = unique};
    struct fuse_init_in in = {.major = 7, .minor = 45, .flags = flags, .flags2 = flags2};

    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, &in, sizeof in);
    drxfs_init_request(buf, len);
}

static const size_t full_request = sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in);

struct reply {
    struct fuse_out_header h;
    char arg[sizeof(struct fuse_init_out) + 16];
    struct iovec iov[2];
};

/* libfuse's reply to unique: a fuse_init_out of len bytes (Debian's 3.14:
 * 7.31, FUSE_INIT_EXT set, 64 bytes), or an error without argument. */
static void reply_make(struct reply *r, uint64_t unique, int error, uint32_t minor, size_t len)
{
    struct fuse_init_out out = {
        .major = 7, .minor = minor, .flags = 0x4040f079, .max_write = 1 << 20};

    memset(r, 0, sizeof *r);
    r->h = (struct fuse_out_header){
        .len = (uint32_t)(sizeof r->h + len), .error = error, .unique = unique};
    memcpy(r->arg, &out, sizeof out);
    r->iov[0] = (struct iovec){.iov_base = &r->h, .iov_len = sizeof r->h};
    r->iov[1] = (struct iovec){.iov_base = r->arg, .iov_len = len};
}

/* Whether the reply was amended; *out is what would be written. */
static bool amended(struct reply *r, int count, struct fuse_init_out *out, size_t *len)
{
    struct iovec v[2];
    bool yes = drxfs_init_reply(r->iov, count, v, out);
    if (yes)
        *len = v[0].iov_len + v[1].iov_len;
    return yes;
}

int main(void)
{
    struct reply r;
    struct fuse_init_out out;
    size_t len = 0;
    const uint32_t ext = FUSE_INIT_EXT | FUSE_ASYNC_READ;

    reply_make(&r, 2, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "no INIT request seen: nothing amended");

    request(2, FUSE_GETATTR, ext, ALLOW_MMAP2, full_request);
    tap_ok(!amended(&r, 2, &out, &len), "a GETATTR request of the same unique arms nothing");

    request(2, FUSE_INIT, ext, ALLOW_MMAP2, full_request);
    reply_make(&r, 3, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "another request's reply passes");
    reply_make(&r, 0, FUSE_NOTIFY_INVAL_INODE, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "a notification passes");
    reply_make(&r, 2, 0, 31, 64);
    tap_ok(amended(&r, 2, &out, &len), "INIT's reply is amended");
    TAP_CHECK_EQ_U64(len, sizeof r.h + 64, "at libfuse's length");
    TAP_CHECK_EQ_U64(out.flags2, ALLOW_MMAP2, "flags2 grants FUSE_DIRECT_IO_ALLOW_MMAP");
    TAP_CHECK_EQ_U64(out.flags, 0x4040f079 | FUSE_INIT_EXT,
                     "flags keep libfuse's, FUSE_INIT_EXT set");
    tap_ok(out.minor == 31 && out.major == 7 && out.max_write == 1 << 20, "the rest is libfuse's");
    tap_ok(((struct fuse_init_out *)r.arg)->flags2 == 0, "libfuse's own buffer is left alone");
    tap_ok(!amended(&r, 2, &out, &len), "only once");

    /* what the kernel offered */
    request(5, FUSE_INIT, FUSE_ASYNC_READ, ALLOW_MMAP2, full_request);
    reply_make(&r, 5, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "flags2 without FUSE_INIT_EXT offers nothing");
    request(6, FUSE_INIT, ext, 0, full_request);
    reply_make(&r, 6, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "FUSE_INIT_EXT without the bit offers nothing");
    request(7, FUSE_INIT, ext, ALLOW_MMAP2,
            offsetof(struct fuse_init_in, flags2) + sizeof(struct fuse_in_header));
    reply_make(&r, 7, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "a request too short for flags2 offers nothing");
    request(8, FUSE_INIT, ext, ALLOW_MMAP2, sizeof(struct fuse_in_header) - 1);
    reply_make(&r, 8, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "a request shorter than its header is ignored");

    /* what libfuse answered */
    static const struct {
        int error;
        uint32_t minor;
        size_t len;
        const char *what;
    } bad[] = {
        {-EPROTO, 31, 64, "an error reply passes"},
        {0, 31, 24, "a 7.22-sized reply (24 bytes) passes"},
        {0, 31, offsetof(struct fuse_init_out, flags2) + 3, "a reply ending inside flags2 passes"},
        {0, 31, sizeof(struct fuse_init_out) + 8, "a reply longer than fuse_init_out passes"},
        {0, 5, 64, "a reply of minor 5 (no flags) passes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        request(10 + i, FUSE_INIT, ext, ALLOW_MMAP2, full_request);
        reply_make(&r, 10 + i, bad[i].error, bad[i].minor, bad[i].len);
        tap_ok(!amended(&r, bad[i].error ? 1 : 2, &out, &len) && !amended(&r, 2, &out, &len), "%s",
               bad[i].what);
    }
    request(20, FUSE_INIT, ext, ALLOW_MMAP2, full_request);
    reply_make(&r, 20, 0, 38, offsetof(struct fuse_init_out, flags2) + 4);
    tap_ok(amended(&r, 2, &out, &len) && len == sizeof r.h + 36 && out.flags2 == ALLOW_MMAP2,
           "a 36-byte reply (flags2 its last field) is amended at 36 bytes");

    /* FUSE_HANDLE_KILLPRIV_V2: bit 28 of flags, offered in the request's */
    const uint32_t kp2 = FUSE_HANDLE_KILLPRIV_V2;
    request(30, FUSE_INIT, ext | kp2, 0, full_request);
    reply_make(&r, 30, 0, 31, 64);
    tap_ok(amended(&r, 2, &out, &len) && out.flags == (0x4040f079 | kp2) && out.flags2 == 0 &&
               len == sizeof r.h + 64 && drxfs_init_killpriv(),
           "FUSE_HANDLE_KILLPRIV_V2 offered alone: granted in flags, flags2 left as it was");
    request(31, FUSE_INIT, ext | kp2, ALLOW_MMAP2, full_request);
    reply_make(&r, 31, 0, 31, 64);
    tap_ok(amended(&r, 2, &out, &len) && (out.flags & kp2) && out.flags2 == ALLOW_MMAP2 &&
               drxfs_init_killpriv(),
           "both offered: both granted");
    request(32, FUSE_INIT, ext, ALLOW_MMAP2, full_request);
    reply_make(&r, 32, 0, 31, 64);
    tap_ok(amended(&r, 2, &out, &len) && !(out.flags & kp2) && !drxfs_init_killpriv(),
           "not offered: not granted (the kernel removes set-ID bits itself)");
    request(33, FUSE_INIT, kp2, 0, full_request);
    reply_make(&r, 33, 0, 31, 24);
    tap_ok(amended(&r, 2, &out, &len) && (out.flags & kp2) && len == sizeof r.h + 24,
           "a 24-byte reply carries flags: granted at 24 bytes");
    request(34, FUSE_INIT, kp2, 0, full_request);
    reply_make(&r, 34, -EPROTO, 31, 64);
    tap_ok(!amended(&r, 1, &out, &len) && !drxfs_init_killpriv(), "an error reply: not granted");
    request(35, FUSE_INIT, kp2, 0, full_request);
    reply_make(&r, 35, 0, 5, 64);
    tap_ok(!amended(&r, 2, &out, &len) && !drxfs_init_killpriv(),
           "a reply of minor 5 (no flags): not granted");
    drxfs_init_want_killpriv(false);
    request(36, FUSE_INIT, ext | kp2, 0, full_request);
    reply_make(&r, 36, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len) && !drxfs_init_killpriv(), "-o killpriv=kernel: not asked");
    drxfs_init_want_killpriv(true);
    request(37, FUSE_INIT, ext | kp2, 0,
            offsetof(struct fuse_init_in, flags) + sizeof(struct fuse_in_header));
    reply_make(&r, 37, 0, 31, 64);
    tap_ok(!amended(&r, 2, &out, &len), "a request too short for flags offers nothing");
    return tap_done();
}
