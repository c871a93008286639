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
    """Phase density over time (Januszewski & Kostur 2010, Fig. 4) of the first system."""
    commands.use_agg()
    from ...analysis.plots import plot_field, save

    fraction = (ds.density / ds.attrs["N"]).assign_attrs(long_name="fraction of the oscillators per phase bin")
    save(plot_field(fraction, x="time", y="phase", cmap="viridis"), path)
