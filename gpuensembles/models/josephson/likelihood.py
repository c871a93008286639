"""The likelihood of switching histograms under a rate model, its maximum and its curvature.

A ramp at ``d gamma / dt = gamma_dot`` switches at bias ``gamma`` with the density
``p(gamma) = Gamma(gamma) / gamma_dot exp(-(1 / gamma_dot) int Gamma)`` (Fulton & Dunkleberger,
PRB 9, 4760 (1974)). The data are currents ``x = gamma I_c`` in the units of the caller (a
reference current), so with ``c = I_c`` in those units ``gamma = x / c``, ``gamma_dot = x_dot / c``
and ``V0 = c V0_unit``: the density of ``x`` is ``p(x / c) / c``. Samples give the sum of
``ln p``; counts per bin give the multinomial likelihood of the bins' probabilities (and the
ramps that never switched, the survival past the last edge). Rate curves are interpolated
log-linearly between grid points, so the integral is exact for the interpolant
(:mod:`.fulton_dunkleberger`).

The fitted parameters are ``ln(c / x_max - 1)`` (so that every datum lies below ``I_c``),
``ln theta`` and ``ln damping``; the covariance is the inverse of the Hessian of the negative
log-likelihood in those coordinates (Fisher information at the maximum), by central differences
with steps set from a first pass at each parameter's own curvature.
"""

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from . import fulton_dunkleberger as fd
from . import quantum_theory, theory

#: Rate points across the bias window of a likelihood evaluation (log-linear between them).
GRID_POINTS = 160


# --------------------------------------------------------------------------- fast vectorized thermal rate


@functools.cache
def _action_ratio_table():
    """``S(gamma) / (36 Delta U / (5 omega_p))`` at ``V0 = 1`` on a grid of ``u = (1 - gamma)^(1/4)``."""
    u = np.linspace(1e-3, 1.0, 400)
    gamma = 1.0 - u**4
    return u, theory.separatrix_action(gamma) / (7.2 * theory.barrier(gamma) / theory.plasma_frequency(gamma))


@functools.cache
def _depopulation_table():
    """``ln A(delta)`` of Mel'nikov-Meshkov on a grid of ``ln delta``."""
    log_delta = np.linspace(math.log(1e-8), math.log(1e4), 500)
    return log_delta, np.log(theory.melnikov_depopulation(np.exp(log_delta)))


def thermal_log_rate(gamma, *, V0, damping, theta):
    """``ln Gamma`` of Mel'nikov-Meshkov (:func:`.theory.escape_rate`, ``form="melnikov"``), vectorized.

    The separatrix action and the depopulation factor come from cached tables, interpolated
    to a relative error below 1e-5 of the rate's prefactor; the barrier is exact.

    Parameters
    ----------
    gamma : array_like, in [0, 1)
        Biases.
    V0, damping, theta : float
        Barrier scale, damping and temperature.

    Returns
    -------
    numpy.ndarray
        ``ln Gamma``, inverse time units.
    """
    gamma = np.asarray(gamma, dtype=float)
    omega = theory.plasma_frequency(gamma, V0)
    du = theory.barrier(gamma, V0)
    u_grid, ratio = _action_ratio_table()
    action = 7.2 * du / omega * np.interp((1.0 - gamma) ** 0.25, u_grid, ratio)
    log_delta = np.log(np.maximum(damping * action / theta, 1e-300))
    x_grid, log_a = _depopulation_table()
    log_depop = np.where(log_delta < x_grid[0], log_delta,  # A -> delta
                         np.where(log_delta > x_grid[-1], 0.0, np.interp(log_delta, x_grid, log_a)))
    alpha = damping / (2.0 * omega)
    return np.log(omega / (2.0 * math.pi) * (np.sqrt(1.0 + alpha * alpha) - alpha)) - du / theta + log_depop


# --------------------------------------------------------------------------- the data of one fit


@dataclass
class Histogram:
    """Switching data of one histogram in reference units.

    Attributes
    ----------
    samples : numpy.ndarray or None
        Switching currents (finite), or None with counts.
    counts, edges : numpy.ndarray or None
        Switching events per bin and the bin edges, or None with samples.
    unswitched : int
        Ramps that never switched (survived past the largest sample or the last edge).
    x_dot : float
        Ramp rate of the current, reference units per time unit.
    V0_unit : float
        ``E_J / E_C`` of a critical current of one reference unit.
    start : float or None
        Where the ramps start; None: far enough below the data that the switching
        probability there is negligible (the data's range below its smallest current).
    """

    samples: np.ndarray | None
    counts: np.ndarray | None
    edges: np.ndarray | None
    unswitched: int
    x_dot: float
    V0_unit: float
    start: float | None = None
    window: tuple = field(init=False)

    def __post_init__(self):
        """The current window of the likelihood: from ``start`` (or below the data) to the largest datum."""
        lo, hi = (self.samples.min(), self.samples.max()) if self.samples is not None else self.edges[[0, -1]]
        low = max(float(lo) - (float(hi) - float(lo)), 0.0) if self.start is None else self.start
        self.window = (low, float(hi))

    @property
    def events(self) -> int:
        """Switching events."""
        return int(self.samples.size if self.samples is not None else self.counts.sum())

    @property
    def top(self) -> float:
        """The largest current any datum needs below ``I_c``."""
        return self.window[1]


