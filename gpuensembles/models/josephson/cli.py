"""Subcommands ``escape-times``, ``switching-currents``, ``escape-rates`` and ``retrapping-currents``."""

import argparse

import numpy as np

from ...core import commands
from ...core.commands import add_parameter, integer, values
from .escape import escape_times
from .junction import (
    CRITERIA,
    DTYPES,
    INTEGRATORS,
    METHODS,
    MODELS,
    PARAMETERS,
    PASSAGES,
    PHYSICAL,
    STARTS,
)
from .rates import METHODS as RATE_METHODS
from .rates import escape_rates
from .retrapping import retrapping_currents
from .switching import switching_currents

#: Junctions known by name: SI parameters and the integration step of Pierro et al. 2018, Fig. 11(b).
PRESETS = {
    "li2007": dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200.0, h=1e-4),
}


def _add_common(parser):
    parser.add_argument("--realizations", type=integer, required=True, help="realizations per parameter point")
    parser.add_argument("--model", choices=MODELS, default="underdamped")
    parser.add_argument("--passage", choices=PASSAGES, default=None,
                        help="escape at the barrier top (default; as Pierro et al. 2018) or at the next well (what "
                             "rate theory counts)")
    parser.add_argument("--integrator", choices=INTEGRATORS, default="euler",
                        help="Euler-Maruyama (Pierro et al. 2018) or BAOAB (underdamped; ~10x larger h at equal "
                             "accuracy)")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    commands.add_run_options(parser, "realizations")


def _common_kwargs(args):
    return dict(realizations=args.realizations, model=args.model, integrator=args.integrator, dtype=args.dtype,
                **commands.run_options(args))


def gamma_start(text: str):
    """``--gamma-start``: a bias, or ``auto`` (warm start)."""
    if text.strip() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a bias or 'auto': {text!r}") from None


def add_escape_times(parser):
    """Options of ``escape-times``."""
    add_parameter(parser, "V0", PARAMETERS["V0"]["long_name"], default=[1.0])
    for name in ("damping", "gamma", "D", "h"):
        add_parameter(parser, name, PARAMETERS[name]["long_name"], required=True)
    parser.add_argument("--max-steps", type=integer, default=10**9, help="steps after which a realization gives up")
    _add_common(parser)


def run_escape_times(args):
    """Run ``escape-times`` (the run function says how long it will take before it starts)."""
    kwargs = dict(V0=values(args.V0), damping=values(args.damping), gamma=values(args.gamma), D=values(args.D),
                  h=values(args.h), max_steps=args.max_steps, passage=args.passage or "barrier_top",
                  **_common_kwargs(args))
    return escape_times(**kwargs)


def add_switching_currents(parser):
    """Options of ``switching-currents``."""
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a known junction (SI values and h; options override)")
    for name in ("V0", "damping", "D", "dgamma"):
        add_parameter(parser, name, PARAMETERS[name]["long_name"] + " (normalized form)")
    for name, (long_name, units, *_) in PHYSICAL.items():
        add_parameter(parser, name, f"{long_name} [{units}] (SI form)")
    add_parameter(parser, "h", PARAMETERS["h"]["long_name"])
    parser.add_argument("--gamma-start", type=gamma_start, default=0.0,
                        help="bias where the ramp starts, or 'auto' (warm start)")
    parser.add_argument("--gamma-end", type=float, default=1.0, help="bias where the ramp stops")
    parser.add_argument("--start", choices=STARTS, default=None,
                        help="--method direct: at rest at the well's bottom (default), or thermal")
    parser.add_argument("--method", choices=METHODS, default="direct",
                        help="simulate every ramp (direct), or draw from the Fulton-Dunkleberger distribution of "
                             "measured escape rates (rates: any sweep rate, down to 1/s; next-well escape from the "
                             "thermal state; --sweep-rate or --dgamma may take several values)")
    parser.add_argument("--rel-error", type=float, default=None,
                        help="--method rates: relative standard error of each measured escape rate (default 0.03)")
    _add_criterion(parser)
    _add_common(parser)


