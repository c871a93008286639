"""Escape rates of the washboard well, including where escape is far too rare to wait for.

The rate is the inverse mean first-passage time from the well's thermal state to the
next well: to ``arcsin(gamma) + 2 pi``, the bottom of the next well, for both models.
(Absorbing at the barrier top is not the escape rate: about half of what reaches it
falls back.) Two methods, both rounds of trial launches on the generic engine
(:mod:`gpuensembles.core.ffs`):

* ``direct``: trials from the thermal state to the next well, censored after a
  budget of steps; for barriers up to `DIRECT_MAX_BARRIER` ``theta``.
* ``ffs``: forward flux sampling, pruned (a trial falling back through the interfaces below its
  start ends there with probability 1/2 or counts twice), from the basin
  through adaptively placed interfaces to the next well, for barriers from
  `FFS_MIN_BARRIER` to `FFS_MAX_BARRIER` ``theta``. Forward flux sampling rather than
  adaptive multilevel splitting: its rounds are fixed-size batches of independent trials
  (one launch each, all points at once), while splitting kills and clones one trajectory
  at a time, a sequential loop that does not fill a GPU.
"""

import functools
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, ffs
from ...core.backend import Backend, Progress
from ...core.progress import bar, shown, starting
from ...core.templates.rounds import trial_runner
from . import estimates, junction, theory
from . import physics as washboard
from . import running_physics as running
from .junction import PARAMETERS, PHYSICAL, Criterion, Dtype, Integrator, Model

Method = Literal["auto", "direct", "ffs"]
METHODS = get_args(Method)

#: Largest barrier (in units of theta) the direct method accepts: beyond it one rate
#: point costs more than ~1e9 time units of simulation per realization.
DIRECT_MAX_BARRIER = 20.0
#: Barrier range of forward flux sampling; below the lower end the escape is not rare
#: and 1/MFPT and the flux rate part (the time to relax within the well is not small).
FFS_MIN_BARRIER, FFS_MAX_BARRIER = 3.0, 100.0
#: ``method="auto"`` takes the direct method below this barrier, forward flux above.
AUTO_SWITCH_BARRIER = 6.0
#: Fraction of the trials of a stage that reach the next interface, by construction.
P_TARGET = 0.3
#: Direct runs censor a trial after this many times the theoretical mean escape time.
DIRECT_BUDGET = 30.0

_VARIABLES = ("rate", "rate_stderr", "steps", "interfaces", "replicas", "run_probability",
              "run_probability_stderr", "failed_run_time", "run_interfaces")
#: Stage number of the first stage of a run-probability chain in the trial ids (forward flux
#: sampling's stages stay below ``ffs.MAX_STAGES``), and most stages of such a chain: a point
#: whose probability lies below about ``P_TARGET ** RUN_MAX_STAGES`` (1e-21) is left unresolved.
RUN_FIRST_STAGE, RUN_MAX_STAGES = 512, 40
#: Basin walkers per forward-flux replica at most (9 cycles of the well each, 290 bytes of host
#: memory): rel_error 0.003, the smallest allowed, asks for 4,167.
MAX_WALKERS = 4096
#: Interfaces below a forward-flux stage's start at which its falling trials are pruned (the
#: nearest ones; :mod:`gpuensembles.core.ffs`). A survivor of all of them counts 2**6 = 64 times.
PRUNE_LEVELS = 6
#: Replicas of a run-probability chain (pools of escaped states).
RUN_REPLICAS = 16
#: Tasks per worker of a pass on a cluster (:func:`_spread`): one for each of a worker's two threads,
#: whose rounds then share its GPU. With the rounds reduced on the device, more tasks only add each
#: task's rounds' fixed costs: 4 x H100, the Li junction's rates to 1%, 5.5 s with two tasks per
#: worker against 8.8 s with four and 7.2 s with one.
TASKS_PER_WORKER = 2
#: Groups of points whose rounds run at once in an eager GPU run, each on a thread and stream of
#: its own (:func:`_run_points`): a round lasts as long as its longest trial, and the other
#: group's rounds fill that tail. 4 x H200, the Li junction's rates to 1%, eagerly: one group
#: 12.8 s, two 10.2 s, three 10.4 s. A cluster's tasks run one group each: a worker's two tasks
#: already share its GPU (two groups a task made the cluster run 5.1 -> 6.2 s).
GPU_GROUPS = 2
#: The time unit of every rate (``units: "1"`` beside it).
PER_TIME = f"per ({junction.TIME_UNIT})"


