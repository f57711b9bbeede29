/* Extendible array handles: open, create, close, reload, chunk I/O and the
 * chunk cache's coherence.  The .xmd itself is array_meta.c's. */
#include "drx/array.h"
#include "drx/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_i.h"
#include "cache_i.h"
#include "drx/attr.h"
#include "drx/io.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "replace_i.h"

static char *path_with(const char *path, const char *suffix)
{
    size_t n = strlen(path), s = strlen(suffix);
    char *p = malloc(n + s + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, s + 1);
    }
    return p;
}

int drx_pin_open(struct drx_pin *p, const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    struct stat pinned, through;

    p->fd = -1;
    p->self[0] = '\0';
    if (!slash)
        return 0;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return 0; /* by path: its use says ENAMETOOLONG */
    memcpy(dir, path, n);
    dir[n] = '\0';
    /* drxfs's paths are pinned already (drx_store_path_pin) */
    if (strncmp(dir, "/proc/self/fd/", 14) == 0 && dir[14] &&
        strspn(dir + 14, "0123456789") == n - 14)
        return 0;
    if ((p->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return 0;
    snprintf(p->self, sizeof p->self, "/proc/self/fd/%d", p->fd);
    /* without /proc (a chroot, a container) the pinned names lead
     * nowhere: by path then, as before */
    if (fstat(p->fd, &pinned) < 0 || stat(p->self, &through) < 0 ||
        pinned.st_ino != through.st_ino || pinned.st_dev != through.st_dev) {
        close(p->fd);
        p->fd = -1;
        p->self[0] = '\0';
    }
    return 0;
}

char *drx_pin_name(const struct drx_pin *p, const char *path, const char *suffix)
{
    if (p->fd < 0)
        return path_with(path, suffix);
    const char *base = strrchr(path, '/') + 1;
    size_t n = strlen(p->self) + 1 + strlen(base) + strlen(suffix) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s%s", p->self, base, suffix);
    return out;
}

void drx_pin_close(struct drx_pin *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

bool drx_array_dim_name_valid(const char *name)
{
    size_t n = strlen(name);
    /* Names that would read as another view key are refused, so that a
     * view word always means one thing. */
    if (n == 0 || n > DRX_MAX_DIM_NAME || strcmp(name, "order") == 0 || strcmp(name, "rep") == 0)
        return false;
    if (strncmp(name, "dim", 3) == 0 && n > 3 && isdigit((unsigned char)name[3]))
        return false;
    if (!isalpha((unsigned char)name[0]) && name[0] != '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return false;
    return true;
}

int drx_array_dim_lookup(const struct drx_array_meta *m, const char *word)
{
    if (strncmp(word, "dim", 3) == 0 && isdigit((unsigned char)word[3])) {
        char *end;
        unsigned long d = strtoul(word + 3, &end, 10);
        if (*end == '\0' && d < (unsigned long)m->rank && (word[3] != '0' || word[4] == '\0'))
            return (int)d;
        return -1;
    }
    if (isdigit((unsigned char)word[0])) {
        char *end;
        unsigned long d = strtoul(word, &end, 10);
        if (*end == '\0' && d < (unsigned long)m->rank)
            return (int)d;
        return -1;
    }
    for (int d = 0; d < m->rank; d++)
        if (m->dim_name[d][0] && strcmp(m->dim_name[d], word) == 0)
            return d;
    return -1;
}

size_t drx_array_dim_names(const struct drx_array_meta *m, char *buf, size_t len)
{
    size_t used = 0;

    if (len)
        buf[0] = '\0';
    for (int i = 0; i < m->rank; i++) {
        if (!m->dim_name[i][0])
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", m->dim_name[i]);
        if (n < 0 || (size_t)n >= len - used)
            break; /* what fits stays */
        used += (size_t)n;
    }
    return used;
}

/* Opens an array file without following a symlink in its last component
 * and requires a regular file: the daemon runs as root on a store users can
 * write, and NAME.xta -> /etc/shadow must not become readable.  A hard
 * link's other name (any file its maker could write) must not be changed
 * by a put or an extension: writers check the link count on top. */
int drx_array_open_regular(const char *path, int flags, struct stat *st, struct drx_err *err)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        if (errno == ELOOP)
            return drx_err_set(err, ELOOP, "%s is a symbolic link (refused)", path);
        return drx_err_set(err, errno, "%s: %s", path, strerror(errno));
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return drx_err_set(err, EIO, "%s is not a regular file (refused)", path);
    }
    /* Other hard links are the writers' concern (drx_array_check_links):
     * reading one is safe, since the mount reports the file's own owner and
     * mode and the kernel checks them. */
    /* O_NONBLOCK was only for the open (a FIFO must not hang us) */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static int check_xta_size(struct drx_array *a, struct drx_err *err)
{
    struct stat st;
    uint64_t need = a->meta.map.nchunks * a->meta.chunk_bytes;

    if (fstat(a->xta_fd, &st))
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    if ((uint64_t)st.st_size < need)
        return drx_err_set(err, EIO,
                           "%s is %jd bytes, shorter than the %" PRIu64
                           " its metadata needs (run drx fsck)",
                           a->xta_path, (intmax_t)st.st_size, need);
    return 0;
}

struct drx_array *drx_array_alloc(const char *path, int mode)
{
    struct drx_array *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->mode = mode & DRX_RDWR;
    a->meta_only = (mode & DRX_METAONLY) != 0;
    a->xta_fd = -1;
    a->watch_fd = -1;
    a->xmd_fd = -1;
    pthread_mutex_init(&a->watch_lock, NULL);
    for (int i = 0; i < DRX_ARRAY_CHUNK_LOCKS; i++)
        pthread_mutex_init(&a->chunk_lock[i], NULL);
    a->pin.fd = -1;
    a->path = strdup(path);
    a->xmd_path = path_with(path, ".xmd");
    a->xta_path = path_with(path, ".xta");
    if (drx_pin_open(&a->pin, path) == 0) {
        a->xmd_at = drx_pin_name(&a->pin, path, ".xmd");
        a->xta_at = drx_pin_name(&a->pin, path, ".xta");
    }
    if (!a->path || !a->xmd_path || !a->xta_path || !a->xmd_at || !a->xta_at) {
        drx_array_close(a);
        return NULL;
    }
    return a;
}

/* The metadata of a new array from what `drx create` asks for. */
static int meta_from_spec(struct drx_array_meta *m, const struct drx_array_spec *spec,
                          struct drx_err *err)
{
    int rc;

    if (spec->rank < 1 || spec->rank > DRX_MAX_RANK)
        return drx_err_set(err, EINVAL, "rank %d is not in 1..%d", spec->rank, DRX_MAX_RANK);
    if ((unsigned)spec->type >= DRX_NTYPES)
        return drx_err_set(err, EINVAL, "unknown element type");
    m->type = spec->type;
    m->rank = spec->rank;
    for (int i = 0; i < m->rank; i++) {
        const char *name = spec->dim_name[i] ? spec->dim_name[i] : "";
        m->chunk[i] = spec->chunk[i];
        m->initial[i] = m->bounds[i] = spec->shape[i];
        if (name[0] && !drx_array_dim_name_valid(name))
            return drx_err_set(err, EINVAL,
                               "'%.80s' is not a valid dimension name (letters, digits, _; not "
                               "order, rep or dimN)",
                               name);
        for (int j = 0; j < i; j++)
            if (name[0] && strcmp(name, m->dim_name[j]) == 0)
                return drx_err_set(err, EINVAL, "dimension name '%s' is used twice", name);
        strcpy(m->dim_name[i], name);
    }
    if ((rc = drx_xmd_derive(m, err)))
        return rc;
    if (spec->fill)
        memcpy(m->fill, spec->fill, m->elem_size);
    return 0;
}

/* The .xta made without a name (O_TMPFILE in its directory), filled and
 * synced, then linked under its name: a create killed while it fills
 * leaves nothing (it left an .xta without .xmd that took the name and
 * hid its space).  1 when it cannot be made so (no O_TMPFILE on the file
 * system, no /proc: the caller makes it under its name), 0 or -errno. */
static int create_xta_unnamed(struct drx_array *a, struct drx_err *err)
{
    char dir[PATH_MAX], fdpath[64];
    const char *base;
    int fd, rc;

    /* (any failure: the named create says what is wrong, as before) */
    if (drx_path_split(a->xta_at, dir, sizeof dir, &base) < 0 ||
        (fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666)) < 0)
        return 1;
    rc = drx_array_fill_chunks(fd, &a->meta, 0, a->meta.map.nchunks);
    if (rc == 0 && fdatasync(fd))
        rc = -errno;
    if (rc) {
        close(fd);
        return drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    }
    /* held until the .xmd is written (create_files): a drx rm of the name
     * meanwhile sees a create in progress, not an interrupted rm's leftover */
    (void)!flock(fd, LOCK_EX);
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, fdpath, AT_FDCWD, a->xta_at, AT_SYMLINK_FOLLOW)) {
        rc = errno;
        close(fd);
        if (rc == EEXIST)
            return drx_err_set(err, EEXIST, "%s: an array (or its .xmd/.xta) already exists",
                               a->path);
        return rc == ENOENT && access("/proc/self/fd", X_OK) ? 1
                                                             : drx_err_set(err, rc, "%s: %s",
                                                                           a->xta_path,
                                                                           strerror(rc));
    }
    a->xta_fd = fd;
    return 0;
}

