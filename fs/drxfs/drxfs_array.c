/* Arrays and views at the mount point: the files data, data.npy, data.nc
 * and info.  The handle table is drxfs_array_table.c, the attributes as
 * extended attributes drxfs_array_attr.c.
 *
 * An open file keeps the view resolved at open: chunks never move, so it
 * keeps reading the elements it was opened on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/format.h"
#include "drxfs_i.h"
#include "drxfs_prefetch.h"

/* The .npy header of a view, malloc'ed (libcore formats it). */
static char *npy_header(const struct drx_view *v, size_t *len)
{
    char *h;
    if (drx_npy_header(v, NULL, len) < 0 || !(h = malloc(*len)))
        return NULL;
    drx_npy_header(v, h, len);
    return h;
}

/* What each file of an array or view is: the handlers ask this table
 * rather than test kinds.  info is made at open: never serve an older one
 * from the cache (always direct I/O). */
struct afile {
    bool text;             /* made at open, before the elements (or all, for info) */
    bool readonly;         /* never written: info, data.nc */
    bool elements;         /* the view's elements follow the text */
    const bool *direct_io; /* the mount option that sets fi->direct_io */
};
static const bool always = true;
static const struct afile afiles[] = {
    [DRXFS_ADATA] = {false, false, true, &drxfs.data_direct_io},
    [DRXFS_ANPY] = {true, false, true, &drxfs.npy_direct_io},
    [DRXFS_AINFO] = {true, true, false, &always},
    [DRXFS_ANC] = {true, true, true, &drxfs.npy_direct_io},
};

/* The entry of kind k: all false for the array directory itself. */
static const struct afile *afile_of(enum drxfs_kind k)
{
    static const struct afile none = {false, false, false, &always};
    return k >= DRXFS_ADATA && k <= DRXFS_ANC ? &afiles[k] : &none;
}

/* ---- attributes ---- */

static int resolve_view(struct drxfs_arr *e, const struct drxfs_node *n, struct drx_view *v)
{
    struct drx_err err = {{0}};
    struct drx_view_spec spec;
    int rc = drxfs_node_spec(n, &spec);

    if (rc == 0)
        rc = drx_view_resolve(&spec, drx_array_meta(e->a), v, &err);
    if (rc < 0) {
        drxfs_log_no_view("%s: view does not resolve: %s", n->rel,
                          err.msg[0] ? err.msg : strerror(-rc));
        return -ENOENT;
    }
    return 0;
}

/* Coordinate variables of data.nc (README): for each named dimension of
 * the view, in the variable's order, the 1-D array of that name in the
 * array's store directory, when it is at least as long as the dimension. */
struct nc_coords {
    int n;
    uint64_t bytes;             /* of their elements in the view (made at open) */
    struct timespec mtim, ctim; /* the latest of their .xmd and .xta files */
    struct drx_nc_coord c[DRX_MAX_RANK];
    struct drx_array_meta meta[DRX_MAX_RANK];
    char *rel[DRX_MAX_RANK];
    void *data[DRX_MAX_RANK];
};

static void coords_fini(struct nc_coords *cs)
{
    for (int i = 0; i < cs->n; i++) {
        drx_array_meta_fini(&cs->meta[i]);
        free(cs->rel[i]);
        free(cs->data[i]);
    }
    cs->n = 0;
}

/* *t becomes the later of *t and u. */
static void time_latest(struct timespec *t, const struct timespec *u)
{
    if (u->tv_sec > t->tv_sec || (u->tv_sec == t->tv_sec && u->tv_nsec > t->tv_nsec))
        *t = *u;
}

/* data.nc holds the array's attributes (its .xmd) and its coordinates'
 * elements and attributes, beside its own elements: its times are the
 * latest of all those files', so that what compares times (rsync -a,
 * make, find -newer, backups) sees a change of any of them, not only of
 * the array's .xta. */
static void times_latest(struct stat *st, const struct timespec *mtim, const struct timespec *ctim)
{
    time_latest(&st->st_mtim, mtim);
    time_latest(&st->st_ctim, ctim);
}

/* The times of the .xmd and .xta of a coordinate, whose .xmd is at path
 * (PATH_MAX + 64 bytes), into *mtim and *ctim (left as they are when
 * neither stats). */
static void coord_times(char *path, struct timespec *mtim, struct timespec *ctim)
{
    size_t len = strlen(path);
    struct stat st;

    for (int i = 0; i < 2; i++) {
        if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            time_latest(mtim, &st.st_mtim);
            time_latest(ctim, &st.st_ctim);
        }
        memcpy(path + len - 3, "xta", 3);
    }
    memcpy(path + len - 3, "xmd", 3);
}

/* Why candidate cm cannot be the coordinate of dimension d of array m, or
 * NULL when it can. */
static const char *coord_unfit(const struct drx_array_meta *cm, const struct drx_array_meta *m,
                               int d)
{
    if (cm->rank != 1)
        return "it is not 1-D";
    if (drx_type_is_complex(cm->type))
        return "netCDF has no complex type";
    if (cm->bounds[0] < m->bounds[d])
        return "it is shorter than the dimension";
    return NULL;
}

/* The store name rel of the array named dn beside n (dirlen: length of
 * n's directory part), and the libcore path of its .xmd; false when there
 * is none to try (too long, or n itself: an array named like its own
 * dimension is that coordinate). */
