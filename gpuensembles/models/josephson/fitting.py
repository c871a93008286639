"""Fit a junction to measured switching histograms: ``Ic``, the escape temperature and the damping.

:func:`fit_switching` maximizes the likelihood of the switching currents themselves (samples,
or counts per bin) under a rate model and the Fulton-Dunkleberger law of a linear ramp
(:mod:`.likelihood`), not a line through transformed rates. Errors are the inverse Fisher
information at the maximum; the goodness of fit is Pearson's chi-square over bins of equal
fitted probability (or the given bins of counts, merged to at least 5 expected events).
"""

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ...core.validation import check_choice, check_flag
from . import histograms, likelihood, quantum_theory, simulated_model
from .junction import BOLTZMANN, normalize

MODELS = ("thermal", "quantum", "simulated")
UNITS = ("1", "A")
#: Fewest switching events a fit accepts.
MIN_EVENTS = 20
#: Relative error of Q above which a fitted damping is reported as not constrained by the data.
LOOSE = 0.2
#: Fewest expected events in a bin of the chi-square.
MIN_EXPECTED = 5.0


class _Units:
    """Conversion between the caller's units and the normalized ones of the fit."""

    def __init__(self, units, V0, damping, C, R, reference):
        self.units, self.reference = units, reference
        if units == "1":
            self.E_C, self.time = None, 1.0
            self.V0_unit, self.damping = float(V0), float(damping)
        else:  # the junction of critical current `reference` (V0 scales with it); its T does not matter
            si = {k: float(v) for k, v in normalize(R=R, C=C, Ic=reference, T=1.0).items()}
            self.E_C, self.time, self.V0_unit, self.damping = si["E_C"], si["time_unit"], si["V0"], si["damping"]

    def theta(self, temperature):
        """Normalized temperature of the caller's (kelvin, or already normalized)."""
        return temperature if self.units == "1" else BOLTZMANN * temperature / self.E_C

    def temperature(self, theta):
        """The caller's temperature of a normalized one."""
        return theta if self.units == "1" else theta * self.E_C / BOLTZMANN


def _check_positive(name, value, what):
    if value is None:
        raise ValueError(f"{name} is required: {what}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a positive number ({what}), got {value!r}")
    return number


def _check_units(units, V0, damping, C, R):
    """Refuse parameters of the other system of units (a mix is almost always a slip)."""
    check_choice("units", units, UNITS)
    if units == "1":
        if C is not None or R is not None:
            raise ValueError("C and R are for units='A' (currents in amperes); with units='1' give V0 and damping")
        V0 = _check_positive("V0", V0, "E_J / E_C at the nominal critical current, for units='1'")
        damping = _check_positive("damping", damping, "1 / (R C) in the time unit of the data, for units='1'")
        return V0, damping, None, None
    if V0 is not None or damping is not None:
        raise ValueError("V0 and damping are for units='1'; with units='A' give the capacitance C (F) and the "
                         "shunt resistance R (ohm)")
    return None, None, _check_positive("C", C, "the junction capacitance in F"), _check_positive(
        "R", R, "the shunt resistance in ohm (it sets the damping)")


