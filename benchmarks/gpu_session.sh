#!/usr/bin/env bash
# One call on the lent GPU machine: install (no network there: dependencies come as
# wheels in .whl/, see README "Developing"), run the GPU tests, inspect the kernel, benchmark.
#   bash benchmarks/gpu_session.sh [pytest-args...]
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c "import numpy, numba, numba_cuda, xarray, dask; print('numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'xarray', xarray.__version__, 'dask', dask.__version__)"
out=${OUT:-/tmp/out}; mkdir -p "$out"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m gpu -p no:cacheprovider -q "$@" 2>&1 | tee "$out/pytest_gpu.log" | tail -25
fi
[ "${SKIP_INSPECT:-0}" = 1 ] || python3 -m benchmarks.inspect_kernel "$out" 2>&1 | tee "$out/inspect.log" | tail -15
[ "${SKIP_REPORT:-0}" = 1 ] || python3 -m benchmarks.report 2>&1 | tee "$out/report.log"
[ "${SKIP_LI2007:-0}" = 1 ] || python3 -m benchmarks.li2007 2>&1 | tee "$out/li2007.log"
[ "${SKIP_MCLS:-0}" = 1 ] || python3 -m benchmarks.bench_mcls 2>&1 | tee "$out/mcls.log"
