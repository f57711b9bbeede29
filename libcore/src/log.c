/* Logging: formats messages and hands them to the front end's sink. */
#include "drx/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
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

/* Whether code point c is a control, a line separator or a format
 * character that reorders what a viewer shows (bidirectional marks and
 * embeddings, the byte order mark). */
static bool hidden_code(uint32_t c)
{
    return c <= 0x9f || c == 0x2028 || c == 0x2029 || c == 0x200e || c == 0x200f ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x061c ||
           c == 0xfeff;
}

/* The length of the UTF-8 character at p (1-4) when it is valid and not
 * hidden_code, else 0. */
static int printable_utf8(const unsigned char *p)
{
    int n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
            : p[0] >= 0xe0 && p[0] <= 0xef ? 3
            : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                           : 0;
    uint32_t c = n == 2 ? p[0] & 0x1f : n == 3 ? p[0] & 0x0f : p[0] & 0x07;

    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    if (n == 0 || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff) || hidden_code(c))
        return 0;
    return n;
}

/* The log's escaping (msg_alias_i.h); a backslash too there: in the log it
 * starts an escape and nothing else, so a name holding the text "\x0a"
 * cannot pass for a newline. */
void drx_msg_escape(const char *msg, char *out, size_t size, bool backslash)
{
    size_t o = 0;

    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 1 < size;) {
        int n = *p >= 0x20 && *p < 0x7f && (*p != '\\' || !backslash) ? 1
                : *p >= 0x80                                       ? printable_utf8(p)
                                                                   : 0;
        if (n > 0 && o + (size_t)n < size) {
            memcpy(out + o, p, (size_t)n);
            o += (size_t)n;
            p += n;
        } else if (n == 0 && o + 5 < size) {
            snprintf(out + o, size - o, "\\x%02x", *p++);
            o += 4;
        } else {
            break;
        }
    }
    out[o] = '\0';
}

static void log_v(enum drx_log_level level, const char *fmt, va_list ap)
{
    char msg[DRX_LOG_MSG_MAX], line[DRX_LOG_MSG_MAX];
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
    drx_msg_escape(msg, line, sizeof line, true);
    fn(arg, level, line);
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

/* Limits that have been used, for drx_log_limits_flush; taken before a
 * limit's own lock, never after it. */
static pthread_mutex_t limits_lock = PTHREAD_MUTEX_INITIALIZER;
static struct drx_log_limit *limits;

static void limit_list(struct drx_log_limit *l)
{
    pthread_mutex_lock(&limits_lock);
    if (!l->listed) {
        l->listed = true;
        l->next = limits;
        limits = l;
    }
    pthread_mutex_unlock(&limits_lock);
}

/* FNV-1a: repeats of one message are told apart from new ones by it (a
 * collision only drops one message, counted). */
static uint32_t msg_hash(const char *msg)
{
    uint32_t h = 2166136261u;

    for (; *msg; msg++)
        h = (h ^ (unsigned char)*msg) * 16777619u;
    return h;
}

static _Atomic(long (*)(void)) actor_fn;

void drx_log_set_actor_fn(long (*fn)(void))
{
    atomic_store(&actor_fn, fn);
}

/* The sent count of actor's burst in l's window: its own while there is
 * room for it, else the one the rest share.  l locked. */
static unsigned *limit_sent(struct drx_log_limit *l, long actor)
{
    if (actor < 0)
        return &l->sent;
    for (unsigned i = 0; i < l->nactors; i++)
        if (l->actor[i] == actor)
            return &l->actor_sent[i];
    if (l->nactors == DRX_LOG_LIMIT_ACTORS)
        return &l->sent;
    l->actor[l->nactors] = actor;
    l->actor_sent[l->nactors] = 0;
    return &l->actor_sent[l->nactors++];
}

static bool limit_seen(const struct drx_log_limit *l, uint32_t h)
{
    for (unsigned i = 0; i < l->nseen; i++)
        if (l->seen[i] == h)
            return true;
    return false;
}

/* The count l owes, as a message in out (empty when none), and l's
 * count reset; l locked. */
static void limit_owed(struct drx_log_limit *l, char *out, size_t len, unsigned secs)
{
    out[0] = '\0';
    if (l->dropped)
        snprintf(out, len, "(%u more like \"%s\" suppressed in %u s)", l->dropped, l->first, secs);
    l->dropped = 0;
}

/* Whether message msg (hash h) passes l now; what l owes from a past
 * window goes to owed.  l locked. */
static bool limit_pass(struct drx_log_limit *l, enum drx_log_level level, const char *msg,
                       uint32_t h, long actor, char *owed, size_t len)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    owed[0] = '\0';
    if (!l->started || now.tv_sec - l->window.tv_sec >= (time_t)l->interval) {
        limit_owed(l, owed, len, l->interval);
        l->started = true;
        l->window = now;
        l->sent = 0;
        l->nseen = 0;
        l->nactors = 0;
    }
    /* a repeat is suppressed even while the burst lasts: the burst is for
     * distinct problems, the first report of each */
    unsigned *sent = limit_sent(l, actor);
    if (!limit_seen(l, h) && *sent < l->burst && l->nseen < DRX_LOG_LIMIT_SEEN) {
        (*sent)++;
        l->seen[l->nseen++] = h;
        return true;
    }
    if (l->dropped++ == 0) {
        l->level = level;
        /* cut: the count names the message, it need not repeat it whole */
        size_t n = strnlen(msg, sizeof l->first - 1);
        memcpy(l->first, msg, n);
        l->first[n] = '\0';
    }
    return false;
}

void drx_log_limited(struct drx_log_limit *l, enum drx_log_level level, const char *fmt, ...)
{
    char msg[DRX_LOG_MSG_MAX], owed[sizeof l->first + 64];
    enum drx_log_level owed_level;
    bool pass;
    va_list ap;

    if (!drx_log_enabled(level))
        return;
    limit_list(l);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    long (*who)(void) = atomic_load(&actor_fn);
    long actor = who ? who() : -1;
    pthread_mutex_lock(&l->lock);
    owed_level = l->level;
    pass = limit_pass(l, level, msg, msg_hash(msg), actor, owed, sizeof owed);
    pthread_mutex_unlock(&l->lock);
    /* Said when the next message comes, not by a timer: a quiet daemon
     * owes nobody the count (until it stops: drx_log_limits_flush). */
    if (owed[0])
        drx_log(owed_level, "%s", owed);
    if (pass)
        drx_log(level, "%s", msg);
}

void drx_log_limits_flush(void)
{
    pthread_mutex_lock(&limits_lock);
    for (struct drx_log_limit *l = limits; l; l = l->next) {
        char owed[sizeof l->first + 64];
        enum drx_log_level level;
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&l->lock);
        level = l->level;
        limit_owed(l, owed, sizeof owed, (unsigned)(now.tv_sec - l->window.tv_sec));
        pthread_mutex_unlock(&l->lock);
        if (owed[0])
            drx_log(level, "%s", owed);
    }
    pthread_mutex_unlock(&limits_lock);
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
