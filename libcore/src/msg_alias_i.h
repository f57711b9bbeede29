/* Names in messages.  libcore reaches a store opened by descriptor through
 * "/proc/self/fd/N" (drx_store_open_at); users know it by its path.  Every
 * message formatted by drx_err_set and drx_log shows the alias instead. */
#ifndef DRX_MSG_ALIAS_I_H
#define DRX_MSG_ALIAS_I_H

#include <stdbool.h>
#include <stddef.h>

/* Shows `to` wherever `from` starts a path in a message.  0, or -ENOSPC
 * when every slot is taken (messages then show `from`). */
int drx_msg_alias_add(const char *from, const char *to);
void drx_msg_alias_remove(const char *from);
/* Rewrites msg (len bytes, NUL-terminated) in place. */
void drx_msg_alias_apply(char *msg, size_t len);

/* msg into out (size bytes, cut when full) with its control characters,
 * line separators, bidirectional overrides and bytes that are not UTF-8
 * as \xNN, and its backslashes too when backslash (the log's rule; an
 * error message keeps them, and is escaped again if it is logged): one
 * message stays one line whatever names and values it quotes (log.c). */
void drx_msg_escape(const char *msg, char *out, size_t size, bool backslash);

#endif