def _add_criterion(parser):
    parser.add_argument("--criterion", choices=CRITERIA, default="escape",
                        help="what counts as switching: the first escape over the barrier, or a voltage (the phase "
                             "runs --running-wells wells without relaxing into a well; escapes that are retrapped "
                             "are followed on)")
    parser.add_argument("--running-wells", type=integer, default=None,
                        help="--criterion voltage: wells the running phase advances before it counts (default 100)")


def _junction(args) -> dict:
    """``h`` and the junction of a ramp's options: a ``--preset``, the SI options or the normalized ones."""
    preset = dict(PRESETS.get(args.preset, {}))
    physical = {k: values(getattr(args, k)) if getattr(args, k) is not None else preset.get(k) for k in PHYSICAL}
    h = values(args.h) if args.h is not None else preset.get("h")
    if h is None:
        raise ValueError("h is required (or a --preset that sets it)")
    normalized = dict(V0=values(args.V0), damping=values(args.damping), D=values(args.D), dgamma=values(args.dgamma))
    if all(v is None for v in physical.values()) and any(normalized[k] is None for k in ("damping", "D", "dgamma")):
        missing = [f"--{k}" for k in ("damping", "D", "dgamma") if normalized[k] is None]
        raise ValueError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (or the SI options "
                         "--R --C --Ic --T --sweep-rate, or --preset)")
    if any(v is not None for v in physical.values()):
        missing = [k for k, v in physical.items() if v is None]
        if missing:
            raise ValueError(f"the SI form needs {', '.join('--' + k.replace('_', '-') for k in missing)}")
        if any(v is not None for v in normalized.values()):
            raise ValueError("give either the SI options (--R --C --Ic --T --sweep-rate) "
                             "or --V0/--damping/--D/--dgamma")
        return {"h": h, "physical": physical}
    return {"h": h, **{k: v for k, v in normalized.items() if v is not None}}


def run_switching_currents(args):
    """Run ``switching-currents``."""
    direct, rates = args.method == "direct", args.method == "rates"
    kwargs = dict(gamma_start=args.gamma_start, gamma_end=args.gamma_end, criterion=args.criterion,
                  running_wells=args.running_wells, method=args.method, **_common_kwargs(args), **_junction(args),
                  # passage and start are those of rate theory with --method rates (see switching_currents)
                  **commands.only_with(args, direct and args.criterion == "escape", {"passage": "barrier_top"},
                                       "--method direct and --criterion escape"),
                  **commands.only_with(args, direct, {"start": "rest"}, "--method direct"),
                  **commands.only_with(args, rates, {"rel_error": 0.03}, "--method rates"))
    return switching_currents(**kwargs)


def add_retrapping_currents(parser):
    """Options of ``retrapping-currents``."""
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a known junction (SI values and h; options override)")
    for name in ("V0", "damping", "D", "dgamma"):
        add_parameter(parser, name, PARAMETERS[name]["long_name"] + " (normalized form; dgamma is the decrement)")
    for name, (long_name, units, *_) in PHYSICAL.items():
        add_parameter(parser, name, f"{long_name} [{units}] (SI form; the bias falls at this rate)")
    add_parameter(parser, "h", PARAMETERS["h"]["long_name"])
    add_parameter(parser, "gamma_start", "bias where the ramp down starts, in the running state", default=[1.0])
    parser.add_argument("--gamma-end", type=float, default=0.0, help="bias where the ramp stops")
    parser.add_argument("--realizations", type=integer, required=True, help="realizations per parameter point")
    parser.add_argument("--integrator", choices=INTEGRATORS, default="baoab",
                        help="BAOAB (default: no numerical heating, which would lower the damping and the "
                             "retrapping current) or Euler-Maruyama")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    commands.add_run_options(parser, "realizations")


def run_retrapping_currents(args):
    """Run ``retrapping-currents``."""
    return retrapping_currents(gamma_start=values(args.gamma_start), gamma_end=args.gamma_end,
                               realizations=args.realizations, integrator=args.integrator, dtype=args.dtype,
                               **commands.run_options(args), **_junction(args))


