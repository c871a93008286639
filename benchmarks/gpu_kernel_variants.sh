#!/usr/bin/env bash
# The kernel variants on one GPU, in one call (at most ~8 minutes on an H200: DEADLINE below): the default path and every
# run-time variant of the kernels left below target, each with its baseline in the same run,
# then one short table. From the repository root:
#   bash benchmarks/gpu_kernel_variants.sh
# Logs and JSON go to "$OUT" (default /tmp/out). Dependencies come as wheels in .whl/ (no
# network on the GPU machine), installed the way benchmarks/gpu_session.sh does it.
#
# Variants (environment variables, read when the kernels are built / launched):
#   GPUENSEMBLES_KURAMOTO_KERNEL = strided | coalesced | coalesced-f32
#     (gpuensembles/core/templates/coupled.py, MEAN_FIELD_VARIANTS)
#   GPUENSEMBLES_ISING_RESIDENT_THREADS = 512 | 1024, with GPUENSEMBLES_REGISTER_LIMITS=ising_resident=64 | 32
#     (two blocks per multiprocessor: 256 blocks of 64^2 x 32 lattices in one wave on 132 SMs)
#     (gpuensembles/models/ising/kernels.py, resident_threads; gpuensembles/core/backend.py, register_limits)
# Each runs in its own process, so every variant compiles its own kernels (the cap is in the cache key).
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
source benchmarks/gpu_install.sh
out=${OUT:-/tmp/out}; mkdir -p "$out"
export NUMBA_CACHE_DIR=/tmp/kernel-cache-variants
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
git log -1 --format='tree: %h %s' 2>/dev/null | tee -a "$out/gpu.txt"

elapsed() { echo $((SECONDS - T0)); }
# Every step gets at most what is left before DEADLINE seconds (default 465: under 8 minutes
# with the table); a step with less than 20 s left is skipped and says so.
DEADLINE=${DEADLINE:-465}
allowed() { local want=$1 left=$((DEADLINE - SECONDS + T0)); [ "$left" -lt "$want" ] && want=$left; echo "$want"; }
# run the benchmarks of $2 (comma list) as variant $1 with the environment in $3..., at most $LIMIT s
bench() {
  local name=$1 only=$2 limit; shift 2
  limit=$(allowed "${LIMIT:-150}")
  if [ "$limit" -lt 20 ]; then echo "== skipped (time): variant $name"; return; fi
  echo "== [$(elapsed) s] benchmarks --only $only, variant $name ${*:-} (at most $limit s)"
  env "$@" timeout "$limit" python3 -m benchmarks --only "$only" --repeats 5 --json "$out/bench_$name.json" \
    > "$out/bench_$name.log" 2>&1
  echo "   exit $? after $(elapsed) s"; grep -E '^\| (kuramoto|mcls|ising)' "$out/bench_$name.log" | cut -c1-200
}
# run pytest $2... as step $1 with at most $LIMIT s (environment: prefix the call with it)
tests() {
  local name=$1 limit; shift
  limit=$(allowed "${LIMIT:-120}")
  if [ "$limit" -lt 20 ]; then echo "== skipped (time): pytest $name"; return; fi
  echo "== [$(elapsed) s] pytest -m gpu $* (${GPUENSEMBLES_KURAMOTO_KERNEL:-default kernels}; at most $limit s)"
  timeout "$limit" python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q "$@" > "$out/pytest_$name.log" 2>&1
  echo "   exit $?"; tail -4 "$out/pytest_$name.log"
}

# 1. the default path, every workload of the issue, baselines in the same run
LIMIT=200 bench default kuramoto,mcls,ising
# 2. Kuramoto mean-field variants (each row: % of the copy bound measured in the same process)
for v in strided coalesced coalesced-f32; do
  LIMIT=75 bench "kuramoto-$v" kuramoto GPUENSEMBLES_KURAMOTO_KERNEL=$v
done
# 3. Ising ensemble mode with 512 threads per resident block (registers capped: two blocks per SM)
LIMIT=60 bench ising-512 ising GPUENSEMBLES_ISING_RESIDENT_THREADS=512 GPUENSEMBLES_REGISTER_LIMITS=ising_resident=64
# 4. import time (six fresh processes; the first also writes the bytecode and is not counted)
for i in 1 2 3 4 5 6; do  # a failed import leaves no importtime_$i.txt (its log is importtime_$i.failed)
  python3 -X importtime -c 'import gpuensembles' 2> "$out/importtime_$i.txt" || mv "$out/importtime_$i.txt" \
    "$out/importtime_$i.failed"
