"""Model-agnostic ensemble statistics: means with standard errors, moments, the jackknife.

Every function works on dask-backed data without computing it.
"""

import warnings

import numpy as np
import xarray as xr

from ..core.io import REALIZATION


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


def jackknife(f, *blocks: xr.DataArray, dims: tuple, weights=None) -> xr.Dataset:
    """Estimate ``f(<x_1>, <x_2>, ...)`` and its jackknife standard error over blocks.

    Each block (one element of the ``dims`` grid, e.g. a ``(realization, bin)`` pair:
    ``n = R * B`` blocks) holds the means of the observables over its measurements. The
    estimate is ``f`` of the means over *all*
    blocks (not the bias-corrected jackknife estimate). The error is
    ``sqrt((n - 1) / n * sum_i (f_(i) - mean_i f_(i))^2)`` with ``f_(i)`` evaluated on the
    means of all blocks but block ``i``. For a plain mean with equal weights this is exactly
    ``std(ddof=1) / sqrt(n)``. It is correct for correlated Monte Carlo data as long as the
    blocks are much longer than the integrated autocorrelation time, so that the blocks are
    independent (consecutive bins of one chain are nearly so then; realizations are
    independent chains).

    Parameters
    ----------
    f : callable
        ``f(*means) -> DataArray``, built from xarray/numpy operations (applied to the
        full means and to the leave-one-out means, which carry ``dims``).
    *blocks : DataArray
        Block means of each observable, with the dimensions ``dims``.
    dims : tuple of str
        Block dimensions, e.g. ``("realization", "bin")``.
    weights : DataArray, optional
        Measurements per block (broadcast against ``blocks``). The means over blocks are
        weighted with it, so that they equal the means over all measurements. Default:
        equal weights.

    Returns
    -------
    Dataset
        ``mean`` (the estimate) and ``stderr``, without ``dims``.
    """
    missing = [d for d in dims if d not in blocks[0].dims]
    if missing:
        raise ValueError(f"the block means have no dimension(s) {missing}; got dims {blocks[0].dims}")
    n = int(np.prod([blocks[0].sizes[d] for d in dims]))
    if n < 2:
        raise ValueError(f"a jackknife error needs at least 2 blocks over {dims}, got {n}")
    if weights is None:
        weights = xr.ones_like(blocks[0].isel({d: 0 for d in blocks[0].dims if d not in dims}, drop=True))
    weights = xr.broadcast(weights.astype(float), blocks[0])[0]
    total_weight = weights.sum(dims)
    totals = [(weights * x).sum(dims) for x in blocks]
    full = [t / total_weight for t in totals]
    left_out = [(t - weights * x) / (total_weight - weights) for t, x in zip(totals, blocks)]
    estimate = f(*full)
    pseudo = f(*left_out)
    spread = pseudo - pseudo.mean(dims)
    stderr = np.sqrt((n - 1) / n * (spread**2).sum(dims))
    return xr.Dataset({"mean": estimate, "stderr": stderr})


#: Probability of a false alarm of :func:`drift` over all the chains it tests together.
DRIFT_FALSE_ALARM = 0.01
#: Chains from which :func:`drift` takes its scale across chains; with fewer, within each chain.
DRIFT_MIN_CHAINS = 4


def _along_only(weights, series, along) -> bool:
    """Whether ``weights`` lie on ``along`` alone, with the labels of ``series`` there (or none)."""
    if weights.dims != (along,) or weights.sizes[along] != series.sizes[along]:
        return False
    mine, theirs = weights.indexes.get(along), series.indexes.get(along)
    return mine is None or theirs is None or mine.equals(theirs)


