"""The live view of a training run: step, reward, solve rate, tokens/s, seconds per phase.

On a terminal it is a rich `Live` table of the latest steps; elsewhere (CI logs, pipes) one
line per step. `console=None` keeps it silent (tests).
"""

from __future__ import annotations

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
    ("train s", "train_s", "{:.2f}"),
    ("sync s", "sync_s", "{:.2f}"),
    ("loss", "loss", "{:+.4f}"),
    ("grad", "grad_norm", "{:.3f}"),
)


class LiveView:
    def __init__(self, console: Any | None, total_steps: int, title: str = "GRPO") -> None:
        self.console = console
        self.total = total_steps
        self.title = title
        self.rows: deque[dict[str, float]] = deque(maxlen=12)
        self._live: Any = None

    def __enter__(self) -> LiveView:
        if self.console is not None and getattr(self.console, "is_terminal", False):
            from rich.live import Live

            self._live = Live(self._table(), console=self.console, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def note(self, text: str) -> None:
        """A one-off message (phase changes, checkpoints)."""
        if self.console is not None:
            self.console.print(text, highlight=False)

    def step(self, step: int, metrics: dict[str, float]) -> None:
        row = {"step": float(step), **metrics}
        self.rows.append(row)
        if self.console is None:
            return
        if self._live is not None:
            self._live.update(self._table())
            return
        parts = [f"step {step}/{self.total}"]
        for label, key, fmt in COLUMNS[1:]:
            if key in row:
                parts.append(f"{label} {fmt.format(row[key])}")
        self.console.print(" · ".join(parts), highlight=False)

    def _table(self) -> Any:
        from rich.table import Table

        done = int(self.rows[-1]["step"]) if self.rows else 0
        table = Table(title=f"{self.title} · step {done}/{self.total}", expand=False)
        for label, _, _ in COLUMNS:
            table.add_column(label, justify="right")
        for row in self.rows:
            table.add_row(*(fmt.format(row[k]) if k in row else "-" for _, k, fmt in COLUMNS))
        return table
