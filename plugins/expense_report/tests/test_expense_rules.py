"""The policy rules on hand-built receipts, one rule at a time."""

from decimal import Decimal

import pytest
from agentrft_expense_report.generator import CATEGORY_MAP, NON_REIMBURSABLE
from agentrft_expense_report.money import fmt, to_cents
from agentrft_expense_report.rules import adjudicate, non_reimbursable_portion
from agentrft_expense_report.trip import Policy, Receipt

POLICY = Policy(
    category_map=CATEGORY_MAP,
    non_reimbursable=NON_REIMBURSABLE,
    per_receipt_caps_cents={"lodging": 20000, "ground_transport": 8000, "airfare": 90000},
    daily_meal_cap_cents=7500,
    receipt_required_over_cents=7500,
    rates={"EUR": {"2026-03-02": Decimal("1.0843"), "2026-03-03": Decimal("1.1000")}},
)


def r(rid, amount, category="restaurant", *, date="2026-03-02", cur="EUR", notes="", **kw):
    return Receipt(
        id=rid,
        merchant=kw.get("merchant", f"M{rid}"),
        date=date,
        amount_cents=to_cents(amount),
        currency=cur,
        category=category,
        notes=notes,
        itemized=kw.get("itemized", True),
    )


def decide(*receipts):
    return {d.receipt_id: d for d in adjudicate(receipts, POLICY, "2026-03-02", "2026-03-03")}


def test_money_rounds_half_up_and_formats():
    assert to_cents(12.345) == 1235
    assert to_cents("0.1") == 10
    assert fmt(1205) == "12.05"
    assert fmt(-5) == "-0.05"
    with pytest.raises(ValueError):
        to_cents("abc")


def test_conversion_uses_the_rate_of_the_receipt_date():
    d = decide(r("R01", 20.00, date="2026-03-02"), r("R02", 20.00, date="2026-03-03"))
    assert d["R01"].amount_cents == 2169  # 20 * 1.0843 = 21.686
    assert d["R02"].amount_cents == 2200


def test_alcohol_portion_is_subtracted_before_conversion():
    notes = "Dinner. Includes alcohol: 18.00 EUR (wine)"
    assert non_reimbursable_portion(notes) == 1800
    d = decide(r("R01", 50.00, notes=notes))
    assert d["R01"].amount_cents == 3470  # 32.00 EUR * 1.0843 = 34.6976


def test_caps_apply_per_receipt():
    d = decide(r("R01", 300.00, "hotel"), r("R02", 30.00, "taxi", itemized=False))
    assert d["R01"].amount_cents == 20000 and d["R01"].category == "lodging"
    assert d["R02"].amount_cents == 3253 and d["R02"].category == "ground_transport"


def test_daily_meal_cap_claims_in_id_order_then_rejects():
    d = decide(r("R01", 40.00), r("R02", 40.00), r("R03", 10.00), r("R04", 5.00, date="2026-03-03"))
    assert d["R01"].amount_cents == 4337
    assert d["R02"].amount_cents == 7500 - 4337  # what is left of the cap
    assert d["R03"].reason == "daily_meal_cap"
    assert d["R04"].claimed  # another date has its own cap


def test_rejections_in_rule_order():
    d = decide(
        r("R01", 20.00, date="2026-03-01"),  # outside the trip
        r("R02", 20.00, merchant="Same"),
        r("R03", 20.00, merchant="Same"),  # duplicate of R02
        r("R04", 20.00, "bar"),
        r("R05", 90.00, "hotel", itemized=False),  # 97.59 USD > 75 without a receipt
        r("R06", 60.00, "taxi", itemized=False),  # 65.06 USD: under the threshold, fine
    )
    assert d["R01"].reason == "outside_trip"
    assert d["R02"].claimed and d["R03"].reason == "duplicate"
    assert d["R04"].reason == "non_reimbursable"
    assert d["R05"].reason == "missing_receipt"
    assert d["R06"].claimed and d["R06"].amount_cents == 6506