static bool coord_names(const struct drxfs_node *n, int dirlen, const char *dn, char rel[PATH_MAX],
                        char path[PATH_MAX + 64], int *pin)
{
    int len = snprintf(rel, PATH_MAX, "%.*s%s", dirlen, n->rel, dn);
    if (len < 0 || len >= PATH_MAX || strcmp(rel, n->rel) == 0 ||
        drxfs_lib_path(path, PATH_MAX + 64 - 4, rel, pin) < 0)
        return false;
    strcat(path, ".xmd");
    return true;
}

/* The coordinates' elements are read whole at open, into the daemon's
 * memory (twice: then copied into the file's prefix): a user's sparse
 * arrays of 2^30 elements made one open cost 16 GB.  Past this, in all, a
 * coordinate is left out. */
#define NC_COORD_BYTES_MAX ((uint64_t)64 << 20)

/* Why cm, fit otherwise, does not go into cs for count elements. */
static const char *coord_too_big(const struct drx_array_meta *cm, uint64_t count,
                                 const struct nc_coords *cs)
{
    if (count > (NC_COORD_BYTES_MAX - cs->bytes) / cm->elem_size)
        return "its elements in the view pass the 64 MiB data.nc makes at open";
    return NULL;
}

/* Adds the coordinate of dimension d (count elements in the view) of the
 * view of n (metadata m) to cs when an array fits; logs at level why one
 * that is there does not. */
static void coord_try(const struct drxfs_node *n, const struct drx_array_meta *m, int d,
                      uint64_t count, int dirlen, int level, struct nc_coords *cs)
{
    const char *dn = m->dim_name[d];
    char rel[PATH_MAX], path[PATH_MAX + 64];
    struct drx_array_meta cm;
    struct drx_err err = {{0}};
    const char *why;
    struct timespec mtim = {0}, ctim = {0};

    int pin, rc;

    if (!dn[0] || !coord_names(n, dirlen, dn, rel, path, &pin))
        return;
    rc = drx_array_meta_load(path, &cm, &err);
    if (rc < 0 && rc != -ENOENT)
        drx_log_ratelimited(level, "%s: %s is not dimension %s's coordinate: %s", n->rel, rel, dn,
                            err.msg);
    if (rc == 0)
        coord_times(path, &mtim, &ctim);
    drxfs_unpin(pin);
    if (rc < 0)
        return;
    if ((why = coord_unfit(&cm, m, d)) || (why = coord_too_big(&cm, count, cs)) ||
        (why = drxfs_coord_refusal(n->rel, rel))) {
        drx_log_ratelimited(level, "%s: %s is not dimension %s's coordinate: %s", n->rel, rel, dn,
                            why);
        drx_array_meta_fini(&cm);
        return;
    }
    if (!(cs->rel[cs->n] = strdup(rel))) {
        drx_array_meta_fini(&cm);
        return;
    }
    cs->meta[cs->n] = cm;
    cs->c[cs->n] = (struct drx_nc_coord){d, &cs->meta[cs->n], NULL};
    cs->bytes += count * cm.elem_size;
    time_latest(&cs->mtim, &mtim);
    time_latest(&cs->ctim, &ctim);
    cs->n++;
}

/* Fills cs from the metadata alone (stat reads no chunk).  A candidate
 * left out is logged (at info when the file is being opened, so that a
 * user can find out why, else at debug: stat comes often). */
static void coords_find(const struct drxfs_node *n, const struct drx_array_meta *m,
                        const struct drx_view *v, bool opening, struct nc_coords *cs)
{
    const char *slash = strrchr(n->rel, '/');
    int dirlen = slash ? (int)(slash - n->rel + 1) : 0;
    int level = opening ? DRX_LOG_INFO : DRX_LOG_DEBUG;

    for (int i = 0; i < v->rank; i++) {
        int d = v->order == DRX_ORDER_C ? i : v->rank - 1 - i;
        coord_try(n, m, d, v->count[d], dirlen, level, cs);
    }
}

/* Reads each coordinate's elements of the view, big-endian.  The arrays
 * are opened afresh: they only grow, so what coords_find saw still holds
 * unless one was replaced meanwhile (then -EIO, and the next open retries). */
static int coords_read(struct nc_coords *cs, const struct drx_view *v, const char *rel)
{
    for (int i = 0; i < cs->n; i++) {
        const struct drx_array_meta *cm;
        struct drx_array *ca = NULL;
        struct drx_err err = {{0}};
        struct drx_view cv;
        char path[PATH_MAX + 64];
        int d = cs->c[i].dim, rc;
        uint64_t bytes = v->count[d] * cs->meta[i].elem_size;

        int pin;

        if ((rc = drxfs_lib_path(path, sizeof path, cs->rel[i], &pin)) < 0)
            return rc;
        rc = drx_array_open(path, DRX_RDONLY, &ca, &err);
        drxfs_unpin(pin); /* the handle holds its files open */
        if (rc < 0) {
            drx_log_ratelimited(DRX_LOG_WARNING, "%s: coordinate %s: %s", rel, cs->rel[i], err.msg);
            return -EIO;
        }
        cm = drx_array_meta(ca);
        rc = -EIO;
        if (cm->type == cs->meta[i].type && cm->rank == 1 &&
            cm->bounds[0] > v->origin[d] + (v->count[d] - 1) * v->step[d] &&
            (cs->data[i] = malloc(bytes ? bytes : 1))) {
            drx_view_whole(cm, &cv);
            cv.origin[0] = v->origin[d];
            cv.step[0] = v->step[d];
            cv.count[0] = v->count[d];
            cv.nelem = v->count[d];
            cv.rep = DRX_REP_EXTERNAL32;
            if (drx_view_read(ca, &cv, 0, cs->data[i], bytes) == (ssize_t)bytes)
                rc = 0;
        }
        drx_array_close(ca);
        if (rc < 0) {
            drx_log_ratelimited(DRX_LOG_WARNING, "%s: coordinate %s could not be read", rel,
                                cs->rel[i]);
            return rc;
        }
        cs->c[i].data = cs->data[i];
    }
    return 0;
}

