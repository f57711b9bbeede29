/* The zarr/ group of an array directory (README, "Zarr"): a Zarr v2 group
 * holding the array and its coordinate variables, each chunk key a file
 * whose bytes are that chunk's bytes in the .xta.
 *
 * Layout at the mount point (only in the array directory, not in views: a
 * Zarr chunk is the array's chunk, which a view does not have):
 *
 *   A/zarr/.zgroup .zattrs .zmetadata
 *   A/zarr/A/.zarray .zattrs i.j.k ...    the array
 *   A/zarr/lat/.zarray .zattrs i ...      a coordinate variable, cut to
 *                                         dimension lat's length
 *
 * The metadata comes from libcore (format_zarr.c, written with libjansson)
 * and is cached per array until an .xmd of the group changes, so a stat
 * formats nothing.  A chunk key reads with one pread at the chunk's F*
 * address.  Keys and metadata go through the kernel's page cache, kept
 * across opens while unchanged (zfile_cache, drxfs_kcache.c).  Writes:
 * zarr-python's DirectoryStore writes a temporary file beside the key and
 * renames it over the key; the temporary is held here (at most one
 * chunk's bytes) and the rename stores it in place
 * (drx_zarr_chunk_store: one pwrite under the span lock).  A rename over a
 * metadata file is accepted only when it changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drxfs_zarr_i.h"

static void zsig_of(struct zsig *s, const struct stat *st)
{
    memset(s, 0, sizeof *s);
    if (!st)
        return;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtim = st->st_mtim;
    s->ctim = st->st_ctim;
}

void zctx_close(struct zctx *zc)
{
    for (int d = 0; d < DRX_MAX_RANK; d++)
        drxfs_arr_put(zc->cand[d]);
    for (int i = 0; i < zc->nvars; i++) {
        if (zc->locked[i])
            drxfs_arr_unlock(zc->arr[i]);
        drxfs_arr_put(zc->arr[i]);
    }
    zc->nvars = 0;
}

/* Why coordinate cm does not qualify for dimension d of m, or NULL. */
static const char *coord_why(const struct drx_array_meta *cm, const struct drx_array_meta *m, int d)
{
    if (cm->rank != 1)
        return "it is not 1-D";
    if (drx_type_is_complex(cm->type))
        return "netCDF has no complex type (the same rule for data.nc and zarr/)";
    if (cm->bounds[0] < m->bounds[d])
        return "it is shorter than the dimension";
    return NULL;
}

/* The candidate node for dimension name dn beside array node n: its .xmd
 * stat in cn->st; false when there is none (or it is n itself). */
static bool coord_node(const struct drxfs_node *n, const char *dn, struct drxfs_node *cn)
{
    const char *slash = strrchr(n->rel, '/');
    int dirlen = slash ? (int)(slash - n->rel + 1) : 0;
    char xmd[PATH_MAX];
    int len;

    memset(cn, 0, sizeof *cn);
    len = snprintf(cn->rel, sizeof cn->rel, "%.*s%s", dirlen, n->rel, dn);
    if (len < 0 || (size_t)len >= sizeof cn->rel || strcmp(cn->rel, n->rel) == 0 ||
        drxfs_rel_suffix(xmd, cn->rel, DRXFS_XMD) < 0 ||
        drx_store_entry_stat(drxfs.store, xmd, &cn->st) < 0 || !S_ISREG(cn->st.st_mode))
        return false;
    cn->kind = DRXFS_ARRAY;
    return true;
}

/* The handle of the candidate for named dimension d, taken while no lock
 * is held: drxfs_arr_get may take a handle's write lock to reload it, and
 * doing so while holding another's read lock could deadlock with a thread
 * doing the same the other way round.  Its .xmd's stat goes into the
 * group's signature whether it qualifies or not. */
static void zctx_candidate(struct zctx *zc, const struct drxfs_node *n, int d)
{
    struct drxfs_node *cn = malloc(sizeof *cn);

    zsig_of(&zc->sig[zc->nsig], NULL);
    if (cn && coord_node(n, zc->dim[d], cn)) {
        zsig_of(&zc->sig[zc->nsig], &cn->st);
        if (drxfs_arr_get(cn, &zc->cand[d]) < 0)
            drx_log(DRX_LOG_DEBUG, "%s: %s does not open", n->rel, cn->rel);
    }
    zc->nsig++;
    free(cn);
}

/* Candidate d (its handle taken) becomes a variable of zc when it is a 1-D
 * array at least as long as the dimension; one left out is logged (at info
 * when opening a file, else at debug: stat comes often).  zc->var[0]'s
 * lock is held. */
static void zctx_coord(struct zctx *zc, const struct drxfs_node *n, int d, bool opening)
{
    const struct drx_array_meta *m = zc->var[0].meta, *cm;
    const char *dn = zc->dim[d], *why;
    int i = zc->nvars;

    zc->arr[i] = zc->cand[d];
    zc->cand[d] = NULL;
    if (zctx_find(zc, dn) > 0) {
        drxfs_arr_put(zc->arr[i]);
        zc->arr[i] = NULL;
        return;
    }
    zc->a[i] = drxfs_arr_rdlock(zc->arr[i]);
    cm = drx_array_meta(zc->a[i]);
    if ((why = coord_why(cm, m, d)) ||
        (why = drxfs_coord_refusal(n->rel, drxfs_arr_key(zc->arr[i])))) {
        drx_log_ratelimited(opening ? DRX_LOG_INFO : DRX_LOG_DEBUG,
                            "%s: %s is not dimension %s's coordinate: %s", n->rel,
                            drxfs_arr_key(zc->arr[i]), dn, why);
        drxfs_arr_unlock(zc->arr[i]);
        drxfs_arr_put(zc->arr[i]);
        zc->arr[i] = NULL;
        return;
    }
    zc->locked[i] = true;
    zc->nvars++;
    snprintf(zc->name[i], sizeof zc->name[i], "%s", dn);
    zc->var[i] = (struct drx_zarr_var){.name = zc->name[i], .meta = cm, .coord = true};
    zc->var[i].shape[0] = m->bounds[d];
    zc->var[i].dims[0] = zc->dim[d];
}

