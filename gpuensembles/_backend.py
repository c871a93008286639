"""Compute targets: CPU (parallel numba) and CUDA (numba-cuda).

This is the only module that imports ``numba.cuda``, and it does so lazily, inside
functions: importing :mod:`gpuensembles` never initialises the CUDA driver nor creates
a context (dask-cuda workers and ``fork`` rely on that).

The kernel *templates* live here as well. A model supplies allocation-free scalar
``numba.jit`` functions (see :class:`FirstPassageKernel`); the templates wrap the same
functions once as a ``@cuda.jit`` kernel and once as a ``@njit(parallel=True)`` loop,
so no physics is ever written twice.
"""

import contextlib
import functools
import os
import warnings
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

BACKENDS = ("auto", "cuda", "cpu")


def _patch_numpy_for_numba_cuda():
    """Let numba-cuda <= 0.30.4 compile kernels under numpy >= 2.5.

    numba-cuda registers an overload for ``np.row_stack`` when its CUDA target first
    loads; numpy 2.5 removed that alias of ``np.vstack`` and the registration raises
    ``AttributeError``, so *every* kernel fails to compile. Restoring the alias (it was
    exactly ``np.vstack``) is harmless and only done where it is missing.
    """
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


cuda = None
"""``numba.cuda`` once `_cuda` has imported it. A module global, not a closure variable,
because the CUDA simulator swaps the ``cuda`` global of a kernel for its fake module."""


def _cuda():
    """Import (lazily, once) and return ``numba.cuda``, applying the numpy compatibility step."""
    global cuda
    if cuda is None:
        _patch_numpy_for_numba_cuda()
        from numba import cuda as numba_cuda

        cuda = numba_cuda
    return cuda


def simulating_cuda() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """True if a usable CUDA GPU (or the CUDA simulator) is visible.

    Initialises the driver (``cuInit``) on first call but creates no context.
    """
    try:
        return bool(_cuda().is_available())
    except Exception:  # no driver, no libcuda, broken install: no GPU for us
        return False


def gpu_count() -> int:
    """Number of real CUDA GPUs visible (0 under the simulator); creates no context."""
    if simulating_cuda() or not cuda_available():
        return 0
    return len(_cuda().gpus)


