"""Resumable runs: a directory holding each finished chunk, verified before it is reused.

``store="run_dir"`` on a run function writes every chunk it finishes to
``run_dir/chunk-<i>-<j>-....npy`` (a plain NumPy file) and, once that file is complete, a
record ``chunk-<i>-<j>-....json`` with the SHA-256 of its bytes, its shape and the plan's
fingerprint. The same call run again reuses a chunk only if its bytes hash to the
recorded value; a chunk that is missing, truncated, altered or without its record is
computed again, with one warning naming the file. Because every random number is a
function of (seed, stream, realization, draw), the result is bit-identical to an
uninterrupted run. No file is parsed before its bytes are verified, and none goes
through a C library that could crash the interpreter on bad input.

``run_dir/plan.json`` holds the plan's fingerprint (package version, kernel, parameter
values, dimensions, realizations, seed, step limit, chunking); a call whose plan differs
is refused instead of mixing chunks of two different runs. A process that opens a store
holds an exclusive lock on ``run_dir/lock`` until its run ends (an eager run) or the
process exits (a lazy result): a second process is refused while the first lives, and
the operating system frees the lock of a process that died, even by ``kill -9``. Workers
of a distributed cluster write chunks without the lock, and must see the directory (a
shared file system).
"""

import contextlib
import copy
import fcntl
import hashlib
import io
import json
import math
import os
import socket
import time
import warnings
from pathlib import Path

import numpy as np

from .io import version

_LOCKS: dict = {}
"""Lock files this process holds, by resolved store path: ``{path: open file}``."""


def describe_plan(plan) -> dict:
    """What determines the numbers of a first-passage plan (:mod:`gpuensembles.core.engine`).

    Parameters
    ----------
    plan : gpuensembles.core.engine.Plan
        The run.

    Returns
    -------
    dict
        The kernel, dimensions, shape, a digest of the parameter table, the swept
        coordinates, the seed and the step limit.
    """
    spec = plan.kernel
    return {
        "kernel": f"{spec.factory.__module__}.{spec.factory.__qualname__}{tuple(spec.args)}",
        "dims": list(plan.dims),
        "shape": list(plan.shape),
        "parameters": hashlib.sha256(np.ascontiguousarray(plan.table()).tobytes()).hexdigest(),
        "coords": {d: np.asarray(plan.params[0][d].values).tolist() for d in plan.sweep_dims
                   if d in plan.params[0].coords},
        "seed": int(plan.seed),
        "max_steps": int(plan.max_steps),
    }


def describe_call(function: str, call: dict, seed: int) -> dict:
    """What determines the numbers of a run function's call: its name, arguments and seed.

    Scalars, strings and short lists are kept as they are (a refused store names the
    arguments that differ); arrays, DataArrays and anything long by a SHA-256 of their
    values, shape and dtype.

    Parameters
    ----------
    function : str
        The run function (``"ising"``).
    call : dict
        Its arguments as given (``store``, ``progress`` and ``chunks`` are left out: they change
        no number, and chunks are kept by their bounds).
    seed : int
        The seed it runs with (the one drawn when ``call`` has none).

    Returns
    -------
    dict
        ``{"function": ..., "seed": ..., <argument>: <value or digest>, ...}``.
    """
    described = {"function": function, "seed": int(seed)}
    for name, value in sorted(call.items()):
        if name in ("store", "progress", "seed", "chunks"):
            continue
        described[name] = _describe_value(value)
    return described


def _describe_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _describe_value(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)) and any(isinstance(v, (np.ndarray, list, tuple, dict)) for v in value):
        return [_describe_value(v) for v in value]
    if hasattr(value, "tocsr"):  # a scipy sparse matrix: its CSR arrays
        csr = value.tocsr()
        digest = hashlib.sha256()
        for part in (csr.data, csr.indices, csr.indptr):
            digest.update(np.ascontiguousarray(part).tobytes())
        return {"sparse_sha256": digest.hexdigest(), "shape": list(csr.shape), "dtype": str(csr.dtype)}
    array = np.asarray(getattr(value, "values", value))
    if array.dtype != object and array.size <= 64:
        return {"values": array.tolist(), "dtype": str(array.dtype)}
    if array.dtype == object:
        return {"repr_sha256": hashlib.sha256(repr(value).encode()).hexdigest()}
    return {"sha256": hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest(), "shape": list(array.shape),
            "dtype": str(array.dtype)}


