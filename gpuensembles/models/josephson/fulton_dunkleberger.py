"""Switching-current distributions at real sweep rates, from escape rates (Fulton-Dunkleberger).

For a slow ramp the switching is adiabatic: at every bias the particle escapes with the
quasi-stationary rate ``Gamma(gamma)`` and the switching bias has the distribution

    P(gamma) = 1 - exp(-E(gamma)),   E(gamma) = (1 / gamma_dot) int_{gamma_start}^{gamma} Gamma(g) dg

(Fulton & Dunkleberger, PRB 9, 4760 (1974)), ``gamma_dot = d gamma / dt`` in inverse time
units of the equation (``dgamma / h`` of a simulation, ``sweep_rate * time_unit`` in SI form).
One rate curve serves every sweep rate. Everything here is a pure function of a rate
*callable* ``rates(gamma) -> (rate, rate_stderr, steps)`` (numpy arrays over a 1-D ``gamma``):
a closure over :func:`escape_rates` in production, an analytic rate in the tests.

Interpolation. ``ln Gamma`` is interpolated linearly in ``gamma`` between the rate points
(``Gamma`` piecewise exponential). Its integral is then exact in closed form
(``Gamma_j t exprel(k t)`` on a segment), positive and monotone, and its derivatives with
respect to each ``ln Gamma_j`` are closed forms too, which the error propagation needs; the
interpolation error is controlled by the grid instead: points ``0.5 theta`` apart in barrier
height, and more where a cubic spline of ``ln Gamma`` departs from the linear interpolant
at an interval's midpoint by more than a quarter of the rates' relative standard error. Below
the first rate point (down to ``gamma_start``) and above the last one (up to ``gamma_end``)
``ln Gamma`` is extrapolated with the slope of the first and last interval; the grid is made
wide enough that these tails hold less than `TAIL` of probability.
"""

import math
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from ...core import rng
from . import theory

#: Probability left outside the rate grid at each end (for every sweep rate).
TAIL = 1e-7
#: Spacing of the first (coarse) rate grid and of the refined one, in barrier height / theta.
COARSE_SPACING, FINE_SPACING = 2.0, 0.5
#: Barrier height (in theta) added on both sides of the window that theory predicts.
MARGIN = 3.0
#: Most rate points, and most calls of the rate callable (each call one batch of new points).
MAX_POINTS, MAX_PASSES = 64, 4
#: Lowest barrier (in theta) of a rate point: below it no quasi-stationary rate exists.
LOWEST_BARRIER = 0.5
#: Adiabaticity ``epsilon`` (escape over relaxation rate) above which a warning / an error is given.
WARN_EPSILON, MAX_EPSILON = 0.01, 0.1
#: Probability window over which adiabaticity is judged.
ADIABATIC_WINDOW = 1e-3
#: Philox draw index of the sampling uniforms: no kernel draws that many numbers, so the
#: samples never share a random number with a simulation of the same seed.
SAMPLE_DRAW = 2**62


@dataclass(frozen=True)
class RateCurve:
    """Escape rates at increasing biases: the input of the Fulton-Dunkleberger integral.

    Attributes
    ----------
    gamma : numpy.ndarray
        Biases (increasing).
    rate : numpy.ndarray
        Escape rates there, inverse time units of the equation, > 0.
    rate_stderr : numpy.ndarray
        Their standard errors (independent between points).
    steps : numpy.ndarray
        Integration steps spent on each rate (int64).
    passes : int
        Calls of the rate callable that produced the curve.
    """

    gamma: np.ndarray
    rate: np.ndarray
    rate_stderr: np.ndarray
    steps: np.ndarray
    passes: int = 0


def make_curve(gamma, rate, rate_stderr=None, steps=None, passes=0) -> RateCurve:
    """Check and sort rate points into a :class:`RateCurve`.

    Parameters
    ----------
    gamma : array_like
        Biases (distinct).
    rate : array_like
        Escape rates, finite and > 0.
    rate_stderr : array_like, optional
        Standard errors (default 0).
    steps : array_like, optional
        Integration steps per point (default 0).
    passes : int
        Calls of the rate callable behind the curve.

    Returns
    -------
    RateCurve
        Sorted by bias.
    """
    gamma = np.asarray(gamma, dtype=float).ravel()
    rate = np.broadcast_to(np.asarray(rate, dtype=float), gamma.shape)
    stderr = np.broadcast_to(np.asarray(0.0 if rate_stderr is None else rate_stderr, dtype=float), gamma.shape)
    steps = np.broadcast_to(np.asarray(0 if steps is None else steps, dtype=np.int64), gamma.shape)
    bad = ~(np.isfinite(rate) & (rate > 0))
    if np.any(bad) or not np.all(np.isfinite(stderr) & (stderr >= 0)):
        where = gamma[bad] if np.any(bad) else gamma[~(np.isfinite(stderr) & (stderr >= 0))]
        raise ValueError(f"the escape rates must be finite and > 0 with finite standard errors >= 0; "
                         f"not so at gamma = {where}")
    order = np.argsort(gamma)
    if np.any(np.diff(gamma[order]) <= 0):
        raise ValueError(f"the rate points' biases must be distinct, got {gamma}")
    return RateCurve(gamma[order], rate[order].copy(), stderr[order].copy(), steps[order].copy(), passes)


