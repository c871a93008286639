"""Resumable runs: a directory holding each finished chunk as its own NetCDF file.

``store="run_dir"`` on a run function writes every chunk it finishes to
``run_dir/chunk-<i>-<j>-....nc`` (atomically: a file appears only once complete) and
skips the chunks already there when the same call runs again, so a run killed at any
moment resumes where it stopped. Because every random number is a function of (seed,
stream, realization, draw), a resumed run is bit-identical to an uninterrupted one.

``run_dir/plan.json`` holds the plan's fingerprint (package version, kernel, parameter
values, dimensions, realizations, seed, step limit, chunking); a call whose plan differs
is refused instead of mixing chunks of two different runs. Workers of a distributed
cluster must see the directory (a shared file system).
"""

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import xarray as xr

from .io import version


def fingerprint(plan, chunks: tuple) -> dict:
    """Everything that determines the numbers of a run, and its SHA-256."""
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


def recorded_seed(path):
    """The seed of the run kept in store ``path``, or None (so a rerun without ``seed=`` resumes)."""
    meta = Path(path) / "plan.json"
    if not meta.exists():
        return None
    return json.loads(meta.read_text())["plan"]["seed"]


class ChunkStore:
    """The chunks of one plan and chunking, kept in ``path``.

    Parameters
    ----------
    path : str or path-like
        Directory (created if missing).
    plan : gpuensembles.engine.Plan
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

    def open(self):
        """Create the store, or check that it holds this plan; raise ValueError if not."""
        self.path.mkdir(parents=True, exist_ok=True)
        meta = self.path / "plan.json"
        if meta.exists():
            stored = json.loads(meta.read_text())
            if stored.get("fingerprint") != self.fingerprint:
                differing = sorted(k for k in self.record["plan"]
                                   if stored.get("plan", {}).get(k) != self.record["plan"][k])
                raise ValueError(
                    f"store {str(self.path)!r} holds chunks of a different run (differs in: {', '.join(differing)}); "
                    "use a new store directory, or delete this one to start over"
                )
            return self
        tmp = meta.with_name(f"plan.json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.record, indent=1, sort_keys=True))
        os.replace(tmp, meta)
        return self

    def _file(self, block: tuple) -> Path:
        return self.path / ("chunk-" + "-".join(str(int(i)) for i in block) + ".nc")

    def get(self, block: tuple):
        """The values of a finished chunk, or None."""
        path = self._file(block)
        if not path.exists():
            return None
        with xr.open_dataset(path, engine="netcdf4") as ds:
            if ds.attrs.get("fingerprint") != self.fingerprint:
                raise ValueError(f"{path} belongs to another run (fingerprint mismatch); delete the store")
            return ds["raw"].values

    def put(self, block: tuple, values: np.ndarray):
        """Write a finished chunk atomically (a killed writer leaves only a ``.tmp`` file)."""
        path = self._file(block)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.{id(values)}.tmp")
        ds = xr.Dataset({"raw": (self.dims, values)}, attrs={"fingerprint": self.fingerprint, "block": str(block)})
        ds.to_netcdf(tmp, engine="netcdf4")
        os.replace(tmp, path)

    def get_or_run(self, block: tuple, run):
        """The chunk's values from the store, or ``run()`` written to it."""
        values = self.get(block)
        if values is None:
            values = run()
            self.put(block, values)
        return values
