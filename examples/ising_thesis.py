"""
2D Ising: magnetization and specific heat against Onsager (Mandelli 2014)
=========================================================================

The thesis' figures: ``<|m|>`` and the specific heat per spin over ``beta`` for several
lattice sizes, with Onsager's infinite lattice and Yang's magnetization, plus the
Binder cumulants whose crossing marks ``beta_c = ln(1 + sqrt 2) / 2``. The dotted lines
are the exact finite-L specific heats (Kaufman / Ferdinand-Fisher)::

    python examples/ising_thesis.py          # CPU size: L = 8, 16, 32
    python examples/ising_thesis.py --gpu    # L = 16 ... 128, 25 betas, 10^5 sweeps

Writes ising_thesis.nc and ising_thesis.png.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.ising import theory  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="the issue's sizes (needs a GPU)")
    parser.add_argument("--output", default="ising_thesis")
    args = parser.parse_args(argv)
    if args.gpu:
        kw = dict(L=[16, 32, 64, 128], beta=np.linspace(0.38, 0.5, 25), sweeps=100_000, thermalization=10_000,
                  realizations=8)
    else:
        kw = dict(L=[8, 16, 32], beta=np.linspace(0.36, 0.52, 9), sweeps=2_000, thermalization=500, realizations=32)
    ds = ge.ising(**kw, bins=8, start="cold", seed=3)
    ds.to_netcdf(f"{args.output}.nc")

    fine = np.linspace(0.3, 0.6, 400)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for L in ds.L.values:
        one = ds.sel(L=L)
        for ax, result in zip(axes, (one.ising.magnetization(), one.ising.specific_heat(), one.ising.binder())):
            ax.errorbar(one.beta, result["mean"], result["stderr"], marker="o", ms=3, ls="", label=f"L = {L}")
        axes[1].plot(fine, theory.ising_exact(int(L), fine)[1], ":", color=axes[1].lines[-1].get_color())
    axes[0].plot(fine, theory.onsager_magnetization(fine), "k-", lw=1, label="Yang (L = inf)")
    axes[1].plot(fine, theory.onsager_specific_heat(fine), "k-", lw=1, label="Onsager (L = inf)")
    for ax, label in zip(axes, ("<|m|>", "specific heat per spin", "Binder cumulant U4")):
        ax.axvline(theory.ISING_BETA_C, color="0.5", lw=0.8, ls="--")
        ax.set(xlabel="beta = J / k_B T", ylabel=label)
        ax.legend(fontsize=8)
    axes[1].set_ylim(0, None)
    fig.suptitle(f"2D Ising, checkerboard Metropolis, {ds.attrs['kernel']} kernel on {ds.attrs['device']}")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)
    crossings = ds.ising.binder_crossings()
    for i in range(crossings.sizes["pair"]):
        c = crossings.isel(pair=i)
        print(f"Binder L = {int(c.L_small)} / {int(c.L_large)} cross at beta = {float(c['mean']):.4f} "
              f"+- {float(c['stderr']):.4f} (beta_c = {theory.ISING_BETA_C:.4f})")


if __name__ == "__main__":
    main()
