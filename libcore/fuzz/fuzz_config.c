/* A configuration file as a user may give it (--config, -o config=) and a
 * store's .drx/store.conf as a user with write access may edit it: each
 * loaded over the defaults with its key set; what is accepted must
 * validate. */
#include <limits.h>
#include <stdlib.h>

#include "config_i.h"
#include "fuzz.h"

static void load(const char *path, int keys)
{
    struct drx_config cfg;
    struct drx_err err;

    if (drx_config_defaults(&cfg, "/store") < 0)
        abort();
    if (drx_config_load_keys(&cfg, path, keys, &err) == 0 && drx_config_validate(&cfg, &err) < 0)
        abort();
    drx_config_fini(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[PATH_MAX];

    if (fuzz_write("drxfs.conf", data, size, path, sizeof path) < 0)
        abort();
    load(path, DRX_CONFIG_KEYS_ALL);
    load(path, DRX_CONFIG_KEYS_STORE);
    return 0;
}
