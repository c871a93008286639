# Sourced by the benchmarks/gpu_*.sh scripts: install on the lent GPU machine, which has no
# network. The dependencies the image lacks come as wheels in .whl/ (docs/contributing.rst says
# how to fetch them) into /tmp/site, on PYTHONPATH; then the package itself, without its deps.
# It sets $out ("$OUT", default /tmp/out) and writes the GPUs and the tree's commit to $out/gpu.txt.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -2
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
git log -1 --format='tree: %h %s' 2>/dev/null | tee -a "$out/gpu.txt"
