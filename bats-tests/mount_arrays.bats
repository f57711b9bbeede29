#!/usr/bin/env bats
# Arrays at the mount point, read side: data, data.npy and info of whole
# arrays and nested views against `drx get`; names that are not views.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt"
    "$DRX" init "$S" >/dev/null
    mkdir -p "$S/sub"
    cd "$BATS_FILE_TMPDIR"
    # temp: 3-D f64 grown along two dimensions after filling, named dims
    "$DRX" create "$S/temp" --type f64 --shape 10x7x5 --chunk 4x3x2 --dims time,lat,lon
    "$PY" -c "import numpy as np; (np.arange(350, dtype='<f8') * 1.5 - 7).tofile('temp.raw')"
    "$DRX" put "$S/temp" <temp.raw
    "$DRX" extend "$S/temp" 1 4
    "$DRX" extend "$S/temp" 0 3
    "$PY" -c "import numpy as np; (np.arange(13*11*5, dtype='<f8') + 0.25).tofile('temp2.raw')"
    "$DRX" put "$S/temp" <temp2.raw
    # small i32 and c64 arrays, one in a subdirectory
    "$DRX" create "$S/sub/ints" --type i32 --shape 9x4 --chunk 2x3
    "$PY" -c "import numpy as np; (np.arange(36, dtype='<i4') * -3 + 5).tofile('ints.raw')"
    "$DRX" put "$S/sub/ints" <ints.raw
    "$DRX" create "$S/cplx" --type c64 --shape 5 --chunk 2
    "$PY" -c "import numpy as np; (np.arange(5) + 1j * np.arange(5, 10)).astype('<c8').tofile('c.raw')"
    "$DRX" put "$S/cplx" <c.raw
    echo "plain text" >"$S/notes.txt"
    mount_store "$S" "$M"
}

teardown_file() {
    unmount_store "$M"
}

teardown() {
    # mounts a test made of its own, even when it failed half-way
    for m in "$BATS_TEST_TMPDIR"/m*; do
        [ -d "$m" ] && unmount_store "$m"
    done
    return 0
}

# same VIEW...: the mount path of the view words and drx get agree
same() {
    local arr=$1 file=${FILE:-data} p
    shift
    p="$M/$arr"
    for w in "$@"; do p="$p/$w"; done
    cmp <("$DRX" get "$S/$arr" "$@") "$p/$file"
}

@test "the store root lists arrays as directories and hides store files" {
    run ls -a "$M"
    assert_success
    assert_output --partial "temp"
    assert_output --partial "cplx"
    assert_output --partial "notes.txt"
    refute_output --partial ".drx"
    refute_output --partial ".xmd"
    refute_output --partial ".xta"
    [ -d "$M/temp" ]
    [ -d "$M/sub/ints" ]
    run ls "$M/temp"
    assert_output "$(printf 'data\ndata.nc\ndata.npy\ninfo\nzarr')"
    # complex elements have no netCDF type: no data.nc (Zarr has one)
    run ls "$M/cplx"
    assert_output "$(printf 'data\ndata.npy\ninfo\nzarr')"
    # views have no zarr/ (README)
    run ls "$M/temp/dim0=1:3"
    assert_output "$(printf 'data\ndata.nc\ndata.npy\ninfo')"
    # views resolve without being listed
    [ -d "$M/temp/dim0=1:3" ]
    [ -f "$M/temp/lat=2/data" ]
    [ ! -e "$M/.drx" ]
    [ ! -e "$M/temp.xmd" ]
}

@test "whole arrays read back as drx get gives them (cat, dd, cmp)" {
    cmp <("$DRX" get "$S/temp") "$M/temp/data"
    cmp "$BATS_FILE_TMPDIR/temp2.raw" "$M/temp/data"
    cat "$M/sub/ints/data" | cmp - "$BATS_FILE_TMPDIR/ints.raw"
    dd if="$M/cplx/data" bs=7 status=none | cmp - "$BATS_FILE_TMPDIR/c.raw"
    # odd offsets and sizes
    cmp <(dd if="$M/temp/data" bs=1 skip=13 count=1001 status=none) \
        <(dd if="$BATS_FILE_TMPDIR/temp2.raw" bs=1 skip=13 count=1001 status=none)
}

