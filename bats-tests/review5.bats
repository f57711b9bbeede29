#!/usr/bin/env bats
# The fifth hostile review: what one local user's open files, listings and
# own arrays cost a root daemon mounted with allow_other (descriptors,
# inotify instances, memory), and what the daemon does when it runs out of
# descriptors.  Each test failed before its fix.

load test_helper

setup() {
    hostile_setup review5
}

teardown() {
    stop_holder
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
        grep -Eq "commit of [0-9]+ striped files?: Too many open files" "$RV/m.log" && break
        sleep 0.1
    done
    grep -Eq "commit of [0-9]+ striped files?: Too many open files" "$RV/m.log"
    prlimit --pid "$pid" --nofile="$(ulimit -Hn)"
    commit_mount "$RV/m"
    run "$DRX" stripe get "$RV/s/victim"
    assert_output --partial "size=300000"
    cmp "$RV/r.bin" "$RV/m/victim"
    run "$DRX" fsck "$RV/s"
    assert_success
}

# nobody_holds_opens FILE DIR: user nobody opens FILE, then DIR, as many
# times as he can (his soft limit raised to his hard one) and holds them
# for 2 minutes in the background (APID, killed by teardown); $RV/n/held
# says how many, and why he stopped
nobody_holds_opens() {
    as_nobody_bg "$RV/n/held" '
import os, resource, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds, why = [], ""
for path, flags in ((sys.argv[1], os.O_RDONLY), (sys.argv[2], os.O_RDONLY | os.O_DIRECTORY)):
    try:
        while len(fds) < hard - 16:
            fds.append(os.open(path, flags))
    except OSError as e:
        why = e.strerror
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d %s\n" % (len(fds), why))
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
time.sleep(120)' "$1" "$2"
}

# Found in review: every plain file and store directory a user holds open
# through the mount keeps a descriptor of the daemon open, and the daemon
# has one table for everybody (its limit was the one it was started with,
# the same as the user's).  User nobody opening one file of his until his
# own limit made every other open through the mount fail with EMFILE:
# root's and other users' reads, creates and listings, and the batched
# commit's recording of sizes (see the first test), for as long as he held
# them.  A user other than root now holds at most a quarter of the
# daemon's descriptors (drxfs_share.c); his next open is EMFILE.
@test "one user's open files leave the daemon descriptors for everybody else" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local held lim
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    echo mine >"$RV/s/pub/p"
    chown 65534:65534 "$RV/s/pub/p"
    echo theirs >"$RV/s/pub/q"
    chmod 644 "$RV/s/pub/q"
    mount_store "$RV/s" "$RV/m" -o allow_other
    lim=$(awk '/^Max open files/ { print $4 }' "/proc/$(cat "$RV/m.pid")/limits")
    nobody_holds_opens "$RV/m/pub/p" "$RV/m/pub"
    held=$(cat "$RV/n/held")
    echo "nobody holds: $held; the daemon's limit: $lim"
    # root and another user still read, create and list
    [ "$(cat "$RV/m/pub/q")" = theirs ]
    [ "$(setpriv --reuid=65533 --regid=65533 --clear-groups -- cat "$RV/m/pub/q")" = theirs ]
    echo new >"$RV/m/pub/new"
    [ "$(cat "$RV/m/pub/new")" = new ]
    ls "$RV/m/pub" | grep -qx new
    # nobody was stopped at his share, by the daemon
    [[ "$held" == *"Too many open files" ]]
    [ "${held%% *}" -le $((lim / 4)) ]
    [ "${held%% *}" -ge 64 ]
    kill "$APID"
    wait "$APID" || true
    APID=
    # and given back: he opens again once he has closed them
    nob cat "$RV/m/pub/p" >/dev/null
}

# inotify_of PID: how many inotify instances PID holds
inotify_of() {
    find "/proc/$1/fd" -lname 'anon_inode:inotify' 2>/dev/null | wc -l
}

