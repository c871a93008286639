"""Command line: ``gpuensembles <model> ...`` runs an ensemble and writes NetCDF.

There is one subcommand per registered run function (:mod:`gpuensembles.core.registry`),
and one per registered analysis (``fit``: measured histograms in, a junction out).
Any parameter option takes several values (``--D 0.004 0.008 0.012``), which become a
dimension of the output. The output paths are checked before the run; bad input exits
with status 2 and one line naming the option; a progress bar runs on stderr when it is a
terminal (``--progress``/``--no-progress`` decide otherwise); a one-screen summary
(device, throughput, mean per parameter point) is printed at the end; the throughput
leaves out the time spent compiling kernels, which the summary states beside it. A result
that cannot be written where asked is saved to a fallback file (exit status 1).
"""

import argparse
import contextlib
import importlib.util
import re
import sys
import time
import warnings

import numpy as np

from . import __version__
from .core.cache import compile_seconds
from .core.commands import Seconds
from .core.progress import shown
from .core.registry import analyses, registered
from .core.validation import check_memory, gathered

EXAMPLES = """examples (each under a minute on two CPU cores, except the one marked GPU-sized):
  gpuensembles escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 --realizations 5120 -o fpt.nc
  gpuensembles switching-currents --preset li2007 --sweep-rate 2e7 --realizations 200 -o sc.nc --plot sc.png
  gpuensembles switching-currents --preset li2007 --sweep-rate 1 200 1e4 --h 1e-3 --integrator baoab \\
      --method rates --realizations 100000 -o li.nc --plot li.png
      # GPU-sized: about 16 s on an H100, about 16 min on two CPU cores
  gpuensembles switching-currents --preset li2007 --sweep-rate 2e7 --criterion voltage --realizations 200 -o sv.nc
  gpuensembles retrapping-currents --preset li2007 --sweep-rate 2e7 --h 1e-3 --realizations 200 -o rc.nc \\
      --plot rc.png
  gpuensembles escape-rates --model overdamped --damping 1 --D 0.05 --gamma 0.3 0.5 0.7 0.9 --h 0.01 \\
      --rel-error 0.05 -o rates.nc --plot rates.png
  gpuensembles mc-solve --problem laplacian-2d --size 30 --histories 1e6 -o x.nc
  gpuensembles langevin --a 0 1 2 4.2 --w 4.9 --g 0.9 --f 0.1 --kT 0.001 --h 0.01282 --steps 200000 \\
      --transient 20000 --realizations 4096 -o v.nc
  gpuensembles kuramoto --N 1048576 --K 4 --width 1 --h 0.01 --steps 2000 --sample-every 20 -o r.nc --plot r.png
  gpuensembles ising --L 16 32 64 --beta 0.40 0.42 0.44 0.46 0.48 --sweeps 20000 --thermalization 2000 \\
      --realizations 32 -o ising.nc --plot binder.png
  gpuensembles xorsat --N 64 96 --instances 20 --runs 10 --clones 4096 --p 0.1 -o tts.nc --plot survival.png
  gpuensembles fit switching.csv --sweep-rate 7.48e-5 --units A --C 88e-15 --R 250 -o fit.nc --plot fit.png
"""


DESCRIPTION = "Run a very large stochastic ensemble (GPU, or all CPU cores) and write it to NetCDF."

