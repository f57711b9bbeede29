#!/usr/bin/env bats
# The README's first command: scripts/demo makes a store, mounts it and the
# things it suggests work.

load test_helper

setup_file() {
    export DEMO="$BATS_FILE_TMPDIR/demo"
}

teardown_file() {
    if mountpoint -q "$DEMO/mnt" 2>/dev/null; then
        fusermount3 -u "$DEMO/mnt" 2>/dev/null || fusermount3 -uz "$DEMO/mnt" 2>/dev/null || true
    fi
    pkill -f "^$DRXFS $DEMO/store" 2>/dev/null || true
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
