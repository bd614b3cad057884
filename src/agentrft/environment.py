"""Per-episode state plus the tools the model may call."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Iterable
from typing import Any

from agentrft.messages import Message, ToolCall
from agentrft.tool_threads import ToolThreads
from agentrft.tools import Tool, ToolResult


class Environment:
    """Subclass it, decorate methods with `@tool`, set `self.done = True` when the episode ends.

    One instance lives for exactly one episode. Tool methods see and change its state; the
    reward reads it at the end. Hidden fields (the answer) live here, never in a prompt.
    """

    #: Set when the episode is over (solved, lost, submitted): the loop stops calling the model.
    done: bool = False
    #: Set after changing what `tools` returns (a tool offered from a later user turn on):
    #: before its next policy call the loop reads `tool_schemas()` again, sends that list
    #: from then on, records it on the turn (`Turn.tools`) and clears the flag.
    tools_changed: bool = False

    def __init__(self) -> None:
        self.done = False
        self.tools_changed = False
        # Failure kinds the environment itself notices (a contradiction, a repeat); the loop
        # merges them into the trajectory.
        self.events: list[tuple[str, str]] = []
        #: The call being executed, so a tool can see e.g. `current_call.recovered`.
        self.current_call: ToolCall | None = None
        self._added_tools: dict[str, Tool] = {}

    @property
    def tools(self) -> dict[str, Tool]:
        """The bound tools, by name: the class's in definition order, then `add_tools`'."""
        index = _tool_index(type(self))  # type: ignore[arg-type]  # classes hash
        bound = {name: getattr(self, attr) for name, attr in index.items()}
        return {**bound, **self._added()}

    def add_tools(self, tools: Iterable[Tool]) -> None:
        """Offer `tools` in this episode beside the class's `@tool` methods: tools known only
        once the episode starts (an MCP server's, listed in `start`). Call it from `start`
        (the loop reads the schemas after it) or set `tools_changed` after. A name that is
        already a tool is refused: two tools of one name would leave the model one of them."""
        added = self.__dict__.setdefault("_added_tools", {})
        taken = set(_tool_index(type(self))) | set(added)  # type: ignore[arg-type]
        for t in tools:
            if t.name in taken:
                raise ValueError(
                    f"{type(self).__name__} already has a tool named {t.name!r}; rename one "
                    "(an MCP server's tools can be given a prefix)"
                )
            taken.add(t.name)
            added[t.name] = t

    def _added(self) -> dict[str, Tool]:
        # __dict__, not the attribute: a subclass that skips super().__init__() still works.
        added: dict[str, Tool] = self.__dict__.get("_added_tools", {})
        return added

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def note(self, kind: str, detail: str = "") -> None:
        """Record a task-level failure kind (shown in eval reports)."""
        self.events.append((kind, detail))

    def recover(self, text: str) -> list[ToolCall]:
        """Turn tool calls written as plain text into real calls (default: none).

        Return calls with `recovered=True`; a tool sees the flag on `self.current_call` and
        applies the task's format penalty.
        """
        return []

    def opening(self) -> list[Message] | Awaitable[list[Message]]:
        """Messages that follow the task's `initial_messages` before the first policy call
        (default: none): a simulated user's first message, which may need a model call.

        May be `async def` (awaited under the episode's deadline, like `on_text_reply`).
        """
        return []

    def on_text_reply(self, text: str) -> str | Awaitable[str | None] | None:
        """The model answered without a tool call. Return the next user message to continue
        the episode, or None to end it (the default).

        Set `self.done = True` before returning None when that end is a proper one (a text
        task's answer; a simulated user who says goodbye); None with `done` unset records
        `no_tool_call`. May be `async def`: a user simulator that awaits a model call is
        awaited on the loop under the episode's deadline (a sync one runs on the loop, so
        keep it quick). An exception ends the episode with `user_turn_error`.
        """
        return None

    def start(self) -> Awaitable[None] | None:
        """Called once before the episode's first policy call, under its deadline: acquire
        what the episode needs (connect an MCP server, `add_tools` its tools). May be
        `async def`. An exception ends the episode with the lowest reward and the failure
        kind `environment_error` (a `ToolError`'s own kind when it raises one); the run goes
        on. The default does nothing."""
        return None

    def close(self) -> Awaitable[None] | None:
        """Called once when the episode is over, after its reward, however it ended (also
        after a failed `start`): release what `start` acquired. May be `async def`; it gets
        `environment_hooks.CLOSE_TIMEOUT_S`, and a failure is recorded, never raised. The default does
        nothing."""
        return None

    async def call_tool(self, call: ToolCall, *, threads: ToolThreads | None = None) -> ToolResult:
        """Run one call; unknown tool names and bad arguments become error replies.

        A sync tool runs on a thread of `threads` (see `Tool.invoke`); only one call of this
        environment runs at a time, so its state needs no lock.
        """
        index = _tool_index(type(self))  # type: ignore[arg-type]  # classes hash
        attr = index.get(call.name)
        added = self._added().get(call.name)
        if attr is None and added is None:
            names = ", ".join([*index, *self._added()]) or "none"
            return ToolResult(
                f"Error: unknown tool {call.name!r}. Available tools: {names}.",
                failure="unknown_tool",
            )
        self.current_call = call
        try:
            # Bind only the tool called (the `tools` property binds every one).
            chosen = getattr(self, attr) if attr is not None else added
            assert chosen is not None  # one of the two was found above
            return await chosen.invoke(call.arguments, threads=threads)
        finally:
            self.current_call = None


@functools.cache
def _tool_index(cls: type) -> dict[str, str]:
    """Tool name -> attribute name for the `Tool` attributes of `cls`, base classes first (an
    override keeps its base's position). Cached: the loop asks on every tool call; callers
    must not mutate the dict."""
    attrs: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            if isinstance(value, Tool):
                attrs[attr] = None
    return {getattr(cls, attr).name: attr for attr in attrs}
