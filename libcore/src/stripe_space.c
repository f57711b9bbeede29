/* Striped files: space as a local file shows it.  Blocks are the sum of
 * the subfiles' blocks; fallocate and SEEK_DATA/SEEK_HOLE map a logical
 * range onto each subfile's part of it, which is one contiguous range of
 * that subfile (its extents in the range follow each other there). */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/io.h"
#include "stripe_i.h"

int drx_stripe_blocks(const struct drx_store *s, const struct drx_stripe_meta *m, uint64_t *blocks)
{
    *blocks = 0;
    for (unsigned i = 0; i < m->layout.count; i++) {
        struct stat st;
        /* Not a subfile (a link, a FIFO) or missing: it holds nothing of ours. */
        if (drx_stripe_subfile_check(s, m, i, &st, NULL) == 0)
            *blocks += (uint64_t)st.st_blocks;
    }
    return 0;
}

/* The offset in subfile i of the first byte at or after logical p that
 * subfile i holds (its extents are e with e mod count == i). */
static uint64_t sub_ceil(const struct drx_stripe_layout *l, unsigned i, uint64_t p)
{
    uint64_t e = p / l->extent;

    if (e % l->count == i)
        return (e / l->count) * l->extent + p % l->extent;
    e += (i + l->count - e % l->count) % l->count;
    return (e / l->count) * l->extent;
}

/* The logical offset of byte o of subfile i. */
static uint64_t sub_logical(const struct drx_stripe_layout *l, unsigned i, uint64_t o)
{
    return ((o / l->extent) * l->count + i) * l->extent + o % l->extent;
}

/* fallocate(mode) of subfile i's part [lo, hi), which may lengthen it up
 * to lim (what the logical size needs of it, as writes would) and keeps
 * its size beyond: there a local file would keep its size too (ext4
 * punches nothing past a file's end, so blocks below lim must lie inside
 * the subfile for a later punch to free them). */
static int sub_fallocate(int fd, int mode, uint64_t lo, uint64_t hi, uint64_t lim)
{
    uint64_t mid = lim < lo ? lo : lim > hi ? hi : lim;
    int keep = (mode & FALLOC_FL_PUNCH_HOLE) ? FALLOC_FL_KEEP_SIZE : 0;
    int rc = lo < mid ? drx_io_fallocate(fd, mode | keep, lo, mid - lo) : 0;

    if (rc == 0 && mid < hi)
        rc = drx_io_fallocate(fd, mode | FALLOC_FL_KEEP_SIZE, mid, hi - mid);
    return rc;
}

/* fallocate(mode, without KEEP_SIZE) of every subfile's part of logical
 * [a, b), for a file of logical size `size`. */
static int subfiles_fallocate(struct drx_stripe *f, int mode, uint64_t a, uint64_t b, uint64_t size)
{
    const struct drx_stripe_layout *l = &f->meta.layout;
    int rc = 0;

    for (unsigned i = 0; i < l->count && rc == 0; i++) {
        uint64_t lo = sub_ceil(l, i, a), hi = sub_ceil(l, i, b);
        if (hi <= lo)
            continue;
        /* allocating creates a subfile not written yet; punching or
         * zeroing one leaves it absent, all holes already */
        int fd = drx_stripe_subfile_fd(f, i, !(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)));
        if (fd == -ENOENT)
            continue;
        if (fd < 0)
            return -EIO; /* missing or refused subfile */
        rc = sub_fallocate(fd, mode, lo, hi, sub_ceil(l, i, size));
    }
    return rc;
}

/* The modes drx_stripe_fallocate takes: 0 or KEEP_SIZE, PUNCH_HOLE with
 * KEEP_SIZE, ZERO_RANGE with or without it. */
static bool mode_known(int mode)
{
    const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;

    if (mode & ~known)
        return false;
    if (mode & FALLOC_FL_PUNCH_HOLE)
        return (mode & FALLOC_FL_KEEP_SIZE) && !(mode & FALLOC_FL_ZERO_RANGE);
    return true;
}

int drx_stripe_fallocate(struct drx_stripe *f, int mode, uint64_t off, uint64_t len)
{
    int rc;

    if (f->mode != DRX_STRIPE_RDWR)
        return -EBADF;
    if (!mode_known(mode))
        return -EOPNOTSUPP;
    if (len == 0)
        return -EINVAL;
    if (off > DRX_STRIPE_MAX_SIZE || len > DRX_STRIPE_MAX_SIZE - off)
        return -EFBIG;
    /* Growing, as fallocate without KEEP_SIZE does: the size first (a
     * truncate up, which cuts stale bytes past the old size), then the
     * blocks; when they cannot be had, the size goes back. */
    uint64_t old = drx_stripe_size(f);
    bool grow = !(mode & FALLOC_FL_KEEP_SIZE) && off + len > old;
    if (grow && (rc = drx_stripe_truncate(f, off + len)) < 0)
        return rc;
    pthread_rwlock_rdlock(&f->io);
    rc = subfiles_fallocate(f, mode & ~FALLOC_FL_KEEP_SIZE, off, off + len, drx_stripe_size(f));
    if (rc == 0 && (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))) {
        pthread_mutex_lock(&f->lock);
        f->wgen++; /* bytes changed: synced before a larger size is recorded */
        pthread_mutex_unlock(&f->lock);
    }
    pthread_rwlock_unlock(&f->io);
    if (rc < 0 && grow)
        drx_stripe_truncate(f, old);
    return rc;
}

/* Subfile i's first data (data true) or hole at or after its offset o, as
 * a logical offset; UINT64_MAX when it has none.  A missing subfile reads
 * as EIO: data, for SEEK_DATA's purpose; one not created yet is all hole,
 * as is past a subfile's end. */
static uint64_t sub_next(struct drx_stripe *f, unsigned i, uint64_t o, bool data)
{
    off_t r;

    int fd = drx_stripe_subfile_fd(f, i, false);

    if (fd == -ENOENT) /* not created yet: all hole */
        return data ? UINT64_MAX : sub_logical(&f->meta.layout, i, o);
    if (fd < 0)
        return data ? sub_logical(&f->meta.layout, i, o) : UINT64_MAX;
    r = lseek(fd, (off_t)o, data ? SEEK_DATA : SEEK_HOLE);
    if (r < 0)
        return data ? UINT64_MAX : sub_logical(&f->meta.layout, i, o);
    return sub_logical(&f->meta.layout, i, (uint64_t)r);
}

int64_t drx_stripe_seek(struct drx_stripe *f, uint64_t off, int whence)
{
    uint64_t size = drx_stripe_size(f), best = UINT64_MAX;

    if (whence != SEEK_DATA && whence != SEEK_HOLE)
        return -EINVAL;
    if (off >= size)
        return -ENXIO;
    for (unsigned i = 0; i < f->meta.layout.count; i++) {
        uint64_t at = sub_next(f, i, sub_ceil(&f->meta.layout, i, off), whence == SEEK_DATA);
        if (at < best)
            best = at;
    }
    if (whence == SEEK_HOLE)
        return (int64_t)(best < size ? best : size); /* the end is a hole */
    return best < size ? (int64_t)best : -ENXIO;
}