@dataclass
class RateModel:
    """What a fit varies, and the log rate it gives.

    Attributes
    ----------
    names : tuple of str
        Fitted parameters among ``"Ic", "theta", "damping"``.
    log_rate : callable
        ``log_rate(gamma, V0, values) -> ln Gamma`` with ``values`` a dict of every parameter.
    fixed : dict
        Values of the parameters not fitted.
    resample : callable or None
        ``resample(numpy.random.Generator) -> RateModel``: the model redrawn within its own
        statistical errors (a simulated one), or None for an exact formula.
    """

    names: tuple
    log_rate: object
    fixed: dict
    resample: object = None


def thermal_model(fit_damping, damping):
    """Mel'nikov-Meshkov escape; fits ``Ic`` and ``theta`` (and ``damping``)."""
    names = ("Ic", "theta", "damping") if fit_damping else ("Ic", "theta")

    def log_rate(gamma, V0, p):
        """``ln Gamma`` at the biases ``gamma`` for barrier scale ``V0`` and the parameters ``p``."""
        return thermal_log_rate(gamma, V0=V0, damping=p["damping"], theta=p["theta"])

    return RateModel(names, log_rate, {} if fit_damping else {"damping": damping})


def quantum_model(fit_damping, damping, theta_bath):
    """Tunnelling (:func:`.quantum_theory.mqt_rate`) plus activation at the bath temperature; fits ``Ic``."""
    names = ("Ic", "damping") if fit_damping else ("Ic",)

    def log_rate(gamma, V0, p):
        """``ln(Gamma_q + Gamma_thermal)`` at the biases ``gamma``."""
        log_q = np.log(quantum_theory.mqt_rate(gamma, V0=V0, damping=p["damping"]))
        if theta_bath <= 0:
            return log_q
        return np.logaddexp(log_q, thermal_log_rate(gamma, V0=V0, damping=p["damping"], theta=theta_bath))

    fixed = {"theta": theta_bath} if fit_damping else {"theta": theta_bath, "damping": damping}
    return RateModel(names, log_rate, fixed)


def with_fixed(model: RateModel, **values) -> RateModel:
    """``model`` with the parameters ``values`` held at the values given (no longer fitted)."""
    names = tuple(n for n in model.names if n not in values)
    resample = None if model.resample is None else (lambda generator: with_fixed(model.resample(generator), **values))
    return RateModel(names, model.log_rate, {**model.fixed, **values}, resample)


# --------------------------------------------------------------------------- likelihood


def values_of(model: RateModel, q, top) -> dict:
    """The parameters from the fit coordinates ``q`` (see the module)."""
    values = dict(model.fixed)
    for name, coordinate in zip(model.names, q):
        values[name] = top * (1.0 + math.exp(coordinate)) if name == "Ic" else math.exp(coordinate)
    return values


def coordinates_of(model: RateModel, values, top) -> np.ndarray:
    """Inverse of :func:`values_of`."""
    return np.array([math.log(values[n] / top - 1.0) if n == "Ic" else math.log(values[n]) for n in model.names])


def curve_of(model: RateModel, data: Histogram, values) -> tuple:
    """``(curve, gamma_dot, gamma_start)``: the model's rate curve over the data window, in ``gamma``."""
    c = values["Ic"]
    lo, hi = data.window
    gamma = np.linspace(lo / c, min(hi / c, 1.0 - 1e-12), GRID_POINTS)
    log_rate = model.log_rate(gamma, c * data.V0_unit, values)
    log_rate = np.clip(log_rate, -700.0, 700.0)
    return fd.make_curve(gamma, np.exp(log_rate)), data.x_dot / c, float(gamma[0])


