"""``switching_currents(method="rates")``: switching histograms at real sweep rates from escape rates.

The escape rate ``Gamma(gamma)`` is measured on an adaptive grid of biases by
:func:`.rates.escape_rates`; each sweep rate's distribution follows by Fulton-Dunkleberger
(:mod:`.fulton_dunkleberger`), and the samples are drawn from it by inverse transform.
"""

import functools
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import xarray as xr

from ...core import engine, estimate, io
from . import fulton_dunkleberger as fd
from . import junction, theory
from .rates import PER_TIME, escape_rates, expected_work

#: Variables of ``escape_rates`` kept over ``rate_gamma`` with ``criterion="voltage"``.
_VOLTAGE_RATE_VARIABLES = ("run_probability", "run_probability_stderr", "failed_run_time", "switching_rate",
                           "switching_rate_stderr")


def _measured_rates(*, V0, damping, D, h, model, integrator, rel_error, criterion, running_wells, seed, dtype,
                    backend, progress, store=None):
    """The rate callable of ``method="rates"``: a closure over ``escape_rates``.

    It returns the escape rate (1/MFPT to the next well), or with ``criterion="voltage"`` the
    rate of switching into the running state. Each call (one batch of biases) runs with its
    own seed, derived from ``seed`` and the call's number, so the rate errors of different
    passes are independent. What the simulations ran on, and every measured Dataset, are kept
    in the callable's ``info`` dict. With ``store`` (a directory), call ``k`` keeps its rates
    in ``store/pass-<k>`` (an ``escape_rates`` store), so a rerun measures only what is missing.
    """
    info = {"calls": 0, "measured": []}
    name = "rate" if criterion == "escape" else "switching_rate"

    def rates(gamma):
        """``(rate, rate_stderr, steps)`` at the biases ``gamma`` from simulations."""
        batch_seed = int(np.random.SeedSequence([seed, info["calls"]]).generate_state(1)[0])
        ds = escape_rates(gamma=np.asarray(gamma, dtype=float), h=h, damping=damping, D=D, V0=V0, model=model,
                          integrator=integrator, rel_error=rel_error, criterion=criterion, running_wells=running_wells,
                          seed=batch_seed, dtype=dtype, backend=backend, progress=progress,
                          store=None if store is None else Path(store) / f"pass-{info['calls']}")
        ds = ds.compute()  # on a cluster: once, not once for each variable read below (and again at the end)
        info["calls"] += 1
        info["measured"].append(ds)
        info.update(backend=ds.attrs.get("backend", backend), device=ds.attrs.get("device", "unknown"))
        return (np.asarray(ds[name].values, dtype=float), np.asarray(ds[f"{name}_stderr"].values, dtype=float),
                np.asarray(ds["steps"].values, dtype=np.int64))

    rates.info = info
    return rates


