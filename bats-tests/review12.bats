#!/usr/bin/env bats
# The twelfth hostile review.  Each test of a fix failed before it.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    local m
    for m in "$BATS_TEST_TMPDIR"/m "$BATS_TEST_TMPDIR"/m2; do
        unmount_store "$m"
    done
    kill_our_mpi
}

# until_lines N FILE PID: waits until FILE has N lines or process PID has
# ended (at most 10 s); true when the lines came
until_lines() {
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(wc -l <"$2" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.05
    done
    [ "$(wc -l <"$2" 2>/dev/null || echo 0)" -ge "$1" ]
}

# Found in the twelfth review: drx-load and DRX-MP checked NAME.xta
# (drx_array_open, without following a symlink) and then opened it again
# by its path (MPI_File_open, the chunk-lock descriptor, the reservation):
# a user owning the array's directory who swapped a symlink in between,
# and the real file back after, had root's import write into any file.
# The path's opens are made to wait here (strace), so the swap lands in
# the window every time.  Now every later open goes through the checked
# descriptor (/proc/self/fd/N).
@test "drx-load import: a symlink swapped in for the .xta after its check leads nowhere" {
    command -v strace >/dev/null || skip "no strace"
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type u8 --shape 4096 --chunk 1024
    head -c 4096 /dev/urandom >raw
    head -c 4096 /dev/zero | tr '\0' V >victim
    cp victim victim.ref
    # every open of the path after the first (the check) waits 1.5 s
    strace -f -qq -P "$PWD/st/a.xta" -e trace=openat -e inject=openat:delay_enter=1500000:when=2+ \
        -o trace timeout 60 mpiexec -n 1 "$DRX_LOAD" import st/a raw >import.out 2>&1 &
    local pid=$!
    until_lines 1 trace "$pid" || fail "the import never opened st/a.xta: $(cat import.out)"
    mv st/a.xta st/a.real
    ln -s "$PWD/victim" st/a.xta
    # a second open by the path went to the victim: the real file back
    until_lines 2 trace "$pid" || true
    rm st/a.xta
    mv st/a.real st/a.xta
    wait "$pid" || true
    cat trace import.out
    cmp victim victim.ref || fail "the import wrote into the file a symlink led to"
    [ "$(grep -c 'a.xta' trace)" -eq 1 ] || fail "st/a.xta was opened again by its path"
    cmp raw st/a.xta
}

@test "drx-load copy: a symlink swapped in for a subfile after its check leads nowhere" {
    command -v strace >/dev/null || skip "no strace"
    "$DRX" init st >/dev/null
    head -c 200000 /dev/urandom >src
    mpi_load() { timeout 60 mpiexec -n "$1" "$DRX_LOAD" "${@:2}"; }
    mpi_load 1 copy src st/f
    local sub pid
    sub=$("$DRX" stripe get st/f | sed -n 's/^subfile 0: \([^ ]*\) .*/\1/p')
    [ -f "$sub" ]
    head -c 200000 /dev/zero | tr '\0' S >secret
    # each access of the subfile's path (MPI-IO's statfs, then its open)
    # is traced; the opens wait 1.5 s
    strace -f -qq -P "$sub" -e trace=openat,statfs -e inject=openat:delay_enter=1500000 \
        -o trace timeout 60 mpiexec -n 1 "$DRX_LOAD" copy st/f out >copy.out 2>&1 &
    pid=$!
    if until_lines 1 trace "$pid"; then
        mv "$sub" "$sub.real"
        ln -s "$PWD/secret" "$sub"
        until_lines 2 trace "$pid" || true
        rm "$sub"
        mv "$sub.real" "$sub"
    fi
    wait "$pid" || true
    cat trace copy.out
    ! grep -q SSSS out || fail "the copy read the file a symlink led to"
    cmp src out
    [ "$(grep -c 'openat' trace)" -eq 0 ] || fail "the subfile was opened by its path"
}
