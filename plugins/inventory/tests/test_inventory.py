"""The inventory task end to end: its tools come from a real MCP server process, the expert
is at the ceiling, wrong decisions score below right ones, and nothing of the answer reaches
the policy before the episode ends."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentrft_inventory import InventoryTask, make_scenarios

from agentrft import Message, ScriptedPolicy, call, run_episode, run_episodes
from agentrft.mcp.pool import close_pools

TASK = InventoryTask()


def rows(n: int, split: str = "validation", seed: int = 3) -> list[str]:
    return [r["prompt"] for r in TASK.make_dataset(split, n, seed)]


def test_expert_solves_every_row_through_the_mcp_server() -> None:
    trajs = asyncio.run(run_episodes(TASK, rows(8), TASK.expert(), concurrency=4))
    assert [t.reward.outcome for t in trajs] == ["right_action"] * 8
    tools = {t["function"]["name"] for t in trajs[0].tools}
    # The server's tools, less the ones the task keeps for itself.
    assert tools == {"find_item", "check_stock", "list_suppliers", "reserve_stock",
                     "create_purchase_order"}  # fmt: skip
    assert {t.reward.components["actions"] for t in trajs} == {1.0}


def _blunt(action: str) -> ScriptedPolicy:
    """Finds the item and reserves (or orders from the first supplier) without looking."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        replies = [json.loads(m.content) for m in messages if m.role == "tool" and m.content]
        text = next(m.content for m in messages if m.role == "user")
        item = next(w for w in ("hinge", "bracket", "screw", "handle", "runner", "lock", "pin")
                    if w in text)  # fmt: skip
        if not replies:
            return call("find_item", {"query": item})
        sku = replies[0]["items"][0]["sku"]
        if action == "reserve":
            return call("reserve_stock", {"sku": sku, "units": 1, "order_id": "SO-1"})
        if len(replies) == 1:
            return call("list_suppliers", {"sku": sku})
        first = replies[1]["suppliers"][0]["name"]
        return call("create_purchase_order", {"sku": sku, "supplier": first, "units": 5})

    return ScriptedPolicy(play)


def test_decisions_that_ignore_the_replies_score_below_the_expert() -> None:
    for action in ("reserve", "order"):
        trajs = asyncio.run(run_episodes(TASK, rows(6), _blunt(action), concurrency=3))
        outcomes = {t.reward.outcome for t in trajs}
        assert outcomes <= {"wrong_action", "nothing_done"}, (action, outcomes)
    nothing = asyncio.run(run_episode(TASK, rows(1)[0], ScriptedPolicy(lambda m, t: "hello")))
    assert nothing.reward.outcome == "nothing_done" and nothing.reward.total == -1.0


def test_hidden_values_never_reach_the_policy() -> None:
    prompts = rows(4) + rows(2, "train", 9)
    checked = 0
    for policy in (TASK.expert(), _blunt("reserve"), _blunt("order")):
        for traj in asyncio.run(run_episodes(TASK, prompts, policy, concurrency=3)):
            secrets = TASK.hidden_values(TASK.parse(traj.prompt))
            seen = [m.content or "" for m in traj.messages if m.role != "assistant"]
            seen.append(json.dumps(traj.tools))
            for secret in secrets:
                assert all(secret not in text for text in seen), (secret, traj.prompt)
            checked += 1
    assert checked == 18


def test_pooled_servers_give_the_same_outcomes_as_fresh_ones() -> None:
    pooled = InventoryTask(isolation="pool")

    async def run() -> list[Any]:
        out = [await run_episode(pooled, p, _blunt("reserve")) for p in rows(4)]
        out += [await run_episode(pooled, p, pooled.expert()) for p in rows(4)]
        await close_pools()
        return out

    trajs = asyncio.run(run())
    fresh = asyncio.run(run_episodes(TASK, rows(4), _blunt("reserve"), concurrency=4))
    assert [t.reward.outcome for t in trajs[:4]] == [t.reward.outcome for t in fresh]
    assert [t.reward.outcome for t in trajs[4:]] == ["right_action"] * 4
    # Each expert episode made exactly one reservation or order: nothing carried over.
    assert [t.reward.components["actions"] for t in trajs[4:]] == [1.0] * 4


def test_eval_and_reward_check_through_the_cli(tmp_path: Path) -> None:
    agentrft = str(Path(sys.executable).with_name("agentrft"))
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    out = tmp_path / "eval.json"
    r = subprocess.run(
        [
            agentrft,
            "eval",
            "--task",
            "inventory",
            "--policy",
            "expert",
            "--n",
            "6",
            "--report",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    (report,) = json.loads(out.read_text())["reports"]
    assert report["solve_rate"] == 1.0 and report["episodes"] == 6
    r = subprocess.run([agentrft, "reward", "check", "--task", "inventory"],
                       capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert r.returncode == 0 and "ok: reward order holds" in r.stdout


def test_scenarios_need_the_replies_to_decide() -> None:
    scenarios = make_scenarios(64, 5)
    actions = [s.expected()["action"] for s in scenarios]
    assert actions.count("reserve") == actions.count("order") == 32
    for s in scenarios:
        if s.expected()["action"] == "order":
            cheapest = min(s.suppliers, key=lambda x: x.unit_price)
            assert cheapest.lead_days > s.days  # "cheapest" alone is the wrong rule
