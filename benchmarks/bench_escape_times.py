"""asv benchmarks: escape-time integration throughput (steps/s) against naive baselines.

Run with asv (see asv.conf.json) or as a script: ``python -m benchmarks.report``.
Each ``track_*`` returns integration steps per second of wall time, every realization
run to its escape (the tail of the longest realizations included).
"""

import time

import gpuensembles as ge
from gpuensembles.core import backend as _backend

from . import baselines

#: Seed 000, Fig. 10 setting at its largest noise, where an escape takes ~6.6e4 steps.
CASE = dict(damping=0.05, gamma=0.5, D=0.012, h=0.004)
SIZES = {"cpu": 1 << 13, "cuda": 1 << 24}


def gpu_available():
    return _backend.cuda_available() and not _backend.simulating_cuda()


def package_steps(backend, realizations, dtype="float32", seed=1):
    """Steps and seconds of one ``escape_times`` call (after a warm-up compile)."""
    ge.escape_times(**CASE, realizations=64, seed=seed, backend=backend, dtype=dtype, progress=False)
    t0 = time.perf_counter()
    ds = ge.escape_times(**CASE, realizations=realizations, seed=seed, backend=backend, dtype=dtype, progress=False)
    seconds = time.perf_counter() - t0
    return int(ds.steps.sum()), seconds, ds


class EscapeTimeThroughput:
    params = (["cpu", "cuda"], ["float32", "float64"])
    param_names = ["backend", "dtype"]
    timeout = 600

    def setup(self, backend, dtype):
        if backend == "cuda" and not gpu_available():
            raise NotImplementedError("no GPU")  # asv: skip

    def track_steps_per_second(self, backend, dtype):
        steps, seconds, ds = package_steps(backend, SIZES[backend], dtype)
        assert bool(ds.escaped.all())
        return steps / seconds

    track_steps_per_second.unit = "steps/s"


class NaiveBaselines:
    timeout = 600

    def track_numba_cuda_xoroshiro(self):
        if not gpu_available():
            raise NotImplementedError("no GPU")
        steps, seconds = baselines.numba_cuda_escape_steps(**CASE, realizations=SIZES["cuda"])
        return steps / seconds

    track_numba_cuda_xoroshiro.unit = "steps/s"

    def track_numpy_vectorised(self):
        steps, seconds = baselines.numpy_escape_steps(**CASE, realizations=SIZES["cpu"])
        return steps / seconds

    track_numpy_vectorised.unit = "steps/s"
