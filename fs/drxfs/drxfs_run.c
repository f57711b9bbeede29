/* What fuse_main() does, with one step of ours between the end of the
 * session loop and fuse_destroy(): the daemon's threads that talk to libfuse
 * (the kernel cache's invalidations) stop there, while libfuse's node tables,
 * which fuse_destroy() frees before it calls the destroy operation, still
 * exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <fuse_lowlevel.h>

void drxfs_mnt_unlock(void)
{
    if (drxfs.mnt_lock >= 0)
        close(drxfs.mnt_lock);
    drxfs.mnt_lock = -1;
}

int drxfs_run(struct fuse_args *args, const struct fuse_operations *ops)
{
    struct fuse_cmdline_opts opts = {0};
    struct fuse_loop_config *loop = NULL;
    struct fuse *f = NULL;
    int rc = 1;

    if (fuse_parse_cmdline(args, &opts) != 0)
        return 1;
    if (!opts.mountpoint) {
        fprintf(stderr, "drxfs: no mount point given\n");
        rc = 2;
        goto out;
    }
    if (!(f = fuse_new(args, ops, sizeof(*ops), NULL))) {
        rc = 3;
        goto out;
    }
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
    fuse_destroy(f);
out:
    fuse_loop_cfg_destroy(loop);
    free(opts.mountpoint);
    return rc;
}
