/* The store checker behind `drx fsck`: walks the store, reports each
 * finding through the caller's function and, asked to, repairs. */
#include "drx/check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_i.h"
#include "drx/array.h"
#include "drx/store.h"
#include "drx/stripe.h"
#include "stripe_i.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* True when metafile st (with other names: a striped file's hard links)
 * was checked under another name already; else remembers it. */
static bool metafile_seen(struct fsck *k, const struct stat *st)
{
    if (st->st_nlink < 2)
        return false;
    for (size_t i = 0; i < k->nlinked; i++)
        if (k->linked[i].st_ino == st->st_ino && k->linked[i].st_dev == st->st_dev)
            return true;
    struct stat *l = realloc(k->linked, (k->nlinked + 1) * sizeof *l);
    if (l) {
        k->linked = l;
        k->linked[k->nlinked++] = *st;
    }
    return false;
}

const char *drx_fsck_rel_of(struct fsck *k, const char *path)
{
    size_t n = strlen(k->s->root);

    path = drx_anchors_shown(&k->an, path);
    if (strncmp(path, k->s->root, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

/* One finding: reported through the caller's function, counted; fixed
 * says whether the repair did its action (NULL: nothing can be done). */
void drx_fsck_finding(struct fsck *k, const char *where, bool fixed, const char *action,
                      const char *fmt, ...)
{
    char what[DRX_ERR_LEN * 2];
    struct drx_check_finding f = {where, what, action, fixed};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    k->report(&f, k->arg);
    k->problems++;
    if (fixed)
        k->repaired++;
}

static void add_ref(struct fsck *k, unsigned dir, const char *name, const char *owner)
{
    if (k->nrefs == k->caprefs) {
        size_t cap = k->caprefs ? k->caprefs * 2 : 64;
        struct ref *r = realloc(k->refs, cap * sizeof *r);
        if (!r)
            return;
        k->refs = r;
        k->caprefs = cap;
    }
    struct ref *r = &k->refs[k->nrefs];
    r->dir = dir;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->owner = strdup(owner);
    if (r->owner)
        k->nrefs++;
}

int drx_fsck_ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir < y->dir ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Another entry under the name of an array or striped file at path (its
 * name, no suffix): the mount shows one of them (drx_store_classify) and
 * hides the other, which no command here made (drx create and the mount
 * refuse a taken name) but anything writing the store directly may.
 * Reported, never repaired: which one to rename is the user's call.
 * array: the name is an array's (else a striped file's). */
static void check_name_shared(struct fsck *k, const char *path, bool array)
{
    char other[PATH_MAX + 8];
    const char *what = NULL;
    struct stat st;

    const char *base = strrchr(path, '/');
    /* a long name's stem has a symlink of its own name, recording the
     * name (drx_store_long_stem): that one is the stem's, not another */
    bool stem = strncmp(base ? base + 1 : path, DRX_STORE_LONG_PREFIX,
                        sizeof DRX_STORE_LONG_PREFIX - 1) == 0;

    if (array && snprintf(other, sizeof other, "%s%s", path, DRX_STRIPE_SUFFIX) > 0 &&
        lstat(other, &st) == 0 && S_ISREG(st.st_mode))
        what = "a striped file";
    else if (lstat(path, &st) == 0 && !(stem && S_ISLNK(st.st_mode)))
        what = S_ISDIR(st.st_mode) ? "a directory" : "a file";
    if (what)
        drx_fsck_finding(k, drx_fsck_rel_of(k, path), false, NULL,
                         "%s and %s share this name: the mount shows the %s and hides the %s "
                         "(rename one)",
                         array ? "an array" : "a striped file", what,
                         array ? "array" : "striped file", what + 2);
}

/* Waits for metafile mp's pending size (drx_stripe_pending_wait) out of
 * the walk's budget of drx_stripe_pending_wait_ms() in all; true when it is
 * still pending. */
static bool pending_wait(struct fsck *k, const char *mp)
{
    unsigned wait_ms = drx_stripe_pending_wait_ms();
    unsigned left = k->pending_spent_ms >= wait_ms ? 0 : wait_ms - k->pending_spent_ms;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool pending = drx_stripe_pending_wait(mp, left) < 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    k->pending_spent_ms += (unsigned)((t1.tv_sec - t0.tv_sec) * 1000 +
                                      (t1.tv_nsec - t0.tv_nsec) / 1000000);
    return pending;
}

static void check_striped(struct fsck *k, const char *mp)
{
    char name[PATH_MAX], sub[PATH_MAX + 80];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    const char *rel = drx_fsck_rel_of(k, mp);
    struct stat st;

    if (lstat(mp, &st) == 0 && metafile_seen(k, &st))
        return; /* its subfiles are counted once, not shared */
    snprintf(name, sizeof name, "%.*s", (int)(strlen(mp) - strlen(DRX_STRIPE_SUFFIX)), mp);
    check_name_shared(k, name, false);
    /* a mount's batched commit records a closed file's size within its
     * interval: waited for, as another mount's lookup waits, so that the
     * bytes it has not recorded yet are not taken for a crash's */
    bool pending = pending_wait(k, mp);
    int rc = drx_stripe_stat(k->s, name, &m, &err);
    if (rc < 0) {
        k->bad_meta = true;
        drx_fsck_finding(k, rel, false, NULL, "unreadable metafile: %s", err.msg);
        return;
    }
    for (unsigned i = 0; i < m.layout.count; i++) {
        add_ref(k, m.sub[i].dir, m.sub[i].name, rel);
        drx_stripe_subfile_path(k->s, &m, i, sub, sizeof sub);
        rc = drx_stripe_subfile_check(k->s, &m, i, &st, &err);
        uint64_t want = drx_stripe_subfile_len(&m.layout, i, m.size);
        if (rc == -ENOENT && want == 0)
            continue; /* not created yet: no byte of the size is there */
        if (rc == -ENOENT) {
            drx_fsck_finding(k, rel, false, NULL,
                             "subfile %u (%s) is missing: its extents read as EIO", i, sub);
            continue;
        }
        if (rc < 0) {
            /* a symlink, not a regular file, a hard link: never touched */
            drx_fsck_finding(k, rel, false, NULL, "%s: its extents read as EIO", err.msg);
            continue;
        }
        if ((uint64_t)st.st_size > want && pending)
            drx_fsck_finding(k, rel, false, NULL,
                             "subfile %u (%s) is %lld bytes, past the %llu the recorded size "
                             "%llu needs, and the size is pending: a process holds its mark "
                             "(a mount's batched commit; fsck waits %g s in all for them)",
                             i, sub, (long long)st.st_size, (unsigned long long)want,
                             (unsigned long long)m.size, drx_stripe_pending_wait_ms() / 1000.0);
        else if ((uint64_t)st.st_size > want)
            drx_fsck_subfile_long(k, mp, &m, i, &st, want);
    }
}

/* A growth record cut short at the end of the .xmd (an extension killed
 * while it appended it): harmless, since readers ignore it and the next
 * extension cuts it off; --repair cuts it under the extend lock. */
static void check_torn_record(struct fsck *k, const char *xmd)
{
    char name[PATH_MAX];
    struct drx_err err = {{0}};
    long long torn;
    int rc;

    snprintf(name, sizeof name, "%.*s", (int)(strlen(xmd) - 4), xmd);
    torn = drx_array_torn_record(name, &err);
    if (torn <= 0)
        return;
    rc = k->repair ? drx_array_cut_torn_record(name, &err) : 0;
    if (rc < 0)
        drx_fsck_finding(
            k, drx_fsck_rel_of(k, xmd), false, NULL,
            "ends in a growth record cut short (%lld bytes: an interrupted extension); "
            "cannot cut it off: %s",
            torn, err.msg);
    else
        drx_fsck_finding(k, drx_fsck_rel_of(k, xmd), rc > 0, "cut it off",
                         "ends in a growth record cut short (%lld bytes: an interrupted extension)",
                         torn);
}

/* Chunks past the metadata's count were written by an extension that
 * never committed (or one still running: drx_array_trim_uncommitted
 * takes its lock). */
static void check_long_xta(struct fsck *k, const char *xmd, const char *xta, long long len,
                           uint64_t committed)
{
    char name[PATH_MAX];
    int trc;

    snprintf(name, sizeof name, "%.*s", (int)(strlen(xmd) - 4), xmd);
    trc = k->repair ? drx_array_trim_uncommitted(name, &committed, &len) : 1;
    if (trc == 0)
        return; /* an extension committed them meanwhile: all is well */
    if (trc == -EWOULDBLOCK)
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), false, NULL,
                         "%lld bytes, longer than its metadata's %llu: an extension holds its lock "
                         "(drx extend running?); not trimmed, run fsck again when it is done",
                         len, (unsigned long long)committed);
    else if (trc < 0)
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), false, NULL,
                         "%lld bytes, longer than its metadata's %llu (uncommitted extension); "
                         "cannot trim it: %s",
                         len, (unsigned long long)committed, strerror(-trc));
    else
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), k->repair, "trim it",
                         "%lld bytes, longer than its metadata's %llu (uncommitted extension)", len,
                         (unsigned long long)committed);
}

