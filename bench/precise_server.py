"""The benchmarks' loopback server: `FakeOpenAIServer`'s core, on time to the microsecond
and in a child process.

`PreciseCore` delivers `latency_s` to within a few tenths of a millisecond. A plain
`asyncio.sleep` overshoots by up to a millisecond or two (epoll's timeout is in whole
milliseconds, then the process must be woken); here one task sleeps until `_SPIN_S` before
the earliest due time and then polls the loop (`await asyncio.sleep(0)`) until it, writing
each reply as it falls due, so a lone reply leaves within microseconds of its due time, at
the price of spinning a core for those last milliseconds. Replies that fall due together
still leave one write apart (a loopback send costs some 15-20 us on a small VM), which
`latencies()` shows.

`BenchServer` runs the core in a child process, so the server does not share the client's
core (the script must be picklable, i.e. a module-level function); the parent reads the
records over the process's pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import itertools
import multiprocessing
import pickle
import time
from typing import Any

from agentrft.testing.fake_server import (
    SENT,
    DeliveredLatency,
    FakeOpenAIServer,
    RecordedRequest,
    ServerConfig,
    ServerCore,
    ServerScript,
)

# Sleep until this long before the due time, then poll the loop until it. Covers epoll's
# millisecond rounding plus a wake-up delay on a busy machine.
_SPIN_S = 0.002


class _Due:
    """A reply waiting for its due time."""

    __slots__ = ("done", "response", "timing", "writer")

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        response: bytes | None,
        timing: DeliveredLatency | None,
    ) -> None:
        self.writer = writer
        self.response = response
        self.timing = timing
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class PreciseCore(ServerCore):
    """`ServerCore` whose replies leave at their due time, to within microseconds."""

    def __init__(self, cfg: ServerConfig) -> None:
        super().__init__(cfg)
        # Replies waiting for their due time, and the one task that spins for all of them
        # (64 spinning handlers would each poll the clock every turn of the loop, making
        # every turn 64 times longer).
        self._due: list[tuple[float, int, _Due]] = []
        self._seq = itertools.count()
        self._spinner: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None

    async def close(self) -> None:
        if self._spinner is not None:
            self._spinner.cancel()
        await super().close()

    async def _request_read(self) -> None:
        if self.cfg.latency_s > 0:
            # Let every request read in this turn of the loop be stamped before any is
            # parsed and rendered (tens of us each), so a burst's last request is not
            # stamped, and answered, late by the work on the others.
            self._release_due()
            await asyncio.sleep(0)

    def _between_work(self) -> None:
        self._release_due()  # replies due now go before this request's work

    async def _deliver(
        self,
        due: float,
        writer: asyncio.StreamWriter,
        response: bytes | None,
        timing: DeliveredLatency,
    ) -> tuple[bytes | None, DeliveredLatency | None]:
        self._release_due()
        await self._send_at(due, _Due(writer, response, timing))
        return (SENT if response is not None else None), None

    async def _send_at(self, due: float, item: _Due) -> None:
        """Write `item` at `due` (time.monotonic). One spinner task serves all waiting
        replies; `_release_due` also runs between requests' work."""
        loop = asyncio.get_running_loop()
        heapq.heappush(self._due, (due, next(self._seq), item))
        if self._spinner is None or self._spinner.done():
            self._spinner = loop.create_task(self._spin())
        elif self._due[0][2] is item and self._wake is not None and not self._wake.done():
            self._wake.set_result(None)  # due before what the spinner sleeps for
        await item.done

    def _release_due(self) -> None:
        """Send every reply whose time has come (a no-op, bar a clock read, when none)."""
        now = time.monotonic()
        while self._due and self._due[0][0] <= now:
            item = heapq.heappop(self._due)[2]
            if item.done.done():  # its handler was cancelled (server shutdown)
                continue
            if item.response is not None:  # None: a Disconnect, due now
                with contextlib.suppress(Exception):  # the client may have gone
                    self._send(item.writer, item.response, item.timing)
            item.done.set_result(None)

    async def _spin(self) -> None:
        """Release each waiting reply at its due time: sleep until `_SPIN_S` before the
        earliest, then poll the clock once per turn of the loop (other connections' I/O
        runs in between)."""
        loop = asyncio.get_running_loop()
        while self._due:
            self._release_due()
            now = time.monotonic()
            if not self._due:
                return
            remaining = self._due[0][0] - now - _SPIN_S
            if remaining > 0:
                self._wake = loop.create_future()
                timer = loop.call_later(remaining, _set_if_pending, self._wake)
                await self._wake
                timer.cancel()
            else:
                await asyncio.sleep(0)


