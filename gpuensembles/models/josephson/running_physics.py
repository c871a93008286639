"""Scalar kernels of the running state: switching as a voltage detector sees it, and retrapping.

An escape over a barrier top does not make a voltage: a junction of moderate damping is
often caught again in the next well (retrapped), and only a phase that keeps running shows a
voltage. Three definitions, shared by every kernel here and by the rate method
(:mod:`.rates`), make that precise (the underdamped model only):

* **relaxed into a well**: the energy above the bottom of the well the phase is in,
  ``v^2 / 2 + U(phi) - U(arcsin gamma)``, is at most ``min(theta, 0.3 Delta U)``: the
  particle has given up the energy of its escape and is back in the thermal basin of a
  well (the basin of forward flux sampling, :func:`.rates._interfaces`). Tested once per
  block of four steps.
* **wells advanced**: barrier tops crossed forward minus those crossed backward since the
  particle last relaxed into a well. The phase is kept within one well, ``(-pi - arcsin
  gamma, pi - arcsin gamma]``, by shifting it by ``2 pi`` at each crossing (the dynamics
  are periodic), so float32 keeps its precision over any number of wells.
* **running state**: ``running_wells`` wells advanced. Its time is that of the crossing
  that took the phase out of the well of its last relaxation for the last time (from 0
  wells advanced to 1): the escape that started the run, after any recrossings.

A detector that integrates the voltage over a window ``tau`` and fires at a fraction ``f`` of
the running voltage ``I R`` corresponds to ``running_wells ~ f * gamma * V0 / damping * tau /
(2 pi)`` (the phase runs at ``gamma V0 / damping`` per time unit).

Kernels:

* :func:`voltage_switching_kernel` -- the bias ramped up (as in
  :func:`.physics.switching_kernel`, with the same steps and random numbers), until the
  running state; the step recorded is that of the escape that started the run.
* :func:`retrapping_kernel` -- the bias ramped *down* from the running state, until the
  particle relaxes into a well; the step recorded is that of its last forward crossing.
* :func:`run_trial_kernel` -- trials at constant bias from escaped states (rare-event
  rounds, :mod:`gpuensembles.core.templates.rounds`): the coordinate is the number of wells
  advanced, and a trial fails when the particle relaxes into a well.
"""

import functools
import math

import numpy as np

from ...core import rng
from ...core.templates.first_passage import FirstPassageKernel
from ...core.templates.rounds import CENSORED, REACHED, RETURNED, RUNNING, TrialKernel
from .physics import _DRAW0, SWITCHING_PARAMETERS, WARM_START_DRAW, _step, _thermal_phase, step_coefficients

VOLTAGE_PARAMETERS = SWITCHING_PARAMETERS + ("wells",)
RETRAPPING_PARAMETERS = ("V0", "damping", "D", "h", "dgamma", "gamma_start", "limit")
#: Fraction of the barrier below which the basin of a well ends, whatever the temperature.
BASIN_BARRIER_FRACTION = 0.3

_TWO_PI = 2.0 * math.pi


@rng.fjit
def well_levels(gamma, V0, theta):
    """``(bottom, top, left top, U(bottom), basin)`` of the well at bias ``gamma`` (float64).

    The well spans ``(-pi - a, pi - a]`` with ``a = arcsin(gamma)``; ``basin`` is the energy
    above its bottom below which the particle has relaxed into it, ``min(theta, 0.3 Delta U)``.
    Above ``gamma = 1`` there is no well: the levels of ``gamma = 1``, and a basin of 0.
    """
    g = min(gamma, 1.0)
    a = math.asin(g)
    cos_a = math.sqrt(1.0 - g * g)
    barrier = 2.0 * V0 * (cos_a - g * (0.5 * math.pi - a))
    return a, math.pi - a, -math.pi - a, -V0 * (cos_a + gamma * a), min(theta, BASIN_BARRIER_FRACTION * barrier)


@rng.fjit
def _normal(j, z0, z1, z2, z3):
    """The ``j``-th of a block's four normals."""
    return z0 if j == 0 else (z1 if j == 1 else (z2 if j == 2 else z3))


@rng.fjit
def _relaxed(phi, v, V0, gamma, u_bottom, basin):
    """Has the particle at ``(phi, v)`` relaxed into its well (energy above the bottom at most ``basin``)?

    All arguments in the working float type; ``phi`` in the well's frame. Both sides are
    doubled, so no float64 literal promotes float32 arithmetic.
    """
    return v * v - (V0 + V0) * (math.cos(phi) + gamma * phi) - (u_bottom + u_bottom) <= basin + basin