/* The bytes of data.nc before its records (the header and the fixed
 * coordinate variables' data): their size in *len, and when buf is not
 * NULL the bytes in a malloc'ed *buf.  Its records in *rec: with buf, the
 * record coordinate's elements (if any) in a malloc'ed *coord, which
 * rec->coord_data points to.  One look-up of the coordinates serves all,
 * so the size and the bytes agree.  -ENOENT where the view has no
 * data.nc.  The latest times of the coordinates' files are folded into
 * times' st_mtim and st_ctim. */
static int nc_prefix(struct drxfs_arr *e, const struct drxfs_node *n, const struct drx_view *v,
                     char **buf, size_t *len, struct stat *times,
                     struct drx_nc_records *rec, void **coord)
{
    const struct drx_array_meta *m = drx_array_meta(e->a);
    struct nc_coords cs = {0};
    unsigned char *out = NULL;
    int rc;

    coords_find(n, m, v, buf != NULL, &cs);
    times_latest(times, &cs.mtim, &cs.ctim);
    rc = drx_nc_file_header(m, v, n->rel, cs.c, cs.n, NULL, len, rec);
    if (rc < 0) {
        if (drx_log_enabled(DRX_LOG_DEBUG))
            drx_log(DRX_LOG_DEBUG, "%s: no data.nc: %s", n->rel,
                    rc == -ENOTSUP ? "complex elements have no netCDF type" : "the view is empty");
        rc = -ENOENT;
        goto out;
    }
    if (!buf)
        goto out;
    if ((rc = coords_read(&cs, v, n->rel)) < 0)
        goto out;
    if (!(out = malloc(*len))) {
        rc = -ENOMEM;
        goto out;
    }
    drx_nc_file_header(m, v, n->rel, cs.c, cs.n, out, len, rec);
    if (rec->coord) {
        /* kept past the coordinates' buffers */
        if (!(*coord = malloc(rec->count * rec->coord))) {
            free(out);
            rc = -ENOMEM;
            goto out;
        }
        memcpy(*coord, rec->coord_data, rec->count * rec->coord);
        rec->coord_data = *coord;
    }
    *buf = (char *)out;
out:
    coords_fini(&cs);
    return rc;
}

bool drxfs_array_has_nc(const struct drxfs_node *n)
{
    struct drxfs_arr *e;
    struct drx_view v;
    size_t len;
    bool has = false;

    if (drxfs_arr_get(n, &e) < 0)
        return false;
    pthread_rwlock_rdlock(&e->lock);
    if (resolve_view(e, n, &v) == 0)
        has = drx_nc_header(drx_array_meta(e->a), &v, n->rel, NULL, &len) == 0;
    pthread_rwlock_unlock(&e->lock);
    drxfs_arr_put(e);
    return has;
}

/* Directory permissions of an array: its .xmd's, with x wherever r is. */
static mode_t dir_mode(mode_t m)
{
    m &= 07777;
    return S_IFDIR | m | ((m & 0444) >> 2);
}

int drxfs_array_getattr(const struct drxfs_node *n, struct stat *st)
{
    struct drxfs_arr *e;
    struct drx_view v;
    struct stat xta;
    bool xta_seen = false;
    int rc;

    if ((rc = drxfs_arr_get(n, &e)) < 0)
        return rc;
    pthread_rwlock_rdlock(&e->lock);
    if ((rc = resolve_view(e, n, &v)) < 0)
        goto out;
    *st = n->st;
    st->st_nlink = 1;
    switch (n->kind) {
    case DRXFS_ARRAY:
        st->st_mode = dir_mode(n->st.st_mode);
        st->st_nlink = 2;
        st->st_size = 0;
        st->st_blocks = 0;
        break;
    case DRXFS_ADATA:
    case DRXFS_ANPY:
    case DRXFS_ANC: {
        uint64_t size = drx_view_bytes(&v);
        /* data.nc: the .xmd's times (its attributes), then its coordinates' */
        struct stat nct = n->st;
        if (n->kind == DRXFS_ANC) {
            size_t hlen;
            struct drx_nc_records rec;
            if ((rc = nc_prefix(e, n, &v, NULL, &hlen, &nct, &rec, NULL)) < 0)
                goto out;
            size = hlen + rec.count * rec.size;
        } else if (n->kind == DRXFS_ANPY) {
            size_t hlen;
            if (drx_npy_header(&v, NULL, &hlen) < 0) {
                rc = -EIO;
                goto out;
            }
            size += hlen;
        }
        if (fstat(drx_array_xta_fd(e->a), &xta) == 0) {
            xta_seen = true;
            st->st_mode = xta.st_mode;
            st->st_uid = xta.st_uid;
            st->st_gid = xta.st_gid;
            st->st_atim = xta.st_atim;
            st->st_mtim = xta.st_mtim;
            st->st_ctim = xta.st_ctim;
        }
        if (n->kind == DRXFS_ANC)
            times_latest(st, &nct.st_mtim, &nct.st_ctim);
        st->st_mode = S_IFREG | (st->st_mode & (n->kind == DRXFS_ANC ? 0444 : 07666));
        st->st_size = (off_t)size;
        st->st_blocks = (blkcnt_t)((size + 511) / 512);
        st->st_blksize = DRXFS_DATA_BLKSIZE;
        break;
    }
    case DRXFS_AINFO: {
        size_t len;
        /* cached per metadata generation: a repeated stat formats nothing */
        if ((rc = drxfs_info_size(n, drx_array_meta(e->a), &v, &len)) < 0)
            goto out;
        st->st_mode = S_IFREG | (n->st.st_mode & 0444);
        st->st_size = (off_t)len;
        st->st_blocks = (st->st_size + 511) / 512;
        break;
    }
    default:
        rc = -EIO;
        goto out;
    }
    if (drxfs_arr_shows_ro(e))
        st->st_mode &= ~(mode_t)0222;
out:
    pthread_rwlock_unlock(&e->lock);
    /* the times shown are the .xta's: the chunk cache follows them */
    if (xta_seen)
        drxfs_arr_xta_seen(e, &xta);
    drxfs_arr_put(e);
    return rc;
}

