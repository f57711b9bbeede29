/* Private pieces shared by the drx-load commands (mpi-loader/ only).
 *
 * Every command follows the same collective shape: all ranks parse the same
 * arguments, open the same files, agree on failure with load_agree() before
 * anyone leaves, and move data in rounds that every rank enters, also the
 * ranks that have nothing to move in that round (MPI-IO collectives need
 * every rank of the communicator).
 */
#ifndef DRX_LOAD_I_H
#define DRX_LOAD_I_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drx/array.h"
#include "drx/config.h"
#include "drx/err.h"
#include "drx/mp.h"
#include "drx/plan.h"
#include "drx/view.h"

/* Largest buffer one rank uses per round (bytes).  MPI counts are int, so a
 * round's byte count has to stay below 2 GiB; chunks are at most 1 GiB.
 * mpiio.buffer of the config has the same ceiling (and a floor of 1 MiB;
 * --buffer may go lower, for tests of many small rounds). */
#define LOAD_MAX_BUFFER DRX_MAX_MPIIO_BUFFER
#define LOAD_DEFAULT_BUFFER DRX_DEFAULT_MPIIO_BUFFER

struct load_ctx {
    int rank, nprocs;
    const char *config_path;       /* --config FILE or NULL */
    struct drx_config *config;     /* loaded configuration (never NULL after main's setup) */
    uint64_t buffer;               /* bytes of data per rank per round */
    MPI_Info info;                 /* ROMIO hints for every file we open */
    bool progress;                 /* rank 0 and stderr is a terminal */
};

/* --- drx_load.c: agreement, progress, helpers --- */

/* Collective.  Every rank passes its own status (0 or -errno) and, when it
 * failed, the reason in err.  Returns the lowest status over all ranks; when
 * that is negative, rank 0 has printed the failing rank's reason as one line
 * ("drx-load: WHAT: reason").  All ranks return the same value. */
int load_agree(const struct load_ctx *c, int rc, const struct drx_err *err, const char *what);

/* Collectives that wait without keeping a core busy.  MPICH's ch4:ucx
 * polls without end in a blocking call, so ranks waiting for one that
 * waits itself (rank 0 for an extend lock another program holds, up to
 * DRX_LOCK_WAIT_MS) took that whole time of CPU each, from the rank they
 * waited for when the cores are shared.  These start the nonblocking
 * variant and test it: continuously for the first 200 us (most
 * collectives end sooner), then with sleeps of a sixteenth of the wait so
 * far, 10 us to 1 ms.
 * Same arguments and semantics as MPI_Allreduce, MPI_Bcast,
 * MPI_Barrier, MPI_Allgather (the same count and type in and out) and
 * MPI_Reduce. */
int load_allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm);
int load_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int load_barrier(MPI_Comm comm);
int load_allgather(const void *in, int count, MPI_Datatype type, void *out, MPI_Comm comm);
int load_reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm);

/* Turns an MPI error code into a message in err; returns its -errno
 * (ENOSPC, EDQUOT, ... where MPI's class or ROMIO's text names it, else
 * -EIO). */
