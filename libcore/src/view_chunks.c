/* Views, the chunks of a view: visiting them in address order, and
 * reserving their disk space before a write (drx_view_chunks,
 * drx_view_reserve). */
#include "drx/view.h"

#include "array_i.h"
#include "drx/plan.h"

int drx_view_chunks(const struct drx_array_meta *m, const struct drx_view *v,
                    int (*fn)(uint64_t q, void *arg), void *arg)
{
    struct drx_plan *p;
    struct drx_plan_chunk c;
    int rc = drx_plan_create(m, v, &p);

    while (rc == 0 && drx_plan_next(p, &c) == 1)
        rc = fn(c.q, arg);
    drx_plan_destroy(p);
    return rc;
}

struct reserve_run {
    struct drx_array *a;
    struct drx_reserve *r;
    uint64_t q, n; /* the run being gathered: chunks [q, q + n) */
};

static int reserve_visit(uint64_t q, void *arg)
{
    struct reserve_run *r = arg;

    if (r->n && q == r->q + r->n) {
        r->n++;
        return 0;
    }
    int rc = drx_array_reserve(r->a, r->q, r->n, r->r);
    r->q = q;
    r->n = 1;
    return rc;
}

int drx_view_reserve(struct drx_array *a, const struct drx_view *v, struct drx_reserve *res)
{
    struct reserve_run r = {.a = a, .r = res};
    int rc = drx_view_chunks(drx_array_meta(a), v, reserve_visit, &r);

    return rc ? rc : drx_array_reserve(a, r.q, r.n, res);
}
