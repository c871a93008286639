"""3-XORSAT (3-spin model on random 3-regular hypergraphs) and its quasi-greedy solver (Bernaschi et al. 2021).

:mod:`.instances` builds, checks, saves and loads instances; :func:`solve` runs the
quasi-greedy algorithm (:mod:`.physics`, on its own kernel template :mod:`.kernels`) with
many multi-spin-coded clones and returns time-to-solution statistics, which the
``Dataset.tts`` accessor of :mod:`.analysis` analyses.
"""

from ...core.registry import Command, RunFunction, register
from . import analysis, cli  # noqa: F401  (analysis registers the Dataset.tts accessor)
from .instances import (
    check_instance,
    energy,
    load_instance,
    nullity,
    random_instance,
    random_instances,
    satisfiable,
    save_instance,
    select_instance,
)
from .run import independent_sets, solve

__all__ = ["random_instance", "random_instances", "select_instance", "check_instance", "nullity", "satisfiable",
           "energy", "save_instance", "load_instance", "solve", "independent_sets"]


register(RunFunction(
    name="xorsat.solve", function=solve, family="xorsat",
    command=Command("xorsat", "3-XORSAT time to solution of the quasi-greedy solver",
                    cli.add_arguments, cli.run, cli.summary, cli.plot),
    example=lambda: dict(instances=random_instance(24, seed=4), p=[0.05, 0.5], clones=40, runs=4, timeout=12, seed=1),
    example_chunks=3,
))
