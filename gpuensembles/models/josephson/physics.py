"""Scalar kernels of a phase particle in the tilted washboard potential.

    underdamped:  phi'' + damping phi' = V0 (-sin(phi) + gamma) + xi,   <xi xi> = 2 D delta
    overdamped:           damping phi' = V0 (-sin(phi) + gamma) + xi

Euler-Maruyama with the noise ``sqrt(2 D h) z`` added to the velocity (Pierro et al. 2018,
Algorithm 1). All functions are allocation-free ``numba.jit`` functions without
signatures, shared by the CPU and CUDA targets through
:class:`gpuensembles.FirstPassageKernel`.

Two kernels:

* :func:`escape_kernel` -- constant bias; passage at the barrier top ``pi - arcsin(gamma)``.
* :func:`switching_kernel` -- bias ramped by ``dgamma`` per step from ``gamma_start``
  (Pierro et al. 2018, Algorithm 3); passage at the barrier top of the current bias. The bias of
  step ``k`` is computed in float64 from the int64 step count, never accumulated.

Parameter rows (float64) are, in order,
``escape: V0, damping, gamma, D, h`` and
``switching: V0, damping, D, h, dgamma, gamma_start, warm, limit``.
"""

import functools
import math

import numpy as np

from ...core import rng
from ...core.templates.first_passage import FirstPassageKernel
from ...core.templates.rounds import TrialKernel

ESCAPE_PARAMETERS = ("V0", "damping", "gamma", "D", "h")
SWITCHING_PARAMETERS = ("V0", "damping", "D", "h", "dgamma", "gamma_start", "warm", "limit")

#: First Philox block index of the draws that sample a thermal initial state; far above
#: any step index ``k >> 2``, so the two never share random numbers.
WARM_START_DRAW = np.int64(1) << np.int64(62)
#: The first block of a realization's noise, typed: numba compiles a callee once more for a literal 0.
_DRAW0 = np.int64(0)


INTEGRATORS = ("euler", "baoab")


@rng.fjit
def step_coefficients(V0, damping, D, h, overdamped, baoab):
    """``(decay, b, s)``: velocity decay, ``sin`` coefficient and noise amplitude per step.

    Euler: ``1 - damping h``, ``V0 h``, ``sqrt(2 D h)`` (the last two / damping when
    overdamped). BAOAB: the exact Ornstein-Uhlenbeck step ``exp(-damping h)`` and
    ``sqrt(theta (1 - exp(-2 damping h)))`` with ``theta = D / damping``.
    """
    if baoab:
        decay = math.exp(-damping * h)
        return decay, V0 * h, math.sqrt(D / damping * (1.0 - decay * decay))
    scale = 1.0 / damping if overdamped else 1.0
    return 1.0 - damping * h, V0 * h * scale, math.sqrt(2.0 * D * h) * scale


@functools.cache
def _step(model: str, dtype: str, integrator: str = "euler"):
    """``(F, step)``: the float type of ``dtype`` and one step ``step(phi, v, z, decay, b, c, s, h) -> (phi, v)``."""
    F = np.float32 if dtype == "float32" else np.float64
    overdamped = model == "overdamped"
    baoab = integrator == "baoab"
    half = F(0.5)
    jit = rng.fjit

    @jit
    def euler(phi, v, z, decay, b, c, s, h):
        # b = V0 h and c = V0 gamma h (both / damping when overdamped); see step_coefficients
        if overdamped:
            return phi + (c - b * math.sin(phi)) + s * z, v
        if baoab:
            v = v + half * (c - b * math.sin(phi))
            phi = phi + half * h * v
            v = decay * v + s * z
            phi = phi + half * h * v
            return phi, v + half * (c - b * math.sin(phi))
        return phi + v * h, decay * v + (c - b * math.sin(phi)) + s * z

    return F, euler


