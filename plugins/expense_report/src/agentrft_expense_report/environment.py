"""The expense-report workflow: read the policy and receipts, build the report, submit it.

Tool replies show only public data (receipts, policy, conversions the model asked for) and
acknowledge the model's own actions. The expected claims live in `self.expected` and are
used by `grade()` after the episode; no reply ever computes or hints at them.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from agentrft import Environment, ToolCall, ToolError, tool
from agentrft_expense_report.money import fmt, to_cents
from agentrft_expense_report.rules import Decision, adjudicate
from agentrft_expense_report.trip import Trip

ReportCategory = Literal["airfare", "lodging", "meals", "ground_transport", "conference"]
RejectReason = Literal[
    "outside_trip", "duplicate", "non_reimbursable", "missing_receipt", "daily_meal_cap"
]

#: Read-only tools: calling one again with the same arguments is a wasted call.
READ_TOOLS = frozenset({"list_receipts", "get_receipt", "get_policy", "convert_currency"})


@dataclass(frozen=True)
class Grade:
    """How the report compares with the ground truth (computed after the episode)."""

    submitted: bool
    valid_calls: int
    wasted_calls: int
    items_expected: int
    items_claimed: int
    items_correct: int  # right receipt, category and amount (to the cent)
    flags_expected: int
    flags_made: int
    flags_correct: int  # right receipt and reason
    expected_total_cents: int
    claimed_total_cents: int

    @property
    def precision(self) -> float:
        return self.items_correct / self.items_claimed if self.items_claimed else 0.0

    @property
    def recall(self) -> float:
        return self.items_correct / self.items_expected if self.items_expected else 1.0

    @property
    def item_f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def flag_f1(self) -> float:
        if self.flags_expected == 0 and self.flags_made == 0:
            return 1.0
        denom = self.flags_expected + self.flags_made
        return 2 * self.flags_correct / denom

    @property
    def amount_accuracy(self) -> float:
        """1 when the report's total matches the expected total, falling to 0 at 100% off."""
        expected = self.expected_total_cents
        if expected == 0:
            return 1.0 if self.claimed_total_cents == 0 else 0.0
        err = abs(self.claimed_total_cents - expected) / expected
        return max(0.0, 1.0 - err)

    @property
    def correct(self) -> bool:
        """Every line item and every flag exactly right."""
        return (
            self.items_correct == self.items_expected == self.items_claimed
            and self.flags_correct == self.flags_expected == self.flags_made
        )


