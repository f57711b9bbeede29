#!/usr/bin/env bats
# Arrays at the mount point, write side: dd and cat into data, partial
# elements, EFBIG, data.npy, EROFS on -o ro, and extension while mounted.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt"
    mkdir -p "$S"
    mount_store "$S" "$M"
}

teardown_file() {
    unmount_store "$M"
    unmount_store "$BATS_FILE_TMPDIR/ro"
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    unmount_store "$BATS_TEST_TMPDIR/fsz"
}

# fresh NAME SHAPE CHUNK: an f64 array with values 0, 1, 2, ... (also in NAME.raw)
fresh() {
    "$DRX" rm "$S/$1" 2>/dev/null || true
    "$DRX" create "$S/$1" --type f64 --shape "$2" --chunk "$3"
    "$PY" -c "
import numpy as np
n = 1
for x in '$2'.split('x'): n *= int(x)
np.arange(n, dtype='<f8').tofile('$1.raw')"
    "$DRX" put "$S/$1" <"$1.raw"
}

@test "dd conv=notrunc into a view writes exactly that view" {
    fresh w 10x6x4 3x4x3
    "$PY" -c "import numpy as np; (-np.arange(4*6*4, dtype='<f8') - 1).tofile('block')"
    dd if=block of="$M/w/dim0=4:8/data" conv=notrunc status=none
    cmp block <("$DRX" get "$S/w" dim0=4:8)
    "$PY" -c "
import numpy as np
a = np.arange(240, dtype='<f8').reshape(10, 6, 4)
a[4:8] = (-np.arange(96) - 1).reshape(4, 6, 4)
a.tofile('want')"
    cmp want <("$DRX" get "$S/w")
    # a strided, reordered, big-endian view; dd at an offset inside it
    "$PY" -c "import numpy as np; np.array([1e6, 2e6, 3e6], dtype='>f8').tofile('three')"
    dd if=three of="$M/w/dim1=1:6:2/dim2=-1/order=F/rep=external32/data" bs=8 seek=2 \
        conv=notrunc status=none
    "$PY" -c "
import numpy as np
a = np.fromfile('want', dtype='<f8').reshape(10, 6, 4)
v = a[:, 1:6:2, -1:]          # shape (10, 3, 1), F order: dim0 fastest
flat = v.ravel(order='F')
flat[2:5] = [1e6, 2e6, 3e6]
a[:, 1:6:2, -1:] = flat.reshape(v.shape, order='F')
a.tofile('want')"
    cmp want <("$DRX" get "$S/w")
}

@test "cat x > data replaces the contents; O_TRUNC changes no size" {
    fresh c 7x5 4x4
    "$PY" -c "import numpy as np; (np.arange(35, dtype='<f8') * 3).tofile('new')"
    cat new >"$M/c/data"
    assert_file_size "$M/c/data" 280
    cmp new <("$DRX" get "$S/c")
    cmp new "$M/c/data"
    # into a view
    "$PY" -c "import numpy as np; np.full(10, 7.5, dtype='<f8').tofile('row')"
    cat row >"$M/c/dim0=-2:/data"
    "$PY" -c "
import numpy as np
a = (np.arange(35, dtype='<f8') * 3).reshape(7, 5); a[-2:] = 7.5; a.tofile('want')"
    cmp want <("$DRX" get "$S/c")
    # truncate to 0 or to the size is accepted and changes nothing
    truncate -s 0 "$M/c/data"
    truncate -s 280 "$M/c/data"
    cmp want <("$DRX" get "$S/c")
    run truncate -s 100 "$M/c/data"
    assert_failure
    run truncate -s 1000 "$M/c/data"
    assert_failure
    assert_output --partial "File too large"
}

@test "a write covering part of an element is merged with its bytes" {
    fresh p 6 4
    printf '\xAA\xBB\xCC' | dd of="$M/p/data" bs=1 seek=13 conv=notrunc status=none
    printf '\x11' | dd of="$M/p/dim0=5/data" bs=1 seek=7 conv=notrunc status=none
    "$PY" -c "
import numpy as np
b = bytearray(np.arange(6, dtype='<f8').tobytes())
b[13:16] = b'\xaa\xbb\xcc'
b[5*8+7] = 0x11
open('want', 'wb').write(b)"
    cmp want <("$DRX" get "$S/p")
    # in external32 the bytes land big-endian
    printf '\x40' | dd of="$M/p/dim0=2/rep=external32/data" bs=1 seek=0 conv=notrunc status=none
    "$PY" -c "
import numpy as np
b = bytearray(open('want', 'rb').read())
b[2*8+7] = 0x40
open('want', 'wb').write(b)"
    cmp want <("$DRX" get "$S/p")
}

