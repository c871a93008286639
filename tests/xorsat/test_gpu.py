"""3-XORSAT quasi-greedy solver on a real GPU (``pytest -m gpu``): bit-identical to the CPU
backend with several warps per block, valid solutions with 2^20 clones, exponential TTS,
estimates from short timeouts."""

import numpy as np
import pytest

import gpuensembles as ge

from .. import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


def test_gpu_runs_equal_cpu_runs():
    # Warps stop as soon as their run has an earlier solution: the results must not depend on it.
    inst = ge.xorsat.random_instances([45, 60], count=2, seed=3)
    kw = dict(p=[0.1, 0.3], clones=300, runs=6, timeout=300, seed=9, progress=False)
    cpu, gpu = ge.xorsat.solve(inst, backend="cpu", **kw), ge.xorsat.solve(inst, backend="cuda", **kw)
    assert gpu.attrs["backend"] == "cuda" and cpu.solved.any() and not cpu.solved.all()
    for name in ("tts_sweeps", "solved", "clone", "solution"):
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=name)


def test_million_clone_solutions_satisfy_every_triplet():
    inst = ge.xorsat.random_instances(128, count=4, seed=5)
    ds = ge.xorsat.solve(inst, p=0.1, clones=2**20, runs=4, seed=1, backend="cuda", progress=False)
    assert ds.solved.all()
    for i in ds.instance.values:
        single = ge.xorsat.select_instance(inst, instance=int(i))
        assert np.all(ge.xorsat.energy(single, ds.solution.sel(instance=i).values) == 0)


def test_tts_is_exponential_and_short_timeouts_agree():
    # 256 clones at N = 128: tau is thousands of sweeps, so the few tens of sweeps of the
    # clones' descent from their random start are negligible even against tau / 10
    inst = ge.xorsat.random_instance(128, seed=2)
    full = ge.xorsat.solve(inst, p=0.1, clones=256, runs=256, seed=3, backend="cuda", progress=False)
    assert full.solved.all()
    assert float(full.tts.ks_test(time="sweeps").pvalue) > 0.01  # KS at the 1% level
    tau = full.tts.mean(time="sweeps")
    short = ge.xorsat.solve(inst, p=0.1, clones=256, runs=1024, timeout=int(tau.tau / 10), seed=4, backend="cuda",
                            progress=False)
    est = short.tts.from_timeouts(time="sweeps")
    assert est.lower <= tau.upper and tau.lower <= est.upper
