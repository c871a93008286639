"""Langevin on a real GPU (``pytest -m gpu``): the physics checks at GPU-sized ensembles,
agreement with the CPU backend, and determinism."""

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.models.langevin import theory

from .. import requires_gpu, z_score

pytestmark = [pytest.mark.gpu, requires_gpu]
GPU = dict(backend="cuda", progress=False)


def test_gpu_trajectories_follow_cpu_trajectories():
    # float64, short: the same normals and the same arithmetic up to libm vs CUDA rounding
    kw = dict(a=[0.0, 4.2], w=4.9, g=0.9, f=0.1, kT=0.001, h=0.01 * 2 * np.pi / 4.9, steps=500, sample_every=100,
              histogram=(-5, 5), realizations=64, seed=2, start="uniform", dtype="float64", progress=False)
    cpu, gpu = ge.langevin(backend="cpu", **kw), ge.langevin(backend="cuda", **kw)
    assert gpu.attrs["backend"] == "cuda"
    np.testing.assert_allclose(gpu.x, cpu.x, rtol=0, atol=1e-6)
    assert abs(gpu.density - cpu.density).sum() <= 2  # a boundary case may fall either side


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_equipartition_and_free_spreading(dtype):
    ds = ge.langevin(kT=[0.2, 0.5], g=1.0, h=0.01, steps=5000, realizations=1 << 16, start="uniform", seed=3,
                     dtype=dtype, **GPU)
    kin = ds.langevin.kinetic()
    assert np.all(np.abs(z_score(kin["mean"], kin["stderr"], ds.kT)) < 4)
    g, kT, T = 2.0, 0.4, 20.0
    free = ge.langevin(V0=0.0, g=g, kT=kT, h=0.01, steps=int(T / 0.01), realizations=1 << 16, seed=5, dtype=dtype,
                       **GPU)
    var = 2 * kT / g * (T - 2 * (1 - np.exp(-g * T)) / g + (1 - np.exp(-2 * g * T)) / (2 * g))
    pos = free.langevin.position()
    assert abs(z_score(pos["variance"], pos["variance_stderr"], var)) < 4


def test_gpu_overdamped_drift_matches_stratonovich():
    f, kT, V0 = [1.0, 2.0, 3.0], 0.1, 0.5
    ds = ge.langevin(model="overdamped", f=f, kT=kT, V0=V0, h=0.001, steps=200_000, transient=20_000,
                     realizations=1 << 14, seed=7, **GPU)
    vel = ds.langevin.velocity()
    exact = [theory.tilted_periodic_drift(f=fi, kT=kT, g=1.0, V0=V0) for fi in f]
    assert np.all(np.abs(z_score(vel["mean"], vel["stderr"], np.array(exact))) < 4)


def test_gpu_strong_damping_reaches_the_overdamped_drift():
    # underdamped with g = 200: the inertial correction, O((2 pi)^2 V0 / g^2) ~ 5e-4 relative,
    # is below the statistical error; time rescaled so that g x' sees the forces of the test above
    g, kT, V0 = 200.0, 0.1, 0.5
    f = 2.0
    ds = ge.langevin(f=f, g=g, kT=kT, V0=V0, h=5e-4, steps=40_000_000, transient=4_000_000, realizations=1 << 12,
                     seed=8, dtype="float64", **GPU)
    vel = ds.langevin.velocity()
    exact = theory.tilted_periodic_drift(f=f, kT=kT, g=g, V0=V0)
    assert abs(z_score(vel["mean"], vel["stderr"], exact)) < 4


def test_gpu_langevin_same_seed_same_numbers_for_any_chunking():
    kw = dict(a=[0.5, 1.5], kT=0.2, h=0.01, steps=3000, sample_every=1000, histogram=(-3, 3), realizations=4099,
              seed=9, **GPU)
    eager = ge.langevin(**kw)
    lazy = ge.langevin(chunks=1000, **kw).compute()
    xr.testing.assert_identical(eager.drop_attrs(), lazy.drop_attrs())
