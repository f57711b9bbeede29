#!/bin/bash
# Benchmark of arrays through drxfs (meson benchmark 'mount'; prints figures
# and ratios from one run, never fails on timings).
#
#   bench_mount.sh BUILD_DIR
#
# A cubic f64 array with 64^3 chunks, hot cache:
#   - cat of data through the mount vs `drx get` vs cat of the .xta
#     (target: mount >= 0.6 x drx get)
#   - row slab dim0=0:128 vs column slab dim2=0:64 through the mount
#     (target: column time <= 1.5 x row time)
# and a striped file (2 stripes, store default layout), hot cache:
#   - cp into and out of the mount vs the same cp on the local disk
#     (targets: reading >= 0.5, writing >= 0.4 of local speed), and the
#     same cp through the bare passthrough FUSE program (the floor)
#   - cp of 16 MiB into and out of a striped file of 1-byte extents, vs
#     the default layout (no target: a layout a user may choose)
#
# DRX_BENCH_MIB   array size in MiB (default 1024; e.g. 64 for a quick run)
# DRX_BENCH_DIR   where to put the store (default /tmp; needs the size free)
# DRX_BENCH_OPTS  extra drxfs options (e.g. "-o data_io=direct" or "-s")
# DRX_BENCH_RUNS  timed runs per figure, the median is shown (default 3)
set -euo pipefail

build=${1:-${DRX_BUILD:-build}}
drx="$build/fs/drx"
drxfs="$build/fs/drxfs"
mib=${DRX_BENCH_MIB:-1024}
runs=${DRX_BENCH_RUNS:-3}
# shellcheck source=fs/bench_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../bench_lib.sh"
n=$(cube_side "$mib")
bytes=$((n * n * n * 8))

bench_workdir drx-bench
store="$work/store"
mnt="$work/mnt"
mkdir -p "$store" "$mnt" "$work/local" "$work/ptback" "$work/ptmnt"
"$drx" init "$store" >/dev/null

echo "array ${n}x${n}x${n} f64, chunk 64x64x64, $((bytes >> 20)) MiB; median of $runs runs"
"$drx" create "$store/big" --type f64 --shape "${n}x${n}x${n}" --chunk 64x64x64
head -c "$bytes" /dev/urandom | "$drx" put "$store/big"

# shellcheck disable=SC2086
bench_mount "$store" "$mnt" ${DRX_BENCH_OPTS:-}

t_xta=$(secs cat "$store/big.xta")
t_get=$(secs "$drx" get "$store/big")
t_mnt=$(secs cat "$mnt/big/data")
row=$((128 < n ? 128 : n))
row_bytes=$((row * n * n * 8))
col_bytes=$((n * n * 64 * 8))
t_row=$(secs cat "$mnt/big/dim0=0:$row/data")
t_col=$(secs cat "$mnt/big/dim2=0:64/data")
t_grow=$(secs "$drx" get "$store/big" "dim0=0:$row")
t_gcol=$(secs "$drx" get "$store/big" dim2=0:64)

echo "whole array ($((bytes >> 20)) MiB):"
echo "  cat .xta                $(rate "$bytes" "$t_xta")  ${t_xta} s"
echo "  drx get                 $(rate "$bytes" "$t_get")  ${t_get} s"
echo "  cat MNT/big/data        $(rate "$bytes" "$t_mnt")  ${t_mnt} s"
echo "  mount / drx get         $(ratio "$t_get" "$t_mnt")   (target >= 0.6)"
echo "  mount / cat .xta        $(ratio "$t_xta" "$t_mnt")"
echo "slabs through the mount:"
echo "  row dim0=0:$row        $(rate "$row_bytes" "$t_row")  ${t_row} s"
echo "  column dim2=0:64        $(rate "$col_bytes" "$t_col")  ${t_col} s"
echo "  column / row time       $(ratio "$t_col" "$t_row")   (target <= 1.5)"
echo "slabs by drx get:"
echo "  row dim0=0:$row        $(rate "$row_bytes" "$t_grow")  ${t_grow} s"
echo "  column dim2=0:64        $(rate "$col_bytes" "$t_gcol")  ${t_gcol} s"
echo "  mount / drx get, row    $(ratio "$t_grow" "$t_row")"
echo "  mount / drx get, column $(ratio "$t_gcol" "$t_col")"

# striped files: cp in and out, against cp on the local disk
src="$work/src"
head -c "$bytes" /dev/urandom >"$src"
# cp_new FROM TO: cp to a new file (the run before's removed first)
cp_new() { rm -f "$2"; cp "$1" "$2"; }
t_inl=$(secs cp_new "$src" "$work/local/f")
t_inm=$(secs cp_new "$src" "$mnt/f")
t_outl=$(secs cp_new "$work/local/f" "$work/out")
t_outm=$(secs cp_new "$mnt/f" "$work/out")
cmp "$src" "$mnt/f"
# the floor: the same copies through a bare passthrough of a directory on
# the same disk (no striping, no recorded sizes, no durability)
bench_passthrough "$work/ptback" "$work/ptmnt"
t_inp=$(secs cp_new "$src" "$work/ptmnt/f")
t_outp=$(secs cp_new "$work/ptmnt/f" "$work/out")
rm -f "$work/ptmnt/f"
echo "striped file ($((bytes >> 20)) MiB, 2 stripes), cp:"
echo "  into local disk         $(rate "$bytes" "$t_inl")  ${t_inl} s"
echo "  into the mount          $(rate "$bytes" "$t_inm")  ${t_inm} s"
echo "  into the passthrough    $(rate "$bytes" "$t_inp")  ${t_inp} s"
echo "  writing mount / local   $(ratio "$t_inl" "$t_inm")   (target >= 0.4)"
echo "  writing floor / local   $(ratio "$t_inl" "$t_inp")   (mount / floor $(ratio "$t_inp" "$t_inm"))"
echo "  out of local disk       $(rate "$bytes" "$t_outl")  ${t_outl} s"
echo "  out of the mount        $(rate "$bytes" "$t_outm")  ${t_outm} s"
echo "  out of the passthrough  $(rate "$bytes" "$t_outp")  ${t_outp} s"
echo "  reading mount / local   $(ratio "$t_outl" "$t_outm")   (target >= 0.5)"
echo "  reading floor / local   $(ratio "$t_outl" "$t_outp")   (mount / floor $(ratio "$t_outp" "$t_outm"))"

# a layout of 1-byte extents (2 stripes): a user may choose one; each
# request's bytes go through a buffer, one system call per subfile
# (stripe_io.c), where piece by piece it was one per byte
tiny_bytes=$((16 << 20))
mkdir "$mnt/tiny"
setfattr -n user.drx.stripe -v "count=2 extent=1" "$mnt/tiny"
head -c "$tiny_bytes" "$src" >"$work/tiny_src"
t_tin=$(secs cp_new "$work/tiny_src" "$mnt/tiny/f")
t_tout=$(secs cp_new "$mnt/tiny/f" "$work/out")
t_din=$(secs cp_new "$work/tiny_src" "$mnt/g")
t_dout=$(secs cp_new "$mnt/g" "$work/out")
cmp "$work/tiny_src" "$mnt/tiny/f"
echo "striped file ($((tiny_bytes >> 20)) MiB) of 1-byte extents, 2 stripes, cp:"
echo "  into the mount          $(rate "$tiny_bytes" "$t_tin")  ${t_tin} s  ($(ratio "$t_din" "$t_tin") of the default layout's)"
echo "  out of the mount        $(rate "$tiny_bytes" "$t_tout")  ${t_tout} s  ($(ratio "$t_dout" "$t_tout") of the default layout's)"
