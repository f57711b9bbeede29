/* fsx_drx: a random-operation file exerciser in the manner of xfstests' fsx.
 *
 * It runs a seeded random sequence of operations on FILE (a file under a
 * drxfs mount) and the same sequence on a reference file on a local
 * filesystem, and compares the two after every step: the sizes always, the
 * whole contents every -c operations and whenever the file is small.  The
 * local filesystem is the oracle (what pwrite, O_APPEND, ftruncate should
 * do), so the exerciser holds no model of its own that could be wrong in
 * the same way.  On the first difference it prints the last 20 operations,
 * the first differing offset and the bytes around it, and exits 1.  One
 * seed always gives the same operations, whatever the file system does.
 *
 * Reads through the kernel's page cache can hide what the daemon stored, so
 * some reads go through a descriptor opened with O_DIRECT (FUSE sends those
 * to the daemon), and reopening drops the cached pages (drxfs opens files
 * without keep_cache).
 *
 * Bytes written by operation k at file offset b are 1 + (31k + b) mod 255:
 * never zero (so a hole that should hold data shows), and a byte found in
 * the wrong place tells which operation wrote it (k mod 255).
 *
 * Exit status: 0 all operations matched, 1 a mismatch or an unexpected
 * error, 2 bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_KEEP 20             /* operations shown on a failure */
#define SMALL_FILE 65536        /* whole-file compare after every operation */
#define PATTERN_OP_INVERSE 181u /* 31 * 181 = 1 (mod 255) */

enum op_kind {
    OP_WRITE,
    OP_APPEND,
    OP_READ,
    OP_TRUNCATE,
    OP_FSYNC,
    OP_REOPEN,
    OP_MAPREAD,
    OP_MAPWRITE,
    OP_STAT,
    OP_RENAME,
    OP_WRITE_EOF,
    OP_COUNT
};

/* Relative frequencies: a file that may change size, and a fixed-size one
 * (-F: an array's data file, where growing is EFBIG). */
static const struct {
    const char *name;
    unsigned grow, fixed;
} op_table[OP_COUNT] = {
    [OP_WRITE] = {"write", 25, 40},       [OP_APPEND] = {"append", 8, 0},
    [OP_READ] = {"read", 20, 25},         [OP_TRUNCATE] = {"truncate", 8, 0},
    [OP_FSYNC] = {"fsync", 2, 2},         [OP_REOPEN] = {"reopen", 4, 5},
    [OP_MAPREAD] = {"mapread", 10, 10},   [OP_MAPWRITE] = {"mapwrite", 6, 6},
    [OP_STAT] = {"stat", 5, 5},           [OP_RENAME] = {"rename", 3, 0},
    [OP_WRITE_EOF] = {"write_eof", 0, 3},
};

struct log_entry {
    unsigned long opno;
    enum op_kind op;
    uint64_t off, len;
    uint64_t before, after; /* expected size around the operation */
    bool done;
    bool changed; /* the operation wrote or resized the file */
    char note[48];
};

static struct {
    /* options */
    unsigned long nops, every;
    uint64_t seed, maxlen, maxoplen, boundary;
    bool no_mmap, no_trunc, no_direct, fixed, renames, verbose, quiet;
    int mtime; /* 0 off, 1 checked after close, 2 after every change (-t) */
    const char *ref_dir, *ref_name;

    /* files */
    const char *path; /* as given */
    char alt[PATH_MAX];
    const char *cur; /* path or alt, after renames */
    char ref_path[PATH_MAX];
    int fd, afd, dfd; /* the file: read-write, O_APPEND, O_DIRECT read-only */
    int rfd, rafd;    /* the reference: read-write, O_APPEND */
    uint64_t size;    /* the reference's size, after the last operation */

    uint64_t rng;
    unsigned long opno;
    const char *phase; /* outside the operations: "setup", "final check" */
    unsigned weights[OP_COUNT], total_weight;
    bool mmap_ok, direct_ok;
    unsigned long mapped;    /* successful mmaps */
    struct timespec changed; /* start of the last operation that changed the file */
    char mmap_why[96], direct_why[96];
    unsigned long done[OP_COUNT], skipped[OP_COUNT], full_checks, direct_checks;
    unsigned char *wbuf, *gbuf, *tbuf; /* data written; reference bytes; file bytes */
    size_t bufsize;
    long pagesize;

    struct log_entry log[LOG_KEEP];
    unsigned long nlog;
} fx = {.nops = 10000,
        .every = 8,
        .seed = 1,
        .maxlen = 256 * 1024,
        .maxoplen = 64 * 1024,
        .ref_dir = ".",
        .phase = "setup",
        .mtime = 1,
        .fd = -1,
        .afd = -1,
        .dfd = -1,
        .rfd = -1,
        .rafd = -1};

/* ---- randomness (splitmix64: small, fast, the same everywhere) ---------- */

