"""Monte Carlo linear solvers: forward and adjoint random walks on the Jacobi splitting (seed 003).

``mc_solve`` runs them; :mod:`~gpuensembles.mcls.problems` builds the seed's test
matrices; :mod:`~gpuensembles.mcls.splitting` holds the splitting, the transition tables
and the spectral radii of the convergence guard.
"""

from . import problems
from .solve import ESTIMATORS, METHODS, mc_solve
from .splitting import spectral_radius

__all__ = ["mc_solve", "problems", "spectral_radius", "METHODS", "ESTIMATORS"]
