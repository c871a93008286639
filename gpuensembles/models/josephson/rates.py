"""Escape rates of the washboard well, including where escape is far too rare to wait for.

The rate is the inverse mean first-passage time from the well's thermal state to the
next well: to ``arcsin(gamma) + 2 pi``, the bottom of the next well, for both models.
(Absorbing at the barrier top is not the escape rate: about half of what reaches it
falls back.) Two methods, both rounds of trial launches on the generic engine
(:mod:`gpuensembles.core.ffs`):

* ``direct``: trials from the thermal state to the next well, censored after a
  budget of steps; for barriers up to `DIRECT_MAX_BARRIER` ``theta``.
* ``ffs``: forward flux sampling along the phase, from the basin ``phi <= arcsin(gamma)``
  through adaptively placed interfaces to the next well, for barriers from
  `FFS_MIN_BARRIER` to `FFS_MAX_BARRIER` ``theta``. Forward flux sampling rather than
  adaptive multilevel splitting: its rounds are fixed-size batches of independent trials
  (one launch each, all points at once), while splitting kills and clones one trajectory
  at a time, a sequential loop that does not fill a GPU.
"""

import math
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, ffs
from ...core.backend import Backend, Progress
from ...core.progress import bar, shown, starting
from ...core.templates.rounds import trial_runner
from . import junction, theory
from . import physics as washboard
from .junction import PARAMETERS, PHYSICAL, Dtype, Integrator, Model

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

