"""Josephson junctions: escape times and switching-current distributions.

Normalized RCSJ (washboard) Langevin equation, seed 000 Eq. (9) with the noise of its
Algorithm 1::

    underdamped:  phi'' + damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    overdamped:           damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    <xi(t) xi(t')> = 2 D delta(t - t'),   D = damping * theta

The noise enters *outside* ``V0`` (as in the seed's Algorithm 1, not its Eq. 9), which
is what satisfies fluctuation-dissipation with temperature ``theta = D / damping`` for
the potential ``U(phi) = -V0 (cos(phi) + gamma phi)``.

Units (seed 000, Sect. II.1): energies in ``E_C = (2e)^2 / C``, time in ``hbar / E_C``,
currents in ``I_c``; see :func:`normalize` for the conversion from SI.
"""

import math
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import engine, io
from ...core.backend import Backend, Progress
from . import physics as washboard
from . import theory

Model = Literal["underdamped", "overdamped"]
Dtype = Literal["float32", "float64"]
Passage = Literal["barrier_top", "next_well"]
Integrator = Literal["euler", "baoab"]
Start = Literal["rest", "thermal"]
MODELS, DTYPES, STARTS = get_args(Model), get_args(Dtype), get_args(Start)
PASSAGES, INTEGRATORS = washboard.PASSAGES, washboard.INTEGRATORS
assert PASSAGES == get_args(Passage) and INTEGRATORS == get_args(Integrator)
_INTEGRATOR_TEXT = {
    "euler": "Euler-Maruyama, noise sqrt(2 D h) added to the velocity (seed 000, Algorithm 1)",
    "baoab": "BAOAB splitting (half kick, half drift, exact Ornstein-Uhlenbeck step, half drift, half kick)",
}

#: Coordinates' metadata of the parameters a user can sweep.
PARAMETERS = {
    "V0": {"long_name": "barrier scale V0 = E_J / E_C", "units": "1"},
    "damping": {"long_name": "normalized damping (friction) coefficient", "units": "1"},
    "gamma": {"long_name": "normalized bias current I / I_c", "units": "1"},
    "D": {"long_name": "noise intensity, <xi xi> = 2 D delta", "units": "1"},
    "h": {"long_name": "integration time step", "units": "1"},
    "dgamma": {"long_name": "bias increment per integration step", "units": "1"},
    "gamma_start": {"long_name": "bias at the start of the ramp", "units": "1"},
}

#: Exact SI constants (2019 redefinition): elementary charge [C], reduced Planck constant
#: [J s], Boltzmann constant [J/K]. Written out: ``scipy.constants`` costs a fifth of a second
#: at import, and these values are exact by definition, so they cannot drift from it.
ELEMENTARY_CHARGE = 1.602176634e-19
HBAR = 6.62607015e-34 / (2.0 * math.pi)
BOLTZMANN = 1.380649e-23

#: SI inputs of :func:`normalize`, with the range outside which a value is taken as a unit mistake.
PHYSICAL = {
    "R": ("shunt resistance", "ohm", 1e-3, 1e9),
    "C": ("junction capacitance", "F", 1e-18, 1e-6),
    "Ic": ("critical current", "A", 1e-12, 1.0),
    "T": ("temperature", "K", 1e-4, 1e3),
    "sweep_rate": ("bias sweep rate (dI/dt) / Ic", "s-1", 1e-6, 1e12),
}

#: Largest allowed ``h`` times the fastest deterministic rate of the well (see `_check_step`).
MAX_STEP_TIMES_RATE = 0.1

_PASSAGE_TEXT = {
    "barrier_top": "first step with phi > pi - arcsin(gamma) (barrier top; seed 000)",
    "next_well": ("first step with phi > arcsin(gamma) + 2 pi "
                  "(bottom of the next well: escape as rate theory counts it)"),
}


# --------------------------------------------------------------------------- physical units


