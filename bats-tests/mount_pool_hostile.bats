#!/usr/bin/env bats
# Attacks on the recycled-subfile pool (stripe_pool.c) and inodes made
# ahead (store_fresh.c): attacks through the real mount.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
    RV=$(mktemp -d /tmp/drxfs-review.XXXXXX)
    chmod 755 "$RV"
}

teardown() {
    [ -n "${APID:-}" ] && kill "$APID" 2>/dev/null || true
    [ -n "${RV:-}" ] || return 0
    unmount_store "$RV/m"
    ! mountpoint -q "$RV/t" 2>/dev/null || umount "$RV/t" || umount -l "$RV/t"
    rm -rf "$RV"
}

# Found in review (fixed): empty_alone() takes a write lease (F_SETLEASE F_WRLCK) on a subfile
# that still has its old, world-readable name.  Any open(2) of that file by
# anyone during the lease breaks it, and the kernel sends the lease holder
# SIGIO, whose default action kills the daemon: every pending size of the
# batched commit is lost with it.  Here user nobody, who may read the
# subfile of a 0644 file, opens it in a loop while root removes files.
@test "a local user opening a removed file's subfile cannot kill the daemon (lease break SIGIO)" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m" i subs pid
    "$DRX" init "$s" --count 2 --extent 65536 >/dev/null
    mount_store "$s" "$m" -o allow_other
    pid=$(cat "$m.pid")
    for i in $(seq 20); do head -c 8000000 /dev/zero >"$m/f$i"; done
    commit_mount "$m"
    subs=$(for i in $(seq 20); do subfiles_of "$s/f$i"; done)
    [ "$(echo "$subs" | wc -l)" -eq 40 ]
    cat >"$RV/opener.py" <<'PY'
import os, sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for p in sys.argv[2:]:
        try:
            os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
PY
    # a file written and not committed yet: lost if the daemon dies
    head -c 100000 /dev/urandom >"$RV/victim.src"
    cp "$RV/victim.src" "$m/victim"
    # setpriv itself (not the nob function, a subshell): $! is the opener
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" "$RV/opener.py" 30 $subs &
    APID=$!
    sleep 0.3
    for i in $(seq 20); do
        rm -f "$m/f$i" 2>/dev/null || true
        kill -0 "$pid" 2>/dev/null || break
    done
    kill "$APID" 2>/dev/null || true
    wait "$APID" 2>/dev/null || true
    APID=
    run kill -0 "$pid"
    if [ "$status" -ne 0 ]; then
        echo "drxfs died while files were removed; its log:"
        cat "$m.log"
        unmount_store "$m"
        mount_store "$s" "$m"
        echo "victim after remount: $(stat -c %s "$m/victim") bytes (written: 100000)"
        false
    fi
    cmp "$RV/victim.src" "$m/victim"
}

# Found in review (fixed): a recycled subfile keeps its POSIX ACL.  Under a root daemon with
# allow_other, a new file's subfiles are given to its creator, who may
# then set an ACL on them (they own them).  empty_alone() changes owner
# and mode but leaves the access ACL, so the named entry a user put on
# their own removed file's subfile survives into the pool and into the
# next user's file: chmod only narrows the mask to the new group bits.
# Nobody grants themself rw on their subfile, removes the file; uid 65533
# creates a 0640 file, which takes that subfile: nobody reads its bytes.
@test "a recycled subfile carries no ACL of its previous owner into another user's file" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local s="$RV/s" m="$RV/m" sub
    "$DRX" init "$s" --count 2 --extent 4096 >/dev/null
    mount_store "$s" "$m" -o allow_other
    mkdir "$m/pub"
    chmod 1777 "$m/pub"
    nob sh -c "umask 022; head -c 8192 /dev/zero >'$m/pub/mine'"
    commit_mount "$m"
    # nobody owns the subfiles of its file and adds u:nobody:rw to them
    nob "$PY" - $(subfiles_of "$s/pub/mine") <<'PY'
import os, struct, sys
X = 0xffffffff
ents = [(1, 6, X), (2, 6, 65534), (4, 4, X), (0x10, 6, X), (0x20, 4, X)]
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *e) for e in ents)
for p in sys.argv[1:]:
    os.setxattr(p, 'system.posix_acl_access', acl)
PY
    nob rm "$m/pub/mine"
    [ "$(find "$s/.drx/stripes" -path '*/.pool/*' -type f | wc -l)" -eq 2 ]
    # another user's private (0640) file takes the pooled subfiles
    "$PY" -c 'print("secret" * 1400, end="")' >"$RV/secret"
    chmod 644 "$RV/secret"
    setpriv --reuid=65533 --regid=65533 --clear-groups -- \
        sh -c "umask 027; cat '$RV/secret' >'$m/pub/theirs'"
    commit_mount "$m"
    [ "$(find "$s/.drx/stripes" -path '*/.pool/*' -type f | wc -l)" -eq 0 ]
    run stat -c %a "$m/pub/theirs"
    assert_output 640
    for sub in $(subfiles_of "$s/pub/theirs"); do
        echo "$sub: $(stat -c %u:%g:%a "$sub")"
        run nob head -c 16 "$sub"
        echo "nobody reads: status $status, '$output'"
        assert_failure
    done
}

# Found in review (fixed): the thread of store_fresh.c makes up to 1024 empty files ahead as
# soon as the store is mounted, and on ENOSPC keeps them: on a store with
# few free inodes the mount hoards them, and the user's files, directories
# (and the subfiles that must be allocated) fail with ENOSPC while about a
# thousand idle inodes sit in .drx/fresh.  A filesystem of 1200 inodes,
# about 1190 free: 150 one-byte files (300 inodes) and a directory must fit.
@test "inodes made ahead do not exhaust a store's free inodes (ENOSPC with 1000 idle in .drx/fresh)" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (tmpfs mount)"
    local t="$RV/t" m="$RV/m" i
    mkdir "$t"
    mount -t tmpfs -o size=64m,nr_inodes=1200 tmpfs "$t"
    "$DRX" init "$t/s" --count 2 --extent 4096 >/dev/null
    df -i "$t"
    mount_store "$t/s" "$m"
    sleep 1
    for i in $(seq 150); do
        if ! echo x >"$m/f$i"; then
            df -i "$t"
            echo "ENOSPC at file $i; made ahead and idle: $(ls "$t/s/.drx/fresh" | wc -l)"
            false
        fi
    done
    mkdir "$m/d"
    unmount_store "$m"
}
