/* drx: the admin command.  One option parser for every subcommand (options
 * may come anywhere on the line, as --opt VALUE or --opt=VALUE); the
 * subcommands in drx_*_cmds.c get their positional words in argv and their
 * options in drx_cli. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "drx/config.h"
#include "drx/log.h"
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

/* errno of the first write to stdout that failed */
static int stdout_errno;

int drx_cli_flush(void)
{
    if (fflush(stdout) == 0)
        return 0;
    if (!stdout_errno)
        stdout_errno = errno;
    return -1;
}

int drx_cli_fail_err(const char *what, int rc, const struct drx_err *err)
{
    const char *msg = err && err->msg[0] ? err->msg : strerror(rc < 0 ? -rc : rc);
    if (what && what[0])
        return drx_cli_fail("%s: %s", what, msg);
    return drx_cli_fail("%s", msg);
}

/* Options, as bits of the set each command accepts.  getopt_long returns
 * OPT_VAL(bit): 1 means a word that is no option. */
#define OPT_VAL(bit) (0x100 + __builtin_ctz(bit))
#define OPT_BIT(val) (1u << ((val)-0x100))
enum {
    OPT_CONFIG = 1 << 0,
    OPT_HELP = 1 << 1,
    OPT_VERSION = 1 << 2,
    OPT_TYPE = 1 << 3,
    OPT_SHAPE = 1 << 4,
    OPT_CHUNK = 1 << 5,
    OPT_DIMS = 1 << 6,
    OPT_FILL = 1 << 7,
    OPT_JSON = 1 << 8,
    OPT_STRIPE_DIRS = 1 << 9,
    OPT_COUNT = 1 << 10,
    OPT_EXTENT = 1 << 11,
    OPT_CLEAR = 1 << 12,
    OPT_REPAIR = 1 << 13,
    OPT_OUTPUT = 1 << 14,
};
#define OPT_GLOBAL (OPT_CONFIG | OPT_HELP | OPT_VERSION)

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_VAL(OPT_CONFIG)},
    {"help", no_argument, NULL, OPT_VAL(OPT_HELP)},
    {"version", no_argument, NULL, OPT_VAL(OPT_VERSION)},
    {"type", required_argument, NULL, OPT_VAL(OPT_TYPE)},
    {"shape", required_argument, NULL, OPT_VAL(OPT_SHAPE)},
    {"chunk", required_argument, NULL, OPT_VAL(OPT_CHUNK)},
    {"dims", required_argument, NULL, OPT_VAL(OPT_DIMS)},
    {"fill", required_argument, NULL, OPT_VAL(OPT_FILL)},
    {"json", no_argument, NULL, OPT_VAL(OPT_JSON)},
    {"stripe-dirs", required_argument, NULL, OPT_VAL(OPT_STRIPE_DIRS)},
    {"count", required_argument, NULL, OPT_VAL(OPT_COUNT)},
    {"extent", required_argument, NULL, OPT_VAL(OPT_EXTENT)},
    {"clear", no_argument, NULL, OPT_VAL(OPT_CLEAR)},
    {"repair", no_argument, NULL, OPT_VAL(OPT_REPAIR)},
    {"output", required_argument, NULL, OPT_VAL(OPT_OUTPUT)},
    {NULL, 0, NULL, 0},
};

static const char *opt_name(unsigned bit)
{
    for (const struct option *o = long_opts; o->name; o++)
        if (o->val == OPT_VAL(bit)) {
            static char buf[32];
            snprintf(buf, sizeof buf, "--%s", o->name);
            return buf;
        }
    return "?";
}

