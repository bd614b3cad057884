"""One configuration for every backend: a YAML or TOML file plus `--set key=value` overrides.

Hyperparameters shared by the backends sit at the top level under the managed service's
names (SageMaker AI `AgentRFT` jobs), so a config moves between `local` and `sagemaker`
unchanged. This module is the core schema and knows no backend: each installed backend adds
its own section (`Backend.config_section`, e.g. `local:`, `sagemaker:`) in
`agentrft.config_model`, which is where a config file is read. Unknown keys and unknown
sections are errors that suggest the nearest valid name. Every field says where it is
declared what it does, why its default is what it is, and where that comes from.

Floats must be finite everywhere. File reading and its bounds are in `config_files`.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from agentrft.config_files import (
    MAX_CONFIG_BYTES,
    MAX_INT_CHARS,
    MAX_NESTING,
    MAX_NODES,
    BoundedYAMLLoader,
    ConfigError,
    ConfigLimitError,
    load_yaml,
    parse_override,
    read_config_file,
    short,
    yaml_error_line,
)
from agentrft.mixture import TaskMixture

if TYPE_CHECKING:
    from agentrft.task import EpisodeLimits, Task

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_INT_CHARS",
    "MAX_NESTING",
    "MAX_NODES",
    "SHARED_HYPERPARAMETERS",
    "BoundedYAMLLoader",
    "Config",
    "ConfigError",
    "ConfigLimitError",
    "EvalConfig",
    "LimitsConfig",
    "Section",
    "dump_config",
    "episode_limits",
    "explain_validation",
    "load_yaml",
    "parse_override",
    "read_config_file",
    "yaml_error_line",
]


class Section(BaseModel):
    """Base of every config section, a backend's included: unknown keys are errors, values
    are checked on assignment too, and inf/nan are refused (YAML's .inf, TOML's inf, 1e999
    are never a meaningful hyperparameter)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class LimitsConfig(Section):
    """Overrides for the task's episode limits (unset = the task's own default)."""

    max_turns: int | None = Field(
        None, ge=1, description="Policy calls per episode (None: the task's `limits`)."
    )
    max_tool_calls: int | None = Field(
        None, ge=1, description="Tool calls per episode (None: the task's `limits`)."
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="Wall-clock budget per episode; an episode past it ends with "
        "`wall_clock` and the lowest reward (None: the task's `limits`).",
    )


class EvalConfig(Section):
    """How `agentrft eval` (and a local run's before/after rows) sample and score."""

    split: str = Field(
        "validation", description="Dataset split made by the task when no file is given."
    )
    n: int | None = Field(None, ge=1, description="Rows to evaluate (default: the whole split).")
    samples_per_row: int = Field(
        1,
        ge=1,
        description="Episodes per row; pass@k is reported for k <= this (1: pass@1, i.e. "
        "the solve rate, the cheapest useful figure).",
    )
    temperatures: list[Annotated[float, Field(ge=0, le=2)]] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        description="Evaluate at each temperature. Evaluate at the one you serve at: the "
        "managed service's Wordle model scored 37% on its training curve and 84% served.",
    )
    concurrency: int = Field(
        32,
        ge=1,
        description="Episodes in flight at once (a served model's throughput, not the "
        "client's, is the limit; 32 keeps a vLLM server busy without queueing for long).",
    )
    curriculum_level: int = Field(
        0,
        ge=0,
        description="Play the task's easier version of every row at this curriculum level "
        "(Task.curriculum; 0 = the task itself). A local training run's before/after rows "
        "use the level its curriculum ends at (local.curriculum_end) unless this is set.",
    )


# Sources below: [recipe] the managed service's published recipe template (mtrl_lora), [doc]
# AWS's hyperparameter table; both are listed, with ranges, in the sagemaker backend's
# recipe module. A backend reads the same names; a value you do not set is not sent to the
# managed service, whose per-model recipe has its own defaults.


