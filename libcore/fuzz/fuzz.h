/* What the fuzz harnesses share: libFuzzer's entry point, declared for
 * -Wmissing-prototypes, and a scratch file for parsers that read files. */
#ifndef DRX_FUZZ_H
#define DRX_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private directory made on first use (under $TMPDIR or /tmp) and removed
 * at exit; its path, or NULL when it cannot be made. */
const char *fuzz_dir(void);

/* Writes data[0..size) to NAME in fuzz_dir(), replacing what it held, and
 * puts its path into path (len bytes).  0, or -1 on any failure. */
int fuzz_write(const char *name, const void *data, size_t size, char *path, size_t len);

/* Appends data[0..size) to the file at path.  0 or -1. */
int fuzz_append(const char *path, const void *data, size_t size);

/* A NUL-terminated copy of data[0..size) (malloc'ed; NULL without memory). */
char *fuzz_string(const uint8_t *data, size_t size);

#endif
