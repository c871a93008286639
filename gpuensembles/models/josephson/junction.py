"""What every Josephson run shares: the equation's units, parameters, validation and attributes.

Normalized RCSJ (washboard) Langevin equation, Pierro et al. 2018 Eq. (9) with the noise of its
Algorithm 1::

    underdamped:  phi'' + damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    overdamped:           damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    <xi(t) xi(t')> = 2 D delta(t - t'),   D = damping * theta

The noise enters *outside* ``V0`` (as in the seed's Algorithm 1, not its Eq. 9), which
is what satisfies fluctuation-dissipation with temperature ``theta = D / damping`` for
the potential ``U(phi) = -V0 (cos(phi) + gamma phi)``.

Units (Pierro et al. 2018, Sect. II.1): energies in ``E_C = (2e)^2 / C``, time in ``hbar / E_C``,
currents in ``I_c``; see :func:`normalize` for the conversion from SI. The junction's
quality factor is ``Q = omega_p R C = sqrt(V0) / damping``.

The run functions (:mod:`.escape`, :mod:`.switching`, :mod:`.switching_from_rates`,
:mod:`.rates`, :mod:`.retrapping`) import this module; none of them imports another
except where one method is built on another (``switching_from_rates`` on ``rates``).
"""

import math
import warnings
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import engine, estimate, io
from . import physics as washboard

Model = Literal["underdamped", "overdamped"]
Dtype = Literal["float32", "float64"]
Passage = Literal["barrier_top", "next_well"]
Integrator = Literal["euler", "baoab"]
Start = Literal["rest", "thermal"]
Method = Literal["direct", "rates"]
Criterion = Literal["escape", "voltage"]
MODELS, DTYPES, STARTS, METHODS = get_args(Model), get_args(Dtype), get_args(Start), get_args(Method)
CRITERIA = get_args(Criterion)
#: Default ``running_wells``: the wells a running phase advances before it counts as a voltage.
RUNNING_WELLS = 100
#: Largest ``running_wells`` accepted.
MAX_RUNNING_WELLS = 10**7
PASSAGES, INTEGRATORS = washboard.PASSAGES, washboard.INTEGRATORS
assert PASSAGES == get_args(Passage) and INTEGRATORS == get_args(Integrator)

