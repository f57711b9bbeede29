/* Reading libconfig files without letting them reach other files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cfgfile_i.h"
#include "drx/io.h"

/* The 1-based line of the first line that libconfig could take for an
 * include directive, or 0.
 *
 * libconfig 1.5's scanner follows `^[ \t]*@include[ \t]+"` outside strings
 * and comments, case-sensitively, where `^` is the start of the text or
 * just after '\n' (measured with strace: a CR alone, other blanks, another
 * case, no blank before the quote and text before it on the line open
 * nothing).  The check is wider on purpose, so that no quirk of the scanner
 * slips through: any line whose first non-blank is "@include" in any case,
 * with '\r' also starting a line and '\v' '\f' '\r' also blanks, inside a
 * comment or a multi-line string too.  "@include" later in a line (in a
 * comment or a string value) is text and passes. */
static int include_line(const char *text, size_t len)
{
    static const char word[] = "@include";
    const size_t wl = sizeof word - 1;
    int line = 1;

    for (size_t i = 0; i < len;) {
        size_t p = i;
        while (p < len && (text[p] == ' ' || text[p] == '\t' || text[p] == '\v' ||
                           text[p] == '\f' || text[p] == '\r'))
            p++;
        if (len - p >= wl && strncasecmp(text + p, word, wl) == 0)
            return line;
        /* on to the next line start: after '\n' or '\r' */
        while (i < len && text[i] != '\n' && text[i] != '\r')
            i++;
        if (i < len && text[i] == '\n')
            line++;
        i++;
    }
    return 0;
}

/* libconfig 1.5 leaks a string token that its grammar cannot take ('"x"'
 * where a setting name belongs, 'a = 1 "x"': its parser has no destructor
 * for the lookahead), and drxfs parses files users can write again and
 * again.  So such a string is refused before libconfig sees the text.  A
 * string can follow only '=' or ':', '[' or '(', ',' inside '[...]' or
 * '(...)', or another string (they concatenate); nothing else changes the
 * verdict, as libconfig stops at the first token it cannot take, and a
 * string after such a token is never read.  Comments and strings are
 * skipped as its scanner does: '#' and '//' to the end of the line, slash-star
 * to star-slash, a backslash and the character after it inside a string.
 * Nesting deeper than CFG_MAX_DEPTH is refused too (no file of ours comes
 * near; libconfig's own parser stack would run out at a few thousand). */
#define CFG_MAX_DEPTH 64

struct tokens {
    const char *t;
    size_t len, i;
    unsigned line;
    char prev;                /* the last token: its character, '"' or 'w' (other) */
    char open[CFG_MAX_DEPTH]; /* the brackets open, innermost last */
    int depth;
};

/* The index of the '\n' ending the line at i, or the end. */
static size_t line_end(struct tokens *k, size_t i)
{
    const char *nl = memchr(k->t + i, '\n', k->len - i);

    return nl ? (size_t)(nl - k->t) : k->len;
}

/* Skips a comment at k->i; false when none starts there. */
static bool skip_comment(struct tokens *k)
{
    const char *p = k->t + k->i;
    size_t left = k->len - k->i;

    if (*p == '#' || (left >= 2 && p[0] == '/' && p[1] == '/')) {
        k->i = line_end(k, k->i);
        return true;
    }
    if (!(left >= 2 && p[0] == '/' && p[1] == '*'))
        return false;
    for (k->i += 2; k->i < k->len; k->i++) {
        if (k->t[k->i] == '\n')
            k->line++;
        if (k->t[k->i] == '*' && k->i + 1 < k->len && k->t[k->i + 1] == '/') {
            k->i += 2;
            return true;
        }
    }
    return true;
}

/* Skips the string opening at k->i (a '"'); false when the text ends
 * first (libconfig then ends there, taking no token and leaking nothing). */
static bool skip_string(struct tokens *k)
{
    for (k->i++; k->i < k->len && k->t[k->i] != '"'; k->i++) {
        if (k->t[k->i] == '\\' && k->i + 1 < k->len)
            k->i++;
        if (k->t[k->i] == '\n')
            k->line++;
    }
    if (k->i == k->len)
        return false;
    k->i++;
    return true;
}

