"""3-XORSAT (3-spin model on random 3-regular 3-uniform hypergraphs) and its quasi-greedy solver (seed 001).

:mod:`~gpuensembles.xorsat.instances` builds, checks, saves and loads instances;
:func:`solve` runs the quasi-greedy algorithm with many multi-spin-coded clones and
returns time-to-solution statistics, which the ``Dataset.tts`` accessor analyses.
"""

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
from .solver import independent_sets, solve

__all__ = ["random_instance", "random_instances", "select_instance", "check_instance", "nullity", "satisfiable",
           "energy", "save_instance", "load_instance", "solve", "independent_sets"]
