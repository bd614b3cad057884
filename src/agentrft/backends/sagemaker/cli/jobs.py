"""CLI for the managed-jobs side: `jobs list|describe|stop`, `doctor`, `dataset upload`, `cost`.

`register(app)` is called from the plugin's `agentrft_cli` hook. Only typer and the core
CLI helpers are imported here; boto3 and the backend modules load inside the commands, so
`--help` makes no AWS call and stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast, get_args

import typer

from agentrft.backends.sagemaker.cli.options import shared_option
from agentrft.cli.common import finite

F = TypeVar("F", bound=Callable[..., Any])

CONFIG_HELP = "Config file (YAML or TOML); flags override its sagemaker section."
REGION_HELP = "AWS region (default: sagemaker.region, else the AWS SDK's resolution)."


def _handle(fn: F) -> F:
    """Expected failures (SageMakerError is a BackendError): one `error:` line, exit 1."""
    from agentrft.cli.errors import handle_errors

    return handle_errors(fn)


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _load_config(path: Path | None, values: dict[str, Any]) -> Any:
    from agentrft.config_model import load_config

    return load_config(path, values={k: v for k, v in values.items() if v is not None})


def _aws(config: Any) -> Any:
    from agentrft.backends.sagemaker.jobs.aws import make_aws

    return make_aws(config.sagemaker)


def _category(value: str) -> list[str]:
    from agentrft.backends.sagemaker.jobs import service_facts as facts

    table = {
        "training": [facts.TRAINING_CATEGORY],
        "evaluation": [facts.EVALUATION_CATEGORY],
        "all": [facts.TRAINING_CATEGORY, facts.EVALUATION_CATEGORY],
    }
    if value not in table:
        from agentrft.backends.sagemaker.jobs.aws import SageMakerError

        raise SageMakerError(f"--category {value!r}: use training, evaluation or all")
    return table[value]


# -- jobs -------------------------------------------------------------------------------


def jobs_list(
    category: str = typer.Option("all", "--category", help="training, evaluation or all."),
    status: str = typer.Option(None, "--status", help="InProgress, Completed, Failed, ..."),
    name_contains: str = typer.Option(None, "--name-contains", help="Filter by name."),
    limit: int = typer.Option(20, "--limit", min=1, help="Jobs per category."),
    region: str = typer.Option(None, "--region", help=REGION_HELP),
    config: Path = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
) -> None:
    """List SageMaker AI multi-turn RL jobs, newest first."""
    from rich.table import Table

    from agentrft.backends.sagemaker.jobs.lifecycle import list_jobs

    cfg = _load_config(config, {"sagemaker.region": region})
    aws = _aws(cfg)
    table = Table(title=f"SageMaker AI jobs in {aws.region}")
    for col in ("name", "category", "status", "secondary", "created", "ended"):
        table.add_column(col, overflow="fold")
    for cat in _category(category):
        for job in list_jobs(aws, cat, status=status, name_contains=name_contains, limit=limit):
            table.add_row(
                job["JobName"],
                job["JobCategory"],
                job["JobStatus"],
                job.get("JobSecondaryStatus", ""),
                str(job.get("CreationTime", "")),
                str(job.get("EndTime", "") or ""),
            )
    _console().print(table)


# The options every one-job verb takes.
JobName = Annotated[str, typer.Argument(help="Job name or ARN.")]
JobCategory = Annotated[
    str | None, typer.Option("--category", help="training or evaluation (default: try both).")
]
Region = Annotated[str | None, typer.Option("--region", help=REGION_HELP)]
ConfigFile = Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)]


def _job_verb(
    config: Path | None, region: str | None, category: str | None
) -> tuple[Any, Any, Any]:
    """(config, Aws, job category or None) for a verb on one job."""
    cfg = _load_config(config, {"sagemaker.region": region})
    return cfg, _aws(cfg), _category(category)[0] if category else None


def jobs_describe(
    name: JobName,
    category: JobCategory = None,
    as_json: bool = typer.Option(False, "--json", help="Print DescribeJob's document as JSON."),
    prices: Path = typer.Option(None, "--prices", help="Price table file (YAML/JSON)."),
    region: Region = None,
    config: ConfigFile = None,
) -> None:
    """Status, progress, outputs, billed tokens and their cost of one job."""
    from agentrft.backends.sagemaker.jobs.cost import load_prices
    from agentrft.backends.sagemaker.jobs.lifecycle import describe_job, render_job

    cfg, aws, cat = _job_verb(config, region, category)
    view = describe_job(aws, name, cat)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "JobName": view.name,
                    "JobArn": view.arn,
                    "JobCategory": view.category,
                    "JobStatus": view.status,
                    "SecondaryStatus": view.secondary_status,
                    "FailureReason": view.failure_reason,
                    "JobConfigDocument": view.document,
                },
                indent=2,
                default=str,
            )
        )
        return
    price_file = prices or cfg.sagemaker.price_file
    render_job(view, _console(), load_prices(price_file, cfg.sagemaker.base_model))


def jobs_stop(
    name: JobName,
    category: JobCategory = None,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    region: Region = None,
    config: ConfigFile = None,
) -> None:
    """Stop a running job (StopJob). Billing stops with it; finished steps stay billed."""
    from agentrft.backends.sagemaker.jobs.lifecycle import describe_job, stop_job

    _, aws, cat = _job_verb(config, region, category)
    if not yes:
        view = describe_job(aws, name, cat)
        typer.confirm(f"stop {view.category} job {view.name} ({view.status})?", abort=True)
        cat = view.category
    view = stop_job(aws, name, cat)
    _console().print(f"stopping {view.category} job {view.name}")


# -- doctor -----------------------------------------------------------------------------


def doctor(
    backend: str = typer.Option("sagemaker", "--backend", help="Only sagemaker has checks here."),
    task: str = typer.Option(
        None, "--task", "-t", help="Also parse the dataset rows with this task."
    ),
    purpose: str = typer.Option("doctor", "--for", help="doctor, train, eval or deploy."),
    # The flags train and eval take, under the same names (the sample launcher's too).
    runtime_arn: str = shared_option("runtime_arn"),
    role_arn: str = shared_option("role_arn"),
    runtime_role_arn: str = typer.Option(
        None,
        "--runtime-role-arn",
        help="Role the AgentCore runtime runs as (sagemaker.runtime_role_arn).",
    ),
    train_uri: str = shared_option("train_uri"),
    validation_uri: str = shared_option("validation_uri"),
    eval_uri: str = shared_option("eval_uri"),
    output_path: str = shared_option("output_path"),
    mlflow_arn: str = shared_option("mlflow_arn"),
    region: str = typer.Option(None, "--region", help=REGION_HELP),
    config: Path = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
    policies: bool = typer.Option(
        False,
        "--policies",
        help="Print the IAM policies to create (trust of both roles, the caller's "
        "permissions) for --role-arn and exit; no AWS call.",
    ),
) -> None:
    """Check the AWS account before a job: credentials, regions, roles, runtime, rows."""
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError

    if backend != "sagemaker":
        raise SageMakerError(f"doctor --backend {backend}: only sagemaker has checks")
    if policies:
        _print_policies(role_arn or "arn:aws:iam::<account>:role/<job role>")
        return
    from agentrft.backends.sagemaker.jobs.preflight import Purpose

    if purpose not in get_args(Purpose):
        raise SageMakerError(f"--for {purpose!r}: use doctor, train, eval or deploy")
    cfg = _load_config(
        config,
        {
            "sagemaker.region": region,
            "sagemaker.runtime_arn": runtime_arn,
            "sagemaker.role_arn": role_arn,
            "sagemaker.runtime_role_arn": runtime_role_arn,
            "sagemaker.train_s3_uri": train_uri,
            "sagemaker.validation_s3_uri": validation_uri,
            "sagemaker.evaluation_s3_uri": eval_uri,
            "sagemaker.output_s3_path": output_path,
            "sagemaker.mlflow_resource_arn": mlflow_arn,
            "task": task,
        },
    )
    the_task = None
    if cfg.task:
        from agentrft.plugins import get_plugins

        the_task = get_plugins().task(cfg.task)
    from agentrft.backends.sagemaker.backend import SageMakerBackend

    report = SageMakerBackend().doctor(
        the_task, cfg, purpose=cast(Purpose, purpose), console=_console()
    )
    if not report.ok:
        n = len(report.failures)
        raise SageMakerError(f"{n} check{'s' if n > 1 else ''} failed; each row above says the fix")


def _print_policies(role_arn: str) -> None:
    from agentrft.backends.sagemaker.jobs import iam
    from agentrft.backends.sagemaker.jobs.aws import parse_arn

    try:
        account = parse_arn(role_arn, what="--role-arn").account
    except Exception:
        account = None
    blocks = {
        "job role trust policy (job-trust.json)": iam.job_role_trust_policy(),
        "runtime role trust policy (runtime-trust.json)": iam.runtime_role_trust_policy(account),
        "caller permissions (besides read access)": iam.caller_policy(role_arn),
    }
    for title, policy in blocks.items():
        typer.echo(f"# {title}\n{iam.policy_json(policy)}\n")


# -- dataset upload ---------------------------------------------------------------------


def dataset_upload(
    file: Path = typer.Argument(..., help="Rows file (JSONL, CSV, Parquet or JSON)."),
    destination: str = typer.Argument(..., help="s3://bucket/key, or s3://bucket/prefix/."),
    task: str = typer.Option(None, "--task", "-t", help="Parse every row with TASK first."),
    region: str = typer.Option(None, "--region", help=REGION_HELP),
    no_region_check: bool = typer.Option(
        False, "--no-region-check", help="Skip the same-region check (not recommended)."
    ),
    config: Path = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
) -> None:
    """Upload a dataset to S3, in the region where the job and runtime run."""
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError
    from agentrft.backends.sagemaker.jobs.s3 import upload_file

    cfg = _load_config(config, {"sagemaker.region": region})
    if not file.is_file():
        raise SageMakerError(f"dataset file {file} does not exist")
    if task:
        from agentrft.datasets import prompts_from_rows, read_rows
        from agentrft.plugins import get_plugins
        from agentrft.task import TaskInputError

        the_task = get_plugins().task(task)
        prompts = prompts_from_rows(read_rows(file), source=str(file))
        for i, prompt in enumerate(prompts, start=1):
            try:
                the_task.parse(prompt)
            except TaskInputError as exc:
                raise SageMakerError(f"{file}: row {i} does not parse as {task}: {exc}") from None
    aws = _aws(cfg)
    target = upload_file(aws, file, destination, check_region=not no_region_check)
    _console().print(f"uploaded {file} to {target} ({aws.region})")
    typer.echo(str(target))


# -- cost -------------------------------------------------------------------------------


def cost_estimate(
    steps: int = typer.Option(None, "--steps", help="max_steps (default: the config's)."),
    batch_size: int = typer.Option(
        None, "--batch-size", help="global_batch_size (prompts per step)."
    ),
    group_size: int = typer.Option(None, "--group-size", help="Rollouts per prompt."),
    trajectories: list[Path] = typer.Option(
        None, "--trajectories", help="Trajectories JSONL to measure tokens from (repeatable)."
    ),
    launch_profile: bool = typer.Option(
        False, "--launch-profile", help="Use the launch post's Wordle tokens per rollout."
    ),
    prefill: float = typer.Option(
        None, "--prefill", min=0, callback=finite, help="Prefill tokens per rollout."
    ),
    sampled: float = typer.Option(
        None, "--sampled", min=0, callback=finite, help="Sampled tokens per rollout."
    ),
    training: float = typer.Option(
        None,
        "--training",
        min=0,
        callback=finite,
        help="Training tokens per rollout (default prefill + sampled).",
    ),
    validation_rows: int = typer.Option(
        0, "--validation-rows", help="Rows scored every val_every steps."
    ),
    prices: Path = typer.Option(None, "--prices", help="Price table file (YAML/JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print the estimate as JSON."),
    config: Path = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
) -> None:
    """Estimate a training job's token bill from steps, batch, group size and a token profile."""
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError
    from agentrft.backends.sagemaker.jobs.cost import (
        TokenProfile,
        estimate,
        format_tokens,
        launch_run_profile,
        load_prices,
        profile_from_files,
    )

    cfg = _load_config(
        config,
        {"max_steps": steps, "global_batch_size": batch_size, "group_size": group_size},
    )
    sources = sum(bool(x) for x in (trajectories, launch_profile, prefill is not None))
    if sources != 1:
        raise SageMakerError(
            "give exactly one token profile: --trajectories FILE (recorded episodes, e.g. "
            "from `agentrft eval --save`), --launch-profile, or --prefill N --sampled N"
        )
    if trajectories:
        profile = profile_from_files(trajectories)
    elif launch_profile:
        profile = launch_run_profile()
    else:
        if sampled is None:
            raise SageMakerError("--prefill needs --sampled too")
        profile = TokenProfile(
            prefill=prefill,
            sampling=sampled,
            training=training if training is not None else prefill + sampled,
            source="flags",
        )
    table_prices = load_prices(prices or cfg.sagemaker.price_file, cfg.sagemaker.base_model)
    est = estimate(
        max_steps=cfg.max_steps,
        global_batch_size=cfg.global_batch_size,
        group_size=cfg.group_size,
        profile=profile,
        prices=table_prices,
        val_every=cfg.val_every,
        validation_rows=validation_rows,
    )
    if as_json:
        typer.echo(json.dumps(est.to_dict(), indent=2))
        return
    from rich.table import Table

    out = _console()
    out.print(
        f"{cfg.max_steps} steps × {cfg.global_batch_size} prompts × {cfg.group_size} rollouts = "
        f"{est.training_rollouts:,} training rollouts + {est.validation_rollouts:,} validation"
    )
    out.print(
        f"profile per rollout: prefill {profile.prefill:,.0f}, sampled {profile.sampling:,.0f}, "
        f"training {profile.training:,.0f} tokens ({profile.source or 'given'}"
        + (
            f", {profile.rollouts_measured} rollouts measured)"
            if profile.rollouts_measured
            else ")"
        )
    )
    table = Table(title="estimated bill")
    for col in ("dimension", "tokens", f"{table_prices.currency}/M", table_prices.currency):
        table.add_column(col, justify="right" if col != "dimension" else "left")
    for dim in ("prefill", "sampling", "training"):
        price = getattr(table_prices, dim)
        table.add_row(
            dim,
            format_tokens(est.tokens[dim]),
            f"{price:g}",
            f"{est.tokens[dim] * price / 1e6:,.2f}",
        )
    table.add_row("[bold]total[/]", "", "", f"[bold]{est.cost:,.2f}[/]")
    out.print(table)
    out.print(f"[dim]prices: {table_prices.source}. The AgentCore runtime is billed separately.[/]")


