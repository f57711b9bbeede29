#!/usr/bin/env bats
# data.nc at the mount point: a netCDF classic file of every array and view,
# read by ncdump, netCDF4-python and xarray in place.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt"
    "$DRX" init "$S" >/dev/null
    "$DRX" create "$S/temp" --type f64 --shape 6x5x7 --chunk 4x2x3 --dims time,lat,lon --fill -999
    "$PY" -c "import numpy as np; np.arange(210, dtype='<f8').tofile('$BATS_FILE_TMPDIR/temp.raw')"
    "$DRX" put "$S/temp" <"$BATS_FILE_TMPDIR/temp.raw"
    mount_store "$S" "$M"
}

teardown_file() {
    unmount_store "$M"
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    # a second mount a failed test may have left
    unmount_store "$BATS_TEST_TMPDIR/ro"
    if [ -n "${OWN_DIR:-}" ]; then
        unmount_store "$OWN_DIR/m"
        rm -rf "$OWN_DIR"
    fi
}

# same_as_get ARRAY VIEW...: data.nc of the view holds drx get's elements,
# with its dimensions (reversed for order=F) and the view's origin/step
same_as_get() {
    same_as_get_each "$*"
}

# same_as_get_each "ARRAY VIEW..."...: same_as_get of each view, in one
# python; every view is checked, each that fails is named
same_as_get_each() {
    "$PY" - "$M" "$DRX" "$S" "$@" <<'PY'
import json, subprocess, sys
import numpy as np
import netCDF4
mnt, drx, store, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def check(arr, words):
    path = "/".join([mnt, arr] + words + ["data.nc"])
    info = json.loads(subprocess.run([drx, "info", f"{store}/{arr}", "--json"],
                                     capture_output=True, check=True).stdout)
    view = json.loads(open(path[:-len("data.nc")] + "info").read())
    raw = subprocess.run([drx, "get", f"{store}/{arr}"] + words,
                         capture_output=True, check=True).stdout
    order = view["order"]
    # drx get gives the view's elements in its order; the variable lists the
    # dimensions reversed for order=F, so it holds the transpose
    want = np.frombuffer(raw, np.dtype(view["npy_descr"])).reshape(view["shape"], order=order)
    if order == "F":
        want = want.T
    d = netCDF4.Dataset(path)
    d.set_auto_mask(False)
    # the array's variable is the last (coordinate variables come first)
    name = list(d.variables)[-1]
    v = d.variables[name]
    got = v[:]
    assert got.dtype.kind == want.dtype.kind and got.dtype.itemsize == want.dtype.itemsize, \
        (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert (got == want).all(), "values differ"
    dims = [n or f"dim{i}" for i, n in enumerate(info.get("dims", [""] * len(view["shape"])))]
    if order == "F":
        dims = dims[::-1]
    assert list(v.dimensions) == dims, (v.dimensions, dims)
    origin, step = view["origin"], view["step"]
    if order == "F":
        origin, step = origin[::-1], step[::-1]
    assert list(v.getncattr("drx_origin")) == origin, (v.getncattr("drx_origin"), origin)
    assert list(v.getncattr("drx_step")) == step
    d.close()


failed = 0
for spec in specs:
    arr, *words = spec.split()
    try:
        check(arr, words)
    except Exception as e:
        print(f"same_as_get {spec}: {type(e).__name__}: {e}", file=sys.stderr)
        failed += 1
sys.exit(1 if failed else 0)
PY
}

@test "ncdump reads an array's data.nc: dimensions, variable, _FillValue, values" {
    run ncdump -h "$M/temp/data.nc"
    assert_success
    assert_line --partial "time = UNLIMITED ; // (6 currently)"
    assert_line --partial "lon = 7 ;"
    assert_line --partial "double temp(time, lat, lon) ;"
    assert_line --partial "temp:_FillValue = -999. ;"
    assert_line --partial "temp:drx_origin = 0, 0, 0 ;"
    run ncdump -k "$M/temp/data.nc"
    assert_output "64-bit offset"
    # the values, as ncdump prints them, are drx get's
    ncdump -v temp "$M/temp/dim0=2/dim1=1:3/data.nc" | sed -n '/temp =/,/;/p' | tr -d ' ,;\n' >got
    "$PY" -c "
import numpy as np
a = np.arange(210, dtype='<f8').reshape(6, 5, 7)[2:3, 1:3]
print('temp=' + ''.join('%g' % x for x in a.ravel()), end='')" >want
    cmp got want
}

@test "data.nc of views: slices, steps, nested views, order=F, rep=external32" {
    same_as_get_each "temp" "temp dim0=1:5" "temp lat=::2 lon=-3:" "temp dim0=1:5 dim0=1:3 dim2=6" \
        "temp order=F" "temp dim1=0:4:3 order=F rep=external32"
}

@test "every non-complex type: CDF-2 for netCDF classic types, CDF-5 for the others" {
    local t types=(i8 i16 i32 f32 f64 u8 u16 u32 i64 u64) views=()
    "$PY" - "${types[@]}" <<'PY'
import sys
import numpy as np
for t in sys.argv[1:]:
    d = {'i8': 'i1', 'i16': '<i2', 'i32': '<i4', 'i64': '<i8', 'u8': 'u1', 'u16': '<u2', 'u32': '<u4',
         'u64': '<u8', 'f32': '<f4', 'f64': '<f8'}[t]
    np.arange(10).astype(d).tofile('raw_' + t)
PY
    for t in "${types[@]}"; do
        "$DRX" create "$S/t_$t" --type "$t" --shape 3x5 --chunk 2x2 --fill 7
        "$DRX" put "$S/t_$t" dim0=0:2 <"raw_$t"
        views+=("t_$t")
        run ncdump -k "$M/t_$t/data.nc"
        case $t in
        i8 | i16 | i32 | f32 | f64) assert_output "64-bit offset" ;;
        *) assert_output "cdf5" ;;
        esac
        # st_size is exact: what a reader gets
        [ "$(stat -c %s "$M/t_$t/data.nc")" -eq "$(cat "$M/t_$t/data.nc" | wc -c)" ]
    done
    same_as_get_each "${views[@]}"
}

