"""Globally coupled oscillators (Kuramoto): mean-field and pairwise (K_ij) templates.

One system of ``N`` oscillators is advanced by Euler-Maruyama steps; every ``every``
steps the order parameter ``r e^{i psi} = (1/N) sum_j e^{i x_j}`` and a phase histogram
are recorded. Oscillator ``i`` at step ``k`` takes normal ``i % 4`` of Philox block
``k * ceil(N / 4) + i // 4``, in both templates, so the two paths use the same noise.

* Mean field (Januszewski & Kostur 2010, PROG3): ``sum_j sin(x_j - x_i) = cos(x_i) S - sin(x_i) C`` with
  ``S, C = sum_j (sin, cos)(x_j)``. On CUDA one cooperative launch runs all steps: each
  block reduces its partial sums, a grid-wide barrier follows, and every block adds the
  partials in the same fixed order, so there is no host round trip per step and the run is
  deterministic on a given device. The CPU sums fixed tiles in a fixed order (the same
  numbers for any thread count).
* Pairwise (PROG2): ``sum_j K_ij sin(x_j - x_i)``, O(N^2) per step, tiled through shared
  memory on CUDA (one launch per step; a sample copies the phases to the host).
"""

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..backend import (
    bind_cuda,
    build_for,
    cached,
    compiled,
    copy_back,
    kernel_options,
    kernel_variant,
    launching,
    out_of_memory_as_memory_error,
    simulating_cuda,
)

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)


@dataclass(frozen=True)
class OscillatorKernel:
    """Scalar pieces of one oscillator step (``numba.jit``, no signatures).

    Attributes
    ----------
    step : callable
        ``step(x, omega, coupling, h_g, s, z) -> x``: one Euler-Maruyama step of
        ``g x' = omega + coupling + sqrt(2 g kT) xi`` (``h_g = h / g``, ``s`` the noise
        amplitude), wrapped to ``[-pi, pi)``.
    noise : callable
        ``noise(s, seed, stream, rid, draw) -> (z0, z1, z2, z3)``: four normals (zeros when
        ``s == 0``, without drawing).
    """

    step: Callable
    noise: Callable


_TILE = 256  # groups of four oscillators per CPU tile / CUDA block
_MAX_BINS = 1024

#: Variants of the mean-field kernel, chosen at run time by the environment variable
#: ``GPUENSEMBLES_KURAMOTO_KERNEL`` (benchmarks compare them; ``default`` is what users get).
#: Each is ``(coalesced, float32_partials, alternate)``:
#:
#: * ``coalesced`` (CUDA only): a warp steps 128 consecutive oscillators per pass, lane ``l``
#:   oscillators ``l, l + 32, l + 64, l + 96`` (one 128-byte access per load or store instead
#:   of four strided ones); each lane still draws Philox block ``i // 4`` for its group of four
#:   and hands the normals over through shared memory, so every oscillator gets the same noise.
#:   A lane issues the loads of all four of its phases and frequencies before it draws its
#:   normals and before any store: the compiler, which cannot rule out that ``x`` and ``omega``
#:   overlap, otherwise keeps each load behind the previous store, and a lane has only two
#:   loads in flight.
#: * ``float32_partials`` (CUDA and CPU): each thread (CPU: each tile) adds its ``sin`` and
#:   ``cos`` in float32; the blocks' (tiles') partial sums are added in float64 as before.
#: * ``alternate`` (CUDA only): odd steps walk the tiles from the end, so the first oscillators
#:   a step reads are the last the previous one wrote, still in L2.
#:
#: Every variant updates each oscillator with the same arithmetic and the same normals; only
#: the order (and, for float32 partials, the precision) of the order-parameter sums changes.
#: ``default`` is the coalesced, float32-partials, alternating kernel: on an H200 (N = 2^24)
#: it ran 2.97e11 / 2.59e11 oscillator-steps/s at kT = 0 / 1 (91 % / 79 % of the copy bound),
#: against 2.52e11 / 1.89e11 before full tiles skipped their bounds checks, 1.80e11 / 1.53e11
#: before its loads were hoisted and 1.57e11 / 1.54e11 for ``strided``, the first default
#: (docs/performance.rst).
MEAN_FIELD_VARIANTS = {
    "default": (True, True, True),
    "strided": (False, False, False),
    "coalesced": (True, False, False),
    "coalesced-f32": (True, True, False),
}
VARIANT_VARIABLE = "GPUENSEMBLES_KURAMOTO_KERNEL"


