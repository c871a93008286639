"""The expected work of each Josephson run, from theory, for the estimate said before it starts.

Each function returns a :class:`gpuensembles.core.estimate.Work` in integration steps (of
all realizations and parameter points), from the theory the validation pages compare
with: the exact overdamped mean first-passage time or the Mel'nikov-Meshkov rate for
escape times, the Fulton-Dunkleberger mean for a rising ramp, the noise-free retrapping
current for a falling one, and the trial counts of forward flux sampling for rates.
Where theory does not cover a point (it raises, or gives no finite time), the step
budget of the run bounds it, and the basis says so.
"""

import functools
import math
import warnings

import numpy as np

from ...core.estimate import Work
from . import theory

#: Default throughput per CPU thread [steps/s]: the README's main job (underdamped escape
#: times, float32 Euler) ran at 4-5e7 steps/s per thread on a two-core machine.
CPU_STEPS_PER_THREAD = 4.0e7
#: Default throughput of one GPU [steps/s] (an H100 ran 3e11 float32 Euler steps/s).
GPU_STEPS = 3.0e11
#: Forward flux sampling's trials are short and launched round by round: its default
#: throughputs are those of the long first-passage runs divided by this.
ROUNDS_SLOWDOWN = 1.5
#: Default steps per second of one GPU thread (one realization): an H100 ran the README's
#: escape times, whose slowest realization took ~4e8 steps, in 26 s.
GPU_THREAD_STEPS = 1.6e7
#: Default throughput of forward flux sampling on one GPU [steps/s]: its stages launch few,
#: short trials (an H100 ran the Li junction's rates at 4.4e9 steps/s).
GPU_FFS_STEPS = 4e9
#: The running-state kernels of a ramp down watch every step for a retrap: an H100 ran the
#: README's retrapping currents at about half the first-passage throughput.
RETRAPPING_SLOWDOWN = 2.0
#: The overdamped model integrates one variable, not two: its steps are this much faster
#: (forward flux sampling ran 1e8 overdamped steps/s on two cores, 5.4e7 underdamped ones).
OVERDAMPED_SPEEDUP = 1.9


def _speedup(model) -> float:
    return OVERDAMPED_SPEEDUP if model == "overdamped" else 1.0


def _thread_rates(model, slowdown=1.0) -> tuple:
    """Steps per second of one CPU thread and of one GPU thread (one realization)."""
    return (CPU_STEPS_PER_THREAD * _speedup(model) / slowdown, GPU_THREAD_STEPS * _speedup(model) / slowdown)

_ADVICE = "fewer realizations or points, integrator='baoab' with a 10x larger h, or a GPU"


def _kind(model, integrator, dtype, what="first passage") -> str:
    return f"josephson {what}, {model}, {integrator}, {dtype}"


def _count(n) -> float:
    """``n`` as a float, infinite past the float range (a hostile count: the run's own checks refuse it)."""
    try:
        return float(n)
    except OverflowError:
        return math.inf


def _quiet(function):
    """Run a work function with theory's overflows and range warnings silenced.

    Theory outside its range (a hostile input, a barrier far above the noise) gives an
    infinite or undefined time: the estimate then says nothing, and the run's own checks
    speak to the input.
    """

    @functools.wraps(function)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return function(*args, **kwargs)

    return quiet


def _mean_time(model, V0, damping, gamma, D) -> float:
    """Mean escape time from the well bottom (inf where theory gives none, or is outside its range)."""
    try:
        with np.errstate(all="ignore"):  # a barrier far above the noise: exp overflows, the mean is infinite
            if model == "overdamped":
                mean = theory.overdamped_mfpt(V0=V0, damping=damping, gamma=gamma, D=D)
            else:
                rate = theory.escape_rate(gamma, V0=V0, damping=damping, theta=D / damping, form="melnikov")
                mean = 1.0 / rate if rate > 0 else math.inf
    except (ValueError, ArithmeticError):
        return math.inf
    return mean if math.isfinite(mean) else math.inf


