"""Fitting measured switching histograms: speed, model choice, and recovery (the figures the docs quote).

    python -m benchmarks.bench_fit [--only analytic,choice,recovery] [--json FILE] [--limit SECONDS]
    python -m benchmarks.bench_fit --quick       # tiny sizes on the CPU (a smoke test)

Sections, each printing one table:

* ``analytic``: the thermal and quantum fits of 10,000 events on the CPU, median and range of
  5 calls after a warm-up.
* ``choice``: the Li et al. (2007) junction (Q = 3.5) at 1.2 K and 200 Ic/s under the voltage
  criterion: 10,000 switching currents from ``switching_currents(method="rates")`` with the
  rates to 1%; the ``"thermal"`` fit and the ``"simulated"`` fit (``criterion="voltage"``)
  beside the truth, and the simulated fit's wall time (kernels compiled beforehand, and the
  compiling call's time beside it).
* ``recovery``: more data sets of that junction, each 5,000 switching currents drawn from one
  rate curve of ``switching_currents(method="rates")`` (to 2%) with its own seed, each fitted by
  the simulated model with its own seed (independent rate tables) at the generator's time step,
  ``--workers`` processes at a time (dealt out over ``--gpus`` GPUs), starting sets until ``--limit`` seconds from
  the program's start: coverage of the 95% intervals of ``Ic`` and ``T_esc``, bias and spread.
"""

import argparse
import sys
import time

import numpy as np

import gpuensembles as ge
from gpuensembles.models.josephson import fulton_dunkleberger as fd
from gpuensembles.models.josephson import likelihood, theory

from .bench_rates import LI_H, _g, _table, _timed, run_sections
from .bench_switching import LI2007

SECTIONS = ("analytic", "choice", "recovery")
SWEEP = 200.0  # Ic per second
SIZES = {
    "gpu": dict(events=10_000, data_rel=0.01, fit_rel=0.05, set_events=5_000, curve_rel=0.02, backend="cuda"),
    "quick": dict(events=1_000, data_rel=0.3, fit_rel=0.3, set_events=500, curve_rel=0.3, backend="cpu"),
}
_STATE = {}
_START = time.perf_counter()


def _li_fit_kwargs():
    return dict(sweep_rate=SWEEP * LI2007["Ic"], units="A", C=LI2007["C"], R=LI2007["R"])


def analytic(size, limit):
    V0, damping, theta, gamma_dot = 200.0, 0.5, 2.0, 1e-6
    grid = np.linspace(0.3, 0.99999, 3000)
    curve = fd.make_curve(grid, np.exp(likelihood.thermal_log_rate(grid, V0=V0, damping=damping, theta=theta)))
    data = fd.draw(curve, gamma_dot, seed=1, stream=0, first=0, count=10_000, gamma_start=0.3, gamma_end=0.99999)
    quantum_v0 = 1.6e5  # Ic = 10 uA, C = 5 pF: MQT at 10 mK
    g = np.linspace(0.95, 0.99999, 3000)
    qcurve = fd.make_curve(g, theory.mqt_rate(g, V0=quantum_v0, damping=10.0))
    qdata = fd.draw(qcurve, 1e-8, seed=1, stream=1, first=0, count=10_000, gamma_start=0.95, gamma_end=0.99999)
    calls = {
        "thermal": lambda: ge.josephson.fit_switching(data, sweep_rate=gamma_dot, V0=V0, damping=damping),
        "quantum": lambda: ge.josephson.fit_switching(qdata, sweep_rate=1e-8, V0=quantum_v0, damping=10.0,
                                                      model="quantum"),
    }
    rows, records = [], {}
    for name, call in calls.items():
        call()  # warm-up: tables, imports
        times = [_timed(call)[1] for _ in range(5)]
        rows.append((name, "10,000", _g(np.median(times), 3), f"{_g(min(times), 3)}-{_g(max(times), 3)}"))
        records[name] = times
    return _table("analytic fits on the CPU (s), 5 calls after a warm-up", ("model", "events", "median", "range"),
                  rows), records


def choice(size, limit):
    s = SIZES[size]
    physical = dict(LI2007, sweep_rate=SWEEP)
    data, seconds = _timed(lambda: ge.switching_currents(
        physical=physical, h=LI_H, integrator="baoab", method="rates", criterion="voltage", rel_error=s["data_rel"],
        realizations=s["events"], seed=1, backend=s["backend"], progress=False))
    _STATE["data"] = data
    print(f"  data: {s['events']} switching currents in {seconds:.0f} s", flush=True)
    currents = data.switching_current_A.values
    fits = {}
    fits["thermal"], t_thermal = _timed(lambda: ge.josephson.fit_switching(currents, **_li_fit_kwargs()))
    _, t_compile = _timed(lambda: ge.escape_rates(gamma=[0.3, 0.4], physical=LI2007, h=LI_H, integrator="baoab",
                                                  criterion="voltage", rel_error=0.3, seed=0, dtype="float64",
                                                  backend=s["backend"], progress=False))
    print(f"  thermal fit {t_thermal:.2f} s: T_esc {float(fits['thermal'].T_esc):.4g} K; compiling call "
          f"{t_compile:.1f} s", flush=True)
    fits["simulated"], t_sim = _timed(lambda: ge.josephson.fit_switching(
        currents, **_li_fit_kwargs(), model="simulated", criterion="voltage", rel_error=s["fit_rel"], seed=2,
        backend=s["backend"]))
    rows, records = [], {"data_seconds": seconds, "compile_seconds": t_compile}
    for name, fit in fits.items():
        t_esc, err = float(fit.T_esc), float(fit.T_esc_stderr)
        ic, ic_err = float(fit.Ic), float(fit.Ic_stderr)
        rows.append((name, f"{_g(t_esc)} +- {_g(err, 2)}", _g((t_esc - LI2007["T"]) / err, 3),
                     f"{_g(ic * 1e6)} +- {_g(ic_err * 1e6, 2)}", _g((ic - LI2007["Ic"]) / ic_err, 3),
                     _g(float(fit.p_value), 3), _g(t_thermal if name == "thermal" else t_sim, 3)))
        records[name] = dict(T_esc=t_esc, T_esc_stderr=err, Ic=ic, Ic_stderr=ic_err, p=float(fit.p_value))
    records["simulated_seconds"] = t_sim
    title = (f"Li junction (Q = 3.5) at {LI2007['T']} K, {SWEEP:g} Ic/s, criterion='voltage': {s['events']} events "
             f"(drawn in {seconds:.0f} s); simulated fit rates to {s['fit_rel']:.0%}; compiling call "
             f"{t_compile:.1f} s")
    header = ("model", "T_esc (K)", "z(T)", "Ic (uA)", "z(Ic)", "p", "fit (s)")
    return _table(title, header, rows), records


