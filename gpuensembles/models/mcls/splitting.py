"""Jacobi splitting, transition tables and the spectral radii that decide convergence.

``A x = b`` is rewritten as ``x = H x + f`` with ``H = I - D^-1 A``, ``f = D^-1 b``
(``D`` the diagonal of ``A``), whose Neumann series ``x = sum_k H^k f`` the walks
sample. From state ``i`` a walk moves to ``j`` with probability
``P_ij = |M_ij| / sum_j |M_ij|`` and multiplies its weight by ``M_ij / P_ij``, where
``M = H`` for the forward method and ``M = H^T`` for the adjoint method (an adjoint walk
runs along the columns of ``H``: it carries ``f`` from where it is large to where it is
felt). The estimator's variance is finite only if ``rho(M_hat) < 1`` with
``M_hat_ij = M_ij^2 / P_ij``; the series itself converges only if ``rho(H) < 1``.
"""

from __future__ import annotations  # sp.csr_array annotations must not import scipy.sparse

import hashlib
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from ...core.backend import cached, freeze
from ...core.lazy import lazy_module
from ...core.validation import real_array

sp = lazy_module("scipy.sparse")

#: Up to this size the spectral radii come from ARPACK (power iteration if it fails); above it from power iteration.
_ARPACK_MAX_N = 5_000
#: Work budget of the power iteration, in stored entries times iterations.
_POWER_WORK = 5e7


