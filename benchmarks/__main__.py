"""Every GPU benchmark, measured the same way, in one table: ``python -m benchmarks``.

    python -m benchmarks [--only ising,kuramoto,langevin,mcls,escape,xorsat] [--repeats 5] [--json FILE]
    python -m benchmarks --quick        # tiny sizes on the CPU backend (a smoke test; no GPU)

Each row is one workload: the package's rate, the baseline measured in the same run (a
naive kernel, the same source on the CPU, or a hardware bound), their ratio, and for both
the median and range of ``--repeats`` timed calls after a warm-up; ``spread`` is
``(max - min) / median`` of the worse of the two, flagged above 5 %. How the times are
taken is in :mod:`benchmarks.measure`: the package's figure is over the device time of its
kernels (CUDA events around every launch), the whole-call figure beside it over the wall
time of the public function. The header names the device, driver and versions.
"""

import argparse
import json
import platform
import subprocess
import sys
import time
import traceback
import warnings

import numba
import numpy as np

import gpuensembles as ge
from gpuensembles.core import backend as _backend

from . import bench_escape_times, bench_ising, bench_langevin, bench_mcls, bench_xorsat, measure
from .bench_escape_times import gpu_available

#: name -> rows(backend, repeats), in the order of the table.
WORKLOADS = {
    "ising": bench_ising.table_rows,
    "kuramoto": bench_langevin.kuramoto_rows,
    "langevin": bench_langevin.langevin_rows,
    "mcls": bench_mcls.table_rows,
    "escape": bench_escape_times.table_rows,
    "xorsat": bench_xorsat.table_rows,
}
MIN_REPEATS = 5


def environment(backend: str) -> list:
    """Header lines: device, driver, versions, threads."""
    versions = {"gpuensembles": ge.__version__, "numpy": np.__version__, "numba": numba.__version__}
    try:
        import numba_cuda

        versions["numba-cuda"] = numba_cuda.__version__
    except ImportError:
        versions["numba-cuda"] = "not installed"
    versions["python"] = platform.python_version()
    lines = [f"device: {_backend.device_name(backend)}"]
    if backend == "cuda":
        lines.append(f"driver: {_driver_version()}")
    lines.append(", ".join(f"{k} {v}" for k, v in versions.items()))
    lines.append(f"CPU: {numba.config.NUMBA_NUM_THREADS} numba threads ({platform.processor() or platform.machine()})")
    return lines


def _driver_version() -> str:
    cuda = _backend.cuda_module()
    api = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        smi = []
    return f"{smi[0] if smi else 'unknown'} (CUDA {api})"


def run(names, backend: str, repeats: int, log=sys.stderr) -> tuple:
    """Rows of the named workloads and the names of those that failed (their traceback goes to ``log``)."""
    rows, failed = [], []
    for name in names:
        t0 = time.perf_counter()
        try:
            rows += WORKLOADS[name](backend, repeats)
        except Exception:  # one broken workload must not cost the others' figures
            failed.append(name)
            traceback.print_exc(file=log)
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]", file=log, flush=True)
    return rows, failed


def to_json(rows) -> list:
    """The rows' figures (all repeats) as JSON-ready dicts."""
    def figure(f):
        return None if f is None else {"unit": f.unit, "values": f.values, "median": f.median, "basis": f.what}

    return [{"workload": r.workload, "package": figure(r.package), "whole_call": figure(r.call),
             "baseline_name": r.baseline_name, "baseline": figure(r.baseline), "ratio": r.ratio, "spread": r.spread}
            for r in rows]


def main(argv=None):
    """Run the benchmarks and print the table; returns the rows."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes on the CPU backend (no GPU needed)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated subset of {list(WORKLOADS)}")
    parser.add_argument("--repeats", type=int, default=MIN_REPEATS, help="timed calls per figure, after a warm-up")
    parser.add_argument("--json", metavar="FILE", help="also write every figure (all repeats) to FILE")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if args.quick:
        backend = "cpu"
    elif not gpu_available():
        parser.error("no CUDA GPU is visible: run on a GPU machine, or use --quick for the CPU smoke test")
    else:
        backend = "cuda"
        if args.repeats < MIN_REPEATS:
            parser.error(f"--repeats must be >= {MIN_REPEATS} on a GPU (the medians and ranges the table reports)")
    # the naive baselines warm up on grids of a few blocks; numba-cuda's occupancy hint is noise there
    warnings.filterwarnings("ignore", message=r".*Grid size \d+ will likely result in GPU under-utilization")
    t0 = time.perf_counter()
    print("\n".join(environment(backend)), flush=True)
    rows, failed = run(names, backend, args.repeats)
    print(f"\n{args.repeats} timed calls per figure after a warm-up call; package figures over the device time "
          "of the\npackage's kernels (CUDA events around every launch site; on the CPU, the whole call); whole call: "
          "wall time of\nthe public function. ratio: package / baseline (seconds per call: baseline / package; % "
          "rows: fraction of\nthe bound or rate named). spread: (max - min) / median of the wider figure, flagged > "
          f"{measure.SPREAD_LIMIT:.0%}.\n")
    print(measure.table(rows))
    if failed:
        print(f"\nFAILED (traceback on stderr): {', '.join(failed)}")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": environment(backend), "rows": to_json(rows), "failed": failed}, f, indent=1)
    if failed:
        sys.exit(1)
    return rows


if __name__ == "__main__":
    main()
