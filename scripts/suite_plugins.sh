#!/usr/bin/env bash
# The suite plugins (task plugins adapting public suites: plugins/<name> with a
# scripts/ci.sh) each need their suite's package, whose pins the main venv does not take
# (bfcl-eval pins numpy 1.26.4, networkx 3.3, ...). So each gets its own venv with agentrft,
# the plugin and the suite, built by scripts/setup.sh and cached outside the clone
# (${AGENTRFT_SUITE_VENVS:-~/.cache/agentrft}/venv-<name>; reused while its stamp matches),
# and its tests run there. Prints the time of each.
#
#   bash scripts/suite_plugins.sh            # every suite plugin
#   bash scripts/suite_plugins.sh bfcl       # one (the directory name under plugins/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${AGENTRFT_SUITE_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrft}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for ci in plugins/*/scripts/ci.sh; do
    [ -f "$ci" ] || continue
    d=${ci%/scripts/ci.sh}
    names+=("${d#plugins/}")
  done
fi
rc=0
for name in "${names[@]}"; do
  [ -f "plugins/$name/scripts/ci.sh" ] || { echo "suite_plugins: no plugins/$name/scripts/ci.sh (names: the directories under plugins/ that have one)"; exit 2; }
  t0=$(date +%s)
  set +e
  AGENTRFT_SUITE_VENV="$ROOT/venv-$name" bash "plugins/$name/scripts/ci.sh"
  r=$?
  set -e
  echo "[suite_plugins] $name: $(( $(date +%s) - t0 )) s (exit $r)"
  [ $r -eq 0 ] || rc=$r
done
exit $rc
