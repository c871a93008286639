"""Exact and analytic references of the Josephson-junction (washboard) model.

All functions are plain numpy/scipy, in the normalized units of
:mod:`gpuensembles.models.josephson`: ``U(phi) = -V0 (cos(phi) + gamma phi)``,
temperature ``theta = D / damping``.
"""

import functools
import math

import numpy as np


def _integrate():
    """``scipy.integrate``, imported on first use (it pulls in much of SciPy)."""
    from scipy import integrate

    return integrate


#: ``-zeta(1/2) / sqrt(2 pi)``: shift of an absorbing barrier that makes discrete
#: monitoring every ``h`` match continuous monitoring to first order (Broadie,
#: Glasserman & Kou, Math. Finance 7, 325 (1997); Gobet, Stoch. Proc. Appl. 87, 167 (2000)).
#: The value of ``float(-scipy.special.zeta(0.5) / math.sqrt(2 * math.pi))``, written out so
#: that importing the package does not import ``scipy.special``.
BGK_BETA = 0.5825971579390107


def barrier(gamma, V0=1.0):
    """Barrier height of the tilted washboard, ``2 V0 [sqrt(1-gamma^2) - gamma arccos(gamma)]``.

    Parameters
    ----------
    gamma : float or array, in [0, 1]
        Normalized bias.
    V0 : float or array
        Barrier scale.
    """
    gamma = np.asarray(gamma, dtype=float)
    return 2.0 * V0 * (np.sqrt(1.0 - gamma**2) - gamma * np.arccos(gamma))


def well_bottom(gamma):
    """Position of the well minimum, ``arcsin(gamma)``."""
    return np.arcsin(gamma)


def barrier_top(gamma):
    """Position of the barrier maximum to the right of the well, ``pi - arcsin(gamma)``."""
    return np.pi - np.arcsin(gamma)


def overdamped_mfpt(*, V0, damping, gamma, D, x0=None, b=None, thermal=False, points_per_unit=4000):
    """Exact mean first-passage time of the overdamped washboard particle.

    For ``damping phi' = -U'(phi) + xi``, ``<xi xi> = 2 D delta``, ``theta = D/damping``::

        T = (damping / theta) int_{x0}^{b} dy exp(U(y)/theta) int_{-inf}^{y} dz exp(-U(z)/theta)

    (Gardiner, *Handbook of Stochastic Methods*, Sect. 5.2.7; reflecting at -inf,
    absorbing at ``b``). Evaluated with cumulative Simpson quadrature; the lower limit is
    cut where ``exp(-U/theta)`` has fallen by ``e^-40`` relative to the well bottom.

    Parameters
    ----------
    V0, damping, gamma, D : float
        Model parameters (``0 < gamma < 1``).
    x0 : float, optional
        Start; default the well bottom ``arcsin(gamma)``.
    b : float, optional
        Absorbing point; default the barrier top ``pi - arcsin(gamma)``.
    thermal : bool
        Average ``T(x0)`` over the Boltzmann distribution ``exp(-U/theta)`` of the well
        between its two barrier tops, ``(-pi - arcsin(gamma), pi - arcsin(gamma))``,
        instead of starting at ``x0`` (the start of `escape_rates`' direct method).
    points_per_unit : int
        Quadrature points per unit of phase.

    Returns
    -------
    float
        Mean first-passage time, in the time unit of the equation.
    """
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must lie in (0, 1) for a finite MFPT, got {gamma}")
    theta = D / damping
    x0 = well_bottom(gamma) if x0 is None else x0
    b = barrier_top(gamma) if b is None else b
    a = well_bottom(gamma)

    def u(phi):
        """``(U(phi) - U(a)) / theta``, >= 0 left of the barrier."""
        return -V0 * (np.cos(phi) + gamma * phi - math.cos(a) - gamma * a) / theta

    # each period to the left raises U by 2 pi V0 gamma
    periods = math.ceil(40.0 * theta / (2.0 * math.pi * V0 * gamma)) + 1
    low = min(x0, a) - 2.0 * math.pi * periods
    n = int((b - low) * points_per_unit) | 1
    z = np.linspace(low, b, n)
    inner = _integrate().cumulative_simpson(np.exp(-u(z)), x=z, initial=0.0)
    if thermal:
        outer = _integrate().cumulative_simpson(np.exp(u(z)) * inner, x=z, initial=0.0)
        well = (z > -np.pi - a) & (z < np.pi - a)
        weight = np.exp(-u(z[well]))
        remaining = outer[-1] - outer[well]
        return float(damping / theta * _integrate().simpson(weight * remaining, x=z[well])
                     / _integrate().simpson(weight, x=z[well]))
    mask = z >= x0
    y = np.concatenate(([x0], z[mask])) if z[mask][0] > x0 else z[mask]
    inner_y = np.interp(y, z, inner)
    return float(damping / theta * _integrate().simpson(np.exp(u(y)) * inner_y, x=y))