@test "xarray opens data.nc lazily, masks the fill, and sees an extension at the next open" {
    "$DRX" create "$S/grow" --type f32 --shape 4x3 --chunk 2x2 --dims time,x --fill -1
    "$PY" -c "import numpy as np; np.arange(12, dtype='<f4').tofile('raw')"
    "$DRX" put "$S/grow" <raw
    "$PY" - "$M/grow/data.nc" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_dataset(sys.argv[1])
assert ds.grow.dims == ("time", "x"), ds.grow.dims
assert float(ds.grow.sum()) == 66.0
assert ds.grow.isel(time=slice(1, 3)).values.tolist() == [[3, 4, 5], [6, 7, 8]]
ds.close()
PY
    "$DRX" extend "$S/grow" time 2
    "$PY" - "$M/grow/data.nc" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_dataset(sys.argv[1])
assert ds.grow.shape == (6, 3), ds.grow.shape
# the new rows hold the fill, which CF readers see as missing
assert np.isnan(ds.grow.values[4:]).all()
assert float(ds.grow.sum()) == 66.0
PY
}

@test "data.nc is read-only and absent for complex arrays and empty views" {
    run sh -c "echo x >>'$M/temp/data.nc'"
    assert_failure
    assert_output --partial "Permission denied"
    run truncate -s 0 "$M/temp/data.nc"
    assert_failure
    "$DRX" create "$S/cx" --type c64 --shape 4 --chunk 2
    run ls "$M/cx"
    assert_success
    refute_line "data.nc"
    run stat "$M/cx/data.nc"
    assert_failure
    run stat "$M/temp/dim0=3:3/data.nc"
    assert_failure
    run ls "$M/temp"
    assert_line "data.nc"
}

@test "the variable is named after the array, under netCDF's name rules" {
    # netCDF-C takes a leading digit (ncdump escapes it) and UTF-8 letters
    "$DRX" create "$S/9-lives" --type i16 --shape 3 --chunk 3
    run ncdump -h "$M/9-lives/data.nc"
    assert_success
    assert_line --partial "short \\9-lives(dim0) ;"
    mkdir "$S/names"
    for n in 2m_temp température 'sst anom' ключ; do
        "$DRX" create "$S/names/$n" --type f32 --shape 2 --chunk 2
    done
    "$PY" - "$M/names" <<'PY'
import sys
import netCDF4
import xarray as xr
for array, var in [("2m_temp", "2m_temp"), ("température", "température"),
                   ("sst anom", "sst_anom"), ("ключ", "____")]:
    path = f"{sys.argv[1]}/{array}/data.nc"
    assert list(netCDF4.Dataset(path).variables) == [var], (array, list(netCDF4.Dataset(path).variables))
    # xarray finds the variable by the name netCDF lists
    assert xr.open_dataset(path)[var].shape == (2,), array
PY
}

