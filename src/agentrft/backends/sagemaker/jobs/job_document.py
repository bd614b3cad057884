"""The CreateJob request and the JobConfigDocument, built and read as plain data.

Pure functions only (no AWS calls): the backend resolves ARNs, then these assemble the
request; `validate_request` checks it against botocore's own model, the same check a
`Stubber` makes, so a dry run shows a request the service's client would accept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.settings import SageMakerRunConfig

_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


# -- names ------------------------------------------------------------------------------


def validate_job_name(name: str) -> str:
    if not _JOB_NAME.match(name or ""):
        raise SageMakerError(
            f"job name {name!r} is invalid: 1-63 letters, digits and hyphens, starting and "
            "ending with a letter or digit (sagemaker.job_name / --job-name)"
        )
    return name


def make_job_name(prefix: str, now: datetime | None = None) -> str:
    """`<prefix>-YYYYmmdd-HHMMSS`, trimmed and cleaned to fit the service's pattern."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", prefix).strip("-") or "agentrft"
    slug = slug[: 63 - len(stamp) - 1].rstrip("-")
    return validate_job_name(f"{slug}-{stamp}")


# -- hyperparameters --------------------------------------------------------------------


def hp_value(value: Any) -> str:
    """The service takes every hyperparameter as a string; lists as JSON ("[1, 2, 4]")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return str(value)


def hyperparameter_values(config: SageMakerRunConfig) -> dict[str, Any]:
    """Every service hyperparameter the config holds, by its service name: the shared
    top-level ones, then the `sagemaker` section's (rollout_max_concurrency, ...)."""
    from agentrft.backends.sagemaker.settings import SECTION_HYPERPARAMETERS
    from agentrft.config import SHARED_HYPERPARAMETERS

    values = {n: getattr(config, n) for n in SHARED_HYPERPARAMETERS}
    values.update({n: getattr(config.sagemaker, n) for n in SECTION_HYPERPARAMETERS})
    return values


def user_set_hyperparameters(config: SageMakerRunConfig) -> set[str]:
    """The service hyperparameters the config file, `--set` or a flag set."""
    from agentrft.backends.sagemaker.settings import SECTION_HYPERPARAMETERS

    return set(config.model_fields_set) | (
        set(config.sagemaker.model_fields_set) & set(SECTION_HYPERPARAMETERS)
    )


def training_hyperparameters(
    config: SageMakerRunConfig, *, only_set: bool = True
) -> dict[str, str]:
    """The service hyperparameters as strings, plus `sagemaker.extra_hyperparameters`.

    `only_set` (the default: `sagemaker.send_hyperparameters=set`) sends just the keys the
    config file, `--set` or a flag set, leaving the rest to the base model's recipe, whose
    defaults depend on the model (as the SageMaker SDK does); False sends all 23.
    """
    user_set = user_set_hyperparameters(config)
    values = hyperparameter_values(config)
    hps = {n: hp_value(v) for n, v in values.items() if not only_set or n in user_set}
    hps.update({k: hp_value(v) for k, v in config.sagemaker.extra_hyperparameters.items()})
    return hps


def evaluation_hyperparameters(
    config: SageMakerRunConfig,
    *,
    temperature: float | None,
    group_size: int | None,
    only_set: bool = True,
) -> dict[str, str]:
    """Hyperparameters of one AgentRFTEvaluation job, under the names the service accepts.

    The run's `temperature` always goes (None: the service's default), and so do the three
    keys AWS's own SDK always sends for an evaluation (`eval_group_size`, `pass_k_values` cut
    to the k values <= the group size, `success_threshold`): the service's recipe defaults
    pass@k to k up to 32 while its default group size is not published, so leaving them out
    would leave what pass@k means to the service. With `only_set`, the rest only when you
    set them.
    """
    user_set = user_set_hyperparameters(config)
    pass_k = list(config.pass_k_values)
    if group_size is not None:
        pass_k = [k for k in pass_k if k <= group_size] or [1]
    values: dict[str, Any] = {
        "eval_group_size": group_size,
        "temperature": temperature,
        "sampling_top_p": config.sampling_top_p,
        "sampling_max_tokens": config.sampling_max_tokens,
        "pass_k_values": pass_k,
        "success_threshold": config.success_threshold,
        "rollout_timeout": config.sagemaker.rollout_timeout,
        "rollout_max_concurrency": config.sagemaker.rollout_max_concurrency,
        "rollout_max_retries": config.sagemaker.rollout_max_retries,
    }
    assert set(values) == set(facts.EVALUATION_HYPERPARAMETERS)
    chosen = {
        "eval_group_size": True,
        "temperature": True,
        "pass_k_values": True,
        "success_threshold": True,
    }
    return {
        k: hp_value(v)
        for k, v in values.items()
        if v is not None and (not only_set or chosen.get(k, k in user_set))
    }


