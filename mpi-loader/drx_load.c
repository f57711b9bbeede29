/* drx-load: bulk parallel import, export, copy and prefetch with collective
 * MPI-IO (SPEC section 7).
 *
 *   mpiexec -n P drx-load [OPTIONS] import ARRAY RAWFILE [VIEW...]
 *   mpiexec -n P drx-load [OPTIONS] export ARRAY OUTFILE [VIEW...]
 *   mpiexec -n P drx-load [OPTIONS] copy SRC DST
 *   mpiexec -n P drx-load [OPTIONS] prefetch ARRAY [VIEW...]
 *
 * This file holds what all commands share: options, ROMIO hints, the
 * agreement on failure, progress and small helpers.  Only rank 0 talks to
 * the user.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drx/config.h"
#include "drx/log.h"
#include "drx/store.h"
#include "load_i.h"

/* Default ROMIO hints, from measurements on local disk (README,
 * "drx-load"; mpi-loader/bench_load.sh).  Each rank's pieces are whole
 * chunks (merged into one range per run of adjacent chunks) and the raw
 * file's pieces merge the same way, so there is nothing for collective
 * buffering to combine: with it on, ROMIO funnels the data through
 * aggregators in cb_buffer_size pieces (4x the pwrite calls, 0.57 vs 0.63
 * of dd for a cold 1 GiB import at P = 2; all of cb/ds on: 0.55).  Data
 * sieving issues exactly the same pread/pwrite calls for these accesses
 * (checked with strace) and only costs a sieve buffer; off, no write can
 * turn into a read-modify-write of one.  Precedence, lowest first: these <
 * mpiio.hints of --config < ROMIO_HINTS < --hint (see usage()). */
static const char *const default_hints[][2] = {
    {"romio_cb_write", "disable"},
    {"romio_cb_read", "disable"},
    {"romio_ds_write", "disable"},
    {"romio_ds_read", "disable"},
};

#define MAX_HINTS 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpiexec -n P drx-load [OPTIONS] COMMAND ARGS... [OPTIONS]\n"
            "  import ARRAY RAWFILE [VIEW...]   raw bytes in the view's order -> array\n"
            "  export ARRAY OUTFILE [VIEW...]   array -> raw bytes in the view's order\n"
            "  copy SRC DST                     file -> file (either may be striped)\n"
            "  prefetch ARRAY [VIEW...]         read the view's chunks into the page cache\n"
            "options:\n"
            "  --config FILE        libconfig file (store layout, log level, mpiio = {\n"
            "                       buffer = BYTES; hints = { KEY = \"VALUE\"; ... }; })\n"
            "  --buffer BYTES       data per rank per round, 1..1G (default: mpiio.buffer\n"
            "                       of --config, else 64M)\n"
            "  --hint KEY=VALUE     MPI-IO hint (repeatable)\n"
            "  --verbose            log level debug: the round buffer and the effective\n"
            "                       MPI-IO hints of every file opened\n"
            "  --progress, --no-progress   progress on rank 0 (default: when mpiexec's\n"
            "                       stderr is a terminal)\n"
            "  --help, --version\n"
            "MPI-IO hints, each overriding the one before for the same key:\n"
            "  built-in (romio_cb_read, romio_cb_write, romio_ds_read, romio_ds_write\n"
            "  = disable) < mpiio.hints of --config < ROMIO_HINTS=FILE (lines\n"
            "  \"KEY VALUE\") < --hint KEY=VALUE.\n");
}

/* --- agreement on failure --- */

