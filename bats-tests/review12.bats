#!/usr/bin/env bats
# The twelfth hostile review.  Each test of a fix failed before it.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    local m
    for m in "$BATS_TEST_TMPDIR"/m "$BATS_TEST_TMPDIR"/m2; do
        unmount_store "$m"
    done
    kill_our_mpi
}

# until_lines N FILE PID: waits until FILE has N lines or process PID has
# ended (at most 10 s); true when the lines came
until_lines() {
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(wc -l <"$2" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.05
    done
    [ "$(wc -l <"$2" 2>/dev/null || echo 0)" -ge "$1" ]
}

# Found in the twelfth review: drx-load and DRX-MP checked NAME.xta
# (drx_array_open, without following a symlink) and then opened it again
# by its path (MPI_File_open, the chunk-lock descriptor, the reservation):
# a user owning the array's directory who swapped a symlink in between,
# and the real file back after, had root's import write into any file.
# The path's opens are made to wait here (strace), so the swap lands in
# the window every time.  Now every later open goes through the checked
# descriptor (/proc/self/fd/N).
@test "drx-load import: a symlink swapped in for the .xta after its check leads nowhere" {
    command -v strace >/dev/null || skip "no strace"
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type u8 --shape 4096 --chunk 1024
    head -c 4096 /dev/urandom >raw
    head -c 4096 /dev/zero | tr '\0' V >victim
    cp victim victim.ref
    # libcore reaches the .xta in its directory opened once (struct
    # drx_pin: /proc/self/fd/N/a.xta): that name, from a first run, is
    # traced too
    env "$NO_LSAN" strace -f -qq -e trace=openat -o trace0 timeout 60 mpiexec -n 1 "$DRX_LOAD" \
        import st/a raw
    local pinned
    pinned=$(grep -o '"/proc/self/fd/[0-9]*/a\.xta"' trace0 | head -1 | tr -d '"')
    [ -n "$pinned" ] || pinned="$PWD/st/a.xta"
    # every open of the path after the first (the check) waits 1.5 s
    strace -f -qq -P "$PWD/st/a.xta" -P "$pinned" -e trace=openat \
        -e inject=openat:delay_enter=1500000:when=2+ \
        -o trace timeout 60 mpiexec -n 1 "$DRX_LOAD" import st/a raw >import.out 2>&1 &
    local pid=$!
    until_lines 1 trace "$pid" || fail "the import never opened st/a.xta: $(cat import.out)"
    mv st/a.xta st/a.real
    ln -s "$PWD/victim" st/a.xta
    # a second open by the path went to the victim: the real file back
    until_lines 2 trace "$pid" || true
    rm st/a.xta
    mv st/a.real st/a.xta
    wait "$pid" || true
    cat trace import.out
    cmp victim victim.ref || fail "the import wrote into the file a symlink led to"
    [ "$(grep -c 'a.xta' trace)" -eq 1 ] || fail "st/a.xta was opened again by its path"
    cmp raw st/a.xta
}

@test "drx-load copy: a symlink swapped in for a subfile after its check leads nowhere" {
    command -v strace >/dev/null || skip "no strace"
    "$DRX" init st >/dev/null
    head -c 200000 /dev/urandom >src
    mpi_load() { timeout 60 mpiexec -n "$1" "$DRX_LOAD" "${@:2}"; }
    mpi_load 1 copy src st/f
    local sub pid
    sub=$("$DRX" stripe get st/f | sed -n 's/^subfile 0: \([^ ]*\) .*/\1/p')
    [ -f "$sub" ]
    head -c 200000 /dev/zero | tr '\0' S >secret
    # each access of the subfile's path (MPI-IO's statfs, then its open)
    # is traced; the opens wait 1.5 s
    strace -f -qq -P "$sub" -e trace=openat,statfs -e inject=openat:delay_enter=1500000 \
        -o trace timeout 60 mpiexec -n 1 "$DRX_LOAD" copy st/f out >copy.out 2>&1 &
    pid=$!
    if until_lines 1 trace "$pid"; then
        mv "$sub" "$sub.real"
        ln -s "$PWD/secret" "$sub"
        until_lines 2 trace "$pid" || true
        rm "$sub"
        mv "$sub.real" "$sub"
    fi
    wait "$pid" || true
    cat trace copy.out
    ! grep -q SSSS out || fail "the copy read the file a symlink led to"
    cmp src out
    [ "$(grep -c 'openat' trace)" -eq 0 ] || fail "the subfile was opened by its path"
}

# Found in the twelfth review: SEEK_DATA or SEEK_HOLE on a view's file
# answered ENOSYS, which the kernel takes as "no lseek on this
# connection": from then on every file of the mount, striped files too,
# looked all data to cp, tar -S and rsync -S, until a remount.
@test "SEEK_HOLE on a view's file: all data up to its size, and striped files keep their holes" {
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type f64 --shape 6x5 --chunk 2x2
    mount_store st m
    truncate -s 10M m/sparse
    printf x | dd of=m/sparse bs=1 seek=5000000 conv=notrunc status=none
    "$PY" - m <<'PY'
import os, sys
m = sys.argv[1]
def seek(p, off, whence):
    fd = os.open(p, os.O_RDONLY)
    try:
        return os.lseek(fd, off, whence)
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
def hole_at_0():
    return seek(m + "/sparse", 0, os.SEEK_HOLE) == 0 and seek(m + "/sparse", 0, os.SEEK_DATA) > 0
assert hole_at_0(), "the striped file shows no hole"
import errno
for f in ["a/data", "a/data.npy", "a/info", "a/data.nc", "a/zarr/a/0.0", "a/dim0=1:3/data"]:
    p = m + "/" + f
    size = os.stat(p).st_size
    assert seek(p, 0, os.SEEK_DATA) == 0, f
    assert seek(p, 1, os.SEEK_HOLE) == size, (f, seek(p, 1, os.SEEK_HOLE), size)
    assert seek(p, size, os.SEEK_DATA) == errno.ENXIO, f
    assert seek(p, size + 10, os.SEEK_HOLE) == errno.ENXIO, f
assert hole_at_0(), "after SEEK_HOLE on views, the striped file shows no hole"
PY
    unmount_store m
}

# Found in the twelfth review: a file written and closed through one
# mount is recorded by its batched commit up to commit_interval later;
# meanwhile a second mount of the store (another node's, on a shared file
# system) took the recorded size for the file's: its growing truncate cut
# the first mount's bytes as a crash's leftovers, and its append landed
# at offset 0 over them; the first mount's commit then recorded its size
# over zeros.  Now a writer holds a lock while its size runs ahead of the
# metafile, and the other mount waits for the commit (no sleep here: the
# second mount's own calls wait).
@test "two mounts: a truncate or append through one, right after a close through the other, sees the whole file" {
    "$DRX" init st >/dev/null
    # (a shorter commit interval than the 5 s default: the same window,
    # waited for in a second)
    mount_store st m -o commit_interval=1
    mount_store st m2
    head -c 300000 /dev/urandom >orig
    cp orig m/f
    truncate -s 1000 m2/f
    [ "$(stat -c %s m2/f)" -eq 1000 ]
    cmp <(head -c 1000 orig) m2/f
    cp orig m/g
    echo APPENDED >>m2/g
    [ "$(stat -c %s m2/g)" -eq 300009 ]
    cmp <(cat orig; echo APPENDED) m2/g
    # and through the first mount, once its own view is fresh
    commit_mount m
    cmp <(head -c 1000 orig) m/f
    cmp <(cat orig; echo APPENDED) m/g
    # a reader of the second mount right after a close through the first
    cp orig m/h
    cmp orig m2/h
    unmount_store m2
    unmount_store m
    run "$DRX" fsck st
    assert_success
}

# Found in the thirteenth review: the pending mark was set at the RELEASE,
# which the kernel sends after close(2) has returned (and not at all while
# another descriptor of the open file lives: a child's copy).  A process
# acting right after the close (drx, another mount's truncate or append)
# found neither the mark nor the size.  Here a child keeps the file open,
# so no RELEASE comes: the mark is set at the close's FLUSH, and the
# commit records the size within its interval although the file is open.
@test "two mounts: the size a close leaves is waited for from the close on, even while a child keeps the file open" {
    "$DRX" init st >/dev/null
    mount_store st m -o commit_interval=2
    mount_store st m2
    head -c 300000 /dev/urandom >orig
    cp orig m/f
    commit_mount m
    "$PY" - m/f <<'EOF2' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"x" * 5000)
if os.fork() == 0:
    time.sleep(8)  # the child keeps its copy of the descriptor
    os._exit(0)
os.close(fd)  # FLUSH, no RELEASE
open("closed", "w").close()
os.wait()
EOF2
    local pid=$!
    for _ in $(seq 100); do [ -e closed ] && break; sleep 0.1; done
    [ -e closed ]
    # drx tells the size waits; the second mount waits for it (the
    # commit records it while the child still has the file open)
    # (drx reads the size, then looks for the mark: a commit between them
    # shows the old size without the mark)
    run "$DRX" stripe get st/f
    if [[ "$output" == *"size pending"* ]]; then
        assert_line --index 1 "size=300000"
    else
        assert_line --regexp '^size=30[05]000$'
    fi
    [ "$(stat -c %s m2/f)" -eq 305000 ] || fail "the second mount saw the size before the close"
    # and its append lands after the first's bytes
    echo APPENDED >>m2/f
    [ "$(stat -c %s m2/f)" -eq 305009 ]
    cmp <(cat orig; head -c 5000 /dev/zero | tr '\0' x; echo APPENDED) m2/f
    wait "$pid"
    unmount_store m2
    unmount_store m
    run "$DRX" fsck st
    assert_success
}