def normalize(*, R, C, Ic, T, sweep_rate=None, h=None) -> dict:
    """Convert SI junction parameters into the normalized units of the model.

    Conventions (seed 000, Sect. II.1): ``E_J = Ic hbar / 2e``, ``E_C = (2e)^2 / C``,
    time unit ``t0 = hbar / E_C``. Then ``V0 = E_J / E_C``, ``damping = hbar / (R (2e)^2)``
    ``= t0 / (R C)``, ``theta = k_B T / E_C`` and ``D = damping * theta``. The bias sweep
    is ``dI/dt = sweep_rate * Ic``, so ``d gamma / dt = sweep_rate`` and the bias grows
    by ``dgamma = sweep_rate * t0 * h`` per integration step.

    Parameters
    ----------
    R : float or array, ohm
        Shunt resistance. Any array becomes a dimension named after its parameter.
    C : float or array, F
        Junction capacitance.
    Ic : float or array, A
        Critical current.
    T : float or array, K
        Temperature.
    sweep_rate : float or array, 1/s, optional
        Bias sweep rate ``(dI/dt) / Ic``.
    h : float, optional
        Integration step (normalized); needed for ``dgamma``.

    Returns
    -------
    dict of DataArray
        ``V0, damping, theta, D, time_unit`` (s), ``E_C`` (J), ``Ic`` (A), and with
        ``sweep_rate`` and ``h`` also ``dgamma``.

    Examples
    --------
    Li et al., PRL 99, 037002 (2007): ``normalize(R=250, C=88e-15, Ic=0.748e-6, T=1.2)``
    gives ``V0 = 211.8``, ``damping = 4.11``, ``theta = 14.2``.
    """
    given = {"R": R, "C": C, "Ic": Ic, "T": T}
    if sweep_rate is not None:
        given["sweep_rate"] = sweep_rate
    p = {}
    for name, value in given.items():
        long_name, units, low, high = PHYSICAL[name]
        arr = engine.as_parameter(name, value)
        engine.check_range(name, arr, low, high, hint=f" {units} ({long_name}); give SI units")
        p[name] = arr.assign_attrs(long_name=long_name, units=units)
    e2 = 2.0 * ELEMENTARY_CHARGE
    E_C = e2**2 / p["C"]
    t0 = HBAR / E_C
    out = {
        "V0": p["Ic"] * HBAR / e2 / E_C,
        "damping": HBAR / (p["R"] * e2**2),
        "theta": BOLTZMANN * p["T"] / E_C,
        "time_unit": t0,
        "E_C": E_C,
        "Ic": p["Ic"],
    }
    out["D"] = out["damping"] * out["theta"]
    if sweep_rate is not None and h is not None:
        h = engine.as_parameter("h", h)
        engine.check_range("h", h, 0, low_open=True)
        out["dgamma"] = p["sweep_rate"] * t0 * h
    return out


# --------------------------------------------------------------------------- validation


def _check_step(model, V0, damping, gamma, h):
    """Refuse time steps that resolve the well's fastest motion with fewer than ~60 steps.

    The rate is the plasma frequency ``sqrt(V0 cos(phi0))`` (underdamped) or the
    relaxation rate ``V0 cos(phi0) / damping`` (overdamped) at the well bottom
    ``phi0 = arcsin(gamma)``; ``h * rate`` must not exceed `MAX_STEP_TIMES_RATE`. This
    is a stability bound for explicit Euler, not an accuracy guarantee: the
    discretization error of escape times is O(sqrt(h)) (see `gpuensembles.theory`).
    """
    curvature = V0 * np.sqrt(1.0 - gamma**2)
    rate = curvature / damping if model == "overdamped" else np.sqrt(curvature)
    product = h * rate
    worst = float(product.max())
    if worst > MAX_STEP_TIMES_RATE:
        kind = ("relaxation rate V0*cos(phi0)/damping" if model == "overdamped"
                else "plasma frequency sqrt(V0*cos(phi0))")
        raise ValueError(
            f"h is too large for {engine.at_worst(product, V0=V0, damping=damping, gamma=gamma, h=h)}: "
            f"h * {kind} = {worst:.3g} > {MAX_STEP_TIMES_RATE} "
            f"(fewer than {2 * math.pi / MAX_STEP_TIMES_RATE:.0f} steps per period); decrease h"
        )


