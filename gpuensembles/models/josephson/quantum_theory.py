"""Quantum escape of the current-biased junction: tunnelling, the crossover, and the escape temperature.

Units are those of the washboard equation (:mod:`.junction`): energies in ``E_C = (2e)^2 / C``,
time in ``hbar / E_C``. In these units the phase has unit mass and ``hbar = 1``:
``E / E_C = phi'^2 / 2 - V0 (cos(phi) + gamma phi)``, so an action is in units of ``hbar``
and ``k_B T = theta``. Damping is the Ohmic (RCSJ) friction ``damping = 1 / (R C)`` in
inverse time units.

Conventions, stated once for every function here:

* ``omega_p = sqrt(V0) (1 - gamma^2)^(1/4)``: the small-oscillation (plasma) frequency at the
  well bottom at bias ``gamma``; the barrier-top curvature of the exact cosine potential has the
  same magnitude. ``Q = omega_p / damping`` is taken *at the bias* (Martinis, Devoret & Clarke,
  PRB 35, 4682 (1987)), not the zero-bias ``sqrt(V0) / damping`` of
  :func:`.theory.quality_factor`.
* ``Delta U = 2 V0 [sqrt(1 - gamma^2) - gamma arccos(gamma)]``: the exact barrier of the
  cosine washboard (:func:`.theory.barrier`).
* ``barrier="exact"`` puts these exact ``omega_p`` and ``Delta U`` into the tunnelling
  formula, which was derived for the cubic potential; ``barrier="cubic"`` uses the cubic
  expansion about ``gamma = 1`` throughout, ``Delta U = (4 sqrt(2) / 3) V0 (1 - gamma)^(3/2)``
  and ``omega_p = 2^(1/4) sqrt(V0) (1 - gamma)^(1/4)``, as most experimental papers do. The two
  agree as ``gamma -> 1``; :func:`wkb_exponent` gives the undamped exponent of the exact cosine
  barrier, which shows how far the cubic form is off at a given bias.
"""

import math

import numpy as np

from . import theory

#: ``zeta(3)``, written out (``scipy.special`` is not imported for one constant).
ZETA3 = 1.2020569031595942
#: Caldeira-Leggett exponent of the cubic barrier at zero damping, ``B = (36/5) Delta U / (hbar omega_p)``
#: (Caldeira & Leggett, Ann. Phys. 149, 374 (1983)); printed as 7.2 by Martinis, Devoret & Clarke (1987).
CUBIC_EXPONENT = 36.0 / 5.0
#: First-order damping correction of that exponent, ``B (1 + DAMPING_COEFFICIENT / Q)``:
#: ``45 zeta(3) / (2 pi^3) = 0.8723`` (Grabert, Olschowski & Weiss, PRB 36, 1931 (1987), with their
#: ``alpha = 1 / (2 Q)``; printed as 0.87 by Martinis, Devoret & Clarke (1987)).
DAMPING_COEFFICIENT = 45.0 * ZETA3 / (2.0 * math.pi**3)
#: Prefactor of the undamped tunnelling rate, ``a_q = sqrt(PREFACTOR * Delta U / (hbar omega_p))``:
#: ``120 pi * 36/5 = 864 pi`` (Caldeira & Leggett 1983; Martinis, Devoret & Clarke 1987).
PREFACTOR = 120.0 * math.pi * CUBIC_EXPONENT
BARRIERS = ("exact", "cubic")


def _barrier_and_frequency(gamma, V0, barrier):
    """``(Delta U, omega_p)`` of the stated convention, as float arrays."""
    if barrier not in BARRIERS:
        raise ValueError(f"barrier must be one of {BARRIERS}, got {barrier!r}")
    gamma = np.asarray(gamma, dtype=float)
    if np.any(~((gamma >= 0) & (gamma < 1))):
        raise ValueError(f"gamma must lie in [0, 1) (a barrier is left only below I_c), got {gamma!r}")
    if barrier == "cubic":
        return (4.0 * math.sqrt(2.0) / 3.0) * V0 * (1.0 - gamma) ** 1.5, 2.0**0.25 * np.sqrt(V0) * (1.0 - gamma) ** 0.25
    return theory.barrier(gamma, V0), theory.plasma_frequency(gamma, V0)


