"""Switching currents under a linearly ramped bias: every ramp simulated (``method="direct"``).

``method="rates"`` is dispatched to :mod:`.switching_from_rates`.
"""

import numpy as np
import xarray as xr

from ...core import engine
from ...core.backend import Backend, Progress
from . import estimates, junction, switching_from_rates, theory
from . import fulton_dunkleberger as fd
from . import physics as washboard
from . import running_physics as running
from .junction import Criterion, Dtype, Integrator, Method, Model, Passage, Start


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
    criterion: Criterion = "escape",
    running_wells=None,
    rel_error=0.03,
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Switching currents of a Josephson junction under a linearly ramped bias.

    The bias of step ``k`` is ``gamma_k = gamma_start + k * dgamma`` (Pierro et al. 2018,
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
        Initial state: at rest at the well bottom (Pierro et al. 2018), or drawn from the
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
        for the cost of one rate curve (:mod:`.switching_from_rates`; docs page "Switching
        histograms at real sweep rates"). Then only ``dgamma`` (or ``sweep_rate``) may be
        an array, ``h`` and ``integrator`` are those of the rate simulations, escape is
        counted at the next well (``passage`` is not used) from the thermal state of the
        well (``start`` is not used: the distribution is that of a ramp slow enough for
        the well to stay thermal), ``store`` keeps each pass of rate simulations in a
        subdirectory ``pass-<k>``, ``chunks`` chunks the drawn samples, and a sweep too
        fast for the adiabatic approximation (escape rate above 0.1 of the well's
        relaxation rate where switching happens; warning above 0.01) is refused before
        any simulation. The result adds ``cdf`` and ``cdf_stderr`` over ``bias``, and the
        rate curve ``rate``, ``rate_stderr``, ``rate_steps`` over ``rate_gamma``.
    criterion : {"escape", "voltage"}
        What counts as switching. ``"escape"``: the first passage over the barrier (see
        ``passage``), as in Pierro et al. 2018; it is where a voltage appears only when escapes are
        not caught again, i.e. above the retrapping current (:func:`.theory.retrapping_current`;
        a RuntimeWarning says when most switching lies below it). ``"voltage"`` (underdamped
        model): the junction has entered the running state, the phase having advanced
        ``running_wells`` wells without relaxing into a well; escapes that are retrapped are
        followed on, and the recorded switch is the escape that started the run (its last
        crossing out of the well where the phase last relaxed)
        (:mod:`.running_physics`; docs page "Phase diffusion and retrapping"). With
        ``method="rates"`` the rate drawn from is the rate of switching into the running
        state (:func:`escape_rates` with ``criterion="voltage"``).
    running_wells : int, optional
        ``criterion="voltage"`` only: the wells the phase must advance, default 100. A
        detector that integrates the voltage over a window ``tau`` and fires at a fraction
        ``f`` of ``I R`` sees about ``f gamma V0 / damping * tau / (2 pi)`` wells; where the
        running state is itself unstable (phase diffusion at high temperature) the
        switching current grows with it, slowly (logarithmically).
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
        (int64), and ``switching_current_A`` with ``physical=``. The attributes name the
        criterion (``criterion``, ``running_wells``, ``criterion_definition``).
    """
    engine.check_choice("method", method, junction.METHODS)
    wells = junction.running_wells(criterion, running_wells, model)
    if method == "rates":
        return switching_from_rates.run(
            h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
            gamma_start=gamma_start, gamma_end=gamma_end, model=model, integrator=integrator, rel_error=rel_error,
            criterion=criterion, running_wells=running_wells, seed=seed, dtype=dtype, chunks=chunks, store=store,
            backend=backend, progress=progress)
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, start=start, model=model, passage=passage,
                integrator=integrator, criterion=criterion, running_wells=running_wells, seed=seed, dtype=dtype,
                chunks=chunks, store=store, backend=backend)
    engine.check_choice("start", start, junction.STARTS)
    if wells is not None and passage != "barrier_top":
        raise ValueError(f"passage={passage!r} applies to criterion='escape'; criterion='voltage' dates a switch to "
                         "the barrier crossing that started the run (leave passage at 'barrier_top')")
    params, units, gamma_end = junction.ramp(physical, h, V0, damping, D, dgamma, model=model, dtype=dtype,
                                             passage=passage, integrator=integrator, gamma_end=gamma_end, wells=wells)
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
    if wells is None:
        names = washboard.SWITCHING_PARAMETERS
        kernel = washboard.switching_kernel, (model, dtype, passage, integrator)
    else:
        params["wells"] = engine.as_parameter("wells", float(wells))
        names, kernel = running.VOLTAGE_PARAMETERS, (running.voltage_switching_kernel, (dtype, integrator))
    plan = engine.make_plan(
        {k: params[k] for k in names},
        realizations=realizations,
        seed=seed,
        max_steps=max(1, int(limit.max())),
        kernel=engine.KernelSpec(*kernel),
        backend=backend,
        store=store,
    )
    work = estimates.ramp_work(plan.table(), names, plan.realizations, model, integrator, dtype, wells is not None)
    raw = junction.execute(plan, work, chunks=chunks, progress=progress, store=store,
                           bytes_per_value=25 if physical is None else 33)
    signed = engine.label(plan, raw, junction.PARAMETERS)
    steps, switched = abs(signed), signed > 0
    p = dict(zip(names, plan.params))
    current = xr.where(switched, p["gamma_start"] + steps * p["dgamma"], np.nan).transpose(*plan.dims)
    data = {
        "switching_current": current.assign_attrs(long_name="switching current I_sw / I_c", units="1",
                                                  comment="gamma_start + steps * dgamma; NaN where switched is False"),
        "switched": switched.assign_attrs(long_name=f"switched before the bias reached gamma_end = {gamma_end}",
                                          units="1"),
        "steps": steps.assign_attrs(long_name="integration steps taken" if wells is None else
                                    "ramp steps to the barrier crossing that started the run", units="1"),
    }
    if wells is None and model == "underdamped":
        _warn_if_retrapped(current, switched, params, gamma_end)
    extra = {}
    if physical is not None:
        data["switching_current_A"] = (current * units["Ic"]).transpose(*plan.dims).assign_attrs(
            long_name="switching current", units="A")
        extra = {f"physical_{k}": float(v) for k, v in physical.items() if np.ndim(v) == 0}
        extra.update({f"{k}_normalized": float(units[k]) for k in ("theta", "time_unit") if units[k].ndim == 0})
    return xr.Dataset(data, attrs=junction.attributes(
        plan, raw, "switching_currents", model, dtype, passage, integrator, call,
        gamma_end=float(gamma_end), start=start, **junction.criterion_attrs(wells),
        ramp="gamma_k = gamma_start + k * dgamma (float64 from an int64 step count)",
        initial_condition=("thermal (Boltzmann) state of the well at gamma_start" if start == "thermal"
                           else "phi = arcsin(gamma_start), dphi/dt = 0 (well bottom, at rest)"),
        **extra,
    ))


def _warn_if_retrapped(current, switched, params, gamma_end):
    """Warn when most switching of an escape-criterion run lies below the retrapping current.

    From the samples when they are computed; for a lazy result from the Fulton-Dunkleberger
    distribution of the Mel'nikov-Meshkov rate, before anything runs.
    """
    grid = xr.broadcast(*(params[k] for k in ("V0", "damping", "D", "h", "dgamma", "gamma_start")))
    Q = theory.quality_factor(grid[0], grid[1])
    finite = np.isfinite(Q)  # a damping that underflows: Q = inf, whose I_r is the 4 / (pi Q) limit, 0
    retrapping = xr.apply_ufunc(theory.retrapping_current, Q.where(finite, 1.0)).where(finite, 0.0)
    if current.chunks is None:
        below = ((current < retrapping) & switched).mean("realization")
        source = "of the samples"
    else:
        def predicted(V0, damping, D, h, dgamma, gamma_start, gamma_r):
            rate = theory.rate_formula("underdamped", V0, damping, D / damping)
            end = max(min(gamma_r, gamma_end), gamma_start + 1e-9)
            curve = fd.theory_curve(rate, gamma_start=gamma_start, gamma_end=end, V0=V0, theta=D / damping)
            cdf, _ = fd.fd_cdf([end], curve, dgamma / h, gamma_start=gamma_start, gamma_end=end)
            return float(cdf[0])

        below = xr.apply_ufunc(np.vectorize(predicted), *grid, retrapping)
        source = "predicted by the Mel'nikov-Meshkov rate"
    junction.warn_if_retrapped(below, retrapping, Q, source, stacklevel=4)


def _warm_start(model, params) -> xr.DataArray:
    """Per-point warm-start bias (see `gpuensembles.theory.warm_start_gamma`)."""
    grid = xr.broadcast(*(params[k] for k in ("V0", "damping", "D", "h", "dgamma")))

    def one(V0, damping, D, h, dgamma):
        return theory.warm_start_gamma(gamma_dot=dgamma / h, V0=V0, damping=damping, theta=D / damping, model=model,
                                       form="melnikov" if model == "underdamped" else "kramers")

    values = np.vectorize(one)(*(g.values for g in grid))
    return xr.DataArray(values, dims=grid[0].dims, coords=grid[0].coords)


# --------------------------------------------------------------------------- switching currents from rates
