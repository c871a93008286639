"""Peers measured in the same run: NVIDIA's cuIsing (``NVIDIA/ising-gpu``, ``optimized/``).

The project does not ship the peer's source. Put its ``optimized/`` folder (``main.cu``,
``utils.c``, ``utils.h``, ``cudamacro.h``) in ``.cuising/`` at the repository root, or name a
folder in ``GPUENSEMBLES_CUISING_SRC``; it is built with ``nvcc`` for the visible GPU on first
use. Without the source or ``nvcc`` the peer's rows say why and carry no figure.

cuIsing times its update loop with CUDA events and reports flips/ns; it measures nothing
while it sweeps (no energy, no magnetization): the figure is the peer's kernel rate.
"""

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

#: Source folder of cuIsing's ``optimized/`` implementation.
SOURCE_VARIABLE = "GPUENSEMBLES_CUISING_SRC"
_DEFAULT_SOURCE = Path(__file__).resolve().parent.parent / ".cuising"
#: cuIsing lattices: the width a multiple of 2048, the height of 16.
CUISING_WIDTH = 2048
_RATE = re.compile(r"Kernel execution time for (\d+) update steps: \S+ ms, ([0-9.]+) flips/ns")


#: CUDA 13 takes a cudaMemLocation where cuIsing passes cudaMemAdvise a device number: an
#: overload, included before its source, passes the number on as a device location.
_CUDA13_COMPAT = """#include <cuda_runtime.h>
#if CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void *ptr, size_t count, cudaMemoryAdvise advice, int device) {
    cudaMemLocation location;
    location.type = cudaMemLocationTypeDevice;
    location.id = device;
    return cudaMemAdvise(ptr, count, advice, location);
}
#endif
"""


def _nvcc():
    found = shutil.which("nvcc")
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    candidate = Path(cuda_home) / "bin" / "nvcc"
    return str(candidate) if candidate.exists() else None


@functools.cache
def cuising_binary():
    """``(path, None)`` of a built cuIsing, or ``(None, why not)``."""
    source = Path(os.environ.get(SOURCE_VARIABLE) or _DEFAULT_SOURCE)
    if not (source / "main.cu").exists():
        return None, f"no cuIsing source in {source} (set {SOURCE_VARIABLE}; see benchmarks/peers.py)"
    nvcc = _nvcc()
    if nvcc is None:
        return None, "nvcc not found (CUDA_HOME/bin or PATH)"
    from gpuensembles.core import backend as _backend

    cc = "".join(map(str, _backend.cuda_module().get_current_device().compute_capability))
    build = Path(tempfile.mkdtemp(prefix="cuising-"))
    binary = build / "cuIsing"
    (build / "compat.h").write_text(_CUDA13_COMPAT)
    # as its Makefile builds it, for this GPU's architecture
    for command in (["gcc", "-c", "-O3", f"-I{Path(nvcc).parent.parent / 'include'}", str(source / "utils.c"), "-o",
                     str(build / "utils.o")],
                    [nvcc, "-c", "-O3", "--use_fast_math", f"-arch=sm_{cc}", "-include", str(build / "compat.h"),
                     str(source / "main.cu"), "-o", str(build / "main.o")],
                    [nvcc, "-o", str(binary), str(build / "main.o"), str(build / "utils.o"), "-Xcompiler=-fopenmp"]):
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()
            return None, f"building cuIsing failed ({Path(command[0]).name}): {' / '.join(errors[:3])[:300]}"
    return str(binary), None


def cuising_rate(L: int, sweeps: int, beta: float, seed: int = 1):
    """cuIsing's flips/ns on one ``L x L`` lattice at ``beta`` over ``sweeps`` sweeps
    (``L`` a multiple of 2048); ``(rate, None)`` or ``(None, why not)``."""
    if L % CUISING_WIDTH:
        return None, f"cuIsing needs L a multiple of {CUISING_WIDTH}"
    binary, why = cuising_binary()
    if binary is None:
        return None, why
    proc = subprocess.run([binary, "-x", str(L), "-y", str(L), "-n", str(sweeps), "-t", repr(1.0 / beta),
                           "-s", str(seed)], capture_output=True, text=True, cwd=tempfile.gettempdir())
    match = _RATE.search(proc.stdout)
    if proc.returncode != 0 or match is None:
        return None, f"cuIsing failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    return float(match.group(2)), None
