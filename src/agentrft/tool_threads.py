"""Worker threads for sync tools, so a blocking tool never blocks the event loop.

Every rollout runs on an asyncio loop, and many share one (in the AgentCore runtime, every
rollout of the process runs on one worker loop). A sync `@tool` that calls `requests`, a
database driver or boto3 would hold that loop, and with it every other episode, for as long
as it blocks. The agent loop runs sync tools here instead and awaits them under the
episode's deadline.

A Python thread cannot be stopped. When the deadline passes while a sync tool still runs,
the episode ends (`wall_clock`) and the thread is *given up*: it stops counting against the
pool's size, so a new worker takes its place for the next call, and it exits when its call
returns (it never takes another job unless there is room again). Hung tools therefore never
shrink the pool's capacity for live calls; each costs one thread for as long as it hangs,
logged as a warning and counted in `ToolThreads.lost`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger("agentrft.tools")

T = TypeVar("T")

#: Size of the pool `run_episode` uses when it is given none: `run_episodes`' default
#: concurrency (one thread per episode in flight means a sync call never queues).
DEFAULT_TOOL_THREADS = 32


class ToolThreads:
    """A bounded pool of daemon threads for sync tool calls, safe to share across loops.

    At most `size` calls run at once (the rest queue, in order); threads start on demand
    and are reused. Daemon threads, so a tool that never returns cannot keep the process
    alive at exit. `shutdown()` (or leaving a `with` block) lets the idle threads go; it
    never waits for a running call.
    """

    def __init__(self, size: int, *, name: str = "agentrft-tool") -> None:
        if size < 1:
            raise ValueError(f"ToolThreads size must be at least 1, got {size}")
        self._size = size
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # a stack: the most recently used thread goes first
        self._counted = 0  # threads counted against `size`: busy or idle, not given up
        self._backlog: deque[_Job] = deque()
        self._lost = 0
        self._closed = False
        self._serial = itertools.count(1)

    @property
    def size(self) -> int:
        """How many calls may run at once."""
        return self._size

    @property
    def lost(self) -> int:
        """Threads given up on at a deadline whose call has not returned yet."""
        with self._lock:
            return self._lost

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on a worker thread; its result or its exception.

        Cancel the awaiting task (a deadline does) and the call is dropped if it has not
        started, or its thread is given up if it has; either way the cancellation
        propagates at once.
        """
        job = self._submit(fn, args, kwargs)
        try:
            return await asyncio.wrap_future(job.future)
        except BaseException:  # cancelled (a deadline) or the loop is going away
            if not job.future.done():
                self._give_up(job)
            raise

    def shutdown(self) -> None:
        """Stop taking calls; idle threads exit now, busy ones when their call returns."""
        with self._lock:
            self._closed = True
            for worker in self._idle:
                worker.inbox.put(None)
            self._counted -= len(self._idle)
            self._idle.clear()
            while self._backlog:
                self._backlog.popleft().future.cancel()

    def __enter__(self) -> ToolThreads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- internals ---------------------------------------------------------------------
    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> _Job:
        job = _Job(fn, args, kwargs)
        with self._lock:
            if self._closed:
                raise RuntimeError("this ToolThreads pool is shut down; create a new one")
            if self._idle:
                self._idle.pop().inbox.put(job)
            elif self._counted < self._size:
                self._start_worker(job)
            else:
                self._backlog.append(job)
        return job

    def _start_worker(self, job: _Job) -> None:
        """Start a thread that runs `job` first (call with the lock held)."""
        self._counted += 1
        worker = _Worker()
        threading.Thread(
            target=self._work,
            args=(worker, job),
            name=f"{self._name}-{next(self._serial)}",
            daemon=True,
        ).start()

    def _work(self, worker: _Worker, job: _Job | None) -> None:
        while job is not None:
            self._execute(worker, job)
            job = self._next_job(worker)

    def _execute(self, worker: _Worker, job: _Job) -> None:
        with self._lock:  # with the lock: `_give_up` sees a job as queued or as running
            if not job.future.set_running_or_notify_cancel():
                return  # its episode stopped waiting before it started
            job.worker = worker
            job.started = time.monotonic()
        try:
            result = job.fn(*job.args, **job.kwargs)
        except BaseException as exc:  # the awaiting side re-raises it, as a thread pool does
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)

    def _next_job(self, worker: _Worker) -> _Job | None:
        """The worker's next job, waiting idle for one; None when the thread should exit."""
        with self._lock:
            if worker.given_up:
                self._lost -= 1
                log.info(
                    "a given-up tool thread's call returned (%d given up still running)",
                    self._lost,
                )
                if self._closed or self._counted >= self._size:
                    return None  # its replacement took its place
                worker.given_up = False
                self._counted += 1
            if self._closed:
                self._counted -= 1
                return None
            while self._backlog:
                job = self._backlog.popleft()
                if not job.future.cancelled():
                    return job
            self._idle.append(worker)
        return worker.inbox.get()

    def _give_up(self, job: _Job) -> None:
        """The caller stopped waiting for `job`: drop it, or give up its thread."""
        with self._lock:
            if job.future.done():
                return
            if job.worker is None:  # still queued: it never runs
                job.future.cancel()
                return
            worker = job.worker
            if worker.given_up:
                return
            worker.given_up = True
            self._counted -= 1
            self._lost += 1
            lost = self._lost
            # A queued call must not wait for a thread that may never come back.
            while self._backlog and self._counted < self._size and not self._closed:
                queued = self._backlog.popleft()
                if not queued.future.cancelled():
                    self._start_worker(queued)
        log.warning(
            "sync tool %s still running after %.1fs at its episode's deadline: its thread "
            "is given up and a new one takes its place (%d given up still running). Give "
            "the blocking call a timeout of its own.",
            _describe(job.fn),
            time.monotonic() - job.started,
            lost,
        )


class _Worker:
    __slots__ = ("given_up", "inbox")

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.given_up = False


class _Job:
    __slots__ = ("args", "fn", "future", "kwargs", "started", "worker")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.future: Future[Any] = Future()
        self.worker: _Worker | None = None
        self.started = 0.0


def _describe(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "name", None) or getattr(fn, "__qualname__", None)  # a Tool has .name
    return repr(name) if isinstance(name, str) else repr(fn)


_shared: ToolThreads | None = None
_shared_lock = threading.Lock()


def shared_tool_threads() -> ToolThreads:
    """The process-wide pool (`DEFAULT_TOOL_THREADS` threads) for callers that pass none:
    `run_episode` on its own, `Environment.call_tool` and `Tool.invoke` called directly."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ToolThreads(DEFAULT_TOOL_THREADS, name="agentrft-tool-shared")
        return _shared
