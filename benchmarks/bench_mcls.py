"""Monte Carlo linear solvers: transitions per second, the the Hamilton & Lupo Pasini report case, and CG beside them.

asv runs the ``track_*`` methods; ``python -m benchmarks.bench_mcls [--quick]`` prints a
table with the naive numba.cuda baseline and conjugate gradients (SciPy; CuPy when
installed) timed to the same accuracy, in the same run.
"""

import argparse
import time

import numpy as np
import scipy.sparse.linalg as spla

import gpuensembles as ge
from gpuensembles.models.mcls import problems

from . import baselines, measure
from .bench_escape_times import gpu_available

#: The seed's case: 2D Laplacian n = 900, adjoint method, weight cutoff 1e-9, b = 1.
SEED_CASE = dict(m=30, histories=10**7, weight_cutoff=1e-9)
CPU_HISTORIES = 10**5
#: ``python -m benchmarks``: the 1D shifted Laplacian (n, histories) per backend.
TABLE_CASE = {"cuda": (10**6, 10**7), "cpu": (10**4, 10**4)}


def laplacian_case(m=30):
    A = problems.laplacian_2d(m)
    b = np.ones(A.shape[0])
    return A, b, spla.spsolve(A.tocsc(), b)


def relative_error(x, exact):
    return float(np.linalg.norm(x - exact) / np.linalg.norm(exact))


def package_run(histories, backend, A, b, seed=1, **kw):
    """``(dataset, seconds)`` of one ``mc_solve`` call, after a small warm-up that compiles."""
    kw.setdefault("weight_cutoff", SEED_CASE["weight_cutoff"])
    ge.mc_solve(A, b, histories=64, backend=backend, seed=seed, progress=False, **kw)
    t0 = time.perf_counter()
    ds = ge.mc_solve(A, b, histories=histories, backend=backend, seed=seed, progress=False, **kw)
    return ds, time.perf_counter() - t0


def solve_call(A, b, histories, backend, seed=1, **kw):
    """``call() -> transitions`` of one whole ``mc_solve`` call (adjoint, collision, cutoff 1e-9)."""
    kw.setdefault("weight_cutoff", SEED_CASE["weight_cutoff"])

    def call(n=histories):
        ds = ge.mc_solve(A, b, histories=n, backend=backend, seed=seed, progress=False, **kw)
        assert np.isfinite(ds.x.values).all()
        return int(ds.transitions)

    return call


def table_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: seconds per call of the 1D shifted Laplacian (the walks'
    kernel, and the whole call) against the naive one-thread-per-history kernel."""
    n, histories = TABLE_CASE[backend]
    A = problems.shifted_laplacian_1d(n)
    b = np.ones(n)
    call = solve_call(A, b, histories, backend)
    package = measure.timed(call, repeats, warm=lambda: call(64))
    name = f"mcls 1D shifted Laplacian n={n:.0e}, {histories:.0e} histories"
    if backend != "cuda":
        return [measure.Row(name, package.seconds(), package.seconds("call"),
                            "naive numba.cuda, 1 thread/history: needs a GPU", None)]
    from gpuensembles.models.mcls.splitting import jacobi, transition_table

    H, f = jacobi(A, b)
    norm = np.abs(f).sum()
    sources = (np.cumsum(np.abs(f)) / norm, np.arange(f.size, dtype=np.int32), np.sign(f) * norm)
    launch = baselines.numba_cuda_adjoint_launcher(transition_table(H.T).arrays, sources, histories)
    naive = measure.repeated(launch, repeats, warm=lambda: launch(size=128))
    return [measure.Row(name, package.seconds(), package.seconds("call"),
                        "naive numba.cuda, 1 thread/history, global atomics (the Hamilton & Lupo Pasini report)",
                        naive.seconds())]


def walks_only_seconds(histories, backend, A, b, seed=1, **kw):
    """Seconds of the walks alone (kernel, transfers, estimator), without the set-up and
    convergence guard or the assembly of the Dataset: what the naive baseline's clock sees."""
    from gpuensembles.models.mcls import run as solve

    kw.setdefault("weight_cutoff", SEED_CASE["weight_cutoff"])
    kw.setdefault("batches", 64)
    problem = solve._make_problem(A, b, kw.pop("method", "adjoint"), histories, kw.pop("weight_cutoff"),
                                  kw.pop("max_steps", None), kw.pop("estimator", "collision"), None,
                                  kw.pop("batches"), seed, False, backend)
    t0 = time.perf_counter()
    problem.run(0, problem.per_batch.size)
    return time.perf_counter() - t0


