"""Project the Li et al. (2007) switching-current experiment (Pierro et al. 2018, Fig. 11b) onto GPUs.

    python -m benchmarks.li2007

The full experiment is 30,000 realizations at a 200/s sweep; with Euler at h = 1e-4 that is
about 1.9e11 steps per realization, 5.7e15 in all. This script measures, in one run,

* the throughput at full occupancy (2^20 realizations) and at the occupancy of the
  experiment (30,000 realizations on one GPU; 7,500 per GPU on four), at a 1e4 times
  faster sweep of the same junction so that each measurement takes seconds;
* the steps per second of one realization on its lane (the critical path: a realization's
  steps are sequential, and no number of GPUs shortens it);
* the same for BAOAB at h = 1e-3, and a two-sample KS test that its switching currents
  agree with Euler's at h = 1e-4;

and projects the experiment's wall time as the larger of (total steps / throughput at
that occupancy) and (steps of the slowest of 30,000 realizations / lane rate).
"""

import functools

import numpy as np
from scipy import stats

from gpuensembles.models.josephson import theory

from .bench_switching import li2007_case, switching_steps

FULL = 30_000
PROBE = 2e6  # 1e4 times the real sweep


def fd_steps(sweep_rate, h):
    """Mean and slowest-of-30,000 steps per realization, from Fulton-Dunkleberger (Mel'nikov rate)."""
    case = li2007_case(sweep_rate, h)
    theta = case["D"] / case["damping"]
    rate = functools.partial(theory.escape_rate, V0=case["V0"], damping=case["damping"], theta=theta)
    gamma_dot = case["dgamma"] / h
    mean = theory.fulton_dunkleberger_mean(gamma_dot=gamma_dot, rate=rate, gamma_end=0.95)
    grid = np.linspace(0.0, 0.95, 2000)
    slowest = float(np.interp(1 - 1.0 / FULL, theory.fulton_dunkleberger_cdf(grid, gamma_dot=gamma_dot, rate=rate),
                              grid))
    warm = theory.warm_start_gamma(gamma_dot=gamma_dot, V0=case["V0"], damping=case["damping"], theta=theta)
    return {"mean": mean / case["dgamma"], "slowest": slowest / case["dgamma"], "warm_start": warm,
            "mean_gamma": mean}


def measure(h, integrator, device):
    out = {}
    for n in (1 << 20, FULL, FULL // 4):
        steps, seconds, ds = switching_steps(n, PROBE, h=h, integrator=integrator)
        out[n] = (steps / seconds, float(ds.steps.max()) / seconds, ds)
        print(f"{device} {integrator} h={h:g}: {n:>8} realizations: {steps:.3e} steps in {seconds:.1f} s = "
              f"{steps / seconds:.3e} steps/s; slowest realization {float(ds.steps.max()):.3e} steps "
              f"(>= {float(ds.steps.max()) / seconds:.3e} steps/s on its lane)", flush=True)
    return out


def main():
    from gpuensembles.core import backend as _backend

    device = _backend.device_name("cuda")
    runs = {("euler", 1e-4): measure(1e-4, "euler", device), ("baoab", 1e-3): measure(1e-3, "baoab", device)}
    a = runs[("euler", 1e-4)][FULL][2].switching_current.values
    b = runs[("baoab", 1e-3)][FULL][2].switching_current.values
    ks = stats.ks_2samp(a, b)
    print(f"\nBAOAB h=1e-3 vs Euler h=1e-4 at {PROBE:g}/s, 30,000 realizations each: means {b.mean():.5f} vs "
          f"{a.mean():.5f}, two-sample KS {ks.statistic:.4f} (p = {ks.pvalue:.3f})")
    print("| integrator, h | total steps | GPUs | throughput-bound h | critical-path h | projected h |")
    print("|---|---|---|---|---|---|")
    for (integrator, h), run in runs.items():
        s = fd_steps(200.0, h)
        total = s["mean"] * FULL
        lane = max(run[FULL][1], run[FULL // 4][1])
        critical = s["slowest"] / lane / 3600
        for gpus, rate in ((1, run[FULL][0]), (4, 4 * run[FULL // 4][0])):
            bound = total / rate / 3600
            print(f"| {integrator}, {h:g} | {total:.3e} | {gpus} | {bound:.2f} | {critical:.2f} | "
                  f"{max(bound, critical):.2f} |")
    s = fd_steps(200.0, 1e-4)
    print(f"(200/s: mean switching gamma {s['mean_gamma']:.4f}; the warm start begins at gamma = "
          f"{s['warm_start']:.1e}: at gamma = 0 the barrier is only 30 theta, so a ramp from 0 already has a 1e-9 "
          f"chance to switch there and nothing can be skipped)")


if __name__ == "__main__":
    main()
