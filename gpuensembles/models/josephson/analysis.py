"""The ``Dataset.fpt`` accessor: statistics of escape-time, switching- and retrapping-current results.

It resolves the variable names of each kind of result (``escape_time``/``escaped``,
``switching_current``/``switched`` or ``retrapping_current``/``retrapped``) and delegates to
the model-agnostic functions of :mod:`gpuensembles.analysis.first_passage`; comparisons with
Fulton-Dunkleberger and the Kramers/Mel'nikov rates use this family's
:mod:`~gpuensembles.models.josephson.theory`.
"""

import numpy as np
import xarray as xr

from ...analysis.first_passage import (
    default_grid,
    kramers_fit,
    ks_compare,
    mean,
    percentile,
    quasipotential,
    spread,
    survival,
)
from ...core.io import REALIZATION
from ...core.validation import check_choice


def rate_curve_errors(ds: xr.Dataset, quantiles=(), draws: int = 200, seed: int = 0) -> xr.Dataset:
    """Standard errors that the rate curve of a ``method="rates"`` result gives its statistics.

    The samples of such a result are exact draws from the Fulton-Dunkleberger distribution of
    a *measured* rate curve; the curve's own errors move the whole distribution, an error no
    number of samples reduces. It is found by resampling the curve: ``draws`` curves with
    ``ln Gamma_j`` shifted by normal errors ``stderr_j / Gamma_j`` (independent between rate
    points) give as many distributions
    (:func:`~gpuensembles.models.josephson.fulton_dunkleberger.moments`), whose spread of the
    mean, the width and the quantiles is the error. The rate is ``rate`` under the escape
    criterion and ``switching_rate`` under the voltage criterion.

    Parameters
    ----------
    ds : Dataset
        A ``switching_currents(method="rates")`` result.
    quantiles : array_like
        Probabilities in (0, 1) of the quantiles whose errors are wanted.
    draws : int
        Resampled curves.
    seed : int
        Seed of the resampling.

    Returns
    -------
    Dataset
        ``mean_stderr``, ``std_stderr`` and ``quantile_stderr`` (over ``percentile_q``) over
        the sweep dimensions, in the units of ``switching_current``.
    """
    from . import fulton_dunkleberger as fd

    if "rate_gamma" not in ds.dims:
        raise ValueError("rate_curve_errors needs a switching_currents(method='rates') result")
    name = "switching_rate" if ds.attrs.get("criterion") == "voltage" else "rate"
    curve = fd.make_curve(ds.rate_gamma.values, ds[name].values, ds[f"{name}_stderr"].values)
    dgamma = ds["dgamma"] if "dgamma" in ds.coords else xr.DataArray(float(ds.attrs["dgamma"]))
    ends = dict(gamma_start=float(ds.attrs["gamma_start"]), gamma_end=float(ds.attrs["gamma_end"]))
    h = float(ds.attrs["h"])
    found = [fd.moments(curve, float(g) / h, draws=draws, seed=seed, quantiles=quantiles, **ends)
             for g in np.atleast_1d(dgamma.values)]
    dims, coords = dgamma.dims, {k: v for k, v in dgamma.coords.items()}
    units = {"units": ds["switching_current"].attrs.get("units", "1")}

    def over(key):
        """The ``key`` of every sweep point, as a DataArray over the sweep dimensions."""
        values = np.array([f[key] for f in found]).reshape(dgamma.shape + np.shape(found[0][key]))
        extra = ("percentile_q",) if key == "quantile_stderr" else ()
        return xr.DataArray(values, dims=dims + extra, coords=coords, attrs=units)

    out = xr.Dataset({"mean_stderr": over("mean_stderr"), "std_stderr": over("std_stderr"),
                      "quantile_stderr": over("quantile_stderr")})
    return out.assign_coords(percentile_q=("percentile_q", 100.0 * np.atleast_1d(np.asarray(quantiles, float)),
                                           {"long_name": "percentile", "units": "percent"}))


