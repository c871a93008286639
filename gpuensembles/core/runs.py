"""Ensembles whose members reduce to arrays: :func:`run_realizations` and :func:`run_items`.

The run functions whose kernels are not a first passage (trajectories, lattices,
oscillator systems, clones, batches of walks) hand the engine a pure block function
``block(start, stop)`` over their members; it runs eagerly in pieces (so a progress bar
advances) or as one dask task per chunk. Before anything runs, the outputs are checked
against the memory available (all of them when eager, one chunk's when lazy).
"""

import contextvars
import functools
import math
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import validation
from .progress import bar as _progress_bar
from .progress import shown, starting
from .validation import check_count, check_memory, gathering


def _split(n: int, size: int) -> tuple:
    return (size,) * (n // size) + ((n % size,) if n % size else ())


def _active_client():
    """The active ``distributed.Client`` or None (distributed is not imported to find out: no client exists before)."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def worker_count(client=None) -> int:
    """Workers of ``client`` (default: the active ``distributed.Client``); 1 without one."""
    client = client if client is not None else _active_client()
    if client is None:
        return 1
    return max(1, len(client.nthreads()))  # scheduler_info() lists only the first 5 in some versions


def thread_count(client=None) -> int:
    """Threads of all workers of ``client`` (default: the active ``distributed.Client``); 1 without one."""
    client = client if client is not None else _active_client()
    if client is None:
        return 1
    return max(1, sum(client.nthreads().values()))


def _workers_info(client) -> dict:
    """Every worker's entry of ``scheduler_info`` (some versions list 5 unless asked for all)."""
    try:
        return client.scheduler_info(n_workers=-1).get("workers", {})
    except TypeError:  # a version without the argument lists them all
        return client.scheduler_info().get("workers", {})


def _memory_limit(client) -> int:
    """Bytes one task may use: the smallest worker's memory limit on a cluster, else what is free here."""
    if client is not None:
        limits = [w.get("memory_limit") or 0 for w in _workers_info(client).values()]
        if limits and min(limits) > 0:
            return int(min(limits))
    return validation.available_memory()


@dataclass(frozen=True)
class Units:
    """What a progress bar counts: ``per_item`` units per item, ``total`` in all (default: all items').

    Attributes
    ----------
    name : str
        What is counted, plural (``"lattices"``).
    per_item : int
        Units per item of the run (e.g. lattices per group of 32 packed lattices).
    total : int, optional
        Units of the whole run, where the last item holds fewer.
    desc : str, optional
        A prefix of the bar (``"L=64"``).
    """

    name: str = "realizations"
    per_item: int = 1
    total: int | None = None
    desc: str | None = None

    def done(self, n: int) -> int:
        """Units finished after the first ``n`` items."""
        units = n * self.per_item
        return units if self.total is None else min(units, self.total)


def _run_pieces(block, n: int, pieces: int, show: bool, units: Units, size: int | None = None) -> list:
    """Call ``block(lo, hi)`` over ``[0, n)`` in up to ``pieces`` calls (one without a bar), advancing the bar.

    With ``size``, the calls are the chunks of that size instead (a stored run's restart points).
    Returns ``[((lo, hi), result), ...]`` in order.
    """
    if size is None:
        bounds = np.linspace(0, n, max(1, min(pieces if show else 1, n)) + 1).astype(int)
    else:
        bounds = np.cumsum((0,) + _split(n, size))
    results = []
    with _progress_bar(units.done(n), show, unit=units.name, desc=units.desc) as bar:
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            results.append(((lo, hi), block(lo, hi)))
            bar.update(units.done(hi) - units.done(lo))
    return results


def run_together(calls: list, together: bool) -> list:
    """``[call() for call in calls]``, the calls at once on threads of their own when ``together``.

    For eager GPU runs of parts too small to fill the device each (Ising lattices of several
    ``L``): their kernels, launched on streams of their own, then run side by side. Each
    thread runs in a copy of the caller's context (:func:`~gpuensembles.core.progress.on_start`
    still fires once). The results keep the calls' order; the first exception is raised.

    Parameters
    ----------
    calls : list of callable
        Each called without arguments.
    together : bool
        Run them at once (else one after the other, in this thread).

    Returns
    -------
    list
        The calls' results, in order.
    """
    if not together or len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(len(calls), thread_name_prefix="gpuensembles-part") as pool:
        futures = [pool.submit(contextvars.copy_context().run, call) for call in calls]
        return [future.result() for future in futures]


def run_items(block: Callable, n_items: int, width: int, *, chunks=None, pieces: int = 1, progress="auto",
              unit: str | Units = "items", what: str | None = None, store=None):
    """Run ``block(start, stop) -> float64 array (stop - start, width)`` over items ``[0, n_items)``.

    For ensembles whose items (e.g. batches of walks) each reduce to a row of numbers.
    Eager (numpy, in up to ``pieces`` calls so a progress bar can advance) unless
    ``chunks`` (items per task) is given or a ``distributed.Client`` is active; then a
    dask array with one task per chunk. ``block`` must be picklable and pure: a chunk's
    rows depend only on its items. The rows must fit in memory (all of them when eager,
    a chunk's when lazy; ``what`` names what sets their number in the message), else
    ValueError before anything runs. ``unit`` names what the bar counts. With ``store`` (an
    open :class:`gpuensembles.core.store.ChunkStore`), each chunk is read from it when a
    verified copy is there, else computed and written to it (eager runs then go chunk by chunk).
    """
    units = unit if isinstance(unit, Units) else Units(unit)
    show = shown(progress)
    client = _active_client()
    lazy = chunks is not None or client is not None
    chunks = _chunk_size(chunks, n_items, client, store)
    what = what or f"{n_items} {units.name}"
    size = None if chunks is None else min(check_count("chunks", chunks), n_items)
    if lazy:
        check_memory(size * width * 8, f"one chunk of {size} {units.name} (chunks={chunks})",
                     limit=_memory_limit(client))
        if gathering():
            check_memory(n_items * width * 8, f"the result of {what}")
        starting()
        import dask.array as da

        if store is not None:
            store.keep_lock()
        return da.map_blocks(_items_block, block, store, chunks=(_split(n_items, size), (width,)), dtype=np.float64,
                             meta=np.empty((0, 0), dtype=np.float64))
    check_memory(n_items * width * 8, f"the result of {what}")
    starting()
    out = np.empty((n_items, width), dtype=np.float64)
    for (lo, hi), rows in _run_pieces(functools.partial(_stored, block, store), n_items, pieces, show, units, size):
        out[lo:hi] = rows
    return out


#: Chunks a stored run is split into by default (each is a restart point).
STORE_CHUNKS = 16


def _chunk_size(chunks, n, client, store=None):
    """``chunks`` as given; with a store, `STORE_CHUNKS` restart points (for any worker count);
    with an active ``distributed.Client``, four tasks per worker; else None (eager, unsplit)."""
    if chunks is None and store is not None:
        chunks = -(-n // STORE_CHUNKS)
    if chunks is None and client is not None:
        chunks = -(-n // (4 * worker_count(client)))
    return chunks


def _items_block(block, store=None, block_info=None):
    start, stop = block_info[None]["array-location"][0]
    return _stored(block, store, start, stop)


def _stored(block, store, start, stop, after=None):
    """``block(start, stop)``, or its verified copy in ``store`` (a chunk keyed by its bounds).

    ``after``: the result of the task before this one in its :class:`Chains` (unused: a
    dependency only orders the tasks and keeps a chain on one worker)."""
    if store is None:
        return block(start, stop)
    return store.get_or_run((start, stop), lambda: block(start, stop))


class Chains:
    """Successive lazy runs whose tasks form chains, each task after the last of its chain.

    A task becomes the last of its chain. The scheduler prefers the worker holding a task's
    input, so a chain stays on one worker (a preference, not a guarantee: a lost worker's chains
    move).

    Pass one instance as ``chains=`` to each :func:`run_realizations` call of the runs, in
    order. Plainly made, task ``i`` of each run joins chain ``i``. Made by :meth:`balanced`,
    the runs of an active client (without ``chunks`` or a store) are cut into one share of
    about equal cost per worker instead: with one task per worker and run, runs whose items
    cost unlike (Ising lattices of several sizes) would leave GPUs idle, and a run too small
    to fill a GPU would be split over all of them (slower per item than whole).
    """

    def __init__(self, shares=None):
        self.ends = {}
        self._shares = list(shares) if shares is not None else None

    @classmethod
    def balanced(cls, runs, workers: int) -> "Chains":
        """Chains for ``runs`` cut into ``workers`` contiguous shares of about equal cost.

        ``runs``: ``(items, cost of one item)`` each, in the order they run. Each run's items of
        one share are one task of that share's chain.
        """
        total = float(sum(n * cost for n, cost in runs))
        shares, done = [], 0.0
        for n, cost in runs:
            if n == 0:
                shares.append([])
                continue
            middle = done + cost * (np.arange(n) + 0.5)  # an item goes to the share its cost's middle is in
            chain = np.minimum(workers - 1, (middle * workers / total).astype(np.int64)) if total > 0 else \
                np.zeros(n, np.int64)
            done += n * cost
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(chain)) + 1, [n]])
            shares.append([(int(lo), int(hi), int(chain[lo])) for lo, hi in zip(bounds[:-1], bounds[1:])])
        return cls(shares)

    def next_shares(self, n: int):
        """The next run's tasks as ``(start, stop, chain)`` over its ``n`` items.

        None when not :meth:`balanced`; RuntimeError if the shares are used up or tile another
        number of items.
        """
        if self._shares is None:
            return None
        if not self._shares:
            raise RuntimeError("a run more than the chains were balanced for")
        shares = self._shares.pop(0)
        if [lo for lo, _, _ in shares] + [n] != [0] + [hi for _, hi, _ in shares]:
            raise RuntimeError(f"the chains' next shares {shares} do not tile the run's {n} items")
        return shares

    def after(self, chain: int):
        """The last task of ``chain`` (None: the task starts it)."""
        return self.ends.get(chain)

    def extend(self, tasks):
        """``(chain, task)`` pairs: each task becomes the last of its chain."""
        self.ends.update(tasks)


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

    def nbytes(self, n: int | None = None) -> int:
        """Bytes of the whole array, or of a block of ``n`` items."""
        shape = self.shape if n is None else _block_shape(self, n)
        return math.prod(shape) * np.dtype(self.dtype).itemsize