def summary(ds, seconds, output):
    """Steps and rate, then the mean escape time (or switching current) per parameter point.

    For ``method="rates"`` results the steps are those the rate simulations took, and the
    adiabaticity of each sweep is printed with the means.
    """
    simulated = ds["rate_steps"] if "rate_steps" in ds else ds["steps"]
    commands.header(ds, seconds, int(simulated.sum()), "steps", output)
    stats = ds.fpt.mean(censored="drop")
    value, passed = next((v, p) for v, p in (("switching_current", "switched"), ("retrapping_current", "retrapped"),
                                             ("escape_time", "escaped")) if v in ds)
    if f"{value}_A" in ds:
        ic = ds[f"{value}_A"] / ds[value]
        stats["mean_A"] = stats["mean"] * ic.mean("realization")
    if "criterion" in ds.attrs:
        print(f"criterion: {ds.attrs['criterion']}"
              + (f" ({ds.attrs['running_wells']} wells)" if ds.attrs["criterion"] == "voltage" else ""))
    if "adiabaticity" in ds:
        stats["adiabaticity"] = ds["adiabaticity"]
        print(f"rates: {ds.sizes['rate_gamma']} escape rates, gamma {float(ds.rate_gamma.min()):.4g} to "
              f"{float(ds.rate_gamma.max()):.4g}, relative errors up to {float((ds.rate_stderr / ds.rate).max()):.2g}")
    if stats["mean"].ndim == 0:
        text = ", ".join(f"{k} {float(v):.6g}" for k, v in stats.data_vars.items())
        print(text.replace("n_censored", f"not {passed}").replace(" n ", f" {passed} "))
        return
    frame = stats.to_dataframe().rename(columns={"n": passed, "n_censored": f"not {passed}"})
    print(frame.to_string(float_format=lambda x: f"{x:.6g}"))


#: Words of each kind of result in a plot's title, and what a sample that counts has done.
_KINDS = {"escape_time": ("Escape times", "escaped"), "switching_current": ("Switching currents", "switched"),
          "retrapping_current": ("Retrapping currents", "retrapped")}


def _param(ds, point, name):
    """Parameter ``name`` at one point of a plot: its coordinate there, else the run's attribute (None if neither)."""
    if name in point.coords and point.coords[name].ndim == 0:
        return float(point.coords[name])
    value = ds.attrs.get(name)
    return None if value is None or np.ndim(value) else float(value)


def _described(coord):
    """``coord`` with a long name and units (from the parameter tables where it came without them)."""
    name = str(coord.name)
    if "units" not in coord.attrs and name in PHYSICAL:
        long_name, units, *_ = PHYSICAL[name]
        return coord.assign_attrs(long_name=long_name, units=units)
    if "units" not in coord.attrs and name in PARAMETERS:
        return coord.assign_attrs(**PARAMETERS[name])
    return coord


def _plot_title(ds, words, sweep=()):
    """``words, <dynamics> junction`` over a line with the junction's fixed parameters (SI ones when given)."""
    from ...analysis.plots import si_scale

    title = f"{words}, {ds.attrs.get('dynamics', 'underdamped')} junction"
    physical = {k: float(ds.attrs[f"physical_{k}"]) for k in PHYSICAL
                if f"physical_{k}" in ds.attrs and k not in sweep}
    fixed = []
    for k, v in physical.items():
        factor, units = si_scale([v], PHYSICAL[k][1])
        fixed.append(f"{k.replace('_', ' ')} = {v * factor:.3g} {units}")
    if not physical:
        fixed = [f"{k} = {float(ds.attrs[k]):.3g}" for k in ("V0", "damping", "D")
                 if k in ds.attrs and k not in sweep]
    return title + ("\n" + ", ".join(fixed) if fixed else "")


def _per_second(ds, line):
    """Factor from a normalized rate to 1/s along ``line`` (a selection of ``rate``); None in normalized form."""
    if "rate_per_second" in ds:
        ratio = ds["rate_per_second"] / ds["rate"]
        ratio = ratio.sel({d: line.coords[d].values for d in ratio.dims if d in line.coords
                           and line.coords[d].ndim == 0})
        ratio = np.asarray(ratio, dtype=float)
        ratio = ratio[np.isfinite(ratio)]
        return float(ratio.mean()) if ratio.size else None
    if "time_unit_normalized" in ds.attrs:
        return 1.0 / float(ds.attrs["time_unit_normalized"])
    return None


