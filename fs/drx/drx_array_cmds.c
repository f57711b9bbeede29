/* drx subcommands on arrays: create info extend attr put get address index rm. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "drx/array.h"
#include "drx/io.h"
#include "drx/store.h"
#include "drx/view.h"
#include "drx_cli.h"

/* Bytes moved per step by get and put: large enough for long sequential
 * chunk spans, small enough that memory stays a few chunks' worth. */
#define PIECE_BYTES ((size_t)16 << 20)

/* A value on one line for `attr list`: C-style escapes for the bytes that
 * would break the line or be invisible (attr get prints the bytes as they
 * are). */
static void print_escaped(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", stdout);
        else if (*p == '\n')
            fputs("\\n", stdout);
        else if (*p == '\t')
            fputs("\\t", stdout);
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\x%02x", *p);
        else
            putchar(*p);
    }
}

/* Maps a user's ARRAY argument to the store-side path without suffix:
 * a path under a drxfs mount goes to the store (for a command that changes
 * the array, not under a read-only mount); "NAME.xmd" means NAME. */
static int array_path(const char *arg, char *out, bool write)
{
    struct drx_err err = {""};
    int n =
        drx_store_resolve_path_for(NULL, arg, write ? DRX_STORE_FOR_WRITE : 0, out, PATH_MAX, &err);
    if (n < 0)
        return drx_cli_fail_err(NULL, n, &err);
    if (n > 4 && (strcmp(out + n - 4, ".xmd") == 0 || strcmp(out + n - 4, ".xta") == 0))
        out[n - 4] = '\0';
    return 0;
}

/* A command that takes an array found none at path (store side): says
 * what path is instead, as info and get do (a striped file, a directory,
 * a file, a view of an array), or keeps err's reason. */
static int no_array(const char *cmd, const char *path, int rc, struct drx_err *err)
{
    static const char *const what[] = {
        [DRX_STORE_STRIPED] = "a striped file",
        [DRX_STORE_DIRECTORY] = "a directory",
        [DRX_STORE_PLAIN] = "a file",
        [DRX_STORE_SYMLINK] = NULL,
        [DRX_STORE_SPECIAL] = "a special file",
    };
    enum drx_store_kind k = rc == -ENOENT ? drx_store_classify(path) : DRX_STORE_NONE;
    struct drx_view_spec spec;
    char array[PATH_MAX];
    struct drx_err serr = {""};

    if (k > DRX_STORE_ARRAY && k < sizeof what / sizeof what[0] && what[k])
        return drx_cli_fail("%s: %s: not an array (%s)", cmd, path, what[k]);
    drx_view_spec_init(&spec);
    if (rc == -ENOENT && drx_view_path_split(path, array, sizeof array, &spec, &serr) == 0 &&
        (spec.nwords > 0 || spec.file))
        return drx_cli_fail("%s: %s: a view of the array %s; %s takes the array itself", cmd,
                            path, array, cmd);
    return drx_cli_fail_err(cmd, rc, err);
}

static int open_array(const char *cmd, const char *arg, int mode, struct drx_array **a)
{
    char path[PATH_MAX];
    struct drx_err err = {""};
    int rc;

    if (array_path(arg, path, (mode & DRX_RDWR) != 0))
        return 1;
    rc = drx_array_open(path, mode, a, &err);
    if (rc)
        return no_array(cmd, path, rc, &err);
    return 0;
}

/* Opens the array a path names, as at the mount point: ARRAY or
 * ARRAY/WORD/WORD... (a path under a mount goes to the store).  The path's
 * words start spec.  Failures are reported as "drx: CMD: ARG: reason". */
static int open_view_path(const char *cmd, const char *arg, int mode, struct drx_array **a,
                          struct drx_view_spec *spec)
{
    char path[PATH_MAX], array[PATH_MAX];
    struct drx_err err = {""};
    /* a command that changes the array is refused under a read-only mount */
    int rc = drx_store_resolve_path_for(NULL, arg, mode == DRX_RDWR ? DRX_STORE_FOR_WRITE : 0, path,
                                        sizeof path, &err);

    if (rc < 0)
        return drx_cli_fail_err(NULL, rc, &err);
    drx_view_spec_init(spec);
    rc = drx_view_path_split(path, array, sizeof array, spec, &err);
    if (rc == -ENOENT || rc == -EACCES) /* the message names the path (drx_array_no_such) */
        return drx_cli_fail_err(cmd, rc, &err);
    if (rc < 0)
        return drx_cli_fail("%s: %s: %s", cmd, arg, err.msg[0] ? err.msg : strerror(-rc));
    /* get and put move only the raw bytes a view's `data` holds */
    if (strcmp(cmd, "info") != 0 && spec->file && strcmp(spec->file, "data") != 0)
        return drx_cli_fail("%s: %s: %s moves the view's raw bytes (its data), not %s: "
                            "name the view, or read %s at the mount",
                            cmd, arg, cmd, spec->file, spec->file);
    rc = drx_array_open(array, mode, a, &err);
    if (rc)
        return drx_cli_fail_err(NULL, rc, &err);
    return 0;
}

