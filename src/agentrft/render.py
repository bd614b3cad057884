"""Rich rendering for humans: an episode turn by turn, a reward breakdown, a reward check.

`agentrft play` and `agentrft replay` print through `render_trajectory`, so a stored
trajectory looks exactly like a live one. Model text is printed as plain `Text`, never as
markup: a model writing `[bold]` must not restyle the terminal.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agentrft.policy import Completion, Policy, Sampling

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
    render_header(t.task, console, title=title or f"episode {t.id}", trajectory=t)
    # Messages before the first assistant turn: system and user prompts.
    for msg in t.messages:
        if msg.role == "assistant":
            break
        console.print(message_panel(msg, max_chars))
    for turn in t.turns:
        render_turn_rule(turn.index, turn.finish_reason, turn.completion_tokens, console)
        console.print(message_panel(turn.assistant, max_chars))
        for reply in turn.tool_messages:
            console.print(message_panel(reply, max_chars))
    render_outcome(t, console)


def render_header(
    task: str, console: Console, *, title: str, trajectory: Trajectory | None = None
) -> None:
    head = Text()
    head.append(title, style="bold")
    head.append(f"  task={task}")
    if trajectory is not None and trajectory.instance_id:
        head.append(f"  instance={trajectory.instance_id}")
    if trajectory is not None and trajectory.metadata:
        meta = " ".join(f"{k}={v}" for k, v in trajectory.metadata.items())
        head.append("  " + meta, style="dim")
    console.rule(head)


def render_turn_rule(
    index: int, finish_reason: str | None, completion_tokens: int, console: Console
) -> None:
    label = f"turn {index + 1}"
    if finish_reason:
        label += f" · {finish_reason}"
    if completion_tokens:
        label += f" · {completion_tokens} tokens"
    console.rule(Text(label, style="dim"), align="left")


def render_outcome(trajectory: Trajectory, console: Console) -> None:
    """The end of an episode: failures, stop reason, and the reward breakdown."""
    t = trajectory
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


class PlayView(Policy):
    """Wraps a policy so an episode prints as it is played, in `render_trajectory`'s layout.

    Each call prints the messages added since the last one (the opening prompts, then the
    previous turn's tool replies), then the new assistant turn. `finish(trajectory)` prints
    what followed the last call and the outcome.
    """

    def __init__(self, inner: Policy, console: Console, max_chars: int = 4000) -> None:
        self.inner = inner
        self.name = inner.name
        self.console = console
        self.max_chars = max_chars
        self._session: Policy | None = None
        self._printed = 0
        self._turns = 0

    def session(self) -> Policy:
        self._session = self.inner.session()
        self._printed = 0
        self._turns = 0
        return self

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        self._print_since(messages)
        completion = await (self._session or self.inner).complete(messages, tools, sampling)
        render_turn_rule(
            self._turns, completion.finish_reason, completion.completion_tokens, self.console
        )
        self.console.print(message_panel(completion.message, self.max_chars))
        self._turns += 1
        self._printed = len(messages) + 1  # the loop appends this reply next
        return completion

    def finish(self, trajectory: Trajectory) -> None:
        self._print_since(trajectory.messages)
        render_outcome(trajectory, self.console)

    def _print_since(self, messages: list[Message]) -> None:
        for msg in messages[self._printed :]:
            self.console.print(message_panel(msg, self.max_chars))
        self._printed = len(messages)

    async def aclose(self) -> None:
        await self.inner.aclose()


def message_panel(msg: Message, max_chars: int) -> Panel:
    parts: list[Text] = []
    if msg.reasoning:
        parts.append(Text(_clip(msg.reasoning, max_chars), style="dim italic"))
    if msg.content:
        parts.append(Text(_clip(msg.content, max_chars)))
    for call in msg.tool_calls or []:
        parts.append(_call_text(call))
    if not parts:
        parts.append(Text("(empty)", style="dim"))
    title: str = msg.role
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
    table.add_row(
        "solved", Text("yes", style="green") if reward.solved else Text("no", style="red")
    )
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
