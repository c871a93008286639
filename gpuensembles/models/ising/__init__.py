"""The 2D Ising model (Mandelli 2014): checkerboard Metropolis over lattice size and beta.

:func:`ising` runs the multi-spin (1 bit per spin) or int8 kernels of :mod:`.kernels`
built from the scalar updates of :mod:`.physics`; :mod:`.theory` holds Onsager's and the
exact finite-torus references; :mod:`.analysis` registers the ``Dataset.ising`` accessor.
"""

from ...core.registry import Command, RunFunction, register
from . import analysis, cli, theory  # noqa: F401  (analysis registers the Dataset.ising accessor)
from .run import ising

__all__ = ["ising", "theory"]

register(RunFunction(
    name="ising", function=ising, family="ising",
    command=Command("ising", "2D Ising model, checkerboard Metropolis (multi-spin coded)",
                    cli.add_arguments, cli.run, cli.summary, cli.plot),
    example=lambda: dict(L=4, beta=[0.3, 0.5], sweeps=4, thermalization=1, measure_every=2, bins=2, realizations=40,
                         seed=7),
    example_chunks=1,
))