_VARIABLES = ("rate", "rate_stderr", "steps", "interfaces", "replicas")


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
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
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
        realizations; FFS adds batches of 16 replicas (up to 4) until the replicas'
        spread meets it. ``rate_stderr`` is what was achieved.
    seed : int in [0, 2**32), optional
        Random seed (drawn from the OS when omitted; always recorded).
    dtype : {"float32", "float64"}
        Precision of the state.
    chunks : int or dict, optional
        Parameter points per task along each swept dimension (int) or ``{dim: size}``;
        gives a lazy, dask-backed result. The rates do not depend on it.
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
        direct realizations).

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.escape_rates(model="overdamped", damping=1.0, D=0.02, gamma=np.linspace(0.1, 0.8, 8),
    ...                      h=0.01, seed=1)  # doctest: +SKIP
    """
    call = dict(gamma=gamma, h=h, damping=damping, D=D, V0=V0, physical=physical, model=model,
                integrator=integrator, method=method, rel_error=rel_error, seed=seed, dtype=dtype, chunks=chunks,
                backend=backend)
    engine.check_choice("method", method, METHODS)
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
    plan = engine.make_plan({k: params[k] for k in washboard.ESCAPE_PARAMETERS}, realizations=1, seed=seed,
                            max_steps=1, kernel=engine.KernelSpec(washboard.trial_kernel, (model, dtype, integrator)),
                            backend=backend)
    table = plan.table()
    barrier = theory.barrier(table[:, 2], table[:, 0]) / (table[:, 3] / table[:, 1])
    methods = _choose(method, barrier, table[:, 2], plan)
    settings = dict(model=model, rel_error=rel_error, methods=methods)
    grid = plan.shape[:-1]
    if chunks is None and engine._active_client() is None:
        raw = _run_points(plan, np.arange(table.shape[0]), settings, shown(progress)).reshape(grid + (len(_VARIABLES),))
    else:
        raw = _lazy(plan, grid, chunks, settings)
    return _dataset(plan, raw, barrier.reshape(grid), methods.reshape(grid), units,
                    junction.attributes(plan, raw, "escape_rates", model, dtype, "next_well", integrator, call,
                           initial_condition="thermal (Boltzmann) state of the well",
                           rate_definition="inverse mean first-passage time from the thermal state of the well "
                                           "to the bottom of the next well, arcsin(gamma) + 2 pi",
                           rel_error=rel_error, method_requested=method))


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


def _run_points(plan, points, settings, show=False) -> np.ndarray:
    """Rates of the flat points ``points``: float64 rows of `_VARIABLES`."""
    run = trial_runner(plan.kernel.factory(*plan.kernel.args), _backend.resolve(plan.backend))
    table = plan.table()[points]
    V0, damping, gamma, D, h = table.T
    theta = D / damping
    lam_a, lam_0, lam_b = _interfaces(settings["model"], V0, gamma, theta)
    out = np.zeros((len(points), len(_VARIABLES)))
    methods = settings["methods"][points]
    with bar(None, show, unit="rounds") as progress:
        for name in ("direct", "ffs"):
            mine = np.flatnonzero(methods == name)
            if mine.size == 0:
                continue
            rounds = ffs.Rounds(run, table[mine], points[mine].astype(np.uint32), plan.seed, width=3,
                                max_steps=_max_steps(settings, table[mine]) if name == "direct" else engine.MAX_STEPS)
            if name == "direct":
                n = math.ceil(1.2 / settings["rel_error"] ** 2)
                rate, stderr, _ = ffs.direct_rates(rounds, lam_b[mine], h[mine], n)
                out[mine, 0], out[mine, 1], out[mine, 4] = rate, stderr, n
            else:
                result = ffs.forward_flux(rounds, lam_a[mine], lam_0[mine], lam_b[mine], h[mine],
                                          _flux_settings(settings["rel_error"], table[mine]),
                                          on_round=lambda: progress.update(1))
                out[mine, 0], out[mine, 1] = result["rate"], result["rate_stderr"]
                out[mine, 3], out[mine, 4] = result["interfaces"], result["replicas"]
            out[mine, 2] = rounds.steps
    return out


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
    return np.minimum(theta, 0.3 * du), np.minimum(2.5 * theta, 0.6 * du), du + du / np.pi * (next_well - top)


def _flux_settings(rel_error, table) -> ffs.FluxSettings:
    """Trials per stage and replica from the expected number of stages at ``P_TARGET``.

    The binomial variance of a stage is ``(1 - p) / (p n)``; summed over the stages it
    gives the trials for ``rel_error``, doubled for the correlations of branching (a shortfall
    is made up by further batches).
    """
    V0, damping, gamma, D, _ = table.T
    barrier = theory.barrier(gamma, V0) / (D / damping)
    stages = np.ceil(barrier / -math.log(P_TARGET)) + 2
    replicas = ffs.FluxSettings.replicas
    total = 2.0 * stages * (1 - P_TARGET) / P_TARGET / rel_error**2
    trials = np.maximum(64, np.ceil(total / replicas)).astype(np.int64)
    # the flux and the interface placement need far fewer trials than the stages
    walkers = int(np.clip(math.ceil(0.6 / rel_error**2 / replicas), 16, 64))
    pilots = int(np.clip(math.ceil(10.0 / rel_error**2), 256, 1024))
    return ffs.FluxSettings(trials=trials, walkers=walkers, pilots=pilots, rel_error=rel_error, p_target=P_TARGET)


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
    """One dask task per block of points (the rates of a point do not depend on the blocks)."""
    da = engine.dask_array()
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


def _block(index, plan, settings):
    return _run_points(plan, index.ravel(), settings).reshape(index.shape + (len(_VARIABLES),))


def _dataset(plan, raw, barrier, methods, units, attrs) -> xr.Dataset:
    coords = {k: v for k, v in engine.coordinates(plan, PARAMETERS).items() if k != "realization"}
    dims = plan.sweep_dims

    def var(k, **meta):
        return xr.DataArray(raw[..., k], dims=dims, coords=coords, attrs=meta)

    data = {
        "rate": var(0, long_name="escape rate (inverse mean first-passage time to the next well)", units="1"),
        "rate_stderr": var(1, long_name="standard error of the escape rate", units="1"),
        "steps": var(2, long_name="integration steps spent", units="1").astype(np.int64),
        "interfaces": var(3, long_name="forward-flux interfaces (0: direct method)", units="1").astype(np.int64),
        "replicas": var(4, long_name="forward-flux replicas, or direct realizations", units="1").astype(np.int64),
        "barrier": xr.DataArray(barrier, dims=dims, coords=coords,
                                attrs={"long_name": "barrier height Delta U / theta", "units": "1"}),
        "method": xr.DataArray(methods.astype(str), dims=dims, coords=coords,
                               attrs={"long_name": "method that measured the rate"}),
    }
    if units is not None:
        data["rate_per_second"] = (data["rate"] / units["time_unit"]).assign_attrs(
            long_name="escape rate", units="s-1")
    return xr.Dataset(data, attrs=attrs)
