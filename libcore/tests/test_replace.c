/* Atomic replacement (replace_i.h): content, mode without the umask, the
 * old file's owner and mode kept, NOREPLACE, no temporary left behind,
 * errors leave the file as it was. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/replace_i.h"
#include "tap.h"

static char dir[] = "/tmp/drx-test-replace-XXXXXX";

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Entries of dir other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    char path[128], missing[160];
    struct stat st, like;

    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/f.conf", dir);
    umask(077);
    tap_ok(drx_replace_write(path, "one\n", 4, NULL, 0644, 0, &st) == 0 &&
               strcmp(slurp(path), "one\n") == 0 && (st.st_mode & 07777) == 0644,
           "a new file: content, and exactly the mode asked (umask 077 ignored)");
    tap_ok(drx_replace_write(path, "x", 1, NULL, 0644, DRX_REPLACE_NOREPLACE, NULL) == -EEXIST &&
               strcmp(slurp(path), "one\n") == 0,
           "NOREPLACE: -EEXIST, the file unchanged");
    chmod(path, 0640);
    stat(path, &like);
    tap_ok(drx_replace_write(path, "two\n", 4, &like, 0, 0, &st) == 0 &&
               strcmp(slurp(path), "two\n") == 0 && (st.st_mode & 07777) == 0640 &&
               st.st_uid == like.st_uid && st.st_ino != like.st_ino,
           "replaced by a new file with the old one's mode and owner");
    chmod(path, 06750);
    stat(path, &like);
    tap_ok(drx_replace_write(path, "three\n", 6, &like, 0, DRX_REPLACE_NOSYNC, &st) == 0 &&
               (geteuid() != 0 || (st.st_mode & 07777) == 06750),
           "the owner (root here) keeps the set-ID bits (%o)", (unsigned)(st.st_mode & 07777));
    tap_ok(entries() == 1, "no temporary left beside it");
    snprintf(missing, sizeof missing, "%s/no/such/f", dir);
    tap_ok(drx_replace_write(missing, "x", 1, NULL, 0644, 0, NULL) == -ENOENT,
           "a missing directory: -ENOENT");
    tap_ok(drx_replace_write("/tmp/", "x", 1, NULL, 0644, 0, NULL) == -EISDIR,
           "a path ending in '/': -EISDIR");
    tap_ok(entries() == 1 && strcmp(slurp(path), "three\n") == 0, "and nothing else changed");
    unlink(path);
    rmdir(dir);
    return tap_done();
}