def merge(curve: RateCurve, new: RateCurve) -> RateCurve:
    """The points of both curves, sorted (the passes are added).

    Parameters
    ----------
    curve, new : RateCurve
        Curves with no bias in common.

    Returns
    -------
    RateCurve
        Their union.
    """
    return make_curve(np.concatenate([curve.gamma, new.gamma]), np.concatenate([curve.rate, new.rate]),
                      np.concatenate([curve.rate_stderr, new.rate_stderr]), np.concatenate([curve.steps, new.steps]),
                      curve.passes + new.passes)


# --------------------------------------------------------------------------- barrier units


def reduced_barrier(gamma, *, V0, theta) -> np.ndarray:
    """Barrier height over temperature, ``Delta U(gamma) / theta`` (decreasing in ``gamma``).

    Parameters
    ----------
    gamma : array_like
        Biases in [0, 1].
    V0, theta : float
        Barrier scale and temperature.

    Returns
    -------
    numpy.ndarray
        ``Delta U / theta``.
    """
    return theory.barrier(np.clip(gamma, 0.0, 1.0), V0) / theta


def gamma_at_barrier(value, *, V0, theta) -> np.ndarray:
    """The bias where ``Delta U / theta`` equals ``value`` (bisection to 1e-15).

    Parameters
    ----------
    value : array_like
        Barrier heights in units of ``theta``, in ``[0, 4 V0 / theta]``.
    V0, theta : float
        Barrier scale and temperature.

    Returns
    -------
    numpy.ndarray
        Biases in [0, 1].
    """
    value = np.asarray(value, dtype=float)
    return theory.bisect(lambda g: reduced_barrier(g, V0=V0, theta=theta) > value, np.zeros_like(value),
                         np.ones_like(value), steps=52)


def relaxation_rate(gamma, *, V0, damping, model="underdamped") -> np.ndarray:
    """Rate at which the well relaxes to its thermal state.

    The energy relaxation rate ``damping`` (underdamped model) or the position relaxation
    rate ``V0 cos(phi0) / damping = V0 sqrt(1 - gamma^2) / damping`` (overdamped).

    Parameters
    ----------
    gamma : array_like
        Biases.
    V0, damping : float
        Barrier scale and damping.
    model : {"underdamped", "overdamped"}
        The equation.

    Returns
    -------
    numpy.ndarray
        Rates in inverse time units of the equation.
    """
    gamma = np.asarray(gamma, dtype=float)
    if model == "overdamped":
        return V0 * np.sqrt(np.clip(1.0 - gamma**2, 0.0, None)) / damping
    return np.full_like(gamma, float(damping))


# --------------------------------------------------------------------------- Fulton-Dunkleberger integral


def _log_exprel(y):
    """``ln((e^y - 1) / y)`` without overflow (``y / 2`` near 0)."""
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = np.where(y > 0, y + np.log(-np.expm1(-np.abs(y))) - np.log(np.abs(y)),
                       np.log(-np.expm1(-np.abs(y))) - np.log(np.abs(y)))
    return np.where(np.abs(y) < 1e-8, y / 2, big)


def _log_exprel_prime(y):
    """``ln`` of ``d/dy (e^y - 1) / y = (e^y (y - 1) + 1) / y^2`` (> 0) without overflow."""
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        large = y + np.log(y - 1.0 + np.exp(-np.abs(y))) - 2.0 * np.log(np.abs(y))
        moderate = np.log(np.exp(np.minimum(y, 1.0)) * (y - 1.0) + 1.0) - 2.0 * np.log(np.abs(y))
        series = np.log(0.5 + y / 3.0 + y * y / 8.0 + y**3 / 30.0)
    return np.where(np.abs(y) < 1e-2, series, np.where(y > 1.0, large, moderate))


