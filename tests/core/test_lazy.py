"""Imports deferred to first use: xarray's checks for dask and CuPy arrays without importing either."""

import subprocess
import sys

import numpy as np
import xarray as xr

import gpuensembles as ge  # its import defers dask.array in xarray
from gpuensembles.core import io, lazy

FIRST_RESULT = """
import sys
from gpuensembles import cli
cli.main(["escape-times", "--damping", "0.05", "--gamma", "0.5", "--D", "0.01", "--h", "0.02", "--realizations",
          "8", "--max-steps", "200", "--seed", "1", "--backend", "cpu", "--no-progress", "-o", sys.argv[1]])
print(*(name in sys.modules for name in ("dask.array", "distributed", "scipy.optimize", "scipy.integrate")))
"""


def test_the_readme_job_imports_no_module_it_does_not_use(tmp_path):
    # xarray's first DataArray would import dask.array, its to_netcdf distributed, and the
    # run's estimate scipy.optimize and scipy.integrate: about 2 s of a first call together.
    proc = subprocess.run([sys.executable, "-c", FIRST_RESULT, str(tmp_path / "first.nc")], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-4:] == ["False"] * 4, proc.stdout
    assert int(ge.open_dataset(tmp_path / "first.nc").escape_time.count()) >= 0


def test_results_in_memory_are_written_as_to_netcdf_writes_them(tmp_path):
    import dask.array as da

    ds = ge.escape_times(damping=0.05, gamma=0.5, D=[0.01, 0.02], h=0.02, realizations=8, max_steps=300, seed=1,
                         backend="cpu", progress=False)
    ds.to_netcdf(tmp_path / "xarray.nc")
    io.write_netcdf(ds, tmp_path / "direct.nc")
    io.write_netcdf(ds.chunk(realization=4), tmp_path / "chunked.nc")  # dask-backed: through to_netcdf
    reference = xr.open_dataset(tmp_path / "xarray.nc")
    for name in ("direct.nc", "chunked.nc"):
        written = xr.open_dataset(tmp_path / name)
        assert written.identical(reference), name
        assert all(written[v].encoding["dtype"] == reference[v].encoding["dtype"] for v in reference.variables)
    assert isinstance(ds.chunk(realization=4).escape_time.data, da.Array)


def test_dask_arrays_stay_dask_arrays_once_dask_array_is_imported():
    import dask.array as da

    a = xr.DataArray(da.zeros(6, chunks=2), dims="x")
    assert isinstance(a.data, da.Array) and a.chunks == ((2, 2, 2),)  # not computed into numpy
    masked = xr.DataArray(da.ma.masked_equal(da.arange(4, chunks=2), 1), dims="x")
    assert np.isnan(masked.values[1]) and masked.values[2] == 2  # xarray's masked-dask path still taken


def test_the_record_answers_what_xarrays_own_would(monkeypatch):
    record = lazy._DeferredDuckArrays("dask", "dask.array", "Array")
    monkeypatch.delitem(sys.modules, "dask.array", raising=False)
    assert record.type == ()  # no dask array can exist yet
    import dask

    assert record.available and record.module is dask and str(record.version) == dask.__version__


def test_an_installed_array_package_is_deferred_until_imported(tmp_path, monkeypatch):
    # CuPy's place, taken by a package of this test (CuPy itself needs a GPU to install)
    (tmp_path / "fakecupy").mkdir()
    (tmp_path / "fakecupy" / "__init__.py").write_text("__version__ = '13.1'\nclass ndarray:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from xarray.namedarray import pycompat

    dask_record = lazy._DeferredDuckArrays("dask", "dask.array", "Array")
    monkeypatch.setattr(pycompat, "_cached_duck_array_modules", {"dask": dask_record})
    fake = ("fakecupy", "fakecupy", "ndarray")
    monkeypatch.setattr(lazy, "DEFERRED_DUCK_ARRAYS", lazy.DEFERRED_DUCK_ARRAYS + (fake,))
    deferred = lazy.defer_duck_array_imports()
    assert "fakecupy" in deferred and "dask" not in deferred
    record = pycompat._cached_duck_array_modules["fakecupy"]
    assert pycompat.array_type("fakecupy") == () and "fakecupy" not in sys.modules  # asked, not imported
    import fakecupy

    assert pycompat.array_type("fakecupy") == (fakecupy.ndarray,) and str(record.version) == "13.1"
    monkeypatch.delitem(sys.modules, "fakecupy")


def test_xarray_with_its_records_filled_is_left_alone(monkeypatch):
    from xarray.namedarray import pycompat

    filled = {package: "xarray's own" for package, _, _ in lazy.DEFERRED_DUCK_ARRAYS}
    monkeypatch.setattr(pycompat, "_cached_duck_array_modules", dict(filled))
    assert lazy.defer_duck_array_imports() == ()
    assert pycompat._cached_duck_array_modules == filled
