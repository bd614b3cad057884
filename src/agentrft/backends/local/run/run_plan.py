"""The first lines of a local training run: what will run, and what the CPU preset chose.

A user should know before the first minute is spent which model trains on which task, how
many steps of what size, where the run directory is, and which settings agentrft filled in
for them (the CPU presets set up to ~20 values the user never typed). Printed once, at the
start; `agentrft config show --task T --backend local` shows the same resolved values.
"""

from __future__ import annotations

from typing import Any

from agentrft.backends.local.run.engine import uses_tiny_model
from agentrft.backends.local.run.evals import eval_level
from agentrft.backends.local.settings import LocalRunConfig
from agentrft.task import Task


def preset_changes(given: LocalRunConfig, config: LocalRunConfig) -> list[str]:
    """`key=value` for every setting the preset filled in (the user's own are never
    changed): the top level, `local`, `eval` and `limits`."""
    changed: list[str] = []
    sections: list[tuple[str, Any, Any]] = [
        ("", given, config),
        ("local.", given.local, config.local),  # type: ignore[attr-defined]
        ("eval.", given.eval, config.eval),
        ("limits.", given.limits, config.limits),
    ]
    for prefix, before, after in sections:
        for name in type(after).model_fields:
            if name in ("local", "eval", "limits") and not prefix:
                continue
            old, new = getattr(before, name, None), getattr(after, name, None)
            if old != new:
                changed.append(f"{prefix}{name}={new}")
    return changed


def say_plan(task: Task[Any], given: LocalRunConfig, config: LocalRunConfig, say: Any) -> None:
    """What will run, in two or three lines (`given`: the config before the preset)."""
    local = config.local  # type: ignore[attr-defined]
    model = local.model or f"the built-in tiny model ({local.tiny_model}, random init)"
    warmup = f"a {local.sft_warmup_steps}-step SFT warm-up, then " if local.sft_warmup_steps else ""
    rows = f"{config.eval.n} held-out rows" if config.eval.n else "the held-out rows"
    evals = (
        f"; evaluated on {rows} before and after" if local.eval_before or local.eval_after else ""
    )
    say(
        f"training {task.name} on {model}: {warmup}{config.max_steps} GRPO steps of "
        f"{config.global_batch_size} prompts x {config.group_size} rollouts (lr "
        f"{config.learning_rate:g}){evals}; run directory under {local.run_dir}/, its page "
        "report.html written there at the end",
        highlight=False,
    )
    changes = preset_changes(given, config)
    if changes:
        which = "tiny-model" if uses_tiny_model(given) else "real-model"
        say(
            f"the {which} CPU preset filled {len(changes)} settings you did not set: "
            f"{', '.join(changes)} (set any of them to override)",
            highlight=False,
        )
    _say_lowered_limits(task, given, config, say)


def _say_lowered_limits(
    task: Task[Any], given: LocalRunConfig, config: LocalRunConfig, say: Any
) -> None:
    """One line per episode limit of the task's own that the CPU preset lowered (the tiny
    model's `max_turns` 6), so a run never plays shorter episodes than the task asks for
    without saying so first."""
    own = task.limits.model_dump()
    for key, value in config.limits.model_dump().items():
        if value is None or key in given.limits.model_fields_set:
            continue
        theirs = own.get(key)
        if isinstance(theirs, (int, float)) and value < theirs:
            say(
                f"CPU preset: limits.{key} {theirs} → {value} (task {task.name}'s own is "
                f"{theirs}; --set limits.{key}={theirs} keeps it)",
                highlight=False,
            )


def check_task_fits(task: Task[Any], config: LocalRunConfig, *, has_expert: bool) -> None:
    """Refuse settings the task cannot serve: an SFT warm-up without the games it needs (a
    scripted expert, or a withheld copy for `local.sft_source=withheld`), a curriculum level
    past the task's last, carried-over groups without rollouts ahead."""
    if config.local.sft_warmup_steps > 0 and not has_expert:
        if config.local.sft_source == "withheld":
            raise ValueError(
                f"local.sft_source=withheld but task {task.name!r} offers no withheld copy "
                "with an expert (Task.withheld() returned None); set local.sft_source=expert "
                "or local.sft_warmup_steps=0"
            )
        raise ValueError(
            f"local.sft_warmup_steps={config.local.sft_warmup_steps} but task {task.name!r} has "
            "no scripted expert (Task.expert() returned None); set local.sft_warmup_steps=0"
        )
    if config.local.carry_over_groups and config.max_steps_off_policy == 0:
        raise ValueError(
            "local.carry_over_groups=true carries groups between steps played ahead of the "
            "trainer, but max_steps_off_policy is 0 (play, then train); set "
            "max_steps_off_policy=1 or more, or local.carry_over_groups=false"
        )
    levels = (config.local.curriculum_start, config.local.curriculum_end, eval_level(config))
    if max(levels) > task.curriculum_levels:
        raise ValueError(
            f"task {task.name!r} offers curriculum levels 0..{task.curriculum_levels}; "
            f"local.curriculum_start/curriculum_end/eval.curriculum_level ask for "
            f"{max(levels)}"
        )