static void check_array(struct fsck *k, const char *xmd)
{
    char xta[PATH_MAX];
    struct drx_array_meta meta;
    struct drx_err err = {{0}};
    const char *rel = drx_fsck_rel_of(k, xmd);
    struct stat st;

    snprintf(xta, sizeof xta, "%.*s.xta", (int)(strlen(xmd) - 4), xmd);
    {
        char name[PATH_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(xmd) - 4), xmd);
        check_name_shared(k, name, true);
    }
    memset(&meta, 0, sizeof meta);
    int rc = drx_array_meta_load(xmd, &meta, &err);
    if (rc < 0) {
        drx_fsck_finding(k, rel, false, NULL, "unreadable array metadata: %s", err.msg);
        return;
    }
    uint64_t committed = meta.map.nchunks * meta.chunk_bytes;
    drx_array_meta_fini(&meta);
    check_torn_record(k, xmd);
    if (lstat(xta, &st) < 0) {
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), false, NULL,
                         "missing (the metadata names %llu bytes of chunks)",
                         (unsigned long long)committed);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), false, NULL, "not a regular file");
        return;
    }
    /* Its other names are settled after the walk (check_shared); its
     * length must wait for that: trimming it to this metadata could cut
     * chunks another name's metadata commits. */
    if (st.st_nlink > 1)
        return;
    if (lstat(xmd, &st) == 0 && st.st_nlink > 1) {
        /* Harmless alone (an extension replaces the .xmd by rename), but
         * the names must not share anything. */
        char name[PATH_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(xmd) - 4), xmd);
        int urc = k->repair ? drx_array_unshare(name, &err) : 0;
        if (urc < 0)
            drx_fsck_finding(k, rel, false, NULL,
                             "metadata file has %ju names; cannot give it its own: %s",
                             (uintmax_t)st.st_nlink, err.msg);
        else
            drx_fsck_finding(k, rel, urc > 0, "give it its own copy", "metadata file has %ju names",
                             (uintmax_t)st.st_nlink);
    }
    if (lstat(xta, &st) < 0)
        return;
    if ((uint64_t)st.st_size > committed)
        check_long_xta(k, xmd, xta, (long long)st.st_size, committed);
    else if ((uint64_t)st.st_size < committed)
        drx_fsck_finding(k, drx_fsck_rel_of(k, xta), false, NULL,
                         "%lld bytes, shorter than its metadata's %llu (chunks lost)",
                         (long long)st.st_size, (unsigned long long)committed);
}