def _positive(name, value):
    value = np.asarray(value, dtype=float)
    if np.any(~(value > 0)) or np.any(~np.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def mqt_rate(gamma, *, V0, damping, barrier="exact"):
    """Zero-temperature tunnelling (MQT) rate out of a well of the washboard, with Ohmic damping.

    ``Gamma_q = a_q omega_p / (2 pi) exp[-(36/5) (Delta U / omega_p) (1 + 0.8723 / Q)]`` with
    ``a_q = [864 pi Delta U / omega_p]^(1/2)`` (``hbar = 1``): the bounce of the cubic
    potential (Caldeira & Leggett, Ann. Phys. 149, 374 (1983)) with the first-order damping
    correction of its exponent, ``45 zeta(3) / (2 pi^3 Q)`` (Grabert, Olschowski & Weiss, PRB 36,
    1931 (1987)), in the form of Martinis, Devoret & Clarke, PRB 35, 4682 (1987). The
    prefactor is the undamped one: its damping correction is of order ``1 / Q`` times a
    number of order one, against ``(36/5) (Delta U / omega_p) (0.87 / Q)`` in the exponent.
    Valid for ``Delta U >> omega_p`` (several levels in the well) and ``Q >> 1``.

    Parameters
    ----------
    gamma : float or array_like, in [0, 1)
        Bias ``I / I_c``.
    V0 : float
        ``E_J / E_C``.
    damping : float
        ``1 / (R C)`` in inverse time units (``hbar / E_C``); 0 for no damping.
    barrier : {"exact", "cubic"}
        Which ``Delta U`` and ``omega_p`` (module docstring).

    Returns
    -------
    numpy.ndarray
        Rate in inverse time units (``E_C / hbar``).
    """
    du, omega = _barrier_and_frequency(gamma, _positive("V0", V0), barrier)
    damping = np.asarray(damping, dtype=float)
    if np.any(~(damping >= 0)):
        raise ValueError(f"damping must be >= 0, got {damping!r}")
    ratio = du / omega
    exponent = CUBIC_EXPONENT * ratio * (1.0 + DAMPING_COEFFICIENT * damping / omega)
    return np.sqrt(PREFACTOR * ratio) * omega / (2.0 * math.pi) * np.exp(-exponent)


def wkb_exponent(gamma, V0):
    """Undamped tunnelling exponent ``B = 2 int sqrt(2 (U - U_min)) dphi`` of the exact cosine barrier.

    From the well bottom to the exit point beyond the barrier where ``U`` falls back to its
    minimum (unit mass, ``hbar = 1``): the bounce action at zero temperature and damping.
    For the cubic barrier it is ``(36/5) Delta U / omega_p``, which this approaches as
    ``gamma -> 1``; the integral by Gauss-Legendre with ``phi = a + (x - a) s^2`` near each
    end, where the integrand has square-root ends.

    Parameters
    ----------
    gamma : float, in (0, 1)
        Bias.
    V0 : float
        ``E_J / E_C``.

    Returns
    -------
    float
        ``B``, in units of ``hbar``.
    """
    gamma = float(gamma)
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must lie in (0, 1): at 0 no state lies below the well bottom, got {gamma!r}")
    a, b = float(theory.well_bottom(gamma)), float(theory.barrier_top(gamma))

    def excess(x):
        """``U(x) - U(a)``."""
        return -V0 * (np.cos(x) + gamma * x) + V0 * (math.cos(a) + gamma * a)

    exit_point = float(theory.bisect(lambda x: excess(x) > 0.0, b, b + 2.0 * np.pi))
    top = 0.5 * (a + b)  # split at a point inside, so each half has one square-root end at most

    def half(lo, hi, at_lo):
        """``int sqrt(2 excess)`` over ``[lo, hi]``, the substitution at the end where it vanishes."""
        span = hi - lo

        def integrand(s):
            """``sqrt(2 excess)`` at ``x(s)`` times ``dx / ds``."""
            x = lo + span * s * s if at_lo else hi - span * s * s
            return np.sqrt(np.maximum(2.0 * excess(x), 0.0)) * 2.0 * span * s

        return theory._gauss(integrand, 0.0, 1.0)

    return 2.0 * (half(a, top, True) + half(top, exit_point, False))


def crossover_temperature(gamma, *, V0, damping):
    """Crossover temperature ``theta* = k_B T* / E_C`` between thermal activation and tunnelling.

    ``theta* = omega_R / (2 pi)`` (``hbar = 1``) with ``omega_R = omega_b [sqrt(1 + alpha^2) - alpha]``,
    ``alpha = damping / (2 omega_b)``: the temperature at which the first Matsubara frequency
    reaches the Kramers-Grote-Hynes barrier frequency of Ohmic damping, below which the
    thermal rate's quantum correction diverges (Grabert & Weiss, PRL 53, 1787 (1984); Larkin &
    Ovchinnikov, JETP Lett. 37, 382 (1983)). ``omega_b = omega_p`` (the barrier-top curvature of
    the washboard). Without damping ``theta* = omega_p / (2 pi)``; damping lowers it.

    Parameters
    ----------
    gamma : float or array_like, in [0, 1)
        Bias.
    V0, damping : float
        ``E_J / E_C`` and ``1 / (R C)`` (inverse time units).

    Returns
    -------
    numpy.ndarray
        ``theta*``; in kelvin ``T* = theta* E_C / k_B``.
    """
    _, omega = _barrier_and_frequency(gamma, _positive("V0", V0), "exact")
    alpha = np.asarray(damping, dtype=float) / (2.0 * omega)
    if np.any(~(alpha >= 0)):
        raise ValueError(f"damping must be >= 0, got {damping!r}")
    return omega * (np.sqrt(1.0 + alpha * alpha) - alpha) / (2.0 * math.pi)


def quantum_enhancement(gamma, *, V0, damping, theta, terms=2000):
    """Quantum correction factor of the thermal rate above the crossover, Ohmic damping.

    ``c_q = prod_{n >= 1} (omega_0^2 + nu_n^2 + nu_n damping) / (-omega_b^2 + nu_n^2 + nu_n damping)``
    with the Matsubara frequencies ``nu_n = 2 pi n theta`` (``hbar = 1``) and
    ``omega_0 = omega_b = omega_p`` (Wolynes, PRL 47, 968 (1981); Grabert, Weiss & Hanggi, PRL 52,
    2193 (1984); Hanggi, Talkner & Borkovec, RMP 62, 251 (1990), Sect. VII). It tends to
    ``exp[(omega_0^2 + omega_b^2) / (24 theta^2)]``-like growth from 1 at high temperature
    and diverges at :func:`crossover_temperature`. The product is taken to ``terms`` factors,
    and its tail ``sum_{n > N} ln(1 + (omega_0^2 + omega_b^2) / nu_n^2)`` added to first order.

    Parameters
    ----------
    gamma : float or array_like, in [0, 1)
        Bias.
    V0, damping, theta : float
        ``E_J / E_C``, ``1 / (R C)`` and ``k_B T / E_C``.
    terms : int
        Factors of the product taken exactly.

    Returns
    -------
    numpy.ndarray
        ``c_q >= 1``.

    Raises
    ------
    ValueError
        At or below the crossover temperature, where the formula does not hold.
    """
    theta = _positive("theta", theta)
    _, omega = _barrier_and_frequency(gamma, _positive("V0", V0), "exact")
    star = crossover_temperature(gamma, V0=V0, damping=damping)
    if np.any(theta <= star):
        raise ValueError(f"theta must lie above the crossover temperature theta* = {np.max(star):.6g}, where the "
                         f"thermal rate's quantum correction diverges; got theta = {np.min(theta):.6g}. Use mqt_rate "
                         "below it")
    omega, theta = np.broadcast_arrays(omega, theta)
    n = np.arange(1, terms + 1)
    nu = 2.0 * math.pi * n * theta[..., None]
    friction = nu * np.asarray(damping, dtype=float)
    w2 = (omega * omega)[..., None]
    log = np.sum(np.log((w2 + nu * nu + friction) / (-w2 + nu * nu + friction)), axis=-1)
    tail = 2.0 * omega**2 / (2.0 * math.pi * theta) ** 2 / (terms + 0.5)  # sum_{n > N} 1/n^2 ~ 1 / (N + 1/2)
    return np.exp(log + tail)


def quantum_thermal_rate(gamma, *, V0, damping, theta, form="melnikov"):
    """Thermal escape rate above the crossover with its quantum correction, ``c_q`` times the classical rate.

    The classical rate is :func:`.theory.escape_rate` (``form`` "melnikov": Mel'nikov-Meshkov,
    any damping; "kramers"; "tst"), times :func:`quantum_enhancement` (Grabert, Weiss & Hanggi
    1984). Valid above about ``1.2 theta*``, where the product's first factor is not yet near
    its pole.

    Parameters
    ----------
    gamma : float or array_like, in [0, 1)
        Bias.
    V0, damping, theta : float
        ``E_J / E_C``, ``1 / (R C)`` and ``k_B T / E_C``.
    form : {"melnikov", "kramers", "tst"}
        The classical rate.

    Returns
    -------
    numpy.ndarray
        Rate in inverse time units.
    """
    enhancement = quantum_enhancement(gamma, V0=V0, damping=damping, theta=theta)
    classical = theory.escape_rate(np.asarray(gamma, dtype=float), V0=V0, damping=damping, theta=float(theta),
                                   form=form)
    return np.asarray(classical) * enhancement


def escape_theta(rate, gamma, *, V0, prefactor=1.0):
    """Escape temperature ``theta_esc``: the temperature a classical rate would need to give ``rate``.

    Solves ``rate = prefactor omega_p / (2 pi) exp(-Delta U / theta_esc)`` (exact cosine
    ``Delta U`` and ``omega_p``): ``theta_esc = Delta U / ln(prefactor omega_p / (2 pi rate))``.
    ``prefactor = 1`` is transition-state theory, the convention of most experimental
    papers (e.g. Martinis, Devoret & Clarke 1987 write ``a_t``, of order one); in the thermal
    regime ``theta_esc`` follows the bath temperature, and below the crossover it saturates at
    the escape temperature of the tunnelling rate.

    Parameters
    ----------
    rate : float or array_like, > 0
        Escape rate, inverse time units.
    gamma : float or array_like, in [0, 1)
        Bias at which it was measured.
    V0 : float
        ``E_J / E_C``.
    prefactor : float or array_like
        ``a_t`` of the classical rate.

    Returns
    -------
    numpy.ndarray
        ``theta_esc``; NaN where the rate is at or above the attempt frequency.
    """
    rate = _positive("rate", rate)
    du, omega = _barrier_and_frequency(gamma, _positive("V0", V0), "exact")
    log = np.log(_positive("prefactor", prefactor) * omega / (2.0 * math.pi * rate))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(log > 0, du / log, np.nan)


def escape_temperature(rate, current, *, Ic, C, prefactor=1.0):
    """Escape temperature ``T_esc`` in kelvin that a measured escape rate implies (SI units).

    :func:`escape_theta` with ``V0 = E_J / E_C``, ``gamma = current / Ic`` and the rate in
    ``1/s``: ``T_esc = Delta U / (k_B ln(a_t omega_p / (2 pi rate)))`` with
    ``omega_p = sqrt(2 e Ic / (hbar C)) (1 - gamma^2)^(1/4)`` and the exact cosine
    ``Delta U = 2 E_J [sqrt(1 - gamma^2) - gamma arccos(gamma)]``, ``E_J = hbar Ic / 2e``.

    Parameters
    ----------
    rate : float or array_like, 1/s
        Measured escape rate (e.g. ``rates_from_histogram(..., units="A")["rate"]``).
    current : float or array_like, A
        Bias current at which it was measured.
    Ic : float, A
        Critical current.
    C : float, F
        Junction capacitance.
    prefactor : float
        ``a_t`` of the classical rate (1: transition-state theory).

    Returns
    -------
    numpy.ndarray
        ``T_esc`` in kelvin.
    """
    from .junction import BOLTZMANN, ELEMENTARY_CHARGE, HBAR

    Ic, C = float(_positive("Ic", Ic)), float(_positive("C", C))
    gamma = np.asarray(current, dtype=float) / Ic
    E_C = (2.0 * ELEMENTARY_CHARGE) ** 2 / C
    theta = escape_theta(np.asarray(rate, dtype=float) * HBAR / E_C, gamma, V0=HBAR * Ic / (2.0 * ELEMENTARY_CHARGE)
                         / E_C, prefactor=prefactor)
    return theta * E_C / BOLTZMANN
