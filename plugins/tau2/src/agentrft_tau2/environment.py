"""One tau2 conversation as an agentrft environment, played as tau2's orchestrator plays it:
tau2's domain environment runs every agent tool call (its own schemas, replies and errors),
and a user (users.py) answers the agent's text messages until it says STOP.

On telecom the user also acts on their phone: a user message with tool calls goes to the
same tau2 environment (requestor "user", tau2's user tools) and the results go back to the
user, until the user writes to the agent. Those calls and results are the user's side of
the conversation: kept here for tau2's transcript (its evaluator replays them), never shown
to the policy, as tau2's agent never sees them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agentrft import Environment, Message, ToolCall, ToolResult
from agentrft.messages import user as user_message
from agentrft_tau2.suite import (
    AssistantMessage,
    MultiToolMessage,
    Tau2Task,
    UserMessage,
    conversation_prefix,
    is_valid_user_history_message,
    new_environment,
)
from agentrft_tau2.suite import ToolCall as Tau2ToolCall
from agentrft_tau2.users import UserConfig, is_stop

#: Tool-call messages a user may send in a row before writing to the agent (tau2 bounds
#: them only by its 200 steps); past it the user turn fails (`user_turn_error`).
MAX_USER_TOOL_MESSAGES = 30


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """A call's arguments as tau2 takes them (a JSON object), else None."""
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return args if isinstance(args, dict) else None


@dataclass
class UserTurn:
    """One message the user wrote to the agent, and the user's own tool calls and their
    results that came before it (tau2 messages; the policy never sees `hidden`)."""

    hidden: list[Any]
    message: UserMessage


class Tau2Env(Environment):
    """tau2's environment of `domain` at the task's initial state, plus the customer."""

    def __init__(self, domain: str, task: Tau2Task, user: UserConfig) -> None:
        super().__init__()
        self.domain = domain
        self.task = task
        self.env = new_environment(domain)
        #: What tau2's orchestrator records first: the task's pre-written history, or the
        #: agent's greeting. The user answers its last message first.
        self.prefix = conversation_prefix(task)
        init = task.initial_state
        history = self.prefix if init is not None and init.message_history else []
        if init is not None:
            # tau2's set_state replays the history's tool calls and checks their replies.
            self.env.set_state(
                initialization_data=init.initialization_data,
                initialization_actions=init.initialization_actions,
                message_history=[m.model_copy(deep=True) for m in history],
            )
        self.user = user.make(domain, task, self.env)
        # As tau2's orchestrator starts the user: the history before the message it answers.
        self.user_state = self.user.get_init_state(
            message_history=[m for m in history[:-1] if is_valid_user_history_message(m)]
        )
        #: Every message the user wrote to the agent, in order, with its hidden side.
        self.turns: list[UserTurn] = []
        #: True once the user said STOP (tau2's USER_STOP, the only proper end).
        self.user_stopped = False

    @property
    def stop_message(self) -> str | None:
        """The user's closing message (kept for tau2's transcript), once it stopped."""
        return (self.turns[-1].message.content or "") if self.user_stopped else None

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
        # an unknown tool (a user tool is unknown to the agent). Kept verbatim: tau2's
        # evaluator replays the calls and compares.
        reply = self.env.get_response(Tau2ToolCall(id=call.id, name=call.name, arguments=args))
        self._sync()
        failure = None
        if reply.error:
            known = self.env.tools is not None and self.env.tools.has_tool(call.name)
            failure = "tool_error" if known else "unknown_tool"
        return ToolResult(reply.content or "", failure=failure)

    async def opening(self) -> list[Message]:
        reply = await self._user_turn(self.prefix[-1])
        if is_stop(reply):
            self.user_stopped = True
            self.done = True
        return [user_message(reply.content or "")]

    async def on_text_reply(self, text: str) -> str | None:
        reply = await self._user_turn(AssistantMessage(role="assistant", content=text))
        if is_stop(reply):
            self.user_stopped = True
            self.done = True
            return None
        return reply.content or ""

    async def _user_turn(self, incoming: Any) -> UserMessage:
        """The user's next message to the agent. Its tool calls run in tau2's environment
        on the way (tau2's USER -> ENV -> USER steps) and stay on the user's side."""
        hidden: list[Any] = []
        message = incoming
        sent = 0  # tool-call messages in this turn
        while True:
            # tau2's users block (a simulated user waits on its model): off the loop.
            reply, self.user_state = await asyncio.to_thread(
                self.user.generate_next_message, message, self.user_state
            )
            if not reply.is_tool_call():
                break
            sent += 1
            if sent > MAX_USER_TOOL_MESSAGES:
                raise RuntimeError(
                    f"the user sent more than {MAX_USER_TOOL_MESSAGES} tool-call messages in "
                    "a row without writing to the agent"
                )
            results = [self.env.get_response(c) for c in reply.tool_calls or []]
            self._sync()
            hidden += [reply, *results]
            message = (
                results[0]
                if len(results) == 1
                else MultiToolMessage(role="tool", tool_messages=results)
            )
        self._sync()
        self.turns.append(UserTurn(hidden, reply))
        return reply

    def _sync(self) -> None:
        # tau2's orchestrator syncs the agent's and the user's state after every step (on
        # telecom: the line's status onto the phone, a paid bill onto the account).
        try:
            self.env.sync_tools()
        except Exception as exc:  # a broken scenario; tau2's run would stop on it
            self.note("tau2_sync_error", f"{type(exc).__name__}: {exc}"[:200])
