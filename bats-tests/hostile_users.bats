#!/usr/bin/env bats
# Another local user against a root daemon (allow_other), and what any
# program does: locks taken on store files, floods of paths (of inotify
# events: hostile_inotify.bats), many arrays read at once (prefetch
# jobs), a store name swapped for a symlink under root's drx, and rm
# right after close.  Each attack
# runs through the real mount as user nobody (uid 65534).  Found in the
# second hostile review (drxfs_commit.c, drxfs_kcache.c, drxfs_prefetch.c,
# store.c), and in the third (store_at.c: the daemon's calls by name); each
# test failed before its fix.

load test_helper

setup() {
    hostile_setup review2
}

teardown() {
    stop_holder
    [ -n "${RV:-}" ] || return 0
    unmount_store "$RV/m"
    [ -e "$RV/u/m.pid" ] && unmount_store "$RV/u/m"
    [ -e "$RV/mm/m.pid" ] && unmount_store "$RV/mm/m"
    [ -e "$RV/m2.pid" ] && unmount_store "$RV/m2"
    loop_fs_gone "$RV/fs"
    rm -rf "$RV"
}

# nobody_flocks PATH LOCK_SH|LOCK_EX: user nobody takes flock() on PATH (a
# file or directory) and holds it for 2 minutes in the background (APID,
# killed by teardown); returns once the lock is held
nobody_flocks() {
    as_nobody_bg "$RV/n/locked" '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, getattr(fcntl, sys.argv[2]))
open(sys.argv[3], "w").close()
time.sleep(120)' "$1" "$2"
}

# Found in review: the size of a striped file is recorded under flock(LOCK_EX)
# of its first subfile (stripe.c, drx_stripe_persist_locked), waited for
# without bound.  Any local user who may read a subfile (a 0644 file's, in
# the 0755 stripe directories) takes LOCK_SH on it and holds it: the one
# commit thread blocks there, no other user's size is ever recorded,
# `setfattr -n user.drx.commit` (and root's drx, each leaving a FUSE
# worker blocked) never returns, and unmount would wait forever.
@test "a local user's flock on a subfile does not stop the batched commit of other files" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m" sub
    "$DRX" init "$s" --count 2 --extent 65536 >/dev/null
    mount_store "$s" "$m" -o allow_other
    head -c 100000 /dev/urandom >"$m/victim"
    chmod 644 "$m/victim"
    commit_mount "$m"
    sub=$(subfiles_of "$s/victim" | head -1)
    [ -f "$sub" ]
    nobody_flocks "$sub" LOCK_SH
    # the victim grows (its size waits for the commit), another file is new
    head -c 5000 /dev/urandom >>"$m/victim"
    head -c 70000 /dev/urandom >"$m/other"
    run timeout 20 setfattr -n user.drx.commit -v 1 "$m"
    echo "setfattr: status $status $output"
    [ "$status" -eq 0 ]
    # other's size is in the store: what drx, fsck and a second mount read
    run "$DRX" stripe get "$s/other"
    echo "$output"
    grep -qx "size=70000" <<<"$output"
}

# Found in review: past the bound of paths recorded (kcache_paths), drxfs_kcache.c
# forgot every record, those of open files too.  A record with open files
# is what keeps a file opened before an extension apart from an open on the
# new shape (SPEC 4: a view opened before the extension keeps reading
# correct data): a later open finds no record, drops the pages and fills
# them with the new shape's bytes, which the older file then reads.  Any
# user who may stat views of the array (65537 distinct view paths: a few
# seconds) does it.  The mount records 64 (-o kcache_paths=64): the same
# drop after 65 paths, not after 19 s of stats.
@test "a user's flood of view paths does not make a file open before an extension read the new shape" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/a" --type u8 --shape 4x4 --chunk 2x2
    "$PY" -c "import sys; sys.stdout.buffer.write(bytes(range(1, 17)))" | "$DRX" put "$s/a"
    chmod -R a+rX "$s"
    mount_store "$s" "$m" -o allow_other,kcache_paths=64
    cat >"$RV/flood.py" <<'PY'
