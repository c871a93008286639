"""2D Ising Metropolis: spin-flip attempts per nanosecond (flips/ns).

asv runs the ``track_*`` methods; ``python -m benchmarks.bench_ising [--quick]`` prints a
table: the multi-spin kernel on one large lattice and on 32 of them, the int8 reference
kernel on the same lattices (the baseline, same run), and ensemble mode (thousands of
64 x 64 lattices over a beta grid, one launch).

Rates are flip attempts over the device time of the sweep kernels, from the CUDA events
that :func:`gpuensembles.core.backend.kernel_timer` records around the launches (on the
CPU backend, over the whole call); one measurement per call (at the end), so the figure is
the update rate. The table shows the median and range of three calls after a warm-up.
"""

import argparse
import time
import warnings

import numpy as np

import gpuensembles as ge
from gpuensembles.models.ising import theory

from . import baselines, measure, peers
from .bench_escape_times import gpu_available

BETA = float(theory.ISING_BETA_C)
#: name: (kernel, L, betas, realizations, sweeps) on a GPU; the longer call takes ~0.5 s
CASES = {
    "multispin, one lattice": ("multispin", 16384, 1, 1, 2000),
    "multispin, 32 lattices": ("multispin", 4096, 1, 32, 1000),
    "int8, one lattice": ("int8", 16384, 1, 1, 3600),
    "int8, 32 lattices": ("int8", 4096, 1, 32, 1800),
    "ensemble, 64x64": ("multispin", 64, 64, 128, 20000),
}
CPU_CASES = {
    "multispin, 32 lattices": ("multispin", 256, 1, 32, 40),
    "int8, 32 lattices": ("int8", 256, 1, 32, 10),
    "ensemble, 64x64": ("multispin", 64, 8, 32, 200),
}
#: Cases of ``python -m benchmarks`` (cuda, cpu): one large lattice (multi-spin, then the int8
#: baseline on the same lattice) and ensemble mode, 8192 lattices of 64^2.
TABLE_CASES = {"cuda": (CASES["multispin, one lattice"], CASES["int8, one lattice"], CASES["ensemble, 64x64"]),
               "cpu": (("multispin", 256, 1, 1, 40), ("int8", 256, 1, 1, 10), ("multispin", 64, 8, 32, 200))}


#: The calls users make, by backend: ``ge.ising(L=L, beta=beta_c, sweeps=S, thermalization=0)``
#: with the defaults (one lattice, ``measure_every=1``) at these sizes, the ensemble of
#: ``(L, lattices)`` with ``measure_every=1``, and the README's Ising example; each call made long
#: enough (``MIN_CALL_SECONDS``) that fixed costs do not flatter or hide the rate.
DEFAULT_SIZES = {"cuda": (1024, 2048, 4096, 16384), "cpu": (64, 128)}
DEFAULT_ENSEMBLE = {"cuda": (64, 8192), "cpu": (64, 64)}
README_EXAMPLE = dict(L=[16, 32, 64], beta=[0.40, 0.42, 0.44, 0.46, 0.48], sweeps=20000, thermalization=2000,
                      realizations=32)
MIN_CALL_SECONDS = {"cuda": 1.0, "cpu": 0.05}


def long_enough(make_call, seconds):
    """The sweeps that make ``make_call(sweeps)()`` last ``seconds`` or more, and the call:
    doubled from 8 sweeps until a call takes a fifth of that, then scaled up (with a margin)."""
    sweeps, took = 8, 0.0
    make_call(sweeps)()  # compiles or loads the kernels
    while took < seconds / 5:
        sweeps *= 2
        for _ in range(2):  # again once long enough: longer calls may take kernels not loaded before
            t0 = time.perf_counter()
            make_call(sweeps)()
            took = time.perf_counter() - t0
            if took < seconds / 5:
                break
    sweeps = max(sweeps, int(sweeps * 1.3 * seconds / took))
    return sweeps, make_call(sweeps)


def whole_call_rate(call, repeats):
    """flips/ns over the whole call (what a user sees), ``repeats`` calls after a warm-up."""
    return measure.timed(call, repeats).rates("flips/ns", 1e-9, which="call")