class ExpenseReportEnv(Environment):
    """One trip's receipts, the policy, and the report being built."""

    def __init__(self, trip: Trip) -> None:
        super().__init__()
        self.trip = trip
        self.expected: dict[str, Decision] = {
            d.receipt_id: d for d in adjudicate(trip.receipts, trip.policy, trip.start, trip.end)
        }
        self.line_items: dict[str, tuple[str, int]] = {}  # receipt id -> (category, cents)
        self.flags: dict[str, str] = {}  # receipt id -> reason
        self.submitted = False
        self.valid_calls = 0
        self.wasted_calls = 0
        self._reads: set[tuple[str, str]] = set()

    # -- bookkeeping -----------------------------------------------------------------
    def _ok(self, name: str, **args: Any) -> None:
        """Count a successful call; an identical repeat of a read-only call is wasted."""
        self.valid_calls += 1
        if name in READ_TOOLS:
            key = (name, json.dumps(args, sort_keys=True, default=str))
            if key in self._reads:
                self.wasted_calls += 1
            self._reads.add(key)

    def _receipt(self, receipt_id: str):
        r = self.trip.receipt(receipt_id.strip().upper())
        if r is None:
            ids = ", ".join(x.id for x in self.trip.receipts)
            raise ToolError(f"Error: no receipt {receipt_id!r}. Receipt ids: {ids}.")
        return r

    # -- tools -----------------------------------------------------------------------
    @tool
    def list_receipts(self) -> str:
        """List every receipt of the trip (id, merchant, date, amount, currency, category)."""
        self._ok("list_receipts")
        return json.dumps([r.summary() for r in self.trip.receipts])

    @tool
    def get_receipt(self, receipt_id: str) -> str:
        """Show one receipt in full, with its notes and whether an itemized receipt is attached.

        Args:
            receipt_id: The receipt's id, e.g. "R03".
        """
        r = self._receipt(receipt_id)
        self._ok("get_receipt", receipt_id=r.id)
        return json.dumps(r.detail())

    @tool
    def get_policy(self) -> str:
        """Show the trip dates and the company travel policy: category map, caps, rates, rules."""
        self._ok("get_policy")
        trip = {
            "traveler": self.trip.traveler,
            "destinations": list(self.trip.destinations),
            "start": self.trip.start,
            "end": self.trip.end,
        }
        return json.dumps({"trip": trip, **self.trip.policy.public()})

    @tool
    def convert_currency(self, amount: float, currency: str, date: str) -> str:
        """Convert an amount to USD at the policy's exchange rate for a date (rounded to the cent).

        Args:
            amount: The amount in `currency`, e.g. 84.50.
            currency: Three-letter currency code, e.g. "EUR".
            date: The receipt's date, yyyy-mm-dd.
        """
        currency = currency.strip().upper()
        try:
            cents = to_cents(amount)
        except ValueError as exc:  # NaN, an infinity, too large
            raise ToolError(f"Error: amount: {exc}; send a number such as 84.50.") from None
        if cents < 0:
            raise ToolError("Error: amount must not be negative.")
        try:
            rate = self.trip.policy.rate(currency, date.strip())
        except KeyError:
            known = ", ".join(["USD", *sorted(self.trip.policy.rates)])
            raise ToolError(
                f"Error: no exchange rate for {currency} on {date!r}. Currencies: {known}; "
                "dates are yyyy-mm-dd (see get_policy for the rate table)."
            ) from None
        usd = self.trip.policy.to_usd(cents, currency, date.strip())
        self._ok("convert_currency", amount=fmt(cents), currency=currency, date=date.strip())
        return json.dumps(
            {
                "amount": fmt(cents),
                "currency": currency,
                "date": date.strip(),
                "rate": str(rate),
                "usd": fmt(usd),
            }
        )

    @tool
    def add_line_item(self, receipt_id: str, category: ReportCategory, amount_usd: float) -> str:
        """Add a line item to the report for one receipt.

        Args:
            receipt_id: The receipt the line item claims, e.g. "R03".
            category: The report category (see category_map in get_policy).
            amount_usd: The amount claimed in USD, after the policy's adjustments and caps.
        """
        r = self._receipt(receipt_id)
        if r.id in self.line_items:
            raise ToolError(
                f"Error: {r.id} already has a line item; call remove_line_item first to change it."
            )
        if r.id in self.flags:
            raise ToolError(
                f"Error: {r.id} is flagged ({self.flags[r.id]}); call remove_line_item to clear "
                "the flag before claiming it."
            )
        try:
            cents = to_cents(amount_usd)
        except ValueError as exc:  # NaN, an infinity, too large
            raise ToolError(f"Error: amount_usd: {exc}; send a number such as 84.50.") from None
        if cents <= 0:
            raise ToolError("Error: amount_usd must be positive.")
        self.line_items[r.id] = (category, cents)
        self._ok("add_line_item")
        return f"Added a {category} line item for {r.id}."

    @tool
    def remove_line_item(self, receipt_id: str) -> str:
        """Remove the line item (or the flag) recorded for a receipt.

        Args:
            receipt_id: The receipt whose line item or flag to remove.
        """
        r = self._receipt(receipt_id)
        if r.id in self.line_items:
            del self.line_items[r.id]
            what = "line item"
        elif r.id in self.flags:
            del self.flags[r.id]
            what = "flag"
        else:
            raise ToolError(f"Error: {r.id} has no line item or flag to remove.")
        self._ok("remove_line_item")
        return f"Removed the {what} for {r.id}."

    @tool
    def flag_receipt(self, receipt_id: str, reason: RejectReason) -> str:
        """Reject a receipt: it is not claimed, and the report records why.

        Args:
            receipt_id: The receipt to reject, e.g. "R05".
            reason: Why, as the policy's rules name it.
        """
        r = self._receipt(receipt_id)
        if r.id in self.line_items:
            raise ToolError(
                f"Error: {r.id} has a line item; call remove_line_item first to reject it."
            )
        self.flags[r.id] = reason
        self._ok("flag_receipt")
        return f"Flagged {r.id}: {reason}."

    @tool
    def submit_report(self) -> str:
        """Submit the report as it stands. This ends the task; nothing can change afterwards."""
        self.submitted = True
        self.done = True
        self._ok("submit_report")
        return (
            f"Report submitted with {len(self.line_items)} line item(s) and "
            f"{len(self.flags)} flagged receipt(s)."
        )

    def recover(self, text: str) -> list[ToolCall]:
        """Calls written as text: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`,
        the same JSON bare, or `get_receipt(receipt_id="R01")`. Each recovered call counts
        as a tool error in the reward (failure kind plain_text_call)."""
        return recover_calls(text, set(self.tools))

    def on_text_reply(self, text: str) -> str | None:
        # One reminder, then a text reply ends the episode (unsubmitted).
        if any(kind == "text_reply" for kind, _ in self.events):
            return None
        self.note("text_reply", text[:200])
        return "Please continue with tool calls. When the report is complete, call submit_report."

    # -- grading ---------------------------------------------------------------------
    def grade(self) -> Grade:
        """Compare the report with the ground truth (for rewards, after the episode)."""
        exp_items = {rid: d for rid, d in self.expected.items() if d.claimed}
        exp_flags = {rid: d.reason for rid, d in self.expected.items() if not d.claimed}
        items_correct = sum(
            1
            for rid, (cat, cents) in self.line_items.items()
            if rid in exp_items
            and exp_items[rid].category == cat
            and exp_items[rid].amount_cents == cents
        )
        flags_correct = sum(1 for rid, why in self.flags.items() if exp_flags.get(rid) == why)
        return Grade(
            submitted=self.submitted,
            valid_calls=self.valid_calls,
            wasted_calls=self.wasted_calls,
            items_expected=len(exp_items),
            items_claimed=len(self.line_items),
            items_correct=items_correct,
            flags_expected=len(exp_flags),
            flags_made=len(self.flags),
            flags_correct=flags_correct,
            expected_total_cents=sum(d.amount_cents for d in exp_items.values()),
            claimed_total_cents=sum(c for _, c in self.line_items.values()),
        )


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
# Linear: each match scans only up to the next parenthesis, and a word starts each scan.
_PY_CALL = re.compile(r"\b([a-z_]+)\(([^()]*)\)")