def escape_rates(
    *,
    gamma,
    h,
    damping=None,
    D=None,
    V0=1.0,
    physical=None,
    model: Model = "underdamped",
    integrator: Integrator = "euler",
    method: Method = "auto",
    rel_error=0.03,
    criterion: Criterion = "escape",
    running_wells=None,
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Escape rate ``Gamma`` of the tilted washboard at constant bias, over thirty decades and more.

    ``Gamma`` is the inverse mean first-passage time from the thermal (Boltzmann) state of
    the well to the bottom of the next well, ``arcsin(gamma) + 2 pi`` (overdamped and
    underdamped alike; this counts what escapes, not what reaches the barrier top, of
    which about half falls back). It is measured by direct first passage where the barrier
    is low and by forward flux sampling (FFS) where escape is too rare to wait for (module
    docstring). A particle that falls into the well to the left (at a rate ``exp(-2 pi gamma
    V0 / theta)`` times the escape to the right) is carried on in its new well: the passage
    is to the well right of the one last occupied, so ``Gamma`` is the rate of escape to the
    right at every bias, ``gamma = 0`` included (where ``1 / MFPT`` to a fixed well would
    vanish). The result is the rate of the time-discrete chain at step ``h``; it differs
    from the continuous equation's by O(h) (``h`` times the well's relaxation or plasma
    rate, with a coefficient of order one), see the validation page.

    Parameters
    ----------
    gamma : float or array, in [0, 1)
        Bias ``I / I_c``; an array becomes a dimension.
    h : float or array, > 0
        Time step (as in :func:`escape_times`).
    damping, D, V0 : float or array
        As in :func:`escape_times` (normalized form).
    physical : dict, optional
        ``dict(R=..., C=..., Ic=..., T=...)`` in SI units instead of ``V0, damping, D``
        (:func:`normalize`); the output then also has ``rate_per_second``.
    model : {"underdamped", "overdamped"}
        Equation to integrate.
    integrator : {"euler", "baoab"}
        As in :func:`escape_times`.
    method : {"auto", "direct", "ffs"}
        ``direct`` for barriers ``Delta U / theta <= 20``, ``ffs`` for 3 to 100, ``auto``:
        direct below 6, FFS above (decided per point; the choice is in ``method``).
    rel_error : float, in [0.003, 0.5]
        Target relative standard error. Direct runs ``ceil(1.2 / rel_error**2)``
        realizations; FFS runs 16 replicas, then a batch of the replicas their spread says
        are missing (64 at most in all) until it is met. ``rate_stderr`` is what was
        achieved. With ``criterion="voltage"`` the run probability is measured to it too.
    criterion : {"escape", "voltage"}
        ``"voltage"`` (underdamped model only) also measures the probability that an escape
        ends in the running state (``running_wells`` wells advanced before the particle
        relaxes into a well, :mod:`.running_physics`), by splitting from the escaped
        trajectories' states at the next well (the first arrivals there of the rate
        measurement), and the rate of switching into the running state at constant bias,
        ``switching_rate = Gamma P / (1 + Gamma (1 - P) t_fail)`` with ``t_fail`` the mean
        duration of an escape that is retrapped (docs page "Phase diffusion and retrapping").
    running_wells : int, optional
        ``criterion="voltage"`` only: the wells a running phase advances before it counts as
        a voltage (default 100; :func:`gpuensembles.switching_currents`).
    seed : int in [0, 2**32), optional
        Random seed (drawn from the OS when omitted; always recorded).
    dtype : {"float32", "float64"}
        Precision of the state.
    chunks : int or dict, optional
        Parameter points per task along each swept dimension (int) or ``{dim: size}``;
        gives a lazy, dask-backed result. The rates do not depend on it.
    store : str or path-like, optional
        Directory that keeps the rates of every finished chunk of points, verified by
        SHA-256: the same call run again (after a crash or ``kill -9``) measures only the
        points that are missing, with bit-identical results (docs page "Many GPUs,
        long runs, faults"). Points are then run chunk by chunk (``chunks``: an int, points
        per chunk; default a sixteenth of them). Without ``seed``, the store's seed is reused.
    backend : {"auto", "cuda", "cpu"}
        Where the trials run.
    progress : {"auto", True, False}
        Progress bar over the rounds of an eager run.

    Returns
    -------
    xarray.Dataset
        Over the swept parameters: ``rate`` and ``rate_stderr`` (inverse time units),
        ``steps`` (integration steps spent), ``barrier`` (``Delta U / theta``), ``method``,
        ``interfaces`` (FFS stages; 0 for direct) and ``replicas`` (FFS replicas, or
        direct realizations). With ``criterion="voltage"`` also ``run_probability`` and
        ``run_probability_stderr``, ``failed_run_time`` (mean duration of a retrapped escape),
        ``run_interfaces`` (stages of the splitting), ``switching_rate`` and
        ``switching_rate_stderr``.

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.escape_rates(model="overdamped", damping=1.0, D=0.02, gamma=np.linspace(0.1, 0.8, 8),
    ...                      h=0.01, seed=1)  # doctest: +SKIP
    """
    call = dict(gamma=gamma, h=h, damping=damping, D=D, V0=V0, physical=physical, model=model,
                integrator=integrator, method=method, rel_error=rel_error, criterion=criterion,
                running_wells=running_wells, seed=seed, dtype=dtype, chunks=chunks, backend=backend)
    if store is not None and isinstance(chunks, dict):
        raise ValueError(f"with store, chunks must be an int (points per chunk) or None, got {chunks!r}")
    engine.check_choice("method", method, METHODS)
    wells = junction.running_wells(criterion, running_wells, model)
    rel_error = engine.check_real("rel_error", rel_error)
    if not 0.003 <= rel_error <= 0.5:
        raise ValueError(f"rel_error must be a number in [0.003, 0.5], got {rel_error!r}")
    units = None
    if physical is not None:
        units = _physical(physical, damping, D, V0)
        V0, damping, D = units["V0"], units["damping"], units["D"]
    elif damping is None or D is None:
        raise ValueError("damping and D are required (or physical=dict(R, C, Ic, T))")
    params = junction.validated(model, dtype, "next_well", integrator, V0=V0, damping=damping, gamma=gamma, D=D, h=h)
    engine.check_range("gamma", params["gamma"], 0, 1, high_open=True, hint="; for a negative bias use |gamma|")
    junction.check_step(model, params["V0"], params["damping"], params["gamma"], params["h"])
    plan = engine.make_plan({k: params[k] for k in washboard.ESCAPE_PARAMETERS}, realizations=1, seed=seed, store=store,
                            max_steps=1, kernel=engine.KernelSpec(washboard.trial_kernel, (model, dtype, integrator)),
                            backend=backend)
    table = plan.table()
    barrier = theory.barrier(table[:, 2], table[:, 0]) / (table[:, 3] / table[:, 1])
    methods = _choose(method, barrier, table[:, 2], plan)
    settings = dict(model=model, rel_error=rel_error, methods=methods, wells=wells, dtype=dtype,
                    integrator=integrator)
    grid = plan.shape[:-1]
    work = expected_work(table, methods, rel_error, model, integrator, dtype, voltage=wells is not None)
    with engine.stored_run(store, "escape_rates", call, plan.seed) as stored, estimate.timed(work, backend,
                                                                                              progress) as clock:
        if stored is not None:
            raw = engine.run_items(functools.partial(_points, plan, settings), table.shape[0], len(_VARIABLES),
                                   chunks=chunks, progress=progress, unit="points", store=stored)
            raw = raw.reshape(grid + (len(_VARIABLES),))
            if not engine.is_dask(raw):
                clock.ran(raw, raw[..., _VARIABLES.index("steps")].sum())
        elif chunks is None and engine._active_client() is None:
            starting()
            raw = _run_points(plan, np.arange(table.shape[0]), settings, shown(progress), GPU_GROUPS)
            raw = raw.reshape(grid + (len(_VARIABLES),))
            clock.ran(raw, raw[..., _VARIABLES.index("steps")].sum())
        else:
            raw = _lazy(plan, grid, chunks, settings)
    attrs = junction.attributes(plan, raw, "escape_rates", model, dtype, "next_well", integrator, call,
                                initial_condition="thermal (Boltzmann) state of the well",
                                rate_definition="inverse mean first-passage time from the thermal state of the well "
                                                "to the bottom of the next well, arcsin(gamma) + 2 pi",
                                rel_error=rel_error, method_requested=method, **junction.criterion_attrs(wells))
    return _dataset(plan, raw, barrier.reshape(grid), methods.reshape(grid), units, wells, attrs)


def expected_work(table, methods, rel_error, model, integrator, dtype, voltage=False) -> estimate.Work:
    """The steps :func:`escape_rates` is expected to spend on the parameter rows ``table``.

    ``methods`` gives ``"direct"`` or ``"ffs"`` per row (None: the choice of
    ``method="auto"``); see :func:`.estimates.rates_work`.
    """
    if methods is None:
        barrier = theory.barrier(table[:, 2], table[:, 0]) / (table[:, 3] / table[:, 1])
        methods = np.where(barrier < AUTO_SWITCH_BARRIER, "direct", "ffs")
    return estimates.rates_work(table, methods, rel_error, model, integrator, dtype,
                                **_sizes(rel_error), voltage=voltage)


def _sizes(rel_error) -> dict:
    """The trials of a direct and of a forward-flux point at ``rel_error`` (for the estimates)."""
    return dict(direct_realizations=math.ceil(1.2 / rel_error**2), ffs_trials=functools.partial(_ffs_trials, rel_error))


def _physical(physical, damping, D, V0) -> dict:
    keys = sorted(set(PHYSICAL) - {"sweep_rate"})
    if not isinstance(physical, dict):
        raise TypeError(f"physical must be a dict with the keys {keys}, got {physical!r}")
    if damping is not None or D is not None or not (isinstance(V0, (int, float)) and V0 == 1.0):
        raise ValueError("give either physical=dict(R, C, Ic, T) or V0, damping, D, not both")
    if sorted(physical) != keys:
        raise ValueError(f"physical must be a dict with exactly the keys {keys}, got {physical!r}")
    return junction.normalize(**physical)


def _choose(method, barrier, gamma, plan) -> np.ndarray:
    """The method of every point, after checking that its barrier lies in that method's range."""
    chosen = np.where(barrier < AUTO_SWITCH_BARRIER, "direct", "ffs") if method == "auto" else np.full(
        barrier.shape, method)
    where = ", ".join(f"{n} = {p.item()}" for n, p in plan.inputs.items() if p.ndim == 0 and n != "h")

    def refuse(mask, text):
        worst = float(barrier[mask][0])
        raise ValueError(f"gamma = {float(gamma[mask][0]):.6g} ({where}) gives a barrier of {worst:.4g} theta, "
                         f"{text}")

    direct, rare = chosen == "direct", chosen == "ffs"
    if np.any(direct & (barrier > DIRECT_MAX_BARRIER)):
        refuse(direct & (barrier > DIRECT_MAX_BARRIER),
               f"outside the direct method's range (at most {DIRECT_MAX_BARRIER:g} theta); use method='ffs'")
    if np.any(rare & (barrier < FFS_MIN_BARRIER)):
        refuse(rare & (barrier < FFS_MIN_BARRIER),
               f"below forward flux sampling's range ({FFS_MIN_BARRIER:g} to {FFS_MAX_BARRIER:g} theta), where "
               "escape is not rare; use method='direct'")
    if np.any(barrier > FFS_MAX_BARRIER):
        refuse(barrier > FFS_MAX_BARRIER,
               f"above {FFS_MAX_BARRIER:g} theta, the largest barrier of any method; raise D or gamma")
    return chosen


