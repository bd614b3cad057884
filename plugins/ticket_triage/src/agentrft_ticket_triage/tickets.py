"""Support tickets: who wrote, what they wrote, and which team should take it.

Each queue has its own ticket templates, split three ways so the held-out splits are written
in words the training split never used: a policy that scores on validation rows has learned
to read what a ticket is about, not to recognise its training tickets. Slots (names,
products, amounts, dates, order numbers) are filled from a seeded generator.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

#: The teams a ticket can go to, with what each handles (shown to the policy). The names are
#: one token each for common tokenizers (SmolLM2 splits "billing" into "b" + "illing"), so
#: the choice is made on a word the model knows rather than on a stray letter.
QUEUES: dict[str, str] = {
    "payments": "charges, double charges, refunds, invoices, receipts, cards, prices, "
    "coupons and tax",
    "technical": "bugs, errors, crashes, the app or the website not working or not loading",
    "delivery": "orders on their way: tracking, late, lost, damaged or wrong packages, "
    "delivery addresses",
    "account": "signing in, passwords, security codes, email address, profile, closing or "
    "merging accounts",
}

FIRST = [
    "Dana",
    "Luis",
    "Priya",
    "Tom",
    "Mei",
    "Oskar",
    "Amara",
    "Jonas",
    "Sofia",
    "Kenji",
    "Fatima",
    "Liam",
    "Ines",
    "Ravi",
    "Chloe",
    "Mateo",
    "Hana",
    "Noah",
    "Zara",
    "Elif",
]
LAST = [
    "Lee",
    "Garcia",
    "Patel",
    "Novak",
    "Chen",
    "Berg",
    "Okafor",
    "Weber",
    "Rossi",
    "Sato",
    "Haddad",
    "Walsh",
    "Costa",
    "Iyer",
    "Martin",
    "Silva",
    "Kim",
    "Brown",
    "Ahmed",
    "Yilmaz",
]
PRODUCTS = [
    "wireless earbuds",
    "desk lamp",
    "coffee grinder",
    "yoga mat",
    "backpack",
    "phone case",
    "air purifier",
    "bluetooth speaker",
    "office chair",
    "water bottle",
]
PLANS = ["Basic", "Plus", "Pro", "Team"]
DEVICES = ["iPhone", "Android phone", "iPad", "Windows laptop", "MacBook", "Chromebook"]
CARRIERS = ["UPS", "FedEx", "DHL", "USPS"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# (subject, body) templates per queue and split. Slots: {product} {plan} {amount} {amount2}
# {order} {device} {carrier} {month} {days} {code}.
TEMPLATES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "payments": {
        "train": [
            (
                "Charged twice",
                "Hi, I was charged twice for my {plan} subscription this month, "
                "{amount} both times. Please fix this.",
            ),
            (
                "Refund request",
                "I cancelled my {plan} plan last week but was still billed "
                "{amount}. I would like a refund.",
            ),
            (
                "Wrong invoice amount",
                "My invoice for {month} says {amount2} but my plan costs "
                "{amount}. Can you correct it?",
            ),
            (
                "Update card",
                "My credit card expired. How do I add a new card so my payment goes through?",
            ),
            (
                "Price went up?",
                "Why did my monthly price go up from {amount} to {amount2}? Nobody told me.",
            ),
            (
                "Need a receipt",
                "Please send me a VAT invoice for my payment of {amount} on "
                "order {order} for my expense report.",
            ),
            (
                "Payment failed",
                "My payment of {amount} keeps getting declined but my bank says the card is fine.",
            ),
            (
                "Unknown charge",
                "There is a charge of {amount} on my statement that I don't "
                "recognise. What is it for?",
            ),
            (
                "Discount not applied",
                "I used the promo code {code} but was billed the full "
                "{amount}. Please apply the discount.",
            ),
            (
                "Cancel auto-renewal billing",
                "I was billed {amount} for a renewal I never agreed to. Please reverse the charge.",
            ),
            (
                "Double payment on order",
                "I paid for order {order} twice by mistake, {amount} "
                "each. Please refund one of them.",
            ),
            (
                "Switch to yearly billing",
                "Can I switch my {plan} plan from monthly to yearly billing and pay less?",
            ),
        ],
        "validation": [
            (
                "Overcharged",
                "You billed me {amount2} instead of {amount} this month. I want "
                "the difference back.",
            ),
            (
                "Money back please",
                "I returned the {product} two weeks ago and still have not "
                "got my money back for order {order}.",
            ),
            (
                "Bank statement question",
                "My bank shows two payments to you on the same day. One must be a mistake.",
            ),
            ("Change payment method", "I want to pay with PayPal instead of my card from now on."),
            ("Tax on invoice", "Why is there extra tax on my invoice? My company is tax exempt."),
        ],
        "test": [
            (
                "Subscription fee",
                "The {plan} fee was taken from my account after I downgraded. "
                "Please return {amount}.",
            ),
            ("Billing error", "My invoice lists a seat I never added, {amount2} extra."),
            (
                "Card charged after trial",
                "My free trial ended and you charged my card {amount} without asking.",
            ),
            ("Coupon", "The checkout ignored my coupon {code}, so I paid too much."),
            ("Statement copy", "Could you email me copies of all invoices from {month}?"),
        ],
    },
    "technical": {
        "train": [
            ("App crashes", "The app crashes every time I open the settings page on my {device}."),
            (
                "Error 500",
                "I keep getting an error 500 when I try to save my project. It "
                "started this morning.",
            ),
            (
                "Page won't load",
                "The dashboard just shows a spinning wheel and never loads, "
                "on Chrome and on Firefox.",
            ),
            (
                "Sync broken",
                "My files stopped syncing between my {device} and the website {days} days ago.",
            ),
            (
                "Export not working",
                "When I click Export to CSV nothing happens. No file is downloaded.",
            ),
            (
                "Bug in search",
                "Search returns no results even for items I can see in my list. Looks like a bug.",
            ),
            (
                "Notifications stopped",
                "I stopped getting push notifications on my {device} after the last update.",
            ),
            ("Upload fails", "Uploading a photo fails with 'unexpected error' every time."),
            (
                "Slow and freezing",
                "The editor freezes for ten seconds after every keystroke since version {code}.",
            ),
            (
                "Integration broken",
                "The calendar integration shows an error and no events appear anymore.",
            ),
            ("Blank screen", "After the update the app only shows a white screen on my {device}."),
            (
                "API timeout",
                "Our API calls time out after 30 seconds since yesterday. Is something down?",
            ),
        ],
        "validation": [
            (
                "Keeps crashing",
                "Every time I tap the share button the app closes by itself on my {device}.",
            ),
            ("Website down?", "Your website shows 'service unavailable' for me all day."),
            ("Broken feature", "The print button does nothing, I tried three browsers."),
            (
                "Data not updating",
                "The charts on my dashboard are stuck on last week's numbers and never refresh.",
            ),
            (
                "Login page error",
                "The app shows error code {code} right after it starts, before I can do anything.",
            ),
        ],
        "test": [
            (
                "Stuck loading",
                "The app has been stuck on the loading screen since I updated my {device}.",
            ),
            ("Reports broken", "Generating a report gives a 'something went wrong' message."),
            ("Video won't play", "Tutorial videos show a black screen and never start."),
            ("Bug report", "Dragging a card to another column makes it disappear. Clearly a bug."),
            ("Offline mode", "Offline mode does not save my changes on my {device}."),
        ],
    },
    "delivery": {
        "train": [
            (
                "Where is my order?",
                "My order {order} was supposed to arrive {days} days ago "
                "and the tracking has not moved.",
            ),
            (
                "Package damaged",
                "The {product} arrived with a crushed box and a cracked cover. Order {order}.",
            ),
            (
                "Wrong address",
                "I need to change the delivery address for order {order} before it ships.",
            ),
            ("Missing item", "My package arrived but the {product} was not inside. Order {order}."),
            (
                "Tracking number",
                "Can you send me the tracking number for order {order}? I never got it.",
            ),
            (
                "Late delivery",
                "{carrier} says my parcel is delayed again. I need the {product} by Friday.",
            ),
            (
                "Delivered but not received",
                "Tracking says delivered but there is no package at my door. Order {order}.",
            ),
            (
                "Shipping to another country",
                "Do you ship the {product} to Canada, and how long does delivery take?",
            ),
            (
                "Package returned to sender",
                "{carrier} returned my package to you. Please send order {order} again.",
            ),
            ("Split shipment", "Only half of order {order} arrived. Where is the rest?"),
            (
                "Express delivery",
                "I paid for express shipping but order {order} is still not "
                "here after {days} days.",
            ),
            ("Courier lost parcel", "{carrier} told me they lost my parcel with the {product}."),
        ],
        "validation": [
            (
                "Order not here",
                "It has been {days} days and my {product} still hasn't shown up. Order {order}.",
            ),
            ("Broken on arrival", "The {product} came smashed in the box. Order {order}."),
            ("Parcel stuck", "My {carrier} tracking has said 'in transit' for a week."),
            (
                "Redirect delivery",
                "Can the courier leave order {order} at my neighbour's house instead?",
            ),
            ("Box was empty", "I opened my delivery and the box was empty. Order {order}."),
        ],
        "test": [
            ("Delivery delay", "Why is my {product} taking so long to arrive? Order {order}."),
            ("Wrong item delivered", "I ordered the {product} but got something else in the mail."),
            (
                "Tracking not updating",
                "The tracking page for order {order} shows no update since {month}.",
            ),
            (
                "Signed for by someone else",
                "The courier says someone signed for my package but I was home all day.",
            ),
            ("Dented package", "My parcel arrived wet and dented and the {product} is scratched."),
        ],
    },
    "account": {
        "train": [
            (
                "Can't log in",
                "I can't log in. It says my password is wrong but I am sure it is right.",
            ),
            ("Reset password", "The password reset email never arrives. I checked spam."),
            (
                "Change email",
                "I want to change the email address on my account to my new work email.",
            ),
            (
                "Two-factor problem",
                "I got a new {device} and now I can't get my two-factor code to sign in.",
            ),
            ("Delete my account", "Please close my account and delete my personal data."),
            (
                "Locked out",
                "My account is locked after too many sign-in attempts. Please unlock it.",
            ),
            ("Username change", "How do I change my username? The old one has a typo."),
            ("Merge accounts", "I have two accounts by mistake. Can you merge them into one?"),
            (
                "Suspicious sign-in",
                "I got an alert about a sign-in from another country. That was not me.",
            ),
            (
                "Update profile",
                "I need to update the phone number on my profile but the field is greyed out.",
            ),
            ("Add a team member", "How do I give my colleague access to our team account?"),
            ("Verification email", "I never received the email to verify my new account."),
        ],
        "validation": [
            ("Forgot password", "I forgot my password and the reset link says it has expired."),
            ("Sign in issue", "Signing in with Google takes me back to the start page every time."),
            ("Close account", "I no longer need the service. Please remove my profile."),
            ("Wrong name on profile", "My profile shows my old last name. How can I fix it?"),
            ("Hacked?", "Someone changed my password and I can't get into my account."),
        ],
        "test": [
            ("Security code", "The login code I get by text message is always rejected."),
            ("New email address", "Please move my account to a different email address."),
            ("Account disabled", "My account says it has been disabled. What happened?"),
            ("Remove my data", "I want all my personal information erased from your systems."),
            ("Shared login", "Can two people use the same account, or do we each need one?"),
        ],
    },
}

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Ticket:
    """One support ticket and the team it belongs to (`queue`, hidden from the policy)."""

    id: str
    ticket_id: str
    customer: str
    email: str
    subject: str
    body: str
    queue: str

    def as_row(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        """What `read_ticket` shows."""
        return (
            f"Ticket {self.ticket_id}\nFrom: {self.customer} <{self.email}>\n"
            f"Subject: {self.subject}\n\n{self.body}"
        )


def make_ticket(rng: random.Random, queue: str, split: str, index: int) -> Ticket:
    """A ticket for `queue` from `split`'s templates, its slots filled from `rng`."""
    subject, body = rng.choice(TEMPLATES[queue][split])
    first, last = rng.choice(FIRST), rng.choice(LAST)
    amount = rng.randrange(5, 300)
    slots = {
        "product": rng.choice(PRODUCTS),
        "plan": rng.choice(PLANS),
        "amount": f"${amount}.{rng.randrange(100):02d}",
        "amount2": f"${amount + rng.randrange(3, 90)}.{rng.randrange(100):02d}",
        "order": f"#{rng.randrange(100000, 999999)}",
        "device": rng.choice(DEVICES),
        "carrier": rng.choice(CARRIERS),
        "month": rng.choice(MONTHS),
        "days": str(rng.randrange(3, 15)),
        "code": f"{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.randrange(10, 99)}",
    }
    return Ticket(
        id=f"ticket_triage_{split}_{index:04d}",
        ticket_id=f"T-{rng.randrange(10000, 99999)}",
        customer=f"{first} {last}",
        email=f"{first.lower()}.{last.lower()}@example.com",
        subject=subject.format(**slots),
        body=body.format(**slots),
        queue=queue,
    )


def make_tickets(split: str, n: int, seed: int) -> list[Ticket]:
    """`n` tickets of `split`, every queue equally often (round robin, then shuffled), so a
    policy that always picks one team scores exactly 1 in 4."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use {', '.join(SPLITS)}")
    rng = random.Random(f"ticket_triage/{split}/{seed}")
    queues = list(QUEUES)
    order = [queues[i % len(queues)] for i in range(n)]
    rng.shuffle(order)
    return [make_ticket(rng, q, split, i) for i, q in enumerate(order)]
