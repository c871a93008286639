"""Langevin ensembles over parameter grids: the driven Brownian particle (Stewart-McCumber).

See :mod:`gpuensembles.models.stewart_mccumber` for the equations and the integrators.
"""

import functools
import math
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, io
from ...core.backend import Backend, Progress
from ...core.templates.trajectories import trajectory_runner
from . import physics as sm

PARAMETERS = {
    "a": {"long_name": "drive amplitude a in a cos(w t)", "units": "1"},
    "w": {"long_name": "drive angular frequency w", "units": "1"},
    "g": {"long_name": "friction coefficient gamma", "units": "1"},
    "f": {"long_name": "static bias force f", "units": "1"},
    "kT": {"long_name": "thermal energy k_B T", "units": "1"},
    "V0": {"long_name": "potential amplitude, V(x) = V0 sin(2 pi x)", "units": "1"},
    "h": {"long_name": "integration time step", "units": "1"},
}
RECORDABLE = ("x", "v")
Dtype = Literal["float32", "float64"]
DTYPES = get_args(Dtype)

#: Cell bounds of ``histogram`` (int64 in the kernels, with room for the cell arithmetic).
_MAX_CELL = 2**62
#: Largest allowed ``h`` times the fastest deterministic rate (see `_check_step`).
MAX_STEP_TIMES_RATE = 0.5
#: Default throughputs [particle-steps/s] per CPU thread and of one GPU (an H200 ran
#: 4.1e11 underdamped float32 steps/s, docs/performance.rst).
CPU_RATE, GPU_RATE = 2.0e7, 4.0e11

_INTEGRATOR_TEXT = {
    "srk2": ("stochastic Runge-Kutta of 2nd order (Januszewski & Kostur 2010, Algorithm 2; stochastic Heun, one "
             "normal per step)"),
    "euler": "Euler-Maruyama",
}
_START_TEXT = {
    "rest": "x = 0, v = 0",
    "uniform": "x uniform over one period [-1/2, 1/2), v Maxwellian at kT",
}


#: What the normalized time of the ``time`` coordinate is (``units: "1"`` beside it).
TIME_UNIT = "the dimensionless time of the equation (Januszewski & Kostur 2010, Eq. 1; lengths in potential periods)"