def _run_points(plan, points, settings, show=False, groups=1) -> np.ndarray:
    """Rates of the flat points ``points``: float64 rows of `_VARIABLES`.

    On a GPU the points run in up to ``groups`` groups of about equal expected cost at once
    (a point's numbers do not depend on the points that share its rounds).
    """
    groups = min(groups, len(points)) if _backend.resolve(plan.backend) == "cuda" else 1
    counting = threading.Lock()  # the groups' threads tick one bar (tqdm's count is not atomic)
    with bar(None, show, unit="rounds") as progress:
        def tick():
            """One round done."""
            with counting:
                progress.update(1)

        if groups <= 1:
            return _run_group(plan, points, settings, tick)
        shares = _shares(_costs(plan, settings)[points], groups)
        out = np.zeros((len(points), len(_VARIABLES)))
        with ThreadPoolExecutor(len(shares)) as pool:
            for share, rows in zip(shares, pool.map(lambda s: _run_group(plan, points[s], settings, tick), shares)):
                out[share] = rows
        return out


def _run_group(plan, points, settings, tick) -> np.ndarray:
    """Rates of the flat points ``points`` in one chain of rounds (``tick()`` after each): rows of `_VARIABLES`."""
    run = trial_runner(plan.kernel.factory(*plan.kernel.args), _backend.resolve(plan.backend))
    table = plan.table()[points]
    V0, damping, gamma, D, h = table.T
    theta = D / damping
    lam_a, lam_0, lam_b = _interfaces(settings["model"], V0, gamma, theta)
    out = np.zeros((len(points), len(_VARIABLES)))
    methods = settings["methods"][points]
    for name in ("direct", "ffs"):
        mine = np.flatnonzero(methods == name)
        if mine.size == 0:
            continue
        rounds = ffs.Rounds(run, table[mine], points[mine].astype(np.uint32), plan.seed, width=3,
                            max_steps=_max_steps(settings, table[mine]) if name == "direct" else engine.MAX_STEPS)
        if name == "direct":
            n = math.ceil(1.2 / settings["rel_error"] ** 2)
            rate, stderr, _, passages = ffs.direct_rates(rounds, lam_b[mine], h[mine], n)
            out[mine, 0], out[mine, 1], out[mine, 4] = rate, stderr, n
            escaped = [[p] for p in passages]
        else:
            result = ffs.forward_flux(rounds, lam_a[mine], lam_0[mine], lam_b[mine], h[mine],
                                      _flux_settings(settings["rel_error"], table[mine]), on_round=tick,
                                      keep_ends=settings["wells"] is not None)
            out[mine, 0], out[mine, 1] = result["rate"], result["rate_stderr"]
            out[mine, 3], out[mine, 4] = result["interfaces"], result["replicas"]
            escaped = result["ends"]
        out[mine, 2] = rounds.steps
        if settings["wells"] is not None:  # the escaped states go on only to the voltage criterion
            out[mine, 5:9], run_steps = _run_probabilities(plan, points[mine], table[mine],
                                                           [_replicas(pools) for pools in escaped], settings, tick)
            out[mine, 2] += run_steps
    return out


