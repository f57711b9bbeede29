/* Which arrays may be a coordinate variable of another: the one rule that
 * data.nc and zarr/ (their reads and zarr's writes) apply.
 *
 * A 1-D array named like a dimension, beside an array, goes into that
 * array's data.nc and zarr/ with its elements and attributes.  Two users
 * meet there in a directory where both make arrays (a 1777 one, /tmp):
 *
 * - Its owner may have closed it (mode 600): user nobody's array there
 *   with a dimension of its name showed him its elements and attributes
 *   through his own data.nc and .zmetadata.  So it is shown only when
 *   everyone its array's files let read may read it as well, by the mode
 *   bits and the array owner's groups.
 *
 * - Anyone may make an array named like another's dimension: user
 *   nobody's 1-D array "time" beside root's array of dimension time became
 *   the time axis of root's data.nc and zarr/ (and of every xarray that
 *   opens them).  So it is taken only when everybody who may change it is
 *   trusted as the array's own writers are: its owner is root, the
 *   array's owner, or (a project group's arrays, made by several of its
 *   members) it is in the array's group, and so are its owner and the
 *   array's (a set-group-ID directory gives its group to anyone's files);
 *   and no one else may write it: not others, not a group other than the
 *   array's, and no user or group its POSIX ACL names.
 *
 * The ACL (system.posix_acl_access) is read as the kernel gives it: its
 * group-class bits in the mode are the ACL's mask, the owning group's own
 * permission is in the ACL.  The array's readers are taken from its mode
 * bits; when its ACL names a user or group who may read it (the mount
 * lets him in: drxfs_acl.c), the coordinate must be readable by others. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drxfs_i.h"

/* Whether user uid is in group gid, as his primary group or another;
 * false when it cannot be told (an unknown user, over 256 groups). */
static bool user_in_group(uid_t uid, gid_t gid)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    gid_t groups[256];
    int n = 256;

    if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
        return false;
    if (pw.pw_gid == gid)
        return true;
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
        return false;
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    return false;
}

/* Whether user uid has an entry in the user database (for his groups). */
static bool user_known(uid_t uid)
{
    struct passwd pw, *res = NULL;
    char buf[4096];

    return getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res;
}

/* Whether every user whom the read bits of ref allow may read c: its
 * owner (root reads all), and its group's members when they may.  (A c
 * that others may read but its group may not keeps its group's members
 * out: a member is judged by the group bits, as the kernel does.) */
static bool read_covers(const struct stat *ref, const struct stat *c)
{
    bool owner;

    if ((c->st_mode & S_IROTH) && (c->st_mode & S_IRGRP))
        return true;
    if (ref->st_mode & S_IROTH)
        return false;
    if ((ref->st_mode & S_IRGRP) && !(c->st_gid == ref->st_gid && (c->st_mode & S_IRGRP)))
        return false;
    if (ref->st_uid == 0)
        owner = true;
    else if (c->st_uid == ref->st_uid)
        owner = c->st_mode & S_IRUSR;
    else /* a project group's arrays, made by several of its members */
        owner = (c->st_mode & S_IRGRP) && user_in_group(ref->st_uid, c->st_gid);
    return owner;
}

/* A POSIX ACL in xattr form (linux/posix_acl_xattr.h): a version 2
 * header, then entries of tag, perm (16 bits each) and id (32 bits),
 * little-endian. */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_USER 0x02
#define ACL_TAG_GROUP 0x08
#define ACL_TAG_MASK 0x10
#define ACL_PERM_READ 4
#define ACL_PERM_WRITE 2

#define ACL_ENTRIES_MAX 511 /* what a page holds, as the kernel asks */

struct acl_sum {
    unsigned group_obj, mask; /* permission bits of these entries */
    bool named_write;         /* a named user or group entry with write */
    bool named_read;          /* ... with read */
    unsigned nnamed;          /* its named user and group entries: */
    struct {
        unsigned tag, perm;
        uint32_t id;
    } named[ACL_ENTRIES_MAX];
};

/* Whether ACL a has the named entry tag id without read (its mask's
 * limit included). */
static bool acl_denies_read(const struct acl_sum *a, unsigned tag, uint32_t id)
{
    for (unsigned i = 0; i < a->nnamed; i++)
        if (a->named[i].tag == tag && a->named[i].id == id)
            return !(a->named[i].perm & a->mask & ACL_PERM_READ);
    return false;
}

static unsigned le16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

/* The ACL of store entry name summed up in *a: 1, 0 when it has none
 * (mode bits alone), -errno when it cannot be read. */
static int acl_sum_read(const char *name, struct acl_sum *a)
{
    unsigned char buf[4 + 8 * ACL_ENTRIES_MAX];
    struct drx_xattr_req r = {DRX_XATTR_GET, ACL_XATTR, buf, sizeof buf, 0};
    ssize_t n = drx_store_entry_xattr(drxfs.store, name, &r);

    if (n == -ENODATA || n == -EOPNOTSUPP)
        return 0;
    if (n < 0)
        return (int)n;
    if (n < 4 || (n - 4) % 8 != 0 || le16(buf) != 2)
        return -EIO;
    a->group_obj = 0;
    a->mask = 07;
    a->named_write = a->named_read = false;
    a->nnamed = 0;
    for (ssize_t off = 4; off < n; off += 8) {
        unsigned tag = le16(buf + off), perm = le16(buf + off + 2);
        if (tag == ACL_TAG_GROUP_OBJ)
            a->group_obj = perm;
        else if (tag == ACL_TAG_MASK)
            a->mask = perm;
        else if ((tag == ACL_TAG_USER || tag == ACL_TAG_GROUP) && a->nnamed < ACL_ENTRIES_MAX) {
            a->named_write |= (perm & ACL_PERM_WRITE) != 0;
            a->named_read |= (perm & ACL_PERM_READ) != 0;
            a->named[a->nnamed].tag = tag;
            a->named[a->nnamed].perm = perm;
            a->named[a->nnamed].id = (uint32_t)le16(buf + off + 4) | (uint32_t)le16(buf + off + 6) << 16;
            a->nnamed++;
        }
    }
    /* the mask limits every named entry */
    if (!(a->mask & ACL_PERM_WRITE))
        a->named_write = false;
    if (!(a->mask & ACL_PERM_READ))
        a->named_read = false;
    return 1;
}

