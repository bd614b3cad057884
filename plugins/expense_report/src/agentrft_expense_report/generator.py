"""A seeded, deterministic generator of trips: receipts, a policy, and planted policy traps.

`generate_trip(seed, difficulty)` always returns the same trip for the same arguments (on
every platform: only `random.Random` with a string seed and integer arithmetic are used).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from agentrft_expense_report.money import convert_cents, fmt
from agentrft_expense_report.trip import Policy, Receipt, Trip

DIFFICULTIES = ("easy", "medium", "hard")

#: What each difficulty means: base receipts, foreign currencies, traps and which kinds.
DIFFICULTY = {
    "easy": {"base": (3, 4), "foreign": 0, "traps": (1, 1)},
    "medium": {"base": (5, 6), "foreign": 1, "traps": (2, 3)},
    "hard": {"base": (7, 9), "foreign": 2, "traps": (4, 5)},
}
TRAPS_BY_DIFFICULTY = {
    "easy": ("bar", "personal", "alcohol_portion"),
    "medium": ("bar", "personal", "alcohol_portion", "over_cap", "missing_receipt", "meal_cap"),
    "hard": (
        "bar",
        "personal",
        "alcohol_portion",
        "over_cap",
        "missing_receipt",
        "meal_cap",
        "outside_trip",
        "duplicate",
    ),
}

DOMESTIC = ("Chicago", "Austin", "Seattle", "Denver", "Boston", "Atlanta")
FOREIGN = {
    "EUR": ("Berlin", "Paris", "Madrid", "Dublin"),
    "GBP": ("London", "Edinburgh"),
    "CAD": ("Toronto", "Vancouver"),
    "CHF": ("Zurich", "Geneva"),
    "MXN": ("Mexico City", "Monterrey"),
}
BASE_RATE = {
    "EUR": Decimal("1.0850"),
    "GBP": Decimal("1.2700"),
    "CAD": Decimal("0.7300"),
    "CHF": Decimal("1.1200"),
    "MXN": Decimal("0.0580"),
}
TRAVELERS = ("Ana Ruiz", "Ben Okafor", "Chen Wei", "Dana Kowalski", "Eli Haddad", "Fatima Noor")

CATEGORY_MAP = {
    "airline": "airfare",
    "hotel": "lodging",
    "restaurant": "meals",
    "cafe": "meals",
    "taxi": "ground_transport",
    "train": "ground_transport",
    "rideshare": "ground_transport",
    "conference": "conference",
}
NON_REIMBURSABLE = {
    "bar": "alcohol is not reimbursable",
    "spa": "personal expense",
    "souvenir_shop": "personal purchase",
    "cinema": "personal entertainment",
}

HOTELS = ("Grand Central Hotel", "Harbor View Inn", "Parkside Suites", "The Meridian", "City Lodge")
RESTAURANTS = (
    "Trattoria Sole",
    "Blue Fin Grill",
    "Casa Verde",
    "The Corner Bistro",
    "Lotus Garden",
)
CAFES = ("Bean There Cafe", "Morning Cup", "Kaffeehaus", "Daily Grind")
TAXIS = (("taxi", "City Cab Co."), ("rideshare", "RideNow"), ("train", "Metro Rail"))
AIRLINES = ("SkyWays Airlines", "Atlantic Air", "NorthJet")
BARS = ("The Tipsy Fox", "Hops & Barley", "Velvet Lounge")
PERSONAL = (
    ("spa", "Serenity Spa", "60-minute massage"),
    ("souvenir_shop", "Gift Corner", "Souvenirs for family"),
    ("cinema", "Starlight Cinema", "Movie ticket and snacks"),
)


def generate_trip(seed: int, difficulty: str, trip_id: str = "") -> Trip:
    """The trip for (`seed`, `difficulty`); deterministic."""
    if difficulty not in DIFFICULTY:
        raise ValueError(f"difficulty must be one of {list(DIFFICULTIES)}, got {difficulty!r}")
    return _Builder(seed, difficulty, trip_id or f"trip_{difficulty}_{seed}").build()


class _Builder:
    def __init__(self, seed: int, difficulty: str, trip_id: str) -> None:
        self.rng = random.Random(f"expense_report:{difficulty}:{seed}")
        self.seed = seed
        self.difficulty = difficulty
        self.trip_id = trip_id
        self.spec = DIFFICULTY[difficulty]
        # (date, receipt) in insertion order; ids are assigned by date, insertion breaking ties.
        self.items: list[dict] = []

    # -- helpers ---------------------------------------------------------------------
    def usd_to_local(self, usd_cents: int, currency: str, date: str) -> int:
        """A local amount whose conversion is about `usd_cents` (rounded to 5 or 0 cents)."""
        rate = self.policy.rate(currency, date)
        local = int(Decimal(usd_cents) / rate)
        return max(100, local - local % 5)

    def to_usd(self, local_cents: int, currency: str, date: str) -> int:
        return convert_cents(local_cents, self.policy.rate(currency, date))

    def add(self, **fields: object) -> dict:
        item = {"notes": "", "itemized": True, **fields}
        self.items.append(item)
        return item

    def add_local(
        self,
        merchant: str,
        day: str,
        usd_cents: int,
        currency: str,
        *,
        category: str,
        notes: str,
        **extra: object,
    ) -> dict:
        """A receipt priced in US cents, written in `currency` at `day`'s rate."""
        amount = self.usd_to_local(usd_cents, currency, day)
        return self.add(
            merchant=merchant, date=day, amount=amount, currency=currency, category=category,
            notes=notes, **extra,
        )  # fmt: skip

    def local_day(self) -> tuple[str, str, str]:
        """A random trip date with the city and currency of that leg."""
        i = self.rng.randrange(len(self.days))
        return self.days[i], self.city_of_day[i], self.currency_of_day[i]

    # -- build -----------------------------------------------------------------------
    def build(self) -> Trip:
        rng = self.rng
        n_days = rng.randint(2, 3) if self.difficulty == "easy" else rng.randint(3, 5)
        start = dt.date(2026, 1, 5) + dt.timedelta(days=rng.randrange(330))
        self.days = [(start + dt.timedelta(days=i)).isoformat() for i in range(n_days)]
        foreign = rng.sample(sorted(FOREIGN), self.spec["foreign"])
        legs = [(rng.choice(FOREIGN[c]), c) for c in foreign] or [(rng.choice(DOMESTIC), "USD")]
        # The trip's days are split across the legs in order.
        self.city_of_day, self.currency_of_day = [], []
        for i in range(n_days):
            city, cur = legs[min(i * len(legs) // n_days, len(legs) - 1)]
            self.city_of_day.append(city)
            self.currency_of_day.append(cur)
        self.policy = self.make_policy(start, n_days, foreign)

        self.add_base_receipts()
        n_traps = rng.randint(*self.spec["traps"])
        traps = rng.sample(TRAPS_BY_DIFFICULTY[self.difficulty], n_traps)
        for trap in traps:
            getattr(self, f"trap_{trap}")()

        # Ids follow the date (insertion order breaks ties, so a duplicate comes later).
        order = sorted(range(len(self.items)), key=lambda i: (self.items[i]["date"], i))
        receipts = []
        for n, i in enumerate(order, start=1):
            it = self.items[i]
            receipts.append(
                Receipt(
                    id=f"R{n:02d}",
                    merchant=it["merchant"],
                    date=it["date"],
                    amount_cents=it["amount"],
                    currency=it["currency"],
                    category=it["category"],
                    notes=it["notes"],
                    itemized=it["itemized"],
                )
            )
        return Trip(
            id=self.trip_id,
            seed=self.seed,
            difficulty=self.difficulty,
            traveler=rng.choice(TRAVELERS),
            destinations=tuple(dict.fromkeys(self.city_of_day)),
            start=self.days[0],
            end=self.days[-1],
            receipts=tuple(receipts),
            policy=self.policy,
            traps=tuple(traps),
        )

    def make_policy(self, start: dt.date, n_days: int, foreign: list[str]) -> Policy:
        rng = self.rng
        rates: dict[str, dict[str, Decimal]] = {}
        # Rates cover a few days either side so out-of-trip receipts can still be converted.
        for cur in foreign:
            base = BASE_RATE[cur]
            rates[cur] = {}
            for i in range(-5, n_days + 5):
                day = (start + dt.timedelta(days=i)).isoformat()
                jitter = Decimal(rng.randint(-250, 250)) / Decimal(10000)
                rates[cur][day] = (base * (1 + jitter)).quantize(Decimal("0.0001"))
        return Policy(
            category_map=dict(CATEGORY_MAP),
            non_reimbursable=dict(NON_REIMBURSABLE),
            per_receipt_caps_cents={
                "lodging": rng.choice((15000, 17500, 20000, 22500, 25000)),
                "ground_transport": rng.choice((6000, 8000, 10000)),
                "airfare": rng.choice((70000, 90000, 120000)),
            },
            daily_meal_cap_cents=rng.choice((6000, 7500, 9000)),
            receipt_required_over_cents=rng.choice((5000, 7500, 10000)),
            rates=rates,
        )

    def add_base_receipts(self) -> None:
        """Ordinary, fully reimbursable receipts, every one well inside every limit."""
        rng, pol = self.rng, self.policy
        n_base = rng.randint(*self.spec["base"])
        threshold = pol.receipt_required_over_cents
        makers = ["airfare", "lodging", "meal", "ride", "meal", "lodging", "ride", "meal"]
        makers += ["conference", "meal", "ride", "lodging", "meal"]
        meal_days: set[str] = set()
        nights = len(self.days) - 1
        for kind in makers:
            if len(self.items) >= n_base:
                break
            if kind == "airfare":
                cap = pol.per_receipt_caps_cents["airfare"]
                usd = rng.randint(cap * 30 // 100, cap * 80 // 100)
                self.add(
                    merchant=rng.choice(AIRLINES),
                    date=self.days[0],
                    amount=usd - usd % 100,
                    currency="USD",
                    category="airline",
                    notes="Round-trip economy ticket",
                )
            elif kind == "lodging":
                taken = {it["date"] for it in self.items if it["category"] == "hotel"}
                free = [i for i in range(nights) if self.days[i] not in taken]
                if not free:
                    continue
                i = rng.choice(free)
                day, city, cur = self.days[i], self.city_of_day[i], self.currency_of_day[i]
                cap = pol.per_receipt_caps_cents["lodging"]
                usd = rng.randint(cap * 55 // 100, cap * 85 // 100)
                self.add_local(
                    f"{rng.choice(HOTELS)} {city}",
                    day,
                    usd,
                    cur,
                    category="hotel",
                    notes=f"1 night, room {rng.randint(101, 950)}",
                )
            elif kind == "meal":
                free_days = [d for d in range(len(self.days)) if self.days[d] not in meal_days]
                if not free_days:
                    continue
                i = rng.choice(free_days)
                day, cur = self.days[i], self.currency_of_day[i]
                meal_days.add(day)
                # One meal a day, well under the daily cap: the meal-cap trap adds the rest.
                usd = rng.randint(800, pol.daily_meal_cap_cents * 45 // 100)
                cafe = rng.random() < 0.3
                self.add(
                    merchant=rng.choice(CAFES if cafe else RESTAURANTS),
                    date=day,
                    amount=self.usd_to_local(usd, cur, day),
                    currency=cur,
                    category="cafe" if cafe else "restaurant",
                    notes=rng.choice(("Lunch", "Dinner", "Breakfast", "Working lunch")),
                    # Small receipts need no itemized receipt: a decoy, still claimable.
                    itemized=usd > threshold * 80 // 100 or rng.random() < 0.6,
                )
            elif kind == "ride":
                day, _city, cur = self.local_day()
                category, merchant = rng.choice(TAXIS)
                cap = min(pol.per_receipt_caps_cents["ground_transport"], threshold)
                usd = rng.randint(1000, cap * 75 // 100)
                self.add_local(
                    merchant,
                    day,
                    usd,
                    cur,
                    category=category,
                    notes=rng.choice(("Airport to hotel", "Hotel to office", "Client visit")),
                    itemized=rng.random() < 0.5,
                )
            elif kind == "conference":
                usd = rng.randint(15000, 60000)
                self.add(
                    merchant="DevSummit Registration",
                    date=self.days[0],
                    amount=usd - usd % 100,
                    currency="USD",
                    category="conference",
                    notes="Conference pass",
                )

    # -- traps -----------------------------------------------------------------------
    def trap_bar(self) -> None:
        day, _city, cur = self.local_day()
        self.add_local(
            self.rng.choice(BARS),
            day,
            self.rng.randint(1500, 6000),
            cur,
            category="bar",
            notes="Drinks with colleagues",
        )

    def trap_personal(self) -> None:
        day, _city, cur = self.local_day()
        category, merchant, notes = self.rng.choice(PERSONAL)
        self.add_local(
            merchant,
            day,
            self.rng.randint(1500, 9000),
            cur,
            category=category,
            notes=notes,
        )

    def trap_alcohol_portion(self) -> None:
        """A dinner whose notes list wine: claim only the food."""
        day, _city, cur = self.local_day()
        food = self.rng.randint(1500, self.policy.daily_meal_cap_cents * 40 // 100)
        wine = self.rng.randint(800, 3000)
        food_local = self.usd_to_local(food, cur, day)
        wine_local = self.usd_to_local(wine, cur, day)
        self.add(
            merchant=self.rng.choice(RESTAURANTS),
            date=day,
            amount=food_local + wine_local,
            currency=cur,
            category="restaurant",
            notes=f"Dinner. Includes alcohol: {fmt(wine_local)} {cur} (wine)",
        )

    def trap_over_cap(self) -> None:
        """A receipt above its category's per-receipt cap: claim the cap."""
        rng, pol = self.rng, self.policy
        kind = rng.choice(("lodging", "ground_transport", "airfare"))
        cap = pol.per_receipt_caps_cents[kind]
        usd = rng.randint(cap * 115 // 100, cap * 160 // 100)
        if kind == "airfare":
            self.add(
                merchant=rng.choice(AIRLINES),
                date=self.days[-1],
                amount=usd - usd % 100,
                currency="USD",
                category="airline",
                notes="One-way business class (upgrade)",
            )
            return
        day, city, cur = self.local_day()
        if kind == "lodging":
            self.add_local(
                f"{rng.choice(HOTELS)} {city}",
                day,
                usd,
                cur,
                category="hotel",
                notes="1 night, suite",
            )
        else:
            self.add_local(
                "Executive Car Service",
                day,
                usd,
                cur,
                category="taxi",
                notes="Airport transfer, sedan",
            )

    def trap_missing_receipt(self) -> None:
        """A receipt over the threshold with no itemized receipt attached: reject it."""
        pol = self.policy
        day, city, cur = self.local_day()
        over = pol.receipt_required_over_cents
        cap = pol.per_receipt_caps_cents["lodging"]
        usd = self.rng.randint(max(over * 130 // 100, cap * 50 // 100), max(over * 2, cap))
        self.add_local(
            f"{self.rng.choice(HOTELS)} {city}",
            day,
            usd,
            cur,
            category="hotel",
            notes="1 night (card slip only, receipt lost)",
            itemized=False,
        )

    def trap_meal_cap(self) -> None:
        """Extra meals on one date, past the daily cap: one claimed in part, one rejected."""
        pol, rng = self.policy, self.rng
        day, _city, cur = self.local_day()
        cap = pol.daily_meal_cap_cents
        for share, label in ((rng.randint(60, 70), "Team dinner"), (rng.randint(50, 60), "Dinner")):
            usd = cap * share // 100
            self.add_local(
                rng.choice(RESTAURANTS),
                day,
                usd,
                cur,
                category="restaurant",
                notes=label,
            )

    def trap_outside_trip(self) -> None:
        rng = self.rng
        before = rng.random() < 0.5
        offset = -rng.randint(2, 4) if before else len(self.days) - 1 + rng.randint(2, 4)
        day = (dt.date.fromisoformat(self.days[0]) + dt.timedelta(days=offset)).isoformat()
        self.add(
            merchant=rng.choice(RESTAURANTS),
            date=day,
            amount=self.usd_to_local(rng.randint(1500, 4500), "USD", day),
            currency="USD",
            category="restaurant",
            notes="Dinner",
        )

    def trap_duplicate(self) -> None:
        """The same receipt handed in twice (same merchant, date, amount, currency)."""
        claimable = [it for it in self.items if it["category"] in CATEGORY_MAP]
        original = self.rng.choice(claimable)
        self.add(**original)
