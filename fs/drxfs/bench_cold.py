"""Cold-read timers for bench_cache.sh, run with /usr/bin/python3.

  bench_cold.py read FILE
      Opens FILE, then times reading it to the end in 1 MiB reads: the
      time after the open, as HDF5's figure is taken after its file and
      dataset are open.  Prints seconds.
  bench_cold.py floor DRX ARRAY LO:HI,LO:HI,... CHUNK
      The disk's best for a slab: the byte span of each chunk that the
      slab needs (first needed byte to last, chunk row-major, as drxfs
      reads them), looked up with `drx address`, read from the array's
      .xta with every span announced to the kernel at once
      (POSIX_FADV_WILLNEED) before the reads, timed after the open.  The
      caller evicts the file first.  Prints seconds and the bytes read.
"""
import itertools
import os
import subprocess
import sys
import time


def read_after_open(path):
    fd = os.open(path, os.O_RDONLY)
    buf = bytearray(1 << 20)
    t = time.perf_counter()
    while os.readv(fd, [buf]) > 0:
        pass
    dt = time.perf_counter() - t
    os.close(fd)
    print(f"{dt:.6f}")


def chunk_spans(drx, array, ranges, c):
    """(file offset, length) of the span of every chunk the slab meets."""
    k = len(ranges)
    grids = [range(lo // c, (hi - 1) // c + 1) for lo, hi in ranges]
    stride = [c ** (k - 1 - d) for d in range(k)]
    spans = []
    for K in itertools.product(*grids):
        first = last = 0
        for d, (lo, hi) in enumerate(ranges):
            a = max(lo, K[d] * c) - K[d] * c
            b = min(hi, (K[d] + 1) * c) - K[d] * c - 1
            first += a * stride[d]
            last += b * stride[d]
        where = ",".join(str(K[d] * c) for d in range(k))
        out = subprocess.run([drx, "address", array, where], check=True,
                             capture_output=True, text=True).stdout
        base = int(out.split("offset=")[1].split()[0])
        spans.append((base + first * 8, (last - first + 1) * 8))
    return spans


def floor(drx, array, words, c):
    ranges = [tuple(int(x) for x in w.split(":")) for w in words.split(",")]
    spans = chunk_spans(drx, array, ranges, int(c))
    fd = os.open(array + ".xta", os.O_RDONLY)
    t = time.perf_counter()
    for off, n in spans:
        os.posix_fadvise(fd, off, n, os.POSIX_FADV_WILLNEED)
    for off, n in spans:
        os.pread(fd, n, off)
    dt = time.perf_counter() - t
    os.close(fd)
    print(f"{dt:.6f} {sum(n for _, n in spans)}")


if __name__ == "__main__":
    if sys.argv[1] == "read":
        read_after_open(sys.argv[2])
    else:
        floor(*sys.argv[2:6])