def resolve(backend: str) -> str:
    """Turn ``"auto" | "cuda" | "cpu"`` into the backend that will run.

    Raises
    ------
    ValueError
        For an unknown name, or ``"cuda"`` without a usable GPU.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if backend == "cuda":
        raise ValueError(
            "backend='cuda' was requested but no usable CUDA GPU is visible "
            "(install the 'cuda' extra and check `nvidia-smi`); use backend='cpu' or 'auto'"
        )
    return "cpu"


def device_name(backend: str) -> str:
    """Human-readable name of the device a resolved backend runs on."""
    if backend == "cuda":
        if simulating_cuda():
            return "CUDA simulator"
        name = _cuda().get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    return f"CPU ({numba.config.NUMBA_NUM_THREADS} threads, numba {numba.__version__})"


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class FirstPassageKernel:
    """Scalar pieces of a first-passage simulation, shared by both targets.

    All three are ``numba.jit`` functions without signatures.

    Attributes
    ----------
    prepare : callable
        ``prepare(par) -> coef``: turn one row of float64 parameters into a tuple of
        coefficients in the working precision (kept in registers).
    init : callable
        ``init(coef, seed, stream, realization) -> state``: initial state (it may draw
        random numbers); ``state[0]`` is the int64 step count.
    advance : callable
        ``advance(state, coef, max_steps, seed, stream, realization) -> (state, status)``:
        integrate a few steps; ``status`` is 0 (running), 1 (passage) or 2
        (``max_steps`` reached).
    """

    prepare: Callable
    init: Callable
    advance: Callable


@numba.njit
def _signed(state, status):
    """Step count, negated when the passage did not happen (``status == 2``)."""
    return state[0] if status == 1 else -state[0]


@functools.lru_cache(maxsize=None)
def first_passage_runner(kernel: FirstPassageKernel, backend: str):
    """Compile ``kernel`` for ``backend`` and return ``run(params, streams, rid0, seed, max_steps, out)``.

    ``run`` fills ``out[p, r]`` (int64) with the step count of realization ``rid0 + r``
    at parameter row ``params[p]``: positive if the passage happened, negative if
    ``max_steps`` was reached first. ``streams[p]`` is the RNG stream of row ``p``.
    The CUDA runner also takes ``progress``, called with the number of realizations
    started so far while the kernel runs.
    """
    return _build(backend, kernel, _cpu_first_passage, _cuda_first_passage)


def _build(backend, kernel, cpu_template, cuda_template):
    """Apply the template of a resolved backend to ``kernel``."""
    if backend == "cpu":
        return cpu_template(kernel)
    if backend == "cuda":
        return cuda_template(kernel)
    raise ValueError(f"backend must be 'cpu' or 'cuda' once resolved, got {backend!r}")


def _cpu_first_passage(kernel):
    prepare, init, advance = kernel.prepare, kernel.init, kernel.advance

    @numba.njit(parallel=True)
    def run_cpu(params, streams, rid0, seed, max_steps, out):
        n_points, n_real = out.shape
        n_items = n_points * n_real
        n_threads = numba.get_num_threads()
        # Round-robin items over threads: passage times differ by orders of magnitude
        # between parameter points, so contiguous ranges would load-balance badly.
        for t in numba.prange(n_threads):
            for item in range(t, n_items, n_threads):
                p = item // n_real
                r = item - p * n_real
                coef = prepare(params[p])
                state = init(coef, seed, streams[p], rid0 + r)
                status = 0
                while status == 0:
                    state, status = advance(state, coef, max_steps, seed, streams[p], rid0 + r)
                out[p, r] = _signed(state, status)

    return run_cpu


_CUDA_THREADS_PER_BLOCK = 128


@numba.njit
def _identity(array):
    return array


def _simulator_copy(array):
    # The simulator hands kernels wrapped arrays that CPU-jitted functions cannot unbox.
    return array.copy_to_host()


def _cuda_first_passage(kernel):
    _cuda()
    prepare, init, advance = kernel.prepare, kernel.init, kernel.advance
    readable = _simulator_copy if simulating_cuda() else _identity

    @cuda.jit(fastmath=True)
    def run_kernel(params, streams, rid0, seed, max_steps, out, counter):
        # Persistent threads: a lane that finishes a realization takes the next one
        # from a global atomic counter, so a warp never idles behind its slowest lane.
        # The loop is flat (one body, a short refill branch) to keep warps converged.
        params = readable(params)
        n_points, n_real = out.shape
        n_items = n_points * n_real
        item = cuda.atomic.add(counter, 0, 1)
        p = min(item, n_items - 1) // n_real
        r = min(item, n_items - 1) - p * n_real
        coef = prepare(params[p])
        state = init(coef, seed, streams[p], rid0 + r)
        while item < n_items:
            state, status = advance(state, coef, max_steps, seed, streams[p], rid0 + r)
            if status != 0:
                out[p, r] = _signed(state, status)
                item = cuda.atomic.add(counter, 0, 1)
                if item < n_items:
                    p = item // n_real
                    r = item - p * n_real
                    coef = prepare(params[p])
                    state = init(coef, seed, streams[p], rid0 + r)

    def run_cuda(params, streams, rid0, seed, max_steps, out, progress=None):
        n_items = out.size
        if n_items == 0:
            return
        if simulating_cuda():
            blocks, threads = 1, min(n_items, 8)
        else:
            sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
            threads = _CUDA_THREADS_PER_BLOCK
            # 16 resident blocks of 128 fill an SM (2048 threads); more blocks would
            # only start once the counter is exhausted.
            blocks = max(1, min(sms * 16, -(-n_items // threads)))
        with _out_of_memory_as_memory_error(f"a block of {out.shape} realizations"):
            d_out = cuda.device_array(out.shape, dtype=np.int64)
            counter = cuda.to_device(np.zeros(1, dtype=np.int64))
            d_params = cuda.to_device(np.ascontiguousarray(params))
            d_streams = cuda.to_device(np.ascontiguousarray(streams))
        run_stream = cuda.stream()
        with warnings.catch_warnings():
            # small chunks give small grids on purpose; numba's occupancy hint is noise here
            warnings.simplefilter("ignore", numba.core.errors.NumbaPerformanceWarning)
            run_kernel[blocks, threads, run_stream](
                d_params, d_streams, np.int64(rid0), np.uint32(seed), np.int64(max_steps), d_out, counter
            )
        if progress is not None:
            _poll_counter(counter, run_stream, n_items, progress)
        d_out.copy_to_host(out, stream=run_stream)
        run_stream.synchronize()

    run_cuda.kernel = run_kernel
    return run_cuda


@contextlib.contextmanager
def _out_of_memory_as_memory_error(what: str):
    """Turn numba's out-of-memory errors (CudaAPIError and its own types) into MemoryError."""
    try:
        yield
    except Exception as err:
        if "OUT_OF_MEMORY" in str(err).upper() or "out of memory" in str(err).lower():
            raise MemoryError(f"GPU out of memory for {what}") from err
        raise


def _device_zeros(shape, dtype):
    """A zero-filled device array, set on the device (no host array, no transfer)."""
    if simulating_cuda():
        return cuda.to_device(np.zeros(shape, dtype=dtype))
    from numba.cuda.cudadrv.driver import device_memset

    array = cuda.device_array(shape, dtype=dtype)
    device_memset(array, 0, array.nbytes)
    return array


def _poll_counter(counter, run_stream, n_items, progress, interval=0.2):
    """Report items started (``progress(n)``) while the kernel on ``run_stream`` runs.

    Copies the work counter on a second stream; reading it while the kernel updates it
    is a benign race (the value only grows).
    """
    import time

    if simulating_cuda():  # the simulator ran the kernel synchronously at launch
        progress(n_items)
        return
    done = cuda.event()
    done.record(run_stream)
    poll_stream = cuda.stream()
    host = cuda.pinned_array(1, dtype=np.int64)
    while not done.query():
        counter.copy_to_host(host, stream=poll_stream)
        poll_stream.synchronize()
        progress(min(int(host[0]), n_items))
        time.sleep(interval)
    progress(n_items)