import os, sys
for i in range(1, int(sys.argv[2]) + 1):
    os.stat("%s/dim1=0:%d/data" % (sys.argv[1], i))
PY
    run "$PY" - "$m" "$s" "$DRX" "$RV/flood.py" <<'PY'
import os, subprocess, sys
m, s, drx, flood = sys.argv[1:5]
fd = os.open(m + "/a/data", os.O_RDONLY)
old = os.pread(fd, 64, 0)
assert old == bytes(range(1, 17)), old
subprocess.run([drx, "extend", s + "/a", "1", "4"], check=True)
subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                "/usr/bin/python3", flood, m + "/a", "200"], check=True)
with open(m + "/a/data", "rb") as f:
    new = f.read()
assert len(new) == 32, new
again = os.pread(fd, 64, 0)
assert again == old, "the file opened before the extension now reads %s" % again.hex()
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

# Found in review (not hostile: any program): `rm` of a file right after its
# close fails with EPERM about once in a few hundred tries.  The close's
# release runs after close(2) has returned; libfuse, still counting the
# file open, hides it (a rename to .fuse_hidden*) instead of unlinking, and
# drxfs_hidden.c refuses the hide when the file is neither open nor
# "released a moment ago": striped_release (drxfs_striped_layout.c) drops
# the open count (drxfs_striped_release) before it records the release
# (drxfs_hidden_released -> recent_add), and an unlink in between sees
# neither.
@test "create, close and unlink back to back never fail with EPERM" {
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    mount_store "$s" "$m"
    cat >"$RV/cu.py" <<'PY'
import os, sys
bad = []
for i in range(int(sys.argv[2])):
    p = "%s/%07d" % (sys.argv[1], i)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
    os.stat(p)
    try:
        os.unlink(p)
    except OSError as e:
        bad.append("%s: %s" % (p, e))
print(len(bad), "failed;", *bad[:3])
sys.exit(1 if bad else 0)
PY
    mkdir "$m/d1" "$m/d2"
    "$PY" "$RV/cu.py" "$m/d1" 4000 &
    local p1=$!
    run "$PY" "$RV/cu.py" "$m/d2" 4000
    echo "$output"
    local st=$status
    wait "$p1"
    [ "$st" -eq 0 ]
}

# Found in review: drxfs_prefetch.c runs one prefetch per array, but any
# number of arrays at once: a user reading the first byte of N arrays'
# large views has the root daemon start N `mpiexec -n RANKS drx-load
# prefetch` jobs (N process groups of RANKS+1 processes, N waiter threads,
# N descriptors), all reading the disk at once.  Here the launcher sleeps
# first (a slow disk: each job outlives the reads that started it).
@test "a user reading many arrays does not start a prefetch job per array at once" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m" i live
    "$DRX" init "$s" >/dev/null
    for i in $(seq 30); do
        "$DRX" create "$s/a$i" --type u8 --shape 256x256 --chunk 64x64
    done
    chmod -R a+rX "$s"
    mkdir "$RV/jobs"
    cat >"$RV/slow-mpiexec" <<SH
#!/bin/sh
echo \$\$ >"$RV/jobs/\$\$"
sleep 30
exec mpiexec "\$@"
SH
    chmod 755 "$RV/slow-mpiexec"
    cat >"$RV/drxfs.conf" <<CONF
prefetch = { enabled = true; min_bytes = 1024; ranks = 1; mpiexec = "$RV/slow-mpiexec"; };
CONF
    mount_store "$s" "$m" -o allow_other,config="$RV/drxfs.conf"
    for i in $(seq 30); do
        nob head -c 1 "$m/a$i/data" >/dev/null
    done
    sleep 2
    live=0
    for i in "$RV"/jobs/*; do
        [ -e "$i" ] && kill -0 "${i##*/}" 2>/dev/null && live=$((live + 1))
    done
    echo "prefetch jobs running at once: $live"
    [ "$live" -ge 1 ] # the prefetch runs at all
    [ "$live" -le 4 ]
}

