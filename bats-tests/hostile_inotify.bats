#!/usr/bin/env bats
# Another local user against a root daemon (allow_other): a flood of
# inotify events that overflows the daemon's queue.  Split from
# hostile_users.bats because it shortens the machine's inotify queue
# (fs.inotify.max_queued_events) while its daemon starts, which a daemon
# of another suite starting then would share: meson runs this suite
# alone, and every other suite beside another.

load test_helper

setup() {
    hostile_setup inotify
}

teardown() {
    hostile_teardown
}

# Found in review: inotify drops events when its queue is full and says so
# once (IN_Q_OVERFLOW, wd -1): the events dropped are changes never
# invalidated.  A user renaming in a loop in a directory the mount watches
# floods the queue; a drx put meanwhile is lost, and a process that mapped
# the array (np.memmap, SQLite) keeps reading the old bytes until its next
# open or read(2).  The daemon's queue is made short (the limit is read at
# inotify_init: the mount's only) so that the flood overflows it for sure.
@test "a user's flood of inotify events does not leave another process's mapping of an array stale" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m" q
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/a" --type u8 --shape 4096 --chunk 4096
    head -c 4096 /dev/zero | tr '\0' '\1' | "$DRX" put "$s/a"
    chmod -R a+rX "$s"
    mkdir -m 1777 "$s/tmp" "$s/tmp/w0" "$s/tmp/w1" "$s/tmp/w2"
    q=$(cat /proc/sys/fs/inotify/max_queued_events)
    echo 16 >/proc/sys/fs/inotify/max_queued_events
    mount_store "$s" "$m" -o allow_other,log_level=debug
    local st=$?
    echo "$q" >/proc/sys/fs/inotify/max_queued_events
    [ "$st" -eq 0 ]
    # the flood's directories are watched: a file in each was seen
    local k
    for k in 0 1 2; do
        : >"$m/tmp/w$k/f"
        stat "$m/tmp/w$k/f" >/dev/null
    done
    cat >"$RV/ren.py" <<'PY'
import os, sys, time
a, b = sys.argv[1] + "/ra", sys.argv[1] + "/rb"
open(a, "w").close()
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(1000):
        os.rename(a, b)
        os.rename(b, a)
PY
    run "$PY" - "$m" "$s" "$DRX" "$RV/ren.py" <<'PY'
import mmap, os, subprocess, sys, time
m, s, drx, ren = sys.argv[1:5]
fd = os.open(m + "/a/data", os.O_RDONLY)
mm = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
assert mm[0] == 1
# nobody renames in the store directly, in a directory the mount watches
nob = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3"]
fl = [subprocess.Popen(nob + [ren, s + "/tmp/w%d" % k, "4"]) for k in range(3)]
time.sleep(1)
subprocess.run([drx, "put", s + "/a"], input=b"\x63" * 4096, check=True)
for p in fl:
    p.wait()
time.sleep(1)
assert mm[0] == 0x63, "the mapping still shows %d after drx put" % mm[0]
PY
    echo "$output"
    unmount_store "$m"
    local over
    over=$(sed -n 's/.*inotify events (\([0-9]*\) overflows).*/\1/p' "$m.log")
    echo "overflows: $over"
    [ -n "$over" ] && [ "$over" -gt 0 ] || skip "the flood did not overflow the queue here"
    [ "$status" -eq 0 ]
}
