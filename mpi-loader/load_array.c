/* drx-load import and export: a view's raw bytes <-> the array's chunks.
 *
 * Both are thin callers of libdrxmp's engine (mp_i.h): every rank opens
 * the array as a drx_mp handle (replicated metadata, the .xta opened
 * collectively with the user's hints, a descriptor for chunk locks), the
 * view's chunks, sorted by address, are dealt out BLOCK over the ranks
 * (mp_xfer_begin with share), and the engine moves each round's chunks
 * with one collective MPI_File_read_all/write_all over an hindexed file
 * type of chunk byte offsets, locking a round's chunks for a write as
 * every writer of an array does.  What is left here is the raw file: each
 * rank reads (import) or writes (export) exactly the ranges of it that its
 * chunks hold, again with one collective call over an hindexed file type.
 * So no rank ever holds more than a round's chunks plus their packed view
 * bytes, no data moves between ranks, and the result does not depend on P.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/io.h"
#include "drx/log.h"
#include "drx/stripe.h"
#include "load_i.h"
#include "mp_i.h"

/* After a libdrxmp call (already agreed on): rank 0 tells its reason. */
int load_mp_report(const struct load_ctx *c, int rc, const char *what)
{
    if (rc >= 0)
        return 0;
    if (c->rank == 0) {
        if (what)
            fprintf(stderr, "drx-load: %s: %s\n", what, drx_mp_error());
        else
            fprintf(stderr, "drx-load: %s\n", drx_mp_error());
        fflush(stderr);
    }
    return -EIO;
}

/* A path ARRAY/WORD/WORD[/data] as at the mount point (and for drx get):
 * the array's store path into array, its words into spec (before those
 * given apart).  0, or 1 when path names no array with words, so that
 * drx_mp_open says why as for any path; -errno for a bad word or a file
 * other than data (the raw bytes are what drx-load moves). */
static int split_view_path(const char *path, bool write, char *array, size_t len,
                           struct drx_view_spec *spec, struct drx_err *err)
{
    char store[PATH_MAX];
    /* lexical: drx_mp_open makes the commit request to a mount */
    unsigned flags = (write ? DRX_STORE_FOR_WRITE : 0) | DRX_STORE_NO_COMMIT;
    int rc = drx_store_resolve_path_for(NULL, path, flags, store, sizeof store, err);

    if (rc >= 0) /* its length */
        rc = drx_view_path_split(store, array, len, spec, err);
    if (rc == 0 && spec->file && strcmp(spec->file, "data") != 0)
        return drx_err_set(err, EINVAL,
                           "drx-load moves the view's raw bytes (its data), not %s: name the view",
                           spec->file);
    if (rc == -ENOENT || (rc == 0 && spec->nwords == 0 && !spec->file)) {
        err->msg[0] = '\0';
        drx_view_spec_init(spec);
        return 1;
    }
    return rc;
}

int load_open_view(struct load_ctx *c, const char *path, bool write, char **words, int nwords,
                   drx_mp **a, struct drx_view *v, struct drx_view_spec *words_out)
{
    char array[PATH_MAX];
    struct drx_err err = {{0}};
    struct drx_view_spec spec;
    int rc;

    drx_view_spec_init(&spec);
    rc = split_view_path(path, write, array, sizeof array, &spec, &err);
    if (rc < 0)
        drx_err_prefix(&err, "%s", path);
    if (load_agree(c, rc < 0 ? rc : 0, &err, NULL) < 0)
        return -EIO;
    rc = mp_open_info(MPI_COMM_WORLD, rc == 0 ? array : path, write, c->info, a);
    if (load_mp_report(c, rc, NULL) < 0)
        return -EIO;
    (*a)->buffer = c->buffer;
    for (int i = 0; i < nwords && rc == 0; i++)
        rc = drx_view_spec_add(&spec, words[i], &err);
    if (rc == 0)
        rc = drx_view_resolve(&spec, drx_array_meta((*a)->arr), v, &err);
    if (rc < 0)
        drx_err_prefix(&err, "%s", path);
    rc = load_agree(c, rc, &err, NULL);
    if (rc < 0) {
        drx_mp_close(a);
        return rc;
    }
    load_log_file_hints(c, (*a)->xf, (*a)->xta);
    if (words_out)
        *words_out = spec;
    return 0;
}