done
echo "== [$(elapsed) s] import gpuensembles, slowest 15 (cumulative us) of the last run"
sort -t'|' -k2 -n "$(ls "$out"/importtime_*.txt "$out"/importtime_*.failed 2>/dev/null | tail -1)" | tail -15
# 5. the GPU tests of the three families (default path), then the Kuramoto ones on the variant
#    that differs the most from the default (strided: one thread per group of four)
LIMIT=150 tests default tests/kuramoto tests/mcls tests/ising
GPUENSEMBLES_KURAMOTO_KERNEL=strided LIMIT=60 tests kuramoto-variant tests/kuramoto
# 6. Ising ensemble mode with 1024 threads per resident block (32 registers: spills likely), if there is time
LIMIT=55 bench ising-1024 ising GPUENSEMBLES_ISING_RESIDENT_THREADS=1024 GPUENSEMBLES_REGISTER_LIMITS=ising_resident=32

# 7. one table
echo "== [$(elapsed) s] issue 19: targets"
python3 - "$out" <<'EOF'
import glob, json, os, re, statistics, sys

out = sys.argv[1]
rows = []


def fmt(values, scale=1.0, unit=""):
    v = [x * scale for x in values]
    return f"{statistics.median(v):.4g}{unit} ({min(v):.4g}-{max(v):.4g})" if v else "-"


order = ["default", "kuramoto-strided", "kuramoto-coalesced", "kuramoto-coalesced-f32",
         "ising-512", "ising-1024"]
for name in order:
    path = os.path.join(out, f"bench_{name}.json")
    if not os.path.exists(path):
        rows.append((name, "(no result: see its log)", "-", "-", "-"))
        continue
    data = json.load(open(path))
    for failed in data.get("failed", []):
        rows.append((name, f"{failed}: FAILED (traceback in bench_{name}.log)", "-", "-", "no"))
    for r in data["rows"]:
        w = r["workload"]
        pkg, base, call = r["package"], r["baseline"], r["whole_call"]
        if w.startswith("kuramoto"):
            pct = [x / base["median"] for x in pkg["values"]]
            rows.append((name, w + ", % of copy bound", fmt(pct, 100, "%"), ">= 70%",
                         "yes" if statistics.median(pct) >= 0.70 else "no"))
        elif w.startswith("ising ensemble"):
            pct = [x / base["median"] for x in pkg["values"]]
            rows.append((name, w + ", % of large-lattice rate", fmt(pct, 100, "%"), ">= 90%",
                         "yes" if statistics.median(pct) >= 0.90 else "no"))
            rows.append((name, w + ", flips/ns", fmt(pkg["values"]), "-", "-"))
        elif w.startswith("ising multi-spin"):
            rows.append((name, w + ", flips/ns", fmt(pkg["values"]), "(out of scope: >= 3000)", "-"))
        elif w.startswith("mcls"):
            rows.append((name, w + ", whole call s", fmt(call["values"]), "<= 0.2 s",
                         "yes" if call["median"] <= 0.2 else "no"))
            rows.append((name, w + ", kernels s", fmt(pkg["values"]), "-", "-"))
times = []
for path in sorted(glob.glob(os.path.join(out, "importtime_[2-9].txt"))):  # the first wrote the bytecode
    last = [line for line in open(path) if line.startswith("import time:")]
    m = re.match(r"import time:\s*\d+\s*\|\s*(\d+)\s*\|\s*gpuensembles\s*$", last[-1]) if last else None
    if m:
        times.append(int(m.group(1)) / 1e6)
if not times:
    rows.append(("default", "import gpuensembles", "(failed or not run: see importtime_*)", "<= 1 s", "-"))
else:
    rows.append(("default", f"import gpuensembles, s ({len(times)} fresh processes)", fmt(times), "<= 1 s",
                 "yes" if statistics.median(times) <= 1.0 else "no"))
head = ("variant", "workload", "median (min-max)", "target", "met?")
widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(5)]
for r in [head, tuple("-" * w for w in widths)] + rows:
    print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")
EOF
echo "total $(elapsed) s"
