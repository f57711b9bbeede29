"""Checks data.nc of views at a drxfs mount point against `drx get`, with
the real readers: ncdump (its text, value by value), netCDF4-python, and
xarray with engine netcdf4 and, for CDF-2 files, scipy.

usage: nc_check.py DRX STORE MNT SPEC...
SPEC is ARRAY or ARRAY/WORD/WORD... (a view, as at the mount point).
"""
import json
import subprocess
import sys

import netCDF4
import numpy as np
import xarray as xr

drx, store, mnt, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def run(*args):
    return subprocess.run(args, capture_output=True, check=True).stdout


def ncdump_values(path, var, dt, fill):
    """The variable's values as ncdump prints them, parsed back."""
    prec = "9,17"
    text = run("ncdump", "-p", prec, "-v", var, path).decode()
    body = text.split("data:", 1)[1]
    body = body.split(f" {var} =", 1)[1].split(";", 1)[0]
    out = []
    for tok in body.replace("\n", " ").split(","):
        tok = tok.strip()
        if tok == "_":  # ncdump's mark for the fill value
            out.append(fill)
        elif dt.kind == "f":
            out.append(float(tok.rstrip("f")))
        else:
            out.append(int(tok))
    return np.array(out, dt)


def check(spec):
    parts = spec.split("/")
    arr, words = parts[0], parts[1:]
    path = f"{mnt}/{spec}/data.nc"
    view = json.loads(run(drx, "info", f"{store}/{spec}", "--json"))
    dt = np.dtype(view["npy_descr"]).newbyteorder("=")
    raw = run(drx, "get", f"{store}/{arr}", *words, "rep=native")
    want = np.frombuffer(raw, dt).reshape(view["shape"], order=view["order"])
    if view["order"] == "F":
        want = want.T  # the variable lists the dimensions reversed
    fill = np.array(float(view["fill"]) if dt.kind == "f" else int(view["fill"]), dt)
    got = ncdump_values(path, arr, dt, fill).reshape(want.shape)
    assert np.array_equal(got, want, equal_nan=dt.kind == "f"), (spec, "ncdump", got, want)
    d = netCDF4.Dataset(path)
    d.set_auto_mask(False)
    v = d.variables[arr][...]
    assert v.dtype == dt and np.array_equal(v, want, equal_nan=dt.kind == "f"), (spec, "netCDF4")
    cdf2 = d.data_model == "NETCDF3_64BIT_OFFSET"
    d.close()
    engines = ["netcdf4"] + (["scipy"] if cdf2 else [])
    for engine in engines:
        ds = xr.open_dataset(path, engine=engine, mask_and_scale=False)
        x = ds[arr].values
        assert x.dtype.kind == dt.kind and x.dtype.itemsize == dt.itemsize, (spec, engine)
        assert np.array_equal(x, want, equal_nan=dt.kind == "f"), (spec, engine)
        ds.close()


for s in specs:
    check(s)
print(f"{len(specs)} views checked")
