"""Are the escape rates' error bars right? The spread of the rates over seeds against their stated errors.

    python -m benchmarks.rate_errors [--case overdamped|underdamped|voltage] [--seeds 150] [--rel-error 0.1]

Runs ``escape_rates`` by forward flux sampling at three (voltage: two) biases once per seed
and prints, per bias, the spread of the rates over the seeds divided by the mean stated
``rate_stderr`` (1 when the errors are right), the standard deviation of ``z = (rate - mean
over seeds) / rate_stderr``, and how often ``|z| < 1.96`` (0.95 for right normal errors).
``voltage`` does the same for ``switching_rate`` and ``run_probability`` under
``criterion="voltage"``, where part of the escapes retrap. The simulated fits of
:func:`gpuensembles.josephson.fit_switching` read their rate tables' errors from these.
"""

import argparse
import time

import numpy as np

import gpuensembles as ge

#: name -> (escape_rates arguments, variables checked)
CASES = {
    "overdamped": (dict(gamma=[0.5, 0.6, 0.7], model="overdamped", damping=1.0, D=0.05), ("rate",)),
    "underdamped": (dict(gamma=[0.5, 0.6, 0.7], damping=0.3, D=0.015, integrator="baoab"), ("rate",)),
    "voltage": (dict(gamma=[0.5, 0.55], damping=0.3, D=0.015, integrator="baoab", criterion="voltage"),
                ("switching_rate", "run_probability")),
}


def calibration(case: str, seeds: int, rel_error: float, backend: str = "auto") -> list:
    """Rows ``(variable, gamma, mean, spread / stated, std of z, coverage of |z| < 1.96)`` of ``case``."""
    kwargs, names = CASES[case]
    runs = [ge.escape_rates(**kwargs, h=0.01, rel_error=rel_error, method="ffs", seed=seed, backend=backend,
                            progress=False) for seed in range(seeds)]
    rows = []
    for name in names:
        values = np.array([ds[name].values for ds in runs])
        stated = np.array([ds[f"{name}_stderr"].values for ds in runs])
        mean = values.mean(axis=0)
        z = (values - mean) / stated
        for k, gamma in enumerate(kwargs["gamma"]):
            rows.append((name, gamma, mean[k], values[:, k].std(ddof=1) / stated[:, k].mean(), z[:, k].std(),
                         float(np.mean(np.abs(z[:, k]) < 1.96))))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=list(CASES), default="underdamped")
    parser.add_argument("--seeds", type=int, default=150)
    parser.add_argument("--rel-error", type=float, default=0.1)
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = calibration(args.case, args.seeds, args.rel_error, args.backend)
    print(f"{args.case}, {args.seeds} seeds, rel_error {args.rel_error}, forward flux sampling "
          f"({time.perf_counter() - t0:.0f} s)")
    print("| variable | gamma | mean over seeds | spread / stated error | std of z | P(abs(z) < 1.96) |")
    print("|---|---|---|---|---|---|")
    for name, gamma, mean, ratio, z_std, covered in rows:
        print(f"| {name} | {gamma} | {mean:.4g} | {ratio:.2f} | {z_std:.2f} | {covered:.3f} |")


if __name__ == "__main__":
    main()
