#!/usr/bin/env bash
# The local engine on a CUDA GPU, as one prepared script that ends within 10 minutes:
# builds the tiny model there, runs the GPU-marked tests (bf16 base + fp32 LoRA; a bf16 GRPO
# run that must learn; sampler vs trainer logprobs in bf16), bench/grpo_step.py and
# bench/async_steps.py (steps per minute at max_steps_off_policy 0, 1, 2) on the
# device. Made for a GPU machine with no network whose own python3 already has torch,
# transformers, peft, tokenizers, pytest, pluggy, typer, rich and pyyaml (as the lent
# machines here have); the few pure-Python packages it lacks travel as wheels.
#
#   bash scripts/gpu_check.sh prepare   # here, with network: wheels into .whl/ (git-ignored)
#   bash scripts/gpu_check.sh run       # there, from the repo root, with .whl/ copied along
#
# `run` writes its log to $OUT/gpu_check.log when OUT is set, and exits non-zero if a test
# fails. On a machine with a full agentrft install (pip install -e '.[local,dev]') `run`
# works the same without .whl/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# What the import of agentrft's local engine and its GPU tests need beyond such an image.
WHEELS=(pydantic pydantic-core annotated-types typing-inspection pytest-asyncio)
# The device's Python, for the wheels' tags (manylinux x86-64).
DEVICE_PY=${DEVICE_PY:-3.12}

prepare() {
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
  mkdir -p .whl
  local platforms=()
  for n in 17 27 28 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
  "${PY}" -m pip download -q --no-deps --only-binary=:all: --python-version "$DEVICE_PY" \
    --implementation cp "${platforms[@]}" --platform manylinux2014_x86_64 -d .whl \
    "${WHEELS[@]}"
  ls -1 .whl
}

run() {
  local log=${OUT:-/tmp}/gpu_check.log
  exec > >(tee "$log") 2>&1
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/agentrft-site .whl/*.whl
    export PYTHONPATH=/tmp/agentrft-site
  fi
  # agentrft from this checkout, without installing it (the GPU tests call the engine
  # directly, so no entry point is needed).
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  "$PY" - <<'EOF'
import torch, transformers, peft
print(f"torch {torch.__version__} (cuda {torch.version.cuda}), transformers "
      f"{transformers.__version__}, peft {peft.__version__}; device: "
      f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'NO CUDA'}")
from agentrft.backends.local.models.tiny_model import ensure_tiny_model
print("tiny model:", ensure_tiny_model("1m"))
EOF
  local status=0
  timeout 420 "$PY" -m pytest -q -p no:cacheprovider -m gpu -rs tests/local || status=$?
  timeout 120 "$PY" bench/grpo_step.py --device cuda --no-trl --steps 5 || status=$?
  # Rollouts ahead of the trainer (max_steps_off_policy 0, 1, 2), with a slow reply in ten.
  timeout 150 "$PY" bench/async_steps.py --steps 5 --slow-s 2 --json "${OUT:-/tmp}/async_steps.json" \
    || status=$?
  echo "gpu_check: exit $status"
  return "$status"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bash scripts/gpu_check.sh prepare|run" >&2; exit 2 ;;
esac
