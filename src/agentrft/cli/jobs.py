"""`agentrft train` and `agentrft eval`.

Both dispatch to a backend plugin (`--backend local|sagemaker`) with the resolved config;
backend flags are shorthands for config keys (`--model` is `local.model`, or with
`--backend sagemaker` `sagemaker.base_model`; `--role-arn` is `sagemaker.role_arn`, ...), and
`--set key=value` overrides win over both. The sagemaker flags also answer to the names the
service's public sample launcher uses (`--agent-runtime-arn`, `--train-dataset`,
`--val-dataset`, `--s3-output-path`, `--mlflow-app-arn`, `--runs base:1.0 trained:1.0`).
`eval --policy` needs no backend: it plays the task's rows against a served model, a litellm
model or the task's scripted expert, right here.
"""

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from agentrft.cli.common import (
    API_KEY_ENV_HELP,
    BASE_URL_HELP,
    HEADER_HELP,
    POLICY_HELP,
    REWARD_HELP,
    TASK_HELP,
    console,
    echo,
    episode_limits,
    finite,
    load_reward,
    load_task,
    notify_episode,
    resolve_cli_policy,
    run_async,
    task_prompts,
)
from agentrft.cli.config import CONFIG_HELP, SET_HELP
from agentrft.cli.errors import CliError
from agentrft.config import Config, load_config

LOCAL = "local backend"
SAGEMAKER = "sagemaker backend"
POLICY = "eval --policy"

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help=SET_HELP)]
TaskOpt = Annotated[
    str | None, typer.Option("--task", "-t", help=TASK_HELP + " Default: the config's `task`.")
]
RewardOpt = Annotated[str | None, typer.Option(help=REWARD_HELP)]
AdapterOpt = Annotated[
    str | None, typer.Option(help="LoRA adapter directory (local.adapter).", rich_help_panel=LOCAL)
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print what would run; call nothing remote.")
]
LookupsOpt = Annotated[
    bool,
    typer.Option(
        "--lookups",
        help="With --dry-run: also make the read-only AWS lookups a submission makes (hub "
        "model, recipe specs, model package groups, document schema); creates nothing.",
        rich_help_panel=SAGEMAKER,
    ),
]
# Second names: the flags of the service's public sample launcher (run_mtrl_training.py).
RuntimeArnOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime-arn",
        "--agent-runtime-arn",
        help="AgentCore runtime ARN (sagemaker.runtime_arn).",
        rich_help_panel=SAGEMAKER,
    ),
]
RoleArnOpt = Annotated[
    str | None, typer.Option(help="Job role ARN (sagemaker.role_arn).", rich_help_panel=SAGEMAKER)
]
TrainUriOpt = Annotated[
    str | None,
    typer.Option(
        "--train-uri",
        "--train-dataset",
        help="s3:// training rows (sagemaker.train_s3_uri).",
        rich_help_panel=SAGEMAKER,
    ),
]
ValidationUriOpt = Annotated[
    str | None,
    typer.Option(
        "--validation-uri",
        "--val-dataset",
        help="s3:// validation rows (sagemaker.validation_s3_uri).",
        rich_help_panel=SAGEMAKER,
    ),
]
OutputPathOpt = Annotated[
    str | None,
    typer.Option(
        "--output-path",
        "--s3-output-path",
        help="s3:// output prefix (sagemaker.output_s3_path).",
        rich_help_panel=SAGEMAKER,
    ),
]
MlflowArnOpt = Annotated[
    str | None,
    typer.Option(
        "--mlflow-arn",
        "--mlflow-app-arn",
        help="SageMaker MLflow app ARN (sagemaker.mlflow_resource_arn).",
        rich_help_panel=SAGEMAKER,
    ),
]
BaseModelOpt = Annotated[
    str | None,
    typer.Option(help="Hub model id (sagemaker.base_model).", rich_help_panel=SAGEMAKER),
]
RegionOpt = Annotated[
    str | None, typer.Option(help="AWS region (sagemaker.region).", rich_help_panel=SAGEMAKER)
]
JobNameOpt = Annotated[
    str | None, typer.Option(help="Job name (sagemaker.job_name).", rich_help_panel=SAGEMAKER)
]
EvalUriOpt = Annotated[
    str | None,
    typer.Option(
        help="s3:// evaluation rows (sagemaker.evaluation_s3_uri).", rich_help_panel=SAGEMAKER
    ),
]
SkipPreflightOpt = Annotated[
    bool,
    typer.Option(
        "--skip-preflight",
        help="Do not run the account checks first (sagemaker.preflight=false).",
        rich_help_panel=SAGEMAKER,
    ),
]
WaitOpt = Annotated[
    bool,
    typer.Option("--wait/--no-wait", help="Follow the job to the end.", rich_help_panel=SAGEMAKER),
]


