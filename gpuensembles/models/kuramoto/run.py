"""The noisy Kuramoto model: N globally coupled overdamped phase oscillators (Januszewski & Kostur 2010, Eq. 2).

    g x_i' = w_i + sum_j K_ij sin(x_j - x_i) + sqrt(2 g kT) xi_i(t)

with either constant coupling ``K_ij = K / N`` (the classic Kuramoto normalization, run
through the O(N) mean-field identity of Januszewski & Kostur 2010, PROG3) or a general matrix ``K_ij``
(PROG2, O(N^2) per step). Euler-Maruyama steps (as in the seed), phases kept in
``[-pi, pi)`` in float32.
"""

import functools
import math
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ...core import backend as _backend
from ...core import engine, estimate, io
from ...core.backend import Backend, Progress
from ...core.templates.coupled import mean_field_runner, pairwise_runner
from .physics import initial_phases, kernel, natural_frequencies, standard_frequencies

PARAMETERS = {
    "K": {"long_name": "coupling strength, K_ij = K / N", "units": "1"},
    "width": {"long_name": "width of the frequency distribution (Lorentzian half-width or Gaussian std)",
              "units": "1"},
    "center": {"long_name": "centre of the frequency distribution", "units": "1"},
    "kT": {"long_name": "thermal energy k_B T", "units": "1"},
    "g": {"long_name": "friction coefficient gamma", "units": "1"},
    "h": {"long_name": "integration time step", "units": "1"},
}
ROW = ("K", "width", "center", "kT", "g", "h")
Sampling = Literal["random", "quantile"]
Initial = Literal["uniform", "synchronized"]
DISTRIBUTIONS = ("lorentzian", "gaussian")
SAMPLINGS, INITIAL = get_args(Sampling), get_args(Initial)
MAX_BINS = 1024
#: Most oscillators per system (one system's phases are then 8 GiB of float32).
MAX_N = 2**31 - 1
#: Largest allowed ``h |K| / g`` (mean field) or ``h max_i sum_j |K_ij| / g``.
MAX_STEP_TIMES_RATE = 0.5
#: Default throughputs [oscillator-steps/s] per CPU thread and of one GPU (mean-field
#: coupling; an H200 ran 2.6e11-3.0e11 at N = 2^20), and of a coupling matrix [couplings/s].
CPU_RATE, GPU_RATE = 2.0e7, 2.5e11
CPU_MATRIX_RATE, GPU_MATRIX_RATE = 1.0e8, 1.0e11

#: What the normalized time of the ``time`` coordinate is (``units: "1"`` beside it).
TIME_UNIT = "the inverse unit of the natural frequencies omega (time in 1 / [omega])"


