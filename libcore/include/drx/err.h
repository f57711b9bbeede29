/* Error reports of libcore.
 *
 * libcore never prints: a function that can fail for a reason a user must
 * see returns a negative errno and, when given a struct drx_err, writes one
 * line there saying what is wrong and where ("temp.xmd:12: chunk[1] is 0").
 * The front end prints it.  A NULL struct drx_err is allowed everywhere.
 */
#ifndef DRX_ERR_H
#define DRX_ERR_H

#include <stddef.h>

#define DRX_ERR_LEN 512

struct drx_err {
    char msg[DRX_ERR_LEN];
};

/* Formats a message into err (if non-NULL) and returns -errnum, so callers
 * can write `return drx_err_set(err, EINVAL, "bad %s", x);`. */
int drx_err_set(struct drx_err *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of an existing message (used to add a file
 * name), unless the message starts with it already. */
void drx_err_prefix(struct drx_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* err's message with each from (a name a library was given, such as
 * "/proc/self/fd/N" for MPI-IO) shown as to, the name users know; a
 * from followed by a digit is another name ("/proc/self/fd/12" is not
 * "/proc/self/fd/1"). */
void drx_err_rename(struct drx_err *err, const char *from, const char *to);

#endif
