"""Naive baselines the package is measured against, in the same run.

* ``numba_cuda_escape_steps``: a straightforward ``numba.cuda`` kernel of the seed's
  Algorithm 1 -- one thread per realization, ``numba.cuda.random`` xoroshiro128+ normals,
  no load balancing (a warp waits for its slowest lane).
* ``numpy_escape_steps``: Euler vectorised over realizations with NumPy, compacting the
  still-running realizations as they escape.
* ``numba_cuda_adjoint_walks``: adjoint Monte Carlo linear-solver walks the way the Hamilton & Lupo Pasini report
  writes them (one thread per history, xoroshiro states, global atomics).

Each GPU baseline has a ``*_launcher`` form that compiles the kernel, sets up its inputs and
returns ``launch() -> (work, seconds)``: one launch, timed on the device with CUDA events
(as the package's kernels are, see :mod:`benchmarks.measure`), so repeats reuse the set-up.
The older ``(work, seconds)`` functions call it once after a warm-up launch.
"""

import itertools
import math
import time

import numpy as np


def event_seconds(cuda, launch, stream=0) -> float:
    """Device seconds of ``launch()`` (kernel launches on ``stream``), from two CUDA events."""
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    launch()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _once(launcher):
    launcher()  # compile and warm up
    return launcher()


def numba_cuda_escape_steps(**kw):
    """``(steps, seconds)`` of one launch of :func:`numba_cuda_escape_launcher` after a warm-up."""
    return _once(numba_cuda_escape_launcher(**kw))


def numba_cuda_escape_launcher(*, damping, gamma, D, h, realizations, seed=1, max_steps=10**9):
    """Pierro et al. 2018's Algorithm 1 as a plain numba.cuda kernel (float32, fast math): ``launch() -> (steps, s)``.

    Each launch continues the xoroshiro streams of the last, so repeats draw new numbers.
    """
    from gpuensembles.core import backend as _backend

    cuda = _backend.cuda_module()  # applies the numpy >= 2.5 compatibility step
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

    def launch():
        seconds = event_seconds(cuda, lambda: escape[blocks, threads](states, out, *args))
        return int(out.copy_to_host().sum()), seconds

    return launch


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


def numba_cuda_adjoint_walks(table, sources, histories, cutoff=1e-9, seed=1):
    """``(x_sum, transitions, seconds)`` of one launch of :func:`numba_cuda_adjoint_launcher` after a small one."""
    launch = numba_cuda_adjoint_launcher(table, sources, histories, cutoff, seed)
    launch(size=128)  # compile and warm up
    transitions, seconds = launch()
    return launch.x_sum(), transitions, seconds


