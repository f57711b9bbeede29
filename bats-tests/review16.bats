#!/usr/bin/env bats
# The sixteenth review, SPEC 9 read against the mount: "no user reaches
# through the mount what the store's permissions deny them".  POSIX ACLs
# of store files were not applied (mode bits only): a user an ACL denied
# read the file through a root daemon mounted with allow_other, and one it
# granted was refused; and a hostile review of that fix found a
# coordinate variable's readers judged by its other bits alone.  Each
# test failed before its fix.

load test_helper

setup() {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    command -v setfacl >/dev/null || skip "needs setfacl (package acl)"
    hostile_setup review16
    "$DRX" init "$RV/s" >/dev/null
}

teardown() {
    hostile_teardown
}

# denied PATH...: user nobody can open none of PATH for reading
denied() {
    local p
    for p in "$@"; do
        run nob cat "$p"
        assert_failure
        assert_output --partial "Permission denied"
    done
}

# nob_until CMD...: CMD as user nobody until it succeeds (once), for at
# most 2 s: an ACL changed behind the mount shows a tick after, as the
# kernel keeps a node's ACL as long as its attributes.  Its output goes.
nob_until() {
    local i
    for ((i = 0; i < 100; i++)); do
        nob "$@" >/dev/null 2>&1 && return 0
        sleep 0.02
    done
    return 1
}

# i32 V...: V as little-endian int32 bytes on standard output
i32() {
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array(sys.argv[1:], "<i4").tobytes())' "$@"
}

@test "an ACL denying a user keeps him out of a plain file, a directory and a striped file through the mount" {
    local s="$RV/s" m="$RV/m"
    echo secret >"$s/plain"
    mkdir "$s/dir" && echo inside >"$s/dir/f"
    chmod 644 "$s/plain" "$s/dir/f"
    mount_store "$s" "$m" -o allow_other
    echo striped >"$m/striped"
    chmod 644 "$m/striped"
    # readable by mode: nobody reads all three
    run nob cat "$m/plain" "$m/dir/f" "$m/striped"
    assert_success
    setfacl -m u:nobody:--- "$s/plain" "$s/striped.nafs"
    setfacl -m u:nobody:--- "$s/dir"
    # as on the store itself
    denied "$s/plain" "$s/striped.nafs" "$s/dir/f"
    denied "$m/plain" "$m/striped" "$m/dir/f"
    run nob ls "$m/dir"
    assert_failure
    # others still read them; the owner too
    [ "$(cat "$m/plain")" = secret ]
    run setpriv --reuid=65533 --regid=65533 --clear-groups cat "$m/plain" "$m/striped"
    assert_success
    # setfacl through the mount, on a striped file: on its metafile, applied
    setfacl -b "$m/striped"
    run nob cat "$m/striped"
    assert_success
    assert_output striped
    setfacl -m u:nobody:--- "$m/striped"
    denied "$m/striped"
    getfacl -p "$s/striped.nafs" | grep -q '^user:nobody:---'
}

@test "an ACL granting a user lets him read a file its mode bits keep from others" {
    local s="$RV/s" m="$RV/m"
    echo granted >"$s/plain"
    chmod 600 "$s/plain"
    mount_store "$s" "$m" -o allow_other
    denied "$m/plain"
    setfacl -m u:nobody:r-- "$s/plain"
    # a tick after the change at most (the kernel keeps a node's ACL with
    # its attributes); another user is still refused
    run nob cat "$s/plain"
    assert_success
    nob_until cat "$m/plain"
    run nob cat "$m/plain"
    assert_success
    assert_output granted
    run setpriv --reuid=65533 --regid=65533 --clear-groups cat "$m/plain"
    assert_failure
    # and write, when it grants write
    run nob sh -c "echo more >>'$m/plain'"
    assert_failure
    setfacl -m u:nobody:rw- "$s/plain"
    nob_until sh -c "echo more >>'$m/plain'"
    [ "$(cat "$s/plain")" = "$(printf 'granted\nmore')" ]
}