int drxfs_array_getacl(const struct drxfs_node *n, char *value, size_t size)
{
    /* mapped as drxfs_array_getattr maps the mode: the directory and info
     * from the .xmd, the data files from the .xta */
    struct drxfs_acl_map map = {n->kind == DRXFS_ARRAY, 7};
    struct drxfs_arr *e;
    char xmd[PATH_MAX];
    int rc;

    if (n->kind == DRXFS_ADATA || n->kind == DRXFS_ANPY)
        map.keep = 6;
    else if (n->kind == DRXFS_ANC || n->kind == DRXFS_AINFO)
        map.keep = 4;
    if ((rc = drxfs_arr_get(n, &e)) < 0)
        return rc;
    if (drxfs_arr_shows_ro(e))
        map.keep &= ~2u;
    if (n->kind == DRXFS_ARRAY || n->kind == DRXFS_AINFO)
        rc = drxfs_rel_suffix(xmd, n->rel, DRXFS_XMD) < 0
                 ? -ENAMETOOLONG
                 : drxfs_acl_of_entry(xmd, DRXFS_ACL_ACCESS, map, value, size);
    else
        rc = drxfs_acl_of_fd(drx_array_xta_fd(e->a), map, value, size);
    drxfs_arr_put(e);
    return rc;
}

bool drxfs_array_setid(struct drxfs_fh *fh)
{
    struct stat xta;
    return fstat(drx_array_xta_fd(fh->arr->a), &xta) < 0 || (xta.st_mode & (S_ISUID | S_ISGID));
}

int drxfs_array_fgetattr(struct drxfs_fh *fh, struct stat *st)
{
    struct stat xta;
    uint64_t size = drx_view_bytes(&fh->view);

    if (fstat(drx_array_xta_fd(fh->arr->a), &xta) < 0)
        return -errno;
    /* the kernel asks this before reading again an open file whose
     * attributes expired: its reads then get what was written meanwhile */
    drxfs_arr_xta_seen(fh->arr, &xta);
    *st = xta;
    st->st_nlink = 1;
    if (fh->kind == DRXFS_ANPY)
        size += fh->text_len;
    else if (fh->kind == DRXFS_ANC) {
        size = fh->text_len + fh->nc_rec.count * fh->nc_rec.size;
        times_latest(st, &fh->times.st_mtim, &fh->times.st_ctim);
    } else if (fh->kind == DRXFS_AINFO) {
        size = fh->text_len;
        /* as drxfs_array_getattr: info's owner and mode (so its ACL) are
         * the .xmd's */
        st->st_uid = fh->times.st_uid;
        st->st_gid = fh->times.st_gid;
        xta.st_mode = fh->times.st_mode;
    }
    st->st_mode =
        S_IFREG | (xta.st_mode & (fh->kind == DRXFS_AINFO || fh->kind == DRXFS_ANC ? 0444 : 07666));
    if (drxfs_arr_shows_ro(fh->arr))
        st->st_mode &= ~(mode_t)0222;
    st->st_size = (off_t)size;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
    st->st_blksize = DRXFS_DATA_BLKSIZE;
    return 0;
}

const char *drxfs_array_fh_rel(const struct drxfs_fh *fh)
{
    return fh->arr->key;
}

/* ---- open files ---- */

static void fh_free(struct drxfs_fh *fh)
{
    if (!fh)
        return;
    free(fh->text);
    free(fh->nc_coord);
    if (fh->words)
        for (int i = 0; i < fh->nwords; i++)
            free(fh->words[i]);
    free(fh->words);
    free(fh->prefetch_path);
    free(fh);
}

/* Keeps what a prefetch of this file's view needs: the array's real store
 * path (drx-load is another process: the store handle's paths mean nothing
 * to it) and
 * the view words, which are the path components before the file name. */
static int prefetch_prepare(struct drxfs_fh *fh, const char *path, const struct drxfs_node *n)
{
    if (!drxfs.prefetch ||
        (n->kind != DRXFS_ADATA && n->kind != DRXFS_ANPY && n->kind != DRXFS_ANC) ||
        drx_view_bytes(&fh->view) < drxfs_prefetch_min_bytes(drxfs.prefetch))
        return 0;
    size_t plen = strlen(drxfs.store_path) + strlen(n->rel) + 2;
    if (!(fh->prefetch_path = malloc(plen)) ||
        (n->nwords && !(fh->words = calloc((size_t)n->nwords, sizeof(char *)))))
        return -ENOMEM;
    snprintf(fh->prefetch_path, plen, "%s/%s", drxfs.store_path, n->rel);
    /* path is ".../ARRAY/W1/.../Wk/FILE": walk back over FILE, then k words */
    const char *end = strrchr(path, '/');
    for (int i = n->nwords - 1; i >= 0 && end; i--) {
        const char *start = end;
        while (start > path && start[-1] != '/')
            start--;
        if (!(fh->words[i] = strndup(start, (size_t)(end - start))))
            return -ENOMEM;
        end = start > path ? start - 1 : NULL;
    }
    return 0;
}

