"""`SageMakerBackend`: training and evaluation as SageMaker AI jobs (AgentRFT categories).

The task runs inside an AgentCore runtime (`agentrft deploy`); this class turns the shared
config into CreateJob requests, checks the inputs (offline) and the account (preflight),
submits, and optionally follows the job. A dry run makes no AWS call at all (no
credentials, no network); `lookups=True` adds the read-only ones (the hub model, the
recipe's specs, the model package groups, the document schema). Nothing here imports
boto3 at module import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentrft.backend import (
    Backend,
    CliOption,
    Command,
    EvalOptions,
    TrainOptions,
    TrainResult,
    as_options,
)
from agentrft.backends.sagemaker.cli.options import CLI_OPTIONS, sagemaker_cli_values
from agentrft.backends.sagemaker.jobs import recipe
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import (
    Aws,
    SageMakerError,
    job_region,
    make_aws,
    parse_arn,
    role_account,
)
from agentrft.backends.sagemaker.jobs.eula import Eula, check_eula
from agentrft.backends.sagemaker.jobs.job_document import (
    JobView,
    TrainingSpec,
    create_job_request,
    make_job_name,
    printable_request,
    training_document,
    training_hyperparameters,
    user_set_hyperparameters,
    validate_job_name,
    validate_request,
)
from agentrft.backends.sagemaker.jobs.static_checks import missing_settings
from agentrft.backends.sagemaker.jobs.task_mix import print_task_mix
from agentrft.backends.sagemaker.settings import (
    SageMakerConfig,
    SageMakerEvalOptions,
    SageMakerRunConfig,
    SageMakerTrainOptions,
    as_sagemaker,
)

if TYPE_CHECKING:
    from rich.console import Console

    from agentrft.backends.sagemaker.jobs.evaluations import EvaluationResult
    from agentrft.backends.sagemaker.jobs.preflight import Purpose
    from agentrft.config import Config
    from agentrft.task import Task


@dataclass
class TrainSubmission(TrainResult):
    """What `train` did: the request, and the job when one was created."""

    job_name: str
    request: dict[str, Any]
    dry_run: bool
    job_arn: str | None = None
    view: JobView | None = None
    notes: list[str] | None = None
    #: The hyperparameters the job gets, and where each value comes from (the plan).
    plan: list[Any] | None = None


def _console(console: Console | None) -> Console:
    if console is not None:
        return console
    from rich.console import Console

    return Console(highlight=False)


class SageMakerBackend(Backend):
    """Managed multi-turn RL on Amazon SageMaker AI (job categories AgentRFT/AgentRFTEvaluation)."""

    name: ClassVar[str] = "sagemaker"
    extra: ClassVar[str] = "sagemaker"
    requires: ClassVar[tuple[str, ...]] = ("boto3", "botocore")
    config_section: ClassVar[type[SageMakerConfig]] = SageMakerConfig
    train_options: ClassVar[type[SageMakerTrainOptions]] = SageMakerTrainOptions
    eval_options: ClassVar[type[SageMakerEvalOptions]] = SageMakerEvalOptions
    #: `--model` names the hub model (the sample launcher's `--model`), as `--base-model` does.
    model_key: ClassVar[str] = "sagemaker.base_model"
    cli_flags: ClassVar[tuple[CliOption, ...]] = CLI_OPTIONS

    @classmethod
    def cli_values(
        cls, command: Command, values: dict[str, Any], extra_args: list[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        values, extra_args = sagemaker_cli_values(values, extra_args)
        return super().cli_values(command, values, extra_args)

    def __init__(
        self,
        *,
        aws: Aws | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`aws`: the clients every call uses (default: made from the config's region and
        profile); `sleep` and `clock`: what `--wait` polls with (tests pass fakes)."""
        self.aws = aws
        self.sleep = sleep
        self.clock = clock
        self._offline_account: str | None = None
        self._model = facts.DEFAULT_BASE_MODEL

    # -- shared plumbing -----------------------------------------------------------------

    def _aws(self, config: SageMakerRunConfig, aws: Aws | None) -> Aws:
        if aws is not None:
            return aws
        region = config.sagemaker.region
        if not region and config.sagemaker.runtime_arn:
            # The runtime fixes the region: the job and the bucket must share it.
            region = parse_arn(config.sagemaker.runtime_arn, what="runtime ARN").region
        return make_aws(config.sagemaker, region)

    def _base_model(
        self, aws: Aws, config: SageMakerRunConfig, offline: bool, notes: list[str]
    ) -> tuple[str, dict[str, Any] | None, Eula]:
        """The base model's ARN, its recipe's specs (looked up only) and its license."""
        from agentrft.backends.sagemaker.jobs.hub import base_model_for

        return base_model_for(aws, config.sagemaker, offline, notes)

    def _group(
        self,
        aws: Aws,
        configured: str | None,
        default: str,
        *,
        create: bool,
        offline: bool,
        notes: list[str],
    ) -> str:
        from agentrft.backends.sagemaker.jobs.hub import ensure_model_package_group

        name = configured or default
        if offline:
            if name.startswith("arn:"):
                return name
            account = self._offline_account or "<account>"
            notes.append(
                f"offline: model package group {name} not looked up (account from the role ARN)"
                if self._offline_account
                else f"offline: model package group {name} shown with a placeholder account"
            )
            return f"arn:aws:sagemaker:{aws.region}:{account}:model-package-group/{name}"
        resolved = ensure_model_package_group(
            aws,
            name,
            create=create,
            description="agentrft",
            restricted=recipe.is_nova(self._model),
        )
        if resolved.action != "exists":
            notes.append(f"model package group {name}: {resolved.action}")
        return resolved.arn

    def _preflight(
        self,
        config: SageMakerRunConfig,
        task: Task[Any],
        aws: Aws,
        purpose: Purpose,
        console: Console,
    ) -> None:
        from agentrft.backends.sagemaker.jobs.preflight import run_preflight

        report = run_preflight(config, purpose=purpose, task=task, aws=aws)
        report.render(console)
        report.raise_for_failures()

    def doctor(
        self,
        task: Task[Any] | None,
        config: Config,
        *,
        purpose: Purpose = "doctor",
        console: Console | None = None,
        aws: Aws | None = None,
        **options: Any,
    ) -> Any:
        """Run and print the preflight (what `agentrft doctor --backend sagemaker` shows);
        returns the `PreflightReport` (`.ok` is False when a check failed)."""
        return self._doctor(task, as_sagemaker(config), purpose, console, aws or self.aws)

    def _doctor(
        self,
        task: Task[Any] | None,
        config: SageMakerRunConfig,
        purpose: Purpose,
        console: Console | None,
        aws: Aws | None,
    ) -> Any:
        from agentrft.backends.sagemaker.jobs.preflight import run_preflight

        if aws is None and (config.sagemaker.region or config.sagemaker.runtime_arn):
            try:
                aws = self._aws(config, None)
            except SageMakerError:
                aws = None  # the report's credentials row says what is missing
        report = run_preflight(config, purpose=purpose, task=task, aws=aws)
        report.render(_console(console))
        return report

    # -- training ------------------------------------------------------------------------

    def train(
        self, task: Task[Any], config: Config, options: TrainOptions | None = None
    ) -> TrainSubmission:
        """Submit an AgentRFT job for `task` (CreateJob).

        `dry_run` prints the plan and the request and calls nothing remote; with `lookups`
        it also makes the read-only lookups a submission makes (DescribeHubContent, the
        recipe's specs on S3, DescribeModelPackageGroup, DescribeJobSchemaVersion).
        """
        return self._train(task, as_sagemaker(config), options)

    def _train(
        self, task: Task[Any], config: SageMakerRunConfig, options: TrainOptions | None
    ) -> TrainSubmission:
        o = as_options(SageMakerTrainOptions, options)
        dry_run, lookups, wait, reward_fn, console = (
            o.dry_run,
            o.lookups,
            o.wait,
            o.reward_fn,
            o.console,
        )
        aws, skip_preflight, sleep, clock = self.aws, o.skip_preflight, self.sleep, self.clock
        from agentrft.backends.sagemaker.jobs.static_checks import raise_for_inputs

        self.check_available()
        out = _console(console)
        sm = config.sagemaker
        needed = {"runtime_arn": "--runtime-arn", "role_arn": "--role-arn",
                  "train_s3_uri": "--train-uri", "output_s3_path": "--output-path"}  # fmt: skip
        if facts.MLFLOW_REQUIRED:
            needed["mlflow_resource_arn"] = "--mlflow-arn"
        missing = missing_settings(config.sagemaker, needed)
        if missing:
            raise SageMakerError(
                "sagemaker training needs " + ", ".join(missing) + "; pass the flags or set "
                "them in the config's sagemaker section (docs/sagemaker.md walks through "
                "creating each)"
            )
        if reward_fn is not None:
            out.print(
                "[yellow]note: on sagemaker the reward is computed by the deployed runtime; "
                "deploy it with `agentrft deploy --reward NAME` to swap the reward.[/]"
            )
        region = job_region(config.sagemaker)
        raise_for_inputs(config, region, "train")
        send_all = sm.send_hyperparameters == "all"
        hps = training_hyperparameters(config, only_set=not send_all)
        errors, warnings = recipe.check(hps, sm.base_model)
        if errors:
            raise SageMakerError(
                f"hyperparameters the {sm.base_model} recipe refuses (nothing was sent):\n- "
                + "\n- ".join(errors)
            )
        notes: list[str] = list(warnings)
        if note := recipe.region_note(sm.base_model, region):
            notes.append(note)

        remote = not dry_run or lookups
        aws = aws or make_aws(sm, region)
        self._offline_account = None if remote else role_account(config.sagemaker)
        self._model = sm.base_model
        if not dry_run and not skip_preflight and sm.preflight:
            self._preflight(config, task, aws, "train", out)
        base_arn, specs, eula = self._base_model(aws, config, not remote, notes)
        for line in check_eula(eula, accept=sm.accept_eula, dry_run=dry_run):
            out.print(line, highlight=False)
        if specs:
            from agentrft.backends.sagemaker.jobs.hub import check_against_specs

            spec_errors, spec_warnings = check_against_specs(hps, specs)
            if spec_errors:
                raise SageMakerError(
                    f"hyperparameters outside {sm.base_model}'s recipe:\n- "
                    + "\n- ".join(spec_errors)
                )
            notes.extend(spec_warnings)
        from agentrft.backends.sagemaker.jobs.hub import group_name

        output_group = self._group(aws, sm.output_model_package_group, group_name(sm.base_model, facts.OUTPUT_GROUP_SUFFIX),
                                   create=not dry_run, offline=not remote, notes=notes)  # fmt: skip
        checkpoint_group = self._group(aws, sm.checkpoint_model_package_group,
                                       group_name(sm.base_model, facts.CHECKPOINT_GROUP_SUFFIX),
                                       create=not dry_run, offline=not remote, notes=notes)  # fmt: skip
        if output_group == checkpoint_group:
            raise SageMakerError(
                "sagemaker.output_model_package_group and checkpoint_model_package_group must differ"
            )
        job_name = (
            validate_job_name(sm.job_name)
            if sm.job_name
            else make_job_name(f"agentrft-{task.name}")
        )
        spec = TrainingSpec(
            runtime_arn=sm.runtime_arn or "",
            train_uri=sm.train_s3_uri or "",
            validation_uri=sm.validation_s3_uri,
            output_path=sm.output_s3_path or "",
            base_model_arn=base_arn,
            output_group_arn=output_group,
            checkpoint_group_arn=checkpoint_group,
            input_model_package_arn=sm.input_model_package_arn,
            hyperparameters=hps,
            mlflow_arn=sm.mlflow_resource_arn,
            mlflow_experiment=sm.mlflow_experiment_name or f"agentrft-{task.name}",
            mlflow_run=job_name,
            kms_key_arn=sm.kms_key_arn,
            security_group_ids=list(sm.security_group_ids),
            subnets=list(sm.subnets),
        )
        request = create_job_request(
            name=job_name,
            role_arn=sm.role_arn or "",
            category=facts.TRAINING_CATEGORY,
            document=training_document(spec),
            tags={"agentrft:task": task.name, **sm.tags},
        )
        validate_request("CreateJob", request)
        if remote and sm.preflight:
            from agentrft.backends.sagemaker.jobs.service_schema import check_document

            check_document(aws, facts.TRAINING_CATEGORY, training_document(spec), notes)
        rows = recipe.plan(hps, user_set_hyperparameters(config), sm.base_model, send_all=send_all)
        for note in notes:
            out.print(f"[dim]{note}[/]")
        print_task_mix(task, config, out)
        if dry_run:
            from agentrft.backends.sagemaker.jobs.lifecycle import render_plan

            render_plan(rows, sm.base_model, out)
            where = "with read-only lookups" if lookups else "no AWS call made"
            out.print(f"[bold]CreateJob request (dry run, {where}, nothing submitted):[/]")
            out.out(printable_request(request), highlight=False)
            return TrainSubmission(job_name, request, dry_run=True, notes=notes, plan=rows)

        from agentrft.backends.sagemaker.jobs.lifecycle import (
            create_job,
            report_finished,
            watch_job,
        )

        arn = create_job(aws, request)
        out.print(f"created {arn}")
        out.print(
            f"follow it: agentrft jobs describe {job_name}   stop it: agentrft jobs stop {job_name}"
        )
        result = TrainSubmission(
            job_name, request, dry_run=False, job_arn=arn, notes=notes, plan=rows
        )
        if not wait:
            return result
        extra: dict[str, Any] = {}
        if sleep is not None:
            extra["sleep"] = sleep
        if clock is not None:
            extra["clock"] = clock
        view = watch_job(
            aws, job_name, facts.TRAINING_CATEGORY, console=out, poll_s=sm.poll_s, **extra
        )
        result.view = view
        report_finished(view, config, out)
        return result

    # -- evaluation ----------------------------------------------------------------------

    def evaluate(
        self, task: Task[Any], config: Config, options: EvalOptions | None = None
    ) -> EvaluationResult:
        """Run AgentRFTEvaluation jobs, one per run (`base:1.0`, `trained:0.7`), queued one
        after another (the quota runs one at a time).

        Without `runs`, `eval.temperatures` (when you set it) is a sweep over the base model
        and, with a model package, the trained one. `dry_run` calls nothing remote;
        `lookups` adds the read-only hub and schema lookups.
        """
        return self._evaluate(task, as_sagemaker(config), options)

    def _evaluate(
        self, task: Task[Any], config: SageMakerRunConfig, options: EvalOptions | None
    ) -> EvaluationResult:
        o = as_options(SageMakerEvalOptions, options)
        runs, model_package_arn, dry_run, lookups = (
            o.runs,
            o.model_package_arn,
            o.dry_run,
            o.lookups,
        )
        wait, console, skip_preflight = o.wait, o.console, o.skip_preflight
        aws, sleep, clock = self.aws, self.sleep, self.clock
        from agentrft.backends.sagemaker.jobs.cost import load_prices
        from agentrft.backends.sagemaker.jobs.evaluations import (
            EvaluationPlan,
            EvaluationResult,
            parse_runs,
            render_table,
            run_evaluations,
        )
        from agentrft.backends.sagemaker.jobs.static_checks import raise_for_inputs

        self.check_available()
        out = _console(console)
        sm = config.sagemaker
        model_package_arn = model_package_arn or sm.input_model_package_arn
        labels = ["base", "trained"] if model_package_arn else ["base"]
        if not runs and "temperatures" in config.eval.model_fields_set:
            runs = [(label, t) for t in config.eval.temperatures for label in labels]
        temperature = config.temperature if "temperature" in config.model_fields_set else None
        parsed = parse_runs(runs or labels, temperature)
        needed = {"runtime_arn": "--runtime-arn", "role_arn": "--role-arn",
                  "output_s3_path": "--output-path"}  # fmt: skip
        missing = missing_settings(config.sagemaker, needed)
        dataset = sm.evaluation_s3_uri or sm.validation_s3_uri
        if not dataset:
            missing.append("--eval-uri (sagemaker.evaluation_s3_uri or validation_s3_uri)")
        if missing:
            raise SageMakerError(
                "sagemaker evaluation needs " + ", ".join(missing) + "; pass the flags or set "
                "them in the config's sagemaker section"
            )
        assert dataset is not None  # a missing one was refused above
        region = job_region(config.sagemaker)
        raise_for_inputs(config, region, "eval", model_package_arn=model_package_arn)
        remote = not dry_run or lookups
        aws = aws or make_aws(sm, region)
        if not dry_run and not skip_preflight and sm.preflight:
            self._preflight(config, task, aws, "eval", out)
        notes: list[str] = []
        if note := recipe.region_note(sm.base_model, region):
            notes.append(note)
        base_arn, _, eula = self._base_model(aws, config, not remote, notes)
        for line in check_eula(eula, accept=sm.accept_eula, dry_run=dry_run):
            out.print(line, highlight=False)
        for note in notes:
            out.print(f"[dim]{note}[/]")
        send_all = sm.send_hyperparameters == "all"
        plan = EvaluationPlan(
            role_arn=sm.role_arn or "",
            runtime_arn=sm.runtime_arn or "",
            dataset_uri=dataset,
            output_path=sm.output_s3_path or "",
            base_model_arn=base_arn,
            group_size=sm.eval_group_size or config.eval.samples_per_row,
            task_name=task.name,
            model_package_arn=model_package_arn,
            mlflow_arn=sm.mlflow_resource_arn,
            mlflow_experiment=sm.mlflow_experiment_name or f"agentrft-{task.name}-eval",
            kms_key_arn=sm.kms_key_arn,
            max_runtime_s=sm.max_runtime_s or facts.DEFAULT_EVALUATION_MAX_RUNTIME_S,
            tags={"agentrft:task": task.name, **sm.tags},
            send_all=send_all,
        )
        schema = None
        if remote and sm.preflight:
            from agentrft.backends.sagemaker.jobs.service_schema import fetch_schema

            schema_notes: list[str] = []
            schema = fetch_schema(aws, facts.EVALUATION_CATEGORY, schema_notes)
            for note in schema_notes:
                out.print(f"[dim]{note}[/]")
        outcomes = run_evaluations(
            None if dry_run else aws, config, plan, parsed, console=out, dry_run=dry_run,
            wait=wait, poll_s=sm.poll_s, sleep=sleep, clock=clock, schema=schema,
        )  # fmt: skip
        prices = load_prices(sm.price_file, sm.base_model)
        if not dry_run and wait:
            render_table(outcomes, out, prices)
        return EvaluationResult(outcomes, dry_run=dry_run, prices=prices)
