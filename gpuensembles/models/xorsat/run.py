"""``solve``: the quasi-greedy algorithm with many multi-spin-coded clones (Bernaschi et al. 2021).

A *run* starts ``clones`` clones from independent random configurations and sweeps them
all until one satisfies every triplet or ``timeout`` sweeps have passed; its time to
solution (TTS) is the number of sweeps after which the first clone was a solution (ties:
the lowest clone). Runs are the ensemble members: chunks, dask tasks and GPUs share them
out. A run's numbers depend only on the seed, its instance's size and index (``attrs
["index"]``, the ``instance`` coordinate of a stack), the *position* of its ``p`` in the
``p`` array and its own index; never on chunking, batching or backend.
"""

import functools
import math

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, io
from ...core.backend import Backend, Progress
from . import instances as _instances
from . import kernels as hypergraphs
from . import physics as quasi_greedy

RUN = "run"
#: Largest instance the solver takes: the graph and the clones' words of a block must fit
#: in a GPU's shared memory (and ``exp(0.08 N)`` sweeps put larger ones out of reach).
MAX_N = 2048
#: Sweeps are counted in a uint32 (one value is reserved for the random start).
MAX_TIMEOUT = 2**32 - 3
DEFAULT_CLONES = 2**16
#: Clone indices and run ids are 32-bit.
MAX_CLONES = MAX_RUNS = 2**32 - 1
#: Bytes of clone words a runner call may hold (host and device); more runs go in batches.
BATCH_BYTES = 2**31
#: Bytes of results (best, seconds, solution) a dask task returns at most when ``chunks`` is not given.
TASK_BYTES = 2**28
_MAX_INDEX = 2**16  # instances and values of p are told apart by 16 bits of the Philox key
_RNG_TEXT = ("Philox4x32-10, key=(seed, instance | p_index << 16), counter=(sweep, variable | block << 12 | N << 16, "
             "word, run); a u = 1 clone flips when its own 32-bit uniform U < floor(p 2^32)")


#: Coordinates' metadata of the instances' size and index.
N_ATTRS = {"long_name": "variables (and triplets) of the instance", "units": "1"}
INSTANCE_ATTRS = {"long_name": "index of the instance among those of its size", "units": "1"}

def independent_sets(triplets: np.ndarray, N: int, size: int = 32) -> tuple:
    """Greedy partition of the variables into sets of at most ``size`` that share no triplet.

    The variables are scanned in order, repeatedly; a scan opens a new set and adds every
    unassigned variable with no neighbour in it, until the set is full (the seed's
    scheme). Returns ``(order, bounds)``: set ``s`` is ``order[bounds[s]:bounds[s + 1]]``.
    ``size`` is at most 32: a warp updates a set.
    """
    if not 1 <= size <= 32:
        raise ValueError(f"size must be in [1, 32] (a warp updates a set), got {size}")
    neighbours = [set() for _ in range(N)]
    for tri in np.asarray(triplets).tolist():
        for v in tri:
            neighbours[v].update(tri)
    left, sets = list(range(N)), []
    while left:
        current, blocked, rest = [], set(), []
        for v in left:
            if len(current) < size and v not in blocked:
                current.append(v)
                blocked |= neighbours[v]
            else:
                rest.append(v)
        sets.append(current)
        left = rest
    order = np.array([v for s in sets for v in s], dtype=np.int64)
    bounds = np.cumsum([0] + [len(s) for s in sets]).astype(np.uint32)
    return order, bounds


class _Problem:
    """One instance ready for the runners.

    Relabelled so that the independent sets are consecutive labels (``order[label] = variable``).
    """

    def __init__(self, instance, triplets, parity, N, key_index):  # key_index: the instance's index (Philox key)
        self.instance, self.N, self.key_index = instance, N, key_index
        self.order, self.bounds = independent_sets(triplets, N)
        label = np.empty(N, dtype=np.int64)
        label[self.order] = np.arange(N)
        self.graph = quasi_greedy.pack_graph(label[triplets], parity, N)


