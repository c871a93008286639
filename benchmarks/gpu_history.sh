#!/usr/bin/env bash
# The performance history (asv, benchmarks/history/): measure commits, each with its own package
# (`git archive` of the commit, first on the benchmarks' path: asv takes it from ASV_PYTHONPATH)
# by the history benchmarks of this tree, and add the results to
# benchmarks/history/results/<machine>/ (and to "$OUT"/history.tgz after each commit). Commit
# them. On a GPU machine with this repository and the package installed ('.[cuda,bench]'):
#   bash benchmarks/gpu_history.sh                     # the current commit
#   COMMITS="58e11f7^..HEAD" bash benchmarks/gpu_history.sh   # a range, or COMMITS="735c814 17dab91"
# The lent machine's copy of the tree has no new commits: give it a bundle made beforehand,
#   git bundle create .history/main.bundle main        # then carry .history
# MACHINE names the results' folder (default: the GPU's name, e.g. nvidia-h100-80gb-hbm3).
set -u -o pipefail
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  source benchmarks/gpu_install.sh  # the lent machine: dependencies from wheels
else
  out=${OUT:-/tmp/out} && mkdir -p "$out"
fi
repo=$PWD
if [ -f .history/main.bundle ]; then
  repo=/tmp/history-repo
  rm -rf "$repo" && git clone -q -b main .history/main.bundle "$repo" || exit 1
fi
machine=${MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')}
conf=/tmp/history-asv.conf.json
python3 - "$repo" "$PWD/benchmarks/history" > "$conf" <<'PY'
import json, sys
conf = json.load(open(sys.argv[2] + "/asv.conf.json"))
conf.update(repo=sys.argv[1], benchmark_dir=sys.argv[2], results_dir=sys.argv[2] + "/results", html_dir="/tmp/history-html")
print(json.dumps(conf))
PY
python3 -m asv machine --config "$conf" --machine "$machine" --yes > /dev/null
range=${COMMITS:-HEAD}
case "$range" in *..*) commits=$(git -C "$repo" rev-list --reverse "$range") ;; *) commits=$(git -C "$repo" rev-parse $range) ;; esac
rc=0
for sha in $commits; do
  src=/tmp/history-src/$sha
  rm -rf "$src" && mkdir -p "$src" && git -C "$repo" archive "$sha" gpuensembles | tar -x -C "$src"
  start=$(date +%s)
  # the benchmarks refuse to run on another package than the commit's (GPUENSEMBLES_HISTORY_SOURCE)
  GPUENSEMBLES_HISTORY_SOURCE="$src" ASV_PYTHONPATH="$src:${PYTHONPATH:-}" timeout "${SECONDS_PER_COMMIT:-240}" \
    python3 -m asv run --config "$conf" --python=same --set-commit-hash "$sha" --machine "$machine" --show-stderr \
    > /tmp/history-asv.log 2>&1 || { echo "asv run failed for $sha (exit $?)"; rc=1; }
  { echo "== $sha"; cat /tmp/history-asv.log; } >> "$out/asv.log"  # one file: the lent machine returns few
  grep -E "^\s*\[|Error|error" /tmp/history-asv.log | tail -4
  if ! ls benchmarks/history/results/"$machine"/"${sha:0:8}"-*.json > /dev/null 2>&1; then
    echo "no result for $sha"; rc=1
  fi
  echo "$(git -C "$repo" log -1 --format='%h %s' "$sha" | cut -c1-70): $(( $(date +%s) - start )) s"
  tar -czf "$out/history.tgz" -C benchmarks/history/results .
done
exit "$rc"