static bool is_stripe_dir(const struct fsck *k, const char *path)
{
    for (size_t i = 0; i < k->s->cfg.stripe.ndirs; i++)
        if (strcmp(k->s->cfg.stripe.dirs[i], path) == 0)
            return true;
    return false;
}

static void add_xname(struct fsck *k, const struct stat *st, const char *path, bool whole)
{
    if (k->nxnames == k->capxnames) {
        size_t cap = k->capxnames ? k->capxnames * 2 : 16;
        struct xname *x = realloc(k->xnames, cap * sizeof *x);
        if (!x)
            return;
        k->xnames = x;
        k->capxnames = cap;
    }
    struct xname *x = &k->xnames[k->nxnames];
    *x = (struct xname){.dev = st->st_dev, .ino = st->st_ino, .whole = whole};
    x->shown = strdup(drx_fsck_rel_of(k, path));
    x->path = x->shown ? drx_anchors_keep(&k->an, path) : NULL;
    if (x->path) {
        k->nxnames++;
        return;
    }
    if (x->shown)
        drx_fsck_finding(k, x->shown, false, NULL,
                         "chunk file with several names, not checked: its directory cannot be held "
                         "open (the check holds at most %d)",
                         DRX_ANCHORS_KEPT_MAX);
    free(x->shown);
}

static int xname_cmp(const void *a, const void *b)
{
    const struct xname *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return strcmp(x->shown, y->shown);
}

/* Removes path (through its directory) unless a process holds its lock,
 * or the file `unless` names has come meanwhile.  1 removed, 0 left for
 * that, -1 failed. */
static int remove_unlocked(const char *path, const char *unless)
{
    struct stat st, now;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc = -1;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0) {
        if (flock(fd, LOCK_EX | LOCK_NB) < 0 || (unless && access(unless, F_OK) == 0))
            rc = 0;
        else if (lstat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
            rc = unlink(path) == 0 ? 1 : -1;
    }
    close(fd);
    return rc;
}

/* Removes a chunk file without its .xmd, unless a process holds its lock:
 * a create links the .xta before it writes the .xmd, a rename makes the
 * new .xta a second name of the old, both under that lock (drx rm's lone
 * .xta: array.c).  Nor when the .xmd has come meanwhile. */