def run_realizations(block: Callable, realizations: int, outputs: dict, *, chunks=None, pieces: int = 1,
                     progress="auto", unit: str | Units = "realizations", what: str | None = None,
                     store=None, chains: Chains | None = None) -> dict:
    """Run ``block(start, stop) -> {name: array}`` over realizations ``[0, realizations)``.

    Returns ``{name: array}`` shaped as ``outputs[name]`` (:class:`Output`). Eager (numpy,
    in up to ``pieces`` calls so a progress bar can advance) unless ``chunks``
    (realizations per task) is given or a ``distributed.Client`` is active; then dask
    arrays with one task per chunk. ``block`` must be picklable and pure: a chunk's
    numbers depend only on its realizations. The outputs must fit in memory (all of them
    when eager, a chunk's when lazy; ``what`` names what sets their size in the
    message), else ValueError before anything runs. ``unit`` says what the bar counts.
    With ``store`` (an open :class:`gpuensembles.core.store.ChunkStore`), each chunk is read
    from it when a verified copy is there, else computed and written to it. Without
    ``chunks`` or a store, an active client gets four tasks per worker, or the
    shares of ``chains`` when :meth:`Chains.balanced`. With ``chains`` (lazy runs only), each
    task follows the last task of its chain.
    """
    units = unit if isinstance(unit, Units) else Units(unit)
    show = shown(progress)
    client = _active_client()
    lazy = chunks is not None or client is not None
    # an eager run takes no share: eager GPU runs of several sizes reach here in any order (run_together)
    shares = chains.next_shares(realizations) if chains is not None and lazy else None
    shares = shares if client is not None and chunks is None and store is None else None
    chunks = _chunk_size(chunks, realizations, client, store)
    what = what or f"{realizations} {units.name}"
    size = None if chunks is None else min(check_count("chunks", chunks), realizations)
    if shares:
        size = max(hi - lo for lo, hi, _ in shares)
    if lazy:
        import dask
        import dask.array as da

        chunk = f"one share of {size}" if shares else f"one chunk of {size} (chunks={chunks})"
        check_memory(sum(o.nbytes(size) for o in outputs.values()), f"{chunk} of {what}", limit=_memory_limit(client))
        if gathering():
            check_memory(sum(o.nbytes() for o in outputs.values()), f"the result of {what}")
        starting()
        if store is not None:
            store.keep_lock()
        if not shares:
            bounds = np.cumsum((0,) + _split(realizations, size)).tolist()
            shares = [(lo, hi, i) for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
        tasks = [(chain, dask.delayed(_stored, pure=True)(block, store, lo, hi, chains and chains.after(chain)))
                 for lo, hi, chain in shares]
        if chains is not None:
            chains.extend(tasks)
        parts = [(lo, hi, task) for (lo, hi, _), (_, task) in zip(shares, tasks)]
        return {name: _join([da.from_delayed(part[name], _block_shape(o, hi - lo), o.dtype) for lo, hi, part in parts],
                            o.axis, da) for name, o in outputs.items()}
    check_memory(sum(o.nbytes() for o in outputs.values()), f"the result of {what}")
    starting()
    results = [r for _, r in _run_pieces(functools.partial(_stored, block, store), realizations, pieces, show, units,
                                         size)]
    return {name: _join([r[name] for r in results], o.axis, np) for name, o in outputs.items()}


def _block_shape(output: Output, n: int) -> tuple:
    if output.axis is None:
        return output.shape
    return output.shape[:output.axis] + (n,) + output.shape[output.axis + 1:]


def _join(arrays, axis, xp):
    if len(arrays) == 1:
        return arrays[0]
    return xp.concatenate(arrays, axis=axis) if axis is not None else xp.stack(arrays).sum(axis=0)