@test "st_size is exact for data, data.npy and info" {
    assert_file_size "$M/temp/data" $((13 * 11 * 5 * 8))
    assert_file_size "$M/temp/dim0=2:9:3/lon=-2:/data" $((3 * 11 * 2 * 8))
    assert_file_size "$M/cplx/data" $((5 * 8))
    for f in temp/data.npy temp/dim1=1:10:4/order=F/data.npy temp/info sub/ints/dim0=-1/info; do
        size=$(stat -c %s "$M/$f")
        got=$(cat "$M/$f" | wc -c)
        [ "$size" -eq "$got" ] || { echo "$f: st_size $size, read $got" >&2; return 1; }
    done
}

@test "nested views with steps, negative bounds, names, order and rep" {
    same temp dim0=2:11:3
    same temp dim0=-4: dim2=::2
    same temp dim0=4:8 dim0=1:3
    same temp time=-1 lat=:-2 lon=1:4:2
    same temp dim1=3:100 dim0=:-100
    same temp dim0=1:12:5 dim1=2:9:3 dim2=-1
    same temp order=F
    same temp rep=external32
    same temp dim0=3:7 order=F rep=external32
    same temp lat=1:6:2 rep=external32 order=F dim0=0:13:4
    same sub/ints dim1=-3:-1 dim0=::4 order=F
    same sub/ints rep=external32
    same cplx dim0=1:4 rep=external32
    same cplx order=F
    # nested views are relative to the view above: rows 5 and 6
    cmp "$M/temp/dim0=4:8/dim0=1:3/data" <("$DRX" get "$S/temp" dim0=5:7)
}

@test "numpy loads data.npy with dtype, shape, fortran_order and values" {
    "$PY" - "$M" "$BATS_FILE_TMPDIR" <<'EOF'
import numpy as np, sys
m, d = sys.argv[1], sys.argv[2]
full = np.fromfile(d + "/temp2.raw", dtype="<f8").reshape(13, 11, 5)
a = np.load(m + "/temp/data.npy")
assert a.dtype == np.dtype("<f8") and a.shape == (13, 11, 5), (a.dtype, a.shape)
assert (a == full).all()
v = np.load(m + "/temp/dim0=2:11:3/lon=-1/data.npy")
assert v.shape == (3, 11, 1) and (v == full[2:11:3, :, -1:]).all(), v.shape
f = np.load(m + "/temp/dim1=1:8/order=F/data.npy")
assert f.flags["F_CONTIGUOUS"] and f.shape == (13, 7, 5) and (f == full[:, 1:8]).all()
e = np.load(m + "/temp/dim0=-2:/rep=external32/data.npy")
assert e.dtype == np.dtype(">f8") and (e == full[-2:]).all(), e.dtype
o = np.load(m + "/temp/dim0=1/dim1=2/dim2=3/data.npy")
assert o.shape == (1, 1, 1) and o[0, 0, 0] == full[1, 2, 3]
c = np.load(m + "/cplx/data.npy")
assert c.dtype == np.dtype("<c8") and c.shape == (5,), (c.dtype, c.shape)
assert (c == np.arange(5) + 1j * np.arange(5, 10)).all()
ints = np.load(m + "/sub/ints/rep=external32/order=F/data.npy")
assert ints.dtype == np.dtype(">i4") and (ints == np.arange(36).reshape(9, 4) * -3 + 5).all()
# mmap works on data.npy (page-cache mode)
mm = np.load(m + "/temp/data.npy", mmap_mode="r")
assert (mm[5] == full[5]).all()
EOF
    # the header is the .npy v1.0 one NumPy itself writes
    "$PY" -c "
import numpy as np, io, sys
a = np.load('$M/temp/dim2=1:3/order=F/data.npy')
b = io.BytesIO(); np.save(b, a)
h = open('$M/temp/dim2=1:3/order=F/data.npy', 'rb').read()
assert h[:6] == b'\x93NUMPY' and h[6:8] == b'\x01\x00'
assert b.getvalue() == h, (b.getvalue()[:128], h[:128])
"
}

