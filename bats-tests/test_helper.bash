# Shared helpers of the BATS suites.  Suites run against the build tree:
# DRX_BUILD points at it (set by meson test; defaults to ./build).
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${DRX_SOURCE:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${DRX_BUILD:=$DRX_SOURCE/build}"
DRX="$DRX_BUILD/fs/drx"
DRXFS="$DRX_BUILD/fs/drxfs"
DRX_LOAD="$DRX_BUILD/mpi-loader/drx-load"
# Debian's python3 has numpy; a python3 earlier on PATH may not.
PY=/usr/bin/python3
# `env "$NO_LSAN" strace ...`: LeakSanitizer cannot run under ptrace, so
# programs traced in the ASan pass run without it (ASan itself stays on).
NO_LSAN="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# mpiexec, for every MPI run of the suites (theirs, and the prefetch jobs
# of their daemons, which find it on PATH): a wrapper that preloads
# bats-tests/mpi_yield.c into the ranks, so that a rank waiting on this
# oversubscribed 2-core machine yields the CPU instead of spinning (why:
# mpi_yield.c).  Ranks built with ASan take it with their runtime's link
# order check off (the shim is not instrumented and intercepts nothing).
# DRX_MPI_SPIN=1 runs the ranks as they are.
_mpi_yield="$DRX_BUILD/bats-tests/libmpi_yield.so"
_real_mpiexec=$(command -v mpiexec || true)
# (LD_PRELOAD splits at spaces and colons: a build path with one runs
# the ranks as they are.)
if [ -z "${DRX_MPI_SPIN:-}" ] && [ -f "$_mpi_yield" ] && [ -n "$_real_mpiexec" ] &&
    [ -n "${BATS_RUN_TMPDIR:-}" ] && [[ "$_mpi_yield" != *[[:space:]:]* ]]; then
    if [ ! -x "$BATS_RUN_TMPDIR/mpibin/mpiexec" ]; then
        mkdir -p "$BATS_RUN_TMPDIR/mpibin"
        # the paths quoted for sh (%q); the caller's LD_PRELOAD and
        # ASAN_OPTIONS kept, taken when the wrapper runs
        printf '#!/bin/bash\nexec %q -genv LD_PRELOAD "${LD_PRELOAD:+$LD_PRELOAD }"%q -genv ASAN_OPTIONS "${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"\n' \
            "$_real_mpiexec" "$_mpi_yield" >"$BATS_RUN_TMPDIR/mpibin/mpiexec.$$"
        chmod +x "$BATS_RUN_TMPDIR/mpibin/mpiexec.$$"
        mv "$BATS_RUN_TMPDIR/mpibin/mpiexec.$$" "$BATS_RUN_TMPDIR/mpibin/mpiexec"
    fi
    case ":$PATH:" in
    *":$BATS_RUN_TMPDIR/mpibin:"*) ;;
    *) PATH="$BATS_RUN_TMPDIR/mpibin:$PATH" ;;
    esac
fi

# zarr_grow_py FILE [chunk]: writes to FILE a script that, given a mount
# path, grows the 1-D u8 array g (4 long, chunks of 2) to 6 through
# g/zarr/g/.zarray as zarr-python does (a temporary renamed over it) and
# prints "grown" or "refused"; with "chunk" it first writes chunk 0 (7, 7)
# the same way.
zarr_grow_py() {
    {
        echo 'import json, os, sys'
        echo 'd = sys.argv[1] + "/g/zarr/g/"'
        if [ "${2:-}" = chunk ]; then
            echo 'with open(d + "0.tmp.partial", "wb") as f:'
            echo '    f.write(b"\x07\x07")'
            echo 'os.rename(d + "0.tmp.partial", d + "0")'
        fi
        cat <<'PY'
za = json.load(open(d + ".zarray"))
with open(d + ".zarray.tmp.partial", "w") as f:
    json.dump(dict(za, shape=[6]), f)
try:
    os.rename(d + ".zarray.tmp.partial", d + ".zarray")
    print("grown")
except PermissionError:
    os.unlink(d + ".zarray.tmp.partial")
    print("refused")
PY
    } >"$1"
}

