"""`TicketTriageTask` ("ticket_triage"): read a support ticket, then route it to the team
that handles it.

The workflow: the user names a ticket (`T-48213`); the agent calls `read_ticket`, whose reply
shows who wrote and what they wrote, then `route_ticket` with one of four teams. Which team is
right depends only on what the ticket says, so a policy above chance (1 in 4) reads the earlier
tool reply and decides from it. The reward is the outcome: right team, wrong team, or never
routed.

Rows are JSON tickets (`Ticket.as_row()`): the team (`queue`) is hidden from the policy; the
user prompt names only the ticket id. `make_dataset` writes every team equally often, and the
held-out splits use ticket texts the training split never saw (see tickets.py).

Warm-up without the answer: `withheld()` is this task with the ticket's subject and message
hidden from `read_ticket`, played by an expert that routes at random. Its games teach the
calls (read, then route with a valid team), never which team a ticket needs.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterable
from typing import Any, ClassVar

from agentrft import (
    Environment,
    EpisodeLimits,
    Message,
    Policy,
    RewardResult,
    RewardSample,
    ScriptedPolicy,
    Task,
    TaskInputError,
    Tier,
    TieredReward,
    ToolError,
    Trajectory,
    call,
    tool,
)
from agentrft_ticket_triage.tickets import QUEUES, Ticket, make_tickets

SYSTEM_PROMPT = (
    "You are the support triage agent of an online shop. For each ticket: read it with "
    "read_ticket, then send it to the team that handles it with route_ticket. Teams:\n"
    + "\n".join(f"- {q}: {what}" for q, what in QUEUES.items())
    + "\nReply only with tool calls."
)

USER_PROMPTS = (
    "Ticket {t} just came in. Please route it to the right team.",
    "Can you triage support ticket {t}?",
    "Please look at ticket {t} and assign it to the team that should handle it.",
    "New ticket: {t}. Route it, please.",
    "Who should handle ticket {t}? Read it and route it.",
    "Triage {t} for me, please.",
)

WITHHELD_TEXT = "[withheld]"

TIERS = TieredReward(
    [
        Tier(name="right_team", base=1.0, solved=True),
        Tier(name="wrong_team", base=0.0),
        Tier(name="not_routed", base=-1.0),
    ]
)


class TriageEnv(Environment):
    """One ticket's episode: what was read and where the ticket went."""

    def __init__(self, ticket: Ticket, *, withhold: bool = False) -> None:
        super().__init__()
        self.ticket = ticket
        self.withhold = withhold
        self.reads = 0
        self.routed_to: str | None = None

    def _check_id(self, ticket_id: str) -> None:
        if ticket_id.strip().upper() != self.ticket.ticket_id.upper():
            raise ToolError(
                f"no ticket {ticket_id!r} in this conversation; the ticket is "
                f"{self.ticket.ticket_id}"
            )

    @tool
    def read_ticket(self, ticket_id: str) -> str:
        """Show a support ticket: who wrote it, the subject and the message.

        Args:
            ticket_id: the ticket's id, e.g. T-10234.
        """
        self._check_id(ticket_id)
        self.reads += 1
        t = self.ticket
        if self.withhold:
            t = Ticket(t.id, t.ticket_id, t.customer, t.email, WITHHELD_TEXT, WITHHELD_TEXT,
                       t.queue)  # fmt: skip
        return t.render()

    @tool
    def route_ticket(self, ticket_id: str, queue: str) -> str:
        """Send a ticket to the team that will handle it. This ends the triage.

        Args:
            ticket_id: the ticket's id, e.g. T-10234.
            queue: the team: payments, technical, delivery or account.
        """
        self._check_id(ticket_id)
        team = queue.strip().lower()
        if team not in QUEUES:
            raise ToolError(f"unknown team {queue!r}; teams: {', '.join(QUEUES)}")
        if not self.reads:
            self.note("routed_unread", "routed before reading the ticket")
        self.routed_to = team
        self.done = True
        return f"Ticket {self.ticket.ticket_id} assigned to the {team} team."


