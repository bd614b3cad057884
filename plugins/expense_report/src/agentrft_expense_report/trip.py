"""The data of one instance: a trip's receipts and the company policy that applies to it.

Everything here is public: the policy sees it through the tools. The answer (which items
to claim, for how much) is derived from it by `rules.adjudicate` and never shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentrft_expense_report.money import convert_cents, fmt

HOME_CURRENCY = "USD"

#: Report categories a line item may use.
REPORT_CATEGORIES = ("airfare", "lodging", "meals", "ground_transport", "conference")

#: Why a receipt is rejected; `flag_receipt` accepts exactly these.
REJECT_REASONS = (
    "outside_trip",
    "duplicate",
    "non_reimbursable",
    "missing_receipt",
    "daily_meal_cap",
)

#: The written rules, in the order they are applied (shown by `get_policy`).
RULES = (
    "1. A receipt dated before the trip's start or after its end is rejected: outside_trip.",
    "2. A receipt with the same merchant, date, amount and currency as a receipt with a lower "
    "id is rejected: duplicate.",
    "3. A receipt whose merchant category is listed under non_reimbursable_categories is "
    "rejected: non_reimbursable.",
    "4. Convert the receipt's full amount to USD at the rate for the receipt's date (round to "
    "the cent, half up). If that is more than receipt_required_over_usd and the receipt has no "
    "itemized receipt attached, it is rejected: missing_receipt.",
    "5. Otherwise claim it in the report category that category_map gives for its merchant "
    "category. Claim amount: the receipt amount minus any non-reimbursable portion its notes "
    "list (for example 'Includes alcohol: 18.00 EUR'), converted to USD at the rate for the "
    "receipt's date (round to the cent, half up).",
    "6. Cap the claim amount at per_receipt_caps_usd for its report category, if it has one.",
    "7. Meals: the meal claims of one date together may not exceed daily_meal_cap_usd. Go "
    "through that date's meal receipts not rejected by rules 1-4 in id order; each claims the "
    "smaller of its amount and what is left of the day's cap. A meal receipt with nothing left "
    "is rejected: daily_meal_cap.",
    "8. Add one line item (receipt_id, category, amount in USD) per claimed receipt, flag "
    "every rejected receipt with its reason, then submit the report.",
)


@dataclass(frozen=True)
class Receipt:
    """One receipt as the traveler handed it in."""

    id: str
    merchant: str
    date: str  # ISO yyyy-mm-dd
    amount_cents: int  # in `currency`
    currency: str
    category: str  # the merchant's category, e.g. "restaurant"; see Policy.category_map
    notes: str
    itemized: bool  # an itemized receipt is attached

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "merchant": self.merchant,
            "date": self.date,
            "amount": fmt(self.amount_cents),
            "currency": self.currency,
            "category": self.category,
        }

    def detail(self) -> dict[str, Any]:
        return {**self.summary(), "notes": self.notes, "itemized_receipt_attached": self.itemized}


@dataclass(frozen=True)
class Policy:
    """The company's travel policy for this trip."""

    category_map: dict[str, str]
    non_reimbursable: dict[str, str]  # merchant category -> why
    per_receipt_caps_cents: dict[str, int]  # report category -> cap in USD cents
    daily_meal_cap_cents: int
    receipt_required_over_cents: int
    rates: dict[str, dict[str, Decimal]] = field(default_factory=dict)  # currency -> date -> USD

    def rate(self, currency: str, date: str) -> Decimal:
        """USD per unit of `currency` on `date`; KeyError if the table has no such rate."""
        if currency == HOME_CURRENCY:
            return Decimal(1)
        return self.rates[currency][date]

    def to_usd(self, cents: int, currency: str, date: str) -> int:
        return convert_cents(cents, self.rate(currency, date))

    def public(self) -> dict[str, Any]:
        """What `get_policy` shows."""
        return {
            "home_currency": HOME_CURRENCY,
            "category_map": dict(self.category_map),
            "non_reimbursable_categories": dict(self.non_reimbursable),
            "per_receipt_caps_usd": {k: fmt(v) for k, v in self.per_receipt_caps_cents.items()},
            "daily_meal_cap_usd": fmt(self.daily_meal_cap_cents),
            "receipt_required_over_usd": fmt(self.receipt_required_over_cents),
            "exchange_rates_usd_per_unit": {
                cur: {d: str(r) for d, r in sorted(by_date.items())}
                for cur, by_date in sorted(self.rates.items())
            },
            "report_categories": list(REPORT_CATEGORIES),
            "reject_reasons": list(REJECT_REASONS),
            "rules": list(RULES),
        }


@dataclass(frozen=True)
class Trip:
    """One instance: who travelled where, the receipts, the policy, and the traps planted."""

    id: str
    seed: int
    difficulty: str
    traveler: str
    destinations: tuple[str, ...]
    start: str
    end: str
    receipts: tuple[Receipt, ...]
    policy: Policy
    traps: tuple[str, ...]  # kinds of policy trap planted (for tests and stats)

    def receipt(self, receipt_id: str) -> Receipt | None:
        for r in self.receipts:
            if r.id == receipt_id:
                return r
        return None
