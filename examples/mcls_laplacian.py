"""
Monte Carlo solution of the 2D Laplacian (the Hamilton & Lupo Pasini report)
============================================================================

The seed's test problem: the five-point Laplacian on a 30 x 30 grid (n = 900) with b = 1,
solved with adjoint random walks (weight cutoff 1e-9)::

    python examples/mcls_laplacian.py          # CPU size: up to 3e4 histories (seconds)
    python examples/mcls_laplacian.py --gpu    # up to 1e7 histories (the seed's case; well under 1 s)

Writes mcls_laplacian.nc and mcls_laplacian.png: the solution with its error bars, and the
error against the number of histories for both estimators, next to the N^(-1/2) law and the
error conjugate gradients reaches after k iterations.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

import gpuensembles as ge  # noqa: E402
from gpuensembles.models.mcls import problems  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="up to 1e7 histories (needs a GPU)")
    parser.add_argument("--output", default="mcls_laplacian")
    args = parser.parse_args(argv)
    m = 30
    A = problems.laplacian_2d(m)
    b = np.ones(m * m)
    exact = spla.spsolve(A.tocsc(), b)
    histories = np.logspace(3, 7 if args.gpu else 4.5, 5 if args.gpu else 3).astype(int)

    errors = {}
    for estimator in ("collision", "expected"):
        runs = [ge.mc_solve(A, b, histories=int(n), estimator=estimator, seed=20 + i) for i, n in enumerate(histories)]
        errors[estimator] = [np.linalg.norm(ds.x - exact) / np.linalg.norm(exact) for ds in runs]
    best = runs[-1]
    best.to_netcdf(f"{args.output}.nc")

    cg_errors = []
    spla.cg(A, b, rtol=1e-14, maxiter=60,
            callback=lambda xk: cg_errors.append(np.linalg.norm(xk - exact) / np.linalg.norm(exact)))

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    image = left.imshow(best.x.values.reshape(m, m), cmap="viridis")
    fig.colorbar(image, ax=left, label="x")
    rel = float(np.linalg.norm(best.x_stderr) / np.linalg.norm(best.x))
    left.set_title(f"x, {int(best.histories):.0e} histories (||stderr|| / ||x|| = {rel:.1e})")
    for estimator, values in errors.items():
        right.loglog(histories, values, "o-", label=f"adjoint, {estimator} estimator")
    right.loglog(histories, errors["collision"][0] * np.sqrt(histories[0] / histories), "k:", label="N^(-1/2)")
    ax2 = right.twiny()
    ax2.semilogy(np.arange(1, len(cg_errors) + 1), cg_errors, "s-", color="tab:red", ms=3, label="CG")
    ax2.set_xlabel("CG iterations", color="tab:red")
    right.set(xlabel="histories N", ylabel="||x - x_exact|| / ||x_exact||")
    right.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(f"{args.output}.png", dpi=120)
    print(f"{best.attrs['device']}: relative error {errors['expected'][-1]:.2e} with "
          f"{int(best.histories):.0e} histories; CG reaches it in "
          f"{1 + int(np.argmax(np.array(cg_errors) < errors['expected'][-1]))} iterations")


if __name__ == "__main__":
    main()
