"""
Switching histograms at real sweep rates (Li et al. 2007 junction)
==================================================================

The junction of Li et al. (2007) at the sweep rates of experiments, 1/s, 200/s and 1e4/s,
from ONE curve of escape rates (``switching_currents(method="rates")``)::

    python examples/switching_rates_li2007.py          # CPU: rates to 50%, h = 4e-3, 2000 samples per sweep rate
    python examples/switching_rates_li2007.py --gpu    # rates to 1%, h = 1e-3, 100,000 samples per sweep rate

R = 250 ohm, C = 88 fF, Ic = 0.748 uA, T = 1.2 K (V0 = 211, damping = 4.11, theta = 14.2),
BAOAB with h = 1e-3 (the CPU size takes h = 4e-3, still a hundredth of the plasma period,
for a quarter of the steps). A direct simulation of the 1/s ramp would take ~4e11 steps per
realization; here the escape rate Gamma(gamma) is measured at a few dozen biases (at most 64)
and each sweep rate's switching-current distribution follows from Fulton-Dunkleberger,
``P(gamma) = 1 - exp(-(1/gamma_dot) int Gamma)``. The figure shows the three distributions
(samples, the computed CDF with its error band, and the adiabatic Mel'nikov-Meshkov theory)
and the measured rate curve against the Mel'nikov-Meshkov rate.
Writes li2007_rates.nc and li2007_rates.png.
"""

import argparse
import functools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.josephson import theory  # noqa: E402

JUNCTION = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2)
SWEEP_RATES = [1.0, 200.0, 1e4]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="GPU size")
    parser.add_argument("--rel-error", type=float, default=None, help="relative error of each escape rate")
    parser.add_argument("--realizations", type=int, default=None, help="samples per sweep rate")
    parser.add_argument("--output", default="li2007_rates")
    args = parser.parse_args(argv)
    # the CPU size is a demonstration (half a minute on 2 cores): the rates' cost grows as 1/rel_error^2 and 1/h
    rel_error = args.rel_error or (0.01 if args.gpu else 0.5)
    n = args.realizations or (100_000 if args.gpu else 2000)
    h = 1e-3 if args.gpu else 4e-3
    ds = ge.switching_currents(physical=dict(JUNCTION, sweep_rate=SWEEP_RATES), h=h, integrator="baoab",
                               method="rates", rel_error=rel_error, realizations=n, seed=2007)
    ds.to_netcdf(f"{args.output}.nc")
    print(f"{ds.sizes['rate_gamma']} escape rates ({int(ds.rate_steps.sum()):.3g} steps) for "
          f"{len(SWEEP_RATES)} sweep rates; adiabaticity up to {float(ds.adiabaticity.max()):.2g}")
    units = ge.josephson.normalize(**JUNCTION)
    V0, damping, theta = (float(units[k]) for k in ("V0", "damping", "theta"))
    # cached: the three theory CDFs integrate the rate on the same biases
    melnikov = functools.cache(functools.partial(theory.escape_rate, V0=V0, damping=damping, theta=theta,
                                                 form="melnikov"))

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for rate in ds.sweep_rate.values:
        one = ds.sel(sweep_rate=rate)
        stats = one.fpt.mean()
        mean, stderr = (float(stats[k]) * JUNCTION["Ic"] * 1e6 for k in ("mean", "stderr"))
        print(f"sweep {rate:g}/s: mean switching current {mean:.4f} +- {stderr:.4f} uA")
        x = np.sort(one.switching_current.values)
        line, = left.step(x, np.arange(1, x.size + 1) / x.size, where="post", lw=0.8, label=f"{rate:g}/s samples")
        cdf, err = one.cdf.values, one.cdf_stderr.values
        left.fill_between(one.bias, cdf - 2 * err, cdf + 2 * err, color=line.get_color(), alpha=0.3, lw=0)
        theory_cdf = theory.fulton_dunkleberger_cdf(one.bias.values, gamma_dot=float(one.dgamma) / h,
                                                    rate=melnikov, gamma_start=float(ds.attrs["gamma_start"]))
        left.plot(one.bias, theory_cdf, "--", color=line.get_color(), lw=0.8)
    left.set_xlabel("switching current I_sw / I_c")
    left.set_ylabel("P(I_sw <= I)")
    left.set_title("samples, CDF +- 2 SE (band), Mel'nikov-Meshkov (dashed)", fontsize=9)
    left.legend(fontsize=8)
    right.errorbar(ds.rate_gamma, ds.rate, yerr=ds.rate_stderr, fmt="o", ms=3, label="measured (next well)")
    grid = np.linspace(float(ds.rate_gamma.min()), float(ds.rate_gamma.max()), 200)
    right.plot(grid, [melnikov(g) for g in grid], "k-", lw=0.8, label="Mel'nikov-Meshkov")
    right.set_yscale("log")
    right.set_xlabel("bias gamma")
    right.set_ylabel("escape rate [1 / (hbar / E_C)]")
    right.legend(fontsize=8)
    fig.suptitle("Li et al. (2007) junction at 1, 200 and 1e4 /s from one rate curve")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)


if __name__ == "__main__":
    main()