static uint64_t rnd(void)
{
    uint64_t z = (fx.rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static unsigned char pattern(unsigned long opno, uint64_t b)
{
    return (unsigned char)(1 + ((uint64_t)opno * 31 + b) % 255);
}

/* ---- reporting ----------------------------------------------------------- */

static struct log_entry *cur_entry(void)
{
    return &fx.log[(fx.nlog - 1) % LOG_KEEP];
}

static void log_print(FILE *out, const struct log_entry *e)
{
    fprintf(out, "%7lu %-9s", e->opno, op_table[e->op].name);
    if (e->len || e->op == OP_TRUNCATE)
        fprintf(out, " off %-8" PRIu64 " len %-6" PRIu64 " end %-8" PRIu64, e->off, e->len,
                e->off + e->len);
    if (e->done)
        fprintf(out, " size %" PRIu64 " -> %" PRIu64, e->before, e->after);
    else
        fprintf(out, " size %" PRIu64 " -> (failed here)", e->before);
    if (e->note[0])
        fprintf(out, " [%s]", e->note);
    fputc('\n', out);
}

static void dump_log(void)
{
    unsigned long first = fx.nlog > LOG_KEEP ? fx.nlog - LOG_KEEP : 0;

    fprintf(stderr,
            "last %lu of %lu operations (seed %" PRIu64 ", -l %" PRIu64 " -o %" PRIu64
            "%s%s%s%s%s):\n",
            fx.nlog - first, fx.nlog, fx.seed, fx.maxlen, fx.maxoplen, fx.fixed ? " -F" : "",
            fx.no_trunc ? " -R" : "", fx.no_mmap ? " -W" : "", fx.renames ? " -m" : "",
            fx.boundary ? " -B" : "");
    for (unsigned long i = first; i < fx.nlog; i++)
        log_print(stderr, &fx.log[i % LOG_KEEP]);
    fprintf(stderr, "file %s (now named %s), reference %s\n", fx.path, fx.cur, fx.ref_path);
}

static _Noreturn void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "fsx_drx: FAIL at operation %lu (%s): ", fx.opno,
            fx.phase ? fx.phase : op_table[cur_entry()->op].name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    dump_log();
    exit(1);
}

/* A call on the file or the reference failed. */
static _Noreturn void fail_sys(const char *call, const char *which)
{
    fail("%s on %s: %s", call, which, strerror(errno));
}

static void describe_byte(const char *label, unsigned char v, uint64_t b)
{
    if (v == 0) {
        fprintf(stderr, "  %s byte 0x00 (a hole, never written)\n", label);
        return;
    }
    unsigned k =
        (unsigned)(((v - 1 + 255u) - (unsigned)(b % 255)) % 255 * PATTERN_OP_INVERSE % 255);
    fprintf(stderr, "  %s byte 0x%02x (the pattern of an operation k with k mod 255 = %u)\n", label,
            v, k);
}

/* got[0..n) against want[0..n), both from file offset off. */
static void compare_bytes(const char *what, const unsigned char *got, const unsigned char *want,
                          size_t n, uint64_t off)
{
    size_t i, j;

    if (memcmp(got, want, n) == 0)
        return;
    for (i = 0; got[i] == want[i]; i++)
        ;
    size_t bad = 0, last = i;
    for (j = i; j < n; j++)
        if (got[j] != want[j]) {
            bad++;
            last = j;
        }
    fflush(stdout);
    fprintf(stderr,
            "fsx_drx: MISMATCH in %s at operation %lu: first difference at offset %" PRIu64
            " (0x%" PRIx64 "); %zu bytes differ up to offset %" PRIu64 "; file size %" PRIu64 "\n",
            what, fx.opno, off + i, off + i, bad, off + last, fx.size);
    if (fx.boundary)
        fprintf(stderr, "  offset %% %" PRIu64 " = %" PRIu64 "\n", fx.boundary,
                (off + i) % fx.boundary);
    size_t start = i & ~(size_t)15, end = min_u64(n, start + 32);
    fprintf(stderr, "  offset   expected / got\n");
    for (size_t row = start; row < end; row += 16) {
        fprintf(stderr, "  %-8" PRIu64 " ", off + row);
        for (size_t k = row; k < row + 16 && k < end; k++)
            fprintf(stderr, "%02x", want[k]);
        fprintf(stderr, "\n           ");
        for (size_t k = row; k < row + 16 && k < end; k++)
            fprintf(stderr, "%02x", got[k]);
        fputc('\n', stderr);
    }
    describe_byte("expected", want[i], off + i);
    describe_byte("got     ", got[i], off + i);
    fail("contents differ (%s)", what);
}

/* ---- I/O ------------------------------------------------------------------ */

/* pread until len bytes or the end of the file: the count, or -1. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* The reference's bytes [off, off+len) into fx.gbuf (len within its size). */
static void ref_bytes(uint64_t off, size_t len)
{
    ssize_t n = pread_full(fx.rfd, fx.gbuf, len, off);
    if (n < 0)
        fail_sys("pread", fx.ref_path);
    if ((size_t)n != len)
        fail("reference %s: %zd bytes at %" PRIu64 ", expected %zu", fx.ref_path, n, off, len);
}

static void compare_with_ref(const char *what, const unsigned char *got, size_t n, uint64_t off)
{
    ref_bytes(off, n);
    compare_bytes(what, got, fx.gbuf, n, off);
}

static void update_size(void)
{
    struct stat st;

    if (fstat(fx.rfd, &st) < 0)
        fail_sys("fstat", fx.ref_path);
    fx.size = (uint64_t)st.st_size;
}

static void check_size(void)
{
    struct stat st;

    if (fstat(fx.fd, &st) < 0)
        fail_sys("fstat", fx.cur);
    if ((uint64_t)st.st_size != fx.size)
        fail("fstat size %lld, expected %" PRIu64, (long long)st.st_size, fx.size);
    if (stat(fx.cur, &st) < 0)
        fail_sys("stat", fx.cur);
    if ((uint64_t)st.st_size != fx.size)
        fail("stat size %lld, expected %" PRIu64, (long long)st.st_size, fx.size);
}

/* The file's mtime is not older than the start of the last change: after
 * every change with -t (as a local file system), else once the file has
 * been closed (close-to-open, as NFS). */
static void check_mtime(const char *when)
{
    struct stat st;

    if (stat(fx.cur, &st) < 0)
        fail_sys("stat", fx.cur);
    if (st.st_mtim.tv_sec < fx.changed.tv_sec ||
        (st.st_mtim.tv_sec == fx.changed.tv_sec && st.st_mtim.tv_nsec < fx.changed.tv_nsec))
        fail("mtime %lld.%09ld %s is older than the start of the last change, %lld.%09ld",
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, when, (long long)fx.changed.tv_sec,
             fx.changed.tv_nsec);
}

/* The whole file through fd against the reference; one byte more is asked
 * for, so bytes beyond the size show too. */
static void check_all(int fd, const char *how)
{
    ssize_t n = pread_full(fd, fx.tbuf, (size_t)fx.size + 1, 0);

    if (n < 0)
        fail("whole-file read (%s): %s", how, strerror(errno));
    if ((uint64_t)n != fx.size)
        fail("whole-file read (%s) gave %zd bytes, the size is %" PRIu64, how, n, fx.size);
    char what[64];
    snprintf(what, sizeof what, "whole-file read (%s)", how);
    compare_with_ref(what, fx.tbuf, (size_t)n, 0);
    fx.full_checks++;
}

/* Opens the descriptors on the file; create only at the start (a file that
 * vanished later is a failure, not something to make again). */
static void open_file(bool create, bool trunc)
{
    fx.fd = open(fx.cur, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0) | (trunc ? O_TRUNC : 0), 0644);
    if (fx.fd < 0)
        fail_sys(trunc ? "open(O_RDWR|O_TRUNC)" : "open(O_RDWR)", fx.cur);
    if (!fx.fixed) {
        fx.afd = open(fx.cur, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fx.afd < 0)
            fail_sys("open(O_WRONLY|O_APPEND)", fx.cur);
    }
    if (fx.direct_ok) {
        fx.dfd = open(fx.cur, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fx.dfd < 0) {
            /* Refused at the first open: reported, and the checks that
             * need it use the cached descriptor. */
            if (fx.opno > 0)
                fail_sys("open(O_RDONLY|O_DIRECT)", fx.cur);
            snprintf(fx.direct_why, sizeof fx.direct_why, "%s", strerror(errno));
            fx.direct_ok = false;
        }
    }
}

