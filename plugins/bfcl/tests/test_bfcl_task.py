"""The task as agentrft sees it: listing, rows and splits, the expert at the ceiling, the
reward order, and what the policy may see (no ground truth, no turn before its time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_bfcl import BfclMissParamTask, BfclMultiTurnTask, suite
from agentrft_bfcl.expert import expert_step
from agentrft_bfcl.task import truncated_expert, wrong_argument_policy
from bfcl_testing import TASKS, Recorder, row, task_for

from agentrft import (
    ScriptedPolicy,
    TaskInputError,
    call,
    check_reward_order,
    run_episode,
    run_episodes,
)

AGENTRFT = str(Path(sys.executable).parent / "agentrft")


def _ids(rows: list[dict]) -> list[str]:
    return [json.loads(r["prompt"])["id"] for r in rows]


def test_agentrft_tasks_lists_it() -> None:
    out = subprocess.run(
        [AGENTRFT, "tasks"], capture_output=True, text=True, env={"COLUMNS": "200", "PATH": ""}
    )
    assert out.returncode == 0, out.stderr
    assert "agentrft-bfcl" in out.stdout
    for t in TASKS:
        assert t.name in out.stdout


@pytest.mark.parametrize(
    ("task_class", "sizes"),
    [
        (TASKS[0], (166, 34, 200)),
        (TASKS[1], (160, 40, 200)),
        (TASKS[2], (160, 40, 200)),
        (TASKS[3], (169, 31, 200)),
    ],
)
def test_splits_are_deterministic_disjoint_and_cover_the_category(
    task_class: type[BfclMultiTurnTask], sizes: tuple[int, int, int]
) -> None:
    task = task_class()
    train, val, every = (
        _ids(task.make_dataset(s, None, seed=0)) for s in ("train", "validation", "all")
    )
    assert (len(train), len(val), len(every)) == sizes
    assert not set(train) & set(val) and sorted(train + val) == sorted(every)
    assert every[:3] == [f"{task.category}_{i}" for i in range(3)]
    assert sorted(every) == sorted(suite.entries(task.category))
    assert _ids(task.make_dataset("validation", None, seed=7)) == val  # the split ignores the seed
    sample = _ids(task.make_dataset("train", 10, seed=3))
    assert (
        sample
        == _ids(task.make_dataset("train", 10, seed=3))
        != _ids(task.make_dataset("train", 10, seed=4))
    )
    assert set(sample) <= set(train) and len(set(sample)) == 10
    rows = task.make_dataset("validation", 2, seed=0)
    assert all(json.loads(r["prompt"]).keys() == {"task", "id"} for r in rows)
    assert {json.loads(r["prompt"])["task"] for r in rows} == {task.name}
    assert all(task.parse(r["prompt"]).entry.category == task.category for r in rows)


@pytest.mark.parametrize(
    ("split", "n", "fragment"),
    [
        ("test", None, "unknown split 'test'"),
        ("train", 500, "has 166 entries"),
        ("train", -1, "ask for 0..166"),
    ],
)
def test_bad_dataset_requests_say_what_to_ask(
    task: BfclMultiTurnTask, split: str, n: int | None, fragment: str
) -> None:
    with pytest.raises(TaskInputError, match=fragment):
        task.make_dataset(split, n, seed=0)


@pytest.mark.parametrize(
    ("prompt", "fragment"),
    [
        ("not json", "not JSON"),
        ("[1]", 'with an "id"'),
        ('{"id": 3}', 'with an "id"'),
        ('{"id": "multi_turn_base_999"}', "no BFCL entry 'multi_turn_base_999'"),
        ('{"id": "multi_turn_composite_0"}', "no BFCL entry"),
        ('{"id": "multi_turn_miss_func_0"}', "--task bfcl_multi_turn_miss_func"),
        ('{"id": "multi_turn_long_context_0"}', "--task bfcl_multi_turn_long_context"),
        ('{"id": "multi_turn_miss_param_0"}', "--task bfcl_multi_turn_miss_param"),
    ],
)
async def test_bad_rows_are_refused_and_score_lowest(
    task: BfclMultiTurnTask, prompt: str, fragment: str
) -> None:
    with pytest.raises(TaskInputError, match=fragment):
        task.parse(prompt)
    traj = await run_episode(task, prompt, task.expert())
    assert traj.stop_reason == "bad_input"
    assert traj.reward == task.lowest_reward() and traj.reward.outcome == "no_valid_call"


@pytest.mark.parametrize("task_class", TASKS, ids=lambda t: t.name)
async def test_expert_reaches_the_ceiling_on_every_entry(
    task_class: type[BfclMultiTurnTask],
) -> None:
    """100% of BFCL's checker on validation and on the whole category (200), in each of
    the three categories (long_context asks what base asks, with other ground truths in
    18 entries: the expert must take the task's category, not the first match)."""
    task = task_class()
    rows = task.make_dataset("all", None, seed=0)
    trajs = await run_episodes(task, [r["prompt"] for r in rows], task.expert(), concurrency=8)
    by_id = {t.instance_id: t for t in trajs}
    failed = {i: t.reward.outcome for i, t in by_id.items() if not (t.reward and t.reward.solved)}
    assert failed == {}
    assert {t.stop_reason for t in trajs} == {"done"}
    val = _ids(task.make_dataset("validation", None, seed=0))
    assert all(by_id[i].reward.total == 1.0 for i in val)
    # one policy call per step plus one text reply per turn: the turns came one at a time
    t0 = by_id[f"{task.category}_0"]
    assert (
        sum(1 for m in t0.messages if m.role == "user")
        == len(suite.entry(f"{task.category}_0").turns)
        > 1
    )


@pytest.mark.parametrize("task_class", TASKS, ids=lambda t: t.name)
def test_reward_order_holds_and_every_scripted_episode_lands_in_its_tier(
    task_class: type[BfclMultiTurnTask],
) -> None:
    task = task_class()
    samples = list(task.reward_samples())
    report = check_reward_order(samples)
    assert report.ok, report
    episodes = [s for s in samples if f" on {task.category}_" in s.label]
    assert len(episodes) >= 12
    assert {s.tier for s in episodes} == set(task.tiers.names)
    for s in episodes:
        assert s.result.outcome == s.tier, s.label


async def test_partial_credit_counts_the_turns_that_pass(task: BfclMultiTurnTask) -> None:
    entry = suite.entry("multi_turn_base_0")  # 4 turns
    totals = []
    for k in range(1, 4):
        traj = await run_episode(task, row(entry.id), truncated_expert(k))
        assert traj.reward is not None
        assert traj.reward.outcome == "some_turns_pass"
        assert traj.reward.components["turns_passed"] == k
        totals.append(traj.reward.total)
    assert totals == pytest.approx([0.4 * (2 * k / 4 - 1) for k in range(1, 4)])
    wrong = await run_episode(task, row(entry.id), wrong_argument_policy())
    assert (wrong.reward.outcome, wrong.reward.total) == ("no_turn_passes", -0.6)


async def test_miss_param_turn_without_ground_truth_is_judged_as_bfcl_does() -> None:
    """miss_param_0's turn 3 lacks the file to move (ground truth empty). BFCL's checker
    does not check that turn, but its calls run: guessing a wrong file there (and moving
    it) leaves a state the next turn fails on; asking (text only, the expert) passes. Silence over the
    whole episode is no_valid_call, though turn 3 alone passes vacuously."""
    task = BfclMissParamTask()
    entry = suite.entry("multi_turn_miss_param_0")
    assert [bool(t) for t in entry.ground_truth] == [True, True, True, False, True]
    solved = await run_episode(task, row(entry.id), task.expert())
    assert solved.reward is not None and solved.reward.solved
    texts = [m.content for m in solved.messages if m.role == "assistant" and not m.tool_calls]
    assert len(texts) == 5  # the expert asks nothing, it ends the turn without a call

    def guess(m: list, t: list) -> object:
        turn = sum(1 for x in m if x.role == "user") - 1
        if turn == 3 and m[-1].role == "user":
            # the wrong file of the two left in document/ (the user means previous_report.pdf)
            return [
                call("cd", {"folder": ".."}),
                call("mv", {"source": "report_final.pdf", "destination": "temp"}),
            ]
        return expert_step(m, t, task.category)

    guessed = await run_episode(task, row(entry.id), ScriptedPolicy(guess))
    assert guessed.reward is not None and guessed.reward.outcome == "some_turns_pass"
    assert guessed.reward.components["turns_passed"] == 4  # turn 3 unchecked, turn 4 fails

    silent = await run_episode(
        task, row("multi_turn_miss_param_2"), ScriptedPolicy(lambda m, t: "?")
    )
    assert suite.entry("multi_turn_miss_param_2").ground_truth[0] == ()
    assert silent.reward is not None and silent.reward.outcome == "no_valid_call"
    assert silent.reward.components["turns_passed"] == 1


LEAK_IDS = [
    *(f"multi_turn_base_{i}" for i in (0, 7, 31, 104, 150, 188)),
    *(f"multi_turn_long_context_{i}" for i in (11, 29, 105, 163)),
    *(f"multi_turn_miss_param_{i}" for i in (0, 2, 3, 110, 160)),
    *(f"multi_turn_miss_func_{i}" for i in (0, 3, 49, 120, 190)),
]


@pytest.mark.parametrize("entry_id", LEAK_IDS)
async def test_policy_never_sees_ground_truth_or_a_turn_before_its_time(entry_id: str) -> None:
    task = task_for(entry_id)
    noisy = ScriptedPolicy(
        lambda m, t: [call("ls", {"a": True}), call("no_such_tool", {})] if len(m) < 6 else "ok"
    )
    entry = suite.entry(entry_id)
    instance = task.parse(row(entry_id))
    secrets = task.hidden_values(instance)
    assert secrets and all(isinstance(s, str) and "(" in s for s in secrets)
    assert entry_id in row(entry_id) and not any(s in row(entry_id) for s in secrets)
    for policy in (task.expert(), wrong_argument_policy(task.category), noisy):
        rec = Recorder(policy)
        traj = await run_episode(task, row(entry_id), rec)
        assert traj.reward is not None
        for messages, tools in rec.seen:
            # what the policy reads: user turns, tool replies, schemas (not its own calls)
            shown = [m.content or "" for m in messages if m.role != "assistant"]
            text = "\n".join(shown) + json.dumps(tools)
            for secret in secrets:
                assert secret not in text, (entry_id, secret)
            asked = sum(1 for m in messages if m.role == "user")
            for later in entry.turns[asked:]:
                for message in later:
                    if not any(message in "\n\n".join(t) for t in entry.turns[:asked]):
                        assert message not in text, (entry_id, "a later turn was shown early")
        first = rec.seen[0][0]
        assert [m.role for m in first] == ["user"]  # BFCL's FC inference: no system prompt
        assert first[0].content == "\n\n".join(entry.turns[0])
        # the tools at every call are the turn's (miss_func: a held-out function's name and
        # schema appear only from its turn on)
        for messages, tools in rec.seen:
            turn = sum(1 for m in messages if m.role == "user") - 1
            names = [t["function"]["name"] for t in tools]
            assert names == [t["function"]["name"] for t in suite.openai_tools(entry, turn)]
            later = {
                d["name"] for k, docs in entry.added_functions.items() if k > turn for d in docs
            }
            assert not any(f'"{name}"' in json.dumps(tools) for name in later), (entry_id, turn)


def test_importing_and_playing_touches_no_network_and_no_model_hub() -> None:
    """A subprocess with sockets that refuse to connect imports the plugin, plays the expert
    and scores it; BFCL's model-side packages (HF hub, sentence-transformers, faiss, serpapi)
    stay unimported."""
    code = """
import socket, sys, json
def refuse(*a, **k): raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
from agentrft import run_episode, run_sync
from agentrft_bfcl import BfclMultiTurnTask
task = BfclMultiTurnTask()
traj = run_sync(run_episode(task, json.dumps({"id": "multi_turn_base_7"}), task.expert()))
heavy = [m for m in ("huggingface_hub", "sentence_transformers", "faiss", "serpapi", "torch") if m in sys.modules]
print(json.dumps({"solved": traj.reward.solved, "heavy": heavy}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"solved": True, "heavy": []}


@pytest.mark.parametrize(
    ("name", "n"),
    [
        ("bfcl_multi_turn", 34),
        ("bfcl_multi_turn_long_context", 40),
        ("bfcl_multi_turn_miss_param", 40),
        ("bfcl_multi_turn_miss_func", 31),
    ],
)
def test_cli_eval_of_the_expert_prints_the_ceiling_on_validation(name: str, n: int) -> None:
    """The acceptance figure as a user gets it: `agentrft eval --policy expert` on the whole
    validation split of each task solves 100%."""
    args = [AGENTRFT, "eval", "--task", name, "--policy", "expert", "--split", "validation"]
    args += ["--n", str(n)]
    out = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "120", "NO_COLOR": "1", "PATH": ""},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"100.0% ({n}/{n})" in out.stdout and f"all_turns_pass: {n}" in out.stdout
