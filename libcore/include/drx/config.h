/* Configuration: built-in defaults, the store's remembered settings, a
 * libconfig file, and command-line options, in that order of precedence
 * (each layer overlays the keys it sets on the previous one).
 *
 *   defaults                    drx_config_defaults()
 *   < STORE/.drx/store.conf     (store.h: drx_store_load_config())
 *   < --config FILE / -o config=FILE   drx_config_load_file()
 *   < command-line options      (the front end edits struct drx_config)
 *
 * File syntax (conf/drxfs.conf documents every key):
 *
 *   stripe = {
 *     dirs   = [ "/disk0/drx", "/disk1/drx" ];  # relative: to the store root
 *     count  = 2;                               # 1..length of dirs
 *     extent = 65536;                           # bytes, 1..DRX_MAX_EXTENT
 *   };
 *   cache    = { bytes = 268435456; };          # 0..DRX_MAX_CACHE_BYTES
 *   prefetch = { enabled = false; min_bytes = 67108864; ranks = 2;
 *                mpiexec = "mpiexec"; };
 *   log      = { level = "info"; };             # error, warning, info, debug
 *
 * Integers may be written plain or with libconfig's L suffix.  An unknown
 * key, a wrong type or an impossible value fails with -EINVAL and a message
 * "FILE:LINE: reason" in err; libconfig syntax errors are reported the same
 * way.  On failure the config is left as it was before the call.
 */
#ifndef DRX_CONFIG_H
#define DRX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drx/err.h"
#include "drx/log.h"

/* Most stripe directories a store may have (and so most subfiles a striped
 * file may have). */
#define DRX_MAX_STRIPE_DIRS 64
/* Largest extent accepted (bytes); also bounds a metafile's extent. */
#define DRX_MAX_EXTENT ((uint64_t)1 << 30)
/* Largest chunk cache accepted (bytes). */
#define DRX_MAX_CACHE_BYTES ((uint64_t)1 << 40)
/* Most MPI ranks prefetch may launch. */
#define DRX_MAX_PREFETCH_RANKS 4096

/* Defaults (SPEC section 8). */
#define DRX_DEFAULT_STRIPE_COUNT 2
#define DRX_DEFAULT_STRIPE_EXTENT 65536
#define DRX_DEFAULT_CACHE_BYTES ((uint64_t)256 << 20)
#define DRX_DEFAULT_PREFETCH_MIN_BYTES ((uint64_t)64 << 20)
#define DRX_DEFAULT_PREFETCH_RANKS 2

struct drx_config {
    struct {
        /* Stripe directories, in order (a metafile names a subfile's
         * directory by its index here).  Each string is malloc'ed and owned
         * by the config.  A relative entry is relative to the store root;
         * drx_store_open() makes them absolute. */
        char **dirs;
        size_t ndirs;
        unsigned count;  /* subfiles of a new file, 1..ndirs */
        uint64_t extent; /* bytes per extent of a new file, 1..DRX_MAX_EXTENT */
    } stripe;
    uint64_t cache_bytes; /* daemon's chunk cache */
    struct {
        bool enabled;
        uint64_t min_bytes; /* reads at least this large trigger a prefetch */
        unsigned ranks;     /* mpiexec -n, 1..DRX_MAX_PREFETCH_RANKS */
        char *mpiexec;      /* program to launch drx-load with; owned */
    } prefetch;
    enum drx_log_level log_level;
};

/* Fills cfg with the built-in defaults: stripe dirs STORE/.drx/stripes/0 and
 * STORE/.drx/stripes/1 (".drx/stripes/0", ".drx/stripes/1" relative to the
 * store root when store_root is NULL), count 2, extent 65536, cache 256 MiB,
 * prefetch off / 64 MiB / 2 ranks / "mpiexec", log level info.  cfg need not
 * be initialised before; release with drx_config_fini().  Returns 0 or
 * -ENOMEM (cfg is then empty but safe to fini). */
int drx_config_defaults(struct drx_config *cfg, const char *store_root);

/* Overlays the keys set in the libconfig file `path` onto cfg (which must
 * hold a complete configuration, e.g. from drx_config_defaults()).  The
 * result is validated as a whole: setting only stripe.count = 3 against two
 * inherited dirs fails, naming the line of count.  Returns 0; -EINVAL with
 * "FILE:LINE: reason" in err; or -errno ("FILE: strerror") when the file
 * cannot be read.  On any failure cfg is unchanged. */
int drx_config_load_file(struct drx_config *cfg, const char *path, struct drx_err *err);

/* Checks a complete config (e.g. after command-line edits): ndirs in
 * 1..DRX_MAX_STRIPE_DIRS, no empty dir, count in 1..ndirs, extent in
 * 1..DRX_MAX_EXTENT, cache and prefetch limits.  0 or -EINVAL with a reason
 * (no line number) in err. */
int drx_config_validate(const struct drx_config *cfg, struct drx_err *err);

/* Deep copy; dst need not be initialised.  0 or -ENOMEM (dst then empty). */
int drx_config_copy(struct drx_config *dst, const struct drx_config *src);

/* Replaces the stripe dirs with copies of dirs[0..n-1].  Does not touch
 * count (validate afterwards).  0 or -ENOMEM (cfg unchanged). */
int drx_config_set_dirs(struct drx_config *cfg, const char *const *dirs, size_t n);

/* Frees what cfg owns and zeroes it.  Safe on a zeroed or finied config. */
void drx_config_fini(struct drx_config *cfg);

/* Parses a byte count for command-line options: a decimal integer with an
 * optional suffix K, M, G, T (powers of 1024; "64K" = 65536).  Returns 0, or
 * -EINVAL for anything else (empty, sign, junk, overflow). */
int drx_config_parse_bytes(const char *text, uint64_t *out);

#endif
