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
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from . import backend as _backend
from .io import REALIZATION, REALIZATION_ATTRS
from .templates.first_passage import first_passage_runner

_MAX_PROGRESS_PIECES = 20
_MIN_CPU_ITEMS_PER_PIECE = 4096


# --------------------------------------------------------------------------- validation


def check_count(name: str, value, minimum: int = 1) -> int:
    """Return ``value`` as int if it is an integer >= ``minimum``, else raise ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_seed(seed) -> int:
    """Validate a seed (0 <= seed < 2**32); ``None`` draws a fresh one from the OS."""
    if seed is None:
        return secrets.randbits(32)
    seed = check_count("seed", seed, minimum=0)
    if seed >= 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    return seed


def as_parameter(name: str, value) -> xr.DataArray:
    """Turn a scalar, 1-D sequence or 1-D DataArray into a float64 DataArray.

    Scalars become 0-d arrays; a 1-D array becomes dimension ``name`` with its values
    as coordinate; a DataArray keeps its own dimension (so two parameters given on one
    shared dimension vary together). Values must be finite.
    """
    if isinstance(value, xr.DataArray):
        arr = value.astype(np.float64)
        if arr.ndim > 1:
            raise ValueError(f"{name} must be a scalar or 1-D, got dims {arr.dims}")
    else:
        try:
            values = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number or a 1-D array of them, got {value!r}") from None
        if values.ndim > 1:
            raise ValueError(f"{name} must be a scalar or 1-D, got shape {values.shape}")
        if values.ndim == 1:
            arr = xr.DataArray(values, dims=(name,), coords={name: values})
        else:
            arr = xr.DataArray(values)
    if arr.ndim == 1 and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr.values)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {arr.values}")
    if arr.dims == (name,) and len(set(arr.values.tolist())) != arr.size:
        raise ValueError(f"{name} has repeated values: {arr.values}")
    return arr.rename(name)


def check_range(name: str, arr: xr.DataArray, low=-math.inf, high=math.inf, *, low_open=False, high_open=False,
                hint=""):
    """Raise ValueError unless every value of ``arr`` lies in the given interval (``hint`` is appended)."""
    v = arr.values
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (np.all(ok_low) and np.all(ok_high)):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        bad = v[~(ok_low & ok_high)] if v.ndim else v
        raise ValueError(f"{name} must lie in {interval}, got {bad}{hint}")


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
    if seed is None and store is not None:
        from .store import recorded_seed

        seed = recorded_seed(store)
    if backend not in _backend.BACKENDS:
        raise ValueError(f"backend must be one of {_backend.BACKENDS}, got {backend!r}")
    try:
        arrays = xr.broadcast(*xr.align(*params.values(), join="exact"))
    except ValueError as err:
        raise ValueError(f"parameters sharing a dimension must have the same length and coordinates: {err}") from None
    dims = arrays[0].dims
    arrays = tuple(a.transpose(*dims) for a in arrays)
    if REALIZATION in dims:
        raise ValueError(f"no parameter may use the dimension name {REALIZATION!r}")
    return Plan(
        inputs=dict(params),
        params=arrays,
        realizations=check_count("realizations", realizations),
        seed=check_seed(seed),
        max_steps=check_count("max_steps", max_steps),
        kernel=kernel,
        backend=backend,
    )


def normalize_chunks(plan: Plan, chunks) -> tuple:
    """Turn ``chunks`` (int: realizations per chunk; dict: per dimension) into dask chunks."""
    sizes = dict(zip(plan.dims, plan.shape))
    if isinstance(chunks, (int, np.integer)) and not isinstance(chunks, bool):
        chunks = {REALIZATION: chunks}
    if not isinstance(chunks, dict):
        raise ValueError(f"chunks must be an int (realizations per chunk) or a dict {{dim: size}}, got {chunks!r}")
    unknown = set(chunks) - set(sizes)
    if unknown:
        raise ValueError(f"chunks names unknown dimensions {sorted(unknown)}; the output has {list(sizes)}")
    for dim, size in chunks.items():
        check_count(f"chunks[{dim!r}]", size)
    return tuple(_split(sizes[d], min(chunks.get(d, sizes[d]), sizes[d])) for d in plan.dims)


def _split(n: int, size: int) -> tuple:
    return (size,) * (n // size) + ((n % size,) if n % size else ())


# --------------------------------------------------------------------------- execution


def dask_array():
    """``dask.array``, imported on first use: a plain import of the package does without dask."""
    import dask.array

    return dask.array


def is_dask(value) -> bool:
    """True for a dask collection (dask is never imported to find out: none exists before it is)."""
    dask = sys.modules.get("dask")
    return dask is not None and dask.is_dask_collection(value)


def _active_client():
    if "distributed" not in sys.modules:  # no client without it: spare a first call its 0.3 s import
        return None
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


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


#: Chunks a stored run is split into by default (each is a restart point).
STORE_CHUNKS = 16


def execute(plan: Plan, chunks=None, progress="auto", store=None):
    """Run ``plan``; return its int64 ``(*sweep dims, realization)`` values.

    Eager (numpy) unless ``chunks`` is given or a ``distributed.Client`` is active, in
    which case a dask array is returned and nothing runs until it is computed. With
    ``store`` (a directory), finished chunks are kept there and reused (see
    :mod:`gpuensembles.store`); the store is checked before anything runs.
    """
    client = _active_client()
    lazy = chunks is not None or client is not None
    if chunks is None and client is not None:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = {REALIZATION: -(-plan.realizations // (4 * workers))}
    if chunks is None and store is not None:
        chunks = {REALIZATION: -(-plan.realizations // STORE_CHUNKS)}
    dask_chunks = normalize_chunks(plan, chunks) if chunks is not None else None
    chunk_store = None
    if store is not None:
        from .store import ChunkStore

        chunk_store = ChunkStore(store, plan, dask_chunks).open()
    if lazy:
        meta = np.empty((0,) * len(plan.dims), np.int64)
        return dask_array().map_blocks(_dask_block, plan, chunk_store, chunks=dask_chunks, dtype=np.int64,
                                       meta=meta)
    if chunk_store is not None:
        try:
            return _run_eager_store(plan, chunk_store, progress)
        finally:
            chunk_store.release()
    return _run_eager(plan, progress)


def _run_eager_store(plan: Plan, store, progress) -> np.ndarray:
    """Run chunk by chunk in this process, each read from or written to ``store``."""
    starts = [np.concatenate(([0], np.cumsum(c))) for c in store.chunks]
    out = np.empty(plan.shape, dtype=np.int64)
    blocks = list(np.ndindex(*(len(c) for c in store.chunks)))
    show = sys.stderr.isatty() if progress == "auto" else bool(progress)
    with _progress_bar(len(blocks), show, unit="chunk") as bar:
        for block in blocks:
            location = tuple(slice(int(s[i]), int(s[i + 1])) for s, i in zip(starts, block))
            out[location] = store.get_or_run(block, lambda location=location: run_block(plan, location))
            bar.update(1)
    return out


def _run_eager(plan: Plan, progress) -> np.ndarray:
    """Run in this process. On the GPU in one launch (the bar follows the kernel's work
    counter); on the CPU in up to 20 realization slices (the bar advances per slice)."""
    backend = _backend.resolve(plan.backend)
    n_points = math.prod(plan.shape[:-1])
    show = sys.stderr.isatty() if progress == "auto" else bool(progress)
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


def run_items(block: Callable, n_items: int, width: int, *, chunks=None, pieces: int = 1, progress="auto",
              unit: str = "item"):
    """Run ``block(start, stop) -> float64 array (stop - start, width)`` over items ``[0, n_items)``.

    For ensembles whose items (e.g. batches of walks) each reduce to a row of numbers.
    Eager (numpy, in up to ``pieces`` calls so a progress bar can advance) unless
    ``chunks`` (items per task) is given or a ``distributed.Client`` is active; then a
    dask array with one task per chunk. ``block`` must be picklable and pure: a chunk's
    rows depend only on its items.
    """
    chunks = _chunk_size(chunks, n_items)
    if chunks is not None:
        size = min(check_count("chunks", chunks), n_items)
        return dask_array().map_blocks(_items_block, block, chunks=(_split(n_items, size), (width,)), dtype=np.float64,
                             meta=np.empty((0, 0), dtype=np.float64))
    show = sys.stderr.isatty() if progress == "auto" else bool(progress)
    bounds = np.linspace(0, n_items, max(1, min(pieces if show else 1, n_items)) + 1).astype(int)
    out = np.empty((n_items, width), dtype=np.float64)
    with _progress_bar(n_items, show, unit=unit) as bar:
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            out[lo:hi] = block(lo, hi)
            bar.update(hi - lo)
    return out


def _chunk_size(chunks, n):
    """``chunks`` as given, or four tasks per worker of an active ``distributed.Client``."""
    client = _active_client()
    if chunks is None and client is not None:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = -(-n // (4 * workers))
    return chunks


def _items_block(block, block_info=None):
    start, stop = block_info[None]["array-location"][0]
    return block(start, stop)


@dataclass(frozen=True)
class Output:
    """One array a realization block returns.

    Its full ``shape`` and ``dtype``, and ``axis``, the realization axis along which
    blocks are joined, or ``None`` for a tally that blocks add to (an integer histogram:
    exact for any chunking).
    """

    shape: tuple
    dtype: type
    axis: int | None


def run_realizations(block: Callable, realizations: int, outputs: dict, *, chunks=None, pieces: int = 1,
                     progress="auto") -> dict:
    """Run ``block(start, stop) -> {name: array}`` over realizations ``[0, realizations)``.

    Returns ``{name: array}`` shaped as ``outputs[name]`` (:class:`Output`). Eager (numpy,
    in up to ``pieces`` calls so a progress bar can advance) unless ``chunks``
    (realizations per task) is given or a ``distributed.Client`` is active; then dask
    arrays with one task per chunk. ``block`` must be picklable and pure: a chunk's
    numbers depend only on its realizations.
    """
    chunks = _chunk_size(chunks, realizations)
    if chunks is not None:
        import dask

        bounds = np.cumsum((0,) + _split(realizations, min(check_count("chunks", chunks), realizations)))
        da = dask_array()
        parts = [(lo, hi, dask.delayed(block, pure=True)(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
        return {name: _join([da.from_delayed(part[name], _block_shape(o, hi - lo), o.dtype) for lo, hi, part in parts],
                            o.axis, da) for name, o in outputs.items()}
    show = sys.stderr.isatty() if progress == "auto" else bool(progress)
    bounds = np.linspace(0, realizations, max(1, min(pieces if show else 1, realizations)) + 1).astype(int)
    results = []
    with _progress_bar(realizations, show) as bar:
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            results.append(block(lo, hi))
            bar.update(hi - lo)
    return {name: _join([r[name] for r in results], o.axis, np) for name, o in outputs.items()}


def _block_shape(output: Output, n: int) -> tuple:
    if output.axis is None:
        return output.shape
    return output.shape[:output.axis] + (n,) + output.shape[output.axis + 1:]


def _join(arrays, axis, xp):
    if len(arrays) == 1:
        return arrays[0]
    return xp.concatenate(arrays, axis=axis) if axis is not None else xp.stack(arrays).sum(axis=0)


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
    coords[REALIZATION] = xr.Variable(REALIZATION, np.arange(plan.realizations), REALIZATION_ATTRS)
    return coords


def sample_coordinates(plan: Plan, every: int) -> dict:
    """Coordinates of a ``time`` dimension sampled after every ``every`` of ``plan.max_steps`` steps.

    ``step`` always; ``time = step * h`` as well when the time step ``h`` is not swept
    (a swept ``h`` gives every point its own times; then ``step * h`` is left to the user).
    """
    step = np.arange(1, plan.max_steps // every + 1, dtype=np.int64) * every
    coords = {"step": xr.Variable("time", step, {"long_name": "steps since the start", "units": "1"})}
    if plan.inputs["h"].ndim == 0:
        coords["time"] = xr.Variable("time", step * float(plan.inputs["h"]), {"long_name": "time", "units": "1"})
    return coords


def on_dims(values, dims: tuple, coords: dict, **attrs) -> xr.DataArray:
    """``values`` as a DataArray over ``dims`` with those of ``coords`` that lie on them."""
    return xr.DataArray(values, {k: c for k, c in coords.items() if set(c.dims) <= set(dims)}, dims, attrs=attrs)


def where_it_ran(plan: Plan, raw) -> tuple:
    """``(backend, device)`` for the provenance of a result; lazy results resolve per worker."""
    if not isinstance(raw, np.ndarray):
        return plan.backend, "resolved on each dask worker"
    backend = _backend.resolve(plan.backend)
    return backend, _backend.device_name(backend)


def _progress_bar(total: int, show: bool, unit: str = "realization"):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not show, unit=unit, unit_scale=True, leave=False)
