/* Changes of an array's metadata: extension and attributes, under the
 * extend lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_i.h"
#include "drx/io.h"
#include "drx/log.h"

static bool fill_is_zero(const struct drx_array_meta *m)
{
    for (size_t i = 0; i < m->elem_size; i++)
        if (m->fill[i])
            return false;
    return true;
}

/* ---- chunk file ---- */

/* Makes chunks [from, to) hold the fill value.  The file is first cut to
 * `from` chunks so that bytes a crash left past the committed end never show
 * up as data. */
int drx_array_fill_chunks(int fd, const struct drx_array_meta *m, uint64_t from, uint64_t to)
{
    uint64_t start = from * m->chunk_bytes, end = to * m->chunk_bytes;
    size_t blen;
    unsigned char *buf;
    int rc = 0;

    if (ftruncate(fd, (off_t)start))
        return -errno;
    if (fill_is_zero(m))
        return ftruncate(fd, (off_t)end) ? -errno : 0;
    blen = m->chunk_bytes < ((size_t)4 << 20) ? m->chunk_bytes : ((size_t)4 << 20);
    blen -= blen % m->elem_size;
    buf = malloc(blen);
    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < blen; i += m->elem_size)
        memcpy(buf + i, m->fill, m->elem_size);
    for (uint64_t off = start; off < end && rc == 0;) {
        size_t n = end - off < blen ? (size_t)(end - off) : blen;
        rc = drx_io_pwrite_all(fd, buf, n, off);
        off += n;
    }
    free(buf);
    return rc;
}

/* True when the .xmd on disk has more than old_chunks chunks (or cannot be
 * read: then nothing is cut back). */
static bool extension_committed(const char *xmd_path, uint64_t old_chunks)
{
    struct drx_array_meta m;
    struct drx_err e;
    bool more;

    if (drx_array_meta_load(xmd_path, &m, &e))
        return true;
    more = m.map.nchunks > old_chunks;
    drx_array_meta_fini(&m);
    return more;
}

/* Starts a change of the metadata (an extension, an attribute): takes the
 * array's extend lock (one changer at a time, across processes), reloads
 * what another changed meanwhile, and refuses an .xta with a second name:
 * under the lock no rename is half done, so another name is a crash's
 * leftover whose metadata this change would leave behind.  The .xmd the
 * handle then holds (xmd_fd) is the one the change starts from and
 * replaces: refused (ESTALE) unless the names lead to it and to the
 * handle's .xta.  The caller lets go with flock(LOCK_UN) whatever this
 * returns (harmless when the lock itself failed).  0 or -errno. */
static int meta_change_begin(struct drx_array *a, struct drx_err *err)
{
    int rc;

    if (a->pend_len)
        return drx_err_set(err, EBUSY, "%s: growths are pending (not committed yet)", a->path);
    if ((rc = drx_io_flock(a->xta_fd, LOCK_EX)) == -EWOULDBLOCK)
        return drx_err_set(err, EAGAIN,
                           "%s: locked by another process for %u ms (an extension, or growths "
                           "it has not committed yet): not changed",
                           a->xta_path, drx_io_lock_wait_ms());
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: lock: %s", a->xta_path, strerror(-rc));
    rc = drx_array_reload(a, err);
    if (rc < 0)
        return rc;
    if ((rc = drx_array_xta_links(a, false, err)) < 0)
        return rc;
    return drx_array_held_xmd(a, NULL, err);
}

/* Replaces the handle's .xmd with m: taken to be the file the handle
 * holds, whose owner and mode the new one keeps, checked right before
 * (drx_array_held_xmd: ESTALE, nothing written, when a name was changed
 * behind the handle).  A name exchanged between that check and the
 * rename is replaced with the held file's owner and mode, never another
 * file's.  *written (may be NULL): the write was tried. */
