/* Running a piece of a unit test as another user, or as root without the
 * right to chown, for the rules that depend on who writes (the owner and
 * mode of replaced store files). */
#ifndef DRX_TEST_AS_USER_H
#define DRX_TEST_AS_USER_H

#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY_ID 65534 /* nobody / nogroup on Debian */

enum as_who {
    AS_NOBODY,        /* uid and gid NOBODY_ID, no supplementary groups */
    AS_ROOT_NO_CHOWN, /* root without CAP_CHOWN: a daemon in a container or
                       * on a root-squashed store, which keeps CAP_FSETID
                       * (set-ID bits survive its writes) */
};

/* Drops CAP_CHOWN from the effective, permitted and inheritable sets. */
static inline int drop_cap_chown(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

    if (syscall(SYS_capget, &h, d) < 0)
        return -1;
    d[0].effective &= ~(1u << CAP_CHOWN);
    d[0].permitted &= ~(1u << CAP_CHOWN);
    d[0].inheritable &= ~(1u << CAP_CHOWN);
    return (int)syscall(SYS_capset, &h, d);
}

/* fn(arg) in a child process as `who`.  Its exit status (fn's return
 * value), -1 when it did not exit normally, or -2 when the tests do not run
 * as root (then they cannot change user; the caller skips). */
static inline int run_as(enum as_who who, int (*fn)(void *), void *arg)
{
    int status;
    pid_t pid;

    if (geteuid() != 0)
        return -2;
    fflush(stdout); /* the child must not print the parent's buffered TAP */
    pid = fork();
    if (pid == 0) {
        if (who == AS_NOBODY &&
            (setgroups(0, NULL) < 0 || setgid(NOBODY_ID) < 0 || setuid(NOBODY_ID) < 0))
            _exit(99);
        if (who == AS_ROOT_NO_CHOWN && drop_cap_chown() < 0)
            _exit(98);
        _exit(fn(arg) & 0x7f);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

#endif
