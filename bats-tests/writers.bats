#!/usr/bin/env bats
# Mixed writers of one array: the daemon (writes through the mount), drx put
# and drx-load import at the same time, on elements that share chunks.  A
# write changes only the bytes it was given, and a reader never sees bytes
# older than a write someone completed.  And a read costs the daemon bounded
# memory whatever the chunk size.

load test_helper

# drx-load ranks (by working directory) and background writers of a
# failed test
kill_ours() {
    kill_our_mpi
    local p
    for p in $(jobs -p); do
        kill -9 "$p" 2>/dev/null || true
    done
}

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt"
    mkdir -p "$S"
    # a small ASan quarantine, so that the daemon's peak memory is its own
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8" mount_store "$S" "$M"
}

teardown_file() {
    kill_ours
    unmount_store "$M"
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    kill_ours
    # a test's own mount, when it failed before unmounting it
    if [ -f "$BATS_TEST_TMPDIR/own" ]; then
        unmount_store "$(cat "$BATS_TEST_TMPDIR/own")/m"
        rm -rf "$(cat "$BATS_TEST_TMPDIR/own")"
    fi
}

@test "a write through an open file keeps what drx put stored in its chunk meanwhile" {
    # One chunk of 8 rows.  The open file, column 0, reads (its chunk is
    # cached), drx put stores row 5, then the open file writes column 0,
    # which merges with the rest of the chunk between its elements: row 5
    # stays as put stored it.
    "$DRX" create "$S/lu" --type f64 --shape 8x64 --chunk 8x64
    "$PY" -c "import numpy as np; np.arange(512, dtype='<f8').tofile('all')"
    "$DRX" put "$S/lu" <all
    "$PY" - "$M/lu/dim1=0/data" "$DRX" "$S/lu" <<'PY'
import os, subprocess, sys, time
import numpy as np
path, drx, arr = sys.argv[1:]
fd = os.open(path, os.O_RDWR)
assert np.frombuffer(os.pread(fd, 64, 0), '<f8')[3] == 3 * 64
row5 = np.full(64, 5e5, '<f8').tobytes()
subprocess.run([drx, "put", arr, "dim0=5"], input=row5, check=True)
time.sleep(1)
os.pwrite(fd, np.full(8, -1.0, '<f8').tobytes(), 0)
os.close(fd)
PY
    "$PY" - "$DRX" "$S/lu" <<'PY'
import subprocess, sys
import numpy as np
got = np.frombuffer(subprocess.run([sys.argv[1], "get", sys.argv[2]], capture_output=True,
                                   check=True).stdout, '<f8').reshape(8, 64)
want = np.arange(512, dtype='<f8').reshape(8, 64)
want[5] = 5e5
want[:, 0] = -1
bad = np.argwhere(got != want)
assert len(bad) == 0, f"{len(bad)} elements differ, first at {bad[0]}: {got[tuple(bad[0])]}"
PY
}

@test "an open file reads what drx put stored after its open, not its cache" {
    "$DRX" create "$S/co" --type u32 --shape 16x256 --chunk 16x256
    "$PY" -c "import numpy as np; np.arange(4096, dtype='<u4').tofile('all')"
    "$DRX" put "$S/co" <all
    "$PY" - "$M/co/data" "$DRX" "$S/co" <<'PY'
import os, subprocess, sys, time
import numpy as np
path, drx, arr = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
for r in range(5):
    before = np.frombuffer(os.pread(fd, 16384, 0), '<u4').reshape(16, 256)
    new = np.full(256, 1000 * (r + 1), '<u4')
    subprocess.run([drx, "put", arr, f"dim0={r}"], input=new.tobytes(), check=True)
    # README: a descriptor opened before drx put reads the new bytes a
    # clock tick after it (attributes kept one tick, auto_inval_data);
    # within the tick its pages may be the old ones (a drx put quicker
    # than the 4 ms tick read stale here, 3 runs of 3 on a quiet VM).
    # 20 ms: a tick of HZ = 100 and then some.
    time.sleep(0.02)
    after = np.frombuffer(os.pread(fd, 16384, 0), '<u4').reshape(16, 256)
    assert (after[r] == new).all(), f"round {r}: row {r} reads {after[r][:4]}, not {new[:4]}"
    assert (after[r + 1:] == before[r + 1:]).all()
os.close(fd)
PY
}