@functools.cache
def _integrator(model: str, dtype: str, integrator: str = "euler"):
    """``block``: four steps from one Philox block of normals, in precision ``dtype``.

    ``euler`` is the seed's Euler-Maruyama scheme. ``baoab`` (underdamped only) is the
    symmetric splitting half kick, half drift, exact Ornstein-Uhlenbeck velocity update,
    half drift, half kick (Leimkuhler & Matthews, Appl. Math. Res. Express 2013, 34):
    weak order 2 and no first-order numerical heating, so it allows a ~10x larger ``h``
    at the same accuracy. Both take one normal per step.
    """
    F, euler = _step(model, dtype, integrator)
    jit = rng.fjit

    @jit
    def block(k, phi, v, z0, z1, z2, z3, decay, b, c, s, h, top, max_steps):
        # Four steps, then one test for a passage: straight-line code that the GPU can
        # overlap with the next block's random numbers (a lane alone on its scheduler
        # is latency-bound). Steps after the first passage are integrated but discarded.
        # Returns ((k, phi, v), status): 0 running, 1 passage (phi > top), 2 max_steps.
        if k + 4 <= max_steps:
            phi1, v1 = euler(phi, v, z0, decay, b, c, s, h)
            phi2, v2 = euler(phi1, v1, z1, decay, b, c, s, h)
            phi3, v3 = euler(phi2, v2, z2, decay, b, c, s, h)
            phi4, v4 = euler(phi3, v3, z3, decay, b, c, s, h)
            if max(max(phi1, phi2), max(phi3, phi4)) > top:
                if phi1 > top:
                    return (k + 1, phi1, v1), 1
                if phi2 > top:
                    return (k + 2, phi2, v2), 1
                if phi3 > top:
                    return (k + 3, phi3, v3), 1
                return (k + 4, phi4, v4), 1
            return (k + 4, phi4, v4), (2 if k + 4 == max_steps else 0)
        for j in range(max_steps - k):  # last, partial block: at most three steps
            phi, v = euler(phi, v, z0 if j == 0 else (z1 if j == 1 else z2), decay, b, c, s, h)
            if phi > top:
                return (k + j + 1, phi, v), 1
        return (max_steps, phi, v), 2

    return F, block


PASSAGES = ("barrier_top", "next_well")


@rng.fjit
def passage_point(gamma, next_well):
    """Barrier top ``pi - asin(gamma)``, or the next well's bottom ``asin(gamma) + 2 pi``.

    For ``gamma >= 1`` (no barrier left) the points of ``gamma = 1``.
    """
    a = math.asin(min(gamma, 1.0))
    return a + 2.0 * math.pi if next_well else math.pi - a


@functools.cache
def escape_kernel(model: str, dtype: str, passage: str = "barrier_top", integrator: str = "euler"):
    """Escape at constant bias from rest at the well bottom (Pierro et al. 2018, Algorithm 1)."""
    F, block = _integrator(model, dtype, integrator)
    next_well = passage == "next_well"
    baoab = integrator == "baoab"
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    overdamped = model == "overdamped"
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, gamma, D, h = par[0], par[1], par[2], par[3], par[4]
        decay, b, s = step_coefficients(V0, damping, D, h, overdamped, baoab)
        return (
            F(decay),
            F(b),
            F(b * gamma),
            F(s),
            F(h),
            F(passage_point(gamma, next_well)),
            F(math.asin(gamma)),  # well bottom
        )

    @jit
    def init(coef, seed, stream, realization):
        return (np.int64(0), coef[6], F(0.0)) + normals4(seed, stream, realization, _DRAW0)

    @jit
    def advance(state, coef, max_steps, seed, stream, realization):
        # state carries this block's four normals; the next block's are drawn here, off
        # the critical path of the integration (software pipelining)
        k, phi, v, z0, z1, z2, z3 = state
        following = normals4(seed, stream, realization, (k >> 2) + 1)
        now, status = block(k, phi, v, z0, z1, z2, z3, coef[0], coef[1], coef[2], coef[3], coef[4], coef[5],
                            max_steps)
        return now + following, status

    return FirstPassageKernel(prepare, init, advance)


@rng.fjit
def _thermal_phase(V0, gamma, theta, seed, stream, realization):
    """Sample phi from exp(-U(phi)/theta) between the two barrier tops around the well.

    Rejection from a uniform proposal on ``(-pi - asin(gamma), pi - asin(gamma))``:
    accepted with probability ``exp(-(U(phi) - U(well bottom))/theta) <= 1``, exact.
    """
    a = math.asin(gamma)
    left, width = -math.pi - a, 2.0 * math.pi
    u_min = -V0 * (math.cos(a) + gamma * a)
    draw = WARM_START_DRAW
    while True:
        x0, x1, x2, x3 = rng.philox_block(seed, stream, realization, draw)
        for xa, xb in ((x0, x1), (x2, x3)):
            phi = left + width * rng.uint32_to_uniform_f64(xa)
            excess = -V0 * (math.cos(phi) + gamma * phi) - u_min
            if rng.uint32_to_uniform_f64(xb) < math.exp(-excess / theta):
                return phi
        draw += 1


