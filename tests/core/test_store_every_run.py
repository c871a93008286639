"""``store=`` on every run function: killed with ``kill -9`` in a child process, resumed, bit-identical.

The child runs the call with a store and waits a moment after each chunk it writes (the
test's own hook, so that the kill lands between chunks on any machine); the test kills it
once the first chunk is recorded. The same call then resumes from the store, and every
variable must equal that of a run without a store, bit for bit (xorsat's wall-clock
``seconds_per_sweep`` and ``tts_seconds`` excepted). A changed parameter is refused by name,
and a rerun without ``seed`` takes the store's.
"""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.core.registry import registered

ROOT = Path(__file__).resolve().parents[2]

#: Per run function: the call (a Python expression of ``ge`` and ``np``) and a parameter to change.
CASES = {
    "escape_times": ("ge.escape_times(damping=1.0, gamma=0.5, h=0.01, model='overdamped', D=[0.3, 0.5], "
                     "realizations=64, {seed} backend='cpu', progress=False, store={store!r})", "realizations=65"),
    "switching_currents": ("ge.switching_currents(model='overdamped', damping=1.0, D=0.05, h=0.01, dgamma=1e-4, "
                           "realizations=64, {seed} backend='cpu', progress=False, store={store!r})", "D=0.06"),
    "switching_currents_rates": ("ge.switching_currents(model='overdamped', damping=1.0, D=0.05, h=0.01, "
                                 "dgamma=1e-8, realizations=100, method='rates', rel_error=0.2, {seed} backend='cpu', "
                                 "progress=False, store={store!r})", "rel_error=0.25"),
    "escape_rates": ("ge.escape_rates(model='overdamped', damping=1.0, D=0.05, h=0.01, gamma=np.linspace(0.2, 0.6, 8), "
                     "rel_error=0.2, {seed} backend='cpu', progress=False, store={store!r})", "h=0.02"),
    "retrapping_currents": ("ge.retrapping_currents(V0=1.0, damping=0.3, D=0.003, h=0.05, integrator='baoab', "
                            "dgamma=1e-3, gamma_start=0.8, realizations=64, {seed} backend='cpu', progress=False, "
                            "store={store!r})", "D=0.004"),
    "ising": ("ge.ising(L=[8, 16], beta=[0.3, 0.44], sweeps=20, thermalization=20, realizations=64, {seed} "
              "backend='cpu', progress=False, store={store!r})", "sweeps=40"),
    "langevin": ("ge.langevin(a=[0.0, 2.0], f=0.3, kT=0.5, g=2.0, h=0.01, steps=200, realizations=64, {seed} "
                 "backend='cpu', progress=False, store={store!r})", "kT=0.6"),
    "kuramoto": ("ge.kuramoto(N=18, K=2.0, h=0.02, steps=12, sample_every=4, kT=0.2, bins=8, realizations=32, "
                 "{seed} backend='cpu', progress=False, store={store!r})", "K=2.5"),
    "xorsat.solve": ("ge.xorsat.solve(ge.xorsat.random_instances(N=24, count=2, seed=4), p=0.1, clones=64, runs=32, "
                     "timeout=2000, {seed} backend='cpu', progress=False, store={store!r})", "clones=96"),
    "mc_solve": ("ge.mc_solve(*__import__('tests.mcls.test_run', fromlist=['x']).nonsymmetric_system(), "
                 "histories=20_000, batches=32, {seed} backend='cpu', progress=False, store={store!r})",
                 "histories=30_000"),
}
WALL_CLOCK = {"seconds_per_sweep", "tts_seconds"}
#: What the refusal names where it is not the changed argument: the first-passage plans' fields.
NAMED = {"escape_times": "shape", "switching_currents": "parameters", "retrapping_currents": "parameters"}

