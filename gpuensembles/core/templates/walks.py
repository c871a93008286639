"""Weighted random walks on a sparse Markov chain (Monte Carlo linear solvers)."""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..backend import (
    bind_cuda,
    build_for,
    cached,
    copy_back,
    device_zeros,
    identity,
    kernel_variant,
    launching,
    out_of_memory_as_memory_error,
    resident_on_device,
    simulating_cuda,
    simulator_copy,
)

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)



@dataclass(frozen=True)
class WalkKernel:
    """Scalar pieces of weighted random walks on a sparse Markov chain (Monte Carlo transport).

    The chain is a CSR table ``(indptr, indices, cdf, factor)``: from state ``i`` the walk
    moves to ``indices[e]`` with probability ``cdf[e] - cdf[e - 1]`` (``e`` in row ``i``)
    and multiplies its weight by ``factor[e]``. Walks start from a *source table*
    ``(src_cdf, src_state, src_weight)``.

    Attributes
    ----------
    transition : callable
        ``transition(indptr, indices, cdf, factor, state, u) -> (next_state, factor)`` for a
        uniform ``u`` in (0, 1); ``next_state < 0`` means absorbed (an empty row).
    source : callable
        ``source(src_cdf, u) -> s``: index of the source row drawn by ``u``.
    per_visit : bool
        True: a walk samples its start from the sources and every visited state adds the
        walk's weight to the state's own bin (adjoint method, collision estimator). False:
        the walk starts at source ``k // per_source`` with its weight, sums
        ``weight * score[state]`` over its visits and adds the sum to the bin of its source
        once, when it ends (forward method).
    """

    transition: Callable
    source: Callable
    per_visit: bool


@numba.njit
def _unit_interval_53(a, b):
    """A float64 uniform in (0, 1) with 53 random bits from two uint32 words."""
    return ((np.uint64(a) << np.uint64(21)) + (np.uint64(b) >> np.uint64(11)) + 0.5) * 2.0**-53


@numba.njit
def _pick(c0, c1, c2, c3, j):
    w = c0 if j == 0 else (c1 if j == 1 else (c2 if j == 2 else c3))
    return (np.float64(w) + 0.5) * 2.0**-32


