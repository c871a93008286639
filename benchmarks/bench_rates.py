"""Escape rates and switching from rates on the GPU: validation and cost (issue 18).

    python -m benchmarks.bench_rates [--only exact,bias,underdamped,li,ks] [--json FILE] [--backend cuda]

Sections, each printing one table (the figures the docs quote):

* ``exact``: overdamped rates against the exact ``1 / MFPT`` from the thermal state to the
  next well, barriers 2 to 60 theta, each point in its own call (so its seconds are its own),
  with the direct method's projected cost beside FFS's measured one.
* ``bias``: the time-step dependence of one rate (20 theta), against the O(h) bound.
* ``underdamped``: FFS against direct at 6-10 theta, and the ratio to Mel'nikov-Meshkov up to
  60 theta, at damping 0.05, 0.5 and the Li junction's 4.1.
* ``li``: the Li et al. (2007) switching distributions at 1/s, 200/s and 1e4/s from one rate
  curve, wall time with the rate computation included.
* ``ks``: ``method="rates"`` against the direct ramp at 2e5/s and 2e6/s (30,000 realizations
  each): two-sample KS and the means.
"""

import argparse
import json
import math
import sys
import time

import numpy as np
from scipy import optimize, stats

import gpuensembles as ge
from gpuensembles.models.josephson import theory

from .bench_escape_times import gpu_available
from .bench_switching import LI2007

SECTIONS = ("exact", "bias", "underdamped", "li", "ks")
GAMMA = 0.5
REL = 0.03
LI_H = 1e-3


def _timed(call):
    t0 = time.perf_counter()
    out = call()
    return out, time.perf_counter() - t0


