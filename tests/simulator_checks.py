"""Runs under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set by the caller) and prints JSON.

Used by the ``simulated`` fixture of ``conftest.py`` in a subprocess, because the simulator
must be switched on before ``numba.cuda`` is first imported; the cases arrive as JSON in
the first argument.
"""

import json
import math
import os
import sys
import tempfile
import time
import warnings

import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# The simulator runs each CUDA thread as a Python thread and hands the interpreter lock on at
# every block barrier; at Python's default 5 ms switch interval a block of 64 threads spends
# most of its time waiting for its turn (the Ising cases ran 1.5-3x longer).
sys.setswitchinterval(1e-4)

import gpuensembles as ge  # noqa: E402
from gpuensembles.core import backend as _backend  # noqa: E402
from gpuensembles.core import rng  # noqa: E402
from gpuensembles.core.templates import coupled, walks  # noqa: E402
from gpuensembles.models.ising import bands  # noqa: E402
from gpuensembles.models.ising import kernels as lattices  # noqa: E402
from gpuensembles.models.ising import run as ising_model  # noqa: E402
from tests.round_case import flux_chain, pruned_round, run_round, trial_round  # noqa: E402
from tests.simulator_fixes import lock_shared_allocations  # noqa: E402

lock_shared_allocations()  # (the simulator's shared arrays are not shared in a race: see simulator_fixes)

cuda = _backend.cuda_module()
CASES = json.loads(sys.argv[1])


@cuda.jit
def _draw_kernel(words, normals, seed, stream):
    i = cuda.grid(1)
    if i < words.shape[0]:
        w = rng.philox4x32(np.uint32(i), np.uint32(0), np.uint32(3 * i), np.uint32(1), seed, stream)
        z = rng.normals4_f32(seed, stream, i, 2 * i + 1)
        for j in range(4):
            words[i, j] = w[j]
            normals[i, j] = z[j]


def draws(n=16, seed=99, stream=5):
    words = np.zeros((n, 4), dtype=np.uint32)
    normals = np.zeros((n, 4), dtype=np.float32)
    _draw_kernel[2, 8](words, normals, np.uint32(seed), np.uint32(stream))
    return {"words": words.tolist(), "normals": normals.view(np.uint32).tolist()}


def escape(model, dtype):
    ds = ge.escape_times(damping=1.0 if model == "overdamped" else 0.2, gamma=0.5, D=[0.3, 0.5], h=0.01,
                         realizations=6, seed=11, model=model, dtype=dtype, backend="cuda", max_steps=20_000)
    return {"steps": ds.steps.values.tolist(), "escaped": ds.escaped.values.tolist(), "device": ds.attrs["device"]}


def rates(kwargs):
    ds = ge.escape_rates(**kwargs, backend="cuda")
    return {"rate": ds.rate.values.tolist(), "steps": ds.steps.values.tolist(), "device": ds.attrs["device"]}


def ramp(function, case):
    ds = getattr(ge, function)(**CASES[case], backend="cuda")
    return {"steps": ds.steps.values.tolist(), "device": ds.attrs["device"]}


def mcls(method, estimator):
    # 16 bins fit in shared memory; with the limit lowered they take the global-memory tally path
    # (remembering a walk's last states in the default kernel, adding every visit in "plain").
    # The eager GPU path reduces over the batches on the device; keep_batches takes the host path.
    out = {}
    shared = walks._WALK_SHARED_BYTES
    for path, limit, variant in (("shared", shared, "default"), ("global", 64, "default"),
                                 ("global-plain", 64, "plain")):
        walks._WALK_SHARED_BYTES = limit
        os.environ[walks.WALK_VARIANT_VARIABLE] = variant
        A = ge.mcls.problems.shifted_laplacian_1d(16, shift=0.3)
        b = np.cos(np.arange(16))
        kw = dict(method=method, histories=24, batches=3, seed=5, weight_cutoff=1e-4, progress=False,
                  estimator=estimator, entries=None if method == "adjoint" else [0, 3, 15])
        for reduction, keep in (("device", False), ("host", True)):
            ds = ge.mc_solve(A, b, backend="cuda", keep_batches=keep, **kw)
            out[f"{path}-{reduction}"] = {"x": ds.x.values.tolist(), "x_stderr": ds.x_stderr.values.tolist(),
                                          "transitions": int(ds.transitions), "device": ds.attrs["device"]}
    walks._WALK_SHARED_BYTES = shared
    os.environ.pop(walks.WALK_VARIANT_VARIABLE)
    return out