static bool string_fits(const struct tokens *k)
{
    char in = k->depth ? k->open[k->depth - 1] : '{';

    return (k->prev && strchr("=:[(\"", k->prev)) || (k->prev == ',' && (in == '[' || in == '('));
}

/* One token at k->i (not a blank or a comment): NULL, or why it is
 * refused. */
static const char *token(struct tokens *k)
{
    char c = k->t[k->i];

    if (c == '"') {
        unsigned line = k->line;
        bool fits = string_fits(k);
        if (skip_string(k) && !fits) {
            k->line = line;
            return "syntax error (a string cannot stand here)";
        }
    } else {
        if (c == '[' || c == '(' || c == '{') {
            if (k->depth == CFG_MAX_DEPTH)
                return "settings nested more than 64 deep";
            k->open[k->depth++] = c;
        } else if ((c == ']' || c == ')' || c == '}') && k->depth > 0) {
            k->depth--;
        }
        k->i++;
    }
    k->prev = c && strchr("=:[({,;)]}\"", c) ? c : 'w';
    return NULL;
}

/* The 1-based line of a string libconfig would leak or of nesting too
 * deep, with the reason in *why; 0 when there is none. */
static unsigned stray_token(const char *text, size_t len, const char **why)
{
    struct tokens k = {.t = text, .len = len, .line = 1, .prev = ';'};

    while (k.i < k.len) {
        char c = text[k.i];
        if (c == '\n')
            k.line++;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')
            k.i++;
        else if (!skip_comment(&k) && (*why = token(&k)))
            return k.line;
    }
    return 0;
}

/* Opens and checks the file: a descriptor of a regular file with *st, or
 * -errno with a message (*refused set when the file is at fault). */
static int open_checked(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                        struct stat *st, bool *refused, struct drx_err *err)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer.  O_NOFOLLOW:
     * a store file that is a symlink could name any file. */
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    int fd;

    if (!(flags & DRX_CFGFILE_USER))
        oflags |= O_NOFOLLOW;
    fd = (flags & DRX_CFGFILE_META) ? openat(dirfd, name, oflags | O_NOATIME) : -1;
    if (fd < 0) /* O_NOATIME is the owner's (or CAP_FOWNER's) */
        fd = openat(dirfd, name, oflags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP && !(flags & DRX_CFGFILE_USER)) {
            *refused = true;
            return drx_err_set(err, ELOOP, "%s is a symbolic link (refused)", shown);
        }
        return drx_err_set(err, e, "%s: %s", shown, strerror(e));
    }
    if (fstat(fd, st) < 0) {
        int e = errno;
        close(fd);
        return drx_err_set(err, e, "%s: %s", shown, strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        *refused = true;
        if (S_ISDIR(st->st_mode))
            return drx_err_set(err, EISDIR, "%s: Is a directory", shown);
        return drx_err_set(err, EIO, "%s is not a regular file (refused)", shown);
    }
    if ((unsigned long long)st->st_size > max) {
        close(fd);
        *refused = true;
        return drx_err_set(err, EFBIG, "%s: %lld bytes, more than the %zu a %s may have", shown,
                           (long long)st->st_size, max,
                           (flags & DRX_CFGFILE_USER) ? "configuration file" : "store file");
    }
    return fd;
}

int drx_cfgfile_open(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                     struct stat *st, bool *refused, struct drx_err *err)
{
    bool ignored;

    return open_checked(dirfd, name, shown, flags, max, st, refused ? refused : &ignored, err);
}

bool drx_cfgfile_lock(int fd, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_len = DRX_CFGFILE_LOCK_SPAN};
    const struct timespec ms = {0, 1000000};

    for (int i = 0; i < 100; i++) {
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
            return true;
        if (errno != EAGAIN && errno != EACCES && errno != EINTR)
            return false;
        nanosleep(&ms, NULL);
    }
    return false;
}

