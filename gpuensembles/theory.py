"""Exact and analytic references the simulations are validated against.

All functions are plain numpy/scipy, in the normalized units of
:mod:`gpuensembles.models.josephson`: ``U(phi) = -V0 (cos(phi) + gamma phi)``,
temperature ``theta = D / damping``. The 2D Ising section at the end uses ``J = k_B = 1``.
"""

import math
import operator

import numpy as np
from scipy import integrate, special

#: ``-zeta(1/2) / sqrt(2 pi)``: shift of an absorbing barrier that makes discrete
#: monitoring every ``h`` match continuous monitoring to first order (Broadie,
#: Glasserman & Kou, Math. Finance 7, 325 (1997); Gobet, Stoch. Proc. Appl. 87, 167 (2000)).
BGK_BETA = float(-special.zeta(0.5) / math.sqrt(2.0 * math.pi))


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


def overdamped_mfpt(*, V0, damping, gamma, D, x0=None, b=None, points_per_unit=4000):
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

    def u(phi):  # (U(phi) - U(a)) / theta, >= 0 left of the barrier
        return -V0 * (np.cos(phi) + gamma * phi - math.cos(a) - gamma * a) / theta

    # each period to the left raises U by 2 pi V0 gamma
    periods = math.ceil(40.0 * theta / (2.0 * math.pi * V0 * gamma)) + 1
    low = min(x0, a) - 2.0 * math.pi * periods
    n = int((b - low) * points_per_unit) | 1
    z = np.linspace(low, b, n)
    inner = integrate.cumulative_simpson(np.exp(-u(z)), x=z, initial=0.0)
    mask = z >= x0
    y = np.concatenate(([x0], z[mask])) if z[mask][0] > x0 else z[mask]
    inner_y = np.interp(y, z, inner)
    return float(damping / theta * integrate.simpson(np.exp(u(y)) * inner_y, x=y))


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


def separatrix_action(gamma, V0=1.0):
    """Action ``S = oint v dphi`` of the orbit at the barrier energy (unit mass).

    The energy a particle loses on that orbit is ``damping * S``; Mel'nikov's
    ``delta = damping * S / theta``. Near ``gamma = 1`` the cubic approximation gives
    ``S = 36 Delta U / (5 omega_p)`` (Buttiker, Harris & Landauer 1983).
    """
    from scipy import optimize

    a, b = well_bottom(gamma), barrier_top(gamma)

    def U(x):
        return -V0 * (np.cos(x) + gamma * x)

    left = optimize.brentq(lambda x: U(x) - U(b), -np.pi - a, a)
    value, _ = integrate.quad(lambda x: np.sqrt(max(2.0 * (U(b) - U(x)), 0.0)), left, b, limit=200)
    return 2.0 * value


def melnikov_depopulation(delta):
    """Mel'nikov-Meshkov factor ``A(delta) = exp[(1/pi) int_0^inf ln(1 - exp(-delta (x^2 + 1/4))) dx / (x^2 + 1/4)]``.

    ``A -> delta`` for ``delta -> 0`` (energy-diffusion limit) and ``A -> 1`` for large
    ``delta`` (V. I. Mel'nikov & S. V. Meshkov, J. Chem. Phys. 85, 1018 (1986)).
    """
    def integrand(x):
        return np.log(-np.expm1(-delta * (x * x + 0.25))) / (x * x + 0.25)

    value, _ = integrate.quad(integrand, 0.0, np.inf, limit=200)
    return float(np.exp(value / np.pi))