def cost_job(
    name: str = typer.Argument(..., help="Job name or ARN."),
    prices: Path = typer.Option(None, "--prices", help="Price table file (YAML/JSON)."),
    region: str = typer.Option(None, "--region", help=REGION_HELP),
    config: Path = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
) -> None:
    """A job's billed tokens (DescribeJob's ServiceOutput) × prices."""
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError
    from agentrft.backends.sagemaker.jobs.cost import format_tokens, job_cost, load_prices
    from agentrft.backends.sagemaker.jobs.lifecycle import describe_job

    cfg = _load_config(config, {"sagemaker.region": region})
    view = describe_job(_aws(cfg), name)
    tokens = view.billed_tokens
    if not tokens:
        raise SageMakerError(
            f"job {view.name} ({view.status}) reports no billed tokens yet; they appear in "
            "ServiceOutput.BillableTokenUsage as the job runs"
        )
    table_prices = load_prices(prices or cfg.sagemaker.price_file, cfg.sagemaker.base_model)
    out = _console()
    for k, v in tokens.items():
        out.print(f"{k:9s} {format_tokens(v):>12s} × {getattr(table_prices, k):g}/M")
    out.print(
        f"[bold]{job_cost(tokens, table_prices):,.2f} {table_prices.currency}[/] for {view.name} "
        f"({view.status}; prices: {table_prices.source})"
    )