@test "an array's files' ACLs apply to its directory, data, data.npy, data.nc, info and zarr/ through the mount" {
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/a" --type i32 --shape 4 --chunk 2 >/dev/null
    i32 1 2 3 4 | "$DRX" put "$s/a"
    chmod 644 "$s/a.xta" "$s/a.xmd"
    setfacl -m u:nobody:--- "$s/a.xta"
    mount_store "$s" "$m" -o allow_other
    # the .xta's ACL: the data files and the zarr/ group
    denied "$m/a/data" "$m/a/data.npy" "$m/a/data.nc" "$m/a/zarr/a/0" "$m/a/dim0=1:3/data"
    run nob ls "$m/a/zarr"
    assert_failure
    # the .xmd's: the directory and info, open to him so far
    run nob cat "$m/a/info"
    assert_success
    run nob ls "$m/a"
    assert_success
    setfacl -m u:nobody:--- "$s/a.xmd"
    "$DRX" attr set "$s/a" units K # the .xmd written whole keeps its ACL
    getfacl -p "$s/a.xmd" | grep -q '^user:nobody:---'
    denied "$m/a/info"
    run nob ls "$m/a"
    assert_failure
    # the owner and other users are not affected
    cmp <(i32 1 2 3 4) "$m/a/data"
    run setpriv --reuid=65533 --regid=65533 --clear-groups cat "$m/a/info" "$m/a/data.nc" "$m/a/zarr/a/0"
    assert_success
}

@test "an ACL granting a user an array of mode 0600 lets him read and write it through the mount, as its mapping of the mode" {
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/b" --type i32 --shape 4 --chunk 2 >/dev/null
    i32 5 6 7 8 | "$DRX" put "$s/b"
    chmod 600 "$s/b.xta" "$s/b.xmd"
    mount_store "$s" "$m" -o allow_other
    denied "$m/b/data" "$m/b/info"
    setfacl -m u:nobody:r-- "$s/b.xmd"
    setfacl -m u:nobody:rw- "$s/b.xta"
    nob_until cat "$m/b/info"
    # the directory gets x where its .xmd's ACL has r: he lists it
    run nob ls "$m/b"
    assert_success
    assert_line data
    run nob cat "$m/b/info"
    assert_success
    cmp <(i32 5 6 7 8) <(nob cat "$m/b/dim0=0:4/data")
    # data.nc and info are read-only: their ACL drops w
    getfacl -p "$m/b/data.nc" | grep -q '^user:nobody:r--'
    getfacl -p "$m/b/data" | grep -q '^user:nobody:rw-'
    getfacl -p "$m/b" | grep -q '^user:nobody:r-x'
    # he writes through data, as the ACL lets him write the .xta
    i32 9 | nob dd of="$m/b/data" bs=4 seek=2 conv=notrunc status=none
    cmp <(i32 5 6 9 8) <("$DRX" get "$s/b")
    # a third user is still refused
    run setpriv --reuid=65533 --regid=65533 --clear-groups cat "$m/b/data"
    assert_failure
}

