"""Ensemble statistics of Langevin results (``gpuensembles.langevin``) and ``Dataset.langevin``.

Every function works on dask-backed data without computing it.
"""

import xarray as xr

from ...analysis.statistics import mean_with_error, moments


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
