# shellcheck shell=bash
# shellcheck disable=SC2154 # drxfs and runs are the sourcing script's
# Helpers the benchmark scripts share; sourced, never run:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../bench_lib.sh"
#
# bench_workdir PREFIX       sets $work, a new directory in
#                            ${DRX_BENCH_DIR:-/tmp}; at exit every mount
#                            bench_mount made is unmounted, its daemon
#                            stopped, and $work removed
# bench_mount STORE MNT [OPTION...]
#                            drxfs -f on MNT in the background (fd 3
#                            closed, log in $work/drxfs-N.log), waited for
#                            with a deadline; exits with the log when the
#                            daemon dies first.  Needs $drxfs.
# bench_passthrough DIR MNT  the same for the bare passthrough FUSE
#                            program (bench_passthrough.c) serving DIR,
#                            the floor of what FUSE allows.  Needs $build.
# secs CMD...                median wall time of $runs runs, after one
#                            warm-up run, each after a sync
# once CMD...                wall time of one run, no warm-up
# rate BYTES SECS            "  1234 MB/s"
# ratio A B                  A / B, two decimals
# cube_side MIB              side of a cubic f64 array of about MIB MiB, in
#                            whole 64-element chunks, at least 128

bench_mnts=()
bench_pids=()

bench_cleanup() {
    local m p
    for m in "${bench_mnts[@]}"; do
        if mountpoint -q "$m" 2>/dev/null; then
            fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
        fi
    done
    for p in "${bench_pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    [ -z "${work:-}" ] || rm -rf "$work"
}

bench_workdir() {
    work=$(mktemp -d "${DRX_BENCH_DIR:-/tmp}/$1.XXXXXX")
    trap bench_cleanup EXIT
}

bench_mount() {
    local store=$1 mnt=$2
    shift 2
    bench_serve "$mnt" "$drxfs" -f "$@" "$store" "$mnt"
}

bench_passthrough() {
    bench_serve "$2" "$build/fs/bench_passthrough" "$1" "$2" -f
}

# bench_serve MNT CMD...: CMD (a FUSE daemon in the foreground) serving
# MNT, as bench_mount says
bench_serve() {
    local mnt=$1 log pid
    shift
    log="$work/drxfs-${#bench_pids[@]}.log"
    "$@" 3>&- 2>"$log" &
    pid=$!
    bench_pids+=("$pid")
    bench_mnts+=("$mnt")
    for _ in $(seq 400); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.05
    done
    echo "drxfs did not mount $mnt" >&2
    exit 1
}

secs() {
    local t=() i s e
    "$@" >/dev/null
    for ((i = 0; i < runs; i++)); do
        # dirty pages of the run before would throttle this one's writes
        sync
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        t+=("$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f", e - s }')")
    done
    printf '%s\n' "${t[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

once() {
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f", e - s }'
}

rate() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%8.0f MB/s", b / t / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

cube_side() {
    awk -v m="$1" 'BEGIN { s = (m * 1048576 / 8) ^ (1 / 3); n = int(s / 64 + 0.5) * 64;
                           if (n < 128) n = 128; print n }'
}
