/* A configuration file as a user may give it (--config, -o config=) and a
 * store's .drx/store.conf as a user with write access may edit it: each
 * loaded over the defaults with its key set; what is accepted must
 * validate, and what the scan before libconfig refuses libconfig must
 * refuse too. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfgfile_i.h"
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

/* The scan drx_cfgfile_parse makes before libconfig refuses a string
 * only where libconfig refuses it too (it must not turn valid files
 * away): libconfig is asked in a child, since it leaks on such text. */
static void refused_by_libconfig_too(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size);
    struct drx_err err;
    config_t cfg;
    int st = 0;
    pid_t pid;

    if (!text)
        return;
    if (drx_cfgfile_parse(text, size, "f", 0, &cfg, NULL, &err) == 0)
        config_destroy(&cfg);
    else if (strstr(err.msg, "a string cannot stand here") && (pid = fork()) >= 0) {
        if (pid == 0) {
            config_init(&cfg);
            _exit(config_read_string(&cfg, text) ? 1 : 0); /* no leak check */
        }
        pid_t w;
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) /* libFuzzer's alarm */
            ;
        if (w != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            abort();
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[PATH_MAX];

    if (fuzz_write("drxfs.conf", data, size, path, sizeof path) < 0)
        abort();
    load(path, DRX_CONFIG_KEYS_ALL);
    load(path, DRX_CONFIG_KEYS_STORE);
    refused_by_libconfig_too(data, size);
    return 0;
}