class Config(Section):
    """The resolved configuration: the shared keys, `limits`, `eval`, and one section per
    installed backend (see `agentrft.config_model`). Build one with that module's
    `load_config` or `validate_config`, not with `Config(...)`, so the sections are there."""

    task: str | None = Field(None, description="Task name (see `agentrft tasks`).")
    tasks: dict[str, float] | None = Field(
        None,
        description="Several tasks in one run, name -> share of the rows ({wordle: 0.5, "
        "expense_report: 0.5}; shares are normalised). Rows name their task inside the "
        "prompt string, metrics and evaluations are reported per task, and one SageMaker "
        "runtime serves them all (docs/multi-task.md). Set either this or `task`.",
    )
    reward: str | None = Field(
        None, description="A named reward plugin replacing the task's reward (--reward)."
    )

    @field_validator("tasks")
    @classmethod
    def _check_tasks(cls, value: dict[str, float] | None, info: ValidationInfo) -> Any:
        if value is None:
            return value
        if info.data.get("task"):
            raise ValueError(
                f"tasks: set either `task` ({info.data['task']!r}) or `tasks`, not both; a "
                "multi-task run names every task under `tasks`"
            )
        TaskMixture.of(value, source="tasks")
        return value

    seed: int = Field(
        42,
        description="Seed of the rows the task makes for a run (validation uses seed+1, so "
        "the splits differ) and of the local engine's sampling.",
    )
    train_dataset: str | None = Field(
        None,
        description='Training rows file (JSONL, JSON, Parquet or CSV of {"prompt": ...}; '
        "`train --data FILE`). None: rows the task makes for its train split.",
    )
    validation_dataset: str | None = Field(
        None,
        description="Held-out rows file for evaluations during and after training. None: "
        "rows the task makes for eval.split.",
    )

    # Shared hyperparameters (SageMaker AI names; the local engine reads the same ones).
    global_batch_size: int = Field(
        128,
        ge=1,
        # A bound so a typo (1e22) is refused by the config, dry runs included, instead of
        # a run that tries to gather that many prompts: 65536 x 32 rollouts is already 2M
        # episodes a step.
        le=65_536,
        description="Prompts per step; each is played group_size times [recipe: 128, one of "
        "32, 64, 128; at most 65536].",
    )
    group_size: int = Field(
        8,
        ge=2,
        le=32,
        description="Rollouts per prompt, the GRPO group whose mean is the baseline: more "
        "gives a better baseline at a linear cost [recipe: 8, 2 to 32].",
    )
    advantage_method: str = Field(
        "group_based",
        description="Advantage estimator: group_based is GRPO's (r - mean) / std over the "
        "group [doc]; group_based_per_turn trains each turn on its own reward "
        "(RewardResult.per_turn), compared with the same turn of the group, on both "
        "backends; the service offers more (rloo, ...), the local engine its registry "
        "(agentrft_advantages adds to it).",
    )
    loss_fn: str = Field(
        "ppo",
        description="Policy loss: ppo (the clipped surrogate, Schulman et al. 2017), "
        "importance_sampling or cispo (MiniMax-M1) [doc: ppo]; the local engine's registry "
        "takes more from plugins (agentrft_losses). Each backend refuses a name it cannot "
        "run before anything starts.",
    )
    clip_low_threshold: float = Field(
        0.8,
        ge=0,
        le=1,
        description="1 - eps_low: the ratio below which a negative-advantage token stops "
        "pulling (PPO's eps = 0.2) [doc].",
    )
    clip_high_threshold: float = Field(
        1.2,
        ge=1,
        le=10,
        description="1 + eps_high: the ratio above which a positive-advantage token stops "
        "pushing; DAPO's clip-higher raises it (1.28) to keep exploring [doc: 1.2].",
    )
    temperature: float = Field(
        1.0,
        ge=0,
        le=2,
        description="Sampling temperature of training rollouts: 1 samples the policy itself, "
        "which on-policy GRPO assumes [recipe: 1.0; Nova Lite's 0.7].",
    )
    sampling_top_p: float = Field(
        1.0,
        gt=0,
        le=1,
        description="Nucleus sampling of rollouts; 1 keeps the sampled distribution the one "
        "being trained [recipe].",
    )
    sampling_max_tokens: int = Field(
        4096,
        ge=1,
        description="Tokens per turn; a reply cut here counts as truncated [doc: 4096, 512 "
        "to 8192].",
    )
    max_epochs: int = Field(1, ge=1, description="Passes over the training rows [recipe].")
    max_steps_off_policy: int = Field(
        0,
        ge=0,
        le=8,
        description="Steps the rollouts may lag the trainer: with k > 0 the next k steps' "
        "episodes play while a step trains, each from an adapter at most k versions old, and "
        "the loss weighs their tokens by the clipped ratio to the sampler's own logprobs; 0 "
        "plays, then trains (synchronous) [recipe: async_config, 0].",
    )
    max_steps: int = Field(50, ge=1, description="Optimizer steps of the run [recipe].")
    val_every: int = Field(
        10,
        ge=0,
        description="Steps between validations on the validation rows (0: none) [recipe].",
    )
    lora_rank: int = Field(32, ge=1, description="LoRA rank [recipe: 32, 16 to 64].")
    lora_alpha: int = Field(
        64,
        ge=1,
        description="LoRA scaling alpha; the update is scaled by alpha/rank, here 2 [recipe: 64].",
    )
    learning_rate: float = Field(
        4e-5,
        gt=0,
        description="Optimizer learning rate [recipe: 4e-5; 1e-5 for gpt-oss-20b and "
        "Gemma 4, which the service uses when you leave this unset].",
    )
    adam_beta1: float = Field(
        0.9, ge=0, lt=1, description="AdamW beta1 (torch's and Kingma & Ba's default)."
    )
    adam_beta2: float = Field(
        0.999, ge=0, lt=1, description="AdamW beta2 (torch's and Kingma & Ba's default)."
    )
    pass_k_values: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32],
        description="k values of the unbiased pass@k (Chen et al., 2021) that evaluations "
        "report, cut to those <= samples per row [doc].",
    )
    success_threshold: float = Field(
        1.0,
        description="A reward >= this counts as a success [doc]; an eval without "
        "--success-threshold uses the reward's own `solved` instead.",
    )

    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)


