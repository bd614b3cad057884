"""The flags the sagemaker backend adds to `agentrft train` and `agentrft eval`.

Each is a shorthand for a key of the `sagemaker` config section (`--role-arn` is
`sagemaker.role_arn`) or an option of the backend (`--wait`, `--runs`); `--set key=value`
wins over both. They also answer to the names the service's public sample launcher uses
(`--agent-runtime-arn`, `--train-dataset`, `--val-dataset`, `--s3-output-path`,
`--mlflow-app-arn`, `--runs base:1.0 trained:1.0`), and the core `--model` names the hub
model, as the launcher's `--model` does.
"""

from __future__ import annotations

from typing import Any

from agentrft.backend import BackendError, CliOption


def _key(name: str, flags: tuple[str, ...], help: str, key: str, **kw: Any) -> CliOption:
    return CliOption(name, flags, f"{help} (sagemaker.{key}).", key=f"sagemaker.{key}", **kw)


CLI_OPTIONS = (
    _key(
        "runtime_arn",
        ("--runtime-arn", "--agent-runtime-arn"),
        "AgentCore runtime ARN",
        "runtime_arn",
    ),
    _key("role_arn", ("--role-arn",), "Job role ARN", "role_arn"),
    _key(
        "train_uri",
        ("--train-uri", "--train-dataset"),
        "s3:// training rows",
        "train_s3_uri",
        commands=("train",),
    ),
    _key(
        "validation_uri",
        ("--validation-uri", "--val-dataset"),
        "s3:// validation rows",
        "validation_s3_uri",
    ),
    _key(
        "eval_uri",
        ("--eval-uri",),
        "s3:// evaluation rows",
        "evaluation_s3_uri",
        commands=("eval",),
    ),
    _key(
        "output_path",
        ("--output-path", "--s3-output-path"),
        "s3:// output prefix",
        "output_s3_path",
    ),
    _key(
        "mlflow_arn",
        ("--mlflow-arn", "--mlflow-app-arn"),
        "SageMaker MLflow app ARN",
        "mlflow_resource_arn",
    ),
    _key("base_model", ("--base-model",), "Hub model id (also --model)", "base_model"),
    _key("region", ("--region",), "AWS region", "region"),
    _key("job_name", ("--job-name",), "Job name", "job_name"),
    CliOption(
        "skip_preflight",
        ("--skip-preflight",),
        "Do not run the account checks first (sagemaker.preflight=false).",
        type=bool,
        default=False,
        key="sagemaker.preflight",
        value=False,
    ),
    CliOption(
        "accept_eula",
        ("--accept-eula",),
        "Accept the base model's end-user license, which every job accepts on your behalf "
        "(AcceptEula: true; the plan names it); needed once per model (sagemaker.accept_eula).",
        type=bool,
        default=False,
        key="sagemaker.accept_eula",
        value=True,
    ),
    CliOption(
        "lookups",
        ("--lookups",),
        "With --dry-run: also make the read-only AWS lookups a submission makes (hub model, "
        "recipe specs, model package groups, document schema); creates nothing.",
        type=bool,
        default=False,
        option="lookups",
    ),
    CliOption(
        "wait",
        ("--wait/--no-wait",),
        "Follow the job to the end.",
        type=bool,
        default=False,
        option="wait",
        commands=("train",),
    ),
    CliOption(
        "wait",
        ("--wait/--no-wait",),
        "Follow each evaluation job to the end (default: wait).",
        type=bool,
        default=None,
        option="wait",
        commands=("eval",),
    ),
    CliOption(
        "runs",
        ("--runs",),
        "NAME:TEMPERATURE runs to evaluate, e.g. --runs base:1.0 trained:1.0 (also --runs "
        "base:1.0 --runs trained:1.0, or base:1.0,trained:1.0). They run one after another: "
        "the quota allows one evaluation job at a time.",
        type=list[str],
        option="runs",
        commands=("eval",),
    ),
    CliOption(
        "model_package_arn",
        ("--model-package-arn",),
        "Trained model package to evaluate.",
        option="model_package_arn",
        commands=("eval",),
    ),
)


def shared_option(name: str) -> Any:
    """A typer option with the flags (the sample launcher's names included) and help of
    `CLI_OPTIONS[name]`, for the commands that take the same inputs as train and eval
    (`agentrft doctor`): one spelling of each flag across the CLI."""
    import typer

    found = next(o for o in CLI_OPTIONS if o.name == name)
    return typer.Option(None, *found.flags, help=found.help)


def sagemaker_cli_values(
    values: dict[str, Any], extra_args: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The flag values made whole: `--runs base:1.0 trained:1.0` (click hands an option one
    value, so the further ones arrive as arguments), `--model` and `--base-model` agreeing,
    `--lookups` only with `--dry-run`."""
    values = dict(values)
    runs = values.get("runs")
    if extra_args:
        if not runs:
            raise BackendError(
                f"unexpected argument {extra_args[0]!r}; runs go after --runs, e.g. "
                "--runs base:1.0 trained:1.0"
            )
        runs = [*runs, *extra_args]
    if runs:
        values["runs"] = parse_runs(runs)
    if values.get("lookups") and not values.get("dry_run"):
        raise BackendError("--lookups goes with --dry-run (a submission makes its lookups anyway)")
    model, base = values.get("model"), values.get("base_model")
    if model and base and model != base:
        raise BackendError(
            f"--model {model!r} and --base-model {base!r} both name the sagemaker base "
            "model; pass one"
        )
    return values, []


def parse_runs(items: list[str] | None) -> list[tuple[str, float]]:
    """`["base:1.0", "trained:0.7,x:1"]` -> `[("base", 1.0), ("trained", 0.7), ("x", 1.0)]`."""
    runs: list[tuple[str, float]] = []
    for item in items or []:
        for piece in item.replace(" ", ",").split(","):
            if not piece:
                continue
            name, sep, temp = piece.partition(":")
            try:
                if not sep or not name:
                    raise ValueError
                runs.append((name, float(temp)))
            except ValueError:
                raise BackendError(
                    f"--runs {piece!r} must look like NAME:TEMPERATURE, e.g. base:1.0"
                ) from None
    return runs