def _walk_pieces(kernel):
    """``begin`` and ``advance`` of one walk, shared verbatim by the CPU and CUDA templates.

    Draw 0 of a walk's Philox stream picks its source (53-bit uniform), draws ``1 + s // 4``
    feed transitions ``s`` (one 32-bit word each).
    """
    from .. import rng

    transition, source, per_visit = kernel.transition, kernel.source, kernel.per_visit

    @numba.njit
    def begin(src_cdf, src_state, src_weight, per_source, k, seed, stream, history, cutoff):
        if per_visit:
            c = rng.philox_block(seed, stream, history, np.int64(0))
            s = source(src_cdf, _unit_interval_53(c[0], c[1]))
            bin_ = -1
        else:
            s = k // per_source
            bin_ = s
        w = src_weight[s]
        return np.int64(src_state[s]), w, cutoff * abs(w), bin_  # the state advance returns: one typing

    @numba.njit
    def advance(indptr, indices, cdf, factor, i, w, wcut, step, words, max_steps, seed, stream, history):
        """One transition; returns ``(i, w, step, words, done)``."""
        if step >= max_steps:
            return i, w, step, words, True
        if step % 4 == 0:
            words = rng.philox_block(seed, stream, history, 1 + step // 4)
        u = _pick(words[0], words[1], words[2], words[3], step % 4)
        i, f = transition(indptr, indices, cdf, factor, i, u)
        step += 1
        w *= f
        return i, w, step, words, i < 0 or abs(w) < wcut

    return begin, advance, per_visit


#: Variants of the CUDA walks, chosen at run time by ``GPUENSEMBLES_WALK_KERNEL`` (benchmarks
#: compare them; ``default`` is what users get). Each is ``(slots, warp_counter)``:
#:
#: * ``slots``: per-visit walks whose bins are in global memory keep the tallies of the last
#:   ``slots`` distinct states they visited in registers (least recently visited out first)
#:   and add a state's sum to the bins only when it leaves, or when the walk ends. A random
#:   walk on a sparse matrix comes back often (a 1D walk to one of its last 4 states 72 % of
#:   the time, a 2D one 34 %), so fewer atomics reach the bins. ``0``: every visit is one
#:   atomic add, as it is for bins in shared memory.
#: * ``warp_counter``: with bins in global memory, the lanes of a warp in one batch whose walks
#:   end together take their next walks from the batch's counter with one atomic (their
#:   leader's), not one each.
#:
#: Every variant runs the same walks; only the order in which their weights are added changes.
#: One H100, the 1D shifted Laplacian of n = 1e6, 1e7 histories (64 batches of global bins),
#: kernels, median of 7 calls: ``plain`` (the former kernel) 0.130 s, the warp counter alone
#: 0.084 s, 2 slots 0.050 s, 4 slots with a counter per lane 0.054 s, ``default`` (4 slots,
#: the warp counter) 0.033 s, also with the warp counter grouping its lanes by batch; the naive
#: kernel of the Hamilton & Lupo Pasini report 0.120 s. Bins in shared memory (the report's 2D
#: Laplacian, n = 900) are faster with neither, compiled apart: walks 0.123 s, against 0.162 s
#: with the counter or with the states' registers in the kernel (bypassed at run time).
WALK_VARIANTS = {
    "default": (4, True),
    "plain": (0, False),
}
WALK_VARIANT_VARIABLE = "GPUENSEMBLES_WALK_KERNEL"


def walk_variant() -> str:
    """The CUDA walk variant named by ``GPUENSEMBLES_WALK_KERNEL`` (``default`` when unset)."""
    return kernel_variant(WALK_VARIANT_VARIABLE, WALK_VARIANTS)


def walk_runner(kernel: WalkKernel, backend: str):
    """Compile ``kernel`` for ``backend``; return ``run(chain, sources, score, batches, ..., out)``.

    ``run(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, out)``
    runs, for every local batch ``b``, the walks with history ids ``first[b] + k``,
    ``0 <= k < size[b]``, and writes their summed tallies to ``out[b, :-1]`` and their
    transitions to ``out[b, -1]`` (float64, exact below 2**53). ``chain`` is
    ``(indptr, indices, cdf, factor)``, ``sources`` is ``(src_cdf, src_state, src_weight)``.
    A walk stops after ``max_steps`` transitions, on an empty row, or once its weight
    falls below ``cutoff`` times its start weight.

    The CPU runner gives each batch to one thread, so its sums are bit-identical for any
    chunking. The CUDA runner adds with atomics (in shared memory when the bins fit), so
    its sums agree to float64 rounding; the walks themselves (and ``out[:, -1]``) are
    identical. Both have ``run.transitions(chain, ..., max_steps, width)``, which returns
    ``out[:, -1]`` alone (on a GPU without bringing the tallies back). The CUDA runner also
    has ``run.reduced(...)``, which reduces the batch tallies to a mean and a spread on the
    device, so that only two vectors leave it. With bins in global memory the CUDA kernel is
    :func:`walk_variant`'s (``run.kernel``); with bins in shared memory, one without remembered
    states or warp counter (``run.kernels`` holds both).
    """
    return _walk_runner(kernel, backend, walk_variant() if backend == "cuda" else None)


@functools.cache
def _walk_runner(kernel, backend, variant):
    if backend == "cuda":
        return _cuda_walks(kernel, *WALK_VARIANTS[variant])
    return build_for(backend, kernel, _cpu_walks, None)


def _cpu_walks(kernel):
    begin, advance, per_visit = _walk_pieces(kernel)

    @cached
    @numba.njit(parallel=True)
    def run_cpu(indptr, indices, cdf, factor, src_cdf, src_state, src_weight, per_source, score, first, size,
                seed, stream, cutoff, max_steps, out):
        nbins = out.shape[1] - 1
        for b in numba.prange(out.shape[0]):
            transitions = 0
            for k in range(size[b]):
                history = first[b] + k
                i, w, wcut, bin_ = begin(src_cdf, src_state, src_weight, per_source[b], k, seed, stream, history,
                                         cutoff)
                words = (np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
                step, acc, done = np.int64(0), 0.0, False
                while not done:
                    if per_visit:
                        out[b, i] += w
                    else:
                        acc += w * score[i]
                    i, w, step, words, done = advance(indptr, indices, cdf, factor, i, w, wcut, step, words,
                                                      max_steps, seed, stream, history)
                if not per_visit:
                    out[b, bin_] += acc
                transitions += step
            out[b, nbins] = transitions

    def run(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, out):
        out[...] = 0.0
        run_cpu(*chain, *sources, per_source, score, first, size, np.uint32(seed), np.uint32(stream),
                np.float64(cutoff), np.int64(max_steps), out)

    def transitions(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, width):
        out = np.empty((size.size, width))
        run(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, out)
        return out[:, -1].copy()

    run.transitions = transitions
    return run


_WALK_THREADS = 256
_WALK_SHARED_BYTES = 40 * 1024  # per block; bins beyond that are added in global memory


@functools.cache
def _walk_kernel(kernel, slots, warp_counter):
    """The CUDA walk kernel of ``kernel`` keeping ``slots`` recent states, with or without the warp counter."""
    bind_cuda(globals())
    begin, advance, per_visit = _walk_pieces(kernel)
    readable = simulator_copy if simulating_cuda() else identity
    slots = slots if per_visit else 0
    warp_counter = warp_counter and not simulating_cuda()  # the simulator has no warp intrinsics

    @cuda.jit(device=True)
    def tally(local, out, b, bin_, value, shared):
        if shared:
            cuda.atomic.add(local, bin_, value)
        else:
            cuda.atomic.add(out, (b, bin_), value)

    @cuda.jit(device=True)
    def next_walk(counters, b):
        """The next walk of batch ``b`` for this lane: with ``warp_counter``, one atomic for the
        lanes here that are in the same batch (lanes of one warp may be in different batches)."""
        if not warp_counter:
            return cuda.atomic.add(counters, b, 1)
        mask = cuda.activemask()
        peers = cuda.match_any_sync(mask, b)
        leader = cuda.ffs(peers) - 1
        base = np.int64(0)
        if cuda.laneid == leader:
            base = cuda.atomic.add(counters, b, np.int64(cuda.popc(peers)))
        return cuda.shfl_sync(mask, base, leader) + cuda.popc(peers & cuda.lanemask_lt())

    @cuda.jit(device=True)
    def visit(local, out, b, shared, i, w, s0, a0, s1, a1, s2, a2, s3, a3):
        """Add ``w`` to state ``i`` among the walk's ``slots`` most recent states ``s`` (sums ``a``),
        most recent first; the least recent goes to the bins when ``i`` is not among them."""
        if slots == 0:
            tally(local, out, b, i, w, shared)
            return s0, a0, s1, a1, s2, a2, s3, a3
        if i == s0:
            return s0, a0 + w, s1, a1, s2, a2, s3, a3
        if slots >= 2 and i == s1:
            return s1, a1 + w, s0, a0, s2, a2, s3, a3
        if slots >= 3 and i == s2:
            return s2, a2 + w, s0, a0, s1, a1, s3, a3
        if slots >= 4 and i == s3:
            return s3, a3 + w, s0, a0, s1, a1, s2, a2
        if slots == 1:
            last, value = s0, a0
        elif slots == 2:
            last, value = s1, a1
        elif slots == 3:
            last, value = s2, a2
        else:
            last, value = s3, a3
        if last >= 0:
            tally(local, out, b, last, value, shared)
        return np.int64(i), w, s0, a0, s1, a1, s2, a2

    @cuda.jit(device=True)
    def forget(local, out, b, shared, s0, a0, s1, a1, s2, a2, s3, a3):
        """Add the sums of the remembered states to the bins (the walk ended)."""
        if slots >= 1 and s0 >= 0:
            tally(local, out, b, s0, a0, shared)
        if slots >= 2 and s1 >= 0:
            tally(local, out, b, s1, a1, shared)
        if slots >= 3 and s2 >= 0:
            tally(local, out, b, s2, a2, shared)
        if slots >= 4 and s3 >= 0:
            tally(local, out, b, s3, a3, shared)

    @cuda.jit(device=True)
    def walk_batch(indptr, indices, cdf, factor, src_cdf, src_state, src_weight, per_source, score, first, size,
                   seed, stream, cutoff, max_steps, shared, out, counters, local, b, nbins):
        """This thread's share of the walks of batch ``b``."""
        n_walks = size[b]
        k = next_walk(counters, b)
        words = (np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
        i, w, wcut, bin_ = begin(src_cdf, src_state, src_weight, per_source[b], min(k, n_walks - 1), seed, stream,
                                 first[b] + k, cutoff)
        step, acc, transitions = np.int64(0), 0.0, 0
        s0 = s1 = s2 = s3 = np.int64(-1)
        a0 = a1 = a2 = a3 = 0.0
        while k < n_walks:
            if per_visit:
                s0, a0, s1, a1, s2, a2, s3, a3 = visit(local, out, b, shared, i, w, s0, a0, s1, a1, s2, a2, s3, a3)
            else:
                acc += w * score[i]
            i, w, step, words, done = advance(indptr, indices, cdf, factor, i, w, wcut, step, words, max_steps,
                                              seed, stream, first[b] + k)
            if done:
                if per_visit:
                    forget(local, out, b, shared, s0, a0, s1, a1, s2, a2, s3, a3)
                    s0 = s1 = s2 = s3 = np.int64(-1)
                else:
                    tally(local, out, b, bin_, acc, shared)
                transitions += step
                k = next_walk(counters, b)
                if k < n_walks:
                    i, w, wcut, bin_ = begin(src_cdf, src_state, src_weight, per_source[b], k, seed, stream,
                                             first[b] + k, cutoff)
                    step, acc = np.int64(0), 0.0
        if transitions:
            cuda.atomic.add(out, (b, nbins), np.float64(transitions))

    @cached
    @cuda.jit
    def walk_kernel(indptr, indices, cdf, factor, src_cdf, src_state, src_weight, per_source, score, first, size,
                    seed, stream, cutoff, max_steps, blocks_per_batch, shared, out, counters):
        # Persistent threads: the blocks working on batch b take its walks from counters[b],
        # so a lane whose walk ends starts the next one at once (walk lengths vary by orders
        # of magnitude). With shared-memory tallies each block keeps to one batch; with
        # global ones every block goes through the batches in order, so the tallies being
        # added to at any moment (about two batches) stay in L2 instead of all of them.
        local = cuda.shared.array(0, dtype=numba.float64)
        nbins = out.shape[1] - 1
        if shared:
            b_first = cuda.blockIdx.x // blocks_per_batch
            b_stop = b_first + 1
            for t in range(cuda.threadIdx.x, nbins, cuda.blockDim.x):
                local[t] = 0.0
            cuda.syncthreads()
        else:
            b_first, b_stop = 0, out.shape[0]
        indptr, indices, cdf, factor = readable(indptr), readable(indices), readable(cdf), readable(factor)
        src_cdf, src_state, src_weight = readable(src_cdf), readable(src_state), readable(src_weight)
        for b in range(b_first, b_stop):
            walk_batch(indptr, indices, cdf, factor, src_cdf, src_state, src_weight, per_source, score, first, size,
                       seed, stream, cutoff, max_steps, shared, out, counters, local, b, nbins)
        if shared:
            cuda.syncthreads()
            for t in range(cuda.threadIdx.x, nbins, cuda.blockDim.x):
                if local[t] != 0.0:
                    cuda.atomic.add(out, (b_first, t), local[t])

    return walk_kernel


def _cuda_walks(kernel, slots, warp_counter):
    bind_cuda(globals())
    # bins in shared memory: each visit's atomic costs less than keeping states and the counter's
    # intrinsics, whose registers alone slowed the 2D Laplacian's walks (see WALK_VARIANTS)
    global_kernel, shared_kernel = _walk_kernel(kernel, slots, warp_counter), _walk_kernel(kernel, 0, False)

    @cuda.jit(device=True)
    def batch_value(tallies, counts, base, m_indptr, m_indices, m_data, has_matrix, b, i):
        """Batch ``b``'s estimate of row ``i``: ``counts[b] base[i] + (M @ tallies[b])[i]`` (M = I if none)."""
        if has_matrix:
            acc = 0.0
            for e in range(m_indptr[i], m_indptr[i + 1]):
                acc += m_data[e] * tallies[b, m_indices[e]]
        else:
            acc = tallies[b, i]
        return counts[b] * base[i] + acc

    @cached
    @cuda.jit
    def reduce_kernel(tallies, counts, total, base, m_indptr, m_indices, m_data, has_matrix, x, spread, transitions):
        # One thread per row, batches in order: x = sum_b y_b / total and
        # spread = sum_b (y_b - counts_b x)^2, as the host computes them from the tallies.
        i = cuda.grid(1)
        n_batches, nbins = tallies.shape[0], tallies.shape[1] - 1
        if i == 0:
            t = 0.0
            for b in range(n_batches):
                t += tallies[b, nbins]
            transitions[0] = t
        if i < nbins:
            acc = 0.0
            for b in range(n_batches):
                acc += batch_value(tallies, counts, base, m_indptr, m_indices, m_data, has_matrix, b, i)
            mean = acc / total
            sq = 0.0
            for b in range(n_batches):
                d = batch_value(tallies, counts, base, m_indptr, m_indices, m_data, has_matrix, b, i) - counts[b] * mean
                sq += d * d
            x[i] = mean
            spread[i] = sq

    def launch_walks(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, shape):
        """Run the walks into a zeroed device array of ``shape``; return it and the stream (not synchronized)."""
        n_batches, width = shape
        shared_bytes = 8 * (width - 1)
        shared = shared_bytes <= _WALK_SHARED_BYTES
        if simulating_cuda():
            threads, blocks_per_batch = 4, 2
        else:
            device = cuda.get_current_device()
            threads = _WALK_THREADS
            per_sm = 2048 // threads
            if shared:
                per_sm = max(1, min(per_sm, device.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR // (shared_bytes + 1024)))
            blocks_per_batch = max(1, -(-device.MULTIPROCESSOR_COUNT * per_sm // n_batches))
            blocks_per_batch = min(blocks_per_batch, max(1, -(-int(size.max()) // threads)))
        # global tallies: every block goes through all batches (see walk_kernel)
        grid = n_batches * blocks_per_batch if shared else max(1, min(n_batches * blocks_per_batch,
                                                                       -(-int(size.sum()) // threads)))
        with out_of_memory_as_memory_error(f"{n_batches} batches of {width - 1} bins"):
            args = [resident_on_device(a) for a in (*chain, *sources, per_source, score, first, size)]
            d_out = device_zeros(shape, np.float64)
            counters = device_zeros(n_batches, np.int64)
        launch_stream = cuda.stream()
        with launching("walks", launch_stream):
            (shared_kernel if shared else global_kernel)[grid, threads, launch_stream, shared_bytes if shared else 0](
                *args, np.uint32(seed), np.uint32(stream), np.float64(cutoff), np.int64(max_steps),
                np.int64(blocks_per_batch), shared, d_out, counters)
        return d_out, launch_stream

    def run(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, out):
        if out.shape[0] == 0:
            return
        d_out, launch_stream = launch_walks(chain, sources, per_source, score, first, size, seed, stream, cutoff,
                                            max_steps, out.shape)
        copy_back(launch_stream, [(out, d_out)])

    def transitions(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, width):
        """The transitions of each batch's walks; their tallies stay on the device."""
        counted = np.zeros(size.size)
        if size.size:
            d_out, launch_stream = launch_walks(chain, sources, per_source, score, first, size, seed, stream, cutoff,
                                                max_steps, (size.size, width))
            # one element of each row: no transfer of the tallies
            copy_back(launch_stream, [(counted[b:b + 1], d_out[b, width - 1:]) for b in range(size.size)])
        return counted

    def reduced(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, width, counts, base,
                matrix=None):
        """Run the walks of every batch and reduce over the batches on the device.

        Batch ``b``'s estimate of row ``i`` is ``y_b[i] = counts[b] base[i] + (M @ T_b)[i]``
        with ``T_b`` its tallies and ``M`` the CSR ``matrix = (indptr, indices, data)``
        (the identity when None). Returns ``(x, spread, transitions)``: ``x = sum_b y_b /
        sum_b counts[b]``, ``spread = sum_b (y_b - counts[b] x)^2`` (float64 arrays of
        ``width - 1`` rows) and the transitions of all walks. Only these leave the device.
        """
        n_batches = size.size
        nbins = width - 1
        d_out, launch_stream = launch_walks(chain, sources, per_source, score, first, size, seed, stream, cutoff,
                                            max_steps, (n_batches, width))
        has_matrix = matrix is not None
        m_indptr, m_indices, m_data = matrix if has_matrix else (np.zeros(1, np.int64), np.zeros(1, np.int32),
                                                                  np.zeros(1))
        with out_of_memory_as_memory_error(f"the reduction of {n_batches} batches of {nbins} bins"):
            d_in = [cuda.to_device(np.ascontiguousarray(a), stream=launch_stream)
                    for a in (np.asarray(counts, np.float64), np.asarray(base, np.float64), m_indptr, m_indices,
                              m_data)]
            d_x, d_spread = cuda.device_array(nbins, np.float64), cuda.device_array(nbins, np.float64)
            d_transitions = cuda.device_array(1, np.float64)
        threads = 8 if simulating_cuda() else 256
        with launching("walk_reduce", launch_stream):
            reduce_kernel[max(1, -(-nbins // threads)), threads, launch_stream](
                d_out, d_in[0], np.float64(np.sum(counts)), d_in[1], d_in[2], d_in[3], d_in[4], has_matrix, d_x,
                d_spread, d_transitions)
        x, spread, transitions = np.empty(nbins), np.empty(nbins), np.empty(1)
        copy_back(launch_stream, [(x, d_x), (spread, d_spread), (transitions, d_transitions)])
        return x, spread, float(transitions[0])

    run.reduced, run.transitions = reduced, transitions
    run.kernel, run.kernels = global_kernel, (global_kernel, shared_kernel)
    return run
