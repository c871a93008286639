"""2D Ising thermodynamics over inverse temperature and lattice size (Mandelli 2014).

``gpuensembles.ising`` runs checkerboard Metropolis (see
:mod:`gpuensembles.models.metropolis`) on independent periodic ``L x L`` lattices, one per
``(L, beta, realization)``, and keeps online moments per bin of Monte Carlo time, so
memory does not grow with the number of sweeps.
"""

import functools
import time
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, io
from ...core.backend import Backend, Progress
from ...core.progress import bar as progress_bar
from ...core.progress import shown as bar_shown
from . import analysis
from . import kernels as lattices
from . import physics as metropolis

Kernel = Literal["multispin", "int8"]
Start = Literal["hot", "cold"]
KERNELS, STARTS = lattices.KINDS, get_args(Start)
assert KERNELS == get_args(Kernel)
#: Multi-spin lattices at least this large, with ``L`` a multiple of 64, are stored one per
#: group as 32 strips; smaller ones are packed 32 lattices per word (``replicas``), unless a
#: call has at most `FEW_SYSTEMS` lattices of an ``L`` of 64 to `FEW_STRIPS_MAX_L` (a multiple
#: of 64): packed, they would be too few groups to fill a GPU (the README example's 160
#: lattices of 64^2 were 5 groups, 5 of an H100's 132 multiprocessors), so they go in strips
#: too. The rule does not look at the device: the same call runs the same chains everywhere.
STRIPS_MIN_L = 1024
FEW_SYSTEMS, FEW_STRIPS_MAX_L = 2048, 256
MAX_L = 65536
#: Sweeps are counted in a uint32 half-sweep counter (one value is reserved).
MAX_SWEEPS = 2**31 - 1
#: A stored run's chunk runs its sweeps in this many pieces, and saves its state after a piece
#: when this many seconds have passed since the last save (a kill loses at most that much).
CHECKPOINT_PIECES, CHECKPOINT_SECONDS = 64, 60.0
#: An eager run with a progress bar runs the first 1 / `PROGRESS_PIECES` of its sweeps, then
#: pieces that last about `PROGRESS_SECONDS` each at the rate seen so far (a stored one runs
#: `CHECKPOINT_PIECES`): the bar moves, and a short run is not cut into many launches.
PROGRESS_PIECES, PROGRESS_SECONDS = 20, 0.5
#: An eager GPU run runs its sizes at once when their lattices and outputs take at most this
#: many bytes (see :func:`gpuensembles.core.engine.run_together`).
TOGETHER_BYTES = 1 << 30
#: What a spin update costs in each layout, relative to one in strips, in the shares of a
#: cluster run (:meth:`~gpuensembles.core.runs.Chains.balanced`). Packed 32 lattices a word,
#: a word's neighbours need no exchange between lanes, as they do at the edges of strips.
#: H200, 2026-11-28, 20 000 sweeps: 8 groups of 512^2 0.63 s against 256 lattices of 1024^2
#: 3.42 s (0.74 a spin), 16 groups 1.05 s against 512 lattices 6.90 s (0.61); H100: 0.72.
LAYOUT_COST = {"strips": 1.0, "replicas": 0.7, "one lattice per group": 1.0}
DEFAULT_BINS = 64
BIN_QUANTITIES = ("e", "e2", "abs_m", "m2", "m4", "acceptance")
_BIN_ATTRS = {
    "e": ("energy per spin e = E / N, mean over the bin", "1"),
    "e2": ("e^2, mean over the bin", "1"),
    "abs_m": ("|m|, m = M / N the magnetization per spin, mean over the bin", "1"),
    "m2": ("m^2, mean over the bin", "1"),
    "m4": ("m^4, mean over the bin", "1"),
    "acceptance": ("fraction of accepted flip attempts in a measured sweep, mean over the bin", "1"),
}


def _rng_text(kernel):
    counter = "(half-sweep, 0, quad, group)" if kernel == "int8" else "(half-sweep, site, group, block)"
    return (f"Philox4x32-10, key=(seed, L | tag << 28), counter={counter}; {kernel} kernel; "
            "acceptance U < floor(2^32 exp(-beta dE)) with U a 32-bit uniform per decision")