def langevin(
    *,
    h,
    steps,
    realizations,
    a=0.0,
    w=1.0,
    g=1.0,
    f=0.0,
    kT=0.0,
    V0=1.0,
    sample_every=None,
    record=None,
    histogram=None,
    transient=0,
    model: Literal["underdamped", "overdamped"] = "underdamped",
    integrator: Literal["srk2", "euler"] = "srk2",
    start: Literal["rest", "uniform"] = "rest",
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Ensembles of the driven Brownian particle ``x'' + g x' = -V'(x) + a cos(w t) + f + noise``.

    ``V(x) = V0 sin(2 pi x)`` (period 1), noise ``sqrt(2 g kT) xi(t)`` (Januszewski & Kostur 2010, Eq. 1). Any
    of ``a, w, g, f, kT, V0, h`` may be a 1-D array (or DataArray): it becomes a labeled
    dimension of the output, and the whole grid runs in one launch. All quantities are
    in the model's dimensionless units (length: the potential period; time: that of the
    equation).

    Parameters
    ----------
    h : float or array
        Time step. The seed uses ``h = 0.01 * 2 pi / w`` (100 steps per drive period).
    steps : int
        Steps per trajectory; the simulated time is ``steps * h``.
    realizations : int
        Independent trajectories per parameter point.
    a, w, g, f, kT, V0 : float or array
        Drive amplitude and angular frequency, friction (> 0), static force, thermal
        energy (>= 0) and potential amplitude (>= 0; 0 is the free particle).
    sample_every : int, optional
        Keep samples every ``sample_every`` steps (a ``time`` dimension); ``steps`` must
        be a multiple of it. Without it, only the online results below are kept.
    record : sequence of {"x", "v"}, optional
        What to sample (default both; ``("x",)`` for the overdamped model). ``()`` keeps
        no trajectories, only the histograms.
    histogram : (int, int), optional
        ``(lo, hi)``: count trajectories per unit cell ``[c, c + 1)``, ``lo <= c < hi``, at
        every sample time (or at the end without ``sample_every``): the coarse-grained
        density of Januszewski & Kostur 2010, Fig. 2. Trajectories outside are counted in
        ``density_below`` / ``density_above``, never dropped.
    transient : int
        Steps discarded before the time average of the velocity starts (a multiple of
        ``sample_every`` when sampling).
    model : {"underdamped", "overdamped"}
        The overdamped model is ``g x' = -V'(x) + a cos(w t) + f + sqrt(2 g kT) xi``.
    integrator : {"srk2", "euler"}
        Stochastic Runge-Kutta 2 (Januszewski & Kostur 2010, Algorithm 2) or Euler-Maruyama.
    start : {"rest", "uniform"}
        ``x = v = 0``, or ``x`` uniform over a period and ``v`` Maxwellian at ``kT``.
    seed : int, optional
        Seed of the counter-based RNG (drawn and recorded when omitted).
    dtype : {"float32", "float64"}
        Precision of the state (positions keep an exact integer winding count).
    chunks : int, optional
        Realizations per dask task; given, or with an active ``distributed.Client``, the
        result is lazy. The numbers are the same for any chunking.
    store : str or path-like, optional
        Directory that keeps every finished chunk, verified by SHA-256: the same call run
        again (after a crash or ``kill -9``) computes only what is missing and gives
        bit-identical results (docs page "Many GPUs, long runs, faults"). Without ``seed``,
        the store's seed is reused.
    backend : {"auto", "cuda", "cpu"}
    progress : {"auto", True, False}

    Returns
    -------
    xarray.Dataset
        Over ``(*swept parameters, realization)``: ``mean_velocity`` (the time average
        ``(x(T) - x(t_transient)) / (T - t_transient)``), ``x_end`` and ``v_end``; with
        ``sample_every``, ``x`` and/or ``v`` over ``time`` as well; with ``histogram``,
        ``density`` over ``(*swept, [time,] cell)`` and its outside counts. The
        ``.langevin`` accessor averages them (``ds.langevin.velocity()``).

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.langevin(a=np.linspace(0, 8, 100), w=4.9, g=0.9, f=0.1, kT=0.001,
    ...                  h=0.01 * 2 * np.pi / 4.9, steps=200_000, transient=20_000,
    ...                  realizations=1024, seed=1)  # doctest: +SKIP
    >>> ds.langevin.velocity()  # doctest: +SKIP
    """
    call = {k: v for k, v in locals().items() if k != "progress"}
    for name, value, allowed in (("model", model, sm.MODELS), ("integrator", integrator, sm.INTEGRATORS),
                                 ("start", start, sm.STARTS), ("dtype", dtype, DTYPES)):
        engine.check_choice(name, value, allowed)
    params = {k: engine.as_parameter(k, v) for k, v in dict(a=a, w=w, g=g, f=f, kT=kT, V0=V0, h=h).items()}
    engine.check_range("g", params["g"], 0, low_open=True)
    engine.check_range("kT", params["kT"], 0)
    engine.check_range("V0", params["V0"], 0)
    engine.check_range("w", params["w"], 0)
    engine.check_range("h", params["h"], 0, low_open=True)
    engine.check_representable(dtype, params)
    _check_step(model, params)
    steps = engine.check_count("steps", steps, maximum=engine.MAX_STEPS)
    transient = engine.check_count("transient", transient, minimum=0)
    if transient >= steps:
        raise ValueError(f"transient must be smaller than steps ({steps}), got {transient}")
    every, record = _check_sampling(model, steps, transient, sample_every, record)
    lo, hi = _check_histogram(histogram)
    plan = engine.make_plan(params, realizations=realizations, seed=seed, max_steps=steps, store=store,
                            kernel=engine.KernelSpec(sm.kernel, (model, integrator, start, dtype)), backend=backend)
    segments = steps // every
    schedule = (every, segments, transient // every, sample_every is not None, lo)
    n_samples = segments if sample_every is not None else 0
    n_hist = (segments if sample_every is not None else 1) if histogram is not None else 0
    n_points = math.prod(plan.shape[:-1])
    shape = (n_points, plan.realizations)
    outputs = {
        "final": engine.Output(shape + (3,), np.float64, 1),
        "x": engine.Output(shape + (n_samples if "x" in record else 0,), np.float64, 1),
        "v": engine.Output(shape + (n_samples if "v" in record else 0,), np.float64, 1),
        "hist": engine.Output((n_points, n_hist, hi - lo + 2 if n_hist else 0), np.int64, None),
    }
    what = engine.sizes_text(plan) + (f", {n_samples} samples (steps / sample_every) of {', '.join(record)}"
                                      if n_samples and record else "")
    if n_hist:
        what += f", histogram {(lo, hi)} of {hi - lo} cells" + (f" at {n_hist} times" if n_hist > 1 else "")
    block = functools.partial(_run_block, plan, schedule, {k: o.shape[-1] for k, o in outputs.items()})
    pieces = 20 if _backend.resolve(backend) == "cpu" else 1
    work = estimate.Work(float(n_points) * plan.realizations * steps, "particle-steps", f"langevin, {model}, "
                         f"{integrator}, {dtype}", f"{steps} steps of {plan.realizations} particles at {n_points} "
                         "point(s)", CPU_RATE, GPU_RATE, "fewer steps, particles or points, or a GPU")
    with engine.stored_run(store, "langevin", call, plan.seed) as stored, estimate.timed(work, backend,
                                                                                         progress) as clock:
        raw = engine.run_realizations(block, plan.realizations, outputs, chunks=chunks, store=stored, pieces=pieces,
                                      progress=progress, unit=engine.Units("trajectories", per_item=n_points),
                                      what=what)
        clock.ran(raw)
    return _dataset(plan, raw, call, model, integrator, start, dtype, steps, every, transient, sample_every, lo, hi)


def _check_step(model, params):
    """Refuse a time step beyond ``MAX_STEP_TIMES_RATE`` times the fastest deterministic rate.

    Underdamped: ``g`` and the small-oscillation frequency ``2 pi sqrt(V0)``; overdamped:
    the relaxation rate ``(2 pi)^2 V0 / g`` at the potential's steepest curvature.
    """
    h, g, V0 = (params[k] for k in ("h", "g", "V0"))
    if model == "overdamped":
        rate = (2 * np.pi) ** 2 * V0 / g
        kind = "(2 pi)^2 V0 / g"
    else:
        rate = xr.apply_ufunc(np.maximum, g, 2 * np.pi * np.sqrt(V0))
        kind = "max(g, 2 pi sqrt(V0))"
    product = h * rate
    worst = float(product.max())
    if worst > MAX_STEP_TIMES_RATE:
        raise ValueError(f"h is too large for {engine.at_worst(product, g=g, V0=V0, h=h)}: h * {kind} = {worst:.3g} "
                         f"> {MAX_STEP_TIMES_RATE}; use a smaller h")


def _check_sampling(model, steps, transient, sample_every, record):
    """``(segment length, recorded names)``; segments must tile ``steps`` and ``transient``."""
    default = ("x",) if model == "overdamped" else RECORDABLE
    if record is not None:
        names = (record,) if isinstance(record, str) else record
        try:
            names = tuple(names)
        except TypeError:
            raise TypeError(f"record must be a sequence of names from {default}, got {record!r}") from None
        if not all(isinstance(r, str) and r in default for r in names) or len(set(names)) != len(names):
            raise ValueError(f"record may contain {default} (each once) for the {model} model, got {record!r}")
    if sample_every is None:
        if record is not None and names:
            raise ValueError(f"record={record!r} needs sample_every (samples are taken every sample_every steps)")
        return (math.gcd(steps, transient) if transient else steps), ()
    every = engine.check_count("sample_every", sample_every)
    if steps % every:
        raise ValueError(f"steps ({steps}) must be a multiple of sample_every ({every})")
    if transient % every:
        raise ValueError(f"transient ({transient}) must be a multiple of sample_every ({every})")
    return every, default if record is None else names


def _check_histogram(histogram):
    if histogram is None:
        return 0, 0
    wanted = f"histogram must be (lo, hi), integer cell bounds with hi > lo, got {histogram!r}"
    if isinstance(histogram, (str, bytes, dict)):
        raise TypeError(wanted)
    try:
        pair = tuple(histogram)
    except TypeError:
        raise TypeError(wanted) from None
    if len(pair) != 2:
        raise ValueError(wanted)
    lo, hi = (engine.check_count("histogram", v, minimum=-_MAX_CELL, maximum=_MAX_CELL) for v in pair)
    if hi <= lo:
        raise ValueError(f"histogram must be (lo, hi), integer cell bounds with hi > lo, got {histogram!r}")
    return lo, hi


def _run_block(plan, schedule, widths, start, stop):
    """Trajectories ``[start, stop)`` of every point: the arrays of :func:`langevin`'s outputs."""
    n_points = math.prod(plan.shape[:-1])
    n = stop - start
    final = np.empty((n_points, n, 3))
    xs = np.empty((n_points, n, widths["x"]))
    vs = np.empty((n_points, n, widths["v"]))
    n_hist = plan.max_steps // schedule[0] if schedule[3] else 1
    hist = np.zeros((n_points, n_hist if widths["hist"] else 0, widths["hist"]), dtype=np.int64)
    runner = trajectory_runner(plan.kernel.factory(*plan.kernel.args), _backend.resolve(plan.backend))
    runner(plan.table(), np.arange(n_points, dtype=np.uint32), start, plan.seed, schedule, final, xs, vs, hist)
    return {"final": final, "x": xs, "v": vs, "hist": hist}