/* Parses "N0xN1x..." into v; returns the rank or -1. */
static int parse_shape(const char *s, uint64_t *v)
{
    int n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        if (n == DRX_MAX_RANK || *p < '0' || *p > '9')
            return -1;
        errno = 0;
        v[n++] = strtoull(p, &end, 10);
        if (errno || end == p)
            return -1;
        if (*end == '\0')
            return n;
        if (*end != 'x' && *end != 'X')
            return -1;
        p = end + 1;
    }
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno || *end ? -1 : 0;
}

/* View words from argv after those of the path in spec, into a resolved
 * view. */
static int view_from_args(struct drx_array *a, struct drx_view_spec *spec, int argc, char **argv,
                          struct drx_view *v)
{
    struct drx_err err = {""};
    int rc;

    for (int i = 0; i < argc; i++) {
        rc = drx_view_spec_add(spec, argv[i], &err);
        if (rc)
            return drx_cli_fail("bad view word: %s", err.msg);
    }
    rc = drx_view_resolve(spec, drx_array_meta(a), v, &err);
    if (rc)
        return drx_cli_fail("bad view: %s", err.msg);
    return 0;
}

/* --shape and --chunk into spec.  0, or 1 when reported. */
static int create_shape(const char *shape, const char *chunk, struct drx_array_spec *spec)
{
    uint64_t cshape[DRX_MAX_RANK];
    int crank;

    spec->rank = parse_shape(shape, spec->shape);
    if (spec->rank < 0)
        return drx_cli_fail("create: bad --shape '%s' (want N0xN1x..., at most %d numbers)", shape,
                            DRX_MAX_RANK);
    crank = parse_shape(chunk, cshape);
    if (crank < 0)
        return drx_cli_fail("create: bad --chunk '%s' (want C0xC1x...)", chunk);
    if (crank != spec->rank)
        return drx_cli_fail("create: --chunk has %d extents for a rank-%d --shape", crank,
                            spec->rank);
    for (int i = 0; i < spec->rank; i++) {
        if (spec->shape[i] == 0)
            return drx_cli_fail("create: --shape extent %d is 0 (extents start at 1)", i);
        if (cshape[i] == 0)
            return drx_cli_fail("create: --chunk extent %d is 0 (extents start at 1)", i);
        spec->chunk[i] = cshape[i];
    }
    return 0;
}

/* --dims a,b,c into spec (dims is an argv string, cut up in place); an
 * empty name leaves its dimension unnamed (time,,lon).  0, or 1 when
 * reported. */
static int create_dims(char *dims, struct drx_array_spec *spec)
{
    int n = 0;

    for (char *rest = dims, *tok; (tok = strsep(&rest, ","));) {
        if (n == spec->rank)
            return drx_cli_fail("create: --dims has more names than the rank %d", spec->rank);
        spec->dim_name[n++] = tok;
    }
    if (n != spec->rank)
        return drx_cli_fail("create: --dims has %d names for rank %d", n, spec->rank);
    return 0;
}

/* An array of rank 2 or more named like one of its dimensions is made
 * (drx and the mount are fine with it), with a warning: in data.nc and
 * zarr/ it is a variable of its dimension's name over more than that
 * dimension, which xarray refuses to open (MissingDimensionsError).  So
 * is one named like a Zarr metadata key, which has no zarr/. */
static void create_name_warning(const char *path, const struct drx_array_spec *spec)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    if (strcmp(base, ".zgroup") == 0 || strcmp(base, ".zattrs") == 0 ||
        strcmp(base, ".zarray") == 0 || strcmp(base, ".zmetadata") == 0)
        fprintf(stderr,
                "drx: create: warning: %s is a Zarr metadata key: its directory at the mount "
                "has no zarr/ (rename the array for Zarr readers)\n",
                base);
    for (int d = 0; spec->rank > 1 && d < spec->rank; d++)
        if (spec->dim_name[d] && strcmp(spec->dim_name[d], base) == 0) {
            fprintf(stderr,
                    "drx: create: warning: %s has a dimension of its own name: xarray "
                    "refuses such a variable in data.nc and zarr/ (MissingDimensionsError); "
                    "rename the array or the dimension for xarray\n",
                    base);
            return;
        }
}

