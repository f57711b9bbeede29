/* The .xmd's growth records (README, "The .xmd file"): the line an
 * extension appends, and the reading of the file with them, in full or
 * from where a reader stopped; the libconfig part is array_meta.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_i.h"
#include "cfgfile_i.h"
#include "drx/io.h"

/* "#+ grow dim=D from=N to=N chunk_count=N": the text of one growth,
 * newline included, in buf; its length (< len), or -ENAMETOOLONG. */
int drx_xmd_grow_line(char *buf, size_t len, int dim, uint64_t from, uint64_t to, uint64_t nchunks)
{
    int n = snprintf(buf, len,
                     "%sdim=%d from=%" PRIu64 " to=%" PRIu64 " chunk_count=%" PRIu64 "\n",
                     DRX_XMD_GROW, dim, from, to, nchunks);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* p past the literal word, or NULL. */
static const char *lit(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return p && (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* p past a decimal number (digits only, at most 19: below 2^63), or NULL. */
static const char *dec(const char *p, const char *end, uint64_t *v)
{
    const char *start = p;

    *v = 0;
    if (!p)
        return NULL;
    while (p < end && *p >= '0' && *p <= '9' && p - start < 19)
        *v = *v * 10 + (uint64_t)(*p++ - '0');
    return p == start || (p < end && *p >= '0' && *p <= '9') ? NULL : p;
}

int drx_xmd_grown_chunks(const struct drx_array_meta *m, int dim, uint64_t to, uint64_t *n)
{
    uint64_t ne = 1, nb = (to - 1) / m->chunk[dim] + 1, others = 1, added;

    for (int i = 0; i < m->rank; i++)
        if (__builtin_mul_overflow(ne, i == dim ? to : m->bounds[i], &ne) ||
            ne > DRX_ARRAY_MAX_ELEMS)
            return -EFBIG;
    *n = m->map.nchunks;
    if (nb <= m->map.bound[dim])
        return 0;
    for (int j = 0; j < m->rank; j++)
        if (j != dim && __builtin_mul_overflow(others, m->map.bound[j], &others))
            return -EFBIG;
    if (__builtin_mul_overflow(others, nb - m->map.bound[dim], &added) ||
        __builtin_add_overflow(*n, added, n) || !drx_xmd_chunks_fit(m, *n))
        return -EOVERFLOW;
    return 0;
}

bool drx_xmd_chunks_fit(const struct drx_array_meta *m, uint64_t n)
{
    return n <= DRX_ARRAY_MAX_XTA_BYTES / m->chunk_bytes;
}

const char *drx_xmd_too_big(int rc)
{
    return rc == -EFBIG ? "the array would have more than 2^59 elements"
                        : "the array's chunks would pass 2^62 bytes (4 EiB) of .xta";
}

/* A checked growth of dimension dim to `to` elements, count chunks after
 * it, applied to the bounds and the map's counts only (no axial vectors,
 * which drx_xmd_read dropped): what drx_map_grow does to them. */
static void grow_counts(struct drx_array_meta *m, int dim, uint64_t to, uint64_t count)
{
    uint64_t nb = (to - 1) / m->chunk[dim] + 1;

    if (nb > m->map.bound[dim]) {
        m->map.bound[dim] = nb;
        m->map.last_dim = dim;
    }
    m->map.nchunks = count;
    m->bounds[dim] = to;
}

int drx_xmd_put_records(FILE *f, struct drx_array_meta *b, const struct drx_array_meta *m)
{
    char line[192];
    uint64_t n;

    for (size_t i = 0; i < m->nhistory; i++) {
        const struct drx_growth *h = &m->history[i];
        if (h->dim < 0 || h->dim >= b->rank || h->from != b->bounds[h->dim] || h->to <= h->from ||
            drx_xmd_grown_chunks(b, h->dim, h->to, &n) < 0 ||
            drx_xmd_grow_line(line, sizeof line, h->dim, h->from, h->to, n) < 0)
            return -EINVAL;
        fputs(line, f);
        grow_counts(b, h->dim, h->to, n);
    }
    /* a DRX_METAONLY handle's metadata has no history to write */
    if (memcmp(b->bounds, m->bounds, sizeof b->bounds) || b->map.nchunks != m->map.nchunks)
        return -EINVAL;
    return 0;
}

/* One growth record, the line [p, end) without its newline, checked
 * against m and applied to it (to its counts only with `counts`): nothing
 * changes when it does not fit. */
static int grow_record(const char *file, unsigned line, const char *p, const char *end,
                       bool counts, struct drx_array_meta *m, struct drx_err *err)
{
    uint64_t d, from, to, count, want;
    const char *q = lit(p, end, DRX_XMD_GROW);
    struct drx_err sub;
    int rc;

    q = dec(lit(q, end, "dim="), end, &d);
    q = dec(lit(q, end, " from="), end, &from);
    q = dec(lit(q, end, " to="), end, &to);
    q = dec(lit(q, end, " chunk_count="), end, &count);
    if (q != end)
        return drx_err_set(err, EINVAL,
                           "%s:%u: not a growth record (#+ grow dim=D from=N to=N chunk_count=N)",
                           file, line);
    if (d >= (uint64_t)m->rank)
        return drx_err_set(err, EINVAL, "%s:%u: growth of dimension %" PRIu64 " (rank %d)", file,
                           line, d, m->rank);
    if (from != m->bounds[d] || to <= from)
        return drx_err_set(err, EINVAL,
                           "%s:%u: growth %" PRIu64 "->%" PRIu64 " does not follow extent %" PRIu64,
                           file, line, from, to, m->bounds[d]);
    if ((rc = drx_xmd_grown_chunks(m, (int)d, to, &want)))
        return drx_err_set(err, EINVAL, "%s:%u: %s", file, line, drx_xmd_too_big(rc));
    if (count != want)
        return drx_err_set(err, EINVAL,
                           "%s:%u: chunk_count %" PRIu64 " does not match the growth (%" PRIu64
                           ")",
                           file, line, count, want);
    if (counts) {
        grow_counts(m, (int)d, to, count);
        return 0;
    }
    if (drx_xmd_grow(m, (int)d, to, &sub))
        return drx_err_set(err, EINVAL, "%s:%u: %s", file, line, sub.msg);
    if (drx_xmd_history_add(m, (int)d, from, to))
        return drx_err_set(err, ENOMEM, "out of memory");
    return 0;
}

/* Takes the whole growth records of text[0..len), which starts at offset
 * pos->end of the file, line pos->line + 1: each is applied to m and
 * advances pos.  What follows the last newline is a record an extension
 * was writing when it stopped (pos->torn): left alone.  The count of
 * records taken, or -errno (pos at the bad one). */
static int take_records(const char *file, const char *text, size_t len, struct drx_xmd_pos *pos,
                        struct drx_array_meta *m, struct drx_err *err)
{
    size_t i = 0;
    int taken = 0, rc;

    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl)
            break;
        if (pos->version < 2)
            return drx_err_set(err, EINVAL, "%s:%u: growth records need version 2", file,
                               pos->line + 1);
        if ((rc = grow_record(file, pos->line + 1, text + i, nl, pos->counts, m, err)))
            return rc;
        pos->end += (uint64_t)(nl - (text + i)) + 1;
        i = (size_t)(nl - text) + 1;
        pos->line++;
        taken++;
    }
    pos->torn = len - i;
    return taken;
}

/* Length of the libconfig part of text: up to the first line that is a
 * growth record, or, without one, up to a last line without newline that
 * starts with '#' (the first record, cut short), else all of it.  With
 * more to come (not the whole file), only a growth record ends it: *found
 * says whether one did. */
static size_t base_length(const char *text, size_t len, bool *found)
{
    const char *last;

    *found = true;
    if (len >= 2 && memcmp(text, "#+", 2) == 0)
        return 0;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++)
        if ((size_t)(text + len - p) > 2 && p[1] == '#' && p[2] == '+')
            return (size_t)(p - text) + 1;
    *found = false;
    if (len == 0 || text[len - 1] == '\n')
        return len;
    last = memrchr(text, '\n', len);
    last = last ? last + 1 : text;
    return *last == '#' ? (size_t)(last - text) : len;
}