def run(*, h, realizations, damping, D, dgamma, V0, physical, gamma_start, gamma_end, model, integrator, rel_error,
        criterion, running_wells, seed, dtype, chunks, store, backend, progress) -> xr.Dataset:
    """``switching_currents(method="rates")``: validation, then :mod:`.fulton_dunkleberger`, then the Dataset.

    With ``criterion="voltage"`` the rate of the Fulton-Dunkleberger integral is the rate of
    switching into the running state, ``Gamma P_run / (1 + Gamma (1 - P_run) t_fail)``
    (:func:`.rates.escape_rates`): escapes that are retrapped return the junction to a
    thermal well, from which it escapes again, so switching is a thinned renewal process.
    """
    call = dict(h=h, realizations=realizations, damping=damping, D=D, dgamma=dgamma, V0=V0, physical=physical,
                gamma_start=gamma_start, gamma_end=gamma_end, model=model, integrator=integrator, method="rates",
                rel_error=rel_error, criterion=criterion, running_wells=running_wells, seed=seed, dtype=dtype,
                chunks=chunks, backend=backend)
    wells = junction.running_wells(criterion, running_wells, model)
    one_curve = "one rate curve serves one junction"
    engine.check_choice("backend", backend, ("auto", "cuda", "cpu"))
    realizations = engine.check_count("realizations", realizations)
    seed = engine.run_seed(seed, store)
    rel_error = engine.check_real("rel_error", rel_error)
    if not 0 < rel_error < 1:
        raise ValueError(f"rel_error must lie in (0, 1), got {rel_error!r}")

    def one_junction(physical):
        """Refuse swept SI parameters other than the sweep rate."""
        for name in ("R", "C", "Ic", "T"):
            junction.single_value(name, engine.as_parameter(name, physical[name]), one_curve)
        junction.single_value("h", engine.as_parameter("h", h), one_curve)

    params, units, gamma_end = junction.ramp(physical, h, V0, damping, D, dgamma, model=model, dtype=dtype,
                                             passage="next_well", integrator=integrator, gamma_end=gamma_end,
                                             wells=wells, check=one_junction)
    for name in ("V0", "damping", "D", "h"):
        junction.single_value(name, params[name], one_curve)
    V0, damping, D, h = (float(params[k]) for k in ("V0", "damping", "D", "h"))
    theta = D / damping
    sweep_name = "sweep_rate" if physical is not None else "dgamma"
    dgammas = params["dgamma"]
    gamma_dot = np.atleast_1d(dgammas.values / h)
    sweep_values = np.atleast_1d(dgammas.coords["sweep_rate"].values if "sweep_rate" in dgammas.coords
                                 else physical["sweep_rate"] if physical is not None else dgammas.values)
    rate_formula = theory.rate_formula(model, V0, damping, theta)
    if isinstance(gamma_start, str):
        if gamma_start != "auto":
            raise ValueError(f"gamma_start must be a number in [0, 1) or 'auto', got {gamma_start!r}")
        # the warm-start criterion of the direct method: P < 1e-9 from 0 at the slowest sweep
        from_zero = fd.theory_curve(rate_formula, gamma_start=0.0, gamma_end=gamma_end, V0=V0,
                                                 theta=theta)
        low = fd.quantile(1e-9, from_zero, float(gamma_dot.min()), gamma_end=gamma_end)
        gamma_start = float(np.floor(min(float(np.nan_to_num(low, nan=0.0)), 0.999) * 1e6) / 1e6)
    gamma_start = engine.check_real("gamma_start", gamma_start)
    if not 0 <= gamma_start < gamma_end:
        raise ValueError(f"gamma_start must lie in [0, gamma_end = {gamma_end}), got {gamma_start!r}")
    limit = np.floor((gamma_end - gamma_start) / dgammas)
    if float(limit.max()) >= 2**53:
        raise ValueError(f"the ramp needs {float(limit.max()):.3g} steps, more than 2**53; increase dgamma")

    def relaxation(g):
        """The well's relaxation rate at the biases ``g``."""
        return fd.relaxation_rate(g, V0=V0, damping=damping, model=model)

    ends = dict(gamma_start=gamma_start, gamma_end=gamma_end)
    expected = fd.theory_curve(rate_formula, V0=V0, theta=theta, **ends)
    fd.check_adiabatic(fd.adiabaticity(expected, gamma_dot, relaxation, **ends),
                                    sweep_values, sweep_name, "Mel'nikov-Meshkov rate" if model == "underdamped"
                                    else "Kramers rate", stacklevel=3)
    rates = _measured_rates(V0=V0, damping=damping, D=D, h=h, model=model, integrator=integrator,
                            rel_error=rel_error, criterion=criterion, running_wells=wells, seed=seed, dtype=dtype,
                            backend=backend, progress=progress, store=store)
    # the voltage window lies above the escape window's low end (the switching rate is below the
    # escape rate) and anywhere up to the lowest barrier: the first pass spans all of that
    top = float(expected.gamma[-1])
    span = None if wells is None else (fd.window(expected, gamma_dot, gamma_start, top, fd.TAIL)[0], top)
    curve_of = functools.partial(fd.adaptive_curve, gamma_dot=gamma_dot, V0=V0, theta=theta, theory=expected,
                                 span=span, **ends)
    biases = _expected_biases(curve_of, expected, rel_error)
    work = expected_work(np.array([[V0, damping, g, D, h] for g in biases]).reshape(-1, 5), None, rel_error, model,
                         integrator, dtype, voltage=wells is not None)
    retrapping = None
    if wells is None and model == "underdamped":
        # for the warning below: 0.6 s of orbit integrations, done while the passes run (on a cluster the
        # client only waits for them)
        side = ThreadPoolExecutor(1)
        retrapping = side.submit(theory.retrapping_current, theory.quality_factor(V0, damping))
        side.shutdown(wait=False)
    with engine.stored_run(store, "switching_currents", call, seed), estimate.timed(work, backend,
                                                                                      progress) as clock:
        # the grid theory expects is measured in the first pass; later passes only mend where it was wrong
        curve = curve_of(rates, first=biases)
        measured = None if wells is None else _at_points(rates, curve.gamma)
        clock.ran(curve.rate, float(np.sum(curve.steps)))
    escape = curve if wells is None else fd.make_curve(curve.gamma, measured["rate"].values)
    epsilon = fd.adiabaticity(curve, gamma_dot, relaxation, escape=escape, **ends)
    fd.check_adiabatic(epsilon, sweep_values, sweep_name, "measured rates", stacklevel=3)

    sweep_dims = dgammas.dims
    current = _drawn(curve, gamma_dot, sweep_dims, realizations, seed, chunks, ends)
    coords = {k: v.variable for k, v in dgammas.coords.items()}
    if sweep_dims:
        coords["dgamma"] = xr.Variable(sweep_dims, dgammas.values, junction.PARAMETERS["dgamma"])
    dims = (*sweep_dims, "realization")
    current = xr.DataArray(current, dims=dims, coords={**coords, "realization": xr.Variable(
        "realization", np.arange(realizations), io.REALIZATION_ATTRS)})
    switched = current.notnull()
    steps = xr.where(switched, np.ceil((current - gamma_start) / dgammas), limit).astype(np.int64)
    low = min(float(fd.quantile(fd.TAIL, curve, r, **ends)) for r in gamma_dot)
    high = [float(fd.quantile(1 - fd.TAIL, curve, r, **ends)) for r in gamma_dot]
    high = max(v if np.isfinite(v) else gamma_end for v in high)
    bias = np.linspace(low, max(high, low + 1e-12), 1001)
    cdf, cdf_stderr = fd.fd_cdf(bias, curve, gamma_dot, **ends)
    bias_coord = {"bias": xr.Variable("bias", bias, {"long_name": "bias I / I_c at which the CDF is given",
                                                     "units": "1"})}
    grid = {**{k: v for k, v in coords.items()}, **bias_coord}
    shape = tuple(dgammas.shape) + (bias.size,)
    rate_coord = {"rate_gamma": xr.Variable("rate_gamma", curve.gamma, {
        "long_name": "bias I / I_c of the measured escape rates", "units": "1"})}
    if retrapping is not None:
        retrapping = retrapping.result()
        below, _ = fd.fd_cdf([min(retrapping, gamma_end)], curve, gamma_dot, **ends)
        junction.warn_if_retrapped(xr.DataArray(below[:, 0].reshape(dgammas.shape), dims=sweep_dims, coords=coords),
                                   retrapping, theory.quality_factor(V0, damping), "of the computed distribution",
                                   stacklevel=4)
    data = {
        "switching_current": current.assign_attrs(
            long_name="switching current I_sw / I_c", units="1",
            comment="drawn from the Fulton-Dunkleberger CDF (cdf) by inverse transform; NaN where switched is False"),
        "switched": switched.assign_attrs(long_name=f"switched before the bias reached gamma_end = {gamma_end}",
                                          units="1"),
        "steps": steps.assign_attrs(long_name="ramp steps until the bias reaches the switching current", units="1",
                                    comment="ceil((switching_current - gamma_start) / dgamma); no simulation "
                                            "took them (rate_steps are the simulated steps)"),
        "cdf": xr.DataArray(cdf.reshape(shape), dims=(*sweep_dims, "bias"), coords=grid).assign_attrs(
            long_name="switching probability P(I_sw <= bias) (Fulton-Dunkleberger with the measured rates)",
            units="1"),
        "cdf_stderr": xr.DataArray(cdf_stderr.reshape(shape), dims=(*sweep_dims, "bias"), coords=grid).assign_attrs(
            long_name="standard error of cdf from the rates' standard errors (delta method)", units="1"),
        "rate": xr.DataArray(escape.rate, dims="rate_gamma", coords=rate_coord).assign_attrs(
            long_name="escape rate (1 / mean first-passage time to the next well)", units="1",
            time_unit=PER_TIME),
        "rate_stderr": xr.DataArray(curve.rate_stderr if wells is None else measured["rate_stderr"].values,
                                    dims="rate_gamma",
                                    coords=rate_coord).assign_attrs(long_name="standard error of the escape rate",
                                                                    units="1", time_unit=PER_TIME),
        "rate_steps": xr.DataArray(curve.steps, dims="rate_gamma", coords=rate_coord).assign_attrs(
            long_name="integration steps simulated for the rate point", units="1"),
        "adiabaticity": xr.DataArray(epsilon.reshape(dgammas.shape), dims=sweep_dims, coords=coords).assign_attrs(
            long_name="largest escape rate over the well's relaxation rate where 1e-3 < cdf < 1 - 1e-3", units="1",
            comment=f"the adiabatic approximation is refused above {fd.MAX_EPSILON}"),
    }
    for name in _VOLTAGE_RATE_VARIABLES if wells else ():
        data[name] = xr.DataArray(measured[name].values, dims="rate_gamma", coords=rate_coord,
                                  attrs=measured[name].attrs)
    extra = {}
    if physical is not None:
        data["switching_current_A"] = (current * units["Ic"]).transpose(*dims).assign_attrs(
            long_name="switching current", units="A")
        extra = {f"physical_{k}": float(v) for k, v in physical.items() if np.ndim(v) == 0}
        extra.update({f"{k}_normalized": float(units[k]) for k in ("theta", "time_unit")})
    ran = rates.info if hasattr(rates, "info") and "backend" in rates.info else {}
    attrs = io.provenance(
        model=f"josephson.switching_currents ({model})",
        integrator=junction.INTEGRATOR_TEXT[integrator],
        seed=seed,
        backend=ran.get("backend", backend),
        device=ran.get("device", "none (rates from a formula)" if not ran else "unknown"),
        dtype=dtype,
        history=io.history_line("switching_currents", call),
    )
    attrs.update(V0=V0, damping=damping, D=D, h=h, **({} if sweep_dims else {"dgamma": float(dgammas)}))
    measured_rate = ("escape rates" if wells is None else
                     "rates of switching into the running state (escape rate times run probability)")
    attrs.update(
        gamma_start=gamma_start, gamma_end=gamma_end, dynamics=model, passage="next_well",
        passage_condition=junction.PASSAGE_TEXT["next_well"], start="thermal", method="rates",
        method_description=(f"adiabatic Fulton-Dunkleberger distribution with {measured_rate} measured on "
                            f"{curve.gamma.size} biases in {curve.passes} batches (ln rate interpolated linearly); "
                            "samples by inverse transform of Philox uniforms (key seed, stream = sweep point; "
                            "counter realization)"), **junction.criterion_attrs(wells),
        ramp="gamma(t) = gamma_start + (dgamma / h) t",
        initial_condition="thermal (Boltzmann) state of the well at gamma_start", **extra)
    return xr.Dataset(data, attrs=attrs)


