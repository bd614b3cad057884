"""Base model and model package groups: the lookups the SDK's MultiTurnRLTrainer does.

The SDK (sagemaker-train) resolves the base model's hub ARN and its multi-turn RL recipe
through DescribeHubContent, reads the recipe's hyperparameter specs from S3, and
get-or-creates two model package groups. We do the same few calls with boto3 (the SDK
would add ~48 packages and send telemetry requests; see docs/sagemaker.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError, error_code, error_message
from agentrft.backends.sagemaker.jobs.eula import Eula, eula_url
from agentrft.backends.sagemaker.jobs.job_document import base_model_arn_from_parts

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws
    from agentrft.backends.sagemaker.settings import SageMakerConfig


@dataclass
class HubModel:
    name: str
    version: str
    arn: str
    recipe: dict[str, Any] = field(default_factory=dict)
    #: name -> {"default", "min", "max", "enum", "type"} from the recipe's override params.
    specs: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    #: The https URL of the license the hub names (HostingEulaUri); None: it names none.
    eula_url: str | None = None


def _mtrl_recipe(document: dict[str, Any]) -> dict[str, Any] | None:
    """The serverless LoRA MTRL recipe, preferring non-subscription ones (as the SDK does)."""
    recipes = [
        r
        for r in document.get("RecipeCollection", []) or []
        if r.get("CustomizationTechnique") == facts.MTRL_TECHNIQUE
        and r.get(facts.RECIPE_TEMPLATE_KEY)
    ]
    for pick in (
        lambda r: r.get("Peft") and not r.get("IsSubscriptionModel"),
        lambda r: r.get("Peft"),
        lambda r: True,
    ):
        found = [r for r in recipes if pick(r)]
        if found:
            return found[0]
    return None


def resolve_base_model(
    aws: Aws, name: str, version: str | None = None, *, fetch_specs: bool = True
) -> HubModel:
    """DescribeHubContent on the public hub -> the model's ARN and MTRL recipe."""
    params: dict[str, Any] = {
        "HubName": facts.PUBLIC_HUB,
        "HubContentType": "Model",
        "HubContentName": name,
    }
    if version:
        params["HubContentVersion"] = version
    try:
        resp = aws.sagemaker.describe_hub_content(**params)
    except Exception as exc:
        if error_code(exc) == "ResourceNotFound":
            raise SageMakerError(
                f"base model {name!r}{' version ' + version if version else ''} is not in "
                f"{facts.PUBLIC_HUB} in {aws.region}; models with a multi-turn RL recipe: "
                f"`aws sagemaker list-hub-contents --hub-name {facts.PUBLIC_HUB} "
                f"--hub-content-type Model` (default: {facts.DEFAULT_BASE_MODEL})"
            ) from None
        raise SageMakerError(
            f"cannot look up base model {name!r} ({error_code(exc) or type(exc).__name__}: "
            f"{error_message(exc)}); the caller needs sagemaker:DescribeHubContent"
        ) from None
    try:
        document = json.loads(resp.get("HubContentDocument") or "{}")
    except ValueError:
        document = {}
    recipe = _mtrl_recipe(document)
    if recipe is None:
        raise SageMakerError(
            f"base model {name!r} has no multi-turn RL ({facts.MTRL_TECHNIQUE}) recipe in "
            f"{aws.region}; pick another sagemaker.base_model (default "
            f"{facts.DEFAULT_BASE_MODEL})"
        )
    model = HubModel(
        name=name,
        version=resp["HubContentVersion"],
        arn=resp["HubContentArn"],
        recipe=recipe,
        eula_url=eula_url(document, aws.region),
    )
    if fetch_specs and recipe.get(facts.RECIPE_OVERRIDE_PARAMS_KEY):
        model.specs = _read_specs(aws, recipe[facts.RECIPE_OVERRIDE_PARAMS_KEY], model.notes)
    return model


def _read_specs(aws: Aws, uri: str, notes: list[str]) -> dict[str, Any] | None:
    """The recipe's hyperparameter specs (JSON on S3); a failure is a note, not an error."""
    if "{customer_id}" in uri:
        uri = uri.replace("{customer_id}", aws.account_id())
    path = uri.removeprefix("s3://")
    if path.startswith("arn:"):  # an access point: Bucket is the ARN up to its name
        parts = path.split("/", 2)
        bucket, key = parts[0] + "/" + parts[1], parts[2] if len(parts) > 2 else ""
    else:
        bucket, _, key = path.partition("/")
    try:
        body = aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        specs = json.loads(body)
    except Exception as exc:
        notes.append(
            f"recipe hyperparameter specs at {uri} not readable "
            f"({error_code(exc) or type(exc).__name__}); ranges not checked against the recipe"
        )
        return None
    return specs if isinstance(specs, dict) else None


