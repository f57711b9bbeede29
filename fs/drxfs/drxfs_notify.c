/* How the daemon tells the kernel to drop what it caches, so that a kill -9
 * of drxfs cannot leave its mount hung.
 *
 * An invalidation of a file's pages (FUSE_NOTIFY_INVAL_INODE with an
 * offset) waits in the kernel, unkillable, for each page of the file under
 * I/O: a READ in flight keeps its pages locked until the daemon answers.
 * Killed while one of its threads waited so, the daemon could not exit:
 * that thread still waits, so the process keeps its /dev/fuse descriptor,
 * so the kernel never ends the READ the daemon had taken, and the mount
 * hung until its connection was aborted by hand.  Now libfuse sends
 * through the io here (fuse_session_custom_io):
 *
 *   - an invalidation that needs the attributes dropped and not the pages
 *     (at open and getattr: an open that does not answer keep_cache makes
 *     the opener's kernel drop the pages itself) goes with offset -1,
 *     which takes no page lock (drxfs_inval_attrs);
 *   - one that drops pages (the kernel cache's thread, after a write
 *     through another view or a change behind the mount) is handed to the
 *     relay, a child process (drxfs exec'd again, drxfs_relay_entry)
 *     holding its own clone of the connection's device, and waited for
 *     on a socket.  A killed daemon then exits at
 *     once, and its descriptor closes, which ends the requests it had
 *     taken; the relay's invalidation returns; the relay, seeing its
 *     lifeline close, answers what the kernel still asks with EIO until no
 *     invalidation of its waits, and exits; its device closing aborts the
 *     connection, as after any crash of a FUSE server.
 *
 * A relay that dies (killed alone), or could not be started (no
 * descriptor left, no process), is started anew at the next invalidation
 * that finds it gone, up to RELAY_RESPAWNS times; without one (it kept
 * failing or dying) pages are invalidated in the daemon as before, which
 * a kill -9 or a stop under traffic may then leave hung.
 *
 * The same io shows drxfs_init_reply.c the INIT request and lets it amend
 * the reply (shared mmap of direct_io files).  The io is installed
 * always (drxfs_run.c); the relay runs with the kernel cache only
 * (kcache=yes, the default).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drxfs_i.h" /* FUSE_USE_VERSION first */

#include <fuse_lowlevel.h>
#include <linux/fuse.h>

/* Descriptors of the relay: its end of the socket, its device, the read
 * end of its lifeline (a pipe whose write end only the daemon holds). */
enum { RELAY_SOCK = 3, RELAY_DEV, RELAY_LIFE, RELAY_FIRST_FREE };
/* The relay's argv[0] and process name, which drxfs's main() recognizes
 * after the exec.  Not matched by `pkill drxfs`, `pkill -f drxfs` or
 * `killall drxfs`: the relay is what makes a kill -9 of the daemon safe,
 * so the kill an administrator types for the daemon leaves it to finish
 * and exit by itself (killed together, a relay waiting on a page would
 * keep the connection, and a queued READ would hang the mount). */
#define RELAY_ARGV0 "drx-inval"

/* A request read from the device while draining: the kernel refuses a
 * buffer smaller than a header and max_write, which libfuse 3.14 makes
 * 256 pages (16 MiB with 64 KiB pages). */
#define RELAY_DRAIN_PAGES 256

/* Relays started after the first one died: past this, something kills
 * them on purpose or they cannot run, and forking on is no help. */
#define RELAY_RESPAWNS 8

static __thread bool attrs_only;
/* The attributes this thread answers are to expire at once
 * (drxfs_reply_expires). */
static __thread bool expires;

/* The mutex is held through a round trip to the relay, which may wait on
 * a page for as long as the kernel holds it: closing and lifeline are
 * atomics, so that drxfs_notify_closing() never waits for it. */
