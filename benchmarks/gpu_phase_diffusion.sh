#!/usr/bin/env bash
# Phase diffusion and retrapping on the lent GPU machine, in one call: install (dependencies as
# wheels in .whl/, see docs/contributing.rst), the Josephson GPU tests, then sections of
# `python -m benchmarks.bench_phase_diffusion`. Logs, JSON and the sections' NetCDF (one tar) go to
# "$OUT" (default /tmp/out).
#   bash benchmarks/gpu_phase_diffusion.sh [sections]     # default: li; e.g. validate,turnover,pair
# SKIP_TESTS=1 skips the tests; LIMIT (seconds, default 480) bounds the benchmark run.
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
source benchmarks/gpu_install.sh
out=${OUT:-/tmp/out}; mkdir -p "$out/nc"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
git log -1 --format='tree: %h %s' 2>/dev/null | tee -a "$out/gpu.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== [$((SECONDS - T0)) s] pytest -m gpu tests/josephson"
  timeout 240 python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q tests/josephson > "$out/pytest_gpu.log" 2>&1
  echo "   exit $?"; tail -4 "$out/pytest_gpu.log"
fi
echo "== [$((SECONDS - T0)) s] benchmarks.bench_phase_diffusion --only ${1:-li}"
timeout "${LIMIT:-480}" python3 -m benchmarks.bench_phase_diffusion --only "${1:-li}" --save "$out/nc" \
  --json "$out/phase_diffusion.json" > "$out/phase_diffusion.log" 2>&1
echo "   exit $? after $((SECONDS - T0)) s"
(cd "$out" && tar czf nc.tgz nc && rm -rf nc)
grep -v "Warning\|^  " "$out/phase_diffusion.log" | tail -40