int load_agree(const struct load_ctx *c, int rc, const struct drx_err *err, const char *what)
{
    /* MINLOC finds the lowest status and the lowest rank that has it, so
     * exactly one reason is shown even when every rank failed alike. */
    struct {
        int rc, rank;
    } in = {rc < 0 ? rc : 0, c->rank}, res;
    load_allreduce(&in, &res, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    if (res.rc >= 0)
        return 0;
    char msg[DRX_ERR_LEN];
    if (c->rank == res.rank) {
        if (err && err->msg[0])
            snprintf(msg, sizeof(msg), "%s", err->msg);
        else
            snprintf(msg, sizeof(msg), "%s", strerror(-res.rc));
    }
    if (res.rank != 0)
        load_bcast(msg, sizeof(msg), MPI_CHAR, res.rank, MPI_COMM_WORLD);
    else if (c->rank != 0)
        msg[0] = '\0';
    if (c->rank == 0) {
        if (what)
            fprintf(stderr, "drx-load: %s: %s\n", what, msg);
        else
            fprintf(stderr, "drx-load: %s\n", msg);
        fflush(stderr);
    }
    return res.rc;
}

void load_start_count(const struct load_ctx *c, uint64_t n, uint64_t *start, uint64_t *count)
{
    uint64_t p = (uint64_t)c->nprocs, r = (uint64_t)c->rank;
    uint64_t base = n / p, rem = n % p;
    *count = base + (r < rem ? 1 : 0);
    *start = r * base + (r < rem ? r : rem);
}

/* The array of the store that resolved path p lies inside (a file the
 * mount shows in an array's directory, data or zarr/...: no file of the
 * store), into arr; false when none. */
static bool inside_array(const char *p, char *arr, size_t len)
{
    char root[PATH_MAX];
    int n = drx_store_find(p, root, sizeof root);
    size_t pl = strlen(p);

    /* p the store's root itself: nothing of it is inside an array (the
     * search below would start past p's end) */
    if (n < 0 || pl >= len || (size_t)n >= pl)
        return false;
    memcpy(arr, p, pl + 1);
    for (char *s = arr + n; (s = strchr(s + 1, '/')) != NULL;) {
        *s = '\0';
        if (drx_store_classify(arr) == DRX_STORE_ARRAY)
            return true;
        *s = '/';
    }
    return false;
}

int load_resolve(const struct load_ctx *c, const char *path, bool write, char *out, size_t len,
                 struct drx_err *err)
{
    unsigned flags = write ? DRX_STORE_FOR_WRITE : 0;
    int rc = 0;

    /* One commit request to a drxfs mount the path lies under, rank 0's;
     * the barrier keeps every rank's reads of sizes after it. */
    if (c->rank == 0)
        rc = drx_store_resolve_path_for(NULL, path, flags, out, len, err);
    load_barrier(MPI_COMM_WORLD);
    if (c->rank != 0)
        rc = drx_store_resolve_path_for(NULL, path, flags | DRX_STORE_NO_COMMIT, out, len, err);
    if (rc < 0)
        return rc;
    /* NAME/ is a directory, as the kernel takes it: the resolution drops
     * the slash, and export wrote a file NAME, copy made a striped file
     * NAME in a store, import read the file NAME (cp: "Not a
     * directory") */
    size_t n = strlen(path);
    struct stat st;
    if (n > 1 && path[n - 1] == '/') {
        int e = stat(out, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        /* a striped file or an array of the store is there, as NAME.nafs
         * or NAME.xmd: not a directory either */
        if (e == ENOENT && drx_store_classify(out) != DRX_STORE_NONE)
            e = ENOTDIR;
        if (e)
            return drx_err_set(err, ENOTDIR, "%s: %s", path,
                               e == ENOENT ? "no such directory" : "not a directory");
    }
    /* SPEC 2: drx-load works on the store's files; an array's data,
     * data.npy, ... are the mount's alone, and the lexical store path of
     * one names nothing ("s/a/data: No such file or directory") */
    char arr[PATH_MAX];
    if (inside_array(out, arr, sizeof arr))
        return drx_err_set(err, EINVAL,
                           "%s: inside the array %s (its files show only at the mount; "
                           "drx-load works on the store's): name the array and view words "
                           "(ARRAY [VIEW...]), or cp the file",
                           path, arr);
    return 0;
}

/* --- progress --- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void load_progress_start(const struct load_ctx *c, struct load_progress *p, const char *what,
                         uint64_t total)
{
    memset(p, 0, sizeof(*p));
    p->what = what;
    p->total = total;
    p->on = c->progress;
    p->t0 = p->last = now();
}

static void progress_show(struct load_progress *p, uint64_t done, bool final)
{
    double t = now(), el = t - p->t0;
    if (!final && t - p->last < 0.5)
        return;
    p->last = t;
    double rate = el > 0 ? (double)done / el : 0;
    double left = rate > 0 && done < p->total ? (double)(p->total - done) / rate : 0;
    fprintf(stderr, "\r%s: %.1f of %.1f MB, %.1f MB/s, %.0f s %s   ", p->what, (double)done / 1e6,
            (double)p->total / 1e6, rate / 1e6, final ? el : left, final ? "total" : "left");
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

static uint64_t progress_done;

void load_progress_add(const struct load_ctx *c, struct load_progress *p, uint64_t mine)
{
    /* Every rank calls this (collective); only a terminal on rank 0 sees the
     * result.  One small reduce per round of tens of MB costs nothing. */
    uint64_t sum = 0;
    load_reduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (c->rank != 0)
        return;
    progress_done += sum;
    if (p->on)
        progress_show(p, progress_done, false);
}

void load_progress_end(struct load_progress *p)
{
    if (p->on)
        progress_show(p, progress_done, true);
    progress_done = 0;
}

/* --- hints --- */

static int hint_set(MPI_Info info, const char *key, const char *value, struct drx_err *err)
{
    if (!*key || strlen(key) >= MPI_MAX_INFO_KEY || strlen(value) >= MPI_MAX_INFO_VAL)
        return drx_err_set(err, EINVAL, "bad MPI-IO hint '%s=%s'", key, value);
    MPI_Info_set(info, key, value);
    return 0;
}

/* ROMIO reads ROMIO_HINTS itself as well, but under the hints a program
 * passes; reading it here makes the environment win over our defaults and
 * the config file, as a user who sets it expects.  --hint is applied after
 * it: a command line beats the environment. */
static int hints_from_env(MPI_Info info, struct drx_err *err)
{
    const char *path = getenv("ROMIO_HINTS");
    if (!path || !*path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return drx_err_set(err, errno, "ROMIO_HINTS=%s: %s", path, strerror(errno));
    char line[1024];
    int rc = 0, lineno = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        if (sscanf(p, "%255s %1023s", key, val) != 2)
            rc = drx_err_set(err, EINVAL, "%s:%d: expected 'key value'", path, lineno);
        else
            rc = hint_set(info, key, val, err);
    }
    fclose(f);
    return rc;
}

/* True when the user watches a terminal.  Under mpiexec our stderr is a
 * pipe to the launcher, which copies it to its own stderr; so look at the
 * stderr of the nearest ancestor that is mpiexec (hydra's proxy sits in
 * between).  Our own stderr counts when run without a launcher. */
static bool stderr_is_terminal(void)
{
    if (isatty(STDERR_FILENO))
        return true;
    pid_t pid = getppid();
    for (int depth = 0; depth < 4 && pid > 1; depth++) {
        char path[64], comm[64] = "", link[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return false;
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strncmp(comm, "mpiexec", 7) == 0 || strncmp(comm, "mpirun", 6) == 0) {
            snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
            ssize_t n = readlink(path, link, sizeof(link) - 1);
            if (n <= 0)
                return false;
            link[n] = '\0';
            return strncmp(link, "/dev/pts/", 9) == 0 || strncmp(link, "/dev/tty", 8) == 0;
        }
        /* the parent's parent: field 4 of /proc/PID/stat */
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (!f)
            return false;
        int ppid = 0;
        char line[512];
        if (fgets(line, sizeof(line), f)) {
            const char *rp = strrchr(line, ')');
            if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
                ppid = 0;
        }
        fclose(f);
        pid = (pid_t)ppid;
    }
    return false;
}

/* --- main --- */

static int load_config(struct load_ctx *c, struct drx_config *cfg, struct drx_err *err)
{
    int rc = drx_config_defaults(cfg, NULL);
    if (rc < 0)
        return drx_err_set(err, -rc, "configuration: %s", strerror(-rc));
    if (c->config_path)
        rc = drx_config_load_file(cfg, c->config_path, err);
    return rc;
}

#if defined(__SANITIZE_ADDRESS__)
#define LOAD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOAD_ASAN 1
#endif
#endif

/* What the command line asked for, besides what goes into struct load_ctx. */
struct cli {
    const char *hints[MAX_HINTS];
    int nhints;
    int progress; /* -1: when stderr is a terminal */
    bool buffer_set, verbose;
};

/* One option into c or o.  Returns 0, 1 for an option that ends the run
 * successfully (--help, --version: already printed), or -errno with err. */
static int option_apply(struct load_ctx *c, struct cli *o, int opt, const char *arg,
                        const char *word, struct drx_err *err)
{
    switch (opt) {
    case 'c':
        c->config_path = arg;
        return 0;
    case 'b':
        o->buffer_set = true;
        if (drx_config_parse_bytes(arg, &c->buffer) < 0 || c->buffer == 0 ||
            c->buffer > LOAD_MAX_BUFFER)
            return drx_err_set(err, EINVAL, "--buffer %s: expected 1..1G bytes", arg);
        return 0;
    case 'H':
        if (!strchr(arg, '=') || o->nhints == MAX_HINTS)
            return drx_err_set(err, EINVAL, "--hint %s: expected KEY=VALUE", arg);
        o->hints[o->nhints++] = arg;
        return 0;
    case 'p':
    case 'P':
        o->progress = opt == 'p';
        return 0;
    case 'v':
        o->verbose = true;
        return 0;
    case 'h':
        if (c->rank == 0)
            usage(stdout);
        return 1;
    case 'V':
        if (c->rank == 0)
            printf("drx-load %s\n", DRX_VERSION);
        return 1;
    case ':':
        return drx_err_set(err, EINVAL, "option '%s' needs a value (see --help)", word);
    default:
        return drx_err_set(err, EINVAL, "unknown option '%s' (see --help)", word);
    }
}

/* Parses the options, before or after the command and its arguments, as
 * drx takes them (the same on every rank); "--" ends them.  GNU getopt
 * moves the words that are not options to the end in their order: the
 * command, then its arguments.  Returns 0, 1 when the run ends
 * successfully here, or -errno with err.  (Before 2026-12-07 only options
 * before the command were taken: `drx-load import A raw --buffer 1M` said
 * "'--buffer' is not a KEY=VALUE view word".) */
static int options_parse(struct load_ctx *c, struct cli *o, int argc, char **argv,
                         struct drx_err *err)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"buffer", required_argument, NULL, 'b'},
        {"hint", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"progress", no_argument, NULL, 'p'},
        {"no-progress", no_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    int opt, rc = 0;

    opterr = 0;
    /* no short options: a word "-" (no option to getopt) and view words
     * (KEY=VALUE) stay arguments; a file named like an option follows "--";
     * ':' first: a missing value is ':', not an unknown option */
    while (rc == 0 && (opt = getopt_long(argc, argv, ":", opts, NULL)) != -1)
        rc = option_apply(c, o, opt, optarg, argv[optind - 1], err);
    if (rc == 0 && optind >= argc)
        rc = drx_err_set(err, EINVAL, "no command given (see --help)");
    return rc;
}

