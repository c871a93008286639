"""First-passage-time statistics: mean with standard error, survival and CDF, Arrhenius fits.

Functions take DataArrays and reduce over ``dim`` (``"realization"``) with xarray
operations only, so dask-backed inputs stay lazy. Nothing here knows a model: the
``Dataset.fpt`` accessor of :mod:`gpuensembles.models.josephson.analysis` resolves the
variable names of escape-time and switching-current results and delegates here.
"""


import numpy as np
import xarray as xr

from ..core.io import REALIZATION
from ..core.validation import check_choice, check_dim, check_grid, real_array

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
    kept, n, n_censored, blank = _passed_only(times, passed, dim, censored)
    m = kept.mean(dim).where(~blank)
    se = (kept.std(dim, ddof=1) / np.sqrt(n)).where(~blank)
    units = times.attrs.get("units", "1")
    return xr.Dataset(
        {
            "mean": m.assign_attrs(long_name=f"mean {times.attrs.get('long_name', 'passage time')}", units=units),
            "stderr": se.assign_attrs(long_name="standard error of the mean", units=units),
            "n": n.assign_attrs(long_name="realizations in the mean"),
            "n_censored": n_censored.assign_attrs(long_name="realizations that did not pass"),
        }
    )


def _passed_only(times, passed, dim, censored):
    """The values that passed, the count of them and of the others, and the mask of points to report NaN at."""
    check_choice("censored", censored, CENSORED)
    check_dim("dim", dim, times.dims)
    n_censored = (~passed).sum(dim)
    return times.where(passed), passed.sum(dim), n_censored, (n_censored > 0) if censored == "nan" else False


def spread(times: xr.DataArray, passed: xr.DataArray, dim: str = REALIZATION, censored: str = "nan") -> xr.Dataset:
    """Standard deviation of the passage times (or switching currents) with its standard error.

    The error is the delta method's, ``sqrt((m4 - s^4) / n) / (2 s)`` with ``m4`` the fourth
    central moment: no normal distribution is assumed (switching distributions are skewed).

    Parameters
    ----------
    times, passed : DataArray
        As in :func:`mean`.
    dim : str
        Ensemble dimension.
    censored : {"nan", "drop"}
        As in :func:`mean`.

    Returns
    -------
    Dataset
        ``std`` (sample standard deviation, ``ddof=1``), ``stderr`` and ``n``, without ``dim``.
    """
    kept, n, _, blank = _passed_only(times, passed, dim, censored)
    s = kept.std(dim, ddof=1)
    m4 = ((kept - kept.mean(dim)) ** 4).mean(dim)
    se = np.sqrt(np.maximum(m4 - s**4, 0.0) / n) / (2.0 * s)
    units, name = times.attrs.get("units", "1"), times.attrs.get("long_name", "passage time")
    return xr.Dataset({
        "std": s.where(~blank).assign_attrs(long_name=f"standard deviation of the {name}", units=units),
        "stderr": se.where(~blank).assign_attrs(long_name="standard error of std (delta method)", units=units),
        "n": n.assign_attrs(long_name="realizations used"),
    })


def percentile(times: xr.DataArray, passed: xr.DataArray, q, dim: str = REALIZATION,
               censored: str = "nan") -> xr.Dataset:
    """Percentiles of the passage times (or switching currents) with distribution-free standard errors.

    The error of the ``q`` percentile is half the width of the order-statistic interval that
    holds it with probability 95% (the sample percentiles at ``q/100 -+ 1.96 sqrt(q/100 (1 - q/100) / n)``)
    over ``2 * 1.96``: no density is estimated.

    Parameters
    ----------
    times, passed : DataArray
        As in :func:`mean`; ``dim`` must be a single chunk if the data are dask-backed.
    q : float or array, in (0, 100)
        Percentiles.
    dim : str
        Ensemble dimension.
    censored : {"nan", "drop"}
        As in :func:`mean`.

    Returns
    -------
    Dataset
        ``percentile`` and ``stderr`` over ``percentile_q`` (and the other dimensions), and ``n``.
    """
    q = np.atleast_1d(real_array("q", q))
    if q.ndim != 1 or q.size == 0 or not np.all((q > 0) & (q < 100)):
        raise ValueError(f"q must be percentiles in (0, 100) (a number or a 1-D array), got {q!r}")
    kept, n, _, blank = _passed_only(times, passed, dim, censored)
    u = q / 100.0

    def quantiles(x):
        """The sample quantiles at ``u`` and at the ends of their 95% order-statistic intervals."""
        x = x[np.isfinite(x)]
        if x.size == 0:
            return np.full((3, u.size), np.nan)
        half = 1.96 * np.sqrt(u * (1.0 - u) / x.size)
        return np.stack([np.quantile(x, p) for p in (u, np.clip(u - half, 0, 1), np.clip(u + half, 0, 1))])

    found = xr.apply_ufunc(quantiles, kept, input_core_dims=[[dim]], output_core_dims=[["which", "percentile_q"]],
                           vectorize=True, dask="parallelized", output_dtypes=[float],
                           dask_gufunc_kwargs={"output_sizes": {"which": 3, "percentile_q": u.size}})
    value, low, high = (found.isel(which=i, drop=True) for i in range(3))
    units = times.attrs.get("units", "1")
    coords = {"percentile_q": ("percentile_q", q, {"long_name": "percentile", "units": "percent"})}
    return xr.Dataset({
        "percentile": value.where(~blank).assign_attrs(long_name=f"percentile of the "
                                                                 f"{times.attrs.get('long_name', 'passage time')}",
                                                       units=units),
        "stderr": ((high - low) / (2 * 1.96)).where(~blank).assign_attrs(
            long_name="standard error of the percentile (order statistics)", units=units),
        "n": n.assign_attrs(long_name="realizations used"),
    }).assign_coords(coords)


