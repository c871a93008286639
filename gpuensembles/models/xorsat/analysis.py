"""Time-to-solution (TTS) statistics of a stochastic solver, and ``Dataset.tts``.

A result (for example of :func:`gpuensembles.xorsat.solve`) holds, for every point of its
other dimensions (typically ``N`` and ``instance``, either of which may be absent), ``R``
independent runs of the solver along the dimension ``run``, with the variables

``tts_seconds`` (float, s)
    Time to solution in seconds of a solved run; for an unsolved run the time it ran
    before its timeout (a right-censored time).
``tts_sweeps`` (int)
    The same in sweeps (one sweep is one update attempt of every variable in every
    clone); the timeout in sweeps for an unsolved run.
``solved`` (bool)
    Whether the run found a solution before its timeout.

and optionally the attribute ``timeout_sweeps`` (ignored when an attribute
``timeout_given`` is present and false). Every function takes ``time="seconds"`` or
``time="sweeps"``, reduces over ``run`` and keeps every other dimension.

With many clones the TTS of a run is exponentially distributed, ``P(TTS > t) = exp(-t / tau)``
(Bernaschi et al., "How we are leading a 3-XORSAT challenge: from the energy landscape to
the algorithm and its efficient implementation on GPUs", EPL 133, 60005 (2021)), so a
single timescale ``tau`` (the mean TTS, in the unit of ``time``) describes an instance,
and the q-th percentile is ``t_q = -tau ln(1 - q / 100)``. :func:`mean` estimates ``tau``
from the run times (censored runs included), :func:`from_timeouts` from the number of
runs solved within a timeout only (the paper's Bayesian estimate), :func:`ks_test` checks
the exponential law and :func:`fit_growth` fits ``ln tau = a + b N``.
"""

import numpy as np
import xarray as xr

from ...core.validation import check_choice, check_count, check_dim, check_flag, check_real, real_array

RUN = "run"
INSTANCE = "instance"
#: time variable -> its unit when the variable carries no ``units`` attribute
TIMES = {"seconds": "s", "sweeps": "sweep"}
#: time -> its variable
TIME_VARIABLES = {"seconds": "tts_seconds", "sweeps": "tts_sweeps"}
STATISTICS = ("median", "mean")
#: Largest Monte Carlo null sample of :func:`ks_test`.
MAX_MC_SAMPLES = 10**8


