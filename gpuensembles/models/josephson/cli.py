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
    parser.add_argument("--store", metavar="DIR", help="keep finished chunks in DIR; the same command resumes from it")


def _common_kwargs(args):
    return dict(realizations=args.realizations, model=args.model, integrator=args.integrator, dtype=args.dtype,
                store=args.store, **commands.run_options(args))


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
    parser.add_argument("--store", metavar="DIR", help="keep finished chunks in DIR; the same command resumes from it")


def run_retrapping_currents(args):
    """Run ``retrapping-currents``."""
    return retrapping_currents(gamma_start=values(args.gamma_start), gamma_end=args.gamma_end,
                               realizations=args.realizations, integrator=args.integrator, dtype=args.dtype,
                               store=args.store, **commands.run_options(args), **_junction(args))


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


def plot(ds, path):
    """Empirical CDF of every parameter point into one PNG."""
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis.plots import plot_cdf

    sample = ds[next(v for v in ("switching_current", "retrapping_current", "escape_time") if v in ds)]
    sweep = [d for d in sample.dims if d != "realization"]
    points = sample.stack(point=sweep).transpose("point", ...) if sweep else [sample]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for point in points:
        label = ", ".join(f"{d}={float(point[d]):.4g}" for d in sweep) or "simulation"
        plot_cdf(point.copy(data=point.values), ax=ax, label=label)
        if "cdf" in ds:  # method="rates": the Fulton-Dunkleberger CDF the samples were drawn from
            cdf = ds["cdf"].sel({d: point[d] for d in sweep}) if sweep else ds["cdf"]
            ax.plot(ds["bias"], cdf, "k--", lw=0.8)
    ax.set_title(ds.attrs["model"])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    """Escape rate (log scale) against the first swept parameter, with error bars, into a PNG."""
    commands.use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    rate = ds.rate if ds.rate.ndim else ds.rate.expand_dims("point")
    dim = rate.dims[0]
    others = [d for d in rate.dims if d != dim]
    lines = rate.stack(line=others).transpose("line", ...) if others else [rate]
    errors = ds.rate_stderr.broadcast_like(rate)
    errors = errors.stack(line=others).transpose("line", ...) if others else [errors]
    for line, error in zip(lines, errors):
        x = line[dim].values if dim in line.coords else np.arange(line.size)
        ax.errorbar(x, line.values, yerr=error.values, fmt="o-", ms=3, capsize=2)
    ax.set_yscale("log")
    ax.set_xlabel(dim)
    ax.set_ylabel("escape rate [1 / time unit]")
    ax.set_title(ds.attrs["model"])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
