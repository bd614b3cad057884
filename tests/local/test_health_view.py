"""What a person reads during training: each health warning once when it starts (and once
when it clears), a summary at the end, step lines whole in a log file, and a progress bar
with the time left on a terminal."""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from agentrft.backends.local.backend import train_async
from agentrft.backends.local.run.view import LiveView, duration, eta

from .conftest import FruitGuess, tiny_config


def test_durations_and_the_estimate_read_like_a_clock():
    assert [duration(s) for s in (0, 42.4, 185, 3720)] == ["0s", "42s", "3m05s", "1h02m"]
    assert eta(30.0, 3, 17) == "2m50s"  # 10 s a step, 17 steps left
    assert eta(0.0, 0, 20) is None  # no step yet


def test_off_a_terminal_each_step_is_one_whole_line_with_the_time_left():
    out = io.StringIO()
    view = LiveView(Console(file=out, width=40), total_steps=3)
    metrics = {"reward_mean": -0.5, "solve_rate": 0.0, "rollout/turns/truncated_frac": 0.97}
    with view:
        view.step(1, metrics)
        view.note("a note much longer than the forty columns of this narrow console")
        view.step(3, metrics)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # nothing wrapped at 40 columns
    assert lines[0].startswith("step 1/3 · reward -0.500 · solved 0% · ")
    assert " · eta " in lines[0]
    assert "eta" not in lines[2]  # the last step has nothing left


def test_on_a_terminal_the_live_view_has_a_progress_bar_and_the_conditions():
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=True, color_system=None)
    view = LiveView(console, total_steps=4, title="GRPO · wordle")
    with view:
        view.step(1, {"reward_mean": -0.8, "solve_rate": 0.0})
        view.health(["truncation", "collapsed_shape"])
    text = out.getvalue()
    assert "GRPO · wordle · step 1/4" in text
    assert "1/4" in text and "eta " in text
    assert "health: truncation, collapsed_shape" in text


async def test_a_training_run_logs_each_warning_once_and_ends_with_a_summary(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    # A random model never closes its turn within 4 tokens and never writes a tool call:
    # truncation and text_tool_calls hold on every step.
    config = tiny_config(
        tmp_path,
        max_steps=3,
        group_size=2,
        global_batch_size=2,
        sampling_max_tokens=4,
        **{"local.tiny_model": "156k"},
    )
    out = io.StringIO()
    result = await train_async(FruitGuess(), config, console=Console(file=out, width=60))
    assert result.steps == 3
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for name in ("truncation", "text_tool_calls"):
        mine = [w for w in logged if f": {name}" in w]
        assert len(mine) == 1 and mine[0].startswith(f"step 1: {name}: "), logged
    assert all(m["health_warnings"] >= 2 for m in result.history)  # the metric is per step
    text = out.getvalue()
    assert "warning" not in text  # the console does not repeat the log
    assert "health over steps 1-3: 4 conditions" in text
    assert "truncation" in text and "steps 1-3 (3 steps; held at the end)" in text
    steps = [line for line in text.splitlines() if line.startswith("step ")]
    assert [s.split(" · ")[0] for s in steps] == ["step 1/3", "step 2/3", "step 3/3"]
    assert all(" · grad " in s for s in steps)  # whole lines at 60 columns


@pytest.mark.parametrize(("columns", "width"), [(None, 160), ("100", 100)])
def test_the_cli_console_off_a_terminal_neither_wraps_lines_nor_folds_tables_at_80(
    monkeypatch, capsys, columns, width
):
    from rich.panel import Panel

    from agentrft.cli.common import console

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = console()
    assert not out.is_terminal and out.width == width
    line = "step 1/20 · " + "reward -0.808 · " * 20
    out.print(line)
    out.print(Panel("words " * 40))  # a panel's text wraps inside it, nothing is cut
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == line  # one line, as printed
    assert max(len(p) for p in printed[1:]) == width
    assert "".join(printed[1:]).count("words") == 40
