"""Command line: ``gpuensembles <model> ...`` runs an ensemble and writes NetCDF.

There is one subcommand per registered run function (:mod:`gpuensembles.core.registry`).
Any parameter option takes several values (``--D 0.004 0.008 0.012``), which become a
dimension of the output. A progress bar runs on stderr, and a one-screen summary
(device, throughput, mean per parameter point) is printed at the end; the throughput
leaves out the time spent compiling kernels, which the summary states beside it.
"""

import argparse
import re
import sys
import time

import numpy as np

from . import __version__
from .core.cache import compile_seconds
from .core.commands import Seconds
from .core.registry import registered

EXAMPLES = """examples:
  gpuensembles escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 --realizations 5120 -o fpt.nc
  gpuensembles switching-currents --preset li2007 --sweep-rate 2e7 --realizations 200 -o sc.nc --plot sc.png
  gpuensembles mc-solve --problem laplacian-2d --size 30 --histories 1e7 -o x.nc
  gpuensembles langevin --a 0 1 2 4.2 --w 4.9 --g 0.9 --f 0.1 --kT 0.001 --h 0.01282 --steps 200000 \\
      --transient 20000 --realizations 4096 -o v.nc
  gpuensembles kuramoto --N 1048576 --K 4 --width 1 --h 0.01 --steps 2000 --sample-every 20 -o r.nc --plot r.png
  gpuensembles ising --L 16 32 64 --beta 0.40 0.42 0.44 0.46 0.48 --sweeps 20000 --thermalization 2000 \\
      --realizations 32 -o ising.nc --plot binder.png
  gpuensembles xorsat --N 64 96 --instances 20 --runs 10 --clones 4096 --p 0.1 -o tts.nc --plot survival.png
"""


DESCRIPTION = "Run a very large stochastic ensemble (GPU, or all CPU cores) and write it to NetCDF."


def _plain(text: str) -> str:
    """Docstring text as a terminal shows it: no reST roles or literal quotes."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def build_parser() -> argparse.ArgumentParser:
    """The ``gpuensembles`` parser: one subcommand per registered run function."""
    parser = argparse.ArgumentParser(prog="gpuensembles", description=DESCRIPTION, epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuensembles {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<model>")
    for entry in sorted(registered(), key=lambda e: e.command.name):
        command = entry.command
        p = sub.add_parser(command.name, help=command.help, description=_plain(entry.function.__doc__.split("\n\n")[0]),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        p.set_defaults(command_spec=command)
    return parser


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


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command_spec
    client = None
    try:
        if args.cluster:
            from .core.cluster import cluster

            client = cluster(dashboard_address=None)
        t0, compiled = time.perf_counter(), compile_seconds()
        ds = command.run(args)
        if any(not isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):  # lazy: run the chunks
            ds = _compute(ds, client, show=not args.no_progress)
        wall = time.perf_counter() - t0
        # the rate leaves out the kernels' compilation in this process (a cluster's workers compile unseen)
        compiling = None if client is not None else compile_seconds() - compiled
        seconds = Seconds(max(wall - (compiling or 0.0), 1e-9), compiling)
    except ValueError as err:
        parser.exit(2, f"gpuensembles: error: {err}\n")
    finally:
        if client is not None:
            client.close()
    ds.to_netcdf(args.output)
    if args.plot_path:
        command.plot(ds, args.plot_path)
    command.summary(ds, seconds, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
