/* A test harness shim, preloaded into a second drxfs of a store by
 * test_helper.bash's mount_blind: its inotify watches are taken and never
 * report anything, as a watch on a network file system never reports what
 * another node does.  That daemon then stands in for another node: a
 * change made through the first mount, or by drx on this machine, reaches
 * it only through what it checks at open, stat and readdir (close-to-open),
 * never through an event that may or may not have arrived by then.
 *
 * inotify_init1 gives an eventfd nothing writes to (never readable, so a
 * poll waits and a read finds nothing); each watch is a fresh number.  It
 * changes nothing else of the daemon. */
#include <sys/eventfd.h>
#include <sys/inotify.h>

static int next_wd = 1;

int inotify_init1(int flags)
{
    int ef = 0;

    if (flags & IN_NONBLOCK)
        ef |= EFD_NONBLOCK;
    if (flags & IN_CLOEXEC)
        ef |= EFD_CLOEXEC;
    return eventfd(0, ef);
}

int inotify_init(void)
{
    return inotify_init1(0);
}

int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
    (void)fd;
    (void)path;
    (void)mask;
    return __atomic_fetch_add(&next_wd, 1, __ATOMIC_RELAXED);
}

int inotify_rm_watch(int fd, int wd)
{
    (void)fd;
    (void)wd;
    return 0;
}