static unsigned count_lines(const char *text, size_t len)
{
    unsigned n = 0;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++)
        n++;
    return n;
}

/* Frees m's axial vectors and history, keeping the map's chunk counts:
 * the metadata of a DRX_METAONLY handle. */
static void drop_vectors(struct drx_array_meta *m)
{
    for (int i = 0; i < DRX_MAX_RANK; i++) {
        struct drx_axial_vec *v = &m->map.vec[i];
        free(v->rec);
        free(v->start);
        free(v->addr);
        memset(v, 0, sizeof *v);
    }
    free(m->history);
    m->history = NULL;
    m->nhistory = 0;
}

/* The shortest growth record: the most records `bytes` can hold. */
#define XMD_MIN_RECORD (sizeof "#+ grow dim=0 from=0 to=0 chunk_count=0\n" - 1)

/* Room for the records in the `bytes` after the base, so that the replay
 * never copies (memory not used is never touched); none when they change
 * counts only. */
static int reserve_records(struct drx_array_meta *m, const struct drx_xmd_pos *pos,
                           uint64_t bytes, struct drx_err *err)
{
    if (pos->counts) {
        drop_vectors(m);
        return 0;
    }
    if (drx_map_reserve(&m->map, (size_t)(bytes / XMD_MIN_RECORD)) < 0)
        return drx_err_set(err, ENOMEM, "out of memory");
    return 0;
}

