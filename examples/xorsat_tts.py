"""3-XORSAT: exponential time to solution and the optimal p of the quasi-greedy solver (Bernaschi et al. 2021)
==============================================================================================================

Left (the seed's Fig. 2): the probability that a run has not yet found a solution, over
the time, for several random instances, on a log scale. The dashed lines are the
exponential law ``exp(-t / tau)`` with each instance's mean TTS ``tau``. Right (the seed's
Fig. 1): the median instance's ``tau`` over ``p`` and the pseudo-temperature
``T = -2 / ln p``::

    python examples/xorsat_tts.py          # CPU size: N = 64, 32 clones per run, p from 0.05
    python examples/xorsat_tts.py --gpu    # N = 128, 2^18 clones per run

Writes xorsat_tts.nc and xorsat_tts.png.
"""

import argparse

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gpuensembles as ge  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="the seed's size (needs a GPU)")
    parser.add_argument("--output", default="xorsat_tts")
    args = parser.parse_args(argv)
    ps = np.array([0.03, 0.05, 0.07, 0.1, 0.14, 0.2])
    if args.gpu:
        N, clones, count, runs, p_count, p_runs = 128, 2**18, 8, 200, 10, 8
    else:  # without p = 0.03: its tau, tens of times the optimum's, would take most of the time
        N, clones, count, runs, p_count, p_runs = 64, 32, 4, 100, 4, 4
        ps = ps[1:]
    instances = ge.xorsat.random_instances(N, count, seed=1)
    ds = ge.xorsat.solve(instances, p=0.1, clones=clones, runs=runs, seed=2)
    ds.to_netcdf(f"{args.output}.nc")
    scan = ge.xorsat.solve(instances.isel(instance=slice(p_count)), p=ps, clones=clones, runs=p_runs, seed=3)
    tau_p = scan.tts.mean(time="sweeps").tau.median("instance")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    ds.tts.plot_survival(ax=left, time="sweeps")
    left.set(xlabel="sweeps", title=f"N = {N}, {clones} clones, {runs} runs per instance")
    right.plot(ps, tau_p, "o-")
    right.set(xscale="log", yscale="log", xlabel="p (flip probability with one unsatisfied triplet)",
              ylabel="median instance's tau (sweeps)", title=f"{p_count} instances, {p_runs} runs each")
    top = right.secondary_xaxis("top", functions=(lambda p: -2 / np.log(np.clip(p, 1e-9, 1 - 1e-9)),
                                                  lambda T: np.exp(-2 / np.clip(T, 1e-9, None))))
    top.set_xlabel("pseudo-temperature T = -2 / ln p")
    top.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2f"))
    top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.suptitle(f"quasi-greedy 3-XORSAT on {ds.attrs['device']}")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)
    ks = ds.tts.ks_test(time="sweeps")
    print("tau (sweeps) per instance:", np.round(ds.tts.mean(time="sweeps").tau.values, 1))
    print("KS p-values of the exponential law:", np.round(ks.pvalue.values, 3))
    print(f"best p on the grid: {float(ps[int(np.argmin(tau_p.values))])}")


if __name__ == "__main__":
    main()
