"""Checkerboard lattice sweeps (2D Ising Metropolis) on both targets.

The physics is in :mod:`gpuensembles.models.metropolis` (one ``numba.jit`` source for
the CPU and CUDA). This module supplies the loops: half-sweeps over groups of lattices,
per-lane counting of flips, magnetization and anti-aligned bonds on measurement sweeps,
and the accumulation of the measurements into bins (:func:`metropolis.record`).

A run is ``run(lattice, thr, group0, seed, key, geometry, schedule, bins, series)``:

* ``lattice``: 1-D array of ``n_groups`` blocks of ``2 L S`` items (uint32 words or int8
  spins), updated in place; ``thr``: the groups' thresholds (``THRESHOLD_STRIDE`` each);
* ``geometry = (L, S, strips, systems_per_group, lanes_per_system, n_systems)``: system
  ``s`` (``< n_systems``) of the block is lanes ``[(s % spg) span, + span)`` of group
  ``s // spg``;
* ``schedule = (thermalization, sweeps, measure_every)``: a measurement after every
  ``measure_every``-th sweep past the thermalization;
* ``bins (n_systems, n_bins, 6)``, ``series (n_systems, n_measurements or 0, 2)``: float64
  outputs of :func:`metropolis.record` (bins must start at zero).

Counts are integers (exact and order-independent), so both targets give identical bins.
"""

import functools
import warnings

import numba
import numpy as np

from ..models import metropolis
from . import _bind_cuda, _identity, _out_of_memory_as_memory_error, _simulator_view, simulating_cuda

cuda = None  # numba.cuda once a CUDA template is built (see _bind_cuda)

KINDS = ("multispin", "int8")
_COUNTS = 3  # per lane: down spins, anti-aligned bonds, flips in the measured sweep
#: Below this many items per half-sweep, CPU threads take whole groups instead of items.
_MIN_ITEMS_PER_HALF_SWEEP = 1 << 16


