"""Command line: ``gpuensembles <model> ...`` runs an ensemble and writes NetCDF.

Examples::

    gpuensembles escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 \\
        --realizations 5120 -o fpt.nc
    gpuensembles switching-currents --preset li2007 --sweep-rate 2e7 --realizations 200 \\
        -o sc.nc --plot sc.png
    gpuensembles mc-solve --problem laplacian-2d --size 30 --histories 1e7 -o x.nc
    gpuensembles langevin --a 0 1 2 4.2 --w 4.9 --g 0.9 --f 0.1 --kT 0.001 --h 0.01282 \\
        --steps 200000 --transient 20000 --realizations 4096 -o v.nc
    gpuensembles kuramoto --N 1048576 --K 4 --width 1 --h 0.01 --steps 2000 --sample-every 20 \\
        -o r.nc --plot r.png
    gpuensembles ising --L 16 32 64 --beta 0.40 0.42 0.44 0.46 0.48 --sweeps 20000 \
        --thermalization 2000 --realizations 32 -o ising.nc --plot binder.png
    gpuensembles xorsat --N 64 96 --instances 20 --runs 10 --clones 4096 --p 0.1 \
        -o tts.nc --plot survival.png

Any parameter option takes several values (``--D 0.004 0.008 0.012``), which become a
dimension of the output. A progress bar runs on stderr, and a one-screen summary
(device, throughput, mean per parameter point) is printed at the end.
"""

import argparse
import sys
import time

import numpy as np

from . import __version__
from .models import josephson

#: Junctions known by name: SI parameters and the integration step of seed 000, Fig. 11(b).
PRESETS = {
    "li2007": dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200.0, h=1e-4),
}


def _mc_problems():
    from .mcls import problems

    return {"laplacian-2d": (problems.laplacian_2d, 30), "shifted-laplacian-1d": (problems.shifted_laplacian_1d, 10**6)}


#: Test matrices ``mc-solve --problem`` knows: builder and default size.
MC_PROBLEMS = _mc_problems()


def _values(values):
    if values is None:
        return None
    return values[0] if len(values) == 1 else np.asarray(values)


def _parameter(p, name, help_text, default=None, required=False):
    p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, nargs="+", default=default,
                   required=required, metavar="X", help=f"{help_text} (one or more values)")


def _add_common(p):
    p.add_argument("--realizations", type=int, required=True, help="realizations per parameter point")
    p.add_argument("--model", choices=josephson.MODELS, default="underdamped")
    p.add_argument("--passage", choices=josephson.PASSAGES, default="barrier_top",
                   help="escape at the barrier top (seed 000) or at the next well (what rate theory counts)")
    p.add_argument("--integrator", choices=josephson.INTEGRATORS, default="euler",
                   help="Euler-Maruyama (seed 000) or BAOAB (underdamped; ~10x larger h at equal accuracy)")
    p.add_argument("--dtype", choices=josephson.DTYPES, default="float32")
    _add_run_options(p, "realizations")
    p.add_argument("--store", metavar="DIR", help="keep finished chunks in DIR; the same command resumes from it")
    p.set_defaults(summary=_summary, plot=_plot)