static void close_fd(int *fd, const char *what)
{
    if (*fd >= 0 && close(*fd) < 0)
        fail_sys("close", what);
    *fd = -1;
}

static void close_file(void)
{
    close_fd(&fx.fd, fx.cur);
    close_fd(&fx.afd, fx.cur);
    close_fd(&fx.dfd, fx.cur);
}

/* ---- operations ------------------------------------------------------------ */

/* The k-th multiple of -B, moved by -2..2 bytes: where extent
 * arithmetic goes wrong if it does. */
static uint64_t boundary_plus(uint64_t k)
{
    uint64_t b = k * fx.boundary, d = below(5);

    return b + d >= 2 ? b + d - 2 : b;
}

/* A third of the time (with -B), off moved next to a boundary below limit. */
static uint64_t near_boundary(uint64_t off, uint64_t limit)
{
    if (!fx.boundary || below(3) != 0)
        return off;
    uint64_t b = boundary_plus(off / fx.boundary + below(2));
    return b < limit ? b : off;
}

/* A length for an operation at off that must end by limit: often short,
 * with -B often ending next to a boundary. */
static uint64_t pick_len(uint64_t off, uint64_t limit)
{
    uint64_t room = limit > off ? limit - off : 0, cap = min_u64(fx.maxoplen, room);

    if (cap == 0)
        return 0;
    if (below(3) == 0)
        return 1 + below(min_u64(cap, 64));
    if (fx.boundary && below(3) == 0) {
        uint64_t end = boundary_plus(off / fx.boundary + 1 + below(2));
        if (end > off && end - off <= cap)
            return end - off;
    }
    return 1 + below(cap);
}