def fingerprint(description: dict, chunks) -> dict:
    """The run's record: ``description`` with the package version and chunking, and its SHA-256.

    Parameters
    ----------
    description : dict
        What determines the numbers (:func:`describe_plan`, :func:`describe_call`).
    chunks : JSON-serialisable
        How the run is split (part of the record: a chunk is only reused under the same split).

    Returns
    -------
    dict
        ``{"fingerprint": hex digest, "plan": the description it is the digest of}``.
    """
    described = {**description, "gpuensembles_version": version(), "chunks": _describe_chunks(chunks)}
    text = json.dumps(described, sort_keys=True)
    return {"fingerprint": hashlib.sha256(text.encode()).hexdigest(), "plan": described}


def _describe_chunks(chunks):
    if isinstance(chunks, str):
        return chunks
    if isinstance(chunks, dict):
        return {str(k): _describe_chunks(v) for k, v in sorted(chunks.items())}
    if isinstance(chunks, (tuple, list)):
        return [_describe_chunks(c) for c in chunks]
    return int(chunks)


def _read_plan(meta: Path) -> dict:
    """``plan.json`` of a store, or a ValueError naming the file and the fix."""
    try:
        stored = json.loads(meta.read_text())
        stored["plan"]["seed"]  # noqa: B018  (a record without it is damaged)
        return stored
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{meta} is damaged ({type(err).__name__}: {err}); it records which run the store "
                         f"holds, so the store cannot be reused: delete {meta.parent} (or use a new store "
                         "directory) and run again") from None


def recorded_seed(path):
    """The seed of the run kept in store ``path``, or None (so a rerun without ``seed=`` resumes).

    Parameters
    ----------
    path : str or path-like
        The store directory.

    Returns
    -------
    int or None
        The recorded seed, or None when the directory holds no run.
    """
    meta = Path(path) / "plan.json"
    if not meta.exists():
        return None
    return int(_read_plan(meta)["plan"]["seed"])


def check_writable(path, what: str = "store"):
    """Raise ValueError unless ``path`` can be created or written by this process.

    For a store directory that does not exist yet, its nearest existing parent must be a
    writable directory.

    Parameters
    ----------
    path : str or path-like
        The directory.
    what : str
        The parameter or option named in the message.
    """
    path = Path(path)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ValueError(f"{what} {str(path)!r}: {str(probe)!r} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(path)!r}: the directory {str(probe)!r} is not writable")


