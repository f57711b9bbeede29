/* Private pieces of libdrxmp (mpi-loader/ only): the handle, the agreement
 * on failure, and the round engine that drx-load shares. */
#ifndef DRX_MP_I_H
#define DRX_MP_I_H

#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "drx/array.h"
#include "drx/err.h"
#include "drx/mp.h"
#include "drx/view.h"
#include "load_i.h"

#define MP_DEFAULT_BUFFER ((uint64_t)64 << 20)
#define MP_MAX_BUFFER ((uint64_t)1 << 30)
/* write_all's gather per rank: status, chunk box, whole-chunks flag */
#define MP_GATHER_WIDTH (2 * DRX_MAX_RANK + 2)
/* How many times the ranks read the metadata again when they hold
 * different ones (another process extending the array meanwhile). */
#define MP_META_TRIES 100

struct drx_mp {
    MPI_Comm comm; /* our own duplicate of the caller's */
    int rank, nprocs;
    struct drx_array *arr;
    bool writable;
    char path[PATH_MAX];    /* store path, no suffix */
    char xta[PATH_MAX + 8]; /* path.xta */
    MPI_File xf;            /* the .xta, opened collectively */
    int lockfd;             /* a descriptor of our own: OFD chunk locks, I/O alone */
    uint64_t buffer;        /* bytes of chunks per round */
    int sync_mode;          /* DRX_MP_SYNC_EXTEND, _BATCH or _NONE */
    int dims[DRX_MAX_RANK]; /* the process grid of the zones */
    uint64_t *gather;       /* P * MP_GATHER_WIDTH: every rank's box, for write_all */
    unsigned char *rbuf;    /* the round buffer of chunks, kept between calls */
    uint64_t rbuf_len;
    struct load_run *runs; /* a round's runs in file order (mp_io.c), kept between calls */
    size_t runs_cap;
    int64_t (*grown)[2]; /* the pending growths (dim, count) since the last commit */
    size_t ngrown, grown_cap;
    bool broken;                  /* a follower could not read the metadata again */
    char broken_why[DRX_ERR_LEN]; /* its reason */
};

/* Collective over comm: the lowest status of all ranks (0 when none
 * failed).  On failure every rank keeps the failing rank's message as its
 * drx_mp_error(). */
int mp_agree(MPI_Comm comm, int rc, const struct drx_err *err);

/* Collective: the ranks' len bytes at buf compared (a hash) and their
 * statuses agreed (mp_agree) in one reduction: the agreed status, -EINVAL
 * on every rank (message in err) when the arguments differ.  what names
 * the arguments. */
int mp_check(MPI_Comm comm, int rc, const void *buf, size_t len, const char *what,
             struct drx_err *err);

/* -EIO with its message in err: this rank's metadata is not the array's
 * (a->broken, after an extension it could not read back), so every call
 * that needs them fails until drx_mp_sync opens the array again. */
int mp_broken(const drx_mp *a, struct drx_err *err);

/* Records msg as drx_mp_error() of this process. */
void mp_set_error(const char *msg);

/* --- mp_io.c: chunk rounds shared with drx-load --- */

/* Tries OFD locks on chunks q[0..n-1] (ascending, each cb bytes) of fd on
 * every rank, all or nothing: when any rank misses one, all let go and
 * try again, up to 120 s (-EDEADLK with a message).  Collective.
 * *need_read: in, whether this rank has chunks to merge; out, whether any
 * rank has (the same reduction). */
int mp_lock_round(MPI_Comm comm, int fd, const uint64_t *q, size_t n, uint64_t cb, int *need_read,
                  struct drx_err *err);
void mp_unlock_round(int fd, const uint64_t *q, size_t n, uint64_t cb);

/* Collective read of the round's chunks (slot i of buf is p->q[i]) whose
 * want[i] equals want_value (want NULL: all) from xf.  *got (may be NULL)
 * gets the bytes read: chunks past the end of the file are not read.
 * Local errors are returned with err, not agreed. */
int mp_read_chunks(const struct load_plan *p, MPI_File xf, unsigned char *buf, const bool *want,
                   bool want_value, uint64_t *got, struct drx_err *err);

/* Collective write of all the round's chunks from buf. */
int mp_write_chunks(const struct load_plan *p, MPI_File xf, const unsigned char *buf,
                    struct drx_err *err);

