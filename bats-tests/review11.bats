#!/usr/bin/env bats
# The eleventh hostile review: crashes (kill -9 of a writer at each of
# its syscalls in turn) and full disks on the writers' paths.  Each test
# failed before its fix.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    unmount_store "$BATS_TEST_TMPDIR/m"
    umount "$BATS_TEST_TMPDIR/small" 2>/dev/null || umount -l "$BATS_TEST_TMPDIR/small" 2>/dev/null || true
    kill_our_mpi
}

# small_full: a 1 MiB tmpfs at small with a store small/s, filled to
# the last block
small_full() {
    mkdir small
    mount -t tmpfs -o size=1m tmpfs small
    "$DRX" init small/s >/dev/null
    dd if=/dev/zero of=small/filler bs=4k status=none 2>/dev/null || true
}

# Found in review: drx-load copy into a full store failed with ENOSPC
# and left its temporary metafile (.NAME.nafs.XXXXXX, empty: created,
# then not written) behind, which fsck then reported as a leftover of an
# interrupted update, a failure that was not "nothing half-done".
@test "drx-load copy into a full store fails with ENOSPC and leaves no temporary file" {
    small_full
    random_bytes src 300000
    run timeout 120 "$DRX_LOAD" copy src small/s/cp
    assert_failure
    assert_output --partial "No space left on device"
    run ls -A small/s
    assert_output .drx
    run "$DRX" fsck small/s
    assert_success
    # with room the same copy goes in whole
    rm small/filler
    timeout 120 "$DRX_LOAD" copy src small/s/cp
    timeout 120 "$DRX_LOAD" copy small/s/cp back
    cmp src back
    run "$DRX" fsck small/s
    assert_success
}

# one_page_left: small/s with two i32 arrays z (dims y,x) and w of one
# 8 KiB chunk each, never written (holes, fill 0), mounted at m; then the
# tmpfs filled but for one free page
one_page_left() {
    mkdir small
    mount -t tmpfs -o size=1m tmpfs small
    "$DRX" init small/s >/dev/null
    "$DRX" create small/s/z --type i32 --shape 64x32 --chunk 64x32 --dims y,x
    "$DRX" create small/s/w --type i32 --shape 64x32 --chunk 64x32
    mount_store small/s "$BATS_TEST_TMPDIR/m"
    ls m/z/zarr/z >/dev/null
    dd if=/dev/zero of=small/filler bs=4k status=none 2>/dev/null || true
    truncate -s -4096 small/filler
    [ "$(stat -f -c %a small)" -eq 1 ]
}

# Found in review: a chunk key renamed into zarr/ on a disk with room for
# half the chunk failed with ENOSPC after its pwrite had stored the first
# half: the key then read half new, half old, though the rename that is
# zarr's whole-key write said it failed.  Now the chunk's blocks are
# reserved first and a full disk stores none of it.
@test "a zarr key renamed onto a disk with room for half its chunk fails with ENOSPC and stores none of it" {
    one_page_left
    run "$PY" - <<'PY'
import errno, os
d = "m/z/zarr/z/"
with open(d + ".k.partial", "wb") as f:
    f.write(b"\x05" * 8192)
try:
    os.rename(d + ".k.partial", d + "0.0")
    print("stored")
except OSError as e:
    os.unlink(d + ".k.partial")
    print(errno.errorcode[e.errno])
PY
    assert_output ENOSPC
    # the chunk as it was: fill, no byte of the failed key
    run "$PY" -c 'import sys; print(open(sys.argv[1], "rb").read().count(5))' small/s/z.xta
    assert_output 0
    grep -q "z/0.0: reserving the chunk's space: No space left on device; nothing stored" m.log
    [ "$(stat -f -c %a small)" -eq 1 ]
    run "$DRX" fsck small/s
    assert_success
}

# Found in review: the same through an array's data file: a write of one
# chunk with room for half of it stored the first half and answered
# ENOSPC, so dd said 0 bytes written while 4 KiB had changed (the copy
# engine writes chunk by chunk, so no short count could say which part).
# Now a write reserves its spans first: all of it or, on a full disk,
# none; a write that fits still goes in.
@test "a write through data on a disk with room for half of it fails with ENOSPC and changes nothing" {
    one_page_left
    run dd if=<("$PY" -c 'import sys; sys.stdout.buffer.write(b"\x05" * 8192)') of=m/w/data bs=8192 count=1 conv=notrunc status=none
    assert_failure
    assert_output --partial "No space left on device"
    run "$PY" -c 'import sys; print(open(sys.argv[1], "rb").read().count(5))' small/s/w.xta
    assert_output 0
    [ "$(stat -f -c %a small)" -eq 1 ]
    # what fits in the free page goes in
    "$PY" -c 'import sys; sys.stdout.buffer.write(b"\x06" * 4000)' | dd of=m/w/data bs=4000 count=1 conv=notrunc status=none
    run "$PY" -c 'import sys; print(open(sys.argv[1], "rb").read().count(6))' small/s/w.xta
    assert_output 4000
    run "$DRX" fsck small/s
    assert_success
}
