/* Shared pieces of the drx command's subcommands (private to fs/). */
#ifndef DRX_CLI_H
#define DRX_CLI_H

#include "drx/err.h"

/* Global options given before the subcommand. */
struct drx_cli {
    const char *config_path; /* --config FILE, or NULL */
};
extern struct drx_cli drx_cli;

/* Prints "drx: MESSAGE" on stderr and returns 1 (the exit code). */
int drx_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "drx: WHAT: err->msg" (or strerror(-rc) if msg is empty); returns 1. */
int drx_cli_fail_err(const char *what, int rc, const struct drx_err *err);

/* Subcommands: argv[0] is the subcommand's name.  Return the exit code. */
int drx_cmd_create(int argc, char **argv);
int drx_cmd_info(int argc, char **argv);
int drx_cmd_extend(int argc, char **argv);
int drx_cmd_put(int argc, char **argv);
int drx_cmd_get(int argc, char **argv);
int drx_cmd_address(int argc, char **argv);
int drx_cmd_index(int argc, char **argv);
int drx_cmd_rm(int argc, char **argv);
int drx_cmd_init(int argc, char **argv);
int drx_cmd_stripe(int argc, char **argv);
int drx_cmd_fsck(int argc, char **argv);

#endif
