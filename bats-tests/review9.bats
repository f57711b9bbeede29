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
    hostile_teardown
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
    nob_opens "$RV/m/u/steal" 2000
    logged_bounded "belongs to another user than its metafile" "$RV/m.log"
    unmount_store "$RV/m"
    run grep "suppressed" "$RV/m.log"
    echo "$output"
    assert_output --regexp '\(([0-9]{3,}) more like ".*belongs to another user than its.*" suppressed'
}

# put_i32 ARRAY V...: the elements of 1-D i32 array ARRAY
put_i32() {
    local a=$1
    shift
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array(sys.argv[1:], "<i4").tobytes())' "$@" |
        "$DRX" put "$a"
}

# xr_time NC: the time coordinate xarray reads from NC ("none" when it has
# none)
xr_time() {
    "$PY" -c '
import sys, xarray as xr
ds = xr.open_dataset(sys.argv[1])
print(list(ds["time"].values) if "time" in ds.variables else "none")' "$1"
}

# Found in review: a 1-D array named like a dimension, beside an array, is
# that dimension's coordinate variable.  In a directory where everybody
# makes arrays (mode 1777, as /tmp), user nobody's array "time" became
# the time axis of root's array in root's data.nc and zarr/ (and in every
# xarray.open_dataset of them); and an ACL letting another user write
# root's own coordinate was not looked at.  A coordinate is now taken only
# when its owner is root or the array's (or it is the array's project
# group's) and nobody else may write it, by mode or ACL.
@test "another user's array, or an ACL letting one write it, is no coordinate of root's array" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    command -v setfacl >/dev/null || skip "needs setfacl (package acl)"
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    "$DRX" create "$RV/s/pub/a" --type f64 --shape 4 --chunk 4 --dims time >/dev/null
    nob "$DRX" create "$RV/s/pub/time" --type i32 --shape 4 --chunk 4 >/dev/null
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array([66, 66, 66, 66], "<i4").tobytes())' |
        nob "$DRX" put "$RV/s/pub/time"
    nob chmod 644 "$RV/s/pub/time.xmd" "$RV/s/pub/time.xta"
    mount_store "$RV/s" "$RV/m" -o allow_other
    run ncdump -h "$RV/m/pub/a/data.nc"
    assert_success
    refute_output --partial "int time(time)"
    run xr_time "$RV/m/pub/a/data.nc"
    assert_success
    assert_output "none"
    run grep -c '"time/.zarray"' "$RV/m/pub/a/zarr/.zmetadata"
    assert_output 0
    # nor are its keys served as the variable's (a chunk read, a write)
    [ ! -e "$RV/m/pub/a/zarr/time/0" ]
    grep -q "pub/time is not dimension time's coordinate: its owner is neither root nor" "$RV/m.log"
    # root's own coordinate is taken
    rm "$RV/s/pub/time.xmd" "$RV/s/pub/time.xta"
    "$DRX" create "$RV/s/pub/time" --type i32 --shape 4 --chunk 4 >/dev/null
    put_i32 "$RV/s/pub/time" 10 20 30 40
    run ncdump -v time "$RV/m/pub/a/data.nc"
    assert_success
    assert_output --partial "time = 10, 20, 30, 40"
    run xr_time "$RV/m/pub/a/data.nc"
    assert_output "[10, 20, 30, 40]"
    grep -q '"time/.zarray"' "$RV/m/pub/a/zarr/.zmetadata"
    run "$PY" -c 'import sys, xarray as xr; print(list(xr.open_zarr(sys.argv[1])["time"].values))' "$RV/m/pub/a/zarr"
    assert_output "[10, 20, 30, 40]"
    # an ACL letting nobody write it: no longer taken, and the log says why
    setfacl -m u:nobody:rw "$RV/s/pub/time.xmd" "$RV/s/pub/time.xta"
    run ncdump -h "$RV/m/pub/a/data.nc"
    assert_success
    refute_output --partial "int time(time)"
    run xr_time "$RV/m/pub/a/data.nc"
    assert_output "none"
    run grep -c '"time/.zarray"' "$RV/m/pub/a/zarr/.zmetadata"
    assert_output 0
    grep -q "pub/time is not dimension time's coordinate: its ACL lets other users" "$RV/m.log"
    # the ACL's mask without write: taken again
    setfacl -m m::r "$RV/s/pub/time.xmd" "$RV/s/pub/time.xta"
    run ncdump -v time "$RV/m/pub/a/data.nc"
    assert_output --partial "time = 10, 20, 30, 40"
}

# Found in review: drx fsck --repair cut a subfile longer than its
# metafile's recorded size needs while walking, on the say of whichever
# metafile it met, before it knew which other metafiles named the same
# subfile (it reported the sharing only after the walk): a second
# metafile naming a file's subfiles with a smaller size (a user's copy of
# it) had root's fsck cut the file's data, and a root metafile naming
# another user's subfile was trusted to cut it.  The trims now wait for
# the whole walk: a subfile that another metafile names, or that is not
# the metafile owner's, keeps every byte, and fsck says which metafiles
# share which subfile and exits non-zero.
@test "drx fsck --repair cuts no subfile that another metafile names, whoever wrote it" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (other users)"
    local v="setpriv --reuid=65533 --regid=65533 --clear-groups --"
    user_dir_store
    mkdir "$RV/s/v"
    chown 65533:65533 "$RV/s/v"
    head -c 300000 /dev/urandom >"$RV/data.bin"
    chmod 644 "$RV/data.bin"
    $v cp "$RV/data.bin" "$RV/m/v/victim"
    commit_mount "$RV/m"
    unmount_store "$RV/m"
    # the victim's own copy of his metafile, with a smaller size
    sed 's/^size = .*/size = 1000L;/' "$RV/s/v/victim.nafs" >"$RV/n/copy"
    $v cp "$RV/n/copy" "$RV/s/v/copy.nafs"
    # and user nobody's, naming the victim's subfiles with size 0
    sed 's/^size = .*/size = 0L;/' "$RV/s/v/victim.nafs" >"$RV/n/planted"
    nob cp "$RV/n/planted" "$RV/s/u/cut.nafs"
    local before after
    before=$(for f in $(subfiles_of "$RV/s/v/victim"); do sha256sum <"$f"; done)
    run "$DRX" fsck --repair "$RV/s"
    echo "$output"
    after=$(for f in $(subfiles_of "$RV/s/v/victim"); do sha256sum <"$f"; done)
    [ "$before" = "$after" ]
    [ "$status" -ne 0 ]
    assert_output --regexp "v/copy(\\.nafs)?: subfile 0 \\(.*\\) is [0-9]+ bytes, longer than .*not trimmed: metafile v/victim(\\.nafs)? names it too"
    assert_output --regexp "v/copy(\\.nafs)?: shares subfile .* with v/victim"
    assert_output --partial "belongs to another user than its metafile"
    mount_store "$RV/s" "$RV/m" -o allow_other
    cmp "$RV/data.bin" "$RV/m/v/victim"
}
