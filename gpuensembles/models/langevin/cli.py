"""Subcommand ``langevin``."""

import numpy as np

from ...core import commands
from ...core.commands import add_parameter, integer, values
from . import physics
from .run import DTYPES, PARAMETERS, RECORDABLE, langevin


def add_arguments(parser):
    """Options of ``langevin``."""
    defaults = dict(a=[0.0], w=[1.0], g=[1.0], f=[0.0], kT=[0.0], V0=[1.0])
    for name, meta in PARAMETERS.items():
        add_parameter(parser, name, meta["long_name"], default=defaults.get(name), required=name == "h")
    parser.add_argument("--steps", type=integer, required=True, help="integration steps per trajectory")
    parser.add_argument("--realizations", type=integer, required=True, help="trajectories per parameter point")
    parser.add_argument("--transient", type=integer, default=0, help="steps before the velocity average starts")
    parser.add_argument("--sample-every", type=integer, help="keep samples every N steps (a time dimension)")
    parser.add_argument("--record", nargs="*", choices=RECORDABLE, help="what to sample (default: x and v)")
    parser.add_argument("--histogram", type=integer, nargs=2, metavar=("LO", "HI"),
                        help="unit cells to count trajectories in")
    parser.add_argument("--model", choices=physics.MODELS, default="underdamped")
    parser.add_argument("--integrator", choices=physics.INTEGRATORS, default="srk2")
    parser.add_argument("--start", choices=physics.STARTS, default="rest")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    commands.add_run_options(parser, "realizations")


def run(args):
    """Run ``langevin``."""
    kwargs = {k: values(getattr(args, k)) for k in PARAMETERS}
    return langevin(steps=args.steps, realizations=args.realizations, transient=args.transient,
                    sample_every=args.sample_every, record=args.record, histogram=args.histogram, model=args.model,
                    integrator=args.integrator, start=args.start, dtype=args.dtype, **kwargs,
                    **commands.run_options(args))


def summary(ds, seconds, output):
    """Steps and rate, then ``<<v>>`` per parameter point."""
    commands.header(ds, seconds, ds.x_end.size * int(ds.attrs["steps"]), "steps", output)
    commands.print_table(ds.langevin.velocity().rename(mean="<<v>>", stderr="<<v>> stderr"))


def plot(ds, path):
    """Coarse-grained density over time (Januszewski & Kostur 2010, Fig. 2) if recorded, else <<v>> over the sweep."""
    commands.use_agg()
    from ...analysis.plots import footnote, plot_field, save, time_unit_note, time_unit_symbol

    if "density" in ds and "time" in ds.density.dims:
        density = ds.langevin.density()
        ax = plot_field(density, x="time", y="cell", cmap="viridis")
        ax.set_title(f"Brownian particles in a periodic potential: density over time\n{_fixed(ds, density.dims)}",
                     fontsize="medium")
        footnote(ax.figure, [time_unit_note(ds["time"])])
        return save(ax, path)
    v = ds.langevin.velocity()
    mean = v["mean"].assign_attrs(long_name="mean velocity <<v>> (error bars: 1 stderr)")
    if mean.ndim == 0:  # one parameter point: a single value with its error bar
        mean, v["stderr"] = mean.expand_dims(point=[0]), v["stderr"].expand_dims(point=[0])
    ax = plot_field(mean, error=v["stderr"])
    ax.set_ylabel(f"mean velocity <<v>> [periods / {time_unit_symbol(mean.attrs.get('time_unit', ''))}]"
                  "\n(error bars: 1 stderr)")
    ax.set_title(f"Brownian particles in a periodic potential: mean velocity\n{_fixed(ds, mean.dims)}",
                 fontsize="medium")
    footnote(ax.figure, [time_unit_note(ds["mean_velocity"]) if "mean_velocity" in ds else None])
    save(ax, path)


def _fixed(ds, swept) -> str:
    """``"a = 1, f = 0.1, ..."``: the model's parameters that are not swept (from the attributes)."""
    names = [k for k in ("a", "w", "g", "f", "kT", "h", "V0") if k in ds.attrs and k not in swept]
    return ", ".join(f"{k} = {float(ds.attrs[k]):.4g}" for k in names if not np.ndim(ds.attrs[k]))
