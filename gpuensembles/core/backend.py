"""Compute targets: CPU (parallel numba) and CUDA (numba-cuda).

This is the only module that imports ``numba.cuda``, and it does so lazily, inside
functions: importing :mod:`gpuensembles` never initialises the CUDA driver nor creates
a context (dask-cuda workers and ``fork`` rely on that). Kernel modules get the module
through :func:`bind_cuda`.

The generic kernel *templates* live in :mod:`gpuensembles.core.templates`, one module
per kind of ensemble; a model family supplies allocation-free scalar ``numba.jit``
functions and a template wraps them once as a ``@cuda.jit`` kernel and once as a
``@njit(parallel=True)`` loop, so no physics is ever written twice.
"""

import contextlib
import copy
import functools
import os
import re
import sys
import threading
import warnings
import weakref
from typing import Literal, get_args

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

from . import blas_probe
from .cache import ImplInit, StableCacheMixin, StableFunctionCache

#: Where kernels run: ``auto`` picks CUDA when a GPU is visible, else the CPU.
Backend = Literal["auto", "cuda", "cpu"]
BACKENDS = get_args(Backend)
#: Progress bar: ``auto`` shows it when stderr is a terminal.
Progress = Literal["auto"] | bool


def _patch_numpy_for_numba_cuda():
    """Let numba-cuda <= 0.30.4 compile kernels under numpy >= 2.5.

    numba-cuda registers an overload for ``np.row_stack`` when its CUDA target first
    loads; numpy 2.5 removed that alias of ``np.vstack`` and the registration raises
    ``AttributeError``, so *every* kernel fails to compile. Restoring the alias (it was
    exactly ``np.vstack``) is harmless and only done where it is missing.
    """
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # noqa: NPY201  (the removed alias itself is what numba-cuda needs)


def _load_cuda_array_math_without_blas_probe():
    """numba-cuda's array math without its BLAS probe (:mod:`gpuensembles.core.blas_probe`);
    left to load as it does under the CUDA simulator."""
    if not simulating_cuda():
        blas_probe.cuda_array_math()


cuda = None
"""``numba.cuda`` once `cuda_module` has imported it. A module global, not a closure variable,
because the CUDA simulator swaps the ``cuda`` global of a kernel for its fake module."""


def cuda_module():
    """Import (lazily, once) and return ``numba.cuda``, applying the numpy compatibility steps."""
    global cuda
    if cuda is None:
        _patch_numpy_for_numba_cuda()
        with warnings.catch_warnings():
            # numba-cuda <= 0.30.4 builds a NaT with numpy's generic timedelta unit when it is
            # imported (numba.cuda.np.npdatetime_helpers), which numpy >= 2.5 deprecates; the
            # value is right, and numba itself has since moved to an explicit unit.
            warnings.filterwarnings("ignore", message="The 'generic' unit for NumPy timedelta is deprecated",
                                    category=DeprecationWarning)
            from numba import cuda as numba_cuda

        _filter_occupancy_hint()
        _load_cuda_array_math_without_blas_probe()
        if simulating_cuda():
            _simulated_launches_one_at_a_time(numba_cuda)
        else:
            _one_module_load_at_a_time()
        cuda = numba_cuda
    return cuda


#: Held while a kernel's module is loaded into a context (real GPU), or while a simulated kernel runs.
_LOAD_LOCK = threading.RLock()


def _one_module_load_at_a_time():
    """Make the first launch of a kernel in a process safe from any number of threads at once.

    numba-cuda (0.30) loads a compiled kernel's module into the context at its first launch
    (``CUDACodeLibrary.get_cufunc``) without a lock: two threads that launch the same kernel
    for the first time (two chunks of a dask-cuda worker with two threads) both load it, and
    the second fails with ``AssertionError: key already in dictionary: <CUlibrary ...>``. A
    loaded kernel is looked up without the lock; a load takes it and looks again. Compilation
    is already serialised by numba's compiler lock; the on-disk cache across processes by
    :mod:`gpuensembles.core.compile_lock`.
    """
    try:
        from numba.cuda.codegen import CUDACodeLibrary
        from numba.cuda.cudadrv import devices
    except ImportError:  # pragma: no cover (a numba-cuda laid out differently)
        return
    load = CUDACodeLibrary.get_cufunc
    if getattr(load, "one_at_a_time", False):
        return

    @functools.wraps(load)
    def get_cufunc(self):
        loaded = getattr(self, "_cufunc_cache", {}).get(devices.get_context().device.id)
        if loaded:
            return loaded
        with _LOAD_LOCK:
            return load(self)

    get_cufunc.one_at_a_time = True
    CUDACodeLibrary.get_cufunc = get_cufunc


