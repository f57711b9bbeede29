/* A test harness shim, preloaded into the MPI ranks of the bats suites
 * (test_helper.bash's mpiexec wrapper): UCX's progress call, when it
 * found nothing to do, yields the CPU.
 *
 * The suites run 2 to 6 ranks on a 2-core machine.  MPICH's ch4:ucx device
 * polls without end while a rank waits (in a collective, for a message),
 * and has no setting to yield, unlike ch3's MPIR_CVAR_POLLS_BEFORE_YIELD:
 * the waiting ranks spin on the cores the rank they wait for needs, and a
 * collective round took ~80 ms.  Measured on `mpiexec -n 6` of 16 read_all
 * rounds: 2.6-3.8 s wall and 4.0 s of CPU, 0.6-0.7 s and 1.1 s with this.
 * It changes when a waiting rank gets the CPU, nothing of what MPI, UCX
 * or the code under test do.  No header of UCX is needed: the handle is
 * passed through. */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void *worker);

unsigned ucp_worker_progress(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    static progress_fn real;
    progress_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    unsigned n;

    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "ucp_worker_progress"); /* as POSIX says */
        if (!f) {
            /* never pretend to make progress: every rank would wait forever */
            fprintf(stderr, "mpi_yield: ucp_worker_progress not found after the shim\n");
            abort();
        }
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    if ((n = f(worker)) == 0)
        sched_yield();
    return n;
}