/* The handle of array n for an open (wr: for writing), in *out: a writer
 * needs an array whose chunk file has one name.  An array opened read-only
 * because its chunk file had two names is reopened once, in case the other
 * name went away meanwhile. */
static int open_arr_get(const struct drxfs_node *n, bool wr, struct drxfs_arr **out)
{
    struct drxfs_arr *e = NULL;
    int rc;

    for (int tries = 0;; tries++) {
        struct drx_err err = {{0}};
        if ((rc = drxfs_arr_get(n, &e)) < 0)
            return rc;
        if (!wr)
            break;
        if (e->rdonly) {
            rc = e->rdonly_rc;
            goto out;
        }
        /* Two names of one chunk file would diverge (drx_array_check_links):
         * no writes until drx fsck --repair settles it. */
        if ((rc = drx_array_check_links(e->a, &err)) < 0) {
            drx_log_ratelimited(DRX_LOG_ERROR, "%s: writing refused: %s", n->rel, err.msg);
            rc = -EIO;
            goto out;
        }
        if (!e->shared || tries)
            break;
        /* The other name went away (a rename finished): reopen for writing. */
        drxfs_arr_detach(e);
        drxfs_arr_put(e);
        e = NULL;
    }
    if (wr && e->shared) {
        rc = -EIO;
        goto out;
    }
    *out = e;
    return 0;
out:
    drxfs_arr_put(e);
    return rc;
}

/* Resolves fh's view and makes the text that goes with it (.npy header,
 * info JSON, netCDF header and coordinates).  e read-locked. */
static int fh_view_text(struct drxfs_fh *fh, struct drxfs_arr *e, const struct drxfs_node *n)
{
    int rc = resolve_view(e, n, &fh->view);
    if (rc < 0)
        return rc;
    switch (n->kind) {
    case DRXFS_ANPY:
        fh->text = npy_header(&fh->view, &fh->text_len);
        break;
    case DRXFS_AINFO:
        fh->text = drx_array_info_json(drx_array_meta(e->a), &fh->view);
        fh->times = n->st; /* its owner and mode are the .xmd's */
        break;
    case DRXFS_ANC:
        /* netCDF data is big-endian whatever rep the path asked for */
        fh->view.rep = DRX_REP_EXTERNAL32;
        fh->times = n->st;
        rc = nc_prefix(e, n, &fh->view, &fh->text, &fh->text_len, &fh->times,
                       &fh->nc_rec, &fh->nc_coord);
        break;
    default:
        break;
    }
    return rc;
}

/* A file handle for file n of array e: its view resolved and its text
 * made, in *out. */
static int fh_make(struct drxfs_arr *e, const struct drxfs_node *n, struct drxfs_fh **out)
{
    struct drxfs_fh *fh = calloc(1, sizeof(*fh));
    int rc;

    if (!fh)
        return -ENOMEM;
    fh->kind = n->kind;
    fh->fd = -1;
    fh->nwords = n->nwords;
    pthread_rwlock_rdlock(&e->lock);
    rc = fh_view_text(fh, e, n);
    pthread_rwlock_unlock(&e->lock);
    if (rc == 0 && afile_of(n->kind)->text && !fh->text)
        rc = -EIO;
    if (rc < 0) {
        fh_free(fh);
        return rc;
    }
    if (n->kind == DRXFS_AINFO)
        fh->text_len = strlen(fh->text);
    *out = fh;
    return 0;
}

int drxfs_arr_caller_may(struct drxfs_arr *e, const char *rel, unsigned want, bool xmd)
{
    char name[PATH_MAX];
    struct stat st;
    int rc = -EACCES;

    if (fuse_get_context()->uid == 0)
        return 0;
    if (drxfs_rel_suffix(name, rel, xmd ? DRXFS_XMD : DRXFS_XTA) < 0)
        goto refused;
    /* The .xmd the handle read is no longer the name's after an attribute
     * set (replaced whole) by anyone: read again, as an open after it
     * would, and checked on that one; a few times, then refused (a user
     * who may read the array was refused data.nc, data.npy, info and its
     * xattrs a few times in a thousand with a setter in a loop).  A .xta
     * under the name that is not the handle's is another array's: refused,
     * as a reload refuses it (pair_intact). */
    for (int tries = 1;; tries++) {
        pthread_rwlock_rdlock(&e->lock);
        int fd = xmd ? drx_array_xmd_fd(e->a) : drx_array_xta_fd(e->a);
        bool ok = fd >= 0 && fstat(fd, &st) == 0 && drxfs_caller_may_fd(fd, &st, want);
        pthread_rwlock_unlock(&e->lock);
        if (!ok)
            goto refused;
        if ((rc = drxfs_caller_reach(name, &st)) == 0)
            return 0;
        if (rc == -ENOENT || rc == -ENOTDIR)
            goto gone;
        if (rc != -ESTALE || !xmd || tries == REACH_TRIES)
            goto refused;
        struct drx_err err = {{0}};
        pthread_rwlock_wrlock(&e->lock);
        rc = drx_array_reload(e->a, &err);
        pthread_rwlock_unlock(&e->lock);
        if (rc == -ENOENT)
            goto gone;
        if (rc < 0)
            goto refused;
    }
gone:
    /* no array under the name now (removed behind the mount, maybe made
     * anew): the node the kernel holds is stale, which it walks again
     * once, finding the new array or none (ENOENT); a user who may read
     * both was refused (EACCES) an open of info or data.npy a few times
     * in a thousand while root ran drx rm and drx create in a loop.  No
     * file is served: the new one is checked in full when opened */
    return -ESTALE;
refused:
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: replaced behind the mount by an array the caller (uid %u) may not "
                        "%s so: refused",
                        rel, (unsigned)fuse_get_context()->uid, want & 2 ? "open" : "read");
    return -EACCES;
}

