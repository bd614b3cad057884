#!/usr/bin/env bash
# Build (or reuse) the textarena plugin's own venv and run its tests there: textarena
# brings openai, nltk, chess and more that the main venv does not take. Run by
# `bash scripts/suite_plugins.sh textarena`, which keeps the venv in
# ~/.cache/agentrft/venv-textarena.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${AGENTRFT_SUITE_VENV:-.venv-textarena}
AGENTRFT_VENV="$VENV" AGENTRFT_PLUGINS="plugins/textarena" AGENTRFT_EXTRAS=local,dev bash scripts/setup.sh
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider plugins/textarena/tests "$@"
