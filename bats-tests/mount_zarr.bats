#!/usr/bin/env bats
# The zarr/ group of an array directory: a Zarr v2 group read and written in
# place by zarr-python, xarray and dask (Debian 12's), each chunk key a file
# holding that chunk's bytes of the .xta.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt"
    "$DRX" init "$S" >/dev/null
    # temp(time, lat, lon) with coordinates time and lat beside it
    "$DRX" create "$S/temp" --type f64 --shape 6x5x7 --chunk 4x2x3 --dims time,lat,lon --fill -999
    "$PY" -c "import numpy as np; np.arange(210, dtype='<f8').tofile('$BATS_FILE_TMPDIR/temp.raw')"
    "$DRX" put "$S/temp" <"$BATS_FILE_TMPDIR/temp.raw"
    "$DRX" create "$S/time" --type f64 --shape 8 --chunk 3 --fill -1
    "$PY" -c "import numpy as np; (np.arange(8) * 10.0).tofile('$BATS_FILE_TMPDIR/time.raw')"
    "$DRX" put "$S/time" <"$BATS_FILE_TMPDIR/time.raw"
    "$DRX" attr set "$S/time" units "days since 2000-01-01"
    "$DRX" create "$S/lat" --type f32 --shape 5 --chunk 5 --fill 99
    "$PY" -c "import numpy as np; np.linspace(-60, 60, 5).astype('<f4').tofile('$BATS_FILE_TMPDIR/lat.raw')"
    "$DRX" put "$S/lat" <"$BATS_FILE_TMPDIR/lat.raw"
    "$DRX" attr set "$S/temp" units K
    mount_store "$S" "$M"
}

teardown_file() {
    unmount_store "$M"
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    unmount_store "$BATS_TEST_TMPDIR/ro"
    unmount_store "$BATS_TEST_TMPDIR/sm"
    if mountpoint -q "$BATS_TEST_TMPDIR/small"; then
        umount "$BATS_TEST_TMPDIR/small" || umount -l "$BATS_TEST_TMPDIR/small"
    fi
    if [ -n "${RV:-}" ]; then
        unmount_store "$RV/m"
        rm -rf "$RV"
    fi
}

# xta_sum ARRAY: checksum of the array's chunk file
xta_sum() {
    md5sum <"$S/$1.xta"
}

# key_want ARRAY KEY: the bytes chunk key KEY of ARRAY should hold (the
# array as `drx get` gives it, padded with the fill to whole chunks), on
# stdout
key_want() {
    "$PY" - "$DRX" "$S/$1" "$2" <<'PY'
import json, subprocess, sys
import numpy as np
drx, arr, key = sys.argv[1:]
info = json.loads(subprocess.run([drx, "info", arr, "--json"], capture_output=True, check=True).stdout)
dt = np.dtype(info["npy_descr"])
shape, chunk, grid = info["bounds"], info["chunk"], info["chunk_grid"]
full = np.frombuffer(subprocess.run([drx, "get", arr], capture_output=True, check=True).stdout, dt)
padded = np.full([g * c for g, c in zip(grid, chunk)], float(info["fill"]), dt)
padded[tuple(slice(0, n) for n in shape)] = full.reshape(shape)
idx = [int(x) for x in key.split(".")]
sys.stdout.buffer.write(padded[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunk))].tobytes())
PY
}

# pages FILE: how many of FILE's pages the kernel's page cache holds (fincore
# opens the file: pages kept across that open count)
pages() {
    fincore --raw --noheadings --output PAGES "$1"
}

@test "zarr/ holds .zgroup, .zattrs, .zmetadata and one directory per variable; views have none" {
    run ls -a "$M/temp/zarr"
    assert_success
    assert_output "$(printf '%s\n' . .. .zattrs .zgroup .zmetadata lat temp time)"
    run ls "$M/temp"
    assert_line zarr
    run ls "$M/temp/dim0=1:3"
    refute_line zarr
    run stat "$M/temp/dim0=1:3/zarr"
    assert_failure
    # st_size is what a reader gets, for every metadata file
    for f in .zgroup .zattrs .zmetadata temp/.zarray temp/.zattrs lat/.zarray time/.zattrs; do
        [ "$(stat -c %s "$M/temp/zarr/$f")" -eq "$(cat "$M/temp/zarr/$f" | wc -c)" ]
    done
    "$PY" - "$M/temp/zarr" <<'PY'
import json, sys
d = sys.argv[1]
assert json.load(open(d + "/.zgroup")) == {"zarr_format": 2}
assert json.load(open(d + "/.zattrs")) == {}
za = json.load(open(d + "/temp/.zarray"))
assert za == {"chunks": [4, 2, 3], "compressor": None, "dimension_separator": ".",
              "dtype": "<f8", "fill_value": -999.0, "filters": None, "order": "C",
              "shape": [6, 5, 7], "zarr_format": 2}, za
assert json.load(open(d + "/temp/.zattrs")) == {"_ARRAY_DIMENSIONS": ["time", "lat", "lon"],
                                                 "units": "K"}
# coordinates at the dimension's length, with their own chunks and attributes
t = json.load(open(d + "/time/.zarray"))
# no fill_value for coordinates, as data.nc gives them no _FillValue
assert t["shape"] == [6] and t["chunks"] == [3] and t["fill_value"] is None, t
assert json.load(open(d + "/time/.zattrs")) == {"_ARRAY_DIMENSIONS": ["time"],
                                                 "units": "days since 2000-01-01"}
m = json.load(open(d + "/.zmetadata"))
assert m["zarr_consolidated_format"] == 1
meta = m["metadata"]
assert sorted(meta) == sorted([".zattrs", ".zgroup", "temp/.zarray", "temp/.zattrs",
                               "lat/.zarray", "lat/.zattrs", "time/.zarray", "time/.zattrs"])
for k, v in meta.items():
    assert json.load(open(d + "/" + k)) == v, k
PY
}

@test "xarray.open_zarr gives the array, its dimensions, attributes and coordinates lazily" {
    "$PY" - "$M/temp/zarr" "$BATS_FILE_TMPDIR/temp.raw" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_zarr(sys.argv[1])
t = ds.temp
assert t.dims == ("time", "lat", "lon") and t.attrs["units"] == "K", t
assert t.chunks == ((4, 2), (2, 2, 1), (3, 3, 1)), t.chunks  # dask, lazily
assert sorted(ds.coords) == ["lat", "time"], list(ds.coords)
assert ds.lat.values.tolist() == np.linspace(-60, 60, 5).astype("f4").tolist()
assert ds.time.dtype.kind == "M"  # decoded through its units
want = np.fromfile(sys.argv[2], "<f8").reshape(6, 5, 7)
assert np.array_equal(t.values, want)
assert float(t.isel(time=slice(1, 5), lon=2).sum()) == want[1:5, :, 2].sum()
PY
}

@test "a coordinate holding its own fill (lon 0, time 0 with the default fill 0) reads as a value, not missing, in open_zarr as in data.nc" {
    mkdir "$S/c0"
    "$DRX" create "$S/c0/sst" --type f32 --shape 3x4 --chunk 2x4 --dims time,lon --fill -1
    "$DRX" create "$S/c0/lon" --type f64 --shape 4 --chunk 4
    "$DRX" create "$S/c0/time" --type i64 --shape 3 --chunk 3
    "$DRX" attr set "$S/c0/time" units "days since 2000-01-01"
    "$PY" -c "import numpy as np; np.array([0, 90, 180, 270], '<f8').tofile('lon.raw'); np.arange(3, dtype='<i8').tofile('time.raw')"
    "$DRX" put "$S/c0/lon" <lon.raw
    "$DRX" put "$S/c0/time" <time.raw
    "$PY" - "$M/c0/sst" <<'PY'
import sys
import numpy as np
import xarray as xr
z = xr.open_zarr(sys.argv[1] + "/zarr")
n = xr.open_dataset(sys.argv[1] + "/data.nc")
assert z.lon.values.tolist() == [0, 90, 180, 270], z.lon.values
assert str(z.time.values[0])[:10] == "2000-01-01", z.time.values
for c in ("lon", "time"):
    assert np.array_equal(z[c].values, n[c].values), (c, z[c].values, n[c].values)
assert z.sst.sel(lon=0).shape == (3,)
PY
}