# Found in review: drx and drx-load map a path under a drxfs mount to the
# store by the mount's source text in mountinfo (store.c,
# drx_store_resolve_path_for), then follow that path, symlinks and all.  A
# user who may rename the store directory (owns its parent) swaps it for a
# symlink to another store after the mount: root's `drx` given a path under
# the mount then reads, writes and removes arrays of that other store,
# which the mount never showed.  (The commit request checks the mount; the
# mapping does not.)
@test "a store path swapped for a symlink after the mount does not send root's drx to another store" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local m="$RV/m"
    mkdir "$RV/u" "$RV/priv"
    chown 65534:65534 "$RV/u"
    chmod 700 "$RV/priv"
    "$DRX" init "$RV/u/store" >/dev/null
    "$DRX" init "$RV/priv/store" >/dev/null
    "$DRX" create "$RV/priv/store/secret" --type u8 --shape 4 --chunk 4
    mount_store "$RV/u/store" "$m" -o allow_other
    [ ! -e "$m/secret" ]
    nob mv "$RV/u/store" "$RV/u/store.old"
    nob ln -s "$RV/priv/store" "$RV/u/store"
    run "$DRX" rm "$m/secret"
    echo "drx rm $m/secret: status $status: $output"
    [ -e "$RV/priv/store/secret.xmd" ]
    [ "$status" -ne 0 ]
}

# Found in the hostile-user audit of 2026-12-06: libcore named an array's
# files by the whole path at each step, so a user swapping the directory
# of their array for a symlink (renameat2 RENAME_EXCHANGE, in a loop)
# while root ran drx on it sent single steps elsewhere: attr set read the
# owner from the user's .xmd and replaced root's own array's .xmd with a
# file of the user's, extend wrote the growth into root's, create
# replaced an existing array's .xmd, rm removed one file of each.  The
# directory is now opened once per command (struct drx_pin): a command
# acts on one directory, whichever the name led to when it began.
@test "a directory swapped for a symlink under root's drx attr, extend, create and rm: each command acts on one array, root's files stay root's" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" out="$RV/out" i
    mkdir -m 1777 "$s"
    "$DRX" init "$s" >/dev/null
    chmod 1777 "$s"
    mkdir -m 755 "$out"
    nob mkdir "$s/dd"
    nob "$DRX" create "$s/dd/att" --type u8 --shape 8 --chunk 4
    printf userdata | nob "$DRX" put "$s/dd/att"
    nob ln -s "$out" "$s/dd.lnk"
    "$DRX" create "$out/att" --type u8 --shape 8 --chunk 4
    printf ROOTDATA | "$DRX" put "$out/att"
    "$DRX" create "$out/new" --type u16 --shape 3 --chunk 2
    cp "$out/new.xmd" new.before
    # the user's directory whatever its name, and root's, for drx by
    # /proc/self/fd/N (libcore takes those as pinned already)
    local ud od
    exec {ud}<"$s/dd" {od}<"$out"
    local u="/proc/self/fd/$ud" o="/proc/self/fd/$od"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
