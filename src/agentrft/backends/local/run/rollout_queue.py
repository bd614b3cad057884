"""Rollouts played ahead of the trainer (`max_steps_off_policy: k`, the service's name).

With k > 0 the GRPO loop does not wait for a step's training before playing the next
steps' episodes: at the start of step s it launches the batches of steps s .. s + k that
are not playing yet. Batch j plays from adapter version max(0, j - 1 - k): at the start of
step s that is the newest version (s - 1) for the batch launched last, so the batch a step
trains on is at most k versions older than the adapter it updates (j - 1), and which
version played which batch never depends on timing. The sampler batches their requests
together with whatever else is playing.

An episode keeps the adapter it started with for all its turns: its tokens then come from
one policy, whose version its metadata records (`policy_version`), and whose logprobs the
off-policy loss takes its ratio against. A version stays loaded in the sampler while a
batch that plays from it is unfinished; the loop unloads it when the last one finishes.

Resume: a checkpoint after step s records the data cursor as of batch s and keeps the
adapters the queued batches s + 1 .. s + k play from (versions s - k .. s - 1). A resumed
run loads them and plays those batches again: the same rows, versions and seeds (the
queued rollouts themselves are discarded and replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agentrft.trajectory import Trajectory

__all__ = ["Batch", "RolloutQueue", "StalenessError"]


class StalenessError(RuntimeError):
    """A batch older than `max_steps_off_policy` reached the trainer: a scheduling bug,
    never a condition a run continues through."""


@dataclass
class Batch:
    """One step's episodes, launched ahead of the step that trains on them."""

    step: int
    rows: list[int]
    #: The adapter version every episode of the batch samples from.
    version: int
    #: The data cursor's position once this batch's rows were taken.
    cursor: int
    task: asyncio.Task[list[Trajectory]]
    launched: float = field(default_factory=time.perf_counter)
    #: Seconds from launch until the last episode finished.
    played_s: float = 0.0


#: Plays step `step`'s rows from adapter `version`; returns its rollouts.
Play = Callable[[int, list[int], int], Awaitable[list[Trajectory]]]


class RolloutQueue:
    """The batches launched and not trained yet, in step order, and the adapter versions
    they hold loaded."""

    def __init__(self, lag: int, drop: Callable[[int], Awaitable[None]]) -> None:
        if lag < 1:
            raise ValueError("a rollout queue is for max_steps_off_policy >= 1")
        self.lag = lag
        self._drop = drop  # unloads a version from the sampler
        self.pending: deque[Batch] = deque()
        self.pins: Counter[int] = Counter()
        self.retired: set[int] = set()
        self.last_launched = 0

    def version_for(self, step: int) -> int:
        """The adapter version step `step`'s batch plays from."""
        return max(0, step - 1 - self.lag)

    def fill(
        self, trained: int, total: int, take: Callable[[], tuple[list[int], int]], play: Play
    ) -> None:
        """Launch the batches of steps trained + 1 .. trained + 1 + lag (at most `total`)
        that are not launched yet; `take` draws one batch's rows and says where the cursor
        is after them."""
        first = max(self.last_launched, trained) + 1
        for step in range(first, min(total, trained + 1 + self.lag) + 1):
            version = self.version_for(step)
            if version > trained:
                raise StalenessError(f"step {step} would play from version {version}, "
                                     f"newer than the trained {trained}")  # fmt: skip
            rows, cursor = take()
            self.pins[version] += 1
            task = asyncio.ensure_future(play(step, rows, version))
            self.pending.append(Batch(step, rows, version, cursor, task))
            self.last_launched = step

    async def next(self, step: int) -> tuple[Batch, list[Trajectory]]:
        """Step `step`'s batch and its rollouts, once all have finished; checks that the
        batch is within the staleness bound of the adapter it updates (version step - 1)."""
        if not self.pending or self.pending[0].step != step:
            raise StalenessError(f"no batch was launched for step {step}")
        batch = self.pending[0]
        stale = step - 1 - batch.version
        if not 0 <= stale <= self.lag:
            raise StalenessError(
                f"step {step}'s batch was sampled from version {batch.version}: {stale} "
                f"versions behind, over max_steps_off_policy={self.lag}"
            )
        try:
            trajs = await batch.task
        finally:
            self.pending.popleft()
            await self._release(batch.version)
        batch.played_s = time.perf_counter() - batch.launched
        return batch, trajs

    async def retire(self, version: int) -> None:
        """`version` is no longer the newest: unload it now, or once no batch plays from it."""
        if self.pins[version] > 0:
            self.retired.add(version)
        else:
            await self._drop(version)

    async def cancel(self) -> None:
        """Stop every batch that is still playing (the run ended) and unload the versions
        only they held."""
        for batch in self.pending:
            batch.task.cancel()
        while self.pending:
            batch = self.pending.popleft()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await batch.task
            await self._release(batch.version)
        self.last_launched = 0
        for version in sorted(self.retired):  # kept for batches that never launched
            await self._drop(version)
        self.retired.clear()

    async def _release(self, version: int) -> None:
        self.pins[version] -= 1
        if self.pins[version] <= 0:
            del self.pins[version]
            if version in self.retired:
                self.retired.discard(version)
                await self._drop(version)
