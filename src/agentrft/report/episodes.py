"""Episodes as the page's browser shows them: compact, turn by turn, hidden values last.

Each episode becomes a small JSON object: what the filters need (split, step, task,
outcome tier, failure kinds, reward), the messages in order with the assistant's turns
marked (tool calls, per-turn reward, truncation and format faults), and an `after` part
with the dataset row and the task's hidden values: the page shows it below the episode's
last turn, never above (a row's prompt string may hold the answer, as Wordle's does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentrft.report.inputs import Split
from agentrft.trajectory import Trajectory

__all__ = ["FORMAT_FAULTS", "episode_rows", "hidden_values_of"]

#: Failure kinds the page marks on a turn as a format fault (the reply's form, not its
#: content, was wrong).
FORMAT_FAULTS = frozenset(
    {
        "no_tool_call",
        "malformed_tool_json",
        "unknown_tool",
        "invalid_arguments",
        "plain_text_call",
        "unterminated_tool_call",
        "empty_reply",
    }
)
#: Longest text kept per message: a 20 kB tool reply would make the page slow to open and
#: tells a reader no more than its first 4 kB.
MAX_TEXT = 4000


def hidden_values_of(trajectory: Trajectory, tasks: Callable[[str], Any]) -> list[str] | None:
    """The task's hidden values for this episode's row (`Task.hidden_values`), or None when
    the task is not installed here or its row does not parse."""
    try:
        task = tasks(trajectory.task)
        return [str(v) for v in task.hidden_values(task.parse(trajectory.prompt)) if str(v)]
    except Exception:  # a task not installed, or a row of an older version of it
        return None


def episode_rows(splits: list[Split], tasks: Callable[[str], Any]) -> list[dict[str, Any]]:
    """Every episode of every split, as the browser's JSON, numbered across the page."""
    rows: list[dict[str, Any]] = []
    for split in splits:
        for n, t in enumerate(split.trajectories):
            rows.append(_episode(len(rows), split.name, n, t, tasks))
    return rows


def _episode(
    index: int, split: str, n: int, t: Trajectory, tasks: Callable[[str], Any]
) -> dict[str, Any]:
    reward = t.reward
    per_turn = (reward.per_turn if reward else None) or []
    faults: dict[int, list[str]] = {}
    for f in t.failures:
        if f.turn is not None:
            faults.setdefault(f.turn, []).append(f.kind)
    turn_of = {id(turn.assistant): turn for turn in t.turns}
    messages, k = [], 0
    for m in t.messages:
        item: dict[str, Any] = {"role": m.role, "text": _clip(m.content or "")}
        if m.name:
            item["name"] = m.name
        if m.tool_calls:
            item["calls"] = [
                {"name": c.name, "arguments": _clip(c.arguments)} for c in m.tool_calls
            ]
        if m.role == "assistant":
            turn = turn_of.get(id(m)) or (t.turns[k] if k < len(t.turns) else None)
            item["turn"] = k
            if turn is not None and turn.finish_reason == "length":
                item["truncated"] = True
            if faults.get(k):
                item["faults"] = faults[k]
            if k < len(per_turn):
                item["reward"] = per_turn[k]
            k += 1
        messages.append(item)
    kinds = sorted({f.kind for f in t.failures})
    hidden = hidden_values_of(t, tasks)
    return {
        "i": index,
        "split": split,
        "n": n,  # the episode's line in its file (what `agentrft replay --index` takes)
        "id": t.id,
        "task": t.task,
        "step": t.metadata.get("step"),
        "outcome": (reward.outcome if reward else "") or ("solved" if t.solved else "-"),
        "solved": bool(t.solved),
        "reward": round(reward.total, 4) if reward else None,
        "failures": kinds,
        "format_faults": [k for k in kinds if k in FORMAT_FAULTS],
        "stop": t.stop_reason,
        "turns": len(t.turns),
        "instance": t.instance_id,
        "messages": messages,
        # Shown only after the episode's last turn.
        "after": {"row": _clip(t.prompt), "hidden": hidden},
    }


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]} … [{len(text) - MAX_TEXT} more characters]"