def langevin(model, integrator):
    ds = ge.langevin(model=model, integrator=integrator, backend="cuda", **CASES["langevin"])
    return {"x": ds.x.values.tolist(), "density": ds.density.values.tolist(),
            "outside": (ds.density_below + ds.density_above).values.tolist(), "device": ds.attrs["device"]}


def kuramoto(path):
    case = dict(CASES["kuramoto"][path])
    if "coupling" in case:
        case["coupling"] = np.asarray(case["coupling"])
    ds = ge.kuramoto(backend="cuda", **case)
    return {"r": ds.r.values.tolist(), "density": ds.density.values.tolist(), "device": ds.attrs["device"]}


RESIDENT_MAX_L, STRIPS_MIN_L, WARP_ROOM = lattices.RESIDENT_MAX_L, ising_model.STRIPS_MIN_L, lattices._WARP_ROOM
RESIDENT_STRIPS_MAX_L = lattices.RESIDENT_STRIPS_MAX_L
BAND_WORDS, HALO = bands.MAX_WORDS, bands.HALO
MAX_GRID_Z = lattices._MAX_GRID_Z


def ising(path):
    lattices.RESIDENT_MAX_L = 0 if path.startswith("launched") else RESIDENT_MAX_L
    os.environ[lattices.RESIDENT_THREADS_VARIABLE] = "96" if path == "resident-columns" else ""
    os.environ[lattices.SWEEP_ROWS_VARIABLE] = "2" if path == "launched-strips-crowded" else ""
    ising_model.STRIPS_MIN_L = 64 if path.startswith(("launched-strips", "bands")) else STRIPS_MIN_L
    # the launched strips kernels take the lattices that the resident strips kernel would
    lattices.RESIDENT_STRIPS_MAX_L = 0 if path.startswith(("launched-strips", "bands")) else RESIDENT_STRIPS_MAX_L
    bands.MAX_WORDS, bands.HALO = (BAND_WORDS, 2) if path == "bands" else (0, HALO)
    lattices._WARP_ROOM = 1 if path.endswith("crowded") else WARP_ROOM
    lattices._MAX_GRID_Z = 1 if path == "launched-chunks" else MAX_GRID_Z
    launcher, banded = bands.launcher, []  # which parts took the band sweeps

    def spy(*args):
        sweeps = launcher(*args)
        banded.append(sweeps is not None)
        return sweeps

    bands.launcher = spy
    run_together, together = ising_model.engine.run_together, []  # whether the sizes ran at once

    def spy_together(calls, at_once):
        together.append(at_once and len(calls) > 1)
        return run_together(calls, at_once)

    ising_model.engine.run_together = spy_together
    ds = ge.ising(backend="cuda", **CASES["ising"][path])
    # a stored run: one sweep per launch, the lattice copied back in between (saved each time)
    ising_model.CHECKPOINT_SECONDS = 0.0
    stored = ge.ising(backend="cuda", **CASES["ising"][path], store=tempfile.mkdtemp())
    bands.launcher, ising_model.engine.run_together = launcher, run_together
    return {name: ds[name].values.tolist() for name in ds.data_vars} | {"device": ds.attrs["device"]} | {
        "stored": {name: stored[name].values.tolist() for name in stored.data_vars}, "banded": banded,
        "together": together}


def xorsat():
    kw = dict(CASES["xorsat"])
    instance = ge.xorsat.random_instance(kw.pop("N"), seed=kw.pop("instance_seed"))
    ds = ge.xorsat.solve(instance, backend="cuda", **kw)
    return {name: ds[name].values.tolist() for name in ("tts_sweeps", "solved", "clone", "solution")} | {
        "device": ds.attrs["device"]}


