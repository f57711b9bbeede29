/* What fuse_main() does, in two steps, with one step of ours between the
 * end of the session loop and fuse_destroy():
 *
 *   - drxfs_new() parses libfuse's options and makes the session before
 *     the store is opened, so that a wrong option fails before a mount
 *     makes a directory a store (-o create, or an empty directory);
 *   - drxfs_run() mounts and serves; the daemon's threads that talk to
 *     libfuse (the kernel cache's invalidations) stop between the end of
 *     the loop and fuse_destroy(), while libfuse's node tables, which
 *     fuse_destroy() frees before it calls the destroy operation, still
 *     exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <fuse_lowlevel.h>

static struct fuse_cmdline_opts opts;
static struct fuse *f;

void drxfs_mnt_unlock(void)
{
    if (drxfs.mnt_lock >= 0)
        close(drxfs.mnt_lock);
    drxfs.mnt_lock = -1;
}

int drxfs_new(struct fuse_args *args, const struct fuse_operations *ops)
{
    if (fuse_parse_cmdline(args, &opts) != 0)
        return 1;
    if (!opts.mountpoint) {
        fprintf(stderr, "drxfs: no mount point given\n");
        return 2;
    }
    if (!(f = fuse_new(args, ops, sizeof(*ops), NULL)))
        return 3;
    return 0;
}

void drxfs_new_undo(void)
{
    if (f)
        fuse_destroy(f);
    f = NULL;
    free(opts.mountpoint);
    opts.mountpoint = NULL;
}

int drxfs_run(void)
{
    struct fuse_loop_config *loop = NULL;
    int rc;

    if (fuse_mount(f, opts.mountpoint) != 0) {
        rc = 4;
        goto out_destroy;
    }
    /* the mount is in mountinfo now: another drxfs waiting sees it */
    drxfs_mnt_unlock();
    if (fuse_daemonize(opts.foreground) != 0 || fuse_set_signal_handlers(fuse_get_session(f))) {
        rc = 5;
        goto out_unmount;
    }
    drxfs_notify_start(fuse_get_session(f), drxfs.kernel_cache);
    drxfs_locks_threads(opts.max_threads, opts.singlethread);
    drxfs_zarr_threads(opts.max_threads, opts.singlethread);
    rc = 1;
    if (opts.singlethread) {
        rc = fuse_loop(f);
    } else if ((loop = fuse_loop_cfg_create())) {
        fuse_loop_cfg_set_clone_fd(loop, (unsigned)opts.clone_fd);
        fuse_loop_cfg_set_idle_threads(loop, opts.max_idle_threads);
        fuse_loop_cfg_set_max_threads(loop, opts.max_threads);
        rc = fuse_loop_mt(f, loop);
    }
    rc = rc ? 7 : 0;
    fuse_remove_signal_handlers(fuse_get_session(f));
out_unmount:
    /* commits rename metafiles, which the kernel cache's thread sees */
    drxfs_commit_stop();
    drxfs_notify_closing();
    drxfs_kc_stop();
    /* the unmount closes the device, which ends what the relay may wait for */
    fuse_unmount(f);
    drxfs_notify_stop();
out_destroy:
    fuse_loop_cfg_destroy(loop);
    drxfs_new_undo();
    return rc;
}