/* An .xmd read block by block: the base whole (libconfig needs it in one
 * piece), the records through a buffer of XMD_BLOCK bytes (more only for
 * a line longer than that), so that a long history costs its parse and
 * not memory of its size. */
#define XMD_BLOCK ((size_t)64 << 10)

struct xmd_stream {
    int fd;
    uint64_t off;  /* where the next read starts (pread: a descriptor held
                    * by a handle keeps its offset) */
    uint64_t left; /* bytes still to read of the size the open saw */
    char *buf;     /* buf[0..len), with room for a NUL after */
    size_t len, cap;
};

/* Reads on after buf[0..len), first making room when it is full.  The
 * bytes read (0: the file's end, or the size the open saw), or -errno. */
static ssize_t stream_fill(struct xmd_stream *s)
{
    size_t want;
    ssize_t n;

    if (s->left == 0)
        return 0;
    if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : XMD_BLOCK;
        char *b = realloc(s->buf, cap + 1);
        if (!b)
            return -ENOMEM;
        s->buf = b;
        s->cap = cap;
    }
    want = s->cap - s->len < s->left ? s->cap - s->len : (size_t)s->left;
    do
        n = pread(s->fd, s->buf + s->len, want, (off_t)s->off);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (n == 0)
        s->left = 0; /* shorter than the open saw: cut meanwhile */
    s->off += (uint64_t)n;
    s->len += (size_t)n;
    s->left -= (uint64_t)n;
    return n;
}

/* Reads until buf holds the whole libconfig part; its length. */
static ssize_t stream_base(struct xmd_stream *s)
{
    bool found = false;
    size_t base = 0;
    ssize_t n;

    do {
        if ((n = stream_fill(s)) < 0)
            return n;
        base = base_length(s->buf, s->len, &found);
    } while (!found && n > 0);
    return (ssize_t)base;
}

/* Takes the records from buf[off..len) on, reading block by block: what
 * a block ends with that is not a whole line moves to the buffer's start
 * and is completed by the next read.  The count taken, or -errno. */
static int stream_records(struct xmd_stream *s, size_t off, const char *file,
                          struct drx_xmd_pos *pos, struct drx_array_meta *m, struct drx_err *err)
{
    int taken = 0, rc;
    ssize_t n;

    for (;;) {
        rc = take_records(file, s->buf + off, s->len - off, pos, m, err);
        if (rc < 0)
            return rc;
        taken += rc;
        memmove(s->buf, s->buf + s->len - pos->torn, pos->torn);
        s->len = pos->torn;
        off = 0;
        if ((n = stream_fill(s)) <= 0)
            return n < 0 ? drx_err_set(err, (int)-n, "%s: %s", file, strerror((int)-n)) : taken;
    }
}

/* The base parsed and the records taken from the open file s. */
static int read_stream(struct xmd_stream *s, const char *file, struct drx_array_meta *m,
                       struct drx_xmd_pos *pos, struct drx_err *err)
{
    ssize_t base = stream_base(s);
    bool at_line;
    int rc;

