"""`agentrft play` says what is running, and for how long, once a tool or reward runs past
a few seconds, also when an `async def` tool blocks the event loop itself (the line is drawn
by its own thread); a quick episode prints no such line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from agentrft import (
    Policy,
    ScriptedPolicy,
    hookimpl,
)
from agentrft.cli import still_running
from agentrft.cli.app import create_app
from agentrft.plugins import load_plugins, use_plugins

from .test_blocked_loop import LookupTask, script


class SlowTask(LookupTask):
    """test_blocked_loop's lookup task (its tool awaits, or blocks the loop, as the row
    says), made playable from the CLI: rows of its own and a scripted expert."""

    name: ClassVar[str] = "slow_lookup"

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        rows = [{"await_s": 0.0}, {"await_s": 1.6}, {"block_s": 1.6}]
        return [{"prompt": json.dumps(r)} for r in rows]

    def expert(self) -> Policy:
        return ScriptedPolicy(script)


class Plugin:
    @hookimpl
    def agentrft_tasks(self) -> list[type]:
        return [SlowTask]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(still_running, "AFTER_S", 0.5)
    monkeypatch.setattr(still_running, "TICK_S", 0.1)
    with use_plugins(load_plugins(extra=[Plugin()], entry_points=False)):
        yield create_app(plugins=False)


def play(cli: Any, row: int, tmp_path: Path) -> Any:
    return CliRunner().invoke(
        cli,
        ["play", "--task", "slow_lookup", "--row", str(row)],
        env={"COLUMNS": "200", "NO_COLOR": "1"},
    )


@pytest.mark.parametrize(("row", "what"), [(1, "awaits"), (2, "blocks the loop")])
def test_a_slow_tool_gets_one_line_saying_what_runs(
    cli: Any, row: int, what: str, tmp_path: Path
) -> None:
    result = play(cli, row, tmp_path)
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("still running:")]
    assert len(lines) == 1, (what, result.output)  # once, not once per tick
    assert lines[0].startswith("still running: tool 'lookup', ")
    assert "s so far (the episode's limit is 30 s)" in lines[0]


def test_a_quick_episode_prints_no_status_line(cli: Any, tmp_path: Path) -> None:
    result = play(cli, 0, tmp_path)
    assert result.exit_code == 0, result.output
    assert "still running" not in result.output