def ising(
    *,
    L,
    beta,
    sweeps,
    thermalization=0,
    realizations=1,
    measure_every=1,
    bins=None,
    start: Start = "hot",
    series=False,
    snapshot=False,
    kernel: Kernel = "multispin",
    seed=None,
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Metropolis ensembles of the 2D Ising model (periodic ``L x L``, ``J = 1``, ``h = 0``).

    Every ``(L, beta, realization)`` is an independent Markov chain. After
    ``thermalization`` sweeps, the energy and magnetization are measured every
    ``measure_every`` sweeps and accumulated per bin; ``ds.ising`` turns the bins into
    specific heat, susceptibility, Binder cumulant and autocorrelation times with error
    bars, and compares with the exact finite-``L`` solution.

    Parameters
    ----------
    L : int or sequence of int
        Linear lattice size(s), even (checkerboard on a torus), ``2 <= L <= 65536``.
    beta : float or array
        Inverse temperature(s) ``J / k_B T``, ``>= 0``. ``beta_c = ln(1 + sqrt 2) / 2``.
    sweeps : int
        Measured sweeps per chain (one sweep = one flip attempt per spin).
    thermalization : int
        Sweeps discarded before the first measurement.
    realizations : int
        Independent chains per ``(L, beta)``.
    measure_every : int
        Sweeps between measurements; must divide ``sweeps``.
    bins : int, optional
        Bins of consecutive measurements kept per chain (default ``min(64,
        measurements)``). Error bars treat bins as independent, so make them much longer
        than the autocorrelation time (``ds.ising.autocorrelation_time()`` checks).
    start : {"hot", "cold"}
        Random spins (infinite temperature) or all spins up.
    series : bool
        Also keep ``e`` and ``m`` of every measurement (a ``sample`` dimension).
    snapshot : bool
        Also keep the final configuration (``y, x``; zero-padded beyond a smaller ``L``).
    kernel : {"multispin", "int8"}
        One bit per spin with bit-sliced updates (fast), or one byte per spin (the
        reference). Both are exact Metropolis; they use different random numbers.
    seed : int, optional
        Seed of the counter-based RNG (drawn and recorded when omitted).
    chunks : int, optional
        Groups of lattices per dask task (a group is 32 packed lattices, or one lattice
        of ``L >= 1024``); given, or with an active ``distributed.Client``, the result is
        lazy. The numbers are the same for any chunking.
    store : str or path-like, optional
        Directory that keeps every finished chunk of groups of lattices, verified by
        SHA-256, so that the same call run again (after a crash or ``kill -9``) computes
        only what is missing and gives bit-identical results (docs page "Many GPUs,
        long runs, faults"). Without ``seed``, the store's seed is reused.
    backend : {"auto", "cuda", "cpu"}
    progress : {"auto", True, False}

    Returns
    -------
    xarray.Dataset
        ``bin_e, bin_e2, bin_abs_m, bin_m2, bin_m4, bin_acceptance`` over ``(L, beta,
        realization, bin)`` (means over each bin's measurements; ``bin_measurements``
        counts them); with ``series``, ``e`` and ``m`` over ``sample``; with
        ``snapshot``, ``snapshot`` over ``(y, x)``. A scalar ``L`` or ``beta`` is kept as a
        scalar coordinate.

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.ising(L=[16, 32, 64, 128], beta=np.linspace(0.38, 0.5, 25), sweeps=100_000,
    ...               thermalization=10_000, realizations=8, seed=3)  # doctest: +SKIP
    >>> ds.ising.specific_heat()  # doctest: +SKIP
    """
    call = {k: v for k, v in locals().items() if k != "progress"}
    sizes = _check_sizes(L)
    beta_da = engine.as_parameter("beta", beta)
    engine.check_range("beta", beta_da, 0)
    for name, value, allowed in (("start", start, STARTS), ("kernel", kernel, KERNELS)):
        engine.check_choice(name, value, allowed)
    sweeps = engine.check_count("sweeps", sweeps, maximum=MAX_SWEEPS)
    thermalization = engine.check_count("thermalization", thermalization, minimum=0, maximum=MAX_SWEEPS)
    if sweeps + thermalization > MAX_SWEEPS:
        raise ValueError(f"sweeps + thermalization must be at most {MAX_SWEEPS}, got {sweeps + thermalization}")
    every = engine.check_count("measure_every", measure_every)
    if sweeps % every:
        raise ValueError(f"sweeps ({sweeps}) must be a multiple of measure_every ({every})")
    n_meas = sweeps // every
    n_bins = min(DEFAULT_BINS, n_meas) if bins is None else engine.check_count("bins", bins)
    if n_bins > n_meas:
        raise ValueError(f"bins must be at most the number of measurements ({n_meas}), got {n_bins}")
    series, snapshot = engine.check_flag("series", series), engine.check_flag("snapshot", snapshot)
    realizations = engine.check_count("realizations", realizations)
    seed = engine.run_seed(seed, store)
    engine.check_choice("backend", backend, _backend.BACKENDS)
    betas = np.atleast_1d(beta_da.values)
    _check_memory(sizes, betas.size, realizations, n_bins, n_meas if series else 0, snapshot, kernel, chunks)
    schedule = (thermalization, sweeps, every)
    work = _work(sizes, betas.size * realizations, schedule, kernel)
    setups = [_Setup.make(kernel, size, betas, realizations, start == "hot", seed, n_bins, n_meas if series else 0,
                          snapshot, backend) for size in sizes]
    # On a cluster, one share of the lattices of every L per worker, of about equal cost: a task
    # per worker and L split sizes too small to fill a GPU over all of them (on an H100, 64
    # lattices of 256^2 took longer than 256), and the scheduler could start two of the costliest
    # on one worker (see docs/scaling.rst).
    chains = engine.Chains.balanced(_share_costs(setups), engine.worker_count())
    eager = chunks is None and engine._active_client() is None
    # The bar of an eager run advances by sweeps: pieces of the lattices would leave the GPU's
    # multiprocessors (and the CPU's threads) without groups to run.
    shown = eager and bar_shown(progress)
    # Eager on a GPU, the sizes run at once when their arrays are small (each then leaves most
    # of the GPU idle: the README example's 5 groups of each L), else one after the other (and
    # under the CUDA simulator, which runs one kernel at a time).
    together = (eager and store is None and _backend.resolve(backend) == "cuda" and not _backend.simulating_cuda()
                and sum(s.device_bytes() for s in setups) <= TOGETHER_BYTES)

    def run_size(stored, position, setup):
        """``(setup, raw outputs)`` of one ``L``, under its progress bar (line ``position`` when together)."""
        size = setup.L
        with progress_bar(sum(schedule[:2]), shown, "sweeps", f"L={size}", position if together else None) as bar:
            block = functools.partial(_run_groups, setup, schedule, checkpoints=stored and stored.part(f"L{size}-at"),
                                      advance=bar.update if shown else None)
            return setup, engine.run_realizations(block, setup.n_groups, setup.outputs(), chunks=chunks,
                                                  progress=False, what=f"L={size}, {betas.size} values of beta, "
                                                                       f"realizations={realizations}",
                                                  store=stored and stored.part(f"L{size}"), chains=chains)

    with engine.stored_run(store, "ising", call, seed) as stored, estimate.timed(work, backend, progress) as clock:
        per_L = engine.run_together([functools.partial(run_size, stored, i, s) for i, s in enumerate(setups)],
                                   together)
        clock.ran({size: raw for size, (_, raw) in zip(sizes, per_L)})
    return _dataset(per_L, sizes, L, beta_da, realizations, schedule, n_bins, call, seed, kernel, start, backend)


#: Default throughputs [spin updates/s] of the multi-spin kernel per CPU thread and per GPU,
#: and of the one-byte-per-spin kernel.
CPU_RATE = {"multispin": 3.5e8, "int8": 1e8}
GPU_RATE = {"multispin": 1e12, "int8": 1e11}
#: A measurement (energy and magnetization of a lattice) costs about this many sweeps.
MEASUREMENT_SWEEPS = 0.8


def _work(sizes, lattices, schedule, kernel) -> estimate.Work:
    """Spin updates of a run: every lattice's sweeps, with each measurement counted as `MEASUREMENT_SWEEPS`."""
    thermalization, sweeps, every = schedule
    per_spin = thermalization + sweeps + MEASUREMENT_SWEEPS * (sweeps // every)
    return estimate.Work(float(lattices) * sum(L * L for L in sizes) * per_spin, "spin updates", f"ising, {kernel}",
                         f"{lattices} lattices of each L = {sizes}, {thermalization + sweeps} sweeps and "
                         f"{sweeps // every} measurements each", CPU_RATE[kernel], GPU_RATE[kernel],
                         "fewer sweeps or lattices, a larger measure_every, or a GPU")


def _share_costs(setups) -> list:
    """``(groups, cost of a group)`` of each ``L``, as :meth:`~gpuensembles.core.runs.Chains.balanced`
    takes them: the spins of a group, times `LAYOUT_COST` of its layout."""
    return [(s.n_groups, s.spg * s.L**2 * LAYOUT_COST[s.layout]) for s in setups]


def _check_sizes(L) -> list:
    values = np.atleast_1d(engine.real_array("L", L))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"L must be an even integer or a 1-D sequence of them, got {L!r}")
    sizes = []
    for v in values.tolist():
        if not (np.isfinite(v) and float(v).is_integer() and 2 <= v <= MAX_L and int(v) % 2 == 0):
            raise ValueError(f"L must be even integers in [2, {MAX_L}] (checkerboard on a torus), got {L!r}")
        sizes.append(int(v))
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"L has repeated values: {sizes}")
    return sizes


def _check_memory(sizes, n_beta, realizations, n_bins, n_series, snapshot, kernel, chunks):
    """Refuse, before any allocation, a run whose lattices or results cannot fit in memory.

    Per lattice: its bins, series and snapshot (twice: the raw blocks and the Dataset), its
    thresholds, and its spins while it runs (eager: all lattices of a size at once is the
    worst case of a piece; lazy: the spins are the workers', so only the results count).
    """
    n_systems = n_beta * realizations
    per_system = [2 * (8 * n_bins * len(BIN_QUANTITIES) + 16 * n_series + (L * L if snapshot else 0)) + 16
                  for L in sizes]
    results = n_systems * sum(per_system)
    spins = max(L * L // (1 if kernel == "int8" else 8) for L in sizes)
    what = f"realizations={realizations} at {n_beta} values of beta for L={sizes}"
    if chunks is None and engine._active_client() is None:
        engine.check_memory(results + spins * min(n_systems, 32), f"the lattices and result of {what}")
    else:
        engine.check_memory(16 * n_systems * len(sizes), f"the thresholds of {what}")


@dataclass(frozen=True)
class _Setup:
    """How the lattices of one ``L`` are packed into groups, and their thresholds."""

    kernel: str
    L: int
    S: int  # items per row of one colour (words or spins)
    layout: str
    spg: int  # systems per group
    span: int  # lanes per system
    n_systems: int
    n_groups: int
    thr: np.ndarray
    hot: bool
    seed: int
    keys: tuple  # Philox key words of the updates and of the initial configuration
    n_bins: int
    n_series: int
    snapshot: bool
    backend: str

    @classmethod
    def make(cls, kernel, L, betas, realizations, hot, seed, n_bins, n_series, snapshot, backend):
        n_systems = betas.size * realizations
        system_beta = np.repeat(betas, realizations)  # system s = (beta index) * R + realization
        p4, p8 = metropolis.thresholds(system_beta)
        if kernel == "int8":
            layout, S, spg, span = "one lattice per group", L // 2, 1, 1
            thr = np.stack([p4, p8], axis=-1).ravel()
        else:
            strips = L % 64 == 0 and (L >= STRIPS_MIN_L or (L <= FEW_STRIPS_MAX_L and n_systems <= FEW_SYSTEMS))
            layout, S, spg, span = ("strips", L // 64, 1, 32) if strips else ("replicas", L // 2, 32, 1)
            lanes = np.repeat(np.arange(n_systems), span) if strips else np.arange(n_systems)
            groups = -(-lanes.size // 32)
            padded4 = np.zeros(groups * 32, np.uint32)
            padded8 = np.zeros(groups * 32, np.uint32)
            padded4[:lanes.size], padded8[:lanes.size] = p4[lanes], p8[lanes]
            thr = metropolis.threshold_table(padded4.reshape(groups, 32), padded8.reshape(groups, 32)).ravel()
        tags = (metropolis.TAG_INT8, metropolis.TAG_INT8_START) if kernel == "int8" else (
            metropolis.TAG_MULTISPIN, metropolis.TAG_MULTISPIN_START)
        return cls(kernel=kernel, L=L, S=S, layout=layout, spg=spg, span=span, n_systems=n_systems,
                   n_groups=-(-n_systems // spg), thr=thr, hot=hot, seed=seed,
                   keys=tuple(metropolis.philox_key(L, t) for t in tags), n_bins=n_bins, n_series=n_series,
                   snapshot=snapshot, backend=backend)

    def device_bytes(self) -> int:
        """Bytes of the lattices and outputs of all groups."""
        item = 4 if self.kernel == "multispin" else 1
        return self.n_groups * 2 * self.L * self.S * item + sum(o.nbytes() for o in self.outputs().values())

    def outputs(self) -> dict:
        shape = (self.n_groups, self.spg)
        return {
            "bins": engine.Output(shape + (self.n_bins, len(BIN_QUANTITIES)), np.float64, 0),
            "series": engine.Output(shape + (self.n_series, 2), np.float64, 0),
            "snapshot": engine.Output(shape + ((self.L, self.L) if self.snapshot else (0, 0)), np.int8, 0),
        }


def _spans(total: int, pieces: int | None = None) -> list:
    """``(first, stop)`` of the pieces of up to ``ceil(total / pieces)`` sweeps a stored chunk runs in
    (default `CHECKPOINT_PIECES` pieces)."""
    size = max(1, -(-total // (pieces or CHECKPOINT_PIECES)))
    return [(first, min(first + size, total)) for first in range(0, total, size)]


def _progress_spans(total: int):
    """``(first, stop)`` of the pieces of a run with a progress bar, each chosen after the last
    has run: ``ceil(total / PROGRESS_PIECES)`` sweeps, then the sweeps that take
    `PROGRESS_SECONDS` at the rate so far (at least one)."""
    first, size, started = 0, max(1, -(-total // PROGRESS_PIECES)), time.monotonic()
    while first < total:
        stop = min(first + size, total)
        yield first, stop
        first, size = stop, max(1, int(stop * PROGRESS_SECONDS / max(time.monotonic() - started, 1e-9)))


def _run_groups(setup, schedule, start, stop, checkpoints=None, advance=None) -> dict:
    """Groups ``[start, stop)`` of one ``L``: bin sums, series and snapshots per lattice.

    With ``checkpoints`` (a part of the run's store), the sweeps run in pieces
    (:func:`_spans`), and the state after a piece (lattices, bins, series) is saved there
    when `CHECKPOINT_SECONDS` have passed since the last save: a chunk killed on its way
    resumes from its last state, with the numbers of a run in one piece. With ``advance``
    (a progress bar's ``update``), they run in pieces too (:func:`_progress_spans`, unless
    stored), and ``advance`` is given each piece's sweeps, as a share of the ``L``'s groups.
    """
    L, S, spg = setup.L, setup.S, setup.spg
    multispin = setup.kernel == "multispin"
    lattice = np.empty((stop - start) * 2 * L * S, dtype=np.uint32 if multispin else np.int8)
    n_systems = min(stop * spg, setup.n_systems) - start * spg
    bins = np.zeros((n_systems, setup.n_bins, len(BIN_QUANTITIES)))
    series = np.zeros((n_systems, setup.n_series, 2))
    stride = metropolis.THRESHOLD_STRIDE[setup.kernel]
    thr = setup.thr[start * stride:stop * stride]
    backend = _backend.resolve(setup.backend)
    run = lattices.cuda_runner(setup.kernel) if backend == "cuda" else lattices.cpu_runner(setup.kernel)
    geometry = (L, S, setup.layout == "strips", spg, setup.span, n_systems)
    total = sum(schedule[:2])
    spans = _spans(total) if checkpoints is not None else [(0, total)] if advance is None else _progress_spans(total)
    found = None if checkpoints is None else checkpoints.latest((start, stop))
    saved_at = None  # the sweep of the state kept in the store
    if found is not None:
        saved_at, state = found
        lattice[...], bins[...], series[...] = state["lattice"], state["bins"], state["series"]
        spans = [(max(a, saved_at), b) for a, b in spans if b > saved_at]
    last = time.monotonic()
    for span in spans:
        run(lattice, thr, start, setup.seed, setup.keys, setup.hot, geometry, schedule, bins, series, span)
        if checkpoints is not None and span[1] < total and time.monotonic() - last >= CHECKPOINT_SECONDS:
            checkpoints.put((start, stop, span[1]), {"lattice": lattice, "bins": bins, "series": series})
            if saved_at is not None:
                checkpoints.forget((start, stop, saved_at))
            saved_at, last = span[1], time.monotonic()
        if advance is not None:
            done = (span[1] - span[0]) * (stop - start)
            advance(done // setup.n_groups if done % setup.n_groups == 0 else done / setup.n_groups)

    def per_group(values):
        """``values`` of the systems as ``(groups, spg, ...)``, the last group padded with zeros."""
        shape = (stop - start, spg) + values.shape[1:]
        if n_systems == (stop - start) * spg:  # (no padding: no copy)
            return values.reshape(shape)
        out = np.zeros(((stop - start) * spg,) + values.shape[1:], values.dtype)
        out[:n_systems] = values
        return out.reshape(shape)

    snap = _unpack(lattice, setup, stop - start)[:n_systems] if setup.snapshot else np.zeros((n_systems, 0, 0),
                                                                                             np.int8)
    return {"bins": per_group(bins), "series": per_group(series), "snapshot": per_group(snap)}


def _unpack(lattice, setup, n_groups) -> np.ndarray:
    """Spins ``(n_groups * spg, L, L)`` (+1 / -1) from the packed colour-split storage."""
    L, S = setup.L, setup.S
    if setup.kernel == "int8":
        halves = lattice.reshape(n_groups, 1, 2, L, S).astype(np.int8)
    else:
        words = lattice.reshape(n_groups, 2, L, S)
        bits = (words[..., None] >> np.arange(32, dtype=np.uint32)) & 1  # (g, c, y, j, lane)
        if setup.layout == "strips":
            halves = bits.transpose(0, 1, 2, 4, 3).reshape(n_groups, 1, 2, L, 32 * S)
        else:
            halves = bits.transpose(0, 4, 1, 2, 3)
        halves = (1 - 2 * halves.astype(np.int8)).astype(np.int8)
    spins = np.empty(halves.shape[:2] + (L, L), np.int8)
    for c in range(2):
        for parity in range(2):  # rows y with (y + c) % 2 == parity hold x = 2h + parity
            spins[:, :, parity ^ c::2, parity::2] = halves[:, :, c, parity ^ c::2, :]
    return spins.reshape(-1, L, L)


def _dataset(per_L, sizes, L_input, beta_da, realizations, schedule, n_bins, call, seed, kernel, start, backend):
    therm, sweeps, every = schedule
    n_meas = sweeps // every
    betas = np.atleast_1d(beta_da.values)
    counts = np.bincount(np.arange(n_meas) * n_bins // n_meas, minlength=n_bins)
    shape = (betas.size, realizations)
    lmax = max(sizes)
    parts = {f"bin_{q}": [] for q in BIN_QUANTITIES}
    parts.update(e=[], m=[], snapshot=[])
    xp = np if all(isinstance(raw["bins"], np.ndarray) for _, raw in per_L) else engine.dask_array()
    for setup, raw in per_L:
        bins = raw["bins"].reshape((-1,) + raw["bins"].shape[2:])[:setup.n_systems]
        for k, q in enumerate(BIN_QUANTITIES):  # (one quantity at a time: no copy of all six first)
            parts[f"bin_{q}"].append((bins[..., k] / counts).reshape(shape + (n_bins,)))
        if setup.n_series:
            series = raw["series"].reshape((-1,) + raw["series"].shape[2:])[:setup.n_systems]
            parts["e"].append(series[..., 0].reshape(shape + (n_meas,)))
            parts["m"].append(series[..., 1].reshape(shape + (n_meas,)))
        if setup.snapshot:
            snap = raw["snapshot"].reshape((-1, setup.L, setup.L))[:setup.n_systems].reshape(shape + (setup.L,) * 2)
            pad = lmax - setup.L
            parts["snapshot"].append(xp.pad(snap, ((0, 0), (0, 0), (0, pad), (0, pad))) if pad else snap)
    coords = {
        "L": xr.Variable("L", np.array(sizes, np.int64), {"long_name": "linear lattice size", "units": "1"}),
        "beta": xr.Variable("beta", betas, {"long_name": "inverse temperature J / k_B T", "units": "1"}),
        engine.REALIZATION: xr.Variable(engine.REALIZATION, np.arange(realizations), io.REALIZATION_ATTRS),
        "bin_measurements": xr.Variable("bin", counts.astype(np.int64),
                                        {"long_name": "measurements averaged in the bin", "units": "1"}),
        "sweep": xr.Variable("sample", therm + every * np.arange(1, n_meas + 1, dtype=np.int64),
                             {"long_name": "sweeps since the start", "units": "1"}),
    }
    dims = ("L", "beta", engine.REALIZATION)

    def over_sizes(arrays):
        """The sizes' arrays along a new first axis (one size: a view, no copy)."""
        return arrays[0][None] if len(arrays) == 1 else xp.stack(arrays)

    data = {}  # (Variables, and the coordinates once: no alignment of each variable's own)
    for q in BIN_QUANTITIES:
        long_name, units = _BIN_ATTRS[q]
        data[f"bin_{q}"] = xr.Variable(dims + ("bin",), over_sizes(parts[f"bin_{q}"]),
                                       {"long_name": long_name, "units": units})
    if parts["e"]:
        data["e"] = xr.Variable(dims + ("sample",), over_sizes(parts["e"]), {"long_name": "energy per spin",
                                                                             "units": "1"})
        data["m"] = xr.Variable(dims + ("sample",), over_sizes(parts["m"]), {"long_name": "magnetization per spin",
                                                                             "units": "1"})
    if parts["snapshot"]:
        data["snapshot"] = xr.Variable(dims + ("y", "x"), over_sizes(parts["snapshot"]), {
            "long_name": "final spins (0: outside a smaller lattice)", "units": "1"})
    used = {d for v in data.values() for d in v.dims}
    ds = xr.Dataset(data, coords={k: c for k, c in coords.items() if set(c.dims) <= used})
    if np.ndim(L_input) == 0:
        ds = ds.squeeze("L")
    if beta_da.ndim == 0:
        ds = ds.squeeze("beta")
    first = per_L[0][1]["bins"]
    resolved = _backend.resolve(backend) if isinstance(first, np.ndarray) else backend
    device = _backend.device_name(resolved) if isinstance(first, np.ndarray) else _backend.PER_WORKER_DEVICE
    attrs = io.provenance(model="2D Ising, periodic L x L, J = 1, h = 0", integrator="checkerboard Metropolis",
                          seed=seed, backend=resolved, device=device, dtype="int8" if kernel == "int8" else "1 bit",
                          history=io.history_line("ising", call))
    attrs.update(rng=_rng_text(kernel), kernel=kernel, start=start, sweeps=np.int64(sweeps),
                 thermalization=np.int64(therm), measure_every=np.int64(every),
                 layout="; ".join(f"L={s.L}: {s.layout}" for s, _ in per_L))
    ds = ds.assign_attrs(attrs)
    if isinstance(first, np.ndarray) and n_bins >= analysis.MIN_EQUILIBRATION_BINS:  # lazy: its accessors check
        bins = xr.Dataset({name: ds[name] for name in analysis.EQUILIBRATION_QUANTITIES.values()})
        analysis.warn_if_drifting(analysis.equilibration(bins, int(therm)), stacklevel=4)
    return ds
