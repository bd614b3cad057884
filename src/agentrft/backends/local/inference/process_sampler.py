"""The transformers sampler in a process of its own (`local.sampler_process`).

In one process the sampler's decode loop and the trainer share the interpreter: for a small
model a decode step is mostly Python (the GIL), so with rollouts played ahead of the trainer
(`max_steps_off_policy`) the two take turns instead of running side by side. Here the
`HFSampler` runs in a child (multiprocessing, spawn) with its own torch threads; this side
is a `TokenSampler` that sends each request over a pipe and awaits the answer. Adapters go
across as directories, the path the weight sync already takes for vLLM.

If the child dies (killed, out of memory), every request waiting on it and every later one
fails with a `SamplerError` naming its exit code, and `problem()` says so: the training loop
then stops with that reason (run/side_failures.py). If this process dies, the child reads
the end of its pipe and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import threading
from pathlib import Path
from typing import Any

from agentrft.backends.local.inference.sampler import Generation, SamplerError
from agentrft.policy import Sampling

__all__ = ["ProcessSampler"]

#: How long the child may take to load its model before the start counts as failed.
START_TIMEOUT_S = 600.0


class ProcessSampler:
    """A `TokenSampler` whose `HFSampler` runs in a child process (see the module docstring).

    Args:
        path: the model directory (as `HFSampler.from_pretrained` takes it).
        device, dtype, seed: the child sampler's.
        stop_ids: the ids that end a turn.
        threads: torch threads in the child (None: torch's default).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        seed: int = 0,
        stop_ids: frozenset[int] | set[int] = frozenset(),
        threads: int | None = None,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe once torch has threads
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve,
            args=(child, str(path), device, dtype, seed, sorted(stop_ids), threads),
            name="agentrft-sampler",
            daemon=True,
        )
        self.process.start()
        child.close()
        if not self._conn.poll(START_TIMEOUT_S):
            self._end()
            raise SamplerError(f"the sampler process did not load {path} in {START_TIMEOUT_S:g}s")
        try:
            ready = self._conn.recv()
        except (EOFError, OSError):
            self.process.join(5.0)
            ready = ("error", f"it exited with code {self.process.exitcode}")
        if ready[0] != "ready":
            self._end()
            raise SamplerError(f"the sampler process could not start: {ready[1]}")
        self._ids = itertools.count()
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._lock = threading.Lock()  # the pending table and the pipe's sending end
        self._gone: str | None = None
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="agentrft-sampler-reader")
        self._reader.daemon = True
        self._reader.start()

    # -- TokenSampler -------------------------------------------------------------------

    async def generate(
        self, prompt_ids: list[int], sampling: Sampling, *, adapter: str | None = None
    ) -> Generation:
        out = await self._call("generate", list(prompt_ids), sampling.model_dump(), adapter)
        return Generation(**out)

    async def load_adapter(self, name: str, path: str) -> None:
        await self._call("load", name, str(path))

    async def unload_adapter(self, name: str) -> None:
        await self._call("unload", name)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError), self._lock:
            self._conn.send(("close",))
        await asyncio.to_thread(self._end)

    def problem(self) -> str | None:
        """Why this sampler can serve no more (its process ended), or None."""
        if self._gone is None and self.process.exitcode is None:
            return None
        # Read the exit code afresh: when another thread reaped the child first, the
        # reader's own look may have found no code yet.
        return self._exit_text() if self.process.exitcode is not None else self._gone

    # -- internals ----------------------------------------------------------------------

    async def _call(self, op: str, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            if self._gone is not None or self._closed:
                raise SamplerError(self._gone or "the sampler process is closed")
            key = next(self._ids)
            self._pending[key] = (loop, future)
            try:
                self._conn.send((op, key, *args))
            except (OSError, ValueError) as exc:
                del self._pending[key]
                raise SamplerError(f"the sampler process cannot be reached: {exc}") from None
        return await future

    def _read(self) -> None:
        """Deliver each answer to its waiting request; when the pipe ends, fail them all."""
        while True:
            try:
                key, ok, payload = self._conn.recv()
            except (EOFError, OSError, ValueError):
                break
            with self._lock:
                waiting = self._pending.pop(key, None)
            if waiting is not None:
                _settle(*waiting, ok, payload)
        # multiprocessing's reaping is not thread-safe: a join elsewhere may take the exit
        # status, and this join then returns before the code is recorded. Give it a moment.
        for _ in range(50):
            self.process.join(0.1)
            if self.process.exitcode is not None:
                break
        with self._lock:
            self._gone = None if self._closed else self._exit_text()
            waiting_all, self._pending = list(self._pending.values()), {}
        for loop, future in waiting_all:
            _settle(loop, future, False, self._gone or "the sampler process is closed")

    def _exit_text(self) -> str:
        code = self.process.exitcode
        how = "is gone" if code is None else f"exited with code {code}"
        return f"the sampler process (pid {self.process.pid}) {how}"

    def _end(self) -> None:
        self.process.join(10.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        with contextlib.suppress(OSError):
            self._conn.close()


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], ok: bool, payload: Any):
    def apply() -> None:
        if future.done():
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(SamplerError(str(payload)))

    with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
        loop.call_soon_threadsafe(apply)