def _segments(curve: RateCurve, gamma_start: float, gamma_end: float):
    """Piecewise log-linear ``Gamma``: per segment its start, length, ``ln Gamma`` at the start, slope,
    and the derivatives of the last two with respect to every ``ln Gamma_j``."""
    g, L = curve.gamma, np.log(curve.rate)
    n = g.size
    slope = np.diff(L) / np.diff(g) if n > 1 else np.zeros(1)
    eye = np.eye(n)
    starts, lengths, logs, slopes = [g[:-1]], [np.diff(g)], [L[:-1]], [slope[: n - 1]]
    d_log, d_slope = [eye[:-1]], [(eye[1:] - eye[:-1]) / np.diff(g)[:, None]]
    if gamma_start < g[0]:  # extrapolated with the first interval's slope (held fixed in the derivatives)
        starts.insert(0, [gamma_start])
        lengths.insert(0, [g[0] - gamma_start])
        logs.insert(0, [L[0] - slope[0] * (g[0] - gamma_start)])
        slopes.insert(0, slope[:1])
        d_log.insert(0, eye[:1])
        d_slope.insert(0, np.zeros((1, n)))
    if gamma_end > g[-1]:
        starts.append(g[-1:])
        lengths.append([gamma_end - g[-1]])
        logs.append(L[-1:])
        slopes.append(slope[-1:])
        d_log.append(eye[-1:])
        d_slope.append(np.zeros((1, n)))
    a, length, log_a, k, d_log, d_slope = (np.concatenate(parts).astype(float)
                                           for parts in (starts, lengths, logs, slopes, d_log, d_slope))
    # only the part between gamma_start and gamma_end counts
    lo, hi = np.maximum(a, gamma_start), np.minimum(a + length, gamma_end)
    keep = hi > lo
    if not np.any(keep):
        raise ValueError(f"gamma_end = {gamma_end} must exceed gamma_start = {gamma_start}")
    shift = (lo - a)[keep]
    return (lo[keep], (hi - lo)[keep], log_a[keep] + k[keep] * shift, k[keep],
            d_log[keep] + d_slope[keep] * shift[:, None], d_slope[keep])


def _partial(log_a, k, t):
    """``int_0^t exp(log_a + k s) ds`` and its derivatives in ``log_a`` (itself) and ``k``."""
    with np.errstate(divide="ignore", over="ignore"):
        log_t = np.log(t)
        value = np.exp(log_a + log_t + _log_exprel(k * t))
        d_k = np.exp(log_a + 2.0 * log_t + _log_exprel_prime(k * t))
    return value, d_k


def integrated_rate(gamma, curve: RateCurve, *, gamma_start=0.0, gamma_end=1.0, jacobian=True):
    """``int_{gamma_start}^{gamma} Gamma(g) dg`` of the interpolated rate, and its derivatives.

    Exact for the piecewise log-linear interpolant (module docstring); 0 below
    ``gamma_start``, constant above ``gamma_end``.

    Parameters
    ----------
    gamma : array_like
        Biases, 1-D.
    curve : RateCurve
        The rate points.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.
    jacobian : bool
        Also compute the derivatives (a ``len(gamma)`` by ``len(curve.gamma)`` array: a
        likelihood over many samples does not need it).

    Returns
    -------
    integral : numpy.ndarray
        The integral at each ``gamma`` (rate times bias units).
    jacobian : numpy.ndarray or None
        ``d integral / d ln Gamma_j``, shape ``(len(gamma), len(curve.gamma))``.
    """
    x = np.clip(np.asarray(gamma, dtype=float).ravel(), gamma_start, gamma_end)
    a, length, log_a, k, d_log, d_slope = _segments(curve, gamma_start, gamma_end)
    full, full_dk = _partial(log_a, k, length)
    if not jacobian:
        seg = np.clip(np.searchsorted(a, x, side="right") - 1, 0, a.size - 1)
        cumulative = np.concatenate([[0.0], np.cumsum(full)])
        return cumulative[seg] + _partial(log_a[seg], k[seg], np.clip(x - a[seg], 0.0, length[seg]))[0], None
    full_jac = full[:, None] * d_log + full_dk[:, None] * d_slope
    cumulative = np.concatenate([[0.0], np.cumsum(full)])
    cumulative_jac = np.concatenate([np.zeros((1, curve.gamma.size)), np.cumsum(full_jac, axis=0)])
    seg = np.clip(np.searchsorted(a, x, side="right") - 1, 0, a.size - 1)
    t = np.clip(x - a[seg], 0.0, length[seg])
    part, part_dk = _partial(log_a[seg], k[seg], t)
    integral = cumulative[seg] + part
    jac = cumulative_jac[seg] + part[:, None] * d_log[seg] + part_dk[:, None] * d_slope[seg]
    return integral, jac


def fd_cdf(gamma, curve: RateCurve, gamma_dot, *, gamma_start=0.0, gamma_end=1.0):
    """Fulton-Dunkleberger switching CDF and its standard error from the rates' errors.

    ``P = 1 - exp(-I / gamma_dot)`` with ``I`` from :func:`integrated_rate`. Delta method:
    ``dP = (1 - P) dI / gamma_dot``, ``dI = sum_j (dI / d ln Gamma_j) (dGamma_j / Gamma_j)``
    with independent errors at the rate points, so
    ``cdf_stderr = (1 - P) / gamma_dot * sqrt(sum_j (dI / d ln Gamma_j)^2 (sigma_j / Gamma_j)^2)``
    (first order in the relative errors).

    Parameters
    ----------
    gamma : array_like
        Biases, 1-D.
    curve : RateCurve
        The rate points.
    gamma_dot : float or array_like
        Ramp rates ``d gamma / dt``, inverse time units; an array gives the first axis.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.

    Returns
    -------
    cdf, cdf_stderr : numpy.ndarray
        Shape ``(len(gamma_dot), len(gamma))`` (``(len(gamma),)`` for a scalar ``gamma_dot``).
    """
    scalar = np.ndim(gamma_dot) == 0
    gamma_dot = np.atleast_1d(np.asarray(gamma_dot, dtype=float))[:, None]
    integral, jac = integrated_rate(gamma, curve, gamma_start=gamma_start, gamma_end=gamma_end)
    spread = np.sqrt((jac**2) @ ((curve.rate_stderr / curve.rate) ** 2))
    exponent = integral[None, :] / gamma_dot
    cdf, stderr = -np.expm1(-exponent), np.exp(-exponent) * spread[None, :] / gamma_dot
    return (cdf[0], stderr[0]) if scalar else (cdf, stderr)