INTEGRATOR_TEXT = {
    "euler": "Euler-Maruyama, noise sqrt(2 D h) added to the velocity (Pierro et al. 2018, Algorithm 1)",
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

#: What the normalized time of every time variable is (``units: "1"`` beside it; CF allows the attribute).
TIME_UNIT = "hbar / E_C with E_C = (2e)^2 / C: the time unit of the normalized washboard equation"

#: Largest allowed ``h`` times the fastest deterministic rate of the well (see `_check_step`).
MAX_STEP_TIMES_RATE = 0.1

PASSAGE_TEXT = {
    "barrier_top": "first step with phi > pi - arcsin(gamma) (barrier top; Pierro et al. 2018)",
    "next_well": ("first step with phi > arcsin(gamma) + 2 pi "
                  "(bottom of the next well: escape as rate theory counts it)"),
}


# --------------------------------------------------------------------------- physical units


def normalize(*, R, C, Ic, T, sweep_rate=None, h=None) -> dict:
    """Convert SI junction parameters into the normalized units of the model.

    Conventions (Pierro et al. 2018, Sect. II.1): ``E_J = Ic hbar / 2e``, ``E_C = (2e)^2 / C``,
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


def check_step(model, V0, damping, gamma, h):
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


def validated(model, dtype, passage, integrator, **values):
    """Validate the choices and the parameters shared by both run functions."""
    engine.check_choice("model", model, MODELS)
    engine.check_choice("dtype", dtype, DTYPES)
    engine.check_choice("passage", passage, PASSAGES)
    engine.check_choice("integrator", integrator, INTEGRATORS)
    if integrator == "baoab" and model == "overdamped":
        raise ValueError("integrator='baoab' is a scheme for the underdamped model; use 'euler' for model='overdamped'")
    params = {name: engine.as_parameter(name, value) for name, value in values.items()}
    for name in ("V0", "damping", "D", "h"):
        engine.check_range(name, params[name], 0, low_open=True)
    engine.check_representable(dtype, params)
    return params


def execute(plan, work, *, chunks, progress, store, bytes_per_value) -> np.ndarray:
    """:func:`gpuensembles.core.engine.execute` with ``work`` announced first and its throughput recorded.

    The kernels' values are signed step counts, so an eager run's work is ``sum |values|``,
    less the share its store already held.
    """
    with estimate.timed(work, plan.backend, progress) as clock:
        raw = engine.execute(plan, chunks=chunks, progress=progress, store=store, bytes_per_value=bytes_per_value)
        if isinstance(raw, np.ndarray):
            clock.ran(raw, float(np.abs(raw).sum()) * (1.0 - getattr(raw, "stored_items", 0) / max(raw.size, 1)))
    return raw


def attributes(plan, raw, function, model, dtype, passage, integrator, call, **extra) -> dict:
    """The global attributes of a run: provenance, the scalar parameters, the dynamics and passage, ``extra``.

    ``passage`` None (a run that counts no passage, such as retrapping) leaves the passage out.
    """
    backend, device = engine.where_it_ran(plan, raw)
    attrs = io.provenance(
        model=f"josephson.{function} ({model})",
        integrator=INTEGRATOR_TEXT[integrator],
        seed=plan.seed,
        backend=backend,
        device=device,
        dtype=dtype,
        history=io.history_line(function, call),
    )
    attrs.update({k: p.item() for k, p in plan.inputs.items() if p.ndim == 0 and k in PARAMETERS})
    attrs.update(engine.reuse_attrs(raw))
    attrs.update(dynamics=model, max_steps=np.int64(plan.max_steps), **extra)
    if passage is not None:
        attrs.update(passage=passage, passage_condition=PASSAGE_TEXT[passage])
    return attrs


# --------------------------------------------------------------------------- switching currents


def ramp(physical, h, V0, damping, D, dgamma, *, model, dtype, passage, integrator, gamma_end, wells,
         check=None) -> tuple:
    """``(params, units, gamma_end)`` of a rising ramp: its junction (either form) and bias, validated.

    The checks of :func:`resolve_units` and :func:`validated`, a positive ``dgamma``, a
    ``gamma_end`` in (0, 1], the time step at zero bias (:func:`check_step`), and under the
    voltage criterion (``wells`` given) the warning of :func:`warn_euler_heating`.
    """
    V0, damping, D, dgamma, units = resolve_units(physical, h, V0, damping, D, dgamma, check=check)
    params = validated(model, dtype, passage, integrator, V0=V0, damping=damping, D=D, h=h, dgamma=dgamma)
    engine.check_range("dgamma", params["dgamma"], 0, low_open=True, hint=" (the ramp must increase the bias)")
    gamma_end = engine.check_real("gamma_end", gamma_end)
    if not 0 < gamma_end <= 1:
        raise ValueError(f"gamma_end must be a number in (0, 1], got {gamma_end!r}")
    check_step(model, params["V0"], params["damping"], xr.zeros_like(params["V0"]), params["h"])
    if wells is not None:
        warn_euler_heating(integrator, params["V0"], params["damping"], params["h"],
                           "where escapes are retrapped and the running state is stable", stacklevel=3)
    return params, units, gamma_end


def single_value(name, value, why):
    """Refuse a swept value of ``name`` for ``method='rates'`` (one junction per rate curve)."""
    if np.ndim(value.values if isinstance(value, xr.DataArray) else value) != 0:
        raise ValueError(f"{name} must be a single number with method='rates' ({why}); "
                         f"only dgamma or sweep_rate may be an array")


def resolve_units(physical, h, V0, damping, D, dgamma, check=None):
    """The normalized ``(V0, damping, D, dgamma, units)`` of a run given in either form.

    As given (``units`` None), or from
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


def running_wells(criterion, running_wells, model) -> int | None:
    """The running-state window of a run: ``None`` for ``criterion="escape"``, else the number of wells.

    Raises
    ------
    ValueError
        For an unknown criterion, ``running_wells`` given with ``criterion="escape"``, a
        window outside ``[1, MAX_RUNNING_WELLS]``, or ``criterion="voltage"`` with the
        overdamped model (which has no running state to switch to).
    """
    engine.check_choice("criterion", criterion, CRITERIA)
    if criterion == "escape":
        if running_wells is not None:
            raise ValueError("running_wells applies to criterion='voltage' only; leave it out with "
                             "criterion='escape', which counts the first escape")
        return None
    if model == "overdamped":
        raise ValueError("criterion='voltage' needs model='underdamped': an overdamped junction has no running "
                         "state to switch to (no inertia; its retrapping current is I_c)")
    if running_wells is None:
        return RUNNING_WELLS
    return engine.check_count("running_wells", running_wells, maximum=MAX_RUNNING_WELLS)


#: What each criterion counts, for the attributes.
CRITERION_TEXT = {
    "escape": "first escape over the barrier (see passage)",
    "voltage": ("the running state: {wells} wells advanced (net barrier tops crossed) without relaxing into a well "
                "(energy above the well's bottom <= min(theta, 0.3 Delta U)); dated to the escape that started the run "
                "(its last crossing out of the well of the last relaxation)"),
}


def criterion_attrs(wells) -> dict:
    """Attributes naming the switching criterion (``wells`` None: escape)."""
    if wells is None:
        return {"criterion": "escape", "criterion_definition": CRITERION_TEXT["escape"]}
    return {"criterion": "voltage", "running_wells": np.int64(wells),
            "criterion_definition": CRITERION_TEXT["voltage"].format(wells=wells)}


def warn_if_retrapped(below, retrapping, Q, source: str, stacklevel: int = 2):
    """Warn when most of an escape-criterion switching distribution lies below the retrapping current.

    Parameters
    ----------
    below : DataArray
        Probability of switching below the retrapping current, per parameter point.
    retrapping, Q : DataArray
        Noise-free retrapping current ``I_r / I_c`` and quality factor, per point.
    source : str
        Where ``below`` comes from (named in the message).
    stacklevel : int
        The frame the warning points at.
    """
    below, retrapping, Q = xr.broadcast(xr.DataArray(below), xr.DataArray(retrapping), xr.DataArray(Q))
    worst = int(np.nanargmax(below.values)) if np.any(np.isfinite(below.values)) else None
    if worst is None or below.values.flat[worst] <= 0.5:
        return
    where = "".join(f", {d} = {float(below[d].values.flat[np.unravel_index(worst, below.shape)[i]]):.4g}"
                    for i, d in enumerate(below.dims) if d in below.coords)
    warnings.warn(
        f"criterion='escape': {below.values.flat[worst]:.0%} of the switching ({source}{where}) lies below the "
        f"retrapping current I_r / I_c = {retrapping.values.flat[worst]:.4g} of this junction (Q = "
        f"{Q.values.flat[worst]:.3g}), where the noise-free dynamics catch an escaped phase again and no voltage "
        f"appears; criterion='voltage' counts switching where the junction runs, as a voltage detector does",
        RuntimeWarning, stacklevel=stacklevel + 1)


#: Relative damping error of Euler's numerical heating above which a run of the running state warns.
EULER_HEATING_WARNING = 0.01


def warn_euler_heating(integrator, V0, damping, h, what: str, stacklevel: int = 2):
    """Warn when Euler's numerical heating changes the damping that retrapping depends on.

    Explicit Euler lowers the energy decay rate of the well by ``h omega_p^2`` (its energy
    grows by ``h^2 omega^2`` a step), a relative error of ``h V0 / damping^2`` at zero bias.
    The escape rate depends on the damping weakly; the retrapping current and the run
    probability are set by it (``I_r ~ 4 / (pi Q)``). BAOAB has no such error.

    Parameters
    ----------
    integrator : str
        The integrator of the run.
    V0, damping, h : DataArray or float
        Parameters of the run (any may be swept; the worst point is named).
    what : str
        What the error moves, for the message.
    stacklevel : int
        The frame the warning points at.
    """
    if integrator != "euler":
        return
    error = float(np.max(np.asarray(h * V0 / damping**2)))
    if error > EULER_HEATING_WARNING:
        warnings.warn(f"integrator='euler' heats the junction numerically: its damping is {error:.1%} too small "
                      f"(h V0 / damping^2), which moves {what}; integrator='baoab' has no such error",
                      RuntimeWarning, stacklevel=stacklevel + 1)
