/* Private pieces of stores shared by store.c and store_at.c. */
#ifndef DRX_STORE_I_H
#define DRX_STORE_I_H

#include "drx/store.h"

/* Releases what drx_store_open_at added to s (its descriptor, the name of
 * that descriptor in messages); nothing for other stores. */
void drx_store_at_close(struct drx_store *s);

#endif
