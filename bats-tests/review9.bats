#!/usr/bin/env bats
# The ninth hostile review: what another local user makes a root daemon
# (allow_other) and root's drx do: flood root's log, plant coordinate
# variables in root's netCDF and zarr views, and have root's fsck --repair
# cut a victim's subfiles.  Each test failed before its fix.

load test_helper

setup() {
    hostile_setup review9
}

teardown() {
    [ -n "${RV:-}" ] || return 0
    unmount_store "$RV/m"
    rm -rf "$RV"
}

# user_dir_store: a store in $RV/s with a directory u of user nobody's,
# mounted at $RV/m for every user
user_dir_store() {
    "$DRX" init "$RV/s" >/dev/null
    mkdir "$RV/s/u"
    chown 65534:65534 "$RV/s/u"
    mount_store "$RV/s" "$RV/m" -o allow_other
}

# Found in review: a subfile refused (a symlink, another user's, a hard
# link) was logged at error on every open: user nobody, opening a
# metafile of his naming root's subfiles in a loop, wrote as many lines
# into root's log (syslog, or drxfs -f's stderr).  Every message a user
# can cause at will is now rate-limited per call site: the first report of
# each distinct message, repeats counted and the count logged when the
# window ends or the daemon stops.
@test "a refused subfile opened 2000 times logs a bounded number of lines, and the suppressed count" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    user_dir_store
    head -c 200000 /dev/urandom >"$RV/m/secret"
    chmod 600 "$RV/m/secret"
    commit_mount "$RV/m"
    sed 's/^size = .*/size = 200000L;/' "$RV/s/secret.nafs" >"$RV/n/planted"
    nob cp "$RV/n/planted" "$RV/s/u/steal.nafs"
    nob chmod 644 "$RV/s/u/steal.nafs"
    nob "$PY" - "$RV/m/u/steal" <<'PY'
import sys
for i in range(2000):
    try:
        with open(sys.argv[1], "rb") as f:
            f.read(10)
    except OSError:
        pass
PY
    run grep -c "belongs to another user than its metafile" "$RV/m.log"
    echo "refusals logged: $output"
    [ "$output" -ge 1 ] && [ "$output" -le 10 ]
    [ "$(wc -l <"$RV/m.log")" -le 60 ]
    unmount_store "$RV/m"
    run grep "suppressed" "$RV/m.log"
    echo "$output"
    assert_output --regexp '\(([0-9]{3,}) more like ".*belongs to another user than its.*" suppressed'
}
