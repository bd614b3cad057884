"""agentrft: reinforcement fine-tuning of multi-turn, tool-using LLM agents.

The public API plugins may use is what this module exports.
"""

from agentrft.backend import (
    Backend,
    BackendError,
    BackendUnavailable,
    CliOption,
    EvalOptions,
    EvalResult,
    TrainOptions,
    TrainResult,
)
from agentrft.bundle_options import BundleOptions
from agentrft.config import Config, Section
from agentrft.environment import Environment
from agentrft.evaluation import EvalReport, evaluate
from agentrft.group_scoring import GroupEpisode, GroupScorer, run_grouped_episodes
from agentrft.hookspecs import hookimpl
from agentrft.judges import GroupJudge, JudgeVerdict, RubricJudge, ScriptedJudge
from agentrft.messages import Message, ToolCall
from agentrft.policies.scripted import ScriptedPolicy, call, replay_policy
from agentrft.policy import Completion, Policy, PolicyError, Sampling
from agentrft.reward import (
    NamedReward,
    RewardCheckReport,
    RewardResult,
    RewardSample,
    Tier,
    TieredReward,
    check_reward_order,
    clip,
)
from agentrft.reward_check import assert_reward_order
from agentrft.rollout import run_episode, run_episodes
from agentrft.sync import run_sync
from agentrft.task import EpisodeLimits, Task, TaskInputError, seeded_sample
from agentrft.tools import SchemaTool, Tool, ToolError, ToolResult, tool
from agentrft.trajectory import Failure, FailureKind, Trajectory, Turn

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "BundleOptions",
    "CliOption",
    "Completion",
    "Config",
    "Environment",
    "EpisodeLimits",
    "EvalOptions",
    "EvalReport",
    "EvalResult",
    "Failure",
    "FailureKind",
    "GroupEpisode",
    "GroupJudge",
    "GroupScorer",
    "JudgeVerdict",
    "Message",
    "NamedReward",
    "Policy",
    "PolicyError",
    "RewardCheckReport",
    "RewardResult",
    "RewardSample",
    "RubricJudge",
    "Sampling",
    "SchemaTool",
    "ScriptedJudge",
    "ScriptedPolicy",
    "Section",
    "Task",
    "TaskInputError",
    "Tier",
    "TieredReward",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "TrainOptions",
    "TrainResult",
    "Trajectory",
    "Turn",
    "__version__",
    "assert_reward_order",
    "call",
    "check_reward_order",
    "clip",
    "evaluate",
    "hookimpl",
    "replay_policy",
    "run_episode",
    "run_episodes",
    "run_grouped_episodes",
    "run_sync",
    "seeded_sample",
    "tool",
]
