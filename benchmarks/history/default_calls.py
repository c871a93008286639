"""The calls whose speed the performance history follows, one asv result per commit.

They use the public API only, so that every commit of the package runs them: a commit is
measured with its own ``gpuensembles`` first on ``PYTHONPATH`` (``benchmarks/gpu_history.sh``)
and these benchmarks of the current tree. Each returns the best of three calls after one
that compiles or loads the kernels; the calls are the defaults a user starts from.
"""

import math
import os
import time
import warnings
from pathlib import Path

import gpuensembles as ge

BETA_C = 0.5 * math.log1p(math.sqrt(2.0))
#: Sweeps per Ising call: about a second per call before the measurements moved into the
#: sweeps (H100), a tenth of one after.
ISING_SWEEPS = {2048: 10_000, 16384: 1_000}
#: The README's main job (``gpuensembles escape-times ...``), as a Python call.
README_JOB = dict(damping=0.05, gamma=0.5, D=0.01, h=0.004, realizations=5120, seed=1)
REPEATS = 3


def _check_source():
    """Refuse to measure another package than the commit's: ``benchmarks/gpu_history.sh`` names its
    folder in ``GPUENSEMBLES_HISTORY_SOURCE`` (asv passes the environment on, but sets its own path)."""
    source = os.environ.get("GPUENSEMBLES_HISTORY_SOURCE")
    if source and not Path(ge.__file__).resolve().is_relative_to(Path(source).resolve()):
        raise RuntimeError(f"gpuensembles comes from {ge.__file__}, not from the commit's {source}")


def _best_seconds(call) -> float:
    _check_source()
    best = math.inf
    with warnings.catch_warnings():  # Ising calls started cold warn that their chains still drift
        warnings.simplefilter("ignore", RuntimeWarning)
        call()
        for _ in range(REPEATS):
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
    return best


class IsingDefaultCall:
    """``ge.ising(L=L, beta=beta_c, sweeps=S, thermalization=0)``: one lattice, measuring every sweep."""

    params = (list(ISING_SWEEPS),)
    param_names = ["L"]
    timeout = 300

    def track_flips_per_ns(self, L):
        sweeps = ISING_SWEEPS[L]
        seconds = _best_seconds(lambda: ge.ising(L=L, beta=BETA_C, sweeps=sweeps, thermalization=0, progress=False))
        return L * L * sweeps / seconds / 1e9

    track_flips_per_ns.unit = "flips/ns"


class ReadmeJob:
    """The README's main job in a warm process: 5120 escapes of the seed's Fig. 10 junction."""

    timeout = 120

    def track_seconds(self):
        return _best_seconds(lambda: ge.escape_times(**README_JOB, progress=False))

    track_seconds.unit = "seconds"
