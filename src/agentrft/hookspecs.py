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
    from agentrft.bundle_options import BundleOptions
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
    """Return named rewards: `{name: NamedReward(fn, tasks=..., tiers=...)}`.

    `--reward NAME` swaps one in for the task's own reward (`NamedReward.tasks` says where
    it applies; a plain `fn(env, trajectory) -> RewardResult` applies anywhere).
    """
    return {}


@hookspec
def agentrft_backends() -> list[type]:
    """Return `Backend` subclasses (each with a unique `name`). A backend brings its own
    config section, CLI options and typed options and results (docs/write-a-backend.md)."""
    return []


@hookspec(historic=True)
def agentrft_addhooks(pluginmanager: Any) -> None:
    """Declare hooks of your own: `pluginmanager.add_hookspecs(module)` (pytest's
    `pytest_addhooks`). A backend declares here the hooks its own plugins implement; the
    local backend's algorithm registries are filled this way (`agentrft_losses`, ...,
    in `agentrft.backends.local.hookspecs`)."""


@hookspec
def agentrft_bundle_options(tasks: list[str]) -> BundleOptions | None:
    """Return how this plugin's dependencies are installed in a runtime bundle (`agentrft
    deploy`), for `tasks` (its tasks being bundled): `BundleOptions(no_deps=...,
    requirements=..., platforms=...)`, or None for its plain requirements
    (docs/sagemaker-runtime.md)."""
    return None


@hookspec
def agentrft_cli(app: Any) -> None:
    """Add commands to the `agentrft` typer app (keep imports inside the commands)."""


@hookspec
def agentrft_episode_finished(trajectory: Trajectory) -> None:
    """Called after every episode played by the CLI, an eval, or a training step."""


@hookspec
def agentrft_step_finished(step: int, metrics: dict[str, float]) -> None:
    """Called after each training step with its metrics."""
