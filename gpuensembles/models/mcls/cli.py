"""Subcommand ``mc-solve``."""

import numpy as np

from ...core import commands
from ...core.commands import integer
from ...core.validation import check_count
from . import problems
from .run import ESTIMATORS, METHODS, mc_solve

#: Test matrices ``mc-solve --problem`` knows: builder and default size.
PROBLEMS = {"laplacian-2d": (problems.laplacian_2d, 30), "shifted-laplacian-1d": (problems.shifted_laplacian_1d, 10**6)}


def add_arguments(parser):
    """Options of ``mc-solve``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--problem", choices=sorted(PROBLEMS),
                        help="a test matrix of the Hamilton & Lupo Pasini report")
    source.add_argument("--matrix", metavar="FILE", help="A from a Matrix Market (.mtx) or scipy .npz file")
    parser.add_argument("--size", type=integer, help="grid side m (laplacian-2d, n = m^2; default 30) or n "
                                                 "(shifted-laplacian-1d; default 1e6)")
    parser.add_argument("--rhs", metavar="FILE", help="b from a .npy or .mtx file (default: all ones)")
    parser.add_argument("--method", choices=METHODS, default="adjoint")
    parser.add_argument("--estimator", choices=ESTIMATORS, default="collision")
    parser.add_argument("--histories", type=float, required=True, help="random walks (total; per entry for forward)")
    parser.add_argument("--weight-cutoff", type=float, default=1e-9, help="relative weight that ends a walk")
    parser.add_argument("--max-steps", type=integer, default=None, help="transitions after which a walk ends")
    parser.add_argument("--batches", type=integer, default=64, help="independent batches behind x_stderr")
    parser.add_argument("--entries", type=integer, nargs="+", metavar="I", help="rows to estimate (forward method)")
    parser.add_argument("--force", action="store_true", help="run even if rho(H_hat) >= 1 (infinite variance)")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="--method mcsa: relative residual to reach (default 1e-10)")
    parser.add_argument("--max-iterations", type=integer, default=None,
                        help="--method mcsa: most iterations (default 100)")
    commands.add_run_options(parser, "batches")


def _system(args):
    """``(A, b)`` from ``--problem``/``--size`` or ``--matrix``, and ``--rhs``."""
    import scipy.io
    import scipy.sparse

    if args.problem:
        build, default_size = PROBLEMS[args.problem]
        size = default_size if args.size is None else check_count("--size", args.size)
        try:
            A = build(size)
        except ValueError as err:
            raise ValueError(f"--size {size}: {err}") from None
    else:
        if args.size is not None:
            raise ValueError("--size sets the size of a --problem matrix; a --matrix file has its own")
        A = _read("--matrix", args.matrix, scipy.sparse.load_npz if args.matrix.endswith(".npz") else scipy.io.mmread)
    if args.rhs is None:
        b = np.ones(A.shape[0])
    elif args.rhs.endswith(".npy"):
        b = _read("--rhs", args.rhs, lambda path: np.load(path, allow_pickle=False))
    elif args.rhs.endswith(".mtx"):
        b = _read("--rhs", args.rhs, lambda path: scipy.io.mmread(path).todense())
    else:
        b = _read("--rhs", args.rhs, np.loadtxt)
    return A, np.asarray(b).ravel()


def _read(option, path, read):
    """``read(path)``, or a ValueError naming ``option`` and the file when it cannot be read."""
    try:
        return read(path)
    except (OSError, ValueError, TypeError) as err:  # missing, unreadable or malformed
        raise ValueError(f"{option} {path!r} cannot be read: {err}") from None


def run(args):
    """Run ``mc-solve``."""
    if not float(args.histories).is_integer():
        raise ValueError(f"histories must be an integer, got {args.histories!r}")
    A, b = _system(args)
    mcsa = commands.only_with(args, args.method == "mcsa", {"tolerance": 1e-10, "max_iterations": 100},
                              "--method mcsa")
    return mc_solve(A, b, method=args.method, histories=int(args.histories), weight_cutoff=args.weight_cutoff,
                    max_steps=args.max_steps, estimator=args.estimator, entries=args.entries, batches=args.batches,
                    force=args.force, **mcsa, **commands.run_options(args))


def summary(ds, seconds, output):
    """Histories, transitions and rate, spectral radii, then the error or the MCSA residual."""
    transitions = int(ds.transitions)
    commands.header(ds, seconds, transitions, "transitions", output)
    print(f"{int(ds.histories):.3e} histories; n {ds.attrs['n']}, rho(H) {float(ds.rho_H):.6g}, "
          f"rho(H_hat) {float(ds.rho_H_hat):.6g}, mean walk length {float(ds.mean_walk_length):.4g}")
    residual = f"relative residual {float(ds.relative_residual):.3g}" if "relative_residual" in ds else ""
    if "iteration" in ds.dims:
        print(f"{residual} after {ds.sizes['iteration'] - 1} MCSA iterations")
        return
    rel = float(np.linalg.norm(ds.x_stderr) / np.linalg.norm(ds.x))
    print(f"||x_stderr|| / ||x|| = {rel:.3g}" + (f", {residual}" if residual else ""))


def plot(ds, path):
    """``x`` over the rows with its band of 2 standard errors (MCSA: its residual per iteration) into one PNG."""
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis.plots import legend_outside, save

    fig, ax = plt.subplots(figsize=(7, 4))
    if "x_stderr" in ds:
        ax.fill_between(ds.row, ds.x - 2 * ds.x_stderr, ds.x + 2 * ds.x_stderr, alpha=0.4,
                        label=f"\u00b1 2 stderr (from {int(ds.attrs['batches'])} batches)")
    ax.plot(ds.row, ds.x, lw=0.8, label=f"x, Monte Carlo estimate ({ds.attrs['method']} walks)")
    ax.set(xlabel="row i of A x = b", ylabel="solution x_i")
    ax.set_title(f"Monte Carlo solution of A x = b, {ds.attrs['method']} method\n"
                 f"n = {int(ds.attrs['n'])}, {float(ds['histories'].sum()):.3g} histories", fontsize="medium")
    legend_outside(ax)
    save(ax, path)
