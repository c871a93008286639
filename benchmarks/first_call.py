"""Time to first result: import, the first and a second call of the README's CLI jobs in fresh processes.

    python -m benchmarks.first_call [--backend cpu|auto] [--only escape-times,ising] [--small]

Each job runs in a new interpreter three times over one temporary kernel cache: with the
cache empty (every kernel compiled), then twice with it filled. Each process times
``import gpuensembles``, the first CLI call and a second, identical call (the warm call),
and the compile seconds in each call. The issue's target: a first call, once compiled
before, of at most 1.5 x the warm call + 1 s, and an import of at most 1 s. ``--small`` runs
the same jobs with 64 realizations / 200 sweeps, so that the fixed costs show.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

#: The README's main job and the Ising example of ``gpuensembles --help``.
JOBS = {
    "escape-times": ["escape-times", "--damping", "0.05", "--gamma", "0.5", "--D", "0.01", "--h", "0.004",
                     "--realizations", "5120", "--seed", "1"],
    "ising": ["ising", "--L", "16", "32", "64", "--beta", "0.40", "0.42", "0.44", "0.46", "0.48", "--sweeps", "20000",
              "--thermalization", "2000", "--realizations", "32", "--seed", "1"],
}
#: ``--small``: options that shrink each job (the later of a repeated option wins).
SMALL = {"escape-times": ["--realizations", "64"], "ising": ["--sweeps", "200", "--thermalization", "20"]}

CHILD = """
import contextlib, io, json, sys, time
t0 = time.perf_counter()
import gpuensembles
from gpuensembles import cli
from gpuensembles.core.cache import compile_seconds
t1 = time.perf_counter()
times = []
for _ in range(2):
    c0, s0 = compile_seconds(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        cli.main(sys.argv[1:])
    times.append((time.perf_counter() - s0, compile_seconds() - c0))
summary = out.getvalue().splitlines()[1]
print(json.dumps({"import": t1 - t0, "first": times[0], "warm": times[1], "summary": summary}))
"""


def fresh_process(args, cache_dir, output):
    """One child: import and two identical CLI calls; returns its timings and its total wall time."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("GPUENSEMBLES_CACHE", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args, "--no-progress", "--overwrite", "-o", output], env=env,
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.splitlines()[-1])
    result["process"] = time.perf_counter() - t0
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--only", default=",".join(JOBS))
    parser.add_argument("--small", action="store_true", help="shrink the jobs so that fixed costs dominate")
    args = parser.parse_args(argv)
    print(f"{'job':<13}{'cache':>6}{'process s':>10}{'import s':>9}{'first call s':>13}{'(compiling)':>12}"
          f"{'warm call s':>12}{'target s':>9}  first / warm")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.only.split(","):
            cache_dir = os.path.join(scratch, f"cache-{name}")
            job = JOBS[name] + (SMALL[name] if args.small else []) + ["--backend", args.backend]
            for cache in ("cold", "warm", "warm"):
                r = fresh_process(job, cache_dir, os.path.join(scratch, f"{name}.nc"))
                (first, compiling), (warm, _) = r["first"], r["warm"]
                print(f"{name:<13}{cache:>6}{r['process']:>10.2f}{r['import']:>9.2f}{first:>13.2f}{compiling:>12.2f}"
                      f"{warm:>12.2f}{1.5 * warm + 1:>9.2f}  {first / warm:.2f}", flush=True)
            print(f"  summary line of the last call: {r['summary']}")


if __name__ == "__main__":
    main()
