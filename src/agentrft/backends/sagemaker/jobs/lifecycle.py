"""Job verbs on the control plane: create, describe, list, stop, watch until done, and the
tables a submission prints (the dry run's plan, a finished job)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import recipe
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import (
    SageMakerError,
    error_code,
    error_message,
    parse_arn,
)
from agentrft.backends.sagemaker.jobs.cost import PriceTable, format_tokens, job_cost
from agentrft.backends.sagemaker.jobs.job_document import JobView, read_job

if TYPE_CHECKING:
    from rich.console import Console

    from agentrft.backends.sagemaker.jobs.aws import Aws
    from agentrft.backends.sagemaker.settings import SageMakerRunConfig

CATEGORIES = (facts.TRAINING_CATEGORY, facts.EVALUATION_CATEGORY)
#: Consecutive failed DescribeJob polls tolerated while watching a job.
MAX_POLL_FAILURES = 5


def split_job_ref(ref: str) -> tuple[str, str | None]:
    """A job name or ARN -> (name, category or None). ARN: .../job/<Category>/<name>."""
    if ref.startswith("arn:"):
        parts = parse_arn(ref, what="job ARN").resource.split("/")
        if len(parts) == 3 and parts[0] == "job":
            return parts[2], parts[1]
        raise SageMakerError(f"job ARN {ref!r} should end in job/<category>/<name>")
    return ref, None


def _api_error(action: str, exc: BaseException) -> SageMakerError:
    return SageMakerError(
        f"{action} failed ({error_code(exc) or type(exc).__name__}: {error_message(exc)})"
    )


def create_job(aws: Aws, request: dict[str, Any]) -> str:
    """CreateJob -> the job ARN, with the errors users hit explained."""
    try:
        return aws.sagemaker.create_job(**request)["JobArn"]
    except Exception as exc:
        msg = error_message(exc)
        hint = ""
        if "assume" in msg.lower():
            hint = (
                f" The job role must trust {facts.JOB_ROLE_PRINCIPAL} (not "
                f"{facts.WRONG_JOB_ROLE_PRINCIPAL}) with sts:AssumeRole and sts:TagSession; "
                "run `agentrft doctor --backend sagemaker`."
            )
        elif "region" in msg.lower():
            hint = " The runtime, the bucket and the job must share one region."
        elif error_code(exc) in {"ResourceLimitExceeded", "ResourceInUse"}:
            hint = " Wait for a running job to finish, or ask for a quota increase."
        raise SageMakerError(
            f"CreateJob {request.get('JobName')} failed ({error_code(exc) or type(exc).__name__}: "
            f"{msg}).{hint}"
        ) from None


def describe_job(aws: Aws, ref: str, category: str | None = None) -> JobView:
    """DescribeJob by name or ARN; without a category, try training then evaluation."""
    name, from_arn = split_job_ref(ref)
    given = category or from_arn
    categories = [given] if given else list(CATEGORIES)
    for cat in categories:
        try:
            return read_job(aws.sagemaker.describe_job(JobName=name, JobCategory=cat))
        except Exception as exc:
            if (
                error_code(exc) in {"ResourceNotFound", "ValidationException"}
                and len(categories) > 1
            ):
                continue
            if error_code(exc) == "ResourceNotFound":
                raise SageMakerError(f"no {cat} job named {name!r} in {aws.region}") from None
            raise _api_error(f"DescribeJob {name}", exc) from None
    raise SageMakerError(
        f"no job named {name!r} in {aws.region} ({' or '.join(categories)}); "
        "list them with `agentrft jobs list`"
    )


def list_jobs(
    aws: Aws,
    category: str = facts.TRAINING_CATEGORY,
    *,
    status: str | None = None,
    name_contains: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """ListJobs (paginated), newest first."""
    params: dict[str, Any] = {
        "JobCategory": category,
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
    }
    if status:
        params["StatusEquals"] = status
    if name_contains:
        params["NameContains"] = name_contains
    out: list[dict[str, Any]] = []
    try:
        for page in aws.sagemaker.get_paginator("list_jobs").paginate(**params):
            out.extend(page.get("JobSummaries", []))
            if len(out) >= limit:
                break
    except Exception as exc:
        raise _api_error("ListJobs", exc) from None
    return out[:limit]


def stop_job(aws: Aws, ref: str, category: str | None = None) -> JobView:
    """StopJob; returns the job as described before stopping (for the message)."""
    view = describe_job(aws, ref, category)
    if view.done:
        raise SageMakerError(f"job {view.name} is already {view.status}; nothing to stop")
    try:
        aws.sagemaker.stop_job(JobName=view.name, JobCategory=view.category)
    except Exception as exc:
        raise _api_error(f"StopJob {view.name}", exc) from None
    return view


def status_line(view: JobView, elapsed_s: float) -> str:
    """One line: status, secondary status, step of max steps, rollouts, elapsed time."""
    parts = [f"[bold]{view.name}[/]", view.status]
    if view.secondary_status:
        parts.append(f"[cyan]{view.secondary_status}[/]")
    if view.progress:
        cur, total = view.progress
        parts.append(f"step {cur}/{total}")
    if view.rollouts:
        done, total = view.rollouts
        parts.append(f"rollouts {done}/{total}")
    minutes, seconds = divmod(int(elapsed_s), 60)
    hours, minutes = divmod(minutes, 60)
    parts.append(f"{hours}h{minutes:02d}m{seconds:02d}s")
    return " · ".join(parts)


def watch_job(
    aws: Aws,
    name: str,
    category: str,
    *,
    console: Console,
    poll_s: float = 30.0,
    timeout_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> JobView:
    """Poll DescribeJob until a terminal status (there is no waiter), with a status line.

    Each secondary-status change prints a line; the spinner line shows the latest poll. A
    run lasts hours, so a few failed polls in a row (throttling, a network blip) are
    tolerated; Ctrl+C stops watching, never the job.
    """
    start = clock()
    last_secondary = None
    failures = 0
    try:
        with console.status("waiting for DescribeJob") as spinner:
            while True:
                try:
                    view = describe_job(aws, name, category)
                    failures = 0
                except SageMakerError as exc:
                    failures += 1
                    if failures >= MAX_POLL_FAILURES:
                        raise SageMakerError(
                            f"{exc}; gave up watching after {failures} failed polls. The job "
                            f"keeps running: agentrft jobs describe {name}"
                        ) from None
                    console.print(f"[yellow]poll failed ({failures}/{MAX_POLL_FAILURES}): {exc}[/]")
                    sleep(poll_s)
                    continue
                line = status_line(view, clock() - start)
                spinner.update(line)
                if view.secondary_status != last_secondary:
                    console.print(line)
                    last_secondary = view.secondary_status
                if view.done:
                    return view
                if timeout_s is not None and clock() - start >= timeout_s:
                    raise SageMakerError(
                        f"job {name} still {view.status} after {timeout_s:.0f}s; it keeps "
                        f"running: follow it with `agentrft jobs describe {name}`"
                    )
                sleep(poll_s)
    except KeyboardInterrupt:
        console.print(
            f"stopped watching; job {name} keeps running. Follow it with `agentrft jobs "
            f"describe {name}`, stop it with `agentrft jobs stop {name}`"
        )
        raise


def render_job(view: JobView, console: Console, prices: PriceTable | None = None) -> None:
    """A table of the job's state, outputs, billed tokens and their cost."""
    from rich.table import Table

    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_row("job", view.name)
    table.add_row("arn", view.arn)
    table.add_row("category", view.category)
    table.add_row("status", f"{view.status} / {view.secondary_status}")
    if view.creation_time:
        table.add_row("created", str(view.creation_time))
    if view.end_time:
        table.add_row("ended", str(view.end_time))
    if view.failure_reason:
        table.add_row("failure", f"[red]{view.failure_reason}[/]")
    if view.progress:
        table.add_row("progress", "step {}/{}".format(*view.progress))
    if view.rollouts:
        table.add_row("rollouts", "{}/{}".format(*view.rollouts))
    if view.output_model_package_arn:
        table.add_row("model package", view.output_model_package_arn)
    if view.mlflow:
        table.add_row(
            "mlflow",
            ", ".join(f"{k}={v}" for k, v in view.mlflow.items() if v),
        )
    tokens = view.billed_tokens
    if tokens:
        prices = prices or PriceTable()
        table.add_row(
            "billed tokens",
            ", ".join(f"{k} {format_tokens(v)}" for k, v in tokens.items()),
        )
        table.add_row(
            "cost",
            f"{job_cost(tokens, prices):,.2f} {prices.currency} ({prices.source})",
        )
    if view.category == facts.EVALUATION_CATEGORY:
        metrics = view.evaluation_metrics()
        for k, v in sorted(metrics.pass_at_k.items()):
            table.add_row(f"pass@{k}", f"{v:.3f}")
        if metrics.mean_reward is not None:
            table.add_row("mean reward", f"{metrics.mean_reward:.3f}")
    console.print(table)
    for t in view.transitions[-6:]:
        msg = t.get("StatusMessage") or ""
        console.print(f"  [dim]{t.get('StartTime')}[/] {t.get('Status')} {msg}")


