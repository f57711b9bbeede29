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
  bench_cold.py floor-runs DRX ARRAY LO:HI,... CHUNK
      The same for the bytes the mount reads since it reads a chunk's
      needed runs alone when they are long and far apart (16 KiB or more
      each, and between): those runs instead of the span, where so.
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


RUN_MIN = RUN_GAP = 16 << 10  # libcore/src/view.c: DRX_RUN_MIN, DRX_RUN_GAP


def part_runs(a, b, c, k):
    """Element (offset, length) runs, chunk row-major, of the part [a, b]
    (inclusive bounds per dimension) of a chunk of side c, when they are
    DRX_RUN_MIN bytes or longer with DRX_RUN_GAP bytes or more between
    (as libcore reads them); else None."""
    n, t = 1, k - 1
    while t >= 0:
        n *= b[t] - a[t] + 1
        if b[t] - a[t] + 1 != c:
            t -= 1
            break
        t -= 1
    if t < 0 or n * 8 < RUN_MIN:
        return None
    stride = [c ** (k - 1 - d) for d in range(k)]
    runs = []
    for w in itertools.product(*[range(a[d], b[d] + 1) for d in range(t + 1)]):
        off = sum(w[d] * stride[d] for d in range(t + 1)) + \
            sum(a[d] * stride[d] for d in range(t + 1, k))
        if runs and (off - runs[-1][0] - runs[-1][1]) * 8 < RUN_GAP:
            return None
        runs.append((off, n))
    return runs


def chunk_spans(drx, array, ranges, c, runs):
    """(file offset, length) of the span of every chunk the slab meets, or
    with runs, of each of its needed runs where libcore reads them alone."""
    k = len(ranges)
    grids = [range(lo // c, (hi - 1) // c + 1) for lo, hi in ranges]
    stride = [c ** (k - 1 - d) for d in range(k)]
    spans = []
    for K in itertools.product(*grids):
        a = [max(lo, K[d] * c) - K[d] * c for d, (lo, hi) in enumerate(ranges)]
        b = [min(hi, (K[d] + 1) * c) - K[d] * c - 1 for d, (lo, hi) in enumerate(ranges)]
        first = sum(a[d] * stride[d] for d in range(k))
        last = sum(b[d] * stride[d] for d in range(k))
        where = ",".join(str(K[d] * c) for d in range(k))
        out = subprocess.run([drx, "address", array, where], check=True,
                             capture_output=True, text=True).stdout
        base = int(out.split("offset=")[1].split()[0])
        pr = part_runs(a, b, c, k) if runs else None
        if pr:
            spans += [(base + o * 8, n * 8) for o, n in pr]
        else:
            spans.append((base + first * 8, (last - first + 1) * 8))
    return spans


def floor(drx, array, words, c, runs=False):
    ranges = [tuple(int(x) for x in w.split(":")) for w in words.split(",")]
    spans = chunk_spans(drx, array, ranges, int(c), runs)
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
        floor(*sys.argv[2:6], runs=sys.argv[1] == "floor-runs")