def _theory_rates(ds, line, dim, grid):
    """Theory's escape rate along ``grid`` of the parameter ``dim`` at ``line``'s other parameters, and its name.

    Underdamped: the Mel'nikov-Meshkov rate; overdamped: the exact rate 1 / MFPT from the
    thermal state of the well to the next well's bottom (what the simulated rates measure).
    None where a parameter is unknown (swept SI values) or theory does not cover it.
    """
    import math

    from . import theory

    fixed = {k: _param(ds, line, k) for k in ("V0", "damping", "D", "gamma")}
    key = "gamma" if dim == "rate_gamma" else dim
    if key not in fixed:
        return None
    rates = []
    try:
        for value in grid:
            p = {**fixed, key: float(value)}
            if None in p.values():
                return None
            if ds.attrs.get("dynamics") == "overdamped":
                b = math.asin(p["gamma"]) + 2 * math.pi
                rates.append(1.0 / theory.overdamped_mfpt(V0=p["V0"], damping=p["damping"], gamma=p["gamma"],
                                                          D=p["D"], b=b, thermal=True))
            else:
                rates.append(theory.escape_rate(p["gamma"], V0=p["V0"], damping=p["damping"],
                                                theta=p["D"] / p["damping"], form="melnikov"))
    except (ValueError, ArithmeticError):
        return None
    name = "exact overdamped rate 1/MFPT" if ds.attrs.get("dynamics") == "overdamped" else "Mel'nikov-Meshkov rate"
    return np.array(rates), f"theory: {name}"


def _draw_rates(ax, ds, x_factor=1.0):
    """Measured escape rates (log scale) with their standard errors, and theory's, into ``ax``.

    Along the bias (``gamma``, or ``rate_gamma`` of a ``method="rates"`` switching result),
    else the first swept parameter; one line per point of the others, theory dashed in its
    colour; in 1/s when the run had SI units. The bias is multiplied by ``x_factor`` (to a
    current in display units). Returns the dimension along x and a footnote (or None).
    """
    from ...analysis import plots

    rate = ds["rate"]
    dim = next((d for d in ("gamma", "rate_gamma") if d in rate.dims), rate.dims[0] if rate.dims else None)
    if dim is None:
        rate, dim = rate.expand_dims("point"), "point"
    others = [d for d in rate.dims if d != dim]
    points = list(np.ndindex(*(rate.sizes[d] for d in others)))
    seconds = None
    for index in points[:plots.MAX_CURVES]:
        at = dict(zip(others, index))
        line = rate.isel(at)
        seconds = _per_second(ds, line)
        scale = seconds or 1.0
        x = np.asarray(line[dim].values if dim in line.coords else np.arange(line.size), dtype=float)
        where = plots.point_label(line, others)
        color = None
        for name, text, fmt in (("rate", "measured escape rate", "o-"),
                                ("switching_rate", "measured switching rate (voltage)", "s:")):
            if name not in ds:
                continue
            value = ds[name].broadcast_like(rate).isel(at).values
            error = ds[f"{name}_stderr"].broadcast_like(rate).isel(at).values
            shown = np.isfinite(value) & (value > 0)
            label = ", ".join(filter(None, [where, text + " \u00b1 1 stderr"]))
            bars = ax.errorbar(x[shown] * x_factor, value[shown] * scale, yerr=error[shown] * scale, fmt=fmt, ms=3,
                               capsize=2, color=color, label=label)
            color = bars.lines[0].get_color()
        if dim != "point" and x.size:
            grid = np.unique(np.concatenate([x, np.linspace(x.min(), x.max(), 16)]))
            grid = grid[(grid > 0) & (grid < 1)] if dim in ("gamma", "rate_gamma") else grid[grid > 0]
            found = _theory_rates(ds, line, dim, grid)
            if found is not None:
                ax.plot(grid * x_factor, found[0] * scale, "--", color=color, lw=1,
                        label=found[1] + (f", {where}" if where else ""))
    ax.set_yscale("log")
    per = plots.units_text("s-1") if seconds else plots.time_unit_symbol(ds["rate"].attrs.get("time_unit", ""))
    ax.set_ylabel(f"escape rate [{per}]")
    if len(points) > plots.MAX_CURVES:
        ax.text(0.01, 0.99, f"first {plots.MAX_CURVES} of {len(points)} points", transform=ax.transAxes, va="top",
                fontsize="small")
    return dim, None if seconds else plots.time_unit_note(ds["rate"])


