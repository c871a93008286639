"""Thermodynamics of 2D Ising results (``gpuensembles.ising``) with jackknife errors, and ``Dataset.ising``.

A result holds, for every ``(L, beta)`` point, ``realization`` independent Markov chains
whose measurements are averaged in consecutive bins of Monte Carlo time (dimension ``bin``; ``bin_e``,
``bin_e2``, ``bin_abs_m``, ``bin_m2``, ``bin_m4``, ``bin_acceptance``; the coordinate
``bin_measurements`` counts the measurements in each bin). Estimates use all the
``(realization, bin)`` blocks; their standard errors come from the jackknife over those
blocks (:func:`jackknife`), which accounts for the autocorrelation in Monte Carlo time as
long as the bins are much longer than the integrated autocorrelation time (check with
:func:`autocorrelation_time`).

Units: the coupling ``J = 1`` and ``k_B = 1``; ``beta`` is in ``1/J``, energies per spin in
``J``, specific heat per spin in ``k_B``, susceptibility per spin in ``1/J``, times in
sweeps (one attempted flip per spin). ``N = L^2`` spins.

Every function except :func:`binder_crossings`, :func:`exact`, :func:`onsager` and
:func:`plot_snapshot` works on dask-backed data without computing it.
"""

import warnings

import numpy as np
import xarray as xr

from ...analysis import statistics
from ...analysis.statistics import mean_with_error
from ...core.io import REALIZATION
from ...core.validation import check_choice, check_flag

BIN = "bin"
BLOCKS = (REALIZATION, BIN)
COUNTS = "bin_measurements"
#: quantity name of :func:`autocorrelation_time` -> (bin mean, bin mean of the square)
AUTOCORRELATION_QUANTITIES = {"e": ("bin_e", "bin_e2"), "abs_m": ("bin_abs_m", "bin_m2")}


def _as_coord(values, name):
    """``values`` as a DataArray: a 1-D coordinate ``name`` or a 0-d (scalar) one."""
    if isinstance(values, xr.DataArray):
        return values
    values = np.asarray(values)
    if values.ndim == 0:
        return xr.DataArray(values, coords={name: values})
    return xr.DataArray(values, dims=(name,), coords={name: values})


def _result(mean, stderr, long_name, units):
    return xr.Dataset({
        "mean": mean.assign_attrs(long_name=long_name, units=units),
        "stderr": stderr.assign_attrs(long_name=f"jackknife standard error of the {long_name}", units=units),
    })


def jackknife(f, *blocks: xr.DataArray, weights=None, dims=BLOCKS) -> xr.Dataset:
    """:func:`gpuensembles.analysis.statistics.jackknife` over ``(realization, bin)`` blocks.

    ``weights`` defaults to the ``bin_measurements`` coordinate of the first block array
    (the measurements in each bin), so that the means over blocks equal the means over
    all measurements.
    """
    if weights is None and COUNTS in blocks[0].coords:
        weights = blocks[0][COUNTS]
    return statistics.jackknife(f, *blocks, dims=dims, weights=weights)


def energy(bin_e: xr.DataArray) -> xr.Dataset:
    """Mean energy per spin ``<e>`` (``mean``, in J) with its jackknife ``stderr``.

    Uses all ``(realization, bin)`` blocks; errors are valid when the bins are much longer
    than the autocorrelation time (see :func:`jackknife`).
    """
    r = jackknife(lambda e: e, bin_e)
    return _result(r["mean"], r["stderr"], "energy per spin", "J")


def magnetization(bin_abs_m: xr.DataArray) -> xr.Dataset:
    """Mean absolute magnetization per spin ``<|m|>`` (``mean``, dimensionless) with its ``stderr``.

    Uses all ``(realization, bin)`` blocks; errors are valid when the bins are much longer
    than the autocorrelation time (see :func:`jackknife`).
    """
    r = jackknife(lambda m: m, bin_abs_m)
    return _result(r["mean"], r["stderr"], "absolute magnetization per spin", "1")


def acceptance(bin_acceptance: xr.DataArray) -> xr.Dataset:
    """Mean fraction of accepted flip attempts (``mean``, dimensionless) with its ``stderr``."""
    r = jackknife(lambda a: a, bin_acceptance)
    return _result(r["mean"], r["stderr"], "acceptance ratio", "1")