def quantile(u, curve: RateCurve, gamma_dot, *, gamma_start=0.0, gamma_end=1.0) -> np.ndarray:
    """Inverse of the Fulton-Dunkleberger CDF: the bias where ``P = u`` (exact for the interpolant).

    Parameters
    ----------
    u : array_like
        Probabilities in (0, 1).
    curve : RateCurve
        The rate points.
    gamma_dot : float
        Ramp rate ``d gamma / dt``, inverse time units.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.

    Returns
    -------
    numpy.ndarray
        Biases, shaped as ``u``; NaN where ``P(gamma_end) < u`` (no switching on the ramp).
    """
    u = np.asarray(u, dtype=float)
    target = -np.log1p(-u.ravel()) * float(gamma_dot)
    a, length, log_a, k, _, _ = _segments(curve, gamma_start, gamma_end)
    full, _ = _partial(log_a, k, length)
    cumulative = np.concatenate([[0.0], np.cumsum(full)])
    seg = np.clip(np.searchsorted(cumulative, target, side="right") - 1, 0, a.size - 1)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_r = np.log(np.maximum(target - cumulative[seg], 0.0)) - log_a[seg]
        ks = k[seg]
        flat = np.exp(log_r)
        rising = np.logaddexp(0.0, np.log(np.abs(ks)) + log_r) / ks
        falling = np.log1p(-np.exp(np.log(np.abs(ks)) + log_r)) / ks
        t = np.where(np.abs(ks) < 1e-12, flat, np.where(ks > 0, rising, falling))
    out = a[seg] + np.clip(np.nan_to_num(t, nan=np.inf), 0.0, length[seg])
    out = np.where(target > cumulative[-1], np.nan, out)
    return out.reshape(u.shape)


def moments(curve: RateCurve, gamma_dot, *, gamma_start=0.0, gamma_end=1.0, draws=200, seed=0,
            quantiles=()) -> dict:
    """Mean, standard deviation and quantiles of the Fulton-Dunkleberger distribution, with the rate curve's errors.

    The statistics of the switching bias, given that it switches before ``gamma_end``: the
    mean and width from 4000 equally spaced quantiles (:func:`quantile`; exact for the
    interpolant up to the midpoint rule), the quantiles exactly. Their standard errors come
    from the rate curve: ``draws`` curves whose ``ln Gamma_j`` are shifted by independent
    normal errors ``rate_stderr_j / rate_j`` give as many statistics, whose spread is the
    error (a parametric bootstrap). This is the error of the distribution itself; samples
    drawn from it add their own sampling error.

    Parameters
    ----------
    curve : RateCurve
        The rate points.
    gamma_dot : float
        Ramp rate, inverse time units.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.
    draws : int
        Perturbed curves of the bootstrap (0 or 1: no errors).
    seed : int
        Seed of the bootstrap's normal numbers.
    quantiles : array_like
        Probabilities in (0, 1) of the quantiles wanted (of the distribution given switching).

    Returns
    -------
    dict
        ``mean``, ``std``, ``mean_stderr``, ``std_stderr`` (bias units), ``switched`` (the
        probability of switching before ``gamma_end``), and ``quantile`` and
        ``quantile_stderr`` (arrays over ``quantiles``).
    """
    u = (np.arange(4000) + 0.5) / 4000
    wanted = np.atleast_1d(np.asarray(quantiles, dtype=float))
    ends = dict(gamma_start=gamma_start, gamma_end=gamma_end)

    def of(c):
        """Mean, width and the wanted quantiles of the distribution of curve ``c``, given switching."""
        switched = -np.expm1(-integrated_rate([gamma_end], c, **ends)[0][0] / gamma_dot)
        x = quantile(u * switched, c, gamma_dot, **ends)
        return np.concatenate([[x.mean(), x.std()], quantile(wanted * switched, c, gamma_dot, **ends)])

    central = of(curve)
    rng_ = np.random.default_rng(seed)
    relative = curve.rate_stderr / curve.rate
    perturbed = np.array([of(RateCurve(curve.gamma, curve.rate * np.exp(relative * rng_.standard_normal(relative.size)),
                                       curve.rate_stderr, curve.steps, curve.passes)) for _ in range(draws)])
    errors = perturbed.std(axis=0, ddof=1) if draws > 1 else np.zeros_like(central)
    switched = float(-np.expm1(-integrated_rate([gamma_end], curve, **ends)[0][0] / gamma_dot))
    return {"mean": float(central[0]), "std": float(central[1]), "mean_stderr": float(errors[0]),
            "std_stderr": float(errors[1]), "switched": switched, "quantile": central[2:],
            "quantile_stderr": errors[2:]}


