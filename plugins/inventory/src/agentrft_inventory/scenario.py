"""A stock request's world: the catalog, one item's stock and suppliers, and what the
request asks for. Seeded, so a row is a reproducible scenario."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

ITEMS = (
    ("HNG-L", "steel hinge, large"),
    ("HNG-S", "steel hinge, small"),
    ("BRK-90", "angle bracket, 90 degrees"),
    ("SCR-4", "wood screw, 4 mm"),
    ("SCR-6", "wood screw, 6 mm"),
    ("HDL-B", "cabinet handle, brass"),
    ("HDL-C", "cabinet handle, chrome"),
    ("RLR-45", "drawer runner, 45 cm"),
    ("RLR-55", "drawer runner, 55 cm"),
    ("LCK-2", "cam lock, 2 keys"),
    ("SHF-P", "shelf pin, plastic"),
    ("SHF-M", "shelf pin, metal"),
)
SUPPLIERS = ("Acme Parts", "Borealis Supply", "Castor & Co", "Delta Fixings", "Everline")


@dataclass
class Supplier:
    name: str
    unit_price: float
    lead_days: int


@dataclass
class Scenario:
    """One request: `units` of `sku` for order `order_id`, needed within `days`."""

    id: str
    order_id: str
    sku: str
    item: str
    units: int
    days: int
    on_hand: int
    reserved: int
    suppliers: list[Supplier] = field(default_factory=list)

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved

    def expected(self) -> dict[str, Any]:
        """The right action: reserve from stock when enough is available, else order the
        shortfall from the cheapest supplier that delivers within `days`."""
        if self.available >= self.units:
            return {"action": "reserve", "sku": self.sku, "units": self.units}
        in_time = [s for s in self.suppliers if s.lead_days <= self.days]
        best = min(in_time, key=lambda s: (s.unit_price, s.name))
        return {
            "action": "order",
            "sku": self.sku,
            "supplier": best.name,
            "units": self.units - self.available,
        }

    def as_row(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Scenario:
        data = dict(row)
        data["suppliers"] = [Supplier(**s) for s in data.get("suppliers", [])]
        return cls(**data)


def make_scenarios(n: int, seed: int) -> list[Scenario]:
    """`n` scenarios, half with enough stock, half short; a short one always has a supplier
    in time and a cheaper one too slow (so "cheapest" alone is the wrong rule)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sku, item = ITEMS[rng.randrange(len(ITEMS))]
        units = rng.choice((10, 20, 24, 30, 40, 50, 60, 75, 80, 100))
        days = rng.choice((3, 5, 7, 10))
        reserved = rng.randrange(0, 40)
        enough = i % 2 == 0
        if enough:
            on_hand = reserved + units + rng.randrange(0, 60)
        else:
            on_hand = reserved + rng.randrange(0, units)
        names = rng.sample(SUPPLIERS, rng.randint(3, 4))
        base = round(rng.uniform(0.4, 6.0), 2)
        suppliers = [
            Supplier(name, round(base * rng.uniform(0.8, 1.4), 2), rng.choice((2, 4, 6, 9, 14)))
            for name in names
        ]
        # One supplier in time, and the cheapest of all too slow.
        suppliers[0].lead_days = rng.randint(1, days)
        slow = suppliers[1]
        slow.lead_days = days + rng.choice((2, 5, 9))
        slow.unit_price = round(min(x.unit_price for x in suppliers) * 0.85, 2)
        rng.shuffle(suppliers)
        out.append(
            Scenario(
                id=f"inv-{seed}-{i}",
                order_id=f"SO-{rng.randrange(10000, 99999)}",
                sku=sku,
                item=item,
                units=units,
                days=days,
                on_hand=on_hand,
                reserved=reserved,
                suppliers=suppliers,
            )
        )
    return out
