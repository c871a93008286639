"""The on-disk kernel cache: a fresh process loads what an earlier one compiled, gives the same
numbers, and never loads a kernel compiled from other source (``gpuensembles.core.cache``)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from gpuensembles.core import cache, compile_lock
from gpuensembles.core.backend import cached
from gpuensembles.core.templates.first_passage import first_passage_runner
from gpuensembles.models.josephson.physics import escape_kernel

from .. import requires_gpu

ROOT = Path(__file__).parent.parent.parent


def fresh_processes(n, cache_dir, *args, **env):
    """Run ``tests/cache_checks.py`` in ``n`` new interpreters started together, with ``cache_dir``
    as their cache (None: the cache this process uses); their outputs."""
    settings = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache_dir is not None:
        settings["NUMBA_CACHE_DIR"] = str(cache_dir)
    settings.pop(cache.DISABLE_VARIABLE, None)
    settings.update(env)
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "cache_checks.py"), *args], env=settings,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
    outputs = [proc.communicate(timeout=900) for proc in procs]
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    return [json.loads(out) for out, _ in outputs]


def fresh_process(cache_dir, *args, **env):
    """:func:`fresh_processes` with one interpreter."""
    return fresh_processes(1, cache_dir, *args, **env)[0]


def entries(cache_dir):
    return sorted(Path(cache_dir).rglob("*.nbc"))


def test_a_second_process_loads_every_kernel_from_the_cache():
    # In the suite's own cache: what the first process compiles, the rest of the suite then
    # loads (on two cores that is minutes). It may find some or all kernels there already;
    # that a cold process compiles and writes is what the tests below check, on one example.
    first = fresh_process(None)
    second = fresh_process(None)
    assert second["compiled"] == []  # every registered example: nothing compiled at all
    assert second["compile_seconds"] == 0
    assert set(second["cache"]) == set(first["cache"])
    assert all(hits >= 1 and misses == 0 for hits, misses in second["cache"].values()), second["cache"]
    assert second["results"] == first["results"]  # bit for bit


@pytest.mark.gpu
@requires_gpu
def test_gpu_a_second_process_loads_its_kernels_from_the_cache(tmp_path):
    # CUDA kernels rebuilt from the cache are launched without the target context's refresh
    # (0.6 s of a first call): the second process compiles nothing and gives the same numbers
    first = fresh_process(tmp_path, "--cuda", "escape_times", "ising")
    second = fresh_process(tmp_path, "--cuda", "escape_times", "ising")
    assert first["compile_seconds"] > 0 and second["compile_seconds"] == 0
    assert second["results"] == first["results"]


@pytest.fixture(scope="module")
def escape_times_cache(tmp_path_factory):
    """``(folder, result)``: a cache that one cold process filled with the ``escape_times``
    example's kernel, and that process's output. Tests work on copies of the folder: each
    cold compile costs about 20 s on two cores.

    Two cold processes start together: one compiles the kernel while the other waits for
    it (the compile lock) and loads it; without the lock both compiled it.
    """
    folder = tmp_path_factory.mktemp("escape-times-cache")
    both = fresh_processes(2, folder, "escape_times")
    first, second = sorted(both, key=lambda out: not out["compiled"])
    assert "_cpu_first_passage.<locals>.run_items" in first["compiled"] and len(entries(folder)) == 1
    assert second["compiled"] == [] and second["compile_seconds"] == 0  # it waited and loaded
    assert second["results"] == first["results"]
    return folder, first


def copy_of(escape_times_cache, tmp_path):
    folder, first = escape_times_cache
    shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    return first


def test_edited_source_misses_and_recompiles(tmp_path, escape_times_cache):
    first = copy_of(escape_times_cache, tmp_path)
    edited = fresh_process(tmp_path, "--edited", "escape_times")
    assert "_cpu_first_passage.<locals>.run_items" in edited["compiled"]
    assert all(hits == 0 for hits, _ in edited["cache"].values())
    assert edited["results"] == first["results"]
    assert len(entries(tmp_path)) == 2  # one entry per key; the first is kept, never loaded for the edit


def test_a_damaged_entry_is_compiled_again(tmp_path, escape_times_cache):
    first = copy_of(escape_times_cache, tmp_path)
    for path in entries(tmp_path):
        path.write_bytes(path.read_bytes()[:100])  # as if a writer had died half-way (renames make this rare)
    again = fresh_process(tmp_path, "escape_times")
    assert "_cpu_first_passage.<locals>.run_items" in again["compiled"]
    assert again["results"] == first["results"]
    assert fresh_process(tmp_path, "escape_times")["compiled"] == []  # rewritten whole


#: One round of float32 forward-flux trials of the underdamped junction on the CPU: its cache
#: hits and a digest of every trial's steps and end state.
_TRIAL_ROUND = """
import hashlib, json, numpy as np
from gpuensembles.core.templates.rounds import trial_runner
from gpuensembles.models.josephson.physics import trial_kernel
run = trial_runner(trial_kernel("underdamped", "float32", "baoab"), "cpu")
n = 2000
steps, status, ends = np.empty(n, np.int64), np.empty(n, np.int8), np.empty((n, 3))
run(np.array([[1.0, 0.2857, 0.9, 0.02, 2e-3]]), np.array([[0, n, 0, 7, 1 << 40, 0, 1]], dtype=np.int64),
    np.array([[-np.inf, 5.0]]), np.full((1, 2), np.nan), 11, 10**7, steps, status, ends)
