"""One line that says what is running, and for how long, once a tool or reward of the
episode being played has run past a few seconds.

`agentrft play` prints each turn when it ends; a tool that takes minutes (or hangs until the
episode's limit) would otherwise leave the terminal silent. The line is drawn by a thread of
its own, from the loop watch's record of what runs: it keeps going when an `async def` tool
blocks the event loop itself. On a terminal it is a live status line that disappears when
the call returns; in a log, a line when the call passes `AFTER_S` and again every `EVERY_S`.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.status import Status

from agentrft.loop_watch import LoopWatch

#: A tool or reward that runs longer than this gets the status line.
AFTER_S = 3.0
#: In a log (no terminal), how often the line is repeated while the call runs.
EVERY_S = 30.0
#: How often the thread looks.
TICK_S = 0.5


class StillRunning:
    """Context manager around one episode's play: `with StillRunning(watch, console, 600):`."""

    def __init__(self, watch: LoopWatch, console: Console, limit_s: float | None) -> None:
        self.watch = watch
        self.console = console
        self.limit_s = limit_s
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="agentrft-still-running", daemon=True
        )
        self._status: Status | None = None
        self._logged: tuple[str, str, int] | None = None
        #: Every line shown (for tests and the log).
        self.shown: list[str] = []

    def __enter__(self) -> StillRunning:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._hide()

    def line(self, what: str, elapsed: float) -> str:
        limit = f" (the episode's limit is {self.limit_s:g} s)" if self.limit_s else ""
        return f"still running: {what}, {elapsed:.0f} s so far{limit}"

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            now = self.watch.longest()
            if now is None or now[2] < AFTER_S:
                self._hide()
                continue
            what, episode, elapsed = now
            text = self.line(what, elapsed)
            if self.console.is_terminal:
                self._show(text)
                continue
            mark = (what, episode, int((elapsed - AFTER_S) // EVERY_S))
            if mark != self._logged:
                self._logged = mark
                self._say(text)

    def _say(self, text: str) -> None:
        self.shown.append(text)
        self.console.print(text, highlight=False, markup=False)

    def _show(self, text: str) -> None:
        if self._status is None:
            self.shown.append(text)
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def _hide(self) -> None:
        status, self._status = self._status, None
        if status is not None:
            status.stop()


def still_running(console: Console, limit_s: float | None) -> Any:
    """A `StillRunning` on the running loop's watch (call inside the loop)."""
    from agentrft.loop_watch import watch_loop

    return StillRunning(watch_loop(), console, limit_s)
