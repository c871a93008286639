"""Command line: ``gpuensembles <model> ...`` runs an ensemble and writes NetCDF.

Example::

    gpuensembles escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 \\
        --realizations 5120 -o fpt.nc

Any parameter option takes several values (``--D 0.004 0.008 0.012``), which become a
dimension of the output. A progress bar runs on stderr, and a one-screen summary
(device, throughput, mean passage time per parameter point) is printed at the end.
"""

import argparse
import sys
import time

import numpy as np

from . import __version__
from .models import josephson


def _values(values):
    return values[0] if len(values) == 1 else np.asarray(values)


def _add_escape_times(sub):
    p = sub.add_parser("escape-times", help="escape times of a Josephson junction (washboard Langevin model)",
                       description=josephson.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in (("V0", [1.0]), ("damping", None), ("gamma", None), ("D", None), ("h", None)):
        meta = josephson.PARAMETERS[name]
        p.add_argument(f"--{name}", type=float, nargs="+", default=default, required=default is None,
                       metavar="X", help=f"{meta['long_name']} (one or more values)")
    p.add_argument("--realizations", type=int, required=True, help="realizations per parameter point")
    p.add_argument("--model", choices=josephson.MODELS, default="underdamped")
    p.add_argument("--max-steps", type=int, default=10**9, help="steps after which a realization gives up")
    p.add_argument("--seed", type=int, default=None, help="random seed in [0, 2**32); default: fresh, recorded")
    p.add_argument("--dtype", choices=josephson.DTYPES, default="float32")
    p.add_argument("--backend", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument("-o", "--output", required=True, help="NetCDF file to write")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_escape_times)


def _run_escape_times(args):
    t0 = time.perf_counter()
    ds = josephson.escape_times(
        V0=_values(args.V0), damping=_values(args.damping), gamma=_values(args.gamma), D=_values(args.D),
        h=_values(args.h), realizations=args.realizations, model=args.model, max_steps=args.max_steps,
        seed=args.seed, dtype=args.dtype, backend=args.backend, progress=not args.no_progress,
    )
    seconds = time.perf_counter() - t0
    ds.to_netcdf(args.output)
    _summary(ds, seconds, args.output)


def _summary(ds, seconds, output):
    steps = int(ds.steps.sum())
    print(f"gpuensembles {__version__} | {ds.attrs['model']} | backend {ds.attrs['backend']} on {ds.attrs['device']}")
    print(f"seed {ds.attrs['seed']} | {steps:.3e} steps in {seconds:.2f} s ({steps / seconds:.3e} steps/s) -> {output}")
    stats = ds.fpt.mean(censored="drop")
    frame = stats.to_dataframe() if stats["mean"].ndim else None
    if frame is None:
        print(f"mean escape time {float(stats['mean']):.6g} +- {float(stats['stderr']):.2g} "
              f"({int(stats['n'])} escaped, {int(stats['n_censored'])} did not)")
        return
    print(frame.rename(columns={"n": "escaped", "n_censored": "not escaped"}).to_string(float_format=lambda x: f"{x:.6g}"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpuensembles", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuensembles {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<model>")
    _add_escape_times(sub)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except ValueError as err:
        parser.exit(2, f"gpuensembles: error: {err}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