def _simulated_launches_one_at_a_time(numba_cuda):
    """Let threads launch simulated kernels at once: the CUDA simulator runs them one at a time.

    The simulator swaps every global bound to ``numba.cuda`` in a kernel's module for a fake
    module that holds the launch's grid while the kernel runs, and a launch configures the
    kernel object itself (``kernel[grid, block]``). Two threads launching kernels of one
    module at once would see each other's grid, and host code beside the kernel (the
    templates' ``cuda.device_array``) would find the fake module. Here a launch configures a
    copy of the kernel, simulated launches take :data:`_LOAD_LOCK` in turn, and the fake
    module passes what it lacks to the real one.
    """
    from numba.cuda.simulator import kernel as simulated
    from numba.cuda.simulator import kernelapi

    kernel_class = simulated.FakeCUDAKernel
    if getattr(kernel_class, "one_at_a_time", False):
        return
    call, configure = kernel_class.__call__, kernel_class.__getitem__

    def __call__(self, *args):
        if self._device:  # a device function, called from the kernel that holds the lock
            return call(self, *args)
        with _LOAD_LOCK:
            return call(self, *args)

    def __getitem__(self, configuration):
        return configure(copy.copy(self), configuration)

    def __getattr__(self, name):
        return getattr(numba_cuda, name)

    kernel_class.__call__, kernel_class.__getitem__ = __call__, __getitem__
    kernel_class.one_at_a_time = True
    kernelapi.FakeCUDAModule.__getattr__ = __getattr__


def bind_cuda(namespace: dict):
    """Bind ``numba.cuda`` to the name ``cuda`` in a template module's globals.

    Kernels must see ``cuda`` as a module global (not a closure variable): the CUDA
    simulator swaps that global for its fake module. It is bound once: a template built
    while another thread's simulated kernel of the same module runs would otherwise put the
    real module back under that kernel (which then lacks ``cuda.atomic``).
    """
    if namespace.get("cuda") is None:
        namespace["cuda"] = cuda_module()


@functools.cache
def device_fence():
    """A device function ``fence()``: PTX's ``fence.acq_rel.gpu``, the lighter device-wide fence.

    numba-cuda's ``cuda.threadfence`` is ``fence.sc.gpu`` (sequentially consistent,
    ``MEMBAR.SC``). Blocks that hand work to one another through atomic counters need only
    ``acq_rel`` (``MEMBAR.ALL``): a release (fence, then the atomic that counts the work done)
    and an acquire (the atomic that sees the count, then the fence), the pattern of CUDA's own
    grid barrier. Under the CUDA simulator, whose blocks run one after another, it does nothing
    (as the simulator's ``threadfence``).

    Returns
    -------
    callable
        ``fence()``, to call from CUDA kernels and device functions.
    """
    cuda = cuda_module()
    if simulating_cuda():
        def fence():
            """Nothing to order: the simulator runs one block at a time."""

        return fence
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    @intrinsic
    def acq_rel_fence(typingctx):
        """``fence.acq_rel.gpu`` (inline PTX, kept in place: it has side effects)."""
        def codegen(context, builder, signature, args):
            """Emit the fence."""
            asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "fence.acq_rel.gpu;", "~{memory}",
                               side_effect=True)
            builder.call(asm, [])

        return numba.types.void(), codegen

    @cuda.jit(device=True)
    def fence():
        """Order this thread's memory operations before and after it, device-wide (acquire-release)."""
        acq_rel_fence()

    return fence


