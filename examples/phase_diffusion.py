"""
Phase diffusion and retrapping (Li et al. 2007 junction)
========================================================

A measured switching current is the bias at which a voltage appears. The Li et al. (2007)
junction (R = 250 ohm, C = 88 fF, Ic = 0.748 uA; Q = 3.5) retraps an escaped phase below
I_r = 0.353 Ic, and at 1.2 K most escapes happen below it: they make no voltage. The three
panels::

    python examples/phase_diffusion.py          # CPU (a minute): rates to 30-50%, h = 4e-3, small samples
    python examples/phase_diffusion.py --gpu    # rates to 1%, h = 1e-3, 30,000 samples

1. the distributions at 1/s, 200/s and 1e4/s under ``criterion="escape"`` (the first escape)
   and ``criterion="voltage"`` (the junction runs 100 wells), from one rate curve each, with
   the noise-free retrapping current marked;
2. the width of the voltage-switching distribution at 200/s against temperature: it grows
   with T, then shrinks above a crossover temperature, where the escape criterion's keeps
   growing; the crossover estimate is where the escape distribution's mean meets the mean
   retrapping current measured at the same temperature;
3. switching (voltage) and retrapping histograms by direct ramps, at 0.3 K (hysteretic) and
   at 1.2 K, where the running state is itself unstable and the two overlap.

Writes phase_diffusion.nc (the Li junction under the voltage criterion) and phase_diffusion.png.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.josephson import fulton_dunkleberger as fd  # noqa: E402
from gpuensembles.models.josephson import theory  # noqa: E402

JUNCTION = dict(R=250.0, C=88e-15, Ic=0.748e-6)
SWEEP_RATES = [1.0, 200.0, 1e4]


def sizes(gpu):
    """Rate precision, step, samples, temperatures and the direct ramps' sweep rate."""
    if gpu:
        return dict(rel_error=0.01, turnover_rel=0.03, h=1e-3, n=30_000, pair_sweep=1e5,
                    temperatures=[0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0])
    return dict(rel_error=0.3, turnover_rel=0.5, h=4e-3, n=300, pair_sweep=2e7, temperatures=[0.3, 0.6, 1.0, 1.6])


def distribution(T, sweep_rate, criterion, s, realizations=2000, seed=1):
    """Switching currents of the junction at temperature ``T`` from one rate curve (``method="rates"``)."""
    with warnings.catch_warnings():  # the escape criterion warns that it counts escapes below I_r: that is the point
        warnings.filterwarnings("ignore", message="criterion='escape'", category=RuntimeWarning)
        return ge.switching_currents(physical=dict(JUNCTION, T=T, sweep_rate=sweep_rate), h=s["h"],
                                     integrator="baoab", method="rates", criterion=criterion,
                                     rel_error=s["rel_error"], realizations=realizations, seed=seed)


