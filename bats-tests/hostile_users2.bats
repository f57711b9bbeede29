#!/usr/bin/env bats
# Another local user against a root daemon (allow_other), second round:
# what he does behind the mount, in a store directory he owns, while the
# daemon acts on a name there as root.  Each attack runs as user nobody
# (uid 65534) through the real mount; each test failed before its fix.

load test_helper

setup() {
    hostile_setup hostile2
}

teardown() {
    hostile_teardown
}

# Found in this review: the kernel checks an open against the file it
# holds under a name; the daemon then opens the store's name as root.  A
# user who may write the file's directory renames another user's file over
# his own between the two, behind the mount: root's 0600 file in his
# directory (root's drx output, a file given to him, a group's project
# directory) was read through the mount in 3 tries of a loop of renames,
# and written as well.
@test "a file renamed over a user's own behind the mount is not opened for him as root" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    secret_and_mine
    renamer "$RV/s/u" f secret
    run setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" - "$RV/m/u/f" <<'PY'
import os, sys
got = 0
for i in range(6000 // int(os.environ.get("DRX_RACE_DIV", "1"))):
    try:
        if i % 2:
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"PWNED\n")
            os.close(fd)
        else:
            with open(sys.argv[1], "rb") as f:
                if f.read().startswith(b"SECRET"):
                    got += 1
    except OSError:
        pass
print("read root's file %d times" % got)
PY
    race_done "read root's file 0 times"
    # whichever name it ended under, root's file holds its own bytes
    for f in "$RV/s/u/f" "$RV/s/u/secret"; do
        if [ "$(stat -c %u "$f")" -eq 0 ]; then
            [ "$(cat "$f")" = SECRET ]
        fi
    done
}

# The same with striped files (the daemon's handle read root's metafile's
# subfiles for him: 46 tries).
@test "a striped file renamed over a user's own behind the mount is not opened for him as root" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    printf 'SECRET\n' >"$RV/m/u/secret"
    chmod 600 "$RV/m/u/secret"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c "printf 'mine\n' >'$RV/m/u/f'"
    [ -f "$RV/s/u/f.nafs" ] && [ -f "$RV/s/u/secret.nafs" ]
    renamer "$RV/s/u" f.nafs secret.nafs
    run reads_as_nobody "$RV/m/u" f
    race_done "read root's bytes 0 times"
}

# The same with arrays, whose two store files a user swaps at once by
# exchanging two directories of his: root's 0600 array read through the
# user's own array's data in 4 tries.
@test "an array swapped for a user's own behind the mount is not opened for him as root" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    mkdir "$RV/s/u/d1" "$RV/s/u/d2"
    "$DRX" create "$RV/s/u/d2/a" --type u8 --shape 8 --chunk 8
    printf 'SECRET!!' | "$DRX" put "$RV/s/u/d2/a"
    chmod 600 "$RV/s/u/d2/a.xmd" "$RV/s/u/d2/a.xta"
    chown 65534:65534 "$RV/s/u/d1" "$RV/s/u/d2"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        sh -c "'$DRX' create '$RV/s/u/d1/a' --type u8 --shape 8 --chunk 8 &&
               printf 'mine....' | '$DRX' put '$RV/s/u/d1/a'"
    renamer "$RV/s/u" d1 d2
    run reads_as_nobody "$RV/m/u/d1/a" data data.npy zarr/a/0
    race_done "read root's bytes 0 times"
}

# The same for chmod, user xattrs and utimes, which the daemon did by name
# as root: root's 0600 file in the user's directory became 0666, with his
# attribute and his times, in a few seconds of renames.
@test "a file renamed over a user's own behind the mount does not take his chmod, xattrs or times" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    secret_and_mine
    renamer "$RV/s/u" f secret
    run calls_as_nobody 4000 "$RV/m/u/f" 'os.chmod(p, 0o666)' 'os.setxattr(p, "user.x", b"1")' \
        'os.utime(p, (0, 0))'
    touch "$RV/s/u/stop"
    stop_holder
    [ "$status" -eq 0 ]
    for f in "$RV/s/u/f" "$RV/s/u/secret"; do
        if [ "$(stat -c %u "$f")" -eq 0 ]; then
            stat -c '%a %Y' "$f"
            [ "$(stat -c %a "$f")" = 600 ]
            [ "$(stat -c %Y "$f")" -gt 0 ]
            run getfattr --absolute-names -n user.x "$f"
            [ "$status" -ne 0 ]
        fi
    done
}

# The same for a directory: a file root keeps in a 0700 directory (its
# own mode 0644) inside the user's directory, swapped with a directory of
# his by a rename behind the mount, was read through his own path in 104
# tries: the daemon checked the file, not the directories on its way.
@test "a directory only root may enter, swapped for a user's own behind the mount, hides its files from him" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    user_dir_store
    mkdir -m 700 "$RV/s/u/d2"
    printf 'SECRET\n' >"$RV/s/u/d2/f"
    printf 'SECRET\n' >"$RV/m/u/d2/g"
    chmod 644 "$RV/s/u/d2/f" "$RV/m/u/d2/g"
    mkdir "$RV/s/u/d1"
    printf 'mine\n' >"$RV/s/u/d1/f"
    chown -R 65534:65534 "$RV/s/u/d1"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c "printf 'mine\n' >'$RV/m/u/d1/g'"
    renamer "$RV/s/u" d1 d2
    run reads_as_nobody "$RV/m/u/d1" f g
    race_done "read root's bytes 0 times"
}

# Found in this review: a user takes a write lease (F_SETLEASE, which the
# owner of a file may take) on files of his in the store and opens them
# through the mount: each open held a daemon thread in open(2) until the
# kernel broke the lease (lease-break-time, 45 s), and ten of them hung
# the mount for every user that long, again at will.
@test "a user's leases on his own files do not hold up other users' opens" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    [ "$(cat /proc/sys/fs/lease-break-time)" -ge 30 ] || skip "lease-break-time below 30 s"
    user_dir_store
    printf 'hello\n' >"$RV/m/rootfile"
    as_nobody_bg "$RV/n/leased" '
import fcntl, os, signal, sys, time
s, m = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGIO, signal.SIG_IGN)
fds = []
for i in range(12):
    p = "%s/u/f%d" % (s, i)
    open(p, "w").close()
    fd = os.open(p, os.O_RDONLY)
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    fds.append(fd)
for i in range(12):
    if os.fork() == 0:
        try:
            os.open("%s/u/f%d" % (m, i), os.O_RDONLY)
        except OSError:
            pass
        os._exit(0)
time.sleep(1)
open(sys.argv[3], "w").close()
time.sleep(120)' "$RV/s" "$RV/m"
    run timeout 20 cat "$RV/m/rootfile"
    echo "status $status: $output"
    [ "$status" -eq 0 ]
    [ "$output" = hello ]
}