int drx_cmd_create(int argc, char **argv)
{
    struct drx_array_spec spec;
    struct drx_array *a = NULL;
    struct drx_err err = {""};
    char path[PATH_MAX];
    unsigned char fillv[DRX_MAX_ELEM] = {0};
    int rc;

    (void)argc;
    memset(&spec, 0, sizeof spec);
    if (!drx_cli.type || !drx_cli.shape || !drx_cli.chunk) {
        drx_cli_fail("create: --type, --shape and --chunk are required");
        return 2; /* the line is wrong, as for a missing argument */
    }
    if (drx_type_parse(drx_cli.type, &spec.type, &err))
        return drx_cli_fail("create: %s", err.msg);
    if (create_shape(drx_cli.shape, drx_cli.chunk, &spec) ||
        (drx_cli.dims && create_dims((char *)drx_cli.dims, &spec)))
        return 1;
    if (drx_cli.fill) {
        if (drx_type_parse_value(spec.type, drx_cli.fill, fillv, &err))
            return drx_cli_fail("create: --fill: %s", err.msg);
        spec.fill = fillv;
    }
    if (array_path(argv[1], path, true))
        return 1;
    /* .drx/, NAME.xmd, .drx-tmp.*, ...: the store's own names, which no
     * mount would show as this array (the MPI audit of 2026-12-07) */
    if ((rc = drx_store_path_reserved(path, argv[1], &err)) < 0)
        return drx_cli_fail_err("create", rc, &err);
    rc = drx_array_create(path, &spec, &a, &err);
    if (rc)
        return drx_cli_fail_err("create", rc, &err);
    drx_array_close(a);
    create_name_warning(path, &spec);
    return 0;
}

static void print_list(const char *sep, int n, const uint64_t *v)
{
    for (int i = 0; i < n; i++)
        printf("%s%" PRIu64, i ? sep : "", v[i]);
}

/* drx info of a view: what its files hold and where it lies. */
static void print_view(const struct drx_array *a, const struct drx_view *v)
{
    printf("array:       %s\n", drx_array_path(a));
    printf("type:        %s (%zu bytes)\nshape:       ", drx_type_name(v->type), v->elem_size);
    print_list(" x ", v->rank, v->count);
    printf("\norder:       %s\nrep:         %s\nbytes:       %" PRIu64 "\norigin:      ",
           v->order == DRX_ORDER_C ? "C" : "F", v->rep == DRX_REP_NATIVE ? "native" : "external32",
           drx_view_bytes(v));
    print_list(", ", v->rank, v->origin);
    printf("\nstep:        ");
    print_list(", ", v->rank, v->step);
    printf("\narray shape: ");
    print_list(" x ", v->rank, drx_array_meta(a)->bounds);
    printf("\n");
}

static void print_info_attrs(const struct drx_array_meta *m)
{
    for (size_t i = 0; i < m->nattrs; i++) {
        char *text = drx_attr_format(&m->attrs[i]);
        printf("%s %s (%s) ", i ? "            " : "attrs:      ", m->attrs[i].name,
               drx_attr_type_name(&m->attrs[i]));
        print_escaped(text ? text : "?");
        putchar('\n');
        free(text);
    }
}

static void print_info_axial(const struct drx_array_meta *m)
{
    printf("axial vectors (start index, first chunk address, coefficients):\n");
    for (int j = 0; j < m->rank; j++) {
        printf("  dim %d:", j);
        for (size_t i = 0; i < m->map.vec[j].n; i++) {
            const struct drx_axial_rec *r = &m->map.vec[j].rec[i];
            printf(" (%" PRIu64 ", %" PRId64 ", [", r->start, r->addr);
            print_list(" ", m->rank, r->coef);
            printf("])");
        }
        printf("\n");
    }
}

/* The text form of `drx info ARRAY`: shape, chunks, attributes, history,
 * axial vectors. */
static void print_info(const struct drx_array *a, const struct drx_array_meta *m)
{
    char fill[160];

    drx_type_format_value(m->type, m->fill, fill, sizeof fill);
    printf("array:       %s\n", drx_array_path(a));
    printf("type:        %s (%zu bytes)\nrank:        %d\nshape:       ", drx_type_name(m->type),
           m->elem_size, m->rank);
    print_list(" x ", m->rank, m->bounds);
    printf("\ndims:        ");
    for (int i = 0; i < m->rank; i++)
        printf("%s%s", i ? ", " : "", m->dim_name[i][0] ? m->dim_name[i] : "-");
    printf("\nchunk:       ");
    print_list(" x ", m->rank, m->chunk);
    printf(" (%" PRIu64 " bytes)\nchunk grid:  ", m->chunk_bytes);
    print_list(" x ", m->rank, m->map.bound);
    printf("\nchunks:      %" PRIu64 " (%" PRIu64 " bytes in .xta)\nfill:        %s\n",
           m->map.nchunks, m->map.nchunks * m->chunk_bytes, fill);
    print_info_attrs(m);
    printf("history:     created ");
    print_list(" x ", m->rank, m->initial);
    printf("\n");
    for (size_t i = 0; i < m->nhistory; i++)
        printf("             dim %d: %" PRIu64 " -> %" PRIu64 "\n", m->history[i].dim,
               m->history[i].from, m->history[i].to);
    print_info_axial(m);
}

int drx_cmd_info(int argc, char **argv)
{
    struct drx_array *a;
    const struct drx_array_meta *m;
    struct drx_view_spec spec;
    struct drx_view v;
    struct drx_err err = {""};
    char *text = NULL;
    int rc = 0;

    (void)argc;
    if (open_view_path("info", argv[1], DRX_RDONLY, &a, &spec))
        return 1;
    m = drx_array_meta(a);
    if (drx_view_resolve(&spec, m, &v, &err) < 0)
        rc = drx_cli_fail("info: %s: %s", argv[1], err.msg);
    else if (drx_cli.json && !(text = drx_array_info_json(m, &v)))
        rc = drx_cli_fail("info: out of memory");
    else if (drx_cli.json)
        fputs(text, stdout);
    else if (spec.nwords)
        print_view(a, &v);
    else
        print_info(a, m);
    free(text);
    drx_array_close(a);
    return rc;
}

