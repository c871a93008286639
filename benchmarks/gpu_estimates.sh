#!/usr/bin/env bash
# The estimates of the README's and the help's examples against their times, at full size, on
# the lent GPU machine in one call: install (dependencies as wheels in .whl/, see
# docs/contributing.rst), then `python -m benchmarks.estimates --gpu-sized --backend cuda`.
# The log goes to "$OUT" (default /tmp/out). LIMIT (seconds, default 540) bounds the run.
set -u
export PYTHONUNBUFFERED=1
source benchmarks/gpu_install.sh
timeout "${LIMIT:-540}" python3 -m benchmarks.estimates --gpu-sized --backend cuda ${ONLY:+--only "$ONLY"} \
  > "$out/estimates.log" 2>&1
echo "exit $?"
grep -v "Warning\|^  " "$out/estimates.log" | tail -45
