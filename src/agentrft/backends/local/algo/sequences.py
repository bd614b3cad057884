"""Trajectories -> training sequences (token ids + loss mask).

RL: the ids come straight from the turns (`prompt_token_ids`, `completion_token_ids`), so
the trainer trains on exactly what was sampled. With the token-exact `TokenPolicy`, turn
t+1's prompt extends turn t's prompt + completion, so a whole episode is ONE sequence whose
mask marks each turn's sampled ids; tool replies and template tokens stay at 0.

SFT: expert games carry messages only; they are rendered with the chat template and the
mask marks each assistant message's ids (its end-of-turn token included). Where the
environment changed the tools mid-episode, each stretch of turns is rendered with its own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
from agentrft.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass
class TrainSequence:
    """One training sequence: a whole episode as one token stream."""

    token_ids: list[int]
    #: 1 for ids the policy sampled (trained), 0 for prompt, tool replies, template tokens.
    mask: list[int]
    advantage: float = 0.0
    #: The sampler's logprob for each id (0.0 where mask is 0); diagnostics only.
    sampler_logprobs: list[float] = field(default_factory=list)
    #: One advantage per id (per-turn credit), replacing `advantage` where given.
    token_advantages: list[float] | None = None

    def __post_init__(self) -> None:
        if len(self.mask) != len(self.token_ids):
            raise ValueError("mask and token_ids differ in length")
        if self.token_advantages is not None and len(self.token_advantages) != len(self.token_ids):
            raise ValueError("token_advantages and token_ids differ in length")


def trajectory_sequences(
    traj: Trajectory, advantage: float, turn_credit: Sequence[float] | None = None
) -> list[TrainSequence]:
    """The episode's sampled turns as training sequences (one when the ids chain up).

    `turn_credit[t]`, when given, is added to `advantage` on turn t's sampled ids (per-turn
    credit); the sequences then carry per-token advantages. Turns without token ids (a
    client that returns none) are skipped.
    """
    seqs: list[TrainSequence] = []
    ids: list[int] = []
    mask: list[int] = []
    lps: list[float] = []
    advs: list[float] = []

    def close() -> None:
        per_token = advs if turn_credit is not None else None
        seqs.append(TrainSequence(ids, mask, advantage, lps, token_advantages=per_token))

    for t, turn in enumerate(traj.turns):
        prompt, completion = turn.prompt_token_ids, turn.completion_token_ids
        if not prompt or completion is None:
            continue
        logprobs = list(turn.logprobs or [])
        if len(logprobs) != len(completion):
            logprobs = [0.0] * len(completion)
        chained = bool(ids) and len(prompt) >= len(ids) and prompt[: len(ids)] == ids
        if not chained:
            if ids:
                close()
            ids, mask, lps, advs = [], [], [], []
        extra = prompt[len(ids) :]
        ids = [*ids, *extra, *completion]
        mask = [*mask, *([0] * len(extra)), *([1] * len(completion))]
        lps = [*lps, *([0.0] * len(extra)), *logprobs]
        credit = advantage + (turn_credit[t] if turn_credit is not None else 0.0)
        advs = [*advs, *([0.0] * len(extra)), *([credit] * len(completion))]
    if ids:
        close()
    return seqs


def sft_sequence(
    traj: Trajectory, chat: ChatTokenizer, max_length: int | None = None
) -> TrainSequence | None:
    """The episode's messages rendered with the chat template; assistant ids trained.

    Returns None when the episode has no assistant message or the template is not
    prefix-preserving for it (then the assistant spans cannot be located exactly). An
    episode whose tools changed (`Turn.tools`) is several sequences: `sft_sequences`.
    """
    last = max((i for i, m in enumerate(traj.messages) if m.role == "assistant"), default=None)
    if last is None:
        return None
    trained = [i for i, m in enumerate(traj.messages) if m.role == "assistant"]
    return _rendered_sequence(traj.messages[: last + 1], traj.tools, trained, chat, max_length)


def sft_sequences(
    traj: Trajectory, chat: ChatTokenizer, max_length: int | None = None
) -> list[TrainSequence]:
    """`sft_sequence`, one per stretch of policy calls offered the same tools: where the
    environment changed them, the conversation so far is rendered again with the new tools
    (as `TokenSession` renders it for sampling) and only that stretch's replies are trained."""
    if not any(t.tools is not None for t in traj.turns):
        seq = sft_sequence(traj, chat, max_length)
        return [seq] if seq is not None else []
    # The loop appends, per turn, its reply and then its tool / user messages.
    position = len(traj.messages) - sum(1 + len(t.tool_messages) for t in traj.turns)
    stretches: list[tuple[list[dict[str, Any]], list[int]]] = []
    for k, turn in enumerate(traj.turns):
        if k == 0 or turn.tools is not None:
            stretches.append((traj.tools_at(k), []))
        stretches[-1][1].append(position)
        position += 1 + len(turn.tool_messages)
    out = []
    for tools, replies in stretches:
        if any(i >= len(traj.messages) or traj.messages[i].role != "assistant" for i in replies):
            log.warning("the trajectory's messages do not follow its turns; expert game skipped")
            return []
        seq = _rendered_sequence(traj.messages[: replies[-1] + 1], tools, replies, chat, max_length)
        if seq is not None:
            out.append(seq)
    return out


def _rendered_sequence(
    messages: list[Any],
    tools: list[dict[str, Any]] | None,
    trained: list[int],
    chat: ChatTokenizer,
    max_length: int | None,
) -> TrainSequence | None:
    """`messages` rendered with `tools`; the assistant messages at `trained` are the mask."""
    tools = tools or None
    full = chat.render(messages, tools, add_generation_prompt=False)
    mask = [0] * len(full)
    for i in trained:
        head = chat.render(messages[:i], tools, add_generation_prompt=True)
        if full[: len(head)] != head:
            log.warning("the chat template is not prefix-preserving; expert game skipped")
            return None
        end = len(head)
        while end < len(full) and full[end] not in chat.end_of_turn_ids:
            end += 1
        for j in range(len(head), min(end + 1, len(full))):
            mask[j] = 1
    end = max((j for j, v in enumerate(mask) if v), default=len(full) - 1) + 1
    full, mask = full[:end], mask[:end]
    if max_length is not None and len(full) > max_length:
        full, mask = full[:max_length], mask[:max_length]
    return TrainSequence(full, mask, 1.0)


def rollout_sequences(
    traj: Trajectory,
    episode_advantage: float,
    turn_advantages: list[float] | None,
    format_credit: list[float] | None,
) -> list[TrainSequence]:
    """A rollout's training sequences: each turn's tokens carry the turn's own advantage when
    it has one (per-turn credit), else the episode's; format credit adds to either."""
    if turn_advantages is None:
        return trajectory_sequences(traj, episode_advantage, format_credit)
    if format_credit is not None:
        turn_advantages = [a + c for a, c in zip(turn_advantages, format_credit, strict=True)]
    return trajectory_sequences(traj, 0.0, turn_advantages)