class ChunkStore:
    """The chunks of one plan and chunking, kept in ``path``.

    A chunk is one array, or a dict of arrays (kept as one ``.npz``), under a block index;
    :meth:`part` gives a view whose chunk files carry a name, for runs made of several
    (e.g. one per lattice size).

    Parameters
    ----------
    path : str or path-like
        Directory (created if missing).
    description : dict
        What determines the run's numbers (:func:`describe_plan`, :func:`describe_call`).
    chunks : tuple of tuples, or JSON-serialisable
        How the run is split (part of the fingerprint). A tuple of tuples (dask chunks)
        lets :meth:`open` count the values already stored.
    """

    def __init__(self, path, description: dict, chunks):
        self.path = Path(path)
        self.chunks = chunks
        self.record = fingerprint(description, chunks)
        self.fingerprint = self.record["fingerprint"]
        self.stored_items = 0  # values of the chunks already finished when the store was opened
        self.prefix = "chunk"
        self._shared = {"keep_lock": False}  # shared with the views of :meth:`part`

    def keep_lock(self):
        """Hold the lock until the process ends (a lazy result computes later; see :func:`stored_run`)."""
        self._shared["keep_lock"] = True

    @property
    def lock_kept(self) -> bool:
        """Whether :meth:`keep_lock` was called on the store or one of its parts."""
        return self._shared["keep_lock"]

    def part(self, name: str) -> "ChunkStore":
        """The same store (fingerprint, lock), with chunk files named ``chunk-<name>-<block>``."""
        view = copy.copy(self)
        view.prefix = f"chunk-{name}"
        return view

    def open(self):
        """Create the store, or check that it holds this plan, and take its lock.

        Returns
        -------
        ChunkStore
            ``self``.

        Raises
        ------
        ValueError
            When the directory cannot be written, holds another run, its ``plan.json`` is
            damaged, or another live process holds its lock.
        """
        check_writable(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            self._check_plan()
        except BaseException:
            self.release()
            raise
        if isinstance(self.chunks, tuple) and all(isinstance(c, tuple) for c in self.chunks):
            self.stored_items = sum(math.prod(int(c[i]) for c, i in zip(self.chunks, block))
                                    for block in np.ndindex(*(len(c) for c in self.chunks))
                                    if all(f.exists() for f in self._files(block)))
        return self

    def _check_plan(self):
        meta = self.path / "plan.json"
        if not meta.exists():
            _write_atomically(meta, json.dumps(self.record, indent=1, sort_keys=True).encode())
            return
        stored = _read_plan(meta)
        if stored.get("fingerprint") != self.fingerprint:
            differing = sorted(k for k in self.record["plan"]
                               if stored.get("plan", {}).get(k) != self.record["plan"][k])
            raise ValueError(
                f"store {str(self.path)!r} holds chunks of a different run (differs in: {', '.join(differing)}); "
                "use a new store directory, or delete this one to start over"
            )

    def _lock(self):
        key = str(self.path.resolve())
        if key in _LOCKS:
            return  # this process holds it already (a second call of the same run)
        handle = open(self.path / "lock", "a+")  # noqa: SIM115  (held open for the lock's lifetime)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise ValueError(
                f"store {str(self.path)!r} is in use by {owner}: two runs must not write one store at once. "
                "Wait for that run to end (a killed process frees the store by itself), or use another directory"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        handle.flush()
        _LOCKS[key] = handle

    def release(self):
        """Give the store's lock back (eager runs do this when they end)."""
        handle = _LOCKS.pop(str(self.path.resolve()), None)
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def _files(self, block) -> tuple:
        block = block if isinstance(block, tuple) else (block,)
        stem = self.prefix + "-" + "-".join(str(int(i)) for i in block)
        return self.path / f"{stem}.npy", self.path / f"{stem}.json"

    def get(self, block: tuple):
        """The values of a finished, verified chunk, or None when it must be computed (again).

        Parameters
        ----------
        block : tuple of int
            The chunk's index along each dimension.

        Returns
        -------
        numpy.ndarray or None
            The chunk, or None when it is missing, incomplete or damaged (then a
            RuntimeWarning names the file).
        """
        data, record = self._files(block)
        if not data.exists() and not record.exists():
            return None
        values, problem = self._read_verified(data, record)
        if problem is None:
            return values
        warnings.warn(f"store chunk {data} is unusable ({problem}); computing it again", RuntimeWarning,
                      stacklevel=2)
        return None

    def _read_verified(self, data: Path, record: Path) -> tuple:
        """``(values, None)`` if ``data`` matches its ``record``, else ``(None, what is wrong)``.

        The bytes are hashed before anything parses them.
        """
        if not record.exists():
            return None, "no record of a completed write"
        if not data.exists():
            return None, "the file is missing"
        try:
            expected = json.loads(record.read_text())
            if expected.get("fingerprint") != self.fingerprint:
                return None, "its record belongs to another run"
            raw = data.read_bytes()
            if len(raw) != expected["bytes"]:
                return None, f"{len(raw)} bytes instead of {expected['bytes']} (truncated or extended)"
            if hashlib.sha256(raw).hexdigest() != expected["sha256"]:
                return None, "its bytes do not match the recorded SHA-256 (altered or damaged)"
            values = np.load(io.BytesIO(raw), allow_pickle=False)
            if isinstance(values, np.lib.npyio.NpzFile):
                with values:
                    values = {name: values[name] for name in values.files}
            if _layout(values) != {k: expected[k] for k in ("shape", "dtype")}:
                return None, "its shape or dtype is not the recorded one"
        except (OSError, ValueError, KeyError, TypeError) as err:
            return None, f"its record {record.name} is damaged ({type(err).__name__})"
        return values, None

    def put(self, block: tuple, values: np.ndarray):
        """Write a finished chunk, then its record; a killed writer leaves no record, so no reuse.

        Parameters
        ----------
        block : tuple of int
            The chunk's index along each dimension.
        values : numpy.ndarray
            Its values.
        """
        data, record = self._files(block)
        buffer = io.BytesIO()
        if isinstance(values, dict):  # several arrays: one .npz (the .npy name is kept: it is the chunk's file)
            np.savez(buffer, **{k: np.ascontiguousarray(v) for k, v in values.items()})
        else:
            np.save(buffer, np.ascontiguousarray(values), allow_pickle=False)
        raw = buffer.getvalue()
        _write_atomically(data, raw)
        _write_atomically(record, json.dumps({
            "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw), **_layout(values),
            "fingerprint": self.fingerprint, "block": [int(i) for i in (block if isinstance(block, tuple) else
                                                                        (block,))],
        }).encode())

    def latest(self, block: tuple):
        """The verified chunk ``block + (k,)`` of the largest ``k``, as ``(k, values)``, or None.

        For states saved along a chunk's way (``k``: how far it got); a state that does not
        verify is passed over, with a warning, for the one before it.

        Parameters
        ----------
        block : tuple of int
            The chunk's index, without the last number.

        Returns
        -------
        tuple or None
            ``(k, values)``.
        """
        stem = self.prefix + "-" + "-".join(str(int(i)) for i in block) + "-"
        found = []
        for record in self.path.glob(f"{stem}*.json"):
            tail = record.name[len(stem):-len(".json")]
            if tail.isdigit():
                found.append(int(tail))
        for k in sorted(found, reverse=True):
            values = self.get(block + (k,))
            if values is not None:
                return k, values
        return None

    def forget(self, block: tuple):
        """Delete the chunk ``block`` (its record first: a half-deleted chunk is never reused)."""
        data, record = self._files(block)
        record.unlink(missing_ok=True)
        data.unlink(missing_ok=True)

    def get_or_run(self, block: tuple, run):
        """The chunk's values from the store, or ``run()`` written to it.

        Parameters
        ----------
        block : tuple of int
            The chunk's index along each dimension.
        run : callable
            Computes the chunk when the store has no verified copy.

        Returns
        -------
        numpy.ndarray
            The chunk's values.
        """
        values = self.get(block)
        if values is None:
            values = run()
            self.put(block, values)
        return values


@contextlib.contextmanager
def stored_run(path, description: dict):
    """Open the store ``path`` for a run function's call, or yield None without one.

    Chunks are keyed by their bounds (``chunk-<part>-<start>-<stop>``), so the fingerprint
    leaves the chunking out: a resumed run reuses every chunk of the same bounds, whatever
    its worker count. The lock is given back when the block ends, unless the run kept it
    for a lazy result (:meth:`ChunkStore.keep_lock`).

    Parameters
    ----------
    path : str, path-like or None
        The store directory (checked: :func:`gpuensembles.core.engine.check_store`).
    description : dict
        What determines the run's numbers (:func:`describe_call`).

    Yields
    ------
    ChunkStore or None
    """
    if path is None:
        yield None
        return
    opened = ChunkStore(path, description, "by bounds").open()
    try:
        yield opened
    finally:
        if not opened.lock_kept:
            opened.release()


def _layout(values) -> dict:
    """Shape and dtype of an array, or of each array of a dict, as a chunk's record keeps them."""
    if isinstance(values, dict):
        return {"shape": {k: list(np.shape(v)) for k, v in sorted(values.items())},
                "dtype": {k: str(np.asarray(v).dtype) for k, v in sorted(values.items())}}
    return {"shape": list(values.shape), "dtype": str(values.dtype)}


def _write_atomically(path: Path, raw: bytes):
    """Write ``raw`` to ``path`` through a temporary file, flushed to disk, then renamed."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    with open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
