#!/usr/bin/env bash
# One call on the lent GPU machine: install (no network there: dependencies come as wheels
# in .whl/, see docs/contributing.rst), run the GPU tests, time the first call of a fresh
# process with a cold and a warm kernel cache, then print the benchmark table.
#   bash benchmarks/gpu_session.sh [pytest-args...]
# SKIP_TESTS=1 / SKIP_FIRST_CALL=1 / SKIP_TABLE=1 skip parts; ONLY=ising,kuramoto,... passes
# --only to `python -m benchmarks`. With a copy of an older tree in .old/ (gpuensembles/ and
# benchmarks/), BASELINE=1 runs its table too, for a before/after comparison in the same session.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# byte-compiled as a user's install is (the machine sets PYTHONDONTWRITEBYTECODE): else the
# first-call timings below include compiling dask's sources, 0.8 s on an H200 machine
python3 -m compileall -q /tmp/site > /dev/null
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
out=${OUT:-/tmp/out}; mkdir -p "$out"
# a kernel cache of this session only: the first call below starts cold
export NUMBA_CACHE_DIR=/tmp/kernel-cache
rm -rf "$NUMBA_CACHE_DIR"
if [ "${SKIP_FIRST_CALL:-0}" != 1 ]; then
  # The README's main job and the Ising example in fresh processes: cold cache (compiles), then warm (loads).
  TIMEFORMAT="wall %R s (import, CUDA start-up, the call, NetCDF)"
  for cache in cold warm warm; do
    echo "== fresh process, $cache kernel cache: escape-times (README)"
    rm -f /tmp/fpt.nc; time gpuensembles escape-times --damping 0.05 --gamma 0.5 --D 0.01 --h 0.004 --realizations 5120 --seed 1 \
      --no-progress -o /tmp/fpt.nc | sed -n '1,2p'
  done 2>&1 | tee "$out/first_call.log"
  for cache in cold warm; do
    echo "== fresh process, $cache kernel cache: ising (README)"
    rm -f /tmp/ising.nc; time gpuensembles ising --L 16 32 64 --beta 0.40 0.42 0.44 0.46 0.48 --sweeps 20000 --thermalization 2000 \
      --realizations 32 --seed 1 --no-progress -o /tmp/ising.nc | sed -n '1,2p'
  done 2>&1 | tee -a "$out/first_call.log"
  python3 -X importtime -c "import gpuensembles" 2>&1 | tail -1 | tee -a "$out/first_call.log"
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q "$@" 2>&1 | tee "$out/pytest_gpu.log" | tail -25
fi
if [ "${SKIP_TABLE:-0}" != 1 ]; then
  python3 -m benchmarks --json "$out/benchmarks.json" ${ONLY:+--only "$ONLY"} 2>&1 | tee "$out/benchmarks.log"
fi
if [ "${BASELINE:-0}" = 1 ] && [ -d .old ]; then
  echo "== baseline: the tree in .old/"
  (cd .old && PYTHONPATH=.:/tmp/site python3 -m benchmarks ${ONLY:+--only "$ONLY"}) 2>&1 | tee "$out/benchmarks_old.log"
fi