def escape_rate(gamma, *, V0, damping, theta, form="melnikov", model="underdamped"):
    """Thermal escape rate from a well of the washboard potential (normalized units).

    Parameters
    ----------
    gamma : float
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
    float
        Rate in inverse time units of the equation.
    """
    if form not in RATE_FORMS:
        raise ValueError(f"form must be one of {RATE_FORMS}, got {form!r}")
    omega = float(plasma_frequency(gamma, V0))
    boltzmann = math.exp(-float(barrier(gamma, V0)) / theta)
    if model == "overdamped":
        if form == "exact":  # no tilt: the passage to the right may never happen
            return 1.0 / overdamped_mfpt(V0=V0, damping=damping, gamma=gamma, D=damping * theta) if gamma > 0 else 0.0
        if form != "kramers":
            raise ValueError(f"the overdamped model has forms 'kramers' and 'exact', got {form!r}")
        return omega * omega / (2.0 * math.pi * damping) * boltzmann
    if form == "exact":
        raise ValueError("form='exact' exists for the overdamped model only")
    tst = omega / (2.0 * math.pi) * boltzmann
    if form == "tst":
        return tst
    alpha = damping / (2.0 * omega)
    kramers = tst * (math.sqrt(1.0 + alpha * alpha) - alpha)
    if form == "kramers":
        return kramers
    delta = damping * separatrix_action(gamma, V0) / theta
    if form == "bhl":
        return tst * 4.0 / (math.sqrt(1.0 + 4.0 / delta) + 1.0) ** 2
    return kramers * melnikov_depopulation(delta)


def fulton_dunkleberger_cdf(gamma, *, gamma_dot, rate, gamma_start=0.0, points=400):
    """Switching-current CDF under a slow linear ramp (Fulton & Dunkleberger, PRB 9, 4760 (1974)).

    ``P(gamma) = 1 - exp(-(1/gamma_dot) int_{gamma_start}^{gamma} Gamma(g) dg)``: the
    adiabatic approximation, in which the escape rate at each bias is the stationary one.

    Parameters
    ----------
    gamma : array
        Biases at which to evaluate the CDF (>= gamma_start, < 1).
    gamma_dot : float
        Ramp rate ``d gamma / dt`` in inverse time units (``dgamma / h`` of a simulation).
    rate : callable
        ``rate(g) -> Gamma`` in inverse time units, e.g.
        ``functools.partial(escape_rate, V0=1, damping=1, theta=0.05, form="kramers")``.
    gamma_start : float
        Where the ramp starts.
    points : int
        Rate evaluations between ``gamma_start`` and ``max(gamma)``; the integral uses
        log-linear interpolation between them on a 20x finer grid.

    Returns
    -------
    ndarray
        ``P(gamma)``, same shape as ``gamma``.
    """
    gamma = np.asarray(gamma, dtype=float)
    grid = np.linspace(gamma_start, float(gamma.max()), points)
    with np.errstate(divide="ignore"):
        log_rate = np.log([rate(g) for g in grid])
    fine = np.linspace(grid[0], grid[-1], 20 * points)
    exponent = integrate.cumulative_trapezoid(np.exp(np.interp(fine, grid, log_rate)), fine, initial=0.0) / gamma_dot
    return -np.expm1(-np.interp(gamma, fine, exponent))


def fulton_dunkleberger_mean(*, gamma_dot, rate, gamma_start=0.0, gamma_end=1.0, points=400):
    """Mean switching bias of the Fulton-Dunkleberger distribution, ``gamma_start + int (1 - P)``."""
    grid = np.linspace(gamma_start, gamma_end - 1e-9, 20 * points)
    survival = 1.0 - fulton_dunkleberger_cdf(grid, gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start,
                                             points=points)
    return gamma_start + float(integrate.trapezoid(survival, grid))


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
        value, _ = integrate.quad(lambda x: escape_rate(x, **kw), 0.0, g, limit=200)
        return math.log(value + 1e-300) - math.log(target)

    if excess(0.999) < 0:
        return 0.999
    return float(optimize.brentq(excess, 1e-9, 0.999, xtol=1e-6))


# --------------------------------------------------------------------------- Langevin and Kuramoto