# -- documents --------------------------------------------------------------------------


def base_model_arn_from_parts(region: str, model: str, version: str) -> str:
    """The public hub content ARN (what DescribeHubContent returns as HubContentArn)."""
    return f"arn:aws:sagemaker:{region}:aws:hub-content/{facts.PUBLIC_HUB}/Model/{model}/{version}"


def agent_config(runtime_arn: str) -> dict[str, Any]:
    if ":lambda:" in runtime_arn:
        return {"CustomAgentLambdaConfig": {"LambdaArn": runtime_arn}}
    return {
        "BedrockAgentCoreConfig": {
            "AgentRuntimeArn": runtime_arn,
            "Qualifier": facts.AGENTCORE_QUALIFIER,
        }
    }


def channel(name: str, s3_uri: str) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": s3_uri}},
    }


def mlflow_config(arn: str, experiment: str | None, run: str | None) -> dict[str, str]:
    cfg = {"MlflowResourceArn": arn}
    if experiment:
        cfg["MlflowExperimentName"] = experiment
    if run:
        cfg["MlflowRunName"] = run
    return cfg


@dataclass
class TrainingSpec:
    """Everything a training JobConfigDocument needs, resolved."""

    runtime_arn: str
    train_uri: str
    output_path: str
    base_model_arn: str
    output_group_arn: str
    checkpoint_group_arn: str
    hyperparameters: dict[str, str]
    validation_uri: str | None = None
    input_model_package_arn: str | None = None
    mlflow_arn: str | None = None
    mlflow_experiment: str | None = None
    mlflow_run: str | None = None
    kms_key_arn: str | None = None
    security_group_ids: list[str] = field(default_factory=list)
    subnets: list[str] = field(default_factory=list)


def training_document(spec: TrainingSpec) -> dict[str, Any]:
    """The AgentRFT JobConfigDocument, as the SDK builds it (contract, [sdk])."""
    inputs = [channel("train", spec.train_uri)]
    if spec.validation_uri:
        inputs.append(channel("validation", spec.validation_uri))
    output: dict[str, Any] = {"S3OutputPath": spec.output_path}
    if spec.kms_key_arn:
        output["KmsKeyArn"] = spec.kms_key_arn
    packages: dict[str, Any] = {
        "OutputModelPackageGroupArn": spec.output_group_arn,
        "IntermediateCheckpointModelPackageGroupArn": spec.checkpoint_group_arn,
    }
    if spec.input_model_package_arn:
        packages["InputModelPackageArn"] = spec.input_model_package_arn
    training: dict[str, Any] = {"BaseModelArn": spec.base_model_arn}
    if spec.mlflow_arn:
        training["MlflowConfig"] = mlflow_config(
            spec.mlflow_arn, spec.mlflow_experiment, spec.mlflow_run
        )
    training["AcceptEula"] = True
    if spec.hyperparameters:  # none set: the recipe decides all (the SDK omits it too)
        training["HyperParameters"] = dict(spec.hyperparameters)
    doc: dict[str, Any] = {
        "AgentConfig": agent_config(spec.runtime_arn),
        "InputDataConfig": inputs,
        "OutputDataConfig": output,
        "ModelPackageConfig": packages,
        "TrainingConfig": training,
    }
    if spec.security_group_ids or spec.subnets:
        doc["VpcConfig"] = {"SecurityGroupIds": spec.security_group_ids, "Subnets": spec.subnets}
    return doc


