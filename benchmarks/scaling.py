"""Strong scaling over the GPUs of one host through ``gpuensembles.cluster`` (dask-cuda).

    python -m benchmarks.scaling [--gpus 1 4] [--seconds 60] [--only escape_times,rates,...]
    python -m benchmarks.scaling --gpus 1 --work-gpus 4 --only ising --json one_ising.json  # one baseline
    python -m benchmarks.scaling --gpus 4 --sizes one_*.json --json four.json               # at its sizes
    python -m benchmarks.scaling --report one_*.json four.json                              # the table
    python -m benchmarks.scaling --gpus 0 1 4 --only rates          # and the eager run on one GPU beside them

Each case is one call a user makes with a client active, timed whole (the call and the
compute of everything it returns, on the workers; only a sum comes back):

* ``rates``: the Li et al. (2007) junction at 1/s, 200/s and 1e4/s from one rate curve with
  the rates to 1% (``switching_currents(method="rates")``, BAOAB at h = 1e-3): its adaptive
  passes spread their bias points over the workers. Fixed size.
* ``escape_times`` (seed Fig. 10 setting, D = 0.008; 64 chunks) and ``switching_currents``
  (the Li junction at a 2e7/s sweep, the direct method; 16 chunks);
* ``ising`` over L = 256, 512, 1024 and 16 values of beta (32 realizations each);
* ``xorsat``: ``xorsat.solve`` over 24 instances (N = 64, 80, 96) at p = 0.1, 1024 clones.

The sized cases are calibrated on one GPU (probe runs, grown until one lasts a twentieth of
the target, then the size that takes ``--seconds`` times the largest GPU count there:
``--seconds`` of work per GPU at that count). Every worker compiles (or loads) the kernels
before the clock starts. It prints the parallel efficiency T1 / (n Tn) and checks that the
client process never held a CUDA context (nvidia-smi lists the processes that do). ``--gpus 0``
adds the same call run eagerly on one GPU without a client (after that check, in this
process), and the table gives each cluster run's efficiency against it too.

The one-GPU baselines take n times as long as the n-GPU runs. ``benchmarks/gpu_cluster.sh``
can therefore run them side by side, one case per GPU (``CUDA_VISIBLE_DEVICES``), each
writing its sizes and times to JSON. The n-GPU runs then take those sizes, and ``--report``
joins the files into one table.
"""

import argparse
import glob
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

import gpuensembles as ge

from .bench_switching import LI2007, li2007_case

ESCAPE = dict(damping=0.05, gamma=0.5, D=0.008, h=0.004, seed=3)  # 2.8e5 steps per escape
SWITCH = dict(li2007_case(2e7), h=1e-4, seed=3)  # 3.9e6 steps per switching event
# 512 lattices an L: a quarter of them fills an H200 (H200: 64 lattices of 1024^2 ran 5 % slower each than 128)
ISING = dict(L=[256, 512, 1024], beta=np.linspace(0.40, 0.48, 16), realizations=32, measure_every=100, seed=3)
RATES = dict(physical=dict(LI2007, sweep_rate=np.array([1.0, 200.0, 1e4])), h=1e-3, integrator="baoab",
             method="rates", rel_error=0.01, realizations=30_000, seed=4)


def _instances():
    return ge.xorsat.random_instances(N=[64, 80, 96], count=8, seed=1)


