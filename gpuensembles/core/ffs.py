"""Escape rates from rounds of trials: forward flux sampling and direct first passage.

Both methods run on :func:`gpuensembles.core.templates.rounds.trial_runner`: every round
is one launch of independent trials over all parameter points at once, and every trial
has its own Philox counter ``trial_id(kind, stage, batch, index)`` under the key
``(seed, stream of its point)``. A point's numbers therefore depend only on the seed and
its stream, never on which other points share its launches (any chunking over points
gives the same rates).

Forward flux sampling (Allen, Valeriani & ten Wolde, J. Phys.: Condens. Matter 21,
463102 (2009)) writes the rate from a basin ``A = {x <= lam_A}`` to ``B = {x >= lam_B}``
as ``k = Phi_0 * prod_i p_i``: the flux ``Phi_0`` of trajectories that leave ``A`` and
cross the first interface ``lam_0``, times the probabilities ``p_i`` that a trajectory
started at interface ``i`` reaches ``i + 1`` before it falls back into ``A``. Each stage
is a round; its successes' end states start the next. Interfaces are placed adaptively:
before each stage a pilot round from the current interface records how far each trial
gets before it falls back, and the next interface is put where a fraction ``p_target``
gets (the pilot's trials are not reused, so the estimate at fixed interfaces stays
unbiased). Errors come from independent replicas (each with its own flux run and
its own chain of stages, sharing the interfaces): the spread of the replica rates
includes the correlations that branching from shared starting states brings, which the
binomial formula misses.

A stage's failures may be pruned (``FluxSettings.prune_levels``): a trial that falls back
through one of the interfaces below its start ends there with probability 1/2, and a survivor
counts twice from then on (:mod:`gpuensembles.core.templates.rounds`). Every stage's expected
success count, and so the rate, stays what it was; the stage costs a fraction of its steps
(a failure's fall back into the basin was most of them).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .templates.rounds import (
    ALL_STEPS,
    CENSORED,
    CENSORED_COUNT,
    MAX_PRUNE_LEVELS,
    REACHED,
    REACHED_COUNT,
    REACHED_STEPS,
    KeptRows,
    host_rows,
)

#: Bits of a trial id that count trials within one round (the rest names the round).
_INDEX_BITS = 36
FLUX, PILOT, STAGE, DIRECT = range(4)
#: Stages a point may take before the method gives up (interfaces that do not advance).
MAX_STAGES = 400


def trial_id(kind: int, stage: int, batch: int, index):
    """Philox counter of a trial: the round (``kind``, ``stage``, ``batch``) in the high bits, ``index`` below.

    Parameters
    ----------
    kind : int
        ``FLUX``, ``PILOT``, ``STAGE`` or ``DIRECT``.
    stage : int
        Stage (or flux half-cycle) number, below 2**10.
    batch : int
        Batch of replicas, below 2**12.
    index : int or ndarray
        Trial within the round, below 2**36.

    Returns
    -------
    int64 or ndarray of int64
        The 64-bit Philox counter of the trial: below 2**60 for batches below 4095, which
        the rounds template's pruning needs (a survivor's further legs add multiples of 2**60).
    """
    code = 1 + kind + 4 * (stage + 1024 * batch)
    return (np.int64(code) << np.int64(_INDEX_BITS)) + np.asarray(index, dtype=np.int64)


@dataclass
class Rounds:
    """Launches rounds of trials and counts the steps each point spends.

    Attributes
    ----------
    run : callable
        A trial runner (:func:`gpuensembles.core.templates.rounds.trial_runner`).
    table : ndarray
        Parameter rows, one per point, float64.
    streams : ndarray
        Philox stream of each point (uint32): its flat index in the whole sweep.
    seed : int
        Philox key.
    width : int
        Columns of a trial's end state (coordinate first, largest coordinate last).
    max_steps : int
        Steps after which a trial is censored.
    steps : ndarray
        Integration steps spent so far per point (int64), updated by every round.
    """

    run: object
    table: np.ndarray
    streams: np.ndarray
    seed: int
    width: int
    max_steps: int
    steps: np.ndarray = field(init=False)

    def __post_init__(self):
        """Start the step count of every point at zero."""
        self.steps = np.zeros(len(self.table), dtype=np.int64)

    def __call__(self, points, counts, pools, lo, hi, first_ids):
        """Run one round, given as segments: ``counts[k]`` trials of point ``points[k]`` in ``(lo[k], hi[k])``.

        Trial ``j`` of segment ``k`` starts from row ``j mod len(pools[k])`` of the states
        ``pools[k]`` (``width - 1`` columns) and has the trial id ``first_ids[k] + j``.

        Returns
        -------
        tuple
            ``(steps, status, ends)`` of the trials, segment after segment.
        """
        points, counts, round_ = self._round(points, counts, pools, lo, hi, first_ids)
        n = int(counts.sum())
        steps = np.empty(n, dtype=np.int64)
        status = np.empty(n, dtype=np.int8)
        ends = np.empty((n, self.width), dtype=np.float64)
        if n:
            self.run(self.table, *round_, self.seed, self.max_steps, steps, status, ends)
            ran = counts > 0
            np.add.at(self.steps, points[ran], np.add.reduceat(steps, (np.cumsum(counts) - counts)[ran]))
        return steps, status, ends

    def kept(self, points, counts, pools, lo, hi, first_ids, ladders=None):
        """Run one round as :meth:`__call__` does; return only its totals and the states that reached ``hi``.

        ``ladders[k]``, if given, are segment ``k``'s pruning levels (falling, each above
        ``lo[k]``; see :mod:`gpuensembles.core.templates.rounds`): a trial that reached ``hi``
        after surviving ``m`` of them counts ``2**m`` times in the totals and among the states.

        Returns
        -------
        tuple
            ``(totals, kept)``: per segment, the columns of
            :data:`~gpuensembles.core.templates.rounds.TOTAL_COLUMNS` (int64); and the end
            states (``width - 1`` columns) of the trials that reached ``hi``, segment after
            segment in trial order: an ndarray, or on a GPU
            :class:`~gpuensembles.core.templates.rounds.KeptRows` left on the device, which
            later rounds take as pools where they lie. The device reduces a round so (a stage
            of tens of millions of trials would otherwise cost the host more than the kernel).
        """
        points, counts, round_ = self._round(points, counts, pools, lo, hi, first_ids, ladders)
        totals, kept = self.run.kept(self.table, *round_, self.seed, self.max_steps, self.width)
        np.add.at(self.steps, points, totals[:, ALL_STEPS])
        return totals, kept

    def cycles(self, points, counts, pools, windows, first_ids, halves: int, half_stride: int):
        """Walkers through ``halves`` half-cycles of the flux, in one launch (``run.cycles``).

        Segment ``k`` is ``counts[k]`` walkers of point ``points[k]``, walker ``j`` starting
        from row ``j mod len(pools[k])`` of ``pools[k]`` with half-cycle ``h``'s trial id
        ``first_ids[k] + j + h * half_stride``, in the windows ``windows[k]`` (basin, first
        interface, target).

        Returns
        -------
        tuple
            ``(steps, status, crossings)``: per walker and half-cycle, int64 and int8; per
            walker, the states of its up half-cycles from the third on (``halves // 2 - 1``
            rows of ``width - 1`` columns).
        """
        points, counts, (segments, _, pool) = self._round(points, counts, pools, np.zeros(len(points)),
                                                          np.zeros(len(points)), first_ids)
        n = int(counts.sum())
        steps, status = np.empty((n, halves), dtype=np.int64), np.empty((n, halves), dtype=np.int8)
        crossings = np.empty((n, halves // 2 - 1, self.width - 1))
        if n:
            self.run.cycles(self.table, segments, np.asarray(windows, dtype=np.float64).reshape(-1, 3), pool,
                            self.seed, self.max_steps, half_stride, steps, status, crossings)
            ran = counts > 0
            np.add.at(self.steps, points[ran], np.add.reduceat(steps.sum(axis=1), (np.cumsum(counts) - counts)[ran]))
        return steps, status, crossings

    def _round(self, points, counts, pools, lo, hi, first_ids, ladders=None):
        """``(points, counts, (segments, windows, pool))``: the round's tables for the runner."""
        points, counts = np.asarray(points, dtype=np.int64), np.asarray(counts, dtype=np.int64)
        sizes = np.array([len(pool) for pool in pools], dtype=np.int64)
        if np.any((sizes == 0) & (counts > 0)):
            raise ValueError("every segment with trials needs at least one start state in its pool")
        pool, firsts = _pool(pools, sizes, self.width - 1)
        stop = np.cumsum(counts)
        # the columns of templates.rounds.SEGMENT_COLUMNS
        segments = np.column_stack([stop - counts, stop, points, self.streams[points],
                                    np.asarray(first_ids, dtype=np.int64), firsts,
                                    sizes]).astype(np.int64, copy=False).reshape(-1, 7)
        windows = np.column_stack([np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)])
        deepest = max((len(ladder) for ladder in ladders), default=0) if ladders is not None else 0
        if deepest:
            if deepest > MAX_PRUNE_LEVELS:
                raise ValueError(f"a segment may have {MAX_PRUNE_LEVELS} pruning levels at most")
            rungs = np.full((len(points), deepest), -np.inf)
            for k, ladder in enumerate(ladders):
                rungs[k, :len(ladder)] = ladder
            windows = np.hstack([windows, rungs])
        return points, counts, (segments, windows, pool)


