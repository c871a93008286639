"""Print what the compiler made of the escape-time kernel: registers, local memory, fast math.

    python -m benchmarks.inspect_kernel
"""

from gpuensembles import _backend
from gpuensembles.models import josephson


def main():
    for dtype in ("float32", "float64"):
        runner = _backend.first_passage_runner(josephson.escape_kernel("underdamped", dtype), "cuda")
        import numpy as np

        out = np.empty((1, 64), dtype=np.int64)
        runner(np.array([[1.0, 0.05, 0.5, 0.02, 0.004]]), np.zeros(1, np.uint32), 0, 1, 10**6, out)
        kernel = runner.kernel
        sig = kernel.signatures[0]
        ptx = kernel.inspect_asm(sig)
        print(f"{dtype}: registers/thread {kernel.get_regs_per_thread(sig)}, "
              f"local bytes/thread {kernel.get_local_mem_per_thread(sig)}, "
              + ", ".join(f"{op} x{ptx.count(op)}" for op in ("sin.approx", "cos.approx", "lg2.approx", "sqrt.approx",
                                                            "mul.wide.u32", "mul.hi.u32", "ld.local", "st.local",
                                                            "atom.global")))


if __name__ == "__main__":
    main()
