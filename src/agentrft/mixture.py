"""Several tasks in one run: a weighted `TaskMixture` and the `MixtureTask` that plays it.

A mixture row names its task inside the prompt string, so it travels through every path a
single task's row does (a dataset file, the managed service, which passes the string to the
runtime untouched):

    {"prompt": "{\\"agentrft_task\\": \\"wordle\\", \\"prompt\\": \\"<wordle's own prompt>\\"}"}

`MixtureTask` is an ordinary `Task`: `parse` reads the field and routes the row to its task
(an unknown name is a `TaskInputError`, so the episode ends with the lowest reward instead of
a crash), and each episode runs under its own task's limits, prompts, tools and reward. The
trajectory records the task it played (`Trajectory.task`), which is what per-task metrics
and per-task evaluation tables group by. Single-task runs never see this module.
"""

from __future__ import annotations

import inspect
import json
import math
import random
import statistics
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentrft.environment import Environment
from agentrft.messages import Message
from agentrft.policy import Completion, Policy, PolicyError, Sampling
from agentrft.reward import RewardResult, RewardSample
from agentrft.task import EpisodeLimits, Task, TaskInputError

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from agentrft.trajectory import Trajectory

__all__ = [
    "ROUTE_FIELD",
    "MixtureInstance",
    "MixtureTask",
    "RoutingPolicy",
    "TaskMixture",
    "mixture_counts",
    "parse_task_spec",
    "per_task_metrics",
    "route_prompt",
    "row_task_counts",
    "subtasks",
    "wrap_prompt",
]

#: The field of a mixture row's prompt (a JSON object) that names the row's task.
ROUTE_FIELD = "agentrft_task"
#: The field holding the task's own prompt string, untouched.
INNER_FIELD = "prompt"
#: What joins the task names into the mixture's name (`wordle+expense_report`).
NAME_JOIN = "+"


@dataclass(frozen=True)
class TaskMixture:
    """Task name -> share of the rows, as given (`{wordle: 0.5, expense_report: 0.5}`);
    the shares need not sum to 1 (they are normalised). Build it with `TaskMixture.of`,
    which refuses an empty mixture and shares that are not finite and positive."""

    weights: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, weights: Mapping[str, float], source: str = "tasks") -> TaskMixture:
        if not weights:
            raise ValueError(f"{source}: name at least one task, e.g. {{wordle: 0.5, other: 0.5}}")
        for name, share in weights.items():
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"{source}: a task name must be a non-empty string, got {name!r}")
            if NAME_JOIN in name or "," in name or "=" in name:
                raise ValueError(f"{source}: task name {name!r} may not contain '+', ',' or '='")
            if isinstance(share, bool) or not isinstance(share, (int, float)):
                raise ValueError(
                    f"{source}.{name}: the share must be a number like 0.5, got {share!r}"
                )
            if not math.isfinite(share) or share <= 0:
                raise ValueError(
                    f"{source}.{name}: the share must be a finite number above 0, got {share!r}; "
                    "drop the task to leave it out"
                )
        return cls(tuple((n, float(s)) for n, s in weights.items()))

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.weights]

    @property
    def name(self) -> str:
        return NAME_JOIN.join(self.names)

    def ratios(self) -> dict[str, float]:
        total = sum(s for _, s in self.weights)
        return {n: s / total for n, s in self.weights}

    def spec(self) -> str:
        """The `--task` form of this mixture (`wordle=0.5,expense_report=0.5`)."""
        return ",".join(f"{n}={s:g}" for n, s in self.weights)