/* Dimension names of the array of zc->arr[0] into zc->dim (dimK when
 * unnamed), named[d] for the named ones; its rank. */
static int zctx_dims(struct zctx *zc, bool *named)
{
    const struct drx_array_meta *m = drx_array_meta(drxfs_arr_rdlock(zc->arr[0]));
    int rank = m->rank;

    for (int d = 0; d < rank; d++) {
        named[d] = m->dim_name[d][0] != '\0';
        if (named[d])
            snprintf(zc->dim[d], sizeof zc->dim[d], "%s", m->dim_name[d]);
        else
            snprintf(zc->dim[d], sizeof zc->dim[d], "dim%d", d);
    }
    drxfs_arr_unlock(zc->arr[0]);
    return rank;
}

/* The group of array node n: its handle and its coordinates' handles, each
 * under its read lock until zctx_close. */
int zctx_open(struct zctx *zc, const struct drxfs_node *n, bool opening)
{
    const struct drx_array_meta *m;
    const char *base = strrchr(n->rel, '/');
    bool named[DRX_MAX_RANK];
    int rc, rank;

    memset(zc, 0, sizeof *zc);
    if ((rc = drxfs_arr_get(n, &zc->arr[0])) < 0)
        return rc;
    zc->nvars = 1;
    rank = zctx_dims(zc, named);
    zsig_of(&zc->sig[0], &n->st);
    zc->nsig = 1;
    /* a chunk key needs only its own variable: no coordinate candidate
     * of another name is looked at (and no document is made from zc) */
    if (n->zlevel == ZL_FILE && n->zvar[0] && n->zname[0] != '.')
        zc->only = n->zvar;
    for (int d = 0; d < rank; d++)
        if (named[d] && (!zc->only || strcmp(zc->only, zc->dim[d]) == 0))
            zctx_candidate(zc, n, d);
    /* names and rank never change; the rest is read under the lock */
    zc->a[0] = drxfs_arr_rdlock(zc->arr[0]);
    m = drx_array_meta(zc->a[0]);
    zc->locked[0] = true;
    snprintf(zc->name[0], sizeof zc->name[0], "%.255s", base ? base + 1 : n->rel);
    /* a 1-D array named as its dimension is that dimension's coordinate
     * (no fill_value, as in other arrays' zarr/ and in data.nc) */
    zc->var[0] = (struct drx_zarr_var){
        .name = zc->name[0], .meta = m, .coord = rank == 1 && strcmp(zc->dim[0], zc->name[0]) == 0};
    for (int d = 0; d < rank; d++) {
        zc->var[0].shape[d] = m->bounds[d];
        zc->var[0].dims[d] = zc->dim[d];
    }
    for (int d = 0; d < rank; d++)
        if (zc->cand[d])
            zctx_coord(zc, n, d, opening);
    return 0;
}

int zctx_find(const struct zctx *zc, const char *var)
{
    for (int i = 0; i < zc->nvars; i++)
        if (strcmp(zc->name[i], var) == 0)
            return i;
    return -1;
}

/* ---- the metadata documents, cached per array and generation ---- */

enum { DOC_ZARRAY, DOC_ZATTRS };

struct zdocs {
    struct zdocs *next;
    char *rel;
    struct zsig sig[ZMAX];
    int nsig, nvars;
    char *name[ZMAX];
    char *doc[ZMAX][2];
    char *zmetadata, *zgroup, *gattrs;
    size_t bytes; /* of the texts above */
};

/* Groups whose documents are kept, the one in use first: at most
 * ZDOCS_MAX of them, and beside the first at most ZDOCS_BYTES of text (an
 * .xmd near its 64 MiB bound makes a group of about 134 MB: sixteen such,
 * kept, held 2 GB of the daemon).  A group past the bound is made again
 * at its next use. */
#define ZDOCS_MAX 16
#define ZDOCS_BYTES ((size_t)64 << 20)

static struct {
    pthread_mutex_t mutex;
    struct zdocs *head;
} docs = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static void zdocs_free(struct zdocs *z)
{
    if (!z)
        return;
    for (int i = 0; i < z->nvars; i++) {
        free(z->name[i]);
        free(z->doc[i][0]);
        free(z->doc[i][1]);
    }
    free(z->zmetadata);
    free(z->zgroup);
    free(z->gattrs);
    free(z->rel);
    free(z);
}

/* Formats every document of the group zc (its locks held). */
static struct zdocs *zdocs_build(const struct zctx *zc, const char *rel)
{
    struct zdocs *z = calloc(1, sizeof *z);
    bool ok;