def tilted_periodic_drift(*, f, kT, g, V0=1.0, points=1024):
    """Exact stationary drift of ``g x' = -V'(x) + f + sqrt(2 g kT) xi``, ``V = V0 sin(2 pi x)``.

    Stratonovich's formula (R. L. Stratonovich, Radiotekhnika i Elektronika 3, 497
    (1958); P. Reimann, Phys. Rep. 361, 57 (2002), Eq. 2.49) for period ``L = 1``, with
    ``Phi(x) = V(x) - f x``, ``beta = 1/kT`` and ``D = kT/g``::

        <x'> = D L (1 - exp(-beta f L)) / int_0^L dx int_0^L dy exp(beta [Phi(x) - Phi(x - y)])

    The ``x`` integral (periodic) uses the trapezoid rule, the ``y`` integral Gauss-Legendre;
    both converge exponentially, to about 1e-10 at ``points = 1024`` for ``V0 / kT <= 10``.

    Parameters
    ----------
    f, kT, g, V0 : float
        Static force, thermal energy (> 0), friction (> 0) and potential amplitude, in the
        units of :func:`gpuensembles.langevin`.
    """
    if kT <= 0 or g <= 0:
        raise ValueError(f"kT and g must be > 0, got kT={kT!r}, g={g!r}")
    beta = 1.0 / kT
    x = np.arange(points) / points
    y, wy = np.polynomial.legendre.leggauss(points)
    y, wy = 0.5 * (y + 1.0), 0.5 * wy

    def V(s):
        return V0 * np.sin(2.0 * np.pi * s)

    exponent = beta * (V(x)[:, None] - V(x[:, None] - y[None, :]) - f * y[None, :])
    double = np.mean(np.exp(exponent) @ wy)
    return (kT / g) * -np.expm1(-beta * f) / double


def kuramoto_order_parameter(K, delta):
    """Stationary order parameter of the Kuramoto model with Lorentzian frequencies, N -> oo.

    ``r = sqrt(1 - 2 delta / K)`` above the threshold ``K_c = 2 delta`` and 0 below
    (Kuramoto 1975; Acebron et al., Rev. Mod. Phys. 77, 137 (2005), Eq. 12), for
    coupling ``(K/N) sum_j sin(x_j - x_i)``, half-width ``delta`` and no noise.
    """
    K, delta = np.asarray(K, dtype=float), np.asarray(delta, dtype=float)
    return np.sqrt(np.clip(1.0 - 2.0 * delta / K, 0.0, None))


# --------------------------------------------------------------------------- 2D Ising model
# Square lattice, E = -J sum_<ij> s_i s_j, h = 0, in units J = k_B = 1: energies in J,
# temperature T = 1/beta in J/k_B, K = beta J; everything is per spin.

#: Critical coupling of the square lattice, ``ln(1 + sqrt 2) / 2 = 0.44069...`` (Kramers & Wannier 1941).
ISING_BETA_C = math.log1p(math.sqrt(2.0)) / 2.0


def _ising_beta(beta):
    beta = np.asarray(beta, dtype=float)
    if not np.all(np.isfinite(beta) & (beta >= 0)):
        raise ValueError(f"beta must be finite and >= 0, got {beta}")
    return beta


def _ising_L(L):
    try:
        L = operator.index(L)
    except TypeError:
        raise ValueError(f"L must be an integer >= 2, got {L!r}") from None
    if L < 2:
        raise ValueError(f"L must be an integer >= 2, got {L!r}")
    return L


def _like(x, beta):
    return float(x) if np.ndim(beta) == 0 else x


