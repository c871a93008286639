"""Very large stochastic ensembles on GPUs, returned as labeled xarray Datasets.

Importing this package never touches CUDA; the backend is chosen when a run starts.
Importing it also imports every model family, which registers its run functions
(:mod:`gpuensembles.core.registry`) and its ``Dataset`` accessors.
"""

import sys as _sys

from .core.cluster import cluster
from .core.io import open_dataset, version
from .core.lazy import defer_duck_array_imports
from .models import josephson, mcls, xorsat
from .models.ising import ising
from .models.josephson import escape_rates, escape_times, retrapping_currents, switching_currents
from .models.kuramoto import kuramoto
from .models.langevin import langevin
from .models.mcls import mc_solve

__version__ = version()

# xarray would import dask.array (~1 s) at the first DataArray of a process, to check that its
# data is no dask array, and CuPy where installed (0.13 s); it now does so only once the module
# has been imported for a reason.
defer_duck_array_imports()

# The family namespaces reached as ge.josephson, ge.mcls and ge.xorsat are importable by
# those names too (``from gpuensembles.xorsat import solve``), as they were before the
# families moved under gpuensembles.models.
for _name, _module in (("josephson", josephson), ("mcls", mcls), ("xorsat", xorsat)):
    _sys.modules.setdefault(f"{__name__}.{_name}", _module)

__all__ = ["escape_times", "switching_currents", "escape_rates", "retrapping_currents", "josephson", "langevin",
           "kuramoto", "ising", "mc_solve", "mcls", "xorsat", "cluster", "open_dataset", "__version__"]
