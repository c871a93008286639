"""The ``"simulated"`` rate model of :func:`.fitting.fit_switching`: escape rates of the Langevin equation.

The rates come from :func:`~gpuensembles.escape_rates` (forward flux sampling where escape is
rare) on a table of biases across the histogram and temperatures around the analytic fit,
at the damping given and at ``V0 = c0 V0_unit`` of that fit's critical current ``c0``. A fit
then moves ``Ic`` and ``theta`` through the table by the washboard's scaling: with time in
``1 / sqrt(V0)``, the rate is ``Gamma(gamma; V0, damping, theta) = sqrt(V0) g(gamma; Q, theta / V0)``,
so a critical current ``c`` reads the table at ``theta c0 / c`` and multiplies by
``sqrt(c / c0)``. ``Q = sqrt(V0) / damping`` moves by ``sqrt(c / c0)`` too, which the table holds
fixed: a relative error of ``(c - c0) / (2 c0)`` in ``Q``. Under ``criterion="voltage"`` at
moderate damping that is not small: whether an escape runs or is retrapped depends on ``Q``. With
maxima up to about 1% from their tables' centres, fits of the Li et al. (2007) junction spread 2.3
times their errors in ``Ic``; :func:`.fitting.fit_switching` therefore re-centres the table until
its maximum lies within ``fitting.CENTRED`` of its ``Ic`` errors from the centre.

``ln Gamma`` is interpolated by cubic splines in the bias and in ``1 / theta`` (Arrhenius), and
extrapolated linearly beyond the table. The table's own statistical errors enter the fit's
error by resampling: :attr:`RateModel.resample` draws a table within its standard errors.
"""

import math

import numpy as np

from . import likelihood

#: Biases of the table, across the histogram (and a tenth of its range beyond each end).
TABLE_BIASES = 16
#: Temperatures of the table, relative to the analytic fit's.
TABLE_THETAS = (0.8, 0.9, 1.0, 1.12, 1.25)
#: Where a simulated rate of 0 is put, relative to the smallest one resolved at its temperature.
UNRESOLVED = 1e-3
#: How far beyond its temperatures (and its critical current) a table is extrapolated, as factors.
REACH = (0.7, 1.4)
#: The small tables of a scan for the starting point.
COARSE_BIASES, COARSE_THETAS = 6, (0.8, 1.0, 1.25)
#: Time step of the simulations, in units of the zero-bias plasma period 1 / sqrt(V0).
STEP = 0.05


def inside(values, start) -> bool:
    """Whether the fit reads the table centred on ``start`` well inside its temperatures (not extrapolated)."""
    effective = values["theta"] * start["Ic"] / values["Ic"]  # the temperature at which the table is read
    return TABLE_THETAS[1] <= effective / start["theta"] <= TABLE_THETAS[-2]


def _spline(grid, values):
    """``f(x)``: the cubic spline of ``values`` (along their last axis) over ``grid``, linear beyond its ends.

    Linear interpolation of ``ln Gamma`` between 10 biases put the critical current of the Li
    junction 0.06% low (2.5 standard errors of a 5,000-event fit); a cubic spline of 16, 0.002%.
    """
    from scipy.interpolate import CubicSpline

    spline = CubicSpline(grid, values, axis=-1)
    ends = np.array([grid[0], grid[-1]])
    at_ends, slopes = spline(ends), spline(ends, 1)

    def f(x):
        x = np.asarray(x, dtype=float)
        first, last = ((..., 0), (..., 1)) if x.ndim == 0 else ((..., slice(0, 1)), (..., slice(1, 2)))
        inner = spline(np.clip(x, grid[0], grid[-1]))
        below = at_ends[first] + slopes[first] * (x - grid[0])
        above = at_ends[last] + slopes[last] * (x - grid[-1])
        return np.where(x < grid[0], below, np.where(x > grid[-1], above, inner))

    return f


def _interpolator(gamma_table, inverse_theta, log_table):
    """``log_rate(gamma, inverse_theta)``: cubic splines in the bias, then in ``1 / theta``; linear beyond the table."""
    order = np.argsort(inverse_theta)
    inverse, rows = inverse_theta[order], _spline(gamma_table, log_table[order])

    def log_rate(gamma, inv):
        per_theta = rows(gamma)  # (thetas, len(gamma))
        return _spline(inverse, per_theta.T)(inv)

    return log_rate


