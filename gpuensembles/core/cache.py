"""On-disk cache of compiled kernels, under a key that says what they were compiled from.

numba's own ``cache=True`` cannot serve the kernel templates: it keys a closure by its
pickled cell contents, and a pickled dispatcher carries a per-process id, so the kernels
that factories build (closures over a model's jit functions) miss in every new process.
Here a dispatcher passed to :func:`gpuensembles.core.backend.cached` gets a cache whose key
is, besides the argument types and the target (CPU model or GPU compute capability):

* a hash of every source file of the package and its version, so editing any physics,
  template or kernel source invalidates every kernel (a kernel calls into other modules);
* a stable description of the function: its module, qualified name and bytecode, its
  closure cells (jit functions described the same way, recursively; numbers, strings,
  numpy scalar types and tuples by value), the simple global values it reads, and for a
  function defined outside the package the hash of its own source file;
* the numba, numba-cuda, llvmlite and Python versions and the numba settings that change
  code (optimisation level, bounds checks, debug info).

A function that cannot be described this way (a closure over an arbitrary object, source
typed at a prompt) is compiled as before and not cached. Each entry is one file named by a
hash of its full key, which the file also holds and which is compared on loading, so two
keys never share a file and a kernel compiled from other source is never returned. Files
are written to a temporary name and renamed into place, so processes (dask workers) that
write at once leave whole files, and a process that misses an entry another process is
compiling waits for it and loads it (:mod:`gpuensembles.core.compile_lock`). The directory
is ``$NUMBA_CACHE_DIR/gpuensembles/<version>`` when ``NUMBA_CACHE_DIR`` is set, else
``$XDG_CACHE_HOME/gpuensembles/<version>`` (default ``~/.cache``); ``GPUENSEMBLES_CACHE=0``
turns the cache off.

Importing this module draws numba's function ids at random, so that entries written by
different processes never share symbol names (:func:`draw_function_ids_at_random` says why).

The same caches clock compilation: :func:`compile_seconds` is the time this process spent
compiling cached dispatchers (loading from the disk cache is not compilation).
"""

import functools
import hashlib
import inspect
import os
import pickle
import sys
import threading
import time
import types
import uuid
import warnings
from pathlib import Path

import numba
import numpy as np
from numba.core.caching import CompileResultCacheImpl, FunctionCache

from . import blas_probe, compile_lock

#: Bumped when the layout of cache entries changes (2: function ids drawn at random, so
#: that entries from different processes never share a symbol name).
FORMAT = 2
#: Set to 0 (or "off", "false", "no") to compile every kernel in every process.
DISABLE_VARIABLE = "GPUENSEMBLES_CACHE"
_PACKAGE = Path(__file__).resolve().parent.parent
_NUMBA_SETTINGS = ("OPT", "BOUNDSCHECK", "DEBUGINFO_DEFAULT", "CPU_NAME", "CPU_FEATURES", "FASTMATH")


class _RandomIds:
    """An endless iterator of random 63-bit ints from the operating system (fresh in forked children too)."""

    def __iter__(self):
        return self

    def __next__(self) -> int:
        return int.from_bytes(os.urandom(8), "little") >> 1


def draw_function_ids_at_random():
    """Make numba draw the id in each compiled function's symbol name at random, not count it from 1.

    With counted ids, a factory's closures (one kernel template over two models) compiled in
    two processes that ran the same steps before get the same symbol names; a process that
    loads both from the kernel cache then calls the first one's functions from the second,
    and silently computes the wrong model (numba issue 10486). 63 random bits make two equal
    names among a million compiled functions a chance of about 5 in 10^8. The ids only
    name functions; nothing in numba orders or counts them.
    """
    from numba.core.bytecode import FunctionIdentity

    if not isinstance(FunctionIdentity._unique_ids, _RandomIds):
        FunctionIdentity._unique_ids = _RandomIds()


draw_function_ids_at_random()


def cache_dir() -> Path | None:
    """The kernel cache directory, or ``None`` when ``GPUENSEMBLES_CACHE=0`` turns it off."""
    if os.environ.get(DISABLE_VARIABLE, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    if numba_dir:
        base = Path(numba_dir)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gpuensembles" / _version()


def _version() -> str:
    from .io import version

    return version()


@functools.cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 over the paths and contents of every ``.py`` file of the package."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class Unkeyable(TypeError):
    """A value that has no stable description (the dispatcher is then not cached)."""


_SCALARS = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))


