"""The Kuramoto model on the CPU backend, against the N -> oo theory and exact limits."""

import warnings

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.models.kuramoto import theory

from .. import raise_if_dask_computes

CPU = dict(backend="cpu", progress=False)


def test_locked_order_parameter_above_threshold():
    # Lorentzian half-width 1: r -> sqrt(1 - 2/K) for K > 2. Quantile sampling removes the
    # disorder between systems; finite-N deviations are O(N^-1/2) at most.
    N = 16384
    ds = ge.kuramoto(N=N, K=[3.0, 4.0], width=1.0, sampling="quantile", h=0.02, steps=4000, sample_every=100,
                     seed=1, **CPU)
    late = ds.r.isel(realization=0, time=slice(-10, None)).mean("time")
    np.testing.assert_allclose(late, theory.kuramoto_order_parameter(ds.K, 1.0), atol=4 / np.sqrt(N))


@pytest.mark.parametrize("N", [1024, 4096])
def test_incoherent_below_threshold_scales_as_n_to_minus_half(N):
    ds = ge.kuramoto(N=N, K=1.0, width=1.0, h=0.05, steps=1000, sample_every=100, realizations=4, seed=2, **CPU)
    scaled = float(ds.r.isel(time=slice(2, None)).mean()) * np.sqrt(N)
    # uniform independent phases give sqrt(pi)/2 = 0.89; a locked fraction would grow with N
    assert 0.3 < scaled < 3.0


def test_pure_phase_diffusion_decays_as_exp_minus_dt():
    # K = 0, w = 0, all phases start at 0: <exp(i x)> = exp(-(kT/g) t)
    N, kT, g = 20000, 0.3, 1.5
    ds = ge.kuramoto(N=N, K=0.0, frequencies=np.zeros(N), kT=kT, g=g, h=0.01, steps=400, sample_every=50,
                     initial="synchronized", seed=3, **CPU)
    expected = np.exp(-kT / g * ds.time)
    np.testing.assert_allclose(ds.r.isel(realization=0), expected, atol=4 / np.sqrt(N))
    assert np.all(ds.density.sum("phase") == N)


def test_mean_field_and_matrix_paths_agree_for_constant_k():
    N, K = 256, 3.0
    kw = dict(N=N, h=0.02, steps=200, sample_every=50, kT=0.1, seed=4, **CPU)
    mean_field = ge.kuramoto(K=K, **kw)
    matrix = ge.kuramoto(coupling=np.full((N, N), K / N), **kw)
    # same frequencies, initial phases and noise; only the order of float32 sums differs
    np.testing.assert_allclose(mean_field.r, matrix.r, atol=1e-4)
    np.testing.assert_allclose(mean_field.psi, matrix.psi, atol=1e-4)


def test_same_seed_same_numbers_for_any_chunking():
    kw = dict(N=100, K=[0.5, 3.0], kT=0.05, h=0.02, steps=60, sample_every=20, realizations=5, seed=6, **CPU)
    eager = ge.kuramoto(**kw)
    with raise_if_dask_computes():
        lazy = ge.kuramoto(chunks=2, **kw)
    xr.testing.assert_identical(eager.drop_attrs(), lazy.compute().drop_attrs())
    # systems differ from each other, and a sweep shares the frozen disorder at t = 0
    assert not np.allclose(eager.r.isel(realization=0), eager.r.isel(realization=1))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "exactly one of K"),
        (dict(K=1.0, coupling=np.zeros((4, 4))), "exactly one of K"),
        (dict(coupling=np.zeros((3, 4))), "coupling must be a finite"),
        (dict(K=1.0, N=1), "N must be"),
        (dict(K=1.0, width=-1.0), "width must lie in"),
        (dict(K=1.0, kT=-0.1), "kT must lie in"),
        (dict(K=1.0, g=0.0), "g must lie in"),
        (dict(K=100.0), "h is too large"),
        (dict(K=1.0, steps=15), "multiple of sample_every"),
        (dict(K=1.0, bins=5000), "bins must be"),
        (dict(K=1.0, frequencies="cauchy"), "frequencies must be one of"),
        (dict(K=1.0, frequencies=np.zeros(3)), "frequencies must name"),
        (dict(K=1.0, frequencies=np.zeros(4), width=2.0), "width and center"),
        (dict(K=1.0, sampling="sobol"), "sampling must be"),
        (dict(K=1.0, initial="random"), "initial must be"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    kw = dict(N=4, h=0.01, steps=10, sample_every=10, seed=1, **CPU)
    with pytest.raises(ValueError, match=message):
        ge.kuramoto(**{**kw, **kwargs})


def test_stationary_order_parameter_and_its_drift():
    # K = 4 from uniform phases: r rises to its locked value within a few 1 / (K - 2); over the second
    # half of a long run it is stationary, over the whole run it is not
    kw = dict(N=256, K=4.0, width=1.0, sampling="quantile", h=0.02, sample_every=20, realizations=8, seed=4, **CPU)
    ds = ge.kuramoto(steps=3000, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        stationary = ds.kuramoto.order_parameter()
    expected = float(theory.kuramoto_order_parameter(4.0, 1.0))
    assert abs(float(stationary["mean"]) - expected) < 0.05  # finite N = 256 (corrections ~ 1 / sqrt(N))
    assert bool(ds.kuramoto.equilibration(discard=0.0)["drifting"].any())
    with pytest.warns(RuntimeWarning, match=r"systems? still drifting after the first 0% of the run"):
        ds.kuramoto.order_parameter(discard=0.0)
    with pytest.raises(ValueError, match="discard must be a fraction"):
        ds.kuramoto.order_parameter(discard=1.0)