def _replicas(pools) -> list:
    """Escaped states (rows ``phi, v`` at the next well's bottom) in `RUN_REPLICAS` pools of the run kernel.

    Pools of forward flux sampling are merged into `RUN_REPLICAS` groups, replica ``r`` with
    ``r + 16``, ``r + 32``, ... (replicas that died out before the next well are left out);
    the states of independent direct trials are dealt out in turn.
    A start row of :func:`.running_physics.run_trial_kernel` is ``(phi - 2 pi, v, 1)``: one
    barrier crossed, the phase back in the well's frame.
    """
    states = [np.asarray(pool, dtype=float).reshape(-1, 2) for pool in pools]
    states = [pool for pool in states if len(pool)] or states[:1]  # replicas that died out reached nothing
    if len(states) == 1:  # independent states: deal them out, one at least to each pool
        count = max(1, min(RUN_REPLICAS, len(states[0])))
        states = [states[0][r::count] for r in range(count)]
    count = min(RUN_REPLICAS, len(states))
    groups = [np.concatenate(states[r::count]) for r in range(count)]
    return [np.column_stack([g[:, 0] - 2.0 * math.pi, g[:, 1], np.ones(len(g))]) for g in groups]


def _run_probabilities(plan, points, table, escaped, settings, tick) -> tuple:
    """The run-probability columns of ``points`` (by :func:`.core.ffs.splitting`) and the steps they took.

    Every chain starts from the escaped states of its point and ends at ``running_wells``
    wells advanced; its trials are numbered from stage `RUN_FIRST_STAGE` on, so they share no
    random numbers with the rate measurement of the same point.
    """
    V0, damping, gamma, D, h = table.T
    kernel = running.run_trial_kernel(settings["dtype"], settings["integrator"])
    run = trial_runner(kernel, _backend.resolve(plan.backend))
    steps = np.zeros(len(points), dtype=np.int64)
    # a point needs two pools of escaped states for an error; with fewer escapes it is left out
    alive = np.array([len(pools) >= 2 and all(len(pool) for pool in pools) for pools in escaped])
    start = 2.0 - (np.pi - 2.0 * np.arcsin(gamma)) / (2.0 * np.pi)  # the next well's bottom
    out = np.zeros((len(points), 4))
    out[~alive, 3] = -2  # fewer than two escapes measured: no run probability
    if alive.any():
        mine = np.flatnonzero(alive)
        sub = ffs.Rounds(run, table[mine], points[mine].astype(np.uint32), plan.seed, width=4,
                         max_steps=engine.MAX_STEPS)
        result = ffs.splitting(sub, [escaped[i] for i in mine], start[mine],
                               np.full(mine.size, float(settings["wells"])), h[mine],
                               _run_settings(settings["rel_error"], mine.size), first_stage=RUN_FIRST_STAGE,
                               max_stages=RUN_MAX_STAGES, on_round=tick)
        out[mine] = np.column_stack([result["probability"], result["probability_stderr"], result["failed_time"],
                                     np.where(result["resolved"], result["interfaces"], -1)])  # -1: unresolved
        steps[mine] = sub.steps
    return out, steps


