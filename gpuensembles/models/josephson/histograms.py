"""Escape rates from a measured switching histogram (the Fulton-Dunkleberger inversion).

An experiment ramps the bias at a constant rate and records where the junction switches.
With ``S_i`` the number of ramps still unswitched at the lower edge of bias bin ``i``, the
survival ``S(I) = exp(-(1 / I_dot) int Gamma dI)`` gives, exactly in expectation,

    ``Gamma_i = (I_dot / Delta I_i) ln(S_i / S_{i+1})``

the mean of the escape rate over the bin (Fulton & Dunkleberger, PRB 9, 4760 (1974)). Each
survivor at the bin's lower edge switches inside it with probability ``p_i``, independently:
the count ``n_i`` is binomial given ``S_i``, and the delta method gives the standard error
``sqrt(n_i / (S_i S_{i+1}))`` of the log. That holds while ``n_i`` and ``S_{i+1}`` are both
several; bins where either is below `MIN_COUNT` are kept but flagged (``few_counts``).
"""

import numbers

import numpy as np
import xarray as xr

from ...core.validation import check_count, check_flag

#: Bins with fewer switches, or fewer survivors past them, than this are flagged: the
#: binomial error of the log-ratio is a first-order (delta-method) figure.
MIN_COUNT = 5
#: What a dropped bin's ``dropped`` entry says.
EMPTY = "empty: no switching in the bin, the rate there is below what the counts resolve"
LAST = "last occupied bin: nothing survives its upper edge, ln(S_i / S_{i+1}) is infinite"
ABOVE = "above every switching current: nothing left to switch"
UNITS = ("1", "A")


def _check_sweep_rate(sweep_rate, units) -> np.ndarray:
    what = "d gamma / dt, per time unit" if units == "1" else "dI/dt in A/s"
    values = np.atleast_1d(np.asarray(sweep_rate, dtype=float))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"sweep_rate must be positive and finite ({what}), one per histogram; got {sweep_rate!r}")
    return values


def _check_edges(edges, units, name="edges") -> np.ndarray:
    try:
        values = np.asarray(edges, dtype=float)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1 or values.size < 2 or not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be a 1-D array of at least 2 finite bin edges (in {units!r})"
                         + (" or a number of bins" if name == "bins" else "") + f", got {edges!r}")
    edges = values
    if np.any(np.diff(edges) <= 0):
        raise ValueError(f"{name} must increase strictly: the bins may not be unsorted, overlap or be empty; "
                         f"got {edges.tolist()}")
    return edges