def recover_calls(text: str, tool_names: set[str]) -> list[ToolCall]:
    """Tool calls a model wrote as plain text, for known tool names only."""
    blobs = tagged_blocks(text) or [text.strip()]
    calls = []
    for blob in blobs:
        try:
            data = json.loads(blob)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deeply
            continue
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item, dict) or item.get("name") not in tool_names:
                continue
            args = item.get("arguments", item.get("parameters", {}))
            raw = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(id="", name=item["name"], arguments=raw))
    if calls:
        return calls
    for name, inner in _PY_CALL.findall(text):
        if name not in tool_names:
            continue
        try:
            node = ast.parse(f"f({inner})", mode="eval").body
            assert isinstance(node, ast.Call) and not node.args
            kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except (SyntaxError, ValueError, AssertionError, RecursionError, MemoryError):
            # MemoryError and RecursionError: the parser's limits on deeply nested input
            continue
        calls.append(ToolCall(id="", name=name, arguments=json.dumps(kwargs)))
    return calls


def tagged_blocks(text: str) -> list[str]:
    r"""The stripped contents of each `<tool_call>...</tool_call>` block, in order.

    What `re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.DOTALL)` returns, in
    linear time: that pattern rescans the rest of the text from every unclosed tag (16 s
    on a 176 KB reply, against the episode's budget) and backtracks over long whitespace.
    """
    blocks = []
    pos = 0
    while (start := text.find(_OPEN, pos)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break  # no closing tag after this one, so none after any later opening tag
        blocks.append(text[start + len(_OPEN) : end].strip())
        pos = end + len(_CLOSE)
    return blocks
