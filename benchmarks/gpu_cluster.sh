#!/usr/bin/env bash
# Clusters on the lent multi-GPU machine, in one call: install (dependencies as wheels in .whl/,
# dask-cuda among them; see docs/contributing.rst), the GPU tests of clusters (two threads per
# worker loading kernels at once; the client holds no CUDA context), then
# `python -m benchmarks.scaling` over the cases in $ONLY. Logs go to "$OUT" (default /tmp/out).
#   ONLY=rates,escape_times SECONDS_PER_GPU=15 GPUS="1 4" bash benchmarks/gpu_cluster.sh
set -u
export PYTHONUNBUFFERED=1
source benchmarks/gpu_install.sh
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q -k "cluster or client_process" tests 2>&1 \
    | tee "$out/pytest_gpu.log" | tail -4
fi
python3 -m benchmarks.scaling --gpus ${GPUS:-1 4} --seconds "${SECONDS_PER_GPU:-60}" --only "${ONLY:-rates,escape_times,switching_currents,ising,xorsat}" \
  2>&1 | grep --line-buffered -v "Warning\|warn" | tee "$out/scaling.log" | tail -30