# SPEC 4: stat never reads chunk data (untested until the twelfth session's
# SPEC audit).  The trace of the daemon must see the array's files looked
# at, and no read of its .xta.
@test "stat and ls -l of an array's files, views and zarr keys read no chunk" {
    command -v strace >/dev/null || skip "no strace"
    local pid f v n=0
    "$DRX" create "$S/st8" --type f32 --shape 40x30 --chunk 8x8 --dims y,x
    "$PY" -c "import numpy as np; np.arange(1200, dtype='<f4').tofile('st8.raw')"
    "$DRX" put "$S/st8" <st8.raw
    strace -f -qq -y -e trace=read,pread64,readv,preadv,preadv2,copy_file_range,sendfile,splice,mmap,newfstatat,openat,openat2 \
        -o trace -p "$(cat "$M.pid")" &
    pid=$!
    sleep 1
    for v in "" "y=1:9/" "x=-3:/order=F/" "rep=external32/y=::7/"; do
        for f in data data.npy data.nc info; do
            stat -c %s "$M/st8/$v$f" >/dev/null
            n=$((n + 1))
        done
    done
    for f in zarr zarr/.zmetadata zarr/.zgroup zarr/st8/.zarray zarr/st8/.zattrs zarr/st8/0.0 zarr/st8/4.3; do
        stat -c %s "$M/st8/$f" >/dev/null
    done
    ls -l "$M/st8" "$M/st8/zarr/st8" >/dev/null
    sleep 0.3
    kill "$pid"
    wait "$pid" || true
    grep -q 'st8\.xmd' trace || { echo "the trace saw nothing of st8"; return 1; }
    if grep -E '^[0-9]+ +(read|pread64|readv|preadv2?|copy_file_range|sendfile|splice|mmap)\(.*st8\.xta>' trace; then
        echo "chunk data read for a stat (above)"
        return 1
    fi
    # and the sizes are right without it
    [ "$(stat -c %s "$M/st8/y=1:9/data")" -eq $((8 * 30 * 4)) ]
    [ "$(stat -c %s "$M/st8/data.nc")" -eq "$(cat "$M/st8/data.nc" | wc -c)" ]
    "$DRX" rm "$S/st8"
}

@test "info is JSON describing the view and the array" {
    "$PY" - "$M" <<'EOF'
import json, sys
m = sys.argv[1]
j = json.load(open(m + "/temp/dim0=2:11:3/rep=external32/order=F/info"))
assert j["shape"] == [3, 11, 5] and j["origin"] == [2, 0, 0] and j["step"] == [3, 1, 1], j
assert j["order"] == "F" and j["rep"] == "external32" and j["bytes"] == 3 * 11 * 5 * 8, j
assert j["bounds"] == [13, 11, 5] and j["chunk"] == [4, 3, 2], j
assert [h["dim"] for h in j["history"]] == [1, 0], j["history"]
w = json.load(open(m + "/temp/info"))
assert w["shape"] == [13, 11, 5] and w["dims"] == ["time", "lat", "lon"], w
EOF
}

@test "names that are not views do not exist" {
    for name in 'dim0=1:2:0' 'dim0=1:5:-1' 'dim9=0' 'nosuch=1' 'order=X' 'rep=big' \
        'dim0=13' 'dim0=-14' 'dim0=abc' 'dim0=1:2:3:4' 'time=1..2' 'x' 'data2' '=' \
        'dim0=99999999999999999999999' 'lat=-12'; do
        run stat "$M/temp/$name"
        assert_failure
        assert_output --partial "No such file or directory"
    done
    # a slice's bounds past 64 bits are clamped, as Python's are; an index
    # past them is out of range (above)
    cmp "$M/temp/dim0=-99999999999999999999:99999999999999999999/data" "$M/temp/data"
    [ "$(stat -c %s "$M/temp/dim0=::99999999999999999999/data")" -eq $((11 * 5 * 8)) ]
    run stat "$M/temp/data/x"
    assert_failure
    run stat "$M/temp/dim0=1/info/x"
    assert_failure
    # the debug log says why (checked on a daemon with -d)
    local m2="$BATS_TEST_TMPDIR/m2"
    mount_store "$S" "$m2" -d
    run stat "$m2/temp/dim0=1:2:0"
    assert_failure
    run stat "$m2/temp/nosuch=1"
    assert_failure
    # 64 words nest (README, Views); a 65th is refused with its reason
    local deep
    deep=$(printf 'dim0=0:/%.0s' $(seq 64))
    cmp "$m2/temp/${deep}data" "$m2/temp/data"
    run stat "$m2/temp/${deep}dim0=0:"
    assert_failure
    assert_output --partial "No such file or directory"
    unmount_store "$m2"
    grep -q 'temp: not a view' "$m2.log"
    grep -q 'nosuch' "$m2.log"
    grep -q "temp: more than 64 view words" "$m2.log"
}

