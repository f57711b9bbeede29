/* Private to config.c/store.c: loading a libconfig file with a chosen key set. */
#ifndef DRX_CONFIG_I_H
#define DRX_CONFIG_I_H

#include "drx/config.h"

/* Key sets accepted by drx_config_load_keys(). */
enum {
    DRX_CONFIG_KEYS_ALL = 1,   /* a --config file: stripe, cache, prefetch, log */
    DRX_CONFIG_KEYS_STORE = 2, /* .drx/store.conf: version, stripe */
};

int drx_config_load_keys(struct drx_config *cfg, const char *path, int keys, struct drx_err *err);

#endif
