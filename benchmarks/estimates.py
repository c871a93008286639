"""The estimate each README and help example prints, against the time it takes: ``python -m benchmarks.estimates``.

    python -m benchmarks.estimates [--only NAME,...] [--gpu-sized] [--backend cpu|cuda]

Each example runs as a user runs it, in a fresh process (kernels from the disk cache), with
progress on so the run prints its estimate to stderr. The table gives the estimate, the
time of the run (the call, as the summary line reports it, compiling excluded; not the
process's start-up), their ratio, and the throughput's source. A run estimated under
``ANNOUNCE_SECONDS`` prints no estimate: its row checks that it did finish within twice that.

Examples sized for a GPU run on a CPU scaled down (fewer realizations, points or runs; the
``scaled`` column says how): the estimate is linear in what is scaled, so its ratio to the
measured time is the full example's. ``--gpu-sized`` runs them at full size.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

from gpuensembles.core.estimate import ANNOUNCE_SECONDS

_LI = "physical=dict(R=250, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate={rate})"

#: name -> (command or Python source, {option or keyword: CPU-sized value}); ``{x}`` marks
#: what is scaled. CLI commands are argument lists after ``gpuensembles``.
EXAMPLES = {
    "README main job": ("escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 --realizations 5120 --seed 1",
                        {}),
    "help switching-currents direct": ("switching-currents --preset li2007 --sweep-rate 2e7 --realizations 200",
                                       {}),
    "help switching-currents rates": ("switching-currents --preset li2007 --sweep-rate 1 200 1e4 --h 1e-3 "
                                      "--integrator baoab --method rates --realizations 100000 --rel-error {x}",
                                      {"x": ("0.03", "0.1")}),
    "help switching-currents voltage": ("switching-currents --preset li2007 --sweep-rate 2e7 --criterion voltage "
                                        "--realizations 200", {}),
    "help escape-rates": ("escape-rates --model overdamped --damping 1 --D 0.05 --gamma 0.3 0.5 0.7 0.9 --h 0.01 "
                          "--rel-error 0.05", {}),
    "help retrapping-currents": ("retrapping-currents --preset li2007 --sweep-rate 2e7 --h 1e-3 --realizations 200",
                                 {}),
    "help langevin": ("langevin --a 0 1 2 4.2 --w 4.9 --g 0.9 --f 0.1 --kT 0.001 --h 0.01282 --steps 200000 "
                      "--transient 20000 --realizations 4096", {}),
    "help kuramoto": ("kuramoto --N 1048576 --K 4 --width 1 --h 0.01 --steps 2000 --sample-every 20", {}),
    "help ising": ("ising --L 16 32 64 --beta 0.40 0.42 0.44 0.46 0.48 --sweeps 20000 --thermalization 2000 "
                   "--realizations 32", {}),
    "help xorsat": ("xorsat --N 64 96 --instances 20 --runs 10 --clones 4096 --p 0.1", {}),
    "help mc-solve": ("mc-solve --problem laplacian-2d --size 30 --histories 1e6", {}),
    "README escape_times": ("ge.escape_times(V0=1.0, damping=0.05, gamma=0.5, D=np.linspace(0.004, 0.012, 5), "
                            "h=0.001, realizations={x}, seed=1)", {"x": ("5120", "64")}),
    "README escape_rates": ("ge.escape_rates(model='overdamped', damping=1.0, D=0.02, "
                            "gamma=np.linspace(0.1, 0.9, {x}), h=0.01)", {"x": ("17", "5")}),
    "README switching_currents": (f"ge.switching_currents({_LI.format(rate='[1, 200, 1e4]')}, h=1e-3, "
                                  "integrator='baoab', method='rates', realizations=30_000, criterion='voltage', "
                                  "rel_error={x})", {"x": ("0.03", "0.1")}),
    "README retrapping_currents": (f"ge.retrapping_currents({_LI.format(rate='1e5')}, h=1e-3, "
                                   "realizations={x})", {"x": ("30_000", "300")}),
    "README ising": ("ge.ising(L=[16, 32, 64], beta=np.linspace(0.38, 0.5, 13), sweeps=20_000, "
                     "thermalization=10_000, realizations=8, seed=3)", {}),
    "README xorsat": ("ge.xorsat.solve(ge.xorsat.random_instances(N=[64, 96], count=20, seed=1), p=0.1, "
                      "clones=2**12, runs=10)", {}),
}

_ESTIMATE = re.compile(r"estimate: about ([\d.e+-]+) (s|min|h) .*\((measured on this machine|default[^)]*)\)")
_RAN = re.compile(r" in ([\d.]+) s[ ;(]")
_TO_SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def _command(source, scale, full, backend, workdir):
    """``(argv, scaled)``: the process that runs one example, and what was scaled (empty: nothing)."""
    values = {k: (big if full else small) for k, (big, small) in scale.items()}
    scaled = "" if full or not scale else ", ".join(f"{big} -> {small}" for big, small in scale.values())
    text = source.format(**values)
    if text.startswith("ge."):
        code = ("import time, numpy as np, gpuensembles as ge\nfrom gpuensembles.core.cache import compile_seconds\n"
                f"t = time.perf_counter(); c = compile_seconds()\n_ = {text[:-1]}, backend={backend!r}, "
                "progress=True)\nprint(f'ran in {time.perf_counter() - t - (compile_seconds() - c):.3f} s; compiling "
                "not counted')\n")
        return [sys.executable, "-c", code], scaled
    out = os.path.join(workdir, "out.nc")
    return (["gpuensembles", *text.split(), "-o", out, "--overwrite", "--backend", backend, "--progress"],
            scaled)


def run(name, source, scale, full, backend, workdir) -> dict:
    """One example: its estimate [s] (None: under the announce threshold) and measured time [s]."""
    argv, scaled = _command(source, scale, full, backend, workdir)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir)
    if done.returncode:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    found = _ESTIMATE.search(done.stderr)
    # the run's own time as its summary line gives it (compiling excluded), not the process's start-up
    measured = float(_RAN.search(done.stdout).group(1))
    estimate = float(found.group(1)) * _TO_SECONDS[found.group(2)] if found else None
    return dict(name=name, scaled=scaled, estimate=estimate, measured=measured,
                source=found.group(3) if found else "", line=found.group(0) if found else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated example names (substrings)")
    parser.add_argument("--gpu-sized", action="store_true", help="run every example at full size")
    parser.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in EXAMPLES.items()
              if not args.only or any(part in k for part in args.only.split(","))}
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, (source, scale) in chosen.items():
            row = run(name, source, scale, args.gpu_sized, args.backend, workdir)
            rows.append(row)
            print(f"{name}: {row['line'] or 'no estimate'}; measured {row['measured']:.3g} s", file=sys.stderr,
                  flush=True)
    print(f"{'example':32s} {'scaled':18s} {'estimate s':>10s} {'measured s':>10s} {'ratio':>6s}  source")
    worst = 1.0
    for r in rows:
        if r["estimate"] is None:
            ratio = r["measured"] / ANNOUNCE_SECONDS if r["measured"] > ANNOUNCE_SECONDS else 1.0
            shown = f"<{ANNOUNCE_SECONDS:g}"
        else:
            ratio = r["estimate"] / r["measured"]
            shown = f"{r['estimate']:.3g}"
        worst = max(worst, ratio, 1 / ratio)
        print(f"{r['name']:32s} {r['scaled']:18s} {shown:>10s} {r['measured']:10.3g} {ratio:6.2f}  {r['source']}")
    print(f"worst factor between estimate and measured time: {worst:.2f}")
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