def _escape(n):
    return ge.escape_times(**ESCAPE, realizations=n, chunks=-(-n // 64)).steps.sum()


def _switching(n):
    return ge.switching_currents(**SWITCH, realizations=n, chunks=-(-n // 16)).steps.sum()


def _ising(hundreds):
    return ge.ising(**ISING, sweeps=100 * hundreds, progress=False).bin_e.sum()


def _xorsat(runs):
    return ge.xorsat.solve(_instances(), p=0.1, clones=1024, runs=runs, seed=3, progress=False).tts_sweeps.sum()


def _rates(_):
    return ge.switching_currents(**RATES, progress=False).switching_current.sum()


#: name -> (make(size) -> lazy sum, probe size; None for a fixed size)
CASES = {
    "rates": (_rates, None),
    "escape_times": (_escape, 200_000),
    "switching_currents": (_switching, 20_000),
    "ising": (_ising, 20),
    "xorsat": (_xorsat, 64),  # runs are heavy-tailed: a probe of a few would size the run by luck
}


def _compile_here():
    """Compile or load every case's kernels in this (worker) process, outside the timed runs."""
    from gpuensembles.core import engine, runs

    eager = runs._active_client
    runs._active_client = engine._active_client = lambda: None  # run eagerly here, not as tasks of the worker
    try:
        ge.escape_times(**ESCAPE, realizations=64, progress=False)
        ge.switching_currents(**dict(li2007_case(2e9), h=1e-4), realizations=64, progress=False)
        ge.ising(**{**ISING, "realizations": 1, "L": [256, 1024], "measure_every": 1}, sweeps=2, progress=False)
        ge.xorsat.solve(_instances().isel(instance=[0], N=[0]), p=0.1, clones=64, runs=1, progress=False)
        ge.escape_rates(physical={k: v for k, v in LI2007.items()}, gamma=[0.5, 0.9], h=1e-3, integrator="baoab",
                        rel_error=0.3, progress=False)
    finally:
        runs._active_client = engine._active_client = eager
    return True


def _timed(make, size):
    t0 = time.perf_counter()
    total = make(size).compute()
    return time.perf_counter() - t0, float(total)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--seconds", type=float, default=60.0, help="work per GPU at --work-gpus GPUs")
    parser.add_argument("--work-gpus", type=int, help="GPUs the sizes are set for (default: the most of --gpus)")
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--sizes", nargs="+", default=[], help="JSON files of earlier runs whose sizes to take")
    parser.add_argument("--json", help="write the sizes and times here")
    parser.add_argument("--report", nargs="+", help="only print the table of these JSON files")
    args = parser.parse_args(argv)
    if args.report:
        return report(_read(args.report))
    names = [n for n in args.only.split(",") if n]
    sizes = {r["case"]: r["size"] for r in _read(args.sizes)}
    missing = [n for n in names if args.sizes and n not in sizes and CASES[n][1] is not None]
    if missing:
        raise ValueError(f"--sizes gives no size for {missing}: name the JSON of their one-GPU runs")
    work_gpus = args.work_gpus or max(args.gpus)
    results = []
    for gpus in sorted(g for g in args.gpus if g > 0):
        with ge.cluster(n_gpus=gpus, dashboard_address=None) as client:
            client.wait_for_workers(gpus)
            assert all(client.run(_compile_here).values())  # every worker compiles before the clock starts
            results += _run_cases(names, sizes, gpus, args.seconds * work_gpus)
    pids = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.split()
    print(f"client process holds a CUDA context: {str(os.getpid()) in pids}")
    if 0 in args.gpus:  # the eager reference, in this process (after the check: it takes a context)
        _compile_here()
        results += _run_cases(names, sizes, 0, args.seconds * work_gpus)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)
    report(results)


def _run_cases(names, sizes, gpus, seconds_in_all) -> list:
    """Time each case on ``gpus`` GPUs (0: eagerly, no client); a case without a size gets the
    one that takes ``seconds_in_all`` there, from a probe run."""
    results = []
    for name in names:
        print(f"{name} on {_gpus_text(gpus)}: starting at {time.strftime('%H:%M:%S')}", flush=True)
        make, probe = CASES[name]
        if name not in sizes:
            size = probe
            if probe is not None:  # the probe's first run may compile kernels _compile_here did not
                _timed(make, probe)
                size = _sized(lambda n, make=make: _timed(make, n)[0], probe, seconds_in_all)
            sizes[name] = size
        elif probe is not None:  # a size given: a short run first takes what a first run costs
            _timed(make, max(1, sizes[name] // 50))
        if probe is None:  # a fixed size: one run first, so that the timed run is no process's first
            _timed(make, None)
        seconds, total = _timed(make, sizes[name])
        results.append(dict(case=name, size=sizes[name], gpus=gpus, seconds=seconds, total=total))
        print(f"{name}: {_gpus_text(gpus)}, size {sizes[name]}: {seconds:.1f} s (sum {total:.6g})", flush=True)
    return results


def _sized(seconds_of, probe: int, seconds_in_all: float) -> int:
    """The size whose run takes about ``seconds_in_all``, from runs timed by ``seconds_of(size)``.

    A short run is mostly fixed costs (a call's compile checks, the tail of its slowest items),
    and scaling its time up linearly sizes the run too small: XORSAT's probe of 64 runs took
    0.84 s on an H200, which sized a four-minute baseline at 30 s. So the probe grows, at least
    twice and at most ten times a step, until a run lasts a twentieth of the target, and the
    size is scaled from that run. With fixed costs ``c`` the run then takes at least
    ``seconds_in_all - 19 c``, and at most ``seconds_in_all`` where the time is linear.
    """
    size = probe
    while True:
        seconds = seconds_of(size)
        if seconds >= seconds_in_all / 20:
            return max(1, int(size * seconds_in_all / seconds))
        size = int(size * min(10.0, max(2.0, seconds_in_all / 20 / max(seconds, 1e-9))))


def _gpus_text(gpus) -> str:
    return f"{gpus} GPU(s)" if gpus else "one GPU eagerly"


def _read(patterns) -> list:
    paths = [(pattern, sorted(glob.glob(pattern))) for pattern in patterns]
    empty = [pattern for pattern, found in paths if not found]
    if empty:
        raise ValueError(f"no file matches {empty}")
    return [r for _, found in paths for path in found for r in json.loads(Path(path).read_text())]


def report(results):
    """Print the table: each cluster run against the cluster run on the fewest GPUs of its case and
    size, and against the eager run on one GPU (``gpus`` 0) where there is one."""
    print("| case | size | GPUs | seconds | speed-up | parallel efficiency | of the eager GPU | same numbers |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        same = [b for b in results if (b["case"], b["size"]) == (r["case"], r["size"])]
        eager = next((b for b in same if b["gpus"] == 0), None)
        if r["gpus"] == 0:
            print(f"| {r['case']} | {r['size']} | eager | {r['seconds']:.1f} | | | | |")
            continue
        of_eager = f"{eager['seconds'] / (r['gpus'] * r['seconds']):.1%}" if eager else "n/a"
        base = min((b for b in same if b["gpus"] > 0), key=lambda b: b["gpus"])
        if base is not r and base["gpus"] == r["gpus"] or base is r and r["gpus"] > 1:
            print(f"| {r['case']} | {r['size']} | {r['gpus']} | {r['seconds']:.1f} | n/a | n/a (no run on fewer GPUs "
                  f"at this size) | {of_eager} | n/a |")
            continue
        speedup = base["seconds"] / r["seconds"]
        print(f"| {r['case']} | {r['size']} | {r['gpus']} | {r['seconds']:.1f} | {speedup:.2f} | "
              f"{speedup * base['gpus'] / r['gpus']:.1%} | {of_eager} | {_same(r['total'], base['total'])} |")


def _same(total, base) -> str:
    """``True`` for equal sums, else their relative difference (a sum over other chunks rounds otherwise)."""
    if total == base:
        return "True"
    return f"{abs(total - base) / max(abs(base), 1e-300):.1e} relative"


if __name__ == "__main__":
    main()
