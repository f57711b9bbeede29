/* libdrxmp: the handle, agreement between ranks, zones and extension
 * (drx/mp.h).  The I/O rounds are in mp_io.c.
 *
 * Every collective call has the same shape, as in mpifileutils: each rank
 * checks what it can alone, the ranks compare the arguments that must be
 * equal (a hash, reduced with MIN and MAX), and agree on the lowest status
 * with one MPI_Allreduce before anything changes on disk; only then does
 * the work start, and its outcome is agreed on again.  So every rank
 * returns the same status, and the message of the lowest failing rank is
 * everybody's drx_mp_error().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drx/store.h"
#include "drx/types.h"
#include "mp_i.h"

static _Thread_local char mp_errmsg[DRX_ERR_LEN];

const char *drx_mp_error(void)
{
    return mp_errmsg;
}

void mp_set_error(const char *msg)
{
    snprintf(mp_errmsg, sizeof(mp_errmsg), "%s", msg);
}

int mp_agree(MPI_Comm comm, int rc, const struct drx_err *err)
{
    struct {
        int rc, rank;
    } in = {rc < 0 ? rc : 0, 0}, res;
    char msg[DRX_ERR_LEN] = "";

    MPI_Comm_rank(comm, &in.rank);
    /* MINLOC: the lowest status and the lowest rank that has it, so one
     * reason is told even when every rank failed alike. */
    load_allreduce(&in, &res, 1, MPI_2INT, MPI_MINLOC, comm);
    if (res.rc >= 0)
        return 0;
    if (in.rank == res.rank)
        snprintf(msg, sizeof(msg), "%s", err && err->msg[0] ? err->msg : strerror(-res.rc));
    load_bcast(msg, sizeof(msg), MPI_CHAR, res.rank, comm);
    mp_set_error(msg);
    return res.rc;
}

/* FNV-1a: equal arguments give equal hashes; a difference is all but
 * certain to show. */
static uint64_t hash_bytes(uint64_t h, const void *buf, size_t len)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int mp_check(MPI_Comm comm, int rc, const void *buf, size_t len, const char *what,
             struct drx_err *err)
{
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, buf, len);
    /* the status biased to stay unsigned: MIN is the lowest status */
    uint64_t in[3] = {h, ~h, (uint64_t)((int64_t)rc + INT32_MAX)}, out[3];

    load_allreduce(in, out, 3, MPI_UINT64_T, MPI_MIN, comm);
    /* a rank's own failure first: its arguments may not have been taken
     * whole (a working directory it could not read) */
    if (out[2] == (uint64_t)INT32_MAX && out[0] != ~out[1])
        rc = drx_err_set(err, EINVAL, "the ranks passed different %s", what);
    else if (out[2] == (uint64_t)INT32_MAX)
        return 0;
    return mp_agree(comm, rc, err);
}

/* --- opening --- */

static void mp_free(drx_mp *a)
{
    if (!a)
        return;
    if (a->xf != MPI_FILE_NULL)
        MPI_File_close(&a->xf);
    if (a->lockfd >= 0)
        close(a->lockfd);
    drx_array_close(a->arr);
    if (a->comm != MPI_COMM_NULL)
        MPI_Comm_free(&a->comm);
    free(a->gather);
    free(a->rbuf);
    free(a->runs);
    free(a->grown);
    free(a);
}

/* Collective: a handle with its own duplicate of comm.  Every rank calls
 * MPI_Comm_dup whatever its memory says, and all agree, so that a rank
 * out of memory does not leave the others waiting.  Later failures are
 * agreed on where they happen (open_common checks gather). */
static int mp_alloc(MPI_Comm comm, drx_mp **out)
{
    MPI_Comm dup = MPI_COMM_NULL;
    int mrc = MPI_Comm_dup(comm, &dup), ok, all = 0;
    drx_mp *a = calloc(1, sizeof(*a));

    *out = NULL;
    ok = mrc == MPI_SUCCESS && a;
    if (mrc == MPI_SUCCESS)
        load_allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, dup);
    if (!all) {
        free(a);
        if (dup != MPI_COMM_NULL)
            MPI_Comm_free(&dup);
        return mrc == MPI_SUCCESS ? -ENOMEM : -EINVAL;
    }
    a->comm = dup;
    a->xf = MPI_FILE_NULL;
    a->lockfd = -1;
    a->buffer = MP_DEFAULT_BUFFER;
    MPI_Comm_rank(a->comm, &a->rank);
    MPI_Comm_size(a->comm, &a->nprocs);
    a->gather = malloc((size_t)a->nprocs * MP_GATHER_WIDTH * sizeof(*a->gather));
    *out = a;
    return 0;
}

static void mp_xta_self(const drx_mp *a, char *buf)
{
    snprintf(buf, MP_SELF_LEN, "/proc/self/fd/%d", drx_array_xta_fd(a->arr));
}

