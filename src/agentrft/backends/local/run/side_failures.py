"""When one side of a run fails: a sampler that can no longer sample, a trainer whose step
raises. Either ends the run with one clear error (a `BackendError`, which the CLI prints
without a traceback) that says what failed, at which step, and which checkpoint to resume
from; the traceback of a trainer failure is kept in the run directory (`error.txt`).

Why the sampler side needs a check of its own: a rollout never crashes a job, so when the
vLLM server dies every episode still ends, as `policy_error`, with the task's lowest reward.
Without this the loop would go on training on episodes nobody sampled, and evaluate a
policy nobody served, until the last step.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from agentrft.backend import BackendError
from agentrft.redact import scrub_text
from agentrft.trajectory import FailureKind, Trajectory

if TYPE_CHECKING:
    from agentrft.backends.local.run.engine import Engine

T = TypeVar("T")

__all__ = [
    "SAMPLER_FAILURES",
    "RunSideFailed",
    "SamplerFailed",
    "TrainerFailed",
    "check_sampled",
    "resume_hint",
    "sampler_call",
    "write_traceback",
]

#: How an episode ends when its policy (here: the sampler) could not answer.
SAMPLER_FAILURES = frozenset(
    {
        FailureKind.POLICY_ERROR,
        FailureKind.HTTP_ERROR,
        FailureKind.RATE_LIMITED,
        FailureKind.POLICY_TIMEOUT,
    }
)


class RunSideFailed(BackendError):
    """The sampler or the trainer failed; the run stops (see the module docstring)."""


class SamplerFailed(RunSideFailed):
    """The sampler can serve no more (its server exited or stopped answering), or it
    answered none of a batch's episodes."""


class TrainerFailed(RunSideFailed):
    """The trainer's optimizer step raised."""


async def check_sampled(engine: Engine, trajs: list[Trajectory], where: str) -> None:
    """Raise `SamplerFailed` when `trajs` show the sampler failing: some episode ended for
    want of an answer and the engine reports its sampler gone, or every episode did (nothing
    in the batch was sampled). `where` names the phase ("step 4", "the evaluation after
    training")."""
    failed = [t for t in trajs if t.stop_reason in SAMPLER_FAILURES]
    if not failed:
        return
    problem = await engine.sampler_problem()
    if problem is None and len(failed) < len(trajs):
        return  # some requests failed, the sampler still serves: the episodes say which
    first = failed[0]
    detail = first.failures[-1].detail if first.failures else first.stop_reason
    raise SamplerFailed(
        f"{where}: {len(failed)} of {len(trajs)} episodes got no answer from the "
        f"{engine.inference} sampler (first: {first.stop_reason}: {detail[:300]}); "
        + (problem or "the sampler answered none of them")
    )


async def sampler_call(engine: Engine, what: str, call: Awaitable[T]) -> T:
    """Await `call` (a request of the loop's own to the sampler: a weight sync, a probe);
    any failure becomes `SamplerFailed` naming `what` and, when the engine knows it, why the
    sampler is gone."""
    try:
        return await call
    except SamplerFailed:
        raise
    except Exception as exc:
        problem = await engine.sampler_problem()
        raise SamplerFailed(
            f"{what} failed: {type(exc).__name__}: {str(exc)[:300]}"
            + (f"; {problem}" if problem else "")
        ) from exc


def resume_hint(run_path: Path, latest: Path | None, task: str) -> str:
    """What the user can do next: the checkpoint a resumed run starts from, and the command."""
    if latest is None:
        return f"No checkpoint was written yet; start the run again (run directory {run_path})."
    return (
        f"The last checkpoint is {latest}; once the cause is fixed, resume with: agentrft "
        f"train --task {task} --backend local --resume {run_path}"
    )


def write_traceback(run_path: Path, exc: BaseException) -> Path:
    """Keep `exc`'s traceback in the run directory; returns the file (error.txt)."""
    path = run_path / "error.txt"
    path.write_text(scrub_text("".join(traceback.format_exception(exc))))
    return path
