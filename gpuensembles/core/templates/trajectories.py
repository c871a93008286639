"""Fixed-length trajectories observed every few steps (Langevin ensembles over parameter grids).

Every ``(parameter point, realization)`` pair is one independent trajectory. The run is
cut into ``segments`` of ``every`` steps; after each segment the template may store the
position and velocity (a ``time`` sample) and add the trajectory to a coarse-grained
position histogram, so nothing between samples ever leaves the device.
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
    copy_back,
    identity,
    kernel_options,
    launching,
    out_of_memory_as_memory_error,
    simulating_cuda,
    simulator_copy,
)

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)


@dataclass(frozen=True)
class TrajectoryKernel:
    """Scalar pieces of one trajectory, shared by both targets (``numba.jit``, no signatures).

    Attributes
    ----------
    prepare : callable
        ``prepare(par) -> coef``: coefficients from one float64 parameter row.
    init : callable
        ``init(coef, seed, stream, realization) -> state``.
    advance : callable
        ``advance(state, coef, n, seed, stream, realization) -> state``: ``n`` steps.
    observe : callable
        ``observe(state) -> (x, v)``: unwrapped position and velocity, float64.
    """

    prepare: Callable
    init: Callable
    advance: Callable
    observe: Callable


#: Columns of the ``final`` output: position and velocity at the end, position at the
#: end of the transient.
FINAL_COLUMNS = ("x_end", "v_end", "x_transient")


@numba.njit
def _cell(x, lo, n_cells):
    """Histogram bin of ``x``: 0 below ``lo``, 1 + floor(x) - lo inside, ``n_cells + 1`` above."""
    c = np.int64(math.floor(x)) - lo
    if c < 0:
        return 0
    if c >= n_cells:
        return n_cells + 1
    return c + 1


@functools.cache
def trajectory_runner(kernel: TrajectoryKernel, backend: str):
    """Compile ``kernel`` for ``backend``; return ``run(params, streams, rid0, seed, schedule, final, xs, vs, hist)``.

    ``schedule = (every, segments, transient, histogram_every_segment, lo)``: the run is
    ``segments`` segments of ``every`` steps; ``transient`` is the segment count after
    which the ``x_transient`` column is taken. Outputs, for the realization with id
    ``rid0 + r`` at parameter row ``params[p]`` (RNG stream ``streams[p]``):

    * ``final[p, r, :]`` (float64): :data:`FINAL_COLUMNS`;
    * ``xs[p, r, s]``, ``vs[p, r, s]`` (float64): position and velocity after segment ``s``
      (pass arrays with a zero-length last axis to keep none);
    * ``hist[p, s, :]`` (int64): trajectories per unit cell ``[lo + c, lo + c + 1)`` after
      segment ``s`` (or after the last segment only), bin 0 counting those below ``lo``
      and the last bin those above the last cell; a ``(.., .., 0)`` array keeps none.

    Both targets produce the same trajectories; the CUDA histogram is summed with
    integer atomics, so it is exact as well.
    """
    return build_for(backend, kernel, _cpu_trajectories, _cuda_trajectories)


def _trajectory_source(kernel):
    """The Python source of one trajectory, to be compiled by each target with its ``tally``."""
    prepare, init, advance, observe = kernel.prepare, kernel.init, kernel.advance, kernel.observe

    def make(tally):
        def run_one(params, streams, p, r, rid, seed, every, segments, transient, hist_all, lo, n_cells, final, xs,
                    vs, target):
            coef = prepare(params[p])
            state = init(coef, seed, streams[p], rid)
            x, v = observe(state)
            x_tr = x
            for s in range(segments):
                state = advance(state, coef, every, seed, streams[p], rid)
                x, v = observe(state)
                if s + 1 == transient:
                    x_tr = x
                if s < xs.shape[2]:
                    xs[p, r, s] = x
                if s < vs.shape[2]:
                    vs[p, r, s] = v
                if n_cells >= 0 and (hist_all or s + 1 == segments):
                    tally(target, p, r, s if hist_all else 0, _cell(x, lo, n_cells))
            final[p, r, 0] = x
            final[p, r, 1] = v
            final[p, r, 2] = x_tr

        return run_one

    return make


def _schedule(schedule, hist):
    every, segments, transient, hist_all, lo = schedule
    n_cells = hist.shape[2] - 2 if hist.shape[2] else -1
    return np.int64(every), np.int64(segments), np.int64(transient), bool(hist_all), np.int64(lo), np.int64(n_cells)


def _cpu_trajectories(kernel):
    @numba.njit
    def store_cell(cells, p, r, s, c):
        cells[p, r, s] = c

    run_one = numba.njit(_trajectory_source(kernel)(store_cell))

    @cached
    @numba.njit(parallel=True)
    def run_cpu(params, streams, rid0, seed, every, segments, transient, hist_all, lo, n_cells, final, xs, vs,
                cells, hist):
        n_points, n_real = final.shape[0], final.shape[1]
        for item in numba.prange(n_points * n_real):
            p = item // n_real
            r = item - p * n_real
            run_one(params, streams, p, r, rid0 + r, seed, every, segments, transient, hist_all, lo, n_cells, final,
                    xs, vs, cells)
        if n_cells >= 0:  # histogram from the stored cells: no race between threads
            for p in range(n_points):
                for r in range(n_real):
                    for s in range(cells.shape[2]):
                        hist[p, s, cells[p, r, s]] += 1

    def run(params, streams, rid0, seed, schedule, final, xs, vs, hist):
        every, segments, transient, hist_all, lo, n_cells = _schedule(schedule, hist)
        cells = np.zeros((final.shape[0], final.shape[1], hist.shape[1] if n_cells >= 0 else 0), dtype=np.int32)
        run_cpu(np.ascontiguousarray(params), streams, np.int64(rid0), np.uint32(seed), every, segments, transient,
                hist_all, lo, n_cells, final, xs, vs, cells, hist)

    return run


_THREADS = 128


def _cuda_trajectories(kernel):
    bind_cuda(globals())
    readable = simulator_copy if simulating_cuda() else identity

    @cuda.jit(device=True)
    def add_count(hist, p, r, s, c):
        cuda.atomic.add(hist, (p, s, c), 1)

    run_one = cuda.jit(device=True)(_trajectory_source(kernel)(add_count))

    @cached
    @cuda.jit(fastmath=True, **kernel_options("trajectory"))
    def trajectory_kernel(params, streams, rid0, seed, every, segments, transient, hist_all, lo, n_cells, final, xs,
                          vs, hist):
        # One lane per trajectory; neighbouring lanes share a parameter point, so a warp
        # runs the same coefficients in lockstep.
        params = readable(params)
        item = cuda.grid(1)
        n_points, n_real = final.shape[0], final.shape[1]
        if item < n_points * n_real:
            p = item // n_real
            r = item - p * n_real
            run_one(params, streams, p, r, rid0 + r, seed, every, segments, transient, hist_all, lo, n_cells, final,
                    xs, vs, hist)

    def run(params, streams, rid0, seed, schedule, final, xs, vs, hist):
        n_items = final.shape[0] * final.shape[1]
        if n_items == 0:
            return
        threads = 8 if simulating_cuda() else _THREADS
        launch_stream = cuda.stream()  # uploads too: the legacy default stream waits for every other stream
        with out_of_memory_as_memory_error(f"a block of {final.shape[:2]} trajectories"):
            d_in = [cuda.to_device(np.ascontiguousarray(a), stream=launch_stream) for a in (params, streams)]
            d_out = [cuda.device_array(a.shape, a.dtype) for a in (final, xs, vs)] + [
                cuda.to_device(hist, stream=launch_stream)]
        with launching("trajectories", launch_stream):
            trajectory_kernel[-(-n_items // threads), threads, launch_stream](
                *d_in, np.int64(rid0), np.uint32(seed), *_schedule(schedule, hist), *d_out)
        copy_back(launch_stream, zip((final, xs, vs, hist), d_out))

    run.kernel = trajectory_kernel
    return run