print(json.dumps([sum(run.kernel.stats.cache_hits.values()),
                  hashlib.sha256(steps.tobytes() + status.tobytes() + ends.tobytes()).hexdigest()]))
"""


def test_compiled_and_cached_cpu_code_give_the_same_numbers(tmp_path):
    # with fastmath's "contract", the code a process compiled fused other multiply-adds than the
    # same code loaded from the cache: float32 trials ended at other states, some a step apart
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path))
    env.pop(cache.DISABLE_VARIABLE, None)
    cold, warm = (json.loads(subprocess.run([sys.executable, "-c", _TRIAL_ROUND], env=env, capture_output=True,
                                            text=True, check=True).stdout) for _ in range(2))
    assert cold[0] == 0 and warm[0] == 1  # the first compiled, the second loaded
    assert warm[1] == cold[1]


#: Two closures of one factory: ``outer`` calls ``inner``, too long for LLVM to inline, so the
#: loaded code calls it by its symbol name.
_FACTORY = """
import math
import numba
from gpuensembles.core.backend import cached

def make(c):
    @numba.njit
    def inner(x):
        s = 0.0
{body}
        return s

    @cached
    @numba.njit
    def outer(x):
        return inner(x) + inner(x + 1.0)

    return outer
"""
_INNER_LINE = "        s += math.sin(x * {k} + c) * math.exp(-s * {k} / 100) + math.log1p(abs(s) + {k})"


def test_closures_cached_by_two_processes_keep_their_own_callees(tmp_path):
    # Two processes that ran alike each compile one closure of a factory: numba's counted function
    # ids gave both entries the same symbol names, and a third process that loaded both ran the
    # first closure's inner function from the second (a Josephson walker ran another model's steps)
    body = "\n".join(_INNER_LINE.format(k=k) for k in range(1, 61))
    (tmp_path / "factory.py").write_text(_FACTORY.format(body=body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop(cache.DISABLE_VARIABLE, None)

    def values(*constants, **more):
        code = f"import json; from factory import make; print(json.dumps([make(c)(0.5) for c in {constants}]))"
        return json.loads(subprocess.run([sys.executable, "-c", code], env=dict(env, **more), capture_output=True,
                                         text=True, check=True).stdout)

    compiled = values(1.0, 2.0, GPUENSEMBLES_CACHE="0")
    assert compiled[0] != compiled[1]
    assert values(1.0) + values(2.0) == compiled  # each process writes the entry of its closure
    assert len(entries(tmp_path / "cache")) == 2
    assert values(1.0, 2.0) == compiled  # one process loads both
    assert values(2.0, 1.0) == compiled[::-1]


def test_numba_function_ids_are_drawn_at_random():
    from numba.core.bytecode import FunctionIdentity

    ids = [next(FunctionIdentity._unique_ids) for _ in range(1000)]
    assert len(set(ids)) == len(ids) and min(ids) >= 0 and max(ids) > 2**40


def test_the_cache_can_be_turned_off(tmp_path):
    off = fresh_process(tmp_path, "escape_times", GPUENSEMBLES_CACHE="0")
    assert "_cpu_first_passage.<locals>.run_items" in off["compiled"]
    assert off["compile_seconds"] > 0  # the compile clock runs without the cache too
    assert entries(tmp_path) == []


def runner_key(*args):
    return first_passage_runner(escape_kernel(*args), "cpu").kernel._cache.stable_key()


def test_the_key_follows_what_the_kernel_is_compiled_from():
    key = runner_key("underdamped", "float32")
    assert key is not None and len(key) == 64
    assert runner_key("underdamped", "float32") == key
    assert runner_key("overdamped", "float32") != key  # another closure (model)
    assert runner_key("underdamped", "float64") != key  # another precision (numpy type in a cell)


def test_a_function_without_a_stable_description_is_compiled_but_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    table = np.arange(5000)  # frozen into the code, but too large to describe by value

    @cached
    @numba.njit
    def lookup(i):
        return table[i] + 1

    with pytest.raises(cache.Unkeyable):
        cache.describe(table)
    assert lookup(np.int64(41)) == 42
    assert lookup._cache.stable_key() is None
    assert entries(tmp_path) == []


def test_descriptions_are_values_not_identities():
    assert cache.describe((np.float32(0.5), np.float32, {"afn", "nsz"})) == cache.describe(
        (np.float32(0.5), np.float32, {"nsz", "afn"}))
    assert cache.describe(np.float32(0.5)) != cache.describe(np.float64(0.5))
    assert cache.describe(np.arange(3)) != cache.describe(np.arange(1, 4))


CUDA_KEYS = """
import json
from gpuensembles.core import backend
from gpuensembles.core.templates import coupled, first_passage, rounds, trajectories, walks
from gpuensembles.models.ising import kernels as lattices
from gpuensembles.models.josephson.physics import escape_kernel, switching_kernel, trial_kernel
from gpuensembles.models.kuramoto.physics import kernel as oscillators
from gpuensembles.models.langevin.physics import kernel as trajectory_kernel
from gpuensembles.models.mcls.physics import KERNELS
from gpuensembles.models.xorsat import kernels as hypergraphs

