"""Monte Carlo synthetic acceleration (MCSA): Richardson steps corrected by adjoint walks.

For ``x = H x + f`` (the Jacobi splitting of ``A x = b``) each iteration does::

    x <- x + r                        r = f - (I - H) x       (a Richardson step)
    x <- x + MC[(I - H)^-1 r]         adjoint walks with sources r (the correction)

The walks only estimate the *correction*, whose size falls with the residual, so the
iteration converges to the exact solution (to ``tolerance``) with a fixed, modest number
of histories per step; their statistical error sets how fast, not how far. Iteration
``i`` draws its walks on RNG stream ``2 + i``, so a seed reproduces the whole sequence.

Reference: T. M. Evans, S. W. Mosher, S. R. Slattery, S. P. Hamilton, "A Monte Carlo
synthetic-acceleration method for solving the thermal radiation diffusion equation",
J. Comput. Phys. 258 (2014) 338-358.
"""

import math
import warnings

import numpy as np
import xarray as xr

from ...core import engine

#: The iteration is stopped as diverging once its residual exceeds its best by this factor.
_DIVERGED = 100.0


def check_options(tolerance, max_iterations, keep_batches):
    """Validate the MCSA-only options; return ``(tolerance, max_iterations)``."""
    tolerance = engine.check_real("tolerance", tolerance)
    if not (0.0 < tolerance < 1.0):
        raise ValueError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    if keep_batches:
        raise ValueError("keep_batches is not available for method='mcsa' (its batches change every iteration)")
    return tolerance, engine.check_count("max_iterations", max_iterations)


def iterate(problem, tolerance: float, max_iterations: int, run) -> xr.Dataset:
    """Run MCSA on ``problem`` (a checked adjoint problem); ``run(problem, show)`` returns batch tallies.

    Returns ``x``, ``relative_residual`` and ``residual`` per ``iteration`` (index 0: the
    start, x = 0), with the walk totals in ``attrs["transitions"]`` and ``attrs["walks"]``.
    """
    A, b, H, f = problem.A, problem.b, problem.H, problem.f
    norm_b = np.linalg.norm(b)
    x = np.zeros_like(f)
    history = [1.0]
    transitions, walks = 0, 0
    for i in range(max_iterations):
        x = x + (f - x + H @ x)  # Richardson
        r = f - x + H @ x
        if not np.any(r):
            history.append(float(np.linalg.norm(b - A @ x) / norm_b))
            break
        tallies = np.asarray(run(problem.with_rhs(r, stream=2 + i), False))
        x = x + tallies[:, :-1].sum(axis=0) / problem.per_batch.sum()
        transitions += int(tallies[:, -1].sum())
        walks += int(problem.size.sum())
        history.append(float(np.linalg.norm(b - A @ x) / norm_b))
        if history[-1] < tolerance or not math.isfinite(history[-1]) or history[-1] > _DIVERGED * min(history):
            break
    converged = history[-1] < tolerance
    if not converged:
        diverged = history[-1] > _DIVERGED * min(history)
        why = ("it diverges: the corrections' statistical error exceeds what the iteration damps (about "
               "1 - rho(H) relative); raise histories" if diverged else "raise max_iterations or histories")
        warnings.warn(f"MCSA stopped after {len(history) - 1} iterations at relative residual {history[-1]:.3g} "
                      f"(tolerance {tolerance:g}); {why}", RuntimeWarning, stacklevel=3)
    iteration = np.arange(len(history))
    return xr.Dataset(
        {
            "x": ("row", x, {"long_name": "MCSA solution of A x = b"}),
            "relative_residual": ((), history[-1]),
            "residual": ("iteration", np.array(history), {"long_name": "||b - A x||_2 / ||b||_2 after each iteration",
                                                          "units": "1"}),
        },
        coords={"row": np.arange(x.size), "iteration": ("iteration", iteration, {"long_name": "MCSA iteration",
                                                                                 "units": "1"})},
        attrs={"transitions": transitions, "walks": walks, "converged": int(converged), "tolerance": tolerance},
    )
