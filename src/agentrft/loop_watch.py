"""A watchdog for the event loop: it names an `async def` tool or reward that blocks it.

Every episode of a process shares one event loop (in the AgentCore runtime, every rollout;
locally, every episode of a step). A sync tool runs on a worker thread (`tool_threads`), but
an `async def` tool that calls `time.sleep`, `requests` or a CPU-bound loop runs *on* the
loop: until it returns, no other episode moves and no deadline can fire (a timeout is itself
a callback of the loop). Python cannot interrupt it, so the watch does the next best things:

- a daemon thread per loop checks every `TICK_S` that the loop still runs its callbacks;
  once it has not for `BLOCK_LIMIT_S`, it logs one warning naming what the blocked task was
  running (`tool 'lookup'` of episode `e1`) and for how long;
- the agent loop asks, when the call returns, how long it blocked the loop
  (`blocked_s`); past `BLOCK_LIMIT_S` the episode ends (failure kind `blocked_loop`,
  the lowest reward), so the tool is found in the first episodes rather than after a run
  whose every deadline it defeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

log = logging.getLogger("agentrft.loop_watch")

#: How long the loop may go without running a callback before the watch speaks up and the
#: episode whose code held it ends: far beyond any well-behaved step of the loop (a policy
#: request, a tool's own await) and well within an episode's default deadline.
BLOCK_LIMIT_S = 5.0
#: How often the watchdog thread looks.
TICK_S = 0.25


@dataclass
class _Running:
    what: str
    episode: str
    started: float
    blocked_s: float = 0.0
    warned: bool = False


class LoopWatch:
    """The watchdog of one event loop (get it with `watch_loop()` on that loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._lock = threading.Lock()
        self._running: dict[asyncio.Task[object], _Running] = {}
        self._beat = time.monotonic()
        self._stalled_since: float | None = None
        self._thread = threading.Thread(target=self._watch, name="agentrft-loop-watch", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def running(self, what: str, episode: str) -> Iterator[_Running]:
        """Mark the current task as running `what` for `episode` (on the loop's thread)."""
        task = asyncio.current_task()
        entry = _Running(what, episode, time.monotonic())
        if task is None:
            yield entry
            return
        with self._lock:
            self._running[task] = entry
        try:
            yield entry
        finally:
            with self._lock:
                self._running.pop(task, None)

    def longest(self) -> tuple[str, str, float] | None:
        """What has been running longest now (`what`, `episode`, seconds), from any thread;
        None when no tool or reward runs."""
        with self._lock:
            entries = list(self._running.values())
        if not entries:
            return None
        first = min(entries, key=lambda e: e.started)
        return first.what, first.episode, time.monotonic() - first.started

    def _watch(self) -> None:
        while True:
            time.sleep(TICK_S)
            loop = self._loop()
            if loop is None or loop.is_closed():
                return
            now = time.monotonic()
            try:
                loop.call_soon_threadsafe(self._heartbeat)
            except RuntimeError:  # closed between the check and the call
                return
            stalled = now - self._beat
            if stalled < BLOCK_LIMIT_S:
                continue
            self._charge(loop, stalled)

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()

    def _charge(self, loop: asyncio.AbstractEventLoop, stalled: float) -> None:
        """The loop has run no callback for `stalled` s: charge it to the task it runs."""
        try:
            task = asyncio.current_task(loop)  # a read of the loop's current-task slot
        except RuntimeError:
            task = None
        with self._lock:
            entry = self._running.get(task) if task is not None else None  # type: ignore[arg-type]
            if entry is None:
                return
            entry.blocked_s = max(entry.blocked_s, stalled)
            if entry.warned:
                return
            entry.warned = True
        log.warning(
            "the event loop has been blocked for %.1f s by %s of episode %s: no other episode "
            "moves and no deadline fires until it returns; an async def tool or reward must "
            "await its I/O (or be a plain def: it then runs on a worker thread)",
            stalled,
            entry.what,
            entry.episode,
        )


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWatch] = (
    weakref.WeakKeyDictionary()
)
_watches_lock = threading.Lock()


def watch_loop() -> LoopWatch:
    """The watch of the running event loop (started on first use)."""
    loop = asyncio.get_running_loop()
    with _watches_lock:
        watch = _watches.get(loop)
        if watch is None:
            watch = _watches[loop] = LoopWatch(loop)
    return watch
