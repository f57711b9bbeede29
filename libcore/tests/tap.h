/* A minimal TAP producer for libcore's unit tests. */
#ifndef DRX_TAP_H
#define DRX_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 3))) static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    tap_n++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return cond;
}

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

/* A failure with a diagnostic, counting as one test. */
#define TAP_CHECK_EQ_U64(a, b, what)                                                  \
    tap_ok((unsigned long long)(a) == (unsigned long long)(b), "%s (%llu == %llu)", what, \
           (unsigned long long)(a), (unsigned long long)(b))

#endif
