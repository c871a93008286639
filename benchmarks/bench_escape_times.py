"""asv benchmarks: escape-time integration throughput (steps/s) against naive baselines.

Run with asv (see asv.conf.json); ``python -m benchmarks`` prints the same figures as a table.
Each ``track_*`` returns integration steps per second of wall time, every realization
run to its escape (the tail of the longest realizations included).
"""

import gpuensembles as ge
from gpuensembles.core import backend as _backend

from . import baselines, measure

#: Pierro et al. 2018, Fig. 10 setting at its largest noise, where an escape takes ~6.6e4 steps.
CASE = dict(damping=0.05, gamma=0.5, D=0.012, h=0.004)
SIZES = {"cpu": 1 << 13, "cuda": 1 << 24}
#: Realizations in ``python -m benchmarks``: the package's full call, the naive kernel, NumPy.
TABLE_SIZES = {"cuda": (1 << 24, 1 << 21, 1 << 9), "cpu": (1 << 8, None, 1 << 5)}


def gpu_available():
    return _backend.cuda_available() and not _backend.simulating_cuda()


def escape_call(backend, realizations, dtype="float32", seed=1):
    """``call() -> steps`` of one ``escape_times`` call, every realization run to its escape."""

    def call():
        ds = ge.escape_times(**CASE, realizations=realizations, seed=seed, backend=backend, dtype=dtype,
                             progress=False)
        assert bool(ds.escaped.all())
        return int(ds.steps.sum())

    return call


def table_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: the float32 full call against the naive kernel and NumPy."""
    full, naive, numpy = TABLE_SIZES[backend]
    package = measure.timed(escape_call(backend, full), repeats, warm=escape_call(backend, 64))
    name = f"escape times float32 (2^{full.bit_length() - 1} realizations)"
    rate, call = package.rates("steps/s"), package.rates("steps/s", which="call")
    rows = []
    if naive is None:
        rows.append(measure.Row(name, rate, call, "naive numba.cuda kernel: needs a GPU", None))
    else:
        launch = baselines.numba_cuda_escape_launcher(**CASE, realizations=naive)
        rows.append(measure.Row(name, rate, call, f"naive numba.cuda, xoroshiro, 1 thread/realization "
                                f"(2^{naive.bit_length() - 1})", measure.repeated(launch, repeats).rates("steps/s")))
    seeds = iter(range(2, 100))
    vectorised = measure.repeated(lambda: baselines.numpy_escape_steps(**CASE, realizations=numpy, seed=next(seeds)),
                                  repeats, basis="clock")
    rows.append(measure.Row(name, rate, call, f"NumPy vectorised float64, 1 core (2^{numpy.bit_length() - 1})",
                            vectorised.rates("steps/s")))
    return rows


class EscapeTimeThroughput:
    params = (["cpu", "cuda"], ["float32", "float64"])
    param_names = ["backend", "dtype"]
    timeout = 600

    def setup(self, backend, dtype):
        if backend == "cuda" and not gpu_available():
            raise NotImplementedError("no GPU")  # asv: skip

    def track_steps_per_second(self, backend, dtype):
        timed = measure.timed(escape_call(backend, SIZES[backend], dtype), 1, warm=escape_call(backend, 64, dtype))
        return timed.rates("steps/s", which="call").median

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
