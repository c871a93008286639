"""Scalar physics of the noisy Kuramoto model, shared by the CPU and CUDA templates.

One Euler-Maruyama step of ``g x_i' = w_i + coupling_i + sqrt(2 g kT) xi_i`` with phases
wrapped to ``[-pi, pi)``, its noise, and the quenched disorder (natural frequencies and
initial phases) drawn from a Philox stream of its own.
"""

import functools
import math

import numba
import numpy as np

from ...core import rng
from ...core.backend import cached
from ...core.templates.coupled import OscillatorKernel

#: Philox stream of the quenched disorder (frequencies, initial phases): the same for
#: every point of a sweep, so a sweep compares the same oscillators.
DISORDER_STREAM = np.uint32(0xFFFFFFFF)
_PHASE_DRAW = np.int64(1) << np.int64(40)

_F0 = np.float32(0.0)
_PI = np.float32(math.pi)
_TWO_PI = np.float32(2.0 * math.pi)
_INV_TWO_PI = np.float32(1.0 / (2.0 * math.pi))


@rng.fjit
def step(x, omega, coupling, h_g, s, z):
    """One Euler-Maruyama step, wrapped to ``[-pi, pi)`` (any number of turns)."""
    x = x + h_g * (omega + coupling) + s * z
    return x - _TWO_PI * math.floor((x + _PI) * _INV_TWO_PI)


@rng.fjit
def noise(s, seed, stream, rid, draw):
    """Four standard normals of Philox block ``draw``; zeros, without drawing, when ``s == 0``."""
    if s == 0:
        return _F0, _F0, _F0, _F0
    return rng.normals4_f32(seed, stream, rid, draw)


@functools.cache
def kernel():
    """The :class:`~gpuensembles.core.templates.coupled.OscillatorKernel` of the model."""
    return OscillatorKernel(step, noise)


@cached
@numba.njit(parallel=True)
def _disorder_uniforms(n, seed, rid, first_draw):
    """``n`` uniforms in (0, 1): word ``i % 4`` of Philox block ``first_draw + i // 4``."""
    out = np.empty(n)
    for g in numba.prange((n + 3) // 4):
        words = rng.philox_block(seed, DISORDER_STREAM, rid, first_draw + g)
        for j in range(4):
            if 4 * g + j < n:
                out[4 * g + j] = rng.uint32_to_uniform_f64(words[j])
    return out


def standard_frequencies(n, distribution, sampling, seed, rid):
    """Standard variates ``z`` (float64, shape ``(n,)``) behind the frequencies of system ``rid``.

    The frequencies are ``center + width * z`` (see :func:`natural_frequencies`). ``random``:
    independent draws; ``quantile``: the deterministic quantiles at ``(i + 1/2) / n`` (no
    sample-to-sample disorder, the usual way to approach N -> oo).
    """
    from scipy import special  # on first use: importing the package does not import scipy.special

    u = (np.arange(n) + 0.5) / n if sampling == "quantile" else _disorder_uniforms(n, np.uint32(seed), rid, 0)
    return np.tan(np.pi * (u - 0.5)) if distribution == "lorentzian" else special.ndtri(u)


def natural_frequencies(z, width, center):
    """Natural frequencies ``center + width * z`` in float32."""
    return (center + width * z).astype(np.float32)


def initial_phases(n, initial, seed, rid):
    """Phases of system ``rid`` at ``t = 0``: uniform on ``[-pi, pi)``, or all zero."""
    if initial == "synchronized":
        return np.zeros(n, dtype=np.float32)
    return (2 * np.pi * (_disorder_uniforms(n, np.uint32(seed), rid, _PHASE_DRAW) - 0.5)).astype(np.float32)