def specific_heat(bin_e: xr.DataArray, bin_e2: xr.DataArray, beta, L) -> xr.Dataset:
    """Specific heat per spin ``C = beta^2 N (<e^2> - <e>^2)`` (in k_B) with its jackknife ``stderr``.

    Parameters
    ----------
    bin_e, bin_e2 : DataArray
        Bin means of the energy per spin ``e`` (J) and of ``e^2`` (J^2), over
        ``(..., realization, bin)``.
    beta : DataArray or float
        Inverse temperature (1/J).
    L : DataArray or int
        Linear lattice size; ``N = L^2``.

    Returns
    -------
    Dataset
        ``mean``: ``C`` evaluated on the means over all blocks (not bias-corrected; the bias
        is of order ``tau_int / (total sweeps)``), and ``stderr`` from the jackknife over the
        ``(realization, bin)`` blocks, valid when the bins are much longer than the
        autocorrelation time.
    """
    n_spins = L**2
    r = jackknife(lambda e, e2: (e2 - e**2) * beta**2 * n_spins, bin_e, bin_e2)
    return _result(r["mean"], r["stderr"], "specific heat per spin", "k_B")


def susceptibility(bin_abs_m: xr.DataArray, bin_m2: xr.DataArray, beta, L) -> xr.Dataset:
    """Susceptibility per spin ``chi = beta N (<m^2> - <|m|>^2)`` (in 1/J) with its jackknife ``stderr``.

    The finite-lattice definition with ``|m|`` (the ``<m> = 0`` of a finite lattice at
    ``h = 0`` would give ``beta N <m^2>``). ``mean`` is ``chi`` of the means over all
    ``(realization, bin)`` blocks; ``stderr`` is the jackknife error over the blocks, valid
    when the bins are much longer than the autocorrelation time. ``N = L^2``.
    """
    n_spins = L**2
    r = jackknife(lambda m, m2: (m2 - m**2) * beta * n_spins, bin_abs_m, bin_m2)
    return _result(r["mean"], r["stderr"], "magnetic susceptibility per spin", "1/J")


def binder(bin_m2: xr.DataArray, bin_m4: xr.DataArray) -> xr.Dataset:
    """Binder cumulant ``U = 1 - <m^4> / (3 <m^2>^2)`` (dimensionless) with its jackknife ``stderr``.

    ``U -> 2/3`` in the ordered phase and ``-> 0`` in the disordered phase of a large
    lattice. ``mean`` is ``U`` of the means over all ``(realization, bin)`` blocks;
    ``stderr`` is the jackknife error over the blocks, valid when the bins are much longer
    than the autocorrelation time.
    """
    r = jackknife(lambda m2, m4: 1.0 - m4 / (3.0 * m2**2), bin_m2, bin_m4)
    return _result(r["mean"], r["stderr"], "Binder cumulant", "1")


