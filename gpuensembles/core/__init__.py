"""The core: everything a run needs that knows no model.

:mod:`.backend` (the only ``numba.cuda`` import), :mod:`.rng` (Philox4x32-10),
:mod:`.engine` (parameters -> plan -> chunks -> dask tasks -> arrays), :mod:`.templates`
(generic CPU/CUDA kernel templates), :mod:`.store` (resumable runs), :mod:`.io`
(provenance, NetCDF), :mod:`.cluster` (dask-cuda), :mod:`.registry` (the run functions)
and :mod:`.commands` (helpers of the command line). Nothing here imports a model family.
"""
