"""Quasi-greedy clone ensembles on a hypergraph (3-XORSAT) on both targets.

The physics is in :mod:`gpuensembles.models.quasi_greedy` (one ``numba.jit`` source for
the CPU and CUDA); this module supplies the loops. A call

``run(graph, bounds, N, runs, clones, P, always, timeout, seed, key1) -> Outcome``

runs ``len(runs)`` independent runs (ids ``runs``) of ``clones`` clones each on one
instance until each run has a solution or has made ``timeout`` sweeps. Work proceeds in
rounds of sweeps; within a round every word (32 clones) sweeps on its own until it sees
a solution, reaches the round's end, or learns that its run already has a solution at
an earlier sweep. A run's result is the smallest ``(sweep, clone)`` over its words, so it
is the same whatever the order in which words progress (CPU threads, GPU warps).

``best`` encodes a run's result as ``sweep << 32 | clone`` (``2^64 - 1``: none yet);
``sweep`` is the number of completed sweeps after which the clone was a solution.
"""

import functools
import time
from dataclasses import dataclass

import numba
import numpy as np

from ...core.backend import (
    bind_cuda,
    cached,
    copy_back,
    device_zeros,
    launching,
    out_of_memory_as_memory_error,
    simulating_cuda,
)
from . import physics as quasi_greedy

cuda = None  # numba.cuda once the CUDA runner is built (see bind_cuda)

NONE = np.uint64(0xFFFFFFFFFFFFFFFF)
#: The first round's sweeps; each later round is as long as all earlier ones together.
FIRST_ROUND = 64
#: 32-bit words of shared memory a CUDA block may use (48 KiB, granted without opting in).
_SHARED_WORDS = 12288
_MAX_WARPS = 8


@dataclass(frozen=True)
class Outcome:
    """What :func:`cpu_runner` / :func:`cuda_runner` return for one instance.

    ``best (runs,)`` uint64 (see the module docstring); ``winners (runs, N)`` uint32 the final
    clone word (32 clones, one uint32 a variable) that holds each run's best clone, zeros for a
    run without one; ``word_sweeps`` the sweeps the words made in total; ``seconds`` the wall
    time.
    """

    best: np.ndarray
    winners: np.ndarray
    word_sweeps: int
    seconds: float


@quasi_greedy.jit
def lowest_lane(x):
    """Index of the lowest set bit of a nonzero uint32."""
    lane = 0
    while not (x >> np.uint32(lane)) & np.uint32(1):
        lane += 1
    return lane


@quasi_greedy.jit
def valid_lanes(w, clones):
    """Lanes of word ``w`` that hold one of the ``clones`` clones."""
    left = clones - 32 * w
    return quasi_greedy.ALL_ONES if left >= 32 else np.uint32((np.uint64(1) << np.uint64(left)) - np.uint64(1))


@cached
@numba.njit(parallel=True)
def _initial(spins, N, runs, seed, key1):
    n_runs, words, _ = spins.shape
    for item in numba.prange(n_runs * words):
        i = item // words
        w = item - i * words
        for v in range(N):
            spins[i, w, v] = quasi_greedy.initial_word(seed, key1, N, v, w, runs[i])


