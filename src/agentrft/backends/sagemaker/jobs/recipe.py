"""The service's recipe templates: the hyperparameters a job may set, their ranges, and the
values the service uses for the ones a job leaves out.

A training job's `HyperParameters` are substituted into the base model's multi-turn RL
recipe. The managed service publishes that recipe's template and override parameters
(`aws/sagemaker-hyperpod-recipes`,
`launcher/recipe_templatization/mtrl/mtrl_recipe_template_parameters.json`): template
`mtrl_lora` (gpt-oss-20b, Gemma 4 31B IT, Qwen 3.6 27B) and `mtrl_nova_lite_lora`. Marks as in
`service_facts.py`: [recipe] that file; [doc] AWS's hyperparameter table; [sdk] the
SageMaker SDK (sagemaker-train 1.27). Everything here is pure data and pure functions: a dry
run checks and explains a job's hyperparameters with no AWS call.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["int", "float", "str", "int_list"]

#: Characters the SageMaker SDK allows in a hyperparameter value [sdk:
#: `_validate_hyperparameter_values`]; the service's template substitution is the reason.
_VALUE_CHARS = re.compile(r"^[a-zA-Z0-9/_.:,\-\s'\"\[\]]*$")


@dataclass(frozen=True)
class Param:
    """One template variable: its type, range, choices and the service's default."""

    kind: Kind
    default: Any = None  # None: the service's default is not published
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[Any, ...] | None = None
    #: Defaults that depend on the base model (hub content name -> value) [recipe].
    by_model: Mapping[str, Any] = field(default_factory=dict)
    #: Where the default and range come from.
    source: str = "[recipe]"

    def default_for(self, model: str) -> Any:
        return self.by_model.get(model, self.default)


@dataclass(frozen=True)
class RecipeTemplate:
    name: str
    params: Mapping[str, Param]
    #: Template variables the service fills itself (the job's name, model, data, output).
    reserved: frozenset[str] = frozenset({"name", "model_name_or_path", "data_path", "output_path"})


_ADVANTAGE_METHODS = (
    "monte_carlo", "group_based", "group_based_per_turn", "rloo", "reinforce_pp",
    "reinforce_pp_baseline", "opo", "grpo_passk", "gpg",
)  # fmt: skip

#: mtrl_lora: the template of gpt-oss-20b, Gemma 4 31B IT and Qwen 3.6 27B. Ranges the
#: template does not override are AWS's documented ones [doc].
_MTRL_LORA = {
    "global_batch_size": Param("int", 128, choices=(32, 64, 128)),
    "group_size": Param("int", 8, 2, 32),
    "advantage_method": Param("str", "group_based", choices=_ADVANTAGE_METHODS, source="[doc]"),
    "loss_fn": Param("str", "ppo", choices=("importance_sampling", "ppo", "cispo"), source="[doc]"),
    "clip_low_threshold": Param("float", 0.8, 0, 1, source="[doc]"),
    "clip_high_threshold": Param("float", 1.2, 1, 10, source="[doc]"),
    "temperature": Param("float", 1.0, 0, 2),
    "sampling_top_p": Param("float", 1.0, 0, 1),
    # Also the validation max_tokens [recipe]; per turn.
    "sampling_max_tokens": Param("int", 4096, 512, 8192, source="[doc]"),
    "pass_k_values": Param("int_list", [1, 2, 4, 8, 16, 32], 1, source="[doc]"),
    "success_threshold": Param("float", 1.0, source="[doc]"),
    "max_epochs": Param("int", 1, 1, 30),
    "max_steps": Param("int", 50, 1, 1000),
    "val_every": Param("int", 10, 0, 100),
    "lora_rank": Param("int", 32, 16, 64),
    "lora_alpha": Param("int", 64, 16, 128),
    "learning_rate": Param(
        "float",
        4e-5,
        0,
        0.01,
        exclusive_minimum=True,
        by_model={"openai-reasoning-gpt-oss-20b": 1e-5, "huggingface-vlm-gemma-4-31b-it": 1e-5},
    ),
    "adam_beta1": Param("float", None, 0, 1),
    "adam_beta2": Param("float", None, 0, 1),
    "adam_eps": Param("float", 1e-8, 0),
    "adam_weight_decay": Param("float", None, 0),
    "adam_grad_clip_norm": Param("float", 1.0, 0),
    "rollout_max_concurrency": Param("int", None, 1),
    "rollout_timeout": Param("int", None, 1),
    "rollout_max_retries": Param("int", None, 0),
    "max_steps_off_policy": Param("int", None, 0),  # under async_config [recipe]
}

#: mtrl_nova_lite_lora: Nova Lite 2.0, with its own batch sizes, LoRA ranks and temperature.
_NOVA_LITE = {
    **_MTRL_LORA,
    "global_batch_size": Param("int", None, choices=(8, 16, 32, 64)),
    "lora_rank": Param("int", 32, 16, 32),
    "temperature": Param("float", 0.7, 0, 2),
    "learning_rate": Param("float", None, 0, 0.01, exclusive_minimum=True),
    "save_every": Param("int", None, 1),
    "lora_plus_lr_ratio": Param("float", None, 0),
}

TEMPLATES: dict[str, RecipeTemplate] = {
    "mtrl_lora": RecipeTemplate("mtrl_lora", _MTRL_LORA),
    "mtrl_nova_lite_lora": RecipeTemplate("mtrl_nova_lite_lora", _NOVA_LITE),
}

