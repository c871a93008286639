"""CF attributes, provenance and NetCDF input/output."""

import datetime
import platform

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


def version() -> str:
    """The installed package version (``0+unknown`` when run from a bare checkout)."""
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