def check_system(A, b):
    """Validate ``A`` (square, real, sparse or dense, nonzero diagonal) and ``b``.

    Returns
    -------
    A : scipy.sparse.csr_array
        ``A`` as float64 CSR, duplicates summed.
    b : numpy.ndarray
        ``b`` as a float64 vector.
    diagonal : numpy.ndarray
        ``A``'s diagonal (no zeros).

    Raises
    ------
    ValueError
        Naming ``A`` or ``b`` and what is allowed.
    """
    if not sp.issparse(A):
        wanted = f"A must be a scipy.sparse matrix or a 2-D array, got {type(A).__name__} {A!r}"
        if isinstance(A, (str, bytes)) or A is None:
            raise TypeError(wanted)
        A = real_array("A", A)
        if A.ndim == 0:
            raise TypeError(wanted)
    elif A.dtype.kind not in "iuf":
        raise TypeError(f"A must hold real numbers, got a sparse matrix of dtype {A.dtype}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    A = sp.csr_array(A, dtype=np.float64)
    A.sum_duplicates()
    n = A.shape[0]
    if n == 0:
        raise ValueError("A must have at least one row")
    if not np.all(np.isfinite(A.data)):
        raise ValueError("A must be finite (no NaN or inf)")
    b = real_array("b", b)
    if b.shape not in ((n,), (n, 1)):
        raise ValueError(f"b must have shape ({n},) to match A {A.shape}, got {b.shape}")
    b = b.reshape(n)
    if not np.all(np.isfinite(b)):
        raise ValueError("b must be finite (no NaN or inf)")
    if not np.any(b):
        raise ValueError("b must have a nonzero entry (for b = 0 the solution is x = 0)")
    diagonal = A.diagonal()
    if not diagonal.all():
        zero = np.flatnonzero(diagonal == 0)
        raise ValueError(f"A must have a nonzero diagonal for the Jacobi splitting; rows {zero[:10].tolist()} "
                         f"{'(and more) ' if zero.size > 10 else ''}have A_ii = 0")
    return A, b, diagonal


@dataclass(frozen=True)
class Splitting:
    """What the walks need of ``A`` alone (not of ``b``): built once per matrix and method.

    Attributes
    ----------
    H : scipy.sparse.csr_array
        The Jacobi iteration matrix ``I - D^-1 A``.
    M : scipy.sparse.csr_array
        ``H`` (forward walks) or ``H^T`` (adjoint walks).
    table : tuple
        ``transition_table(M).arrays``.
    rho_H, rho_H_hat : Radius
        Spectral radii of ``H`` and of the variance matrix of ``M``.
    """

    H: sp.csr_array
    M: sp.csr_array
    table: tuple
    rho_H: Radius
    rho_H_hat: Radius


_SPLITTINGS: OrderedDict = OrderedDict()
_KEEP_SPLITTINGS = 2  # a few matrices of 1e6 rows: kept while a script repeats its solves


def splitting(A, walk: str) -> Splitting:
    """The :class:`Splitting` of a checked CSR ``A`` for ``walk`` ("forward" or "adjoint").

    The last two are kept, keyed by a digest of ``A``'s CSR arrays (:func:`matrix_digest`):
    repeated solves with one matrix (new right-hand sides, more histories, MCSA iterations)
    skip the splitting and the spectral radii, which for ``n = 1e6`` cost more than the walks.
    """
    key = (matrix_digest(A), walk)
    if key in _SPLITTINGS:
        _SPLITTINGS.move_to_end(key)
        return _SPLITTINGS[key]
    H, _ = jacobi(A, np.ones(A.shape[0]))
    M = H if walk == "forward" else sp.csr_array(H.T)
    found = Splitting(H, M, transition_table(M).arrays, spectral_radius(H),
                      spectral_radius(variance_matrix(M), nonnegative=True))
    _SPLITTINGS[key] = found
    while len(_SPLITTINGS) > _KEEP_SPLITTINGS:
        _SPLITTINGS.popitem(last=False)
    return found


_DIGEST_PIECE = 1 << 20  # bytes hashed by one task of matrix_digest
_DIGEST_POOL: dict = {}  # process id -> its thread pool (a forked child starts its own)
_DIGEST_POOL_LOCK = threading.Lock()


def _sha256(piece) -> bytes:
    return hashlib.sha256(piece).digest()


def _digest_pool(workers: int) -> ThreadPoolExecutor:
    """A thread pool kept for the process: starting 16 threads at every solve cost ~9 ms of a
    0.2 s call on an H200 host. A forked child does not inherit the parent's threads, so
    each process id gets a pool of its own."""
    pid = os.getpid()
    with _DIGEST_POOL_LOCK:  # two threads' first solves must not start two pools
        pool = _DIGEST_POOL.get(pid)
        if pool is None:
            _DIGEST_POOL.clear()
            pool = _DIGEST_POOL[pid] = ThreadPoolExecutor(workers, thread_name_prefix="gpuensembles-digest")
    return pool


def matrix_digest(A) -> str:
    """SHA-256 over the lengths and the SHA-256 digests of the 1 MiB pieces of ``A``'s shape and CSR arrays (hex).

    The pieces are hashed on a thread pool (``hashlib`` releases the GIL), so the key of a
    matrix of 1e6 rows costs a few milliseconds on a many-core host instead of the tens that
    one serial digest of its ~50 MB takes. The key is only compared within one process.
    """
    buffers = [memoryview(np.ascontiguousarray(a).view(np.uint8)) for a in
               (np.asarray(A.shape, dtype=np.int64), A.indptr, A.indices, A.data)]
    pieces = [b[i:i + _DIGEST_PIECE] for b in buffers for i in range(0, len(b), _DIGEST_PIECE)]
    workers = min(16, os.cpu_count() or 1)
    if workers > 1 and len(pieces) > 1:
        digests = list(_digest_pool(workers).map(_sha256, pieces))
    else:
        digests = [_sha256(p) for p in pieces]
    top = hashlib.sha256(np.array([len(b) for b in buffers], dtype=np.int64).tobytes())
    for d in digests:
        top.update(d)
    return top.hexdigest()


def jacobi(A, b):
    """``H = I - D^-1 A`` (CSR, explicit zeros removed) and ``f = D^-1 b`` of a checked system."""
    d = A.diagonal()
    H = (sp.identity(A.shape[0], format="csr") - sp.diags_array(1.0 / d) @ A).tocsr()
    H.setdiag(0.0)  # exactly zero, not a rounding residue of 1 - a_ii / a_ii
    H.eliminate_zeros()
    return sp.csr_array(H), b / d


@dataclass(frozen=True)
class TransitionTable:
    """Rows of ``M`` as a Markov chain: per-row CDFs of ``|M_ij|`` and weight factors ``M_ij / P_ij``."""

    indptr: np.ndarray  # int64
    indices: np.ndarray  # int32
    cdf: np.ndarray  # float64, last entry of every nonempty row exactly 1
    factor: np.ndarray  # float64

    @property
    def arrays(self) -> tuple:
        """``(indptr, indices, cdf, factor)``, in the order the walk kernels take them."""
        return self.indptr, self.indices, self.cdf, self.factor


def transition_table(M) -> TransitionTable:
    """Transition probabilities ``P_ij = |M_ij| / sum_j |M_ij|`` of the rows of ``M`` (empty rows absorb)."""
    M = sp.csr_array(M)
    M.sort_indices()
    cdf, row_sum = _row_cdfs(M.indptr, np.abs(M.data))
    factor = np.sign(M.data) * np.repeat(row_sum, np.diff(M.indptr))
    table = TransitionTable(M.indptr.astype(np.int64), M.indices.astype(np.int32), cdf, factor)
    for array in table.arrays:  # the kept splittings reuse their device copies
        freeze(array)
    return table


@cached
@numba.njit
def _row_cdfs(indptr, absolute):
    """Per-row cumulative probabilities (each row summed on its own, its last entry exactly 1) and row sums."""
    cdf = np.empty_like(absolute)
    row_sum = np.zeros(indptr.size - 1)
    for i in range(indptr.size - 1):
        for e in range(indptr[i], indptr[i + 1]):
            row_sum[i] += absolute[e]
        running = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            running += absolute[e]
            cdf[e] = running / row_sum[i]
        if indptr[i + 1] > indptr[i]:
            cdf[indptr[i + 1] - 1] = 1.0
    return cdf, row_sum


def variance_matrix(M):
    """``M_hat_ij = M_ij^2 / P_ij = |M_ij| * sum_j |M_ij|`` (nonnegative)."""
    M = sp.csr_array(M)
    row_sum = np.asarray(abs(M).sum(axis=1)).ravel()
    return sp.csr_array(sp.diags_array(row_sum) @ abs(M))


@dataclass(frozen=True)
class Radius:
    """A spectral-radius estimate; for nonnegative matrices with certified bounds."""

    estimate: float
    lower: float
    upper: float
    method: str


def spectral_radius(M, nonnegative=False) -> Radius:
    """Estimate ``rho(M)`` with bounds.

    ARPACK (largest magnitude) for ``n <= 5000``, else (or if ARPACK fails) a power iteration with a work
    budget. The Collatz-Wielandt quotients of a positive vector ``v`` bound the Perron
    root of ``|M|`` rigorously, ``min_i (|M|v)_i / v_i <= rho(|M|) <= max_i (|M|v)_i / v_i``;
    with ``v`` the magnitude of the estimated eigenvector the bounds are tight. For a
    nonnegative ``M`` they bound ``rho(M)`` itself; otherwise the lower bound is 0 and the
    upper one holds because ``rho(M) <= rho(|M|)``.
    """
    M = sp.csr_array(M, dtype=np.float64)
    n = M.shape[0]
    if M.nnz == 0:
        return Radius(0.0, 0.0, 0.0, "exact (no entries)")
    vector = None
    import scipy.sparse.linalg as spla  # on first use: importing the package does not import it

    if n <= 2:
        estimate, method = float(np.max(np.abs(np.linalg.eigvals(M.toarray())))), "dense eigenvalues"
    else:
        try:
            if n > _ARPACK_MAX_N:
                raise spla.ArpackNoConvergence("too large for ARPACK", [], [])
            # a fixed start vector: ARPACK's random one made the last digits differ run to run
            start = np.random.default_rng(0).standard_normal(n)
            values, vectors = spla.eigs(M, k=1, which="LM", tol=1e-8, maxiter=100, v0=start)
            estimate, vector, method = float(np.abs(values[0])), np.abs(vectors[:, 0].real), "ARPACK"
        except spla.ArpackNoConvergence:
            (estimate, vector), method = _power_iteration(M), "power iteration"
    lower, upper = _collatz_wielandt(M, vector)
    if nonnegative:
        return Radius(min(max(estimate, lower), upper), lower, upper, method)
    return Radius(estimate, 0.0, max(upper, estimate), method)


def _power_iteration(M):
    """``(estimate, vector)`` from two-step norm ratios (robust to a ``-rho`` eigenvalue)."""
    n = M.shape[0]
    iterations = int(np.clip(_POWER_WORK / max(M.nnz, 1), 20, 5000))
    v = np.ones(n) / np.sqrt(n)
    previous = v
    estimate = 0.0
    for _ in range(iterations // 2):
        w = M @ (M @ v)
        norm = np.linalg.norm(w)
        if norm == 0.0:
            return 0.0, np.ones(n)
        estimate = np.sqrt(norm)
        previous, v = v, w / norm
    positive = np.abs(v) + np.abs(previous)  # the +rho and -rho components, both kept positive
    return float(estimate), positive


def _collatz_wielandt(M, vector):
    """Bounds on the Perron root of a nonnegative ``M`` from a (made strictly) positive vector."""
    M = abs(M)
    if vector is None or not np.all(np.isfinite(vector)):
        vector = np.ones(M.shape[0])
    v = np.abs(vector) + 1e-12 * np.max(np.abs(vector)) + 1e-300
    ratio = (M @ v) / v
    return float(ratio.min()), float(ratio.max())