CHILD = textwrap.dedent("""
    import time
    import numpy as np
    import gpuensembles as ge
    from gpuensembles.core import store

    put = store.ChunkStore.put

    def slow_put(self, block, values):  # the test's hook: a pause after each chunk, for the kill to land
        put(self, block, values)
        time.sleep(0.4)

    store.ChunkStore.put = slow_put
    {call}
""")


def test_every_registered_run_function_has_a_case():
    assert {entry.name for entry in registered()} <= set(CASES)


def _call(name: str, store, seed: bool = True, change: str = "") -> str:
    template, _ = CASES[name]
    call = template.format(seed="seed=11," if seed else "", store=str(store) if store is not None else None)
    key = change.split("=")[0]
    return re.sub(rf"\b{key}=[^,)]+", change, call, count=1) if change else call


def _run(call: str):
    return eval(call, {"ge": ge, "np": np, "__import__": __import__})


def _records(store: Path) -> list:
    return list(store.rglob("chunk-*.json"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_killed_and_resumed_run_is_bit_identical(name, tmp_path):
    store = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(call=_call(name, store))], env=env, cwd=ROOT,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while not _records(store) and time.time() < deadline and child.poll() is None:
        time.sleep(0.01)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    _, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err[-3000:]  # killed, not finished or failed
    kept = len(_records(store))
    assert kept >= 1
    os.chdir(ROOT)  # the mc_solve case imports its system from the tests package
    resumed = _run(_call(name, store))
    assert len(_records(store)) > kept  # the rest was computed now
    fresh = _run(_call(name, None))
    for variable in fresh.data_vars:
        if variable not in WALL_CLOCK:
            np.testing.assert_array_equal(resumed[variable].values, fresh[variable].values, err_msg=variable)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_changed_call_is_refused_and_the_seed_is_kept(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    store = tmp_path / "run"
    first = _run(_call(name, store))
    changed = NAMED.get(name, CASES[name][1].split("=")[0])
    with pytest.raises(ValueError, match=f"different run.*{changed}"):
        _run(_call(name, store, change=CASES[name][1]))
    again = _run(_call(name, store, seed=False))  # no seed: the store's
    assert again.attrs["seed"] == first.attrs["seed"] == 11
    plan = json.loads((store / "plan.json").read_text())
    assert plan["plan"]["seed"] == 11


def test_ising_killed_inside_a_chunk_resumes_from_its_saved_state(tmp_path, monkeypatch):
    # one chunk (a single lattice): without the state saved between sweeps, a kill would lose it all
    from gpuensembles.models.ising import run as ising_model

    store = tmp_path / "run"
    call = (f"ge.ising(L=64, beta=0.44, sweeps=640, realizations=1, seed=3, backend='cpu', progress=False, "
            f"store={str(store)!r})")
    child_code = CHILD.format(call=f"__import__('gpuensembles.models.ising.run', fromlist=['x'])"
                                   f".CHECKPOINT_SECONDS = 0.0\n{call}")
    child = subprocess.Popen([sys.executable, "-c", child_code], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while not list(store.glob("chunk-L64-at-*.json")) and time.time() < deadline and child.poll() is None:
        time.sleep(0.01)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    _, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err[-3000:]
    assert not list(store.glob("chunk-L64-0-1.json"))  # the chunk itself had not finished
    spans_run = []
    runner = ising_model.lattices.cpu_runner

    def counting(kind):
        run = runner(kind)
        return lambda *args, **kw: spans_run.append(args[-1]) or run(*args, **kw)

    monkeypatch.setattr(ising_model.lattices, "cpu_runner", counting)
    resumed = _run(call)
    assert spans_run and spans_run[0][0] > 0  # it went on from the saved state, not from sweep 0
    assert len(spans_run) < len(ising_model._spans(640))
    monkeypatch.setattr(ising_model.lattices, "cpu_runner", runner)
    fresh = _run(call.replace(f", store={str(store)!r}", ""))
    for variable in fresh.data_vars:
        np.testing.assert_array_equal(resumed[variable].values, fresh[variable].values, err_msg=variable)
