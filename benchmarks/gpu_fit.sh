#!/usr/bin/env bash
# Fitting switching histograms on the lent GPU machine, in one call: install (dependencies as wheels
# in .whl/, see docs/contributing.rst), then `python -m benchmarks.bench_fit` (model choice on the Li
# junction under the voltage criterion, the simulated fit's time, and recovery over as many data sets
# as fit in the time left). Logs and JSON go to "$OUT" (default /tmp/out).
#   bash benchmarks/gpu_fit.sh [sections]      # default: choice,recovery
# LIMIT (seconds, default 540) bounds the whole call; WORKERS (default 4) fit recovery sets at once,
# dealt out over GPUS GPUs (default 1; e.g. WORKERS=16 GPUS=4 on 4 x H100); FIRST (default 1) numbers
# the first recovery set: sets of the same number repeat the same seeds.
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
source benchmarks/gpu_install.sh
left=$(( ${LIMIT:-540} - (SECONDS - T0) ))
# the recovery section stops starting sets at --limit; those under way finish (about one fit more)
timeout "$left" python3 -m benchmarks.bench_fit --only "${1:-choice,recovery}" --limit $(( left - 200 )) \
  --workers "${WORKERS:-4}" --gpus "${GPUS:-1}" --first "${FIRST:-1}" --json "$out/fit.json" > "$out/fit.log" 2>&1
echo "   exit $? after $((SECONDS - T0)) s"
grep -v "Warning\|warn" "$out/fit.log" | tail -40
