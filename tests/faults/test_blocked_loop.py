"""An `async def` tool (or reward) that blocks the event loop: the watchdog names it in one
warning while it blocks, and its episode ends (`blocked_loop`, lowest reward) when it
returns; episodes whose tools await stay untouched; a well-behaved async tool never trips it."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, ClassVar

import pytest

from agentrft import (
    Environment,
    EpisodeLimits,
    RewardResult,
    ScriptedPolicy,
    Task,
    Trajectory,
    call,
    loop_watch,
    run_episodes,
    tool,
)


class LookupEnv(Environment):
    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__()
        self.row = row

    @tool
    async def lookup(self, key: str) -> str:
        """Look a key up.

        Args:
            key: the key.
        """
        if self.row.get("block_s"):
            time.sleep(self.row["block_s"])  # the bug: a blocking call inside async def
        else:
            await asyncio.sleep(self.row.get("await_s", 0.0))
        self.done = True
        return f"value of {key}"


class LookupTask(Task[dict]):
    name: ClassVar[str] = "lookup"

    def __init__(self) -> None:
        self.limits = EpisodeLimits(max_turns=2, max_tool_calls=2, timeout_s=30.0)

    def parse(self, prompt: str) -> dict:
        return dict(json.loads(prompt))

    def environment(self, instance: dict) -> LookupEnv:
        return LookupEnv(instance)

    def user_prompt(self, instance: dict) -> str:
        return "Look up k."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        return RewardResult(total=1.0 if env.done else 0.0, solved=env.done)

    def lowest_reward(self) -> RewardResult:
        return RewardResult(total=-1.0, outcome="failed")


def script(messages: list[Any], tools: list[Any]) -> Any:
    return call("lookup", {"key": "k"})


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_watch, "BLOCK_LIMIT_S", 0.6)
    monkeypatch.setattr(loop_watch, "TICK_S", 0.05)


def test_a_blocking_async_tool_is_named_and_its_episode_ends(
    short_limit: None, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [json.dumps({"id": "slow", "block_s": 1.5}), json.dumps({"id": "fine", "await_s": 0.1})]
    with caplog.at_level(logging.WARNING, logger="agentrft.loop_watch"):
        trajs = asyncio.run(run_episodes(LookupTask(), rows, ScriptedPolicy(script)))
    by_row = {json.loads(t.prompt)["id"]: t for t in trajs}
    slow, fine = by_row["slow"], by_row["fine"]
    assert slow.failure_kinds == ["blocked_loop"] and slow.stop_reason == "blocked_loop"
    assert "async tool 'lookup' blocked the event loop for at least" in slow.failures[0].detail
    assert slow.reward is not None and slow.reward.total == -1.0
    assert fine.failure_kinds == [] and fine.solved
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, warnings  # once per block, not once per tick
    assert f"by tool 'lookup' of episode {slow.id}" in warnings[0]


def test_an_async_tool_that_awaits_never_trips_the_watch(
    short_limit: None, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [json.dumps({"id": f"r{i}", "await_s": 1.0}) for i in range(4)]
    with caplog.at_level(logging.WARNING, logger="agentrft.loop_watch"):
        trajs = asyncio.run(run_episodes(LookupTask(), rows, ScriptedPolicy(script)))
    assert all(t.solved and not t.failures for t in trajs)
    assert not caplog.records


def test_a_blocking_async_reward_is_a_reward_error(short_limit: None) -> None:
    async def blocking_reward(env: Any, traj: Trajectory) -> RewardResult:
        time.sleep(1.5)
        return RewardResult(total=1.0)

    (traj,) = asyncio.run(
        run_episodes(
            LookupTask(),
            [json.dumps({"id": "r"})],
            ScriptedPolicy(script),
            reward_fn=blocking_reward,
        )
    )
    assert traj.failure_kinds == ["reward_error"]
    assert "blocking_reward" in traj.failures[0].detail
    assert "blocked the event loop" in traj.failures[0].detail
