/* Names in messages.  libcore reaches a store opened by descriptor through
 * "/proc/self/fd/N" (drx_store_open_at); users know it by its path.  Every
 * message formatted by drx_err_set and drx_log shows the alias instead. */
#ifndef DRX_MSG_ALIAS_I_H
#define DRX_MSG_ALIAS_I_H

#include <stddef.h>

/* Shows `to` wherever `from` starts a path in a message.  0, or -ENOSPC
 * when every slot is taken (messages then show `from`). */
int drx_msg_alias_add(const char *from, const char *to);
void drx_msg_alias_remove(const char *from);
/* Rewrites msg (len bytes, NUL-terminated) in place. */
void drx_msg_alias_apply(char *msg, size_t len);

#endif
