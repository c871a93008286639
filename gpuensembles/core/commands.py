"""Command-line helpers every family's ``cli.py`` shares: option builders, summaries, plots.

The subcommands themselves are registered with :mod:`gpuensembles.core.registry`;
:mod:`gpuensembles.cli` builds the parser from the registry.
"""

import argparse
import decimal
import re

import numpy as np

from . import backend
from .io import version

_INTEGER = re.compile(r"[+-]?(\d+(\.0*)?|\d*\.?\d+[eE][+-]?\d+)")


def integer(text: str) -> int:
    """An integer option as a user types it: ``5120``, ``-1`` or ``1e6`` (range checks come later).

    Parameters
    ----------
    text : str
        The option's text.

    Returns
    -------
    int
        Its value.

    Raises
    ------
    argparse.ArgumentTypeError
        For text that is not an integer (``2.5``, ``ten``).
    """
    value = decimal.Decimal(text.strip()) if _INTEGER.fullmatch(text.strip()) else None
    if value is not None and value.adjusted() > 300:
        raise argparse.ArgumentTypeError(f"integer too large: {text!r}")
    if value is None or value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}")
    return int(value)


def values(given):
    """A CLI option of one or more numbers as the run functions take it: a scalar or a 1-D array."""
    if given is None:
        return None
    return given[0] if len(given) == 1 else np.asarray(given)


def add_parameter(parser: argparse.ArgumentParser, name: str, help_text: str, default=None, required=False):
    """A float option ``--name`` taking one or more values (several become a dimension)."""
    parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, nargs="+", default=default,
                        required=required, metavar="X", help=f"{help_text} (one or more values)")


def add_run_options(parser: argparse.ArgumentParser, unit: str):
    """Options every subcommand has: seed, backend, output, plot, chunks, cluster, progress.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    unit : str
        What one ``--chunks`` unit counts (e.g. ``"realizations"``).
    """
    parser.add_argument("--seed", type=integer, default=None,
                        help="random seed in [0, 2**32); default: fresh, recorded")
    parser.add_argument("--backend", choices=backend.BACKENDS, default="auto")
    parser.add_argument("-o", "--output", required=True,
                        help="NetCDF file to write (its folder must exist; checked before the run)")
    parser.add_argument("--plot", dest="plot_path", metavar="PNG", help="also draw the result into this PNG file")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output or plot file (refused otherwise, before the run)")
    parser.add_argument("--chunks", type=integer, metavar="N", help=f"{unit} per chunk (a dask-backed run)")
    parser.add_argument("--store", metavar="DIR", help="keep finished chunks in DIR; the same command resumes from it")
    parser.add_argument("--cluster", action="store_true",
                        help="run the chunks on a local cluster (one worker per GPU with dask-cuda, else the CPU); "
                             "prints the dashboard's address")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default="auto",
                        help="draw a progress bar on stderr (default: only when stderr is a terminal)")


def only_with(args: argparse.Namespace, applies: bool, defaults: dict, where: str) -> dict:
    """The values of options that apply only ``where``: their defaults where they apply and are not given.

    Options that take part in this have ``default=None`` in their parser, so that the
    command line can tell a given option from its default.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options.
    applies : bool
        Whether the options apply to this run.
    defaults : dict
        Option ``dest`` -> value when it applies and is not given.
    where : str
        When they apply, in option words (``"--method rates"``), for the message.

    Returns
    -------
    dict
        ``dest -> value`` of the options that apply (empty when they do not).

    Raises
    ------
    ValueError
        Naming the first option given where it does not apply.
    """
    given = [dest for dest in defaults if getattr(args, dest) is not None]
    if not applies:
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} applies only with {where}; leave it out")
        return {}
    return {dest: default if getattr(args, dest) is None else getattr(args, dest) for dest, default in defaults.items()}


def run_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`add_run_options` that every run function takes."""
    return dict(seed=args.seed, backend=args.backend, chunks=args.chunks, store=args.store, progress=args.progress)


class Seconds(float):
    """The seconds a command's run took without compiling, with the compile seconds beside them.

    ``compiling`` is the time spent compiling kernels in this process (excluded from the
    value), or ``None`` when the chunks ran on a cluster, whose workers compile on their
    own: then the value is the whole wall time.
    """

    def __new__(cls, value: float, compiling: float | None = None):
        """``value`` seconds, with ``compiling`` as the attribute of that name."""
        seconds = super().__new__(cls, value)
        seconds.compiling = compiling
        return seconds


def header(ds, seconds: float, work: float, unit: str, output: str):
    """Print the first two summary lines: model, device, seed, work done and its rate.

    The rate is over ``seconds``; when it is a :class:`Seconds`, the line says whether
    compilation was left out (and how long it took) or included (a cluster run).
    """
    compiling = getattr(seconds, "compiling", False)
    note = ("" if compiling is False else "; wall time, the workers' compiling included" if compiling is None
            else f"; compiling {compiling:.2f} s not counted")
    print(f"gpuensembles {version()} | {ds.attrs['model']} | backend {ds.attrs['backend']} on {ds.attrs['device']}")
    reused, items = int(ds.attrs.get("store_items_reused", 0)), int(ds.attrs.get("store_items", 1))
    if reused:  # only what this call computed counts (its share of the work, by items)
        work *= 1.0 - reused / items
        store = f" ({reused} of {items} values came from the store and are not counted)"
        if reused == items:
            print(f"seed {ds.attrs['seed']} | nothing computed in this call: every value came from the store "
                  f"-> {output}")
            return
    else:
        store = ""
    print(f"seed {ds.attrs['seed']} | {work:.3e} {unit} in {seconds:.2f} s ({work / seconds:.3e} {unit}/s{note})"
          f"{store} -> {output}")


def print_table(table, digits: int = 6):
    """Print a Dataset of statistics: a table over its dimensions, or one line for a single point."""
    first = next(iter(table.data_vars.values()))
    if first.ndim:
        print(table.to_dataframe().to_string(float_format=lambda x: f"{x:.{digits}g}"))
    else:
        print(", ".join(f"{k} {float(v):.{digits}g}" for k, v in table.data_vars.items()))


def use_agg():
    """Select matplotlib's file-only backend (the CLI draws PNGs, never windows)."""
    import matplotlib

    matplotlib.use("Agg")
