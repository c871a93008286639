"""
Switching currents of a measured junction (Pierro et al. 2018, Fig. 11b)
========================================================================

Switching-current distribution of the Li et al. (2007) junction::

    python examples/switching_li2007.py                    # CPU: 150 realizations, 2e7/s sweep, BAOAB
    python examples/switching_li2007.py --gpu              # 30,000 realizations, 2e5/s sweep
    python examples/switching_li2007.py --gpu --sweep-rate 200 --realizations 30000   # the experiment

R = 250 ohm, C = 88 fF, Ic = 0.748 uA, T = 1.2 K, Euler with h = 1e-4 (V0 = 211, damping = 4.11,
theta = 14.2); the CPU size takes BAOAB with h = 1e-3 instead, ten times fewer steps. The real
200/s sweep needs ~1.9e11 Euler steps per realization (hours on a GPU: see the benchmarks),
so the defaults sweep faster; the comparison with the adiabatic Fulton-Dunkleberger CDF
(Mel'nikov-Meshkov rate, here equal to Kramers' moderate-damping rate) holds at any slow
enough sweep. Switching is counted when the phase reaches the next well
(passage="next_well"), the escape that rate theory describes.
Writes li2007.nc and li2007.png (CDF and its difference to theory).
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpuensembles as ge  # noqa: E402

JUNCTION = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="GPU size")
    parser.add_argument("--sweep-rate", type=float, default=None, help="(dI/dt)/Ic in 1/s")
    parser.add_argument("--realizations", type=int, default=None)
    parser.add_argument("--output", default="li2007")
    args = parser.parse_args(argv)
    sweep = args.sweep_rate or (2e5 if args.gpu else 2e7)
    n = args.realizations or (30_000 if args.gpu else 150)
    h, integrator = (1e-4, "euler") if args.gpu else (1e-3, "baoab")
    ds = ge.switching_currents(physical=dict(JUNCTION, sweep_rate=sweep), h=h, integrator=integrator, realizations=n,
                               seed=2007, passage="next_well")
    ds.to_netcdf(f"{args.output}.nc")
    # one callable for the comparison and the plot: it keeps the Mel'nikov-Meshkov rates it evaluates
    fulton_dunkleberger = ds.fpt.theory_cdf("melnikov")
    comparison = ds.fpt.compare(fulton_dunkleberger)
    print(f"sweep {sweep:g}/s, {n} realizations: mean switching current "
          f"{float(ds.switching_current_A.mean()) * 1e6:.4f} uA; KS against Fulton-Dunkleberger "
          f"{float(comparison.ks_statistic):.4f} (p = {float(comparison.ks_pvalue):.3f})")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 6), sharex=True, height_ratios=(3, 1))
    ds.fpt.plot_cdf(ax=top, theory=fulton_dunkleberger)
    top.set_xlabel("")
    top.set_title(f"Li et al. (2007) junction, sweep {sweep:g}/s")
    bottom.plot(comparison.x, comparison.difference)
    bottom.axhline(0, color="k", lw=0.5)
    bottom.set_ylabel("simulation - theory")
    bottom.set_xlabel("switching current I_sw / I_c")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)


if __name__ == "__main__":
    main()
