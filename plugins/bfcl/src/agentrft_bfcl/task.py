"""BFCL's multi-turn suite (bfcl-eval) as agentrft tasks, one per BFCL category:

- `bfcl_multi_turn` (`BfclMultiTurnTask`): multi_turn_base;
- `bfcl_multi_turn_long_context` (`BfclLongContextTask`): the same kind of entries with
  BFCL's long scenarios loaded into every API class (long listings, many records);
- `bfcl_multi_turn_miss_param` (`BfclMissParamTask`): one turn per entry lacks a
  parameter (its ground truth is empty); the user gives it in a later turn;
- `bfcl_multi_turn_miss_func` (`BfclMissFuncTask`): a function is held back; the turn
  that needs it cannot be done (empty ground truth), and at a later turn BFCL adds it to
  the tools with "I have updated some more functions you can choose from. What about now?".

A row names one BFCL entry of the task's category:

    {"prompt": "{\\"task\\": \\"bfcl_multi_turn\\", \\"id\\": \\"multi_turn_base_12\\"}"}

The entry's questions, initial state and ground truth come from the bfcl-eval wheel; the
policy sees what BFCL's function-calling inference shows a model: no system prompt, the
tools converted from the entry's function docs, the user's turns one at a time and the
APIs' replies. The ground truth and the turns not yet reached never appear.

Splits: BFCL ships one set per category. `validation` is the entries whose id hashes
(sha256 of "bfcl:" + id, first 8 hex digits) to 0 mod 5, about a fifth; `train` the rest;
`all` the whole category (BFCL's own evaluation set).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from agentrft import (
    EpisodeLimits,
    Policy,
    RewardResult,
    RewardSample,
    ScriptedPolicy,
    Task,
    TaskInputError,
    TieredReward,
    Trajectory,
    call,
    run_episode,
    run_sync,
)
from agentrft_bfcl import suite
from agentrft_bfcl.environment import BfclEnv
from agentrft_bfcl.expert import DONE, expert_policy, expert_step
from agentrft_bfcl.reward import TIERS, bfcl_reward

SPLITS = ("train", "validation", "all")


@dataclass(frozen=True)
class BfclInstance:
    id: str
    entry: suite.Entry


def split_of(entry_id: str) -> str:
    """'validation' or 'train', fixed by the id alone (stable when BFCL adds entries)."""
    digest = hashlib.sha256(f"bfcl:{entry_id}".encode()).hexdigest()
    return "validation" if int(digest[:8], 16) % 5 == 0 else "train"


def _id_order(entry_id: str) -> tuple[str, int]:
    category, number = entry_id.rsplit("_", 1)
    return category, int(number)


#: Task name per BFCL category, to point a row of another category at its task.
TASK_OF_CATEGORY: dict[str, str] = {
    "multi_turn_base": "bfcl_multi_turn",
    "multi_turn_long_context": "bfcl_multi_turn_long_context",
    "multi_turn_miss_param": "bfcl_multi_turn_miss_param",
    "multi_turn_miss_func": "bfcl_multi_turn_miss_func",
}


class BfclMultiTurnTask(Task[BfclInstance, BfclEnv]):
    """BFCL multi-turn (base): stateful APIs over several user turns, BFCL's checker.
    Subclasses play another category (`category`) under another name."""

    name: ClassVar[str] = "bfcl_multi_turn"
    description: ClassVar[str] = (
        "BFCL v4 multi-turn base: file system, trading, travel... APIs over several user "
        "turns, scored by BFCL's own multi-turn checker."
    )
    #: The BFCL category this task plays (one of `suite.CATEGORIES`).
    category: ClassVar[str] = "multi_turn_base"
    #: Entries the reward check plays (turn 0 has ground truth, the last turn too, so
    #: each scripted behaviour can land in its tier).
    reward_check_ids: ClassVar[tuple[str, ...]] = (
        "multi_turn_base_0",
        "multi_turn_base_2",
        "multi_turn_base_3",
    )
    # BFCL allows 20 steps per turn; 7 turns at most in base. The reward fails a turn past
    # 20 steps as BFCL does; these stops bound a runaway episode.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=60, max_tool_calls=120, timeout_s=600)
    tiers: ClassVar[TieredReward] = TIERS

    # -- rows ------------------------------------------------------------------------
    def parse(self, prompt: str) -> BfclInstance:
        example = f"{self.category}_12"
        try:
            data = json.loads(prompt)
        except (json.JSONDecodeError, TypeError) as exc:
            raise TaskInputError(
                f"{self.name}: the row's prompt is not JSON ({exc}). Expected "
                f'{{"id": "{self.category}_<n>"}}; make rows with '
                f"agentrft dataset make --task {self.name} --split train."
            ) from None
        entry_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(entry_id, str):
            raise TaskInputError(
                f'{self.name}: the row\'s prompt must be a JSON object with an "id" such as '
                f'"{example}"'
            )
        category = entry_id.rsplit("_", 1)[0]
        if category != self.category and category in TASK_OF_CATEGORY:
            raise TaskInputError(
                f"{self.name}: {entry_id!r} is a {category} entry; this task plays "
                f"{self.category}. Use --task {TASK_OF_CATEGORY[category]} for it."
            )
        try:
            entry = suite.entry(entry_id)
        except KeyError:
            raise TaskInputError(
                f"{self.name}: no BFCL entry {entry_id!r} (this task plays {self.category}, "
                f"ids like {self.category}_0..{len(suite.entries(self.category)) - 1})"
            ) from None
        return BfclInstance(entry_id, entry)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """The split's entries in id order; with `n`, a seeded sample of n of them."""
        if split not in SPLITS:
            raise TaskInputError(f"{self.name}: unknown split {split!r}; use one of {list(SPLITS)}")
        ids = sorted(
            (i for i in suite.entries(self.category) if split == "all" or split_of(i) == split),
            key=_id_order,
        )
        if n is not None:
            if not 0 <= n <= len(ids):
                raise TaskInputError(
                    f"{self.name}: split {split!r} has {len(ids)} entries; ask for 0..{len(ids)}, got {n}"
                )
            ids = sorted(random.Random(f"{self.name}:{split}:{seed}").sample(ids, n), key=_id_order)
        return [{"prompt": json.dumps({"task": self.name, "id": i})} for i in ids]

    # -- episode ---------------------------------------------------------------------
    def environment(self, instance: BfclInstance) -> BfclEnv:
        return BfclEnv(instance.entry)

    def user_prompt(self, instance: BfclInstance) -> str:
        return "\n\n".join(instance.entry.turns[0])

    def reward(self, env: BfclEnv, trajectory: Trajectory) -> RewardResult:
        return bfcl_reward(env.entry, trajectory)

    def hidden_values(self, instance: BfclInstance) -> list[str]:
        """The ground truth's call strings (BFCL never shows them). The later turns' text
        is hidden until its turn; the leak test checks that per policy call."""
        return [s for turn in instance.entry.ground_truth for s in turn]

    # -- policies --------------------------------------------------------------------
    def expert(self) -> Policy:
        return expert_policy(self.category)

    def reward_samples(self) -> Iterable[RewardSample]:
        """The tiers at extreme shaping, plus real episodes on a few entries: the expert,
        the expert stopping after each turn, wrong arguments, text only."""
        yield from TIERS.samples()
        yield from run_sync(self._episode_samples())

    async def _episode_samples(self) -> list[RewardSample]:
        out: list[RewardSample] = []
        for entry_id in self.reward_check_ids:
            entry = suite.entry(entry_id)
            n = len(entry.ground_truth)
            behaviours: list[tuple[str, str, ScriptedPolicy]] = [
                ("all_turns_pass", "expert", self.expert())
            ]
            for k in range(1, n):
                behaviours.append(
                    (
                        "some_turns_pass",
                        f"expert for {k} of {n} turns",
                        truncated_expert(k, self.category),
                    )
                )
            wrong = wrong_argument_policy(self.category)
            behaviours += [
                ("no_turn_passes", "wrong arguments on every call", wrong),
                ("no_valid_call", "text only", ScriptedPolicy(lambda m, t: DONE, name="silent")),
            ]
            prompt = json.dumps({"id": entry_id})
            for tier, label, policy in behaviours:
                traj = await run_episode(self, prompt, policy)
                assert traj.reward is not None
                got = traj.reward.outcome
                out.append(
                    RewardSample(
                        TIERS.names.index(tier),
                        tier,
                        f"{label} on {entry_id} (landed in {got})",
                        traj.reward,
                    )
                )
        return out