def _one_set(k, curve, gamma_dot, ends, s):
    """Draw data set ``k`` from the rate curve and fit it with the simulated model (in a worker process)."""
    import warnings

    warnings.simplefilter("ignore")
    gamma = fd.draw(curve, gamma_dot, seed=1000 + k, stream=0, first=0, count=s["set_events"], **ends)
    fit, seconds = _timed(lambda: ge.josephson.fit_switching(
        gamma * LI2007["Ic"], **_li_fit_kwargs(), model="simulated", criterion="voltage", rel_error=s["fit_rel"],
        seed=10 + k, backend=s["backend"], h=LI_H))  # the generator's step: one simulation, the fit's and the data's
    return float(fit.Ic), float(fit.Ic_stderr), float(fit.T_esc), float(fit.T_esc_stderr), seconds


def _on_gpu(gpus):
    """Initializer of a recovery worker: take the next of the GPUs, before anything opens a CUDA context."""
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus.get())


def recovery(size, limit, workers=1, first=1, gpus=1):
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from multiprocessing import get_context

    s = SIZES[size]
    data, seconds = _timed(lambda: ge.switching_currents(  # only its rate curve is used: the truth of the sets
        physical=dict(LI2007, sweep_rate=SWEEP), h=LI_H, integrator="baoab", method="rates", criterion="voltage",
        rel_error=s["curve_rel"], realizations=100, seed=3, backend=s["backend"], progress=False))
    print(f"  rate curve to {s['curve_rel']:.0%} in {seconds:.0f} s", flush=True)
    curve = fd.make_curve(data.rate_gamma.values, data.switching_rate.values, data.switching_rate_stderr.values)
    gamma_dot = float(data.attrs["dgamma"] if "dgamma" in data.attrs else data.dgamma) / float(data.attrs["h"])
    ends = dict(gamma_start=float(data.attrs["gamma_start"]), gamma_end=float(data.attrs["gamma_end"]))
    deadline, results, k = _START + limit, [], first - 1  # the limit counts from the program's start
    context = get_context("spawn")
    devices = context.Queue()
    for w in range(workers):  # workers dealt out over the GPUs in turn
        devices.put(w % gpus)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_on_gpu if gpus > 1 else None,
                             initargs=(devices,) if gpus > 1 else ()) as pool:
        running = set()
        while True:
            while len(running) < workers and time.perf_counter() < deadline:
                k += 1
                running.add(pool.submit(_one_set, k, curve, gamma_dot, ends, s))
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)  # those started finish: no work is lost
            for future in done:
                r = future.result()
                results.append(r)
                print(f"  set {len(results)}: Ic {r[0]:.5g} +- {r[1]:.2g}, T_esc {r[2]:.4g} +- {r[3]:.2g} "
                      f"({r[4]:.0f} s)", flush=True)
    if not results:
        return "recovery: no data set started before --limit", {"sets": []}
    r = np.asarray(results)
    rows, records = [], {"sets": results}
    for name, i, truth in (("Ic (A)", 0, LI2007["Ic"]), ("T_esc (K)", 2, LI2007["T"])):
        z = (r[:, i] - truth) / r[:, i + 1]
        covered = int(np.sum(np.abs(z) < 1.96))
        rows.append((name, f"{covered}/{len(r)} = {covered / len(r):.0%}", _g(np.mean(r[:, i]) - truth, 3),
                     _g(np.std(r[:, i], ddof=1), 3), _g(np.mean(r[:, i + 1]), 3), _g(np.std(z, ddof=1), 3)))
    title = (f"recovery: {len(r)} data sets of {s['set_events']} events (Li junction, voltage criterion), simulated "
             f"fits with independent rate tables, {workers} at a time on {gpus} GPU(s); "
             f"median fit {np.median(r[:, 4]):.0f} s")
    return _table(title, ("parameter", "95% covered", "bias", "spread", "mean stderr", "sd of z"), rows), records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--json")
    parser.add_argument("--limit", type=float, default=240.0,
                        help="seconds from the start after which recovery starts no more data sets")
    parser.add_argument("--workers", type=int, default=1, help="processes fitting recovery sets at once")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs the recovery workers are dealt out over")
    parser.add_argument("--first", type=int, default=1,
                        help="number of the first recovery set (its seeds): a later call adds new sets")
    parser.add_argument("--quick", action="store_true", help="tiny sizes on the CPU")
    args = parser.parse_args(argv)
    size = "quick" if args.quick else "gpu"

    def section(name):
        if name == "recovery":
            return recovery(size, args.limit, args.workers, args.first, args.gpus)
        return globals()[name](size, args.limit)

    run_sections(args.only.split(","), section, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