def build_task(
    task: str | None,
    tasks: Mapping[str, float] | None,
    lookup: Callable[[str], Task[Any, Any]],
    reward: str | None = None,
    reward_lookup: Callable[[str, str], Any] | None = None,
) -> tuple[Task[Any, Any], Any]:
    """What a run plays, and what scores it: `task` (a name, or a `--task a=0.7,b=0.3`
    spec) or the config's `tasks` mixture, each name looked up with `lookup` (the installed
    plugins' `Plugins.task`; several names make a `MixtureTask`), and the reward `reward`
    names (`reward_lookup(reward, task name)`; None: the task's own). A named reward
    replaces one task's reward, so a multi-task run refuses one (`ValueError`)."""
    mixture = TaskMixture.of(tasks) if tasks else parse_task_spec(task) if task else None
    names: list[str] = list(mixture.names) if mixture is not None else [task] if task else []
    if not names:
        raise ValueError("name a task (`task`) or several (`tasks`)")
    if reward and len(names) > 1:
        assert mixture is not None
        raise ValueError(
            f"--reward {reward}: a named reward replaces one task's reward; a multi-task run "
            f"({mixture.name}) plays each task with its own reward, so drop --reward"
        )
    if len(names) == 1:
        reward_fn = reward_lookup(reward, names[0]) if reward and reward_lookup else None
        return lookup(names[0]), reward_fn
    assert mixture is not None
    return MixtureTask({n: lookup(n) for n in names}, mixture), None


def parse_task_spec(spec: str) -> TaskMixture | None:
    """`--task` text as a mixture: `a,b` (equal shares) or `a=0.7,b=0.3`; None for one
    plain task name (`wordle`), which keeps every single-task path exactly as it was."""
    if "," not in spec and "=" not in spec:
        return None
    weights: dict[str, float] = {}
    for part in spec.split(","):
        name, sep, share = part.strip().partition("=")
        name = name.strip()
        if not name:
            raise ValueError(f"--task {spec!r}: an empty task name; write a=0.5,b=0.5 or a,b")
        if name in weights:
            raise ValueError(f"--task {spec!r}: task {name!r} is named twice")
        try:
            weights[name] = float(share) if sep else 1.0
        except ValueError:
            raise ValueError(
                f"--task {spec!r}: {name}={share.strip()!r} is not a number; write a=0.5,b=0.5"
            ) from None
    return TaskMixture.of(weights, source=f"--task {spec!r}")


def mixture_counts(ratios: Mapping[str, float], n: int) -> dict[str, int]:
    """`n` rows split by `ratios` (largest remainder: the counts sum to `n` and each is
    within one row of its exact share; ties go to the task named first)."""
    exact = {name: r * n for name, r in ratios.items()}
    counts = {name: math.floor(x) for name, x in exact.items()}
    left = n - sum(counts.values())
    order = sorted(ratios, key=lambda name: -(exact[name] - counts[name]))
    for name in order[:left]:
        counts[name] += 1
    return counts


def wrap_prompt(task: str, prompt: str) -> str:
    """A mixture row's prompt string: the task's own prompt with the task's name beside it."""
    return json.dumps({ROUTE_FIELD: task, INNER_FIELD: prompt}, ensure_ascii=False)


def route_prompt(prompt: str) -> tuple[str, str]:
    """(task name, the task's own prompt) of a mixture row; `TaskInputError` otherwise."""
    try:
        value = json.loads(prompt)
    except (ValueError, RecursionError):
        value = None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get(ROUTE_FIELD), str)
        or not isinstance(value.get(INNER_FIELD), str)
    ):
        raise TaskInputError(
            f'a multi-task row\'s prompt must be a JSON object {{"{ROUTE_FIELD}": NAME, '
            f'"{INNER_FIELD}": "..."}}; make rows with `agentrft dataset make --task a,b`'
        )
    return value[ROUTE_FIELD], value[INNER_FIELD]


def row_task_counts(prompts: Iterable[str]) -> dict[str, int]:
    """Rows per task of mixture prompts (a row that names no task counts as `?`)."""
    counts: Counter[str] = Counter()
    for p in prompts:
        try:
            counts[route_prompt(p)[0]] += 1
        except TaskInputError:
            counts["?"] += 1
    return dict(counts)


@dataclass(frozen=True)
class MixtureInstance:
    """A parsed mixture row: the task's name and that task's own instance."""

    task: str
    instance: Any