int drx_cmd_extend(int argc, char **argv)
{
    struct drx_array *a;
    struct drx_err err = {""};
    uint64_t count;
    int dim, rc;

    if (argc != 4)
        return drx_cli_fail("usage: drx extend ARRAY DIM COUNT");
    if (parse_u64(argv[3], &count) || count == 0)
        return errno == ERANGE
                   ? drx_cli_fail("extend: COUNT '%s' is out of range (at most %" PRIu64 ")",
                                  argv[3], UINT64_MAX)
                   : drx_cli_fail("extend: COUNT '%s' is not a number > 0", argv[3]);
    /* the metadata alone: no axial vectors built from a long history */
    if (open_array("extend", argv[1], DRX_RDWR | DRX_METAONLY, &a))
        return 1;
    dim = drx_array_dim_lookup(drx_array_meta(a), argv[2]);
    if (dim < 0) {
        /* as a view word's error does: the names a typo missed */
        const struct drx_array_meta *m = drx_array_meta(a);
        char names[DRX_ARRAY_DIM_NAMES_LEN];
        size_t used = drx_array_dim_names(m, names, sizeof names);
        rc = drx_cli_fail("extend: '%s' is not a dimension of %s (%s%.300s%s0..%d)", argv[2],
                          argv[1], used ? "names: " : "", names, used ? "; or " : "numbers ",
                          m->rank - 1);
        drx_array_close(a);
        return rc;
    }
    rc = drx_array_extend(a, dim, count, &err);
    drx_array_close(a);
    if (rc)
        return drx_cli_fail_err("extend", rc, &err);
    return 0;
}

/* The view's bytes to fd, piece by piece through buf.  0, or 1 when
 * reported. */
static int get_copy(struct drx_array *a, const struct drx_view *v, int fd, const char *out_name,
                    const char *name)
{
    uint64_t total = drx_view_bytes(v);
    size_t piece = PIECE_BYTES - PIECE_BYTES % v->elem_size;
    char *buf = malloc(piece);
    int rc = buf ? 0 : drx_cli_fail("get: out of memory");

    for (uint64_t off = 0; off < total && rc == 0; off += piece) {
        size_t n = total - off < piece ? (size_t)(total - off) : piece;
        ssize_t got = drx_view_read(a, v, off, buf, n);
        if (got < 0)
            rc = drx_cli_fail("get: %s: %s", name, strerror((int)-got));
        else if ((rc = drx_io_write_all(fd, buf, (size_t)got)) != 0)
            rc = drx_cli_fail("get: writing %s: %s", out_name, strerror(-rc));
    }
    free(buf);
    return rc;
}