static int remove_chunk_file(const char *path)
{
    char xmd[PATH_MAX];

    snprintf(xmd, sizeof xmd, "%.*s.xmd", (int)(strlen(path) - 4), path);
    return remove_unlocked(path, xmd);
}

/* In repair, a chunk file remove_chunk_file left for its lock: said so. */
#define CHUNK_FILE_BUSY                                                                        \
    " (not removed: a process holds its lock, a create or rename of the array under way?)"

/* The names of the group without an .xmd: leftovers of a rename cut
 * short (beside a whole array's name) or orphans. */
static void check_leftover_names(struct fsck *k, const struct xname *g, size_t n,
                                 const struct xname *keeper)
{
    for (size_t i = 0; i < n; i++) {
        if (g[i].whole)
            continue;
        int rm = k->repair ? remove_chunk_file(g[i].path) : -1;
        if (keeper)
            drx_fsck_finding(
                k, drx_fsck_rel_of(k, g[i].path), rm == 1, "remove it",
                "a second name of %s, left by an interrupted rename (no .xmd beside it); "
                "writes to the array are refused until it is gone%s",
                drx_fsck_rel_of(k, keeper->path), rm == 0 ? CHUNK_FILE_BUSY : "");
        else
            drx_fsck_finding(k, drx_fsck_rel_of(k, g[i].path), rm == 1, "remove it",
                             "orphan chunk file: no .xmd beside it nor beside its other names%s",
                             rm == 0 ? CHUNK_FILE_BUSY : "");
    }
}

/* A whole array g[i] of the group whose chunk file still has other names
 * (names: as many as would be left once the leftovers are gone). */
static void check_shared_whole(struct fsck *k, const struct xname *g, size_t n, size_t i,
                               uintmax_t names)
{
    const struct xname *other = NULL; /* another whole array of the group */
    struct drx_err err = {{0}};
    char name[PATH_MAX], what[PATH_MAX + 200];
    int urc;

    for (size_t j = 0; j < n && !other; j++)
        if (j != i && g[j].whole)
            other = &g[j];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(g[i].path) - 4), g[i].path);
    urc = k->repair ? drx_array_unshare(name, &err) : 0;
    if (other)
        snprintf(what, sizeof what,
                 "shares its chunk file with %s (a rename cut short by an older drxfs?)",
                 drx_fsck_rel_of(k, other->path));
    else
        snprintf(what, sizeof what, "its chunk file has %ju names, %ju outside the store", names,
                 names - 1);
    if (urc < 0)
        drx_fsck_finding(k, drx_fsck_rel_of(k, g[i].path), false, NULL,
                         "%s; cannot give it its own: %s", what, err.msg);
    else
        drx_fsck_finding(k, drx_fsck_rel_of(k, g[i].path), urc > 0, "give it its own copy",
                         "%s: writing or extending one would change or cut the other's chunks",
                         what);
}

/* The names of one chunk file g[0..n) (an .xta with more than one link).
 * A name without an .xmd beside a whole array's is what a rename cut short
 * left (drx_array_rename links NEW.xta, renames the .xmd, removes OLD.xta):
 * removed.  Whole arrays that still share a chunk file (an older drxfs's
 * rename, a hard link made by hand) would diverge at their first extension:
 * each but one gets its own copy.  Their lengths are checked last. */
static void check_shared_one(struct fsck *k, const struct xname *g, size_t n)
{
    const struct xname *keeper = NULL;
    size_t nleft = 0;

    for (size_t i = 0; i < n; i++) {
        if (g[i].whole && !keeper)
            keeper = &g[i];
        nleft += !g[i].whole;
    }
    check_leftover_names(k, g, n, keeper);
    for (size_t i = 0; i < n; i++) {
        char xmd[PATH_MAX];
        struct stat st;
        if (!g[i].whole || lstat(g[i].path, &st) < 0)
            continue;
        /* without --repair: what would be left once the leftovers are gone */
        uintmax_t names = (uintmax_t)st.st_nlink - (k->repair ? 0 : nleft);
        if (names > 1)
            check_shared_whole(k, g, n, i, names);
        snprintf(xmd, sizeof xmd, "%.*s.xmd", (int)(strlen(g[i].path) - 4), g[i].path);
        if (k->repair)
            check_array(k, xmd);
    }
}

static void check_shared(struct fsck *k)
{
    if (k->nxnames)
        qsort(k->xnames, k->nxnames, sizeof *k->xnames, xname_cmp);
    for (size_t i = 0, j; i < k->nxnames; i = j) {
        for (j = i + 1; j < k->nxnames && k->xnames[j].dev == k->xnames[i].dev &&
                        k->xnames[j].ino == k->xnames[i].ino;
             j++)
            ;
        check_shared_one(k, &k->xnames[i], j - i);
    }
}

