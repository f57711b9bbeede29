/* Whole-file helpers shared by the unit tests that edit store files. */
#ifndef DRX_TEST_FILES_H
#define DRX_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of path, NUL-terminated (free them), their count in *len;
 * NULL when it cannot be opened. */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

/* Replaces path's content with text. */
static inline void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

#endif