@test "attributes are variable attributes of data.nc: ncdump shows them, xarray decodes scale_factor" {
    "$DRX" create "$S/packed" --type i16 --shape 4x3 --chunk 2x2 --dims time,x --fill -32768
    "$PY" -c "import numpy as np; np.arange(12, dtype='<i2').tofile('raw')"
    "$DRX" put "$S/packed" <raw
    "$DRX" attr set "$S/packed" units K
    "$DRX" attr set "$S/packed" long_name 'air "temperature"'
    # values as drx get gives them (before scale_factor, which readers apply)
    same_as_get packed dim0=1:
    "$DRX" attr set "$S/packed" scale_factor 0.5 --type f64
    "$DRX" attr set "$S/packed" add_offset 100 --type f64
    "$DRX" attr set "$S/packed" valid_range 0,20 --type i16
    run ncdump -h "$M/packed/dim0=1:/data.nc"
    assert_success
    assert_output --partial "short packed(time, x) ;"
    # in order: _FillValue, the user's (as set), drx_origin, drx_step
    echo "$output" | grep -o 'packed:[A-Za-z_]* =' | tr '\n' ' ' | grep -qx \
        'packed:_FillValue = packed:units = packed:long_name = packed:scale_factor = packed:add_offset = packed:valid_range = packed:drx_origin = packed:drx_step = '
    assert_line --partial 'packed:units = "K" ;'
    assert_line --partial 'packed:long_name = "air \"temperature\"" ;'
    assert_line --partial "packed:scale_factor = 0.5 ;"
    assert_line --partial "packed:valid_range = 0s, 20s ;"
    run ncdump -k "$M/packed/data.nc"
    assert_output "64-bit offset"
    "$PY" - "$M/packed/dim0=1:/data.nc" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_dataset(sys.argv[1])
p = ds.packed
assert p.attrs["units"] == "K" and p.attrs["long_name"] == 'air "temperature"', p.attrs
# CF decoding: stored * scale_factor + add_offset
want = np.arange(3, 12).reshape(3, 3) * 0.5 + 100
assert p.dtype.kind == "f" and np.array_equal(p.values, want), p.values
raw = xr.open_dataset(sys.argv[1], mask_and_scale=False).packed
assert raw.dtype == np.int16 and raw.attrs["scale_factor"] == 0.5
PY
    # a type CDF-2 lacks makes it CDF-5; an attribute removed is gone
    "$DRX" attr set "$S/packed" mask 255 --type u8
    run ncdump -k "$M/packed/data.nc"
    assert_output "cdf5"
    run ncdump -h "$M/packed/data.nc"
    assert_line --partial "packed:mask = 255UB ;"
    "$DRX" attr rm "$S/packed" mask
    run ncdump -k "$M/packed/data.nc"
    assert_output "64-bit offset"
    [ "$(stat -c %s "$M/packed/data.nc")" -eq "$(cat "$M/packed/data.nc" | wc -c)" ]
    # info shows them as JSON
    "$PY" -c "
import json, sys
j = json.load(open('$M/packed/info'))
a = j['attrs']
assert a['units'] == {'type': 'string', 'value': 'K'}, a
assert a['scale_factor'] == {'type': 'f64', 'value': [0.5]} and a['valid_range']['value'] == [0, 20], a"
}

@test "setfattr, getfattr and setfattr -x on the array directory are its attributes; -o ro gives EROFS" {
    "$DRX" create "$S/xa" --type f32 --shape 4x3 --chunk 2x2 --dims time,x
    "$DRX" attr set "$S/xa" scale_factor 0.5 --type f64
    setfattr -n user.units -v K "$M/xa"
    setfattr -n user.long_name -v 'air "temp"' "$M/xa"
    run "$DRX" attr get "$S/xa" units
    assert_output "K"
    run getfattr -d --absolute-names "$M/xa"
    assert_success
    assert_line 'user.scale_factor="0.5"'
    assert_line 'user.units="K"'
    # views show the array's; an existing number keeps its type
    run getfattr --only-values -n user.units --absolute-names "$M/xa/time=1:"
    assert_output "K"
    setfattr -n user.scale_factor -v 0.25 "$M/xa"
    run "$DRX" attr list "$S/xa"
    assert_line "scale_factor f64 0.25"
    # refused, nothing changed
    cp "$S/xa.xmd" before.xmd
    run setfattr -n user.scale_factor -v abc "$M/xa"
    assert_failure
    assert_output --partial "Invalid argument"
    # the reason is in the daemon's log (at info, the default)
    grep -q "setxattr user.scale_factor: .*abc" "$M.log"
    run setfattr -n user._FillValue -v 1 "$M/xa"
    assert_output --partial "Invalid argument"
    grep -q "setxattr user._FillValue: .*_FillValue" "$M.log"
    run setfattr -n "user.a b" -v 1 "$M/xa"
    assert_output --partial "Invalid argument"
    run setfattr -n user.units -v m "$M/xa/time=1:"
    assert_output --partial "Operation not permitted"
    run setfattr -n trusted.units -v m "$M/xa"
    assert_failure
    run setfattr -x user.nope "$M/xa"
    assert_output --partial "No such attribute"
    cmp before.xmd "$S/xa.xmd"
    # data.nc has it; -x removes it
    run ncdump -h "$M/xa/data.nc"
    assert_line --partial 'xa:units = "K" ;'
    setfattr -x user.units "$M/xa"
    run "$DRX" attr get "$S/xa" units
    assert_failure
    run getfattr -d --absolute-names "$M/xa"
    refute_line --partial "user.units"
    # read-only mount: EROFS, reading works
    local ro="$BATS_TEST_TMPDIR/ro"
    mount_store "$S" "$ro" -o ro
    run setfattr -n user.units -v m "$ro/xa"
    assert_failure
    assert_output --partial "Read-only file system"
    run setfattr -x user.long_name "$ro/xa"
    assert_output --partial "Read-only file system"
    run getfattr --only-values -n user.long_name --absolute-names "$ro/xa"
    unmount_store "$ro"
    assert_output 'air "temp"'
    cmp <("$DRX" attr list "$S/xa") <(printf 'scale_factor f64 0.25\nlong_name string air "temp"\n')
}