def truncated_expert(turns: int, category: str = "multi_turn_base") -> ScriptedPolicy:
    """The expert for the first `turns` user turns, then text only (the later turns fail)."""

    def step(messages: Any, tools: Any) -> Any:
        if sum(1 for m in messages if m.role == "user") > turns:
            return DONE
        return expert_step(messages, tools, category)

    return ScriptedPolicy(step, name=f"expert_{turns}_turns")


def wrong_argument_policy(category: str = "multi_turn_base") -> ScriptedPolicy:
    """The expert's calls with every argument wrong: strings no entry uses, flipped
    booleans, numbers off by one (lists and objects left as they are)."""

    def step(messages: Any, tools: Any) -> Any:
        out = expert_step(messages, tools, category)
        if isinstance(out, str):
            return out
        calls = []
        for c in out:
            args = {k: _wrong(v) for k, v in json.loads(c.arguments).items()}
            calls.append(call(c.name, args))
        return calls

    return ScriptedPolicy(step, name="wrong_arguments")


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return "no_such_thing_42"
    if isinstance(value, (int, float)):
        return value + 1
    return value


class BfclLongContextTask(BfclMultiTurnTask):
    """BFCL multi-turn long context: every API class loaded with BFCL's long scenario."""

    name: ClassVar[str] = "bfcl_multi_turn_long_context"
    description: ClassVar[str] = (
        "BFCL v4 multi-turn long context: the base tasks with long file listings, order "
        "books and records in the APIs' state, scored by BFCL's multi-turn checker."
    )
    category: ClassVar[str] = "multi_turn_long_context"
    reward_check_ids: ClassVar[tuple[str, ...]] = (
        "multi_turn_long_context_0",
        "multi_turn_long_context_2",
        "multi_turn_long_context_3",
    )


