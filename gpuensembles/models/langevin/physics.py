"""Scalar kernels of a driven Brownian particle in a periodic potential (Stewart-McCumber model).

    underdamped:  x'' + g x' = -V'(x) + a cos(w t) + f + sqrt(2 g kT) xi(t)
    overdamped:         g x' = -V'(x) + a cos(w t) + f + sqrt(2 g kT) xi(t)
    V(x) = V0 sin(2 pi x),   <xi(t) xi(s)> = delta(t - s)

(Januszewski & Kostur 2010, Eq. 1; the overdamped form is its large-friction limit). Integrators:

* ``srk2`` -- the seed's stochastic Runge-Kutta scheme of 2nd order (Algorithm 2), i.e.
  the stochastic Heun method for additive noise, applied to ``(x, v)``: an Euler
  predictor, then the average of the two drifts, with the *same* normal in both stages.
* ``euler`` -- Euler-Maruyama.

Long runs lose no accuracy: the position is kept as an integer winding count plus a
float in ``[-1/2, 1/2)``, so ``cos(2 pi x)`` is only ever evaluated on ``[-pi, pi)``
(where fast hardware ``cos`` is accurate), and the drive phase ``w t mod 2 pi`` is
recomputed in float64 from the int64 step count every four steps instead of being
accumulated (Januszewski & Kostur 2010, Sect. 5); within the four steps the drive phasor is turned by
``w h`` per step with two multiply-adds.

All functions are allocation-free ``numba.jit`` functions shared by the CPU and CUDA
targets through :class:`gpuensembles.TrajectoryKernel`. A parameter row is
``a, w, g, f, kT, V0, h`` (float64).
"""

import functools
import math

import numpy as np

from ...core import rng
from ...core.templates.trajectories import TrajectoryKernel

PARAMETERS = ("a", "w", "g", "f", "kT", "V0", "h")
MODELS = ("underdamped", "overdamped")
INTEGRATORS = ("srk2", "euler")
STARTS = ("rest", "uniform")

#: First Philox block of the draws that sample the initial state (far above any step's).
START_DRAW = np.int64(1) << np.int64(62)