static struct {
    pthread_mutex_t mutex;
    bool wanted;  /* a relay is run (the kernel cache); set before the loop */
    int sock;     /* the daemon's end, -1 without a relay (atomic) */
    int lifeline; /* the pipe's write end (atomic) */
    int sefd;     /* the session's device, cloned for each relay */
    pid_t pid;
    /* relays that died and were not reaped yet (reaped at stop) */
    pid_t dead[RELAY_RESPAWNS];
    int respawns;
    bool lost;    /* logged once */
    bool closing; /* the mount stops: invalidations are moot (atomic) */
} rl = {.mutex = PTHREAD_MUTEX_INITIALIZER, .sock = -1, .lifeline = -1, .sefd = -1};

/* ---- the relay (child process) ---- */

static struct {
    pthread_mutex_t mutex;
    bool dying, busy;
} child = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static void *relay_main(void *arg)
{
    char msg[sizeof(struct fuse_out_header) + sizeof(struct fuse_notify_inval_inode_out)];
    (void)arg;

    for (;;) {
        ssize_t n = recv(RELAY_SOCK, msg, sizeof msg, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        pthread_mutex_lock(&child.mutex);
        bool go = !child.dying;
        child.busy = go;
        pthread_mutex_unlock(&child.mutex);
        if (!go)
            return NULL;
        int32_t res = write(RELAY_DEV, msg, (size_t)n) < 0 ? -errno : 0;
        pthread_mutex_lock(&child.mutex);
        child.busy = false;
        pthread_mutex_unlock(&child.mutex);
        if (send(RELAY_SOCK, &res, sizeof res, MSG_NOSIGNAL) < 0)
            return NULL;
    }
}

static bool relay_busy(void)
{
    pthread_mutex_lock(&child.mutex);
    bool busy = child.busy;
    pthread_mutex_unlock(&child.mutex);
    return busy;
}

/* The daemon is gone while an invalidation of ours waits, maybe on a page
 * whose READ no daemon thread took: every request the kernel still queues
 * is answered with EIO (none of libfuse's state is left to do better)
 * until the invalidation returns. */
static void relay_drain(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = (size_t)(page > 0 ? page : 4096) * (RELAY_DRAIN_PAGES + 1);
    char *buf = malloc(size);

    while (buf && relay_busy()) {
        struct pollfd p = {.fd = RELAY_DEV, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = read(RELAY_DEV, buf, size);
        if (n < 0 && (errno == ENODEV || errno == EINVAL))
            break; /* aborted or unmounted (or a buffer the kernel refuses) */
        if (n < (ssize_t)sizeof(struct fuse_in_header))
            continue;
        const struct fuse_in_header *in = (const void *)buf;
        if (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET ||
            in->opcode == FUSE_INTERRUPT)
            continue; /* these get no answer */
        struct fuse_out_header out = {.len = sizeof out, .error = -EIO, .unique = in->unique};
        if (write(RELAY_DEV, &out, sizeof out) < 0 && errno == ENODEV)
            break;
    }
    free(buf);
}

static _Noreturn void relay_run(void)
{
    static const int quiet[] = {SIGINT,  SIGTERM, SIGHUP,  SIGPIPE, SIGUSR1,
                                SIGUSR2, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};
    pthread_t t;

    /* the daemon's own shutdown ends this one: a signal to the process
     * group (^C of drxfs -f) must not end it first, and ^\ must not end
     * both at once (a kill -9 of both, which can hang the mount).  Nor may
     * ^Z stop it: drxfs killed while stopped, the relay would hold its
     * connection, and the mount would hang until the relay went on. */
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
        signal(quiet[i], SIG_IGN);
    prctl(PR_SET_NAME, RELAY_ARGV0);
    if (pthread_create(&t, NULL, relay_main, NULL) != 0)
        _exit(1); /* the daemon finds the socket closed and does without */
    struct pollfd p = {.fd = RELAY_LIFE, .events = POLLIN};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&child.mutex);
    child.dying = true;
    pthread_mutex_unlock(&child.mutex);
    relay_drain();
    _exit(0);
}

/* In the new child: the three descriptors it needs at fixed numbers, every
 * other one closed (the daemon's device above all, and the store's: a
 * copy of a descriptor would keep an flock of the daemon's alive). */
static _Noreturn void relay_start(int sock, int dev, int life)
{
    int a = fcntl(sock, F_DUPFD, 100), b = fcntl(dev, F_DUPFD, 100),
        c = fcntl(life, F_DUPFD, 100);
    /* above 100 too: opened at a free 3..5 it would be replaced by a
     * dup2 below, and stdin and stdout would get the socket or device */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0 && null < RELAY_FIRST_FREE)
        null = fcntl(null, F_DUPFD, 100);

    if (a < 0 || b < 0 || c < 0 || null < 0 || dup2(a, RELAY_SOCK) < 0 ||
        dup2(b, RELAY_DEV) < 0 || dup2(c, RELAY_LIFE) < 0 || dup2(null, 0) < 0 ||
        dup2(null, 1) < 0)
        _exit(1);
    if (close_range(RELAY_FIRST_FREE, ~0U, 0) < 0)
        _exit(1);
    /* A fresh image of drxfs (drxfs_relay_entry): between a fork of the
     * threaded daemon and an exec only async-signal-safe calls are sound
     * (a lock another thread held at the fork, in malloc or in a
     * sanitizer's runtime, stays held in the child), and the relay needs
     * a thread and memory.  Without /proc, the child runs it as it is. */
    execl("/proc/self/exe", RELAY_ARGV0, (char *)NULL);
    relay_run();
}

