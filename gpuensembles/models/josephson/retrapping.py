"""Retrapping currents: the bias ramped down from the running state until the phase is caught in a well."""

import numpy as np
import xarray as xr

from ...core import engine
from ...core.backend import Backend, Progress
from . import estimates, junction, theory
from . import running_physics as running
from .junction import Dtype, Integrator, Model


def retrapping_currents(
    *,
    h,
    realizations,
    damping=None,
    D=None,
    dgamma=None,
    V0=1.0,
    physical=None,
    gamma_start=1.0,
    gamma_end=0.0,
    model: Model = "underdamped",
    integrator: Integrator = "baoab",
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Retrapping currents of a Josephson junction under a bias ramped down from the running state.

    Each realization starts in the running state at ``gamma_start`` (at a well's bottom,
    faster than the running orbit: :func:`.running_physics.retrapping_kernel`); the bias of step ``k`` is
    ``gamma_start - k * dgamma`` (float64 from the int64 step count). The junction is
    retrapped when its phase relaxes into a well (energy above the well's bottom at most
    ``min(theta, 0.3 Delta U)``: the definition of :mod:`.running_physics`, which
    ``switching_currents(criterion="voltage")`` shares); the retrapping current is the bias
    of its last forward barrier crossing, where the voltage stopped. Without noise it is
    :func:`.theory.retrapping_current` of the quality factor ``Q = sqrt(V0) / damping``;
    thermal noise retraps the running state earlier, at higher bias.

    Give either the normalized ``V0, damping, D, dgamma`` or ``physical=dict(R=..., C=...,
    Ic=..., T=..., sweep_rate=...)`` in SI units (ohm, F, A, K, 1/s; the bias falls at
    ``dI/dt = -sweep_rate * Ic``), converted by :func:`normalize`; then the output also
    has ``retrapping_current_A`` in amperes. Any parameter may be a 1-D array (a dimension).

    Parameters
    ----------
    h : float or array, > 0
        Time step; ``h`` times the plasma frequency at zero bias, ``sqrt(V0)``, must be <= 0.1.
    realizations : int
        Realizations per parameter point.
    damping, D : float or array
        As in :func:`escape_times`.
    dgamma : float or array, > 0
        Bias decrement per step.
    V0 : float or array
        As in :func:`escape_times`.
    physical : dict, optional
        SI parameters instead of ``V0, damping, D, dgamma``.
    gamma_start : float or array, in (I_r / I_c, 1]
        Bias where the ramp starts, in the running state: above the noise-free retrapping
        current of every point, where the running state exists.
    gamma_end : float, in [0, gamma_start)
        The ramp stops at this bias; realizations still running then have ``retrapped``
        False and NaN current.
    model : {"underdamped"}
        Only the underdamped equation has a running state to leave (an overdamped junction
        is not hysteretic: it retraps at ``I_c``).
    integrator : {"baoab", "euler"}
        As in :func:`escape_times`, but BAOAB by default: the retrapping current is set by
        the damping (``4 / (pi Q)`` at large ``Q``), which Euler's numerical heating lowers by
        ``h V0 / damping^2`` (a warning says when that exceeds 1%).
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
        ``retrapping_current`` (normalized, float64), ``retrapped`` (bool), ``steps``
        (int64, ramp steps to the last barrier crossing), and ``retrapping_current_A`` with
        ``physical=``. The ``.fpt`` accessor works on it as on switching currents.

    Examples
    --------
    >>> import gpuensembles as ge
    >>> ds = ge.retrapping_currents(V0=1.0, damping=0.1, D=1e-4, dgamma=1e-6, h=0.02, gamma_start=0.3,
    ...                             realizations=1000, seed=1)  # doctest: +SKIP
    >>> ds.fpt.mean()  # doctest: +SKIP
    """
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, model=model, integrator=integrator, seed=seed,
                dtype=dtype, chunks=chunks, store=store, backend=backend)
    engine.check_choice("model", model, junction.MODELS)
    if model == "overdamped":
        raise ValueError("model='overdamped' has no running state to retrap from (an overdamped junction is not "
                         "hysteretic: its retrapping current is I_c); use model='underdamped'")
    V0, damping, D, dgamma, units = junction.resolve_units(physical, h, V0, damping, D, dgamma)
    params = junction.validated(model, dtype, "barrier_top", integrator, V0=V0, damping=damping, D=D, h=h,
                                dgamma=dgamma)
    engine.check_range("dgamma", params["dgamma"], 0, low_open=True, hint=" (the bias ramp's step, > 0)")
    junction.check_step(model, params["V0"], params["damping"], xr.zeros_like(params["V0"]), params["h"])
    junction.warn_euler_heating(integrator, params["V0"], params["damping"], params["h"], "the retrapping current")
    params["gamma_start"] = engine.as_parameter("gamma_start", gamma_start)
    engine.check_range("gamma_start", params["gamma_start"], 0, 1, low_open=True)
    _check_running_start(params)
    gamma_end = engine.check_real("gamma_end", gamma_end)
    if not 0 <= gamma_end < float(params["gamma_start"].min()):
        raise ValueError(f"gamma_end must lie in [0, gamma_start = {float(params['gamma_start'].min()):.6g}), "
                         f"got {gamma_end!r}")
    limit = np.floor((params["gamma_start"] - gamma_end) / params["dgamma"])
    if float(limit.max()) >= 2**53:
        raise ValueError(f"the ramp needs {float(limit.max()):.3g} steps, more than 2**53; increase dgamma")
    params["limit"] = limit.rename("limit")
    plan = engine.make_plan(
        {k: params[k] for k in running.RETRAPPING_PARAMETERS},
        realizations=realizations,
        seed=seed,
        max_steps=max(1, int(limit.max())),
        kernel=engine.KernelSpec(running.retrapping_kernel, (dtype, integrator)),
        backend=backend,
        store=store,
    )
    work = estimates.retrapping_work(plan.table(), running.RETRAPPING_PARAMETERS, plan.realizations, integrator,
                                     dtype)
    raw = junction.execute(plan, work, chunks=chunks, progress=progress, store=store,
                           bytes_per_value=25 if physical is None else 33)
    signed = engine.label(plan, raw, junction.PARAMETERS)
    # the kernel records the step of the last crossing, which is 0 when none was made: not negative
    retrapped = signed >= 0
    steps = abs(signed)
    p = dict(zip(running.RETRAPPING_PARAMETERS, plan.params))
    current = xr.where(retrapped, p["gamma_start"] - steps * p["dgamma"], np.nan).transpose(*plan.dims)
    data = {
        "retrapping_current": current.assign_attrs(
            long_name="retrapping current I_r / I_c", units="1",
            comment="gamma_start - steps * dgamma: the bias of the last barrier crossing before the phase relaxed "
                    "into a well; NaN where retrapped is False"),
        "retrapped": retrapped.assign_attrs(long_name=f"retrapped before the bias reached gamma_end = {gamma_end}",
                                            units="1"),
        "steps": steps.assign_attrs(long_name="ramp steps to the last barrier crossing (to gamma_end if not "
                                              "retrapped)", units="1"),
    }
    extra = {}
    if physical is not None:
        data["retrapping_current_A"] = (current * units["Ic"]).transpose(*plan.dims).assign_attrs(
            long_name="retrapping current", units="A")
        extra = {f"physical_{k}": float(v) for k, v in physical.items() if np.ndim(v) == 0}
        extra.update({f"{k}_normalized": float(units[k]) for k in ("theta", "time_unit") if units[k].ndim == 0})
    return xr.Dataset(data, attrs=junction.attributes(
        plan, raw, "retrapping_currents", model, dtype, None, integrator, call,
        gamma_end=float(gamma_end), ramp="gamma_k = gamma_start - k * dgamma (float64 from an int64 step count)",
        initial_condition="running: phi = arcsin(gamma_start), dphi/dt = gamma_start V0 / damping + 2 sqrt(V0)",
        retrapping_condition=("the phase relaxes into a well (energy above its bottom <= min(theta, 0.3 Delta U)); "
                              "dated to its last forward barrier crossing"),
        **extra,
    ))


def _check_running_start(params):
    """Refuse a ramp that starts where no running state exists: at or below the noise-free ``I_r`` of a point."""
    V0, damping, start = xr.broadcast(params["V0"], params["damping"], params["gamma_start"])
    Q = theory.quality_factor(V0, damping)
    retrapping = xr.apply_ufunc(theory.retrapping_current, Q)
    low = start <= retrapping
    if bool(low.any()):
        i = np.unravel_index(int(np.argmax(low.values)), low.shape)
        raise ValueError(
            f"gamma_start = {float(start.values[i]):.6g} starts the retrapping ramp below the running state: the "
            f"noise-free retrapping current of this junction (Q = sqrt(V0) / damping = {float(Q.values[i]):.4g}) "
            f"is I_r / I_c = {float(retrapping.values[i]):.6g}, and no running state exists below it; start above "
            "it (gamma_start = 1 always runs)")