@functools.cache
def device_product():
    """A device function ``product(a, b)``: ``a * b`` (float64) rounded on its own.

    NVVM fuses a product and the sum it feeds into one FMA, rounded once, where the CPU rounds
    twice; a product from ``dmul_rn`` is never fused, so sums of products agree bit for bit
    with the CPU's. Under the simulator (Python floats) it is the plain product.

    Returns
    -------
    callable
        ``product(a, b)``, to call from CUDA device functions.
    """
    cuda = cuda_module()
    if simulating_cuda():
        @cuda.jit(device=True)
        def product(a, b):
            return a * b

        return product
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def product(a, b):
        """``a * b``, never fused into an FMA."""
        return libdevice.dmul_rn(a, b)

    return product


@functools.cache
def device_byte_perm():
    """A device function ``byte_perm(x, y, selector)``: PTX's ``prmt.b32``.

    As CUDA's ``__byte_perm``: byte ``i`` of the result is byte ``selector >> 4 i & 7`` of the
    eight bytes of ``y:x``, as uint32. One instruction where shifts and masks take four.

    Returns
    -------
    callable
        ``byte_perm(x, y, selector)``, to call from CUDA device functions (not under the simulator).
    """
    cuda = cuda_module()
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def byte_perm(x, y, selector):
        """The bytes of ``y:x`` that ``selector`` picks (uint32)."""
        return numba.uint32(libdevice.byte_perm(numba.int32(x), numba.int32(y), numba.int32(selector)))

    return byte_perm


def simulating_cuda() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """True if a usable CUDA GPU (or the CUDA simulator) is visible.

    Initialises the driver (``cuInit``) on first call but creates no context. Where no CUDA
    driver library is installed, answers without importing ``numba.cuda`` (half a second).
    """
    if not simulating_cuda() and not cuda_driver_installed():
        return False
    try:
        return bool(cuda_module().is_available())
    except Exception:  # no driver, no libcuda, broken install: no GPU for us
        return False