def _add_run_options(p, unit):
    """Options every subcommand has: seed, backend, output, plot, chunks, cluster, progress."""
    p.add_argument("--seed", type=int, default=None, help="random seed in [0, 2**32); default: fresh, recorded")
    p.add_argument("--backend", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument("-o", "--output", required=True, help="NetCDF file to write")
    p.add_argument("--plot", dest="plot_path", metavar="PNG", help="also draw the result into this PNG file")
    p.add_argument("--chunks", type=int, metavar="N", help=f"{unit} per chunk (a dask-backed run)")
    p.add_argument("--cluster", action="store_true",
                   help="run the chunks on a local cluster: one worker per GPU (dask-cuda), or the CPU")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _subcommand(sub, name, function, help_text):
    """A subcommand parser whose description is the first paragraph of ``function``'s docstring."""
    return sub.add_parser(name, help=help_text, description=function.__doc__.split("\n\n")[0],
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_escape_times(sub):
    p = _subcommand(sub, "escape-times", josephson.escape_times,
                    "escape times of a Josephson junction (washboard Langevin model)")
    _parameter(p, "V0", josephson.PARAMETERS["V0"]["long_name"], default=[1.0])
    for name in ("damping", "gamma", "D", "h"):
        _parameter(p, name, josephson.PARAMETERS[name]["long_name"], required=True)
    p.add_argument("--max-steps", type=int, default=10**9, help="steps after which a realization gives up")
    _add_common(p)
    p.set_defaults(run=_run_escape_times)


def _add_switching_currents(sub):
    p = _subcommand(sub, "switching-currents", josephson.switching_currents,
                    "switching currents under a bias ramp (normalized or SI units)")
    p.add_argument("--preset", choices=sorted(PRESETS), help="a known junction (SI values and h; options override)")
    for name in ("V0", "damping", "D", "dgamma"):
        _parameter(p, name, josephson.PARAMETERS[name]["long_name"] + " (normalized form)")
    for name, (long_name, units, *_) in josephson.PHYSICAL.items():
        _parameter(p, name, f"{long_name} [{units}] (SI form)")
    _parameter(p, "h", josephson.PARAMETERS["h"]["long_name"])
    p.add_argument("--gamma-start", default="0", help="bias where the ramp starts, or 'auto' (warm start)")
    p.add_argument("--gamma-end", type=float, default=1.0, help="bias where the ramp stops")
    p.add_argument("--start", choices=josephson.STARTS, default="rest")
    _add_common(p)
    p.set_defaults(run=_run_switching_currents)


def _add_mc_solve(sub):
    from . import mcls

    p = _subcommand(sub, "mc-solve", mcls.mc_solve, "solve A x = b with forward or adjoint Monte Carlo random walks")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--problem", choices=sorted(MC_PROBLEMS), help="a test matrix of seed 003")
    source.add_argument("--matrix", metavar="FILE", help="A from a Matrix Market (.mtx) or scipy .npz file")
    p.add_argument("--size", type=int, help="grid side m (laplacian-2d, n = m^2; default 30) or n "
                                            "(shifted-laplacian-1d; default 1e6)")
    p.add_argument("--rhs", metavar="FILE", help="b from a .npy or .mtx file (default: all ones)")
    p.add_argument("--method", choices=mcls.METHODS, default="adjoint")
    p.add_argument("--estimator", choices=mcls.ESTIMATORS, default="collision")
    p.add_argument("--histories", type=float, required=True, help="random walks (total; per entry for forward)")
    p.add_argument("--weight-cutoff", type=float, default=1e-9, help="relative weight that ends a walk")
    p.add_argument("--max-steps", type=int, default=None, help="transitions after which a walk ends")
    p.add_argument("--batches", type=int, default=64, help="independent batches behind x_stderr")
    p.add_argument("--entries", type=int, nargs="+", metavar="I", help="rows to estimate (forward method)")
    p.add_argument("--force", action="store_true", help="run even if rho(H_hat) >= 1 (infinite variance)")
    p.add_argument("--tolerance", type=float, default=1e-10, help="mcsa: relative residual to reach")
    p.add_argument("--max-iterations", type=int, default=100, help="mcsa: most iterations")
    _add_run_options(p, "batches")
    p.set_defaults(run=_run_mc_solve, summary=_mc_summary, plot=_mc_plot)


def _add_langevin(sub):
    from .models import langevin, stewart_mccumber

    p = _subcommand(sub, "langevin", langevin.langevin, "driven Brownian particle in a periodic potential (SRK2)")
    defaults = dict(a=[0.0], w=[1.0], g=[1.0], f=[0.0], kT=[0.0], V0=[1.0])
    for name, meta in langevin.PARAMETERS.items():
        _parameter(p, name, meta["long_name"], default=defaults.get(name), required=name == "h")
    p.add_argument("--steps", type=int, required=True, help="integration steps per trajectory")
    p.add_argument("--realizations", type=int, required=True, help="trajectories per parameter point")
    p.add_argument("--transient", type=int, default=0, help="steps before the velocity average starts")
    p.add_argument("--sample-every", type=int, help="keep samples every N steps (a time dimension)")
    p.add_argument("--record", nargs="*", choices=langevin.RECORDABLE, help="what to sample (default: x and v)")
    p.add_argument("--histogram", type=int, nargs=2, metavar=("LO", "HI"), help="unit cells to count trajectories in")
    p.add_argument("--model", choices=stewart_mccumber.MODELS, default="underdamped")
    p.add_argument("--integrator", choices=stewart_mccumber.INTEGRATORS, default="srk2")
    p.add_argument("--start", choices=stewart_mccumber.STARTS, default="rest")
    p.add_argument("--dtype", choices=langevin.DTYPES, default="float32")
    _add_run_options(p, "realizations")
    p.set_defaults(run=_run_langevin, summary=_langevin_summary, plot=_langevin_plot)


def _add_kuramoto(sub):
    from .models import kuramoto

    p = _subcommand(sub, "kuramoto", kuramoto.kuramoto, "globally coupled phase oscillators (mean field)")
    p.add_argument("--N", type=int, required=True, help="oscillators per system")
    defaults = dict(width=[1.0], center=[0.0], kT=[0.0], g=[1.0])
    for name, meta in kuramoto.PARAMETERS.items():
        _parameter(p, name, meta["long_name"], default=defaults.get(name), required=name in ("K", "h"))
    p.add_argument("--steps", type=int, required=True, help="integration steps")
    p.add_argument("--sample-every", type=int, required=True, help="record r, psi and the density every N steps")
    p.add_argument("--realizations", type=int, default=1, help="independent systems per parameter point")
    p.add_argument("--frequencies", choices=kuramoto.DISTRIBUTIONS, default="lorentzian")
    p.add_argument("--sampling", choices=kuramoto.SAMPLINGS, default="random")
    p.add_argument("--initial", choices=kuramoto.INITIAL, default="uniform")
    p.add_argument("--bins", type=int, default=64, help="phase histogram bins")
    _add_run_options(p, "systems")
    p.set_defaults(run=_run_kuramoto, summary=_kuramoto_summary, plot=_kuramoto_plot)


def _add_ising(sub):
    from .models import ising

    p = _subcommand(sub, "ising", ising.ising, "2D Ising model, checkerboard Metropolis (multi-spin coded)")
    p.add_argument("--L", type=int, nargs="+", required=True, help="lattice size(s), even")
    _parameter(p, "beta", "inverse temperature J / k_B T", required=True)
    p.add_argument("--sweeps", type=int, required=True, help="measured sweeps per chain")
    p.add_argument("--thermalization", type=int, default=0, help="sweeps discarded first")
    p.add_argument("--realizations", type=int, default=1, help="independent chains per (L, beta)")
    p.add_argument("--measure-every", type=int, default=1, help="sweeps between measurements")
    p.add_argument("--bins", type=int, help="bins of consecutive measurements kept per chain (default 64)")
    p.add_argument("--start", choices=ising.STARTS, default="hot")
    p.add_argument("--kernel", choices=ising.KERNELS, default="multispin")
    _add_run_options(p, "groups of lattices")
    p.set_defaults(run=_run_ising, summary=_ising_summary, plot=_ising_plot)


def _add_xorsat(sub):
    from .xorsat import solver

    p = _subcommand(sub, "xorsat", solver.solve, "3-XORSAT time to solution of the quasi-greedy solver")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--N", type=int, nargs="+", help="sizes of random instances (variables)")
    source.add_argument("--instance-file", metavar="FILE", help="an instance (.nc, or XOR-clause text .xnf/.cnf)")
    p.add_argument("--instances", type=int, default=1, help="random instances per size")
    p.add_argument("--instance-seed", type=int, default=0, help="seed of the random instances")
    _parameter(p, "p", "flip probability of a variable in one unsatisfied triplet", default=[0.1])
    p.add_argument("--clones", type=int, default=solver.DEFAULT_CLONES, help="clones per run")
    p.add_argument("--runs", type=int, default=1, help="independent runs per instance")
    p.add_argument("--timeout", type=int, help="sweeps after which a run gives up (default: none)")
    _add_run_options(p, "runs")
    p.set_defaults(run=_run_xorsat, summary=_xorsat_summary, plot=_xorsat_plot)


def _run_kwargs(args):
    return dict(seed=args.seed, backend=args.backend, chunks=args.chunks, progress=not args.no_progress)


def _run_langevin(args):
    from .models.langevin import PARAMETERS, langevin

    kwargs = {k: _values(getattr(args, k)) for k in PARAMETERS}
    kwargs.update(steps=args.steps, realizations=args.realizations, transient=args.transient,
                  sample_every=args.sample_every, record=args.record, histogram=args.histogram, model=args.model,
                  integrator=args.integrator, start=args.start, dtype=args.dtype, **_run_kwargs(args))
    t0 = time.perf_counter()
    ds = langevin(**kwargs)
    return ds, time.perf_counter() - t0


def _run_kuramoto(args):
    from .models.kuramoto import PARAMETERS, kuramoto

    kwargs = {k: _values(getattr(args, k)) for k in PARAMETERS}
    kwargs.update(N=args.N, steps=args.steps, sample_every=args.sample_every, realizations=args.realizations,
                  frequencies=args.frequencies, sampling=args.sampling, initial=args.initial, bins=args.bins,
                  **_run_kwargs(args))
    t0 = time.perf_counter()
    ds = kuramoto(**kwargs)
    return ds, time.perf_counter() - t0


def _run_ising(args):
    from .models.ising import ising

    t0 = time.perf_counter()
    ds = ising(L=_values(args.L), beta=_values(args.beta), sweeps=args.sweeps, thermalization=args.thermalization,
               realizations=args.realizations, measure_every=args.measure_every, bins=args.bins, start=args.start,
               kernel=args.kernel, **_run_kwargs(args))
    return ds, time.perf_counter() - t0


def _run_xorsat(args):
    from . import xorsat

    if args.instance_file:
        instances = xorsat.load_instance(args.instance_file)
    else:
        instances = xorsat.random_instances(_values(args.N), args.instances, seed=args.instance_seed)
    t0 = time.perf_counter()
    ds = xorsat.solve(instances, p=_values(args.p), clones=args.clones, timeout=args.timeout, runs=args.runs,
                      **_run_kwargs(args))
    return ds, time.perf_counter() - t0


def _header(ds, seconds, work, unit, output):
    print(f"gpuensembles {__version__} | {ds.attrs['model']} | backend {ds.attrs['backend']} on {ds.attrs['device']}")
    print(f"seed {ds.attrs['seed']} | {work:.3e} {unit} in {seconds:.2f} s ({work / seconds:.3e} {unit}/s) -> {output}")


def _langevin_summary(ds, seconds, output):
    _header(ds, seconds, ds.x_end.size * int(ds.attrs["steps"]), "steps", output)
    stats = ds.langevin.velocity().rename(mean="<<v>>", stderr="<<v>> stderr")
    print(stats.to_dataframe().to_string(float_format=lambda x: f"{x:.6g}") if stats["<<v>>"].ndim else
          ", ".join(f"{k} {float(v):.6g}" for k, v in stats.data_vars.items()))


def _kuramoto_summary(ds, seconds, output):
    _header(ds, seconds, ds.r.isel(time=0).size * int(ds.attrs["N"]) * int(ds.attrs["steps"]), "oscillator-steps",
            output)
    final = ds.r.isel(time=-1).mean("realization").rename("r at the end")
    print(final.to_dataframe().to_string(float_format=lambda x: f"{x:.6g}") if final.ndim else
          f"r at the end {float(final):.6g}")


def _ising_summary(ds, seconds, output):
    sweeps = int(ds.attrs["sweeps"]) + int(ds.attrs["thermalization"])
    flips = sum(int(L) ** 2 for L in np.atleast_1d(ds.L.values)) * ds.beta.size * ds.realization.size * sweeps
    _header(ds, seconds, flips, "spin flips", output)
    table = ds.ising.energy().rename(mean="e", stderr="e stderr").merge(
        ds.ising.specific_heat().rename(mean="c", stderr="c stderr")).merge(
        ds.ising.binder().rename(mean="U4", stderr="U4 stderr")).merge(ds.ising.exact().rename(
            energy="e exact", specific_heat="c exact"))
    print(table.to_dataframe().to_string(float_format=lambda x: f"{x:.6g}") if table["e"].ndim else
          ", ".join(f"{k} {float(v):.6g}" for k, v in table.data_vars.items()))


def _xorsat_summary(ds, seconds, output):
    updates = float((ds.tts_sweeps * ds.N).sum()) * int(ds.attrs["clones"])  # N: a dimension or a scalar
    _header(ds, seconds, updates, "spin updates", output)
    tau = ds.tts.mean().rename(tau="tau (s)", lower="lower", upper="upper")[["tau (s)", "lower", "upper", "solved",
                                                                           "runs"]]
    tau["tau (sweeps)"] = ds.tts.mean(time="sweeps").tau
    print(tau.to_dataframe().to_string(float_format=lambda x: f"{x:.4g}") if tau["tau (s)"].ndim else
          ", ".join(f"{k} {float(v):.4g}" for k, v in tau.data_vars.items()))


def _xorsat_plot(ds, path):
    """Survival of the run times against the exponential law (seed 001, Fig. 2)."""
    _use_agg()
    from .analysis.plots import save

    save(ds.tts.plot_survival(time="sweeps"), path)


def _ising_plot(ds, path):
    """Binder cumulant over beta, one curve per L, and beta_c."""
    _use_agg()
    import matplotlib.pyplot as plt

    from .analysis.plots import plot_field, save
    from .theory import ISING_BETA_C

    binder = ds.ising.binder()["mean"]
    if "beta" not in binder.dims:
        return save(plot_field(binder), path)
    ax = plt.subplots()[1]
    binder.plot.line(ax=ax, x="beta", hue="L" if "L" in binder.dims else None, marker="o")
    ax.axvline(ISING_BETA_C, color="k", lw=0.8, ls=":", label="beta_c")
    save(ax, path)


def _langevin_plot(ds, path):
    """Coarse-grained density over time (seed 004, Fig. 2) if recorded, else <<v>> over the sweep."""
    _use_agg()
    from .analysis.plots import plot_field, save

    if "density" in ds and "time" in ds.density.dims:
        save(plot_field(ds.langevin.density(), x="time", y="cell", cmap="viridis"), path)
    else:
        save(plot_field(ds.langevin.velocity()["mean"]), path)


def _kuramoto_plot(ds, path):
    """Phase density over time (seed 004, Fig. 4) of the first system."""
    _use_agg()
    from .analysis.plots import plot_field, save

    save(plot_field(ds.density / ds.attrs["N"], x="time", y="phase", cmap="viridis"), path)


def _use_agg():
    import matplotlib

    matplotlib.use("Agg")


def _mc_system(args):
    """``(A, b)`` from ``--problem``/``--size`` or ``--matrix``, and ``--rhs``."""
    import scipy.io
    import scipy.sparse

    if args.problem:
        build, default_size = MC_PROBLEMS[args.problem]
        A = build(args.size or default_size)
    elif args.matrix.endswith(".npz"):
        A = scipy.sparse.load_npz(args.matrix)
    else:
        A = scipy.io.mmread(args.matrix)
    if args.rhs is None:
        b = np.ones(A.shape[0])
    elif args.rhs.endswith(".npy"):
        b = np.load(args.rhs)
    else:
        b = np.asarray(scipy.io.mmread(args.rhs).todense() if args.rhs.endswith(".mtx") else np.loadtxt(args.rhs))
    return A, np.asarray(b).ravel()


def _run_mc_solve(args):
    from . import mcls

    if not float(args.histories).is_integer():
        raise ValueError(f"histories must be an integer, got {args.histories!r}")
    A, b = _mc_system(args)
    t0 = time.perf_counter()
    ds = mcls.mc_solve(A, b, method=args.method, histories=int(args.histories), weight_cutoff=args.weight_cutoff,
                       max_steps=args.max_steps, estimator=args.estimator, entries=args.entries,
                       batches=args.batches, seed=args.seed, chunks=args.chunks, force=args.force,
                       tolerance=args.tolerance, max_iterations=args.max_iterations, backend=args.backend,
                       progress=not args.no_progress)
    return ds, time.perf_counter() - t0


def _mc_summary(ds, seconds, output):
    transitions = int(ds.transitions)
    print(f"gpuensembles {__version__} | {ds.attrs['model']} | backend {ds.attrs['backend']} on {ds.attrs['device']}")
    print(f"seed {ds.attrs['seed']} | {int(ds.histories):.3e} histories, {transitions:.3e} transitions in "
          f"{seconds:.2f} s ({transitions / seconds:.3e} transitions/s) -> {output}")
    print(f"n {ds.attrs['n']}, rho(H) {float(ds.rho_H):.6g}, rho(H_hat) {float(ds.rho_H_hat):.6g}, "
          f"mean walk length {float(ds.mean_walk_length):.4g}")
    residual = f"relative residual {float(ds.relative_residual):.3g}" if "relative_residual" in ds else ""
    if "iteration" in ds.dims:
        print(f"{residual} after {ds.sizes['iteration'] - 1} MCSA iterations")
        return
    rel = float(np.linalg.norm(ds.x_stderr) / np.linalg.norm(ds.x))
    print(f"||x_stderr|| / ||x|| = {rel:.3g}" + (f", {residual}" if residual else ""))


def _mc_plot(ds, path):
    """x with its error band over the rows into one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    if "x_stderr" in ds:
        ax.fill_between(ds.row, ds.x - 2 * ds.x_stderr, ds.x + 2 * ds.x_stderr, alpha=0.4, label="x +- 2 stderr")
    ax.plot(ds.row, ds.x, lw=0.8, label="x (Monte Carlo)")
    ax.set(xlabel="row", ylabel="x", title=ds.attrs["model"])
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _common_kwargs(args):
    return dict(realizations=args.realizations, model=args.model, passage=args.passage, integrator=args.integrator,
                seed=args.seed, dtype=args.dtype, backend=args.backend, progress=not args.no_progress,
                chunks=args.chunks, store=args.store)


def _run_escape_times(args):
    t0 = time.perf_counter()
    ds = josephson.escape_times(
        V0=_values(args.V0), damping=_values(args.damping), gamma=_values(args.gamma), D=_values(args.D),
        h=_values(args.h), max_steps=args.max_steps, **_common_kwargs(args),
    )
    return ds, time.perf_counter() - t0


def _run_switching_currents(args):
    preset = dict(PRESETS.get(args.preset, {}))
    physical = {k: _values(getattr(args, k)) if getattr(args, k) is not None else preset.get(k)
                for k in josephson.PHYSICAL}
    h = _values(args.h) if args.h is not None else preset.get("h")
    if h is None:
        raise ValueError("h is required (or a --preset that sets it)")
    normalized = dict(V0=_values(args.V0), damping=_values(args.damping), D=_values(args.D),
                      dgamma=_values(args.dgamma))
    kwargs = dict(h=h, gamma_start=args.gamma_start if args.gamma_start == "auto" else float(args.gamma_start),
                  gamma_end=args.gamma_end, start=args.start, **_common_kwargs(args))
    if any(v is not None for v in physical.values()):
        missing = [k for k, v in physical.items() if v is None]
        if missing:
            raise ValueError(f"the SI form needs {', '.join('--' + k.replace('_', '-') for k in missing)}")
        if any(v is not None for v in normalized.values()):
            raise ValueError("give either the SI options (--R --C --Ic --T --sweep-rate) "
                             "or --V0/--damping/--D/--dgamma")
        kwargs["physical"] = physical
    else:
        kwargs.update({k: v for k, v in normalized.items() if v is not None})
    _estimate(kwargs)
    t0 = time.perf_counter()
    ds = josephson.switching_currents(**kwargs)
    return ds, time.perf_counter() - t0


def _estimate(kwargs):
    """Print the expected work of a switching run (Fulton-Dunkleberger mean, Mel'nikov rate) to stderr."""
    import functools

    from . import _backend, theory

    try:
        if "physical" in kwargs:
            units = josephson.normalize(**kwargs["physical"], h=kwargs["h"])
            V0, damping, D, dgamma = (float(units[k].max()) for k in ("V0", "damping", "D", "dgamma"))
        else:
            V0, damping, D, dgamma = (float(np.max(kwargs.get(k, 1.0))) for k in ("V0", "damping", "D", "dgamma"))
        h = float(np.max(kwargs["h"]))
        rate = functools.partial(theory.escape_rate, V0=V0, damping=damping, theta=D / damping)
        start = kwargs["gamma_start"] if isinstance(kwargs["gamma_start"], float) else 0.0
        mean = theory.fulton_dunkleberger_mean(gamma_dot=dgamma / h, rate=rate, gamma_start=start, points=100)
    except (ValueError, ArithmeticError):
        return  # validation of the run itself reports bad input
    steps = (mean - start) / dgamma * kwargs["realizations"]
    speed = 3e11 if _backend.resolve(kwargs["backend"]) == "cuda" else 5e7 * _backend.numba.config.NUMBA_NUM_THREADS
    hours = steps / speed / 3600
    print(f"estimate: ~{steps:.2g} steps (mean switching gamma {mean:.3f}); about "
          f"{hours * 60:.2g} min at ~{speed:.0e} steps/s" if hours < 1 else
          f"estimate: ~{steps:.2g} steps; about {hours:.3g} h at ~{speed:.0e} steps/s -- consider a faster "
          "--sweep-rate, fewer realizations, --integrator baoab with a 10x larger --h, or a GPU", file=sys.stderr)


def _summary(ds, seconds, output):
    steps = int(ds.steps.sum())
    print(f"gpuensembles {__version__} | {ds.attrs['model']} | backend {ds.attrs['backend']} on {ds.attrs['device']}")
    print(f"seed {ds.attrs['seed']} | {steps:.3e} steps in {seconds:.2f} s ({steps / seconds:.3e} steps/s) -> {output}")
    stats = ds.fpt.mean(censored="drop")
    passed = "switched" if "switched" in ds else "escaped"
    if "switching_current_A" in ds:
        ic = ds.switching_current_A / ds.switching_current
        stats["mean_A"] = stats["mean"] * ic.mean("realization")
    if stats["mean"].ndim == 0:
        text = ", ".join(f"{k} {float(v):.6g}" for k, v in stats.data_vars.items())
        print(text.replace("n_censored", f"not {passed}").replace(" n ", f" {passed} "))
        return
    frame = stats.to_dataframe().rename(columns={"n": passed, "n_censored": f"not {passed}"})
    print(frame.to_string(float_format=lambda x: f"{x:.6g}"))


def _plot(ds, path):
    """Empirical CDF of every parameter point into one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .analysis.plots import plot_cdf

    sample = ds["switching_current" if "switching_current" in ds else "escape_time"]
    sweep = [d for d in sample.dims if d != "realization"]
    points = sample.stack(point=sweep).transpose("point", ...) if sweep else [sample]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for point in points:
        label = ", ".join(f"{d}={float(point[d]):.4g}" for d in sweep) or "simulation"
        plot_cdf(point.copy(data=point.values), ax=ax, label=label)
    ax.set_title(ds.attrs["model"])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _compute(ds, client, show):
    """Compute a dask-backed result, with dask's progress bar (distributed's on a cluster)."""
    if client is not None:
        from distributed import progress

        ds = ds.persist()
        if show:
            progress(ds)
        return ds.compute()
    from dask.diagnostics import ProgressBar

    if show:
        with ProgressBar():
            return ds.compute()
    return ds.compute()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpuensembles", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuensembles {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<model>")
    _add_escape_times(sub)
    _add_switching_currents(sub)
    _add_mc_solve(sub)
    _add_langevin(sub)
    _add_kuramoto(sub)
    _add_ising(sub)
    _add_xorsat(sub)
    args = parser.parse_args(argv)
    client = None
    try:
        if args.cluster:
            from . import cluster

            client = cluster(dashboard_address=None)
        ds, seconds = args.run(args)
        if any(not isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):  # lazy: run the chunks
            t0 = time.perf_counter()
            ds = _compute(ds, client, show=not args.no_progress)
            seconds += time.perf_counter() - t0
    except ValueError as err:
        parser.exit(2, f"gpuensembles: error: {err}\n")
    finally:
        if client is not None:
            client.close()
    ds.to_netcdf(args.output)
    if args.plot_path:
        args.plot(ds, args.plot_path)
    args.summary(ds, seconds, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