def _sagemaker_values(**flags: Any) -> dict[str, Any]:
    keys = {
        "runtime_arn": "sagemaker.runtime_arn",
        "role_arn": "sagemaker.role_arn",
        "train_uri": "sagemaker.train_s3_uri",
        "validation_uri": "sagemaker.validation_s3_uri",
        "output_path": "sagemaker.output_s3_path",
        "mlflow_arn": "sagemaker.mlflow_resource_arn",
        "region": "sagemaker.region",
        "job_name": "sagemaker.job_name",
        "eval_uri": "sagemaker.evaluation_s3_uri",
        "skip_preflight": "sagemaker.preflight",
    }
    if flags.get("skip_preflight"):
        flags["skip_preflight"] = False  # the flag turns the check off
    else:
        flags.pop("skip_preflight", None)
    return {keys[k]: v for k, v in flags.items() if v is not None}


def _model_flag(backend: str | None, model: str | None, base_model: str | None) -> dict[str, Any]:
    """`--model`: the local model, or with `--backend sagemaker` the hub model (the sample
    launcher's `--model`), which `--base-model` also names."""
    if backend != "sagemaker":
        return {"local.model": model}
    if model and base_model and model != base_model:
        raise CliError(
            f"--model {model!r} and --base-model {base_model!r} both name the sagemaker base "
            "model; pass one"
        )
    return {"sagemaker.base_model": model or base_model}


def _resolve(
    config: Path | None, set_: list[str] | None, values: dict[str, Any]
) -> tuple[Config, Any]:
    """The config (file < flags < --set) and the task it names."""
    cfg = load_config(config, overrides=set_ or [], values=values)
    if not cfg.task:
        raise CliError("pass --task NAME or set `task` in the config (see `agentrft tasks`)")
    return cfg, load_task(cfg.task)


def _backend(name: str, config: Config) -> Any:
    from agentrft.plugins import get_plugins

    backend = get_plugins().backend(name)  # unknown: PluginError naming the extra
    backend.check_available()  # missing dependency: BackendUnavailable naming the extra
    backend.check_config(config)  # a name it cannot run: ConfigError naming the key
    return backend


def train(
    task: TaskOpt = None,
    backend: Annotated[str, typer.Option("--backend", "-b", help="local or sagemaker.")] = "local",
    config: ConfigOpt = None,
    set_: SetOpt = None,
    reward: RewardOpt = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="HF model id, directory, .gguf file or pkg:MODULE (local.model); with "
            "--backend sagemaker, the hub model id (sagemaker.base_model).",
            rich_help_panel=LOCAL,
        ),
    ] = None,
    adapter: AdapterOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="Resume from this run directory / checkpoint.", rich_help_panel=LOCAL),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Training steps (max_steps).")
    ] = None,
    runtime_arn: RuntimeArnOpt = None,
    role_arn: RoleArnOpt = None,
    train_uri: TrainUriOpt = None,
    validation_uri: ValidationUriOpt = None,
    output_path: OutputPathOpt = None,
    mlflow_arn: MlflowArnOpt = None,
    base_model: BaseModelOpt = None,
    region: RegionOpt = None,
    job_name: JobNameOpt = None,
    skip_preflight: SkipPreflightOpt = False,
    dry_run: DryRunOpt = False,
    lookups: LookupsOpt = False,
    wait: WaitOpt = False,
) -> None:
    """Train TASK on a backend with the resolved config."""
    values = {
        "task": task,
        "reward": reward,
        "max_steps": max_steps,
        "local.adapter": adapter,
        **_model_flag(backend, model, base_model),
        **_sagemaker_values(
            runtime_arn=runtime_arn,
            role_arn=role_arn,
            train_uri=train_uri,
            validation_uri=validation_uri,
            output_path=output_path,
            mlflow_arn=mlflow_arn,
            region=region,
            job_name=job_name,
            skip_preflight=skip_preflight,
        ),
    }
    cfg, the_task = _resolve(config, set_, values)
    reward_fn = load_reward(cfg.reward, the_task)
    if resume is not None and not resume.exists():
        raise CliError(f"--resume {resume}: no such run directory or checkpoint")
    if lookups and not dry_run:
        raise CliError("--lookups goes with --dry-run (a submission makes its lookups anyway)")
    impl = _backend(backend, cfg)
    extra: dict[str, Any] = {"lookups": True} if lookups else {}
    result = impl.train(
        the_task,
        cfg,
        resume=str(resume) if resume is not None else None,
        dry_run=dry_run,
        wait=wait,
        reward_fn=reward_fn,
        console=console(),
        **extra,
    )
    _print_result(result)