def _set_if_pending(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class BenchServer(FakeOpenAIServer):
    """`FakeOpenAIServer` in a child process, with precise latency by default.

    Args: those of `FakeOpenAIServer` (the script must be picklable), and `precise`: False
    waits with a plain `asyncio.sleep` (up to a millisecond or two late).
    """

    def __init__(
        self,
        script: ServerScript,
        *,
        latency_s: float = 0.0,
        precise: bool = True,
        record: bool = False,
        parse_messages: bool = False,
        model_name: str = "fake-model",
        port: int = 0,
    ) -> None:
        super().__init__(
            script,
            latency_s=latency_s,
            record=record,
            parse_messages=parse_messages,
            model_name=model_name,
            port=port,
        )
        self.precise = precise
        self._proc: Any = None
        self._pipe: Any = None

    def start(self) -> BenchServer:
        if self.port is not None:
            return self
        try:
            pickle.dumps(self._cfg.script)
        except Exception as exc:
            raise TypeError(
                "BenchServer needs a picklable script (a module-level function or callable "
                f"object); got {self._cfg.script!r}: {exc}"
            ) from None
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe once threads exist
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve_in_process,
            args=(self._cfg, self.precise, self._want_port, child),
            name="BenchServer",
            daemon=True,
        )
        self._proc.start()
        if not self._pipe.poll(30.0):
            self.stop()
            raise RuntimeError("BenchServer child process did not start within 30 s")
        msg = self._pipe.recv()
        if isinstance(msg, str):
            self.stop()
            raise RuntimeError(f"BenchServer child process failed: {msg}")
        self.port = int(msg)
        return self

    def stop(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(Exception):
                self._pipe.send("stop")
            self._proc.join(timeout=5.0)
            if self._proc.is_alive():
                self._proc.terminate()
                self._proc.join(timeout=5.0)
            self._proc = None
        self.port = None

    def __enter__(self) -> BenchServer:
        return self.start()

    @property
    def script(self) -> ServerScript:
        return self._cfg.script

    @script.setter
    def script(self, fn: ServerScript) -> None:
        raise RuntimeError("the script of a BenchServer cannot change (it runs in a child)")

    @property
    def pid(self) -> int | None:
        """The child process serving (None before start): lets a benchmark account for
        the server's CPU time."""
        return self._proc.pid if self._proc is not None and self.port is not None else None

    def _ask(self, what: str) -> Any:
        if self._proc is None:
            raise RuntimeError("BenchServer is not running; use it as a context manager")
        self._pipe.send(what)
        return self._pipe.recv()

    @property
    def requests(self) -> list[RecordedRequest]:
        return [RecordedRequest(*r) for r in self._ask("requests")]

    def stats(self) -> dict[str, int]:
        return dict(self._ask("stats"))

    def latencies(self) -> list[DeliveredLatency]:
        return [DeliveredLatency(*t) for t in self._ask("latencies")]

    def clear(self) -> None:
        self._ask("clear")


def _serve_in_process(cfg: ServerConfig, precise: bool, port: int, pipe: Any) -> None:
    """Child-process entry: serve, answer the parent's questions, stop on "stop" or EOF."""

    async def main() -> None:
        core = PreciseCore(cfg) if precise else ServerCore(cfg)
        try:
            bound = await core.start(port)
        except BaseException as exc:
            pipe.send(f"{type(exc).__name__}: {exc}")
            return
        pipe.send(bound)
        # The child serves and does nothing else: move everything alive now (imports, the
        # script) out of the collector's view, so a full collection does not stall replies.
        gc.freeze()
        loop = asyncio.get_running_loop()
        while True:
            try:  # a worker thread blocks on the pipe; the answers are built on the loop
                what = await loop.run_in_executor(None, pipe.recv)
            except (EOFError, OSError):
                break
            if what == "stop":
                break
            pipe.send(_answer(core, what))
        await core.close()

    asyncio.run(main())


def _answer(core: ServerCore, what: str) -> Any:
    if what == "requests":
        return [(r.method, r.path, r.headers, r.body) for r in core.requests]
    if what == "latencies":
        return [(t.conversation, t.arrived, t.sent) for t in core.latencies]
    if what == "stats":
        return core.stats()
    if what == "clear":
        core.clear()
        return None
    return None
