#!/usr/bin/env bats
# The kernel caches what the mount shows and drxfs invalidates it: shared
# mmap of every kind of file, SQLite in WAL mode, and freshness at the next
# open after drx put, drx extend, drx-load import, a write through another
# view, and a write through a second drxfs of the same store (standing in
# for another node).  No test waits for coherence: every check follows the
# change at once.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt" M2="$BATS_FILE_TMPDIR/mnt2"
    mkdir -p "$S"
    "$DRX" init "$S" >/dev/null
    mount_store "$S" "$M"
}

teardown_file() {
    unmount_store "$M2"
    unmount_store "$M"
    unmount_store "$BATS_FILE_TMPDIR/k"
    kill_our_mpi
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    kill_our_mpi
    cleanup_owner_test
    if [ -n "${INV_M0:-}" ]; then
        kill -CONT "$(cat "$INV_M0.pid" 2>/dev/null || echo 0)" 2>/dev/null || true
        unmount_store "$INV_M1"
        unmount_store "$INV_M0"
        INV_M0= INV_M1=
    fi
    if [ -n "${STOPPED_RELAY:-}" ]; then
        # and its drxfs, which a stat of the mount would wait for
        kill -CONT "$STOPPED_RELAY" "$(cat "$TERM_MNT.pid" 2>/dev/null || echo 0)" 2>/dev/null || true
        STOPPED_RELAY=
    fi
    if [ -n "${TERM_MNT:-}" ]; then
        # never a bare wait: it would wait for the daemons too
        if [ -n "${TERM_JOBS:-}" ]; then
            kill -9 $TERM_JOBS 2>/dev/null || true
            wait $TERM_JOBS 2>/dev/null || true
        fi
        unmount_store "$TERM_MNT"
        TERM_MNT= TERM_JOBS=
    fi
    if [ -n "${DIO_MNT:-}" ]; then
        unmount_store "$DIO_MNT"
        DIO_MNT=
    fi
    if [ -n "${BLIND_MNT:-}" ]; then
        unmount_store "$BLIND_MNT"
        BLIND_MNT=
    fi
    if [ -n "${RA_MNT:-}" ]; then
        kill -CONT "$(cat "$RA_MNT.pid" 2>/dev/null || echo 0)" 2>/dev/null || true
        unmount_store "$RA_MNT"
        RA_MNT=
    fi
}

# What the commit-request test leaves when it fails: a stopped daemon, a
# tmpfs over its mount point's parent, the mount, its directory.
cleanup_owner_test() {
    [ -n "${OWN:-}" ] || return 0
    umount "$OWN/real" 2>/dev/null || true
    kill -CONT "$(cat "$OWN/real/mnt.pid" 2>/dev/null || echo 0)" 2>/dev/null || true
    unmount_store "$OWN/real/mnt"
    rm -rf "$OWN"
    OWN=
}

# fresh NAME SHAPE CHUNK: an f64 array holding 0, 1, 2, ... (also in NAME.raw)
fresh() {
    "$DRX" rm "$S/$1" 2>/dev/null || true
    "$DRX" create "$S/$1" --type f64 --shape "$2" --chunk "$3"
    "$PY" -c "
import numpy as np
n = 1
for x in '$2'.split('x'): n *= int(x)
np.arange(n, dtype='<f8').tofile('$1.raw')"
    "$DRX" put "$S/$1" <"$1.raw"
}

# size_at_open FILE: the size fstat gives right after open
size_at_open() {
    "$PY" -c "import os, sys; f = open(sys.argv[1], 'rb'); print(os.fstat(f.fileno()).st_size)" "$1"
}

@test "np.memmap reads and writes data, data.npy, striped and plain files" {
    fresh mm 20x30x10 8x8x8
    "$PY" -c "
import numpy as np
m = np.memmap('$M/mm/data', dtype='<f8', mode='r+', shape=(20, 30, 10))
assert (m.ravel() == np.arange(6000)).all()
m[3, 4, 5] = -1.5
m[19, 29, 9] = -2.5
m.flush()
del m
a = np.load('$M/mm/dim0=2:6/data.npy', mmap_mode='r+')
assert a.shape == (4, 30, 10) and a[1, 4, 5] == -1.5
a[0, 0, 0] = -3.5
a.flush()
del a"
    "$PY" -c "
import numpy as np, sys
a = np.frombuffer(sys.stdin.buffer.read(), dtype='<f8').reshape(20, 30, 10)
want = np.arange(6000, dtype='<f8').reshape(20, 30, 10)
want[3, 4, 5] = -1.5; want[19, 29, 9] = -2.5; want[2, 0, 0] = -3.5
assert (a == want).all()" < <("$DRX" get "$S/mm")
    # a striped file (made through the mount) and a plain file (made in the store)
    head -c 100000 /dev/urandom >blob
    cp blob "$M/striped.bin"
    cp blob "$S/plain.bin"
    for f in striped.bin plain.bin; do
        "$PY" -c "
import mmap, os
fd = os.open('$M/$f', os.O_RDWR)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
assert m[:100000] == open('blob', 'rb').read()
m[5000:5004] = b'ABCD'
m.flush(); m.close(); os.close(fd)"
    done
    cmp <(head -c 5000 blob; printf ABCD; tail -c +5005 blob) "$M/striped.bin"
    cmp <(head -c 5000 blob; printf ABCD; tail -c +5005 blob) "$S/plain.bin"
    rm "$M/striped.bin" "$S/plain.bin"
}

# dio_mount OPTIONS: a second mount of the store ($DIO) with those -o
# options and the debug log, which says whether the INIT reply granted
# shared mmap of direct_io files (FUSE_DIRECT_IO_ALLOW_MMAP)
dio_mount() {
    DIO_MNT="$BATS_TEST_TMPDIR/dio" DIO="$BATS_TEST_TMPDIR/dio"
    mount_store "$S" "$DIO" -o "$1,log_level=debug"
}

@test "data_io=direct: np.memmap writes data through a shared map, and read-only shared maps work" {
    fresh dm 20x30x10 8x8x8
    dio_mount data_io=direct
    grep -q "settings: .*data direct_io" "$DIO.log"
    "$PY" -c "
import mmap, os
import numpy as np
m = np.memmap('$DIO/dm/data', dtype='<f8', mode='r+', shape=(20, 30, 10))
assert (m.ravel() == np.arange(6000)).all()
m[3, 4, 5] = -1.5
m[19, 29, 9] = -2.5
m.flush()
del m
# read-only shared maps: np.memmap mode r, and mmap of an O_RDONLY descriptor
r = np.memmap('$DIO/dm/data', dtype='<f8', mode='r', shape=(20, 30, 10))
assert r[3, 4, 5] == -1.5 and r[19, 29, 9] == -2.5 and r[0, 0, 1] == 1
del r
fd = os.open('$DIO/dm/dim0=3/data', os.O_RDONLY)
v = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
assert np.frombuffer(v, dtype='<f8')[45] == -1.5
v.close(); os.close(fd)"
    "$PY" -c "
import numpy as np, sys
want = np.arange(6000, dtype='<f8').reshape(20, 30, 10)
want[3, 4, 5] = -1.5; want[19, 29, 9] = -2.5
for f in sys.argv[1:]:
    a = np.frombuffer(open(f, 'rb').read(), dtype='<f8').reshape(20, 30, 10)
    assert (a == want).all(), f" <(cat "$DIO/dm/data") <("$DRX" get "$S/dm") <(cat "$M/dm/data")
    grep -q "FUSE_DIRECT_IO_ALLOW_MMAP granted" "$DIO.log"
    unmount_store "$DIO"
}

@test "kcache=no,data_io=direct: the grant and shared maps without the kernel cache, and no relay" {
    fresh dk 4x5 2x2
    dio_mount kcache=no,data_io=direct
    grep -q "FUSE_DIRECT_IO_ALLOW_MMAP granted" "$DIO.log"
    "$PY" -c "
import numpy as np
m = np.memmap('$DIO/dk/data', dtype='<f8', mode='r+', shape=(4, 5))
m[2, 3] = -7.5
m.flush()"
    "$PY" -c "
import numpy as np, sys
a = np.frombuffer(open(sys.argv[1], 'rb').read(), dtype='<f8')
assert a[13] == -7.5 and a[12] == 12, a" <("$DRX" get "$S/dk")
    # no invalidation relay without the kernel cache
    [ -z "$(pgrep -P "$(cat "$DIO.pid")" || true)" ]
    unmount_store "$DIO"
}