@test "the daemon, drx put and drx-load write interleaved elements of every chunk: none lost" {
    # 32x32x16 f64 in 16x16x16 chunks: every writer touches every chunk,
    # each on its own elements along the fastest dimension, so each merges
    # with the others' bytes in every write.  For 5 s each writer writes
    # round after round of values that name the writer and the round, and
    # notes its last round; then every element must hold its writer's last.
    # The mount's writer goes on until the others are done: its last merges
    # come after their last writes.
    "$DRX" create "$S/mx" --type f64 --shape 32x32x16 --chunk 16x16x16
    end=$(($(date +%s) + 5))
    "$PY" - "$M/mx/dim2=0:16:2/data" "$end" <<'PY' &
import os, sys, time
import numpy as np
path, end = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
r = 0
while True:
    v = np.full(32 * 32 * 8, 100 + r, '<f8').tobytes()
    for off in range(0, len(v), 4096):     # many small writes, each a merge
        os.pwrite(fd, v[off:off + 4096], off)
        os.pread(fd, 4096, off)            # and reads, that fill the cache
    if time.time() > end and os.path.exists('last.put') and os.path.exists('last.load'):
        break
    r += 1
os.close(fd)
open('last.mount', 'w').write(str(r))
PY
    mount_pid=$!
    (
        r=0
        while :; do
            "$PY" -c "import numpy as np, sys; sys.stdout.buffer.write(np.full(32*32*4, 200 + $r, '<f8').tobytes())" |
                "$DRX" put "$S/mx" dim2=1:16:4 || exit 1
            [ "$(date +%s)" -gt "$end" ] && break
            r=$((r + 1))
        done
        echo "$r" >last.put
    ) &
    put_pid=$!
    (
        r=0
        while :; do
            "$PY" -c "import numpy as np; np.full(32*32*4, 300 + $r, '<f8').tofile('raw')"
            timeout 120 mpiexec -n 2 "$DRX_LOAD" --no-progress import "$S/mx" raw dim2=3:16:4 || exit 1
            [ "$(date +%s)" -gt "$end" ] && break
            r=$((r + 1))
        done
        echo "$r" >last.load
    ) &
    load_pid=$!
    wait "$mount_pid"
    wait "$put_pid"
    wait "$load_pid"
    echo "# rounds: mount $(cat last.mount), put $(cat last.put), drx-load $(cat last.load)" >&3
    "$PY" - "$DRX" "$S/mx" <<'PY'
import subprocess, sys
import numpy as np
drx, arr = sys.argv[1], sys.argv[2]
last = {w: int(open('last.' + w).read()) for w in ('mount', 'put', 'load')}
got = np.frombuffer(subprocess.run([drx, "get", arr], capture_output=True, check=True).stdout,
                    '<f8').reshape(32, 32, 16)
want = np.zeros((32, 32, 16))
want[:, :, 0:16:2] = 100 + last['mount']
want[:, :, 1:16:4] = 200 + last['put']
want[:, :, 3:16:4] = 300 + last['load']
bad = np.argwhere(got != want)
assert len(bad) == 0, f"{len(bad)} of {got.size} elements lost, first {bad[0]}: {got[tuple(bad[0])]}"
PY
}

@test "two writers of the two halves of every element through the mount: both halves kept" {
    "$DRX" create "$S/half" --type f64 --shape 2048 --chunk 512
    "$PY" - "$M/half/data" <<'PY'
import os, sys
path = sys.argv[1]
pids = []
for half in (0, 1):
    pid = os.fork()
    if pid == 0:
        fd = os.open(path, os.O_RDWR)
        for r in range(10):
            word = bytes([0x10 * (half + 1) + r]) * 4
            for i in range(2048):
                os.pwrite(fd, word, 8 * i + 4 * half)
        os._exit(0)
    pids.append(pid)
for p in pids:
    assert os.waitpid(p, 0)[1] == 0
PY
    "$DRX" get "$S/half" >got
    "$PY" - <<'PY'
data = open('got', 'rb').read()
want = (bytes([0x19]) * 4 + bytes([0x29]) * 4) * 2048
assert data == want, f"{sum(a != b for a, b in zip(data, want))} bytes differ"
PY
}