@functools.cache
def kernel(model: str, integrator: str, start: str, dtype: str):
    """The :class:`~gpuensembles.TrajectoryKernel` of one model variant."""
    F = np.float32 if dtype == "float32" else np.float64
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    overdamped = model == "overdamped"
    srk2 = integrator == "srk2"
    uniform_start = start == "uniform"
    half, one, two_pi = F(0.5), F(1.0), F(2.0 * math.pi)
    jit = rng.fjit

    @jit
    def prepare(par):
        a, w, g, f, kT, V0, h = par[0], par[1], par[2], par[3], par[4], par[5], par[6]
        # overdamped: the drift is divided by g and the noise is sqrt(2 kT h / g)
        scale = 1.0 / g if overdamped else 1.0
        noise = math.sqrt(2.0 * kT * h / g) if overdamped else math.sqrt(2.0 * g * kT * h)
        return (
            F(a * scale),  # drive amplitude
            F(f * scale),  # static force
            F(2.0 * math.pi * V0 * scale),  # -V'(x) = -2 pi V0 cos(2 pi x)
            F(g),
            F(h),
            F(noise),
            w * h / (2.0 * math.pi),  # float64: drive cycles per step
            F(w * h),  # drive phase per step
            kT,
            F(math.cos(w * h)),  # rotation of the drive phasor by one step
            F(math.sin(w * h)),
        )

    @jit
    def drive_phase(coef, k):
        """``w t_k mod 2 pi`` shifted to ``[-pi, pi)``: then ``cos(w t_k) = -cos(phase)``."""
        c = coef[6] * np.float64(k)
        return F(2.0 * math.pi * (c - math.floor(c) - 0.5))

    @jit
    def force(coef, xi, drive_cos):
        return coef[1] - coef[0] * drive_cos - coef[2] * math.cos(two_pi * xi)

    @jit
    def step(coef, xi, v, drive0, drive1, z):
        """One step from ``(xi, v)``; ``drive0``/``drive1`` are ``-cos(w t)`` at its start and end."""
        g, h, s = coef[3], coef[4], coef[5] * z
        if overdamped:
            f1 = force(coef, xi, drive0)
            if not srk2:
                return xi + h * f1 + s, v
            f2 = force(coef, xi + h * f1 + s, drive1)
            return xi + half * h * (f1 + f2) + s, v
        a1 = force(coef, xi, drive0) - g * v
        if not srk2:
            return xi + h * v, v + h * a1 + s
        vp = v + h * a1 + s
        a2 = force(coef, xi + h * v, drive1) - g * vp
        return xi + half * h * (v + vp), v + half * h * (a1 + a2) + s

    @jit
    def init(coef, seed, stream, realization):
        xi, v = F(0.0), F(0.0)
        if uniform_start:
            x0, x1, x2, x3 = rng.philox_block(seed, stream, realization, START_DRAW)
            xi = F(rng.uint32_to_uniform_f64(x0) - 0.5)
            if not overdamped:
                v = F(math.sqrt(coef[8]) * rng.normals4_f64(seed, stream, realization, START_DRAW + 1)[0])
        base = drive_phase(coef, np.int64(0))
        z0, z1, z2, z3 = normals4(seed, stream, realization, np.int64(0))
        # (k, winding, xi, v, cos and sin of the drive phase at step k, the normals of
        # Philox block k >> 2 -- always drawn one block ahead of their use)
        return np.int64(0), np.int64(0), xi, v, math.cos(base) * one, math.sin(base) * one, z0, z1, z2, z3

    @jit
    def wrapped(xi, wind):
        """``xi`` back in ``[-1/2, 1/2)``, whole periods moved to the winding count."""
        if xi >= half or xi < -half:
            turns = math.floor(xi + half)
            return xi - F(turns), wind + np.int64(turns)
        return xi, wind

    @jit
    def one_step(coef, xi, v, wind, c, s_, z):
        """Step from phasor ``(c, s_)`` (drive ``-c``): the new state and the next phasor."""
        c1 = c * coef[9] - s_ * coef[10]
        s1 = s_ * coef[9] + c * coef[10]
        xi, v = step(coef, xi, v, -c, -c1, z)
        xi, wind = wrapped(xi, wind)
        return xi, v, wind, c1, s1

    @jit
    def advance(state, coef, n, seed, stream, realization):
        # Four steps per Philox block of normals; the next block is drawn before the four
        # steps are integrated (straight-line code the GPU overlaps with the integration).
        # The drive phasor turns by w h per step (two FMAs, no cos) and is reset in
        # float64 from the int64 step count at every block start, so it never drifts.
        k, wind, xi, v, c, s_, z0, z1, z2, z3 = state
        end = k + n
        while k < end and (k & 3) != 0:  # finish a block begun in an earlier segment
            j = k & 3
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z1 if j == 1 else (z2 if j == 2 else z3))
            k += 1
            if (k & 3) == 0:
                base = drive_phase(coef, k)
                c, s_ = math.cos(base) * one, math.sin(base) * one
                z0, z1, z2, z3 = normals4(seed, stream, realization, k >> 2)
        while k + 4 <= end:
            n0, n1, n2, n3 = normals4(seed, stream, realization, (k >> 2) + 1)
            base = drive_phase(coef, k + 4)
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z0)
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z1)
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z2)
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z3)
            c, s_ = math.cos(base) * one, math.sin(base) * one
            z0, z1, z2, z3 = n0, n1, n2, n3
            k += 4
        while k < end:  # the start of a block this segment does not finish
            j = k & 3
            xi, v, wind, c, s_ = one_step(coef, xi, v, wind, c, s_, z0 if j == 0 else (z1 if j == 1 else z2))
            k += 1
        return k, wind, xi, v, c, s_, z0, z1, z2, z3

    @jit
    def observe(state):
        return np.float64(state[1]) + np.float64(state[2]), np.float64(state[3])

    return TrajectoryKernel(prepare, init, advance, observe)