def discrete_monitoring_shift(*, D, damping, h, model="overdamped"):
    """Barrier shift ``BGK_BETA * sigma * sqrt(h)`` that accounts for checking only every step.

    An Euler scheme that tests ``phi > b`` once per step misses excursions between
    steps, so its mean first-passage time equals, to leading order, the continuous
    one with the barrier moved out by this amount; the bias is O(sqrt(h)).
    ``sigma`` is the noise amplitude of ``phi`` per sqrt(time): ``sqrt(2 D)/damping``
    for the overdamped model. For the underdamped model the phase is differentiable and
    the correction is O(h) instead; this returns 0 there.
    """
    if model == "overdamped":
        return BGK_BETA * math.sqrt(2.0 * D) / damping * math.sqrt(h)
    return 0.0


# --------------------------------------------------------------------------- escape rates

RATE_FORMS = ("tst", "kramers", "bhl", "melnikov", "exact")


def plasma_frequency(gamma, V0=1.0):
    """Small-oscillation frequency at the well bottom, ``sqrt(V0) (1 - gamma^2)^(1/4)``.

    The barrier-top curvature has the same magnitude, so this is also ``omega_b``.
    """
    return np.sqrt(V0) * (1.0 - np.asarray(gamma, dtype=float) ** 2) ** 0.25


#: Gauss-Legendre nodes per panel of the quadratures below (numpy only: the CLI's estimate
#: of a run calls them, and importing scipy.optimize and scipy.integrate took ~1 s of a
#: first call).
_NODES = 48


@functools.cache
def _legendre(n=_NODES):
    return np.polynomial.legendre.leggauss(n)


def _gauss(f, lo, hi):
    """``int_lo^hi f``, Gauss-Legendre with :data:`_NODES` nodes (``f`` smooth on ``[lo, hi]``).

    ``lo`` and ``hi`` may be arrays: ``f`` then gets the nodes of every interval at once, along a
    last axis, and the integrals come back in their shape.
    """
    x, w = _legendre()
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    half = 0.5 * (hi - lo)
    return half * np.dot(f(lo[..., None] + half[..., None] * (x + 1.0)), w)


def _scalar_or_array(values):
    """A float where ``values`` is 0-dimensional (a scalar was given), else the float array."""
    values = np.asarray(values, dtype=float)
    return float(values) if values.ndim == 0 else values


def bisect(above, low, high, steps=64):
    """Where ``above`` turns false between ``low`` and ``high``, by ``steps`` halvings (elementwise).

    Parameters
    ----------
    above : callable
        ``above(x)``: true where the root lies to the right of ``x``.
    low, high : array_like
        Brackets: ``above(low)`` true, ``above(high)`` false.
    steps : int
        Halvings of the bracket (52 of a unit interval reach double precision).

    Returns
    -------
    numpy.ndarray
        The midpoints of the final brackets.
    """
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    for _ in range(steps):
        mid = 0.5 * (low + high)
        right = above(mid)
        low, high = np.where(right, mid, low), np.where(right, high, mid)
    return 0.5 * (low + high)