#: Where CUDA drivers install ``libcuda.so`` outside the loader's path (WSL, some clusters).
DRIVER_DIRECTORIES = ("/usr/lib/wsl/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                      "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")


def cuda_driver_installed() -> bool:
    """Whether a CUDA driver library could be loaded (nothing of numba is loaded to find out).

    True when ``NUMBA_CUDA_DRIVER`` is set, or ``libcuda`` (Linux) or ``nvcuda.dll`` (Windows)
    loads or lies in `DRIVER_DIRECTORIES`.

    Returns
    -------
    bool
        False only where no CUDA GPU can be used.
    """
    import ctypes

    if os.environ.get("NUMBA_CUDA_DRIVER"):
        return True
    names = {"linux": ("libcuda.so.1", "libcuda.so"), "win32": ("nvcuda.dll",)}.get(sys.platform, ())
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return sys.platform == "linux" and any(os.path.exists(os.path.join(d, "libcuda.so.1")) for d in DRIVER_DIRECTORIES)


def cpu_threading_layer() -> str:
    """The threading layer numba's parallel CPU kernels use in this process (``"tbb"``, ``"omp"`` or ``"workqueue"``).

    Starts numba's thread pool (no CUDA): the layer is chosen when the first parallel kernel
    would run. ``workqueue``, the fallback where neither TBB nor OpenMP is found, aborts the
    process when two threads run parallel kernels at once.
    """
    from numba.np.ufunc import parallel

    parallel._launch_threads()
    return numba.threading_layer()


def gpu_count() -> int:
    """Number of real CUDA GPUs visible (0 under the simulator); creates no context."""
    if simulating_cuda() or not cuda_available():
        return 0
    return len(cuda_module().gpus)


def resolve(backend: str) -> str:
    """Turn ``"auto" | "cuda" | "cpu"`` into the backend that will run.

    Raises
    ------
    ValueError
        For an unknown name, or ``"cuda"`` without a usable GPU.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if backend == "cuda":
        raise ValueError(
            "backend='cuda' was requested but no usable CUDA GPU is visible "
            "(install the 'cuda' extra and check `nvidia-smi`); use backend='cpu' or 'auto'"
        )
    return "cpu"


#: The ``device`` of a lazy result until it is computed (the command line then names the
#: devices that ran it).
PER_WORKER_DEVICE = "resolved on each dask worker"


def device_name(backend: str) -> str:
    """Human-readable name of the device a resolved backend runs on.

    For ``"cuda"``: the device of this thread's context, else the one a context would be made
    on (the first visible). It creates no context: a dask client names the device of its
    estimates without holding one (``get_current_device`` would make it).
    """
    if backend == "cuda":
        if simulating_cuda():
            return "CUDA simulator"
        gpus = cuda_module().gpus
        name = (gpus.current or gpus[0]).name
        return name.decode() if isinstance(name, bytes) else str(name)
    return f"CPU ({numba.config.NUMBA_NUM_THREADS} threads, numba {numba.__version__})"


#: Register caps (``max_registers``) of kernels whose occupancy a cap raises by more than
#: its spills cost, by kernel name; measured on an H200 (see docs/performance.rst).
#: ``half_sweep``: the Ising half-sweep kernels; the multi-spin one (persistent, blocks of 128
#: threads) takes ~92 registers uncapped, 5 blocks a multiprocessor (2550 flips/ns on a
#: 16384^2 lattice); 72 fits 7 (2897-2938), 64 fits 8 but spills more (2845), 76 fits 6 (2792).
#: The int8 kernels need fewer than 72. ``counted_sweeps``: the multi-spin one where it counts
#: the measurements of a strips lattice as it sweeps (H100, 16384^2, measuring every sweep:
#: 2785 flips/ns at 80 registers, 6 blocks a multiprocessor, no spills; 2592 at 84, 2689 at
#: 91, 2371 uncapped at 126; the kernel that counts nothing ran 3145).
REGISTER_LIMITS: dict = {"mean_field": 64, "half_sweep": 72, "counted_sweeps": 80}


#: Environment variable overriding :data:`REGISTER_LIMITS` for benchmarks: ``name=N,name=N``
#: (``N = 0``: no cap). Read when a kernel is built (the cap is part of its cache key).
REGISTER_LIMITS_VARIABLE = "GPUENSEMBLES_REGISTER_LIMITS"


def register_limits() -> dict:
    """:data:`REGISTER_LIMITS` updated by ``GPUENSEMBLES_REGISTER_LIMITS`` (e.g. ``mean_field=96``)."""
    limits = dict(REGISTER_LIMITS)
    for item in filter(None, os.environ.get(REGISTER_LIMITS_VARIABLE, "").replace(" ", "").split(",")):
        name, _, value = item.partition("=")
        if not name or not value.isdigit() or (int(value) and not 16 <= int(value) <= 255):
            raise ValueError(f"{REGISTER_LIMITS_VARIABLE} must read name=N,... with N = 0 (no cap) or 16..255, "
                             f"got {item!r}")
        limits[name] = int(value)
    return limits


def kernel_options(name: str) -> dict:
    """Extra ``cuda.jit`` options of kernel ``name``: its register cap, if it has one.

    The CUDA simulator takes no such options, so it gets none.

    Parameters
    ----------
    name : str
        The kernel's key in :data:`REGISTER_LIMITS`.

    Returns
    -------
    dict
        Keyword arguments for ``cuda.jit``.
    """
    limit = register_limits().get(name)
    if not limit or simulating_cuda():
        return {}
    return {"max_registers": int(limit)}


def kernel_variant(variable: str, variants) -> str:
    """The kernel variant that the environment variable ``variable`` names.

    Parameters
    ----------
    variable : str
        Its name (``GPUENSEMBLES_..._KERNEL``).
    variants : collection of str
        The variants there are, ``"default"`` among them.

    Returns
    -------
    str
        ``"default"`` when the variable is unset or empty.

    Raises
    ------
    ValueError
        Naming the variable and the variants, for any other name.
    """
    name = os.environ.get(variable, "") or "default"
    if name not in variants:
        raise ValueError(f"{variable} must be one of {list(variants)}, got {name!r}")
    return name


def build_for(backend, kernel, cpu_template, cuda_template):
    """Apply the template of a resolved backend to ``kernel``."""
    if backend == "cpu":
        return cpu_template(kernel)
    if backend == "cuda":
        return cuda_template(kernel)
    raise ValueError(f"backend must be 'cpu' or 'cuda' once resolved, got {backend!r}")


@numba.njit
def identity(array):
    """``array`` itself (a kernel argument that needs no unwrapping on a real GPU)."""
    return array


def simulator_copy(array):
    """A host copy of a CUDA-simulator array, which CPU-jitted functions can unbox."""
    # The simulator hands kernels wrapped arrays that CPU-jitted functions cannot unbox.
    return array.copy_to_host()


def simulator_view(array):
    """The numpy array behind a CUDA-simulator argument (writes land in the device array)."""
    # The numpy array behind a simulator kernel argument: CPU-jitted functions can
    # unbox it, and what they write lands in the device array.
    return array._ary


@contextlib.contextmanager
def out_of_memory_as_memory_error(what: str):
    """Turn numba's out-of-memory errors (CudaAPIError and its own types) into MemoryError."""
    try:
        yield
    except Exception as err:
        if "OUT_OF_MEMORY" in str(err).upper() or "out of memory" in str(err).lower():
            raise MemoryError(f"GPU out of memory for {what}") from err
        raise


def device_zeros(shape, dtype, stream=0):
    """A zero-filled device array, set on the device (no host array, no transfer).

    In order on ``stream`` when one is given, else at once (on the legacy default stream).
    """
    if simulating_cuda():
        return cuda.to_device(np.zeros(shape, dtype=dtype))
    from numba.cuda.cudadrv.driver import device_memset

    array = cuda.device_array(shape, dtype=dtype, stream=stream)
    device_memset(array, 0, array.nbytes, stream=stream)
    return array


_FROZEN: dict = {}  # id of a frozen host array -> weak reference to it
_RESIDENT: dict = {}  # id of a frozen host array -> (the CUDA context, the array's device copy there)


def freeze(array: np.ndarray) -> np.ndarray:
    """Make ``array`` read-only and declare that it never changes.

    :func:`resident_on_device` may then keep its device copy: for tables a model builds once
    and reuses (a 1e6-row system's walk tables are ~50 MB, ~13 ms of every call to copy on an
    H200 host). Turning writes back on afterwards is not supported.

    Parameters
    ----------
    array : numpy.ndarray
        An array that owns its memory (or holds it through numba's allocator).

    Returns
    -------
    numpy.ndarray
        ``array`` itself, now read-only.

    Raises
    ------
    ValueError
        If ``array`` is a view of another array (whose memory could still change).
    """
    if isinstance(array.base, np.ndarray):
        raise ValueError("freeze needs an array that owns its memory (or holds it through numba's allocator), "
                         "not a view of another array")
    array.setflags(write=False)
    key = id(array)

    def forget(_, key=key):
        """Drop the array's entries once it is collected (its id may then be reused)."""
        _FROZEN.pop(key, None)
        _RESIDENT.pop(key, None)

    _FROZEN[key] = weakref.ref(array, forget)
    return array


def resident_on_device(array):
    """A device copy of ``array``: for an array given to :func:`freeze`, the one kept.

    That copy is made once per CUDA context and kept for as long as the array lives; any
    other array is copied afresh (``cuda.to_device``).

    Parameters
    ----------
    array : numpy.ndarray
        Host array.

    Returns
    -------
    numba.cuda.cudadrv.devicearray.DeviceNDArray
        Its device copy.
    """
    frozen = _FROZEN.get(id(array))
    if frozen is None or frozen() is not array or array.flags.writeable or simulating_cuda():
        return cuda.to_device(np.ascontiguousarray(array))
    context = cuda.current_context()
    kept = _RESIDENT.get(id(array))
    if kept is None or kept[0] is not context:  # a new context (after a reset) holds no copy yet
        kept = (context, cuda.to_device(np.ascontiguousarray(array)))
        _RESIDENT[id(array)] = kept
    return kept[1]


def copy_back(stream, pairs):
    """Copy each ``(host, device)`` pair of ``pairs`` to the host once ``stream``'s work is done.

    The wait comes first, in ``stream.synchronize()``. A copy into pageable host memory waits
    for the stream's kernels too, but while it waits, the pageable copies of every other
    thread wait with it (H100, numba-cuda 0.30.4: an 8 kB upload on another stream took 298
    ms behind a 420 ms kernel, 0.4 ms while the thread waited in ``synchronize``). Empty host
    arrays are skipped.
    """
    stream.synchronize()
    for host, device in pairs:
        if host.size:
            device.copy_to_host(host, stream=stream)
    stream.synchronize()


def upload(device, host, stream):
    """Queue a copy of the C-contiguous ``host`` into the device array ``device`` (as many bytes) on ``stream``.

    ``host`` should be pinned (``cuda.pinned_array``): from pageable memory the driver first
    waits for the stream's earlier work. The driver is called directly: numba-cuda's
    ``copy_to_device`` checks and wraps both arrays in Python first, which took a tenth of
    a small rates task's host time (H200, numba-cuda 0.30.4). Under the simulator it is
    ``copy_to_device``.
    """
    if simulating_cuda():
        device.copy_to_device(host, stream=stream)
    else:
        cuda_module().cudadrv.driver.host_to_device(device, host, host.nbytes, stream=stream)


def poll_counter(counter, run_stream, n_items, progress, interval=0.2):
    """Report items started (``progress(n)``) while the kernel on ``run_stream`` runs.

    Copies the work counter on a second stream; reading it while the kernel updates it
    is a benign race (the value only grows).
    """
    import time

    if simulating_cuda():  # the simulator ran the kernel synchronously at launch
        progress(n_items)
        return
    done = cuda.event()
    done.record(run_stream)
    poll_stream = cuda.stream()
    host = cuda.pinned_array(1, dtype=np.int64)
    while not done.query():
        counter.copy_to_host(host, stream=poll_stream)
        poll_stream.synchronize()
        progress(min(int(host[0]), n_items))
        time.sleep(interval)
    progress(n_items)


# --------------------------------------------------------------------------- launches

#: numba-cuda's hint for grids of fewer than 128 blocks (its message, after any highlighting).
_LOW_OCCUPANCY = r".*Grid size \d+ will likely result in GPU under-utilization"
_timer = None  # the active KernelTimer, if any
_launch_sites = threading.local()  # depth: how many launching() blocks this thread is in
_hint_filtered = False  # numba-cuda's hint goes through _filter_occupancy_hint's warn


def _filter_occupancy_hint():
    """Drop numba-cuda's low-occupancy hint inside this thread's :func:`launching` blocks.

    ``warnings.catch_warnings`` cannot do it for chunks run on several threads (dask's
    threaded scheduler): it swaps the process-wide filter list, so one thread leaving its
    block restores the filters while another is launching, and the hint reaches the user.
    numba-cuda raises the hint through the ``warn`` its dispatcher module imported; that
    name is wrapped here to drop the hint when the calling thread is inside a launch site,
    and to pass every other warning on unchanged.
    """
    global _hint_filtered
    try:
        from numba.cuda import dispatcher
    except ImportError:  # the CUDA simulator, or a numba-cuda laid out differently
        return
    original = getattr(dispatcher, "warn", None)
    if original is not warnings.warn:
        return

    def warn(message, category=None, stacklevel=1, **kwargs):
        if getattr(_launch_sites, "depth", 0) and re.match(_LOW_OCCUPANCY, str(message)):
            return
        original(message, category, stacklevel + 1, **kwargs)

    dispatcher.warn = warn
    _hint_filtered = True


class KernelTimer:
    """GPU time of the package's kernel launches, from CUDA events recorded around each site.

    Made by :func:`kernel_timer`; every :func:`launching` block that runs while it is active
    records an event before and after its launches on the stream they use, and the time
    between the two is that block's kernel time on the device. A kernel that compiles at its
    launch does so between the two events: time calls after a warm-up.
    """

    def __init__(self):
        self._spans = []

    @contextlib.contextmanager
    def _span(self, name, stream):
        start, end = cuda.event(), cuda.event()
        start.record(stream)
        yield  # a launch that raises leaves no span (and no event call to hide its error)
        end.record(stream)
        self._spans.append((name, start, end))

    def launches(self) -> dict:
        """Number of timed launch blocks per launch-site name."""
        counts = {}
        for name, _, _ in self._spans:
            counts[name] = counts.get(name, 0) + 1
        return counts

    def milliseconds(self) -> dict:
        """Device milliseconds per launch-site name, summed over its blocks (waits for them to end)."""
        totals = {}
        for name, start, end in self._spans:
            end.synchronize()
            totals[name] = totals.get(name, 0.0) + start.elapsed_time(end)
        return totals

    def seconds(self) -> float:
        """Device seconds of all timed launch blocks together."""
        return sum(self.milliseconds().values()) / 1e3


@contextlib.contextmanager
def kernel_timer():
    """Time every kernel launch of the package while active; yields the :class:`KernelTimer`.

    Off (the default), :func:`launching` creates no events and records nothing. Benchmarks
    call the public run functions inside ``with kernel_timer() as timer:`` and read
    ``timer.milliseconds()`` afterwards. Timers nest: the innermost one records.
    """
    global _timer
    previous, _timer = _timer, KernelTimer()
    try:
        yield _timer
    finally:
        _timer = previous


@contextlib.contextmanager
def launching(name: str, stream=0):
    """Wrap the kernel launches of one site: ``with launching("walks", stream): kernel[...](...)``.

    It keeps numba-cuda's low-occupancy hint from reaching the user (small chunks give small
    grids on purpose; also when chunks launch from several threads at once) and, while a
    :func:`kernel_timer` is active, records a CUDA event on
    ``stream`` before and after the launches, under ``name``.

    Parameters
    ----------
    name : str
        The launch site, as the timer reports it.
    stream : numba stream or 0
        The stream the launches go to (0: the default stream).

    Yields
    ------
    None
    """
    _launch_sites.depth = getattr(_launch_sites, "depth", 0) + 1
    try:
        with contextlib.ExitStack() as stack:
            if not _hint_filtered or simulating_cuda():  # the simulator's tests raise the hint themselves
                stack.enter_context(warnings.catch_warnings())
                warnings.filterwarnings("ignore", message=_LOW_OCCUPANCY, category=Warning)
            if _timer is not None:
                stack.enter_context(_timer._span(name, stream))
            yield
    finally:
        _launch_sites.depth -= 1


# --------------------------------------------------------------------------- kernel cache


def cached(dispatcher):
    """Give a numba dispatcher the on-disk kernel cache of :mod:`gpuensembles.core.cache`; return it.

    Use it above the jit decorator of any function that Python code calls (template entry
    points, CUDA kernels, module-level parallel loops): ``@cached`` then ``@numba.njit(...)``
    or ``@cuda.jit(...)``. Under the CUDA simulator, kernels are returned unchanged.
    """
    if isinstance(dispatcher, Dispatcher):
        dispatcher._cache = StableFunctionCache(dispatcher)
    elif not simulating_cuda() and type(dispatcher).__name__ == "CUDADispatcher":
        dispatcher._cache = _stable_cuda_cache()(dispatcher)
    return dispatcher


def compiled(kernel, *args):
    """The compiled CUDA kernel that ``kernel(*args)`` launches, compiled or from the kernel cache.

    Unlike ``kernel.specialize``, which makes a new dispatcher without a cache, this keeps
    the dispatcher's own.
    """
    return kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))


