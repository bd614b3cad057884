"""Registration, rows and splits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_textarena.task import MASTERMIND_EXAMPLE, ArenaInstance, MastermindTask

from agentrft import TaskInputError

AGENTRFT = Path(sys.executable).with_name("agentrft")


def test_agentrft_tasks_lists_every_game():
    out = subprocess.run(
        [str(AGENTRFT), "tasks"], capture_output=True, text=True, check=True,
        env={**os.environ, "COLUMNS": "300"},
    ).stdout  # fmt: skip
    for name in ("textarena_guess_the_number", "textarena_mastermind", "textarena_lights_out"):
        assert name in out
    assert "agentrft-textarena" in out


def test_splits_are_deterministic_and_disjoint(task):
    rows = {s: task.make_dataset(s, 200, seed=0) for s in ("train", "validation", "test")}
    assert rows["train"] == task.make_dataset("train", 200, seed=0)
    assert rows["train"][:5] == task.make_dataset("train", 5, seed=0)  # prefix-stable
    assert rows["train"] != task.make_dataset("train", 200, seed=1)
    seeds = {s: {json.loads(r["prompt"])["seed"] for r in rs} for s, rs in rows.items()}
    assert all(len(v) == 200 for v in seeds.values())
    assert not seeds["train"] & seeds["validation"]
    assert not seeds["train"] & seeds["test"]
    assert not seeds["validation"] & seeds["test"]
    first = json.loads(rows["validation"][0]["prompt"])
    assert first == {"id": f"{task.name}_validation_0000", "seed": first["seed"]}
    # Different seeds make different games (the secret is drawn from the row's seed).
    games = {str(task.secret(task.new_game(task.parse(r["prompt"])))) for r in rows["train"]}
    assert len(games) > 10


def test_mastermind_rows_never_hold_the_prompts_example_code():
    task = MastermindTask()
    for r in task.make_dataset("train", 400, seed=1):
        assert task.secret(task.new_game(task.parse(r["prompt"]))) != MASTERMIND_EXAMPLE


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("not json", "is not JSON"),
        ("[1, 2]", 'with a "seed" field'),
        ('{"seed": "7"}', "non-negative integer"),
        ('{"seed": -1}', "non-negative integer"),
        ('{"seed": true}', "non-negative integer"),
    ],
)
def test_bad_rows_are_refused_with_the_fix(task, prompt, message):
    with pytest.raises(TaskInputError, match=message):
        task.parse(prompt)


def test_bad_split_and_size_are_refused(task):
    with pytest.raises(TaskInputError, match="unknown split 'dev'"):
        task.make_dataset("dev", 3, 0)
    with pytest.raises(TaskInputError, match="at least 1"):
        task.make_dataset("train", 0, 0)


def test_dataset_make_cli_prints_the_rows(task):
    out = subprocess.run(
        [str(AGENTRFT), "dataset", "make", "--task", task.name, "--split", "validation", "--n", "3"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert [json.loads(line) for line in out.splitlines()] == task.make_dataset("validation", 3, 42)


def test_user_prompt_is_textarenas_first_observation(task):
    prompt = task.user_prompt(ArenaInstance(seed=5))
    assert prompt.startswith(("[GAME] You ", "[GAME] Welcome to Lights Out!"))
    assert any(g in prompt for g in ("Guess The Number", "Mastermind", "Lights Out"))
