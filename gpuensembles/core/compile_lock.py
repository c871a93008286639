"""One compilation of a kernel at a time across processes that share a kernel cache.

Processes that start together (the workers of a dask cluster on one machine, pytest-xdist
workers, a CLI run beside a notebook) miss the same cache entries at once, and without a
lock each compiles every kernel itself: on a machine of few cores they slow each other
down while doing the same work. With it the first process to miss an entry compiles it
while the others wait, then load what it wrote.

The lock is ``flock`` on a file beside the entry, ``<entry>.lock``: the kernel lets it go
when its process ends, however it ends. A process waits at most :data:`WAIT` seconds, then
compiles the kernel itself. A process that already holds a lock (a kernel whose compilation
compiles another cached one) never waits for a second one, so two processes cannot wait for
each other. Where ``fcntl`` is missing (Windows) nothing is locked.
"""

import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover (not POSIX)
    fcntl = None

#: Longest wait, in seconds, for another process compiling the same kernel (a cold Ising CPU
#: kernel takes about 30 s on two idle cores, twice that on busy ones).
WAIT = 180.0
_POLL = 0.05
_held: dict = {}  # lock path -> open file, the locks this process holds
_guard = threading.Lock()


def holding() -> bool:
    """Whether this process holds a compile lock (it is compiling a cached kernel)."""
    with _guard:
        return bool(_held)


def acquire(entry: Path, wait: float) -> Path | None:
    """Lock the cache entry ``entry`` for compiling it, waiting up to ``wait`` seconds.

    Parameters
    ----------
    entry : pathlib.Path
        The cache entry's file.
    wait : float
        Seconds to wait for another process that holds the lock (0: do not wait).

    Returns
    -------
    pathlib.Path or None
        The lock's path (give it to :func:`release`), or ``None``: another process holds
        it still, this process holds it already, or the file system refuses locks.
    """
    path = entry.with_name(entry.name + ".lock")
    with _guard:
        if fcntl is None or path in _held:
            return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file = open(path, "ab")  # noqa: SIM115 (held open until release)
    except OSError:
        return None
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                file.close()
                return None
            time.sleep(_POLL)
            continue
        except OSError:  # a file system without locks
            file.close()
            return None
        with _guard:
            _held[path] = file
        return path


def release(path: Path | None):
    """Let the lock :func:`acquire` returned go (``None``: nothing to do)."""
    with _guard:
        file = _held.pop(path, None) if path is not None else None
    if file is not None:
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)
        file.close()
