"""Subcommand ``ising``."""

import numpy as np
import xarray as xr

from ...core import commands
from ...core.commands import add_parameter, integer, values
from .run import KERNELS, STARTS, ising
from .theory import ISING_BETA_C


def add_arguments(parser):
    """Options of ``ising``."""
    parser.add_argument("--L", type=integer, nargs="+", required=True, help="lattice size(s), even")
    add_parameter(parser, "beta", "inverse temperature J / k_B T", required=True)
    parser.add_argument("--sweeps", type=integer, required=True, help="measured sweeps per chain")
    parser.add_argument("--thermalization", type=integer, default=0, help="sweeps discarded first")
    parser.add_argument("--realizations", type=integer, default=1, help="independent chains per (L, beta)")
    parser.add_argument("--measure-every", type=integer, default=1, help="sweeps between measurements")
    parser.add_argument("--bins", type=integer, help="bins of consecutive measurements kept per chain (default 64)")
    parser.add_argument("--start", choices=STARTS, default="hot")
    parser.add_argument("--kernel", choices=KERNELS, default="multispin")
    commands.add_run_options(parser, "groups of lattices")


def run(args):
    """Run ``ising``."""
    return ising(L=values(args.L), beta=values(args.beta), sweeps=args.sweeps, thermalization=args.thermalization,
                 realizations=args.realizations, measure_every=args.measure_every, bins=args.bins, start=args.start,
                 kernel=args.kernel, **commands.run_options(args))


def summary(ds, seconds, output):
    """Spin flips and rate, then energy, specific heat and Binder cumulant with the exact values."""
    sweeps = int(ds.attrs["sweeps"]) + int(ds.attrs["thermalization"])
    flips = sum(int(L) ** 2 for L in np.atleast_1d(ds.L.values)) * ds.beta.size * ds.realization.size * sweeps
    commands.header(ds, seconds, flips, "spin flips", output)
    # compat spelled out: xarray warns that its default will change (the columns share coordinates only)
    table = xr.merge([ds.ising.energy().rename(mean="e", stderr="e stderr"),
                      ds.ising.specific_heat().rename(mean="c", stderr="c stderr"),
                      ds.ising.binder().rename(mean="U4", stderr="U4 stderr"),
                      ds.ising.exact().rename(energy="e exact", specific_heat="c exact")], compat="no_conflicts")
    commands.print_table(table)


def plot(ds, path):
    """Binder cumulant over beta, one curve per L with its jackknife errors, and the critical beta_c."""
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis.plots import legend_outside, plot_field, save

    binder = ds.ising.binder()
    mean = binder["mean"].assign_attrs(long_name="Binder cumulant U4 (error bars: 1 jackknife stderr)")
    title = (f"2D Ising model: Binder cumulant\n{int(ds.attrs.get('sweeps', 0))} measured sweeps after "
             f"{int(ds.attrs.get('thermalization', 0))} of thermalization, {ds.sizes['realization']} chains per point")
    if "beta" not in mean.dims:
        if mean.ndim == 0:
            mean, binder["stderr"] = mean.expand_dims(beta=[float(ds.beta)]), binder["stderr"].expand_dims(
                beta=[float(ds.beta)])
        else:
            ax = plot_field(mean, error=binder["stderr"])
            ax.set_title(title, fontsize="medium")
            return save(ax, path)
    mean["beta"].attrs.update(ds["beta"].attrs)
    ax = plot_field(mean.transpose("beta", ...), x="beta", error=binder["stderr"].transpose("beta", ...),
                    ax=plt.subplots(figsize=(6.4, 4.4))[1])
    ax.axvline(ISING_BETA_C, color="k", lw=0.8, ls=":", label="theory: critical \u03b2_c = ln(1 + \u221a2) / 2")
    legend_outside(ax)
    ax.set_title(title, fontsize="medium")
    save(ax, path)
