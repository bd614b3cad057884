"""Scripted policies: the expert, and the flawed behaviours `reward_samples` plays.

The expert knows nothing the model does not: it reads the policy and receipts from tool
replies, converts foreign amounts with `convert_currency`, applies the written rules, then
files the report. It is stateless (a function of the conversation), so one instance can
play any number of episodes at once.
"""

from __future__ import annotations

import json
from typing import Any

from agentrft import Message, ScriptedPolicy, ToolCall, call, replay_policy
from agentrft_expense_report.money import to_cents
from agentrft_expense_report.rules import Decision, adjudicate
from agentrft_expense_report.trip import Policy, Receipt


class _Seen:
    """What the tool replies so far have shown."""

    def __init__(self, messages: list[Message]) -> None:
        calls: dict[str, ToolCall] = {}
        for m in messages:
            for c in m.tool_calls or []:
                calls[c.id] = c
        self.policy: dict[str, Any] | None = None
        self.summaries: list[dict[str, Any]] | None = None
        self.details: dict[str, dict[str, Any]] = {}
        self.usd: dict[tuple[int, str, str], int] = {}
        self.done: set[str] = set()  # receipts with a line item or flag
        for m in messages:
            if m.role != "tool" or m.tool_call_id not in calls:
                continue
            c = calls[m.tool_call_id]
            text = m.content or ""
            if text.startswith("Error"):
                continue
            if c.name in ("add_line_item", "flag_receipt"):
                self.done.add(json.loads(c.arguments)["receipt_id"].upper())
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                continue
            if c.name == "get_policy":
                self.policy = data
            elif c.name == "list_receipts":
                self.summaries = data
            elif c.name == "get_receipt":
                self.details[data["id"]] = data
            elif c.name == "convert_currency":
                key = (to_cents(data["amount"]), data["currency"], data["date"])
                self.usd[key] = to_cents(data["usd"])


def _policy(data: dict[str, Any]) -> Policy:
    # No rate table: conversions come from convert_currency replies, as a model's would.
    return Policy(
        category_map=data["category_map"],
        non_reimbursable=data["non_reimbursable_categories"],
        per_receipt_caps_cents={k: to_cents(v) for k, v in data["per_receipt_caps_usd"].items()},
        daily_meal_cap_cents=to_cents(data["daily_meal_cap_usd"]),
        receipt_required_over_cents=to_cents(data["receipt_required_over_usd"]),
    )


def _receipt(d: dict[str, Any]) -> Receipt:
    return Receipt(
        id=d["id"],
        merchant=d["merchant"],
        date=d["date"],
        amount_cents=to_cents(d["amount"]),
        currency=d["currency"],
        category=d["category"],
        notes=d["notes"],
        itemized=d["itemized_receipt_attached"],
    )


def _decide(seen: _Seen) -> tuple[list[Decision], list[tuple[int, str, str]]]:
    """The decisions, or the conversions still needed to make them."""
    assert seen.policy is not None
    missing: list[tuple[int, str, str]] = []

    def convert(cents: int, currency: str, date: str) -> int:
        if currency == "USD":
            return cents
        key = (cents, currency, date)
        if key not in seen.usd:
            if key not in missing:
                missing.append(key)
            return 0
        return seen.usd[key]

    trip = seen.policy["trip"]
    receipts = [_receipt(seen.details[s["id"]]) for s in seen.summaries or []]
    decisions = adjudicate(receipts, _policy(seen.policy), trip["start"], trip["end"], convert)
    return decisions, missing