@test "every element type, several shapes and chunkings: each key is the chunk's bytes; zarr and xarray read drx get's values" {
    local arrays=() t i types=(i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 c64 c128)
    # under the sanitizers a type of each kind and size class (same paths)
    [ -z "${DRX_TEST_SANITIZED:-}" ] || types=(i16 u8 i64 f64 c64)
    for t in "${types[@]}"; do
        "$DRX" create "$S/z_$t" --type "$t" --shape 7x5 --chunk 3x2 --dims y,x --fill 7
        "$DRX" create "$S/v_$t" --type "$t" --shape 10 --chunk 4
        # grown along dims 1, 0 and 2: chunk addresses are no longer row-major
        "$DRX" create "$S/w_$t" --type "$t" --shape 4x3x5 --chunk 2x2x2 --fill 3
        "$DRX" extend "$S/w_$t" 1 2
        "$DRX" extend "$S/w_$t" 0 3
        "$DRX" extend "$S/w_$t" 2 2
        for i in z v w; do
            "$PY" -c "
import json, subprocess
import numpy as np
j = json.loads(subprocess.run(['$DRX', 'info', '$S/${i}_$t', '--json'], capture_output=True).stdout)
n = int(np.prod(j['bounds']))
dt = np.dtype(j['npy_descr'])
a = (np.arange(n) * 3 - 40)
a = a.astype(dt) if dt.kind != 'u' else (np.arange(n) * 3).astype(dt)
a.tofile('raw')"
            "$DRX" put "$S/${i}_$t" <raw
            arrays+=("${i}_$t")
        done
    done
    # a partly written one: chunks never written read as the fill
    "$DRX" create "$S/part" --type f32 --shape 9x4 --chunk 4x4 --fill nan
    "$DRX" extend "$S/part" 0 7
    "$PY" -c "import numpy as np; np.ones(8, '<f4').tofile('raw')"
    "$DRX" put "$S/part" dim0=2:4 <raw
    arrays+=(part)
    run "$PY" "$DRX_SOURCE/bats-tests/zarr_check.py" "$DRX" "$S" "$M" "${arrays[@]}"
    assert_success
    assert_output "$((${#types[@]} * 3 + 1)) arrays checked"
}

@test "fill_value as Zarr writes it: NaN, -Infinity, complex pairs, the largest u64" {
    "$DRX" create "$S/fn" --type f32 --shape 3 --chunk 2 --fill nan
    "$DRX" create "$S/fi" --type f64 --shape 3 --chunk 2 --fill -inf
    "$DRX" create "$S/fc" --type c128 --shape 3 --chunk 2 --fill 1.5,-2.5
    "$DRX" create "$S/fu" --type u64 --shape 3 --chunk 2 --fill 18446744073709551615
    "$PY" - "$M" <<'PY'
import json, sys
import numpy as np
import zarr
m = sys.argv[1]
fv = lambda a: json.load(open(f"{m}/{a}/zarr/{a}/.zarray"))["fill_value"]
assert fv("fn") == "NaN" and fv("fi") == "-Infinity" and fv("fc") == [1.5, -2.5], \
    (fv("fn"), fv("fi"), fv("fc"))
assert fv("fu") == 18446744073709551615
assert np.isnan(zarr.open(f"{m}/fn/zarr")["fn"].fill_value)
assert zarr.open(f"{m}/fc/zarr")["fc"].fill_value == complex(1.5, -2.5)
assert zarr.open(f"{m}/fi/zarr")["fi"].fill_value == -np.inf
z = zarr.open(f"{m}/fu/zarr")["fu"]
assert z.fill_value == np.uint64(18446744073709551615) and (z[:] == z.fill_value).all()
PY
}

@test "attribute values round-trip: drx attr, info (json.tool), data.nc, .zattrs" {
    "$DRX" create "$S/at" --type f64 --shape 4 --chunk 2 --dims x
    local s=$'quote " backslash \\ newline\n tab\t ünïcødé ∂x/∂t'
    "$DRX" attr set "$S/at" text "$s"
    "$DRX" attr set "$S/at" nans nan,inf,-inf,0.1 --type f64
    "$DRX" attr set "$S/at" big 18446744073709551615 --type u64
    "$DRX" attr set "$S/at" small -9223372036854775808 --type i64
    run "$DRX" attr get "$S/at" text
    assert_output "$s"
    run "$DRX" attr get "$S/at" big
    assert_output "18446744073709551615"
    run "$DRX" attr get "$S/at" small
    assert_output -- "-9223372036854775808"
    # drx attr prints NaN and the infinities as it reads them back
    local nans
    nans=$("$DRX" attr get "$S/at" nans)
    "$DRX" attr set "$S/at" nans2 "$nans" --type f64
    run "$DRX" attr get "$S/at" nans2
    assert_output "$nans"
    "$PY" -m json.tool "$M/at/info" >/dev/null
    "$DRX" info "$S/at" --json | "$PY" -m json.tool >/dev/null
    "$PY" - "$M/at" "$s" <<'PY'
import json, math, sys
import netCDF4
import zarr
d, s = sys.argv[1], sys.argv[2]
a = json.load(open(d + "/info"))["attrs"]
assert a["text"] == {"type": "string", "value": s}, a["text"]
assert a["nans"]["value"] == ["nan", "inf", "-inf", 0.1], a["nans"]
assert a["big"]["value"] == [18446744073709551615] and a["small"]["value"] == [-2**63]
z = json.load(open(d + "/zarr/at/.zattrs"))
assert z["text"] == s and z["big"] == 18446744073709551615 and z["small"] == -2**63, z
n = z["nans"]
assert math.isnan(n[0]) and n[1] == math.inf and n[2] == -math.inf and n[3] == 0.1, n
assert zarr.open(d + "/zarr")["at"].attrs["text"] == s
v = netCDF4.Dataset(d + "/data.nc").variables["at"]
assert v.getncattr("text") == s and int(v.getncattr("big")) == 18446744073709551615
assert int(v.getncattr("small")) == -2**63
n = v.getncattr("nans")
assert math.isnan(n[0]) and n[1] == math.inf and n[2] == -math.inf and n[3] == 0.1, n
n2 = v.getncattr("nans2")
assert math.isnan(n2[0]) and list(n2[1:]) == list(n[1:]), n2
PY
    # ncdump prints them as netCDF's CDL writes them
    run ncdump -h "$M/at/data.nc"
    assert_success
    assert_line --partial 'at:nans = NaN, Infinity, -Infinity, 0.1 ;'
    assert_line --partial 'at:big = 18446744073709551615ULL ;'
    assert_line --partial 'at:small = -9223372036854775808LL ;'
}

@test "dask computes a mean through open_zarr equal to numpy's" {
    "$DRX" create "$S/big" --type f32 --shape 200x150 --chunk 64x32 --dims y,x
    "$PY" -c "import numpy as np; np.random.default_rng(1).random(30000, dtype='f4').tofile('raw')"
    "$DRX" put "$S/big" <raw
    "$PY" - "$M/big/zarr" <<'PY'
import sys
import numpy as np
import xarray as xr
want = np.fromfile("raw", "<f4").reshape(200, 150)
ds = xr.open_zarr(sys.argv[1])
m = ds.big.mean(dim="x").compute(scheduler="threads")
assert np.allclose(m.values, want.mean(axis=1), rtol=1e-6), "row means differ"
assert np.isclose(float(ds.big.mean()), want.mean(dtype="f8"), rtol=1e-6)
assert np.isclose(float(ds.big.std()), want.std(dtype="f8"), rtol=1e-5)
PY
}