@functools.cache
def switching_kernel(model: str, dtype: str, passage: str = "barrier_top", integrator: str = "euler"):
    """Switching under a linear bias ramp (Pierro et al. 2018, Algorithm 3).

    Step ``k`` (1-based) uses ``gamma_k = gamma_start + k * dgamma``; a block of four
    steps uses the bias at the block's centre, so the ramp is exact on average and off by
    at most 1.5 ``dgamma`` within a block. The passage threshold is the barrier top of the
    current bias, ``pi - arcsin(min(gamma, 1))``. With ``warm`` set, each realization
    starts from the Boltzmann distribution of the well at ``gamma_start`` (phase by
    exact rejection sampling, velocity Maxwellian); otherwise at rest at the well bottom.
    ``limit`` (a step count carried in float64, exact below 2**53) ends a realization
    when the ramp reaches ``gamma_end``.
    """
    F, block = _integrator(model, dtype, integrator)
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    overdamped = model == "overdamped"
    next_well = passage == "next_well"
    baoab = integrator == "baoab"
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, D, h = par[0], par[1], par[2], par[3]
        dgamma, gamma_start, warm, limit = par[4], par[5], par[6], par[7]
        decay, b, s = step_coefficients(V0, damping, D, h, overdamped, baoab)
        return (
            F(decay),
            F(b),
            b,  # float64: bias coefficient per unit gamma
            F(s),
            F(h),
            gamma_start,
            dgamma,
            np.int64(limit),
            V0,
            D / damping,  # theta
            warm != 0.0,
        )

    @jit
    def init(coef, seed, stream, realization):
        gamma0 = coef[5]
        if coef[10]:
            phi = _thermal_phase(coef[8], gamma0, coef[9], seed, stream, realization)
            maxwell = rng.normals4_f64(seed, stream, realization, WARM_START_DRAW - 1)[0]
            v = 0.0 if overdamped else math.sqrt(coef[9]) * maxwell
            return (np.int64(0), F(phi), F(v)) + normals4(seed, stream, realization, _DRAW0)
        return (np.int64(0), F(math.asin(min(gamma0, 1.0))), F(0.0)) + normals4(seed, stream, realization, _DRAW0)

    @jit
    def advance(state, coef, max_steps, seed, stream, realization):
        k, phi, v, z0, z1, z2, z3 = state  # as in escape_kernel: this block's normals
        following = normals4(seed, stream, realization, (k >> 2) + 1)
        gamma = coef[5] + (np.float64(k) + 2.5) * coef[6]  # centre of steps k+1 .. k+4
        top = F(passage_point(gamma, next_well))
        now, status = block(k, phi, v, z0, z1, z2, z3, coef[0], coef[1], F(coef[2] * gamma), coef[3], coef[4], top,
                            min(max_steps, coef[7]))
        return now + following, status

    return FirstPassageKernel(prepare, init, advance)


@rng.fjit
def _thermal_state(V0, gamma, theta, overdamped, seed, stream, realization):
    """``(phi, v)`` from the Boltzmann distribution of the well (see `_thermal_phase`); ``v = 0`` overdamped."""
    phi = _thermal_phase(V0, gamma, theta, seed, stream, realization)
    maxwell = rng.normals4_f64(seed, stream, realization, WARM_START_DRAW - 1)[0]
    return phi, 0.0 if overdamped else math.sqrt(theta) * maxwell