int load_share_begin(struct load_ctx *c, drx_mp *a, const struct drx_view *v, bool runs,
                     struct mp_xfer *s)
{
    if (load_mp_report(c, mp_xfer_begin(a, v, true, runs, s), NULL) < 0)
        return -EIO;
    if (c->rank == 0)
        drx_log(DRX_LOG_DEBUG, "%llu chunks of %llu bytes: %llu rounds of at most %llu per rank",
                (unsigned long long)drx_plan_count(s->plan), (unsigned long long)s->m->chunk_bytes,
                (unsigned long long)s->rounds, (unsigned long long)s->batch);
    return 0;
}

/* --verbose: the hints the MPI library holds for an open file, its own
 * defaults included, so a user can check that a hint from --config,
 * ROMIO_HINTS or --hint arrived (MPI drops keys it does not know).  Rank 0
 * only; MPI_File_get_info is local.  A long list goes out in several
 * messages rather than being cut. */
void load_log_file_hints(const struct load_ctx *c, MPI_File fh, const char *path)
{
    MPI_Info info = MPI_INFO_NULL;
    char msg[DRX_LOG_MSG_MAX / 2 + MPI_MAX_INFO_KEY + MPI_MAX_INFO_VAL + 4];
    int n = 0;
    size_t len = 0;

    if (c->rank != 0 || !drx_log_enabled(DRX_LOG_DEBUG))
        return;
    if (MPI_File_get_info(fh, &info) != MPI_SUCCESS)
        return;
    MPI_Info_get_nkeys(info, &n);
    msg[0] = '\0';
    for (int i = 0; i < n; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        if (MPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            continue;
#if MPI_VERSION >= 4
        int vlen = (int)sizeof(val);
        MPI_Info_get_string(info, key, &vlen, val, &flag);
#else
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
#endif
        if (!flag)
            continue;
        int w = snprintf(msg + len, sizeof(msg) - len, " %s=%s", key, val);
        len += w > 0 ? (size_t)w : 0;
        if (len >= DRX_LOG_MSG_MAX / 2) {
            drx_log(DRX_LOG_DEBUG, "hints of %s:%s", path, msg);
            len = 0;
            msg[0] = '\0';
        }
    }
    if (len > 0 || n == 0)
        drx_log(DRX_LOG_DEBUG, "hints of %s:%s", path, n ? msg : " (none)");
    MPI_Info_free(&info);
}

/* MPI_File_open of path, messages naming shown */
static int open_as(struct load_ctx *c, const char *path, const char *shown, int amode,
                   MPI_Info info, MPI_File *fh, const char *what)
{
    struct drx_err err = {{0}};
    int mrc = MPI_File_open(MPI_COMM_WORLD, path, amode, info, fh);
    int rc = 0;
    if (mrc != MPI_SUCCESS) {
        *fh = MPI_FILE_NULL;
        rc = load_mpi_err(&err, mrc, "%s %s", what, shown);
        if (path != shown)
            drx_err_rename(&err, path, shown);
    } else {
        /* Errors of the I/O calls come back as codes, never abort. */
        MPI_File_set_errhandler(*fh, MPI_ERRORS_RETURN);
        load_log_file_hints(c, *fh, shown);
    }
    rc = load_agree(c, rc, &err, NULL);
    if (rc < 0 && *fh != MPI_FILE_NULL)
        MPI_File_close(fh);
    return rc;
}

int load_open_file_info(struct load_ctx *c, const char *path, int amode, MPI_Info info,
                        MPI_File *fh, const char *what)
{
    return open_as(c, path, path, amode, info, fh, what);
}

int load_open_file(struct load_ctx *c, const char *path, int amode, MPI_File *fh, const char *what)
{
    return open_as(c, path, path, amode, c->info, fh, what);
}

int load_open_fd(struct load_ctx *c, int fd, const char *shown, int amode, MPI_File *fh,
                 const char *what)
{
    char self[32];

    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    return open_as(c, self, shown, amode, c->info, fh, what);
}

void load_close_file(MPI_File *fh)
{
    if (*fh != MPI_FILE_NULL)
        MPI_File_close(fh);
}

/* "PATH is the array's own .xta", or 0: a file of arr (may be NULL) at fd. */
static int refuse_own(const struct drx_array *arr, int fd, const char *path, struct drx_err *err)
{
    const char *own = arr ? drx_array_own_file(arr, fd) : NULL;
    return own ? drx_err_set(err, EINVAL, "%s is the array's own %s: nothing written", path, own)
               : 0;
}

/* Every rank writes its pieces at their offsets and the file is cut to
 * size: a pipe or device cannot be written that way. */
static const char not_regular[] = "every rank writes its part at its offset";

int load_check_output(const struct load_ctx *c, const char *path, const struct drx_array *arr,
                      struct drx_err *err)
{
    /* ROMIO names every failure to create "Invalid file name"; trying it
     * here (the collective open creates it anyway) gives the real reason. */
    if (c->rank != 0)
        return 0;
    /* O_NONBLOCK: a FIFO without a reader is refused below, not waited on. */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
    struct stat st;
    if (fd < 0 && errno == ENXIO)
        return drx_err_set(err, EINVAL, "%s: not a regular file (%s)", path, not_regular);
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    int rc = refuse_own(arr, fd, path, err);
    if (rc == 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
        rc = drx_err_set(err, EINVAL, "%s: not a regular file (%s)", path, not_regular);
    close(fd);
    return rc;
}

int load_check_input(const char *path, const struct drx_array *arr, uint64_t *size,
                     struct drx_err *err)
{
    struct stat st;
    /* O_NONBLOCK: a FIFO must be refused, not waited on. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = drx_err_set(err, EISDIR, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        rc = drx_err_set(err, EINVAL, "%s: not a regular file", path);
    else if ((rc = refuse_own(arr, fd, path, err)) == 0) {
        /* Read one byte: proves the data is readable (not just openable)
         * before anything is written anywhere. */
        char b;
        if (st.st_size > 0 && pread(fd, &b, 1, 0) < 0)
            rc = drx_err_set(err, errno, "%s: %s", path, strerror(errno));
        *size = (uint64_t)st.st_size;
    }
    close(fd);
    return rc;
}

/* Asks the kernel to read the round's raw ranges now, all at once: without
 * it, each of the many separate ranges of a round starts its own small
 * read-ahead and a cold import waits for the disk once per range.  Ranges
 * closer than a MiB are advised as one (the gap is other ranks' data, which
 * they are about to read anyway). */
/* Hints go to libcore's read-ahead pool (drx_io_readahead), as the copy
 * engine's do, in batches of ADVISE_BATCH ranges. */
#define ADVISE_BATCH 64

struct advise {
    int fd, n;
    struct drx_io_range r[ADVISE_BATCH];
};

static void advise_add(struct advise *a, uint64_t off, uint64_t len)
{
    if (a->n == ADVISE_BATCH) {
        drx_io_readahead(a->fd, a->r, a->n);
        a->n = 0;
    }
    a->r[a->n++] = (struct drx_io_range){off, len};
}

static void advise_runs(int fd, const struct load_plan *p)
{
    const uint64_t gap = (uint64_t)1 << 20;
    struct advise a = {.fd = fd};
    for (size_t i = 0; fd >= 0 && i < p->nranges;) {
        uint64_t lo = p->roff[i], hi = lo + p->rlen[i];
        for (i++; i < p->nranges && p->roff[i] - hi < gap; i++)
            hi = p->roff[i] + p->rlen[i];
        advise_add(&a, lo, hi - lo);
    }
    drx_io_readahead(fd, a.r, a.n);
}

void load_advise_chunks(int fd, const uint64_t *q, size_t n, uint64_t cb)
{
    struct advise a = {.fd = fd};
    for (size_t i = 0; fd >= 0 && i < n;) {
        size_t j = i + 1;
        while (j < n && q[j] == q[j - 1] + 1)
            j++;
        advise_add(&a, q[i] * cb, (j - i) * cb);
        i = j;
    }
    drx_io_readahead(fd, a.r, a.n);
}

/* --- import --- */

struct reserve_arg {
    struct drx_reserve *res;
    uint64_t cb; /* chunk bytes */
};

static int reserve_range(uint64_t q, uint64_t n, void *arg)
{
    const struct reserve_arg *r = arg;
    return drx_reserve_add(r->res, q * r->cb, n * r->cb);
}

/* Disk space for every chunk of this rank's share before the import's first
 * byte, through a descriptor of our own, so that a full disk fails the
 * import with the array unchanged rather than half way.  res->fd is -1
 * when there is nothing to reserve. */
static int reserve_share(struct mp_xfer *s, const drx_mp *a, struct drx_reserve *res,
                         struct drx_err *err)
{
    const char *xta = a->xta;
    int fd, rc = 0;

    drx_reserve_init(res, -1);
    if (s->n == 0)
        return 0;
    fd = mp_xta_open(a, O_WRONLY);
    if (fd < 0)
        return drx_err_set(err, -fd,
                           "%s: opening to reserve space for the view's chunks: %s; "
                           "nothing written",
                           xta, strerror(-fd));
    drx_reserve_init(res, fd);
    struct reserve_arg ra = {res, s->m->chunk_bytes};
    rc = mp_xfer_ranges(s, reserve_range, &ra);
    if (rc)
        drx_err_set(err, -rc, "%s: reserving space for the view's chunks: %s; nothing written", xta,
                    strerror(-rc));
    return rc;
}

/* Gives up (undo) or keeps the reservation, and closes its descriptor. */
static void reserve_end(struct drx_reserve *res, bool undo)
{
    if (res->fd < 0)
        return;
    /* under the chunks' byte-range locks: the daemon or drx put may be
     * writing there (a failed import never has) */
    int rc = undo ? drx_reserve_undo_locked(res) : 0;
    if (rc)
        drx_log(DRX_LOG_WARNING, "giving back space reserved in the .xta: %s (kept)",
                strerror(-rc));
    close(res->fd);
    drx_reserve_fini(res);
}

/* One import or export, as every rank holds it from the first check to the
 * end. */
struct xfer {
    const char *what;   /* "import" or "export", for messages */
    const char *rawarg; /* the raw file as the user wrote it */
    drx_mp *a;
    const struct drx_array_meta *m;
    struct drx_view v;
    struct drx_view_spec spec; /* the words of v (import: for its size error) */
    struct mp_xfer s; /* my share of the view's chunks, in rounds */
    bool started;
    struct load_progress pr;
    MPI_File rf; /* the raw file */
    MPI_Datatype ft;
    char raw[PATH_MAX];
    unsigned char *packed;
    int advfd; /* read-ahead advice only: the raw file (import), the .xta (export) */
    bool swap;
};

static void xfer_init(struct xfer *x, const char *what, const char *rawarg)
{
    memset(x, 0, sizeof(*x));
    x->what = what;
    x->rawarg = rawarg;
    x->rf = MPI_FILE_NULL;
    x->ft = MPI_BYTE;
    x->advfd = -1;
}

/* Collective (the MPI files, the handle). */
static void xfer_close(struct xfer *x)
{
    load_type_free(&x->ft);
    load_close_file(&x->rf);
    if (x->advfd >= 0)
        close(x->advfd);
    if (x->started)
        mp_xfer_end(&x->s);
    free(x->packed);
    drx_mp_close(&x->a);
}

/* The share of chunks and the round buffers (collective).  Import also
 * reserves the share's space in the .xta, and every rank gives back its
 * reservation when any rank could not.  Returns 0 or -EIO (reported). */
static int xfer_prepare(struct load_ctx *c, struct xfer *x, bool reserve)
{
    struct drx_err err = {{0}};
    struct drx_reserve res = {.fd = -1};

    if (load_share_begin(c, x->a, &x->v, true, &x->s) < 0)
        return -EIO;
    x->started = true;
    x->packed = malloc(x->s.bufchunks ? x->s.bufchunks * x->m->chunk_bytes : 1);
    int rc = x->packed ? 0 : drx_err_set(&err, ENOMEM, "out of memory");
    if (rc == 0 && reserve)
        rc = reserve_share(&x->s, x->a, &res, &err);
    rc = load_agree(c, rc, &err, x->what);
    reserve_end(&res, rc < 0);
    if (rc < 0)
        return -EIO;
    x->swap = drx_type_rep_swaps(x->v.type, x->v.rep);
    load_progress_start(c, &x->pr, x->what, drx_view_bytes(&x->v));
    return 0;
}

/* Exit 0 means the data is on disk. */
static int xfer_sync(struct load_ctx *c, struct xfer *x, MPI_File fh, const char *name)
{
    struct drx_err err = {{0}};
    int mrc = MPI_File_sync(fh);
    int rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "syncing %s", name);
    if (load_agree(c, rc, &err, x->what) < 0)
        return -EIO;
    load_progress_end(&x->pr);
    return 0;
}

