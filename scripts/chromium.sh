#!/usr/bin/env bash
# Install Debian's chromium (headless) when it is missing: the report page's tests
# (tests/local/test_report_page.py) render the page in it and read the DOM. Needs root and
# Debian's package archive; where it cannot install, it says so and exits 1 (the tests then
# skip with that reason unless AGENTRFT_REQUIRE_CHROMIUM=1 makes them fail).
#
#   bash scripts/chromium.sh
set -euo pipefail
say() { printf '[chromium] %s\n' "$*"; }
if command -v chromium >/dev/null 2>&1; then
  say "already installed: $(chromium --version 2>/dev/null | head -1)"
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  say "not installed, and this is not a root Debian shell: apt-get install chromium yourself"
  exit 1
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
say "installed $(chromium --version 2>/dev/null | head -1) in $(($(date +%s) - start)) s"
