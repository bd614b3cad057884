"""`agentrft mcp serve`: a task's episode played by an MCP client, over stdio and streamable
HTTP, exactly as the agent loop would play it (the task's tools, limits and reward), with
the row's hidden values shown only once the episode is over."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

from agentrft.plugins import resolve_task  # noqa: E402
from agentrft.testing import free_port, wait_for_port  # noqa: E402

AGENTRFT = str(Path(sys.executable).with_name("agentrft"))


def hidden(task_name: str, row: int) -> list[str]:
    task = resolve_task(task_name)
    prompt = task.make_dataset("validation", None, 42)[row]["prompt"]
    return task.hidden_values(task.parse(prompt))


async def play(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Connect, read what the player sees, make `calls`; returns what was seen."""
    async with mcp.Client(server, mode="legacy") as client:
        seen: dict[str, Any] = {"instructions": client.instructions or ""}
        seen["tools"] = [t.model_dump(mode="json") for t in (await client.list_tools()).tools]
        briefing = await client.read_resource("agentrft://episode/briefing")
        seen["briefing"] = briefing.contents[0].text
        before = await client.read_resource("agentrft://episode/reward")
        seen["reward_before"] = before.contents[0].text
        seen["replies"] = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            seen["replies"].append((result.content[0].text, result.is_error))
        after = await client.read_resource("agentrft://episode/reward")
        seen["reward_after"] = after.contents[0].text
        return seen


def test_ticket_triage_played_over_stdio_scores_and_hides_the_label_until_the_end() -> None:
    server = mcp.StdioServerParameters(
        command=AGENTRFT, args=["mcp", "serve", "--task", "ticket_triage", "--row", "3"]
    )

    async def run() -> dict[str, Any]:
        async with mcp.Client(server, mode="legacy") as client:
            text = client.instructions or ""
            tid = next(w.strip(".?,") for w in text.split() if w.startswith("T-"))
            read = await client.call_tool("read_ticket", {"ticket_id": tid})
            ticket = read.content[0].text
        from agentrft_ticket_triage.task import classify

        team = classify(ticket.split("\n", 2)[-1])
        return await play(
            server,
            [("read_ticket", {"ticket_id": tid}), ("route_ticket", {"ticket_id": tid, "queue": team}),
             ("read_ticket", {"ticket_id": tid})],
        )  # fmt: skip

    seen = asyncio.run(run())
    names = [t["name"] for t in seen["tools"]]
    assert names == ["read_ticket", "route_ticket", "end_episode"]
    assert "T-" in seen["instructions"] and seen["instructions"] == seen["briefing"]
    assert "[system] You are the support triage agent" in seen["briefing"]
    assert seen["reward_before"] == "The episode is not over yet."
    route_reply, is_error = seen["replies"][1]
    assert (
        not is_error
        and "The episode is over: reward +1.000, outcome right_team (solved)" in route_reply
    )
    assert seen["replies"][2][0].startswith("The episode is over")  # later calls: the result
    assert seen["reward_after"].startswith("The episode is over: reward +1.000")
    secrets = hidden("ticket_triage", 3)
    before_end = [seen["instructions"], seen["briefing"], json.dumps(seen["tools"]),
                  seen["replies"][0][0]]  # fmt: skip
    for secret in secrets:
        assert all(secret not in text for text in before_end)
    assert any(secret in seen["reward_after"] for secret in secrets)  # shown once over


def test_an_mcp_backed_task_served_over_http_ends_by_end_episode() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [AGENTRFT, "mcp", "serve", "--task", "inventory", "--row", "0", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, timeout_s=30, process=proc)
        seen = asyncio.run(
            play(
                f"http://127.0.0.1:{port}/mcp",
                [("find_item", {"query": "hinge"}), ("end_episode", {})],
            )
        )
    finally:
        proc.terminate()
        proc.wait(20)
    names = {t["name"] for t in seen["tools"]}
    assert {"find_item", "check_stock", "end_episode"} <= names
    assert not names & {"load_scenario", "audit", "reset"}  # the task's hidden tools
    assert "steel hinge" in seen["replies"][0][0]
    assert "outcome nothing_done" in seen["replies"][1][0]
    for secret in hidden("inventory", 0):
        assert secret not in seen["briefing"] + json.dumps(seen["tools"]) + seen["replies"][0][0]


def test_serve_refuses_a_row_out_of_range() -> None:
    r = subprocess.run(
        [AGENTRFT, "mcp", "serve", "--task", "ticket_triage", "--row", "100000"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 1
    assert "--row 100000 is out of range" in r.stderr


@pytest.mark.parametrize("row", [4, 5])  # enough stock (reserve), short (order)
def test_the_inventory_expert_plays_through_mcp_serve_and_is_right(row: int) -> None:
    """The MCP-backed task served over stdio, played by a client that follows the expert's
    rule from the replies it reads: the task's own reward says right_action."""
    from agentrft_inventory.task import _request

    from agentrft import Message

    server = mcp.StdioServerParameters(
        command=AGENTRFT, args=["mcp", "serve", "--task", "inventory", "--row", str(row)]
    )

    async def run() -> str:
        async with mcp.Client(server, mode="legacy") as client:
            text = client.instructions or ""
            request = next(p for p in text.split("\n\n") if p.startswith("[user] "))[7:]
            order, units, days, item = _request([Message(role="user", content=request)])

            async def tool(name: str, **args: Any) -> Any:
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content[0].text
                return result.content[0].text

            sku = json.loads(await tool("find_item", query=item))["items"][0]["sku"]
            available = json.loads(await tool("check_stock", sku=sku))["available"]
            if available >= units:
                assert row % 2 == 0
                return str(await tool("reserve_stock", sku=sku, units=units, order_id=order))
            assert row % 2 == 1
            offers = json.loads(await tool("list_suppliers", sku=sku))["suppliers"]
            best = min((s for s in offers if s["lead_days"] <= days), key=lambda s: s["unit_price"])
            return str(await tool("create_purchase_order", sku=sku, supplier=best["name"],
                                  units=units - available))  # fmt: skip

    last = asyncio.run(run())
    assert "The episode is over: reward +1.000, outcome right_action (solved)" in last
