#!/usr/bin/env bats
# drx-load under a real mpiexec: import/export against `drx put`/`drx get`
# byte for byte for several rank counts, shapes, chunkings, extensions and
# views; copy between plain and striped files; prefetch into the page cache;
# failures that change nothing and are reported once.

load test_helper

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    unmount_store "$BATS_TEST_TMPDIR/mnt"
    umount "$BATS_TEST_TMPDIR/small" 2>/dev/null || umount -l "$BATS_TEST_TMPDIR/small" 2>/dev/null || true
    kill_our_mpi
}

teardown_file() {
    kill_our_mpi
}

# mpi_load P ARGS...: drx-load on P ranks (oversubscribed on this box).
mpi_load() {
    local p=$1
    shift
    timeout 120 mpiexec -n "$p" "$DRX_LOAD" "$@"
}

view_bytes() {
    local a=$1
    shift
    "$DRX" get "$a" "$@" | wc -c
}

# same_as_drx TYPE SHAPE CHUNK "DIM:COUNT..." "P..." [drx-load options --] VIEW...
# Two identical arrays (same extensions, random contents, fill 7); the view
# is written into one with `drx put` and into the other with drx-load
# import, for each P: the .xta files must be identical.  Then export must
# give the bytes of `drx get`.
same_as_drx() {
    local type=$1 shape=$2 chunk=$3 ext=$4 ps=$5 e p
    shift 5
    local opts=()
    if [ "${1:-}" = "--opts" ]; then
        read -r -a opts <<<"$2"
        shift 2
    fi
    rm -f ref.* cand.* base raw want got
    "$DRX" create ref --type "$type" --shape "$shape" --chunk "$chunk" --fill 7
    for e in $ext; do "$DRX" extend ref "${e%:*}" "${e#*:}"; done
    random_bytes base "$(view_bytes ref)"
    "$DRX" put ref <base
    random_bytes raw "$(view_bytes ref "$@")"
    cp ref.xta base.xta
    cp ref.xmd cand.xmd
    "$DRX" put ref "$@" <raw
    "$DRX" get ref "$@" >want
    for p in $ps; do
        cp base.xta cand.xta
        run mpi_load "$p" "${opts[@]}" import cand raw "$@"
        assert_success
        assert_output ""
        cmp ref.xta cand.xta || fail "import P=$p $type $shape/$chunk [$ext] $* differs from drx put"
        rm -f got
        run mpi_load "$p" "${opts[@]}" export cand got "$@"
        assert_success
        cmp want got || fail "export P=$p $type $shape/$chunk [$ext] $* differs from drx get"
    done
}

# Each rank count meets the first array and at least three others (an
# mpiexec of 3 or more ranks on this 2-core machine costs 0.3-0.7 s before
# any work, so each further array runs two or three counts, not all).
@test "import and export equal drx put and drx get for P = 1, 2, 3, 5" {
    same_as_drx f64 10x7x5 3x4x2 "" "1 2 3 5"
    same_as_drx i32 13x11 4x4 "0:5 1:3" "2 3" dim0=1:17:3 order=F
    same_as_drx c64 9x8 2x3 "0:3 1:5 0:2" "1 5" dim1=2::3 rep=external32
    same_as_drx i16 5x6x7x3 2x3x4x2 "2:3 0:1 3:2" "2 3 5" dim3=1 dim1=::2 order=F rep=external32
    same_as_drx u8 100 7 "0:50" "1 2" dim0=-30:
    # steps past the chunk (chunks of the view's box that hold none of it)
    # over an array grown along every dimension, in turns
    same_as_drx f32 11x9x6 2x2x3 "1:5 2:4 0:6 1:3 2:2" "1 3 5" dim0=1::5 dim1=::3 dim2=2::4 order=F
    same_as_drx i64 7x20 3x2 "1:7 0:8 1:3" "1 3 5" dim0=13 dim1=1::5
}

@test "import and export in many small rounds (one chunk per round)" {
    same_as_drx f32 20x9 3x4 "1:6" "2 3" --opts "--buffer 1" dim0=2:19:2 order=F
    same_as_drx c128 6x6 4x1 "" "1 3" --opts "--buffer 100" dim1=::5 rep=external32
}

@test "more ranks than chunks: idle ranks take part, result unchanged" {
    # 2x2 chunks of 2x2: the view holds 2 chunks, 5 ranks
    same_as_drx i64 4x4 2x2 "" "5" dim0=0:2
    same_as_drx u16 3x3 3x3 "" "1 5" order=F
}

@test "offsets past 2 GiB and 4 GiB: 64-bit displacements in the file types" {
    # a sparse 6 GiB array of 1 Mi-element chunks; views at its far end
    # (both views lie in the last 8 MiB of the 6 GiB .xta)
    random_bytes tail 2000
    random_bytes mid 2000
    for x in a b; do
        "$DRX" create $x --type u16 --shape 3221225472 --chunk 1048576
        "$DRX" put $x dim0=-1000: <tail
    done
    "$DRX" put a dim0=3220000000:3220001000 <mid
    run mpi_load 3 import b mid dim0=3220000000:3220001000
    assert_success
    assert_equal "$(stat -c %s b.xta)" "$(stat -c %s a.xta)"
    cmp <(tail -c 8M a.xta) <(tail -c 8M b.xta)
    run mpi_load 2 export b out dim0=-1000:
    assert_success
    cmp tail out
}

# checksums of an array's files, to prove a failure changed nothing
sums() {
    md5sum "$1.xmd" "$1.xta"
}

@test "import of a raw file of the wrong size fails once and changes nothing" {
    "$DRX" create a --type f64 --shape 10x7 --chunk 3x4
    random_bytes raw 560
    "$DRX" put a <raw
    sums a >before
    head -c 559 raw >short
    run mpi_load 3 import a short
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "559 bytes, but the view holds 560"
    cat raw raw >long
    run mpi_load 3 import a long dim0=0:5
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "1120 bytes, but the view holds 280"
    # a slice past the end is cut there (an append needs an extend first):
    # the message says so (found in the twelfth session)
    head -c 112 raw >tworows
    run mpi_load 2 import a tworows dim0=10:12
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "tworows: 112 bytes, but the view holds 0; dim0=10:12 reaches past the end of dimension 0 (10 long), and a slice is cut at the end: grow it first (drx extend $PWD/a 0 2)"
    md5sum -c --quiet before
}