@functools.cache
def voltage_switching_kernel(dtype: str, integrator: str = "euler"):
    """Switching into the running state under a rising bias ramp (module docstring).

    Parameter rows are `VOLTAGE_PARAMETERS`: those of :func:`.physics.switching_kernel`
    and ``wells`` (``running_wells``). The initial state, the ramp, the steps and the random
    numbers are those of ``switching_kernel``, so up to the first barrier crossing a
    realization follows the same path under both criteria. The recorded step count is that
    of the escape that started the run: the last crossing from 0 wells advanced to 1.
    """
    F, euler = _step("underdamped", dtype, integrator)
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    baoab = integrator == "baoab"
    two_pi = F(_TWO_PI)
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, D, h = par[0], par[1], par[2], par[3]
        dgamma, gamma_start, warm, limit, wells = par[4], par[5], par[6], par[7], par[8]
        decay, b, s = step_coefficients(V0, damping, D, h, False, baoab)
        return (F(decay), F(b), b, F(s), F(h), gamma_start, dgamma, np.int64(limit), V0, D / damping, warm != 0.0,
                np.int64(wells), F(V0))

    @jit
    def init(coef, seed, stream, realization):
        gamma0 = coef[5]
        if coef[10]:
            phi = _thermal_phase(coef[8], gamma0, coef[9], seed, stream, realization)
            v = math.sqrt(coef[9]) * rng.normals4_f64(seed, stream, realization, WARM_START_DRAW - 1)[0]
        else:
            phi, v = math.asin(min(gamma0, 1.0)), 0.0
        return (np.int64(0), F(phi), F(v), np.int64(0), np.int64(-1)) + normals4(seed, stream, realization, _DRAW0)

    @jit
    def advance(state, coef, max_steps, seed, stream, realization):
        k, phi, v, wells, since, z0, z1, z2, z3 = state
        following = normals4(seed, stream, realization, (k >> 2) + 1)
        gamma = coef[5] + (np.float64(k) + 2.5) * coef[6]  # centre of steps k+1 .. k+4, as switching_kernel
        _, top, left, u_bottom, basin = well_levels(gamma, coef[8], coef[9])
        top, left, c = F(top), F(left), F(coef[2] * gamma)
        end = min(max_steps, coef[7])
        for j in range(min(4, end - k)):
            phi, v = euler(phi, v, _normal(j, z0, z1, z2, z3), coef[0], coef[1], c, coef[3], coef[4])
            if phi > top:
                phi -= two_pi
                wells += 1
                if wells == 1:  # out of the well of the last relaxation: a run starts
                    since = k + j + 1
                if wells >= coef[11]:
                    return (since, phi, v, wells, since) + following, 1
            elif phi < left:
                phi += two_pi
                wells -= 1
        k = min(k + 4, end)
        if _relaxed(phi, v, coef[12], F(gamma), F(u_bottom), F(basin)):
            wells, since = np.int64(0), np.int64(-1)
        return (k, phi, v, wells, since) + following, (2 if k >= end else 0)

    return FirstPassageKernel(prepare, init, advance)


@functools.cache
def retrapping_kernel(dtype: str, integrator: str = "euler"):
    """Retrapping under a falling bias ramp, from the running state (module docstring).

    Parameter rows are `RETRAPPING_PARAMETERS`. Step ``k`` (1-based) has the bias
    ``gamma_start - k * dgamma`` (a block of four steps uses its centre's, as
    :func:`.physics.switching_kernel` does; float64 from the int64 step count). The
    particle starts at the bottom of a well with the velocity ``gamma_start V0 / damping +
    2 sqrt(V0)``: the running (ohmic) velocity, plus a kinetic energy of ``2 V0`` that clears
    any barrier, so it starts above the running orbit, which it joins within a few
    ``1 / damping`` (at the ohmic velocity alone, near ``I_r`` at large ``Q``, it would start
    below the orbit and be caught at once); ``limit`` steps end a realization where the
    ramp reaches ``gamma_end``. The
    recorded step count is that of the last forward barrier crossing before the particle
    relaxed into a well (0 if it never crossed one).
    """
    F, euler = _step("underdamped", dtype, integrator)
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    baoab = integrator == "baoab"
    two_pi = F(_TWO_PI)
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, D, h, dgamma, gamma_start, limit = par[0], par[1], par[2], par[3], par[4], par[5], par[6]
        decay, b, s = step_coefficients(V0, damping, D, h, False, baoab)
        return (F(decay), F(b), b, F(s), F(h), gamma_start, dgamma, np.int64(limit), V0, D / damping, F(V0),
                F(gamma_start * V0 / damping + 2.0 * math.sqrt(V0)))

    @jit
    def init(coef, seed, stream, realization):
        phi = F(math.asin(min(coef[5], 1.0)))
        return (np.int64(0), phi, coef[11], np.int64(0)) + normals4(seed, stream, realization, _DRAW0)

    @jit
    def advance(state, coef, max_steps, seed, stream, realization):
        k, phi, v, last, z0, z1, z2, z3 = state
        following = normals4(seed, stream, realization, (k >> 2) + 1)
        gamma = coef[5] - (np.float64(k) + 2.5) * coef[6]
        _, top, left, u_bottom, basin = well_levels(gamma, coef[8], coef[9])
        top, left, c = F(top), F(left), F(coef[2] * gamma)
        end = min(max_steps, coef[7])
        for j in range(min(4, end - k)):
            phi, v = euler(phi, v, _normal(j, z0, z1, z2, z3), coef[0], coef[1], c, coef[3], coef[4])
            if phi > top:
                phi -= two_pi
                last = k + j + 1
            elif phi < left:
                phi += two_pi
        k = min(k + 4, end)
        if _relaxed(phi, v, coef[10], F(gamma), F(u_bottom), F(basin)):
            return (last, phi, v, last) + following, 1
        return (k, phi, v, last) + following, (2 if k >= end else 0)

    return FirstPassageKernel(prepare, init, advance)