_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-(inf|infinity|nan)", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """An argparse parser that reads negative numbers (``-2e7``, ``-inf``) as values, never as options, in one line.

    (argparse takes ``-2e7`` for an unknown option and answers ``expected at least one
    argument``; then the run function could not say what the allowed range is.)
    """

    def _parse_optional(self, arg_string):
        if _NUMBER.fullmatch(arg_string):
            return None
        return super()._parse_optional(arg_string)

    def error(self, message):
        """One line, as every error of the command line (``--help`` shows the usage)."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _plain(text: str) -> str:
    """Docstring text as a terminal shows it: no reST roles or literal quotes."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "").replace("::", ":")


def _examples(command: str) -> str:
    """The lines of :data:`EXAMPLES` that run ``command`` (with their continuation lines)."""
    lines, keep = [], False
    for line in EXAMPLES.splitlines()[1:]:
        if line.startswith("  gpuensembles "):
            keep = line.startswith(f"  gpuensembles {command} ")
        if keep:
            lines.append(line)
    return "example:\n" + "\n".join(lines) + "\n" if lines else ""


def build_parser() -> argparse.ArgumentParser:
    """The ``gpuensembles`` parser: one subcommand per registered run function."""
    parser = _Parser(prog="gpuensembles", description=DESCRIPTION, epilog=EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuensembles {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<model>")
    for entry in sorted(registered(), key=lambda e: e.command.name):
        command = entry.command
        p = sub.add_parser(command.name, help=command.help, description=_plain(entry.function.__doc__.split("\n\n")[0]),
                           epilog=_examples(command.name), formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        p.set_defaults(command_spec=command, subparser=p)
    for command, function in analyses():
        p = sub.add_parser(command.name, help=command.help, description=_plain(function.__doc__.split("\n\n")[0]),
                           epilog=_examples(command.name), formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        p.set_defaults(command_spec=command, subparser=p)
    return parser


def _as_options(message: str, parser: argparse.ArgumentParser) -> str:
    """``message`` with the run function's parameter names replaced by the options the user typed.

    A name is replaced where it is used as a parameter (``gamma must ...``, ``h is too
    large``, ``realizations=...``, ``steps (48)``), not where the word is prose.
    """
    options = {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}
    options.pop("help", None)
    names = "|".join(re.escape(d) for d in sorted(options, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.'\"-])({names})(?={_USED_AS_PARAMETER})")
    return pattern.sub(lambda m: options[m.group(1)], message)


#: What follows a parameter's name where a message uses it as the parameter.
_USED_AS_PARAMETER = r" must\b| is too\b| has repeated\b| overflows\b| applies to\b| = |=| \(| and [\w-]+ give"


def _worker_device(backend) -> tuple:
    """``(backend, device)`` that ``backend`` resolves to in this process (run on each worker)."""
    from gpuensembles.core import backend as _backend

    resolved = _backend.resolve(backend)
    return resolved, _backend.device_name(resolved)


def _compute(ds, client, show):
    """Compute a dask-backed result, with a progress bar that shows the time left (tqdm) on stderr.

    The result's ``backend`` and ``device`` become those that ran it: this process's, or on
    a cluster those of the workers that ran its tasks.
    """
    if client is None:
        from tqdm.dask import TqdmCallback

        with TqdmCallback(desc="dask tasks", file=sys.stderr, leave=False) if show else contextlib.nullcontext():
            ds = ds.compute()
        ran_on = [_worker_device(ds.attrs.get("backend", "auto"))]
    else:
        from distributed import as_completed, futures_of, get_task_stream
        from tqdm import tqdm

        with get_task_stream(client) as stream:
            ds = ds.persist()
            if show:  # a bar with the time left, as the local runs draw
                futures = futures_of(ds)
                with tqdm(total=len(futures), desc="dask tasks on the cluster", file=sys.stderr) as bar:
                    for _ in as_completed(futures):
                        bar.update()
            ds = ds.compute()
        workers = sorted({task["worker"] for task in stream.data})
        ran_on = list(client.run(_worker_device, ds.attrs.get("backend", "auto"), workers=workers).values())
    from .core.backend import PER_WORKER_DEVICE

    if ds.attrs.get("device") == PER_WORKER_DEVICE and ran_on:
        ds.attrs["backend"] = ", ".join(sorted({b for b, _ in ran_on}))
        ds.attrs["device"] = ", ".join(sorted({d for _, d in ran_on}))
        if client is not None:
            ds.attrs["device"] += f" ({len(ran_on)} worker(s))"
    return ds


def _check_paths(args):
    """The files and folders the run writes, before it starts (named by their options)."""
    from .core.io import check_output
    from .core.store import check_writable

    check_output(args.output, "-o/--output", overwrite=args.overwrite)
    if args.plot_path:
        check_output(args.plot_path, "--plot", overwrite=args.overwrite)
        if importlib.util.find_spec("matplotlib") is None:  # found after the run, it would lose the drawing
            raise ValueError("--plot needs matplotlib, which is not installed: pip install 'gpuensembles[plot]' "
                             "(or leave out --plot)")
    if getattr(args, "store", None):
        check_writable(args.store, "--store")


def _start_cluster():
    """A local cluster with its dashboard on a free port; its address goes to stderr."""
    from .core.cluster import cluster

    client = cluster(dashboard_address=":0")
    print(f"cluster: {len(client.nthreads())} worker(s); dashboard {client.dashboard_link}",
          file=sys.stderr)
    return client


def _given_twice(argv, parser: argparse.ArgumentParser):
    """The first option of ``parser`` that ``argv`` gives twice (an option takes its values once), or None."""
    seen = set()
    for token in argv:
        if not token.startswith("-") or _NUMBER.fullmatch(token):
            continue
        action = parser._option_string_actions.get(token.split("=", 1)[0])
        if action is None or isinstance(action, argparse._AppendAction):
            continue
        if action.dest in seen:
            return max(action.option_strings, key=len)
        seen.add(action.dest)
    return None


def _one_line(message, category, filename, lineno, file=None, line=None):
    """A warning as the command line shows it: one line, without the source file and line."""
    text = " ".join(str(message).split())
    print(f"gpuensembles: warning: {text}", file=sys.stderr if file is None else file)


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    command, sub = args.command_spec, args.subparser

    def usage_error(err):
        """Exit with status 2 and one line naming the option (argparse's convention for bad usage)."""
        sub.exit(2, f"gpuensembles {command.name}: error: {_as_options(str(err), sub)}\n")

    twice = _given_twice(argv[argv.index(command.name) + 1:] if command.name in argv else argv, sub)
    if twice:
        usage_error(ValueError(f"{twice} is given twice: an option takes its values once (several values after one "
                               f"{twice} become a dimension)"))
    with warnings.catch_warnings():
        warnings.showwarning = _one_line
        try:
            return _run(args, command, sub, usage_error)
        except KeyboardInterrupt:
            store = getattr(args, "store", None)
            kept = (f"the finished chunks are kept in {store}: the same command resumes from them" if store else
                    "nothing was kept (--store DIR keeps finished chunks, and the same command then resumes)")
            print(f"gpuensembles {command.name}: interrupted; {kept}", file=sys.stderr)
            return 130


def _run(args, command, sub, usage_error) -> int:
    """Check the paths, run (on a cluster with ``--cluster``), then write, plot and summarise the result."""
    client = None
    try:
        _check_paths(args)
        show = shown(args.progress)
        if args.cluster:
            client = _start_cluster()
        t0, compiled = time.perf_counter(), compile_seconds()
        with gathered(GATHER_FIX):  # the result is computed whole here: lazy results are checked whole too
            ds = command.run(args)
        if any(not isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):  # lazy: run the chunks
            check_memory(ds.nbytes, "the result the command line gathers", fix=GATHER_FIX)
            ds = _compute(ds, client, show=show)
        wall = time.perf_counter() - t0
        # the rate leaves out the kernels' compilation in this process (a cluster's workers compile unseen)
        compiling = None if client is not None else compile_seconds() - compiled
        seconds = Seconds(max(wall - (compiling or 0.0), 1e-9), compiling)
    except (ValueError, TypeError) as err:
        usage_error(err)
    finally:
        if client is not None:
            client.close()
    return _finish(ds, args, command, seconds)


#: What to do when a result is too large for the command line's process.
GATHER_FIX = ("the command line holds the whole result in its own process (--chunks and --cluster do not change "
              "that); ask for less, or use the Python API, whose lazy results ds.to_netcdf(path) writes chunk by chunk")


def _finish(ds, args, command, seconds) -> int:
    """Write the result (to a fallback file if the output cannot be written), plot it, summarise it."""
    from .core.io import save_result

    status = 0
    try:
        written, failure = save_result(ds, args.output, command.name)
    except OSError as err:
        print(f"gpuensembles {command.name}: error: {err}; the result is lost", file=sys.stderr)
        return 1
    if failure is not None:
        print(f"gpuensembles {command.name}: error: could not write {args.output} ({failure}); "
              f"the result was saved to {written} instead", file=sys.stderr)
        status = 1
    if args.plot_path:
        try:
            command.plot(ds, args.plot_path)
        except OSError as err:
            print(f"gpuensembles {command.name}: error: could not draw {args.plot_path} ({err}); "
                  f"the result is in {written}", file=sys.stderr)
            status = 1
    command.summary(ds, seconds, str(written))
    return status


if __name__ == "__main__":
    sys.exit(main())