@test "setfattr of a new CF number attribute makes a string, which the log warns of; an existing number keeps its type" {
    "$DRX" create "$S/cfw" --type i16 --shape 3 --chunk 3 --dims k --fill -1
    setfattr -n user.add_offset -v 100 "$M/cfw"
    run "$DRX" attr list "$S/cfw"
    assert_output "add_offset string 100"
    grep -q "user.add_offset set as a string: CF readers (xarray) need a number; drx attr set --type makes one" "$M.log"
    "$DRX" attr set "$S/cfw" add_offset 100 --type f64
    setfattr -n user.add_offset -v 50 "$M/cfw"
    run "$DRX" attr list "$S/cfw"
    assert_output "add_offset f64 50"
    [ "$(grep -c "user.add_offset set as a string" "$M.log")" -eq 1 ]
    "$DRX" rm "$S/cfw"
}

@test "setfattr on an array directory needs write access to the array" {
    OWN_DIR=$(mktemp -d /tmp/drxfs-attr.XXXXXX)
    chmod 755 "$OWN_DIR"
    local s="$OWN_DIR/s" m="$OWN_DIR/m"
    "$DRX" init "$s" >/dev/null
    "$DRX" create "$s/arr" --type i32 --shape 4 --chunk 2
    "$DRX" attr set "$s/arr" units K
    mount_store "$s" "$m" -o allow_other,default_permissions
    nob() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
    run nob setfattr -n user.units -v m "$m/arr"
    assert_failure
    assert_output --partial "Permission denied"
    run nob getfattr --absolute-names --only-values -n user.units "$m/arr"
    assert_output "K"
    chown 65534 "$m/arr"
    nob setfattr -n user.units -v m "$m/arr"
    unmount_store "$m"
    run "$DRX" attr get "$s/arr" units
    assert_output "m"
}

@test "coordinate variables: a 1-D array named like a dimension, at least as long, sliced to the view" {
    mkdir -p "$S/c"
    "$DRX" create "$S/c/field" --type f32 --shape 4x3 --chunk 2x2 --dims time,lat
    "$PY" -c "import numpy as np; np.arange(12, dtype='<f4').tofile('raw')"
    "$DRX" put "$S/c/field" <raw
    "$DRX" create "$S/c/time" --type f64 --shape 6 --chunk 4 --dims time
    "$PY" -c "import numpy as np; (np.arange(6) * 10.0).astype('<f8').tofile('t')"
    "$DRX" put "$S/c/time" <t
    "$DRX" attr set "$S/c/time" units "days since 2000-01-01"
    "$DRX" create "$S/c/lat" --type i16 --shape 2 --chunk 2
    "$PY" - "$M/c/field/time=1:4:2/data.nc" "$M/c/field/order=F/data.nc" <<'PY'
import sys
import numpy as np
import xarray as xr
ds = xr.open_dataset(sys.argv[1])
# time is a coordinate (decoded as dates through its units), sliced to the view
assert list(ds.coords) == ["time"], list(ds.coords)
t = xr.open_dataset(sys.argv[1], decode_times=False).time
assert t.values.tolist() == [10.0, 30.0] and t.attrs["units"] == "days since 2000-01-01", t
assert ds.time.dtype.kind == "M"
assert ds.field.values.tolist() == [[3, 4, 5], [9, 10, 11]]
# lat (2 long) is shorter than the dimension (3): left out
assert "lat" not in ds.variables
f = xr.open_dataset(sys.argv[2], decode_times=False)
assert f.field.dims == ("lat", "time") and f.time.values.tolist() == [0, 10, 20, 30]
PY
    run ncdump -h "$M/c/field/data.nc"
    assert_line --partial "double time(time) ;"
    refute_line --partial "lat(lat)"
    grep -q "c/lat is not dimension lat's coordinate: it is shorter than the dimension" "$M.log"
    # once lat is long enough it is one; st_size stays exact
    "$DRX" extend "$S/c/lat" 0 1
    "$PY" -c "import numpy as np; np.array([-10, 0, 10], dtype='<i2').tofile('l')"
    "$DRX" put "$S/c/lat" <l
    run ncdump -v lat "$M/c/field/lat=1:/data.nc"
    assert_success
    assert_output --partial "lat = 0, 10 ;"
    [ "$(stat -c %s "$M/c/field/data.nc")" -eq "$(cat "$M/c/field/data.nc" | wc -c)" ]
    same_as_get c/field dim0=1:3
    # the coordinate array's own data.nc is just itself, a coordinate
    # variable there too: no _FillValue, so its 0 (time's first, the
    # default fill) reads as 0 alone as beside field (found in the twelfth
    # session: alone it read as missing, and xr.merge gave time a NaN)
    run ncdump -h "$M/c/time/data.nc"
    assert_success
    assert_line --partial "double time(time) ;"
    refute_output --partial "_FillValue"
    "$PY" - "$M/c/time" "$M/c/field" <<'PY'
import json, sys
import xarray as xr
alone = xr.open_dataset(sys.argv[1] + "/data.nc", decode_times=False).time.values.tolist()
assert alone == [0, 10, 20, 30, 40, 50], alone
z = xr.open_zarr(sys.argv[1] + "/zarr", decode_times=False).time.values.tolist()
assert z == alone, z
assert json.load(open(sys.argv[1] + "/zarr/time/.zarray"))["fill_value"] is None
both = xr.merge([xr.open_dataset(sys.argv[2] + "/data.nc", decode_times=False),
                 xr.open_dataset(sys.argv[1] + "/data.nc", decode_times=False)])
assert both.time.values.tolist() == alone, both.time.values
PY
    # a 1-D array over a dimension of another name keeps its fill
    run ncdump -h "$M/c/lat/data.nc"
    assert_line --partial "lat:_FillValue = 0s ;"
}

