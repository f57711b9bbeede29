/* The directories drx fsck holds open: see check_anchor_i.h. */
#include "check_anchor_i.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool anchor_add(struct drx_anchors *an, int fd, bool owned, const char *dir)
{
    char *d = strdup(dir); /* first: dir may be an anchor's own */

    if (d && an->n == an->cap) {
        size_t cap = an->cap ? an->cap * 2 : 64;
        struct drx_anchor *a = realloc(an->a, cap * sizeof *a);
        if (a) {
            an->a = a;
            an->cap = cap;
        }
    }
    if (!d || an->n == an->cap) {
        free(d);
        return false;
    }
    an->a[an->n++] = (struct drx_anchor){fd, owned, -1, d};
    return true;
}

bool drx_anchors_add(struct drx_anchors *an, int fd, const char *dir)
{
    return anchor_add(an, fd, false, dir);
}

/* The anchor of path ("/proc/self/fd/FD/NAME"), its NAME in *rest. */
static struct drx_anchor *anchor_of(struct drx_anchors *an, const char *path, const char **rest)
{
    size_t pre = strlen(DRX_ANCHOR_PREFIX);
    char *end;

    if (strncmp(path, DRX_ANCHOR_PREFIX, pre) != 0)
        return NULL;
    long fd = strtol(path + pre, &end, 10);
    if (*end != '/')
        return NULL;
    for (size_t i = an->n; i-- > 0;)
        if (an->a[i].fd == fd) {
            *rest = end + 1;
            return &an->a[i];
        }
    return NULL;
}

void drx_anchors_drop(struct drx_anchors *an, int fd)
{
    for (size_t i = an->n; i-- > 0;)
        if (an->a[i].fd == fd && !an->a[i].owned) {
            free(an->a[i].dir);
            memmove(&an->a[i], &an->a[i + 1], (an->n - i - 1) * sizeof *an->a);
            an->n--;
            return;
        }
}

char *drx_anchors_keep(struct drx_anchors *an, const char *path)
{
    const char *rest;
    struct drx_anchor *a = anchor_of(an, path, &rest);
    char buf[PATH_MAX];
    size_t i = a ? (size_t)(a - an->a) : 0;
    int fd = a ? a->kept : -1;

    if (a && fd < 0 && an->nkept < DRX_ANCHORS_KEPT_MAX &&
        (fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0)) >= 0) {
        if (!anchor_add(an, fd, true, a->dir)) {
            close(fd);
            return NULL;
        }
        an->a[i].kept = fd; /* a may have moved */
        an->nkept++;
    }
    if (fd < 0)
        return NULL;
    snprintf(buf, sizeof buf, DRX_ANCHOR_PREFIX "%d/%s", fd, rest);
    return strdup(buf);
}

const char *drx_anchors_shown(struct drx_anchors *an, const char *path)
{
    const char *rest;
    const struct drx_anchor *a = anchor_of(an, path, &rest);

    if (!a)
        return path;
    char *buf = an->shown[an->nshown++ % 4];
    snprintf(buf, sizeof an->shown[0], "%s/%s", a->dir, rest);
    return buf;
}

void drx_anchors_fini(struct drx_anchors *an)
{
    for (size_t i = 0; i < an->n; i++) {
        if (an->a[i].owned)
            close(an->a[i].fd);
        free(an->a[i].dir);
    }
    free(an->a);
}
