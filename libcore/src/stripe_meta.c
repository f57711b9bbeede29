/* Striped files: the metafile NAME.nafs, parsed by a table of keys,
 * formatted, replaced atomically or, on a full disk, updated in place. */
#include "drx/stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfgfile_i.h"
#include "drx/io.h"
#include "drx/log.h"
#include "replace_i.h"
#include "stripe_i.h"

/* A metafile is a few hundred bytes; anything much larger is not ours. */
#define META_MAX_BYTES 65536

/* ---- metafile names ------------------------------------------------------------- */

bool drx_stripe_path_is_held(const char *p)
{
    static const char pre[] = "/proc/self/fd/";

    if (strncmp(p, pre, sizeof pre - 1) != 0 || !p[sizeof pre - 1])
        return false;
    return strspn(p + sizeof pre - 1, "0123456789") == strlen(p + sizeof pre - 1);
}

int drx_stripe_meta_path(const char *path, char *buf, size_t len)
{
    if ((size_t)snprintf(buf, len, "%s" DRX_STRIPE_SUFFIX, path) >= len)
        return -ENAMETOOLONG;
    return 0;
}

/* ---- metafiles ----------------------------------------------------------------- */

static int bad_meta(struct drx_err *err, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad_meta(struct drx_err *err, const char *path, int line, const char *fmt, ...)
{
    char why[DRX_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    drx_log_ratelimited(DRX_LOG_WARNING, "%s:%d: refused metafile: %s", path, line, why);
    return drx_err_set(err, EIO, "%s:%d: bad metafile: %s", path, line, why);
}

static bool get_int(const config_setting_t *s, long long *v)
{
    int t = config_setting_type(s);

    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return false;
    *v = config_setting_get_int64(s);
    return true;
}

/* A metafile being checked: where it came from and what it gives. */
struct meta_parser {
    const char *path;
    size_t ndirs;
    struct drx_stripe_meta *m;
    const config_setting_t *subs;
    struct drx_err *err;
};

static int key_version(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v != 1)
        return bad_meta(p->err, p->path, line, "version must be 1");
    return 0;
}

static int key_extent(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 1 || (unsigned long long)v > DRX_MAX_EXTENT)
        return bad_meta(p->err, p->path, line, "extent must be an integer in 1..%llu",
                        (unsigned long long)DRX_MAX_EXTENT);
    p->m->layout.extent = (uint64_t)v;
    return 0;
}

static int key_count(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 1 || v > DRX_MAX_STRIPE_DIRS || (size_t)v > p->ndirs)
        return bad_meta(p->err, p->path, line,
                        "count must be an integer in 1..%zu (the store's stripe dirs)",
                        p->ndirs < DRX_MAX_STRIPE_DIRS ? p->ndirs : (size_t)DRX_MAX_STRIPE_DIRS);
    p->m->layout.count = (unsigned)v;
    return 0;
}

static int key_size(struct meta_parser *p, const config_setting_t *s, int line)
{
    long long v;

    if (!get_int(s, &v) || v < 0 || (unsigned long long)v > DRX_STRIPE_MAX_SIZE)
        return bad_meta(p->err, p->path, line, "size must be an integer in 0..%llu",
                        (unsigned long long)DRX_STRIPE_MAX_SIZE);
    p->m->size = (uint64_t)v;
    return 0;
}

/* The list is checked once count is known (keys come in any order). */
static int key_subfiles(struct meta_parser *p, const config_setting_t *s, int line)
{
    if (config_setting_type(s) != CONFIG_TYPE_LIST)
        return bad_meta(p->err, p->path, line, "subfiles must be a list ( {dir; name}, ... )");
    p->subs = s;
    return 0;
}

/* Every key of a metafile, each required; "missing" names the first absent
 * one in this order. */
static const struct meta_key {
    const char *name;
    int (*check)(struct meta_parser *p, const config_setting_t *s, int line);
} meta_keys[] = {
    {"version", key_version}, {"extent", key_extent},     {"count", key_count},
    {"size", key_size},       {"subfiles", key_subfiles},
};
#define META_NKEYS (sizeof(meta_keys) / sizeof(meta_keys[0]))