def _expected_biases(curve_of, expected, rel_error) -> np.ndarray:
    """The biases ``curve_of(rates)`` would measure if the rates were those of theory (``expected``)."""
    asked = []

    def theory_rates(gamma):
        gamma = np.asarray(gamma, dtype=float)
        asked.append(gamma)
        rate = np.exp(np.interp(gamma, expected.gamma, np.log(expected.rate)))
        return rate, rel_error * rate, np.zeros(gamma.size, dtype=np.int64)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the measured curve warns, if it must, when it is measured
        curve_of(theory_rates)
    return np.concatenate(asked) if asked else np.empty(0)


def _at_points(rates, gamma) -> xr.Dataset:
    """What the rate simulations measured at the biases ``gamma`` (the points of the final curve)."""
    merged = xr.concat(rates.info["measured"], dim="gamma", data_vars="all", coords="minimal", compat="override",
                       combine_attrs="override")
    # a bias whose first measurement was left out (a rate of 0) may have been measured again
    return merged.drop_duplicates("gamma", keep="last").sel(gamma=np.asarray(gamma))


def _drawn(curve, gamma_dot, sweep_dims, realizations, seed, chunks, ends):
    """The switching currents, shape ``(*sweep, realizations)``: numpy, or dask with ``chunks``.

    Sample ``r`` of sweep point ``i`` uses Philox stream ``i``, counter ``r``: the numbers do
    not depend on the chunking.
    """
    n = gamma_dot.size

    def block(lo_point, hi_point, lo, hi):
        return np.stack([fd.draw(curve, gamma_dot[i], seed=seed, stream=i, first=lo, count=hi - lo,
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