def items_per_colour(kind: str, L: int, S: int) -> int:
    """Update items per colour of one group: words (multi-spin) or quads of sites (int8)."""
    return L * S if kind == "multispin" else L * ((S + 3) // 4)


@metropolis.jit
def _system_counts(counts, s, spg, span):
    g = s // spg
    lane0 = (s - g * spg) * span
    down = 0
    anti = 0
    flips = 0
    for lane in range(lane0, lane0 + span):
        down += counts[g, lane, 0]
        anti += counts[g, lane, 1]
        flips += counts[g, lane, 2]
        counts[g, lane, 0] = 0
        counts[g, lane, 1] = 0
        counts[g, lane, 2] = 0
    return down, anti, flips


@numba.njit(parallel=True)
def initial_lattice(lattice, multispin, hot, L, S, group0, seed, key):
    """Fill ``lattice`` with all spins up (cold) or independent random spins (hot)."""
    n_items = lattice.size
    per_group = 2 * L * S
    for i in numba.prange(n_items):
        g = i // per_group
        r = metropolis.philox4x32(metropolis.START_COUNTER, 0, i - g * per_group, group0 + g, seed, key)[0]
        if multispin:
            lattice[i] = r if hot else 0
        else:
            lattice[i] = 1 - 2 * (r & 1) if hot else 1


# --------------------------------------------------------------------------- CPU


@numba.njit
def _add_lanes(counts, g, q, w, weight):
    for lane in range(32):
        counts[g, lane, q] += weight * ((w >> lane) & 1)


@numba.njit
def _measure_words(lattice, g, L, S, strips, counts):
    base = g * 2 * L * S
    for k in range(L * S):
        ones, twos, fours = metropolis.anti_aligned(lattice, base, k, L, S, strips)
        _add_lanes(counts, g, 1, ones, 1)
        _add_lanes(counts, g, 1, twos, 2)
        _add_lanes(counts, g, 1, fours, 4)
        _add_lanes(counts, g, 0, lattice[base + k], 1)
        _add_lanes(counts, g, 0, lattice[base + L * S + k], 1)


@numba.njit
def _measure_sites(lattice, g, L, S, strips, counts):
    base = g * 2 * L * S
    for k in range(L):
        down, anti = metropolis.site_counts(lattice, base, k, L, S)
        counts[g, 0, 0] += down
        counts[g, 0, 1] += anti


@numba.njit
def _add_flips_words(counts, g, w):
    _add_lanes(counts, g, 2, w, 1)


@numba.njit
def _add_flips_sites(counts, g, n):
    counts[g, 0, 2] += n


@functools.lru_cache(maxsize=None)
def cpu_runner(kind: str):
    """``run(...)`` (see the module docstring) for the CPU, parallel over the items of a half-sweep."""
    multispin = kind == "multispin"
    update = metropolis.update_word if multispin else metropolis.update_quad
    add_flips = _add_flips_words if multispin else _add_flips_sites
    measure = _measure_words if multispin else _measure_sites
    stride = metropolis.THRESHOLD_STRIDE[kind]

    @numba.njit
    def measure_and_record(lattice, g0, g1, L, S, strips, spg, span, n_systems, counts, i, n_measurements, bins,
                           series):
        for g in range(g0, g1):
            measure(lattice, g, L, S, strips, counts)
        for s in range(g0 * spg, min(g1 * spg, n_systems)):
            down, anti, n_flips = _system_counts(counts, s, spg, span)
            metropolis.record(bins, series, s, i, n_measurements, L * L, down, anti, n_flips)

    @numba.njit(parallel=True)
    def run_groups(lattice, thr, group0, seed, key, L, S, strips, spg, span, n_systems, therm, sweeps, every, items,
                   bins, series):
        # Many groups: each thread runs whole groups through the whole schedule.
        per_group = 2 * L * S
        n_groups = lattice.size // per_group
        counts = np.zeros((n_groups, 32, _COUNTS), dtype=np.int64)
        for g in numba.prange(n_groups):
            i = 0
            for t in range(therm + sweeps):
                measured = t >= therm and (t - therm + 1) % every == 0
                for c in range(2):
                    for k in range(items):
                        f = update(lattice, g * per_group, g * stride, c, k, L, S, strips, thr, seed, key,
                                   np.uint32(2 * t + c), group0 + g)
                        if measured:
                            add_flips(counts, g, f)
                if measured:
                    measure_and_record(lattice, g, g + 1, L, S, strips, spg, span, n_systems, counts, i,
                                       sweeps // every, bins, series)
                    i += 1

    @numba.njit(parallel=True)
    def run_items(lattice, thr, group0, seed, key, L, S, strips, spg, span, n_systems, therm, sweeps, every, items,
                  bins, series):
        # Few large lattices: the items of each half-sweep are spread over the threads.
        per_group = 2 * L * S
        n_groups = lattice.size // per_group
        flips = np.zeros(n_groups * items, dtype=np.uint32)
        counts = np.zeros((n_groups, 32, _COUNTS), dtype=np.int64)
        i = 0
        for t in range(therm + sweeps):
            measured = t >= therm and (t - therm + 1) % every == 0
            for c in range(2):
                for item in numba.prange(n_groups * items):
                    g = item // items
                    flips[item] = update(lattice, g * per_group, g * stride, c, item - g * items, L, S, strips, thr,
                                         seed, key, np.uint32(2 * t + c), group0 + g)
                if measured:
                    for g in numba.prange(n_groups):
                        for k in range(items):
                            add_flips(counts, g, flips[g * items + k])
            if measured:
                measure_and_record(lattice, 0, n_groups, L, S, strips, spg, span, n_systems, counts, i,
                                   sweeps // every, bins, series)
                i += 1

    def run(lattice, thr, group0, seed, key, geometry, schedule, bins, series):
        L, S, strips, spg, span, n_systems = geometry
        therm, sweeps, every = schedule
        n_groups = lattice.size // (2 * L * S)
        many = n_groups >= numba.config.NUMBA_NUM_THREADS or n_groups * L * S < _MIN_ITEMS_PER_HALF_SWEEP
        (run_groups if many else run_items)(
            lattice, thr, np.uint32(group0), np.uint32(seed), np.uint32(key), L, S, strips, spg, span, n_systems,
            therm, sweeps, every, items_per_colour(kind, L, S), bins, series)

    run.modes = (run_groups, run_items)
    return run


# --------------------------------------------------------------------------- CUDA

_THREADS = 256
_ALL_LANES = 0xFFFFFFFF
_TRANSPOSE = ((16, 0x0000FFFF), (8, 0x00FF00FF), (4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555))

#: Largest lattice the resident multi-spin kernel keeps in shared memory (``4 L^2`` bytes
#: per group of 32 lattices, within the 48 KiB every GPU grants without opting in).
RESIDENT_MAX_L = 110


def _lane_count_device():
    """``lane_count(w, buf)``: thread ``l`` of a full warp gets how many of the warp's 32
    words have bit ``l`` set (a 32 x 32 bit transpose, then ``popc``).

    On a GPU the transpose swaps blocks between lanes with ``shfl_xor_sync``; the CUDA
    simulator has no warp shuffles, so there it goes through shared memory ``buf`` (every
    thread of the block must then take part).
    """
    if simulating_cuda():
        @cuda.jit(device=True)
        def exchange(w, j, buf):
            t = cuda.threadIdx.x
            buf[t] = w
            cuda.syncthreads()
            other = buf[t ^ j]
            cuda.syncthreads()
            return other
    else:
        @cuda.jit(device=True)
        def exchange(w, j, buf):
            return cuda.shfl_xor_sync(_ALL_LANES, w, j)

    @cuda.jit(device=True)
    def swap(w, lane, j, mask, buf):
        other = np.uint32(exchange(w, j, buf))
        if lane & j:
            return np.uint32((w & ~np.uint32(mask)) | ((other >> np.uint32(j)) & np.uint32(mask)))
        return np.uint32((w & np.uint32(mask)) | ((other & np.uint32(mask)) << np.uint32(j)))

    @cuda.jit(device=True)
    def lane_count(w, buf):
        lane = cuda.threadIdx.x & 31
        w = np.uint32(w)
        for j, mask in _TRANSPOSE:
            w = swap(w, lane, j, mask, buf)
        return cuda.popc(w)

    return lane_count


@functools.lru_cache(maxsize=None)
def cuda_runner(kind: str):
    """``run(...)`` (see the module docstring) for CUDA: resident or launched per half-sweep."""
    _bind_cuda(globals())
    multispin = kind == "multispin"
    # The simulator runs the shared jit functions on the CPU, on numpy views of its arrays.
    sim = simulating_cuda()
    view = _simulator_view if sim else _identity
    update = metropolis.update_word if multispin else metropolis.update_quad
    if not sim:
        update = cuda.jit(device=True)(update)
    stride = metropolis.THRESHOLD_STRIDE[kind]
    lane_count = _lane_count_device()
    buf_size = 1024 if simulating_cuda() else 1

    @cuda.jit
    def half_sweep(lattice, thr, c, items, padded, n_groups, L, S, strips, seed, key, hs, group0, count, counts):
        buf = cuda.shared.array(buf_size, dtype=numba.uint32)
        lattice, thr = view(lattice), view(thr)
        tid = cuda.grid(1)
        g = tid // padded
        k = tid - g * padded
        f = np.uint32(0)
        if g < n_groups and k < items:
            f = np.uint32(update(lattice, g * 2 * L * S, g * stride, c, k, L, S, strips, thr, seed, key, hs,
                                 group0 + g))
        if count:
            if multispin:
                n = lane_count(f, buf)
                if g < n_groups and n > 0:
                    cuda.atomic.add(counts, (g, cuda.threadIdx.x & 31, 2), np.int64(n))
            elif f > 0:
                cuda.atomic.add(counts, (g, 0, 2), np.int64(f))

    @cuda.jit
    def measure(lattice, padded, n_groups, L, S, strips, counts):
        buf = cuda.shared.array(buf_size, dtype=numba.uint32)
        lattice = view(lattice)
        tid = cuda.grid(1)
        g = tid // padded
        k = tid - g * padded
        base = g * 2 * L * S
        if multispin:
            ones = twos = fours = black = white = np.uint32(0)
            if g < n_groups and k < L * S:
                ones, twos, fours = metropolis.anti_aligned(lattice, base, k, L, S, strips)
                black = lattice[base + k]
                white = lattice[base + L * S + k]
            anti = lane_count(ones, buf) + 2 * lane_count(twos, buf) + 4 * lane_count(fours, buf)
            down = lane_count(black ^ white, buf) + 2 * lane_count(black & white, buf)
            if g < n_groups:
                lane = cuda.threadIdx.x & 31
                cuda.atomic.add(counts, (g, lane, 0), np.int64(down))
                cuda.atomic.add(counts, (g, lane, 1), np.int64(anti))
        elif g < n_groups and k < L:
            down, anti = metropolis.site_counts(lattice, base, k, L, S)
            cuda.atomic.add(counts, (g, 0, 0), np.int64(down))
            cuda.atomic.add(counts, (g, 0, 1), np.int64(anti))

    @cuda.jit
    def record(counts, i, n_measurements, N, spg, span, n_systems, bins, series):
        s = cuda.grid(1)
        counts, bins, series = view(counts), view(bins), view(series)
        if s < n_systems:
            down, anti, flips = _system_counts(counts, s, spg, span)
            metropolis.record(bins, series, s, i, n_measurements, N, down, anti, flips)

    @cuda.jit
    def resident(lattice, thr, group0, seed, key, L, S, therm, sweeps, every, n_systems, bins, series):
        # One block per group of 32 lattices, kept in shared memory for the whole run.
        sh = cuda.shared.array(0, dtype=numba.uint32)
        tally = cuda.shared.array((_COUNTS, 32), dtype=numba.int32)
        buf = cuda.shared.array(buf_size, dtype=numba.uint32)
        thr, bins, series = view(thr), view(bins), view(series)
        g = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        words = L * S
        for i in range(tid, 2 * words, nt):
            sh[i] = lattice[g * 2 * words + i]
        if tid < 32:
            for q in range(_COUNTS):
                tally[q, tid] = 0
        cuda.syncthreads()
        rounds = (words + nt - 1) // nt
        n_measurements = sweeps // every
        i_meas = 0
        for t in range(therm + sweeps):
            measured = t >= therm and (t - therm + 1) % every == 0
            flips = 0
            for c in range(2):
                for r in range(rounds):
                    k = r * nt + tid
                    f = np.uint32(0)
                    if k < words:
                        f = np.uint32(update(sh, 0, g * 64, c, k, L, S, False, thr, seed, key, np.uint32(2 * t + c),
                                             group0 + g))
                    if measured:
                        flips += lane_count(f, buf)
                cuda.syncthreads()
            if measured:
                down = 0
                anti = 0
                for r in range(rounds):
                    k = r * nt + tid
                    ones = twos = fours = black = white = np.uint32(0)
                    if k < words:
                        ones, twos, fours = metropolis.anti_aligned(sh, 0, k, L, S, False)
                        black = sh[k]
                        white = sh[words + k]
                    anti += lane_count(ones, buf) + 2 * lane_count(twos, buf) + 4 * lane_count(fours, buf)
                    down += lane_count(black ^ white, buf) + 2 * lane_count(black & white, buf)
                lane = tid & 31
                cuda.atomic.add(tally, (0, lane), np.int32(down))
                cuda.atomic.add(tally, (1, lane), np.int32(anti))
                cuda.atomic.add(tally, (2, lane), np.int32(flips))
                cuda.syncthreads()
                s = g * 32 + tid
                if tid < 32 and s < n_systems:
                    metropolis.record(bins, series, s, i_meas, n_measurements, L * L, tally[0, tid], tally[1, tid],
                                      tally[2, tid])
                cuda.syncthreads()
                if tid < 32:
                    for q in range(_COUNTS):
                        tally[q, tid] = 0
                cuda.syncthreads()
                i_meas += 1
        for i in range(tid, 2 * words, nt):
            lattice[g * 2 * words + i] = sh[i]

    def run(lattice, thr, group0, seed, key, geometry, schedule, bins, series):
        L, S, strips, spg, span, n_systems = geometry
        therm, sweeps, every = schedule
        n_groups = lattice.size // (2 * L * S)
        seed, key, group0 = np.uint32(seed), np.uint32(key), np.uint32(group0)
        with _out_of_memory_as_memory_error(f"{n_groups} groups of {L} x {L} lattices"):
            d_lattice, d_thr, d_bins, d_series = (cuda.to_device(a) for a in (lattice, thr, bins, series))
            d_counts = cuda.to_device(np.zeros((n_groups, 32, _COUNTS), dtype=np.int64))
        stream = cuda.stream()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.core.errors.NumbaPerformanceWarning)
            if multispin and not strips and L <= RESIDENT_MAX_L:
                threads = min(1024, -(-(L * S) // 32) * 32)
                resident[n_groups, threads, stream, 8 * L * S](d_lattice, d_thr, group0, seed, key, L, S, therm,
                                                               sweeps, every, n_systems, d_bins, d_series)
            else:
                sweep = functools.partial(launch, stream, d_lattice, d_thr, d_counts, n_groups, L, S, strips, seed,
                                          key, group0)
                i = 0
                for t in range(therm + sweeps):
                    measured = t >= therm and (t - therm + 1) % every == 0
                    sweep(t, measured)
                    if measured:
                        record[-(-n_systems // 128), 128, stream](d_counts, i, sweeps // every, L * L, spg, span,
                                                                  n_systems, d_bins, d_series)
                        i += 1
        for host, device in ((lattice, d_lattice), (bins, d_bins), (series, d_series)):
            if host.size:
                device.copy_to_host(host, stream=stream)
        stream.synchronize()

    def launch(stream, d_lattice, d_thr, d_counts, n_groups, L, S, strips, seed, key, group0, t, measured):
        """Sweep ``t`` (two half-sweep launches), then the measurement counts if ``measured``."""
        threads = 32 if simulating_cuda() else _THREADS
        items = items_per_colour(kind, L, S)
        padded = -(-items // 32) * 32
        for c in range(2):
            half_sweep[-(-(n_groups * padded) // threads), threads, stream](
                d_lattice, d_thr, c, items, padded, n_groups, L, S, strips, seed, key, np.uint32(2 * t + c), group0,
                measured, d_counts)
        if measured:
            padded = -(-(L * S if multispin else L) // 32) * 32
            measure[-(-(n_groups * padded) // threads), threads, stream](d_lattice, padded, n_groups, L, S, strips,
                                                                        d_counts)

    run.kernels = (half_sweep, measure, record, resident)
    return run