@test "a daemon at the default level logs why a view does not exist, at most 10 a minute" {
    local m3="$BATS_TEST_TMPDIR/m3"
    mount_store "$S" "$m3"
    run stat "$m3/temp/dim0=99"
    assert_failure
    assert_output --partial "No such file or directory"
    run stat "$m3/temp/lat=2:4/lat=5"
    assert_failure
    run ls "$m3/temp/dim0=1:2:0"
    assert_failure
    for i in $(seq 1 40); do
        stat "$m3/temp/nosuch=$i" >/dev/null 2>&1 || true
    done
    unmount_store "$m3"
    grep -q "info: temp: view does not resolve: dim0=99: index 99 outside 0..12" "$m3.log"
    grep -q "info: temp: view does not resolve: lat=5: index 5 outside 0..1" "$m3.log"
    grep -q "info: temp: not a view: 'dim0=1:2:0': the step must be positive" "$m3.log"
    # 40 more lookups in the same minute: the limit holds the log at 10
    run grep -c "info: temp: " "$m3.log"
    assert_output 10
}

@test "drx info of a view path under the mount prints the view or says why it does not exist" {
    run "$DRX" info "$M/temp/time=2:6/lat=1"
    assert_success
    assert_output --partial "array:       $S/temp"
    assert_output --partial "shape:       4 x 1 x 5"
    cmp <("$DRX" info "$M/temp/time=2:6/lat=1/info" --json) "$M/temp/time=2:6/lat=1/info"
    run "$DRX" info "$M/temp/dim0=99"
    assert_failure
    assert_output "drx: info: $M/temp/dim0=99: dim0=99: index 99 outside 0..12"
    run "$DRX" info "$M/tmep/dim0=1"
    assert_failure
    assert_output "drx: info: $S/tmep/dim0=1: no such array ('tmep' does not exist in $S)"
}

@test "a thousand malformed names, then the mount still answers" {
    timeout 60 "$PY" - "$M" <<'EOF'
import errno, os, random, sys
m = sys.argv[1]
rnd = random.Random(4242)
alphabet = "dimorderptaln0123456789=:-_/.,%+ *?\\\n\t\x01\xff" + "é漢"
keys = ["dim0", "dim1", "dim2", "dim3", "dim-1", "dim99999999999", "time", "lat", "lon",
        "order", "rep", "", "=", "dim", "DIM0"]
bad = 0
for i in range(1500):
    k = rnd.random()
    if k < 0.4:
        word = rnd.choice(keys) + "=" + "".join(rnd.choice("0123456789:-+ ae") for _ in range(rnd.randint(0, 12)))
    elif k < 0.7:
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40)))
    elif k < 0.8:
        word = rnd.choice(keys) + "=" + "9" * rnd.randint(15, 250)
    elif k < 0.9:
        word = "dim0=" + ":".join(str(rnd.randint(-2**63, 2**64)) for _ in range(rnd.randint(1, 4)))
    else:
        word = "x" * rnd.randint(200, 255)
    parts = [w for w in word.split("/") if w not in ("", ".", "..")] or ["x"]
    for p in (m + "/temp/" + "/".join(parts), m + "/temp/dim0=1:9/" + "/".join(parts) + "/data"):
        try:
            os.stat(p.encode("utf-8", "surrogateescape"))
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR):
                raise
            bad += 1
