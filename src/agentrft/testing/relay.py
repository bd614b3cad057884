"""`CodeRelayTask` ("code_relay"): a two-call task whose answer only a tool reply reveals.

The episode: call `read_code`, whose reply shows two one-letter values, the code and a
decoy (`code B, decoy D`), then `submit` the code. Every row has the same prompt text, so
nothing but the earlier tool reply tells the policy what to submit: a policy above chance
carries a value across turns, through the masked tool-reply tokens, into a later call. That
makes it the guard on multi-turn RL (sequences, masks, advantages and logprob alignment
across turns) in the learning tests.

Two scripted policies:
- `expert()`: reads the reply and submits the code (the task's ceiling, 100%);
- `format_expert()`: reads the reply and submits the DECOY. Its games teach the call format
  (and that the answer comes from the reply) but never the answer: its success rate is 0,
  so what a warm-up on them leaves above 0 is RL's doing. Which of the two values earns the
  reward only the reward says.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from agentrft.environment import Environment
from agentrft.messages import Message, ToolCall
from agentrft.policies.scripted import ScriptedPolicy, call
from agentrft.policy import Policy
from agentrft.reward import RewardResult, Tier, TieredReward
from agentrft.task import EpisodeLimits, Task, TaskInputError
from agentrft.tools import tool
from agentrft.trajectory import Trajectory

#: The codes; single letters, so each is one token for most tokenizers.
CODES = ("A", "B", "C", "D")
_SHOWN = re.compile(r"^code ([A-Z])(?: \1)*, decoy ([A-Z])$")


def _reply(code: str, decoy: str, repeat: int) -> str:
    return f"code {' '.join([code] * repeat)}, decoy {decoy}"


@dataclass
class RelayInstance:
    id: str
    code: str
    decoy: str


class CodeRelayEnv(Environment):
    """Per-episode state: the hidden code, whether it was read, what was submitted."""

    def __init__(self, instance: RelayInstance, repeat: int = 1) -> None:
        super().__init__()
        self.instance = instance
        self.repeat = repeat
        self.reads = 0
        self.submitted: str | None = None

    @tool
    def read_code(self) -> str:
        """Read the code for this session."""
        self.reads += 1
        return _reply(self.instance.code, self.instance.decoy, self.repeat)

    @tool
    def submit(self, code: str) -> str:
        """Submit the code and end the session.

        Args:
            code: the code read_code showed.
        """
        self.submitted = code.strip()
        self.done = True
        return "Accepted." if self.submitted == self.instance.code else "Rejected."


class CodeRelayTask(Task[RelayInstance]):
    """Read a code with one tool, submit it with another. Rows are JSON:
    `{"id": "relay_train_0000", "code": "B", "decoy": "D"}` (hidden from the policy)."""

    name: ClassVar[str] = "code_relay"
    description: ClassVar[str] = "Read a code with one tool, submit it with another (test task)."
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=3, max_tool_calls=3, timeout_s=60)
    #: The letters a code and a decoy are drawn from. With two, a policy that ignores the
    #: reply cannot beat 50%; with four, 25%.
    codes: ClassVar[tuple[str, ...]] = CODES
    #: How many times the reply writes the code (`code B B B, decoy D`). Repeated, the code
    #: is most of the reply, so a small model can read it without a precise attention head.
    repeat: ClassVar[int] = 1
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="correct", base=1.0, solved=True),
            Tier(name="wrong", base=0.0),
            Tier(name="no_submit", base=-1.0),
        ]
    )

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

    def environment(self, instance: RelayInstance) -> CodeRelayEnv:
        return CodeRelayEnv(instance, self.repeat)

    def system_prompt(self, instance: RelayInstance) -> str:
        return "Reply only with tool calls."

    def user_prompt(self, instance: RelayInstance) -> str:
        return "Read the code, then submit it."

    def instance_id(self, instance: RelayInstance) -> str:
        return instance.id

    def hidden_values(self, instance: RelayInstance) -> list[str]:
        # The values are single letters: what must not leak is the reply that names them.
        return [_reply(instance.code, instance.decoy, self.repeat)]

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
        return ScriptedPolicy(_relay_expert, name="code_relay_expert")

    def format_expert(self) -> Policy:
        """Reads the reply, then submits the decoy: the format without the answer."""
        return ScriptedPolicy(_decoy_expert, name="code_relay_format_expert")


def _shown(messages: list[Message]) -> tuple[str, str] | None:
    """(code, decoy) from the last read_code reply, or None before the first read."""
    for m in reversed(messages):
        if m.role == "tool" and m.content and (hit := _SHOWN.match(m.content)):
            return hit.group(1), hit.group(2)
    return None


def _relay_expert(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    shown = _shown(messages)
    return call("read_code", {}) if shown is None else call("submit", {"code": shown[0]})


def _decoy_expert(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    shown = _shown(messages)
    return call("read_code", {}) if shown is None else call("submit", {"code": shown[1]})
