/* Prefetch launcher of the drxfs daemon (SPEC sections 7 and 8).
 *
 * When a read of a view reaches prefetch.min_bytes, the daemon calls
 * drxfs_prefetch_request(); this module starts
 *
 *     MPIEXEC -n RANKS DRX_LOAD prefetch ARRAY_STORE_PATH WORDS...
 *
 * with posix_spawn (never fork in the threaded daemon) in a process group of
 * its own, on the store's files (never through the mount).  At most one
 * prefetch runs per array at a time; a request for an array that has one
 * running is dropped.  A waiter thread per child reaps it (no zombies) and
 * logs through drx_log why it failed (its last line of stderr, or the exit
 * status); a missing mpiexec is logged at the request.  Reads never wait for
 * or depend on a prefetch.  drxfs_prefetch_destroy() (at unmount) sends
 * SIGTERM to every group still running, SIGKILL after a grace period, and
 * waits for all of them.
 *
 * All functions are thread-safe.
 */
#ifndef DRXFS_PREFETCH_H
#define DRXFS_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

struct drxfs_prefetch;

/* mpiexec: program to launch (looked up in PATH when it has no '/');
 * ranks: its -n (>= 1); drx_load_path: the loader, or NULL to find it
 * (drxfs_prefetch_find_loader); min_bytes: kept for the daemon
 * (drxfs_prefetch_min_bytes).  The strings are copied.  Returns NULL only
 * when out of memory. */
struct drxfs_prefetch *drxfs_prefetch_create(const char *mpiexec, int ranks,
                                             const char *drx_load_path, uint64_t min_bytes);

/* Passes `--config FILE` (made absolute now: the daemon may change
 * directory) to every launched drx-load, so prefetches use the daemon's
 * configuration (mpiio buffer and hints).  NULL: none.  0 or -errno. */
int drxfs_prefetch_set_config(struct drxfs_prefetch *p, const char *config_path);

/* Starts a prefetch of the view given by words[0..nwords-1] (the KEY=VALUE
 * words of the view, outermost first) of the array at array_store_path (a
 * store path without suffix), unless one for that array is running.
 * Returns at once; failures are logged, never returned. */
void drxfs_prefetch_request(struct drxfs_prefetch *p, const char *array_store_path,
                            const char *const *view_words, int nwords);

/* The min_bytes given at create. */
uint64_t drxfs_prefetch_min_bytes(const struct drxfs_prefetch *p);

/* Stops every running prefetch (SIGTERM to its process group, SIGKILL
 * after 5 s), reaps them and frees p.  NULL is a no-op. */
void drxfs_prefetch_destroy(struct drxfs_prefetch *p);

/* Where drx-load is: DIR/../mpi-loader/drx-load beside the running binary
 * (build tree), else DIR/drx-load (installed next to drxfs), else
 * "drx-load" (found in PATH by mpiexec).  Writes into buf; returns buf. */
const char *drxfs_prefetch_find_loader(char *buf, size_t len) __attribute__((nonnull));

#endif