@test "data_io=direct: a write(2) shows in a shared map of the file at once, drx put at the next open" {
    fresh dw 20x30x10 8x8x8
    dio_mount data_io=direct
    "$PY" -c "
import mmap, os, subprocess
import numpy as np
fd = os.open('$DIO/dw/data', os.O_RDWR)
m = mmap.mmap(fd, 6000 * 8, mmap.MAP_SHARED, mmap.PROT_READ)
v = np.frombuffer(m, dtype='<f8')
assert v[7] == 7 and v[100] == 100
# direct_io writes through another descriptor and through the mapped one:
# the kernel drops the written range's pages before it sends the write
fd2 = os.open('$DIO/dw/data', os.O_WRONLY)
os.pwrite(fd2, np.array([-7.0]).tobytes(), 7 * 8)
assert v[7] == -7, v[7]
os.close(fd2)
os.pwrite(fd, np.array([-8.0]).tobytes(), 8 * 8)
assert v[8] == -8, v[8]
# drx put outside the mount: the next open drops the pages (no keep_cache)
subprocess.run(['$DRX', 'put', '$S/dw'], check=True,
               input=(np.arange(6000, dtype='<f8') + 1000).tobytes())
os.close(os.open('$DIO/dw/data', os.O_RDONLY))
assert v[100] == 1100 and v[7] == 1007, (v[100], v[7])
del v
m.close(); os.close(fd)"
    grep -q "FUSE_DIRECT_IO_ALLOW_MMAP granted" "$DIO.log"
    unmount_store "$DIO"
}