def check_against_specs(hps: dict[str, str], specs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(errors, warnings): out-of-range values are errors; names the recipe lacks, warnings."""
    errors, warnings = [], []
    for name, value in hps.items():
        spec = specs.get(name)
        if spec is None:
            warnings.append(f"{name} is not in the base model's recipe (sent anyway)")
            continue
        if not isinstance(spec, dict):
            continue
        if "enum" in spec and value not in {str(v) for v in spec["enum"]}:
            errors.append(f"{name}={value} is not one of {spec['enum']}")
            continue
        try:
            num = float(value)
        except ValueError:
            continue
        if "min" in spec and num < float(spec["min"]):
            errors.append(f"{name}={value} is below the recipe's minimum {spec['min']}")
        if "max" in spec and num > float(spec["max"]):
            errors.append(f"{name}={value} is above the recipe's maximum {spec['max']}")
    return errors, warnings


@dataclass
class GroupResolution:
    arn: str
    action: str  # "exists", "created", "would create"


def group_arn(aws: Aws, name: str) -> str:
    return f"arn:aws:sagemaker:{aws.region}:{aws.account_id()}:model-package-group/{name}"


#: ModelPackageGroupName's pattern in the service model: letters, digits and single or
#: repeated hyphens, starting and ending with a letter or digit, 63 at most.
_GROUP_NAME_MAX = 63


def group_name(model: str, suffix: str) -> str:
    """The default model package group of `model`: its name with `suffix`, made a valid
    ModelPackageGroupName (`Qwen/Qwen3-4B` -> `Qwen-Qwen3-4B-mtrl-mpg`; a name too long is
    cut before the suffix, so the output and checkpoint groups stay apart)."""
    base = re.sub(r"[^A-Za-z0-9]+", "-", model).strip("-") or "model"
    base = base[: _GROUP_NAME_MAX - len(suffix)].rstrip("-")
    return base + suffix


def ensure_model_package_group(
    aws: Aws,
    name_or_arn: str,
    *,
    create: bool = True,
    description: str = "",
    restricted: bool = False,
) -> GroupResolution:
    """Get-or-create a model package group (DescribeModelPackageGroup, then Create).

    `restricted` creates it with `ManagedConfiguration.ManagedStorageType=Restricted`, as
    the SageMaker SDK does for the groups of Nova models (their weights stay managed).
    """
    sm = aws.sagemaker
    try:
        resp = sm.describe_model_package_group(ModelPackageGroupName=name_or_arn)
        return GroupResolution(resp["ModelPackageGroupArn"], "exists")
    except Exception as exc:
        missing = error_code(exc) in {"ValidationException", "ResourceNotFound"} and (
            "not exist" in error_message(exc).lower() or "not found" in error_message(exc).lower()
        )
        if not missing:
            raise SageMakerError(
                f"cannot read model package group {name_or_arn!r} "
                f"({error_code(exc) or type(exc).__name__}: {error_message(exc)})"
            ) from None
    if name_or_arn.startswith("arn:"):
        raise SageMakerError(f"model package group {name_or_arn} does not exist; create it first")
    if not create:
        return GroupResolution(group_arn(aws, name_or_arn), "would create")
    params: dict[str, Any] = {"ModelPackageGroupName": name_or_arn}
    if description:
        params["ModelPackageGroupDescription"] = description
    if restricted:
        params["ManagedConfiguration"] = {"ManagedStorageType": "Restricted"}
    try:
        resp = sm.create_model_package_group(**params)
    except Exception as exc:
        raise SageMakerError(
            f"cannot create model package group {name_or_arn!r} "
            f"({error_code(exc) or type(exc).__name__}: {error_message(exc)}); the caller needs "
            "sagemaker:CreateModelPackageGroup, or set sagemaker.output_model_package_group "
            "to an existing group"
        ) from None
    return GroupResolution(resp["ModelPackageGroupArn"], "created")


def base_model_for(
    aws: Aws, sm: SageMakerConfig, offline: bool, notes: list[str]
) -> tuple[str, dict[str, Any] | None, Eula]:
    """The base model's ARN, its recipe's specs (looked up only) and its license: looked
    up on the hub, or offline built from the config (and `notes` says what was not)."""
    if offline:
        version = sm.base_model_version or "<latest: set sagemaker.base_model_version>"
        notes.append(
            "offline: the base model ARN was built, not looked up"
            if sm.base_model_version
            else "offline: BaseModelArn below ends in <latest: ...>; the request a real "
            "run submits carries the hub's latest version of "
            f"{sm.base_model}, looked up then (set sagemaker.base_model_version to pin it)"
        )
        eula = Eula(sm.base_model, None, looked_up=False)
        return base_model_arn_from_parts(aws.region, sm.base_model, version), None, eula
    model = resolve_base_model(aws, sm.base_model, sm.base_model_version)
    notes.extend(model.notes)
    return model.arn, model.specs, Eula(sm.base_model, model.eula_url, looked_up=True)