static void do_write(struct log_entry *e)
{
    uint64_t off, len;

    if (fx.fixed) {
        off = near_boundary(below(fx.size), fx.size);
        len = pick_len(off, fx.size);
    } else {
        /* Half within the file, half anywhere up to -l: writes past the
         * end leave holes. */
        off = below(2) ? below(fx.size + 1) : below(fx.maxlen);
        off = near_boundary(off, fx.maxlen);
        len = pick_len(off, fx.maxlen);
    }
    e->off = off;
    e->len = len;
    if (len == 0) {
        snprintf(e->note, sizeof e->note, "skipped: no room");
        fx.skipped[OP_WRITE]++;
        return;
    }
    if (off > fx.size)
        snprintf(e->note, sizeof e->note, "hole of %" PRIu64, off - fx.size);
    for (uint64_t i = 0; i < len; i++)
        fx.wbuf[i] = pattern(fx.opno, off + i);
    ssize_t n = pwrite(fx.fd, fx.wbuf, (size_t)len, (off_t)off);
    if (n < 0)
        fail_sys("pwrite", fx.cur);
    if ((uint64_t)n != len)
        fail("short pwrite: %zd of %" PRIu64 " bytes", n, len);
    if (pwrite(fx.rfd, fx.wbuf, (size_t)len, (off_t)off) != (ssize_t)len)
        fail_sys("pwrite", fx.ref_path);
    e->changed = true;
}

static void do_append(struct log_entry *e)
{
    uint64_t len = pick_len(fx.size, fx.maxlen);

    e->off = fx.size;
    e->len = len;
    if (len == 0) {
        snprintf(e->note, sizeof e->note, "skipped: at -l");
        fx.skipped[OP_APPEND]++;
        return;
    }
    for (uint64_t i = 0; i < len; i++)
        fx.wbuf[i] = pattern(fx.opno, fx.size + i);
    ssize_t n = write(fx.afd, fx.wbuf, (size_t)len);
    if (n < 0)
        fail_sys("write(O_APPEND)", fx.cur);
    if ((uint64_t)n != len)
        fail("short write(O_APPEND): %zd of %" PRIu64 " bytes", n, len);
    if (write(fx.rafd, fx.wbuf, (size_t)len) != (ssize_t)len)
        fail_sys("write(O_APPEND)", fx.ref_path);
    e->changed = true;
}

static void do_read(struct log_entry *e)
{
    /* Mostly inside the file; some reads cross or start past the end. */
    uint64_t span = fx.fixed ? fx.size : fx.maxlen;
    uint64_t off = below(4) ? below(fx.size + 1) : below(span + 1);
    off = near_boundary(off, span + 1);
    uint64_t len = pick_len(off, span + fx.maxoplen);
    bool direct = fx.direct_ok && below(4) == 0;
    int fd = direct ? fx.dfd : fx.fd;
    uint64_t want = off >= fx.size ? 0 : min_u64(len, fx.size - off);

    e->off = off;
    e->len = len;
    if (len == 0) {
        fx.skipped[OP_READ]++;
        return;
    }
    if (direct)
        snprintf(e->note, sizeof e->note, "O_DIRECT");
    ssize_t n = pread(fd, fx.tbuf, (size_t)len, (off_t)off);
    if (n < 0)
        fail_sys(direct ? "pread(O_DIRECT)" : "pread", fx.cur);
    if ((uint64_t)n != want)
        fail("pread of %" PRIu64 " at %" PRIu64 " gave %zd bytes, expected %" PRIu64
             " (size %" PRIu64 ")",
             len, off, n, want, fx.size);
    compare_with_ref(direct ? "pread (O_DIRECT)" : "pread", fx.tbuf, (size_t)n, off);
}

static void do_truncate(struct log_entry *e)
{
    /* Half down (within the file), half anywhere up to -l. */
    uint64_t to = below(2) ? below(fx.size + 1) : below(fx.maxlen + 1);
    bool by_name = below(3) == 0;

    to = near_boundary(to, fx.maxlen + 1);
    e->off = to;
    snprintf(e->note, sizeof e->note, "%s %s", by_name ? "truncate(path)" : "ftruncate",
             to < fx.size   ? "down"
             : to > fx.size ? "up"
                            : "same size");
    if ((by_name ? truncate(fx.cur, (off_t)to) : ftruncate(fx.fd, (off_t)to)) < 0)
        fail_sys(by_name ? "truncate" : "ftruncate", fx.cur);
    if (ftruncate(fx.rfd, (off_t)to) < 0)
        fail_sys("ftruncate", fx.ref_path);
    /* POSIX asks for a new mtime only when the size changes. */
    e->changed = to != fx.size;
}

static void do_fsync(struct log_entry *e)
{
    bool data = below(2);

    snprintf(e->note, sizeof e->note, "%s", data ? "fdatasync" : "fsync");
    if ((data ? fdatasync(fx.fd) : fsync(fx.fd)) < 0)
        fail_sys(data ? "fdatasync" : "fsync", fx.cur);
}