@test "zarr writes a region and to_zarr(region=...) writes into the array; drx get reads them back" {
    "$DRX" create "$S/wr" --type f64 --shape 9x7 --chunk 4x3 --dims time,lat --fill -1
    "$PY" -c "import numpy as np; np.arange(63, dtype='<f8').tofile('raw')"
    "$DRX" put "$S/wr" <raw
    "$PY" - "$M/wr/zarr" <<'PY'
import sys
import numpy as np
import xarray as xr
import zarr
z = zarr.open(sys.argv[1], mode="r+")["wr"]
z[1:6, 2:5] = -5.0        # partial chunks: zarr reads, merges, renames over the keys
z[8, :] = 100.0           # the edge chunks
# dask chunks along the Zarr chunks: its threads write three keys at once
ds = xr.Dataset({"wr": (("time", "lat"), np.full((4, 7), 42.0))}).chunk({"time": 4, "lat": 3})
ds.to_zarr(sys.argv[1], region={"time": slice(4, 8)})
PY
    "$DRX" get "$S/wr" >got
    "$PY" - <<'PY'
import numpy as np
want = np.arange(63, dtype="<f8").reshape(9, 7)
want[1:6, 2:5] = -5
want[4:8] = 42
want[8] = 100
got = np.fromfile("got", "<f8").reshape(9, 7)
assert np.array_equal(got, want), got
PY
    # beyond the bounds, edge chunks still hold the fill (SPEC section 3)
    "$DRX" extend "$S/wr" 0 3
    "$DRX" get "$S/wr" dim0=9: >tail
    "$PY" -c "import numpy as np; assert (np.fromfile('tail', '<f8') == -1).all()"
    # zarr deletes a chunk that holds only the fill (write_empty_chunks=False):
    # it reads as the fill
    "$PY" - "$M/wr/zarr" <<'PY'
import sys
import zarr
z = zarr.open_array(sys.argv[1] + "/wr", mode="r+", write_empty_chunks=False)
z[0:4, 0:3] = -1
assert (zarr.open(sys.argv[1])["wr"][0:4, 0:3] == -1).all()
PY
    "$DRX" get "$S/wr" dim0=0:4 dim1=0:3 >c
    "$PY" -c "import numpy as np; assert (np.fromfile('c', '<f8') == -1).all()"
}

@test "to_zarr(append_dim=...), resize and consolidation with NaN and infinite attributes and a u64 fill past int64: accepted once, not refused after the fact" {
    mkdir "$S/nf"
    "$DRX" create "$S/nf/obs" --type f32 --shape 3x4 --chunk 2x4 --dims step,x --fill nan
    "$DRX" attr set "$S/nf/obs" --type f32 missing_value -- nan
    "$DRX" attr set "$S/nf/obs" --type f64 valid_max -- inf
    "$DRX" create "$S/nf/cnt" --type u64 --shape 4 --chunk 2 --dims n --fill 18446744073709551615
    "$PY" - "$M/nf" <<'PY'
import sys
import numpy as np
import xarray as xr
import zarr
d = sys.argv[1]
# it was: PermissionError renaming .zmetadata (the daemon's own document
# with NaN written back by Python's json) after the append had happened,
# so a retry appended twice
xr.Dataset({"obs": (("step", "x"), np.full((2, 4), 4.5, "f4"))}).to_zarr(
    d + "/obs/zarr", append_dim="step")
got = xr.open_zarr(d + "/obs/zarr", mask_and_scale=False).obs.values
assert got.shape == (5, 4), got.shape
assert np.isnan(got[:3]).all() and (got[3:] == 4.5).all(), got
# it was: EPERM for the u64 fill 2^64-1
z = zarr.open(d + "/cnt/zarr/cnt", mode="r+")
z.resize(6)
xr.Dataset({"cnt": (("n",), np.arange(2, dtype="u8"))}).to_zarr(d + "/cnt/zarr", append_dim="n")
zarr.consolidate_metadata(d + "/cnt/zarr")
got = zarr.open(d + "/cnt/zarr/cnt", mode="r")[:]
want = np.full(8, 2**64 - 1, "u8")
want[6:] = [0, 1]
assert np.array_equal(got, want), got
PY
    "$DRX" info "$S/nf/obs" | grep -q "^shape: *5 x 4"
    "$DRX" info "$S/nf/cnt" | grep -q "^shape: *8"
}

@test "to_zarr(append_dim=...) grows the array along any dimension without a coordinate variable; drx info, data.npy and data.nc agree" {
    mkdir "$S/ap"
    "$DRX" create "$S/ap/obs" --type f32 --shape 4x3 --chunk 3x2 --dims step,station --fill -1
    "$PY" - "$M/ap/obs" <<'PY'
import errno, json, os, sys
import numpy as np
import netCDF4
import xarray as xr
a = sys.argv[1]
xr.Dataset({"obs": (("step", "station"), np.arange(6, dtype="f4").reshape(2, 3))}).to_zarr(
    a + "/zarr", append_dim="step")
xr.Dataset({"obs": (("step", "station"), np.full((6, 2), 5, "f4"))}).to_zarr(
    a + "/zarr", append_dim="station")
want = np.full((6, 5), -1, "f4")
want[4:, :3] = np.arange(6).reshape(2, 3)
want[:, 3:] = 5
assert json.load(open(a + "/info"))["shape"] == [6, 5]
assert np.array_equal(np.load(a + "/data.npy"), want), np.load(a + "/data.npy")
assert np.array_equal(netCDF4.Dataset(a + "/data.nc")["obs"][:].data, want)
z = xr.open_zarr(a + "/zarr", mask_and_scale=False)
assert np.array_equal(z.obs.values, want)
# a growth that would make the daemon (root, past quotas) write more than
# 1 GiB of the fill (-1) is refused: drx extend is for that
za = json.load(open(a + "/zarr/obs/.zarray"))
t = a + "/zarr/obs/.zarray.big.partial"
with open(t, "w") as f:
    json.dump(dict(za, shape=[48000000, 5]), f)
try:
    os.rename(t, a + "/zarr/obs/.zarray")
    raise SystemExit("a 1.15 GB growth of fill was not refused")
except OSError as e:
    assert e.errno == errno.EFBIG, e
    os.unlink(t)
assert json.load(open(a + "/info"))["shape"] == [6, 5]
PY
    # each growth is one record, as drx extend makes
    run "$DRX" info "$S/ap/obs"
    assert_line --partial "dim 0: 4 -> 6"
    assert_line --partial "dim 1: 3 -> 5"
    grep -q "obs grown along dimension 1 by 2 (a zarr resize)" "$M.log"
    grep -q "ap/obs/zarr: a zarr resize that writes more than 1 GiB of fill is refused" "$M.log"
    [ "$(stat -c %s "$S/ap/obs.xta")" -lt 4096 ]
}

# Found in an earlier review (README, Known limitations): the metadata
# documents of the 16 groups used last were kept whatever their size, and
# an .xmd near its 64 MiB bound makes a group of about 134 MB.  Beside the
# group in use, at most 64 MiB of others are kept now.
@test "the zarr metadata kept for other groups is bounded in bytes: a huge group is made again, small ones stay" {
    local s="$BATS_TEST_TMPDIR/bs" m="$BATS_TEST_TMPDIR/bm"
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/big" --type u8 --shape 1 --chunk 1
    "$PY" "$DRX_SOURCE/bats-tests/xmd_gen.py" strings "$s/big.xmd"
    "$DRX" create "$s/small" --type f32 --shape 4x5 --chunk 2x5
    mount_store "$s" "$m" -o log_level=debug
    head -c 1 "$m/big/zarr/.zmetadata" >/dev/null
    head -c 1 "$m/small/zarr/.zmetadata" >/dev/null
    head -c 1 "$m/big/zarr/.zmetadata" >/dev/null
    head -c 1 "$m/small/zarr/.zmetadata" >/dev/null
    head -c 1 "$m/small/zarr/small/.zarray" >/dev/null
    unmount_store "$m"
    grep "zarr: metadata made" "$m.log"
    # big (over 64 MiB of text) is not kept beside small, so made twice
    [ "$(grep -c "big/zarr: metadata made" "$m.log")" -eq 2 ]
    grep -q "small/zarr: metadata made, [0-9]* bytes; 0 other groups kept, 0 bytes" "$m.log"
    # small (a few KiB) is kept beside big: made once
    [ "$(grep -c "small/zarr: metadata made" "$m.log")" -eq 1 ]
}