def expert_step(
    messages: list[Message], tools: list[dict[str, Any]], *, mistake: str | None = None
) -> ToolCall | list[ToolCall]:
    """The expert's next move. `mistake` makes a deliberately flawed variant for tests:
    "drop_item" leaves out one line item, "no_flags" never flags a receipt."""
    seen = _Seen(messages)
    first = []
    if seen.policy is None:
        first.append(call("get_policy"))
    if seen.summaries is None:
        first.append(call("list_receipts"))
    if first:
        return first
    unread = [s["id"] for s in seen.summaries or [] if s["id"] not in seen.details]
    if unread:
        return [call("get_receipt", {"receipt_id": rid}) for rid in unread]
    decisions, missing = _decide(seen)
    if missing:
        return [
            call("convert_currency", {"amount": c / 100, "currency": cur, "date": date})
            for c, cur, date in missing
        ]
    moves = []
    claimed = [d for d in decisions if d.claimed]
    for d in decisions:
        if d.receipt_id in seen.done:
            continue
        if d.claimed:
            if mistake == "drop_item" and d is claimed[-1]:
                continue
            args = {"receipt_id": d.receipt_id, "category": d.category}
            moves.append(call("add_line_item", {**args, "amount_usd": d.amount_cents / 100}))
        elif mistake != "no_flags":
            moves.append(call("flag_receipt", {"receipt_id": d.receipt_id, "reason": d.reason}))
    return moves or call("submit_report")


def expert_policy() -> ScriptedPolicy:
    """Solves every generated instance (tested over hundreds of seeds)."""
    return ScriptedPolicy(expert_step, name="expert")


def flawed_expert(mistake: str) -> ScriptedPolicy:
    """The expert with one deliberate mistake ("drop_item" or "no_flags"): partly correct."""
    return ScriptedPolicy(
        lambda messages, tools: expert_step(messages, tools, mistake=mistake),
        name=f"expert_{mistake}",
    )


def clumsy_expert() -> ScriptedPolicy:
    """Makes tool errors and wasted calls first, then solves: correct, with poor shaping."""

    def step(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        turn = sum(1 for m in messages if m.role == "assistant")
        if turn == 0:
            return [
                call("get_receipt", {"receipt_id": "R99"}),
                call("convert_currency", {"amount": 10, "currency": "XXX", "date": "2026-01-01"}),
                call("add_line_item", {"receipt_id": "R01", "category": "snacks", "amount_usd": 1}),
                call("file_report", {}),
                call("get_policy"),
                call("get_policy"),
                call("get_policy"),
            ]
        return expert_step(messages, tools)

    return ScriptedPolicy(step, name="clumsy_expert")


def naive_policy() -> ScriptedPolicy:
    """Claims every mapped receipt at its full converted amount, flags nothing, submits."""

    def step(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        seen = _Seen(messages)
        if seen.policy is None or seen.summaries is None:
            return [call("get_policy"), call("list_receipts")]
        if seen.done:
            return call("submit_report")
        rates = seen.policy["exchange_rates_usd_per_unit"]
        moves = []
        for s in seen.summaries:
            category = seen.policy["category_map"].get(s["category"])
            if category is None:
                continue
            rate = 1.0 if s["currency"] == "USD" else float(rates[s["currency"]][s["date"]])
            amount = round(float(s["amount"]) * rate, 2)
            args = {"receipt_id": s["id"], "category": category, "amount_usd": amount}
            moves.append(call("add_line_item", args))
        return moves or call("submit_report")

    return ScriptedPolicy(step, name="naive")


def submit_at_once() -> ScriptedPolicy:
    """Submits an empty report on the first turn."""
    return replay_policy([call("submit_report")], name="submit_at_once")


def reader_policy() -> ScriptedPolicy:
    """Reads the policy and receipts, then stops talking: never submits."""
    return replay_policy(
        [[call("get_policy"), call("list_receipts")], "I have read everything."], name="reader"
    )


def silent_policy() -> ScriptedPolicy:
    """Never calls a tool."""
    return replay_policy(["I would rather not file expense reports."], name="silent")


def invalid_caller() -> ScriptedPolicy:
    """Only ever makes calls that fail (unknown tool, bad arguments)."""
    return replay_policy(
        [[call("file_report", {}), call("get_receipt", {"id": "R01"})], "Done."],
        name="invalid_caller",
    )