def _rows(data, counts, edges, unswitched, units):
    """``[(samples or None, counts or None, unswitched)]``, one per histogram, and the edges."""
    if (data is None) == (counts is None):
        raise ValueError("give either data (switching currents) or counts with edges, not both or neither")
    if data is not None:
        values = np.asarray(data, dtype=float)
        values = values[None, :] if values.ndim == 1 else values
        if values.ndim != 2:
            raise ValueError(f"data must be 1-D, or 2-D with one row per temperature; got shape {values.shape}")
        if np.any(np.isinf(values)) or np.any(values[np.isfinite(values)] <= 0):
            raise ValueError("data must be positive switching currents, or NaN where a ramp did not switch")
        rows = [(row[np.isfinite(row)], None, int(np.sum(~np.isfinite(row)))) for row in values]
        edges = None
    else:
        if edges is None:
            raise ValueError("counts need their bin edges: edges=")
        edges = histograms._check_edges(edges, units)
        if edges[0] <= 0:
            raise ValueError(f"edges must be positive currents, got a first edge of {edges[0]!r}")
        counts, unswitched = histograms._check_counts(counts, edges, unswitched)
        rows = [(None, row, int(u)) for row, u in zip(counts, unswitched)]
    for i, (samples, row, _) in enumerate(rows):
        events = samples.size if samples is not None else int(row.sum())
        if events < MIN_EVENTS:
            raise ValueError(f"histogram {i} has {events} switching events: a fit needs at least {MIN_EVENTS}")
    largest = max(float(s.max()) if s is not None else float(edges[-1]) for s, _, _ in rows)
    if units == "1" and largest < 1e-3:
        raise ValueError(f"with units='1' the data are I / I_c (near 1); the largest is {largest:.3g}, which looks "
                         "like amperes: use units='A' with C and R")
    if units == "A" and largest > 0.1:
        raise ValueError(f"with units='A' the data are currents in amperes; the largest is {largest:.3g}, which "
                         "looks normalized: use units='1' with V0 and damping")
    return rows, edges, largest


def _inverted(data: likelihood.Histogram):
    """``(currents, rates)`` of the histogram's Fulton-Dunkleberger inversion (resolved bins only)."""
    if data.samples is not None:
        counts, edges = np.histogram(data.samples, bins=int(np.clip(np.sqrt(data.samples.size), 8, 40)))
    else:
        counts, edges = data.counts, data.edges
    rate, _, _, _, _ = histograms._invert(counts, data.unswitched, edges, data.x_dot)
    x = 0.5 * (edges[1:] + edges[:-1])
    keep = np.isfinite(rate) & (rate > 0)
    return x[keep], rate[keep]


def _arrhenius(x, rate, c, V0_unit):
    """``(theta, residual)``: least squares of ``ln(omega_p / 2 pi Gamma) = Delta U / theta`` at ``Ic = c``."""
    gamma = x / c
    du = likelihood.theory.barrier(gamma, c * V0_unit)
    y = np.log(likelihood.theory.plasma_frequency(gamma, c * V0_unit) / (2 * math.pi * rate * c))
    if x.size < 2 or np.sum(du * y) <= 0:
        return math.nan, math.inf
    theta = float(np.sum(du * du) / np.sum(du * y))
    return theta, float(np.sum((y - du / theta) ** 2))


def _start(data: likelihood.Histogram, damping, Ic=None):
    """Starting values: ``Ic`` (unless given) and ``theta`` from the Arrhenius law of the inverted histogram."""
    x, rate = _inverted(data)
    candidates = [Ic] if Ic is not None else data.top * (1.0 + np.geomspace(1e-4, 1.0, 60))
    best = min(((*_arrhenius(x, rate, c, data.V0_unit)[::-1], c) for c in candidates), key=lambda t: t[0])
    residual, theta, c = best
    if not math.isfinite(residual):
        c, theta = (Ic or data.top * 1.05), 1.0
    return {"Ic": c, "theta": theta, "damping": damping}


