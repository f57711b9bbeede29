/* Names of striped files: unlink (the subfiles freed with the last name),
 * hard links, rename (the open handles follow), and open files below a
 * renamed directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drxfs_striped_i.h"

int drxfs_striped_unlink(const struct drxfs_node *n)
{
    char path[PATH_MAX + 64];
    struct drx_err err = {{0}};
    int rc, pin;

    if ((rc = store_path(path, n->rel, &pin)) < 0)
        return rc;
    /* in the directory held (pin), checked as the caller's: the kernel
     * checked the node it holds, which a directory swapped behind the
     * mount is not */
    if ((rc = drxfs_caller_dir_may(pin, n->rel, NULL)) < 0) {
        drxfs_unpin(pin);
        return rc;
    }
    if (n->st.st_nlink > 1) {
        /* Other names keep the file: what was written under this one is
         * recorded now, while it can be. */
        struct drxfs_sfile *e = drxfs_sfile_ref_at(n->rel, path);
        if (e && e->rw)
            drxfs_sfile_flush(e);
        if (e)
            drxfs_sfile_put(e);
    }
    struct drxfs_sfile *idle = drxfs_sfile_detach(n->rel, path);
    struct drx_stripe_meta gone;
    rc = drx_stripe_unlink_keep(drxfs.store, path, &gone, &err);
    /* The subfiles after this mount's handle (a file waiting for the
     * batched commit holds them open) is closed: then they can be recycled. */
    drxfs_sfile_forget(idle);
    drx_stripe_subfiles_drop(drxfs.store, &gone);
    drxfs_unpin(pin);
    if (rc < 0)
        return drxfs_striped_log_err("unlink", n->rel, rc, &err);
    drx_store_long_drop(drxfs.store, n->rel);
    return 0;
}

int drxfs_striped_link(const struct drxfs_node *n, const char *to_rel)
{
    char from[PATH_MAX + 64], to[PATH_MAX + 64], stem[PATH_MAX];
    struct drx_err err = {{0}};
    int rc, pin[2] = {-1, -1};

    if ((rc = drx_store_long_new(drxfs.store, to_rel, stem)) < 0)
        return rc;
    if ((rc = store_path(from, n->rel, &pin[0])) < 0)
        return rc;
    /* in the directories held, checked as the caller's (as a plain
     * file's link, drxfs_guard_link): one swapped behind the mount for
     * root's 0700 directory linked root's file into his */
    if ((rc = store_path(to, stem, &pin[1])) == 0 &&
        (rc = drxfs_caller_dir_search(pin[0], n->rel)) == 0 &&
        (rc = drxfs_caller_dir_may(pin[1], stem, NULL)) == 0)
        rc = drx_stripe_link(drxfs.store, from, to, &err);
    drxfs_unpin(pin[0]);
    drxfs_unpin(pin[1]);
    if (rc < 0) {
        drx_store_long_drop(drxfs.store, stem);
        return drxfs_striped_log_err("link", n->rel, rc, &err);
    }
    return 0;
}

/* The open file e is now named to_rel, its path through pin; drops the
 * caller's reference. */
