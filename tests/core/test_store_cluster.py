"""Resumable stores, faults and clusters (CPU; the GPU side runs on the GPU machine)."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.core import backend as _backend
from gpuensembles.core import engine

CASE = dict(damping=1.0, gamma=0.5, h=0.01, model="overdamped", backend="cpu", D=[0.3, 0.5], seed=7)


def run(**kw):
    return ge.escape_times(**{**CASE, "realizations": 40, **kw})


@pytest.fixture(scope="module")
def reference():
    return run()


def test_store_resumes_bit_identically(reference, tmp_path, monkeypatch):
    first = run(store=tmp_path, chunks=None)
    np.testing.assert_array_equal(first.steps.values, reference.steps.values)
    chunks = sorted(tmp_path.glob("chunk-*.json"))
    assert len(chunks) == math.ceil(40 / math.ceil(40 / engine.STORE_CHUNKS))  # chunks of 3 realizations
    for lost in chunks[::3]:  # as if the run had been killed before these finished
        lost.unlink()
        lost.with_suffix(".npy").unlink()
    ran = []
    original = engine.run_block
    monkeypatch.setattr(engine, "run_block", lambda plan, loc, **kw: ran.append(loc) or original(plan, loc, **kw))
    resumed = run(store=tmp_path)
    assert len(ran) == len(chunks[::3])  # only the missing chunks ran again
    np.testing.assert_array_equal(resumed.steps.values, reference.steps.values)


def test_store_with_dask_chunks(reference, tmp_path):
    lazy = run(store=tmp_path, chunks={"realization": 7, "D": 1})
    assert len(list(tmp_path.glob("chunk-*.json"))) == 0  # nothing runs before compute
    np.testing.assert_array_equal(lazy.steps.values, reference.steps.values)
    assert len(list(tmp_path.glob("chunk-*.json"))) == 2 * 6


def test_store_without_seed_resumes_with_the_recorded_one(tmp_path):
    kw = {k: v for k, v in CASE.items() if k != "seed"}
    first = ge.escape_times(**kw, realizations=20, store=tmp_path)
    again = ge.escape_times(**kw, realizations=20, store=tmp_path)
    assert again.attrs["seed"] == first.attrs["seed"]
    np.testing.assert_array_equal(again.steps.values, first.steps.values)


@pytest.mark.parametrize("change, named", [(dict(seed=8), "seed"), (dict(D=[0.3, 0.6]), "parameters"),
                                           (dict(realizations=41), "shape"), (dict(chunks=5), "chunks")])
def test_store_refuses_a_different_run(tmp_path, change, named):
    run(store=tmp_path)
    with pytest.raises(ValueError, match=f"different run.*{named}"):
        run(store=tmp_path, **change)


def test_out_of_memory_splits_the_chunk(reference, monkeypatch):
    original = engine.first_passage_runner

    def small_device(kernel, backend):
        runner = original(kernel, backend)

        def run_or_fail(params, streams, rid0, seed, max_steps, out, **kw):
            if out.shape[1] > 6:
                raise MemoryError("pretend the device holds 6 realizations per point")
            return runner(params, streams, rid0, seed, max_steps, out, **kw)
        return run_or_fail

    monkeypatch.setattr(engine, "first_passage_runner", small_device)
    np.testing.assert_array_equal(run().steps.values, reference.steps.values)


def test_out_of_memory_for_one_realization_says_what_to_do(monkeypatch):
    def no_memory(kernel, backend):
        def fail(*args, **kwargs):
            raise MemoryError("device full")
        return fail

    monkeypatch.setattr(engine, "first_passage_runner", no_memory)
    with pytest.raises(MemoryError, match="chunks=\\{dim: 1\\}"):
        run(realizations=3)


@pytest.mark.slow
def test_sigkill_and_rerun_gives_the_same_result(reference, tmp_path):
    # 16 chunks of ~3e6 steps each (tens of ms): the poll below catches the run between chunks
    kw = dict(damping=1.0, gamma=0.5, h=0.0005, model="overdamped", backend="cpu", D=[0.2, 0.25], seed=7,
              realizations=128)
    script = textwrap.dedent(f"""
        import gpuensembles as ge
        ge.escape_times(**{kw!r}, store={str(tmp_path)!r}, progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 120
    while not list(tmp_path.glob("chunk-*.json")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(tmp_path.glob("chunk-*.json")))
    assert 1 <= done < engine.STORE_CHUNKS, done  # killed mid-run
    resumed = ge.escape_times(**kw, store=tmp_path)
    fresh = ge.escape_times(**kw)
    np.testing.assert_array_equal(resumed.steps.values, fresh.steps.values)
    resumed.to_netcdf(tmp_path / "a.nc")
    fresh.to_netcdf(tmp_path / "b.nc")
    a, b = ge.open_dataset(tmp_path / "a.nc"), ge.open_dataset(tmp_path / "b.nc")
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)