    if (!z)
        return NULL;
    z->nvars = zc->nvars;
    z->nsig = zc->nsig;
    memcpy(z->sig, zc->sig, sizeof z->sig);
    z->rel = strdup(rel);
    z->zmetadata = drx_zarr_zmetadata(zc->var, zc->nvars);
    z->zgroup = drx_zarr_zgroup();
    z->gattrs = drx_zarr_group_zattrs();
    ok = z->rel && z->zmetadata && z->zgroup && z->gattrs;
    for (int i = 0; i < zc->nvars; i++) {
        z->name[i] = strdup(zc->name[i]);
        z->doc[i][DOC_ZARRAY] = drx_zarr_zarray(&zc->var[i]);
        z->doc[i][DOC_ZATTRS] = drx_zarr_zattrs(&zc->var[i]);
        ok = ok && z->name[i] && z->doc[i][0] && z->doc[i][1];
    }
    if (!ok) {
        drx_log_ratelimited(DRX_LOG_WARNING,
                            "%s: zarr metadata could not be made (a JSON value failed)", rel);
        zdocs_free(z);
        return NULL;
    }
    z->bytes = strlen(z->zmetadata) + strlen(z->zgroup) + strlen(z->gattrs);
    for (int i = 0; i < z->nvars; i++)
        z->bytes += strlen(z->doc[i][0]) + strlen(z->doc[i][1]);
    return z;
}

/* The text of document `file` ("", or a variable's name, then ".zarray",
 * ...) of group zc: a malloc'ed copy in *text when text is not NULL, its
 * length in *len.  -ENOENT when there is no such document. */
/* The cached documents of group zc, moved to the front; rebuilt when an
 * .xmd of the group changed.  NULL when they could not be made.  The
 * mutex is held. */
static struct zdocs *zdocs_current(const struct zctx *zc, const char *rel)
{
    struct zdocs *z, **pp;
    int count = 0;

    for (pp = &docs.head; (z = *pp); pp = &z->next)
        if (strcmp(z->rel, rel) == 0)
            break;
    if (z) {
        *pp = z->next;
        if (z->nsig != zc->nsig || memcmp(z->sig, zc->sig, sizeof z->sig) != 0) {
            zdocs_free(z);
            z = NULL;
        }
    }
    bool built = !z;
    if (built && !(z = zdocs_build(zc, rel)))
        return NULL;
    z->next = docs.head;
    docs.head = z;
    size_t kept = 0;
    for (pp = &z->next; *pp;) {
        struct zdocs *old = *pp;
        if (count + 1 < ZDOCS_MAX && kept + old->bytes <= ZDOCS_BYTES) {
            count++;
            kept += old->bytes;
            pp = &old->next;
        } else {
            *pp = old->next;
            zdocs_free(old);
        }
    }
    if (built)
        drx_log(DRX_LOG_DEBUG, "%s/zarr: metadata made, %zu bytes; %d other groups kept, %zu bytes",
                rel, z->bytes, count, kept);
    return z;
}

static const char *zdocs_pick(const struct zdocs *z, const char *var, const char *file)
{
    if (!var[0])
        return strcmp(file, ".zgroup") == 0      ? z->zgroup
               : strcmp(file, ".zattrs") == 0    ? z->gattrs
               : strcmp(file, ".zmetadata") == 0 ? z->zmetadata
                                                 : NULL;
    for (int i = 0; i < z->nvars; i++)
        if (strcmp(z->name[i], var) == 0)
            return strcmp(file, ".zarray") == 0   ? z->doc[i][DOC_ZARRAY]
                   : strcmp(file, ".zattrs") == 0 ? z->doc[i][DOC_ZATTRS]
                                                  : NULL;
    return NULL;
}

int zdoc_get(const struct zctx *zc, const char *rel, const char *var, const char *file, char **text,
             size_t *len)
{
    struct zdocs *z;
    const char *src = NULL;
    int rc = 0;

    struct stat xst;

    if (zc->only)
        return -EIO; /* a partial group: its signature is not the group's */
    /* the documents are kept by the signature of the .xmd resolved by
     * name (zc->sig[0]) and made from the handle's metadata: of the same
     * file, else a rename behind the mount between the two (a user's
     * array swapped for root's) kept one array's attributes under the
     * other's signature, for every later reader of that one.  Another
     * file: made from the handle for this caller alone, not kept.  Not
     * ESTALE, which open(2) does not retry: an attribute set replaces the
     * .xmd, and with `drx attr set` in a loop nearly every read of zarr/
     * metadata (xarray.open_zarr) failed so. */
    int xfd = drx_array_xmd_fd(zc->a[0]);
    bool keep = xfd >= 0 && fstat(xfd, &xst) == 0 && xst.st_ino == zc->sig[0].ino &&
                xst.st_dev == zc->sig[0].dev;
    pthread_mutex_lock(&docs.mutex);
    if (!(z = keep ? zdocs_current(zc, rel) : zdocs_build(zc, rel)))
        rc = -EIO;
    else if (!(src = zdocs_pick(z, var, file)))
        rc = -ENOENT;
    if (src) {
        *len = strlen(src);
        if (text && !(*text = strdup(src)))
            rc = -ENOMEM;
    }
    if (!keep)
        zdocs_free(z);
    pthread_mutex_unlock(&docs.mutex);
    return rc;
}

bool zarr_is_meta_name(const char *var, const char *file)
{
    if (!var[0])
        return strcmp(file, ".zgroup") == 0 || strcmp(file, ".zattrs") == 0 ||
               strcmp(file, ".zmetadata") == 0;
    return strcmp(file, ".zarray") == 0 || strcmp(file, ".zattrs") == 0;
}