/* --- import --- */

/* Validate everything before the first byte is written: the array (a
 * writable handle: an .xta with another name, a rename cut short, is
 * refused by the open) and view, a readable raw file of exactly the
 * view's size.  Collective; returns 0 or -EIO (reported). */
static int import_validate(struct load_ctx *c, struct xfer *x, int argc, char **argv)
{
    struct drx_err err = {{0}};
    uint64_t size = 0;

    if (load_open_view(c, argv[1], true, argv + 3, argc - 3, &x->a, &x->v, &x->spec) < 0)
        return -EIO;
    x->m = drx_array_meta(x->a->arr);
    int rc = load_resolve(c, x->rawarg, false, x->raw, sizeof(x->raw), &err);
    if (rc == 0)
        rc = load_check_input(x->raw, x->a->arr, &size, &err);
    if (rc == -ENOENT && drx_stripe_exists(x->raw))
        rc = drx_err_set(&err, EINVAL,
                         "%s: is a striped file; import reads plain files "
                         "(drx-load copy it out first)",
                         x->rawarg);
    else if (rc == -ENOENT && drx_store_classify(x->raw) == DRX_STORE_ARRAY)
        rc = drx_err_set(&err, EINVAL,
                         "%s: is an array; import reads plain files (drx-load export it first)",
                         x->rawarg);
    if (rc == 0 && size != drx_view_bytes(&x->v)) {
        char cut[600] = "";
        if (size > drx_view_bytes(&x->v) &&
            drx_view_cut_note(&x->spec, x->m, drx_array_path(x->a->arr), cut + 2,
                              sizeof cut - 2))
            memcpy(cut, "; ", 2);
        rc = drx_err_set(&err, EINVAL, "%s: %llu bytes, but the view holds %llu%s", x->rawarg,
                         (unsigned long long)size, (unsigned long long)drx_view_bytes(&x->v),
                         cut);
    }
    return load_agree(c, rc, &err, "import") < 0 ? -EIO : 0;
}

