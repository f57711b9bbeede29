/* Shared pieces of the drx command's subcommands (private to fs/). */
#ifndef DRX_CLI_H
#define DRX_CLI_H

#include "drx/err.h"

#include <stdbool.h>

/* The options of the command line, wherever they stood (drx.c parses them
 * once for every command and refuses those a command does not take).
 * NULL or false when not given. */
struct drx_cli {
    const char *config_path;                        /* --config FILE */
    const char *type, *shape, *chunk, *dims, *fill; /* create */
    bool json;                                      /* info */
    const char *stripe_dirs, *count, *extent;       /* init, stripe set */
    bool clear;                                     /* stripe set */
    bool repair;                                    /* fsck */
    const char *output;                             /* get: -o FILE */
};
extern struct drx_cli drx_cli;

/* Prints "drx: MESSAGE" on stderr and returns 1 (the exit code). */
int drx_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "drx: WHAT: err->msg" (or strerror(-rc) if msg is empty); returns 1. */
int drx_cli_fail_err(const char *what, int rc, const struct drx_err *err);

/* fflush(stdout), keeping the first failure's errno for the one line main
 * prints at exit ("writing standard output: ..."); 0 or -1. */
int drx_cli_flush(void);

/* Subcommands: argv[0] is the subcommand's name, then its positional words
 * (as many as drx.c's table allows).  Return the exit code. */
int drx_cmd_create(int argc, char **argv);
int drx_cmd_info(int argc, char **argv);
int drx_cmd_extend(int argc, char **argv);
int drx_cmd_attr(int argc, char **argv);
int drx_cmd_put(int argc, char **argv);
int drx_cmd_get(int argc, char **argv);
int drx_cmd_address(int argc, char **argv);
int drx_cmd_index(int argc, char **argv);
int drx_cmd_rm(int argc, char **argv);
int drx_cmd_init(int argc, char **argv);
int drx_cmd_stripe(int argc, char **argv);
int drx_cmd_fsck(int argc, char **argv);

#endif
