/* Helper of bench_extend.sh: makes an array whose growths alternate between
 * its two dimensions until it has RECORDS axial records (through
 * drx_array_extend, as `drx extend` does, in one process to be quick).
 *
 *   bench_grow ARRAY RECORDS
 */
#include <stdio.h>
#include <stdlib.h>

#include "drx/array.h"

int main(int argc, char **argv)
{
    struct drx_array_spec spec = {.type = DRX_U8, .rank = 2, .shape = {2, 2}, .chunk = {1, 1}};
    struct drx_array *a;
    struct drx_err err;
    size_t want, i = 0;

    if (argc != 3 || (want = strtoul(argv[2], NULL, 10)) < 2) {
        fprintf(stderr, "usage: bench_grow ARRAY RECORDS (>= 2)\n");
        return 2;
    }
    if (drx_array_create(argv[1], &spec, &a, &err) < 0) {
        fprintf(stderr, "bench_grow: %s\n", err.msg);
        return 1;
    }
    while (drx_map_records(&drx_array_meta(a)->map) < want)
        if (drx_array_extend(a, (int)(i++ % 2), 1, &err) < 0) {
            fprintf(stderr, "bench_grow: %s\n", err.msg);
            return 1;
        }
    drx_array_close(a);
    return 0;
}
