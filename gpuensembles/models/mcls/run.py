"""``mc_solve``: forward and adjoint Monte Carlo solution of ``A x = b`` (the Hamilton & Lupo Pasini report).

Histories are split into ``batches``; each batch is an ensemble member whose tally is
an independent estimate of ``x``, so the batch spread gives ``x_stderr`` and batches are
what chunks, dask tasks and GPUs share out. A walk's random numbers are Philox with
key ``(seed, method)`` and counter ``(draw, history id)``, so its path does not depend
on chunking, worker count or backend.
"""

from __future__ import annotations  # sp.csr_array annotations must not import scipy.sparse

import itertools
import math
import warnings
from dataclasses import dataclass, replace
from typing import Literal, get_args

import numba
import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, io
from ...core.backend import Backend, Progress, cached, freeze
from ...core.lazy import lazy_module
from ...core.templates.walks import walk_runner
from . import mcsa
from .physics import KERNELS
from .splitting import Radius, check_system, splitting

sp = lazy_module("scipy.sparse")

Method = Literal["adjoint", "forward", "mcsa"]
Estimator = Literal["collision", "expected"]
METHODS, ESTIMATORS = (*KERNELS, "mcsa"), get_args(Estimator)
assert METHODS == get_args(Method)
_STREAM = {"adjoint": 0, "forward": 1, "mcsa": 2}  # MCSA iteration i uses stream 2 + i
#: ``rho(H)`` above which walks get long enough to warn (about ln(cutoff) / ln(rho) steps).
WARN_RHO = 0.999
_UNLIMITED = 2**62
_ESTIMATOR_TEXT = {
    "collision": "collision estimator (every visited state is tallied)",
    "expected": "expected-value estimator (the tally of the next state replaced by its expectation)",
}


