"""The registry of run functions: one entry per public run function of a model family.

A family registers its run functions when it is imported (``register(RunFunction(...))``
at the end of its ``__init__.py``). The registry feeds the command line (one subcommand
per entry), the API documentation and the test that runs every registered function
(same result for any chunking, provenance present, lazy with ``chunks=``). The registry
itself knows no model.
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import xarray as xr


@dataclass(frozen=True)
class Command:
    """The command-line subcommand of a run function.

    Attributes
    ----------
    name : str
        Subcommand name, e.g. ``"escape-times"``.
    help : str
        One line for ``gpuensembles --help``.
    add_arguments : callable
        ``add_arguments(parser)`` adds the subcommand's options to an
        :class:`argparse.ArgumentParser` (the options every subcommand shares come from
        :func:`gpuensembles.core.commands.add_run_options`).
    run : callable
        ``run(args) -> Dataset``: call the run function with the parsed options.
    summary : callable
        ``summary(ds, seconds, output)`` prints the one-screen summary.
    plot : callable
        ``plot(ds, path)`` draws the result into a PNG file.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], xr.Dataset]
    summary: Callable[[xr.Dataset, float, str], None]
    plot: Callable[[xr.Dataset, str], None]


@dataclass(frozen=True)
class RunFunction:
    """A public run function and what the CLI, the docs and the tests need of it.

    Attributes
    ----------
    name : str
        Public name, as exported by :mod:`gpuensembles` (e.g. ``"escape_times"``) or
        reached through its family (``"xorsat.solve"``).
    function : callable
        The run function. It takes ``seed=``, ``chunks=``, ``backend=`` and ``progress=``
        and returns an :class:`xarray.Dataset` with provenance attributes.
    family : str
        The model family (the package under :mod:`gpuensembles.models`).
    command : Command
        Its command-line subcommand.
    example : callable
        ``example() -> dict``: keyword arguments of a run small enough for a unit test
        on the CPU backend (seconds), with a fixed seed.
    example_chunks : int or dict
        A ``chunks=`` value that splits the example into several tasks.
    """

    name: str
    function: Callable[..., xr.Dataset]
    family: str
    command: Command
    example: Callable[[], dict[str, Any]]
    example_chunks: Any


_REGISTRY: dict[str, RunFunction] = {}


def register(entry: RunFunction) -> RunFunction:
    """Add ``entry`` to the registry (replacing an entry of the same name, as a module reload does).

    Raises
    ------
    ValueError
        If another run function already has the subcommand ``entry.command.name``.
    """
    for other in _REGISTRY.values():
        if other.name != entry.name and other.command.name == entry.command.name:
            raise ValueError(f"subcommand {entry.command.name!r} of {entry.name!r} is already {other.name!r}'s")
    _REGISTRY[entry.name] = entry
    return entry


def registered() -> tuple[RunFunction, ...]:
    """Every registered run function, in the order of registration."""
    return tuple(_REGISTRY.values())


_ANALYSES: dict[str, tuple[Command, Callable]] = {}


def register_analysis(command: Command, function: Callable) -> Command:
    """Add a subcommand that analyses data rather than running an ensemble (e.g. ``fit``).

    Parameters
    ----------
    command : Command
        The subcommand; its ``run(args)`` returns the Dataset that is written, plotted and summarised.
    function : callable
        The public function behind it (its docstring's first paragraph describes the subcommand).

    Returns
    -------
    Command
        ``command``.
    """
    names = {entry.command.name for entry in _REGISTRY.values()}
    if command.name in names:
        raise ValueError(f"subcommand {command.name!r} is already a run function's")
    _ANALYSES[command.name] = (command, function)
    return command


def analyses() -> tuple[tuple[Command, Callable], ...]:
    """Every registered analysis subcommand with its function, in the order of registration."""
    return tuple(_ANALYSES.values())


def autosummary_rst(package: str = "gpuensembles") -> str:
    """An ``autosummary`` block of every registered run function, by family (for the API docs).

    ``docs/conf.py`` writes it to ``docs/api_run_functions.rst`` (not in git), which ``api.rst``
    includes: a newly registered run function is documented without editing the docs.
    """
    lines = []
    for family in dict.fromkeys(entry.family for entry in registered()):
        lines += [f".. rubric:: {family}", "", ".. autosummary::", "   :toctree: generated", ""]
        lines += [f"   {package}.{entry.name}" for entry in registered() if entry.family == family]
        lines.append("")
    return "\n".join(lines)