# Found in the daily-use audit: data.nc had no record dimension, so NCO's
# ncrcat and ncra refused it ("no variables fit criteria for processing")
# and xarray saw no unlimited dimension to append along.
@test "the first dimension is the record dimension: ncrcat joins views, reads at any offset match, xarray sees it unlimited" {
    mkdir -p "$S/r"
    "$DRX" create "$S/r/sst" --type f32 --shape 7x3x5 --chunk 2x2x2 --dims time,lat,lon --fill -999
    "$PY" -c "import numpy as np; (np.arange(105) * 0.5).astype('<f4').tofile('raw')"
    "$DRX" put "$S/r/sst" <raw
    "$DRX" create "$S/r/time" --type f64 --shape 7 --chunk 4 --dims time
    "$PY" -c "import numpy as np; (np.arange(7) * 6.0 + 1).astype('<f8').tofile('t')"
    "$DRX" put "$S/r/time" <t
    "$DRX" attr set "$S/r/time" units "hours since 2000-01-01"
    # i8 without a record coordinate: one record variable of 3-byte
    # records, unpadded (CDF-2, which scipy reads too)
    "$DRX" create "$S/r/flag" --type i8 --shape 5x3 --chunk 2x2 --dims step,lat
    "$PY" -c "import numpy as np; np.arange(15, dtype='i1').tofile('f')"
    "$DRX" put "$S/r/flag" <f
    run ncdump -h "$M/r/sst/data.nc"
    assert_line --partial "time = UNLIMITED ; // (7 currently)"
    assert_line --partial "double time(time) ;"
    # ncrcat of two views along the record dimension is the whole array
    ncrcat -O "$M/r/sst/time=0:3/data.nc" "$M/r/sst/time=3:/data.nc" joined.nc
    ncra -O "$M/r/sst/data.nc" mean.nc
    # reads at every offset and size give the bytes of one whole read:
    # records with the coordinate (each padded), and unpadded ones
    for f in "$M/r/sst/data.nc" "$M/r/sst/lat=1:/lon=1::2/data.nc" "$M/r/sst/order=F/data.nc" \
        "$M/r/flag/data.nc" "$M/r/flag/lat=1:/data.nc"; do
        "$PY" - "$f" <<'PY'
import os, sys
p = sys.argv[1]
whole = open(p, "rb").read()
assert len(whole) == os.stat(p).st_size, (len(whole), os.stat(p).st_size)
fd = os.open(p, os.O_RDONLY)
for size in (1, 3, 5, 7, 13, 64, 333):
    got = b"".join(os.pread(fd, size, off) for off in range(0, len(whole), size))
    assert got == whole, (p, size)
for off in range(len(whole) - 50, len(whole) + 2):
    assert os.pread(fd, 100, off) == whole[off:off + 100], (p, off)
PY
    done
    "$PY" - "$M/r" <<'PY'
import sys
import numpy as np
import netCDF4
import xarray as xr
m = sys.argv[1]
sst = (np.arange(105) * 0.5).astype("f4").reshape(7, 3, 5)
time = np.arange(7) * 6.0 + 1
j = netCDF4.Dataset("joined.nc")
assert j.dimensions["time"].isunlimited() and len(j.dimensions["time"]) == 7
assert (j["sst"][:] == sst).all() and (j["time"][:] == time).all(), j["time"][:]
a = netCDF4.Dataset("mean.nc")
assert np.allclose(a["sst"][:], sst.mean(axis=0, keepdims=True)), a["sst"][:]
for engine in ("netcdf4", "scipy"):
    ds = xr.open_dataset(m + "/sst/lat=1:/data.nc", engine=engine, decode_times=False)
    assert (ds.sst.values == sst[:, 1:]).all() and (ds.time.values == time).all(), engine
    assert ds.encoding.get("unlimited_dims") == {"time"}, (engine, ds.encoding)
    f = xr.open_dataset(m + "/flag/data.nc", engine=engine, mask_and_scale=False)
    assert (f.flag.values == np.arange(15).reshape(5, 3)).all(), (engine, f.flag.values)
# order=F: the slowest dimension of the file (lon) is the record one
d = netCDF4.Dataset(m + "/sst/order=F/data.nc")
assert d["sst"].dimensions == ("lon", "lat", "time") and d.dimensions["lon"].isunlimited()
assert (d["sst"][:] == sst.T).all() and (d["time"][:] == time).all()
PY
}