#: At most this many parameter points get theory's mean escape time exactly (the exact
#: overdamped MFPT takes ~20 ms a point): the rest are scaled from them.
MAX_THEORY_POINTS = 32


def _mean_times(model, rows) -> np.ndarray:
    """Theory's mean escape time of each row ``V0, damping, gamma, D`` (inf where it gives none).

    Beyond `MAX_THEORY_POINTS` rows, the rows of the highest barriers over the noise
    ``b = Delta U / theta``, whose times dominate the run's, are computed; each other row
    takes the time of the computed row nearest in ``b``, scaled by Arrhenius' ``exp(Delta b)``
    (its prefactor is that row's).
    """
    rows = np.asarray(rows, dtype=float).reshape(-1, 4)
    if len(rows) <= MAX_THEORY_POINTS:
        return np.array([_mean_time(model, *row) for row in rows])
    V0, damping, gamma, D = rows.T
    b = theory.barrier(np.clip(gamma, 0.0, 1.0), V0) / (D / damping)
    b = np.where(np.isfinite(b), b, np.inf)
    exact = np.argsort(-b, kind="stable")[:MAX_THEORY_POINTS]
    means = np.empty(len(rows))
    means[exact] = [_mean_time(model, *rows[i]) for i in exact]
    rest = np.setdiff1d(np.arange(len(rows)), exact)
    nearest = exact[np.argmin(np.abs(b[rest, None] - b[None, exact]), axis=1)]
    means[rest] = means[nearest] * np.exp(b[rest] - b[nearest])
    return means


@_quiet
def escape_work(table, realizations, max_steps, model, integrator, dtype) -> Work:
    """Steps of ``escape_times``: the theoretical mean escape time over ``h``, capped at ``max_steps``.

    Parameters
    ----------
    table : numpy.ndarray, shape (points, 5)
        Parameter rows ``V0, damping, gamma, D, h`` (normalized units).
    realizations, max_steps : int
        Per point.
    model, integrator, dtype : str
        As in :func:`gpuensembles.escape_times`.

    Returns
    -------
    Work
        Integration steps of all realizations.
    """
    steps, longest, span = 0.0, 0.0, 0.0
    tail = math.log(realizations) + 0.5772  # the slowest of n exponential times, in means
    for mean, h in zip(_mean_times(model, table[:, :4]), table[:, 4]):  # inf outside theory: the budget bounds it
        steps += min(mean / h, max_steps) * _count(realizations)
        longest = max(longest, min(mean, max_steps * h))
        span = max(span, min(tail * mean / h, max_steps))
    source = "the exact overdamped MFPT" if model == "overdamped" else "the Mel'nikov-Meshkov rate"
    return Work(steps, "steps", _kind(model, integrator, dtype),
                f"mean escape time up to {longest:.3g} from {source}, capped at max_steps",
                CPU_STEPS_PER_THREAD * _speedup(model), GPU_STEPS * _speedup(model), _ADVICE, span=span,
                thread_rates=_thread_rates(model))


