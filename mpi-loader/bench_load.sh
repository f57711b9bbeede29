#!/usr/bin/env bash
# Benchmark of drx-load (meson test --benchmark drx-load): import of
# DRX_BENCH_LOAD_MIB MiB (default 1024) of f64 with P = 1 and 2, against
# `drx put` and against dd of the same bytes, each with a cold page cache;
# then the ROMIO hint variants, export, copy, prefetch, and a cold read of
# a large view through a drxfs mount with and without prefetch.  One run (each
# import and export variant DRX_BENCH_REPS times round-robin, medians); the
# ratios printed compare figures of this run (the VM drifts 20-30% between
# runs).  Exits 1 when import is below 0.6 of dd (sizes of 512 MiB and up).
set -euo pipefail

build=${1:-${DRX_BUILD:-build}}
DRX=$build/fs/drx
LOAD=$build/mpi-loader/drx-load
mib=${DRX_BENCH_LOAD_MIB:-1024}
dir=${DRX_BENCH_DIR:-$build/bench-load}
bytes=$((mib * 1024 * 1024))

rm -rf "$dir"
mkdir -p "$dir"
mnt=$dir/mnt
dpid=
cleanup() {
    if mountpoint -q "$mnt" 2>/dev/null; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
    if [ -n "$dpid" ]; then
        kill "$dpid" 2>/dev/null || true
        wait "$dpid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"

# mount [drxfs options...]: the store "st" at $mnt (deadline 20 s)
mount() {
    mkdir -p "$mnt"
    "$build/fs/drxfs" -f "$@" st "$mnt" 3>&- 2>"$dir/drxfs.log" &
    dpid=$!
    local i
    for ((i = 0; i < 200; i++)); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$dpid" 2>/dev/null || { cat "$dir/drxfs.log"; return 1; }
        sleep 0.1
    done
    return 1
}
umount_() {
    fusermount3 -u "$mnt"
    wait "$dpid" 2>/dev/null || true
    dpid=
}

cold=yes
drop() {
    sync
    if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        cold=no
    fi
}

# run NAME CMD...: cold cache, wall time of CMD; appends to times[NAME]
declare -A times rate
run() {
    local name=$1
    shift
    drop
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    times[$name]+="$(awk -v a="$t0" -v z="$t1" 'BEGIN { print z - a }') "
}
# report NAME: median time of its runs and MB/s over $bytes
report() {
    local med
    med=$(printf '%s\n' ${times[$1]} | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    rate[$1]=$(awk -v b="$bytes" -v t="$med" 'BEGIN { printf "%.0f", b / t / 1e6 }')
    printf '%-40s %8.2f s %8s MB/s   (runs: %s)\n' "$1" "$med" "${rate[$1]}" "${times[$1]% }"
}
ratio() {
    awk -v a="${rate[$1]}" -v b="${rate[$2]}" 'BEGIN { printf "%.2f", a / b }'
}

# f64, chunks of 64^3 (2 MiB); dimension 0 carries the size
n0=$((mib * 2))
"$DRX" init st >/dev/null
"$DRX" create st/arr --type f64 --shape "${n0}x256x256" --chunk 64x64x64 >/dev/null
head -c "$bytes" /dev/urandom >raw
cp raw ddout
echo "drx-load benchmark: $mib MiB f64 ${n0}x256x256, chunk 64x64x64; cold cache: see end"
echo

# The import variants run round-robin, $reps times each, and report the
# median: other work on this shared VM then hits them all alike.
reps=${DRX_BENCH_REPS:-3}
imports=("dd" "drx put" "import P=1" "import P=2" "import P=2 cb_write=enable"
    "import P=2 ds_write=enable" "import P=2 cb+ds enabled")
for ((i = 0; i < reps; i++)); do
    run "dd" dd if=raw of=ddout bs=4M conv=notrunc,fdatasync status=none
    run "drx put" sh -c "'$DRX' put st/arr < raw"
    run "import P=1" mpiexec -n 1 "$LOAD" import st/arr raw
    run "import P=2" mpiexec -n 2 "$LOAD" import st/arr raw
    run "import P=2 cb_write=enable" mpiexec -n 2 "$LOAD" --hint romio_cb_write=enable import st/arr raw
    run "import P=2 ds_write=enable" mpiexec -n 2 "$LOAD" --hint romio_ds_write=enable import st/arr raw
    run "import P=2 cb+ds enabled" mpiexec -n 2 "$LOAD" --hint romio_cb_write=enable \
        --hint romio_ds_write=enable --hint romio_cb_read=enable --hint romio_ds_read=enable \
        import st/arr raw
done
echo "import (dd: read the raw file, overwrite a file of the same size, fdatasync)"
for k in "${imports[@]}"; do report "$k"; done
run "import P=2 order=F" mpiexec -n 2 "$LOAD" import st/arr raw order=F
report "import P=2 order=F"
echo
for ((i = 0; i < reps; i++)); do
    run "drx get" sh -c "'$DRX' get st/arr > out"
    run "export P=1" mpiexec -n 1 "$LOAD" export st/arr out
    run "export P=2" mpiexec -n 2 "$LOAD" export st/arr out
    run "export P=2 cb_read=enable" mpiexec -n 2 "$LOAD" --hint romio_cb_read=enable export st/arr out
done
echo "export"
for k in "drx get" "export P=1" "export P=2" "export P=2 cb_read=enable"; do report "$k"; done
run "prefetch P=2 (whole array)" mpiexec -n 2 "$LOAD" prefetch st/arr
report "prefetch P=2 (whole array)"
echo

run "copy P=2 plain -> striped" mpiexec -n 2 "$LOAD" copy raw st/f
run "copy P=2 striped -> plain" mpiexec -n 2 "$LOAD" copy st/f back
report "copy P=2 plain -> striped"
report "copy P=2 striped -> plain"
cmp -s raw back || { echo "copy round trip differs"; exit 1; }


# A cold read of a large view (the first half of the array, read by one
# cat) through the mount, without and with prefetch (2 ranks).
if [ -x "$build/fs/drxfs" ]; then
    echo
    half=$((n0 / 2))
    view="dim0=0:$half"
    printf 'prefetch = { enabled = true; min_bytes = 67108864; ranks = 2; };\n' >pf.conf
    for ((i = 0; i < reps; i++)); do
        mount
        run "mount: cat of the view, no prefetch" cat "$mnt/arr/$view/data"
        umount_
        mount -o config="$dir/pf.conf"
        run "mount: cat of the view, prefetch" cat "$mnt/arr/$view/data"
        umount_
    done
    bytes=$((bytes / 2))
    echo "mount (cold; view $view, $((bytes >> 20)) MiB)"
    report "mount: cat of the view, no prefetch"
    report "mount: cat of the view, prefetch"
    bytes=$((bytes * 2))
fi

echo
echo "ratios (medians; cold cache: $cold)"
for k in "${imports[@]:1}" "import P=2 order=F"; do
    printf '  %-40s %s x dd   %s x drx put\n' "$k" "$(ratio "$k" dd)" "$(ratio "$k" "drx put")"
done
for k in "export P=1" "export P=2"; do
    printf '  %-40s %s x drx get\n' "$k" "$(ratio "$k" "drx get")"
done
if [ -n "${rate["mount: cat of the view, prefetch"]:-}" ]; then
    printf '  %-40s %s x without\n' "mount read with prefetch" \
        "$(ratio "mount: cat of the view, prefetch" "mount: cat of the view, no prefetch")"
fi

# The target is for large imports: below 512 MiB the MPI start-up (0.2-0.5 s
# cold) dominates and the ratios are printed only.
status=0
[ "$mib" -ge 512 ] || exit 0
for k in "import P=1" "import P=2"; do
    if awk -v r="$(ratio "$k" dd)" 'BEGIN { exit !(r < 0.6) }'; then
        echo "BELOW TARGET: $k is under 0.6 of dd"
        status=1
    fi
done
exit $status