# Found in review: the daemon watched each array with a chunk cache (one
# for each array with open files) through an inotify instance of its own,
# and instances count against their user's fs.inotify.max_user_instances
# (128 by default): the daemon's user, root.  User nobody holding 150 of
# his arrays open through the mount took every instance root had left, and
# root's other programs (a second mount's kernel cache, systemd, tail -f)
# failed inotify_init with EMFILE; the daemon logged "no chunk cache" at
# every open and close of any array (886 lines).  At most 32 handles now
# watch at once, the others read without a chunk cache (said once each).
@test "a user holding many arrays open does not take root's inotify instances" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local i pid
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    for i in $(seq 48); do
        nob "$DRX" create "$RV/s/pub/a$i" --type u8 --shape 4096 --chunk 1024
    done
    printf 'x%.0s' $(seq 4096) | nob "$DRX" put "$RV/s/pub/a48"
    mount_store "$RV/s" "$RV/m" -o allow_other
    pid=$(cat "$RV/m.pid")
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import os, sys, time
fds = [os.open(p, os.O_RDONLY) for p in sys.argv[2:]]
for fd in fds:
    os.pread(fd, 4096, 0)
open(sys.argv[1], "w").close()
time.sleep(120)' "$RV/n/held" $(for i in $(seq 48); do echo "$RV/m/pub/a$i/data"; done) &
    APID=$!
    for i in $(seq 300); do [ -e "$RV/n/held" ] && break; sleep 0.1; done
    [ -e "$RV/n/held" ]
    echo "the daemon's inotify instances: $(inotify_of "$pid")"
    [ "$(inotify_of "$pid")" -le 33 ]
    # every array still reads what was stored, cached or not
    [ "$(head -c 3 "$RV/m/pub/a48/data")" = xxx ]
    printf 'y%.0s' $(seq 4096) | "$DRX" put "$RV/s/pub/a48"
    [ "$(head -c 3 "$RV/m/pub/a48/data")" = yyy ]
    [ "$(grep -c 'no chunk cache' "$RV/m.log")" -le 48 ]
}

# Found in review: data.nc's coordinate variables were read whole into the
# daemon's memory at open, then copied into the file's prefix.  A user's
# own two arrays, t (u8) and lat (f64), of 2^28 elements each, sparse (no
# block on disk), made one `head -c 100 t/data.nc` cost the daemon 4.2 GB
# and 35 s (2^30 elements: 16 GB, the OOM killer).  A coordinate whose
# elements in the view pass 64 MiB (all of them together) is now left out
# of data.nc, logged as for one too short (zarr/ keeps it: its keys are
# read as asked).
@test "data.nc of a view with a huge coordinate variable does not take the daemon's memory" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local pid hwm
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    nob "$DRX" create "$RV/s/pub/t" --type u8 --shape 268435456 --chunk 1048576 --dims lat
    nob "$DRX" create "$RV/s/pub/lat" --type f64 --shape 268435456 --chunk 1048576 --dims lat
    mount_store "$RV/s" "$RV/m" -o allow_other
    pid=$(cat "$RV/m.pid")
    run timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        head -c 4 "$RV/m/pub/t/data.nc"
    assert_success
    [ "$output" = CDF$'\x02' ] || [ "$output" = CDF$'\x05' ]
    hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status")
    echo "daemon VmHWM $hwm kB"
    [ "$hwm" -lt $((512 * 1024)) ]
    grep -q "pub/t: pub/lat is not dimension lat's coordinate: its elements in the view pass" "$RV/m.log"
    # a slice of it is small enough: lat is its coordinate there (1000
    # records of an f64 of lat and a byte of t padded to 4)
    [ "$(stat -c %s "$RV/m/pub/t/lat=0:1000/data.nc")" -gt 12000 ]
    [ "$(stat -c %s "$RV/m/pub/t/lat=0:1000/data.nc")" -lt 13000 ]
}