def _run_settings(rel_error, n_points) -> ffs.FluxSettings:
    """Trials of a run-probability chain: as `_flux_settings` for three stages; more batches if it takes more."""
    total = 2.0 * 3 * (1 - P_TARGET) / P_TARGET / rel_error**2
    trials = np.full(n_points, max(64, math.ceil(total / RUN_REPLICAS)), dtype=np.int64)
    pilots = int(np.clip(math.ceil(10.0 / rel_error**2), 256, 1024))
    return ffs.FluxSettings(replicas=RUN_REPLICAS, trials=trials, pilots=pilots, rel_error=rel_error,
                            p_target=P_TARGET)


def _interfaces(model, V0, gamma, theta) -> tuple:
    """Basin boundary, first interface and target of forward flux sampling, in coordinate units.

    Overdamped, the coordinate is the phase: the basin is ``phi <= arcsin(gamma)``, the first
    interface 1.5 thermal widths ``sqrt(theta / U'')`` above it. Underdamped, it is
    `physics.reaction_coordinate`: the basin is ``E <= theta``, the first interface
    ``E = 2.5 theta`` (the energy is exponential with mean theta in the well). The target,
    also the passage point of the direct method, is the next well's bottom in both.
    """
    a = np.arcsin(gamma)
    top, next_well = np.pi - a, a + 2.0 * np.pi
    if model == "overdamped":
        curvature = V0 * np.cos(a)
        return a, a + np.minimum(1.5 * np.sqrt(theta / curvature), 0.5 * (top - a)), next_well
    du = theory.barrier(gamma, V0)
    basin = np.minimum(theta, running.BASIN_BARRIER_FRACTION * du)  # what relaxed means for the running state too
    return basin, np.minimum(2.5 * theta, 0.6 * du), du + du / np.pi * (next_well - top)