/* Opens the raw file (collective) and a descriptor for advice.  Returns 0
 * or -EIO (reported). */
static int import_open(struct load_ctx *c, struct xfer *x)
{
    if (load_open_file(c, x->raw, MPI_MODE_RDONLY, &x->rf, "opening") < 0)
        return -EIO;
    x->advfd = open(x->raw, O_RDONLY | O_CLOEXEC);
    return 0;
}

/* Read-ahead: this round's raw ranges (first round) and the next round's
 * (planned now), asked for before this round's read so the disk has the
 * next round queued while this one is unpacked and written. */
static void import_plan_ahead(struct xfer *x, uint64_t r)
{
    if (r == 0)
        advise_runs(x->advfd, &x->s.p);
    if (r + 1 < x->s.rounds && mp_xfer_ahead(&x->s, r + 1) == 0)
        advise_runs(x->advfd, &x->s.ahead);
}

/* This rank's pieces of the raw file for the current round, packed in raw
 * order, in the view's representation converted to the array's.  Plans
 * round r + 1 ahead.  Local errors are returned (not agreed); the read is
 * collective, and a rank that failed takes part with nothing. */
static int import_read_raw(struct xfer *x, uint64_t r, uint64_t *bytes, struct drx_err *err)
{
    MPI_Status st;
    int got = 0;

    int rc = load_type_runs(&x->s.p, &x->ft);
    *bytes = rc == 0 ? load_plan_bytes(&x->s.p) : 0;
    if (rc < 0) {
        load_type_free(&x->ft);
        drx_err_set(err, -rc, "planning: %s", strerror(-rc));
    } else {
        import_plan_ahead(x, r);
    }
    int mrc = MPI_File_set_view(x->rf, 0, MPI_BYTE, x->ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_read_all(x->rf, x->packed, (int)*bytes, MPI_BYTE, &st);
    if (mrc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &got);
    load_type_free(&x->ft);
    if (rc < 0)
        return rc;
    if (mrc != MPI_SUCCESS)
        return load_mpi_err(err, mrc, "reading %s", x->rawarg);
    if ((uint64_t)got != *bytes)
        return drx_err_set(err, EIO, "%s: short read (file changed?)", x->rawarg);
    if (x->swap)
        drx_type_convert(x->v.type, x->v.rep, x->packed, *bytes / x->v.elem_size);
    return 0;
}

/* The packed view bytes of a round into its chunks (runs in raw order). */
static void merge_packed(const struct load_plan *p, const void *src, unsigned char *chunks)
{
    load_plan_unpack(p, src, chunks);
}

/* Round r: raw bytes in, then the engine's write (chunks locked, those the
 * view covers in part read and merged, written, unlocked).  Returns 0 or
 * -EIO (reported). */
static int import_round(struct load_ctx *c, struct xfer *x, uint64_t r)
{
    struct drx_err err = {{0}};
    uint64_t bytes = 0;

    if (load_mp_report(c, mp_xfer_round(&x->s, r), "import") < 0)
        return -EIO;
    int rc = import_read_raw(x, r, &bytes, &err);
    if (load_agree(c, rc, &err, "import") < 0)
        return -EIO;
    if (load_mp_report(c, mp_xfer_write(&x->s, merge_packed, x->packed), "import") < 0)
        return -EIO;
    load_progress_add(c, &x->pr, bytes);
    return 0;
}

int load_cmd_import(struct load_ctx *c, int argc, char **argv)
{
    struct xfer x;
    int status = 1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: import ARRAY RAWFILE [VIEW...]\n");
        return 2;
    }
    xfer_init(&x, "import", argv[2]);
    if (import_validate(c, &x, argc, argv) < 0 || import_open(c, &x) < 0 ||
        xfer_prepare(c, &x, true) < 0)
        goto out;
    for (uint64_t r = 0; r < x.s.rounds; r++)
        if (import_round(c, &x, r) < 0)
            goto out;
    if (xfer_sync(c, &x, x.a->xf, x.a->xta) < 0)
        goto out;
    status = 0;
out:
    xfer_close(&x);
    return status;
}