class MixtureTask(Task[MixtureInstance, Environment]):
    """Plays rows of several tasks, each routed to its task by the row's `agentrft_task`.

    `tasks` are the task objects by name, `mixture` their shares. Every method delegates to
    the row's task; `limits` is the widest of the tasks' limits (a bound for a whole batch),
    while each episode runs under its own task's limits plus any key the config sets
    (`limits_for`). `make_dataset` makes each task's rows in proportion.
    """

    tiers = None

    def __init__(self, tasks: Mapping[str, Task[Any, Any]], mixture: TaskMixture) -> None:
        missing = [n for n in mixture.names if n not in tasks]
        if missing:
            raise ValueError(f"tasks {missing} of the mixture were not given")
        self.mixture = mixture
        self.tasks: dict[str, Task[Any, Any]] = {n: tasks[n] for n in mixture.names}
        self.name = mixture.name  # type: ignore[misc]  # an instance's name, not the class's
        self.description = "mixture of " + ", ".join(  # type: ignore[misc]
            f"{n} ({r:.0%})" for n, r in mixture.ratios().items()
        )
        every = [t.limits for t in self.tasks.values()]
        # Constructed with no field "set": the keys a config sets on top are then exactly
        # the copy's model_fields_set (see limits_for).
        self.limits = EpisodeLimits.model_construct(  # type: ignore[misc]
            _fields_set=set(),
            max_turns=max(lim.max_turns for lim in every),
            max_tool_calls=max(lim.max_tool_calls for lim in every),
            timeout_s=max(lim.timeout_s for lim in every),
        )
        self.curriculum_levels = min(t.curriculum_levels for t in self.tasks.values())  # type: ignore[misc]
        self._env_task: weakref.WeakKeyDictionary[Environment, str] = weakref.WeakKeyDictionary()
        # A task that scores a prompt's rollouts together (score_group, agentrft.group_scoring)
        # keeps doing so in a mixture; only then is the mixture a group scorer at all, so a
        # mixture of per-episode rewards runs exactly as those tasks alone do.
        if any(callable(getattr(t, "score_group", None)) for t in self.tasks.values()):
            self.score_group = self._score_group

    async def _score_group(self, group: Sequence[Any]) -> Sequence[RewardResult] | None:
        """The group's task's `score_group` (a group is one row, so one task); None (each
        episode's own reward) when that task scores episodes alone."""
        if not group:
            return None
        scorer = getattr(self.tasks[self._env_task[group[0].env]], "score_group", None)
        if scorer is None:
            return None
        out = scorer(group)
        return await out if inspect.isawaitable(out) else out

    # -- routing --------------------------------------------------------------------------

    def _task(self, name: str) -> Task[Any, Any]:
        try:
            return self.tasks[name]
        except KeyError:
            raise TaskInputError(
                f"the row names task {name!r}, which this run does not play (it plays "
                f"{', '.join(self.tasks)}); add it to `tasks` or fix the row"
            ) from None

    def parse(self, prompt: str) -> MixtureInstance:
        name, inner = route_prompt(prompt)
        return MixtureInstance(name, self._task(name).parse(inner))

    def task_of(self, instance: MixtureInstance) -> str:
        return instance.task

    def limits_for(self, instance: MixtureInstance, limits: EpisodeLimits) -> EpisodeLimits:
        own = self.tasks[instance.task].limits
        set_here = {k: getattr(limits, k) for k in limits.model_fields_set}
        return own.model_copy(update=set_here)

    def environment(self, instance: MixtureInstance) -> Environment:
        env = self.tasks[instance.task].environment(instance.instance)
        self._env_task[env] = instance.task
        return env

    def reward(
        self, env: Environment, trajectory: Trajectory
    ) -> RewardResult | Awaitable[RewardResult]:
        return self.tasks[self._env_task[env]].reward(env, trajectory)

    def system_prompt(self, instance: MixtureInstance) -> str | None:
        return self.tasks[instance.task].system_prompt(instance.instance)

    def user_prompt(self, instance: MixtureInstance) -> str | None:
        return self.tasks[instance.task].user_prompt(instance.instance)

    def initial_messages(self, instance: MixtureInstance) -> list[Message]:
        return self.tasks[instance.task].initial_messages(instance.instance)

    def curriculum(self, instance: MixtureInstance, level: int) -> MixtureInstance:
        inner = self.tasks[instance.task].curriculum(instance.instance, level)
        return MixtureInstance(instance.task, inner)

    def instance_id(self, instance: MixtureInstance) -> str | None:
        return self.tasks[instance.task].instance_id(instance.instance)

    def hidden_values(self, instance: MixtureInstance) -> list[str]:
        return self.tasks[instance.task].hidden_values(instance.instance)

    def expert(self) -> Policy | None:
        """Each task's own expert, picked per episode by the row's task; None unless every
        task has one (an SFT warm-up on some tasks only would skew the mix)."""
        experts = {n: t.expert() for n, t in self.tasks.items()}
        if any(e is None for e in experts.values()):
            return None
        return RoutingPolicy({n: e for n, e in experts.items() if e is not None})

    def lowest_reward(self) -> RewardResult:
        """The lowest of the tasks' lowest rewards: what a row no task can play gets."""
        return min((t.lowest_reward() for t in self.tasks.values()), key=lambda r: r.total)

    def reward_samples(self) -> Iterable[RewardSample]:
        # Rewards of different tasks are not on one scale: `reward check` checks each task.
        return []

    # -- rows -----------------------------------------------------------------------------

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """Each task's rows in proportion, shuffled together (seeded). Without `n`, the
        total is the sum of the tasks' default split sizes."""
        ratios = self.mixture.ratios()
        if n is None:
            n = sum(len(t.make_dataset(split, None, seed)) for t in self.tasks.values())
        counts = mixture_counts(ratios, n)
        rows: list[dict[str, Any]] = []
        for name, task in self.tasks.items():
            if not counts[name]:
                continue
            made = task.make_dataset(split, counts[name], seed)
            if len(made) != counts[name]:
                raise TaskInputError(
                    f"task {name!r} made {len(made)} rows of split {split!r}, not the "
                    f"{counts[name]} its share needs; ask for fewer rows or give a file"
                )
            for row in made:
                prompt = row.get("prompt")
                if not isinstance(prompt, str):
                    raise TaskInputError(
                        f"task {name!r} made a row without a string 'prompt'; fix the task"
                    )
                rows.append({**row, "prompt": wrap_prompt(name, prompt)})
        random.Random(seed).shuffle(rows)
        return rows


