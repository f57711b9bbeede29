/* The type (file, directory, symlink, ...) the kernel was last told for
 * each path, so that a name whose type changed behind the mount (another
 * mount, another node, drx rm and a new file of the name, a store
 * directory replaced by a file) is answered ESTALE instead of attributes
 * of another type.
 *
 * The kernel keeps a name for the entry timeout without asking, and then
 * asks for the attributes of the inode it holds.  Given another type, it
 * marks that inode bad and fails the call with EIO (stat: "Input/output
 * error" once, then the next call looks the name up again); an open of a
 * directory that became a file reaches us as an OPENDIR (ENOTDIR), of a
 * file that became a directory as an OPEN (EISDIR), and fails so until
 * the entry expires.  ESTALE makes the kernel look the name up again,
 * find the new type and retry the call once, as on NFS (stat, open,
 * access, every path walk do).
 *
 * libfuse's high-level API does not say which type the kernel holds: a
 * table of the last type reported per path (by hash; 65536 slots, a
 * collision forgets the older path, whose change then costs the EIO as
 * before) stands in.  Names this mount makes, removes or renames update
 * it first, so that only changes made behind it differ. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drxfs_i.h"

#define TYPE_SLOTS 65536
#define TYPE_BITS 0xfULL

/* each slot: the path's hash with its low 4 bits replaced by the type's
 * code (S_IFMT >> 12, never 0); 0 is empty */
static uint64_t slot[TYPE_SLOTS];

/* FNV-1a from a basis drawn once per daemon: paths a user makes to
 * share another's key (and flip its type back and forth, so that the
 * kernel's one retry meets ESTALE again) cannot be worked out ahead. */
static uint64_t basis(void)
{
    static uint64_t b;
    uint64_t v = __atomic_load_n(&b, __ATOMIC_RELAXED);

    if (v)
        return v;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    v |= 1;
    uint64_t zero = 0;
    return __atomic_compare_exchange_n(&b, &zero, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
               ? v
               : zero;
}

static uint64_t path_hash(const char *path)
{
    uint64_t h = basis();
    for (; *path; path++)
        h = (h ^ (unsigned char)*path) * 0x100000001b3ULL;
    /* a final mix, so that the slot (its middle bits) depends on every byte */
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return (h ^ (h >> 32)) & ~TYPE_BITS;
}

static uint64_t *slot_of(uint64_t h)
{
    return &slot[(h >> 4) % TYPE_SLOTS];
}

int drxfs_type_told(const char *path, mode_t mode)
{
    uint64_t h = path_hash(path), code = (mode & S_IFMT) >> 12;
    uint64_t *s = slot_of(h);
    uint64_t old = __atomic_exchange_n(s, h | code, __ATOMIC_RELAXED);

    if ((old & ~TYPE_BITS) == h && (old & TYPE_BITS) != code) {
        drx_log(DRX_LOG_DEBUG, "%s: changed type behind the mount: ESTALE", path);
        return -ESTALE;
    }
    return 0;
}

void drxfs_type_forget(const char *path)
{
    uint64_t h = path_hash(path);
    uint64_t *s = slot_of(h), old = __atomic_load_n(s, __ATOMIC_RELAXED);

    if ((old & ~TYPE_BITS) == h)
        __atomic_compare_exchange_n(s, &old, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void drxfs_type_moved(const char *from, const char *to)
{
    uint64_t h = path_hash(from);
    uint64_t old = __atomic_load_n(slot_of(h), __ATOMIC_RELAXED);

    drxfs_type_forget(from);
    drxfs_type_forget(to);
    if ((old & ~TYPE_BITS) == h && (old & TYPE_BITS))
        __atomic_store_n(slot_of(path_hash(to)), path_hash(to) | (old & TYPE_BITS),
                         __ATOMIC_RELAXED);
}
