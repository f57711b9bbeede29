#!/usr/bin/env bats
# The README's first command: scripts/demo makes a store, mounts it and the
# things it suggests work.

load test_helper

setup_file() {
    export DEMO="$BATS_FILE_TMPDIR/demo"
}

# unmount_demo DIR: the demo's mount at DIR/mnt gone, and its daemon
# (found by its command line: DIR is ours alone).
unmount_demo() {
    if mountpoint -q "$1/mnt" 2>/dev/null; then
        fusermount3 -u "$1/mnt" 2>/dev/null || fusermount3 -uz "$1/mnt" 2>/dev/null || true
    fi
    # the demo's daemon (its pid in DIR/.drxfs.pid): gone after the
    # unmount, or stopped here
    local pid
    pid=$(cat "$1/.drxfs.pid" 2>/dev/null) || return 0
    for _ in $(seq 100); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = drxfs ] || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

teardown_file() {
    unmount_demo "$DEMO"
}

teardown() {
    local d
    for d in "$BATS_TEST_TMPDIR"/*/; do
        [ -d "$d" ] && unmount_demo "${d%/}"
    done
    return 0
}

@test "scripts/demo mounts a store with a grown array and a striped file" {
    run env DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo" "$DEMO"
    assert_success
    assert_output --partial "drxfs demo mounted at $DEMO/mnt"
    mountpoint -q "$DEMO/mnt"
    run ls "$DEMO/mnt"
    assert_output "README.txt
numbers.txt
temp"
    # temp: created 24x90x180, grown along time and lon
    "$PY" -c "import json; j = json.load(open('$DEMO/mnt/temp/info')); assert j['shape'] == [36, 90, 190] and len(j['history']) == 2, j"
    run "$PY" -c "import numpy; print(numpy.load('$DEMO/mnt/temp/time=-1/lon=::30/data.npy').shape)"
    assert_output "(1, 90, 7)"
    cmp <("$DRX" get "$DEMO/store/temp" lat=45) "$DEMO/mnt/temp/lat=45/data"
    run getfattr --absolute-names --only-values -n user.drx.stripe "$DEMO/mnt/numbers.txt"
    assert_output "count=2 extent=65536"
    cmp <(seq 1 200000) "$DEMO/mnt/numbers.txt"
    # the suggested extension through the mounted path shows at once
    "$DRX" extend "$DEMO/mnt/temp" time 1
    "$PY" -c "import json; assert json.load(open('$DEMO/mnt/temp/info'))['shape'][0] == 37"
    fusermount3 -u "$DEMO/mnt"
}

@test "scripts/demo without DIR works in a new private directory" {
    # mktemp -d honours TMPDIR: keep the test's directory inside its own
    run env TMPDIR="$BATS_TEST_TMPDIR" DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo"
    assert_success
    local dir
    dir=$(sed -n 's/^drxfs demo mounted at \(.*\)\/mnt (store: .*$/\1/p' <<<"$output")
    [[ $dir == "$BATS_TEST_TMPDIR"/drx-demo.?????? ]] || { echo "demo dir: '$dir'"; return 1; }
    assert_equal "$(stat -c %a "$dir")" 700
    mountpoint -q "$dir/mnt"
    assert_file_exists "$dir/mnt/temp/info"
    # a second run makes another directory, leaving the first alone
    run env TMPDIR="$BATS_TEST_TMPDIR" DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo"
    assert_success
    refute_output --partial "$dir/mnt"
    mountpoint -q "$dir/mnt"
    unmount_demo "$dir"
}

@test "scripts/demo replaces only a store it made: never one it did not make" {
    local d="$BATS_TEST_TMPDIR/mine"
    mkdir "$d"
    "$DRX" init "$d/store" >/dev/null
    "$DRX" create "$d/store/precious" --type u8 --shape 4 --chunk 2 --fill 7
    run env DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo" "$d"
    assert_failure
    assert_output --partial "did not make"
    assert_file_exists "$d/store/precious.xmd"
    ! mountpoint -q "$d/mnt"
    # its own store, in the same DIR twice: the second run unmounts and
    # replaces it
    local o="$BATS_TEST_TMPDIR/ours"
    run env DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo" "$o"
    assert_success
    echo extra >"$o/mnt/extra.txt"
    run env DRX_BUILD="$DRX_BUILD" "$DRX_SOURCE/scripts/demo" "$o"
    assert_success
    mountpoint -q "$o/mnt"
    assert_file_not_exists "$o/mnt/extra.txt"
    assert_file_exists "$o/mnt/temp/info"
    unmount_demo "$o"
}
