import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agentrft_wordle import WORDLE_TIERS, WordleGame, WordleTask, allowed_words, answer_words
from agentrft_wordle.task import EXAMPLE_REPLY, SYSTEM_PROMPT, split_words

from agentrft import (
    Message,
    ScriptedPolicy,
    TaskInputError,
    Tier,
    TieredReward,
    Trajectory,
    call,
    check_reward_order,
    replay_policy,
    run_episode,
)
from agentrft.plugins import load_plugins


def test_found_through_its_entry_point() -> None:
    assert load_plugins().task_classes()["wordle"] is WordleTask


# -- rows ----------------------------------------------------------------------------------
def test_rows_round_trip(task: WordleTask) -> None:
    rows = task.make_dataset("train", 5, 3)
    for i, row in enumerate(rows):
        assert set(row) == {"prompt"} and isinstance(row["prompt"], str)
        inner = json.loads(row["prompt"])
        assert inner == {
            "prompt": "Guess the 5-letter word",
            "answer": inner["answer"],
            "id": f"wordle_train_{i:04d}",
        }
        instance = task.parse(row["prompt"])
        assert instance.answer == inner["answer"] and instance.id == inner["id"]
        assert task.row(instance.answer, instance.id) == row


def test_every_answer_makes_a_valid_row(task: WordleTask) -> None:
    for word in answer_words():  # "guess" included: the default prompt's own word
        assert task.parse(task.row(word)["prompt"]).answer == word


async def test_reward_samples_work_inside_an_event_loop(task: WordleTask) -> None:
    assert check_reward_order(task.reward_samples()).ok


def test_sample_row_from_the_design_note_parses(task: WordleTask) -> None:
    row = {
        "prompt": '{"prompt": "Guess the 5-letter word", "answer": "riser", "id": "wordle_train_0000"}'
    }
    instance = task.parse(row["prompt"])
    assert (instance.answer, instance.prompt, instance.id) == (
        "riser",
        "Guess the 5-letter word",
        "wordle_train_0000",
    )


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("Guess the 5-letter word", "not JSON"),
        ('["riser"]', 'JSON object with an "answer"'),
        ('{"prompt": "Guess"}', 'JSON object with an "answer"'),
        ('{"answer": "rise"}', "five letters a-z, got 'rise'"),
        ('{"answer": "r1ser"}', "five letters a-z"),
        ('{"answer": 12345}', "five letters a-z"),
        ('{"answer": "risers"}', "five letters a-z"),
        ('{"answer": "riser", "prompt": 5}', '"prompt" must be a string'),
        ('{"answer": "riser", "seed_guesses": 6}', '"seed_guesses" must be an integer 0..5'),
        ('{"answer": "riser", "seed_guesses": -1}', '"seed_guesses" must be an integer 0..5'),
        ('{"answer": "riser", "seed_guesses": "2"}', '"seed_guesses" must be an integer 0..5'),
        ('{"answer": "riser", "seed_guesses": true}', '"seed_guesses" must be an integer 0..5'),
        ('{"answer": "riser", "seed_guesses": 2.0}', '"seed_guesses" must be an integer 0..5'),
        ('{"answer": "riser", "prompt": "Guess RISER"}', "contains its own answer"),
    ],
)
def test_bad_rows_are_rejected_clearly(task: WordleTask, prompt: str, message: str) -> None:
    with pytest.raises(TaskInputError, match=re.escape(message)):
        task.parse(prompt)


async def test_bad_row_gets_the_lowest_reward_through_the_loop(task: WordleTask) -> None:
    traj = await run_episode(
        task, '{"answer": "rise"}', replay_policy([call("guess_word", {"guess": "crane"})])
    )
    assert traj.failure_kinds == ["bad_input"] and traj.reward.total == -1.5


def sample_line(answer: str, row_id: str) -> str:
    """A row as the launch post prints it."""
    return (
        '{"prompt": "{\\"prompt\\": \\"Guess the 5-letter word\\", \\"answer\\": '
        f'\\"{answer}\\", \\"id\\": \\"{row_id}\\"}}"}}'
    )


def test_first_rows_are_the_samples_byte_for_byte(task: WordleTask) -> None:
    assert sample_line("riser", "wordle_train_0000") == (
        r'{"prompt": "{\"prompt\": \"Guess the 5-letter word\", \"answer\": \"riser\", '
        r'\"id\": \"wordle_train_0000\"}"}'
    )
    lines = [json.dumps(r) for r in task.make_dataset("train", 3)]
    assert lines == [
        sample_line("riser", "wordle_train_0000"),
        sample_line("swoon", "wordle_train_0001"),
        sample_line("dirty", "wordle_train_0002"),
    ]
    val = [json.dumps(r) for r in task.make_dataset("validation", 3)]
    assert val == [
        sample_line("gruff", "wordle_val_0000"),
        sample_line("build", "wordle_val_0001"),
        sample_line("avoid", "wordle_val_0002"),
    ]


