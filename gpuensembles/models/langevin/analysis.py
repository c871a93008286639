"""Ensemble statistics of Langevin results (``gpuensembles.langevin``) and ``Dataset.langevin``.

Every function works on dask-backed data without computing it, except :func:`equilibration`.
"""

import numpy as np
import xarray as xr

from ...analysis.statistics import drift, mean_with_error, moments, warn_if_drifting


def density(counts: xr.DataArray, below: xr.DataArray, above: xr.DataArray) -> xr.DataArray:
    """Probability per unit cell: counts over the total, the trajectories outside included."""
    total = counts.sum("cell") + below + above
    return (counts / total).assign_attrs(long_name="probability per unit cell", units="1")


def equilibration(x: xr.DataArray, h, transient: int) -> xr.Dataset:
    """Which trajectories still relax after the transient: their velocity drifting over the samples.

    The velocities between consecutive samples of ``x`` after ``transient`` steps, ``dx / (h
    dstep)``, are each trajectory's record; its last third against its first third, as for
    the Ising chains (:func:`gpuensembles.analysis.statistics.drift`: the scale is the spread
    across the other realizations, or with fewer than four the scatter of the segments).

    Parameters
    ----------
    x : DataArray
        Positions over ``time`` (with the ``step`` coordinate) and ``realization``, computed.
    h : float or DataArray
        Time step.
    transient : int
        Steps discarded before the mean velocity is taken.

    Returns
    -------
    Dataset
        ``z`` and ``drifting`` per trajectory (over the sweep dimensions and ``realization``);
        attributes ``threshold`` and ``transient``.
    """
    after = x.isel(time=np.flatnonzero(x["step"].values >= transient))
    if after.sizes["time"] < 10:
        raise ValueError(f"equilibration needs at least 10 samples of x after the transient ({transient} steps), got "
                         f"{after.sizes['time']}: sample more often (sample_every)")
    velocity = after.diff("time") / (after["step"].diff("time") * h)
    check = drift(velocity.assign_attrs(units="1"), "time")
    return check.assign_attrs(transient=transient)


@xr.register_dataset_accessor("langevin")
class LangevinAccessor:
    """``ds.langevin``: averages over the realizations of a ``gpuensembles.langevin`` result."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def equilibration(self) -> xr.Dataset:
        """Trajectories whose velocity still drifts after the transient (needs ``x`` over ``time``)."""
        if "x" not in self._ds or "time" not in self._ds["x"].dims:
            raise ValueError("equilibration needs the positions over time: run langevin(..., sample_every=...) "
                             "recording x")
        h = self._ds["h"] if "h" in self._ds.coords else self._ds.attrs["h"]
        return equilibration(self._ds["x"].compute(), h, int(self._ds.attrs["transient"]))

    def velocity(self) -> xr.Dataset:
        """Asymptotic mean velocity ``<<v>>`` (``mean``) and its standard error (``stderr``).

        With the positions recorded over time (computed), warns when trajectories still drift
        after the transient (:meth:`equilibration`).
        """
        x = self._ds.get("x")
        if x is not None and "time" in x.dims and x.chunks is None:
            step = x["step"].values
            if np.count_nonzero(step >= int(self._ds.attrs["transient"])) >= 10:
                transient = int(self._ds.attrs["transient"])
                warn_if_drifting(self.equilibration(), noun="trajectory", what="the velocity of the last third",
                                 after=f" after the transient of {transient} steps",
                                 fix="increase the transient (or the steps)", stacklevel=3)
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
