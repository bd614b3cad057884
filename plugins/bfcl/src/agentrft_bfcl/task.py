"""`BfclMultiTurnTask`: BFCL's multi-turn suite (bfcl-eval) as an agentrft task.

A row names one BFCL entry:

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


class BfclMultiTurnTask(Task[BfclInstance, BfclEnv]):
    """BFCL multi-turn (base): stateful APIs over several user turns, BFCL's checker."""

    name: ClassVar[str] = "bfcl_multi_turn"
    description: ClassVar[str] = (
        "BFCL v4 multi-turn base: file system, trading, travel... APIs over several user "
        "turns, scored by BFCL's own multi-turn checker."
    )
    # BFCL allows 20 steps per turn; 7 turns at most in base. The reward fails a turn past
    # 20 steps as BFCL does; these stops bound a runaway episode.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=60, max_tool_calls=120, timeout_s=600)
    tiers: ClassVar[TieredReward] = TIERS

    # -- rows ------------------------------------------------------------------------
    def parse(self, prompt: str) -> BfclInstance:
        try:
            data = json.loads(prompt)
        except (json.JSONDecodeError, TypeError) as exc:
            raise TaskInputError(
                f"bfcl_multi_turn: the row's prompt is not JSON ({exc}). Expected "
                '{"id": "multi_turn_base_<n>"}; make rows with '
                "agentrft dataset make --task bfcl_multi_turn --split train."
            ) from None
        entry_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(entry_id, str):
            raise TaskInputError(
                'bfcl_multi_turn: the row\'s prompt must be a JSON object with an "id" such as '
                '"multi_turn_base_12"'
            )
        try:
            entry = suite.entry(entry_id)
        except KeyError:
            raise TaskInputError(
                f"bfcl_multi_turn: no BFCL entry {entry_id!r} (categories: "
                f"{', '.join(suite.CATEGORIES)}; ids like multi_turn_base_0..199)"
            ) from None
        return BfclInstance(entry_id, entry)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """The split's entries in id order; with `n`, a seeded sample of n of them."""
        if split not in SPLITS:
            raise TaskInputError(
                f"bfcl_multi_turn: unknown split {split!r}; use one of {list(SPLITS)}"
            )
        ids = sorted(
            (
                i
                for c in suite.CATEGORIES
                for i in suite.entries(c)
                if split == "all" or split_of(i) == split
            ),
            key=_id_order,
        )
        if n is not None:
            if not 0 <= n <= len(ids):
                raise TaskInputError(
                    f"bfcl_multi_turn: split {split!r} has {len(ids)} entries; ask for 0..{len(ids)}, got {n}"
                )
            ids = sorted(
                random.Random(f"bfcl_multi_turn:{split}:{seed}").sample(ids, n), key=_id_order
            )
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
        return expert_policy()

    def reward_samples(self) -> Iterable[RewardSample]:
        """The tiers at extreme shaping, plus real episodes on a few entries: the expert,
        the expert stopping after each turn, wrong arguments, text only."""
        yield from TIERS.samples()
        yield from run_sync(self._episode_samples())

    async def _episode_samples(self) -> list[RewardSample]:
        out: list[RewardSample] = []
        ids = ["multi_turn_base_0", "multi_turn_base_2", "multi_turn_base_3"]
        for entry_id in ids:
            entry = suite.entry(entry_id)
            n = len(entry.ground_truth)
            behaviours: list[tuple[str, str, ScriptedPolicy]] = [
                ("all_turns_pass", "expert", expert_policy())
            ]
            for k in range(1, n):
                behaviours.append(
                    ("some_turns_pass", f"expert for {k} of {n} turns", truncated_expert(k))
                )
            behaviours += [
                ("no_turn_passes", "wrong arguments on every call", wrong_argument_policy()),
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


def truncated_expert(turns: int) -> ScriptedPolicy:
    """The expert for the first `turns` user turns, then text only (the later turns fail)."""

    def step(messages: Any, tools: Any) -> Any:
        if sum(1 for m in messages if m.role == "user") > turns:
            return DONE
        return expert_step(messages, tools)

    return ScriptedPolicy(step, name=f"expert_{turns}_turns")


def wrong_argument_policy() -> ScriptedPolicy:
    """The expert's calls with every argument wrong: strings no entry uses, flipped
    booleans, numbers off by one (lists and objects left as they are)."""

    def step(messages: Any, tools: Any) -> Any:
        out = expert_step(messages, tools)
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
