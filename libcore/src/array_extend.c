/* Changes of an array's metadata: extension and attributes, under the
 * extend lock. */
#include <errno.h>
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

/* Ends a change of the metadata that landed on disk: the handle takes the
 * new metadata (next is moved, not copied) and the .xmd's state, so that a
 * reload does not read back what it wrote. */
static void meta_adopt(struct drx_array *a, struct drx_array_meta *next)
{
    drx_array_meta_fini(&a->meta);
    a->meta = *next;
    lstat(a->xmd_path, &a->xmd_st);
}

/* Starts a change of the metadata (an extension, an attribute): takes the
 * array's extend lock (one changer at a time, across processes), reloads
 * what another changed meanwhile, and refuses an .xta with a second name:
 * under the lock no rename is half done, so another name is a crash's
 * leftover whose metadata this change would leave behind.  The caller
 * lets go with flock(LOCK_UN) whatever this returns (harmless when the
 * lock itself failed).  0 or -errno. */
static int meta_change_begin(struct drx_array *a, struct drx_err *err)
{
    int rc;

    if (flock(a->xta_fd, LOCK_EX))
        return drx_err_set(err, errno, "%s: lock: %s", a->xta_path, strerror(errno));
    rc = drx_array_reload(a, err);
    if (rc < 0)
        return rc;
    return drx_array_xta_links(a, false, err);
}

int drx_array_extend(struct drx_array *a, int dim, uint64_t count, struct drx_err *err)
{
    struct drx_array_meta next;
    uint64_t from, to, old_chunks;
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if (dim < 0 || dim >= a->meta.rank)
        return drx_err_set(err, EINVAL, "dimension %d out of range (rank %d)", dim, a->meta.rank);
    if (count == 0)
        return drx_err_set(err, EINVAL, "extension count must be > 0");
    if ((rc = meta_change_begin(a, err)) < 0)
        goto out;
    from = a->meta.bounds[dim];
    if (__builtin_add_overflow(from, count, &to)) {
        rc = drx_err_set(err, EFBIG, "extent of dimension %d would overflow", dim);
        goto out;
    }

    /* Build the new metadata on a copy: the handle changes only once the
     * new metadata is on disk. */
    rc = drx_array_meta_load(a->xmd_path, &next, err);
    if (rc)
        goto out;
    old_chunks = next.map.nchunks;
    rc = drx_xmd_grow(&next, dim, to, err);
    if (rc == 0 && drx_xmd_history_add(&next, dim, from, to))
        rc = drx_err_set(err, ENOMEM, "out of memory");
    if (rc == 0) {
        rc = drx_array_fill_chunks(a->xta_fd, &next, old_chunks, next.map.nchunks);
        if (rc == 0 && fdatasync(a->xta_fd))
            rc = -errno;
        if (rc)
            rc = drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    }
    if (rc == 0)
        rc = drx_xmd_write(a->xmd_path, a->xta_fd, &next, err);
    if (rc) {
        drx_array_meta_fini(&next);
        /* A full disk and the like: give back what the failed extension
         * added, unless its metadata did land (a failure after the rename). */
        if (!extension_committed(a->xmd_path, old_chunks) &&
            ftruncate(a->xta_fd, (off_t)(old_chunks * a->meta.chunk_bytes)))
            drx_log(DRX_LOG_WARNING, "%s: cutting back a failed extension: %s", a->xta_path,
                    strerror(errno));
        goto out;
    }
    meta_adopt(a, &next);
out:
    flock(a->xta_fd, LOCK_UN);
    return rc < 0 ? rc : 0;
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
                        struct drx_err *err)
{
    struct drx_array_meta next;
    int rc;

    if (a->mode != DRX_RDWR)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if ((rc = meta_change_begin(a, err)) < 0)
        goto out;
    rc = drx_array_meta_load(a->xmd_path, &next, err);
    if (rc)
        goto out;
    rc = change(&next, arg, err);
    if (rc == 0)
        rc = drx_xmd_write(a->xmd_path, a->xta_fd, &next, err);
    if (rc) {
        drx_array_meta_fini(&next);
        goto out;
    }
    meta_adopt(a, &next);
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
    size_t bytes;
    int rc;

    /* the attribute may come from anywhere: check it as the .xmd reader
     * would, so that nothing written can fail to load */
    if ((rc = drx_attr_name_check(attr->name, err)))
        return rc;
    if (!attr->is_string &&
        (attr->type < 0 || attr->type >= DRX_NTYPES || drx_type_is_complex(attr->type)))
        return drx_err_set(err, EINVAL, "attribute %s: a complex or unknown type", attr->name);
    bytes = attr->is_string ? attr->n : attr->n * drx_type_size(attr->type);
    if ((!attr->is_string && attr->n == 0) || bytes > DRX_MAX_ATTR_BYTES ||
        (attr->is_string && strlen(attr->value) != attr->n))
        return drx_err_set(err, EINVAL, "attribute %s: bad value size", attr->name);
    return attrs_update(a, attr_put, attr, err);
}

int drx_array_attr_rm(struct drx_array *a, const char *name, struct drx_err *err)
{
    return attrs_update(a, attr_drop, name, err);
}
