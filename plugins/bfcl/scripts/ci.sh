#!/usr/bin/env bash
# Build (or reuse) the bfcl plugin's own venv and run its tests there: bfcl-eval's pins
# (numpy 1.26.4, networkx 3.3, ...) do not fit the main venv. Run by
# `bash scripts/suite_plugins.sh bfcl`, which keeps the venv in ~/.cache/agentrft/venv-bfcl.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${AGENTRFT_SUITE_VENV:-.venv-bfcl}
AGENTRFT_VENV="$VENV" AGENTRFT_PLUGINS="plugins/bfcl" AGENTRFT_EXTRAS=local,dev bash scripts/setup.sh
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider plugins/bfcl/tests "$@"
