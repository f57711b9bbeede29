#!/bin/bash
# Benchmark (meson benchmark 'extend'): the cost of one `drx extend` and of
# the daemon's next `stat` of the array's data, at 10 and at 10,000 axial
# records (growths alternating between two dimensions, so that each growth
# is a record of its own).  Target: the figures at 10,000 within 2x of
# those at 10, whatever the history's length.  Prints figures and ratios
# from one run; never fails on timings.
#
#   bench_extend.sh BUILD_DIR
#
# DRX_BENCH_RUNS  timed extensions per size, the median is shown (default 21)
# DRX_BENCH_DIR   where to put the stores (default /var/tmp)
set -euo pipefail

build=${1:-${DRX_BUILD:-build}}
drx="$build/fs/drx"
drxfs="$build/fs/drxfs"
grow="$build/fs/bench_grow"
runs=${DRX_BENCH_RUNS:-21}
# shellcheck source=fs/bench_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../bench_lib.sh"
# a disk, not tmpfs: the extension's fdatasyncs are part of its cost
DRX_BENCH_DIR=${DRX_BENCH_DIR:-/var/tmp}
bench_workdir drx-bench
mnt="$work/mnt"
mkdir -p "$work/store" "$mnt"
"$drx" init "$work/store" >/dev/null
for n in 10 10000; do
    "$grow" "$work/store/a$n" "$n"
done
bench_mount "$work/store" "$mnt"

# One Python process times each `drx extend` (a process, as a user runs
# it) and the os.stat of data through the mount right after it (the
# daemon reads what the extension appended).
python3 - "$drx" "$work/store" "$mnt" "$runs" <<'EOF_PY'
import os, subprocess, sys, time
drx, store, mnt, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sizes = (10, 10000)
ext = {n: [] for n in sizes}
st = {n: [] for n in sizes}
for n in sizes:
    os.stat(os.path.join(mnt, "a%d" % n, "data"))  # the daemon's handle, warm
# The sizes take turns, so that the disk's moods (fdatasync) fall on both.
for i in range(runs):
    for n in sizes:
        name = "a%d" % n
        t0 = time.perf_counter()
        subprocess.run([drx, "extend", os.path.join(store, name), str(i % 2), "1"], check=True)
        t1 = time.perf_counter()
        os.stat(os.path.join(mnt, name, "data"))
        t2 = time.perf_counter()
        ext[n].append(t1 - t0)
        st[n].append(t2 - t1)
med = lambda v: sorted(v)[len(v) // 2]
for n in sizes:
    xmd = os.path.getsize(os.path.join(store, "a%d.xmd" % n))
    print("%5d axial records (.xmd %7d bytes): drx extend %.2f ms, next stat of data %.3f ms"
          % (n, xmd, med(ext[n]) * 1e3, med(st[n]) * 1e3))
for what, v in (("drx extend", ext), ("stat after it", st)):
    r = med(v[10000]) / med(v[10])
    print("%s: 10,000 / 10 records = %.2fx (target <= 2x: %s)" % (what, r, "met" if r <= 2 else "MISSED"))
EOF_PY
