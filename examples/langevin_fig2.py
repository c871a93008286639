"""
Coarse-grained density of driven Brownian particles (Januszewski & Kostur 2010, Fig. 2)
=======================================================================================

The Stewart-McCumber particle in the anomalous-response regime of Januszewski & Kostur 2010, Fig. 2:
``a = 4.2, g = 0.9, w = 4.9, kT = 0.001, f = 0.1``, time step ``0.01 * 2 pi / w``, run to
``t = 2000 * 2 pi / w``. Instead of the seed's 30 GB trajectory dump, the density per
unit cell is counted on the device every drive period, and a 100-point sweep of ``a``
gives the mean velocity curve in the same launch::

    python examples/langevin_fig2.py          # CPU size: 2048 particles, 200 periods
    python examples/langevin_fig2.py --gpu    # the seed's 2^19 particles, 2000 periods

Writes langevin_fig2.nc and langevin_fig2.png (density over time, final density, and
the mean velocity against ``a``).
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="the seed's size (needs a GPU)")
    parser.add_argument("--output", default="langevin_fig2")
    args = parser.parse_args(argv)
    w = 4.9
    period_steps = 100
    periods = 2000 if args.gpu else 200
    particles = 1 << 19 if args.gpu else 2048
    common = dict(w=w, g=0.9, f=0.1, kT=0.001, h=2 * np.pi / w / period_steps, seed=4, start="uniform")
    ds = ge.langevin(a=4.2, steps=periods * period_steps, sample_every=period_steps, record=(),
                     histogram=(-periods // 4, periods // 4), realizations=particles, **common)
    ds.to_netcdf(f"{args.output}.nc")
    sweep = ge.langevin(a=np.linspace(0.0, 8.0, 100 if args.gpu else 20), steps=periods * period_steps // 4,
                        transient=periods * period_steps // 20, realizations=4096 if args.gpu else 64, **common)
    velocity = sweep.langevin.velocity()

    density = ds.langevin.density()
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.4))
    density.plot(ax=left, x="time", y="cell", cmap="viridis", robust=True)
    left.set_title(f"{particles} particles, a = 4.2: density per unit cell")
    density.isel(time=-1).plot.step(ax=middle, where="post")
    middle.set_title(f"t = {periods} drive periods")
    right.errorbar(sweep.a, velocity["mean"], yerr=velocity["stderr"], fmt=".-")
    right.axhline(0, color="k", lw=0.5)
    right.set(xlabel="a", ylabel="<<v>>", title="mean velocity (f = 0.1 > 0)")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)
    outside = int(ds.density_below.isel(time=-1) + ds.density_above.isel(time=-1))
    at_42 = float(velocity["mean"].sel(a=4.2, method="nearest"))
    print(f"{ds.attrs['device']}: <<v>>(a=4.2) from the sweep {at_42:.4f};"
          f" {outside} particles outside the histogram range")


if __name__ == "__main__":
    main()