def width(ds, criterion):
    """Mean and width of the computed distribution with their errors from the rate curve's."""
    name = "rate" if criterion == "escape" else "switching_rate"
    curve = fd.make_curve(ds.rate_gamma.values, ds[name].values, ds[f"{name}_stderr"].values)
    return fd.moments(curve, float(ds.attrs["dgamma"]) / float(ds.attrs["h"]), draws=50,
                      gamma_start=float(ds.attrs["gamma_start"]), gamma_end=float(ds.attrs["gamma_end"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="GPU size")
    parser.add_argument("--output", default="phase_diffusion")
    args = parser.parse_args(argv)
    s = sizes(args.gpu)
    units = ge.josephson.normalize(**JUNCTION, T=1.2)
    Q = float(theory.quality_factor(float(units["V0"]), float(units["damping"])))
    retrapping = float(theory.retrapping_current(Q))
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.4))

    # 1. both criteria at three sweep rates, from one rate curve each
    by = {c: distribution(1.2, SWEEP_RATES, c, s, realizations=s["n"], seed=2007) for c in ("escape", "voltage")}
    by["voltage"].to_netcdf(f"{args.output}.nc")
    for i, rate in enumerate(SWEEP_RATES):
        for criterion, style in (("escape", "--"), ("voltage", "-")):
            one = by[criterion].isel(sweep_rate=i)
            x = one.bias.values * JUNCTION["Ic"] * 1e6
            left.plot(x, one.cdf, style, color=f"C{i}", lw=1.2,
                      label=f"{rate:g}/s, {criterion}" if criterion == "voltage" or i == 0 else f"{rate:g}/s, escape")
            print(f"{rate:g}/s {criterion}: mean switching current "
                  f"{float(one.switching_current_A.mean()) * 1e6:.4f} uA")
    left.axvline(retrapping * JUNCTION["Ic"] * 1e6, color="k", lw=0.8, ls=":")
    left.text(retrapping * JUNCTION["Ic"] * 1e6, 0.5, f" I_r = {retrapping:.3f} Ic", fontsize=8)
    left.set_xlabel("switching current [uA]")
    left.set_ylabel("P(I_sw <= I)")
    left.set_title(f"Li junction, 1.2 K (Q = {Q:.2f}): escape (dashed) and voltage", fontsize=10)
    left.legend(fontsize=7, loc="upper left")

    # 2. the width of the voltage distribution against temperature, at 200/s
    rows = []
    for T in s["temperatures"]:
        ds = distribution(T, 200.0, "voltage", dict(s, rel_error=s["turnover_rel"]))
        retrap = ge.retrapping_currents(physical=dict(JUNCTION, T=T, sweep_rate=s["pair_sweep"]), h=s["h"],
                                        realizations=s["n"], seed=3).fpt.mean()
        rows.append((T, width(ds, "voltage"), float(retrap["mean"])))
    T = np.array([r[0] for r in rows])
    voltage = np.array([[r[1]["std"], r[1]["std_stderr"], r[1]["mean"]] for r in rows])
    escape = []  # the escape criterion's width from the Mel'nikov-Meshkov rate (a formula: no simulation)
    for t in T:
        u = ge.josephson.normalize(**JUNCTION, T=t, sweep_rate=200.0)
        V0, damping, theta = (float(u[k]) for k in ("V0", "damping", "theta"))
        curve = fd.theory_curve(theory.rate_formula("underdamped", V0, damping, theta), gamma_start=0.0,
                                gamma_end=1.0, V0=V0, theta=theta)
        escape.append(fd.moments(curve, 200.0 * float(u["time_unit"]), draws=0))
    gap = np.array([e["mean"] for e in escape]) - np.array([r[2] for r in rows])
    meets = np.flatnonzero((gap[:-1] > 0) & (gap[1:] <= 0))
    middle.errorbar(T, voltage[:, 0] * 1e3, yerr=2 * voltage[:, 1] * 1e3, fmt="o-", ms=4, capsize=2,
                    label="voltage (rates, error bars 2 SE)")
    middle.plot(T, [e["std"] * 1e3 for e in escape], "s--", ms=3, color="0.5", label="escape (Mel'nikov-Meshkov)")
    if meets.size:
        i = meets[0]
        crossover = T[i] + (T[i + 1] - T[i]) * gap[i] / (gap[i] - gap[i + 1])
        middle.axvline(crossover, color="k", lw=0.8, ls=":")
        middle.text(crossover, middle.get_ylim()[1] * 0.9, f" escape mean = retrapping\n mean at {crossover:.2f} K",
                    fontsize=8, va="top")
        print(f"crossover estimate (escape mean = mean retrapping current): {crossover:.2f} K; widest voltage "
              f"distribution at {T[int(np.argmax(voltage[:, 0]))]:g} K")
    middle.set_xlabel("temperature [K]")
    middle.set_ylabel("width of the distribution [1e-3 Ic]")
    middle.set_title("200/s: the width turns over where escapes retrap", fontsize=10)
    middle.legend(fontsize=7)

    # 3. switching and retrapping by direct ramps, below and above the crossover
    for j, T in enumerate((0.3, 1.2)):
        kw = dict(physical=dict(JUNCTION, T=T, sweep_rate=s["pair_sweep"]), h=s["h"], integrator="baoab",
                  realizations=s["n"], seed=4)
        switching = ge.switching_currents(**kw, criterion="voltage", gamma_start="auto").switching_current_A
        retrapped = ge.retrapping_currents(**kw).retrapping_current_A
        bins = np.linspace(0.25, 0.75, 101)
        right.hist(switching.values.ravel() * 1e6, bins=bins, color=f"C{2 * j}", alpha=0.6,
                   label=f"{T:g} K switching (voltage)")
        right.hist(retrapped.values.ravel() * 1e6, bins=bins, color=f"C{2 * j + 1}", alpha=0.6,
                   label=f"{T:g} K retrapping")
    right.set_xlabel("current [uA]")
    right.set_ylabel("count")
    right.set_title(f"direct ramps at {s['pair_sweep']:g}/s", fontsize=10)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=110)


if __name__ == "__main__":
    main()