/* ---- nodes ---- */

/* The store-relative name of a zarr node, ARRAY/zarr/[VAR/]NAME: the key of
 * its temporary file, and what log lines say. */
int zkey(const struct drxfs_node *n, const char *var, const char *name, char *out, size_t len)
{
    int w = snprintf(out, len, "%s/zarr/%s%s%s", n->rel, var, var[0] ? "/" : "", name);
    return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

bool drxfs_zarr_name_ok(const char *rel)
{
    static const char *const keys[] = {".zgroup", ".zattrs", ".zarray", ".zmetadata"};
    const char *base = strrchr(rel, '/');

    base = base ? base + 1 : rel;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(base, keys[i]) == 0)
            return false;
    return true;
}

int drxfs_zarr_step(struct drxfs_node *n, const char *name)
{
    size_t len = strlen(name);

    if (n->zlevel == ZL_FILE)
        return -ENOTDIR;
    if (len > NAME_MAX)
        return -ENAMETOOLONG;
    if (n->zlevel == ZL_GROUP && !zarr_is_meta_name("", name) && !ztemp_exists(n, "", name)) {
        memcpy(n->zvar, name, len + 1);
        n->zlevel = ZL_VAR;
        return 0;
    }
    memcpy(n->zname, name, len + 1);
    n->zlevel = ZL_FILE;
    return 0;
}

/* What node n (not a temporary file) is in group zc.  -ENOENT when nothing. */
int zclassify(const struct drxfs_node *n, const struct zctx *zc, struct zinfo *zi)
{
    zi->var = n->zvar[0] ? zctx_find(zc, n->zvar) : -1;
    if (n->zvar[0] && zi->var < 0)
        return -ENOENT;
    if (n->zlevel != ZL_FILE) {
        zi->what = n->zlevel == ZL_GROUP ? ZW_GROUP_DIR : ZW_VAR_DIR;
        return 0;
    }
    if (zarr_is_meta_name(n->zvar, n->zname)) {
        zi->what = ZW_META;
        return 0;
    }
    if (zi->var >= 0 && drx_zarr_key_parse(&zc->var[zi->var], n->zname, &zi->q) == 0) {
        zi->what = ZW_KEY;
        return 0;
    }
    return -ENOENT;
}

/* *t becomes the later of *t and u. */
static void time_latest(struct timespec *t, const struct timespec *u)
{
    if (u->tv_sec > t->tv_sec || (u->tv_sec == t->tv_sec && u->tv_nsec > t->tv_nsec))
        *t = *u;
}

/* A metadata document is made from every .xmd of the group (a coordinate's
 * .zarray has the array's length of its dimension): its times are the
 * latest of those files' and the .xta's, so that what compares times
 * (rsync -a, make, find -newer) sees an attribute or an extension of any
 * of them, not only a write of the .xta. */
static void zmeta_times(const struct zctx *zc, struct stat *st)
{
    for (int i = 0; i < zc->nsig; i++) {
        time_latest(&st->st_mtim, &zc->sig[i].mtim);
        time_latest(&st->st_ctim, &zc->sig[i].ctim);
    }
}

int zstat(const struct drxfs_node *n, const struct zctx *zc, const struct zinfo *zi,
          struct stat *st)
{
    int i = zi->var >= 0 ? zi->var : 0;
    size_t len = 0;
    int rc;

    if (fstat(drx_array_xta_fd(zc->a[i]), st) < 0)
        return -EIO;
    st->st_nlink = 1;
    st->st_blksize = DRXFS_DATA_BLKSIZE;
    switch (zi->what) {
    case ZW_GROUP_DIR:
    case ZW_VAR_DIR:
        st->st_mode = S_IFDIR | (st->st_mode & 0777) | ((st->st_mode & 0444) >> 2);
        st->st_nlink = 2;
        st->st_size = 0;
        break;
    case ZW_META:
        if ((rc = zdoc_get(zc, n->rel, n->zvar, n->zname, NULL, &len)) < 0)
            return rc;
        st->st_mode = S_IFREG | (st->st_mode & 0666);
        st->st_size = (off_t)len;
        zmeta_times(zc, st);
        break;
    case ZW_KEY:
        st->st_mode = S_IFREG | (st->st_mode & 0666);
        st->st_size = (off_t)drx_array_meta(zc->a[i])->chunk_bytes;
        break;
    }
    st->st_blocks = (st->st_size + 511) / 512;
    if (drxfs.ro || !drxfs_arr_writable(zc->arr[i]))
        st->st_mode &= ~(mode_t)0222;
    return 0;
}

/* The temporary file node n is (held: ztemp_put), or NULL. */
static struct ztemp *temp_of(const struct drxfs_node *n)
{
    char key[ZKEY_MAX];

    if (n->zlevel != ZL_FILE || zkey(n, n->zvar, n->zname, key, sizeof key) != 0)
        return NULL;
    return ztemp_get(key);
}

int drxfs_zarr_getattr(const struct drxfs_node *n, struct stat *st)
{
    struct zctx zc;
    struct zinfo zi;
    struct ztemp *t;
    int rc;

    if ((t = temp_of(n))) {
        ztemp_stat(t, st);
        ztemp_put(t);
        return 0;
    }
    if ((rc = zctx_open(&zc, n, false)) < 0)
        return rc;
    if ((rc = zclassify(n, &zc, &zi)) == 0)
        rc = zstat(n, &zc, &zi, st);
    zctx_close(&zc);
    return rc;
}