def _chi_square(model, data: likelihood.Histogram, values, fitted, redrawn=()):
    """``(chi2, dof, p)``: Pearson's chi-square of the data against the fitted switching distribution.

    ``redrawn`` holds ``(rate model, values)`` pairs: the model redrawn within its own errors and
    fitted again (:func:`_redrawn`). The expected counts then carry their covariance over these
    fits beside the counts' Poisson variance, ``chi2 = d (diag(E) + C)^-1 d``, which is Pearson's
    without them: a simulated table's noise is not read as a misfit of the data.
    """
    from scipy import stats

    total = data.events + data.unswitched
    if data.samples is not None:
        k = int(np.clip(data.events // 20, 4, 50))
        grid = np.linspace(*data.window, 4000)
        cdf = likelihood.model_cdf(model, data, values, grid)
        inner = np.interp(np.arange(1, k) / k * cdf[-1], cdf, grid)
        edges = np.concatenate([[data.window[0]], inner, [np.nextafter(data.window[1], np.inf)]])
        observed = np.histogram(data.samples, bins=edges)[0].astype(float)
    else:
        edges, observed = data.edges, data.counts.astype(float)
    cdf = likelihood.model_cdf(model, data, values, edges)
    expected = total * np.diff(cdf)
    groups = _groups(expected)
    observed, expected = _merged(observed, groups), _merged(expected, groups)
    covariance = np.diag(expected)
    counts = [_merged(total * np.diff(likelihood.model_cdf(m, data, v, edges)), groups) for m, v in redrawn]
    counts = [c for c in counts if np.all(np.isfinite(c))]  # a redrawn table whose fit left its reach
    if len(counts) > 1 and expected.size:
        covariance = covariance + np.atleast_2d(np.cov(np.array(counts), rowvar=False))
    d = observed - expected
    chi2 = float(d @ np.linalg.solve(covariance, d)) if expected.size else 0.0
    dof = observed.size - 1 - fitted
    return chi2, dof, float(stats.chi2.sf(chi2, dof)) if dof > 0 else math.nan


def _groups(expected) -> list:
    """``(start, stop)`` of adjacent bins merged until each group expects at least `MIN_EXPECTED` events.

    Bins after the last full group join it (if they expect anything; bins that expect nothing
    past the last group are left out).
    """
    groups, first, e = [], 0, 0.0
    for i, b in enumerate(expected):
        e += b
        if e >= MIN_EXPECTED:
            groups.append((first, i + 1))
            first, e = i + 1, 0.0
    if e > 0 and groups:
        groups[-1] = (groups[-1][0], len(expected))
    return groups


def _merged(counts, groups) -> np.ndarray:
    """The sums of ``counts`` over the bins of each of ``groups`` (:func:`_groups`)."""
    return np.array([np.sum(counts[a:b]) for a, b in groups], dtype=float)


def _equivalent_theta(log_rate, gamma, V0, damping):
    """The temperature at which the thermal (Mel'nikov-Meshkov) rate at ``gamma`` is ``exp(log_rate)``."""
    from scipy import optimize

    def excess(log_theta):
        value = likelihood.thermal_log_rate(np.array([gamma]), V0=V0, damping=damping, theta=math.exp(log_theta))
        return float(value[0]) - log_rate

    barrier = float(likelihood.theory.barrier(gamma, V0))  # the rate rises with theta up to about the barrier
    return math.exp(optimize.brentq(excess, math.log(barrier / 500.0), math.log(barrier), xtol=1e-12))


def _propagated(function, q, covariance):
    """``function(q)`` and its standard error by the delta method (central-difference gradient)."""
    value = function(q)
    if not np.all(np.isfinite(covariance)):
        return value, math.nan
    gradient = np.empty(q.size)
    for i in range(q.size):
        h = 1e-3 * math.sqrt(covariance[i, i]) + 1e-12
        e = np.zeros(q.size)
        e[i] = h
        gradient[i] = (function(q + e) - function(q - e)) / (2 * h)
    return value, float(math.sqrt(max(gradient @ covariance @ gradient, 0.0)))


def fit_switching(data=None, sweep_rate=None, *, model="thermal", units="1", V0=None, damping=None, C=None, R=None,
                  temperature=None, counts=None, edges=None, unswitched=0, ramp_start=None, Ic=None,
                  fit_damping=False, criterion="escape", rel_error=0.05, h=None, backend="auto",
                  seed=0) -> xr.Dataset:
    """Fit ``Ic``, the escape temperature and (optionally) the damping to switching histograms.

    The likelihood of the switching currents under the Fulton-Dunkleberger law of a linear
    ramp, maximized over the model's parameters (:mod:`.likelihood`).

    Parameters
    ----------
    data : array_like, optional
        Switching currents: 1-D, or 2-D with one row per ``temperature``; NaN marks a ramp
        that did not switch (counted as surviving past the largest current). Or give
        ``counts`` and ``edges``.
    sweep_rate : float
        The ramp ``dI/dt``: in A/s with ``units="A"``; with ``units="1"``, in units of the
        nominal critical current per time unit ``hbar / E_C``.
    model : {"thermal", "quantum", "simulated"}
        * ``"thermal"``: Kramers escape with Mel'nikov-Meshkov's energy-diffusion factor
          (:func:`.theory.escape_rate`, ``form="melnikov"``); fits ``Ic`` and ``T_esc``, and
          the damping with ``fit_damping``.
        * ``"quantum"``: tunnelling (:func:`.theory.mqt_rate`) plus activation at the bath
          ``temperature``; fits ``Ic`` (and the damping); ``T_esc`` is derived from the fitted
          rate at the mean switching current.
        * ``"simulated"``: the escape rates of the Langevin equation itself,
          :func:`~gpuensembles.escape_rates` with ``criterion`` (so retrapping of a moderately
          damped junction counts as it does in the experiment); fits ``Ic`` and ``T_esc``.
    units : {"1", "A"}
        Currents as ``I / I_c`` of a nominal junction (give ``V0`` and ``damping``), or in
        amperes (give ``C`` and ``R``).
    V0, damping : float
        With ``units="1"``: ``E_J / E_C`` at the nominal critical current, and ``1 / (R C)`` in
        the time unit ``hbar / E_C``.
    C, R : float
        With ``units="A"``: capacitance (F) and shunt resistance (ohm).
    temperature : float or array_like, optional
        Bath temperature of each histogram (kelvin with ``units="A"``, ``theta`` with
        ``units="1"``): a dimension of the result, used by ``"quantum"`` for activation.
    counts, edges, unswitched : array_like, optional
        Switching events per bin (a row per temperature), the bin edges, and the ramps that
        never switched (per row).
    ramp_start : float, optional
        The current at which each ramp starts (units of the data). By default the ramp is
        taken to start far enough below the data (their range below the smallest current,
        or at 0) that nothing switches before; give it when the ramps start closer.
    Ic : float, optional
        A critical current known otherwise (units of the data; e.g. from the low-temperature
        histograms or the normal-state resistance): held there instead of fitted. One histogram
        trades ``Ic`` against ``T_esc`` (their correlation is 0.99 and more).
    fit_damping : bool
        Fit the damping too (``"thermal"`` and ``"quantum"``); the histogram constrains it
        only through the prefactor (thermal) or the exponent's ``0.87 / Q`` (quantum), so expect
        a large error unless the data are many.
    criterion : {"escape", "voltage"}
        What ``"simulated"`` counts as a switch (:func:`~gpuensembles.escape_rates`).
    rel_error : float
        Relative error of each simulated rate (``"simulated"``).
    h : float, optional
        Time step of the simulation (``"simulated"``; normalized units ``hbar / E_C``). Default
        ``0.05 / sqrt(V0)``, a twentieth of a plasma period at zero bias; the rates' O(h) error moves
        ``T_esc`` by a fraction of it (check by fitting again at half the step).
    backend : str
        Backend of the simulation (``"simulated"``).
    seed : int
        Seed of the simulation (``"simulated"``).

    Returns
    -------
    xarray.Dataset
        Over ``temperature`` (when given): ``Ic``, ``T_esc``, ``Q`` (zero-bias quality factor
        ``sqrt(V0) / damping``), each with ``_stderr``; ``correlation`` of the fitted parameters;
        ``T_star`` (crossover at the mean switching current) with its error; ``log_likelihood``,
        ``chi2``, ``dof``, ``p_value`` (Pearson's; a simulated table's own errors counted
        beside the data's), ``events``; and over ``current`` the fitted ``model_cdf`` beside
        the data's ``empirical_cdf``.

    Raises
    ------
    ValueError
        Naming the field: negative counts, unsorted or overlapping bins, a sweep rate that is
        not positive, mixed units, too few events (fewer than 20), or a missing parameter.

    Examples
    --------
    >>> import gpuensembles as ge
    >>> fit = ge.josephson.fit_switching(currents, sweep_rate=2e-4, V0=200.0, damping=0.5)  # doctest: +SKIP
    >>> float(fit.T_esc), float(fit.T_esc_stderr)  # doctest: +SKIP
    """
    check_choice("model", model, MODELS)
    check_choice("criterion", criterion, ("escape", "voltage"))
    fit_damping = check_flag("fit_damping", fit_damping)
    if model == "simulated" and fit_damping:
        raise ValueError("fit_damping is not offered with model='simulated' (each damping is a new simulation); "
                         "fit with model='thermal' first, or compare fits at fixed dampings")
    V0, damping, C, R = _check_units(units, V0, damping, C, R)
    if model == "simulated":
        h = None if h is None else _check_positive("h", h, "the simulation's time step, in hbar / E_C")
        if not 0.003 <= _check_positive("rel_error", rel_error, "of each simulated rate") <= 0.5:
            raise ValueError(f"rel_error must lie in [0.003, 0.5], got {rel_error!r}")
    sweep = _check_positive("sweep_rate", sweep_rate, "dI/dt, in A/s with units='A' or I_c per time unit")
    rows, edges, largest = _rows(data, counts, edges, unswitched, units)
    if ramp_start is not None:
        lowest = min(float(s.min()) if s is not None else float(edges[0]) for s, _, _ in rows)
        ramp_start = float(ramp_start) if np.isscalar(ramp_start) else math.nan
        if not 0 <= ramp_start <= lowest:
            raise ValueError(f"ramp_start must be a current in [0, {lowest:.6g}] (no switching before the ramp "
                             f"starts), got {ramp_start!r}")
    if Ic is not None:
        Ic = _check_positive("Ic", Ic, "the critical current in the units of the data")
        if not Ic > largest:
            raise ValueError(f"Ic must exceed every switching current (the largest is {largest:.6g}), got {Ic!r}")
        if model == "quantum" and not fit_damping:
            raise ValueError("model='quantum' with Ic given leaves nothing to fit; add fit_damping=True")
    temps = None if temperature is None else np.atleast_1d(np.asarray(temperature, dtype=float))
    if temps is not None and (temps.size != len(rows) or np.any(~(temps >= 0))):
        raise ValueError(f"temperature must give one value >= 0 per histogram ({len(rows)}), got {temperature!r}")
    if model == "quantum" and temps is None:
        temps_used = np.zeros(len(rows))
    else:
        temps_used = temps if temps is not None else np.full(len(rows), math.nan)
    conv = _Units(units, V0, damping, C, R, reference=largest if units == "A" else 1.0)
    fits = []
    for (samples, row, left), temp in zip(rows, temps_used):
        scale = conv.reference
        hist = likelihood.Histogram(samples / scale if samples is not None else None, row,
                                    edges / scale if edges is not None else None, left, sweep / scale * conv.time,
                                    conv.V0_unit, None if ramp_start is None else ramp_start / scale)
        theta_bath = conv.theta(temp) if np.isfinite(temp) else 0.0
        options = _Options(model, fit_damping, theta_bath, criterion, rel_error, backend, seed,
                           None if Ic is None else Ic / scale, h)
        fits.append(_fit_one(options, conv, hist))
    return _dataset(fits, temps, conv, model, fits[0]["names"])


@dataclass
class _Options:
    """What one histogram's fit is asked to do."""

    model: str
    fit_damping: bool
    theta_bath: float
    criterion: str
    rel_error: float
    backend: str
    seed: int
    Ic: float | None  # held at this value (reference units), or fitted
    h: float | None  # time step of a simulated model


def _rate_model(o: _Options, conv, start, data, seed, coarse=False):
    """The rate model of ``o.model``; a simulated one over a table centred on ``start``."""
    if o.model == "thermal":
        rate_model = likelihood.thermal_model(o.fit_damping, conv.damping)
    elif o.model == "quantum":
        rate_model = likelihood.quantum_model(o.fit_damping, conv.damping, o.theta_bath)
    else:
        rate_model = simulated_model.simulated(start, data, conv.damping, criterion=o.criterion,
                                               rel_error=_scan_rel_error(o.rel_error) if coarse else o.rel_error,
                                               backend=o.backend, seed=seed, coarse=coarse, h=o.h)
    return rate_model if o.Ic is None else likelihood.with_fixed(rate_model, Ic=o.Ic)


#: Critical currents (above the largest datum, by these fractions of it) from which the simulated fit
#: scans for its start: a single histogram trades Ic against T_esc, and at moderate damping the thermal
#: fit's optimum can be far from the simulated one.
SCAN = (0.03, 0.1, 0.3, 1.0, 2.0)


def _scan_rel_error(rel_error):
    """Relative error of the rates of the scan's small tables: twice the fit's, within [0.05, 0.3]."""
    return min(max(2.0 * rel_error, 0.05), 0.3)


#: Relative difference of critical currents below which two maxima of the scan are the same.
SAME_MODE = 0.05
#: Simulated tables re-centred on the maximum when it falls outside the first one.
RECENTRE = 3
#: How far (in its standard errors) a full simulated fit's Ic may lie from its table's centre: the table
#: holds the centre's Q (:mod:`.simulated_model`), so a maximum farther off is re-centred.
CENTRED = 0.5
#: Refits over resampled simulated rate tables, for the part of the error that the simulation adds.
RESAMPLES = 24


def _redrawn(rate_model, data, values, seed) -> list:
    """`RESAMPLES` rate models redrawn within their errors, each with its maximum (parametric bootstrap).

    Returns
    -------
    list
        ``(rate model, maximize's tuple)`` pairs: the spread of their fit coordinates is the
        error the model's own errors add, and of their fitted counts the goodness of fit's.
    """
    generator = np.random.default_rng(np.random.SeedSequence([seed, 38]))
    drawn = [rate_model.resample(generator) for _ in range(RESAMPLES)]
    return [(model, likelihood.maximize(model, data, values, curvature=False)) for model in drawn]


def _analytic_start(o: _Options, conv, data):
    """The thermal fit's maximum (at the held ``Ic``, if any): the start of the analytic fits and of the scan."""
    start = _start(data, conv.damping, o.Ic)
    thermal = likelihood.thermal_model(False, conv.damping)
    if o.Ic is not None:
        thermal = likelihood.with_fixed(thermal, Ic=o.Ic)
    return likelihood.maximize(thermal, data, start, curvature=False)[0]


def _settled(o: _Options, conv, data, start, seed, coarse=False, curvature=True, centre=False):
    """``(rate model, start, maximize's tuple)``: the maximum over tables re-centred until it lies inside one.

    With ``centre`` (and the curvature), also until its ``Ic`` lies within `CENTRED` errors of the centre.
    """
    rate_model = _rate_model(o, conv, start, data, seed, coarse)
    found = likelihood.maximize(rate_model, data, start, curvature=curvature)
    for attempt in range(1, RECENTRE + 1 if o.model == "simulated" else 1):
        if simulated_model.inside(found[0], start) and not (centre and _off_centre(rate_model, found, start, data)):
            break  # the maximum lies inside the simulated table (no extrapolation), and near its Q if asked
        start = found[0]  # the table again, centred on the maximum
        rate_model = _rate_model(o, conv, start, data, seed + 100 * attempt, coarse)
        found = likelihood.maximize(rate_model, data, start, curvature=curvature)
    return rate_model, start, found


def _off_centre(rate_model, found, start, data) -> bool:
    """Whether the maximum ``found`` lies more than `CENTRED` of its Ic errors from the table's centre."""
    values, _, covariance, _ = found
    if covariance is None or "Ic" not in rate_model.names:
        return False  # Ic held, or no curvature: the temperature check alone
    i = rate_model.names.index("Ic")
    if not covariance[i, i] > 0:
        return False  # no error to measure the distance by
    Ic_stderr = (values["Ic"] - data.top) * math.sqrt(covariance[i, i])  # the coordinate is ln(Ic / top - 1)
    return abs(values["Ic"] - start["Ic"]) > CENTRED * Ic_stderr


def _simulated_starts(o: _Options, conv, data):
    """The maxima of small simulated fits from the thermal maximum and from the `SCAN` critical currents, best first.

    Of maxima with critical currents within `SAME_MODE` of a better one and temperatures within four
    times that, only the better is kept.
    """
    starts = [_analytic_start(o, conv, data)]
    if o.Ic is None:
        for fraction in SCAN:
            held = dataclasses.replace(o, Ic=data.top * (1.0 + fraction))
            starts.append(dict(_analytic_start(held, conv, data), Ic=held.Ic))
    found, failures = [], []
    for k, start in enumerate(starts):
        try:
            found.append(_settled(o, conv, data, start, o.seed + 1000 * (k + 1), coarse=True, curvature=False)[2])
        except RuntimeError as err:  # a start so far off that its simulation has no rates to give
            failures.append(f"Ic = {start['Ic'] * conv.reference:.4g}: {err}")
    if not found:
        raise RuntimeError("no start of the simulated fit gave a rate table: " + "; ".join(failures))
    found.sort(key=lambda f: f[3])
    modes = []
    for values, *_ in found:
        if all(abs(values["Ic"] / m["Ic"] - 1.0) > SAME_MODE or abs(values["theta"] / m["theta"] - 1.0) > 4 * SAME_MODE
               for m in modes):
            modes.append(values)
    return modes


def _fit_one(o: _Options, conv, data):
    if o.model != "simulated":
        rate_model, start, (values, q, covariance, nll) = _settled(o, conv, data, _start(data, conv.damping, o.Ic),
                                                                   o.seed)
    else:  # the best scanned maxima at full precision, the better one kept (the scan's rates are rougher)
        finals = [_settled(o, conv, data, start, o.seed + k) for k, start in enumerate(_simulated_starts(o, conv,
                                                                                                         data)[:2])]
        rate_model, start, found = min(finals, key=lambda f: f[2][3])
        if _off_centre(rate_model, found, start, data):  # its table holds another Q: again, centred on it
            rate_model, start, found = _settled(o, conv, data, found[0], o.seed + 2, centre=True)
        values, q, covariance, nll = found
    redrawn = [] if rate_model.resample is None else _redrawn(rate_model, data, values, o.seed)
    if redrawn:
        covariance = covariance + np.cov(np.array([fit[1] for _, fit in redrawn]), rowvar=False)
    chi2, dof, p_value = _chi_square(rate_model, data, values, len(rate_model.names),
                                     [(model, fit[0]) for model, fit in redrawn])
    mean = float(np.mean(data.samples)) if data.samples is not None else float(
        np.sum(data.counts * 0.5 * (data.edges[1:] + data.edges[:-1])) / data.counts.sum())

    def derived(name):
        def function(qq):
            v = likelihood.values_of(rate_model, qq, data.top)
            V0 = v["Ic"] * data.V0_unit
            gamma = mean / v["Ic"]
            if name == "Ic":
                return v["Ic"] * conv.reference
            if name == "Q":
                return math.sqrt(V0) / v["damping"]
            if name == "T_star":
                return conv.temperature(float(quantum_theory.crossover_temperature(gamma, V0=V0,
                                                                                   damping=v["damping"])))
            if o.model == "quantum":  # T_esc: the thermal model's temperature of the same rate at the mean current
                log_rate = float(rate_model.log_rate(np.array([gamma]), V0, v)[0])
                return conv.temperature(_equivalent_theta(log_rate, gamma, V0, v["damping"]))
            return conv.temperature(v["theta"])

        return _propagated(function, q, covariance)

    out = {name: derived(name) for name in ("Ic", "T_esc", "Q", "T_star")}
    if "damping" in rate_model.names and not out["Q"][1] < LOOSE * out["Q"][0]:
        warnings.warn(f"the data hardly constrain the damping: Q = {out['Q'][0]:.3g} +- {out['Q'][1]:.3g}; its error, "
                      "and the others', rest on a likelihood far from Gaussian in it. Fix the damping "
                      "(fit_damping=False) at a value measured otherwise, e.g. from the retrapping current",
                      RuntimeWarning, stacklevel=3)
    sd = np.sqrt(np.diag(covariance))
    correlation = covariance / np.outer(sd, sd)
    grid = np.linspace(*data.window, 200)
    empirical = (np.searchsorted(np.sort(data.samples), grid, side="right") / (data.events + data.unswitched)
                 if data.samples is not None else np.interp(grid, data.edges, np.concatenate(
                     [[0.0], np.cumsum(data.counts)]) / (data.events + data.unswitched)))
    return dict(out=out, names=rate_model.names, correlation=correlation, nll=nll, chi2=chi2, dof=dof,
                p_value=p_value, events=data.events, current=grid * conv.reference,
                model_cdf=likelihood.model_cdf(rate_model, data, values, grid), empirical_cdf=empirical)


def _dataset(fits, temps, conv, model, names) -> xr.Dataset:
    current_units, temp_units = ("1", "1") if conv.units == "1" else ("A", "K")
    names = list(fits[0]["names"])
    long = {"Ic": ("critical current", current_units), "T_esc": ("escape temperature", temp_units),
            "Q": ("quality factor sqrt(V0) / damping at zero bias", "1"),
            "T_star": ("crossover temperature T* at the mean switching current", temp_units)}
    data = {}
    for key, (text, unit) in long.items():
        data[key] = ("temperature", [f["out"][key][0] for f in fits], {"long_name": text, "units": unit})
        data[f"{key}_stderr"] = ("temperature", [f["out"][key][1] for f in fits],
                                 {"long_name": f"standard error of {key} (inverse Fisher information)", "units": unit})
    data["correlation"] = (("temperature", "parameter", "parameter_"), [f["correlation"] for f in fits],
                           {"long_name": "correlation of the fitted parameters"})
    for key, text in (("log_likelihood", "log-likelihood at the maximum"), ("chi2", "Pearson chi-square"),
                      ("dof", "degrees of freedom of chi2"), ("p_value", "chi-square p-value"),
                      ("events", "switching events")):
        value = [-f["nll"] if key == "log_likelihood" else f[key] for f in fits]
        data[key] = ("temperature", value, {"long_name": text})
    data["model_cdf"] = (("temperature", "point"), [f["model_cdf"] for f in fits],
                         {"long_name": "fitted switching probability (Fulton-Dunkleberger)", "units": "1"})
    data["empirical_cdf"] = (("temperature", "point"), [f["empirical_cdf"] for f in fits],
                             {"long_name": "the data's switching probability", "units": "1"})
    coords = {
        "parameter": ("parameter", names), "parameter_": ("parameter_", names),
        "current": (("temperature", "point"), [f["current"] for f in fits],
                    {"long_name": "bias current of the curves", "units": current_units}),
    }
    if temps is not None:
        coords["temperature"] = ("temperature", temps, {"long_name": "bath temperature", "units": temp_units})
    ds = xr.Dataset(data, coords=coords)
    if temps is None:
        ds = ds.squeeze("temperature", drop=True)
    held = "; ".join(f"{n} given" for n in ("Ic", "damping") if n not in names)
    return ds.assign_attrs(model=model, fitted=", ".join(names), held=held, units=conv.units,
                           method="maximum likelihood of the switching currents (Fulton-Dunkleberger); errors from "
                                  "the inverse Hessian of -ln L")
