"""Checkerboard lattice sweeps (2D Ising Metropolis) on both targets.

The physics is in :mod:`gpuensembles.models.ising.physics` (one ``numba.jit`` source for
the CPU and CUDA). This module supplies the loops: the initial lattice, half-sweeps over
groups of lattices, per-lane counting of flips, magnetization and anti-aligned bonds on
measurement sweeps, and the accumulation of the measurements into bins (:func:`metropolis.record`).

A run is ``run(lattice, thr, group0, seed, keys, hot, geometry, schedule, bins, series)``:

* ``lattice``: 1-D array of ``n_groups`` blocks of ``2 L S`` items (uint32 words or int8
  spins), filled with the initial lattice (random spins if ``hot``, else all up; drawn with
  ``keys[1]``, the updates with ``keys[0]``) and returned in its final state; ``thr``: the
  groups' thresholds (``THRESHOLD_STRIDE`` each);
* ``geometry = (L, S, strips, systems_per_group, lanes_per_system, n_systems)``: system
  ``s`` (``< n_systems``) of the block is lanes ``[(s % spg) span, + span)`` of group
  ``s // spg``;
* ``schedule = (thermalization, sweeps, measure_every)``: a measurement after every
  ``measure_every``-th sweep past the thermalization;
* ``bins (n_systems, n_bins, 6)``, ``series (n_systems, n_measurements or 0, 2)``: float64
  outputs of :func:`metropolis.record` (bins must start at zero);
* ``span = (first, stop)`` (default: the whole schedule): run sweeps ``first`` to
  ``stop - 1`` only, continuing from ``lattice`` as given (not drawing it) unless
  ``first = 0``, and adding to ``bins`` and ``series`` as they are. The random numbers are
  those of the sweeps' own numbers, so a run in several spans equals it in one, bit for bit
  (a stored run keeps its state between them).

Counts are integers (exact and order-independent), so both targets give identical bins.
"""

import functools
import os

import numba
import numpy as np

from ...core.backend import (
    bind_cuda,
    cached,
    compiled,
    copy_back,
    device_byte_perm,
    device_fence,
    device_product,
    device_zeros,
    identity,
    kernel_options,
    launching,
    out_of_memory_as_memory_error,
    prepared_launch,
    simulating_cuda,
    simulator_view,
)
from ...core.rng import mulhilo
from . import bands, vertical
from . import physics as metropolis

cuda = None  # numba.cuda once a CUDA template is built (see bind_cuda)

KINDS = ("multispin", "int8")
_COUNTS = 3  # per lane: down spins, anti-aligned bonds, flips in the measured sweep
_COUNTER_PLANES = vertical.PLANES  # (a local array's size must be a global of this module)
#: Below this many items per half-sweep, CPU threads take whole groups instead of items.
_MIN_ITEMS_PER_HALF_SWEEP = 1 << 16


def items_per_row(kind: str, S: int) -> int:
    """Update items per row of one colour: words (multi-spin) or quads of sites (int8)."""
    return S if kind == "multispin" else (S + 3) // 4


def words_of(lattice, kind: str, S: int, empty):
    """The uint32 words the update reads: the lattice itself (multi-spin), its uint32 view
    (int8 with ``S % 4 == 0``: a quad is one aligned word), else ``empty`` (unused)."""
    if kind == "multispin":
        return lattice
    return lattice.view(np.uint32) if S % 4 == 0 else empty


# The updates, with one signature: ``(lattice, words, base, tbase, c, y, item, L, S, strips, thr,
# seed, key, half-sweep, group)``, ``words`` as :func:`words_of` gives them.


@metropolis.jit
def _update_word(lattice, words, base, tbase, c, y, j, L, S, strips, thr, seed, key, hs, group):
    return metropolis.update_word(lattice, base, tbase, c, y, j, L, S, strips, thr, seed, key, hs, group)


@metropolis.jit
def _finish_word(lattice, at, undecided, dE4, thr, seed, key, hs, site, group):
    """Decide the lanes :func:`metropolis.decide_head` left undecided and flip the accepted ones."""
    accepted = metropolis.finish_lanes(undecided, dE4, thr, np.int64(0), seed, key, hs, site, group)
    lattice[at] = np.uint32(lattice[at] ^ accepted)
    return accepted


@metropolis.jit
def _update_quad_words(lattice, words, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group):
    # S % 4 == 0: the quad is one aligned uint32 of ``words``
    return metropolis.update_quad_words(words, base >> 2, tbase, c, y, q, L, S >> 2, thr, seed, key, hs, group)


@metropolis.jit
def _update_quad_sites(lattice, words, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group):
    return metropolis.update_quad(lattice, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group)


@metropolis.jit
def _update_quad(lattice, words, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group):
    if S & 3 == 0:
        return _update_quad_words(lattice, words, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group)
    return _update_quad_sites(lattice, words, base, tbase, c, y, q, L, S, strips, thr, seed, key, hs, group)


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


@metropolis.jit
def _initial_item(i, per_group, multispin, hot, group0, seed, key):
    """Item ``i`` (int64) of a fresh lattice: all spins up (cold) or independent random spins
    (hot), a uint32 word of 32 spins (multi-spin) or one int8 spin."""
    if not hot:  # nothing to draw
        return np.int64(0) if multispin else np.int64(1)
    g = i // per_group  # typed as the update's callees are: philox4x32 compiles once
    r = metropolis.philox4x32(np.uint32(metropolis.START_COUNTER), np.int64(0), i - g * per_group, group0 + g, seed,
                              key)[0]
    return np.int64(r) if multispin else np.int64(1 - 2 * np.int64(r & 1))


@cached
@numba.njit(parallel=True)
def initial_lattice(lattice, multispin, hot, L, S, group0, seed, key):
    """Fill ``lattice`` with all spins up (cold) or independent random spins (hot), on the CPU."""
    per_group = 2 * L * S
    for item in numba.prange(lattice.size):
        i = np.int64(item)
        lattice[i] = _initial_item(i, per_group, multispin, hot, group0, seed, key)


# --------------------------------------------------------------------------- CPU


@numba.njit
def _measure_words(lattice, g, L, S, strips, counts):
    base = g * 2 * L * S
    for y in range(L):
        for j in range(S):
            ones, twos, fours = metropolis.anti_aligned(lattice, base, y, j, L, S, strips)
            black = lattice[base + y * S + j]
            white = lattice[base + (L + y) * S + j]
            for lane in range(32):
                counts[g, lane, 0] += ((black >> lane) & 1) + ((white >> lane) & 1)
                counts[g, lane, 1] += ((ones >> lane) & 1) + 2 * ((twos >> lane) & 1) + 4 * ((fours >> lane) & 1)


@numba.njit
def _measure_sites(lattice, g, L, S, strips, counts):
    base = g * 2 * L * S
    for k in range(L):
        down, anti = metropolis.site_counts(lattice, base, k, L, S)
        counts[g, 0, 0] += down
        counts[g, 0, 1] += anti


@numba.njit
def _add_flips_words(counts, g, w):
    for lane in range(32):
        counts[g, lane, 2] += (w >> lane) & 1


@numba.njit
def _add_flips_sites(counts, g, n):
    counts[g, 0, 2] += n