static const struct cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned opts;     /* accepted besides the global ones */
    bool own_config;   /* loads --config itself, against its store */
    int min, max;      /* positional words after the command's name */
    const char *usage; /* after "drx " */
    const char *help;  /* what it does and its options */
} cmds[] = {
    {"init", drx_cmd_init, OPT_STRIPE_DIRS | OPT_COUNT | OPT_EXTENT, true, 1, 1,
     "init STORE [--stripe-dirs D1,D2,...] [--count N] [--extent BYTES]",
     "Makes STORE a store (a directory with .drx/), remembering the stripe directories\n"
     "and the default layout of new striped files.  Again on an existing store with the\n"
     "same settings: nothing changes.\n\n"
     "  --stripe-dirs D1,D2,...  stripe directories (default STORE/.drx/stripes/0 and /1)\n"
     "  --count N                stripes of a new file, 1..number of dirs (default: all)\n"
     "  --extent BYTES           bytes per extent, K/M/G suffix allowed (default 64K)\n"},
    {"create", drx_cmd_create, OPT_TYPE | OPT_SHAPE | OPT_CHUNK | OPT_DIMS | OPT_FILL, false, 1, 1,
     "create ARRAY --type T --shape N0xN1x... --chunk C0xC1x... [--dims a,b,c] [--fill V]",
     "Makes the array ARRAY (files ARRAY.xmd and ARRAY.xta).\n\n"
     "  --type T          i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 c64 c128\n"
     "  --shape N0xN1x... extents, each at least 1; rank 1 to 16\n"
     "  --chunk C0xC1x... chunk shape, one extent per dimension; at most 1 GiB a chunk\n"
     "  --dims a,b,c      dimension names (letters, digits, _; not order, rep, dimN)\n"
     "  --fill V          value of elements never written (default 0)\n"},
    {"info", drx_cmd_info, OPT_JSON, false, 1, 1, "info PATH [--json]",
     "Describes an array, or a view of it: PATH is ARRAY or ARRAY/VIEW/VIEW...\n"
     "(on the store or under a drxfs mount).  When the view does not exist, says\n"
     "which word is wrong and why.\n\n"
     "  --json   the JSON of the `info` file at the mount point\n"},
    {"extend", drx_cmd_extend, 0, false, 3, 3, "extend ARRAY DIM COUNT",
     "Grows dimension DIM (a number or a name) of ARRAY by COUNT elements.  Nothing\n"
     "already written moves.\n"},
    {"attr", drx_cmd_attr, OPT_TYPE, false, 2, -1, /* each subcommand counts its own */
     "attr set|get|rm|list ARRAY [NAME] [VALUE] [--type T]",
     "Attributes of an array (units, long_name, scale_factor, ...), shown in info and\n"
     "data.nc.  set ARRAY NAME VALUE: adds or replaces one; get ARRAY NAME: prints its\n"
     "value; rm ARRAY NAME: removes it; list ARRAY: one line each, NAME TYPE VALUE\n"
     "(control characters and \\ escaped).  Names: [A-Za-z_][A-Za-z0-9_.@+-]*, at\n"
     "most 255 bytes, not _FillValue, _ARRAY_DIMENSIONS or drx_*.\n\n"
     "  --type T   string (default: VALUE as it is) or i8 i16 i32 i64 u8 u16 u32 u64\n"
     "             f32 f64: VALUE is one number or several separated by commas\n"},
    {"put", drx_cmd_put, 0, false, 1, -1, "put ARRAY [VIEW...] < raw",
     "Stores standard input into the view: exactly the view's byte count.  When the\n"
     "input is shorter or longer, nothing is written.\n"},
    {"get", drx_cmd_get, OPT_OUTPUT, false, 1, -1, "get ARRAY [VIEW...] [-o FILE] > raw",
     "Writes the view's bytes to standard output, or to FILE.  Refuses to write to a\n"
     "terminal unless told so with -o -.\n\n"
     "  -o, --output FILE   write to FILE; '-' is standard output, even a terminal\n"},
    {"address", drx_cmd_address, 0, false, 2, 2, "address ARRAY I0,I1,...",
     "Element index -> chunk index, chunk address (F*) and byte offset in the .xta.\n"},
    {"index", drx_cmd_index, 0, false, 2, 2, "index ARRAY Q",
     "Chunk address Q -> chunk index (F*^-1).\n"},
    {"stripe", drx_cmd_stripe, OPT_COUNT | OPT_EXTENT | OPT_CLEAR, true, 2, 2,
     "stripe get FILE | stripe set DIR [--count N] [--extent BYTES] [--clear]",
     "get: the layout of a striped file (and its subfiles), or the layout new files in\n"
     "a directory get.  set: the layout of new files in DIR and below (--clear: inherit\n"
     "again).\n"},
    {"fsck", drx_cmd_fsck, OPT_REPAIR, true, 1, 1, "fsck STORE [--repair]",
     "Reports what a crash can leave in a store: orphan and missing subfiles, files\n"
     "longer than their metadata, temporaries.\n\n"
     "  --repair   fix what can be fixed (needs an idle store: not mounted)\n"},
    {"rm", drx_cmd_rm, 0, false, 1, 1, "rm ARRAY", "Removes the array's two files.\n"},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static const char view_words[] =
    "VIEW words: dimK=START:STOP[:STEP] | NAME=I | order=C|F | rep=native|external32\n";

static void usage(FILE *f)
{
    fprintf(f, "usage: drx [--config FILE] COMMAND [ARGS] [OPTIONS]\n"
               "       drx help COMMAND | drx COMMAND --help | drx --version\n\ncommands:\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(f, "  drx %s\n", cmds[i].usage);
    fprintf(f, "\n%s", view_words);
}

static void cmd_help(const struct cmd *c)
{
    printf("usage: drx %s\n\n%s", c->usage, c->help);
    if (strstr(c->usage, "VIEW") || strstr(c->help, "VIEW"))
        printf("\n%s", view_words);
    printf("\nEvery command also takes --config FILE (a drxfs.conf(5) file) and --help.\n");
}

static const struct cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (strcmp(name, cmds[i].name) == 0)
            return &cmds[i];
    return NULL;
}

/* Where each option's value goes (flags become true). */
static const struct {
    unsigned bit;
    const char **value;
    bool *flag;
} opt_dest[] = {
    {OPT_CONFIG, &drx_cli.config_path, NULL}, {OPT_TYPE, &drx_cli.type, NULL},
    {OPT_SHAPE, &drx_cli.shape, NULL},        {OPT_CHUNK, &drx_cli.chunk, NULL},
    {OPT_DIMS, &drx_cli.dims, NULL},          {OPT_FILL, &drx_cli.fill, NULL},
    {OPT_JSON, NULL, &drx_cli.json},          {OPT_STRIPE_DIRS, &drx_cli.stripe_dirs, NULL},
    {OPT_COUNT, &drx_cli.count, NULL},        {OPT_EXTENT, &drx_cli.extent, NULL},
    {OPT_CLEAR, NULL, &drx_cli.clear},        {OPT_REPAIR, NULL, &drx_cli.repair},
    {OPT_OUTPUT, &drx_cli.output, NULL},
};

/* Stores an option's value (the last one given wins); returns its bit. */
static unsigned take_opt(unsigned bit, const char *arg)
{
    for (size_t i = 0; i < sizeof opt_dest / sizeof opt_dest[0]; i++) {
        if (opt_dest[i].bit != bit)
            continue;
        if (opt_dest[i].value)
            *opt_dest[i].value = arg;
        else
            *opt_dest[i].flag = true;
    }
    return bit;
}

/* A --config file that is missing, unreadable or wrong is an error for
 * every command, also those that read nothing from it today: silently
 * running with other settings than the ones asked for is worse. */
static int check_config(void)
{
    struct drx_config cfg = {0};
    struct drx_err err = {{0}};
    int rc = drx_config_defaults(&cfg, NULL);

    if (rc == 0)
        rc = drx_config_load_file(&cfg, drx_cli.config_path, &err);
    drx_config_fini(&cfg);
    if (rc < 0)
        return drx_cli_fail_err("--config", rc, &err);
    return 0;
}

/* The words of the command line and the options given. */
struct args {
    char **pos; /* positional words in order: the command, then its arguments */
    int npos;
    unsigned given;
};

/* One line for an unknown option or one without its value. */
static void bad_option(const struct args *a, int o, const char *word)
{
    const struct cmd *c = a->npos ? find_cmd(a->pos[0]) : NULL;
    char bad[64];

    if (strncmp(word, "--", 2) == 0)
        snprintf(bad, sizeof bad, "%.*s", (int)strcspn(word, "="), word);
    else
        snprintf(bad, sizeof bad, "-%c", optopt);
    if (o == ':')
        drx_cli_fail("%s%s%s needs a value (see drx help%s%s)", c ? c->name : "", c ? ": " : "",
                     bad, c ? " " : "", c ? c->name : "");
    else
        drx_cli_fail("%s%sunknown option '%s' (see drx help%s%s)", c ? c->name : "",
                     c ? ": " : "", bad, c ? " " : "", c ? c->name : "");
}

/* A word that is a negative value, not options: -1, -.5, -inf, -nan (a
 * list's first value: -inf,-1). */
static bool negative_value(const char *s)
{
    static const char *const words[] = {"infinity", "inf", "nan"};
    if (s[0] != '-')
        return false;
    if ((s[1] >= '0' && s[1] <= '9') || (s[1] == '.' && s[2] >= '0' && s[2] <= '9'))
        return true;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t n = strlen(words[i]);
        if (strncasecmp(s + 1, words[i], n) == 0 && (s[1 + n] == '\0' || s[1 + n] == ','))
            return true;
    }
    return false;
}