def _pool(pools, sizes, columns: int) -> tuple:
    """A round's pool and the first row of each segment's pool in it.

    Pools that are rows of one device buffer (:class:`KeptRows`, a previous stage's kept
    states) are read where they lie; any others are copied to the host and joined.
    """
    given = [p for p in pools if len(p)]
    if _one_buffer(given):
        return given[0].buffer, np.array([p.start if len(p) else 0 for p in pools], dtype=np.int64)
    return _joined(host_rows(pools), columns), np.cumsum(sizes) - sizes


def _one_buffer(rows) -> bool:
    """Whether ``rows`` (a list, not empty) are all :class:`KeptRows` of one device buffer."""
    return bool(rows) and all(isinstance(r, KeptRows) and r.shares_buffer(rows[0]) for r in rows)


def _joined(pools, columns: int) -> np.ndarray:
    """The rows of ``pools`` one after the other, float64 with ``columns`` columns.

    A stage's pools are the previous stage's kept states, split in the order they are
    joined again: when they lie one after the other in one array, that array's rows are
    returned as a view (copying the tens of megabytes of a large stage cost the host more
    than the copy to the device).
    """
    pools = [p for p in (np.asarray(p, dtype=np.float64).reshape(-1, columns) for p in pools) if len(p)]
    if not pools:
        return np.zeros((0, columns))
    owner = _owner(pools[0])
    if all(p.flags.c_contiguous and _owner(p) is owner for p in pools):
        starts = [p.__array_interface__["data"][0] for p in pools]
        if all(a + p.nbytes == b for a, p, b in zip(starts, pools, starts[1:])):
            # one buffer holds them all, in this order: read it through the first (which keeps it alive)
            return np.lib.stride_tricks.as_strided(pools[0], shape=(sum(len(p) for p in pools), columns),
                                                   strides=(8 * columns, 8))
    return np.concatenate(pools)


