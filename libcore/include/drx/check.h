/* The store checker: what `drx fsck` reports and repairs.
 *
 * It walks a store and reports each finding through the caller's function:
 * orphan, missing and over-long subfiles, subfiles shared by two metafiles,
 * unreadable metadata, .xta files longer or shorter than their metadata,
 * .xta files without .xmd (orphans, or a second name a rename cut short
 * left), arrays sharing files, growth records cut short, and leftover
 * temporary files.  Asked to repair, it removes orphans (only names in the
 * format drx makes, and none while any metafile is unreadable), trims,
 * removes temporaries, cuts records cut short and gives arrays that share
 * files their own copies.
 */
#ifndef DRX_CHECK_H
#define DRX_CHECK_H

#include <stdbool.h>

#include "drx/err.h"
#include "drx/store.h"

struct drx_check_finding {
    const char *where;  /* store-relative path, or a stripe directory's entry */
    const char *what;   /* one line, no newline */
    const char *action; /* what a repair does ("remove it"), or NULL: nothing can */
    bool repaired;      /* the repair did it */
};

typedef void drx_check_fn(const struct drx_check_finding *f, void *arg);

struct drx_check_result {
    unsigned problems, repaired;
};

/* Checks store s, calling report(finding, arg) once per finding, and with
 * repair, repairs what it can.  A repair needs an idle store: a store
 * mounted by drxfs gives -EBUSY, one whose lock another holds (a mount in
 * another namespace, a drx-load copy) -EWOULDBLOCK, each with one line in
 * err and nothing checked; the lock is held to the end.  0 with *res
 * filled (findings are not errors), or -errno. */
int drx_store_check(struct drx_store *s, bool repair, drx_check_fn *report, void *arg,
                    struct drx_check_result *res, struct drx_err *err);

#endif