def default_rows(backend, repeats):
    """Rows of the calls users make (whole calls, ``measure_every=1``): each against the same call
    measuring once (the kernels' rate), then against cuIsing on the same lattice where it runs."""
    seconds = MIN_CALL_SECONDS[backend]
    rows = []
    cases = [(L, 1) for L in DEFAULT_SIZES[backend]] + [DEFAULT_ENSEMBLE[backend]]
    for L, lattices in cases:
        what = f"one {L}^2 lattice" if lattices == 1 else f"{lattices} lattices of {L}^2"
        sweeps, call = long_enough(lambda n, L=L, r=lattices: ising_call("multispin", L, 1, r, n, backend, 1, 0),
                                   seconds)
        every_one = whole_call_rate(call, repeats)
        sweeps_once, call_once = long_enough(lambda n, L=L, r=lattices: ising_call("multispin", L, 1, r, n, backend,
                                                                                   None, 0), seconds)
        once = whole_call_rate(call_once, repeats)
        rows.append(measure.Row(f"ising default call, {what} at beta_c ({sweeps} sweeps, measure_every=1)", every_one,
                                every_one, f"the same call measuring once ({sweeps_once} sweeps)", once,
                                ratio_as_percent=True))
        if backend == "cuda" and lattices == 1:
            rates, why = [], None
            for _ in range(repeats):
                rate, why = peers.cuising_rate(L, sweeps_once, BETA)
                if rate is None:
                    break
                rates.append(rate)
            name = f"cuIsing, the same lattice ({sweeps_once} sweeps, its kernel timer)" if rates else f"cuIsing: {why}"
            rows.append(measure.Row(f"ising default call, {what} (row above)", every_one, every_one, name,
                                    measure.Figure(rates, "flips/ns", "cuIsing's events") if rates else None))
    example = dict(README_EXAMPLE) if backend == "cuda" else dict(README_EXAMPLE, sweeps=200, thermalization=20)
    flips = (sum(L * L for L in example["L"]) * len(example["beta"]) * example["realizations"]
             * (example["sweeps"] + example["thermalization"]))

    def readme(every=1):
        def call():
            quiet_ising(**example, measure_every=every, backend=backend)
            return flips
        return call

    every_one = whole_call_rate(readme(), repeats)
    rows.append(measure.Row("ising README example (L = 16, 32, 64; 5 betas; 32 realizations; measure_every=1)",
                            every_one, every_one, "the same call measuring once",
                            whole_call_rate(readme(example["sweeps"]), repeats), ratio_as_percent=True))
    return rows