/* st's group bits made the owning group's own, as its ACL a gives them
 * (the mode's are the mask). */
static void acl_group_bits(struct stat *st, const struct acl_sum *a)
{
    unsigned g = a->group_obj & a->mask;

    st->st_mode &= ~(mode_t)(S_IRGRP | S_IWGRP);
    if (g & ACL_PERM_READ)
        st->st_mode |= S_IRGRP;
    if (g & ACL_PERM_WRITE)
        st->st_mode |= S_IWGRP;
}

/* Why a coordinate file of stat c (group bits its ACL's) may be changed
 * by someone the array (ref: its .xmd) does not trust, or NULL. */
static const char *write_refusal(const struct stat *ref, const struct stat *c, bool named_write)
{
    /* both owners members: a set-group-ID directory that others may write
     * gives its group to everyone's new files, member or not */
    bool project = c->st_gid == ref->st_gid && user_in_group(ref->st_uid, c->st_gid) &&
                   user_in_group(c->st_uid, c->st_gid);

    if (c->st_uid != 0 && c->st_uid != ref->st_uid && !project) {
        /* a uid of no user (a store from another system, a container)
         * has no groups to look up: say so, not that it is in none */
        if (c->st_gid == ref->st_gid && (!user_known(c->st_uid) || !user_known(ref->st_uid)))
            return "its owner and the array's must both be in the array's group, and one of "
                   "them has no entry in the user database (getent passwd UID), so its groups "
                   "cannot be looked up";
        return "its owner is neither root nor the array's owner, nor is it in the array's "
               "group";
    }
    if (c->st_mode & S_IWOTH)
        return "other users may write it";
    if ((c->st_mode & S_IWGRP) && !project)
        return "a group other than the array's may write it";
    if (named_write)
        return "its ACL lets other users or groups write it";
    return NULL;
}

/* Why store entry name (a file of the candidate) cannot be trusted as a
 * coordinate file of the array whose .xmd and .xta are ref[2], with ACLs
 * racl[2] (has[i] > 0: racl[i] read; 0: none).  Its values show in the
 * array's data.nc and zarr/, so whoever may read the array must be let
 * read it: by its mode (read_covers), by the array's ACL (a user or group
 * it names reads the array, so everyone must read this), and by its own
 * ACL (a user or group it keeps out must be kept out of the array too). */
static const char *file_refusal(const char *name, const struct stat ref[2],
                                const struct acl_sum racl[2], const int has[2])
{
    struct acl_sum *acl = calloc(1, sizeof *acl);
    const char *why = NULL;
    struct stat c;
    int rc;

    if (!acl)
        return "out of memory";
    if (drx_store_entry_stat(drxfs.store, name, &c) < 0 || !S_ISREG(c.st_mode)) {
        why = "its files cannot be examined";
        goto out;
    }
    if ((rc = acl_sum_read(name, acl)) < 0) {
        why = "its ACL cannot be read";
        goto out;
    }
    if (rc > 0)
        acl_group_bits(&c, acl);
    if ((why = write_refusal(&ref[0], &c, acl->named_write)))
        goto out;
    for (int i = 0; i < 2; i++)
        if (!read_covers(&ref[i], &c)) {
            why = "its mode lets fewer users read it";
            goto out;
        }
    for (int i = 0; i < 2; i++)
        if (has[i] > 0 && racl[i].named_read &&
            !((c.st_mode & S_IROTH) && (c.st_mode & S_IRGRP))) {
            why = "the array's ACL lets users or groups read it whom the coordinate's mode does "
                  "not let read it";
            goto out;
        }
    for (unsigned e = 0; rc > 0 && e < acl->nnamed; e++) {
        if (acl->named[e].perm & acl->mask & ACL_PERM_READ)
            continue;
        for (int i = 0; i < 2; i++)
            if (!(has[i] > 0 && acl_denies_read(&racl[i], acl->named[e].tag, acl->named[e].id))) {
                why = "its ACL keeps a user or group from reading it whom the array's ACL does "
                      "not keep out";
                goto out;
            }
    }
out:
    free(acl);
    return why;
}

const char *drxfs_coord_refusal(const char *rel, const char *coord)
{
    static const char *const sfx[2] = {DRXFS_XMD, DRXFS_XTA};
    struct acl_sum *racl = calloc(2, sizeof *racl);
    struct stat ref[2];
    char name[PATH_MAX];
    const char *why = NULL;
    int has[2] = {0, 0};

    if (!racl)
        return "out of memory";
    for (int i = 0; i < 2 && !why; i++) {
        if (drxfs_rel_suffix(name, rel, sfx[i]) < 0 ||
            drx_store_entry_stat(drxfs.store, name, &ref[i]) < 0)
            why = "the array's files cannot be examined";
        else if ((has[i] = acl_sum_read(name, &racl[i])) < 0)
            why = "the array's ACL cannot be read";
    }
    for (int i = 0; i < 2 && !why; i++) {
        if (drxfs_rel_suffix(name, coord, sfx[i]) < 0)
            why = "its name is too long";
        else
            why = file_refusal(name, ref, racl, has);
    }
    free(racl);
    return why;
}
