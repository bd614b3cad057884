#!/usr/bin/env bash
# The test command: set up .venv (idempotent), lint, then run the whole test suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k wordle -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${AGENTRFT_VENV:-.venv}
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check . >/dev/null || { "$VENV/bin/ruff" format --diff . | head -50; echo "ruff format: files need formatting (run: $VENV/bin/ruff format .)"; exit 1; }
"$VENV/bin/mypy"  # the core package (see [tool.mypy] in pyproject.toml)
exec "$VENV/bin/python" -m pytest -q "$@"