@test "a read of an array with 1 GiB chunks costs the daemon bounded memory" {
    # One 1 GiB chunk (sparse: the fill is 0); rows 0 and 1 hold a pattern.
    "$DRX" create "$S/big" --type u8 --shape 1024x1024x1024 --chunk 1024x1024x1024
    "$PY" -c "
import numpy as np
i1, i2 = np.meshgrid(np.arange(1024), np.arange(1024), indexing='ij')
rows = np.stack([(i1 * 7 + i2 * 3 + i0) % 251 for i0 in (0, 1)]).astype(np.uint8)
rows.tofile('rows')"
    "$DRX" put "$S/big" dim0=0:2 <rows
    pid=$(cat "$M.pid")
    # four readers at once, three of them meeting the chunk sparsely
    dd if="$M/big/order=F/data" of=f.bin bs=128k count=1 status=none &
    dd if="$M/big/dim2=5/data" of=col.bin bs=128k count=2 status=none &
    dd if="$M/big/dim1=3:1024:300/order=F/data" of=s.bin bs=128k count=1 status=none &
    dd if="$M/big/data" of=c.bin bs=128k count=1 skip=9 status=none &
    wait
    hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
    echo "# daemon peak memory: $hwm KiB" >&3
    [ "$hwm" -lt $((400 * 1024)) ]
    "$PY" - <<'PY'
import numpy as np
i1, i2 = np.meshgrid(np.arange(1024), np.arange(1024), indexing='ij')
a01 = np.stack([(i1 * 7 + i2 * 3 + i0) % 251 for i0 in (0, 1)]).astype(np.uint8)
def elem(i0, i1, i2):
    return a01[i0, i1, i2] if i0 < 2 else 0
f = np.fromfile('f.bin', np.uint8)          # F order: dim0 fastest
want = np.array([elem(n % 1024, n // 1024 % 1024, 0) for n in range(len(f))], np.uint8)
assert len(f) == 131072 and (f == want).all(), "order=F"
col = np.fromfile('col.bin', np.uint8)      # (i0, i1, 5), C order
want = np.array([elem(n // 1024, n % 1024, 5) for n in range(len(col))], np.uint8)
assert len(col) == 262144 and (col == want).all(), "dim2=5"
s = np.fromfile('s.bin', np.uint8)          # i1 in 3, 303, 603, 903; F order
want = np.array([elem(n % 1024, 3 + 300 * (n // 1024 % 4), n // 4096) for n in range(len(s))],
                np.uint8)
assert len(s) == 131072 and (s == want).all(), "strided"
c = np.fromfile("c.bin", np.uint8)          # bytes 9*128 KiB.. of rows 0 and 1
assert len(c) == 131072 and (c == a01.ravel()[9 * 131072:10 * 131072]).all(), "C order"
PY
}

@test "another user's locks on an array's files hold a write or an extension for the bound only, never the mount" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    # flock and read locks need only a read descriptor: any user who may
    # read the .xta can take them and keep them.
    local own
    own=$(mktemp -d /tmp/drxfs-locks.XXXXXX)
    echo "$own" >"$BATS_TEST_TMPDIR/own"
    chmod 755 "$own"
    mkdir -m 1777 "$own/n"
    "$DRX" init "$own/s" >/dev/null
    "$DRX" create "$own/s/a" --type u8 --shape 64 --chunk 16 --fill 1
    chmod 644 "$own/s/a.xta" "$own/s/a.xmd"
    DRX_LOCK_WAIT_MS=1000 mount_store "$own/s" "$own/m" -o allow_other
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import fcntl, os, sys, time
a = os.open(sys.argv[1], os.O_RDONLY)
b = os.open(sys.argv[1], os.O_RDONLY)
fcntl.lockf(a, fcntl.LOCK_SH)    # a read lock on every byte
fcntl.flock(b, fcntl.LOCK_SH)    # and the whole-file lock extensions take
open(sys.argv[2], "w").close()
time.sleep(120)' "$own/s/a.xta" "$own/n/locked" &
    local holder=$!
    for _ in $(seq 100); do [ -e "$own/n/locked" ] && break; sleep 0.1; done
    [ -e "$own/n/locked" ]
    # a write through the mount fails after the bound, not never
    run timeout 60 dd if=/dev/zero of="$own/m/a/data" bs=16 count=1 conv=notrunc status=none
    echo "dd: $status $output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    grep -q "temporarily unavailable" <<<"$output"
    # reads go on; the daemon still serves
    [ "$(od -An -tu1 -N2 "$own/m/a/data" | tr -s ' ')" = " 1 1" ]
    # root's drx extend says what holds it, and changes nothing
    DRX_LOCK_WAIT_MS=500 run timeout 60 "$DRX" extend "$own/s/a" dim0 16
    echo "extend: $status $output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    grep -q "locked by another process" <<<"$output"
    run "$DRX" info "$own/s/a"
    grep -qx "shape: *64" <<<"$output"
    # an attribute through the mount: EBUSY (EAGAIN, which the kernel's
    # setxattr turns into "Operation not supported", was what it got)
    run timeout 60 setfattr -n user.q -v 1 "$own/m/a"
    echo "setfattr: $status $output"
    assert_failure
    assert_output --partial "Device or resource busy"
    run timeout 60 setfattr -x user.q "$own/m/a"
    assert_failure
    assert_output --partial "Device or resource busy"
    # so does root's drx put, of its first chunk
    head -c 64 /dev/zero | tr '\0' '\011' >"$own/nine"
    DRX_LOCK_WAIT_MS=500 run timeout 60 "$DRX" put "$own/s/a" <"$own/nine"
    echo "put: $status $output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    assert_output --partial "a chunk locked by another process for 500 ms"
    [ "$(od -An -tu1 -N1 "$own/s/a.xta" | tr -d ' ')" = 1 ]
    # let go: both go through
    kill "$holder"
    wait "$holder" 2>/dev/null || true
    printf '\x07' | dd of="$own/m/a/data" bs=1 seek=3 conv=notrunc status=none
    "$DRX" extend "$own/s/a" dim0 16
    [ "$(stat -c %s "$own/m/a/data")" -eq 80 ]
    [ "$(od -An -tu1 -j3 -N1 "$own/m/a/data" | tr -d ' ')" = 7 ]
    unmount_store "$own/m"
    rm -rf "$own"
}
