"""A task's episode served as an MCP server (`agentrft mcp serve`): any MCP-speaking agent,
or a person in an MCP inspector, plays one row of the task through the task's own tools.

The server's instructions (also the resource `agentrft://episode/briefing`) are the
episode's opening messages: the system prompt and the user's request. Its tools are the
episode's tools, plus `end_episode`, which ends it and returns the reward; the reward is
also the resource `agentrft://episode/reward` once the episode is over. Calls run through
`Environment.call_tool` under the task's limits, exactly as the agent loop runs them, and
the reward is the task's own (`score_episode`). Hidden values reach the player only in the
end: the reward's reply shows them after the episode is over, never before.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from agentrft.deadlines import awaited
from agentrft.environment_hooks import close_environment
from agentrft.messages import ToolCall, assistant, tool_reply
from agentrft.rollout import score_episode
from agentrft.task import Task
from agentrft.trajectory import FailureKind, Trajectory, Turn

__all__ = ["END_TOOL", "EpisodeServer"]

END_TOOL = "end_episode"
BRIEFING_URI = "agentrft://episode/briefing"
REWARD_URI = "agentrft://episode/reward"


class EpisodeServer:
    """One row of `task`, played over MCP. `start` plays the environment's `start`; each
    `call` is one tool call; `end` scores the episode (once) and closes the environment."""

    def __init__(self, task: Task[Any, Any], prompt: str) -> None:
        self.task = task
        self.instance = task.parse(prompt)
        self.limits = task.limits_for(self.instance, task.limits)
        self.env = task.environment(self.instance)
        self.traj = Trajectory(
            id=uuid.uuid4().hex[:16],
            task=task.task_of(self.instance),
            prompt=prompt,
            instance_id=task.instance_id(self.instance),
            metadata={"played_over": "mcp"},
        )
        self.traj.messages = task.initial_messages(self.instance)
        self.started = time.perf_counter()
        self.over = False

    async def start(self) -> None:
        start = getattr(self.env, "start", None)
        if start is not None:
            await awaited(start())
        self.traj.tools = self.env.tool_schemas()

    def briefing(self) -> str:
        """The opening messages, as the player reads them."""
        parts = [f"[{m.role}] {m.content}" for m in self.traj.messages if m.content]
        parts.append(
            f"Play with the tools; call {END_TOOL} when you are done (the episode also ends "
            f"when the task says so, or after {self.limits.max_tool_calls} tool calls)."
        )
        return "\n\n".join(parts)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The episode's tools (OpenAI function form) and `end_episode`."""
        end = {
            "type": "function",
            "function": {
                "name": END_TOOL,
                "description": "End the episode and show its reward.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        return [*self.env.tool_schemas(), end]

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """One tool call: (the reply, whether it is an error). After the episode is over
        every call answers with the result."""
        if self.over:
            return await self.end(), False
        if name == END_TOOL:
            return await self.end(), False
        index = len(self.traj.turns)
        call = ToolCall(id=f"mcp_{index}", name=name, arguments=json.dumps(arguments))
        self.traj.tool_calls += 1
        result = await self.env.call_tool(call)
        message = assistant(None, [call])
        reply = tool_reply(call, result.content)
        self.traj.messages += [message, reply]
        self.traj.turns.append(Turn(index=index, assistant=message, tool_messages=[reply]))
        if result.failure:
            self.traj.fail(result.failure, result.content[:200], index)
        if self.env.done or self.traj.tool_calls >= self.limits.max_tool_calls:
            if not self.env.done:
                self.traj.fail(
                    FailureKind.MAX_TOOL_CALLS, f"{self.limits.max_tool_calls} tool calls"
                )
            return f"{result.content}\n\n{await self.end()}", bool(result.failure)
        return result.content, bool(result.failure)

    async def end(self) -> str:
        """Score the episode (once), close the environment, and say the result with the
        row's hidden values (the episode is over: they may be shown now)."""
        if not self.over:
            self.over = True
            self.traj.stop_reason = "done" if self.env.done else "ended_by_player"
            for kind, detail in list(getattr(self.env, "events", [])):
                self.traj.fail(kind, detail)
            self.traj.wall_s = time.perf_counter() - self.started
            await score_episode(
                self.task, None, self.env, self.traj, timeout_s=self.limits.timeout_s
            )
            await close_environment(self.env, self.traj)
        return self.result()

    def result(self) -> str:
        if not self.over or self.traj.reward is None:
            return "The episode is not over yet."
        r = self.traj.reward
        hidden = self.task.hidden_values(self.instance)
        lines = [
            f"The episode is over: reward {r.total:+.3f}, outcome {r.outcome}"
            f"{' (solved)' if r.solved else ''}.",
        ]
        if self.traj.failures:
            lines.append("Failures: " + ", ".join(self.traj.failure_kinds) + ".")
        if hidden:
            lines.append("Hidden values of this row: " + "; ".join(hidden))
        return "\n".join(lines)

    def mcp_server(self) -> Any:
        """The official SDK's low-level `Server` for this episode."""
        from mcp import types
        from mcp.server.lowlevel import Server

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(
                tools=[
                    types.Tool(
                        name=t["function"]["name"],
                        description=t["function"].get("description") or "",
                        input_schema=t["function"].get("parameters") or {"type": "object"},
                    )
                    for t in self.tool_schemas()
                ]
            )

        async def call_tool(ctx: Any, params: Any) -> Any:
            text, is_error = await self.call(params.name, dict(params.arguments or {}))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=is_error
            )

        async def list_resources(ctx: Any, params: Any) -> Any:
            return types.ListResourcesResult(
                resources=[
                    types.Resource(uri=BRIEFING_URI, name="briefing", mime_type="text/plain"),
                    types.Resource(uri=REWARD_URI, name="reward", mime_type="text/plain"),
                ]
            )

        async def read_resource(ctx: Any, params: Any) -> Any:
            uri = str(params.uri)
            if uri not in (BRIEFING_URI, REWARD_URI):
                raise ValueError(f"no resource {uri}; resources: {BRIEFING_URI}, {REWARD_URI}")
            text = self.briefing() if uri == BRIEFING_URI else self.result()
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
            )

        return Server(
            f"agentrft-{self.task.name}",
            instructions=self.briefing(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
        )