@_quiet
def ramp_work(table, names, realizations, model, integrator, dtype, voltage) -> Work:
    """Steps of a rising ramp (``switching_currents``, direct): the Fulton-Dunkleberger mean switching bias.

    Parameters
    ----------
    table : numpy.ndarray
        Parameter rows in the order ``names`` (with ``V0, damping, D, h, dgamma, gamma_start,
        limit``).
    names : sequence of str
        The columns of ``table``.
    realizations : int
        Per point.
    model, integrator, dtype : str
        As in :func:`gpuensembles.switching_currents`.
    voltage : bool
        The voltage criterion (its kernel follows escapes into the running state).

    Returns
    -------
    Work
        Ramp steps of all realizations, each at most the ramp's ``limit``.
    """
    columns = dict(zip(names, table.T))
    steps, highest, span = 0.0, 0.0, 0.0
    for V0, damping, D, h, dgamma, start, limit in zip(*(columns[k] for k in (
            "V0", "damping", "D", "h", "dgamma", "gamma_start", "limit"))):
        try:
            rate = theory.rate_formula(model, V0, damping, D / damping)
            mean = theory.fulton_dunkleberger_mean(gamma_dot=dgamma / h, rate=rate, gamma_start=start, points=100)
        except (ValueError, ArithmeticError):
            mean = math.inf
        steps += min((mean - start) / dgamma, limit) * _count(realizations)
        span = max(span, min((mean - start) / dgamma, limit))
        highest = max(highest, min(mean, start + limit * dgamma))
    what = "switching, voltage" if voltage else "switching"
    return Work(steps, "steps", _kind(model, integrator, dtype, what),
                f"mean switching bias up to {highest:.3f} from the Fulton-Dunkleberger integral",
                CPU_STEPS_PER_THREAD * _speedup(model), GPU_STEPS * _speedup(model),
                "a faster sweep, fewer realizations, integrator='baoab' with a "
                "10x larger h, or a GPU", span=span, thread_rates=_thread_rates(model))


@_quiet
def retrapping_work(table, names, realizations, integrator, dtype) -> Work:
    """Steps of a falling ramp (``retrapping_currents``): from ``gamma_start`` down to the noise-free ``I_r``.

    Parameters
    ----------
    table : numpy.ndarray
        Parameter rows in the order ``names`` (with ``V0, damping, dgamma, gamma_start, limit``).
    names : sequence of str
        The columns of ``table``.
    realizations : int
        Per point.
    integrator, dtype : str
        As in :func:`gpuensembles.retrapping_currents`.

    Returns
    -------
    Work
        Ramp steps of all realizations, each at most the ramp's ``limit``.
    """
    columns = dict(zip(names, table.T))
    steps, span = 0.0, 0.0
    for V0, damping, dgamma, start, limit in zip(*(columns[k] for k in (
            "V0", "damping", "dgamma", "gamma_start", "limit"))):
        try:
            retrap = theory.retrapping_current(theory.quality_factor(V0, damping))
        except (ValueError, ArithmeticError):
            retrap = -math.inf  # outside theory's range: the ramp's limit bounds it
        ramp = min(max(start - retrap, 0.0) / dgamma, limit)
        steps, span = steps + ramp * _count(realizations), max(span, ramp)
    return Work(steps, "steps", _kind("underdamped", integrator, dtype, "retrapping"),
                "the ramp from gamma_start down to the noise-free retrapping current",
                CPU_STEPS_PER_THREAD, GPU_STEPS / RETRAPPING_SLOWDOWN, "a faster sweep, fewer realizations or a GPU",
                span=span, thread_rates=_thread_rates("underdamped", RETRAPPING_SLOWDOWN))


#: Steps a forward flux point spends per trial of its stages, in relaxation times of the
#: well (``1 / relaxation_rate``), the flux and the interface placement included: fitted to
#: the steps of CPU runs over barriers of 5-57 theta at rel_error 0.1 (overdamped, damping 1:
#: 2.4-2.8; underdamped, damping 0.2: 1.4; the Li junction, Q = 3.5: 1.6-2.6 and, at points
#: whose replicas scatter more than the binomial estimate and add batches of them, up to 6).
#: The underdamped value is the geometric middle of its cases, each then within a factor 1.6.
FFS_TRIAL_RELAXATIONS = {"overdamped": 2.5, "underdamped": 2.4}
#: Stages a pruned forward flux chain's trials cost at most, in unpruned stages of as many trials:
#: a stage's failures now end near the interface below (:mod:`gpuensembles.core.ffs`), and the more
#: stages, the closer their interfaces; its pilots (not pruned) cost a trial each at every stage.
#: Fitted to CPU steps per batch of 16 replicas (2026-11-29), rel_error 0.1 and 0.3, 6 to 36
#: expected stages: overdamped (damping 1) and underdamped (damping 0.2, the Li junction) points
#: are then 0.72-1.56 times the estimate (a point whose replicas scatter adds batches, as before).
FFS_PRUNED_STAGES = {"overdamped": 6.0, "underdamped": 3.0}