@test "a coordinate named as the variable is left out: one variable of each name" {
    # array "x y" is variable x_y; its dimension x_y has a coordinate array x_y
    mkdir "$S/dupname"
    "$DRX" create "$S/dupname/x y" --type f32 --shape 3 --chunk 3 --dims x_y
    "$DRX" create "$S/dupname/x_y" --type f32 --shape 3 --chunk 3 --dims x_y
    "$PY" -c "import numpy as np; np.arange(3, dtype='<f4').tofile('a'); (np.arange(3, dtype='<f4') + 10).tofile('c')"
    "$DRX" put "$S/dupname/x y" <a
    "$DRX" put "$S/dupname/x_y" <c
    run ncdump -h "$M/dupname/x y/data.nc"
    assert_success
    [ "$(grep -c 'float x_y(x_y)' <<<"$output")" -eq 1 ]
    "$PY" - "$M/dupname/x y/data.nc" <<'PY'
import sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
d.set_auto_mask(False)  # 0 is the fill
assert list(d.variables) == ["x_y"], list(d.variables)
assert d["x_y"][:].tolist() == [0, 1, 2], d["x_y"][:]
PY
    [ "$(stat -c %s "$M/dupname/x y/data.nc")" -eq "$(wc -c <"$M/dupname/x y/data.nc")" ]
}

@test "every type x shapes, chunkings and nested views: ncdump value by value, netCDF4, xarray (netcdf4, scipy) equal drx get" {
    local specs=() t i types=(i8 i16 i32 f32 f64 u8 u16 u32 i64 u64)
    # under the sanitizers (scripts/test's second pass) one type of each
    # netCDF format family: the daemon's code paths, in a quarter of the time
    [ -z "${DRX_TEST_SANITIZED:-}" ] || types=(i16 f64 u8 i64)
    for t in "${types[@]}"; do
        "$DRX" create "$S/m_$t" --type "$t" --shape 7x5 --chunk 3x2 --fill 7
        "$DRX" create "$S/n_$t" --type "$t" --shape 10 --chunk 4
        # grown: chunk addresses are no longer row-major
        "$DRX" create "$S/p_$t" --type "$t" --shape 4x3x5 --chunk 2x2x2 --dims a,b,c --fill 3
        "$DRX" extend "$S/p_$t" b 2
        "$DRX" extend "$S/p_$t" a 3
        specs+=("m_$t" "m_$t/dim0=1:" "m_$t/dim1=::2/dim0=-3:" "m_$t/order=F"
            "n_$t/dim0=1:9:3" "p_$t" "p_$t/a=2:6/b=1:/c=::2" "p_$t/a=1:4/a=1:/order=F")
    done
    # every array's values, made in one python: raw_NAME for each
    "$PY" - "$DRX" "$S" "${types[@]}" <<'PY'
import json, subprocess, sys
import numpy as np
drx, store = sys.argv[1], sys.argv[2]
for t in sys.argv[3:]:
    for i in "mnp":
        name = f"{i}_{t}"
        j = json.loads(subprocess.run([drx, "info", f"{store}/{name}", "--json"],
                                      capture_output=True, check=True).stdout)
        dt = np.dtype(j["npy_descr"])
        n = int(np.prod(j["bounds"]))
        a = np.arange(n) * 3 + (0 if dt.kind == "u" else -40)
        if dt.kind == "f":
            a = a / 4
        a.astype(dt).tofile("raw_" + name)
PY
    for t in "${types[@]}"; do
        for i in m n p; do
            "$DRX" put "$S/${i}_$t" <"raw_${i}_$t"
        done
    done
    run "$PY" "$DRX_SOURCE/bats-tests/nc_check.py" "$DRX" "$S" "$M" "${specs[@]}"
    assert_success
    assert_output "$((8 * ${#types[@]})) views checked"
}