/* The new array's .xmd, with the owner and mode of its .xta (open as
 * xta_fd), never over a file: one that took the name since the create
 * looked is not this array's, and its owner and mode must not become the
 * array's (an .xmd linked there was taken as the one to replace). */
static int first_xmd(struct drx_array *a, struct drx_err *err)
{
    struct stat like;
    int rc;

    if (fstat(a->xta_fd, &like) < 0)
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    rc = drx_xmd_write(a->xmd_at, &like, DRX_REPLACE_NOREPLACE, &a->meta, err);
    if (rc == -EEXIST)
        rc = drx_err_set(err, EEXIST, "%s: an array (or its .xmd/.xta) already exists", a->path);
    return rc;
}

/* Chunks first, metadata last: a crash leaves nothing (the .xta unnamed
 * until full), or where there is no O_TMPFILE an orphan .xta at worst.
 * Mode 0666 less the umask, as any new file (and the .xmd takes the
 * .xta's): 0644 kept a project's umask 002 from making arrays its group
 * may write and extend. */
static int create_files(struct drx_array *a, struct drx_err *err)
{
    int rc = create_xta_unnamed(a, err);

    if (rc < 0)
        return rc;
    if (rc == 0) {
        /* the .xmd makes it an array; its write syncs the directory */
        if ((rc = first_xmd(a, err)))
            unlink(a->xta_at);
        flock(a->xta_fd, LOCK_UN);
        return rc;
    }
    a->xta_fd = open(a->xta_at, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (a->xta_fd >= 0)
        (void)!flock(a->xta_fd, LOCK_EX); /* as above, for the whole fill */
    if (a->xta_fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
        /* the directory it goes in, not a file the user never named */
        int e = errno;
        const char *slash = strrchr(a->xta_path, '/');
        int n = slash ? (int)(slash - a->xta_path) : 1;
        return drx_err_set(err, e, "%.*s: %s", n, slash ? a->xta_path : ".",
                           e == ENOENT ? "no such directory" : "not a directory");
    }
    if (a->xta_fd < 0)
        return drx_err_set(err, errno, "%s: %s", a->xta_path, strerror(errno));
    rc = drx_array_fill_chunks(a->xta_fd, &a->meta, 0, a->meta.map.nchunks);
    if (rc == 0 && fdatasync(a->xta_fd))
        rc = -errno;
    if (rc)
        rc = drx_err_set(err, -rc, "%s: %s", a->xta_path, strerror(-rc));
    if (rc == 0)
        rc = first_xmd(a, err);
    if (rc)
        unlink(a->xta_at);
    flock(a->xta_fd, LOCK_UN);
    return rc;
}

/* An array wins over a striped file, a directory or a file of its name
 * (drx_store_classify): made beside one, it would hide that one at the
 * mount, a directory with all it holds.  -EEXIST naming what is there. */
static int name_taken(const struct drx_array *a, struct drx_err *err)
{
    struct stat st;
    const char *path = a->path;
    char *nafs = drx_pin_name(&a->pin, path, DRX_STRIPE_SUFFIX);
    char *name = drx_pin_name(&a->pin, path, "");
    const char *what = NULL;

    if (!nafs || !name) {
        free(nafs);
        free(name);
        return drx_err_set(err, ENOMEM, "out of memory");
    }
    if (lstat(nafs, &st) == 0)
        what = "a striped file";
    else if (lstat(name, &st) == 0)
        what = S_ISDIR(st.st_mode)   ? "a directory"
               : S_ISLNK(st.st_mode) ? "a symbolic link"
                                     : "a file";
    free(nafs);
    free(name);
    if (!what)
        return 0;
    return drx_err_set(err, EEXIST, "%s: %s of that name exists (an array would hide it)", path,
                       what);
}

int drx_array_create(const char *path, const struct drx_array_spec *spec, struct drx_array **out,
                     struct drx_err *err)
{
    struct drx_array *a = drx_array_alloc(path, DRX_RDWR);
    struct stat st;
    int rc;

    *out = NULL;
    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    /* Past DRX_STORE_SHORT_MAX a name's files are named by a stem at a
     * drxfs mount (store.h); made here as NAME.xmd, one name would have
     * two layouts (README, Long names).  drxfs itself passes stems. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strlen(base) > DRX_STORE_SHORT_MAX) {
        rc = drx_err_set(err, ENAMETOOLONG,
                         "%s: %s (an array is made under a name of at most %d bytes; "
                         "a longer one by a rename at a drxfs mount)",
                         path, strerror(ENAMETOOLONG), DRX_STORE_SHORT_MAX);
        goto fail;
    }
    if ((rc = meta_from_spec(&a->meta, spec, err)))
        goto fail;
    if (lstat(a->xmd_at, &st) == 0) {
        rc = drx_err_set(err, EEXIST, "%s: an array (or its .xmd/.xta) already exists", path);
        goto fail;
    }
    if (lstat(a->xta_at, &st) == 0) {
        rc = drx_err_set(err, EEXIST,
                         "%s exists without its .xmd (what an interrupted drx rm leaves, "
                         "or a create or rename of it under way; drx rm %s removes a "
                         "leftover)",
                         a->xta_path, path);
        goto fail;
    }
    if ((rc = name_taken(a, err)))
        goto fail;
    if ((rc = create_files(a, err)))
        goto fail;
    /* the handle holds the .xmd open, as one that was opened */
    rc = drx_array_reread(a, err);
    if (rc)
        goto fail;
    *out = a;
    return 0;
fail:
    drx_array_close(a);
    return rc;
}

/* Whether a's names still lead to the files it holds: the .xmd read
 * (xmd_fd) and its .xta.  The two are read by name at different moments,
 * and a rename behind the handle in between (its directory swapped for
 * another holding an array of the same name, type and chunks; an array
 * made anew under the name) gave a handle one array's metadata and
 * another's chunks: reads of the one laid out as the other, and writes
 * at the other's addresses.  Checked after both were read: an array's
 * .xta takes its name before its .xmd does (create, rename), so a .xmd
 * read from another array shows here as another .xta or .xmd. */
static bool pair_intact(const struct drx_array *a, int xmd_fd)
{
    struct stat name, held;

    return lstat(a->xmd_at, &name) == 0 && fstat(xmd_fd, &held) == 0 &&
           name.st_ino == held.st_ino && name.st_dev == held.st_dev &&
           lstat(a->xta_at, &name) == 0 && fstat(a->xta_fd, &held) == 0 &&
           name.st_ino == held.st_ino && name.st_dev == held.st_dev;
}

int drx_array_held_xmd(const struct drx_array *a, struct stat *st, struct drx_err *err)
{
    struct stat held;

    if (a->xmd_fd >= 0 && a->xta_fd >= 0 && pair_intact(a, a->xmd_fd) &&
        fstat(a->xmd_fd, &held) == 0 && S_ISREG(held.st_mode)) {
        if (st)
            *st = held;
        return 0;
    }
    return drx_err_set(err, ESTALE,
                       "%s: renamed or replaced behind the handle (the name leads to another "
                       ".xmd or .xta than the handle read): not changed",
                       a->xmd_path);
}

/* Tries at reading a pair whose names keep changing: past them, ESTALE. */
#define PAIR_TRIES 3

static int pair_replaced(const struct drx_array *a, struct drx_err *err)
{
    return drx_err_set(err, ESTALE,
                       "%s: the array was replaced by a different one (its names lead to "
                       "another .xmd or .xta than the handle holds)",
                       a->xmd_path);
}

int drx_array_open(const char *path, int mode, struct drx_array **out, struct drx_err *err)
{
    struct drx_array *a = drx_array_alloc(path, mode);
    int rc;

    *out = NULL;
    if (!a)
        return drx_err_set(err, ENOMEM, "out of memory");
    if (lstat(a->xmd_at, &a->xmd_st)) {
        /* a striped file or directory named as an array says so (drx-load
         * and drx_mp_open said "no such array": the MPI audit) */
        rc = errno == ENOENT ? drx_array_no_such(path, err)
                             : drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
        goto fail;
    }
    for (int tries = 1;; tries++) {
        struct stat st;
        if ((rc = drx_array_reread(a, err)))
            goto fail;
        rc = drx_array_open_regular(a->xta_at, a->mode == DRX_RDWR ? O_RDWR : O_RDONLY, &st,
                                    err);
        /* an .xmd without its .xta is a broken array, not no array (it
         * is listed; drx fsck reports it); but one whose name no longer
         * leads to the .xmd read was removed meanwhile (drx rm takes the
         * .xmd first: a reader met EIO 1-2 opens in 1000 of an array
         * removed and made anew in a loop) or replaced (read again) */
        if (rc == -ENOENT) {
            struct stat name, held;
            int seen = lstat(a->xmd_at, &name) == 0 ? 0 : errno;
            bool gone = seen == ENOENT;
            if (gone || (seen == 0 && fstat(a->xmd_fd, &held) == 0 &&
                         (name.st_ino != held.st_ino || name.st_dev != held.st_dev))) {
                if (err)
                    err->msg[0] = '\0';
                drx_array_meta_fini(&a->meta);
                if (gone) {
                    rc = drx_array_no_such(path, err);
                    goto fail;
                }
                if (tries == PAIR_TRIES) {
                    rc = pair_replaced(a, err);
                    goto fail;
                }
                continue;
            }
            rc = drx_err_set(err, EIO, "%s is missing (the array's chunks; see drx fsck)",
                             a->xta_path);
        }
        if (rc < 0)
            goto fail;
        a->xta_fd = rc;
        if (pair_intact(a, a->xmd_fd))
            break;
        /* renamed in between: both read again, as of one array */
        close(a->xta_fd);
        a->xta_fd = -1;
        drx_array_meta_fini(&a->meta);
        if (tries == PAIR_TRIES) {
            rc = pair_replaced(a, err);
            goto fail;
        }
    }
    rc = check_xta_size(a, err);
    if (rc == 0 && a->mode == DRX_RDWR)
        rc = drx_array_check_links(a, err);
    if (rc)
        goto fail;
    *out = a;
    return 0;
fail:
    drx_array_close(a);
    return rc;
}

/* Each watch is an inotify instance, counted against its user's
 * fs.inotify.max_user_instances (128 by default): a daemon running as root
 * that opened one per array a user held open took all of root's, and
 * every other program of root failed inotify_init with EMFILE.  At most
 * DRX_ARRAY_WATCH_MAX handles of a process watch at once; the others read
 * without a chunk cache. */
static unsigned watch_count;

static void watch_stop(struct drx_array *a)
{
    if (a->watch_fd < 0)
        return;
    close(a->watch_fd);
    a->watch_fd = -1;
    __atomic_sub_fetch(&watch_count, 1, __ATOMIC_RELAXED);
}

void drx_array_close(struct drx_array *a)
{
    if (!a)
        return;
    if (a->xta_fd >= 0)
        close(a->xta_fd);
    if (a->xmd_fd >= 0)
        close(a->xmd_fd);
    drx_array_set_cache(a, 0);
    watch_stop(a);
    pthread_mutex_destroy(&a->watch_lock);
    for (int i = 0; i < DRX_ARRAY_CHUNK_LOCKS; i++)
        pthread_mutex_destroy(&a->chunk_lock[i]);
    drx_array_meta_fini(&a->meta);
    free(a->pend_lines); /* growths never committed: the .xta is cut later */
    free(a->path);
    free(a->xmd_path);
    free(a->xta_path);
    free(a->xmd_at);
    free(a->xta_at);
    drx_pin_close(&a->pin);
    free(a);
}

bool drx_array_exists(const char *path)
{
    char *xmd = path_with(path, ".xmd");
    struct stat st;
    bool yes = xmd && stat(xmd, &st) == 0 && S_ISREG(st.st_mode);
    free(xmd);
    return yes;
}

/* An .xta without its .xmd: what a remove killed between its two unlinks
 * left, removed (1); but not while a create or a rename of it holds its
 * lock (a create links the .xta before it writes the .xmd, a rename makes
 * the new .xta a second name of the old), nor one with other names, nor
 * when the .xmd has come meanwhile (-EBUSY).  -ENOENT when there is none. */
static int remove_lone_xta(const char *path, const char *xmd, const char *xta,
                           struct drx_err *err)
{
    int fd = open(xta, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc;
    struct stat st, now;

    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return drx_err_set(err, ENOENT, "%s: no such array", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0 || st.st_nlink != 1 || lstat(xmd, &now) == 0)
        rc = drx_err_set(err, EBUSY,
                         "%s: its .xta has no .xmd while a create or rename of it is under "
                         "way (or another process holds its lock): not removed",
                         path);
    else if (lstat(xta, &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
        rc = drx_err_set(err, ENOENT, "%s: no such array", path);
    else
        rc = unlink(xta) ? drx_err_set(err, errno, "%s: %s", xta, strerror(errno)) : 1;
    close(fd);
    return rc;
}

/* Both names removed in the directory of pin, the .xmd first (what makes
 * it an array), under the extend lock, so that an extension, attribute
 * change or rename by another process is never cut in half. */
static int remove_pinned(const char *path, const char *xmd, const char *xta, struct drx_err *err)
{
    int fd = open(xta, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc;
    if (fd >= 0 && (rc = drx_io_flock(fd, LOCK_EX)) < 0) {
        close(fd);
        if (rc == -EWOULDBLOCK)
            return drx_err_set(err, EWOULDBLOCK,
                               "%s: locked by another process for %u ms (an extension, or "
                               "growths it has not committed yet): not removed",
                               path, drx_io_lock_wait_ms());
        return drx_err_set(err, -rc, "%s: lock: %s", path, strerror(-rc));
    }
    if (unlink(xmd)) {
        int e = errno;
        if (fd >= 0)
            close(fd); /* the lone .xta's check takes the lock itself */
        fd = -1;
        rc = e == ENOENT ? remove_lone_xta(path, xmd, xta, err)
                         : drx_err_set(err, e, "%s: %s", xmd, strerror(e));
    } else {
        rc = unlink(xta) && errno != ENOENT ? drx_err_set(err, errno, "%s: %s", xta, strerror(errno))
                                            : 0;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

int drx_array_remove(const char *path, struct drx_err *err)
{
    struct drx_pin pin;
    char *xmd = NULL, *xta = NULL;
    int rc;

    if (drx_pin_open(&pin, path) < 0 || !(xmd = drx_pin_name(&pin, path, ".xmd")) ||
        !(xta = drx_pin_name(&pin, path, ".xta")))
        rc = drx_err_set(err, ENOMEM, "out of memory");
    else
        rc = remove_pinned(path, xmd, xta, err);
    drx_pin_close(&pin);
    free(xmd);
    free(xta);
    return rc;
}

const struct drx_array_meta *drx_array_meta(const struct drx_array *a)
{
    return &a->meta;
}

const char *drx_array_path(const struct drx_array *a)
{
    return a->path;
}

int drx_array_xta_fd(const struct drx_array *a)
{
    return a->xta_fd;
}

int drx_array_xmd_fd(const struct drx_array *a)
{
    return a->xmd_fd;
}

const char *drx_array_own_file(const struct drx_array *a, int fd)
{
    struct stat st, own;
    if (fstat(fd, &st) < 0)
        return NULL;
    if (fstat(a->xta_fd, &own) == 0 && own.st_ino == st.st_ino && own.st_dev == st.st_dev)
        return ".xta";
    if (stat(a->xmd_at, &own) == 0 && own.st_ino == st.st_ino && own.st_dev == st.st_dev)
        return ".xmd";
    return NULL;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the .xmd again in full and holds it open: the handle's metadata,
 * or an error with the handle as it was.  Only growth is possible: chunk
 * shape and type never change, so cached chunks stay valid; anything else
 * is another array under the same name (ESTALE), and so is a .xmd whose
 * name no longer leads to the handle's .xta (pair_intact). */
int drx_array_reread(struct drx_array *a, struct drx_err *err)
{
    struct drx_array_meta fresh;
    struct drx_xmd_pos pos;
    int fd, rc;

    for (int tries = 1;; tries++) {
        rc = drx_xmd_read(a->xmd_at, &fresh, &pos, &fd, a->meta_only, err);
        if (rc)
            return rc;
        if (a->xta_fd < 0 || pair_intact(a, fd))
            break;
        /* the .xmd replaced as it was read (an attribute written), or
         * another array's under the name now */
        drx_array_meta_fini(&fresh);
        close(fd);
        if (tries == PAIR_TRIES)
            return pair_replaced(a, err);
    }
    if (a->meta.rank &&
        (fresh.type != a->meta.type || fresh.rank != a->meta.rank ||
         memcmp(fresh.chunk, a->meta.chunk, sizeof fresh.chunk))) {
        drx_array_meta_fini(&fresh);
        close(fd);
        return drx_err_set(err, ESTALE, "%s: the array was replaced by a different one",
                           a->xmd_path);
    }
    drx_array_meta_fini(&a->meta);
    a->meta = fresh;
    if (a->xmd_fd >= 0)
        close(a->xmd_fd);
    a->xmd_fd = fd;
    a->xmd_pos = pos;
    a->xmd_st = pos.st;
    return 0;
}

int drx_array_reload(struct drx_array *a, struct drx_err *err)
{
    struct stat st;
    int rc;

    if (lstat(a->xmd_at, &st))
        return drx_err_set(err, errno, "%s: %s", a->xmd_path, strerror(errno));
    if (same_file_state(&st, &a->xmd_st))
        return 0;
    /* The file held open cannot have been replaced by another with its
     * inode number: grown, it holds new growth records only, read from
     * where the last read stopped, whatever the history's length. */
    if (a->xmd_fd >= 0 && st.st_ino == a->xmd_st.st_ino && st.st_dev == a->xmd_st.st_dev) {
        rc = drx_xmd_catch_up(a->xmd_fd, a->xmd_path, (uint64_t)st.st_size, &a->meta,
                              &a->xmd_pos, err);
        if (rc >= 0) {
            a->xmd_st = st;
            return rc > 0;
        }
        if (rc != -ESTALE) {
            /* the next reload reads it all and says what is wrong */
            a->xmd_pos.appendable = false;
            return rc;
        }
    }
    rc = drx_array_reread(a, err);
    return rc < 0 ? rc : 1;
}

void drx_array_locate(const struct drx_array_meta *m, const uint64_t *idx, uint64_t *chunk_idx,
                      uint64_t *q, uint64_t *byte_off)
{
    uint64_t inner = 0;
    for (int i = 0; i < m->rank; i++) {
        chunk_idx[i] = idx[i] / m->chunk[i];
        inner = inner * m->chunk[i] + idx[i] % m->chunk[i];
    }
    *q = drx_map_address(&m->map, chunk_idx);
    *byte_off = *q * m->chunk_bytes + inner * m->elem_size;
}

/* ---- chunk I/O ---- */

static int load_chunk(uint64_t q, void *buf, void *arg)
{
    struct drx_array *a = arg;
    return drx_io_pread_all(a->xta_fd, buf, a->meta.chunk_bytes, q * a->meta.chunk_bytes);
}

/* The cache must never serve bytes older than a write someone else
 * completed (drx put, drx-load, another daemon on this machine).  The
 * kernel queues an inotify event on the .xta before such a write returns,
 * so a read that drains the queue first and finds an event empties the
 * cache.  Draining and emptying happen under one lock: a reader that
 * finds the queue empty because another drained it must not go on before
 * that one has emptied the cache. */
static int watch_start(struct drx_array *a)
{
    char self[64];

    if (__atomic_add_fetch(&watch_count, 1, __ATOMIC_RELAXED) > DRX_ARRAY_WATCH_MAX) {
        __atomic_sub_fetch(&watch_count, 1, __ATOMIC_RELAXED);
        return -EMFILE;
    }
    a->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (a->watch_fd < 0) {
        __atomic_sub_fetch(&watch_count, 1, __ATOMIC_RELAXED);
        return -errno;
    }
    /* the descriptor's own file, whatever happened to its name since */
    snprintf(self, sizeof self, "/proc/self/fd/%d", a->xta_fd);
    if (inotify_add_watch(a->watch_fd, self, IN_MODIFY) < 0) {
        int rc = -errno;
        watch_stop(a);
        return rc;
    }
    return 0;
}

void drx_array_cache_sync(struct drx_array *a)
{
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool changed = false;

    if (!a->cache_serves)
        return;
    pthread_mutex_lock(&a->watch_lock);
    for (;;) {
        ssize_t n = read(a->watch_fd, ev, sizeof ev);
        if (n > 0) {
            changed = true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EAGAIN: drained */
    }
    if (changed)
        drx_cache_clear(a->cache);
    pthread_mutex_unlock(&a->watch_lock);
}

int drx_array_set_cache(struct drx_array *a, size_t bytes)
{
    int rc;

    drx_cache_destroy(a->cache);
    a->cache = NULL;
    a->cache_serves = false;
    /* Whole chunks are cached: one larger than a quarter of the budget
     * would evict everything else, and one larger than a request's span
     * cap would make a small read load (and hold) a giant chunk, so such
     * arrays read only the bytes they need. */
    if (bytes == 0 || a->meta.chunk_bytes > bytes / 4 || a->meta.chunk_bytes > DRX_SPAN_MAX) {
        /* an idle handle keeps its watch, unless others may need it */
        if (__atomic_load_n(&watch_count, __ATOMIC_RELAXED) > DRX_ARRAY_WATCH_MAX / 2)
            watch_stop(a);
        return 0;
    }
    /* The watch lives as long as the handle (tearing an inotify instance
     * down waits for an RCU grace period: milliseconds).  Events queued
     * while there was no cache only empty an empty cache. */
    if (a->watch_fd < 0 && (rc = watch_start(a))) {
        /* once per handle: the daemon sets every array's share again at
         * each open and close of any */
        if (!a->watch_told)
            drx_log(DRX_LOG_INFO, "%s: no chunk cache (cannot watch the .xta: %s)", a->xta_path,
                    rc == -EMFILE ? "watches of this process or its user at their limit"
                                  : strerror(-rc));
        a->watch_told = true;
        return 0;
    }
    a->cache = drx_cache_create(bytes, a->meta.chunk_bytes);
    if (!a->cache)
        return -ENOMEM;
    a->cache_serves = true;
    return 0;
}

bool drx_array_has_cache(const struct drx_array *a)
{
    return a->cache_serves;
}

bool drx_array_chunk_get_loads(const struct drx_array *a, uint64_t len)
{
    return a->cache_serves && 2 * len >= a->meta.chunk_bytes;
}

int drx_array_span_lock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len)
{
    int rc;

    pthread_mutex_lock(&a->chunk_lock[q % DRX_ARRAY_CHUNK_LOCKS]);
    rc = drx_io_lock(a->xta_fd, q * a->meta.chunk_bytes + off, len, 1);
    if (rc)
        pthread_mutex_unlock(&a->chunk_lock[q % DRX_ARRAY_CHUNK_LOCKS]);
    if (rc == -EAGAIN)
        drx_log_ratelimited(
            DRX_LOG_WARNING,
            "%s: chunk %llu locked by another process for %u ms: not written (EAGAIN)", a->xta_path,
            (unsigned long long)q, drx_io_lock_wait_ms());
    return rc;
}

void drx_array_span_unlock(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len)
{
    drx_io_unlock(a->xta_fd, q * a->meta.chunk_bytes + off, len);
    pthread_mutex_unlock(&a->chunk_lock[q % DRX_ARRAY_CHUNK_LOCKS]);
}

int drx_array_chunk_read(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *buf)
{
    if (a->meta_only)
        return -EBADF;
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    return drx_io_pread_all(a->xta_fd, buf, len, q * a->meta.chunk_bytes + off);
}

int drx_array_chunk_get(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len, void *scratch,
                        struct drx_chunk_ref *ref)
{
    int rc = 0;

    ref->entry = NULL;
    if (a->meta_only)
        return -EBADF; /* its addresses (F*) are not known */
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    if (a->cache_serves) {
        /* A span under half the chunk is read alone unless the chunk is
         * cached already: loading the whole chunk would read cold bytes
         * that no request asked for (a row slab needs half of each). */
        bool whole = drx_array_chunk_get_loads(a, len);
        unsigned char *d =
            drx_cache_get(a->cache, q, whole ? load_chunk : NULL, a, &ref->entry, &rc);
        if (d) {
            ref->data = d + off;
            return 0;
        }
        if (rc || whole)
            return rc;
    }
    rc = drx_io_pread_all(a->xta_fd, scratch, len, q * a->meta.chunk_bytes + off);
    ref->data = scratch;
    return rc;
}

void drx_array_chunk_put(struct drx_array *a, struct drx_chunk_ref *ref)
{
    if (ref->entry)
        drx_cache_put(a->cache, ref->entry);
    ref->entry = NULL;
}

int drx_array_reserve_undo(struct drx_array *a, struct drx_reserve *r)
{
    const uint64_t cb = a->meta.chunk_bytes;
    int rc = 0;

    for (size_t i = 0; i < r->n; i++) {
        uint64_t off = r->holes[i].off, end = off + r->holes[i].len;
        while (off < end) {
            uint64_t q = off / cb, in = off - q * cb, len = end - off < cb - in ? end - off : cb - in;
            int e = drx_array_span_lock(a, q, in, len);
            if (e == 0) {
                e = drx_reserve_undo_range(r, off, len);
                drx_array_span_unlock(a, q, in, len);
            }
            if (e && !rc)
                rc = e;
            off += len;
        }
    }
    r->n = 0;
    return rc;
}

int drx_array_reserve(struct drx_array *a, uint64_t q, uint64_t n, struct drx_reserve *r)
{
    if (a->mode != DRX_RDWR || a->meta_only)
        return -EBADF;
    if (q > a->meta.map.nchunks || n > a->meta.map.nchunks - q)
        return -EINVAL;
    return drx_reserve_add(r, q * a->meta.chunk_bytes, n * a->meta.chunk_bytes);
}

int drx_array_chunk_write(struct drx_array *a, uint64_t q, uint64_t off, uint64_t len,
                          const void *buf)
{
    int rc;

    if (a->mode != DRX_RDWR || a->meta_only)
        return -EBADF;
    if (q >= a->meta.map.nchunks || off + len > a->meta.chunk_bytes)
        return -EINVAL;
    rc = drx_io_pwrite_all(a->xta_fd, buf, len, q * a->meta.chunk_bytes + off);
    if (rc == 0 && a->cache)
        drx_cache_update(a->cache, q, off, buf, len);
    return rc;
}
