"""`agentrft eval`: pass@k, solve rate, reward, turns and failure kinds, per temperature.

Two ways to evaluate: `--policy SPEC` plays the task's rows here against a served model, a
litellm model or the task's scripted expert (no backend needed); `--backend NAME` evaluates
through a backend (the local engine's model and adapter, SageMaker AI evaluation jobs),
with the flags that backend adds (`Backend.cli_options`). Both write `--report FILE`; both
write `--trajectories FILE` where the episodes are kept here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from agentrft.cli.backend_flags import BackendFlags
from agentrft.cli.common import (
    API_KEY_ENV_HELP,
    BASE_URL_HELP,
    HEADER_HELP,
    POLICY_HELP,
    ConfigOpt,
    DryRunOpt,
    ExtraArgs,
    RewardOpt,
    SetOpt,
    TaskOpt,
    console,
    finite,
    load_backend,
    notify_episode,
    resolve_cli_policy,
    resolve_config,
    run_async,
)
from agentrft.cli.errors import CliError
from agentrft.cli.summary import print_summary
from agentrft.config import Config, episode_limits
from agentrft.datasets import task_prompts

POLICY = "eval --policy"


def eval_(
    task: TaskOpt = None,
    policy: Annotated[str | None, typer.Option("--policy", "-p", help=POLICY_HELP)] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend", "-b", help="Evaluate through this backend (instead of --policy)."
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Rows file (default: the task makes --split); through a backend it is the "
            "validation_dataset.",
        ),
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
    report_html: Annotated[
        Path | None,
        typer.Option(
            help="Write the evaluation's page here (HTML: its table and an episode browser; "
            "agentrft report explains it)."
        ),
    ] = None,
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
            "With --backend: the model to evaluate, its backend's model key (local.model, "
            "sagemaker.base_model).",
        ),
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help=API_KEY_ENV_HELP, rich_help_panel=POLICY)
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option(help=HEADER_HELP, rich_help_panel=POLICY)
    ] = None,
    output_dir: Annotated[
        Path | None, typer.Option(help="Where a backend writes its own eval outputs.")
    ] = None,
    dry_run: DryRunOpt = False,
    extra_args: ExtraArgs = None,
    backend_flags: BackendFlags | None = None,
) -> None:
    """Evaluate on TASK: pass@k, solve rate, reward, turns, failure kinds (per temperature)."""
    if report_html is not None:
        _check_page_target(report_html)
    if (policy is None) == (backend is None):
        raise CliError(
            "pass exactly one of --policy SPEC (evaluate a served model, a litellm model or the "
            "task's expert here) or --backend NAME (evaluate through a backend)"
        )
    if data is not None and (split is not None or seed is not None):
        flag = "--split" if split is not None else "--seed"
        raise CliError(
            f"{flag} picks rows the task makes, but --data {data} gives the rows: drop {flag}, "
            "or drop --data to evaluate the task's own split"
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
        "limits.max_turns": max_turns,
    }
    if backend is None:
        if extra_args:
            raise CliError(f"unexpected argument {extra_args[0]!r}")
        if dry_run or output_dir is not None:
            what = "--dry-run" if dry_run else "--output-dir"
            raise CliError(f"{what} goes with --backend, not --policy")
        cfg, the_task, reward_fn = resolve_config(config, set_, values)
        assert policy is not None
        _eval_policy(
            cfg, the_task, reward_fn, policy=policy, data=data,
            success_threshold=success_threshold, report=report, trajectories=trajectories,
            report_html=report_html, base_url=base_url, model=model, api_key_env=api_key_env, header=header,
        )  # fmt: skip
        return
    if base_url or api_key_env or header:
        raise CliError("--base-url, --api-key-env and --header go with --policy, not --backend")
    impl = load_backend(backend)
    for flag, given in (("--trajectories", trajectories), ("--report-html", report_html)):
        if given is not None and not impl.keeps_trajectories:
            raise CliError(
                f"{flag}: the {backend} backend keeps no trajectories here (its episodes run "
                "elsewhere); drop it, or evaluate with --backend local or --policy"
            )
    own = backend_flags.for_backend(backend) if backend_flags else {}
    keys, fields = impl.cli_values(
        "eval", {**own, "model": model, "dry_run": dry_run}, list(extra_args or [])
    )
    values["validation_dataset"] = str(data) if data is not None else None
    cfg, the_task, reward_fn = resolve_config(config, set_, {**values, **keys})
    # `impl.evaluate` checks the config first (Backend.check_config).
    options = impl.eval_options(
        reward_fn=reward_fn,
        dry_run=dry_run,
        console=console(),
        output_dir=str(output_dir) if output_dir is not None else None,
        **fields,
    )
    result = impl.evaluate(the_task, cfg, options)
    _show_reports(result.reports)
    if report is not None:
        result.write_report(report, {"backend": backend, "task": cfg.task})
        console().print(f"report: {report}")
    if trajectories is not None:
        from agentrft.trajectory import write_trajectories

        count = write_trajectories(result.trajectories, trajectories)
        console().print(f"trajectories: {trajectories} ({count})")
    if report_html is not None:
        _write_page(report_html, result.reports, result.trajectories)
    if not result.reports:
        print_summary(result)


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
    report_html: Path | None,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    header: list[str] | None,
) -> None:
    from rich.progress import Progress

    from agentrft.evaluation import evaluate, write_report
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
        write_report(report, reports, {"task": the_task.name, "policy": policy, **source})
        console().print(f"report: {report}")
    if trajectories is not None:
        count = write_trajectories(trajs, trajectories)
        console().print(f"trajectories: {trajectories} ({count})")
    if report_html is not None:
        _write_page(report_html, reports, trajs)
    _fail_if_nothing_played(trajs, the_task.name)
    _fail_if_the_reward_failed(trajs)


def _check_page_target(target: Path) -> None:
    """`--report-html`'s folder exists and the page's libraries are installed: checked
    before any episode is played."""
    from agentrft.report import ReportError, check_available

    if not target.parent.is_dir():
        raise CliError(f"--report-html {target}: the folder {target.parent} does not exist")
    try:
        check_available()
    except ReportError as exc:
        raise CliError(f"--report-html: {exc}") from None


def _write_page(target: Path, reports: list[Any], trajectories: list[Any]) -> None:
    from agentrft.report import eval_page

    console().print(f"report page: {eval_page(target, reports, trajectories, name=target.stem)}")


#: An eval whose reward failed on more than this share of its episodes exits 1: its table
#: measures the reward's bug (every such episode holds the lowest tier), not the policy.
REWARD_ERROR_LIMIT = 0.5


def _fail_if_the_reward_failed(trajectories: list[Any]) -> None:
    """Say loudly, and exit 1, when most episodes' reward raised or returned a bad value
    (the report and trajectories are written first: they show every failure)."""
    failed = [t for t in trajectories if "reward_error" in t.failure_kinds]
    if not failed:
        return
    detail = next(f.detail for f in failed[0].failures if f.kind == "reward_error")
    share = len(failed) / len(trajectories)
    message = (
        f"the reward failed on {len(failed)} of {len(trajectories)} episodes "
        f"({share:.0%}; each scored the lowest tier); first: {detail}"
    )
    if share > REWARD_ERROR_LIMIT:
        raise CliError(message + " — fix the reward, then run `agentrft reward check`")
    Console(stderr=True, highlight=False).print(f"warning: {message}", markup=False)


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


def _show_reports(reports: list[Any]) -> None:
    from agentrft.eval_table import reports_table
    from agentrft.evaluation import reports_by_task

    out = console()
    for r in reports:
        out.print(r.render())
    for group in reports_by_task(reports):  # one group unless several tasks were played
        if len(group) > 1:
            out.print(reports_table(group))
