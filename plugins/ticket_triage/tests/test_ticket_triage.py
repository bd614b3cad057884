"""ticket_triage: rows, episodes, tiers, the withheld warm-up copy and leaks."""

import asyncio
import json
from collections import Counter

import pytest
from agentrft_ticket_triage import QUEUES, TicketTriageTask, make_tickets
from agentrft_ticket_triage.task import SYSTEM_PROMPT, WITHHELD_TEXT, guessing_triager
from agentrft_ticket_triage.tickets import TEMPLATES

from agentrft import (
    TaskInputError,
    assert_reward_order,
    call,
    replay_policy,
    run_episode,
    run_episodes,
)
from agentrft.plugins import load_plugins

TASK = TicketTriageTask()


def rows(split, n, seed=0):
    return [r["prompt"] for r in TASK.make_dataset(split, n, seed)]


def test_the_task_is_found_through_its_entry_point():
    assert load_plugins().task_classes()["ticket_triage"] is TicketTriageTask


def test_every_team_is_equally_common_and_rows_are_deterministic():
    for split in ("train", "validation", "test"):
        tickets = [json.loads(p) for p in rows(split, 64)]
        assert Counter(t["queue"] for t in tickets) == {q: 16 for q in QUEUES}
        assert rows(split, 64) == rows(split, 64)
        assert rows(split, 64, seed=1) != rows(split, 64)


def test_held_out_splits_use_texts_the_training_split_never_saw():
    for queue, by_split in TEMPLATES.items():
        train = {s for s, _ in by_split["train"]} | {b for _, b in by_split["train"]}
        for split in ("validation", "test"):
            held = {s for s, _ in by_split[split]} | {b for _, b in by_split[split]}
            assert not train & held, (queue, split)
    train_subjects = {json.loads(p)["subject"] for p in rows("train", 512)}
    val_subjects = {json.loads(p)["subject"] for p in rows("validation", 64)}
    assert not train_subjects & val_subjects


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ("not json", "JSON tickets"),
        (json.dumps({"id": "x"}), "JSON tickets"),
        (json.dumps({**make_tickets("train", 1, 0)[0].as_row(), "queue": "sales"}), "sales"),
        (json.dumps({**make_tickets("train", 1, 0)[0].as_row(), "ticket_id": "42"}), "T-10234"),
    ],
)
def test_bad_rows_are_refused_with_the_fix(row, match):
    with pytest.raises(TaskInputError, match=match):
        TASK.parse(row)


def test_the_keyword_expert_routes_almost_every_ticket_right():
    for split, n in (("train", 128), ("validation", 64), ("test", 64)):
        trajs = asyncio.run(run_episodes(TASK, rows(split, n), TASK.expert()))
        solved = sum(t.solved for t in trajs) / n
        assert solved >= 0.9, (split, solved)
        assert all(t.stop_reason == "done" and len(t.turns) == 2 for t in trajs)


def test_each_outcome_lands_in_its_tier():
    ticket = make_tickets("validation", 1, 0)[0]
    prompt = json.dumps(ticket.as_row())
    wrong = next(q for q in QUEUES if q != ticket.queue)
    read = call("read_ticket", {"ticket_id": ticket.ticket_id})

    def play(*replies):
        return asyncio.run(run_episode(TASK, prompt, replay_policy(list(replies))))

    right = play(read, call("route_ticket", {"ticket_id": ticket.ticket_id, "queue": ticket.queue}))
    assert right.reward.outcome == "right_team" and right.solved and right.reward.total == 1.0
    miss = play(read, call("route_ticket", {"ticket_id": ticket.ticket_id, "queue": wrong}))
    assert miss.reward.outcome == "wrong_team" and miss.reward.total == 0.0
    silent = play(read, "I think this is a payments question.")
    assert silent.reward.outcome == "not_routed" and silent.reward.total == -1.0
    # Unread, a right guess still counts (the outcome is what is scored), and is noted.
    blind = play(call("route_ticket", {"ticket_id": ticket.ticket_id, "queue": ticket.queue}))
    assert blind.solved and "routed_unread" in blind.failure_kinds


def test_bad_calls_get_a_tool_error_and_the_episode_goes_on():
    ticket = make_tickets("train", 1, 3)[0]
    prompt = json.dumps(ticket.as_row())
    traj = asyncio.run(run_episode(TASK, prompt, replay_policy([
        call("read_ticket", {"ticket_id": "T-1"}),
        call("route_ticket", {"ticket_id": ticket.ticket_id, "queue": "sales"}),
        call("route_ticket", {"ticket_id": ticket.ticket_id, "queue": ticket.queue}),
    ])))  # fmt: skip
    replies = [m.content for m in traj.messages if m.role == "tool"]
    assert "no ticket 'T-1'" in replies[0] and ticket.ticket_id in replies[0]
    assert "unknown team 'sales'" in replies[1] and "payments" in replies[1]
    assert traj.solved and len(traj.turns) == 3


def test_the_withheld_copy_hides_what_decides_the_team_and_its_expert_guesses():
    held = TASK.withheld()
    assert held.name == TASK.name and held.tiers is TASK.tiers
    tickets = make_tickets("train", 400, 0)
    prompts = [json.dumps(t.as_row()) for t in tickets]
    trajs = asyncio.run(run_episodes(held, prompts, held.expert()))
    for ticket, traj in zip(tickets, trajs, strict=True):
        reply = next(m.content for m in traj.messages if m.role == "tool")
        assert ticket.subject not in reply and ticket.body not in reply
        assert reply.count(WITHHELD_TEXT) == 2 and ticket.ticket_id in reply
        assert traj.stop_reason == "done"
    rate = sum(t.solved for t in trajs) / len(trajs)
    assert 0.18 < rate < 0.32  # chance is 1 in 4
    # The guesses do not depend on the ticket: the same seed routes the same sequence.
    again = asyncio.run(run_episodes(held, prompts[:20], guessing_triager(), concurrency=1))
    first = asyncio.run(run_episodes(held, prompts[20:40], guessing_triager(), concurrency=1))
    teams = [[c.name for c in t.turns[-1].assistant.tool_calls] for t in again]
    assert teams == [[c.name for c in t.turns[-1].assistant.tool_calls] for t in first]


def test_the_label_and_the_ticket_text_never_reach_the_policy_early():
    for prompt in rows("validation", 64) + rows("train", 64):
        instance = TASK.parse(prompt)
        traj = asyncio.run(run_episode(TASK, prompt, TASK.expert()))
        before_read = [m for m in traj.messages if m.role in ("system", "user")]
        for m in traj.messages:
            for secret in TASK.hidden_values(instance):
                assert secret not in (m.content or ""), (m.role, secret)
        for m in before_read:
            assert instance.body not in (m.content or "") and prompt not in (m.content or "")
        # After routing, the reply only echoes the team the policy chose.
        last = [m for m in traj.messages if m.role == "tool"][-1].content
        assert "right" not in last.lower() and "correct" not in last.lower()
    assert "{" not in SYSTEM_PROMPT  # no row serialisation in the system prompt


def test_the_reward_orders_its_tiers():
    assert_reward_order(TASK)