/* getopt_long over the whole line: options go anywhere.  0, or 2 after a
 * bad option (reported). */
static int parse_args(int argc, char **argv, struct args *a)
{
    opterr = 0;
    optind = 1;
    for (;;) {
        /* A negative number is an argument ("extend t 0 -1" is a bad COUNT,
         * not an unknown option -1; "attr set t x -inf" a value); getopt
         * would take it for options. */
        if (optind < argc && negative_value(argv[optind])) {
            a->pos[a->npos++] = argv[optind++];
            continue;
        }
        int prev = optind;
        /* "-": words come back in order (1), so view words keep theirs. */
        int o = getopt_long(argc, argv, "-:ho:", long_opts, NULL);
        if (o == -1)
            break;
        if (o == 1) {
            a->pos[a->npos++] = optarg;
        } else if (o == '?' || o == ':') {
            bad_option(a, o, argv[prev < argc ? prev : argc - 1]);
            return 2;
        } else {
            a->given |= take_opt(o == 'h' ? OPT_HELP : o == 'o' ? OPT_OUTPUT : OPT_BIT(o), optarg);
        }
    }
    while (optind < argc) /* after "--" */
        a->pos[a->npos++] = argv[optind++];
    return 0;
}

/* drx help [COMMAND] */
static int help(const struct args *a)
{
    const struct cmd *c;

    if (a->npos == 1) {
        usage(stdout);
        return 0;
    }
    if (a->npos == 2 && (c = find_cmd(a->pos[1]))) {
        cmd_help(c);
        return 0;
    }
    drx_cli_fail("help: no command '%s' (see drx --help)", a->pos[a->npos - 1]);
    return 2;
}

