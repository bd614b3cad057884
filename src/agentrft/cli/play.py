"""`agentrft play` (one live episode, turn by turn) and `agentrft replay` (stored ones)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from agentrft.cli.backend_flags import BackendFlags
from agentrft.cli.common import (
    API_KEY_ENV_HELP,
    BASE_URL_HELP,
    HEADER_HELP,
    MODEL_HELP,
    POLICY_HELP,
    ConfigOpt,
    DataOpt,
    RewardOpt,
    RowOpt,
    RowSeedOpt,
    SetOpt,
    SplitOpt,
    TaskOpt,
    console,
    finite,
    load_backend,
    notify_episode,
    pick_row,
    resolve_cli_policy,
    resolve_config,
    run_async,
)
from agentrft.cli.errors import CliError
from agentrft.config import episode_limits
from agentrft.trajectory import FailureKind, Trajectory


def play(
    task: TaskOpt = None,
    policy: Annotated[
        str | None, typer.Option("--policy", "-p", help=POLICY_HELP + " Default: expert.")
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            "-b",
            help="Play with this backend's model instead of --policy (local: local.model "
            "with --adapter DIR, e.g. a run's final_adapter/).",
        ),
    ] = None,
    row: RowOpt = 0,
    split: SplitOpt = "validation",
    data: DataOpt = None,
    seed: RowSeedOpt = 42,
    temperature: Annotated[
        float, typer.Option(min=0, max=2, callback=finite, help="Sampling temperature.")
    ] = 1.0,
    max_tokens: Annotated[int, typer.Option(min=1, help="Max tokens per turn.")] = 4096,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Override the task's turn limit.")
    ] = None,
    reward: RewardOpt = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    base_url: Annotated[str | None, typer.Option(help=BASE_URL_HELP)] = None,
    model: Annotated[
        str | None,
        typer.Option(help=MODEL_HELP + " With --backend: its model key (local.model)."),
    ] = None,
    api_key_env: Annotated[str | None, typer.Option(help=API_KEY_ENV_HELP)] = None,
    header: Annotated[list[str] | None, typer.Option(help=HEADER_HELP)] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            "--trajectories",
            "--save",
            help="Append the trajectory to this JSONL file (for replay; the file format of "
            "eval --trajectories and a run's trajectories).",
        ),
    ] = None,
    backend_flags: BackendFlags | None = None,
) -> None:
    """Play one episode and print it turn by turn with the reward breakdown."""
    from agentrft.cli.still_running import still_running
    from agentrft.policy import Sampling
    from agentrft.render import PlayView, render_header
    from agentrft.rollout import run_episode
    from agentrft.trajectory import append_trajectories

    if policy is not None and backend is not None:
        raise CliError("pass --policy SPEC or --backend NAME, not both")
    own = backend_flags.for_backend(backend) if backend_flags else {}
    impl = load_backend(backend) if backend is not None else None
    keys: dict[str, Any] = {}
    if impl is not None:
        keys, _ = impl.cli_values("play", {**own, "model": model, "dry_run": False}, [])
    values = {"task": task, "reward": reward, "limits.max_turns": max_turns, **keys}
    cfg, the_task, reward_fn = resolve_config(config, set_, values)
    prompt = pick_row(the_task, row, split, data, seed)
    if impl is not None:
        impl.check_config(cfg)
        the_policy = impl.play_policy(the_task, cfg)
    else:
        the_policy = resolve_cli_policy(
            policy or "expert", the_task, base_url=base_url, model=model,
            api_key_env=api_key_env, headers=header,
        )  # fmt: skip
    sampling = Sampling(temperature=temperature, max_tokens=max_tokens)
    limits = episode_limits(the_task, cfg)
    out = console()
    name = getattr(the_policy, "name", "") or policy or backend or "expert"
    render_header(the_task.name, out, title=f"row {row} · {name}")
    live = PlayView(the_policy, out)  # prints each turn as it is played

    async def go() -> Trajectory:
        try:
            with still_running(out, limits.timeout_s):
                return await run_episode(
                    the_task,
                    prompt,
                    live,
                    sampling=sampling,
                    limits=limits,
                    reward_fn=reward_fn,
                    metadata={"row": row, "policy": name},
                )
        finally:
            await live.aclose()

    trajectory = run_async(go)
    live.finish(trajectory)
    notify_episode(trajectory)
    if save is not None:
        append_trajectories([trajectory], save)
        console().print(f"appended to {save}")
    bad = [f for f in trajectory.failures if f.kind == "bad_input"]
    if bad:  # nothing was played: say so, and exit non-zero
        raise CliError(f"row {row} is not a {the_task.name} instance: {bad[0].detail}")
    unanswered = [f for f in trajectory.failures if f.kind in POLICY_FAILURES]
    if unanswered and not trajectory.turns:  # as eval: an episode of nothing is not a result
        raise CliError(
            f"the policy never answered ({unanswered[0].kind}), so nothing was played: "
            f"{unanswered[0].detail}"
        )
    failed = [f for f in trajectory.failures if f.kind == "reward_error"]
    if failed:  # the total shown is the lowest tier, not a score: exit non-zero
        raise CliError(
            f"the reward failed, so the episode scored the lowest tier: {failed[0].detail}"
        )


#: Failure kinds of a policy that did not answer (no reply to play).
POLICY_FAILURES = frozenset(
    {
        FailureKind.HTTP_ERROR,
        FailureKind.RATE_LIMITED,
        FailureKind.POLICY_TIMEOUT,
        FailureKind.POLICY_ERROR,
    }
)


def replay(
    file: Annotated[
        Path,
        typer.Argument(
            help="Trajectories JSONL (from eval or play --trajectories, or a run directory's)."
        ),
    ],
    index: Annotated[
        int | None, typer.Option("--index", "-i", min=0, help="Show only this episode (0-based).")
    ] = None,
    summary: Annotated[
        bool, typer.Option(help="Print the eval metrics of the file instead of the episodes.")
    ] = False,
    outcome: Annotated[
        list[str] | None,
        typer.Option(
            help="Only episodes whose outcome tier is this (repeatable); `solved` and "
            "`unsolved` also work."
        ),
    ] = None,
    failure: Annotated[
        list[str] | None,
        typer.Option(help="Only episodes with this failure kind, e.g. truncated (repeatable)."),
    ] = None,
    task: Annotated[str | None, typer.Option(help="Only episodes of this task.")] = None,
    step: Annotated[
        int | None, typer.Option(min=0, help="Only episodes of this training step (run files).")
    ] = None,
    worst: Annotated[
        int | None,
        typer.Option(min=1, help="Only the N lowest-reward episodes (after the other filters)."),
    ] = None,
) -> None:
    """Re-print stored trajectories exactly as `play` shows them; the filters pick which
    (they combine; a repeated one matches any of its values)."""
    from agentrft.render import render_trajectory
    from agentrft.trajectory import TrajectoryFileError, read_trajectories

    if not file.is_file():
        raise CliError(f"trajectory file {file} does not exist")
    try:
        trajectories = list(read_trajectories(file))
    except TrajectoryFileError as exc:  # it names the file, the line and the fix
        raise CliError(str(exc)) from None
    if not trajectories:
        raise CliError(f"{file} holds no trajectories")
    out = console()
    numbered = list(enumerate(trajectories))
    wanted = EpisodeFilter(outcome or [], failure or [], task, step, worst)
    if wanted.active:
        numbered = wanted.apply(numbered, file)
        out.print(f"{len(numbered)} of {len(trajectories)} episodes match {wanted}")
    if summary:
        _print_summary([t for _, t in numbered], file)
        return
    if index is not None:
        if index >= len(trajectories):
            raise CliError(f"--index {index} is out of range: {file} holds {len(trajectories)}")
        render_trajectory(trajectories[index], out, title=f"episode {index}")
        return
    for i, t in numbered:  # titles keep the file's numbering (what --index takes)
        render_trajectory(t, out, title=f"episode {i} of {len(trajectories)}")


@dataclass
class EpisodeFilter:
    """`replay`'s filters: every given one must hold; a repeated one matches any value."""

    outcomes: list[str]
    failures: list[str]
    task: str | None
    step: int | None
    worst: int | None

    @property
    def active(self) -> bool:
        return bool(self.outcomes or self.failures or self.task or self.step is not None
                    or self.worst)  # fmt: skip

    def __str__(self) -> str:
        parts = [f"--outcome {o}" for o in self.outcomes]
        parts += [f"--failure {f}" for f in self.failures]
        parts += [f"--task {self.task}"] if self.task else []
        parts += [f"--step {self.step}"] if self.step is not None else []
        parts += [f"--worst {self.worst}"] if self.worst else []
        return " ".join(parts)

    def _outcome(self, t: Trajectory) -> bool:
        if not self.outcomes:
            return True
        names = {t.reward.outcome if t.reward else "", "solved" if t.solved else "unsolved"}
        return bool(names & set(self.outcomes))

    def keeps(self, t: Trajectory) -> bool:
        return (
            self._outcome(t)
            and (not self.failures or bool(set(t.failure_kinds) & set(self.failures)))
            and (self.task is None or t.task == self.task)
            and (self.step is None or t.metadata.get("step") == self.step)
        )

    def apply(
        self, numbered: list[tuple[int, Trajectory]], file: Path
    ) -> list[tuple[int, Trajectory]]:
        """The matching episodes (the worst first with --worst); none is an error that
        lists what the file holds."""
        kept = [(i, t) for i, t in numbered if self.keeps(t)]
        if self.worst:
            kept = sorted(kept, key=lambda it: it[1].reward.total if it[1].reward else -math.inf)
            kept = kept[: self.worst]
        if kept:
            return kept
        every = [t for _, t in numbered]
        steps = sorted({s for t in every if isinstance(s := t.metadata.get("step"), int)})
        holds: dict[str, list[str]] = {
            "outcomes": sorted({t.reward.outcome for t in every if t.reward and t.reward.outcome}),
            "failure kinds": sorted({k for t in every for k in t.failure_kinds}),
            "tasks": sorted({t.task for t in every}),
            "steps": [str(s) for s in steps],
        }
        listed = "; ".join(
            f"{name}: {', '.join(values)}" for name, values in holds.items() if values
        )
        raise CliError(f"no episode of {file} matches {self} ({listed or 'nothing to filter'})")


def _print_summary(trajectories: list[Trajectory], file: Path) -> None:
    from agentrft.eval_table import reports_table
    from agentrft.evaluation import EvalReport

    by_temp: dict[tuple[str, float], list[Trajectory]] = {}
    for t in trajectories:
        temp = float(t.metadata.get("temperature", t.sampling.get("temperature", 1.0)))
        key = (str(t.metadata.get("policy", file.stem)), temp)
        by_temp.setdefault(key, []).append(t)
    reports = [
        EvalReport.from_trajectories(ts, task=ts[0].task, policy=policy, temperature=temp)
        for (policy, temp), ts in by_temp.items()
    ]
    console().print(reports_table(reports))