# --------------------------------------------------------------------------- adiabaticity


def adiabaticity(curve: RateCurve, gamma_dot, relaxation, *, gamma_start=0.0, gamma_end=1.0,
                 escape: RateCurve = None) -> np.ndarray:
    """``epsilon``: the largest escape rate over relaxation rate where switching happens.

    The maximum of ``Gamma(gamma) / relaxation(gamma)`` over the biases where
    ``1e-3 < P < 1 - 1e-3`` (201 quantiles of the distribution of ``curve``), for each sweep
    rate. Fulton-Dunkleberger assumes a quasi-stationary (thermal) well: ``epsilon << 1``.
    Where ``curve`` holds the rates of switching into the running state, the escapes that are
    retrapped must leave a thermal well behind too: ``Gamma`` is then the escape rate
    (``escape``), not the switching rate.

    Parameters
    ----------
    curve : RateCurve
        The rate points.
    gamma_dot : array_like
        Ramp rates, 1-D.
    relaxation : callable
        ``relaxation(gamma) -> rate`` of the well (see :func:`relaxation_rate`).
    gamma_start, gamma_end : float
        Where the ramp starts and stops.
    escape : RateCurve, optional
        The escape rates compared with the relaxation rate (default: ``curve``'s).

    Returns
    -------
    numpy.ndarray
        ``epsilon`` per ramp rate.
    """
    u = np.linspace(ADIABATIC_WINDOW, 1.0 - ADIABATIC_WINDOW, 201)
    escape = curve if escape is None else escape
    g, log_rate = escape.gamma, np.log(escape.rate)
    out = []
    for rate in np.atleast_1d(gamma_dot):
        x = quantile(u, curve, rate, gamma_start=gamma_start, gamma_end=gamma_end)
        x = x[np.isfinite(x)]
        if x.size == 0:  # the ramp ends before switching: the window is the bias at gamma_end
            x = np.array([gamma_end])
        slope_lo = (log_rate[1] - log_rate[0]) / (g[1] - g[0]) if g.size > 1 else 0.0
        slope_hi = (log_rate[-1] - log_rate[-2]) / (g[-1] - g[-2]) if g.size > 1 else 0.0
        inside = np.interp(x, g, log_rate)
        below = log_rate[0] + slope_lo * (x - g[0])
        above = log_rate[-1] + slope_hi * (x - g[-1])
        value = np.where(x < g[0], below, np.where(x > g[-1], above, inside))
        out.append(float(np.max(np.exp(value) / relaxation(x))))
    return np.array(out)


def check_adiabatic(epsilon, values, name: str, source: str, stacklevel: int = 1):
    """Warn when ``epsilon > 0.01``, raise when ``> 0.1``, naming the sweep parameter.

    Parameters
    ----------
    epsilon : array_like
        :func:`adiabaticity` per sweep rate.
    values : array_like
        The sweep parameter's values (same length).
    name : str
        The sweep parameter (``"sweep_rate"`` or ``"dgamma"``), named in the message.
    source : str
        Where the rates came from (``"theory"``, ``"measured rates"``).
    stacklevel : int
        The frame the warning points at (1: the caller of this function, 2: its caller, ...).

    Raises
    ------
    ValueError
        If the largest ``epsilon`` exceeds `MAX_EPSILON`.
    """
    epsilon, values = np.atleast_1d(epsilon), np.atleast_1d(values)
    worst = int(np.argmax(epsilon))
    text = (f"{name} = {values[worst]:.4g} is too fast for the adiabatic (Fulton-Dunkleberger) method: "
            f"the escape rate reaches {epsilon[worst]:.3g} of the well's relaxation rate ({source})")
    if epsilon[worst] > MAX_EPSILON:
        raise ValueError(f"{text}, above the limit {MAX_EPSILON}; decrease {name} or use method='direct'")
    if epsilon[worst] > WARN_EPSILON:
        warnings.warn(f"{text}, above {WARN_EPSILON}: the distribution may be shifted", RuntimeWarning,
                      stacklevel=stacklevel + 1)


# --------------------------------------------------------------------------- adaptive grid


def window(curve: RateCurve, gamma_dot, gamma_start, top, tail) -> tuple:
    """Lowest bias with ``P >= tail`` and highest with ``P <= 1 - tail`` over all ramp rates.

    Parameters
    ----------
    curve : RateCurve
        The rate points.
    gamma_dot : array_like
        Ramp rates, 1-D.
    gamma_start, top : float
        Where the ramp starts, and the highest bias considered.
    tail : float
        Probability left out at each end.

    Returns
    -------
    tuple of float
        ``(low, high)``; ``top`` where a ramp rate's quantile lies beyond it.
    """
    lo = [quantile(tail, curve, r, gamma_start=gamma_start, gamma_end=top) for r in gamma_dot]
    hi = [quantile(1.0 - tail, curve, r, gamma_start=gamma_start, gamma_end=top) for r in gamma_dot]
    lo = min(float(v) if np.isfinite(v) else top for v in lo)
    hi = max(float(v) if np.isfinite(v) else top for v in hi)
    return lo, hi