int drxfs_zarr_getacl(const struct drxfs_node *n, char *value, size_t size)
{
    struct zctx zc;
    struct zinfo zi;
    struct ztemp *t;
    int rc;

    /* a temporary is the daemon's, made with its creator's mode alone */
    if ((t = temp_of(n))) {
        ztemp_put(t);
        return -ENODATA;
    }
    if ((rc = zctx_open(&zc, n, false)) < 0)
        return rc;
    if ((rc = zclassify(n, &zc, &zi)) == 0) {
        /* mapped as zstat maps the .xta's mode */
        int i = zi.var >= 0 ? zi.var : 0;
        struct drxfs_acl_map map = {zi.what == ZW_GROUP_DIR || zi.what == ZW_VAR_DIR, 7};
        if (!map.dir)
            map.keep = 6;
        if (drxfs.ro || !drxfs_arr_writable(zc.arr[i]))
            map.keep &= ~2u;
        rc = drxfs_acl_of_fd(drx_array_xta_fd(zc.a[i]), map, value, size);
    }
    zctx_close(&zc);
    return rc;
}

/* ---- open files ---- */

static void zfile_free(struct drxfs_zfile *zf)
{
    if (!zf)
        return;
    ztemp_put(zf->t);
    drxfs_arr_put(zf->arr);
    free(zf);
}

static int fh_new(struct fuse_file_info *fi, struct drxfs_zfile *zf, char *text, size_t len)
{
    struct drxfs_fh *fh = calloc(1, sizeof *fh);

    if (!fh) {
        zfile_free(zf);
        free(text);
        return -ENOMEM;
    }
    fh->kind = DRXFS_ZARR;
    fh->fd = -1;
    fh->zf = zf;
    fh->text = text;
    fh->text_len = len;
    /* temporaries live here and are never cached; keys and metadata are
     * until zfile_cache says otherwise */
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->fh = (uint64_t)(uintptr_t)fh;
    return 0;
}

/* FNV-1a of len bytes at p, from h (0: the offset basis); never 0. */
static uint64_t zhash(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    if (!h)
        h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h ? h : 1;
}

/* A chunk key or metadata file was opened at mount path: may the kernel
 * keep the pages of earlier opens?  key is the store object whose changes
 * the kernel cache records follow (drxfs_kcache.c): a chunk key's own
 * variable (a coordinate variable's keys are its array's, so a change of
 * that array, through any path or by another process, drops them), the
 * group's array for metadata.  page_sig is what the bytes are made of (0:
 * the key's signature: its .xmd, .xta and the mount's writes to it; a
 * metadata file: its text, which covers every array of the group); shape
 * what a file opened earlier keeps reading (the chunk's place in its
 * .xta; the text).  Without the kernel cache, direct_io as before. */
static void zfile_cache(const char *path, const char *key, uint64_t page_sig, uint64_t shape,
                        struct fuse_file_info *fi)
{
    struct drxfs_fh *fh = drxfs_fh_of(fi);

    if (!drxfs_kc_active())
        return;
    if (!(fh->kpath = strdup(path)) || !(fh->kkey = strdup(key))) {
        free(fh->kpath);
        fh->kpath = NULL;
        return;
    }
    uint64_t sig = drxfs_kc_sig_of(DRXFS_ZARR, key, NULL);
    struct drxfs_kc_opener who = {fh, -1};
    int rc = drxfs_kc_open(key, path, sig, page_sig ? page_sig : sig, shape, &who);
    fh->kcounted = rc >= 0;
    fi->keep_cache = rc == 1;
    fi->direct_io = rc < 0; /* files of another text or place are open */
}

int zarr_open_temp(struct ztemp *t, struct fuse_file_info *fi)
{
    struct drxfs_zfile *zf = calloc(1, sizeof *zf);

    if (!zf) {
        ztemp_put(t);
        return -ENOMEM;
    }
    zf->t = t;
    zf->what = ZW_META;
    ztemp_stat(t, &zf->st);
    if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY)
        ztemp_truncate(t, 0);
    return fh_new(fi, zf, NULL, 0);
}

/* 0 when the caller may have every bit of want of the file at fd, store
 * entry rel with suffix, and reaches it; -ESTALE when the name leads to
 * another file or none now; else -EACCES. */
static int zfile_may(int fd, const char *rel, const char *suffix, unsigned want)
{
    char name[PATH_MAX];
    struct stat st;
    int rc;

    if (fd < 0 || fstat(fd, &st) < 0 || !drxfs_caller_may_fd(fd, &st, want) ||
        drxfs_rel_suffix(name, rel, suffix) < 0)
        return -EACCES;
    if ((rc = drxfs_caller_reach(name, &st)) == -ESTALE || rc == -ENOENT)
        return -ESTALE;
    return rc < 0 ? -EACCES : 0;
}

/* 0 when the caller may read variable i of group zc, whose .xta's mode
 * its zarr/ nodes show, and reaches that .xta (the directories on its
 * way), and for its metadata (meta) the .xmd it was read from too, else
 * -EACCES (logged); root may all.  The kernel checked the node it holds,
 * whose array a rename behind the mount may have made another user's
 * since (drxfs_array.c, drxfs_arr_caller_may): checked again on the
 * files the handle read, whose .xmd a reload by name can have taken from
 * another array of the same type and chunks than its .xta.  Its lock is
 * held.  -ESTALE (not logged) when a name leads to another file or none
 * now. */
