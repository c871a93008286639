"""Load numba's array-math modules without their BLAS probe, which imports all of scipy.linalg.

numba (CPU target) and numba-cuda each load an array-math module the first time their target
loads in a process, also when every kernel comes from the on-disk cache; at import that module
probes for a BLAS by importing ``scipy.linalg.cython_blas``, which loads all of
:mod:`scipy.linalg`: 0.1-0.2 s on a CI machine, 0.55-0.7 s of the first GPU call on an H200
machine. The probe only decides whether ``np.convolve`` and ``np.correlate`` in compiled code go
through ``np.dot``; no kernel of this package uses either. For that one import the probe
(``ensure_blas`` of the target's ``linalg`` module) reports no BLAS; then it is restored, and the
module's answer is set to what the probe would have said where SciPy is installed (without
importing it): compiled ``np.convolve`` and ``np.correlate`` in the user's own code go through
``np.dot`` as before, which loads :mod:`scipy.linalg` when first typed. Where it is already
loaded the probe is free and left alone, as it is in a numba laid out differently.
"""

import importlib
import importlib.util
import sys
import threading

_LOCK = threading.Lock()


def import_without_probe(linalg_name: str, arraymath_name: str):
    """Import ``arraymath_name`` with ``linalg_name.ensure_blas`` reporting no BLAS meanwhile."""
    if arraymath_name in sys.modules:  # every later load of a kernel: no lock
        return
    with _LOCK:
        if "scipy.linalg" in sys.modules or arraymath_name in sys.modules:
            return
        try:
            linalg = importlib.import_module(linalg_name)
        except ImportError:
            return
        probe = getattr(linalg, "ensure_blas", None)
        if probe is None:
            return

        def no_blas():
            raise ImportError("gpuensembles: the BLAS probe is skipped while numba's array math loads")

        linalg.ensure_blas = no_blas
        try:
            arraymath = importlib.import_module(arraymath_name)
        finally:
            linalg.ensure_blas = probe
        if getattr(arraymath, "ensure_blas", None) is no_blas:
            arraymath.ensure_blas = probe
        if hasattr(arraymath, "_HAVE_BLAS"):
            arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


def cpu_array_math():
    """Load numba's CPU array math (``numba.np.arraymath``) without the probe."""
    import_without_probe("numba.np.linalg", "numba.np.arraymath")


def cuda_array_math():
    """Load numba-cuda's array math (``numba.cuda.np.arraymath``) without the probe."""
    import_without_probe("numba.cuda.np.linalg", "numba.cuda.np.arraymath")