def describe(value, _seen=None):
    """A description of ``value`` that is equal in every process exactly when it compiles the same.

    Parameters
    ----------
    value : object
        A closure cell, global value or target option of a jit function.

    Returns
    -------
    tuple
        Nested tuples of strings and numbers (their ``repr`` is stable).

    Raises
    ------
    Unkeyable
        For values without a stable description.
    """
    seen = set() if _seen is None else _seen
    if isinstance(value, _SCALARS):
        return (type(value).__name__, repr(value))
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, value.tobytes().hex())
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, np.ndarray) and value.size <= 4096:
        return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(value.tobytes()).hexdigest())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(describe(v, seen) for v in value)
    if isinstance(value, (set, frozenset)):
        return ("set",) + tuple(sorted((describe(v, seen) for v in value), key=repr))
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted(((repr(describe(k, seen)), describe(v, seen)) for k, v in value.items())))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, type):
        return ("type", value.__module__, value.__qualname__)
    if isinstance(value, numba.core.types.Type):
        return ("numba type", str(value))
    if isinstance(value, types.BuiltinFunctionType):
        return ("builtin", getattr(value, "__module__", None), value.__qualname__)
    defn = getattr(value, "_defn", None)  # numba intrinsics, by the function that generates their code
    if isinstance(defn, types.FunctionType):
        return ("intrinsic", _function(defn, seen))
    func = getattr(value, "py_func", value)  # numba dispatchers (CPU and CUDA) by their Python function
    if isinstance(func, types.FunctionType):
        return _function(func, seen)
    raise Unkeyable(f"no stable description for {type(value).__module__}.{type(value).__qualname__}")


def _code(code: types.CodeType):
    consts = tuple(_code(c) if isinstance(c, types.CodeType) else repr(describe(c)) for c in code.co_consts)
    return (code.co_name, hashlib.sha256(code.co_code).hexdigest(), consts, code.co_names)


def _function(func: types.FunctionType, seen: set):
    name = (func.__module__, func.__qualname__, func.__code__.co_firstlineno)
    if id(func) in seen:  # recursion through globals or cells
        return ("function", name)
    seen.add(id(func))
    source = inspect.getsourcefile(func)
    if source is None or not os.path.exists(source):
        raise Unkeyable(f"{func.__qualname__} has no source file")
    origin = "package" if Path(source).resolve().is_relative_to(_PACKAGE) else _file_digest(source)
    cells = tuple(describe(cell.cell_contents, seen) for cell in func.__closure__ or ())
    names = tuple(sorted(n for n in func.__code__.co_names if n in func.__globals__))
    global_values = tuple((n, describe(func.__globals__[n], seen)) for n in names)
    defaults = describe(func.__defaults__, seen)
    return ("function", name, origin, _code(func.__code__), cells, global_values, defaults)


def cache_key(dispatcher, extra=()) -> str:
    """The stable part of the key of ``dispatcher``'s cache entries (a hex digest).

    Parameters
    ----------
    dispatcher : numba dispatcher
        A CPU ``numba.jit`` or CUDA ``cuda.jit`` dispatcher.
    extra : tuple
        More to key on (e.g. the numba-cuda version and settings).

    Returns
    -------
    str
        SHA-256 hex digest.

    Raises
    ------
    Unkeyable
        When the function or its target options have no stable description.
    """
    import llvmlite

    settings = tuple((name, repr(getattr(numba.config, name, None))) for name in _NUMBA_SETTINGS)
    parts = (FORMAT, _version(), package_digest(), numba.__version__, llvmlite.__version__, sys.version,
             settings, describe(dispatcher.py_func), describe(dispatcher.targetoptions), extra)
    return hashlib.sha256(repr(parts).encode()).hexdigest()


# --------------------------------------------------------------------------- compile clock

_lock = threading.Lock()
_intervals: list = []


def _record_compile(start: float, end: float):
    with _lock:
        _intervals.append((start, end))


def compile_seconds() -> float:
    """Seconds this process has spent compiling dispatchers that carry a kernel cache.

    Nested compilations (a kernel compiling the functions it calls) count once: this is
    the length of the union of the compile intervals.
    """
    with _lock:
        spans = sorted(_intervals)
    total, reach = 0.0, -float("inf")
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


# --------------------------------------------------------------------------- the cache


class _Locator:
    """The parts of numba's cache locator that the caches use: one directory."""

    def __init__(self, directory, py_func):
        self._directory = directory
        self._py_file = inspect.getfile(py_func)

    def get_cache_path(self):
        return str(self._directory) if self._directory is not None else None

    def ensure_cache_path(self):
        if self._directory is None:
            raise OSError("the kernel cache is off")
        os.makedirs(self._directory, exist_ok=True)


class ImplInit:
    """``__init__`` of a numba ``CacheImpl`` subclass that uses our locator and file names."""

    def __init__(self, py_func, locator):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        qualname = py_func.__qualname__.replace("<", "").replace(">", "")
        self._filename_base = f"{py_func.__module__}.{qualname}"