int drx_cmd_get(int argc, char **argv)
{
    struct drx_array *a;
    struct drx_view_spec spec;
    struct drx_view v;
    const char *out = drx_cli.output, *out_name = "standard output";
    int rc, fd = STDOUT_FILENO;

    /* Binary on a terminal garbles it and helps nobody; "-o -" is how to
     * say it is meant. */
    if (!out && isatty(STDOUT_FILENO))
        return drx_cli_fail("get: standard output is a terminal: redirect it or give -o FILE "
                            "(-o - writes to the terminal anyway)");
    if (open_view_path("get", argv[1], DRX_RDONLY, &a, &spec))
        return 1;
    if (view_from_args(a, &spec, argc - 2, argv + 2, &v)) {
        drx_array_close(a);
        return 1;
    }
    /* Opened only now, so that a bad array or view leaves FILE alone, and
     * cut only once it is known not to be one of the array's own files,
     * nor a name the store keeps for its own or an array or striped file
     * holds (a plain file of that name would not show). */
    struct drx_err err = {{0}};
    int reserved = 0;
    if (out && strcmp(out, "-") != 0) {
        out_name = out;
        if ((reserved = drx_store_path_plain(out, out, &err)) == 0)
            fd = open(out, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    }
    const char *own = fd >= 0 ? drx_array_own_file(a, fd) : NULL;
    struct stat st;
    if (reserved < 0)
        rc = drx_cli_fail("get: %s", err.msg);
    else if (fd < 0)
        rc = drx_cli_fail("get: %s: %s", out, strerror(errno));
    else if (own)
        rc = drx_cli_fail("get: %s is %s's own %s: nothing written", out_name, argv[1], own);
    else if (fd != STDOUT_FILENO && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             ftruncate(fd, 0) < 0)
        rc = drx_cli_fail("get: %s: %s", out, strerror(errno));
    else
        rc = get_copy(a, &v, fd, out_name, argv[1]);
    if (fd >= 0 && fd != STDOUT_FILENO && close(fd) < 0 && rc == 0)
        rc = drx_cli_fail("get: %s: %s", out_name, strerror(errno));
    drx_array_close(a);
    return rc;
}

/* SPEC: put reads exactly the view's byte count.  More input is a mistake
 * (the wrong view, the wrong file) that storing a prefix would hide, so one
 * byte past the end is read: there must be none.  Draining the rest to
 * count it could take forever on an endless pipe. */
/* Why the view of a put is smaller than the user may think (a slice cut
 * at the end of its dimension: drx_view_cut_note), "; " and that, or "":
 * added to the size errors. */
static char put_cut[640];

static int input_ends(uint64_t need)
{
    char extra;
    ssize_t got = drx_io_read_full(STDIN_FILENO, &extra, 1);

    if (got < 0)
        return drx_cli_fail("put: reading standard input: %s", strerror((int)-got));
    if (got > 0)
        return drx_cli_fail("put: standard input holds more than the view's %" PRIu64
                            " bytes (at least %" PRIu64 "; nothing was written%s)",
                            need, need + 1, put_cut);
    return 0;
}

/* Moves `left` more bytes of the input into the file tmp: spliced from a
 * pipe (the bytes never pass through this process), else read and
 * written through buf.  The bytes moved (fewer when the input ends first),
 * or -errno. */
static int64_t spool_rest(int tmp, uint64_t left, bool pipe, char *buf, size_t buflen)
{
    uint64_t have = 0;

    while (have < left) {
        size_t want = left - have < buflen ? (size_t)(left - have) : buflen;
        ssize_t n;
        if (pipe) {
            n = splice(STDIN_FILENO, NULL, tmp, NULL, want, SPLICE_F_MOVE);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return -errno;
        } else {
            n = drx_io_read_full(STDIN_FILENO, buf, want);
            if (n > 0 && drx_io_write_all(tmp, buf, (size_t)n) < 0)
                return -errno;
            if (n < 0)
                return n;
        }
        if (n == 0)
            break;
        have += (uint64_t)n;
    }
    return (int64_t)have;
}

/* Where the input of a put is once it is known to be whole: the first
 * inmem bytes in the caller's buffer, the rest (if any) to be read from
 * fd at its position. */
struct staged {
    int fd;
    size_t inmem;
};

/* An unlinked temporary file for the spool of `bytes` more bytes: in the
 * array's directory (the same file system, whose room the array needs
 * anyway), else, when that directory is not the caller's to write (a
 * project's arrays, group writable, in its owner's directory) or has no
 * O_TMPFILE (NFS), in $TMPDIR or /tmp, when that has room for them (often
 * a tmpfs: memory).  -1 with the reason in why (len bytes). */
static int spool_open(const char *dir, uint64_t bytes, char *why, size_t len)
{
    const char *tmpdir = getenv("TMPDIR");
    char path[PATH_MAX];
    struct statvfs sv;
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), first = errno;

    if (fd >= 0)
        return fd;
    if (!tmpdir || !*tmpdir)
        tmpdir = "/tmp";
    fd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    /* no O_TMPFILE there either: a named one, unlinked at once */
    if (fd < 0 && (size_t)snprintf(path, sizeof path, "%s/drx-put.XXXXXX", tmpdir) < sizeof path &&
        (fd = mkostemp(path, O_CLOEXEC)) >= 0)
        unlink(path);
    if (fd < 0) {
        snprintf(why, len, "in %s: %s (nor in %s)", dir, strerror(first), tmpdir);
        return -1;
    }
    if (fstatvfs(fd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < bytes) {
        snprintf(why, len,
                 "in %s: %s; and %s has %" PRIu64 " bytes free, the input %" PRIu64
                 " more (set TMPDIR to a file system with room)",
                 dir, strerror(first), tmpdir, (uint64_t)sv.f_bavail * sv.f_frsize, bytes);
        close(fd);
        return -1;
    }
    return fd;
}

/* Beyond the first piece (got bytes in mem), the input goes to an
 * unlinked temporary file (spool_open), to be read back once: a pipe's
 * rest is spliced there and the first piece stays in mem; other input (a
 * terminal, a socket) passes through mem, so all of it goes there.
 * 0, or 1 when reported. */
static int stage_spool(uint64_t need, size_t got, char *mem, size_t memlen, const char *dir,
                       struct staged *in)
{
    struct stat st;
    bool pipe = fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode);
    char why[PATH_MAX + 256];
    int tmp = spool_open(dir, need - got, why, sizeof why), rc;
    int64_t more;

    if (tmp < 0)
        return drx_cli_fail("put: cannot spool standard input %s", why);
    rc = pipe ? 0 : drx_io_write_all(tmp, mem, got);
    more = rc < 0 ? rc : spool_rest(tmp, need - got, pipe, mem, memlen);
    if (more < 0)
        rc = drx_cli_fail("put: spooling standard input: %s", strerror((int)-more));
    else if ((uint64_t)more < need - got)
        rc = drx_cli_fail("put: standard input ended after %" PRIu64
                          " bytes; the view needs %" PRIu64 " (nothing was written)",
                          got + (uint64_t)more, need);
    else if (input_ends(need) || lseek(tmp, 0, SEEK_SET) < 0)
        rc = 1;
    if (rc) {
        close(tmp);
        return 1;
    }
    in->fd = tmp;
    in->inmem = pipe ? got : 0;
    return 0;
}

