#!/usr/bin/env bats
# The sixth hostile review: what another local user's own files in a
# shared store (a metafile he writes, ...) make a root daemon and root's
# drx do with other users' files.  Each test failed before its fix.

load test_helper

setup() {
    hostile_setup review6
}

teardown() {
    hostile_teardown
}

# plant_metafile FILE SRC: user nobody writes FILE.nafs (mode 644) naming
# the subfiles of striped file SRC (its metafile, as the stripe
# directories' listing shows them to everybody)
plant_metafile() {
    sed 's/^size = .*/size = 0L;/' "$2.nafs" >"$RV/n/planted"
    nob cp "$RV/n/planted" "$1.nafs"
    nob chmod 644 "$1.nafs"
}

# Found in review: a metafile names its subfiles by name only, and the
# daemon (root) opened whatever subfiles a metafile named, whoever owned
# them.  User nobody, in his own directory of the store, wrote a metafile
# naming the subfiles of root's file of mode 600 (the names are in the
# stripe directories' listing) and read it through the mount, since the
# kernel checks the metafile's owner and mode; he could as well write it,
# chmod its subfiles to 666, and remove it (rm of his file removed root's
# subfiles), and root's drx fsck --repair cut root's subfiles to the
# planted metafile's size.  Subfiles of a metafile that is not the
# process's user's are now used only when they are its owner's.
@test "a metafile a user writes naming another user's subfiles reaches none of them" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local sub
    user_dir_store
    head -c 200000 /dev/urandom >"$RV/secret.bin"
    cp "$RV/secret.bin" "$RV/m/secret"
    chmod 600 "$RV/m/secret"
    commit_mount "$RV/m"
    # a planted copy is read as size 0, so give it the size it needs too
    sed 's/^size = .*/size = 200000L;/' "$RV/s/secret.nafs" >"$RV/n/planted"
    nob cp "$RV/n/planted" "$RV/s/u/steal.nafs"
    nob chmod 644 "$RV/s/u/steal.nafs"
    run nob cmp -s "$RV/secret.bin" "$RV/m/u/steal"
    assert_failure
    run nob dd if=/dev/zero of="$RV/m/u/steal" bs=1 count=10 conv=notrunc
    assert_failure
    nob chmod 666 "$RV/m/u/steal" || true
    for sub in $(subfiles_of "$RV/s/secret"); do
        [ "$(stat -c %a "$sub")" = 600 ]
    done
    nob rm -f "$RV/m/u/steal"
    cmp "$RV/secret.bin" "$RV/m/secret"
    # root's fsck --repair does not cut root's subfiles to a planted size
    plant_metafile "$RV/s/u/cut" "$RV/s/secret"
    "$DRX" fsck --repair "$RV/s" >/dev/null || true
    cmp "$RV/secret.bin" "$RV/m/secret"
    grep -q "belongs to another user than its metafile" "$RV/m.log"
    rm "$RV/s/u/cut.nafs"
    # the user's own striped files work as before, created and chowned
    nob sh -c "head -c 150000 /dev/urandom >'$RV/m/u/mine'"
    nob cat "$RV/m/u/mine" >/dev/null
    chown 65533:65533 "$RV/m/u/mine"
    setpriv --reuid=65533 --regid=65533 --clear-groups -- cat "$RV/m/u/mine" >/dev/null
    commit_mount "$RV/m"
    for sub in $(subfiles_of "$RV/s/u/mine"); do
        [ "$(stat -c %u "$sub")" = 65533 ]
    done
    run "$DRX" fsck "$RV/s"
    assert_success
}

