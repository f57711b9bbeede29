#!/usr/bin/env bats
# The tenth hostile review: what another local user makes a root daemon
# (allow_other) and root's drx do.  Each test failed before its fix.

load test_helper

setup() {
    hostile_setup review10
}

teardown() {
    hostile_teardown
}

# Found in review: zarr/ logged a refused coordinate candidate at info on
# every open of a zarr metadata file, not rate-limited (data.nc's same
# message was): user nobody, opening his own array's zarr/.zmetadata in a
# loop beside a refused "time", wrote as many lines into root's log.
@test "a refused zarr coordinate opened 2000 times logs a bounded number of lines" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    user_dir_store
    nob "$DRX" create "$RV/m/u/a" --type f64 --shape 4 --chunk 4 --dims time >/dev/null
    nob "$DRX" create "$RV/m/u/time" --type i32 --shape 4 --chunk 4 >/dev/null
    nob chmod 666 "$RV/s/u/time.xmd" "$RV/s/u/time.xta"
    nob_opens "$RV/m/u/a/zarr/.zmetadata" 2000
    logged_bounded "is not dimension time's coordinate" "$RV/m.log"
}

# Found in review: a refused array rename was logged at warning on every
# try, not rate-limited: user nobody, renaming his array onto a name whose
# orphan chunk file he made, in a loop, wrote as many lines into root's log.
@test "a refused array rename tried 2000 times logs a bounded number of lines" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    user_dir_store
    nob "$DRX" create "$RV/m/u/a" --type f64 --shape 4 --chunk 4 >/dev/null
    nob touch "$RV/s/u/b.xta"
    nob "$PY" - "$RV/m/u/a" "$RV/m/u/b" <<'PY'
import os, sys
for i in range(2000):
    try:
        os.rename(sys.argv[1], sys.argv[2])
    except OSError:
        pass
PY
    [ -e "$RV/m/u/a" ]
    logged_bounded "exists without" "$RV/m.log"
}

# Found in review: the limit was per call site only, 10 distinct messages
# a minute for everyone: user nobody making 15 distinct refusals at one
# site hid root's first refusal there.  Each user now has a burst of his
# own at each site.
@test "one user's flood of distinct refusals at a call site does not hide another user's first one there" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    user_dir_store
    nob "$DRX" create "$RV/m/u/a" --type f64 --shape 4 --chunk 4 >/dev/null
    local i
    for i in $(seq 15); do nob touch "$RV/s/u/b$i.xta"; done
    for i in $(seq 15); do nob mv "$RV/m/u/a" "$RV/m/u/b$i" 2>/dev/null || true; done
    # his burst: 10 of the 15
    [ "$(grep -c "rename u/a -> u/b[0-9]*: b[0-9]*.xta exists without" "$RV/m.log")" -eq 10 ]
    "$DRX" create "$RV/m/r" --type f64 --shape 4 --chunk 4 >/dev/null
    touch "$RV/s/q.xta"
    run mv "$RV/m/r" "$RV/m/q"
    assert_failure
    grep -q "rename r -> q: q.xta exists without" "$RV/m.log"
}

# put_i32 ARRAY V...: the elements of 1-D i32 array ARRAY
put_i32() {
    local a=$1
    shift
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array(sys.argv[1:], "<i4").tobytes())' "$@" |
        "$DRX" put "$a"
}

# Found in review: a coordinate whose group is the array's, the array's
# owner in it, was taken as a project group member's, whoever owned it.
# In a set-group-ID directory that others may write (mode 3777), every
# new file gets the directory's group, member or not: user nobody's array
# "time" there became the time axis of root's array beside it.  Its owner
# must now be in the group as well.
@test "another user's array in a set-group-ID directory is no coordinate of root's array" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    "$DRX" init "$RV/s" >/dev/null
    mkdir "$RV/s/pub"
    chmod 3777 "$RV/s/pub"
    "$DRX" create "$RV/s/pub/a" --type f64 --shape 4 --chunk 4 --dims time >/dev/null
    mount_store "$RV/s" "$RV/m" -o allow_other
    nob "$DRX" create "$RV/m/pub/time" --type i32 --shape 4 --chunk 4 >/dev/null
    "$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.array([66, 66, 66, 66], "<i4").tobytes())' |
        nob "$DRX" put "$RV/m/pub/time"
    stat -c '%n %U:%G %a' "$RV/s/pub/"time.*
    [ "$(stat -c %u:%g "$RV/s/pub/time.xmd")" = 65534:0 ]
    run ncdump -h "$RV/m/pub/a/data.nc"
    assert_success
    refute_output --partial "int time(time)"
    run grep -c '"time/.zarray"' "$RV/m/pub/a/zarr/.zmetadata"
    assert_output 0
    grep -q "pub/time is not dimension time's coordinate: its owner is neither root nor" "$RV/m.log"
}

