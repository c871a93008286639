"""Langevin (Stewart-McCumber SRK2) steps/s and Kuramoto oscillator-steps/s.

asv runs the ``track_*`` methods; ``python -m benchmarks.bench_langevin [--quick]`` prints a
table with the naive numba.cuda baselines (Januszewski & Kostur 2010's PROG1 and PROG3 written plainly) and
the device's copy bandwidth, all in the same run.
"""

import argparse

import numpy as np

import gpuensembles as ge

from . import baselines, measure
from .bench_escape_times import gpu_available

#: Januszewski & Kostur 2010, Fig. 2: a = 4.2 (here 100 values of a around it), g = 0.9, w = 4.9, kT = 0.001,
#: f = 0.1, h = 0.01 * 2 pi / w.
FIG2 = dict(w=4.9, g=0.9, f=0.1, kT=0.001, h=0.01 * 2 * np.pi / 4.9)
GPU_SIZE = dict(points=100, realizations=1 << 14, steps=20_000)
CPU_SIZE = dict(points=4, realizations=1 << 10, steps=2_000)
KURAMOTO_N = 1 << 24
#: ``python -m benchmarks`` sizes: Kuramoto (N, steps) and the copy that bounds it (bytes), per backend.
KURAMOTO_TABLE = {"cuda": (KURAMOTO_N, 2000, 1 << 30), "cpu": (1 << 14, 40, 1 << 26)}
#: Bytes per oscillator-step: read x and omega, write x (float32).
BYTES_PER_OSCILLATOR_STEP = 12


def langevin_rate(backend, points, realizations, steps, **kw):
    """``(steps/s, seconds)`` of one whole ``langevin`` call after a small one that compiles."""
    call = langevin_call(backend, points, realizations, steps, **kw)
    timed = measure.timed(call, 1, warm=lambda: call(kw.get("sample_every", 8)))
    return timed.rates("steps/s", which="call").median, timed.call[0]


def kuramoto_kernel_rate(N, steps, **kw):
    """Oscillator-steps/s of the mean-field kernel (CUDA events) in one call after a short one."""
    call = kuramoto_call(N, steps, **kw)
    return measure.timed(call, 1, warm=lambda: call(8)).rates("oscillator-steps/s").median


def langevin_call(backend, points, realizations, steps, **kw):
    """``call() -> steps`` of one whole ``langevin`` call over ``points`` values of ``a`` (seed Fig. 2)."""
    common = dict(FIG2, a=np.linspace(0.0, 8.4, points), backend=backend, seed=1, progress=False, **kw)

    def call(n_steps=steps):
        ds = ge.langevin(steps=n_steps, realizations=realizations, **common)
        assert np.isfinite(ds.x_end.values).all()
        return points * realizations * n_steps

    return call


