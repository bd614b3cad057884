"""pass@k against hand-computed values, EvalReport aggregation, and `evaluate` end to end with
scripted policies on the tiny find_number task."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from agentrft import Message, ScriptedPolicy, call
from agentrft.eval_table import reports_table
from agentrft.evaluation import EvalReport, evaluate, is_solved, pass_at_k
from agentrft.messages import assistant
from agentrft.reward import RewardResult
from agentrft.testing import FindNumberTask, find_number_expert
from agentrft.trajectory import Trajectory, Turn


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # pass@1 is the plain success rate
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # n - c < k: every draw of 4 holds a success
        (10, 0, 5, 0.0),
        (10, 10, 1, 1.0),
        (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
        (200, 1, 100, 0.5),  # 1 - C(199,100)/C(200,100) = 1 - 100/200
    ],
)
def test_pass_at_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_the_binomial_form_for_large_n() -> None:
    n, c, k = 300, 17, 32
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 4, 1), (3, 1, 0)])
def test_pass_at_k_rejects_impossible_inputs(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def _traj(row: int, solved: bool, total: float, turns: int, failures: list[str]) -> Trajectory:
    t = Trajectory(id=f"{row}-{total}", task="t", prompt=f"p{row}", metadata={"row": row})
    for i in range(turns):
        msg = assistant(tool_calls=[call("guess", {"number": i}, id=f"c{i}")])
        t.turns.append(Turn(index=i, assistant=msg, completion_tokens=10))
    t.tool_calls = turns
    for kind in failures:
        t.fail(kind)
    t.reward = RewardResult(total=total, outcome="win" if solved else "loss", solved=solved)
    t.stop_reason = "done"
    return t


def test_report_aggregates_rows_samples_and_failures() -> None:
    trajs = [
        _traj(0, True, 1.0, 2, []),
        _traj(0, False, 0.0, 3, ["unknown_tool", "unknown_tool"]),
        _traj(0, False, 0.2, 3, ["max_turns"]),
        _traj(1, True, 1.0, 2, []),
        _traj(1, True, 0.8, 3, ["unknown_tool"]),
        _traj(1, False, 0.0, 3, []),
    ]
    r = EvalReport.from_trajectories(
        trajs, task="t", policy="p", temperature=0.7, pass_k_values=[1, 2, 3, 8]
    )
    assert (r.rows, r.samples_per_row, r.episodes, r.solved) == (2, 3, 6, 3)
    assert r.solve_rate == pytest.approx(0.5)
    # Row 0: n=3, c=1 -> pass@2 = 1 - C(2,2)/C(3,2) = 2/3; row 1: c=2 -> 1.
    assert r.pass_at_k == pytest.approx({1: (1 / 3 + 2 / 3) / 2, 2: (2 / 3 + 1) / 2, 3: 1.0})
    assert 8 not in r.pass_at_k
    assert r.mean_reward == pytest.approx(0.5)
    assert r.turn_histogram == {2: 2, 3: 4}
    assert r.failure_kinds == {"unknown_tool": 2, "max_turns": 1}  # episodes, not occurrences
    assert r.outcomes == {"loss": 3, "win": 3}
    assert r.tool_calls.total == 16 and r.tool_calls.max == 3
    assert r.tool_calls.by_tool == {"guess": 16}
    assert r.completion_tokens == 160 and r.prompt_tokens is None

    data = r.to_dict()
    assert json.loads(json.dumps(data))["pass_at_k"]["2"] == pytest.approx(5 / 6)
    assert isinstance(r.render(), Table)
    out = Console(width=150, record=True)
    out.print(r.render())
    out.print(reports_table([r, r]))
    text = out.export_text()
    assert "pass@2" in text and "83.3%" in text and "unknown_tool: 2" in text


def test_success_threshold_replaces_the_solved_flag() -> None:
    t = _traj(0, False, 0.9, 1, [])
    assert not is_solved(t)
    assert is_solved(t, success_threshold=0.5)
    assert not is_solved(_traj(0, True, 0.4, 1, []), success_threshold=0.5)
    r = EvalReport.from_trajectories(
        [t], task="t", policy="p", temperature=1, success_threshold=0.5
    )
    assert r.solved == 1 and r.success_threshold == 0.5


def _alternating_policy() -> ScriptedPolicy:
    """Solves every other episode (by episode start order) and gives up on the rest."""
    started = {"n": 0}
    giving_up: set[int] = set()

    def script(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        key = id(messages)
        if len(messages) == 2:  # system + user: a new episode
            if started["n"] % 2 == 1:
                giving_up.add(key)
            started["n"] += 1
        if key in giving_up:
            return call("give_up")
        return find_number_expert(messages, tools)

    return ScriptedPolicy(script, name="alternating")


async def test_evaluate_reports_per_temperature() -> None:
    task = FindNumberTask()
    prompts = [r["prompt"] for r in task.make_dataset("validation", 2, seed=1)]
    seen: list[Trajectory] = []
    reports, trajs = await evaluate(
        task,
        prompts,
        _alternating_policy(),
        temperatures=[0.5, 1.0],
        samples_per_row=2,
        concurrency=1,  # the alternation follows episode order
        pass_k_values=[1, 2],
        on_episode=seen.append,
    )
    assert len(trajs) == len(seen) == 8
    assert [r.temperature for r in reports] == [0.5, 1.0]
    for r in reports:
        assert (r.rows, r.samples_per_row, r.episodes, r.solved) == (2, 2, 4, 2)
        assert r.pass_at_k == pytest.approx({1: 0.5, 2: 1.0})
        assert r.outcomes == {"solved": 2, "no_guess": 2}
        assert r.policy == "alternating"
    assert [t.metadata["row"] for t in trajs[:4]] == [0, 0, 1, 1]
    assert [t.metadata["sample"] for t in trajs[:4]] == [0, 1, 0, 1]
    assert {t.sampling["temperature"] for t in trajs[4:]} == {1.0}


async def test_evaluate_with_a_swapped_reward_and_threshold() -> None:
    task = FindNumberTask()
    prompts = [r["prompt"] for r in task.make_dataset("validation", 3, seed=2)]
    reports, _ = await evaluate(
        task,
        prompts,
        task.expert(),
        reward_fn=lambda env, traj: RewardResult(total=len(env.guesses), outcome="custom"),
        success_threshold=100.0,
    )
    (r,) = reports
    assert r.outcomes == {"custom": 3}
    assert r.solved == 0  # nobody needs 100 guesses
    assert r.mean_reward >= 1


async def test_evaluate_rejects_empty_input() -> None:
    with pytest.raises(ValueError, match="at least one prompt"):
        await evaluate(FindNumberTask(), [], FindNumberTask().expert())


def test_invented_tool_names_are_counted_together() -> None:
    """A model can invent any number of tool names; the report counts the task's tools by
    name and every other name under one key, so it cannot grow without bound."""
    t = _traj(0, False, 0.0, 2, ["unknown_tool"])
    t.tools = [{"type": "function", "function": {"name": "guess", "parameters": {}}}]
    t.turns[1].assistant.tool_calls = [call(f"invented_{i}", {}, id=f"x{i}") for i in range(50)]
    r = EvalReport.from_trajectories([t], task="t", policy="p", temperature=1.0)
    assert r.tool_calls.by_tool == {"(not a tool)": 50, "guess": 1}


def test_the_comparison_table_fits_80_columns_without_cutting_names() -> None:
    kinds = {"no_tool_call": 40, "malformed_tool_json": 12, "invalid_arguments": 3}
    r = EvalReport(
        task="wordle", policy="Qwen/Qwen3-1.7B-trained-adapter", temperature=1.0, rows=32,
        samples_per_row=4, episodes=128, solved=3, solve_rate=0.023,
        pass_at_k={1: 0.02, 2: 0.04, 4: 0.08}, foothold=0.4, failure_kinds=kinds,
    )  # fmt: skip
    reports = [r.model_copy(update={"policy": p}) for p in ("before", "after SFT")] + [r]
    out = Console(width=80, record=True)
    out.print(reports_table(reports))
    out.print(r.render())
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # nothing cut short
    for kind in kinds:
        assert text.count(kind) == 4, kind  # three columns and the single report
    assert "trained-adapter" in text.replace("\n", "").replace("│", "").replace(" ", "")
