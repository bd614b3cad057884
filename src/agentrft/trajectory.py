"""The record of one episode: enough to replay it, score it again, and train on it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentrft.messages import Message
from agentrft.policy import ReplyTokens
from agentrft.redact import scrub_json_line
from agentrft.reward import RewardResult


class FailureKind:
    """Names of the failure kinds the loop records (tasks may add their own strings)."""

    BAD_INPUT = "bad_input"  # the row's prompt did not parse
    HTTP_ERROR = "http_error"  # the policy server answered 5xx / 4xx after retries
    RATE_LIMITED = "rate_limited"  # 429 after retries
    POLICY_TIMEOUT = "policy_timeout"  # the policy did not answer in time
    POLICY_ERROR = "policy_error"  # any other client-side failure
    EMPTY_REPLY = "empty_reply"
    NO_TOOL_CALL = "no_tool_call"  # a text reply while the task still expected a call
    MALFORMED_TOOL_JSON = "malformed_tool_json"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    TOOL_ERROR = "tool_error"  # the tool refused the call (ToolError)
    TOOL_EXCEPTION = "tool_exception"  # the tool crashed
    PLAIN_TEXT_CALL = "plain_text_call"  # recovered from text by the environment
    # The reply opened a tool call it never closed, so the policy read it as text.
    UNTERMINATED_TOOL_CALL = "unterminated_tool_call"
    TRUNCATED = "truncated"  # the reply hit max_tokens
    MAX_TURNS = "max_turns"
    MAX_TOOL_CALLS = "max_tool_calls"
    WALL_CLOCK = "wall_clock"
    # An async def tool held the event loop (every episode on it) past loop_watch's limit.
    BLOCKED_LOOP = "blocked_loop"
    REWARD_ERROR = "reward_error"  # the task's reward raised; the lowest tier was given
    USER_TURN_ERROR = "user_turn_error"  # Environment.opening / on_text_reply raised
    # Environment.start / close raised (an MCP server's own failures have kinds of their own).
    ENVIRONMENT_ERROR = "environment_error"


class Failure(BaseModel):
    kind: str
    detail: str = ""
    turn: int | None = None


class Turn(ReplyTokens):
    """One policy call and what followed it (the reply's tokens: `ReplyTokens`)."""

    index: int
    assistant: Message
    tool_messages: list[Message] = Field(default_factory=list)
    latency_s: float = 0.0
    #: The tools this policy call was offered, where they differ from the previous call's
    #: (the environment changed them, `Environment.tools_changed`); None: unchanged.
    tools: list[dict[str, Any]] | None = None


class Trajectory(BaseModel):
    """A whole episode: messages, turns, failures, reward, timings."""

    id: str
    task: str
    prompt: str = Field(description="The dataset row's prompt string, as given.")
    instance_id: str | None = None
    messages: list[Message] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The tools the episode started with (changes: Turn.tools, tools_at).",
    )
    failures: list[Failure] = Field(default_factory=list)
    stop_reason: str = ""
    tool_calls: int = 0
    reward: RewardResult | None = None
    wall_s: float = 0.0
    policy_s: float = 0.0
    tool_s: float = 0.0
    sampling: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def solved(self) -> bool:
        return bool(self.reward and self.reward.solved)

    @property
    def failure_kinds(self) -> list[str]:
        return [f.kind for f in self.failures]

    def fail(self, kind: str, detail: str = "", turn: int | None = None) -> None:
        self.failures.append(Failure(kind=kind, detail=detail, turn=turn))

    def tools_at(self, turn: int) -> list[dict[str, Any]]:
        """The tools offered to policy call `turn` (0-based): the latest change at or before
        it, else the episode's first list."""
        for t in reversed(self.turns[: turn + 1]):
            if t.tools is not None:
                return t.tools
        return self.tools


def trajectory_line(trajectory: Trajectory) -> str:
    """One JSONL record, newline included, with secrets scrubbed (`agentrft.redact`): a
    server that echoes an API key or a URL with a password never puts it on disk."""
    return scrub_json_line(trajectory.model_dump_json()) + "\n"


def write_trajectories(trajectories: Iterable[Trajectory], path: str | Path) -> int:
    """Write JSONL (one trajectory per line, secrets scrubbed); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(trajectory_line(t))
            n += 1
    tmp.replace(path)
    return n


def append_trajectories(trajectories: Iterable[Trajectory], path: str | Path) -> None:
    """Append JSONL records (secrets scrubbed). Each record ends with its newline, so an
    interrupted append leaves at most one torn last line (see `read_trajectories`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(trajectory_line(t))


class TrajectoryFileError(ValueError):
    """A trajectories file holds a line that is not a trajectory; the message names the
    file, the line and what to do."""


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Read JSONL written by `write_trajectories`.

    A line that is not UTF-8, not JSON or not a trajectory raises `TrajectoryFileError`
    naming the file and the line (blank lines are skipped).
    """
    path = Path(path)
    # Bytes, decoded line by line: a bad byte is then reported with its line, and a newline
    # byte never occurs inside a UTF-8 character, so the split is exact.
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                trajectory = Trajectory.model_validate(json.loads(raw.decode("utf-8")))
            except (ValueError, RecursionError) as exc:  # UTF-8, JSON and pydantic errors
                if isinstance(exc, UnicodeDecodeError):
                    why = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
                else:
                    why = f"not a trajectory ({type(exc).__name__}: {str(exc).splitlines()[0]})"
                raise TrajectoryFileError(
                    f"{path}: line {lineno} is {why}; the file must hold one JSON trajectory "
                    "per line, as `agentrft eval --trajectories` and `play --save` write it "
                    "(delete or repair that line)"
                ) from None
            yield trajectory
