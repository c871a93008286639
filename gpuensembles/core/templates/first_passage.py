"""First-passage ensembles: persistent-thread CUDA kernel and parallel CPU loop."""

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
    kernel_options,
    launching,
    out_of_memory_as_memory_error,
    poll_counter,
    simulating_cuda,
    simulator_copy,
)

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)



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


@functools.cache
def first_passage_runner(kernel: FirstPassageKernel, backend: str):
    """Compile ``kernel`` for ``backend`` and return ``run(params, streams, rid0, seed, max_steps, out)``.

    ``run`` fills ``out[p, r]`` (int64) with the step count of realization ``rid0 + r``
    at parameter row ``params[p]``: positive if the passage happened, negative if
    ``max_steps`` was reached first. ``streams[p]`` is the RNG stream of row ``p``.
    The CUDA runner also takes ``progress``, called with the number of realizations
    started so far while the kernel runs.
    """
    return build_for(backend, kernel, _cpu_first_passage, _cuda_first_passage)


def _cpu_first_passage(kernel):
    prepare, init, advance = kernel.prepare, kernel.init, kernel.advance

    @cached
    @numba.njit(parallel=True)
    def run_items(params, streams, rid0, seed, max_steps, out, n_threads):
        # n_threads comes from Python: numba.get_num_threads() inside jit code is a ctypes
        # pointer (a "dynamic global"), which would keep this loop out of the kernel cache.
        n_points, n_real = out.shape
        n_items = n_points * n_real
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

    def run_cpu(params, streams, rid0, seed, max_steps, out):
        run_items(params, streams, rid0, seed, max_steps, out, numba.get_num_threads())

    run_cpu.kernel = run_items
    return run_cpu



_CUDA_THREADS_PER_BLOCK = 128


def _cuda_first_passage(kernel):
    bind_cuda(globals())
    prepare, init, advance = kernel.prepare, kernel.init, kernel.advance
    readable = simulator_copy if simulating_cuda() else identity

    @cached
    @cuda.jit(fastmath=True, **kernel_options("first_passage"))
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
        run_stream = cuda.stream()  # uploads too: the legacy default stream waits for every other stream
        with out_of_memory_as_memory_error(f"a block of {out.shape} realizations"):
            d_out = cuda.device_array(out.shape, dtype=np.int64)
            counter = device_zeros(1, np.int64, stream=run_stream)
            d_params = cuda.to_device(np.ascontiguousarray(params), stream=run_stream)
            d_streams = cuda.to_device(np.ascontiguousarray(streams), stream=run_stream)
        with launching("first_passage", run_stream):
            run_kernel[blocks, threads, run_stream](
                d_params, d_streams, np.int64(rid0), np.uint32(seed), np.int64(max_steps), d_out, counter
            )
        if progress is not None:
            poll_counter(counter, run_stream, n_items, progress)
        copy_back(run_stream, [(out, d_out)])

    run_cuda.kernel = run_kernel
    return run_cuda


