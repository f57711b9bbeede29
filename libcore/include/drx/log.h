/* Logging of libcore.
 *
 * libcore never prints.  Code that has something to tell an operator (a
 * hostile metafile refused, a missing stripe directory) calls drx_log(); the
 * message goes to the sink the front end registered (drxfs: its stderr or
 * syslog; drx: stderr).  Without a sink, messages are dropped.
 *
 * Thread safety: drx_log() may be called from any thread at any time.  The
 * sink is called with a complete, NUL-terminated, newline-free message and
 * may be called from several threads at once; it must be thread-safe.
 * drx_log_set_sink()/drx_log_set_level() may be called at any time as well.
 */
#ifndef DRX_LOG_H
#define DRX_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* Severities, most severe first: a level shows itself and all before it. */
enum drx_log_level {
    DRX_LOG_ERROR = 0,
    DRX_LOG_WARNING = 1,
    DRX_LOG_INFO = 2,
    DRX_LOG_DEBUG = 3,
};

/* Longest message delivered to a sink (longer ones are cut). */
#define DRX_LOG_MSG_MAX 1024

/* A sink receives one message (no trailing newline) at a time. */
typedef void (*drx_log_sink_fn)(void *arg, enum drx_log_level level, const char *msg);

/* Registers the sink (NULL drops every message) and its argument. */
void drx_log_set_sink(drx_log_sink_fn fn, void *arg);

/* Messages less severe than level are dropped before formatting.  The
 * default level is DRX_LOG_INFO. */
void drx_log_set_level(enum drx_log_level level);

/* True when a message of this level would reach a sink (to skip costly
 * formatting of debug messages). */
bool drx_log_enabled(enum drx_log_level level);

/* Formats and delivers one message. */
void drx_log(enum drx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A rate limit for messages that anyone can cause at will, such as a
 * mistyped name looked up in a loop: at most `burst` messages per
 * `interval` seconds get through; when a later window opens, one message
 * says how many were dropped.  Define one per kind of message with
 * DRX_LOG_LIMIT_INIT; the fields are private. */
struct drx_log_limit {
    pthread_mutex_t lock;
    unsigned burst, interval;
    bool started;
    struct timespec window; /* CLOCK_MONOTONIC start of the current window */
    unsigned sent, dropped;
};
#define DRX_LOG_LIMIT_INIT(burst_, interval_)                                                      \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER, .burst = (burst_), .interval = (interval_)              \
    }

/* drx_log() under the limit l (thread-safe). */
void drx_log_limited(struct drx_log_limit *l, enum drx_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "error", "warning", "info", "debug" (case-sensitive) -> *out; returns 0,
 * or -EINVAL for any other name. */
int drx_log_level_parse(const char *name, enum drx_log_level *out);

/* The name of a level ("error", ...); "?" for an invalid value. */
const char *drx_log_level_name(enum drx_log_level level);

/* A ready-made sink writing "PREFIX: level: msg\n" to stderr with one
 * write(2) per message (arg: the prefix as const char *, or NULL).  For
 * front ends only; libcore itself never registers it. */
void drx_log_stderr_sink(void *arg, enum drx_log_level level, const char *msg);

#endif