void drxfs_relay_entry(int argc, char *argv[])
{
    struct stat st;

    /* the relay's three descriptors must be there: a drxfs started by
     * hand under that name is not a relay */
    if (argc != 1 || strcmp(argv[0], RELAY_ARGV0) != 0 || fstat(RELAY_SOCK, &st) < 0 ||
        !S_ISSOCK(st.st_mode) || fstat(RELAY_DEV, &st) < 0 || !S_ISCHR(st.st_mode) ||
        fstat(RELAY_LIFE, &st) < 0 || !S_ISFIFO(st.st_mode))
        return;
    relay_run();
}

/* ---- the daemon's side ---- */

/* One message to the relay on sock and its answer into *res; false when
 * the relay is gone (or the socket was shut: drxfs_notify_closing). */
static bool round_trip(int sock, const char *msg, size_t len, int32_t *res)
{
    ssize_t n;

    while ((n = send(sock, msg, len, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)len)
        return false;
    while ((n = recv(sock, res, sizeof *res, 0)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof *res;
}

static int relay_spawn(void);

static void close_if(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* The relay died, or none could be started (rl.mutex held, not closing):
 * a new one in its place, true when there is one.  A start that failed
 * (EMFILE, EAGAIN from fork) is tried again at the next invalidation, as
 * a relay that died is: what failed may pass by then.  The dead one is
 * reaped now if it has exited, else at stop (it may still wait on a page
 * of its own). */
static bool relay_respawn(void)
{
    pid_t old = rl.pid;

    if (rl.respawns >= RELAY_RESPAWNS)
        return false;
    close_if(__atomic_exchange_n(&rl.sock, -1, __ATOMIC_SEQ_CST));
    close_if(__atomic_exchange_n(&rl.lifeline, -1, __ATOMIC_SEQ_CST));
    if (old > 0 && waitpid(old, NULL, WNOHANG) == 0)
        rl.dead[rl.respawns] = old;
    rl.pid = -1;
    rl.respawns++;
    if (relay_spawn() < 0)
        return false;
    /* sequentially consistent with drxfs_notify_closing(): either it sees
     * the new relay's descriptors, or this sees it ran */
    if (__atomic_load_n(&rl.closing, __ATOMIC_SEQ_CST))
        drxfs_notify_closing(); /* it ran on the old relay's socket */
    if (old > 0)
        drx_log(DRX_LOG_WARNING,
                "the invalidation relay (pid %ld) is gone; started another (pid %ld)", (long)old,
                (long)rl.pid);
    else
        drx_log(DRX_LOG_WARNING, "started the invalidation relay (pid %ld)", (long)rl.pid);
    rl.lost = false;
    return true;
}

/* Hands the notification to the relay and waits for the kernel's answer:
 * its length, or -1 with errno.  Without a relay, 0 with *sent false. */
static ssize_t relay_send(const struct iovec *iov, bool *sent)
{
    char msg[sizeof(struct fuse_out_header) + sizeof(struct fuse_notify_inval_inode_out)];
    int32_t res = 0;

    memcpy(msg, iov[0].iov_base, iov[0].iov_len);
    memcpy(msg + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
    pthread_mutex_lock(&rl.mutex);
    bool ok = rl.sock >= 0 && round_trip(rl.sock, msg, sizeof msg, &res);
    bool closing = __atomic_load_n(&rl.closing, __ATOMIC_ACQUIRE);
    if (!rl.wanted) {
        pthread_mutex_unlock(&rl.mutex);
        *sent = false;
        return 0;
    }
    if (!ok && !closing && relay_respawn())
        ok = round_trip(rl.sock, msg, sizeof msg, &res);
    closing = __atomic_load_n(&rl.closing, __ATOMIC_ACQUIRE);
    if (!ok && !rl.lost && !closing) {
        rl.lost = true;
        drx_log(DRX_LOG_WARNING, "the invalidation relay is gone; the daemon invalidates "
                                 "pages itself (a kill -9 or a stop may then leave the "
                                 "mount hung)");
    }
    pthread_mutex_unlock(&rl.mutex);
    if (!ok && closing)
        ok = true; /* not waited for in the daemon either */
    *sent = ok;
    if (ok && res < 0) {
        errno = -res;
        return -1;
    }
    return ok ? (ssize_t)sizeof msg : 0;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    ssize_t n;
    do {
        n = read(fd, buf, len);
        expires = false;
        if (n > 0) {
            drxfs_init_request(buf, (size_t)n);
            drxfs_killpriv_request(buf, (size_t)n);
            drxfs_order_taken(buf, (size_t)n);
        }
    } while (n > 0 && drxfs_rename_self(fd, buf, (size_t)n));
    return n;
}

void drxfs_reply_expires(void)
{
    expires = true;
}

/* A reply of attributes (GETATTR's) with their timeout 0, the kernel's
 * "expired": they land (a read stops at their size), and the next stat
 * asks again. */
static bool attr_reply_expired(const struct iovec *iov, int count, struct iovec *amended,
                               struct fuse_attr_out *attr)
{
    const struct fuse_out_header *h = iov[0].iov_base;

    if (count != 2 || iov[0].iov_len != sizeof *h || h->unique == 0 || h->error != 0 ||
        iov[1].iov_len != sizeof *attr)
        return false;
    *attr = *(const struct fuse_attr_out *)iov[1].iov_base;
    attr->attr_valid = 0;
    attr->attr_valid_nsec = 0;
    amended[0] = iov[0];
    amended[1] = (struct iovec){.iov_base = attr, .iov_len = sizeof *attr};
    return true;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    struct fuse_init_out init;
    struct fuse_attr_out attr;
    struct iovec amended[2];

    (void)userdata;
    if (drxfs_init_reply(iov, count, amended, &init))
        return writev(fd, amended, 2);
    if (expires && attr_reply_expired(iov, count, amended, &attr)) {
        expires = false;
        return writev(fd, amended, 2);
    }
    if (count != 2 || iov[0].iov_len != sizeof(struct fuse_out_header) ||
        iov[1].iov_len != sizeof(struct fuse_notify_inval_inode_out))
        return writev(fd, iov, count);
    const struct fuse_out_header *h = iov[0].iov_base;
    if (h->unique != 0 || h->error != FUSE_NOTIFY_INVAL_INODE)
        return writev(fd, iov, count);
    if (attrs_only) {
        struct fuse_notify_inval_inode_out arg = *(const struct fuse_notify_inval_inode_out *)iov[1].iov_base;
        struct iovec v[2] = {iov[0], {.iov_base = &arg, .iov_len = sizeof arg}};
        arg.off = -1; /* attributes only: no page is waited for */
        arg.len = 0;
        return writev(fd, v, 2);
    }
    bool sent;
    ssize_t n = relay_send(iov, &sent);
    return sent ? n : writev(fd, iov, count);
}

int drxfs_inval_attrs(struct fuse *f, const char *path)
{
    attrs_only = true;
    int rc = fuse_invalidate_path(f, path);
    attrs_only = false;
    return rc;
}

/* A relay: its socket, lifeline and clone of the session's device, and
 * the child holding them.  0, or -1 (logged). */
static int relay_spawn(void)
{
    int sv[2] = {-1, -1}, life[2] = {-1, -1}, dev = -1;
    uint32_t master = (uint32_t)rl.sefd;
    pid_t pid = -1;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        pipe2(life, O_CLOEXEC) < 0 || (dev = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0 ||
        ioctl(dev, FUSE_DEV_IOC_CLONE, &master) < 0 || (pid = fork()) < 0) {
        int rc = -errno;
        drx_log(DRX_LOG_WARNING, "invalidation relay: %s; a kill -9 may leave the mount hung",
                strerror(-rc));
        pid = -1;
        goto out;
    }
    if (pid == 0)
        relay_start(sv[1], dev, life[0]);
    __atomic_store_n(&rl.sock, sv[0], __ATOMIC_SEQ_CST);
    __atomic_store_n(&rl.lifeline, life[1], __ATOMIC_SEQ_CST);
    rl.pid = pid;
    sv[0] = life[1] = -1;
out:
    close_if(sv[0]);
    close_if(sv[1]);
    close_if(life[0]);
    close_if(life[1]);
    close_if(dev);
    return pid < 0 ? -1 : 0;
}

int drxfs_notify_start(struct fuse_session *se, bool relay)
{
    static const struct fuse_custom_io io = {.read = io_read, .writev = io_writev};

    rl.sefd = fuse_session_fd(se);
    if (fuse_session_custom_io(se, &io, rl.sefd) != 0)
        return -ENOMEM;
    /* without the kernel cache the io only amends the INIT reply: no relay
     * is started, and invalidations (if any) go straight to the device */
    rl.wanted = relay;
    return relay ? relay_spawn() : 0;
}

/* The loop has ended, and libfuse drops a request its worker read as it
 * exited: never answered, it holds its pages locked until the device
 * closes (fuse_unmount), so an invalidation waiting on them would keep the
 * kernel cache's thread, and drxfs_kc_stop(), waiting for ever.  The
 * round trip stops waiting (the socket shut), and the relay is reaped only
 * after the unmount (drxfs_notify_stop). */
void drxfs_notify_closing(void)
{
    __atomic_store_n(&rl.closing, true, __ATOMIC_SEQ_CST);
    int life = __atomic_exchange_n(&rl.lifeline, -1, __ATOMIC_SEQ_CST);
    if (life >= 0)
        close(life);
    int sock = __atomic_load_n(&rl.sock, __ATOMIC_SEQ_CST);
    if (sock >= 0)
        shutdown(sock, SHUT_RDWR);
}

/* Reaps a relay.  One stopped (SIGSTOP, or ^Z of drxfs -f and then a
 * kill of drxfs alone) would never see its lifeline close, and the daemon
 * would wait here for ever after the unmount: it is let go on first.  Not
 * killed: with a file still open on the lazily unmounted mount, it may
 * still have to drain the requests its invalidation waits on. */
static void relay_reap(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

void drxfs_notify_stop(void)
{
    int life = __atomic_exchange_n(&rl.lifeline, -1, __ATOMIC_ACQ_REL);
    if (life >= 0)
        close(life);
    pthread_mutex_lock(&rl.mutex);
    int sock = __atomic_exchange_n(&rl.sock, -1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&rl.mutex);
    if (sock >= 0) {
        close(sock);
        relay_reap(rl.pid);
    }
    for (int i = 0; i < RELAY_RESPAWNS; i++)
        relay_reap(rl.dead[i]);
}