@_quiet
def rates_work(table, methods, rel_error, model, integrator, dtype, *, direct_realizations, ffs_trials,
               voltage=False) -> Work:
    """Steps of ``escape_rates``, from each point's barrier and ``rel_error`` (:func:`rates_point_steps`).

    Parameters
    ----------
    table : numpy.ndarray, shape (points, 5)
        Parameter rows ``V0, damping, gamma, D, h``.
    methods : numpy.ndarray of str
        ``"direct"`` or ``"ffs"`` per point.
    rel_error : float
        Target relative error.
    model, integrator, dtype : str
        As in :func:`gpuensembles.escape_rates`.
    direct_realizations : int
        Trials of a direct point.
    ffs_trials : callable
        ``(stages, trials per stage, pilots per stage)`` of the forward flux points, from the
        rows of ``table``.
    voltage : bool
        ``criterion="voltage"``: the run-probability chains add about as many trials as three
        stages of forward flux.

    Returns
    -------
    Work
        Integration steps of all points.
    """
    steps = float(np.sum(rates_point_steps(table, methods, model, direct_realizations=direct_realizations,
                                           ffs_trials=ffs_trials, voltage=voltage)))
    direct = methods == "direct"
    tail = math.log(direct_realizations) + 0.5772  # the slowest of n exponential times, in means
    means = np.minimum(_mean_times(model, table[direct, :4]), 1e300)
    span = float(np.fmax.reduce(tail * means / table[direct, 4], initial=0.0))  # theory's NaNs say nothing
    return Work(steps, "steps", _kind(model, integrator, dtype, "rates"),
                f"{int(direct.sum())} direct and {int((~direct).sum())} forward flux point(s) at rel_error {rel_error}",
                CPU_STEPS_PER_THREAD * _speedup(model) / ROUNDS_SLOWDOWN, GPU_FFS_STEPS,
                "a larger rel_error, fewer points or a GPU", span=span, thread_rates=_thread_rates(model))


@_quiet
def rates_point_steps(table, methods, model, *, direct_realizations, ffs_trials, voltage=False) -> np.ndarray:
    """Expected integration steps of each ``escape_rates`` point.

    Direct points run ``direct_realizations`` trials, each lasting the Mel'nikov-Meshkov
    (underdamped) or Kramers (overdamped) mean escape time. Forward flux points run
    trials at each of their stages, each lasting `FFS_TRIAL_RELAXATIONS` relaxation times of
    the well, for `FFS_PRUNED_STAGES` stages at most (pruning), and their pilots at every
    stage (not pruned). Parameters as in :func:`rates_work`.

    Returns
    -------
    numpy.ndarray
        Steps per row of ``table`` (float64).
    """
    from .fulton_dunkleberger import relaxation_rate

    V0, damping, gamma, D, h = table.T
    steps = np.zeros(len(table))
    direct = methods == "direct"
    steps[direct] = _count(direct_realizations) * np.minimum(_mean_times(model, table[direct, :4]), 1e300) / h[direct]
    if (~direct).any():
        stages, trials, pilots = ffs_trials(table[~direct])
        relax = 1.0 / np.array([float(relaxation_rate(g, V0=v, damping=d, model=model))
                                for v, d, g in zip(V0[~direct], damping[~direct], gamma[~direct])])
        # the run-probability chains are not pruned: about three stages
        paid = (np.minimum(stages, FFS_PRUNED_STAGES[model]) + 3.0 * voltage) * trials + stages * pilots
        steps[~direct] = paid * FFS_TRIAL_RELAXATIONS[model] * relax / h[~direct]
    return steps