#: Off: :func:`prepared_launch` launches through the dispatcher (benchmarks compare the two).
PREPARED_LAUNCHES = True


def prepared_launch(kernel, griddim, blockdim, stream, args, varying):
    """Launch one kernel many times, converting the arguments that do not change only once.

    ``go(*values)`` launches ``kernel[griddim, blockdim, stream](*args)`` with the arguments at
    positions ``varying`` replaced by ``values`` (of the same types).

    numba-cuda converts every argument at every launch: about 50 us of host time for a kernel
    of 16 arguments, as long as an Ising half-sweep of a 16384^2 lattice takes on an H200, so
    the GPU waited on the host. Converting once leaves a few microseconds per launch. Under
    the CUDA simulator, with :data:`PREPARED_LAUNCHES` off, or where numba-cuda's launch
    internals (``cuda.core.launch``, ``_Kernel._prepare_args``, ``driver._to_core_stream``, as in
    numba-cuda 0.30) are not there, ``go`` launches through the dispatcher.

    Parameters
    ----------
    kernel : numba-cuda dispatcher
        A ``cuda.jit`` kernel.
    griddim, blockdim : int or tuple
        The launch configuration.
    stream : numba stream
        The stream of every launch.
    args : sequence
        The arguments of the first launch (their types select the compiled kernel).
    varying : tuple of int
        Positions of the arguments that ``go`` sets at each launch.

    Returns
    -------
    callable
        ``go(*values)``, one value per position of ``varying``; ``go.prepared`` says whether
        it launches with the arguments converted once.
    """
    args = list(args)
    dispatch = getattr(cuda_module(), "dispatcher", None)
    to_core_stream = getattr(getattr(getattr(cuda_module(), "cudadrv", None), "driver", None), "_to_core_stream", None)
    fast = PREPARED_LAUNCHES and not simulating_cuda() and to_core_stream is not None and all(
        hasattr(dispatch, name) for name in ("launch", "LaunchConfig", "CUDA_CORE_GE_1_0"))

    if not fast:
        def go(*values):
            """Launch through the dispatcher with ``values`` at the ``varying`` positions."""
            for i, value in zip(varying, values):
                args[i] = value
            kernel[griddim, blockdim, stream](*args)

        go.prepared = False
        return go
    compiled_kernel = compiled(kernel, *args)
    types, kernelargs, spans, retr = compiled_kernel.argument_types, [], [], []
    for ty, value in zip(types, args):
        start = len(kernelargs)
        compiled_kernel._prepare_args(ty, value, stream, retr, kernelargs)
        spans.append(slice(start, len(kernelargs)))
    griddim, blockdim = (tuple(d) + (1,) * (3 - len(d)) if isinstance(d, tuple) else (d, 1, 1)
                         for d in (griddim, blockdim))
    cooperative = "is_cooperative" if dispatch.CUDA_CORE_GE_1_0 else "cooperative_launch"
    config = dispatch.LaunchConfig(grid=griddim, block=blockdim, shmem_size=0,
                                   **{cooperative: compiled_kernel.cooperative})
    function = compiled_kernel._codelibrary.get_cufunc().kernel
    core_stream = to_core_stream(stream)

    def go(*values):
        """Launch with ``values`` converted at the ``varying`` positions, the rest as converted once."""
        for i, value in zip(varying, values):
            one = []
            compiled_kernel._prepare_args(types[i], value, stream, retr, one)  # numba's stream, as above
            kernelargs[spans[i]] = one
        dispatch.launch(core_stream, config, function, *kernelargs)

    go.prepared = True
    go.arguments = args  # the launches use these arrays' memory: keep them alive as long as ``go``
    return go