@test "a write past the end fails with EFBIG" {
    fresh e 4x4 2x2
    run dd if=/dev/zero of="$M/e/data" bs=8 count=1 seek=16 conv=notrunc status=none
    assert_failure
    assert_output --partial "File too large"
    run dd if=/dev/zero of="$M/e/dim0=1/data" bs=8 count=1 seek=4 conv=notrunc status=none
    assert_failure
    assert_output --partial "File too large"
    # a write straddling the end stores what fits, then EFBIG
    run dd if=/dev/zero of="$M/e/data" bs=24 count=1 seek=120 oflag=seek_bytes conv=notrunc status=none
    assert_failure
    "$PY" -c "
import numpy as np
a = np.arange(16, dtype='<f8'); a[15] = 0; a.tofile('want')"
    cmp want <("$DRX" get "$S/e")
    assert_file_size "$M/e/data" 128
}

@test "a daemon started under ulimit -f answers EFBIG past the limit and lives on" {
    # a write past RLIMIT_FSIZE raises SIGXFSZ, whose default ends the
    # process: any user's write through the mount killed the daemon
    local fs="$BATS_TEST_TMPDIR/fsz"
    mkdir "$fs.store"
    (ulimit -f 2048 && mount_store "$fs.store" "$fs")
    "$DRX" create "$fs.store/a" --type u8 --shape 4096x1024 --chunk 256x256
    random_bytes r 6291456
    # 1 MiB a request: the first two land below 2 MiB of the .xta
    run dd if=r of="$fs/a/data" bs=1M count=4 conv=notrunc
    assert_failure
    assert_output --partial "File too large"
    assert_output --partial "2097152 bytes"
    mountpoint -q "$fs"
    cmp -n 2097152 r "$fs/a/data"
    run cp r "$fs/f"
    assert_failure
    assert_output --partial "File too large"
    mountpoint -q "$fs"
    commit_mount "$fs"
    cmp -n "$(stat -c %s "$fs/f")" r "$fs/f"
    ls "$fs" >/dev/null
    unmount_store "$fs"
    run "$DRX" fsck "$fs.store" --repair
    assert_success
}

@test "data.npy: the data part is writable, the header is fixed" {
    fresh n 5x3 2x2
    "$PY" - "$M" <<'EOF'
import errno, numpy as np, sys
m = sys.argv[1]
# np.save of a same-shaped array writes through (the header is identical)
np.save(m + "/n/data.npy", np.arange(15, dtype="<f8").reshape(5, 3) * 10)
# in place through the data part
with open(m + "/n/dim1=2/order=F/data.npy", "r+b") as f:
    h = f.read(128)
    assert h[:6] == b"\x93NUMPY"
    hlen = 10 + int.from_bytes(h[8:10], "little")
    f.seek(hlen + 8)
    f.write(np.array([-1.0], dtype="<f8").tobytes())
# a different shape changes the header: refused
try:
    np.save(m + "/n/data.npy", np.zeros((2, 2)))
    raise SystemExit("np.save of another shape succeeded")
except OSError as e:
    assert e.errno == errno.EPERM, e
EOF
    "$PY" -c "
import numpy as np
a = np.arange(15, dtype='<f8').reshape(5, 3) * 10; a[1, 2] = -1; a.tofile('want')"
    cmp want <("$DRX" get "$S/n")
    # the log says which part of the header differs (it said only "write
    # changes the .npy header", at debug level)
    grep -F "data.npy: a header of descr '<f8', fortran_order False, shape (2, 2) written over the view's '<f8', False, (5, 3): refused" "$M.log"
}

@test "info is read-only" {
    fresh i 3 2
    run bash -c "echo x > '$M/i/info'"
    assert_failure
}

@test "-o ro: writes fail with EROFS, reads work" {
    fresh r 4x4 2x2
    echo text >"$S/plain"
    local ro="$BATS_FILE_TMPDIR/ro"
    mount_store "$S" "$ro" -o ro
    cmp r.raw "$ro/r/data"
    run dd if=/dev/zero of="$ro/r/data" bs=8 count=1 conv=notrunc status=none
    assert_failure
    assert_output --partial "Read-only file system"
    run bash -c "echo y >> '$ro/plain'"
    assert_output --partial "Read-only file system"
    run mkdir "$ro/newdir"
    assert_output --partial "Read-only file system"
    run touch "$ro/newfile"
    assert_output --partial "Read-only file system"
    unmount_store "$ro"
    cmp r.raw <("$DRX" get "$S/r")
}

