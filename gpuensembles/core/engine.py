"""Plan -> chunks -> tasks -> arrays: the machinery every run function shares.

A run function validates its physical parameters, then hands the engine

* the parameters (scalars, 1-D arrays or 1-D DataArrays),
* a *kernel spec* naming a module-level kernel factory and its arguments, so that a
  task can rebuild (and compile) the kernel inside whichever process runs it,

and gets back int64 step counts (numpy, or dask when lazy) of shape
``(*sweep dims, realization)``; :func:`label` puts the coordinates on them.

Randomness is keyed by ``(seed, stream)`` where the stream of a parameter point is its
flat index in the full sweep grid, and counted by realization id. A block's numbers
therefore depend only on which points and realizations it covers, never on chunking or
worker count (the CPU backend and the CUDA simulator agree bit for bit; a real GPU's
hardware sin/log approximations differ in the last bits, so it agrees statistically).
"""

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from . import backend as _backend
from .io import REALIZATION, REALIZATION_ATTRS
from .progress import bar as _progress_bar
from .progress import shown, starting
from .runs import (  # noqa: F401
    STORE_CHUNKS,
    Chains,
    Output,
    Units,
    _active_client,
    _memory_limit,
    _split,
    run_items,
    run_realizations,
    run_together,
    thread_count,
    worker_count,
)
from .templates.first_passage import first_passage_runner
from .validation import (  # noqa: F401  (the run functions' checks, reached as engine.check_count etc.)
    MAX_STEPS,
    as_parameter,
    check_choice,
    check_count,
    check_flag,
    check_memory,
    check_range,
    check_real,
    check_representable,
    check_seed,
    format_bytes,
    gathering,
    real_array,
)

_MAX_PROGRESS_PIECES = 20
_MIN_CPU_ITEMS_PER_PIECE = 4096


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class KernelSpec:
    """How a task obtains its runner: ``factory(*args)`` must return a FirstPassageKernel."""

    factory: Callable
    args: tuple


@dataclass(frozen=True)
class Plan:
    """Everything needed to run an ensemble, independent of how it is chunked."""

    inputs: dict  # validated parameters as given (0-d for scalars), in kernel row order
    params: tuple  # the same, broadcast against each other
    realizations: int
    seed: int
    max_steps: int
    kernel: KernelSpec
    backend: str

    @property
    def sweep_dims(self) -> tuple:
        """Dimensions of the swept parameters, in output order."""
        return self.params[0].dims if self.params else ()

    @property
    def shape(self) -> tuple:
        """Shape of the output: the sweep grid, then ``realizations``."""
        return self.params[0].shape + (self.realizations,)

    @property
    def dims(self) -> tuple:
        """Dimensions of the output: the sweep dimensions, then ``realization``."""
        return self.sweep_dims + (REALIZATION,)

    def table(self) -> np.ndarray:
        """Parameter rows, shape ``(n_points, n_params)``, C order over the sweep dims."""
        return np.stack([p.values.ravel() for p in self.params], axis=-1)


def make_plan(params: dict, *, realizations, seed, max_steps, kernel: KernelSpec, backend: str, store=None) -> Plan:
    """Broadcast validated parameters against each other and record the run settings.

    Without a ``seed``, the seed of the run kept in ``store`` is reused if there is one
    (so the same command resumes), else a fresh one is drawn.
    """
    check_choice("backend", backend, _backend.BACKENDS)
    realizations = check_count("realizations", realizations)
    max_steps = check_count("max_steps", max_steps, maximum=MAX_STEPS)
    seed = run_seed(seed, store)
    for name, p in params.items():
        if REALIZATION in p.dims:
            raise ValueError(f"{name} must not use the dimension name {REALIZATION!r} (that of the ensemble)")
    try:
        arrays = xr.broadcast(*xr.align(*params.values(), join="exact"))
    except ValueError as err:
        shared = [n for n, p in params.items() if any(d in q.dims for d in p.dims for m, q in params.items() if m != n)]
        raise ValueError(f"parameters sharing a dimension must have the same length and coordinates "
                         f"({', '.join(shared)}): {err}") from None
    dims = arrays[0].dims
    arrays = tuple(a.transpose(*dims) for a in arrays)
    return Plan(inputs=dict(params), params=arrays, realizations=realizations, seed=check_seed(seed),
                max_steps=max_steps, kernel=kernel, backend=backend)


