"""Scalar pieces of a Monte Carlo linear-solver walk, shared by the CPU and CUDA targets."""

import numpy as np

from ...core.rng import jit
from ...core.templates.walks import WalkKernel


@jit
def first_at_least(cdf, lo, hi, u):
    """First index ``e`` in ``[lo, hi)`` with ``cdf[e] >= u`` (binary search; ``cdf[hi - 1] == 1 > u``)."""
    hi -= 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] < u:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit
def transition(indptr, indices, cdf, factor, i, u):
    """Next state and weight factor from state ``i`` for a uniform ``u``; ``(-1, 0)`` on an empty row."""
    lo = indptr[i]
    hi = indptr[i + 1]
    if lo == hi:
        return -1, 0.0
    e = first_at_least(cdf, lo, hi, u)
    return indices[e], factor[e]


@jit
def source(src_cdf, u):
    """Index of the source row drawn by ``u`` (inverse CDF)."""
    return first_at_least(src_cdf, np.int64(0), src_cdf.shape[0], u)


#: The walk of each method: adjoint walks tally every visit, forward walks tally once.
KERNELS = {
    "adjoint": WalkKernel(transition, source, per_visit=True),
    "forward": WalkKernel(transition, source, per_visit=False),
}