    if (base < 0)
        return drx_err_set(err, (int)-base, "%s: %s", file, strerror((int)-base));
    rc = drx_xmd_parse_base(file, s->buf, (size_t)base, m, &pos->version, err);
    if (rc < 0)
        return rc;
    pos->end = (uint64_t)base;
    pos->line = count_lines(s->buf, (size_t)base);
    at_line = base == 0 || s->buf[base - 1] == '\n';
    rc = reserve_records(m, pos, s->len - (size_t)base + s->left, err);
    if (rc == 0)
        rc = stream_records(s, (size_t)base, file, pos, m, err);
    pos->appendable = pos->version >= 2 && (at_line || rc > 0);
    return rc < 0 ? rc : 0;
}

/* The .xmd open as fd (pos->st its fstat) read in full from its start. */
static int read_open(int fd, const char *file, struct drx_array_meta *m, struct drx_xmd_pos *pos,
                     struct drx_err *err)
{
    struct xmd_stream s = {.fd = fd};
    int rc;

    /* exactly the bytes the fstat saw: what is appended meanwhile is for
     * the next read */
    s.left = (uint64_t)pos->st.st_size;
    s.cap = s.left < XMD_BLOCK ? (size_t)s.left : XMD_BLOCK;
    s.buf = malloc(s.cap + 1);
    rc = s.buf ? read_stream(&s, file, m, pos, err) : drx_err_set(err, ENOMEM, "out of memory");
    free(s.buf);
    if (rc < 0)
        drx_array_meta_fini(m);
    return rc;
}

int drx_xmd_read(const char *xmd_path, struct drx_array_meta *m, struct drx_xmd_pos *pos, int *fdp,
                 bool counts, struct drx_err *err)
{
    int fd, rc;

    memset(m, 0, sizeof *m);
    memset(pos, 0, sizeof *pos);
    pos->counts = counts;
    /* Never a symlink, a FIFO or an @include: the daemon reads .xmd files
     * users can write, as root. */
    fd = drx_cfgfile_open(AT_FDCWD, xmd_path, xmd_path, 0, DRX_XMD_MAX_BYTES, &pos->st, NULL, err);
    if (fd < 0)
        return fd;
    rc = read_open(fd, xmd_path, m, pos, err);
    if (rc < 0 || !fdp)
        close(fd);
    else
        *fdp = fd;
    return rc;
}

int drx_xmd_read_fd(int fd, const char *xmd_path, struct drx_array_meta *m, struct drx_err *err)
{
    struct drx_xmd_pos pos = {0};

    memset(m, 0, sizeof *m);
    if (fstat(fd, &pos.st) < 0)
        return drx_err_set(err, errno, "%s: %s", xmd_path, strerror(errno));
    /* the bound drx_cfgfile_open puts on a read by name */
    if ((uint64_t)pos.st.st_size > DRX_XMD_MAX_BYTES)
        return drx_err_set(err, EFBIG, "%s: more than %zu bytes (refused)", xmd_path,
                           DRX_XMD_MAX_BYTES);
    return read_open(fd, xmd_path, m, &pos, err);
}

int drx_xmd_catch_up(int fd, const char *xmd_path, uint64_t size, struct drx_array_meta *m,
                     struct drx_xmd_pos *pos, struct drx_err *err)
{
    size_t n;
    char *buf;
    int rc;

    if (size < pos->end || !pos->appendable)
        return -ESTALE; /* not appended to: read it all again */
    if (size > DRX_XMD_MAX_BYTES)
        return drx_err_set(err, EFBIG, "%s: more than %zu bytes (refused)", xmd_path,
                           DRX_XMD_MAX_BYTES);
    n = (size_t)(size - pos->end);
    if (n == 0)
        return 0;
    /* Read even when n is the length of a record cut short seen before: an
     * extension may have cut it and appended one of the same length. */
    if (!(buf = malloc(n)))
        return drx_err_set(err, ENOMEM, "out of memory");
    rc = drx_io_pread_all(fd, buf, n, pos->end);
    if (rc < 0)
        rc = rc == -EIO ? -ESTALE : drx_err_set(err, -rc, "%s: %s", xmd_path, strerror(-rc));
    else
        rc = take_records(xmd_path, buf, n, pos, m, err);
    free(buf);
    return rc;
}

int drx_array_meta_load(const char *xmd_path, struct drx_array_meta *m, struct drx_err *err)
{
    struct drx_xmd_pos pos;

    return drx_xmd_read(xmd_path, m, &pos, NULL, false, err);
}