def run_seed(seed, store=None) -> int:
    """``seed`` checked, or the seed of the run kept in ``store``, or a fresh one.

    Without a seed, a store's recorded seed is reused (so the same call resumes); without
    either, one is drawn from the operating system.
    """
    if seed is None and store is not None:
        from .store import recorded_seed

        seed = recorded_seed(check_store(store))
    return check_seed(seed)


def stored_run(store, function: str, call: dict, seed: int):
    """Open ``store`` for the call ``function(**call)`` run with ``seed`` (context manager; None without a store).

    See :func:`gpuensembles.core.store.stored_run`: pass what it yields to
    :func:`run_realizations` or :func:`run_items` as ``store=`` (or a named part of it).
    """
    from . import store as stores

    if store is None:  # nothing to compare the call with: its arrays need no digest
        return stores.stored_run(None, {})
    return stores.stored_run(check_store(store), stores.describe_call(function, call, seed))


def at_worst(value: xr.DataArray, **params) -> str:
    """``"a = 1, b = 2"``: the parameters at the point where ``value`` is largest (for messages).

    Parameters
    ----------
    value : xarray.DataArray
        A quantity over the parameters' dimensions.
    **params : xarray.DataArray
        The parameters, broadcastable against ``value``.

    Returns
    -------
    str
        Each parameter's value at that point.
    """
    value, *arrays = xr.broadcast(value, *(xr.DataArray(p) for p in params.values()))
    where = np.unravel_index(int(np.nanargmax(value.values)), value.shape) if value.ndim else ()
    return ", ".join(f"{name} = {float(a.values[where]):.4g}" for name, a in zip(params, arrays))


def check_store(store):
    """``store`` as given if it is a directory path (str or path-like), else TypeError naming it.

    Parameters
    ----------
    store : str or path-like
        The store directory.

    Returns
    -------
    str or path-like
        ``store``.
    """
    if isinstance(store, bytes) or not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a directory path (str or path-like), got {type(store).__name__} {store!r}")
    text = os.fsdecode(os.fspath(store))
    if not text or "\x00" in text:
        raise ValueError(f"store must name a directory, got {store!r}")
    return store


def normalize_chunks(plan: Plan, chunks) -> tuple:
    """Turn ``chunks`` (int: realizations per chunk; dict: per dimension) into dask chunks."""
    sizes = dict(zip(plan.dims, plan.shape))
    if not isinstance(chunks, dict):
        chunks = {REALIZATION: check_count("chunks", chunks)}
    unknown = set(chunks) - set(sizes)
    if unknown:
        raise ValueError(f"chunks names unknown dimensions {sorted(unknown, key=str)}; the output has {list(sizes)}")
    checked = {dim: check_count(f"chunks[{dim!r}]", size) for dim, size in chunks.items()}
    return tuple(_split(sizes[d], min(checked.get(d, sizes[d]), sizes[d])) for d in plan.dims)


# --------------------------------------------------------------------------- execution


def sizes_text(plan: Plan) -> str:
    """``"realizations=R at each of P points (D: 3 values, ...)"``: what sets the size of a result."""
    swept = ", ".join(f"{d}: {n} values" for d, n in zip(plan.sweep_dims, plan.shape))
    return f"realizations={plan.realizations}" + (f" at each of {math.prod(plan.shape[:-1])} points ({swept})"
                                                   if swept else "")


def run_block(plan: Plan, location: tuple, **runner_options) -> np.ndarray:
    """Run the realizations and points of one block; ``location`` holds one slice per dim.

    Resolves the backend and compiles the kernel in the calling process (a dask worker,
    or the user's process for eager runs). If the device runs out of memory, the block is
    split in two along ``realization`` and each half run on its own (same numbers: the
    realization ids do not change); a single realization per point that does not fit
    raises MemoryError saying what to change.
    """
    *sweep, real = location
    grid = plan.shape[:-1]
    index = np.arange(math.prod(grid), dtype=np.int64).reshape(grid)[tuple(sweep)]
    n_real = real.stop - real.start
    try:
        out = np.empty((index.size, n_real), dtype=np.int64)
        runner = first_passage_runner(plan.kernel.factory(*plan.kernel.args), _backend.resolve(plan.backend))
        runner(plan.table()[index.ravel()], index.ravel().astype(np.uint32), real.start, plan.seed, plan.max_steps,
               out, **runner_options)
        return out.reshape(index.shape + (n_real,))
    except MemoryError as err:
        if n_real < 2:
            raise MemoryError(
                f"one realization for each of {index.size} parameter points does not fit in memory ({err}); "
                "use chunks={dim: 1} over the swept dimensions"
            ) from err
    mid = real.start + n_real // 2
    halves = [run_block(plan, (*sweep, part)) for part in (slice(real.start, mid), slice(mid, real.stop))]
    return np.concatenate(halves, axis=-1)