static int xmd_rewrite(struct drx_array *a, const struct drx_array_meta *m, bool *written,
                       struct drx_err *err)
{
    struct stat like;
    int rc = drx_array_held_xmd(a, &like, err);

    if (rc < 0)
        return rc;
    if (written)
        *written = true;
    return drx_xmd_write(a->xmd_at, &like, 0, m, err);
}

/* Whether this process appends to the .xmd (st, open for writing) rather
 * than replace it: only where the file then keeps exactly the owner,
 * group and mode a replacement would give it (drx_replace_take_owner), and
 * only the file the handle read (one name: another name's file must not
 * change).  A write by a process without CAP_FSETID clears set-ID bits,
 * which a replacement by their owner keeps. */
static bool may_append(const struct stat *st, const struct stat *held)
{
    if (!S_ISREG(st->st_mode) || st->st_nlink != 1 || st->st_ino != held->st_ino ||
        st->st_dev != held->st_dev || (st->st_mode & (S_ISUID | S_ISGID)))
        return false;
    return geteuid() == 0 || (st->st_uid == geteuid() && st->st_gid == getegid());
}

/* The .xmd open for writing as fd, when this append may go ahead: the
 * file read, appendable by us (may_append), and neither shorter than what
 * was read (cut in place by someone else) nor ending in a record cut short
 * of the new record's length (cut and appended, the file would keep its
 * size, and a reader comparing size and coarse times could miss it).
 * Otherwise -1: the .xmd is replaced whole. */
static int open_for_append(const struct drx_array *a, uint64_t end, size_t len, struct stat *st)
{
    int fd;

    if (!a->xmd_pos.appendable || a->xmd_fd < 0)
        return -1;
    fd = open(a->xmd_at, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1; /* not ours to write: replaced as before */
    if (fstat(fd, st) < 0 || !may_append(st, &a->xmd_st) || (uint64_t)st->st_size < end ||
        (uint64_t)st->st_size == end + len) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Appends one growth record to the .xmd and makes it durable: the commit
 * of an extension, the same few bytes whatever the history.  A record
 * that a killed extension left cut short is cut off first.  1 when
 * appended, 0 when the .xmd is to be replaced instead, -errno when the
 * append failed (then nothing of it stays). */
static int xmd_append(struct drx_array *a, const char *line, size_t len, struct drx_err *err)
{
    uint64_t end = a->xmd_pos.end;
    struct stat st;
    int fd, rc = 0;

    if (end + len > DRX_XMD_MAX_BYTES)
        return drx_err_set(err, EFBIG, "%s: no room for another growth (%zu bytes at most)",
                           a->xmd_path, DRX_XMD_MAX_BYTES);
    if ((fd = open_for_append(a, end, len, &st)) < 0)
        return 0;
    if ((uint64_t)st.st_size != end && ftruncate(fd, (off_t)end) < 0)
        rc = -errno;
    if (rc == 0)
        rc = drx_io_pwrite_all(fd, line, len, end);
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    if (rc < 0 && ftruncate(fd, (off_t)end) < 0)
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cutting back a failed growth record: %s",
                            a->xmd_path, strerror(errno));
    close(fd);
    if (rc < 0)
        return drx_err_set(err, -rc, "%s: %s", a->xmd_path, strerror(-rc));
    return 1;
}

/* Commits a growth by replacing the .xmd with one that has it in its
 * history (folding in the growth records): for arrays this process may
 * not append to, and version 1 files.  *written: the .xmd was replaced,
 * perhaps (the write was tried). */
static int xmd_fold(struct drx_array *a, int dim, uint64_t from, uint64_t to, bool *written,
                    struct drx_err *err)
{
    struct drx_array_meta next;
    int rc = drx_xmd_read_fd(a->xmd_fd, a->xmd_path, &next, err);

    if (rc)
        return rc;
    rc = drx_xmd_grow(&next, dim, to, err);
    if (rc == 0 && drx_xmd_history_add(&next, dim, from, to))
        rc = drx_err_set(err, ENOMEM, "out of memory");
    if (rc == 0)
        rc = xmd_rewrite(a, &next, written, err);
    drx_array_meta_fini(&next);
    return rc;
}

/* Records the growth in the .xmd and gives the handle the new metadata.
 * *landed: whether the .xmd on disk has it (even when this fails). */
static int commit_growth(struct drx_array *a, int dim, uint64_t from, uint64_t to, uint64_t chunks,
                         bool *landed, struct drx_err *err)
{
    char line[192];
    int n = drx_xmd_grow_line(line, sizeof line, dim, from, to, chunks), rc;
    struct stat st;

    *landed = false;
    rc = n < 0 ? drx_err_set(err, -n, "growth record too long") : xmd_append(a, line, (size_t)n, err);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        /* once written, perhaps: the caller reads the .xmd to know */
        rc = xmd_fold(a, dim, from, to, landed, err);
        return rc < 0 ? rc : drx_array_reread(a, err);
    }
    *landed = true;
    rc = drx_xmd_catch_up(a->xmd_fd, a->xmd_path, a->xmd_pos.end + (uint64_t)n, &a->meta,
                          &a->xmd_pos, err);
    if (rc != 1)
        return rc < 0 ? rc : drx_err_set(err, EIO, "%s: the growth record did not read back",
                                         a->xmd_path);
    if (fstat(a->xmd_fd, &st) == 0)
        a->xmd_st = st;
    return 0;
}