# A fresh scratch directory per test (bats removes BATS_TEST_TMPDIR).
scratch() {
    echo "$BATS_TEST_TMPDIR"
}

# assert_file_size FILE BYTES
assert_file_size() {
    local got
    got=$(stat -c %s "$1") || return 1
    [ "$got" -eq "$2" ] || { echo "$1: size $got, expected $2" >&2; return 1; }
}

# random_bytes FILE N: N pseudo-random bytes (repeatable per name).
random_bytes() {
    head -c "$2" /dev/urandom >"$1"
}

# mount_store STORE MNT [drxfs options...]: start drxfs -f in the background,
# wait until MNT is a mount point (deadline 20 s) while checking the daemon
# lives.  The daemon's stderr goes to MNT.log, its pid to MNT.pid (so that
# teardown_file finds it whatever process runs it).
mount_store() {
    local store=$1 mnt=$2
    shift 2
    mkdir -p "$mnt"
    "$DRXFS" -f "$@" "$store" "$mnt" 3>&- 2>"$mnt.log" &
    DRXFS_PID=$!
    echo "$DRXFS_PID" >"$mnt.pid"
    local i
    for ((i = 0; i < 200; i++)); do
        if mountpoint -q "$mnt"; then
            return 0
        fi
        if ! kill -0 "$DRXFS_PID" 2>/dev/null; then
            echo "drxfs exited before mounting; its log:" >&2
            cat "$mnt.log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "drxfs did not mount $mnt within 20 s" >&2
    return 1
}

# mount_blind STORE MOUNTPOINT [drxfs options]: mount_store with
# bats-tests/nowatch.c preloaded: the daemon's inotify watches see nothing,
# so it stands in for a node of a network file system, which sees another
# node's changes only by what it checks itself (at open, stat, readdir).
# Skips the test when the shim was not built.
mount_blind() {
    local shim="$DRX_BUILD/bats-tests/libnowatch.so"
    [ -f "$shim" ] || skip "bats-tests/nowatch.c not built"
    LD_PRELOAD="$shim" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        mount_store "$@"
}

# wait_file FILE: waits up to 5 s for FILE to exist (a background
# helper's signal that it is ready); fails, saying so, when it does not.
wait_file() {
    local i
    for ((i = 0; i < 250; i++)); do
        [ -e "$1" ] && return 0
        sleep 0.02
    done
    echo "$1 did not appear within 5 s" >&2
    return 1
}

# nob CMD...: CMD as user nobody (uid and gid 65534, no groups), the other
# local user of the hostile suites.  In the background, nob's $! is a
# subshell's: start setpriv itself when the job must be killed by pid.
nob() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# logged_bounded PATTERN LOG: a flood's message is in LOG at least once
# and at most 10 times (a rate-limited call site's burst), and LOG stays
# short
logged_bounded() {
    local n
    n=$(grep -c "$1" "$2" || true)
    echo "refusals logged: $n"
    [ "$n" -ge 1 ] && [ "$n" -le 10 ]
    [ "$(wc -l <"$2")" -le 60 ]
}

# nob_opens PATH N: user nobody opens PATH and reads 10 bytes, N times,
# whatever each open answers (a flood of refusals for the log's limits)
nob_opens() {
    nob "$PY" - "$1" "$2" <<'PY'
import sys
for i in range(int(sys.argv[2])):
    try:
        with open(sys.argv[1], "rb") as f:
            f.read(10)
    except OSError:
        pass
PY
}

# subfiles_of STORE_PATH: the subfile paths of a striped file
subfiles_of() {
    "$DRX" stripe get "$1" | sed -n 's/^subfile [0-9]*: \([^ ]*\) .*/\1/p'
}