def separatrix_action(gamma, V0=1.0):
    """Action ``S = oint v dphi`` of the orbit at the barrier energy (unit mass).

    The energy a particle loses on that orbit is ``damping * S``; Mel'nikov's
    ``delta = damping * S / theta``. Near ``gamma = 1`` the cubic approximation gives
    ``S = 36 Delta U / (5 omega_p)`` (Buttiker, Harris & Landauer 1983).

    The orbit's left turning point by :func:`bisect` (the potential falls monotonically
    from the previous barrier top to the well bottom), the integral by Gauss-Legendre in
    ``s`` with ``phi = left + (b - left) s^2``, which leaves a smooth integrand: the speed
    grows as ``sqrt(phi - left)`` from the turning point and falls linearly to the barrier top.

    Parameters
    ----------
    gamma : float or array, in (0, 1)
        Normalized bias.
    V0 : float
        Barrier scale.

    Returns
    -------
    float or numpy.ndarray
        ``S`` (normalized units), shaped like ``gamma``.
    """
    gamma = np.asarray(gamma, dtype=float)
    a, b = well_bottom(gamma), barrier_top(gamma)

    def U(x, g=gamma):
        """The washboard potential ``-V0 (cos x + g x)``."""
        return -V0 * (np.cos(x) + g * x)

    top = U(b)
    left = bisect(lambda x: U(x) > top, -np.pi - a, a)  # U falls from above U(b) to below it
    span = b - left
    g, top_, left_, span_ = (v[..., None] for v in (gamma, top, left, span))

    def integrand(s):
        """Speed at ``phi(s)`` times ``dphi / ds`` (``s`` along the last axis)."""
        return np.sqrt(np.maximum(2.0 * (top_ - U(left_ + span_ * s * s, g)), 0.0)) * 2.0 * span_ * s

    action = 2.0 * _gauss(integrand, np.zeros_like(gamma), np.ones_like(gamma))
    return _scalar_or_array(action)


@functools.cache
def _melnikov_nodes():
    """Nodes and weights of :func:`melnikov_depopulation`'s quadrature over ``t`` in ``[0, pi/2)``:
    Gauss-Legendre on 60 panels that halve towards ``pi / 2`` (the last ``2^-60`` wide)."""
    x, w = _legendre()
    widths = 0.5 * np.pi * 0.5 ** np.arange(1, 61)
    starts = 0.5 * np.pi - 2.0 * widths
    half = 0.5 * widths[:, None]
    return (starts[:, None] + half * (x + 1.0)).ravel(), (half * w).ravel()


def melnikov_depopulation(delta):
    """Mel'nikov-Meshkov factor ``A(delta) = exp[(1/pi) int_0^inf ln(1 - exp(-delta (x^2 + 1/4))) dx / (x^2 + 1/4)]``.

    ``A -> delta`` for ``delta -> 0`` (energy-diffusion limit) and ``A -> 1`` for large
    ``delta`` (V. I. Mel'nikov & S. V. Meshkov, J. Chem. Phys. 85, 1018 (1986)).

    With ``x = tan(t) / 2`` the integral is ``2 int_0^{pi/2} ln(1 - exp(-delta / (4 cos^2 t))) dt``,
    whose integrand goes from ``ln(delta / (4 cos^2 t))`` to 0 within ``cos t ~ sqrt(delta)``
    of ``pi / 2``: Gauss-Legendre on panels that halve towards ``pi / 2``, down to ``2^-60``.

    Parameters
    ----------
    delta : float or array, > 0
        Energy lost on the separatrix orbit over the temperature.

    Returns
    -------
    float or numpy.ndarray
        ``A(delta)``, shaped like ``delta``.
    """
    delta = np.asarray(delta, dtype=float)
    t, w = _melnikov_nodes()
    integrand = np.log(-np.expm1(-delta[..., None] / (4.0 * np.cos(t) ** 2)))
    factor = np.exp(2.0 * np.dot(integrand, w) / np.pi)
    return _scalar_or_array(factor)


