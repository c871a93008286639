"""Switching as a voltage shows it, and retrapping, on the GPU: validation and cost.

    python -m benchmarks.bench_phase_diffusion [--only li,validate,turnover,pair] [--save DIR] [--json FILE]
    python -m benchmarks.bench_phase_diffusion --quick      # tiny sizes on the CPU (a smoke test)

Sections, each printing one table (the figures the docs page "Phase diffusion and
retrapping" quotes):

* ``li``: the Li et al. (2007) junction at 1/s, 200/s and 1e4/s from one rate curve with
  the rates to 1%, under ``criterion="voltage"`` and, in the same run as its baseline, under
  ``criterion="escape"``: wall time (kernels compiled beforehand by a small call), rate
  points, the distributions' means and widths with the rate curve's errors.
* ``validate``: ``method="rates"`` against the direct ramp under the voltage criterion at
  Q = 1.5, 3.5 (Li) and 10 (the Li junction with R = 106, 250 and 706 ohm) at 1e4/s, 30,000
  realizations each: two-sample KS and the means within 4 combined standard errors.
* ``turnover``: the width of the voltage-switching distribution of the Li junction at 200/s
  against temperature, with the escape criterion's beside it, and the crossover temperature
  where the escape distribution's mean (Mel'nikov-Meshkov rate) reaches ``I_r``.
* ``pair``: switching (voltage) and retrapping currents of the Li junction at 1e5/s by
  direct ramps, 30,000 each.

``--save DIR`` writes each section's Datasets as NetCDF there.
"""

import argparse
import functools
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize, stats

import gpuensembles as ge
from gpuensembles.models.josephson import fulton_dunkleberger as fd
from gpuensembles.models.josephson import theory

from .bench_rates import LI_H, _g, _table, _timed, run_sections
from .bench_switching import LI2007

SECTIONS = ("li", "validate", "turnover", "pair")
#: The junctions of ``validate``: the Li junction's R (Q = 1.5, 3.5, 10) and a temperature where its
#: voltage switching lies at barriers of several theta (at 1.2 K the Q = 1.5 junction runs only near
#: I_c, below the 0.5 theta where a quasi-stationary rate exists, and the rates method says so).
VALIDATION = ((106.0, 0.3), (250.0, 1.2), (706.0, 1.2))
SWEEPS = np.array([1.0, 200.0, 1e4])
#: Sizes: the GPU's, and the smoke test's (a normalized junction of Q = 3.5 at theta = 0.17 on the CPU).
SIZES = {
    "gpu": dict(rel_error=0.01, realizations=30_000, h=LI_H, validate_rel=0.02, turnover_rel=0.03,
                temperatures=(0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0), pair_sweep=1e5, draws=200),
    "quick": dict(rel_error=0.3, realizations=300, h=4e-3, validate_rel=0.3, turnover_rel=0.3,
                  temperatures=(0.6, 1.2, 2.4), pair_sweep=1e8, draws=20),
}


def _curve(ds, criterion):
    """The rate curve a ``method="rates"`` result was drawn from."""
    name = "rate" if criterion == "escape" else "switching_rate"
    return fd.make_curve(ds.rate_gamma.values, ds[name].values, ds[f"{name}_stderr"].values)


def _moments(ds, criterion, draws, seed=0):
    """Per sweep point, the moments of the computed distribution with the rate curve's errors."""
    curve = _curve(ds, criterion)
    ends = dict(gamma_start=float(ds.attrs["gamma_start"]), gamma_end=float(ds.attrs["gamma_end"]))
    h = float(ds.attrs["h"])
    dgammas = ds["dgamma"].values if "dgamma" in ds.coords else ds.attrs["dgamma"]
    return [fd.moments(curve, float(dgamma) / h, draws=draws, seed=seed, **ends) for dgamma in np.atleast_1d(dgammas)]


def _li(sweep_rate, R=250.0, T=1.2):
    return dict(LI2007, R=R, T=T, sweep_rate=sweep_rate)


def _save(save, name, ds):
    if save is not None:
        ds.to_netcdf(Path(save) / f"{name}.nc")


def _quiet(call):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="criterion='escape'", category=RuntimeWarning)
        return call()