/* The extension under the extend lock: fill chunks, then the record. */
static int extend_locked(struct drx_array *a, int dim, uint64_t count, struct drx_err *err)
{
    uint64_t from = a->meta.bounds[dim], to, old_chunks = a->meta.map.nchunks, chunks;
    bool landed = false;
    int rc;

    if (__builtin_add_overflow(from, count, &to))
        return drx_err_set(err, EFBIG, "extent of dimension %d would overflow", dim);
    if ((rc = drx_xmd_grown_chunks(&a->meta, dim, to, &chunks)))
        return drx_err_set(err, EFBIG, "%s", drx_xmd_too_big(rc));
    rc = drx_array_fill_chunks(a->xta_fd, &a->meta, old_chunks, chunks);
    if (rc == 0 && fdatasync(a->xta_fd))
        rc = -errno;
    if (rc)
        rc = drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    else
        rc = commit_growth(a, dim, from, to, chunks, &landed, err);
    /* A full disk and the like: give back what the failed extension
     * added, unless its metadata did land (a failure after the rename). */
    if (rc < 0 && !(landed && extension_committed(a->xmd_at, old_chunks)) &&
        ftruncate(a->xta_fd, (off_t)(old_chunks * a->meta.chunk_bytes)))
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cutting back a failed extension: %s", a->xta_path,
                            strerror(errno));
    return rc;
}

int drx_array_extend(struct drx_array *a, int dim, uint64_t count, struct drx_err *err)
{
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if (dim < 0 || dim >= a->meta.rank)
        return drx_err_set(err, EINVAL, "dimension %d out of range (rank %d)", dim, a->meta.rank);
    if (count == 0)
        return drx_err_set(err, EINVAL, "extension count must be > 0");
    if (a->pend_len)
        return drx_err_set(err, EBUSY, "%s: growths are pending (not committed yet)", a->path);
    rc = meta_change_begin(a, err);
    if (rc >= 0)
        rc = extend_locked(a, dim, count, err);
    flock(a->xta_fd, LOCK_UN);
    return rc < 0 ? rc : 0;
}

/* ---- batched growth ---- */

/* Keeps the growth record line for the commit.  0 or -ENOMEM. */
static int pend_add(struct drx_array *a, const char *line, size_t len)
{
    if (a->pend_len + len > a->pend_cap) {
        size_t cap = a->pend_cap ? 2 * a->pend_cap : 1024;
        while (cap < a->pend_len + len)
            cap *= 2;
        char *p = realloc(a->pend_lines, cap);
        if (!p)
            return -ENOMEM;
        a->pend_lines = p;
        a->pend_cap = cap;
    }
    memcpy(a->pend_lines + a->pend_len, line, len);
    a->pend_len += len;
    return 0;
}

