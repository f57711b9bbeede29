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
 *   mpiio    = {                               # drx-load only
 *     buffer = 67108864;                       # bytes per rank per round
 *     hints  = { romio_cb_write = "disable"; cb_buffer_size = 16777216; };
 *   };
 *
 * mpiio.hints overlays key by key: a file's hint adds a key or replaces
 * the value of the same key set before; it never removes one.  Hint values
 * are strings; an integer or true/false is taken as its text ("16777216",
 * "true", "false"), since MPI info values are strings and users write
 * numbers plain; any other type is refused.
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
/* Bounds of mpiio.buffer (bytes per rank per round of drx-load).  The top
 * is drx-load's: a round's byte count is an MPI count (int). */
#define DRX_MIN_MPIIO_BUFFER ((uint64_t)1 << 20)
#define DRX_MAX_MPIIO_BUFFER ((uint64_t)1 << 30)
/* Most MPI-IO hints a config may hold, and the longest key and value
 * (characters; within MPICH's MPI_MAX_INFO_KEY 255 / MPI_MAX_INFO_VAL 1024). */
#define DRX_MAX_MPIIO_HINTS 64
#define DRX_MAX_HINT_KEY 127
#define DRX_MAX_HINT_VALUE 1023

/* Defaults (SPEC section 8). */
#define DRX_DEFAULT_STRIPE_COUNT 2
#define DRX_DEFAULT_STRIPE_EXTENT 65536
#define DRX_DEFAULT_CACHE_BYTES ((uint64_t)256 << 20)
#define DRX_DEFAULT_PREFETCH_MIN_BYTES ((uint64_t)64 << 20)
#define DRX_DEFAULT_PREFETCH_RANKS 2
#define DRX_DEFAULT_MPIIO_BUFFER ((uint64_t)64 << 20)

/* One MPI-IO hint (an MPI_Info key and value); both strings owned. */
struct drx_config_hint {
    char *key;   /* [A-Za-z0-9_]+, at most DRX_MAX_HINT_KEY characters */
    char *value; /* non-empty, at most DRX_MAX_HINT_VALUE characters */
};

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
    struct {
        /* Bytes of data per rank per round of drx-load,
         * DRX_MIN_MPIIO_BUFFER..DRX_MAX_MPIIO_BUFFER. */
        uint64_t buffer;
        /* Hints for every file drx-load opens, over drx-load's built-in
         * ones (it applies those first).  Keys are unique; order is the
         * order they were first set.  Owned by the config. */
        struct drx_config_hint *hints;
        size_t nhints; /* 0..DRX_MAX_MPIIO_HINTS */
    } mpiio;
};

/* Fills cfg with the built-in defaults: stripe dirs STORE/.drx/stripes/0 and
 * STORE/.drx/stripes/1 (".drx/stripes/0", ".drx/stripes/1" relative to the
 * store root when store_root is NULL), count 2, extent 65536, cache 256 MiB,
 * prefetch off / 64 MiB / 2 ranks / "mpiexec", log level info, mpiio
 * buffer 64 MiB and no hints (drx-load's built-in hints live in drx-load,
 * beside the measurements that chose them).  cfg need not
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
 * 1..DRX_MAX_EXTENT, cache and prefetch limits, mpiio buffer bounds, hint
 * keys and values well formed, unique and at most DRX_MAX_MPIIO_HINTS.  0 or
 * -EINVAL with a reason (no line number) in err. */
int drx_config_validate(const struct drx_config *cfg, struct drx_err *err);

/* Deep copy; dst need not be initialised.  0 or -ENOMEM (dst then empty). */
int drx_config_copy(struct drx_config *dst, const struct drx_config *src);

/* Replaces the stripe dirs with copies of dirs[0..n-1].  Does not touch
 * count (validate afterwards).  0 or -ENOMEM (cfg unchanged). */
int drx_config_set_dirs(struct drx_config *cfg, const char *const *dirs, size_t n);

/* Sets the MPI-IO hint key to a copy of value: replaces the value of an
 * existing key, else appends.  Returns 0; -EINVAL when key is not
 * [A-Za-z0-9_]+ of at most DRX_MAX_HINT_KEY characters or value is empty or
 * longer than DRX_MAX_HINT_VALUE; -E2BIG when key is new and cfg already
 * holds DRX_MAX_MPIIO_HINTS hints; -ENOMEM.  On failure cfg is unchanged. */
int drx_config_set_hint(struct drx_config *cfg, const char *key, const char *value);

/* Frees what cfg owns and zeroes it.  Safe on a zeroed or finied config. */
void drx_config_fini(struct drx_config *cfg);

/* Parses a byte count for command-line options: a decimal integer with an
 * optional suffix K, M, G, T (powers of 1024; "64K" = 65536).  Returns 0, or
 * -EINVAL for anything else (empty, sign, junk, overflow). */
int drx_config_parse_bytes(const char *text, uint64_t *out);

#endif
