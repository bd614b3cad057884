#!/usr/bin/env bash
# Run the tests whose results depend on floating-point summation order (the local engine's
# numeric identities, sampler, learning, resume and full-loop tests) on other CPU kernel sets
# and thread counts than the main run, so that no tolerance is tuned to one machine:
#   ATEN_CPU_CAPABILITY=default  plain C++ kernels (no SIMD), 2 torch threads
#   ATEN_CPU_CAPABILITY=avx2     the AVX2 kernels (what an AVX2-only CPU runs), 1 thread
#   (unset)                      the best this CPU has (AVX-512 where present), 2 threads
# The main suite (scripts/test.sh) runs the native kernels with 1 thread. A capability this
# CPU lacks falls back to the best it has, so the script runs anywhere.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${AGENTRFT_VENV:-.venv}
# tests/local/test_multiturn_learning.py is not here: it has no tolerance to tune, and under
# other kernels it is one more draw of a stochastic run (its docstring lists the kernels and
# seeds measured); the main suite runs it once.
NUMERIC_TESTS=(
  tests/local/test_loss.py tests/local/test_hf_sampler.py tests/local/test_learning.py
  tests/local/test_resume.py tests/local/test_full_loop.py tests/local/test_health.py
)
run() {
  echo "numeric matrix: ATEN_CPU_CAPABILITY=${1:-native} torch threads=$2"
  if [ -n "$1" ]; then export ATEN_CPU_CAPABILITY=$1; else unset ATEN_CPU_CAPABILITY; fi
  AGENTRFT_TEST_TORCH_THREADS=$2 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    "${NUMERIC_TESTS[@]}" "${@:3}"
}
run default 2 "$@"
run avx2 1 "$@"
run "" 2 "$@"
