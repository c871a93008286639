"""asv benchmarks: switching-current integration throughput (steps/s), and the occupancy
that the Li et al. (2007) experiment allows (30,000 realizations over 1 or 4 GPUs).

Run with asv or through ``python -m benchmarks.li2007``.
"""

import time

import gpuensembles as ge
from gpuensembles.models.josephson import junction as josephson

from . import baselines
from .bench_escape_times import gpu_available

#: Li et al., PRL 99, 037002 (2007), as in Pierro et al. 2018 Fig. 11(b): R, C, Ic, T (SI).
LI2007 = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2)
H = 1e-4


def li2007_case(sweep_rate, h=H):
    """Normalized parameters of the Li device at ``sweep_rate`` (1/s) and step ``h``."""
    u = josephson.normalize(**LI2007, sweep_rate=sweep_rate, h=h)
    return {k: float(u[k]) for k in ("V0", "damping", "D", "dgamma")}


def switching_steps(realizations, sweep_rate, backend="cuda", seed=1, h=H, integrator="euler"):
    """Steps and seconds of one ``switching_currents`` call for the Li device (after a warm-up)."""
    kw = dict(li2007_case(sweep_rate, h), h=h, integrator=integrator, backend=backend, progress=False)
    ge.switching_currents(**kw, realizations=64, seed=seed)
    t0 = time.perf_counter()
    ds = ge.switching_currents(**kw, realizations=realizations, seed=seed)
    return int(ds.steps.sum()), time.perf_counter() - t0, ds


class SwitchingThroughput:
    """Li device at a 2e6/s sweep (3.5e7 steps per realization): throughput at full occupancy."""

    params = ([1 << 20],)
    param_names = ["realizations"]
    timeout = 600

    def setup(self, realizations):
        if not gpu_available():
            raise NotImplementedError("no GPU")

    def track_steps_per_second(self, realizations):
        steps, seconds, ds = switching_steps(realizations, 2e6)
        assert bool(ds.switched.all())
        return steps / seconds

    track_steps_per_second.unit = "steps/s"


class SwitchingCPU:
    """Li device at a 2e8/s sweep (4e5 steps per realization) on the CPU, against NumPy."""

    timeout = 600
    sweep_rate = 2e8
    realizations = 1 << 10
    numpy_realizations = 1 << 8

    def track_steps_per_second(self):
        steps, seconds, ds = switching_steps(self.realizations, self.sweep_rate, backend="cpu")
        assert bool(ds.switched.all())
        return steps / seconds

    track_steps_per_second.unit = "steps/s"

    def track_numpy_vectorised(self):
        case = li2007_case(self.sweep_rate)
        steps, seconds = baselines.numpy_escape_steps(damping=case["damping"], gamma=0.0, D=case["D"], h=H,
                                                     realizations=self.numpy_realizations, V0=case["V0"],
                                                     dgamma=case["dgamma"])
        return steps / seconds

    track_numpy_vectorised.unit = "steps/s"