def _expected_stages(table) -> np.ndarray:
    """Stages of forward flux sampling expected at ``P_TARGET`` per stage, for parameter rows ``table``."""
    V0, damping, gamma, D, _ = table.T
    return np.ceil(theory.barrier(gamma, V0) / (D / damping) / -math.log(P_TARGET)) + 2


def _ffs_trials(rel_error, table) -> tuple:
    """``(stages, trials per stage, pilots per stage)`` of the forward flux points ``table`` (for the estimate)."""
    settings = _flux_settings(rel_error, table)
    return _expected_stages(table), settings.trials * settings.replicas, settings.pilots


def _flux_settings(rel_error, table) -> ffs.FluxSettings:
    """Trials per stage and replica from the expected number of stages at ``P_TARGET``.

    The binomial variance of a stage is ``(1 - p) / (p n)``; summed over the stages it
    gives the trials for ``rel_error``, doubled for the correlations of branching (a shortfall
    is made up by further batches).
    """
    stages = _expected_stages(table)
    replicas = ffs.FluxSettings.replicas
    total = 2.0 * stages * (1 - P_TARGET) / P_TARGET / rel_error**2
    trials = np.maximum(64, np.ceil(total / replicas)).astype(np.int64)
    # a replica's flux varies by about 1 / (walkers x cycles) (relative variance; the cycle
    # times' is 0.6-0.9 in the Li junction, an overdamped and two underdamped wells): these
    # walkers take about a fifth of a replica's share, 16 rel_error**2, and cost little beside the
    # stages (capped at 64, the flux alone took that whole share at rel_error 0.01)
    walkers = int(np.clip(math.ceil(0.6 / rel_error**2 / replicas), 16, MAX_WALKERS))
    pilots = int(np.clip(math.ceil(10.0 / rel_error**2), 256, 1024))
    return ffs.FluxSettings(trials=trials, walkers=walkers, pilots=pilots, rel_error=rel_error, p_target=P_TARGET,
                            prune_levels=PRUNE_LEVELS)