def mean_field_variant() -> str:
    """The mean-field kernel variant named by ``GPUENSEMBLES_KURAMOTO_KERNEL`` (``default`` when unset)."""
    return kernel_variant(VARIANT_VARIABLE, MEAN_FIELD_VARIANTS)


def mean_field_runner(kernel: OscillatorKernel, backend: str, variant: str | None = None):
    """``run(x, omega, kn, h_g, s, steps, every, seed, stream, rid, r, psi, hist)`` for one system.

    ``x`` (float32, updated in place) and ``omega`` (float32) hold the phases and natural
    frequencies; the coupling is ``kn * sum_j sin(x_j - x_i)``. After step ``(m + 1) *
    every`` it writes ``r[m]``, ``psi[m]`` and adds the phases to ``hist[m, :]`` (int64,
    zeroed by the caller; equal bins over ``[-pi, pi)``). ``variant``: a key of
    :data:`MEAN_FIELD_VARIANTS` (default: :func:`mean_field_variant`).
    """
    return _mean_field_runner(kernel, backend, variant or mean_field_variant())


@functools.cache
def _mean_field_runner(kernel, backend, variant):
    if variant not in MEAN_FIELD_VARIANTS:
        raise ValueError(f"variant must be one of {list(MEAN_FIELD_VARIANTS)}, got {variant!r}")
    return build_for(backend, kernel, functools.partial(_cpu_mean_field, variant=variant),
                     functools.partial(_cuda_mean_field, variant=variant))


@functools.cache
def pairwise_runner(kernel: OscillatorKernel, backend: str):
    """As :func:`mean_field_runner` with a coupling matrix: ``run(x, omega, KT, h_g, s, ...)``.

    ``KT`` is the *transpose* of ``K`` (float32, C order): ``KT[j, i] = K_ij``, so that
    neighbouring threads read neighbouring addresses.
    """
    return build_for(backend, kernel, _cpu_pairwise, _cuda_pairwise)


@numba.njit
def _bin(x, bins):
    b = np.int64((x + math.pi) * (bins / (2.0 * math.pi)))
    return min(max(b, 0), bins - 1)


@cached
@numba.njit
def _record(x, m, r, psi, hist):
    """Order parameter and histogram of the phases ``x`` into sample ``m`` (host side)."""
    s = 0.0
    c = 0.0
    bins = hist.shape[1]
    for i in range(x.size):
        s += math.sin(x[i])
        c += math.cos(x[i])
        hist[m, _bin(x[i], bins)] += 1
    r[m] = math.sqrt(s * s + c * c) / x.size
    psi[m] = math.atan2(s, c)


