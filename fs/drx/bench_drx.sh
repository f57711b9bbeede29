#!/usr/bin/env bash
# drx benchmark (issue 2): `drx get` of a 1 GiB f64 array in 64^3 chunks,
# whole, row slab dim0=0:128 and column slab dim2=0:64 (the same bytes),
# against pread loops over a flat row-major file of the same array, hot and
# cold cache; then the cost of growing dimension 1 by one chunk, against
# rewriting the flat file.  Prints figures and ratios from this one run.
#
# DRX_BENCH_SCALE=k divides dimension 0 and 2 by k (default 1: 1024x256x512,
# 1 GiB).  Cold runs need root (drop_caches); they are skipped otherwise.
set -euo pipefail
build=${DRX_BUILD:?set by meson}
drx=$build/fs/drx
flat=$build/fs/bench_flat
scale=${DRX_BENCH_SCALE:-1}
n0=$((1024 / scale)) n1=256 n2=$((512 / scale))
work=$(mktemp -d "${DRX_BENCH_DIR:-/var/tmp}/drx-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

secs() { # secs CMD... : wall seconds of one run
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
can_cold=false
[ -w /proc/sys/vm/drop_caches ] && can_cold=true
mbs() { echo "scale=0; $1 / $2 / 1000000" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }

bytes=$((n0 * n1 * n2 * 8))
echo "array ${n0}x${n1}x${n2} f64 ($((bytes >> 20)) MiB), chunk 64x64x64"
"$drx" create A --type f64 --shape ${n0}x${n1}x${n2} --chunk 64x64x64
head -c $bytes /dev/urandom >flat.bin
"$drx" put A <flat.bin
sync

row_bytes=$((128 * n1 * n2 * 8))
col_bytes=$((n0 * n1 * 64 * 8))
printf '\n%-28s %10s %10s %10s %10s\n' "query" "drx MB/s" "flat MB/s" "drx/flat" "bytes"
declare -A t_drx t_flat
for mode in hot cold; do
    if [ $mode = cold ] && ! $can_cold; then
        echo "(cold cache skipped: not root)"
        continue
    fi
    for q in whole row col; do
        case $q in
        whole) dargs=() fargs=(slab flat.bin ${n0}x${n1}x${n2} 8 0 0 $n0) b=$bytes ;;
        row) dargs=(dim0=0:128) fargs=(slab flat.bin ${n0}x${n1}x${n2} 8 0 0 128) b=$row_bytes ;;
        col) dargs=(dim2=0:64) fargs=(slab flat.bin ${n0}x${n1}x${n2} 8 2 0 64) b=$col_bytes ;;
        esac
        [ $mode = hot ] && "$drx" get A "${dargs[@]}" >/dev/null && "$flat" "${fargs[@]}" >/dev/null
        [ $mode = cold ] && cold
        td=$(secs "$drx" get A "${dargs[@]}")
        [ $mode = cold ] && cold
        tf=$(secs "$flat" "${fargs[@]}")
        t_drx[$mode.$q]=$td
        t_flat[$mode.$q]=$tf
        printf '%-28s %10s %10s %10s %10s\n' "$mode $q ${dargs[*]:-}" "$(mbs $b $td)" \
            "$(mbs $b $tf)" "$(ratio $tf $td)" $b
    done
    printf '%-28s drx %sx (target <= 1.5)   flat file %sx\n' "$mode column/row time" \
        "$(ratio ${t_drx[$mode.col]} ${t_drx[$mode.row]})" "$(ratio ${t_flat[$mode.col]} ${t_flat[$mode.row]})"
done

echo
echo "growing dimension 1 by one chunk (64 elements)"
for size in full small; do
    if [ $size = small ]; then
        rm -f A.* flat.bin
        m0=64 m1=64 m2=512 # 16 MiB
        "$drx" create A --type f64 --shape ${m0}x${m1}x${m2} --chunk 64x64x64
        head -c $((m0 * m1 * m2 * 8)) /dev/urandom >flat.bin
        "$drx" put A <flat.bin
        sync
    else
        m0=$n0 m1=$n1 m2=$n2
    fi
    old=$(stat -c %s A.xta)
    h0=$(head -c "$old" A.xta | md5sum)
    te=$(secs "$drx" extend A 1 64)
    h1=$(head -c "$old" A.xta | md5sum)
    new=$(stat -c %s A.xta)
    tg=$(secs "$flat" grow flat.bin ${m0}x${m1}x${m2} 8 1 64 grown.bin)
    same=$([ "$h0" = "$h1" ] && echo unchanged || echo CHANGED)
    printf '%-6s %5d MiB: drx extend %.4f s (new segment %d MiB, old prefix %s, on-disk blocks %s)  flat rewrite %.3f s  flat/drx %sx\n' \
        $size $((old >> 20)) "$te" $(((new - old) >> 20)) "$same" "$(du -k A.xta | cut -f1) KiB" "$tg" "$(ratio $tg $te)"
    rm -f grown.bin
done