# -- the child ----------------------------------------------------------------------------


def _serve(
    conn: Any,
    path: str,
    device: str,
    dtype: str,
    seed: int,
    stop_ids: list[int],
    threads: int | None,
) -> None:
    """The child's main: load the sampler, then answer requests until told to close or the
    parent goes away (the pipe ends)."""
    try:
        import torch

        if threads:
            torch.set_num_threads(threads)
        from agentrft.backends.local.inference.hf_sampler import HFSampler

        sampler = HFSampler.from_pretrained(path, device=device, dtype=dtype, seed=seed)
        if stop_ids:
            sampler.stop_ids = frozenset(stop_ids)
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready",))
    asyncio.run(_answer(conn, sampler))


async def _answer(conn: Any, sampler: Any) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, ...] | None] = asyncio.Queue()

    def deliver(burst: list[tuple[Any, ...] | None]) -> None:
        for msg in burst:
            inbox.put_nowait(msg)

    def read() -> None:  # blocking reads, off the loop
        while True:
            # Whatever arrived together goes to the loop together, so that the sampler
            # batches a step's requests as it would in one process.
            burst: list[tuple[Any, ...] | None] = []
            try:
                burst.append(conn.recv())
                while conn.poll() and burst[-1] is not None and burst[-1][0] != "close":
                    burst.append(conn.recv())
            except (EOFError, OSError):
                burst.append(None)
            loop.call_soon_threadsafe(deliver, burst)
            if burst[-1] is None or burst[-1][0] == "close":
                return

    threading.Thread(target=read, daemon=True).start()
    tasks: set[asyncio.Task[None]] = set()

    async def handle(op: str, key: int, *args: Any) -> None:
        try:
            if op == "generate":
                prompt, sampling, adapter = args
                gen = await sampler.generate(prompt, Sampling(**sampling), adapter=adapter)
                answer: Any = gen.model_dump()
            elif op == "load":
                answer = await sampler.load_adapter(*args)
            elif op == "unload":
                answer = await sampler.unload_adapter(*args)
            else:
                raise SamplerError(f"unknown request {op!r}")
            reply = (key, True, answer)
        except Exception as exc:
            reply = (key, False, str(exc) if isinstance(exc, SamplerError) else
                     f"{type(exc).__name__}: {exc}")  # fmt: skip
        with contextlib.suppress(OSError, ValueError):
            conn.send(reply)

    while (msg := await inbox.get()) is not None and msg[0] != "close":
        task = asyncio.ensure_future(handle(*msg))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in list(tasks):
        task.cancel()
    await sampler.aclose()
