/* drx: the admin command.  Dispatches to the subcommands in drx_*_cmds.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "drx_cli.h"

struct drx_cli drx_cli;

int drx_cli_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("drx: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int drx_cli_fail_err(const char *what, int rc, const struct drx_err *err)
{
    const char *msg = err && err->msg[0] ? err->msg : strerror(rc < 0 ? -rc : rc);
    if (what && what[0])
        return drx_cli_fail("%s: %s", what, msg);
    return drx_cli_fail("%s", msg);
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;
} cmds[] = {
    {"init", drx_cmd_init, "init STORE [--stripe-dirs D1,D2,... --count N --extent BYTES]"},
    {"create", drx_cmd_create,
     "create ARRAY --type T --shape N0xN1x... --chunk C0xC1x... [--dims a,b,c] [--fill V]"},
    {"info", drx_cmd_info, "info ARRAY [--json]"},
    {"extend", drx_cmd_extend, "extend ARRAY DIM COUNT"},
    {"put", drx_cmd_put, "put ARRAY [VIEW...] < raw"},
    {"get", drx_cmd_get, "get ARRAY [VIEW...] > raw"},
    {"address", drx_cmd_address, "address ARRAY I0,I1,..."},
    {"index", drx_cmd_index, "index ARRAY Q"},
    {"stripe", drx_cmd_stripe, "stripe get FILE | stripe set DIR --count N --extent BYTES"},
    {"fsck", drx_cmd_fsck, "fsck STORE [--repair]"},
    {"rm", drx_cmd_rm, "rm ARRAY"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: drx [--config FILE] COMMAND ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  drx %s\n", cmds[i].usage);
    fprintf(f, "\nVIEW words: dimK=START:STOP[:STEP] | NAME=I | order=C|F | rep=native|external32\n");
}

int main(int argc, char **argv)
{
    int i = 1;

    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("drx %s\n", DRX_VERSION);
            return 0;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            drx_cli.config_path = argv[i + 1];
            i += 2;
            continue;
        }
        if (strncmp(argv[i], "--config=", 9) == 0) {
            drx_cli.config_path = argv[i] + 9;
            i++;
            continue;
        }
        drx_cli_fail("unknown option '%s' (see drx --help)", argv[i]);
        return 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++)
        if (strcmp(argv[i], cmds[c].name) == 0)
            return cmds[c].fn(argc - i, argv + i);
    drx_cli_fail("unknown command '%s' (see drx --help)", argv[i]);
    return 2;
}