int drxfs_array_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = NULL;
    struct drxfs_arr *e = NULL;
    bool wr = (fi->flags & O_ACCMODE) != O_RDONLY;
    int rc;

    if (n->kind == DRXFS_ARRAY)
        return -EISDIR;
    if (wr && drxfs.ro)
        return -EROFS;
    if (wr && afile_of(n->kind)->readonly)
        return -EACCES;
    if ((rc = open_arr_get(n, wr, &e)) < 0)
        return rc;
    /* info shows the .xmd, whose mode the kernel checked: not the .xta's;
     * the headers of data.nc (attributes) and data.npy come from the .xmd
     * the handle read, which a reload by name can have taken from another
     * array than its .xta: checked too */
    if ((rc = drxfs_arr_caller_may(e, n->rel,
                                   ((fi->flags & O_ACCMODE) != O_WRONLY ? 4 : 0) | (wr ? 2 : 0),
                                   n->kind == DRXFS_AINFO)) < 0 ||
        ((n->kind == DRXFS_ANC || n->kind == DRXFS_ANPY) &&
         (rc = drxfs_arr_caller_may(e, n->rel, 4, true)) < 0))
        goto out;
    if ((rc = fh_make(e, n, &fh)) < 0)
        goto out;
    if ((rc = prefetch_prepare(fh, path, n)) < 0)
        goto out;
    drxfs_arr_opened(e);
    fh->arr = e;
    e = NULL;
    fi->direct_io = *afile_of(n->kind)->direct_io;
    fi->keep_cache = 0;
    fi->fh = (uint64_t)(uintptr_t)fh;
    fh = NULL;
out:
    fh_free(fh);
    drxfs_arr_put(e);
    return rc;
}

void drxfs_array_release(struct drxfs_fh *fh)
{
    drxfs_arr_closed(fh->arr);
    drxfs_arr_put(fh->arr);
    fh_free(fh);
}

/* ---- reads split over two threads ----
 * A single reader (cat, cp) sends one 1 MiB request at a time, so one
 * worker thread does all the copying while the other core idles.  A large
 * request is cut in two: a helper thread copies the second half while the
 * worker copies the first (each half loads its own chunks).  The worker
 * holds the handle's read lock until both halves are done. */

#define DRXFS_SPLIT_MIN ((size_t)256 << 10)

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool started, stop, busy, has_job, done;
    pthread_t thread;
    struct drx_array *a;
    const struct drx_view *v;
    uint64_t off;
    char *buf;
    size_t len;
    ssize_t result;
} helper = {.mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *helper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&helper.mutex);
    for (;;) {
        while (!helper.has_job && !helper.stop)
            pthread_cond_wait(&helper.cond, &helper.mutex);
        if (helper.stop)
            break;
        pthread_mutex_unlock(&helper.mutex);
        ssize_t r = drx_view_read(helper.a, helper.v, helper.off, helper.buf, helper.len);
        pthread_mutex_lock(&helper.mutex);
        helper.result = r;
        helper.has_job = false;
        helper.done = true;
        pthread_cond_broadcast(&helper.cond);
    }
    pthread_mutex_unlock(&helper.mutex);
    return NULL;
}

void drxfs_array_split_stop(void)
{
    pthread_mutex_lock(&helper.mutex);
    bool started = helper.started;
    helper.stop = true;
    pthread_cond_broadcast(&helper.cond);
    pthread_mutex_unlock(&helper.mutex);
    if (started)
        pthread_join(helper.thread, NULL);
}

/* drx_view_read, in two halves on two threads when the helper is free.
 * The caller holds the array's read lock. */
static ssize_t view_read(struct drx_array *a, const struct drx_view *v, uint64_t off, char *buf,
                         size_t len)
{
    if (len < DRXFS_SPLIT_MIN || !drxfs.split_reads)
        return drx_view_read(a, v, off, buf, len);
    pthread_mutex_lock(&helper.mutex);
    if (!helper.started && !helper.stop)
        helper.started = pthread_create(&helper.thread, NULL, helper_main, NULL) == 0;
    if (!helper.started || helper.busy || helper.stop) {
        /* another reader has the helper: no waiting for it */
        pthread_mutex_unlock(&helper.mutex);
        return drx_view_read(a, v, off, buf, len);
    }
    /* 4 KiB-aligned halves are whole elements (sizes are powers of 2) */
    size_t half = (len / 2) & ~(size_t)4095;
    helper.busy = true;
    helper.a = a;
    helper.v = v;
    helper.off = off + half;
    helper.buf = buf + half;
    helper.len = len - half;
    helper.has_job = true;
    helper.done = false;
    pthread_cond_broadcast(&helper.cond);
    pthread_mutex_unlock(&helper.mutex);

    ssize_t n1 = drx_view_read(a, v, off, buf, half);

    pthread_mutex_lock(&helper.mutex);
    while (!helper.done)
        pthread_cond_wait(&helper.cond, &helper.mutex);
    ssize_t n2 = helper.result;
    helper.busy = false;
    pthread_mutex_unlock(&helper.mutex);

    if (n1 < 0 || (size_t)n1 < half)
        return n1;
    return n2 < 0 ? n1 : n1 + n2;
}

