"""The backend module: choice of target, and the numpy compatibility steps numba-cuda needs."""

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from gpuensembles.core import backend

from .. import requires_gpu


def test_numpy_without_row_stack_gets_the_alias_back(monkeypatch):
    # numba-cuda <= 0.30.4 registers an overload of np.row_stack when its target loads;
    # numpy >= 2.5 removed the alias, and every kernel then fails to compile.
    if hasattr(np, "row_stack"):
        monkeypatch.delattr(np, "row_stack")
    backend._patch_numpy_for_numba_cuda()
    assert np.row_stack is np.vstack  # noqa: NPY201  (the alias under test)


def test_an_existing_row_stack_is_left_alone(monkeypatch):
    sentinel = object()
    monkeypatch.setattr(np, "row_stack", sentinel, raising=False)
    backend._patch_numpy_for_numba_cuda()
    assert np.row_stack is sentinel  # noqa: NPY201


@pytest.mark.parametrize("name", ["gpu", "", "CPU", None])
def test_unknown_backend_names_the_parameter(name):
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.resolve(name)


def test_a_template_module_binds_cuda_once():
    # Under the CUDA simulator a running kernel's module holds the fake module under ``cuda``;
    # a second template built in that module from another thread (an eager rates run's two
    # groups) put the real one back, and the kernel failed on ``cuda.atomic``.
    running = object()
    namespace = {"cuda": running}
    backend.bind_cuda(namespace)
    assert namespace["cuda"] is running


def test_cpu_needs_no_gpu():
    assert backend.resolve("cpu") == "cpu"
    assert "CPU" in backend.device_name("cpu")


def _fresh(code: str, **env) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "NUMBA_CUDA_DRIVER")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**environ, **env},
                          timeout=120, check=True)
    return done.stdout.split()


def test_auto_on_a_machine_without_a_cuda_driver_does_not_import_numba_cuda():
    # half a second of the first call where no GPU can be: numba.cuda is imported only where a
    # driver library is (and then asked whether a GPU answers)
    code = ("import sys; from gpuensembles.core import backend as b; "
            "print(b.cuda_driver_installed(), b.resolve('auto'), 'numba.cuda' in sys.modules)")
    installed, resolved, imported = _fresh(code)
    assert imported == installed and (resolved == "cpu" or installed == "True")
    # a driver named by NUMBA_CUDA_DRIVER counts as installed: numba then decides
    assert _fresh(code, NUMBA_CUDA_DRIVER="/nowhere/libcuda.so")[::2] == ["True", "True"]


HINT = "Grid size 3 will likely result in GPU under-utilization due to low occupancy."


def test_the_occupancy_hint_is_dropped_in_launch_sites_only_in_their_own_thread():
    # Chunks on dask's threads launch at once. A process-wide catch_warnings in one thread's
    # launch site would also drop the hint of a user's own launch in another thread, and is
    # undone for the other launch sites when the first thread leaves its own.
    from numba.cuda.core.errors import NumbaPerformanceWarning

    backend.cuda_module()
    from numba.cuda import dispatcher  # where numba-cuda raises the hint

    inside, user_done = threading.Event(), threading.Event()

    def package_launch_site():
        with backend.launching("test"):
            inside.set()
            user_done.wait()
            dispatcher.warn(NumbaPerformanceWarning(HINT))
            dispatcher.warn(UserWarning("not a hint"))

    def user_launch():
        inside.wait()
        dispatcher.warn(NumbaPerformanceWarning(HINT))
        user_done.set()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=package_launch_site), threading.Thread(target=user_launch)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    messages = [str(w.message) for w in seen]
    assert sum("Grid size" in m for m in messages) == 1  # the user's, not the package's
    assert sum(m == "not a hint" for m in messages) == 1
    assert all(w.filename == __file__ for w in seen)  # attributed to the caller of warn, as unwrapped


NUMPY_2_5 = """
import warnings
import numba
import numpy as np

plain = np.timedelta64


class GenericUnitWarns(plain):  # numpy >= 2.5: a timedelta without a unit is deprecated
    def __new__(cls, *args):
        if len(args) == 1 and isinstance(args[0], str):
            warnings.warn("The 'generic' unit for NumPy timedelta is deprecated, and will raise an error in the "
                          "future.", DeprecationWarning, stacklevel=2)
        return plain(*args)


np.timedelta64 = GenericUnitWarns
warnings.simplefilter("error", DeprecationWarning)
"""