def _dataset(plan, raw, call, model, integrator, start, dtype, steps, every, transient, sample_every, lo, hi):
    sweep = plan.shape[:-1]
    p = dict(zip(sm.PARAMETERS, plan.params))
    coords = engine.coordinates(plan, PARAMETERS)
    sampled = sample_every is not None
    if sampled:
        coords.update(engine.sample_coordinates(plan, every, TIME_UNIT))

    def array(values, dims, **attrs):
        return engine.on_dims(values, dims, coords, **attrs)

    def per_realization(values, extra=(), **attrs):
        return array(values.reshape(plan.shape + values.shape[2:]), plan.dims + extra, **attrs)

    final = raw["final"]
    duration = (steps - transient) * p["h"]
    data = {
        "x_end": per_realization(final[..., 0], long_name="position at the end (unwrapped)", units="1"),
        "mean_velocity": (per_realization(final[..., 0] - final[..., 2]) / duration).assign_attrs(
            long_name="time-averaged velocity after the transient", units="1", time_unit=TIME_UNIT,
            comment="(x(T) - x(t_transient)) / (T - t_transient)"),
    }
    if model == "underdamped":
        data["v_end"] = per_realization(final[..., 1], long_name="velocity at the end", units="1")
    for name, long_name in (("x", "position (unwrapped)"), ("v", "velocity")):
        if raw[name].shape[-1]:
            data[name] = per_realization(raw[name], ("time",), long_name=long_name, units="1")
    if hi > lo:
        hist = raw["hist"].reshape(sweep + raw["hist"].shape[1:])
        dims = plan.sweep_dims + (("time",) if sampled else ())
        if not sampled:
            hist = hist[..., 0, :]
        coords["cell"] = xr.Variable("cell", np.arange(lo, hi), {
            "long_name": "unit cell [cell, cell + 1) of the potential (lower edge)", "units": "1"})
        counts = {"density": (hist[..., 1:-1], dims + ("cell",), "trajectories per unit cell"),
                  "density_below": (hist[..., 0], dims, f"trajectories with x < {lo}"),
                  "density_above": (hist[..., -1], dims, f"trajectories with x >= {hi}")}
        for name, (values, vdims, long_name) in counts.items():
            data[name] = array(values, vdims, long_name=long_name, units="1")
    backend, device = engine.where_it_ran(plan, final)
    attrs = io.provenance(model=f"langevin (Stewart-McCumber, {model})", integrator=_INTEGRATOR_TEXT[integrator],
                          seed=plan.seed, backend=backend, device=device, dtype=dtype,
                          history=io.history_line("langevin", call))
    attrs.update({k: v.item() for k, v in plan.inputs.items() if v.ndim == 0})
    attrs.update(steps=np.int64(steps), transient=np.int64(transient), initial_condition=_START_TEXT[start],
                 potential="V(x) = V0 sin(2 pi x)", sample_every=np.int64(sample_every or 0))
    return xr.Dataset(data, attrs=attrs)
