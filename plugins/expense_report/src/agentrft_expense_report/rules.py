"""The policy's rules as code: which receipts to claim, in which category, for how much.

`adjudicate` is the single source of the ground truth. The environment runs it with the
policy's rate table; the scripted expert runs it on what the tools told it, with the
conversions `convert_currency` returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agentrft_expense_report.money import to_cents
from agentrft_expense_report.trip import Policy, Receipt

#: convert(cents, currency, date) -> USD cents
Converter = Callable[[int, str, str], int]

# "Includes alcohol: 18.00 EUR", "Personal item: 9.50" (case-insensitive, amount in the
# receipt's currency).
_PORTION = re.compile(
    r"(?:includes\s+)?(alcohol|personal item)s?\s*:\s*([0-9]+(?:\.[0-9]{1,2})?)", re.IGNORECASE
)


@dataclass(frozen=True)
class Decision:
    """The right treatment of one receipt."""

    receipt_id: str
    category: str | None  # report category when claimed
    amount_cents: int  # USD claimed; 0 when rejected
    reason: str | None  # reject reason when rejected

    @property
    def claimed(self) -> bool:
        return self.reason is None


def non_reimbursable_portion(notes: str) -> int:
    """Cents (in the receipt's currency) the notes say are not reimbursable."""
    return sum(to_cents(m.group(2)) for m in _PORTION.finditer(notes))


def _id_key(receipt_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in receipt_id if ch.isdigit())
    return (int(digits) if digits else 0, receipt_id)


def adjudicate(
    receipts: Iterable[Receipt],
    policy: Policy,
    start: str,
    end: str,
    convert: Converter | None = None,
) -> list[Decision]:
    """Apply rules 1-7 of `trip.RULES` to every receipt; returns decisions in id order."""
    convert = convert or policy.to_usd
    ordered = sorted(receipts, key=lambda r: _id_key(r.id))
    decisions: dict[str, Decision] = {}
    seen: set[tuple[str, str, int, str]] = set()
    meal_left: dict[str, int] = {}
    for r in ordered:
        key = (r.merchant, r.date, r.amount_cents, r.currency)
        duplicate = key in seen
        seen.add(key)
        if not start <= r.date <= end:
            decisions[r.id] = Decision(r.id, None, 0, "outside_trip")
            continue
        if duplicate:
            decisions[r.id] = Decision(r.id, None, 0, "duplicate")
            continue
        if r.category in policy.non_reimbursable or r.category not in policy.category_map:
            decisions[r.id] = Decision(r.id, None, 0, "non_reimbursable")
            continue
        gross = convert(r.amount_cents, r.currency, r.date)
        if gross > policy.receipt_required_over_cents and not r.itemized:
            decisions[r.id] = Decision(r.id, None, 0, "missing_receipt")
            continue
        category = policy.category_map[r.category]
        portion = non_reimbursable_portion(r.notes)
        net = r.amount_cents - portion
        amount = gross if portion == 0 else convert(net, r.currency, r.date)
        cap = policy.per_receipt_caps_cents.get(category)
        if cap is not None:
            amount = min(amount, cap)
        if category == "meals":
            left = meal_left.get(r.date, policy.daily_meal_cap_cents)
            amount = min(amount, left)
            meal_left[r.date] = left - amount
            if amount <= 0:
                decisions[r.id] = Decision(r.id, None, 0, "daily_meal_cap")
                continue
        decisions[r.id] = Decision(r.id, category, amount, None)
    return [decisions[r.id] for r in ordered]
