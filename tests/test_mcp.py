"""agentrft.mcp against real MCP servers (the official SDK's, started as subprocesses):
tools listed and called as `@tool`s are, replies converted, and every server fault ends a
call or an episode with a reward and a failure kind naming the server, never the run; no
server process outlives its episode."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from agentrft import (
    RewardResult,
    ScriptedPolicy,
    Task,
    call,
    run_episode,
    run_episodes,
    tool,
)
from agentrft.mcp import HTTPServer, MCPEnvironment, StdioServer
from agentrft.mcp.pool import close_pools
from agentrft.redact import scrub_text
from agentrft.testing import free_port, wait_for_port

SERVER = str(Path(__file__).parent / "fixtures" / "mcp_server.py")
TOKEN = "tok-3f9a61c2e7b54d08"


def server(mode: str = "ok", **kw: Any) -> StdioServer:
    kw.setdefault("env", {"FAULTS_TOKEN": TOKEN, "PATH": os.environ.get("PATH", "")})
    return StdioServer(name="faults", command=sys.executable, args=(SERVER, mode), **kw)


class Env(MCPEnvironment):
    @tool
    def finish(self) -> str:
        """End the episode."""
        self.done = True
        return "finished"


class McpTask(Task):
    name = "mcp_test"

    def __init__(self, spec: StdioServer | HTTPServer) -> None:
        self.spec = spec

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> Env:
        return Env(servers=[self.spec])

    def user_prompt(self, instance: str) -> str:
        return "go"

    async def reward(self, env: Env, trajectory: Any) -> RewardResult:
        counter = await env.call_server("faults", "count", {"step": 0})
        return RewardResult(total=float(counter.split()[0].split("=")[1]), outcome="counted")


def script(*calls: tuple[str, dict[str, Any]]) -> ScriptedPolicy:
    def play(messages: list[Any], tools: list[dict[str, Any]]) -> Any:
        n = sum(1 for m in messages if m.role == "assistant")
        return call(*calls[n]) if n < len(calls) else call("finish", {})

    return ScriptedPolicy(play)


def play(spec: StdioServer | HTTPServer, *calls: tuple[str, dict[str, Any]]) -> Any:
    return asyncio.run(run_episode(McpTask(spec), "row", script(*calls)))


def replies(traj: Any) -> list[str]:
    return [m.content for m in traj.messages if m.role == "tool"]


def server_pids() -> set[int]:
    """Live processes running the fixture server (an orphan would show here)."""
    out = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
        except OSError:
            continue
        if SERVER.encode() in cmd and state != "Z":
            out.add(int(pid))
    return out


def test_server_tools_are_offered_beside_the_class_tools_and_called() -> None:
    traj = play(server(), ("count", {"step": 2}), ("count", {}), ("count", {"step": "x"}))
    names = [t["function"]["name"] for t in traj.tools]
    assert names[0] == "finish" and {"count", "hang", "big", "refuse"} <= set(names)
    schema = next(t for t in traj.tools if t["function"]["name"] == "count")["function"]
    assert schema["description"].startswith("Add `step` to the counter")
    assert schema["parameters"]["properties"]["step"]["type"] == "integer"
    got = replies(traj)
    assert got[0].startswith("counter=2") and got[1].startswith("counter=3")
    assert "invalid arguments for count: step: expected integer" in got[2]
    assert traj.stop_reason == "done"
    assert traj.reward.total == 3.0  # the reward read the server's state before it closed
    assert [f.kind for f in traj.failures] == ["invalid_arguments"]


def test_replies_refusals_images_and_oversized_results() -> None:
    spec = server(max_reply_chars=1000)
    traj = play(spec, ("refuse", {}), ("image", {}), ("big", {"chars": 5_000_000}))
    got = replies(traj)
    assert got[0] == "Error executing tool refuse: the warehouse is closed today"  # the SDK's words
    assert "returned image content" in got[1] and "faults" in got[1]
    assert (
        got[2].startswith("x" * 1000) and "[reply cut at 1,000 of 5,000,000 characters]" in got[2]
    )
    kinds = [f.kind for f in traj.failures]
    assert kinds == ["tool_error", "mcp_unsupported_content", "mcp_reply_truncated"]
    assert traj.reward.total == 0.0


def test_a_server_that_will_not_start_ends_the_episode_not_the_run() -> None:
    traj = play(server("fail_start"), ("count", {}))
    assert traj.reward.total == McpTask(server()).lowest_reward().total
    (failure,) = traj.failures
    assert failure.kind == "mcp_server_failed"
    assert "MCP server 'faults' failed to start" in failure.detail
    assert "INVENTORY_DB is not set" in failure.detail  # the server's own stderr says why
    assert not traj.turns


@pytest.mark.parametrize("mode", ["garbage", "slow_start"])
def test_a_server_that_never_answers_the_handshake_times_out(mode: str) -> None:
    t0 = time.perf_counter()
    traj = play(server(mode, start_timeout_s=3), ("count", {}))
    assert time.perf_counter() - t0 < 20
    (failure,) = traj.failures
    assert failure.kind == "mcp_server_failed"
    assert "did not start and list its tools within 3s" in failure.detail
    assert not server_pids()


def test_a_crash_mid_episode_fails_its_calls_and_the_episode_still_ends_with_a_reward() -> None:
    traj = play(server(), ("count", {}), ("crash", {}), ("count", {}))
    kinds = [f.kind for f in traj.failures]
    assert kinds[:2] == ["mcp_server_failed", "mcp_server_failed"], traj.failures
    assert "is gone" in replies(traj)[2]
    assert traj.stop_reason == "done"
    # The reward could not read the server: the reward's own failure, the lowest tier.
    assert traj.failures[-1].kind == "reward_error"
    assert TOKEN not in json.dumps(traj.model_dump(mode="json"))  # scrubbed stderr tail
    assert not server_pids()


def test_a_hung_call_times_out_and_the_episode_goes_on() -> None:
    t0 = time.perf_counter()
    traj = play(server(call_timeout_s=1), ("hang", {}), ("count", {}))
    assert time.perf_counter() - t0 < 15
    assert replies(traj)[0] == "Error: hang did not answer within 1s (MCP server 'faults')."
    assert replies(traj)[1].startswith("counter=1")
    assert [f.kind for f in traj.failures] == ["mcp_timeout"]
    assert not server_pids()


def test_secrets_given_to_a_server_never_reach_a_failure_or_a_log() -> None:
    traj = play(server(), ("secret", {}))
    text = replies(traj)[0]
    assert "auth failed" in text
    # The reply is the server's to write; what agentrft writes (files, logs) is scrubbed.
    assert TOKEN not in scrub_text(text)


def test_every_episode_gets_a_fresh_server_by_default_and_none_outlives_the_run() -> None:
    task = McpTask(server())
    trajs = asyncio.run(
        run_episodes(task, ["a", "b", "c"], script(("count", {}), ("count", {})), concurrency=3)
    )
    assert [t.reward.total for t in trajs] == [2.0, 2.0, 2.0]
    pids = {replies(t)[0].split("pid=")[1] for t in trajs}
    assert len(pids) == 3
    assert not server_pids()


def test_a_pool_reuses_reset_servers_and_close_pools_stops_them() -> None:
    task = McpTask(server(isolation="pool", reset_tool="reset"))

    async def run() -> tuple[list[Any], set[int]]:
        trajs = []
        for prompt in "abcd":  # one after another: one server serves them all
            trajs.append(await run_episode(task, prompt, script(("count", {}), ("count", {}))))
        alive = server_pids()
        await close_pools()
        return trajs, alive

    trajs, alive = asyncio.run(run())
    assert [t.reward.total for t in trajs] == [2.0] * 4  # reset between episodes
    assert len({replies(t)[0].split("pid=")[1] for t in trajs}) == 1
    assert len(alive) == 1 and "reset" not in [t["function"]["name"] for t in trajs[0].tools]
    assert not server_pids()


def test_a_pool_needs_a_reset_tool() -> None:
    with pytest.raises(ValueError, match="isolation='pool' reuses server processes"):
        server(isolation="pool")


def test_streamable_http_server_with_headers() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrft_inventory.server", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for_port(port, timeout_s=10, process=proc)
        spec = HTTPServer(name="inventory", url=url, headers={"Authorization": f"Bearer {TOKEN}"})

        class HttpEnv(MCPEnvironment):
            pass

        async def run() -> list[str]:
            env = HttpEnv(servers=[spec])
            await env.start()
            try:
                assert {"find_item", "check_stock"} <= set(env.tools)
                from agentrft.messages import ToolCall

                out = await env.call_tool(
                    ToolCall(
                        id="1", name="find_item", arguments=json.dumps({"query": "hinge large"})
                    )
                )
                return [out.content]
            finally:
                await env.close()

        (reply,) = asyncio.run(run())
        assert json.loads(reply) == {"items": [{"sku": "HNG-L", "name": "steel hinge, large"}]}
    finally:
        proc.terminate()
        proc.wait(10)


def test_malformed_json_rpc_mid_episode_fails_at_most_that_call() -> None:
    traj = play(server(call_timeout_s=3), ("garble", {}), ("count", {}))
    got = replies(traj)
    # The SDK drops the line it cannot parse; the call answers, or times out; either way
    # the episode goes on, and the server still serves the next call.
    assert got[0] == "answered after the garbage" or "did not answer within 3s" in got[0]
    assert got[1].startswith("counter=1")
    assert traj.stop_reason == "done" and traj.reward.total == 1.0
    assert not server_pids()


def test_a_50_mb_reply_ends_its_call_and_the_episode_goes_on() -> None:
    """50 MB takes the SDK's stdio transport longer than the call's limit to carry (a minute
    or more on 2 cores): the call times out, the episode ends with its reward, and the
    server, still writing, is stopped with it. (A large reply that arrives in time is cut:
    test_replies_refusals_images_and_oversized_results.)"""
    t0 = time.perf_counter()
    traj = play(server(call_timeout_s=5), ("big", {"chars": 50_000_000}))
    assert time.perf_counter() - t0 < 60
    got = replies(traj)
    assert got[0] == "Error: big did not answer within 5s (MCP server 'faults')."
    # The reward's own call to the server waits behind the 50 MB too: the lowest tier.
    assert [f.kind for f in traj.failures] == ["mcp_timeout", "reward_error"]
    assert traj.stop_reason == "done" and traj.reward.total == 0.0
    assert not server_pids()


def test_pooled_servers_stop_with_the_run_s_event_loop_without_close_pools() -> None:
    task = McpTask(server(isolation="pool", reset_tool="reset"))

    async def run() -> int:
        await run_episode(task, "a", script(("count", {})))
        return len(server_pids())  # the idle pooled server

    assert asyncio.run(run()) == 1
    time.sleep(0.5)
    assert not server_pids()  # asyncio.run cancelled its owner task, which stopped it
