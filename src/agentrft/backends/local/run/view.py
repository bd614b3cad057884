"""The live view of a training run: step, reward, solve rate, tokens/s, seconds per phase.

On a terminal it is a rich `Live` table of the latest steps over a progress bar with the
elapsed time and an estimate of the time left, and the health conditions that hold now;
elsewhere (CI logs, pipes, files) one whole line per step, never wrapped, ending with the
same estimate. `console=None` keeps it silent (tests).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

COLUMNS = (
    ("step", "step", "{:.0f}"),
    ("reward", "reward_mean", "{:.3f}"),
    ("solved", "solve_rate", "{:.0%}"),
    ("zero-var", "zero_variance_groups", "{:.0%}"),
    ("dropped", "analysis/dropped_groups", "{:.0f}"),
    ("trunc", "rollout/turns/truncated_frac", "{:.0%}"),
    ("text", "rollout/turns/text_reply_frac", "{:.0%}"),
    ("turns", "turns_mean", "{:.2f}"),
    ("tok/s", "tokens_per_s", "{:.0f}"),
    ("rollout s", "rollout_s", "{:.2f}"),
    # Only with max_steps_off_policy > 0: the batch's age and the step's wait for it.
    ("stale", "off_policy/staleness_max", "{:.0f}"),
    ("wait s", "rollout_wait_s", "{:.2f}"),
    ("train s", "train_s", "{:.2f}"),
    ("sync s", "sync_s", "{:.2f}"),
    ("loss", "loss", "{:+.4f}"),
    ("grad", "grad_norm", "{:.3f}"),
)

OPTIONAL = frozenset({"off_policy/staleness_max", "rollout_wait_s"})


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def eta(elapsed_s: float, done: int, left: int) -> str | None:
    """Time left at the mean pace so far: `done` steps took `elapsed_s`, `left` remain
    (None before the first step)."""
    if done <= 0:
        return None
    return duration(elapsed_s / done * max(0, left))


class LiveView:
    def __init__(self, console: Any | None, total_steps: int, title: str = "GRPO") -> None:
        self.console = console
        self.total = total_steps
        self.title = title
        self.rows: deque[dict[str, float]] = deque(maxlen=12)
        #: The health conditions that hold now (shown under the live table).
        self.conditions: list[str] = []
        self._live: Any = None
        self._progress: Any = None
        self._task: Any = None
        self._started = time.perf_counter()
        #: The first step this view saw, and how many it has seen (a resumed run starts
        #: past step 1; its estimate counts only the steps run here).
        self._first: int | None = None
        self._seen = 0

    def __enter__(self) -> LiveView:
        self._started = time.perf_counter()
        if self.console is not None and getattr(self.console, "is_terminal", False):
            from rich.live import Live
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}"),
                console=self.console,
            )
            self._task = self._progress.add_task(self.title, total=self.total, eta="")
            self._live = Live(self._renderable(), console=self.console, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._renderable())
            self._live.__exit__(*exc)
            self._live = None

    def note(self, text: str, *, markup: bool = True) -> None:
        """A one-off message (phase changes, checkpoints), never wrapped."""
        if self.console is not None:
            self.console.print(text, highlight=False, markup=markup, soft_wrap=True)

    def health(self, conditions: list[str]) -> None:
        """The health conditions that hold now (the live view shows them; a step line
        does not repeat them: the log says when each starts and clears)."""
        self.conditions = list(conditions)
        if self._live is not None:
            self._live.update(self._renderable())

    def eta(self, step: int) -> str | None:
        """The estimated time left after `step`, at this view's pace so far."""
        if self._first is None:
            return None
        return eta(time.perf_counter() - self._started, self._seen, self.total - step)

    def step(self, step: int, metrics: dict[str, float]) -> None:
        row = {"step": float(step), **metrics}
        self.rows.append(row)
        if self._first is None:
            self._first = step
        self._seen += 1
        left = self.eta(step)
        if self.console is None:
            return
        if self._live is not None:
            self._progress.update(
                self._task, total=self.total, completed=step, eta=f"eta {left}" if left else ""
            )
            self._live.update(self._renderable())
            return
        parts = [f"step {step}/{self.total}"]
        for label, key, fmt in COLUMNS[1:]:
            if key in row:
                parts.append(f"{label} {fmt.format(row[key])}")
        if left is not None and step < self.total:
            parts.append(f"eta {left}")
        self.console.print(" · ".join(parts), highlight=False, markup=False, soft_wrap=True)

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        parts: list[Any] = [self._table()]
        if self.conditions:
            parts.append(Text("health: " + ", ".join(self.conditions), style="yellow"))
        if self._progress is not None:
            parts.append(self._progress)
        return Group(*parts)

    def _table(self) -> Any:
        from rich.table import Table

        done = int(self.rows[-1]["step"]) if self.rows else 0
        table = Table(title=f"{self.title} · step {done}/{self.total}", expand=False)
        # The off-policy columns only for a run that has them; the rest always.
        columns = [c for c in COLUMNS if c[1] not in OPTIONAL or any(c[1] in r for r in self.rows)]
        for label, _, _ in columns:
            table.add_column(label, justify="right")
        for row in self.rows:
            table.add_row(*(fmt.format(row[k]) if k in row else "-" for _, k, fmt in columns))
        return table