def kuramoto_call(N, steps, backend="cuda", kT=1.0, K=4.0):
    """``call() -> oscillator-steps`` of one whole mean-field call (Januszewski & Kostur 2010, Fig. 4: K = 4)."""

    def call(n_steps=steps):
        ds = ge.kuramoto(N=N, K=K, frequencies="gaussian", width=0.0, kT=kT, h=0.01, steps=n_steps,
                         sample_every=n_steps // 4, seed=1, backend=backend, progress=False)
        assert int(ds.density.isel(time=-1).sum()) == N
        return N * n_steps

    return call


def langevin_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: SRK2 on the seed's Fig. 2 case against the naive PROG1 kernel."""
    size = GPU_SIZE if backend == "cuda" else CPU_SIZE
    call = langevin_call(backend, **size)
    package = measure.timed(call, repeats, warm=lambda: call(8))
    name = (f"langevin SRK2 float32, seed Fig. 2 ({size['points']} a x {size['realizations']} x {size['steps']} "
            "steps)")
    if backend != "cuda":
        return [measure.Row(name, package.rates("steps/s"), package.rates("steps/s", which="call"),
                            "naive numba.cuda PROG1: needs a GPU", None)]
    launch = baselines.numba_cuda_srk2_launcher(a=np.linspace(0, 8.4, size["points"]),
                                                realizations=size["realizations"], steps=size["steps"], **FIG2)
    naive = measure.repeated(launch, repeats, warm=lambda: launch(8))
    return [measure.Row(name, package.rates("steps/s"), package.rates("steps/s", which="call"),
                        "naive numba.cuda PROG1 (xoroshiro, float32 time)", naive.rates("steps/s"))]


def kuramoto_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: mean field at kT = 0 and 1 as a fraction of the copy bound
    (the device-to-device copy bandwidth of the same run over 12 bytes per oscillator-step)."""
    N, steps, nbytes = KURAMOTO_TABLE[backend]
    copy = measure.repeated(baselines.copy_launcher(nbytes, backend), repeats,
                            basis="CUDA events" if backend == "cuda" else "clock")
    bound = copy.rates("oscillator-steps/s", 1 / BYTES_PER_OSCILLATOR_STEP)
    where = "device-to-device" if backend == "cuda" else "host"
    rows = []
    for kT in (0.0, 1.0):
        call = kuramoto_call(N, steps, backend, kT=kT)
        package = measure.timed(call, repeats, warm=lambda call=call: call(8))
        rows.append(measure.Row(f"kuramoto mean field N=2^{N.bit_length() - 1}, kT={kT:g}",
                                package.rates("oscillator-steps/s"), package.rates("oscillator-steps/s", which="call"),
                                f"{where} copy bound: {bound.median * BYTES_PER_OSCILLATOR_STEP / 1e9:.0f} GB/s "
                                f"/ {BYTES_PER_OSCILLATOR_STEP} B", bound, ratio_as_percent=True))
    return rows


class LangevinThroughput:
    """SRK2 Stewart-McCumber steps/s over a 100-point sweep of ``a`` (Januszewski & Kostur 2010, Fig. 2 parameters)."""

    timeout = 600
    params = (["cuda", "cpu"], ["srk2", "euler"])
    param_names = ("backend", "integrator")

    def setup(self, backend, integrator):
        if backend == "cuda" and not gpu_available():
            raise NotImplementedError("no GPU")

    def track_steps_per_second(self, backend, integrator):
        size = GPU_SIZE if backend == "cuda" else CPU_SIZE
        return langevin_rate(backend, integrator=integrator, **size)[0]

    track_steps_per_second.unit = "steps/s"


class KuramotoThroughput:
    """Mean-field Kuramoto, N = 2^24, oscillator-steps/s of the kernel."""

    timeout = 600

    def setup(self):
        if not gpu_available():
            raise NotImplementedError("no GPU")

    def track_oscillator_steps_per_second(self):
        return kuramoto_kernel_rate(KURAMOTO_N, 2000)

    track_oscillator_steps_per_second.unit = "oscillator-steps/s"


def _row(name, device, work, seconds, unit):
    return f"| {name:<52} | {device:<22} | {work:>10.3e} | {seconds:>8.3f} | {work / seconds:>10.3e} {unit:<6} |"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="CPU-sized runs only (a smoke test)")
    args = parser.parse_args(argv)
    from gpuensembles.core import backend as _backend

    header = f"| {'implementation':<52} | {'device':<22} | {'work':>10} | {'seconds':>8} | {'rate':>17} |"
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    backends = (["cuda"] if gpu_available() and not args.quick else []) + ["cpu"]
    for backend in backends:
        size = GPU_SIZE if backend == "cuda" else CPU_SIZE
        device = _backend.device_name(backend)[:22]
        n = size["points"] * size["realizations"] * size["steps"]
        for label, kw in (("srk2", {}), ("euler", {"integrator": "euler"}),
                          ("srk2 + density every 100 steps", {"sample_every": 100, "record": (),
                                                              "histogram": (-2000, 2000)}),
                          ("srk2 float64", {"dtype": "float64"})):
            rate, seconds = langevin_rate(backend, **size, **kw)
            rows.append(_row(f"gpuensembles {backend} {label}", device, n, seconds, "st/s"))
        if backend == "cuda":
            steps, seconds = baselines.numba_cuda_srk2_steps(a=np.linspace(0, 8.4, size["points"]),
                                                              realizations=size["realizations"],
                                                              steps=size["steps"], **FIG2)
            rows.append(_row("naive numba.cuda SRK2 (seed PROG1, xoroshiro)", device, steps, seconds, "st/s"))
    if gpu_available() and not args.quick:
        device = _backend.device_name("cuda")[:22]
        bandwidth = baselines.device_copy_bandwidth()
        steps = 2000
        for kT in (1.0, 0.0):
            rate = kuramoto_kernel_rate(KURAMOTO_N, steps, kT=kT)
            seconds = KURAMOTO_N * steps / rate
            rows.append(_row(f"gpuensembles kuramoto mean field N=2^24 kT={kT:g}", device, KURAMOTO_N * steps,
                             seconds, "osc/s"))
            fraction = 12 * rate / bandwidth
            rows[-1] += f" {fraction:6.1%} of copy bandwidth"
        work, seconds = baselines.numba_cuda_kuramoto_mean_field(N=KURAMOTO_N, K=4.0, kT=1.0, h=0.01, steps=steps)
        rows.append(_row("naive numba.cuda PROG3 (launches per step)", device, work, seconds, "osc/s"))
        rows[-1] += f" {12 * work / seconds / bandwidth:6.1%}"
        print(f"device copy bandwidth (device-to-device, read + write): {bandwidth / 1e9:.0f} GB/s")
    print("\n".join(rows))
    print("Langevin: whole calls (set-up, transfers, Dataset) after a compile run; 100 values of a x realizations.\n"
          "Kuramoto: kernel rate from CUDA events around its launch; 12 bytes per oscillator-step\n"
          "(read x and w, write x) against the measured copy bandwidth.")


if __name__ == "__main__":
    main()