def _counts_from_samples(samples, bins, units):
    """``(counts per histogram, edges, unswitched per histogram)`` from switching currents (NaN: not switched)."""
    values = np.asarray(samples, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(f"samples must be 1-D, or 2-D with one row per sweep rate; got shape {values.shape}")
    if np.any(np.isinf(values)):
        raise ValueError("samples must be finite switching currents, or NaN where a ramp did not switch")
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        raise ValueError(f"samples hold {finite.size} switching event(s): a rate needs at least 2")
    if isinstance(bins, (numbers.Number, np.integer)) and not isinstance(bins, bool):
        n = check_count("bins", bins, maximum=10_000)
        edges = np.linspace(finite.min(), finite.max(), n + 1)
        edges[-1] = np.nextafter(edges[-1], np.inf)  # the largest sample falls inside the last bin
    else:
        edges = _check_edges(bins, units, "bins")
    counts = np.stack([np.histogram(row[np.isfinite(row)], bins=edges)[0] for row in values])
    outside = np.array([np.sum((row < edges[0]) | (row >= edges[-1])) for row in values])
    if np.any(outside):
        raise ValueError(f"{int(outside.sum())} sample(s) lie outside the bin edges [{edges[0]:.6g}, "
                         f"{edges[-1]:.6g}): give edges that hold every switching current")
    unswitched = np.sum(~np.isfinite(values), axis=1)
    return counts, edges, unswitched


def _check_counts(counts, edges, unswitched):
    counts = np.asarray(counts)
    if counts.ndim == 1:
        counts = counts[None, :]
    if counts.ndim != 2 or counts.shape[1] != edges.size - 1:
        raise ValueError(f"counts must hold one count per bin ({edges.size - 1} bins from {edges.size} edges), "
                         f"one row per sweep rate; got shape {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("counts must be non-negative integers (switching events per bin)")
    unswitched = np.broadcast_to(np.asarray(unswitched), counts.shape[:1])
    if np.any(unswitched < 0) or np.any(unswitched != np.round(unswitched)):
        raise ValueError(f"unswitched must be non-negative integers (ramps that never switched), got {unswitched!r}")
    if np.any(counts.sum(axis=1) < 2):
        raise ValueError(f"each histogram needs at least 2 switching events; got {counts.sum(axis=1).tolist()}")
    return counts.astype(np.int64), unswitched.astype(np.int64)


def _invert(counts, unswitched, edges, sweep_rate):
    """Rate, its standard error, and why each dropped bin was dropped, for one histogram."""
    survivors = unswitched + counts.sum() - np.concatenate(([0], np.cumsum(counts)))  # S at each edge
    before, after = survivors[:-1].astype(float), survivors[1:].astype(float)
    width = np.diff(edges)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = sweep_rate / width * np.log(before / after)
        stderr = sweep_rate / width * np.sqrt(counts / (before * after))
    dropped = np.full(counts.size, "", dtype=object)
    dropped[counts == 0] = EMPTY
    dropped[(after == 0) & (before > 0)] = LAST
    dropped[before == 0] = ABOVE
    rate[dropped != ""], stderr[dropped != ""] = np.nan, np.nan
    few = (dropped == "") & ((counts < MIN_COUNT) | (after < MIN_COUNT))
    return rate, stderr, dropped.astype(str), few, survivors


def _combined(rate, stderr):
    """Inverse-variance mean of the log-rates of several sweep rates, per bin (NaN where none has one)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_error = stderr / rate  # the error of ln Gamma
        weight = np.where(np.isfinite(rate) & (rate > 0) & (log_error > 0), 1.0 / log_error**2, 0.0)
        total = weight.sum(axis=0)
        log_rate = np.where(weight > 0, np.log(rate), 0.0)
        mean = np.exp((weight * log_rate).sum(axis=0) / total)
        return mean, mean / np.sqrt(total)


def rates_from_histogram(samples=None, *, sweep_rate=None, units="1", bins=50, counts=None, edges=None, unswitched=0,
                         combine=False) -> xr.Dataset:
    """Escape rates over bias from switching currents: samples, or counts with bin edges.

    The Fulton-Dunkleberger inversion (see the module): ``rate`` in each bin is the mean of
    the escape rate over the bin, ``rate_stderr`` its binomial standard error from the
    counts. Bins it cannot use are NaN, and ``dropped`` says why: an empty bin (no switching,
    the rate there is not resolved), the last occupied bin (nothing survives past it), bins
    above every switch. ``few_counts`` flags kept bins with fewer than `MIN_COUNT` switches
    or survivors, where the first-order error is rough.

    Parameters
    ----------
    samples : array_like or xarray.Dataset, optional
        Switching currents, one row per sweep rate (NaN where a ramp did not switch); or a
        ``switching_currents`` result, whose normalized ``switching_current`` and ramp
        (``dgamma / h``) are used unchanged. Give ``samples`` or ``counts``.
    sweep_rate : float or array_like
        The ramp, one per histogram (required unless ``samples`` is a Dataset): with
        ``units="1"``, ``d gamma / dt`` per time unit of the data; with ``units="A"``,
        ``dI/dt`` in A/s.
    units : {"1", "A"}
        Of the currents and edges: the normalized bias ``I / I_c`` (rates per time unit), or
        amperes (rates in 1/s).
    bins : int or array_like
        With ``samples``: the number of equal bins over the samples' range, or the edges.
    counts : array_like, optional
        Switching events per bin, one row per sweep rate (instead of ``samples``).
    edges : array_like, optional
        The bin edges of ``counts`` (increasing; ``len(counts) + 1`` of them).
    unswitched : int or array_like
        Ramps that never switched, per histogram of ``counts`` (they survive every bin).
    combine : bool
        Also give one rate curve over the union of the histograms' bias ranges (``rate_all``,
        ``rate_all_stderr``): per bin, the inverse-variance mean of the log-rates of the
        sweep rates that resolve it. In the adiabatic regime the escape rate does not
        depend on the sweep rate, so the histograms measure the same curve.

    Returns
    -------
    xarray.Dataset
        Over ``bias`` (bin centres, with ``bias_lower`` and ``bias_upper``) and, with several
        sweep rates, ``sweep_rate``: ``rate``, ``rate_stderr``, ``switches``, ``survivors``
        (ramps unswitched at the bin's lower edge), ``dropped`` and ``few_counts``.

    Raises
    ------
    TypeError
        When ``combine`` is not a bool.
    ValueError
        Naming the field: negative or fractional counts, edges that are unsorted or overlap,
        counts that do not match the edges, a sweep rate that is not positive, units other
        than ``"1"`` or ``"A"``, samples outside the edges, or fewer than 2 events.

    Examples
    --------
    >>> import gpuensembles as ge
    >>> sw = ge.switching_currents(damping=1.0, D=0.1, dgamma=1e-5, h=0.02, model="overdamped",
    ...                            realizations=20_000, method="rates", seed=1)  # doctest: +SKIP
    >>> ge.josephson.rates_from_histogram(sw, bins=40)  # doctest: +SKIP
    """
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS} (normalized bias I / I_c, or amperes), got {units!r}")
    combine = check_flag("combine", combine)
    if isinstance(samples, xr.Dataset):
        return _from_dataset(samples, bins, combine)
    if (samples is None) == (counts is None):
        raise ValueError("give either samples (switching currents) or counts with edges, not both or neither")
    if counts is None and edges is not None:
        raise ValueError("edges go with counts; with samples give the edges as bins=")
    if sweep_rate is None:
        raise ValueError("sweep_rate is required: the ramp of each histogram (d gamma / dt, or dI/dt in A/s)")
    rates = _check_sweep_rate(sweep_rate, units)
    if samples is not None:
        counts, edges, unswitched = _counts_from_samples(samples, bins, units)
    else:
        if edges is None:
            raise ValueError("counts need their bin edges: edges=")
        edges = _check_edges(edges, units)
        counts, unswitched = _check_counts(counts, edges, unswitched)
    if rates.size != counts.shape[0]:
        raise ValueError(f"sweep_rate gives {rates.size} value(s) for {counts.shape[0]} histogram(s): one each")
    return _dataset(counts, unswitched, edges, rates, units, combine)


def _from_dataset(ds, bins, combine):
    """A ``switching_currents`` result: its normalized currents and ramp, per sweep point."""
    if "switching_current" not in ds or "dgamma" not in ds.attrs and "dgamma" not in ds.coords:
        raise ValueError("samples is a Dataset without switching_current and dgamma: give a switching_currents "
                         "result, or the currents as an array")
    current = ds["switching_current"]
    sweep = [d for d in current.dims if d != "realization"]
    if len(sweep) > 1:
        raise ValueError(f"the Dataset sweeps {sweep}: select one point of all but one dimension first")
    dgamma = ds["dgamma"] if "dgamma" in ds.coords else xr.DataArray(float(ds.attrs["dgamma"]))
    gamma_dot = np.broadcast_to(np.atleast_1d(np.asarray(dgamma, dtype=float) / float(ds.attrs["h"])),
                                (current.sizes[sweep[0]] if sweep else 1,))
    values = current.transpose(*sweep, "realization").values
    result = rates_from_histogram(values, sweep_rate=gamma_dot, units="1", bins=bins, combine=combine)
    result = result.assign_attrs(source="a switching_currents result: its normalized bias and ramp dgamma / h")
    if sweep and "sweep_rate" in result.dims:  # the run's own coordinate beside the normalized ramp
        name = "physical_sweep_rate" if sweep[0] == "sweep_rate" else sweep[0]
        result = result.assign_coords({name: ("sweep_rate", ds[sweep[0]].values, ds[sweep[0]].attrs)})
    return result


def _dataset(counts, unswitched, edges, rates, units, combine) -> xr.Dataset:
    results = [_invert(c, u, edges, r) for c, u, r in zip(counts, unswitched, rates)]
    rate, stderr, dropped, few, survivors = (np.stack(x) for x in zip(*results))
    per = "per time unit" if units == "1" else "s-1"
    rate_units = "1" if units == "1" else "s-1"
    bias_name = "bias I / I_c" if units == "1" else "bias current"
    dims = ("sweep_rate", "bias")
    centre = 0.5 * (edges[1:] + edges[:-1])
    coords = {
        "bias": ("bias", centre, {"long_name": f"{bias_name} (bin centre)", "units": units}),
        "bias_lower": ("bias", edges[:-1], {"long_name": f"{bias_name} at the bin's lower edge", "units": units}),
        "bias_upper": ("bias", edges[1:], {"long_name": f"{bias_name} at the bin's upper edge", "units": units}),
        "sweep_rate": ("sweep_rate", rates, {"long_name": "bias sweep rate " + (
            "d gamma / dt" if units == "1" else "dI/dt"), "units": "1" if units == "1" else "A s-1"}),
    }
    data = {
        "rate": (dims, rate, {"long_name": "escape rate, the mean over the bin (Fulton-Dunkleberger inversion)",
                              "units": rate_units, **({"time_unit": per} if units == "1" else {})}),
        "rate_stderr": (dims, stderr, {"long_name": "binomial standard error of rate (delta method on the counts)",
                                       "units": rate_units}),
        "switches": (dims, counts, {"long_name": "switching events in the bin", "units": "1"}),
        "survivors": (dims, survivors[:, :-1], {"long_name": "ramps not yet switched at the bin's lower edge",
                                                "units": "1"}),
        "dropped": (dims, dropped, {"long_name": "why the bin has no rate (empty: kept)"}),
        "few_counts": (dims, few, {"long_name": f"fewer than {MIN_COUNT} switches in the bin or survivors past it: "
                                                "its error is a rough first-order figure", "units": "1"}),
    }
    ds = xr.Dataset(data, coords=coords)
    if combine:
        mean, error = _combined(rate, stderr)
        ds["rate_all"] = ("bias", mean, {"long_name": "escape rate combined over the sweep rates "
                                                      "(inverse-variance mean of ln rate)", "units": rate_units})
        ds["rate_all_stderr"] = ("bias", error, {"long_name": "standard error of rate_all", "units": rate_units})
    if rates.size == 1:
        ds = ds.squeeze("sweep_rate")
    return ds.assign_attrs(method="Fulton-Dunkleberger inversion (Fulton & Dunkleberger, PRB 9, 4760 (1974))",
                           error="binomial counts given the survivors, delta method on ln(S_i / S_{i+1})")
