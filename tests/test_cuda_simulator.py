"""The CUDA kernels' logic, run in numba's CUDA simulator (a subprocess: the simulator must
be on before numba.cuda is imported) and compared bit for bit with the CPU backend."""

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.core import rng
from gpuensembles.core.templates import coupled
from gpuensembles.models.ising import run as ising_model
from tests.round_case import flux_chain, pruned_round, run_round, trial_round


def test_simulator_draws_equal_cpu_draws_bit_for_bit(simulated):
    seed, stream = 99, 5
    words = [[int(x) for x in rng.philox4x32(i, 0, 3 * i, 1, seed, stream)] for i in range(16)]
    normals = np.array([rng.normals4_f32(seed, stream, i, 2 * i + 1) for i in range(16)], dtype=np.float32)
    assert simulated["draws"]["words"] == words
    assert simulated["draws"]["normals"] == normals.view(np.uint32).tolist()


@pytest.mark.parametrize("model", ["underdamped", "overdamped"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_simulator_escape_steps_equal_cpu(simulated, model, dtype):
    cpu = ge.escape_times(damping=1.0 if model == "overdamped" else 0.2, gamma=0.5, D=[0.3, 0.5], h=0.01,
                          realizations=6, seed=11, model=model, dtype=dtype, backend="cpu", max_steps=20_000)
    sim = simulated[f"{model}-{dtype}"]
    assert sim["device"] == "CUDA simulator"
    assert sim["steps"] == cpu.steps.values.tolist()
    assert sim["escaped"] == cpu.escaped.values.tolist()
    assert cpu.escaped.values.any()  # the case exercises escapes, not only the step limit


@pytest.mark.parametrize("method", ["adjoint", "forward"])
@pytest.mark.parametrize("estimator", ["collision", "expected"])
@pytest.mark.parametrize("path", ["shared", "global", "global-plain"])
@pytest.mark.parametrize("reduction", ["device", "host"])
def test_simulator_walks_equal_cpu_walks(simulated, method, estimator, path, reduction):
    A = ge.mcls.problems.shifted_laplacian_1d(16, shift=0.3)
    cpu = ge.mc_solve(A, np.cos(np.arange(16)), method=method, histories=24, batches=3, seed=5, weight_cutoff=1e-4,
                      estimator=estimator, entries=None if method == "adjoint" else [0, 3, 15], backend="cpu",
                      progress=False)
    sim = simulated[f"mcls-{method}-{estimator}"][f"{path}-{reduction}"]
    assert sim["device"] == "CUDA simulator"
    assert sim["transitions"] == int(cpu.transitions)  # the same walks
    # atomics add in another order; the batch spread then agrees to rounding as well
    np.testing.assert_allclose(sim["x"], cpu.x.values, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sim["x_stderr"], cpu.x_stderr.values, rtol=1e-9, atol=1e-15)
    assert np.all(cpu.x_stderr.values > 0)  # the spread is exercised, not zero


LANGEVIN_VARIANTS = [("underdamped", "srk2"), ("overdamped", "srk2"), ("underdamped", "euler")]


@pytest.mark.parametrize("model, integrator", LANGEVIN_VARIANTS)
def test_simulator_trajectories_equal_cpu(simulated, simulator_cases, model, integrator):
    cpu = ge.langevin(model=model, integrator=integrator, backend="cpu", **simulator_cases["langevin"])
    sim = simulated[f"langevin-{model}-{integrator}"]
    assert sim["device"] == "CUDA simulator"
    np.testing.assert_allclose(sim["x"], cpu.x.values, rtol=1e-12)  # CPU fastmath may contract a multiply-add
    assert sim["density"] == cpu.density.values.tolist()
    assert sim["outside"] == (cpu.density_below + cpu.density_above).values.tolist()
    assert cpu.density_below.values.any() or cpu.density_above.values.any()  # the outside bins are exercised


@pytest.mark.parametrize("path", ["mean-field", "matrix"])
def test_simulator_kuramoto_equals_cpu(simulated, simulator_cases, path):
    case = dict(simulator_cases["kuramoto"][path])
    if "coupling" in case:
        case["coupling"] = np.asarray(case["coupling"])
    cpu = ge.kuramoto(backend="cpu", **case)
    sim = simulated[f"kuramoto-{path}"]
    assert sim["device"] == "CUDA simulator"
    # the simulator's block tree adds the partial sums in another order than the CPU tiles
    np.testing.assert_allclose(sim["r"], cpu.r.values, rtol=1e-5)
    assert sim["density"] == cpu.density.values.tolist()


@pytest.mark.parametrize("variant", list(coupled.MEAN_FIELD_VARIANTS))
def test_simulator_kuramoto_variants_equal_cpu(simulated, simulator_cases, variant, monkeypatch):
    # every variant steps each oscillator with the same arithmetic and normals; only the order
    # (float32 partials: the precision) of the order-parameter sums differs from the CPU's tiles
    monkeypatch.setenv("GPUENSEMBLES_KURAMOTO_KERNEL", variant)
    cpu = ge.kuramoto(backend="cpu", **simulator_cases["kuramoto_variants"])
    sim = simulated["kuramoto-variants"][variant]
    np.testing.assert_allclose(sim["r"], cpu.r.values, rtol=1e-5)
    assert sim["density"] == cpu.density.values.tolist()


ISING_PATHS = ("resident", "resident-columns", "resident-strips", "launched", "launched-strips",
               "launched-strips-apart", "launched-strips-crowded", "bands", "launched-crowded", "launched-chunks",
               "int8")


@pytest.mark.parametrize("path", ISING_PATHS)
def test_simulator_ising_equals_cpu_bit_for_bit(monkeypatch, simulated, simulator_cases, path):
    # Integer-only arithmetic: every path must reproduce the CPU chains exactly.
    monkeypatch.setattr(ising_model, "STRIPS_MIN_L", 64)  # the layout of every case as the simulator ran it
    cpu = ge.ising(backend="cpu", **simulator_cases["ising"][path])
    assert ("strips" in cpu.attrs["layout"]) == path.startswith(("launched-strips", "bands", "resident-strips"))
    sim = dict(simulated[f"ising-{path}"])
    assert sim.pop("device") == "CUDA simulator"
    banded = sim.pop("banded")  # whether each part of the lattices took the band sweeps
    assert banded and all(banded) if path == "bands" else not any(banded)
    # the simulator runs sizes one after the other (the GPU tests check that a GPU runs them at once)
    assert sim.pop("together") == [False, False]
    stored = sim.pop("stored")  # the same run in pieces of one sweep (a stored run's checkpoints)
    assert set(sim) == set(stored) == set(cpu.data_vars)
    for name, values in sim.items():
        np.testing.assert_array_equal(np.asarray(values), cpu[name].values, err_msg=name)
        np.testing.assert_array_equal(np.asarray(stored[name]), cpu[name].values, err_msg=f"{name}, stored")


def test_simulator_xorsat_equals_cpu_bit_for_bit(simulated, simulator_cases):
    # Warps that stop early (their run is solved) must not change any run's result.
    kw = dict(simulator_cases["xorsat"])
    instance = ge.xorsat.random_instance(kw.pop("N"), seed=kw.pop("instance_seed"))
    cpu = ge.xorsat.solve(instance, backend="cpu", **kw)
    sim = simulated["xorsat"]
    assert sim.pop("device") == "CUDA simulator"
    # both outcomes, and a run that word 0 solves early (word 1 then stops early)
    assert not cpu.solved.all()
    assert np.any(cpu.solved & (cpu.clone < 32) & (cpu.tts_sweeps < simulator_cases["xorsat"]["timeout"] - 2))
    for name, values in sim.items():
        np.testing.assert_array_equal(np.asarray(values), cpu[name].values, err_msg=name)


def test_simulator_trials_equal_cpu_bit_for_bit(simulated):
    # given and thermal starts, both windows' sides reached, two parameter rows
    # rounds of 12, 5 and 24 trials on one runner, whose device arrays are kept, shrunk and grown
    cpu = trial_round("cpu")
    assert {1, 2} <= set(cpu[0]["status"])
    for small, large in zip(cpu, cpu[1:]):  # a trial's result is its id's, whatever round it is in
        m = min(len(small["steps"]), len(large["steps"]))
        assert all(small[k][:m] == large[k][:m] for k in ("steps", "status", "ends"))
    assert any(len(r["kept"]) for r in cpu)
    assert simulated["trials"] == cpu  # the totals and reached states of the device's reduction too
    # two threads running those rounds at once on the runner they share (a dask worker's two tasks)
    assert simulated["trials-threads"] == [cpu, cpu]


def test_simulator_pruned_trials_equal_cpu_bit_for_bit(simulated):
    # a kept round pruned at three levels: the device counts a success surviving m of them 2**m times
    # and keeps its state as often, in trial order
    cpu = pruned_round("cpu")
    reached = sum(row[0] for row in cpu["totals"])
    assert reached == len(cpu["kept"]) > len(np.unique(cpu["kept"], axis=0))  # some states kept more than once
    assert simulated["pruned-trials"] == cpu


def test_simulator_run_trials_equal_cpu(simulated):
    # escaped states that reach the running state and ones that relax into a well, two parameter rows:
    # the same steps and outcomes; the end states to rounding (the CPU build may fuse multiply-adds,
    # fastmath's "contract", where the simulator runs the same source in Python)
    cpu = run_round("cpu")
    sim = simulated["run-trials"]
    assert {1, 2} <= set(cpu["status"])
    assert sim["steps"] == cpu["steps"] and sim["status"] == cpu["status"]
    np.testing.assert_allclose(sim["ends"], cpu["ends"], rtol=1e-12, atol=1e-12)
    assert sim["totals"] == cpu["totals"] and len(cpu["kept"]) > 0
    np.testing.assert_allclose(sim["kept"], cpu["kept"], rtol=1e-12, atol=1e-12)


def test_simulator_forward_flux_from_states_left_on_the_device_equals_cpu_bit_for_bit(simulated):
    # stages and pilots that start from the last stage's kept states where they lie on the device
    cpu = flux_chain("cpu")
    sim = simulated["flux-chain"]
    assert cpu.pop("device_pools") == 0 and sim.pop("device_pools") > 0
    assert min(cpu["interfaces"]) >= 3 and all(len(ends) == 4 for ends in cpu["ends"])  # two batches of 2
    # kept rows stay readable until their buffer is written again, then refuse to be read (the
    # CPU keeps no device buffers: its rows always are)
    assert cpu.pop("validity") == [True, True, True] and sim.pop("validity") == [False, True, True]
    assert sim == cpu


@pytest.mark.parametrize("function, case", [("switching_currents", "switching_voltage"),
                                            ("retrapping_currents", "retrapping")])
def test_simulator_running_state_ramps_equal_cpu_bit_for_bit(simulated, simulator_cases, function, case):
    cpu = getattr(ge, function)(**simulator_cases[case], backend="cpu")
    sim = simulated[case.replace("_", "-")]
    assert sim["device"] == "CUDA simulator"
    assert sim["steps"] == cpu.steps.values.tolist()


def test_simulator_direct_rates_equal_cpu(simulated, simulator_cases):
    cpu = ge.escape_rates(**simulator_cases["rates"], backend="cpu")
    sim = simulated["rates"]
    assert sim["device"] == "CUDA simulator"
    assert sim["steps"] == cpu.steps.values.tolist()
    assert sim["rate"] == cpu.rate.values.tolist()


#: The launch sites each public run uses (the names its kernel timer reports).
LAUNCH_SITES = {"xorsat": {"xorsat"}, "rates": {"trials"}, "switching-voltage": {"first_passage"},
                "retrapping": {"first_passage"}, "kuramoto-mean-field": {"mean_field"},
                "kuramoto-matrix": {"pairwise"}, "kuramoto-variants": {"mean_field"}}
LAUNCH_SITES |= {f"{model}-{dtype}": {"first_passage"} for model in ("underdamped", "overdamped")
                 for dtype in ("float32", "float64")}
LAUNCH_SITES |= {f"mcls-{method}-{estimator}": {"walks", "walk_reduce"} for method in ("adjoint", "forward")
                 for estimator in ("collision", "expected")}
LAUNCH_SITES |= {f"langevin-{case}": {"trajectories"} for case in ("underdamped-srk2", "overdamped-srk2",
                                                                   "underdamped-euler")}
LAUNCH_SITES |= {f"ising-{path}": {"ising"} for path in ISING_PATHS}


def test_every_simulated_public_run_is_checked_for_launches(simulated):
    # the bare trials runners are not public runs
    assert set(simulated["launches"]) == set(LAUNCH_SITES) | {"trials", "trials-threads", "run-trials", "flux-chain",
                                                              "pruned-trials"}


@pytest.mark.parametrize("run", sorted(LAUNCH_SITES))
def test_launches_warn_nothing_and_are_timed(simulated, run):
    # Every launch gets numba-cuda's low-occupancy warning here (the check adds it to the
    # simulator): none may reach the caller, nor a deprecation warning; and the kernel timer
    # sees every launch site. Each case ran once, this way, for the comparisons above too.
    seen = simulated["launches"][run]
    assert seen["error"] is None
    assert set(seen["launches"]) == LAUNCH_SITES[run]
    assert all(count >= 1 for count in seen["launches"].values())