# Found in review: a store's .drx/store.conf names its stripe directories,
# absolute ones anywhere, and drx fsck --repair removed every subfile
# there that none of the store's metafiles named: user nobody's own store,
# its store.conf naming root's store's stripe directories, had root's
# fsck --repair of it remove all of root's striped files' data.
@test "drx fsck --repair of a user's store whose store.conf names another store's stripe directories removes nothing there" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (other users)"
    "$DRX" init "$RV/s" >/dev/null
    mount_store "$RV/s" "$RV/m"
    head -c 300000 /dev/urandom >"$RV/data.bin"
    cp "$RV/data.bin" "$RV/m/victim"
    commit_mount "$RV/m"
    unmount_store "$RV/m"
    local subs
    subs=$(subfiles_of "$RV/s/victim")
    [ -n "$subs" ]
    nob "$DRX" init "$RV/n/st" >/dev/null
    sed "s|dirs = .*|dirs = [ \"$RV/s/.drx/stripes/0\", \"$RV/s/.drx/stripes/1\" ];|" \
        "$RV/n/st/.drx/store.conf" >"$RV/n/conf"
    nob cp "$RV/n/conf" "$RV/n/st/.drx/store.conf"
    run "$DRX" fsck --repair "$RV/n/st"
    echo "$output"
    for f in $subs; do [ -f "$f" ]; done
    mount_store "$RV/s" "$RV/m"
    cmp "$RV/data.bin" "$RV/m/victim"
}

# Found in review: drx fsck walks a store at most 256 directories deep
# (and skips a name whose path passes PATH_MAX) and reported a directory
# it could not read, but went on as if it had seen every metafile:
# --repair then removed the subfiles of every striped file below as
# orphans.  A user who may rename a directory above another's files (his
# own, where others write) makes it so.  A walk that missed a directory
# now removes and trims nothing that a metafile there might name.
@test "drx fsck --repair removes no subfile of a striped file in a directory too deep for its walk" {
    "$DRX" init "$RV/s" >/dev/null
    mount_store "$RV/s" "$RV/m"
    local deep
    deep=$(printf 'd/%.0s' $(seq 260))
    mkdir -p "$RV/m/$deep"
    head -c 300000 /dev/urandom >"$RV/data.bin"
    cp "$RV/data.bin" "$RV/m/${deep}f"
    commit_mount "$RV/m"
    unmount_store "$RV/m"
    run "$DRX" fsck --repair "$RV/s"
    echo "$output"
    [ "$status" -ne 0 ]
    assert_output --partial "too deep"
    refute_output --partial "orphan subfile: no metafile names it (repaired"
    mount_store "$RV/s" "$RV/m"
    cmp "$RV/data.bin" "$RV/m/${deep}f"
}

# The other case of the walk above: a path from the store's root past
# PATH_MAX.  The mount takes a file 4090 bytes below it, so below a store
# path of a few dozen bytes such a file's full path is longer than
# PATH_MAX.  The walk reaches every entry through a descriptor of its
# directory; only the name shown in findings is cut short.  It used to
# skip such an entry (--repair then removed its subfiles as orphans), and
# for a moment (review10's first fix) call the store unchecked.
@test "drx fsck --repair checks a striped file whose path from the store's root passes PATH_MAX, and keeps its subfiles" {
    "$DRX" init "$RV/s" >/dev/null
    mount_store "$RV/s" "$RV/m"
    head -c 300000 /dev/urandom >"$RV/data.bin"
    local rel
    rel=$("$PY" - "$RV/m" "$RV/data.bin" <<'EOF2'
import os, sys
m, src = sys.argv[1], sys.argv[2]
os.chdir(m)
# 16 levels of 250 bytes: 4016 bytes below the mount, then the file
for _ in range(16):
    os.mkdir("d" * 250)
    os.chdir("d" * 250)
with open("f" * 60, "wb") as f:
    f.write(open(src, "rb").read())
print(os.getcwd()[len(m) + 1:] + "/" + "f" * 60)
EOF2
)
    [ $((${#RV} + 2 + ${#rel})) -gt 4096 ]
    commit_mount "$RV/m"
    unmount_store "$RV/m"
    run "$DRX" fsck --repair "$RV/s"
    echo "$output"
    assert_success
    refute_output --partial "orphan"
    refute_output --partial "not checked"
    mount_store "$RV/s" "$RV/m"
    (cd "$RV/m/${rel%/*}" && cmp "$RV/data.bin" "${rel##*/}")
}

# Found in review: drx fsck --repair opened .drx/hidden (files a stopped
# mount kept for open descriptors) by a path from the store's root,
# following symlinks, and removed every entry in it: user nobody's own
# store, its .drx/hidden a symlink to a directory of root's, had root's
# fsck --repair of it remove all of root's files there.  .drx/ and
# .drx/hidden are now opened beneath the store's root descriptor, never
# through a symlink, and their entries removed through them.
@test "drx fsck --repair of a user's store whose .drx/hidden is a symlink removes nothing outside it" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (other users)"
    mkdir "$RV/precious"
    echo keep >"$RV/precious/notes"
    echo keep >"$RV/precious/.store.conf.x"
    nob "$DRX" init "$RV/n/st" >/dev/null
    nob rm -rf "$RV/n/st/.drx/hidden"
    nob ln -s "$RV/precious" "$RV/n/st/.drx/hidden"
    run "$DRX" fsck --repair "$RV/n/st"
    echo "$output"
    [ -f "$RV/precious/notes" ]
    [ -f "$RV/precious/.store.conf.x" ]
}
