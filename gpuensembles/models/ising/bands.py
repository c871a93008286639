"""Band sweeps: a multi-spin lattice of 1024^2 to a few thousand squared, held by the multiprocessors.

One lattice of 1024^2 (strips layout) is 16384 words a colour, fewer than an H100's resident
threads, so the persistent ``column_sweeps`` of :mod:`.kernels` spend each half-sweep on their
tasks' tickets, waits and fences, not on the words (70 flips/ns at 1024^2). Here each block
holds a *band* of ``R`` rows of one lattice (both colours, every word of a row) and a *halo* of
``H`` rows above and below it in shared memory, and runs ``H`` half-sweeps in a *round* with
block barriers only: a half-sweep leaves the rows next to the window's edge stale, one more row
each side per half-sweep, so after ``H`` of them the band itself is still exact. Then it writes
its band back, and the blocks meet at a grid barrier before the next round reads the halos
afresh. The rows of a halo are updated by two blocks alike (the random numbers are those of the
site and half-sweep, not of who draws them), so the lattice is bit for bit that of the CPU
backend. Rounds read one copy of the lattice and write the other (``lattice`` and ``spare``,
an even number of rounds a launch: the last writes ``lattice``), so that no block overwrites
rows another block may still be reading.

A measured sweep is counted in the band's rows as the column kernel counts it (down spins of
both colours and anti-aligned bonds of colour 1's words after its half-sweep, the flips of
both half-sweeps), into the same ``counts`` array, so the same kernels turn them into bins.
The kernel that counts has one warp more than the words need: the other threads leave their
counts in shared memory and go on, and that warp sums them and adds them to ``counts`` during
the next half-sweep (summed by the threads before the block's barrier, they cost 0.53 us a
measured sweep at 1024^2, a fifth of the sweep).

A band holds few words a thread (one a half-sweep at 1024^2), so a half-sweep lasts as long as
one word's chain of dependent instructions. Each word therefore draws its Philox blocks before
it reads its neighbours (they depend only on the site and the half-sweep), the block of the
lanes its head leaves undecided among them: only ~10 % of words need that block, but drawn
when needed it was a third Philox chain after the first two in nearly every warp (one H200,
``measure_every=1``: 2048^2 821 -> 875 flips/ns, 1024^2 377 -> 398). Same numbers.
"""

import functools

import numba
import numpy as np

from ...core.backend import bind_cuda, cached, compiled, kernel_options, simulating_cuda
from . import physics as metropolis

cuda = None  # numba.cuda once the kernel is built (see bind_cuda)

#: Halo rows (even), i.e. half-sweeps a round.
HALO = 8
#: The band sweeps run a launch when a half-sweep of its groups has at most this many words.
MAX_WORDS = 1 << 17
#: Blocks a multiprocessor runs at once (bands x groups <= this x the multiprocessors).
BLOCKS_PER_MULTIPROCESSOR = 1
#: Shared memory a block's window and counts may take without opting in to more (bytes: 48 KiB
#: less the threshold table; the fit assumes 1024 threads' counts), and the most words a row may
#: have (a block's threads are whole rows).
_WINDOW_BYTES = (48 << 10) - 4 * metropolis.THRESHOLD_STRIDE["multispin"]
_MAX_ROW_WORDS = 128
_ALL_LANES = 0xFFFFFFFF
_COUNTS = 3  # down spins, anti-aligned bonds, flips


def _window_bytes(R: int, H: int, S: int, threads: int = 1024) -> int:
    """Shared memory of a block: its window (both colours' ``R + 2 H`` rows of ``S`` words), and
    the counts of a measured sweep of each of its ``threads`` workers, for two sweeps."""
    return (2 * (R + 2 * H) * S + 2 * _COUNTS * threads) * 4


