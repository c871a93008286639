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


def fingerprint(plan, chunks: tuple) -> dict:
    """Everything that determines the numbers of a run, and its SHA-256.

    Parameters
    ----------
    plan : gpuensembles.core.engine.Plan
        The run.
    chunks : tuple of tuples
        The dask chunks the run is split into.

    Returns
    -------
    dict
        ``{"fingerprint": hex digest, "plan": the description it is the digest of}``.
    """
    spec = plan.kernel
    description = {
        "gpuensembles_version": version(),
        "kernel": f"{spec.factory.__module__}.{spec.factory.__qualname__}{tuple(spec.args)}",
        "dims": list(plan.dims),
        "shape": list(plan.shape),
        "parameters": hashlib.sha256(np.ascontiguousarray(plan.table()).tobytes()).hexdigest(),
        "coords": {d: np.asarray(plan.params[0][d].values).tolist() for d in plan.sweep_dims
                   if d in plan.params[0].coords},
        "seed": int(plan.seed),
        "max_steps": int(plan.max_steps),
        "chunks": [list(c) for c in chunks],
    }
    text = json.dumps(description, sort_keys=True)
    return {"fingerprint": hashlib.sha256(text.encode()).hexdigest(), "plan": description}


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

    Parameters
    ----------
    path : str or path-like
        Directory (created if missing).
    plan : gpuensembles.core.engine.Plan
        The run.
    chunks : tuple of tuples
        The dask chunks the run is split into (part of the fingerprint).
    """

    def __init__(self, path, plan, chunks: tuple):
        self.path = Path(path)
        self.chunks = chunks
        self.dims = plan.dims
        self.record = fingerprint(plan, chunks)
        self.fingerprint = self.record["fingerprint"]
        self.stored_items = 0  # values of the chunks already finished when the store was opened

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
        self.stored_items = sum(math.prod(self._block_shape(block))
                                for block in np.ndindex(*(len(c) for c in self.chunks))
                                if all(f.exists() for f in self._files(block)))
        return self

    def _block_shape(self, block: tuple) -> tuple:
        return tuple(int(c[i]) for c, i in zip(self.chunks, block))

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

    def _files(self, block: tuple) -> tuple:
        stem = "chunk-" + "-".join(str(int(i)) for i in block)
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
            if list(values.shape) != expected["shape"] or str(values.dtype) != expected["dtype"]:
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
        np.save(buffer, np.ascontiguousarray(values), allow_pickle=False)
        raw = buffer.getvalue()
        _write_atomically(data, raw)
        _write_atomically(record, json.dumps({
            "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw), "shape": list(values.shape),
            "dtype": str(values.dtype), "fingerprint": self.fingerprint, "block": [int(i) for i in block],
        }).encode())

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


def _write_atomically(path: Path, raw: bytes):
    """Write ``raw`` to ``path`` through a temporary file, flushed to disk, then renamed."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    with open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