/* One regular file of the store, by its name. */
static void check_file(struct fsck *k, const char *path, const char *n, const struct stat *st)
{
    char xmd[PATH_MAX];
    bool whole;

    if (drx_store_name_is_temp(n)) {
        /* an update under way holds its temporary's lock (replace.c) */
        int rm = k->repair ? remove_unlocked(path, NULL) : -1;
        drx_fsck_finding(k, drx_fsck_rel_of(k, path), rm == 1, "remove it",
                         "leftover temporary file of an interrupted update%s",
                         rm == 0 ? " (not removed: a process holds its lock, an update under way?)"
                                 : "");
    } else if (ends_with(n, DRX_STRIPE_SUFFIX)) {
        check_striped(k, path);
    } else if (ends_with(n, ".xmd")) {
        check_array(k, path);
    } else if (ends_with(n, ".xta")) {
        snprintf(xmd, sizeof xmd, "%.*s.xmd", (int)(strlen(path) - 4), path);
        whole = access(xmd, F_OK) == 0;
        if (st->st_nlink > 1) {
            add_xname(k, st, path, whole);
        } else if (!whole) {
            int rm = k->repair ? remove_chunk_file(path) : -1;
            drx_fsck_finding(k, drx_fsck_rel_of(k, path), rm == 1, "remove it",
                             "orphan chunk file: no %s beside it%s", strrchr(xmd, '/') + 1,
                             rm == 0 ? CHUNK_FILE_BUSY : "");
        }
    }
}

/* A long name's symlink (drx/store.h) naming no store file: what a
 * create, rename or unlink cut short left; a stem's store file without
 * its symlink has lost its name (left alone: no name to give it). */
static void check_long(struct fsck *k, const char *path, size_t suffix, const struct stat *st)
{
    char other[PATH_MAX + 8];
    size_t stem = strlen(path) - suffix;

    if (suffix == 0 && S_ISLNK(st->st_mode)) {
        snprintf(other, sizeof other, "%s.xmd", path);
        if (access(other, F_OK) == 0)
            return;
        snprintf(other, sizeof other, "%s" DRX_STRIPE_SUFFIX, path);
        if (access(other, F_OK) == 0)
            return;
        bool fixed = k->repair && unlink(path) == 0;
        drx_fsck_finding(k, drx_fsck_rel_of(k, path), fixed, "remove it",
                         "leftover long name of an interrupted create, rename or unlink");
    } else if (S_ISREG(st->st_mode) && suffix > 0 && strcmp(path + stem, ".xta") != 0) {
        snprintf(other, sizeof other, "%.*s", (int)stem, path);
        struct stat ls;
        if (lstat(other, &ls) < 0 || !S_ISLNK(ls.st_mode))
            drx_fsck_finding(k, drx_fsck_rel_of(k, path), false, NULL,
                             "its long name (symlink %s) is missing: not shown at the mount",
                             strrchr(other, '/') + 1);
    }
}

static void walk(struct fsck *k, int dfd, const char *dir, int depth);

/* Entry n of directory dir (shown), held open as dfd. */
static void walk_entry(struct fsck *k, int dfd, const char *dir, const char *n, int depth)
{
    char path[PATH_MAX], shown[PATH_MAX];
    struct stat st;
    size_t suffix;

    /* shown only names the entry in findings: past PATH_MAX (a deep tree
     * below a long store path, which the mount allows) it is cut short,
     * and the entry is still checked through its anchor, path; no stripe
     * directory is that deep */
    bool deep = (size_t)snprintf(shown, sizeof shown, "%s/%s", dir, n) >= sizeof shown;
    if ((size_t)snprintf(path, sizeof path, DRX_ANCHOR_PREFIX "%d/%s", dfd, n) >= sizeof path) {
        k->missed = true;
        drx_fsck_finding(k, drx_fsck_rel_of(k, dir), false, NULL,
                         "entry %s not checked: its path is too long", n);
        return;
    }
    if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        k->missed |= errno != ENOENT; /* ENOENT: gone meanwhile */
        return;
    }
    if (drx_store_name_is_long(n, &suffix))
        check_long(k, path, suffix, &st);
    if (S_ISDIR(st.st_mode) && (deep || !is_stripe_dir(k, shown)))
        walk(k, openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), shown, depth + 1);
    else if (S_ISREG(st.st_mode))
        check_file(k, path, n, &st);
}

/* Walks directory dir (shown so in findings) held open as dfd, which it
 * closes.  Every entry is reached through dfd, never by a path from the
 * root: see check_anchor_i.h. */
