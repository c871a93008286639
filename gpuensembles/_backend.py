"""Compute targets: CPU (parallel numba) and CUDA (numba-cuda).

This is the only module that imports ``numba.cuda``, and it does so lazily, inside
functions: importing :mod:`gpuensembles` never initialises the CUDA driver nor creates
a context (dask-cuda workers and ``fork`` rely on that).

The kernel *templates* live here as well. A model supplies allocation-free scalar
``numba.jit`` functions (see :class:`FirstPassageKernel`); the templates wrap the same
functions once as a ``@cuda.jit`` kernel and once as a ``@njit(parallel=True)`` loop,
so no physics is ever written twice.
"""

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
    if backend == "cpu":
        return _cpu_first_passage(kernel)
    if backend == "cuda":
        return _cuda_first_passage(kernel)
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
        try:
            d_out = cuda.device_array(out.shape, dtype=np.int64)
            counter = cuda.to_device(np.zeros(1, dtype=np.int64))
            d_params = cuda.to_device(np.ascontiguousarray(params))
            d_streams = cuda.to_device(np.ascontiguousarray(streams))
        except Exception as err:  # numba raises CudaAPIError / its own OOM error types
            if "OUT_OF_MEMORY" in str(err).upper() or "out of memory" in str(err).lower():
                raise MemoryError(f"GPU out of memory for a block of {out.shape} realizations") from err
            raise
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
