"""The sagemaker backend's own settings and options: the `sagemaker` config section, and the
typed options of `SageMakerBackend.train` and `.evaluate`.

Importing this module is cheap (pydantic only, no boto3): the core reads the section model
from the installed backends when it builds the `Config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from agentrft.backend import EvalOptions, TrainOptions, section_view
from agentrft.config import Config, Section

#: The service hyperparameters in this section (sent under the same names).
SECTION_HYPERPARAMETERS = ("rollout_max_concurrency", "rollout_timeout", "rollout_max_retries")


class SageMakerConfig(Section):
    """Settings only the SageMaker AI backend reads (the `sagemaker` section)."""

    region: str | None = Field(
        None,
        description="AWS region of the jobs. None: the runtime ARN's region (the job, the "
        "runtime and the bucket must share one), else the AWS SDK's own resolution.",
    )
    profile: str | None = Field(
        None, description="AWS shared-config profile (None: the SDK's default chain)."
    )
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
    train_s3_uri: str | None = Field(
        None, description='s3:// JSONL of training rows ({"prompt": ...}); train needs it.'
    )
    validation_s3_uri: str | None = Field(
        None,
        description="s3:// JSONL of validation rows, scored every val_every steps inside the "
        "job (at temperature 0: the service's choice). None: no validation.",
    )
    output_s3_path: str | None = Field(
        None, description="s3:// prefix the jobs write their outputs under; train needs it."
    )
    mlflow_resource_arn: str | None = Field(
        None,
        description="SageMaker MLflow app ARN the job logs to (the service's sample requires "
        "one for training).",
    )
    mlflow_experiment_name: str | None = Field(
        None, description="MLflow experiment (None: agentrft-<task>, agentrft-<task>-eval)."
    )
    base_model: str = Field(
        "openai-reasoning-gpt-oss-20b",
        description="SageMaker public hub model id (the default is the model of the "
        "service's public Wordle sample).",
    )
    base_model_version: str | None = Field(
        None, description="Hub content version (default: latest)."
    )
    accept_eula: bool = Field(
        False,
        description="Accept the base model's end-user license, which every job accepts on "
        "your behalf (AcceptEula: true); the plan names it. Needed once per model and "
        "license (--accept-eula does the same); remembered in "
        "$XDG_CONFIG_HOME/agentrft/accepted-eulas.json.",
    )
    job_name: str | None = Field(None, description="Default: generated from the task and time.")
    output_model_package_group: str | None = Field(
        None,
        description="Model package group (name or ARN) for the trained model. None: "
        "<base_model>-mtrl-mpg, got or created, as the SageMaker SDK does.",
    )
    checkpoint_model_package_group: str | None = Field(
        None,
        description="Model package group for checkpoints (must differ from the output "
        "one). None: <base_model>-mtrl-checkpoint-mpg, as the SDK does.",
    )
    input_model_package_arn: str | None = Field(
        None,
        description="Start training from this model package (a previous job's output) "
        "instead of the hub model; eval's trained runs evaluate it.",
    )
    kms_key_arn: str | None = Field(
        None, description="KMS key for the jobs' S3 outputs (None: the bucket's default)."
    )
    security_group_ids: list[str] = Field(
        default_factory=list, description="VPC security groups of the job (with subnets)."
    )
    subnets: list[str] = Field(
        default_factory=list, description="VPC subnets of the job (empty: no VPC config)."
    )
    max_runtime_s: int | None = Field(
        None,
        gt=0,
        description="Stopping condition of an evaluation job, in seconds. None: 3600 (the "
        "service's sample finished a 128-row evaluation in 4 to 7 minutes).",
    )
    extra_hyperparameters: dict[str, str] = Field(
        default_factory=dict, description="Sent verbatim (names the service knows and we don't)."
    )
    tags: dict[str, str] = Field(
        default_factory=dict, description="Tags on every job (agentrft:task is always set)."
    )
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
    # Service hyperparameters only the managed service reads: the local engine plays every
    # rollout of a step at once (its sampler batches them) and times episodes with
    # `limits.timeout_s`. They are sent under these names, like the shared ones.
    rollout_max_concurrency: int = Field(
        32,
        ge=1,
        description="Rollouts the service runs at once (sent as rollout_max_concurrency; "
        "the recipe's own default is not published). The AgentCore runtime serves them on "
        "its threads.",
    )
    rollout_timeout: int = Field(
        600,
        ge=1,
        description="Seconds the service waits for one rollout (the runtime's answer) "
        "before it counts as failed (sent as rollout_timeout; recipe default not published).",
    )
    rollout_max_retries: int = Field(
        3,
        ge=0,
        description="Times the service retries a failed rollout (sent as "
        "rollout_max_retries; recipe default not published).",
    )


@dataclass(frozen=True, kw_only=True)
class SageMakerTrainOptions(TrainOptions):
    """`SageMakerBackend.train`'s options."""

    #: With dry_run: also make the read-only lookups a submission makes (hub model, recipe
    #: specs, model package groups, document schema); creates nothing.
    lookups: bool = False
    #: Follow the job to the end.
    wait: bool = False
    #: Skip the account checks (sagemaker.preflight=false does the same from the config).
    skip_preflight: bool = False


@dataclass(frozen=True, kw_only=True)
class SageMakerEvalOptions(EvalOptions):
    """`SageMakerBackend.evaluate`'s options."""

    #: NAME:TEMPERATURE runs, e.g. [("base", 1.0), ("trained", 1.0)] (None: from the config).
    runs: list[str] | list[tuple[str, float]] | None = None
    #: The trained model package the "trained" runs evaluate.
    model_package_arn: str | None = None
    lookups: bool = False
    #: Follow each evaluation job to the end (several runs need it: they queue).
    wait: bool = True
    skip_preflight: bool = False


class SageMakerRunConfig(Config):
    """A run's `Config` as the sagemaker backend reads it: the core keys and its own `sagemaker`
    section, typed. The config a run is given is built by `agentrft.config_model` with one
    field per installed backend, so it has this field; `as_sagemaker` checks that and gives the
    typed view (the same object: nothing is copied or re-validated)."""

    sagemaker: SageMakerConfig = Field(default_factory=SageMakerConfig)


def as_sagemaker(config: Config) -> SageMakerRunConfig:
    """`config` with its `sagemaker` section typed (`agentrft.backend.section_view`)."""
    return section_view(config, "sagemaker", SageMakerConfig, SageMakerRunConfig)