def plot(ds, path):
    """Empirical CDF of every parameter point (one line each) into one PNG, in SI units when the run had them.

    A ``method="rates"`` result adds the Fulton-Dunkleberger CDF its samples were drawn
    from (with the band of one standard error from the rates' errors) and, in a second
    panel, the measured escape rates with their errors beside theory's. A retrapping result
    marks theory's noise-free retrapping current.
    """
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis import plots
    from . import theory

    name = next(v for v in _KINDS if v in ds)
    words, passed = _KINDS[name]
    rates = "cdf" in ds
    physical = f"{name}_A" in ds
    sample = ds[name]
    sweep = [d for d in sample.dims if d != "realization"]
    fig, axes = plt.subplots(1, 2 if rates else 1, figsize=(12, 4.8) if rates else (6.4, 4.4), squeeze=False)
    ax = axes[0, 0]
    factor, unit, ic = 1.0, "", None
    if physical:
        factor, unit = plots.si_scale(ds[f"{name}_A"].values, ds[f"{name}_A"].attrs.get("units", "A"))
        # the critical current of each point (where nothing passed, the run's)
        ic = (ds[f"{name}_A"] / sample).mean("realization").fillna(float(ds.attrs.get("physical_Ic", np.nan)))
        ax.set_xlabel(f"{ds[f'{name}_A'].attrs.get('long_name', words.lower())} [{unit}]")
    else:
        ax.set_xlabel(plots.axis_label(sample))
    points = list(np.ndindex(*(sample.sizes[d] for d in sweep)))
    retrapping = set()
    for number, index in enumerate(points[:plots.MAX_CURVES]):
        where = dict(zip(sweep, index))
        point = sample.isel(where)
        point = point.assign_coords({d: _described(point.coords[d]) for d in sweep if d in point.coords})
        scale = factor * (float(ic.isel({d: i for d, i in where.items() if d in ic.dims})) if physical else 1.0)
        values = np.sort(np.asarray(point.values, dtype=float).ravel())
        finite = values[np.isfinite(values)] * scale
        count = f"{finite.size} samples" if finite.size == values.size else f"{finite.size} of {values.size} {passed}"
        (line,) = ax.step(np.concatenate([finite[:1], finite]),
                          np.arange(finite.size + 1) / max(values.size, 1), where="post",
                          label=", ".join(filter(None, [plots.point_label(point, sweep), count])))
        if rates:  # the Fulton-Dunkleberger CDF the samples were drawn from
            at = {d: i for d, i in where.items() if d in ds["cdf"].dims}
            cdf, err = ds["cdf"].isel(at).values, ds["cdf_stderr"].isel(at).values
            keep = np.flatnonzero((cdf > 1e-4) & (cdf < 1 - 1e-4))
            keep = slice(max(keep[0] - 1, 0), keep[-1] + 2) if keep.size else slice(None)
            bias = ds["bias"].values[keep] * scale
            ax.fill_between(bias, np.clip(cdf[keep] - err[keep], 0, 1), np.clip(cdf[keep] + err[keep], 0, 1),
                            color=line.get_color(), alpha=0.25, lw=0,
                            label="\u00b1 1 stderr of that CDF (from the rates' errors)" if number == 0 else None)
            ax.plot(bias, cdf[keep], "k--", lw=0.9,
                    label="Fulton-Dunkleberger CDF of the measured rates (the samples' law)" if number == 0 else None)
        if name == "retrapping_current":
            V0, damping = _param(ds, point, "V0"), _param(ds, point, "damping")
            if V0 is not None and damping is not None:
                Q = float(theory.quality_factor(V0, damping))
                retrapping.add((Q, float(theory.retrapping_current(Q)) * scale))
    for Q, current in sorted(retrapping):
        ax.axvline(current, color="k", ls=":", lw=1, label=f"theory: noise-free retrapping current (Q = {Q:.3g})")
    ax.set_ylabel("cumulative probability")
    ax.set_ylim(-0.02, 1.02)
    if len(points) > plots.MAX_CURVES:
        ax.set_title(f"first {plots.MAX_CURVES} of {len(points)} points", fontsize="small")
    notes = [None if physical else plots.time_unit_note(sample)]
    if rates:
        right = axes[0, 1]
        _, note = _draw_rates(right, ds, x_factor=factor * float(ic.mean()) if physical else 1.0)
        notes.append(note)
        right.set_xlabel(f"bias current [{unit}]" if physical else "bias I / I_c")
        right.set_title("the measured escape rates behind it", fontsize="medium")
        plots.legend_outside(ax, where="below")
        plots.legend_outside(right, where="below")
        fig.suptitle(_plot_title(ds, words + " drawn from measured escape rates", sweep))
    else:
        plots.legend_outside(ax)
        ax.set_title(_plot_title(ds, words, sweep), fontsize="medium")
    plots.footnote(fig, notes)
    plots.save(ax, path)