/* The pending state ends: the lock goes (file handle), the lines are
 * forgotten. */
static void pend_end(struct drx_array *a)
{
    if (a->pend_file)
        flock(a->xta_fd, LOCK_UN);
    a->pend_len = 0;
    a->pend_file = false;
}

/* The first pending growth of a file handle: the extend lock, taken
 * until the commit, and the metadata as committed. */
static int pend_begin(struct drx_array *a, struct drx_err *err)
{
    int rc = meta_change_begin(a, err);
    if (rc < 0) {
        flock(a->xta_fd, LOCK_UN);
        return rc;
    }
    a->pend_file = true;
    a->pend_from = a->meta.map.nchunks;
    return 0;
}

/* One growth in memory (and the file's new chunks, with file).  On
 * failure the handle is as before: the history's last entry (the only
 * one drx_xmd_history_add changes) and the line are put back, the file
 * cut back. */
static int pend_grow(struct drx_array *a, int dim, uint64_t count, bool file, struct drx_err *err)
{
    struct drx_array_meta *m = &a->meta;
    uint64_t from = m->bounds[dim], to, old_chunks = m->map.nchunks, chunks;
    size_t nh = m->nhistory, had = a->pend_len;
    struct drx_growth last = nh ? m->history[nh - 1] : (struct drx_growth){0};
    char line[192];
    int n, rc;

    if (__builtin_add_overflow(from, count, &to))
        return drx_err_set(err, EFBIG, "extent of dimension %d would overflow", dim);
    if ((rc = drx_xmd_grown_chunks(m, dim, to, &chunks)))
        return drx_err_set(err, EFBIG, "%s", drx_xmd_too_big(rc));
    n = drx_xmd_grow_line(line, sizeof line, dim, from, to, chunks);
    if (n < 0)
        return drx_err_set(err, -n, "growth record too long");
    if (pend_add(a, line, (size_t)n) || drx_xmd_history_add(m, dim, from, to))
        rc = drx_err_set(err, ENOMEM, "out of memory");
    else if (file && (rc = drx_array_fill_chunks(a->xta_fd, m, old_chunks, chunks)) < 0)
        rc = drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    else
        rc = drx_xmd_grow(m, dim, to, err);
    if (rc == 0)
        return 0;
    if (file && ftruncate(a->xta_fd, (off_t)(old_chunks * m->chunk_bytes)))
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cutting back a failed extension: %s", a->xta_path,
                            strerror(errno));
    a->pend_len = had;
    m->nhistory = nh;
    if (nh)
        m->history[nh - 1] = last;
    return rc;
}

/* A pending growth of dimension dim by count elements, or (count 0) to
 * `to` elements when it has fewer: with file, decided under the extend
 * lock, after the reload that takes it.  *by: the elements grown.  The
 * callers refuse a count of 0 and return for a `to` of 0. */
