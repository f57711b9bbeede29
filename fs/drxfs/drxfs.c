/* drxfs: the FUSE daemon.  Mounts a store and shows arrays as directories
 * with slice views, striped files as regular files, and everything else as
 * it is (SPEC sections 2, 4, 5).
 *
 *   drxfs [-f] [-d] [-s] [-o config=FILE,OPTION...] STORE MOUNTPOINT
 *
 * This file: options, configuration, the store, logging, init/destroy and
 * the operations table.  libfuse's high-level (path) API suits views, whose
 * names are paths resolved afresh on every request.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "drx/config.h"
#include "drx/io.h"
#include "drxfs_i.h"
#include "drxfs_prefetch.h"

/* Page-cache mode everywhere by default (data_io= and the other io
 * options): repeated reads are served by the kernel.  direct_io files keep
 * shared mmap too (drxfs_init_reply.c grants FUSE_DIRECT_IO_ALLOW_MMAP,
 * which libfuse 3.14 cannot ask for) and read cold
 * slabs faster, but every read of them reaches the daemon: second reads at
 * 0.28-0.78 of page-cache mode's speed, so direct_io stays an option
 * (README, Benchmarks).  Reads split on two threads: a whole 1 GiB array
 * by one cat took 0.67 s split, 0.76 s not. */
struct drxfs drxfs = {
    .root_fd = -1,
    .store_lock = -1,
    .mnt_lock = -1,
    .split_reads = true,
    .kernel_cache = true,
    .read_ahead_kb = DRXFS_READ_AHEAD_KB,
    .kcache_paths = DRXFS_KCACHE_PATHS,
    .commit_interval = DRXFS_COMMIT_INTERVAL,
};

/* Worker threads at most (libfuse's own default; see the README for what
 * other values measured). */
#define DRXFS_THREADS "10"

/* Entry timeout (s) when the kernel caches: names removed or renamed
 * behind the mount fail at their next use (attributes are asked again).
 * Attribute timeout: one clock tick (see set_timeouts). */
#define DRXFS_ATTR_TIMEOUT 0.001
#define DRXFS_CACHE_TIMEOUT 1.0


struct drxfs_cli {
    char *config;
    char *log_level;
    char *cache_bytes;
    char *store;
    char *mountpoint;
    int help;
    int version;
    int debug;
    int foreground;
    int ro;
    unsigned timeouts_given;
    int create; /* -o create: make a non-empty directory a store */
    int allow_other;
    int default_permissions;
    unsigned threads_given; /* DRXFS_MAX_THREADS, DRXFS_MAX_IDLE */
    unsigned max_read;
};

enum { DRXFS_MAX_THREADS = 1, DRXFS_MAX_IDLE = 2 };

enum {
    KEY_HELP,
    KEY_VERSION,
    KEY_DEBUG,
    KEY_FOREGROUND,
    KEY_RO,
    KEY_RW,
    KEY_ENTRY_TIMEOUT,
    KEY_ATTR_TIMEOUT,
    KEY_NEGATIVE_TIMEOUT,
    KEY_ALLOW_OTHER,
    KEY_DEFAULT_PERMISSIONS,
    KEY_MAX_READ,
    KEY_THREADS,
    KEY_IDLE_THREADS,
};

#define DRXFS_OPT(t, p)                                                                            \
    {                                                                                              \
        t, offsetof(struct drxfs_cli, p), 1                                                        \
    }

static const struct fuse_opt drxfs_opts[] = {
    DRXFS_OPT("config=%s", config),
    DRXFS_OPT("log_level=%s", log_level),
    DRXFS_OPT("cache_bytes=%s", cache_bytes),
    DRXFS_OPT("create", create),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_KEY("-d", KEY_DEBUG),
    FUSE_OPT_KEY("debug", KEY_DEBUG),
    FUSE_OPT_KEY("-f", KEY_FOREGROUND),
    FUSE_OPT_KEY("ro", KEY_RO),
    FUSE_OPT_KEY("rw", KEY_RW),
    FUSE_OPT_KEY("entry_timeout=", KEY_ENTRY_TIMEOUT),
    FUSE_OPT_KEY("attr_timeout=", KEY_ATTR_TIMEOUT),
    FUSE_OPT_KEY("negative_timeout=", KEY_NEGATIVE_TIMEOUT),
    FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
    FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
    FUSE_OPT_KEY("max_read=", KEY_MAX_READ),
    FUSE_OPT_KEY("max_threads=", KEY_THREADS),
    FUSE_OPT_KEY("max_idle_threads=", KEY_IDLE_THREADS),
    FUSE_OPT_END,
};

/* Each module's own -o NAME=VALUE options (0: taken, -1: a bad value,
 * already said on stderr, 1: not its own). */
static int (*const module_options[])(const char *name, const char *value) = {
    drxfs_array_option,
    drxfs_striped_option,
    drxfs_commit_option,
    drxfs_kc_option,
    drxfs_killpriv_option,
};