/* Checks one top-level setting; marks its key in *seen. */
static int meta_setting(struct meta_parser *p, const config_setting_t *s, unsigned *seen)
{
    const char *k = config_setting_name(s);
    int line = config_setting_source_line(s);

    for (unsigned j = 0; j < META_NKEYS; j++) {
        if (strcmp(k, meta_keys[j].name) == 0) {
            *seen |= 1u << j;
            return meta_keys[j].check(p, s, line);
        }
    }
    return bad_meta(p->err, p->path, line, "unknown key %s", k);
}

/* The dir and name settings of subfile group g, and nothing else. */
static int subfile_settings(struct meta_parser *p, unsigned i, const config_setting_t *g,
                            const config_setting_t **d, const config_setting_t **nm)
{
    *d = *nm = NULL;
    for (int j = 0; j < config_setting_length(g); j++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)j);
        if (strcmp(config_setting_name(e), "dir") == 0)
            *d = e;
        else if (strcmp(config_setting_name(e), "name") == 0)
            *nm = e;
        else
            return bad_meta(p->err, p->path, config_setting_source_line(e),
                            "subfile %u: unknown key %s", i, config_setting_name(e));
    }
    return 0;
}

/* The name of subfile i: a plain name, not one of an earlier subfile in
 * the same directory. */
static int subfile_name(struct meta_parser *p, unsigned i, const config_setting_t *nm, int line)
{
    struct drx_stripe_meta *m = p->m;

    if (!nm || config_setting_type(nm) != CONFIG_TYPE_STRING)
        return bad_meta(p->err, p->path, nm ? (int)config_setting_source_line(nm) : line,
                        "subfile %u: name must be a string", i);
    const char *name = config_setting_get_string(nm);
    /* Absolute paths, "..", '/' and odd characters all end here: a subfile
     * can only be a plain name inside its stripe dir. */
    if (!drx_stripe_subfile_name_valid(name))
        return bad_meta(p->err, p->path, config_setting_source_line(nm),
                        "subfile %u: name \"%.80s\" is not a plain name inside its stripe "
                        "directory",
                        i, name);
    strcpy(m->sub[i].name, name);
    for (unsigned j = 0; j < i; j++)
        if (m->sub[j].dir == m->sub[i].dir && strcmp(m->sub[j].name, name) == 0)
            return bad_meta(p->err, p->path, config_setting_source_line(nm),
                            "subfile %u: same as subfile %u", i, j);
    return 0;
}

static int meta_subfile(struct meta_parser *p, unsigned i)
{
    const config_setting_t *g = config_setting_get_elem(p->subs, i), *d, *nm;
    int line = config_setting_source_line(g);
    long long v;

    if (config_setting_type(g) != CONFIG_TYPE_GROUP)
        return bad_meta(p->err, p->path, line,
                        "subfile %u must be a group { dir = N; name = \"...\"; }", i);
    int rc = subfile_settings(p, i, g, &d, &nm);
    if (rc < 0)
        return rc;
    if (!d || !get_int(d, &v) || v < 0 || (unsigned long long)v >= p->ndirs)
        return bad_meta(p->err, p->path, d ? (int)config_setting_source_line(d) : line,
                        "subfile %u: dir must be an index in 0..%zu", i, p->ndirs - 1);
    p->m->sub[i].dir = (unsigned)v;
    return subfile_name(p, i, nm, line);
}

/* Checks a parsed metafile and fills m. */
static int meta_parse(config_t *lc, const char *path, size_t ndirs, struct drx_stripe_meta *m,
                      struct drx_err *err)
{
    struct meta_parser p = {path, ndirs, m, NULL, err};
    const config_setting_t *root = config_root_setting(lc);
    unsigned seen = 0;
    int rc = 0;

    memset(m, 0, sizeof *m);
    for (int i = 0; i < config_setting_length(root) && rc == 0; i++)
        rc = meta_setting(&p, config_setting_get_elem(root, (unsigned)i), &seen);
    for (unsigned j = 0; j < META_NKEYS && rc == 0; j++)
        if (!(seen & (1u << j)))
            rc = bad_meta(err, path, 0, "missing %s", meta_keys[j].name);
    if (rc == 0 && config_setting_length(p.subs) != (int)m->layout.count)
        rc = bad_meta(err, path, config_setting_source_line(p.subs),
                      "%d subfiles listed, count is %u", config_setting_length(p.subs),
                      m->layout.count);
    for (unsigned i = 0; i < m->layout.count && rc == 0; i++)
        rc = meta_subfile(&p, i);
    return rc;
}

