"""The stream of training prompts a run takes its batches from: epoch-wise seeded shuffles,
balanced across the task's batch keys, resumable from one position."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from agentrft.task import Task

__all__ = ["DataCursor", "batch_keys"]


@dataclass
class DataCursor:
    """Position in the stream of training prompts: epoch-wise seeded shuffles, in order.

    With `keys` (one per prompt, `Task.batch_key`), each epoch's order interleaves the keys:
    every key's rows are shuffled, then taken one per key in turn (the keys' order drawn
    afresh each round), so any run of consecutive rows holds each key about equally often.
    """

    size: int
    seed: int
    position: int = 0
    keys: list[str] | None = None

    def take(self, n: int) -> list[int]:
        out: list[int] = []
        order: list[int] = []
        order_epoch = -1
        for _ in range(n):
            epoch, index = divmod(self.position, self.size)
            if epoch != order_epoch:  # shuffle once per epoch, not once per prompt taken
                order, order_epoch = self._order(epoch), epoch
            out.append(order[index])
            self.position += 1
        return out

    def _order(self, epoch: int) -> list[int]:
        order = list(range(self.size))
        rng = random.Random(self.seed * 1_000_003 + epoch)
        rng.shuffle(order)
        if not self.keys or len(set(self.keys)) < 2:
            return order
        by_key: dict[str, list[int]] = {}
        for i in order:  # already shuffled: each key's rows in a random order
            by_key.setdefault(self.keys[i], []).append(i)
        queues = [by_key[k] for k in sorted(by_key)]
        out: list[int] = []
        while any(queues):
            rng.shuffle(queues)
            for q in queues:
                if q:
                    out.append(q.pop())
        return out

    @property
    def epoch(self) -> int:
        return self.position // self.size


def batch_keys(task: Task[Any], prompts: list[str]) -> list[str] | None:
    """`task.batch_key` of every prompt, or None when the task declares none (or a row does
    not parse: such a row plays as a bad input, and the batches are left unbalanced)."""
    keys: list[str] = []
    for prompt in prompts:
        try:
            key = task.batch_key(task.parse(prompt))
        except Exception:
            return None
        if key is None:
            return None
        keys.append(str(key))
    return keys
