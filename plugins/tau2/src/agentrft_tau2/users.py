"""Who plays the customer: tau2's own user simulator on any litellm model (real runs), or a
scripted user that knows only the task's id (tests, the expert, CPU smoke runs).

A user sees the assistant's text messages only, never its tool calls, as in tau2's
orchestrator. `STOP` in a user message ends the conversation (tau2's user-stop signal).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentrft import TaskInputError
from agentrft_tau2.suite import GREETING, AssistantMessage, Tau2Task, UserMessage

#: tau2's user-stop signal (tau2.user.base.STOP, TRANSFER and OUT_OF_SCOPE end it too).
STOP = "###STOP###"
_STOPS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")

#: Environment variables that choose the simulated user (see docs/suite-tau2.md).
MODEL_ENV = "AGENTRFT_TAU2_USER_MODEL"
API_BASE_ENV = "AGENTRFT_TAU2_USER_API_BASE"
ARGS_ENV = "AGENTRFT_TAU2_USER_ARGS"

_CASE = re.compile(r"\[case ([A-Za-z0-9_:-]+)/([^\]\s]+)\]")


def is_stop(text: str) -> bool:
    """Whether a user message ends the conversation (tau2's UserSimulator.is_stop)."""
    return any(s in text for s in _STOPS)


class User(Protocol):
    """One episode's customer."""

    async def opening(self) -> str:
        """The customer's first message, answering the agent's greeting."""
        ...

    async def reply(self, assistant_text: str) -> str:
        """The customer's answer to the agent's text message (contains STOP to end)."""
        ...


@dataclass
class ScriptedUser:
    """A customer who names the case and then stops after `patience` more answers.

    It knows nothing of the scenario, so it is a stand-in for plumbing, tests and the
    expert, not a benchmark user: `[case airline/12]` in its opening is how the expert finds
    the task's ground-truth actions (the id is not hidden: it carries none of the answer).
    """

    domain: str
    task_id: str
    patience: int = 0
    answered: int = 0

    async def opening(self) -> str:
        return f"Hello, I need help with my request. [case {self.domain}/{self.task_id}]"

    async def reply(self, assistant_text: str) -> str:
        if self.answered >= self.patience:
            return f"Thank you, that is all. {STOP}"
        self.answered += 1
        return "Please go ahead."


def case_of(text: str) -> tuple[str, str] | None:
    """(domain, task id) from a scripted user's opening, else None."""
    m = _CASE.search(text)
    return (m.group(1), m.group(2)) if m else None


@dataclass
class SimulatedUser:
    """tau2's UserSimulator (its guidelines and the task's scenario as the system prompt) on
    the litellm model `model`; each turn runs tau2's blocking `generate` on a worker thread
    so the other episodes keep playing."""

    task: Tau2Task
    model: str
    llm_args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from tau2.user.user_simulator import UserSimulator

        self._sim = UserSimulator(
            tools=None,
            instructions=str(self.task.user_scenario),
            llm=self.model,
            llm_args=dict(self.llm_args),
        )
        self._state = self._sim.get_init_state()

    async def _say(self, assistant_text: str) -> str:
        msg, self._state = await asyncio.to_thread(
            self._sim.generate_next_message,
            AssistantMessage(role="assistant", content=assistant_text),
            self._state,
        )
        assert isinstance(msg, UserMessage)
        return msg.content or ""

    async def opening(self) -> str:
        return await self._say(GREETING)

    async def reply(self, assistant_text: str) -> str:
        return await self._say(assistant_text)


@dataclass(frozen=True)
class UserConfig:
    """Which customer plays: a litellm model (the simulated user), or none (scripted)."""

    model: str = ""
    llm_args: dict[str, Any] = field(default_factory=dict)

    def make(self, domain: str, task: Tau2Task, *, patience: int = 0) -> User:
        if not self.model:
            return ScriptedUser(domain, task.id, patience=patience)
        return SimulatedUser(task, self.model, dict(self.llm_args))


def user_config_from_env() -> UserConfig:
    """The simulated user AGENTRFT_TAU2_USER_MODEL names (a litellm model string; with
    AGENTRFT_TAU2_USER_API_BASE for an OpenAI-compatible server and AGENTRFT_TAU2_USER_ARGS
    extra litellm arguments as a JSON object), else the scripted user. Raises
    TaskInputError naming the variable when it is malformed."""
    model = os.environ.get(MODEL_ENV, "").strip()
    if not model:
        return UserConfig()
    raw = os.environ.get(ARGS_ENV, "").strip() or "{}"
    fix = f"{ARGS_ENV} must be a JSON object, e.g. '{{\"temperature\": 0}}'"
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise TaskInputError(f"{fix} ({exc})") from None
    if not isinstance(args, dict):
        raise TaskInputError(f"{fix}, got {type(args).__name__}")
    args.setdefault("temperature", 0.0)  # tau2's default user temperature
    base = os.environ.get(API_BASE_ENV, "").strip()
    if base:
        args.setdefault("api_base", base)
    return UserConfig(model, args)