/* On the first read of a large view: warm its chunks in parallel (the
 * launch returns at once; reads never wait for it). */
static void read_prefetch(struct drxfs_fh *fh)
{
    if (!fh->prefetch_path || __atomic_exchange_n(&fh->read_seen, true, __ATOMIC_RELAXED))
        return;
    drx_log(DRX_LOG_DEBUG, "%s: read of a %llu-byte view: asking for a prefetch", fh->arr->key,
            (unsigned long long)drx_view_bytes(&fh->view));
    drxfs_prefetch_request(drxfs.prefetch, fh->prefetch_path, (const char *const *)fh->words,
                           fh->nwords);
}

/* Copies what [off, off + size) holds of fh's text to buf: the count. */
static size_t read_text(const struct drxfs_fh *fh, char *buf, size_t size, uint64_t off)
{
    size_t n = 0;
    if (off < fh->text_len) {
        n = fh->text_len - (size_t)off;
        if (n > size)
            n = size;
        memcpy(buf, fh->text + off, n);
    }
    return n;
}

/* The part of data.nc's records (each the record coordinate's element,
 * then the view's slab of the record, each padded to 4 bytes) at uoff from
 * their start into buf: the view's bytes the request covers are one run of
 * it, read at once, then spread over the records.  The count, or -errno. */
static int read_nc_records(struct drxfs_fh *fh, char *buf, size_t size, uint64_t uoff)
{
    const struct drx_nc_records *r = &fh->nc_rec;
    const uint64_t cpad = (r->coord + 3) / 4 * 4, total = r->count * r->size;
    uint64_t a = UINT64_MAX, b = 0; /* the view's bytes covered */
    char *data = NULL;

    if (uoff >= total)
        return 0;
    if (size > total - uoff)
        size = (size_t)(total - uoff);
    for (uint64_t rec = uoff / r->size; rec * r->size < uoff + size; rec++) {
        uint64_t s0 = rec * r->size + cpad, s1 = s0 + r->slab;
        uint64_t lo = s0 > uoff ? s0 : uoff, hi = s1 < uoff + size ? s1 : uoff + size;
        if (lo >= hi)
            continue;
        if (a == UINT64_MAX)
            a = rec * r->slab + (lo - s0);
        b = rec * r->slab + (hi - s0);
    }
    if (a < b) {
        if (!(data = malloc(b - a)))
            return -ENOMEM;
        pthread_rwlock_rdlock(&fh->arr->lock);
        ssize_t n = view_read(fh->arr->a, &fh->view, a, data, b - a);
        if (n < 0)
            drxfs_arr_read_failed(fh->arr, b - a, a, (int)n);
        pthread_rwlock_unlock(&fh->arr->lock);
        if (n < 0 || (uint64_t)n < b - a) {
            free(data);
            return n < 0 ? (int)n : -EIO;
        }
    }
    /* each byte: the coordinate's, the view's, or a pad's zero */
    for (size_t done = 0; done < size;) {
        uint64_t at = uoff + done, rec = at / r->size, in = at % r->size, n;
        if (in < r->coord) {
            n = r->coord - in;
            n = n < size - done ? n : size - done;
            memcpy(buf + done, (const char *)r->coord_data + rec * r->coord + in, n);
        } else if (in >= cpad && in < cpad + r->slab) {
            n = cpad + r->slab - in;
            n = n < size - done ? n : size - done;
            memcpy(buf + done, data + (rec * r->slab + (in - cpad) - a), n);
        } else {
            n = (in < cpad ? cpad : r->size) - in;
            n = n < size - done ? n : size - done;
            memset(buf + done, 0, n);
        }
        done += n;
    }
    free(data);
    return (int)size;
}

int drxfs_array_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off)
{
    const struct afile *k = afile_of(fh->kind);
    size_t done = 0;
    uint64_t uoff = (uint64_t)off;

    if (off < 0)
        return -EINVAL;
    read_prefetch(fh);
    if (k->text) {
        done = read_text(fh, buf, size, uoff);
        if (!k->elements || done == size)
            return (int)done;
        uoff = uoff + done - fh->text_len;
    }
    if (fh->kind == DRXFS_ANC && fh->nc_rec.coord) {
        int n = read_nc_records(fh, buf + done, size - done, uoff);
        return n < 0 ? (done ? (int)done : n) : (int)done + n;
    }
    pthread_rwlock_rdlock(&fh->arr->lock);
    ssize_t n = view_read(fh->arr->a, &fh->view, uoff, buf + done, size - done);
    if (n < 0)
        drxfs_arr_read_failed(fh->arr, size - done, uoff, (int)n);
    pthread_rwlock_unlock(&fh->arr->lock);
    if (n < 0)
        return done ? (int)done : (int)n;
    done += (size_t)n;
    return (int)done;
}

/* The value of 'key' in a .npy header's dictionary text (len bytes of
 * p) into out: a quoted string, a tuple or a word; false when not there. */
static bool npy_field(const char *p, size_t len, const char *key, char *out, size_t outlen)
{
    char pat[32];
    size_t kl = (size_t)snprintf(pat, sizeof(pat), "'%s': ", key);
    const char *end = p + len, *v = NULL, *stop;

    for (const char *q = p; (size_t)(end - q) >= kl && !v; q++)
        if (memcmp(q, pat, kl) == 0)
            v = q + kl;
    if (!v || v >= end)
        return false;
    stop = *v == '('    ? memchr(v, ')', (size_t)(end - v))
           : *v == '\'' ? memchr(v + 1, '\'', (size_t)(end - v - 1))
                        : NULL;
    if (stop)
        stop++;
    else
        for (stop = v; stop < end && *stop != ',' && *stop != '}'; stop++)
            ;
    if (!stop || (size_t)(stop - v) >= outlen)
        return false;
    memcpy(out, v, (size_t)(stop - v));
    out[stop - v] = '\0';
    return true;
}