end = time.monotonic() + 60
while time.monotonic() < end:
    libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2)' \
        "$s/dd" "$s/dd.lnk" &
    APID=$!
    local secs=10
    [ -z "${DRX_TEST_SANITIZED:-}" ] || secs=4
    local end=$((SECONDS + secs))
    for ((i = 0; SECONDS < end; i++)); do
        "$DRX" attr set "$s/dd/att" k "v$i" 2>/dev/null || true
        "$DRX" extend "$s/dd/att" 0 1 2>/dev/null || true
        # new exists in root's directory only: made in the user's (then
        # removed there), or refused; never written over root's
        "$DRX" create "$s/dd/new" --type u8 --shape 4 --chunk 4 2>/dev/null &&
            { [ -e "$u/new.xmd" ] && "$DRX" rm "$u/new"; }
        # att in both: one of them removed whole, then made again
        "$DRX" rm "$s/dd/att" 2>/dev/null || true
        [ -e "$u/att.xmd" ] || [ -e "$u/att.xta" ] ||
            { nob "$DRX" create "$u/att" --type u8 --shape 8 --chunk 4 &&
                printf userdata | nob "$DRX" put "$u/att" dim0=0:8; }
        [ -e "$o/att.xmd" ] || [ -e "$o/att.xta" ] ||
            { "$DRX" create "$o/att" --type u8 --shape 8 --chunk 4 &&
                printf ROOTDATA | "$DRX" put "$o/att" dim0=0:8; }
        [ "$(stat -c %u "$o/att.xmd" "$o/att.xta" "$o/new.xmd" | sort -u)" = 0 ] ||
            fail "after $i rounds root's arrays have files of another user: $(ls -ln "$out")"
        cmp -s new.before "$o/new.xmd" || fail "after $i rounds root's array new was replaced"
        [ -e "$u/att.xmd" ] && [ -e "$u/att.xta" ] ||
            fail "after $i rounds rm left half the user's array: $(ls -ln "$u/")"
    done
    stop_holder
    APID=
    echo "$i rounds"
    # each array whole: .xmd and .xta of the same array (an .xta cut short
    # of its metadata or a growth record in the other's .xmd would show)
    [ -L "$s/dd" ] && mv -T "$s/dd.lnk" "$s/dd.tmp" && mv -T "$s/dd" "$s/dd.lnk" &&
        mv -T "$s/dd.tmp" "$s/dd"
    [ -d "$s/dd" ] && [ ! -L "$s/dd" ]
    run "$DRX" get "$out/att" dim0=0:8
    assert_success
    assert_output ROOTDATA
    run "$DRX" get "$s/dd/att" dim0=0:8
    assert_success
    assert_output userdata
    "$DRX" get "$out/new" >/dev/null
    [ "$(stat -c %u "$s/dd/att.xmd" "$s/dd/att.xta" | sort -u)" = 65534 ]
    exec {ud}<&- {od}<&-
}

# Found in the same audit: README says drx rm waits for the extend lock
# (at most DRX_LOCK_WAIT_MS), as an extension does, but it took none: it
# removed an array while another process extended it or held its growths.
@test "drx rm waits for the extend lock another process holds, then fails with one line; the array stays" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s"
    mkdir "$s"
    chmod 755 "$s"
    "$DRX" create "$s/a" --type u8 --shape 4 --chunk 4
    nobody_flocks "$s/a.xta" LOCK_SH
    DRX_LOCK_WAIT_MS=300 run "$DRX" rm "$s/a"
    assert_failure
    assert_output "drx: rm: $s/a: locked by another process for 300 ms (an extension, or growths it has not committed yet): not removed"
    [ -e "$s/a.xmd" ] && [ -e "$s/a.xta" ]
    stop_holder
    APID=
    "$DRX" rm "$s/a"
    [ ! -e "$s/a.xmd" ] && [ ! -e "$s/a.xta" ]
}

# Found with the review's lock finding: .drx/ is 0755, so any user may
# flock it.  Held exclusively, it kept drxfs from mounting, waiting
# without end; the mount now gives up after the bound with one line.
@test "a user's lock on .drx/ makes drxfs refuse to mount after the bound, not hang" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    chmod 755 "$s" "$s/.drx"
    nobody_flocks "$s/.drx" LOCK_EX
    mkdir "$m"
    DRX_LOCK_WAIT_MS=300 run timeout 60 "$DRXFS" -f "$s" "$m"
    echo "drxfs: status $status: $output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    grep -q "locked by another process" <<<"$output"
    ! mountpoint -q "$m"
    # let go: it mounts
    kill "$APID"
    wait "$APID" 2>/dev/null || true
    APID=
    mount_store "$s" "$m"
    mountpoint -q "$m"
}

