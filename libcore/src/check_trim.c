/* drx fsck's trims of subfiles longer than their metafile's recorded size
 * needs.  Bytes past the recorded size are not part of the file (a writer
 * crashed before recording them), so cutting them is safe, but only on
 * the say of the metafile the subfile belongs to: a user may write a
 * metafile naming anyone's subfiles with a smaller size, and root's
 * --repair then cut the victim's data.  A subfile is cut only when it is
 * its metafile's owner's and no other metafile names it, which only the
 * whole walk tells: the walk notes each one, and the trims are done (or
 * refused, saying which metafiles share it) after it, the metafile read
 * again through a path no symlink leads astray. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_i.h"
#include "stripe_i.h"

/* The finding of subfile i (sub) of metafile rel being size bytes where
 * the recorded size needs want; why: why it is not trimmed (NULL: fixed
 * says whether it was). */
static void long_finding(struct fsck *k, const char *rel, const char *sub, unsigned i,
                         long long size, uint64_t want, uint64_t recorded, bool fixed,
                         const char *why)
{
    drx_fsck_finding(k, rel, fixed, why ? NULL : "trim it",
                     "subfile %u (%s) is %lld bytes, longer than the %llu the recorded size "
                     "%llu needs%s%s",
                     i, sub, size, (unsigned long long)want, (unsigned long long)recorded,
                     why ? "; not trimmed: " : "", why ? why : "");
}

/* A trim put off for subfile i of m (of stat st); false: no memory. */
static bool trim_add(struct fsck *k, const char *rel, const struct drx_stripe_meta *m, unsigned i,
                     const struct stat *st, uint64_t want)
{
    struct trim *t = realloc(k->trims, (k->ntrims + 1) * sizeof *t);

    if (!t)
        return false;
    k->trims = t;
    t += k->ntrims;
    *t = (struct trim){.rel = strdup(rel),
                       .i = i,
                       .dir = m->sub[i].dir,
                       .want = want,
                       .recorded = m->size,
                       .size = (long long)st->st_size};
    if (!t->rel)
        return false;
    snprintf(t->name, sizeof t->name, "%s", m->sub[i].name);
    k->ntrims++;
    return true;
}

void drx_fsck_subfile_long(struct fsck *k, const char *mp, const struct drx_stripe_meta *m,
                           unsigned i, const struct stat *st, uint64_t want)
{
    const char *rel = drx_fsck_rel_of(k, mp), *why = NULL;
    char sub[PATH_MAX + 80], owner[96];

    drx_stripe_subfile_path(k->s, m, i, sub, sizeof sub);
    if (m->owned && st->st_uid != m->owner) {
        snprintf(owner, sizeof owner, "it belongs to uid %u, its metafile to uid %u",
                 (unsigned)st->st_uid, (unsigned)m->owner);
        why = owner;
    } else if (k->repair && trim_add(k, rel, m, i, st, want)) {
        return;
    } else if (k->repair) {
        why = "out of memory";
    }
    long_finding(k, rel, sub, i, (long long)st->st_size, want, m->size, false, why);
}

/* Cuts the subfile of t to t->want, its metafile read again: it must
 * still name that subfile with that size, and the subfile (as opened)
 * be its owner's.  NULL when done, else why not. */
static const char *trim_now(struct fsck *k, const struct trim *t)
{
    char rel[PATH_MAX], path[PATH_MAX + 64];
    struct drx_stripe_meta m;
    struct drx_err err = {{0}};
    const char *why = "its metafile changed meanwhile";
    struct stat st;
    int pin = -1, fd = -1;

    snprintf(rel, sizeof rel, "%.*s", (int)(strlen(t->rel) - strlen(DRX_STRIPE_SUFFIX)), t->rel);
    if (drx_store_path_pin(k->s, rel, path, sizeof path, &pin) < 0 ||
        drx_stripe_stat(k->s, path, &m, &err) < 0 || t->i >= m.layout.count ||
        m.sub[t->i].dir != t->dir || strcmp(m.sub[t->i].name, t->name) != 0 ||
        drx_stripe_subfile_len(&m.layout, t->i, m.size) != t->want)
        goto out;
    why = "it does not open";
    if ((fd = drx_stripe_subfile_open(k->s, &m, t->i, O_WRONLY, 0, t->rel)) < 0 ||
        fstat(fd, &st) < 0)
        goto out;
    why = m.owned && st.st_uid != m.owner     ? "it is not its metafile owner's"
          : ftruncate(fd, (off_t)t->want) < 0 ? strerror(errno)
                                              : NULL;
out:
    if (fd >= 0)
        close(fd);
    if (pin >= 0)
        close(pin);
    return why;
}

/* Another metafile than rel naming subfile (dir, name), from the sorted
 * refs; NULL when none. */
static const char *other_namer(const struct fsck *k, unsigned dir, const char *name,
                               const char *rel)
{
    struct ref key = {.dir = dir};
    const struct ref *r;

    snprintf(key.name, sizeof key.name, "%s", name);
    r = k->nrefs ? bsearch(&key, k->refs, k->nrefs, sizeof *k->refs, drx_fsck_ref_cmp) : NULL;
    if (!r)
        return NULL;
    while (r > k->refs && drx_fsck_ref_cmp(r - 1, &key) == 0)
        r--;
    for (; r < k->refs + k->nrefs && drx_fsck_ref_cmp(r, &key) == 0; r++)
        if (strcmp(r->owner, rel) != 0)
            return r->owner;
    return NULL;
}

void drx_fsck_trims_settle(struct fsck *k)
{
    for (size_t j = 0; j < k->ntrims; j++) {
        const struct trim *t = &k->trims[j];
        const char *other = other_namer(k, t->dir, t->name, t->rel), *why = NULL;
        char sub[PATH_MAX + 300], buf[PATH_MAX + 64];

        snprintf(sub, sizeof sub, "%s/%s", k->s->cfg.stripe.dirs[t->dir], t->name);
        if (other) { /* whichever size is right, the bytes stay */
            snprintf(buf, sizeof buf, "metafile %s names it too", other);
            why = buf;
        } else if (!(why = drx_fsck_unsure(k))) {
            why = trim_now(k, t);
        }
        long_finding(k, t->rel, sub, t->i, t->size, t->want, t->recorded, !why, why);
    }
}

void drx_fsck_trims_free(struct fsck *k)
{
    for (size_t i = 0; i < k->ntrims; i++)
        free(k->trims[i].rel);
    free(k->trims);
}
