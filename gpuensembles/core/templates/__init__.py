"""Generic kernel templates, one module per kind of ensemble.

Each wraps a model's scalar ``numba.jit`` functions once as a ``@cuda.jit`` kernel and
once as a ``@njit(parallel=True)`` loop: :mod:`.first_passage` (persistent-thread first
passage), :mod:`.trajectories` (sampled trajectories and histograms), :mod:`.walks`
(random walks on a transition table with tallies) and :mod:`.coupled` (coupled
oscillators, mean field or matrix). A family writes its own template only where none fits.
"""