@functools.cache
def trial_kernel(model: str, dtype: str, integrator: str = "euler"):
    """Trials at constant bias for rare-event rounds (:mod:`gpuensembles.core.templates.rounds`).

    A trial starts from ``(phi, v)`` given in its row of ``starts``, or, where ``phi`` is
    NaN, from the Boltzmann distribution of the well (phase by exact rejection sampling
    between the two barrier tops, velocity Maxwellian); it steps until the first step
    whose reaction coordinate (`reaction_coordinate`) is ``>= hi`` or ``<= lo``. End rows
    are ``(phi, v, largest coordinate)``. A trial that crosses the left barrier top,
    ``-pi - arcsin(gamma)``, continues from the same state shifted by ``2 pi`` (the dynamics
    are periodic in ``phi``): the passage counted is into the well to the right of the one the
    particle last occupied, so a fall into the left well (rate ``exp(-2 pi gamma V0 / theta)``
    times the right one) neither strands a trial there nor needs a second escape. Parameter
    rows are ``V0, damping, gamma, D, h`` (`ESCAPE_PARAMETERS`); the steps are those of
    :func:`escape_kernel`.
    """
    F, euler = _step(model, dtype, integrator)
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    overdamped = model == "overdamped"
    baoab = integrator == "baoab"
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, gamma, D, h = par[0], par[1], par[2], par[3], par[4]
        decay, b, s = step_coefficients(V0, damping, D, h, overdamped, baoab)
        a = math.asin(gamma)
        u_a = -V0 * (math.cos(a) + gamma * a)
        du = -V0 * (math.cos(math.pi - a) + gamma * (math.pi - a)) - u_a
        return (F(decay), F(b), F(b * gamma), F(s), F(h), V0, gamma, D / damping,
                F(V0), F(gamma), F(u_a), F(math.pi - a), F(du), F(du / math.pi), F(-math.pi - a), F(2.0 * math.pi))

    @jit
    def coordinate(phi, v, coef):
        if overdamped:
            return phi
        return reaction_coordinate(phi, v, coef[8], coef[9], coef[10], coef[11], coef[12], coef[13])

    @jit
    def start(coef, starts, i, seed, stream, trial):
        phi, v = starts[i, 0], starts[i, 1]
        if math.isnan(phi):
            phi, v = _thermal_state(coef[5], coef[6], coef[7], overdamped, seed, stream, trial)
        phi, v = F(phi), F(v)
        return (np.int64(0), phi, v, coordinate(phi, v, coef)) + normals4(seed, stream, trial, _DRAW0)

    @jit
    def advance(state, coef, lo, hi, max_steps, seed, stream, trial):
        # up to four steps of this block's normals (the next block's drawn first, off the
        # critical path); stop at the first step whose coordinate leaves (lo, hi)
        k, phi, v, top, z0, z1, z2, z3 = state
        following = normals4(seed, stream, trial, (k >> 2) + 1)
        for j in range(min(4, max_steps - k)):
            z = z0 if j == 0 else (z1 if j == 1 else (z2 if j == 2 else z3))
            phi, v = euler(phi, v, z, coef[0], coef[1], coef[2], coef[3], coef[4])
            if phi < coef[14]:  # past the left barrier top: the same state one well to the right
                phi += coef[15]
            x = coordinate(phi, v, coef)
            top = max(top, x)
            if x >= hi:
                return (k + j + 1, phi, v, top) + following, 1
            if x <= lo:
                return (k + j + 1, phi, v, top) + following, 2
        k = min(k + 4, max_steps)
        return (k, phi, v, top) + following, (3 if k == max_steps else 0)

    @jit
    def export(state, out, i):
        out[i, 0] = state[1]
        out[i, 1] = state[2]
        out[i, 2] = state[3]

    return TrialKernel(prepare, start, advance, export)


@rng.fjit
def reaction_coordinate(phi, v, V0, gamma, u_a, top, du, slope):
    """Forward-flux coordinate of the underdamped particle: energy in the well, phase past the top.

    ``min(E, du)`` with ``E = v^2 / 2 + U(phi) - U(arcsin gamma)`` while ``phi`` is left of
    the barrier top, ``du + slope (phi - top)`` right of it (``du`` the barrier height).
    In the energy-diffusion regime of weak damping the energy, not the phase, is what
    crosses interfaces diffusively (a trajectory reaches a phase ballistically, with the
    energy it already has), and past the top the phase measures progress to the next
    well; the coordinate reaches ``du + slope (arcsin(gamma) + 2 pi - top)`` exactly when
    ``phi`` reaches the next well's bottom. All arguments in one float type.
    """
    if phi >= top:
        return du + slope * (phi - top)
    return min(v * v * 0.5 - V0 * (math.cos(phi) + gamma * phi) - u_a, du)
