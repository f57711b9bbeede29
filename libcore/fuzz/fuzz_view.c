/* View words as a path at the mount point brings them ("temp/time=-1/
 * lat=2:9:3/order=F/data.npy"): split as drx splits a path, absolute under
 * a store holding the array `a` (time, lat, lon; grown once) and as given,
 * relative to the working directory (names there are only looked at);
 * resolved against `a`, and the view's headers (data.npy, data.nc)
 * formatted.  The same words are also taken one by one, as drx and
 * drx-load take them, without the filesystem. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drx/array.h"
#include "drx/format.h"
#include "drx/view.h"
#include "fuzz.h"

static struct drx_array *arr;
static char root[PATH_MAX];

static void setup(void)
{
    struct drx_array_spec spec = {
        .type = DRX_F64,
        .rank = 3,
        .shape = {10, 7, 5},
        .chunk = {4, 3, 2},
        .dim_name = {"time", "lat", "lon"},
    };
    char path[PATH_MAX];
    struct drx_err err;
    const char *dir = fuzz_dir();

    if (!dir || (size_t)snprintf(root, sizeof root, "%s", dir) >= sizeof root ||
        (size_t)snprintf(path, sizeof path, "%s/a", dir) >= sizeof path ||
        drx_array_create(path, &spec, &arr, &err) < 0 || drx_array_extend(arr, 0, 3, &err) < 0) {
        fprintf(stderr, "fuzz_view: cannot make the array: %s\n", err.msg);
        abort();
    }
}

/* Resolves s against the array and formats the headers of the view. */
static void resolve(const struct drx_view_spec *s)
{
    const struct drx_array_meta *m = drx_array_meta(arr);
    struct drx_view v;
    struct drx_err err;
    unsigned char *buf;
    size_t len;

    if (drx_view_resolve(s, m, &v, &err) < 0)
        return;
    for (int d = 0; d < v.rank; d++)
        if (v.count[d] && v.origin[d] + (v.count[d] - 1) * v.step[d] >= m->bounds[d])
            abort();
    if (drx_npy_header(&v, NULL, &len) == 0 && (buf = malloc(len))) {
        if (drx_npy_header(&v, (char *)buf, &len) < 0)
            abort();
        free(buf);
    }
    if (drx_nc_header(m, &v, "a", NULL, &len) == 0 && (buf = malloc(len))) {
        if (drx_nc_header(m, &v, "a", buf, &len) < 0)
            abort();
        free(buf);
    }
}

/* The words of text, separated by '/', one by one. */
static void words(char *text)
{
    struct drx_view_spec s;
    struct drx_err err;
    char *save = NULL;

    drx_view_spec_init(&s);
    for (char *w = strtok_r(text, "/", &save); w; w = strtok_r(NULL, "/", &save))
        if (drx_view_spec_add(&s, w, &err) < 0)
            return;
    resolve(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size), *path;
    char array[PATH_MAX];
    struct drx_view_spec s;
    struct drx_err err;

    if (!text)
        return 0;
    if (!arr)
        setup();
    if (asprintf(&path, "%s/%s", root, text) >= 0) {
        drx_view_spec_init(&s);
        if (drx_view_path_split(path, array, sizeof array, &s, &err) == 0)
            resolve(&s);
        free(path);
    }
    drx_view_spec_init(&s);
    if (drx_view_path_split(text, array, sizeof array, &s, &err) == 0)
        resolve(&s);
    words(text);
    free(text);
    return 0;
}