/* Command line over file: --verbose over log.level, --buffer over
 * mpiio.buffer. */
static void settings_merge(struct load_ctx *c, const struct cli *o, struct drx_config *cfg)
{
    drx_log_set_level(o->verbose ? DRX_LOG_DEBUG : cfg->log_level);
    c->config = cfg;
    if (!o->buffer_set)
        c->buffer = cfg->mpiio.buffer;
    if (c->rank == 0)
        drx_log(DRX_LOG_DEBUG, "round buffer: %llu bytes per rank (%s)",
                (unsigned long long)c->buffer, o->buffer_set ? "--buffer" : "mpiio.buffer");
}

/* Builds c->info.  Hints, lowest precedence first: a later MPI_Info_set of
 * the same key replaces the value.  Returns 0 or -errno with err. */
static int hints_build(struct load_ctx *c, const struct cli *o, const struct drx_config *cfg,
                       struct drx_err *err)
{
    int rc = 0;

    MPI_Info_create(&c->info);
    for (size_t i = 0; i < sizeof(default_hints) / sizeof(default_hints[0]); i++)
        MPI_Info_set(c->info, default_hints[i][0], default_hints[i][1]);
    for (size_t i = 0; i < cfg->mpiio.nhints && rc == 0; i++) {
        rc = hint_set(c->info, cfg->mpiio.hints[i].key, cfg->mpiio.hints[i].value, err);
        if (rc < 0)
            drx_err_prefix(err, "%s: mpiio.hints", c->config_path ? c->config_path : "config");
    }
    if (rc == 0)
        rc = hints_from_env(c->info, err);
    for (int i = 0; i < o->nhints && rc == 0; i++) {
        char key[MPI_MAX_INFO_KEY + 1];
        const char *eq = strchr(o->hints[i], '=');
        snprintf(key, sizeof(key), "%.*s", (int)(eq - o->hints[i]), o->hints[i]);
        rc = hint_set(c->info, key, eq + 1, err);
    }
    return rc;
}

