"""Monte Carlo linear solvers on a real GPU (``pytest -m gpu``): the same walks as the CPU,
tallies equal to float64 rounding, and the seed's case solved within its error bars."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import gpuensembles as ge
from gpuensembles.models.mcls import problems

from .. import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.mark.parametrize("method", ["adjoint", "forward"])
@pytest.mark.parametrize("A", [problems.laplacian_2d(8), problems.shifted_laplacian_1d(20_000)],
                         ids=["shared-memory tallies", "global tallies"])
def test_gpu_walks_equal_cpu_walks(method, A):
    b = np.sin(np.arange(A.shape[0]))  # signed: negative start weights too
    kw = dict(method=method, histories=4096 if method == "adjoint" else 64, batches=8, seed=4, weight_cutoff=1e-6,
              entries=None if method == "adjoint" else [0, 5, 63])
    cpu = ge.mc_solve(A, b, backend="cpu", **kw)
    gpu = ge.mc_solve(A, b, backend="cuda", **kw)
    assert gpu.attrs["backend"] == "cuda"
    assert int(gpu.transitions) == int(cpu.transitions)  # identical paths
    np.testing.assert_allclose(gpu.x, cpu.x, rtol=1e-12, atol=1e-12 * float(np.abs(cpu.x).max()))
    np.testing.assert_allclose(gpu.x_stderr, cpu.x_stderr, rtol=1e-9)


def test_gpu_same_seed_same_numbers_for_any_chunking():
    A, b = problems.laplacian_2d(12), np.ones(144)
    kw = dict(histories=50_000, batches=16, seed=9, backend="cuda")
    eager = ge.mc_solve(A, b, **kw)
    for chunks in (1, 5):
        lazy = ge.mc_solve(A, b, chunks=chunks, **kw).compute()
        assert int(lazy.transitions) == int(eager.transitions)
        np.testing.assert_allclose(lazy.x, eager.x, rtol=1e-12)


@pytest.mark.parametrize("estimator", ["collision", "expected"])
def test_gpu_seed_case_within_four_standard_errors(estimator):
    # Seed 003's 2D Laplacian (n = 900), 1e6 adjoint histories, cutoff 1e-9.
    A = problems.laplacian_2d(30)
    b = np.ones(900)
    exact = spla.spsolve(A.tocsc(), b)
    ds = ge.mc_solve(A, b, histories=10**6, batches=256, seed=12, estimator=estimator, backend="cuda")
    z = (ds.x.values - exact) / ds.x_stderr.values
    print(f"\n{estimator}: max |z| {np.abs(z).max():.2f}, rel. error "
          f"{np.linalg.norm(ds.x - exact) / np.linalg.norm(exact):.2e}, walk {float(ds.mean_walk_length):.0f}")
    assert np.all(np.abs(z) < 4)


def test_gpu_reuses_the_device_copies_of_a_kept_splitting():
    from gpuensembles.core import backend
    from gpuensembles.models.mcls.splitting import check_system, splitting

    A = problems.shifted_laplacian_1d(5_000)
    kw = dict(histories=4096, batches=8, seed=4, weight_cutoff=1e-6, backend="cuda")
    first = ge.mc_solve(A, np.ones(5_000), **kw)
    table = splitting(check_system(A, np.ones(5_000))[0], "adjoint").table
    copies = [backend.resident_on_device(a) for a in table]
    second = ge.mc_solve(A, np.ones(5_000), **kw)
    assert all(backend.resident_on_device(a) is copy for a, copy in zip(table, copies))  # not copied again
    for host, device in zip(table, copies):
        np.testing.assert_array_equal(device.copy_to_host(), host)
    assert int(second.transitions) == int(first.transitions)  # the same walks
    np.testing.assert_allclose(second.x, first.x, rtol=1e-12)  # tallied atomically: in another order
    writable = np.arange(10.0)
    assert backend.resident_on_device(writable) is not backend.resident_on_device(writable)  # may change: copied
    read_only = np.arange(10.0)
    read_only.setflags(write=False)  # read-only, but nobody said it never changes: copied
    assert backend.resident_on_device(read_only) is not backend.resident_on_device(read_only)
    frozen = backend.freeze(np.arange(10.0))
    assert backend.resident_on_device(frozen) is backend.resident_on_device(frozen)
    key = id(frozen)
    del frozen
    assert key not in backend._RESIDENT and key not in backend._FROZEN  # gone with its host array