@test "npy_io=direct, striped_io=direct: shared maps of data.npy, data.nc and a striped file" {
    fresh dn 20x30x10 8x8x8
    dio_mount npy_io=direct,striped_io=direct
    # made through this mount: its size is recorded at its commit, and the
    # other mount would see it empty until then
    head -c 100000 /dev/urandom >blob
    cp blob "$DIO/dio_striped.bin"
    grep -q "settings: .*data.npy direct_io, striped files direct_io" "$DIO.log"
    "$PY" -c "
import mmap, os
import numpy as np, netCDF4
a = np.load('$DIO/dn/dim0=2:6/data.npy', mmap_mode='r+')
assert a.shape == (4, 30, 10) and a[1, 4, 5] == 3 * 300 + 4 * 10 + 5
a[0, 0, 0] = -3.5
a.flush()
del a
fd = os.open('$DIO/dn/data.nc', os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
with netCDF4.Dataset('x.nc', memory=bytes(m)) as d:
    assert d.variables['dn'][2, 0, 0] == -3.5
m.close(); os.close(fd)
fd = os.open('$DIO/dio_striped.bin', os.O_RDWR)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
assert m[:100000] == open('blob', 'rb').read()
m[5000:5004] = b'ABCD'
m.flush(); m.close(); os.close(fd)"
    [ "$("$DRX" get "$S/dn" dim0=2 | head -c 8 | "$PY" -c "import sys, numpy as np; print(np.frombuffer(sys.stdin.buffer.read(), '<f8')[0])")" = -3.5 ]
    cmp <(head -c 5000 blob; printf ABCD; tail -c +5005 blob) "$DIO/dio_striped.bin"
    grep -q "FUSE_DIRECT_IO_ALLOW_MMAP granted" "$DIO.log"
    unmount_store "$DIO"
    cmp <(head -c 5000 blob; printf ABCD; tail -c +5005 blob) "$M/dio_striped.bin"
    rm "$M/dio_striped.bin"
}

@test "shared mmap reads data.nc and Zarr chunk keys and metadata" {
    fresh mk 20x30x10 8x8x8
    "$DRX" get "$S/mk" >mk.got
    "$PY" -c "
import json, mmap, os
import numpy as np, netCDF4

def mapped(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
    finally:
        os.close(fd)
    b = bytes(m)
    m.close()
    return b

a = np.fromfile('mk.got', dtype='<f8').reshape(20, 30, 10)
# data.nc of the array and of a view, parsed from the mapped bytes
for view, want in (('', a), ('dim0=2:19:4/', a[2:19:4])):
    with netCDF4.Dataset('x.nc', memory=mapped('$M/mk/' + view + 'data.nc')) as d:
        got = d.variables['mk'][:]
        assert got.shape == want.shape and (got == want).all(), view
# an inner and an edge chunk key: the chunk's bytes, the edge padded with the fill
meta = json.loads(mapped('$M/mk/zarr/.zmetadata'))['metadata']
assert meta['mk/.zarray']['shape'] == [20, 30, 10]
padded = np.zeros((24, 32, 16))
padded[:20, :30, :10] = a
for key, (i, j, k) in (('0.1.0', (0, 1, 0)), ('2.3.1', (2, 3, 1))):
    got = np.frombuffer(mapped('$M/mk/zarr/mk/' + key), dtype='<f8').reshape(8, 8, 8)
    assert (got == padded[8*i:8*i+8, 8*j:8*j+8, 8*k:8*k+8]).all(), key
"
}

@test "SQLite in WAL mode: 10,000 rows, integrity_check ok" {
    "$PY" -c "
import sqlite3
db = sqlite3.connect('$M/wal.db')
assert db.execute('PRAGMA journal_mode=WAL').fetchone()[0] == 'wal'
db.execute('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)')
for i in range(10):
    with db:
        db.executemany('INSERT INTO t VALUES (?, ?)',
                       ((i * 1000 + j, 'row %d' % (i * 1000 + j)) for j in range(1000)))
assert db.execute('SELECT count(*) FROM t').fetchone()[0] == 10000
assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
db.close()
db = sqlite3.connect('$M/wal.db')
assert db.execute('SELECT v FROM t WHERE k = 9999').fetchone()[0] == 'row 9999'
assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
db.close()"
    rm -f "$M/wal.db" "$M/wal.db-wal" "$M/wal.db-shm"
}

@test "drx put, drx extend and drx-load import show at the next open" {
    fresh co 12x10x6 4x4x4
    # every cache warm: pages of several views, attributes, an open file
    cmp co.raw "$M/co/data"
    cat "$M/co/data.npy" "$M/co/dim0=-2:/data" "$M/co/info" >/dev/null
    stat "$M/co/data" "$M/co/data.npy" "$M/co/dim0=-2:/data" >/dev/null
    "$PY" -c "import numpy as np; (np.arange(720, dtype='<f8') * 3).tofile('three')"
    "$DRX" put "$S/co" <three
    cmp three "$M/co/data"
    cmp <("$DRX" get "$S/co" dim0=-2:) "$M/co/dim0=-2:/data"
    "$PY" -c "
import numpy as np
assert (np.load('$M/co/data.npy').ravel() == np.arange(720) * 3).all()"
    "$DRX" extend "$S/co" 0 4
    [ "$(size_at_open "$M/co/data")" -eq $((16 * 10 * 6 * 8)) ]
    [ "$(size_at_open "$M/co/data.npy")" -eq "$("$DRX" get "$S/co" | wc -c | awk '{ print $1 + 128 }')" ]
    cmp <("$DRX" get "$S/co") "$M/co/data"
    cmp <("$DRX" get "$S/co" dim0=-2:) "$M/co/dim0=-2:/data"
    grep -q '"shape": \[16, 10, 6\]' "$M/co/info" || grep -q '16, *10, *6' "$M/co/info"
    # drx-load import on two ranks
    "$PY" -c "import numpy as np; (-np.arange(960, dtype='<f8')).tofile('neg')"
    (cd "$S" && timeout 120 mpiexec -n 2 "$DRX_LOAD" import co "$BATS_TEST_TMPDIR/neg")
    cmp neg "$M/co/data"
    cmp <("$DRX" get "$S/co" dim0=-2:) "$M/co/dim0=-2:/data"
}

@test "a write through one view shows in every other view at the next open" {
    fresh wv 8x6x4 4x4x4
    cmp wv.raw "$M/wv/data"
    cat "$M/wv/data.npy" "$M/wv/order=F/data" "$M/wv/dim0=1/data" >/dev/null
    exec 5<"$M/wv/data"
    "$PY" -c "import numpy as np; np.full(24, 7.0, dtype='<f8').tofile('sevens')"
    dd if=sevens of="$M/wv/dim0=1/data" conv=notrunc status=none
    "$PY" -c "
import numpy as np
a = np.arange(192, dtype='<f8').reshape(8, 6, 4); a[1] = 7
a.tofile('want')
np.asfortranarray(a).ravel(order='K').tofile('wantF')
assert (np.load('$M/wv/data.npy') == a).all()"
    cmp want "$M/wv/data"
    cmp wantF "$M/wv/order=F/data"
    cmp sevens "$M/wv/dim0=1/data"
    exec 5<&-
    # through data.npy's mmap: data sees it
    "$PY" -c "
import numpy as np
a = np.load('$M/wv/data.npy', mmap_mode='r+')
a[7, 5, 3] = 1234.0
a.flush()
del a
b = np.fromfile('$M/wv/data', dtype='<f8')
assert b[-1] == 1234.0, b[-1]"
}

# cold FILE...: drops the files' pages from the page cache
cold() {
    local f
    for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done
}

@test "cold slab reads through the read-ahead equal drx get, and a write between reads shows" {
    # 31 MB, chunks of 256 KiB: the views are larger than the engine's
    # 16 MiB read-ahead window, so later requests announce further chunks
    fresh ra 160x160x160 32x32x32
    # (rows of 256 B or more with gaps between them are read with preadv
    # straight into the reply: dim1=72:104/dim2=0:96)
    for w in dim0=0:40 dim1=72:104 dim2=0:16 dim1=72:104/dim2=0:96 dim0=::3/dim2=5:150:7 \
        order=F dim0=20:140/order=F; do
        cold "$S/ra.xta"
        cmp <("$DRX" get "$S/ra" ${w//\// }) "$M/ra/$w/data"
        cold "$S/ra.xta"
        cmp <("$DRX" get "$S/ra" ${w//\// }) "$M/ra/$w/data"
    done
    # a read that announced the slab's chunks, then a write into them
    # through another view, then the slab again: the write shows
    cold "$S/ra.xta"
    "$PY" -c "
import numpy as np, sys
with open(sys.argv[1], 'rb') as f:
    a = np.frombuffer(f.read(1 << 20), dtype='<f8')
assert (a == np.arange(a.size)).all()
with open(sys.argv[2], 'r+b') as f:
    f.write(np.full(160 * 160, -1.0, dtype='<f8').tobytes())
with open(sys.argv[1], 'rb') as f:
    b = np.frombuffer(f.read(), dtype='<f8').reshape(40, 160, 160)
want = np.arange(40 * 160 * 160, dtype='<f8').reshape(40, 160, 160)
want[30] = -1
assert (b == want).all()" "$M/ra/dim0=0:40/data" "$M/ra/dim0=30/data"
    cold "$S/ra.xta"
    "$PY" -c "
import numpy as np, sys
want = np.arange(160 ** 3, dtype='<f8').reshape(160, 160, 160)
want[30] = -1
got = np.frombuffer(open(sys.argv[1], 'rb').read(), dtype='<f8')
assert (got.reshape(160, 32, 160) == want[:, 72:104]).all()" \
        <("$DRX" get "$S/ra" dim1=72:104)
}

# A cold slab read through the mount reads its chunks' spans from the disk
# and nothing past them: the copy engine's first read hands the pool its
# pieces in the order the view needs them, and a span whose pages are not
# in the page cache yet is announced exactly before its pread
# (libcore/src/view_ahead.c).  A pread that missed made the kernel read
# ahead past the span, into the chunks next in the file, which a column
# slab does not need.  192^3 f64 in 64^3 chunks grown along d2, d0 and d1,
# as bench_cache.sh's cold part: dim2=0:32 needs 9 chunks' spans of 2 MiB
# (18 MiB); the daemon read 18-26 MiB per cold read before (18 in one of
# the nine reads of three runs of this test), exactly 18 since.
@test "a cold column slab reads from the disk only the chunk spans it needs" {
    "$DRX" rm "$S/col" 2>/dev/null || true
    "$DRX" create "$S/col" --type f64 --shape 128x128x128 --chunk 64x64x64
    "$DRX" extend "$S/col" 2 64
    "$DRX" extend "$S/col" 0 64
    "$DRX" extend "$S/col" 1 64
    head -c $((192 * 192 * 192 * 8)) /dev/urandom | "$DRX" put "$S/col"
    sync
    local pid f="$M/col/dim2=0:32/data" i a b total=0 least=0 need=$((3 * 18 << 20))
    pid=$(cat "$M.pid")
    cmp <("$DRX" get "$S/col" dim2=0:32) "$f"
    for ((i = 0; i < 3; i++)); do
        cold "$S/col.xta" "$f"
        a=$(awk '/^read_bytes/ { print $2 }' "/proc/$pid/io")
        dd if="$f" of=/dev/null bs=1M status=none
        b=$(awk '/^read_bytes/ { print $2 }' "/proc/$pid/io")
        echo "cold read $i: the daemon read $(((b - a) >> 10)) KiB"
        total=$((total + b - a))
        [ "$i" -gt 0 ] && [ "$least" -le $((b - a)) ] || least=$((b - a))
    done
    # a store whose pages cannot be dropped, or not on a disk (tmpfs), reads less
    [ "$total" -ge "$need" ] || skip "the daemon read $((total >> 10)) KiB: no cold reads here"
    # A read-ahead past the spans read up to 8 MiB more in every read.  This
    # VM's DAMON may page out a page between the kernel's read and the
    # daemon's copy, which reads it again, now and then in one read (seen:
    # 1.5 MiB, then 2.25 MiB in one of three): the least of the three reads
    # gets 1 MiB of slack, the three together 6 MiB
    [ "$least" -le $((need / 3 + (1 << 20))) ]
    [ "$total" -le $((need + (6 << 20))) ]
    "$DRX" rm "$S/col"
}

# The read-ahead pool (libcore/src/readahead.c) keeps at most 4 MiB of
# ordered ranges (drx_io_readahead_ordered, the copy engine's first read's
# pieces) hinted that it has not seen read: past that, a pool thread waits
# for the oldest before it hints more, so that the disk reads them about
# in the order asked.  A file of a stopped daemon is a disk that reads nothing:
# of 32 ranges of 1 MiB hinted at once, at most 4 MiB and the 3 ranges the
# other threads hint before they too wait (7 MiB) get their pages (under
# read) in the kernel's cache.  Without the bound the kernel takes them
# until FUSE's queue is full (12 requests) and more.
@test "the read-ahead pool hints ordered ranges at most 4 MiB ahead of what it has seen read: a stopped daemon's file gets 7 of 32" {
    if readelf -d "$DRX_BUILD/libcore/libdrxcore.so" | grep -q libasan; then
        skip "libdrxcore built with ASan: python3 cannot load it"
    fi
    RA_MNT="$BATS_TEST_TMPDIR/ram"
    mount_store "$S" "$RA_MNT"
    "$DRX" rm "$S/ra" 2>/dev/null || true
    "$DRX" create "$S/ra" --type f64 --shape 256x256x128 --chunk 64x64x64
    head -c $((64 << 20)) /dev/urandom | "$DRX" put "$S/ra"
    run "$PY" - "$DRX_BUILD/libcore/libdrxcore.so" "$RA_MNT/ra/data" "$(cat "$RA_MNT.pid")" <<'PYEOF'
import ctypes, os, signal, sys, time
class R(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]
lib = ctypes.CDLL(sys.argv[1])
lib.drx_io_cached.restype = ctypes.c_bool
lib.drx_io_cached.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
MIB, pid = 1 << 20, int(sys.argv[3])
fd = os.open(sys.argv[2], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
if any(lib.drx_io_cached(fd, i * MIB, 4096) for i in range(32)):
    print("SKIP: the mount's pages cannot be dropped")
    sys.exit(0)
os.kill(pid, signal.SIGSTOP)
try:
    rs = (R * 32)(*[R(i * MIB, MIB) for i in range(32)])
    lib.drx_io_readahead_ordered(fd, rs, 32)
    time.sleep(1)
    held = sum(lib.drx_io_cached(fd, i * MIB, 4096) for i in range(32))
finally:
    os.kill(pid, signal.SIGCONT)
print("ranges under read or read:", held)
PYEOF
    assert_success
    [[ $output != SKIP* ]] || skip "${output#SKIP: }"
    local held=${output##*: }
    echo "$output"
    [ "$held" -ge 1 ]
    [ "$held" -le 7 ]
    unmount_store "$RA_MNT"
    RA_MNT=
}

@test "a second drxfs of the same store sees a write through the first at the next open" {
    fresh tw 10x10x10 5x5x5
    mount_store "$S" "$M2"
    cmp tw.raw "$M2/tw/data"
    cmp tw.raw "$M/tw/data"
    "$PY" -c "import numpy as np; np.full(100, -9.0, dtype='<f8').tofile('nines')"
    dd if=nines of="$M/tw/dim0=4/data" conv=notrunc status=none
    "$PY" -c "
import numpy as np
a = np.arange(1000, dtype='<f8').reshape(10, 10, 10); a[4] = -9
a.tofile('want')"
    cmp want "$M2/tw/data"
    # a striped file: same size, new bytes; then longer
    head -c 300000 /dev/urandom >one
    head -c 300000 /dev/urandom >two
    # (a new size reaches the store, and so the other mount, at the first
    # mount's batched commit: asked for here, as a user would)
    cp one "$M/sf"
    commit_mount "$M"
    cmp one "$M2/sf"
    dd if=two of="$M/sf" conv=notrunc status=none
    cmp two "$M2/sf"
    cat one >>"$M/sf"
    commit_mount "$M"
    [ "$(size_at_open "$M2/sf")" -eq 600000 ]
    cmp <(cat two one) "$M2/sf"
    # and the other way round, through an extension by the second mount
    "$DRX" extend "$M2/tw" 1 2
    [ "$(size_at_open "$M/tw/data")" -eq $((10 * 12 * 10 * 8)) ]
    cmp <("$DRX" get "$S/tw") "$M/tw/data"
    rm "$M/sf"
    unmount_store "$M2"
}

# blind_mount: a second mount of the store ($BLIND) whose inotify sees
# nothing (test_helper's mount_blind): another node of a network file
# system, for which only its own checks show a change
blind_mount() {
    BLIND_MNT="$BATS_TEST_TMPDIR/blind" BLIND="$BATS_TEST_TMPDIR/blind"
    mount_blind "$S" "$BLIND" "$@"
}

# Found in the multi-mount audit of 2026-12-07: a descriptor of another
# node's mount, opened before drx put, read the old bytes until it was
# closed, though its fstat showed the new mtime: the kernel dropped its
# pages, and the daemon served them again from its chunk cache, which only
# inotify (silent for another node's writes) or a new open emptied.  Now
# the getattr the kernel asks before reading again (once the attributes
# expired) empties it when the .xta changed.  (Polled: a tick, the
# attribute timeout, must pass; without the fix it never comes.)
@test "another node's drx put: a descriptor opened before it reads the new bytes once its attributes expire" {
    fresh hd 16x16 8x8
    blind_mount
    "$PY" -c "import numpy as np; (np.arange(256, dtype='<f8') * -2).tofile('neg')"
    "$PY" - "$BLIND/hd/data" "$S/hd" "$DRX" <<'PY'
import os, subprocess, sys, time
import numpy as np
path, arr, drx = sys.argv[1:4]
fd = os.open(path, os.O_RDONLY)
assert (np.frombuffer(os.pread(fd, 2048, 0), '<f8') == np.arange(256)).all()
subprocess.run([drx, 'put', arr], stdin=open('neg', 'rb'), check=True)
want = (np.arange(256) * -2.0).tobytes()
# (before any new open: one empties the chunk cache)
end = time.monotonic() + 2
while os.pread(fd, 2048, 0) != want:
    assert time.monotonic() < end, 'the open descriptor still reads the old bytes'
    time.sleep(0.002)
PY
    # and a new open, at once (close-to-open)
    "$DRX" put "$S/hd" <hd.raw
    cmp hd.raw "$BLIND/hd/data"
}

# Found in the multi-mount audit of 2026-12-07: a striped file overwritten
# in place through one mount kept its metafile's mtime until the batched
# commit (5 s): the other mount showed the old mtime meanwhile, and its
# descriptors opened before the write read the old bytes (their kernel
# drops pages when the mtime moves).  Now the close stamps the write's
# time.  (Polled, within the commit interval.)
@test "a striped file overwritten through one mount: the other's open descriptor reads the new bytes, its stat the new mtime" {
    blind_mount
    head -c 200000 /dev/urandom >one
    head -c 200000 /dev/urandom >two
    cp one "$M/ow"
    commit_mount "$M"
    "$PY" - "$BLIND/ow" "$M/ow" <<'PY'
import os, sys, time
b, a = sys.argv[1:3]
fd = os.open(b, os.O_RDONLY)
assert os.pread(fd, 200000, 0) == open('one', 'rb').read()
w = os.open(a, os.O_WRONLY)
os.pwrite(w, open('two', 'rb').read(), 0)
os.close(w)
want = open('two', 'rb').read()
end = time.monotonic() + 2
while os.pread(fd, 200000, 0) != want:
    assert time.monotonic() < end, 'the open descriptor still reads the old bytes'
    time.sleep(0.002)
assert os.stat(b).st_mtime_ns == os.stat(a).st_mtime_ns
os.close(fd)
PY
    cmp two "$BLIND/ow"
}

# Found in the multi-mount audit of 2026-12-07: a descriptor of a striped
# file open in one mount (tail -f) never read what another mount appended:
# its fstat showed the new size, but the getattr the kernel asks before
# reading gave the handle's own size, and the kernel stopped there, until
# a new open or a stat by name reloaded it.  Now that getattr reloads the
# recorded size (without waiting for one not yet recorded: asked for
# here, as the batched commit would within its interval).
@test "tail -f through one mount of a striped file appended through another reads the new bytes" {
    blind_mount
    head -c 100000 /dev/urandom >one
    head -c 5000 /dev/urandom >more
    cp one "$M/tl"
    commit_mount "$M"
    "$PY" - "$BLIND/tl" "$M/tl" "$M" <<'PY'
import os, sys, time
b, a, m = sys.argv[1:4]
fd = os.open(b, os.O_RDONLY)
assert os.pread(fd, 1 << 20, 0) == open('one', 'rb').read()
w = os.open(a, os.O_WRONLY | os.O_APPEND)
os.write(w, open('more', 'rb').read())
os.close(w)
os.setxattr(m, 'user.drx.commit', b'1')
want = open('one', 'rb').read() + open('more', 'rb').read()
end = time.monotonic() + 2
while os.pread(fd, 1 << 20, 0) != want:
    assert time.monotonic() < end, 'the open descriptor reads %d bytes' % len(os.pread(fd, 1 << 20, 0))
    time.sleep(0.002)
os.close(fd)
PY
}

# Found in the multi-mount audit of 2026-12-07: a name whose type changed
# behind a mount (removed and made anew as a directory, a file, an array
# through another mount, or in the store) was still the old type's inode
# to the kernel for its entry timeout: a stat failed with EIO (the kernel
# marks such an inode bad), cat of a directory become a file ENOTDIR, ls
# of a file become a directory EIO.  Now the daemon answers ESTALE for a
# type other than it last told, and the kernel looks the name up again
# and retries, as on NFS.
@test "a name whose type changed through another mount: stat, cat and ls show the new one at once" {
    blind_mount
    mkdir -p "$S/ty"
    echo f >"$S/ty/f2d"
    mkdir "$S/ty/d2f"
    "$DRX" create "$S/ty/a2f" --type u8 --shape 3 --chunk 3
    echo f >"$S/ty/f2d_ls"
    echo f >"$S/ty/f2a"
    # the blind mount learns each name's type
    stat "$BLIND/ty/f2d" "$BLIND/ty/d2f" "$BLIND/ty/a2f" "$BLIND/ty/f2d_ls" "$BLIND/ty/f2a" >/dev/null
    rm "$M/ty/f2d" "$M/ty/f2d_ls" "$M/ty/f2a"
    mkdir "$M/ty/f2d" "$M/ty/f2d_ls"
    touch "$M/ty/f2d_ls/in"
    rmdir "$M/ty/d2f"
    echo new >"$M/ty/d2f"
    "$DRX" rm "$S/ty/a2f"
    echo new >"$S/ty/a2f"
    "$DRX" create "$S/ty/f2a" --type u8 --shape 3 --chunk 3
    # the new files' sizes recorded now (the blind mount's open would wait
    # for the batched commit, up to 5 s)
    setfattr -n user.drx.commit -v 1 "$M"
    # one tick, the attribute timeout: then the kernel asks
    sleep 0.02
    run stat -c %F "$BLIND/ty/f2d"
    assert_success
    assert_output directory
    run cat "$BLIND/ty/d2f"
    assert_success
    assert_output new
    run cat "$BLIND/ty/a2f"
    assert_success
    assert_output new
    run ls "$BLIND/ty/f2d_ls"
    assert_success
    assert_output in
    run ls "$BLIND/ty/f2a"
    assert_success
    assert_line data
    # a symlink become a file (cat followed the link the kernel held:
    # EINVAL), within the entry timeout (1 s) of its lookup
    echo new >"$S/ty/target"
    ln -s target "$S/ty/l2f"
    cat "$BLIND/ty/l2f" >/dev/null
    rm "$M/ty/l2f"
    echo file >"$M/ty/l2f"
    setfattr -n user.drx.commit -v 1 "$M"
    sleep 0.02
    run cat "$BLIND/ty/l2f"
    assert_success
    assert_output file
    # names made, removed and renamed through the mount itself never get
    # ESTALE: an open directory renamed over a file's former name still
    # answers fstat (which the kernel asks by path)
    "$PY" - "$BLIND/ty" <<'PY'
import os, stat, sys
d = sys.argv[1]
os.mkdir(d + '/m1')
open(d + '/m2', 'w').close()
os.stat(d + '/m2')
os.unlink(d + '/m2')
fd = os.open(d + '/m1', os.O_RDONLY | os.O_DIRECTORY)
os.rename(d + '/m1', d + '/m2')
assert stat.S_ISDIR(os.fstat(fd).st_mode)
assert stat.S_ISDIR(os.stat(d + '/m2').st_mode)
os.close(fd)
os.rmdir(d + '/m2')
open(d + '/m2', 'w').write('y')
assert stat.S_ISREG(os.stat(d + '/m2').st_mode)
PY
}

@test "kill -9 during a copy of small files: no recorded size ahead of the data" {
    local k="$BATS_FILE_TMPDIR/k" ks="$BATS_FILE_TMPDIR/ks"
    mkdir -p "$ks" src
    "$DRX" init "$ks" >/dev/null
    for i in $(seq 300); do head -c $((4096 + i)) /dev/urandom >"src/f$i"; done
    mount_store "$ks" "$k"
    (cp -r src "$k/copy" 2>/dev/null || true) &
    local cpid=$!
    # kill the daemon while the copy runs (after some files landed)
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(ls "$ks/copy" 2>/dev/null | wc -l)" -ge 50 ] && break
        sleep 0.02
    done
    kill_daemon "$k"
    wait "$cpid" || true
    unmount_store "$k"
    fsck_after_crash "$ks"
    # every file that shows a size after remount has its bytes
    mount_store "$ks" "$k"
    local f n
    for f in "$k"/copy/*; do
        n=$(stat -c %s "$f")
        [ "$n" -eq 0 ] && continue
        cmp <(head -c "$n" "src/$(basename "$f")") "$f"
    done
    unmount_store "$k"
}

# recorded_size STORE REL: the size a striped file's metafile records
recorded_size() {
    sed -n 's/^size = \([0-9]*\)L;.*/\1/p' "$1/$2.nafs"
}

# now_s: seconds since the epoch, with nanoseconds
now_s() { date +%s.%N; }

@test "batched commit by default: the store gets the sizes at the commit, when asked, at fsync and at unmount" {
    local k="$BATS_FILE_TMPDIR/k" ks="$BATS_FILE_TMPDIR/kb" t0 t1
    mkdir -p "$ks" src
    "$DRX" init "$ks" >/dev/null
    for i in $(seq 50); do head -c $((4096 + i)) /dev/urandom >"src/f$i"; done
    mount_store "$ks" "$k"
    # a commit now: the next one by the clock is a whole window away
    setfattr -n user.drx.commit -v 1 "$k"
    t0=$(now_s)
    cp -r src "$k/a"
    # this mount shows the new sizes; the metafiles wait for the commit
    cmp src/f7 "$k/a/f7"
    local old=0
    for i in $(seq 50); do [ "$(recorded_size "$ks" "a/f$i")" -eq 0 ] || old=1; done
    t1=$(now_s)
    # within the default window (5 s, drxfs --help) every size is the old one
    if awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 4.5) }'; then
        [ "$old" -eq 0 ]
        # drx fsck waits for the commit, as another mount's lookup does:
        # the bytes not recorded yet are no crash's (it listed 50
        # "problems"); then the sizes are the commit's, which came by
        # itself (fsck does not ask for it)
        run "$DRX" fsck "$ks"
        assert_success
        assert_output "$ks: clean"
    else
        echo "# the copy took more than the window; old sizes not checked" >&3
    fi
    # the commit comes by itself within the window
    for ((i = 0; i < 150; i++)); do
        [ "$(recorded_size "$ks" a/f50)" = 4146 ] && break
        sleep 0.1
    done
    for i in $(seq 50); do [ "$(recorded_size "$ks" "a/f$i")" -eq $((4096 + i)) ]; done
    run "$DRX" fsck "$ks"
    assert_success
    # when asked
    setfattr -n user.drx.commit -v 1 "$k"
    cp -r src "$k/b"
    setfattr -n user.drx.commit -v 1 "$k"
    for i in $(seq 50); do [ "$(recorded_size "$ks" "b/f$i")" -eq $((4096 + i)) ]; done
    # fsync stays synchronous, and so does sync FILE
    "$PY" -c "
import os
fd = os.open('$k/synced', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'x' * 5000); os.fsync(fd); os.close(fd)"
    [ "$(recorded_size "$ks" synced)" -eq 5000 ]
    head -c 7000 /dev/urandom >"$k/synced2"
    sync "$k/synced2"
    [ "$(recorded_size "$ks" synced2)" -eq 7000 ]
    # drx on a path under the mount asks for the commit itself
    head -c 6000 /dev/urandom >"$k/viadrx"
    run "$DRX" stripe get "$k/viadrx"
    assert_line --index 1 "size=6000"
    # unmount commits everything
    cp -r src "$k/c"
    unmount_store "$k"
    for i in $(seq 50); do [ "$(recorded_size "$ks" "c/f$i")" -eq $((4096 + i)) ]; done
    run "$DRX" fsck "$ks"
    assert_success
    # -o commit_interval=0: recorded at each close
    mount_store "$ks" "$k" -o commit_interval=0
    head -c 9000 /dev/urandom >"$k/atclose"
    [ "$(recorded_size "$ks" atclose)" -eq 9000 ]
    unmount_store "$k"
}

@test "drx fsck of a store whose mount commits later than its wait reports the sizes pending, waiting once, not file by file" {
    local k="$BATS_FILE_TMPDIR/kl" ks="$BATS_FILE_TMPDIR/klb" i
    "$DRX" init "$ks" >/dev/null
    mount_store "$ks" "$k" -o commit_interval=100
    for i in 1 2 3; do head -c 70000 /dev/urandom >"$k/f$i"; done
    # 3 s (DRX_COMMIT_WAIT_MS; 10 by default) for the first, none for the
    # others: 9 s would be a wait per file (a hang guard, not a measurement)
    run timeout 7.5 env DRX_COMMIT_WAIT_MS=3000 "$DRX" fsck "$ks"
    assert_failure 1
    for i in 1 2 3; do
        assert_line --regexp "^f$i\.nafs: subfile 0 .* and the size is pending: a process holds its mark \(a mount's batched commit; fsck waits 3 s in all for them\)"
    done
    setfattr -n user.drx.commit -v 1 "$k"
    run "$DRX" fsck "$ks"
    assert_success
    unmount_store "$k"
}

@test "drx asks a mount to commit only when it is its own, reached through no symlink, and a stopped daemon does not hang it" {
    # readable by another user (nobody), as BATS_FILE_TMPDIR is not
    OWN=$(mktemp -d /tmp/drx-own-XXXXXX)
    chmod 755 "$OWN"
    mkdir -p "$OWN/s" "$OWN/real"
    "$DRX" init "$OWN/s" >/dev/null
    # a store writable by everyone (mode 0777) and mounted for them: the
    # kernel lets another user set an xattr on its root, so only drx's
    # own check keeps that user's drx from asking root's daemon
    chmod 0777 "$OWN/s"
    mount_store "$OWN/s" "$OWN/real/mnt" -o commit_interval=3600,allow_other
    setfattr -n user.drx.commit -v 1 "$OWN/real/mnt"
    head -c 6000 /dev/urandom >"$OWN/real/mnt/f"
    # not .drx/fresh: the daemon's thread moves inodes made ahead out of
    # fresh/new meanwhile, and chmod -R of a name just moved failed
    find "$OWN/s" -path "$OWN/s/.drx/fresh" -prune -o -exec chmod a+rX {} +
    # the mount reaches the other user, and its root takes their xattrs
    run setpriv --reuid=65534 --regid=65534 --clear-groups setfattr -n user.drx.probe -v 1 "$OWN/real/mnt"
    assert_success
    # another user's drx does not ask root's mount: the recorded size
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$DRX" stripe get "$OWN/real/mnt/f"
    assert_success
    assert_line --index 1 "size=0"
    # the mount point's parent covered (tmpfs) and the mount point a
    # symlink to a directory there: mountinfo still names the path, which
    # is not followed
    mount -t tmpfs -o size=1m none "$OWN/real"
    mkdir "$OWN/real/target"
    ln -s "$OWN/real/target" "$OWN/real/mnt"
    run "$DRX" stripe get "$OWN/real/mnt/f"
    assert_success
    run getfattr --absolute-names -n user.drx.commit "$OWN/real/target"
    assert_failure
    umount "$OWN/real"
    # a daemon that does not answer: drx warns and goes on
    local pid dpid i t
    pid=$(cat "$OWN/real/mnt.pid")
    kill -STOP "$pid"
    # every thread of the daemon stopped before drx asks: kill returns
    # before they are, and a worker that took the request first would
    # have it in hand while stopped (drx's thread then waits it out,
    # unkillable, and drx cannot exit until the daemon goes on)
    for ((i = 0; i < 100; i++)); do
        t=$(cat /proc/"$pid"/task/*/stat 2>/dev/null | awk '$3 != "T" && $3 != "t"' | wc -l)
        [ "$t" -eq 0 ] && break
        sleep 0.05
    done
    # (LeakSanitizer, in the ASan pass, would wait at exit for the thread
    # still blocked in the request: ptrace cannot stop it.)  drx runs in
    # the background: were it stuck anyway, the daemon goes on after 60 s
    # and the test fails rather than hangs
    env "$NO_LSAN" DRX_COMMIT_WAIT_MS=2000 "$DRX" stripe get "$OWN/real/mnt/f" >stopped.out 2>&1 &
    dpid=$!
    for ((i = 0; i < 600; i++)); do
        kill -0 "$dpid" 2>/dev/null || break
        sleep 0.1
    done
    kill -CONT "$pid"
    local st=0
    wait "$dpid" || st=$?
    [ "$i" -lt 600 ] || fail "drx did not end while the daemon was stopped: $(cat stopped.out)"
    [ "$st" -eq 0 ] || fail "drx: status $st: $(cat stopped.out)"
    run cat stopped.out
    assert_output --partial "no answer to the commit request in 2 s"
    # the caller's own mount is asked
    run "$DRX" stripe get "$OWN/real/mnt/f"
    assert_line --index 1 "size=6000"
    cleanup_owner_test
}

@test "batched commits every second: kill -9 during a small-file copy leaves no recorded size ahead of the data" {
    local k="$BATS_FILE_TMPDIR/k" ks="$BATS_FILE_TMPDIR/kc"
    mkdir -p "$ks" src
    "$DRX" init "$ks" >/dev/null
    for i in $(seq 300); do head -c $((4096 + i)) /dev/urandom >"src/f$i"; done
    mount_store "$ks" "$k" -o commit_interval=1
    cp -r src "$k/first"
    setfattr -n user.drx.commit -v 1 "$k"
    (cp -r src "$k/copy" 2>/dev/null || true) &
    local cpid=$! i
    for ((i = 0; i < 200; i++)); do
        [ "$(ls "$ks/copy" 2>/dev/null | wc -l)" -ge 50 ] && break
        sleep 0.02
    done
    kill_daemon "$k"
    wait "$cpid" || true
    unmount_store "$k"
    fsck_after_crash "$ks"
    mount_store "$ks" "$k"
    diff -r src "$k/first"
    local f n
    for f in "$k"/copy/*; do
        n=$(stat -c %s "$f")
        [ "$n" -eq 0 ] && continue
        cmp <(head -c "$n" "src/$(basename "$f")") "$f"
    done
    unmount_store "$k"
}

# inval_waits PID: a thread of PID or of a child of it waits in the kernel
# to drop a page of the mount (FUSE_NOTIFY_INVAL_INODE on a locked page).
inval_waits() {
    local p
    for p in "$1" $(pgrep -P "$1"); do
        grep -qs invalidate_inode_pages2 /proc/"$p"/task/*/stack && return 0
    done
    return 1
}

@test "kill -9 while an invalidation waits on a page under I/O: the daemon exits and the mount fails at once instead of hanging" {
    # The stripe directory of s1 lies on another drxfs mount (m0), which
    # is stopped: a read of f through m1 then waits in m1's daemon, its
    # page locked, while a change of f's metafile makes m1 drop f's pages.
    local s0="$BATS_TEST_TMPDIR/s0" s1="$BATS_TEST_TMPDIR/s1" i pid relay reader
    INV_M0="$BATS_TEST_TMPDIR/m0" INV_M1="$BATS_TEST_TMPDIR/m1"
    "$DRX" init "$s0" >/dev/null
    mount_store "$s0" "$INV_M0"
    mkdir "$INV_M0/stripes"
    "$DRX" init "$s1" --stripe-dirs "$INV_M0/stripes" >/dev/null
    mount_store "$s1" "$INV_M1"
    head -c 4M /dev/urandom >"$INV_M1/f"
    # a new mount: none of f's pages in the kernel's cache
    unmount_store "$INV_M1"
    mount_store "$s1" "$INV_M1"
    pid=$(cat "$INV_M1.pid")
    relay=$(relay_of "$pid")
    "$PY" -c '
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 1 << 20, prot=mmap.PROT_READ)
print("mapped", flush=True)
while not os.path.exists("go"):
    time.sleep(0.02)
m[4096]' "$INV_M1/f" >reader.out 2>&1 &
    local reader=$!
    for ((i = 0; i < 100; i++)); do grep -q mapped reader.out && break; sleep 0.05; done
    kill -STOP "$(cat "$INV_M0.pid")"
    # the fault's READ reaches m1's daemon, whose pread waits for m0
    touch go
    sleep 0.3
    touch "$s1/f.nafs"
    for ((i = 0; i < 100; i++)); do inval_waits "$pid" && break; sleep 0.05; done
    inval_waits "$pid" || fail "no invalidation waited on f's page: $(cat reader.out)"
    kill -9 "$pid"
    # the killed daemon's closes go to m0
    kill -CONT "$(cat "$INV_M0.pid")"
    for ((i = 0; i < 50; i++)); do
        daemon_gone "$pid" && ! kill -0 "$relay" 2>/dev/null && break
        sleep 0.1
    done
    daemon_gone "$pid" || {
        stuck_stacks "$pid"
        fuse_abort "$INV_M1"
        fail "drxfs did not exit after kill -9"
    }
    ! kill -0 "$relay" 2>/dev/null || { stuck_stacks "$relay"; fail "its relay did not exit"; }
    run timeout 5 stat "$INV_M1"
    assert_failure
    assert_output --partial "not connected"
    wait "$reader" || true # SIGBUS: its mapping lost the connection
    unmount_store "$INV_M1"
    unmount_store "$INV_M0"
    INV_M0= INV_M1=
}

# relay_of PID: the pid of drxfs PID's drx-inval child, waited for up to
# 5 s (the mount may be ready before the forked relay has exec'd and
# taken its name)
relay_of() {
    local i r
    for ((i = 0; i < 100; i++)); do
        r=$(pgrep -P "$1" -x drx-inval) && break
        sleep 0.05
    done
    [ -n "$r" ] || fail "no invalidation relay beside drxfs $1"
    echo "$r"
}

# relay_mount STORE: STORE mounted at TERM_MNT; pid is drxfs's, relay its
# drx-inval child's (the caller's variables)
relay_mount() {
    mount_store "$1" "$TERM_MNT"
    pid=$(cat "$TERM_MNT.pid")
    relay=$(relay_of "$pid")
}

# relay_store STORE: a new store, mounted at TERM_MNT ($BATS_TEST_TMPDIR/m)
# by relay_mount
relay_store() {
    TERM_MNT="$BATS_TEST_TMPDIR/m"
    "$DRX" init "$1" >/dev/null
    relay_mount "$1"
}

# both_exit PID RELAY WHAT: drxfs PID and its relay RELAY exit within 5 s
# of WHAT (their kernel stacks and a failure when not)
both_exit() {
    local i
    for ((i = 0; i < 50; i++)); do
        daemon_gone "$1" && ! kill -0 "$2" 2>/dev/null && break
        sleep 0.1
    done
    daemon_gone "$1" || { stuck_stacks "$1"; stuck_stacks "$2"; fail "drxfs did not exit after $3"; }
    ! kill -0 "$2" 2>/dev/null || { stuck_stacks "$2"; fail "its relay did not exit after $3"; }
}

# stop_under_traffic STORE PID RELAY LABEL: a, b, c (striped, at least
# 2 MiB) of the mount TERM_MNT written behind the mount, written through
# it and read, then a SIGTERM of drxfs PID: it and its relay RELAY must
# exit within 5 s (stacks and LABEL when not); the jobs are stopped.
stop_under_traffic() {
    local s=$1 pid=$2 relay=$3 f i
    (while :; do for f in a b c; do
        head -c 1M /dev/urandom | dd of="$s/$f" bs=64k conv=notrunc status=none
    done; done) 2>/dev/null &
    TERM_JOBS="$!"
    (while :; do for f in a b c; do
        dd if=/dev/urandom of="$TERM_MNT/$f" bs=64k count=4 seek=$((RANDOM % 20)) conv=notrunc status=none
    done; done) 2>/dev/null &
    TERM_JOBS="$TERM_JOBS $!"
    (while :; do cat "$TERM_MNT/a" "$TERM_MNT/b" "$TERM_MNT/c" >/dev/null || sleep 0.01; done) 2>/dev/null &
    TERM_JOBS="$TERM_JOBS $!"
    sleep 0.5
    kill -TERM "$pid"
    both_exit "$pid" "$relay" "SIGTERM ($4)"
    kill -9 $TERM_JOBS 2>/dev/null || true
    wait $TERM_JOBS 2>/dev/null || true
    TERM_JOBS=
    unmount_store "$TERM_MNT"
}

@test "SIGTERM under writes and invalidations: drxfs and its relay exit (a request libfuse dropped at exit held the page an invalidation waited on)" {
    # libfuse's workers drop a request they read as the loop ends; its
    # pages stay locked until the device closes, so the kernel cache's
    # thread must not be waited for with the relay still waiting on them.
    local s="$BATS_TEST_TMPDIR/s" it f pid relay
    TERM_MNT="$BATS_TEST_TMPDIR/m"
    "$DRX" init "$s" >/dev/null
    for ((it = 0; it < 10; it++)); do
        relay_mount "$s"
        for f in a b c; do head -c 2M /dev/urandom >"$TERM_MNT/$f"; done
        stop_under_traffic "$s" "$pid" "$relay" "iteration $it"
    done
    TERM_MNT=
}

@test "the invalidation relay killed alone is replaced at the next page invalidation; a SIGTERM under traffic then still ends drxfs" {
    # Without a relay the daemon invalidates pages itself, and its own
    # invalidation may then wait on a page that a request libfuse dropped
    # at exit holds: the stop hung (1 time in 10).
    local s="$BATS_TEST_TMPDIR/s" i f pid relay new dir sub killed
    relay_store "$s"
    head -c 1M /dev/urandom >"$TERM_MNT/a"
    # a's first 64 KiB extent is in its first subfile
    read -r dir sub < <(sed -n 's/.*dir = \([0-9]*\); name = "\([^"]*\)".*/\1 \2/p' "$s/a.nafs" | head -1)
    kill -9 "$relay"
    killed=$relay
    for ((i = 0; i < 3; i++)); do
        cp "$TERM_MNT/a" want.bin # its pages cached
        head -c 64K /dev/urandom | dd of=want.bin conv=notrunc status=none
        dd if=want.bin of="$s/.drx/stripes/$dir/$sub" bs=64K count=1 conv=notrunc status=none
        # the kernel cache's thread sees the metafile change and drops a's
        # pages through a new relay
        touch "$s/a.nafs"
        # (a killed one may stay a zombie until the stop reaps it, and
        # between the reaping and the fork there is none)
        for ((f = 0; f < 100; f++)); do
            new=$(pgrep -P "$pid" -x drx-inval | grep -vxF -e "$killed" | tail -1) || true
            [ -n "$new" ] && break
            sleep 0.05
        done
        [ -n "$new" ] || fail "no new relay after $relay was killed"
        cmp want.bin "$TERM_MNT/a"
        relay=$new
        if [ "$i" -lt 2 ]; then
            kill -9 "$relay"
            killed+=$'\n'"$relay"
        fi
    done
    grep -q "invalidation relay (pid [0-9]*) is gone; started another" "$TERM_MNT.log" ||
        fail "no log line of the new relay: $(cat "$TERM_MNT.log")"
    for f in b c; do head -c 2M /dev/urandom >"$TERM_MNT/$f"; done
    stop_under_traffic "$s" "$pid" "$relay" "after the relay was replaced"
    TERM_MNT=
}

# relay_waited PID: a thread of drxfs PID waits for its relay's answer
relay_waited() {
    grep -qs __unix_dgram_recvmsg /proc/"$1"/task/*/stack
}

@test "a stopped invalidation relay holds up only the invalidations: the mount serves, unmounts, and drxfs exits" {
    # drxfs waited for ever for its stopped relay after the unmount
    local s="$BATS_TEST_TMPDIR/s" i pid relay
    relay_store "$s"
    head -c 1M /dev/urandom >"$TERM_MNT/a"
    head -c 1M /dev/urandom >b.bin
    cp b.bin "$TERM_MNT/b"
    cat "$TERM_MNT/a" >/dev/null
    STOPPED_RELAY=$relay
    kill -STOP "$relay"
    touch "$s/a.nafs"
    for ((i = 0; i < 100; i++)); do relay_waited "$pid" && break; sleep 0.05; done
    relay_waited "$pid" || fail "no invalidation of a waited for the relay"
    head -c 64K /dev/urandom | dd of=b.bin conv=notrunc status=none
    timeout 5 dd if=b.bin of="$TERM_MNT/b" bs=64K count=1 conv=notrunc status=none
    run timeout 5 cmp b.bin "$TERM_MNT/b"
    assert_success
    run timeout 5 fusermount3 -u "$TERM_MNT"
    assert_success
    both_exit "$pid" "$relay" "the unmount"
    STOPPED_RELAY=
    unmount_store "$TERM_MNT"
    TERM_MNT=
}

@test "^Z to drxfs -f's process group leaves its relay running: a kill -9 of drxfs then ends the mount at once" {
    # the relay stopped at SIGTSTP and then held the dead drxfs's
    # connection: the mount hung (SIGQUIT, ^\\, is ignored here already:
    # bash starts background jobs so)
    local s="$BATS_TEST_TMPDIR/s" i pid relay
    relay_store "$s"
    head -c 1M /dev/urandom >"$TERM_MNT/a"
    STOPPED_RELAY=$relay
    kill -TSTP "$pid" "$relay"
    sleep 0.3
    [ "$(awk '{ print $3 }' /proc/"$relay"/stat)" != T ] || fail "the relay stopped at SIGTSTP"
    kill -9 "$pid"
    both_exit "$pid" "$relay" "kill -9"
    STOPPED_RELAY=
    run timeout 5 stat "$TERM_MNT"
    assert_failure
    assert_output --partial "not connected"
    unmount_store "$TERM_MNT"
    TERM_MNT=
}

@test "a relay that could not be started for want of descriptors is started at a later invalidation" {
    # a failed start (EMFILE) left the daemon without a relay for good
    local s="$BATS_TEST_TMPDIR/s" i pid relay new free f
    relay_store "$s"
    head -c 1M /dev/urandom >"$TERM_MNT/a"
    cat "$TERM_MNT/a" >/dev/null
    kill -9 "$relay"
    # no descriptor left to drxfs: the lowest free one is its limit
    for ((free = 0; ; free++)); do [ -e "/proc/$pid/fd/$free" ] || break; done
    prlimit --pid "$pid" --nofile="$free:"
    touch "$s/a.nafs"
    for ((i = 0; i < 100; i++)); do
        grep -q "invalidation relay: Too many open files" "$TERM_MNT.log" && break
        sleep 0.05
    done
    prlimit --pid "$pid" --nofile=1024:
    grep -q "invalidation relay: Too many open files" "$TERM_MNT.log" ||
        fail "no failed start of a relay: $(cat "$TERM_MNT.log")"
    for ((i = 0; i < 5; i++)); do
        touch "$s/a.nafs"
        for ((f = 0; f < 20; f++)); do
            new=$(pgrep -P "$pid" -x drx-inval) && break
            sleep 0.05
        done
        [ -n "$new" ] && break
    done
    [ -n "$new" ] || fail "no relay started after the descriptors came back: $(cat "$TERM_MNT.log")"
    unmount_store "$TERM_MNT"
    TERM_MNT=
}

@test "the relay is a fresh image of drxfs, exec'd after the fork: named drx-inval (which pkill drxfs does not match), holding its three descriptors and the log only" {
    # Forked from the threaded daemon, the child took locks (malloc's, a
    # sanitizer's) that another thread may have held at the fork; exec'd,
    # it starts clean.
    local pid relay fds
    relay_store "$BATS_TEST_TMPDIR/s"
    assert_equal "$(tr '\0' ' ' </proc/"$relay"/cmdline)" "drx-inval "
    assert_equal "$(readlink /proc/"$relay"/exe)" "$(readlink /proc/"$pid"/exe)"
    fds=$(ls /proc/"$relay"/fd | sort -n | tr '\n' ' ')
    assert_equal "$fds" "0 1 2 3 4 5 "
    [ "$(readlink /proc/"$relay"/fd/4)" = /dev/fuse ] || fail "fd 4 of the relay: $(readlink /proc/"$relay"/fd/4)"
    # the kill typed for the daemon leaves the relay to finish: pkill and
    # killall match names as pgrep does (the daemon is matched, not it)
    pgrep drxfs | grep -qx "$pid"
    ! pgrep drxfs | grep -qx "$relay"
    ! pgrep -f drxfs | grep -qx "$relay"
    ! pgrep -x drxfs | grep -qx "$relay"
    # drxfs started by hand under that name is not a relay
    run timeout 5 bash -c 'exec -a drx-inval "$1"' _ "$DRXFS"
    assert_failure
    [ "$status" -ne 124 ] || fail "drxfs named drx-inval waited: $output"
    unmount_store "$TERM_MNT"
    TERM_MNT=
}

@test "utimes of a file waiting for the batched commit: no size recorded then, the times survive the commit" {
    local k="$BATS_FILE_TMPDIR/k" ks="$BATS_FILE_TMPDIR/kt" t0 t1
    mkdir -p "$ks"
    "$DRX" init "$ks" >/dev/null
    mount_store "$ks" "$k"
    setfattr -n user.drx.commit -v 1 "$k"
    head -c 5000 /dev/urandom >src1
    head -c 6000 /dev/urandom >src2
    head -c 7000 /dev/urandom >src3
    t0=$(now_s)
    cp src1 "$k/f1"
    cp src2 "$k/f2"
    cp src3 "$k/f3"
    touch -m -d "2001-02-03 04:05:06.5" "$k/f1"
    touch -a -d "2002-03-04 05:06:07" "$k/f2"
    touch -d "2003-04-05 06:07:08" "$k/f3"
    # f3 written again after its utimes: mtime is that write's
    printf more >>"$k/f3"
    t1=$(now_s)
    # the utimes recorded no size (within the window the metafile waits)
    if awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 4.5) }'; then
        [ "$(recorded_size "$ks" f1)" -eq 0 ]
    fi
    assert_equal "$(stat -c %y "$k/f1")" "2001-02-03 04:05:06.500000000 +0000"
    setfattr -n user.drx.commit -v 1 "$k"
    # the times set survive the metafile's rewrite, in the store and the
    # mount (atimes first: reading a metafile here moves its atime)
    assert_equal "$(TZ=UTC stat -c %x "$ks/f2.nafs")" "2002-03-04 05:06:07.000000000 +0000"
    assert_equal "$(TZ=UTC stat -c %x "$ks/f3.nafs")" "2003-04-05 06:07:08.000000000 +0000"
    for p in "$ks/f1.nafs" "$k/f1"; do
        assert_equal "$(TZ=UTC stat -c %y "$p")" "2001-02-03 04:05:06.500000000 +0000"
    done
    [ "$(recorded_size "$ks" f1)" -eq 5000 ]
    [ "$(recorded_size "$ks" f2)" -eq 6000 ]
    [ "$(recorded_size "$ks" f3)" -eq 7004 ]
    [ "$(stat -c %Y "$ks/f3.nafs")" -ge "${t0%.*}" ]
    cmp src1 "$k/f1"
    cmp <(cat src3; printf more) "$k/f3"
    unmount_store "$k"
    # and after a remount
    mount_store "$ks" "$k"
    assert_equal "$(TZ=UTC stat -c %y "$k/f1")" "2001-02-03 04:05:06.500000000 +0000"
    unmount_store "$k"
}

@test "rename of a file waiting for the batched commit: to a new name its size stays pending, over a file it is recorded first" {
    local k="$BATS_FILE_TMPDIR/k" ks="$BATS_FILE_TMPDIR/kr" t0 t1
    mkdir -p "$ks"
    "$DRX" init "$ks" >/dev/null
    mount_store "$ks" "$k"
    printf old >"$k/d"
    setfattr -n user.drx.commit -v 1 "$k"
    head -c 5000 /dev/urandom >src1
    head -c 6000 /dev/urandom >src2
    t0=$(now_s)
    cp src1 "$k/a"
    mv "$k/a" "$k/b"
    cp src2 "$k/c"
    mv "$k/c" "$k/d"
    t1=$(now_s)
    # over d: recorded before the rename, as ext4 flushes a replacement
    [ "$(recorded_size "$ks" d)" -eq 6000 ]
    # to the new name b: still waiting (within the 5 s window)
    if awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 4.5) }'; then
        [ "$(recorded_size "$ks" b)" -eq 0 ]
    fi
    cmp src1 "$k/b"
    [ ! -e "$ks/a.nafs" ]
    setfattr -n user.drx.commit -v 1 "$k"
    [ "$(recorded_size "$ks" b)" -eq 5000 ]
    [ ! -e "$ks/a.nafs" ]
    cmp src2 "$k/d"
    run "$DRX" fsck "$ks"
    assert_success
    unmount_store "$k"
    mount_store "$ks" "$k"
    cmp src1 "$k/b"
    cmp src2 "$k/d"
    unmount_store "$k"
}