def kuramoto(
    *,
    N,
    h,
    steps,
    sample_every,
    realizations=1,
    K=None,
    coupling=None,
    frequencies="lorentzian",
    width=1.0,
    center=0.0,
    sampling: Sampling = "random",
    kT=0.0,
    g=1.0,
    bins=64,
    initial: Initial = "uniform",
    seed=None,
    chunks=None,
    store=None,
    backend: Backend = "auto",
    progress: Progress = "auto",
) -> xr.Dataset:
    """Ensembles of Kuramoto systems of ``N`` oscillators; order parameter and phase density over time.

    Parameters
    ----------
    N : int
        Oscillators per system (>= 2).
    h : float or array
        Time step.
    steps : int
        Steps per run, a multiple of ``sample_every``.
    sample_every : int
        Record ``r``, ``psi`` and the phase histogram every ``sample_every`` steps.
    realizations : int
        Independent systems per parameter point (own frequencies, phases and noise).
    K : float or array
        Constant coupling, ``K_ij = K / N`` (mean-field path, O(N) per step). Give either
        ``K`` or ``coupling``.
    coupling : (N, N) array
        General coupling matrix ``K_ij`` exactly as in the equation (include any 1/N
        yourself); O(N^2) per step.
    frequencies : {"lorentzian", "gaussian"} or (N,) array
        Distribution of the natural frequencies (``center``, ``width``: half-width for
        the Lorentzian, standard deviation for the Gaussian), or the frequencies
        themselves (then ``width`` and ``center`` are not used and must stay at their
        defaults).
    width, center : float or array
        Width and centre of the frequency distribution.
    sampling : {"random", "quantile"}
        Independent draws per system, or the deterministic quantiles.
    kT : float or array
        Thermal energy (>= 0); noise ``sqrt(2 g kT) xi``.
    g : float or array
        Friction (> 0).
    bins : int
        Bins of the phase histogram over ``[-pi, pi)`` (1 .. 1024).
    initial : {"uniform", "synchronized"}
        Independent uniform phases, or all phases 0.
    seed : int, optional
        Seed of the counter-based RNG (drawn and recorded when omitted).
    chunks : int, optional
        Systems per dask task (the result is then lazy, as with an active
        ``distributed.Client``); the numbers are the same for any chunking.
    store : str or path-like, optional
        Directory that keeps every finished chunk, verified by SHA-256: the same call run
        again (after a crash or ``kill -9``) computes only what is missing and gives
        bit-identical results (docs page "Many GPUs, long runs, faults"). Without ``seed``,
        the store's seed is reused.
    backend : {"auto", "cuda", "cpu"}
        Where the kernels run; ``auto`` picks CUDA when a GPU is visible.
    progress : {"auto", True, False}
        Progress bar for eager runs (``auto``: when stderr is a terminal).

    Returns
    -------
    xarray.Dataset
        ``r`` and ``psi`` over ``(*swept, realization, time)`` and ``density`` (counts)
        over ``(*swept, realization, time, phase)``.

    Notes
    -----
    Frequencies and initial phases come from their own Philox stream, the same at every
    point of a sweep; the noise stream is the point's. On CUDA the mean-field run is one
    cooperative launch per system (systems run one after another).
    """
    call = {k: v for k, v in locals().items() if k != "progress"}
    N = engine.check_count("N", N, minimum=2, maximum=MAX_N)
    for name, value, allowed in (("sampling", sampling, SAMPLINGS), ("initial", initial, INITIAL)):
        engine.check_choice(name, value, allowed)
    steps = engine.check_count("steps", steps, maximum=engine.MAX_STEPS)
    every = engine.check_count("sample_every", sample_every)
    if steps % every:
        raise ValueError(f"steps ({steps}) must be a multiple of sample_every ({every})")
    bins = engine.check_count("bins", bins, maximum=MAX_BINS)
    # the working set of one system: phases (two copies), frequencies, their draws; the matrix
    engine.check_memory(32 * N + (0 if coupling is None else 4 * N * N), f"one system of N={N} oscillators")
    matrix, given_omega = _check_coupling(N, K, coupling), _check_frequencies(N, frequencies, width, center)
    params = {k: engine.as_parameter(k, v) for k, v in
              dict(K=0.0 if K is None else K, width=width, center=center, kT=kT, g=g, h=h).items()}
    engine.check_range("width", params["width"], 0)
    engine.check_range("kT", params["kT"], 0)
    engine.check_range("g", params["g"], 0, low_open=True)
    engine.check_range("h", params["h"], 0, low_open=True)
    engine.check_representable("float32", params)
    if given_omega is None:
        _check_frequency_range(frequencies, params["width"], params["center"])
    rate = np.abs(params["K"]) if matrix is None else float(np.abs(matrix).sum(axis=0).max())
    product = params["h"] * rate / params["g"]
    worst = float(product.max())
    if worst > MAX_STEP_TIMES_RATE:
        given = dict(K=params["K"]) if matrix is None else dict(coupling=xr.DataArray(rate))
        raise ValueError(f"h is too large for {engine.at_worst(product, **given, g=params['g'], h=params['h'])}: "
                         f"h * coupling rate / g = {worst:.3g} > {MAX_STEP_TIMES_RATE}")
    plan = engine.make_plan(params, realizations=realizations, seed=seed, max_steps=steps, store=store,
                            kernel=engine.KernelSpec(kernel, ()), backend=backend)
    n_points = math.prod(plan.shape[:-1])
    shape = (n_points, plan.realizations, steps // every)
    outputs = {"r": engine.Output(shape, np.float64, 1), "psi": engine.Output(shape, np.float64, 1),
               "hist": engine.Output(shape + (bins,), np.int64, 1)}
    settings = dict(N=N, every=every, bins=bins, matrix=matrix, omega=given_omega, distribution=frequencies
                    if given_omega is None else None, sampling=sampling, initial=initial)
    block = functools.partial(_run_block, plan, settings)
    what = f"{engine.sizes_text(plan)}, {steps // every} samples (steps / sample_every) of {bins} bins"
    work = _work(N, steps, n_points * plan.realizations, matrix is not None)
    with engine.stored_run(store, "kuramoto", call, plan.seed) as stored, estimate.timed(work, backend,
                                                                                         progress) as clock:
        raw = engine.run_realizations(block, plan.realizations, outputs, chunks=chunks, pieces=plan.realizations,
                                      progress=progress, unit=engine.Units("systems", per_item=n_points), what=what,
                                      store=stored)
        clock.ran(raw)
    return _dataset(plan, raw, call, settings)


def _work(N, steps, systems, matrix) -> estimate.Work:
    """The oscillator-steps of a run (couplings, ``N^2`` a step, with a matrix)."""
    if matrix:
        return estimate.Work(float(N) * N * steps * systems, "couplings", "kuramoto, coupling matrix",
                             f"{steps} steps of {systems} system(s) of {N} oscillators, N^2 couplings a step",
                             CPU_MATRIX_RATE, GPU_MATRIX_RATE)
    return estimate.Work(float(N) * steps * systems, "oscillator-steps", "kuramoto, mean field",
                         f"{steps} steps of {systems} system(s) of {N} oscillators", CPU_RATE, GPU_RATE,
                         "fewer oscillators, steps or systems, or a GPU")


#: Largest ``|z|`` of the standard variates behind the frequencies: uniforms lie in
#: ``[2**-33, 1 - 2**-33]`` (:func:`gpuensembles.core.rng.uint32_to_uniform_f64`), quantiles
#: in ``[1 / (2 N), 1 - 1 / (2 N)]`` with ``N < 2**31``.
_Z_MAX = {"lorentzian": 1.0 / math.tan(math.pi * 2.0**-33), "gaussian": 6.4}


def _check_frequency_range(distribution, width, center):
    """Refuse a ``width`` or ``center`` whose frequencies ``center + width z`` could overflow float32."""
    largest = float(np.abs(center).max()) + float(width.max()) * _Z_MAX[distribution]
    if largest > float(np.finfo(np.float32).max):
        raise ValueError(f"width and center give natural frequencies up to {largest:.3g}, beyond float32; rescale "
                         "them (and h, K, kT) together")


def _check_coupling(N, K, coupling):
    if (K is None) == (coupling is None):
        raise ValueError("give exactly one of K (constant coupling K/N, mean field) and coupling (an N x N matrix)")
    if coupling is None:
        return None
    matrix = engine.real_array("coupling", coupling)
    if matrix.shape != (N, N) or not np.all(np.isfinite(matrix)):
        raise ValueError(f"coupling must be a finite ({N}, {N}) matrix, got shape {matrix.shape}")
    return matrix


def _check_frequencies(N, frequencies, width, center):
    if isinstance(frequencies, str):
        if frequencies not in DISTRIBUTIONS:
            raise ValueError(f"frequencies must be one of {DISTRIBUTIONS} or an array of N values, got {frequencies!r}")
        return None
    omega = engine.real_array("frequencies", frequencies)
    if omega.shape != (N,) or not np.all(np.isfinite(omega)):
        raise ValueError(f"frequencies must name a distribution or be {N} finite values, got shape {omega.shape}")
    if not (np.ndim(width) == 0 and width == 1.0 and np.ndim(center) == 0 and center == 0.0):
        raise ValueError("width and center describe a named distribution; with explicit frequencies leave them out")
    return omega.astype(np.float32)


def _run_block(plan, settings, start, stop):
    """Systems ``[start, stop)`` of every point."""
    backend = _backend.resolve(plan.backend)
    N, every, bins = settings["N"], settings["every"], settings["bins"]
    matrix = settings["matrix"]
    run = (mean_field_runner if matrix is None else pairwise_runner)(kernel(), backend)
    KT = None if matrix is None else np.ascontiguousarray(matrix.T, dtype=np.float32)
    n_points = math.prod(plan.shape[:-1])
    n_samples = plan.max_steps // every
    r = np.empty((n_points, stop - start, n_samples))
    psi = np.empty_like(r)
    hist = np.zeros(r.shape + (bins,), dtype=np.int64)
    table = plan.table()
    for m, rid in enumerate(range(start, stop)):
        # frozen disorder: drawn once per system, shared by every point of the sweep
        x0 = initial_phases(N, settings["initial"], plan.seed, rid)
        z = None if settings["omega"] is not None else standard_frequencies(
            N, settings["distribution"], settings["sampling"], plan.seed, rid)
        for p, (K, width, center, kT, g, h) in enumerate(table):
            omega = settings["omega"] if z is None else natural_frequencies(z, width, center)
            run(x0.copy(), omega, K / N if KT is None else KT, h / g, math.sqrt(2 * kT * h / g), plan.max_steps,
                every, plan.seed, p, rid, r[p, m], psi[p, m], hist[p, m])
    return {"r": r, "psi": psi, "hist": hist}


def _dataset(plan, raw, call, settings):
    every, bins = settings["every"], settings["bins"]
    coords = {**engine.coordinates(plan, PARAMETERS), **engine.sample_coordinates(plan, every, TIME_UNIT)}
    edges = np.linspace(-np.pi, np.pi, bins + 1)
    coords["phase"] = xr.Variable("phase", 0.5 * (edges[1:] + edges[:-1]),
                                  {"long_name": "phase (bin centre)", "units": "rad"})
    dims = plan.dims + ("time",)

    def array(values, extra=(), **attrs):
        return engine.on_dims(values.reshape(plan.shape + values.shape[2:]), dims + extra, coords, **attrs)

    data = {
        "r": array(raw["r"], long_name="order parameter r = |(1/N) sum_j exp(i x_j)|", units="1"),
        "psi": array(raw["psi"], long_name="mean phase psi", units="rad"),
        "density": array(raw["hist"], ("phase",), long_name="oscillators per phase bin", units="1"),
    }
    backend, device = engine.where_it_ran(plan, raw["r"])
    path = "mean field, K_ij = K / N (O(N) per step)" if settings["matrix"] is None else "coupling matrix K_ij (O(N^2))"
    attrs = io.provenance(model=f"kuramoto ({path})", integrator="Euler-Maruyama", seed=plan.seed, backend=backend,
                          device=device, dtype="float32", history=io.history_line("kuramoto", call))
    attrs.update({k: v.item() for k, v in plan.inputs.items() if v.ndim == 0 and not (k == "K" and
                                                                                     settings["matrix"] is not None)})
    freq = "given array" if settings["omega"] is not None else f"{settings['distribution']} ({settings['sampling']})"
    attrs.update(N=np.int64(settings["N"]), steps=np.int64(plan.max_steps), sample_every=np.int64(every),
                 frequencies=freq, initial_condition=settings["initial"])
    return xr.Dataset(data, attrs=attrs)
