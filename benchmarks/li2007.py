"""Project the Li et al. (2007) switching-current experiment (seed 000, Fig. 11b) onto GPUs.

    python -m benchmarks.li2007

The full experiment is 30,000 realizations at a 200/s sweep with h = 1e-4: about
1.9e11 steps per realization, 5.7e15 in all. This script measures, in one run,

* the throughput at full occupancy (2^20 realizations) and at the occupancy of the
  experiment (30,000 realizations on one GPU, 7,500 per GPU on four), at a faster sweep
  with the same junction so that each run fits in minutes;
* the steps per second of a single realization (the critical path: a realization's
  steps are sequential, no GPU count shortens it);

and projects the wall time of the real experiment as the larger of (total steps / measured
throughput at that occupancy) and (steps of the slowest realization / single-lane rate),
with and without the warm start (gamma_start="auto").
"""

import functools
import math

import numpy as np

from gpuensembles import theory

from .bench_switching import H, li2007_case, switching_steps

FULL = 30_000


def fd_steps(sweep_rate, gamma_start=0.0):
    """Mean steps per realization and the 1e-4-quantile-free maximum from Fulton-Dunkleberger."""
    case = li2007_case(sweep_rate)
    theta = case["D"] / case["damping"]
    rate = functools.partial(theory.escape_rate, V0=case["V0"], damping=case["damping"], theta=theta)
    gamma_dot = case["dgamma"] / H
    mean = theory.fulton_dunkleberger_mean(gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start, gamma_end=0.95)
    grid = np.linspace(gamma_start, 0.95, 2000)
    cdf = theory.fulton_dunkleberger_cdf(grid, gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start)
    slowest = float(np.interp(1 - 1.0 / FULL, cdf, grid))  # the largest of 30,000 switching currents
    warm = theory.warm_start_gamma(gamma_dot=gamma_dot, V0=case["V0"], damping=case["damping"], theta=theta)
    return {"mean": (mean - gamma_start) / case["dgamma"], "slowest": (slowest - gamma_start) / case["dgamma"],
            "warm_start": warm, "mean_gamma": mean}


def main():
    from gpuensembles import _backend

    device = _backend.device_name("cuda")
    probe_rate = 2e6  # 1e4 times the real sweep: 3.5e7 steps per realization
    rows = []
    for n in (1 << 20, FULL, FULL // 4):
        steps, seconds, ds = switching_steps(n, probe_rate)
        per_lane = float(ds.steps.max()) / seconds  # the slowest realization ran the whole time
        rows.append((n, steps / seconds, per_lane, seconds))
        print(f"{device}: {n:>8} realizations, sweep {probe_rate:.0e}/s: {steps:.3e} steps in {seconds:.1f} s = "
              f"{steps / seconds:.3e} steps/s; slowest realization {float(ds.steps.max()):.3e} steps "
              f"(>= {per_lane:.3e} steps/s on its lane)", flush=True)
    rate_one, rate_four = rows[1][1], rows[2][1]
    lane = max(r[2] for r in rows[1:])
    real = fd_steps(200.0)
    warm = fd_steps(200.0, gamma_start=real["warm_start"])
    print(f"\nLi et al. 2007 at 200/s (h = {H}): mean switching gamma {real['mean_gamma']:.4f}, "
          f"{real['mean']:.3e} steps per realization, {real['mean'] * FULL:.3e} in all; "
          f"warm start at gamma = {real['warm_start']:.2e} (P < 1e-9 by the Mel'nikov rate)")
    print("| setting | total steps | GPUs | throughput-bound h | critical-path h | projected h |")
    print("|---|---|---|---|---|---|")
    for label, s in (("full ramp", real), ("warm start", warm)):
        total = s["mean"] * FULL
        critical = s["slowest"] / lane / 3600
        for gpus, rate in ((1, rate_one), (4, rate_four * 4)):
            bound = total / rate / 3600
            print(f"| {label} | {total:.3e} | {gpus} | {bound:.2f} | {critical:.2f} | {max(bound, critical):.2f} |")
    print(f"(single-lane rate {lane:.3e} steps/s; 7,500 realizations per GPU on four GPUs, {math.ceil(FULL / 4)} lanes)")


if __name__ == "__main__":
    main()
