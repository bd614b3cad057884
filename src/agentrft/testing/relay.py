"""`CodeRelayTask` ("code_relay"): a two-turn task whose answer only a tool reply reveals.

The episode: call `read_code`, whose reply shows a one-letter code (and, by default, a
decoy: `code B, decoy D`), then give the code back: with the `submit` tool (the default) or,
with `answer = "text"`, as the next reply's text. Every row has the same prompt text, so
nothing but the earlier tool reply tells the policy what to answer: a policy above chance
carries a value across turns, through the masked tool-reply tokens, into a later turn. That
makes it the guard on multi-turn RL (sequences, masks, advantages and logprob alignment
across turns) in the learning tests.

Scripted policies:
- `expert()`: reads the reply and gives the code (the task's ceiling, 100%);
- `format_expert()`: reads the reply and gives the DECOY: the format, never the answer;
- `withheld()`: this task with the values hidden from the reply (`code ?`), whose expert
  guesses: games that teach the format and cannot teach the answer, since there is none to
  see. A warm-up on them leaves everything above chance to RL.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from agentrft.environment import Environment
from agentrft.messages import Message
from agentrft.policies.scripted import Reply, ScriptedPolicy, call
from agentrft.policy import Policy
from agentrft.reward import RewardResult, Tier, TieredReward
from agentrft.task import EpisodeLimits, Task, TaskInputError
from agentrft.tools import tool
from agentrft.trajectory import Trajectory

#: The codes; single letters, so each is one token for most tokenizers.
CODES = ("A", "B", "C", "D")
_SHOWN = re.compile(r"^code ([A-Z?])(?: \1)*(?:, decoy ([A-Z?]))?$")
_LETTER = re.compile(r"\s*([A-Z])\b")


@dataclass
class RelayInstance:
    id: str
    code: str
    decoy: str


@dataclass(frozen=True)
class RelayStyle:
    """How the reply looks: the code written `repeat` times, the decoy shown or not, the
    values withheld (`?`) or not."""

    repeat: int = 1
    decoy: bool = True
    withheld: bool = False

    def reply(self, instance: RelayInstance) -> str:
        code, decoy = ("?", "?") if self.withheld else (instance.code, instance.decoy)
        text = "code " + " ".join([code] * self.repeat)
        return f"{text}, decoy {decoy}" if self.decoy else text


class CodeRelayEnv(Environment):
    """Per-episode state: the hidden code, whether it was read, what was given back."""

    def __init__(self, instance: RelayInstance, style: RelayStyle | None = None) -> None:
        super().__init__()
        self.instance = instance
        self.style = style or RelayStyle()
        self.reads = 0
        self.submitted: str | None = None

    @tool
    def read_code(self) -> str:
        """Read the code for this session."""
        self.reads += 1
        return self.style.reply(self.instance)


class SubmitRelayEnv(CodeRelayEnv):
    """The code goes back through the `submit` tool."""

    @tool
    def submit(self, code: str) -> str:
        """Submit the code and end the session.

        Args:
            code: the code read_code showed.
        """
        self.submitted = code.strip()
        self.done = True
        return "Accepted." if self.submitted == self.instance.code else "Rejected."


class TextRelayEnv(CodeRelayEnv):
    """The code goes back as the first letter of a text reply, after reading it."""

    def on_text_reply(self, text: str) -> str | None:
        if self.reads:
            hit = _LETTER.match(text)
            self.submitted = hit.group(1) if hit else None
        self.done = True  # a text reply ends the episode, answered or not
        return None


class CodeRelayTask(Task[RelayInstance]):
    """Read a code with one tool, then give it back. Rows are JSON:
    `{"id": "relay_train_0000", "code": "B", "decoy": "D"}` (hidden from the policy)."""

    name: ClassVar[str] = "code_relay"
    description: ClassVar[str] = "Read a code with one tool, then give it back (test task)."
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=3, max_tool_calls=3, timeout_s=60)
    #: The letters a code and a decoy are drawn from. With two, a policy that ignores the
    #: reply cannot beat 50%; with four, 25%.
    codes: ClassVar[tuple[str, ...]] = CODES
    #: How the code goes back: the `submit` tool, or the text of the next reply.
    answer: ClassVar[Literal["call", "text"]] = "call"
    #: How many times the reply writes the code (`code B B B, decoy D`). Repeated, the code
    #: is most of the reply, so a small model can read it without a precise attention head.
    repeat: ClassVar[int] = 1
    #: Whether the reply also shows a decoy.
    show_decoy: ClassVar[bool] = True
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="correct", base=1.0, solved=True),
            Tier(name="wrong", base=0.0),
            Tier(name="no_submit", base=-1.0),
        ]
    )
    #: Set on the `withheld()` copy.
    withholds: ClassVar[bool] = False

    def parse(self, prompt: str) -> RelayInstance:
        try:
            row = json.loads(prompt)
            code, decoy = str(row["code"]), str(row["decoy"])
        except (ValueError, TypeError, KeyError) as exc:
            raise TaskInputError(
                f'code_relay rows are JSON like {{"id": "r1", "code": "B", "decoy": "D"}}; got '
                f"{prompt[:80]!r} ({exc})"
            ) from None
        if code not in self.codes or decoy not in self.codes or code == decoy:
            raise TaskInputError(
                f"code_relay: code {code!r} and decoy {decoy!r} must be two different letters "
                f"of {', '.join(self.codes)}"
            )
        return RelayInstance(id=str(row.get("id", code)), code=code, decoy=decoy)

    def style(self) -> RelayStyle:
        return RelayStyle(self.repeat, self.show_decoy, self.withholds)

    def environment(self, instance: RelayInstance) -> CodeRelayEnv:
        env = TextRelayEnv if self.answer == "text" else SubmitRelayEnv
        return env(instance, self.style())

    def withheld(self) -> CodeRelayTask:
        """A copy of this task whose replies hide the values (`code ?`) and whose expert
        guesses (`guessing_expert`): the warm-up of the RL-only learning tests."""
        return type(f"Withheld{type(self).__name__}", (type(self),), {"withholds": True})()

    def system_prompt(self, instance: RelayInstance) -> str:
        if self.answer == "text":
            return "Call read_code, then reply with the code alone."
        return "Reply only with tool calls."

    def user_prompt(self, instance: RelayInstance) -> str:
        return "Read the code, then " + ("answer with it." if self.answer == "text" else
                                         "submit it.")  # fmt: skip

    def instance_id(self, instance: RelayInstance) -> str:
        return instance.id

    def hidden_values(self, instance: RelayInstance) -> list[str]:
        # The values are single letters: what must not leak is the reply that names them.
        return [] if self.withholds else [self.style().reply(instance)]

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, CodeRelayEnv)
        if env.submitted is None:
            return self.tiers.score("no_submit")
        parts = {"read": float(env.reads > 0)}
        if env.submitted == env.instance.code:
            return self.tiers.score("correct", components=parts)
        return self.tiers.score("wrong", components=parts)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """`n` rows (default 64): every (code, decoy) pair equally often, shuffled with
        `seed` (per split)."""
        offsets = {"train": 0, "validation": 1, "test": 2}
        if split not in offsets:
            raise TaskInputError(f"unknown split {split!r}; use train, validation or test")
        count = 64 if n is None else n
        pairs = [(c, d) for c in self.codes for d in self.codes if c != d]
        rows = [pairs[i % len(pairs)] for i in range(count)]
        random.Random(seed * 3 + offsets[split]).shuffle(rows)
        return [
            {"prompt": json.dumps({"id": f"relay_{split}_{i:04d}", "code": c, "decoy": d})}
            for i, (c, d) in enumerate(rows)
        ]

    def expert(self) -> Policy:
        if self.withholds:
            return guessing_expert(self.codes, self.answer)
        return ScriptedPolicy(_giving(0, self.answer), name="code_relay_expert")

    def format_expert(self) -> Policy:
        """Reads the reply, then gives the decoy: the format without the answer."""
        return ScriptedPolicy(_giving(1, self.answer), name="code_relay_format_expert")


def _shown(messages: list[Message]) -> tuple[str, str | None] | None:
    """(code, decoy) from the last read_code reply, or None before the first read."""
    for m in reversed(messages):
        if m.role == "tool" and m.content and (hit := _SHOWN.match(m.content)):
            return hit.group(1), hit.group(2)
    return None


def _give(value: str, answer: str) -> Reply:
    return value if answer == "text" else call("submit", {"code": value})


def _giving(which: int, answer: str) -> Any:
    """A script that reads, then gives the code (which=0) or the decoy (which=1)."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        shown = _shown(messages)
        if shown is None:
            return call("read_code", {})
        return _give(shown[which] or "?", answer)

    return play


def guessing_expert(codes: tuple[str, ...], answer: str = "call", seed: int = 0) -> Policy:
    """Reads, then gives a code drawn at random: right as often as chance, never by reading
    (the expert of the `withheld()` task, whose reply shows no code)."""
    rng = random.Random(seed)

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        if not any(m.role == "tool" for m in messages):
            return call("read_code", {})
        return _give(rng.choice(codes), answer)

    return ScriptedPolicy(play, name="code_relay_guessing_expert")