def survival(times: xr.DataArray, passed: xr.DataArray, t, censor_time: xr.DataArray, dim: str = REALIZATION,
             grid_dim: str = "time", decreasing: bool = False) -> xr.DataArray:
    """Empirical survival function ``S(t) = P(T > t)`` on the grid ``t`` (dimension ``grid_dim``).

    A realization that did not pass counts as surviving up to its ``censor_time``;
    beyond the earliest censoring time of a point ``S`` is unknown and returned as NaN.
    Works for switching currents too (``T`` the switching bias, ``t`` a bias grid).

    ``decreasing=True`` is for a ``T`` that a ramp reaches from above (a retrapping current
    under a falling bias): not yet passed at ``t`` then means ``T < t``, a realization that
    did not pass has ``T`` below its ``censor_time``, and ``S(t) = P(T < t)`` is unknown
    below the highest censoring value.
    """
    check_dim("dim", dim, times.dims)
    grid = xr.DataArray(check_grid("t", t), dims=(grid_dim,), attrs={"units": times.attrs.get("units", "1")})
    if decreasing:
        s = ((times < grid) | ~passed).mean(dim)
        latest = censor_time.where(~passed).max(dim)
        s = s.where(latest.isnull() | (grid > latest))
        return s.assign_coords({grid_dim: grid}).assign_attrs(
            long_name="probability P(T < t) of not having passed when a falling ramp reaches t", units="1")
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

    Forms (Pierro et al. 2018, Eqs. 12-13), with ``x`` the noise intensity ``D`` (or ``theta``)::

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
    check_choice("form", form, ("arrhenius", "kramers", "power"))
    check_dim("dim", dim, mean_time.dims)
    if mean_time.dims != (dim,):
        raise ValueError(f"kramers_fit needs means along dim={dim!r} only, got dims {mean_time.dims}; "
                         "select the other dims first")
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

    check_dim("dim", dim, sample.dims)
    if sample.dims != (dim,):
        raise ValueError(f"compare needs one distribution along dim={dim!r}; got dims {sample.dims}")
    if not callable(cdf):
        raise TypeError(f"cdf must be callable (x -> P(X <= x)), got {type(cdf).__name__} {cdf!r}")
    x = np.sort(np.asarray(sample.values, dtype=float))
    x = x[np.isfinite(x)]
    grid = np.linspace(x[0], x[-1], 201) if grid is None else check_grid("grid", grid)
    test = stats.kstest(x, cdf)
    empirical = np.searchsorted(x, grid, side="right") / x.size
    try:
        theory = cdf(grid)
    except (ValueError, ArithmeticError) as err:
        raise ValueError(f"the theoretical CDF cannot be evaluated on grid (from {grid.min():.6g} to "
                         f"{grid.max():.6g}): {err}") from None
    return xr.Dataset(
        {
            "difference": ("x", empirical - theory, {"long_name": "empirical CDF - theoretical CDF"}),
            "ks_statistic": ((), test.statistic),
            "ks_pvalue": ((), test.pvalue),
            "n": ((), x.size),
        },
        coords={"x": grid},
    )


def quasipotential(mean_time: xr.DataArray, stderr: xr.DataArray, damping, dim: str = "D") -> xr.Dataset:
    """Local barrier from neighbouring noise levels (Pierro et al. 2018, Eq. 14 in differential form).

    ``Delta U ~ d ln(theta <T>) / d(1/theta)`` with ``theta = D / damping``, estimated by
    finite differences between consecutive points along ``dim``; the ``theta`` factor is
    the prefactor of Eq. 13. Useful where no potential is known (non-Hamiltonian systems).

    Returns
    -------
    Dataset
        ``barrier`` and ``barrier_stderr`` at the midpoints (in ``1/theta``) of ``dim``.
    """
    check_dim("dim", dim, mean_time.dims)
    if mean_time.dims != (dim,):
        raise ValueError(f"quasipotential needs means along dim={dim!r} only, got dims {mean_time.dims}")
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