def autocorrelation_time(bin_mean: xr.DataArray, bin_square: xr.DataArray, measure_every, counts=None,
                         name: str = "e", warn: bool = True) -> xr.Dataset:
    """Integrated autocorrelation time of a measured quantity from the variance of its bin means.

    For each realization, with ``x_b`` the mean of bin ``b`` over its ``n_b`` measurements
    and ``sigma^2 = <x^2> - <x>^2`` the variance of a single measurement::

        tau_int = measure_every * sum_b n_b (x_b - <x>)^2 / (B - 1) / (2 sigma^2)

    (``measure_every * n_b Var(bin means) / (2 sigma^2)`` for equal bins), in sweeps, with the
    convention ``tau_int = measure_every / 2`` for uncorrelated measurements, so that the
    variance of a mean over ``T`` sweeps is ``2 tau_int sigma^2 / T``. ``sigma^2`` is
    corrected for the bias of the sample mean (``+ Var(<x>)``). The estimate is valid only
    when the bins are much longer than ``tau_int``; it is biased low (saturating at about
    the bin length) otherwise.

    Parameters
    ----------
    bin_mean, bin_square : DataArray
        Bin means of ``x`` and ``x^2`` over ``(..., realization, bin)``.
    measure_every : int
        Sweeps between measurements.
    counts : DataArray, optional
        Measurements in each bin (default: the ``bin_measurements`` coordinate).
    name : str
        Name of ``x`` for the labels and the warning.
    warn : bool
        Warn (``UserWarning``) where ``tau_int`` exceeds a tenth of the bin length: the
        bins are then not independent and the jackknife error bars of this result are too
        small. The check needs the values, so it is done only for in-memory data; for
        dask-backed data compare ``mean`` with ``bin_sweeps`` after computing.

    Returns
    -------
    Dataset
        ``mean``: ``tau_int`` (sweeps) averaged over realizations; ``stderr``: its standard
        error over realizations (``std / sqrt(R)``; with a single realization the Gaussian
        estimate ``tau_int sqrt(2 / (B - 1))``); ``bin_sweeps``: the shortest bin length
        in sweeps.
    """
    if counts is None:
        if COUNTS not in bin_mean.coords:
            raise ValueError(f"autocorrelation_time needs the measurements per bin (coordinate {COUNTS!r})")
        counts = bin_mean[COUNTS]
    n_bins = bin_mean.sizes[BIN]
    if n_bins < 2:
        raise ValueError(f"autocorrelation_time needs at least 2 bins, got {n_bins}")
    counts = counts.astype(float)
    total = counts.sum(BIN)
    mean = (counts * bin_mean).sum(BIN) / total
    between = (counts * (bin_mean - mean) ** 2).sum(BIN) / (n_bins - 1)  # estimates 2 tau / measure_every * sigma^2
    variance = (counts * bin_square).sum(BIN) / total - mean**2 + between / total
    tau = measure_every * between / (2.0 * variance)
    if tau.sizes.get(REALIZATION, 1) >= 2:
        result = mean_with_error(tau, REALIZATION)
    else:
        tau = tau.squeeze(REALIZATION, drop=True) if REALIZATION in tau.dims else tau
        result = xr.Dataset({"mean": tau, "stderr": tau * np.sqrt(2.0 / (n_bins - 1))})
    bin_sweeps = counts.min() * measure_every
    result["mean"].attrs.update(long_name=f"integrated autocorrelation time of {name}", units="sweeps")
    result["stderr"].attrs.update(long_name="standard error over realizations", units="sweeps")
    result["bin_sweeps"] = bin_sweeps.assign_attrs(long_name="shortest bin length", units="sweeps")
    if warn and result["mean"].chunks is None and getattr(bin_sweeps.data, "chunks", None) is None:
        _warn_long_tau(result["mean"], float(bin_sweeps), name)
    return result


#: Quantities whose bins :func:`equilibration` tests for drift (the energy decides).
EQUILIBRATION_QUANTITIES = {"e": "bin_e", "abs_m": "bin_abs_m"}
#: Fewest bins :func:`equilibration` tests (three a third).
MIN_EQUILIBRATION_BINS = 9


def equilibration(bins: xr.Dataset, thermalization=None) -> xr.Dataset:
    """Which chains are still relaxing after the thermalization: the energy drifting over the bins.

    For every ``(L, beta, realization)``, the mean energy of the last third of the bins against
    that of the first third (:func:`gpuensembles.analysis.statistics.drift`; the scale is the
    spread of those differences across the other realizations, or with fewer than four the
    scatter of the bins). The energy decides: a relaxing lattice loses domain-wall energy
    (coarsening moved it by 31 of its standard deviations where the test's threshold is 9), and
    its fluctuations are close to Gaussian, which the thresholds assume. ``|m|`` is reported
    beside it (``z_abs_m``) but decides nothing: near ``beta_c`` and in the ordered phase its
    distribution has tails (domain excursions) that would raise false alarms at equilibrium.
    The check needs at least three bins a third (9 bins).

    Parameters
    ----------
    bins : Dataset
        The ``bin_e`` and ``bin_abs_m`` of an Ising result (computed), with ``bin_measurements``.
    thermalization : int, optional
        Sweeps discarded before the bins (named in the result's attributes).

    Returns
    -------
    Dataset
        ``z_e``, ``z_abs_m`` (the drift statistics) and ``drifting`` over ``(L, beta,
        realization)``; attributes ``threshold`` and ``thermalization``.
    """
    from ...analysis.statistics import drift

    if bins.sizes[BIN] < MIN_EQUILIBRATION_BINS:
        raise ValueError(f"equilibration needs at least {MIN_EQUILIBRATION_BINS} bins (three a third), got "
                         f"{bins.sizes[BIN]}: run with more bins")
    weights = bins[COUNTS] if COUNTS in bins.coords else None
    found = {q: drift(bins[name], BIN, weights=weights) for q, name in EQUILIBRATION_QUANTITIES.items()}
    drifting = found["e"]["drifting"]
    threshold = found["e"].attrs["threshold"]
    return xr.Dataset({
        "z_e": found["e"]["z"], "z_abs_m": found["abs_m"]["z"],
        "drifting": drifting.assign_attrs(long_name="the chain's energy still drifts over its bins"),
    }, attrs={"threshold": threshold, "scale": found["e"].attrs["scale"], "thermalization": thermalization})


