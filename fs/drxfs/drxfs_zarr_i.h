/* Private parts of the zarr/ group code of the daemon, shared by
 * drxfs_zarr.c (the group, its metadata, reads, listings) and
 * drxfs_zarr_write.c (temporary files, chunk writes by rename, unlink). */
#ifndef DRXFS_ZARR_I_H
#define DRXFS_ZARR_I_H

#include "drx/format.h"
#include "drxfs_i.h"

#define ZMAX (1 + DRX_MAX_RANK)
/* Bytes of a temporary file of the group level (metadata), and of all
 * temporary files together (a single one may still hold a whole chunk). */
#define ZTEMP_META_MAX ((size_t)1 << 20)
#define ZTEMP_TOTAL_MAX ((size_t)512 << 20)
#define ZTEMP_COUNT_MAX 256
/* A temporary no one has open, last written longer ago, is dropped when
 * the pool is full (drop_idle). */
#define ZTEMP_IDLE_S 5
/* A user other than root holds at most this share of both (bytes: one
 * temporary of a larger chunk may reach half the pool): abandoned
 * temporaries stay until unmount, and one user's must leave room for the
 * others' zarr writes. */
#define ZTEMP_USER_SHARE 4
/* A write finding the pool full waits this long at most for other
 * writes' temporaries to give memory back (wait_room). */
#define ZTEMP_WAIT_S 30

enum { ZL_GROUP, ZL_VAR, ZL_FILE };

/* ---- the variables of a group ---- */

struct zsig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
};

struct zctx {
    int nvars;
    struct drxfs_arr *arr[ZMAX];
    struct drxfs_arr *cand[DRX_MAX_RANK]; /* coordinate candidates, not yet locked */
    struct drx_array *a[ZMAX];
    bool locked[ZMAX];
    struct drx_zarr_var var[ZMAX];
    char name[ZMAX][NAME_MAX + 1];
    char dim[DRX_MAX_RANK][DRX_MAX_DIM_NAME + 8];
    struct zsig sig[ZMAX]; /* the .xmd of the array, then of each candidate */
    const char *only;      /* opened for this variable's chunk keys only */
    int nsig;
};

enum zwhat { ZW_GROUP_DIR, ZW_VAR_DIR, ZW_META, ZW_KEY };
struct ztemp;

struct zinfo {
    enum zwhat what;
    int var;    /* index in the zctx, -1 at the group level */
    uint64_t q; /* ZW_KEY: chunk address */
};

struct drxfs_zfile {
    enum zwhat what; /* ZW_META or ZW_KEY; temp when t is set */
    struct ztemp *t;
    struct drxfs_arr *arr; /* ZW_KEY: the variable's array */
    int fd;                /* its .xta */
    uint64_t addr, bytes;  /* the chunk's bytes in the .xta */
    unsigned char fill[DRX_MAX_ELEM];
    size_t es;
    struct stat st; /* at open */
};

/* drxfs_zarr.c */
/* The group of array node n: its handle and its coordinates' handles, each
 * under its read lock until zctx_close.  opening: log at info why a
 * candidate is not a coordinate (else at debug). */
int zctx_open(struct zctx *zc, const struct drxfs_node *n, bool opening);
void zctx_close(struct zctx *zc);
/* Index of variable var in zc, or -1. */
int zctx_find(const struct zctx *zc, const char *var);
/* A metadata document of the group (cached per generation): a malloc'ed
 * copy in *text unless text is NULL, its length in *len; -ENOENT. */
int zdoc_get(const struct zctx *zc, const char *rel, const char *var, const char *file, char **text,
             size_t *len);
bool zarr_is_meta_name(const char *var, const char *file);
/* What node n (not a temporary) is in zc; -ENOENT when nothing. */
int zclassify(const struct drxfs_node *n, const struct zctx *zc, struct zinfo *zi);
int zstat(const struct drxfs_node *n, const struct zctx *zc, const struct zinfo *zi,
          struct stat *st);
/* ARRAY/zarr/[VAR/]NAME, store-relative: a temporary's key, log lines. */
int zkey(const struct drxfs_node *n, const char *var, const char *name, char *out, size_t len);
#define ZKEY_MAX (PATH_MAX + 2 * NAME_MAX + 16)
/* An open file of temporary t (its reference passes to the file). */
int zarr_open_temp(struct ztemp *t, struct fuse_file_info *fi);

/* drxfs_zarr_write.c: temporary files, held in memory by the daemon */
/* The temporary named key, with a reference, or NULL. */
struct ztemp *ztemp_get(const char *key);
void ztemp_put(struct ztemp *t); /* NULL: nothing */
void ztemp_trim(struct ztemp *t); /* at a close (FLUSH): the buffer's slack goes */
bool ztemp_exists(const struct drxfs_node *n, const char *var, const char *name);
void ztemp_stat(struct ztemp *t, struct stat *st);
int ztemp_read(struct ztemp *t, char *buf, size_t size, uint64_t off);
int ztemp_truncate(struct ztemp *t, off_t size);

#endif
