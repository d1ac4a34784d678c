#!/bin/bash
# Not run by CI (it has no GPU): the checks for a machine with a CUDA GPU, in one command.
# The environment, benchmarks/bench_gpu.py against CuPy and JAX, then the cuda tests on the
# hardware (tests/cuda_sim, the full surface table, and tests/test_cuda_gpu.py).
#   usage: bash .ci/gpu-check.sh [TEST_TIMEOUT_S] [pytest selection...]
# Logs go to $OUT (default /tmp/devout). Wheels in .whl/ are installed first (--target
# /tmp/site): numba-cuda 0.30.4 needs NumPy < 2.5, and a GPU image may have 2.5.
set -u
export PYTHONUNBUFFERED=1 JITC_CACHE_DIR=/tmp/jitc-cache JITC_COMPILE=sync NUMBA_ENABLE_CUDASIM=${NUMBA_ENABLE_CUDASIM:-0}
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
TT=${1:-240}; shift || true
SEL=${*:-tests/cuda_sim tests/test_cuda_gpu.py}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
command -v ptxas >/dev/null && export JITC_PTXAS=$(command -v ptxas)
[ -z "${JITC_PTXAS:-}" ] && [ -x /usr/local/cuda/bin/ptxas ] && export JITC_PTXAS=/usr/local/cuda/bin/ptxas
for d in fusion backends aot; do [ -e jitc/$d ] || ln -s ../$d jitc/$d; done
{
  date; python3 --version; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -m pip list 2>/dev/null | grep -i -E "^(numba|numba-cuda|numpy|cupy|llvmlite|jax|scipy|cuda-|nvidia-cuda-nvcc|hypothesis|pytest-xdist) "
  python3 -c "import numpy; print('numpy', numpy.__version__)"; echo "JITC_PTXAS=${JITC_PTXAS:-}"
  python3 -c "import jitc; print('backends', jitc.backends.available())"
  python3 -c "from jitc.backends.cuda import toolchain as t; print(t.gpu_status(), t.status())"
} 2>&1 | tee "$OUT/env.log"
echo "== bench_gpu"; timeout 200 python3 benchmarks/bench_gpu.py 2>&1 | tee "$OUT/bench.log"
echo "== tests ($SEL)"
XDIST=$(python3 -c "import xdist" 2>/dev/null && echo "-n $(nproc)")
JITC_FULL_SURFACE=1 timeout "$TT" python3 -m pytest -q -p no:cacheprovider $XDIST --tb=short \
  -rfE --durations=15 --junitxml="$OUT/junit.xml" $SEL > "$OUT/tests.log" 2>&1
echo "pytest rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -60
