#!/usr/bin/env bash
# One call on the lent GPU machine: install (no network there: dependencies come as wheels
# in .whl/, see docs/contributing.rst), run the GPU tests, then the benchmark table.
#   bash benchmarks/gpu_session.sh [pytest-args...]
# SKIP_TESTS=1 / SKIP_REPORT=1 / SKIP_ISING=1 / SKIP_XORSAT=1 / SKIP_LANGEVIN=1 / SKIP_MCLS=1 skip parts;
# with a copy of an older tree in .old/ (gpuensembles/ and benchmarks/), BASELINE=1 runs its
# escape-time report and Ising table too, for a before/after comparison in the same session.
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
[ "${SKIP_REPORT:-0}" = 1 ] || python3 -m benchmarks.report 2>&1 | tee "$out/report.log"
if [ "${BASELINE:-0}" = 1 ] && [ -d .old ]; then
  echo "== baseline: the tree in .old/"
  (cd .old && PYTHONPATH=.:/tmp/site python3 -m benchmarks.report) 2>&1 | tee "$out/report_old.log"
  [ "${SKIP_ISING:-0}" = 1 ] || (cd .old && PYTHONPATH=.:/tmp/site python3 -m benchmarks.bench_ising) 2>&1 | tee "$out/ising_old.log"
fi
[ "${SKIP_ISING:-0}" = 1 ] || python3 -m benchmarks.bench_ising 2>&1 | tee "$out/ising.log"
[ "${SKIP_XORSAT:-0}" = 1 ] || python3 -m benchmarks.bench_xorsat --only throughput 2>&1 | tee "$out/xorsat.log"
[ "${SKIP_LANGEVIN:-0}" = 1 ] || python3 -m benchmarks.bench_langevin 2>&1 | tee "$out/langevin.log"
[ "${SKIP_MCLS:-0}" = 1 ] || python3 -m benchmarks.bench_mcls 2>&1 | tee "$out/mcls.log"