int load_mpi_err(struct drx_err *err, int mpirc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* BLOCK distribution of n items over the ranks (as mfu_get_start_count):
 * the first n % nprocs ranks get one more. */
void load_start_count(const struct load_ctx *c, uint64_t n, uint64_t *start, uint64_t *count);

/* Collective.  Resolves a user path (store path or the same path under a
 * drxfs mount) into the store path, in out (PATH_MAX bytes).  Through FUSE
 * only for rank 0's request to the mount to commit (bounded wait), which
 * every rank waits for.  write: we will change what it names, so not under
 * a read-only mount (EROFS). */
int load_resolve(const struct load_ctx *c, const char *path, bool write, char *out, size_t len,
                 struct drx_err *err);

/* Progress on rank 0 when stderr is a terminal; no-ops elsewhere.  done is
 * the byte count over all ranks (the caller reduces it). */
struct load_progress {
    const char *what;
    uint64_t total;
    double t0, last;
    bool on;
};
void load_progress_start(const struct load_ctx *c, struct load_progress *p, const char *what,
                         uint64_t total);
/* Collective (reduces the ranks' byte counts to rank 0). */
void load_progress_add(const struct load_ctx *c, struct load_progress *p, uint64_t mine);
void load_progress_end(struct load_progress *p);

/* Fills len bytes at buf with the element fill pattern (buf is element
 * aligned). */
void load_fill(void *buf, size_t len, const unsigned char *fill, size_t esize);

/* The same for bytes [from, to) of buf, keeping the pattern's phase
 * relative to buf (buf is element aligned). */
void load_fill_range(void *buf, uint64_t from, uint64_t to, const unsigned char *fill,
                     size_t esize);

/* --- load_array.c: shared by the array commands --- */

/* After a libdrxmp call, which agreed already: rank 0 prints
 * drx_mp_error() ("drx-load: WHAT: reason").  0 or -EIO. */
int load_mp_report(const struct load_ctx *c, int rc, const char *what);

/* Collective: this rank's BLOCK share of the view's chunks, in rounds of
 * the handle's buffer (libdrxmp's engine, mp_xfer_begin).  The share is
 * never listed: the planner seeks to its first chunk and each round takes
 * the next chunks from it.  runs: false when whole chunks move.  0 or -EIO
 * (reported); free with mp_xfer_end. */
struct mp_xfer;
int load_share_begin(struct load_ctx *c, drx_mp *a, const struct drx_view *v, bool runs,
                     struct mp_xfer *s);

/* --verbose: the hints MPI-IO holds for fh (rank 0, log level debug). */
void load_log_file_hints(const struct load_ctx *c, MPI_File fh, const char *path);

/* Collective MPI_File_open with the hints; agrees on failure (message
 * "WHAT PATH: reason").  Errors of later calls are returned, not fatal. */
int load_open_file(struct load_ctx *c, const char *path, int amode, MPI_File *fh, const char *what);
/* The same with hints of the caller's own. */
int load_open_file_info(struct load_ctx *c, const char *path, int amode, MPI_Info info,
                        MPI_File *fh, const char *what);
/* The same of the file descriptor fd holds (this rank's: "/proc/self/fd/N",
 * which reaches that file whatever its path leads to now), messages naming
 * shown.  fd stays the caller's to close. */
int load_open_fd(struct load_ctx *c, int fd, const char *shown, int amode, MPI_File *fh,
                 const char *what);
void load_close_file(MPI_File *fh); /* collective; MPI_FILE_NULL is a no-op */
/* Read-ahead (drx_io_readahead) of chunks q[0..n-1] (ascending) of an .xta open
 * as fd (-1: nothing), adjacent chunks as one range. */
void load_advise_chunks(int fd, const uint64_t *q, size_t n, uint64_t cb);
/* Rank 0 creates path if missing, for a clear reason when it cannot, and
 * refuses one of arr's own files (arr may be NULL) before it is cut. */
int load_check_output(const struct load_ctx *c, const char *path, const struct drx_array *arr,
                      struct drx_err *err);
/* Local check that path is a readable regular file, not one of arr's own
 * (arr may be NULL); its size in *size. */
int load_check_input(const char *path, const struct drx_array *arr, uint64_t *size,
                     struct drx_err *err);

/* --- load_plan.c: a round's chunks <-> its bytes of the view's data --- */

/* One run: `len` consecutive elements of the view's data (at byte raw_off
 * of the view) that lie in one chunk, at byte buf_off of the round's chunk
 * buffer and then every `stride` bytes (the plan's run_stride). */
struct load_run {
    uint64_t raw_off;
    uint64_t buf_off;
    uint64_t pk_off; /* where the run sits in the packed bytes */
    uint64_t len;    /* elements */
};

/* The chunks one rank moves in one round and the runs that connect them to
 * the view's data (both from libcore's planner).  The packed bytes hold the
 * runs in raw_off order (MPI file views need ascending displacements); the
 * runs themselves are kept in chunk-buffer order when they are strided (a
 * transpose), so that copying walks each chunk's cache lines together. */
struct load_plan {
    const struct drx_array_meta *meta;
    const struct drx_view *view;
    uint64_t run_stride; /* bytes between elements of a run in a chunk */
    size_t nchunks;
    uint64_t *q;   /* the round's chunk addresses, ascending */
    bool *covered; /* chunk: inside the bounds and the view covers all of it */
    bool *inside;  /* chunk: lies wholly inside the bounds */
    size_t qcap;
    struct load_run *run;
    size_t nruns, cap;
    /* The runs' byte ranges in the view's data, ascending, adjacent ones
     * merged: the raw file type and the read-ahead advice. */
    uint64_t *roff, *rlen;
    size_t nranges, rcap;
    /* Set by the caller: the runs stay in chunk (buffer) order, as planned,
     * and no ranges are made (libdrxmp's calls alone need neither). */
    bool chunk_order;
};

void load_plan_init(struct load_plan *p, const struct drx_array_meta *m, const struct drx_view *v);
void load_plan_fini(struct load_plan *p);
/* Plans the round of the next n chunks of the planner src (slot i of the
 * round's buffer is chunk q[i]); with runs false, only the chunk list
 * (prefetch moves whole chunks and needs no runs). */
int load_plan_round(struct load_plan *p, struct drx_plan *src, size_t n, bool runs);
/* Copies between the round's chunk buffer and the packed view bytes
 * (runs in raw_off order, back to back). */
void load_plan_unpack(const struct load_plan *p, const unsigned char *packed,
                      unsigned char *chunks);
void load_plan_pack(const struct load_plan *p, const unsigned char *chunks, unsigned char *packed);
/* The same between the chunk buffer and the whole view's data in memory
 * (a run at raw_off of view): libdrxmp's boxes, which are in memory. */
void load_plan_gather(const struct load_plan *p, const unsigned char *chunks, unsigned char *view);
void load_plan_scatter(const struct load_plan *p, const unsigned char *view, unsigned char *chunks);
/* Bytes of view data in the round. */
uint64_t load_plan_bytes(const struct load_plan *p);

/* --- MPI datatypes (load_plan.c) --- */

/* A file or memory type of n byte ranges (off[i], len[i]), ascending and
 * disjoint; adjacent ranges are merged.  n == 0 gives MPI_BYTE, which the
 * caller uses with count 0.  *bytes gets the total.  Free with
 * load_type_free(). */
int load_type_ranges(const uint64_t *off, const uint64_t *len, size_t n, MPI_Datatype *t,
                     uint64_t *bytes);
void load_type_free(MPI_Datatype *t);
/* File type of the plan's whole chunks in the .xta. */
int load_type_chunks(const struct load_plan *p, MPI_Datatype *t);
/* File type of the plan's runs in the view's data. */
int load_type_runs(const struct load_plan *p, MPI_Datatype *t);

/* --- commands --- */
int load_cmd_import(struct load_ctx *c, int argc, char **argv);
int load_cmd_export(struct load_ctx *c, int argc, char **argv);
int load_cmd_copy(struct load_ctx *c, int argc, char **argv);
int load_cmd_prefetch(struct load_ctx *c, int argc, char **argv);

/* Opens the array as a libdrxmp handle on every rank (writable for
 * import), with the hints and round buffer of the command line, and
 * resolves the view words (collective: agrees on failure).  On success *a
 * and *v are set, and *words_out (unless NULL) to the words of v. */
int load_open_view(struct load_ctx *c, const char *path, bool write, char **words, int nwords,
                   drx_mp **a, struct drx_view *v, struct drx_view_spec *words_out);

#endif