def onsager_energy(beta):
    """Energy per spin of the infinite square-lattice Ising model (Onsager 1944).

    ``u = -coth(2K) [1 + (2/pi) (2 tanh^2(2K) - 1) K1(kappa)]``, ``kappa = 2 sinh(2K) / cosh^2(2K)``,
    with ``K1`` the complete elliptic integral of the first kind. ``K1`` has a logarithmic
    singularity at ``beta_c`` where its prefactor vanishes; there ``u = -sqrt(2)``.

    Parameters
    ----------
    beta : float or array, >= 0
        Inverse temperature, in units of ``1/J`` (``K = beta J``).

    Returns
    -------
    float or ndarray
        ``u`` in units of ``J``, shaped like ``beta``; from 0 at ``beta = 0`` to -2 at ``beta -> oo``.
    """
    beta = _ising_beta(beta)
    s, c = np.sinh(2.0 * beta), np.cosh(2.0 * beta)
    p = ((1.0 - s * s) / (c * c)) ** 2  # 1 - kappa^2, without cancellation near beta_c
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(p > 0, (s * s - 1.0) / (c * c) * special.ellipkm1(p), 0.0)
        u = np.where(beta > 0, -c / s * (1.0 + 2.0 / np.pi * tail), 0.0)
    return _like(u, beta)


def onsager_specific_heat(beta):
    """Specific heat per spin of the infinite square-lattice Ising model (Onsager 1944).

    ``c = (4/pi) (K coth 2K)^2 {K1 - E1 - (1 - tanh^2 2K) [pi/2 + (2 tanh^2 2K - 1) K1]}``, with ``K1``, ``E1``
    the complete elliptic integrals of the first and second kind at ``kappa`` (see `onsager_energy`).
    It equals ``-K^2 du/dK`` and diverges as ``-(8/pi) K_c^2 ln|1 - beta/beta_c|``; exactly at
    ``beta_c`` this returns ``inf``.

    Parameters
    ----------
    beta : float or array, >= 0
        Inverse temperature, in units of ``1/J``.

    Returns
    -------
    float or ndarray
        ``c`` in units of ``k_B``, shaped like ``beta``.
    """
    beta = _ising_beta(beta)
    s, c = np.sinh(2.0 * beta), np.cosh(2.0 * beta)
    m, p = (2.0 * s / (c * c)) ** 2, ((1.0 - s * s) / (c * c)) ** 2  # kappa^2 and 1 - kappa^2
    with np.errstate(divide="ignore", invalid="ignore"):
        # Carlson forms K1 = R_F(0, 1-m, 1), K1 - E1 = (m/3) R_D(0, 1-m, 1): no cancellation at low T
        k1 = special.elliprf(0.0, p, 1.0)
        tail = np.where(p > 0, (s * s - 1.0) / (c * c) * k1, 0.0)  # (2 tanh^2 2K - 1) K1 -> 0 at beta_c
        heat = 4.0 / np.pi * (beta * c / s) ** 2 * (m / 3.0 * special.elliprd(0.0, p, 1.0) - (np.pi / 2 + tail) / c**2)
        heat = np.where(beta > 0, heat, 0.0)
    return _like(heat, beta)


def onsager_magnetization(beta):
    """Spontaneous magnetization per spin of the square lattice (Onsager 1948, Yang 1952).

    ``m = (1 - sinh(2K)^-4)^(1/8)`` for ``beta > beta_c``, 0 otherwise; ``m ~ 1 - 2 exp(-8K)`` at low
    temperature.

    Parameters
    ----------
    beta : float or array, >= 0
        Inverse temperature, in units of ``1/J``.

    Returns
    -------
    float or ndarray
        ``|<s>|`` (dimensionless, in [0, 1]), shaped like ``beta``.
    """
    beta = _ising_beta(beta)
    s = np.sinh(2.0 * np.maximum(beta, ISING_BETA_C))
    m = np.where(beta > ISING_BETA_C, np.clip(1.0 - s**-4.0, 0.0, None) ** 0.125, 0.0)
    return _like(m, beta)


def _scaled_hyperbolic(x, kind):
    """``f = exp(-|x|) 2 cosh(x)`` (or ``2 sinh``), ``t = d ln|f| / dx``, ``1 - t^2`` and the other one of the pair."""
    e = np.exp(-2.0 * np.abs(x))
    plus, minus = 1.0 + e, -np.sign(x) * np.expm1(-2.0 * np.abs(x))
    with np.errstate(divide="ignore"):
        if kind == "cosh":
            return plus, minus / plus, 4.0 * e / plus**2, minus
        return minus, plus / minus, -4.0 * e / minus**2, plus