# Found in the third review (lead): the daemon named entries for rm,
# rmdir, mkdir, symlink, mknod, link, rename and utimes, and stat'ed them
# for getattr, by multi-component paths from the store's root (unlinkat(root,
# "h/u/victim")).  Only the opens went through openat2(RESOLVE_BENEATH |
# RESOLVE_NO_SYMLINKS).  A user who can write a directory of the store
# swaps their directory u for a symlink (renameat2 RENAME_EXCHANGE, in a
# loop) between the walk, which saw a directory, and the call: the daemon,
# root, then removes, makes (and chowns to the user) or stats entries
# beyond the symlink, anywhere on the machine.  Through the mount the
# symlink leads nowhere (its target is relative, and the mount sits
# deeper than the store): only the daemon could reach the canary.  Without
# the fix the canary was removed in 3 runs of 4 (within 15 s).
@test "a directory swapped for a symlink under the daemon's walk never leads rm or mkdir outside the store" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/mm/m" out="$RV/outside"
    mkdir -p "$RV/mm" "$out"
    "$DRX" init "$s" >/dev/null
    mkdir -m 1777 "$s/h"
    echo canary >"$out/victim"
    chmod 600 "$out/victim"
    nob mkdir "$s/h/u"
    nob ln -s ../../outside "$s/h/v"
    mount_store "$s" "$m" -o allow_other
    # the swapper: u is the symlink for a few microseconds at a time
    # (two exchanges back to back), a directory in between
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
end = time.monotonic() + 60
while time.monotonic() < end:
    libc.renameat2(d, b"u", d, b"v", 2)  # RENAME_EXCHANGE
    libc.renameat2(d, b"u", d, b"v", 2)
    for _ in range(1000):  # some tens of microseconds
        pass' "$s/h" &
    APID=$!
    # the victim side: the real directory (held open: its name flips) gets
    # a file "victim", removed through the mount; mkdir through the mount
    # (8 s; 5 under the sanitizers, which look for memory errors here:
    # the race itself is the first pass's; longer, up to 40 s, until the
    # loop has reached the daemon 10 times each way: under ASan 9
    # removals in 5 s were seen once, 2026-12-07)
    local secs=8
    [ -z "${DRX_TEST_SANITIZED:-}" ] || secs=5
    run timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import os, sys, time
store_h, mnt_h, out = sys.argv[1:4]
while True:  # the directory, not the symlink in its place
    try:
        real = os.open(store_h + "/u", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        break
    except OSError:
        pass
tries = made = hits = 0
start = time.monotonic()
end, cap = start + int(sys.argv[4]), start + 40
while os.listdir(out) == ["victim"] and (
        time.monotonic() < end or (min(made, hits) < 10 and time.monotonic() < cap)):
    try:
        os.mkdir(mnt_h + "/u/made%d" % tries)
        made += 1
    except OSError:
        pass
    try:
        os.close(os.open("victim", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=real))
        os.unlink(mnt_h + "/u/victim")
        hits += 1
    except OSError:
        pass
    tries += 1
print("tries", tries, "made", made, "removals through the mount", hits)' "$s/h" "$m/h" "$out" "$secs"
    echo "$output"
    kill "$APID" 2>/dev/null || true
    wait "$APID" 2>/dev/null || true
    APID=
    # the daemon never went beyond the symlink ...
    [ -f "$out/victim" ]
    [ "$(ls "$out")" = victim ]
    # ... while the loop did reach it (the kernel sends most of the calls
    # nowhere: it sees u as the symlink, or its type changing)
    [ "$(sed -n 's/.*made \([0-9]*\) .*/\1/p' <<<"$output")" -ge 10 ]
    [ "$(sed -n 's/.*removals through the mount \([0-9]*\)/\1/p' <<<"$output")" -ge 10 ]
}