def li(backend, size, save=None, seed=4):
    """Li 2007 at 1, 200 and 1e4 /s under both criteria, from one rate curve each, with the wall times."""
    s = SIZES[size]
    kw = dict(physical=_li(SWEEPS), h=s["h"], integrator="baoab", method="rates", realizations=s["realizations"],
              rel_error=s["rel_error"], backend=backend, progress=False)
    # compile every kernel the runs use (a cheap call of each), so the times below are the work's
    small = dict(kw, physical=_li(1e4), rel_error=0.5, realizations=10)
    _quiet(lambda: ge.switching_currents(**small, seed=1))
    ge.switching_currents(**small, criterion="voltage", seed=1)
    voltage, t_voltage = _timed(lambda: ge.switching_currents(**kw, criterion="voltage", seed=seed))
    escape, t_escape = _timed(lambda: _quiet(lambda: ge.switching_currents(**kw, seed=seed + 1)))
    _save(save, "li_voltage", voltage)
    _save(save, "li_escape", escape)
    Q = float(theory.quality_factor(float(voltage.attrs["V0"]), float(voltage.attrs["damping"])))
    retrapping = float(theory.retrapping_current(Q))
    ic = LI2007["Ic"] * 1e6
    rows, records = [], []
    m_v, m_e = _moments(voltage, "voltage", s["draws"]), _moments(escape, "escape", s["draws"])
    for i, rate in enumerate(SWEEPS):
        below = float(fd.fd_cdf([retrapping], _curve(escape, "escape"), float(escape.dgamma[i]) / s["h"],
                                gamma_start=float(escape.attrs["gamma_start"]))[0][0])
        rows.append([_g(rate), f"{m_e[i]['mean'] * ic:.4f}({m_e[i]['mean_stderr'] * ic * 1e4:.0f})",
                     f"{m_e[i]['std'] * ic * 1e3:.1f}", f"{below:.3f}",
                     f"{m_v[i]['mean'] * ic:.4f}({m_v[i]['mean_stderr'] * ic * 1e4:.0f})",
                     f"{m_v[i]['std'] * ic * 1e3:.1f}({m_v[i]['std_stderr'] * ic * 1e4:.0f})"])
        records.append(dict(sweep_rate=float(rate), escape=m_e[i], voltage=m_v[i], escape_below_retrapping=below))
    title = (f"Li 2007 (Q = {Q:.3f}, I_r = {retrapping:.4f} Ic = {retrapping * ic:.4f} uA), rates to "
             f"{s['rel_error']:g}: voltage {t_voltage:.1f} s ({voltage.sizes['rate_gamma']} rate points, "
             f"{float(voltage.rate_steps.sum()):.3g} steps), escape {t_escape:.1f} s ({escape.sizes['rate_gamma']} "
             f"points) in the same run; means in uA (rate-curve error in the last digits), widths in nA")
    text = _table(title, ["sweep 1/s", "escape mean", "escape std", "P(escape < I_r)", "voltage mean",
                          "voltage std"], rows)
    return text, dict(seconds_voltage=t_voltage, seconds_escape=t_escape, Q=Q, retrapping=retrapping,
                      points_voltage=int(voltage.sizes["rate_gamma"]), points_escape=int(escape.sizes["rate_gamma"]),
                      rows=records)


def validate(backend, size, save=None, seed=6):
    """Rates against direct ramps under the voltage criterion at Q = 1.5, 3.5, 10 (1e4/s, 30,000 each)."""
    s = SIZES[size]
    sweep = 1e4 if size == "gpu" else 2e6
    rows, records = [], []
    for R, T in VALIDATION:
        kw = dict(physical=_li(sweep, R=R, T=T), h=s["h"], integrator="baoab", criterion="voltage",
                  realizations=s["realizations"], backend=backend, progress=False)
        direct, t_direct = _timed(lambda kw=kw: ge.switching_currents(**kw, gamma_start="auto", seed=seed))
        rates, t_rates = _timed(lambda kw=kw: ge.switching_currents(**kw, method="rates", rel_error=s["validate_rel"],
                                                                    seed=seed + 1))
        _save(save, f"validate_R{R:g}_direct", direct)
        _save(save, f"validate_R{R:g}_rates", rates)
        a, b = direct.switching_current.values.ravel(), rates.switching_current.values.ravel()
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        curve_error = _moments(rates, "voltage", s["draws"])[0]["mean_stderr"]
        se_a, se_b = a.std(ddof=1) / math.sqrt(a.size), math.hypot(b.std(ddof=1) / math.sqrt(b.size), curve_error)
        z = (b.mean() - a.mean()) / math.hypot(se_a, se_b)
        p = stats.ks_2samp(a, b).pvalue
        Q = float(theory.quality_factor(float(direct.attrs["V0"]), float(direct.attrs["damping"])))
        escape = float(rates.rate_gamma.min())  # where the grid starts: the escape window's low end
        records.append(dict(R=R, T=T, Q=Q, ks_p=p, z=z, mean_direct=a.mean(), mean_rates=b.mean(), se_direct=se_a,
                            se_rates=se_b, seconds_direct=t_direct, seconds_rates=t_rates, n=(a.size, b.size),
                            retrapping=float(theory.retrapping_current(Q)), grid_low=escape))
        rows.append([f"{Q:.2f}", T, _g(float(theory.retrapping_current(Q)), 4), a.size, b.size, _g(a.mean(), 6),
                     _g(b.mean(), 6), f"{z:+.2f}", _g(p, 3), "yes" if p > 0.01 and abs(z) < 4 else "NO",
                     f"{t_direct:.1f}", f"{t_rates:.1f}"])
    return _table(f"Voltage criterion: rates (to {s['validate_rel']:g}) against direct ramps at {sweep:g}/s "
                  "(BAOAB, 100 wells)", ["Q", "T [K]", "I_r", "n direct", "n rates", "mean direct", "mean rates", "z",
                                          "KS p", "ok", "direct s", "rates s"], rows), records


