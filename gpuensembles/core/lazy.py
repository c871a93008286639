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


class _DaskAsDuckArrays:
    """xarray's record of dask as a source of duck arrays, without importing ``dask.array``.

    xarray asks, for every new ``DataArray``, whether its data is a ``dask.array.Array``; to
    ask, it imports ``dask.array`` (with ``scipy.sparse``, ``numpy.f2py`` ...): 0.8-1.1 s of
    the first GPU call on an H200 host, for results that are never dask arrays. No data can
    be a dask array before ``dask.array`` is imported, so this record gives xarray the type
    once someone has imported it, and no type before. Version and module are read on demand.
    """

    available = True

    @property
    def type(self) -> tuple:
        module = sys.modules.get("dask.array")
        array = getattr(module, "Array", None)  # None while dask.array is half imported
        return () if array is None else (array,)

    @property
    def module(self):
        return importlib.import_module("dask")

    @property
    def version(self):
        from packaging.version import Version

        return Version(self.module.__version__)


def defer_dask_array_import() -> bool:
    """Let xarray build arrays without importing ``dask.array`` until someone else does.

    Enters :class:`_DaskAsDuckArrays` in xarray's cache of duck-array modules (the private
    ``xarray.namedarray.pycompat._cached_duck_array_modules``) if dask is installed, xarray
    has that cache and has not yet filled its entry for dask. Returns whether it did.
    """
    try:
        from xarray.namedarray import pycompat
    except ImportError:
        return False
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if not isinstance(cache, dict) or "dask" in cache or importlib.util.find_spec("dask") is None:
        return False
    cache["dask"] = _DaskAsDuckArrays()
    return True
