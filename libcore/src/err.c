#include "drx/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg_alias_i.h"

/* A few stores open by descriptor at once at most (one per daemon). */
#define ALIAS_SLOTS 4

static struct {
    char *from, *to;
} aliases[ALIAS_SLOTS];
static pthread_rwlock_t alias_lock = PTHREAD_RWLOCK_INITIALIZER;

int drx_msg_alias_add(const char *from, const char *to)
{
    char *f = strdup(from), *t = strdup(to);
    int rc = -ENOSPC;

    pthread_rwlock_wrlock(&alias_lock);
    for (int i = 0; f && t && i < ALIAS_SLOTS; i++)
        if (!aliases[i].from) {
            aliases[i].from = f;
            aliases[i].to = t;
            f = t = NULL;
            rc = 0;
            break;
        }
    pthread_rwlock_unlock(&alias_lock);
    if (f && !t)
        rc = -ENOMEM;
    free(f);
    free(t);
    return rc;
}

void drx_msg_alias_remove(const char *from)
{
    pthread_rwlock_wrlock(&alias_lock);
    for (int i = 0; i < ALIAS_SLOTS; i++)
        if (aliases[i].from && strcmp(aliases[i].from, from) == 0) {
            free(aliases[i].from);
            free(aliases[i].to);
            aliases[i].from = aliases[i].to = NULL;
        }
    pthread_rwlock_unlock(&alias_lock);
}

/* True when msg + at starts from, followed by the end, '/' or a character
 * that cannot continue a descriptor number ("/proc/self/fd/1" is not the
 * start of "/proc/self/fd/12"). */
static bool alias_at(const char *p, const char *from, size_t flen)
{
    return strncmp(p, from, flen) == 0 && !(p[flen] >= '0' && p[flen] <= '9');
}

static void apply_one(char *msg, size_t len, const char *from, const char *to)
{
    size_t flen = strlen(from), tlen = strlen(to);
    char *p = msg;

    while ((p = strstr(p, from))) {
        if (!alias_at(p, from, flen)) {
            p += flen;
            continue;
        }
        size_t off = (size_t)(p - msg), rest = strlen(p + flen);
        if (off + tlen >= len)
            tlen = len - off - 1;
        if (off + tlen + rest >= len)
            rest = len - off - tlen - 1;
        memmove(p + tlen, p + flen, rest);
        memcpy(p, to, tlen);
        p[tlen + rest] = '\0';
        p += tlen;
    }
}

#define FD_PREFIX "/proc/self/fd/"

/* A descriptor's path with no alias (a directory libcore holds open to
 * reach an entry beneath the store's root without following symlinks: the
 * daemon's pins, fsck's walk) is shown as the directory's path now: the
 * message is made while the descriptor is open.  Only a directory's: the
 * number may name anything else by then, and a file's path says less than
 * the message's own name for it. */
static void resolve_fds(char *msg, size_t len)
{
    size_t plen = strlen(FD_PREFIX);
    char *p = msg;

    while ((p = strstr(p, FD_PREFIX))) {
        char from[48], to[4096];
        char *end;
        long fd = strtol(p + plen, &end, 10);
        struct stat st;
        ssize_t n;

        if (end == p + plen || fd < 0 || fd > 1 << 24 || end - p >= (long)sizeof from ||
            (*end && *end != '/' && *end != ':' && *end != ' ')) {
            p += plen;
            continue;
        }
        memcpy(from, p, (size_t)(end - p));
        from[end - p] = '\0';
        if (fstat((int)fd, &st) || !S_ISDIR(st.st_mode) ||
            (n = readlink(from, to, sizeof to - 1)) <= 0 || to[0] != '/') {
            p = end;
            continue;
        }
        to[n] = '\0';
        size_t off = (size_t)(p - msg);
        apply_one(p, len - off, from, to);
        /* past what replaced it (apply_one changed every later one too) */
        p = msg + off + ((size_t)n < len - off - 1 ? (size_t)n : len - off - 1);
    }
}

void drx_msg_alias_apply(char *msg, size_t len)
{
    pthread_rwlock_rdlock(&alias_lock);
    for (int i = 0; i < ALIAS_SLOTS; i++)
        if (aliases[i].from && strstr(msg, aliases[i].from))
            apply_one(msg, len, aliases[i].from, aliases[i].to);
    pthread_rwlock_unlock(&alias_lock);
    if (strstr(msg, FD_PREFIX))
        resolve_fds(msg, len);
}

int drx_err_set(struct drx_err *err, int errnum, const char *fmt, ...)
{
    if (err) {
        char msg[DRX_ERR_LEN];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        drx_msg_alias_apply(msg, sizeof msg);
        /* one line, whatever a name or value it quotes holds (a newline in
         * an attribute name, an order given as '\0') */
        drx_msg_escape(msg, err->msg, sizeof err->msg, false);
    }
    return -errnum;
}

void drx_err_prefix(struct drx_err *err, const char *fmt, ...)
{
    char raw[DRX_ERR_LEN], prefix[DRX_ERR_LEN], old[DRX_ERR_LEN];
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    drx_msg_escape(raw, prefix, sizeof prefix, false); /* as drx_err_set */
    /* a message that names it already (a path) is not given it twice */
    size_t n = strlen(prefix);
    if (n && strncmp(err->msg, prefix, n) == 0 && err->msg[n] == ':')
        return;
    memcpy(old, err->msg, sizeof old);
    /* Truncation is fine: a message is one line for a human. */
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3;
    strncpy(err->msg + n + 2, old, rest);
    err->msg[sizeof err->msg - 1] = '\0';
    drx_msg_alias_apply(err->msg, sizeof err->msg);
}

void drx_err_rename(struct drx_err *err, const char *from, const char *to)
{
    char f[DRX_ERR_LEN], t[DRX_ERR_LEN];

    if (!err || !*from)
        return;
    /* the message is escaped (drx_err_set): so are the names it holds */
    drx_msg_escape(from, f, sizeof f, false);
    drx_msg_escape(to, t, sizeof t, false);
    apply_one(err->msg, sizeof err->msg, f, t);
}