def cg_time_to_accuracy(A, b, exact, target, xp=None, repeats=5):
    """Best-of-``repeats`` seconds for CG to reach relative error <= ``target``, with the rtol used."""
    if xp is None:
        solve, A_, b_ = spla.cg, A, b

        def to_host(v):
            return v
    else:
        import cupyx.scipy.sparse as csp
        import cupyx.scipy.sparse.linalg as cspla

        solve, A_, b_ = cspla.cg, csp.csr_matrix(A), xp.asarray(b)

        def to_host(v):
            return v.get()
    for rtol in 10.0 ** -np.arange(1, 13):
        x, _ = solve(A_, b_, rtol=rtol, maxiter=10 * A.shape[0])
        if relative_error(to_host(x), exact) <= target:
            break
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        x, _ = solve(A_, b_, rtol=rtol, maxiter=10 * A.shape[0])
        if xp is not None:
            xp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, rtol


class SeedCase:
    """the Hamilton & Lupo Pasini report's 2D Laplacian (n = 900), 1e7 adjoint histories, cutoff 1e-9, on one GPU."""

    timeout = 600

    def setup(self):
        if not gpu_available():
            raise NotImplementedError("no GPU")
        self.A, self.b, self.exact = laplacian_case(SEED_CASE["m"])

    def track_seconds(self):
        ds, seconds = package_run(SEED_CASE["histories"], "cuda", self.A, self.b)
        assert relative_error(ds.x.values, self.exact) < 0.05
        return seconds

    track_seconds.unit = "s"

    def track_transitions_per_second(self):
        ds, seconds = package_run(SEED_CASE["histories"], "cuda", self.A, self.b)
        return int(ds.transitions) / seconds

    track_transitions_per_second.unit = "transitions/s"


class CPUThroughput:
    """The same case with fewer histories on the CPU backend."""

    timeout = 600
    histories = CPU_HISTORIES

    def setup(self):
        self.A, self.b, self.exact = laplacian_case(SEED_CASE["m"])

    def track_transitions_per_second(self):
        ds, seconds = package_run(self.histories, "cpu", self.A, self.b)
        assert relative_error(ds.x.values, self.exact) < 1.0
        return int(ds.transitions) / seconds

    track_transitions_per_second.unit = "transitions/s"


def _row(name, device, histories, transitions, seconds, error, walk_seconds=None):
    walks = f"{walk_seconds:>8.3f}" if walk_seconds is not None else f"{'':>8}"
    rate = transitions / (walk_seconds or seconds) if transitions else float("nan")
    return (f"| {name:<46} | {device:<22} | {histories:>9.2e} | {transitions:>10.3e} | {seconds:>8.3f} | {walks} "
            f"| {rate:>10.3e} | {error:>9.2e} |")