# fuse_abort MNT: aborts the FUSE connection of the mount at MNT, found
# in the mount table without touching the mount (a stat would wait for
# the daemon): every request in flight fails, so a daemon stuck in the
# kernel can exit.  A kill -9 can leave one so: a thread of it invalidating
# a page (a notify) waits in the kernel, unkillable, on the page lock that
# a write in flight holds while it waits for the daemon's reply, which no
# other thread is left to give.  What a user does then too.
fuse_abort() {
    local dev
    dev=$(awk -v m="$(realpath -m "$1")" '$5 == m { print $3 }' /proc/self/mountinfo | tail -1)
    [ -n "$dev" ] || return 0
    [ -e /sys/fs/fuse/connections/"${dev#*:}" ] ||
        mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null || true
    echo 1 >/sys/fs/fuse/connections/"${dev#*:}"/abort 2>/dev/null || true
}

# daemon_gone PID: no thread of PID is left (a zombie leader whose other
# threads still wait in the kernel is not gone).
daemon_gone() {
    [ ! -e "/proc/$1" ] ||
        { [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ] &&
              [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ]; }
}

# kill_daemon MNT: kill -9 of the daemon of MNT (its pid in MNT.pid), as a
# crash test wants, and waits until it is gone: aborting the connection
# when it has not exited within 5 s (fuse_abort).
kill_daemon() {
    local pid i
    pid=$(cat "$1.pid")
    kill -9 "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        daemon_gone "$pid" && return 0
        sleep 0.1
    done
    stuck_stacks "$pid"
    fuse_abort "$1"
}

# stuck_stacks PID: where the threads of a daemon that does not exit wait
# in the kernel, on stderr (shown when the test fails), and appended to
# $DRX_STUCK_LOG when set.
stuck_stacks() {
    local t out=""
    for t in /proc/"$1"/task/*; do
        out+="task ${t##*/} $(cat "$t/comm" 2>/dev/null) $(awk '{ print $3 }' "$t/stat" 2>/dev/null)"$'\n'
        out+="$(cat "$t/stack" 2>/dev/null)"$'\n'
    done
    echo "drxfs $1 did not exit after kill -9; its threads:" >&2
    echo "$out" >&2
    [ -z "${DRX_STUCK_LOG:-}" ] || echo "$out" >>"$DRX_STUCK_LOG"
}

# unmount_store MNT: unmount and make sure the daemon is gone (lazy unmount
# and kill as fallback).  Safe to call twice or when nothing is mounted.
unmount_store() {
    local mnt=$1 i
    # mountpoint(1) fails on the mount of a daemon that died (ENOTCONN):
    # ask the mount table as well
    if mountpoint -q "$mnt" 2>/dev/null ||
        { [ -n "$mnt" ] && awk -v m="$(realpath -m "$mnt")" '$5 == m { f = 1 } END { exit !f }' \
            /proc/self/mountinfo; }; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
    local pid
    pid=$(cat "$mnt.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
        for ((i = 0; i < 100; i++)); do
            daemon_gone "$pid" && break
            sleep 0.1
        done
        if ! daemon_gone "$pid"; then
            kill -9 "$pid" 2>/dev/null || true
            for ((i = 0; i < 20; i++)); do
                daemon_gone "$pid" && break
                sleep 0.1
            done
            # stuck in the kernel (see fuse_abort): wait would never return
            if ! daemon_gone "$pid"; then
                stuck_stacks "$pid"
                fuse_abort "$mnt"
                for ((i = 0; i < 50; i++)); do
                    daemon_gone "$pid" && break
                    sleep 0.1
                done
                # the aborted connection's mount is still there
                fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
            fi
        fi
        wait "$pid" 2>/dev/null || true
        rm -f "$mnt.pid"
    fi
}

# MPI processes of a suite run in its scratch directories; anything of
# ours still alive at the end is found by its working directory and killed
# by pid (never by name: other suites and users may run MPI too).
our_mpi() {
    local p cwd
    # the ranks too: killed with -9, hydra's proxy leaves its ranks
    # running (busy-waiting on a core) as orphans
    for p in $(pgrep -x 'drx-load|mp_test|mp_fortran|app|fapp|hydra_pmi_proxy|mpiexec|mpiexec.hydra' 2>/dev/null); do
        cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
        case "$cwd" in
        "$BATS_FILE_TMPDIR"* | "$BATS_RUN_TMPDIR"*) echo "$p" ;;
        esac
    done
}
# Kills them and waits (up to 10 s) until they are gone: their descriptors,
# and the store lock a copy holds, are released only then.
kill_our_mpi() {
    local p i
    for p in $(our_mpi); do
        kill -9 "$p" 2>/dev/null || true
    done
    for ((i = 0; i < 200; i++)); do
        [ -z "$(our_mpi)" ] && return 0
        sleep 0.05
    done
}

