/* libcore-private: the bracket of charge.c around one allocating call. */
#ifndef DRX_CHARGE_I_H
#define DRX_CHARGE_I_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* begin and end bracket one call in one thread, and keep errno. */
struct drx_io_charge {
    bool on;
    uid_t uid;
    gid_t gid;
    uint32_t eff0, eff1;
};
void drx_io_charge_begin(struct drx_io_charge *c);
void drx_io_charge_end(struct drx_io_charge *c);

#endif