def _ladder(b_high, b_low, spacing, limit):
    """Barrier heights from ``b_high`` down to ``b_low`` about ``spacing`` apart, at most ``limit`` of them."""
    count = min(max(int(math.ceil((b_high - b_low) / spacing)) + 1, 2), max(limit, 2))
    return np.linspace(b_high, b_low, count)


def _measure(rates, gamma, passes):
    """The rate points at ``gamma``; a rate of 0 (below what its measurement resolves) is left out."""
    gamma = np.asarray(gamma, dtype=float)
    rate, stderr, steps = (np.asarray(v) for v in rates(gamma))
    kept = rate != 0
    return make_curve(gamma[kept], rate[kept], stderr[kept], steps[kept], passes)


def theory_curve(theory_rate, *, gamma_start, gamma_end, V0, theta) -> RateCurve:
    """A rate formula on a grid ``0.5 theta`` apart in barrier height (at most 200 points).

    From ``gamma_start`` up to ``gamma_end`` or the bias where the barrier is
    ``0.5 theta`` (`LOWEST_BARRIER`), whichever is lower: below it there is no
    quasi-stationary rate. Rates that underflow are floored at 1e-300.

    Parameters
    ----------
    theory_rate : callable
        ``theory_rate(gamma) -> rate`` on a 1-D array (e.g. the vectorized Mel'nikov-Meshkov
        rate of :func:`gpuensembles.models.josephson.theory.escape_rate`).
    gamma_start, gamma_end : float
        Where the ramp starts and stops.
    V0, theta : float
        Barrier scale and temperature.

    Returns
    -------
    RateCurve
        The formula's rates, with zero standard errors.
    """
    top = float(min(gamma_end, gamma_at_barrier(LOWEST_BARRIER, V0=V0, theta=theta)))
    if top <= gamma_start:
        raise ValueError(f"gamma_start = {gamma_start} leaves no bias below gamma_end = {gamma_end} with a barrier "
                         f"of at least {LOWEST_BARRIER} theta, where escape rates exist")
    ladder = _ladder(float(reduced_barrier(gamma_start, V0=V0, theta=theta)),
                     float(reduced_barrier(top, V0=V0, theta=theta)), FINE_SPACING, 200)
    grid = gamma_at_barrier(ladder, V0=V0, theta=theta)
    grid[0], grid[-1] = gamma_start, top
    grid = np.unique(grid)
    return make_curve(grid, np.maximum(np.asarray(theory_rate(grid), dtype=float), 1e-300))