@test "ncdump -h shows attributes and coordinates; ncks copies a view to a local file that compares equal" {
    mkdir -p "$S/k"
    "$DRX" create "$S/k/sst" --type f32 --shape 6x4 --chunk 4x2 --dims time,lon --fill -1
    "$PY" -c "import numpy as np; (np.arange(24, dtype='<f4') / 2).tofile('raw')"
    "$DRX" put "$S/k/sst" <raw
    "$DRX" attr set "$S/k/sst" units degC
    "$DRX" attr set "$S/k/sst" long_name "sea surface temperature"
    "$DRX" create "$S/k/lon" --type f64 --shape 4 --chunk 4
    "$PY" -c "import numpy as np; np.array([0, 90, 180, 270], '<f8').tofile('l')"
    "$DRX" put "$S/k/lon" <l
    "$DRX" attr set "$S/k/lon" units degrees_east
    run ncdump -h "$M/k/sst/time=1:5/data.nc"
    assert_success
    assert_line --partial "double lon(lon) ;"
    assert_line --partial 'lon:units = "degrees_east" ;'
    assert_line --partial "float sst(time, lon) ;"
    assert_line --partial 'sst:units = "degC" ;'
    assert_line --partial 'sst:long_name = "sea surface temperature" ;'
    ncks -O "$M/k/sst/time=1:5/lon=1:/data.nc" copy.nc
    "$PY" - "$M/k/sst/time=1:5/lon=1:/data.nc" copy.nc <<'PY'
import sys
import netCDF4
import numpy as np
a, b = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
assert set(a.variables) == set(b.variables) == {"sst", "lon"}, set(b.variables)
for n in a.variables:
    va, vb = a.variables[n], b.variables[n]
    assert va.dimensions == vb.dimensions and va.dtype == vb.dtype, n
    assert np.array_equal(va[...], vb[...]), n
    for k in va.ncattrs():
        assert np.array_equal(va.getncattr(k), vb.getncattr(k)), (n, k)
assert b.variables["lon"][:].tolist() == [90, 180, 270]
assert b.variables["sst"][:].tolist() == (np.arange(24).reshape(6, 4)[1:5, 1:] / 2).tolist()
PY
    # ncdump of the copy prints the same data as of the original
    diff <(ncdump "$M/k/sst/time=1:5/lon=1:/data.nc" | sed -n '/^data:/,$p') \
        <(ncdump copy.nc | sed -n '/^data:/,$p')
}

@test "a sparse array above 4 GiB with coordinates: ncdump and netCDF4 accept its data.nc, last element correct" {
    mkdir -p "$S/huge"
    # 40960 x 16384 f64 = 5 GiB, sparse (fill 0)
    "$DRX" create "$S/huge/h" --type f64 --shape 40960x16384 --chunk 1024x1024 --dims y,x
    "$DRX" create "$S/huge/y" --type f32 --shape 40960 --chunk 8192
    "$DRX" create "$S/huge/x" --type i32 --shape 16384 --chunk 16384
    "$PY" -c "import numpy as np; (np.arange(40960) / 2).astype('<f4').tofile('y')"
    "$DRX" put "$S/huge/y" <y
    "$PY" -c "import numpy as np; (np.arange(16384) * 3).astype('<i4').tofile('x')"
    "$DRX" put "$S/huge/x" <x
    "$PY" -c "import numpy as np; (np.arange(16384) + 0.25).astype('<f8').tofile('row')"
    "$DRX" put "$S/huge/h" y=-1 <row
    local size
    size=$(stat -c %s "$M/huge/h/data.nc")
    [ "$size" -gt $((5 * 1024 * 1024 * 1024)) ]
    run ncdump -k "$M/huge/h/data.nc"
    assert_output "64-bit offset"
    run ncdump -h "$M/huge/h/data.nc"
    assert_success
    assert_line --partial "y = UNLIMITED ; // (40960 currently)"
    assert_line --partial "float y(y) ;"
    assert_line --partial "int x(x) ;"
    assert_line --partial "double h(y, x) ;"
    # a view of its last rows, whole through ncdump
    run ncdump -v h "$M/huge/h/y=-1:/x=-2:/data.nc"
    assert_success
    assert_output --partial "16382.25, 16383.25 ;"
    "$PY" - "$M/huge/h/data.nc" <<'PY'
import sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
d.set_auto_mask(False)  # 0 is the fill
h = d.variables["h"]
assert h.shape == (40960, 16384)
assert h[-1, -1] == 16383.25 and h[-1, 0] == 0.25 and h[-2, -1] == 0, (h[-1, -1], h[-2, -1])
assert d.variables["y"][-1] == 20479.5 and d.variables["x"][-1] == 16383 * 3
PY
    # an extent past 2^31 - 1 needs CDF-5 whatever the type (CDF-2's
    # dimension lengths are 32-bit signed; SPEC 4); an i8 of 3e9 elements
    "$DRX" create "$S/huge/long" --type i8 --shape 3000000000 --chunk 1048576
    printf '\x07' | "$DRX" put "$S/huge/long" dim0=-1
    run ncdump -k "$M/huge/long/data.nc"
    assert_output "cdf5"
    run ncdump -h "$M/huge/long/data.nc"
    assert_line --partial "dim0 = UNLIMITED ; // (3000000000 currently)"
    "$PY" - "$M/huge/long/data.nc" <<'PY'
import sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
d.set_auto_mask(False)
v = d.variables["long"]
assert v.shape == (3000000000,) and v[-1] == 7 and v[-2] == 0, (v.shape, v[-1])
PY
    # one less than 2^31 stays CDF-2
    [ "$(ncdump -k "$M/huge/long/dim0=:2147483647/data.nc")" = "64-bit offset" ]
}

