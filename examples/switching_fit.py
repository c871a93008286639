"""
From measured switching histograms to the junction: rates, fits, and the quantum crossover
==========================================================================================

Synthetic "measurements" with a stated truth, analysed the way an experiment's are. The junction:
Ic = 10 uA, C = 5 pF, R = 100 ohm (Q = 39 at zero bias), ramped at 1 mA/s (100 Ic/s), at bath
temperatures from 10 to 250 mK. Its switching is drawn by the package's Fulton-Dunkleberger sampler
from the escape rate of macroscopic quantum tunnelling plus thermal activation (Mel'nikov-Meshkov)
at the bath temperature, 2,000 ramps per temperature::

    python examples/switching_fit.py            # a few seconds on a CPU

1. the escape rates of three histograms by the Fulton-Dunkleberger inversion
   (``rates_from_histogram``), with the escape temperature their rates imply;
2. the switching probability of each histogram beside the fitted ``"thermal"`` model;
3. ``T_esc(T)`` from the thermal fits: it follows the bath down to the crossover temperature T*
   and saturates below it, where tunnelling takes over.

Writes switching_fit.nc (the fits over temperature) and switching_fit.png.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.josephson import fulton_dunkleberger as fd  # noqa: E402
from gpuensembles.models.josephson import junction, likelihood, theory  # noqa: E402

IC, C, R, SWEEP = 10e-6, 5e-12, 100.0, 1e-3  # A, F, ohm, A/s
TEMPERATURES = np.array([0.01, 0.02, 0.03, 0.04, 0.06, 0.09, 0.13, 0.18, 0.25])  # K
EVENTS = 2000


def units():
    """``V0``, ``damping``, ``E_C`` and the time unit of the junction (normalized units)."""
    n = ge.josephson.normalize(R=R, C=C, Ic=IC, T=1.0)
    return tuple(float(n[k]) for k in ("V0", "damping", "E_C", "time_unit"))


def measured(T, stream):
    """``EVENTS`` switching currents (A) of the junction at bath temperature ``T``: the 'measurement'."""
    V0, damping, E_C, t0 = units()
    theta = junction.BOLTZMANN * T / E_C
    gamma = np.linspace(0.9, 0.99999, 4000)
    log_rate = np.logaddexp(np.log(theory.mqt_rate(gamma, V0=V0, damping=damping)),
                            likelihood.thermal_log_rate(gamma, V0=V0, damping=damping, theta=theta))
    curve = fd.make_curve(gamma, np.exp(log_rate))
    return IC * fd.draw(curve, SWEEP / IC * t0, seed=2026, stream=stream, first=0, count=EVENTS, gamma_start=0.9,
                        gamma_end=0.99999)


def main(argv=None):
    parser = argparse.ArgumentParser(description="From measured switching histograms to the junction")
    parser.add_argument("--output", default="switching_fit")
    args = parser.parse_args(argv)
    data = np.array([measured(T, k) for k, T in enumerate(TEMPERATURES)])

    fit = ge.josephson.fit_switching(data, sweep_rate=SWEEP, units="A", C=C, R=R, temperature=TEMPERATURES)
    fit.to_netcdf(f"{args.output}.nc")
    low = ge.josephson.fit_switching(data[:2], sweep_rate=SWEEP, units="A", C=C, R=R, temperature=TEMPERATURES[:2],
                                     model="quantum")
    print(f"truth: Ic = {IC * 1e6:.4f} uA; quantum fit at 10 and 20 mK: Ic = "
          + ", ".join(f"{v * 1e6:.4f} +- {e * 1e6:.4f}" for v, e in zip(low.Ic.values, low.Ic_stderr.values)) + " uA")
    print("bath T (mK)   T_esc (mK)      T* (mK)   p")
    for T, t, e, star, p in zip(TEMPERATURES, fit.T_esc.values, fit.T_esc_stderr.values, fit.T_star.values,
                                fit.p_value.values):
        print(f"{T * 1e3:11.0f}   {t * 1e3:6.1f} +- {e * 1e3:4.1f}   {star * 1e3:6.1f}   {p:.2f}")

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    for k in (0, 4, 8):
        rates = ge.josephson.rates_from_histogram(data[k], sweep_rate=SWEEP, units="A", bins=30)
        ok = np.isfinite(rates.rate)
        axes[0].errorbar(rates.bias[ok] * 1e6, rates.rate[ok], yerr=rates.rate_stderr[ok], fmt=".",
                         label=f"{TEMPERATURES[k] * 1e3:.0f} mK")
    axes[0].set(yscale="log", xlabel="bias current (uA)", ylabel="escape rate (1/s)",
                title="Fulton-Dunkleberger inversion")
    axes[0].legend(fontsize=8)
    for k in (0, 4, 8):
        point = fit.isel(temperature=k)
        line, = axes[1].plot(point.current * 1e6, point.empirical_cdf, ".", ms=2,
                             label=f"{TEMPERATURES[k] * 1e3:.0f} mK")
        axes[1].plot(point.current * 1e6, point.model_cdf, "-", lw=1, color=line.get_color())
    axes[1].set(xlabel="switching current (uA)", ylabel="switching probability", title="data (dots), thermal fit")
    axes[1].legend(fontsize=8)
    ax = axes[2]
    ax.errorbar(TEMPERATURES * 1e3, fit.T_esc * 1e3, yerr=fit.T_esc_stderr * 1e3, fmt="o", label="T_esc (thermal fit)")
    ax.plot(TEMPERATURES * 1e3, TEMPERATURES * 1e3, "k--", lw=1, label="T_esc = T")
    ax.axvline(float(fit.T_star.median()) * 1e3, color="r", lw=1, label="T* (crossover)")
    ax.set(xlabel="bath temperature (mK)", ylabel="escape temperature (mK)", title="the quantum crossover")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=110)


if __name__ == "__main__":
    main()