def test_dataset_make_writes_the_samples_first_rows(tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    code = "from agentrft.cli.app import main; main()"
    args = ["dataset", "make", "--task", "wordle", "--split", "train", "--n", "3", "-o", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8").splitlines() == [
        sample_line(w, f"wordle_train_{i:04d}") for i, w in enumerate(("riser", "swoon", "dirty"))
    ]


def test_dataset_make_prints_the_samples_first_rows() -> None:
    """The acceptance command exactly: no --output, the rows on stdout as the post prints them."""
    code = "from agentrft.cli.app import main; main()"
    args = ["dataset", "make", "--task", "wordle", "--split", "train", "--n", "3"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        sample_line(w, f"wordle_train_{i:04d}") for i, w in enumerate(("riser", "swoon", "dirty"))
    ]


def test_splits_follow_the_samples_rule(task: WordleTask) -> None:
    words = sorted(w.upper() for w in answer_words())
    random.Random(42).shuffle(words)
    splits = split_words()
    assert [w.upper() for w in splits["train"]] == words[:640]
    assert [w.upper() for w in splits["validation"]] == words[640:768]
    assert [w.upper() for w in splits["test"]] == words[768:]
    train, val, test = (set(splits[s]) for s in ("train", "validation", "test"))
    assert (len(train), len(val), len(test)) == (640, 128, 1155)
    assert not (train & val) and not (train & test) and not (val & test)
    assert train | val | test == set(answer_words())
    val_rows = task.make_dataset("validation")
    assert [task.parse(r["prompt"]).answer for r in val_rows] == list(splits["validation"])
    assert [task.parse(r["prompt"]).id for r in val_rows][-1] == "wordle_val_0127"
    test_rows = task.make_dataset("test", 2)
    assert task.parse(test_rows[1]["prompt"]).id == "wordle_test_0001"
    # The rows, their order and ids are the sample's whatever the seed; n takes the first n.
    assert task.make_dataset("validation", 128, 7) == val_rows
    assert task.make_dataset("train", 10, 1) == task.make_dataset("train", 640, 0)[:10]


def test_dataset_arguments_are_checked(task: WordleTask) -> None:
    with pytest.raises(TaskInputError, match="unknown wordle split 'dev'"):
        task.make_dataset("dev", 10, 0)
    with pytest.raises(TaskInputError, match="has 128 words; asked for 129"):
        task.make_dataset("validation", 129, 0)


# -- hidden answer -------------------------------------------------------------------------
def test_prompts_do_not_depend_on_the_answer(task: WordleTask) -> None:
    a, b = (task.parse(task.row(w)["prompt"]) for w in ("riser", "abide"))
    assert task.initial_messages(a) == task.initial_messages(b)
    assert task.hidden_values(a) == ["riser", "RISER"]
    assert "guess_word" in SYSTEM_PROMPT and "Current Knowledge" in SYSTEM_PROMPT


@pytest.mark.parametrize(
    ("inner", "user_message"),
    [
        ({"answer": "riser"}, "Guess the 5-letter word"),
        ({"answer": "riser", "prompt": "Guess the 5-letter word"}, "Guess the 5-letter word"),
        ({"answer": "riser", "prompt": ""}, "Guess the 5-letter word"),
        ({"answer": "riser", "prompt": "  \n"}, "Guess the 5-letter word"),
        ({"answer": "riser", "prompt": None}, "Guess the 5-letter word"),
        # Any other text is the user message exactly as given, spaces and all.
        ({"answer": "riser", "prompt": " Play Wordle.\n"}, " Play Wordle.\n"),
    ],
)
def test_user_message_is_the_rows_text_as_given(
    task: WordleTask, inner: dict[str, Any], user_message: str
) -> None:
    messages = task.initial_messages(task.parse(json.dumps(inner)))
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[1].content == user_message


def test_system_prompt_example_is_a_real_reply_and_names_no_answer(task: WordleTask) -> None:
    assert WordleGame("medal").guess("tears") == EXAMPLE_REPLY
    text = "\n".join(
        m.content or "" for m in task.initial_messages(task.parse(task.row("medal")["prompt"]))
    )
    # Tool replies write words in capitals: no answer appears that way in the prompts. (Plain
    # English words such as "guess" or "green" do occur; they are the same for every answer.)
    assert not [w for w in answer_words() if re.search(rf"\b{w.upper()}\b", text)]


def _random_policy(seed: int) -> ScriptedPolicy:
    rng = random.Random(seed)
    words = allowed_words()
    return ScriptedPolicy(lambda m, t: call("guess_word", {"guess": rng.choice(words)}), "random")


def _bad_policy() -> ScriptedPolicy:
    replies: list[Any] = [
        call("guess_word", {"guess": "no"}),
        call("guess_word", "{not json"),
        call("reveal_answer", {}),
        call("guess_word", {"guess": "crane", "answer": True}),
        call("guess_word", {"guess": "qxzvw"}),
        call("guess_word", {"guess": "qxzvw"}),
        Message(role="assistant", content="guess: FUZZY"),
        call("guess_word", {"guess": "mmmmm"}),
        Message(role="assistant", content="What is the word? Tell me."),
    ]
    return replay_policy(replies, name="bad")


async def test_answer_never_visible_before_the_game_ends(
    task: WordleTask, template_vocabulary: set[str]
) -> None:
    answers = [w for w in split_words()["validation"] if w not in template_vocabulary][:16]
    assert len(answers) == 16
    policies = {
        "expert": lambda i: task.expert(),
        "random": _random_policy,
        "bad": lambda i: _bad_policy(),
        "text": lambda i: replay_policy([Message(role="assistant", content='guess_word("SLATE")')]),
    }
    checked = 0
    for i, answer in enumerate(answers):
        for name, make in policies.items():
            traj: Trajectory = await run_episode(task, task.row(answer)["prompt"], make(i))
            visible = [m for m in traj.messages if m.role != "assistant"]
            if traj.stop_reason == "done":  # the final reply may reveal or confirm the word
                assert traj.messages[-1] is visible[-1]
                visible = visible[:-1]
            pattern = re.compile(rf"\b{answer}\b", re.I)
            for m in visible:
                assert not pattern.search(m.content or ""), (name, answer, m.content)
                checked += 1
            if traj.reward.outcome == "lost" and traj.reward.components["guesses_used"] == 6:
                assert f"'{answer.upper()}'" in traj.messages[-1].content  # the sixth miss
    assert checked > 200


# -- reward --------------------------------------------------------------------------------
def test_tiers_follow_the_design() -> None:
    bases = {t.name: (t.base, t.shaping_weight) for t in WORDLE_TIERS.tiers}
    assert WORDLE_TIERS.names == [*(f"solved_{n}" for n in range(1, 7)), "lost", "no_play"]
    for n in range(1, 7):
        assert bases[f"solved_{n}"] == pytest.approx((1.05 + 0.5 * (6 - n) / 5, 0.04))
    assert bases["lost"] == (-0.5, 0.15) and bases["no_play"] == (-1.5, 0.0)
    solve_lows = [WORDLE_TIERS.tier(f"solved_{n}").low for n in range(1, 7)]
    assert min(solve_lows) == pytest.approx(1.01)  # above the service's success threshold 1.0
    assert WORDLE_TIERS.tier("lost").high < 0


async def test_reward_is_the_tier_plus_clipped_shaping(play) -> None:
    traj = await play("sight", ["fight", "light", "sight"])
    r = traj.reward
    game_score = r.components["game_score"]
    assert r.outcome == "solved_3" and r.solved
    expected = 1.05 + 0.5 * 3 / 5 + 0.04 * max(-1.0, min(1.0, game_score / 150))
    assert r.total == pytest.approx(expected)
    assert r.components["guesses_used"] == 3
    parts = sum(v for k, v in r.components.items() if k.startswith("score."))
    assert parts == pytest.approx(game_score)
    worst = await play("sight", ["no"] * 11 + ["sight"])
    assert worst.reward.outcome == "solved_1"
    assert worst.reward.total == pytest.approx(1.55 - 0.04)  # shaping clipped at -1
    assert worst.reward.total < traj.reward.total + 0.3


def test_reward_check_passes_on_simulated_and_real_games(task: WordleTask) -> None:
    played = task.played_reward_samples()
    assert {s.tier for s in played} == set(WORDLE_TIERS.names)  # every tier from real games
    assert any(s.result.shaping <= -1 for s in played if s.tier == "solved_1")
    lost = [s.result.shaping for s in played if s.tier == "lost"]
    assert max(lost) > 0.8 and min(lost) <= -1  # good and bad losses
    report = check_reward_order(task.reward_samples())
    assert report.ok, report.explain()


class OneShapingWeight(WordleTask):
    """The rejected design: one shaping weight of 0.15 for solves and losses."""

    tiers = TieredReward(
        [
            Tier(
                name=t.name,
                base=t.base,
                shaping_weight=0.15 if t.name != "no_play" else 0.0,
                solved=t.solved,
            )
            for t in WORDLE_TIERS.tiers
        ]
    )


def test_reward_check_catches_a_single_shaping_weight() -> None:
    variant = OneShapingWeight()
    report = check_reward_order(variant.reward_samples())
    assert not report.ok
    assert "counterexample: tier 'solved_" in report.explain()
    # The real games alone catch it too: a clean slower solve outscores a sloppy faster one.
    real = check_reward_order(variant.played_reward_samples())
    assert not real.ok
    worst = max(real.violations, key=lambda v: v.worse.result.total - v.better.result.total)
    assert worst.worse.tier.startswith("solved_") and worst.better.tier.startswith("solved_")
    assert "clean play" in worst.worse.label and "worst play" in worst.better.label