_check_choice = engine.check_choice


def _common(model, dtype, passage, integrator, **values):
    """Validate the choices and the parameters shared by both run functions."""
    _check_choice("model", model, MODELS)
    _check_choice("dtype", dtype, DTYPES)
    _check_choice("passage", passage, PASSAGES)
    _check_choice("integrator", integrator, INTEGRATORS)
    if integrator == "baoab" and model == "overdamped":
        raise ValueError("integrator='baoab' is a scheme for the underdamped model; use 'euler' for model='overdamped'")
    params = {name: engine.as_parameter(name, value) for name, value in values.items()}
    for name in ("V0", "damping", "D", "h"):
        engine.check_range(name, params[name], 0, low_open=True)
    engine.check_representable(dtype, params)
    return params


# --------------------------------------------------------------------------- escape times


def escape_times(
    *,
    damping,
    gamma,
    D,
    h,
    realizations,
    V0=1.0,
    model: Model = "underdamped",
    passage: Passage = "barrier_top",
    integrator: Integrator = "euler",
    max_steps=10**9,
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Escape times of a phase particle from a well of the tilted washboard potential.

    Each realization starts at rest at the well bottom ``phi = arcsin(gamma)``. Any of
    ``V0, damping, gamma, D, h`` may be a 1-D array (it becomes a labeled dimension) or a
    1-D DataArray (its dimension is used, so several parameters can vary together). All
    quantities are in the normalized units of the equation (module docstring).

    Parameters
    ----------
    damping : float or array, > 0
        Normalized damping coefficient (``alpha``/``beta`` in seed 000).
    gamma : float or array, in [0, 1)
        Normalized bias current ``I/I_c``.
    D : float or array, > 0
        Noise intensity; ``D = damping * theta`` with ``theta = k_B T / E_C``.
    h : float or array, > 0
        Euler time step; ``h`` times the plasma frequency (underdamped) or the
        relaxation rate (overdamped) must be <= 0.1.
    realizations : int
        Number of independent realizations per parameter point.
    V0 : float or array, > 0
        Barrier scale ``E_J/E_C`` (default 1).
    model : {"underdamped", "overdamped"}
        Equation to integrate.
    passage : {"barrier_top", "next_well"}
        Where a realization has escaped: at the barrier top ``pi - arcsin(gamma)``
        (seed 000), or at the next well's bottom ``arcsin(gamma) + 2 pi``, past any
        recrossing of the barrier: the escape that Kramers-type rates describe.
    integrator : {"euler", "baoab"}
        Euler-Maruyama (seed 000) or, underdamped only, the BAOAB splitting: weak order
        2 without Euler's numerical heating (which lowers the effective damping by
        ``h omega_p^2 / damping``), so a ~10x larger ``h`` gives the same accuracy.
    max_steps : int
        Steps after which a realization stops without escaping (then ``escaped`` is
        False, ``steps == max_steps`` and ``escape_time`` is NaN).
    seed : int in [0, 2**32), optional
        Random seed; when omitted, the seed of the run in ``store`` if any, else drawn from
        the OS; always recorded in the attributes.
    dtype : {"float32", "float64"}
        Precision of the state. Time is always ``steps * h`` in float64 from an
        int64 step count.
    chunks : int or dict, optional
        Realizations per chunk (int) or ``{dim: size}``. Given, or with an active
        ``distributed.Client``, the result is dask-backed and lazy.
    store : str or path-like, optional
        Directory that keeps every finished chunk; the same call resumes from it after
        an interruption, bit-identically (:mod:`gpuensembles.store`). A store holding a
        different run is refused.
    backend : {"auto", "cuda", "cpu"}
        Where the kernels run; ``auto`` picks CUDA when a GPU is visible.
    progress : {"auto", True, False}
        Progress bar for eager runs (``auto``: when stderr is a terminal).

    Returns
    -------
    xarray.Dataset
        ``escape_time`` (float64), ``escaped`` (bool) and ``steps`` (int64) over
        ``(*swept parameters, realization)``; scalar parameters and provenance in attrs.

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.escape_times(damping=0.05, gamma=0.5, D=np.linspace(0.004, 0.012, 5),
    ...                      h=0.004, realizations=5120, seed=1)  # doctest: +SKIP
    >>> ds.fpt.mean()  # doctest: +SKIP
    """
    call = dict(V0=V0, damping=damping, gamma=gamma, D=D, h=h, realizations=realizations, model=model,
                passage=passage, integrator=integrator, max_steps=max_steps, seed=seed, dtype=dtype, chunks=chunks,
                store=store, backend=backend)
    params = _common(model, dtype, passage, integrator, V0=V0, damping=damping, gamma=gamma, D=D, h=h)
    # gamma < 0 is the mirror image (phi -> -phi) of |gamma|: same escape statistics
    engine.check_range("gamma", params["gamma"], 0, 1, high_open=True, hint="; for a negative bias use |gamma|")
    _check_step(model, params["V0"], params["damping"], params["gamma"], params["h"])
    plan = engine.make_plan(
        params,
        realizations=realizations,
        seed=seed,
        max_steps=max_steps,
        kernel=engine.KernelSpec(washboard.escape_kernel, (model, dtype, passage, integrator)),
        backend=backend,
        store=store,
    )
    # kept per value: the int64 steps, their absolute value, escaped and the float64 times
    raw = engine.execute(plan, chunks=chunks, progress=progress, store=store, bytes_per_value=25)
    signed = engine.label(plan, raw, PARAMETERS)
    steps, escaped = abs(signed), signed > 0
    times = xr.where(escaped, steps * dict(zip(washboard.ESCAPE_PARAMETERS, plan.params))["h"], np.nan)
    return xr.Dataset(
        {
            "escape_time": times.transpose(*plan.dims).assign_attrs(
                long_name="first-passage (escape) time", units="1", comment="steps * h; NaN where escaped is False"
            ),
            "escaped": escaped.assign_attrs(long_name="realization escaped within max_steps"),
            "steps": steps.assign_attrs(long_name="integration steps taken", units="1"),
        },
        attrs=_attrs(plan, raw, "escape_times", model, dtype, passage, integrator, call,
                     initial_condition="phi = arcsin(gamma), dphi/dt = 0 (well bottom, at rest)"),
    )


def _attrs(plan, raw, function, model, dtype, passage, integrator, call, **extra) -> dict:
    backend, device = engine.where_it_ran(plan, raw)
    attrs = io.provenance(
        model=f"josephson.{function} ({model})",
        integrator=_INTEGRATOR_TEXT[integrator],
        seed=plan.seed,
        backend=backend,
        device=device,
        dtype=dtype,
        history=io.history_line(function, call),
    )
    attrs.update({k: p.item() for k, p in plan.inputs.items() if p.ndim == 0 and k in PARAMETERS})
    attrs.update(dynamics=model, max_steps=np.int64(plan.max_steps), passage=passage,
                 passage_condition=_PASSAGE_TEXT[passage], **extra)
    return attrs


# --------------------------------------------------------------------------- switching currents


def switching_currents(
    *,
    h,
    realizations,
    damping=None,
    D=None,
    dgamma=None,
    V0=1.0,
    physical=None,
    gamma_start=0.0,
    gamma_end=1.0,
    start: Start = "rest",
    model: Model = "underdamped",
    passage: Passage = "barrier_top",
    integrator: Integrator = "euler",
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Switching currents of a Josephson junction under a linearly ramped bias.

    The bias of step ``k`` is ``gamma_k = gamma_start + k * dgamma`` (seed 000,
    Algorithm 3), computed in float64 from the int64 step count, so ramps of 1e-12 per
    step over 1e11 steps are exact. A realization switches at the first step where the
    phase passes the barrier top of the current bias (or the next well, see
    ``passage``); ``switching_current = gamma_start + steps * dgamma``.

    Give either the normalized ``V0, damping, D, dgamma`` or ``physical=dict(R=..., C=...,
    Ic=..., T=..., sweep_rate=...)`` in SI units (ohm, F, A, K, 1/s; the sweep is
    ``dI/dt = sweep_rate * Ic``), converted by :func:`normalize`; then the output also
    has ``switching_current_A`` in amperes. Any parameter may be a 1-D array (a dimension).

    Parameters
    ----------
    h : float or array, > 0
        Euler step; ``h`` times the plasma frequency at zero bias, ``sqrt(V0)``, must be <= 0.1.
    realizations : int
        Realizations per parameter point.
    damping, D : float or array
        As in :func:`escape_times`.
    dgamma : float or array, > 0
        Bias increment per step.
    V0 : float or array
        As in :func:`escape_times`.
    physical : dict, optional
        SI parameters instead of ``V0, damping, D, dgamma``.
    gamma_start : float, array or "auto"
        Bias where the ramp starts, in [0, 1). ``"auto"`` (warm start) starts each point
        where a ramp from 0 would have switched with probability < 1e-9 by the adiabatic
        Mel'nikov-Meshkov rate (:func:`gpuensembles.theory.warm_start_gamma`), from the
        thermal state of the well; it implies ``start="thermal"``.
    gamma_end : float
        The ramp stops at this bias (<= 1); realizations not switched by then have
        ``switched`` False and NaN current.
    start : {"rest", "thermal"}
        Initial state: at rest at the well bottom (seed 000), or drawn from the
        Boltzmann distribution of the well at ``gamma_start``.
    model : {"underdamped", "overdamped"}
        As in :func:`escape_times`.
    passage : {"barrier_top", "next_well"}
        As in :func:`escape_times`.
    integrator : {"euler", "baoab"}
        As in :func:`escape_times`.
    seed : int in [0, 2**32), optional
        As in :func:`escape_times`.
    dtype : {"float32", "float64"}
        As in :func:`escape_times`.
    chunks : int or dict, optional
        As in :func:`escape_times`.
    store : str or path-like, optional
        As in :func:`escape_times`.
    backend : {"auto", "cuda", "cpu"}
        As in :func:`escape_times`.
    progress : {"auto", True, False}
        As in :func:`escape_times`.

    Returns
    -------
    xarray.Dataset
        ``switching_current`` (normalized, float64), ``switched`` (bool), ``steps``
        (int64), and ``switching_current_A`` with ``physical=``.
    """
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, start=start, model=model, passage=passage,
                integrator=integrator, seed=seed, dtype=dtype, chunks=chunks, store=store, backend=backend)
    _check_choice("start", start, STARTS)
    if physical is not None:
        if not isinstance(physical, dict):
            raise TypeError(f"physical must be a dict with the keys {sorted(PHYSICAL)}, got {physical!r}")
        if any(x is not None for x in (damping, D, dgamma)) or not (isinstance(V0, (int, float)) and V0 == 1.0):
            raise ValueError("give either physical=dict(R, C, Ic, T, sweep_rate) or V0, damping, D, dgamma, not both")
        if set(physical) != set(PHYSICAL):
            raise ValueError(f"physical must be a dict with exactly the keys {sorted(PHYSICAL)}, got {physical!r}")
        units = normalize(**physical, h=h)
        V0, damping, D, dgamma = units["V0"], units["damping"], units["D"], units["dgamma"]
    elif any(x is None for x in (damping, D, dgamma)):
        raise ValueError("damping, D and dgamma are required (or physical=dict(R, C, Ic, T, sweep_rate))")
    params = _common(model, dtype, passage, integrator, V0=V0, damping=damping, D=D, h=h, dgamma=dgamma)
    engine.check_range("dgamma", params["dgamma"], 0, low_open=True, hint=" (the ramp must increase the bias)")
    gamma_end = engine.check_real("gamma_end", gamma_end)
    if not 0 < gamma_end <= 1:
        raise ValueError(f"gamma_end must be a number in (0, 1], got {gamma_end!r}")
    _check_step(model, params["V0"], params["damping"], xr.zeros_like(params["V0"]), params["h"])
    if isinstance(gamma_start, str):
        if gamma_start != "auto":
            raise ValueError(f"gamma_start must be a number in [0, 1) or 'auto', got {gamma_start!r}")
        start, gamma_start = "thermal", _warm_start(model, params)
    params["gamma_start"] = engine.as_parameter("gamma_start", gamma_start)
    engine.check_range("gamma_start", params["gamma_start"], 0, gamma_end, high_open=True)
    limit = np.floor((gamma_end - params["gamma_start"]) / params["dgamma"])
    if float(limit.max()) >= 2**53:
        raise ValueError(f"the ramp needs {float(limit.max()):.3g} steps, more than 2**53; increase dgamma")
    params.update(warm=engine.as_parameter("warm", float(start == "thermal")), limit=limit.rename("limit"))
    plan = engine.make_plan(
        {k: params[k] for k in washboard.SWITCHING_PARAMETERS},
        realizations=realizations,
        seed=seed,
        max_steps=max(1, int(limit.max())),
        kernel=engine.KernelSpec(washboard.switching_kernel, (model, dtype, passage, integrator)),
        backend=backend,
        store=store,
    )
    raw = engine.execute(plan, chunks=chunks, progress=progress, store=store,
                         bytes_per_value=25 if physical is None else 33)
    signed = engine.label(plan, raw, PARAMETERS)
    steps, switched = abs(signed), signed > 0
    p = dict(zip(washboard.SWITCHING_PARAMETERS, plan.params))
    current = xr.where(switched, p["gamma_start"] + steps * p["dgamma"], np.nan).transpose(*plan.dims)
    data = {
        "switching_current": current.assign_attrs(long_name="switching current I_sw / I_c", units="1",
                                                  comment="gamma_start + steps * dgamma; NaN where switched is False"),
        "switched": switched.assign_attrs(long_name=f"switched before the bias reached gamma_end = {gamma_end}"),
        "steps": steps.assign_attrs(long_name="integration steps taken", units="1"),
    }
    extra = {}
    if physical is not None:
        data["switching_current_A"] = (current * units["Ic"]).transpose(*plan.dims).assign_attrs(
            long_name="switching current", units="A")
        extra = {f"physical_{k}": float(v) for k, v in physical.items() if np.ndim(v) == 0}
        extra.update({f"{k}_normalized": float(units[k]) for k in ("theta", "time_unit") if units[k].ndim == 0})
    return xr.Dataset(data, attrs=_attrs(
        plan, raw, "switching_currents", model, dtype, passage, integrator, call,
        gamma_end=float(gamma_end), start=start,
        ramp="gamma_k = gamma_start + k * dgamma (float64 from an int64 step count)",
        initial_condition=("thermal (Boltzmann) state of the well at gamma_start" if start == "thermal"
                           else "phi = arcsin(gamma_start), dphi/dt = 0 (well bottom, at rest)"),
        **extra,
    ))


def _warm_start(model, params) -> xr.DataArray:
    """Per-point warm-start bias (see `gpuensembles.theory.warm_start_gamma`)."""
    grid = xr.broadcast(*(params[k] for k in ("V0", "damping", "D", "h", "dgamma")))

    def one(V0, damping, D, h, dgamma):
        return theory.warm_start_gamma(gamma_dot=dgamma / h, V0=V0, damping=damping, theta=D / damping, model=model,
                                       form="melnikov" if model == "underdamped" else "kramers")

    values = np.vectorize(one)(*(g.values for g in grid))
    return xr.DataArray(values, dims=grid[0].dims, coords=grid[0].coords)