def adaptive_curve(rates, *, gamma_dot, gamma_start, gamma_end, V0, theta, theory: RateCurve, span=None,
                   max_points=MAX_POINTS, max_passes=MAX_PASSES, tail=TAIL, first=None) -> RateCurve:
    """Measure ``Gamma(gamma)`` on a grid that covers the switching window of every ramp rate.

    1. Theory (the ``theory`` curve of :func:`theory_curve`, no simulation) locates, for
       all ramp rates together, the biases where ``P = tail`` and ``P = 1 - tail`` (or
       ``span`` gives them); `MARGIN` (3 theta of barrier, a factor ~20 in the rate) is
       added on both sides.
    2. Pass 1 measures the rates on a coarse grid ``2 theta`` apart in barrier height, and
       the biases ``first`` (:func:`switching_currents <gpuensembles.switching_currents>`
       gives those the passes below would ask for if the rates were theory's): where
       theory holds, the grid is then measured in one pass, not in a pass that must end
       before the next is chosen.
    3. Passes 2, 3: where the measured CDF of some ramp rate exceeds ``tail`` at the
       grid's low end (unless it is ``gamma_start``) or stays below ``1 - tail`` at its
       high end (unless it is ``gamma_end`` or the lowest barrier, ``0.5 theta``), the
       grid is extended by the barrier the log-linear extrapolation says is missing, plus
       one coarse spacing.
    4. Last pass: every interval holding more than ``tail`` of probability for some ramp
       rate is split so that its points are ``0.5 theta`` apart in barrier height and the
       interpolation error of ``ln Gamma`` (cubic spline minus linear interpolant at the
       midpoint, which falls as the square of the spacing) is below a quarter of the
       rates' relative standard error (at least 1e-3). The estimate is as noisy as the
       rates: one within twice their relative error is taken for noise, not for a bend
       (splitting there would add points at which the estimate is no better).

    Each pass is ONE call of ``rates`` with all its new points. The number of calls is
    at most ``max_passes`` (4) and of rate points at most ``max_points`` (64): when the
    window needs more, the spacings grow to fit (a RuntimeWarning says when the window
    could not be covered). A point whose measured rate is 0 (below what its measurement
    resolves, such as a run probability below 1e-21) is left out of the curve.

    Parameters
    ----------
    rates : callable
        ``rates(gamma) -> (rate, rate_stderr, steps)``, 1-D numpy arrays over a 1-D
        ``gamma``; rates in inverse time units of the equation.
    gamma_dot : array_like
        Ramp rates ``d gamma / dt`` (inverse time units), 1-D.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.
    V0, theta : float
        Barrier scale and temperature (the grid is uniform in ``Delta U / theta``).
    theory : RateCurve
        A rate formula on a fine grid (:func:`theory_curve`): where to look first.
    span : tuple of float, optional
        ``(low, high)`` biases of the window to look in first, in place of the one
        ``theory`` gives (for rates no formula describes).
    max_points : int
        Most rate points.
    max_passes : int
        Most calls of ``rates`` (>= 1).
    tail : float
        Probability allowed outside the grid at each end.
    first : array_like, optional
        Biases measured in pass 1 besides the coarse grid (those in ``[gamma_start, top]``,
        at most ``max_points``). They count toward ``max_points`` unless the grid had to be
        extended: theory then placed them away from the window, and the refinement gets the
        room it would have had without them (up to ``2 max_points`` points in all).

    Returns
    -------
    RateCurve
        The measured points.
    """
    gamma_dot = np.atleast_1d(np.asarray(gamma_dot, dtype=float))
    top = float(theory.gamma[-1])

    def barrier(g):
        """``Delta U / theta`` at one bias."""
        return float(reduced_barrier(g, V0=V0, theta=theta))

    b_start, b_top = barrier(gamma_start), barrier(top)
    lo, hi = window(theory, gamma_dot, gamma_start, top, tail) if span is None else span
    b_high, b_low = min(b_start, barrier(lo) + MARGIN), max(b_top, barrier(hi) - MARGIN)
    grid = gamma_at_barrier(_ladder(b_high, b_low, COARSE_SPACING, max_points // 2), V0=V0, theta=theta)
    grid = np.unique(np.clip(grid, gamma_start, top))
    extra = np.empty(0) if first is None else np.asarray(first, dtype=float).ravel()
    extra = np.setdiff1d(extra[(extra >= gamma_start) & (extra <= top)], grid)[:max_points]
    curve = _measure(rates, np.union1d(grid, extra), 1)
    budget = max_points - grid.size  # first's points count only where theory placed the window right

    for _ in range(max(0, max_passes - 2)):
        new = _extension(curve, gamma_dot, gamma_start, top, tail, budget, V0, theta)
        if new.size == 0:
            break
        curve, budget = merge(curve, _measure(rates, new, 1)), budget - new.size
    if curve.passes == 1:
        budget -= extra.size
    if curve.passes < max_passes and budget > 0:
        new = _refinement(curve, gamma_dot, gamma_start, top, tail, budget, V0, theta)
        if new.size:
            curve = merge(curve, _measure(rates, new, 1))
    for r in gamma_dot:
        cdf, _ = fd_cdf(curve.gamma[[0, -1]], curve, r, gamma_start=gamma_start, gamma_end=top)
        if (cdf[0] > 10 * tail and curve.gamma[0] > gamma_start) or (cdf[1] < 1 - 10 * tail and curve.gamma[-1] < top):
            warnings.warn(f"the rate grid [{curve.gamma[0]:.6g}, {curve.gamma[-1]:.6g}] misses part of the "
                          f"switching window of gamma_dot = {r:.4g}: P = {cdf[0]:.2g} at its low end, "
                          f"{cdf[1]:.8g} at its high end (max_points or max_passes reached)",
                          RuntimeWarning, stacklevel=2)
    return curve


def _extension(curve, gamma_dot, gamma_start, top, tail, budget, V0, theta):
    """New biases beyond the ends of ``curve`` where some ramp rate's CDF is not yet resolved."""
    if budget <= 0:
        return np.empty(0)
    b = reduced_barrier(curve.gamma, V0=V0, theta=theta)
    L = np.log(curve.rate)
    new = []
    for end in (0, -1):
        edge = curve.gamma[end]
        if (end == 0 and edge <= gamma_start) or (end == -1 and edge >= top):
            continue
        cdf = np.array([fd_cdf([edge], curve, r, gamma_start=gamma_start, gamma_end=top)[0][0] for r in gamma_dot])
        inner = 1 if end == 0 else -2
        # d ln Gamma per theta of barrier lowered (about 1); a floor keeps a flat curve from asking for nothing
        slope = max((L[inner] - L[end]) / (b[end] - b[inner]), 0.3) if curve.gamma.size > 1 else 1.0
        if end == 0 and cdf.max() > tail:
            extra = math.log(cdf.max() / tail) / slope + COARSE_SPACING
            stop = min(float(reduced_barrier(gamma_start, V0=V0, theta=theta)), b[0] + extra)
            heights = _ladder(stop, b[0], COARSE_SPACING, budget)[:-1]
        elif end == -1 and cdf.min() < 1.0 - tail:
            exponent = -math.log1p(-min(cdf.min(), 1.0 - 1e-300))
            extra = math.log(max(-math.log(tail) / max(exponent, 1e-300), 1.0)) / slope + COARSE_SPACING
            stop = max(float(reduced_barrier(top, V0=V0, theta=theta)), b[-1] - extra)
            heights = _ladder(b[-1], stop, COARSE_SPACING, budget)[1:]
        else:
            continue
        new.append(gamma_at_barrier(heights, V0=V0, theta=theta))
    new = np.concatenate(new) if new else np.empty(0)
    new = np.unique(np.clip(new, gamma_start, top))
    return np.setdiff1d(new, curve.gamma)[:budget]


def _refinement(curve, gamma_dot, gamma_start, top, tail, budget, V0, theta):
    """New biases inside the intervals of ``curve`` that hold probability, ``0.5 theta`` apart or closer."""
    g, L = curve.gamma, np.log(curve.rate)
    if g.size < 2 or budget <= 0:
        return np.empty(0)
    b = reduced_barrier(g, V0=V0, theta=theta)
    cdf, _ = fd_cdf(g, curve, gamma_dot, gamma_start=gamma_start, gamma_end=top)
    active = np.any(np.diff(cdf, axis=1) > tail, axis=0)
    splits = np.where(active, np.ceil((b[:-1] - b[1:]) / FINE_SPACING - 1e-9), 1).astype(int)
    if g.size >= 4:
        from scipy.interpolate import CubicSpline

        mid = 0.5 * (g[:-1] + g[1:])
        error = np.abs(CubicSpline(g, L)(mid) - 0.5 * (L[:-1] + L[1:]))
        relative = np.maximum(curve.rate_stderr[:-1] / curve.rate[:-1], curve.rate_stderr[1:] / curve.rate[1:])
        tolerance = np.maximum(0.25 * relative, 1e-3)
        # the estimate is itself as noisy as the rates: an error within twice their error is no evidence
        error = np.where(error > 2.0 * relative, error, 0.0)
        splits = np.where(active, np.maximum(splits, np.ceil(np.sqrt(error / tolerance))), splits).astype(int)
    splits = np.minimum(splits, 16)
    while (splits - 1).sum() > budget:
        splits[np.argmax(splits)] -= 1
    heights = [np.linspace(b[j], b[j + 1], m + 1)[1:-1] for j, m in enumerate(splits) if m > 1]
    if not heights:
        return np.empty(0)
    new = gamma_at_barrier(np.concatenate(heights), V0=V0, theta=theta)
    return np.setdiff1d(np.unique(new), g)


# --------------------------------------------------------------------------- samples


@numba.njit(cache=True)
def _uniforms(seed, stream, first, count, draw):  # pragma: no cover  (compiled)
    out = np.empty(count)
    for i in range(count):
        x0, _, _, _ = rng.philox_block(seed, stream, first + i, draw)
        out[i] = rng.uint32_to_uniform_f64(x0)
    return out


def uniforms(seed: int, stream: int, first: int, count: int) -> np.ndarray:
    """Counter-based uniforms in (0, 1): one per realization, independent of chunking.

    Word 0 of Philox4x32-10 with key ``(seed, stream)`` and counter ``(SAMPLE_DRAW,
    realization)`` for realizations ``first, ..., first + count - 1``, mapped by
    :func:`gpuensembles.core.rng.uint32_to_uniform_f64`.

    Parameters
    ----------
    seed : int
        Seed, in [0, 2**32).
    stream : int
        Stream (the flat index of the parameter point).
    first : int
        First realization id.
    count : int
        Number of realizations.

    Returns
    -------
    numpy.ndarray
        ``count`` float64 uniforms.
    """
    return _uniforms(np.uint32(seed), np.uint32(stream), np.int64(first), int(count), np.int64(SAMPLE_DRAW))


def draw(curve: RateCurve, gamma_dot: float, *, seed: int, stream: int, first: int, count: int, gamma_start=0.0,
         gamma_end=1.0) -> np.ndarray:
    """Switching biases drawn from the Fulton-Dunkleberger distribution by inverse transform.

    Parameters
    ----------
    curve : RateCurve
        The rate points.
    gamma_dot : float
        Ramp rate, inverse time units.
    seed, stream : int
        Philox key (see :func:`uniforms`).
    first, count : int
        Realization ids ``first, ..., first + count - 1``.
    gamma_start, gamma_end : float
        Where the ramp starts and stops.

    Returns
    -------
    numpy.ndarray
        ``count`` biases; NaN where the sample lies beyond ``gamma_end`` (no switching).
    """
    return quantile(uniforms(seed, stream, first, count), curve, gamma_dot, gamma_start=gamma_start,
                    gamma_end=gamma_end)
