"""Several tasks in one run: the `tasks` config, mixed rows in proportion, routing by the
task named inside the prompt string, per-task limits, metrics, evaluation and reward check."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from agentrft import ScriptedPolicy
from agentrft.cli.app import create_app
from agentrft.config import ConfigError
from agentrft.config_model import load_config
from agentrft.evaluation import evaluate, reports_by_task
from agentrft.mixture import (
    MixtureTask,
    RoutingPolicy,
    TaskMixture,
    mixture_counts,
    parse_task_spec,
    per_task_metrics,
    route_prompt,
    wrap_prompt,
)
from agentrft.plugins import PluginError, load_plugins, resolve_task, use_plugins
from agentrft.policies.scripted import call
from agentrft.rollout import run_episode
from agentrft.testing.tasks import CounterTask, FindNumberTask, counter_script

from .conftest import TinyPlugin


def mix(number: float = 0.5, counter: float = 0.5) -> MixtureTask:
    mixture = TaskMixture.of({"find_number": number, "counter": counter})
    return MixtureTask({"find_number": FindNumberTask(), "counter": CounterTask()}, mixture)


@pytest.fixture
def tiny_plugins() -> Any:
    with use_plugins(load_plugins(extra=[TinyPlugin()], entry_points=False)) as plugins:
        yield plugins


# -- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ({"wordle": 0.5, "expense_report": -0.5}, "tasks.expense_report: the share must be a finite number above 0, got -0.5"),
        ({"wordle": 0}, "tasks.wordle: the share must be a finite number above 0, got 0.0"),
        ({}, "name at least one task"),
        ({"wordle": "half"}, "tasks.wordle: Input should be a valid number"),
    ],
)  # fmt: skip
def test_bad_shares_are_one_line_naming_the_key(tasks: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(values={"tasks": tasks})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_task_and_tasks_together_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"set either `task` .* or `tasks`, not both"):
        load_config(values={"task": "wordle", "tasks": {"wordle": 1.0}})


def test_inf_share_is_refused_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("tasks: {find_number: .inf, counter: 1}\n")
    with pytest.raises(ConfigError, match=r"tasks\.find_number"):
        load_config(path)


def test_unknown_task_names_the_installed_ones(tiny_plugins: Any) -> None:
    with pytest.raises(PluginError, match=r"task 'find_numbr' not found; installed: .*find_number"):
        resolve_task(tasks={"find_numbr": 0.5, "counter": 0.5})
    task = resolve_task(tasks={"find_number": 3, "counter": 1})
    assert isinstance(task, MixtureTask) and task.name == "find_number+counter"
    assert task.mixture.ratios() == {"find_number": 0.75, "counter": 0.25}
    # One name stays the plain task: single-task runs are untouched.
    assert type(resolve_task("find_number")) is FindNumberTask
    assert type(resolve_task(tasks={"counter": 1})) is CounterTask


def test_task_specs() -> None:
    assert parse_task_spec("wordle") is None
    assert parse_task_spec("a,b") == TaskMixture((("a", 1.0), ("b", 1.0)))
    assert parse_task_spec("a=0.7, b=0.3").ratios() == pytest.approx({"a": 0.7, "b": 0.3})
    for bad, why in [("a=x,b", "'x' is not a number"), ("a,a", "named twice"), ("a,,b", "empty"),
                     ("a=-1,b", "above 0")]:  # fmt: skip
        with pytest.raises(ValueError, match=why):
            parse_task_spec(bad)


# -- rows -----------------------------------------------------------------------------------


def test_counts_follow_the_shares_and_sum_to_n() -> None:
    assert mixture_counts({"a": 0.5, "b": 0.5}, 7) == {"a": 4, "b": 3}
    assert mixture_counts({"a": 0.75, "b": 0.25}, 8) == {"a": 6, "b": 2}
    assert mixture_counts({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, 10) == {"a": 4, "b": 3, "c": 3}
    for n in range(0, 40):
        counts = mixture_counts({"a": 0.2, "b": 0.3, "c": 0.5}, n)
        assert sum(counts.values()) == n
        assert all(abs(counts[k] - r * n) < 1 for k, r in {"a": 0.2, "b": 0.3, "c": 0.5}.items())


def test_a_mixed_dataset_has_the_right_proportions_and_routes_back() -> None:
    task = mix(number=3, counter=1)
    rows = task.make_dataset("train", 20, seed=5)
    names = [route_prompt(r["prompt"])[0] for r in rows]
    assert Counter(names) == {"find_number": 15, "counter": 5}
    assert names != sorted(names)  # shuffled together, so a step's batch mixes tasks
    assert rows == task.make_dataset("train", 20, seed=5)  # seeded
    # The inner prompt is the task's own row, untouched.
    own = FindNumberTask().make_dataset("train", 15, seed=5)
    inner = {route_prompt(r["prompt"])[1] for r in rows if "find_number" in r["prompt"][:40]}
    assert inner == {r["prompt"] for r in own}
    parsed = task.parse(rows[0]["prompt"])
    assert parsed.task == names[0]


def test_route_prompt_refuses_a_row_without_its_task() -> None:
    for prompt in ['{"secret": 3, "low": 1, "high": 9}', "not json", '{"agentrft_task": 3}']:
        with pytest.raises(ValueError, match="multi-task row's prompt must be a JSON object"):
            route_prompt(prompt)


# -- the agent loop -------------------------------------------------------------------------


def counter_row(target: int) -> str:
    return wrap_prompt("counter", json.dumps({"target": target}))


def number_row(secret: int) -> str:
    return wrap_prompt("find_number", json.dumps({"secret": secret, "low": 1, "high": 8}))


def test_each_row_plays_its_own_task_under_its_own_limits() -> None:
    task = mix()
    policy = ScriptedPolicy(lambda messages, tools: call(tools[0]["function"]["name"], {}))
    number = asyncio.run(run_episode(task, number_row(5), FindNumberTask().expert()))
    assert number.task == "find_number" and number.solved
    names = [t["function"]["name"] for t in number.tools]
    assert "guess" in names and "increment" not in names
    # find_number allows 12 turns, counter 64: a row gets its own task's limit, not the
    # mixture's widest (64), unless the config sets one.
    assert task.limits.max_turns == 64
    bad = asyncio.run(run_episode(task, number_row(5), policy, limits=task.limits))
    assert bad.task == "find_number" and len(bad.turns) == 12
    capped = task.limits.model_copy(update={"max_turns": 3})
    assert len(asyncio.run(run_episode(task, number_row(5), policy, limits=capped)).turns) == 3


def test_a_row_naming_an_unknown_task_ends_with_the_lowest_reward() -> None:
    task = mix()
    policy = FindNumberTask().expert()
    traj = asyncio.run(run_episode(task, wrap_prompt("wordle", "{}"), policy))
    assert traj.failure_kinds == ["bad_input"] and not traj.turns
    assert "names task 'wordle', which this run does not play" in traj.failures[0].detail
    assert traj.reward == task.lowest_reward()
    assert traj.reward.total == min(FindNumberTask().lowest_reward().total,
                                    CounterTask().lowest_reward().total)  # fmt: skip


def test_evaluate_reports_the_mix_then_each_task() -> None:
    task = mix()
    prompts = [number_row(3), number_row(6), counter_row(2)]
    reports, trajs = asyncio.run(
        evaluate(task, prompts, FindNumberTask().expert(), temperatures=[0.5, 1.0])
    )
    assert [(r.task, r.temperature, r.episodes) for r in reports] == [
        ("find_number+counter", 0.5, 3), ("find_number", 0.5, 2), ("counter", 0.5, 1),
        ("find_number+counter", 1.0, 3), ("find_number", 1.0, 2), ("counter", 1.0, 1),
    ]  # fmt: skip
    by_task = reports_by_task(reports)
    assert [[r.temperature for r in g] for g in by_task] == [[0.5, 1.0]] * 3
    number = by_task[1][0]
    assert number.solve_rate == 1.0  # the find_number expert solves its rows
    assert by_task[2][0].solve_rate == 0.0  # ... and cannot play counter's tools
    metrics = per_task_metrics(trajs)
    assert metrics["solve_rate/find_number"] == 1.0 and metrics["rollouts/counter"] == 2.0
    assert metrics["reward/counter/mean"] == by_task[2][0].mean_reward


# -- the CLI --------------------------------------------------------------------------------


def test_cli_reward_check_and_dataset_make_cover_every_task(
    tiny_plugins: Any, tmp_path: Any
) -> None:
    app = create_app()
    runner = CliRunner()
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    checked = runner.invoke(app, ["reward", "check", "--task", "find_number,counter"], env=env)
    assert checked.exit_code == 0, checked.output
    assert "find_number: ok: reward order holds" in checked.output
    assert "counter: ok: reward order holds" in checked.output
    rows = tmp_path / "mix.jsonl"
    made = runner.invoke(app, ["dataset", "make", "--task", "find_number=3,counter=1",
                               "--n", "8", "-o", str(rows)], env=env)  # fmt: skip
    assert made.exit_code == 0, made.output
    lines = [json.loads(x)["prompt"] for x in rows.read_text().splitlines()]
    assert Counter(route_prompt(p)[0] for p in lines) == {"find_number": 6, "counter": 2}
    ok = runner.invoke(
        app, ["dataset", "check", str(rows), "--task", "find_number,counter"], env=env
    )
    assert ok.exit_code == 0 and "8 rows" in ok.output, ok.output
    one = runner.invoke(app, ["dataset", "check", str(rows), "--task", "find_number"], env=env)
    assert one.exit_code == 1 and "row 1" in one.output
    reward = runner.invoke(app, ["reward", "check", "--task", "find_number,counter",
                                 "--reward", "fewest_guesses"], env=env)  # fmt: skip
    assert reward.exit_code == 1 and "drop --reward" in reward.output


class CountingCounter(CounterTask):
    """counter with an expert (it increments until the target)."""

    def expert(self) -> ScriptedPolicy:
        return ScriptedPolicy(counter_script)


def test_the_mixture_expert_plays_each_row_with_its_own_tasks_expert() -> None:
    task = MixtureTask({"find_number": FindNumberTask(), "counter": CountingCounter()},
                       TaskMixture.of({"find_number": 1, "counter": 1}))  # fmt: skip
    assert mix().expert() is None  # the plain counter task has no expert
    expert = task.expert()
    assert isinstance(expert, RoutingPolicy)
    prompts = [number_row(3), counter_row(3), number_row(7), counter_row(5)]
    reports, trajs = asyncio.run(evaluate(task, prompts, expert, concurrency=4))
    assert [t.task for t in trajs] == ["find_number", "counter", "find_number", "counter"]
    assert [(r.task, r.solve_rate) for r in reports] == [
        ("find_number+counter", 1.0), ("find_number", 1.0), ("counter", 1.0),
    ]  # fmt: skip


def test_a_routing_policy_without_the_episodes_task_fails_that_episode_only() -> None:
    only_numbers = RoutingPolicy({"find_number": FindNumberTask().expert()})
    traj = asyncio.run(run_episode(CounterTask(), json.dumps({"target": 2}), only_numbers))
    assert traj.failure_kinds == ["policy_error"] and traj.reward is not None
    assert "this policy plays find_number" in traj.failures[0].detail


def test_config_show_of_a_mixture(tiny_plugins: Any, tmp_path: Any) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("tasks: {find_number: 1, counter: 1}\nlimits: {max_turns: 5}\n")
    shown = CliRunner().invoke(create_app(), ["config", "show", "-c", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "tasks:\n  find_number: 1.0\n  counter: 1.0\n" in shown.output
    # Each task keeps its own limits: only what the config sets is shown.
    assert "max_turns: 5\n  max_tool_calls: null" in shown.output


def test_a_task_that_scores_groups_keeps_doing_so_inside_a_mixture() -> None:
    from agentrft.group_scoring import GroupScorer, run_grouped_episodes
    from agentrft.reward import RewardResult

    class RankedNumbers(FindNumberTask):
        """find_number whose group scorer gives each member its rank in the group."""

        seen: ClassVar[list[int]] = []

        async def score_group(self, group: Any) -> list[RewardResult]:
            self.seen.append(len(group))
            return [RewardResult(total=float(i), outcome="ranked") for i in range(len(group))]

    assert not isinstance(mix(), GroupScorer)  # no member scores groups: nothing changes
    task = MixtureTask({"find_number": RankedNumbers(), "counter": CountingCounter()},
                       TaskMixture.of({"find_number": 1, "counter": 1}))  # fmt: skip
    assert isinstance(task, GroupScorer)
    prompts = [number_row(3)] * 3 + [counter_row(2)] * 3
    trajs = asyncio.run(run_grouped_episodes(task, prompts, task.expert(), group_size=3))
    assert RankedNumbers.seen == [3]  # once, for find_number's group only
    assert [t.reward.total for t in trajs[:3]] == [0.0, 1.0, 2.0]
    assert all(t.reward.outcome == "exact" for t in trajs[3:])  # counter's own reward


def test_a_bad_share_in_a_file_is_one_line_and_exit_1(tiny_plugins: Any, tmp_path: Any) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("tasks: {find_number: 0.5, counter: -0.5}\n")
    env = {"COLUMNS": "300", "NO_COLOR": "1"}
    result = CliRunner().invoke(create_app(), ["config", "show", "-c", str(path)], env=env)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: {path}: tasks.counter: the share must be a finite number above 0, got -0.5; "
        "drop the task to leave it out"
    )