/* A rank's chunks of a view, moved in rounds (libdrxmp's boxes, drx-load's
 * shares).  Each rank holds one round of chunks; every rank runs `rounds`
 * rounds, the same number everywhere, also with nothing to move. */
struct mp_xfer {
    drx_mp *a;
    const struct drx_array_meta *m;
    struct drx_plan *plan;  /* cursor over the view's chunks */
    uint64_t start, n;      /* my chunks: numbers start .. start+n-1 of the view's */
    uint64_t batch, rounds; /* chunks per round; rounds on every rank */
    uint64_t bufchunks;     /* min(batch, n) */
    unsigned char *chunks;  /* one round of chunks (bufchunks * chunk_bytes) */
    bool runs;              /* plan runs (false: whole chunks only) */
    struct load_plan p;     /* the current round */
    struct load_plan ahead; /* the next round, when planned ahead */
    uint64_t ahead_round;   /* its number, or UINT64_MAX */
    uint64_t taken;         /* chunks planned so far (the cursor is at start + taken) */
    int ahead_rc;
};
/* Collective.  share: this rank's BLOCK share of the view's chunks
 * (drx-load); else all of them (the rank's own box).  runs: false when only
 * whole chunks move (prefetch).  Agreed; on failure x needs no end. */
int mp_xfer_begin(drx_mp *a, const struct drx_view *v, bool share, bool runs, struct mp_xfer *x);
void mp_xfer_end(struct mp_xfer *x);
/* Collective: round r becomes the current one in x->p (planned now, or
 * taken from mp_xfer_ahead).  Agreed. */
int mp_xfer_round(struct mp_xfer *x, uint64_t r);
/* Local: plans round r into x->ahead (for read-ahead advice); 0 past the
 * last round.  Its error comes back from mp_xfer_round(r). */
int mp_xfer_ahead(struct mp_xfer *x, uint64_t r);
/* Local: fn for each range of adjacent chunks [q, q + n) of the share, in
 * address order (stops at fn's first non-zero return, which it returns);
 * the rounds go on where they were. */
int mp_xfer_ranges(struct mp_xfer *x, int (*fn)(uint64_t q, uint64_t n, void *arg), void *arg);
/* Collective: the current round's chunks into x->chunks.  Agreed. */
int mp_xfer_read(struct mp_xfer *x);
/* Collective: writes the current round: chunks locked, those the view
 * covers in part read and merged, merge(p, src, chunks) puts the view's
 * bytes in, all written, locks released once every rank has written.
 * Agreed. */
typedef void (*mp_merge_fn)(const struct load_plan *p, const void *src, unsigned char *chunks);
int mp_xfer_write(struct mp_xfer *x, mp_merge_fn merge, const void *src);

/* Opens with the caller's MPI-IO hints for the .xta (drx-load's);
 * romio_ds_write stays off whatever they say.  MPI_INFO_NULL: libdrxmp's
 * defaults. */
int mp_open_info(MPI_Comm comm, const char *path, int writable, MPI_Info info, drx_mp **out);

/* The box read/write of drx_mp_read_all/write_all. */
int mp_box_read(drx_mp *a, const struct drx_view *v, void *buf);
int mp_box_write(drx_mp *a, const struct drx_view *v, const void *buf);
/* read_all when every rank's box covers its chunks whole: each rank
 * reads its own chunks without collective I/O (straight into buf in C
 * order); one agreement at the end. */
int mp_box_read_alone(drx_mp *a, const struct drx_view *v, void *buf);
/* The same when no chunk of this rank's box is another's and the box
 * covers every chunk it meets: each rank locks, writes and unlocks its
 * own chunks without collective I/O (straight from buf in C order); one
 * agreement at the end. */
int mp_box_write_alone(drx_mp *a, const struct drx_view *v, const void *buf);

/* The array's .xta as drx_array_open opened and checked it (a regular
 * file with one name, reached without a symlink), opened again with flags
 * through "/proc/self/fd/N" of the array's descriptor, which reaches that
 * file whatever its path leads to now (a symlink a user swapped in after
 * the check): a descriptor, or -errno. */
#define MP_SELF_LEN 32
int mp_xta_open(const drx_mp *a, int flags);

#endif
