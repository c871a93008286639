"""Josephson junction (washboard potential): escape times.

Normalized Langevin equation (seed 000, Eq. 9 with the noise of its Algorithm 1)::

    underdamped:  phi'' + damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    overdamped:           damping * phi' = V0 * (-sin(phi) + gamma) + xi(t)
    <xi(t) xi(t')> = 2 D delta(t - t'),   D = damping * theta

The noise enters *outside* ``V0`` (as in the seed's Algorithm 1, not its Eq. 9), which
is what satisfies fluctuation-dissipation with temperature ``theta = D / damping`` for
the potential ``U(phi) = -V0 (cos(phi) + gamma phi)``. Each realization starts at the
well bottom ``phi = arcsin(gamma)`` with zero velocity; it escapes at the first step
where ``phi > pi - arcsin(gamma)`` (the barrier top).
"""

import functools
import math

import numpy as np
import xarray as xr

from .. import _backend, engine, io, rng

MODELS = ("underdamped", "overdamped")
DTYPES = ("float32", "float64")

#: Kernel parameters in row order, with CF-style metadata for their coordinates.
PARAMETERS = {
    "V0": {"long_name": "barrier scale V0 = E_J / E_C", "units": "1"},
    "damping": {"long_name": "normalized damping (friction) coefficient", "units": "1"},
    "gamma": {"long_name": "normalized bias current I / I_c", "units": "1"},
    "D": {"long_name": "noise intensity, <xi xi> = 2 D delta", "units": "1"},
    "h": {"long_name": "integration time step", "units": "1"},
}

#: Largest allowed ``h`` times the fastest deterministic rate of the well (see `_check_step`).
MAX_STEP_TIMES_RATE = 0.1


@functools.lru_cache(maxsize=None)
def escape_kernel(model: str, dtype: str) -> _backend.FirstPassageKernel:
    """Build the scalar first-passage functions for ``model`` in precision ``dtype``.

    One Philox block gives four normals, so ``advance`` integrates four Euler steps,
    checking for the passage (and ``max_steps``) after each of them.
    """
    F = np.float32 if dtype == "float32" else np.float64
    normals4 = rng.normals4_f32 if dtype == "float32" else rng.normals4_f64
    overdamped = model == "overdamped"
    jit = rng.fjit

    @jit
    def prepare(par):
        V0, damping, gamma, D, h = par[0], par[1], par[2], par[3], par[4]
        scale = 1.0 / damping if overdamped else 1.0
        return (
            F(1.0 - damping * h),  # velocity decay per step (underdamped)
            F(V0 * h * scale),  # sin(phi) coefficient
            F(V0 * gamma * h * scale),  # bias coefficient
            F(math.sqrt(2.0 * D * h) * scale),  # noise amplitude
            F(h),
            F(math.pi - math.asin(gamma)),  # barrier top
            F(math.asin(gamma)),  # well bottom
        )

    @jit
    def init(coef):
        return (np.int64(0), coef[6], F(0.0))

    @jit
    def euler(phi, v, z, coef):
        decay, b, c, s, h = coef[0], coef[1], coef[2], coef[3], coef[4]
        if overdamped:
            return phi + (c - b * math.sin(phi)) + s * z, v
        return phi + v * h, decay * v + (c - b * math.sin(phi)) + s * z

    @jit
    def advance(state, coef, max_steps, seed, stream, realization):
        # Written out (no loop over the four normals): a tuple indexed in a loop would
        # live in local memory on the GPU.
        k, phi, v = state
        z0, z1, z2, z3 = normals4(seed, stream, realization, k >> 2)
        if k + 4 <= max_steps:
            phi, v = euler(phi, v, z0, coef)
            if phi > coef[5]:
                return (k + 1, phi, v), 1
            phi, v = euler(phi, v, z1, coef)
            if phi > coef[5]:
                return (k + 2, phi, v), 1
            phi, v = euler(phi, v, z2, coef)
            if phi > coef[5]:
                return (k + 3, phi, v), 1
            phi, v = euler(phi, v, z3, coef)
            if phi > coef[5]:
                return (k + 4, phi, v), 1
            return (k + 4, phi, v), (2 if k + 4 == max_steps else 0)
        # last, partial block: at most three steps left before max_steps
        for j in range(max_steps - k):
            phi, v = euler(phi, v, z0 if j == 0 else (z1 if j == 1 else z2), coef)
            if phi > coef[5]:
                return (k + j + 1, phi, v), 1
        return (max_steps, phi, v), 2

    return _backend.FirstPassageKernel(prepare, init, advance)


def _check_step(model, params):
    """Refuse time steps that resolve the well's fastest motion with fewer than ~60 steps.

    The rate is the plasma frequency ``sqrt(V0 cos(phi0))`` (underdamped) or the
    relaxation rate ``V0 cos(phi0) / damping`` (overdamped) at the well bottom
    ``phi0 = arcsin(gamma)``; ``h * rate`` must not exceed `MAX_STEP_TIMES_RATE`. This
    is a stability bound for explicit Euler, not an accuracy guarantee: the
    discretization error of escape times is O(sqrt(h)) (see `gpuensembles.theory`).
    """
    V0, damping, gamma, h = (params[k] for k in ("V0", "damping", "gamma", "h"))
    curvature = V0 * np.sqrt(1.0 - gamma**2)
    rate = curvature / damping if model == "overdamped" else np.sqrt(curvature)
    worst = (h * rate).max().item()
    if worst > MAX_STEP_TIMES_RATE:
        kind = "relaxation rate V0*cos(phi0)/damping" if model == "overdamped" else "plasma frequency sqrt(V0*cos(phi0))"
        raise ValueError(
            f"h is too large: h * {kind} = {worst:.3g} > {MAX_STEP_TIMES_RATE} "
            f"(fewer than {2 * math.pi / MAX_STEP_TIMES_RATE:.0f} steps per period); decrease h"
        )