/* The command a->pos[0] with its words and options, checked first. */
static int run(const struct args *a)
{
    const struct cmd *c = find_cmd(a->pos[0]);
    unsigned extra;

    if (!c) {
        drx_cli_fail("unknown command '%s' (see drx --help)", a->pos[0]);
        return 2;
    }
    if (a->given & OPT_HELP) {
        cmd_help(c);
        return 0;
    }
    extra = a->given & ~(c->opts | OPT_GLOBAL);
    if (extra) {
        drx_cli_fail("%s: %s does not apply (see drx help %s)", c->name, opt_name(extra & -extra),
                     c->name);
        return 2;
    }
    if (a->npos - 1 < c->min || (c->max >= 0 && a->npos - 1 > c->max)) {
        drx_cli_fail("%s: usage: drx %s", c->name, c->usage);
        return 2;
    }
    if (drx_cli.config_path && !c->own_config && check_config())
        return 1;
    return c->fn(a->npos, a->pos);
}

int main(int argc, char **argv)
{
    struct args a = {.pos = calloc((size_t)argc + 1, sizeof(char *))};
    int ret;

    if (!a.pos)
        return drx_cli_fail("out of memory");
    /* past ulimit -f a write is EFBIG, reported, not death half way */
    signal(SIGXFSZ, SIG_IGN);
    ret = parse_args(argc, argv, &a);
    if (ret) {
        /* reported */
    } else if (a.given & OPT_VERSION) {
        printf("drx %s\n", DRX_VERSION);
    } else if (a.npos == 0) {
        usage((a.given & OPT_HELP) ? stdout : stderr);
        ret = (a.given & OPT_HELP) ? 0 : 2;
    } else if (strcmp(a.pos[0], "help") == 0) {
        ret = help(&a);
    } else {
        ret = run(&a);
    }
    drx_log_limits_flush(); /* what a rate limit suppressed is counted */
    free(a.pos);
    /* What stdio still holds goes out now, while a failure can be told: a
     * full disk under stdout left "drx info --json > f" an empty f and
     * exit 0. */
    if (drx_cli_flush() != 0 || ferror(stdout)) {
        drx_cli_fail("writing standard output: %s", strerror(stdout_errno ? stdout_errno : EIO));
        if (ret == 0)
            ret = 1;
    }
    return ret;
}