/* An option none of drxfs's tables knows: a module's, else libfuse's. */
static int module_option(const char *arg)
{
    const char *eq = strchr(arg, '=');
    char name[64];

    if (!eq || (size_t)(eq - arg) >= sizeof name)
        return 1;
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    for (size_t i = 0; i < sizeof module_options / sizeof module_options[0]; i++) {
        int rc = module_options[i](name, eq + 1);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    struct drxfs_cli *cli = data;
    (void)outargs;

    switch (key) {
    case FUSE_OPT_KEY_OPT:
        return module_option(arg);
    case FUSE_OPT_KEY_NONOPT:
        if (!cli->store) {
            cli->store = strdup(arg);
            return 0;
        }
        if (!cli->mountpoint)
            cli->mountpoint = strdup(arg);
        return 1;
    case KEY_HELP:
        cli->help = 1;
        return 0;
    case KEY_VERSION:
        cli->version = 1;
        return 0;
    case KEY_DEBUG:
        cli->debug = 1;
        cli->foreground = 1;
        return 1;
    case KEY_FOREGROUND:
        cli->foreground = 1;
        return 1;
    case KEY_RO:
        cli->ro = 1;
        return 1;
    case KEY_RW:
        cli->ro = 0;
        return 1;
    case KEY_ENTRY_TIMEOUT:
        cli->timeouts_given |= DRXFS_ENTRY_TO;
        return 1;
    case KEY_ATTR_TIMEOUT:
        cli->timeouts_given |= DRXFS_ATTR_TO;
        return 1;
    case KEY_NEGATIVE_TIMEOUT:
        cli->timeouts_given |= DRXFS_NEGATIVE_TO;
        return 1;
    case KEY_ALLOW_OTHER:
        cli->allow_other = 1;
        return 1;
    case KEY_DEFAULT_PERMISSIONS:
        cli->default_permissions = 1;
        return 1;
    case KEY_THREADS:
        cli->threads_given |= DRXFS_MAX_THREADS;
        return 1;
    case KEY_IDLE_THREADS:
        cli->threads_given |= DRXFS_MAX_IDLE;
        return 1;
    case KEY_MAX_READ: {
        /* libfuse 3.14 aborts the mount when the kernel's max_read and the
         * session's differ; init() copies it into conn->max_read. */
        const char *eq = strchr(arg, '=');
        char *end;
        unsigned long v = strtoul(eq + 1, &end, 10);
        if (*end || v == 0 || v > UINT_MAX) {
            fprintf(stderr, "drxfs: bad option %s\n", arg);
            return -1;
        }
        cli->max_read = (unsigned)v;
        return 1;
    }
    default:
        return 1;
    }
}

/* drxfs's own page, not libfuse's: that one lists modules drxfs has no use
 * for and timeouts with defaults (1 s) that drxfs replaces. */
static void usage(const char *prog)
{
    printf("usage: %s [options] STORE MOUNTPOINT\n"
           "       %s --help | --version\n\n"
           "Shows the drx store STORE at MOUNTPOINT: arrays as directories with slice\n"
           "views (data, data.npy, data.nc, info) and zarr/, striped files as regular\n"
           "files.\n"
           "fstab: STORE MOUNTPOINT fuse.drxfs OPTIONS 0 0 (see drxfs(8)).\n\n"
           "drxfs options (defaults < .drx/store.conf < config file < these):\n"
           "    -o config=FILE         drxfs.conf(5) file (default: none)\n"
           "    -o cache_bytes=BYTES   chunk cache, K/M/G suffix allowed (default %llu)\n"
           "    -o log_level=LEVEL     error, warning, info or debug (default info);\n"
           "                           stderr with -f, else syslog\n"
           "    -o kcache=yes|no       the kernel keeps names, attributes and pages\n"
           "                           while unchanged, told by drxfs what changed\n"
           "                           (default yes; no: timeouts 0, pages dropped\n"
           "                           at every open)\n"
           "    -o data_io=direct|cached     array data files: bypass the page cache or\n"
           "                           use it (default cached: second reads from it;\n"
           "                           shared mmap works either way)\n"
           "    -o npy_io=direct|cached      the same for data.npy and data.nc\n"
           "                           (default cached)\n"
           "    -o striped_io=direct|cached  the same for striped files (default cached)\n"
           "    -o split_reads=yes|no  copy large array reads on two threads (default yes)\n"
           "    -o killpriv=daemon|kernel  who clears set-ID bits and file capabilities\n"
           "                           at writes (default daemon: the kernel then asks\n"
           "                           for security.capability once, not at each write)\n"
           "    -o kcache_paths=N      names the kernel cache records (open files and\n"
           "                           views, zarr/ keys) before it drops them all and\n"
           "                           the kernel asks again (default %u, 64 to %u)\n"
           "    -o read_ahead=KB       the kernel's read-ahead window for the mount (as\n"
           "                           root; 0: the kernel's 128; default %u)\n"
           "    -o commit_interval=S   record striped files' sizes in batches every S\n"
           "                           seconds, after syncing their data, instead of at\n"
           "                           each close (default %u; 0: at each close); fsync\n"
           "                           stays synchronous, unmount and setfattr -n\n"
           "                           user.drx.commit MOUNTPOINT commit at once\n"
           "    -o create              make STORE a store (.drx/) even when it is a\n"
           "                           non-empty directory without one; an empty\n"
           "                           directory becomes a store anyway, a non-empty\n"
           "                           one is refused without this\n\n"
           "FUSE options that apply:\n"
           "    -f                     stay in the foreground\n"
           "    -d, -o debug           foreground, FUSE debug output, log_level=debug\n"
           "    -s                     one thread\n"
           "    -o max_threads=N       worker threads at most (default %s)\n"
           "    -o max_idle_threads=N  idle workers kept (default %s)\n"
           "    -o clone_fd            a /dev/fuse descriptor per thread\n"
           "    -o ro                  read-only mount (writes fail with EROFS)\n"
           "    -o allow_other         let other users in; implies default_permissions\n"
           "                           (added when not given): the kernel checks every\n"
           "                           access against the owners, modes and POSIX ACLs\n"
           "                           of the store\n"
           "    -o default_permissions the kernel checks owners, modes and POSIX ACLs\n"
           "    -o auto_unmount        unmount when drxfs exits\n"
           "    -o entry_timeout=T, attr_timeout=T, negative_timeout=T\n"
           "                           seconds the kernel may cache names, attributes and\n"
           "                           missing names (default 1, 0.001, 0 with kcache=yes,\n"
           "                           else 0 each; drxfs invalidates what changes)\n"
           "    -o max_read=N          largest read request in bytes\n"
           "    -o nosuid, nodev, noexec, noatime, ...  passed to the kernel\n",
           prog, prog, (unsigned long long)DRX_DEFAULT_CACHE_BYTES, DRXFS_KCACHE_PATHS,
           DRXFS_KCACHE_PATHS_MAX, DRXFS_READ_AHEAD_KB,
           DRXFS_COMMIT_INTERVAL, DRXFS_THREADS, DRXFS_THREADS);
}


/* Log sink for a daemon in the background: its stderr is /dev/null. */
static void syslog_sink(void *arg, enum drx_log_level level, const char *msg)
{
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    (void)arg;
    syslog(prio[level <= DRX_LOG_DEBUG ? level : DRX_LOG_DEBUG], "%s", msg);
}

/* The kernel keeps names and pages; drxfs_kcache.c tells it what changed
 * (writes through the mount, inotify on the store) and checks at every
 * open what nothing could tell (another node).  Attributes are kept one
 * clock tick (the kernel rounds DRXFS_ATTR_TIMEOUT up to one): a stat or
 * read(2) after that asks again (auto_inval_data), and the kernel drops a
 * file's pages when its mtime or size changed, so an open file sees what
 * drx put or another node wrote a tick after that is done.  A timeout of 0
 * would make every read(2) ask (the kernel keeps 0 as "expired"), which
 * costs small-block readers (wc, awk) 3-4x.  Missing names are never cached: a
 * name made behind the mount shows at once.  Each timeout the user did not
 * set gets ours, so that giving one does not bring libfuse's defaults back
 * for the others. */
static void set_timeouts(struct fuse_config *cfg)
{
    if (!(drxfs.timeouts_given & DRXFS_ENTRY_TO))
        cfg->entry_timeout = drxfs.kernel_cache ? DRXFS_CACHE_TIMEOUT : 0;
    if (!(drxfs.timeouts_given & DRXFS_ATTR_TO))
        cfg->attr_timeout = drxfs.kernel_cache ? DRXFS_ATTR_TIMEOUT : 0;
    if (!(drxfs.timeouts_given & DRXFS_NEGATIVE_TO))
        cfg->negative_timeout = 0;
}

/* Who a message logged now is about, for the log's rate limits: the
 * caller of the request this thread serves (each user a burst of his
 * own), or -1 in the daemon's own threads. */
static long log_actor(void)
{
    const struct fuse_context *c = fuse_get_context();
    return c && c->fuse ? (long)c->uid : -1;
}

/* Whom the blocks a write allocates are charged to (drx_io_set_charge_fn):
 * the caller of the request this thread serves, unless root; nobody in
 * the daemon's own threads.  A write the kernel sends on its own (a
 * shared mapping's pages written back) comes as root's. */
static bool charge_caller(uid_t *uid, gid_t *gid)
{
    const struct fuse_context *c = fuse_get_context();
    if (!c || !c->fuse || c->uid == 0 || c->uid == (uid_t)-1)
        return false;
    *uid = c->uid;
    *gid = c->gid;
    return true;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    set_timeouts(cfg);
    /* libfuse's request context exists from here to destroy */
    drx_log_set_actor_fn(log_actor);
    /* a root daemon's users write as themselves: root's reserve and their
     * quotas stop them (charge.c) */
    drx_io_set_charge_fn(charge_caller);
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
        conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    /* The caller's umask comes with each create, mkdir and mknod, and we
     * apply it unless the directory has a default ACL, which replaces it
     * (drxfs_new_mode): the kernel would apply it always. */
    if (conn->capable & FUSE_CAP_DONT_MASK)
        conn->want |= FUSE_CAP_DONT_MASK;
    /* Where the kernel checks permissions (default_permissions, which
     * allow_other implies), it checks POSIX ACLs as well as mode bits,
     * asking each node's (drxfs_acl.c): a user the store's ACLs deny is
     * denied here.  Not otherwise: FUSE_POSIX_ACL turns the checks on,
     * and only the mounting user may enter, whose daemon reaches the
     * store with his own rights. */
    if (drxfs.check_perms && (conn->capable & FUSE_CAP_POSIX_ACL))
        conn->want |= FUSE_CAP_POSIX_ACL;
    else if (drxfs.check_perms)
        drx_log(DRX_LOG_WARNING, "the kernel cannot check POSIX ACLs: mode bits only");
    if (drxfs.kernel_cache)
        drxfs_kc_start(fuse_get_context()->fuse);
    drxfs_commit_start(drxfs.commit_interval, drxfs_striped_sync_store);
    /* New metafiles take inodes made ahead (store_fresh.c): here, in the
     * process that serves (after daemonizing), and only when writable. */
    if (!drxfs.ro && drx_store_fresh_start(drxfs.store) < 0)
        drx_log(DRX_LOG_DEBUG, "no inodes made ahead for new files");
    if (!drxfs.ro)
        drxfs_hidden_start();
    /* An open file that is removed (or renamed over) keeps a hidden name
     * until its last close, so that fstat and fchmod on it work as on a
     * local disk: libfuse renames it, drxfs_hidden.c moves it out of its
     * directory (README, "Striped files"). */
    cfg->hard_remove = 0;
    cfg->nullpath_ok = 1;
    /* st_ino is the store's (a striped file's: its metafile's), so that
     * tar, cp -a, rsync -H and du see hard links; array files get one made
     * from their path (drxfs_pass.c). */
    cfg->use_ino = 1;
    if (drxfs.max_read)
        conn->max_read = drxfs.max_read;
    /* Splice reads measured slower here (LIMITS.md). */
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    /* open(O_TRUNC) as an open and then a SETATTR of size 0, whose reply
     * gives the kernel the size: with the atomic form the kernel takes
     * the size to be 0 after the open and asks again later, and a reply
     * it judges stale (any invalidation of the file meanwhile: another
     * view of the array written) leaves it at 0, so reads of a view, whose
     * size O_TRUNC does not change, saw EOF (1081 of 20137 opens beside
     * two writers of other views, 2026-12-07). */
    conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
    if (!drxfs.foreground) {
        openlog("drxfs", LOG_PID, LOG_DAEMON);
        drx_log_set_sink(syslog_sink, NULL);
    }
    drx_log(DRX_LOG_INFO, "mounted %s (max_read %u, max_write %u, max_readahead %u)",
            drxfs.store_path, conn->max_read, conn->max_write, conn->max_readahead);
    drx_log(DRX_LOG_DEBUG,
            "settings: cache.bytes %llu, data %s, data.npy %s, striped files %s, "
            "entry/attr timeouts %g/%g s%s",
            (unsigned long long)drxfs.cache_bytes, drxfs.data_direct_io ? "direct_io" : "cached",
            drxfs.npy_direct_io ? "direct_io" : "cached",
            drxfs.striped_direct_io ? "direct_io" : "cached", cfg->entry_timeout, cfg->attr_timeout,
            drxfs.ro ? ", read-only" : "");
    if (drxfs.implied_default_permissions)
        drx_log(DRX_LOG_INFO, "allow_other without default_permissions: added "
                              "default_permissions, so the kernel checks every access "
                              "against the store's owners, modes and POSIX ACLs");
    return NULL;
}

static void op_destroy(void *private_data)
{
    (void)private_data;
    drxfs_commit_stop();
    drxfs_kc_stop();
    drxfs_array_split_stop();
    drxfs_arr_shutdown();
    drxfs_striped_shutdown();
    drxfs_hidden_shutdown();
    drxfs_prefetch_destroy(drxfs.prefetch);
    drxfs.prefetch = NULL;
    /* the counts of messages the rate limits suppressed (a user opening
     * a refused file in a loop) are owed to the log */
    drx_log_set_actor_fn(NULL);
    drx_io_set_charge_fn(NULL);
    drx_log_limits_flush();
}

/* Names made, removed or renamed through the mount: the type the kernel
 * was told of them is forgotten first, or moved (drxfs_types.c), so that
 * only a change behind the mount is ESTALE. */
static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
    drxfs_type_forget(path);
    return drxfs_op_mknod(path, mode, rdev);
}