static void do_reopen(struct log_entry *e)
{
    /* O_TRUNC: on a file that may shrink it empties it; on a fixed-size
     * array data file it must be accepted and change nothing (SPEC 4). */
    bool trunc = fx.fixed ? below(4) == 0 : (!fx.no_trunc && below(16) == 0);

    close_file();
    if (trunc)
        snprintf(e->note, sizeof e->note, "O_TRUNC");
    open_file(false, trunc);
    if (trunc && !fx.fixed) {
        if (ftruncate(fx.rfd, 0) < 0)
            fail_sys("ftruncate", fx.ref_path);
        e->changed = fx.size > 0;
    }
}

/* mmap(MAP_SHARED) of [start, start+len) of the file.  NULL when the file
 * system refuses the first mmap (the op is then skipped, as are all later
 * ones, and the summary says so); a refusal after a success is a failure. */
static unsigned char *map_file(struct log_entry *e, int prot, uint64_t start, uint64_t len)
{
    unsigned char *p = mmap(NULL, (size_t)len, prot, MAP_SHARED, fx.fd, (off_t)start);

    if (p != MAP_FAILED) {
        fx.mapped++;
        return p;
    }
    if (fx.mapped > 0)
        fail_sys(prot & PROT_WRITE ? "mmap(PROT_WRITE)" : "mmap", fx.cur);
    snprintf(fx.mmap_why, sizeof fx.mmap_why, "%s", strerror(errno));
    snprintf(e->note, sizeof e->note, "mmap refused: %.32s", fx.mmap_why);
    fx.mmap_ok = false;
    fx.skipped[e->op]++;
    return NULL;
}

static void do_mapread(struct log_entry *e)
{
    uint64_t off = below(fx.size), len = pick_len(off, fx.size);

    e->off = off;
    e->len = len;
    if (len == 0 || !fx.mmap_ok) {
        snprintf(e->note, sizeof e->note, "skipped: %s", len ? "mmap refused" : "empty file");
        fx.skipped[OP_MAPREAD]++;
        return;
    }
    uint64_t pg = (uint64_t)fx.pagesize, start = off / pg * pg, maplen = off + len - start;
    unsigned char *p = map_file(e, PROT_READ, start, maplen);
    if (!p)
        return;
    memcpy(fx.tbuf, p + (off - start), (size_t)len);
    /* The rest of the page that holds the end of the file reads as zeros
     * (POSIX), whatever was cut off by a truncate before. */
    uint64_t tail = 0;
    if (off + len == fx.size && fx.size % pg) {
        uint64_t page_end = (fx.size + pg - 1) / pg * pg;
        for (uint64_t b = fx.size; b < page_end; b++)
            if (p[b - start] != 0) {
                tail = b + 1;
                break;
            }
    }
    if (munmap(p, (size_t)maplen) < 0)
        fail_sys("munmap", fx.cur);
    compare_with_ref("mmap read", fx.tbuf, (size_t)len, off);
    if (tail)
        fail("mmap: byte at offset %" PRIu64 " beyond the end of the file (size %" PRIu64
             ") is not zero",
             tail - 1, fx.size);
}

/* How many times name is listed in dir. */
static int count_in_dir(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    if (!d)
        fail_sys("opendir", dir);
    while ((de = readdir(d)))
        n += strcmp(de->d_name, name) == 0;
    closedir(d);
    return n;
}

/* stat (sizes are checked after every operation anyway), and the listing
 * of the directory: the current name once, the other name not at all. */
/* Stores through a shared writable mapping and msync: the kernel sends the
 * dirty pages to the daemon.  A mapping cannot grow a file, so a range past
 * the end is made room for with ftruncate first (as fsx does), or cut to
 * the size under -R. */
static void do_mapwrite(struct log_entry *e)
{
    uint64_t span = fx.no_trunc ? fx.size : fx.maxlen;
    uint64_t off = near_boundary(below(span), span), len = pick_len(off, span);

    e->off = off;
    e->len = len;
    if (len == 0 || !fx.mmap_ok) {
        snprintf(e->note, sizeof e->note, "skipped: %s", len ? "mmap refused" : "no room");
        fx.skipped[OP_MAPWRITE]++;
        return;
    }
    e->changed = true;
    if (off + len > fx.size) {
        snprintf(e->note, sizeof e->note, "ftruncate to %" PRIu64 " first", off + len);
        if (ftruncate(fx.fd, (off_t)(off + len)) < 0)
            fail_sys("ftruncate", fx.cur);
        if (ftruncate(fx.rfd, (off_t)(off + len)) < 0)
            fail_sys("ftruncate", fx.ref_path);
    }
    uint64_t pg = (uint64_t)fx.pagesize, start = off / pg * pg, maplen = off + len - start;
    unsigned char *p = map_file(e, PROT_READ | PROT_WRITE, start, maplen);
    if (!p)
        return;
    for (uint64_t i = 0; i < len; i++)
        fx.wbuf[i] = pattern(fx.opno, off + i);
    memcpy(p + (off - start), fx.wbuf, (size_t)len);
    if (msync(p, (size_t)maplen, MS_SYNC) < 0)
        fail_sys("msync", fx.cur);
    if (munmap(p, (size_t)maplen) < 0)
        fail_sys("munmap", fx.cur);
    if (pwrite(fx.rfd, fx.wbuf, (size_t)len, (off_t)off) != (ssize_t)len)
        fail_sys("pwrite", fx.ref_path);
}