#: numba-cuda settings that change the code it generates.
_CUDA_SETTINGS = ("OPT", "DEBUGINFO_DEFAULT", "BOUNDSCHECK", "FORCE_CUDA_CC", "CUDA_DEFAULT_PTX_CC", "FASTMATH")


@functools.cache
def _stable_cuda_cache():
    """numba-cuda's ``CUDACache`` under the stable key of :mod:`gpuensembles.core.cache`."""
    import numba_cuda
    from numba.cuda import serialize, utils
    from numba.cuda.core import config
    from numba.cuda.dispatcher import CUDACache, CUDACacheImpl

    class Impl(ImplInit, CUDACacheImpl):
        pass

    class StableCUDACache(StableCacheMixin, CUDACache):
        def __init__(self, dispatcher):
            self._launch_config_key = None
            self._launch_config_sensitive_flag = None
            settings = tuple((name, repr(getattr(config, name, None))) for name in _CUDA_SETTINGS)
            self._setup(dispatcher, Impl, serialize.dumps, extra=("numba-cuda", numba_cuda.__version__, settings))
            self._launch_config_marker_path = os.path.join(self._cache_path or os.devnull,
                                                           f"{self._impl.filename_base}.lcs")

        def _index_key(self, sig, codegen):
            key = StableCacheMixin._index_key(self, sig, codegen)
            return key if self._launch_config_key is None else key + (("launch_config", self._launch_config_key),)

        def load_overload(self, sig, target_context):
            # numba's refreshes the target context first: every typing and lowering registry
            # of the CUDA target, ~0.6 s of a process's first call, which only compiling needs
            # (the compiler refreshes it itself on a miss); a kernel rebuilt from its cached
            # cubin is launched without them. (A CPU function rebuilt so crashes: its machine
            # code links to helper symbols the registries' modules register.)
            with utils.numba_target_override(), self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)

    return StableCUDACache