@pytest.mark.parametrize("importer, warns", [("from numba import cuda", True),
                                             ("from gpuensembles.core import backend; backend.cuda_module()", False)])
def test_numba_cuda_import_warns_nothing_under_numpy_2_5(importer, warns):
    # numba-cuda <= 0.30.4 builds np.timedelta64("nat") when imported; numpy >= 2.5 deprecates
    # that, and the package's import of numba.cuda must not pass the warning on.
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(Path(__file__).parent.parent.parent)
    proc = subprocess.run([sys.executable, "-c", NUMPY_2_5 + importer], env=env, capture_output=True, text=True,
                          timeout=300)
    assert (proc.returncode != 0 and "DeprecationWarning" in proc.stderr) == warns, proc.stderr[-2000:]


PROBE = """
import sys
from numba.cuda.np import arraymath, linalg
print(int("scipy.linalg" in sys.modules), int(arraymath._HAVE_BLAS), int(arraymath.ensure_blas is linalg.ensure_blas),
      linalg.ensure_blas.__module__)
"""


@pytest.mark.parametrize("before, expected", [
    ("from numba import cuda", "1 1 1 numba.cuda.np.linalg"),  # numba-cuda alone loads scipy.linalg
    ("from gpuensembles.core import backend; backend.cuda_module()", "0 1 1 numba.cuda.np.linalg"),
    ("import scipy.linalg; from gpuensembles.core import backend; backend.cuda_module()", "1 1 1 numba.cuda.np.linalg"),
])
def test_numba_cuda_array_math_loads_without_scipy_linalg(before, expected):
    # numba-cuda's array math probes for a BLAS by importing scipy.linalg (0.55-0.7 s of a first
    # GPU call); the package skips that probe for the one import and restores it and its answer
    # (SciPy is installed), and leaves it alone where scipy.linalg is loaded already.
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(Path(__file__).parent.parent.parent)
    proc = subprocess.run([sys.executable, "-c", before + PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == expected


CPU_PROBE = """
import sys
import numba
import numpy as np
from numba.np import arraymath, linalg
loaded = int("scipy.linalg" in sys.modules)
dot = numba.njit(lambda a, b: np.dot(a, b))(np.ones(3), np.ones(3))  # BLAS still serves np.dot
print(loaded, int(arraymath._HAVE_BLAS), int(arraymath.ensure_blas is linalg.ensure_blas), int(dot))
"""


@pytest.mark.parametrize("before, expected", [
    ("import numba; numba.njit(lambda x: x)(1)\n", "1 1 1 3"),  # numba's CPU target alone loads scipy.linalg
    ("import gpuensembles as ge\nge.escape_times(damping=0.05, gamma=0.5, D=0.01, h=0.004, realizations=4, seed=1, "
     "backend='cpu', progress=False)\n", "0 1 1 3"),  # the README's job
])
def test_numba_cpu_array_math_loads_without_scipy_linalg(before, expected):
    # the CPU target's array math probes for a BLAS the same way, at the first compile or cache
    # load of a process: a CPU run skips it as a GPU run does, and the module still says there
    # is a BLAS (np.convolve of user code takes np.dot, as without the package), which np.dot finds
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(Path(__file__).parent.parent.parent)
    proc = subprocess.run([sys.executable, "-c", before + CPU_PROBE], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == expected


def test_freeze_makes_read_only_and_refuses_views():
    frozen = backend.freeze(np.arange(4.0))
    assert not frozen.flags.writeable
    with pytest.raises(ValueError):
        frozen[0] = 1.0
    with pytest.raises(ValueError, match="view"):
        backend.freeze(np.arange(4.0)[1:])  # its base could still change


@pytest.mark.gpu
@requires_gpu
def test_prepared_launch_keeps_its_arrays_alive():
    # Every launch uses its arguments' device memory: an array only the prepared launch refers
    # to must live as long as it does (it did not: freed, its memory went to the next array, and
    # the persistent Ising kernel's task counters were overwritten under it).
    import gc
    import weakref

    cuda = backend.cuda_module()

    @cuda.jit
    def add_one(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    stream = cuda.stream()
    array = cuda.to_device(np.zeros(64, np.int64))
    alive = weakref.ref(array)
    go = backend.prepared_launch(add_one, 1, 64, stream, (array,), varying=())
    assert go.prepared
    del array
    gc.collect()
    assert alive() is not None
    go()
    go()
    stream.synchronize()
    np.testing.assert_array_equal(alive().copy_to_host(), 2)