# hostile_setup NAME: a scratch directory RV under /tmp, where user nobody
# reaches it (mode 755), with RV/n writable by him (1777)
hostile_setup() {
    cd "$BATS_TEST_TMPDIR"
    RV=$(mktemp -d "/tmp/drxfs-$1.XXXXXX")
    chmod 755 "$RV"
    mkdir -m 1777 "$RV/n"
}

# hostile_teardown: what hostile_setup and user_dir_store made goes: the
# holder (stop_holder), the mount at $RV/m, the directory
hostile_teardown() {
    stop_holder
    [ -n "${RV:-}" ] || return 0
    unmount_store "$RV/m"
    rm -rf "$RV"
}

# user_dir_store: a store in $RV/s (hostile_setup) with a directory u of user nobody's,
# mounted at $RV/m for every user
user_dir_store() {
    "$DRX" init "$RV/s" >/dev/null
    mkdir "$RV/s/u"
    chown 65534:65534 "$RV/s/u"
    mount_store "$RV/s" "$RV/m" -o allow_other
}

# loop_fs DIR SIZE [MKFS_OPTION...]: a new ext4 file system of SIZE
# (truncate's units) in DIR.img, mounted on DIR (full-disk and read-only
# tests); skips the test without mkfs.ext4 or a free loop device.  The
# suite's teardown calls loop_fs_gone DIR.
loop_fs() {
    local dir=$1 size=$2
    shift 2
    command -v mkfs.ext4 >/dev/null && losetup -f >/dev/null 2>&1 ||
        skip "needs mkfs.ext4 and a loop device"
    truncate -s "$size" "$dir.img"
    mkfs.ext4 -q "$@" "$dir.img"
    mkdir "$dir"
    mount -o loop "$dir.img" "$dir"
}

# loop_fs_gone DIR: unmounts loop_fs's DIR when mounted (lazily when still
# busy: never left under an rm -rf)
loop_fs_gone() {
    if mountpoint -q "$1"; then
        umount "$1" || umount -l "$1"
    fi
}

# stop_holder: kills and reaps the background holder $APID, if any
stop_holder() {
    [ -n "${APID:-}" ] && kill "$APID" 2>/dev/null || true
    [ -n "${APID:-}" ] && wait "$APID" 2>/dev/null || true
}

# renamer DIR A B (hostile_setup): user nobody exchanges names A and B
# in DIR (renameat2 RENAME_EXCHANGE) without pause until DIR/stop exists
renamer() {
    cat >"$RV/renamer.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d, a, b = sys.argv[1:4]
a, b, stop = (d + "/" + a).encode(), (d + "/" + b).encode(), d + "/stop"
open(sys.argv[4], "w").close()
while not os.path.exists(stop):
    for _ in range(100):
        libc.renameat2(-100, a, -100, b, 2)
PY
    chmod 644 "$RV/renamer.py"
    setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        "$PY" "$RV/renamer.py" "$1" "$2" "$3" "$RV/n/renaming" &
    APID=$!
    for _ in $(seq 600); do [ -e "$RV/n/renaming" ] && break; sleep 0.1; done
    [ -e "$RV/n/renaming" ]
}