def mc_solve(A, b, method: Method = "adjoint", histories=1_000_000, *, weight_cutoff=1e-9, max_steps=None,
             estimator: Estimator = "collision", entries=None, batches=64, seed=None, chunks=None, store=None,
             force=False, keep_batches=False, tolerance=1e-10, max_iterations=100, backend: Backend = "auto",
             progress: Progress = "auto") -> xr.Dataset:
    """Solve ``A x = b`` by Monte Carlo random walks on the Jacobi splitting of ``A``.

    ``x = sum_k H^k f`` with ``H = I - D^-1 A`` and ``f = D^-1 b``. Walks move along
    ``|H|`` (forward) or ``|H^T|`` (adjoint) with probabilities proportional to the
    magnitudes and carry weights ``H_ij / P_ij``.

    Parameters
    ----------
    A : scipy.sparse matrix or 2-D array_like, shape (n, n)
        Real, square, with a nonzero diagonal.
    b : array_like, shape (n,)
        Right-hand side (not all zero).
    method : {"adjoint", "forward", "mcsa"}
        ``adjoint``: walks start at state ``i`` with probability ``|f_i| / ||f||_1`` and
        estimate every entry of ``x`` at once. ``forward``: walks start at the entry they
        estimate (see ``entries``); the method for a few entries. ``mcsa``: Monte Carlo
        synthetic acceleration, Richardson steps each corrected by an adjoint solve of the
        residual equation, iterated to ``tolerance`` (see :mod:`gpuensembles.mcls.mcsa`).
    histories : int
        Random walks: in total (adjoint), per estimated entry (forward), or per iteration
        (mcsa). At least ``batches``.
    weight_cutoff : float
        A walk ends once ``|weight| < weight_cutoff * |start weight|``; in ``[0, 1)``. The
        bias this causes is of order ``weight_cutoff`` relative to ``x``.
    max_steps : int, optional
        A walk ends after this many transitions (fixed history length when
        ``weight_cutoff=0``; then the estimate is unbiased for ``sum_{k<=max_steps} H^k f``).
        At least one of ``weight_cutoff > 0`` and ``max_steps`` is required.
    estimator : {"collision", "expected"}
        ``expected`` replaces each visit's tally by its conditional expectation over the
        next state: ``x = f + H c`` for the adjoint collision tally ``c``, ``f_i + sum w (Hf)``
        for forward walks. Same mean, usually smaller variance.
    entries : array_like of int, optional
        Forward method only: the rows of ``x`` to estimate (default: all).
    batches : int
        Independent batches of histories (>= 2); ``x_stderr`` comes from their spread.
    seed : int, optional
        In ``[0, 2**32)``; drawn from the OS (and recorded) when omitted.
    chunks : int, optional
        Batches per dask task; makes the result lazy (as does an active dask client).
    store : str or path-like, optional
        Directory that keeps every finished chunk of batches (of each iteration, for
        mcsa), verified by SHA-256: the same call run again (after a crash or ``kill -9``)
        computes only what is missing and gives bit-identical results (docs page "Many
        GPUs, long runs, faults"). Without ``seed``, the store's seed is reused.
    force : bool
        Run even when ``rho(H_hat) >= 1`` (infinite variance) or ``rho(H) >= 1``.
    keep_batches : bool
        Keep each batch's estimate as ``x_batch`` (``batch``, ``row``); not for mcsa.
    tolerance : float
        For mcsa only: stop once ``||b - A x|| / ||b||`` is below this, in (0, 1).
    max_iterations : int
        For mcsa only: at most this many iterations (a RuntimeWarning says when they did not suffice).
    backend : {"auto", "cuda", "cpu"}
        Where the walks run; ``auto`` picks CUDA when a GPU is visible.
    progress : bool or "auto"
        Progress bar for eager runs (``auto``: when stderr is a terminal).

    Returns
    -------
    xarray.Dataset
        ``x`` and ``x_stderr`` over ``row`` (mcsa: ``x`` and ``residual`` over ``iteration``,
        no ``x_stderr``: its error is the residual's); ``relative_residual`` ``||b - A x|| / ||b||``
        (when every row is estimated), ``mean_walk_length`` (transitions per history),
        ``transitions``, ``histories``, ``rho_H`` and ``rho_H_hat`` (with bounds in their
        attributes), and the run's provenance.

    Raises
    ------
    ValueError
        For bad input, and when ``rho(H_hat) >= 1`` or ``rho(H) >= 1`` unless ``force``.
    """
    call = dict(A=A, b=b, method=method, histories=histories, weight_cutoff=weight_cutoff, max_steps=max_steps,
                estimator=estimator, entries=entries, batches=batches, seed=seed, chunks=chunks)
    engine.check_choice("method", method, METHODS)
    force, keep_batches = engine.check_flag("force", force), engine.check_flag("keep_batches", keep_batches)
    if method == "mcsa":
        call.update(tolerance=tolerance, max_iterations=max_iterations)
        tolerance, max_iterations = mcsa.check_options(tolerance, max_iterations, keep_batches)
    problem = _make_problem(A, b, method, histories, weight_cutoff, max_steps, estimator, entries, batches,
                            engine.run_seed(seed, store), force, backend)
    resolved = _backend.resolve(backend) if chunks is None and engine._active_client() is None else None
    # the CPU runs a piece's batches in parallel, so a piece (a progress-bar step) holds a batch per thread
    batches = problem.per_batch.size
    pieces = 1 if resolved == "cuda" else min(20, batches // numba.config.NUMBA_NUM_THREADS)
    what = f"batches={batches} of {problem.rows.size} rows"

    passes = itertools.count()  # one stored part per pass of the walks (mcsa runs one per iteration)

    def run(p: _Problem, show=progress):
        """Run the batches of problem ``p`` (eagerly, or as dask tasks)."""
        part = stored and stored.part(f"pass{next(passes)}")
        return engine.run_items(p.run, batches, p.width, chunks=chunks, pieces=pieces, progress=show, unit="batches",
                                what=what, store=part)

    described = {**call, "force": force, "keep_batches": keep_batches, "backend": backend}
    with engine.stored_run(store, "mc_solve", described, problem.seed) as stored:
        if resolved is None:  # lazy: the walks are the workers'
            ds = _solved(problem, method, tolerance, max_iterations, run, resolved, keep_batches)
        else:
            with estimate.timed(_work(problem, max_iterations if method == "mcsa" else 1), backend,
                                progress) as clock:
                ds = _solved(problem, method, tolerance, max_iterations, run, resolved, keep_batches)
                clock.ran(ds["x"].data, float(ds["transitions"].sum()))
    ran = (resolved, _backend.device_name(resolved)) if resolved else (backend, _backend.PER_WORKER_DEVICE)
    ds.attrs.update(io.provenance(
        model=f"Monte Carlo linear solver, {method} method", integrator=problem.description, seed=problem.seed,
        backend=ran[0], device=ran[1], dtype="float64", history=io.history_line("mc_solve", call)))
    ds.attrs.update(method=method, estimator=estimator, weight_cutoff=float(weight_cutoff),
                    max_steps=np.int64(-1 if max_steps is None else problem.max_steps), batches=np.int64(batches),
                    n=np.int64(problem.n), nnz=np.int64(problem.A.nnz))
    return ds


def _solved(problem, method, tolerance, max_iterations, run, resolved, keep_batches) -> xr.Dataset:
    """Run the walks of ``problem``: MCSA's iterations, or one solve (reduced on the GPU when it can be)."""
    if method == "mcsa":
        ds = mcsa.iterate(problem, tolerance, max_iterations, run)
        ds.update(_diagnostics(problem, ds.attrs.pop("transitions"), ds.attrs.pop("walks")))
        ds["row"].attrs.update(ROW_ATTRS)
        ds["relative_residual"].attrs.update(RESIDUAL_ATTRS)
        return ds
    if resolved == "cuda" and not keep_batches:  # reduce over the batches on the device
        return _dataset(problem, *problem.run_reduced())
    return _assemble(problem, run(problem), keep_batches)


#: Walks of the pilot run that measures the mean walk length for the estimate.
PILOT_WALKS = 2000
#: Default throughputs [transitions/s] per CPU thread and per GPU.
CPU_RATE, GPU_RATE = 3.5e7, 5e9


def _work(problem, iterations) -> estimate.Work:
    """Transitions of a run: its walks times the mean walk length of a pilot of `PILOT_WALKS` walks.

    The pilot repeats the run's first walks (same stream) and is discarded. MCSA's work is
    counted for ``iterations`` iterations (its most) at the first one's walk length.
    """
    walks = min(PILOT_WALKS, int(problem.per_batch.sum()))
    per = problem.rows.size if problem.method == "forward" else 1
    pilot = replace(problem, per_batch=np.array([walks]), first=np.zeros(1, np.int64),
                    size=np.array([walks * per], dtype=np.int64))
    length = float(pilot.transitions()[0]) / (walks * per)
    total = float(problem.size.sum())
    basis = f"{total:.3g} walks of {length:.3g} transitions (the mean of a pilot of {walks * per} walks)"
    if iterations > 1:
        basis += f", for each of up to {iterations} MCSA iterations"
    return estimate.Work(total * length * iterations, "transitions", f"mcls, {problem.walk} walks", basis,
                         CPU_RATE, GPU_RATE, "fewer histories, or a GPU")


@dataclass(frozen=True, eq=False)
class _Problem:
    """Everything a task needs to run batches (picklable)."""

    method: str
    estimator: str
    A: sp.csr_array
    b: np.ndarray
    H: sp.csr_array
    f: np.ndarray
    table: tuple
    sources: tuple
    score: np.ndarray
    rows: np.ndarray
    per_batch: np.ndarray  # histories (per entry for forward) in each batch
    first: np.ndarray  # history id of each batch's first walk
    size: np.ndarray  # walks in each batch
    cutoff: float
    max_steps: int
    seed: int
    stream: int
    backend: str
    rho_H: Radius
    rho_H_hat: Radius

    @property
    def walk(self) -> str:
        """The walks this method runs (MCSA's corrections are adjoint solves)."""
        return "forward" if self.method == "forward" else "adjoint"

    def with_rhs(self, f: np.ndarray, stream: int) -> _Problem:
        """The same walks for the right-hand side ``D f`` (adjoint), on RNG ``stream``."""
        return replace(self, f=f, sources=adjoint_sources(f), stream=stream)

    @property
    def n(self) -> int:
        return self.A.shape[0]

    @property
    def width(self) -> int:
        return self.rows.size + 1

    @property
    def description(self) -> str:
        walk = "|H^T|" if self.walk == "adjoint" else "|H|"
        return f"Jacobi splitting H = I - D^-1 A; transitions along {walk}; {_ESTIMATOR_TEXT[self.estimator]}"

    @property
    def runner(self):
        """The walks' runner on this problem's backend."""
        return walk_runner(KERNELS[self.walk], _backend.resolve(self.backend))

    def run(self, start: int, stop: int) -> np.ndarray:
        """Tallies of batches ``[start, stop)`` (estimator applied) and their transitions in the last column."""
        out = np.empty((stop - start, self.width), dtype=np.float64)
        self.runner(self.table, self.sources, self.per_batch[start:stop], self.score, self.first[start:stop],
                    self.size[start:stop], self.seed, self.stream, self.cutoff, self.max_steps, out)
        if self.estimator == "expected":
            counts = self.per_batch[start:stop, None].astype(np.float64)
            if self.walk == "adjoint":
                out[:, :-1] = counts * self.f + _times_transpose(self.H.indptr, self.H.indices, self.H.data,
                                                                 out[:, :-1])
            else:
                out[:, :-1] += counts * self.f[self.rows]
        return out

    def transitions(self) -> np.ndarray:
        """The transitions of each batch's walks (the tallies are not brought back)."""
        return self.runner.transitions(self.table, self.sources, self.per_batch, self.score, self.first, self.size,
                                       self.seed, self.stream, self.cutoff, self.max_steps, self.width)

    def run_reduced(self) -> tuple:
        """``(x, spread, transitions)`` of all batches, reduced on the GPU (see :func:`_assemble`)."""
        runner = walk_runner(KERNELS[self.walk], "cuda")
        counts = self.per_batch.astype(np.float64)
        matrix, base = None, np.zeros(self.rows.size)
        if self.estimator == "expected":
            if self.walk == "adjoint":
                matrix, base = (self.H.indptr, self.H.indices, self.H.data), self.f
            else:
                base = self.f[self.rows]
        return runner.reduced(self.table, self.sources, self.per_batch, self.score, self.first, self.size, self.seed,
                              self.stream, self.cutoff, self.max_steps, self.width, counts, base, matrix)


@cached
@numba.njit(parallel=True)
def _times_transpose(indptr, indices, data, T):
    """``(H @ T.T).T`` for CSR ``H`` and a C-ordered batch of row vectors ``T`` (parallel over rows of ``T``)."""
    out = np.empty_like(T)
    for b in numba.prange(T.shape[0]):
        for i in range(indptr.size - 1):
            acc = 0.0
            for e in range(indptr[i], indptr[i + 1]):
                acc += data[e] * T[b, indices[e]]
            out[b, i] = acc
    return out


def _make_problem(A, b, method, histories, weight_cutoff, max_steps, estimator, entries, batches, seed, force,
                  backend) -> _Problem:
    """Validate everything, split ``A`` and check convergence; no walk runs here."""
    engine.check_choice("method", method, METHODS)
    engine.check_choice("estimator", estimator, ESTIMATORS)
    engine.check_choice("backend", backend, _backend.BACKENDS)
    A, b, diagonal = check_system(A, b)
    n = A.shape[0]
    batches = engine.check_count("batches", batches, minimum=2, maximum=engine.MAX_STEPS)
    histories = engine.check_count("histories", histories, minimum=batches, maximum=engine.MAX_STEPS)
    # per batch: its counts and first history id, and its row of tallies (twice when estimated)
    engine.check_memory(batches * (24 + 16 * (n + 1)), f"the tallies of batches={batches} over n={n} rows")
    cutoff = _check_cutoff(weight_cutoff)
    steps = _UNLIMITED if max_steps is None else engine.check_count("max_steps", max_steps, maximum=engine.MAX_STEPS)
    if cutoff == 0.0 and max_steps is None:
        raise ValueError("with weight_cutoff=0 a walk could run forever: give max_steps (a fixed history length)")
    rows = _check_entries(entries, n, method)
    seed = engine.check_seed(seed)

    split = splitting(A, "forward" if method == "forward" else "adjoint")
    H, f = split.H, b / diagonal
    rho_H, rho_H_hat = split.rho_H, split.rho_H_hat
    _check_convergence(rho_H, rho_H_hat, force, steps, cutoff)

    per_batch = np.full(batches, histories // batches, dtype=np.int64)
    per_batch[: histories % batches] += 1
    if method != "forward":
        sources, score, size = adjoint_sources(f), np.zeros(1), per_batch
    else:
        sources = tuple(freeze(a) for a in (np.ones(1), rows.astype(np.int32), np.ones(rows.size)))
        score, size = (f if estimator == "collision" else H @ f), per_batch * rows.size
    first = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64)
    return _Problem(method, estimator, A, b, H, f, split.table, sources, score, rows, per_batch,
                    first, size.astype(np.int64), cutoff, steps, seed, _STREAM[method], backend, rho_H, rho_H_hat)


def adjoint_sources(f: np.ndarray) -> tuple:
    """Source table of adjoint walks: start at ``i`` with probability ``|f_i| / ||f||_1``.

    The start weight is ``sign(f_i) ||f||_1``. Rows with ``f_i = 0`` are left out. The arrays
    are frozen, as the walk tables are: the CPU walks' callees compile once, and the device
    copies the estimate's pilot makes serve the run.
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    return tuple(freeze(a) for a in _sources(f, np.abs(f).sum()))


@cached
@numba.njit
def _sources(f, norm):
    """``(cdf, state, weight)`` of the nonzero entries of ``f`` in one pass (``np.cumsum``'s order of additions)."""
    count = 0
    for value in f:
        count += value != 0.0
    cdf, state, weight = np.empty(count), np.empty(count, np.int32), np.empty(count)
    acc, k = 0.0, 0
    for i in range(f.size):
        if f[i] != 0.0:
            acc += abs(f[i]) / norm
            cdf[k], state[k], weight[k] = acc, i, norm if f[i] > 0.0 else -norm
            k += 1
    cdf[count - 1] = 1.0
    return cdf, state, weight


def _check_cutoff(weight_cutoff) -> float:
    cutoff = engine.check_real("weight_cutoff", weight_cutoff)
    if not (0.0 <= cutoff < 1.0):
        raise ValueError(f"weight_cutoff must be a number in [0, 1), got {weight_cutoff!r}")
    return cutoff


def _check_entries(entries, n, method) -> np.ndarray:
    if entries is None:
        return np.arange(n)
    if method != "forward":
        raise ValueError("entries selects rows for method='forward'; the adjoint method estimates every row at once")
    if isinstance(entries, (str, bytes)):
        raise TypeError(f"entries must be a non-empty 1-D array of row indices, got {entries!r}")
    try:
        rows = np.atleast_1d(np.asarray(entries))
    except ValueError:  # ragged
        raise ValueError(f"entries must be a non-empty 1-D array of row indices, got {entries!r}") from None
    if rows.ndim != 1 or rows.size == 0 or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"entries must be a non-empty 1-D array of row indices, got {entries!r}")
    if rows.min() < 0 or rows.max() >= n:
        raise ValueError(f"entries must lie in [0, {n}), got {rows[(rows < 0) | (rows >= n)][:10].tolist()}")
    if np.unique(rows).size != rows.size:
        raise ValueError("entries must not repeat a row")
    return rows.astype(np.int64)


def _check_convergence(rho_H: Radius, rho_H_hat: Radius, force: bool, max_steps: int, cutoff: float):
    """The convergence guard: refuse divergent or infinite-variance walks, warn about very long ones."""
    if force:
        return
    if rho_H_hat.estimate >= 1.0:
        raise ValueError(
            f"rho(H_hat) = {rho_H_hat.estimate:.6g} (bounds [{rho_H_hat.lower:.6g}, {rho_H_hat.upper:.6g}], "
            f"{rho_H_hat.method}) >= 1: the Monte Carlo estimator has infinite variance for this matrix; "
            "use a better-conditioned splitting or pass force=True")
    if rho_H.estimate >= 1.0:
        raise ValueError(f"rho(H) = {rho_H.estimate:.6g} >= 1: the Neumann series of the Jacobi splitting diverges; "
                         "pass force=True to run anyway (e.g. with a fixed max_steps)")
    if rho_H.estimate > WARN_RHO and cutoff > 0 and max_steps == _UNLIMITED:
        length = math.log(cutoff) / math.log(rho_H.estimate)
        warnings.warn(f"rho(H) = {rho_H.estimate:.6g} is close to 1: walks will take about {length:.3g} steps "
                      f"to reach the weight cutoff", RuntimeWarning, stacklevel=4)


def _assemble(problem: _Problem, raw, keep_batches: bool) -> xr.Dataset:
    """Batch tallies -> x, x_stderr and the run's diagnostics (lazy when ``raw`` is)."""
    counts = problem.per_batch.astype(np.float64)
    total = counts.sum()
    if engine.is_dask(raw):
        raw = raw.rechunk({0: -1})  # reduce over batches in one piece, in the order numpy does eagerly
    tallies, transitions = raw[:, :-1], raw[:, -1].sum()
    x = tallies.sum(axis=0) / total
    spread = ((tallies - counts[:, None] * x) ** 2).sum(axis=0)
    ds = _dataset(problem, x, spread, transitions)
    if keep_batches:
        ds["x_batch"] = (("batch", "row"), tallies / counts[:, None],
                         {"long_name": "estimate of x from one batch of histories"})
        ds = ds.assign_coords(batch=("batch", np.arange(counts.size), {"long_name": "batch of histories",
                                                                     "units": "1"}))
    return ds


def _dataset(problem: _Problem, x, spread, transitions) -> xr.Dataset:
    """``x``, its standard error from the batch ``spread``, and the diagnostics, as a Dataset."""
    total = problem.per_batch.sum()
    stderr = (spread * problem.per_batch.size / (problem.per_batch.size - 1)) ** 0.5 / total
    ds = xr.Dataset(
        {
            "x": ("row", x, {"long_name": "Monte Carlo estimate of the solution of A x = b", "units": "1"}),
            "x_stderr": ("row", stderr, {"long_name": "standard error of x from the spread of the batch estimates",
                                         "units": "1"}),
            **_diagnostics(problem, transitions, int(problem.size.sum())),
        },
        coords={"row": ("row", problem.rows, ROW_ATTRS)},
    )
    if problem.rows.size == problem.n:
        ds["relative_residual"] = ((), _residual(problem, x), RESIDUAL_ATTRS)
    return ds


ROW_ATTRS = {"long_name": "row of A (index of the solution entry)", "units": "1"}
RESIDUAL_ATTRS = {"long_name": "||b - A x||_2 / ||b||_2", "units": "1"}


def _diagnostics(problem: _Problem, transitions, walks: int) -> dict:
    """Walk counts and spectral radii, as Dataset variables."""
    return {
        "mean_walk_length": ((), transitions / walks, {"long_name": "mean transitions per history", "units": "1"}),
        "transitions": ((), _as_int(transitions), {"long_name": "random-walk transitions", "units": "1"}),
        "histories": ((), np.int64(walks), {"long_name": "random walks (histories) run", "units": "1"}),
        "rho_H": ((), problem.rho_H.estimate, _radius_attrs(problem.rho_H, "Jacobi iteration matrix H")),
        "rho_H_hat": ((), problem.rho_H_hat.estimate,
                      _radius_attrs(problem.rho_H_hat, "H_hat = H^2 / P (estimator variance; < 1 needed)")),
    }


def _as_int(value):
    return value.astype(np.int64) if engine.is_dask(value) else np.int64(value)


def _residual(problem: _Problem, x):
    """``||b - A x||_2 / ||b||_2`` (lazy when ``x`` is)."""

    def relative(values):
        return np.float64(np.linalg.norm(problem.b - problem.A @ values) / np.linalg.norm(problem.b))

    if engine.is_dask(x):
        import dask

        return engine.dask_array().from_delayed(dask.delayed(relative)(x), shape=(), dtype=np.float64)
    return relative(x)


def _radius_attrs(radius: Radius, what: str) -> dict:
    return {"long_name": f"spectral radius of {what}", "units": "1", "lower_bound": radius.lower,
            "upper_bound": radius.upper, "method": radius.method}
