"""Generator determinism, difficulty, datasets and row parsing."""

import json

import pytest
from agentrft_expense_report import ExpenseReportTask, generate_trip
from agentrft_expense_report.rules import adjudicate

from agentrft import TaskInputError
from agentrft.plugins import load_plugins

TASK = ExpenseReportTask()


def test_generator_is_deterministic_and_seed_sensitive():
    a, b = generate_trip(42, "hard"), generate_trip(42, "hard")
    assert a == b
    assert generate_trip(43, "hard").receipts != a.receipts
    assert generate_trip(42, "medium").receipts != a.receipts


@pytest.mark.parametrize(
    ("difficulty", "n_range", "foreign"),
    [("easy", (4, 5), 0), ("medium", (7, 10), 1), ("hard", (11, 15), 2)],
)
def test_difficulty_sets_size_currencies_and_traps(difficulty, n_range, foreign):
    for seed in range(40):
        trip = generate_trip(seed, difficulty)
        assert n_range[0] <= len(trip.receipts) <= n_range[1], (seed, len(trip.receipts))
        currencies = {r.currency for r in trip.receipts} - {"USD"}
        assert len(currencies) <= foreign
        assert len(trip.policy.rates) == foreign
        assert trip.traps
        decisions = adjudicate(trip.receipts, trip.policy, trip.start, trip.end)
        assert sum(d.claimed for d in decisions) >= 3
        # Every trip has at least one thing a careless report gets wrong.
        full = {r.id: trip.policy.to_usd(r.amount_cents, r.currency, r.date) for r in trip.receipts}
        assert any(not d.claimed or d.amount_cents != full[d.receipt_id] for d in decisions)


def test_hard_trips_plant_every_kind_of_trap_somewhere():
    kinds = set()
    reasons = set()
    for seed in range(60):
        trip = generate_trip(seed, "hard")
        kinds |= set(trip.traps)
        reasons |= {d.reason for d in adjudicate(trip.receipts, trip.policy, trip.start, trip.end)}
    assert kinds == {
        "bar",
        "personal",
        "alcohol_portion",
        "over_cap",
        "missing_receipt",
        "meal_cap",
        "outside_trip",
        "duplicate",
    }
    assert reasons >= {
        "outside_trip",
        "duplicate",
        "non_reimbursable",
        "missing_receipt",
        "daily_meal_cap",
    }


def test_make_dataset_is_deterministic_and_splits_are_disjoint():
    train = TASK.make_dataset("train", 300, seed=0)
    assert train == TASK.make_dataset("train", 300, seed=0)
    val = TASK.make_dataset("validation", 100, seed=0)
    test = TASK.make_dataset("test", 100, seed=0)
    seeds = {
        split: {json.loads(r["prompt"])["seed"] for r in rows}
        for split, rows in (("train", train), ("validation", val), ("test", test))
    }
    assert len(seeds["train"]) == 300
    assert not seeds["train"] & seeds["validation"]
    assert not seeds["train"] & seeds["test"]
    assert not seeds["validation"] & seeds["test"]
    # Another dataset seed draws other trips, still never from another split.
    assert not {json.loads(r["prompt"])["seed"] for r in TASK.make_dataset("train", 50, 1)} & (
        seeds["validation"] | seeds["test"]
    )
    row = json.loads(train[0]["prompt"])
    assert set(row) == {"task", "id", "seed", "difficulty"}
    assert {json.loads(r["prompt"])["difficulty"] for r in val} == {"easy", "medium", "hard"}
    assert len(TASK.make_dataset("validation", None, 0)) == 128


def test_make_dataset_rejects_an_unknown_split():
    with pytest.raises(TaskInputError, match="unknown split 'dev'"):
        TASK.make_dataset("dev", 3, 0)


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"difficulty": "easy"}', "'seed' must be a non-negative integer"),
        ('{"seed": -1}', "'seed' must be"),
        ('{"seed": 1, "difficulty": "extreme"}', "'difficulty' must be one of"),
    ],
)
def test_parse_rejects_bad_rows_with_the_fix(prompt, message):
    with pytest.raises(TaskInputError, match=message):
        TASK.parse(prompt)


def test_parse_row_and_prompts_carry_no_answer():
    row = TASK.make_dataset("validation", 1, 0)[0]
    inst = TASK.parse(row["prompt"])
    assert inst.id == "expense_report_validation_0000"
    text = TASK.user_prompt(inst) + TASK.system_prompt(inst)
    assert inst.trip.traveler in text and inst.trip.start in text
    for secret in TASK.hidden_values(inst):
        assert secret not in text


def test_registered_through_the_entry_point():
    plugins = load_plugins()
    assert plugins.task_classes()["expense_report"] is ExpenseReportTask
