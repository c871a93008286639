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
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .templates.rounds import CENSORED, REACHED

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
        The 64-bit Philox counter of the trial (below 2**63).
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

    def __call__(self, points, starts, lo, hi, ids):
        """Run trial ``j`` of point ``points[j]`` from ``starts[j]`` in ``(lo[j], hi[j])``.

        Returns ``(steps, status, ends)``.
        """
        n = len(points)
        steps = np.empty(n, dtype=np.int64)
        status = np.empty(n, dtype=np.int8)
        ends = np.empty((n, self.width), dtype=np.float64)
        if n:
            points = np.asarray(points, dtype=np.int64)
            self.run(self.table, points, np.ascontiguousarray(starts, dtype=np.float64),
                     np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64),
                     self.streams[points], np.asarray(ids, dtype=np.int64), self.seed, self.max_steps,
                     steps, status, ends)
            np.add.at(self.steps, points, steps)
        return steps, status, ends


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
    tuple of ndarray
        ``(rate, rate_stderr, censored)`` per point; ``censored`` counts trials that did
        not pass within ``max_steps``.
    """
    n_points = len(rounds.table)
    points = np.repeat(np.arange(n_points), realizations)
    index = np.tile(np.arange(realizations), n_points)
    starts = np.full((points.size, rounds.width - 1), np.nan)
    steps, status, _ = rounds(points, starts, np.full(points.size, -np.inf), lam_b[points],
                              trial_id(DIRECT, 0, 0, index))
    t = (steps * dt[points]).reshape(n_points, realizations)
    d = (status == REACHED).reshape(n_points, realizations)
    total = t.sum(axis=1)
    rate = d.sum(axis=1) / total
    stderr = np.sqrt(((d - rate[:, None] * t) ** 2).sum(axis=1)) / total
    # no passage at all: the rate is below about one event in the time simulated
    stderr = np.where(d.sum(axis=1) == 0, 1.0 / total, stderr)
    return rate, stderr, (status == CENSORED).reshape(n_points, realizations).sum(axis=1)


@dataclass(frozen=True)
class FluxSettings:
    """Sizes of a forward-flux run.

    Attributes
    ----------
    replicas : int
        Independent replicas per batch (their spread gives the error).
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
        Batches of replicas at most.
    """

    replicas: int = 16
    walkers: int = 64
    cycles: int = 8
    trials: np.ndarray = None
    pilots: int = 1024
    p_target: float = 0.3
    rel_error: float = 0.03
    max_batches: int = 4


def forward_flux(rounds: Rounds, lam_a, lam_0, lam_b, dt, settings: FluxSettings, on_round=None) -> dict:
    """Escape rates from ``x <= lam_a`` to ``x >= lam_b`` by forward flux sampling (module docstring).

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

    Returns
    -------
    dict of ndarray
        ``rate``, ``rate_stderr`` (per point), ``interfaces`` (stages per point),
        ``replicas`` (replicas run per point) and ``lambdas`` (list of interface arrays).
    """
    n_points = len(lam_a)
    tick = on_round or (lambda: None)
    rates = [[] for _ in range(n_points)]
    lambdas = None
    todo = np.arange(n_points)
    for batch in range(settings.max_batches):
        batch_rates, chosen = _batch(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, lambdas, tick)
        if lambdas is None:
            lambdas = chosen
        for p, r in zip(todo, batch_rates):
            rates[p].extend(r)
        done = np.array([_relative_error(rates[p]) <= settings.rel_error for p in range(n_points)])
        todo = np.flatnonzero(~done)
        if todo.size == 0:
            break
    rate = np.array([np.mean(r) for r in rates])
    stderr = np.array([np.std(r, ddof=1) / math.sqrt(len(r)) for r in rates])
    return {"rate": rate, "rate_stderr": stderr, "interfaces": np.array([len(x) for x in lambdas]),
            "replicas": np.array([len(r) for r in rates]), "lambdas": lambdas}


def _relative_error(rates) -> float:
    mean = np.mean(rates)
    return np.std(rates, ddof=1) / math.sqrt(len(rates)) / mean if mean > 0 else math.inf


def _batch(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, lambdas, tick):
    """One batch of ``settings.replicas`` replicas at the points ``todo``; returns their rates and interfaces.

    With ``lambdas`` None the interfaces are placed by pilots (first batch), else reused.
    """
    R = settings.replicas
    flux, configs = _flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, tick)
    product = np.ones((len(todo), R))
    current = lam_0[todo].copy()
    chosen = [[] for _ in todo] if lambdas is None else None
    active = np.ones(len(todo), dtype=bool)
    for stage in range(MAX_STAGES):
        if not active.any():
            break
        live = np.flatnonzero(active)
        if lambdas is None:
            nxt = _place(rounds, todo, live, configs, current, lam_a, lam_b, settings, stage, batch)
            tick()
        else:
            nxt = np.array([lambdas[todo[i]][stage] for i in live])
        successes = _stage(rounds, todo, live, configs, nxt, lam_a, settings, stage, batch)
        tick()
        for j, i in enumerate(live):
            for r in range(R):
                product[i, r] *= successes[j][r]
            current[i] = nxt[j]
            if chosen is not None:
                chosen[i].append(nxt[j])
            if nxt[j] >= lam_b[todo[i]]:
                active[i] = False
    else:
        raise RuntimeError(f"forward flux sampling did not reach lam_b within {MAX_STAGES} interfaces")
    return flux * product, chosen


def _flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch, tick):
    """Flux through ``lam_0`` per replica, and the crossing states each replica keeps.

    Walkers start thermal, cross ``lam_0`` and return to A once unmeasured, then run
    ``cycles`` measured cycles. A walker that reaches ``lam_b`` on its way back restarts
    from the initial distribution (its time still counts).
    """
    R, W, C = settings.replicas, settings.walkers, settings.cycles
    per_point = R * W
    points = np.repeat(todo, per_point)
    index = np.tile(np.arange(per_point), len(todo))
    state = np.full((points.size, rounds.width - 1), np.nan)
    time = np.zeros(points.size)
    crossings = []
    for half in range(2 * (C + 1)):
        upward = half % 2 == 0
        lo = np.full(points.size, -np.inf) if upward else lam_a[points]
        hi = lam_0[points] if upward else lam_b[points]
        steps, status, ends = rounds(points, state, lo, hi, trial_id(FLUX, half, batch, index))
        tick()
        if np.any(status == CENSORED):
            raise RuntimeError("a flux trial ran out of steps; the basin boundaries are too far apart")
        state = ends[:, :-1].copy()
        if not upward:
            state[status == REACHED] = np.nan  # escaped on the way back: restart
        if half >= 2:
            time += steps * dt[points]
            if upward:
                crossings.append(state.copy())
    flux = (C * W) / time.reshape(len(todo), R, W).sum(axis=2)
    stacked = np.stack(crossings, axis=1).reshape(len(todo), R, W * C, rounds.width - 1)
    configs = [[stacked[i, r] for r in range(R)] for i in range(len(todo))]
    return flux, configs


def _place(rounds, todo, live, configs, current, lam_a, lam_b, settings, stage, batch):
    """Next interface of each live point: where ``p_target`` of the pilot trials get before falling back."""
    n = settings.pilots
    b = lam_b[todo[live]]
    pooled = [np.concatenate(configs[i]) for i in live]
    alive = np.array([len(pool) > 0 for pool in pooled])  # every replica died out: the rate is 0, stop
    points = np.repeat(todo[live][alive], n)
    starts = [pool[np.arange(n) % len(pool)] for pool in pooled if len(pool)]
    starts = np.concatenate(starts) if starts else np.zeros((0, rounds.width - 1))
    _, _, ends = rounds(points, starts, lam_a[points], lam_b[points],
                        trial_id(PILOT, stage, batch, np.arange(points.size) % n))
    nxt = b.copy()
    nxt[alive] = np.quantile(ends[:, -1].reshape(-1, n), 1.0 - settings.p_target, axis=1)
    gap = 1e-3 * (b - lam_a[todo[live]])
    nxt = np.maximum(nxt, current[live] + gap)
    return np.where(nxt >= b - gap, b, nxt)


def _stage(rounds, todo, live, configs, nxt, lam_a, settings, stage, batch):
    """Trials from each replica's states at the current interface to ``nxt``; keeps the successes.

    Returns, per live point, the replicas' success fractions; ``configs`` is replaced by
    the states at ``nxt`` (in trial order).
    """
    R = settings.replicas
    pts, starts, his, ids, owners = [], [], [], [], []
    for j, i in enumerate(live):
        n = int(settings.trials[todo[i]])
        for r in range(R):
            pool = configs[i][r]
            if len(pool) == 0:
                continue
            pts.append(np.full(n, todo[i]))
            starts.append(pool[np.arange(n) % len(pool)])
            his.append(np.full(n, nxt[j]))
            ids.append(r * n + np.arange(n))
            owners.append((j, r, n))
    points = np.concatenate(pts) if pts else np.zeros(0, np.int64)
    width = rounds.width - 1
    steps, status, ends = rounds(points, np.concatenate(starts) if starts else np.zeros((0, width)),
                                 lam_a[points], np.concatenate(his) if his else np.zeros(0),
                                 trial_id(STAGE, stage, batch, np.concatenate(ids) if ids else np.zeros(0)))
    if np.any(status == CENSORED):
        raise RuntimeError("a trial between interfaces ran out of steps")
    fractions = [np.zeros(R) for _ in live]
    offset = 0
    for (j, r, n) in owners:
        ok = status[offset:offset + n] == REACHED
        fractions[j][r] = ok.mean()
        configs[live[j]][r] = ends[offset:offset + n][ok, :-1]
        offset += n
    return fractions
