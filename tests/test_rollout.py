"""The one agent loop, driven by scripted policies: every fault ends the episode with a
reward and a recorded failure kind; limits; several calls per reply; bounded concurrency."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, ClassVar

import pytest

from agentrft import (
    Completion,
    EpisodeLimits,
    Message,
    PolicyError,
    RewardResult,
    ScriptedPolicy,
    Task,
    Trajectory,
    call,
    replay_policy,
    run_episode,
    run_episodes,
)
from agentrft.testing import CounterEnv, CounterTask, FindNumberTask, find_number_expert
from agentrft.tools import tool

ROW = json.dumps({"secret": 37, "low": 1, "high": 100})
TASK = FindNumberTask()
LOWEST = TASK.lowest_reward().total


async def play(policy: Any, row: str = ROW, **kw: Any) -> Trajectory:
    return await run_episode(TASK, row, policy, **kw)


async def test_expert_solves_and_the_transcript_is_well_formed() -> None:
    traj = await play(TASK.expert())
    assert traj.stop_reason == "done"
    assert traj.solved and traj.reward is not None and traj.reward.outcome == "solved"
    assert traj.failures == []
    assert traj.instance_id == "1-100-37"
    assert [m.role for m in traj.messages[:2]] == ["system", "user"]
    # Every tool call is answered by a tool message with its id, in order.
    for turn in traj.turns:
        ids = [c.id for c in turn.assistant.tool_calls or []]
        assert [m.tool_call_id for m in turn.tool_messages] == ids
    assert len(traj.turns) == traj.tool_calls <= 7  # binary search over 100 numbers
    assert "correct" in (traj.messages[-1].content or "")
    Trajectory.model_validate_json(traj.model_dump_json())  # JSON round trip


async def test_the_policy_never_sees_the_secret_before_it_wins() -> None:
    seen: list[str] = []

    def spy(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        seen.extend(m.content or "" for m in messages)
        return find_number_expert(messages, tools)

    await play(ScriptedPolicy(spy))
    instance = TASK.parse(ROW)
    for secret in TASK.hidden_values(instance):
        assert not any(secret in text for text in seen)


async def test_several_tool_calls_in_one_reply_run_in_order() -> None:
    replies = [[call("guess", {"number": 10}), call("guess", {"number": 90})], "done"]
    traj = await play(replay_policy(replies))
    first = traj.turns[0]
    assert [m.content for m in first.tool_messages] == ["higher", "lower"]
    assert [m.tool_call_id for m in first.tool_messages] == ["call_1", "call_2"]
    assert traj.tool_calls == 2
    assert traj.stop_reason == "no_tool_call"
    assert traj.reward is not None and traj.reward.outcome == "unsolved"


async def test_calls_after_the_winning_one_are_not_run() -> None:
    replies = [[call("guess", {"number": 37}), call("guess", {"number": 50})]]
    traj = await play(replay_policy(replies))
    assert traj.stop_reason == "done" and traj.solved
    assert traj.tool_calls == 1 and len(traj.turns[0].tool_messages) == 1


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        (PolicyError("HTTP 500 from server", kind="http_error", status=500), "http_error", 500),
        (PolicyError("HTTP 429", kind="rate_limited", status=429), "rate_limited", 429),
        (PolicyError("no answer", kind="policy_timeout"), "policy_timeout", None),
        (RuntimeError("client bug"), "policy_error", None),
    ],
)
async def test_policy_errors_end_the_episode_with_the_lowest_reward(
    error: Exception, kind: str, status: int | None
) -> None:
    traj = await play(replay_policy([error]))
    assert traj.stop_reason == kind
    assert traj.failure_kinds == [kind]
    assert traj.failures[0].turn == 0
    assert traj.reward is not None and traj.reward.total == LOWEST
    assert traj.turns == []


async def test_policy_error_after_progress_keeps_the_progress_reward() -> None:
    traj = await play(
        replay_policy([call("guess", {"number": 40}), PolicyError("x", "http_error")])
    )
    assert traj.failure_kinds == ["http_error"]
    assert traj.reward is not None and traj.reward.outcome == "unsolved"
    assert traj.reward.total > LOWEST


async def test_malformed_tool_json_is_reported_to_the_model_and_the_episode_goes_on() -> None:
    traj = await play(replay_policy([call("guess", '{"number": 4'), call("guess", {"number": 37})]))
    assert traj.failure_kinds == ["malformed_tool_json"]
    reply = traj.turns[0].tool_messages[0]
    assert reply.role == "tool" and "not valid JSON" in (reply.content or "")
    assert traj.solved and traj.stop_reason == "done"


async def test_unknown_tool_is_reported_and_the_episode_goes_on() -> None:
    traj = await play(replay_policy([call("guess_word", {"word": "crane"}), call("give_up")]))
    assert traj.failure_kinds == ["unknown_tool"]
    assert "Available tools: guess, give_up" in (traj.turns[0].tool_messages[0].content or "")
    assert traj.stop_reason == "done"
    assert traj.reward is not None and traj.reward.outcome == "no_guess"


async def test_invalid_arguments_and_tool_errors_are_recorded() -> None:
    traj = await play(
        replay_policy(
            [
                call("guess", {"number": "many"}),
                call("guess", {"number": 500}),
                call("guess", {"number": 37}),
            ]
        )
    )
    assert traj.failure_kinds == ["invalid_arguments", "out_of_range"]
    assert traj.solved


async def test_plain_text_call_is_recovered_with_a_penalty() -> None:
    traj = await play(replay_policy(["I will guess(37) now"]))
    assert traj.failure_kinds == ["plain_text_call"]
    assert traj.solved and traj.stop_reason == "done"
    # The recovered call's result goes back as a user turn (no tool_call id to answer).
    assert traj.turns[0].tool_messages[0].role == "user"
    clean = await play(replay_policy([call("guess", {"number": 37})]))
    assert traj.reward is not None and clean.reward is not None
    assert traj.reward.total < clean.reward.total
    assert traj.reward.outcome == clean.reward.outcome == "solved"


async def test_text_without_a_call_ends_the_episode() -> None:
    traj = await play(replay_policy(["The answer is probably in the middle."]))
    assert traj.failure_kinds == ["no_tool_call"]
    assert traj.stop_reason == "no_tool_call"
    assert traj.reward is not None and traj.reward.total == LOWEST


@pytest.mark.parametrize("reply", ["", "   ", Message(role="assistant", content=None)])
async def test_empty_reply_ends_the_episode(reply: Any) -> None:
    traj = await play(replay_policy([reply]))
    assert traj.failure_kinds == ["empty_reply"]
    assert traj.stop_reason == "empty_reply"
    assert traj.reward is not None


async def test_truncated_reply_is_recorded() -> None:
    msg = Message(role="assistant", tool_calls=[call("guess", {"number": 37}, id="c")])
    traj = await play(replay_policy([Completion(message=msg, finish_reason="length")]))
    assert traj.failure_kinds == ["truncated"]
    assert traj.solved


async def test_token_ids_and_logprobs_reach_the_turn() -> None:
    msg = Message(role="assistant", tool_calls=[call("guess", {"number": 37}, id="c")])
    completion = Completion(
        message=msg,
        finish_reason="tool_calls",
        prompt_token_ids=[1, 2, 3],
        completion_token_ids=[7, 8],
        logprobs=[-0.1, -0.2],
        prompt_tokens=3,
        completion_tokens=2,
    )
    traj = await play(replay_policy([completion]))
    turn = traj.turns[0]
    assert turn.prompt_token_ids == [1, 2, 3]
    assert turn.completion_token_ids == [7, 8]
    assert turn.logprobs == [-0.1, -0.2]
    assert (turn.prompt_tokens, turn.completion_tokens) == (3, 2)


async def test_max_turns() -> None:
    policy = replay_policy([call("guess", {"number": 1})])
    traj = await play(policy, limits=EpisodeLimits(max_turns=3))
    assert len(traj.turns) == 3
    assert traj.stop_reason == "max_turns"
    assert traj.failure_kinds == ["max_turns"]
    assert traj.reward is not None and traj.reward.outcome == "unsolved"


async def test_max_tool_calls_stops_mid_reply() -> None:
    five = [call("guess", {"number": n}) for n in (1, 2, 3, 4, 5)]
    traj = await play(replay_policy([five]), limits=EpisodeLimits(max_tool_calls=3))
    assert traj.tool_calls == 3
    assert len(traj.turns[0].tool_messages) == 3
    assert traj.stop_reason == "max_tool_calls"
    assert traj.failure_kinds == ["max_tool_calls"]
    assert traj.reward is not None


async def test_wall_clock_budget_interrupts_a_slow_policy() -> None:
    async def slow(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        await asyncio.sleep(5)
        return call("guess", {"number": 37})

    traj = await play(ScriptedPolicy(slow), limits=EpisodeLimits(timeout_s=0.05))
    assert traj.stop_reason == "wall_clock"
    assert traj.failure_kinds == ["wall_clock"]
    assert traj.wall_s < 2
    assert traj.reward is not None and traj.reward.total == LOWEST


async def test_wall_clock_budget_checked_between_turns() -> None:
    async def sluggish(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        await asyncio.sleep(0.2)
        return call("guess", {"number": 1})

    # Each call takes at least 0.2 s, so at most 5 fit in 1 s; the first one finishing
    # within 1 s holds even on a loaded machine (at 0.03 s in 0.1 s it did not).
    traj = await play(ScriptedPolicy(sluggish), limits=EpisodeLimits(timeout_s=1.0))
    assert traj.stop_reason == "wall_clock"
    assert 1 <= len(traj.turns) <= 5
    assert traj.reward is not None and traj.reward.outcome == "unsolved"


class _SlowEnv(CounterEnv):
    @tool
    async def wait(self) -> str:
        """Never returns in time."""
        await asyncio.sleep(30)
        return "late"


class SlowToolTask(CounterTask):
    name: ClassVar[str] = "slow_tool"

    def environment(self, instance: Any) -> _SlowEnv:
        return _SlowEnv(instance.target)


async def test_wall_clock_budget_interrupts_a_hanging_tool() -> None:
    traj = await run_episode(
        SlowToolTask(),
        json.dumps({"target": 3}),
        replay_policy([call("wait")]),
        limits=EpisodeLimits(timeout_s=0.1),
    )
    assert traj.stop_reason == "wall_clock"
    assert traj.failure_kinds == ["wall_clock"]
    assert "wait" in traj.failures[0].detail
    assert traj.wall_s < 2
    assert traj.reward is not None


async def test_bad_row_gets_the_lowest_reward() -> None:
    traj = await play(replay_policy(["unused"]), row="not json")
    assert traj.stop_reason == "bad_input"
    assert traj.failure_kinds == ["bad_input"]
    assert "find_number rows are JSON" in traj.failures[0].detail
    assert traj.reward is not None and traj.reward.total == LOWEST


async def test_a_crashing_reward_gives_the_lowest_reward_visibly() -> None:
    def broken(env: Any, traj: Trajectory) -> RewardResult:
        raise KeyError("score")

    traj = await play(TASK.expert(), reward_fn=broken)
    assert traj.failure_kinds == ["reward_error"]
    assert traj.reward is not None and traj.reward.total == LOWEST


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (RewardResult(total=float("nan")), "total = nan"),
        (RewardResult(total=1.0, components={"x": float("inf")}), "components['x'] = inf"),
        (RewardResult(total=0.0, shaping=float("-inf")), "shaping = -inf"),
        (0.5, "returned float 0.5, not a RewardResult"),
        ("great", "returned str 'great', not a RewardResult"),
    ],
)
async def test_a_non_finite_or_mistyped_reward_is_a_reward_error_naming_it(
    value: Any, said: str
) -> None:
    def odd_reward(env: Any, traj: Trajectory) -> Any:
        return value

    traj = await play(TASK.expert(), reward_fn=odd_reward)
    assert traj.failure_kinds == ["reward_error"]
    detail = traj.failures[0].detail
    assert said in detail and "odd_reward" in detail and f"row {traj.instance_id}" in detail
    assert traj.reward is not None and traj.reward.total == LOWEST


async def test_a_crashing_reward_names_itself_and_the_row() -> None:
    def broken(env: Any, traj: Trajectory) -> RewardResult:
        raise KeyError("score")

    traj = await play(TASK.expert(), reward_fn=broken)
    assert f"reward {broken.__qualname__} on row {traj.instance_id} raised KeyError" in (
        traj.failures[0].detail
    )


async def test_a_hung_reward_is_given_up_at_the_episode_timeout() -> None:
    """A sync reward that blocks runs on a worker thread: the loop stays free, and at
    limits.timeout_s the episode gets the lowest tier and a reward_error saying why."""

    def sleepy(env: Any, traj: Trajectory) -> RewardResult:
        time.sleep(3)
        return RewardResult(total=1.0)

    async def sleepy_async(env: Any, traj: Trajectory) -> RewardResult:
        await asyncio.sleep(3)
        return RewardResult(total=1.0)

    for fn in (sleepy, sleepy_async):
        started = time.perf_counter()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        tick = asyncio.create_task(ticker())
        traj = await play(TASK.expert(), reward_fn=fn, limits=EpisodeLimits(timeout_s=0.5))
        tick.cancel()
        assert time.perf_counter() - started < 2.5
        assert ticks >= 5  # the event loop kept running while the reward hung
        assert traj.failure_kinds == ["reward_error"]
        assert "ran past limits.timeout_s (0.5 s)" in traj.failures[0].detail
        assert fn.__qualname__ in traj.failures[0].detail
        assert traj.reward is not None and traj.reward.total == LOWEST


async def test_reward_fn_replaces_the_task_reward() -> None:
    traj = await play(TASK.expert(), reward_fn=lambda env, t: RewardResult(total=42.0))
    assert traj.reward is not None and traj.reward.total == 42.0


async def test_run_episodes_bounds_concurrency_and_keeps_order() -> None:
    in_flight = 0
    peak = 0

    async def tracked(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return find_number_expert(messages, tools)

    rows = [json.dumps({"secret": s, "low": 1, "high": 63}) for s in range(1, 21)]
    seen: list[str] = []

    async def on_episode(traj: Trajectory) -> None:
        seen.append(traj.id)

    trajs = await run_episodes(
        TASK,
        rows,
        ScriptedPolicy(tracked),
        concurrency=3,
        on_episode=on_episode,
        metadata=lambda i: {"row": i},
    )
    assert peak == 3  # the bound is reached and never exceeded
    assert [t.prompt for t in trajs] == rows
    assert [t.metadata["row"] for t in trajs] == list(range(20))
    assert all(t.solved for t in trajs)
    assert sorted(seen) == sorted(t.id for t in trajs)


async def test_run_episodes_never_raises_on_mixed_faults() -> None:
    faults: dict[int, Any] = {
        101: PolicyError("x", "http_error"),
        102: "",
        103: "plain words",
        104: [call("nope"), call("give_up")],
        105: ValueError("client bug"),
    }

    def chaos(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        high = int((messages[1].content or "").rstrip(".").split()[-1])
        return faults[high]

    rows = [json.dumps({"secret": 50, "low": 1, "high": h}) for h in faults] + ["bad row"]
    trajs = await run_episodes(TASK, rows, ScriptedPolicy(chaos), concurrency=2)
    assert [t.stop_reason for t in trajs] == [
        "http_error",
        "empty_reply",
        "no_tool_call",
        "done",
        "policy_error",
        "bad_input",
    ]
    assert trajs[3].failure_kinds == ["unknown_tool"]
    assert all(t.reward is not None for t in trajs)


async def test_curriculum_level_plays_the_easier_instance() -> None:
    task = FindNumberTask()
    row = json.dumps({"secret": 37, "low": 1, "high": 128})
    full = await run_episode(task, row, task.expert())
    easy = await run_episode(task, row, task.expert(), curriculum_level=3)
    assert easy.metadata["curriculum_level"] == 3 and "curriculum_level" not in full.metadata
    assert "between 1 and 128" in (full.messages[1].content or "")
    low, high = map(int, re.findall(r"-?\d+", easy.messages[1].content or ""))
    assert high - low + 1 == 16 and low < 37 < high  # 128 >> 3, around the secret
    assert easy.solved and len(easy.turns) < len(full.turns)
    assert task.at_level(task.parse(row), 0) == task.parse(row)  # level 0 is the task
    with pytest.raises(ValueError, match=r"outside 0\.\.3"):
        task.at_level(task.parse(row), 4)
    # A task without a curriculum: asking for a level is a clear error, not a crash.
    counter = CounterTask()
    assert counter.curriculum_levels == 0
    with pytest.raises(ValueError, match=r"outside 0\.\.0"):
        counter.at_level(counter.parse('{"target": 2}'), 1)


class _SimulatedUserEnv(CounterEnv):
    """A counter whose 'user' speaks first and answers text replies (the user-simulator
    hooks), ending the episode politely after `patience` answers."""

    def __init__(self, target: int, patience: int, *, fail: bool = False) -> None:
        super().__init__(target)
        self.patience = patience
        self.fail = fail
        self.heard: list[str] = []

    async def opening(self) -> list[Message]:
        await asyncio.sleep(0)  # an async hook is awaited, as a model call would be
        return [Message(role="user", content="hello from the user")]

    async def on_text_reply(self, text: str) -> str | None:
        if self.fail:
            raise RuntimeError("user model down")
        self.heard.append(text)
        if len(self.heard) > self.patience:
            self.done = True  # the user said goodbye: a proper end
            return None
        return f"user reply {len(self.heard)}"


class _SimulatedUserTask(CounterTask):
    name: ClassVar[str] = "simulated_user_counter"

    def __init__(self, patience: int = 2, fail: bool = False) -> None:
        self.patience, self.fail = patience, fail

    def environment(self, instance: Any) -> _SimulatedUserEnv:
        return _SimulatedUserEnv(instance.target, self.patience, fail=self.fail)


async def test_async_user_turns_open_and_continue_the_episode_until_the_user_stops() -> None:
    seen_first: list[str] = []

    def policy(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        if not seen_first:
            seen_first.extend(m.content or "" for m in messages)
        return "a text answer"

    traj = await run_episode(
        _SimulatedUserTask(patience=2), json.dumps({"target": 8}), ScriptedPolicy(policy)
    )
    # The opening message came before the first policy call, after the task's own messages.
    assert seen_first[-1] == "hello from the user"
    assert [m.content for m in traj.turns[0].tool_messages] == ["user reply 1"]
    assert [m.role for m in traj.turns[1].tool_messages] == ["user"]
    assert len(traj.turns) == 3  # two answers continued the episode, the third ended it
    assert traj.stop_reason == "done" and traj.failures == []


class _UserFirstTask(_SimulatedUserTask):
    """No fixed first message: the task leaves `user_prompt` at its default (None)."""

    def user_prompt(self, instance: Any) -> str | None:
        return Task.user_prompt(self, instance)


async def test_a_task_without_a_first_message_lets_the_user_speak_first() -> None:
    first: list[list[tuple[str, str]]] = []

    def policy(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        if not first:
            first.append([(m.role, m.content or "") for m in messages])
        return "a text answer"

    traj = await run_episode(
        _UserFirstTask(patience=0), json.dumps({"target": 8}), ScriptedPolicy(policy)
    )
    # Only the opening's message reached the policy as a user turn: no empty first message.
    assert [m for m in first[0] if m[0] == "user"] == [("user", "hello from the user")]
    assert traj.stop_reason == "done"


async def test_a_failing_user_turn_ends_the_episode_with_a_reward() -> None:
    traj = await run_episode(
        _SimulatedUserTask(fail=True), json.dumps({"target": 8}), ScriptedPolicy(lambda m, t: "hi")
    )
    assert traj.stop_reason == "user_turn_error"
    assert traj.failure_kinds == ["user_turn_error"]
    assert "user model down" in traj.failures[0].detail
    assert traj.reward is not None and traj.reward.outcome == "short"  # scored, not raised


async def test_a_hung_user_turn_is_cut_off_by_the_deadline() -> None:
    class Hung(_SimulatedUserEnv):
        async def on_text_reply(self, text: str) -> str | None:
            await asyncio.Event().wait()  # never set
            return None

    class HungTask(_SimulatedUserTask):
        def environment(self, instance: Any) -> Hung:
            return Hung(instance.target, 1)

    traj = await run_episode(
        HungTask(),
        json.dumps({"target": 8}),
        ScriptedPolicy(lambda m, t: "hi"),
        limits=EpisodeLimits(timeout_s=0.05),
    )
    assert traj.stop_reason == "wall_clock"
    assert "on_text_reply" in traj.failures[0].detail
