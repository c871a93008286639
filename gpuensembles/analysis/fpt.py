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


def survival(times: xr.DataArray, passed: xr.DataArray, t, censor_time: xr.DataArray, dim: str = REALIZATION,
             grid_dim: str = "time") -> xr.DataArray:
    """Empirical survival function ``S(t) = P(T > t)`` on the grid ``t`` (dimension ``grid_dim``).

    A realization that did not pass counts as surviving up to its ``censor_time``;
    beyond the earliest censoring time of a point ``S`` is unknown and returned as NaN.
    Works for switching currents too (``T`` the switching bias, ``t`` a bias grid).
    """
    grid = xr.DataArray(np.asarray(t, dtype=float), dims=(grid_dim,), attrs={"units": times.attrs.get("units", "1")})
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError("t must be a non-empty 1-D grid of times")
    alive = (times > grid) | ~passed
    s = alive.mean(dim)
    earliest = censor_time.where(~passed).min(dim)
    s = s.where(earliest.isnull() | (grid < earliest))
    return s.assign_coords({grid_dim: grid}).assign_attrs(long_name="survival probability P(T > t)", units="1")


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


def rate_from_histogram(currents: xr.DataArray, gamma_dot, bins=50, dim: str = REALIZATION) -> xr.Dataset:
    """Escape rate ``Gamma(gamma)`` from a switching-current sample (Fulton-Dunkleberger inversion).

    With ``S_i`` the number of realizations still unswitched at the lower edge of bin
    ``i`` (width ``dgamma``), ``Gamma_i = (gamma_dot / dgamma) ln(S_i / S_{i+1})``
    (Fulton & Dunkleberger, PRB 9, 4760 (1974)). The standard error of the log follows
    from the binomial count in the bin, ``sqrt(n_i / (S_i S_{i+1}))``. Bins with
    ``S_{i+1} = 0`` are NaN. Computes the data (a histogram needs all of it).

    Parameters
    ----------
    currents : DataArray
        Switching biases (NaN where not switched), 1-D along ``dim``.
    gamma_dot : float
        Ramp rate ``d gamma / dt`` (``dgamma / h`` of the simulation).
    bins : int or array
        Number of bins over the sample's range, or bin edges.
    """
    values = np.asarray(currents.values, dtype=float)
    if currents.dims != (dim,):
        raise ValueError(f"rate_from_histogram needs one distribution along {dim!r}; got dims {currents.dims}, "
                         "select a single parameter point first")
    values = values[np.isfinite(values)]
    counts, edges = np.histogram(values, bins=bins)
    remaining = values.size - np.concatenate(([0], np.cumsum(counts)))  # S at each edge
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(remaining[:-1] / remaining[1:])
        error = np.sqrt(counts / (remaining[:-1] * remaining[1:]))
    log_ratio[remaining[1:] == 0] = np.nan
    width = np.diff(edges)
    centres = 0.5 * (edges[1:] + edges[:-1])
    coords = {"gamma": ("gamma", centres, {"long_name": "bias (bin centre)", "units": "1"})}
    return xr.Dataset(
        {
            "rate": ("gamma", gamma_dot / width * log_ratio, {"long_name": "escape rate from the histogram"}),
            "rate_stderr": ("gamma", gamma_dot / width * error),
            "count": ("gamma", counts),
        },
        coords=coords,
    )


def ks_compare(sample: xr.DataArray, cdf, grid=None, dim: str = REALIZATION) -> xr.Dataset:
    """Compare a sample with a theoretical CDF: difference on a grid and the KS test.

    Parameters
    ----------
    sample : DataArray
        One distribution along ``dim`` (NaN values, e.g. not switched, are dropped).
    cdf : callable
        ``cdf(x) -> P(X <= x)`` for an array ``x``.
    grid : array, optional
        Where to tabulate ``empirical - theory`` (default: 201 points over the sample).

    Returns
    -------
    Dataset
        ``difference`` on ``grid`` and scalars ``ks_statistic``, ``ks_pvalue``, ``n``.
    """
    from scipy import stats

    if sample.dims != (dim,):
        raise ValueError(f"compare needs one distribution along {dim!r}; got dims {sample.dims}")
    x = np.sort(np.asarray(sample.values, dtype=float))
    x = x[np.isfinite(x)]
    test = stats.kstest(x, cdf)
    grid = np.linspace(x[0], x[-1], 201) if grid is None else np.asarray(grid, dtype=float)
    empirical = np.searchsorted(x, grid, side="right") / x.size
    return xr.Dataset(
        {
            "difference": ("x", empirical - cdf(grid), {"long_name": "empirical CDF - theoretical CDF"}),
            "ks_statistic": ((), test.statistic),
            "ks_pvalue": ((), test.pvalue),
            "n": ((), x.size),
        },
        coords={"x": grid},
    )


