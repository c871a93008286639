# Sourced by the benchmarks/gpu_*.sh scripts: install on the lent GPU machine, which has no
# network. The dependencies the image lacks come as wheels in .whl/ (docs/contributing.rst says
# how to fetch them) into /tmp/site, on PYTHONPATH; then the package itself, without its deps.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -2