static void sfile_rekey(struct drxfs_sfile *e, const char *to_rel, int pin)
{
    pthread_mutex_lock(&drxfs_stable.mutex);
    int old = e->pin;
    e->pin = pin;
    drxfs_unpin(old);
    char *key = strdup(to_rel);
    if (key && !e->detached) {
        drxfs_sfile_set_key(e, key);
    } else {
        free(key);
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
    drxfs_sfile_put(e);
}

/* The open handle of rel, the file at path, with a reference taken and,
 * with flush, its size recorded; or NULL. */
static struct drxfs_sfile *sfile_take(const char *rel, const char *path, bool flush)
{
    struct drxfs_sfile *e = drxfs_sfile_ref_at(rel, path);
    if (e && e->rw && flush)
        drxfs_sfile_flush(e);
    return e;
}

int drxfs_striped_rename(const struct drxfs_node *src, const struct drxfs_node *dst,
                         const char *to_name)
{
    char from[PATH_MAX + 64], to[PATH_MAX + 64], to_rel[PATH_MAX];
    struct drx_err err = {{0}};
    int rc, pf, pt = -1;

    if ((rc = drx_store_long_new(drxfs.store, to_name, to_rel)) < 0)
        return rc;
    if ((rc = store_path(from, src->rel, &pf)) < 0 || (rc = store_path(to, to_rel, &pt)) < 0 ||
        (rc = drxfs_caller_dir_may(pf, src->rel, NULL)) < 0 ||
        (rc = drxfs_caller_dir_may(pt, to_rel, NULL)) < 0) {
        drxfs_unpin(pt);
        drxfs_unpin(pf);
        drx_store_long_drop(drxfs.store, to_rel);
        return rc;
    }
    /* Over an existing name, a pending size is recorded (with its syncs)
     * under the old name first, as ext4 flushes a file renamed over
     * another: the replacement is durable before it replaces.  To a new
     * name it stays pending: rename_handle below moves it with the file. */
    struct drxfs_sfile *e = sfile_take(src->rel, from, dst != NULL);
    struct drxfs_sfile *replaced = NULL;
    if (dst && dst->kind == DRXFS_STRIPED)
        replaced = drxfs_sfile_detach(to_rel, to);
    /* With an open handle, the rename and its new path happen under the
     * handle's lock: a flush or close on another thread in between would
     * write the size back under the old name (or, finding no metafile
     * there, keep it pending for the new one). */
    if (e)
        rc = drx_stripe_rename_handle(e->f, from, to, 0, &err);
    else
        rc = drx_stripe_rename(drxfs.store, from, to, 0, &err);
    drxfs_unpin(pf);
    drxfs_sfile_forget(replaced);
    if (rc < 0) {
        drxfs_unpin(pt);
        if (e)
            drxfs_sfile_put(e);
        drx_store_long_drop(drxfs.store, to_rel);
        return drxfs_striped_log_err("rename", src->rel, rc, &err);
    }
    if (e)
        sfile_rekey(e, to_rel, pt); /* its path is `to` now */
    else
        drxfs_unpin(pt);
    drx_store_long_drop(drxfs.store, src->rel);
    /* The name was a plain file, special file or symlink: the striped
     * file replaces it (the metafile wins lookups already; remove what it
     * hides). */
    if (dst && dst->kind <= DRXFS_LINK && dst->kind != DRXFS_DIR)
        drx_store_entry_unlink(drxfs.store, dst->rel, 0);
    return 0;
}

/* Points open handle e (no pin) at its new name key. */
static int follow_dir(struct drxfs_sfile *e, const char *key, char *path)
{
    int pin, rc = store_path(path, key, &pin);

    if (rc == 0 && (rc = drx_stripe_set_path(e->f, path)) < 0)
        drxfs_unpin(pin);
    else if (rc == 0)
        e->pin = pin;
    return rc;
}

void drxfs_striped_dir_renamed(const char *from, const char *to)
{
    size_t flen = strlen(from);
    pthread_mutex_lock(&drxfs_stable.mutex);
    for (struct drxfs_sfile *e = drxfs_stable.head; e; e = e->next) {
        if (strncmp(e->key, from, flen) != 0 || e->key[flen] != '/')
            continue;
        char path[PATH_MAX + 64];
        size_t klen = strlen(to) + strlen(e->key + flen) + 1;
        char *key = malloc(klen);
        if (!key) {
            drx_log_ratelimited(DRX_LOG_ERROR, "rename %s: out of memory", e->key);
            continue;
        }
        snprintf(key, klen, "%s%s", to, e->key + flen);
        /* the open handle records its size under the new name (a path
         * through its directory's descriptor follows by itself) */
        if (e->pin < 0 && follow_dir(e, key, path) < 0) {
            drx_log_ratelimited(DRX_LOG_ERROR, "rename %s: cannot follow to %s", e->key, key);
            free(key);
            continue;
        }
        drxfs_sfile_set_key(e, key);
    }
    pthread_mutex_unlock(&drxfs_stable.mutex);
}

void drxfs_sfile_set_key(struct drxfs_sfile *e, char *key)
{
    char **more = realloc(e->retired, (e->nretired + 1) * sizeof(*more));

    if (more) {
        more[e->nretired++] = e->key;
        e->retired = more;
    } /* else the old string is leaked rather than freed under a reader */
    e->key = key;
}

int drxfs_striped_open_meta(const char *path, char *out)
{
    int rc = -ENOENT;

    if (path[0] != '/')
        return rc;
    pthread_mutex_lock(&drxfs_stable.mutex);
    struct drxfs_sfile *e = drxfs_sfile_find(path + 1);
    if (e && !e->detached && e->opens)
        rc = drxfs_rel_suffix(out, e->key, DRXFS_NAFS);
    pthread_mutex_unlock(&drxfs_stable.mutex);
    return rc;
}