# Found in the fourth review: a user who may write an array's .xmd writes 64
# MiB whose libconfig part holds ~1.9 million tiny attribute entries.  Every
# access to the array through the mount (even a stat) and every `drx info`
# had libconfig build a tree of all of it before "at most 1024 attributes"
# refused it: 1.9 GB and seconds of CPU each time.  Now its shape is
# refused before libconfig reads it (array_shape.c) and drxfs remembers the
# failure while the .xmd and .xta are unchanged (drxfs_array_table.c).  The
# memory bound: the file's read buffer (at most 64 MiB, up to 96 MiB while
# realloc moves it) and the program itself, not a tree of 1.9 GB: 68 MB
# measured in the gcc build, 160-164 MB under ASan (its shadow memory and
# quarantine), so 512 MiB, well below the 1.9 GB of the bug.
@test "a hostile 64 MiB .xmd is refused before parsing, and not read again while unchanged" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    command -v strace >/dev/null || skip "no strace"
    local s="$RV/s" m="$RV/m" max=$((512 * 1024)) pid hwm i
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/evil" --type u8 --shape 1 --chunk 1
    "$DRX" create "$s/good" --type u8 --shape 1 --chunk 1
    cp "$s/evil.xmd" "$RV/valid.xmd"
    chown 65534 "$s/evil.xmd"
    nob "$PY" "$DRX_SOURCE/bats-tests/xmd_gen.py" hostile "$s/evil.xmd"
    [ "$(stat -c %s "$s/evil.xmd")" -gt $((60 << 20)) ]
    run /usr/bin/time -f 'maxrss %M' "$DRX" info "$s/evil"
    assert_failure
    assert_output --partial "evil.xmd:9: more than 1024 attributes (refused before parsing)"
    echo "$output" | grep maxrss
    [ "$(echo "$output" | sed -n 's/^maxrss //p')" -lt "$max" ]

    mount_store "$s" "$m"
    pid=$(cat "$m.pid")
    run stat "$m/evil"
    assert_failure
    assert_output --partial "Input/output error"
    # the store's path in the reason (not the daemon's /proc/self/fd/N)
    grep -q "evil: cannot open array: $(realpath "$s")/evil.xmd:9: more than 1024 attributes (refused before parsing)" "$m.log"
    # unchanged: the failure is remembered, no thread reads the file again
    strace -f -qq -e trace=openat,openat2 -o "$RV/trace" -p "$pid" &
    local spid=$!
    sleep 1
    local par=()
    for i in 1 2 3 4 5 6 7 8; do
        stat "$m/evil" >/dev/null 2>&1 &
        par+=($!)
    done
    for i in "${par[@]}"; do wait "$i" || true; done
    for i in $(seq 20); do
        run stat -c %s "$m/evil"
        assert_failure
        assert_output --partial "Input/output error"
    done
    ls "$m/good" >/dev/null # the trace sees the daemon's opens
    sleep 0.3
    kill "$spid"
    wait "$spid" || true
    grep -q 'good.xmd' "$RV/trace"
    local opens
    opens=$(grep -c 'evil.xmd' "$RV/trace" || true)
    echo "opens of evil.xmd in 28 stats: $opens"
    [ "$opens" -eq 0 ]
    # each stat fails with its reason, logged once: the repeats are counted
    # by the log's rate limit, not written (review9.bats)
    local said
    said=$(grep -c 'evil: cannot open array: .*more than 1024 attributes' "$m.log" || true)
    [ "$said" -ge 1 ] && [ "$said" -le 10 ]
    hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status")
    echo "daemon VmHWM $hwm kB"
    [ "$hwm" -lt "$max" ]
    # a change is seen: the array opens once its .xmd is valid again
    nob cp "$RV/valid.xmd" "$s/evil.xmd"
    run stat -c %F "$m/evil"
    assert_success
    ls "$m/evil/data" >/dev/null
}

