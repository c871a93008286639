"""Imports deferred to first use: xarray's check for dask arrays without ``dask.array``."""

import subprocess
import sys

import numpy as np
import xarray as xr

import gpuensembles  # noqa: F401  (its import defers dask.array in xarray)
from gpuensembles.core import lazy

FIRST_RESULT = """
import sys
import gpuensembles as ge
ds = ge.escape_times(damping=0.05, gamma=0.5, D=0.01, h=0.02, realizations=8, max_steps=200, seed=1,
                     backend="cpu", progress=False)
ds.to_netcdf(sys.argv[1])
print(int(ds.escape_time.count()), "dask.array" in sys.modules)
"""


def test_a_first_result_and_its_netcdf_do_not_import_dask_array(tmp_path):
    proc = subprocess.run([sys.executable, "-c", FIRST_RESULT, str(tmp_path / "first.nc")], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "False"


def test_dask_arrays_stay_dask_arrays_once_dask_array_is_imported():
    import dask.array as da

    a = xr.DataArray(da.zeros(6, chunks=2), dims="x")
    assert isinstance(a.data, da.Array) and a.chunks == ((2, 2, 2),)  # not computed into numpy
    masked = xr.DataArray(da.ma.masked_equal(da.arange(4, chunks=2), 1), dims="x")
    assert np.isnan(masked.values[1]) and masked.values[2] == 2  # xarray's masked-dask path still taken


def test_the_record_answers_what_xarrays_own_would(monkeypatch):
    record = lazy._DaskAsDuckArrays()
    monkeypatch.delitem(sys.modules, "dask.array", raising=False)
    assert record.type == ()  # no dask array can exist yet
    import dask

    assert record.available and record.module is dask and str(record.version) == dask.__version__


def test_xarray_with_its_record_filled_is_left_alone(monkeypatch):
    from xarray.namedarray import pycompat

    monkeypatch.setattr(pycompat, "_cached_duck_array_modules", {"dask": "xarray's own"})
    assert not lazy.defer_dask_array_import()
    assert pycompat._cached_duck_array_modules == {"dask": "xarray's own"}