def _bands_for(L: int, S: int, groups: int, H: int, blocks: int) -> int:
    """Bands a lattice: the most that divide ``L`` into bands of an even number of rows, with
    ``bands x groups <= blocks`` and a window within the shared memory a block gets without
    opting in; 0 if none fits."""
    fitting = [B for B in range(1, L // 2 + 1) if L % B == 0 and (L // B) % 2 == 0 and B * groups <= blocks
               and _window_bytes(L // B, H, S) <= _WINDOW_BYTES]
    return max(fitting, default=0) if H <= L and S <= _MAX_ROW_WORDS else 0


def _threads_for(R: int, S: int, H: int, most: int) -> int:
    """Threads a block: whole warps and whole rows of ``S`` words, one word each in the widest
    half-sweep of a round (``R + 2 H - 2`` rows), at most ``most`` (0 if not one row fits)."""
    unit = 32 * S // int(np.gcd(32, S))
    return int(min(most // unit, -(-(R + 2 * H - 2) * S // unit)) * unit)


@functools.cache
def band_kernel(counting: bool):
    """The band sweeps kernel, which counts every measured sweep or none.

    The two are compiled apart, as the column kernels are (the counting needs registers).

    Parameters
    ----------
    counting : bool
        Count the measured sweeps of a launch into ``counts`` (see the module docstring).

    Returns
    -------
    numba-cuda dispatcher
        ``band_sweeps(lattice, spare, thr, hs0, half_sweeps, therm, every, m0, g0, n_groups, L, S,
        R, H, seed, key, group0, counts)``, launched on a grid of (bands, lattices) with the
        window's shared memory (:func:`launcher` does).
    """
    bind_cuda(globals())
    sim = simulating_cuda()

    def device(function):
        """A device function from the Python source of a ``numba.jit`` one."""
        return function if sim else cuda.jit(device=True)(function.py_func)

    decide_drawn = device(metropolis.decide_drawn)
    finish_drawn = device(metropolis.finish_drawn)
    draw_block = device(metropolis.draw_block)
    stride = metropolis.THRESHOLD_STRIDE["multispin"]
    own, after_own = np.int64(metropolis.HEAD_BLOCKS), np.int64(metropolis.HEAD_BLOCKS + 1)  # lanes' own words

    if sim:
        @cuda.jit(device=True)
        def add_counts(counts, m, g, slot, down, anti, flips):
            """The thread's sums, added to ``counts[m, g, slot]`` (the simulator has no shuffles)."""
            cuda.atomic.add(counts, (m, g, slot, 0), np.int64(down))
            cuda.atomic.add(counts, (m, g, slot, 1), np.int64(anti))
            cuda.atomic.add(counts, (m, g, slot, 2), np.int64(flips))
    else:
        @cuda.jit(device=True)
        def add_counts(counts, m, g, slot, down, anti, flips):
            """Every thread of a warp: the warp's sums, added to ``counts[m, g, slot]`` by its lane 0."""
            for k in range(5):
                offset = 16 >> k
                down += cuda.shfl_down_sync(_ALL_LANES, down, offset)
                anti += cuda.shfl_down_sync(_ALL_LANES, anti, offset)
                flips += cuda.shfl_down_sync(_ALL_LANES, flips, offset)
            if cuda.threadIdx.x & 31 == 0:
                cuda.atomic.add(counts, (m, g, slot, 0), np.int64(down))
                cuda.atomic.add(counts, (m, g, slot, 1), np.int64(anti))
                cuda.atomic.add(counts, (m, g, slot, 2), np.int64(flips))

    @cuda.jit(device=True)
    def add_parts(counts, m, g, slot, sh, at, workers):
        """The counting warp: add the workers' counts of a measured sweep to ``counts[m, g, slot]``.

        Worker ``t``'s counts are ``sh[at + 3 t + i]``, ``i`` = 0, 1, 2.
        """
        down = anti = flips = np.int32(0)
        t = np.uint32(cuda.threadIdx.x & 31)
        while t < workers:
            e = np.uint32(at + np.uint32(_COUNTS) * t)
            down += np.int32(sh[e])
            anti += np.int32(sh[e + np.uint32(1)])
            flips += np.int32(sh[e + np.uint32(2)])
            t = np.uint32(t + np.uint32(32))
        add_counts(counts, m, g, slot, down, anti, flips)

    @cuda.jit(device=True)
    def copy_rows(lat, sh, top, first, rows, gap_at, gap, W, L, S, to_window, workers):
        """Copy ``rows`` window rows of both colours from or to the lattice.

        The rows are those from window row ``first`` on, skipping ``gap`` rows after the first
        ``gap_at`` of them. Window row ``p`` is the lattice's row ``top + p`` (periodic) in
        ``lat``, the group's words from ``lat[0]``; ``to_window``: from the lattice into the
        window. Threads from ``workers`` on take no part.
        """
        per_row = np.uint32(workers // S)
        i = np.uint32(cuda.threadIdx.x // S)
        j = np.uint32(cuda.threadIdx.x % S)
        while cuda.threadIdx.x < workers and i < rows:
            p = np.uint32(first + i + (gap if i >= gap_at else np.uint32(0)))
            y = np.int64(top) + np.int64(p)
            y = y + L if y < 0 else (y - L if y >= L else y)
            for c in range(2):
                at = (np.int64(c) * L + y) * S + j
                here = (np.uint32(c) * W + p) * S + j
                if to_window:
                    sh[here] = lat[at]
                else:
                    lat[at] = sh[here]
            i = np.uint32(i + per_row)

    @cached
    @cuda.jit(**kernel_options("band_sweeps"))
    def band_sweeps(lattice, spare, thr, hs0, half_sweeps, therm, every, m0, g0, n_groups, L, S, R, H, seed, key,
                    group0, counts):
        """Half-sweeps ``hs0`` to ``hs0 + half_sweeps - 1`` of the part's lattices, in rounds."""
        # Grid (bands, groups of the part from g0), blocks of whole rows (_threads_for); dynamic
        # shared memory: the window, 2 (R + 2 H) S words (colour c, window row p, word j at
        # (c W + p) S + j; window row p is the lattice's row b R - H + p, of the parity of p).
        sh = cuda.shared.array(0, dtype=numba.uint32)
        table = cuda.shared.array(stride, dtype=numba.uint32)
        grid = cuda.cg.this_grid()
        b, g = cuda.blockIdx.x, cuda.blockIdx.y
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        group = np.uint32(group0 + g0 + g)
        for t in range(tid, stride, nt):
            table[t] = thr[(g0 + g) * stride + t]
        W = np.uint32(R + 2 * H)
        S32 = np.uint32(S)
        top = np.int64(b) * R - H
        words = np.int64(2) * L * S
        mine, other = lattice[g * words:(g + 1) * words], spare[g * words:(g + 1) * words]
        # the workers update the words; the last warp (counting) adds the counts of a measured
        # sweep to ``counts`` while the workers go on with the next half-sweep
        workers = np.uint32(nt - 32) if counting else np.uint32(nt)
        worker = tid < workers
        per_row = np.uint32(workers // S)
        j = np.uint32(tid % S)
        r0 = np.uint32(tid // S)
        parts = np.uint32(2 * W * S32)  # the workers' counts of two measured sweeps, after the window
        slot = np.int64(b & 31)
        pending = np.int64(-1)  # the measured sweep whose counts the counting warp adds next
        next_measured = therm + (m0 + 1) * every - 1  # the launch's measured sweeps, its counts' m = 0, 1, ...
        m = np.int64(0)
        # rounds: an even number of them, none longer than H half-sweeps
        rounds = (half_sweeps + H - 1) // H
        rounds += rounds & 1
        done = np.int64(0)
        down = anti = flips = np.uint32(0)
        for q in range(rounds):
            n = half_sweeps * (q + 1) // rounds - done
            src, dst = (mine, other) if q % 2 == 0 else (other, mine)
            if q == 0:  # the whole window
                copy_rows(src, sh, top, np.uint32(0), W, W, np.uint32(0), W, L, S, True, workers)
            else:  # the halos: the band's own rows in the window are those the last round wrote
                copy_rows(src, sh, top, np.uint32(0), np.uint32(2 * H), np.uint32(H), np.uint32(R), W, L, S, True,
                          workers)
            cuda.syncthreads()
            for k in range(n):
                hs = np.uint32(hs0 + done + k)
                c = np.uint32(hs & np.uint32(1))
                t = np.int64(hs >> np.uint32(1))
                measured = counting and t == next_measured
                me = np.uint32(c * W * S32)
                you = np.uint32((np.uint32(1) - c) * W * S32)
                if counting and not worker and pending >= 0:  # the counts of the last measured sweep
                    add_parts(counts, pending, g0 + g, slot, sh, np.uint32(parts + (pending & 1) * _COUNTS * workers),
                              workers)
                    pending = -1
                p = np.uint32(k + 1 + r0)
                last = np.uint32(W - 2 - k)
                while worker and p <= last:
                    y = np.int64(top) + np.int64(p)
                    y = y + L if y < 0 else (y - L if y >= L else y)
                    site = np.uint32(y * S + j)
                    # the word's random numbers first (they need neither it nor its neighbours), the
                    # block of the lanes its head leaves undecided too: ~10 % of words need it, but
                    # drawn only then it was a third Philox chain after the first two in most warps
                    a0, a1, a2, a3 = draw_block(hs, site, group, np.int64(0), seed, key)
                    b0, b1, b2, b3 = draw_block(hs, site, group, np.int64(1), seed, key)
                    w0, w1, w2, w3 = draw_block(hs, site, group, own, seed, key)
                    row = np.uint32(you + p * S32)
                    up = sh[row - S32 + j]
                    below = sh[row + S32 + j]
                    same = sh[row + j]
                    if (p ^ c) & np.uint32(1):  # the side neighbour is word j + 1 (j - 1 in rows of even columns)
                        if j + np.uint32(1) == S32:
                            side = sh[row]
                            side = np.uint32((side >> np.uint32(1)) | (side << np.uint32(31)))  # lane k + 1
                        else:
                            side = sh[row + j + np.uint32(1)]
                    else:
                        if j == 0:
                            side = sh[row + S32 - np.uint32(1)]
                            side = np.uint32((side << np.uint32(1)) | (side >> np.uint32(31)))  # lane k - 1
                        else:
                            side = sh[row + j - np.uint32(1)]
                    at = np.uint32(me + p * S32 + j)
                    s = sh[at]
                    flip, undecided, dE4 = decide_drawn(s, up, below, same, side, table, 0, a0, a1, a2, a3, b0, b1, b2,
                                                        b3)
                    if undecided != 0:
                        flip |= finish_drawn(undecided, dE4, table, 0, w0, w1, w2, w3, after_own, np.uint32(4), seed,
                                             key, hs, site, group)
                    s = np.uint32(s ^ flip)
                    sh[at] = s
                    if measured and p >= H and p < H + R:
                        flips = np.uint32(flips + cuda.popc(flip))
                        if c == 1:  # every bond has one end in colour 1: its words count each once
                            down = np.uint32(down + cuda.popc(s) + cuda.popc(same))
                            anti = np.uint32(anti + cuda.popc(s ^ up) + cuda.popc(s ^ below) + cuda.popc(s ^ same)
                                             + cuda.popc(s ^ side))
                    p = np.uint32(p + per_row)
                if measured and c == 1:  # (the counting warp reads them after the barrier)
                    if worker:
                        e = np.uint32(parts + np.uint32((m & 1) * _COUNTS) * workers + np.uint32(_COUNTS) * tid)
                        sh[e], sh[e + np.uint32(1)], sh[e + np.uint32(2)] = down, anti, flips
                    down = anti = flips = np.uint32(0)
                    pending = m
                    m += 1
                    next_measured += every
                cuda.syncthreads()
            copy_rows(dst, sh, top, np.uint32(H), np.uint32(R), np.uint32(R), np.uint32(0), W, L, S, False, workers)
            grid.sync()
            done += n
        if counting and not worker and pending >= 0:  # the launch's last measured sweep
            add_parts(counts, pending, g0 + g, slot, sh, np.uint32(parts + (pending & 1) * _COUNTS * workers), workers)

    return band_sweeps


def launcher(stream, part, d_thr, d_counts, g0, n_groups, L, S, seed, key, group0, schedule):
    """The band sweeps of one part of the lattices, or None where they are not wanted or do not fit.

    They are wanted where a half-sweep of the part has at most `MAX_WORDS` words; they fit
    where every block of ``bands x lattices`` is resident at once, one band a multiprocessor
    (`BLOCKS_PER_MULTIPROCESSOR`), with its window within 48 KiB of shared memory.

    Parameters
    ----------
    stream : numba stream
        The stream of the launches.
    part : device array of uint32
        The part's lattices (strips layout), ``2 L S`` words each, from lattice ``g0``.
    d_thr, d_counts : device arrays
        The threshold tables of every lattice, and the counts of a launch's measurements
        (``(measurements, lattices, 32, 3)`` int64), as the column kernels take them.
    g0, n_groups : int
        The part's first lattice and the lattices of the run.
    L, S : int
        Rows of a colour and words of a row (``L / 64``).
    seed, key, group0 : numpy.uint32
        Philox key words and the run's first group number.
    schedule : tuple of int
        ``(thermalization, sweeps, measure_every)``.

    Returns
    -------
    callable or None
        ``sweeps(first, stop, measured, i)``: sweeps ``first`` to ``stop - 1`` in one launch,
        counting ``measured`` measured sweeps among them from measurement ``i`` (the
        ``sweeper`` of :mod:`.kernels`); ``sweeps.bands`` and ``sweeps.threads`` (of the
        kernel that does not count) tell the geometry.
    """
    groups = part.size // (2 * L * S)
    if groups * L * S > MAX_WORDS:
        return None
    if HALO < 2 or HALO % 2:  # (window rows must have the parity of their lattice rows)
        raise ValueError(f"bands.HALO must be an even number of rows >= 2, got {HALO}")
    H = HALO
    therm, _, every = schedule
    spare = cuda.device_array_like(part)
    args = [part, spare, d_thr, np.uint32(0), np.int64(2), np.int64(therm), np.int64(every), np.int64(0), np.int64(g0),
            np.int64(n_groups), np.int64(L), np.int64(S), np.int64(L), np.int64(H), seed, key, group0, d_counts]
    kernels = [band_kernel(counting) for counting in (False, True)]
    if simulating_cuda():  # its blocks run one after another: one band a lattice
        B = 1 if _bands_for(L, S, groups, H, groups) == 1 else 0
        most = [1024, 1024]
    else:
        gpu = cuda.get_current_device()
        built = [compiled(kernel, *args) for kernel in kernels]
        most = [k.max_threads_per_block for k in built]
        B = _bands_for(L, S, groups, H, gpu.MULTIPROCESSOR_COUNT * BLOCKS_PER_MULTIPROCESSOR)
    R = L // max(B, 1)
    # threads of each kernel: its workers, and the counting warp beside them in the kernel that counts
    workers = [_threads_for(R, S, H, most[0]), _threads_for(R, S, H, most[1] - 32)]
    threads = [workers[0], workers[1] + 32]
    shared = _window_bytes(R, H, S, workers[1])
    if not simulating_cuda() and B and min(workers) and any(
            k.max_cooperative_grid_blocks(t, shared) < B * groups for k, t in zip(built, threads)):
        B = 0
    if B == 0 or min(workers) == 0:
        return None
    args[12] = np.int64(R)

    def sweeps(first, stop, measured, i):
        """Sweeps ``first`` to ``stop - 1``, counting ``measured`` of them from measurement ``i``."""
        args[3], args[4], args[7] = np.uint32(2 * first), np.int64(2 * (stop - first)), np.int64(i)
        kernels[bool(measured)][(B, groups), threads[bool(measured)], stream, shared](*args)

    sweeps.bands, sweeps.threads = B, threads[0]
    return sweeps
