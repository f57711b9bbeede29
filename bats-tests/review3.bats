#!/usr/bin/env bats
# The third hostile review: what a careless user and another local user do
# to a mounted store on a small disk, with drx beside the mount.  Each test
# failed before its fix.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
    RV=$(mktemp -d /tmp/drxfs-review3.XXXXXX)
    chmod 755 "$RV"
}

teardown() {
    [ -n "${RV:-}" ] || return 0
    unmount_store "$RV/m"
    umount "$RV/t" 2>/dev/null || umount -l "$RV/t" 2>/dev/null || true
    rm -rf "$RV"
}

# small_store MIB: a store on a tmpfs of MIB MiB at $RV/t/s, mounted at $RV/m
small_store() {
    mkdir -p "$RV/t"
    mount -t tmpfs -o size="$1"m tmpfs "$RV/t"
    "$DRX" init "$RV/t/s" >/dev/null
    mount_store "$RV/t/s" "$RV/m"
}

# Found in review: the daemon keeps up to 32 idle array handles, each with
# its .xta open, and dropped one only when a later lookup of the same name
# saw the .xmd change.  `drx rm` (or `drx mv`) of an array the mount had
# shown left its handle, so the removed .xta kept its blocks until
# unmount: a full disk stayed full after the user removed the array.
@test "drx rm of an array the mount has read gives its space back" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (tmpfs mount)"
    small_store 4
    "$DRX" create "$RV/t/s/a" --type f64 --shape 384x1024 --chunk 64x1024
    head -c 3145728 /dev/urandom >"$RV/r.bin"
    "$DRX" put "$RV/t/s/a" <"$RV/r.bin"
    cmp "$RV/r.bin" "$RV/m/a/data"
    "$DRX" rm "$RV/t/s/a"
    local i
    for ((i = 0; i < 50; i++)); do
        [ "$(df -k --output=used "$RV/t" | tail -1)" -lt 1024 ] && break
        sleep 0.1
    done
    run ls -l "/proc/$(cat "$RV/m.pid")/fd"
    refute_output --partial "a.xta (deleted)"
    # the space is there again: the same array fits once more
    "$DRX" create "$RV/t/s/b" --type f64 --shape 384x1024 --chunk 64x1024
    "$DRX" put "$RV/t/s/b" <"$RV/r.bin"
    cmp "$RV/r.bin" "$RV/m/b/data"
}