class TicketTriageTask(Task[Ticket, TriageEnv]):
    """Read a support ticket and route it to payments, technical, delivery or account."""

    name: ClassVar[str] = "ticket_triage"
    description: ClassVar[str] = (
        "Read a support ticket, then route it to the right team (4 teams; outcome-scored)."
    )
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=4, max_tool_calls=4, timeout_s=120)
    tiers: ClassVar[TieredReward] = TIERS
    #: Set on the `withheld()` copy: `read_ticket` hides the subject and the message.
    withholds: ClassVar[bool] = False

    def parse(self, prompt: str) -> Ticket:
        try:
            row = json.loads(prompt)
            ticket = Ticket(**{k: str(row[k]) for k in Ticket.__dataclass_fields__})
        except (ValueError, TypeError, KeyError) as exc:
            fields = ", ".join(Ticket.__dataclass_fields__)
            raise TaskInputError(
                f"ticket_triage rows are JSON tickets with the fields {fields}; got "
                f"{prompt[:80]!r} ({type(exc).__name__}: {exc}). Make rows with "
                "TicketTriageTask().make_dataset(split, n, seed)."
            ) from None
        if ticket.queue not in QUEUES:
            raise TaskInputError(
                f"ticket_triage: row {ticket.id!r} has queue {ticket.queue!r}; use one of "
                f"{', '.join(QUEUES)}"
            )
        if not re.fullmatch(r"T-\d+", ticket.ticket_id):
            raise TaskInputError(
                f"ticket_triage: row {ticket.id!r} has ticket_id {ticket.ticket_id!r}; "
                "ids look like T-10234"
            )
        return ticket

    def environment(self, instance: Ticket) -> TriageEnv:
        return TriageEnv(instance, withhold=self.withholds)

    def system_prompt(self, instance: Ticket) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: Ticket) -> str:
        pick = zlib.crc32(instance.id.encode()) % len(USER_PROMPTS)
        return USER_PROMPTS[pick].format(t=instance.ticket_id)

    def batch_key(self, instance: Ticket) -> str:
        # Each GRPO step holds one ticket per team (at 4 prompts a step): a step of mostly
        # delivery tickets would pay for answering "delivery" whatever the ticket says.
        return instance.queue

    def hidden_values(self, instance: Ticket) -> list[str]:
        # The team names are public (the system prompt lists them); what must not leak is
        # the row's label, in any serialisation.
        return [f'"queue": "{instance.queue}"', f"'queue': '{instance.queue}'"]

    def reward(self, env: TriageEnv, trajectory: Trajectory) -> RewardResult:
        if env.routed_to is None:
            return self.tiers.score("not_routed")
        parts = {"read": float(env.reads > 0)}
        tier = "right_team" if env.routed_to == env.ticket.queue else "wrong_team"
        return self.tiers.score(tier, components=parts)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """`n` tickets (train 512, validation 64, test 64 by default), every team equally
        often; validation and test tickets use texts the training split never saw."""
        sizes = {"train": 512, "validation": 64, "test": 64}
        if split not in sizes:
            raise TaskInputError(f"unknown split {split!r}; use train, validation or test")
        tickets = make_tickets(split, sizes[split] if n is None else n, seed)
        return [{"prompt": json.dumps(t.as_row())} for t in tickets]

    def expert(self) -> Policy:
        if self.withholds:
            return guessing_triager()
        return keyword_triager()

    def withheld(self) -> TicketTriageTask:
        """This task with the subject and message hidden from `read_ticket`, played by an
        expert that routes at random: warm-up games that teach the calls, not the teams."""
        return WithheldTicketTriageTask()

    def reward_samples(self) -> Iterable[RewardSample]:
        yield from self.tiers.samples()


class WithheldTicketTriageTask(TicketTriageTask):
    """`ticket_triage` with what decides the team withheld (see `TicketTriageTask.withheld`)."""

    withholds: ClassVar[bool] = True


# -- scripted policies ------------------------------------------------------------------------

_TICKET_ID = re.compile(r"\bT-\d+\b")

#: Words that point at a team (the keyword triager's rules: a reference, not the answer key).
KEYWORDS: dict[str, tuple[str, ...]] = {
    "payments": (
        "charge",
        "refund",
        "invoice",
        "bill",
        "paid",
        "pay",
        "card",
        "price",
        "money",
        "fee",
        "coupon",
        "promo",
        "discount",
        "tax",
        "receipt",
        "bank",
        "paypal",
        "subscription",
        "statement",
        "$",
    ),
    "technical": (
        "crash",
        "error",
        "bug",
        "load",
        "freez",
        "sync",
        "export",
        "upload",
        "screen",
        "api",
        "notification",
        "button",
        "website",
        "browser",
        "video",
        "report",
        "offline",
        "refresh",
        "integration",
        "search",
        "tap",
    ),
    "delivery": (
        "deliver",
        "tracking",
        "package",
        "parcel",
        "courier",
        "ship",
        "arrive",
        "box",
        "address",
        "carrier",
        "mail",
        "transit",
        "ups",
        "fedex",
        "dhl",
        "usps",
    ),
    "account": (
        "log in",
        "login",
        "sign-in",
        "sign in",
        "signing in",
        "password",
        "email",
        "two-factor",
        "code",
        "account",
        "username",
        "profile",
        "locked",
        "verify",
        "hacked",
        "name",
        "access",
        "personal",
    ),
}


def classify(text: str) -> str:
    """The team with the most keyword hits in `text` (ties: the order of QUEUES)."""
    low = text.lower()
    scores = {q: sum(low.count(w) for w in words) for q, words in KEYWORDS.items()}
    return max(QUEUES, key=lambda q: scores[q])


def _ticket_id(messages: list[Message]) -> str:
    for m in messages:
        if m.role == "user" and m.content and (hit := _TICKET_ID.search(m.content)):
            return hit.group(0)
    return "T-0"


def _last_read(messages: list[Message]) -> str | None:
    for m in reversed(messages):
        if m.role == "tool" and m.content and m.content.startswith("Ticket "):
            return m.content
    return None


def keyword_triager() -> Policy:
    """Reads the ticket, then routes it by keyword counts (the task's scripted expert)."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        tid = _ticket_id(messages)
        text = _last_read(messages)
        if text is None:
            return call("read_ticket", {"ticket_id": tid})
        body = text.split("\n", 2)[-1]  # subject and message, not the sender's address
        return call("route_ticket", {"ticket_id": tid, "queue": classify(body)})

    return ScriptedPolicy(play, name="ticket_triage_keyword_expert")


def guessing_triager(seed: int = 0) -> Policy:
    """Reads the ticket, then routes it to a team drawn at random: right 1 time in 4, never by
    reading (the expert of the withheld task, whose tickets show no text). The draw is seeded
    by `seed` and the ticket id, not taken from one shared stream: episodes played
    concurrently reach their routing turn in an order that varies run to run, and the
    warm-up's games must not."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        tid = _ticket_id(messages)
        if _last_read(messages) is None:
            return call("read_ticket", {"ticket_id": tid})
        queue = random.Random(f"{seed}:{tid}").choice(list(QUEUES))
        return call("route_ticket", {"ticket_id": tid, "queue": queue})

    return ScriptedPolicy(play, name="ticket_triage_guessing_expert")