def _cpu_mean_field(kernel, variant="default"):
    step, noise = kernel.step, kernel.noise
    zero = np.float32(0.0) if MEAN_FIELD_VARIANTS[variant][1] else 0.0  # a tile's sums in float32 or float64

    @cached
    @numba.njit(parallel=True)
    def tile_sums(x, ps, pc, ngroups, kn, h_g, s, omega, k, seed, stream, rid, advance):
        n = x.size
        for t in numba.prange(ps.size):
            acc_s, acc_c = zero, zero
            for g in range(t * _TILE, min(ngroups, (t + 1) * _TILE)):
                z = noise(s if advance else np.float32(0.0), seed, stream, rid, k * ngroups + g)
                for j in range(4):
                    i = 4 * g + j
                    if i < n:
                        if advance:
                            xi = x[i]
                            coupling = math.cos(xi) * kn[0] - math.sin(xi) * kn[1]
                            x[i] = step(xi, omega[i], coupling, h_g, s, z[j])
                        acc_s += math.sin(x[i])
                        acc_c += math.cos(x[i])
            ps[t] = acc_s
            pc[t] = acc_c
        return ps.sum(), pc.sum()  # serial, in tile order

    def run(x, omega, kn, h_g, s, steps, every, seed, stream, rid, r, psi, hist):
        n = x.size
        ngroups = -(-n // 4)
        ps, pc = np.empty(-(-ngroups // _TILE)), np.empty(-(-ngroups // _TILE))
        F = np.float32
        args = (np.float32(h_g), np.float32(s), omega)
        S, C = tile_sums(x, ps, pc, ngroups, np.zeros(2, F), *args, 0, np.uint32(seed), np.uint32(stream),
                         np.int64(rid), False)
        for k in range(steps):
            coupling = np.array([kn * S, kn * C], dtype=F)
            S, C = tile_sums(x, ps, pc, ngroups, coupling, *args, k, np.uint32(seed), np.uint32(stream),
                             np.int64(rid), True)
            if (k + 1) % every == 0:
                _record(x, (k + 1) // every - 1, r, psi, hist)

    return run


def _cpu_pairwise(kernel):
    step, noise = kernel.step, kernel.noise

    @cached
    @numba.njit(parallel=True)
    def pair_step(x, x_new, omega, KT, h_g, s, k, seed, stream, rid):
        n = x.size
        ngroups = (n + 3) // 4
        for i in numba.prange(n):
            xi = x[i]
            coupling = np.float32(0.0)
            for j in range(n):
                coupling += KT[j, i] * math.sin(x[j] - xi)
            z = noise(s, seed, stream, rid, k * ngroups + i // 4)
            x_new[i] = step(xi, omega[i], coupling, h_g, s, z[i % 4])

    def run(x, omega, KT, h_g, s, steps, every, seed, stream, rid, r, psi, hist):
        other = np.empty_like(x)
        now = x
        for k in range(steps):
            pair_step(now, other, omega, KT, np.float32(h_g), np.float32(s), k, np.uint32(seed), np.uint32(stream),
                      np.int64(rid))
            now, other = other, now
            if (k + 1) % every == 0:
                _record(now, (k + 1) // every - 1, r, psi, hist)
        if now is not x:
            x[:] = now

    return run


def _cuda_mean_field(kernel, variant="default"):
    bind_cuda(globals())
    step, noise = kernel.step, kernel.noise
    threads = 8 if simulating_cuda() else _TILE
    coalesced, float32_partials, alternate = MEAN_FIELD_VARIANTS[variant]

    @cuda.jit(device=True)
    def block_sum(sh, a, b):
        # fixed-shape tree over the block: the same order on every run
        t = cuda.threadIdx.x
        sh[0, t] = a
        sh[1, t] = b
        cuda.syncthreads()
        half = threads // 2
        while half > 0:
            if t < half:
                sh[0, t] += sh[0, t + half]
                sh[1, t] += sh[1, t + half]
            cuda.syncthreads()
            half //= 2
        a, b = sh[0, 0], sh[1, 0]
        cuda.syncthreads()
        return a, b

    @cuda.jit(device=True)
    def total(sh, partials, buf):
        # every block adds all blocks' partials in the same order
        a, b = 0.0, 0.0
        for q in range(cuda.threadIdx.x, partials.shape[2], threads):
            a += partials[buf, 0, q]
            b += partials[buf, 1, q]
        return block_sum(sh, a, b)

    @cached
    @cuda.jit(fastmath=True, **kernel_options("mean_field"))
    def mean_field_kernel(x, omega, kn, h_g, s, steps, every, seed, stream, rid, partials, r, psi, hist):
        grid = cuda.cg.this_grid()
        sh = cuda.shared.array((2, threads), dtype=numba.float64)
        shist = cuda.shared.array(_MAX_BINS, dtype=numba.int32)
        n = x.shape[0]
        bins = hist.shape[1]
        ngroups = (n + 3) // 4
        t = cuda.threadIdx.x
        first = cuda.blockIdx.x * threads + t
        stride = cuda.gridDim.x * threads
        for q in range(t, bins, threads):
            shist[q] = 0
        acc_s, acc_c = 0.0, 0.0
        for g in range(first, ngroups, stride):
            for j in range(4):
                if 4 * g + j < n:
                    acc_s += math.sin(x[4 * g + j])
                    acc_c += math.cos(x[4 * g + j])
        a, b = block_sum(sh, acc_s, acc_c)
        if t == 0:
            partials[0, 0, cuda.blockIdx.x] = a
            partials[0, 1, cuda.blockIdx.x] = b
        grid.sync()
        for k in range(steps):
            S, C = total(sh, partials, k & 1)
            if k > 0 and k % every == 0 and cuda.blockIdx.x == 0 and t == 0:
                r[k // every - 1] = math.sqrt(S * S + C * C) / n
                psi[k // every - 1] = math.atan2(S, C)
            cs, cc = np.float32(kn * S), np.float32(kn * C)
            sample = (k + 1) % every == 0
            acc_s, acc_c = 0.0, 0.0
            for g in range(first, ngroups, stride):
                z = noise(s, seed, stream, rid, k * ngroups + g)
                for j in range(4):
                    i = 4 * g + j
                    if i < n:
                        xi = x[i]
                        xi = step(xi, omega[i], math.cos(xi) * cs - math.sin(xi) * cc, h_g, s, z[j])
                        x[i] = xi
                        acc_s += math.sin(xi)
                        acc_c += math.cos(xi)
                        if sample:
                            cuda.atomic.add(shist, _bin(xi, bins), 1)
            a, b = block_sum(sh, acc_s, acc_c)
            if t == 0:
                partials[(k + 1) & 1, 0, cuda.blockIdx.x] = a
                partials[(k + 1) & 1, 1, cuda.blockIdx.x] = b
            if sample:
                cuda.syncthreads()
                for q in range(t, bins, threads):
                    if shist[q] != 0:
                        cuda.atomic.add(hist, ((k + 1) // every - 1, q), np.int64(shist[q]))
                        shist[q] = 0
            grid.sync()
        if cuda.blockIdx.x == 0:
            S, C = total(sh, partials, steps & 1)
            if t == 0:
                r[steps // every - 1] = math.sqrt(S * S + C * C) / n
                psi[steps // every - 1] = math.atan2(S, C)

    if coalesced:
        mean_field_kernel = _tiled_mean_field_kernel(step, noise, threads, block_sum, total, float32_partials,
                                                     alternate)

    def run(x, omega, kn, h_g, s, steps, every, seed, stream, rid, r, psi, hist):
        if hist.shape[1] > _MAX_BINS:
            raise ValueError(f"bins must be <= {_MAX_BINS}, got {hist.shape[1]}")
        ngroups = -(-x.size // 4)
        run_stream = cuda.stream()  # not the legacy default stream, which waits for every other stream
        with out_of_memory_as_memory_error(f"a system of {x.size} oscillators"):
            d_x, d_omega, d_hist = (cuda.to_device(a, stream=run_stream) for a in (x, omega, hist))
            d_r, d_psi = cuda.device_array(r.shape), cuda.device_array(psi.shape)
            args = [d_x, d_omega, np.float64(kn), np.float32(h_g), np.float32(s), np.int64(steps), np.int64(every),
                    np.uint32(seed), np.uint32(stream), np.int64(rid)]
            if simulating_cuda():
                blocks, launch = 1, mean_field_kernel  # the simulator's grid barrier spans one block
            else:
                probe = cuda.device_array((2, 2, 1))
                launch = mean_field_kernel
                fitting = compiled(launch, *args, probe, d_r, d_psi, d_hist).max_cooperative_grid_blocks(threads)
                blocks = max(1, min(fitting, -(-ngroups // threads)))
            partials = cuda.device_array((2, 2, blocks))
        with launching("mean_field", run_stream):
            launch[blocks, threads, run_stream](*args, partials, d_r, d_psi, d_hist)
        copy_back(run_stream, ((x, d_x), (r, d_r), (psi, d_psi), (hist, d_hist)))

    run.kernel = mean_field_kernel
    return run


def _tiled_mean_field_kernel(step, noise, threads, block_sum, total, float32_partials, alternate):
    """The mean-field kernel of the ``coalesced`` variants (see :data:`MEAN_FIELD_VARIANTS`).

    A warp owns tiles of ``4 * 32`` consecutive oscillators; lane ``l`` draws the four normals
    of group ``base / 4 + l`` (oscillators ``base + 4 l .. base + 4 l + 3``, the same Philox
    block as in the default kernel), stores them in shared memory at padded positions (no bank
    conflicts on either side), and after a warp barrier steps oscillators ``base + l + 32 j``.
    Under the simulator a block is one "warp" of ``threads`` lanes with a block barrier.

    Every tile but the last is full and takes a path without bounds checks; a step that
    records a sample bins the phases in a pass of its own over the same tiles, so the
    step's own loop carries no histogram code.
    """
    warp = threads if simulating_cuda() else 32
    warps = threads // warp
    tile = 4 * warp
    padded = tile + tile // 32
    zero = np.float32(0.0) if float32_partials else 0.0

    if simulating_cuda():
        @cuda.jit(device=True)
        def tile_sync():
            cuda.syncthreads()
    else:
        @cuda.jit(device=True)
        def tile_sync():
            cuda.syncwarp()

    full_tile = _tile_stepper(step, noise, warp, tile_sync, checked=False)
    edge_tile = _tile_stepper(step, noise, warp, tile_sync, checked=True)

    @cuda.jit(device=True)
    def tile_start(it, ntiles, backward):
        # the first oscillator of the warp's tile number it of this step
        return tile * (ntiles - 1 - it if backward else it)

    @cached
    @cuda.jit(fastmath=True, **kernel_options("mean_field"))
    def mean_field_tiled_kernel(x, omega, kn, h_g, s, steps, every, seed, stream, rid, partials, r, psi, hist):
        grid = cuda.cg.this_grid()
        sh = cuda.shared.array((2, threads), dtype=numba.float64)
        shist = cuda.shared.array(_MAX_BINS, dtype=numba.int32)
        zs = cuda.shared.array((warps, padded), dtype=numba.float32)
        n = x.shape[0]
        bins = hist.shape[1]
        ngroups = (n + 3) // 4
        ntiles = (n + tile - 1) // tile
        t = cuda.threadIdx.x
        lane = t % warp
        w = t // warp
        first = cuda.blockIdx.x * warps + w
        stride = cuda.gridDim.x * warps
        for q in range(t, bins, threads):
            shist[q] = 0
        acc_s, acc_c = zero, zero
        for i in range(cuda.blockIdx.x * threads + t, n, cuda.gridDim.x * threads):
            acc_s += math.sin(x[i])
            acc_c += math.cos(x[i])
        a, b = block_sum(sh, acc_s, acc_c)
        if t == 0:
            partials[0, 0, cuda.blockIdx.x] = a
            partials[0, 1, cuda.blockIdx.x] = b
        grid.sync()
        for k in range(steps):
            S, C = total(sh, partials, k & 1)
            if k > 0 and k % every == 0 and cuda.blockIdx.x == 0 and t == 0:
                r[k // every - 1] = math.sqrt(S * S + C * C) / n
                psi[k // every - 1] = math.atan2(S, C)
            cs, cc = np.float32(kn * S), np.float32(kn * C)
            backward = alternate and (k & 1) == 1
            acc_s, acc_c = zero, zero
            for it in range(first, ntiles, stride):
                base = tile_start(it, ntiles, backward)
                if base + tile <= n:
                    acc_s, acc_c = full_tile(x, omega, zs[w], lane, base, n, ngroups, cs, cc, h_g, s, seed, stream,
                                             rid, k, acc_s, acc_c)
                else:
                    acc_s, acc_c = edge_tile(x, omega, zs[w], lane, base, n, ngroups, cs, cc, h_g, s, seed, stream,
                                             rid, k, acc_s, acc_c)
            a, b = block_sum(sh, acc_s, acc_c)
            if t == 0:
                partials[(k + 1) & 1, 0, cuda.blockIdx.x] = a
                partials[(k + 1) & 1, 1, cuda.blockIdx.x] = b
            if (k + 1) % every == 0:
                # this lane's own phases of this step (the tiles it wrote), into the block's bins
                for it in range(first, ntiles, stride):
                    mine = tile_start(it, ntiles, backward) + lane
                    for j in range(4):
                        i = mine + j * warp
                        if i < n:
                            cuda.atomic.add(shist, _bin(x[i], bins), 1)
                cuda.syncthreads()
                for q in range(t, bins, threads):
                    if shist[q] != 0:
                        cuda.atomic.add(hist, ((k + 1) // every - 1, q), np.int64(shist[q]))
                        shist[q] = 0
            grid.sync()
        if cuda.blockIdx.x == 0:
            S, C = total(sh, partials, steps & 1)
            if t == 0:
                r[steps // every - 1] = math.sqrt(S * S + C * C) / n
                psi[steps // every - 1] = math.atan2(S, C)

    return mean_field_tiled_kernel


def _tile_stepper(step, noise, warp, tile_sync, checked):
    """``advance(x, omega, zs, lane, base, n, ngroups, cs, cc, h_g, s, seed, stream, rid, k, acc_s, acc_c)``.

    Steps one warp's tile of ``4 * warp`` oscillators from ``base`` (this lane: ``base + lane
    + warp j``) and returns the running sums of ``sin`` and ``cos`` of the new phases, added
    in the order ``j = 0..3``. ``zs`` is the warp's row of normals. ``checked``: the tile may
    run past ``n`` (the last one); otherwise it is full and its indices need no bounds checks.
    Indices are unsigned, so that numba emits no negative-index wraparound.
    """
    u_warp = np.uint64(warp)

    @cuda.jit(device=True)
    def load(v, i, un):
        if checked and i >= un:
            return np.float32(0.0)
        return v[i]

    @cuda.jit(device=True)
    def slot(p):
        # padded shared-memory position of tile position p: no bank conflicts either way
        return np.uint64(p + p // 32)

    @cuda.jit(device=True, fastmath=True)  # sin.approx and cos.approx, as in the kernel itself
    def advance(x, omega, zs, lane, base, n, ngroups, cs, cc, h_g, s, seed, stream, rid, k, acc_s, acc_c):
        # all eight loads of the tile before any store: the compiler cannot know that x
        # and omega do not overlap, so it keeps loads after earlier stores
        un = np.uint64(n)
        i0 = np.uint64(base + lane)
        i1 = i0 + u_warp
        i2 = i1 + u_warp
        i3 = i2 + u_warp
        x0, x1, x2, x3 = load(x, i0, un), load(x, i1, un), load(x, i2, un), load(x, i3, un)
        o0, o1, o2, o3 = load(omega, i0, un), load(omega, i1, un), load(omega, i2, un), load(omega, i3, un)
        z0, z1, z2, z3 = np.float32(0.0), np.float32(0.0), np.float32(0.0), np.float32(0.0)
        if s != 0:
            g = base // 4 + lane
            if not checked or g < ngroups:
                z = noise(s, seed, stream, rid, k * ngroups + g)
                for j in range(4):
                    zs[slot(4 * lane + j)] = z[j]
            tile_sync()
            z0, z1, z2, z3 = zs[slot(lane)], zs[slot(lane + warp)], zs[slot(lane + 2 * warp)], \
                zs[slot(lane + 3 * warp)]
        x0 = step(x0, o0, math.cos(x0) * cs - math.sin(x0) * cc, h_g, s, z0)
        x1 = step(x1, o1, math.cos(x1) * cs - math.sin(x1) * cc, h_g, s, z1)
        x2 = step(x2, o2, math.cos(x2) * cs - math.sin(x2) * cc, h_g, s, z2)
        x3 = step(x3, o3, math.cos(x3) * cs - math.sin(x3) * cc, h_g, s, z3)
        for i, xi in ((i0, x0), (i1, x1), (i2, x2), (i3, x3)):
            if not checked or i < un:
                x[i] = xi
                acc_s += math.sin(xi)
                acc_c += math.cos(xi)
        if s != 0:
            tile_sync()  # the next tile's normals overwrite these
        return acc_s, acc_c

    return advance


def _cuda_pairwise(kernel):
    bind_cuda(globals())
    step, noise = kernel.step, kernel.noise
    threads = 8 if simulating_cuda() else _TILE

    @cached
    @cuda.jit(fastmath=True)
    def pairwise_kernel(x, x_new, omega, KT, h_g, s, k, seed, stream, rid):
        tile = cuda.shared.array(threads, dtype=numba.float32)
        n = x.shape[0]
        i = cuda.grid(1)
        xi = x[min(i, n - 1)]
        coupling = np.float32(0.0)
        for start in range(0, n, threads):
            j = start + cuda.threadIdx.x
            tile[cuda.threadIdx.x] = x[j] if j < n else np.float32(0.0)
            cuda.syncthreads()
            if i < n:
                for q in range(min(threads, n - start)):
                    coupling += KT[start + q, i] * math.sin(tile[q] - xi)
            cuda.syncthreads()
        if i < n:
            z = noise(s, seed, stream, rid, k * ((n + 3) // 4) + i // 4)
            x_new[i] = step(xi, omega[i], coupling, h_g, s, z[i % 4])

    def run(x, omega, KT, h_g, s, steps, every, seed, stream, rid, r, psi, hist):
        run_stream = cuda.stream()  # not the legacy default stream, which waits for every other stream
        with out_of_memory_as_memory_error(f"a coupling matrix of {x.size}^2 oscillators"):
            now, other = cuda.to_device(x, stream=run_stream), cuda.device_array_like(x)
            d_omega, d_KT = cuda.to_device(omega, stream=run_stream), cuda.to_device(KT, stream=run_stream)
        blocks = -(-x.size // threads)
        host = np.empty_like(x)
        for k in range(steps):
            with launching("pairwise", run_stream):
                pairwise_kernel[blocks, threads, run_stream](now, other, d_omega, d_KT, np.float32(h_g), np.float32(s),
                                                             np.int64(k), np.uint32(seed), np.uint32(stream),
                                                             np.int64(rid))
            now, other = other, now
            if (k + 1) % every == 0:
                copy_back(run_stream, [(host, now)])
                _record(host, (k + 1) // every - 1, r, psi, hist)
        copy_back(run_stream, [(x, now)])

    run.kernel = pairwise_kernel
    return run