/* Reads and parses metafile mp; *st gets the identity of the file parsed.
 * A file refused for what it is (a symlink, a FIFO, too large, not
 * libconfig text, an @include) is -EIO, logged, like any bad metafile. */
int drx_stripe_meta_load_st(const char *mp, size_t ndirs, struct drx_stripe_meta *m,
                            struct stat *st, struct drx_err *err)
{
    return drx_stripe_meta_load_as(mp, mp, ndirs, m, st, err);
}

int drx_stripe_meta_load_as(const char *mp, const char *shown, size_t ndirs,
                            struct drx_stripe_meta *m, struct stat *st, struct drx_err *err)
{
    struct drx_cfgfile cf;
    struct drx_err why = {{0}};
    bool refused;
    int rc;

    /* A held descriptor's magic link is followed (DRX_CFGFILE_USER): it is
     * the metafile's inode itself. */
    unsigned flags = DRX_CFGFILE_META | (drx_stripe_path_is_held(mp) ? DRX_CFGFILE_USER : 0);
    rc = drx_cfgfile_read(AT_FDCWD, mp, shown, flags, META_MAX_BYTES, &cf, &refused, &why);
    if (rc < 0) {
        if (!refused)
            return drx_err_set(err, -rc, "%s", why.msg);
        drx_log_ratelimited(DRX_LOG_WARNING, "refused metafile: %s", why.msg);
        return drx_err_set(err, EIO, "%s (bad metafile)", why.msg);
    }
    rc = meta_parse(&cf.cfg, shown, ndirs, m, err);
    if (rc == 0) {
        m->owned = true;
        m->owner = cf.st.st_uid;
    }
    if (rc == 0 && st)
        *st = cf.st;
    drx_cfgfile_fini(&cf);
    return rc;
}

int drx_stripe_meta_load(const char *metafile_path, size_t ndirs, struct drx_stripe_meta *m,
                         struct drx_err *err)
{
    return drx_stripe_meta_load_st(metafile_path, ndirs, m, NULL, err);
}

int drx_stripe_stat(const struct drx_store *s, const char *path, struct drx_stripe_meta *m,
                    struct drx_err *err)
{
    char mp[PATH_MAX];

    if (drx_stripe_meta_path(path, mp, sizeof mp) < 0)
        return drx_err_set(err, ENAMETOOLONG, "%s: name too long", path);
    return drx_stripe_meta_load_st(mp, s->cfg.stripe.ndirs, m, NULL, err);
}

/* Decimal digits of the largest size (2^62), and of v. */
#define SIZE_DIGITS 19

static int digits(uint64_t v)
{
    int n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static int meta_format(const struct drx_stripe_meta *m, char *buf, size_t len)
{
    size_t n = 0;
    int w;

    w = snprintf(buf, len,
                 "# drxfs striped file (NAFS metafile): subfile i holds extents e with\n"
                 "# e mod count == i; dir indexes the store's stripe dirs.\n"
                 "version = 1;\nextent = %llu;\ncount = %u;\n",
                 (unsigned long long)m->layout.extent, m->layout.count);
    if (w < 0 || (size_t)w >= len)
        return -ERANGE;
    n = (size_t)w;
    /* The size is padded to the width of the largest size, so that it can
     * be rewritten in place, byte for byte, when the disk is too full for
     * a new metafile (drx_stripe_meta_size_in_place). */
    w = snprintf(buf + n, len - n,
                 "size = %lldL;%-*s # padded: updated in place when full\n"
                 "subfiles = (\n",
                 (long long)m->size, SIZE_DIGITS - digits((uint64_t)m->size), "");
    if (w < 0 || (size_t)w >= len - n)
        return -ERANGE;
    n += (size_t)w;
    for (unsigned i = 0; i < m->layout.count; i++) {
        w = snprintf(buf + n, len - n, "  { dir = %u; name = \"%s\"; }%s\n", m->sub[i].dir,
                     m->sub[i].name, i + 1 < m->layout.count ? "," : "");
        if (w < 0 || (size_t)w >= len - n)
            return -ERANGE;
        n += (size_t)w;
    }
    w = snprintf(buf + n, len - n, ");\n");
    if (w < 0 || (size_t)w >= len - n)
        return -ERANGE;
    return (int)(n + (size_t)w);
}

void drx_stripe_split_path(const char *mp, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(mp, '/');

    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = mp;
    } else if (slash == mp) {
        snprintf(dir, dlen, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - mp), mp);
        *base = slash + 1;
    }
}

