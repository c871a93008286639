"""Monte Carlo linear solvers on the CPU backend: exactness against direct solves and
truncated Neumann series, the convergence guard, determinism and bad input."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpuensembles as ge
from gpuensembles.models.mcls import problems
from gpuensembles.models.mcls.splitting import jacobi, spectral_radius, transition_table, variance_matrix

from .. import raise_if_dask_computes


def nonsymmetric_system(n=40, seed=0):
    """A sparse nonsymmetric system with signed couplings, dominant by rows and columns.

    Nonsymmetric on purpose: an adjoint walk that used H instead of H^T would be caught.
    """
    rng = np.random.default_rng(seed)
    N = sp.random_array((n, n), density=0.12, rng=rng, data_sampler=lambda size: rng.uniform(-1, 1, size)).tocsr()
    N.setdiag(0.0)
    N.eliminate_zeros()
    margin = np.maximum(abs(N).sum(axis=1), abs(N).sum(axis=0))
    A = sp.csr_array(sp.diags_array(margin / 0.7 + 0.1) - N)
    return A, rng.uniform(-1, 2, n)


@pytest.fixture(scope="module")
def system():
    A, b = nonsymmetric_system()
    return A, b, spla.spsolve(A.tocsc(), b)


def cpu(A, b, **kw):
    kw.setdefault("progress", False)
    return ge.mc_solve(A, b, backend="cpu", **kw)


def test_problems_have_the_seeds_spectral_radii():
    # seed 003, Tables 4-19: rho(H) = 0.994869, rho(H_hat) = 0.99447 for the 2D Laplacian
    H, _ = jacobi(problems.laplacian_2d(30), np.ones(900))
    rho, rho_hat = spectral_radius(H), spectral_radius(variance_matrix(H), nonnegative=True)
    assert rho.estimate == pytest.approx(problems.jacobi_radius_laplacian_2d(30), abs=1e-9)
    assert rho_hat.lower <= rho_hat.estimate <= rho_hat.upper
    assert rho_hat.upper - rho_hat.lower < 1e-5 and abs(rho_hat.estimate - 0.99447) < 5e-6
    # the 1D shifted Laplacian takes the power-iteration path; its Collatz-Wielandt bounds are rigorous
    n = 20_000
    H, _ = jacobi(problems.shifted_laplacian_1d(n), np.ones(n))
    rho, rho_hat = spectral_radius(H), spectral_radius(variance_matrix(H), nonnegative=True)
    exact = problems.jacobi_radius_shifted_laplacian_1d(n)
    assert rho.method == "power iteration" and rho.estimate == pytest.approx(exact, abs=1e-5)
    assert rho_hat.lower <= exact**2 <= rho_hat.upper + 1e-12 and rho_hat.upper == pytest.approx(0.64)


def test_transition_table_reproduces_the_matrix(system):
    A, b, _ = system
    H, _ = jacobi(A, b)
    indptr, indices, cdf, factor = transition_table(H).arrays
    p = np.diff(np.concatenate(([0.0], cdf)))
    starts = indptr[:-1][np.diff(indptr) > 0]
    p[starts] = cdf[starts]
    rebuilt = sp.csr_array((p * factor, indices, indptr), shape=H.shape)
    np.testing.assert_allclose(rebuilt.toarray(), H.toarray(), atol=1e-14)
    assert np.all(cdf[indptr[1:][np.diff(indptr) > 0] - 1] == 1.0) and np.all(p > 0)


@pytest.mark.parametrize("method", ["adjoint", "forward"])
@pytest.mark.parametrize("estimator", ["collision", "expected"])
def test_every_entry_within_four_standard_errors_of_spsolve(system, method, estimator):
    A, b, exact = system
    ds = cpu(A, b, method=method, estimator=estimator, histories=100_000 if method == "adjoint" else 4000,
             batches=256, seed=7)
    z = (ds.x.values - exact) / ds.x_stderr.values
    assert np.all(np.abs(z) < 4), np.abs(z).max()
    # the error bars are honest, not inflated: the squared z-scores average to about 1
    assert 0.5 < np.mean(z**2) < 2.0
    assert float(ds.relative_residual) < 0.1 and float(ds.mean_walk_length) > 1


def test_forward_and_adjoint_agree(system):
    A, b, _ = system
    rows = [0, 7, 39]
    adj = cpu(A, b, histories=100_000, seed=1).sel(row=rows)
    fwd = cpu(A, b, method="forward", entries=rows, histories=20_000, seed=2)
    assert fwd.row.values.tolist() == rows and "relative_residual" not in fwd
    z = (adj.x - fwd.x) / np.hypot(adj.x_stderr, fwd.x_stderr)
    assert np.all(np.abs(z) < 4)


def test_error_falls_as_inverse_square_root_of_histories(system):
    A, b, exact = system
    # RMS error over 4 independent runs at each of 7 sizes spanning 3 decades
    histories = np.logspace(3, 6, 7).astype(int)
    errors = [np.sqrt(np.mean([np.sum((cpu(A, b, histories=int(n), seed=100 + 10 * i + r, batches=16).x.values
                                       - exact) ** 2) for r in range(4)])) for i, n in enumerate(histories)]
    slope = np.polyfit(np.log(histories), np.log(errors), 1)[0]
    assert abs(slope + 0.5) < 0.05, slope


@pytest.mark.parametrize("method", ["adjoint", "forward"])
@pytest.mark.parametrize("estimator", ["collision", "expected"])
def test_fixed_length_walks_sample_the_truncated_series(system, method, estimator):
    # weight_cutoff=0 and max_steps=L: the collision estimate is unbiased for sum_{k<=L} H^k f,
    # the expected-value estimate for one more term. Pins the walk's length and estimator exactly.
    A, b, _ = system
    H, f = jacobi(A, b)
    L = 1
    terms = L + 1 if estimator == "collision" else L + 2
    series, term = np.zeros_like(f), f.copy()
    for _ in range(terms):
        series, term = series + term, H @ term
    ds = cpu(A, b, method=method, estimator=estimator, weight_cutoff=0, max_steps=L, batches=128, seed=3,
             histories=100_000 if method == "adjoint" else 4000)
    # a row with one coupling makes a one-step walk deterministic: its error bar is rounding
    assert np.all(np.abs(ds.x.values - series) < 4 * ds.x_stderr.values + 1e-12 * np.abs(series))
    assert float(ds.mean_walk_length) <= L
    # the next term is resolved at this sample size, so the test tells L from L + 1 steps
    assert np.max(np.abs(term) / ds.x_stderr.values) > 4


def test_weight_cutoff_bias_is_below_the_statistical_error():
    # Same seed, so both runs follow the same walks and differ only by the tail the higher
    # cutoff drops: a paired, nearly noise-free measurement of the cutoff's bias.
    A = problems.laplacian_2d(12)
    b = np.ones(A.shape[0])
    kw = dict(histories=20_000, seed=5)
    tight, seed_cutoff = cpu(A, b, weight_cutoff=1e-14, **kw), cpu(A, b, weight_cutoff=1e-9, **kw)
    bias = np.abs(seed_cutoff.x - tight.x)
    assert float((bias / tight.x_stderr).max()) < 1e-3
    coarse = cpu(A, b, weight_cutoff=1e-1, **kw)  # the same measurement does see a coarse cutoff
    assert float((np.abs(coarse.x - tight.x) / tight.x_stderr).max()) > 1


def test_rows_without_couplings_absorb_the_walk():
    # rows 0 and n-1 of H are empty (A has only its diagonal there): walks end on reaching them
    A = problems.shifted_laplacian_1d(12, shift=0.4).tolil()
    A[0, 1] = A[11, 10] = 0.0
    A = sp.csr_array(A)
    b = np.linspace(1.0, 2.0, 12)
    exact = spla.spsolve(A.tocsc(), b)
    H, _ = jacobi(A, b)
    indptr, _, cdf, _ = transition_table(H).arrays
    assert indptr[1] == indptr[0] and indptr[-1] == indptr[-2] and np.all(cdf[indptr[2] - 1] == 1.0)
    for method in ("adjoint", "forward"):
        ds = cpu(A, b, method=method, histories=20_000 if method == "adjoint" else 500, batches=128, seed=6)
        assert np.all(np.abs(ds.x.values - exact) < 4 * ds.x_stderr.values + 1e-12 * np.abs(exact))


def test_same_seed_same_numbers_for_any_chunking():
    A = problems.laplacian_2d(6)
    b = np.arange(36.0) - 10
    kw = dict(histories=3000, batches=12, seed=8)
    eager = cpu(A, b, **kw)
    for chunks in (1, 5, 12):
        with raise_if_dask_computes():
            lazy = cpu(A, b, chunks=chunks, **kw)
        lazy = lazy.compute()
        for name in ("x", "x_stderr", "transitions", "relative_residual"):
            np.testing.assert_array_equal(lazy[name].values, eager[name].values)
    other = cpu(A, b, **{**kw, "seed": 9})
    assert not np.array_equal(other.x.values, eager.x.values)


def test_output_is_labeled_and_round_trips(tmp_path):
    A = problems.laplacian_2d(5)
    ds = cpu(A, np.ones(25), histories=640, seed=2, keep_batches=True)
    assert ds.attrs["seed"] == 2 and ds.attrs["method"] == "adjoint" and "mc_solve(" in ds.attrs["history"]
    assert ds.x_batch.dims == ("batch", "row") and ds.sizes["batch"] == 64
    assert int(ds.histories) == 640 and ds.rho_H_hat.attrs["upper_bound"] < 1
    ds.to_netcdf(tmp_path / "x.nc")
    back = ge.open_dataset(tmp_path / "x.nc")
    assert back.identical(ds)


def test_uneven_batches_use_every_history():
    A = problems.laplacian_2d(4)
    ds = cpu(A, np.ones(16), histories=1001, batches=10, seed=1, max_steps=2, weight_cutoff=0)
    assert int(ds.histories) == 1001 and int(ds.transitions) == 2002


def test_divergent_matrix_is_refused_unless_forced():
    A = sp.csr_array(np.array([[1.0, 0.9, 0.6], [0.9, 1.0, 0.6], [0.6, 0.6, 1.0]]))
    b = np.ones(3)
    with pytest.raises(ValueError, match=r"rho\(H_hat\) = .* >= 1.*infinite variance"):
        cpu(A, b, histories=100)
    # forced, fixed-length walks still sample the truncated series
    H, f = jacobi(A, b)
    ds = cpu(A, b, histories=20_000, batches=100, seed=4, weight_cutoff=0, max_steps=2, force=True)
    series = f + H @ f + H @ (H @ f)
    assert np.all(np.abs(ds.x.values - series) < 4 * ds.x_stderr.values)


def test_warns_when_rho_is_close_to_one():
    A = problems.laplacian_2d(80)  # rho(H) = cos(pi / 81) = 0.99925
    with pytest.warns(RuntimeWarning, match="close to 1"):
        cpu(A, np.ones(A.shape[0]), histories=2, batches=2, seed=1, weight_cutoff=1e-2)


@pytest.mark.parametrize("change, message", [
    (dict(A=np.ones((2, 3))), "A must be square"),
    (dict(A=sp.csr_array(np.array([[0.0, 1.0], [1.0, 2.0]]))), "nonzero diagonal.*rows \\[0\\]"),
    (dict(A=np.array([[2.0, np.nan], [0.0, 2.0]])), "A must be finite"),
    (dict(b=np.ones(3)), r"b must have shape \(2,\)"),
    (dict(b=np.zeros(2)), "nonzero entry"),
    (dict(method="backward"), "method must be one of"),
    (dict(estimator="track"), "estimator must be one of"),
    (dict(histories=10, batches=64), "histories must be an integer in \\[64, "),
    (dict(batches=1), r"batches must be an integer in \[2, 2\*\*62\]"),
    (dict(weight_cutoff=1.0), r"weight_cutoff must be a number in \[0, 1\)"),
    (dict(weight_cutoff=float("nan")), "weight_cutoff"),
    (dict(weight_cutoff=0.0), "give max_steps"),
    (dict(max_steps=0), r"max_steps must be an integer in \[1, "),
    (dict(entries=[0]), "entries selects rows for method='forward'"),
    (dict(method="forward", entries=[2]), r"entries must lie in \[0, 2\)"),
    (dict(method="forward", entries=[1, 1]), "must not repeat"),
    (dict(method="forward", entries=[0.5]), "row indices"),
    (dict(seed=-1), "seed"),
    (dict(histories=2**63), r"histories must be an integer in \[64, 2\*\*62\]"),
    (dict(max_steps=10**19), "max_steps must be an integer in"),
    (dict(A=[[2.0, 1.0, 0.0]]), "A must be square"),
    (dict(A=[[2.0, 1.0], [1.0]]), "A must be a real number or an array of them"),
    (dict(backend="tpu"), "backend must be one of"),
    (dict(method="mcsa", tolerance=0.0), r"tolerance must be a number in \(0, 1\)"),
    (dict(method="mcsa", max_iterations=0), "max_iterations must be an integer >= 1"),
    (dict(method="mcsa", keep_batches=True), "keep_batches is not available"),
])
def test_bad_input_is_refused_before_any_walk(change, message):
    kw = dict(A=sp.csr_array(np.array([[2.0, 1.0], [1.0, 2.0]])), b=np.ones(2), histories=128)
    kw.update({"backend": "cpu", **change})
    with pytest.raises(ValueError, match=message):
        ge.mc_solve(**kw, progress=False)


@pytest.mark.parametrize("change, message", [
    (dict(A=np.array([[2.0, 1j], [0.0, 2.0]])), "A must be a real number or an array of them.*complex"),
    (dict(A=sp.csr_array(np.array([[2.0, 1j], [0.0, 2.0]]))), "A must hold real numbers"),
    (dict(A="A.mtx"), "A must be a scipy.sparse matrix or a 2-D array"),
    (dict(A=None), "A must be a scipy.sparse matrix or a 2-D array"),
    (dict(b="ones"), "b must be a real number"),
    (dict(b=[1.0, None]), "b must be a real number"),
    (dict(weight_cutoff="1e-3"), "weight_cutoff must be a real number"),
    (dict(force="no"), "force must be True or False"),
    (dict(method="mcsa", tolerance="1e-6"), "tolerance must be a real number"),
    (dict(chunks={"batch": 2}), "chunks must be an integer"),
    (dict(histories="1e6"), "histories must be an integer"),
])
def test_wrong_types_are_refused_before_any_walk(change, message):
    kw = dict(A=sp.csr_array(np.array([[2.0, 1.0], [1.0, 2.0]])), b=np.ones(2), histories=128)
    kw.update({"backend": "cpu", **change})
    with pytest.raises(TypeError, match=message):
        ge.mc_solve(**kw, progress=False)


def test_a_nested_list_is_a_matrix():
    kw = dict(b=np.ones(2), histories=128, seed=3, backend="cpu", progress=False)
    listed = ge.mc_solve([[2.0, 1.0], [1.0, 2.0]], **kw)
    np.testing.assert_array_equal(listed.x.values, ge.mc_solve(np.array([[2.0, 1.0], [1.0, 2.0]]), **kw).x.values)


def test_the_seed_case_solves_on_the_cpu_backend():
    # seed 003's 2D Laplacian at 1/100 of its histories (CI has 2 cores): within 4 standard errors
    A = problems.laplacian_2d(30)
    b = np.ones(900)
    exact = spla.spsolve(A.tocsc(), b)
    ds = cpu(A, b, histories=100_000, batches=256, seed=11)
    z = (ds.x.values - exact) / ds.x_stderr.values
    assert np.all(np.abs(z) < 4)
    assert math.isclose(float(ds.rho_H), 0.994869, abs_tol=1e-6)


def test_mcsa_converges_to_the_exact_solution(system):
    # The walks only estimate corrections, so 2000 histories per iteration reach 1e-10.
    A, b, exact = system
    ds = cpu(A, b, method="mcsa", histories=2000, weight_cutoff=1e-6, tolerance=1e-10, seed=1)
    assert ds.attrs["converged"] == 1 and float(ds.relative_residual) < 1e-10
    assert float(ds.residual[-1]) == float(ds.relative_residual) and ds.residual.dims == ("iteration",)
    np.testing.assert_allclose(ds.x, exact, atol=1e-9 * np.abs(exact).max())
    # each iteration gains at least a decade here (the correction's error is ~3% of it)
    assert np.all(np.diff(np.log10(ds.residual.values)) < -1)
    again = cpu(A, b, method="mcsa", histories=2000, weight_cutoff=1e-6, tolerance=1e-10, seed=1)
    np.testing.assert_array_equal(again.x.values, ds.x.values)


def test_mcsa_says_when_it_diverges():
    # 2D Laplacian: 1 - rho(H) = 0.005, far below the error of 200-history corrections
    A = problems.laplacian_2d(30)
    with pytest.warns(RuntimeWarning, match="diverges"):
        ds = cpu(A, np.ones(900), method="mcsa", histories=200, weight_cutoff=1e-4, seed=1)
    assert ds.attrs["converged"] == 0


@pytest.mark.slow
def test_same_numbers_on_two_worker_processes():
    distributed = pytest.importorskip("distributed")
    A = problems.laplacian_2d(6)
    b = np.arange(36.0) - 10
    kw = dict(histories=3000, batches=12, seed=8)
    eager = cpu(A, b, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        with distributed.Client(c):
            lazy = cpu(A, b, **kw)  # an active client makes the run lazy: 4 tasks of 3 batches
            assert lazy.x.chunks is not None
            lazy = lazy.compute()
    for name in ("x", "x_stderr", "transitions"):
        np.testing.assert_array_equal(lazy[name].values, eager[name].values)


def test_an_unknown_walk_kernel_variant_is_refused(monkeypatch):
    from gpuensembles.core.templates import walks

    monkeypatch.setenv(walks.WALK_VARIANT_VARIABLE, "fastest")
    with pytest.raises(ValueError, match="GPUENSEMBLES_WALK_KERNEL must be one of"):
        walks.walk_variant()
    monkeypatch.setenv(walks.WALK_VARIANT_VARIABLE, "plain")
    assert walks.walk_variant() == "plain"