static void walk(struct fsck *k, int dfd, const char *dir, int depth)
{
    DIR *d = NULL;
    struct dirent *e;

    if (depth > 256 || dfd < 0 || !(d = fdopendir(dfd)) || !drx_anchors_add(&k->an, dfd, dir)) {
        int why = depth > 256 ? 0 : errno;
        /* a metafile there may name any subfile: none is removed or cut */
        k->missed = true;
        drx_fsck_finding(k, drx_fsck_rel_of(k, dir), false, NULL, "cannot read directory: %s",
                         why ? strerror(why) : "too deep");
        if (d || dfd >= 0)
            d ? closedir(d) : close(dfd);
        return;
    }
    bool at_root = strcmp(dir, k->s->root) == 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            !(at_root && strcmp(e->d_name, DRX_STORE_DIR) == 0))
            walk_entry(k, dfd, dir, e->d_name, depth);
    drx_anchors_drop(&k->an, dfd);
    closedir(d);
}

/* A subfile name as drx makes them: 16 hex digits, '.', subfile number. */
static bool our_subfile_name(const char *n)
{
    size_t i;
    for (i = 0; i < 16; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    if (n[i++] != '.' || !n[i])
        return false;
    for (; n[i]; i++)
        if (n[i] < '0' || n[i] > '9')
            return false;
    return true;
}

/* Two metafiles naming one subfile: writing one changes the other. */
static void check_shared_refs(struct fsck *k)
{
    if (k->nrefs) /* qsort's base may not be NULL, even for no elements */
        qsort(k->refs, k->nrefs, sizeof *k->refs, drx_fsck_ref_cmp);
    for (size_t i = 1; i < k->nrefs; i++)
        if (drx_fsck_ref_cmp(&k->refs[i - 1], &k->refs[i]) == 0)
            drx_fsck_finding(k, k->refs[i].owner, false, NULL,
                             "shares subfile %s with %s (writing one changes the other)",
                             k->refs[i].name, k->refs[i - 1].owner);
}

/* Entry n of stripe directory di's pool of recycled subfiles (stripe_pool.c):
 * an emptied subfile in a slot, or a claim a taker or a removal was killed
 * holding (the pool's next scan removes it), is the pool's own.  A claim
 * may hold a removed file's bytes (killed before it was emptied); a slot
 * never should. */
static void check_pool_entry(struct fsck *k, size_t di, int pfd, const char *n)
{
    const char *dname = k->s->cfg.stripe.dirs[di];
    char where[PATH_MAX + 300];
    struct stat st;

    snprintf(where, sizeof where, "%s/" DRX_STRIPE_POOL_DIR "/%s", dname, n);
    bool ours = drx_stripe_pool_slot_name(n) || drx_stripe_pool_claim_name(n);
    if (fstatat(pfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0 || !ours || !S_ISREG(st.st_mode) ||
        st.st_nlink != 1) {
        drx_fsck_finding(k, where, false, NULL,
                         "unknown file in a pool of recycled subfiles (left alone)");
    } else if (st.st_size != 0) {
        char why[128];
        const char *kept = k->repair ? drx_fsck_owner_refusal(k, &st, why, sizeof why) : NULL;
        if (kept) {
            drx_fsck_finding(k, where, false, NULL, "pooled subfile not empty; kept: %s", kept);
            return;
        }
        bool fixed = k->repair && unlinkat(pfd, n, 0) == 0;
        drx_fsck_finding(k, where, fixed, "remove it",
                         drx_stripe_pool_claim_name(n)
                             ? "removed subfile a killed process left on its way into the pool"
                             : "recycled subfile that is not empty");
    }
}

/* The pool of stripe directory di, when it is a directory (anything else
 * by that name is an unknown file).  One the caller may not read (mode
 * 0700, the store owner's: a user's fsck of a root store) is skipped, as
 * what it holds is no user's data. */
static bool check_pool(struct fsck *k, size_t di)
{
    struct dirent *e;
    struct stat st;
    int fd = openat(k->s->dir_fds[di], DRX_STRIPE_POOL_DIR,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return fd < 0 && errno == EACCES &&
               fstatat(k->s->dir_fds[di], DRX_STRIPE_POOL_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode);
    }
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            check_pool_entry(k, di, dirfd(d), e->d_name);
    closedir(d);
    return true;
}

/* Entry n of stripe directory di that no metafile names. */
static void check_stripe_entry(struct fsck *k, size_t di, const char *n)
{
    const char *dname = k->s->cfg.stripe.dirs[di];
    char where[PATH_MAX + 300], why[128];
    struct ref key = {.dir = (unsigned)di};
    size_t nl = strlen(n);
    struct stat st;

    if (nl <= DRX_STRIPE_NAME_MAX) {
        memcpy(key.name, n, nl + 1);
        if (k->nrefs && bsearch(&key, k->refs, k->nrefs, sizeof *k->refs, drx_fsck_ref_cmp))
            return;
    }
    if (strcmp(n, DRX_STRIPE_POOL_DIR) == 0 && check_pool(k, di))
        return;
    snprintf(where, sizeof where, "%s/%s", dname, n);
    if (!our_subfile_name(n)) {
        drx_fsck_finding(k, where, false, NULL, "unknown file in a stripe directory (left alone)");
    } else if (drx_fsck_unsure(k)) {
        drx_fsck_finding(k, where, false, NULL, "orphan subfile, kept because %s",
                         drx_fsck_unsure(k));
    } else if (k->repair && fstatat(k->s->dir_fds[di], n, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               drx_fsck_owner_refusal(k, &st, why, sizeof why)) {
        drx_fsck_finding(k, where, false, NULL, "orphan subfile: no metafile names it; kept: %s",
                         why);
    } else {
        bool fixed = k->repair && unlinkat(k->s->dir_fds[di], n, 0) == 0;
        drx_fsck_finding(k, where, fixed, "remove it", "orphan subfile: no metafile names it");
    }
}

static void check_stripe_dir(struct fsck *k, size_t di)
{
    const char *dname = k->s->cfg.stripe.dirs[di];
    struct dirent *e;
    DIR *d;
    int fd;

    if (k->s->dir_fds[di] < 0) {
        drx_fsck_finding(k, dname, false, NULL, "stripe directory %zu is missing or unreadable",
                         di);
        return;
    }
    fd = openat(k->s->dir_fds[di], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        drx_fsck_finding(k, dname, false, NULL, "cannot read stripe directory: %s",
                         strerror(errno));
        return;
    }
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            check_stripe_entry(k, di, e->d_name);
    closedir(d);
}

static void check_stripe_dirs(struct fsck *k)
{
    check_shared_refs(k);
    drx_fsck_trims_settle(k);
    for (size_t di = 0; di < k->s->cfg.stripe.ndirs; di++)
        check_stripe_dir(k, di);
}

/* Directory name of the store (.drx, .drx/hidden), opened beneath its
 * root descriptor without following a symlink at any step (a user's store
 * may make either a symlink to a directory of root's), as a DIR whose
 * descriptor is an anchor shown as the store's path; NULL when there is
 * none. */
static DIR *store_dir_open(struct fsck *k, const char *name, char *shown, size_t len)
{
    snprintf(shown, len, "%s/%s", k->s->root, name);
    int fd = drx_store_entry_open(k->s, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    DIR *d;

    if (fd < 0)
        return NULL;
    if (!(d = fdopendir(fd)) || !drx_anchors_add(&k->an, fd, shown)) {
        d ? closedir(d) : close(fd);
        return NULL;
    }
    return d;
}

static void store_dir_close(struct fsck *k, DIR *d)
{
    drx_anchors_drop(&k->an, dirfd(d));
    closedir(d);
}

/* .drx/ itself: leftover store.conf temporaries. */
static void check_drx_dir(struct fsck *k)
{
    char dir[PATH_MAX + 8], path[PATH_MAX];
    struct dirent *e;
    DIR *d = store_dir_open(k, DRX_STORE_DIR, dir, sizeof dir);

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, ".store.conf.", 12) != 0)
            continue;
        snprintf(path, sizeof path, DRX_ANCHOR_PREFIX "%d/%s", dirfd(d), e->d_name);
        bool fixed = k->repair && unlinkat(dirfd(d), e->d_name, 0) == 0;
        drx_fsck_finding(k, drx_fsck_rel_of(k, path), fixed, "remove it",
                         "leftover temporary file of an interrupted update");
    }
    store_dir_close(k, d);
}

/* One entry of .drx/hidden: a file a drxfs mount removed while it was
 * open, kept until its last close (fs/drxfs/drxfs_hidden.c).  While a
 * mount may hold it, its subfiles are in use; in an idle store it is what
 * a daemon stopped before that close left behind. */
static void check_hidden_entry(struct fsck *k, int dfd, const char *path, bool idle)
{
    char name[PATH_MAX];
    struct drx_err err = {{0}};
    bool striped = ends_with(path, DRX_STRIPE_SUFFIX), fixed = false;

    if (!idle || !k->repair) {
        if (striped)
            check_striped(k, path); /* its subfiles are named */
        if (!idle)
            return;
    } else if (striped) {
        snprintf(name, sizeof name, "%.*s", (int)(strlen(path) - strlen(DRX_STRIPE_SUFFIX)), path);
        fixed = drx_stripe_unlink(k->s, name, &err) == 0;
    } else {
        fixed = unlinkat(dfd, strrchr(path, '/') + 1, 0) == 0;
    }
    drx_fsck_finding(
        k, drx_fsck_rel_of(k, path), fixed, "remove it",
        "file removed while open through a drxfs mount that stopped before its last close");
}

/* .drx/hidden/; idle: no mount holds the store (the repair's lock, or the
 * same lock tried for a check). */
static void check_hidden(struct fsck *k, bool idle)
{
    char dir[PATH_MAX + 16], path[PATH_MAX];
    struct dirent *e;
    DIR *d = store_dir_open(k, DRX_STORE_HIDDEN, dir, sizeof dir);

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, DRX_ANCHOR_PREFIX "%d/%s", dirfd(d), e->d_name);
        check_hidden_entry(k, dirfd(d), path, idle);
    }
    store_dir_close(k, d);
}

