/* Replays a corpus through one harness without libFuzzer, for `meson
 * test` with any compiler: each argument is a file or a directory of files
 * (one level), each file one input.  A crash, a sanitizer report or a
 * harness's own abort() fails the test; it prints what it ran, TAP. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int count;

/* Runs the harness on the file at path; 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f)
        return -1;
    do {
        if (len == cap) {
            uint8_t *b = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!b) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = b;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    /* a copy of exactly len bytes, so that ASan sees a read past the end */
    uint8_t *in = malloc(len ? len : 1);
    if (in) {
        memcpy(in, buf, len);
        LLVMFuzzerTestOneInput(in, len);
        printf("ok %d - %s\n", ++count, path);
        fflush(stdout);
    }
    free(in);
    free(buf);
    return in ? 0 : -1;
}

/* The files of directory path, in name order (the run is reproducible). */
static int replay_dir(const char *path)
{
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort), rc = 0;

    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char file[4096];
        if (list[i]->d_name[0] != '.' &&
            (size_t)snprintf(file, sizeof file, "%s/%s", path, list[i]->d_name) < sizeof file &&
            replay_file(file) < 0)
            rc = -1;
        free(list[i]);
    }
    free(list);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0 ||
            (S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i])) < 0) {
            printf("not ok %d - %s: cannot read (%s)\n", ++count, argv[i], strerror(errno));
            rc = 1;
        }
    }
    if (count == 0) {
        printf("not ok 1 - no inputs\n");
        count = 1;
        rc = 1;
    }
    printf("1..%d\n", count);
    return rc;
}