@test "import refuses an array whose .xta has a second name (a rename cut short)" {
    "$DRX" create a --type f64 --shape 10x7 --chunk 3x4
    random_bytes raw 560
    "$DRX" put a <raw
    ln a.xta b.xta
    random_bytes other 560
    run mpi_load 2 import a other
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "a.xta has 2 names"
    assert_output --partial "drx fsck --repair"
    cmp raw <("$DRX" get a)
}

@test "unreadable input, missing array and bad views fail once and change nothing" {
    "$DRX" create a --type i32 --shape 8x8 --chunk 3x3
    random_bytes raw 256
    "$DRX" put a <raw
    sums a >before
    mkdir adir
    run mpi_load 3 import a adir
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "adir: is a directory"
    run mpi_load 3 import a nonexistent
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "nonexistent: No such file or directory"
    # a FIFO would block a collective open: refused up front
    mkfifo fifo
    run mpi_load 2 import a fifo
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "not a regular file"
    run mpi_load 3 import missing raw
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "missing: no such array"
    run mpi_load 3 import a raw dim7=1
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "no dimension 7"
    run mpi_load 2 export missing out
    assert_failure
    assert_equal "${#lines[@]}" 1
    run mpi_load 2 export a /nonexistent-dir/out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "No such file or directory"
    md5sum -c --quiet before
}

@test "import on a full disk fails once before its first byte and changes nothing" {
    # a sparse 2 MiB array (fill 0) in a 1 MiB tmpfs; the raw file is elsewhere
    mkdir small
    mount -t tmpfs -o size=1m tmpfs small
    "$DRX" create small/a --type f64 --shape 512x512 --chunk 64x64
    random_bytes row 262144
    "$DRX" put small/a dim0=0:64 <row
    sums small/a >before
    used=$(df --output=used small | tail -1)
    random_bytes all 2097152
    for p in 1 2 3; do
        run mpi_load "$p" import small/a all
        assert_failure
        assert_equal "${#lines[@]}" 1
        assert_output --partial "reserving space for the view's chunks: No space left on device; nothing written"
        md5sum -c --quiet before
        # every rank gave back what it had reserved
        assert_equal "$(df --output=used small | tail -1)" "$used"
    done
    # what fits still goes in
    run mpi_load 2 import small/a row dim0=64:128
    assert_success
    "$DRX" get small/a dim0=64:128 | cmp - row
    "$DRX" get small/a dim0=0:64 | cmp - row
}

@test "import under ulimit -f fails with one line instead of dying of SIGXFSZ" {
    # (MPI_Init itself needs more than 1 MiB: UCX's shared memory file)
    "$DRX" create a --type u8 --shape 4096x4096 --chunk 256x256
    random_bytes r 16777216
    run bash -c "ulimit -f 8192 && timeout 120 mpiexec -n 2 '$DRX_LOAD' import a r"
    assert_failure 1
    refute_output --partial "signal"
    # the cause alone, not behind MPI's class ("Other I/O error File too large")
    assert_output "drx-load: import: writing chunks: File too large"
}

@test "usage errors: unknown command, missing arguments, bad options, bad config" {
    run mpi_load 2 frob
    assert_failure 2
    assert_equal "${#lines[@]}" 1
    run mpi_load 2 import a
    assert_failure 2
    assert_equal "${#lines[@]}" 1
    run mpi_load 2 --buffer 0 export a out
    assert_failure 2
    assert_equal "${#lines[@]}" 1
    run mpi_load 2 --hint nonsense export a out
    assert_failure 2
    assert_equal "${#lines[@]}" 1
    printf 'log = { level = "loud"; };\n' >bad.conf
    run mpi_load 2 --config bad.conf export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "bad.conf:1"
    printf 'romio_cb_write\n' >hints
    ROMIO_HINTS=$PWD/hints run mpi_load 2 export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "hints:1"
}

# Found in daily use: options after the command were taken for view words
# ("'--buffer' is not a KEY=VALUE view word"), where drx takes them anywhere.
@test "options after the command and its arguments work as before it; -- ends them" {
    "$DRX" create a --type f64 --shape 20x12 --chunk 4x5
    random_bytes raw $((20 * 12 * 8))
    run mpi_load 2 import a raw --buffer 1K --hint romio_cb_write=enable
    assert_success
    assert_output ""
    cmp raw <("$DRX" get a)
    run mpi_load 2 export a got dim1=2:5 --verbose
    assert_success
    assert_output --partial "round buffer"
    cmp got <("$DRX" get a dim1=2:5)
    # a raw file named like an option, after --
    random_bytes ./--buffer $((20 * 12 * 8))
    run mpi_load 2 import a -- --buffer
    assert_success
    cmp ./--buffer <("$DRX" get a)
    run mpi_load 2 import a raw --buffer
    assert_failure 2
    assert_output "drx-load: option '--buffer' needs a value (see --help)"
    run mpi_load 2 import a raw --frob
    assert_failure 2
    assert_output "drx-load: unknown option '--frob' (see --help)"
}

@test "hints from --hint and ROMIO_HINTS keep the result identical" {
    printf 'romio_cb_write enable\nromio_ds_write enable\n# comment\n' >hints
    export ROMIO_HINTS=$PWD/hints
    same_as_drx f64 12x10 5x3 "1:4" "2 3" dim1=1::2
    unset ROMIO_HINTS
    same_as_drx f64 12x10 5x3 "" "2" --opts "--hint romio_cb_read=enable --hint cb_nodes=1" order=F
}

# hint_of KEY FILE: the value that drx-load --verbose reported MPI-IO holds
# for KEY when it opened FILE (searched in `run`'s output).
hint_of() {
    local line
    line=$(grep -E "^drx-load: debug: hints of [^ ]*/$2:" <<<"$output" | head -1)
    [ -n "$line" ] || return 1
    sed -nE "s/.* $1=([^ ]*).*/\1/p" <<<"$line"
}

