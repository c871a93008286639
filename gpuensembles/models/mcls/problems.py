"""Test matrices of the Monte Carlo linear-solver literature (the Hamilton & Lupo Pasini report).

Both are symmetric M-matrices with a constant diagonal, so their Jacobi iteration matrix
``H`` is nonnegative and symmetric and its spectral radius is known exactly.
"""

import math

import numpy as np

from ...core.lazy import lazy_module
from ...core.validation import check_count, check_memory, check_real

sp = lazy_module("scipy.sparse")


def laplacian_2d(m: int = 30):
    """Five-point Laplacian on an ``m x m`` grid with Dirichlet boundaries (``n = m**2``).

    ``4`` on the diagonal, ``-1`` for each grid neighbour; the seed's case is ``m = 30``
    (``n = 900``). ``rho(H) = cos(pi / (m + 1))`` (0.994869 for ``m = 30``).

    Returns
    -------
    scipy.sparse.csr_array, shape (m**2, m**2)
        The matrix ``A``.
    """
    m = check_count("m", m)
    # five nonzeros per row (float64 values, int32 indices), about three times over while building
    check_memory(3 * 12 * 5 * m * m, f"the {m**2} x {m**2} matrix of m={m}")
    line = sp.diags_array([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1])
    eye = sp.identity(m)
    return sp.csr_array(sp.kron(eye, line) + sp.kron(line, eye))


def shifted_laplacian_1d(n: int = 10**6, shift: float = 0.5):
    """Tridiagonal ``-1, 2 + shift, -1`` of size ``n`` (Dirichlet ends).

    With the seed's ``shift = 0.5``, ``rho(H) = 2 cos(pi / (n + 1)) / 2.5 -> 0.8`` and
    ``rho(H_hat) -> 0.64``.

    Returns
    -------
    scipy.sparse.csr_array, shape (n, n)
        The matrix ``A``.
    """
    n = check_count("n", n)
    check_memory(3 * 12 * 3 * n, f"the {n} x {n} matrix of n={n}")
    shift = check_real("shift", shift)
    if not shift > 0:
        raise ValueError(f"shift must be a finite number > 0 (keeps rho(H) < 1), got {shift!r}")
    return sp.csr_array(sp.diags_array([-np.ones(n - 1), (2.0 + shift) * np.ones(n), -np.ones(n - 1)],
                                       offsets=[-1, 0, 1]))


def jacobi_radius_laplacian_2d(m: int) -> float:
    """Exact ``rho(H)`` of :func:`laplacian_2d`: ``cos(pi / (m + 1))``."""
    return math.cos(math.pi / (m + 1))


def jacobi_radius_shifted_laplacian_1d(n: int, shift: float = 0.5) -> float:
    """Exact ``rho(H)`` of :func:`shifted_laplacian_1d`: ``2 cos(pi / (n + 1)) / (2 + shift)``."""
    return 2.0 * math.cos(math.pi / (n + 1)) / (2.0 + shift)
