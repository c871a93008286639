"""gpuensembles: very large stochastic ensembles on GPUs, returned as labeled xarray Datasets.

Importing this package never touches CUDA; the backend is chosen when a run starts.
"""

from . import analysis, mcls, xorsat  # noqa: F401  (importing analysis registers the Dataset accessors)
from .cluster import cluster
from .io import open_dataset, version
from .mcls import mc_solve
from .models import josephson
from .models.ising import ising
from .models.josephson import escape_times, switching_currents
from .models.kuramoto import kuramoto
from .models.langevin import langevin

__version__ = version()

__all__ = ["escape_times", "switching_currents", "josephson", "langevin", "kuramoto", "ising", "mc_solve", "mcls", "xorsat",
           "cluster", "open_dataset", "__version__"]