def _kaufman(L, beta):
    """``ln Z``, ``d ln Z / dK`` and ``d^2 ln Z / dK^2`` of the L x L torus (beta = 0 replaced by 1).

    Each term ``Z_i`` is kept as ``log_scale + ln|z|``; its derivatives are those of ``Z_i exp(-a K)``, with
    ``a = d ln Z1 / dK``: the shift leaves ``d^2 ln sum Z_i / dK^2`` unchanged and the numbers small.
    """
    N, K = L * L, np.where(beta > 0, beta, 1.0)
    k = np.arange(2 * L, dtype=float).reshape((-1,) + (1,) * K.ndim)
    s, c = np.sinh(2.0 * K), np.cosh(2.0 * K)
    u, v = np.cos(np.pi * k / L), 1.0 / s
    d = (s - 1.0) ** 2 * v + 2.0 * np.sin(np.pi * k / (2 * L)) ** 2  # cosh(gamma_k) - 1 >= 0
    sh = np.sqrt(d * (d + 2.0))  # sinh(gamma_k)
    gamma = np.log1p(d + sh)
    # sinh(g) g' = c' and sinh(g) g'' = c'' - cosh(g) g'^2 for c = cosh(2K) coth(2K) = s + 1/s; the leading
    # powers of s cancel in the latter, so it is expanded: sinh(g)^3 g'' = 4 s^-5 poly(s, u)
    poly = s * (u * u + 2.0 - u * s) - 5.0 * u + v * (u * u + 6.0 + v * (-7.0 * u + v * (2.0 * u * u + 3.0
                                                                                           + v * (v - 3.0 * u))))
    with np.errstate(divide="ignore", invalid="ignore"):  # k = 0 is replaced below
        g1, g2 = 2.0 * c * (1.0 - v * v) / sh, 4.0 * poly / sh**3
    # gamma_0 is signed: negative above T_c (Z4 < 0 there), zero at T_c
    gamma[0], g1[0], g2[0] = 2.0 * K + np.log(np.tanh(K)), 2.0 + 2.0 * v, -4.0 * c * v * v
    x, x1, x2 = (0.5 * L * g for g in (gamma, g1, g2))  # L gamma / 2 and its K-derivatives

    log_scale, z, dz, d2z, a = [], [], [], [], None
    for parity, kind in [(1, "cosh"), (1, "sinh"), (0, "cosh"), (0, "sinh")]:  # Z1 ... Z4
        y, y1, y2 = x[parity::2], x1[parity::2], x2[parity::2]  # y[1:] > 0; y[0] = L gamma_0 / 2 for Z3, Z4
        f, t, dt, other = _scaled_hyperbolic(y, kind)
        with np.errstate(invalid="ignore"):
            log_f1, log_f2 = t * y1, dt * y1**2 + t * y2  # d ln|f| / dK, d^2 ln|f| / dK^2, factor by factor
            a = np.sum(log_f1, axis=0) if a is None else a
            r = np.sum(log_f1[1:], axis=0) - a
            q = log_f1[0] + r
            # Two equal forms for the first factor: log-derivatives (accurate at low T, where the others cancel)
            # and the product rule on f itself (needed as gamma_0 -> 0: Z4 -> 0 and coth(L gamma_0 / 2) -> oo)
            near_zero = np.abs(y[0]) < 1.0
            f0, o0 = f[0], other[0]
            dz.append(np.where(near_zero, o0 * y1[0] + f0 * r, f0 * q))
            d2z.append(f0 * np.sum(log_f2[1:], axis=0)
                       + np.where(near_zero, f0 * (y1[0] ** 2 + r * r) + o0 * (y2[0] + 2.0 * y1[0] * r),
                                  f0 * (log_f2[0] + q * q)))
        z.append(f[0])
        log_scale.append(np.abs(y[0]) + np.sum(y[1:] + np.log(f[1:]), axis=0))
    w = np.exp(np.array(log_scale) - np.max(log_scale, axis=0))
    total = np.sum(w * z, axis=0)  # > 0
    d1 = np.sum(w * dz, axis=0) / total
    d2 = np.sum(w * d2z, axis=0) / total - d1**2
    log_z = -math.log(2.0) + 0.5 * N * np.log(2.0 * s) + np.max(log_scale, axis=0) + np.log(total)
    return log_z, N * c * v + a + d1, -2.0 * N * v * v + d2


