#include "drx/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int drx_err_set(struct drx_err *err, int errnum, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -errnum;
}

void drx_err_prefix(struct drx_err *err, const char *fmt, ...)
{
    char prefix[DRX_ERR_LEN], old[DRX_ERR_LEN];
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation is fine: a message is one line for a human. */
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3;
    strncpy(err->msg + n + 2, old, rest);
    err->msg[sizeof err->msg - 1] = '\0';
}