# zresize ARRAYDIR VAR SHAPE: a copy of VAR's .zarray with shape SHAPE (a
# JSON list) renamed over it, as zarr's resize does; prints the errno's
# name when the rename fails (the temporary removed), nothing when it works
zresize() {
    "$PY" - "$@" <<'PY'
import errno, json, os, sys
a, var, shape = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
key = a + "/zarr/" + var + "/.zarray"
t = key + ".grow.partial"
with open(t, "w") as f:
    json.dump(dict(json.load(open(key)), shape=shape), f)
try:
    os.rename(t, key)
except OSError as e:
    os.unlink(t)
    print(errno.errorcode[e.errno])
PY
}

# shape_of ARRAYDIR [VAR]: the shape in the array's info, or in VAR's .zarray
shape_of() {
    local doc="$1/info"
    [ -z "${2:-}" ] || doc="$1/zarr/$2/.zarray"
    "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["shape"])' "$doc"
}

# A .zarray grown along two dimensions at once is one commit: both growth
# records or none.  Here the first dimension's fill fits on the disk and the
# second's does not; the array used to keep the first growth.
@test "a zarr resize along two dimensions at once is all or nothing: a full disk at the second leaves the shape and the .xta as they were" {
    mkdir small
    mount -t tmpfs -o size=1m tmpfs small
    "$DRX" init small/s >/dev/null
    # one 32 KiB chunk of fill 7: dimension 0 to 128 adds one chunk, then
    # dimension 1 to 512 fourteen more
    "$DRX" create small/s/g --type f64 --shape 64x64 --chunk 64x64 --dims y,x --fill 7
    head -c 65536 /dev/zero >small/spare
    dd if=/dev/zero of=small/filler bs=4k status=none 2>/dev/null || true
    rm small/spare
    local xta0 xmd0
    xta0=$(md5sum <small/s/g.xta)
    xmd0=$(md5sum <small/s/g.xmd)
    mount_store small/s "$BATS_TEST_TMPDIR/sm"
    run zresize sm/g g '[128, 512]'
    assert_output ENOSPC
    [ "$(shape_of sm/g)" = "[64, 64]" ]
    [ "$(shape_of sm/g g)" = "[64, 64]" ]
    [ "$(md5sum <small/s/g.xta)" = "$xta0" ]
    [ "$(md5sum <small/s/g.xmd)" = "$xmd0" ]
    grep -q "g/zarr: growing g: .*(its shape unchanged)" "$BATS_TEST_TMPDIR/sm.log"
    run "$DRX" fsck small/s
    assert_success
    # with room, the same resize grows both dimensions in one commit
    rm small/filler
    run zresize sm/g g '[128, 512]'
    assert_output ""
    [ "$(shape_of sm/g)" = "[128, 512]" ]
    "$PY" -c 'import numpy as np, sys; assert (np.load(sys.argv[1]) == 7).all()' sm/g/data.npy
    run "$DRX" info small/s/g
    assert_line --partial "dim 0: 64 -> 128"
    assert_line --partial "dim 1: 64 -> 512"
    grep -q "g grown along dimension 0 by 64 (a zarr resize)" "$BATS_TEST_TMPDIR/sm.log"
    grep -q "g grown along dimension 1 by 448 (a zarr resize)" "$BATS_TEST_TMPDIR/sm.log"
    run "$DRX" fsck small/s
    assert_success
}

# An .xmd that is replaced rather than appended to (here its set-group-ID
# bit, which an append by the daemon would keep but a write by its owner
# would clear) is written whole from the growing handle: its history must
# be there (a handle of counts alone refused the commit with EINVAL).
@test "a zarr resize of an array with a history, whose .xmd is replaced whole, keeps every earlier growth" {
    "$DRX" create "$S/hist" --type i16 --shape 5x6 --chunk 2x4 --dims a,b
    "$DRX" extend "$S/hist" 0 3
    "$DRX" extend "$S/hist" 1 2
    chmod 2644 "$S/hist.xmd"
    run zresize "$M/hist" hist '[9, 11]'
    assert_output ""
    [ "$(shape_of "$M/hist")" = "[9, 11]" ]
    run "$DRX" info "$S/hist"
    assert_line --partial "dim 0: 5 -> 8"
    assert_line --partial "dim 1: 6 -> 8"
    assert_line --partial "dim 0: 8 -> 9"
    assert_line --partial "dim 1: 8 -> 11"
    run "$DRX" fsck "$S"
    assert_success
    "$DRX" rm "$S/hist"
}

@test "a zarr resize along a dimension with a coordinate variable, a shrink or another .zarray change is refused, changing nothing; drx extend and region= append instead" {
    mkdir "$S/ap2"
    "$DRX" create "$S/ap2/sst" --type f64 --shape 3x2 --chunk 2x2 --dims time,x --fill -1
    "$DRX" create "$S/ap2/time" --type i64 --shape 3 --chunk 2 --fill -1
    "$PY" -c "import numpy as np; np.arange(3, dtype='<i8').tofile('t.raw')"
    "$DRX" put "$S/ap2/time" <t.raw
    xmd=$(md5sum <"$S/ap2/sst.xmd")
    "$PY" - "$M/ap2/sst" <<'PY'
import json, sys
import numpy as np
import xarray as xr
a = sys.argv[1]
new = xr.Dataset({"sst": (("time", "x"), np.ones((2, 2)))}, coords={"time": [3, 4]})
try:
    new.to_zarr(a + "/zarr", append_dim="time")
    raise SystemExit("append_dim along a coordinate's dimension was not refused")
except PermissionError:
    pass
# a shrink, and a grown shape with another chunk shape, by hand
za = json.load(open(a + "/zarr/sst/.zarray"))
for change in ({"shape": [2, 2]}, {"shape": [5, 2], "chunks": [1, 2]}):
    d = dict(za, **change)
    t = a + "/zarr/sst/.zarray.tmp.partial"
    with open(t, "w") as f:
        json.dump(d, f)
    try:
        import os
        os.rename(t, a + "/zarr/sst/.zarray")
        raise SystemExit("refused .zarray change accepted: %r" % change)
    except PermissionError:
        os.unlink(t)
assert json.load(open(a + "/info"))["shape"] == [3, 2]
PY
    [ "$(md5sum <"$S/ap2/sst.xmd")" = "$xmd" ]
    # what the refusal says to do
    grep -q "dimension time has a coordinate variable: a zarr resize (append_dim) is refused" "$M.log"
    "$DRX" extend "$S/ap2/sst" time 2
    "$DRX" extend "$S/ap2/time" 0 2
    "$PY" - "$M/ap2/sst" <<'PY'
import sys
import numpy as np
import xarray as xr
a = sys.argv[1]
new = xr.Dataset({"sst": (("time", "x"), np.ones((2, 2)))}, coords={"time": [3, 4]})
new.to_zarr(a + "/zarr", region={"time": slice(3, 5)})
z = xr.open_zarr(a + "/zarr")
assert z.time.values.tolist() == [0, 1, 2, 3, 4], z.time.values
assert z.sst.values[3:].tolist() == [[1, 1], [1, 1]]
PY
}