def _times(ds: xr.Dataset, time: str):
    """The run times (float) and ``solved`` flags of ``ds``, validated, and the unit of ``time``."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds must be an xarray Dataset, got {type(ds).__name__}")
    check_choice("time", time, tuple(TIMES))
    if RUN not in ds.dims:
        raise ValueError(f"ds has no {RUN!r} dimension (the independent runs of the solver); "
                         f"it has dims {tuple(ds.dims)}")
    variable = TIME_VARIABLES[time]
    if variable not in ds.data_vars:
        raise ValueError(f"ds lacks the variable {variable!r} for time={time!r}; "
                         f"it has {sorted(ds.data_vars)}")
    if "solved" not in ds.data_vars:
        raise ValueError(f"ds lacks the variable 'solved'; it has {sorted(ds.data_vars)}")
    for name in (variable, "solved"):
        if RUN not in ds[name].dims:
            raise ValueError(f"variable {name!r} has no {RUN!r} dimension; got dims {ds[name].dims}")
    if ds.sizes[RUN] < 1:
        raise ValueError(f"ds has no runs (the {RUN!r} dimension is empty)")
    if ds["solved"].dtype != bool:
        raise ValueError(f"variable 'solved' must be boolean, got dtype {ds['solved'].dtype}")
    t = ds[variable]
    units = t.attrs.get("units", TIMES[time])
    return t.astype(float), ds["solved"], units


def _confidence(confidence) -> float:
    c = check_real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _chi2_ppf(p, dof):
    """``chi2.ppf(p, dof)`` elementwise on DataArrays (NaN for ``dof = 0``)."""
    from scipy import stats

    return xr.apply_ufunc(stats.chi2.ppf, p, dof, dask="parallelized", output_dtypes=[float])


def mean(ds: xr.Dataset, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
    """Mean time to solution ``tau`` with right-censored runs, and its confidence interval.

    With ``k`` runs solved out of ``R`` and ``S`` the sum of the times of *all* runs (an
    unsolved run contributes the time it ran before its timeout), the maximum-likelihood
    estimate of the mean of an exponential law with right censoring is::

        tau = S / k                       (NaN when k = 0: the likelihood grows without bound)
        stderr = tau / sqrt(k)            (from the Fisher information k / tau^2)

    Interval at level ``c`` (``confidence``), with ``chi2_p(nu)`` the ``p`` quantile of the
    chi-square law with ``nu`` degrees of freedom:

    * no run censored (``k = R``): the exact interval of a complete exponential sample,
      ``2 S / tau ~ chi2(2k)``::

          lower = 2 S / chi2_{(1+c)/2}(2k),   upper = 2 S / chi2_{(1-c)/2}(2k)

    * some run censored (Type-I, time censoring): no exact pivot exists; the standard
      interval of time-terminated tests (Epstein 1960; NIST/SEMATECH e-Handbook 8.4.7.1),
      which inverts the exact (Garwood) Poisson interval for ``k`` events in the total time
      ``S``, uses ``2k + 2`` degrees of freedom for the lower bound::

          lower = 2 S / chi2_{(1+c)/2}(2k + 2),   upper = 2 S / chi2_{(1-c)/2}(2k)

      For ``k = 0``, ``lower = S / ln(2 / (1 - c))`` and ``upper = inf``.

    Coverage, verified by simulation (``tests/test_tts_analysis.py`` and 10^5 synthetic
    datasets per case over ``R = 1 ... 200`` and timeouts ``0.01 ... 5 tau``): exact
    without timeout; with censoring it is conservative, 0.95 to 0.99 at ``c = 0.95``
    (the upper bound misses with probability ``(1 - c) / 2`` within Monte Carlo noise,
    the lower bound less often).

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result with the dimension ``run`` and the variables ``time`` and
        ``solved``.
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    confidence : float
        Level ``c`` of the two-sided interval, in (0, 1).

    Returns
    -------
    Dataset
        Without ``run``: ``tau``, ``lower``, ``upper``, ``stderr`` (unit of ``time``),
        ``solved`` (``k``) and ``runs`` (``R``, scalar). Attributes ``confidence``, ``time``.
    """
    t, solved, units = _times(ds, time)
    c = _confidence(confidence)
    runs = ds.sizes[RUN]
    total = t.sum(RUN)
    k = solved.sum(RUN)
    positive = k.where(k > 0)
    tau = total / positive
    lower_dof = xr.where(k == runs, 2 * k, 2 * k + 2)
    lower = 2 * total / _chi2_ppf((1 + c) / 2, lower_dof)
    upper = (2 * total / _chi2_ppf((1 - c) / 2, 2 * positive)).fillna(np.inf)
    name = f"mean time to solution ({time})"
    return xr.Dataset(
        {
            "tau": tau.assign_attrs(long_name=name, units=units,
                                    description="censored-exponential MLE: sum of all run times / runs solved"),
            "lower": lower.assign_attrs(long_name=f"lower {c:g} confidence bound of tau", units=units),
            "upper": upper.assign_attrs(long_name=f"upper {c:g} confidence bound of tau", units=units),
            "stderr": (tau / np.sqrt(positive)).assign_attrs(long_name="standard error of tau", units=units),
            "solved": k.assign_attrs(long_name="runs solved", units="1"),
            "runs": xr.DataArray(runs, attrs={"long_name": "runs", "units": "1"}),
        },
        attrs={"confidence": c, "time": time},
    )


def _q(q) -> np.ndarray:
    values = real_array("q", q)
    if values.ndim > 1 or values.size == 0:
        raise ValueError(f"q must be a scalar or a non-empty 1-D array of percentiles, got shape {values.shape}")
    if not np.all((values >= 0) & (values < 100)):
        raise ValueError(f"q must be in [0, 100) (percent), got {q!r}")
    return values


def _censored_percentile(times: np.ndarray, solved: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Percentiles ``q`` (1-D, percent) along the last axis, unsolved runs as +inf.

    numpy's default ("linear") interpolation between the order statistics at the virtual
    index ``h = (R - 1) q / 100``; +inf when the interpolation needs an unsolved run.
    """
    x = np.sort(np.where(solved, times, np.inf), axis=-1)
    h = (x.shape[-1] - 1) * (q / 100.0)
    below = np.floor(h).astype(np.intp)
    above = np.minimum(below + 1, x.shape[-1] - 1)
    frac = h - below
    a, b = x[..., below], x[..., above]
    with np.errstate(invalid="ignore"):
        diff = b - a
        lerp = np.where(frac >= 0.5, b - diff * (1 - frac), a + diff * frac)  # as numpy's _lerp
    return np.where(frac == 0, a, np.where(np.isinf(b), np.inf, lerp))


