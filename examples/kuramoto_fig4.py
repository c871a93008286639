"""
Kuramoto phase density over time (Januszewski & Kostur 2010, Fig. 4)
====================================================================

Globally coupled noisy phase oscillators with ``w_i = 0``, ``K = 4`` and ``kT = 1``
(Januszewski & Kostur 2010, Fig. 4): from uniform phases the density condenses into a single
peak, and the order parameter approaches the mean-field value ``r`` solving
``r = I1(K r / kT) / I0(K r / kT)``. The mean-field path needs no host round trip per step::

    python examples/kuramoto_fig4.py          # CPU size: 2^15 oscillators
    python examples/kuramoto_fig4.py --gpu    # the seed's 2^24 oscillators

Writes kuramoto_fig4.nc and kuramoto_fig4.png.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import optimize, special  # noqa: E402

import gpuensembles as ge  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="2^24 oscillators (needs a GPU)")
    parser.add_argument("--output", default="kuramoto_fig4")
    args = parser.parse_args(argv)
    K, kT = 4.0, 1.0
    N = 1 << 24 if args.gpu else 1 << 15
    ds = ge.kuramoto(N=N, K=K, frequencies="gaussian", width=0.0, kT=kT, h=0.01, steps=1000, sample_every=10,
                     bins=100, seed=5)
    ds.to_netcdf(f"{args.output}.nc")
    # stationary mean field with identical oscillators and noise: r = I1(K r / kT) / I0(K r / kT)
    r_inf = optimize.brentq(lambda r: special.i1(K * r / kT) / special.i0(K * r / kT) - r, 1e-3, 1.0)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    (ds.density.isel(realization=0) / N).plot(ax=left, x="time", y="phase", cmap="viridis")
    left.set_title(f"P(x; t), N = 2^{int(np.log2(N))}, K = {K:g}, kT = {kT:g}")
    ds.r.isel(realization=0).plot(ax=right, label="simulation")
    right.axhline(r_inf, color="k", ls="--", label=f"mean field r = {r_inf:.3f}")
    right.set_ylabel("order parameter r")
    right.legend()
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)
    print(f"{ds.attrs['device']}: r(t = 10) = {float(ds.r.isel(realization=0, time=-1)):.4f}, mean field {r_inf:.4f}")


if __name__ == "__main__":
    main()