def escape_rate(gamma, *, V0, damping, theta, form="melnikov", model="underdamped"):
    """Thermal escape rate from a well of the washboard potential (normalized units).

    Parameters
    ----------
    gamma : float or array
        Bias, in (0, 1).
    V0, damping, theta : float
        Barrier scale, damping and temperature ``theta = D / damping``.
    form : {"tst", "kramers", "bhl", "melnikov", "exact"}
        * ``tst``: transition state, ``omega_a / 2 pi exp(-Delta U / theta)``.
        * ``kramers``: Kramers' moderate-to-strong damping rate, TST times
          ``sqrt(1 + alpha^2) - alpha`` with ``alpha = damping / (2 omega_b)``
          (Kramers, Physica 7, 284 (1940)). Overdamped model: Smoluchowski limit
          ``omega_a omega_b / (2 pi damping) exp(-Delta U / theta)``.
        * ``bhl``: Buttiker-Harris-Landauer interpolation (PRB 28, 1268 (1983)),
          TST times ``4 / (sqrt(1 + 4 / delta) + 1)^2``.
        * ``melnikov``: Mel'nikov-Meshkov turnover formula, ``kramers`` times
          `melnikov_depopulation` (``delta``): valid at any damping.
        * ``exact``: overdamped model only, ``1 / T`` with ``T`` the exact mean first
          passage time from the well bottom to the barrier top (`overdamped_mfpt`).

        ``delta = damping * S / theta`` with ``S`` the `separatrix_action`.

    Returns
    -------
    float or numpy.ndarray
        Rate in inverse time units of the equation, shaped like ``gamma``.
    """
    if form not in RATE_FORMS:
        raise ValueError(f"form must be one of {RATE_FORMS}, got {form!r}")
    if model == "overdamped" and form == "exact":  # one quadrature per bias
        exact = np.vectorize(lambda g: 1.0 / overdamped_mfpt(V0=V0, damping=damping, gamma=g, D=damping * theta)
                             if g > 0 else 0.0, otypes=[float])(np.asarray(gamma, dtype=float))  # no tilt: no passage
        return _scalar_or_array(exact)
    if model == "overdamped" and form != "kramers":
        raise ValueError(f"the overdamped model has forms 'kramers' and 'exact', got {form!r}")
    if form == "exact":
        raise ValueError("form='exact' exists for the overdamped model only")
    gamma = np.asarray(gamma, dtype=float)
    omega = plasma_frequency(gamma, V0)
    boltzmann = np.exp(-barrier(gamma, V0) / theta)
    if model == "overdamped":
        rate = omega * omega / (2.0 * math.pi * damping) * boltzmann
    else:
        tst = omega / (2.0 * math.pi) * boltzmann
        alpha = damping / (2.0 * omega)
        kramers = tst * (np.sqrt(1.0 + alpha * alpha) - alpha)
        rate = tst if form == "tst" else kramers
        if form in ("bhl", "melnikov"):
            delta = damping * np.asarray(separatrix_action(gamma, V0)) / theta
            rate = (tst * 4.0 / (np.sqrt(1.0 + 4.0 / delta) + 1.0) ** 2 if form == "bhl"
                    else kramers * melnikov_depopulation(delta))
    return _scalar_or_array(rate)


def rate_formula(model, V0, damping, theta):
    """The adiabatic rate of ``model`` as a vectorized callable: Mel'nikov-Meshkov (underdamped), Kramers (overdamped).

    Parameters
    ----------
    model : {"underdamped", "overdamped"}
        The equation.
    V0, damping, theta : float
        Barrier scale, damping and temperature.

    Returns
    -------
    callable
        ``rate(gamma)`` on an array of biases (inverse time units).
    """
    form = "melnikov" if model == "underdamped" else "kramers"
    return lambda gamma: np.asarray(escape_rate(np.asarray(gamma, dtype=float), V0=V0, damping=damping, theta=theta,
                                                form=form, model=model))


def fulton_dunkleberger_cdf(gamma, *, gamma_dot, rate, gamma_start=0.0, points=400):
    """Switching-current CDF under a slow linear ramp (Fulton & Dunkleberger, PRB 9, 4760 (1974)).

    ``P(gamma) = 1 - exp(-(1/gamma_dot) int_{gamma_start}^{gamma} Gamma(g) dg)``: the
    adiabatic approximation, in which the escape rate at each bias is the stationary one.

    Parameters
    ----------
    gamma : array
        Biases at which to evaluate the CDF. Up to ``gamma_start`` the ramp has not begun: ``P = 0``.
        At and above 1 no barrier is left: the junction has switched, ``P = 1`` (a simulated sample
        can pass 1 before its particle is counted).
    gamma_dot : float
        Ramp rate ``d gamma / dt`` in inverse time units (``dgamma / h`` of a simulation).
    rate : callable
        ``rate(g) -> Gamma`` in inverse time units, e.g.
        ``functools.partial(escape_rate, V0=1, damping=1, theta=0.05, form="kramers")``.
    gamma_start : float
        Where the ramp starts.
    points : int
        Rate evaluations from ``gamma_start`` to the largest ``gamma`` below 1; the integral uses
        log-linear interpolation between them on a 20x finer grid.

    Returns
    -------
    ndarray
        ``P(gamma)``, same shape as ``gamma``.
    """
    gamma = np.asarray(gamma, dtype=float)
    below = ~(gamma >= 1.0)  # NaN stays NaN
    ramped = below & (gamma > gamma_start)  # the rates are needed up to the largest of these
    if not ramped.any():
        return np.where(below, np.where(np.isnan(gamma), np.nan, 0.0), 1.0)
    grid = np.linspace(gamma_start, float(gamma[ramped].max()), points)
    with np.errstate(divide="ignore"):
        log_rate = np.log([rate(g) for g in grid])
    fine = np.linspace(grid[0], grid[-1], 20 * points)
    exponent = _integrate().cumulative_trapezoid(np.exp(np.interp(fine, grid, log_rate)), fine, initial=0.0) / gamma_dot
    return np.where(below, -np.expm1(-np.interp(gamma, fine, exponent)), 1.0)