/* put must change nothing when the input is short, so the whole input is
 * known to be there before the first byte is stored: a regular file is
 * checked by its size; a pipe is kept in memory up to one piece and the
 * rest spooled.  Each byte comes into this process once. */
static int stage_input(uint64_t need, char *mem, size_t memlen, const char *dir,
                       struct staged *in)
{
    struct stat st;
    ssize_t got;

    in->fd = -1;
    in->inmem = 0;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t pos = lseek(STDIN_FILENO, 0, SEEK_CUR);
        if (pos >= 0) {
            if ((uint64_t)(st.st_size - pos) != need)
                return drx_cli_fail("put: standard input has %jd bytes; the view needs %" PRIu64
                                    " (nothing was written%s)",
                                    (intmax_t)(st.st_size - pos), need,
                                    (uint64_t)(st.st_size - pos) > need ? put_cut : "");
            in->fd = STDIN_FILENO;
            return 0;
        }
    }
    got = drx_io_read_full(STDIN_FILENO, mem, need < memlen ? (size_t)need : memlen);
    if (got < 0)
        return drx_cli_fail("put: reading standard input: %s", strerror((int)-got));
    in->inmem = (size_t)got;
    if ((uint64_t)got == need)
        return input_ends(need);
    if ((size_t)got < memlen)
        return drx_cli_fail("put: standard input ended after %zd bytes; the view needs %" PRIu64
                            " (nothing was written)",
                            got, need);
    return stage_spool(need, (size_t)got, mem, memlen, dir, in);
}

/* The directory of the array's files, where a spool goes. */
static char *array_dir(const struct drx_array *a)
{
    char *dir = strdup(drx_array_path(a)), *slash;

    if (!dir)
        return NULL;
    slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        strcpy(dir, ".");
    return dir;
}

/* A full disk must fail the put before its first byte, not half way (and
 * give back what it did reserve).  0, or 1 when reported, saying how much
 * of the room the spool of a piped input takes (spool: its descriptor,
 * -1 for none). */
static int put_reserve(struct drx_array *a, const struct drx_view *v, const char *name, int spool)
{
    struct drx_reserve res;
    struct stat sst, xst;
    char note[160] = "";
    int rc, urc;

    drx_reserve_init(&res, drx_array_xta_fd(a));
    rc = drx_view_reserve(a, v, &res);
    if (rc == 0) {
        drx_reserve_fini(&res);
        return 0;
    }
    urc = drx_array_reserve_undo(a, &res);
    drx_reserve_fini(&res);
    if (rc == -ENOSPC && spool >= 0 && fstat(spool, &sst) == 0 &&
        fstat(drx_array_xta_fd(a), &xst) == 0 && sst.st_dev == xst.st_dev && sst.st_blocks)
        snprintf(note, sizeof note,
                 " (the piped input took %llu MiB of that disk until the put ends; "
                 "from a regular file it takes none)",
                 (unsigned long long)((uint64_t)sst.st_blocks * 512 >> 20));
    return drx_cli_fail("put: %s: reserving space for the view's chunks: %s%s; nothing written%s%s%s",
                        name, strerror(-rc), note, urc ? " (space reserved on the way kept: " : "",
                        urc ? strerror(-urc) : "", urc ? ")" : "");
}

/* A failed drx_view_write of put, reported (1).  A chunk another process
 * kept locked past DRX_LOCK_WAIT_MS says so (the bare EAGAIN said
 * "Resource temporarily unavailable"). */
static int put_write_failed(const char *name, ssize_t n)
{
    if (n == -EAGAIN)
        return drx_cli_fail("put: %s: a chunk locked by another process for %u ms "
                            "(DRX_LOCK_WAIT_MS): not written, other chunks of the view may be; "
                            "put again to finish",
                            name, drx_io_lock_wait_ms());
    return drx_cli_fail("put: %s: %s", name, strerror((int)-n));
}

/* Stores the staged input: the piece in buf, then the rest read from
 * in->fd into buf piece by piece.  0, or 1 when reported. */
static int put_write(struct drx_array *a, const struct drx_view *v, const struct staged *in,
                     char *buf, size_t piece, const char *name)
{
    uint64_t total = drx_view_bytes(v), off = in->inmem;
    ssize_t n;

    if (in->inmem && (n = drx_view_write(a, v, 0, buf, in->inmem)) < 0)
        return put_write_failed(name, n);
    for (; off < total && in->fd >= 0; off += piece) {
        size_t want = total - off < piece ? (size_t)(total - off) : piece;
        if (drx_io_read_full(in->fd, buf, want) != (ssize_t)want)
            return drx_cli_fail("put: input ended early after %" PRIu64 " bytes", off);
        if ((n = drx_view_write(a, v, off, buf, want)) < 0)
            return put_write_failed(name, n);
    }
    return 0;
}