def crossover_temperature(sweep_rate, R=250.0):
    """Where the escape criterion's mean switching current (FD, Mel'nikov-Meshkov) reaches ``I_r``, in K."""
    units = ge.josephson.normalize(**_li(sweep_rate, R=R, T=1.0))
    V0, damping, t0 = (float(units[k]) for k in ("V0", "damping", "time_unit"))
    theta_per_kelvin = float(units["theta"])
    retrapping = float(theory.retrapping_current(float(theory.quality_factor(V0, damping))))

    def excess(T):
        rate = functools.partial(theory.escape_rate, V0=V0, damping=damping, theta=theta_per_kelvin * T)
        return theory.fulton_dunkleberger_mean(gamma_dot=sweep_rate * t0, rate=rate, points=200) - retrapping

    return float(optimize.brentq(excess, 0.05, 20.0, xtol=1e-3))


def turnover(backend, size, save=None, seed=8, sweep=200.0):
    """Widths of the voltage and escape distributions of the Li junction at 200/s against temperature."""
    s = SIZES[size]
    rows, records = [], []
    for T in s["temperatures"]:
        kw = dict(physical=_li(sweep, T=T), h=s["h"], integrator="baoab", method="rates", realizations=1000,
                  rel_error=s["turnover_rel"], backend=backend, progress=False)
        voltage, seconds = _timed(lambda kw=kw: ge.switching_currents(**kw, criterion="voltage", seed=seed))
        escape = _quiet(lambda kw=kw: ge.switching_currents(**kw, seed=seed + 1))
        retrap = ge.retrapping_currents(physical=_li(s["pair_sweep"], T=T), h=s["h"], realizations=2000,
                                        seed=seed + 2, backend=backend, progress=False).fpt.mean()
        _save(save, f"turnover_T{T:g}", voltage)
        m_v, m_e = _moments(voltage, "voltage", s["draws"])[0], _moments(escape, "escape", s["draws"])[0]
        records.append(dict(T=T, voltage=m_v, escape=m_e, seconds=seconds, retrapping=float(retrap["mean"]),
                            retrapping_stderr=float(retrap["stderr"])))
        rows.append([T, _g(m_v["mean"], 5), f"{m_v['std'] * 1e3:.2f}({m_v['std_stderr'] * 1e5:.0f})",
                     _g(m_e["mean"], 5), f"{m_e['std'] * 1e3:.2f}({m_e['std_stderr'] * 1e5:.0f})",
                     _g(float(retrap["mean"]), 5), f"{seconds:.1f}"])
    widths = np.array([r["voltage"]["std"] for r in records])
    peak = float(s["temperatures"][int(np.argmax(widths))])
    estimate = crossover_temperature(sweep)
    meets = _meeting(records)
    text = _table(f"Li junction at {sweep:g}/s: widths in 1e-3 Ic (rates to {s['turnover_rel']:g}); widest voltage "
                  f"distribution at {peak:g} K; the escape mean reaches I_r (noise-free, Mel'nikov-Meshkov) at "
                  f"T* = {estimate:.2f} K and the mean retrapping current at {s['pair_sweep']:g}/s at {meets:.2f} K",
                  ["T [K]", "voltage mean", "voltage std", "escape mean", "escape std", "retrapping mean", "s"], rows)
    return text, dict(rows=records, peak=peak, crossover=estimate, crossover_thermal=meets, sweep_rate=sweep)


