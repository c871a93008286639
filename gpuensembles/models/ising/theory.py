"""Exact references of the 2D Ising model: Onsager's infinite lattice and the finite torus.

Square lattice, ``E = -J sum_<ij> s_i s_j``, ``h = 0``, in units ``J = k_B = 1``:
energies in ``J``, temperature ``T = 1/beta`` in ``J/k_B``, ``K = beta J``; everything is per spin.
"""

import math
import operator

import numpy as np

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
    from scipy import special  # on first use: importing the package does not import scipy.special

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
    from scipy import special  # on first use

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


#: Beyond this ``K = beta J`` the torus is in its ground state to double precision: the lightest excitation
#: (one flipped spin, dE = 8) weighs ``N exp(-8K) < 1e-60`` (and ``sinh 2K`` overflows from K = 355 on).
_GROUND_STATE_K = 20.0
#: Below this ``K`` the high-temperature expansion replaces Kaufman's products, which cancel there (relative
#: error ~1e-16 / K^2: ~1e-8 here; overflow below K ~ 1e-154). The expansion's first neglected loops weigh
#: ~K^4 relative to what it keeps (~K^3 for L = 3, whose rows wrap into loops of 3 bonds): ~1e-12 here.
_HIGH_TEMPERATURE_K = 1e-4


def _high_temperature(L, K):
    """``ln Z`` and its first two K-derivatives from the high-temperature expansion.

    ``Z = 2^N cosh(m K)^(2N / m) sum_G tanh(m K)^|G|`` over the closed subgraphs ``G`` of the ``2N / m``
    distinct bonds (``m = 2`` for L = 2, where each pair of neighbours is bonded twice). Kept: the
    empty graph, the ``N`` plaquettes (4 bonds) and the ``2L`` rows and columns that wrap around (``L``
    bonds); for L = 2 the one closed graph (4 bonds) makes it exact.
    """
    N, m = L * L, 2.0 if L == 2 else 1.0
    loops = ((1.0, 4),) if L == 2 else ((float(N), 4), (2.0 * L, L))
    t = np.tanh(m * K)
    t1 = m * (1.0 - t * t)  # dt / dK
    t2 = -2.0 * m * t * t1
    g = sum(n * t**k for n, k in loops)
    g1 = sum(n * k * t ** (k - 1) * t1 for n, k in loops)
    g2 = sum(n * k * ((k - 1) * t ** (k - 2) * t1 * t1 + t ** (k - 1) * t2) for n, k in loops)
    log_z = N * math.log(2.0) + 2.0 * N / m * np.log(np.cosh(m * K)) + np.log1p(g)
    return log_z, 2.0 * N * t + g1 / (1.0 + g), 2.0 * N * m * (1.0 - t * t) + g2 / (1.0 + g) - (g1 / (1.0 + g)) ** 2


def _kaufman(L, beta):
    """``ln Z``, ``d ln Z / dK`` and ``d^2 ln Z / dK^2`` of the L x L torus (beta = 0 replaced by 1).

    Each term ``Z_i`` is kept as ``log_scale + ln|z|``; its derivatives are those of ``Z_i exp(-a K)``, with
    ``a = d ln Z1 / dK``: the shift leaves ``d^2 ln sum Z_i / dK^2`` unchanged and the numbers small.
    Above ``_GROUND_STATE_K`` they are the ground state's: ``ln 2 + 2 N K``, ``2 N`` and 0; below
    ``_HIGH_TEMPERATURE_K`` those of :func:`_high_temperature`.
    """
    N, K = L * L, np.where(beta > 0, beta, 1.0)
    frozen, hot, K_given = K > _GROUND_STATE_K, K < _HIGH_TEMPERATURE_K, K
    K = np.clip(K, _HIGH_TEMPERATURE_K, _GROUND_STATE_K)
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
    hot_log_z, hot_d1, hot_d2 = _high_temperature(L, np.minimum(K_given, _HIGH_TEMPERATURE_K))
    with np.errstate(over="ignore"):  # ln Z beyond double range (beta ~ 1e300 on a large lattice) is inf
        ground_log_z = math.log(2.0) + 2.0 * N * K_given

    def pick(ground, expansion, kaufman):
        return np.where(frozen, ground, np.where(hot, expansion, kaufman))

    return (pick(ground_log_z, hot_log_z, log_z), pick(2.0 * N, hot_d1, N * c * v + a + d1),
            pick(0.0, hot_d2, -2.0 * N * v * v + d2))


def ising_log_partition(L, beta):
    """Exact ``ln Z`` of the periodic L x L Ising model (Kaufman 1949; Ferdinand & Fisher 1969).

    ``Z = (1/2) (2 sinh 2K)^(N/2) (Z1 + Z2 + Z3 + Z4)``, ``N = L^2``, with::

        Z1 = prod_{r=0}^{L-1} 2 cosh(L gamma_{2r+1} / 2),   Z2 = prod 2 sinh(L gamma_{2r+1} / 2),
        Z3 = prod_{r=0}^{L-1} 2 cosh(L gamma_{2r} / 2),     Z4 = prod 2 sinh(L gamma_{2r} / 2),
        cosh(gamma_k) = cosh(2K) coth(2K) - cos(pi k / L)  (k >= 1),   gamma_0 = 2K + ln tanh K.

    ``gamma_0`` is signed: it is negative above ``T_c`` (where ``Z4 < 0``) and vanishes at ``beta_c``.
    The energy is ``E = -sum s_i s_j`` over the ``2N`` bonds to the right and lower neighbours; for
    ``L = 2`` each pair of neighbours is thus bonded twice. Evaluated in logarithms, so it neither
    overflows nor underflows for ``L`` in the thousands; below ``beta = 1e-4`` and above 20 see
    `ising_exact`.

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
    Near ``beta = 0`` the prefactor and the products cancel (relative error ``~1e-16 / beta^2``): below
    ``beta = 1e-4`` the high-temperature expansion to its first loops is used instead (relative error
    ``~1e-12`` there, less below). Above ``beta = 20`` the lattice is in its ground state to double
    precision (``u = -2``, ``c = 0``).

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
    with np.errstate(over="ignore", invalid="ignore"):  # beta^2 overflows only in the ground state, where d2 = 0
        heat = np.where((beta > 0) & (d2 != 0.0), beta**2 * d2 / N, 0.0)
    return _like(energy, beta), _like(heat, beta)