@test "-o ro: drx refuses to change anything through the read-only mount (EROFS, one line)" {
    fresh r2 4x4 2x2
    mkdir -p "$S/rodir"
    local ro="$BATS_FILE_TMPDIR/ro"
    mount_store "$S" "$ro" -o ro
    # one clear line for each command that would change the store
    for cmd in "put $ro/r2" "extend $ro/r2 0 2" "extend $ro/r2/ 1 1" \
        "create $ro/new --type i8 --shape 4 --chunk 2" "create $ro/rodir/new --type i8 --shape 4 --chunk 2" \
        "rm $ro/r2" "stripe set $ro/rodir --count 1 --extent 4096" "fsck $ro --repair" \
        "init $ro/rodir"; do
        # shellcheck disable=SC2086
        run "$DRX" $cmd <r2.raw
        assert_failure
        assert_equal "${#lines[@]}" 1
        assert_output --partial "read-only file system ($ro is a read-only drxfs mount)"
    done
    [ ! -e "$S/new.xmd" ]
    [ ! -e "$S/rodir/new.xmd" ]
    [ ! -e "$S/rodir/.drx" ]
    run getfattr -n user.drx.stripe "$S/rodir"
    assert_failure
    cmp r2.raw <("$DRX" get "$S/r2")
    [ "$("$PY" -c "import json; print(json.load(open('$ro/r2/info'))['shape'])")" = "[4, 4]" ]
    # reading through it works
    cmp r2.raw <("$DRX" get "$ro/r2")
    "$DRX" info "$ro/r2" >/dev/null
    "$DRX" stripe get "$ro/rodir" >/dev/null
    run "$DRX" fsck "$ro"
    assert_success
    # the same store through the writable mount, or by its own path, is writable
    "$DRX" extend "$M/r2" 0 1
    "$DRX" extend "$S/r2" 0 1
    unmount_store "$ro"
    [ "$("$PY" -c "import json; print(json.load(open('$M/r2/info'))['shape'])")" = "[6, 4]" ]
}

@test "extension while mounted: sizes and bytes are new right after drx extend" {
    fresh x 6x5x4 4x2x3
    # warm every cache first
    cmp x.raw "$M/x/data"
    stat "$M/x/data" "$M/x/data.npy" "$M/x/dim0=-2:/data" >/dev/null
    exec 5<"$M/x/data"
    exec 6<"$M/x/data.npy"
    "$DRX" extend "$S/x" 0 3
    # the next open sees it (close-to-open); a stat without an open may
    # keep the attributes of the clock tick before (README: one tick), so
    # the open comes first
    cmp <("$DRX" get "$S/x") "$M/x/data"
    assert_file_size "$M/x/data" $((9 * 5 * 4 * 8))
    cmp <("$DRX" get "$S/x" dim0=-2:) "$M/x/dim0=-2:/data"
    # through the mounted path, along a dimension that reorders the bytes
    "$DRX" extend "$M/x" 2 5
    cmp <("$DRX" get "$S/x") "$M/x/data"
    assert_file_size "$M/x/data" $((9 * 5 * 9 * 8))
    "$PY" -c "
import numpy as np
a = np.load('$M/x/data.npy')
assert a.shape == (9, 5, 9), a.shape
old = np.arange(120, dtype='<f8').reshape(6, 5, 4)
assert (a[:6, :, :4] == old).all() and (a[6:] == 0).all() and (a[:, :, 4:] == 0).all()"
    # the files opened before keep reading the view they were opened on
    cmp x.raw <(cat <&5)
    "$PY" -c "
import numpy as np, os, io
b = os.read(6, 1 << 20)
a = np.load(io.BytesIO(b))
assert a.shape == (6, 5, 4) and (a == np.arange(120).reshape(6, 5, 4)).all(), a.shape"
    exec 5<&- 6<&-
    # the new region is writable at once
    "$PY" -c "import numpy as np; np.full(5 * 9, 2.5, dtype='<f8').tofile('plane')"
    dd if=plane of="$M/x/dim0=8/data" conv=notrunc status=none
    cmp plane <("$DRX" get "$S/x" dim0=8)
}