def _start(N, runs, clones, seed, key1):
    words = -(-clones // 32)
    spins = np.empty((len(runs), words, N), dtype=np.uint32)
    _initial(spins, N, runs, seed, key1)
    return spins, np.zeros((len(runs), words), dtype=np.int64), np.full(len(runs), NONE)


def _winning_words(best) -> np.ndarray:
    """Per run, the index of the word that holds its best clone (0 for a run without one)."""
    return np.where(best == NONE, np.uint64(0), (best & np.uint64(0xFFFFFFFF)) >> np.uint64(5)).astype(np.int64)


def _rounds(best, timeout, sweep_round):
    """Call ``sweep_round(t_end)`` until every run is done; returns the word sweeps made."""
    t_end = 0
    while True:
        t_end = min(timeout + 1, max(FIRST_ROUND, 2 * t_end))
        sweep_round(t_end)
        # Done: a solution before this round's end (every word has looked up to it), or the timeout.
        if t_end > timeout or np.all((best >> np.uint64(32)) < np.uint64(t_end)):
            return


# --------------------------------------------------------------------------- CPU


@cached
@numba.njit(parallel=True)
def _round_cpu(spins, progress, found, best, graph, N, clones, P, always, timeout, seed, key1, runs, t_end):
    n_runs, words, _ = spins.shape
    flat = spins.reshape(-1)
    for item in numba.prange(n_runs * words):
        i = item // words
        w = item - i * words
        base = item * N
        valid = valid_lanes(w, clones)
        limit = best[i] >> np.uint64(32)
        t = progress[i, w]
        while t < t_end and t <= timeout and limit >= t:
            seen = np.uint32(0)
            for v in range(N):
                seen |= quasi_greedy.update(flat, base, graph, 0, v, N, P, always, t >= timeout, seed, key1,
                                            np.uint32(t), np.uint32(w), runs[i])
            solved = ~seen & valid
            t += 1
            if solved:
                found[i, w] = (np.uint64(t - 1) << np.uint64(32)) | np.uint64(32 * w + lowest_lane(solved))
                break
        progress[i, w] = t


def cpu_runner():
    """``run(...)`` (see the module docstring) for the CPU, parallel over the words of all runs."""

    def run(graph, bounds, N, runs, clones, P, always, timeout, seed, key1):
        spins, progress, best = _start(N, runs, clones, seed, key1)
        found = np.full(progress.shape, NONE)

        def sweep_round(t_end):
            _round_cpu(spins, progress, found, best, graph, N, clones, P, always, timeout, seed, key1, runs, t_end)
            np.minimum(best, found.min(axis=1), out=best)

        sweep_round(0)  # compiles (no sweep ends before 0): the clock starts after
        start = time.perf_counter()
        _rounds(best, timeout, sweep_round)
        winners = spins[np.arange(len(runs)), _winning_words(best)] * (best != NONE)[:, None].astype(np.uint32)
        return Outcome(best, winners, int(progress.sum()), time.perf_counter() - start)

    return run


# --------------------------------------------------------------------------- CUDA


def warps_per_block(N: int, n_sets: int) -> int:
    """Warps (one word each) per block so that the graph, the set bounds and every warp's
    ``N`` words fit in shared memory."""
    fixed = 3 * N + n_sets + 1
    return max(0, min(_MAX_WARPS, (_SHARED_WORDS - fixed) // (N + 2)))


@functools.lru_cache(maxsize=1)
def cuda_runner():
    """``run(...)`` (see the module docstring) for CUDA: one warp per word, one set per step."""
    bind_cuda(globals())
    sim = simulating_cuda()
    update = quasi_greedy.update if sim else cuda.jit(device=True)(quasi_greedy.update.py_func)
    if sim:  # no warp-level sync in the simulator: it runs one warp per block
        @cuda.jit(device=True)
        def syncwarp():
            cuda.syncthreads()
    else:
        @cuda.jit(device=True)
        def syncwarp():
            cuda.syncwarp()

    @cached
    @cuda.jit
    def round_kernel(spins, progress, best, graph, bounds, n_sets, N, clones, P, always, timeout, seed, key1, runs,
                    t_end, n_warps):
        # Block: n_warps warps, warp k on word (block % blocks_per_run) * n_warps + k of run block // blocks_per_run.
        sh = cuda.shared.array(0, dtype=numba.uint32)
        words = progress.shape[1]
        tid = cuda.threadIdx.x
        lane = tid & 31
        warp = tid >> 5
        per_run = (words + n_warps - 1) // n_warps
        i = cuda.blockIdx.x // per_run
        w = (cuda.blockIdx.x - i * per_run) * n_warps + warp
        g_end = 3 * N
        sp = g_end + n_sets + 1 + warp * N  # this warp's words
        scratch = g_end + n_sets + 1 + n_warps * N + 2 * warp
        for k in range(tid, g_end, cuda.blockDim.x):
            sh[k] = graph[k]
        for k in range(tid, n_sets + 1, cuda.blockDim.x):
            sh[g_end + k] = bounds[k]
        active = w < words
        if active:
            for k in range(lane, N, 32):
                sh[sp + k] = spins[i, w, k]
        cuda.syncthreads()
        if active:
            valid = valid_lanes(w, clones)
            t = progress[i, w]
            while t < t_end and t <= timeout:
                if lane == 0:
                    sh[scratch] = 0
                    known = cuda.atomic.max(best, i, np.uint64(0)) >> np.uint64(32)  # an atomic read
                    sh[scratch + 1] = 1 if known < t else 0
                syncwarp()
                if sh[scratch + 1]:
                    break
                frozen = t >= timeout
                seen = np.uint32(0)
                for s in range(n_sets):
                    v = sh[g_end + s] + lane
                    if v < sh[g_end + s + 1]:
                        seen |= update(sh, sp, sh, 0, v, N, P, always, frozen, seed, key1,
                                       np.uint32(t), np.uint32(w), runs[i])
                    syncwarp()
                cuda.atomic.or_(sh, scratch, seen)
                syncwarp()
                solved = ~sh[scratch] & valid
                syncwarp()
                t += 1
                if solved:
                    if lane == 0:
                        cuda.atomic.min(best, i, (np.uint64(t - 1) << np.uint64(32))
                                        | np.uint64(32 * w + lowest_lane(solved)))
                    break
            for k in range(lane, N, 32):
                spins[i, w, k] = sh[sp + k]
            if lane == 0:
                progress[i, w] = t

    @cached
    @cuda.jit
    def start_kernel(spins, N, runs, seed, key1):
        # the random start of every word of every run, set on the device (as _initial on the host)
        n_runs, words, _ = spins.shape
        for item in range(cuda.grid(1), n_runs * words * N, cuda.gridsize(1)):
            v = item % N
            rest = item // N
            w = rest % words
            i = rest // words
            spins[i, w, v] = quasi_greedy.initial_word(seed, key1, N, v, np.uint32(w), runs[i])

    @cached
    @cuda.jit
    def winners_kernel(spins, best, winners):
        # winners[i] = the clone word (N uint32) that holds run i's best clone, zeros without one
        n_runs, N = winners.shape
        for item in range(cuda.grid(1), n_runs * N, cuda.gridsize(1)):
            i = item // N
            v = item - i * N
            b = best[i]
            winners[i, v] = 0 if b == NONE else spins[i, (b & np.uint64(0xFFFFFFFF)) >> np.uint64(5), v]

    def run(graph, bounds, N, runs, clones, P, always, timeout, seed, key1):
        n_sets = len(bounds) - 1
        n_warps = 1 if sim else warps_per_block(N, n_sets)
        words = -(-clones // 32)
        n_warps = min(n_warps, words)
        blocks = len(runs) * -(-words // n_warps)
        shared = 4 * (3 * N + n_sets + 1 + n_warps * (N + 2))
        stream = cuda.stream()
        host_best = np.full(len(runs), NONE)
        with out_of_memory_as_memory_error(f"{len(runs)} runs of {clones} clones"):
            d_spins = cuda.device_array((len(runs), words, N), dtype=np.uint32, stream=stream)
            d_progress = device_zeros((len(runs), words), np.int64, stream=stream)
            d_winners = cuda.device_array((len(runs), N), dtype=np.uint32, stream=stream)
            d_best, d_graph, d_bounds, d_runs = (cuda.to_device(a, stream=stream) for a in (
                host_best, graph, bounds, np.asarray(runs, dtype=np.uint32)))
        fill = 1 if sim else min(4096, -(-d_spins.size // 256))
        with launching("xorsat", stream):
            start_kernel[fill, 1 if sim else 256, stream](d_spins, N, d_runs, seed, key1)

        def sweep_round(t_end):
            with launching("xorsat", stream):
                round_kernel[blocks, 32 * n_warps, stream, shared](
                    d_spins, d_progress, d_best, d_graph, d_bounds, n_sets, N, clones, P, always, timeout, seed, key1,
                    d_runs, t_end, n_warps)
            copy_back(stream, [(host_best, d_best)])

        sweep_round(0)  # compiles (no sweep ends before 0): the clock starts after
        start = time.perf_counter()
        _rounds(host_best, timeout, sweep_round)
        with launching("xorsat", stream):
            winners_kernel[1 if sim else min(4096, -(-d_winners.size // 256)), 1 if sim else 256, stream](
                d_spins, d_best, d_winners)
        progress = np.empty(d_progress.shape, d_progress.dtype)
        winners = np.empty(d_winners.shape, d_winners.dtype)
        copy_back(stream, [(progress, d_progress), (winners, d_winners)])
        return Outcome(host_best, winners, int(progress.sum()), time.perf_counter() - start)

    run.kernel = round_kernel
    run.kernels = [round_kernel, start_kernel, winners_kernel]
    return run