def percentile(ds: xr.Dataset, q, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
    """Percentiles of the time to solution: empirical and from the exponential law.

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result (see :func:`mean`).
    q : float or 1-D array
        Percentiles in percent, in [0, 100) (as :func:`numpy.percentile`).
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    confidence : float
        Level of the interval of ``tau`` (see :func:`mean`).

    Returns
    -------
    Dataset
        Without ``run``, with a ``q`` dimension when ``q`` is an array and a scalar ``q``
        coordinate otherwise; in the unit of ``time``:

        ``empirical``
            The q-th percentile of the ``R`` run times with numpy's default linear
            interpolation between order statistics (equal to :func:`numpy.percentile`
            when all runs are solved). Unsolved runs count as +inf (their TTS exceeds
            their timeout, and so every solved time), so ``empirical`` is +inf when the
            percentile falls among the censored runs: it is not reached within the timeout.
        ``exponential``
            ``t_q = -tau ln(1 - q / 100)`` with ``tau`` from :func:`mean` (NaN when no run
            is solved).
        ``exponential_lower``, ``exponential_upper``
            ``t_q`` at the bounds of the confidence interval of ``tau``.
    """
    values = _q(q)
    t, solved, units = _times(ds, time)
    m = mean(ds, time=time, confidence=confidence)
    qs = np.atleast_1d(values)
    empirical = xr.apply_ufunc(_censored_percentile, t, solved, kwargs={"q": qs},
                               input_core_dims=[[RUN], [RUN]], output_core_dims=[["q"]],
                               dask="parallelized", output_dtypes=[float],
                               dask_gufunc_kwargs={"output_sizes": {"q": qs.size}, "allow_rechunk": True})
    empirical = empirical.assign_coords(q=qs)
    factor = xr.DataArray(-np.log1p(-qs / 100.0), dims=("q",), coords={"q": qs})
    out = xr.Dataset(
        {
            "empirical": empirical.assign_attrs(
                long_name=f"empirical percentile of {time} (+inf: beyond the timeout)", units=units),
            "exponential": (m["tau"] * factor).assign_attrs(long_name="exponential-law percentile -tau ln(1 - q/100)",
                                                            units=units),
            "exponential_lower": (m["lower"] * factor).assign_attrs(
                long_name=f"exponential-law percentile at the lower {m.attrs['confidence']:g} bound of tau",
                units=units),
            "exponential_upper": (m["upper"] * factor).assign_attrs(
                long_name=f"exponential-law percentile at the upper {m.attrs['confidence']:g} bound of tau",
                units=units),
        },
        attrs=dict(m.attrs),
    )
    out["q"].attrs.update(long_name="percentile", units="%")
    if values.ndim == 0:
        out = out.squeeze("q")
    return out


def _x_quantile(u: float, a: float, b: float) -> float:
    """Quantile ``u`` of ``x = -ln(1 - s)`` for ``s ~ Beta(a, b)`` (accurate for s near 0 and near 1)."""
    from scipy import stats

    s = stats.beta.ppf(u, a, b)
    if s < 0.5:
        return float(-np.log1p(-s))
    return float(-np.log(stats.beta.isf(u, b, a)))  # 1 - s ~ Beta(b, a)


def _inverse_mean(k: int, runs: int) -> float:
    """Posterior mean of ``1 / x``, ``x = -ln(1 - s)``, ``s ~ Beta(k + 1, runs - k + 1)``.

    With ``s = 1 - exp(-x)`` the posterior density of ``x`` is
    ``(1 - e^-x)^k e^{-(runs - k + 1) x} / B(k + 1, runs - k + 1)``; the integral of it
    divided by ``x`` is split at posterior quantiles and done with adaptive quadrature.
    Infinite for ``k = 0`` (the density of ``x`` is finite at 0).
    """
    from scipy import integrate, special

    if k == 0:
        return np.inf
    a, b = k + 1.0, runs - k + 1.0
    log_norm = special.betaln(a, b)

    def integrand(x):
        return np.exp(k * np.log(-np.expm1(-x)) - b * x - log_norm - np.log(x))

    edges = [0.0] + [_x_quantile(u, a, b) for u in (1e-12, 1e-6, 1e-2, 0.5, 1 - 1e-2, 1 - 1e-6, 1 - 1e-15)]
    return float(sum(integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-11, limit=200)[0]
                     for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo))


