/* placeholder */
#include "drx_cli.h"
int drx_cmd_init(int argc, char **argv) { (void)argc; (void)argv; return drx_cli_fail("init: not yet"); }
int drx_cmd_stripe(int argc, char **argv) { (void)argc; (void)argv; return drx_cli_fail("stripe: not yet"); }
int drx_cmd_fsck(int argc, char **argv) { (void)argc; (void)argv; return drx_cli_fail("fsck: not yet"); }