@test "a zarr resize needs write access to the .xmd: another user who may write the chunks cannot grow the array" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    hostile_setup zarr
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/g" --type u8 --shape 4 --chunk 2 --dims step
    chmod -R a+rX "$s"
    chmod 666 "$s/g.xta" # the chunks are anyone's, the metadata root's (0644)
    mount_store "$s" "$m" -o allow_other
    zarr_grow_py "$RV/grow.py" chunk # a chunk first: his to write
    run nob "$PY" "$RV/grow.py" "$m"
    assert_success
    assert_output refused
    [ "$("$DRX" get "$s/g" -o - | od -An -tu1 | tr -s ' ')" = " 7 7 0 0" ]
    grep -q "a zarr resize needs write access to g.xmd: refused" "$m.log"
    # the owner of the .xmd may
    run "$PY" "$RV/grow.py" "$m"
    assert_output grown
    assert_equal "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["shape"])' "$m/g/info")" "[6]"
}

@test "an array named like a Zarr metadata key (.zgroup, .zattrs, .zarray, .zmetadata) has no zarr/, where xarray read its elements as missing" {
    mkdir "$S/zk"
    for n in .zgroup .zattrs .zarray .zmetadata; do
        run "$DRX" create "$S/zk/$n" --type f32 --shape 3 --chunk 2 --fill -1
        assert_success
        assert_output "drx: create: warning: $n is a Zarr metadata key: its directory at the mount has no zarr/ (rename the array for Zarr readers)"
        "$PY" -c "import numpy as np, sys; np.array([1, 2, 3], 'f4').tofile(sys.stdout.buffer)" |
            "$DRX" put "$S/zk/$n"
        # its variable's directory was the group's metadata file
        [ ! -e "$M/zk/$n/zarr" ]
        run ls -A "$M/zk/$n"
        refute_line zarr
        grep -q "zk/$n: no zarr/: an array named like a Zarr metadata key" "$M.log"
        cmp <("$PY" -c "import numpy as np, sys; np.array([1, 2, 3], 'f4').tofile(sys.stdout.buffer)") "$M/zk/$n/data"
    done
    # data.nc still reads its values
    run "$PY" -c "import xarray as xr; print(xr.open_dataset('$M/zk/.zgroup/data.nc')['_zgroup'].values.tolist())"
    assert_output "[1.0, 2.0, 3.0]"
}

@test "to_zarr(mode=\"w\") and zarr.open(mode=\"w\") are refused before any key is removed: the array keeps its data" {
    mkdir "$S/mw"
    "$DRX" create "$S/mw/w" --type f64 --shape 4x4 --chunk 2x2 --dims a,b
    "$PY" -c "import numpy as np; np.arange(16.).tofile('w.raw')"
    "$DRX" put "$S/mw/w" <w.raw
    "$PY" - "$M/mw/w" <<'PY'
import sys
import numpy as np
import xarray as xr
import zarr
a = sys.argv[1]
for f in (lambda: xr.Dataset({"w": (("a", "b"), np.ones((4, 4)))}).to_zarr(a + "/zarr", mode="w"),
          lambda: zarr.open(a + "/zarr/w", mode="w", shape=(4, 4), chunks=(2, 2), dtype="f8")):
    try:
        f()
        raise SystemExit("mode w was not refused")
    except PermissionError:
        pass
PY
    # removing a key stores the fill: the metadata, listed first, stops
    # the removal of the tree before any key
    cmp w.raw "$M/mw/w/data"
}

@test "to_zarr(mode=\"a\") of a new variable is refused, zarr saying only KeyError: the daemon's log says why" {
    run "$PY" -c "
import numpy as np, xarray as xr
xr.Dataset({'extra': (('time',), np.ones(6))}).to_zarr('$M/temp/zarr', mode='a')"
    assert_failure
    assert_output --partial "KeyError: 'extra/.zarray'"
    [ ! -e "$M/temp/zarr/extra" ]
    grep -q "temp/zarr/extra: not made: a zarr/ group holds the array and its coordinate variables only" "$M.log"
    # a new directory inside a variable's is the same refusal
    run mkdir "$M/temp/zarr/temp/sub"
    assert_failure
    grep -q "temp/zarr/temp/sub: not made" "$M.log"
}

@test "refused, changing nothing: a chunk of the wrong size, a metadata change, a key outside the grid, writing a key in place" {
    local before
    before=$(xta_sum temp)
    cp "$S/temp.xmd" xmd.before
    run "$PY" - "$M/temp/zarr/temp" <<'PY'
import errno, os, sys
d = sys.argv[1] + "/"
def put(key, data):
    tmp = d + key + ".0123abcd.partial"
    with open(tmp, "wb") as f:
        f.write(data)
    try:
        os.replace(tmp, d + key)
        return "stored"
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
chunk = 4 * 2 * 3 * 8
print("short", put("0.0.0", b"x" * (chunk - 1)))
print("long", put("0.0.0", b"x" * (chunk + 8)))
print("outside", put("2.0.0", b"x" * chunk))
print("malformed", put("0.0.00", b"x" * chunk))
za = open(d + ".zarray", "rb").read()
print("meta", put(".zarray", za.replace(b"-999.0", b"0.0")))
print("attrs", put(".zattrs", b'{"_ARRAY_DIMENSIONS": ["a", "b", "c"]}'))
print("same", put(".zarray", za))
print("same-json", put(".zarray", za.replace(b"    ", b" ")))
try:
    open(d + "0.0.0", "r+b")
except OSError as e:
    print("inplace", errno.errorcode[e.errno])
print(sorted(k for k in os.listdir(d) if "partial" in k))
PY
    assert_success
    assert_line "short EINVAL"
    assert_line "long EINVAL"
    assert_line "outside EPERM"
    assert_line "malformed EPERM"
    assert_line "meta EPERM"
    assert_line "attrs EPERM"
    assert_line "same stored"
    assert_line "same-json stored"
    assert_line "inplace EPERM"
    assert_line "[]"
    [ "$(xta_sum temp)" = "$before" ]
    cmp xmd.before "$S/temp.xmd"
    grep -q "temp/0.0.0: a chunk is 192 bytes, not 191: nothing stored" "$M.log"
    grep -q "temp/2.0.0: not a chunk key of the grid" "$M.log"
    grep -q "temp/zarr/temp/.zarray: metadata comes from the array" "$M.log"
    # nothing else in a group is renamed, removed or made
    run mv "$M/temp/zarr/temp/0.0.0" "$M/temp/zarr/temp/1.0.0"
    assert_failure
    run rm "$M/temp/zarr/temp/.zarray"
    assert_failure
    run mkdir "$M/temp/zarr/temp/sub"
    assert_failure
    run chmod 600 "$M/temp/zarr/temp/0.0.0"
    assert_failure
    [ "$(xta_sum temp)" = "$before" ]
}

@test "GNU mv renames a temporary and stores it over a key (RENAME_NOREPLACE first); mv -n keeps both; RENAME_EXCHANGE is EINVAL" {
    local d="$M/temp/zarr/temp" before
    before=$(xta_sum temp)
    cp "$d/0.0.0" "$d/t1"
    # mv asks for RENAME_NOREPLACE when the target is not there (it was
    # EPERM, logged as "only a temporary file is renamed")
    run mv "$d/t1" "$d/t2"
    assert_success
    [ ! -e "$d/t1" ] && cmp "$d/t2" "$d/0.0.0"
    # onto a key: -n asks RENAME_NOREPLACE alone (EEXIST: nothing moves)
    run mv -n "$d/t2" "$d/0.0.0"
    assert_success
    [ -e "$d/t2" ]
    run "$PY" - "$d" <<'PY'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1].encode() + b"/"
AT_FDCWD, RENAME_NOREPLACE, RENAME_EXCHANGE = -100, 1, 2
for name, flag in (("noreplace", RENAME_NOREPLACE), ("exchange", RENAME_EXCHANGE)):
    rc = libc.renameat2(AT_FDCWD, d + b"t2", AT_FDCWD, d + b"0.0.0", flag)
    print(name, "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()])
PY
    assert_success
    assert_line "noreplace EEXIST"
    assert_line "exchange EINVAL"
    # a plain mv over the key stores the temporary (the same bytes here)
    run mv "$d/t2" "$d/0.0.0"
    assert_success
    [ ! -e "$d/t2" ]
    [ "$(xta_sum temp)" = "$before" ]
    grep -q "names in a zarr group are not exchanged" "$M.log"
}

