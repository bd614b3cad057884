"""The judge example in docs/custom-rewards.md runs as written and prints what the page
says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "custom-rewards.md"


def test_the_runnable_judge_example_prints_what_the_page_shows():
    text = PAGE.read_text()
    block = re.search(
        r"<!-- runnable: judges .*?-->\n```python\n(.*?)```\n\nprints\n\n```\n(.*?)```", text, re.S
    )
    assert block is not None, "the runnable judges block or its output is missing"
    code, expected = block.groups()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == expected