/* Logs why a write over data.npy's header (size bytes of buf at offset
 * off) is refused: with np.save, the dtype, order or shape that differ. */
static void npy_refused(const struct drxfs_fh *fh, const char *buf, size_t size, uint64_t off)
{
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    char got[3][96], want[3][96];
    size_t scan = size < 4096 ? size : 4096;
    bool all = off == 0;

    bool same = true;
    for (int i = 0; all && i < 3; i++) {
        all = npy_field(buf, scan, keys[i], got[i], sizeof got[i]) &&
              npy_field(fh->text, fh->text_len, keys[i], want[i], sizeof want[i]);
        same = same && all && strcmp(got[i], want[i]) == 0;
    }
    if (all && same)
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%s: data.npy: a header of the view's descr, order and shape but "
                            "other bytes (its version or padding): refused (EPERM)",
                            fh->arr->key);
    else if (all)
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%s: data.npy: a header of descr %s, fortran_order %s, shape %s "
                            "written over the view's %s, %s, %s: refused (EPERM; np.save an "
                            "array of the view's dtype and shape, or write data)",
                            fh->arr->key, got[0], got[1], got[2], want[0], want[1], want[2]);
    else
        drx_log_ratelimited(DRX_LOG_INFO,
                            "%s: data.npy: a write that changes its header (bytes from %" PRIu64
                            " of %zu): refused (EPERM)",
                            fh->arr->key, off, fh->text_len);
}

int drxfs_array_write(struct drxfs_fh *fh, const char *buf, size_t size, off_t off)
{
    size_t done = 0;
    uint64_t uoff = (uint64_t)off;

    if (off < 0)
        return -EINVAL;
    if (fh->kind == DRXFS_AINFO || fh->kind == DRXFS_ANC)
        return -EACCES;
    if (fh->kind == DRXFS_ANPY) {
        /* The header follows from the view: bytes equal to it are accepted
         * (np.save of a same-shaped array), others refused. */
        if (uoff < fh->text_len) {
            size_t n = fh->text_len - (size_t)uoff;
            if (n > size)
                n = size;
            if (memcmp(fh->text + uoff, buf, n) != 0) {
                npy_refused(fh, buf, size, uoff);
                return -EPERM;
            }
            done = n;
        }
        if (done == size)
            return (int)done;
        uoff = uoff + done - fh->text_len;
    }
    pthread_rwlock_rdlock(&fh->arr->lock);
    ssize_t n = drx_view_write(fh->arr->a, &fh->view, uoff, buf + done, size - done);
    pthread_rwlock_unlock(&fh->arr->lock);
    if (n < 0) {
        if (n != -EFBIG)
            drx_log_ratelimited(DRX_LOG_ERROR, "%s: write of %zu bytes at %" PRIu64 ": %s",
                                fh->arr->key, size - done, uoff, strerror((int)-n));
        return done ? (int)done : (int)n;
    }
    return (int)(done + (size_t)n);
}

/* truncate of an open file: to its size only. */
static int truncate_fh(const struct drxfs_fh *fh, off_t size)
{
    uint64_t cur = drx_view_bytes(&fh->view) + (fh->kind == DRXFS_ANPY ? fh->text_len : 0);
    return (uint64_t)size == cur ? 0 : (uint64_t)size > cur ? -EFBIG : -EPERM;
}

int drxfs_array_truncate(const struct drxfs_node *n, struct drxfs_fh *fh, off_t size)
{
    /* The size of a view's file is fixed by the view.  Truncating to 0 (what
     * O_TRUNC and `cat x > data` do) or to the current size is accepted and
     * changes nothing; growing is EFBIG like a write past the end. */
    struct stat st;
    int rc;

    if (drxfs.ro)
        return -EROFS;
    if ((n && afile_of(n->kind)->readonly) || (fh && afile_of(fh->kind)->readonly))
        return -EACCES;
    if (size == 0)
        return 0;
    if (fh)
        return truncate_fh(fh, size);
    if ((rc = drxfs_array_getattr(n, &st)) < 0)
        return rc;
    if (n->kind == DRXFS_AINFO)
        return -EACCES;
    if (n->kind == DRXFS_ARRAY)
        return -EISDIR;
    return size == st.st_size ? 0 : size > st.st_size ? -EFBIG : -EPERM;
}

int drxfs_array_fsync(struct drxfs_fh *fh, int datasync)
{
    int fd = drx_array_xta_fd(fh->arr->a);
    int rc = datasync ? fdatasync(fd) : fsync(fd);
    return rc < 0 ? -errno : 0;
}

/* data_io=, npy_io= (data.npy and data.nc), split_reads=. */
int drxfs_array_option(const char *name, const char *value)
{
    if (strcmp(name, "data_io") == 0)
        return drxfs_opt_choice(name, value, "direct", "cached", &drxfs.data_direct_io);
    if (strcmp(name, "npy_io") == 0)
        return drxfs_opt_choice(name, value, "direct", "cached", &drxfs.npy_direct_io);
    if (strcmp(name, "split_reads") == 0)
        return drxfs_opt_choice(name, value, "yes", "no", &drxfs.split_reads);
    return 1;
}
