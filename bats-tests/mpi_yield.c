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
 * A yield alone still left a busy rank sharing its core with a yielder:
 * 4 ranks where rank 0 works 20 ms before each of 50 barriers took 2.0-2.3 s
 * (1.0 ideal) and 10.7 s of system time; waiters that sleep after 64 empty
 * polls in a row (20 us, 200 us past 1024) take 1.0 s and 3.4 s.
 * It changes when a waiting rank gets the CPU, nothing of what MPI, UCX
 * or the code under test do.  No header of UCX is needed: the handle is
 * passed through. */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef unsigned (*progress_fn)(void *worker);

/* Empty polls in a row after which a waiting thread sleeps instead of
 * yielding (a yield gives the core back only to a thread with less run
 * time, and on 2 cores a busy rank shared its core with a yielder) */
enum { YIELDS = 64 };
static __thread unsigned empty;

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
    if ((n = f(worker)) != 0) {
        empty = 0;
        return n;
    }
    if (++empty < YIELDS) {
        sched_yield();
        return 0;
    }
    /* waiting long: sleep, so that the rank waited for gets a core */
    struct timespec nap = {0, empty < YIELDS * 16 ? 20000 : 200000};
    nanosleep(&nap, NULL);
    return 0;
}
