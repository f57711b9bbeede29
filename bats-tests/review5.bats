#!/usr/bin/env bats
# The fifth hostile review: what one local user's open descriptors do to
# a root daemon mounted with allow_other, and what the daemon does when it
# runs out of them.  Each test failed before its fix.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
    RV=$(mktemp -d /tmp/drxfs-review5.XXXXXX)
    chmod 755 "$RV"
    mkdir -m 1777 "$RV/n" # what nobody may write
}

teardown() {
    [ -n "${APID:-}" ] && kill "$APID" 2>/dev/null || true
    [ -n "${APID:-}" ] && wait "$APID" 2>/dev/null || true
    [ -n "${RV:-}" ] || return 0
    # a daemon a test starved of descriptors gets them back before unmount
    [ -f "$RV/m.pid" ] && prlimit --pid "$(cat "$RV/m.pid")" --nofile="$(ulimit -Hn)" 2>/dev/null
    unmount_store "$RV/m"
    rm -rf "$RV"
}

# Found in review: the batched commit recorded a striped file's size once;
# when that failed for want of a descriptor (EMFILE: the daemon's table was
# full, here of a user's opens) it dropped the file, and its final close
# failed the same way.  The bytes stayed in the subfiles past a size of 0:
# a file cp had written and closed read as empty, and fsck --repair would
# cut them.  A commit that fails for want of descriptors or memory now
# keeps the file for the next round.  The daemon is starved with prlimit
# (the user's way is the next test's, which the daemon now bounds).
@test "a commit that finds the daemon out of descriptors records the size at a later round" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (prlimit of the daemon)"
    local pid i
    "$DRX" init "$RV/s" >/dev/null
    mount_store "$RV/s" "$RV/m" -o commit_interval=1
    pid=$(cat "$RV/m.pid")
    head -c 300000 /dev/urandom >"$RV/r.bin"
    cp "$RV/r.bin" "$RV/m/victim"
    # every new descriptor of the daemon fails with EMFILE
    prlimit --pid "$pid" --nofile=4:"$(ulimit -Hn)"
    for ((i = 0; i < 100; i++)); do
        grep -q "commit of a striped file: Too many open files" "$RV/m.log" && break
        sleep 0.1
    done
    grep -q "commit of a striped file: Too many open files" "$RV/m.log"
    prlimit --pid "$pid" --nofile="$(ulimit -Hn)"
    commit_mount "$RV/m"
    run "$DRX" stripe get "$RV/s/victim"
    assert_output --partial "size=300000"
    cmp "$RV/r.bin" "$RV/m/victim"
    run "$DRX" fsck "$RV/s"
    assert_success
}