@test "mpiio hints and buffer from --config reach MPI-IO; config < ROMIO_HINTS < --hint" {
    "$DRX" create a --type f64 --shape 512x512 --chunk 64x64
    random_bytes raw $((512 * 512 * 8))
    "$DRX" put a <raw
    cat >mpiio.conf <<'CONF'
mpiio = {
  buffer = 1048576;   # 32 chunks of 32 KiB
  hints = {
    romio_cb_read = "enable";
    cb_buffer_size = 8388608;
    romio_ds_write = "enable";
  };
};
CONF
    run mpi_load 2 --config mpiio.conf --verbose export a out
    assert_success
    cmp raw out
    assert_output --partial "round buffer: 1048576 bytes per rank (mpiio.buffer)"
    # 64 chunks, 32 per rank, 32 per round: one round
    assert_output --partial "64 chunks of 32768 bytes: 1 rounds of at most 32 per rank"
    assert_equal "$(hint_of romio_cb_read a.xta)" enable
    assert_equal "$(hint_of cb_buffer_size a.xta)" 8388608
    assert_equal "$(hint_of romio_ds_write out)" enable
    # built-in defaults the file does not name stay
    assert_equal "$(hint_of romio_cb_write out)" disable
    assert_equal "$(hint_of romio_ds_read a.xta)" disable
    # without --config: the built-in ones
    run mpi_load 1 --verbose export a out
    assert_success
    assert_output --partial "round buffer: 67108864 bytes per rank (mpiio.buffer)"
    assert_equal "$(hint_of romio_cb_read a.xta)" disable
    assert_equal "$(hint_of romio_ds_write out)" disable
    # the shipped conf/drxfs.conf spells out exactly the built-in ones
    local builtin
    builtin=$(grep "hints of" <<<"$output")
    run mpi_load 1 --config "$DRX_SOURCE/conf/drxfs.conf" --verbose export a out
    assert_success
    assert_output --partial "round buffer: 67108864 bytes per rank (mpiio.buffer)"
    assert_equal "$(grep "hints of" <<<"$output")" "$builtin"
    # P = 1: two rounds of the config's buffer; --buffer beats it
    run mpi_load 1 --config mpiio.conf --verbose import a raw
    assert_success
    assert_output --partial "64 chunks of 32768 bytes: 2 rounds of at most 32 per rank"
    run mpi_load 1 --config mpiio.conf --buffer 4M --verbose import a raw
    assert_success
    assert_output --partial "round buffer: 4194304 bytes per rank (--buffer)"
    assert_output --partial "64 chunks of 32768 bytes: 1 rounds of at most 128 per rank"
    # ROMIO_HINTS beats the config; --hint beats both
    printf 'cb_buffer_size 4194304\nromio_ds_write disable\n' >hints
    ROMIO_HINTS=$PWD/hints run mpi_load 2 --config mpiio.conf --verbose export a out
    assert_success
    assert_equal "$(hint_of cb_buffer_size a.xta)" 4194304
    assert_equal "$(hint_of romio_ds_write out)" disable
    assert_equal "$(hint_of romio_cb_read a.xta)" enable
    ROMIO_HINTS=$PWD/hints run mpi_load 2 --config mpiio.conf --verbose \
        --hint cb_buffer_size=2097152 --hint romio_cb_read=automatic export a out
    assert_success
    assert_equal "$(hint_of cb_buffer_size a.xta)" 2097152
    assert_equal "$(hint_of romio_cb_read out)" automatic
    assert_equal "$(hint_of romio_ds_write out)" disable
    cmp raw out
    # without --verbose: silent
    run mpi_load 2 --config mpiio.conf export a out
    assert_success
    assert_output ""
}

@test "hints from --config (collective buffering and sieving on) keep the result identical" {
    cat >cb.conf <<'CONF'
mpiio = {
  buffer = 1048576;
  hints = {
    romio_cb_write = "enable"; romio_cb_read = "enable";
    romio_ds_write = "enable"; romio_ds_read = "enable";
    cb_buffer_size = 65536; cb_nodes = 2;
  };
};
CONF
    same_as_drx f64 12x10 5x3 "1:4" "1 2 3" --opts "--config cb.conf" dim1=1::2
    # 182 chunks of 10000 bytes: two rounds of the config's 1 MiB at P = 1
    same_as_drx f32 600x700 50x50 "0:40" "1 3" --opts "--config cb.conf" dim0=3:: order=F
}

@test "a bad mpiio section in --config fails once with FILE:LINE" {
    "$DRX" create a --type u8 --shape 10 --chunk 4
    printf 'mpiio = {\n  buffer = 1048576;\n  colour = 1;\n};\n' >bad1.conf
    run mpi_load 2 --config bad1.conf export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "bad1.conf:3: unknown key mpiio.colour (known: buffer, hints)"
    printf 'mpiio = {\n  hints = {\n    romio-cb-write = "enable";\n  };\n};\n' >bad2.conf
    run mpi_load 2 --config bad2.conf export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "bad2.conf:3: mpiio.hints.romio-cb-write: hint name may hold only"
    printf 'mpiio = {\n  buffer = 4096;\n};\n' >bad3.conf
    run mpi_load 2 --config bad3.conf export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "bad3.conf:2: mpiio.buffer: 4096 is below the minimum"
    printf 'mpiio = { hints = {\n  cb_nodes = 1.5;\n}; };\n' >bad4.conf
    run mpi_load 2 --config bad4.conf export a out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "bad4.conf:2: mpiio.hints.cb_nodes: wrong type"
    assert_file_not_exists out
}

@test "progress shows on a terminal, never otherwise" {
    "$DRX" create a --type f64 --shape 64x64 --chunk 16x16
    random_bytes raw 32768
    run mpi_load 2 import a raw
    assert_success
    assert_output ""
    run script -qec "timeout 60 mpiexec -n 2 '$DRX_LOAD' import a raw" /dev/null
    assert_success
    assert_output --partial "import: "
    assert_output --partial "MB/s"
    run mpi_load 2 --progress export a out
    assert_success
    assert_output --partial "export: "
    run script -qec "timeout 60 mpiexec -n 2 '$DRX_LOAD' --no-progress import a raw" /dev/null
    assert_success
    assert_output ""
}

# striped file helpers ---------------------------------------------------------

