"""Model-agnostic ensemble statistics: means with standard errors, moments, the jackknife.

Every function works on dask-backed data without computing it.
"""

import numpy as np
import xarray as xr

from ..core.io import REALIZATION


def mean_with_error(values: xr.DataArray, dim: str = REALIZATION) -> xr.Dataset:
    """Mean over ``dim`` with its standard error ``std(ddof=1) / sqrt(n)``.

    Realizations are independent, so the standard error needs no correction.
    """
    n = values.sizes[dim]
    if n < 2:
        raise ValueError(f"a standard error needs at least 2 values along {dim!r}, got {n}")
    return xr.Dataset({"mean": values.mean(dim), "stderr": values.std(dim, ddof=1) / np.sqrt(n)})


def moments(values: xr.DataArray, dim: str = REALIZATION) -> xr.Dataset:
    """Mean and variance over ``dim`` with standard errors.

    The variance's error is ``sqrt((m4 - s^4 (n - 3) / (n - 1)) / n)`` with ``m4`` the
    fourth central moment (exact for any distribution to leading order in 1/n).
    """
    n = values.sizes[dim]
    if n < 4:
        raise ValueError(f"variance errors need at least 4 values along {dim!r}, got {n}")
    mean = values.mean(dim)
    var = values.var(dim, ddof=1)
    m4 = ((values - mean) ** 4).mean(dim)
    return xr.Dataset({
        "mean": mean,
        "mean_stderr": np.sqrt(var / n),
        "variance": var,
        "variance_stderr": np.sqrt(np.maximum(m4 - var**2 * (n - 3) / (n - 1), 0.0) / n),
    })


def jackknife(f, *blocks: xr.DataArray, dims: tuple, weights=None) -> xr.Dataset:
    """Estimate ``f(<x_1>, <x_2>, ...)`` and its jackknife standard error over blocks.

    Each block (one element of the ``dims`` grid, e.g. a ``(realization, bin)`` pair:
    ``n = R * B`` blocks) holds the means of the observables over its measurements. The
    estimate is ``f`` of the means over *all*
    blocks (not the bias-corrected jackknife estimate). The error is
    ``sqrt((n - 1) / n * sum_i (f_(i) - mean_i f_(i))^2)`` with ``f_(i)`` evaluated on the
    means of all blocks but block ``i``. For a plain mean with equal weights this is exactly
    ``std(ddof=1) / sqrt(n)``. It is correct for correlated Monte Carlo data as long as the
    blocks are much longer than the integrated autocorrelation time, so that the blocks are
    independent (consecutive bins of one chain are nearly so then; realizations are
    independent chains).

    Parameters
    ----------
    f : callable
        ``f(*means) -> DataArray``, built from xarray/numpy operations (applied to the
        full means and to the leave-one-out means, which carry ``dims``).
    *blocks : DataArray
        Block means of each observable, with the dimensions ``dims``.
    dims : tuple of str
        Block dimensions, e.g. ``("realization", "bin")``.
    weights : DataArray, optional
        Measurements per block (broadcast against ``blocks``). The means over blocks are
        weighted with it, so that they equal the means over all measurements. Default:
        equal weights.

    Returns
    -------
    Dataset
        ``mean`` (the estimate) and ``stderr``, without ``dims``.
    """
    missing = [d for d in dims if d not in blocks[0].dims]
    if missing:
        raise ValueError(f"the block means have no dimension(s) {missing}; got dims {blocks[0].dims}")
    n = int(np.prod([blocks[0].sizes[d] for d in dims]))
    if n < 2:
        raise ValueError(f"a jackknife error needs at least 2 blocks over {dims}, got {n}")
    if weights is None:
        weights = xr.ones_like(blocks[0].isel({d: 0 for d in blocks[0].dims if d not in dims}, drop=True))
    weights = xr.broadcast(weights.astype(float), blocks[0])[0]
    total_weight = weights.sum(dims)
    totals = [(weights * x).sum(dims) for x in blocks]
    full = [t / total_weight for t in totals]
    left_out = [(t - weights * x) / (total_weight - weights) for t, x in zip(totals, blocks)]
    estimate = f(*full)
    pseudo = f(*left_out)
    spread = pseudo - pseudo.mean(dims)
    stderr = np.sqrt((n - 1) / n * (spread**2).sum(dims))
    return xr.Dataset({"mean": estimate, "stderr": stderr})
