/* The state of one drx fsck (check.c), shared with its parts
 * (check_trim.c). */
#ifndef DRX_CHECK_I_H
#define DRX_CHECK_I_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check_anchor_i.h"
#include "drx/check.h"
#include "drx/store.h"
#include "drx/stripe.h"

struct ref {
    unsigned dir;
    char name[DRX_STRIPE_NAME_MAX + 1];
    char *owner; /* store-relative path of the metafile */
};

/* An .xta with more than one name: settled after the walk, when every
 * name of it in the store is known. */
struct xname {
    dev_t dev;
    ino_t ino;
    bool whole; /* an .xmd beside it */
    char *path; /* through its directory kept open (drx_anchors_keep) */
    char *shown;
};

/* A subfile longer than its metafile's size needs, trimmed (--repair)
 * only after the walk: a subfile another metafile names too is not this
 * one's to cut (a user may write a metafile naming anyone's subfiles). */
struct trim {
    char *rel; /* the metafile's store path, as findings show it */
    unsigned i, dir;
    char name[DRX_STRIPE_NAME_MAX + 1];
    uint64_t want, recorded; /* bytes its metafile's size needs; that size */
    long long size;
};

struct fsck {
    struct drx_store *s;
    bool repair;
    drx_check_fn *report;
    void *arg;
    unsigned problems, repaired;
    bool bad_meta; /* some metafile could not be read: orphans are unsafe to remove */
    bool missed;   /* some directory was not walked: nor are they then */
    /* The store's .drx/ or store.conf is this user's, neither root's nor
     * the caller's: he chose its stripe directories, so only his own files
     * there are removed (drx_fsck_owner_refusal). */
    bool untrusted;
    uid_t owner;
    struct ref *refs;
    size_t nrefs, caprefs;
    struct trim *trims;
    size_t ntrims;
    struct xname *xnames;
    size_t nxnames, capxnames;
    /* ms spent waiting for pending sizes' marks: 10 s in all for the walk
     * (a user's files cannot stall it file by file) */
    unsigned pending_spent_ms;
    struct stat *linked; /* metafiles with several names, checked once */
    size_t nlinked;
    struct drx_anchors an;
};

/* One finding: reported through the caller's function, counted; fixed
 * says whether the repair did its action (NULL: nothing can be done). */
void drx_fsck_finding(struct fsck *k, const char *where, bool fixed, const char *action,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A store path as findings show it (an anchored one as its directory's). */
const char *drx_fsck_rel_of(struct fsck *k, const char *path);
/* Order of struct ref: stripe directory, then name. */
int drx_fsck_ref_cmp(const void *a, const void *b);

/* Why a subfile no metafile seen names may yet be named by one (an
 * unreadable metafile, a directory not walked); NULL when none can. */
const char *drx_fsck_unsure(const struct fsck *k);

/* Why fsck --repair may not remove the file of stat st from a stripe
 * directory (another user's, in a store whose stripe directories a user
 * chose); NULL when it may.  why: room for the reason. */
const char *drx_fsck_owner_refusal(const struct fsck *k, const struct stat *st, char *why,
                                   size_t len);

/* check_trim.c */
/* Subfile i of metafile mp (m), of stat st, is longer than the want bytes
 * its size needs: reported, and with --repair put off to
 * drx_fsck_trims_settle. */
void drx_fsck_subfile_long(struct fsck *k, const char *mp, const struct drx_stripe_meta *m,
                           unsigned i, const struct stat *st, uint64_t want);
/* The trims put off, once every metafile's subfiles are known (refs
 * sorted). */
void drx_fsck_trims_settle(struct fsck *k);
void drx_fsck_trims_free(struct fsck *k);

#endif