def warn_if_drifting(check: xr.Dataset, stacklevel: int = 2):
    """One warning naming the ``(L, beta)`` points and the chains of ``check`` (:func:`equilibration`) that drift."""
    therm = check.attrs.get("thermalization")
    statistics.warn_if_drifting(
        check, noun="chain", what="the energy of the last third of the bins",
        after=f" after the thermalization of {therm} sweeps" if therm is not None else " after the thermalization",
        fix="increase thermalization (or sweeps); ds.ising.equilibration() gives the statistics",
        stacklevel=stacklevel + 1)


def _warn_long_tau(tau: xr.DataArray, bin_sweeps: float, name: str):
    too_long = (tau > bin_sweeps / 10).values
    if not too_long.any():
        return
    where = ""
    if tau.ndim:
        index = np.unravel_index(np.nanargmax(np.where(too_long, tau.values, np.nan)), tau.shape)
        where = " at " + ", ".join(f"{d}={tau[d].values[i]}" for d, i in zip(tau.dims, index) if d in tau.coords)
    warnings.warn(
        f"the integrated autocorrelation time of {name} reaches {float(tau.max()):.4g} sweeps{where}, more than a "
        f"tenth of the bin length ({bin_sweeps:.4g} sweeps) at {int(too_long.sum())} point(s): the bins are not "
        "independent there, the jackknife error bars are too small and tau_int itself is underestimated; "
        "use longer bins (fewer bins or more sweeps)",
        stacklevel=3,
    )


def exact(L, beta) -> xr.Dataset:
    """Exact energy and specific heat per spin of the finite periodic ``L x L`` lattice.

    From :func:`gpuensembles.theory.ising_exact` (J = 1, h = 0), tabulated for every ``L``
    and ``beta`` (1-D coordinates, or scalars).

    Returns
    -------
    Dataset
        ``energy`` (J per spin) and ``specific_heat`` (k_B per spin) over ``(L, beta)``.
    """
    from . import theory

    L, beta = _as_coord(L, "L"), _as_coord(beta, "beta")
    sizes = np.atleast_1d(L.values)
    betas = np.atleast_1d(np.asarray(beta.values, dtype=float))
    e = np.empty((sizes.size, betas.size))
    c = np.empty_like(e)
    for i, size in enumerate(sizes):
        ei, ci = theory.ising_exact(int(size), betas)
        e[i], c[i] = np.broadcast_to(ei, betas.shape), np.broadcast_to(ci, betas.shape)
    coords = {"L": ("L", sizes, L.attrs), "beta": ("beta", betas, beta.attrs)}
    ds = xr.Dataset(
        {"energy": (("L", "beta"), e, {"long_name": "exact energy per spin", "units": "J"}),
         "specific_heat": (("L", "beta"), c, {"long_name": "exact specific heat per spin", "units": "k_B"})},
        coords=coords,
    )
    return ds.isel({d: 0 for d, v in (("L", L), ("beta", beta)) if v.ndim == 0})


def onsager(beta) -> xr.Dataset:
    """Infinite-lattice (Onsager) energy, specific heat and spontaneous magnetization per spin.

    From :func:`gpuensembles.theory.onsager_energy`, ``onsager_specific_heat`` and
    ``onsager_magnetization``, tabulated on ``beta`` (1/J; a 1-D coordinate or a scalar).

    Returns
    -------
    Dataset
        ``energy`` (J per spin), ``specific_heat`` (k_B per spin) and ``magnetization``
        (dimensionless) over ``beta``.
    """
    from . import theory

    beta = _as_coord(beta, "beta")
    b = np.asarray(beta.values, dtype=float)
    dims = beta.dims
    coords = {"beta": (dims, b, beta.attrs)}

    def table(func):
        """``func`` of the inverse temperatures as a DataArray tuple over ``dims``."""
        return dims, np.broadcast_to(np.asarray(func(b), dtype=float), b.shape)

    return xr.Dataset(
        {"energy": (*table(theory.onsager_energy), {"long_name": "Onsager energy per spin", "units": "J"}),
         "specific_heat": (*table(theory.onsager_specific_heat),
                           {"long_name": "Onsager specific heat per spin", "units": "k_B"}),
         "magnetization": (*table(theory.onsager_magnetization),
                           {"long_name": "spontaneous magnetization per spin (Onsager-Yang)", "units": "1"})},
        coords=coords,
    )


