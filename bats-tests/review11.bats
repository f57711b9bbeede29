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

# small_full: a 1 MiB tmpfs at small with a store small/s, then filled
# to the last block
small_full() {
    mkdir small
    mount -t tmpfs -o size=1m tmpfs small
    "$DRX" init small/s >/dev/null
    "$@"
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
