"""Kuramoto on a real GPU (``pytest -m gpu``): locking at the N -> oo order parameter, both
coupling paths, and the noise decay at 2^24 oscillators."""

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.kuramoto import theory

from .. import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]
GPU = dict(backend="cuda", progress=False)


def test_gpu_kuramoto_locks_at_sqrt_one_minus_two_delta_over_k():
    N = 1 << 20
    ds = ge.kuramoto(N=N, K=[1.0, 3.0, 4.0], width=1.0, sampling="quantile", h=0.02, steps=4000, sample_every=100,
                     seed=1, **GPU)
    late = ds.r.isel(realization=0, time=slice(-10, None)).mean("time")
    expected = theory.kuramoto_order_parameter(ds.K, 1.0)
    np.testing.assert_allclose(late.sel(K=[3.0, 4.0]), expected[1:], atol=0.01)
    assert float(late.sel(K=1.0)) < 4 / np.sqrt(N)


def test_gpu_kuramoto_paths_agree_and_repeat():
    N, K = 4096, 3.0
    kw = dict(N=N, h=0.02, steps=300, sample_every=50, kT=0.1, seed=4, **GPU)
    mean_field = ge.kuramoto(K=K, **kw)
    np.testing.assert_array_equal(mean_field.r, ge.kuramoto(K=K, **kw).r)  # deterministic reduction
    matrix = ge.kuramoto(coupling=np.full((N, N), K / N), **kw)
    np.testing.assert_allclose(mean_field.r, matrix.r, atol=2e-3)
    cpu = ge.kuramoto(K=K, **{**kw, "backend": "cpu"})
    np.testing.assert_allclose(mean_field.r, cpu.r, atol=2e-3)  # fast sin/cos vs libm: chaos stays small here


def test_gpu_kuramoto_noise_decay_at_two_to_the_24():
    N, kT = 1 << 24, 0.3
    ds = ge.kuramoto(N=N, K=0.0, frequencies="gaussian", width=0.0, kT=kT, h=0.01, steps=400, sample_every=100,
                     initial="synchronized", seed=3, **GPU)
    np.testing.assert_allclose(ds.r.isel(realization=0), np.exp(-kT * ds.time), atol=4 / np.sqrt(N))
    assert np.all(ds.density.sum("phase") == N)