def _validated(model, dtype, V0, damping, gamma, D, h):
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    params = {name: engine.as_parameter(name, value) for name, value in zip(PARAMETERS, (V0, damping, gamma, D, h))}
    engine.check_range("V0", params["V0"], 0, low_open=True)
    engine.check_range("damping", params["damping"], 0, low_open=True)
    # gamma < 0 is the mirror image (phi -> -phi) of |gamma|: same escape statistics
    engine.check_range("gamma", params["gamma"], 0, 1, high_open=True, hint="; for a negative bias use |gamma|")
    engine.check_range("D", params["D"], 0, low_open=True)
    engine.check_range("h", params["h"], 0, low_open=True)
    _check_step(model, params)
    return params


def escape_times(
    *,
    damping,
    gamma,
    D,
    h,
    realizations,
    V0=1.0,
    model="underdamped",
    max_steps=10**9,
    seed=None,
    dtype="float32",
    chunks=None,
    backend="auto",
    progress="auto",
) -> xr.Dataset:
    """Escape times of a phase particle from a well of the tilted washboard potential.

    Any of ``V0, damping, gamma, D, h`` may be a 1-D array (it becomes a labeled
    dimension) or a 1-D DataArray (its dimension is used, so several parameters can
    vary together). All quantities are in the normalized units of the equation (see
    the module docstring); times are in units of the equation's time variable.

    Parameters
    ----------
    damping : float or array, > 0
        Normalized damping coefficient (``alpha``/``beta`` in seed 000).
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
    max_steps : int
        Steps after which a realization stops without escaping (then ``escaped`` is
        False, ``steps == max_steps`` and ``escape_time`` is NaN).
    seed : int in [0, 2**32), optional
        Random seed; drawn from the OS and recorded in the attributes when omitted.
    dtype : {"float32", "float64"}
        Precision of the state. Time is always ``steps * h`` in float64 from an
        int64 step count.
    chunks : int or dict, optional
        Realizations per chunk (int) or ``{dim: size}``. Given, or with an active
        ``distributed.Client``, the result is dask-backed and lazy.
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
                max_steps=max_steps, seed=seed, dtype=dtype, chunks=chunks, backend=backend)
    params = _validated(model, dtype, V0, damping, gamma, D, h)
    plan = engine.make_plan(
        params,
        realizations=realizations,
        seed=seed,
        max_steps=max_steps,
        kernel=engine.KernelSpec(escape_kernel, (model, dtype)),
        backend=backend,
    )
    raw = engine.execute(plan, chunks=chunks, progress=progress)
    return _assemble(plan, raw, model=model, dtype=dtype, history=io.history_line("escape_times", call))


def _assemble(plan: engine.Plan, raw, *, model, dtype, history) -> xr.Dataset:
    coords = {}
    for name, p in plan.inputs.items():
        if p.ndim:  # swept: a coordinate on its dimension (the index when it is its own)
            coords[name] = xr.Variable(p.dims, p.values, PARAMETERS[name])
            coords.update({d: c.variable for d, c in p.coords.items() if d != name})
    coords[engine.REALIZATION] = xr.Variable(engine.REALIZATION, np.arange(plan.realizations), io.REALIZATION_ATTRS)
    signed = xr.DataArray(raw, dims=plan.dims, coords=coords)
    steps = abs(signed)
    escaped = signed > 0
    h = dict(zip(PARAMETERS, plan.params))["h"]
    escape_time = xr.where(escaped, steps * h, np.nan).transpose(*plan.dims)
    lazy = not isinstance(raw, np.ndarray)
    backend = plan.backend if lazy else _backend.resolve(plan.backend)
    device = "resolved on each dask worker" if lazy else _backend.device_name(backend)
    attrs = io.provenance(
        model=f"josephson.escape_times ({model})",
        integrator="Euler-Maruyama, noise sqrt(2 D h) added to the velocity (seed 000, Algorithm 1)",
        seed=plan.seed,
        backend=backend,
        device=device,
        dtype=dtype,
        history=history,
    )
    attrs.update({name: p.item() for name, p in plan.inputs.items() if p.ndim == 0})
    attrs.update(
        max_steps=np.int64(plan.max_steps),
        initial_condition="phi = arcsin(gamma), dphi/dt = 0 (well bottom, at rest)",
        passage_condition="first step with phi > pi - arcsin(gamma) (barrier top)",
    )
    ds = xr.Dataset(
        {
            "escape_time": escape_time.assign_attrs(
                long_name="first-passage (escape) time", units="1", comment="steps * h; NaN where escaped is False"
            ),
            "escaped": escaped.assign_attrs(long_name="realization escaped within max_steps"),
            "steps": steps.assign_attrs(long_name="integration steps taken", units="1"),
        },
        attrs=attrs,
    )
    return ds