static int op_mkdir(const char *path, mode_t mode)
{
    drxfs_type_forget(path);
    return drxfs_op_mkdir(path, mode);
}

static int op_unlink(const char *path)
{
    drxfs_type_forget(path);
    return drxfs_op_unlink(path);
}

static int op_rmdir(const char *path)
{
    drxfs_type_forget(path);
    return drxfs_op_rmdir(path);
}

static int op_symlink(const char *target, const char *path)
{
    drxfs_type_forget(path);
    return drxfs_op_symlink(target, path);
}

static int op_link(const char *from, const char *to)
{
    drxfs_type_forget(to);
    return drxfs_op_link(from, to);
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    drxfs_type_forget(path);
    return drxfs_op_create(path, mode, fi);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
    int rc = drxfs_op_rename(from, to, flags);

    if (rc == 0 && (flags & RENAME_EXCHANGE)) {
        drxfs_type_forget(from);
        drxfs_type_forget(to);
    } else if (rc == 0) {
        drxfs_type_moved(from, to);
    }
    return rc;
}

static const struct fuse_operations drxfs_ops = {
    .getattr = drxfs_op_getattr,
    .access = drxfs_op_access,
    .readlink = drxfs_op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .chmod = drxfs_op_chmod,
    .chown = drxfs_op_chown,
    .truncate = drxfs_op_truncate,
    .open = drxfs_op_open,
    .read = drxfs_op_read,
    .write = drxfs_op_write,
    .statfs = drxfs_op_statfs,
    .flush = drxfs_op_flush,
    .lock = drxfs_op_lock,
    .flock = drxfs_op_flock,
    .release = drxfs_op_release,
    .fsync = drxfs_op_fsync,
    .setxattr = drxfs_op_setxattr,
    .getxattr = drxfs_op_getxattr,
    .listxattr = drxfs_op_listxattr,
    .removexattr = drxfs_op_removexattr,
    .opendir = drxfs_op_opendir,
    .readdir = drxfs_op_readdir,
    .releasedir = drxfs_op_releasedir,
    .fsyncdir = drxfs_op_fsyncdir,
    .init = op_init,
    .destroy = op_destroy,
    .create = op_create,
    .utimens = drxfs_op_utimens,
    .fallocate = drxfs_op_fallocate,
    .lseek = drxfs_op_lseek,
};

