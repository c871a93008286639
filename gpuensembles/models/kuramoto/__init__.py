"""The noisy Kuramoto model (Januszewski & Kostur 2010): N globally coupled phase oscillators.

:func:`kuramoto` runs the mean-field (O(N)) or coupling-matrix (O(N^2)) path of the
generic coupled-oscillator template with the step of :mod:`.physics`; :mod:`.theory`
has the N -> infinity order parameter.
"""

from ...core.registry import Command, RunFunction, register
from . import analysis, cli, theory  # noqa: F401  (analysis registers the Dataset.kuramoto accessor)
from .run import kuramoto

__all__ = ["kuramoto", "theory"]

register(RunFunction(
    name="kuramoto", function=kuramoto, family="kuramoto",
    command=Command("kuramoto", "globally coupled phase oscillators (mean field)",
                    cli.add_arguments, cli.run, cli.summary, cli.plot),
    example=lambda: dict(N=18, K=2.0, h=0.02, steps=12, sample_every=4, kT=0.2, bins=8, realizations=3, seed=3),
    example_chunks=1,
))