def render_plan(rows: list[recipe.PlanRow], model: str, out: Console) -> None:
    """The dry run's table: each hyperparameter, the value the job gets, and its source."""
    from rich.table import Table

    template, known = recipe.template_for(model)
    title = f"hyperparameters of the job ({model}, recipe {template.name}" + (
        ")" if known else "; model not in agentrft's list, template assumed)"
    )
    table = Table(title=title, title_justify="left")
    for col in ("name", "value", "source"):
        table.add_column(col, overflow="fold")
    for row in rows:
        style = "bold" if row.sent else "dim"
        table.add_row(f"[{style}]{row.name}[/]", row.value, row.source)
    out.print(table)
    sent = sum(r.sent for r in rows)
    out.print(
        f"{sent} hyperparameter{'s' if sent != 1 else ''} sent; the service fills the rest "
        "from the recipe (sagemaker.send_hyperparameters=all sends agentrft's defaults too)"
    )


def report_finished(view: JobView, config: SageMakerRunConfig, out: Console) -> None:
    """After --wait: the job's end, its model package and billed tokens (raises unless it
    Completed)."""
    from agentrft.backends.sagemaker.jobs.cost import load_prices

    if view.status != "Completed":
        raise SageMakerError(
            f"job {view.name} ended {view.status}: {view.failure_reason or 'no reason given'}"
            f" (details: agentrft jobs describe {view.name})"
        )
    out.print(f"[green]job {view.name} completed[/]")
    out.print(f"output model package: {view.output_model_package_arn or '(not reported)'}")
    tokens = view.billed_tokens
    if tokens:
        prices = load_prices(config.sagemaker.price_file, config.sagemaker.base_model)
        out.print(
            "billed tokens: "
            + ", ".join(f"{k} {format_tokens(v)}" for k, v in tokens.items())
            + f" ≈ {job_cost(tokens, prices):,.2f} {prices.currency} ({prices.source})"
        )
