"""Evaluation: play a task's rows with a policy and report pass@k, solve rate, reward, turns,
tool calls and failure kinds, per sampling temperature.

`evaluate` drives the one agent loop (`run_episodes`), so an eval sees exactly the prompts,
tools, limits and rewards that training sees. `EvalReport.from_trajectories` builds the same
report from any trajectories (the local backend's own rollouts, a replayed JSONL file).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentrft.episode_shape import EpisodeShape, collapsed, describe
from agentrft.group_scoring import run_grouped_episodes
from agentrft.mixture import MixtureTask
from agentrft.policy import Policy, Sampling
from agentrft.redact import scrub
from agentrft.rollout import EpisodeCallback, RewardFn
from agentrft.task import EpisodeLimits, Task
from agentrft.trajectory import Trajectory

if TYPE_CHECKING:
    from rich.table import Table

DEFAULT_PASS_K = (1, 2, 4, 8, 16, 32)
#: Where `ToolCallStats.by_tool` counts calls to tools the task does not have: a model can
#: invent any number of names, and a report listing each one grows without bound.
UNKNOWN_TOOLS = "(not a tool)"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from `n` samples of which `c` are correct (Chen et al., 2021).

    `1 - C(n-c, k) / C(n, k)`, computed as a product so large `n` neither overflows nor
    loses precision: `1 - prod_{i=n-c+1}^{n} (1 - k / i)`.
    """
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


class ToolCallStats(BaseModel):
    total: int = 0
    mean: float = 0.0
    max: int = 0
    by_tool: dict[str, int] = Field(
        default_factory=dict,
        description="Calls per tool the task offers; calls to names it does not offer (a "
        f"model inventing tools) are counted together under {UNKNOWN_TOOLS!r}.",
    )