/* Writes m as metafile mp by temp file + rename (drx_replace_write).
 * noreplace: fail with -EEXIST instead of replacing.  sync: the file and its
 * directory are fsynced.  like: an existing metafile whose mode and owner
 * the new one keeps (NULL: `mode`).  *st_out: identity of the new file. */
int drx_stripe_meta_write(const char *mp, const struct drx_stripe_meta *m, bool noreplace,
                          bool sync, const struct stat *like, mode_t mode, struct stat *st_out)
{
    char text[8192];
    int len = meta_format(m, text, sizeof text);

    if (len < 0)
        return len;
    return drx_replace_write(
        mp, text, (size_t)len, like, mode,
        (noreplace ? DRX_REPLACE_NOREPLACE : 0) | (sync ? 0 : DRX_REPLACE_NOSYNC), st_out);
}

int drx_stripe_meta_create(struct drx_store *s, const char *mp, const struct drx_stripe_meta *m,
                           mode_t mode, struct stat *st_out)
{
    char text[8192];
    int len = meta_format(m, text, sizeof text);

    if (len < 0)
        return len;
    return drx_replace_write_s(s, mp, text, (size_t)len, NULL, mode,
                               DRX_REPLACE_NOREPLACE | DRX_REPLACE_NOSYNC, st_out);
}

/* Writes m into mp itself, no temp file and no rename: only for temporary
 * metafiles (drx_stripe_create_temp), which fsck removes in whatever state a
 * crash left them.  flags: O_EXCL to create (with `mode`; removed again
 * when it cannot be written), O_TRUNC to rewrite.  like: an existing
 * metafile whose mode and owner it takes. */
int drx_stripe_meta_write_here(const char *mp, const struct drx_stripe_meta *m, int flags,
                               mode_t mode, const struct stat *like, bool sync, struct stat *st_out)
{
    char text[8192];
    int len = meta_format(m, text, sizeof text), fd, rc;

    if (len < 0)
        return len;
    fd = open(mp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, mode & 07777);
    if (fd < 0)
        return -errno;
    rc = 0;
    if (like)
        rc = drx_replace_take_owner(fd, like); /* the rule of replaced files */
    else if ((flags & O_EXCL) && fchmod(fd, mode & 07777) < 0)
        rc = -errno; /* exactly mode, whatever the umask */
    if (rc == 0)
        rc = drx_io_write_all(fd, text, (size_t)len);
    if (rc == 0 && sync && fsync(fd) < 0)
        rc = -errno;
    if (rc == 0 && st_out && fstat(fd, st_out) < 0)
        rc = -errno;
    close(fd);
    /* a file this call made (O_EXCL) and could not fill goes: a full disk
     * would else leave an empty temporary that fsck calls a leftover */
    if (rc < 0 && (flags & O_EXCL))
        unlink(mp);
    return rc;
}

/* True when a and b describe the same file: layout and subfiles. */
bool drx_stripe_same_layout(const struct drx_stripe_meta *a, const struct drx_stripe_meta *b)
{
    if (a->layout.count != b->layout.count || a->layout.extent != b->layout.extent)
        return false;
    for (unsigned i = 0; i < a->layout.count; i++)
        if (a->sub[i].dir != b->sub[i].dir || strcmp(a->sub[i].name, b->sub[i].name) != 0)
            return false;
    return true;
}

/* Where text (a metafile) sets the size: the setting "size = 123L;" at the
 * start of a line and the blanks after it, the bytes an update may
 * rewrite.  *off, *n; false when there is none in that form. */
static bool size_span(const char *text, size_t len, size_t *off, size_t *n)
{
    for (size_t i = 0; i < len; i = (size_t)(strchrnul(text + i, '\n') - text) + 1) {
        size_t p = i + strspn(text + i, " \t");
        if (strncmp(text + p, "size", 4) != 0)
            continue;
        size_t q = p + 4;
        q += strspn(text + q, " \t");
        if (text[q] != '=' && text[q] != ':')
            continue;
        q++;
        q += strspn(text + q, " \t");
        size_t d = strspn(text + q, "0123456789");
        if (d == 0)
            continue;
        q += d;
        q += text[q] == 'L';
        q += strspn(text + q, " \t");
        if (text[q] != ';')
            continue;
        q++;
        q += strspn(text + q, " \t");
        *off = p;
        *n = q - p;
        return true;
    }
    return false;
}

