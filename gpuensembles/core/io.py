"""CF attributes, provenance and NetCDF input/output."""

import contextlib
import datetime
import functools
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

from . import rng

#: Name of the ensemble dimension of every output (CF ``standard_name: realization``).
REALIZATION = "realization"

REALIZATION_ATTRS = {
    "standard_name": "realization",
    "long_name": "ensemble member (realization) id",
    "axis": "E",
    "units": "1",
}


@functools.cache
def version() -> str:
    """The installed package version (``0+unknown`` when run from a bare checkout), looked up once."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("gpuensembles")
    except PackageNotFoundError:
        return "0+unknown"


def _describe(value) -> str:
    if isinstance(value, xr.DataArray):
        return f"<DataArray {value.name or ''}{dict(value.sizes)}>" if value.ndim else repr(value.item())
    if isinstance(value, np.ndarray) and value.ndim:
        return f"<array {value.shape} {value.min():g}..{value.max():g}>"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"<{type(value).__name__} of {len(value)}>"
    return repr(value)


def history_line(call: str, kwargs: dict) -> str:
    """One ``history`` entry: ISO time, package version and the call with its arguments."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    args = ", ".join(f"{k}={_describe(v)}" for k, v in kwargs.items())
    return f"{now}: gpuensembles {version()} {call}({args})"


def provenance(*, model: str, integrator: str, seed: int, backend: str, device: str, dtype: str, history: str) -> dict:
    """Global attributes every output carries (see DESIGN.md, principle 9)."""
    return {
        "Conventions": "CF-1.10",
        "source": f"gpuensembles {version()}",
        "gpuensembles_version": version(),
        "model": model,
        "integrator": integrator,
        "seed": np.int64(seed),
        "rng": rng.NAME,
        "backend": backend,
        "device": device,
        "dtype": dtype,
        "python": platform.python_version(),
        "history": history,
    }


def open_dataset(path, **kwargs) -> xr.Dataset:
    """Open a NetCDF file written by ``Dataset.to_netcdf`` from a gpuensembles result.

    Values, dimensions, coordinates and attributes round-trip unchanged (xarray
    stores boolean variables as int8 with a ``dtype: bool`` marker and restores them).

    Parameters
    ----------
    path : str or path-like
        File to open.
    **kwargs
        Passed to :func:`xarray.open_dataset` (e.g. ``chunks={}`` for lazy dask arrays).
    """
    kwargs.setdefault("engine", "netcdf4")
    return xr.open_dataset(path, **kwargs)


def check_output(path, what: str = "output", overwrite: bool = True):
    """Raise ValueError unless a file can be written at ``path`` (checked before a run, not after).

    ``path`` must not be a folder, and its folder must exist and be writable; without
    ``overwrite`` it must not exist.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    what : str
        The parameter or option named in the message.
    overwrite : bool
        Whether an existing file may be replaced.
    """
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; give a file name")
    if path.exists() and not overwrite:
        raise ValueError(f"{what} {str(path)!r} exists; give --overwrite to replace it, or another name")
    if not folder.exists():
        raise ValueError(f"{what} {str(path)!r}: the folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise ValueError(f"{what} {str(path)!r}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(path)!r}: the folder {str(folder)!r} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{what} {str(path)!r} exists and is not writable")


def write_netcdf(ds: xr.Dataset, path):
    """``ds.to_netcdf(path)`` (NetCDF4), without importing ``distributed`` for a Dataset in memory.

    ``to_netcdf`` asks dask which scheduler runs, importing ``distributed`` to do so (0.6 s of
    a first call on an H200 host), to choose its file lock and whether to close the file
    between chunked writes. A Dataset without dask arrays is written at once from this
    thread whatever the answer, so it goes to the same NetCDF4 store directly, under the
    netCDF/HDF5 library lock. Dask-backed Datasets take ``to_netcdf``.
    """
    if any(v.chunks is not None for v in ds.variables.values()):
        ds.to_netcdf(path)
        return
    from xarray.backends import NetCDF4DataStore
    from xarray.backends.locks import HDF5_LOCK, NETCDFC_LOCK, combine_locks

    # the lock to_netcdf takes for a write from one thread (netCDF-C and HDF5 are not
    # thread-safe); without one the store would ask dask for its scheduler again
    store = NetCDF4DataStore.open(str(path), mode="w", format="NETCDF4", lock=combine_locks([NETCDFC_LOCK, HDF5_LOCK]))
    try:
        ds.dump_to_store(store)
    finally:
        store.close()


def save_result(ds: xr.Dataset, path, name: str) -> tuple:
    """Write ``ds`` to NetCDF ``path``; if that fails, to a fallback file, so no finished work is lost.

    The fallback is ``gpuensembles-<name>-<time>.nc`` in the current folder, else in the
    temporary folder.

    Parameters
    ----------
    ds : xarray.Dataset
        The result.
    path : str or path-like
        Where it should go.
    name : str
        Names the fallback file (e.g. the subcommand).

    Returns
    -------
    tuple
        ``(written path, None)``, or ``(fallback path, the error that stopped the write to path)``.

    Raises
    ------
    OSError
        When no place could be written (the last error).
    """
    existed = Path(path).exists()
    try:
        write_netcdf(ds, path)
        return Path(path), None
    except (OSError, RuntimeError, ValueError) as err:  # disk full, permissions, netCDF4/HDF5 errors
        first = err
    if not existed:  # a partial file of ours, not a user's old one
        with contextlib.suppress(OSError):
            Path(path).unlink()
    stem = f"gpuensembles-{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.nc"
    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        try:
            write_netcdf(ds, folder / stem)
            return folder / stem, first
        except (OSError, RuntimeError, ValueError) as err:
            last = err
    raise OSError(f"could not write {path} ({first}) nor a fallback copy in the current or temporary folder "
                  f"({last})") from first
