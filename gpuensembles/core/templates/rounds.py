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

A round whose trials' steps and end states are not all needed (a stage of forward flux
sampling: its success count and step sums per segment, and the end states of its successes)
can be run by ``run.kept``, which reduces on the device: the host then copies and handles a
few numbers per segment and the successes' states, not 34 bytes a trial. On a GPU those states
stay on the device (:class:`KeptRows`): the next round starts from them where they lie, and
only what the host reads is copied.

A segment may also give *pruning levels* below its trials' start (forward flux sampling's
interfaces below the current one): a trial that falls through one is ended there with
probability 1/2 (a failure), and otherwise goes on, counting twice from then on (pruned
forward flux sampling; Allen, Frenkel & ten Wolde, J. Chem. Phys. 124, 024102 (2006)). A
failure's fall back into the basin was most of a stage's work; the weights keep every count's
expectation what it was without pruning. A trial that reaches ``hi`` after surviving ``m``
levels counts ``2**m`` times in the totals and its state is kept ``2**m`` times: the next round
samples its pool uniformly, so the kept states carry no weights. (Trial ``j`` takes row ``j mod
rows``: when the trials are not a multiple of the rows, the first ones are taken once more, and a
block of copies that straddles that end is taken in part: fewer than 64 of a segment's
starts fall otherwise than in proportion to the copies.) Pruning is for kernels whose
``RETURNED`` means the coordinate fell to ``lo``: a trial that fails for another reason (a
model's own failure condition) would be taken for one that fell through a level.

Every trial draws its random numbers from Philox with key ``(seed, stream)`` and counter
``(draw, trial id)``, so a trial's path does not depend on how a round is split into
launches or on the backend. The template's own draws (pruning) are blocks `PRUNE_DRAW` on.
"""

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from .. import rng
from ..backend import (
    bind_cuda,
    build_for,
    cached,
    compiled,
    copy_back,
    identity,
    launching,
    out_of_memory_as_memory_error,
    simulating_cuda,
    simulator_copy,
    simulator_view,
    upload,
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
#: Columns of a round's float segment table: the window ``(lo, hi)``, then the segment's pruning
#: levels from `PRUNE_FROM` on (falling, each above ``lo``; padded with ``-inf``), if it has any.
LO, HI = range(2)
PRUNE_FROM = 2
#: First Philox block of the pruning decisions (the block of level ``m`` is ``PRUNE_DRAW + m``):
#: above any model's step blocks and its start blocks (``2**62`` on), so they share no numbers.
PRUNE_DRAW = np.int64(3) << np.int64(61)
#: A trial that survived ``m`` pruning levels goes on with the draws of trial id
#: ``id + m << RESUME_SHIFT``: trial ids are below ``2**60`` and levels at most `MAX_PRUNE_LEVELS`,
#: so no two trials of a round, nor two legs of one, share numbers (and every id stays below 2**63).
RESUME_SHIFT = np.int64(60)
MAX_PRUNE_LEVELS = 6
#: Columns of ``run.kept``'s totals per segment (int64): trials that reached ``hi``, their
#: steps, the steps of all its trials, and its trials out of steps. A trial that reached ``hi``
#: after surviving ``m`` pruning levels counts ``2**m`` times in the first two.
TOTAL_COLUMNS = ("reached", "reached_steps", "steps", "censored")
REACHED_COUNT, REACHED_STEPS, ALL_STEPS, CENSORED_COUNT = range(len(TOTAL_COLUMNS))


@functools.cache
def trial_runner(kernel: TrialKernel, backend: str):
    """Compile ``kernel`` for ``backend``; return its runner of one round.

    ``run(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels=None)``:

    ``segments`` (int64, one row per segment, columns `BEGIN` .. `POOL_COUNT`) and
    ``windows`` (float64, columns `LO`, `HI` and pruning levels from `PRUNE_FROM` on, see the
    module docstring) describe the round; segments tile the trials
    ``0 .. steps.size - 1`` in order, each with ``POOL_COUNT >= 1``. Trial ``i`` of segment
    ``k`` (``j = i - BEGIN``) uses parameter row ``params[ROW]``, starts from row
    ``POOL_FIRST + j mod POOL_COUNT`` of the float64 array ``pool``, runs in
    ``(LO, HI)`` with Philox stream ``STREAM`` and trial id ``FIRST_ID + j``, and leaves its
    step count in ``steps[i]``, its status in ``status[i]`` (a pruned trial is ``RETURNED``),
    its end state in ``ends[i]`` and the pruning levels it survived in ``levels[i]`` (int8;
    required when ``windows`` has pruning levels); all output arrays are filled in place.

    ``run.kept(params, segments, windows, pool, seed, max_steps, width) -> (totals, kept)``
    runs the same trials and returns only their totals per segment (int64, columns
    `TOTAL_COLUMNS`) and the first ``width - 1`` columns of the end states of the trials that
    reached ``hi``, in trial order (each as many times as it counts): what :func:`segment_totals`
    makes of the whole outputs
    (on a GPU as :class:`KeptRows`, left on the device; a ``pool`` may be such rows' ``buffer``).

    ``run.cycles(params, segments, cycle_windows, pool, seed, max_steps, half_stride, steps,
    status, crossings)`` runs each trial as a walker through ``steps.shape[1]`` half-cycles of
    forward flux sampling's flux, in one launch: see :func:`cycle_walker`.
    """
    return build_for(backend, kernel, _cpu_trials, _cuda_trials)


#: Columns of ``run.cycles``'s windows: the basin boundary, the first interface and the target.
BASIN, FIRST_INTERFACE, TARGET = range(3)


def cycle_walker(kernel: TrialKernel):
    """``walk(i, k, ...)``: walker ``i`` of segment ``k`` through its half-cycles, a scalar source for both targets.

    Half-cycle ``h`` of a walker is the trial with id ``FIRST_ID + j + h * half_stride``
    (``j = i - BEGIN``): even ones run up from the basin to the first interface (window
    ``(-inf, FIRST_INTERFACE)``), odd ones down from it to the basin (``(BASIN, TARGET)``).
    Half 0 starts from the walker's pool row, each later one from the end state of the one
    before, except after a down half that reached the target: then from a NaN row (the
    model's initial distribution). ``steps[i, h]`` and ``status[i, h]`` are the half's, and
    the end states of the up halves from ``h = 2`` on go to ``crossings[i, h // 2 - 1]``
    (``width - 1`` columns); ``carry`` (a row of ``width`` columns a walker) holds the state
    between halves. A half out of steps ends the walker (the halves after it are ``CENSORED``
    with 0 steps). This is the round-by-round flux, half after half, with each walker's halves
    in one trial: the same numbers, in one launch instead of one a half-cycle.

    Parameters
    ----------
    kernel : TrialKernel
        The trial's scalar pieces.

    Returns
    -------
    callable
        A ``numba.njit`` function, called by the CPU loop and the CUDA kernel alike.
    """
    prepare, start, advance, export = kernel.prepare, kernel.start, kernel.advance, kernel.export

    @numba.njit
    def walk(i, k, params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings, carry):
        stream, first = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
        coef = prepare(params[segments[k, ROW]])
        columns, halves = carry.shape[1] - 1, steps.shape[1]
        state = start(coef, pool, _pool_row(segments, k, i), seed, stream, first)
        for h in range(halves):
            trial = first + h * half_stride
            if h > 0:
                state = start(coef, carry, i, seed, stream, trial)
            up = h % 2 == 0
            lo = -np.inf if up else windows[k, BASIN]
            hi = windows[k, FIRST_INTERFACE] if up else windows[k, TARGET]
            code = RUNNING
            while code == RUNNING:
                state, code = advance(state, coef, lo, hi, max_steps, seed, stream, trial)
            steps[i, h], status[i, h] = state[0], code
            export(state, carry, i)
            if code == CENSORED:
                for rest in range(h + 1, halves):
                    steps[i, rest], status[i, rest] = 0, CENSORED
                return
            if not up and code == REACHED:  # escaped on the way back: start again from the basin
                for c in range(columns):
                    carry[i, c] = np.nan
            if up and h >= 2:
                for c in range(columns):
                    crossings[i, h // 2 - 1, c] = carry[i, c]

    return walk


def segment_totals(segments, steps, status, ends, levels=None) -> tuple:
    """Totals per segment (columns `TOTAL_COLUMNS`) and the reached trials' states (``ends[:, :-1]``), in trial order.

    Parameters
    ----------
    segments : ndarray
        The round's int64 segment table (columns `SEGMENT_COLUMNS`).
    steps, status, ends : ndarray
        The round's outputs (:func:`trial_runner`).
    levels : ndarray, optional
        Pruning levels each trial survived (none without).

    Returns
    -------
    tuple
        ``(totals, kept)``: int64 of shape ``(segments, 4)``, and float64 rows of the end
        states without their last column (the largest coordinate reached), each reached
        trial's ``2**levels`` times.
    """
    reached = status == REACHED
    copies = np.where(reached, np.left_shift(1, 0 if levels is None else levels.astype(np.int64)), 0)
    # segments tile the trials in order: a segment's total is the difference of running sums at its bounds
    bounds = np.append(segments[:, BEGIN], segments[-1, END] if len(segments) else 0)
    totals = [np.diff(np.concatenate([[0], np.cumsum(values, dtype=np.int64)])[bounds])
              for values in (copies, copies * steps, steps, status == CENSORED)]
    kept = np.repeat(ends[reached, :-1], copies[reached], axis=0)
    return np.column_stack(totals).reshape(len(segments), len(TOTAL_COLUMNS)), kept


def _levels_out(windows, n: int, levels):
    """The ``levels`` output of a round: as given, or scratch where its windows have no pruning levels."""
    if levels is None:
        if windows.shape[1] > PRUNE_FROM:
            raise ValueError("a round with pruning levels needs a levels output (the counts of its reached trials)")
        return np.empty(n, np.int8)
    return levels

class KeptRows:
    """Rows ``start .. stop - 1`` of the states a CUDA round kept, left on the device.

    A stage of forward flux sampling keeps the end states of its successes, and the next stage
    starts from them: on the device, so that the tens of megabytes of a large stage do not go
    to the host and back (:meth:`Rounds._round <gpuensembles.core.ffs.Rounds>` hands them to
    the next round where they lie). Slicing gives rows of the same buffer; ``numpy.asarray``
    copies the rows to the host. A runner thread keeps two such buffers and writes a round's
    states into the one its pool is not read from, so rows stay valid for one further kept
    round of their thread; rows read later than that raise ``RuntimeError`` (copy them with
    :func:`host_rows` before).

    Attributes
    ----------
    start, stop : int
        The rows of the buffer.
    """

    def __init__(self, buffer, start: int, stop: int):
        self._buffer, self.start, self.stop = buffer, int(start), int(stop)

    def __len__(self):
        return self.stop - self.start

    def __getitem__(self, index):
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("KeptRows take slices of step 1 only")
        a, b, _ = index.indices(len(self))
        return KeptRows(self._buffer, self.start + a, self.start + max(a, b))

    def __array__(self, dtype=None, copy=None):
        rows = host_rows([self])[0]
        return rows if dtype is None else rows.astype(dtype)

    def shares_buffer(self, other) -> bool:
        """Whether ``other`` is rows of the same buffer."""
        return isinstance(other, KeptRows) and other._buffer is self._buffer

    def buffer_rows(self, start: int, stop: int):
        """Rows ``start .. stop - 1`` of the same buffer."""
        return KeptRows(self._buffer, start, stop)

    @property
    def buffer(self):
        """The device buffer these rows are part of: what a runner takes as a round's ``pool``."""
        return self._buffer


class _KeptBuffer:
    """One write of a runner's kept states: its device array and its generation (see :class:`KeptRows`)."""

    def __init__(self, memory, key, array):
        self._memory, self.key, self._array = memory, key, array
        self._generation = memory.generation.get(key, 0)

    def array(self):
        """The device array, checked to hold this write still."""
        if self._memory.generation.get(self.key, 0) != self._generation:
            raise RuntimeError("kept states were read after their device buffer was written again")
        return self._array

    def to_host(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start .. stop - 1`` copied to the host, on the stream that wrote them."""
        out = np.empty((stop - start,) + tuple(self._array.shape[1:]))
        copy_back(self._memory.stream(), [(out, self.array()[start:stop])])
        return out


def host_rows(rows) -> list:
    """Host copies (float64 ndarrays) of ``rows``: ndarrays pass, :class:`KeptRows` of one buffer in one copy.

    Parameters
    ----------
    rows : list
        ndarrays, or :class:`KeptRows`.

    Returns
    -------
    list of ndarray
        The rows in the same order; those of a buffer are views of one copy of the span they cover.
    """
    buffers = {}
    for r in rows:
        if isinstance(r, KeptRows) and len(r):
            buffers.setdefault(id(r._buffer), []).append(r)
    spans = {}
    for key, mine in buffers.items():
        a, b = min(r.start for r in mine), max(r.stop for r in mine)
        spans[key] = (a, mine[0]._buffer.to_host(a, b))
    out = []
    for r in rows:
        if not isinstance(r, KeptRows):
            out.append(np.asarray(r, dtype=np.float64))
        elif not len(r):
            out.append(_no_rows(r))
        else:
            a, span = spans[id(r._buffer)]
            out.append(span[r.start - a:r.stop - a])
    return out


def _no_rows(rows) -> np.ndarray:
    return np.zeros((0,) + tuple(rows._buffer.array().shape[1:]))


def _trial_count(segments) -> int:
    """Trials of a round: its segments tile them in order."""
    return int(segments[-1, END]) if len(segments) else 0


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


@numba.njit
def _copies(status, levels, first, n, items):
    """Kept rows of trials ``first .. first + items - 1`` (below ``n``): ``2**levels`` for each that reached ``hi``."""
    copies = np.int64(0)
    for i in range(first, min(first + items, n)):
        if status[i] == REACHED:
            copies += np.int64(1) << np.int64(levels[i])
    return copies


@numba.njit
def _floor(windows, k, level):
    """Where a trial of segment ``k`` past ``level`` pruning levels stops falling: the next level, or ``LO``."""
    column = PRUNE_FROM + level
    if column < windows.shape[1] and windows[k, column] > windows[k, LO]:
        return windows[k, column]
    return windows[k, LO]


def pruned_advance(kernel: TrialKernel):
    """``go(...)``: one advance of a trial that may be pruned, a scalar source for both targets.

    ``go(state, coef, windows, k, level, before, max_steps, seed, stream, trial, ends, i)``.

    Returns ``(state, code, level, before)``. A trial that falls through its next pruning
    level (``level`` survived so far) is ended there (``RETURNED``) or, with probability 1/2,
    goes on (``RUNNING``) one level lower: ``before`` adds the steps so far, and the trial
    starts afresh from its state (written to row ``i`` of ``ends`` and read back) with the
    draws of trial id ``trial + level << RESUME_SHIFT``. Not simply on: a model's state carries
    the draws of its current block of steps, and a trial that stopped within one would take
    that block's draws again; ``max_steps`` then counts from the restart.

    Parameters
    ----------
    kernel : TrialKernel
        The model's trial: its ``start``, ``advance`` and ``export`` are used.

    Returns
    -------
    callable
        ``go``, compiled with ``numba.njit`` for whichever target calls it.
    """
    start, advance, export = kernel.start, kernel.advance, kernel.export

    @numba.njit
    def go(state, coef, windows, k, level, before, max_steps, seed, stream, trial, ends, i):
        floor = _floor(windows, k, level)
        state, code = advance(state, coef, floor, windows[k, HI], max_steps, seed, stream,
                              trial + (level << RESUME_SHIFT))
        if code == RETURNED and floor > windows[k, LO]:
            if rng.philox_block(seed, stream, trial, PRUNE_DRAW + level)[0] & np.uint32(1):
                before += state[0]
                level += 1
                export(state, ends, i)
                state = start(coef, ends, i, seed, stream, trial + (level << RESUME_SHIFT))
                code = RUNNING
        return state, code, level, before

    return go


def _cpu_trials(kernel):
    prepare, start, export = kernel.prepare, kernel.start, kernel.export
    go = pruned_advance(kernel)

    @cached
    @numba.njit(parallel=True)
    def run_items(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels, n_threads):
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
                code, level, before = RUNNING, 0, np.int64(0)
                while code == RUNNING:
                    state, code, level, before = go(state, coef, windows, k, level, before, max_steps, seed, stream,
                                                    trial, ends, i)
                steps[i] = before + state[0]
                status[i] = code
                levels[i] = level
                export(state, ends, i)

    walk = cycle_walker(kernel)

    @cached
    @numba.njit(parallel=True)
    def cycle_items(params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings, carry,
                    n_threads):
        for t in numba.prange(n_threads):
            k = 0
            for i in range(t, steps.shape[0], n_threads):
                k = _segment_of(segments, i, k)
                walk(i, k, params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings,
                     carry)

    def run_cpu(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels=None):
        levels = _levels_out(windows, steps.size, levels)
        if steps.size:
            run_items(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels,
                      numba.get_num_threads())

    def cycles_cpu(params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings):
        if steps.size:
            carry = np.empty((steps.shape[0], crossings.shape[2] + 1))
            cycle_items(params, segments, windows, pool, seed, max_steps, np.int64(half_stride), steps, status,
                        crossings, carry, numba.get_num_threads())

    def kept_cpu(params, segments, windows, pool, seed, max_steps, width):
        n = _trial_count(segments)
        steps, status, ends = np.empty(n, np.int64), np.empty(n, np.int8), np.empty((n, width), np.float64)
        levels = np.empty(n, np.int8)
        run_cpu(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels)
        return segment_totals(segments, steps, status, ends, levels)

    run_cpu.kernel, run_cpu.kept, run_cpu.cycles = run_items, kept_cpu, cycles_cpu
    return run_cpu


_CUDA_THREADS_PER_BLOCK = 128
#: Threads of a block that gathers reached states (``run.kept``; the simulator runs every thread as a
#: Python thread), and the trials each of them reads: a block takes a tile of their product. Small
#: blocks, so that they find room beside another thread's resident trial grid (the Josephson
#: trials take 80 registers a thread, 6 blocks of 128 a multiprocessor); the gather's own
#: registers were not measured.
_GATHER_THREADS, _SIMULATED_GATHER_THREADS = 128, 4
_GATHER_ITEMS, _SIMULATED_GATHER_ITEMS = 8, 2
assert all(t & (t - 1) == 0 for t in (_GATHER_THREADS, _SIMULATED_GATHER_THREADS)), \
    "the prefix sums need a power of two"
#: Views of each of a runner's device arrays kept for reuse (:meth:`_RoundMemory.array`).
_VIEWS_KEPT = 4
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
    round's outputs (34 bytes a trial), its pool (16 or 24 bytes a start state) and its segments,
    and for ``run.kept`` its totals per segment and the reached trials' states, in two buffers
    (:class:`KeptRows`: a round reads its pool from one and keeps its states in the other), and
    for ``run.cycles`` its walkers' half-cycles, crossings and carried states; besides, the gather's
    offsets (8 bytes a tile of trials) and the last few views of each array. What a round uploads
    goes through a pinned host copy of its own (:meth:`copied`), as large as the largest upload.
    """

    def __init__(self):
        self._arrays, self._views, self._pinned, self._stream = {}, {}, {}, None
        self.generation = {}  # writes of each kept-states buffer (KeptRows check theirs)

    def stream(self):
        """The runner's stream, made at its first round."""
        if self._stream is None:
            self._stream = cuda.stream()
        return self._stream

    def array(self, key, shape, dtype):
        """A device view of ``shape`` and ``dtype`` over the kept array ``key`` (grown to twice the rows if short)."""
        shape = tuple(shape)
        kept = self._arrays.get(key)
        if kept is None or kept.shape[0] < shape[0] or kept.shape[1:] != shape[1:] or kept.dtype != dtype:
            rows = max(shape[0], 2 * kept.shape[0] if kept is not None and kept.shape[1:] == shape[1:] else 0)
            kept = self._arrays[key] = cuda.device_array((rows,) + shape[1:], dtype=dtype)
            self._views[key] = {}
        # the last few views of each array are kept: a chain's pilot and stage rounds repeat their
        # sizes, and a device view costs numba-cuda about as much host time as a launch
        views = self._views[key]
        view = views.get(shape)
        if view is None:
            if len(views) >= _VIEWS_KEPT:
                del views[next(iter(views))]
            view = views[shape] = kept[:shape[0]]
        return view

    def copied(self, key, host, stream):
        """The kept array ``key`` holding a copy of ``host``, uploaded from pinned memory.

        An upload from pageable memory first waits for the stream's earlier work (the previous
        round's gather of kept states), and other threads' pageable copies wait with it; from
        pinned memory it is queued behind that work, and the host goes on. No key is uploaded
        twice between two waits for the stream (a round waits for its totals or outputs), so an
        upload has finished before its pinned copy is written again.
        """
        host = np.ascontiguousarray(host)
        view = self.array(key, host.shape, host.dtype)
        if host.size:
            pinned = self._pinned.get(key)
            if pinned is not None and pinned.dtype != host.dtype:
                # dropping a pinned copy whose upload may still be queued would free memory the
                # driver is about to read: each key uploads one kind of array
                raise RuntimeError(f"upload key {key!r} was used for {pinned.dtype} and then {host.dtype}")
            if pinned is None or pinned.size < host.size:
                grown = 2 * pinned.size if pinned is not None else 0
                pinned = self._pinned[key] = cuda.pinned_array(max(host.size, grown), dtype=host.dtype)
            staged = pinned[:host.size].reshape(host.shape)
            staged[...] = host
            upload(view, staged, stream)
        return view

    def pool(self, key, pool, stream):
        """A round's pool on the device: a :class:`KeptRows` buffer as it lies, host rows copied into ``key``."""
        return pool.array() if isinstance(pool, _KeptBuffer) else self.copied(key, pool, stream)

    def kept_buffer(self, shape, pool):
        """A buffer for a round's kept states: of the two, the one the round's ``pool`` is not read from."""
        key = "kept 1" if isinstance(pool, _KeptBuffer) and pool.key == "kept 0" else "kept 0"
        self.generation[key] = self.generation.get(key, 0) + 1
        return _KeptBuffer(self, key, self.array(key, shape, np.float64))


def _cuda_trials(kernel):
    bind_cuda(globals())
    prepare, start, export = kernel.prepare, kernel.start, kernel.export
    go = pruned_advance(kernel)
    simulated = simulating_cuda()
    readable = simulator_copy if simulated else identity
    writable = simulator_view if simulated else identity

    @cached
    @cuda.jit(fastmath=True)
    def run_kernel(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels, counter, totals):
        # persistent threads: a lane whose trial ends takes the next from the counter, and adds the
        # trial to its segment's totals (integer sums: the order of adding changes nothing)
        params, segments, windows, pool = readable(params), readable(segments), readable(windows), readable(pool)
        n = steps.shape[0]
        i = cuda.atomic.add(counter, 0, 1)
        k = _segment_of(segments, min(i, n - 1), 0)
        stream, trial = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
        coef = prepare(params[segments[k, ROW]])
        state = start(coef, pool, _pool_row(segments, k, i), seed, stream, trial)
        level, before = 0, np.int64(0)
        while i < n:
            state, code, level, before = go(state, coef, windows, k, level, before, max_steps, seed, stream, trial,
                                            writable(ends), i)
            if code != RUNNING:
                taken = before + np.int64(state[0])
                steps[i] = taken
                status[i] = code
                levels[i] = level
                export(state, writable(ends), i)
                cuda.atomic.add(totals, (k, ALL_STEPS), taken)
                if code == REACHED:
                    copies = np.int64(1) << np.int64(level)
                    cuda.atomic.add(totals, (k, REACHED_COUNT), copies)
                    cuda.atomic.add(totals, (k, REACHED_STEPS), taken * copies)
                elif code == CENSORED:
                    cuda.atomic.add(totals, (k, CENSORED_COUNT), 1)
                i = cuda.atomic.add(counter, 0, 1)
                if i < n:
                    k = _segment_of(segments, i, k)
                    stream, trial = np.uint32(segments[k, STREAM]), _trial_id(segments, k, i)
                    coef = prepare(params[segments[k, ROW]])
                    state = start(coef, pool, _pool_row(segments, k, i), seed, stream, trial)
                    level, before = 0, np.int64(0)

    walk = cycle_walker(kernel)

    @cached
    @cuda.jit(fastmath=True)
    def cycles_kernel(params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings, carry):
        # one thread a walker: its half-cycles follow one another in it
        params, segments, windows, pool = readable(params), readable(segments), readable(windows), readable(pool)
        i = cuda.grid(1)
        if i < steps.shape[0]:
            walk(i, _segment_of(segments, i, 0), params, segments, windows, pool, seed, max_steps, half_stride,
                 writable(steps), writable(status), writable(crossings), writable(carry))

    per_thread = threading.local()  # runners are cached per process: threads of a worker share them
    gather_threads = _SIMULATED_GATHER_THREADS if simulated else _GATHER_THREADS
    items = _SIMULATED_GATHER_ITEMS if simulated else _GATHER_ITEMS

    @cuda.jit(device=True)
    def block_prefix(below, t, value):
        # (inclusive prefix sum, total) of value over the block's threads (Hillis-Steele in the shared below)
        below[t] = value
        cuda.syncthreads()
        step = 1
        while step < gather_threads:
            add = below[t - step] if t >= step else 0
            cuda.syncthreads()
            below[t] += add
            cuda.syncthreads()
            step *= 2
        prefix, total = below[t], below[gather_threads - 1]
        cuda.syncthreads()  # below may be written again
        return prefix, total

    # The kept states are the reached trials' end states in trial order, each 2**levels times: row
    # r of kept is the trial whose copies, counted over all trials before it, pass r. Segments tile
    # the trials in order, so that is each segment's states from the rows of the segments before.
    # Three launches: copies per tile of trials, their exclusive prefix sums, then the rows.
    @cached
    @cuda.jit
    def count_kernel(status, levels, n, sums):
        below = cuda.shared.array(gather_threads, np.int64)
        t = cuda.threadIdx.x
        mine = _copies(readable(status), readable(levels), (cuda.blockIdx.x * gather_threads + t) * items, n, items)
        _, total = block_prefix(below, t, mine)
        if t == 0:
            sums[cuda.blockIdx.x] = total

    @cached
    @cuda.jit
    def offsets_kernel(sums, tiles):
        # one block: the tiles' copies become the kept rows before each tile, in place
        below = cuda.shared.array(gather_threads, np.int64)
        t = cuda.threadIdx.x
        carried = np.int64(0)
        for base in range(0, tiles, gather_threads):
            value = sums[base + t] if base + t < tiles else np.int64(0)
            prefix, total = block_prefix(below, t, value)
            if base + t < tiles:
                sums[base + t] = carried + prefix - value
            carried += total

    @cached
    @cuda.jit
    def gather_kernel(status, levels, ends, n, offsets, kept):
        below = cuda.shared.array(gather_threads, np.int64)
        t = cuda.threadIdx.x
        first = (cuda.blockIdx.x * gather_threads + t) * items
        mine = _copies(readable(status), readable(levels), first, n, items)
        prefix, _ = block_prefix(below, t, mine)
        row = offsets[cuda.blockIdx.x] + prefix - mine
        for i in range(first, min(first + items, n)):
            if status[i] == REACHED:
                for _ in range(np.int64(1) << np.int64(levels[i])):
                    for c in range(kept.shape[1]):
                        kept[row, c] = ends[i, c]
                    row += 1

    def thread_memory():
        """This thread's kept arrays and stream."""
        memory = getattr(per_thread, "memory", None)
        if memory is None:
            memory = per_thread.memory = _RoundMemory()
        return memory

    resident = {}  # blocks of the trial kernel that stay resident at once, per device

    def launch(params, segments, windows, pool, seed, max_steps, n, width):
        """Run the round's ``n`` trials; their outputs and totals stay on the device (this thread's kept arrays).

        The persistent grid is what stays resident at once: a larger one only queues blocks that
        find the trials taken, and meanwhile keeps out the small kernels of another thread's
        round on the GPU, which then waits for this whole round.
        """
        memory = thread_memory()
        run_stream = memory.stream()
        with out_of_memory_as_memory_error(f"a round of {n} trials"):
            device = [memory.copied(k, a, run_stream) for k, a in
                      (("params", params), ("segments", segments), ("windows", windows), ("counter", _ZERO))]
            device.insert(3, memory.pool("pool", pool, run_stream))
            outputs = [memory.array(f"out {k}", shape, dtype) for k, (shape, dtype) in
                       enumerate((((n,), np.int64), ((n,), np.int8), ((n, width), np.float64), ((n,), np.int8)))]
            totals = memory.copied("totals", np.zeros((len(segments), len(TOTAL_COLUMNS)), np.int64), run_stream)
        args = (*device[:-1], np.uint32(seed), np.int64(max_steps), *outputs, device[-1], totals)
        if simulated:
            blocks, threads = 1, min(n, 8)
        else:
            threads = _CUDA_THREADS_PER_BLOCK
            where = cuda.get_current_device().id
            if where not in resident:
                resident[where] = compiled(run_kernel, *args).max_cooperative_grid_blocks(threads)
            blocks = max(1, min(resident[where], -(-n // threads)))
        with launching("trials", run_stream):
            run_kernel[blocks, threads, run_stream](*args)
        return memory, run_stream, outputs, totals

    def run_cuda(params, segments, windows, pool, seed, max_steps, steps, status, ends, levels=None):
        n = steps.size
        levels = _levels_out(windows, n, levels)
        if n == 0:
            return
        _, run_stream, outputs, _ = launch(params, segments, windows, pool, seed, max_steps, n, ends.shape[1])
        copy_back(run_stream, zip((steps, status, ends, levels), outputs))

    def kept_cuda(params, segments, windows, pool, seed, max_steps, width):
        n = _trial_count(segments)
        totals = np.zeros((len(segments), len(TOTAL_COLUMNS)), dtype=np.int64)
        if n == 0:
            return totals, np.empty((0, width - 1))
        memory, run_stream, (_, d_status, d_ends, d_levels), d_totals = launch(
            params, segments, windows, pool, seed, max_steps, n, width)
        copy_back(run_stream, [(totals, d_totals)])
        n_kept = int(totals[:, REACHED_COUNT].sum())
        tiles = -(-n // (gather_threads * items))
        with out_of_memory_as_memory_error(f"the {n_kept} reached states of a round"):
            buffer = memory.kept_buffer((n_kept, width - 1), pool)
            offsets = memory.array("kept offsets", (tiles,), np.int64)
        if n_kept:
            with launching("kept states", run_stream):
                count_kernel[tiles, gather_threads, run_stream](d_status, d_levels, np.int64(n), offsets)
                offsets_kernel[1, gather_threads, run_stream](offsets, np.int64(tiles))
                gather_kernel[tiles, gather_threads, run_stream](d_status, d_levels, d_ends, np.int64(n), offsets,
                                                                 buffer.array())
        # the next round reads them on this stream, the host through host_rows (which waits for it)
        return totals, KeptRows(buffer, 0, n_kept)

    def cycles_cuda(params, segments, windows, pool, seed, max_steps, half_stride, steps, status, crossings):
        n = steps.shape[0]
        if n == 0:
            return
        memory = thread_memory()
        run_stream = memory.stream()
        threads = min(n, 8) if simulated else _CUDA_THREADS_PER_BLOCK
        with out_of_memory_as_memory_error(f"a flux round of {n} walkers"):
            device = [memory.copied(f"cycles {k}", a, run_stream) for k, a in enumerate((params, segments, windows))]
            device.append(memory.pool("cycles 3", pool, run_stream))
            outputs = [memory.array(f"cycles out {k}", a.shape, a.dtype) for k, a in enumerate((steps, status,
                                                                                               crossings))]
            carry = memory.array("cycles carry", (n, crossings.shape[2] + 1), np.float64)
        with launching("flux cycles", run_stream):
            cycles_kernel[-(-n // threads), threads, run_stream](*device, np.uint32(seed), np.int64(max_steps),
                                                                 np.int64(half_stride), *outputs, carry)
        copy_back(run_stream, zip((steps, status, crossings), outputs))

    run_cuda.kernel, run_cuda.kept, run_cuda.cycles = run_kernel, kept_cuda, cycles_cuda
    run_cuda.kernels = (run_kernel, count_kernel, offsets_kernel, gather_kernel, cycles_kernel)
    return run_cuda