/* The metafile update for a full disk: records m->size in metafile mp (the
 * file `was`, whose text gave m under the persist lock) by rewriting its
 * size setting in place, when the new value fits the bytes the old one
 * holds (drx pads it to the widest size).  like: an owner and mode to give
 * it (a temporary being committed), or NULL.
 *
 * Why this is as safe as the atomic replacement it stands in for: only the
 * bytes of the size setting change, with one pwrite of the same number of
 * bytes inside the first 512 bytes of the file.  The file keeps its length,
 * inode and blocks, so (on ext4, xfs, tmpfs) nothing is allocated; on a
 * copy-on-write filesystem the write itself may fail with ENOSPC, and then
 * the caller gives the unrecordable bytes back.  A process killed at any
 * point leaves the old text or the new one (a pwrite within one page lands
 * whole in the page cache); a power loss leaves the old sector or the new
 * one (disks write a sector whole).  The data the new size covers was
 * synced before (persist_locked in stripe.c), as for a replacement.  The text is
 * parsed before it is written: it must give the same file with the new
 * size.  A metafile with other hard links is never written in place (its
 * other name would change too).  Returns 0, -EOPNOTSUPP when the update
 * cannot be made in place, or -errno. */
/* Whether fd (opened as metafile mp) may be rewritten in place: still the
 * file `was`, a regular file, and small.  Other names of it are the
 * striped file's hard links (drx_stripe_link), which must see the change. */
static bool in_place_allowed(int fd, const struct stat *was, struct stat *st)
{
    return fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_dev == was->st_dev &&
           st->st_ino == was->st_ino && st->st_size <= META_MAX_BYTES;
}

bool drx_stripe_meta_padded(const char *mp)
{
    struct drx_cfgfile cf;
    size_t off, n;
    bool ok;

    if (drx_cfgfile_read(AT_FDCWD, mp, mp, DRX_CFGFILE_META, META_MAX_BYTES, &cf, NULL, NULL) < 0)
        return false;
    ok = size_span(cf.text, cf.len, &off, &n) && off + n <= DRX_CFGFILE_LOCK_SPAN &&
         n >= strlen("size = L;") + SIZE_DIGITS;
    drx_cfgfile_fini(&cf);
    return ok;
}

/* Puts m->size into the size setting of text (len bytes), padded to the
 * same width, into field[0..*n) for the write at *off; the result must
 * parse as the same file with the new size.  0 or -EOPNOTSUPP. */
static int size_patch(char *text, size_t len, const char *mp, size_t ndirs,
                      const struct drx_stripe_meta *m, char *field, size_t flen, size_t *off,
                      size_t *n)
{
    struct drx_stripe_meta check;
    config_t lc;
    int w = snprintf(field, flen, "size = %lluL;", (unsigned long long)m->size);

    /* the span includes the blanks after the setting: any number of them */
    if (!size_span(text, len, off, n) || (size_t)w > *n || *n > flen ||
        *off + *n > DRX_CFGFILE_LOCK_SPAN)
        return -EOPNOTSUPP;
    memset(field + w, ' ', *n - (size_t)w);
    memcpy(text + *off, field, *n);
    /* The new text, as a reader will parse it: this file, this size. */
    if (drx_cfgfile_parse(text, len, mp, 0, &lc, NULL, NULL) < 0)
        return -EOPNOTSUPP;
    int rc = meta_parse(&lc, mp, ndirs, &check, NULL);
    config_destroy(&lc);
    if (rc < 0 || check.size != m->size || !drx_stripe_same_layout(&check, m))
        return -EOPNOTSUPP;
    return 0;
}

/* Metafile mp opened for an update in place, without touching its atime
 * where the caller may (O_NOATIME is the owner's). */
