/* Helpers of drx-load that libdrxmp shares: collectives that wait
 * without spinning, MPI error text, fill patterns. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "load_i.h"

/* --- collectives that wait without spinning (load_i.h) --- */

#define SPIN_NS 200000L   /* tested without a pause for this long */
#define PAUSE_MIN_NS 10000L
#define PAUSE_MAX_NS 1000000L

static long long elapsed_ns(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000000000LL + (now.tv_nsec - t0->tv_nsec);
}

/* The pause is a sixteenth of the wait so far (10 us to 1 ms): a rank
 * that sleeps does not forward its part of the collective (MPI moves on
 * only inside MPI_Test), so each pause may delay the ranks after it in the
 * tree by up to its length; a sixteenth keeps that within about 6 % of
 * the wait at each level, and a wait of seconds wakes 1000 times a
 * second. */
static int patient_wait(MPI_Request *req, int mrc)
{
    struct timespec t0, pause = {0, 0};
    int done = 0;

    if (mrc != MPI_SUCCESS)
        return mrc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if ((mrc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS || done)
            return mrc;
        long long waited = elapsed_ns(&t0);
        if (waited < SPIN_NS)
            continue;
        pause.tv_nsec = waited / 16 < PAUSE_MIN_NS   ? PAUSE_MIN_NS
                        : waited / 16 > PAUSE_MAX_NS ? PAUSE_MAX_NS
                                                     : (long)(waited / 16);
        nanosleep(&pause, NULL);
    }
}

int load_allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm)
{
    MPI_Request req;
    return patient_wait(&req, MPI_Iallreduce(in, out, count, type, op, comm, &req));
}

int load_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    MPI_Request req;
    return patient_wait(&req, MPI_Ibcast(buf, count, type, root, comm, &req));
}

int load_barrier(MPI_Comm comm)
{
    MPI_Request req;
    return patient_wait(&req, MPI_Ibarrier(comm, &req));
}

int load_allgather(const void *in, int count, MPI_Datatype type, void *out, MPI_Comm comm)
{
    MPI_Request req;
    return patient_wait(&req, MPI_Iallgather(in, count, type, out, count, type, comm, &req));
}

int load_reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm)
{
    MPI_Request req;
    return patient_wait(&req, MPI_Ireduce(in, out, count, type, op, root, comm, &req));
}

/* The errno behind an MPI error: its class where MPI names the cause,
 * else the errno whose text ends ROMIO's message (its independent I/O
 * reports a full disk as MPI_ERR_IO, "Other I/O error No space left on
 * device"), else EIO.  So a full disk is ENOSPC whichever way the chunks
 * went, collective or each rank alone. */
static int mpi_errno(int mpirc, const char *msg)
{
    static const int classes[][2] = {
        {MPI_ERR_NO_SPACE, ENOSPC}, {MPI_ERR_QUOTA, EDQUOT},        {MPI_ERR_ACCESS, EACCES},
        {MPI_ERR_READ_ONLY, EROFS}, {MPI_ERR_NO_SUCH_FILE, ENOENT}, {MPI_ERR_FILE_EXISTS, EEXIST},
    };
    static const int texts[] = {ENOSPC, EDQUOT, EFBIG, EACCES, EROFS, ENOENT};
    int cls = MPI_ERR_IO;
    size_t n = strlen(msg);

    MPI_Error_class(mpirc, &cls);
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (cls == classes[i][0])
            return classes[i][1];
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        const char *t = strerror(texts[i]);
        size_t m = strlen(t);
        if (n >= m && !strcmp(msg + n - m, t))
            return texts[i];
    }
    return EIO;
}

int load_mpi_err(struct drx_err *err, int mpirc, const char *fmt, ...)
{
    char what[DRX_ERR_LEN / 2], mpimsg[MPI_MAX_ERROR_STRING];
    int len = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    MPI_Error_string(mpirc, mpimsg, &len);
    /* ROMIO's messages carry a prefix like "Other I/O error , error stack:\n
     * ADIO_OPEN(...): ..."; keep the last line, which names the cause. */
    mpimsg[len] = '\0';
    char *nl;
    while ((nl = strrchr(mpimsg, '\n')) && nl[1] == '\0')
        *nl = '\0';
    char *last = strrchr(mpimsg, '\n');
    last = last ? last + 1 : mpimsg;
    char *colon = strstr(last, "): ");
    if (colon)
        last = colon + 3;
    /* ROMIO's independent I/O says "Other I/O error No space left on
     * device": its class's text, then the cause's; the cause alone. */
    char cls[MPI_MAX_ERROR_STRING];
    int cl, clen = 0;
    if (MPI_Error_class(mpirc, &cl) == MPI_SUCCESS &&
        MPI_Error_string(cl, cls, &clen) == MPI_SUCCESS) {
        while (clen > 0 && cls[clen - 1] == ' ') /* MPICH's ends in one */
            clen--;
        cls[clen] = '\0';
        if (clen > 0 && strncmp(last, cls, (size_t)clen) == 0 && last[clen] == ' ' && last[clen + 1])
            last += clen + 1;
    }
    return drx_err_set(err, mpi_errno(mpirc, last), "%s: %s", what, last);
}

void load_fill(void *buf, size_t len, const unsigned char *fill, size_t esize)
{
    unsigned char *b = buf;
    bool zero = true;
    for (size_t i = 0; i < esize; i++)
        zero = zero && fill[i] == 0;
    if (zero) {
        memset(b, 0, len);
        return;
    }
    for (size_t i = 0; i < len; i++)
        b[i] = fill[i % esize];
}

void load_fill_range(void *buf, uint64_t from, uint64_t to, const unsigned char *fill, size_t esize)
{
    unsigned char *b = buf;
    for (; from < to && from % esize; from++)
        b[from] = fill[from % esize];
    load_fill(b + from, to - from, fill, esize);
}