def _warn_like_numba_cuda():
    """Make the simulator's launch configuration warn as numba-cuda's does on a GPU (the
    simulator itself does not): its NumbaPerformanceWarning for grids under 128 blocks."""
    from numba.cuda.core.errors import NumbaPerformanceWarning
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    configure = FakeCUDAKernel.__getitem__

    def warning_configure(self, configuration):
        kernel = configure(self, configuration)
        blocks = math.prod(kernel.grid_dim)
        if blocks < 128:
            warnings.warn(NumbaPerformanceWarning(f"Grid size {blocks} will likely result in GPU under-utilization "
                                                  "due to low occupancy."), stacklevel=2)
        return kernel

    FakeCUDAKernel.__getitem__ = warning_configure
    return NumbaPerformanceWarning


def watched(run):
    """``run()`` with performance and deprecation warnings from numba, numba-cuda and the package
    raised as errors, under a kernel timer: ``(result or None, {"error": ..., "launches": ...})``.

    Every case runs this way once: its result is compared with the CPU, its record says that no
    warning reached the caller and which launch sites the timer saw."""
    categories = (_warn_like_numba_cuda(), __import__("numba").core.errors.NumbaPerformanceWarning)
    with warnings.catch_warnings(), _backend.kernel_timer() as timer:
        for category in categories:
            warnings.simplefilter("error", category)
        warnings.filterwarnings("error", category=DeprecationWarning, module="(numba|gpuensembles)")
        try:
            result, error = run(), None
        except Warning as warning:
            result, error = None, f"{type(warning).__module__}.{type(warning).__name__}: {warning}"
    lattices.RESIDENT_MAX_L = RESIDENT_MAX_L
    return result, {"error": error, "launches": timer.launches()}


def kuramoto_variants():
    out = {}
    for variant in coupled.MEAN_FIELD_VARIANTS:
        os.environ[coupled.VARIANT_VARIABLE] = variant
        ds = ge.kuramoto(backend="cuda", **CASES["kuramoto_variants"])
        out[variant] = {"r": ds.r.values.tolist(), "density": ds.density.values.tolist()}
    os.environ.pop(coupled.VARIANT_VARIABLE)
    return out


def trials_in_threads():
    """The rounds of ``trial_round`` in two threads at once, on the one cached runner they share."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return [f.result() for f in [pool.submit(trial_round, "cuda") for _ in range(2)]]


if __name__ == "__main__":
    runs = {"xorsat": xorsat, "trials": lambda: trial_round("cuda"), "trials-threads": trials_in_threads,
            "run-trials": lambda: run_round("cuda"), "flux-chain": lambda: flux_chain("cuda"),
            "pruned-trials": lambda: pruned_round("cuda"),
            "rates": lambda: rates(CASES["rates"]), "kuramoto-variants": kuramoto_variants,
            "switching-voltage": lambda: ramp("switching_currents", "switching_voltage"),
            "retrapping": lambda: ramp("retrapping_currents", "retrapping")}
    for method in ("adjoint", "forward"):
        for estimator in ("collision", "expected"):
            runs[f"mcls-{method}-{estimator}"] = lambda m=method, e=estimator: mcls(m, e)
    for model, integrator in (("underdamped", "srk2"), ("overdamped", "srk2"), ("underdamped", "euler")):
        runs[f"langevin-{model}-{integrator}"] = lambda m=model, i=integrator: langevin(m, i)
    runs.update({f"kuramoto-{path}": (lambda path=path: kuramoto(path)) for path in CASES["kuramoto"]})
    runs.update({f"ising-{path}": (lambda path=path: ising(path)) for path in CASES["ising"]})
    for model in ("underdamped", "overdamped"):
        for dtype in ("float32", "float64"):
            runs[f"{model}-{dtype}"] = lambda m=model, d=dtype: escape(m, d)
    result = {"draws": draws(), "launches": {}}  # a test kernel of two blocks: it warns, as it should
    for name, run in runs.items():
        start = time.perf_counter()
        result[name], result["launches"][name] = watched(run)
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    json.dump(result, sys.stdout)