/* --- export --- */

/* The array, view and output file, checked; the output file opened and
 * cut to exactly the view's bytes.  Collective; returns 0 or -EIO
 * (reported). */
static int export_open(struct load_ctx *c, struct xfer *x, int argc, char **argv)
{
    struct drx_err err = {{0}};

    if (load_open_view(c, argv[1], false, argv + 3, argc - 3, &x->a, &x->v, NULL) < 0)
        return -EIO;
    x->m = drx_array_meta(x->a->arr);
    int rc = load_resolve(c, x->rawarg, true, x->raw, sizeof(x->raw), &err);
    if (rc == 0)
        rc = drx_store_path_plain(x->raw, x->rawarg, &err);
    if (rc == 0)
        rc = load_check_output(c, x->raw, x->a->arr, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    x->advfd = mp_xta_open(x->a, O_RDONLY);
    if (load_open_file(c, x->raw, MPI_MODE_WRONLY | MPI_MODE_CREATE, &x->rf, "creating") < 0)
        return -EIO;
    /* The output is exactly the view's bytes, whatever the file held. */
    int mrc = MPI_File_set_size(x->rf, (MPI_Offset)drx_view_bytes(&x->v));
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "truncating %s", x->rawarg);
    return load_agree(c, rc, &err, "export") < 0 ? -EIO : 0;
}