def negative_log_likelihood(model: RateModel, data: Histogram, values) -> float:
    """``-ln L`` of the data under the model at ``values`` (module docstring)."""
    curve, gamma_dot, start = curve_of(model, data, values)
    c, end = values["Ic"], float(curve.gamma[-1])

    def exponent_at(gamma):
        """``(1 / gamma_dot) int_start^gamma Gamma``."""
        return fd.integrated_rate(gamma, curve, gamma_start=start, gamma_end=end, jacobian=False)[0] / gamma_dot

    if data.samples is not None:
        gamma = data.samples / c
        log_rate = np.interp(gamma, curve.gamma, np.log(curve.rate))
        total = np.sum(log_rate - exponent_at(gamma)) - gamma.size * math.log(gamma_dot * c)
        return float(-(total - data.unswitched * float(exponent_at([end])[0])))
    exponent = exponent_at(data.edges / c)
    # P(bin) = S(lower) - S(upper) = exp(-E_lo) (1 - exp(-(E_hi - E_lo))), in logs
    with np.errstate(divide="ignore"):
        log_p = -exponent[:-1] + np.log(-np.expm1(-np.diff(exponent)))
    used = data.counts > 0
    total = np.sum(data.counts[used] * log_p[used]) - data.unswitched * exponent[-1]
    return float(-total) if np.isfinite(total) else math.inf


def maximize(model: RateModel, data: Histogram, start, curvature=True) -> tuple:
    """``(values, coordinates, covariance, -ln L)`` at the maximum of the likelihood from ``start``.

    The covariance (of the fit coordinates) is NaN where the Hessian is not positive
    definite, and skipped (None) without ``curvature``.
    """
    from scipy import optimize

    def objective(q):
        """``-ln L`` at the fit coordinates ``q`` (infinite where the model has no rate)."""
        try:
            return negative_log_likelihood(model, data, values_of(model, q, data.top))
        except (ValueError, FloatingPointError, OverflowError):
            return math.inf

    q0 = coordinates_of(model, start, data.top)
    result = optimize.minimize(objective, q0, method="Nelder-Mead",
                               options=dict(xatol=1e-7, fatol=1e-7, maxiter=4000, adaptive=True))
    result = optimize.minimize(objective, result.x, method="Nelder-Mead",
                               options=dict(xatol=1e-9, fatol=1e-9, maxiter=4000, adaptive=True))
    if not curvature:
        return values_of(model, result.x, data.top), result.x, None, float(result.fun)
    hessian = _hessian(objective, result.x)
    try:
        covariance = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        covariance = np.full_like(hessian, np.nan)
    if np.any(np.diag(covariance) <= 0):
        covariance = np.full_like(hessian, np.nan)
    return values_of(model, result.x, data.top), result.x, covariance, float(result.fun)


def _hessian(f, q):
    """Hessian of ``f`` at ``q``: central differences, then again along the principal axes of the first.

    Fits of ``Ic`` and ``T_esc`` are correlated at 0.99 and more, where the inverse depends on the
    off-diagonal element to ``1 - rho^2`` of its value; differences along the principal axes,
    each stepped a tenth of its own error, keep that precision.
    """
    first = _differences(f, q, np.eye(q.size), None)
    try:
        eigenvalues, axes = np.linalg.eigh(first)
    except np.linalg.LinAlgError:
        return first
    if not np.all(eigenvalues > 0):
        return first
    along = _differences(f, q, axes, 0.1 / np.sqrt(eigenvalues))
    return axes @ along @ axes.T


def _differences(f, q, axes, step):
    """Central-difference Hessian of ``f(q + axes @ y)`` in ``y`` at 0, steps ``step`` (or from a first pass)."""
    n = q.size
    f0 = f(q)
    g = lambda y: f(q + axes @ y)  # noqa: E731
    if step is None:
        step = np.empty(n)
        for i in range(n):  # a first pass at the curvature, from a small step
            e = np.zeros(n)
            e[i] = 1e-4
            curvature = (g(e) - 2 * f0 + g(-e)) / 1e-8
            step[i] = 0.1 / math.sqrt(curvature) if curvature > 0 and np.isfinite(curvature) else 1e-3
    hessian = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.zeros(n), np.zeros(n)
            ei[i], ej[j] = step[i], step[j]
            if i == j:
                value = (g(ei) - 2 * f0 + g(-ei)) / step[i] ** 2
            else:
                value = (g(ei + ej) - g(ei - ej) - g(ej - ei) + g(-ei - ej)) / (4 * step[i] * step[j])
            hessian[i, j] = hessian[j, i] = value
    return hessian


def model_cdf(model: RateModel, data: Histogram, values, x) -> np.ndarray:
    """The fitted switching CDF at currents ``x`` (reference units)."""
    curve, gamma_dot, start = curve_of(model, data, values)
    return fd.fd_cdf(np.asarray(x, dtype=float) / values["Ic"], curve, gamma_dot, gamma_start=start,
                     gamma_end=float(curve.gamma[-1]))[0]