print("refused", bad)
assert bad > 1000
EOF
    mountpoint -q "$M"
    kill -0 "$(cat "$M.pid")"
    same temp dim0=1:3
}

@test "eight concurrent readers of different views agree with drx get" {
    local d="$BATS_TEST_TMPDIR" i pids=()
    views=("dim0=0:13" "dim0=1:12:2 dim2=1:" "dim1=-3: order=F" "lat=2:9:3 rep=external32"
        "dim0=5 order=F rep=external32" "dim2=0:5:4" "time=-6:" "dim1=1:2 dim0=::3")
    for i in 0 1 2 3 4 5 6 7; do
        read -ra w <<<"${views[$i]}"
        p="$M/temp"
        for x in "${w[@]}"; do p="$p/$x"; done
        "$DRX" get "$S/temp" "${w[@]}" >"$d/want$i"
        (for r in 1 2 3 4 5; do cat "$p/data"; done >"$d/got$i") &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    for i in 0 1 2 3 4 5 6 7; do
        cmp <(for r in 1 2 3 4 5; do cat "$d/want$i"; done) "$d/got$i"
    done
}

@test "pass-through files and directories" {
    run cat "$M/notes.txt"
    assert_output "plain text"
    echo more >>"$M/notes.txt"
    run cat "$S/notes.txt"
    assert_output "$(printf 'plain text\nmore')"
    [ -d "$M/sub" ]
    run ls "$M/sub"
    assert_output "ints"
}

@test "large reads launch drx-load prefetch when configured; reads stay correct" {
    [ -x "$DRX_LOAD" ] || skip "drx-load not built (no MPI)"
    printf 'prefetch = { enabled = true; min_bytes = 4096; ranks = 1; };\n' >"$BATS_TEST_TMPDIR/pf.conf"
    local m2="$BATS_TEST_TMPDIR/mpf"
    mount_store "$S" "$m2" -o config="$BATS_TEST_TMPDIR/pf.conf",log_level=debug
    cmp <("$DRX" get "$S/temp" dim0=2:12 order=F) "$m2/temp/dim0=2:12/order=F/data"
    # small views do not
    cmp <("$DRX" get "$S/temp" dim0=1 dim1=1) "$m2/temp/dim0=1/dim1=1/data"
    for _ in $(seq 100); do
        grep -q "prefetch of $S/temp.*\(done\|exited\|killed\)" "$m2.log" && break
        sleep 0.1
    done
    unmount_store "$m2"
    grep -q "prefetch of $S/temp: started .* -n 1 .*drx-load" "$m2.log"
    grep -q "prefetch of $S/temp done" "$m2.log"
    [ "$(grep -c 'asking for a prefetch' "$m2.log")" -eq 1 ]
    ! pgrep -f "drx-load prefetch $S/temp" >/dev/null
}

@test "large reads (copied on two threads) agree with drx get, also concurrently" {
    local d="$BATS_TEST_TMPDIR"
    "$DRX" create "$S/large" --type f64 --shape 70x64x40 --chunk 16x16x8
    head -c $((70 * 64 * 40 * 8)) /dev/urandom >"$d/large.raw"
    "$DRX" put "$S/large" <"$d/large.raw"
    cmp "$d/large.raw" "$M/large/data"
    dd if="$M/large/data" bs=3M status=none | cmp - "$d/large.raw"
    cmp <("$DRX" get "$S/large" order=F rep=external32) "$M/large/order=F/rep=external32/data"
    cmp <("$DRX" get "$S/large" dim1=3:60:2 dim2=-30:) "$M/large/dim1=3:60:2/dim2=-30:/data"
    local pids=() i
    for i in 0 1 2 3; do
        (for r in 1 2 3; do cat "$M/large/dim0=$i::2/data"; done >"$d/par$i") &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    for i in 0 1 2 3; do
        cmp <(for r in 1 2 3; do "$DRX" get "$S/large" "dim0=$i::2"; done) "$d/par$i"
    done
    "$DRX" rm "$S/large"
}