def episode_limits(task: Task[Any, Any], config: Config) -> EpisodeLimits:
    """The limits `task`'s episodes run under: the task's own `limits` with every key the
    config's `limits` section sets on top (one merge for the CLI and every backend)."""
    return task.limits.overridden_by(config.limits)


#: Top-level hyperparameters, in the managed service's vocabulary.
SHARED_HYPERPARAMETERS = (
    "global_batch_size", "group_size", "advantage_method", "loss_fn", "clip_low_threshold",
    "clip_high_threshold", "temperature", "sampling_top_p", "sampling_max_tokens", "max_epochs",
    "max_steps", "max_steps_off_policy", "val_every", "lora_rank", "lora_alpha", "learning_rate", "adam_beta1",
    "adam_beta2", "pass_k_values", "success_threshold",
)  # fmt: skip


#: Errors listed for one config; the rest are counted.
_MAX_ERRORS = 5


def explain_validation(
    exc: ValidationError, source: str, model: type[BaseModel] | None = None
) -> str:
    """One line per error (at most `_MAX_ERRORS`), naming the key and the fix."""
    model = model or Config
    lines = []
    errors = exc.errors()
    for err in errors[:_MAX_ERRORS]:
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        if err["type"] == "extra_forbidden":
            lines.append(f"{source}: {_unknown_key(model, loc, err.get('input'))}")
        elif err["type"] == "value_error" and str(err["ctx"]["error"]).startswith(key):
            # A validator's own message names the key and the fix (tasks.wordle: ...).
            lines.append(f"{source}: {err['ctx']['error']}")
        else:
            lines.append(f"{source}: {key}: {err['msg']} (got {short(err.get('input'))})")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"{source}: ... and {len(errors) - _MAX_ERRORS} more errors")
    return "\n".join(lines)


def _unknown_key(model: type[BaseModel], loc: list[str], value: Any) -> str:
    key = ".".join(loc)
    valid = _fields_at(model, loc[:-1])
    a_section = len(loc) == 1 and isinstance(value, dict)
    # A mapping is a section: suggest sections for it (never `lora_alpha` for `local`).
    candidates = [n for n in valid if _fields_at(model, [n])] if a_section else valid
    close = difflib.get_close_matches(loc[-1], candidates, n=1, cutoff=0.5)
    hint = f"; did you mean {'.'.join([*loc[:-1], close[0]])!r}?" if close else ""
    if a_section and not close:
        listed = ", ".join(_sections(model)) or "none installed"
        hint = f" (a backend's section? installed backends' sections: {listed})"
    elif len(loc) == 1 and not close:
        # A setting one backend reads lives in its section (rollout_timeout is sagemaker's).
        owners = [s for s in _sections(model) if loc[0] in _fields_at(model, [s])]
        if owners:
            hint = f"; it is a {owners[0]} setting: {owners[0]}.{loc[0]}"
    return f"unknown key {key!r}{hint} (valid here: {', '.join(valid)})"


def _sections(model: type[BaseModel]) -> list[str]:
    return [name for name in model.model_fields if name not in Config.model_fields]


def _fields_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    for part in loc:
        field = model.model_fields.get(part)
        ann = field.annotation if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            return []
    return list(model.model_fields)


def dump_config(config: BaseModel, fmt: Literal["yaml", "json", "toml"] = "yaml") -> str:
    return dump_data(config.model_dump(mode="json"), fmt)


def dump_data(data: dict[str, Any], fmt: Literal["yaml", "json", "toml"] = "yaml") -> str:
    """`data` (JSON-able: tuples, paths and the like are written as JSON writes them) as
    YAML, JSON or TOML, the formats `config show` prints."""
    data = json.loads(json.dumps(data, default=str))
    if fmt == "json":
        return json.dumps(data, indent=2)
    if fmt == "toml":
        return _to_toml(data)
    return yaml.safe_dump(data, sort_keys=False)


def _to_toml(data: dict[str, Any]) -> str:
    flat = {k: v for k, v in data.items() if not isinstance(v, dict)}
    sections = {k: v for k, v in data.items() if isinstance(v, dict)}
    out = [f"{k} = {_toml_value(v)}" for k, v in flat.items() if v is not None]
    for name, body in sections.items():
        out.append(f"\n[{name}]")
        out.extend(f"{k} = {_toml_value(v)}" for k, v in body.items() if v is not None)
    return "\n".join(out) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)