/* A repair needs an idle store: a mount's daemon records sizes lazily
 * (bytes past a recorded size may be written data), creates subfiles
 * before metafiles and hides temporaries it is about to rename; a drx-load
 * copy holds a temporary until it commits.  Mounts here are seen in the
 * mount table, the others (another namespace's, a copy) by the store lock,
 * which is held to the end so that none starts meanwhile.  The lock's
 * descriptor, or -errno with a message. */
static int repair_lock(struct drx_store *s, struct drx_err *err)
{
    char mnt[PATH_MAX];
    int lock;

    if (drx_store_mounted(s->root, mnt, sizeof mnt) == 1)
        return drx_err_set(err, EBUSY,
                           "%s is mounted at %s (drxfs): --repair needs an idle store; "
                           "unmount it first",
                           s->root, mnt);
    lock = drx_store_lock(s, true);
    if (lock == -EWOULDBLOCK)
        return drx_err_set(err, EWOULDBLOCK,
                           "%s is in use (a drxfs mount or a drx-load copy holds .drx/): "
                           "--repair needs an idle store; run it when they are done",
                           s->root);
    if (lock < 0)
        return drx_err_set(err, -lock, "%s/.drx: cannot lock: %s", s->root, strerror(-lock));
    return lock;
}

static void fsck_fini(struct fsck *k)
{
    for (size_t i = 0; i < k->nrefs; i++)
        free(k->refs[i].owner);
    free(k->refs);
    drx_fsck_trims_free(k);
    for (size_t i = 0; i < k->nxnames; i++) {
        free(k->xnames[i].path);
        free(k->xnames[i].shown);
    }
    free(k->xnames);
    drx_anchors_fini(&k->an);
    free(k->linked);
}