@dataclass
class EvaluationSpec:
    runtime_arn: str
    dataset_uri: str
    output_path: str
    base_model_arn: str
    hyperparameters: dict[str, str]
    model_package_arn: str | None = None
    mlflow_arn: str | None = None
    mlflow_experiment: str | None = None
    mlflow_run: str | None = None
    kms_key_arn: str | None = None
    max_runtime_s: int = facts.DEFAULT_EVALUATION_MAX_RUNTIME_S


def evaluation_document(spec: EvaluationSpec) -> dict[str, Any]:
    """The AgentRFTEvaluation JobConfigDocument (contract, [sample])."""
    output: dict[str, Any] = {"S3OutputPath": spec.output_path}
    if spec.kms_key_arn:
        output["KmsKeyArn"] = spec.kms_key_arn
    if spec.mlflow_arn:
        output["MlflowConfig"] = mlflow_config(
            spec.mlflow_arn, spec.mlflow_experiment, spec.mlflow_run
        )
    doc: dict[str, Any] = {
        "AgentConfig": agent_config(spec.runtime_arn),
        "InputDataConfig": [channel("evaluation", spec.dataset_uri)],
        "OutputDataConfig": output,
        "EvaluationConfig": {"BaseModelArn": spec.base_model_arn, "AcceptEula": True},
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.max_runtime_s},
    }
    if spec.hyperparameters:
        doc["EvaluationConfig"]["HyperParameters"] = dict(spec.hyperparameters)
    if spec.model_package_arn:
        doc["ModelPackageConfig"] = {"InputModelPackageArn": spec.model_package_arn}
    return doc