@pytest.mark.slow
def test_two_worker_processes_and_a_killed_worker(reference, monkeypatch):
    distributed = pytest.importorskip("distributed")
    # The workers compile their kernels (no disk cache), so the job still runs when one is killed.
    monkeypatch.setenv("GPUENSEMBLES_CACHE", "0")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            ds = run(chunks=2)  # 40 tasks over two worker processes
            future = client.compute(ds.steps)
            victim = next(iter(client.run(os.getpid).values()))
            time.sleep(1.0)
            assert future.status == "pending"
            os.kill(victim, signal.SIGKILL)  # the nanny restarts it; the scheduler reruns its tasks
            steps = future.result(timeout=300)
    np.testing.assert_array_equal(steps.values, reference.steps.values)


def test_cluster_without_gpus_is_a_cpu_cluster(reference, monkeypatch):
    monkeypatch.setattr(_backend, "gpu_count", lambda: 0)
    with ge.cluster(processes=False, dashboard_address=None) as client:
        ds = run()
        assert ds.steps.chunks is not None  # an active client makes results lazy
        np.testing.assert_array_equal(ds.steps.values, reference.steps.values)
        assert len(client.scheduler_info()["workers"]) == 1
    with pytest.raises(ValueError, match="n_gpus"):
        ge.cluster(n_gpus=2)


def test_cpu_cluster_of_several_threads_needs_a_thread_safe_layer(monkeypatch):
    monkeypatch.setattr(_backend, "gpu_count", lambda: 0)
    monkeypatch.setattr(_backend, "cpu_threading_layer", lambda: "workqueue")
    with pytest.raises(ValueError, match="threads_per_worker=2.*tbb"):
        ge.cluster(threads_per_worker=2, processes=False, dashboard_address=None)
    monkeypatch.undo()
    assert _backend.cpu_threading_layer() in ("tbb", "omp", "workqueue")


@pytest.mark.parametrize("given, n_gpus, expected", [(None, 2, [0, 1]), ("2,3", 1, ["2"]), ("GPU-a, GPU-b", None,
                                                                                           ["GPU-a", "GPU-b"])])
def test_cluster_workers_take_the_gpus_this_process_was_given(monkeypatch, given, n_gpus, expected):
    # dask-cuda gives each worker one entry of CUDA_VISIBLE_DEVICES: with "2,3" given, a cluster
    # of one GPU must run on GPU 2, not on GPU 0 (which range(n_gpus) would name)
    import types

    import distributed

    monkeypatch.setattr(_backend, "gpu_count", lambda: 2)
    if given is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", given)
    seen = {}
    monkeypatch.setitem(sys.modules, "dask_cuda", types.SimpleNamespace(LocalCUDACluster=lambda **kw: seen.update(kw)
                                                                         or "cluster"))
    monkeypatch.setattr(distributed, "Client", lambda cluster: cluster)
    assert ge.cluster(n_gpus=n_gpus) == "cluster"
    assert seen["CUDA_VISIBLE_DEVICES"] == expected
