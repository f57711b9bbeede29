/* The scratch directory and files of the fuzz harnesses (fuzz.h). */
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

/* Removes the files the harnesses made (one level: they make no more). */
static void dir_remove(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

const char *fuzz_dir(void)
{
    const char *tmp = getenv("TMPDIR");

    if (dir[0])
        return dir;
    snprintf(dir, sizeof dir, "%s/drx-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        dir[0] = '\0';
        return NULL;
    }
    atexit(dir_remove);
    return dir;
}

static int write_all(int fd, const void *data, size_t size)
{
    const char *p = data;

    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n <= 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

int fuzz_write(const char *name, const void *data, size_t size, char *path, size_t len)
{
    const char *d = fuzz_dir();
    int fd, rc;

    if (!d || (size_t)snprintf(path, len, "%s/%s", d, name) >= len)
        return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    rc = write_all(fd, data, size);
    return close(fd) < 0 ? -1 : rc;
}

int fuzz_append(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return -1;
    rc = write_all(fd, data, size);
    return close(fd) < 0 ? -1 : rc;
}

char *fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}
