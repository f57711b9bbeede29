/* Views: the KEY=VALUE words of SPEC section 4 and the copy engine between a
 * view of an array and a caller's buffer.
 *
 * Words are parsed without the array (drx_view_spec_add) and resolved
 * against its current bounds (drx_view_resolve), so an open-ended view grows
 * with the array.  Resolution applies the words in order, each relative to
 * the view before it, as nested directories at the mount point do.
 */
#ifndef DRX_VIEW_H
#define DRX_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "drx/array.h"
#include "drx/err.h"
#include "drx/types.h"

enum drx_order { DRX_ORDER_C, DRX_ORDER_F };

#define DRX_VIEW_MAX_WORDS 64

/* One parsed word. */
struct drx_view_word {
    enum { DRX_WORD_SLICE, DRX_WORD_ORDER, DRX_WORD_REP } kind;
    /* DRX_WORD_SLICE: the dimension as a number (dim >= 0) or a name */
    int dim;
    char name[DRX_MAX_DIM_NAME + 1];
    bool single;             /* "I": one index, must be in range */
    bool has_start, has_stop;
    int64_t start, stop, step; /* step > 0 */
    int value;               /* DRX_WORD_ORDER: drx_order; DRX_WORD_REP: drx_rep */
};

struct drx_view_spec {
    int nwords;
    struct drx_view_word word[DRX_VIEW_MAX_WORDS];
    /* the file of the view a path named (drx_view_path_split): "data",
     * "data.npy", "data.nc" or "info"; NULL when none */
    const char *file;
};

/* A resolved view: element v[] of the view is array element
 * origin[d] + v[d] * step[d]; its shape is count[]. */
struct drx_view {
    int rank;
    enum drx_type type;
    enum drx_order order;
    enum drx_rep rep;
    size_t elem_size;
    uint64_t origin[DRX_MAX_RANK];
    uint64_t step[DRX_MAX_RANK];
    uint64_t count[DRX_MAX_RANK];
    uint64_t nelem;
};

void drx_view_spec_init(struct drx_view_spec *s);

/* Parses one word ("dim0=4:8", "time=-3:", "order=F", "rep=external32")
 * and appends it.  -EINVAL with the bad word in err.  Dimension names are
 * checked only at resolve time. */
int drx_view_spec_add(struct drx_view_spec *s, const char *word, struct drx_err *err);

/* Splits path, a store path (a path under a mount already mapped with
 * drx_store_resolve_path), as the daemon walks ARRAY/WORD/WORD/...: the
 * shortest prefix ending at a '/' that is an array (drx_store_classify)
 * names the array, every later component must be a view word, and the last
 * may be `data`, `data.npy` or `info` (a file of the view).  A whole path
 * ending in .xmd or .xta names that array.  Writes the array's path
 * without suffix to array (len bytes) and appends the words to s.
 * Returns 0; -ENOENT with the reason when no prefix is an array (which
 * component is missing, or what the path is instead); -EINVAL/-E2BIG from
 * drx_view_spec_add; -ENOTDIR for a component below a view's file. */
int drx_view_path_split(const char *path, char *array, size_t len, struct drx_view_spec *s,
                        struct drx_err *err);

/* Resolves words against the array's current bounds.  -ENOENT (with the
 * reason) for an unknown dimension or an index out of range. */
int drx_view_resolve(const struct drx_view_spec *s, const struct drx_array_meta *m,
                     struct drx_view *v, struct drx_err *err);

/* When a slice word of s reaches past the end of its dimension (cut there
 * at resolve time, as Python cuts), a note saying so into buf (len
 * bytes), naming the word, the dimension's length and, when the slice is
 * of the whole dimension, the `drx extend ARRAY DIM N` that makes room
 * (array as the user named it): 1.  0 when nothing was cut (buf
 * untouched).  For the size errors of writes, where a cut slice is a
 * puzzle: "the view needs 0 bytes". */
int drx_view_cut_note(const struct drx_view_spec *s, const struct drx_array_meta *m,
                      const char *array, char *buf, size_t len);

/* The whole array, C order, native. */
void drx_view_whole(const struct drx_array_meta *m, struct drx_view *v);

static inline uint64_t drx_view_bytes(const struct drx_view *v)
{
    return v->nelem * v->elem_size;
}

/* Copies bytes [off, off+len) of the view's data (its elements in its order
 * and representation) to or from buf.  Ranges past the end are cut short
 * (read returns fewer bytes; write returns -EFBIG if nothing fits).  Partial
 * elements are merged with the stored bytes.  Each chunk the range needs is
 * read once; memory beyond buf is one chunk.  Returns bytes copied or
 * -errno. */
ssize_t drx_view_read(struct drx_array *a, const struct drx_view *v, uint64_t off, void *buf,
                      size_t len);
ssize_t drx_view_write(struct drx_array *a, const struct drx_view *v, uint64_t off,
                       const void *buf, size_t len);

/* Visits the chunks (by address) that hold elements of the view, in
 * ascending address order, each once (drx_plan streamed: memory does not
 * grow with the number of chunks).  Stops at and returns fn's first
 * non-zero return. */
int drx_view_chunks(const struct drx_array_meta *m, const struct drx_view *v,
                    int (*fn)(uint64_t q, void *arg), void *arg);

/* drx_array_reserve() of every chunk the view touches, adjacent chunks as
 * one range: call before the first drx_view_write of a bulk write so that a
 * full disk fails it before any byte changes (then drx_reserve_undo(r)). */
int drx_view_reserve(struct drx_array *a, const struct drx_view *v, struct drx_reserve *r);

#endif