# --------------------------------------------------------------------------- weighted walks


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
    from . import rng

    transition, source, per_visit = kernel.transition, kernel.source, kernel.per_visit

    @numba.njit
    def begin(src_cdf, src_state, src_weight, per_source, k, seed, stream, history, cutoff):
        if per_visit:
            c = rng.philox_block(seed, stream, history, 0)
            s = source(src_cdf, _unit_interval_53(c[0], c[1]))
            bin_ = -1
        else:
            s = k // per_source
            bin_ = s
        w = src_weight[s]
        return src_state[s], w, cutoff * abs(w), bin_

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


@functools.lru_cache(maxsize=None)
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
    identical.
    """
    return _build(backend, kernel, _cpu_walks, _cuda_walks)


def _cpu_walks(kernel):
    begin, advance, per_visit = _walk_pieces(kernel)

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
                step, acc, done = 0, 0.0, False
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

    return run


_WALK_THREADS = 256
_WALK_SHARED_BYTES = 40 * 1024  # per block; bins beyond that are added in global memory


def _cuda_walks(kernel):
    _cuda()
    begin, advance, per_visit = _walk_pieces(kernel)
    readable = _simulator_copy if simulating_cuda() else _identity

    @cuda.jit(device=True)
    def tally(local, out, b, bin_, value, shared):
        if shared:
            cuda.atomic.add(local, bin_, value)
        else:
            cuda.atomic.add(out, (b, bin_), value)

    @cuda.jit
    def walk_kernel(indptr, indices, cdf, factor, src_cdf, src_state, src_weight, per_source, score, first, size,
                    seed, stream, cutoff, max_steps, blocks_per_batch, shared, out, counters):
        # Persistent threads per batch: the blocks of batch b take its walks from
        # counters[b], so a lane whose walk ends starts the next one at once (walk lengths
        # vary by orders of magnitude). Tallies go to a per-block copy in shared memory.
        local = cuda.shared.array(0, dtype=numba.float64)
        nbins = out.shape[1] - 1
        b = cuda.blockIdx.x // blocks_per_batch
        if shared:
            for t in range(cuda.threadIdx.x, nbins, cuda.blockDim.x):
                local[t] = 0.0
            cuda.syncthreads()
        indptr, indices, cdf, factor = readable(indptr), readable(indices), readable(cdf), readable(factor)
        src_cdf, src_state, src_weight = readable(src_cdf), readable(src_state), readable(src_weight)
        n_walks = size[b]
        k = cuda.atomic.add(counters, b, 1)
        words = (np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
        i, w, wcut, bin_ = begin(src_cdf, src_state, src_weight, per_source[b], min(k, n_walks - 1), seed, stream,
                                 first[b] + k, cutoff)
        step, acc, transitions = 0, 0.0, 0
        while k < n_walks:
            if per_visit:
                tally(local, out, b, i, w, shared)
            else:
                acc += w * score[i]
            i, w, step, words, done = advance(indptr, indices, cdf, factor, i, w, wcut, step, words, max_steps,
                                              seed, stream, first[b] + k)
            if done:
                if not per_visit:
                    tally(local, out, b, bin_, acc, shared)
                transitions += step
                k = cuda.atomic.add(counters, b, 1)
                if k < n_walks:
                    i, w, wcut, bin_ = begin(src_cdf, src_state, src_weight, per_source[b], k, seed, stream,
                                             first[b] + k, cutoff)
                    step, acc = 0, 0.0
        cuda.atomic.add(out, (b, nbins), np.float64(transitions))
        if shared:
            cuda.syncthreads()
            for t in range(cuda.threadIdx.x, nbins, cuda.blockDim.x):
                if local[t] != 0.0:
                    cuda.atomic.add(out, (b, t), local[t])

    def run(chain, sources, per_source, score, first, size, seed, stream, cutoff, max_steps, out):
        n_batches, width = out.shape
        if n_batches == 0:
            return
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
        with _out_of_memory_as_memory_error(f"{n_batches} batches of {width - 1} bins"):
            args = [cuda.to_device(np.ascontiguousarray(a)) for a in (*chain, *sources, per_source, score, first, size)]
            d_out = _device_zeros(out.shape, np.float64)
            counters = _device_zeros(n_batches, np.int64)
        launch_stream = cuda.stream()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.core.errors.NumbaPerformanceWarning)
            walk_kernel[n_batches * blocks_per_batch, threads, launch_stream, shared_bytes if shared else 0](
                *args, np.uint32(seed), np.uint32(stream), np.float64(cutoff), np.int64(max_steps),
                np.int64(blocks_per_batch), shared, d_out, counters)
        d_out.copy_to_host(out, stream=launch_stream)
        launch_stream.synchronize()

    run.kernel = walk_kernel
    return run