static int zcaller_may(const struct zctx *zc, int i, bool meta, const char *path)
{
    const char *key = drxfs_arr_key(zc->arr[i]);

    int rc;

    if (fuse_get_context()->uid == 0)
        return 0;
    if ((rc = zfile_may(drx_array_xta_fd(zc->a[i]), key, DRXFS_XTA, 4)) == 0 && meta)
        rc = zfile_may(drx_array_xmd_fd(zc->a[i]), key, DRXFS_XMD, 4);
    /* the name leads to another array or none now (an attribute set, or
     * removed and made anew, behind the mount, by anyone): taken anew
     * (drxfs_zarr_open), not refused */
    if (rc == 0 || rc == -ESTALE)
        return rc;
    drx_log_ratelimited(DRX_LOG_WARNING,
                        "%s: replaced behind the mount by an array the caller (uid %u) may not "
                        "read so: refused",
                        path ? path : key, (unsigned)fuse_get_context()->uid);
    return -EACCES;
}

/* Opens metadata file n of group zc (read-only) at mount path: of
 * variable i (0: of the group), whose mode it shows. */
static int open_meta(const char *path, const struct drxfs_node *n, struct zctx *zc, int i,
                     struct drxfs_zfile *zf, struct fuse_file_info *fi)
{
    char *text = NULL;
    size_t len = 0;
    int rc;

    if ((rc = zcaller_may(zc, i, true, path)) < 0 ||
        (rc = zdoc_get(zc, n->rel, n->zvar, n->zname, &text, &len)) < 0) {
        zfile_free(zf);
        return rc;
    }
    zf->st.st_size = (off_t)len;
    uint64_t h = zhash(0, text, len);
    if ((rc = fh_new(fi, zf, text, len)) == 0)
        zfile_cache(path, drxfs_arr_key(zc->arr[0]), h, h, fi);
    return rc;
}

/* Opens chunk key n, variable i of group zc (read-only) at mount path. */
static int open_key(const char *path, struct zctx *zc, int i, uint64_t q, struct drxfs_zfile *zf,
                    struct fuse_file_info *fi)
{
    const struct drx_array_meta *m = drx_array_meta(zc->a[i]);
    int rc;

    /* the key shows its variable's .xta, which the kernel checked as it
     * held it: checked again on the one read */
    if ((rc = zcaller_may(zc, i, false, path)) < 0) {
        zfile_free(zf);
        return rc;
    }
    zf->bytes = m->chunk_bytes;
    zf->addr = q * m->chunk_bytes;
    zf->es = m->elem_size;
    memcpy(zf->fill, m->fill, m->elem_size);
    zf->fd = drx_array_xta_fd(zc->a[i]);
    /* the file keeps the variable's handle (and so its .xta) */
    zf->arr = zc->arr[i];
    drxfs_arr_unlock(zc->arr[i]);
    zc->locked[i] = false;
    zc->arr[i] = NULL;
    uint64_t place[3] = {(uint64_t)zf->st.st_dev, (uint64_t)zf->st.st_ino, zf->addr};
    if ((rc = fh_new(fi, zf, NULL, 0)) == 0)
        zfile_cache(path, drxfs_arr_key(zf->arr), 0, zhash(0, place, sizeof place), fi);
    return rc;
}

/* Opens metadata or a chunk key of group zc (read-only). */
static int open_node(const char *path, const struct drxfs_node *n, struct zctx *zc,
                     const struct zinfo *zi, struct fuse_file_info *fi)
{
    struct drxfs_zfile *zf = calloc(1, sizeof *zf);
    int rc;

    if (!zf)
        return -ENOMEM;
    /* opened read-only, and its flush does nothing: the kernel need not
     * ask (one round trip less for each key a reader opens) */
    fi->noflush = 1;
    zf->what = zi->what;
    if ((rc = zstat(n, zc, zi, &zf->st)) < 0)
        goto fail;
    if (zi->what == ZW_META)
        return open_meta(path, n, zc, zi->var >= 0 ? zi->var : 0, zf, fi);
    if (zi->what == ZW_KEY)
        return open_key(path, zc, zi->var, zi->q, zf, fi);
    rc = -EISDIR;
fail:
    zfile_free(zf);
    return rc;
}

/* once(n, arg) again, on n as the name's .xmd is now, while it says
 * -ESTALE (a name that leads to another file or none by zcaller_may's
 * check), REACH_TRIES times in all: each try checked in full. */
static int zfresh(const struct drxfs_node *n, int (*once)(const struct drxfs_node *, void *),
                  void *arg)
{
    struct drxfs_node *cur = NULL;
    int rc;

    for (int tries = 1;; tries++) {
        char xmd[PATH_MAX];
        rc = once(cur ? cur : n, arg);
        if (rc != -ESTALE || tries == REACH_TRIES)
            break;
        if (!cur) {
            if (!(cur = malloc(sizeof *cur))) {
                rc = -ENOMEM;
                break;
            }
            memcpy(cur, n, sizeof *cur);
        }
        if (drxfs_rel_suffix(xmd, cur->rel, DRXFS_XMD) < 0 ||
            drx_store_entry_stat(drxfs.store, xmd, &cur->st) < 0)
            break;
    }
    free(cur);
    return rc;
}

struct zopen_arg {
    const char *path;
    struct fuse_file_info *fi;
};

static int zarr_open_once(const struct drxfs_node *n, void *arg);