@test "an extension shows in .zarray, .zmetadata, the keys, data.nc and a reopened Dataset" {
    "$DRX" create "$S/g" --type i32 --shape 4x3 --chunk 2x2 --dims time,x --fill -7
    "$PY" -c "import numpy as np; np.arange(12, dtype='<i4').tofile('raw')"
    "$DRX" put "$S/g" <raw
    "$PY" - "$M/g/zarr" <<'PY'
import sys
import xarray as xr
ds = xr.open_zarr(sys.argv[1])
assert ds.g.shape == (4, 3)
PY
    local n0
    n0=$(stat -c %s "$M/g/zarr/.zmetadata")
    # on the store, then through the mounted path
    "$DRX" extend "$S/g" time 1
    "$DRX" extend "$M/g" x 2
    run ls "$M/g/zarr/g"
    assert_line "2.2"
    refute_line "3.0"
    [ "$(stat -c %s "$M/g/zarr/.zmetadata")" -eq "$(cat "$M/g/zarr/.zmetadata" | wc -c)" ]
    "$PY" - "$M/g" <<'PY'
import json, sys
import numpy as np
import netCDF4
import xarray as xr
d = sys.argv[1]
assert json.load(open(d + "/zarr/g/.zarray"))["shape"] == [5, 5]
assert json.load(open(d + "/zarr/.zmetadata"))["metadata"]["g/.zarray"]["shape"] == [5, 5]
ds = xr.open_zarr(d + "/zarr", mask_and_scale=False)
assert ds.g.shape == (5, 5)
want = np.full((5, 5), -7, "i4")
want[:4, :3] = np.arange(12).reshape(4, 3)
assert np.array_equal(ds.g.values, want), ds.g.values
assert netCDF4.Dataset(d + "/data.nc").variables["g"].shape == (5, 5)
PY
    # a coordinate shorter than its dimension is left out, and the log says why
    "$DRX" create "$S/time_c" --type f64 --shape 1 --chunk 1
    "$DRX" create "$S/gc" --type f64 --shape 3 --chunk 2 --dims time_c
    run ls "$M/gc/zarr"
    refute_line time_c
    "$DRX" extend "$S/time_c" 0 2
    run ls "$M/gc/zarr"
    assert_line time_c
    cat "$M/gc/zarr/.zmetadata" >/dev/null
    "$DRX" extend "$S/gc" 0 1
    cat "$M/gc/zarr/.zmetadata" >/dev/null
    grep -q "gc: time_c is not dimension time_c's coordinate: it is shorter than the dimension" "$M.log"
}

@test "one process reopening its Dataset sees an extension and new values: open_zarr and data.nc" {
    "$DRX" create "$S/rg" --type f64 --shape 3x4 --chunk 2x2 --dims time,x --fill -9
    "$PY" -c "import numpy as np; np.arange(12, dtype='<f8').tofile('raw')"
    "$DRX" put "$S/rg" <raw
    # one Python process: opens, loads and closes, the array grows and gets
    # a new row by drx, then it opens the same paths again
    "$PY" - "$DRX" "$S/rg" "$M/rg" <<'PY'
import subprocess, sys
import numpy as np
import xarray as xr
drx, store, d = sys.argv[1:]
def both():
    z = xr.open_zarr(d + "/zarr", mask_and_scale=False)
    zv = z.rg.values
    z.close()
    n = xr.open_dataset(d + "/data.nc", mask_and_scale=False)
    nv = n.rg.values
    n.close()
    return zv, nv
want = np.arange(12.0).reshape(3, 4)
for v in both():
    assert np.array_equal(v, want), v
subprocess.run([drx, "extend", store, "time", "2"], check=True)
subprocess.run([drx, "put", store, "time=3"], input=np.full(4, 7.5).tobytes(), check=True)
want = np.concatenate([want, np.full((1, 4), 7.5), np.full((1, 4), -9.0)])
for v in both():
    assert v.shape == (5, 4) and np.array_equal(v, want), v
PY
}

@test "chunk keys and metadata come through the page cache and show each change at the next open: drx put, a write through a view or the group, drx extend, a coordinate's change" {
    # pk(pk_t, x) with its coordinate pk_t; 64x64 f64 chunks (8 pages)
    "$DRX" create "$S/pk" --type f64 --shape 100x64 --chunk 64x64 --dims pk_t,x --fill -1
    "$PY" -c "import numpy as np; np.arange(6400, dtype='<f8').tofile('raw')"
    "$DRX" put "$S/pk" <raw
    "$DRX" create "$S/pk_t" --type f64 --shape 100 --chunk 64 --fill -5
    "$PY" -c "import numpy as np; (np.arange(100) * 10.0).tofile('t')"
    "$DRX" put "$S/pk_t" <t
    local k="$M/pk/zarr/pk/1.0" k0="$M/pk/zarr/pk/0.0" c="$M/pk/zarr/pk_t/1"
    cmp <(key_want pk 1.0) "$k"
    cmp <(key_want pk_t 1) "$c"
    # the pages stay across opens while nothing changes (fincore's own
    # open keeps them), for keys, a coordinate's keys and the metadata
    [ "$(pages "$k")" -eq 8 ]
    [ "$(pages "$c")" -eq 1 ]
    cat "$M/pk/zarr/.zmetadata" "$M/pk/zarr/pk_t/.zarray" >/dev/null
    [ "$(pages "$M/pk/zarr/.zmetadata")" -eq 1 ]
    # the coordinate's attribute changes to a value of the same length: the
    # metadata that shows it changes, not its size nor the times of any
    # .xta (which the kernel itself compares)
    "$DRX" attr set "$S/pk_t" units abc
    grep -q '"units": "abc"' "$M/pk/zarr/.zmetadata"
    grep -q '"units": "abc"' "$M/pk/zarr/pk_t/.zattrs"
    [ "$(pages "$M/pk/zarr/.zmetadata")" -eq 1 ]
    [ "$(pages "$M/pk/zarr/pk_t/.zattrs")" -eq 1 ]
    "$DRX" attr set "$S/pk_t" units xyz
    grep -q '"units": "xyz"' "$M/pk/zarr/.zmetadata"
    grep -q '"units": "xyz"' "$M/pk/zarr/pk_t/.zattrs"

    # drx put (another process)
    "$PY" -c "import numpy as np; (np.arange(6400, dtype='<f8') * -2).tofile('raw')"
    "$DRX" put "$S/pk" <raw
    cmp <(key_want pk 1.0) "$k"
    # a write through another view of the array
    "$PY" -c "import numpy as np; np.full(64, 7.5, '<f8').tofile('row')"
    dd if=row of="$M/pk/pk_t=70/data" conv=notrunc status=none
    cmp <(key_want pk 1.0) "$k"
    cmp <(cat row) <(tail -c +$((6 * 64 * 8 + 1)) "$k" | head -c 512)
    # a write through the group itself (zarr-python: a temporary renamed
    # over the key), read through the same path
    cat "$k0" >/dev/null
    "$PY" -c "
import sys, zarr
import numpy as np
z = zarr.open('$M/pk/zarr', mode='r+')['pk']
z[0:64, :] = np.full((64, 64), 3.25)"
    cmp <(key_want pk 0.0) "$k0"
    "$PY" -c "
import numpy as np
assert (np.fromfile('$k0', '<f8') == 3.25).all()"

    # drx extend, then drx put into the new rows of the edge chunk: the
    # key, .zarray and .zmetadata show them; the coordinate, now shorter
    # than its dimension, is left out until it is extended too
    cat "$M/pk/zarr/pk/.zarray" >/dev/null
    "$DRX" extend "$S/pk" pk_t 20
    "$PY" -c "import numpy as np; np.full(20 * 64, 11.0, '<f8').tofile('new')"
    "$DRX" put "$S/pk" pk_t=100:120 <new
    cmp <(key_want pk 1.0) "$k"
    "$PY" -c "
import json
import numpy as np
a = np.fromfile('$k', '<f8').reshape(64, 64)
assert (a[36:56] == 11).all() and (a[56:] == -1).all(), a[30:64, 0]
assert json.load(open('$M/pk/zarr/pk/.zarray'))['shape'] == [120, 64]
assert 'pk_t/.zarray' not in json.load(open('$M/pk/zarr/.zmetadata'))['metadata']"
    [ ! -e "$c" ]
    "$DRX" extend "$S/pk_t" 0 20
    "$PY" -c "import numpy as np; (np.arange(120) * 100.0).tofile('t')"
    "$DRX" put "$S/pk_t" <t
    cmp <(key_want pk_t 1) "$c"
    # the coordinate changed through its own data file: the group's key of
    # it shows the change at once
    "$PY" -c "import numpy as np; np.array([-123.0]).tofile('one')"
    dd if=one of="$M/pk_t/data" bs=8 seek=64 conv=notrunc status=none
    cmp <(key_want pk_t 1) "$c"
    "$PY" - "$M/pk/zarr" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_zarr(sys.argv[1])
assert ds.pk.shape == (120, 64) and ds.pk_t.values[64] == -123.0, ds.pk_t.values[60:70]
assert (ds.pk.values[100:120] == 11).all()
PY
}