# The race loops of the hostile suites (reads_as_nobody and theirs) run a
# third of their rounds under the sanitizers: the first pass checks that
# no swap behind the mount wins; the second looks for memory errors on the
# same paths, where each round is slower.
DRX_RACE_DIV=1
[ -z "${DRX_TEST_SANITIZED:-}" ] || DRX_RACE_DIV=3
export DRX_RACE_DIV

# secret_and_mine: in $RV/s/u, root's 0600 file secret (SECRET) and user
# nobody's f (mine), the two names a race exchanges
secret_and_mine() {
    printf 'SECRET\n' >"$RV/s/u/secret"
    chmod 600 "$RV/s/u/secret"
    printf 'mine\n' >"$RV/s/u/f"
    chown 65534:65534 "$RV/s/u/f"
}

# writer_done: stops the background writer $APID (it ends when $RV/n/stop
# exists); the run before it succeeded and printed "refused []"
writer_done() {
    touch "$RV/n/stop"
    wait "$APID"
    APID=
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "refused []" ]
}

# race_done LINE: the end of a race against renamer (in $RV/s/u): stops
# it, then the probe run before it succeeded and printed LINE
race_done() {
    touch "$RV/s/u/stop"
    stop_holder
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx "$1" <<<"$output"
}

# calls_as_nobody ROUNDS PATH EXPR...: user nobody evaluates each python
# expression EXPR (p: PATH, i: the round; os imported) in ROUNDS rounds
# (DRX_RACE_DIV), its errors ignored: the calls of a race
calls_as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" - "$@" <<'PY'
import os, sys
n, p = int(sys.argv[1]), sys.argv[2]
exprs = [compile(e, "call", "eval") for e in sys.argv[3:]]
for i in range(n // int(os.environ.get("DRX_RACE_DIV", "1"))):
    for e in exprs:
        try:
            eval(e)
        except OSError:
            pass
PY
}

# reads_as_nobody DIR NAME...: user nobody reads DIR/NAME for each NAME,
# 3000 rounds (DRX_RACE_DIV), and prints how many reads held root's SECRET
# bytes
reads_as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" - "$@" <<'PY'
import os, sys
got = 0
for i in range(3000 // int(os.environ.get("DRX_RACE_DIV", "1"))):
    for f in sys.argv[2:]:
        try:
            with open(sys.argv[1] + "/" + f, "rb") as fp:
                got += b"SECRET" in fp.read()
        except OSError:
            pass
print("read root's bytes %d times" % got)
PY
}

# as_nobody_bg READY SCRIPT ARG...: user nobody runs python SCRIPT with
# ARG... READY in the background (setpriv itself, so that $APID is the
# process; the suites' teardown kills it); returns once the script has
# made file READY (60 s at most)
as_nobody_bg() {
    local ready=$1 script=$2
    shift 2
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c "$script" "$@" "$ready" &
    APID=$!
    for _ in $(seq 600); do [ -e "$ready" ] && break; sleep 0.1; done
    [ -e "$ready" ]
}

# fsck_after_crash STORE: after a kill -9 of the daemon, bytes past a
# recorded size (a crash before recording them) and temporaries of an
# interrupted update are all fsck may find; --repair then leaves it clean
fsck_after_crash() {
    run "$DRX" fsck "$1"
    if [ "$status" -ne 0 ]; then
        refute_output --regexp "$(printf '%s' 'missing|EIO|shorter|cannot|bad ')"
        "$DRX" fsck --repair "$1" >/dev/null || true
        run "$DRX" fsck "$1"
        assert_success
    fi
}

# commit_mount MNT: what a user does before reading a mounted store behind
# the mount (drx fsck, the metafiles): records every size waiting for the
# mount's batched commit (drxfs -o commit_interval, README "Striped files").
commit_mount() {
    setfattr -n user.drx.commit -v 1 "$1"
}