int mp_xta_open(const drx_mp *a, int flags)
{
    char self[MP_SELF_LEN];
    int fd;

    mp_xta_self(a, self);
    fd = open(self, flags | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The .xta opened collectively, with the caller's hints (info, or ours
 * when it is MPI_INFO_NULL).  Data sieving locks with classic POSIX
 * locks, which would wait forever for this process's own OFD chunk locks:
 * never on the .xta, whatever the hints say.  Collective buffering has
 * nothing to combine in whole chunks (see drx-load's hints): off by
 * default. */
static int open_xta(drx_mp *a, MPI_Info hints, struct drx_err *err)
{
    MPI_Info info;
    int rc = 0;

    if (hints != MPI_INFO_NULL) {
        MPI_Info_dup(hints, &info);
    } else {
        MPI_Info_create(&info);
        MPI_Info_set(info, "romio_ds_read", "disable");
        MPI_Info_set(info, "romio_cb_write", "disable");
        MPI_Info_set(info, "romio_cb_read", "disable");
    }
    MPI_Info_set(info, "romio_ds_write", "disable");
    /* The .xta drx_array_open checked (a regular file reached without a
     * symlink), never its path again: a user who owns the array's
     * directory could swap a symlink in between, and root's import would
     * write where it leads (mp_xta_open). */
    /* MPI-IO's name is that of lockfd, which lives as long as a->xf (the
     * array's own descriptor does not: mend() replaces the array) */
    char self[MP_SELF_LEN];
    a->lockfd = mp_xta_open(a, a->writable ? O_RDWR : O_RDONLY);
    if (a->lockfd < 0)
        rc = drx_err_set(err, -a->lockfd, "%s: %s", a->xta, strerror(-a->lockfd));
    snprintf(self, sizeof self, "/proc/self/fd/%d", a->lockfd);
    int mrc = MPI_File_open(a->comm, self, a->writable ? MPI_MODE_RDWR : MPI_MODE_RDONLY, info,
                            &a->xf);
    MPI_Info_free(&info);
    if (mrc != MPI_SUCCESS) {
        a->xf = MPI_FILE_NULL;
        if (rc == 0) {
            rc = load_mpi_err(err, mrc, "opening %s", a->xta);
            drx_err_rename(err, self, a->xta);
        }
        return rc;
    }
    MPI_File_set_errhandler(a->xf, MPI_ERRORS_RETURN);
    return rc;
}

static void mp_meta_words(const drx_mp *a, int rc, int64_t v[DRX_MAX_RANK + 2]);
static int follower_lost(drx_mp *a, const char *lost, struct drx_err *err);

/* Collective: every rank's status rc, and whether all hold the same
 * metadata (bounds and chunk count), in one reduction.  Another process
 * may extend the array between the ranks' reads of it (a simulation
 * appending steps while another program opens the array: 6 opens in 40
 * failed; or extending it between rank 0's extension and the others'
 * reads of it, or an attribute change and theirs): the ranks read it
 * again, those behind catching up, until they hold the same.  Only
 * extensions change it, so the newest holds all.  lost: what rank 0 has
 * just recorded ("the extension"), which makes a rank that cannot read
 * the metadata back broken (follower_lost); NULL when nothing is.
 * Returns the agreed status; -ESTALE ("the array changed while the ranks
 * WHAT it") when they never held the same. */
static int meta_agree(drx_mp *a, int rc, const char *lost, const char *what,
                      struct drx_err *err)
{
    for (int tries = 1;; tries++) {
        int64_t words[DRX_MAX_RANK + 2];
        mp_meta_words(a, 0, words);
        uint64_t h = hash_bytes(0xcbf29ce484222325ull, words, sizeof(words));
        uint64_t in[3] = {h, ~h, (uint64_t)((int64_t)(rc < 0 ? rc : 0) + INT32_MAX)}, out[3];

        load_allreduce(in, out, 3, MPI_UINT64_T, MPI_MIN, a->comm);
        if (out[2] != (uint64_t)INT32_MAX)
            return mp_agree(a->comm, rc, err);
        if (out[0] == ~out[1])
            return 0;
        if (tries == MP_META_TRIES) {
            rc = drx_err_set(err, ESTALE, "%s: the array changed while the ranks %s it", a->path,
                             what);
            return mp_agree(a->comm, rc, err);
        }
        if ((rc = drx_array_reload(a->arr, err)) < 0 && lost)
            rc = follower_lost(a, lost, err);
    }
}

/* Opens the array at store path a->path on every rank (collective, the
 * outcome agreed). */
static int open_common(drx_mp *a, MPI_Info hints)
{
    struct drx_err err = {{0}};
    int rc = a->gather ? drx_array_open(a->path, a->writable ? DRX_RDWR : DRX_RDONLY, &a->arr, &err)
                       : drx_err_set(&err, ENOMEM, "out of memory");

    if (rc == 0)
        snprintf(a->xta, sizeof(a->xta), "%s.xta", a->path);
    int all = mp_agree(a->comm, rc, &err);
    if (all < 0)
        return all;
    rc = open_xta(a, hints, &err);
    all = mp_agree(a->comm, rc, &err);
    if (all < 0)
        return all;
    all = meta_agree(a, 0, NULL, "opened", &err);
    if (all < 0)
        return all;
    int k = drx_array_meta(a->arr)->rank;
    memset(a->dims, 0, sizeof(a->dims));
    MPI_Dims_create(a->nprocs, k, a->dims);
    return 0;
}

/* Resolves the user's path to the store path (a path under a drxfs mount
 * maps to the store).  Through FUSE only for rank 0's request to the mount
 * to commit (bounded wait): the agreement after it (mp_check) keeps the
 * other ranks' reads after the commit. */
static int resolve(drx_mp *a, const char *path, bool write, struct drx_err *err)
{
    if (!path || !*path)
        return drx_err_set(err, EINVAL, "no array path given");
    unsigned flags = (write ? DRX_STORE_FOR_WRITE : 0) | (a->rank != 0 ? DRX_STORE_NO_COMMIT : 0);
    int rc = drx_store_resolve_path_for(NULL, path, flags, a->path, sizeof(a->path), err);
    return rc < 0 ? rc : 0;
}

/* What the ranks compare of a path: a hash of all of it (a copy cut at
 * PATH_MAX let paths differing past it through: ranks opened different
 * arrays), made absolute with the working directory when it is relative
 * (ranks in different directories named different arrays with the same
 * words: rank 0 created one, the others failed ENOENT). */
static int path_hash(const char *path, uint64_t *h, struct drx_err *err)
{
    char cwd[PATH_MAX];

    *h = hash_bytes(0xcbf29ce484222325ull, "", 1);
    if (!path)
        return 0;
    if (path[0] != '/') {
        if (!getcwd(cwd, sizeof(cwd)))
            return drx_err_set(err, errno,
                               "%s: a relative path, and this rank's working directory "
                               "cannot be told: %s",
                               path, strerror(errno));
        *h = hash_bytes(hash_bytes(*h, cwd, strlen(cwd)), "/", 1);
    }
    *h = hash_bytes(*h, path, strlen(path));
    return 0;
}

int drx_mp_open(MPI_Comm comm, const char *path, int writable, drx_mp **out)
{
    return mp_open_info(comm, path, writable, MPI_INFO_NULL, out);
}

int mp_open_info(MPI_Comm comm, const char *path, int writable, MPI_Info hints, drx_mp **out)
{
    struct drx_err err = {{0}};
    drx_mp *a;
    int rc = mp_alloc(comm, &a), all;

    if (out)
        *out = NULL;
    if (rc < 0) {
        mp_set_error("drx_mp_open: cannot duplicate the communicator or out of memory");
        return rc; /* MPI_Comm_dup is collective: every rank got here */
    }
    a->writable = writable != 0;
    /* out NULL on some ranks only fails every rank alike (it returned
     * before the agreement, and the others waited in it for ever) */
    uint64_t args[2] = {0, a->writable};
    rc = !out ? drx_err_set(&err, EINVAL, "drx_mp_open: no handle to fill (out is NULL)")
              : path_hash(path, &args[0], &err);
    if (rc == 0)
        rc = resolve(a, path, a->writable, &err);
    /* path and mode must be the same everywhere */
    all = mp_check(a->comm, rc, args, sizeof(args), "paths or modes to drx_mp_open", &err);
    if (all == 0)
        all = open_common(a, hints);
    if (all < 0) {
        mp_free(a);
        return all;
    }
    *out = a;
    return 0;
}

/* The dimension names "a,b,c" (NULL or "": none) of a rank k array into
 * spec, names[] holding them. */
static int create_dims(const char *dims, int k, struct drx_array_spec *spec,
                       char names[][DRX_MAX_DIM_NAME + 1], struct drx_err *err)
{
    int n = 1;

    if (!dims || !*dims)
        return 0;
    for (const char *p = dims; *p; p++)
        n += *p == ',';
    if (n != k)
        return drx_err_set(err, EINVAL, "dimension names '%.200s': %d for rank %d", dims, n, k);
    n = 0;
    for (const char *p = dims;; n++) {
        size_t len = strcspn(p, ",");
        if (len > DRX_MAX_DIM_NAME)
            return drx_err_set(err, EINVAL, "dimension name '%.*s...' is longer than %d bytes",
                               40, p, DRX_MAX_DIM_NAME);
        memcpy(names[n], p, len);
        names[n][len] = '\0';
        if (!drx_array_dim_name_valid(names[n]))
            return drx_err_set(err, EINVAL,
                               "'%s' is not a valid dimension name (letters, digits, _; not "
                               "order, rep or dimN)",
                               names[n]);
        spec->dim_name[n] = names[n];
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* Local checks of drx_mp_create's arguments into spec. */
static int create_spec(const char *type, int k, const int64_t shape[], const int64_t chunk[],
                       struct drx_array_spec *spec, struct drx_err *err)
{
    memset(spec, 0, sizeof(*spec));
    if (!type)
        return drx_err_set(err, EINVAL, "no element type given");
    int rc = drx_type_parse(type, &spec->type, err);
    if (rc < 0)
        return rc;
    if (k < 1 || k > DRX_MAX_RANK)
        return drx_err_set(err, EINVAL, "rank %d outside 1..%d", k, DRX_MAX_RANK);
    if (!shape || !chunk)
        return drx_err_set(err, EINVAL, "no shape or chunk shape given");
    spec->rank = k;
    for (int d = 0; d < k; d++) {
        if (shape[d] < 1 || chunk[d] < 1)
            return drx_err_set(err, EINVAL, "dimension %d: shape %lld, chunk %lld (each >= 1)", d,
                               (long long)shape[d], (long long)chunk[d]);
        spec->shape[d] = (uint64_t)shape[d];
        spec->chunk[d] = (uint64_t)chunk[d];
    }
    return 0;
}

/* What drx_mp_create's ranks must agree on, as bytes. */
struct create_args {
    uint64_t path; /* path_hash */
    char type[16];
    char dims[DRX_ARRAY_DIM_NAMES_LEN];
    int k;
    int64_t shape[DRX_MAX_RANK], chunk[DRX_MAX_RANK];
};

static int create_args_fill(struct create_args *c, const char *path, const char *type,
                            const char *dims, int k, const int64_t shape[], const int64_t chunk[],
                            struct drx_err *err)
{
    memset(c, 0, sizeof(*c));
    int rc = path_hash(path, &c->path, err);
    snprintf(c->type, sizeof(c->type), "%s", type ? type : "");
    snprintf(c->dims, sizeof(c->dims), "%s", dims ? dims : "");
    c->k = k;
    /* a k out of range is refused by create_spec; its arrays are not read
     * past what k would allow (a k of 17 with arrays of 2 compared the
     * bytes after them, which differ between ranks) */
    for (int d = 0; shape && chunk && k <= DRX_MAX_RANK && d < k; d++) {
        c->shape[d] = shape[d];
        c->chunk[d] = chunk[d];
    }
    return rc;
}

int drx_mp_create(MPI_Comm comm, const char *path, const char *type, int k, const int64_t shape[],
                  const int64_t chunk[], drx_mp **out)
{
    return drx_mp_create_dims(comm, path, type, k, shape, chunk, NULL, out);
}

int drx_mp_create_dims(MPI_Comm comm, const char *path, const char *type, int k,
                       const int64_t shape[], const int64_t chunk[], const char *dims,
                       drx_mp **out)
{
    struct drx_err err = {{0}};
    struct drx_array_spec spec;
    struct create_args args;
    char names[DRX_MAX_RANK][DRX_MAX_DIM_NAME + 1];
    drx_mp *a;
    int rc = mp_alloc(comm, &a);

    if (out)
        *out = NULL;
    if (rc < 0) {
        mp_set_error("drx_mp_create: cannot duplicate the communicator or out of memory");
        return rc;
    }
    a->writable = true;
    rc = !out ? drx_err_set(&err, EINVAL, "drx_mp_create: no handle to fill (out is NULL)")
              : create_spec(type, k, shape, chunk, &spec, &err);
    if (rc == 0)
        rc = create_dims(dims, k, &spec, names, &err);
    if (rc == 0)
        rc = resolve(a, path, true, &err);
    /* the store's own names (.drx/, NAME.xmd, ...), as drx create */
    if (rc == 0)
        rc = drx_store_path_reserved(a->path, path, &err);
    if (rc == 0)
        rc = create_args_fill(&args, path, type, dims, k, shape, chunk, &err);
    else
        (void)create_args_fill(&args, path, type, dims, k, shape, chunk, &(struct drx_err){{0}});
    int all = mp_check(a->comm, rc, &args, sizeof(args), "arguments to drx_mp_create", &err);
    /* rank 0 creates; the others open what it made */
    if (all == 0 && a->rank == 0) {
        struct drx_array *made = NULL;
        rc = drx_array_create(a->path, &spec, &made, &err);
        drx_array_close(made);
    }
    if (all == 0)
        all = mp_agree(a->comm, rc, &err);
    if (all == 0)
        all = open_common(a, MPI_INFO_NULL);
    if (all < 0) {
        mp_free(a);
        return all;
    }
    *out = a;
    return 0;
}

int drx_mp_create_f(MPI_Fint comm, const char *path, const char *type, int k, const int64_t shape[],
                    const int64_t chunk[], drx_mp **out)
{
    return drx_mp_create(MPI_Comm_f2c(comm), path, type, k, shape, chunk, out);
}

int drx_mp_create_dims_f(MPI_Fint comm, const char *path, const char *type, int k,
                         const int64_t shape[], const int64_t chunk[], const char *dims,
                         drx_mp **out)
{
    return drx_mp_create_dims(MPI_Comm_f2c(comm), path, type, k, shape, chunk, dims, out);
}

int drx_mp_create_fk(MPI_Fint comm, const char *path, const char *type, int k, int kchunk,
                     const int64_t shape[], const int64_t chunk[], const char *dims,
                     drx_mp **out)
{
    MPI_Comm c = MPI_Comm_f2c(comm);
    struct drx_err err = {{0}};
    int rc = kchunk == k ? 0
                         : drx_err_set(&err, EINVAL,
                                       "drx_mp_create: %s: chunk has %d values for a shape of %d",
                                       path, kchunk, k);

    if (out)
        *out = NULL;
    /* every rank agrees first, so that all of them go on to the create's
     * collectives or none does */
    if ((rc = mp_agree(c, rc, &err)) < 0)
        return rc;
    return drx_mp_create_dims(c, path, type, k, shape, chunk, dims, out);
}

int drx_mp_open_f(MPI_Fint comm, const char *path, int writable, drx_mp **out)
{
    return drx_mp_open(MPI_Comm_f2c(comm), path, writable, out);
}

/* This rank's metadata is not the array's since an extension: broken,
 * with why (the reason in err) for its later calls. */
static void mp_break(drx_mp *a, const struct drx_err *why)
{
    a->broken = true;
    snprintf(a->broken_why, sizeof(a->broken_why), "%s", why->msg[0] ? why->msg : "unknown");
}

/* A broken follower (a->broken) opens the array again: a fresh handle
 * holds the committed metadata, whatever its old one had grown to in
 * memory (a reload only catches up with records after what it read, on
 * top of that).  Local; a follower has nothing pending here. */
static int mend(drx_mp *a, struct drx_err *err)
{
    struct drx_array *fresh = NULL;

    if (!a->broken)
        return 0;
    int rc = drx_array_open(a->path, a->writable ? DRX_RDWR : DRX_RDONLY, &fresh, err);
    if (rc < 0)
        return rc;
    drx_array_close(a->arr);
    a->arr = fresh;
    a->broken = false;
    return 0;
}

/* Rank 0 records the pending growths (its status rc), after syncing the
 * .xta when durable; the others read them, or all forget them when rank 0
 * could not.  Agreed. */
static int commit_follow(drx_mp *a, bool durable, struct drx_err *err)
{
    int rc = a->rank != 0 ? 0
             : durable    ? drx_array_commit(a->arr, err)
                          : drx_array_commit_unsynced(a->arr, err);

    load_bcast(&rc, 1, MPI_INT, 0, a->comm);
    a->ngrown = 0; /* recorded or forgotten: none pending after this */
    if (a->rank != 0 && rc < 0) {
        drx_array_pending_drop(a->arr, &(struct drx_err){{0}});
    } else if (a->rank != 0 && (rc = drx_array_commit(a->arr, err)) < 0) {
        /* recorded by rank 0; this rank's metadata stays as it was read
         * last, which a reload would catch up on from the wrong place */
        mp_break(a, err);
        rc = drx_err_set(err, EIO,
                         "%s: the growths are recorded, but rank %d could not read them (%s); "
                         "its calls fail until drx_mp_sync opens the array again",
                         a->path, a->rank, a->broken_why);
    }
    if (rc == 0)
        rc = mend(a, err);
    return mp_agree(a->comm, rc < 0 ? rc : 0, err);
}

/* Collective: the pending growths recorded; with durable, every rank's
 * data on disk first (on a parallel file system each rank's own sync),
 * then the records that name it.  Agreed. */
static int mp_commit(drx_mp *a, bool durable)
{
    struct drx_err err = {{0}};
    int rc = 0;

    if (durable) {
        int mrc = MPI_File_sync(a->xf);
        if (mrc != MPI_SUCCESS)
            rc = load_mpi_err(&err, mrc, "syncing %s", a->xta);
        /* nothing pending in DRX_MP_SYNC_EXTEND: mended in this agreement */
        if (rc == 0 && a->sync_mode == DRX_MP_SYNC_EXTEND)
            rc = mend(a, &err);
        rc = mp_agree(a->comm, rc, &err);
    }
    if (rc == 0 && a->sync_mode != DRX_MP_SYNC_EXTEND)
        rc = commit_follow(a, durable, &err);
    return rc;
}

int drx_mp_sync(drx_mp *a)
{
    if (!a) {
        mp_set_error("drx_mp_sync: no array");
        return -EINVAL;
    }
    if (!a->writable)
        return 0;
    /* DRX_MP_SYNC_NONE: the records only, the data left to the page
     * cache (as HDF5 at H5Fclose) */
    return mp_commit(a, a->sync_mode != DRX_MP_SYNC_NONE);
}

/* How much a sync mode promises: NONE < BATCH < EXTEND. */
static int sync_rank(int mode)
{
    return mode == DRX_MP_SYNC_EXTEND ? 2 : mode == DRX_MP_SYNC_BATCH ? 1 : 0;
}

int drx_mp_set_sync(drx_mp *a, int mode)
{
    struct drx_err err = {{0}};
    if (!a) {
        mp_set_error("drx_mp_set_sync: no array");
        return -EINVAL;
    }
    int rc = mode == DRX_MP_SYNC_EXTEND || mode == DRX_MP_SYNC_BATCH || mode == DRX_MP_SYNC_NONE
                 ? 0
                 : drx_err_set(&err, EINVAL,
                               "sync mode %d: expected DRX_MP_SYNC_EXTEND, "
                               "DRX_MP_SYNC_BATCH or DRX_MP_SYNC_NONE",
                               mode);
    rc = mp_check(a->comm, rc, &mode, sizeof(mode), "sync modes to drx_mp_set_sync", &err);
    /* A mode that promises more (EXTEND > BATCH > NONE, in this order of
     * the constants' ranks below) starts from a durable state: what was
     * written and grown so far is synced and recorded first.  Towards
     * NONE nothing is synced; pending growths stay pending. */
    if (rc == 0 && sync_rank(mode) > sync_rank(a->sync_mode) && a->writable)
        rc = mp_commit(a, true);
    if (rc == 0)
        a->sync_mode = mode;
    return rc;
}

int drx_mp_close(drx_mp **ap)
{
    if (!ap || !*ap)
        return 0;
    drx_mp *a = *ap;
    /* What write_all wrote is on disk once close returns, and so are the
     * growths of DRX_MP_SYNC_BATCH; in DRX_MP_SYNC_NONE the growths are
     * recorded and the data is in the page cache. */
    int rc = drx_mp_sync(a);
    mp_free(a);
    *ap = NULL;
    return rc;
}

/* --- questions answered locally --- */

int drx_mp_rank(const drx_mp *a)
{
    if (!a) {
        mp_set_error("drx_mp_rank: no array (NULL)");
        return -EINVAL;
    }
    return drx_array_meta(a->arr)->rank;
}

/* Local calls on a broken rank: -EIO, the reason in drx_mp_error(). */
static int local_broken(const drx_mp *a)
{
    struct drx_err err = {{0}};
    int rc = mp_broken(a, &err);
    mp_set_error(err.msg);
    return rc;
}

int drx_mp_bounds(const drx_mp *a, int64_t bounds[])
{
    if (!a || !bounds) {
        mp_set_error(a ? "drx_mp_bounds: no array to fill (NULL)" : "drx_mp_bounds: no array (NULL)");
        return -EINVAL;
    }
    const struct drx_array_meta *m = drx_array_meta(a->arr);
    /* no elements rather than bounds this rank is not sure of */
    if (a->broken) {
        memset(bounds, 0, (size_t)m->rank * sizeof(bounds[0]));
        return local_broken(a);
    }
    for (int d = 0; d < m->rank; d++)
        bounds[d] = (int64_t)m->bounds[d];
    return 0;
}

size_t drx_mp_elem_size(const drx_mp *a)
{
    return a ? drx_array_meta(a->arr)->elem_size : 0;
}

int drx_mp_set_buffer(drx_mp *a, size_t bytes)
{
    if (!a || bytes == 0 || bytes > MP_MAX_BUFFER) {
        char msg[96] = "drx_mp_set_buffer: no array (NULL)";
        if (a)
            snprintf(msg, sizeof(msg), "drx_mp_set_buffer: %zu bytes outside 1..%llu", bytes,
                     (unsigned long long)MP_MAX_BUFFER);
        mp_set_error(msg);
        return -EINVAL;
    }
    a->buffer = bytes;
    return 0;
}

int drx_mp_zone(const drx_mp *a, int proc, int64_t lo[], int64_t hi[])
{
    if (!a || !lo || !hi || proc < 0 || proc >= a->nprocs) {
        char msg[96] = "drx_mp_zone: no array, or no lo or hi to fill (NULL)";
        if (a && lo && hi)
            snprintf(msg, sizeof(msg), "drx_mp_zone: process %d outside 0..%d", proc,
                     a->nprocs - 1);
        mp_set_error(msg);
        return -EINVAL;
    }
    const struct drx_array_meta *m = drx_array_meta(a->arr);
    /* the empty box: a program that goes on takes part in the collective
     * calls, which fail on every rank */
    if (a->broken) {
        memset(lo, 0, (size_t)m->rank * sizeof(lo[0]));
        memset(hi, 0, (size_t)m->rank * sizeof(hi[0]));
        return local_broken(a);
    }
    int coord[DRX_MAX_RANK], rest = proc;
    bool empty = false;

    /* row-major: the last dimension of the grid varies fastest */
    for (int d = m->rank - 1; d >= 0; d--) {
        coord[d] = rest % a->dims[d];
        rest /= a->dims[d];
    }
    for (int d = 0; d < m->rank; d++) {
        uint64_t B = m->map.bound[d], p = (uint64_t)a->dims[d], c = (uint64_t)coord[d];
        uint64_t base = B / p, extra = B % p;
        uint64_t first = c * base + (c < extra ? c : extra), n = base + (c < extra ? 1 : 0);
        uint64_t end = (first + n) * m->chunk[d];
        empty = empty || n == 0;
        lo[d] = (int64_t)(first * m->chunk[d]);
        hi[d] = (int64_t)(end < m->bounds[d] ? end : m->bounds[d]);
    }
    for (int d = 0; empty && d < m->rank; d++)
        lo[d] = hi[d] = 0;
    return 0;
}

/* --- extension --- */

int mp_broken(const drx_mp *a, struct drx_err *err)
{
    return drx_err_set(err, EIO,
                       "%s: rank %d could not read the array's metadata back (%s); "
                       "drx_mp_sync opens the array again",
                       a->path, a->rank, a->broken_why);
}

static int extend_check(const drx_mp *a, int dim, int64_t count, struct drx_err *err)
{
    int k = drx_array_meta(a->arr)->rank;
    if (!a->writable)
        return drx_err_set(err, EBADF, "%s: opened read-only", a->path);
    if (a->broken)
        return mp_broken(a, err);
    if (dim < 0 || dim >= k)
        return drx_err_set(err, EINVAL, "dimension %d outside 0..%d", dim, k - 1);
    if (count <= 0)
        return drx_err_set(err, EINVAL, "extension count %lld must be > 0", (long long)count);
    return 0;
}

/* What rank 0 recorded (lost: "the extension", "the attribute"), this
 * rank could not read (the reason in err): broken, with -EIO saying so. */
static int follower_lost(drx_mp *a, const char *lost, struct drx_err *err)
{
    mp_break(a, err);
    return drx_err_set(err, EIO,
                       "%s: %s is recorded, but rank %d could not read it (%s); "
                       "its calls fail until drx_mp_sync opens the array again",
                       a->path, lost, a->rank, a->broken_why);
}

/* After rank 0's extension (status rc there): its status goes to every
 * rank in one broadcast; the others read the new metadata, and all agree
 * that they hold the same (meta_agree).  Agreed. */
static int extend_follow(drx_mp *a, int rc, struct drx_err *err)
{
    load_bcast(&rc, 1, MPI_INT, 0, a->comm);
    if (rc < 0) /* rank 0 failed: every rank knows; its reason */
        return mp_agree(a->comm, a->rank == 0 ? rc : 0, err);
    if (a->rank != 0 && (rc = drx_array_reload(a->arr, err)) < 0)
        rc = follower_lost(a, "the extension", err);
    /* the same metadata everywhere: rank 0's, or a newer one where
     * another process extended the array since (it used to fail the call
     * with ESTALE, the extension recorded all the same) */
    return meta_agree(a, rc, "the extension", "extended", err);
}

/* Status, bounds and chunk count in words (extend_batch hashes them to
 * compare the ranks' metadata). */
static void mp_meta_words(const drx_mp *a, int rc, int64_t v[DRX_MAX_RANK + 2])
{
    const struct drx_array_meta *m = drx_array_meta(a->arr);
    memset(v, 0, (DRX_MAX_RANK + 2) * sizeof(v[0]));
    v[0] = rc;
    for (int d = 0; d < m->rank; d++)
        v[1 + d] = (int64_t)m->bounds[d];
    v[DRX_MAX_RANK + 1] = (int64_t)m->map.nchunks;
}

/* Room for one more entry in the log of pending growths, taken before
 * the growth, so that logging it after cannot fail. */
static int grown_reserve(drx_mp *a, struct drx_err *err)
{
    if (a->ngrown < a->grown_cap)
        return 0;
    size_t cap = a->grown_cap ? 2 * a->grown_cap : 64;
    int64_t(*g)[2] = realloc(a->grown, cap * sizeof(*g));
    if (!g)
        return drx_err_set(err, ENOMEM, "out of memory");
    a->grown = g;
    a->grown_cap = cap;
    return 0;
}

/* A follower's metadata made again: the committed one read again, the
 * logged pending growths redone in memory, then dim by count when count
 * > 0.  0, or -errno with why. */
static int follower_redo(drx_mp *a, int dim, int64_t count, struct drx_err *why)
{
    int rc = drx_array_pending_drop(a->arr, why);

    for (size_t i = 0; rc == 0 && i < a->ngrown; i++)
        rc = drx_array_extend_pending(a->arr, (int)a->grown[i][0], (uint64_t)a->grown[i][1], false,
                                      why);
    if (rc == 0 && count > 0)
        rc = drx_array_extend_pending(a->arr, dim, (uint64_t)count, false, why);
    return rc;
}

/* A follower that grew while rank 0 failed goes back: the committed
 * metadata read again and the logged pending growths redone in memory.
 * A follower that cannot is broken: its later calls fail, and with them
 * every rank's. */
static void extend_undo(drx_mp *a)
{
    struct drx_err why = {{0}};
    if (follower_redo(a, 0, 0, &why) < 0)
        mp_break(a, &why);
}

/* DRX_MP_SYNC_BATCH and _NONE: every rank grows at once, rank 0 the .xta
 * and its metadata in memory (the growth pending until drx_mp_sync), the
 * others their metadata; one MPI_Allreduce carries the lowest status,
 * whether rank 0 failed, and a hash of the new metadata with its
 * complement (MIN of both: equal everywhere or not).  Rank 0's failure
 * changes nothing: rank 0 is as before, and a follower that grew undoes
 * it (extend_undo).  When a follower fails after rank 0 grew, or the
 * metadata differ, every rank forgets the pending growths, so that all
 * hold the committed metadata again.  So two collectives in all, the
 * argument check and this one (before: three, with rank 0's broadcast of
 * its status before the others grew). */
static int extend_batch(drx_mp *a, int dim, int64_t count, struct drx_err *err)
{
    int64_t words[DRX_MAX_RANK + 2];
    int rc = grown_reserve(a, err);

    if (rc == 0)
        rc = drx_array_extend_pending(a->arr, dim, (uint64_t)count, a->rank == 0, err);
    mp_meta_words(a, 0, words);
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, words, sizeof(words));
    uint64_t in[4] = {h, ~h, (uint64_t)((int64_t)(rc < 0 ? rc : 0) + INT32_MAX),
                      a->rank == 0 && rc < 0 ? 0 : 1},
             out[4];
    load_allreduce(in, out, 4, MPI_UINT64_T, MPI_MIN, a->comm);
    bool all_grew = out[2] == (uint64_t)INT32_MAX, same = out[0] == ~out[1];
    if (all_grew && !same) {
        /* Another process extended the array since the followers read it
         * (the first growth after a sync: rank 0 read the metadata again
         * under the extend lock, which it holds from now on, so it stays
         * as it is): they catch up and the ranks compare again.  It used
         * to fail the call with ESTALE, as often as every first growth
         * after a sync while another process extended the array. */
        rc = a->rank != 0 ? follower_redo(a, dim, count, err) : 0;
        mp_meta_words(a, 0, words);
        h = hash_bytes(0xcbf29ce484222325ull, words, sizeof(words));
        in[0] = h, in[1] = ~h, in[2] = (uint64_t)((int64_t)(rc < 0 ? rc : 0) + INT32_MAX);
        load_allreduce(in, out, 4, MPI_UINT64_T, MPI_MIN, a->comm);
        all_grew = out[2] == (uint64_t)INT32_MAX, same = out[0] == ~out[1];
    }
    if (all_grew && same) {
        a->grown[a->ngrown][0] = dim;
        a->grown[a->ngrown++][1] = count;
        return 0;
    }
    if (all_grew) /* every rank sees it: the same status everywhere */
        rc = drx_err_set(err, ESTALE, "%s: the ranks' metadata differ after the extension",
                         a->path);
    if (out[3] == 0 && a->rank != 0 && rc == 0)
        extend_undo(a);
    else if (out[3] != 0) {
        drx_array_pending_drop(a->arr, &(struct drx_err){{0}});
        a->ngrown = 0;
    }
    return mp_agree(a->comm, rc, err);
}

int drx_mp_extend(drx_mp *a, int dim, int64_t count)
{
    struct drx_err err = {{0}};
    if (!a) {
        mp_set_error("drx_mp_extend: no array");
        return -EINVAL;
    }
    int rc = extend_check(a, dim, count, &err);
    int64_t args[2] = {dim, count};
    int all =
        mp_check(a->comm, rc, args, sizeof(args), "dimensions or counts to drx_mp_extend", &err);
    if (all < 0)
        return all;
    if (a->sync_mode != DRX_MP_SYNC_EXTEND)
        return extend_batch(a, dim, count, &err);
    /* Every rank has returned from its last write_all (collective), so the
     * data is written; rank 0 extends (fill, fdatasync, then the .xmd by
     * rename; a failure changes nothing). */
    if (a->rank == 0)
        rc = drx_array_extend(a->arr, dim, (uint64_t)count, &err);
    return extend_follow(a, rc, &err);
}

/* --- attributes --- */

/* name, type and text as one buffer "NAME\0TYPE\0TEXT" for the ranks'
 * agreement (a NULL as ""), or NULL when out of memory. */
static char *attr_args(const char *name, const char *type, const char *text, size_t *len)
{
    size_t ln = strlen(name), lt = strlen(type), lx = text ? strlen(text) : 0;
    char *b = malloc(ln + lt + lx + 3);

    if (!b)
        return NULL;
    memcpy(b, name, ln + 1);
    memcpy(b + ln + 1, type, lt + 1);
    memcpy(b + ln + lt + 2, text ? text : "", lx + 1);
    *len = ln + lt + lx + 3;
    return b;
}

/* Sets attribute name to text of type (rm: removes it): checked and
 * agreed, the pending growths recorded first (an attribute change
 * rewrites the .xmd), rank 0 changes it, the others read it back. */
static int attr_change(drx_mp *a, const char *what, const char *name, const char *type,
                       const char *text, bool rm)
{
    struct drx_err err = {{0}};
    struct drx_attr at = {0};
    size_t len = 0;
    char *args;
    int rc;

    if (!a) {
        mp_set_error("no array");
        return -EINVAL;
    }
    type = type && *type ? type : "string";
    args = attr_args(name ? name : "", type, text, &len);
    /* agreed first: a rank without its buffer would hash other bytes */
    rc = mp_agree(a->comm, args ? 0 : drx_err_set(&err, ENOMEM, "%s: out of memory", what),
                  &err);
    if (rc < 0) {
        free(args);
        return rc;
    }
    if (!a->writable)
        rc = drx_err_set(&err, EBADF, "%s: opened read-only", a->path);
    else if (a->broken)
        rc = mp_broken(a, &err);
    else if (!name || (!text && !rm))
        rc = drx_err_set(&err, EINVAL, "%s: no attribute %s", what, name ? "value" : "name");
    else if (rm)
        rc = drx_attr_name_check(name, &err);
    else
        rc = drx_attr_parse(name, type, text, &at, &err);
    char agreed[64];
    snprintf(agreed, sizeof(agreed), "names, types or values to %s", what);
    rc = mp_check(a->comm, rc, args, len, agreed, &err);
    free(args);
    if (rc == 0 && a->ngrown)
        rc = mp_commit(a, a->sync_mode != DRX_MP_SYNC_NONE);
    if (rc < 0) {
        drx_attr_fini(&at);
        return rc;
    }
    if (a->rank == 0)
        rc = rm ? drx_array_attr_rm(a->arr, name, &err) : drx_array_attr_set(a->arr, &at, &err);
    drx_attr_fini(&at);
    load_bcast(&rc, 1, MPI_INT, 0, a->comm);
    /* rank 0's reason, the same status everywhere */
    if (rc < 0)
        return mp_agree(a->comm, a->rank == 0 ? rc : 0, &err);
    if (a->rank != 0 && (rc = drx_array_reload(a->arr, &err)) < 0)
        rc = follower_lost(a, "the attribute", &err);
    /* the same metadata everywhere, where another process extended the
     * array between rank 0's change and the others' reads (they used to
     * keep different bounds, in 49 attribute changes of 300 while drx
     * extend ran beside) */
    return meta_agree(a, rc, "the attribute", "changed an attribute of", &err);
}

int drx_mp_attr_set(drx_mp *a, const char *name, const char *type, const char *value)
{
    return attr_change(a, "drx_mp_attr_set", name, type, value, false);
}

int drx_mp_attr_rm(drx_mp *a, const char *name)
{
    return attr_change(a, "drx_mp_attr_rm", name, NULL, NULL, true);
}

int drx_mp_attr_get(const drx_mp *a, const char *name, char *buf, size_t size)
{
    const struct drx_attr *at;
    struct drx_err err;
    char *text;
    size_t n;

    if (!a || !name || (!buf && size)) {
        mp_set_error("drx_mp_attr_get: no array, name or buffer");
        return -EINVAL;
    }
    if (a->broken)
        return local_broken(a);
    if (!(at = drx_array_attr_get(drx_array_meta(a->arr), name))) {
        drx_err_set(&err, ENOENT, "%s: no attribute %s", a->path, name);
        mp_set_error(err.msg);
        return -ENOENT;
    }
    if (!(text = drx_attr_format(at))) {
        mp_set_error("drx_mp_attr_get: out of memory");
        return -ENOMEM;
    }
    n = strlen(text);
    if (size)
        snprintf(buf, size, "%s", text);
    free(text);
    return n > INT_MAX ? INT_MAX : (int)n;
}
