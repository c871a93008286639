"""Runs registered examples in a fresh process and prints JSON (for ``tests/core/test_kernel_cache.py``).

``python tests/cache_checks.py [--edited] [--cuda] [name ...]``: runs the ``example`` of each named
run function (all without names) on the CPU backend (``--cuda``: the GPU) and prints the top-level numba
compilations, the disk-cache hits and misses of the dispatchers that carry the package's
kernel cache, and a digest of every result. ``--edited`` makes the process see a different
package source (as after an edit). The cache directory comes from ``NUMBA_CACHE_DIR``.
"""

import gc
import hashlib
import json
import sys

from numba.core import event
from numba.core.dispatcher import Dispatcher

from gpuensembles.core import cache, registry


class _TopLevel(event.Listener):
    """Names of the functions numba compiles on their own (not as callees of another)."""

    def __init__(self):
        self.depth, self.names = 0, []

    def on_start(self, ev):
        if self.depth == 0:
            self.names.append(ev.data["dispatcher"].py_func.__qualname__)
        self.depth += 1

    def on_end(self, ev):
        self.depth -= 1


def digest(ds) -> str:
    """SHA-256 of the result's values, except wall-clock measurements (units of seconds)."""
    h = hashlib.sha256()
    for name in sorted(ds.data_vars):
        if ds[name].attrs.get("units") != "s":
            h.update(name.encode() + ds[name].values.tobytes())
    return h.hexdigest()


def main(argv):
    if argv and argv[0] == "--edited":
        argv = argv[1:]
        cache.package_digest = lambda: "an edited source"
    backend = "cuda" if argv and argv[0] == "--cuda" else "cpu"
    argv = argv[backend == "cuda":]
    listener = _TopLevel()
    results = {}
    with event.install_listener("numba:compile", listener):
        for entry in registry.registered():
            if not argv or entry.name in argv:
                results[entry.name] = digest(entry.function(**entry.example(), backend=backend))
    stats = {}
    for obj in gc.get_objects():
        if isinstance(obj, Dispatcher) and isinstance(obj._cache, cache.StableFunctionCache) and obj.overloads:
            name = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
            hits, misses = stats.get(name, (0, 0))
            stats[name] = (hits + sum(obj.stats.cache_hits.values()), misses + sum(obj.stats.cache_misses.values()))
    json.dump({"compiled": listener.names, "cache": stats, "results": results,
               "compile_seconds": cache.compile_seconds()}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