def eval_(
    task: TaskOpt = None,
    policy: Annotated[str | None, typer.Option("--policy", "-p", help=POLICY_HELP)] = None,
    backend: Annotated[
        str | None,
        typer.Option("--backend", "-b", help="local or sagemaker (instead of --policy)."),
    ] = None,
    data: Annotated[
        Path | None, typer.Option("--data", help="Rows file (default: the task makes --split).")
    ] = None,
    split: Annotated[str | None, typer.Option(help="Split the task makes (eval.split).")] = None,
    n: Annotated[int | None, typer.Option("--n", min=1, help="Rows to evaluate (eval.n).")] = None,
    temperature: Annotated[
        list[float] | None,
        typer.Option(
            min=0,
            max=2,
            callback=finite,
            help="Sampling temperature; repeat for several (eval.temperatures).",
        ),
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option(
            min=1, help="Episodes per row; pass@k for k up to this (eval.samples_per_row)."
        ),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Episodes in flight (eval.concurrency).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the split the task makes.")] = None,
    success_threshold: Annotated[
        float | None,
        typer.Option(
            callback=finite,
            help="Count reward >= this as solved (default: the reward's `solved`).",
        ),
    ] = None,
    max_turns: Annotated[int | None, typer.Option(help="Override the task's turn limit.")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the report(s) as JSON here.")] = None,
    trajectories: Annotated[
        Path | None, typer.Option(help="Write every trajectory as JSONL here (for replay).")
    ] = None,
    reward: RewardOpt = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    base_url: Annotated[
        str | None, typer.Option(help=BASE_URL_HELP, rich_help_panel=POLICY)
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="With --policy URL: the served model name (default: the server's first). "
            "With --backend local: the model to evaluate (local.model). With --backend "
            "sagemaker: the hub model id (sagemaker.base_model).",
        ),
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help=API_KEY_ENV_HELP, rich_help_panel=POLICY)
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option(help=HEADER_HELP, rich_help_panel=POLICY)
    ] = None,
    adapter: AdapterOpt = None,
    runs: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME:TEMPERATURE runs to evaluate, e.g. --runs base:1.0 trained:1.0 (also "
            "--runs base:1.0 --runs trained:1.0, or base:1.0,trained:1.0). They run one "
            "after another: the quota allows one evaluation job at a time.",
            rich_help_panel=SAGEMAKER,
        ),
    ] = None,
    model_package_arn: Annotated[
        str | None,
        typer.Option(help="Trained model package to evaluate.", rich_help_panel=SAGEMAKER),
    ] = None,
    runtime_arn: RuntimeArnOpt = None,
    role_arn: RoleArnOpt = None,
    validation_uri: ValidationUriOpt = None,
    eval_uri: EvalUriOpt = None,
    output_path: OutputPathOpt = None,
    mlflow_arn: MlflowArnOpt = None,
    base_model: BaseModelOpt = None,
    region: RegionOpt = None,
    job_name: JobNameOpt = None,
    skip_preflight: SkipPreflightOpt = False,
    wait: Annotated[
        bool | None,
        typer.Option(
            "--wait/--no-wait",
            help="Follow each evaluation job to the end (default: wait).",
            rich_help_panel=SAGEMAKER,
        ),
    ] = None,
    output_dir: Annotated[
        Path | None, typer.Option(help="Where a backend writes its eval outputs.")
    ] = None,
    dry_run: DryRunOpt = False,
    lookups: LookupsOpt = False,
    more_runs: Annotated[
        list[str] | None,
        typer.Argument(hidden=True, help="The further values of --runs (base:1.0 trained:1.0)."),
    ] = None,
) -> None:
    """Evaluate on TASK: pass@k, solve rate, reward, turns, failure kinds (per temperature)."""
    if more_runs:
        # `--runs base:1.0 trained:1.0` (the sample launcher's form): click hands an option
        # one value, so the further ones arrive as arguments; nothing else takes arguments.
        if not runs:
            raise CliError(
                f"unexpected argument {more_runs[0]!r}; runs go after --runs, e.g. "
                "--runs base:1.0 trained:1.0"
            )
        runs = [*runs, *more_runs]
    if lookups and not dry_run:
        raise CliError("--lookups goes with --dry-run (a submission makes its lookups anyway)")
    if (policy is None) == (backend is None):
        raise CliError(
            "pass exactly one of --policy SPEC (evaluate a served model, a litellm model or the "
            "task's expert here) or --backend local|sagemaker (evaluate through a backend)"
        )
    values: dict[str, Any] = {
        "task": task,
        "reward": reward,
        "seed": seed,
        "eval.split": split,
        "eval.n": n,
        "eval.samples_per_row": samples,
        "eval.temperatures": list(temperature) if temperature else None,
        "eval.concurrency": concurrency,
    }
    if backend is not None:
        values.update(
            {"local.adapter": adapter}
            | _model_flag(backend, model, base_model)
            | _sagemaker_values(
                runtime_arn=runtime_arn,
                role_arn=role_arn,
                validation_uri=validation_uri,
                eval_uri=eval_uri,
                output_path=output_path,
                mlflow_arn=mlflow_arn,
                region=region,
                job_name=job_name,
                skip_preflight=skip_preflight,
            )
        )
    if max_turns is not None:
        values["limits.max_turns"] = max_turns
    cfg, the_task = _resolve(config, set_, values)
    reward_fn = load_reward(cfg.reward, the_task)

    if backend is not None:
        impl = _backend(backend, cfg)
        # Backend-specific options go only when given, so a backend that does not know
        # them (local has no `runs`) is not handed keywords it would reject.
        extra: dict[str, Any] = {}
        if runs:
            extra["runs"] = parse_runs(runs)
        if model_package_arn:
            extra["model_package_arn"] = model_package_arn
        if dry_run:
            extra["dry_run"] = True
        if lookups:
            extra["lookups"] = True
        if wait is not None:
            extra["wait"] = wait
        result = impl.evaluate(
            the_task,
            cfg,
            model=cfg.local.model,
            adapter=cfg.local.adapter,
            reward_fn=reward_fn,
            console=console(),
            output_dir=str(output_dir) if output_dir is not None else None,
            **extra,
        )
        reports = _as_reports(result)
        _show_reports(reports)
        context = {"backend": backend, "task": cfg.task}
        if report is not None and reports:
            _write_report(reports, report, context)
        elif report is not None and callable(getattr(result, "write_report", None)):
            # A backend whose results are not EvalReports (sagemaker's jobs) writes its own.
            result.write_report(report, context)
            console().print(f"report: {report}")
        elif report is not None:
            raise CliError(f"backend {backend!r} returned no report to write to {report}")
        if not reports:
            _print_result(result)
        return

    assert policy is not None
    _eval_policy(
        cfg,
        the_task,
        reward_fn,
        policy=policy,
        data=data,
        success_threshold=success_threshold,
        report=report,
        trajectories=trajectories,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        header=header,
    )


