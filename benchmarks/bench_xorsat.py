"""3-XORSAT quasi-greedy solver: spin updates per ns, and the mean time to solution (Bernaschi et al. 2021).

asv runs the ``track_*`` methods; ``python -m benchmarks.bench_xorsat [--quick]`` prints:

* throughput: spin updates (one variable of one clone) per ns at ``N = 256`` with ``2^20``
  clones (GPU), the difference of two timed-out calls that differ only in the timeout,
  so set-up cancels; the same solver on the CPU backend of the same machine is the
  baseline of the same run;
* tau: the mean TTS of the median instance of 100 random instances at ``N = 128`` (the
  seed's 256-variable challenge size; anchor 0.0275 s on V100 GPUs), its 99th percentile;
* growth: the median instance's tau over ``N = 64 .. 192`` and the fitted rate ``b`` of
  ``ln tau = a + b N`` (seed: about 0.08 per variable);
* p: the median tau over a grid of ``p`` at ``N = 128``, the optimum from a parabola
  through ``ln tau`` around the minimum, and its pseudo-temperature ``T = -2 / ln p``;
* timeouts (the seed's Fig. 4): per instance, tau from full runs against the estimate
  from runs with a timeout of a tenth of it (``ds.tts.from_timeouts``), with ``2^12``
  clones so that tau / 10 is far above the clones' descent from their random start.
"""

import argparse
import time

import numba
import numpy as np

import gpuensembles as ge

from . import measure
from .bench_escape_times import gpu_available

#: (N, clones, timeout sweeps of the longer call)
THROUGHPUT = {"cuda": (256, 2**20, 2000), "cpu": (256, 2**14, 400)}
#: ``python -m benchmarks``: (N, clones, timeout) of the package's row and of its CPU baseline, per backend.
TABLE = {"cuda": (THROUGHPUT["cuda"], THROUGHPUT["cpu"]), "cpu": ((256, 2**10, 40), (256, 2**10, 40))}
#: N -> (instances, runs per instance) for the growth fit, on a GPU with 2^20 clones
GROWTH = {64: (20, 8), 96: (20, 8), 128: (100, 10), 160: (20, 6), 192: (6, 4)}
P_GRID = (0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2)
QUICK = {"clones": 2**8, "growth": {24: (4, 4), 36: (4, 4), 48: (4, 4)}, "p_N": 36, "p_count": 4, "p_runs": 4,
         "timeouts": (60, 2, 32, 16, 160)}
#: (N, instances, clones, full runs, runs with the timeout) of the timeouts section on a GPU
TIMEOUTS = (128, 10, 2**12, 32, 320)


def _timed_solve(instance, clones, timeout, backend):
    t0 = time.perf_counter()
    ds = ge.xorsat.solve(instance, p=0.1, clones=clones, timeout=timeout, runs=1, seed=1, backend=backend,
                         progress=False)
    return time.perf_counter() - t0, ds


def updates_per_ns(N, clones, timeout, backend="cuda"):
    """Spin updates per ns of one timed-out call after a short one: of the kernels (CUDA events;
    the whole call on the CPU), and the solver's own rate from ``seconds_per_sweep``."""
    call = solve_call(N, clones, timeout, backend)
    rate = measure.timed(call, 1, warm=lambda: call(2)).rates("updates/ns", 1e-9).median
    return rate, clones * N / call.last.seconds_per_sweep.item() / 1e9


def solve_call(N, clones, timeout, backend):
    """``call() -> spin updates`` of one timed-out ``solve`` call (every clone sweeps to the timeout)."""
    instance = ge.xorsat.random_instance(N, seed=1)

    def call(limit=timeout):
        _, ds = _timed_solve(instance, clones, limit, backend)
        call.last = ds
        if ds.solved.any():
            raise RuntimeError("the throughput instance was solved: the timing is not of whole timeouts")
        return clones * N * (limit + 1)  # sweeps 0 .. limit, the last with frozen spins

    return call


def table_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: updates per ns of the solver against the same source on the
    host's CPU cores (the CPU backend), in the same run."""
    (N, clones, timeout), (cpu_N, cpu_clones, cpu_timeout) = TABLE[backend]
    call = solve_call(N, clones, timeout, backend)
    package = measure.timed(call, repeats, warm=lambda: call(2))
    cpu = solve_call(cpu_N, cpu_clones, cpu_timeout, "cpu")
    baseline = measure.timed(cpu, repeats, warm=lambda: cpu(2))
    return [measure.Row(f"xorsat quasi-greedy N={N}, 2^{clones.bit_length() - 1} clones, {timeout} sweeps",
                        package.rates("updates/ns", 1e-9), package.rates("updates/ns", 1e-9, which="call"),
                        f"the same solver, CPU backend, {numba.config.NUMBA_NUM_THREADS} threads "
                        f"(2^{cpu_clones.bit_length() - 1} clones)", baseline.rates("updates/ns", 1e-9))]


def median_tau(N, count, runs, clones, backend, p=0.1, seed=11):
    """``(tau per instance, solve result)`` for ``count`` random instances of size ``N``."""
    instances = ge.xorsat.random_instances(N, count, seed=seed)
    ds = ge.xorsat.solve(instances, p=p, clones=clones, runs=runs, seed=seed + 1, backend=backend, progress=False)
    return ds.tts.mean(), ds


