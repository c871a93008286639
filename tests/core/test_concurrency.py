"""Kernels loaded and launched for the first time from many threads at once (CPU and CUDA simulator).

Each case runs in a child process, so that the kernels are loaded there for the first time:
six threads start the same run together, and every one must give the numbers of a run made
alone afterwards. (On a GPU the same runs through a dask-cuda cluster of two threads per
worker: ``tests/josephson/test_gpu.py``.)
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, os, sys, threading
    import numpy as np
    import gpuensembles as ge
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        from tests.simulator_fixes import lock_shared_allocations
        lock_shared_allocations()

    run = {run}
    results, errors = {{}}, []

    def one(i):
        try:
            results[i] = run()
        except BaseException as err:  # reported to the test, which names it
            errors.append(repr(err))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alone = run()
    same = [bool(np.array_equal(r, alone)) for r in results.values()]
    print(json.dumps({{"errors": errors, "same": same}}))
""")

RUNS = {
    "escape_times": "lambda: ge.escape_times(damping=1.0, gamma=0.5, h=0.01, model='overdamped', D=[0.3, 0.5], "
                    "realizations={n}, seed=1, backend='{backend}', progress=False).steps.values",
    "escape_rates": "lambda: ge.escape_rates(model='overdamped', damping=1.0, gamma=[0.3, 0.5], D=0.5, h=0.05, "
                    "method='direct', rel_error=0.5, seed=5, backend='{backend}', progress=False).rate.values",
    "ising": "lambda: ge.ising(L=8, beta=[0.3, 0.5], sweeps=4, realizations=2, seed=7, backend='{backend}', "
             "progress=False).bin_e.values",
}


def _threads(run: str, simulator: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_ENABLE_CUDASIM="1" if simulator else "0")
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(run=run)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_threads_load_cpu_kernels_at_once(name):
    result = _threads(RUNS[name].format(n=64, backend="cpu"), simulator=False)
    assert result == {"errors": [], "same": [True] * 6}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_threads_launch_simulated_kernels_at_once(name):
    result = _threads(RUNS[name].format(n=4, backend="cuda"), simulator=True)
    assert result == {"errors": [], "same": [True] * 6}
