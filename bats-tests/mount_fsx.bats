#!/usr/bin/env bats
# Random operations against the real daemon (issue 4): fsx_drx, after
# xfstests' fsx, runs seeded random writes (holes, O_APPEND), reads (cached
# and O_DIRECT), truncates, fsyncs, reopens, mmap reads, stats and renames on
# a file at the mount and on a local reference file, and compares the two
# after every operation.  Then the store itself is checked: arrays with drx
# get, striped files on disk against SPEC section 5's round-robin formula.
#
# FSX_OPS sets the operations per run (default 1500: the suite 22 s alone
# at 2500, 90 s beside CI's other suites and builds; 1000 under the
# sanitizers, DRX_TEST_SANITIZED, where 2500 took about 70 s; the four
# concurrent runs do half each).  FSX_OPS=20000 for a longer search.

load test_helper

FSX="$DRX_BUILD/bats-tests/fsx_drx"
if [ -n "${DRX_TEST_SANITIZED:-}" ]; then
    : "${FSX_OPS:=1000}"
else
    : "${FSX_OPS:=1500}"
fi

setup_file() {
    export T="$BATS_FILE_TMPDIR"
    export S="$T/store" M="$T/mnt" MC="$T/mnt-cached"
    # three stripe dirs outside the store, as three disks would be
    "$DRX" init "$S" --stripe-dirs "$T/disk0,$T/disk1,$T/disk2" --count 2 --extent 4096 \
        >/dev/null
    # the defaults (page-cache mode) and a second daemon on the same store
    # with page-cache mode asked for by name, as users of older versions
    # (whose default was direct_io) mount; each test uses its own files on one
    mount_store "$S" "$M"
    mount_store "$S" "$MC" -o data_io=cached,striped_io=cached
}

teardown_file() {
    unmount_store "$M"
    unmount_store "$MC"
    unmount_store "$T/mnt-direct"
}

setup() {
    cd "$BATS_TEST_TMPDIR"
    [ -x "$FSX" ] || fail "fsx_drx is not built ($FSX)"
}

# fsx ARGS... FILE: one exerciser run; on success its summary goes to the
# TAP log as comments, on failure its report is the test's output.
fsx() {
    echo "# fsx_drx $*" >&3
    run "$FSX" "$@"
    if [ "$status" -ne 0 ]; then
        echo "fsx_drx $* failed with status $status:"
        echo "$output"
        return 1
    fi
    sed 's/^/#   /' <<<"$output" >&3
}

