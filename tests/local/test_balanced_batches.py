"""Balanced batches: with a task's batch keys every step holds each key equally often, the
order stays a seeded, resumable function of (seed, epoch), and without keys it is the plain
shuffle it always was."""

from __future__ import annotations

import json
import random
from collections import Counter

from agentrft_ticket_triage import TicketTriageTask

from agentrft.backends.local.run.data_cursor import DataCursor, batch_keys


def test_without_keys_the_order_is_the_plain_seeded_shuffle() -> None:
    cursor = DataCursor(10, seed=3)
    expected = list(range(10))
    random.Random(3 * 1_000_003 + 0).shuffle(expected)
    assert cursor.take(10) == expected
    assert DataCursor(10, seed=3, keys=["a"] * 10).take(10) == expected  # one key: no change


def test_every_step_holds_each_key_once_and_every_row_once_per_epoch() -> None:
    keys = ["payments", "technical", "delivery", "account"] * 32
    random.Random(0).shuffle(keys)
    cursor = DataCursor(len(keys), seed=1, keys=keys)
    seen: list[int] = []
    for _ in range(len(keys) // 4):
        step = cursor.take(4)
        assert sorted(keys[i] for i in step) == sorted(set(keys)), step
        seen += step
    assert sorted(seen) == list(range(len(keys)))  # an epoch is still a permutation
    second = cursor.take(len(keys))
    assert sorted(second) == list(range(len(keys))) and second != seen  # a new shuffle


def test_the_order_is_a_function_of_seed_epoch_and_position() -> None:
    keys = [k for k in "abcd" for _ in range(6)]
    a = DataCursor(len(keys), seed=5, keys=keys)
    first = a.take(30)
    b = DataCursor(len(keys), seed=5, keys=keys, position=7)  # what a resume restores
    assert b.take(23) == first[7:]
    assert DataCursor(len(keys), seed=6, keys=keys).take(30) != first


def test_uneven_keys_still_cover_every_row() -> None:
    keys = ["a"] * 7 + ["b"] * 2 + ["c"]
    order = DataCursor(len(keys), seed=0, keys=keys).take(len(keys))
    assert sorted(order) == list(range(len(keys)))
    assert Counter(keys[i] for i in order[:3]) == Counter("abc")  # the first round: one each


def test_ticket_triage_declares_its_team_as_the_key() -> None:
    task = TicketTriageTask()
    rows = [r["prompt"] for r in task.make_dataset("train", 40, 0)]
    keys = batch_keys(task, rows)
    assert keys == [json.loads(r)["queue"] for r in rows]
    assert batch_keys(task, [*rows, "not a ticket"]) is None  # a bad row: plain shuffles