def _max_steps(settings, table) -> int:
    """Censoring budget of the direct method: `DIRECT_BUDGET` times the theoretical mean escape time."""
    longest = 0.0
    for V0, damping, gamma, D, h in table:
        form = "kramers" if settings["model"] == "overdamped" else "melnikov"
        rate = theory.escape_rate(gamma, V0=V0, damping=damping, theta=D / damping, form=form,
                                  model=settings["model"])
        longest = max(longest, DIRECT_BUDGET / max(rate, 1e-300) / h)
    return int(min(engine.MAX_STEPS, max(10**6, math.ceil(longest))))


def _lazy(plan, grid, chunks, settings):
    """One dask task per block of points (the rates of a point do not depend on the blocks).

    Without ``chunks`` (an active client), the points go to `TASKS_PER_WORKER` tasks per
    worker of about equal expected cost (:func:`_spread`).
    """
    da = engine.dask_array()
    if chunks is None:
        return _spread(plan, grid, settings, _costs(plan, settings), TASKS_PER_WORKER * engine.worker_count())
    sizes = dict(zip(plan.sweep_dims, grid))
    if not isinstance(chunks, dict):
        chunks = {d: engine.check_count("chunks", chunks) for d in plan.sweep_dims}
    unknown = set(chunks) - set(sizes)
    if unknown:
        raise ValueError(f"chunks names unknown dimensions {sorted(unknown, key=str)}; the rates have {list(sizes)}")
    blocks = tuple(engine._split(n, min(engine.check_count(f"chunks[{d!r}]", chunks.get(d, n)), n))
                   for d, n in sizes.items())
    index = da.from_array(np.arange(math.prod(grid), dtype=np.int64).reshape(grid), chunks=blocks)
    starting()
    return da.map_blocks(_block, index, plan, settings, new_axis=index.ndim, dtype=np.float64,
                         chunks=blocks + ((len(_VARIABLES),),))


def _costs(plan, settings) -> np.ndarray:
    """Expected steps of every point of ``plan`` (finite; what the points are dealt out by)."""
    costs = estimates.rates_point_steps(plan.table(), settings["methods"], settings["model"],
                                        **_sizes(settings["rel_error"]), voltage=settings["wells"] is not None)
    return np.nan_to_num(costs, nan=0.0, posinf=1e300)


def _spread(plan, grid, settings, costs, tasks: int):
    """The points in ``tasks`` tasks of about equal total ``costs``; rows back in order.

    The costs are the expected steps of each point (a barrier of 40 theta takes forward flux
    sampling, one of 2 theta a few direct trials): the costliest point goes first, each to the
    task with the least so far (longest processing time first), and the costliest task is the
    first in the graph. The tasks are more than the workers, so that a worker that finishes
    early takes another, and the two threads of a worker keep its GPU busy while each does its
    rounds' host work. The points of a task share its rounds; which points share them changes
    no number.
    """
    da = engine.dask_array()
    shares = _shares(costs, tasks)
    dealt = np.concatenate(shares)
    starting()
    # tasks without inputs: an input array's pieces, made on one worker, would draw the tasks there
    rows = da.map_blocks(_dealt_block, plan, settings, shares, dtype=np.float64,
                         chunks=(tuple(len(s) for s in shares), (len(_VARIABLES),)), meta=np.empty((0, 0)))
    return rows[np.argsort(dealt)].reshape(grid + (len(_VARIABLES),))


def _shares(costs, tasks: int) -> list:
    """Point indices in at most ``tasks`` groups of about equal total cost, costliest group first."""
    tasks = max(1, min(tasks, len(costs)))
    totals, groups = np.zeros(tasks), [[] for _ in range(tasks)]
    for point in np.argsort(-costs, kind="stable"):
        lightest = int(np.argmin(totals))
        groups[lightest].append(point)
        totals[lightest] += costs[point]
    order = np.argsort(-totals, kind="stable")
    return [np.sort(np.array(groups[t], dtype=np.int64)) for t in order]