@functools.cache
def cpu_runner(kind: str):
    """``run(...)`` (see the module docstring) for the CPU, parallel over the items of a half-sweep."""
    multispin = kind == "multispin"
    update = _update_word if multispin else _update_quad
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

    # Loop indices of a prange are cast to int64 and counters start as np.int64(0): a parallel
    # loop's body is typed again with uint64 indices and a literal 0 is a type of its own, and
    # numba compiles every callee once more for each such signature (the multi-spin CPU
    # kernel took 60 compilations, 47 s cold on two cores; now 33, 32 s).

    @cached
    @numba.njit(parallel=True)
    def run_groups(lattice, words, thr, group0, seed, key, L, S, strips, spg, span, n_systems, therm, sweeps, every,
                   row, bins, series, first, stop, i0):
        # Many groups: each thread runs whole groups through the sweeps [first, stop).
        per_group = 2 * L * S
        n_groups = lattice.size // per_group
        counts = np.zeros((n_groups, 32, _COUNTS), dtype=np.int64)
        for group in numba.prange(n_groups):
            g = np.int64(group)
            i = np.int64(i0)
            for t in range(first, stop):
                measured = t >= therm and (t - therm + 1) % every == 0
                for c in range(2):
                    for y in range(L):
                        for q in range(row):
                            f = update(lattice, words, g * per_group, g * stride, c, y, q, L, S, strips, thr, seed,
                                       key, np.uint32(2 * t + c), group0 + g)
                            if measured:
                                add_flips(counts, g, f)
                if measured:
                    measure_and_record(lattice, g, g + 1, L, S, strips, spg, span, n_systems, counts, i,
                                       sweeps // every, bins, series)
                    i += 1

    @cached
    @numba.njit(parallel=True)
    def run_items(lattice, words, thr, group0, seed, key, L, S, strips, spg, span, n_systems, therm, sweeps, every, row,
                  bins, series, first, stop, i0):
        # Few large lattices: the items of each half-sweep are spread over the threads.
        per_group = 2 * L * S
        n_groups = lattice.size // per_group
        items = L * row
        flips = np.zeros(n_groups * items, dtype=np.uint32)
        counts = np.zeros((n_groups, 32, _COUNTS), dtype=np.int64)
        i = np.int64(i0)
        for t in range(first, stop):
            measured = t >= therm and (t - therm + 1) % every == 0
            for c in range(2):
                for it in numba.prange(n_groups * items):
                    item = np.int64(it)
                    g = item // items
                    y = (item - g * items) // row
                    flips[item] = update(lattice, words, g * per_group, g * stride, c, y, item - g * items - y * row,
                                         L, S, strips, thr, seed, key, np.uint32(2 * t + c), group0 + g)
                if measured:
                    for group in numba.prange(n_groups):
                        g = np.int64(group)
                        for k in range(items):
                            add_flips(counts, g, flips[g * items + k])
            if measured:
                measure_and_record(lattice, np.int64(0), n_groups, L, S, strips, spg, span, n_systems, counts, i,
                                   sweeps // every, bins, series)
                i += 1

    def run(lattice, thr, group0, seed, keys, hot, geometry, schedule, bins, series, span=None):
        L, S, strips, spg, span_lanes, n_systems = geometry
        therm, sweeps, every = schedule
        first, stop = span or (0, therm + sweeps)
        if first == 0:
            initial_lattice(lattice, multispin, hot, L, S, np.uint32(group0), np.uint32(seed), keys[1])
        key = keys[0]
        n_groups = lattice.size // (2 * L * S)
        many = n_groups >= numba.config.NUMBA_NUM_THREADS or n_groups * L * S < _MIN_ITEMS_PER_HALF_SWEEP
        words = words_of(lattice, kind, S, np.empty(0, np.uint32))
        (run_groups if many else run_items)(
            lattice, words, thr, np.uint32(group0), np.uint32(seed), np.uint32(key), L, S, strips, spg, span_lanes,
            n_systems, therm, sweeps, every, items_per_row(kind, S), bins, series, np.int64(first), np.int64(stop),
            np.int64(measured_before(first, therm, every)))

    return run


# --------------------------------------------------------------------------- CUDA

_MAX_GRID_Z = 65535
#: Threads per resident block, when the groups outnumber the multiprocessors (two blocks share
#: one) and when they do not (no register cap: see :func:`resident_threads`).
_RESIDENT_THREADS = {"shared": 256, "alone": 512}
#: Environment variable that sets the threads per resident block (benchmarks; 32..1024, a multiple of 32).
RESIDENT_THREADS_VARIABLE = "GPUENSEMBLES_ISING_RESIDENT_THREADS"
_ALL_LANES = 0xFFFFFFFF
#: The bit transpose's last three exchanges (lane distance, the bits a lane below it keeps); the
#: first two move whole bytes: ``_BYTE_EXCHANGES``.
_TRANSPOSE = ((4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555))
#: The byte exchanges (lane distance, byte_perm selectors of the lanes below and above): lanes
#: below keep bytes 0-1 (distance 16) or 0 and 2 (distance 8) and take their partner's in the
#: others, lanes above keep the others (as shifts and masks: 8 instructions each; one prmt).
_BYTE_EXCHANGES = ((16, 0x5410, 0x3276), (8, 0x6240, 0x3715))

#: Stretches of a row per thread of the int8 half-sweep kernels: one-off work (thresholds,
#: key schedule, row indices) is shared by that many (H200, 16384^2: 4 beat 1 by 30 %, 8
#: gained nothing). The multi-spin sweeps take a column of rows: see sweep_rows.
_INT8_STRETCHES = 4
#: Rows of a column a thread of the persistent multi-spin sweeps may take (even: it takes two
#: at a time), most first; and the environment variable that sets them (benchmarks).
SWEEP_ROWS = (8, 4, 2)
SWEEP_ROWS_VARIABLE = "GPUENSEMBLES_ISING_SWEEP_ROWS"
#: Words a warp of the persistent multi-spin kernel can set aside (shared memory, 16 bytes each):
#: at most 11.8 % of its 256 words have lanes left after ``HEAD_BLOCKS`` (2^-8 per lane at
#: dE > 0, any beta), 30 +- 5 on average; a word that finds no room is finished at once.
_WARP_ROOM = 64
#: Rows per block of the launched int8 kernels and of the measurement (blocks of 32 x
#: _BLOCK_ROWS threads): 4 was a little faster than 8 on an H200.
_BLOCK_ROWS = 4
#: Warps per block of the persistent multi-spin sweeps (``column_sweeps``): blocks of 1 or 2
#: warps ran 6 % slower (H200, 16384^2, 72 registers).
_SWEEP_WARPS = 4
#: Columns of 32 words per task of ``column_sweeps`` (a warp walks them in turn): 2 ran 1.6 %
#: slower, 4 7.6 % (H200, 16384^2); one task then holds a block that long before it signals.
_TASK_COLUMNS = 1

#: Word updates one launch of the persistent multi-spin sweeps may take (both colours of every
#: sweep it runs): about 0.1 s on an H200, so that no launch nears a display GPU's watchdog.
_WORDS_PER_LAUNCH = 1 << 33


def measured_before(sweep: int, therm: int, every: int) -> int:
    """Measurements made before sweep ``sweep`` (the measured sweeps are ``therm + k every - 1``)."""
    return max(0, sweep - therm) // every


#: Measurements one launch of the persistent multi-spin sweeps may count (fused), and the
#: bytes their counts may take on the device (768 per group and measurement).
_MEASUREMENTS_PER_LAUNCH = 4096
_COUNT_BYTES = 64 << 20


def measurements_per_launch(n_groups: int) -> int:
    """Measured sweeps per launch of the fused multi-spin sweeps, for ``n_groups`` groups."""
    return max(1, min(_MEASUREMENTS_PER_LAUNCH, _COUNT_BYTES // (n_groups * 32 * _COUNTS * 8)))


#: From this many sweeps between measurements on, each measured sweep has a launch of its own
#: (the sweeps between run in launches that count nothing); below, the counting launches run
#: every sweep after the thermalization.
APART_EVERY = 4


def measured_launches(therm: int, sweeps: int, every: int, most: int, measurements: int, span=None):
    """``(first, stop, measured)`` for each launch of the fused multi-spin sweeps: sweeps
    ``first`` to ``stop - 1``, at most ``most`` of them and at most ``measurements`` of them
    measured (``measured``: how many; the measured sweeps are ``therm + k every - 1``).
    ``span = (first, end)`` limits them to sweeps ``first`` to ``end - 1`` (default: all).

    A launch that measures runs the kernel that counts, slower than the one that does not
    (more registers: H100, 16384^2, 2785 flips/ns measuring every sweep against 3145 for the
    kernel that counts nothing): the thermalization never shares a
    launch with measured sweeps, and from `APART_EVERY` sweeps between measurements on, each
    measured sweep is a launch of its own (a launch costs a few microseconds)."""
    first, end = span or (0, therm + sweeps)
    while first < end:
        before = measured_before(first, therm, every)
        measured = therm + (before + 1) * every - 1  # the next measured sweep
        if first < therm:
            stop = min(first + most, end, therm)
        elif every >= APART_EVERY:
            stop = min(first + most, end, measured) if first < measured else first + 1
        else:
            stop = min(first + most, end, therm + (before + measurements) * every)
        yield first, stop, measured_before(stop, therm, every) - before
        first = stop


def sweep_segments(therm: int, sweeps: int, every: int, most: int, span=None):
    """``(first, stop, measured)`` for each launch of the sweeps of a run: sweeps ``first`` to
    ``stop - 1``, at most ``most`` of them, and whether sweep ``stop - 1`` is measured (the
    measured sweeps, ``therm + k every - 1`` for ``k = 1 .. sweeps / every``, each end one).
    ``span = (first, end)`` limits them to sweeps ``first`` to ``end - 1`` (default: all).
    """
    first, end = span or (0, therm + sweeps)
    while first < end:
        stop = min(therm + every * max(1, (first - therm) // every + 1), first + most, end)
        yield first, stop, stop > therm and (stop - therm) % every == 0
        first = stop


#: Slots for the words the resident multi-spin kernel's warps set aside (shared memory, 16
#: bytes each), shared out between its warps (``_WARP_ROOM`` each at most, and one spare slot
#: each): 47 each for 8 warps (the ~27 of a warp's 8 rows at beta_c), 23 for 16 (4 rows); a
#: word that finds no room is finished at once.
_SET_ASIDE = 384
#: Largest lattice the resident multi-spin kernel keeps in shared memory (``4 L^2`` bytes
#: per group of 32 lattices, with the words set aside within the 48 KiB every GPU grants
#: without opting in).
RESIDENT_MAX_L = 102
#: Largest lattice in strips (one lattice a group, ``L / 64`` words a row of a colour) that the
#: resident strips kernel keeps in shared memory (``L^2 / 8`` bytes), and its threads per block
#: at most (L = 256, 160 lattices: 32 threads 80 us a sweep, 64 55, 128 46, 256 43; H100).
RESIDENT_STRIPS_MAX_L, RESIDENT_STRIPS_THREADS = 256, 256


def resident_threads(n_groups: int, multiprocessors: int, most: int, words: int) -> int:
    """Threads per block of the resident kernel: ``GPUENSEMBLES_ISING_RESIDENT_THREADS``, else
    256 when the ``n_groups`` blocks outnumber the ``multiprocessors`` and 512 when they do not,
    but no more than two ``words`` of a colour a thread (rounded up to whole warps): the README
    example's 5 groups of 32^2 (512 words) took 5.50 us a sweep at 256 threads, 6.29 at 512
    (H100, alone; 64^2 with 2048 words 10.46 at 512, 11.34 at 256).

    ``most`` is the most threads a block of the compiled kernel can have (its registers); a
    setting above it raises ``ValueError`` (cap the registers with
    ``GPUENSEMBLES_REGISTER_LIMITS=ising_resident=N``); the defaults are lowered to it.

    Ensemble mode (e.g. 8192 lattices of 64^2: 256 groups, one block each, on 132
    multiprocessors) runs two blocks per multiprocessor. Two blocks of ``T`` threads share a
    multiprocessor's 65536 registers only at ``32768 / T`` registers per thread or fewer (else
    the 256 blocks take two waves). On an H200 (8192 lattices of 64^2, flips/ns, the column
    walk with 128 registers): 256 threads 2588, 128 2044, 192 2092, 384 2068, 512 2258; 512
    under a cap of 64 2262, 384 under 80 2380, 256 under 96 2570. With one block per
    multiprocessor or fewer (the README's 15 groups) more threads per block help: its call took
    0.535 s at 512 threads and 0.60 s at 256 (the per-word rounds before the column walk).
    """
    text = os.environ.get(RESIDENT_THREADS_VARIABLE, "")
    if not text:
        threads = _RESIDENT_THREADS["shared" if n_groups > multiprocessors else "alone"]
        return max(32, min(threads, most // 32 * 32, -(-words // 64) * 32))
    threads = int(text)
    if not (32 <= threads <= 1024 and threads % 32 == 0):
        raise ValueError(f"{RESIDENT_THREADS_VARIABLE} must be a multiple of 32 in [32, 1024], got {text!r}")
    if threads > most:
        raise ValueError(f"{RESIDENT_THREADS_VARIABLE}={threads}: the resident kernel's registers allow at most "
                         f"{most} threads per block; cap them with GPUENSEMBLES_REGISTER_LIMITS=ising_resident=N "
                         f"(N <= {65536 // threads})")
    return threads


def flush_every(rows: int) -> int:
    """Walks of ``rows`` rows after which the resident kernel flushes its counters: each walk adds
    at most ``rows + 2`` to a lane (see walk_column), and a lane may hold ``vertical.FLUSH_LIMIT``."""
    return max(1, vertical.FLUSH_LIMIT // (rows + 2))


def sweep_rows(groups: int, L: int, S: int, threads: int) -> int:
    """Rows per thread of the persistent multi-spin sweeps (``K``): ``GPUENSEMBLES_ISING_SWEEP_ROWS``,
    else the most of `SWEEP_ROWS` that still gives half the GPU's ``threads`` (those resident
    at once) a column of its own in a half-sweep of ``groups`` groups of ``L`` rows of ``S``
    words, each row counted in whole warps (a task holds a warp even where a row has fewer
    than 32 words), else the fewest. On an H100 (kernel flips/ns, measuring every
    sweep, K = 8 / 4 / 2): 1024^2 23 / 39 / 43, 2048^2 133 / 174 / 181, 4096^2 463 / 522 /
    578, 8192^2 1468 / 1424 / 947, 16384^2 1931 / 1514 / 975 (short calls). On an H200
    (2026-11-28, whole calls of 20 000 sweeps measuring every 100th, 8 to 128 lattices of
    1024^2, 16 words a row): 64 lattices took 0.91 / 1.03 / 1.30 s, 32 took 0.51 / 0.54 /
    0.66 s; counted in words rather than lanes, they had got K = 4 and 2.

    More rows share a task's one-off work (its ticket, waits and barriers, the words set
    aside) among more words, which large lattices need (16384^2 ran fastest at 8); fewer rows
    make more and shorter tasks, which a lattice too small to fill the GPU needs: a half-sweep
    then waits on the longest chain of dependent updates, a thread's K words.
    """
    text = os.environ.get(SWEEP_ROWS_VARIABLE, "")
    if text:
        if text not in {str(k) for k in SWEEP_ROWS}:
            raise ValueError(f"{SWEEP_ROWS_VARIABLE} must be one of {SWEEP_ROWS}, got {text!r}")
        return int(text)
    lanes = groups * L * -(-S // 32) * 32
    return next((k for k in SWEEP_ROWS if 2 * (lanes // k) >= threads), SWEEP_ROWS[-1])


def resident_rows(L: int, S: int, threads: int) -> int:
    """Rows per piece of the resident kernel's column walk, for ``L`` rows of ``S`` words and
    ``threads`` threads: 8, 6, 4 or 2, the one that leaves the fewest steps (turns x rows) to
    the busiest warp, the largest of those (a piece's one-off work is shared by more rows).

    A piece is ``rows`` rows of up to 32 words (a column of words, or a whole row when
    ``S < 32``); a warp takes ``32 // min(S, 32)`` pieces side by side per turn. E.g. 64^2
    lattices (``S = 32``): 8 rows for 256 threads (one turn of the 8 warps), 4 for 512.
    """
    slots = threads // 32 * (32 // min(S, 32))  # pieces per turn
    columns = -(-S // 32)

    def steps(rows):  # rows the busiest warp walks
        return -(-columns * -(-L // rows) // slots) * rows

    return min((8, 6, 4, 2), key=steps)  # ties: the first


@metropolis.jit
def _rotate_left(w, r):
    """uint32 ``w`` rotated left by ``r`` bits (``0 <= r < 32``, 0 included): three shift and
    logic instructions on a GPU and no branch, so that the loads before it are not waited for
    at a join."""
    return np.uint32((w << r) | (w >> ((np.uint32(32) - r) & np.uint32(31))))


@metropolis.jit
def divisor(d):
    """``(d, m, s1, s2)``: what :func:`divide` needs to divide by the uint32 ``d >= 1`` with a
    multiply and shifts (Granlund and Montgomery's round-up method: ``l = ceil(log2 d)``,
    ``m = floor(2^32 (2^l - d) / d) + 1``, ``s1 = min(l, 1)``, ``s2 = max(l - 1, 0)``), computed
    once where a kernel divides by ``d`` many times (a 32-bit division by a run-time value
    is some 20 instructions on a GPU and a long chain of dependent ones)."""
    d = np.uint64(d)
    log = np.uint64(0)
    while (np.uint64(1) << log) < d:
        log += np.uint64(1)
    m = np.uint32((((np.uint64(1) << log) - d) << np.uint64(32)) // d + np.uint64(1))
    s1 = np.uint32(1) if log > 0 else np.uint32(0)
    s2 = np.uint32(log - np.uint64(1)) if log > 0 else np.uint32(0)
    return np.uint32(d), m, s1, s2


@metropolis.jit
def divide(n, div):
    """``(n // d, n % d)`` for uint32 ``n`` and ``div = divisor(d)``: exact for every ``n < 2^32``."""
    d, m, s1, s2 = div
    n = np.uint32(n)
    t, _ = mulhilo(n, np.uint64(m))
    q = np.uint32(np.uint32(t + (np.uint32(n - t) >> s1)) >> s2)
    return q, np.uint32(n - q * d)


@metropolis.jit
def _index(row, j=0):
    """Array index (uint64) of the 32-bit offset ``row + j``, summed in 32 bits: a GPU then
    forms the address with one wide multiply-add instead of 64-bit adds and shifts."""
    return np.uint64(np.uint32(np.uint32(row) + np.uint32(j)))


def _lane_count_device():
    """``lane_count(w, buf)``: thread ``l`` of a full warp gets how many of the warp's 32
    words have bit ``l`` set.

    On a GPU: a 32 x 32 bit transpose that swaps blocks between lanes with
    ``shfl_xor_sync`` (the two byte-sized steps with one ``prmt`` each), then ``popc``. The
    CUDA simulator has no warp shuffles: there every thread puts its word in shared memory
    ``buf`` and counts bit ``l`` over its warp's 32 words (two block barriers, where the five
    exchanges of the transpose would take ten; every thread of the block must take part).
    """
    if simulating_cuda():
        @cuda.jit(device=True)
        def lane_count(w, buf):
            t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
            buf[t] = np.uint32(w)
            cuda.syncthreads()
            lane = t & 31
            n = 0
            for k in range(t - lane, t - lane + 32):
                n += (buf[k] >> lane) & 1
            cuda.syncthreads()
            return n

        return lane_count

    @cuda.jit(device=True)
    def swap(w, lane, j, mask):
        # shfl_xor_sync takes signed or 64-bit words: move the bits as int32
        other = np.uint32(cuda.shfl_xor_sync(_ALL_LANES, np.int32(w), j))
        if lane & j:
            return np.uint32((w & ~np.uint32(mask)) | ((other >> np.uint32(j)) & np.uint32(mask)))
        return np.uint32((w & np.uint32(mask)) | ((other & np.uint32(mask)) << np.uint32(j)))

    byte_perm = device_byte_perm()

    @cuda.jit(device=True)
    def lane_count(w, buf):
        lane = cuda.threadIdx.x & 31
        w = np.uint32(w)
        for j, below, above in _BYTE_EXCHANGES:
            other = np.uint32(cuda.shfl_xor_sync(_ALL_LANES, np.int32(w), j))
            w = byte_perm(w, other, above if lane & j else below)
        for j, mask in _TRANSPOSE:
            w = swap(w, lane, j, mask)
        return cuda.popc(w)

    return lane_count


def _warp_rank_device():
    """``(warp_rank(flag, below, buf), warp_barrier(), lanes_below())``: ``warp_rank`` gives a
    thread how many threads of its warp below it have ``flag`` set, and how many in all (every
    thread of a full warp takes part; ``below`` is what ``lanes_below`` gave the thread, read
    once: a special register's latency); ``warp_barrier`` orders the shared-memory writes of
    a warp before its reads.

    On a GPU: ``ballot_sync``, ``lanemask_lt`` and ``syncwarp``. The CUDA simulator has none:
    there the flags go through shared memory ``buf`` between two block barriers, and
    ``warp_barrier`` is a block barrier (every thread of the block must take part in both).
    """
    if simulating_cuda():
        @cuda.jit(device=True)
        def lanes_below():
            return np.uint32(0)

        @cuda.jit(device=True)
        def warp_rank(flag, below_mask, buf):
            t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
            buf[t] = np.uint32(1 if flag else 0)
            cuda.syncthreads()
            first = t - (t & 31)
            below = 0
            total = 0
            for k in range(first, first + 32):
                total += buf[k]
                if k < t:
                    below += buf[k]
            cuda.syncthreads()
            return below, total

        @cuda.jit(device=True)
        def warp_barrier():
            cuda.syncthreads()

        return warp_rank, warp_barrier, lanes_below

    @cuda.jit(device=True)
    def lanes_below():
        return np.uint32(cuda.lanemask_lt())

    @cuda.jit(device=True)
    def warp_rank(flag, below_mask, buf):
        votes = np.uint32(cuda.ballot_sync(_ALL_LANES, flag))
        return cuda.popc(votes & below_mask), cuda.popc(votes)

    @cuda.jit(device=True)
    def warp_barrier():
        cuda.syncwarp(_ALL_LANES)

    return warp_rank, warp_barrier, lanes_below


@functools.cache
def cuda_runner(kind: str):
    """``run(...)`` (see the module docstring) for CUDA: the resident kernel (multi-spin up to
    ``RESIDENT_MAX_L``), else persistent multi-spin sweeps or int8 half-sweep launches."""
    bind_cuda(globals())
    multispin = kind == "multispin"
    # The simulator runs the shared jit functions on the CPU, on numpy views of its arrays.
    sim = simulating_cuda()
    view = simulator_view if sim else identity

    def device(update):
        # A device function from the Python source (wrapping the CPU dispatcher itself can
        # bind a CUDA call to a CPU overload of the same signature).
        return update if sim else cuda.jit(device=True)(update.py_func)

    stride = metropolis.THRESHOLD_STRIDE[kind]
    per_thread = _INT8_STRETCHES
    lane_count = _lane_count_device()
    product = device_product()
    buf_size = 1024 if simulating_cuda() else 1

    finish_word = device(_finish_word)
    decide_head = device(metropolis.decide_head)
    finish_lanes = device(metropolis.finish_lanes)
    warp_rank, warp_barrier, lanes_below = _warp_rank_device()
    fence = device_fence()

    @cuda.jit(device=True)
    def load_thresholds(planes, thr, g, n_groups):
        # The block's group's thresholds, read once into shared memory (a while loop in
        # 32 bits: a range with a run-time step would cost every thread a division).
        if g < n_groups:
            t = np.uint32(cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x)
            while t < stride:
                planes[t] = thr[g * stride + t]
                t = np.uint32(t + np.uint32(cuda.blockDim.x * cuda.blockDim.y))
        cuda.syncthreads()

    def half_sweep_kernel(update):
        # int8 has two: four sites per uint32 (S % 4 == 0) and site by site. The first alone
        # needs 32 registers (both in one kernel 48): 2048 threads fit on a multiprocessor, not 1280.
        @cached
        @cuda.jit(**kernel_options("half_sweep"))
        def half_sweep(lattice, words, thr, c, row, g0, n_groups, L, S, strips, seed, key, hs, group0, count, counts):
            # Grid (items of a row / (32 K), L / R, groups), blocks (32, R) (R = _BLOCK_ROWS): a
            # warp takes K = per_thread stretches of 32 items of a row.
            lattice, words, thr = view(lattice), view(words), view(thr)
            y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
            g = g0 + cuda.blockIdx.z
            active = g < n_groups and y < L
            base = cuda.blockIdx.z * 2 * L * S  # ``lattice`` holds the groups from g0 (sweeper)
            q = np.uint32(cuda.blockIdx.x * (32 * per_thread) + cuda.threadIdx.x)
            n = 0
            for _ in range(per_thread):
                if active and q < np.uint32(row):
                    n += np.uint32(update(lattice, words, base, g * stride, c, y, q, L, S, strips, thr, seed, key, hs,
                                          group0 + g))
                q = np.uint32(q + np.uint32(32))
            if count and g < n_groups and n > 0:
                cuda.atomic.add(counts, (0, g, 0, 2), np.int64(n))

        return half_sweep

    @cuda.jit(device=True)
    def finished_counts(flip, written, dE4, bonds):
        """``(down, anti)`` changes when the lanes ``flip`` of a word ``written`` (as counted) flip
        after its head: each turns its spin, and adds 2 anti-aligned bonds at dE = 4 (lanes of
        ``dE4``), 4 at dE = 8 (``bonds``: count those)."""
        n = np.uint32(cuda.popc(flip))  # (uint32 sums: a thread's may wrap below zero, its warp's not)
        down = np.uint32(n - np.uint32(2) * np.uint32(cuda.popc(flip & written)))
        anti = np.uint32(np.uint32(4) * n - np.uint32(2) * np.uint32(cuda.popc(flip & dE4))) if bonds else np.uint32(0)
        return down, anti

    @cuda.jit(device=True)
    def set_aside(lat, aside, first, room, spare, n_aside, at, undecided, dE4, written, table, seed, key, hs, mine,
                  group, below_mask, buf):
        """Every thread of a warp: the words of its threads with lanes left after HEAD_BLOCKS
        (``undecided``) go to the warp's next free slots of ``aside`` (its ``room`` from row
        ``first``), as ``written``, or are finished at once where there is no room. Returns
        the lanes flipped by that finishing, the warp's new count of slots taken and whether
        the thread's word was set aside (its lanes ``undecided`` are then finished later).

        With ``spare`` (a constant), every thread stores a slot, the others the warp's spare one
        (row ``first + room``, never read), so that no branch surrounds the stores: the
        resident kernel then ran 2660 flips/ns against 2587 (H200, 8192 lattices of 64^2), but
        the launched one took 72 registers instead of 63 and ran 2833 against 2851."""
        below, total = warp_rank(undecided != 0, below_mask, buf)
        slot = np.uint32(n_aside + below)
        kept = undecided != 0 and slot < np.uint32(room)
        if spare or kept:
            e = np.uint32(first + (slot if kept else np.uint32(room)))
            aside[e, 0] = at
            aside[e, 1] = undecided
            aside[e, 2] = dE4
            aside[e, 3] = written  # finishing it reads no global memory
        flip = np.uint32(0)
        if undecided != 0 and not kept:
            flip = np.uint32(finish_word(lat, _index(at), undecided, dE4, table, seed, key, hs, np.uint32(at - mine),
                                         group))
        return flip, np.uint32(n_aside + total), kept

    @cuda.jit(device=True)
    def walk_column(lat, table, aside, first, room, spare, c, j, y, rows, live, L32, S32, strips, edge, mine, other,
                    seed, key, hs, group, count, fused, flips, down, anti, below_mask, buf, sliced, planes):
        """Every thread of a warp: the Metropolis update of word ``j`` of ``rows`` rows (even) of
        colour ``c`` from row ``y`` (even), walking down the column two rows at a time (the two
        words' random numbers drawn side by side: on an H200 2780 flips/ns, against 2670 one
        row at a time). A row's neighbours in the other colour are its rows y - 1, y, y + 1
        and the side word of row y: two of the three rows were read for the row before.

        ``mine`` and ``other`` are where the colours' rows start in ``lat``; ``live``: the
        thread has a word; ``edge``: rotate the side words across strip edges (by 0 bits in every
        lane but 0 and 31 of the first and last columns of a strips layout; the persistent
        kernel always rotates, with no branch in the walk). A word with
        lanes left after HEAD_BLOCKS is set aside (the warp's ``room`` slots of ``aside`` from
        row ``first``), for the warp to finish all of them together at the end.

        Returns ``(flips, down, anti)`` added to those given (uint32). With ``count`` and not
        ``fused``: the flips of the thread's lane over the warp's words (``lane_count``). With ``count`` and
        ``fused`` (one lattice per group: the lanes are its strips): the thread's own totals of
        flipped spins, down spins of the words it leaves, and, in colour 1, the anti-aligned
        bonds of those words to their four neighbours (every bond of the lattice has one end
        in colour 1, so colour 1's words count each once). The words count as written by the
        head of the update, then the lanes finished later are added: a lane that flips turns
        its spin (down count -1 or +1) and, at dE = 4 or 8, adds 2 or 4 anti-aligned bonds.

        With ``count`` and ``sliced`` (a constant; groups of 32 lattices), the same three counts
        go to the thread's vertical counters in ``planes`` instead (:mod:`.vertical`; ``FLIPS``,
        ``DOWN`` and ``ANTI``), every lane its own lattice: the down spins of the lanes that
        are final (all of a word not set aside, else those decided at its head; the rest where
        they are finished), and the returned flips are unchanged. A thread adds at most ``rows
        + 2`` to a lane of ``FLIPS`` and ``DOWN``, and 4 times that to ``ANTI``, per call."""
        # the side words of the rows from y: index in the row and left rotation (a strip edge
        # crossed: the next or previous lane); rows of odd columns take the next word j + 1,
        # rows of even columns the previous one, and the two alternate down the column
        nxt, rot_nxt = np.uint32(j + np.uint32(1)), np.uint32(0)
        if nxt == S32:
            nxt, rot_nxt = np.uint32(0), np.uint32(31 if strips else 0)
        prv, rot_prv = np.uint32(j - np.uint32(1)), np.uint32(0)
        if j == 0:
            prv, rot_prv = np.uint32(S32 - np.uint32(1)), np.uint32(1 if strips else 0)
        side_j, rot, next_side_j, next_rot = prv, rot_prv, nxt, rot_nxt
        if (y ^ np.uint32(c)) & np.uint32(1):
            side_j, rot, next_side_j, next_rot = nxt, rot_nxt, prv, rot_prv
        # offsets of row y in both colours, and the end of the other colour (rows wrap)
        row_other = np.uint32(other + np.uint32(y * S32))
        row_mine = np.uint32(mine + np.uint32(y * S32))
        end_other = np.uint32(other + np.uint32(L32 * S32))
        up = same = np.uint32(0)
        if live and y < L32:
            up = lat[_index(np.uint32((row_other if y != 0 else end_other) - S32), j)]
            same = lat[_index(row_other, j)]
        n_aside = np.uint32(0)
        flips, down, anti = np.uint32(flips), np.uint32(down), np.uint32(anti)  # (a task's sums, kept in place)
        counted_bonds = fused and c == 1
        # rows y and y + 1 (L is even): two words side by side; the steps counted down in 32
        # bits (a range's 64-bit counter cost 4 instructions a step: 2997-3004 flips/ns against
        # 3045-3054, H200, 16384^2)
        steps = np.uint32(np.uint32(rows) >> np.uint32(1))
        while steps != 0:
            steps = np.uint32(steps - np.uint32(1))
            f0 = f1 = undecided0 = undecided1 = dE4_0 = dE4_1 = at0 = at1 = s0 = s1 = np.uint32(0)
            if live and y < L32:
                row_mid = np.uint32(row_other + S32)  # rows y + 1 (y is even, L too) and y + 2
                row_low = np.uint32(row_mid + S32)
                if row_low == end_other:
                    row_low = other
                mid = lat[_index(row_mid, j)]
                low = lat[_index(row_low, j)]
                side0 = lat[_index(row_other, side_j)]
                side1 = lat[_index(row_mid, next_side_j)]
                if edge:  # rotated by 0 except in lanes 0 and 31 of the warps at a strip edge
                    side0 = _rotate_left(side0, rot)
                    side1 = _rotate_left(side1, next_rot)
                at0 = np.uint32(row_mine + j)
                at1 = np.uint32(at0 + S32)
                s0 = lat[_index(at0)]
                s1 = lat[_index(at1)]
                f0, undecided0, dE4_0 = decide_head(s0, up, mid, same, side0, table, 0, seed, key, hs,
                                                    np.uint32(at0 - mine), group)
                f1, undecided1, dE4_1 = decide_head(s1, same, low, mid, side1, table, 0, seed, key, hs,
                                                    np.uint32(at1 - mine), group)
                s0 = np.uint32(s0 ^ f0)
                s1 = np.uint32(s1 ^ f1)
                lat[_index(at0)] = s0
                lat[_index(at1)] = s1
                if count and sliced and c == 1:
                    vertical.add_anti_aligned(planes, vertical.ANTI, vertical.ANTI_WIDTH, s0, up, mid, same, side0, s1,
                                              same, low, mid, side1)
                if count and fused:
                    down = np.uint32(down + cuda.popc(s0) + cuda.popc(s1))
                    if counted_bonds:
                        anti = np.uint32(anti + cuda.popc(s0 ^ up) + cuda.popc(s0 ^ mid) + cuda.popc(s0 ^ same)
                                         + cuda.popc(s0 ^ side0) + cuda.popc(s1 ^ same) + cuda.popc(s1 ^ low)
                                         + cuda.popc(s1 ^ mid) + cuda.popc(s1 ^ side1))
                up, same = mid, low
                row_other = row_low
            row_mine = np.uint32(row_mine + S32 + S32)
            # (a word finished at once, with no room to set it aside, is counted at once)
            flip0, n_aside, kept0 = set_aside(lat, aside, first, room, spare, n_aside, at0, undecided0, dE4_0, s0,
                                              table, seed, key, hs, mine, group, below_mask, buf)
            f0 |= flip0
            if count and fused and flip0 != 0:
                d, a = finished_counts(flip0, s0, dE4_0, counted_bonds)
                down, anti = np.uint32(down + d), np.uint32(anti + a)
            flip, n_aside, kept1 = set_aside(lat, aside, first, room, spare, n_aside, at1, undecided1, dE4_1, s1, table,
                                             seed, key, hs, mine, group, below_mask, buf)
            f1 |= flip
            if count and sliced:
                vertical.count_final(planes, c, f0, f1, flip0, flip, dE4_0, dE4_1,
                                     np.uint32(s0 & (undecided0 ^ _ALL_LANES)) if kept0 else np.uint32(s0 ^ flip0),
                                     np.uint32(s1 & (undecided1 ^ _ALL_LANES)) if kept1 else np.uint32(s1 ^ flip))
            elif count and fused:
                if flip != 0:
                    d, a = finished_counts(flip, s1, dE4_1, counted_bonds)
                    down, anti = np.uint32(down + d), np.uint32(anti + a)
                flips = np.uint32(flips + cuda.popc(f0) + cuda.popc(f1))
            elif count:
                flips = np.uint32(flips + lane_count(f0, buf) + lane_count(f1, buf))
            y = np.uint32(y + np.uint32(2))
        warp_barrier()  # the slots the other lanes wrote
        # lane x finishes slots x, x + 32, ... of those taken (the warp's count, the same in its
        # lanes: usually one round of 32); the simulator's lane_count needs every thread of
        # the block, so there every warp takes the rounds of a full room
        kept = min(n_aside, np.uint32(room))
        rounds = (room + 31) // 32 if sim else np.uint32((kept + np.uint32(31)) >> np.uint32(5))
        for r in range(rounds):
            e = np.uint32(r * 32 + (cuda.threadIdx.x & 31))
            f = np.uint32(0)
            if e < kept:
                e = np.uint32(first + e)
                at = aside[e, 0]
                f = np.uint32(finish_lanes(aside[e, 1], aside[e, 2], table, 0, seed, key, hs, np.uint32(at - mine),
                                           group))
                lat[_index(at)] = np.uint32(aside[e, 3] ^ f)
                if count and sliced:
                    vertical.count_final(planes, c, f, np.uint32(0), f, np.uint32(0), aside[e, 2], np.uint32(0),
                                         np.uint32((aside[e, 3] ^ f) & aside[e, 1]), np.uint32(0))
                elif count and fused:
                    d, a = finished_counts(f, aside[e, 3], aside[e, 2], counted_bonds)
                    flips = np.uint32(flips + cuda.popc(f))
                    down, anti = np.uint32(down + d), np.uint32(anti + a)
            if count and not fused and not sliced:
                flips = np.uint32(flips + lane_count(f, buf))
        warp_barrier()  # the slots read before the warp sets words aside again
        return flips, down, anti

    sweep_warps = 2 if sim else _SWEEP_WARPS  # per block of column_sweeps
    column_slots = sweep_warps * _WARP_ROOM  # the words a block of column_sweeps can set aside

    @cuda.jit(device=True)
    def measurement_of(hs, therm, by_every, m0):
        """Whether half-sweep ``hs`` is in a measured sweep (``therm + k every - 1``, ``k >= 1``;
        ``by_every = divisor(every)``), and ``k - 1 - m0``, its slot of the launch's counts."""
        t = np.uint32(hs >> np.uint32(1))
        if t < np.uint32(therm):
            return False, np.int64(-1)
        k, r = divide(np.uint32(t + np.uint32(1) - np.uint32(therm)), by_every)
        return r == 0, np.int64(k) - 1 - m0

    if sim:
        @cuda.jit(device=True)
        def add_counts(counts, m, g, flips, down, anti):
            """Add a thread's sums (uint32, read as int32: one may be below zero) to
            ``counts[m, g, its lane]`` (the simulator has no shuffles)."""
            lane = cuda.threadIdx.x & 31
            cuda.atomic.add(counts, (m, g, lane, 0), np.int64(np.int32(down)))
            cuda.atomic.add(counts, (m, g, lane, 1), np.int64(np.int32(anti)))
            cuda.atomic.add(counts, (m, g, lane, 2), np.int64(np.int32(flips)))
    else:
        @cuda.jit(device=True)
        def add_counts(counts, m, g, flips, down, anti):
            """Every thread of a warp: the warp's sums, added to ``counts[m, g, slot]`` by its lane 0
            (slot: the warp's number in the grid modulo 32, so that warps add to different words).
            The threads' uint32 sums are read as int32 (one may be below zero)."""
            flips, down, anti = np.int64(np.int32(flips)), np.int64(np.int32(down)), np.int64(np.int32(anti))
            for k in range(5):
                offset = 16 >> k
                flips += cuda.shfl_down_sync(_ALL_LANES, flips, offset)
                down += cuda.shfl_down_sync(_ALL_LANES, down, offset)
                anti += cuda.shfl_down_sync(_ALL_LANES, anti, offset)
            if cuda.threadIdx.x & 31 == 0:
                slot = (cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y) & 31
                cuda.atomic.add(counts, (m, g, slot, 0), down)
                cuda.atomic.add(counts, (m, g, slot, 1), anti)
                cuda.atomic.add(counts, (m, g, slot, 2), flips)

    @cuda.jit(device=True)
    def decode(t, tasks, per_sweep, per_group, per_band, groups, ny):
        """Task ``t`` of a launch of ``tasks``: ``(h, g, by, bx)``, its half-sweep (-1: none
        left), group, band and column block (32-bit: no launch has 2^32 tasks). The three
        quotients by the tasks of a half-sweep, of a group and of a band (:func:`divisor`) are
        independent of one another: their multiplies run side by side."""
        if t >= tasks:
            return np.int64(-1), np.uint32(0), np.uint32(0), np.uint32(0)
        h, _ = divide(t, per_sweep)  # h
        sweep_group, _ = divide(t, per_group)  # h n_groups + g
        group_band, bx = divide(t, per_band)  # (h n_groups + g) ny + by
        return np.int64(h), np.uint32(sweep_group - h * groups), np.uint32(group_band - sweep_group * ny), bx

    @cuda.jit(device=True)
    def band_around(by, k, ny):
        """Band ``by - 1 + k`` (``k`` = 0, 1, 2) of ``ny`` (periodic)."""
        if k == 0:
            return np.uint32(by - np.uint32(1) if by != 0 else ny - np.uint32(1))
        if k == 1:
            return by
        return np.uint32(by + np.uint32(1) if by + np.uint32(1) != ny else 0)

    @cuda.jit(device=True)
    def band_count(bands, g, by, k, ny):
        """Tasks finished of band ``by - 1 + k`` (periodic) of group ``g`` (``bands[g ny + band]``):
        read with an atomic, which goes to L2 (the counts other blocks add)."""
        return cuda.atomic.add(bands, np.uint32(g * ny + band_around(by, k, ny)), np.int64(0))

    @cuda.jit(device=True)
    def finished(bands, g, by, ny):
        """The fewest tasks finished of band ``by`` of group ``g`` and of the two bands next to it."""
        return min(band_count(bands, g, by, 0, ny), band_count(bands, g, by, 1, ny), band_count(bands, g, by, 2, ny))

    @cuda.jit(device=True)
    def wait_for(bands, g, by, ny, need):
        """Wait until :func:`finished` reaches ``need``, then fence: the tiles those tasks wrote
        are read afresh (not from L1)."""
        while finished(bands, g, by, ny) < need:
            pass
        fence()

    @functools.cache
    def sweeps_kernel(K, counting):
        """``column_sweeps`` for ``K`` rows a thread (:func:`sweep_rows`) that counts ``counting``:
        ``None`` nothing (launches with no measured sweep), ``"lanes"`` the flips of each lane
        from ``count_from`` (groups of 32 lattices; the measure kernel counts the rest),
        ``"totals"`` every measured sweep in full (strips). Each is its own compiled kernel, its
        loops over a column unrolled and what it does not count compiled out: with ``K`` and the
        counting as arguments, the 16384^2 sweeps ran at 2582 flips/ns against 3091 (H100)."""
        totals, lanes = counting == "totals", counting == "lanes"

        @cached
        @cuda.jit(**kernel_options("counted_sweeps" if totals else "half_sweep"))
        def column_sweeps(lattice, thr, hs0, half_sweeps, count_from, therm, every, m0, g0, n_groups, L, S, strips,
                          seed, key, group0, queue, taken, bands, done, counts):
            # Multi-spin, persistent: half-sweeps hs0 .. hs0 + half_sweeps - 1 of the launch's groups
            # (from g0; ``lattice`` holds them, fewer than 2^32 words: every index is a 32-bit offset).
            # A task is one half-sweep of a tile of C = _TASK_COLUMNS columns of 32 words (tile bx)
            # by R K rows (band by) of a group, blocks (32, R), K even (sweep_rows): thread x of warp t
            # takes word 32 column + x of the K rows from y = K (R by + t) (walk_column), for each
            # column of the tile. Blocks take the tasks in order (half-sweep, group, band, tile)
            # from ``queue`` (``taken`` tickets before this launch) and count each finished one in
            # ``bands`` (``bands[g ny + by]``: ``done`` half-sweeps times its tiles before this
            # launch); a task starts once its band and the two next to it have finished the
            # half-sweep before. So the blocks run on from one half-sweep into the next, with no
            # launch in between and no multiprocessor idle at the end of each (one launch per
            # 16384^2 half-sweep left them idle 6.5 % of its time). A block only ever waits for
            # tasks of smaller tickets, which blocks that run hold: no deadlock, however many
            # blocks fit at once.
            # The first thread takes the next ticket while the block works on this task; at its
            # end it decodes it (multiplies, no division: :func:`divisor`) into the other slot, and
            # lanes 0-2 of its warp read the counts of the three bands it needs, one each: the
            # other warps wait at the block's barrier for what warp 0 does beyond its words, so
            # that work is kept short (with three dependent divisions and the counts read one
            # after another it was ~225 instructions, 11 % of the kernel's time at that barrier).
            # Between the two barriers one fence then remains, the release of the task's words
            # and the acquire of the counts read (CUDA's grid barrier has the same pattern:
            # barrier, fence, atomic, wait, fence, barrier); it also empties L1, so no tile is
            # read from a stale line.
            # What is counted: with ``strips`` (one lattice per group), every measured sweep of the
            # launch (``therm + k every - 1``) in ``counts[k - 1 - m0, group]`` (fused: see
            # walk_column; each warp keeps its sums over the block's tasks of one measurement and
            # group, and adds them when the block moves on); else the flips of the half-sweeps from
            # ``count_from`` per lane in ``counts[0, group]`` (the measure kernel adds the rest).
            buf = cuda.shared.array(buf_size, dtype=numba.uint32)
            table = cuda.shared.array(stride, dtype=numba.uint32)
            aside = cuda.shared.array((column_slots, 4), dtype=numba.uint32)
            # this task and the next: half-sweep (-1: none left), group, band, column block
            slots = cuda.shared.array((2, 4), dtype=numba.int64)
            ready = cuda.shared.array(3, dtype=numba.boolean)  # the next task's three bands
            lat, thr = view(lattice), view(thr)
            lane, warp = cuda.threadIdx.x, cuda.threadIdx.y
            first = warp == 0 and lane == 0
            L32, S32 = np.uint32(L), np.uint32(S)
            columns = np.uint32((S32 + np.uint32(31)) >> np.uint32(5))  # of 32 words
            nx = np.uint32((columns + np.uint32(_TASK_COLUMNS - 1)) // np.uint32(_TASK_COLUMNS))  # tasks a band
            rows = np.uint32(cuda.blockDim.y * K)
            ny = np.uint32((L32 + rows - np.uint32(1)) // rows)
            groups = np.uint32(lattice.size // (2 * L * S))
            tiles = np.uint32(groups * ny * nx)  # tasks per half-sweep
            tasks = half_sweeps * tiles
            per_sweep, per_group, per_band = divisor(tiles), divisor(ny * nx), divisor(nx)
            below_mask = lanes_below()
            by_every = divisor(every)
            held_m, held_g = np.int32(-1), np.uint32(0)  # the measurement and group the warp's sums are of
            sum_flips = sum_down = sum_anti = np.uint32(0)
            if first:
                h, g, by, bx = decode(cuda.atomic.add(queue, 0, np.int64(1)) - taken, tasks, per_sweep, per_group,
                                      per_band, groups, ny)
                if h >= 0:
                    wait_for(bands, g, by, ny, (done + h) * nx)
                slots[0, 0], slots[0, 1], slots[0, 2], slots[0, 3] = h, g, by, bx
            cuda.syncthreads()
            loaded = np.uint32(0xFFFFFFFF)  # the group whose thresholds are in ``table``
            now = 0  # the slot of this task
            while True:
                h, g = slots[now, 0], np.uint32(slots[now, 1])
                by, bx = np.uint32(slots[now, 2]), np.uint32(slots[now, 3])
                if h < 0:
                    break
                if first:  # the next task, taken now: the atomic's latency passes while the block works
                    ticket = cuda.atomic.add(queue, 0, np.int64(1))
                if g != loaded:
                    load_thresholds(table, thr, g0 + g, n_groups)
                    loaded = g
                hs = np.uint32(hs0 + h)
                c = hs & np.uint32(1)
                y = np.uint32((by * np.uint32(cuda.blockDim.y) + warp) * np.uint32(K))
                colours = g * np.uint32(2) * L32 * S32
                mine = np.uint32(colours + c * L32 * S32)  # where colour c's rows start, and the other's
                other = np.uint32(colours + (np.uint32(1) - c) * L32 * S32)
                if totals:
                    count, m = measurement_of(hs, therm, by_every, m0)
                    if count and (m != held_m or g != held_g):
                        if held_m >= 0:
                            add_counts(counts, held_m, g0 + held_g, sum_flips, sum_down, sum_anti)
                        held_m, held_g = np.int32(m), g
                        sum_flips = sum_down = sum_anti = np.uint32(0)
                else:
                    count = lanes and h >= count_from
                for column in range(bx * np.uint32(_TASK_COLUMNS), min((bx + np.uint32(1)) * np.uint32(_TASK_COLUMNS),
                                                                       columns)):
                    j = np.uint32(np.uint32(column) * np.uint32(32) + np.uint32(lane))
                    flips, down, anti = walk_column(lat, table, aside, np.uint32(warp * _WARP_ROOM), _WARP_ROOM, False,
                                                    c, j, y, K, j < S32, L32, S32, strips, True, mine, other, seed,
                                                    key, hs, group0 + g0 + g, count, totals, sum_flips, sum_down,
                                                    sum_anti, below_mask, buf, False, buf)
                    if totals:
                        sum_flips, sum_down, sum_anti = flips, down, anti
                    elif lanes and count and flips > 0:
                        cuda.atomic.add(counts, (0, g0 + g, lane, 2), np.int64(flips))
                nxt = 1 - now
                if first:
                    h1, g1, by1, bx1 = decode(ticket - taken, tasks, per_sweep, per_group, per_band, groups, ny)
                    slots[nxt, 0], slots[nxt, 1], slots[nxt, 2], slots[nxt, 3] = h1, g1, by1, bx1
                warp_barrier()
                if warp == 0 and lane < 3:  # lane k: whether band by - 1 + k has what the next task needs
                    h1 = slots[nxt, 0]
                    ok = True
                    if h1 >= 0:
                        seen = band_count(bands, np.uint32(slots[nxt, 1]), np.uint32(slots[nxt, 2]), lane, ny)
                        ok = seen >= (done + h1) * nx
                    ready[lane] = ok
                cuda.syncthreads()  # every word of the task written
                if warp == 0 and lane < 3:  # the release of the task's words before its count below, and
                    fence()  # the acquire of the counts just read
                if first:
                    cuda.atomic.add(bands, np.uint32(g * ny + by), np.int64(1))
                    if not (ready[0] and ready[1] and ready[2]):  # (the count just added may be one it needs)
                        wait_for(bands, np.uint32(slots[nxt, 1]), np.uint32(slots[nxt, 2]), ny,
                                 (done + slots[nxt, 0]) * nx)
                cuda.syncthreads()
                now = nxt
            if totals and held_m >= 0:
                add_counts(counts, held_m, g0 + held_g, sum_flips, sum_down, sum_anti)

        return column_sweeps

    half_sweep = None if multispin else half_sweep_kernel(device(_update_quad_words))
    half_sweep_sites = None if multispin else half_sweep_kernel(device(_update_quad_sites))

    @cached
    @cuda.jit
    def measure(lattice, row, g0, n_groups, L, S, strips, counts):
        # The grid of half_sweep (with one item per thread); int8 takes whole rows (``row = 1``).
        buf = cuda.shared.array(buf_size, dtype=numba.uint32)
        lattice = view(lattice)
        j, y = cuda.grid(2)
        g = g0 + cuda.blockIdx.z
        base = g * 2 * L * S
        if multispin:
            ones = twos = fours = black = white = np.uint32(0)
            if g < n_groups and j < S and y < L:
                ones, twos, fours = metropolis.anti_aligned(lattice, base, y, j, L, S, strips)
                black = lattice[base + y * S + j]
                white = lattice[base + (L + y) * S + j]
            anti = lane_count(ones, buf) + 2 * lane_count(twos, buf) + 4 * lane_count(fours, buf)
            down = lane_count(black ^ white, buf) + 2 * lane_count(black & white, buf)
            if g < n_groups:
                lane = cuda.threadIdx.x & 31
                cuda.atomic.add(counts, (0, g, lane, 0), np.int64(down))
                cuda.atomic.add(counts, (0, g, lane, 1), np.int64(anti))
        elif g < n_groups and j == 0 and y < L:
            down, anti = metropolis.site_counts(lattice, base, y, L, S)
            cuda.atomic.add(counts, (0, g, 0, 0), np.int64(down))
            cuda.atomic.add(counts, (0, g, 0, 1), np.int64(anti))

    initial_item = device(_initial_item)

    @cached
    @cuda.jit
    def initial(lattice, hot, per_group, group0, seed, key):
        # The initial lattice on the device, item by item as initial_lattice draws it on the CPU.
        lattice = view(lattice)
        i = cuda.grid(1)
        if i < lattice.size:
            lattice[i] = initial_item(np.int64(i), per_group, multispin, hot, group0, seed, key)

    @cached
    @cuda.jit
    def sum_counts(counts, measured, spg, span, n_systems, totals):
        # totals[k, s] = the counts of system s in measurement k < measured (one thread each, all
        # at once: a thread's sum over lanes waits on each load before it zeroes it)
        t = cuda.grid(1)
        counts, totals = view(counts), view(totals)
        if t < measured * n_systems:
            k = t // n_systems
            s = t - k * n_systems
            down, anti, flips = _system_counts(counts[k], s, spg, span)
            totals[k, s, 0] = down
            totals[k, s, 1] = anti
            totals[k, s, 2] = flips

    @cached
    @cuda.jit
    def record(totals, measured, i, n_measurements, N, n_systems, bins, series):
        # measurements i .. i + measured - 1 (totals[0 .. measured - 1]), in order, one thread per
        # system: a bin's sums are kept in registers while its measurements last (each added
        # as metropolis.record adds it: the same sums)
        s = cuda.grid(1)
        totals, bins, series = view(totals), view(bins), view(series)
        sums = cuda.local.array(6, numba.float64)
        if s < n_systems:
            b, b_end = -1, i
            for k in range(measured):
                b, b_end = add_measurement(sums, bins, series, s, b, b_end, i + k, n_measurements, N, totals[k, s, 0],
                                           totals[k, s, 1], totals[k, s, 2])
            keep_bin(sums, bins, s, b)

    @cuda.jit(device=True)
    def flush(planes, buf):
        """Every thread of the block: its lane's sums over its warp of the vertical counters
        ``(down, anti, flips)``, which are then zeroed."""
        down = anti = flips = np.int32(0)
        for i in range(vertical.DOWN_WIDTH):
            down += np.int32(lane_count(planes[vertical.DOWN + i], buf)) << i
        for i in range(vertical.ANTI_WIDTH):
            anti += np.int32(lane_count(planes[vertical.ANTI + i], buf)) << i
        for i in range(vertical.FLIPS_WIDTH):
            flips += np.int32(lane_count(planes[vertical.FLIPS + i], buf)) << i
        for i in range(vertical.PLANES):
            planes[i] = np.uint32(0)
        return down, anti, flips

    @cuda.jit(device=True)
    def bin_end(b, n_bins, n_measurements):
        """The first measurement past bin ``b`` (see metropolis.bin_of)."""
        return ((b + 1) * n_measurements + n_bins - 1) // n_bins

    @cuda.jit(device=True)
    def add_measurement(sums, bins, series, s, b, b_end, i, n_measurements, N, down, anti, flips):
        """Add measurement ``i`` of system ``s`` (its counts) to its bin and series, as
        metropolis.record adds it (the same sums). The bin's sums are kept in ``sums`` (6) while
        the bin lasts: when the next bin begins, they go to ``bins`` (see `keep_bin`). Returns
        the bin and the first measurement past it (``b = -1``, ``b_end <= i`` before the first)."""
        if i >= b_end:
            keep_bin(sums, bins, s, b)
            b = metropolis.bin_of(i, bins.shape[1], n_measurements)
            b_end = bin_end(b, bins.shape[1], n_measurements)
            for q in range(6):
                sums[q] = bins[s, b, q]
        e, m, acceptance = metropolis.measurement(N, down, anti, flips)
        add_to_bin(sums, e, m, acceptance)
        if series.shape[1] > 0:
            series[s, i, 0] = e
            series[s, i, 1] = m
        return b, b_end

    @cuda.jit(device=True)
    def add_to_bin(sums, e, m, acceptance):
        """metropolis.add_to_bin with each product rounded on its own (never an FMA with the sum
        it goes to): the CPU's sums, bit for bit."""
        m2 = product(m, m)
        sums[0] += e
        sums[1] += product(e, e)
        sums[2] += abs(m)
        sums[3] += m2
        sums[4] += product(m2, m2)
        sums[5] += acceptance

    @cuda.jit(device=True)
    def keep_bin(sums, bins, s, b):
        """Write bin ``b``'s sums (if ``b >= 0``) to ``bins``."""
        if b >= 0:
            for q in range(6):
                bins[s, b, q] = sums[q]

    @cached
    @cuda.jit(**kernel_options("ising_resident"))
    def resident(lattice, thr, group0, seed, key, L, S, rows, chunk, therm, sweeps, every, n_systems, bins, series,
                 first_sweep, stop_sweep, i0):
        # One block per group of 32 lattices, kept in shared memory for the whole run. A measured
        # sweep counts as it goes (walk_column's vertical counters, flushed after ``chunk``
        # walks and at its end: vertical.FLUSH_LIMIT, then added to the tally before the colour's
        # barrier, with no barrier of their own); the first warp then records the 32
        # lattices' measurements into their bins' sums, kept in shared memory while a bin lasts
        # (added in the order metropolis.record adds them: the same sums).
        sh = cuda.shared.array(0, dtype=numba.uint32)
        tally = cuda.shared.array((_COUNTS, 32), dtype=numba.int32)
        sums = cuda.shared.array((32, 6), dtype=numba.float64)
        buf = cuda.shared.array(buf_size, dtype=numba.uint32)
        planes = cuda.shared.array(stride, dtype=numba.uint32)
        aside = cuda.shared.array((_SET_ASIDE, 4), dtype=numba.uint32)
        counters = cuda.local.array(_COUNTER_PLANES, dtype=numba.uint32)
        thr, bins, series = view(thr), view(bins), view(series)
        g = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        words = L * S
        load_thresholds(planes, thr, g, g + 1)
        for i in range(tid, 2 * words, nt):
            sh[i] = lattice[g * 2 * words + i]
        for i in range(vertical.PLANES):
            counters[i] = np.uint32(0)
        n_measurements = sweeps // every
        s = g * 32 + tid  # the lattice whose measurements thread tid < 32 records
        recording = tid < 32 and s < n_systems
        b, b_end = -1, i0
        if tid < 32:
            for q in range(_COUNTS):
                tally[q, tid] = 0
        cuda.syncthreads()
        i_meas = i0
        # The update: the colour's pieces (``rows`` rows of up to 32 words: a column of words,
        # or a whole row of S < 32 words) dealt out to the warps in turns, ``32 // width`` pieces
        # side by side per warp (walk_column); every warp takes the same number of turns.
        L32, S32 = np.uint32(L), np.uint32(S)
        lane, warp, warps = np.uint32(tid & 31), np.uint32(tid >> 5), np.uint32(nt >> 5)
        width = min(S32, np.uint32(32))
        side_by_side = np.uint32(np.uint32(32) // width)
        columns = np.uint32((S32 + np.uint32(31)) >> np.uint32(5))
        pieces = np.uint32(columns * np.uint32((L32 + np.uint32(rows - 1)) // np.uint32(rows)))
        turns = np.uint32((pieces + warps * side_by_side - np.uint32(1)) // (warps * side_by_side))
        mine_in_warp = np.uint32(lane // width)  # which of the warp's pieces, and the word in it
        word = np.uint32(lane - mine_in_warp * width)
        room = min(_WARP_ROOM, _SET_ASIDE // (nt >> 5) - 1)  # and a spare slot each
        first = np.uint32(warp * np.uint32(room + 1))
        below_mask = lanes_below()
        by_columns = divisor(columns)  # (no division by a run-time value in the sweeps)
        next_measured = therm + (i0 + 1) * every - 1  # the sweeps measured: therm + k every - 1, k = 1, 2, ...
        for t in range(first_sweep, stop_sweep):
            measured = t == next_measured
            down = anti = flips = np.int32(0)
            walked = 0
            for c in range(2):
                hs = np.uint32(2 * t + c)
                mine, other = np.uint32(np.uint32(c) * L32 * S32), np.uint32(np.uint32(1 - c) * L32 * S32)
                for turn in range(turns):
                    piece = np.uint32((warp + np.uint32(turn) * warps) * side_by_side + mine_in_warp)
                    band, column = divide(piece, by_columns)
                    j = np.uint32(column * np.uint32(32) + word)
                    live = piece < pieces and j < S32 and mine_in_warp < side_by_side
                    y = np.uint32(band * np.uint32(rows))
                    if measured:  # (two copies of the walk: one that counts, one with no counting in it)
                        walk_column(sh, planes, aside, first, room, True, c, j, y, rows, live, L32, S32, False, False,
                                    mine, other, seed, key, hs, group0 + g, True, False, 0, 0, 0, below_mask, buf, True,
                                    counters)
                        walked += 1
                        last = c == 1 and turn == turns - 1
                        if walked == chunk or last:
                            d, a, f = flush(counters, buf)
                            down, anti, flips = down + d, anti + a, flips + f
                            walked = 0
                        if last:  # (read after the colour's barrier below: no barrier of their own)
                            cuda.atomic.add(tally, (0, lane), down)
                            cuda.atomic.add(tally, (1, lane), anti)
                            cuda.atomic.add(tally, (2, lane), flips)
                    else:
                        walk_column(sh, planes, aside, first, room, True, c, j, y, rows, live, L32, S32, False, False,
                                    mine, other, seed, key, hs, group0 + g, False, False, 0, 0, 0, below_mask, buf,
                                    False, counters)
                cuda.syncthreads()  # the colour's words written before the other colour reads them
            if measured:
                if recording:
                    b, b_end = add_measurement(sums[tid], bins, series, s, b, b_end, i_meas, n_measurements, L * L,
                                               tally[0, tid], tally[1, tid], tally[2, tid])
                if tid < 32:  # (the next adds to the tally come after the next sweep's first barrier)
                    for q in range(_COUNTS):
                        tally[q, tid] = 0
                i_meas += 1
                next_measured += every
        if recording:
            keep_bin(sums[tid], bins, s, b)
        cuda.syncthreads()
        for i in range(tid, 2 * words, nt):
            lattice[g * 2 * words + i] = sh[i]

    update_word = device(_update_word)
    anti_aligned = device(metropolis.anti_aligned)

    @cached
    @cuda.jit
    def resident_strips(lattice, thr, group0, seed, key, L, S, therm, sweeps, every, bins, series, first_sweep,
                        stop_sweep, i0):
        # One block per lattice in strips (one group: 32 strips of L / 32 columns, S = L / 64
        # words a row of a colour), kept in shared memory for the whole run; each thread updates
        # words of the colour in turn (their lanes are strips of the one lattice, so a word's
        # counts are popcounts). A measured sweep: the flips as they happen, then the down spins
        # of both colours and the anti-aligned bonds of the black words (as the CPU counts them),
        # into the block's tally; thread 0 records the measurement.
        sh = cuda.shared.array(0, dtype=numba.uint32)
        tally = cuda.shared.array((1, 1, 32, _COUNTS), dtype=numba.int64)  # (add_counts' slots)
        sums = cuda.shared.array(6, dtype=numba.float64)
        thr, bins, series = view(thr), view(bins), view(series)
        g = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        words = L * S
        for i in range(tid, 2 * words, nt):
            sh[i] = lattice[g * 2 * words + i]
        if tid < 32:
            for q in range(_COUNTS):
                tally[0, 0, tid, q] = 0
        cuda.syncthreads()
        n_measurements = sweeps // every
        b, b_end, i_meas = -1, i0, i0
        next_measured = therm + (i0 + 1) * every - 1  # the sweeps measured: therm + k every - 1, k = 1, 2, ...
        for t in range(first_sweep, stop_sweep):
            measured = t == next_measured
            flips = 0
            for c in range(2):
                hs = np.uint32(2 * t + c)
                for i in range(tid, words, nt):
                    y = i // S
                    f = update_word(sh, sh, 0, g * stride, c, y, i - y * S, L, S, True, thr, seed, key, hs, group0 + g)
                    flips += cuda.popc(f)
                cuda.syncthreads()  # the colour's words written before the other colour reads them
            if measured:
                down = anti = 0
                for i in range(tid, words, nt):
                    y = i // S
                    ones, twos, fours = anti_aligned(sh, 0, y, i - y * S, L, S, True)
                    anti += cuda.popc(ones) + 2 * cuda.popc(twos) + 4 * cuda.popc(fours)
                    down += cuda.popc(sh[i]) + cuda.popc(sh[words + i])
                add_counts(tally, 0, 0, np.uint32(flips), np.uint32(down), np.uint32(anti))
                cuda.syncthreads()
                if tid == 0:  # (the next adds to the tally come after the next sweep's barriers)
                    totals = cuda.local.array(_COUNTS, dtype=numba.int64)
                    lo = 0 if sim else g & 31  # (add_counts' slot of the block; the simulator's: each lane's)
                    hi = 32 if sim else lo + 1
                    for q in range(_COUNTS):
                        totals[q] = 0
                        for slot in range(lo, hi):
                            totals[q] += tally[0, 0, slot, q]
                            tally[0, 0, slot, q] = 0
                    b, b_end = add_measurement(sums, bins, series, g, b, b_end, i_meas, n_measurements, L * L,
                                               totals[0], totals[1], totals[2])
                i_meas += 1
                next_measured += every
        if tid == 0:
            keep_bin(sums, bins, g, b)
        cuda.syncthreads()
        for i in range(tid, 2 * words, nt):
            lattice[g * 2 * words + i] = sh[i]

    def run(lattice, thr, group0, seed, keys, hot, geometry, schedule, bins, series, span=None):
        L, S, strips, spg, span_lanes, n_systems = geometry
        therm, sweeps, every = schedule
        first, stop = span or (0, therm + sweeps)
        i0 = measured_before(first, therm, every)
        n_groups = int(lattice.size // (2 * L * S))
        seed, key, group0 = np.uint32(seed), np.uint32(keys[0]), np.uint32(group0)
        # Every copy goes on the run's own stream: a copy on the legacy default stream would wait
        # for the kernels of every other stream (eager sizes run at once, on threads of their own).
        stream, side = cuda.stream(), cuda.stream()
        with out_of_memory_as_memory_error(f"{n_groups} groups of {L} x {L} lattices"):
            d_lattice = (cuda.device_array_like(lattice, stream=stream) if first == 0 else
                         cuda.to_device(lattice, stream=stream))
            d_thr, d_bins, d_series = (cuda.to_device(a, stream=stream) for a in (thr, bins, series))
            # (the resident kernel measures in place;) the counts of the measurements of one
            # launch (fused: see column_sweeps), else of one
            in_place = multispin and not strips and L <= RESIDENT_MAX_L
            in_place_strips = multispin and strips and L <= RESIDENT_STRIPS_MAX_L
            fused = multispin and strips and not in_place_strips
            per_launch = measurements_per_launch(n_groups) if fused else 1
            if not (in_place or in_place_strips):
                d_counts = device_zeros((per_launch, n_groups, 32, _COUNTS), np.int64, stream)
                # two sets of totals: a launch's are recorded into bins on a side stream while the
                # next launch sweeps (recording is sequential float64 work, ~0.5 us a measurement)
                d_totals = [cuda.device_array((per_launch, n_systems, _COUNTS), dtype=np.int64) for _ in range(2)]
        recorded = [None, None]  # the event after the last record of each set of totals
        with launching("ising", stream):
            if first == 0:
                initial[-(-lattice.size // 256), 256, stream](d_lattice, hot, 2 * L * S, group0, seed,
                                                              np.uint32(keys[1]))
            if in_place:
                args = [d_lattice, d_thr, group0, seed, key, L, S, 2, 1, therm, sweeps, every, n_systems, d_bins,
                        d_series, np.int64(first), np.int64(stop), np.int64(i0)]
                most = 1024 if sim else compiled(resident, *args).max_threads_per_block
                sms = 1 if sim else cuda.get_current_device().MULTIPROCESSOR_COUNT
                threads = min(resident_threads(n_groups, sms, most, L * S), -(-(L * S) // 32) * 32)
                args[7] = resident_rows(L, S, threads)
                args[8] = flush_every(args[7])
                resident[n_groups, threads, stream, 8 * L * S](*args)
            elif in_place_strips:
                threads = min(RESIDENT_STRIPS_THREADS, -(-(L * S) // 32) * 32)
                resident_strips[n_groups, threads, stream, 8 * L * S](
                    d_lattice, d_thr, group0, seed, key, L, S, therm, sweeps, every, d_bins, d_series, np.int64(first),
                    np.int64(stop), np.int64(i0))
            else:
                sweep = sweeper(stream, d_lattice, d_thr, d_counts, n_groups, L, S, strips, seed, key, group0, schedule)
                most = max(1, _WORDS_PER_LAUNCH // (n_groups * 2 * L * S))  # sweeps per launch (multi-spin)
                launches = (measured_launches(therm, sweeps, every, most, per_launch, (first, stop)) if fused else
                            sweep_segments(therm, sweeps, every, most, (first, stop)))
                i, t = i0, 1
                for begin, end, measured in launches:
                    sweep(begin, end, measured, i)
                    if measured:
                        k, t = int(measured), 1 - t
                        if recorded[t] is not None:
                            recorded[t].wait(stream)  # its totals recorded before they are overwritten
                        sum_counts[-(-k * int(n_systems) // 128), 128, stream](d_counts, k, spg, span_lanes, n_systems,
                                                                              d_totals[t])
                        summed = cuda.event()
                        summed.record(stream)
                        summed.wait(side)
                        record[-(-int(n_systems) // 128), 128, side](d_totals[t], k, i, sweeps // every, L * L,
                                                                n_systems, d_bins, d_series)
                        recorded[t] = cuda.event()
                        recorded[t].record(side)
                        i += k
            for event in filter(None, recorded):
                event.wait(stream)  # the bins and series complete before they are copied
        copy_back(stream, ((lattice, d_lattice), (bins, d_bins), (series, d_series)))

    def sweeper(stream, d_lattice, d_thr, d_counts, n_groups, L, S, strips, seed, key, group0, schedule):
        """``sweep(first, stop, measured, i)``: sweeps ``first`` to ``stop - 1`` of every part of up
        to 65535 groups and 2^32 words (multi-spin: one persistent launch a part; int8: two
        half-sweep launches a sweep). Multi-spin strips count every measured sweep among them
        in the launch (measurements from ``i``); else the flips of the last sweep are counted
        and then the measurement counts, if ``measured``. The launches' arguments are
        converted once."""
        block = (32, 2) if simulating_cuda() else (32, _BLOCK_ROWS)
        row = items_per_row(kind, S)
        measured_row = S if multispin else 1  # int8 counts whole rows
        parts, unused = [], cuda.device_array(0, np.uint32)
        per_group = 2 * L * S
        # a launch takes at most _MAX_GRID_Z groups and fewer than 2^32 words (32-bit indices)
        most = max(1, min(_MAX_GRID_Z, (1 << 32) // per_group))
        for g0 in range(0, n_groups, most):
            z = min(most, n_groups - g0)
            part = d_lattice[g0 * per_group:(g0 + z) * per_group]
            measure_grid = (-(-measured_row // 32), -(-L // block[1]), z)
            if multispin:
                # one lattice a group, too few words to fill the GPU: bands held by the blocks
                sweeps = strips and bands.launcher(stream, part, d_thr, d_counts, g0, n_groups, L, S, seed, key,
                                                   group0, schedule)
                sweeps = sweeps or persistent_part(stream, part, (32, sweep_warps), d_thr, g0, n_groups, L, S, strips,
                                                   seed, key, group0, d_counts, schedule)
                parts.append((g0, measure_grid, sweeps))
                continue
            args = (part, words_of(part, kind, S, unused), d_thr, 0, row, g0, n_groups, L, S, strips, seed, key,
                    np.uint32(0), group0, False, d_counts)
            kernel = half_sweep if S % 4 == 0 else half_sweep_sites
            launch = prepared_launch(kernel, (-(-row // (32 * per_thread)), -(-L // block[1]), z), block, stream, args,
                                     varying=(3, 12, 14))

            def half_sweeps(first, stop, measured, i, launch=launch):
                for t in range(first, stop):
                    for c in range(2):
                        launch(c, np.uint32(2 * t + c), measured and t == stop - 1)

            parts.append((g0, measure_grid, half_sweeps))

        def sweep(first, stop, measured, i):
            for g0, measure_grid, sweeps in parts:
                sweeps(first, stop, measured, i)
                if measured and not (multispin and strips):
                    measure[measure_grid, block, stream](d_lattice, measured_row, g0, n_groups, L, S, strips, d_counts)

        return sweep

    def persistent_part(stream, part, block, d_thr, g0, n_groups, L, S, strips, seed, key, group0, d_counts, schedule):
        """``sweeps(first, stop, measured, i)`` of :func:`sweeper` for one part (``part``: its
        groups from ``g0``): one launch of ``column_sweeps`` on as many blocks as fit on the GPU."""
        groups = len(part) // (2 * L * S)
        gpu = None if simulating_cuda() else cuda.get_current_device()  # (the simulator: the most rows)
        threads = 1 if gpu is None else gpu.MULTIPROCESSOR_COUNT * gpu.MAX_THREADS_PER_MULTIPROCESSOR
        K = sweep_rows(groups, L, S, threads)
        bands = -(-L // (block[1] * K))
        queue = device_zeros(1, np.int64, stream)
        finished = device_zeros(groups * bands, np.int64, stream)
        therm, _, every = schedule
        args = [part, d_thr, np.uint32(0), np.int64(0), np.int64(0), np.uint32(therm), np.uint32(every), np.int64(0),
                g0, n_groups, L, S, strips, seed, key, group0, queue, np.int64(0), finished, np.int64(0), d_counts]
        tasks = groups * bands * -(-S // (32 * _TASK_COLUMNS))  # per half-sweep
        state = {"taken": 0, "done": 0}  # tickets taken and half-sweeps finished before the next launch
        launches = {}

        def prepared(counting):
            # every block takes tasks until none is left (then one more ticket); the simulator runs
            # its blocks one after the other: the first takes every task
            if counting not in launches:
                kernel = sweeps_kernel(K, counting)
                blocks = 2 if simulating_cuda() else compiled(kernel, *args).max_cooperative_grid_blocks(block)
                launches[counting] = blocks, prepared_launch(kernel, blocks, block, stream, args,
                                                             varying=(2, 3, 4, 7, 17, 19))
            return launches[counting]

        def sweeps(first, stop, measured, i):
            n = 2 * (stop - first)
            blocks, launch = prepared(("totals" if strips else "lanes") if measured else None)
            launch(np.uint32(2 * first), np.int64(n), np.int64(n - 2 if measured else n), np.int64(i),
                   np.int64(state["taken"]), np.int64(state["done"]))
            state["taken"] += n * tasks + blocks
            state["done"] += n

        return sweeps

    sweeps = tuple(sweeps_kernel(K, counting) for K in SWEEP_ROWS for counting in (None, "lanes", "totals")
                   ) if multispin else ()
    if multispin:
        sweeps += tuple(bands.band_kernel(counting) for counting in (False, True))
    run.kernels = tuple(k for k in (initial, *sweeps, half_sweep, half_sweep_sites, measure, sum_counts, record,
                                    resident, resident_strips) if k is not None)
    return run