class XorsatThroughput:
    """Spin updates per ns of the quasi-greedy solver (N = 256)."""

    timeout = 600
    params = (["cuda", "cpu"],)
    param_names = ("backend",)

    def setup(self, backend):
        if backend == "cuda" and not gpu_available():
            raise NotImplementedError("no GPU")

    def track_updates_per_ns(self, backend):
        return updates_per_ns(*THROUGHPUT[backend], backend=backend)[0]

    track_updates_per_ns.unit = "updates/ns"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CPU-sized cases (no GPU needed)")
    parser.add_argument("--only", default="throughput,tau,growth,p,timeouts", help="comma-separated sections")
    parser.add_argument("--clones", default=None, help="comma-separated clone counts for the tau and growth "
                        "sections (default 2^20 on a GPU)")
    args = parser.parse_args(argv)
    backend = "cpu" if args.quick or not gpu_available() else "cuda"
    sections = set(args.only.split(","))
    from gpuensembles.core import backend as _backend

    print(f"device: {_backend.device_name(backend)}")
    if "throughput" in sections:
        print(f"{'throughput':<34}{'N':>6}{'clones':>10}{'updates/ns':>12}{'(own clock)':>13}")
        for where in dict.fromkeys((backend, "cpu")):
            N, clones, timeout = THROUGHPUT[where] if not args.quick else (256, 2**10, 40)
            rate, own = updates_per_ns(N, clones, timeout, where)
            print(f"{'quasi-greedy, ' + _backend.device_name(where)[:20]:<34}{N:>6}{clones:>10}{rate:>12.1f}"
                  f"{own:>13.1f}", flush=True)
    clones = QUICK["clones"] if args.quick else 2**20
    growth = QUICK["growth"] if args.quick else GROWTH
    if "tau" in sections or "growth" in sections:
        print(f"{'N':>5}{'clones':>9}{'instances':>10}{'runs':>6}{'median tau (s)':>16}{'(sweeps)':>10}"
              f"{'median t99 (s)':>16}{'solved':>8}{'wall (s)':>10}")
        taus = {}
        rows = [(N, c) for N in growth for c in ([clones] if args.clones is None else map(int, args.clones.split(",")))]
        for N, c in rows:
            if "growth" not in sections and N != 128:
                continue
            count, runs = growth[N]
            t0 = time.perf_counter()
            est, ds = median_tau(N, count, runs, c, backend)
            sweeps = ds.tts.mean(time="sweeps").tau.median("instance")
            taus[N] = float(est.tau.median("instance"))
            t99 = float(ds.tts.percentile(99).exponential.median("instance"))
            print(f"{N:>5}{c:>9}{count:>10}{runs:>6}{taus[N]:>16.4g}{float(sweeps):>10.1f}{t99:>16.4g}"
                  f"{int(ds.solved.sum()):>8}{time.perf_counter() - t0:>10.1f}", flush=True)
        if len(taus) >= 2:
            Ns = np.array(list(taus))
            b, a = np.polyfit(Ns, np.log(list(taus.values())), 1)
            print(f"growth: ln tau = {a:.2f} + {b:.4f} N (seed: about 0.08 per variable)")
    if "p" in sections:
        N = QUICK["p_N"] if args.quick else 128
        count, runs = (QUICK["p_count"], QUICK["p_runs"]) if args.quick else (10, 8)
        instances = ge.xorsat.random_instances(N, count, seed=21)
        ds = ge.xorsat.solve(instances, p=list(P_GRID), clones=clones, runs=runs, seed=22, backend=backend,
                             progress=False)
        tau = ds.tts.mean(time="sweeps").tau.median("instance")
        seconds = ds.tts.mean().tau.median("instance")
        print(f"{'p':>6}{'T = -2/ln p':>13}{'median tau (sweeps)':>21}{'(s)':>12}")
        for p in P_GRID:
            print(f"{p:>6}{-2 / np.log(p):>13.3f}{float(tau.sel(p=p)):>21.1f}{float(seconds.sel(p=p)):>12.4g}")
        k = int(np.argmin(tau.values))
        k = min(max(k, 1), len(P_GRID) - 2)
        c2, c1, _ = np.polyfit(P_GRID[k - 1:k + 2], np.log(tau.values[k - 1:k + 2]), 2)
        best = -c1 / (2 * c2) if c2 > 0 else P_GRID[int(np.argmin(tau.values))]
        print(f"optimal p = {best:.3f} (parabola through the three lowest points), T = {-2 / np.log(best):.3f}")

    if "timeouts" in sections:
        timeouts(*(QUICK["timeouts"] if args.quick else TIMEOUTS), backend)


def timeouts(N, count, clones, full_runs, short_runs, backend):
    """Print tau from full runs and from runs with timeout tau / 10, per instance."""
    instances = ge.xorsat.random_instances(N, count, seed=31)
    full = ge.xorsat.solve(instances, clones=clones, runs=full_runs, seed=32, backend=backend, progress=False)
    tau = full.tts.mean(time="sweeps")
    print(f"N = {N}, {clones} clones: {'instance':>9}{'tau full':>10}{'interval':>20}{'timeout':>9}{'k / R':>10}"
          f"{'tau from timeouts':>19}{'interval':>20}")
    agree = 0
    for i in range(count):
        one = ge.xorsat.select_instance(instances, instance=i)
        t = tau.isel(instance=i)
        limit = max(1, int(t.tau / 10))
        short = ge.xorsat.solve(one, clones=clones, runs=short_runs, timeout=limit, seed=33, backend=backend,
                                progress=False)
        est = short.tts.from_timeouts(time="sweeps")
        agree += bool(est.lower <= t.upper) and bool(t.lower <= est.upper)
        print(f"{'':>23}{i:>9}{float(t.tau):>10.0f}{f'[{float(t.lower):.0f}, {float(t.upper):.0f}]':>20}{limit:>9}"
              f"{f'{int(est.solved)} / {short_runs}':>10}{float(est.tau):>19.0f}"
              f"{f'[{float(est.lower):.0f}, {float(est.upper):.0f}]':>20}", flush=True)
    print(f"intervals overlap for {agree} of {count} instances")


if __name__ == "__main__":
    main()