def _table(title, header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    lines = [title, "  ".join(str(h).rjust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _g(x, digits=4):
    return f"{x:.{digits}g}"


def _li_units():
    u = ge.josephson.normalize(**LI2007)
    return {k: float(u[k]) for k in ("V0", "damping", "theta", "D", "time_unit")}


def _gamma_for_barrier(barrier, V0, theta):
    """Bias whose barrier is ``barrier`` theta."""
    return optimize.brentq(lambda g: float(theory.barrier(g, V0)) / theta - barrier, 0.0, 1.0 - 1e-12)


def exact(backend, seed=1):
    """Overdamped rate against the exact one over 2-60 theta; FFS seconds against direct's projected seconds."""
    h = 0.005
    kappa = math.cos(math.asin(GAMMA))
    ge.escape_rates(model="overdamped", damping=1.0, gamma=GAMMA, D=0.1, h=h, rel_error=0.3, seed=seed,
                    backend=backend, progress=False)  # compile
    direct, seconds = _timed(lambda: ge.escape_rates(
        model="overdamped", damping=1.0, gamma=GAMMA, D=float(theory.barrier(GAMMA)) / 4, h=h, method="direct",
        rel_error=REL, seed=seed + 1, backend=backend, progress=False))
    throughput = float(direct.steps) / seconds
    rows, records = [], []
    for barrier in (2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0):
        D = float(theory.barrier(GAMMA)) / barrier
        ds, seconds = _timed(lambda D=D: ge.escape_rates(model="overdamped", damping=1.0, gamma=GAMMA, D=D, h=h,
                                                         rel_error=REL, seed=seed, backend=backend, progress=False))
        ref = 1.0 / theory.overdamped_mfpt(V0=1.0, damping=1.0, gamma=GAMMA, D=D, b=math.asin(GAMMA) + 2 * math.pi,
                                           thermal=True)
        rate, se = float(ds.rate), float(ds.rate_stderr)
        bias = 2 * h * kappa
        ok = abs(rate - ref) <= 4 * se + bias * ref
        n = math.ceil(1.2 / REL**2)
        projected = n * (1.0 / ref) / h / throughput
        records.append(dict(barrier=barrier, method=str(ds.method.values), rate=rate, stderr=se, exact=ref,
                            seconds=seconds, steps=int(ds.steps), direct_projected_seconds=projected, ok=bool(ok)))
        rows.append([barrier, str(ds.method.values), _g(rate), f"{se / rate:.2%}", _g(ref), _g(1 / ref, 3),
                     f"{(rate - ref) / se:+.2f}", f"{bias:.1%}", "yes" if ok else "NO", f"{seconds:.2f}",
                     _g(float(ds.steps), 3), _g(projected, 3)])
    text = _table(f"overdamped, V0 = 1, damping = 1, gamma = {GAMMA}, Euler h = {h}; direct throughput "
                  f"{throughput:.3g} steps/s (its projected seconds: {math.ceil(1.2 / REL**2)} realizations "
                  "x MFPT / h / throughput)",
                  ["dU/theta", "method", "rate", "rel SE", "exact", "1/exact", "z", "bias", "ok", "GPU s", "steps",
                   "direct s (proj.)"], rows)
    return text, records


def bias(backend, seed=2):
    """One 20-theta rate at four time steps, to 1 %."""
    D = float(theory.barrier(GAMMA)) / 20.0
    ref = 1.0 / theory.overdamped_mfpt(V0=1.0, damping=1.0, gamma=GAMMA, D=D, b=math.asin(GAMMA) + 2 * math.pi,
                                       thermal=True)
    rows, records = [], []
    for h in (0.04, 0.02, 0.01, 0.005):
        ds, seconds = _timed(lambda h=h: ge.escape_rates(model="overdamped", damping=1.0, gamma=GAMMA, D=D, h=h,
                                                         rel_error=0.01, seed=seed, backend=backend, progress=False))
        rate, se = float(ds.rate), float(ds.rate_stderr)
        records.append(dict(h=h, rate=rate, stderr=se, exact=ref, seconds=seconds))
        bound = 2 * h * math.cos(math.asin(GAMMA))
        rows.append([h, _g(rate, 5), f"{se / rate:.2%}", f"{rate / ref - 1:+.2%}", f"{bound:.2%}", f"{seconds:.2f}"])
    return _table(f"time-step bias at 20 theta (exact {ref:.5g})", ["h", "rate", "rel SE", "rate/exact - 1",
                                                                    "bound 2 h kappa", "GPU s"], rows), records


def underdamped(backend, seed=3):
    """FFS against direct (6-10 theta) and against Mel'nikov-Meshkov (10-60 theta)."""
    li = _li_units()
    cases = {"damping 0.05": dict(V0=1.0, damping=0.05, h=0.01, theta=None),
             "damping 0.5": dict(V0=1.0, damping=0.5, h=0.01, theta=None),
             "Li (4.11)": dict(V0=li["V0"], damping=li["damping"], h=LI_H, theta=li["theta"])}
    rows_direct, rows_mm, records = [], [], []
    for name, c in cases.items():
        for barrier in (6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 40.0, 60.0):
            if c["theta"] is not None and barrier >= 0.98 * 2 * c["V0"] / c["theta"]:
                continue  # above the junction's zero-bias barrier at its temperature
            if c["theta"] is None:  # V0 = 1: gamma fixed, theta from the barrier
                gamma, theta = GAMMA, float(theory.barrier(GAMMA)) / barrier
            else:  # the Li junction: theta fixed, gamma from the barrier
                theta, gamma = c["theta"], _gamma_for_barrier(barrier, c["V0"], c["theta"])
            kw = dict(V0=c["V0"], damping=c["damping"], D=c["damping"] * theta, gamma=gamma, h=c["h"],
                      integrator="baoab", rel_error=REL, seed=seed, backend=backend, progress=False)
            ffs, t_ffs = _timed(lambda kw=kw: ge.escape_rates(**kw, method="ffs"))
            mm = theory.escape_rate(gamma, V0=c["V0"], damping=c["damping"], theta=theta, form="melnikov")
            rec = dict(case=name, barrier=barrier, gamma=gamma, ffs=float(ffs.rate), ffs_se=float(ffs.rate_stderr),
                       ffs_seconds=t_ffs, melnikov=mm)
            relative = rec["ffs_se"] / max(rec["ffs"], 1e-300)
            rows_mm.append([name, barrier, _g(gamma, 5), _g(rec["ffs"]), f"{relative:.2%}", _g(mm),
                            f"{rec['ffs'] / mm:.3f}", f"{t_ffs:.2f}"])
            if barrier <= 10.0:
                direct, t_direct = _timed(lambda kw=kw: ge.escape_rates(**kw, method="direct"))
                d, dse = float(direct.rate), float(direct.rate_stderr)
                z = (rec["ffs"] - d) / math.hypot(rec["ffs_se"], dse)
                rec.update(direct=d, direct_se=dse, direct_seconds=t_direct, z=z)
                rows_direct.append([name, barrier, _g(rec["ffs"]), _g(d), f"{dse / max(d, 1e-300):.2%}", f"{z:+.2f}",
                                    "yes" if abs(z) <= 4 else "NO", f"{t_ffs:.2f}", f"{t_direct:.2f}"])
            records.append(rec)
            print(rec, flush=True)
    text = _table("underdamped (BAOAB): FFS against direct", ["case", "dU/theta", "FFS", "direct", "direct SE", "z",
                                                             "|z|<=4", "FFS s", "direct s"], rows_direct)
    text += "\n\n" + _table("underdamped (BAOAB): FFS over Mel'nikov-Meshkov", ["case", "dU/theta", "gamma", "FFS",
                                                                               "rel SE", "MM", "FFS/MM", "GPU s"],
                            rows_mm)
    return text, records


def li(backend, seed=4):
    """Li et al. (2007) at 1/s, 200/s and 1e4/s from one rate curve, wall time with the rates."""
    physical = dict(LI2007, sweep_rate=np.array([1.0, 200.0, 1e4]))
    ds, seconds = _timed(lambda: ge.switching_currents(physical=physical, h=LI_H, integrator="baoab",
                                                       method="rates", realizations=30_000, seed=seed,
                                                       backend=backend, progress=False))
    rows, records = [], []
    for i, rate in enumerate(physical["sweep_rate"]):
        sample = ds.switching_current_A.isel(sweep_rate=i)
        rows.append([rate, _g(float(sample.mean()) * 1e6, 6), _g(float(sample.std()) * 1e9, 4)])
        records.append(dict(sweep_rate=float(rate), mean_A=float(sample.mean()), std_A=float(sample.std())))
    points = int(ds.sizes.get("rate_gamma", 0))
    text = _table(f"Li 2007 from one rate curve: {seconds:.1f} s wall, rates included ({points} rate points, "
                  f"{float(ds.rate_steps.sum()):.3g} steps)", ["sweep 1/s", "mean I_sw [uA]", "std [nA]"],
                  rows)
    return text, [dict(seconds=seconds, rate_points=points, rows=records)]


def ks(backend, seed=5):
    """Switching from rates against the direct ramp, 30,000 realizations each, at 2e5/s and 2e6/s."""
    rows, records = [], []
    for sweep in (2e5, 2e6):
        physical = dict(LI2007, sweep_rate=sweep)
        kw = dict(physical=physical, h=LI_H, integrator="baoab", passage="next_well", realizations=30_000,
                  backend=backend, progress=False)
        direct, t_direct = _timed(lambda kw=kw: ge.switching_currents(**kw, gamma_start="auto", seed=seed))
        rates, t_rates = _timed(lambda kw=kw: ge.switching_currents(**kw, method="rates", seed=seed + 1))
        a = direct.switching_current.values.ravel()
        b = rates.switching_current.values.ravel()
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        p = stats.ks_2samp(a, b).pvalue
        se = math.hypot(a.std() / math.sqrt(a.size), b.std() / math.sqrt(b.size))
        z = (b.mean() - a.mean()) / se
        records.append(dict(sweep_rate=sweep, ks_p=p, mean_direct=a.mean(), mean_rates=b.mean(), z=z,
                            seconds_direct=t_direct, seconds_rates=t_rates, n=(a.size, b.size)))
        rows.append([_g(sweep), a.size, b.size, _g(a.mean(), 7), _g(b.mean(), 7), f"{z:+.2f}", _g(p, 3),
                     "yes" if p > 0.01 and abs(z) <= 4 else "NO", f"{t_direct:.1f}", f"{t_rates:.1f}"])
    return _table("Li junction: rates against the direct ramp (BAOAB h = 1e-3, next well)",
                  ["sweep 1/s", "n direct", "n rates", "mean direct", "mean rates", "z", "KS p", "ok", "direct s",
                   "rates s"], rows), records


def rate_point_seconds(barrier, backend="cuda", rel_error=REL, seed=1, h=0.005):
    """Seconds of one overdamped rate point at ``barrier`` theta (kernels compiled before), and its result."""
    D = float(theory.barrier(GAMMA)) / barrier
    kw = dict(model="overdamped", damping=1.0, gamma=GAMMA, D=D, h=h, rel_error=rel_error, backend=backend,
              progress=False)
    ge.escape_rates(**{**kw, "D": float(theory.barrier(GAMMA)) / 5.0, "rel_error": 0.3}, seed=seed)
    ds, seconds = _timed(lambda: ge.escape_rates(**kw, seed=seed))
    return seconds, ds


class RatePoint:
    """asv: GPU seconds of one forward-flux rate point (overdamped, 3 %) at 20, 40 and 60 theta."""

    params = ([20.0, 40.0, 60.0],)
    param_names = ["barrier"]
    timeout = 600

    def setup(self, barrier):
        if not gpu_available():
            raise NotImplementedError("no GPU")

    def track_seconds(self, barrier):
        seconds, ds = rate_point_seconds(barrier)
        assert float(ds.rate_stderr) <= 1.5 * REL * float(ds.rate)
        return seconds

    track_seconds.unit = "s"


def run_sections(names, section, json_path=None) -> dict:
    """Run each section ``section(name) -> (text, records)``, print its table, and collect the records.

    One failing section prints its traceback and ``FAILED`` and does not hide the others (its
    records are None); ``json_path`` receives the records; the tables are printed again at the end.
    """
    texts, results = [], {}
    for name in names:
        t0 = time.perf_counter()
        try:
            text, records = section(name)
        except Exception as err:  # noqa: BLE001  (one failing section must not hide the others)
            import traceback

            traceback.print_exc()
            text, records = f"{name}: FAILED ({type(err).__name__}: {err})", None
        print(text, flush=True)
        print(f"[{name}: {time.perf_counter() - t0:.0f} s]\n", flush=True)
        texts.append(text)
        results[name] = records
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1, default=float)
    print("\n\n".join(texts))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--json")
    parser.add_argument("--backend", default="cuda")
    args = parser.parse_args(argv)
    run_sections(args.only.split(","), lambda name: globals()[name](args.backend), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