def _meeting(records):
    """The temperature where the escape mean falls to the mean retrapping current (linear between the rows), K."""
    T = np.array([r["T"] for r in records])
    gap = np.array([r["escape"]["mean"] - r["retrapping"] for r in records])
    crossing = np.flatnonzero((gap[:-1] > 0) & (gap[1:] <= 0))
    if crossing.size == 0:
        return math.nan
    i = crossing[0]
    return float(T[i] + (T[i + 1] - T[i]) * gap[i] / (gap[i] - gap[i + 1]))


def pair(backend, size, save=None, seed=10):
    """Switching (voltage) and retrapping currents of the Li junction by direct ramps at 0.3 and 1.2 K, 30,000 each."""
    s = SIZES[size]
    rows = []
    for T in (0.3, 1.2):
        kw = dict(physical=_li(s["pair_sweep"], T=T), h=s["h"], integrator="baoab", realizations=s["realizations"],
                  backend=backend, progress=False)
        switching, t_s = _timed(lambda kw=kw: ge.switching_currents(**kw, criterion="voltage", gamma_start="auto",
                                                                    seed=seed))
        retrapping, t_r = _timed(lambda kw=kw: ge.retrapping_currents(**kw, seed=seed + 1))
        _save(save, f"pair_T{T:g}_switching", switching)
        _save(save, f"pair_T{T:g}_retrapping", retrapping)
        rows += [[T, name, int(ds[flag].sum()), _g(float(ds[var].mean()), 5), _g(float(ds[var].std()), 4), f"{t:.1f}"]
                 for name, ds, var, flag, t in (("switching", switching, "switching_current", "switched", t_s),
                                                ("retrapping", retrapping, "retrapping_current", "retrapped", t_r))]
    return _table(f"Li junction at {s['pair_sweep']:g}/s, direct ramps", ["T [K]", "", "n", "mean", "std", "s"],
                  rows), [dict(T=r[0], name=r[1], n=r[2], mean=float(r[3]), std=float(r[4]), seconds=float(r[5]))
                          for r in rows]


class LiVoltageSwitching:
    """asv: GPU seconds of the Li junction at 1, 200 and 1e4 /s from one rate curve, rates to 1%.

    Under ``criterion="voltage"`` (run probabilities included) and, the baseline, under
    ``criterion="escape"``; kernels compiled in ``setup``. Each figure is one whole call (minutes):
    the result must be the physics (voltage above I_r, escape below it at 1/s), or no time counts.
    """

    params = (["voltage", "escape"],)
    param_names = ["criterion"]
    timeout = 900
    number, repeat = 1, 1

    def setup(self, criterion):
        from .bench_escape_times import gpu_available

        if not gpu_available():
            raise NotImplementedError("no GPU")
        self.kw = dict(physical=_li(SWEEPS), h=LI_H, integrator="baoab", method="rates", realizations=30_000,
                       rel_error=0.01, criterion=criterion, backend="cuda", progress=False)
        _quiet(lambda: ge.switching_currents(**dict(self.kw, physical=_li(1e4), rel_error=0.5, realizations=10),
                                             seed=1))

    def track_seconds(self, criterion):
        ds, seconds = _timed(lambda: _quiet(lambda: ge.switching_currents(**self.kw, seed=4)))
        slowest = float(ds.switching_current.isel(sweep_rate=0).mean())
        retrapping = float(theory.retrapping_current(theory.quality_factor(float(ds.attrs["V0"]),
                                                                           float(ds.attrs["damping"]))))
        assert (slowest > retrapping) == (criterion == "voltage"), (criterion, slowest, retrapping)
        return seconds

    track_seconds.unit = "s"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--json")
    parser.add_argument("--save", help="folder for the sections' NetCDF files")
    parser.add_argument("--quick", action="store_true", help="tiny sizes on the CPU backend")
    args = parser.parse_args(argv)
    size, backend = ("quick", "cpu") if args.quick else ("gpu", "cuda")
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
    results = run_sections(args.only.split(","), lambda name: globals()[name](backend, size, args.save), args.json)
    return 0 if all(r is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