def fulton_dunkleberger_mean(*, gamma_dot, rate, gamma_start=0.0, gamma_end=1.0, points=400):
    """Mean switching bias of the Fulton-Dunkleberger distribution, ``gamma_start + int (1 - P)``."""
    grid = np.linspace(gamma_start, gamma_end - 1e-9, 20 * points)
    survival = 1.0 - fulton_dunkleberger_cdf(grid, gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start,
                                             points=points)
    return gamma_start + float(_integrate().trapezoid(survival, grid))


def warm_start_gamma(*, gamma_dot, V0, damping, theta, probability=1e-9, form="melnikov", model="underdamped"):
    """Bias below which a ramp from 0 switches with probability < ``probability``.

    Solves ``(1/gamma_dot) int_0^g Gamma = -ln(1 - probability)`` with the adiabatic rate.
    Starting the ramp there from the thermal distribution of the well leaves out at most
    that fraction of the switching events (times the rate formula's error, a factor of
    order one), and the state at ``g`` is thermal up to corrections of order the
    relaxation time over the ramp time.
    """
    from scipy import optimize

    kw = dict(V0=V0, damping=damping, theta=theta, form=form, model=model)
    target = -math.log1p(-probability) * gamma_dot

    def excess(g):
        """Log of the survival exponent at bias ``g`` over the target."""
        value, _ = _integrate().quad(lambda x: escape_rate(x, **kw), 0.0, g, limit=200)
        return math.log(value + 1e-300) - math.log(target)

    if excess(0.999) < 0:
        return 0.999
    if excess(1e-9) >= 0:  # so hot that a ramp from 0 may switch at once: nothing can be skipped
        return 0.0
    return float(optimize.brentq(excess, 1e-9, 0.999, xtol=1e-6))


# --------------------------------------------------------------------------- running state and retrapping


def quality_factor(V0, damping):
    """Quality factor ``Q = omega_p R C = sqrt(V0) / damping`` of the junction (normalized units).

    Parameters
    ----------
    V0, damping : float or array
        Barrier scale and damping.

    Returns
    -------
    float or numpy.ndarray
        ``Q``; the McCumber parameter is ``beta_c = Q^2``.
    """
    return np.sqrt(V0) / np.asarray(damping, dtype=float)


#: Below this quality factor the junction is not hysteretic: its noise-free retrapping current is
#: ``I_c`` (``beta_c = Q^2 ~ 0.7``; Stewart, Appl. Phys. Lett. 12, 277 (1968); McCumber, J. Appl.
#: Phys. 39, 3113 (1968)). :func:`retrapping_current` finds the value itself; this only names it.
NON_HYSTERETIC_Q = 0.84


def _run_margin(gamma, Q):
    """How far the unstable manifold of the saddle at bias ``gamma`` runs: > 0 past the next saddle, < 0 short of it.

    ``phi'' + phi' / Q + sin(phi) = gamma`` (time in ``1 / omega_p``) from just past the barrier top
    along the saddle's unstable direction, until the phase reaches the next barrier top (running)
    or the energy ``E = phi'^2 / 2 - cos(phi) - gamma phi`` falls below that of the next top:
    ``dE/dt = -phi'^2 / Q <= 0``, so from there the orbit can never reach it (caught; this also
    ends an orbit that creeps into the next well's bottom without turning, at low ``Q``). The
    margin is the velocity at the next top for a running orbit, and the phase the caught one is
    short of it by (negative); both vanish at the retrapping current, so the margin is
    continuous there.
    """
    from scipy.integrate import solve_ivp

    a = math.asin(gamma)
    top = math.pi - a
    # the saddle's unstable direction: phi' = lam (phi - top), lam^2 + lam / Q - cos(a) = 0
    lam = 2.0 * math.cos(a) / (1.0 / Q + math.sqrt(1.0 / Q**2 + 4.0 * math.cos(a)))  # no cancellation
    eps = min(1e-7, 1e-3 * (top - a))  # well inside the linear neighbourhood of the saddle

    def force(t, y):
        return [y[1], gamma - math.sin(y[0]) - y[1] / Q]

    def arrived(t, y):
        return y[0] - (top + 2.0 * math.pi)

    next_top = -math.cos(top) - gamma * (top + 2.0 * math.pi)

    def caught(t, y):
        return 0.5 * y[1] ** 2 - math.cos(y[0]) - gamma * y[0] - next_top

    arrived.terminal = caught.terminal = True
    caught.direction = -1
    # leaving the saddle takes ~ln(1/eps)/lam, a period ~2 pi Q / (gamma Q^2 + 1) after that
    horizon = 50.0 * (math.log(1.0 / eps) / lam + 2.0 * math.pi * (Q + 1.0 / Q))
    sol = solve_ivp(force, (0.0, horizon), [top + eps, lam * eps], method="DOP853", events=(arrived, caught),
                    rtol=1e-11, atol=1e-15)
    if sol.t_events[0].size:
        return float(sol.y_events[0][0][1])
    phi = sol.y_events[1][0][0] if sol.t_events[1].size else sol.y[0, -1]
    return float(phi - (top + 2.0 * math.pi))