def _cases(quick=False):
    """(title, A, b, exact, GPU histories, CPU histories) of the Hamilton & Lupo Pasini report's two matrices.

    ``quick``: the small 1D case.
    """
    A, b, exact = laplacian_case(SEED_CASE["m"])
    yield (f"2D Laplacian m={SEED_CASE['m']} (n={A.shape[0]})", A, b, exact, SEED_CASE["histories"], CPU_HISTORIES)
    n = 10**4 if quick else 10**6
    A = problems.shifted_laplacian_1d(n)
    b = np.ones(n)
    yield f"1D shifted Laplacian (n={n:.0e})", A, b, spla.spsolve(A.tocsc(), b), 10**7, 10**6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1000x fewer histories (a smoke test)")
    args = parser.parse_args(argv)
    from gpuensembles.core import backend as _backend

    shrink = 1000 if args.quick else 1
    header = (f"| {'implementation':<46} | {'device':<22} | {'histories':>9} | {'transit.':>10} | {'call s':>8} "
              f"| {'walks s':>8} | {'transit./s':>10} | {'rel. err':>9} |")
    rule = "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"
    for title, A, b, exact, gpu_histories, cpu_histories in _cases(args.quick):
        print(f"\ncase: {title}, b=1, adjoint, weight cutoff {SEED_CASE['weight_cutoff']}")
        rows = [header, rule]
        errors = []
        for backend in (["cuda"] if gpu_available() else []) + ["cpu"]:
            histories = (gpu_histories if backend == "cuda" else cpu_histories) // shrink
            device = _backend.device_name(backend)[:22]
            for estimator in ("collision", "expected"):
                ds, seconds = package_run(histories, backend, A, b, estimator=estimator)
                err = relative_error(ds.x.values, exact)
                errors.append(err)
                walks_only_seconds(histories, backend, A, b, estimator=estimator)  # its kernel may be new here
                walks = float(np.median([walks_only_seconds(histories, backend, A, b, estimator=estimator)
                                         for _ in range(3)]))
                rows.append(_row(f"gpuensembles {backend} adjoint {estimator}", device, histories,
                                 int(ds.transitions), seconds, err, walks))
        if gpu_available():
            rows.append(_baseline_row(A, b, exact, gpu_histories // shrink))
        rows += _cg_rows(A, b, exact, errors[0])
        print("\n".join(rows))
    if gpu_available():
        _mcsa_line(shrink)
    print("call s: the whole mc_solve call (set-up, convergence guard, walks, Dataset); walks s: the walks alone\n"
          "(median of 3 after one; kernel + transfers; the baseline's clock excludes its RNG state set-up);\n"
          "transit./s uses walks s.\n"
          "rel. err = ||x - x_spsolve|| / ||x_spsolve||; CG rows: time to reach the first row's error.")


def _mcsa_line(shrink):
    """MCSA on the seed's 2D Laplacian to a 1e-8 residual, beside CG to the same residual."""
    import warnings

    A, b, exact = laplacian_case(SEED_CASE["m"])
    histories = SEED_CASE["histories"] // shrink
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True):
        ds = ge.mc_solve(A, b, method="mcsa", histories=histories, tolerance=1e-8, max_iterations=40, seed=3,
                         weight_cutoff=1e-6, backend="cuda", progress=False)
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    spla.cg(A, b, rtol=1e-8)
    cg = time.perf_counter() - t0
    print(f"\nMCSA, 2D Laplacian, {histories:.0e} histories per iteration (cutoff 1e-6): relative residual "
          f"{float(ds.relative_residual):.2e} after {ds.sizes['iteration'] - 1} iterations in {seconds:.2f} s "
          f"(converged: {bool(ds.attrs['converged'])}); SciPy CG to 1e-8: {cg:.4f} s")


def _baseline_row(A, b, exact, histories):
    from gpuensembles.core import backend as _backend
    from gpuensembles.models.mcls.splitting import jacobi, transition_table

    H, f = jacobi(A, b)
    norm = np.abs(f).sum()
    sources = (np.cumsum(np.abs(f)) / norm, np.arange(f.size, dtype=np.int32), np.sign(f) * norm)
    x_sum, transitions, seconds = baselines.numba_cuda_adjoint_walks(transition_table(H.T).arrays, sources,
                                                                     histories)
    return _row("baseline: numba.cuda 1 thread/history (seed)", _backend.device_name("cuda")[:22], histories,
                transitions, seconds, relative_error(x_sum / histories, exact), seconds)


def _cg_rows(A, b, exact, target):
    seconds, rtol = cg_time_to_accuracy(A, b, exact, target)
    rows = [_row(f"scipy.sparse.linalg.cg, rtol={rtol:.0e}", "CPU", 0, 0, seconds, target)]
    try:
        import cupy
    except ImportError:
        return rows + ["| cupyx cg: CuPy is not installed on this machine |"]
    seconds, rtol = cg_time_to_accuracy(A, b, exact, target, xp=cupy)
    return rows + [_row(f"cupyx.scipy.sparse.linalg.cg, rtol={rtol:.0e}", "GPU", 0, 0, seconds, target)]


if __name__ == "__main__":
    main()