@test "a read-only mount reads zarr/ and refuses its writes with EROFS" {
    local ro="$BATS_TEST_TMPDIR/ro"
    mount_store "$S" "$ro" -o ro
    run "$PY" - "$ro/temp/zarr" <<'PY'
import errno, sys
import numpy as np
import zarr
z = zarr.open(sys.argv[1], mode="r")["temp"]
assert z[0, 0, 0] == 0
try:
    open(sys.argv[1] + "/temp/0.0.0.x.partial", "wb")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
    unmount_store "$ro"
    assert_output "EROFS"
}

@test "stat of info and of the zarr metadata is exact after each attribute change and extension" {
    "$DRX" create "$S/sz" --type u16 --shape 3x2 --chunk 2x2 --dims a,b
    exact() {
        local f
        for f in "$M/sz/info" "$M/sz/a=1:/info" "$M/sz/zarr/.zmetadata" "$M/sz/zarr/sz/.zattrs" \
            "$M/sz/zarr/sz/.zarray"; do
            [ "$(stat -c %s "$f")" -eq "$(cat "$f" | wc -c)" ] || { echo "$f" >&2; return 1; }
        done
    }
    exact
    setfattr -n user.comment -v "$(printf 'a "long" one\nwith ünïcødé')" "$M/sz"
    exact
    "$DRX" attr set "$S/sz" valid_max 65535 --type u16
    exact
    "$DRX" extend "$S/sz" a 120
    exact
    setfattr -x user.comment "$M/sz"
    exact
    grep -q '"valid_max": 65535' "$M/sz/zarr/sz/.zattrs"
}

