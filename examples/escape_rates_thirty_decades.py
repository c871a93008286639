"""
Escape rates over thirty decades
================================

``escape_rates`` measures the escape rate :math:`\\Gamma(\\gamma)` of the washboard well, the
inverse mean first-passage time from the thermal state to the next well, by direct first
passage where the barrier is low and by forward flux sampling where escape is far too rare to
wait for. Here :math:`\\gamma` runs from 0.05 to 0.9 at :math:`\\theta = 0.03` (:math:`V_0 = 1`):
barriers of 2 to 60 :math:`\\theta`, rates over about 27 decades. Overdamped (damping 1) the
measured rates are compared with the exact :math:`1/\\text{MFPT}` (a double integral), underdamped
(damping 0.5, BAOAB) with Mel'nikov-Meshkov::

    python examples/escape_rates_thirty_decades.py          # CPU: rates to 40%, h = 0.05
    python examples/escape_rates_thirty_decades.py --gpu    # rates to 3%, h = 0.01

At the CPU size's coarse step the overdamped rates carry Euler's time-step bias, which acts on
:math:`\\ln\\Gamma` in proportion to the barrier: the measured rate falls to about 0.3 of the
exact one at 60 :math:`\\theta`. The bias shrinks in proportion to :math:`h`: at
:math:`h\\kappa = 0.004` (``benchmarks.bench_rates``) the rates agree with the exact ones from 2 to
60 :math:`\\theta` within 4 standard errors plus the stated bound (page "Switching histograms at
real sweep rates").

Writes escape_rates.nc and escape_rates.png.
"""

import argparse
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.josephson import theory  # noqa: E402

THETA = 0.03
GAMMA = np.array([0.05, 0.2, 0.35, 0.5, 0.65, 0.78, 0.86, 0.9])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="GPU size")
    parser.add_argument("--output", default="escape_rates")
    args = parser.parse_args(argv)
    rel_error, h = (0.03, 0.01) if args.gpu else (0.4, 0.05)
    common = dict(gamma=GAMMA, h=h, rel_error=rel_error, seed=30)
    over = ge.escape_rates(model="overdamped", damping=1.0, D=THETA, **common)
    under = ge.escape_rates(damping=0.5, D=0.5 * THETA, integrator="baoab", **common)
    exact = [1.0 / theory.overdamped_mfpt(V0=1.0, damping=1.0, gamma=g, D=THETA, b=math.asin(g) + 2 * math.pi,
                                          thermal=True) for g in GAMMA]
    melnikov = [theory.escape_rate(g, V0=1.0, damping=0.5, theta=THETA, form="melnikov") for g in GAMMA]
    xr.Dataset({"overdamped": over.rate, "overdamped_stderr": over.rate_stderr, "underdamped": under.rate,
                "underdamped_stderr": under.rate_stderr, "barrier": over.barrier}).to_netcdf(f"{args.output}.nc")
    z = (over.rate.values - exact) / over.rate_stderr.values
    print(f"overdamped: {over.rate.values.max() / over.rate.values.min():.1e} between the extremes; "
          f"z against the exact rate from {z.min():+.1f} to {z.max():+.1f} (at h = {h}; Euler's time-step bias "
          "of ln(rate) grows with the barrier)")
    print("underdamped / Mel'nikov-Meshkov:", np.round(under.rate.values / melnikov, 2))

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True, height_ratios=(3, 1.3))
    for ds, ref, label, ref_label, marker, color in (
            (over, exact, "overdamped", "exact 1/MFPT", "o", "C0"),
            (under, melnikov, "underdamped, damping 0.5", "Mel'nikov-Meshkov", "s", "C3")):
        methods = ds.method.values
        for name, fill in (("direct", "none"), ("ffs", color)):
            pick = methods == name
            top.errorbar(GAMMA[pick], ds.rate.values[pick], yerr=ds.rate_stderr.values[pick], fmt=marker,
                         color=color, mfc=fill, ms=5, capsize=2, label=f"{label} ({name})")
        top.plot(GAMMA, ref, "-", color=color, lw=1, label=ref_label)
        bottom.errorbar(GAMMA, ds.rate.values / np.asarray(ref), yerr=ds.rate_stderr.values / np.asarray(ref),
                        fmt=marker, color=color, ms=4, capsize=2, label=label)
    bottom.set_ylim(0, 2.5)
    top.set_yscale("log")
    top.set_ylabel(r"escape rate $\Gamma$ [1 / time unit]")
    top.legend(fontsize=7)
    top.set_title(rf"$V_0 = 1$, $\theta = {THETA}$: barriers {float(over.barrier.min()):.0f} to "
                  rf"{float(over.barrier.max()):.0f} $\theta$")
    bottom.axhline(1.0, color="k", lw=0.8)
    bottom.set_ylabel("measured / reference")
    bottom.set_xlabel(r"bias $\gamma$")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)


if __name__ == "__main__":
    main()