def _dealt_block(plan, settings, shares, block_id=None):
    """Task ``block_id[0]`` of :func:`_spread`: the points of its share."""
    return _block(shares[block_id[0]], plan, settings)


def _points(plan, settings, start, stop):
    """Rates of the flat points ``[start, stop)`` (a chunk of a stored run)."""
    return _run_points(plan, np.arange(start, stop), settings)


def _block(index, plan, settings):
    return _run_points(plan, index.ravel(), settings).reshape(index.shape + (len(_VARIABLES),))


def _dataset(plan, raw, barrier, methods, units, wells, attrs) -> xr.Dataset:
    coords = {k: v for k, v in engine.coordinates(plan, PARAMETERS).items() if k != "realization"}
    dims = plan.sweep_dims

    def var(k, **meta):
        return xr.DataArray(raw[..., k], dims=dims, coords=coords, attrs=meta)

    data = {
        "rate": var(0, long_name="escape rate (inverse mean first-passage time to the next well)", units="1",
                    time_unit=PER_TIME),
        "rate_stderr": var(1, long_name="standard error of the escape rate", units="1", time_unit=PER_TIME),
        "steps": var(2, long_name="integration steps spent", units="1").astype(np.int64),
        "interfaces": var(3, long_name="forward-flux interfaces (0: direct method)", units="1").astype(np.int64),
        "replicas": var(4, long_name="forward-flux replicas, or direct realizations", units="1").astype(np.int64),
        "barrier": xr.DataArray(barrier, dims=dims, coords=coords,
                                attrs={"long_name": "barrier height Delta U / theta", "units": "1"}),
        "method": xr.DataArray(methods.astype(str), dims=dims, coords=coords,
                               attrs={"long_name": "method that measured the rate", "units": "1"}),
    }
    if wells is not None:
        data.update(_voltage_variables(var, wells))
    if units is not None:
        data["rate_per_second"] = (data["rate"] / units["time_unit"]).assign_attrs(
            long_name="escape rate", units="s-1")
        if wells is not None:
            data["switching_rate_per_second"] = (data["switching_rate"] / units["time_unit"]).assign_attrs(
                long_name="rate of switching into the running state", units="s-1")
    return xr.Dataset(data, attrs=attrs)


def _voltage_variables(var, wells) -> dict:
    """``run_probability`` .. ``switching_rate_stderr`` of a ``criterion="voltage"`` run (columns 5-8 of raw)."""
    rate, rate_stderr = var(0), var(1)
    p, p_stderr, t_fail = var(5), var(6), var(7)
    excursion = rate * (1.0 - p) * t_fail.fillna(0.0)  # Gamma (1 - P) t_fail: time lost to retrapped escapes
    switching = rate * p / (1.0 + excursion)
    # delta method, t_fail held fixed: d ln S = d ln Gamma / (1 + x) + d ln P (1 + Gamma P t_fail / (1 + x))
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.sqrt((rate_stderr / rate / (1.0 + excursion)) ** 2
                           + (p_stderr / p * (1.0 + rate * p * t_fail.fillna(0.0) / (1.0 + excursion))) ** 2)
    text = f"{wells} wells advanced before the phase relaxes into a well"
    return {
        "run_probability": p.assign_attrs(long_name=f"probability that an escape ends in the running state ({text})",
                                          units="1"),
        "run_probability_stderr": p_stderr.assign_attrs(long_name="standard error of run_probability", units="1"),
        "failed_run_time": t_fail.assign_attrs(long_name="mean duration of an escape that is retrapped, from the "
                                                         "next well's bottom", units="1", time_unit=junction.TIME_UNIT),
        "run_interfaces": var(8).astype(np.int64).assign_attrs(
            long_name="splitting stages of run_probability (-1: below 1e-21, not resolved; -2: fewer than two "
                      "escapes measured to start from)", units="1"),
        "switching_rate": switching.assign_attrs(
            long_name="rate of switching into the running state, rate * P / (1 + rate (1 - P) failed_run_time)",
            units="1", time_unit=PER_TIME),
        "switching_rate_stderr": (switching * relative).assign_attrs(
            long_name="standard error of switching_rate (rate and run_probability independent)", units="1",
            time_unit=PER_TIME),
    }