@test "data.nc and zarr/ metadata are as new as the attributes and coordinates they hold: rsync -a copies a change" {
    mkdir -p "$S/mt"
    "$DRX" create "$S/mt/v" --type f32 --shape 3x4 --chunk 2x2 --dims y,x --fill -1
    "$DRX" create "$S/mt/x" --type f32 --shape 4 --chunk 4 --dims x
    "$PY" -c "import numpy as np; np.arange(12, dtype='<f4').tofile('v'); np.arange(4, dtype='<f4').tofile('x1'); (np.arange(4, dtype='<f4') + 100).tofile('x2')"
    "$DRX" put "$S/mt/v" <v
    "$DRX" put "$S/mt/x" <x1
    "$DRX" attr set "$S/mt/v" units C
    # every store file of the group dated 2020: a change made now is later
    # by years, whatever the clock's resolution and rsync's 1 s compare
    old() { touch -d '2020-01-01 00:00' "$S"/mt/v.xmd "$S"/mt/v.xta "$S"/mt/x.xmd "$S"/mt/x.xta; }
    # same_copy: rsync -a of the array directory again, then every file
    # of the copy is the mount's (sizes alone do not tell: each change
    # below keeps them)
    same_copy() {
        rsync -a "$M/mt/v/" copy/
        diff -r "$M/mt/v" copy
    }
    old
    rsync -a "$M/mt/v/" copy/
    # the coordinate's values (data.nc holds them; its .xta is not v's)
    "$DRX" put "$S/mt/x" <x2
    same_copy
    "$PY" -c "import xarray as xr; assert xr.open_dataset('copy/data.nc').x.values.tolist() == [100, 101, 102, 103]"
    # an attribute of the same length (data.nc, zarr/.zmetadata, zarr/v/.zattrs)
    old
    rsync -a "$M/mt/v/" copy/
    "$DRX" attr set "$S/mt/v" units K
    same_copy
    grep -q '"units": "K"' copy/zarr/v/.zattrs
    # the coordinate's .zarray takes the array's length of x: 4 -> 5, same size
    "$DRX" extend "$S/mt/x" 0 2
    old
    rsync -a "$M/mt/v/" copy/
    "$DRX" extend "$S/mt/v" x 1
    same_copy
    "$PY" -c "import json; assert json.load(open('copy/zarr/x/.zarray'))['shape'] == [5]"
    # tar compares the ctime of stat before a read with fstat's after it
    tar -cf /dev/null -C "$M/mt" v
    "$PY" - "$M/mt/v/data.nc" "$M/mt/v/zarr/.zmetadata" <<'PY'
import os, sys
for p in sys.argv[1:]:
    a = os.stat(p)
    fd = os.open(p, os.O_RDONLY)
    b = os.fstat(fd)
    os.close(fd)
    assert (a.st_mtime_ns, a.st_ctime_ns, a.st_size) == (b.st_mtime_ns, b.st_ctime_ns, b.st_size), (p, a, b)
PY
}

@test "a coordinate whose owner has no user entry: the log says its groups cannot be looked up" {
    getent passwd 4242 4243 && skip "uids 4242 or 4243 have users here"
    mkdir "$S/nouser"
    "$DRX" create "$S/nouser/v" --type f32 --shape 2x3 --chunk 2x2 --dims lat,x
    "$DRX" create "$S/nouser/lat" --type f32 --shape 2 --chunk 2 --dims lat
    # two members of project group 4244 (a store from another system: no
    # passwd entries), both files group-writable as a project's are
    chown 4242:4244 "$S"/nouser/v.xmd "$S"/nouser/v.xta
    chown 4243:4244 "$S"/nouser/lat.xmd "$S"/nouser/lat.xta
    chmod 664 "$S"/nouser/*.xmd "$S"/nouser/*.xta
    run ncdump -h "$M/nouser/v/data.nc"
    assert_success
    refute_output --partial "float lat(lat)"
    grep -q "nouser/lat is not dimension lat's coordinate: its owner and the array's must both be in the array's group, and one of them has no entry in the user database" "$M.log"
}
