"""`BfclEnv`: one BFCL multi-turn entry played live.

The entry's API classes are instantiated with its initial_config as BFCL's
`execute_multi_turn_func_call` does, and every public method becomes a tool whose schema
is BFCL's own function doc converted for OpenAI function calling. A call runs the method
and replies with its result stringified as BFCL does (str as is, dict as JSON, else str),
an exception as BFCL's "Error during execution: ...". The user's turns come one at a time:
when the model replies without a tool call, the next turn's message follows (BFCL moves to
the next turn on a step without decodable calls), and after the last turn the episode ends.
In miss_func, the held-out functions join the tools at their turn, whose message is BFCL's
"I have updated some more functions you can choose from. What about now?"
(`Environment.tools_changed`: the policy is offered the longer list from that turn on).
"""

from __future__ import annotations

import json
from typing import Any

from agentrft import Environment, SchemaTool, Tool, ToolCall, ToolError, ToolResult
from agentrft.tool_threads import ToolThreads
from agentrft_bfcl import suite


class BfclEnv(Environment):
    """Live instances of one entry's API classes, their methods as tools, the turn count."""

    def __init__(self, entry: suite.Entry) -> None:
        super().__init__()
        self.entry = entry
        self.instances = suite.load_instances(entry)
        methods = suite.public_methods(self.instances)
        # Every documented function, offered yet or not: BFCL's executor runs a call to a
        # miss_func function before its turn too (the model was not shown it, but may guess).
        self._callable: dict[str, Tool] = {}
        for spec in suite.openai_tools(entry, len(entry.turns)):
            fn = spec["function"]
            self._callable[fn["name"]] = SchemaTool(
                _bfcl_call(methods[fn["name"]]),
                name=fn["name"],
                parameters=fn["parameters"],
                description=fn.get("description", ""),
                # BFCL executes a call whatever its value types; refusing one it would run
                # would let the model see a state the checker's re-execution does not.
                check_types=False,
            )
        #: Index of the user turn being played (0-based).
        self.turn = 0
        self._tools: dict[str, Tool] = {}
        self._offer_tools()

    def _offer_tools(self) -> None:
        """The tools of the current turn, in BFCL's order (miss_func appends held-out ones
        at their turn)."""
        for spec in suite.openai_tools(self.entry, self.turn):
            name = spec["function"]["name"]
            self._tools.setdefault(name, self._callable[name])

    @property
    def tools(self) -> dict[str, Tool]:
        return dict(self._tools)

    async def call_tool(self, call: ToolCall, *, threads: ToolThreads | None = None) -> ToolResult:
        found = self._callable.get(call.name)
        if found is None:
            names = ", ".join(self._tools)
            return ToolResult(
                f"Error: unknown tool {call.name!r}. Available tools: {names}.",
                failure="unknown_tool",
            )
        self.current_call = call
        try:
            return await found.invoke(call.arguments, threads=threads)
        finally:
            self.current_call = None

    def on_text_reply(self, text: str) -> str | None:
        """The model ended its turn: the next user turn's message, or the end."""
        if self.turn + 1 < len(self.entry.turns):
            self.turn += 1
            if self.turn in self.entry.added_functions:
                self._offer_tools()
                self.tools_changed = True  # the loop sends the longer list from now on
            return "\n\n".join(self.entry.turns[self.turn])
        self.done = True
        return None


def _bfcl_call(method: Any) -> Any:
    """`method` called with keywords, its result and errors as BFCL's executor writes them."""

    def run(**kwargs: Any) -> str:
        try:
            result = method(**kwargs)
        except Exception as exc:  # what the API raises is the model's reply, as in BFCL
            raise ToolError(f"Error during execution: {exc}", kind="execution_error") from None
        if isinstance(result, str):
            return result
        if type(result) is dict:
            try:
                return json.dumps(result)
            except (TypeError, ValueError):
                return str(result)
        return str(result)

    return run