class _CompileResultImpl(ImplInit, CompileResultCacheImpl):
    pass


class _KeyedFiles:
    """One file per full key, named by its hash and holding the key, written atomically."""

    def __init__(self, directory, base, dumps):
        self._directory = directory
        self._base = base
        self._dumps = dumps

    def path(self, key) -> Path:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
        return Path(self._directory) / f"{self._base}-{digest}.nbc"

    def load(self, key):
        try:
            stored_format, stored_key, payload = pickle.loads(self.path(key).read_bytes())
        except Exception:  # missing, half-written by a crashed process, or from another numba
            return None
        return payload if stored_format == FORMAT and stored_key == key else None

    def save(self, key, payload):
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.tmp.{uuid.uuid4().hex[:16]}")
        try:
            temporary.write_bytes(self._dumps((FORMAT, key, payload)))
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


class StableCacheMixin:
    """Overrides of numba's ``Cache`` and ``CUDACache``: the stable key, one file per key, a compile clock.

    The key is :func:`cache_key`, the store :class:`_KeyedFiles`, and every compilation
    (a miss, then the save that follows it) adds its interval to :func:`compile_seconds`.
    """

    def _setup(self, dispatcher, impl_class, dumps, extra=()):
        py_func = dispatcher.py_func
        directory = cache_dir()
        self._name = repr(py_func)
        self._py_func = py_func
        self._dispatcher = dispatcher
        self._extra = extra
        self._impl = impl_class(py_func, _Locator(directory, py_func))
        self._cache_path = str(directory) if directory is not None else None
        self._files = _KeyedFiles(directory, self._impl.filename_base, dumps)
        self._stable_key = None
        self._started = None
        self._lock = None  # the compile lock of the entry this cache is compiling
        self._enabled = directory is not None

    def stable_key(self):
        """:func:`cache_key` of the dispatcher, computed once; ``None`` (and the cache off) if unkeyable."""
        if self._stable_key is None and self._enabled:
            try:
                self._stable_key = cache_key(self._dispatcher, self._extra)
            except Unkeyable:
                self._enabled = False
        return self._stable_key

    def _index_key(self, sig, codegen):
        return (sig, codegen.magic_tuple(), self.stable_key())

    def _rebuilt(self, key, target_context):
        payload = self._files.load(key)
        if payload is None:
            return None
        try:
            return self._impl.rebuild(target_context, payload)
        except Exception:  # an entry this numba cannot rebuild: compile afresh
            return None

    def _load_overload(self, sig, target_context):
        data = None
        compile_lock.release(self._lock)  # held still only if the last compilation failed
        self._lock = None
        if self._enabled and self.stable_key() is not None:
            key = self._index_key(sig, target_context.codegen())
            data = self._rebuilt(key, target_context)
            if data is None:  # compile it, unless another process is compiling it: then load that
                self._lock = compile_lock.acquire(self._files.path(key),
                                                  0.0 if compile_lock.holding() else compile_lock.WAIT)
                data = self._rebuilt(key, target_context) if self._lock is not None else None
        if data is None:
            self._started = time.perf_counter()
        else:
            compile_lock.release(self._lock)
            self._lock = None
        return data

    def _save_overload(self, sig, data):
        if self._started is not None:
            _record_compile(self._started, time.perf_counter())
            self._started = None
        try:
            self._save_entry(sig, data)
        finally:
            compile_lock.release(self._lock)  # the entry is written: processes waiting for it load it
            self._lock = None

    def _save_entry(self, sig, data):
        if not self._enabled or self.stable_key() is None or not self._impl.check_cachable(data):
            return
        try:
            self._files.save(self._index_key(sig, data.codegen), self._impl.reduce(data))
        except OSError as err:
            self._enabled = False
            warnings.warn(f"gpuensembles could not write its kernel cache ({err}); set {DISABLE_VARIABLE}=0 "
                          "to stop trying", RuntimeWarning, stacklevel=2)

    def flush(self):
        """Forget nothing: entries are keyed by their source, so stale ones are never loaded."""


class StableFunctionCache(StableCacheMixin, FunctionCache):
    """The CPU ``FunctionCache`` of numba under the stable key of :mod:`gpuensembles.core.cache`."""

    def __init__(self, dispatcher):
        from numba.core.serialize import dumps

        self._setup(dispatcher, _CompileResultImpl, dumps)

    def load_overload(self, sig, target_context):
        """Load a compiled overload; the first of a process loads numba's array math without the BLAS probe.

        The first load of a process loads the CPU target's registries, its array math among them,
        whose import-time BLAS probe would load all of :mod:`scipy.linalg` (see
        :mod:`gpuensembles.core.blas_probe`).
        """
        blas_probe.cpu_array_math()
        return super().load_overload(sig, target_context)