# reassemble STORE NAME OUT: the logical bytes of striped file NAME from its
# metafile and subfiles by SPEC section 5's formula (independent of libcore).
reassemble() {
    "$PY" - "$1" "$2" "$3" <<'EOF'
import re, sys, os
store, name, out = sys.argv[1:]
meta = open(os.path.join(store, name + ".nafs")).read()
ext = int(re.search(r"extent\s*=\s*(\d+)", meta).group(1))
cnt = int(re.search(r"count\s*=\s*(\d+)", meta).group(1))
size = int(re.search(r"size\s*=\s*(\d+)", meta).group(1))
conf = open(os.path.join(store, ".drx/store.conf")).read()
dirs = re.findall(r'"([^"]+)"', re.search(r"dirs\s*=\s*\[([^]]*)\]", conf).group(1))
subs = re.findall(r'dir\s*=\s*(\d+);\s*name\s*=\s*"([^"]+)"', meta)
data = [open(os.path.join(store, dirs[int(d)], n), "rb").read() for d, n in subs]
res = bytearray()
e = 0
while len(res) < size:
    s = data[e % cnt]
    off = (e // cnt) * ext
    piece = s[off:off + ext].ljust(min(ext, size - len(res)), b"\0")
    res += piece[:min(ext, size - len(res))]
    e += 1
open(out, "wb").write(res)
print(ext, cnt)
EOF
}

@test "copy between plain and striped files for P = 1, 2, 3, 5" {
    "$DRX" init st --count 2 --extent 4096
    random_bytes src 1000003
    for p in 1 2 3 5; do
        run mpi_load "$p" copy src "st/f$p"
        assert_success
        assert_file_exists "st/f$p.nafs"
        # the store's layout, and the bytes where SPEC section 5 puts them
        run reassemble st "f$p" "re$p"
        assert_success
        assert_output "4096 2"
        cmp src "re$p"
        run mpi_load "$p" copy "st/f$p" "back$p"
        assert_success
        cmp src "back$p"
        run mpi_load "$p" copy "st/f$p" "st/g$p"
        assert_success
        run mpi_load "$p" copy "st/g$p" "again$p"
        assert_success
        cmp src "again$p"
    done
}

@test "copy from a small striped file made through the mount: its second subfile never created" {
    "$DRX" init st --count 2 --extent 4096
    random_bytes small 3000
    mount_store st mnt
    cp small mnt/small
    unmount_store mnt
    # a subfile is created when the first byte reaches it
    [ "$(find st/.drx/stripes -type f | wc -l)" -eq 1 ]
    for p in 1 3; do
        run mpi_load "$p" copy st/small "out$p"
        assert_success
        cmp small "out$p"
    done
}

@test "copy: layout from the directory's xattr or --config, overwrite, empty file, directory target" {
    "$DRX" init st --count 2 --extent 4096
    mkdir st/sub
    "$DRX" stripe set st/sub --count 1 --extent 8192
    random_bytes src 100000
    run mpi_load 3 copy src st/sub/
    assert_success
    run reassemble st sub/src re
    assert_success
    assert_output "8192 1"
    cmp src re
    # overwriting a longer striped file leaves exactly the new bytes
    random_bytes small 5000
    run mpi_load 2 copy small st/sub/src
    assert_success
    run reassemble st sub/src re2
    cmp small re2
    # --config overrides the store's default layout for new files
    printf 'stripe = { count = 1; extent = 16384; };\n' >layout.conf
    run mpi_load 2 --config layout.conf copy src st/c
    assert_success
    run reassemble st c re3
    assert_output "16384 1"
    cmp src re3
    : >empty
    run mpi_load 3 copy empty st/e
    assert_success
    run mpi_load 3 copy st/e e.out
    assert_success
    assert_file_exists e.out
    assert_file_size_equals e.out 0
}

# temp_bytes STORE TMP: bytes in the subfiles the metafile TMP names.
temp_bytes() {
    local id
    id=$(grep -o 'name = "[0-9a-f]*\.' "$2" | head -1 | sed 's/name = "//; s/\.$//')
    [ -n "$id" ] || { echo 0; return; }
    stat -c %s "$1"/.drx/stripes/*/"$id".* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# copy_killed DST: drx-load copy of a 1 GiB sparse file to DST in store st
# in rounds of 4 KiB (seconds of work), killed with SIGKILL, every process
# of it, once the hidden temporary file it fills holds data.
copy_killed() {
    local dst=$1 tmp= i pid
    [ -f sparse ] || truncate -s 1G sparse
    mpi_load 2 --buffer 4K copy sparse "st/$dst" 3>&- &
    pid=$!
    for ((i = 0; i < 1000; i++)); do
        tmp=$(find st -maxdepth 1 -name ".$dst.nafs.??????" | head -1)
        if [ -n "$tmp" ] && [ "$(temp_bytes st "$tmp")" -gt 0 ]; then
            break
        fi
        tmp=
        sleep 0.01
    done
    if [ -z "$tmp" ] || ! kill -0 "$pid" 2>/dev/null; then
        kill_our_mpi
        wait "$pid" || true
        echo "the copy to $dst ended (or never wrote) before it could be killed" >&2
        return 1
    fi
    kill_our_mpi
    wait "$pid" || true
    assert_file_exists "$tmp"
}

@test "copy killed mid-way: the destination is old or absent, fsck finds the temporary file" {
    "$DRX" init st --count 2 --extent 4096
    random_bytes old 100000
    run mpi_load 2 copy old st/f
    assert_success
    copy_killed f
    copy_killed g
    # the existing destination keeps exactly its old bytes, the new one
    # does not exist
    run "$DRX" stripe get st/f
    assert_line "size=100000"
    run reassemble st f re
    assert_success
    cmp old re
    assert_file_not_exists st/g.nafs
    # fsck names the leftovers and --repair removes them
    run "$DRX" fsck st
    assert_failure
    assert_output --regexp "\.f\.nafs\.[A-Za-z0-9]{6}: leftover temporary file"
    assert_output --regexp "\.g\.nafs\.[A-Za-z0-9]{6}: leftover temporary file"
    assert_output --partial "orphan subfile"
    run "$DRX" fsck st --repair
    assert_success
    run "$DRX" fsck st
    assert_success
    assert_output --partial "clean"
    run reassemble st f re
    cmp old re
    # a copy that completes replaces it whole; nothing is left behind
    random_bytes new 300000
    run mpi_load 3 copy new st/f
    assert_success
    run reassemble st f re
    cmp new re
    run "$DRX" fsck st
    assert_success
    assert_output --partial "clean"
    [ -z "$(find st -maxdepth 1 -name '.f.nafs.*')" ]
}

@test "fsck --repair keeps off a store while a copy into it runs" {
    "$DRX" init st --count 2 --extent 4096
    truncate -s 1G sparse
    mpi_load 2 --buffer 4K copy sparse st/f 3>&- &
    local pid=$! i tmp=
    for ((i = 0; i < 1000; i++)); do
        tmp=$(find st -maxdepth 1 -name ".f.nafs.??????" | head -1)
        [ -n "$tmp" ] && [ "$(temp_bytes st "$tmp")" -gt 0 ] && break
        tmp=
        sleep 0.01
    done
    [ -n "$tmp" ] || fail "the copy never wrote its temporary file"
    run "$DRX" fsck st --repair
    local out=$output
    kill -0 "$pid" 2>/dev/null || fail "the copy ended before fsck ran"
    # its temporary file and subfiles are still there
    assert_file_exists "$tmp"
    kill_our_mpi
    wait "$pid" || true
    [[ $out == *"is in use (a drxfs mount or a drx-load copy holds .drx/): --repair needs an idle store"* ]] ||
        fail "fsck --repair ran during the copy: $out"
    # the copy is gone, and its lock with it
    run "$DRX" fsck st --repair
    assert_success
    run "$DRX" fsck st
    assert_output --partial "clean"
}

@test "copy failures: missing source, array source or destination" {
    "$DRX" init st
    "$DRX" create st/arr --type u8 --shape 10 --chunk 4
    run mpi_load 2 copy nosuch st/x
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "nosuch"
    run mpi_load 2 copy st/arr out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "is an array"
    random_bytes src 10
    run mpi_load 2 copy src st/arr
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "is an array"
    assert_file_not_exists st/x.nafs
    # a striped file onto itself, named once through a mount: refused,
    # unchanged; a plain file onto itself (or its hard link) keeps its bytes
    random_bytes big 300000
    mpi_load 2 copy big st/sf
    mount_store st mnt
    run mpi_load 2 copy mnt/sf st/sf
    assert_failure
    assert_output "drx-load: copy: mnt/sf and st/sf are the same file"
    cmp big mnt/sf
    unmount_store mnt
    cp big plain
    ln plain plain2
    mpi_load 2 copy plain plain
    mpi_load 2 copy plain plain2
    cmp big plain
}

@test "a destination or raw file named NAME/ must be a directory: export, copy and import refuse a file NAME" {
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type u8 --shape 5x3 --chunk 2x2
    random_bytes r 15
    mkdir d
    # it was: the slash dropped, export wrote a file out, copy a striped
    # file st/sub, import read r (cp says "Not a directory")
    run mpi_load 2 export st/a out/
    assert_failure
    assert_output "drx-load: export: out/: no such directory"
    run mpi_load 2 copy r st/sub/
    assert_failure
    assert_output "drx-load: copy: st/sub/: no such directory"
    run mpi_load 2 import st/a r/
    assert_failure
    assert_output "drx-load: import: r/: not a directory"
    [ ! -e out ] && [ ! -e st/sub.nafs ] && [ ! -e st/sub ]
    # a directory takes the copy under the source's name, as before
    mpi_load 2 copy r d/
    cmp r d/r
    mpi_load 2 copy r st/
    mpi_load 1 copy st/r back
    cmp r back
    # a striped file or an array of that name is no directory either (the
    # review of 2026-12-07: "no such directory")
    run mpi_load 1 export st/a st/r/
    assert_failure
    assert_output "drx-load: export: st/r/: not a directory"
    run mpi_load 1 copy r st/a/
    assert_failure
    assert_output "drx-load: copy: st/a/: not a directory"
}

@test "copy into a store's root named ROOT/ reads nothing past the path (valgrind)" {
    command -v valgrind >/dev/null || skip "no valgrind"
    [ -z "${DRX_TEST_SANITIZED:-}" ] || skip "valgrind and ASan do not mix"
    "$DRX" init st >/dev/null
    random_bytes r 1000
    # the search for an array the path lies inside started one past the
    # end of a path that is the store's root: strchr through whatever the
    # stack held
    run timeout 120 mpiexec -n 1 valgrind -q --error-exitcode=9 "$DRX_LOAD" copy r st/
    refute_output --partial "inside_array"
    assert_success
    mpi_load 1 copy st/r back
    cmp r back
}

@test "copy and import refuse a subfile or .xta that is a hard link" {
    "$DRX" init st >/dev/null
    random_bytes src 200000
    mpi_load 2 copy src st/f
    local sub
    sub=$("$DRX" stripe get st/f | sed -n 's/^subfile 1: \([^ ]*\) .*/\1/p')
    rm "$sub"
    head -c 70000 /dev/zero | tr '\0' S >linked
    ln linked "$sub"
    run mpi_load 2 copy st/f out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "has other hard links"
    "$DRX" create st/arr --type u8 --shape 64 --chunk 16
    random_bytes raw 64
    head -c 64 /dev/zero | tr '\0' S >linked2
    rm st/arr.xta
    ln linked2 st/arr.xta
    run mpi_load 2 import st/arr raw
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "arr.xta has 2 names"
    cmp linked2 <(head -c 64 /dev/zero | tr '\0' S)
}

@test "paths under a drxfs mount work on the store; the mount shows the result at once" {
    "$DRX" init st
    mount_store st mnt
    random_bytes src 300000
    run mpi_load 2 copy src mnt/f
    assert_success
    assert_file_exists st/f.nafs
    cmp src mnt/f
    "$DRX" create st/arr --type f64 --shape 100x100 --chunk 30x30
    random_bytes raw1 80000
    random_bytes raw2 80000
    run mpi_load 3 import mnt/arr raw1
    assert_success
    cmp raw1 mnt/arr/data
    run mpi_load 3 import mnt/arr raw2
    assert_success
    cmp raw2 mnt/arr/data
    run mpi_load 2 export mnt/arr out dim1=::3
    assert_success
    cmp out mnt/arr/dim1=::3/data
    # ARRAY/WORD/... paths as at the mount and for drx get, words given
    # apart applying after the path's
    run mpi_load 2 export mnt/arr/dim0=10:40/data out2 dim1=::3
    assert_success
    cmp out2 mnt/arr/dim0=10:40/dim1=::3/data
    head -c 800 raw1 >raw3
    run mpi_load 2 import st/arr/dim0=-1 raw3
    assert_success
    cmp raw3 mnt/arr/dim0=-1/data
    run mpi_load 2 prefetch mnt/arr/dim0=0:5
    assert_success
    # a formatted file or a bad word in the path: one line, nothing done
    run mpi_load 2 export mnt/arr/dim0=1/data.npy out3
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "moves the view's raw bytes (its data), not data.npy"
    assert_file_not_exists out3
    run mpi_load 2 import mnt/arr/dim0=999 raw3
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "dim0=999: index 999 outside 0..99"
    cmp raw3 mnt/arr/dim0=-1/data
    unmount_store mnt
}

@test "drx-load and libdrxmp ask a drxfs mount to commit once per communicator (rank 0), and read the sizes it shows" {
    command -v strace >/dev/null || skip "no strace"
    "$DRX" init st
    mount_store st mnt -o commit_interval=3600
    setfattr -n user.drx.commit -v 1 mnt
    random_bytes src 300000
    cp src mnt/f
    # the copy's source under the mount: one request, not one per rank
    run timeout 120 env "$NO_LSAN" strace -f -qq -e trace=setxattr -o trace mpiexec -n 3 "$DRX_LOAD" copy mnt/f back
    assert_success
    cmp src back
    assert_equal "$(grep -c user.drx.commit trace)" 1
    # an array under the mount (libdrxmp's collective open)
    "$DRX" create st/arr --type f64 --shape 100x100 --chunk 30x30
    random_bytes raw 80000
    run timeout 120 env "$NO_LSAN" strace -f -qq -e trace=setxattr -o trace mpiexec -n 3 "$DRX_LOAD" import mnt/arr raw
    assert_success
    cmp raw mnt/arr/data
    assert_equal "$(grep -c user.drx.commit trace)" 1
    unmount_store mnt
}

@test "a read-only drxfs mount: import, export and copy destinations under it are refused" {
    "$DRX" init st
    "$DRX" create st/arr --type f64 --shape 100x100 --chunk 30x30
    random_bytes raw 80000
    "$DRX" put st/arr <raw
    random_bytes src 300000
    cp src st/plain
    mount_store st mnt -o ro
    random_bytes other 80000
    run mpi_load 2 import mnt/arr other
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "mnt/arr: read-only file system ($PWD/mnt is a read-only drxfs mount)"
    refute_output --partial "mnt/arr: mnt/arr:"
    run mpi_load 2 export st/arr mnt/out
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "read-only file system"
    run mpi_load 2 copy src mnt/f
    assert_failure
    assert_equal "${#lines[@]}" 1
    assert_output --partial "read-only file system"
    run mpi_load 2 copy src mnt/plain
    assert_failure
    assert_not_exists st/out
    assert_not_exists st/f.nafs
    cmp src st/plain
    cmp raw <("$DRX" get st/arr)
    # sources under it are read as usual
    run mpi_load 2 export mnt/arr out
    assert_success
    cmp raw out
    run mpi_load 2 copy mnt/plain copied
    assert_success
    cmp src copied
    run mpi_load 2 import st/arr other
    assert_success
    unmount_store mnt
}

@test "copy over a file open at the mount: new opens get the new file, open ones keep the old" {
    "$DRX" init st
    mount_store st mnt
    random_bytes a 300000
    random_bytes b 200000
    cp a mnt/f
    exec 4<mnt/f
    run mpi_load 2 copy b mnt/f
    assert_success
    cmp b mnt/f
    assert_file_size mnt/f 200000
    cat <&4 >held
    exec 4<&-
    cmp a held
    # and the old one's subfiles are gone once it is closed
    run "$DRX" fsck st
    assert_success
    unmount_store mnt
}

# resident_bytes FILE: bytes of FILE in the page cache (fincore)
resident_bytes() {
    fincore --bytes --noheadings --output RES "$1" | tr -d ' '
}

# cold FILE: writes FILE back and drops its pages from the page cache
# (POSIX_FADV_DONTNEED on the whole file): this file only, not the whole
# machine's cache (drop_caches), which other suites running beside this one
# count on (mount_zarr's pages)
cold() {
    sync "$1"
    dd if="$1" iflag=nocache count=0 status=none
}

# prefetched MIN P VIEW...: a.xta made cold, then prefetched by P ranks,
# until at least MIN of its bytes are cached (3 tries); prints how many.
# This VM's DAMON pages out cold physical regions (pageout, every 5 s),
# and a page just read can land in one: CI saw 8 chunks read and fewer
# cached.  A prefetch that does not read them fails every try; one that
# reads too much is caught by the caller's upper bound (DAMON only takes).
prefetched() {
    local min=$1 p=$2 i got=0
    shift 2
    for ((i = 0; i < 3; i++)); do
        cold a.xta
        mpi_load "$p" prefetch a "$@" >&2 || return 1
        got=$(resident_bytes a.xta)
        [ "$got" -ge "$min" ] && break
    done
    echo "$got"
}

@test "prefetch brings exactly the view's chunks into the page cache" {
    # 64 chunks of 128 KiB; dim0=0:32 holds chunks 0..7 (1 MiB), and
    # dim0=224:256 dim1=0:32 holds one chunk at the end of the file
    "$DRX" create a --type f64 --shape 256x256x16 --chunk 32x32x16
    random_bytes raw $((256 * 256 * 16 * 8))
    "$DRX" put a <raw
    cold a.xta
    [ "$(resident_bytes a.xta)" -eq 0 ] || skip "page cache not droppable here"
    local one eight
    one=$(prefetched $((128 * 1024)) 2 dim0=224:256 dim1=0:32)
    [ "$one" -ge $((128 * 1024)) ]
    [ "$one" -lt $((1024 * 1024)) ]
    # and every page of those chunks, not just as many bytes: up to three
    # prefetches, as a page of them may be reclaimed (another suite's
    # memory, DAMON) between the prefetch and the look; a page the
    # prefetch leaves out misses every time
    local i missing
    for ((i = 0; i < 3; i++)); do
        eight=$(prefetched $((1024 * 1024)) 3 dim0=0:32)
        missing=$(pages_missing a.xta $((1024 * 1024)))
        [ "$missing" -eq 0 ] && break
    done
    [ "$eight" -ge $((1024 * 1024)) ]
    [ "$eight" -lt $((2 * 1024 * 1024)) ]
    [ "$missing" -eq 0 ] || fail "$missing pages of the 8 chunks not cached after three prefetches"
}

# pages_missing FILE BYTES: how many pages of FILE's first BYTES are not
# in the page cache (mincore)
pages_missing() {
    "$PY" - "$1" "$2" <<'EOF'
import ctypes, mmap, os, sys
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
# a private writable mapping (never written) so ctypes can take its address
m = mmap.mmap(fd, n, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
libc = ctypes.CDLL(None, use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
pages = n // mmap.PAGESIZE
vec = (ctypes.c_ubyte * pages)()
assert libc.mincore(base, n, vec) == 0, os.strerror(ctypes.get_errno())
print(sum(1 for i in range(pages) if not vec[i] & 1))
EOF
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds
wait_for() {
    local n=$(($1 * 10)) i
    shift
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

cached_at_least() {
    [ "$(resident_bytes "$1")" -ge "$2" ]
}

@test "export onto, or import from, the array's own .xta or .xmd is refused on every rank; nothing is cut" {
    "$DRX" create a --type i32 --shape 9x7 --chunk 4x4
    random_bytes r 252
    "$DRX" put a <r
    cp a.xta xta.before
    cp a.xmd xmd.before
    ln a.xmd hard
    # it was: export onto a.xta cut the data to the view's 252 bytes (exit
    # 0), onto a.xmd replaced the metadata
    for f in a.xta a.xmd hard; do
        run mpi_load 2 export a "$f"
        assert_failure
        assert_output "drx-load: export: $PWD/$f is the array's own .$( [ "$f" = a.xta ] && echo xta || echo xmd): nothing written"
    done
    run mpi_load 2 import a a.xta
    assert_failure
    assert_output "drx-load: import: $PWD/a.xta is the array's own .xta: nothing written"
    cmp a.xta xta.before
    cmp a.xmd xmd.before
    run mpi_load 2 export a out
    assert_success
    cmp out r
}

@test "export and copy to a device or FIFO: one line saying why, without waiting for a reader" {
    "$DRX" create a --type i32 --shape 9x7 --chunk 4x4
    mkfifo ff
    # it was: "truncating /dev/null: Other I/O error Invalid argument"
    run mpi_load 2 export a /dev/null
    assert_failure
    assert_output "drx-load: export: /dev/null: not a regular file (every rank writes its part at its offset)"
    run mpi_load 2 export a ff
    assert_failure
    assert_output "drx-load: export: $PWD/ff: not a regular file (every rank writes its part at its offset)"
    run mpi_load 2 copy a.xta ff
    assert_failure
    assert_output "drx-load: copy: $PWD/ff: not a regular file (every rank writes its part at its offset)"
}

@test "copy, export and drx get -o into a store refuse the names it keeps for its own files: an array's .xta and .xmd, a .nafs, .drx/" {
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type i32 --shape 9x7 --chunk 4x4
    mkdir st/sub
    cp st/a.xta xta.before
    cp st/a.xmd xmd.before
    random_bytes r 100
    # it was: copy r st/a.xta wrote r over the array's data, st/.drx/x made
    # a striped file inside the store's own directory
    for d in st/a.xta st/a.xmd st/.drx/x st/sub/q.nafs; do
        run mpi_load 2 copy r "$d"
        assert_failure
        assert_output "drx-load: copy: $d: the store keeps the name $(basename "${d%/x}") for its own files (.drx/, an array's .xta and .xmd, a striped file's .nafs): nothing written"
    done
    # export and drx get -o too, into another array's files
    "$DRX" create st/b --type i32 --shape 9x7 --chunk 4x4
    cp st/b.xta bxta.before
    run mpi_load 2 export st/b st/a.xta
    assert_failure
    assert_output "drx-load: export: st/a.xta: the store keeps the name a.xta for its own files (.drx/, an array's .xta and .xmd, a striped file's .nafs): nothing written"
    run "$DRX" get st/a -o st/b.xta
    assert_failure
    assert_output "drx: get: st/b.xta: the store keeps the name b.xta for its own files (.drx/, an array's .xta and .xmd, a striped file's .nafs): nothing written"
    run "$DRX" get st/a -o st/.drx/new
    assert_failure
    assert_output --partial "the store keeps the name .drx for its own files"
    [ ! -e st/.drx/new ]
    # where the file lands counts: through a symlink in the store to a
    # directory elsewhere it is no store file (it was refused); through a
    # symlink to the store it is
    mkdir ext
    ln -s "$PWD/ext" st/ext
    ln -s "$PWD/st" stl
    "$DRX" get st/a -o st/ext/z.xmd
    [ -s ext/z.xmd ]
    run "$DRX" get st/a -o stl/c.xmd
    assert_failure
    assert_output --partial "the store keeps the name c.xmd"
    cmp st/b.xta bxta.before
    cmp st/a.xta xta.before
    cmp st/a.xmd xmd.before
    [ ! -e st/.drx/x.nafs ] && [ ! -e st/sub/q.nafs.nafs ]
    # .drx below the root is an ordinary name, as at the mount
    run mpi_load 2 copy r st/sub/.drx
    assert_success
    run mpi_load 1 copy st/sub/.drx back
    assert_success
    cmp r back
}

# Found in the SPEC audit of 2026-12-07: export to a striped file's name
# (as the mount shows it, or its store path) wrote a plain file beside
# NAME.nafs, which the mount never showed, and exited 0; so did drx get -o
# (and both to an array's name).
@test "export and drx get -o refuse a name an array or striped file holds in a store; through the mount get writes the striped file" {
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type u8 --shape 6 --chunk 4
    printf 'abcdef' | "$DRX" put st/a
    mount_store st mnt
    echo old >mnt/sf
    for d in st/sf mnt/sf; do
        run mpi_load 2 export st/a "$d"
        assert_failure
        assert_output "drx-load: export: $d: is a striped file of the store, and this writes plain files (drx-load copy one over it): nothing written"
    done
    run mpi_load 2 export st/a mnt/a
    assert_failure
    assert_output "drx-load: export: mnt/a: is an array of the store (a plain file of its name would hide behind it): nothing written"
    run "$DRX" get st/a -o st/sf
    assert_failure
    assert_output "drx: get: st/sf: is a striped file of the store, and this writes plain files (drx-load copy one over it): nothing written"
    run "$DRX" get st/a -o st/a
    assert_failure
    assert_output "drx: get: st/a: is an array of the store (a plain file of its name would hide behind it): nothing written"
    [ ! -e st/sf ] && [ ! -e st/a ]
    [ "$(cat mnt/sf)" = old ]
    # drx get -o writes its output file as any program does: through the
    # mount, into the striped file
    "$DRX" get st/a -o mnt/sf
    [ "$(cat mnt/sf)" = abcdef ]
    [ ! -e st/sf ]
    # a new name, or an existing plain file, is written as before
    echo plain >st/p
    mpi_load 2 export st/a st/p
    mpi_load 1 export st/a st/new
    [ "$(cat mnt/p)" = abcdef ] && [ "$(cat mnt/new)" = abcdef ]
    unmount_store mnt
    run "$DRX" fsck st
    assert_success
}

# Found in the SPEC audit of 2026-12-07: a file of an array's directory at
# the mount, mapped to the store lexically, was "st/a/data: No such file or
# directory" (copy: "no such file"), naming a path the user never gave.
@test "import, export and copy of a file inside an array's directory at the mount say why they cannot" {
    "$DRX" init st >/dev/null
    "$DRX" create st/a --type u8 --shape 6 --chunk 4
    mount_store st mnt
    cmp mnt/a/data <(head -c 6 /dev/zero)
    why="(its files show only at the mount; drx-load works on the store's): name the array and view words (ARRAY [VIEW...]), or cp the file"
    run mpi_load 2 import st/a mnt/a/data
    assert_failure
    assert_output "drx-load: import: mnt/a/data: inside the array $PWD/st/a $why"
    run mpi_load 2 export st/a mnt/a/dim0=1:3/data
    assert_failure
    assert_output "drx-load: export: mnt/a/dim0=1:3/data: inside the array $PWD/st/a $why"
    run mpi_load 1 copy mnt/a/data.npy out.npy
    assert_failure
    assert_output "drx-load: copy: mnt/a/data.npy: inside the array $PWD/st/a $why"
    run mpi_load 1 copy st/a/zarr/.zgroup out
    assert_failure
    assert_output "drx-load: copy: st/a/zarr/.zgroup: inside the array $PWD/st/a $why"
    [ ! -e out.npy ] && [ ! -e out ]
    # the array itself, as the raw file (it was "No such file or directory")
    for r in st/a mnt/a; do
        run mpi_load 2 import st/a "$r"
        assert_failure
        assert_output "drx-load: import: $r: is an array; import reads plain files (drx-load export it first)"
    done
    unmount_store mnt
}

@test "drxfs launches drx-load prefetch for a large read: the view's chunks get cached" {
    "$DRX" init st
    # 64 chunks of 128 KiB; dim0=0:128 is chunks 0..31 (4 MiB)
    "$DRX" create st/a --type f64 --shape 256x256x16 --chunk 32x32x16
    random_bytes raw $((256 * 256 * 16 * 8))
    "$DRX" put st/a <raw
    # an mpiexec that notes its arguments: the daemon's --config must reach
    # drx-load, so prefetches use its mpiio settings
    printf '#!/bin/sh\necho "$@" >>"%s/args"\nexec mpiexec "$@"\n' "$PWD" >note-mpiexec
    chmod +x note-mpiexec
    printf 'prefetch = { enabled = true; min_bytes = 1048576; ranks = 2; mpiexec = "%s"; };\n' \
        "$PWD/note-mpiexec" >pf.conf
    printf 'mpiio = { buffer = 2097152; };\n' >>pf.conf
    mount_store st mnt -o config=pf.conf,log_level=debug
    cold st/a.xta
    [ "$(resident_bytes st/a.xta)" -eq 0 ] || skip "page cache not droppable here"
    # one small read of the large view starts the prefetch of all of it
    head -c 4096 mnt/a/dim0=0:128/data >first
    cmp first <(head -c 4096 raw)
    wait_for 30 cached_at_least st/a.xta $((4 * 1024 * 1024))
    wait_for 30 grep -q "prefetch of .*/st/a done" mnt.log
    unmount_store mnt
    grep -q "prefetch of .*/st/a: started .*note-mpiexec -n 2 .*drx-load" mnt.log
    grep -q -- "--config $(realpath pf.conf) --no-progress prefetch" args
}

@test "drxfs prefetch: missing mpiexec is logged and reads go on; unmount stops a running one" {
    "$DRX" init st
    "$DRX" create st/a --type u8 --shape 4096x64 --chunk 256x64
    random_bytes raw $((4096 * 64))
    "$DRX" put st/a <raw
    printf 'prefetch = { enabled = true; min_bytes = 1024; ranks = 2; mpiexec = "no-such-mpiexec"; };\n' >pf.conf
    mount_store st mnt -o config="$PWD/pf.conf"
    cmp raw mnt/a/data
    cmp <(head -c 65536 raw) mnt/a/dim0=0:1024/data
    unmount_store mnt
    grep -q "cannot run no-such-mpiexec: No such file or directory (reads go on" mnt.log
    # a launcher that never ends: the unmount must stop its process group
    printf '#!/bin/sh\nexec sleep 300\n' >slow-mpiexec
    chmod +x slow-mpiexec
    printf 'prefetch = { enabled = true; min_bytes = 1024; ranks = 1; mpiexec = "%s"; };\n' \
        "$PWD/slow-mpiexec" >pf2.conf
    mount_store st mnt -o config="$PWD/pf2.conf"
    cmp raw mnt/a/data
    wait_for 10 pgrep -f "^sleep 300" -P "$(cat mnt.pid)"
    local child
    child=$(pgrep -f "^sleep 300" -P "$(cat mnt.pid)")
    unmount_store mnt
    ! kill -0 "$child" 2>/dev/null
}

@test "no MPI process of this suite is left behind" {
    local p cwd left=()
    for p in $(pgrep -x 'drx-load|hydra_pmi_proxy|mpiexec|mpiexec.hydra' 2>/dev/null); do
        cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
        case "$cwd" in "$BATS_RUN_TMPDIR"*) left+=("$p") ;; esac
    done
    [ "${#left[@]}" -eq 0 ] || fail "left running: ${left[*]}"
}
