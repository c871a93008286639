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
from . import switching_rates, theory

Model = Literal["underdamped", "overdamped"]
Dtype = Literal["float32", "float64"]
Passage = Literal["barrier_top", "next_well"]
Integrator = Literal["euler", "baoab"]
Start = Literal["rest", "thermal"]
Method = Literal["direct", "rates"]
MODELS, DTYPES, STARTS, METHODS = get_args(Model), get_args(Dtype), get_args(Start), get_args(Method)
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
    method: Method = "direct",
    rel_error=0.03,
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
    method : {"direct", "rates"}
        ``direct``: simulate every ramp. ``rates``: measure the escape rate
        ``Gamma(gamma)`` on an adaptive grid of biases (``escape_rates``, at most 64
        points in at most 4 batches) and draw the switching currents from the adiabatic
        Fulton-Dunkleberger distribution: any sweep rate, down to the experiments' 1/s,
        for the cost of one rate curve (:mod:`.switching_rates`; docs page "Switching
        histograms at real sweep rates"). Then only ``dgamma`` (or ``sweep_rate``) may be
        an array, ``h`` and ``integrator`` are those of the rate simulations, escape is
        counted at the next well (``passage`` is not used) from the thermal state of the
        well (``start`` is not used: the distribution is that of a ramp slow enough for
        the well to stay thermal), ``store`` is refused, ``chunks`` chunks the drawn
        samples, and a sweep too fast for the adiabatic approximation (escape rate above
        0.1 of the well's relaxation rate where switching happens; warning above 0.01)
        is refused before any simulation. The result adds ``cdf`` and ``cdf_stderr``
        over ``bias``, and the rate curve ``rate``, ``rate_stderr``, ``rate_steps`` over
        ``rate_gamma``.
    rel_error : float, in (0, 1)
        ``method="rates"`` only: the relative standard error each escape rate is
        measured to (``escape_rates``' ``rel_error``); the cost grows as its inverse
        square, and ``cdf_stderr`` in proportion to it.
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
    _check_choice("method", method, METHODS)
    if method == "rates":
        return _switching_from_rates(
            h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
            gamma_start=gamma_start, gamma_end=gamma_end, model=model, integrator=integrator, rel_error=rel_error,
            seed=seed, dtype=dtype, chunks=chunks, store=store, backend=backend, progress=progress)
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, start=start, model=model, passage=passage,
                integrator=integrator, seed=seed, dtype=dtype, chunks=chunks, store=store, backend=backend)
    _check_choice("start", start, STARTS)
    V0, damping, D, dgamma, units = _junction_units(physical, h, V0, damping, D, dgamma)
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


# --------------------------------------------------------------------------- switching currents from rates


def _measured_rates(*, V0, damping, D, h, model, integrator, rel_error, seed, dtype, backend, progress):
    """The rate callable of ``method="rates"``: a closure over ``escape_rates`` (1/MFPT to the next well).

    Each call (one batch of biases) runs with its own seed, derived from ``seed`` and the
    call's number, so the rate errors of different passes are independent. What the
    simulations ran on is kept in the callable's ``info`` dict.
    """
    info = {"calls": 0}

    def rates(gamma):
        """``(rate, rate_stderr, steps)`` at the biases ``gamma`` from simulations."""
        from .rates import escape_rates  # the rate module of the package (issue 18, part 1)

        batch_seed = int(np.random.SeedSequence([seed, info["calls"]]).generate_state(1)[0])
        ds = escape_rates(gamma=np.asarray(gamma, dtype=float), h=h, damping=damping, D=D, V0=V0, model=model,
                          integrator=integrator, rel_error=rel_error, seed=batch_seed, dtype=dtype, backend=backend,
                          progress=progress)
        info["calls"] += 1
        info.update(backend=ds.attrs.get("backend", backend), device=ds.attrs.get("device", "unknown"))
        return (np.asarray(ds["rate"].values, dtype=float), np.asarray(ds["rate_stderr"].values, dtype=float),
                np.asarray(ds["steps"].values, dtype=np.int64))

    rates.info = info
    return rates


def _theory_rate(model, V0, damping, theta):
    """The vectorized adiabatic rate formula: Mel'nikov-Meshkov (underdamped), Kramers (overdamped)."""
    form = "melnikov" if model == "underdamped" else "kramers"
    one = np.vectorize(lambda g: theory.escape_rate(g, V0=V0, damping=damping, theta=theta, form=form, model=model))
    return lambda gamma: one(np.asarray(gamma, dtype=float)) if np.size(gamma) else np.empty(0)


def _single(name, value, why):
    """Refuse a swept value of ``name`` for ``method='rates'`` (one junction per rate curve)."""
    if np.ndim(value.values if isinstance(value, xr.DataArray) else value) != 0:
        raise ValueError(f"{name} must be a single number with method='rates' ({why}); "
                         f"only dgamma or sweep_rate may be an array")


def _junction_units(physical, h, V0, damping, D, dgamma, check=None):
    """``(V0, damping, D, dgamma, units)`` of a switching run: as given (``units`` None), or from
    ``physical=`` (SI units; ``units`` is what :func:`normalize` returns).

    ``check(physical)`` runs on a well-formed dictionary before it is converted. Raises
    ``TypeError``/``ValueError`` naming ``physical`` for a malformed dictionary or one given
    beside the normalized parameters, and ``ValueError`` when neither is complete.
    """
    if physical is None:
        if any(x is None for x in (damping, D, dgamma)):
            raise ValueError("damping, D and dgamma are required (or physical=dict(R, C, Ic, T, sweep_rate))")
        return V0, damping, D, dgamma, None
    if not isinstance(physical, dict):
        raise TypeError(f"physical must be a dict with the keys {sorted(PHYSICAL)}, got {physical!r}")
    if any(x is not None for x in (damping, D, dgamma)) or not (isinstance(V0, (int, float)) and V0 == 1.0):
        raise ValueError("give either physical=dict(R, C, Ic, T, sweep_rate) or V0, damping, D, dgamma, not both")
    if set(physical) != set(PHYSICAL):
        raise ValueError(f"physical must be a dict with exactly the keys {sorted(PHYSICAL)}, got {physical!r}")
    if check is not None:
        check(physical)
    units = normalize(**physical, h=h)
    return units["V0"], units["damping"], units["D"], units["dgamma"], units


def _switching_from_rates(*, h, realizations, damping, D, dgamma, V0, physical, gamma_start, gamma_end, model,
                          integrator, rel_error, seed, dtype, chunks, store, backend, progress) -> xr.Dataset:
    """``switching_currents(method="rates")``: validation, then :mod:`.switching_rates`, then the Dataset."""
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, model=model, integrator=integrator, method="rates",
                rel_error=rel_error, seed=seed, dtype=dtype, chunks=chunks, backend=backend)
    one_curve = "one rate curve serves one junction"
    if store is not None:
        raise ValueError("store is not used with method='rates' (the rate simulations are few and short; "
                         "leave store=None)")
    engine.check_choice("backend", backend, ("auto", "cuda", "cpu"))
    realizations = engine.check_count("realizations", realizations)
    seed = engine.check_seed(seed)
    rel_error = engine.check_real("rel_error", rel_error)
    if not 0 < rel_error < 1:
        raise ValueError(f"rel_error must lie in (0, 1), got {rel_error!r}")

    def one_junction(physical):
        for name in ("R", "C", "Ic", "T"):
            _single(name, engine.as_parameter(name, physical[name]), one_curve)
        _single("h", engine.as_parameter("h", h), one_curve)

    V0, damping, D, dgamma, units = _junction_units(physical, h, V0, damping, D, dgamma, check=one_junction)
    params = _common(model, dtype, "next_well", integrator, V0=V0, damping=damping, D=D, h=h, dgamma=dgamma)
    for name in ("V0", "damping", "D", "h"):
        _single(name, params[name], one_curve)
    engine.check_range("dgamma", params["dgamma"], 0, low_open=True, hint=" (the ramp must increase the bias)")
    gamma_end = engine.check_real("gamma_end", gamma_end)
    if not 0 < gamma_end <= 1:
        raise ValueError(f"gamma_end must be a number in (0, 1], got {gamma_end!r}")
    _check_step(model, params["V0"], params["damping"], xr.zeros_like(params["V0"]), params["h"])
    V0, damping, D, h = (float(params[k]) for k in ("V0", "damping", "D", "h"))
    theta = D / damping
    sweep_name = "sweep_rate" if physical is not None else "dgamma"
    dgammas = params["dgamma"]
    gamma_dot = np.atleast_1d(dgammas.values / h)
    sweep_values = np.atleast_1d(dgammas.coords["sweep_rate"].values if "sweep_rate" in dgammas.coords
                                 else physical["sweep_rate"] if physical is not None else dgammas.values)
    rate_formula = _theory_rate(model, V0, damping, theta)
    if isinstance(gamma_start, str):
        if gamma_start != "auto":
            raise ValueError(f"gamma_start must be a number in [0, 1) or 'auto', got {gamma_start!r}")
        # the warm-start criterion of the direct method: P < 1e-9 from 0 at the slowest sweep
        from_zero = switching_rates.theory_curve(rate_formula, gamma_start=0.0, gamma_end=gamma_end, V0=V0,
                                                 theta=theta)
        low = switching_rates.quantile(1e-9, from_zero, float(gamma_dot.min()), gamma_end=gamma_end)
        gamma_start = float(np.floor(min(float(np.nan_to_num(low, nan=0.0)), 0.999) * 1e6) / 1e6)
    gamma_start = engine.check_real("gamma_start", gamma_start)
    if not 0 <= gamma_start < gamma_end:
        raise ValueError(f"gamma_start must lie in [0, gamma_end = {gamma_end}), got {gamma_start!r}")
    limit = np.floor((gamma_end - gamma_start) / dgammas)
    if float(limit.max()) >= 2**53:
        raise ValueError(f"the ramp needs {float(limit.max()):.3g} steps, more than 2**53; increase dgamma")

    def relaxation(g):
        return switching_rates.relaxation_rate(g, V0=V0, damping=damping, model=model)

    ends = dict(gamma_start=gamma_start, gamma_end=gamma_end)
    expected = switching_rates.theory_curve(rate_formula, V0=V0, theta=theta, **ends)
    switching_rates.check_adiabatic(switching_rates.adiabaticity(expected, gamma_dot, relaxation, **ends),
                                    sweep_values, sweep_name, "Mel'nikov-Meshkov rate" if model == "underdamped"
                                    else "Kramers rate", stacklevel=3)
    rates = _measured_rates(V0=V0, damping=damping, D=D, h=h, model=model, integrator=integrator,
                            rel_error=rel_error, seed=seed, dtype=dtype, backend=backend, progress=progress)
    curve = switching_rates.adaptive_curve(rates, gamma_dot=gamma_dot, V0=V0, theta=theta, theory=expected, **ends)
    epsilon = switching_rates.adiabaticity(curve, gamma_dot, relaxation, **ends)
    switching_rates.check_adiabatic(epsilon, sweep_values, sweep_name, "measured rates", stacklevel=3)

    sweep_dims = dgammas.dims
    current = _drawn(curve, gamma_dot, sweep_dims, realizations, seed, chunks, ends)
    coords = {k: v.variable for k, v in dgammas.coords.items()}
    if sweep_dims:
        coords["dgamma"] = xr.Variable(sweep_dims, dgammas.values, PARAMETERS["dgamma"])
    dims = (*sweep_dims, "realization")
    current = xr.DataArray(current, dims=dims, coords={**coords, "realization": xr.Variable(
        "realization", np.arange(realizations), io.REALIZATION_ATTRS)})
    switched = current.notnull()
    steps = xr.where(switched, np.ceil((current - gamma_start) / dgammas), limit).astype(np.int64)
    low = min(float(switching_rates.quantile(switching_rates.TAIL, curve, r, **ends)) for r in gamma_dot)
    high = [float(switching_rates.quantile(1 - switching_rates.TAIL, curve, r, **ends)) for r in gamma_dot]
    high = max(v if np.isfinite(v) else gamma_end for v in high)
    bias = np.linspace(low, max(high, low + 1e-12), 1001)
    cdf, cdf_stderr = switching_rates.fd_cdf(bias, curve, gamma_dot, **ends)
    bias_coord = {"bias": xr.Variable("bias", bias, {"long_name": "bias I / I_c at which the CDF is given",
                                                     "units": "1"})}
    grid = {**{k: v for k, v in coords.items()}, **bias_coord}
    shape = tuple(dgammas.shape) + (bias.size,)
    rate_coord = {"rate_gamma": xr.Variable("rate_gamma", curve.gamma, {
        "long_name": "bias I / I_c of the measured escape rates", "units": "1"})}
    data = {
        "switching_current": current.assign_attrs(
            long_name="switching current I_sw / I_c", units="1",
            comment="drawn from the Fulton-Dunkleberger CDF (cdf) by inverse transform; NaN where switched is False"),
        "switched": switched.assign_attrs(long_name=f"switched before the bias reached gamma_end = {gamma_end}"),
        "steps": steps.assign_attrs(long_name="ramp steps until the bias reaches the switching current", units="1",
                                    comment="ceil((switching_current - gamma_start) / dgamma); no simulation "
                                            "took them (rate_steps are the simulated steps)"),
        "cdf": xr.DataArray(cdf.reshape(shape), dims=(*sweep_dims, "bias"), coords=grid).assign_attrs(
            long_name="switching probability P(I_sw <= bias) (Fulton-Dunkleberger with the measured rates)",
            units="1"),
        "cdf_stderr": xr.DataArray(cdf_stderr.reshape(shape), dims=(*sweep_dims, "bias"), coords=grid).assign_attrs(
            long_name="standard error of cdf from the rates' standard errors (delta method)", units="1"),
        "rate": xr.DataArray(curve.rate, dims="rate_gamma", coords=rate_coord).assign_attrs(
            long_name="escape rate (1 / mean first-passage time to the next well)", units="1"),
        "rate_stderr": xr.DataArray(curve.rate_stderr, dims="rate_gamma", coords=rate_coord).assign_attrs(
            long_name="standard error of the escape rate", units="1"),
        "rate_steps": xr.DataArray(curve.steps, dims="rate_gamma", coords=rate_coord).assign_attrs(
            long_name="integration steps simulated for the escape rate", units="1"),
        "adiabaticity": xr.DataArray(epsilon.reshape(dgammas.shape), dims=sweep_dims, coords=coords).assign_attrs(
            long_name="largest escape rate over the well's relaxation rate where 1e-3 < cdf < 1 - 1e-3", units="1",
            comment=f"the adiabatic approximation is refused above {switching_rates.MAX_EPSILON}"),
    }
    extra = {}
    if physical is not None:
        data["switching_current_A"] = (current * units["Ic"]).transpose(*dims).assign_attrs(
            long_name="switching current", units="A")
        extra = {f"physical_{k}": float(v) for k, v in physical.items() if np.ndim(v) == 0}
        extra.update({f"{k}_normalized": float(units[k]) for k in ("theta", "time_unit")})
    ran = rates.info if hasattr(rates, "info") and "backend" in rates.info else {}
    attrs = io.provenance(
        model=f"josephson.switching_currents ({model})",
        integrator=_INTEGRATOR_TEXT[integrator],
        seed=seed,
        backend=ran.get("backend", backend),
        device=ran.get("device", "none (rates from a formula)" if not ran else "unknown"),
        dtype=dtype,
        history=io.history_line("switching_currents", call),
    )
    attrs.update(V0=V0, damping=damping, D=D, h=h, **({} if sweep_dims else {"dgamma": float(dgammas)}))
    attrs.update(
        gamma_start=gamma_start, gamma_end=gamma_end, dynamics=model, passage="next_well",
        passage_condition=_PASSAGE_TEXT["next_well"], start="thermal", method="rates",
        method_description=("adiabatic Fulton-Dunkleberger distribution with escape rates measured on "
                            f"{curve.gamma.size} biases in {curve.passes} batches (ln rate interpolated linearly); "
                            "samples by inverse transform of Philox uniforms (key seed, stream = sweep point; "
                            "counter realization)"),
        ramp="gamma(t) = gamma_start + (dgamma / h) t",
        initial_condition="thermal (Boltzmann) state of the well at gamma_start", **extra)
    return xr.Dataset(data, attrs=attrs)


def _drawn(curve, gamma_dot, sweep_dims, realizations, seed, chunks, ends):
    """The switching currents, shape ``(*sweep, realizations)``: numpy, or dask with ``chunks``.

    Sample ``r`` of sweep point ``i`` uses Philox stream ``i``, counter ``r``: the numbers do
    not depend on the chunking.
    """
    n = gamma_dot.size

    def block(lo_point, hi_point, lo, hi):
        return np.stack([switching_rates.draw(curve, gamma_dot[i], seed=seed, stream=i, first=lo, count=hi - lo,
                                              **ends) for i in range(lo_point, hi_point)])

    shape = ((n,) if sweep_dims else ()) + (realizations,)
    if chunks is None:
        return block(0, n, 0, realizations).reshape(shape)
    if not isinstance(chunks, dict):
        chunks = {"realization": engine.check_count("chunks", chunks)}
    dims = (*sweep_dims, "realization")
    unknown = set(chunks) - set(dims)
    if unknown:
        raise ValueError(f"chunks names unknown dimensions {sorted(unknown, key=str)}; the output has {list(dims)}")
    sizes = {d: engine.check_count(f"chunks[{d!r}]", c) for d, c in chunks.items()}
    da = engine.dask_array()

    def one(block_info=None):
        location = block_info[None]["array-location"]
        lo, hi = location[-1]
        a, b = location[0] if sweep_dims else (0, 1)
        out = block(a, b, lo, hi)
        return out if sweep_dims else out[0]

    dask_chunks = tuple(min(sizes.get(d, s), s) for d, s in zip(dims, shape))
    return da.map_blocks(one, chunks=da.core.normalize_chunks(dask_chunks, shape), dtype=float,
                         meta=np.empty((0,) * len(shape)))
