"""Subcommand ``kuramoto``."""

from ...core import commands
from ...core.commands import add_parameter, integer, values
from .run import DISTRIBUTIONS, INITIAL, PARAMETERS, SAMPLINGS, kuramoto


def add_arguments(parser):
    """Options of ``kuramoto``."""
    parser.add_argument("--N", type=integer, required=True, help="oscillators per system")
    defaults = dict(width=[1.0], center=[0.0], kT=[0.0], g=[1.0])
    for name, meta in PARAMETERS.items():
        add_parameter(parser, name, meta["long_name"], default=defaults.get(name), required=name in ("K", "h"))
    parser.add_argument("--steps", type=integer, required=True, help="integration steps")
    parser.add_argument("--sample-every", type=integer, required=True,
                        help="record r, psi and the density every N steps")
    parser.add_argument("--realizations", type=integer, default=1, help="independent systems per parameter point")
    parser.add_argument("--frequencies", choices=DISTRIBUTIONS, default="lorentzian")
    parser.add_argument("--sampling", choices=SAMPLINGS, default="random")
    parser.add_argument("--initial", choices=INITIAL, default="uniform")
    parser.add_argument("--bins", type=integer, default=64, help="phase histogram bins")
    commands.add_run_options(parser, "systems")


def run(args):
    """Run ``kuramoto``."""
    kwargs = {k: values(getattr(args, k)) for k in PARAMETERS}
    return kuramoto(N=args.N, steps=args.steps, sample_every=args.sample_every, realizations=args.realizations,
                    frequencies=args.frequencies, sampling=args.sampling, initial=args.initial, bins=args.bins,
                    **kwargs, **commands.run_options(args))


def summary(ds, seconds, output):
    """Oscillator-steps and rate, then the stationary order parameter (second half of the run) per point."""
    work = ds.r.isel(time=0).size * int(ds.attrs["N"]) * int(ds.attrs["steps"])
    commands.header(ds, seconds, work, "oscillator-steps", output)
    stationary = ds.kuramoto.order_parameter()
    if ds.sizes.get("realization", 1) < 2:  # one system: its time average, with no error across systems
        stationary = stationary[["mean"]]
    commands.print_table(stationary.rename(mean="<r> (second half)"))


def plot(ds, path):
    """Order parameter ``r(t)`` of every swept point with theory's stationary ``r``, over phase-density panels.

    Top: ``r`` over time, one line per parameter point (the mean over its systems, with the
    standard error as error bars when there are several), and the stationary ``r`` of
    Kuramoto's theory (Lorentzian frequencies, no noise, N -> infinity) dashed in the same
    colour. Below: the phase density over time of each point, one panel each (mean over its
    systems; Januszewski & Kostur 2010, Fig. 4).
    """
    commands.use_agg()
    import matplotlib.pyplot as plt
    import numpy as np

    from ...analysis import plots
    from .theory import kuramoto_order_parameter

    r = ds["r"]
    sweep = [d for d in r.dims if d not in ("realization", "time")]
    points = list(np.ndindex(*(r.sizes[d] for d in sweep)))
    shown = points[:_PANELS]
    columns = min(len(shown), 3)
    rows = -(-len(shown) // columns)
    fig = plt.figure(figsize=(4.6 * max(columns, 2), 3.6 + 3.0 * rows), layout="constrained")
    grid = fig.add_gridspec(1 + rows, columns, height_ratios=[1.15] + [1.0] * rows)
    top = fig.add_subplot(grid[0, :])
    time = np.asarray(ds["time"].values, dtype=float)
    lorentzian = str(ds.attrs.get("frequencies", "")).startswith("lorentzian")
    fraction = (ds["density"] / float(ds.attrs["N"])).assign_attrs(
        long_name="fraction of oscillators per bin")
    panels = []
    for number, index in enumerate(shown):
        at = dict(zip(sweep, index))
        line = r.isel(at)
        systems = line.sizes.get("realization", 1)
        mean = line.mean("realization") if "realization" in line.dims else line
        error = line.std("realization", ddof=1) / np.sqrt(systems) if systems > 1 else None
        where = plots.point_label(line, sweep)
        text = f"mean of {systems} systems \u00b1 1 stderr" if systems > 1 else "one system"
        bars = top.errorbar(time, mean.values, yerr=None if error is None else error.values, capsize=2 if systems > 1
                            else 0, lw=1.2, label=", ".join(filter(None, [where, text])))
        K, width, kT = (_value(ds, line, k) for k in ("K", "width", "kT"))
        if lorentzian and None not in (K, width, kT) and kT == 0:
            top.axhline(float(kuramoto_order_parameter(K, width)), color=bars.lines[0].get_color(), ls="--", lw=1,
                        label="theory: stationary r (Lorentzian, N \u2192 \u221e)" + (f", {where}" if where else ""))
        panel = fig.add_subplot(grid[1 + number // columns, number % columns])
        density = fraction.isel(at)
        density = density.mean("realization", keep_attrs=True) if "realization" in density.dims else density
        plots.plot_field(density, x="time", y="phase", ax=panel, cmap="viridis", vmin=0.0,
                         vmax=float(fraction.max()))
        panel.set_title(", ".join(filter(None, [where, f"mean of {systems} systems" if systems > 1 else ""]))
                        or "phase density", fontsize="small")
        panels.append(panel)
    top.set_xlabel(plots.axis_label(ds["time"]))
    top.set_ylabel("order parameter r")
    top.set_ylim(0.0, 1.02)
    plots.legend_outside(top)
    more = f" (first {len(shown)} of {len(points)} points)" if len(points) > len(shown) else ""
    fig.suptitle(f"Kuramoto oscillators: order parameter and phase density{more}\n"
                 f"N = {int(ds.attrs['N'])}, {ds.attrs.get('frequencies', '')} frequencies")
    plots.footnote(fig, [plots.time_unit_note(ds["time"])])
    plots.save(panels[-1], path)


#: Most phase-density panels :func:`plot` draws (the title says when there are more points).
_PANELS = 6


def _value(ds, line, name):
    """Parameter ``name`` at one plotted point: its coordinate there, else the run's attribute (None if neither)."""
    if name in line.coords and line.coords[name].ndim == 0:
        return float(line.coords[name])
    value = ds.attrs.get(name)
    return None if value is None else float(value)
