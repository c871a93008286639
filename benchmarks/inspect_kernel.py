"""What the compiler made of the escape-time kernel, and where the time of a call goes.

    python -m benchmarks.inspect_kernel [OUTDIR]

Prints registers, local memory and counts of key instructions per dtype, times the bare
runner (kernel + copies) against the full ``escape_times`` call, and writes PTX/SASS
to OUTDIR when given.
"""

import sys
import time

import numpy as np

import gpuensembles as ge
from gpuensembles.core import backend as _backend
from gpuensembles.models.josephson import physics as washboard

from .bench_escape_times import CASE, SIZES

OPS = ("sin.approx", "cos.approx", "lg2.approx", "sqrt.approx", "mul.wide.u32", "mul.hi.u32", "ld.local", "st.local",
       "atom.global")


def main(outdir=None):
    row = np.array([[1.0, CASE["damping"], CASE["gamma"], CASE["D"], CASE["h"]]])
    n = SIZES["cuda"]
    for dtype in ("float32", "float64"):
        runner = _backend.first_passage_runner(washboard.escape_kernel("underdamped", dtype), "cuda")
        out = np.empty((1, n), dtype=np.int64)
        runner(row, np.zeros(1, np.uint32), 0, 1, 10**9, out[:, :4096])
        kernel = runner.kernel
        regs = next(iter(kernel.get_regs_per_thread().values()))
        local = next(iter(kernel.get_local_mem_per_thread().values()))
        ptx = next(iter(kernel.inspect_asm().values()))
        print(f"{dtype}: registers/thread {regs}, local bytes/thread {local}, "
              + ", ".join(f"{op} x{ptx.count(op)}" for op in OPS))
        t0 = time.perf_counter()
        runner(row, np.zeros(1, np.uint32), 0, 1, 10**9, out)
        bare = time.perf_counter() - t0
        t0 = time.perf_counter()
        ds = ge.escape_times(**CASE, realizations=n, seed=1, dtype=dtype, backend="cuda", progress=False)
        full = time.perf_counter() - t0
        steps = int(out.sum())
        print(f"{dtype}: bare runner {bare:.3f} s ({steps / bare:.3e} steps/s), full call {full:.3f} s "
              f"({int(ds.steps.sum()) / full:.3e} steps/s)")
        if outdir:
            with open(f"{outdir}/escape_{dtype}.ptx", "w") as f:
                f.write(ptx)
            try:
                sass = next(iter(kernel.inspect_sass().values()))
                with open(f"{outdir}/escape_{dtype}.sass", "w") as f:
                    f.write(sass)
            except Exception as err:  # nvdisasm missing
                print("no SASS:", err)


if __name__ == "__main__":
    main(*sys.argv[1:])