def add_escape_rates(parser):
    """Options of ``escape-rates``."""
    add_parameter(parser, "V0", PARAMETERS["V0"]["long_name"] + " (normalized form)")
    for name in ("damping", "D"):
        add_parameter(parser, name, PARAMETERS[name]["long_name"] + " (normalized form)")
    for name in ("R", "C", "Ic", "T"):
        long_name, units, *_ = PHYSICAL[name]
        add_parameter(parser, name, f"{long_name} [{units}] (SI form)")
    for name in ("gamma", "h"):
        add_parameter(parser, name, PARAMETERS[name]["long_name"], required=True)
    parser.add_argument("--model", choices=MODELS, default="underdamped")
    parser.add_argument("--integrator", choices=INTEGRATORS, default="euler",
                        help="Euler-Maruyama (Pierro et al. 2018) or BAOAB (underdamped; ~10x larger h at equal "
                             "accuracy)")
    parser.add_argument("--method", choices=RATE_METHODS, default="auto",
                        help="direct first passage (barriers <= 20 theta), forward flux sampling (3 to 100 theta), "
                             "or auto (direct below 6 theta)")
    parser.add_argument("--rel-error", type=float, default=0.03, help="target relative standard error of each rate")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    commands.add_run_options(parser, "parameter points")


def run_escape_rates(args):
    """Run ``escape-rates``."""
    physical = {k: values(getattr(args, k)) for k in ("R", "C", "Ic", "T")}
    normalized = dict(V0=values(args.V0), damping=values(args.damping), D=values(args.D))
    kwargs = dict(gamma=values(args.gamma), h=values(args.h), model=args.model, integrator=args.integrator,
                  method=args.method, rel_error=args.rel_error, dtype=args.dtype, **commands.run_options(args))
    if any(v is not None for v in physical.values()):
        missing = [k for k, v in physical.items() if v is None]
        if missing:
            raise ValueError(f"the SI form needs {', '.join('--' + k for k in missing)}")
        if any(v is not None for v in normalized.values()):
            raise ValueError("give either the SI options (--R --C --Ic --T) or --V0/--damping/--D")
        kwargs["physical"] = physical
    elif normalized["damping"] is None or normalized["D"] is None:
        raise ValueError("--damping and --D are required (or the SI options --R --C --Ic --T)")
    else:
        kwargs.update({k: v for k, v in normalized.items() if v is not None})
    return escape_rates(**kwargs)


def rates_summary(ds, seconds, output):
    """Steps and their rate, then the escape rate with its error and method per point."""
    commands.header(ds, seconds, int(ds.steps.sum()), "steps", output)
    columns = [k for k in ("rate", "rate_stderr", "rate_per_second", "barrier", "method", "interfaces") if k in ds]
    commands.print_table(ds[columns] if ds.rate.ndim else ds[[c for c in columns if c != "method"]])


def rates_plot(ds, path):
    """Escape rate (log scale) against the bias, with its standard errors and theory's rate, into a PNG.

    One line per point of the other swept parameters; in 1/s when the run had SI units.
    Theory: the Mel'nikov-Meshkov rate (underdamped), the exact 1 / MFPT (overdamped).
    """
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis import plots

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    dim, note = _draw_rates(ax, ds)
    ax.set_xlabel(plots.axis_label(_described(ds[dim])) if dim in ds.coords else "parameter point")
    ax.set_title(_plot_title(ds, "Escape rates", ds["rate"].dims), fontsize="medium")
    plots.legend_outside(ax)
    plots.footnote(fig, [note])
    plots.save(ax, path)
