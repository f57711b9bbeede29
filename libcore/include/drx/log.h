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
#include <stdint.h>
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

/* msg into out (size bytes, cut when full) as the log writes its
 * messages: control characters, line separators, bidirectional overrides,
 * bytes that are not UTF-8 (and backslashes, when backslash) as \xNN, so
 * that a message stays one line whatever names it quotes.  For what a
 * command prints of a store's names (drx fsck). */
void drx_msg_escape(const char *msg, char *out, size_t size, bool backslash);

/* A rate limit for messages that anyone can cause at will, such as a
 * refused subfile opened in a loop by another local user, which would
 * flood root's log (as the kernel's printk_ratelimit guards): within
 * `interval` seconds, the first report of each distinct message gets
 * through, `burst` of them at most, and its repeats are counted, not
 * logged; when a later window opens, or drx_log_limits_flush() is called,
 * one message says how many were suppressed.  Define one per kind of
 * message with DRX_LOG_LIMIT_INIT (or use drx_log_ratelimited); the
 * fields are private. */
/* Each actor (drx_log_set_actor_fn) has a burst of its own in a window;
 * past this many actors the others share one. */
#define DRX_LOG_LIMIT_ACTORS 8
/* Messages a window remembers, so that none passes twice in it: every
 * burst of drx_log_ratelimited's 10 full (the actors' and the shared one).
 * A message that could not be remembered is counted, not logged. */
#define DRX_LOG_LIMIT_SEEN (10 * (DRX_LOG_LIMIT_ACTORS + 1))
struct drx_log_limit {
    pthread_mutex_t lock;
    unsigned burst, interval;
    bool started, listed;
    struct timespec window; /* CLOCK_MONOTONIC start of the current window */
    unsigned sent, dropped, nseen; /* sent: the shared burst's */
    long actor[DRX_LOG_LIMIT_ACTORS];
    unsigned actor_sent[DRX_LOG_LIMIT_ACTORS], nactors;
    uint32_t seen[DRX_LOG_LIMIT_SEEN]; /* hashes of the messages let through */
    enum drx_log_level level;          /* of the first suppressed message */
    char first[200];                   /* its text, for the count */
    struct drx_log_limit *next;        /* in the list drx_log_limits_flush walks */
};
#define DRX_LOG_LIMIT_INIT(burst_, interval_)                                                      \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER, .burst = (burst_), .interval = (interval_)              \
    }

/* Who causes the messages logged in the calling thread, for the limits'
 * bursts: fn returns it (a uid; -1: nobody in particular), and each actor
 * gets a burst of its own, so that one user who keeps a call site's burst
 * full cannot hide another user's first message from that site.  A front
 * end serving several users sets it (drxfs: the FUSE request's caller);
 * NULL (the default): one burst for all. */
void drx_log_set_actor_fn(long (*fn)(void));

/* drx_log() under the limit l (thread-safe). */
void drx_log_limited(struct drx_log_limit *l, enum drx_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* drx_log() under a limit of its own call site (10 distinct messages a
 * minute): for every message an unprivileged user can cause again and
 * again (a hostile file opened in a loop). */
#define drx_log_ratelimited(level, ...)                                                            \
    do {                                                                                           \
        static struct drx_log_limit drx_rl_ = DRX_LOG_LIMIT_INIT(10, 60);                          \
        drx_log_limited(&drx_rl_, (level), __VA_ARGS__);                                           \
    } while (0)

/* Says, for every limit that suppressed messages since its last report,
 * how many (a daemon calls it as it stops, so that no count is lost). */
void drx_log_limits_flush(void);

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