static int meta_open_rw(const char *mp)
{
    int nofollow = drx_stripe_path_is_held(mp) ? 0 : O_NOFOLLOW;
    int fd = open(mp, O_RDWR | nofollow | O_NONBLOCK | O_CLOEXEC | O_NOATIME);

    if (fd < 0 && errno == EPERM)
        fd = open(mp, O_RDWR | nofollow | O_NONBLOCK | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The text of metafile fd (the file `was`), NUL-terminated, into *text
 * (free it), its length in *len.  0, -ESTALE when it is not `was` any more
 * (another file has the name now), -EOPNOTSUPP when not a metafile's size,
 * or -errno.  Apart: a caller replacing the name for -EOPNOTSUPP (an
 * older drx's metafile) replaced the other file's, a file exchanged with
 * this one behind a mount between the caller's load and this open, with
 * this file's text (that file's metafile named this one's subfiles, its
 * own bytes lost). */
static int read_was(int fd, const struct stat *was, char **text, size_t *len)
{
    struct stat st;
    ssize_t n;

    *text = NULL;
    if (fstat(fd, &st) == 0 && (st.st_dev != was->st_dev || st.st_ino != was->st_ino))
        return -ESTALE;
    if (!in_place_allowed(fd, was, &st))
        return -EOPNOTSUPP;
    if (!(*text = malloc((size_t)st.st_size + 1)))
        return -ENOMEM;
    n = pread(fd, *text, (size_t)st.st_size, 0);
    if (n < 0)
        return -errno;
    (*text)[n] = '\0';
    *len = (size_t)n;
    return 0;
}

/* Writes the patched size field (n bytes at off) into metafile fd at mp,
 * taking like's owner first when given; syncs it when asked and stats it
 * into st_out (when not NULL). */
static int size_write(int fd, const char *mp, const char *field, size_t n, size_t off,
                      const struct stat *like, bool sync, struct stat *st_out)
{
    int rc = 0;

    if (like)
        rc = drx_replace_take_owner(fd, like);
    if (rc == 0)
        rc = drx_io_pwrite_all(fd, field, n, off);
    if (rc == 0 && sync && fsync(fd) < 0)
        rc = -errno;
    if (rc == 0 && sync && !drx_stripe_path_is_held(mp)) /* no name changed */
        rc = drx_io_fsync_parent(mp);
    if (rc == 0 && st_out && fstat(fd, st_out) < 0)
        rc = -errno;
    return rc;
}

/* The size text (len bytes) records for the file m is: true when it
 * parses as that file. */
static bool text_size(const char *text, size_t len, const char *mp, size_t ndirs,
                      const struct drx_stripe_meta *m, uint64_t *size)
{
    struct drx_stripe_meta now;
    config_t lc;

    if (drx_cfgfile_parse(text, len, mp, 0, &lc, NULL, NULL) < 0)
        return false;
    int rc = meta_parse(&lc, mp, ndirs, &now, NULL);
    config_destroy(&lc);
    if (rc < 0 || !drx_stripe_same_layout(&now, m))
        return false;
    *size = now.size;
    return true;
}

int drx_stripe_meta_size_in_place(const char *mp, const struct stat *was,
                                  const struct drx_stripe_meta *m, size_t ndirs,
                                  const struct stat *like, bool sync, struct stat *st_out)
{
    return drx_stripe_meta_size_in_place_grow(mp, was, m, ndirs, like, sync, st_out, NULL);
}

int drx_stripe_meta_size_in_place_grow(const char *mp, const struct stat *was,
                                       const struct drx_stripe_meta *m, size_t ndirs,
                                       const struct stat *like, bool sync, struct stat *st_out,
                                       uint64_t *larger)
{
    char *text = NULL, field[64];
    size_t off, n, len = 0;
    uint64_t now;
    int fd, rc;

    fd = meta_open_rw(mp);
    if (fd < 0)
        return fd;
    /* Readers take the read lock (DRX_CFGFILE_META): none sees half a size. */
    bool locked = drx_cfgfile_lock(fd, F_WRLCK);
    rc = read_was(fd, was, &text, &len);
    /* Another writer of the file recorded a larger size since the caller
     * read it (the file's lock, which keeps that out, could not be had:
     * drx_stripe_lock_take): its bytes and ours are under it. */
    if (rc == 0 && larger && text_size(text, len, mp, ndirs, m, &now) && now > m->size) {
        *larger = now;
        rc = 1;
        if ((sync && fsync(fd) < 0) || (st_out && fstat(fd, st_out) < 0))
            rc = -errno;
        goto out;
    }
    if (rc == 0)
        rc = size_patch(text, len, mp, ndirs, m, field, sizeof field, &off, &n);
    if (rc == 0)
        rc = size_write(fd, mp, field, n, off, like, sync, st_out);
out:
    if (locked)
        drx_cfgfile_lock(fd, F_UNLCK);
    free(text);
    close(fd);
    return rc;
}