@test "setfacl through the mount sets an array's ACL on its files as chmod sets their modes; a view refuses it, and so does a file whose other store file is not the caller's" {
    local s="$RV/s" m="$RV/m" i
    "$DRX" create "$s/c" --type i32 --shape 4 --chunk 2 >/dev/null
    i32 1 2 3 4 | "$DRX" put "$s/c"
    chmod 600 "$s/c.xta" "$s/c.xmd"
    mount_store "$s" "$m" -o allow_other
    denied "$m/c/data"
    # the directory shows all bits, x where r is: r-x is r-- on both files
    setfacl -m u:nobody:r-x "$m/c"
    getfacl -p "$s/c.xmd" | grep -q '^user:nobody:r--$'
    getfacl -p "$s/c.xta" | grep -q '^user:nobody:r--$'
    getfacl -p "$m/c" | grep -q '^user:nobody:r-x$'
    nob_until cat "$m/c/data"
    cmp <(i32 1 2 3 4) <(nob cat "$m/c/data")
    run nob ls "$m/c"
    assert_success
    assert_line data.nc
    # data shows r and w: both go to the files
    setfacl -m u:nobody:rw- "$m/c/data"
    getfacl -p "$s/c.xta" | grep -q '^user:nobody:rw-$'
    nob_until dd if=/dev/null of="$m/c/data" conv=notrunc status=none
    i32 9 | nob dd of="$m/c/data" bs=4 seek=1 conv=notrunc status=none
    cmp <(i32 1 9 3 4) <("$DRX" get "$s/c")
    # data.nc shows only r: --- asked of it takes the r, the w stays
    setfacl -m u:nobody:--- "$m/c/data.nc"
    getfacl -p "$s/c.xta" | grep -q '^user:nobody:-w-$'
    getfacl -p "$s/c.xmd" | grep -q '^user:nobody:-w-$'
    # -b: no ACL left on either file, the mode's bits alone again
    setfacl -b "$m/c"
    [ -z "$(getfacl -p --skip-base "$s/c.xta" "$s/c.xmd" 2>/dev/null)" ]
    [ "$(stat -c %a "$s/c.xta")" = 600 ]
    # all or nothing: an .xmd that refuses it (immutable) leaves the .xta
    # as it was, its mode too
    if chattr +i "$s/c.xmd" 2>/dev/null; then
        run setfacl -m u:nobody:r-- "$m/c"
        chattr -i "$s/c.xmd"
        assert_failure
        [ -z "$(getfacl -p --skip-base "$s/c.xta" "$s/c.xmd" 2>/dev/null)" ]
        [ "$(stat -c %a "$s/c.xta")" = 600 ]
    fi
    # a view is refused as its chmod is; a default ACL has nothing to apply to
    run setfacl -m u:nobody:r "$m/c/dim0=0:2"
    assert_failure
    assert_output --partial "Operation not permitted"
    run setfacl -d -m u:nobody:r "$m/c"
    assert_failure
    assert_output --partial "Operation not supported"
    # the .xta given to nobody behind the mount: he owns data, not the
    # .xmd, which neither his setfacl nor his chmod of data reaches
    chown nobody "$s/c.xta"
    chmod 644 "$s/c.xmd"
    for ((i = 0; i < 100; i++)); do
        [ "$(stat -c %u "$m/c/data")" = 65534 ] && break
        sleep 0.02
    done
    run nob setfacl -m u:65533:rw- "$m/c/data"
    assert_failure
    assert_output --partial "Operation not permitted"
    run nob chmod 666 "$m/c/data"
    assert_failure
    [ "$(stat -c %a "$s/c.xmd")" = 644 ]
    [ -z "$(getfacl -p --skip-base "$s/c.xta" "$s/c.xmd" 2>/dev/null)" ]
    # root may
    chmod 640 "$m/c/data"
    [ "$(stat -c %a "$s/c.xmd")" = 640 ]
}

@test "chmod through an array's node: the set-group-ID bit only on a file of the caller's group; chmod and chown leave both files as they were when one refuses" {
    local s="$RV/s" m="$RV/m" i
    "$DRX" create "$s/g" --type u8 --shape 4 --chunk 2 >/dev/null
    chown 65534:65534 "$s/g.xmd"
    chown 65534:65533 "$s/g.xta"
    mount_store "$s" "$m" -o allow_other
    # nobody owns both files; the .xta's group is one he is not in: the
    # kernel let the bit through for the directory (the .xmd's group)
    nob chmod 2750 "$m/g"
    [ "$(stat -c %a "$s/g.xmd")" = 2640 ]
    [ "$(stat -c %a "$s/g.xta")" = 640 ]
    # root may
    chmod 2750 "$m/g"
    [ "$(stat -c %a "$s/g.xta")" = 2640 ]
    # all or nothing
    chmod 644 "$s/g.xta" "$s/g.xmd"
    chown 0:0 "$s/g.xta" "$s/g.xmd"
    if chattr +i "$s/g.xmd" 2>/dev/null; then
        for ((i = 0; i < 100; i++)); do
            [ "$(stat -c %a "$m/g/data")" = 644 ] && break
            sleep 0.02
        done
        run chmod 600 "$m/g"
        assert_failure
        run chown 65534 "$m/g/data"
        assert_failure
        chattr -i "$s/g.xmd"
        [ "$(stat -c '%a %u' "$s/g.xta")" = "644 0" ]
        [ "$(stat -c '%a %u' "$s/g.xmd")" = "644 0" ]
    fi
}