# Found after the tenth review: a process refused an array's own file is
# refused chunk key removals for 30 s, so that a failed `rm -rf` of an
# array leaves its data (mount_zarr.bats), but the marks were a table of
# 16 processes, the oldest pushed out by the next: another user's 16
# refused processes (an rm of their own array's data each) ended root's
# mark while its rm -rf went on, and its key removals stored the fill.
# Now 256 marks, at most 64 held by one user.
@test "another user's refused processes do not end a victim's mark during its rm -rf" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    local s="$RV/s" m="$RV/m"
    "$DRX" create "$s/obs" --type f32 --shape 4x4 --chunk 2x2 --fill -1
    "$PY" -c "import numpy as np; np.arange(1, 17, dtype='<f4').tofile('$RV/obs.raw')"
    "$DRX" put "$s/obs" <"$RV/obs.raw"
    nob "$DRX" create "$s/u/mine" --type f32 --shape 2 --chunk 2
    # root's process, as rm -rf: refused data, then (after the other
    # user's 100 refusals) a chunk key
    run "$PY" - "$m" <<'PY'
import errno, os, subprocess, sys
m = sys.argv[1]
try:
    os.unlink(m + "/obs/data")
    sys.exit("data removed")
except PermissionError:
    pass
flood = """
import errno, os, sys
refused = 0
for _ in range(100):
    pid = os.fork()
    if pid == 0:
        try:
            os.unlink(sys.argv[1])
        except OSError as e:
            os._exit(0 if e.errno == errno.EPERM else 1)
        os._exit(2)
    refused += os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
print(refused, "of the other user's processes refused by the daemon")
"""
subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "/usr/bin/python3", "-c", flood, m + "/u/mine/data"], check=True)
try:
    os.unlink(m + "/obs/zarr/obs/0.0")
    print("key removed")
except PermissionError:
    print("key refused")
PY
    echo "$output"
    assert_success
    assert_line "100 of the other user's processes refused by the daemon"
    assert_line "key refused"
    cmp "$RV/obs.raw" <("$DRX" get "$s/obs")
}

# Found in the thirteenth review: a file handed to the batched commit
# marks its metafile with a lock on byte 2^62 until its size is recorded,
# and every other process's open, truncate and drxfs's lookup of it wait
# for the mark to go (10 s at most; stripe_pending.c).  The mark was a
# read lock, waited for by asking about a write lock: any user who may
# read the file took a read lock there and held it, and every open of it
# by drx, drx-load or a second mount then failed after 10 s, every `ls -l`
# through a mount stalled 10 s a file.  Now the mark is a write lock
# (only who may write the metafile can set one), asked about as a read
# lock: a reader's lock is never waited for.
@test "a reader's lock where the pending mark goes makes no open or stat wait" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    mount_store "$s" "$m" -o allow_other
    head -c 100000 /dev/urandom >"$RV/orig"
    cp "$RV/orig" "$m/victim"
    chmod 644 "$m/victim"
    commit_mount "$m"
    as_nobody_bg "$RV/n/locked" '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
# the mark bytes, and the read mark of a writer that may not write (a
# byte further on: it counts only on a 0444 file)
fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 128, 1 << 62)
open(sys.argv[2], "w").close()
time.sleep(120)' "$s/victim.nafs"
    # root's drx sees no size waiting for a commit (the reader's lock was
    # taken for the mark)
    run "$DRX" stripe get "$s/victim"
    echo "$output"
    assert_success
    grep -qx "size=100000" <<<"$output"
    refute_output --partial "size pending"
    # a second mount looks it up, stats and reads it at once (each waited
    # 10 s)
    mount_store "$s" "$RV/m2"
    run timeout 8 cmp "$RV/orig" "$RV/m2/victim"
    assert_success
    run timeout 8 stat -c %s "$RV/m2/victim"
    assert_output 100000
    unmount_store "$RV/m2"
    # (while the reader's lock is there, a writer cannot set its mark: a
    # warning, and a second mount may see the recorded size until the
    # commit: README, Striped files)
    stop_holder
    # the real mark makes others wait for the size: set at the close
    # (its FLUSH, which close(2) waits for), the size a second mount sees
    # right after is the new one
    mount_store "$s" "$RV/m2"
    head -c 5000 /dev/urandom >>"$m/victim"
    [ "$(stat -c %s "$RV/m2/victim")" -eq 105000 ]
    unmount_store "$RV/m2"
}

