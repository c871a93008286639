"""Ensemble statistics of Langevin results (``gpuensembles.langevin``) and ``Dataset.langevin``.

Every function works on dask-backed data without computing it.
"""

import numpy as np
import xarray as xr

from ..engine import REALIZATION


def mean_with_error(values: xr.DataArray, dim: str = REALIZATION) -> xr.Dataset:
    """Mean over ``dim`` with its standard error ``std(ddof=1) / sqrt(n)``.

    Realizations are independent, so the standard error needs no correction.
    """
    n = values.sizes[dim]
    if n < 2:
        raise ValueError(f"a standard error needs at least 2 values along {dim!r}, got {n}")
    return xr.Dataset({"mean": values.mean(dim), "stderr": values.std(dim, ddof=1) / np.sqrt(n)})


def moments(values: xr.DataArray, dim: str = REALIZATION) -> xr.Dataset:
    """Mean and variance over ``dim`` with standard errors.

    The variance's error is ``sqrt((m4 - s^4 (n - 3) / (n - 1)) / n)`` with ``m4`` the
    fourth central moment (exact for any distribution to leading order in 1/n).
    """
    n = values.sizes[dim]
    if n < 4:
        raise ValueError(f"variance errors need at least 4 values along {dim!r}, got {n}")
    mean = values.mean(dim)
    var = values.var(dim, ddof=1)
    m4 = ((values - mean) ** 4).mean(dim)
    return xr.Dataset({
        "mean": mean,
        "mean_stderr": np.sqrt(var / n),
        "variance": var,
        "variance_stderr": np.sqrt(np.maximum(m4 - var**2 * (n - 3) / (n - 1), 0.0) / n),
    })


def density(counts: xr.DataArray, below: xr.DataArray, above: xr.DataArray) -> xr.DataArray:
    """Probability per unit cell: counts over the total, the trajectories outside included."""
    total = counts.sum("cell") + below + above
    return (counts / total).assign_attrs(long_name="probability per unit cell", units="1")


@xr.register_dataset_accessor("langevin")
class LangevinAccessor:
    """``ds.langevin``: averages over the realizations of a ``gpuensembles.langevin`` result."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def velocity(self) -> xr.Dataset:
        """Asymptotic mean velocity ``<<v>>`` (``mean``) and its standard error (``stderr``)."""
        return mean_with_error(self._ds["mean_velocity"])

    def position(self) -> xr.Dataset:
        """Mean and variance of the final position, with standard errors."""
        return moments(self._ds["x_end"])

    def kinetic(self) -> xr.Dataset:
        """``<v^2>`` at the end (``mean``, ``stderr``): equals ``kT`` in equilibrium."""
        return mean_with_error(self._ds["v_end"] ** 2)

    def density(self) -> xr.DataArray:
        """Coarse-grained probability per unit cell (needs ``histogram=`` in the run)."""
        if "density" not in self._ds:
            raise ValueError("this result has no histogram; run langevin(..., histogram=(lo, hi))")
        return density(self._ds["density"], self._ds["density_below"], self._ds["density_above"])
