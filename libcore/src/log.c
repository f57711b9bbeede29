/* Logging: formats messages and hands them to the front end's sink. */
#include "drx/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "msg_alias_i.h"

/* The sink and its argument change together, so they sit under one lock;
 * the level is read on every call and is atomic to keep the fast path (a
 * dropped debug message) lock-free. */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static drx_log_sink_fn sink_fn;
static void *sink_arg;
static atomic_int log_level = DRX_LOG_INFO;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void drx_log_set_sink(drx_log_sink_fn fn, void *arg)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_arg = arg;
    pthread_mutex_unlock(&sink_lock);
}

void drx_log_set_level(enum drx_log_level level)
{
    atomic_store(&log_level, (int)level);
}

bool drx_log_enabled(enum drx_log_level level)
{
    return (int)level <= atomic_load(&log_level);
}

static void log_v(enum drx_log_level level, const char *fmt, va_list ap)
{
    char msg[DRX_LOG_MSG_MAX];
    drx_log_sink_fn fn;
    void *arg;
    size_t n;

    pthread_mutex_lock(&sink_lock);
    fn = sink_fn;
    arg = sink_arg;
    pthread_mutex_unlock(&sink_lock);
    if (!fn)
        return;
    vsnprintf(msg, sizeof msg, fmt, ap);
    drx_msg_alias_apply(msg, sizeof msg);
    /* One message is one line: a trailing newline would double up. */
    n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    fn(arg, level, msg);
}

void drx_log(enum drx_log_level level, const char *fmt, ...)
{
    va_list ap;

    if (!drx_log_enabled(level))
        return;
    va_start(ap, fmt);
    log_v(level, fmt, ap);
    va_end(ap);
}

void drx_log_limited(struct drx_log_limit *l, enum drx_log_level level, const char *fmt, ...)
{
    struct timespec now;
    unsigned dropped = 0;
    bool pass;
    va_list ap;

    if (!drx_log_enabled(level))
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&l->lock);
    if (!l->started || now.tv_sec - l->window.tv_sec >= (time_t)l->interval) {
        dropped = l->dropped;
        l->started = true;
        l->window = now;
        l->sent = 0;
        l->dropped = 0;
    }
    pass = l->sent < l->burst;
    if (pass)
        l->sent++;
    else
        l->dropped++;
    pthread_mutex_unlock(&l->lock);
    /* Said when the next message comes, not by a timer: a quiet daemon
     * owes nobody the count. */
    if (dropped)
        drx_log(level, "(%u more like the next were not logged in %u s)", dropped, l->interval);
    if (!pass)
        return;
    va_start(ap, fmt);
    log_v(level, fmt, ap);
    va_end(ap);
}

int drx_log_level_parse(const char *name, enum drx_log_level *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (name && strcmp(name, level_names[i]) == 0) {
            *out = (enum drx_log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *drx_log_level_name(enum drx_log_level level)
{
    if ((int)level < 0 || (size_t)level >= sizeof level_names / sizeof level_names[0])
        return "?";
    return level_names[level];
}

void drx_log_stderr_sink(void *arg, enum drx_log_level level, const char *msg)
{
    char line[DRX_LOG_MSG_MAX + 128];
    const char *prefix = arg ? (const char *)arg : "drx";
    int n = snprintf(line, sizeof line, "%s: %s: %s\n", prefix, drx_log_level_name(level), msg);

    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    /* One write per line so that threads do not interleave inside a line. */
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
