"""Print a table of escape-time throughput: the package against its baselines, same run.

    python -m benchmarks.report [--quick]

``--quick`` shrinks every size 64x (a smoke test, used by the test suite).
"""

import argparse
import math

from . import baselines
from .bench_escape_times import CASE, SIZES, gpu_available, package_steps


def _row(name, device, steps, seconds, mean_steps=None):
    rate = steps / seconds
    return f"| {name:<44} | {device:<26} | {steps:>10.3e} | {seconds:>8.3f} | {rate:>10.3e} |" + (
        f" {mean_steps:>9.1f} |" if mean_steps is not None else "           |"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    shrink = 64 if args.quick else 1
    from gpuensembles.core import backend as _backend

    rows = []
    print(f"case: {CASE}")
    header = (f"| {'implementation':<44} | {'device':<26} | {'steps':>10} | {'seconds':>8} | {'steps/s':>10} "
              "| mean steps |")
    rows.append(header)
    rows.append("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    backends = ["cpu"] + (["cuda"] if gpu_available() else [])
    means = {}
    for backend in backends:
        n = SIZES[backend] // shrink
        device = _backend.device_name(backend)[:26]
        for dtype in ("float32", "float64"):
            steps, seconds, ds = package_steps(backend, n, dtype)
            m = float(ds.steps.mean())
            se = float(ds.steps.std()) / math.sqrt(n)
            means[(backend, dtype)] = (m, se)
            rows.append(_row(f"gpuensembles {backend} {dtype}", device, steps, seconds, m))
    n = SIZES["cpu"] // shrink
    steps, seconds = baselines.numpy_escape_steps(**CASE, realizations=n)
    rows.append(_row("baseline: NumPy vectorised (float64)", "CPU", steps, seconds, steps / n))
    if gpu_available():
        n = SIZES["cuda"] // shrink
        steps, seconds = baselines.numba_cuda_escape_steps(**CASE, realizations=n)
        rows.append(_row("baseline: numba.cuda xoroshiro, 1 thread/real.", _backend.device_name("cuda")[:26], steps,
                         seconds, steps / n))
    print("\n".join(rows))
    ref = means[("cpu", "float64")]
    for key, (m, se) in means.items():
        z = (m - ref[0]) / math.hypot(se, ref[1])
        print(f"mean steps {key}: {m:.1f} +- {se:.1f}  (z vs cpu float64: {z:+.2f})")


if __name__ == "__main__":
    main()
