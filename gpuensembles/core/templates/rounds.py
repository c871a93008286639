"""Trials: trajectories from given states until a coordinate leaves a window (rare-event rounds).

A rare-event method (forward flux sampling, :mod:`gpuensembles.core.ffs`) advances an
ensemble in *rounds*: every round launches one batch of independent trials, each starting
from a stored state and running until its reaction coordinate reaches ``hi`` (success),
falls to ``lo`` (failure) or has taken ``max_steps`` steps. The next round's starting
states are taken from this round's end states. This template runs one round, on the GPU
(persistent threads take the next trial from an atomic counter, so a warp does not wait
for its slowest lane) or on all CPU cores, from one scalar source.

A round is given as *segments*, not trial by trial: segment ``k`` is ``count`` trials of one
parameter row in one window ``(lo, hi)``, trial ``j`` of it starting from row
``j mod pool_count`` of its own rows of the pool (the states it starts from) with trial id
``first_id + j``. A round of forward flux sampling holds tens of millions of trials in a few
hundred segments, so the host builds and copies a few arrays of segments and the pool instead
of six arrays the length of the round (that had taken more time than the kernels: H100, the
Li junction's rates to 1%).

Every trial draws its random numbers from Philox with key ``(seed, stream)`` and counter
``(draw, trial id)``, so a trial's path does not depend on how a round is split into
launches or on the backend.
"""

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..backend import (
    bind_cuda,
    build_for,
    cached,
    identity,
    launching,
    out_of_memory_as_memory_error,
    simulating_cuda,
    simulator_copy,
    simulator_view,
)

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)

#: ``status`` of a trial: still running, reached ``hi``, fell to ``lo``, out of steps.
RUNNING, REACHED, RETURNED, CENSORED = 0, 1, 2, 3


@dataclass(frozen=True)
class TrialKernel:
    """Scalar pieces of one trial, shared by both targets (``numba.jit`` functions without signatures).

    Attributes
    ----------
    prepare : callable
        ``prepare(par) -> coef``: coefficients (kept in registers) from one row of float64
        parameters.
    start : callable
        ``start(coef, starts, i, seed, stream, trial) -> state``: the state of trial ``i``
        from row ``i`` of the float64 array ``starts`` (a model may read a NaN first column
        as "draw it from the model's initial distribution"); ``state[0]`` is the int64
        step count.
    advance : callable
        ``advance(state, coef, lo, hi, max_steps, seed, stream, trial) -> (state, status)``:
        a few steps, stopping at the first one whose coordinate is ``>= hi`` (status
        ``REACHED``) or ``<= lo`` (``RETURNED``), or at ``max_steps`` (``CENSORED``).
    export : callable
        ``export(state, out, i)``: write the end state into row ``i`` of the float64 array
        ``out``; column 0 is the reaction coordinate, the last column its largest value
        along the trial, the columns between are what ``start`` reads back.
    """

    prepare: Callable
    start: Callable
    advance: Callable
    export: Callable


#: Columns of a round's integer segment table (int64): trials ``begin`` to ``end`` (exclusive)
#: of the round, their parameter row, Philox stream and first trial id, and their rows of the pool.
SEGMENT_COLUMNS = ("begin", "end", "row", "stream", "first_id", "pool_first", "pool_count")
BEGIN, END, ROW, STREAM, FIRST_ID, POOL_FIRST, POOL_COUNT = range(len(SEGMENT_COLUMNS))
#: Columns of a round's float segment table: the window ``(lo, hi)``.
LO, HI = range(2)


@functools.cache
def trial_runner(kernel: TrialKernel, backend: str):
    """Compile ``kernel`` for ``backend``; return its runner of one round.

    ``run(params, segments, windows, pool, seed, max_steps, steps, status, ends)``:

    ``segments`` (int64, one row per segment, columns `BEGIN` .. `POOL_COUNT`) and
    ``windows`` (float64, columns `LO`, `HI`) describe the round; segments tile the trials
    ``0 .. steps.size - 1`` in order, each with ``POOL_COUNT >= 1``. Trial ``i`` of segment
    ``k`` (``j = i - BEGIN``) uses parameter row ``params[ROW]``, starts from row
    ``POOL_FIRST + j mod POOL_COUNT`` of the float64 array ``pool``, runs in
    ``(LO, HI)`` with Philox stream ``STREAM`` and trial id ``FIRST_ID + j``, and leaves its
    step count in ``steps[i]``, its status in ``status[i]`` and its end state in ``ends[i]``
    (all output arrays are filled in place).
    """
    return build_for(backend, kernel, _cpu_trials, _cuda_trials)


@numba.njit
def _segment_of(segments, i, k):
    """The segment of trial ``i``, searched from segment ``k`` on (a thread's trials come in rising order)."""
    while segments[k, END] <= i:
        k += 1
    return k


@numba.njit
def _pool_row(segments, k, i):
    """The pool row that trial ``i`` of segment ``k`` starts from."""
    return segments[k, POOL_FIRST] + (i - segments[k, BEGIN]) % segments[k, POOL_COUNT]


@numba.njit
def _trial_id(segments, k, i):
    """The Philox trial id of trial ``i`` of segment ``k``."""
    return segments[k, FIRST_ID] + (i - segments[k, BEGIN])