def quiet_ising(**kw):
    """``ge.ising(seed=1, progress=False, **kw)`` without the warnings of chains still drifting:
    benchmarks start cold (``thermalization=0``) or short, on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*chains? still drifting", RuntimeWarning)
        return ge.ising(seed=1, progress=False, **kw)


def ising_call(kernel, L, n_beta, realizations, sweeps, backend, every=None, thermalization=None):
    """``call() -> flip attempts`` of one ``ising`` call measuring every ``every`` sweeps
    (default: once, at its end), after ``thermalization`` sweeps (default: the function's)."""
    beta = np.linspace(0.3, 0.5, n_beta) if n_beta > 1 else BETA
    options = {} if thermalization is None else {"thermalization": thermalization}

    def call():
        ds = quiet_ising(L=L, beta=beta, sweeps=sweeps, measure_every=every or sweeps, realizations=realizations,
                         kernel=kernel, backend=backend, **options)
        e = ds.bin_e.values
        assert np.all((e >= -2) & (e <= 2)), "energies per spin must lie in [-2, 2]"
        return n_beta * realizations * L * L * (sweeps + int(ds.attrs["thermalization"]))

    return call


def timed_flips(kernel, L, n_beta, realizations, sweeps, backend="cuda", repeats=1) -> measure.Timed:
    """Flip attempts and kernel / whole-call seconds of ``repeats`` calls after a short one that compiles."""
    return measure.timed(ising_call(kernel, L, n_beta, realizations, sweeps, backend), repeats,
                         warm=ising_call(kernel, L, n_beta, realizations, 2, backend))


def flips_per_ns(kernel, L, n_beta, realizations, sweeps, backend="cuda", repeats=1):
    """Spin-flip attempts per ns of the sweep kernels (CUDA events; the whole call on the CPU);
    with ``repeats``, the rates of that many calls (sorted)."""
    rates = timed_flips(kernel, L, n_beta, realizations, sweeps, backend, repeats).rates("flips/ns", 1e-9).values
    return sorted(rates) if repeats > 1 else rates[0]


def table_rows(backend, repeats):
    """Rows of ``python -m benchmarks``: multi-spin against int8 on one large lattice at beta_c,
    ensemble mode against that large-lattice rate (target >= 90 %) and, on a GPU, the
    large-lattice rate against the bound of its random numbers alone."""
    large, int8, ensemble = TABLE_CASES[backend]
    rows = default_rows(backend, repeats)

    def figures(case):
        timed = timed_flips(*case, backend=backend, repeats=repeats)
        return timed.rates("flips/ns", 1e-9), timed.rates("flips/ns", 1e-9, which="call")

    (big, big_call), (ref, _), (many, many_call) = figures(large), figures(int8), figures(ensemble)
    L, lattices = large[1], ensemble[2] * ensemble[3]
    rows += [measure.Row(f"ising multi-spin, one {L}^2 lattice at beta_c", big, big_call,
                         f"int8 kernel, the same lattice ({int8[4]} sweeps)", ref),
             measure.Row(f"ising ensemble mode, {lattices} lattices of {ensemble[1]}^2", many, many_call,
                         f"multi-spin rate on one {L}^2 lattice (row above)", big, ratio_as_percent=True)]
    if backend == "cuda":  # the bound of the first row: its random numbers alone
        bound = measure.repeated(baselines.philox_bound_launcher(L), repeats)
        rows.append(measure.Row(f"ising multi-spin, one {L}^2 lattice (first row)", big, big_call,
                                "bound: its two Philox4x32-10 blocks per word alone", bound.rates("flips/ns", 1e-9),
                                ratio_as_percent=True))
    return rows


class IsingThroughput:
    """Flip attempts per ns of the multi-spin and int8 kernels and of ensemble mode."""

    timeout = 600
    params = (["cuda", "cpu"], list(CASES))
    param_names = ("backend", "case")

    def setup(self, backend, case):
        if backend == "cuda" and not gpu_available():
            raise NotImplementedError("no GPU")
        if backend == "cpu" and case not in CPU_CASES:
            raise NotImplementedError("GPU-sized case")

    def track_flips_per_ns(self, backend, case):
        return flips_per_ns(*(CASES if backend == "cuda" else CPU_CASES)[case], backend=backend)

    track_flips_per_ns.unit = "flips/ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CPU-sized cases (no GPU needed)")
    args = parser.parse_args()
    backend = "cpu" if args.quick or not gpu_available() else "cuda"
    cases = CPU_CASES if backend == "cpu" else CASES
    from gpuensembles.core import backend as _backend

    print(f"device: {_backend.device_name(backend)}")
    print(f"{'case':<26}{'kernel':>10}{'L':>7}{'lattices':>10}{'flips/ns (median)':>19}{'all 3':>22}")
    rates = {}
    for name, (kernel, L, n_beta, realizations, sweeps) in cases.items():
        three = flips_per_ns(kernel, L, n_beta, realizations, sweeps, backend, repeats=3)
        rates[name] = three[1]
        print(f"{name:<26}{kernel:>10}{L:>7}{n_beta * realizations:>10}{rates[name]:>19.1f}"
              f"{' / '.join(f'{r:.4g}' for r in three):>22}", flush=True)
    if backend == "cuda":
        from gpuensembles.models.ising import kernels as lattices

        for kind in lattices.KINDS:
            regs = {k.py_func.__name__: next(iter(k.get_regs_per_thread().values()), None)
                    for k in lattices.cuda_runner(kind).kernels if k.overloads}
            print(f"registers per thread ({kind}): {regs}")
    best = max(rates[k] for k in rates if k.startswith("multispin"))
    print(f"ensemble / best large-lattice multi-spin rate: {rates['ensemble, 64x64'] / best:.0%}")
    for n in ("one lattice", "32 lattices"):
        if f"int8, {n}" in rates and f"multispin, {n}" in rates:
            print(f"multi-spin / int8 ({n}): {rates[f'multispin, {n}'] / rates[f'int8, {n}']:.1f}x")


if __name__ == "__main__":
    main()
