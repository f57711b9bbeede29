/* Unit tests of the log module: levels, sinks and the rate limit. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "drx/err.h"
#include "drx/log.h"
#include "tap.h"

static int got;
static char last[DRX_LOG_MSG_MAX];
static char first[DRX_LOG_MSG_MAX];

static void count_sink(void *arg, enum drx_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    if (got++ == 0)
        snprintf(first, sizeof first, "%s", msg);
    snprintf(last, sizeof last, "%s", msg);
}

static long actor = -1;

static long test_actor(void)
{
    return actor;
}

int main(void)
{
    static struct drx_log_limit lim = DRX_LOG_LIMIT_INIT(3, 1);

    drx_log_set_sink(count_sink, NULL);
    drx_log_set_level(DRX_LOG_INFO);
    drx_log(DRX_LOG_DEBUG, "dropped");
    tap_ok(got == 0, "a debug message below level info is dropped");
    drx_log(DRX_LOG_INFO, "line %d\n", 1);
    tap_ok(got == 1 && strcmp(last, "line 1") == 0, "a message arrives without its newline");
    /* a user's text in a message (an attribute's value, a .npy header)
     * cannot start a line of its own: found in a review, 2026-12-06 */
    drx_log(DRX_LOG_INFO, "value '%s'", "a\n[fake] error: x\x1b[2J\x7f");
    tap_ok(strcmp(last, "value 'a\\x0a[fake] error: x\\x1b[2J\\x7f'") == 0,
           "control characters arrive escaped: %s", last);
    /* C1 controls raw or as UTF-8 (NEL), line and paragraph separators,
     * bytes that are not UTF-8; letters of other scripts stay */
    drx_log(DRX_LOG_INFO, "%s", "\x9b" "31m \xc2\x85X\xe2\x80\xa8Y\xe2\x80\xa9 \xff\xfe \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8c\x8a");
    tap_ok(strcmp(last, "\\x9b31m \\xc2\\x85X\\xe2\\x80\\xa8Y\\xe2\\x80\\xa9 \\xff\\xfe "
                        "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8c\x8a") == 0,
           "C1 controls, separators and non-UTF-8 bytes arrive escaped: %s", last);
    drx_log(DRX_LOG_INFO, "%s", "a name\\x0a\\");
    tap_ok(strcmp(last, "a name\\x5cx0a\\x5c") == 0,
           "a backslash arrives escaped, so a name's \"\\x0a\" is not a newline's: %s", last);
    /* an error message is one line too, its backslashes kept (escaped
     * again when it is logged) */
    struct drx_err err = {{0}};
    drx_err_set(&err, EINVAL, "attribute name '%s' \\ %s", "a\nb", "\x1b[2J");
    tap_ok(strcmp(err.msg, "attribute name 'a\\x0ab' \\ \\x1b[2J") == 0,
           "an error message's control characters arrive escaped: %s", err.msg);
    drx_err_prefix(&err, "t\tx");
    tap_ok(strcmp(err.msg, "t\\x09x: attribute name 'a\\x0ab' \\ \\x1b[2J") == 0,
           "and its prefix's: %s", err.msg);
    drx_log(DRX_LOG_INFO, "%s", err.msg);
    tap_ok(strcmp(last, "t\\x5cx09x: attribute name 'a\\x5cx0ab' \\x5c \\x5cx1b[2J") == 0,
           "logged, it is escaped again: %s", last);
    /* a name put in for another (drx-load's user path for the store's) is
     * escaped too, and one escaped in the message is found */
    drx_err_set(&err, EIO, "/store/a\nb.xta: short");
    drx_err_rename(&err, "/store/a\nb", "/mnt/c\rd");
    tap_ok(strcmp(err.msg, "/mnt/c\\x0dd.xta: short") == 0, "drx_err_rename escapes: %s", err.msg);
    drx_log(DRX_LOG_INFO, "%s", "a\xe2\x80\xae" "b\xef\xbb\xbf" "c");
    tap_ok(strcmp(last, "a\\xe2\\x80\\xaeb\\xef\\xbb\\xbfc") == 0,
           "a right-to-left override and a byte order mark arrive escaped: %s", last);

    got = 0;
    for (int i = 0; i < 10; i++)
        drx_log_limited(&lim, DRX_LOG_INFO, "lookup %d", i);
    tap_ok(got == 3 && strcmp(last, "lookup 2") == 0,
           "the limit lets the first 3 of 10 through (%d)", got);
    got = 0;
    drx_log_limited(&lim, DRX_LOG_DEBUG, "below the level");
    tap_ok(got == 0, "a message below the level neither passes nor counts");
    sleep(1);
    got = 0;
    drx_log_limited(&lim, DRX_LOG_INFO, "lookup %d", 10);
    tap_ok(got == 2 && strstr(first, "7 more") && strcmp(last, "lookup 10") == 0,
           "the next window first says how many were dropped: %s", first);
    got = 0;
    drx_log_limited(&lim, DRX_LOG_INFO, "again");
    tap_ok(got == 1, "and owes nothing after that");

    /* a flood of one message: its first report, then a count at the flush;
     * a distinct message after the flood still gets through */
    static struct drx_log_limit flood = DRX_LOG_LIMIT_INIT(3, 60);
    got = 0;
    for (int i = 0; i < 2000; i++)
        drx_log_limited(&flood, DRX_LOG_ERROR, "subfile %d refused", 7);
    tap_ok(got == 1, "2000 repeats of one message log it once (%d)", got);
    drx_log_limited(&flood, DRX_LOG_ERROR, "subfile %d refused", 8);
    tap_ok(got == 2 && strcmp(last, "subfile 8 refused") == 0,
           "a distinct message after them is reported (%s)", last);
    got = 0;
    drx_log_limits_flush();
    tap_ok(got == 1 && strstr(last, "1999 more like \"subfile 7 refused\" suppressed"),
           "the flush says how many were suppressed: %s", last);
    got = 0;
    drx_log_limits_flush();
    tap_ok(got == 0, "and a second flush owes nothing");
    /* each actor its own burst: one who fills a site's burst with
     * distinct messages does not hide another's first one */
    static struct drx_log_limit site = DRX_LOG_LIMIT_INIT(3, 60);
    drx_log_set_actor_fn(test_actor);
    actor = 65534;
    got = 0;
    for (int i = 0; i < 20; i++)
        drx_log_limited(&site, DRX_LOG_WARNING, "refused %d", i);
    tap_ok(got == 3, "one actor's 20 distinct messages: 3 through (%d)", got);
    actor = 0;
    drx_log_limited(&site, DRX_LOG_WARNING, "refused root's");
    tap_ok(got == 4 && strcmp(last, "refused root's") == 0,
           "another actor's first message still gets through (%s)", last);
    actor = 65534;
    drx_log_limited(&site, DRX_LOG_WARNING, "refused %d", 21);
    tap_ok(got == 4, "the first actor's burst stays spent");
    for (long a = 1000; a < 1000 + DRX_LOG_LIMIT_ACTORS + 5; a++) {
        actor = a;
        drx_log_limited(&site, DRX_LOG_WARNING, "refused %ld's", a);
    }
    tap_ok(got == 4 + (DRX_LOG_LIMIT_ACTORS - 2) + 3,
           "past %d actors the others share one burst (%d)", DRX_LOG_LIMIT_ACTORS, got);
    /* the actors' own bursts full of distinct messages, then the same
     * messages from one more actor, whose burst (the shared one) is
     * untouched: none passes twice (the window remembers each message it
     * let through) */
    static struct drx_log_limit full = DRX_LOG_LIMIT_INIT(10, 60);
    got = 0;
    for (long a = 0; a < DRX_LOG_LIMIT_ACTORS; a++) {
        actor = 2000 + a;
        for (int i = 0; i < 10; i++)
            drx_log_limited(&full, DRX_LOG_WARNING, "refused %ld", a * 10 + i);
    }
    int passed = got;
    actor = 3000;
    got = 0;
    for (long m = 0; m < 10 * DRX_LOG_LIMIT_ACTORS; m++)
        drx_log_limited(&full, DRX_LOG_WARNING, "refused %ld", m);
    tap_ok(passed == 10 * DRX_LOG_LIMIT_ACTORS && got == 0,
           "%d bursts of 10 distinct messages pass (%d); another actor's repeats of them do not "
           "(%d)",
           DRX_LOG_LIMIT_ACTORS, passed, got);
    drx_log_limited(&full, DRX_LOG_WARNING, "refused anew");
    tap_ok(got == 1, "while its first new message does (%d)", got);
    drx_log_set_actor_fn(NULL);
    drx_log_set_sink(NULL, NULL);
    /* drx_err_rename: a name a library was given shown as the user's,
     * never the start of a longer number */
    {
        struct drx_err e;
        drx_err_set(&e, EIO, "opening /proc/self/fd/1: no; /proc/self/fd/12 and /proc/self/fd/1");
        drx_err_rename(&e, "/proc/self/fd/1", "st/a.xta");
        tap_ok(strcmp(e.msg, "opening st/a.xta: no; /proc/self/fd/12 and st/a.xta") == 0,
               "drx_err_rename: %s", e.msg);
    }
    /* drx_err_prefix: added once; a message that starts with it (a path
     * and ':') keeps it once, one that only starts with its letters not */
    {
        struct drx_err e;
        drx_err_set(&e, EROFS, "mnt/a: read-only file system");
        drx_err_prefix(&e, "%s", "mnt/a");
        tap_ok(strcmp(e.msg, "mnt/a: read-only file system") == 0, "prefix already there: %s",
               e.msg);
        drx_err_set(&e, EROFS, "mnt/ab: read-only file system");
        drx_err_prefix(&e, "%s", "mnt/a");
        tap_ok(strcmp(e.msg, "mnt/a: mnt/ab: read-only file system") == 0,
               "a longer name is not the prefix: %s", e.msg);
        drx_err_set(&e, EIO, "no such chunk");
        drx_err_prefix(&e, "%s", "mnt/a");
        tap_ok(strcmp(e.msg, "mnt/a: no such chunk") == 0, "prefix added: %s", e.msg);
    }
    return tap_done();
}