# Found in review: a 1-D array named like a dimension, beside an array, is
# that dimension's coordinate variable, and went with its elements and
# attributes into the array's data.nc and zarr/.zmetadata whatever its
# mode.  In a directory where everybody makes arrays (mode 1777), user
# nobody made an array with a dimension named like root's array of mode
# 600 and read root's elements in his data.nc and root's attributes in
# his .zmetadata.  A coordinate is now shown only when everyone who may
# read the array may read it too.
@test "another user's closed array is no coordinate variable of a user's array" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    "$DRX" create "$RV/s/pub/x" --type u8 --shape 16 --chunk 16 >/dev/null
    printf 'SECRET-ROOT-DATA' | "$DRX" put "$RV/s/pub/x"
    "$DRX" attr set "$RV/s/pub/x" note "the-password-is-hunter2"
    chmod 600 "$RV/s/pub/x.xmd" "$RV/s/pub/x.xta"
    nob "$DRX" create "$RV/s/pub/a" --type u8 --shape 16 --chunk 16 --dims x >/dev/null
    mount_store "$RV/s" "$RV/m" -o allow_other
    # data.nc's variables as netCDF4 reads them (x, a record variable
    # there, has its bytes apart: one in each record), and its raw bytes
    cat >"$RV/n/ncvars.py" <<'PY'
import sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
d.set_auto_mask(False)
for v in d.variables.values():
    print(v.name, bytes(v[:].astype("u1")), {k: v.getncattr(k) for k in v.ncattrs()})
PY
    nob "$PY" "$RV/n/ncvars.py" "$RV/m/pub/a/data.nc" >"$RV/n/nc"
    nob cat "$RV/m/pub/a/data.nc" >>"$RV/n/nc"
    nob cat "$RV/m/pub/a/zarr/.zmetadata" >"$RV/n/zmeta"
    run grep -ac -e SECRET-ROOT -e hunter2 "$RV/n/nc" "$RV/n/zmeta"
    refute_output --regexp ':[1-9]'
    # opened to all, it is the coordinate again (nothing cached it out)
    chmod 644 "$RV/s/pub/x.xmd" "$RV/s/pub/x.xta"
    nob "$PY" "$RV/n/ncvars.py" "$RV/m/pub/a/data.nc" | grep -q "x b'SECRET-ROOT-DATA'"
    nob cat "$RV/m/pub/a/zarr/.zmetadata" | grep -q hunter2
}

# Found in review: drx fsck walked the store by paths from its root (lstat,
# then opendir and unlink of the same path).  User nobody, owning a
# directory of the store, swapped a subdirectory of it with a symlink to
# another directory (renameat2 RENAME_EXCHANGE in a loop) while root ran
# fsck --repair: within tens of runs the walk followed the symlink and
# removed a file outside the store that looked like an orphan chunk file
# (any NAME.xta without NAME.xmd; an .xta could as well be trimmed to
# another directory's .xmd).  The walk now holds each directory open and
# reaches and acts on every entry through it.
@test "a directory swapped for a symlink during drx fsck --repair never leads it outside the store" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (another user's directory)"
    local i end
    "$DRX" init "$RV/s" >/dev/null
    mkdir "$RV/s/u" "$RV/out"
    chown 65534:65534 "$RV/s/u"
    nob mkdir "$RV/s/u/d"
    nob ln -s "$RV/out" "$RV/s/u/l"
    echo precious >"$RV/out/victim.xta"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
end = time.time() + 60
while time.time() < end:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
' "$RV/s/u/d" "$RV/s/u/l" &
    APID=$!
    # 1000 runs; 200 under the sanitizers, which look for memory errors
    # here (the race itself is the first pass's)
    local runs=1000
    [ -z "${DRX_TEST_SANITIZED:-}" ] || runs=200
    end=$((SECONDS + 40))
    for ((i = 0; i < runs && SECONDS < end; i++)); do
        "$DRX" fsck --repair "$RV/s" >/dev/null 2>&1 || true
        [ -e "$RV/out/victim.xta" ] || break
    done
    echo "fsck runs: $i"
    [ "$(cat "$RV/out/victim.xta")" = precious ]
}

# The walk of the previous test keeps a descriptor of each directory
# holding a chunk file with several names (settled after the walk): a
# user's hard links in hundreds of directories must not take the
# descriptors the rest of the walk needs: at most 256 are kept, and one
# that cannot be is reported as not checked.
@test "drx fsck walks a store whose user hard-linked chunk files in hundreds of directories" {
    local i
    "$DRX" init "$RV/s" >/dev/null
    for ((i = 0; i < 300; i++)); do
        mkdir "$RV/s/d$i"
        echo x >"$RV/s/d$i/a.xta"
        ln "$RV/s/d$i/a.xta" "$RV/s/d$i/b.xta"
    done
    mkdir "$RV/s/zz"
    echo x >"$RV/s/zz/last.xta"
    run bash -c "ulimit -n 200 && '$DRX' fsck '$RV/s'"
    refute_output --partial "cannot read directory"
    assert_output --partial "zz/last.xta: orphan chunk file"
    assert_output --partial "not checked: its directory cannot be held open"
}

