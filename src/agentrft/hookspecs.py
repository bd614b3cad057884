"""The plugin API: pluggy hook specifications for the `agentrft` entry-point group.

A plugin is any module (or object) named by an entry point in group ``agentrft``; it
implements some of these hooks, decorated with ``agentrft.hookimpl``::

    [project.entry-points.agentrft]
    wordle = "agentrft_wordle.plugin"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from agentrft.trajectory import Trajectory

PROJECT = "agentrft"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def agentrft_tasks() -> list[type]:
    """Return `Task` subclasses this plugin provides (each with a unique `name`)."""
    return []


@hookspec
def agentrft_rewards() -> dict[str, Any]:
    """Return named rewards: `{name: fn(env, trajectory) -> RewardResult}`.

    A reward may carry a `tasks` attribute (a set of task names) to say where it applies;
    `--reward NAME` swaps it in for the task's own reward.
    """
    return {}


@hookspec
def agentrft_backends() -> list[type]:
    """Return `Backend` subclasses (each with a unique `name`)."""
    return []


@hookspec
def agentrft_cli(app: Any) -> None:
    """Add commands to the `agentrft` typer app (keep imports inside the commands)."""


@hookspec
def agentrft_episode_finished(trajectory: Trajectory) -> None:
    """Called after every episode played by the CLI, an eval, or a training step."""


@hookspec
def agentrft_step_finished(step: int, metrics: dict[str, float]) -> None:
    """Called after each training step with its metrics."""