# Found by a daily user's audit: after `drx extend`, a descriptor opened
# before it read its own view (SPEC 4) but fstat and lseek(SEEK_END) on it
# gave the new size (the kernel keeps one size per path), so np.fromfile,
# which sizes by fstat, returned the old bytes and then uninitialised
# memory; an open racing an extension saw the same (fstat new, read old).
# Now the process holding it sees its size, and everyone else the new one.
@test "a file opened before an extension: fstat, lseek and reads agree on its own size, others see the new one" {
    fresh o 4x8 4x4
    run "$PY" - "$M/o/data" "$DRX" "$S/o" <<'PY'
import numpy as np, os, subprocess, sys
p, drx, arr = sys.argv[1:4]
f = open(p, "rb")
subprocess.run([drx, "extend", arr, "0", "4"], check=True)
fd = f.fileno()
assert os.fstat(fd).st_size == 256, os.fstat(fd).st_size
assert os.lseek(fd, 0, os.SEEK_END) == 256
os.lseek(fd, 0, os.SEEK_SET)
a = np.fromfile(f, "<f8")
assert a.size == 32 and (a == np.arange(32)).all(), a
# another process sees the new shape, the fill after the old rows
out = subprocess.run([sys.executable, "-c", "import numpy as np, sys; a = np.fromfile(sys.argv[1], '<f8'); print(a.size, a[32:].sum())", p],
                     capture_output=True, text=True, check=True).stdout.split()
assert out == ["64", "0.0"], out
assert int(subprocess.run(["stat", "-c", "%s", p], capture_output=True, text=True).stdout) == 512
# a new open in the same process is on the new shape
g = open(p, "rb")
b = np.fromfile(g, "<f8")
assert b.size == 64 and (b[:32] == np.arange(32)).all() and (b[32:] == 0).all(), b
g.close()
f.seek(0)
assert len(f.read()) == 256 and os.fstat(fd).st_size == 256
f.close()
assert os.stat(p).st_size == 512
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "a file opened before an extension by a thread that is gone: its process still sees its own size" {
    fresh th 4x8 4x4
    run "$PY" - "$M/th/data" "$DRX" "$S/th" <<'PY'
import os, subprocess, sys, threading
p, drx, arr = sys.argv[1:4]
box = {}
t = threading.Thread(target=lambda: box.update(fd=os.open(p, os.O_RDONLY)))
t.start()
t.join()
fd = box["fd"]
subprocess.run([drx, "extend", arr, "0", "4"], check=True)
assert int(subprocess.run(["stat", "-c", "%s", p], capture_output=True, text=True).stdout) == 512
assert os.fstat(fd).st_size == 256, os.fstat(fd).st_size
assert os.lseek(fd, 0, os.SEEK_END) == 256
assert len(os.pread(fd, 1024, 0)) == 256
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

# Found in a loaded CI run of 2026-12-07 (the test above, once): its
# last stat, right after closing the file of the older shape, showed that
# file's size, two ways.  The kernel kept the size that file's own
# attributes had given (a read or lseek(SEEK_END) asks for them) up to two
# clock ticks, past the close (18 of 250 runs of that test with both cores
# busy; here every time).  And the kernel sends the RELEASE of a close in
# the background (close(2) does not wait for it): a worker answered the
# stat before another had handled the RELEASE, so the process still held
# the file, to the daemon (ten closes before the stat: 11 in 200; one:
# about 1 in 150).  Ten, below the kernel's 12 background requests in
# flight: past those a RELEASE may be sent after the stat (README, Known
# limitations).
@test "a stat right after closing files of an older shape shows the current size" {
    "$DRX" rm "$S/cl" 2>/dev/null || true
    "$DRX" create "$S/cl" --type i32 --shape 1x1024 --chunk 64x1024
    run timeout 60 "$PY" - "$M/cl/data" "$DRX" "$S/cl" <<'PY'
import os, subprocess, sys, time
p, drx, arr = sys.argv[1:4]
# fewer rounds under the sanitizers, where each drx takes 0.1 s to start:
# without the fixes 195 of 200 went wrong
rounds = 60 if os.environ.get("DRX_TEST_SANITIZED") else 200
bad = 0
for i in range(rounds):
    fds = [os.open(p, os.O_RDONLY) for _ in range(10)]
    subprocess.run([drx, "extend", arr, "0", "1"], check=True)
    # the size the kernel held from before the extension lasts up to two
    # clock ticks (README: attr_timeout): past them, every stat asks
    time.sleep(0.02)
    old = os.fstat(fds[0]).st_size
    assert os.lseek(fds[0], 0, os.SEEK_END) == old
    for fd in fds:
        os.close(fd)
    new = os.stat(p).st_size
    if new != old + 4096:
        bad += 1
        print("iteration", i, "own size", old, "after the closes", new)
print("wrong sizes", bad, "of", rounds)
sys.exit(bad != 0)
PY
    echo "$output"
    assert_success
}

@test "an .xta replaced by a rename while its .xmd stays (a restore of the chunks alone) serves the new file" {
    fresh rp 4x4 2x2
    cmp rp.raw "$M/rp/data"
    cp -p "$S/rp.xta" "$S/rp.xta.new"
    "$PY" -c "import numpy as np; np.full(16, 7.5, dtype='<f8').tofile('new.raw')"
    dd if=new.raw of="$S/rp.xta.new" conv=notrunc status=none
    mv "$S/rp.xta.new" "$S/rp.xta"
    # the next open reads the new file (it was the old handle's bytes)
    "$PY" -c "
import numpy as np
a = np.fromfile('$M/rp/data', '<f8')
assert (np.sort(a) == 7.5).all(), a"
    cmp <("$DRX" get "$S/rp") "$M/rp/data"
}

@test "opens racing extensions: fstat, every read to the end and lseek(SEEK_END) agree" {
    "$DRX" rm "$S/race" 2>/dev/null || true
    "$DRX" create "$S/race" --type i32 --shape 4x8 --chunk 4x4 --fill -1
    run "$PY" - "$M/race/data" "$DRX" "$S/race" <<'PY'
import os, subprocess, sys, threading
p, drx, arr = sys.argv[1:4]
done = []
def grow():
    for i in range(120):
        subprocess.run([drx, "extend", arr, str(i % 2), "1"], check=True)
    done.append(1)
t = threading.Thread(target=grow)
t.start()
opens = bad = 0
while not done or opens < 200:
    fd = os.open(p, os.O_RDONLY)
    size, data = os.fstat(fd).st_size, b""
    while (b := os.read(fd, 1 << 20)):
        data += b
    end = os.lseek(fd, 0, os.SEEK_END)
    os.close(fd)
    opens += 1
    if len(data) != size or end != size:
        bad += 1
        print("fstat", size, "read", len(data), "lseek", end)
t.join()
print(opens, "opens,", bad, "disagreeing")
# a residual race remains (README: up to 8 in 20,000 opens under full CPU
# load; 2 in 178 once beside CI's two other suites, 2026-12-07); before
# the fix 1 in 20 disagreed (12 of 256)
assert opens >= 200 and bad * 40 <= opens, (opens, bad)
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

# Found in the CI run of 2026-12-07 (mount_fsx's four exercisers, once)
# and then made to happen every time: with the kernel's atomic O_TRUNC, an
# open(O_TRUNC) of a view (accepted, its size unchanged) left the kernel
# taking the size to be 0 until a GETATTR reply it judged fresh, and any
# invalidation meanwhile (a write through another view of the array) made
# it stale: reads right after the open saw EOF (1081 of 20137 opens).
@test "open(O_TRUNC) of a view while other views of the array are written: reads see the whole view" {
    fresh ot 13x20x6 4x4x4
    run timeout 120 "$PY" - "$M/ot" <<'PY'
import os, sys, threading
a = sys.argv[1]
stop = []
# 5% of the opens failed before the fix; under the sanitizers 3000 took 32 s
opens = 600 if os.environ.get("DRX_TEST_SANITIZED") else 3000
def writer(v):
    fd = os.open(f"{a}/{v}/data", os.O_RDWR)
    n, i = os.fstat(fd).st_size, 0
    while not stop:
        os.pwrite(fd, bytes([i % 256]) * 16, (i * 16) % (n - 16))
        i += 1
    os.close(fd)
ts = [threading.Thread(target=writer, args=(v,)) for v in ("dim2=0:2", "dim2=5")]
for t in ts:
    t.start()
bad = 0
try:
    for k in range(opens):
        fd = os.open(f"{a}/dim2=3:5/data", os.O_RDWR | os.O_TRUNC)
        size = os.fstat(fd).st_size
        got = len(os.pread(fd, size + 1, 0))
        os.close(fd)
        bad += got != size
finally:
    stop.append(1)
    for t in ts:
        t.join()
print("short reads", bad, "of", opens)
sys.exit(bad != 0)
PY
    echo "$output"
    assert_success
}

@test "bytes written by drx put show at the next open" {
    fresh q 8x8 4x4
    cmp q.raw "$M/q/data"
    "$PY" -c "import numpy as np; np.full(64, 9.0, dtype='<f8').tofile('nines')"
    "$DRX" put "$S/q" <nines
    cmp nines "$M/q/data"
    cmp <("$DRX" get "$S/q" dim1=3) "$M/q/dim1=3/data"
}

# Found in daily use: `chmod -R g+w DIR` (or go-rwx, to share or close a
# project) over arrays left them without their owner's write bit.  data.nc
# and info show the array's read bits only, so chmod -R asked 0464 of them
# (0444 plus g+w) and that mode became the array's: r--rw-r--, its owner
# unable to write it; and every file of zarr/ was EPERM, so chmod -R and
# chown -R failed though the arrays had changed.  A chmod of an array's
# file now sets the bits the file shows; in zarr/, which chmod -R reaches
# after the array's own files, a chmod or chown asking what the entry
# shows succeeds (any other stays EPERM).  A coordinate's entries are its
# array's: chmod -R reaches them in another array's zarr/ after the
# coordinate itself when the coordinate is named first.
@test "chmod -R and chown -R over a directory of arrays change what they say and keep the owner's write bit" {
    mkdir -p "$S/proj"
    "$DRX" create "$S/proj/t" --type f32 --shape 6x4 --chunk 3x2 --dims time,lat
    "$DRX" create "$S/proj/lat" --type f32 --shape 4 --chunk 4 --dims lat
    echo notes >"$M/proj/notes.txt"
    chmod 644 "$S"/proj/t.x* "$S"/proj/lat.x*
    modes() { stat -c %a "$S"/proj/t.xmd "$S"/proj/t.xta "$S"/proj/lat.xmd "$S"/proj/lat.xta | sort -u | tr '\n' ' '; }
    ls -R "$M/proj" >/dev/null
    cd "$M/proj"
    run chmod -R g+w lat t notes.txt
    echo "$output"
    assert_success
    [ "$(modes)" = "664 " ]
    [ "$(stat -c %a "$M/proj/t/data" "$M/proj/t/data.nc" "$M/proj/t" | tr '\n' ' ')" = "664 444 775 " ]
    run chmod -R go-rwx lat t notes.txt
    echo "$output"
    assert_success
    [ "$(modes)" = "600 " ]
    [ "$(stat -c %a "$M/proj/t/data" "$M/proj/t/info" "$M/proj/t/zarr/lat/0" | tr '\n' ' ')" = "600 400 600 " ]
    run chmod -R a-w lat t
    assert_success
    [ "$(modes)" = "400 " ]
    run chmod -R u+w lat t
    assert_success
    [ "$(modes)" = "600 " ]
    # the documented single-file cases: the array's, as the file shows them
    chmod 640 "$M/proj/t/data.nc"
    [ "$(stat -c %a "$S/proj/t.xta")" = 640 ]
    chmod 755 "$M/proj/t"
    [ "$(stat -c %a "$S/proj/t.xta" "$S/proj/t.xmd" | sort -u)" = 644 ]
    run chown -R 65534:65534 lat t notes.txt
    echo "$output"
    assert_success
    [ "$(stat -c %u:%g "$S"/proj/t.xmd "$S"/proj/t.xta "$S"/proj/lat.xta | sort -u)" = 65534:65534 ]
    # what zarr/ refused before and refuses still: a change asked there
    run chmod 600 t/zarr/t/0.0
    assert_failure
    [ "$(stat -c %a "$S/proj/t.xta")" = 644 ]
    cd /
}

@test "a tar of an array directory restores its data with tar -x --overwrite" {
    fresh tr 6x5 4x2
    tar -C "$M" -cf tr.tar tr/data tr/data.npy
    "$PY" -c "import numpy as np; np.full(30, -1.0).tofile('junk')"
    "$DRX" put "$S/tr" <junk
    # plain tar -x removes a file before making it, which data refuses
    run tar -C "$M" -xf tr.tar tr/data
    assert_failure
    assert_output --partial "Cannot open: File exists"
    cmp junk "$M/tr/data"
    # --overwrite opens it in place
    tar -C "$M" -x --overwrite -f tr.tar tr/data
    cmp tr.raw "$M/tr/data"
    "$DRX" put "$S/tr" <junk
    tar -C "$M" -x --overwrite -f tr.tar tr/data.npy
    "$DRX" get "$S/tr" | cmp tr.raw -
}
