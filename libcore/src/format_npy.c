/* The NumPy .npy v1.0 header of a view (see drx/format.h).  As for the
 * netCDF header, one writer counts or writes, so stat learns the size of
 * data.npy without building the header. */
#include "drx/format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *p; /* NULL: count only */
    size_t pos;
};

static void put(struct out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->p)
        memcpy(o->p + o->pos, s, n);
    o->pos += n;
}

int drx_npy_header(const struct drx_view *v, char *buf, size_t *len)
{
    /* NumPy 1.24's _write_array_header: the dict repr with sorted keys,
     * spare spaces for the growth axis (GROWTH_AXIS_MAX_DIGITS = 21), then
     * padding with spaces and a newline to a multiple of 64 bytes.  Matching
     * it byte for byte lets np.save() of a same-shaped array write through
     * the header. */
    struct out o = {buf ? buf + 10 : NULL, 0};
    char num[32];
    size_t hlen, pad;

    put(&o, "{'descr': '");
    put(&o, drx_type_npy_descr(v->type, v->rep));
    put(&o, v->order == DRX_ORDER_F ? "', 'fortran_order': True, 'shape': ("
                                    : "', 'fortran_order': False, 'shape': (");
    for (int d = 0; d < v->rank; d++) {
        snprintf(num, sizeof num, d + 1 < v->rank ? "%" PRIu64 ", " : "%" PRIu64, v->count[d]);
        put(&o, num);
    }
    put(&o, v->rank == 1 ? ",), }" : "), }");
    if (v->rank > 0) {
        int growth = v->order == DRX_ORDER_F ? v->rank - 1 : 0;
        for (int i = snprintf(num, sizeof num, "%" PRIu64, v->count[growth]); i < 21; i++)
            put(&o, " ");
    }
    hlen = o.pos + 1;
    pad = 64 - ((10 + hlen) % 64);
    if (hlen + pad > 65535)
        return -EFBIG;
    if (buf) {
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (char)((hlen + pad) & 0xff);
        buf[9] = (char)((hlen + pad) >> 8);
        memset(buf + 10 + o.pos, ' ', pad);
        buf[10 + hlen + pad - 1] = '\n';
    }
    *len = 10 + hlen + pad;
    return 0;
}
