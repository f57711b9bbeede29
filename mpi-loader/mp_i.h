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

struct drx_mp {
    MPI_Comm comm; /* our own duplicate of the caller's */
    int rank, nprocs;
    struct drx_array *arr;
    bool writable;
    char path[PATH_MAX];    /* store path, no suffix */
    char xta[PATH_MAX + 8]; /* path.xta */
    MPI_File xf;            /* the .xta, opened collectively */
    int lockfd;             /* writable: a descriptor of our own for OFD chunk locks */
    uint64_t buffer;        /* bytes of chunks per round */
    int dims[DRX_MAX_RANK]; /* the process grid of the zones */
};

/* Collective over comm: the lowest status of all ranks (0 when none
 * failed).  On failure every rank keeps the failing rank's message as its
 * drx_mp_error(). */
int mp_agree(MPI_Comm comm, int rc, const struct drx_err *err);

/* Collective: -EINVAL on every rank (message in err) when the ranks'
 * len bytes at buf differ, else 0.  what names the arguments. */
int mp_same(MPI_Comm comm, const void *buf, size_t len, const char *what, struct drx_err *err);

/* Records msg as drx_mp_error() of this process. */
void mp_set_error(const char *msg);

/* --- mp_io.c: chunk rounds shared with drx-load --- */

/* Tries OFD locks on chunks q[0..n-1] (ascending, each cb bytes) of fd on
 * every rank, all or nothing: when any rank misses one, all let go and
 * try again, up to 120 s (-EDEADLK with a message).  Collective. */
int mp_lock_round(MPI_Comm comm, int fd, const uint64_t *q, size_t n, uint64_t cb,
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

/* The box read/write of drx_mp_read_all/write_all. */
int mp_box_read(drx_mp *a, const struct drx_view *v, void *buf);
int mp_box_write(drx_mp *a, const struct drx_view *v, const void *buf);

#endif
