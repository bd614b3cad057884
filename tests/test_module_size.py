"""No module of the package grows past 500 lines: a file that long holds more than one
thing a reader looks for (style.md: small modules named for what they are)."""

from __future__ import annotations

from pathlib import Path

import agentrft

MAX_LINES = 500


def test_no_module_over_500_lines() -> None:
    root = Path(agentrft.__file__).parent
    sizes = {p.relative_to(root): len(p.read_text().splitlines()) for p in root.rglob("*.py")}
    assert len(sizes) > 100  # the package itself, not an empty install
    long = {str(p): n for p, n in sorted(sizes.items()) if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
