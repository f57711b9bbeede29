/* drx-load copy SRC DST: plain or striped files, in parallel.
 *
 * The logical bytes are dealt out BLOCK over the ranks in units of the
 * striped side's extent (the destination's when both are striped), so a
 * rank writes whole extents to subfiles as in the NAFS collective write, and
 * its consecutive extents of one subfile are contiguous there: one large
 * write per subfile and round.  A striped side is moved with one collective
 * call per subfile and round: the file type lists the rank's pieces in that
 * subfile, the memory type where they sit in the round's buffer.
 *
 * A new file inside a store is a striped file with the layout the store
 * gives its directory (drx_stripe_layout_for_new: the directory's
 * user.drx.stripe, else the store's default); an existing striped
 * destination keeps its layout.  Either way the bytes go into a hidden
 * temporary striped file (drx_stripe_create_temp, by rank 0; its metafile
 * says size 0), and only when every rank has written and synced its part
 * does rank 0 record the size and rename it over the destination
 * (drx_stripe_commit_temp).  A copy killed on the way leaves the
 * destination as it was, or absent, and a temporary file that drx fsck
 * reports; never a destination whose size covers bytes not yet written.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drx/log.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "load_i.h"

/* Unit of distribution when neither side is striped. */
#define COPY_UNIT ((uint64_t)1 << 20)

struct endpoint {
    const char *arg;            /* as the user wrote it */
    char path[PATH_MAX];        /* store path (striped: without suffix) */
    char root[PATH_MAX];        /* store root when inside a store */
    bool in_store, striped;
    struct drx_store *store;    /* striped only */
    struct drx_stripe_meta meta;
    char tmp[PATH_MAX];         /* striped destination: the temporary metafile */
    int store_lock;             /* rank 0, striped destination: drx_store_lock, or -1 */
    MPI_File fh[DRX_MAX_STRIPE_DIRS];
    int fd[DRX_MAX_STRIPE_DIRS]; /* libcore's checked descriptor of each, which fh reopens */
    unsigned nfh;
    uint64_t size;
};

static void endpoint_init(struct endpoint *e, const char *arg)
{
    memset(e, 0, sizeof(*e));
    e->arg = arg;
    e->store_lock = -1;
    for (unsigned i = 0; i < DRX_MAX_STRIPE_DIRS; i++) {
        e->fh[i] = MPI_FILE_NULL;
        e->fd[i] = -1;
    }
}

/* MPI-IO's files of e, then the descriptors they reopened (kept: ROMIO
 * may open a file again later by its name, "/proc/self/fd/N") */
static void close_files(struct endpoint *e)
{
    for (unsigned i = 0; i < e->nfh; i++) {
        load_close_file(&e->fh[i]);
        if (e->fd[i] >= 0)
            close(e->fd[i]);
        e->fd[i] = -1;
    }
    e->nfh = 0;
}

static void endpoint_close(struct endpoint *e)
{
    close_files(e);
    drx_store_close(e->store);
    e->store = NULL;
    if (e->store_lock >= 0)
        close(e->store_lock);
    e->store_lock = -1;
}

/* Where the path lies: inside a store or not, resolved through drxfs
 * mounts (write: the destination, not under a read-only one).  Collective
 * (load_resolve), the same on every rank. */
