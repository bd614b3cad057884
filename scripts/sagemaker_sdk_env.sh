#!/usr/bin/env bash
# Create an isolated virtual environment with AWS's own SageMaker SDK (`sagemaker-train`,
# which brings `sagemaker-core`) for the conformance tests in tests/sagemaker/ marked `sdk`:
# they drive the SDK's rollout handler, reward client, bearer-token signer and
# MultiTurnRLTrainer against the same loopback recorder and Stubber as agentrft, and diff
# what each sends. The SDK is never a dependency of agentrft: it adds dozens of packages
# and downgrades some of ours (rich, pyarrow, importlib_metadata), so it lives here.
#
#   scripts/sagemaker_sdk_env.sh [VENV_DIR]     (default: .venv-sagemaker-sdk, ignored by git)
#
# Env: SAGEMAKER_TRAIN_VERSION (default 1.27.0: the release with `sagemaker.train.rft`),
# PYTHON (interpreter to build the venv from).
# Idempotent: a venv whose stamp names the wanted version and that imports the SDK's
# rollout pieces and MultiTurnRLTrainer is left as it is (CI keeps it between runs).
# Telemetry: the SDK sends it by default; the tests' driver (tests/sagemaker/sdk_driver.py)
# opts out through the SDK's own config (TelemetryOptOut), refuses every non-loopback
# connection, and the tests fail if one was attempted.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${1:-.venv-sagemaker-sdk}"
VERSION="${SAGEMAKER_TRAIN_VERSION:-1.27.0}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.agentrft-sdk-stamp"
start=$(date +%s)

say() { printf '[sagemaker_sdk_env] %s\n' "$*"; }

probe() {
  # The SDK builds a boto3 client when MultiTurnRLTrainer is imported: it needs a region.
  env AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
    "$VENV/bin/python" - <<'PY'
import importlib.metadata as m
from sagemaker.train.rft import RolloutFeedbackClient, make_inference_headers, sagemaker_rft_handler  # noqa: F401
from sagemaker.train import MultiTurnRLTrainer  # noqa: F401
print(m.version("sagemaker-train"), m.version("sagemaker-core"))
PY
}

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "sagemaker-train==$VERSION" ]] \
  && probe >/dev/null 2>&1; then
  say "$VENV already has sagemaker-train $VERSION (nothing to do)"
  say "python: $VENV/bin/python"
  exit 0
fi

rm -f "$STAMP"
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating venv $VENV with $($PY --version 2>&1)"
  "$PY" -m venv "$VENV"
fi
say "installing sagemaker-train==$VERSION (and its sagemaker-core)"
# pip warns once per package about find-links folders this machine does not have: noise.
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "$VENV/bin/python" -m pip install --quiet --upgrade pip
quiet "$VENV/bin/python" -m pip install --quiet "sagemaker-train==$VERSION"

versions=$(probe)
printf 'sagemaker-train==%s\n' "$VERSION" >"$STAMP"
say "ok: sagemaker-train / sagemaker-core $versions"
say "python: $VENV/bin/python"
say "size: $(du -sh "$VENV" | cut -f1), $("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | wc -l) packages; took $(( $(date +%s) - start )) s"
