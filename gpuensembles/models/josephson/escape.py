"""Escape times of the washboard particle at constant bias (Pierro et al. 2018, Algorithm 1)."""

import numpy as np
import xarray as xr

from ...core import engine
from ...core.backend import Backend, Progress
from . import estimates, junction
from . import physics as washboard
from .junction import Dtype, Integrator, Model, Passage


def escape_times(
    *,
    damping,
    gamma,
    D,
    h,
    realizations,
    V0=1.0,
    model: Model = "underdamped",
    passage: Passage = "barrier_top",
    integrator: Integrator = "euler",
    max_steps=10**9,
    seed=None,
    dtype: Dtype = "float32",
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Escape times of a phase particle from a well of the tilted washboard potential.

    Each realization starts at rest at the well bottom ``phi = arcsin(gamma)``. Any of
    ``V0, damping, gamma, D, h`` may be a 1-D array (it becomes a labeled dimension) or a
    1-D DataArray (its dimension is used, so several parameters can vary together). All
    quantities are in the normalized units of the equation (module docstring).

    Parameters
    ----------
    damping : float or array, > 0
        Normalized damping coefficient (``alpha``/``beta`` in Pierro et al. 2018).
    gamma : float or array, in [0, 1)
        Normalized bias current ``I/I_c``.
    D : float or array, > 0
        Noise intensity; ``D = damping * theta`` with ``theta = k_B T / E_C``.
    h : float or array, > 0
        Euler time step; ``h`` times the plasma frequency (underdamped) or the
        relaxation rate (overdamped) must be <= 0.1.
    realizations : int
        Number of independent realizations per parameter point.
    V0 : float or array, > 0
        Barrier scale ``E_J/E_C`` (default 1).
    model : {"underdamped", "overdamped"}
        Equation to integrate.
    passage : {"barrier_top", "next_well"}
        Where a realization has escaped: at the barrier top ``pi - arcsin(gamma)``
        (Pierro et al. 2018), or at the next well's bottom ``arcsin(gamma) + 2 pi``, past any
        recrossing of the barrier: the escape that Kramers-type rates describe.
    integrator : {"euler", "baoab"}
        Euler-Maruyama (Pierro et al. 2018) or, underdamped only, the BAOAB splitting: weak order
        2 without Euler's numerical heating (which lowers the effective damping by
        ``h omega_p^2 / damping``), so a ~10x larger ``h`` gives the same accuracy.
    max_steps : int
        Steps after which a realization stops without escaping (then ``escaped`` is
        False, ``steps == max_steps`` and ``escape_time`` is NaN).
    seed : int in [0, 2**32), optional
        Random seed; when omitted, the seed of the run in ``store`` if any, else drawn from
        the OS; always recorded in the attributes.
    dtype : {"float32", "float64"}
        Precision of the state. Time is always ``steps * h`` in float64 from an
        int64 step count.
    chunks : int or dict, optional
        Realizations per chunk (int) or ``{dim: size}``. Given, or with an active
        ``distributed.Client``, the result is dask-backed and lazy.
    store : str or path-like, optional
        Directory that keeps every finished chunk; the same call resumes from it after
        an interruption, bit-identically (:mod:`gpuensembles.store`). A store holding a
        different run is refused.
    backend : {"auto", "cuda", "cpu"}
        Where the kernels run; ``auto`` picks CUDA when a GPU is visible.
    progress : {"auto", True, False}
        Progress bar for eager runs (``auto``: when stderr is a terminal).

    Returns
    -------
    xarray.Dataset
        ``escape_time`` (float64), ``escaped`` (bool) and ``steps`` (int64) over
        ``(*swept parameters, realization)``; scalar parameters and provenance in attrs.

    Examples
    --------
    >>> import numpy as np, gpuensembles as ge
    >>> ds = ge.escape_times(damping=0.05, gamma=0.5, D=np.linspace(0.004, 0.012, 5),
    ...                      h=0.004, realizations=5120, seed=1)  # doctest: +SKIP
    >>> ds.fpt.mean()  # doctest: +SKIP
    """
    call = dict(V0=V0, damping=damping, gamma=gamma, D=D, h=h, realizations=realizations, model=model,
                passage=passage, integrator=integrator, max_steps=max_steps, seed=seed, dtype=dtype, chunks=chunks,
                store=store, backend=backend)
    params = junction.validated(model, dtype, passage, integrator, V0=V0, damping=damping, gamma=gamma, D=D, h=h)
    # gamma < 0 is the mirror image (phi -> -phi) of |gamma|: same escape statistics
    engine.check_range("gamma", params["gamma"], 0, 1, high_open=True, hint="; for a negative bias use |gamma|")
    junction.check_step(model, params["V0"], params["damping"], params["gamma"], params["h"])
    plan = engine.make_plan(
        params,
        realizations=realizations,
        seed=seed,
        max_steps=max_steps,
        kernel=engine.KernelSpec(washboard.escape_kernel, (model, dtype, passage, integrator)),
        backend=backend,
        store=store,
    )
    # kept per value: the int64 steps, their absolute value, escaped and the float64 times
    work = estimates.escape_work(plan.table(), plan.realizations, plan.max_steps, model, integrator, dtype)
    raw = junction.execute(plan, work, chunks=chunks, progress=progress, store=store, bytes_per_value=25)
    signed = engine.label(plan, raw, junction.PARAMETERS)
    steps, escaped = abs(signed), signed > 0
    times = xr.where(escaped, steps * dict(zip(washboard.ESCAPE_PARAMETERS, plan.params))["h"], np.nan)
    return xr.Dataset(
        {
            "escape_time": times.transpose(*plan.dims).assign_attrs(
                long_name="first-passage (escape) time", units="1", time_unit=junction.TIME_UNIT,
                comment="steps * h; NaN where escaped is False"
            ),
            "escaped": escaped.assign_attrs(long_name="realization escaped within max_steps", units="1"),
            "steps": steps.assign_attrs(long_name="integration steps taken", units="1"),
        },
        attrs=junction.attributes(plan, raw, "escape_times", model, dtype, passage, integrator, call,
                     initial_condition="phi = arcsin(gamma), dphi/dt = 0 (well bottom, at rest)"),
    )