def _dask_block(plan, store, block_info=None):
    info = block_info[None]
    location = tuple(slice(*loc) for loc in info["array-location"])
    if store is None:
        return run_block(plan, location)
    return store.get_or_run(tuple(info["chunk-location"]), lambda: run_block(plan, location))



def execute(plan: Plan, chunks=None, progress="auto", store=None, bytes_per_value: int = 8):
    """Run ``plan``; return its int64 ``(*sweep dims, realization)`` values.

    Eager (numpy) unless ``chunks`` is given or a ``distributed.Client`` is active, in
    which case a dask array is returned and nothing runs until it is computed. With
    ``store`` (a directory), finished chunks are kept there and reused (see
    :mod:`gpuensembles.store`); the store is checked before anything runs. Before any
    of it, the memory the result needs (``bytes_per_value`` per value: the int64 values
    and what the caller builds from them) is checked against the memory available, for
    the whole result when eager, for the largest chunk when lazy.
    """
    show = shown(progress)
    client = _active_client()
    lazy = chunks is not None or client is not None
    if chunks is None and store is not None:  # restart points that do not depend on the worker count
        chunks = {REALIZATION: -(-plan.realizations // STORE_CHUNKS)}
    if chunks is None and client is not None:
        chunks = {REALIZATION: -(-plan.realizations // (4 * worker_count(client)))}
    dask_chunks = normalize_chunks(plan, chunks) if chunks is not None else None
    if lazy:
        largest = math.prod(max(c) for c in dask_chunks)
        check_memory(largest * bytes_per_value, f"one chunk of {largest} values (chunks={chunks!r})",
                     limit=_memory_limit(client))
    if not lazy or gathering():
        check_memory(math.prod(plan.shape) * bytes_per_value, f"the result of {sizes_text(plan)}")
    chunk_store = None
    if store is not None:
        from .store import ChunkStore, describe_plan

        chunk_store = ChunkStore(check_store(store), describe_plan(plan), dask_chunks).open()
    starting()
    if lazy:
        meta = np.empty((0,) * len(plan.dims), np.int64)
        lazy_run = dask_array().map_blocks(_dask_block, plan, chunk_store, chunks=dask_chunks, dtype=np.int64,
                                           meta=meta)
        if chunk_store is not None:
            lazy_run.stored_items = chunk_store.stored_items  # read by reuse_attrs
        return lazy_run
    if chunk_store is not None:
        try:
            return _run_eager_store(plan, chunk_store, show)
        finally:
            chunk_store.release()
    return _run_eager(plan, show)


def reuse_attrs(raw) -> dict:
    """Attributes saying how much of a result a store already held when the run started.

    ``store_items_reused`` (values of the chunks found finished, not computed in this call)
    and ``store_items`` (all values); none for a run without a store.
    """
    stored = getattr(raw, "stored_items", None)
    if stored is None:
        return {}
    return {"store_items_reused": np.int64(stored), "store_items": np.int64(math.prod(raw.shape))}


class _StoredRun(np.ndarray):
    """An eager run's values with ``stored_items``: how many of them its store already held."""


def _run_eager_store(plan: Plan, store, show: bool) -> np.ndarray:
    """Run chunk by chunk in this process, each read from or written to ``store``."""
    starts = [np.concatenate(([0], np.cumsum(c))) for c in store.chunks]
    out = np.empty(plan.shape, dtype=np.int64)
    blocks = list(np.ndindex(*(len(c) for c in store.chunks)))
    with _progress_bar(len(blocks), show, unit="chunks") as bar:
        for block in blocks:
            location = tuple(slice(int(s[i]), int(s[i + 1])) for s, i in zip(starts, block))
            out[location] = store.get_or_run(block, lambda location=location: run_block(plan, location))
            bar.update(1)
    out = out.view(_StoredRun)
    out.stored_items = store.stored_items
    return out


def _run_eager(plan: Plan, show: bool) -> np.ndarray:
    """Run in this process. On the GPU in one launch (the bar follows the kernel's work
    counter); on the CPU in up to 20 realization slices (the bar advances per slice)."""
    backend = _backend.resolve(plan.backend)
    n_points = math.prod(plan.shape[:-1])
    sweep = tuple(slice(None) for _ in plan.shape[:-1])
    out = np.empty(plan.shape, dtype=np.int64)
    with _progress_bar(plan.realizations * n_points, show) as bar:
        if backend == "cuda":
            options = {"progress": lambda n: bar.update(n - bar.n)} if show else {}
            out[...] = run_block(plan, sweep + (slice(0, plan.realizations),), **options)
            return out
        pieces = min(_MAX_PROGRESS_PIECES, n_points * plan.realizations // _MIN_CPU_ITEMS_PER_PIECE) if show else 1
        bounds = np.linspace(0, plan.realizations, max(1, pieces) + 1).astype(int)
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            out[..., lo:hi] = run_block(plan, sweep + (slice(lo, hi),))
            bar.update((hi - lo) * n_points)
    return out


def label(plan: Plan, raw, metadata: dict) -> xr.DataArray:
    """Wrap ``raw`` (numpy or dask, shape ``plan.shape``) with the plan's coordinates.

    Every swept parameter named in ``metadata`` becomes a coordinate with those attrs
    (the index of its dimension when the dimension is its own), plus any coordinate the
    user gave on a shared dimension; ``realization`` gets its CF attributes.
    """
    return xr.DataArray(raw, dims=plan.dims, coords=coordinates(plan, metadata))


def coordinates(plan: Plan, metadata: dict) -> dict:
    """The coordinates :func:`label` puts on a result, as ``{name: xarray.Variable}``."""
    coords = {}
    for name, p in plan.inputs.items():
        if p.ndim and name in metadata:
            coords[name] = xr.Variable(p.dims, p.values, metadata[name])
            coords.update({d: c.variable for d, c in p.coords.items() if d != name})
    # a RangeIndex is not materialised: a lazy result of 10**12 realizations costs no memory here
    coords[REALIZATION] = xr.Variable(REALIZATION, pd.RangeIndex(plan.realizations), REALIZATION_ATTRS)
    return coords


def sample_coordinates(plan: Plan, every: int, time_unit: str) -> dict:
    """Coordinates of a ``time`` dimension sampled after every ``every`` of ``plan.max_steps`` steps.

    ``step`` always; ``time = step * h`` as well when the time step ``h`` is not swept
    (a swept ``h`` gives every point its own times; then ``step * h`` is left to the user).
    ``time_unit`` says what the model's normalized time is (``units: "1"`` beside it).
    """
    step = np.arange(1, plan.max_steps // every + 1, dtype=np.int64) * every
    coords = {"step": xr.Variable("time", step, {"long_name": "steps since the start", "units": "1"})}
    if plan.inputs["h"].ndim == 0:
        coords["time"] = xr.Variable("time", step * float(plan.inputs["h"]),
                                     {"long_name": "time", "units": "1", "time_unit": time_unit})
    return coords


def on_dims(values, dims: tuple, coords: dict, **attrs) -> xr.DataArray:
    """``values`` as a DataArray over ``dims`` with those of ``coords`` that lie on them."""
    return xr.DataArray(values, {k: c for k, c in coords.items() if set(c.dims) <= set(dims)}, dims, attrs=attrs)


def where_it_ran(plan: Plan, raw) -> tuple:
    """``(backend, device)`` for the provenance of a result; lazy results resolve per worker."""
    if not isinstance(raw, np.ndarray):
        return plan.backend, _backend.PER_WORKER_DEVICE
    backend = _backend.resolve(plan.backend)
    return backend, _backend.device_name(backend)


def dask_array():
    """``dask.array``, imported on first use."""
    import dask.array

    return dask.array


def is_dask(value) -> bool:
    """True for a dask collection (dask is never imported to find out: none exists before it is)."""
    dask = sys.modules.get("dask")
    return dask is not None and dask.is_dask_collection(value)