# striped_ok FILE REF COUNT EXTENT: FILE (at either mount) is a striped
# file with that layout; remembered with its reference for the on-disk check.
striped_ok() {
    local rel=${1#"$M"/}
    rel=${rel#"$MC"/}
    rel=${rel#"$T/mnt-direct"/}
    [ -f "$S/$rel.nafs" ] || { echo "$S/$rel.nafs: no metafile" >&2; return 1; }
    [ "$(getfattr --only-values -n user.drx.stripe "$1")" = "count=$3 extent=$4" ]
    echo "$rel $2 $3 $4" >>"$T/striped.list"
}

@test "striped file, count=2 extent=4096: random operations match a local file" {
    mkdir "$M/two"
    setfattr -n user.drx.stripe -v "count=2 extent=4096" "$M/two"
    for seed in 1 2 3; do
        fsx -N "$FSX_OPS" -S $seed -m -B 4096 -g "$T/two$seed.ref" "$M/two/f$seed"
        striped_ok "$M/two/f$seed" "$T/two$seed.ref" 2 4096
    done
    # a small file: the whole file is compared after every operation
    fsx -N "$FSX_OPS" -S 4 -m -B 4096 -l 20000 -o 6000 -g "$T/two4.ref" "$M/two/f4"
    striped_ok "$M/two/f4" "$T/two4.ref" 2 4096
}

@test "striped file, count=3 extent=1000 (page cache): random operations and mmap match" {
    mkdir "$MC/three"
    "$DRX" stripe set "$MC/three" --count 3 --extent 1000
    for seed in 5 6; do
        fsx -N "$FSX_OPS" -S $seed -m -B 1000 -g "$T/three$seed.ref" "$MC/three/g$seed"
        [[ "$output" == *"mmap: used"* ]]
        striped_ok "$MC/three/g$seed" "$T/three$seed.ref" 3 1000
    done
    fsx -N "$FSX_OPS" -S 7 -m -B 1000 -l 9000 -o 2500 -g "$T/three7.ref" "$MC/three/g7"
    striped_ok "$MC/three/g7" "$T/three7.ref" 3 1000
}

@test "striped file: a stat right after a write shows the new mtime (POSIX), not only after close" {
    mkdir -p "$M/mtime"
    # -t: after every write, truncate and mapwrite the mtime must not be
    # older than the start of that operation, as on a local file system
    fsx -t -N 300 -S 12 -B 4096 -g "$T/mtime.ref" "$M/mtime/f"
}

# arr NAME: a 13x20x6 f64 array (chunks 4x6x4, so edge chunks everywhere)
# holding 0, 1, 2, ...
arr() {
    "$DRX" create "$S/$1" --type f64 --shape 13x20x6 --chunk 4x6x4
    "$PY" -c "import numpy as np; np.arange(13 * 20 * 6, dtype='<f8').tofile('$1.raw')"
    "$DRX" put "$S/$1" <"$1.raw"
}

# check_array NAME WHOLE_REF VIEW_REF: drx get of the view dim0=1:7:2
# order=F is VIEW_REF, and the whole array is WHOLE_REF with the view's
# elements replaced: writes through the view landed in its elements only.
check_array() {
    cmp "$3" <("$DRX" get "$S/$1" dim0=1:7:2 order=F)
    # elements as u8 words (moved as bytes: random bytes make NaNs)
    "$PY" - "$2" "$3" <<'EOF'
import sys
import numpy as np
whole = np.fromfile(sys.argv[1], dtype='<u8').reshape(13, 20, 6)
whole[1:7:2] = np.fromfile(sys.argv[2], dtype='<u8').reshape((3, 20, 6), order='F')
whole.tofile('want.raw')
EOF
    cmp want.raw <("$DRX" get "$S/$1")
}

@test "array data file and a view's, fixed size (-F): writes land in the right elements" {
    arr a
    fsx -F -N "$FSX_OPS" -S 8 -g "$T/a.ref" "$M/a/data"
    fsx -F -N "$FSX_OPS" -S 9 -g "$T/a-view.ref" "$M/a/dim0=1:7:2/order=F/data"
    assert_file_size "$M/a/data" $((13 * 20 * 6 * 8))
    check_array a "$T/a.ref" "$T/a-view.ref"
}

@test "array data files through the page cache (-o data_io=cached): mmap reads too" {
    arr c
    fsx -F -N "$FSX_OPS" -S 10 -g "$T/c.ref" "$MC/c/data"
    [[ "$output" == *"mmap: used"* ]]
    fsx -F -N "$FSX_OPS" -S 11 -g "$T/c-view.ref" "$MC/c/dim0=1:7:2/order=F/data"
    [[ "$output" == *"mmap: used"* ]]
    check_array c "$T/c.ref" "$T/c-view.ref"
}

@test "data and striped files bypassing the page cache (data_io=direct, striped_io=direct): shared mmap reads and writes mixed with direct_io" {
    # the INIT reply grants FUSE_DIRECT_IO_ALLOW_MMAP: direct_io writes drop
    # the pages a mapping holds, and the mapping's writeback reaches the store
    local md="$T/mnt-direct"
    mount_store "$S" "$md" -o data_io=direct,striped_io=direct
    arr d
    fsx -F -N "$FSX_OPS" -S 30 -g "$T/d.ref" "$md/d/data"
    [[ "$output" == *"mmap: used"* ]]
    fsx -F -N "$FSX_OPS" -S 31 -g "$T/d-view.ref" "$md/d/dim0=1:7:2/order=F/data"
    [[ "$output" == *"mmap: used"* ]]
    check_array d "$T/d.ref" "$T/d-view.ref"
    mkdir "$md/dio"
    "$DRX" stripe set "$md/dio" --count 3 --extent 1000
    fsx -N "$FSX_OPS" -S 32 -m -B 1000 -g "$T/dio32.ref" "$md/dio/h32"
    [[ "$output" == *"mmap: used"* ]]
    striped_ok "$md/dio/h32" "$T/dio32.ref" 3 1000
    unmount_store "$md"
}

@test "four exercisers at once on disjoint views that share chunks: no lost update" {
    # columns 0:2, 2:3, 3:5 and 5 of the fastest dimension of 13x20x6 with
    # chunk columns 0-3 and 4-5: inside a shared chunk every row holds bytes
    # of two views, so a chunk read-modify-write that is not serialised
    # writes back the other view's old bytes
    arr p
    local views=("dim2=0:2" "dim2=2:3/order=F" "dim2=3:5/rep=external32" "dim2=5") pids=() i
    for i in 0 1 2 3; do
        "$FSX" -q -F -N $((FSX_OPS / 2)) -S $((20 + i)) -g "$T/p$i.ref" "$M/p/${views[i]}/data" \
            >"fsx$i.out" 2>&1 &
        pids+=($!)
    done
    local failed=0
    for i in 0 1 2 3; do
        wait "${pids[i]}" || { failed=1; echo "view ${views[i]}:"; cat "fsx$i.out"; }
    done
    [ "$failed" -eq 0 ]
    cmp "$T/p0.ref" <("$DRX" get "$S/p" dim2=0:2)
    cmp "$T/p1.ref" <("$DRX" get "$S/p" dim2=2:3 order=F)
    cmp "$T/p2.ref" <("$DRX" get "$S/p" dim2=3:5 rep=external32)
    cmp "$T/p3.ref" <("$DRX" get "$S/p" dim2=5)
    # the whole array is the four views put together
    "$PY" - "$T" <<'EOF'
import sys
import numpy as np
t = sys.argv[1]
np.concatenate([
    np.fromfile(f"{t}/p0.ref", dtype="<u8").reshape(13, 20, 2),
    np.fromfile(f"{t}/p1.ref", dtype="<u8").reshape((13, 20, 1), order="F"),
    np.fromfile(f"{t}/p2.ref", dtype=">u8").reshape(13, 20, 2).astype("<u8"),
    np.fromfile(f"{t}/p3.ref", dtype="<u8").reshape(13, 20, 1),
], axis=2).tofile("want.raw")
EOF
    cmp want.raw <("$DRX" get "$S/p")
}

@test "after unmount: metafiles and subfiles on disk follow the round-robin formula" {
    [ -s "$T/striped.list" ] || fail "no striped files from the tests above"
    unmount_store "$M"
    unmount_store "$MC"
    # no temporary metafile and no renamed-away name left behind
    run find "$S" -name '.*.nafs.*' -o -name '*.fsxmv*'
    assert_output ""
    "$PY" - "$S" "$T/striped.list" <<'EOF'
import os
import re
import sys

store, listing = sys.argv[1], sys.argv[2]
conf = open(os.path.join(store, ".drx/store.conf")).read()
dirs = re.findall(r'"([^"]*)"', re.search(r"dirs\s*=\s*\[([^\]]*)\]", conf).group(1))
dirs = [d if d.startswith("/") else os.path.join(store, d) for d in dirs]
named = set()
errors = []

for line in open(listing):
    rel, ref_path, count, extent = line.split()
    count, extent = int(count), int(extent)
    meta = open(os.path.join(store, rel + ".nafs")).read()

    def key(k):
        return int(re.search(r"^%s\s*=\s*(\d+)L?;" % k, meta, re.M).group(1))

    subs = re.findall(r'\{\s*dir\s*=\s*(\d+);\s*name\s*=\s*"([^"]+)";\s*\}', meta)
    ref = open(ref_path, "rb").read()
    size = len(ref)
    if (key("count"), key("extent"), len(subs)) != (count, extent, count):
        errors.append(f"{rel}: layout {key('count')}x{key('extent')} ({len(subs)} subfiles), "
                      f"expected count={count} extent={extent}")
        continue
    if key("size") != size:
        errors.append(f"{rel}: metafile size {key('size')}, the reference has {size} bytes")
    if len({d for d, _ in subs}) != count:
        errors.append(f"{rel}: subfiles share a stripe dir: {subs}")
    data = []
    for i, (d, name) in enumerate(subs):
        path = os.path.join(dirs[int(d)], name)
        named.add(os.path.realpath(path))
        data.append(open(path, "rb").read())
    # byte b: extent e = b // extent, subfile e % count, at
    # (e // count) * extent + b % extent; beyond a subfile's end: a hole (0)
    for b in range(size):
        e = b // extent
        i, off = e % count, (e // count) * extent + b % extent
        got = data[i][off] if off < len(data[i]) else 0
        if got != ref[b]:
            errors.append(f"{rel}: byte {b} (extent {e}, subfile {i} offset {off}) is "
                          f"{got:#04x}, the reference has {ref[b]:#04x}")
            break
    # nothing stored beyond what the size needs (stale bytes of a truncate)
    full, rem = divmod(size, extent)
    for i in range(count):
        need = (full // count + (1 if i < full % count else 0)) * extent
        if rem and full % count == i:
            need += rem
        if len(data[i]) > need:
            errors.append(f"{rel}: subfile {i} holds {len(data[i])} bytes, "
                          f"the size needs {need}")

# every subfile in the stripe dirs is named by a metafile of the store: no
# orphans of truncates, renames or replaced metafiles
for top, _, files in os.walk(store):
    for f in files:
        if f.endswith(".nafs"):
            for d, name in re.findall(r'dir\s*=\s*(\d+);\s*name\s*=\s*"([^"]+)"',
                                      open(os.path.join(top, f)).read()):
                named.add(os.path.realpath(os.path.join(dirs[int(d)], name)))
for d in dirs:
    for name in os.listdir(d):
        if os.path.realpath(os.path.join(d, name)) not in named:
            errors.append(f"{d}/{name}: a subfile no metafile names")
if errors:
    sys.exit("\n".join(errors))
print(f"{sum(1 for _ in open(listing))} striped files checked byte by byte")
EOF
    run "$DRX" fsck "$S"
    assert_success
    assert_output --partial "clean"
    # the daemons said nothing of sanitizer errors (ASan+UBSan builds)
    run grep -s -l -e "ERROR: AddressSanitizer" -e "runtime error:" -e "LeakSanitizer" \
        "$M.log" "$MC.log"
    assert_output ""
}