/* Who chose the store's stripe directories: store.conf names them, any
 * absolute directory, and a user's store (his .drx/, his store.conf) may
 * name another store's.  Root's --repair of it removed every subfile there
 * that the user's metafiles did not name: the other store's data.  Unless
 * both are root's or the caller's, the store is that user's
 * (k->untrusted, k->owner). */
static void store_owner(struct fsck *k)
{
    static const char *const names[] = {DRX_STORE_CONF, DRX_STORE_DIR};
    uid_t me = geteuid();
    struct stat st;

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (fstatat(k->s->root_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != 0 &&
            st.st_uid != me) {
            k->untrusted = true;
            k->owner = st.st_uid;
            return;
        }
}

const char *drx_fsck_unsure(const struct fsck *k)
{
    if (k->bad_meta)
        return "some metafile is unreadable and may name it";
    if (k->missed)
        return "a directory was not walked and a metafile there may name it";
    return NULL;
}

const char *drx_fsck_owner_refusal(const struct fsck *k, const struct stat *st, char *why,
                                   size_t len)
{
    if (!k->untrusted || st->st_uid == k->owner)
        return NULL;
    snprintf(why, len,
             "it belongs to uid %u, and the store's stripe directories were chosen by "
             "uid %u (its .drx/)",
             (unsigned)st->st_uid, (unsigned)k->owner);
    return why;
}

int drx_store_check(struct drx_store *s, bool repair, drx_check_fn *report, void *arg,
                    struct drx_check_result *res, struct drx_err *err)
{
    struct fsck k = {.s = s, .repair = repair, .report = report, .arg = arg};
    int lock = -1;

    memset(res, 0, sizeof *res);
    if (repair && (lock = repair_lock(s, err)) < 0)
        return lock;
    store_owner(&k);
    walk(&k, open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), s->root, 0);
    check_shared(&k);
    check_drx_dir(&k);
    if (lock >= 0) {
        check_hidden(&k, true);
    } else {
        int probe = drx_store_lock(s, true);
        check_hidden(&k, probe >= 0);
        if (probe >= 0)
            close(probe);
    }
    check_stripe_dirs(&k);
    res->problems = k.problems;
    res->repaired = k.repaired;
    fsck_fini(&k);
    if (lock >= 0)
        close(lock);
    return 0;
}