static int grow_pending(struct drx_array *a, int dim, uint64_t count, uint64_t to, bool file,
                        uint64_t *by, struct drx_err *err)
{
    int rc;

    *by = 0;
    if (file && a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    /* A commit may have to write the .xmd whole (not appendable by this
     * process), from the handle's history, which DRX_METAONLY drops. */
    if (a->meta_only)
        return drx_err_set(err, EINVAL, "%s: batched growth needs the whole metadata, not a "
                                        "DRX_METAONLY handle", a->path);
    if (dim < 0 || dim >= a->meta.rank)
        return drx_err_set(err, EINVAL, "dimension %d out of range (rank %d)", dim, a->meta.rank);
    if (file && !a->pend_file && (rc = pend_begin(a, err)) < 0)
        return rc;
    if (count == 0)
        count = to > a->meta.bounds[dim] ? to - a->meta.bounds[dim] : 0;
    rc = count ? pend_grow(a, dim, count, file, err) : 0;
    if (rc == 0)
        *by = count;
    if (a->pend_len == 0 && a->pend_file)
        pend_end(a); /* nothing pending: the lock goes */
    return rc;
}

int drx_array_extend_pending(struct drx_array *a, int dim, uint64_t count, bool file,
                             struct drx_err *err)
{
    uint64_t by;

    if (count == 0)
        return drx_err_set(err, EINVAL, "extension count must be > 0");
    return grow_pending(a, dim, count, 0, file, &by, err);
}

int drx_array_grow_pending(struct drx_array *a, int dim, uint64_t to, bool file, uint64_t *by,
                           struct drx_err *err)
{
    if (to == 0) {
        *by = 0;
        return 0; /* every dimension has at least that */
    }
    return grow_pending(a, dim, 0, to, file, by, err);
}

int drx_array_pending_drop(struct drx_array *a, struct drx_err *err)
{
    bool file = a->pend_file;
    int rc = 0;

    if (file && ftruncate(a->xta_fd, (off_t)(a->pend_from * a->meta.chunk_bytes)))
        drx_log_ratelimited(DRX_LOG_WARNING, "%s: cutting back uncommitted growths: %s",
                            a->xta_path, strerror(errno));
    if (a->pend_len || file)
        rc = drx_array_reread(a, err);
    pend_end(a);
    return rc;
}

/* The file handle's commit: the data (with sync_data), then the records.
 * *kept: the records are in the .xmd on disk (even when this failed
 * after). */
static int pend_commit(struct drx_array *a, bool sync_data, bool *kept, struct drx_err *err)
{
    int rc = 0;

    *kept = false;
    if (sync_data && fdatasync(a->xta_fd))
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    rc = xmd_append(a, a->pend_lines, a->pend_len, err);
    if (rc == 0) {
        /* not appendable: the whole .xmd replaced, history included (the
         * extend lock kept anybody else's change out since it was read) */
        bool written = false;
        rc = xmd_rewrite(a, &a->meta, &written, err);
        *kept = rc == 0 || (written && extension_committed(a->xmd_at, a->pend_from));
        return rc < 0 ? rc : 0;
    }
    *kept = rc > 0;
    return rc < 0 ? rc : 0;
}

static int commit_pending(struct drx_array *a, bool sync_data, struct drx_err *err)
{
    struct drx_err ignored;
    bool kept;
    int rc;

    if (!a->pend_len)
        return 0;
    if (!a->pend_file) {
        /* a follower: the file handle committed; its records are read */
        rc = drx_array_reread(a, err);
        pend_end(a);
        return rc;
    }
    rc = pend_commit(a, sync_data, &kept, err);
    if (rc < 0 && !kept) {
        drx_array_pending_drop(a, &ignored);
        return rc;
    }
    int rr = drx_array_reread(a, rc < 0 ? &ignored : err);
    pend_end(a);
    return rc < 0 ? rc : rr;
}

int drx_array_commit(struct drx_array *a, struct drx_err *err)
{
    return commit_pending(a, true, err);
}

int drx_array_commit_unsynced(struct drx_array *a, struct drx_err *err)
{
    return commit_pending(a, false, err);
}

long long drx_array_torn_record(const char *path, struct drx_err *err)
{
    struct drx_array *a = drx_array_alloc(path, DRX_RDONLY);
    long long rc;

    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = drx_array_reread(a, err);
    if (rc == 0)
        rc = (long long)a->xmd_pos.torn;
    drx_array_close(a);
    return rc;
}

/* Cuts the .xmd of a (read, extend lock held) back to its last whole
 * line, on the file that was read and only where it has one name. */
static int cut_torn(struct drx_array *a, struct drx_err *err)
{
    struct stat st;
    int fd, rc = 1;

    if (a->xmd_pos.torn == 0)
        return 0;
    fd = open(a->xmd_at, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
    if (fstat(fd, &st) < 0 || st.st_ino != a->xmd_st.st_ino || st.st_dev != a->xmd_st.st_dev ||
        st.st_nlink != 1)
        rc = drx_err_set(err, EIO, "%s: replaced or linked elsewhere; not cut", a->xmd_path);
    else if (ftruncate(fd, (off_t)a->xmd_pos.end) < 0 || fdatasync(fd) < 0)
        rc = drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
    close(fd);
    return rc;
}

int drx_array_cut_torn_record(const char *path, struct drx_err *err)
{
    struct drx_array *a = drx_array_alloc(path, DRX_RDONLY);
    struct stat st;
    int rc;

    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = drx_array_open_regular(a->xta_at, O_RDONLY, &st, err);
    if (rc < 0)
        goto out;
    a->xta_fd = rc;
    if (flock(a->xta_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = drx_err_set(err, errno, "%s: %s", a->xta_path,
                         errno == EWOULDBLOCK ? "an extension holds its lock" : strerror(errno));
        goto out;
    }
    rc = drx_array_reread(a, err);
    if (rc == 0)
        rc = cut_torn(a, err);
out:
    drx_array_close(a); /* and the lock with it */
    return rc;
}

int drx_array_trim_uncommitted(const char *path, uint64_t *committed, long long *len)
{
    struct drx_array *a = drx_array_alloc(path, DRX_RDWR);
    struct drx_err err;
    struct stat st;
    int rc;

    if (!a)
        return -ENOMEM;
    a->xta_fd = open(a->xta_at, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (a->xta_fd < 0) {
        rc = -errno;
        goto out;
    }
    if (flock(a->xta_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = drx_array_reread(a, &err)) < 0)
        goto out;
    *committed = a->meta.map.nchunks * a->meta.chunk_bytes;
    if (fstat(a->xta_fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        rc = -EIO; /* as drx_array_open: never cut a file linked elsewhere */
        goto out;
    }
    *len = (long long)st.st_size;
    rc = 0;
    if ((uint64_t)st.st_size > *committed)
        rc = ftruncate(a->xta_fd, (off_t)*committed) < 0 ? -errno : 1;
out:
    drx_array_close(a); /* and the lock with it */
    return rc;
}

/* ---- attributes ---- */

const struct drx_attr *drx_array_attr_get(const struct drx_array_meta *m, const char *name)
{
    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, name) == 0)
            return &m->attrs[i];
    return NULL;
}

typedef int attr_change_fn(struct drx_array_meta *m, const void *arg, struct drx_err *err);

/* Applies change() to the metadata read afresh under the extend lock and
 * commits it as an extension does, so that an attribute update and an
 * extension by another process never undo each other. */
static int attrs_update(struct drx_array *a, attr_change_fn *change, const void *arg,
                        drx_array_may_fn *may, void *may_arg, struct drx_err *err)
{
    struct drx_array_meta next;
    struct stat st;
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if (a->pend_len)
        return drx_err_set(err, EBUSY, "%s: growths are pending (not committed yet)", a->path);
    if ((rc = meta_change_begin(a, err)) < 0)
        goto out;
    if (may && ((rc = drx_array_held_xmd(a, &st, err)) < 0 ||
                (rc = may(a->xmd_fd, &st, may_arg)) < 0)) {
        if (rc != -ESTALE)
            rc = drx_err_set(err, -rc, "%s: %s", a->xmd_path, strerror(-rc));
        goto out;
    }
    /* from the .xmd the handle holds (read by name, it was another's when
     * the name was exchanged meanwhile) */
    rc = drx_xmd_read_fd(a->xmd_fd, a->xmd_path, &next, err);
    if (rc)
        goto out;
    rc = change(&next, arg, err);
    if (rc == 0)
        rc = xmd_rewrite(a, &next, NULL, err);
    drx_array_meta_fini(&next);
    if (rc == 0)
        rc = drx_array_reread(a, err);
out:
    flock(a->xta_fd, LOCK_UN);
    return rc < 0 ? rc : 0;
}

static int attr_put(struct drx_array_meta *m, const void *arg, struct drx_err *err)
{
    const struct drx_attr *attr = arg;
    struct drx_attr copy, *grown;

    if (drx_attr_copy(&copy, attr))
        return drx_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, attr->name) == 0) {
            drx_attr_fini(&m->attrs[i]);
            m->attrs[i] = copy;
            return 0;
        }
    if (m->nattrs >= DRX_MAX_ATTRS) {
        drx_attr_fini(&copy);
        return drx_err_set(err, ENOSPC, "the array has %d attributes already (the most)",
                           DRX_MAX_ATTRS);
    }
    if (!(grown = realloc(m->attrs, (m->nattrs + 1) * sizeof *grown))) {
        drx_attr_fini(&copy);
        return drx_err_set(err, ENOMEM, "out of memory");
    }
    m->attrs = grown;
    m->attrs[m->nattrs++] = copy;
    return 0;
}

static int attr_drop(struct drx_array_meta *m, const void *arg, struct drx_err *err)
{
    const char *name = arg;

    for (size_t i = 0; i < m->nattrs; i++)
        if (strcmp(m->attrs[i].name, name) == 0) {
            drx_attr_fini(&m->attrs[i]);
            memmove(&m->attrs[i], &m->attrs[i + 1], (m->nattrs - i - 1) * sizeof *m->attrs);
            m->nattrs--;
            return 0;
        }
    return drx_err_set(err, ENOENT, "no attribute '%.80s'", name);
}

int drx_array_attr_set(struct drx_array *a, const struct drx_attr *attr, struct drx_err *err)
{
    return drx_array_attr_set_may(a, attr, NULL, NULL, err);
}

int drx_array_attr_set_may(struct drx_array *a, const struct drx_attr *attr, drx_array_may_fn *may,
                           void *arg, struct drx_err *err)
{
    size_t bytes;
    int rc;

    /* the attribute may come from anywhere: check it as the .xmd reader
     * would, so that nothing written can fail to load */
    if ((rc = drx_attr_name_check(attr->name, err)))
        return rc;
    /* zarr/'s .zattrs gives the dimension names under this name: one set
     * as an attribute would be hidden there (and shown in data.nc alone).
     * Refused when set, not when read: an .xmd that has it still opens. */
    if (strcmp(attr->name, "_ARRAY_DIMENSIONS") == 0)
        return drx_err_set(err, EINVAL,
                           "_ARRAY_DIMENSIONS is the array's dimension names (drx create --dims), "
                           "not an attribute");
    if (!attr->is_string &&
        (attr->type < 0 || attr->type >= DRX_NTYPES || drx_type_is_complex(attr->type)))
        return drx_err_set(err, EINVAL, "attribute %s: a complex or unknown type", attr->name);
    bytes = attr->is_string ? attr->n : attr->n * drx_type_size(attr->type);
    if ((!attr->is_string && attr->n == 0) || bytes > DRX_MAX_ATTR_BYTES ||
        (attr->is_string && strlen(attr->value) != attr->n))
        return drx_err_set(err, EINVAL, "attribute %s: bad value size", attr->name);
    return attrs_update(a, attr_put, attr, may, arg, err);
}

int drx_array_attr_rm(struct drx_array *a, const char *name, struct drx_err *err)
{
    return attrs_update(a, attr_drop, name, NULL, NULL, err);
}

int drx_array_attr_rm_may(struct drx_array *a, const char *name, drx_array_may_fn *may, void *arg,
                          struct drx_err *err)
{
    return attrs_update(a, attr_drop, name, may, arg, err);
}