static void do_stat(struct log_entry *e)
{
    struct stat st;
    const char *other = fx.cur == fx.path ? fx.alt : fx.path;
    char dir[PATH_MAX];
    const char *slash = strrchr(fx.cur, '/'), *base = slash ? slash + 1 : fx.cur;
    const char *obase = strrchr(other, '/') ? strrchr(other, '/') + 1 : other;

    (void)e;
    if (stat(fx.cur, &st) < 0)
        fail_sys("stat", fx.cur);
    if (!S_ISREG(st.st_mode))
        fail("%s: mode 0%o is not a regular file", fx.cur, (unsigned)st.st_mode);
    if (fx.renames && (stat(other, &st) == 0 || errno != ENOENT))
        fail("%s: the other name exists (%s)", other, strerror(errno));
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == fx.cur)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - fx.cur), fx.cur);
    int n = count_in_dir(dir, base);
    if (n != 1)
        fail("%s is listed %d times in %s", base, n, dir);
    if (fx.renames && (n = count_in_dir(dir, obase)) != 0)
        fail("%s (the other name) is listed %d times in %s", obase, n, dir);
}

static void do_rename(struct log_entry *e)
{
    const char *to = fx.cur == fx.path ? fx.alt : fx.path;
    struct stat st;

    snprintf(e->note, sizeof e->note, "to %s", to == fx.path ? "the name given" : "*.fsxmv");
    if (rename(fx.cur, to) < 0)
        fail_sys("rename", fx.cur);
    if (stat(fx.cur, &st) == 0 || errno != ENOENT)
        fail("%s still exists after the rename", fx.cur);
    fx.cur = to;
}

static void do_write_eof(struct log_entry *e)
{
    uint64_t off = fx.size + below(min_u64(fx.maxoplen, 4096)), len = 1 + below(64);

    e->off = off;
    e->len = len;
    for (uint64_t i = 0; i < len; i++)
        fx.wbuf[i] = pattern(fx.opno, off + i);
    ssize_t n = pwrite(fx.fd, fx.wbuf, (size_t)len, (off_t)off);
    if (n >= 0)
        fail("pwrite past the end of a fixed-size file wrote %zd bytes; expected EFBIG", n);
    if (errno != EFBIG)
        fail("pwrite past the end of a fixed-size file: %s; expected EFBIG", strerror(errno));
}

static void (*const op_fn[OP_COUNT])(struct log_entry *) = {
    [OP_WRITE] = do_write,       [OP_APPEND] = do_append,       [OP_READ] = do_read,
    [OP_TRUNCATE] = do_truncate, [OP_FSYNC] = do_fsync,         [OP_REOPEN] = do_reopen,
    [OP_MAPREAD] = do_mapread,   [OP_MAPWRITE] = do_mapwrite,   [OP_STAT] = do_stat,
    [OP_RENAME] = do_rename,     [OP_WRITE_EOF] = do_write_eof,
};

static enum op_kind pick_op(void)
{
    uint64_t r = below(fx.total_weight);

    for (int k = 0; k < OP_COUNT; k++) {
        if (r < fx.weights[k])
            return (enum op_kind)k;
        r -= fx.weights[k];
    }
    return OP_READ;
}

static void run_op(void)
{
    enum op_kind op = pick_op();
    struct log_entry *e;
    struct timespec t0;

    fx.nlog++;
    e = cur_entry();
    *e = (struct log_entry){.opno = fx.opno, .op = op, .before = fx.size};
    /* The kernel stamps files with its coarse clock: this one. */
    clock_gettime(CLOCK_REALTIME_COARSE, &t0);
    op_fn[op](e);
    update_size();
    e->after = fx.size;
    e->done = true;
    fx.done[op]++;
    if (fx.verbose)
        log_print(stdout, e);
    if (e->changed)
        fx.changed = t0;
    if (fx.mtime == 2 && e->changed)
        check_mtime("right after the change");
    if (fx.mtime && op == OP_REOPEN)
        check_mtime("after close and reopen");
    if (fx.fixed && e->after != e->before)
        fail("the size of a fixed-size file changed: %" PRIu64 " -> %" PRIu64, e->before, e->after);
    check_size();
    if (fx.size <= SMALL_FILE)
        check_all(fx.fd, "cached");
    if (fx.opno % fx.every == 0) {
        if (fx.direct_ok) {
            check_all(fx.dfd, "O_DIRECT");
            fx.direct_checks++;
        } else {
            check_all(fx.fd, "cached");
        }
    }
}

/* ---- setup ---------------------------------------------------------------- */

