"""Exact and analytic references the simulations are validated against.

All functions are plain numpy/scipy, in the normalized units of
:mod:`gpuensembles.models.josephson`: ``U(phi) = -V0 (cos(phi) + gamma phi)``,
temperature ``theta = D / damping``.
"""

import math

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
