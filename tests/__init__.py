"""Shared test helpers (imported as ``from . import ...``).

Markers: ``gpu`` tests need a real CUDA GPU and are deselected by default (run them on
the GPU machine with ``pytest -m gpu``); ``slow`` marks the longer statistical checks,
which still run in CI.
"""

import dask
import numpy as np
import pytest

from gpuensembles import _backend

requires_gpu = pytest.mark.skipif(
    not (_backend.cuda_available() and not _backend.simulating_cuda()), reason="needs a CUDA GPU"
)


class _CountingScheduler:
    """A dask scheduler that fails when more than ``max_computes`` computations happen."""

    def __init__(self, max_computes=0):
        self.total_computes = 0
        self.max_computes = max_computes

    def __call__(self, dsk, keys, **kwargs):
        self.total_computes += 1
        if self.total_computes > self.max_computes:
            raise RuntimeError(f"too many dask computations: {self.total_computes} > {self.max_computes}")
        return dask.get(dsk, keys, **kwargs)


def raise_if_dask_computes(max_computes=0):
    """Context manager: fail if the code inside computes a dask graph."""
    return dask.config.set(scheduler=_CountingScheduler(max_computes))


def z_score(a, se_a, b, se_b=0.0):
    """Difference of two estimates in units of their combined standard error."""
    return (a - b) / (se_a**2 + se_b**2) ** 0.5


#: The Langevin case the CUDA simulator and the CPU backend must agree on.
LANGEVIN = dict(a=[0.0, 2.0], f=0.3, kT=0.5, g=2.0, h=0.01, steps=48, sample_every=12, histogram=(0, 1),
                realizations=5, seed=8, start="uniform", dtype="float64", progress=False)

#: Kuramoto cases (both coupling paths) for the simulator; 18 oscillators leave a partial group of four.
KURAMOTO = {
    path: dict(N=18, h=0.02, steps=12, sample_every=4, kT=0.2, bins=8, realizations=2, seed=3, progress=False,
               **({"K": 2.0} if path == "mean-field" else {"coupling": np.full((18, 18), 2.0 / 18)}))
    for path in ("mean-field", "matrix")
}

#: Ising cases for the simulator: the resident multi-spin kernel, the launched one (with
#: ``RESIDENT_MAX_L`` lowered to 0), and int8; L = 6 leaves a partial warp of words.
ISING = {
    path: dict(L=[4, 6], beta=[0.3, 0.5], sweeps=4, thermalization=1, measure_every=2, bins=2, realizations=3,
               series=True, snapshot=True, seed=7, kernel="int8" if path == "int8" else "multispin", progress=False)
    for path in ("resident", "launched", "int8")
}

#: The 3-XORSAT case for the simulator: two values of p, a partial word of clones, runs
#: that word 0 solves early (word 1 must then stop early) and runs censored at the timeout.
XORSAT = dict(N=24, instance_seed=4, p=[0.05, 0.5], clones=40, runs=2, timeout=12, seed=1, progress=False)
