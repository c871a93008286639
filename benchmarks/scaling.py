"""Strong scaling over the GPUs of one host through ``gpuensembles.cluster`` (dask-cuda).

    python -m benchmarks.scaling [--gpus 1 2 4] [--seconds 60]

For escape times (seed Fig. 10 setting, D = 0.008; 64 chunks) and switching currents (Li et
al. 2007 junction, 2e7/s sweep; 16 chunks, each large enough to fill a GPU), sized to take
about ``--seconds`` on one GPU, it times
``ds.steps.sum().compute()`` (every chunk run on the workers, only a number comes back)
on 1, 2 and 4 GPUs, and prints the parallel efficiency T1 / (n Tn). It also checks that
the client process never held a CUDA context (nvidia-smi lists the processes that do).
"""

import argparse
import os
import subprocess
import time

import gpuensembles as ge

from .bench_switching import li2007_case

ESCAPE = dict(damping=0.05, gamma=0.5, D=0.008, h=0.004, seed=3)  # 2.8e5 steps per escape
ESCAPE_RATE = 4.5e11 / 2.8e5  # realizations per second on one H200 (float32 whole calls)
SWITCH = dict(li2007_case(2e7), h=1e-4, seed=3)  # 3.9e6 steps per switching event
SWITCH_RATE = 3.3e11 / 3.9e6


def _compile_here():
    """Compile both kernels in this (worker) process, outside the timed runs."""
    import numpy as np

    from gpuensembles.core.templates.first_passage import first_passage_runner
    from gpuensembles.models.josephson import physics as washboard

    for factory, row in ((washboard.escape_kernel, [1.0, 0.05, 0.5, 0.008, 0.004]),
                         (washboard.switching_kernel, [211.0, 4.1, 58.3, 1e-4, 1.8e-7, 0.0, 0.0, 1e6])):
        runner = first_passage_runner(factory("underdamped", "float32", "barrier_top", "euler"), "cuda")
        runner(np.array([row]), np.zeros(1, np.uint32), 0, 1, 10**3, np.empty((1, 256), np.int64))
    return True


def _timed(make, chunk):
    ds = make(chunk)
    t0 = time.perf_counter()
    steps = int(ds.steps.sum().compute())
    return time.perf_counter() - t0, steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    cases = {
        "escape_times": (ESCAPE_RATE, 64, lambda n, c: ge.escape_times(**ESCAPE, realizations=n, chunks=c)),
        "switching_currents": (SWITCH_RATE, 16,
                               lambda n, c: ge.switching_currents(**SWITCH, realizations=n, chunks=c)),
    }
    results = {}
    for gpus in args.gpus:
        with ge.cluster(n_gpus=gpus, dashboard_address=None) as client:
            client.wait_for_workers(gpus)
            assert all(client.run(_compile_here).values())  # every worker compiles before the clock starts
            for name, (rate, n_chunks, make) in cases.items():
                n = int(rate * args.seconds)
                seconds, steps = _timed(lambda c: make(n, c), -(-n // n_chunks))  # noqa: B023 (called at once)
                results[(name, gpus)] = seconds
                print(f"{name}: {gpus} GPU(s), {n} realizations in {n_chunks} chunks: {seconds:.1f} s, "
                      f"{steps / seconds:.3e} steps/s", flush=True)
    pids = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.split()
    print(f"client process holds a CUDA context: {str(os.getpid()) in pids}")
    print("| model | GPUs | seconds | speed-up | parallel efficiency |")
    print("|---|---|---|---|---|")
    for (name, gpus), seconds in results.items():
        one = results.get((name, 1))
        if one:
            print(f"| {name} | {gpus} | {seconds:.1f} | {one / seconds:.2f} | {one / (gpus * seconds):.1%} |")


if __name__ == "__main__":
    main()