def ising_log_partition(L, beta):
    """Exact ``ln Z`` of the periodic L x L Ising model (Kaufman 1949; Ferdinand & Fisher 1969).

    ``Z = (1/2) (2 sinh 2K)^(N/2) (Z1 + Z2 + Z3 + Z4)``, ``N = L^2``, with::

        Z1 = prod_{r=0}^{L-1} 2 cosh(L gamma_{2r+1} / 2),   Z2 = prod 2 sinh(L gamma_{2r+1} / 2),
        Z3 = prod_{r=0}^{L-1} 2 cosh(L gamma_{2r} / 2),     Z4 = prod 2 sinh(L gamma_{2r} / 2),
        cosh(gamma_k) = cosh(2K) coth(2K) - cos(pi k / L)  (k >= 1),   gamma_0 = 2K + ln tanh K.

    ``gamma_0`` is signed: it is negative above ``T_c`` (where ``Z4 < 0``) and vanishes at ``beta_c``.
    The energy is ``E = -sum s_i s_j`` over the ``2N`` bonds to the right and lower neighbours; for
    ``L = 2`` each pair of neighbours is thus bonded twice. Evaluated in logarithms, so it neither
    overflows nor underflows for ``L`` in the thousands and ``beta`` of order 10.

    Parameters
    ----------
    L : int, >= 2
        Linear size.
    beta : float or array, >= 0
        Inverse temperature, in units of ``1/J``.

    Returns
    -------
    float or ndarray
        ``ln Z`` (dimensionless, total for the lattice, not per spin), shaped like ``beta``.
    """
    L, beta = _ising_L(L), _ising_beta(beta)
    log_z = np.where(beta > 0, _kaufman(L, beta)[0], L * L * math.log(2.0))
    return _like(log_z, beta)


def ising_exact(L, beta):
    """Exact energy and specific heat per spin of the periodic L x L Ising model.

    ``u = -(1/N) d ln Z / dK`` and ``c = (K^2 / N) d^2 ln Z / dK^2`` from `ising_log_partition`, with the
    derivatives taken analytically (``sinh(gamma_k) gamma_k' = d/dK [cosh 2K coth 2K]``,
    ``gamma_0' = 2 + 2 / sinh 2K``; Ferdinand & Fisher, Phys. Rev. 185, 832 (1969)). At ``beta_c``, where
    ``Z4 = 0``, the product rule is applied to ``2 sinh(L gamma_0 / 2)`` directly, so the limit is exact.
    Near ``beta = 0`` the prefactor and the products cancel: the relative error grows like ``1e-16 / beta^2``.

    Parameters
    ----------
    L : int, >= 2
        Linear size (``N = L^2`` spins).
    beta : float or array, >= 0
        Inverse temperature, in units of ``1/J``.

    Returns
    -------
    energy : float or ndarray
        ``<E> / N`` in units of ``J``, shaped like ``beta``.
    specific_heat : float or ndarray
        ``(<E^2> - <E>^2) beta^2 / N`` in units of ``k_B``, shaped like ``beta``.
    """
    L, beta = _ising_L(L), _ising_beta(beta)
    N = L * L
    _, d1, d2 = _kaufman(L, beta)
    energy = np.where(beta > 0, -d1 / N, 0.0)
    heat = np.where(beta > 0, beta**2 * d2 / N, 0.0)
    return _like(energy, beta), _like(heat, beta)