# Found in review: info, data.nc, data.npy and the zarr/ metadata are made
# at open, and each open holds its own copy until its release.  The info
# of a valid .xmd near its 64 MiB bound (1024 long string attributes) is
# 67 MB: user nobody holding 20 opens of his array's info and data.nc held
# 1.4 GB of the daemon, and nothing bounded the count.  A user other than
# root now holds at most 256 MiB of them; the open past that is ENOMEM.
@test "one user's opens of big info files do not take the daemon's memory" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local pid rss
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    nob "$DRX" create "$RV/s/pub/big" --type u8 --shape 1 --chunk 1
    nob "$PY" "$DRX_SOURCE/bats-tests/xmd_gen.py" strings "$RV/s/pub/big.xmd"
    mount_store "$RV/s" "$RV/m" -o allow_other
    pid=$(cat "$RV/m.pid")
    [ "$(stat -c %s "$RV/m/pub/big/info")" -gt $((64 << 20)) ]
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import os, sys, time
fds, why = [], ""
try:
    while len(fds) < 10:
        fds.append(os.open(sys.argv[1], os.O_RDONLY))
except OSError as e:
    why = e.strerror
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d %s\n" % (len(fds), why))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(120)' "$RV/m/pub/big/info" "$RV/n/held" &
    APID=$!
    for _ in $(seq 600); do [ -e "$RV/n/held" ] && break; sleep 0.1; done
    cat "$RV/n/held"
    [ "$(cat "$RV/n/held")" = "3 Cannot allocate memory" ]
    rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status")
    echo "daemon VmRSS $rss kB"
    # 700 MB before the fix in the gcc build; ASan's quarantine keeps what
    # building the three copies freed (618 MB seen), so the bound there
    # only rules out the unbounded case (the count above is the fix's test)
    local bound=$((600 * 1024))
    grep -q libasan "/proc/$pid/maps" && bound=$((1200 * 1024))
    [ "$rss" -lt "$bound" ]
    # another user and root still read it
    setpriv --reuid=65533 --regid=65533 --clear-groups -- head -c 1 "$RV/m/pub/big/info" >/dev/null
    head -c 1 "$RV/m/pub/big/info" >/dev/null
}

# Found in review: a listing of a store directory gave libfuse its entries
# without offsets, so libfuse read the whole directory into a buffer at an
# open directory's first read and kept it until the close.  A directory of
# 100,000 entries with 200-byte names cost 25 MB per open listing: user
# nobody holding 20 of them, each read once, held 497 MB of the daemon
# (and his share of descriptors allows thousands).  Entries now go with
# their directory offsets, and the daemon reads only as far as the
# kernel's buffer takes.
@test "a user's open listings of a huge directory do not take the daemon's memory" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, other users)"
    local pid rss
    "$DRX" init "$RV/s" >/dev/null
    mkdir -m 1777 "$RV/s/pub"
    mkdir "$RV/s/pub/big"
    "$PY" -c '
import os, sys
for i in range(30000):
    os.symlink("x", "%s/%0200d" % (sys.argv[1], i))
' "$RV/s/pub/big"
    mount_store "$RV/s" "$RV/m" -o allow_other
    pid=$(cat "$RV/m.pid")
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
for i in range(40):
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
    buf = ctypes.create_string_buffer(4096)
    assert libc.syscall(217, fd, buf, 4096) > 0  # getdents64: one small read
    fds.append(fd)
open(sys.argv[2], "w").close()
time.sleep(120)' "$RV/m/pub/big" "$RV/n/held" &
    APID=$!
    for _ in $(seq 600); do [ -e "$RV/n/held" ] && break; sleep 0.1; done
    [ -e "$RV/n/held" ]
    rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status")
    echo "daemon VmRSS $rss kB"
    [ "$rss" -lt $((100 * 1024)) ]
    # listings are whole and right, read in any buffer size
    [ "$(ls -U "$RV/m/pub/big" | wc -l)" -eq 30000 ]
    [ "$(ls -Ua "$RV/m/pub/big" | sort | head -2 | tr '\n' ' ')" = ". .. " ]
    diff <(ls "$RV/s/pub/big") <(ls "$RV/m/pub/big")
    "$PY" -c '
import os, sys
names = []
with os.scandir(sys.argv[1]) as it:
    for e in it:
        names.append(e.name)
assert len(names) == len(set(names)) == 30000, len(names)
' "$RV/m/pub/big"
}
