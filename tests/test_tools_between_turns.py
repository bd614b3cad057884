"""An environment that offers a tool mid-episode (`Environment.tools_changed`): the loop
sends the new list from the next policy call on (to a scripted policy and over HTTP to an
OpenAI-compatible server), records it on that turn, and the record survives JSONL."""

from __future__ import annotations

from typing import Any

from agentrft import Message, ScriptedPolicy, Trajectory, call, run_episode
from agentrft.evaluation import UNKNOWN_TOOLS, EvalReport
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import FakeOpenAIServer, UnlockTask


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [(t.get("function") or t)["name"] for t in tools]


def unlock_script(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
    """A wrong guess, a text reply (the hint is then offered), the hint, the right guess."""
    last = messages[-1]
    if last.role == "user" and len(messages) == 1:
        return call("guess", {"word": "apple"})
    if last.content == "Wrong.":
        return "Can I get help?"
    if last.role == "user":
        return call("hint", {})
    return call("guess", {"word": "cherry"})


def _check(traj: Trajectory, seen: list[list[str]]) -> None:
    assert traj.solved and len(traj.turns) == 4
    assert seen == [["guess"], ["guess"], ["guess", "hint"], ["guess", "hint"]]
    # recorded where it changed, and only there
    assert [None if t.tools is None else _names(t.tools) for t in traj.turns] == [
        None,
        None,
        ["guess", "hint"],
        None,
    ]
    assert _names(traj.tools) == ["guess"]
    assert [_names(traj.tools_at(k)) for k in range(4)] == seen
    assert "unknown_tool" not in traj.failure_kinds


async def test_a_tool_offered_between_user_turns_reaches_the_next_policy_call() -> None:
    seen: list[list[str]] = []

    def script(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        seen.append(_names(tools))
        return unlock_script(messages, tools)

    traj = await run_episode(UnlockTask(), "cherry", ScriptedPolicy(script))
    _check(traj, seen)
    again = Trajectory.model_validate_json(traj.model_dump_json())
    assert [_names(again.tools_at(k)) for k in range(4)] == seen
    # the added tool counts as offered in eval reports, not as an unknown one
    report = EvalReport.from_trajectories([traj], task="unlock", policy="s", temperature=1.0)
    assert report.tool_calls.by_tool == {"guess": 2, "hint": 1}


async def test_an_openai_compatible_server_gets_the_new_tools_per_request() -> None:
    with FakeOpenAIServer(unlock_script) as server:
        async with OpenAIPolicy("m", server.base_url) as policy:
            traj = await run_episode(UnlockTask(), "cherry", policy)
        sent = [_names(r.body.get("tools", [])) for r in server.chat_requests]
    _check(traj, sent)


async def test_a_tool_not_yet_offered_is_unknown() -> None:
    traj = await run_episode(
        UnlockTask(),
        "cherry",
        ScriptedPolicy(lambda m, t: call("hint", {}) if len(m) == 1 else "?"),
    )
    assert traj.turns[0].tools is None and "unknown_tool" in traj.failure_kinds
    report = EvalReport.from_trajectories([traj], task="unlock", policy="s", temperature=1.0)
    assert report.tool_calls.by_tool == {UNKNOWN_TOOLS: 1}  # not offered at that call
