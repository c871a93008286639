"""Shared test helpers (imported as ``from . import ...`` or ``from .. import ...``).

The tests mirror the package: ``tests/core/`` for :mod:`gpuensembles.core` and
``tests/<family>/`` for each model family; what spans them (the registry, the CLI, the
public API, the import contract, the CUDA simulator, docs and benchmarks) sits here.
Fixtures live in ``conftest.py``.

Markers: ``gpu`` tests need a real CUDA GPU and are deselected by default (run them on
the GPU machine with ``pytest -m gpu``); ``slow`` marks the longer statistical checks,
which still run in CI.
"""

import dask
import pytest

from gpuensembles.core import backend as _backend

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