# Found in the review of the owner check above: root's drx-load copy over
# a user's striped file made new subfiles (root's) and gave only the
# metafile the user's owner, as a replaced file keeps it; the root daemon
# then refused every subfile (another user's than the metafile's) and the
# copy read back as an I/O error.  And a chown cut short (a crash between
# the subfiles and the metafile) left subfiles of the new owner that a
# second chown through the mount refused to touch.
@test "root's drx-load copy over a user's striped file, and a chown cut short, stay readable and finishable through the mount" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (other users)"
    local sub
    user_dir_store
    nob sh -c "head -c 150000 /dev/urandom >'$RV/m/u/f'"
    nob chmod 640 "$RV/m/u/f"
    commit_mount "$RV/m"
    head -c 300000 /dev/urandom >"$RV/new.bin"
    run timeout 120 mpiexec -n 2 "$DRX_LOAD" copy "$RV/new.bin" "$RV/s/u/f"
    assert_success
    [ "$(stat -c %u:%a "$RV/s/u/f.nafs")" = 65534:640 ]
    for sub in $(subfiles_of "$RV/s/u/f"); do
        [ "$(stat -c %u:%a "$sub")" = 65534:640 ]
    done
    nob cmp "$RV/new.bin" "$RV/m/u/f"
    # a chown that reached the subfiles only
    for sub in $(subfiles_of "$RV/s/u/f"); do
        chown 65533:65533 "$sub"
    done
    chown 65533:65533 "$RV/m/u/f"
    cmp "$RV/new.bin" "$RV/m/u/f"
    [ "$(stat -c %u "$RV/s/u/f.nafs")" = 65533 ]
    run "$DRX" fsck "$RV/s"
    assert_success
    kill_our_mpi
}

# Found in the review of the coordinate rule above: arrays of a project
# group are made by several of its members (umask 007: modes 0660, the
# group's gid), and a coordinate another member made was left out of
# data.nc and zarr/ (its owner is not the array's).  The array's owner is
# now looked up in the coordinate's group.
@test "a project group's coordinate made by another member of the group is shown" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (other users)"
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 0770 "$RV/s/proj"
    chgrp 65534 "$RV/s/proj"
    "$DRX" create "$RV/s/proj/x" --type i32 --shape 4 --chunk 4 >/dev/null
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array([10, 20, 30, 40], "<i4").tobytes())' |
        "$DRX" put "$RV/s/proj/x"
    "$DRX" create "$RV/s/proj/a" --type f64 --shape 4 --chunk 4 --dims x >/dev/null
    # a is nobody's, x another member's (sync, uid 4: nogroup is its primary
    # group; review10 wants a coordinate's owner in the group), both the
    # group's, 0640
    chown 65534:65534 "$RV/s/proj/a.xmd" "$RV/s/proj/a.xta"
    chown 4:65534 "$RV/s/proj/x.xmd" "$RV/s/proj/x.xta"
    chmod 640 "$RV/s/proj/a.xmd" "$RV/s/proj/a.xta" "$RV/s/proj/x.xmd" "$RV/s/proj/x.xta"
    mount_store "$RV/s" "$RV/m" -o allow_other
    run ncdump -v x "$RV/m/proj/a/data.nc"
    assert_success
    assert_output --partial "x = 10, 20, 30, 40"
    grep -q '"x/.zarray"' "$RV/m/proj/a/zarr/.zmetadata"
    # not readable by the group: no longer covered
    chmod 600 "$RV/s/proj/x.xmd" "$RV/s/proj/x.xta"
    run ncdump -h "$RV/m/proj/a/data.nc"
    assert_success
    refute_output --partial "int x(x)"
}