def _with_curve(stats: xr.Dataset, curve: xr.DataArray | None) -> xr.Dataset:
    """``stats`` with ``sample_stderr`` kept, ``curve_stderr`` added and ``stderr`` their combination."""
    stats["sample_stderr"] = stats["stderr"].assign_attrs(long_name="standard error from the samples alone")
    if curve is None:
        return stats
    stats["curve_stderr"] = curve.assign_attrs(long_name="standard error from the rate curve's errors (resampled)",
                                               units=stats["stderr"].attrs.get("units", "1"))
    total = np.sqrt(stats["sample_stderr"] ** 2 + curve**2)
    stats["stderr"] = total.assign_attrs(long_name="standard error: samples and rate curve", units=curve.attrs["units"])
    return stats


#: The value and passage variables of each kind of result.
_KINDS = {"switching": ("switching_current", "switched"), "retrapping": ("retrapping_current", "retrapped"),
          "escape": ("escape_time", "escaped")}


@xr.register_dataset_accessor("fpt")
class FirstPassageAccessor:
    """``ds.fpt``: statistics of ``escape_times``, ``switching_currents`` and ``retrapping_currents`` results.

    Resolves the variable names of each kind of result and delegates to the functions
    of :mod:`gpuensembles.analysis.first_passage` (and to the family's
    :mod:`~gpuensembles.models.josephson.theory` for ``compare``). For a retrapping result
    (the bias ramped down) ``cdf(x)`` is still ``P(I_r <= x)`` and ``survival(x)`` ``P(I_r > x)``.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds
        self._kind = next((kind for kind, (name, _) in _KINDS.items() if name in ds), "escape")
        self._switching = self._kind == "switching"

    @property
    def _times(self):
        return self._ds[_KINDS[self._kind][0]]

    @property
    def _passed(self):
        return self._ds[_KINDS[self._kind][1]]

    def _param(self, name):
        return self._ds[name] if name in self._ds.coords else self._ds.attrs[name]

    def _censor_value(self):
        steps = self._ds["steps"]
        if self._kind == "retrapping":
            return self._param("gamma_start") - steps * self._param("dgamma")
        if self._switching:
            return self._param("gamma_start") + steps * self._param("dgamma")
        return steps * self._param("h")

    def _grid_dim(self):
        return "time" if self._kind == "escape" else "gamma"

    def _curve(self, dim, key, quantiles=()):
        """The rate curve's part of the error of a ``method="rates"`` result (None for others)."""
        if dim != REALIZATION or "rate_gamma" not in self._ds.dims:
            return None
        return rate_curve_errors(self._ds, quantiles=quantiles)[key]

    def mean(self, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
        """Mean passage time (or switching current) and standard error; see :func:`mean`.

        For a ``method="rates"`` result ``stderr`` combines the samples' error
        (``sample_stderr``) with the rate curve's (``curve_stderr``, :func:`rate_curve_errors`).
        """
        return _with_curve(mean(self._times, self._passed, dim=dim, censored=censored),
                           self._curve(dim, "mean_stderr"))

    def std(self, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
        """Width (standard deviation) and its standard error; see :func:`spread` and :meth:`mean`."""
        return _with_curve(spread(self._times, self._passed, dim=dim, censored=censored),
                           self._curve(dim, "std_stderr"))

    def percentile(self, q, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
        """Percentiles ``q`` (in (0, 100)) and their standard errors; see :func:`percentile` and :meth:`mean`."""
        stats = percentile(self._times, self._passed, q, dim=dim, censored=censored)
        return _with_curve(stats, self._curve(dim, "quantile_stderr", quantiles=stats.percentile_q.values / 100))

    def survival(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Survival ``P(T > t)``; ``t`` defaults to 201 points up to the largest value."""
        if self._kind == "retrapping":
            below = self.cdf(t, dim=dim)
            return (1.0 - below).assign_attrs(long_name="probability P(I_r > t)", units="1")
        t = default_grid(self._times) if t is None else t
        return survival(self._times, self._passed, t, self._censor_value(), dim=dim, grid_dim=self._grid_dim())

    def cdf(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Cumulative distribution ``P(T <= t)`` (``1 - survival``)."""
        if self._kind == "retrapping":  # not yet retrapped when the falling bias reaches t: I_r < t
            t = default_grid(self._times) if t is None else t
            below = survival(self._times, self._passed, t, self._censor_value(), dim=dim, grid_dim="gamma",
                             decreasing=True)
            return below.assign_attrs(long_name="cumulative probability P(I_r <= t)", units="1")
        s = self.survival(t, dim=dim)
        return (1.0 - s).assign_attrs(long_name="cumulative probability P(T <= t)", units="1")

    def _means(self):
        if self._kind != "escape":
            raise ValueError("Arrhenius analyses need escape times at constant bias (escape_times), not a ramp")
        return self.mean().compute()

    def kramers_fit(self, dim: str = "D", form: str = "arrhenius") -> xr.Dataset:
        """Fit ``ln <T>`` against ``1/dim``; see :func:`kramers_fit`. Computes the means."""
        m = self._means()
        return kramers_fit(m["mean"], m["stderr"], dim=dim, form=form)

    def quasipotential(self, dim: str = "D") -> xr.Dataset:
        """Local barrier ``d ln(theta <T>) / d(1/theta)``; see :func:`quasipotential`."""
        m = self._means()
        return quasipotential(m["mean"], m["stderr"], self._ds.attrs["damping"], dim=dim)

    def _gamma_dot(self):
        return float(self._param("dgamma")) / float(self._param("h"))

    def rates_from_histogram(self, bins=50, combine: bool = False) -> xr.Dataset:
        """Escape rates from the switching histogram; see :func:`gpuensembles.josephson.rates_from_histogram`."""
        from .histograms import rates_from_histogram

        if not self._switching:
            raise ValueError("rates_from_histogram needs a switching_currents result")
        return rates_from_histogram(self._ds, bins=bins, combine=combine)

    def theory_cdf(self, form: str = "melnikov"):
        """Fulton-Dunkleberger CDF for this (single-point) switching run, as a callable.

        Uses the adiabatic :func:`gpuensembles.models.josephson.theory.escape_rate` of ``form`` with the run's
        ``V0, damping, D`` and ramp. The rates describe escape *out of the well*: compare
        them with runs made with ``passage="next_well"``. The callable keeps the rates it
        has evaluated: called again over the same range (as :meth:`compare` and
        :meth:`plot_cdf` do, over the sample's range), it evaluates none anew (each
        evaluation integrates 400 rates; a Mel'nikov rate takes an integral of its own).
        """
        from functools import lru_cache, partial

        from . import theory

        if not self._switching:
            raise ValueError("theory_cdf needs a switching_currents result")
        check_choice("form", form, theory.RATE_FORMS)
        damping = float(self._param("damping"))
        rate = lru_cache(maxsize=4096)(partial(theory.escape_rate, V0=float(self._param("V0")), damping=damping,
                                               theta=float(self._param("D")) / damping, form=form,
                                               model=self._ds.attrs["dynamics"]))
        return partial(theory.fulton_dunkleberger_cdf, gamma_dot=self._gamma_dot(), rate=rate,
                       gamma_start=float(self._param("gamma_start")))

    def _theory(self, theory):
        """``theory`` as a CDF callable: a rate form name, a callable, or None."""
        if isinstance(theory, str):
            from .theory import RATE_FORMS

            if theory not in RATE_FORMS:
                raise ValueError(f"theory must be a rate form, one of {RATE_FORMS}, or a CDF callable, got {theory!r}")
            return self.theory_cdf(theory)
        if theory is None or callable(theory):
            return theory
        raise TypeError(f"theory must be a rate form name (e.g. 'melnikov') or a CDF callable, got {theory!r}")

    def compare(self, theory="melnikov", grid=None, dim: str = REALIZATION) -> xr.Dataset:
        """CDF difference and KS test against ``theory`` (a rate form name or a CDF callable)."""
        if theory is None:
            raise TypeError("theory must be a rate form name (e.g. 'melnikov') or a CDF callable, got None")
        return ks_compare(self._times.compute(), self._theory(theory), grid=grid, dim=dim)

    def plot_cdf(self, ax=None, theory=None, **kwargs):
        """Empirical CDF (and ``theory``, a form name or callable, if given) with matplotlib."""
        from ...analysis.plots import plot_cdf

        return plot_cdf(self._times.compute(), ax=ax, theory=self._theory(theory), **kwargs)

    def plot_arrhenius(self, dim: str = "D", form: str = "power", ax=None):
        """``ln <T>`` against ``1/dim`` with error bars and the ``form`` fit (matplotlib)."""
        from ...analysis.plots import plot_arrhenius

        m = self._means()
        return plot_arrhenius(m["mean"], m["stderr"], self.kramers_fit(dim=dim, form=form), dim=dim, ax=ax)