/* Runs command argv[0]; returns the exit status. */
static int command_run(struct load_ctx *c, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(struct load_ctx *, int, char **);
    } cmds[] = {
        {"import", load_cmd_import},
        {"export", load_cmd_export},
        {"copy", load_cmd_copy},
        {"prefetch", load_cmd_prefetch},
    };

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[0], cmds[i].name) == 0)
            return cmds[i].run(c, argc, argv);
    if (c->rank == 0)
        fprintf(stderr, "drx-load: unknown command '%s' (see --help)\n", argv[0]);
    return 2;
}

int main(int argc, char **argv)
{
    struct load_ctx c = {.buffer = LOAD_DEFAULT_BUFFER, .info = MPI_INFO_NULL};
    struct drx_config cfg = {0};
    struct drx_err err = {{0}};
    struct cli o = {.progress = -1};
    int rc, status = 1;

    /* MPI_Init runs hwloc, which loads its GPU plugins (OpenCL, and GL with
     * X11): about 0.3 s with a cold page cache, for nothing a file loader
     * uses.  A user's own HWLOC_COMPONENTS wins. */
#ifdef LOAD_ASAN
    /* Sanitizer builds also skip the PCI plugin: it leaks and is dlclosed,
     * and LeakSanitizer then reports leaks of an unknown module that no
     * suppression can name. */
    setenv("HWLOC_COMPONENTS", "-gl,-opencl,-pci", 0);
#else
    setenv("HWLOC_COMPONENTS", "-gl,-opencl", 0);
#endif
    MPI_Init(&argc, &argv);
    /* past ulimit -f a write is EFBIG, reported, not death half way */
    signal(SIGXFSZ, SIG_IGN);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
    /* libcore's warnings (a missing stripe directory) are worth a line, but
     * from rank 0 only. */
    if (c.rank == 0)
        drx_log_set_sink(drx_log_stderr_sink, (void *)"drx-load");

    /* Every rank parses the same arguments, so all agree without talking;
     * load_agree still makes rank 0 the one that speaks. */
    rc = options_parse(&c, &o, argc, argv, &err);
    if (rc == 1) {
        status = 0;
        goto out;
    }
    if (load_agree(&c, rc, &err, NULL) < 0) {
        status = 2;
        goto out;
    }
    rc = load_config(&c, &cfg, &err);
    if (load_agree(&c, rc, &err, NULL) < 0)
        goto out;
    settings_merge(&c, &o, &cfg);
    rc = hints_build(&c, &o, &cfg, &err);
    if (load_agree(&c, rc, &err, NULL) < 0)
        goto out;

    if (c.rank == 0 && o.progress < 0)
        o.progress = stderr_is_terminal();
    c.progress = c.rank == 0 && o.progress > 0;
    status = command_run(&c, argc - optind, argv + optind);

out:
    if (c.info != MPI_INFO_NULL)
        MPI_Info_free(&c.info);
    drx_config_fini(&cfg);
    drx_log_limits_flush(); /* what a rate limit suppressed is counted */
    MPI_Finalize();
    return status;
}
