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
