#!/usr/bin/env bash
# agentrft against AWS's own SageMaker SDK: build the SDK's venv if needed
# (scripts/sagemaker_sdk_env.sh, cached by its stamp), then run the conformance tests
# (tests/sagemaker, marker `sdk`) from the project venv. Prints the time of each phase.
#
#   bash scripts/sagemaker_sdk_conformance.sh [extra pytest args]
#
# Env: AGENTRFT_VENV (project venv, default .venv), SAGEMAKER_SDK_VENV (default
# .venv-sagemaker-sdk).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${AGENTRFT_VENV:-.venv}
SDK_VENV=${SAGEMAKER_SDK_VENV:-.venv-sagemaker-sdk}
t0=$(date +%s)

bash scripts/sagemaker_sdk_env.sh "$SDK_VENV"
t1=$(date +%s)

case "$SDK_VENV" in /*) ;; *) SDK_VENV="$PWD/$SDK_VENV" ;; esac
export AGENTRFT_SAGEMAKER_SDK_PYTHON="$SDK_VENV/bin/python"
export AGENTRFT_REQUIRE_SAGEMAKER_SDK=1  # the venv was just built: a skip would be a failure
set +e
"$VENV/bin/python" -m pytest -m sdk tests/sagemaker -q -rs -p no:cacheprovider --durations=3 "$@"
rc=$?
set -e
t2=$(date +%s)
echo "[sagemaker_sdk_conformance] SDK venv $((t1 - t0)) s, tests $((t2 - t1)) s (pytest exit $rc)"
exit $rc