class BfclMissParamTask(BfclMultiTurnTask):
    """BFCL multi-turn miss_param: one turn lacks a parameter the user gives later."""

    name: ClassVar[str] = "bfcl_multi_turn_miss_param"
    description: ClassVar[str] = (
        "BFCL v4 multi-turn miss_param: a turn lacks a needed parameter (the model should "
        "ask, not guess); the user gives it in a later turn. BFCL's multi-turn checker."
    )
    category: ClassVar[str] = "multi_turn_miss_param"
    reward_check_ids: ClassVar[tuple[str, ...]] = (
        "multi_turn_miss_param_0",
        "multi_turn_miss_param_3",
        "multi_turn_miss_param_7",
    )


class BfclMissFuncTask(BfclMultiTurnTask):
    """BFCL multi-turn miss_func: a function held back, offered at a later turn."""

    name: ClassVar[str] = "bfcl_multi_turn_miss_func"
    description: ClassVar[str] = (
        "BFCL v4 multi-turn miss_func: a needed function is missing (the model should say "
        "so, not improvise); BFCL adds it to the tools at a later turn. Multi-turn checker."
    )
    category: ClassVar[str] = "multi_turn_miss_func"
    reward_check_ids: ClassVar[tuple[str, ...]] = (
        "multi_turn_miss_func_0",
        "multi_turn_miss_func_2",
        "multi_turn_miss_func_9",
    )