class RoutingPolicy(Policy):
    """One policy per task; each episode's session is the policy of the task its row names
    (`agentrft.rollout.EPISODE_TASK`, set by the agent loop while it opens the session)."""

    name = "expert"

    def __init__(self, policies: Mapping[str, Policy]) -> None:
        self.policies = dict(policies)

    def session(self) -> Policy:
        from agentrft.rollout import EPISODE_TASK

        task = EPISODE_TASK.get()
        if task in self.policies:
            return self.policies[task].session()
        return self  # no policy for this task: complete() fails the episode, never the run

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        raise PolicyError(
            f"no policy for this episode's task (this policy plays {', '.join(self.policies)})"
        )

    async def aclose(self) -> None:
        for policy in self.policies.values():
            await policy.aclose()


def per_task_metrics(
    trajectories: Sequence[Trajectory], prefix: str = "reward"
) -> dict[str, float]:
    """`reward/<task>/mean`, `.../std`, `solve_rate/<task>` and `rollouts/<task>` for each
    task the trajectories played (a metric name per task, so curves stay apart)."""
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_task[t.task].append(t)
    out: dict[str, float] = {}
    for name, group in sorted(by_task.items()):
        rewards = [t.reward.total if t.reward else 0.0 for t in group]
        out[f"{prefix}/{name}/mean"] = statistics.fmean(rewards)
        out[f"{prefix}/{name}/std"] = statistics.pstdev(rewards) if len(rewards) > 1 else 0.0
        out[f"solve_rate/{name}"] = sum(t.solved for t in group) / len(group)
        out[f"rollouts/{name}"] = float(len(group))
    return out


def subtasks(task: Task[Any, Any]) -> dict[str, Task[Any, Any]]:
    """The tasks `task` plays, by name: a mixture's tasks, else `{task.name: task}`."""
    return dict(task.tasks) if isinstance(task, MixtureTask) else {task.name: task}