class JudgeStats(BaseModel):
    """Judge calls summed over a report's episodes, from the rewards' `judge_*` components
    (`agentrft.judges.JudgeVerdict.components`)."""

    episodes: int = Field(0, description="Episodes whose reward asked a judge.")
    failed: int = Field(0, description="Of those, episodes scored with the judge's fallback.")
    cached: int = Field(0, description="Of those, verdicts served from the cache (no request).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(0.0, description="At the judge's prices (0 when none were given).")


class EvalReport(BaseModel):
    """Metrics of one evaluation run (one policy at one temperature)."""

    task: str
    policy: str
    temperature: float
    rows: int = Field(description="Distinct dataset rows played.")
    samples_per_row: int
    episodes: int
    solved: int = Field(description="Episodes counted as solved.")
    solve_rate: float = Field(description="solved / episodes (= pass@1 averaged over rows).")
    pass_at_k: dict[int, float] = Field(
        default_factory=dict, description="Unbiased pass@k per k <= samples_per_row."
    )
    success_threshold: float | None = Field(
        None, description="When set, solved means reward >= this; else the reward's `solved`."
    )
    mean_reward: float = 0.0
    std_reward: float = 0.0
    reward_se: float = Field(
        0.0, description="Standard error of mean_reward (sample std / sqrt(episodes))."
    )
    foothold: float | None = Field(
        None,
        description="Share of rows whose samples got different rewards (needs "
        "samples_per_row >= 2). GRPO learns only from such rows: at 0, every group of a "
        "training step would have zero advantage.",
    )
    curriculum_level: int = Field(
        0, description="The task's curriculum level played (0: the task)."
    )
    mean_turns: float = 0.0
    turn_histogram: dict[int, int] = Field(
        default_factory=dict, description="Number of assistant turns -> episodes."
    )
    tool_calls: ToolCallStats = Field(default_factory=ToolCallStats)
    failure_kinds: dict[str, int] = Field(
        default_factory=dict, description="Failure kind -> episodes where it happened."
    )
    outcomes: dict[str, int] = Field(
        default_factory=dict, description="Reward outcome tier -> episodes."
    )
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    prompt_tokens: int | None = Field(None, description="None when the policy reports none.")
    completion_tokens: int | None = None
    judge: JudgeStats | None = Field(
        None, description="Judge tokens, cost and failures; None when no reward used a judge."
    )
    wall_s: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_trajectories(
        cls,
        trajectories: Sequence[Trajectory],
        *,
        task: str,
        policy: str,
        temperature: float,
        pass_k_values: Iterable[int] = DEFAULT_PASS_K,
        success_threshold: float | None = None,
        wall_s: float = 0.0,
        metadata: dict[str, Any] | None = None,
    ) -> EvalReport:
        """Summarise episodes. Rows are grouped by `metadata["row"]`, else by prompt."""
        groups: dict[Any, list[bool]] = {}
        row_rewards: dict[Any, list[float]] = {}
        rewards: list[float] = []
        turns: Counter[int] = Counter()
        failures: Counter[str] = Counter()
        outcomes: Counter[str] = Counter()
        stops: Counter[str] = Counter()
        by_tool: Counter[str] = Counter()
        calls: list[int] = []
        prompt_tokens = completion_tokens = 0
        judge = JudgeStats()
        for t in trajectories:
            comps = t.reward.components if t.reward else {}
            if "judge_score" in comps:
                judge.episodes += 1
                judge.failed += comps.get("judge_failed", 0.0) > 0
                judge.cached += comps.get("judge_cached", 0.0) > 0
                judge.prompt_tokens += int(comps.get("judge_prompt_tokens", 0.0))
                judge.completion_tokens += int(comps.get("judge_completion_tokens", 0.0))
                judge.cost_usd += comps.get("judge_cost_usd", 0.0)
            ok = is_solved(t, success_threshold)
            key = t.metadata.get("row", t.prompt)
            groups.setdefault(key, []).append(ok)
            rewards.append(t.reward.total if t.reward else 0.0)
            row_rewards.setdefault(key, []).append(rewards[-1])
            turns[len(t.turns)] += 1
            failures.update(set(t.failure_kinds))
            outcomes[(t.reward.outcome if t.reward else "") or "-"] += 1
            stops[t.stop_reason or "-"] += 1
            calls.append(t.tool_calls)
            offered: set[Any] = set()
            for k, turn in enumerate(t.turns):
                if k == 0 or turn.tools is not None:  # the tools this call was offered
                    offered = {(s.get("function") or s).get("name") for s in t.tools_at(k)}
                by_tool.update(
                    c.name if not offered or c.name in offered else UNKNOWN_TOOLS
                    for c in turn.assistant.tool_calls or []
                )
                prompt_tokens += turn.prompt_tokens
                completion_tokens += turn.completion_tokens

        n = len(trajectories)
        samples = min((len(g) for g in groups.values()), default=0)
        pass_k: dict[int, float] = {}
        for k in sorted(set(pass_k_values)):
            if 1 <= k <= samples:
                pass_k[k] = statistics.fmean(pass_at_k(len(g), sum(g), k) for g in groups.values())
        solved = sum(sum(g) for g in groups.values())
        levels = {int(t.metadata.get("curriculum_level", 0)) for t in trajectories}
        return cls(
            task=task,
            policy=policy,
            temperature=temperature,
            rows=len(groups),
            samples_per_row=samples,
            episodes=n,
            solved=solved,
            solve_rate=solved / n if n else 0.0,
            pass_at_k=pass_k,
            success_threshold=success_threshold,
            mean_reward=statistics.fmean(rewards) if rewards else 0.0,
            std_reward=statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            reward_se=statistics.stdev(rewards) / math.sqrt(n) if n > 1 else 0.0,
            foothold=(
                statistics.fmean(len(set(r)) > 1 for r in row_rewards.values())
                if samples >= 2
                else None
            ),
            curriculum_level=max(levels, default=0),
            mean_turns=statistics.fmean(turns.elements()) if n else 0.0,
            turn_histogram=dict(sorted(turns.items())),
            tool_calls=ToolCallStats(
                total=sum(calls),
                mean=statistics.fmean(calls) if calls else 0.0,
                max=max(calls, default=0),
                by_tool=dict(by_tool.most_common()),
            ),
            failure_kinds=dict(failures.most_common()),
            outcomes=dict(outcomes.most_common()),
            stop_reasons=dict(stops.most_common()),
            prompt_tokens=prompt_tokens or None,
            completion_tokens=completion_tokens or None,
            judge=judge if judge.episodes else None,
            wall_s=wall_s,
            metadata=dict(metadata or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (pass@k keys become strings, as JSON requires)."""
        return self.model_dump(mode="json")

    def render(self) -> Table:
        """A two-column rich table of this report."""
        from rich.table import Table

        table = Table(title=f"{self.task} · {self.policy} · temperature {self.temperature:g}")
        table.add_column("metric", style="bold", no_wrap=True)
        table.add_column("value", overflow="fold")
        for name, value in self._summary_rows():
            table.add_row(name, value)
        return table

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("rows × samples", f"{self.rows} × {self.samples_per_row} = {self.episodes} episodes"),
            ("solve rate", f"{self.solve_rate:.1%} ({self.solved}/{self.episodes})"),
        ]
        rows += [(f"pass@{k}", f"{v:.1%}") for k, v in self.pass_at_k.items()]
        rows += [
            (
                "reward",
                f"{self.mean_reward:.4f} ± {self.reward_se:.4f} (standard error; "
                f"std {self.std_reward:.4f})",
            ),
            (
                "foothold",
                f"{self.foothold:.1%} of rows got different rewards across samples"
                if self.foothold is not None
                else "- (needs samples_per_row >= 2)",
            ),
            ("turns", f"mean {self.mean_turns:.2f}; " + _counts(self.turn_histogram)),
            (
                "tool calls",
                f"mean {self.tool_calls.mean:.2f}, max {self.tool_calls.max}; "
                + _counts(self.tool_calls.by_tool),
            ),
            ("outcomes", _counts(self.outcomes)),
            ("failure kinds", _counts(self.failure_kinds)),
            ("stop reasons", _counts(self.stop_reasons)),
        ]
        if self.prompt_tokens is not None or self.completion_tokens is not None:
            rows.append(
                (
                    "tokens",
                    f"prompt {self.prompt_tokens or 0}, completion {self.completion_tokens or 0}",
                )
            )
        if self.judge is not None:
            j = self.judge
            rows.append(
                (
                    "judge",
                    f"{j.episodes} episodes ({j.failed} failed, {j.cached} cached); tokens "
                    f"prompt {j.prompt_tokens}, completion {j.completion_tokens}; "
                    f"${j.cost_usd:.4f}",
                )
            )
        if self.curriculum_level:
            rows.append(("curriculum level", str(self.curriculum_level)))
        suspect = suspect_shapes([self])[0]
        if suspect:
            rows.append(("suspect", f"{suspect}; {SUSPECT_NOTE.removeprefix('suspect: ')}"))
        rows.append(("wall time", f"{self.wall_s:.2f}s"))
        return rows


def write_report(
    path: str | Path, reports: Sequence[EvalReport], context: dict[str, Any] | None = None
) -> None:
    """Write `reports` as JSON: `{**context, "reports": [...]}`, or the bare list when no
    `context` is given (`write_json`: scrubbed, complete or not at all)."""
    items = [r.to_dict() for r in reports]
    write_json(path, {**context, "reports": items} if context is not None else items)


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as JSON with secrets scrubbed (`agentrft.redact`: a policy URL's password,
    keys, tokens); the file appears only complete (temp file + rename)."""
    path = Path(path)
    data = scrub(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, default=str)
            fh.write("\n")
        Path(tmp).chmod(0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: The footnote of a table with a suspect row.
SUSPECT_NOTE = (
    "suspect: nearly every episode collapsed into this shape and the reward paid for it "
    "(agentrft.episode_shape); read a few before trusting the reward: agentrft replay "
    "<trajectories.jsonl> --index N (a local run keeps them in runs/<run>/eval/)"
)


def suspect_shapes(reports: Sequence[EvalReport]) -> list[str]:
    """Per report, the shape its episodes collapsed into (`32/32 episodes plain_text_call
    + truncated`) when it points to an exploit, else "". The other reports are the
    references: a cut-off or one-turn collapse is suspect only when a report without it
    scored lower (the shape paid); a call recovered from text always is."""
    shapes = [
        EpisodeShape.of_counts(r.episodes, r.failure_kinds, r.turn_histogram, r.mean_reward)
        for r in reports
    ]
    out = []
    for i, shape in enumerate(shapes):
        features = collapsed(shape, shapes[:i] + shapes[i + 1 :])
        out.append(describe(shape, features) if features else "")
    return out


def is_solved(trajectory: Trajectory, success_threshold: float | None = None) -> bool:
    """`reward.total >= success_threshold` when a threshold is given, else `reward.solved`."""
    reward = trajectory.reward
    if reward is None:
        return False
    if success_threshold is not None:
        return reward.total >= success_threshold
    return reward.solved


async def evaluate(
    task: Task[Any, Any],
    prompts: Sequence[str],
    policy: Policy,
    *,
    temperatures: Sequence[float] = (1.0,),
    samples_per_row: int = 1,
    sampling: Sampling | None = None,
    limits: EpisodeLimits | None = None,
    concurrency: int = 32,
    pass_k_values: Iterable[int] = DEFAULT_PASS_K,
    success_threshold: float | None = None,
    reward_fn: RewardFn | None = None,
    on_episode: EpisodeCallback | None = None,
    policy_name: str | None = None,
    curriculum_level: int = 0,
) -> tuple[list[EvalReport], list[Trajectory]]:
    """Play every prompt `samples_per_row` times at each temperature; one report each.
    `curriculum_level` > 0 plays the task's easier version of every row (`Task.curriculum`).

    Trajectories carry `metadata = {"row", "sample", "temperature", "policy"}`. With a fixed
    `sampling.seed`, a server returns the same sample every time, so pass@k would only
    repeat pass@1: leave the seed unset when `samples_per_row > 1`.
    """
    if samples_per_row < 1:
        raise ValueError(f"samples_per_row must be >= 1, got {samples_per_row}")
    if not prompts:
        raise ValueError("evaluate() needs at least one prompt")
    pass_k_values = list(pass_k_values)
    base = sampling or Sampling()
    name = policy_name or getattr(policy, "name", "") or type(policy).__name__
    reports: list[EvalReport] = []
    all_trajectories: list[Trajectory] = []
    expanded = [p for p in prompts for _ in range(samples_per_row)]
    for temperature in temperatures:
        meta = _metadata(samples_per_row, temperature, name)
        started = time.perf_counter()
        # The samples of a row are one group: a task with score_group scores them together.
        trajectories = await run_grouped_episodes(
            task,
            expanded,
            policy,
            group_size=samples_per_row,
            sampling=base.model_copy(update={"temperature": temperature}),
            limits=limits,
            reward_fn=reward_fn,
            concurrency=concurrency,
            on_episode=on_episode,
            metadata=meta,
            curriculum_level=curriculum_level,
        )
        wall_s = time.perf_counter() - started
        # A mixture of tasks: the whole mix first, then one report per task it played.
        parts = [(task.name, trajectories)] + [
            (sub, [t for t in trajectories if t.task == sub]) for sub in _subtask_names(task)
        ]
        for part_name, part in parts:
            if not part:
                continue
            reports.append(
                EvalReport.from_trajectories(
                    part,
                    task=part_name,
                    policy=name,
                    temperature=temperature,
                    pass_k_values=pass_k_values,
                    success_threshold=success_threshold,
                    wall_s=wall_s,
                )
            )
        all_trajectories.extend(trajectories)
    return reports, all_trajectories


def _subtask_names(task: Task[Any, Any]) -> list[str]:
    return list(task.tasks) if isinstance(task, MixtureTask) else []


def reports_by_task(reports: Sequence[EvalReport]) -> list[list[EvalReport]]:
    """`reports` grouped by their task, in first-seen order (one group for one task)."""
    groups: dict[str, list[EvalReport]] = {}
    for r in reports:
        groups.setdefault(r.task, []).append(r)
    return list(groups.values())


def _metadata(samples: int, temperature: float, policy: str) -> Callable[[int], dict[str, Any]]:
    def meta(i: int) -> dict[str, Any]:
        return {
            "row": i // samples,
            "sample": i % samples,
            "temperature": temperature,
            "policy": policy,
        }

    return meta


def _counts(counts: dict[Any, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "-"
