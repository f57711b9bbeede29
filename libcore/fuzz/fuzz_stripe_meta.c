/* A striped file's metafile (NAME.nafs) as a user may plant it: loaded as
 * drxfs loads it for a store of four stripe directories; when accepted,
 * its size rewritten in place (the full-disk update) must leave a file
 * that loads with the new size and the same layout. */
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "stripe_i.h"

#define NDIRS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[PATH_MAX];
    struct drx_stripe_meta m, again;
    struct drx_err err;
    struct stat st;

    if (fuzz_write("f.nafs", data, size, path, sizeof path) < 0)
        abort();
    if (drx_stripe_meta_load_st(path, NDIRS, &m, &st, &err) < 0)
        return 0;
    if (m.layout.count < 1 || m.layout.count > NDIRS || m.layout.extent < 1)
        abort();
    for (unsigned i = 0; i < m.layout.count; i++)
        if (m.sub[i].dir >= NDIRS)
            abort();
    (void)drx_stripe_meta_padded(path);
    m.size = m.size / 2 + 1;
    if (drx_stripe_meta_size_in_place(path, &st, &m, NDIRS, NULL, false, NULL) < 0)
        return 0;
    if (drx_stripe_meta_load(path, NDIRS, &again, &err) < 0 || again.size != m.size ||
        !drx_stripe_same_layout(&again, &m))
        abort();
    return 0;
}