runners = [first_passage.first_passage_runner(escape_kernel("underdamped", "float32"), "cuda"),
           first_passage.first_passage_runner(switching_kernel("underdamped", "float64"), "cuda"),
           trajectories.trajectory_runner(trajectory_kernel("underdamped", "srk2", "rest", "float32"), "cuda"),
           walks.walk_runner(KERNELS["adjoint"], "cuda"), coupled.mean_field_runner(oscillators(), "cuda"),
           coupled.pairwise_runner(oscillators(), "cuda")]
kernels = [run.kernel for run in runners] + [k for kind in lattices.KINDS for k in lattices.cuda_runner(kind).kernels]
kernels += hypergraphs.cuda_runner().kernels
kernels.append(runners[3].kernels[1])  # the walks' kernel for bins in shared memory
kernels += rounds.trial_runner(trial_kernel("underdamped", "float64", "baoab"), "cuda").kernels
cache = backend._stable_cuda_cache()
print(json.dumps([[k.py_func.__qualname__, type(k._cache) is cache and k._cache.stable_key()] for k in kernels]))
"""


def test_every_cuda_kernel_has_a_stable_key(tmp_path):
    # Building the CUDA kernels needs numba-cuda but no GPU (nothing is compiled here).
    pytest.importorskip("numba_cuda")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    keys = [json.loads(subprocess.run([sys.executable, "-c", CUDA_KEYS], env=env, capture_output=True, text=True,
                                      timeout=600, check=True).stdout) for _ in range(2)]
    # 6 runners' kernels and the walks' second, XORSAT's 3 (rounds, random start, winning words),
    # 17 + 8 of the two Ising kinds (multi-spin: 9 persistent sweeps, one for each rows a thread
    # and counting, and 2 band sweeps, counting or not, each set
    # built from one source: their keys differ by the closure's values), and the rounds' trials (which
    # total their segments as they end), the gathering of their reached states (copies per tile, their
    # prefix sums, the rows) and the flux walkers' half-cycles
    assert len(keys[0]) == 40
    assert all(isinstance(key, str) and len(key) == 64 for _, key in keys[0]), keys[0]
    shared = [name for name, key in keys[0] if [k for _, k in keys[0]].count(key) > 1]
    # the Ising kinds' sum_counts and record kernels: same source and cells
    assert shared == ["cuda_runner.<locals>.sum_counts", "cuda_runner.<locals>.record"] * 2
    assert keys[0] == keys[1]  # and every process computes the same ones


HOLDER = """
import fcntl, sys
lock = open(sys.argv[1], "ab")
fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


@pytest.mark.skipif(compile_lock.fcntl is None, reason="no flock on this platform: nothing is locked")
def test_the_compile_lock_waits_for_another_process_and_never_for_its_own(tmp_path):
    entry = tmp_path / "kernel.nbc"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(entry) + ".lock"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert compile_lock.acquire(entry, 0.0) is None  # another process compiles it
        holder.stdin.close()  # it ends, and the kernel lets its lock go
        path = compile_lock.acquire(entry, 60.0)
    finally:
        holder.kill()
        holder.wait()
    assert path is not None and compile_lock.holding()
    assert compile_lock.acquire(entry, 60.0) is None  # held by this process: no wait, no second lock
    compile_lock.release(path)
    assert not compile_lock.holding()
    compile_lock.release(compile_lock.acquire(entry, 0.0))  # free again