def _crossing(x, d, var, lower):
    """Crossing in one pair: (beta, stderr, U at the crossing, number of sign changes)."""
    negative = d < 0
    ok = np.isfinite(d[:-1]) & np.isfinite(d[1:])
    candidates = np.flatnonzero(ok & (negative[:-1] != negative[1:]))
    if candidates.size == 0:
        return np.nan, np.nan, np.nan, 0
    jump = np.abs(d[candidates + 1] - d[candidates])
    sigma = np.sqrt(var[candidates] + var[candidates + 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        significance = np.where(sigma > 0, jump / sigma, np.inf)
    k = candidates[np.lexsort((jump, significance))[-1]]  # most significant, then the largest jump
    d0, d1, h = d[k], d[k + 1], x[k + 1] - x[k]
    t = d0 / (d0 - d1)
    stderr = h / (d0 - d1) ** 2 * np.sqrt(d1**2 * var[k] + d0**2 * var[k + 1])
    return x[k] + t * h, stderr, lower[k] + t * (lower[k + 1] - lower[k]), candidates.size


def binder_crossings(binder: xr.Dataset, dim: str = "L", along: str = "beta") -> xr.Dataset:
    """Where the Binder curves of consecutive lattice sizes cross.

    For each pair of consecutive values of ``dim`` (sorted), the difference
    ``D = U_large - U_small`` is linearly interpolated between the two grid points of
    ``along`` that bracket its sign change::

        beta* = b0 + (b1 - b0) D0 / (D0 - D1)

    Its error is propagated linearly from the ``stderr`` of both curves at the two
    bracketing points, treated as independent (different ``(L, beta)`` points are
    independent simulations): with ``s_k^2 = s_small(b_k)^2 + s_large(b_k)^2``,
    ``stderr = (b1 - b0) sqrt(D1^2 s_0^2 + D0^2 s_1^2) / (D0 - D1)^2``. The interpolation
    error (curvature of ``D`` within the bracket) is not included. Where ``D`` changes sign
    more than once (noise where the curves nearly coincide), the sign change with the
    largest jump ``|D1 - D0|`` relative to its error is taken. Computes the data.

    Parameters
    ----------
    binder : Dataset
        ``mean`` and ``stderr`` of the Binder cumulant over exactly ``(dim, along)``, as
        returned by :func:`binder`.
    dim : str
        Lattice-size dimension (at least 2 values).
    along : str
        Dimension along which the curves are scanned (at least 2 values), usually ``beta``.

    Returns
    -------
    Dataset
        Over ``pair``, with coordinates ``{dim}_small`` and ``{dim}_large``: ``mean`` (the
        crossing ``beta*``, NaN if the difference never changes sign), ``stderr``,
        ``binder`` (``U`` at the crossing, interpolated on the smaller lattice's curve; no
        error) and ``n_crossings`` (number of sign changes found).
    """
    mean, stderr = binder["mean"], binder["stderr"]
    for name, d in (("dim", dim), ("along", along)):
        if not isinstance(d, str):
            raise TypeError(f"{name} must be a dimension name (str), got {type(d).__name__} {d!r}")
        if d not in mean.dims or mean.sizes[d] < 2:
            raise ValueError(f"binder_crossings needs Binder curves at 2 or more values of {d!r} ({name}={d!r}); "
                             f"got dims {dict(mean.sizes)} (a scalar {d} has no pairs)")
    if set(mean.dims) != {dim, along}:
        raise ValueError(f"binder_crossings needs Binder curves over ({dim!r}, {along!r}) only, got dims {mean.dims}; "
                         "select the other dims first")
    mean = mean.sortby([dim, along]).transpose(dim, along)
    stderr = stderr.sortby([dim, along]).transpose(dim, along)
    u, s = np.asarray(mean.values, dtype=float), np.asarray(stderr.values, dtype=float)
    x = np.asarray(mean[along].values, dtype=float)
    rows = [_crossing(x, u[i + 1] - u[i], s[i] ** 2 + s[i + 1] ** 2, u[i]) for i in range(u.shape[0] - 1)]
    beta_cross, err, u_cross, count = (np.array(col) for col in zip(*rows))
    sizes = mean[dim].values
    units = mean[along].attrs.get("units", "1/J")
    return xr.Dataset(
        {"mean": ("pair", beta_cross, {"long_name": f"{along} where the Binder curves cross", "units": units}),
         "stderr": ("pair", err, {"long_name": "standard error (linear propagation of the Binder errors)",
                                  "units": units}),
         "binder": ("pair", u_cross, {"long_name": "Binder cumulant at the crossing", "units": "1"}),
         "n_crossings": ("pair", count.astype(np.int64), {"long_name": "sign changes of the difference"})},
        coords={f"{dim}_small": ("pair", sizes[:-1]), f"{dim}_large": ("pair", sizes[1:])},
    )


def _select_lattice(snapshot: xr.DataArray, sel) -> xr.DataArray:
    """One lattice of ``snapshot`` by coordinate values (size-1 dimensions are squeezed)."""
    for key, value in sel.items():
        if key not in snapshot.coords:
            raise ValueError(f"the snapshot has no coordinate {key!r}; it has {list(snapshot.coords)}")
        if np.ndim(value) != 0:
            raise ValueError(f"select a single value of {key!r}, got {value!r}")
        coord = snapshot[key]
        values = np.atleast_1d(coord.values)
        if np.issubdtype(values.dtype, np.floating):
            matches = np.flatnonzero(np.isclose(values, value, rtol=1e-6, atol=1e-12))
        else:
            matches = np.flatnonzero(values == value)
        if matches.size == 0:
            raise ValueError(f"{key}={value!r} is not in the snapshot's {key} values {values.tolist()}")
        if coord.ndim == 1 and key in snapshot.dims:
            snapshot = snapshot.isel({key: int(matches[0])})
        elif coord.ndim != 0:
            raise ValueError(f"cannot select on the non-dimension coordinate {key!r}")
    snapshot = snapshot.squeeze([d for d in snapshot.dims if d not in ("y", "x") and snapshot.sizes[d] == 1])
    extra = [d for d in snapshot.dims if d not in ("y", "x")]
    if extra:
        raise ValueError(f"the selection is not a single lattice: it still spans {extra} "
                         f"(sizes {[snapshot.sizes[d] for d in extra]}); select one value of each, "
                         "e.g. plot_snapshot(L=64, beta=0.44, realization=0)")
    return snapshot


def plot_snapshot(snapshot: xr.DataArray, ax=None, **sel):
    """Image of one final spin configuration (matplotlib; +1 white, -1 black).

    Parameters
    ----------
    snapshot : DataArray
        Spins (``int8``, +1/-1, zero-padded beyond ``L``) over ``(..., y, x)``.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    **sel
        Coordinate values that select a single lattice, e.g. ``L=64, beta=0.44,
        realization=0``. Float coordinates match to a relative 1e-6; dimensions of size 1
        need no selection.

    Returns
    -------
    Axes
        The axes drawn into.
    """
    from ...analysis.plots import axes

    lattice = _select_lattice(snapshot, sel)
    size = int(lattice["L"]) if "L" in lattice.coords else lattice.sizes["y"]
    lattice = lattice.isel(y=slice(0, size), x=slice(0, size)).transpose("y", "x")
    ax = axes(ax)
    ax.imshow(np.asarray(lattice.values), cmap="gray", vmin=-1, vmax=1, interpolation="nearest", origin="lower")
    labels = [f"{d} = {lattice[d].values.item():.4g}" if np.issubdtype(lattice[d].dtype, np.floating)
              else f"{d} = {lattice[d].values.item()}" for d in lattice.coords if lattice[d].ndim == 0]
    ax.set_title(", ".join(labels))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return ax


@xr.register_dataset_accessor("ising")
class IsingAccessor:
    """``ds.ising``: thermodynamics of a ``gpuensembles.ising`` result, with jackknife errors.

    Resolves the variables of the result and delegates to the functions of
    :mod:`gpuensembles.analysis.ising` (and to :mod:`gpuensembles.theory`).
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def _var(self, name):
        if name not in self._ds:
            raise ValueError(f"this result has no {name!r} (binned measurements of gpuensembles.ising); "
                             f"it has {sorted(self._ds.data_vars)}")
        return self._ds[name]

    def _param(self, name):
        if name in self._ds.coords:
            return self._ds[name]
        if name in self._ds.attrs:
            return self._ds.attrs[name]
        raise ValueError(f"this result has no coordinate or attribute {name!r}")

    def equilibration(self) -> xr.Dataset:
        """Chains still drifting after the thermalization (energy, ``|m|``); see :func:`equilibration`."""
        bins = xr.Dataset({name: self._var(name) for name in EQUILIBRATION_QUANTITIES.values()})
        return equilibration(bins.compute(), self._ds.attrs.get("thermalization"))

    def _checked(self):
        """Warn once if chains drift (for computed data: a lazy result is checked when it is computed)."""
        if self._ds["bin_e"].chunks is None and self._ds.sizes.get(BIN, 0) >= MIN_EQUILIBRATION_BINS:
            warn_if_drifting(self.equilibration(), stacklevel=4)

    def energy(self) -> xr.Dataset:
        """Energy per spin ``<e>`` (J): ``mean`` and jackknife ``stderr``; see :func:`energy`."""
        self._checked()
        return energy(self._var("bin_e"))

    def magnetization(self) -> xr.Dataset:
        """Absolute magnetization per spin ``<|m|>``: ``mean``, ``stderr``; see :func:`magnetization`."""
        self._checked()
        return magnetization(self._var("bin_abs_m"))

    def acceptance(self) -> xr.Dataset:
        """Fraction of accepted flip attempts: ``mean``, ``stderr``; see :func:`acceptance`."""
        return acceptance(self._var("bin_acceptance"))

    def specific_heat(self) -> xr.Dataset:
        """Specific heat per spin ``beta^2 N (<e^2> - <e>^2)`` (k_B); see :func:`specific_heat`."""
        self._checked()
        return specific_heat(self._var("bin_e"), self._var("bin_e2"), self._param("beta"), self._param("L"))

    def susceptibility(self) -> xr.Dataset:
        """Susceptibility per spin ``beta N (<m^2> - <|m|>^2)`` (1/J); see :func:`susceptibility`."""
        self._checked()
        return susceptibility(self._var("bin_abs_m"), self._var("bin_m2"), self._param("beta"), self._param("L"))

    def binder(self) -> xr.Dataset:
        """Binder cumulant ``1 - <m^4> / (3 <m^2>^2)``; see :func:`binder`."""
        self._checked()
        return binder(self._var("bin_m2"), self._var("bin_m4"))

    def autocorrelation_time(self, quantity: str = "e", warn: bool = True) -> xr.Dataset:
        """Integrated autocorrelation time (sweeps) of ``"e"`` or ``"abs_m"``; see :func:`autocorrelation_time`."""
        check_choice("quantity", quantity, tuple(AUTOCORRELATION_QUANTITIES))
        warn = check_flag("warn", warn)
        if "measure_every" not in self._ds.attrs:
            raise ValueError("this result has no 'measure_every' attribute (sweeps between measurements)")
        mean_name, square_name = AUTOCORRELATION_QUANTITIES[quantity]
        return autocorrelation_time(self._var(mean_name), self._var(square_name), self._ds.attrs["measure_every"],
                                    name=quantity, warn=warn)

    def exact(self) -> xr.Dataset:
        """Exact finite-lattice ``energy`` and ``specific_heat`` per spin at this result's ``(L, beta)``."""
        return exact(self._param("L"), self._param("beta"))

    def onsager(self) -> xr.Dataset:
        """Infinite-lattice ``energy``, ``specific_heat`` and ``magnetization`` at this result's ``beta``."""
        return onsager(self._param("beta"))

    def binder_crossings(self, dim: str = "L") -> xr.Dataset:
        """Crossings of the Binder curves of consecutive ``L``; see :func:`binder_crossings`. Computes the data."""
        return binder_crossings(self.binder().compute(), dim=dim)

    def plot_snapshot(self, ax=None, **sel):
        """Image of one final configuration, e.g. ``plot_snapshot(L=64, beta=0.44, realization=0)``."""
        if "snapshot" not in self._ds:
            raise ValueError("this result has no snapshot; run ising(..., snapshot=True)")
        return plot_snapshot(self._ds["snapshot"], ax=ax, **sel)