@test "hostile names and sizes in a group: ENOENT, EFBIG, ENOSPC, and the daemon lives on" {
    local before
    before=$(xta_sum temp)
    run "$PY" - "$M/temp/zarr" <<'PY'
import errno, os, sys
d = sys.argv[1]
def err(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
names = ["0.0.0.0", "0.0", "99999999999999999999999.0.0", "18446744073709551616.0.0", "0.0.",
         ".0.0.0", "0.-1.0", "0..0.0", "0.0.0 ", "x" * 255, "0." * 127 + "0"]
print("stat", sorted({err(lambda: os.stat(f"{d}/temp/{n}")) for n in names}))
print("deep", err(lambda: os.stat(f"{d}/temp/0.0.0/x")), err(lambda: os.stat(f"{d}/nope/.zarray")))
# a metadata-sized temporary at the group level holds at most 1 MiB
with open(f"{d}/big.partial", "wb") as f:
    print("meta temp", err(lambda: f.write(b"x" * (2 << 20)) and f.flush()))
os.remove(f"{d}/big.partial")
# at most 256 temporaries at once
made = []
for i in range(300):
    p = f"{d}/temp/t{i}.partial"
    r = err(lambda: open(p, "wb").close())
    if r != "ok":
        print("temp", i, r)
        break
    made.append(p)
for p in made:
    os.remove(p)
print("left", sorted(os.listdir(f"{d}/temp"))[:2], err(lambda: os.stat(made[0])))
PY
    assert_success
    assert_line "stat ['ENOENT']"
    assert_line "deep ENOTDIR ENOENT"
    assert_line "meta temp EFBIG"
    assert_line "temp 256 ENOSPC"
    assert_line "left ['.zarray', '.zattrs'] ENOENT"
    mountpoint -q "$M"
    [ "$(xta_sum temp)" = "$before" ]
}

@test "a temporary in zarr/ takes its creator's umask (the daemon applies it since FUSE_CAP_DONT_MASK)" {
    (umask 077 && : >"$M/temp/zarr/temp/0.0.0.u077.partial")
    (umask 022 && : >"$M/temp/zarr/temp/0.0.0.u022.partial")
    [ "$(stat -c %a "$M/temp/zarr/temp/0.0.0.u077.partial")" = 600 ]
    [ "$(stat -c %a "$M/temp/zarr/temp/0.0.0.u022.partial")" = 644 ]
    rm "$M/temp/zarr/temp/0.0.0.u077.partial" "$M/temp/zarr/temp/0.0.0.u022.partial"
}

# Found in daily use: `rm -rf` of an array directory at the mount (what a
# user tries first to remove an array, or a project directory holding
# arrays) failed, as documented (drx rm removes arrays), but on its way
# removed every chunk key of zarr/, and removing a key stores the fill:
# the array stayed, all fill, and with it every coordinate whose keys its
# zarr/ lists.  A process refused the removal of an array's own file, a
# metadata file of zarr/ or an array directory is now refused key
# removals for a while after (EPERM, logged); zarr-python, which removes
# keys only (write_empty_chunks=False), is not.
@test "rm -rf of an array, or of a directory of arrays, at the mount fails and leaves their data" {
    mkdir "$S/rmproj"
    "$DRX" create "$S/rmproj/obs" --type f32 --shape 6x4 --chunk 2x2 --dims time,x --fill -1
    "$DRX" create "$S/rmproj/time" --type f64 --shape 6 --chunk 3
    "$PY" -c "import numpy as np; np.arange(1, 25, dtype='<f4').tofile('obs.raw'); np.arange(6, dtype='<f8').tofile('t.raw')"
    "$DRX" put "$S/rmproj/obs" <obs.raw
    "$DRX" put "$S/rmproj/time" <t.raw
    echo notes >"$M/rmproj/notes.txt"
    run rm -rf "$M/rmproj/obs"
    assert_failure
    cmp obs.raw <("$DRX" get "$S/rmproj/obs")
    cmp t.raw <("$DRX" get "$S/rmproj/time")
    run rm -rf "$M/rmproj"
    assert_failure
    cmp obs.raw <("$DRX" get "$S/rmproj/obs")
    cmp t.raw <("$DRX" get "$S/rmproj/time")
    [ ! -e "$S/rmproj/notes.txt" ]
    run rm -rf "$M/rmproj/obs/zarr"
    assert_failure
    cmp obs.raw <("$DRX" get "$S/rmproj/obs")
    grep -q "rmproj/obs/zarr/obs/0.0: not removed" "$M.log"
    # zarr-python still deletes a chunk that holds only the fill
    "$PY" - "$M/rmproj/obs/zarr/obs" <<'PY'
import sys
import zarr
z = zarr.open_array(sys.argv[1], mode="r+", write_empty_chunks=False)
z[0:2, 0:2] = -1
PY
    "$DRX" get "$S/rmproj/obs" time=0:2 x=0:2 >c
    "$PY" -c "import numpy as np; assert (np.fromfile('c', '<f4') == -1).all()"
    "$DRX" rm "$S/rmproj/obs"
    "$DRX" rm "$S/rmproj/time"
}

@test "a key open elsewhere: replaced by zarr, its descriptor's fstat still works; removed by zarr, the removal is not redone over later writes at the last close" {
    "$DRX" create "$S/hk" --type f64 --shape 16x7 --chunk 8x7 --dims y,x --fill -1
    "$PY" - "$M/hk" "$S/hk" "$DRX" <<'EOF'
import os, subprocess, sys, uuid
import numpy as np, zarr
A, SA, drx = sys.argv[1:4]
D = A + "/zarr/hk"
key = D + "/0.0"
# zarr's DirectoryStore writes KEY.UUID.partial and renames it over KEY
def replace(v):
    tmp = f"{key}.{uuid.uuid4().hex}.partial"
    with open(tmp, "wb") as f:
        f.write(np.full(56, v, "<f8").tobytes())
    os.replace(tmp, key)
fd = os.open(key, os.O_RDONLY)
replace(7.0)
assert os.fstat(fd).st_size == 448       # ENOENT before: zarr's fill
with open(key, "rb") as f:                # a reader's open and read(): fstat first
    assert (np.frombuffer(f.read(), "<f8") == 7.0).all()
os.close(fd)
# .zarray replaced while open, from a temporary of any name: the same
# document, accepted as when it is not open (it was EPERM: a hidden
# metadata file was taken for a removal)
meta = open(D + "/.zarray", "rb").read()
fd = os.open(D + "/.zarray", os.O_RDONLY)
with open(D + "/meta.tmp", "wb") as f:
    f.write(meta)
os.replace(D + "/meta.tmp", D + "/.zarray")
assert os.fstat(fd).st_size == len(meta)
os.close(fd)
# a key removed while open reads as the fill at once, and a later write
# through drx put stays after the last close; a leftover temporary of
# zarr's name for it (another process's: a killed writer's) does not
# make the removal pass for a replacement
subprocess.run([sys.executable, "-c", f"open('{key}.' + 'ab' * 16 + '.partial', 'wb').write(b'x' * 448)"], check=True)
z = zarr.open_array(D, "r+", write_empty_chunks=False)
z[0:8, :] = 5.0
fd = os.open(key, os.O_RDONLY)
z[0:8, :] = -1.0                          # all fill: zarr removes the key
assert (np.fromfile(A + "/data", "<f8", count=56) == -1).all()
subprocess.run([drx, "put", SA + "/y=0:1"], input=np.full(7, 9.0, "<f8").tobytes(), check=True)
os.close(fd)
got = np.fromfile(A + "/data", "<f8", count=56)
assert (got[:7] == 9.0).all() and (got[7:] == -1).all(), got
EOF
    "$DRX" fsck "$S"
}

# zarr_writers_py: a Python program (on stdin) of arguments ZARR N BASE:
# N threads, started together, each write the first-dimension chunk i of
# array ZARR, all elements i + BASE; it fails if any write failed
zarr_writers_py() {
    cat <<'EOF'
import sys, threading
import numpy as np
import zarr
z = zarr.open(sys.argv[1], "r+")
n, base = int(sys.argv[2]), int(sys.argv[3])
errs, bar = [], threading.Barrier(n)
def write(i):
    a = np.full((1,) + z.chunks[1:], i + base, z.dtype)
    bar.wait()
    try:
        z[i:i + 1] = a
    except OSError as e:
        errs.append(e)
ts = [threading.Thread(target=write, args=(i,)) for i in range(n)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errs, errs
EOF
}

@test "writers at once past the pool of temporaries wait for room instead of failing: 8 chunks of 128 MiB (dask's chunk size) through zarr" {
    # 8 x 128 MiB against the pool's 512 MiB: two of six used to fail
    # with ENOSPC ("No space left on device") on a disk with room
    "$DRX" create "$S/cz" --type f32 --shape 8x4096x8192 --chunk 1x4096x8192 --dims t,y,x
    zarr_writers_py | timeout -s KILL 120 "$PY" - "$M/cz/zarr/cz" 8 0
    "$PY" - "$M/cz/data.npy" <<'EOF'
import sys
import numpy as np
a = np.load(sys.argv[1], mmap_mode="r")
for i in range(8):
    assert (a[i] == i).all(), i
EOF
    "$DRX" rm "$S/cz"
}

@test "a user other than root writing two 96 MiB chunks at once: the second waits for the first's room in his share instead of failing" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    hostile_setup zarr
    local s="$RV/s" m="$RV/m"
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/cw" --type f32 --shape 2x4096x6144 --chunk 1x4096x6144 --dims t,y,x
    chmod -R a+rX "$s"
    chmod 666 "$s/cw.xta"
    mount_store "$s" "$m" -o allow_other
    # his share is 128 MiB: the second chunk's temporary used to be ENOSPC
    zarr_writers_py | nob timeout -s KILL 120 "$PY" - "$m/cw/zarr/cw" 2 1
    "$PY" -c "
import sys, numpy as np
a = np.load('$m/cw/data.npy', mmap_mode='r')
assert (a[0] == 1).all() and (a[1] == 2).all()"
}

@test "temporaries a killed writer left in zarr/ are dropped once the pool is full and they have sat idle, so zarr writes go on" {
    "$DRX" create "$S/tl" --type f64 --shape 8x7 --chunk 8x7 --dims y,x --fill -1
    "$PY" - "$M/tl/zarr/tl" <<'EOF'
import errno, os, sys, time
import numpy as np
D = sys.argv[1]
# what killed writers leave: closed, never renamed, until the pool (256
# for the mount; others' may hold a few already) refuses the next
made = 0
try:
    for i in range(300):
        with open(f"{D}/0.0.{i:032x}.partial", "wb") as f:
            f.write(b"x" * 448)
        made += 1
    raise SystemExit("300 temporaries taken")
except OSError as e:
    assert e.errno == errno.ENOSPC and made > 200, (e, made)
time.sleep(6)                                 # idle past ZTEMP_IDLE_S (5 s)
tmp = f"{D}/0.0.next.partial"
with open(tmp, "wb") as f:
    f.write(np.full(56, 3.0, "<f8").tobytes())
os.replace(tmp, f"{D}/0.0")
EOF
    cmp <("$PY" -c 'import sys, numpy as np; sys.stdout.buffer.write(np.full(56, 3.0, "<f8").tobytes())') "$M/tl/data"
}


@test "zarr/ metadata reads while another process sets attributes never fail" {
    # each attribute set replaces the .xmd: the group's documents, made
    # from the handle's .xmd, and the signature of the one its name held a
    # moment before, were of different files, and zdoc_get said ESTALE
    # (which open(2) does not retry): 90% of the reads of zarr/.zattrs
    # with a setter in a loop (xarray.open_zarr failed)
    "$DRX" create "$S/za" --type f64 --shape 4 --chunk 2
    cat >setter.py <<'PY'
import os, sys
n = 0
while not os.path.exists("stop"):
    os.setxattr(sys.argv[1], "user.n", str(n).encode())
    n += 1
PY
    "$PY" setter.py "$M/za" &
    local setter=$!
    run "$PY" - "$M/za/zarr" <<'PY'
import errno, os, sys
bad = {}
for i in range(300):
    for f in (".zattrs", ".zmetadata", "za/.zarray", "za/.zattrs"):
        try:
            with open(os.path.join(sys.argv[1], f), "rb") as fh:
                fh.read()
        except OSError as e:
            bad[(f, errno.errorcode[e.errno])] = bad.get((f, errno.errorcode[e.errno]), 0) + 1
print("failed", bad)
PY
    touch stop
    wait "$setter"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "failed {}" ]
    # and the group is still the array's, with the last attribute
    "$PY" -c "import json,sys; d = json.load(open('$M/za/zarr/za/.zattrs')); assert 'n' in d, d"
}