static int endpoint_locate(struct load_ctx *c, struct endpoint *e, bool write, struct drx_err *err)
{
    int rc = load_resolve(c, e->arg, write, e->path, sizeof(e->path), err);
    if (rc < 0)
        return rc;
    rc = drx_store_find(e->path, e->root, sizeof(e->root));
    if (rc >= 0)
        e->in_store = true;
    else if (rc != -ENOENT)
        return drx_err_set(err, -rc, "%s: %s", e->arg, strerror(-rc));
    if (e->in_store) {
        rc = drx_store_open(e->root, c->config_path, &e->store, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Subfile i of e opened by libcore (drx_stripe_subfile_open: never through
 * a symlink, a hard link's other name or a FIFO, the rule checked on the
 * descriptor) into *fd, which MPI-IO then opens as /proc/self/fd/N: MPI-IO
 * takes a path, and a path checked and then opened could be a symlink by
 * the time of the open (a user who owns the stripe directory swapping
 * one in: root's copy would read or write where it leads).  Returns 1,
 * *fd -1, for a subfile not created yet that need not exist (libcore
 * creates a subfile when the first byte reaches it: one the recorded size
 * does not need may be absent, all holes). */
static int subfile_open(const struct endpoint *e, unsigned i, int flags, bool must_exist, int *fd,
                        struct drx_err *err)
{
    char sub[PATH_MAX];
    /* the check first, for its message (the open logs a refusal: one that
     * passed the check and not the open is a file swapped in between) */
    int rc = drx_stripe_subfile_check(e->store, &e->meta, i, NULL, err);

    *fd = -1;
    if (rc == 0 && (*fd = drx_stripe_subfile_open(e->store, &e->meta, i, flags, 0, e->arg)) >= 0)
        return 0;
    if (rc == 0) {
        rc = *fd;
        *fd = -1;
        err->msg[0] = '\0';
    }
    if (rc == -ENOENT && !must_exist &&
        drx_stripe_subfile_len(&e->meta.layout, i, e->meta.size) == 0)
        return 1;
    if (drx_stripe_subfile_path(e->store, &e->meta, i, sub, sizeof sub) < 0)
        snprintf(sub, sizeof sub, "#%u", i);
    if (!err->msg[0] || rc == -ENOENT)
        drx_err_set(err, -rc, "subfile %u (%s): %s", i, sub,
                    rc == -ENOENT ? "missing" : strerror(-rc));
    drx_err_prefix(err, "%s", e->arg);
    return rc;
}

/* Opens the striped file's subfiles on every rank (collective, one open per
 * subfile, in order). */
static int open_subfiles(struct load_ctx *c, struct endpoint *e, int amode, bool must_exist)
{
    struct drx_err err = {{0}};
    char sub[PATH_MAX];
    int flags = amode & MPI_MODE_WRONLY ? O_WRONLY : amode & MPI_MODE_RDWR ? O_RDWR : O_RDONLY;
    for (unsigned i = 0; i < e->meta.layout.count; i++) {
        int fd;
        int rc = subfile_open(e, i, flags, must_exist, &fd, &err);
        if (load_agree(c, rc < 0 ? rc : 0, &err, "copy") < 0) {
            if (fd >= 0)
                close(fd);
            return -EIO;
        }
        /* absent on every rank: left unopened (MPI_FILE_NULL), all holes */
        int absent = rc == 1;
        load_allreduce(MPI_IN_PLACE, &absent, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        e->nfh = i + 1;
        e->fd[i] = fd;
        if (absent)
            continue;
        if (drx_stripe_subfile_path(e->store, &e->meta, i, sub, sizeof sub) < 0)
            snprintf(sub, sizeof sub, "%s: subfile %u", e->arg, i);
        /* a rank that found it absent while others did not (made meanwhile)
         * opens it by its directory, checked, as they did */
        if (fd < 0)
            (void)subfile_open(e, i, flags, true, &e->fd[i], &err);
        rc = load_open_fd(c, e->fd[i], sub, amode, &e->fh[i], "opening");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int open_source(struct load_ctx *c, struct endpoint *e)
{
    struct drx_err err = {{0}};
    int rc = endpoint_locate(c, e, false, &err);
    if (rc == 0 && e->in_store) {
        switch (drx_store_classify(e->path)) {
        case DRX_STORE_STRIPED:
            e->striped = true;
            /* a size a mount has not recorded yet: once it has (its
             * batched commit; a path under the mount asked it already) */
            if (c->rank == 0)
                (void)drx_stripe_wait_recorded(e->path);
            load_barrier(MPI_COMM_WORLD);
            rc = drx_stripe_stat(e->store, e->path, &e->meta, &err);
            e->size = e->meta.size;
            break;
        case DRX_STORE_ARRAY:
            rc = drx_err_set(&err, EISDIR, "%s: is an array (use export)", e->arg);
            break;
        case DRX_STORE_NONE:
            rc = drx_err_set(&err, ENOENT, "%s: no such file", e->arg);
            break;
        default:
            break;
        }
    }
    if (rc == 0 && !e->striped)
        rc = load_check_input(e->path, NULL, &e->size, &err);
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    if (e->striped)
        return open_subfiles(c, e, MPI_MODE_RDONLY, false);
    e->nfh = 1;
    return load_open_file(c, e->path, MPI_MODE_RDONLY, &e->fh[0], "opening");
}

/* DST naming a directory means DST/basename(SRC), as cp does. */
static int dest_name(struct endpoint *d, const struct endpoint *s, struct drx_err *err)
{
    struct stat st;
    if (stat(d->path, &st) < 0 || !S_ISDIR(st.st_mode))
        return 0;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", s->path);
    const char *base = basename(tmp);
    if ((size_t)snprintf(d->path + strlen(d->path), sizeof(d->path) - strlen(d->path), "/%s",
                         base) >= sizeof(d->path) - strlen(d->path))
        return drx_err_set(err, ENAMETOOLONG, "%s/%s: name too long", d->arg, base);
    return 0;
}

/* Rank 0 creates the temporary file the copy fills (d->tmp), with the
 * layout of an existing striped destination, else the one its directory
 * gives; the destination itself is not touched until the commit. */
static int create_striped(struct load_ctx *c, struct endpoint *d, bool exists,
                          struct drx_err *err)
{
    struct drx_stripe_meta old;
    mode_t um;
    int rc;
    if (c->rank != 0)
        return 0;
    if (exists) {
        rc = drx_stripe_stat(d->store, d->path, &old, err);
        if (rc < 0)
            return rc;
    }
    /* From before the temporary's first subfile to after its commit or
     * discard: drx fsck --repair must not take them for orphans. */
    d->store_lock = drx_store_lock(d->store, false);
    if (d->store_lock < 0)
        return drx_err_set(err, -d->store_lock, "%s: locking the store's .drx/: %s", d->arg,
                           strerror(-d->store_lock));
    um = umask(0);
    umask(um);
    rc = drx_stripe_create_temp(d->store, d->path, exists ? &old.layout : NULL, 0666 & ~um, d->tmp,
                                sizeof(d->tmp), err);
    if (rc < 0) {
        d->tmp[0] = '\0';
        if (!err->msg[0])
            drx_err_set(err, -rc, "%s: %s", d->arg, strerror(-rc));
    }
    return rc;
}

/* What the destination is in a store: a striped file (new or existing,
 * *exists), or a refusal.  0 or -errno with err. */
static int dest_kind(struct endpoint *d, bool *exists, struct drx_err *err)
{
    int rc = drx_store_path_reserved(d->path, d->arg, err);
    if (rc < 0)
        return rc;
    switch (drx_store_classify(d->path)) {
    case DRX_STORE_STRIPED:
        *exists = true;
        /* fall through */
    case DRX_STORE_NONE:
        d->striped = true;
        return 0;
    case DRX_STORE_ARRAY:
        return drx_err_set(err, EISDIR, "%s: is an array (use import)", d->arg);
    case DRX_STORE_DIRECTORY:
        return drx_err_set(err, EISDIR, "%s: is a directory", d->arg);
    default:
        return 0; /* an existing plain file in the store stays plain */
    }
}

/* A plain destination: created, opened and cut to the copy's size
 * (collective, agreed). */
static int open_dest_plain(struct load_ctx *c, struct endpoint *d)
{
    struct drx_err err = {{0}};
    int rc = load_check_output(c, d->path, NULL, &err);
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    d->nfh = 1;
    rc = load_open_file(c, d->path, MPI_MODE_WRONLY | MPI_MODE_CREATE, &d->fh[0], "creating");
    if (rc < 0)
        return rc;
    int mrc = MPI_File_set_size(d->fh[0], (MPI_Offset)d->size);
    rc = mrc == MPI_SUCCESS ? 0 : load_mpi_err(&err, mrc, "truncating %s", d->arg);
    return load_agree(c, rc, &err, "copy");
}

static int open_dest(struct load_ctx *c, struct endpoint *d, const struct endpoint *s)
{
    struct drx_err err = {{0}};
    bool exists = false;
    int rc = endpoint_locate(c, d, true, &err);
    if (rc == 0)
        rc = dest_name(d, s, &err);
    d->size = s->size;
    if (rc == 0 && d->in_store)
        rc = dest_kind(d, &exists, &err);
    if (rc == 0 && d->striped && s->striped && strcmp(d->path, s->path) == 0)
        rc = drx_err_set(&err, EINVAL, "%s and %s are the same file", s->arg, d->arg);
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    if (!d->striped)
        return open_dest_plain(c, d);
    rc = create_striped(c, d, exists, &err);
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    load_bcast(d->tmp, sizeof(d->tmp), MPI_CHAR, 0, MPI_COMM_WORLD);
    rc = drx_stripe_meta_load(d->tmp, d->store->cfg.stripe.ndirs, &d->meta, &err);
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    return open_subfiles(c, d, MPI_MODE_WRONLY, true);
}

/* After every rank's bytes are synced: rank 0 puts the temporary file in
 * place as the destination (size recorded, then one rename). */
static int commit_striped(struct load_ctx *c, struct endpoint *d)
{
    struct drx_err err = {{0}};
    int rc = 0;
    /* MPI-IO's descriptors of the subfiles go first: nothing of this copy
     * writes after the commit. */
    close_files(d);
    if (c->rank == 0) {
        rc = drx_stripe_commit_temp(d->store, d->tmp, d->path, d->size, &err);
        if (rc == 0)
            d->tmp[0] = '\0';
    }
    return load_agree(c, rc, &err, "copy");
}

/* The file and memory types of a rank's pieces p[0..k) of one subfile:
 * where they lie in the subfile, and where in the round's buffer (whose
 * byte 0 is logical byte a).  *want: the bytes they cover. */
static int pieces_types(const struct drx_stripe_piece *p, size_t k, uint64_t a, uint64_t *foff,
                        uint64_t *moff, uint64_t *len, MPI_Datatype *ft, MPI_Datatype *mt,
                        uint64_t *want)
{
    for (size_t j = 0; j < k; j++) {
        foff[j] = p[j].offset;
        moff[j] = p[j].logical - a;
        len[j] = p[j].len;
    }
    int rc = load_type_ranges(foff, len, k, ft, want);
    if (rc == 0)
        rc = load_type_ranges(moff, len, k, mt, NULL);
    return rc;
}

/* One collective read or write of subfile i: the pieces p[0..k) between
 * the subfile and buf (buf[0] is logical byte a).  scratch holds 3 * k
 * offsets. */
static int subfile_io(struct endpoint *e, unsigned i, bool write, const struct drx_stripe_piece *p,
                      size_t k, uint64_t a, unsigned char *buf, uint64_t *scratch,
                      struct drx_err *err)
{
    MPI_Datatype ft = MPI_BYTE, mt = MPI_BYTE;
    MPI_Status st;
    uint64_t want = 0, got;
    int mrc, count = 0;
    int rc = pieces_types(p, k, a, scratch, scratch + k, scratch + 2 * k, &ft, &mt, &want);

    if (rc < 0) {
        drx_err_set(err, -rc, "file type: %s", strerror(-rc));
        goto out;
    }
    mrc = MPI_File_set_view(e->fh[i], 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    if (mrc == MPI_SUCCESS && write)
        mrc = MPI_File_write_all(e->fh[i], buf, k ? 1 : 0, mt, &st);
    else if (mrc == MPI_SUCCESS)
        mrc = MPI_File_read_all(e->fh[i], buf, k ? 1 : 0, mt, &st);
    if (mrc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &count);
    if (mrc != MPI_SUCCESS) {
        rc = load_mpi_err(err, mrc, "%s %s (subfile %u)", write ? "writing" : "reading", e->arg, i);
        goto out;
    }
    got = count > 0 ? (uint64_t)count : 0;
    if (write && got != want)
        rc = drx_err_set(err, EIO, "writing %s: short write", e->arg);
    else if (!write)
        drx_stripe_pieces_fill_holes(p, k, got, buf, a);
out:
    load_type_free(&ft);
    load_type_free(&mt);
    return rc;
}

/* Moves logical bytes [a, b) of a striped file between its subfiles and
 * buf (buf[0] is byte a).  Collective: every rank calls it for every
 * subfile, with an empty range when it has nothing. */
static int striped_io(struct endpoint *e, bool write, uint64_t a, uint64_t b, unsigned char *buf,
                      struct drx_err *err)
{
    size_t cap = drx_stripe_range_pieces_max(&e->meta.layout, a, b);
    struct drx_stripe_piece *p = malloc(cap * sizeof(*p));
    uint64_t *scratch = malloc(3 * cap * sizeof(*scratch));
    int rc = 0;

    if (!p || !scratch) {
        rc = drx_err_set(err, ENOMEM, "out of memory");
        goto out;
    }
    for (unsigned i = 0; i < e->nfh && rc == 0; i++) {
        size_t k = drx_stripe_range_pieces(&e->meta.layout, i, a, b, p, cap);
        if (e->fh[i] == MPI_FILE_NULL && !write) /* not created yet (open_subfiles) */
            drx_stripe_pieces_fill_holes(p, k, 0, buf, a);
        else
            rc = subfile_io(e, i, write, p, k, a, buf, scratch, err);
    }
out:
    free(p);
    free(scratch);
    return rc;
}

static int endpoint_io(struct endpoint *e, bool write, uint64_t a, uint64_t b,
                       unsigned char *buf, struct drx_err *err)
{
    if (e->striped)
        return striped_io(e, write, a, b, buf, err);
    MPI_Status st;
    int count = 0, mrc;
    if (write)
        mrc = MPI_File_write_at_all(e->fh[0], (MPI_Offset)a, buf, (int)(b - a), MPI_BYTE, &st);
    else
        mrc = MPI_File_read_at_all(e->fh[0], (MPI_Offset)a, buf, (int)(b - a), MPI_BYTE, &st);
    if (mrc != MPI_SUCCESS)
        return load_mpi_err(err, mrc, "%s %s", write ? "writing" : "reading", e->arg);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((uint64_t)count != b - a)
        return drx_err_set(err, EIO, "%s %s: short %s (file changed?)",
                           write ? "writing" : "reading", e->arg, write ? "write" : "read");
    return 0;
}

/* How the logical bytes are dealt out: BLOCK over the ranks in units, in
 * rounds of at most per_round units per rank.  The same rounds on every
 * rank (from the rank with the most units), so the collectives match. */
struct copy_plan {
    uint64_t unit, units, start, count, per_round, rounds;
};

static void copy_plan_make(const struct load_ctx *c, const struct endpoint *src,
                           const struct endpoint *dst, struct copy_plan *p)
{
    p->unit = dst->striped   ? dst->meta.layout.extent
              : src->striped ? src->meta.layout.extent
                             : COPY_UNIT;
    p->units = (src->size + p->unit - 1) / p->unit;
    load_start_count(c, p->units, &p->start, &p->count);
    p->per_round = c->buffer / p->unit ? c->buffer / p->unit : 1;
    uint64_t most = (p->units + (uint64_t)c->nprocs - 1) / (uint64_t)c->nprocs;
    p->rounds = (most + p->per_round - 1) / p->per_round;
    if (c->rank == 0)
        drx_log(DRX_LOG_DEBUG, "%llu units of %llu bytes: %llu rounds of at most %llu per rank",
                (unsigned long long)p->units, (unsigned long long)p->unit,
                (unsigned long long)p->rounds, (unsigned long long)p->per_round);
}

/* Bytes of this rank's round buffer: one round's units, at least one. */
static size_t copy_plan_buffer(const struct copy_plan *p)
{
    uint64_t units = p->count < p->per_round ? p->count : p->per_round;
    return (size_t)((units ? units : 1) * p->unit);
}

/* This rank's logical bytes [*a, *b) of round r: units start + r*per_round
 * onwards, within its share and the file (empty once its share is done). */
static void copy_round_range(const struct copy_plan *p, uint64_t size, uint64_t r, uint64_t *a,
                             uint64_t *b)
{
    uint64_t end = p->start + p->count;
    uint64_t u0 = p->start + r * p->per_round, u1 = u0 + p->per_round;
    if (u0 > end)
        u0 = end;
    if (u1 > end)
        u1 = end;
    *a = u0 * p->unit;
    *b = u1 * p->unit;
    if (*b > size)
        *b = size;
    if (*a > *b)
        *a = *b;
}

/* Every round: read this rank's bytes from src, write them to dst, each
 * step agreed on by all ranks.  Returns 0 or -EIO (reported). */
static int copy_rounds(struct load_ctx *c, const struct copy_plan *p, struct endpoint *src,
                       struct endpoint *dst, unsigned char *buf, struct load_progress *pr)
{
    struct drx_err err = {{0}};

    for (uint64_t r = 0; r < p->rounds; r++) {
        uint64_t a, b;
        copy_round_range(p, src->size, r, &a, &b);
        int rc = endpoint_io(src, false, a, b, buf, &err);
        if (load_agree(c, rc, &err, "copy") < 0)
            return -EIO;
        rc = endpoint_io(dst, true, a, b, buf, &err);
        if (load_agree(c, rc, &err, "copy") < 0)
            return -EIO;
        load_progress_add(c, pr, b - a);
    }
    return 0;
}

/* Exit 0 means the data is on disk: every subfile (or the file) synced,
 * then a striped destination committed. */
static int copy_finish(struct load_ctx *c, struct endpoint *dst)
{
    struct drx_err err = {{0}};
    int rc = 0;
    for (unsigned i = 0; i < dst->nfh && rc == 0; i++) {
        int mrc = MPI_File_sync(dst->fh[i]);
        if (mrc != MPI_SUCCESS)
            rc = load_mpi_err(&err, mrc, "syncing %s", dst->arg);
    }
    if (load_agree(c, rc, &err, "copy") < 0)
        return -EIO;
    if (dst->striped && commit_striped(c, dst) < 0)
        return -EIO;
    return 0;
}

int load_cmd_copy(struct load_ctx *c, int argc, char **argv)
{
    struct drx_err err = {{0}};
    struct endpoint src, dst;
    struct copy_plan plan;
    struct load_progress pr;
    unsigned char *buf = NULL;
    int rc, status = 1;

    endpoint_init(&src, argc > 1 ? argv[1] : "");
    endpoint_init(&dst, argc > 2 ? argv[2] : "");
    if (argc != 3) {
        if (c->rank == 0)
            fprintf(stderr, "drx-load: usage: copy SRC DST\n");
        return 2;
    }
    if (open_source(c, &src) < 0 || open_dest(c, &dst, &src) < 0)
        goto out;
    copy_plan_make(c, &src, &dst, &plan);
    buf = malloc(copy_plan_buffer(&plan));
    rc = buf ? 0 : drx_err_set(&err, ENOMEM, "out of memory");
    if (load_agree(c, rc, &err, "copy") < 0)
        goto out;
    load_progress_start(c, &pr, "copy", src.size);
    if (copy_rounds(c, &plan, &src, &dst, buf, &pr) < 0 || copy_finish(c, &dst) < 0)
        goto out;
    load_progress_end(&pr);
    status = 0;
out:
    endpoint_close(&src);
    /* A copy that failed leaves the destination as it was. */
    if (c->rank == 0 && dst.tmp[0] && drx_stripe_discard_temp(dst.store, dst.tmp, &err) < 0)
        fprintf(stderr, "drx-load: copy: %s (drx fsck removes it)\n", err.msg);
    endpoint_close(&dst);
    free(buf);
    return status;
}