@functools.lru_cache(maxsize=4096)
def _retrapping_at(Q, tol):
    """``I_r / I_c`` at one ``Q`` (:func:`retrapping_current`), remembered: a call costs up to a second of orbits."""
    from scipy.optimize import brentq

    if Q < 0.5:
        return 1.0  # far below the onset of hysteresis (Q ~ 0.84)
    if Q > 1000.0:
        return 4.0 / (math.pi * Q)  # the large-Q limit, within 2e-7 of the orbit's value at Q = 1000
    high = 1.0 - 1e-6
    if _run_margin(high, Q) <= 0:
        return 1.0  # not hysteretic (to 1e-6): nothing runs below the critical current
    low = min(0.5 * 4.0 / (math.pi * Q), 0.5)  # below the large-Q value, which is an upper bound
    while _run_margin(low, Q) > 0:
        low *= 0.5
    return float(brentq(_run_margin, low, high, args=(Q,), xtol=tol, rtol=4 * np.finfo(float).eps))


def retrapping_current(Q, *, tol=1e-9):
    """Noise-free retrapping current ``I_r / I_c`` of a junction of quality factor ``Q``.

    The smallest bias at which the running state exists: below it every trajectory is caught
    in a well. At ``I_r`` the orbit that leaves a barrier top forward arrives at the next one
    with zero velocity (a homoclinic orbit of the pendulum with bias and damping). It is found
    by Brent's method on the bias, each step integrating that orbit (the unstable manifold of
    the saddle) over one period, ``phi'' + phi'/Q + sin(phi) = gamma`` with time in ``1/omega_p``
    (:func:`scipy.integrate.solve_ivp`, DOP853, relative tolerance 1e-11).

    Limits: ``4 / (pi Q)`` for large ``Q`` (energy balance on the undamped separatrix: the
    work ``2 pi gamma`` of the bias per period equals the loss ``(1/Q) oint phi' dphi = 8 / Q``;
    McCumber, J. Appl. Phys. 39, 3113 (1968); Stewart, Appl. Phys. Lett. 12, 277 (1968)), within
    0.25% above ``Q = 10`` (and used above ``Q = 1000``, within 2e-7); 1 (no hysteresis)
    below ``Q ~ 0.84`` (`NON_HYSTERETIC_Q`), where ``I_r > 1 - 1e-6`` is returned as 1 (the
    orbit leaves the saddle ever more slowly as the saddle and the well bottom merge at
    ``I_c``), and without integrating below ``Q = 0.5``.

    Parameters
    ----------
    Q : float or array, > 0
        Quality factor ``sqrt(V0) / damping`` (:func:`quality_factor`).
    tol : float
        Tolerance on ``I_r / I_c`` (Brent's method on the orbit's margin at the next top).

    Returns
    -------
    float or numpy.ndarray
        ``I_r / I_c`` in (0, 1], shaped like ``Q``.
    """
    q = np.asarray(Q, dtype=float)
    if not np.all(np.isfinite(q) & (q > 0)):
        raise ValueError(f"Q must be finite and > 0, got {Q!r}")

    return _scalar_or_array(np.vectorize(lambda Q: _retrapping_at(float(Q), float(tol)), otypes=[float])(q))


# --------------------------------------------------------------------------- quantum escape and the crossover
# Kept in their own module (it builds on the functions above) and offered here, where users look for theory.
from .quantum_theory import (  # noqa: E402, F401  (re-exported)
    crossover_temperature,
    escape_temperature,
    escape_theta,
    mqt_rate,
    quantum_enhancement,
    quantum_thermal_rate,
    wkb_exponent,
)