def _weighted_third(x, w, which):
    """Weighted mean of the first (``which=0``) or last (``which=1``) third of ``x`` along its last axis.

    Also the variance of that mean if the points were independent (the within-chain scale),
    and the points a third holds. A NaN point adds nothing to the sums but keeps its weight in
    the total (as xarray's sums, which skip NaN, did before).
    """
    n = x.shape[-1]
    third = max(1, n // 3)
    part = slice(0, third) if which == 0 else slice(n - third, n)
    x, w = x[..., part], w[..., part]
    add = np.nansum if np.isnan(x).any() or np.isnan(w).any() else np.sum  # (without NaN: no nansum copies)
    total = add(w, axis=-1)
    mean = add(w * x, axis=-1) / total
    variance = add(w * (x - mean[..., None]) ** 2, axis=-1) / total / max(third - 1, 1)
    return mean, variance, third


def drift(series: xr.DataArray, along: str, chains: str = REALIZATION, weights=None,
          false_alarm: float = DRIFT_FALSE_ALARM) -> xr.Dataset:
    """Which chains still drift: the mean of each chain's last third against that of its first third.

    A chain at equilibrium has the same expected mean in every part of its record; one still
    relaxing (after too short a thermalization or transient) does not. For each chain the
    difference ``d`` of the weighted means of the last and the first third of ``series`` along
    ``along`` (bins or samples in time order) is tested against zero:

    * with at least `DRIFT_MIN_CHAINS` chains, against the spread of the *other* chains'
      differences, ``z_r = d_r / rms_{i != r}(d_i)`` (Student's t with ``chains - 1`` degrees of
      freedom at equilibrium, where the ``d_i`` are independent with mean zero: the spread holds
      every autocorrelation of the process, however long, asks nothing of the bins, and a
      drifting chain does not widen its own yardstick); and, per point, the mean of the ``d``
      against its standard error, which finds chains that all drift together (then every chain
      of the point is flagged);
    * with fewer chains, against the scatter of the points *within* each third, as if they
      were independent (bins much longer than the autocorrelation time; otherwise too small,
      and then chains are flagged that are only slow).

    The thresholds keep the probability of any false alarm over everything tested at
    ``false_alarm`` (Bonferroni; half of it to each test with many chains).

    Parameters
    ----------
    series : DataArray
        Values over ``along`` (time order) and ``chains`` (and any other dimensions), at least
        three along ``along``; computed (not dask-backed).
    along : str
        The time dimension.
    chains : str
        The dimension of independent chains.
    weights : DataArray, optional
        Weights of the points along ``along`` (measurements per bin).
    false_alarm : float
        Probability of flagging any chain when none drifts.

    Returns
    -------
    Dataset
        ``difference`` (last third minus first), ``z`` (the chain's statistic), ``drifting``
        (bool) over ``series``'s dimensions without ``along``; the attribute ``threshold`` is the
        ``|z|`` beyond which a chain drifts, ``scale`` says which spread was used.
    """
    from scipy import special  # (scipy.stats would take 0.8 s to import on a first call)

    if series.sizes[along] < 3:
        raise ValueError(f"drift needs at least 3 points along {along!r}, got {series.sizes[along]}")
    # numpy on (..., along): the check runs after every Ising call, where xarray's small operations took
    # most of a short call's host time
    if weights is None or _along_only(weights, series, along):  # (no alignment to do: 8192 chains in 2 ms, not 15)
        dims = tuple(d for d in series.dims if d != along)
        coords = {k: v for a in ([] if weights is None else [weights]) + [series] for k, v in a.coords.items()
                  if along not in v.dims}
        x = series.transpose(*dims, along).values
        w = np.broadcast_to(np.ones(1) if weights is None else weights.values.astype(float), x.shape)
    else:  # as xarray's arithmetic would: the labels both share, every dimension of either
        x, w = xr.broadcast(*xr.align(series, weights.astype(float), join="inner"))
        dims = tuple(d for d in x.dims if d != along)
        coords = {k: v for a in (w, x) for k, v in a.coords.items() if along not in v.dims}
        x, w = (a.transpose(*dims, along).values for a in (x, w))
    n_chains = series.sizes.get(chains, 1)

    def beyond(fraction, count, dof):
        """Student's t two-sided threshold of level ``fraction`` over ``count`` tests."""
        return float(special.stdtrit(dof, 1.0 - fraction / (2.0 * count)))

    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty or all-NaN slices (no weight in a third): NaN
        early, var_early, third = _weighted_third(x, w, 0)
        late, var_late, _ = _weighted_third(x, w, 1)
        difference = late - early
        tests = max(difference.size, 1)
        if n_chains >= DRIFT_MIN_CHAINS:
            axis = dims.index(chains)
            squares = difference**2
            others = np.sqrt((np.nansum(squares, axis=axis, keepdims=True) - squares) / (n_chains - 1))
            z = np.where(difference == 0, 0.0, difference / others)
            threshold = beyond(false_alarm / 2, tests, n_chains - 1)
            common = (np.nanmean(difference, axis=axis, keepdims=True)
                      / (np.nanstd(difference, axis=axis, ddof=1, keepdims=True) / np.sqrt(n_chains)))
            points = max(tests // n_chains, 1)
            together = np.abs(common) > beyond(false_alarm / 2, points, n_chains - 1)
            drifting = (np.abs(z) > threshold) | together
            how = "across chains"
        else:
            z = np.where(difference == 0, 0.0, difference / np.sqrt(var_early + var_late))
            threshold = beyond(false_alarm, tests, 2 * max(third - 1, 1))
            drifting = np.abs(z) > threshold
            how = "within chains"

    def labeled(values):
        """``values`` over the dimensions without ``along``, with their coordinates."""
        return xr.DataArray(values, dims=dims, coords=coords)

    difference, z, drifting = labeled(difference), labeled(z), labeled(drifting)
    return xr.Dataset({
        "difference": difference.assign_attrs(long_name="mean of the last third minus the first",
                                              units=series.attrs.get("units", "1")),
        "z": z.assign_attrs(long_name="difference over its spread at equilibrium", units="1"),
        "drifting": drifting.assign_attrs(long_name="the chain still drifts"),
    }, attrs={"threshold": threshold, "scale": how, "false_alarm": false_alarm})


def warn_if_drifting(check: xr.Dataset, *, noun: str, what: str, after: str, fix: str, chains: str = REALIZATION,
                     stacklevel: int = 2):
    """One warning naming the parameter points and the chains of ``check`` (:func:`drift`) that still drift.

    Parameters
    ----------
    check : Dataset
        A :func:`drift` result (``drifting``, attribute ``threshold``), computed.
    noun : str
        What a chain is (``"chain"``, ``"trajectory"``), for the message.
    what : str
        The quantity tested, e.g. ``"the energy of the last third of the bins"``.
    after : str
        What was discarded before, e.g. ``" after the thermalization of 1000 sweeps"`` (or ``""``).
    fix : str
        What to do about it.
    chains : str
        The dimension of the chains.
    stacklevel : int
        The frame the warning points at.
    """

    drifting = check["drifting"]
    if not bool(drifting.any()):
        return
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    sweep = [d for d in drifting.dims if d != chains]
    scalar = [c for c, v in drifting.coords.items() if v.ndim == 0 and np.issubdtype(v.dtype, np.number)]
    points = drifting.stack(point=sweep).transpose("point", ...) if sweep else [drifting]
    where = []
    for point in points:
        found = np.flatnonzero(point.values)
        if found.size:
            at = ", ".join(f"{d}={point[d].item():g}" for d in scalar + sweep if d in point.coords)
            more = f" and {found.size - 8} more" if found.size > 8 else ""
            where.append(f"{at + ': ' if at else ''}{plural} {', '.join(str(c) for c in found[:8])}{more}")
    count = int(drifting.sum())
    tail = f"; and {len(where) - 6} more points" if len(where) > 6 else ""
    warnings.warn(f"{count} {noun if count == 1 else plural} still drifting{after}: {what} differs from the first "
                  f"third by more than the spread of the {plural} allows (|z| > {check.attrs['threshold']:.3g}) at "
                  f"{'; '.join(where[:6])}{tail}. The averages there are not stationary values: {fix}",
                  RuntimeWarning, stacklevel=stacklevel + 1)
