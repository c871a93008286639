"""Fixtures shared by the whole suite: the small cases the CUDA simulator and the CPU must agree on."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

HERE = Path(__file__).parent

# Property-based tests: "ci" (the default) draws a fixed, reproducible set of examples
# without a deadline (a first call compiles kernels); HYPOTHESIS_PROFILE=thorough draws
# ten times as many, at random, for a longer hunt.
settings.register_profile("ci", max_examples=400, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("thorough", parent=settings.get_profile("ci"), max_examples=1500, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _simulator_cases() -> dict:
    """Keyword arguments of every run the CUDA simulator repeats, by name (JSON-serialisable)."""
    # direct escape rates: five trials per point from the thermal state, through the rounds template
    rates = dict(model="overdamped", damping=1.0, gamma=[0.3, 0.5], D=0.5, h=0.05, method="direct", rel_error=0.5,
                 seed=5, progress=False)
    langevin = dict(a=[0.0, 2.0], f=0.3, kT=0.5, g=2.0, h=0.01, steps=48, sample_every=12, histogram=[0, 1],
                    realizations=5, seed=8, start="uniform", dtype="float64", progress=False)
    # 18 oscillators leave a partial group of four; both coupling paths
    kuramoto = {path: dict(N=18, h=0.02, steps=12, sample_every=4, kT=0.2, bins=8, realizations=2, seed=3,
                           progress=False, **({"K": 2.0} if path == "mean-field" else
                                              {"coupling": np.full((18, 18), 2.0 / 18).tolist()}))
                for path in ("mean-field", "matrix")}
    # the resident multi-spin kernel, the launched one (RESIDENT_MAX_L lowered to 0) and int8;
    # L = 6 leaves a partial warp of words (and the int8 quads a partial word); the two betas
    # share a group, so lanes of one word have different thresholds
    ising = {path: dict(L=6, beta=[0.3, 0.5], sweeps=2, thermalization=1, measure_every=1, bins=2,
                        realizations=3, series=True, snapshot=True, seed=7,
                        kernel="int8" if path == "int8" else "multispin", progress=False)
             for path in ("resident", "launched", "int8")}
    # two sizes (on a GPU they run at once, on threads of their own: ising_model.TOGETHER_BYTES)
    ising["resident"]["L"] = [6, 8]
    # the launched multi-spin kernel on one 64^2 lattice in strips (STRIPS_MIN_L lowered to 64),
    # and with room for one word set aside per warp (the others finished at once): 40 rows take
    # three blocks of the simulator's 2 x 8 rows, 20 words a row a partial warp
    ising["launched-strips"] = dict(ising["launched"], L=64, beta=0.44, realizations=1)
    # one measurement after 4 sweeps: launches that count nothing (the thermalization, then
    # sweeps 1-3), then one that counts sweep 4 alone (APART_EVERY)
    ising["launched-strips-apart"] = dict(ising["launched-strips"], sweeps=4, measure_every=4, bins=1)
    ising["launched-crowded"] = dict(ising["launched"], L=40)
    # strips count their measurements inside the sweeps: with room for one word set aside, the
    # lanes finished at once and later both change the counts; at beta = 0.4 both dE = 4 and
    # dE = 8 lanes are finished (at 0.44 a tie at dE = 4 accepts 3 % of the time: none did);
    # measurements every 2 sweeps after 1 (sweeps 2, 4 and 6), one launch or one a sweep (stored);
    # two rows a thread (GPUENSEMBLES_ISING_SWEEP_ROWS=2), where the other cases take 8
    ising["launched-strips-crowded"] = dict(ising["launched-strips"], beta=0.4, sweeps=6, measure_every=2, bins=3)
    # the band sweeps (the other strips cases keep to the column kernel: bands.MAX_WORDS = 0), one
    # band a lattice in the simulator, halos of 2 rows: the 6 counted sweeps are 6 rounds of the
    # window, the sweep of thermalization two of one half-sweep each; two lattices, two blocks
    ising["bands"] = dict(ising["launched-strips-crowded"], realizations=2)
    # the resident kernel's column walk: "resident" (L = 6) walks three pieces of a row of 3
    # words side by side in one warp; here three warps (GPUENSEMBLES_ISING_RESIDENT_THREADS=96)
    # on 35 words a row: two columns of words, the second with three, 18 pieces of 8 rows (the
    # last of each column 6) dealt out in 6 turns
    ising["resident-columns"] = dict(ising["resident"], L=70, realizations=1)
    # few lattices of 64^2 go in strips (ising_model.FEW_SYSTEMS), in the resident strips
    # kernel: one block of 32 threads a lattice (one word a row), two lattices, three
    # measurements (the last bin holds two), a time series
    ising["resident-strips"] = dict(ising["resident"], L=64, beta=[0.35, 0.44], realizations=1, sweeps=3, bins=2)
    # 40 lattices are two groups, launched one at a time (_MAX_GRID_Z lowered to 1): each
    # launch gets its own part of the lattice array
    ising["launched-chunks"] = dict(ising["launched"], realizations=20)
    # two values of p, a partial word of clones, runs that word 0 solves early (word 1 must
    # then stop early) and runs censored at the timeout
    xorsat = dict(N=24, instance_seed=4, p=[0.05, 0.5], clones=40, runs=2, timeout=12, seed=1, progress=False)
    # the mean-field kernel variants (GPUENSEMBLES_KURAMOTO_KERNEL): 150 oscillators are five
    # simulator tiles of 32, the last one partial; 12 steps alternate the sweep direction
    kuramoto_variants = dict(N=150, h=0.02, steps=12, sample_every=4, kT=0.2, bins=8, realizations=1, seed=3, K=2.0,
                             progress=False)
    # the running state: a hot junction (theta = 0.3, Q = 3.3) whose escapes are often retrapped before
    # they run three wells (the voltage criterion follows them on), and retrapping ramps down from 0.8
    running = dict(V0=1.0, damping=0.3, h=0.05, integrator="baoab", realizations=4, seed=3, progress=False)
    switching_voltage = dict(running, D=0.09, dgamma=1e-3, criterion="voltage", running_wells=3)
    retrapping = dict(running, D=0.003, dgamma=1e-3, gamma_start=0.8)
    return {"langevin": langevin, "kuramoto": kuramoto, "kuramoto_variants": kuramoto_variants, "ising": ising,
            "xorsat": xorsat, "rates": rates, "switching_voltage": switching_voltage, "retrapping": retrapping}


@pytest.fixture(scope="session")
def simulator_cases() -> dict:
    """The cases of :func:`simulated`, for the CPU side of the comparison."""
    return _simulator_cases()


_SIMULATOR: dict = {}


def _start_simulator():
    """Start ``tests/simulator_checks.py`` under the CUDA simulator (once per process)."""
    if _SIMULATOR:
        return
    folder = Path(tempfile.mkdtemp(prefix="gpuensembles-simulator-"))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(HERE.parent))
    out, err = (open(folder / name, "w+") for name in ("stdout", "stderr"))
    proc = subprocess.Popen([sys.executable, str(HERE / "simulator_checks.py"), json.dumps(_simulator_cases())],
                            env=env, stdout=out, stderr=err, text=True)
    _SIMULATOR.update(proc=proc, out=out, err=err)


#: Test files that take minutes on two cores, longest first: they start first, so that the
#: xdist workers (tests of one file stay in one worker) finish together. (test_kernel_cache.py
#: is short, but early: it fills the kernel cache that the rest of the suite loads from.)
LONG_FILES = ("test_fitting.py", "test_bad_input.py", "test_cuda_simulator.py", "test_kernel_cache.py",
              "test_running_state.py", "test_docs.py", "test_switching_rates_glue.py", "test_escape_times.py",
              "test_switching_currents.py")


def _start_order(item) -> int:
    name = Path(str(item.fspath)).name
    return LONG_FILES.index(name) if name in LONG_FILES else len(LONG_FILES)


def pytest_collection_modifyitems(config, items):
    """Put the long files first (the sort is stable: the order within a file is kept).

    Without pytest-xdist workers, start the CUDA simulator's subprocess as soon as a selected
    test needs it: it then runs beside the rest of the suite (one core for several minutes)
    instead of before its tests. (Every xdist worker collects every test: there the fixture
    starts it, in the one worker that runs the simulator tests.)"""
    items.sort(key=_start_order)
    if "PYTEST_XDIST_WORKER" not in os.environ and any("simulated" in getattr(item, "fixturenames", ())
                                                       for item in items):
        _start_simulator()


@pytest.fixture(scope="session")
def simulated() -> dict:
    """Results of ``tests/simulator_checks.py`` run under the CUDA simulator (a subprocess:
    the simulator must be on before ``numba.cuda`` is first imported)."""
    _start_simulator()
    proc, out, err = _SIMULATOR["proc"], _SIMULATOR["out"], _SIMULATOR["err"]
    try:
        proc.wait(timeout=1200)
    finally:
        proc.kill()
    err.seek(0)
    assert proc.returncode == 0, err.read()[-3000:]
    out.seek(0)
    return json.loads(out.read())


@pytest.fixture(scope="session")
def _throughput_file(tmp_path_factory):
    return tmp_path_factory.mktemp("estimate") / "throughput.json"


@pytest.fixture(autouse=True)
def _tests_keep_their_own_throughputs(monkeypatch, _throughput_file):
    """The throughputs the tests' tiny runs reach stay out of the user's cache (their estimates would shift)."""
    from gpuensembles.core import estimate

    monkeypatch.setattr(estimate, "_file", lambda: _throughput_file)
