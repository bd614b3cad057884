"""One tau2 conversation as an agentrft environment: tau2's domain environment runs every
tool call (its own schemas, its own replies and errors), and a user (users.py) answers the
agent's text messages until it says STOP."""

from __future__ import annotations

import json
from typing import Any

from agentrft import Environment, Message, ToolCall, ToolResult
from agentrft.messages import user as user_message
from agentrft_tau2.suite import Tau2Task, new_environment
from agentrft_tau2.suite import ToolCall as Tau2ToolCall
from agentrft_tau2.users import User, is_stop


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """A call's arguments as tau2 takes them (a JSON object), else None."""
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return args if isinstance(args, dict) else None


class Tau2Env(Environment):
    """tau2's environment of `domain` at the task's initial state, plus the customer."""

    def __init__(self, domain: str, task: Tau2Task, user: User) -> None:
        super().__init__()
        self.domain = domain
        self.task = task
        self.user = user
        self.env = new_environment(domain)
        init = task.initial_state
        if init is not None:
            self.env.set_state(
                initialization_data=init.initialization_data,
                initialization_actions=init.initialization_actions,
                message_history=[],
            )
        #: True once the user said STOP (tau2's USER_STOP, the only proper end).
        self.user_stopped = False
        #: The user's last message when it stopped (kept for tau2's transcript).
        self.stop_message: str | None = None

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema for t in self.env.get_tools()]

    async def call_tool(self, call: ToolCall, *, threads: Any = None) -> ToolResult:
        args = parse_arguments(call.arguments)
        if args is None:
            return ToolResult(
                f"Error: the arguments of {call.name!r} must be a JSON object, got "
                f"{call.arguments[:200]!r}.",
                failure="malformed_tool_json",
            )
        # tau2's own reply: the JSON of the result, or "Error: ..." for a refused call or
        # an unknown tool. Kept verbatim: tau2's evaluator replays the calls and compares.
        reply = self.env.get_response(Tau2ToolCall(id=call.id, name=call.name, arguments=args))
        failure = None
        if reply.error:
            known = self.env.tools is not None and self.env.tools.has_tool(call.name)
            failure = "tool_error" if known else "unknown_tool"
        return ToolResult(reply.content or "", failure=failure)

    async def opening(self) -> list[Message]:
        return [user_message(await self.user.opening())]

    async def on_text_reply(self, text: str) -> str | None:
        answer = await self.user.reply(text)
        if is_stop(answer):
            self.user_stopped = True
            self.stop_message = answer
            self.done = True
            return None
        return answer
