#!/bin/bash
# Benchmark of the zarr/ group and data.nc through drxfs (meson benchmark
# 'zarr'; prints figures and ratios from one run, never fails on timings).
#
#   bench_zarr.sh BUILD_DIR
#
# A cubic f64 array with 64^3 chunks (2 MiB, uncompressed):
#   - xarray.open_zarr(...).load() of the whole array and of a column slab
#     (dim2=0:64) through the mount vs a local uncompressed Zarr
#     DirectoryStore with the same chunks (written by xarray from the mount),
#     hot and cold (cold drops the page cache: root only)
#     (target: mount >= 0.8 x local, hot)
#   - data.nc of a view read with netCDF4-python vs the same view's `data`
#     read with numpy, hot
#
# DRX_BENCH_MIB   array size in MiB (default 512)
# DRX_BENCH_DIR   where to put the store and the local copy (default /tmp)
# DRX_BENCH_RUNS  timed pairs per cold figure (default 9), DRX_BENCH_HOT_RUNS
#                 per hot figure (default 25: a hot whole load takes a
#                 third of a second, and other work on a shared machine
#                 swings one pair's ratio from 0.2 to 3): each pair times
#                 the mount and the local copy back to back (which goes
#                 first alternates), so that the load weighs on both alike;
#                 a ratio is the median of the pairs' ratios, shown with
#                 their range and the ratio of the best times of each
set -euo pipefail

build=${1:-${DRX_BUILD:-build}}
drx="$build/fs/drx"
drxfs="$build/fs/drxfs"
mib=${DRX_BENCH_MIB:-512}
n=$(awk -v m="$mib" 'BEGIN { s = (m * 1048576 / 8) ^ (1 / 3); n = int(s / 64 + 0.5) * 64;
                             if (n < 128) n = 128; print n }')
bytes=$((n * n * n * 8))

work=$(mktemp -d "${DRX_BENCH_DIR:-/tmp}/drx-zbench.XXXXXX")
store="$work/store"
mnt="$work/mnt"
pid=
cleanup() {
    if mountpoint -q "$mnt" 2>/dev/null; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
    if [ -n "$pid" ]; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$store" "$mnt"
"$drx" init "$store" >/dev/null
"$drx" create "$store/big" --type f64 --shape "${n}x${n}x${n}" --chunk 64x64x64 --dims z,y,x
head -c "$bytes" /dev/urandom | "$drx" put "$store/big"

"$drxfs" -f "$store" "$mnt" 3>&- 2>"$work/drxfs.log" &
pid=$!
for _ in $(seq 200); do
    mountpoint -q "$mnt" && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/drxfs.log" >&2; exit 1; }
    sleep 0.1
done
mountpoint -q "$mnt"

/usr/bin/python3 - "$mnt" "$work/local.zarr" "${DRX_BENCH_RUNS:-9}" "$n" "${DRX_BENCH_HOT_RUNS:-25}" <<'PY'
import os, statistics, sys, time
import netCDF4
import numpy as np
import xarray as xr

mnt, local, n = sys.argv[1], sys.argv[2], int(sys.argv[4])
cold_runs, hot_runs = int(sys.argv[3]), int(sys.argv[5])
cold_ok = os.geteuid() == 0

# the local baseline: the same chunks, uncompressed, the same fill (so that
# xarray masks the same way), written by xarray
src = xr.open_zarr(mnt + "/big/zarr")
src.to_zarr(local, mode="w", encoding={"big": {"compressor": None, "chunks": (64, 64, 64),
                                               "_FillValue": 0.0}})
ref = xr.open_zarr(local).big
assert ref.encoding["chunks"] == (64, 64, 64) and ref.encoding["compressor"] is None
assert ref.encoding["_FillValue"] == 0.0


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def pair_times(fns, cold):
    """Times of pairs of runs of fns, the pairs' order alternating."""
    runs = cold_runs if cold else hot_runs
    if not cold:
        for fn in fns:
            fn()  # warm-up
    t = [[] for _ in fns]
    for r in range(runs):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            if cold:
                drop_caches()
            s = time.perf_counter()
            fns[i]()
            t[i].append(time.perf_counter() - s)
    return t


def ratio(tm, tl):
    """Median time of each, and the median and range of the pairs' ratios
    (local time / mount time: the mount's speed relative to local), and
    the ratio of the best times."""
    r = sorted(b / a for a, b in zip(tm, tl))
    return (statistics.median(tm), statistics.median(tl), statistics.median(r), r[0], r[-1],
            min(tl) / min(tm))


def load(path, slab):
    def fn():
        ds = xr.open_zarr(path)
        v = ds.big.isel(x=slice(0, 64)) if slab else ds.big
        v.load()
    return fn


nbytes = {False: n * n * n * 8, True: n * n * 64 * 8}
print(f"array {n}x{n}x{n} f64, chunk 64^3 (2 MiB), {nbytes[False] >> 20} MiB; "
      f"pairs of alternating runs: {hot_runs} hot, {cold_runs} cold; "
      f"xarray.open_zarr(...).load(), dask threads")
for slab in (False, True):
    what = "column slab x=0:64" if slab else "whole array       "
    for cold in (False, True):
        if cold and not cold_ok:
            print(f"  {what} cold: skipped (dropping the page cache needs root)")
            continue
        tm, tl, r, rlo, rhi, best = ratio(*pair_times([load(mnt + "/big/zarr", slab),
                                                  load(local, slab)], cold))
        mb = nbytes[slab] / 1e6
        print(f"  {what} {'cold' if cold else 'hot '}: mount {mb / tm:7.0f} MB/s ({tm:.3f} s), "
              f"local {mb / tl:7.0f} MB/s ({tl:.3f} s), mount/local {r:.2f} "
              f"({rlo:.2f}-{rhi:.2f}, best times {best:.2f})"
              + ("  (target >= 0.8)" if not cold else ""))

# data.nc with netCDF4 vs the same view's data with numpy
view = f"{mnt}/big/z=0:{n // 2}"
def nc():
    d = netCDF4.Dataset(view + "/data.nc")
    d.set_auto_mask(False)
    a = d.variables["big"][:]
    d.close()
    return a
def raw():
    return np.fromfile(view + "/data", "<f8")
tn, tr, r, rlo, rhi, best = ratio(*pair_times([nc, raw], False))
assert np.array_equal(nc().astype('<f8').ravel().view('u8'), raw().view('u8'))
mb = n * n * (n // 2) * 8 / 1e6
print(f"data.nc of z=0:{n // 2} ({mb:.0f} MB) hot: netCDF4 {mb / tn:7.0f} MB/s ({tn:.3f} s), "
      f"data with numpy {mb / tr:7.0f} MB/s ({tr:.3f} s), data.nc/data {r:.2f} ({rlo:.2f}-{rhi:.2f}, best times {best:.2f})")
PY