def _posterior_table(ks: np.ndarray, runs: int, c: float):
    """``E[1/x]`` and ``1/x`` at the posterior median and interval ends, for each ``k`` in ``ks``."""
    table = np.full((4, runs + 1), np.nan)
    for k in np.unique(ks):
        a, b = k + 1.0, runs - k + 1.0
        if k == 0:  # one-sided: lower bound of tau at level c, upper bound infinite
            ends = (1.0 / _x_quantile(c, a, b), np.inf)
        else:
            ends = (1.0 / _x_quantile((1 + c) / 2, a, b), 1.0 / _x_quantile((1 - c) / 2, a, b))
        table[:, k] = (_inverse_mean(int(k), runs), 1.0 / _x_quantile(0.5, a, b), *ends)
    return table


def from_timeouts(ds: xr.Dataset, timeout=None, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
    """Bayesian estimate of ``tau`` from the number of runs solved within a timeout.

    A run of exponential TTS succeeds within the timeout ``T`` with probability
    ``s = 1 - exp(-T / tau)``. With a uniform prior on ``s``, ``k`` successes in ``R`` runs
    give the posterior ``s ~ Beta(k + 1, R - k + 1)``, mapped to ``tau = -T / ln(1 - s)``
    (monotone decreasing in ``s``). For ``T << tau`` the posterior of ``tau`` is
    approximately ``tau^-(k + 2) exp(-R T / tau)``, i.e. ``1 / tau ~ Gamma(k + 1, rate R T)``,
    the estimate of Bernaschi et al. (2021). Uses only the numbers of successes, so it
    applies to runs whose times were not recorded and checks :func:`mean`.

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result (see :func:`mean`).
    timeout : float or DataArray, optional
        ``T`` in the unit of ``time``. Given, runs with a time above ``T`` count as failures
        (post-hoc censoring of longer runs); every unsolved run must then have run at
        least ``T`` (else ``ValueError``: whether it would have succeeded by ``T`` is
        unknown). By default the runs' own timeout: the attribute ``timeout_sweeps`` for
        ``time="sweeps"`` (unless the attribute ``timeout_given`` is false), otherwise the
        largest time of an unsolved run at each point
        (with ``time="seconds"`` the censoring times in seconds vary slightly, the timeout
        being set in sweeps); ``ValueError`` if a point has all runs solved and no timeout
        is known.
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    confidence : float
        Credibility ``c`` of the interval, in (0, 1).

    Returns
    -------
    Dataset
        Without ``run``, in the unit of ``time`` for the times:

        ``tau``
            Posterior mean ``T E[1 / x]``, ``x = -ln(1 - s)``, by adaptive quadrature over
            the posterior (relative accuracy ~1e-10); finite for ``k >= 1`` and ``+inf``
            for ``k = 0`` (the posterior density of ``1/tau`` is finite at 0).
        ``tau_median``
            Posterior median (finite also for ``k = 0``).
        ``lower``, ``upper``
            Equal-tailed credible interval at level ``c``. For ``k = 0``: ``lower`` is the
            one-sided bound ``P(tau > lower) = c``, ``T (R + 1) / ln(1 / (1 - c))``, the
            upper bound on the success rate; ``upper = +inf``.
        ``solved``, ``runs``, ``timeout``
            ``k``, ``R`` and ``T``.

    Notes
    -----
    The frequentist coverage of the interval oscillates with the discreteness of ``k``
    (as for any binomial interval): within about +-0.015 of ``c = 0.95`` for expected
    numbers of successes and failures ``>~ 5``, lower for ``R s << 1``.
    """
    t, solved, units = _times(ds, time)
    c = _confidence(confidence)
    runs = ds.sizes[RUN]
    if timeout is None:
        if time == "sweeps" and "timeout_sweeps" in ds.attrs and ds.attrs.get("timeout_given", True):
            T = xr.DataArray(float(ds.attrs["timeout_sweeps"]))
        else:
            T = t.where(~solved).max(RUN)
            if bool(T.isnull().any()):
                raise ValueError("a timeout is needed: some points have all runs solved and ds gives no timeout "
                                 f"for time={time!r}; pass timeout=")
        k = solved.sum(RUN)
    else:
        T = (timeout.copy(data=real_array("timeout", timeout.values)) if isinstance(timeout, xr.DataArray)
             else xr.DataArray(real_array("timeout", timeout)))
        if T.size == 0 or not bool(((T > 0) & np.isfinite(T)).all()):
            raise ValueError(f"timeout must be positive and finite, got {timeout!r}")
        early = ~solved & (t < T)
        if bool(early.any()):
            raise ValueError(f"timeout={timeout!r} exceeds the time of unsolved runs stopped as early as "
                             f"{float(t.where(early).min())} {units}: whether they would succeed by then is unknown")
        k = (solved & (t <= T)).sum(RUN)
    k, T = xr.broadcast(k.compute(), T)
    table = _posterior_table(k.values.ravel(), runs, c)

    def per_k(row):
        """The table row ``row`` looked up at each run's number of successes."""
        return k.copy(data=table[row][k.values]).astype(float)

    return xr.Dataset(
        {
            "tau": (T * per_k(0)).assign_attrs(long_name=f"posterior mean of tau ({time})", units=units),
            "tau_median": (T * per_k(1)).assign_attrs(long_name="posterior median of tau", units=units),
            "lower": (T * per_k(2)).assign_attrs(long_name=f"lower {c:g} credible bound of tau", units=units),
            "upper": (T * per_k(3)).assign_attrs(long_name=f"upper {c:g} credible bound of tau", units=units),
            "solved": k.assign_attrs(long_name="runs solved within the timeout", units="1"),
            "runs": xr.DataArray(runs, attrs={"long_name": "runs", "units": "1"}),
            "timeout": T.assign_attrs(long_name="timeout", units=units),
        },
        attrs={"confidence": c, "time": time, "prior": "uniform on the per-run success probability"},
    )


def fit_growth(ds: xr.Dataset, dim: str = "N", time: str = "seconds", statistic: str = "median") -> xr.Dataset:
    """Least-squares fit of the exponential growth ``ln tau = a + b * dim`` (e.g. with size ``N``).

    ``tau`` per instance comes from :func:`mean`. When ``ds`` has an ``instance`` dimension
    it is reduced at each point of ``dim`` with ``statistic``:

    ``"median"``
        ``tau`` = median of the instances' ``tau`` (robust to a few very hard instances).
    ``"mean"``
        ``tau`` = ``exp(mean of ln tau)``, the geometric mean (typical ``tau``).

    An instance without a solved run has ``tau`` taken as +inf (it is among the hardest).
    The fit is ordinary least squares of ``y = ln tau`` on ``x = dim`` over the points with
    finite ``y`` (``n`` of them); with residual variance ``s^2 = RSS / (n - 2)``::

        b_stderr = s / sqrt(Sxx),   a_stderr = s sqrt(1/n + mean(x)^2 / Sxx)

    (NaN for ``n < 3``; ``a`` and ``b`` are NaN for ``n < 2``). Every other dimension is kept.

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result (see :func:`mean`) with the dimension ``dim`` and a
        numeric coordinate for it.
    dim : str
        Dimension of the abscissa (default ``"N"``, the number of variables).
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    statistic : {"median", "mean"}
        Reduction over ``instance``.

    Returns
    -------
    Dataset
        ``a`` (``ln`` of the unit of ``time``) and ``b`` (per unit of ``dim``), ``a_stderr``,
        ``b_stderr``, ``points`` (``n``); along ``dim``: ``tau`` (the reduced ``tau`` used)
        and ``fit`` (``exp(a + b dim)``), in the unit of ``time``.
    """
    check_choice("statistic", statistic, STATISTICS)
    check_dim("dim", dim, ds.dims)
    if dim in (RUN, INSTANCE):
        raise ValueError(f"dim must not be {dim!r} (runs and instances are reduced before the fit)")
    if dim not in ds.dims:
        raise ValueError(f"dim {dim!r} is not a dimension of ds; it has dims {tuple(ds.dims)}")
    if dim not in ds.coords:
        raise ValueError(f"dim {dim!r} needs a coordinate (the abscissa of the fit)")
    if ds.sizes[dim] < 2:
        raise ValueError(f"a fit along {dim!r} needs at least 2 points, got {ds.sizes[dim]}")
    m = mean(ds, time=time)
    units = m["tau"].attrs["units"]
    tau = m["tau"].fillna(np.inf)
    if INSTANCE in tau.dims:
        if statistic == "median":
            tau = tau.median(INSTANCE)
        else:
            tau = np.exp(np.log(tau).mean(INSTANCE))
    y = np.log(tau)
    x = ds[dim].astype(float)
    use = np.isfinite(y)
    n = use.sum(dim)
    xm = x.where(use).mean(dim)
    ym = y.where(use).mean(dim)
    dx = (x - xm).where(use)
    sxx = (dx**2).sum(dim)
    sxx = sxx.where(sxx > 0)
    b = (dx * (y - ym)).sum(dim) / sxx
    a = ym - b * xm
    rss = ((y - a - b * x).where(use) ** 2).sum(dim)
    s2 = rss / (n - 2).where(n >= 3)
    dim_units = ds[dim].attrs.get("units")
    b_units = f"1/{dim_units}" if dim_units else f"per unit of {dim}"
    return xr.Dataset(
        {
            "a": a.assign_attrs(long_name=f"intercept of ln tau = a + b {dim}", units=f"ln({units})"),
            "b": b.assign_attrs(long_name=f"growth rate of ln tau per unit of {dim}", units=b_units),
            "a_stderr": np.sqrt(s2 * (1.0 / n.where(n > 0) + xm**2 / sxx)).assign_attrs(long_name="standard error of a",
                                                                             units=f"ln({units})"),
            "b_stderr": np.sqrt(s2 / sxx).assign_attrs(long_name="standard error of b", units=b_units),
            "points": n.assign_attrs(long_name=f"points along {dim} in the fit", units="1"),
            "tau": tau.assign_attrs(long_name=f"{statistic} tau over instances ({time})", units=units),
            "fit": np.exp(a + b * x).assign_attrs(long_name="fitted tau exp(a + b dim)", units=units),
        },
        attrs={"statistic": statistic, "time": time, "dim": dim},
    )


#: Legend entry of the exponential laws :func:`plot_survival` draws.
_LAW_LABEL = "fit: exponential law exp(-t / \u03c4), \u03c4 = mean TTS of each curve"


def plot_survival(ds: xr.Dataset, ax=None, time: str = "seconds", instance=None, law: bool = True, **kwargs):
    """Empirical survival ``P(TTS > t)`` of the runs on a semilog-y axis, with ``exp(-t / tau)``.

    As Fig. 2 of Bernaschi et al. (2021): one step curve per point of the dimensions other
    than ``run`` (each instance), through ``(t_(i), (R - i) / R)`` for the sorted solved
    times ``t_(i)`` (unsolved runs survive past every solved time), and, if ``law``, the
    exponential law with ``tau`` from :func:`mean` as a dashed line of the same colour.
    Needs matplotlib (imported here).

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result (see :func:`mean`).
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    instance : label or list of labels, optional
        Instances to draw (``ds.sel(instance=instance)``); default all.
    law : bool
        Draw the exponential law.
    **kwargs
        Passed to ``ax.step`` for the empirical curves.

    Returns
    -------
    matplotlib Axes
        The axes drawn into.
    """
    from ...analysis.plots import axes, legend_outside
    from ...analysis.plots import point_label as plot_label

    law = check_flag("law", law)
    if instance is not None:
        if INSTANCE not in ds.dims:
            raise ValueError(f"instance= needs an {INSTANCE!r} dimension; ds has dims {tuple(ds.dims)}")
        from pandas.errors import InvalidIndexError

        try:
            ds = ds.sel({INSTANCE: instance})
        except (KeyError, ValueError, TypeError, IndexError, InvalidIndexError) as err:
            raise ValueError(f"instance must be labels of the {INSTANCE!r} coordinate "
                             f"{ds[INSTANCE].values.tolist()}, got {instance!r} ({type(err).__name__})") from None
    t, solved, units = _times(ds, time)
    tau = mean(ds, time=time)["tau"].compute()
    t, solved = t.compute(), solved.compute()
    others = [d for d in t.dims if d != RUN]
    t = t.transpose(*others, RUN)
    solved = solved.transpose(*others, RUN)
    tau = tau.transpose(*others)
    ax = axes(ax)
    runs = t.sizes[RUN]
    shape = tuple(t.sizes[d] for d in others)
    groups = [d for d in others if d != INSTANCE]  # one colour per point of these; instances share it
    colours, law_named = {}, False
    for index in np.ndindex(*shape):
        times = np.sort(t.values[index][solved.values[index]])
        x = np.concatenate(([0.0], times))
        y = 1.0 - np.arange(times.size + 1) / runs
        if y[-1] <= 0:  # all solved: keep the last step visible on the log axis
            y[-1] = y[-2] if y.size > 1 else 1.0
        group = tuple(i for d, i in zip(others, index) if d in groups)
        point = t.isel(dict(zip(others, index)))
        label = None
        if group not in colours:
            label = plot_label(point, groups) or "runs"
            if INSTANCE in others:
                label += f", {t.sizes[INSTANCE]} instances"
            label += f", {runs} runs each" if INSTANCE in others else f", {runs} runs"
        elif INSTANCE not in others:
            label = plot_label(point, groups)
        (line,) = ax.step(x, y, where="post", label=label, color=colours.get(group),
                          lw=1.0 if INSTANCE in others else 1.5, **kwargs)
        colours.setdefault(group, line.get_color())
        scale = float(tau.values[index])
        if law and np.isfinite(scale):
            grid = np.linspace(0.0, x[-1] if x[-1] > 0 else scale, 200)
            ax.plot(grid, np.exp(-grid / scale), "--", color=line.get_color(), lw=0.8,
                    label=None if law_named else _LAW_LABEL)
            law_named = True
    ax.set_yscale("log")
    ax.set_xlabel(f"time to solution [{units}]")
    ax.set_ylabel("fraction of runs unsolved, P(TTS > t)")
    if ax.get_legend_handles_labels()[1]:
        legend_outside(ax)
    return ax


def _ks_exponential(x: np.ndarray) -> np.ndarray:
    """KS distance of each row of ``x`` from the exponential law with the row's mean as scale."""
    x = np.sort(x, axis=-1)
    n = x.shape[-1]
    cdf = -np.expm1(-x / x.mean(axis=-1, keepdims=True))
    i = np.arange(1, n + 1)
    return np.maximum((i / n - cdf).max(axis=-1), (cdf - (i - 1) / n).max(axis=-1))


def ks_test(ds: xr.Dataset, time: str = "seconds", n_mc_samples: int = 9999, seed=0) -> xr.Dataset:
    """Kolmogorov-Smirnov test of the run times against the exponential law, ``tau`` fitted.

    The statistic is ``D = sup_t |F_R(t) - (1 - exp(-t / tau))|`` with ``tau`` the mean of
    the ``R`` run times. Since ``tau`` is fitted, the p-value of the plain KS law
    (:func:`scipy.stats.kstest`) would be far too large (conservative); here it is the
    Lilliefors-type Monte Carlo p-value: exponential samples of the same size, each with
    its own fitted mean, give the null distribution of ``D``, which does not depend on
    ``tau`` (scale family), so one null sample serves every point::

        pvalue = (1 + #{D_null >= D}) / (n_mc_samples + 1)

    This is the test of ``scipy.stats.goodness_of_fit(stats.expon, data,
    known_params={"loc": 0}, statistic="ks")``, vectorised over the points. With
    ``time="sweeps"`` the integer times have ties, which makes the test slightly
    conservative unless ``tau`` is many sweeps.

    Parameters
    ----------
    ds : Dataset
        Time-to-solution result (see :func:`mean`) with every run solved (a censored run
        has no time to test).
    time : {"seconds", "sweeps"}
        Time variable: seconds or sweeps.
    n_mc_samples : int
        Size of the Monte Carlo null sample (p-values are multiples of ``1 / (n + 1)``).
    seed : int or numpy Generator
        Seed of the Monte Carlo sample (fixed by default: reproducible p-values).

    Returns
    -------
    Dataset
        Without ``run``: ``statistic`` (``D``), ``pvalue``, ``tau`` (fitted mean, unit of
        ``time``). Reject the exponential law at level ``alpha`` where ``pvalue < alpha``.
    """
    t, solved, units = _times(ds, time)
    if not bool(solved.all()):
        raise ValueError("ks_test needs every run solved (censored times cannot be tested); select the points "
                         "without unsolved runs, or rerun with a longer timeout")
    n_mc_samples = check_count("n_mc_samples", n_mc_samples, maximum=MAX_MC_SAMPLES)
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as err:
        raise type(err)(f"seed must be a non-negative integer (or numpy Generator), got {seed!r}") from None
    runs = t.sizes[RUN]
    t = t.compute()
    statistic = xr.apply_ufunc(_ks_exponential, t, input_core_dims=[[RUN]])
    block = max(1, 2_000_000 // runs)
    null = np.concatenate([_ks_exponential(rng.exponential(size=(min(block, n_mc_samples - start), runs)))
                           for start in range(0, n_mc_samples, block)])
    null.sort()
    exceed = n_mc_samples - np.searchsorted(null, statistic.values, side="left")
    pvalue = statistic.copy(data=(1.0 + exceed) / (n_mc_samples + 1.0))
    return xr.Dataset(
        {
            "statistic": statistic.assign_attrs(long_name="KS distance from the fitted exponential law", units="1"),
            "pvalue": pvalue.assign_attrs(long_name="Monte Carlo (Lilliefors) p-value", units="1"),
            "tau": t.mean(RUN).assign_attrs(long_name="fitted mean time to solution", units=units),
        },
        attrs={"time": time, "n_mc_samples": n_mc_samples},
    )


@xr.register_dataset_accessor("tts")
class TimeToSolutionAccessor:
    """``ds.tts``: time-to-solution statistics of a solver result (runs along ``run``).

    Delegates to the functions of :mod:`gpuensembles.analysis.tts`; ``time="seconds"``
    (seconds, default) or ``time="sweeps"`` picks the time variable.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def mean(self, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
        """Mean TTS ``tau`` (censored MLE) with its interval; see :func:`mean`."""
        return mean(self._ds, time=time, confidence=confidence)

    def percentile(self, q, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
        """Empirical and exponential-law percentiles (``q`` in percent); see :func:`percentile`."""
        return percentile(self._ds, q, time=time, confidence=confidence)

    def from_timeouts(self, timeout=None, time: str = "seconds", confidence: float = 0.95) -> xr.Dataset:
        """Bayesian ``tau`` from the runs solved within a timeout; see :func:`from_timeouts`."""
        return from_timeouts(self._ds, timeout=timeout, time=time, confidence=confidence)

    def fit_growth(self, dim: str = "N", time: str = "seconds", statistic: str = "median") -> xr.Dataset:
        """Fit ``ln tau = a + b dim``; see :func:`fit_growth`."""
        return fit_growth(self._ds, dim=dim, time=time, statistic=statistic)

    def plot_survival(self, ax=None, time: str = "seconds", instance=None, law: bool = True, **kwargs):
        """Survival ``P(TTS > t)`` with the exponential law (matplotlib); see :func:`plot_survival`."""
        return plot_survival(self._ds, ax=ax, time=time, instance=instance, law=law, **kwargs)

    def ks_test(self, time: str = "seconds", n_mc_samples: int = 9999, seed=0) -> xr.Dataset:
        """KS test against the fitted exponential law (Monte Carlo p-value); see :func:`ks_test`."""
        return ks_test(self._ds, time=time, n_mc_samples=n_mc_samples, seed=seed)