def _eval_policy(
    cfg: Config,
    the_task: Any,
    reward_fn: Any,
    *,
    policy: str,
    data: Path | None,
    success_threshold: float | None,
    report: Path | None,
    trajectories: Path | None,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    header: list[str] | None,
) -> None:
    from rich.progress import Progress

    from agentrft.evaluation import evaluate
    from agentrft.policy import Sampling
    from agentrft.trajectory import write_trajectories

    ev = cfg.eval
    prompts = task_prompts(the_task, data=data, split=ev.split, n=ev.n, seed=cfg.seed)
    if not prompts:
        raise CliError(f"no rows to evaluate for task {the_task.name!r}")
    the_policy = resolve_cli_policy(
        policy, the_task, base_url=base_url, model=model, api_key_env=api_key_env, headers=header
    )
    k_values = sorted({k for k in cfg.pass_k_values if k <= ev.samples_per_row} | {1})
    k_values = sorted({*k_values, ev.samples_per_row})
    sampling = Sampling(max_tokens=cfg.sampling_max_tokens, top_p=cfg.sampling_top_p)
    total = len(prompts) * ev.samples_per_row * len(ev.temperatures)
    name = getattr(the_policy, "name", "") or policy

    with Progress(console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task(f"{the_task.name} · {name}", total=total)

        def on_episode(t: Any) -> None:
            notify_episode(t)
            progress.advance(bar)

        async def go() -> Any:
            try:
                return await evaluate(
                    the_task,
                    prompts,
                    the_policy,
                    temperatures=ev.temperatures,
                    samples_per_row=ev.samples_per_row,
                    sampling=sampling,
                    limits=episode_limits(the_task, cfg),
                    concurrency=ev.concurrency,
                    pass_k_values=k_values,
                    success_threshold=success_threshold,
                    reward_fn=reward_fn,
                    on_episode=on_episode,
                    policy_name=name,
                    curriculum_level=ev.curriculum_level,
                )
            finally:
                await the_policy.aclose()

        reports, trajs = run_async(go)

    _show_reports(reports)
    _warn_bad_rows(trajs)
    if report is not None:
        source = {"data": str(data)} if data else {"split": ev.split, "n": ev.n, "seed": cfg.seed}
        # The policy spec, never the key or headers (they may hold secrets).
        _write_report(reports, report, {"task": the_task.name, "policy": policy, **source})
        console().print(f"report: {report}")
    if trajectories is not None:
        count = write_trajectories(trajs, trajectories)
        console().print(f"trajectories: {trajectories} ({count})")
    _fail_if_nothing_played(trajs, the_task.name)


def _fail_if_nothing_played(trajectories: list[Any], task: str) -> None:
    """Exit 1 when no episode reached the policy: an eval of nothing is not a result."""
    if not trajectories or any(t.turns for t in trajectories):
        return
    n = len(trajectories)
    failures = [t.failures[0] for t in trajectories if t.failures]
    if failures and all(f.kind == "bad_input" for f in failures) and len(failures) == n:
        raise CliError(
            f"none of the {n} episodes was played: no row parses as a {task} instance "
            f"(first error: {failures[0].detail})"
        )
    kinds = sorted({f.kind for f in failures})
    detail = next((f.detail for f in failures if f.kind != "bad_input"), "")
    raise CliError(
        f"none of the {n} episodes reached the policy ({', '.join(kinds) or 'no turns'}): "
        f"{detail or 'check --policy'}"
    )


def _warn_bad_rows(trajectories: list[Any]) -> None:
    """Rows the task could not parse still count (lowest reward); say so, once."""
    bad = [t for t in trajectories if "bad_input" in t.failure_kinds]
    if not bad or len(bad) == len(trajectories):  # all bad: the error says it instead
        return
    rows = sorted({t.metadata.get("row", 0) + 1 for t in bad})
    detail = next(f.detail for f in bad[0].failures if f.kind == "bad_input")
    Console(stderr=True, highlight=False).print(
        f"warning: {len(rows)} row(s) did not parse as task instances and scored the lowest "
        f"reward (rows {', '.join(map(str, rows[:10]))}{' …' if len(rows) > 10 else ''}); "
        f"first error: {detail}",
        markup=False,
    )


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
                raise CliError(
                    f"--runs {piece!r} must look like NAME:TEMPERATURE, e.g. base:1.0"
                ) from None
    return runs


def _as_reports(result: Any) -> list[Any]:
    from agentrft.evaluation import EvalReport

    if isinstance(result, EvalReport):
        return [result]
    if (
        isinstance(result, (list, tuple))
        and result
        and all(isinstance(r, EvalReport) for r in result)
    ):
        return list(result)
    return []


def _show_reports(reports: list[Any]) -> None:
    from agentrft.evaluation import reports_table

    out = console()
    for r in reports:
        out.print(r.render())
    if len(reports) > 1:
        out.print(reports_table(reports))


def _write_report(reports: list[Any], path: Path, context: dict[str, Any]) -> None:
    """`{"task", "policy" | "backend", where the rows came from, "reports": [...]}`, with
    secrets (a policy URL's password, keys, tokens) scrubbed."""
    from agentrft.evaluation import write_report

    write_report(path, reports, context)


def _print_result(result: Any) -> None:
    """Show what a backend returned: a plain value (a run dir, a job name), or the simple
    fields of a result object (its reports and requests were already printed by the backend).
    """
    import dataclasses

    if result is None:
        return
    if isinstance(result, (str, Path)):
        echo(str(result))
        return
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    elif hasattr(result, "model_dump"):
        fields = dict(result)
    elif isinstance(result, dict):
        fields = result
    else:
        echo(repr(result))
        return
    for key, value in fields.items():
        if isinstance(value, (str, Path, int, float, bool)):
            echo(f"{key}: {value}")