/* The configuration in *cfg: defaults < store.conf < -o config=FILE <
 * other -o options, validated.  Complains on stderr. */
static int config_load(const struct drxfs_cli *cli, struct drx_config *cfg)
{
    struct drx_err err = {{0}};
    int rc;

    rc = drx_store_load_config_at(drxfs.root_fd, drxfs.store_path, cli->config, cfg, &err);
    if (rc < 0) {
        fprintf(stderr, "drxfs: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        return rc;
    }
    if (cli->cache_bytes && drx_config_parse_bytes(cli->cache_bytes, &cfg->cache_bytes) < 0) {
        fprintf(stderr, "drxfs: cache_bytes=%s: not a byte count\n", cli->cache_bytes);
        return -EINVAL;
    }
    if (cli->log_level && drx_log_level_parse(cli->log_level, &cfg->log_level) < 0) {
        fprintf(stderr, "drxfs: log_level=%s: expected error, warning, info or debug\n",
                cli->log_level);
        return -EINVAL;
    }
    if (cli->debug)
        cfg->log_level = DRX_LOG_DEBUG;
    if ((rc = drx_config_validate(cfg, &err)) < 0)
        fprintf(stderr, "drxfs: %s\n", err.msg);
    return rc;
}

/* Sets up prefetching through drx-load when the configuration asks. */
static int prefetch_setup(const struct drxfs_cli *cli, const struct drx_config *cfg)
{
    char loader[PATH_MAX];
    int rc;

    if (!cfg->prefetch.enabled)
        return 0;
    drxfs.prefetch = drxfs_prefetch_create(cfg->prefetch.mpiexec, (int)cfg->prefetch.ranks,
                                           drxfs_prefetch_find_loader(loader, sizeof(loader)),
                                           cfg->prefetch.min_bytes);
    if (!drxfs.prefetch) {
        fprintf(stderr, "drxfs: out of memory\n");
        return -ENOMEM;
    }
    if (cli->config && (rc = drxfs_prefetch_set_config(drxfs.prefetch, cli->config)) < 0) {
        fprintf(stderr, "drxfs: %s: %s\n", cli->config, strerror(-rc));
        return rc;
    }
    return 0;
}

/* Makes the store's .drx/ when missing and allowed, then opens the store. */
static int store_init_open(const struct drxfs_cli *cli, const struct drx_config *cfg,
                           const char *abs_root)
{
    struct drx_err err = {{0}};
    int rc;

    /* A store is marked by .drx/; drxfs makes one in an empty directory,
     * and in any other only when asked (SPEC section 2): mounting the wrong
     * directory must not quietly turn it into a store. */
    rc = drx_store_init_at(drxfs.root_fd, abs_root, cfg,
                           DRX_STORE_INIT_KEEP | (cli->create ? 0 : DRX_STORE_INIT_EMPTY_ONLY),
                           &err);
    if (rc == -ENOTEMPTY) {
        fprintf(stderr,
                "drxfs: %s: not a drx store (no .drx/) and not empty; mount it with -o create "
                "to make it one, or run `drx init %s`\n",
                abs_root, abs_root);
        return rc;
    }
    if (rc < 0) {
        fprintf(stderr, "drxfs: %s: %s\n", abs_root, err.msg[0] ? err.msg : strerror(-rc));
        return rc;
    }
    if (rc == 0) {
        drx_log(DRX_LOG_INFO, "%s: made a new store (.drx/)", abs_root);
        drxfs.made_store = true;
    }
    rc = drx_store_open_at(drxfs.root_fd, abs_root, cfg, &drxfs.store, &err);
    if (rc < 0)
        fprintf(stderr, "drxfs: %s: %s\n", abs_root, err.msg[0] ? err.msg : strerror(-rc));
    return rc;
}

/* Loads the configuration (defaults < store.conf < -o config=FILE <
 * other -o options), makes the store's .drx/ when missing and opens it. */
static int open_store(struct drxfs_cli *cli, const char *abs_root)
{
    struct drx_config cfg = {0};
    int rc;

    if ((rc = config_load(cli, &cfg)) < 0)
        goto out;
    drx_log_set_level(cfg.log_level);
    /* A worker waits this long for a lock another process holds (any
     * reader of a file can take one and keep it), then fails the request
     * with EAGAIN: a user's lock never takes the mount's workers. */
    if (!getenv("DRX_LOCK_WAIT_MS"))
        drx_io_set_lock_wait_ms(DRXFS_LOCK_WAIT_MS);
    drxfs.cache_bytes = cfg.cache_bytes;
    if ((rc = prefetch_setup(cli, &cfg)) < 0)
        goto out;
    if ((rc = store_init_open(cli, &cfg, abs_root)) < 0)
        goto out;
    /* Keeps drx fsck --repair off the store while mounted (it waits for a
     * running repair); inherited by the daemon after fuse_daemonize. */
    drxfs.store_lock = drx_store_lock(drxfs.store, false);
    if (drxfs.store_lock == -EWOULDBLOCK) {
        drx_log(DRX_LOG_ERROR,
                "%s: .drx/ locked by another process for %u ms (drx fsck --repair running?): "
                "not mounted; mount again when it is done",
                abs_root, drx_io_lock_wait_ms());
        rc = -EWOULDBLOCK;
    } else if (drxfs.store_lock < 0)
        drx_log(DRX_LOG_WARNING,
                "%s: cannot lock .drx/ (%s): drx fsck --repair will not see "
                "this mount from other namespaces",
                abs_root, strerror(-drxfs.store_lock));
out:
    drx_config_fini(&cfg);
    return rc;
}

int drxfs_opt_choice(const char *name, const char *value, const char *yes, const char *no,
                     bool *out)
{
    if (strcmp(value, yes) == 0)
        *out = true;
    else if (strcmp(value, no) == 0)
        *out = false;
    else {
        fprintf(stderr, "drxfs: %s=%s: expected %s or %s\n", name, value, yes, no);
        return -1;
    }
    return 0;
}

int drxfs_opt_count(const char *name, const char *value, const char *unit, unsigned long max,
                    unsigned *out)
{
    char *end;
    unsigned long v = strtoul(value, &end, 10);

    if (*end || end == value || v > max) {
        fprintf(stderr, "drxfs: %s=%s: expected %s, 0 to %lu\n", name, value, unit, max);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* --help, --version and a missing store: 1 when main is done (*ret set),
 * else 0. */
static int cli_early(const struct drxfs_cli *cli, char *argv[], int *ret)
{
    if (cli->help) {
        usage(argv[0]);
        *ret = 0;
        return 1;
    }
    if (cli->version) {
        printf("drxfs %s\nlibfuse %s\n", DRX_VERSION, fuse_pkgversion());
        *ret = 0;
        return 1;
    }
    if (!cli->store) {
        fprintf(stderr,
                "drxfs: no store given\nusage: %s [options] STORE MOUNTPOINT\n"
                "       %s --help\n",
                argv[0], argv[0]);
        return 1;
    }
    return 0;
}

/* The mount's settings from the command line (the modules set their own
 * while the options are parsed). */
/* The lock file of mount point mp, for the check-and-mount step: in a
 * directory only this user can open (/run/drxfs as root, else
 * $XDG_RUNTIME_DIR/drxfs), named by the point's device and inode.  The
 * point's own directory was locked before, and any user who may read it
 * could flock it and keep every drxfs from mounting there for 30 s (the
 * thirteenth review).  -1 when there is no such directory. */
static int mnt_lock_open(const char *mp)
{
    char dir[PATH_MAX], name[PATH_MAX + 64];
    const char *run = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");
    struct stat st, dst;

    if (!run || !*run || stat(mp, &st) < 0 ||
        (size_t)snprintf(dir, sizeof dir, "%s/drxfs", run) >= sizeof dir)
        return -1;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    /* ours and closed to others, or not used */
    if (fstat(dfd, &dst) < 0 || dst.st_uid != geteuid() || (dst.st_mode & 077)) {
        close(dfd);
        return -1;
    }
    snprintf(name, sizeof name, "mnt-%llx-%llx.lock", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(dfd);
    return fd;
}

static int cli_apply(const struct drxfs_cli *cli)
{
    char src[PATH_MAX];

    /* a mount point that cannot be mounted on fails here, before the
     * store is opened (which may make a directory a new store) */
    if (cli->mountpoint) {
        struct stat st;
        if (!(drxfs.mountpoint = realpath(cli->mountpoint, NULL)) ||
            stat(drxfs.mountpoint, &st) < 0) {
            fprintf(stderr, "drxfs: mount point %s: %s\n", cli->mountpoint, strerror(errno));
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "drxfs: mount point %s: not a directory\n", cli->mountpoint);
            return -1;
        }
    }
    /* FUSE 3 mounts over a mount point in use: a second drxfs on it (a
     * script or notebook run twice) hid the first, whose daemon kept
     * running, and one fusermount3 -u showed it again, still mounted.
     * Two started at once would both find the point free: the check and
     * the mount are one step under an flock of the point's directory,
     * let go once the mount is there (drxfs_run). */
    int lrc = 0;
    if (drxfs.mountpoint && (drxfs.mnt_lock = mnt_lock_open(drxfs.mountpoint)) >= 0)
        lrc = drx_io_flock_for(drxfs.mnt_lock, LOCK_EX, DRXFS_MNT_LOCK_WAIT_MS);
    if (lrc == -EWOULDBLOCK) {
        fprintf(stderr, "drxfs: %s: another drxfs is still being mounted on it\n",
                drxfs.mountpoint);
        return -1;
    }
    /* no lock file (no private runtime directory) or no flock there:
     * the check alone */
    if (lrc < 0)
        drxfs_mnt_unlock();
    if (drxfs.mountpoint && drx_store_mount_at(NULL, drxfs.mountpoint, src, sizeof src) != 0) {
        fprintf(stderr,
                "drxfs: %s: already a drxfs mount (of %s); unmount it first "
                "(fusermount3 -u %s)\n",
                drxfs.mountpoint, src, drxfs.mountpoint);
        return -1;
    }
    /* A mount point below the store's root shows itself inside itself:
     * M/sub/sub/... goes on without end for find and du, and each level
     * is a request the daemon makes of itself, holding a worker meanwhile
     * (deep enough, a user's path holds every worker: the mount hangs).
     * Over the root itself is fine: the daemon works through a descriptor
     * opened before the mount. */
    char *store = cli->store ? realpath(cli->store, NULL) : NULL;
    size_t n = store ? strlen(store) : 0;
    bool inside = store && drxfs.mountpoint && strncmp(drxfs.mountpoint, store, n) == 0 &&
                  (drxfs.mountpoint[n] == '/' || (n == 1 && drxfs.mountpoint[1]));
    if (inside)
        fprintf(stderr, "drxfs: %s is inside the store %s: mount it outside (or over the store)\n",
                drxfs.mountpoint, store);
    free(store);
    if (inside)
        return -1;
    drxfs.ro = cli->ro;
    drxfs.foreground = cli->foreground;
    drxfs.max_read = cli->max_read;
    drxfs.timeouts_given = cli->timeouts_given;
    drxfs.root_euid = geteuid() == 0;
    return 0;
}

/* Opens the store root's descriptor: the mount point may shadow the store
 * path, so everything after goes through it.  *abs_root: its real path. */
static int root_open(const struct drxfs_cli *cli, char **abs_root)
{
    if (!(*abs_root = realpath(cli->store, NULL))) {
        fprintf(stderr, "drxfs: %s: %s\n", cli->store, strerror(errno));
        return -1;
    }
    drxfs.store_path = *abs_root;
    drxfs.root_fd = open(*abs_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (drxfs.root_fd < 0) {
        fprintf(stderr, "drxfs: %s: %s\n", *abs_root, strerror(errno));
        return -1;
    }
    return 0;
}

static void malloc_tune(void)
{
    /* libfuse allocates a reply buffer per read (up to 1 MiB) and the view
     * engine a chunk of scratch per call; above glibc's mmap threshold each
     * would be fresh pages, faulted in and zeroed every time (a fifth of
     * the daemon's time for a 1 GiB cat).  Keep them on the heap. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    /* The kernel hands requests to the worker that waited longest, so a
     * single stream visits every worker in turn; with one arena the buffer
     * one worker frees is the one the next allocates, still in the CPU
     * cache (per-thread arenas measured 20-30% slower for one cat). */
    mallopt(M_ARENA_MAX, 1);
}

/* The mount options drxfs adds to libfuse's arguments (*mopts holds the
 * -o string, freed by the caller). */
static int mount_args(struct fuse_args *args, char **mopts, const struct drxfs_cli *cli,
                      const char *abs_root)
{
    /* fsname = the store's absolute path: drx and drx-load map a path under
     * the mount back to the store through /proc/self/mountinfo. */
    char fsname[PATH_MAX + 16];
    snprintf(fsname, sizeof(fsname), "fsname=%s", abs_root);
    if (fuse_opt_add_opt_escaped(mopts, fsname) < 0 ||
        fuse_opt_add_opt(mopts, "subtype=drxfs") < 0 || fuse_opt_add_arg(args, "-o") < 0 ||
        fuse_opt_add_arg(args, *mopts) < 0 ||
        /* libfuse 3.14's fuse_main passes an unset max_idle_threads as
         * UINT_MAX and complains (and then keeps its own): each one not
         * given is said (-o max_threads=3 alone printed "Ignoring invalid
         * max threads value 4294967295"). */
        (!(cli->threads_given & DRXFS_MAX_THREADS) &&
         fuse_opt_add_arg(args, "-omax_threads=" DRXFS_THREADS) < 0) ||
        (!(cli->threads_given & DRXFS_MAX_IDLE) &&
         fuse_opt_add_arg(args, "-omax_idle_threads=" DRXFS_THREADS) < 0)) {
        fprintf(stderr, "drxfs: out of memory\n");
        return -1;
    }
    /* The daemon (root, typically) does what it is asked: without
     * default_permissions the kernel checks nothing, and allow_other would
     * hand every user every file of the store.  mergerfs and gocryptfs add
     * it the same way. */
    drxfs.check_perms = cli->allow_other || cli->default_permissions;
    if (cli->allow_other && !cli->default_permissions) {
        if (fuse_opt_add_arg(args, "-odefault_permissions") < 0) {
            fprintf(stderr, "drxfs: out of memory\n");
            return -1;
        }
        drxfs.implied_default_permissions = true;
    }
    return 0;
}

/* Frees what the option parser allocated. */
static void cli_fini(struct drxfs_cli *cli)
{
    free(cli->config);
    free(cli->log_level);
    free(cli->cache_bytes);
    free(cli->mountpoint);
    free(cli->store);
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct drxfs_cli cli = {0};
    char *abs_root = NULL, *mopts = NULL;
    int ret = 1;

    drxfs_relay_entry(argc, argv);
    /* A write past RLIMIT_FSIZE (ulimit -f of whoever started the daemon)
     * is EFBIG for that request, not the end of the mount for everyone. */
    signal(SIGXFSZ, SIG_IGN);
    if (fuse_opt_parse(&args, &cli, drxfs_opts, opt_proc) < 0)
        goto out;
    if (cli_early(&cli, argv, &ret) || cli_apply(&cli) < 0)
        goto out;

    drx_log_set_sink(drx_log_stderr_sink, (void *)"drxfs");

    /* The store is opened before the mount: the mount point may shadow the
     * store path, so everything after goes through this descriptor. */
    if (root_open(&cli, &abs_root) < 0 || mount_args(&args, &mopts, &cli, abs_root) < 0)
        goto out;
    malloc_tune();
    /* libfuse's options are checked before the store is opened, which
     * may make a new store: a typo in them must change nothing */
    if ((ret = drxfs_new(&args, &drxfs_ops)) != 0)
        goto out;
    ret = 1;
    if (open_store(&cli, abs_root) < 0) {
        drxfs_new_undo();
        goto out;
    }
    drxfs_share_init();

    /* Modes of created files come from the caller and its umask
     * (drxfs_new_mode), never from ours. */
    umask(0);

    ret = drxfs_run();
    if (ret == 4 && drxfs.made_store) {
        /* the mount failed: the store made for it goes too (as a failed
         * `drx init` takes back what it made) */
        if (drxfs.store_lock >= 0)
            close(drxfs.store_lock);
        drxfs.store_lock = -1;
        drx_store_close(drxfs.store);
        drxfs.store = NULL;
        drx_store_unmake_at(drxfs.root_fd);
        drx_log(DRX_LOG_INFO, "%s: the mount failed: the store made for it (.drx/) is removed",
                drxfs.store_path);
    }
out:
    drxfs_prefetch_destroy(drxfs.prefetch);
    if (drxfs.store_lock >= 0)
        close(drxfs.store_lock);
    drx_store_close(drxfs.store);
    drxfs_mnt_unlock();
    if (drxfs.root_fd >= 0)
        close(drxfs.root_fd);
    free(mopts);
    free(abs_root);
    free(drxfs.mountpoint);
    cli_fini(&cli);
    fuse_opt_free_args(&args);
    return ret;
}