# -- registration -----------------------------------------------------------------------


def _find_group(app: typer.Typer, name: str) -> typer.Typer | None:
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    return None


def _has_command(app: typer.Typer, name: str) -> bool:
    for info in app.registered_commands:
        cmd_name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if cmd_name == name:
            return True
    return False


def register(app: typer.Typer) -> None:
    """Add `jobs`, `doctor`, `dataset upload` and `cost` to the `agentrft` app."""
    jobs = typer.Typer(
        name="jobs", no_args_is_help=True, help="SageMaker AI training and evaluation jobs."
    )
    jobs.command("list")(_handle(jobs_list))
    jobs.command("describe")(_handle(jobs_describe))
    jobs.command("stop")(_handle(jobs_stop))
    app.add_typer(jobs, name="jobs")

    if not _has_command(app, "doctor"):  # the core CLI may own `doctor` and dispatch to us
        app.command("doctor")(_handle(doctor))

    dataset = _find_group(app, "dataset")
    if dataset is None:
        dataset = typer.Typer(name="dataset", no_args_is_help=True, help="Dataset files.")
        app.add_typer(dataset, name="dataset")
    dataset.command("upload")(_handle(dataset_upload))

    cost = _find_group(app, "cost")
    if cost is None:
        cost = typer.Typer(name="cost", no_args_is_help=True, help="SageMaker AI token bills.")
        app.add_typer(cost, name="cost")
    cost.command("estimate")(_handle(cost_estimate))
    cost.command("job")(_handle(cost_job))