int drx_cfgfile_slurp(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                      struct drx_cfgfile *out, int *fdp, bool *refused, struct drx_err *err)
{
    bool ignored;
    size_t size;
    ssize_t n;
    int fd, rc = 0;

    memset(out, 0, sizeof *out);
    if (!refused)
        refused = &ignored;
    *refused = false;
    fd = open_checked(dirfd, name, shown, flags, max, &out->st, refused, err);
    if (fd < 0)
        return fd;
    /* Sized by the fstat, not by max: an .xmd may be 64 MiB, most are a
     * few hundred bytes. */
    size = (size_t)out->st.st_size;
    out->text = malloc(size + 2);
    if (!out->text) {
        rc = drx_err_set(err, ENOMEM, "%s: out of memory", shown);
        goto out;
    }
    /* One byte more than the fstat said: a file that grew meanwhile (only
     * a hostile writer appends to a file that is replaced by rename) is
     * caught here.  The read never blocks: a regular file. */
    bool locked = (flags & DRX_CFGFILE_META) && drx_cfgfile_lock(fd, F_RDLCK);
    n = drx_io_read_full(fd, out->text, size + 1);
    if (locked)
        drx_cfgfile_lock(fd, F_UNLCK);
    if (n < 0) {
        rc = drx_err_set(err, (int)-n, "%s: %s", shown, strerror((int)-n));
        goto out;
    }
    if ((size_t)n > size && (flags & DRX_CFGFILE_APPENDS))
        n = (ssize_t)size;
    if ((size_t)n > size) {
        *refused = true;
        rc = drx_err_set(err, EIO, "%s: grew while it was read (refused)", shown);
        goto out;
    }
    out->len = (size_t)n;
    out->text[n] = '\0';
out:
    if (rc < 0 || !fdp)
        close(fd);
    else
        *fdp = fd;
    if (rc < 0) {
        free(out->text);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

int drx_cfgfile_read(int dirfd, const char *name, const char *shown, unsigned flags, size_t max,
                     struct drx_cfgfile *out, bool *refused, struct drx_err *err)
{
    int rc = drx_cfgfile_slurp(dirfd, name, shown, flags, max, out, NULL, refused, err);

    if (rc < 0)
        return rc;
    rc = drx_cfgfile_parse(out->text, out->len, shown, flags, &out->cfg, refused, err);
    if (rc < 0) {
        free(out->text);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

int drx_cfgfile_check(const char *text, size_t len, const char *shown, unsigned flags,
                      struct drx_err *err)
{
    const char *kind = (flags & DRX_CFGFILE_USER) ? "a configuration file" : "a store file";
    const char *why = NULL;
    unsigned at;
    int line;

    /* config_read_string() would stop at a NUL and ignore the rest (and
     * the include check with it): such a file is not text. */
    if (memchr(text, '\0', len))
        return drx_err_set(err, EINVAL, "%s: contains NUL bytes (not libconfig text)", shown);
    line = include_line(text, len);
    if (line)
        return drx_err_set(err, EINVAL, "%s:%d: @include is not allowed in %s", shown, line, kind);
    at = stray_token(text, len, &why);
    if (at)
        return drx_err_set(err, EINVAL, "%s:%u: %s", shown, at, why);
    return 0;
}

int drx_cfgfile_parse(const char *text, size_t len, const char *shown, unsigned flags,
                      config_t *cfg, bool *refused, struct drx_err *err)
{
    bool ignored;
    int rc;

    if (!refused)
        refused = &ignored;
    *refused = true; /* below, every failure is the text's */
    if (!(flags & DRX_CFGFILE_CHECKED) && (rc = drx_cfgfile_check(text, len, shown, flags, err)))
        return rc;
    config_init(cfg);
    if (!config_read_string(cfg, text)) {
        rc = drx_err_set(err, EINVAL, "%s:%d: %s", shown, config_error_line(cfg),
                         config_error_text(cfg) ? config_error_text(cfg) : "syntax error");
        config_destroy(cfg);
        return rc;
    }
    *refused = false;
    return 0;
}

void drx_cfgfile_fini(struct drx_cfgfile *f)
{
    if (!f || !f->text)
        return;
    config_destroy(&f->cfg);
    free(f->text);
    memset(f, 0, sizeof *f);
}