@test "a zarr resize checks the .xmd's ACL: a user it denies cannot grow an array whose mode lets everyone write" {
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/g" --type u8 --shape 4 --chunk 2 --dims step >/dev/null
    chmod 666 "$s/g.xta" "$s/g.xmd"
    setfacl -m u:nobody:r-- "$s/g.xmd"
    mount_store "$s" "$m" -o allow_other
    zarr_grow_py "$RV/grow.py"
    run nob "$PY" "$RV/grow.py" "$m"
    assert_success
    assert_output refused
    grep -q "a zarr resize needs write access to g.xmd: refused" "$m.log"
    "$DRX" info "$s/g" --json | grep -q '"shape": \[4\]'
    # the ACL letting him write: he may
    setfacl -m u:nobody:rw- "$s/g.xmd"
    run nob "$PY" "$RV/grow.py" "$m"
    assert_success
    assert_output grown
    "$DRX" info "$s/g" --json | grep -q '"shape": \[6\]'
}

@test "an array whose ACL names a reader takes as coordinate only a file every other user may read" {
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/t" --type f64 --shape 4 --chunk 4 --dims time >/dev/null
    "$DRX" create "$s/time" --type i32 --shape 4 --chunk 4 >/dev/null
    i32 10 20 30 40 | "$DRX" put "$s/time"
    chmod 640 "$s/t.xta" "$s/t.xmd" "$s/time.xta" "$s/time.xmd"
    mount_store "$s" "$m" -o allow_other
    # root's own coordinate, readable as the array is: taken
    run ncdump -v time "$m/t/data.nc"
    assert_success
    assert_output --partial "time = 10, 20, 30, 40"
    # nobody may read the array (its ACL), not the coordinate: data.nc
    # would show him its values; no longer taken, and the log says why
    setfacl -m u:nobody:r-- "$s/t.xta" "$s/t.xmd"
    denied "$s/time.xta"
    run ncdump -h "$m/t/data.nc"
    assert_success
    refute_output --partial "int time(time)"
    run nob ncdump -h "$m/t/data.nc"
    assert_success
    refute_output --partial "int time(time)"
    grep -q "time is not dimension time's coordinate: the array's ACL lets users or groups read it" "$m.log"
    # the coordinate readable by all: taken again
    chmod 644 "$s/time.xta" "$s/time.xmd"
    run nob ncdump -v time "$m/t/data.nc"
    assert_success
    assert_output --partial "time = 10, 20, 30, 40"
}

@test "a coordinate that its ACL or its group bits keep someone from reading is no coordinate of an array he may read" {
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/v" --type i32 --shape 4 --chunk 4 --dims x >/dev/null
    "$DRX" create "$s/x" --type i32 --shape 4 --chunk 4 >/dev/null
    i32 11 22 33 44 | "$DRX" put "$s/x"
    "$DRX" attr set "$s/x" units secretunits
    chmod 644 "$s/v.xta" "$s/v.xmd" "$s/x.xta" "$s/x.xmd"
    mount_store "$s" "$m" -o allow_other
    run ncdump -v x "$m/v/data.nc"
    assert_output --partial "x = 11, 22, 33, 44"
    # x's ACL keeps nobody out of x, not of v: x's values and units would
    # reach him through v/data.nc and v/zarr
    setfacl -m u:nobody:--- "$s/x.xta" "$s/x.xmd"
    denied "$m/x/data"
    run nob ncdump -h "$m/v/data.nc"
    assert_success
    refute_output --partial "int x(x)"
    refute_output --partial secretunits
    run nob cat "$m/v/zarr/.zmetadata"
    assert_success
    refute_output --partial secretunits
    grep -q "x is not dimension x's coordinate: its ACL keeps a user or group from reading it" "$m.log"
    # kept out of v as well: x is v's coordinate again
    setfacl -m u:nobody:--- "$s/v.xta" "$s/v.xmd"
    run ncdump -v x "$m/v/data.nc"
    assert_output --partial "x = 11, 22, 33, 44"
    # mode bits: readable by others but not by its group (0604), whose
    # members v lets read
    setfacl -b "$s/x.xta" "$s/x.xmd" "$s/v.xta" "$s/v.xmd"
    chmod 604 "$s/x.xta" "$s/x.xmd"
    run ncdump -h "$m/v/data.nc"
    assert_success
    refute_output --partial "int x(x)"
    grep -q "x is not dimension x's coordinate: its mode lets fewer users read it" "$m.log"
}
