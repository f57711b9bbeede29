"""Checks arrays written by mp_test (mp.bats) against the driver's values:
element (i0, i1, ...) holds (SEED + sum_d i_d * prime_d) % 113 (complex:
v - vj).  One python start for many checks.

usage: mp_ref.py LIST
LIST: one check a line, "FILE TYPE SEED SHAPE LABEL...": FILE the whole
array as `drx get` gave it, SHAPE as N0,N1,...  Every check runs; each
that fails is named by its LABEL; the status is 1 if any failed.
"""
import sys

import numpy as np

DTYPES = {"i8": "i1", "i16": "<i2", "i32": "<i4", "i64": "<i8", "u8": "u1", "u16": "<u2",
          "u32": "<u4", "u64": "<u8", "f32": "<f4", "f64": "<f8", "c64": "<c8", "c128": "<c16"}
PRIMES = [7, 13, 31, 61, 3, 5, 11, 17]


def reference(t, seed, shape):
    idx = np.indices(shape, dtype=np.int64)
    v = (seed + sum(idx[d] * PRIMES[d] for d in range(len(shape)))) % 113
    return ((v - 1j * v) if t.startswith("c") else v).astype(DTYPES[t])


failed = 0
checks = 0
for line in open(sys.argv[1]):
    f, t, seed, shape, label = line.rstrip("\n").split(" ", 4)
    shape = tuple(int(x) for x in shape.split(","))
    checks += 1
    got = np.fromfile(f, dtype=DTYPES[t])
    ref = reference(t, int(seed), shape)
    if got.size != ref.size:
        print(f"{label}: {got.size} elements, the shape {shape} has {ref.size}")
        failed += 1
        continue
    bad = np.count_nonzero(got.reshape(shape) != ref)
    if bad:
        print(f"{label}: {bad} of {got.size} elements differ from the reference")
        failed += 1
if checks == 0:
    sys.exit("no checks listed")
sys.exit(1 if failed else 0)