def _cpu_trials(kernel):
    prepare, start, advance, export = kernel.prepare, kernel.start, kernel.advance, kernel.export

    @cached
    @numba.njit(parallel=True)
    def run_items(params, segments, windows, pool, seed, max_steps, steps, status, ends, n_threads):
        n = steps.shape[0]
        # round-robin: trial lengths differ by orders of magnitude (a trial near an
        # interface ends at once, one in the basin may run long)
        for t in numba.prange(n_threads):
            k = 0
            for i in range(t, n, n_threads):
                k = _segment_of(segments, i, k)
                stream, trial = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
                coef = prepare(params[segments[k, ROW]])
                state = start(coef, pool, _pool_row(segments, k, i), seed, stream, trial)
                code = RUNNING
                while code == RUNNING:
                    state, code = advance(state, coef, windows[k, LO], windows[k, HI], max_steps, seed, stream,
                                          trial)
                steps[i] = state[0]
                status[i] = code
                export(state, ends, i)

    def run_cpu(params, segments, windows, pool, seed, max_steps, steps, status, ends):
        if steps.size:
            run_items(params, segments, windows, pool, seed, max_steps, steps, status, ends, numba.get_num_threads())

    run_cpu.kernel = run_items
    return run_cpu


_CUDA_THREADS_PER_BLOCK = 128
#: The trial counter's start, copied into its device word at every round.
_ZERO = np.zeros(1, dtype=np.int64)


class _RoundMemory:
    """Device arrays and the stream of one CUDA runner, kept from round to round.

    Rounds of forward flux sampling are many and short (a few hundred per pass of a rates run). Fresh
    arrays and a fresh stream at each cost about 25 driver calls a round, each of which gives up the
    GIL and must win it back: on a dask worker, whose event loop takes the GIL meanwhile, that made
    a pass about 30% slower than in a plain process (H100). Kept arrays grow, never shrink; a round
    uses a view of their first rows. Each thread that runs rounds has its own (two tasks of a dask
    worker run rounds at once), kept as long as the thread and the runner: at most the largest
    round's outputs (33 bytes a trial), its pool (16 or 24 bytes a start state) and its segments.
    """

    def __init__(self):
        self._arrays, self._stream = {}, None

    def stream(self):
        """The runner's stream, made at its first round."""
        if self._stream is None:
            self._stream = cuda.stream()
        return self._stream

    def array(self, key, shape, dtype):
        """A device view of ``shape`` and ``dtype`` over the kept array ``key`` (grown to twice the rows if short)."""
        kept = self._arrays.get(key)
        if kept is None or kept.shape[0] < shape[0] or kept.shape[1:] != shape[1:] or kept.dtype != dtype:
            rows = max(shape[0], 2 * kept.shape[0] if kept is not None and kept.shape[1:] == shape[1:] else 0)
            kept = self._arrays[key] = cuda.device_array((rows,) + tuple(shape[1:]), dtype=dtype)
        return kept[:shape[0]]

    def copied(self, key, host, stream):
        """The kept array ``key`` holding a copy of ``host`` (C-contiguous)."""
        view = self.array(key, host.shape, host.dtype)
        if host.size:
            view.copy_to_device(host, stream=stream)
        return view


def _cuda_trials(kernel):
    bind_cuda(globals())
    prepare, start, advance, export = kernel.prepare, kernel.start, kernel.advance, kernel.export
    simulated = simulating_cuda()
    readable = simulator_copy if simulated else identity
    writable = simulator_view if simulated else identity

    @cached
    @cuda.jit(fastmath=True)
    def run_kernel(params, segments, windows, pool, seed, max_steps, steps, status, ends, counter):
        # persistent threads: a lane whose trial ends takes the next from the counter
        params, segments, windows, pool = readable(params), readable(segments), readable(windows), readable(pool)
        n = steps.shape[0]
        i = cuda.atomic.add(counter, 0, 1)
        k = _segment_of(segments, min(i, n - 1), 0)
        stream, trial = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
        coef = prepare(params[segments[k, ROW]])
        state = start(coef, pool, _pool_row(segments, k, i), seed, stream, trial)
        while i < n:
            state, code = advance(state, coef, windows[k, LO], windows[k, HI], max_steps, seed, stream, trial)
            if code != RUNNING:
                steps[i] = state[0]
                status[i] = code
                export(state, writable(ends), i)
                i = cuda.atomic.add(counter, 0, 1)
                if i < n:
                    k = _segment_of(segments, i, k)
                    stream, trial = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
                    coef = prepare(params[segments[k, ROW]])
                    state = start(coef, pool, _pool_row(segments, k, i), seed, stream, trial)

    per_thread = threading.local()  # runners are cached per process: threads of a worker share them

    def run_cuda(params, segments, windows, pool, seed, max_steps, steps, status, ends):
        n = steps.size
        if n == 0:
            return
        if simulated:
            blocks, threads = 1, min(n, 8)
        else:
            sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
            threads = _CUDA_THREADS_PER_BLOCK
            blocks = max(1, min(sms * 16, -(-n // threads)))
        memory = getattr(per_thread, "memory", None)
        if memory is None:
            memory = per_thread.memory = _RoundMemory()
        run_stream = memory.stream()
        with out_of_memory_as_memory_error(f"a round of {n} trials"):
            device = [memory.copied(k, np.ascontiguousarray(a), run_stream)
                      for k, a in enumerate((params, segments, windows, pool, _ZERO))]
            d_steps, d_status, d_ends = (memory.array(f"out {k}", a.shape, dtype) for k, (a, dtype) in
                                         enumerate(((steps, np.int64), (status, np.int8), (ends, np.float64))))
        with launching("trials", run_stream):
            run_kernel[blocks, threads, run_stream](*device[:-1], np.uint32(seed), np.int64(max_steps), d_steps,
                                                   d_status, d_ends, device[-1])
        d_steps.copy_to_host(steps, stream=run_stream)
        d_status.copy_to_host(status, stream=run_stream)
        d_ends.copy_to_host(ends, stream=run_stream)
        run_stream.synchronize()

    run_cuda.kernel = run_kernel
    return run_cuda