# Found in the hostile audit of 2026-12-06: a root daemon made a user's
# writes as root, so the blocks ext4 keeps back for root did not stop
# them (a user stopped at 11 MiB writing directly wrote 21 MiB more
# through the mount) and root's own services could find the disk full.
# The daemon now allocates a user's blocks as the user (libcore charge.c:
# fsuid and no CAP_SYS_RESOURCE around each allocating call), which also
# applies quota limits (this kernel has no quotas to test them on).  A
# file system of 64 MiB, half of it root's reserve: each of a striped
# file, a plain file and an array's data written by nobody through the
# mount stops where nobody's direct writes stop, and root keeps its half.
@test "a user's writes through a root daemon stop at ext4's root reserve" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local fs="$RV/fs" s="$RV/fs/st" m="$RV/m" free
    loop_fs "$fs" 64M -m 50
    "$DRX" init "$s" --count 2 --extent 65536 >/dev/null
    chmod 1777 "$s"
    "$DRX" create "$s/a" --type f64 --shape 64x64x1024 --chunk 16x16x256 >/dev/null
    chmod 666 "$s/a.xta" "$s/a.xmd"
    : >"$s/plain"
    chmod 666 "$s/plain"
    mount_store "$s" "$m" -o allow_other
    # what nobody may take: the file system's free blocks less root's half
    free=$(df --output=avail -k "$fs" | tail -1)
    [ "$free" -gt 16000 ] && [ "$free" -lt 28000 ]
    for f in striped plain a/data; do
        run nob dd if=/dev/zero of="$m/${f/striped/big}" bs=1M count=64 conv=notrunc
        assert_failure
        assert_output --partial "No space left on device"
        # root still has its half: 16 MiB written directly
        head -c 16M /dev/zero >"$fs/root-file"
        rm "$fs/root-file"
        case $f in
        striped) rm "$m/big" ;;
        plain) : >"$m/plain" ;;
        a/data) fallocate -p -o 0 -l 32M "$s/a.xta" ;;
        esac
        sync -f "$fs"
    done
    # nobody writing directly stops at the same place
    run nob dd if=/dev/zero of="$s/direct" bs=1M count=64
    assert_failure
    assert_output --partial "No space left on device"
}

# Found in the review of 2026-12-07: on a store whose file system went
# read-only (errors=remount-ro), a striped file said EACCES to every write
# open and truncate (its handle, opened read-only, knew no other answer),
# and an array's data showed no w, so that the kernel refused a user of
# an allow_other mount with EACCES before the daemon's EROFS; plain files
# said EROFS.
@test "on a store whose file system went read-only, a user's writes to a striped file and an array say EROFS" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local fs="$RV/fs" s="$RV/fs/st" m="$RV/m" f
    loop_fs "$fs" 32M
    "$DRX" init "$s" >/dev/null
    chmod 1777 "$s"
    "$DRX" create "$s/a" --type u8 --shape 8 --chunk 4 --fill 7 >/dev/null
    chmod 666 "$s/a.xta" "$s/a.xmd"
    echo plain >"$s/plain"
    chmod 666 "$s/plain"
    mount_store "$s" "$m" -o allow_other
    nob sh -c "echo striped >'$m/sf'"
    # the striped file's handle goes with its commit (else its subfiles,
    # open for writing, keep the remount from happening)
    setfattr -n user.drx.commit "$m"
    mount -o remount,ro "$fs"
    for f in plain sf a/data; do
        run nob dd if=/dev/zero of="$m/$f" bs=1 count=1 conv=notrunc
        assert_failure
        assert_output --partial "Read-only file system"
        run dd if=/dev/zero of="$m/$f" bs=1 count=1 conv=notrunc
        assert_failure
        assert_output --partial "Read-only file system"
    done
    run nob truncate -s 0 "$m/sf"
    assert_failure
    assert_output --partial "Read-only file system"
    [ "$(cat "$m/sf")" = striped ]
    cmp <("$DRX" get "$s/a") "$m/a/data"
    unmount_store "$m"
}
