/* The store directories drx fsck holds open (check.c): every path it acts
 * on is "/proc/self/fd/FD/NAME", FD a directory it opened from its parent
 * without following a link, so that a user owning a directory of the
 * store cannot swap it (or one above it) for a symlink between a check
 * and an act and lead root's --repair to remove or trim a file elsewhere.
 * Each anchor remembers the directory's store path, which findings show. */
#ifndef DRX_CHECK_ANCHOR_I_H
#define DRX_CHECK_ANCHOR_I_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define DRX_ANCHOR_PREFIX "/proc/self/fd/"

struct drx_anchor {
    int fd;
    bool owned; /* closed by drx_anchors_fini (else by the walk's DIR) */
    int kept;   /* a walk's: the descriptor drx_anchors_keep keeps of it, or -1 */
    char *dir;
};

struct drx_anchors {
    struct drx_anchor *a;
    size_t n, cap, nkept;
    char shown[4][PATH_MAX * 2]; /* drx_anchors_shown's answers, the last four */
    unsigned nshown;
};

/* Directories drx_anchors_keep keeps open at most: a user's hard links in
 * many directories must not take the descriptors the walk needs. */
#define DRX_ANCHORS_KEPT_MAX 256

/* Adds the walk's directory fd (shown as dir).  false: no memory. */
bool drx_anchors_add(struct drx_anchors *an, int fd, const char *dir);
/* Forgets the walk's directory fd (closed by its DIR). */
void drx_anchors_drop(struct drx_anchors *an, int fd);
/* path (an anchored one) through a descriptor of its directory kept to
 * drx_anchors_fini, malloc'ed; NULL when none can be kept. */
char *drx_anchors_keep(struct drx_anchors *an, const char *path);
/* path as shown: an anchored one as its directory's path and its name
 * (valid until four more calls), any other as it is. */
const char *drx_anchors_shown(struct drx_anchors *an, const char *path);
void drx_anchors_fini(struct drx_anchors *an);

#endif
