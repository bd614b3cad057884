"""AgentRFTEvaluation jobs: one per `--runs` entry, run one after another.

The default quota allows one evaluation job at a time per account, so runs (a temperature
sweep, base against trained) are queued: each is submitted after the previous one ended,
and the console says so. Evaluate at the temperature you serve at: validation inside a
training job is scored at temperature 0 and cannot be changed. Like training, a job gets
only the hyperparameters you set, plus the run's temperature and the three AWS's own SDK
always sends (eval_group_size, pass_k_values, success_threshold); `--report FILE` writes
what each run scored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentrft.backend import EvalResult
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.cost import PriceTable, format_tokens, job_cost
from agentrft.backends.sagemaker.jobs.job_document import (
    EvalMetrics,
    EvaluationSpec,
    JobView,
    create_job_request,
    evaluation_document,
    evaluation_hyperparameters,
    make_job_name,
    printable_request,
    validate_request,
)
from agentrft.backends.sagemaker.jobs.lifecycle import create_job, watch_job

if TYPE_CHECKING:
    from rich.console import Console

    from agentrft.backends.sagemaker.jobs.aws import Aws
    from agentrft.backends.sagemaker.settings import SageMakerRunConfig

RUN_LABELS = ("base", "trained")


@dataclass(frozen=True)
class EvalRun:
    """`base:1.0` = the base model at temperature 1.0; `trained:0.7` = the model package.

    `temperature` None: the job gets none and the service uses its own default.
    """

    label: str
    temperature: float | None

    @property
    def trained(self) -> bool:
        return self.label == "trained"

    @property
    def shown(self) -> str:
        t = "service default" if self.temperature is None else f"{self.temperature:g}"
        return f"{self.label} at temperature {t}"


def parse_runs(
    items: list[str] | list[tuple[str, float]] | None, default_temperature: float | None
) -> list[EvalRun]:
    """`["base:1.0", "trained"]` or `[("base", 1.0)]` -> runs; a bare label uses
    `default_temperature` (the config's, when you set one; else None)."""
    runs = []
    for item in items or ["base", "trained"]:
        if isinstance(item, (tuple, list)):
            label, temp, sep = str(item[0]), str(item[1]), ":"
        else:
            label, sep, temp = item.partition(":")
        label = label.strip()
        shown = f"{label}{sep}{temp}"
        if label not in RUN_LABELS:
            raise SageMakerError(
                f"--runs entry {shown!r}: the model must be one of {', '.join(RUN_LABELS)} "
                "(base = the hub model, trained = --model-package-arn), e.g. base:1.0"
            )
        try:
            t = float(temp) if sep else default_temperature
        except ValueError:
            raise SageMakerError(
                f"--runs entry {shown!r}: temperature {temp!r} is not a number"
            ) from None
        if t is not None and not 0 <= t <= 2:
            raise SageMakerError(f"--runs entry {shown!r}: temperature must be in [0, 2]")
        runs.append(EvalRun(label, t))
    return runs


@dataclass
class EvalOutcome:
    run: EvalRun
    job_name: str
    request: dict[str, Any]
    job_arn: str | None = None
    view: JobView | None = None

    @property
    def metrics(self) -> EvalMetrics:
        return self.view.evaluation_metrics() if self.view else EvalMetrics()

    @property
    def status(self) -> str:
        if self.view:
            return self.view.status
        return "submitted" if self.job_arn else "dry run"

    def to_dict(self, prices: PriceTable | None = None) -> dict[str, Any]:
        """The run as the report file shows it (metrics from the job's ServiceOutput)."""
        m = self.metrics
        tokens = self.view.billed_tokens if self.view else {}
        doc = json.loads(self.request["JobConfigDocument"])
        out: dict[str, Any] = {
            "run": self.run.label,
            "temperature": self.run.temperature,
            "job_name": self.job_name,
            "job_arn": self.job_arn,
            "status": self.status,
            "failure_reason": self.view.failure_reason if self.view else None,
            "pass_at_k": {str(k): v for k, v in sorted(m.pass_at_k.items())},
            "mean_reward": m.mean_reward,
            "success_rate": m.success_rate,
            "billed_tokens": tokens,
            "hyperparameters": doc.get("EvaluationConfig", {}).get("HyperParameters", {}),
            "evaluation_metrics": m.raw,
        }
        if tokens and prices is not None:
            out["cost"] = round(job_cost(tokens, prices), 4)
            out["currency"] = prices.currency
        return out


@dataclass
class EvaluationResult(EvalResult):
    """What `SageMakerBackend.evaluate` returns: one outcome per run. Its `reports` are
    empty (the jobs' metrics are not episode-level EvalReports); `eval --report FILE`
    writes `to_report`, each run's pass@k, reward, tokens and cost."""

    outcomes: list[EvalOutcome]
    dry_run: bool = False
    prices: PriceTable | None = None

    @property
    def jobs(self) -> str:
        return ", ".join(o.job_name for o in self.outcomes)

    def to_report(self, context: dict[str, Any]) -> dict[str, Any]:
        """`{**context, "backend": "sagemaker", "dry_run", "runs": [...]}`."""
        return {
            **context,
            "backend": "sagemaker",
            "dry_run": self.dry_run,
            "runs": [o.to_dict(self.prices) for o in self.outcomes],
        }


@dataclass
class EvaluationPlan:
    """What every run shares, resolved by the backend."""

    role_arn: str
    runtime_arn: str
    dataset_uri: str
    output_path: str
    base_model_arn: str
    #: Episodes per row (eval_group_size: `sagemaker.eval_group_size`, else
    #: `eval.samples_per_row`); always sent, as AWS's SDK does.
    group_size: int
    task_name: str
    model_package_arn: str | None = None
    mlflow_arn: str | None = None
    mlflow_experiment: str | None = None
    kms_key_arn: str | None = None
    max_runtime_s: int = facts.DEFAULT_EVALUATION_MAX_RUNTIME_S
    tags: dict[str, str] = field(default_factory=dict)
    job_prefix: str | None = None
    #: sagemaker.send_hyperparameters=all: send agentrft's defaults too.
    send_all: bool = False


def _temp_tag(t: float | None) -> str:
    return "tdefault" if t is None else "t" + re.sub(r"[^0-9]", "p", f"{t:g}")


def build_request(
    plan: EvaluationPlan, config: SageMakerRunConfig, run: EvalRun, name: str
) -> dict[str, Any]:
    if run.trained and not plan.model_package_arn:
        raise SageMakerError(
            "--runs trained:... needs the trained model: pass --model-package-arn (the ARN "
            "`agentrft train --wait` or `agentrft jobs describe` printed)"
        )
    spec = EvaluationSpec(
        runtime_arn=plan.runtime_arn,
        dataset_uri=plan.dataset_uri,
        output_path=plan.output_path,
        base_model_arn=plan.base_model_arn,
        hyperparameters=evaluation_hyperparameters(
            config,
            temperature=run.temperature,
            group_size=plan.group_size,
            only_set=not plan.send_all,
        ),
        model_package_arn=plan.model_package_arn if run.trained else None,
        mlflow_arn=plan.mlflow_arn,
        mlflow_experiment=plan.mlflow_experiment,
        mlflow_run=name,
        kms_key_arn=plan.kms_key_arn,
        max_runtime_s=plan.max_runtime_s,
    )
    request = create_job_request(
        name=name,
        role_arn=plan.role_arn,
        category=facts.EVALUATION_CATEGORY,
        document=evaluation_document(spec),
        tags=plan.tags,
    )
    validate_request("CreateJob", request)
    return request


def run_evaluations(
    aws: Aws | None,
    config: SageMakerRunConfig,
    plan: EvaluationPlan,
    runs: list[EvalRun],
    *,
    console: Console,
    dry_run: bool = False,
    wait: bool = True,
    poll_s: float = 30.0,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
    schema: dict[str, Any] | None = None,
) -> list[EvalOutcome]:
    """Submit the runs one after another (waiting for each); returns one outcome per run.

    `schema` (the service's document schema, when it could be read) is checked for every
    run before the first job starts.
    """
    if not wait and not dry_run and len(runs) > 1:
        raise SageMakerError(
            f"{len(runs)} runs need --wait: the default quota runs "
            f"{facts.EVALUATION_CONCURRENCY_QUOTA} evaluation job at a time, so each run starts "
            "after the previous one ends (or pass a single --runs entry)"
        )
    prefix = plan.job_prefix or f"agentrft-{plan.task_name}-eval"
    # Build (and validate) every request first: a bad run fails before any job starts.
    outcomes = []
    for run in runs:
        name = make_job_name(f"{prefix}-{run.label}-{_temp_tag(run.temperature)}")
        outcomes.append(EvalOutcome(run, name, build_request(plan, config, run, name)))
    if schema is not None:
        from agentrft.backends.sagemaker.jobs.service_schema import schema_errors

        for o in outcomes:
            problems = schema_errors(schema, json.loads(o.request["JobConfigDocument"]))
            if problems:
                raise SageMakerError(
                    f"the {facts.EVALUATION_CATEGORY} document of run {o.run.label} does not "
                    "match the service's schema:\n- " + "\n- ".join(problems)
                )
    if len(outcomes) > 1:
        console.print(
            f"the evaluation quota runs {facts.EVALUATION_CONCURRENCY_QUOTA} job at a time: "
            f"{len(outcomes)} runs queued, each submitted when the previous one has ended ("
            + ", ".join(o.run.shown for o in outcomes)
            + ")"
        )
    if dry_run:
        for o in outcomes:
            console.print(f"[bold]CreateJob ({o.run.shown}; dry run, nothing submitted)[/]")
            console.out(printable_request(o.request), highlight=False)
        return outcomes
    assert aws is not None
    extra: dict[str, Any] = {}
    if sleep is not None:
        extra["sleep"] = sleep
    if clock is not None:
        extra["clock"] = clock
    for i, o in enumerate(outcomes):
        if i:
            console.print(
                f"run {i + 1}/{len(outcomes)} ({o.run.shown}) was queued behind "
                f"{outcomes[i - 1].job_name}: submitting it now"
            )
        o.job_arn = create_job(aws, o.request)
        console.print(f"started {o.job_name} ({o.run.shown})")
        if wait:
            o.view = watch_job(
                aws, o.job_name, facts.EVALUATION_CATEGORY, console=console, poll_s=poll_s, **extra
            )
            if o.view.status != "Completed":
                console.print(
                    f"[red]{o.job_name} {o.view.status}[/]: {o.view.failure_reason or ''}"
                )
    return outcomes


def render_table(outcomes: list[EvalOutcome], console: Console, prices: PriceTable) -> None:
    """pass@k, mean reward and billed tokens per run (from each job's ServiceOutput)."""
    from rich.table import Table

    ks = sorted({k for o in outcomes for k in o.metrics.pass_at_k})
    table = Table(title="SageMaker evaluation")
    table.add_column("run")
    table.add_column("temperature")
    table.add_column("job", overflow="fold")
    table.add_column("status")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    table.add_column("mean reward", justify="right")
    table.add_column("billed tokens (prefill/sampled)", justify="right")
    table.add_column(f"cost ({prices.currency})", justify="right")
    for o in outcomes:
        m = o.metrics
        tokens = o.view.billed_tokens if o.view else {}
        table.add_row(
            o.run.label,
            "default" if o.run.temperature is None else f"{o.run.temperature:g}",
            o.job_name,
            o.status,
            *[f"{m.pass_at_k[k]:.3f}" if k in m.pass_at_k else "–" for k in ks],
            f"{m.mean_reward:.3f}" if m.mean_reward is not None else "–",
            " / ".join(format_tokens(tokens.get(k, 0)) for k in ("prefill", "sampling"))
            if tokens
            else "–",
            f"{job_cost(tokens, prices):,.2f}" if tokens else "–",
        )
    console.print(table)
    if any(o.view and not o.metrics.pass_at_k and o.view.status == "Completed" for o in outcomes):
        console.print(
            "[yellow]A completed job reported no EvaluationMetrics we could read; the raw "
            "ServiceOutput is in `agentrft jobs describe NAME --json`.[/]"
        )
