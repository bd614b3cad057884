"""Money as integer cents, so every total and every comparison is exact."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, DecimalException, InvalidOperation


def to_cents(amount: float | str | Decimal) -> int:
    """`12.345` -> 1235 (half up). Floats go through `str` so 0.1 stays 0.1.

    Raises `ValueError` (never a `decimal` error) for text that is no number, NaN, an
    infinity, or an amount too large to count in cents (1e26 and up).
    """
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        raise ValueError(f"{amount!r} is not an amount") from None
    if not value.is_finite():
        raise ValueError(f"{amount!r} is not a finite amount")
    try:
        return int((value * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    except DecimalException:  # more digits than the decimal context holds
        raise ValueError(f"{amount!r} is too large an amount") from None


def fmt(cents: int) -> str:
    """1235 -> "12.35" (what tool replies and hidden values use)."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def convert_cents(cents: int, rate: Decimal) -> int:
    """Convert at `rate` (USD per unit) and round to the cent, half up (the policy's rule)."""
    return int((Decimal(cents) * rate).quantize(Decimal(1), rounding=ROUND_HALF_UP))
