"""Who plays the customer: tau2's own user simulator on any litellm model (real runs), or a
scripted user that plays the task's ground truth (tests, the expert, CPU smoke runs).

Both are tau2 users (`tau2.user.base.BaseUser`), driven by the environment as tau2's
orchestrator drives them: a user answers the agent's text messages and the results of its
own tool calls, never the agent's tool calls. On telecom the user has tools of its own (its
phone: tau2's user tools); a user message with tool calls goes to tau2's environment, and
the results go back to the user only. `STOP` in a user's text ends the conversation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentrft import TaskInputError
from agentrft_tau2.suite import (
    DOMAINS,
    AssistantMessage,
    BaseUser,
    MultiToolMessage,
    Tau2Environment,
    Tau2Task,
    ToolCall,
    ToolMessage,
    UserMessage,
    UserState,
    domain_tasks,
)

#: tau2's user-stop signal (tau2.user.base.STOP, TRANSFER and OUT_OF_SCOPE end it too).
STOP = "###STOP###"
_STOPS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")

#: Environment variables that choose the simulated user (see docs/suite-tau2.md).
MODEL_ENV = "AGENTRFT_TAU2_USER_MODEL"
API_BASE_ENV = "AGENTRFT_TAU2_USER_API_BASE"
ARGS_ENV = "AGENTRFT_TAU2_USER_ARGS"

_CASE = re.compile(r"\[case ([A-Za-z0-9_:-]+)/([^\]\s]+)\]")
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def is_stop(message: UserMessage) -> bool:
    """Whether a user message ends the conversation (tau2's UserSimulator.is_stop: a message
    with tool calls never does)."""
    if message.is_tool_call():
        return False
    return any(s in (message.content or "") for s in _STOPS)


def case_token(task_id: str) -> str:
    """How the scripted user names a task: its id when that is a plain word (airline `12`,
    mock `create_task_1`), else a digest. Telecom ids spell out the faults on the phone
    (`[mobile_data_issue]user_abroad_roaming_enabled_off[...]`), which the policy must find
    out for itself."""
    if _PLAIN_ID.fullmatch(task_id):
        return task_id
    return "h" + hashlib.sha256(task_id.encode()).hexdigest()[:16]


@functools.cache
def _ids_by_token(domain: str) -> dict[str, str]:
    return {case_token(i): i for i in domain_tasks(domain)}


def case_of(text: str) -> tuple[str, str] | None:
    """(domain, task id) from a scripted user's opening, else None."""
    m = _CASE.search(text)
    if m is None:
        return None
    task_id = _ids_by_token(m.group(1)).get(m.group(2)) if m.group(1) in DOMAINS else None
    return (m.group(1), task_id) if task_id is not None else None


def user_actions(task: Tau2Task) -> list[Any]:
    """The ground-truth actions the user performs (requestor "user": telecom's phone)."""
    crit = task.evaluation_criteria
    return [a for a in (crit.actions or []) if a.requestor == "user"] if crit is not None else []


class ScriptedUser(BaseUser):
    """A customer who names the case, does on the phone what the ground truth has the user do
    when the agent asks for it, and stops at the first agent message that asks for nothing.

    It knows nothing of the scenario's wording, so it is a stand-in for plumbing, tests and
    the expert, not a benchmark user: `[case airline/12]` in its opening is how the expert
    finds the task (the token carries none of the answer). Asking means naming the user
    tool (`toggle_airplane_mode`, as telecom's policy names them): each mention performs the
    next pending ground-truth user action of that name, with the ground truth's arguments,
    in the ground truth's order. Its answers never repeat what the phone showed.
    """

    def __init__(self, domain: str, task: Tau2Task) -> None:
        super().__init__()
        self.domain = domain
        self.task = task
        self.pending = user_actions(task)
        self.opened = False
        self.calls = 0

    def get_init_state(self, message_history: list[Any] | None = None) -> UserState:
        return UserState(system_messages=[], messages=list(message_history or []))

    @classmethod
    def is_stop(cls, message: UserMessage) -> bool:
        return is_stop(message)

    def set_seed(self, seed: int) -> None:
        """Deterministic already (tau2's BaseUser.set_seed needs an LLM)."""

    def generate_next_message(
        self, message: Any, state: UserState
    ) -> tuple[UserMessage, UserState]:
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        reply = self._next(message)
        state.messages.append(reply)
        return reply, state

    def _next(self, message: Any) -> UserMessage:
        if not self.opened:
            self.opened = True
            token = case_token(self.task.id)
            return _text(f"Hello, I need help with my request. [case {self.domain}/{token}]")
        if isinstance(message, (ToolMessage, MultiToolMessage)):
            return _text("I did that on my phone. What next?")
        text = (message.content or "") if isinstance(message, AssistantMessage) else ""
        asked = Counter(
            name
            for name in {a.name for a in self.pending}
            for _ in re.finditer(rf"\b{re.escape(name)}\b", text)
        )
        now, later = [], []
        for action in self.pending:
            if asked[action.name] > 0:
                asked[action.name] -= 1
                now.append(action)
            else:
                later.append(action)
        if not now:
            return _text(f"Thank you, that is all. {STOP}")
        self.pending = later
        calls = []
        for action in now:
            self.calls += 1
            calls.append(
                ToolCall(
                    id=f"user_call_{self.calls}",
                    name=action.name,
                    arguments=dict(action.arguments),
                    requestor="user",
                )
            )
        return UserMessage(role="user", content=None, tool_calls=calls)


def _text(content: str) -> UserMessage:
    return UserMessage(role="user", content=content)


@dataclass(frozen=True)
class UserConfig:
    """Which customer plays: a litellm model (the simulated user), or none (scripted)."""

    model: str = ""
    llm_args: dict[str, Any] = field(default_factory=dict)

    def make(self, domain: str, task: Tau2Task, env: Tau2Environment) -> BaseUser:
        """This episode's user; on telecom it holds the phone's tools (`env`'s user tools),
        as tau2's run_task gives them to its UserSimulator."""
        if not self.model:
            return ScriptedUser(domain, task)
        from tau2.user.user_simulator import UserSimulator

        return UserSimulator(
            tools=env.get_user_tools() if env.user_tools is not None else None,
            instructions=str(task.user_scenario),
            llm=self.model,
            llm_args=dict(self.llm_args),
        )


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