/* The round's packed view bytes written to this rank's pieces of the
 * output (collective; a rank that failed takes part with nothing).
 * Returns 0 or -errno with err. */
static int export_write_raw(struct xfer *x, uint64_t bytes, struct drx_err *err)
{
    int rc = load_type_runs(&x->s.p, &x->ft);
    if (rc < 0) {
        load_type_free(&x->ft);
        bytes = 0;
        drx_err_set(err, -rc, "planning: %s", strerror(-rc));
    }
    int mrc = MPI_File_set_view(x->rf, 0, MPI_BYTE, x->ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_File_write_all(x->rf, x->packed, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS && rc == 0)
        rc = load_mpi_err(err, mrc, "writing %s", x->rawarg);
    load_type_free(&x->ft);
    return rc;
}

/* Round r: chunks in (the engine), packed in the view's order and
 * representation, written out.  Returns 0 or -EIO (reported). */
static int export_round(struct load_ctx *c, struct xfer *x, uint64_t r)
{
    struct drx_err err = {{0}};
    const uint64_t cb = x->m->chunk_bytes;

    if (load_mp_report(c, mp_xfer_round(&x->s, r), "export") < 0)
        return -EIO;
    /* Read-ahead as in import: this round's chunks (first round) and the
     * next round's, so they come in while this round is written. */
    if (r == 0)
        load_advise_chunks(x->advfd, x->s.p.q, x->s.p.nchunks, cb);
    if (r + 1 < x->s.rounds && mp_xfer_ahead(&x->s, r + 1) == 0)
        load_advise_chunks(x->advfd, x->s.ahead.q, x->s.ahead.nchunks, cb);
    if (load_mp_report(c, mp_xfer_read(&x->s), "export") < 0)
        return -EIO;
    load_plan_pack(&x->s.p, x->s.chunks, x->packed);
    uint64_t bytes = load_plan_bytes(&x->s.p);
    if (x->swap)
        drx_type_convert(x->v.type, x->v.rep, x->packed, bytes / x->v.elem_size);
    int rc = export_write_raw(x, bytes, &err);
    if (load_agree(c, rc, &err, "export") < 0)
        return -EIO;
    load_progress_add(c, &x->pr, bytes);
    return 0;
}

int load_cmd_export(struct load_ctx *c, int argc, char **argv)
{
    struct xfer x;
    int status = 1;

    if (argc < 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: export ARRAY OUTFILE [VIEW...]\n");
        return 2;
    }
    xfer_init(&x, "export", argv[2]);
    if (export_open(c, &x, argc, argv) < 0 || xfer_prepare(c, &x, false) < 0)
        goto out;
    for (uint64_t r = 0; r < x.s.rounds; r++)
        if (export_round(c, &x, r) < 0)
            goto out;
    if (xfer_sync(c, &x, x.rf, x.rawarg) < 0)
        goto out;
    status = 0;
out:
    xfer_close(&x);
    return status;
}