int drx_cmd_put(int argc, char **argv)
{
    struct drx_array *a;
    struct drx_view_spec spec;
    struct drx_view v;
    struct staged in = {-1, 0};
    size_t piece;
    char *buf, *dir;
    int rc;

    if (open_view_path("put", argv[1], DRX_RDWR, &a, &spec))
        return 1;
    if (view_from_args(a, &spec, argc - 2, argv + 2, &v)) {
        drx_array_close(a);
        return 1;
    }
    {
        char note[sizeof put_cut - 2];
        if (drx_view_cut_note(&spec, drx_array_meta(a), drx_array_path(a), note, sizeof note))
            snprintf(put_cut, sizeof put_cut, "; %s", note);
    }
    piece = PIECE_BYTES - PIECE_BYTES % v.elem_size;
    buf = malloc(piece);
    dir = array_dir(a);
    const char *own = drx_array_own_file(a, STDIN_FILENO);
    if (own)
        rc = drx_cli_fail("put: standard input is %s's own %s: nothing written", argv[1], own);
    else if (!buf || !dir)
        rc = drx_cli_fail("put: out of memory");
    else
        rc = stage_input(drx_view_bytes(&v), buf, piece, dir, &in);
    if (rc == 0)
        rc = put_reserve(a, &v, argv[1], in.fd != STDIN_FILENO ? in.fd : -1);
    if (rc == 0)
        rc = put_write(a, &v, &in, buf, piece, argv[1]);
    if (in.fd >= 0 && in.fd != STDIN_FILENO)
        close(in.fd);
    if (rc == 0 && fdatasync(drx_array_xta_fd(a)))
        rc = drx_cli_fail("put: %s: %s", argv[1], strerror(errno));
    free(buf);
    free(dir);
    drx_array_close(a);
    return rc;
}

int drx_cmd_address(int argc, char **argv)
{
    struct drx_array *a;
    const struct drx_array_meta *m;
    uint64_t idx[DRX_MAX_RANK], cidx[DRX_MAX_RANK], q, off;
    int n = 0;
    char *copy, *save = NULL;

    if (argc != 3)
        return drx_cli_fail("usage: drx address ARRAY I0,I1,...");
    if (open_array("address", argv[1], DRX_RDONLY, &a))
        return 1;
    m = drx_array_meta(a);
    copy = strdup(argv[2]);
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == m->rank || parse_u64(tok, &idx[n])) {
            n = -1;
            break;
        }
        n++;
    }
    free(copy);
    if (n != m->rank) {
        int rc = drx_cli_fail("address: '%s' is not %d comma-separated indices", argv[2], m->rank);
        drx_array_close(a);
        return rc;
    }
    for (int i = 0; i < m->rank; i++)
        if (idx[i] >= m->bounds[i]) {
            int rc = drx_cli_fail("address: index %" PRIu64 " out of range for dimension %d "
                                  "(size %" PRIu64 ")",
                                  idx[i], i, m->bounds[i]);
            drx_array_close(a);
            return rc;
        }
    drx_array_locate(m, idx, cidx, &q, &off);
    printf("chunk=");
    print_list(",", m->rank, cidx);
    printf(" address=%" PRIu64 " offset=%" PRIu64 "\n", q, off);
    drx_array_close(a);
    return 0;
}

int drx_cmd_index(int argc, char **argv)
{
    struct drx_array *a;
    const struct drx_array_meta *m;
    uint64_t q, idx[DRX_MAX_RANK];

    if (argc != 3)
        return drx_cli_fail("usage: drx index ARRAY Q");
    if (parse_u64(argv[2], &q))
        return drx_cli_fail("index: '%s' is not a chunk address", argv[2]);
    if (open_array("index", argv[1], DRX_RDONLY, &a))
        return 1;
    m = drx_array_meta(a);
    if (q >= m->map.nchunks) {
        int rc = drx_cli_fail("index: chunk address %" PRIu64 " out of range (%" PRIu64
                              " chunks)",
                              q, m->map.nchunks);
        drx_array_close(a);
        return rc;
    }
    drx_map_index(&m->map, q, idx);
    printf("chunk=");
    print_list(",", m->rank, idx);
    printf("\n");
    drx_array_close(a);
    return 0;
}

int drx_cmd_rm(int argc, char **argv)
{
    char path[PATH_MAX];
    struct drx_err err = {""};
    int rc;

    if (argc != 2)
        return drx_cli_fail("usage: drx rm ARRAY");
    if (array_path(argv[1], path, true))
        return 1;
    rc = drx_array_remove(path, &err);
    if (rc < 0)
        return no_array("rm", path, rc, &err);
    if (rc == 1)
        fprintf(stderr, "drx: rm: %s: removed its .xta, left without its .xmd by an "
                        "interrupted drx rm\n",
                path);
    return 0;
}

/* Without --type, an existing number attribute keeps its type, as
 * setfattr on the mount does (before, `drx attr set A scale_factor 0.02`
 * turned an f64 scale_factor into a string, and xarray failed on the
 * variable); a new CF number attribute made a string is warned of.  *at
 * is replaced by the value parsed as that type.  0 or the exit code. */
