"""Tiny tool tasks for tests and benchmarks, written against the public API only.

- `FindNumberTask` ("find_number"): guess a hidden integer; each guess is answered
  "higher" / "lower" / "correct". Tiered reward (solved > unsolved > never played), a
  plain-text recovery hook with a format penalty, datasets, and a binary-search expert.
- `CounterTask` ("counter"): call `increment` until the counter reaches a target. Every
  episode lasts exactly `target` turns under `counter_script`, which is what a benchmark
  needs to compute its ideal wall time.
- `UnlockTask` ("unlock"): guess a word; after the model's first text reply the user
  offers a `hint` tool (`Environment.tools_changed`), for tests of tools that change
  mid-episode.

The scripts (`find_number_expert`, `counter_script`) are module-level functions of
`(messages, tools)`, so the same function drives a `ScriptedPolicy` and a
`FakeOpenAIServer`, in a thread or in a child process.
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
from agentrft.tools import ToolError, ToolResult, tool
from agentrft.trajectory import Trajectory

# --- find the number ---------------------------------------------------------------------


@dataclass
class NumberInstance:
    id: str
    secret: int
    low: int
    high: int


class FindNumberEnv(Environment):
    """Per-episode state: the secret and the guesses so far."""

    def __init__(self, instance: NumberInstance) -> None:
        super().__init__()
        self.instance = instance
        self.guesses: list[int] = []
        self.solved = False
        self.gave_up = False
        self.recovered_calls = 0

    @tool
    def guess(self, number: int) -> str:
        """Guess the hidden number.

        Args:
            number: your guess, an integer inside the announced range.
        """
        inst = self.instance
        if self.current_call is not None and self.current_call.recovered:
            self.recovered_calls += 1
        if not inst.low <= number <= inst.high:
            raise ToolError(
                f"Error: {number} is outside the range {inst.low}..{inst.high}.",
                kind="out_of_range",
            )
        self.guesses.append(number)
        if number == inst.secret:
            self.solved = True
            self.done = True
            return f"correct: {number} is the number"
        return "higher" if inst.secret > number else "lower"

    @tool
    def give_up(self) -> str:
        """Stop guessing and end the game."""
        self.gave_up = True
        self.done = True
        return "game over"

    _PLAIN_CALL = re.compile(r"guess\s*[(:=]?\s*(-?\d+)", re.IGNORECASE)

    def recover(self, text: str) -> list[ToolCall]:
        m = self._PLAIN_CALL.search(text)
        if not m:
            return []
        return [call("guess", {"number": int(m.group(1))})]


class FindNumberTask(Task[NumberInstance]):
    """Find a hidden integer with higher/lower hints. Rows are JSON:
    `{"secret": 37, "low": 1, "high": 100}` (an optional "id")."""

    name: ClassVar[str] = "find_number"
    description: ClassVar[str] = "Guess a hidden integer from higher/lower hints (test task)."
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=12, max_tool_calls=24, timeout_s=30)
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="solved", base=1.0, shaping_weight=0.25, solved=True),
            Tier(name="unsolved", base=0.0, shaping_weight=0.1),
            Tier(name="no_guess", base=-1.0),
        ]
    )

    #: Level k narrows the announced range to about 1/2^k of its width (never below 4
    #: numbers), still around the secret and never with it at an end of the range.
    curriculum_levels: ClassVar[int] = 3

    def curriculum(self, instance: NumberInstance, level: int) -> NumberInstance:
        width = max(4, (instance.high - instance.low + 1) >> level)
        # Where the secret sits inside the narrowed range: a fixed function of the row.
        offset = 1 + (instance.secret * 7919 + instance.low) % (width - 2)
        low = max(instance.low, instance.secret - offset)
        high = min(instance.high, low + width - 1)
        return NumberInstance(id=instance.id, secret=instance.secret, low=low, high=high)

    def parse(self, prompt: str) -> NumberInstance:
        try:
            row = json.loads(prompt)
            secret, low, high = int(row["secret"]), int(row["low"]), int(row["high"])
        except (ValueError, TypeError, KeyError) as exc:
            raise TaskInputError(
                f"find_number rows are JSON like "
                f'{{"secret": 37, "low": 1, "high": 100}}; got {prompt[:80]!r} ({exc})'
            ) from None
        if not low <= secret <= high:
            raise TaskInputError(f"find_number: secret {secret} is outside {low}..{high}")
        return NumberInstance(id=str(row.get("id", f"{low}-{high}-{secret}")), secret=secret,
                              low=low, high=high)  # fmt: skip

    def environment(self, instance: NumberInstance) -> FindNumberEnv:
        return FindNumberEnv(instance)

    def system_prompt(self, instance: NumberInstance) -> str:
        return "You play a number-guessing game. Use the guess tool; reply only with tool calls."

    def user_prompt(self, instance: NumberInstance) -> str:
        return f"Find the hidden integer between {instance.low} and {instance.high}."

    def instance_id(self, instance: NumberInstance) -> str:
        return instance.id

    def hidden_values(self, instance: NumberInstance) -> list[str]:
        return [str(instance.secret)]

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, FindNumberEnv)
        penalty = 0.5 * env.recovered_calls  # plain-text calls cost shaping, never a tier
        if env.solved:
            budget = max(1, self.limits.max_turns - 1)
            shaping = 1.0 - 2.0 * (len(env.guesses) - 1) / budget - penalty
            return self.tiers.score("solved", shaping, components={"guesses": len(env.guesses)})
        if env.guesses:
            span = max(1, env.instance.high - env.instance.low)
            closest = min(abs(g - env.instance.secret) for g in env.guesses)
            shaping = 1.0 - 2.0 * closest / span - penalty
            return self.tiers.score("unsolved", shaping, components={"guesses": len(env.guesses)})
        return self.tiers.score("no_guess")

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        offsets = {"train": 0, "validation": 1, "test": 2}
        if split not in offsets:
            raise TaskInputError(f"unknown split {split!r}; use train, validation or test")
        rng = random.Random(seed * 3 + offsets[split])
        rows: list[dict[str, Any]] = []
        while len(rows) < (n if n is not None else 100):
            low = rng.randint(1, 50)
            high = low + rng.choice([15, 31, 63, 127])
            secret = rng.randint(low, high)
            if str(secret) in f"{low} {high}":  # keep hidden_values out of the prompt text
                continue
            row = {"id": f"{split}-{len(rows)}", "secret": secret, "low": low, "high": high}
            rows.append({"prompt": json.dumps(row)})
        return rows

    def expert(self) -> Policy:
        return ScriptedPolicy(find_number_expert, name="find_number_expert")


_RANGE = re.compile(r"between (-?\d+) and (-?\d+)")


def find_number_expert(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    """Binary search, reconstructed from the conversation (stateless, so any server can run
    it)."""
    low, high = 0, 100
    pending: int | None = None
    for m in messages:
        if m.role == "user" and m.content and (r := _RANGE.search(m.content)):
            low, high = int(r.group(1)), int(r.group(2))
        elif m.role == "assistant" and m.tool_calls:
            try:
                pending = int(json.loads(m.tool_calls[-1].arguments)["number"])
            except (ValueError, KeyError, TypeError):
                pending = None
        elif m.role == "tool" and pending is not None and m.content:
            if m.content.startswith("higher"):
                low = pending + 1
            elif m.content.startswith("lower"):
                high = pending - 1
    return call("guess", {"number": (low + high) // 2})


# --- counter -----------------------------------------------------------------------------


@dataclass
class CounterInstance:
    id: str
    target: int


class CounterEnv(Environment):
    def __init__(self, target: int) -> None:
        super().__init__()
        self.target = target
        self.count = 0

    @tool
    def increment(self, by: int = 1) -> str:
        """Add to the counter.

        Args:
            by: how much to add (1 to 10).
        """
        if not 1 <= by <= 10:
            raise ToolError("Error: `by` must be between 1 and 10.", kind="invalid_arguments")
        self.count += by
        if self.count >= self.target:
            self.done = True
        return f"count={self.count}"


class CounterTask(Task[CounterInstance]):
    """Reach a target count. Rows are JSON `{"target": 8}`; `target` turns with
    `counter_script`."""

    name: ClassVar[str] = "counter"
    description: ClassVar[str] = "Increment a counter to a target (benchmark task)."
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=64, max_tool_calls=128, timeout_s=60)
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="exact", base=1.0, solved=True),
            Tier(name="overshot", base=0.5, solved=True),
            Tier(name="short", base=0.0, shaping_weight=0.2),
        ]
    )

    def parse(self, prompt: str) -> CounterInstance:
        try:
            target = int(json.loads(prompt)["target"])
        except (ValueError, TypeError, KeyError):
            raise TaskInputError(
                f'counter rows are JSON like {{"target": 8}}; got {prompt[:80]!r}'
            ) from None
        return CounterInstance(id=f"target-{target}", target=target)

    def environment(self, instance: CounterInstance) -> CounterEnv:
        return CounterEnv(instance.target)

    def user_prompt(self, instance: CounterInstance) -> str:
        return f"Call increment until the counter reaches {instance.target}."

    def instance_id(self, instance: CounterInstance) -> str:
        return instance.id

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, CounterEnv)
        if env.count == env.target:
            return self.tiers.score("exact")
        if env.count > env.target:
            return self.tiers.score("overshot")
        return self.tiers.score("short", 2.0 * env.count / max(1, env.target) - 1.0)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": json.dumps({"target": 8})} for _ in range(n or 8)]


def counter_script(messages: Any, tools: list[dict[str, Any]]) -> ToolCall:
    """Always `increment()` (by 1): an episode takes exactly `target` turns."""
    return ToolCall(id="", name="increment", arguments="{}")


# --- a tool offered mid-episode ------------------------------------------------------------


class UnlockEnv(Environment):
    """`guess` from the start; `hint` only once the model has replied in text (the user
    then offers it: `tools_changed`). A guess of the row's word ends the episode."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word
        self.offered = ["guess"]
        self.solved = False

    @tool
    def guess(self, word: str) -> str:
        """Guess the word.

        Args:
            word: the guess
        """
        self.solved = self.done = word == self.word
        return "Correct!" if self.solved else "Wrong."

    @tool
    def hint(self) -> str:
        """The word's first letter."""
        return f"It starts with {self.word[0]!r}."

    @property
    def tools(self) -> dict[str, Any]:
        return {n: t for n, t in super().tools.items() if n in self.offered}

    async def call_tool(self, call: ToolCall, *, threads: Any = None) -> Any:
        if call.name not in self.offered:
            return ToolResult(f"Error: unknown tool {call.name!r}.", failure="unknown_tool")
        return await super().call_tool(call, threads=threads)

    def on_text_reply(self, text: str) -> str | None:
        if "hint" in self.offered:
            return None
        self.offered.append("hint")
        self.tools_changed = True
        return "You may ask for a hint now."


class UnlockTask(Task[str]):
    """Guess a word (the row); a `hint` tool is offered after the first text reply."""

    name: ClassVar[str] = "unlock"
    description: ClassVar[str] = "Guess a word; a hint tool is offered mid-episode."
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=8, max_tool_calls=8, timeout_s=60)

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> UnlockEnv:
        return UnlockEnv(instance)

    def user_prompt(self, instance: str) -> str:
        return "Guess the word."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, UnlockEnv)
        return RewardResult(total=1.0 if env.solved else 0.0, solved=env.solved)
