#!/usr/bin/env bash
# Build a suite plugin's AgentCore code bundle for Linux ARM64 (the real one, sizes printed)
# and for this machine, then start the x86 bundle's main.py with the bare CPython 3.11 (no
# site-packages, only the bundle on PYTHONPATH) and play each task's expert through the
# runtime's HTTP contract against a loopback job runtime; the rewards must equal the same
# rows played in the plugin's venv. Downloads wheels (pip's cache serves reruns); no AWS.
#
#   bash scripts/bundle_check.sh bfcl                 # venv ~/.cache/agentrft/venv-bfcl
#   bash scripts/bundle_check.sh tau2 --rows 2        # more rows per task
#   AGENTRFT_BUNDLE_VENV=.venv bash scripts/bundle_check.sh wordle   # another venv
#   AGENTRFT_BUNDLE_VENV=.venv bash scripts/bundle_check.sh expense_report --tasks expense_report \
#       --reward expense_report_strict   # the bundle serves a reward plugin's reward
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bash scripts/bundle_check.sh PLUGIN [--rows N] [--tasks a,b] [--skip-arm64]}
shift
ROOT=${AGENTRFT_SUITE_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrft}
venv=${AGENTRFT_BUNDLE_VENV:-$ROOT/venv-$name}
[ -x "$venv/bin/python" ] || { echo "bundle_check: no venv at $venv (bash scripts/suite_plugins.sh $name builds it)"; exit 2; }
dist=$(sed -n 's/^name = "\(.*\)"/\1/p' "plugins/$name/pyproject.toml" | head -1)
work=${AGENTRFT_BUNDLE_WORKDIR:-${TMPDIR:-/tmp}/agentrft-bundle-check/$name}
t0=$(date +%s)
set +e
"$venv/bin/python" scripts/bundle_check.py "$dist" --workdir "$work" "$@"
rc=$?
set -e
echo "[bundle_check] $name: $(( $(date +%s) - t0 )) s (exit $rc; bundles and server.log in $work)"
exit $rc
