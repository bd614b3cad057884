"""An episode's environment hooks, `Environment.start` and `close`, as the agent loop awaits
them: a start that fails or hangs ends the episode (not the run) with a failure kind; a
close that fails is recorded, never raised."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentrft.deadlines import awaited, within
from agentrft.task import EpisodeLimits
from agentrft.tools import ToolError
from agentrft.trajectory import FailureKind, Trajectory

__all__ = ["CLOSE_TIMEOUT_S", "close_environment", "start_environment"]

#: How long `Environment.close` may take before the episode stops waiting for it.
CLOSE_TIMEOUT_S = 10.0


async def start_environment(
    env: Any, deadline: float, limits: EpisodeLimits, traj: Trajectory
) -> bool:
    """Await `env.start()` under the episode's deadline; False (a failure recorded, the
    episode over) when it fails: a server that will not start ends the episode, not the job."""
    start = getattr(env, "start", None)
    if start is None:
        return True
    try:
        await within(awaited(start()), deadline - time.perf_counter())
    except (asyncio.TimeoutError, TimeoutError):
        traj.fail(FailureKind.WALL_CLOCK, f"episode exceeded {limits.timeout_s:g}s in start")
        traj.stop_reason = FailureKind.WALL_CLOCK
        return False
    except ToolError as exc:  # a start failure with a kind of its own (mcp_server_failed)
        traj.fail(exc.kind, exc.message)
        traj.stop_reason = exc.kind
        return False
    except Exception as exc:
        traj.fail(FailureKind.ENVIRONMENT_ERROR, f"start: {type(exc).__name__}: {exc}")
        traj.stop_reason = FailureKind.ENVIRONMENT_ERROR
        return False
    return True


async def close_environment(env: Any, traj: Trajectory) -> None:
    """Await `env.close()` (after the reward, whatever happened); a close that fails or
    hangs is recorded, never raised: the episode's reward stands."""
    close = getattr(env, "close", None)
    if close is None:
        return
    try:
        await within(awaited(close()), CLOSE_TIMEOUT_S)
    except (asyncio.TimeoutError, TimeoutError):
        traj.fail(FailureKind.ENVIRONMENT_ERROR, f"close ran past {CLOSE_TIMEOUT_S:g}s")
    except Exception as exc:
        traj.fail(FailureKind.ENVIRONMENT_ERROR, f"close: {type(exc).__name__}: {exc}")
