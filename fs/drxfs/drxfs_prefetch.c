/* Prefetch launcher of the drxfs daemon: see drxfs_prefetch.h. */
#include "drxfs_prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drx/log.h"

extern char **environ;

/* Grace period between SIGTERM and SIGKILL at destroy. */
#define PREFETCH_GRACE_SEC 5
/* Jobs running at once, whatever the arrays read: each is an mpiexec of
 * `ranks` readers, and any user who may read many arrays would otherwise
 * start one per array.  A request past it is dropped (reads go on, from
 * the daemon's own read-ahead). */
#define PREFETCH_MAX_JOBS 2

struct job {
    struct drxfs_prefetch *owner;
    char *array;  /* store path: the key of "one per array" */
    pid_t pid;    /* also the process group id */
    int errfd;    /* the child's stderr (an unlinked temporary file) */
    bool done;
    pthread_t waiter;
    struct job *next;
};

struct drxfs_prefetch {
    char *mpiexec, *loader;
    char *config; /* the daemon's -o config=FILE (absolute), or NULL */
    int ranks;
    uint64_t min_bytes;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a job finished */
    struct job *jobs;       /* running and finished-but-not-joined */
    bool stopping;
    bool warned; /* a launch failure was logged at warning level */
};

const char *drxfs_prefetch_find_loader(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, len, "%s/../mpi-loader/drx-load", exe);
            if (access(buf, X_OK) == 0)
                return buf;
            snprintf(buf, len, "%s/drx-load", exe);
            if (access(buf, X_OK) == 0)
                return buf;
            /* installed: drxfs in sbin, drx-load in bin */
            snprintf(buf, len, "%s/../bin/drx-load", exe);
            if (access(buf, X_OK) == 0)
                return buf;
        }
    }
    snprintf(buf, len, "drx-load");
    return buf;
}

struct drxfs_prefetch *drxfs_prefetch_create(const char *mpiexec, int ranks,
                                             const char *drx_load_path, uint64_t min_bytes)
{
    char found[PATH_MAX];
    struct drxfs_prefetch *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->mpiexec = strdup(mpiexec && *mpiexec ? mpiexec : "mpiexec");
    p->loader = strdup(drx_load_path ? drx_load_path
                                     : drxfs_prefetch_find_loader(found, sizeof(found)));
    p->ranks = ranks > 0 ? ranks : 1;
    p->min_bytes = min_bytes;
    if (!p->mpiexec || !p->loader) {
        free(p->mpiexec);
        free(p->loader);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    return p;
}

int drxfs_prefetch_set_config(struct drxfs_prefetch *p, const char *config_path)
{
    char *copy = NULL;
    if (config_path && !(copy = realpath(config_path, NULL)))
        return -errno;
    free(p->config);
    p->config = copy;
    return 0;
}

uint64_t drxfs_prefetch_min_bytes(const struct drxfs_prefetch *p)
{
    return p->min_bytes;
}

/* The last non-empty line the child wrote to stderr, for the log. */
static void last_line(int fd, char *out, size_t len)
{
    char buf[4096];
    struct stat st;
    out[0] = '\0';
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0)
        return;
    off_t off = st.st_size > (off_t)sizeof(buf) - 1 ? st.st_size - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, off);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    char *start = strrchr(buf, '\n');
    start = start ? start + 1 : buf;
    /* progress lines use \r; keep what follows the last one */
    char *cr = strrchr(start, '\r');
    if (cr)
        start = cr + 1;
    size_t m = strlen(start) < len - 1 ? strlen(start) : len - 1;
    memcpy(out, start, m);
    out[m] = '\0';
}

static void *job_wait(void *arg)
{
    struct job *j = arg;
    struct drxfs_prefetch *p = j->owner;
    int status = 0;
    pid_t r;

    do
        r = waitpid(j->pid, &status, 0);
    while (r < 0 && errno == EINTR);

    pthread_mutex_lock(&p->lock);
    bool stopping = p->stopping;
    pthread_mutex_unlock(&p->lock);
    if (r < 0) {
        drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: waitpid: %s", j->array,
                            strerror(errno));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        drx_log(DRX_LOG_DEBUG, "prefetch of %s done", j->array);
    } else if (!stopping) {
        char why[512];
        last_line(j->errfd, why, sizeof(why));
        if (WIFSIGNALED(status))
            drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: %s killed by signal %d%s%s",
                                j->array, p->mpiexec, WTERMSIG(status), why[0] ? ": " : "", why);
        else
            drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: %s exited with status %d%s%s",
                                j->array, p->mpiexec, WEXITSTATUS(status), why[0] ? ": " : "", why);
    }
    pthread_mutex_lock(&p->lock);
    j->done = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Joins and frees finished jobs.  Called with the lock held. */
static void collect(struct drxfs_prefetch *p)
{
    struct job **jp = &p->jobs;
    while (*jp) {
        struct job *j = *jp;
        if (!j->done) {
            jp = &j->next;
            continue;
        }
        *jp = j->next;
        /* done is set as the waiter's last act: the join is immediate */
        pthread_join(j->waiter, NULL);
        if (j->errfd >= 0)
            close(j->errfd);
        free(j->array);
        free(j);
    }
}

/* Whether a job for array may start: none for it runs, and fewer than
 * PREFETCH_MAX_JOBS in all (lock held, finished jobs collected). */