def _owner(array: np.ndarray):
    """The object that owns the memory of ``array`` (the end of its chain of bases)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def direct_rates(rounds: Rounds, lam_b, dt, realizations: int) -> tuple:
    """Rates as inverse mean first-passage times from the initial distribution to ``lam_b``.

    Every point runs ``realizations`` trials from the model's initial distribution (NaN
    starts) up to ``rounds.max_steps`` steps. With ``t_i`` the passage or censoring time
    and ``d_i`` 1 for a passage, the rate is ``sum d / sum t`` (the maximum-likelihood rate
    of exponential times, and exactly ``1 / mean t`` without censoring); its standard
    error is the delta-method one of that ratio, ``sqrt(sum (d - rate t)^2) / sum t``.

    Parameters
    ----------
    rounds : Rounds
        The launcher.
    lam_b : ndarray
        Passage point of each point.
    dt : ndarray
        Time per step of each point.
    realizations : int
        Trials per point.

    Returns
    -------
    tuple
        ``(rate, rate_stderr, censored, passages)``: arrays per point, ``censored`` counting
        the trials that did not pass within ``max_steps``, and per point the end states of
        the trials that passed (rows of ``ends[:, :-1]``, what a further round starts from).
    """
    n_points = len(rounds.table)
    thermal = np.full((1, rounds.width - 1), np.nan)
    steps, status, ends = rounds(np.arange(n_points), np.full(n_points, realizations), [thermal] * n_points,
                                 np.full(n_points, -np.inf), lam_b, np.full(n_points, trial_id(DIRECT, 0, 0, 0)))
    t = steps.reshape(n_points, realizations) * dt[:, None]
    d = (status == REACHED).reshape(n_points, realizations)
    total = t.sum(axis=1)
    rate = d.sum(axis=1) / total
    stderr = np.sqrt(((d - rate[:, None] * t) ** 2).sum(axis=1)) / total
    # no passage at all: the rate is below about one event in the time simulated
    stderr = np.where(d.sum(axis=1) == 0, 1.0 / total, stderr)
    states = ends[:, :-1].reshape(n_points, realizations, -1)
    passages = [states[p][d[p]] for p in range(n_points)]
    return rate, stderr, (status == CENSORED).reshape(n_points, realizations).sum(axis=1), passages


@dataclass(frozen=True)
class FluxSettings:
    """Sizes of a forward-flux run.

    Attributes
    ----------
    replicas : int
        Independent replicas of the first batch (their spread gives the error), and the
        fewest of any further batch.
    walkers : int
        Basin walkers per replica in the flux run.
    cycles : int
        Measured cycles (leave A, cross ``lam_0``, return to A) per walker, after one unmeasured.
    trials : ndarray
        Trials per stage and replica, per point.
    pilots : int
        Pilot trials per stage and point that place the next interface.
    p_target : float
        Fraction of pilots that should reach the next interface.
    rel_error : float
        Relative standard error after which a point needs no further batch.
    max_batches : int
        Batches of replicas at most; a point runs ``replicas * max_batches`` replicas at most.
    prune_levels : int
        Interfaces below a stage's start (the nearest ones) at which its falling trials are
        pruned (module docstring); 0 prunes none. A stage's success count and mean success time
        keep their expectation, not its failures' durations.
    """

    replicas: int = 16
    walkers: int = 64
    cycles: int = 8
    trials: np.ndarray = None
    pilots: int = 1024
    p_target: float = 0.3
    rel_error: float = 0.03
    max_batches: int = 4
    prune_levels: int = 0


#: A further batch of forward flux sampling is sized for this many times the replicas its
#: predecessors' spread says the target needs: that spread, from 16 replicas, is itself uncertain
#: by about a third, and a batch too few costs a whole further chain of stages.
BATCH_SAFETY = 1.25


def forward_flux(rounds: Rounds, lam_a, lam_0, lam_b, dt, settings: FluxSettings, on_round=None,
                 keep_ends=True) -> dict:
    """Escape rates from ``x <= lam_a`` to ``x >= lam_b`` by forward flux sampling (module docstring).

    A point runs a first batch of ``settings.replicas`` replicas; while its relative error
    is above ``settings.rel_error``, a further batch of as many replicas as the spread so far
    says are missing (:func:`next_batch`). A point's batches run one after the other, each a
    chain of stages, so a point that needs four times its first batch waits for two chains,
    not four.

    Parameters
    ----------
    rounds : Rounds
        The launcher.
    lam_a, lam_0, lam_b : ndarray
        Basin boundary, first interface and target, per point (``lam_a < lam_0 < lam_b``).
    dt : ndarray
        Time per step, per point.
    settings : FluxSettings
        Sizes.
    on_round : callable, optional
        Called after every round (progress).
    keep_ends : bool
        Whether to return the states that reached ``lam_b``. On a GPU they lie on the device
        until a point's chain ends, and copying them to the host waits for its last round.

    Returns
    -------
    dict
        ``rate``, ``rate_stderr`` (per point), ``interfaces`` (stages per point),
        ``replicas`` (replicas run per point), ``lambdas`` (list of interface arrays) and
        ``ends`` (with ``keep_ends``, per point a list over its replicas of the states that
        reached ``lam_b``: first arrivals at ``lam_b``, what a further round starts from;
        else None).
    """
    n_points = len(lam_a)
    tick = on_round or (lambda: None)
    rates = [[] for _ in range(n_points)]
    ends = [[] for _ in range(n_points)]
    lambdas = None
    todo = np.arange(n_points)
    replicas = np.full(n_points, settings.replicas)
    for batch in range(settings.max_batches):
        flux, configs = _flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, tick, replicas[todo])
        chain = _chain(rounds, todo, configs, lam_0[todo].copy(), lam_a, lam_b, dt, settings, batch, lambdas, tick,
                       keep_ends=keep_ends)
        if lambdas is None:
            lambdas = chain.chosen
        for i, p in enumerate(todo):
            rates[p].extend(flux[i] * chain.product[i, :replicas[p]])
            ends[p].extend(configs[i])
        replicas = np.array([next_batch(r, settings) for r in rates])
        todo = np.flatnonzero(replicas)
        if todo.size == 0:
            break
    rate = np.array([np.mean(r) for r in rates])
    stderr = np.array([np.std(r, ddof=1) / math.sqrt(len(r)) for r in rates])
    return {"rate": rate, "rate_stderr": stderr, "interfaces": np.array([len(x) for x in lambdas]),
            "replicas": np.array([len(r) for r in rates]), "lambdas": lambdas, "ends": ends if keep_ends else None}


def splitting(rounds: Rounds, pools, lam_0, lam_b, dt, settings: FluxSettings, *, first_stage=0,
              max_stages=MAX_STAGES, on_round=None) -> dict:
    """Probability that trajectories from given states reach ``lam_b`` before they fail, by splitting.

    The stage chain of forward flux sampling without its flux: replica ``r`` of point ``p``
    starts from the states ``pools[p][r]`` (their coordinate is ``lam_0[p]``) and runs
    through adaptively placed interfaces to ``lam_b[p]``; a trial fails where the kernel
    says ``RETURNED`` (its coordinate at or below 0, or its own failure condition). The
    probability of a replica is the product of its stages' success fractions, the estimate
    the mean over replicas, its error their spread: a replica's own pool and its branching
    make its stages correlated, which the binomial formula would miss. Batches (reusing the
    interfaces of the first) are added until ``settings.rel_error`` is met or
    ``settings.max_batches`` are run; a batch starts every replica from its own pool again,
    so the batches of a replica are averaged first and the error is the spread of these
    averages over the replicas: more batches reduce the part of the error that comes from
    the trials, never the part that comes from the pools.

    Besides the probability, the mean duration of a failed trajectory follows from the
    stages' mean success and failure durations (a failure at stage ``i`` has taken stages
    ``0 .. i-1`` successfully): ``(1 - P) E[t_fail] = sum_i P_i (1 - p_i) (sum_{j<i} s_j + f_i)``
    with ``P_i`` the product of the fractions before stage ``i``.

    Parameters
    ----------
    rounds : Rounds
        The launcher (its kernel's coordinate in the ``lo``/``hi`` windows).
    pools : list
        Per point, a list over replicas of start states (rows as ``rounds`` takes them); the
        replicas are as many as the shortest list.
    lam_0, lam_b : ndarray
        Coordinate of the start states and target, per point.
    dt : ndarray
        Time per step, per point.
    settings : FluxSettings
        Sizes (``trials``, ``pilots``, ``p_target``, ``rel_error`` and ``max_batches`` are used).
    first_stage : int
        Stage number of the first stage in the trials' ids: a chain run on the points of
        a forward-flux run must not reuse its ids (``first_stage + max_stages <= 1024``).
    max_stages : int
        Stages after which a point is given up (its probability is below about
        ``p_target ** max_stages``): ``resolved`` is then False and the estimate 0.
    on_round : callable, optional
        Called after every round.

    Returns
    -------
    dict
        Per point: ``probability``, ``probability_stderr`` (infinite with one replica),
        ``failed_time`` (mean duration of a failed trajectory), ``interfaces``,
        ``replicas``, ``batches`` and ``resolved``.
    """
    n_points = len(pools)
    if first_stage + max_stages > 1024:
        raise ValueError(f"stages {first_stage} to {first_stage + max_stages} exceed the 1024 of the trial ids")
    tick = on_round or (lambda: None)
    R = min(len(pool) for pool in pools) if n_points else 0
    # no pruning: the failures' durations are measured
    settings = FluxSettings(replicas=R, trials=settings.trials, pilots=settings.pilots, p_target=settings.p_target,
                            rel_error=settings.rel_error, max_batches=settings.max_batches)
    found = [[] for _ in range(n_points)]  # per point and batch: (probability, failed-time weight) per replica
    resolved = np.ones(n_points, dtype=bool)
    lambdas = None
    todo = np.arange(n_points)
    zero = np.zeros(n_points)
    for batch in range(settings.max_batches):
        configs = [[pools[p][r] for r in range(R)] for p in todo]
        chain = _chain(rounds, todo, configs, lam_0[todo].copy(), zero, lam_b, dt, settings, batch, lambdas, tick,
                       first_stage=first_stage, max_stages=max_stages, give_up=True)
        if lambdas is None:
            lambdas = chain.chosen
            resolved = ~chain.unfinished
        for i, p in enumerate(todo):
            found[p].append(np.stack([chain.product[i], chain.failed[i]]))
        done = np.array([not resolved[p] or _relative_error(np.mean(found[p], axis=0)[0]) <= settings.rel_error
                         for p in range(n_points)])
        todo = np.flatnonzero(~done)
        if todo.size == 0:
            break
    per_replica = [np.mean(fs, axis=0) for fs in found]  # the batches of a replica share its pool: averaged first
    probability = np.array([f[0].mean() for f in per_replica])
    stderr = np.array([f[0].std(ddof=1) / math.sqrt(R) if R > 1 else math.inf for f in per_replica])
    with np.errstate(invalid="ignore", divide="ignore"):
        failed_time = np.array([f[1].mean() for f in per_replica]) / (1.0 - probability)
    probability[~resolved], stderr[~resolved] = 0.0, 0.0
    return {"probability": probability, "probability_stderr": stderr, "failed_time": failed_time,
            "interfaces": np.array([len(x) for x in lambdas]) if lambdas else np.zeros(0, np.int64),
            "replicas": np.full(n_points, R), "batches": np.array([len(fs) for fs in found]), "resolved": resolved}


def next_batch(rates, settings: FluxSettings) -> int:
    """Replicas of a point's next batch, given the rates of its replicas so far (0: none needed).

    With ``k`` replicas at relative error ``e``, one replica's relative variance is about
    ``k e**2``, so the target ``settings.rel_error`` needs ``k (e / rel_error)**2`` replicas:
    the next batch brings `BATCH_SAFETY` times that, less those run, at least
    ``settings.replicas`` and at most what ``settings.max_batches`` batches of
    ``settings.replicas`` would hold. A point whose rates are all zero takes the most.

    Parameters
    ----------
    rates : sequence of float
        The rates of the point's replicas so far.
    settings : FluxSettings
        Sizes (``replicas``, ``rel_error`` and ``max_batches`` are used).

    Returns
    -------
    int
        Replicas of the next batch.
    """
    k, error = len(rates), _relative_error(rates)
    room = settings.replicas * settings.max_batches - k
    if error <= settings.rel_error or room <= 0:
        return 0
    wanted = math.ceil(BATCH_SAFETY * k * (error / settings.rel_error) ** 2) - k if math.isfinite(error) else room
    return int(min(max(wanted, settings.replicas), room))


def _relative_error(rates) -> float:
    mean = np.mean(rates)
    return np.std(rates, ddof=1) / math.sqrt(len(rates)) / mean if mean > 0 else math.inf


@dataclass
class _Chain:
    """What a chain of stages found, per point (rows) and replica (columns)."""

    product: np.ndarray  # products of the stages' success fractions
    failed: np.ndarray  # sum_i P_i (1 - p_i) (time to stage i + mean failure time at it)
    chosen: list  # the interfaces placed, when this chain placed them
    unfinished: np.ndarray  # points given up after max_stages


def _chain(rounds, todo, configs, current, lam_a, lam_b, dt, settings, batch, lambdas, tick, first_stage=0,
           max_stages=MAX_STAGES, give_up=False, keep_ends=True) -> _Chain:
    """Stages from the states ``configs`` at ``current`` to ``lam_b``, interfaces placed (``lambdas`` None) or given.

    ``configs`` is replaced by the states at ``lam_b`` (per point and replica; without
    ``keep_ends``, by None). A point still short of ``lam_b`` after ``max_stages`` is an
    error, or with ``give_up`` is left unfinished.
    """
    R = max(len(c) for c in configs)  # a further batch of forward flux sampling: replicas per point
    product, failed, reached = np.ones((len(todo), R)), np.zeros((len(todo), R)), np.zeros((len(todo), R))
    chosen = [[] for _ in todo] if lambdas is None else None
    passed = [[level] for level in current]  # the interfaces each point's states have crossed, the last its current
    active = np.ones(len(todo), dtype=bool)
    for stage in range(max_stages):
        if not active.any():
            break
        live = np.flatnonzero(active)
        if lambdas is None:
            nxt = _place(rounds, todo, live, configs, current, lam_a, lam_b, settings, first_stage + stage, batch)
            tick()
        else:
            nxt = np.array([lambdas[todo[i]][stage] for i in live])
        ladders = [passed[i][-2::-1][:settings.prune_levels] for i in live]  # the nearest below, falling
        fractions, succeeded, fell = _stage(rounds, todo, live, configs, nxt, lam_a, settings, first_stage + stage,
                                            batch, ladders)
        tick()
        for j, i in enumerate(live):
            step = dt[todo[i]]
            failed[i] += product[i] * (1.0 - fractions[j]) * (reached[i] + step * fell[j])
            reached[i] += step * succeeded[j]
            product[i] *= fractions[j]
            current[i] = nxt[j]
            passed[i].append(nxt[j])
            if chosen is not None:
                chosen[i].append(nxt[j])
            if nxt[j] >= lam_b[todo[i]]:
                active[i] = False
                # the device buffer is written again two stages on
                configs[i] = host_rows(configs[i]) if keep_ends else [None] * len(configs[i])
    else:
        if active.any() and not give_up:
            raise RuntimeError(f"forward flux sampling did not reach lam_b within {max_stages} interfaces")
        product[active] = 0.0
        for i in np.flatnonzero(active):
            configs[i] = host_rows(configs[i])
    return _Chain(product, failed, chosen, active)


def _flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, tick, replicas=None):
    """Flux through ``lam_0`` per replica, and the crossing states each replica keeps.

    ``replicas`` gives the replicas of each point of ``todo`` (``settings.replicas`` each
    without it); the fluxes come back per point, an array over its replicas.

    Walkers start thermal, cross ``lam_0`` and return to A once unmeasured, then run
    ``cycles`` measured cycles. A walker that reaches ``lam_b`` on its way back restarts
    from the initial distribution (its time still counts). Each walker runs its half-cycles
    one after the other in one launch (:meth:`Rounds.cycles`): a round per half-cycle waited
    for the slowest walker of every half, the launch waits for the slowest walker's sum.
    """
    W, C = settings.walkers, settings.cycles
    replicas = np.full(len(todo), settings.replicas) if replicas is None else np.asarray(replicas, dtype=np.int64)
    per_point = replicas * W
    walkers = np.repeat(todo, per_point)
    thermal = np.full((1, rounds.width - 1), np.nan)  # every walker's first half-cycle starts thermal
    steps, status, crossings = rounds.cycles(
        todo, per_point, [thermal] * len(todo),
        np.column_stack([lam_a[todo], lam_0[todo], lam_b[todo]]), np.full(len(todo), trial_id(FLUX, 0, batch, 0)),
        2 * (C + 1), trial_id(FLUX, 1, batch, 0) - trial_id(FLUX, 0, batch, 0))
    tick()
    if np.any(status == CENSORED):
        raise RuntimeError("a flux trial ran out of steps; the basin boundaries are too far apart")
    time = np.zeros(walkers.size)
    for half in range(2, 2 * (C + 1)):
        time += steps[:, half] * dt[walkers]
    bounds = np.cumsum(per_point)[:-1]
    flux = [(C * W) / t.reshape(r, W).sum(axis=1) for t, r in zip(np.split(time, bounds), replicas)]
    configs = [list(c.reshape(r, W * C, rounds.width - 1)) for c, r in zip(np.split(crossings, bounds), replicas)]
    return flux, configs


def _place(rounds, todo, live, configs, current, lam_a, lam_b, settings, stage, batch):
    """Next interface of each live point: where ``p_target`` of the pilot trials get before falling back."""
    n = settings.pilots
    b = lam_b[todo[live]]
    pooled = [_leading_rows(configs[i], n) for i in live]
    alive = np.array([len(pool) > 0 for pool in pooled])  # every replica died out: the rate is 0, stop
    points = todo[live][alive]
    _, _, ends = rounds(points, np.full(points.size, n), [pool for pool in pooled if len(pool)], lam_a[points],
                        lam_b[points], np.full(points.size, trial_id(PILOT, stage, batch, 0)))
    nxt = b.copy()
    nxt[alive] = np.quantile(ends[:, -1].reshape(-1, n), 1.0 - settings.p_target, axis=1)
    gap = 1e-3 * (b - lam_a[todo[live]])
    nxt = np.maximum(nxt, current[live] + gap)
    return np.where(nxt >= b - gap, b, nxt)


def _leading_rows(pools, n: int):
    """The rows that ``n`` trials started from the joined ``pools`` use: the first ``n``, or all if fewer.

    Trial ``j`` starts from row ``j mod len(pool)``, so the rows past ``n`` are never read and
    need not be joined and copied (a pilot round of 1024 trials from a pool of millions).
    Rows that follow each other in one device buffer stay there, as one :class:`KeptRows`.
    """
    taken, rows = [], 0
    for pool in pools:
        if rows >= n:
            break
        taken.append(pool[:n - rows])
        rows += len(taken[-1])
    if _one_buffer(taken) and all(a.stop == b.start for a, b in zip(taken, taken[1:])):
        return taken[0].buffer_rows(taken[0].start, taken[-1].stop)
    return np.concatenate(host_rows(taken))


def _stage(rounds, todo, live, configs, nxt, lam_a, settings, stage, batch, ladders):
    """Trials from each replica's states at the current interface to ``nxt``; keeps the successes.

    ``ladders`` are each live point's pruning levels. Returns, per live point, the replicas'
    success fractions and the mean steps of their successful and their failed trials (0 where
    there were none; with pruning, the successes counted with their weights); ``configs`` is
    replaced by the states at ``nxt`` (in trial order).
    """
    R = max(len(c) for c in configs)  # the columns of the chain's tables
    owners = [(j, r, int(settings.trials[todo[i]])) for j, i in enumerate(live) for r in range(len(configs[i]))
              if len(configs[i][r])]  # a replica that died out runs no trials
    fractions, succeeded, fell = ([np.zeros(R) for _ in live] for _ in range(3))
    if not owners:
        return fractions, succeeded, fell
    points = np.array([todo[live[j]] for j, _, _ in owners], dtype=np.int64)
    totals, kept = rounds.kept(points, [n for _, _, n in owners], [configs[live[j]][r] for j, r, _ in owners],
                               lam_a[points], [nxt[j] for j, _, _ in owners],
                               trial_id(STAGE, stage, batch, np.array([r * n for _, r, n in owners])),
                               [ladders[j] for j, _, _ in owners])
    if np.any(totals[:, CENSORED_COUNT]):
        raise RuntimeError("a trial between interfaces ran out of steps")
    # the sums of integer steps are exact, so the means are those of the trials' steps one by one
    wins = totals[:, REACHED_COUNT]
    bounds = np.cumsum(wins) - wins
    states = [kept[a:a + w] for a, w in zip(bounds, wins)]
    for (j, r, n), w, won, total, mine in zip(owners, wins, totals[:, REACHED_STEPS], totals[:, ALL_STEPS], states):
        fractions[j][r] = w / n
        succeeded[j][r] = won / w if w else 0.0
        fell[j][r] = (total - won) / (n - w) if w < n else 0.0
        configs[live[j]][r] = mine
    return fractions, succeeded, fell