int drxfs_zarr_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    struct ztemp *t;

    if ((t = temp_of(n)))
        return zarr_open_temp(t, fi);
    /* a file of an array whose .xmd or .xta the name no longer leads to:
     * a user who may read it was refused (EACCES) 70 opens of .zmetadata
     * in 1000 while root ran drx attr set on it behind the mount */
    return zfresh(n, zarr_open_once, &(struct zopen_arg){path, fi});
}

/* drxfs_zarr_open's one try, n's handles taken as it was resolved. */
static int zarr_open_once(const struct drxfs_node *n, void *arg)
{
    const char *path = ((struct zopen_arg *)arg)->path;
    struct fuse_file_info *fi = ((struct zopen_arg *)arg)->fi;
    struct zctx zc;
    struct zinfo zi;
    int rc;

    /* why a coordinate is left out is logged at info when metadata is
     * opened (once per client open of the group), not for every chunk */
    if ((rc = zctx_open(&zc, n, n->zlevel == ZL_FILE && n->zname[0] == '.')) < 0)
        return rc;
    if ((rc = zclassify(n, &zc, &zi)) == 0 && zi.what != ZW_META && zi.what != ZW_KEY)
        rc = -EISDIR;
    if (rc == 0 && (fi->flags & O_ACCMODE) != O_RDONLY) {
        drx_log_ratelimited(
            DRX_LOG_INFO,
            "%s/zarr/%s/%s: not opened for writing: write a temporary file beside it and "
            "rename it over the key (as zarr's DirectoryStore does)",
            n->rel, n->zvar, n->zname);
        rc = -EPERM;
    }
    if (rc == 0)
        rc = open_node(path, n, &zc, &zi, fi);
    zctx_close(&zc);
    return rc;
}

/* Bytes of the chunk past the end of the .xta (a crash cut it short)
 * read as the fill. */
static void fill_tail(const struct drxfs_zfile *zf, char *buf, uint64_t at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)zf->fill[(at + i) % zf->es];
}

int drxfs_zarr_read(struct drxfs_fh *fh, char *buf, size_t size, off_t off)
{
    struct drxfs_zfile *zf = fh->zf;
    uint64_t uoff = (uint64_t)off;
    size_t n = 0;

    if (off < 0)
        return -EINVAL;
    if (zf->t)
        return ztemp_read(zf->t, buf, size, uoff);
    if (zf->what == ZW_META) {
        if (uoff < fh->text_len) {
            n = fh->text_len - (size_t)uoff < size ? fh->text_len - (size_t)uoff : size;
            memcpy(buf, fh->text + uoff, n);
        }
        return (int)n;
    }
    if (uoff >= zf->bytes)
        return 0;
    if (size > zf->bytes - uoff)
        size = (size_t)(zf->bytes - uoff);
    /* one pread at the chunk's address */
    ssize_t got = pread(zf->fd, buf, size, (off_t)(zf->addr + uoff));
    if (got < 0)
        return -errno;
    if ((size_t)got < size)
        fill_tail(zf, buf + got, uoff + (uint64_t)got, size - (size_t)got);
    return (int)size;
}

int drxfs_zarr_fgetattr(struct drxfs_fh *fh, struct stat *st)
{
    struct drxfs_zfile *zf = fh->zf;

    if (zf->t) {
        ztemp_stat(zf->t, st);
        return 0;
    }
    *st = zf->st;
    return 0;
}

void drxfs_zarr_release(struct drxfs_fh *fh)
{
    zfile_free(fh->zf);
    free(fh->text);
    free(fh);
}

/* ---- listings ---- */

struct drxfs_zdir {
    int nfixed;
    char fixed[ZMAX + 3][NAME_MAX + 1]; /* metadata files, then variables */
    struct drx_array_meta m;            /* rank and chunk shape of the variable */
    struct drx_zarr_var var;            /* its keys, when listing a variable */
    uint64_t nkeys;
};

static int zarr_opendir_once(const struct drxfs_node *n, void *arg);

int drxfs_zarr_opendir(const struct drxfs_node *n, struct drxfs_zdir **out)
{
    return zfresh(n, zarr_opendir_once, out);
}

static int zarr_opendir_once(const struct drxfs_node *n, void *arg)
{
    struct drxfs_zdir **out = arg;
    struct drxfs_zdir *zd = NULL;
    struct zctx zc;
    struct zinfo zi;
    int rc;

    if ((rc = zctx_open(&zc, n, false)) < 0)
        return rc;
    if ((rc = zclassify(n, &zc, &zi)) == 0 && zi.what != ZW_GROUP_DIR && zi.what != ZW_VAR_DIR)
        rc = -ENOTDIR;
    if (rc == 0)
        rc = zcaller_may(&zc, zi.var >= 0 ? zi.var : 0, false, NULL);
    if (rc == 0 && !(zd = calloc(1, sizeof *zd)))
        rc = -ENOMEM;
    if (rc < 0)
        goto out;
    if (zi.what == ZW_GROUP_DIR) {
        static const char *const meta[] = {".zgroup", ".zattrs", ".zmetadata"};
        for (int i = 0; i < 3; i++)
            snprintf(zd->fixed[zd->nfixed++], NAME_MAX + 1, "%s", meta[i]);
        for (int i = 0; i < zc.nvars; i++)
            snprintf(zd->fixed[zd->nfixed++], NAME_MAX + 1, "%s", zc.name[i]);
    } else {
        const struct drx_array_meta *m = zc.var[zi.var].meta;
        snprintf(zd->fixed[zd->nfixed++], NAME_MAX + 1, ".zarray");
        snprintf(zd->fixed[zd->nfixed++], NAME_MAX + 1, ".zattrs");
        zd->m.rank = m->rank;
        memcpy(zd->m.chunk, m->chunk, sizeof m->chunk);
        zd->var = zc.var[zi.var];
        zd->var.meta = &zd->m;
        zd->nkeys = drx_zarr_nkeys(&zd->var);
    }
    *out = zd;
out:
    zctx_close(&zc);
    return rc;
}

