"""The driven Brownian particle in a periodic potential (Januszewski & Kostur 2010, Stewart-McCumber model).

:func:`langevin` integrates many trajectories over parameter grids on the generic
trajectory template (:mod:`.physics`: SRK2 and Euler steps); :mod:`.theory` has
Stratonovich's exact drift; :mod:`.analysis` registers the ``Dataset.langevin`` accessor.
"""

from ...core.registry import Command, RunFunction, register
from . import analysis, cli, theory  # noqa: F401  (analysis registers the Dataset.langevin accessor)
from .run import langevin

__all__ = ["langevin", "theory"]

register(RunFunction(
    name="langevin", function=langevin, family="langevin",
    command=Command("langevin", "driven Brownian particle in a periodic potential (SRK2)",
                    cli.add_arguments, cli.run, cli.summary, cli.plot),
    example=lambda: dict(a=[0.0, 2.0], f=0.3, kT=0.5, g=2.0, h=0.01, steps=48, sample_every=12, histogram=(0, 1),
                         realizations=5, seed=8, start="uniform", dtype="float64"),
    example_chunks=2,
))