static _Noreturn void usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "fsx_drx: %s\n", msg);
    fprintf(stderr,
            "usage: fsx_drx [-N ops] [-S seed] [-l maxlen] [-o maxoplen] [-c every]\n"
            "               [-B boundary] [-P dir | -g reffile] [-W] [-R] [-D] [-F] [-m] [-t|-T] "
            "[-v] [-q] "
            "FILE\n"
            "  -N ops       operations to run (default 10000)\n"
            "  -S seed      random seed (default 1); the same seed, the same operations\n"
            "  -l maxlen    largest file size (default 262144)\n"
            "  -o maxoplen  largest read/write (default 65536)\n"
            "  -c every     whole-file compare through O_DIRECT every N operations "
            "(default 8)\n"
            "  -B boundary  aim offsets at multiples of this (a stripe extent)\n"
            "  -P dir       reference file DIR/BASENAME.fsxgood (default .)\n"
            "  -g reffile   reference file path (kept after the run)\n"
            "  -W           no mmap reads\n"
            "  -R           no truncate\n"
            "  -D           no O_DIRECT reads (FUSE takes any alignment; a local file\n"
            "               system wants aligned ones)\n"
            "  -F           fixed size: writes and reads inside the file only (implies -R;\n"
            "               for array data files); checks EFBIG past the end\n"
            "  -m           rename the file to FILE.fsxmv and back now and then\n"
            "  -t           mtime checked after every change (default: after each close)\n"
            "  -T           mtime not checked\n"
            "  -v           print every operation\n"
            "  -q           print nothing on success\n");
    exit(2);
}

static uint64_t parse_num(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;

    if (*end == 'k' || *end == 'K')
        mul = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1024 * 1024, end++;
    if (errno || end == s || *end || s[0] == '-' || v > UINT64_MAX / mul) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s %s: not a number", opt, s);
        usage(msg);
    }
    return (uint64_t)v * mul;
}

static void parse_args(int argc, char **argv)
{
    int c;

    while ((c = getopt(argc, argv, "N:S:l:o:c:B:P:g:WRDFmtTvqh")) != -1) {
        switch (c) {
        case 'N':
            fx.nops = (unsigned long)parse_num(optarg, "-N");
            break;
        case 'S':
            fx.seed = parse_num(optarg, "-S");
            break;
        case 'l':
            fx.maxlen = parse_num(optarg, "-l");
            break;
        case 'o':
            fx.maxoplen = parse_num(optarg, "-o");
            break;
        case 'c':
            fx.every = (unsigned long)parse_num(optarg, "-c");
            break;
        case 'B':
            fx.boundary = parse_num(optarg, "-B");
            break;
        case 'P':
            fx.ref_dir = optarg;
            break;
        case 'g':
            fx.ref_name = optarg;
            break;
        case 'W':
            fx.no_mmap = true;
            break;
        case 'R':
            fx.no_trunc = true;
            break;
        case 'D':
            fx.no_direct = true;
            break;
        case 'F':
            fx.fixed = fx.no_trunc = true;
            break;
        case 'm':
            fx.renames = true;
            break;
        case 't':
            fx.mtime = 2;
            break;
        case 'T':
            fx.mtime = 0;
            break;
        case 'v':
            fx.verbose = true;
            break;
        case 'q':
            fx.quiet = true;
            break;
        case 'h':
            usage(NULL);
        default:
            usage("unknown option");
        }
    }
    if (optind + 1 != argc)
        usage("one FILE expected");
    fx.path = argv[optind];
    if (fx.every == 0 || fx.maxlen == 0 || fx.maxoplen == 0)
        usage("-c, -l and -o must be at least 1");
    if (fx.maxlen > (1u << 30))
        usage("-l: at most 1 GiB (the whole file is held in memory)");
    if (fx.fixed && fx.renames)
        usage("-m with -F: an array's data file cannot be renamed");
}