def numba_cuda_adjoint_launcher(table, sources, histories, cutoff=1e-9, seed=1):
    """Adjoint Monte Carlo walks as a plain numba.cuda kernel, the the Hamilton & Lupo Pasini report design.

    One thread per history (no load balancing: a warp waits for its longest walk),
    ``numba.cuda.random`` xoroshiro128+ states (one per history, initialised before the
    clock starts), a linear search of the row's CDF, every visit added to ``x`` in global
    memory with a float64 atomic. Returns ``launch(size=histories) -> (transitions, seconds)``,
    which sets up fresh states and tallies (not timed) and times the walks with CUDA events;
    ``launch.x_sum() / histories`` is then the collision estimate of ``x``.
    """
    from gpuensembles.core import backend as _backend

    cuda = _backend.cuda_module()
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float64

    @cuda.jit
    def walks(states, indptr, indices, cdf, factor, src_cdf, src_state, src_weight, cutoff, x, transitions):
        h = cuda.grid(1)
        if h >= states.shape[0]:
            return
        u = xoroshiro128p_uniform_float64(states, h)
        lo, hi = 0, src_cdf.shape[0] - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if src_cdf[mid] < u:
                lo = mid + 1
            else:
                hi = mid
        i, w = src_state[lo], src_weight[lo]
        wcut = cutoff * abs(w)
        k = 0
        while True:
            cuda.atomic.add(x, i, w)
            u = xoroshiro128p_uniform_float64(states, h)
            e = indptr[i]
            end = indptr[i + 1]
            if e == end:
                break
            while e < end - 1 and cdf[e] < u:
                e += 1
            w *= factor[e]
            i = indices[e]
            k += 1
            if abs(w) < wcut:
                break
        cuda.atomic.add(transitions, 0, k)

    arrays = [cuda.to_device(np.ascontiguousarray(a)) for a in (*table, *sources)]
    threads = 128
    n = table[0].size - 1
    last = {"calls": 0}

    def launch(size=histories):
        last["calls"] += 1
        states = create_xoroshiro128p_states(size, seed=seed + last["calls"])
        x = cuda.to_device(np.zeros(n))
        transitions = cuda.to_device(np.zeros(1, dtype=np.int64))
        cuda.synchronize()
        seconds = event_seconds(cuda, lambda: walks[-(-size // threads), threads](states, *arrays, np.float64(cutoff),
                                                                                  x, transitions))
        last["x"] = x
        return int(transitions.copy_to_host()[0]), seconds

    launch.x_sum = lambda: last["x"].copy_to_host()
    return launch


def numba_cuda_srk2_steps(**kw):
    """``(steps taken, seconds)`` of one launch of :func:`numba_cuda_srk2_launcher` after a short one."""
    launch = numba_cuda_srk2_launcher(**kw)
    launch(8)  # compile and warm up
    return launch()


def numba_cuda_srk2_launcher(*, a, w, g, f, kT, h, realizations, steps, seed=1):
    """Januszewski & Kostur 2010 PROG1 as a plain numba.cuda kernel: one thread per trajectory, SRK2, float32.

    The way the seed writes it: xoroshiro128+ normals, the position kept unwrapped and the
    time accumulated in float32 (so it is also less accurate over long runs). ``a`` is an
    array (one trajectory block per value). Returns ``launch(n_steps=steps) -> (steps taken, seconds)``.
    """
    from gpuensembles.core import backend as _backend

    cuda = _backend.cuda_module()
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_normal_float32

    f32 = np.float32
    two_pi = f32(2 * math.pi)

    @cuda.jit(fastmath=True)
    def prog1(states, amps, x_out, n_real, w_, g_, f_, s_, h_, n_steps):
        i = cuda.grid(1)
        if i >= x_out.size:
            return
        amp = amps[i // n_real]
        x, v, t = f32(0.0), f32(0.0), f32(0.0)
        for _ in range(n_steps):
            z = s_ * xoroshiro128p_normal_float32(states, i)
            a1 = f_ + amp * math.cos(w_ * t) - two_pi * math.cos(two_pi * x) - g_ * v
            vp = v + h_ * a1 + z
            a2 = f_ + amp * math.cos(w_ * (t + h_)) - two_pi * math.cos(two_pi * (x + h_ * v)) - g_ * vp
            x = x + f32(0.5) * h_ * (v + vp)
            v = v + f32(0.5) * h_ * (a1 + a2) + z
            t += h_
        x_out[i] = x

    amps = np.asarray(a, dtype=np.float32)
    n = amps.size * realizations
    states = create_xoroshiro128p_states(n, seed=seed)
    out = cuda.device_array(n, dtype=np.float32)
    d_amps = cuda.to_device(amps)
    args = (np.int64(realizations), f32(w), f32(g), f32(f), f32(math.sqrt(2 * g * kT * h)), f32(h))
    threads = 128
    blocks = -(-n // threads)

    def launch(n_steps=steps):
        return n * n_steps, event_seconds(cuda, lambda: prog1[blocks, threads](states, d_amps, out, *args,
                                                                                 np.int64(n_steps)))

    return launch


def numba_cuda_kuramoto_mean_field(*, N, K, kT, h, steps, seed=1):
    """Januszewski & Kostur 2010 PROG3 as plain numba.cuda kernels: per step a block-reduction kernel that
    adds block sums with atomics and an Euler update kernel, launched from a host loop.
    Returns ``(oscillator steps, seconds)``."""
    from gpuensembles.core import backend as _backend

    cuda = _backend.cuda_module()
    import numba
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_normal_float32

    threads = 256

    @cuda.jit(fastmath=True)
    def reduce(x, sums):
        sh = cuda.shared.array((2, 256), dtype=numba.float32)
        i = cuda.grid(1)
        t = cuda.threadIdx.x
        sh[0, t] = math.sin(x[i]) if i < x.size else np.float32(0)
        sh[1, t] = math.cos(x[i]) if i < x.size else np.float32(0)
        cuda.syncthreads()
        half = 128
        while half > 0:
            if t < half:
                sh[0, t] += sh[0, t + half]
                sh[1, t] += sh[1, t + half]
            cuda.syncthreads()
            half //= 2
        if t == 0:
            cuda.atomic.add(sums, 0, sh[0, 0])
            cuda.atomic.add(sums, 1, sh[1, 0])

    @cuda.jit(fastmath=True)
    def update(x, omega, sums, states, kn, h_, s_):
        i = cuda.grid(1)
        if i < x.size:
            xi = x[i]
            drift = omega[i] + kn * (math.cos(xi) * sums[0] - math.sin(xi) * sums[1])
            x[i] = xi + h_ * drift + s_ * xoroshiro128p_normal_float32(states, i)

    rng = np.random.default_rng(seed)
    x = cuda.to_device(rng.uniform(-np.pi, np.pi, N).astype(np.float32))
    omega = cuda.to_device(np.zeros(N, dtype=np.float32))
    sums = cuda.device_array(2, dtype=np.float32)
    states = create_xoroshiro128p_states(N, seed=seed)
    blocks = -(-N // threads)
    args = (np.float32(K / N), np.float32(h), np.float32(math.sqrt(2 * kT * h)))

    def run(n_steps):
        for _ in range(n_steps):
            sums[:] = 0  # a memset launch
            reduce[blocks, threads](x, sums)
            update[blocks, threads](x, omega, sums, states, *args)
        cuda.synchronize()

    run(2)  # compile + warm up
    t0 = time.perf_counter()
    run(steps)
    return N * steps, time.perf_counter() - t0


def device_copy_bandwidth(nbytes=2**30, repeats=5):
    """Device-to-device copy bandwidth in bytes/s (read + write counted), best of ``repeats``."""
    launch = copy_launcher(nbytes, "cuda")
    launch()
    return max(work / seconds for work, seconds in (launch() for _ in range(repeats)))


def copy_launcher(nbytes, backend):
    """``launch() -> (bytes moved, seconds)``: one copy of an ``nbytes`` array, read and write counted.

    On ``cuda``, device to device on a stream, timed with CUDA events: the faster of
    ``cudaMemcpy`` and a copy kernel that keeps four loads in flight per thread (on an H200
    the two differ by up to 15% from one process to the next; the bound is what either
    reaches). On ``cpu``, host memory with NumPy (the bound of the CPU backend), timed by the
    clock.
    """
    if backend == "cpu":
        a = np.ones(nbytes // 8)
        b = np.empty_like(a)

        def host_copy():
            t0 = time.perf_counter()
            np.copyto(b, a)
            return 2 * a.nbytes, time.perf_counter() - t0

        return host_copy
    from gpuensembles.core import backend as _backend

    cuda = _backend.cuda_module()
    a = cuda.device_array(nbytes // 4, dtype=np.float32)
    b = cuda.device_array_like(a)
    stream = cuda.stream()
    kernel = _copy_kernel(cuda)
    threads = 256
    blocks = -(-a.size // (4 * threads))

    def launch():
        memcpy = event_seconds(cuda, lambda: b.copy_to_device(a, stream=stream), stream)
        copied = event_seconds(cuda, lambda: kernel[blocks, threads, stream](a, b), stream)
        return 2 * a.nbytes, min(memcpy, copied)

    return launch


def _copy_kernel(cuda):
    @cuda.jit
    def copy(src, dst):
        # thread i copies i, i + T, i + 2T, i + 3T (T threads in all): four loads, then four stores
        i = cuda.grid(1)
        t = cuda.gridsize(1)
        n = src.size
        if i + 3 * t < n:
            a, b, c, d = src[i], src[i + t], src[i + 2 * t], src[i + 3 * t]
            dst[i], dst[i + t], dst[i + 2 * t], dst[i + 3 * t] = a, b, c, d
        else:
            for j in range(i, n, t):
                dst[j] = src[j]

    return copy


def philox_bound_launcher(L, half_sweeps=100, items_per_thread=8):
    """The randomness alone of multi-spin half-sweeps: ``launch() -> (flip attempts, seconds)``.

    A bound on any kernel that draws what the multi-spin Ising kernel draws for a word of 32
    spins, two Philox4x32-10 blocks (eight 32-bit words) with the same counters and keys,
    timed on the same ``L x L`` lattice in strips (``L / 64`` words per row of one colour).
    Each thread takes ``items_per_thread`` words, as the launched kernel does, and XORs each
    with its eight random words: no neighbour is read, nothing is compared, no lane is left
    for later. One launch runs ``half_sweeps`` half-sweeps (``L^2 / 2`` attempts each) in a
    loop, so no host time between launches enters the CUDA-event time.
    """
    from gpuensembles.core import backend as _backend
    from gpuensembles.models.ising import physics

    cuda = _backend.cuda_module()
    draw = physics.draw_block
    words_per_colour = L * (L // 64)
    key = physics.philox_key(L, physics.TAG_MULTISPIN)

    @cuda.jit
    def draws(lattice, first_half_sweep, seed, key):
        t = cuda.grid(1)
        first = np.uint32((t >> 5) * (32 * items_per_thread) + (t & 31))
        for h in range(half_sweeps):
            hs = np.uint32(first_half_sweep + h)
            for k in range(items_per_thread):
                site = np.uint32(first + np.uint32(32 * k))
                if site < np.uint32(words_per_colour):
                    a0, a1, a2, a3 = draw(hs, site, np.uint32(0), np.int64(0), seed, key)
                    b0, b1, b2, b3 = draw(hs, site, np.uint32(0), np.int64(1), seed, key)
                    at = np.uint64((hs & np.uint32(1)) * np.uint32(words_per_colour) + site)
                    lattice[at] = np.uint32(lattice[at] ^ a0 ^ a1 ^ a2 ^ a3 ^ b0 ^ b1 ^ b2 ^ b3)

    lattice = cuda.to_device(np.zeros(2 * words_per_colour, dtype=np.uint32))
    threads = 128
    blocks = -(-words_per_colour // (threads * items_per_thread))
    seed = np.uint32(1)
    launches = itertools.count(1)

    def launch():
        first_half_sweep = np.uint32(next(launches) * half_sweeps)
        seconds = event_seconds(cuda, lambda: draws[blocks, threads](lattice, first_half_sweep, seed, key))
        return half_sweeps * L * L // 2, seconds

    launch.lattice = lattice  # the device words (a test checks them against the package's draws)
    return launch
