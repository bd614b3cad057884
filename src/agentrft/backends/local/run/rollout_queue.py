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
from typing import Any

from agentrft.trajectory import Trajectory

__all__ = ["Batch", "GroupQueue", "RolloutQueue", "StalenessError", "Taken"]


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


@dataclass
class Taken:
    """What a step trains on: the rollouts, the adapter version of each, how long they
    played, and the data cursor as of them (None: the queue records its own rows)."""

    trajectories: list[Trajectory]
    versions: list[int]
    played_s: float
    cursor: int | None


#: Plays step `step`'s rows from adapter `version` (`part` tells apart the calls of one
#: step, for their seeds); returns its rollouts.
Play = Callable[[int, list[int], int, int], Awaitable[list[Trajectory]]]


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
            task = asyncio.ensure_future(play(step, rows, version, 0))
            self.pending.append(Batch(step, rows, version, cursor, task))
            self.last_launched = step

    async def next(self, step: int) -> Taken:
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
        return Taken(trajs, [batch.version] * len(trajs), batch.played_s, batch.cursor)

    @property
    def ahead(self) -> int:
        """Batches (GroupQueue: groups) launched and not trained yet."""
        return len(self.pending)

    def queued(self) -> list[list[int]]:
        """[row, version] of each group to replay after a resume (none: the cursor says)."""
        return []

    def requeue(self, queued: list[list[int]]) -> None:
        """Replay these [row, version] groups first (a checkpoint's `queued`)."""

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


@dataclass
class _Group:
    step: int  # the step that launched it
    row: int
    version: int
    launched: float = field(default_factory=time.perf_counter)
    done_at: float = 0.0
    task: asyncio.Task[list[Trajectory]] | None = None


class GroupQueue(RolloutQueue):
    """`local.carry_over_groups`: groups, not batches. At the start of step s the queue
    tops up the groups eligible for it (sampled from version s - 1 - k or newer) to
    (k + 1) x `batch_size`, launching whole batches of rows from the newest version; the
    step trains on the first `batch_size` groups to FINISH, whichever step launched them.
    A group that has become older than the bound before a step took it is dropped (its
    episodes cancelled), so staleness never exceeds k; which group trains at which step
    depends on timing. A checkpoint records the untrained groups' [row, version], and a
    resumed run plays them again first."""

    def __init__(self, lag: int, drop: Callable[[int], Awaitable[None]], batch_size: int) -> None:
        super().__init__(lag, drop)
        self.batch_size = batch_size
        self.groups: list[_Group] = []  # launched, not trained, in launch order
        self.finished: list[_Group] = []  # of those, the finished ones, in finishing order
        self.requeued: list[tuple[int, int]] = []
        self.launched = 0
        self.dropped = 0  # groups dropped as too old, over the run

    def fill(
        self, trained: int, total: int, take: Callable[[], tuple[list[int], int]], play: Play
    ) -> None:
        floor = trained - self.lag  # the oldest version step trained + 1 may train on
        want = min(self.lag + 1, total - trained) * self.batch_size
        eligible = sum(g.version >= floor for g in self.groups)
        while self.requeued and eligible < want:
            row, version = self.requeued.pop(0)
            if version >= floor and version <= trained:
                self._launch(trained + 1, row, version, play)
                eligible += 1
        while eligible < want:
            rows, _ = take()
            for row in rows:
                self._launch(trained + 1, row, trained, play)
            eligible += len(rows)

    def _launch(self, step: int, row: int, version: int, play: Play) -> None:
        group = _Group(step, row, version)
        self.pins[version] += 1
        group.task = asyncio.ensure_future(play(step, [row], version, self.launched))
        self.launched += 1

        def finished(_: Any) -> None:
            group.done_at = time.perf_counter()
            self.finished.append(group)

        group.task.add_done_callback(finished)
        self.groups.append(group)

    async def next(self, step: int) -> Taken:
        floor = step - 1 - self.lag
        for group in [g for g in self.groups if g.version < floor]:
            await self._remove(group, cancel=True)
            self.dropped += 1
        while True:
            ready = [g for g in self.finished if g in self.groups]
            running = [g.task for g in self.groups if g.task is not None and not g.task.done()]
            if len(ready) >= self.batch_size or not running:
                break
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        if len(ready) < self.batch_size:
            raise StalenessError(
                f"step {step} has {len(ready)} finished groups of {self.batch_size} and none playing"
            )
        taken = ready[: self.batch_size]
        trajs: list[Trajectory] = []
        versions: list[int] = []
        try:
            for position, group in enumerate(taken):
                assert group.task is not None
                for t in group.task.result():  # an episode loop that raised ends the run
                    t.metadata.update(step=step, launched_step=group.step, group=position)
                    trajs.append(t)
                    versions.append(group.version)
        finally:
            for group in taken:
                await self._remove(group, cancel=False)
        now = time.perf_counter()
        played = max(now - g.launched for g in taken) if taken else 0.0
        return Taken(trajs, versions, played, None)

    async def _remove(self, group: _Group, *, cancel: bool) -> None:
        self.groups.remove(group)
        if group in self.finished:
            self.finished.remove(group)
        if cancel and group.task is not None:
            group.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await group.task
        await self._release(group.version)

    def queued(self) -> list[list[int]]:
        return [[g.row, g.version] for g in self.groups]

    def requeue(self, queued: list[list[int]]) -> None:
        self.requeued = [(int(row), int(version)) for row, version in queued]

    @property
    def ahead(self) -> int:
        return len(self.groups)

    async def cancel(self) -> None:
        for group in list(self.groups):
            await self._remove(group, cancel=True)
        self.requeued = []
        await super().cancel()