@functools.cache
def run_trial_kernel(dtype: str, integrator: str = "euler"):
    """Trials at constant bias from escaped states, until the running state or a relaxation.

    For the rare-event rounds of :mod:`gpuensembles.core.ffs`. Parameter rows are
    ``V0, damping, gamma, D, h`` (:data:`.physics.ESCAPE_PARAMETERS`); a start row is
    ``(phi, v, wells)`` with ``phi`` in the well's frame ``(-pi - a, pi - a]``. The
    coordinate is ``x = wells + 1 + (phi - (pi - a)) / (2 pi)``: continuous across the
    shifts, ``x = N`` when the ``N``-th barrier top is crossed, about 2 at the next well's
    bottom. A trial ends with ``REACHED`` at the first step with ``x >= hi``, ``RETURNED``
    when ``x <= lo`` or when it relaxes into a well (tested after each block of four
    steps), or ``CENSORED`` at ``max_steps``. End rows are ``(phi, v, wells, largest x)``.
    """
    F, euler = _step("underdamped", dtype, integrator)
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    baoab = integrator == "baoab"
    two_pi = F(_TWO_PI)
    per_well = 1.0 / _TWO_PI
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, gamma, D, h = par[0], par[1], par[2], par[3], par[4]
        decay, b, s = step_coefficients(V0, damping, D, h, False, baoab)
        _, top, left, u_bottom, basin = well_levels(gamma, V0, D / damping)
        return (F(decay), F(b), F(b * gamma), F(s), F(h), F(top), F(left), F(V0), F(gamma), F(u_bottom), F(basin))

    @jit
    def coordinate(phi, wells, coef):
        return np.float64(wells) + 1.0 + np.float64(phi - coef[5]) * per_well

    @jit
    def start(coef, starts, i, seed, stream, trial):
        phi, v, wells = F(starts[i, 0]), F(starts[i, 1]), np.int64(starts[i, 2])
        return (np.int64(0), phi, v, wells, coordinate(phi, wells, coef)) + normals4(seed, stream, trial, _DRAW0)

    @jit
    def advance(state, coef, lo, hi, max_steps, seed, stream, trial):
        k, phi, v, wells, largest, z0, z1, z2, z3 = state
        following = normals4(seed, stream, trial, (k >> 2) + 1)
        for j in range(min(4, max_steps - k)):
            phi, v = euler(phi, v, _normal(j, z0, z1, z2, z3), coef[0], coef[1], coef[2], coef[3], coef[4])
            if phi > coef[5]:
                phi -= two_pi
                wells += 1
            elif phi < coef[6]:
                phi += two_pi
                wells -= 1
            x = coordinate(phi, wells, coef)
            largest = max(largest, x)
            if x >= hi:
                return (k + j + 1, phi, v, wells, largest) + following, REACHED
            if x <= lo:
                return (k + j + 1, phi, v, wells, largest) + following, RETURNED
        k = min(k + 4, max_steps)
        if _relaxed(phi, v, coef[7], coef[8], coef[9], coef[10]):
            return (k, phi, v, wells, largest) + following, RETURNED
        return (k, phi, v, wells, largest) + following, (CENSORED if k == max_steps else RUNNING)

    @jit
    def export(state, out, i):
        out[i, 0] = state[1]
        out[i, 1] = state[2]
        out[i, 2] = state[3]
        out[i, 3] = state[4]

    return TrialKernel(prepare, start, advance, export)
