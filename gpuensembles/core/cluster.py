"""A dask cluster for ensembles: one worker per GPU (dask-cuda), or a CPU cluster without GPUs.

Any other ``distributed.Client`` works the same (Slurm through ``dask-jobqueue``,
Kubernetes, SSH): once a client is active, run functions return lazy results chunked
over its workers, and each task picks its device inside the worker.
"""

import os

from . import backend as _backend
from . import engine


def cluster(n_gpus=None, **kwargs):
    """Start a local cluster and return a ``distributed.Client`` connected to it.

    With GPUs visible: ``dask_cuda.LocalCUDACluster``, one worker per GPU, two threads
    per worker so that two chunks are in flight on each GPU (one fills the other's tail
    of long realizations). Without GPUs: a ``distributed.LocalCluster`` with one worker
    whose kernels use all cores (numba's parallel loop). Nothing here creates a CUDA
    context in this process (GPUs are counted through the driver, as ``cuInit`` does).

    Parameters
    ----------
    n_gpus : int, optional
        Use the first ``n_gpus`` GPUs (default: all). 0 forces the CPU cluster.
    **kwargs
        Passed to the cluster (e.g. ``threads_per_worker``, ``dashboard_address``). A CPU
        cluster of several threads per worker needs numba's TBB or OpenMP threading layer
        (ValueError otherwise: its ``workqueue`` layer is not thread-safe).

    Examples
    --------
    >>> client = gpuensembles.cluster()          # doctest: +SKIP
    >>> ds = gpuensembles.escape_times(..., realizations=10**8)   # lazy, one chunk set per GPU
    >>> ds.to_netcdf("fpt.nc")                   # runs on all GPUs
    """
    from distributed import Client, LocalCluster

    available = _backend.gpu_count()
    if n_gpus is not None:
        n_gpus = engine.check_count("n_gpus", n_gpus, minimum=0)
        if n_gpus > available:
            raise ValueError(f"n_gpus={n_gpus} but {available} GPU(s) are visible")
    if available and n_gpus != 0:
        from dask_cuda import LocalCUDACluster

        kwargs.setdefault("threads_per_worker", 2)
        kwargs.setdefault("CUDA_VISIBLE_DEVICES", visible_devices()[:n_gpus or available])
        return Client(LocalCUDACluster(**kwargs))
    kwargs.setdefault("n_workers", 1)
    kwargs.setdefault("threads_per_worker", 1)
    threads = kwargs["threads_per_worker"]
    if isinstance(threads, int) and threads > 1 and _backend.cpu_threading_layer() == "workqueue":
        raise ValueError(f"threads_per_worker={threads} needs a thread-safe numba threading layer (tbb or omp), and "
                         "this machine has only 'workqueue', which aborts when two threads run kernels at once: "
                         "install tbb (pip install tbb), or use threads_per_worker=1 and more n_workers")
    return Client(LocalCluster(**kwargs))


def visible_devices() -> list:
    """Return the GPUs this process may use, as dask-cuda's ``CUDA_VISIBLE_DEVICES`` takes them.

    These are the entries of ``CUDA_VISIBLE_DEVICES`` (strings: indices or UUIDs), else the
    indices ``0 .. n-1`` of the GPUs the driver counts (ints; dask-cuda takes both).

    A cluster's workers take the first of these: ``list(range(n))`` would name physical GPUs
    0 .. n-1 whatever this process was given (dask-cuda hands each worker one entry as its
    own ``CUDA_VISIBLE_DEVICES``).
    """
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        return list(range(_backend.gpu_count()))
    return [d.strip() for d in given.split(",") if d.strip()]