static bool may_start(const struct drxfs_prefetch *p, const char *array)
{
    int n = 0;

    for (const struct job *j = p->jobs; j; j = j->next) {
        if (strcmp(j->array, array) == 0) {
            drx_log(DRX_LOG_DEBUG, "prefetch of %s already running", array);
            return false;
        }
        n++;
    }
    if (n >= PREFETCH_MAX_JOBS) {
        drx_log(DRX_LOG_DEBUG, "prefetch of %s: %d jobs running already; not started", array, n);
        return false;
    }
    return true;
}

/* Spawns the launcher for j; 0 or an errno. */
static int spawn(struct drxfs_prefetch *p, struct job *j, const char *const *words, int nwords)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, defaults;
    char nbuf[16];
    int rc;

    char **argv = calloc((size_t)nwords + 10, sizeof(*argv));
    if (!argv)
        return ENOMEM;
    snprintf(nbuf, sizeof(nbuf), "%d", p->ranks);
    int k = 0;
    argv[k++] = p->mpiexec;
    argv[k++] = (char *)"-n";
    argv[k++] = nbuf;
    argv[k++] = p->loader;
    if (p->config) {
        argv[k++] = (char *)"--config";
        argv[k++] = p->config;
    }
    argv[k++] = (char *)"--no-progress";
    argv[k++] = (char *)"prefetch";
    argv[k++] = j->array;
    for (int i = 0; i < nwords; i++)
        argv[k++] = (char *)words[i];
    argv[k] = NULL;

    /* stderr to an unlinked temporary file: read at exit for the log, and
     * never a pipe that could fill up and stall the child. */
    j->errfd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (j->errfd >= 0)
        posix_spawn_file_actions_adddup2(&fa, j->errfd, 2);
    else
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* Nothing of the daemon (the /dev/fuse descriptor above all) may live
     * on in the child: it would keep the mount busy. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);

    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    /* Its own process group (pgid = its pid), so that destroy can stop
     * mpiexec and everything it started with one kill(-pgid). */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);

    rc = posix_spawnp(&j->pid, p->mpiexec, &fa, &at, argv, environ);

    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    return rc;
}

void drxfs_prefetch_request(struct drxfs_prefetch *p, const char *array_store_path,
                            const char *const *view_words, int nwords)
{
    if (!p || !array_store_path)
        return;
    pthread_mutex_lock(&p->lock);
    collect(p);
    if (p->stopping)
        goto out;
    if (!may_start(p, array_store_path))
        goto out;
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->array = strdup(array_store_path))) {
        free(j);
        drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: out of memory", array_store_path);
        goto out;
    }
    j->owner = p;
    j->errfd = -1;
    int rc = spawn(p, j, view_words, nwords);
    if (rc != 0) {
        /* Once at warning level: a missing mpiexec would otherwise log at
         * every large read. */
        drx_log(p->warned ? DRX_LOG_DEBUG : DRX_LOG_WARNING,
                "prefetch of %s: cannot run %s: %s (reads go on without it)", array_store_path,
                p->mpiexec, strerror(rc));
        p->warned = true;
        goto fail;
    }
    rc = pthread_create(&j->waiter, NULL, job_wait, j);
    if (rc != 0) {
        /* Without a waiter nobody reaps it: stop it and reap here. */
        kill(-j->pid, SIGKILL);
        waitpid(j->pid, NULL, 0);
        drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: no thread: %s", array_store_path,
                            strerror(rc));
        goto fail;
    }
    drx_log_ratelimited(DRX_LOG_INFO, "prefetch of %s: started %s -n %d %s (pid %d)",
                        array_store_path, p->mpiexec, p->ranks, p->loader, (int)j->pid);
    j->next = p->jobs;
    p->jobs = j;
    goto out;
fail:
    if (j->errfd >= 0)
        close(j->errfd);
    free(j->array);
    free(j);
out:
    pthread_mutex_unlock(&p->lock);
}

/* Waits (lock held) until every job is done or the deadline passes. */
static bool wait_all(struct drxfs_prefetch *p, int seconds)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += seconds;
    for (;;) {
        bool all = true;
        for (struct job *j = p->jobs; j; j = j->next)
            all = all && j->done;
        if (all)
            return true;
        if (pthread_cond_timedwait(&p->changed, &p->lock, &dl) == ETIMEDOUT)
            return false;
    }
}

static void signal_all(struct drxfs_prefetch *p, int sig)
{
    for (struct job *j = p->jobs; j; j = j->next)
        if (!j->done)
            kill(-j->pid, sig);
}

void drxfs_prefetch_destroy(struct drxfs_prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    signal_all(p, SIGTERM);
    if (!wait_all(p, PREFETCH_GRACE_SEC)) {
        signal_all(p, SIGKILL);
        wait_all(p, PREFETCH_GRACE_SEC);
    }
    /* A job still not done here has a waiter blocked in waitpid on a
     * process that survived SIGKILL (uninterruptible I/O): joining would
     * hang the unmount, so detach it and leave its memory. */
    for (struct job *j = p->jobs; j; j = j->next) {
        if (!j->done) {
            drx_log_ratelimited(DRX_LOG_WARNING, "prefetch of %s: pid %d did not stop", j->array,
                                (int)j->pid);
            pthread_detach(j->waiter);
        }
    }
    collect(p);
    bool leak = p->jobs != NULL;
    pthread_mutex_unlock(&p->lock);
    if (leak)
        return; /* the remaining waiters still use p */
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p->mpiexec);
    free(p->loader);
    free(p->config);
    free(p);
}
