"""Rich rendering for humans: an episode turn by turn, a reward breakdown, a reward check.

`agentrft play` and `agentrft replay` print through `render_trajectory`, so a stored
trajectory looks exactly like a live one. Model text is printed as plain `Text`, never as
markup: a model writing `[bold]` must not restyle the terminal.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from agentrft.messages import Message, ToolCall
    from agentrft.reward import RewardCheckReport, RewardResult
    from agentrft.trajectory import Trajectory

_ROLE_STYLE = {"system": "magenta", "user": "green", "assistant": "cyan", "tool": "yellow"}


def render_trajectory(
    trajectory: Trajectory, console: Console, *, title: str | None = None, max_chars: int = 4000
) -> None:
    """Print an episode: the opening messages, each turn (text, tool calls, replies), the
    failures, and the reward breakdown."""
    t = trajectory
    head = Text()
    head.append(title or f"episode {t.id}", style="bold")
    head.append(f"  task={t.task}")
    if t.instance_id:
        head.append(f"  instance={t.instance_id}")
    if t.metadata:
        head.append("  " + " ".join(f"{k}={v}" for k, v in t.metadata.items()), style="dim")
    console.rule(head)

    # Messages before the first assistant turn: system and user prompts.
    for msg in t.messages:
        if msg.role == "assistant":
            break
        console.print(_message_panel(msg, max_chars))

    for turn in t.turns:
        label = f"turn {turn.index + 1}"
        if turn.finish_reason:
            label += f" · {turn.finish_reason}"
        if turn.completion_tokens:
            label += f" · {turn.completion_tokens} tokens"
        console.rule(Text(label, style="dim"), align="left")
        console.print(_message_panel(turn.assistant, max_chars))
        for reply in turn.tool_messages:
            console.print(_message_panel(reply, max_chars))

    if t.failures:
        failures = Table(title="failures", show_header=True, header_style="bold red")
        failures.add_column("turn", justify="right")
        failures.add_column("kind", style="red")
        failures.add_column("detail")
        for f in t.failures:
            turn = "-" if f.turn is None else str(f.turn + 1)
            failures.add_row(turn, f.kind, Text(_clip(f.detail, 300)))
        console.print(failures)
    summary = Text(
        f"stop: {t.stop_reason or '-'} · turns: {len(t.turns)} · tool calls: {t.tool_calls} · "
        f"{t.wall_s:.2f}s",
        style="dim",
    )
    console.print(summary)
    if t.reward is not None:
        console.print(reward_table(t.reward))


def _message_panel(msg: Message, max_chars: int) -> Panel:
    parts: list[Text] = []
    if msg.reasoning:
        parts.append(Text(_clip(msg.reasoning, max_chars), style="dim italic"))
    if msg.content:
        parts.append(Text(_clip(msg.content, max_chars)))
    for call in msg.tool_calls or []:
        parts.append(_call_text(call))
    if not parts:
        parts.append(Text("(empty)", style="dim"))
    title = msg.role
    if msg.role == "tool" and msg.name:
        title = f"tool · {msg.name}"
    return Panel(
        Group(*parts),
        title=title,
        title_align="left",
        border_style=_ROLE_STYLE.get(msg.role, "white"),
    )


def _call_text(call: ToolCall) -> Text:
    text = Text("→ ", style="bold")
    text.append(call.name, style="bold cyan")
    try:
        args = json.dumps(json.loads(call.arguments or "{}"), ensure_ascii=False)
    except json.JSONDecodeError:
        args = call.arguments  # malformed JSON is shown as the model wrote it
        text.append(" (malformed JSON)", style="red")
    text.append(f"({args})")
    if call.recovered:
        text.append("  [recovered from plain text]", style="yellow")
    return text


def reward_table(reward: RewardResult) -> Table:
    """The reward breakdown: components, total, outcome tier, solved."""
    table = Table(title="reward", title_justify="left", title_style="bold")
    table.add_column("component")
    table.add_column("value", justify="right")
    for name, value in reward.components.items():
        table.add_row(name, f"{value:+.4f}")
    if reward.shaping and "shaping" not in reward.components:
        table.add_row("shaping (raw)", f"{reward.shaping:+.4f}")
    table.add_row(Text("total", style="bold"), Text(f"{reward.total:+.4f}", style="bold"))
    table.add_section()
    table.add_row("outcome tier", reward.outcome or "-")
    table.add_row("solved", Text("yes", style="green") if reward.solved else Text("no", style="red"))
    return table


def reward_check_table(report: RewardCheckReport, title: str = "reward check") -> Table:
    """Tier ranges (best first) from `check_reward_order`."""
    table = Table(title=title)
    table.add_column("rank", justify="right")
    table.add_column("tier")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    table.add_column("samples", justify="right")
    for rank, tier, lo, hi, n in report.tier_ranges():
        table.add_row(str(rank), tier, f"{lo:+.4f}", f"{hi:+.4f}", str(n))
    return table


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … ({len(text) - limit} more characters)"