static int attr_keep_type(struct drx_array *a, const char *name, const char *value,
                          struct drx_attr *at)
{
    const struct drx_attr *old = drx_array_attr_get(drx_array_meta(a), name);
    struct drx_err err = {""};
    struct drx_attr typed;
    int rc;

    if (!old || old->is_string) {
        if (at->is_string && drx_attr_cf_number(name))
            fprintf(stderr,
                    "drx: attr set: warning: %s is set as a string: CF readers (xarray) "
                    "need a number; give --type (the variable's type, or f64)\n",
                    name);
        return 0;
    }
    if ((rc = drx_attr_parse(name, drx_type_name(old->type), value, &typed, &err)))
        return drx_cli_fail("attr set: %s is %s: %s (--type string makes it a string)", name,
                            drx_type_name(old->type), err.msg);
    drx_attr_fini(at);
    *at = typed;
    return 0;
}

static int attr_set_cmd(char *const *argv, int nargs)
{
    struct drx_array *a;
    struct drx_attr at;
    struct drx_err err = {""};
    int rc;

    /* "--type i16 -5 300", as the .xmd shows a list, is the likely slip */
    if (nargs > 3)
        return drx_cli_fail("attr set: one VALUE after NAME, not %d: several numbers are one "
                            "word, separated by commas (-5,300)",
                            nargs - 2),
               2;
    if (nargs != 3)
        return drx_cli_fail("usage: drx attr set ARRAY NAME VALUE [--type T]"), 2;
    /* the attribute is checked before the array is opened: a bad one
     * changes nothing whatever the array */
    rc = drx_attr_parse(argv[1], drx_cli.type, argv[2], &at, &err);
    if (rc)
        return drx_cli_fail_err("attr set", rc, &err);
    rc = open_array("attr set", argv[0], DRX_RDWR, &a);
    if (rc == 0) {
        if (!drx_cli.type && (rc = attr_keep_type(a, argv[1], argv[2], &at))) {
            drx_array_close(a);
            drx_attr_fini(&at);
            return rc;
        }
        rc = drx_array_attr_set(a, &at, &err);
        drx_array_close(a);
        rc = rc ? drx_cli_fail_err("attr set", rc, &err) : 0;
    }
    drx_attr_fini(&at);
    return rc;
}

static int attr_show(const char *cmd, char *const *argv, int nargs)
{
    struct drx_array *a;
    const struct drx_array_meta *m;
    int rc = 0;

    if (nargs != (strcmp(cmd, "get") == 0 ? 2 : 1))
        return drx_cli_fail("usage: drx attr %s",
                            strcmp(cmd, "get") == 0 ? "get ARRAY NAME" : "list ARRAY"),
               2;
    if (open_array(strcmp(cmd, "get") == 0 ? "attr get" : "attr list", argv[0], DRX_RDONLY, &a))
        return 1;
    m = drx_array_meta(a);
    for (size_t i = 0; i < m->nattrs; i++) {
        const struct drx_attr *at = &m->attrs[i];
        char *text;
        if (nargs == 2 && strcmp(at->name, argv[1]))
            continue;
        if (!(text = drx_attr_format(at))) {
            rc = drx_cli_fail("out of memory");
            goto out;
        }
        if (nargs == 2) {
            printf("%s\n", text);
        } else {
            printf("%s %s ", at->name, drx_attr_type_name(at));
            print_escaped(text);
            putchar('\n');
        }
        free(text);
        if (nargs == 2)
            goto out;
    }
    if (nargs == 2)
        rc = drx_cli_fail("attr get: %s has no attribute '%s'", argv[0], argv[1]);
out:
    drx_array_close(a);
    return rc;
}

int drx_cmd_attr(int argc, char **argv)
{
    const char *sub = argv[1];
    struct drx_array *a;
    struct drx_err err = {""};
    int rc;

    if (argc < 3)
        return drx_cli_fail("usage: drx attr set|get|rm|list ARRAY [NAME] [VALUE] [--type T]"), 2;
    if (drx_cli.type && strcmp(sub, "set"))
        return drx_cli_fail("attr %s: --type is only for attr set", sub), 2;
    if (strcmp(sub, "set") == 0)
        return attr_set_cmd(argv + 2, argc - 2);
    if (strcmp(sub, "get") == 0 || strcmp(sub, "list") == 0)
        return attr_show(sub, argv + 2, argc - 2);
    if (strcmp(sub, "rm") != 0)
        return drx_cli_fail("attr: '%s' is not set, get, rm or list", sub), 2;
    if (argc != 4)
        return drx_cli_fail("usage: drx attr rm ARRAY NAME"), 2;
    if (open_array("attr rm", argv[2], DRX_RDWR, &a))
        return 1;
    rc = drx_array_attr_rm(a, argv[3], &err);
    drx_array_close(a);
    if (rc == -ENOENT)
        return drx_cli_fail("attr rm: %s has no attribute '%s'", argv[2], argv[3]);
    return rc ? drx_cli_fail_err("attr rm", rc, &err) : 0;
}