int drxfs_zarr_readdir(struct drxfs_zdir *zd, const char *path, void *buf, fuse_fill_dir_t fill,
                       off_t off)
{
    struct stat st = {0};
    uint64_t total = 2 + (uint64_t)zd->nfixed + zd->nkeys;
    char name[NAME_MAX + 1];

    for (uint64_t i = off > 0 ? (uint64_t)off : 0; i < total; i++) {
        st.st_mode = S_IFREG;
        if (i < 2) {
            snprintf(name, sizeof name, "%s", i ? ".." : ".");
            st.st_mode = S_IFDIR;
        } else if (i < 2 + (uint64_t)zd->nfixed) {
            snprintf(name, sizeof name, "%s", zd->fixed[i - 2]);
            if (i >= 5 && !zd->nkeys && zd->m.rank == 0)
                st.st_mode = S_IFDIR; /* a variable of the group */
        } else if (drx_zarr_key_name(&zd->var, i - 2 - (uint64_t)zd->nfixed, name, sizeof name) <
                   0) {
            return -EIO;
        }
        /* use_ino: d_ino is the st_ino a stat of the entry gives (never 0:
         * glibc skips those) */
        st.st_ino = i < 2 ? 1 : drxfs_virtual_ino(path, name);
        if (fill(buf, name, &st, (off_t)(i + 1), 0))
            break;
    }
    return 0;
}

void drxfs_zarr_closedir(struct drxfs_zdir *zd)
{
    free(zd);
}

/* ---- the operations of the zarr/ group's nodes ---- */

static int zarr_getattr(const struct drxfs_node *n, const char *path, struct stat *st)
{
    int rc = drxfs_zarr_getattr(n, st);
    st->st_ino = drxfs_virtual_ino(path, NULL);
    return rc;
}

static int zarr_fgetattr(struct drxfs_fh *fh, const char *path, struct stat *st)
{
    int rc = drxfs_zarr_fgetattr(fh, st);
    (void)path;
    st->st_ino = fh->ino;
    return rc;
}

/* Modes, owners and times are the variable's array's (the group's array
 * for the group directory and its metadata), changed through the array,
 * not here: a chmod or chown in the group that asks what the entry shows
 * already changes nothing and succeeds, so that `chmod -R` and `chown -R`
 * over arrays, which reach zarr/ after the array's own files, go through;
 * any other is EPERM, as for a temporary. */
static int zarr_same(const struct drxfs_node *n, struct drxfs_fh *fh, struct stat *st)
{
    if (!n)
        return fh ? 1 : -EPERM; /* by its path */
    struct ztemp *t = temp_of(n);
    if (t) {
        ztemp_put(t);
        return -EPERM;
    }
    return drxfs_zarr_getattr(n, st);
}

static int zarr_chmod(const struct drxfs_node *n, struct drxfs_fh *fh, mode_t mode)
{
    struct stat st;
    int rc = zarr_same(n, fh, &st);

    if (rc != 0)
        return rc;
    return (mode & 07777) == (st.st_mode & 07777) ? 0 : -EPERM;
}

static int zarr_chown(const struct drxfs_node *n, struct drxfs_fh *fh, uid_t uid, gid_t gid)
{
    struct stat st;
    int rc = zarr_same(n, fh, &st);

    if (rc != 0)
        return rc;
    return (uid == (uid_t)-1 || uid == st.st_uid) && (gid == (gid_t)-1 || gid == st.st_gid)
               ? 0
               : -EPERM;
}

static int zarr_utimens(const struct drxfs_node *n, struct drxfs_fh *fh,
                        const struct timespec tv[2])
{
    (void)n, (void)fh, (void)tv;
    return -EPERM;
}

static int zarr_open(const char *path, const struct drxfs_node *n, struct fuse_file_info *fi)
{
    int rc = drxfs_zarr_open(path, n, fi);
    if (rc == 0)
        drxfs_fh_of(fi)->ino = drxfs_virtual_ino(path, NULL);
    return rc;
}

/* The close of a temporary's handle (before close(2) returns): its
 * buffer's slack goes back to the pool, for the user's next write. */
static int zarr_flush(struct drxfs_fh *fh)
{
    if (fh->zf)
        ztemp_trim(fh->zf->t);
    return 0;
}

/* fsync: nothing to do, a chunk is stored at the rename through the
 * array's descriptor. */
const struct drxfs_kind_ops drxfs_zarr_ops = {
    .getattr = zarr_getattr,
    .fgetattr = zarr_fgetattr,
    .chmod = zarr_chmod,
    .chown = zarr_chown,
    .utimens = zarr_utimens,
    .truncate = drxfs_zarr_truncate,
    .open = zarr_open,
    .read = drxfs_zarr_read,
    .write = drxfs_zarr_write,
    .flush = zarr_flush,
    .release = drxfs_zarr_release,
};
