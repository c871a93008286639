"""Naive baselines the package is measured against, in the same run.

* ``numba_cuda_escape_steps``: a straightforward ``numba.cuda`` kernel of the seed's
  Algorithm 1 -- one thread per realization, ``numba.cuda.random`` xoroshiro128+ normals,
  no load balancing (a warp waits for its slowest lane).
* ``numpy_escape_steps``: Euler vectorised over realizations with NumPy, compacting the
  still-running realizations as they escape.

Both return ``(steps, seconds)``: integration steps actually needed and wall time.
"""

import math
import time

import numpy as np


def numba_cuda_escape_steps(*, damping, gamma, D, h, realizations, seed=1, max_steps=10**9):
    """Seed 000 Algorithm 1 as a plain numba.cuda kernel (float32, fast math)."""
    from gpuensembles import _backend

    cuda = _backend._cuda()  # applies the numpy >= 2.5 compatibility step
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_normal_float32

    @cuda.jit(fastmath=True)
    def escape(states, steps_out, a, b, c, s, hh, th, phi0, kmax):
        i = cuda.grid(1)
        if i >= steps_out.size:
            return
        phi = phi0
        v = np.float32(0.0)
        k = 0
        while k < kmax:
            r = xoroshiro128p_normal_float32(states, i)
            phi_new = phi + v * hh
            v = a * v + c - b * math.sin(phi) + s * r
            phi = phi_new
            k += 1
            if phi > th:
                break
        steps_out[i] = k

    states = create_xoroshiro128p_states(realizations, seed=seed)
    out = cuda.device_array(realizations, dtype=np.int64)
    f32 = np.float32
    args = (f32(1 - damping * h), f32(h), f32(gamma * h), f32(math.sqrt(2 * D * h)), f32(h),
            f32(math.pi - math.asin(gamma)), f32(math.asin(gamma)), np.int64(max_steps))
    threads = 128
    blocks = -(-realizations // threads)
    escape[blocks, threads](states, out, *args)  # compile + warm up
    cuda.synchronize()
    states = create_xoroshiro128p_states(realizations, seed=seed + 1)
    t0 = time.perf_counter()
    escape[blocks, threads](states, out, *args)
    cuda.synchronize()
    seconds = time.perf_counter() - t0
    return int(out.copy_to_host().sum()), seconds


def numpy_escape_steps(*, damping, gamma, D, h, realizations, seed=1, max_steps=10**9, V0=1.0, dgamma=0.0):
    """Algorithms 1 and 3 vectorised over realizations with NumPy (float64), one step per array op.

    With ``dgamma > 0`` the bias ramps from ``gamma`` (Algorithm 3, switching currents).
    """
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    phi = np.full(realizations, math.asin(gamma))
    v = np.zeros(realizations)
    s = math.sqrt(2 * D * h)
    steps = 0
    k = 0
    while phi.size and k < max_steps:
        k += 1
        bias = min(gamma + k * dgamma, 1.0)
        phi, v = phi + v * h, v + (-damping * v + V0 * (bias - np.sin(phi))) * h + s * rng.standard_normal(phi.size)
        steps += phi.size
        running = phi <= math.pi - math.asin(bias)
        if not running.all():
            phi, v = phi[running], v[running]
    return steps, time.perf_counter() - t0