def quasipotential(mean_time: xr.DataArray, stderr: xr.DataArray, damping, dim: str = "D") -> xr.Dataset:
    """Local barrier from neighbouring noise levels (seed 000, Eq. 14 in differential form).

    ``Delta U ~ d ln(theta <T>) / d(1/theta)`` with ``theta = D / damping``, estimated by
    finite differences between consecutive points along ``dim``; the ``theta`` factor is
    the prefactor of Eq. 13. Useful where no potential is known (non-Hamiltonian systems).

    Returns
    -------
    Dataset
        ``barrier`` and ``barrier_stderr`` at the midpoints (in ``1/theta``) of ``dim``.
    """
    if mean_time.dims != (dim,):
        raise ValueError(f"quasipotential needs means along {dim!r} only, got dims {mean_time.dims}")
    theta = mean_time[dim].values.astype(float) / float(damping)
    y = np.log(theta * mean_time.values)
    rel = (stderr / mean_time).values
    inv = 1.0 / theta
    slope = np.diff(y) / np.diff(inv)
    error = np.sqrt(rel[1:] ** 2 + rel[:-1] ** 2) / np.abs(np.diff(inv))
    mid = 0.5 * (inv[1:] + inv[:-1])
    return xr.Dataset(
        {"barrier": ("inverse_theta", slope, {"long_name": "quasipotential barrier Delta U"}),
         "barrier_stderr": ("inverse_theta", error)},
        coords={"inverse_theta": ("inverse_theta", mid, {"long_name": "1 / theta at the midpoint"})},
    )


@xr.register_dataset_accessor("fpt")
class FirstPassageAccessor:
    """``ds.fpt``: statistics of ``escape_times`` and ``switching_currents`` results.

    Resolves the variable names of each kind of result and delegates to the functions
    of this module (and to :mod:`gpuensembles.theory` for ``compare``).
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds
        self._switching = "switching_current" in ds

    @property
    def _times(self):
        return self._ds["switching_current" if self._switching else "escape_time"]

    @property
    def _passed(self):
        return self._ds["switched" if self._switching else "escaped"]

    def _param(self, name):
        return self._ds[name] if name in self._ds.coords else self._ds.attrs[name]

    def _censor_value(self):
        steps = self._ds["steps"]
        if self._switching:
            return self._param("gamma_start") + steps * self._param("dgamma")
        return steps * self._param("h")

    def _grid_dim(self):
        return "gamma" if self._switching else "time"

    def mean(self, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
        """Mean passage time (or switching current) and standard error; see :func:`mean`."""
        return mean(self._times, self._passed, dim=dim, censored=censored)

    def survival(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Survival ``P(T > t)``; ``t`` defaults to 201 points up to the largest value."""
        t = default_grid(self._times) if t is None else t
        return survival(self._times, self._passed, t, self._censor_value(), dim=dim, grid_dim=self._grid_dim())

    def cdf(self, t=None, dim: str = REALIZATION) -> xr.DataArray:
        """Cumulative distribution ``P(T <= t)`` (``1 - survival``)."""
        s = self.survival(t, dim=dim)
        return (1.0 - s).assign_attrs(long_name="cumulative probability P(T <= t)", units="1")

    def _means(self):
        if self._switching:
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

    def rate_from_histogram(self, bins=50, dim: str = REALIZATION) -> xr.Dataset:
        """Escape rate from the switching histogram; see :func:`rate_from_histogram`."""
        if not self._switching:
            raise ValueError("rate_from_histogram needs a switching_currents result")
        return rate_from_histogram(self._times.compute(), self._gamma_dot(), bins=bins, dim=dim)

    def theory_cdf(self, form: str = "melnikov"):
        """Fulton-Dunkleberger CDF for this (single-point) switching run, as a callable.

        Uses the adiabatic :func:`gpuensembles.theory.escape_rate` of ``form`` with the run's
        ``V0, damping, D`` and ramp. The rates describe escape *out of the well*: compare
        them with runs made with ``passage="next_well"``.
        """
        from functools import partial

        from .. import theory

        if not self._switching:
            raise ValueError("theory_cdf needs a switching_currents result")
        damping = float(self._param("damping"))
        rate = partial(theory.escape_rate, V0=float(self._param("V0")), damping=damping,
                       theta=float(self._param("D")) / damping, form=form,
                       model=self._ds.attrs["dynamics"])
        return partial(theory.fulton_dunkleberger_cdf, gamma_dot=self._gamma_dot(), rate=rate,
                       gamma_start=float(self._param("gamma_start")))

    def compare(self, theory="melnikov", grid=None, dim: str = REALIZATION) -> xr.Dataset:
        """CDF difference and KS test against ``theory`` (a rate form name or a CDF callable)."""
        cdf = self.theory_cdf(theory) if isinstance(theory, str) else theory
        return ks_compare(self._times.compute(), cdf, grid=grid, dim=dim)

    def plot_cdf(self, ax=None, theory=None, **kwargs):
        """Empirical CDF (and ``theory``, a form name or callable, if given) with matplotlib."""
        from .plots import plot_cdf

        cdf = self.theory_cdf(theory) if isinstance(theory, str) else theory
        return plot_cdf(self._times.compute(), ax=ax, theory=cdf, **kwargs)

    def plot_arrhenius(self, dim: str = "D", form: str = "power", ax=None):
        """``ln <T>`` against ``1/dim`` with error bars and the ``form`` fit (matplotlib)."""
        from .plots import plot_arrhenius

        m = self._means()
        return plot_arrhenius(m["mean"], m["stderr"], self.kramers_fit(dim=dim, form=form), dim=dim, ax=ax)
