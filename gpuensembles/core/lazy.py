"""Modules imported on first use, so that ``import gpuensembles`` stays short.

``scipy.sparse`` alone takes a tenth of a second or more to import; the families that need it
only at run time bind it with :func:`lazy_module` and pay for it at their first call.
"""

import importlib.util
import sys


def lazy_module(name: str):
    """The module ``name``, executed only when one of its attributes is first read.

    The standard library's recipe (:class:`importlib.util.LazyLoader`); a module imported
    already is returned as it is.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"scipy.sparse"``.

    Returns
    -------
    module
        The (lazy) module, also entered in ``sys.modules``.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


class _DeferredDuckArrays:
    """xarray's record of a source of duck arrays (dask, CuPy), without importing it.

    xarray asks, for every new ``DataArray``, whether its data is a ``dask.array.Array``,
    and in some operations whether it is a ``cupy.ndarray``; to ask, it imports
    ``dask.array`` (with ``scipy.sparse``, ``numpy.f2py`` ...: 0.8-1.1 s of the first GPU call
    on an H200 host) or CuPy (0.13 s there), for results that are never either. No data can be
    such an array before its module is imported, so this record gives xarray the type once
    someone has imported the module, and no type before. Module and version are read on demand.

    Parameters
    ----------
    package : str
        The package xarray names (``"dask"``, ``"cupy"``).
    array_module, array_name : str
        Where the array type lives (``"dask.array"``, ``"Array"``).
    """

    available = True

    def __init__(self, package: str, array_module: str, array_name: str):
        self._package, self._array_module, self._array_name = package, array_module, array_name

    @property
    def type(self) -> tuple:
        module = sys.modules.get(self._array_module)
        array = getattr(module, self._array_name, None)  # None while the module is half imported
        return () if array is None else (array,)

    @property
    def module(self):
        return importlib.import_module(self._package)

    @property
    def version(self):
        from packaging.version import Version

        return Version(self.module.__version__)


#: The duck-array sources xarray would import to check new arrays: (package, module, type).
DEFERRED_DUCK_ARRAYS = (("dask", "dask.array", "Array"), ("cupy", "cupy", "ndarray"))


def defer_duck_array_imports() -> tuple:
    """Let xarray build arrays without importing ``dask.array`` or CuPy until someone else does.

    Enters a :class:`_DeferredDuckArrays` in xarray's cache of duck-array modules (the private
    ``xarray.namedarray.pycompat._cached_duck_array_modules``) for each package of
    :data:`DEFERRED_DUCK_ARRAYS` that is installed and whose entry xarray has not yet filled,
    if xarray has that cache. Returns the packages it deferred.
    """
    try:
        from xarray.namedarray import pycompat
    except ImportError:
        return ()
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if not isinstance(cache, dict):
        return ()
    deferred = []
    for package, array_module, array_name in DEFERRED_DUCK_ARRAYS:
        if package not in cache and importlib.util.find_spec(package) is not None:
            cache[package] = _DeferredDuckArrays(package, array_module, array_name)
            deferred.append(package)
    return tuple(deferred)
