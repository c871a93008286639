#!/usr/bin/env bash
# Clusters on the lent multi-GPU machine, in one call: install (dependencies as wheels in .whl/,
# dask-cuda among them; see docs/contributing.rst), the GPU tests of clusters (two threads per
# worker loading kernels at once; the client holds no CUDA context), then
# `python -m benchmarks.scaling` over the cases in $ONLY. Logs go to "$OUT" (default /tmp/out).
#   ONLY=rates,escape_times SECONDS_PER_GPU=15 GPUS="1 4" bash benchmarks/gpu_cluster.sh
# The one-GPU baselines last as long as all GPUs' runs together. LANES runs them side by side,
# each lane (cases joined by commas) on a one-GPU cluster of its own GPU, sized for WORK_GPUS;
# SIZES (their JSON) then gives the many-GPU runs the same sizes, in a later call:
#   LANES="escape_times switching_currents ising xorsat" bash benchmarks/gpu_cluster.sh
#   SIZES="one_*.json" ONLY=escape_times,switching_currents,ising,xorsat GPUS=4 bash benchmarks/gpu_cluster.sh
set -u
export PYTHONUNBUFFERED=1
source benchmarks/gpu_install.sh
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q -k "cluster or client_process" tests 2>&1 \
    | tee "$out/pytest_gpu.log" | tail -4
fi
seconds=${SECONDS_PER_GPU:-60}
if [ -n "${LANES:-}" ]; then
  # one GPU a lane, from those this process was given
  IFS=, read -r -a gpus <<< "${CUDA_VISIBLE_DEVICES:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
  read -r -a lanes <<< "$LANES"
  if [ "${#lanes[@]}" -gt "${#gpus[@]}" ]; then
    echo "LANES has ${#lanes[@]} lanes for ${#gpus[@]} GPUs: lanes would share a GPU" >&2
    exit 2
  fi
  pids=()
  for i in "${!lanes[@]}"; do
    lane=${lanes[$i]}
    CUDA_VISIBLE_DEVICES=${gpus[$i]// /} python3 -m benchmarks.scaling --gpus 1 --work-gpus "${WORK_GPUS:-4}" \
      --seconds "$seconds" --only "$lane" ${SIZES:+--sizes $SIZES} --json "$out/one_${lane//,/_}.json" \
      > "$out/one_${lane//,/_}.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  grep -h "GPU(s), size\|Error" "$out"/one_*.log
  python3 -m benchmarks.scaling --report "$out"/one_*.json
  exit "$rc"
else
  python3 -m benchmarks.scaling --gpus ${GPUS:-1 4} --seconds "$seconds" --json "$out/scaling.json" \
    --only "${ONLY:-rates,escape_times,switching_currents,ising,xorsat}" ${SIZES:+--sizes $SIZES} \
    2>&1 | grep --line-buffered -v "Warning\|warn" | tee "$out/scaling.log" | tail -30
fi
