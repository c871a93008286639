"""First-passage-time statistics: mean with standard error, survival and CDF, Arrhenius fits.

Functions take DataArrays and reduce over ``dim`` (``"realization"``) with xarray
operations only, so dask-backed inputs stay lazy. The ``Dataset.fpt`` accessor resolves
variable names and delegates here.
"""

import numpy as np
import xarray as xr

REALIZATION = "realization"
CENSORED = ("nan", "drop")


def mean(times: xr.DataArray, passed: xr.DataArray, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
    """Mean first-passage time with its standard error.

    Parameters
    ----------
    times : DataArray
        Passage times (NaN where the realization did not pass).
    passed : DataArray of bool
        Whether each realization passed within its step limit.
    dim : str
        Ensemble dimension.
    censored : {"nan", "drop"}
        With realizations that never passed, the mean of the others is biased low:
        ``"nan"`` (default) returns NaN for such points; ``"drop"`` returns the mean
        conditioned on passage.

    Returns
    -------
    Dataset
        ``mean``, ``stderr`` (sample std / sqrt(n)), ``n`` (realizations used) and
        ``n_censored``, each without ``dim``.
    """
    if censored not in CENSORED:
        raise ValueError(f"censored must be one of {CENSORED}, got {censored!r}")
    kept = times.where(passed)
    n = passed.sum(dim)
    n_censored = (~passed).sum(dim)
    m = kept.mean(dim)
    se = kept.std(dim, ddof=1) / np.sqrt(n)
    if censored == "nan":
        m = m.where(n_censored == 0)
        se = se.where(n_censored == 0)
    units = times.attrs.get("units", "1")
    return xr.Dataset(
        {
            "mean": m.assign_attrs(long_name=f"mean {times.attrs.get('long_name', 'passage time')}", units=units),
            "stderr": se.assign_attrs(long_name="standard error of the mean", units=units),
            "n": n.assign_attrs(long_name="realizations in the mean"),
            "n_censored": n_censored.assign_attrs(long_name="realizations that did not pass"),
        }
    )


def survival(times: xr.DataArray, passed: xr.DataArray, t, censor_time: xr.DataArray, dim: str = REALIZATION) -> xr.DataArray:
    """Empirical survival function ``S(t) = P(T > t)`` on the grid ``t``.

    A realization that did not pass counts as surviving up to its ``censor_time``;
    beyond the earliest censoring time of a point ``S`` is unknown and returned as NaN.
    """
    grid = xr.DataArray(np.asarray(t, dtype=float), dims=("time",), attrs={"units": times.attrs.get("units", "1")})
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError("t must be a non-empty 1-D grid of times")
    alive = (times > grid) | ~passed
    s = alive.mean(dim)
    earliest = censor_time.where(~passed).min(dim)
    s = s.where(earliest.isnull() | (grid < earliest))
    return s.assign_coords(time=grid).assign_attrs(long_name="survival probability P(T > t)", units="1")


def default_grid(times: xr.DataArray, n: int = 201) -> np.ndarray:
    """``n`` times from 0 to the largest observed passage time (computes the data)."""
    if times.chunks is not None:
        raise ValueError("pass t= (a time grid) for dask-backed data, or .compute() the Dataset first")
    return np.linspace(0.0, float(times.max()), n)


def kramers_fit(mean_time: xr.DataArray, stderr: xr.DataArray, dim: str = "D", form: str = "arrhenius") -> xr.Dataset:
    """Weighted least-squares fit of ``ln <T>`` against ``1/x`` along ``dim``.

    Forms (seed 000, Eqs. 12-13), with ``x`` the noise intensity ``D`` (or ``theta``)::

        arrhenius:  ln <T> = a + slope / x
        kramers:    ln <T> = a + slope / x - ln x        (prefactor 1/theta)
        power:      ln <T> = a + slope / x + c ln x      (prefactor exponent c fitted)

    With ``x = D`` the slope is ``damping * Delta U``; with ``x = theta`` it is ``Delta U``.
    Weights are ``1/var(ln <T>) = (mean/stderr)^2``.

    Returns
    -------
    Dataset
        ``slope`` and ``slope_stderr`` (from the weighted normal equations, scaled by the
        reduced chi-square when it exceeds 1), ``intercept``, ``chi2`` and ``dof``,
        plus ``fit`` (the fitted ``<T>`` on the data's ``dim``).
    """
    forms = ("arrhenius", "kramers", "power")
    if form not in forms:
        raise ValueError(f"form must be one of {forms}, got {form!r}")
    if mean_time.dims != (dim,):
        raise ValueError(f"kramers_fit needs means along {dim!r} only, got dims {mean_time.dims}; select the other dims first")
    x = mean_time[dim].values.astype(float)
    y = np.log(mean_time.values)
    sigma = (stderr / mean_time).values
    columns = [np.ones_like(x), 1.0 / x] + ([np.log(x)] if form == "power" else [])
    offset = -np.log(x) if form == "kramers" else 0.0
    A = np.stack(columns, axis=-1)
    if A.shape[0] <= A.shape[1]:
        raise ValueError(f"form={form!r} needs more than {A.shape[1]} points along {dim!r}, got {A.shape[0]}")
    w = 1.0 / sigma
    coef, *_ = np.linalg.lstsq(A * w[:, None], (y - offset) * w, rcond=None)
    resid = (y - offset - A @ coef) * w
    dof = A.shape[0] - A.shape[1]
    chi2 = float(resid @ resid)
    cov = np.linalg.inv((A * w[:, None]).T @ (A * w[:, None])) * max(1.0, chi2 / dof)
    fit = np.exp(A @ coef + offset)
    return xr.Dataset(
        {
            "slope": ((), coef[1], {"long_name": "fitted barrier (damping * Delta U for x = D)"}),
            "slope_stderr": ((), float(np.sqrt(cov[1, 1]))),
            "intercept": ((), coef[0]),
            "chi2": ((), chi2),
            "dof": ((), dof),
            "fit": ((dim,), fit, {"long_name": f"fitted mean passage time ({form})"}),
        },
        coords={dim: mean_time[dim]},
        attrs={"form": form},
    )


@xr.register_dataset_accessor("fpt")
class FirstPassageAccessor:
    """``ds.fpt``: first-passage statistics of an ``escape_times`` result.

    Only resolves names and delegates to the functions of this module.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    @property
    def _times(self):
        return self._ds["escape_time"]

    @property
    def _passed(self):
        return self._ds["escaped"]

    def _censor_time(self):
        h = self._ds["h"] if "h" in self._ds.coords else self._ds.attrs["h"]
        return self._ds["steps"] * h

    def mean(self, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
        """Mean escape time and standard error; see :func:`mean`."""
        return mean(self._times, self._passed, dim=dim, censored=censored)

    def survival(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Survival ``P(T > t)``; ``t`` defaults to 201 points up to the largest time."""
        t = default_grid(self._times) if t is None else t
        return survival(self._times, self._passed, t, self._censor_time(), dim=dim)

    def cdf(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Cumulative distribution ``P(T <= t)`` (``1 - survival``)."""
        s = self.survival(t, dim=dim)
        return (1.0 - s).assign_attrs(long_name="cumulative probability P(T <= t)", units="1")

    def kramers_fit(self, dim: str = "D", form: str = "arrhenius") -> xr.Dataset:
        """Fit ``ln <T>`` against ``1/dim``; see :func:`kramers_fit`. Computes the means."""
        m = self.mean().compute()
        return kramers_fit(m["mean"], m["stderr"], dim=dim, form=form)
