"""Monte Carlo linear solvers: forward and adjoint random walks on the Jacobi splitting (Hamilton & Lupo Pasini).

``mc_solve`` runs them; :mod:`.problems` builds the seed's test
matrices; :mod:`.splitting` holds the splitting, the transition tables
and the spectral radii of the convergence guard.
"""

import numpy as np

from ...core.registry import Command, RunFunction, register
from . import cli, problems
from .run import ESTIMATORS, METHODS, mc_solve
from .splitting import spectral_radius

__all__ = ["mc_solve", "problems", "spectral_radius", "METHODS", "ESTIMATORS"]


register(RunFunction(
    name="mc_solve", function=mc_solve, family="mcls",
    command=Command("mc-solve", "solve A x = b with forward or adjoint Monte Carlo random walks",
                    cli.add_arguments, cli.run, cli.summary, cli.plot),
    example=lambda: dict(A=problems.laplacian_2d(4), b=np.ones(16), histories=4000, batches=4, seed=2),
    example_chunks=2,
))
