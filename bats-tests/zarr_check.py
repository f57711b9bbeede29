"""Checks the zarr/ group of arrays at a drxfs mount point against the store,
through the real clients (zarr-python, xarray) and the raw key files.

usage: zarr_check.py DRX STORE MNT ARRAY...   (ARRAY relative to the store)

For each array: every chunk key is a file of exactly the chunk's bytes (the
array as `drx get` gives it, padded with the fill to whole chunks), equal to
the .xta's bytes at the chunk's F* address (`drx address`); the listing
shows the metadata and every key; zarr-python and xarray (open_zarr,
consolidated) read the whole array equal to `drx get`.
"""
import json
import os
import subprocess
import sys

import numpy as np
import xarray as xr
import zarr

drx, store, mnt, arrays = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def run(*args):
    return subprocess.run([drx, *args], capture_output=True, check=True).stdout


def fill_of(info):
    dt = np.dtype(info["npy_descr"])
    parts = info["fill"].split(",")
    if dt.kind == "c":
        return np.array(complex(float(parts[0]), float(parts[1])), dt)
    if dt.kind == "f":
        return np.array(float(parts[0]), dt)
    return np.array(int(parts[0]), dt)


def check(arr):
    info = json.loads(run("info", f"{store}/{arr}", "--json"))
    dt = np.dtype(info["npy_descr"])
    shape, chunk, grid = info["bounds"], info["chunk"], info["chunk_grid"]
    full = np.frombuffer(run("get", f"{store}/{arr}"), dt).reshape(shape)
    padded = np.full([g * c for g, c in zip(grid, chunk)], fill_of(info), dt)
    padded[tuple(slice(0, n) for n in shape)] = full
    name = os.path.basename(arr)
    zdir = f"{mnt}/{arr}/zarr/{name}"
    keys = sorted(k for k in os.listdir(zdir) if not k.startswith("."))
    want_keys = sorted(".".join(map(str, i)) for i in np.ndindex(*grid))
    assert keys == want_keys, (arr, keys, want_keys)
    assert {".zarray", ".zattrs"} <= set(os.listdir(zdir))
    xta = open(f"{store}/{arr}.xta", "rb")
    cb = int(np.prod(chunk)) * dt.itemsize
    for k in keys:
        idx = [int(x) for x in k.split(".")]
        want = padded[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunk))].tobytes()
        path = f"{zdir}/{k}"
        got = open(path, "rb").read()
        assert os.stat(path).st_size == cb == len(got), (arr, k, len(got), cb)
        assert got == want, (arr, k, "chunk bytes differ from drx get")
        # the same bytes as the .xta at the chunk's F* address
        first = ",".join(str(i * c) for i, c in zip(idx, chunk))
        out = run("address", f"{store}/{arr}", first).decode()
        addr = int(out.split("address=")[1].split()[0])
        xta.seek(addr * cb)
        assert xta.read(cb) == got, (arr, k, "not the .xta's bytes at", addr)
    z = zarr.open(f"{mnt}/{arr}/zarr", mode="r")[name]
    assert z.dtype == dt and list(z.shape) == shape and list(z.chunks) == chunk, z.info
    assert np.array_equal(z[...], full, equal_nan=dt.kind in "fc"), arr
    ds = xr.open_zarr(f"{mnt}/{arr}/zarr", mask_and_scale=False)
    v = ds[name]
    assert np.array_equal(v.values, full, equal_nan=dt.kind in "fc"), arr
    dims = [d or f"dim{i}" for i, d in enumerate(info["dims"])]
    assert list(v.dims) == dims, (v.dims, dims)


for a in arrays:
    check(a)
print(f"{len(arrays)} arrays checked")