def solve(instances, p=0.1, clones=DEFAULT_CLONES, timeout=None, runs=1, *, seed=None, chunks=None, store=None,
          backend: Backend = "auto", progress: Progress = "auto") -> xr.Dataset:
    """Time to solution of the quasi-greedy algorithm with ``clones`` clones, ``runs`` times per instance.

    A variable with ``u`` of its three triplets unsatisfied flips with probability 0
    (``u = 0``), ``p`` (``u = 1``) or 1 (``u >= 2``); a sweep visits every variable once
    (independent sets in turn). A run succeeds when a clone satisfies every triplet: this
    is detected exactly (not by comparison with a planted solution) and the solution is
    checked again on the host.

    Parameters
    ----------
    instances : xarray.Dataset
        One instance or a stack of them (:func:`gpuensembles.xorsat.random_instances`,
        :func:`~gpuensembles.xorsat.load_instance`), ``N <= 2048``.
    p : float or 1-D array
        Flip probability of a variable in exactly one unsatisfied triplet, in ``[0, 1]``;
        an array becomes a dimension ``p``. Exact to ``2^-32``. The pseudo-temperature
        of ``p`` is ``T = -2 / ln p``.
    clones : int
        Clones per run (packed 32 per word; any count >= 1).
    timeout : int, optional
        Sweeps after which a run gives up (``solved`` false). Default: none (a run goes
        on until it finds a solution; at most ``2^32 - 3`` sweeps). Required where
        ``floor(p 2^32) = 0`` (greedy descent, stuck in the first local minimum) and for
        ``p = 1`` (no randomness after the start: a clone may cycle for ever).
    runs : int
        Independent runs per instance and ``p``.
    seed : int, optional
        Seed of the counter-based RNG (drawn and recorded when omitted).
    chunks : int, optional
        Items per dask task (the result is then lazy, as with an active
        ``distributed.Client``); an item is one run at one point (a value of ``p`` and an
        instance), dealt run-major, so ``chunks = k * P`` at ``P`` points gives every task
        ``k`` runs of each point. The numbers are the same for any chunking. Default with a
        client: one task per worker thread, of at most `TASK_BYTES` of results.
    store : str or path-like, optional
        Directory that keeps every finished chunk of runs, verified by SHA-256: the same
        call run again (after a crash or ``kill -9``) computes only what is missing, with
        bit-identical sweeps, solutions and clones (``seconds_per_sweep`` of a reused chunk
        is the one measured when it ran). Without ``seed``, the store's seed is reused.
    backend : {"auto", "cuda", "cpu"}
    progress : {"auto", True, False}

    Returns
    -------
    xarray.Dataset
        Over (``p``,) (``N``,) (``instance``,) ``run``: ``tts_sweeps`` (sweeps to the
        solution, or the timeout), ``tts_seconds`` (the same times the measured seconds
        per sweep), ``solved``, ``clone`` (the winning clone, -1 if none), ``solution``
        (its bits over ``variable``; 0 where unsolved) and ``seconds_per_sweep`` (wall
        time of the call per sweep of a run's clones, from its measured update rate).

    Examples
    --------
    >>> import gpuensembles as ge
    >>> inst = ge.xorsat.random_instances(N=[64, 96, 128], count=100, seed=1)  # doctest: +SKIP
    >>> ds = ge.xorsat.solve(inst, p=0.1, clones=2**20, runs=10, seed=2)  # doctest: +SKIP
    >>> ds.tts.percentile(99)  # doctest: +SKIP
    """
    call = {k: v for k, v in locals().items() if k not in ("progress", "instances")}
    p_da = engine.as_parameter("p", p)
    if p_da.ndim > 1 or (p_da.ndim == 1 and p_da.dims != ("p",)):
        raise ValueError(f"p must be a number or 1-D (its dimension is named 'p'), got dims {p_da.dims}")
    engine.check_range("p", p_da, 0, 1)
    ps = np.atleast_1d(p_da.values).astype(np.float64)
    if ps.size > _MAX_INDEX:
        raise ValueError(f"at most {_MAX_INDEX} values of p, got {ps.size}")
    clones = engine.check_count("clones", clones, maximum=MAX_CLONES)
    runs = engine.check_count("runs", runs, maximum=MAX_RUNS)
    if timeout is None:
        stuck = [float(x) for x in ps if quasi_greedy.threshold(x) == (0, False) or x == 1]
        if stuck:
            raise ValueError(f"p = {stuck[0]} can run for ever (p < 2^-32 never leaves a local minimum, p = 1 is "
                             "deterministic after the start): give a timeout (in sweeps)")
        limit = MAX_TIMEOUT
    else:
        limit = engine.check_count("timeout", timeout, minimum=0, maximum=MAX_TIMEOUT)
    seed = engine.run_seed(seed, store)
    engine.check_choice("backend", backend, _backend.BACKENDS)
    stacked, problems = _problems(instances)
    points = [(k, prob) for k in range(ps.size) for prob in problems]
    n_max = max(prob.N for prob in problems)
    words = -(-clones // 32)  # a run's clone words, progress and results while it runs (see kernels._start)
    engine.check_memory(words * (4 * n_max + 16), f"the clones of one run (clones={clones}, N={n_max})",
                        fix="use fewer clones")
    # Item i is run i // P at point i % P (P points): consecutive items, and so each chunk (task,
    # GPU), take every instance in turn, whose costs differ by orders of magnitude with N.
    n_items = len(points) * runs
    outputs = {"best": engine.Output((n_items,), np.uint64, 0),
               "seconds_per_sweep": engine.Output((n_items,), np.float64, 0),
               "solution": engine.Output((n_items, n_max), np.uint8, 0)}
    if chunks is None and store is None and engine._active_client() is not None:
        # one task per worker thread: a runner call's last runs leave its GPU part idle, and
        # larger calls pay that tail less often (4 x H200: 96.4 % against 94.2 % with 4 a worker)
        chunks = min(-(-n_items // engine.thread_count()), max(1, TASK_BYTES // (16 + n_max)))
    block = functools.partial(_run_items, points, ps, clones, limit, seed, n_max, backend)
    what = f"runs={runs} at {len(points)} points ({ps.size} values of p, {len(problems)} instances of N <= {n_max})"
    described = {**call, "instances": [(prob.key_index, prob.graph) for prob in problems], "items": "run-major"}
    with engine.stored_run(store, "xorsat.solve", described, seed) as stored, estimate.timed(
            _work(problems, ps.size, runs, clones, limit), backend, progress) as clock:
        # on a GPU in one piece: a piece's runner calls take its runs of one instance at a time
        pieces = 20 if _backend.resolve(backend) == "cpu" else 1
        raw = engine.run_realizations(block, n_items, outputs, chunks=chunks, pieces=pieces, progress=progress,
                                      unit="runs", what=what, store=stored)
        clock.ran(raw)
    return _dataset(raw, stacked, instances, p_da, ps, runs, clones, limit, timeout, seed, backend, call)


#: The expected sweeps of one clone to a solution at p = 0.1, ``SOLVE_SWEEPS_64 exp(SOLVE_GROWTH
#: (N - 64))``, fitted to random instances of N = 32-96 on a CPU, and the sweeps any run takes
#: at least; with ``clones`` clones a run takes ``SOLVE_SWEEPS / clones + MIN_SWEEPS`` sweeps.
SOLVE_SWEEPS_64, SOLVE_GROWTH, MIN_SWEEPS = 6e4, 0.1, 5.0
#: Default throughputs [spin updates/s] per CPU thread and per GPU.
CPU_RATE, GPU_RATE = 4e8, 5e10


def _work(problems, n_p, runs, clones, timeout) -> estimate.Work:
    """Spin updates of a run: clones x N x expected sweeps (capped at the timeout) of every run."""
    sweeps = [min(SOLVE_SWEEPS_64 * math.exp(SOLVE_GROWTH * (prob.N - 64)) / clones + MIN_SWEEPS, timeout)
              for prob in problems]
    amount = float(n_p * runs * clones * sum(s * prob.N for s, prob in zip(sweeps, problems)))
    return estimate.Work(amount, "spin updates", "xorsat, quasi-greedy",
                         f"{n_p * runs * len(problems)} runs of {clones} clones, up to {max(sweeps):.3g} sweeps "
                         "each (the time-to-solution law at p = 0.1 for random instances)", CPU_RATE, GPU_RATE,
                         "smaller N, fewer runs or instances, or a GPU")


def _problems(instances) -> tuple:
    """``(stacked, problems)``: the instance dims (``N``, ``instance``) present and one
    :class:`_Problem` per instance, in their order."""
    if not isinstance(instances, xr.Dataset):
        raise TypeError(f"instances must be an xarray.Dataset of instances, got {type(instances).__name__}")
    stacked = [d for d in ("N", "instance") if d in instances.dims]
    if "instance" in stacked:
        sizes = np.atleast_1d(instances["N"].values).tolist()
        singles = [_instances.select_instance(instances, N=n, instance=i)
                   for n in sizes for i in instances["instance"].values.tolist()]
    elif stacked:
        raise ValueError("instances with an 'N' dimension must also have an 'instance' dimension "
                         "(see gpuensembles.xorsat.random_instances)")
    else:
        singles = [instances]
    if len(singles) > _MAX_INDEX:
        raise ValueError(f"at most {_MAX_INDEX} instances per call, got {len(singles)}")
    problems = []
    for single in singles:
        single = _instances.check_instance(single)
        N = _instances._instance_N(single)
        if N > MAX_N:
            raise ValueError(f"instances must have N <= {MAX_N} variables, got N = {N}")
        triplets, parity = single["triplets"].values.astype(np.int64), single["parity"].values.astype(np.uint8)
        index = _index(single)
        if not _instances.satisfiable(triplets, parity):
            raise ValueError(f"instance {index} (N = {N}) has no solution: its parities contradict each other over "
                             "GF(2), so no run could ever end")
        problems.append(_Problem(single, triplets, parity, N, index))
    return stacked, problems


def _index(single) -> int:
    """An instance's index (its Philox key): ``attrs["index"]``, else a scalar ``instance`` coordinate, else 0."""
    index = single.attrs.get("index", single["instance"].item() if "instance" in single.coords else 0)
    if not 0 <= int(index) < _MAX_INDEX:
        raise ValueError(f"instance indices must lie in [0, {_MAX_INDEX}), got {index}")
    return int(index)


def _run_items(points, ps, clones, timeout, seed, n_max, backend, start, stop) -> dict:
    """Items ``[start, stop)`` (``i``: run ``i // P`` at point ``i % P``): best, seconds per sweep, solution."""
    resolved = _backend.resolve(backend)
    runner = hypergraphs.cuda_runner() if resolved == "cuda" else hypergraphs.cpu_runner()
    best = np.empty(stop - start, dtype=np.uint64)
    seconds = np.empty(stop - start)
    solution = np.zeros((stop - start, n_max), dtype=np.uint8)
    words, n_points = -(-clones // 32), len(points)
    for point, (k, prob) in enumerate(points):
        P, always = quasi_greedy.threshold(ps[k])
        first, end = -(-(start - point) // n_points), -(-(stop - point) // n_points)  # its runs in the items
        batch = max(1, BATCH_BYTES // (4 * words * prob.N))  # runs per runner call
        for lo in range(first, end, batch):
            hi = min(lo + batch, end)
            out = runner(prob.graph, prob.bounds, prob.N, np.arange(lo, hi, dtype=np.uint32), clones, P, always,
                         timeout, np.uint32(seed), quasi_greedy.key(prob.key_index, k))
            rows = slice(lo * n_points + point - start, hi * n_points + point - start, n_points)
            best[rows] = out.best
            seconds[rows] = out.seconds * words / max(out.word_sweeps, 1)
            solution[rows, :prob.N] = _solutions(out, prob)
    return {"best": best, "seconds_per_sweep": seconds, "solution": solution}


def _solutions(out, prob) -> np.ndarray:
    """The winning clones' bits ``(runs, N)`` in the instance's labels, each checked to
    satisfy every triplet (0 for unsolved runs)."""
    bits = np.zeros((len(out.best), prob.N), dtype=np.uint8)
    solved = out.best != hypergraphs.NONE
    lane = (out.best & np.uint64(31)).astype(np.uint32)[:, None]
    bits[:, prob.order] = (out.winners >> lane) & np.uint32(1)  # an unsolved run's winners are zeros
    if np.any(_instances.energy(prob.instance, bits[solved])):
        raise RuntimeError("a reported solution violates a triplet: this is a bug in gpuensembles, please report it")
    return bits


def _dataset(raw, stacked, instances, p_da, ps, runs, clones, limit, timeout, seed, backend, call) -> xr.Dataset:
    shape = (ps.size,) + tuple(instances.sizes[d] for d in stacked) + (runs,)
    dims = ("p",) + tuple(stacked) + (RUN,)
    xp = np if isinstance(raw["best"], np.ndarray) else engine.dask_array()

    def by_point(values):  # items (run-major) -> (p, [N, instance,] run, ...)
        return xp.moveaxis(values.reshape((runs,) + shape[:-1] + values.shape[1:]), 0, len(shape) - 1)

    best = by_point(raw["best"])
    solved = best != hypergraphs.NONE
    sweeps = xp.where(solved, (best >> np.uint64(32)).astype(np.int64), limit)
    clone = xp.where(solved, (best & np.uint64(0xFFFFFFFF)).astype(np.int64), -1)
    per_sweep = by_point(raw["seconds_per_sweep"])
    coords = {"p": xr.Variable("p", ps, {"long_name": "flip probability with one unsatisfied triplet",
                                         "units": "1"}),
              RUN: xr.Variable(RUN, np.arange(runs), {"long_name": "independent run", "units": "1"})}
    described = {"N": N_ATTRS, "instance": INSTANCE_ATTRS}
    for d in stacked:
        coords[d] = xr.Variable(instances[d].dims, instances[d].values, instances[d].attrs or described[d])
    if "N" not in stacked:  # one size: a scalar coordinate
        coords["N"] = xr.Variable((), np.int64(instances["N"].item() if "N" in instances.coords
                                               else _instances._instance_N(instances)), N_ATTRS)
    if not stacked:  # one instance: its index as well
        coords["instance"] = xr.Variable((), np.int64(_index(instances)), INSTANCE_ATTRS)
    data = {
        "tts_sweeps": xr.Variable(dims, sweeps, {"long_name": "sweeps to the first solution (timeout if unsolved)",
                                                "units": "sweep"}),
        "tts_seconds": xr.Variable(dims, sweeps * per_sweep, {
            "long_name": "time to the first solution (at the timeout if unsolved)", "units": "s"}),
        "solved": xr.Variable(dims, solved, {"long_name": "a clone satisfied every triplet before the timeout",
                                             "units": "1"}),
        "clone": xr.Variable(dims, clone, {"long_name": "winning clone (-1: none)", "units": "1"}),
        "seconds_per_sweep": xr.Variable(dims, per_sweep, {
            "long_name": "wall time per sweep of a run's clones, from the measured update rate", "units": "s"}),
        "solution": xr.Variable(dims + ("variable",), by_point(raw["solution"]),
                                {"long_name": "winning clone's bits x (spin 1 - 2x); 0 where unsolved", "units": "1"}),
    }
    ds = xr.Dataset(data, coords)
    if p_da.ndim == 0:
        ds = ds.squeeze("p")
    resolved = _backend.resolve(backend) if isinstance(best, np.ndarray) else backend
    device = _backend.device_name(resolved) if isinstance(best, np.ndarray) else _backend.PER_WORKER_DEVICE
    attrs = io.provenance(model="3-spin model on a 3-regular 3-uniform hypergraph (3-XORSAT)",
                          integrator="quasi-greedy single-variable flips, independent sets in turn",
                          seed=seed, backend=resolved, device=device, dtype="1 bit per clone",
                          history=io.history_line("xorsat.solve", call))
    attrs.update(rng=_RNG_TEXT, clones=np.int64(clones), timeout_sweeps=np.int64(limit),
                 timeout_given=np.int64(timeout is not None))
    if "seed" in instances.attrs:
        attrs["instance_seed"] = np.int64(instances.attrs["seed"])
    return ds.assign_attrs(attrs)