#: Hub models known to have a multi-turn RL recipe, with the regions that offer them
#: [recipe]. A model not listed is assumed to use `mtrl_lora` (a note says so).
MODEL_REGIONS: dict[str, tuple[str, ...]] = {
    "openai-reasoning-gpt-oss-20b": ("us-east-1", "us-west-2"),
    "huggingface-vlm-gemma-4-31b-it": ("us-west-2",),
}


def is_nova(model: str) -> bool:
    """Nova models, recognised as the SageMaker SDK recognises them: "nova" in the name."""
    return "nova" in model.lower()


def template_for(model: str) -> tuple[RecipeTemplate, bool]:
    """(the model's template, whether the model is a known one)."""
    if is_nova(model):
        return TEMPLATES["mtrl_nova_lite_lora"], True
    return TEMPLATES["mtrl_lora"], model in MODEL_REGIONS


def _parse(kind: Kind, text: str) -> Any:
    """The value a hyperparameter string stands for; raises ValueError."""
    if kind == "int":
        number = float(text)
        if not number.is_integer():
            raise ValueError("not a whole number")
        return int(number)
    if kind == "float":
        number = float(text)
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    if kind == "int_list":
        values = json.loads(text)
        if not isinstance(values, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            raise ValueError("not a JSON list of integers such as [1, 2, 4]")
        return values
    return text


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def check(
    hps: Mapping[str, str], model: str, *, reserved_ok: bool = False
) -> tuple[list[str], list[str]]:
    """(errors, warnings) for hyperparameters sent to a job on `model`.

    Errors: a value of the wrong type, outside its range or choices, or with characters
    the service refuses. Warnings: a name the model's template has no variable for (the
    service would ignore or refuse it; the nearest known name is suggested).
    """
    template, _ = template_for(model)
    errors: list[str] = []
    warnings: list[str] = []
    for name, text in hps.items():
        if not _VALUE_CHARS.match(text):
            errors.append(
                f"{name}={text!r} has characters the service refuses (letters, digits, "
                "space and / _ . : , - ' \" [ ] only)"
            )
            continue
        if name in template.reserved and not reserved_ok:
            warnings.append(f"{name} is set by the service itself; the job's value may be ignored")
            continue
        param = template.params.get(name)
        if param is None:
            close = difflib.get_close_matches(name, list(template.params), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            warnings.append(f"{name} is not a variable of the {template.name} recipe{hint}")
            continue
        problem = _check_value(name, text, param, template.name)
        if problem:
            errors.append(problem)
    return errors, warnings


def _check_value(name: str, text: str, param: Param, template: str) -> str | None:
    try:
        value = _parse(param.kind, text)
    except (ValueError, json.JSONDecodeError) as exc:
        return f"{name}={text!r}: {exc}"
    where = f"the {template} recipe's {param.source.strip('[]')}"
    if param.choices is not None:
        allowed = {_shown(c) for c in param.choices}
        if _shown(value) not in allowed:
            listed = ", ".join(_shown(c) for c in param.choices)
            return f"{name}={text} is not one of {listed} ({where})"
        return None
    values = value if isinstance(value, list) else [value]
    for v in values:
        if not isinstance(v, (int, float)):
            continue
        low, high = param.minimum, param.maximum
        below = low is not None and (v <= low if param.exclusive_minimum else v < low)
        above = high is not None and v > high
        if below or above:
            left = "(" if param.exclusive_minimum else "["
            lo = "" if low is None else _shown(float(low) if param.kind == "float" else low)
            hi = "" if high is None else _shown(float(high) if param.kind == "float" else high)
            return f"{name}={text} is outside {left}{lo}, {hi}] ({where})"
    return None


@dataclass(frozen=True)
class PlanRow:
    """One hyperparameter of a dry-run plan: the value the job gets and who decided it."""

    name: str
    value: str
    #: "set by you", "agentrft default", "recipe default" (the published template),
    #: "AWS docs default" (the documented table) or "service default (not published)".
    source: str
    sent: bool


def plan(
    sent: Mapping[str, str], user_set: set[str], model: str, *, send_all: bool = False
) -> list[PlanRow]:
    """Every template variable and every sent name, with the value the job will use.

    A sent value is "set by you" when the config file, `--set` or a flag set it, else
    agentrft's default (only with `send_hyperparameters=all`); an unsent one is the
    recipe template's default for `model`, else AWS's documented one, where published.
    """
    template, _ = template_for(model)
    rows = []
    for name in [*sent, *(n for n in template.params if n not in sent)]:
        if name in sent:
            source = "set by you" if name in user_set or not send_all else "agentrft default"
            rows.append(PlanRow(name, sent[name], source, True))
            continue
        param = template.params[name]
        default = param.default_for(model)
        if default is None:
            rows.append(PlanRow(name, "–", "service default (not published)", False))
        else:
            where = "recipe default" if param.source == "[recipe]" else "AWS docs default"
            rows.append(PlanRow(name, _shown(default), where, False))
    return rows


def region_note(model: str, region: str) -> str | None:
    """A warning when the recipe does not list `region` for `model` (lists grow: not an error)."""
    regions = MODEL_REGIONS.get(model)
    if is_nova(model):
        regions = ("us-east-1", "us-west-2")
    if regions and region not in regions:
        return (
            f"base model {model} is offered in {', '.join(regions)} per the recipe; the job "
            f"runs in {region}"
        )
    return None