def simulated(start, data: likelihood.Histogram, damping, *, criterion, rel_error, backend, seed, coarse=False,
              h=None):
    """The rate model over a simulated table centred on ``start`` (``Ic`` and ``theta``).

    Parameters
    ----------
    start : dict
        ``Ic`` (reference units) and ``theta`` of the analytic fit.
    data : likelihood.Histogram
        The histogram (its current window sets the biases).
    damping : float
        ``1 / (R C)``, normalized.
    criterion : {"escape", "voltage"}
        What counts as a switch.
    rel_error : float
        Relative error of each simulated rate.
    backend : str
        Where the simulations run.
    seed : int
        Their seed.
    coarse : bool
        A small table (`COARSE_BIASES` by `COARSE_THETAS`), for a scan of starting points.
    h : float, optional
        Time step of the simulations (normalized); default `STEP` over ``sqrt(V0)``.

    Returns
    -------
    likelihood.RateModel
        Fitting ``Ic`` and ``theta``, with ``resample`` set.
    """
    from .rates import escape_rates

    c0, theta0 = float(start["Ic"]), float(start["theta"])
    V0 = c0 * data.V0_unit
    lo = data.samples.min() if data.samples is not None else data.edges[0]
    hi = data.top
    pad = 0.1 * (hi - lo)
    gamma = np.linspace(max(lo - pad, 0.0) / c0, min((hi + pad) / c0, 1.0 - 1e-3),
                        COARSE_BIASES if coarse else TABLE_BIASES)
    thetas = theta0 * np.asarray(COARSE_THETAS if coarse else TABLE_THETAS)
    name = "rate" if criterion == "escape" else "switching_rate"
    step = STEP / math.sqrt(V0) if h is None else h
    ds = escape_rates(gamma=gamma, V0=V0, damping=damping, D=damping * thetas, h=step,
                      integrator="baoab", criterion=criterion, rel_error=rel_error, seed=seed, backend=backend,
                      dtype="float64", progress=False).compute()  # a cluster's rates: computed once, not per variable
    rate = ds[name].transpose("D", "gamma").values.astype(float)
    error = ds[f"{name}_stderr"].transpose("D", "gamma").values.astype(float)
    if not np.all(np.isfinite(rate) & (rate >= 0)) or not np.any(rate > 0):
        raise RuntimeError(f"the simulated rates are not finite and >= 0: {rate}")
    log_rate, log_error = _floored(rate, error)
    return _model(gamma, thetas, log_rate, log_error, c0, damping)


def _floored(rate, error):
    """``(ln rate, its error)``, a rate of 0 (nothing switched: below I_r under the voltage criterion) floored.

    A zero becomes `UNRESOLVED` times the smallest positive rate of its temperature (or of the table), with
    a log error of ``ln(1 / UNRESOLVED)``: the simulation says only that it is below what it resolved.
    """
    positive = np.where(rate > 0, rate, np.inf)
    floor = UNRESOLVED * np.min(positive, axis=1, keepdims=True)
    floor = np.where(np.isfinite(floor), floor, UNRESOLVED * positive.min())
    zero = rate <= 0
    log_rate = np.log(np.where(zero, floor, rate))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_error = np.where(zero, -math.log(UNRESOLVED), error / rate)
    return log_rate, log_error


def _model(gamma, thetas, log_table, log_error, c0, damping, rng=None):
    """The RateModel of one table (perturbed within ``log_error`` when ``rng`` is given)."""
    table = log_table if rng is None else log_table + log_error * rng.standard_normal(log_table.shape)
    read = _interpolator(gamma, 1.0 / thetas, table)

    inverse = 1.0 / thetas

    def log_rate(g, V0, p):
        s = p["Ic"] / c0  # V0 / V0 of the table
        if not (REACH[0] <= s <= REACH[1] and REACH[0] * inverse.min() <= s / p["theta"] <= REACH[1] * inverse.max()):
            return np.full(np.shape(g), np.nan)  # too far from the table to extrapolate: no likelihood there
        return 0.5 * math.log(s) + read(g, s / p["theta"])

    return likelihood.RateModel(("Ic", "theta"), log_rate, {"damping": damping},
                                lambda generator: _model(gamma, thetas, log_table, log_error, c0, damping, generator))
