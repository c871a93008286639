"""Counter-based random numbers: Philox4x32-10 usable from CPU code and CUDA kernels.

Every random number in the package is a pure function of
``key = (seed, stream)`` and ``counter = (draw index, realization id)``: there is no
generator state to carry, so a realization's numbers do not depend on chunking,
worker count, thread scheduling or backend.

The functions are signature-less ``numba.jit`` functions. Called from Python or a
CPU ``njit`` function they run on the CPU; called from a ``numba.cuda`` kernel,
numba-cuda compiles the same source as a device function.

References
----------
J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as
easy as 1, 2, 3", SC'11 (2011), doi:10.1145/2063384.2063405. Known-answer vectors
from the Random123 distribution (``tests/kat_vectors``).
"""

import math

import numba
import numpy as np

__all__ = [
    "NAME",
    "philox4x32",
    "philox_block",
    "uint32_to_uniform_f32",
    "uint32_to_uniform_f64",
    "normals4_f32",
    "normals4_f64",
]

#: Name recorded in the ``rng`` attribute of every output.
NAME = "Philox4x32-10 (key=(seed, stream), counter=(draw, realization)); Box-Muller normals"

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)

jit = numba.jit(nopython=True)
"""Decorator for the integer functions shared by the CPU and CUDA targets."""

#: Fast-math flags for floating-point functions shared by both targets. They are truthy
#: for numba-cuda, which then uses the hardware approximations (``lg2.approx``,
#: ``sin.approx``, ...) and fuses multiply-adds (NVVM's ``fma``); on the CPU they permit
#: approximate functions but keep NaN/inf semantics. Not ``contract``: with it, the CPU code
#: compiled in a process fused other multiply-adds than the same code loaded from the kernel
#: cache, so a cold and a warm process gave different numbers for the same seed (the float32
#: trials of forward flux sampling ended a step apart).
FASTMATH = {"afn", "arcp", "nsz"}
fjit = numba.jit(nopython=True, fastmath=FASTMATH)
"""Decorator for the floating-point functions shared by the CPU and CUDA targets."""


@jit
def mulhilo(a, m):
    """High and low uint32 words of the product of uint32 ``a`` and ``m`` (a uint64 < 2^32).

    One wide multiply on a GPU.
    """
    p = m * np.uint64(a)
    return np.uint32(p >> _SHIFT32), np.uint32(p & _MASK32)


@jit
def _round(c0, c1, c2, c3, k0, k1):
    hi0, lo0 = mulhilo(c0, _M0)
    hi1, lo1 = mulhilo(c2, _M1)
    return (
        np.uint32(hi1 ^ c1 ^ k0),
        lo1,
        np.uint32(hi0 ^ c3 ^ k1),
        lo0,
    )


@jit
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32 with 10 rounds.

    Parameters
    ----------
    c0, c1, c2, c3 : uint32
        Counter words.
    k0, k1 : uint32
        Key words.

    Returns
    -------
    tuple of 4 uint32
        The four output words, as in Random123's ``philox4x32_R(10, ctr, key)``.
    """
    c0 = np.uint32(c0)
    c1 = np.uint32(c1)
    c2 = np.uint32(c2)
    c3 = np.uint32(c3)
    k0 = np.uint32(k0)
    k1 = np.uint32(k1)
    for _ in range(9):
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
        k0 = np.uint32(k0 + _W0)
        k1 = np.uint32(k1 + _W1)
    return _round(c0, c1, c2, c3, k0, k1)


@jit
def philox_block(seed, stream, realization, draw):
    """Philox block for ``key=(seed, stream)``, ``counter=(draw lo, draw hi, rid lo, rid hi)``."""
    d = np.uint64(draw)
    r = np.uint64(realization)
    return philox4x32(
        np.uint32(d & _MASK32),
        np.uint32(d >> _SHIFT32),
        np.uint32(r & _MASK32),
        np.uint32(r >> _SHIFT32),
        np.uint32(seed),
        np.uint32(stream),
    )


_F32_SCALE = np.float32(2.0**-32)
_F32_HALF_ULP = np.float32(2.0**-33)
_F32_BELOW_ONE = np.float32(1.0 - 2.0**-24)


@fjit
def uint32_to_uniform_f32(x):
    """Map a uint32 to a float32 uniform strictly inside (0, 1).

    ``x * 2**-32 + 2**-33`` rounded to float32 and capped at the largest float32 below 1.
    The smallest value is ``2**-33`` (so Box-Muller normals reach 6.8 sigma); resolution
    near 0 is full, near 1 it is float32's ``2**-24``.
    """
    u = np.float32(x) * _F32_SCALE + _F32_HALF_ULP
    return min(u, _F32_BELOW_ONE)


@fjit
def uint32_to_uniform_f64(x):
    """Map a uint32 to a float64 uniform strictly inside (0, 1): ``(x + 1/2) * 2**-32`` exactly."""
    return (np.float64(x) + 0.5) * 2.0**-32


_F32_TWO_PI = np.float32(2.0 * math.pi)
_F32_PI = np.float32(math.pi)
_F32_MINUS_TWO = np.float32(-2.0)


@fjit
def _box_muller_f32(a, b):
    # Angle in (-pi, pi): fast sin/cos are accurate there; the shift by pi only flips signs.
    r = math.sqrt(_F32_MINUS_TWO * math.log(uint32_to_uniform_f32(a)))
    t = uint32_to_uniform_f32(b) * _F32_TWO_PI - _F32_PI
    return r * math.cos(t), r * math.sin(t)


@fjit
def _box_muller_f64(a, b):
    r = math.sqrt(-2.0 * math.log(uint32_to_uniform_f64(a)))
    t = uint32_to_uniform_f64(b) * (2.0 * math.pi) - math.pi
    return r * math.cos(t), r * math.sin(t)


@fjit
def normals4_f32(seed, stream, realization, draw):
    """Four independent standard normals (float32) from one Philox block.

    Box-Muller on both output pairs, using every output word.

    Parameters
    ----------
    seed, stream : uint32
        Key words.
    realization : int64
        Realization id (counter words 2-3).
    draw : int64
        Index of the Philox block within the realization (counter words 0-1).
    """
    x0, x1, x2, x3 = philox_block(seed, stream, realization, draw)
    z0, z1 = _box_muller_f32(x0, x1)
    z2, z3 = _box_muller_f32(x2, x3)
    return z0, z1, z2, z3


@fjit
def normals4_f64(seed, stream, realization, draw):
    """Four independent standard normals (float64) from one Philox block; see `normals4_f32`."""
    x0, x1, x2, x3 = philox_block(seed, stream, realization, draw)
    z0, z1 = _box_muller_f64(x0, x1)
    z2, z3 = _box_muller_f64(x2, x3)
    return z0, z1, z2, z3