def create_job_request(
    *,
    name: str,
    role_arn: str,
    category: str,
    document: dict[str, Any],
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """CreateJob's parameters; the document goes as a JSON string, not an object [model]."""
    text = json.dumps(document, separators=(",", ":"))
    if len(text) > 262_144:
        raise SageMakerError(f"JobConfigDocument is {len(text)} chars; the limit is 262144")
    request: dict[str, Any] = {
        "JobName": validate_job_name(name),
        "RoleArn": role_arn,
        "JobCategory": category,
        "JobConfigSchemaVersion": facts.JOB_CONFIG_SCHEMA_VERSION,
        "JobConfigDocument": text,
    }
    if tags:
        request["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    return request


def validate_request(operation: str, params: dict[str, Any], service: str = "sagemaker") -> None:
    """Check `params` against botocore's model of `operation` (the Stubber's check)."""
    import botocore.session
    from botocore.exceptions import ParamValidationError
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model(service)
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    if report.has_errors():
        raise SageMakerError(
            f"{operation} request does not validate against botocore's model:\n"
            f"{ParamValidationError(report=report.generate_report())}"
        )


def printable_request(request: dict[str, Any]) -> str:
    """The request as JSON with the document string expanded below it, for --dry-run."""
    head = json.dumps(request, indent=2)
    doc = json.dumps(json.loads(request["JobConfigDocument"]), indent=2)
    return f"{head}\n\nJobConfigDocument (decoded):\n{doc}"


# -- reading DescribeJob ----------------------------------------------------------------


@dataclass
class EvalMetrics:
    pass_at_k: dict[int, float] = field(default_factory=dict)
    mean_reward: float | None = None
    success_rate: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobView:
    """DescribeJob's answer with the ServiceOutput pulled out of the document."""

    name: str
    arn: str
    category: str
    status: str
    secondary_status: str
    creation_time: Any = None
    end_time: Any = None
    failure_reason: str | None = None
    document: dict[str, Any] = field(default_factory=dict)
    transitions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def service_output(self) -> dict[str, Any]:
        out = self.document.get(facts.SERVICE_OUTPUT)
        return out if isinstance(out, dict) else {}

    @property
    def done(self) -> bool:
        return self.status in facts.TERMINAL_STATUSES

    @property
    def output_model_package_arn(self) -> str | None:
        return self.service_output.get(facts.OUTPUT_MODEL_PACKAGE_ARN)

    @property
    def billed_tokens(self) -> dict[str, int]:
        """{'prefill', 'sampling', 'training'} -> count ({} before the service reports)."""
        usage = self.service_output.get(facts.BILLABLE_TOKEN_USAGE) or {}
        return {ours: int(usage[k]) for k, ours in facts.BILLABLE_TOKEN_KEYS.items() if k in usage}

    @property
    def progress(self) -> tuple[int, int] | None:
        """(current step, max steps) from ProgressInfo, in either of its two forms [sdk]."""
        info = self.service_output.get(facts.PROGRESS_INFO) or {}
        current = info.get("CurrentStep")
        if info.get("MaxSteps"):
            return int(current or 0), int(info["MaxSteps"])
        if info.get("MaxEpoch") and info.get("StepsPerEpoch"):
            total = int(info["MaxEpoch"]) * int(info["StepsPerEpoch"])
            epoch = int(info.get("CurrentEpoch") or 1)
            done = (epoch - 1) * int(info["StepsPerEpoch"]) + int(current or 0)
            return done, total
        return None

    @property
    def rollouts(self) -> tuple[int, int] | None:
        info = self.service_output.get(facts.ROLLOUT_INFO) or {}
        if info.get("Total") and info.get("Completed") is not None:
            return int(info["Completed"]), int(info["Total"])
        return None

    @property
    def mlflow(self) -> dict[str, Any]:
        return self.service_output.get(facts.MLFLOW_DETAILS) or {}

    def evaluation_metrics(self) -> EvalMetrics:
        return read_evaluation_metrics(self.service_output.get(facts.EVALUATION_METRICS) or {})


def read_job(response: dict[str, Any]) -> JobView:
    """A DescribeJob response -> JobView (an unparsable document reads as empty)."""
    try:
        doc = json.loads(response.get("JobConfigDocument") or "{}")
    except ValueError:
        doc = {}
    return JobView(
        name=response["JobName"],
        arn=response.get("JobArn", ""),
        category=response.get("JobCategory", ""),
        status=response.get("JobStatus", ""),
        secondary_status=response.get("SecondaryStatus", ""),
        creation_time=response.get("CreationTime"),
        end_time=response.get("EndTime"),
        failure_reason=response.get("FailureReason"),
        document=doc if isinstance(doc, dict) else {},
        transitions=list(response.get("SecondaryStatusTransitions") or []),
    )


def _number(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def read_evaluation_metrics(raw: dict[str, Any]) -> EvalMetrics:
    """Pull pass@k, mean reward and success rate out of ServiceOutput.EvaluationMetrics.

    The shape is known only from the sample [?]: accept flat keys (`pass@1`, `PassAt1`,
    ...) and nested maps (`PassAtK: {"1": 0.8}`), values as numbers or `{Value: x}`.
    """
    flat: dict[str, Any] = {}
    for k, v in raw.items():
        if isinstance(v, dict) and "Value" in v:
            v = v["Value"]
        flat[str(k)] = v
    out = EvalMetrics(raw=raw)
    for container in facts.PASS_AT_K_CONTAINERS:
        nested = raw.get(container)
        if isinstance(nested, dict):
            for k, v in nested.items():
                num = _number(v["Value"] if isinstance(v, dict) and "Value" in v else v)
                if str(k).isdigit() and num is not None:
                    out.pass_at_k[int(k)] = num
    for key, v in flat.items():
        for spelling in facts.PASS_AT_K_SPELLINGS:
            prefix = spelling.split("{k}")[0]
            if key.startswith(prefix) and key[len(prefix) :].isdigit():
                num = _number(v)
                if num is not None:
                    out.pass_at_k.setdefault(int(key[len(prefix) :]), num)
    for spelling in facts.MEAN_REWARD_SPELLINGS:
        if spelling in flat and _number(flat[spelling]) is not None:
            out.mean_reward = _number(flat[spelling])
            break
    for spelling in facts.SUCCESS_RATE_SPELLINGS:
        if spelling in flat and _number(flat[spelling]) is not None:
            out.success_rate = _number(flat[spelling])
            break
    return out