static void setup(void)
{
    struct stat st;

    fx.rng = fx.seed;
    fx.cur = fx.path;
    if ((size_t)snprintf(fx.alt, sizeof fx.alt, "%s.fsxmv", fx.path) >= sizeof fx.alt)
        usage("FILE: name too long");
    if (fx.ref_name)
        snprintf(fx.ref_path, sizeof fx.ref_path, "%s", fx.ref_name);
    else {
        const char *base = strrchr(fx.path, '/');
        base = base ? base + 1 : fx.path;
        if ((size_t)snprintf(fx.ref_path, sizeof fx.ref_path, "%s/%s.fsxgood", fx.ref_dir, base) >=
            sizeof fx.ref_path)
            usage("-P: name too long");
    }
    fx.pagesize = sysconf(_SC_PAGESIZE);
    fx.mmap_ok = !fx.no_mmap;
    fx.direct_ok = !fx.no_direct;
    snprintf(fx.direct_why, sizeof fx.direct_why, "off (-D)");
    snprintf(fx.mmap_why, sizeof fx.mmap_why, "%s", fx.no_mmap ? "off (-W)" : "");

    open_file(true, false);
    if (fstat(fx.fd, &st) < 0)
        fail_sys("fstat", fx.path);
    if (!S_ISREG(st.st_mode))
        fail("%s is not a regular file", fx.path);
    fx.size = (uint64_t)st.st_size;
    if (fx.fixed) {
        if (fx.size == 0)
            fail("-F: %s is empty (a fixed-size file needs a size)", fx.path);
        fx.maxlen = fx.size;
    } else if (fx.size > fx.maxlen) {
        fail("%s holds %" PRIu64 " bytes, more than -l %" PRIu64, fx.path, fx.size, fx.maxlen);
    }
    if (fx.maxoplen > fx.maxlen)
        fx.maxoplen = fx.maxlen;

    /* Room for a whole file plus a read past its end. */
    fx.bufsize = (size_t)(fx.maxlen + fx.maxoplen + (uint64_t)fx.pagesize);
    if (posix_memalign((void **)&fx.tbuf, (size_t)fx.pagesize, fx.bufsize) ||
        !(fx.gbuf = malloc(fx.bufsize)) || !(fx.wbuf = malloc(fx.bufsize)))
        fail("out of memory");

    /* The reference starts as the file is now. */
    fx.rfd = open(fx.ref_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fx.rfd < 0)
        fail_sys("open", fx.ref_path);
    fx.rafd = open(fx.ref_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fx.rafd < 0)
        fail_sys("open", fx.ref_path);
    ssize_t n = pread_full(fx.fd, fx.tbuf, (size_t)fx.size + 1, 0);
    if (n < 0)
        fail_sys("pread", fx.path);
    if ((uint64_t)n != fx.size)
        fail("%s: read %zd bytes, its size is %" PRIu64, fx.path, n, fx.size);
    if (pwrite(fx.rfd, fx.tbuf, (size_t)n, 0) != n)
        fail_sys("pwrite", fx.ref_path);

    for (int k = 0; k < OP_COUNT; k++)
        fx.weights[k] = fx.fixed ? op_table[k].fixed : op_table[k].grow;
    if (fx.no_trunc)
        fx.weights[OP_TRUNCATE] = 0;
    if (fx.no_mmap)
        fx.weights[OP_MAPREAD] = fx.weights[OP_MAPWRITE] = 0;
    if (!fx.renames)
        fx.weights[OP_RENAME] = 0;
    for (int k = 0; k < OP_COUNT; k++)
        fx.total_weight += fx.weights[k];
}

/* After the last operation: back to the name given, every descriptor
 * closed, and the file read afresh, through the cache and around it. */
static void finish(void)
{
    if (fx.cur != fx.path) {
        if (rename(fx.cur, fx.path) < 0)
            fail_sys("rename back", fx.cur);
        fx.cur = fx.path;
    }
    close_file();
    fx.fd = open(fx.path, O_RDONLY | O_CLOEXEC);
    if (fx.fd < 0)
        fail_sys("open(O_RDONLY)", fx.path);
    check_size();
    if (fx.mtime)
        check_mtime("after the last close");
    check_all(fx.fd, "final, fresh open");
    if (fx.direct_ok) {
        fx.dfd = open(fx.path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fx.dfd < 0)
            fail_sys("open(O_RDONLY|O_DIRECT)", fx.path);
        check_all(fx.dfd, "final, O_DIRECT");
    }
    close_file();
    if (fsync(fx.rfd) < 0)
        fail_sys("fsync", fx.ref_path);
    close_fd(&fx.rfd, fx.ref_path);
    close_fd(&fx.rafd, fx.ref_path);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    setup();
    fx.phase = NULL;
    for (fx.opno = 1; fx.opno <= fx.nops; fx.opno++)
        run_op();
    fx.opno = fx.nops;
    fx.phase = "final check";
    finish();
    if (!fx.quiet) {
        printf("fsx_drx: %s: %lu operations, seed %" PRIu64 ": all matched; final size %" PRIu64
               "\n  done:",
               fx.path, fx.nops, fx.seed, fx.size);
        for (int k = 0; k < OP_COUNT; k++) {
            if (!fx.weights[k])
                continue;
            printf(" %s %lu", op_table[k].name, fx.done[k] - fx.skipped[k]);
            if (fx.skipped[k])
                printf(" (+%lu skipped)", fx.skipped[k]);
        }
        printf("\n  whole-file compares %lu (%lu through O_DIRECT)\n", fx.full_checks,
               fx.direct_checks);
        if (fx.no_mmap)
            printf("  mmap: off (-W)\n");
        else if (fx.mmap_ok)
            printf("  mmap: used\n");
        else
            printf("  mmap: REFUSED by the file system (%s); mmap reads skipped\n", fx.mmap_why);
        if (!fx.direct_ok)
            printf("  O_DIRECT: %s (cached reads only)\n", fx.direct_why);
        printf("  reference: %s\n", fx.ref_path);
    }
    free(fx.tbuf);
    free(fx.gbuf);
    free(fx.wbuf);
    return 0;
}
