"""The stationary order parameter of Kuramoto results (``gpuensembles.kuramoto``) and ``Dataset.kuramoto``."""

import numpy as np
import xarray as xr

from ...analysis.statistics import drift, mean_with_error, warn_if_drifting
from ...core.io import REALIZATION


def _after(r: xr.DataArray, discard: float) -> xr.DataArray:
    """The samples of ``r`` after the first fraction ``discard`` of the run."""
    if not 0 <= discard < 1:
        raise ValueError(f"discard must be a fraction of the run in [0, 1), got {discard!r}")
    n = r.sizes["time"]
    return r.isel(time=slice(int(np.floor(discard * n)), n))


def order_parameter(r: xr.DataArray, discard: float = 0.5) -> xr.Dataset:
    """Stationary order parameter: the time average of ``r`` after the first fraction ``discard`` of the run.

    Each system's time average is one independent estimate; their mean over the realizations
    is ``mean``, its standard error ``stderr`` (the time averages' spread, which holds the
    samples' autocorrelation).

    Parameters
    ----------
    r : DataArray
        Order parameter over ``time`` and ``realization``.
    discard : float
        Fraction of the samples treated as the transient, in [0, 1).

    Returns
    -------
    Dataset
        ``mean`` and ``stderr`` over the sweep dimensions (``stderr`` NaN for a single system).
    """
    averages = _after(r, discard).mean("time")
    if averages.sizes.get(REALIZATION, 1) >= 2:
        result = mean_with_error(averages, REALIZATION)
    else:  # one system: its time average, and no error across systems
        averages = averages.squeeze(REALIZATION, drop=True) if REALIZATION in averages.dims else averages
        result = xr.Dataset({"mean": averages, "stderr": xr.full_like(averages, np.nan)})
    result["mean"].attrs.update(long_name="stationary order parameter (time average after the transient)",
                                units="1")
    return result


def equilibration(r: xr.DataArray, discard: float = 0.5) -> xr.Dataset:
    """Which systems' ``r`` still drifts after the discarded transient (:func:`gpuensembles.analysis.statistics.drift`).

    Parameters
    ----------
    r : DataArray
        Order parameter over ``time`` and ``realization``, computed.
    discard : float
        Fraction of the samples treated as the transient.

    Returns
    -------
    Dataset
        ``z`` and ``drifting`` per system; attributes ``threshold`` and ``discard``.
    """
    after = _after(r, discard)
    if after.sizes["time"] < 9:
        raise ValueError(f"equilibration needs at least 9 samples after the transient, got {after.sizes['time']}: "
                         "sample more often (sample_every) or discard less")
    return drift(after, "time").assign_attrs(discard=discard)


@xr.register_dataset_accessor("kuramoto")
class KuramotoAccessor:
    """``ds.kuramoto``: the stationary order parameter of a ``gpuensembles.kuramoto`` result."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def equilibration(self, discard: float = 0.5) -> xr.Dataset:
        """Systems whose ``r`` still drifts after the first fraction ``discard``; see :func:`equilibration`."""
        return equilibration(self._ds["r"].compute(), discard)

    def order_parameter(self, discard: float = 0.5) -> xr.Dataset:
        """Stationary ``<r>`` after the first fraction ``discard`` (see :func:`order_parameter`).

        For computed results with enough samples, warns when systems still drift there.
        """
        r = self._ds["r"]
        if r.chunks is None and r.sizes["time"] - int(np.floor(discard * r.sizes["time"])) >= 9:
            warn_if_drifting(self.equilibration(discard), noun="system", what="r over the last third",
                             after=f" after the first {discard:.0%} of the run",
                             fix="run longer (steps) or discard more", stacklevel=3)
        return order_parameter(r, discard)
