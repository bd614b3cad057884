"""`agentrft deploy` as the CLI runs it: the flags checked and resolved (runtime name,
role, bucket, the task's plugin), the dry-run report or the real deploy, and every failure
turned into one clear line and a non-zero exit. The steps themselves are `deploy.deploy`."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentrft.backends.sagemaker.jobs.aws import Aws
from agentrft.backends.sagemaker.jobs.bundle import (
    TARGET_PLATFORM,
    BundleError,
    build_bundle,
    collect_bundle_options,
    plan_bundle,
    sha256_file,
)
from agentrft.backends.sagemaker.jobs.deploy import (
    CODE_PREFIX,
    DeployError,
    DeploySpec,
    check_name,
    check_role_arn,
    code_key,
    default_runtime_name,
    deploy,
    dry_run_report,
    parse_env,
    parse_s3_uri,
)


def deploy_command(
    *,
    task: str,
    role_arn: str | None,
    name: str | None,
    region: str | None,
    s3_uri: str | None,
    reward: str | None,
    workdir: Path | None,
    no_deps: bool,
    wait: bool,
    dry_run: bool,
    force: bool = False,
    skip_preflight: bool = False,
    build_only: bool = False,
    platform: str = TARGET_PLATFORM,
    env: list[str] | None = None,
) -> None:
    """The `agentrft deploy` command body.

    `build_only` builds the zip in `workdir` and stops (no AWS); `platform` builds it for
    another wheel platform (e.g. manylinux2014_x86_64, to run the bundle on this machine).

    Exits with SystemExit(2) on bad input: a BaseException passes any error-reporting
    wrapper untouched and sets the exit status.
    """
    import typer

    from agentrft.plugins import PluginError, get_plugins

    def fail(msg: str) -> None:
        typer.secho(f"error: {msg}", fg="red", err=True)
        raise SystemExit(2)

    from agentrft.mixture import parse_task_spec

    if platform != TARGET_PLATFORM and not build_only:
        fail(
            f"--platform {platform}: AgentCore runs {TARGET_PLATFORM}; another platform "
            "only builds a bundle to try on this machine, so add --build-only"
        )
        return
    try:
        plugins = get_plugins()
        # `--task a,b`: one runtime serves every task named (rows carry their task).
        mixture = parse_task_spec(task)
        names = mixture.names if mixture else [task]
        for each in names:
            plugins.task(each)  # a clear error now rather than a runtime that cannot start
        if reward and len(names) > 1:
            raise DeployError(
                f"--reward {reward} replaces one task's reward; a runtime serving "
                f"{', '.join(names)} plays each with its own, so drop --reward"
            )
        if reward:
            plugins.reward(reward, task)
        sources = plugins.task_sources()
        wanted = [sources.get(n, "agentrft") for n in names]
        if reward:
            # The runtime resolves AGENTRFT_REWARD through the plugins it can import: a
            # reward from another distribution than the task's must travel in the bundle.
            wanted.append(plugins.reward_sources().get(reward, "agentrft"))
        distributions = list(dict.fromkeys(wanted))
        declared = collect_bundle_options(plugins, names)
        task = ",".join(names)  # what AGENTRFT_TASK says (shares do not matter to it)
        extra_env = parse_env(env or [])
        runtime_name = check_name(name or default_runtime_name("_".join(names)))
        if dry_run or build_only:
            role = role_arn or "arn:aws:iam::<account-id>:role/<runtime-role>"
            if role_arn:
                check_role_arn(role_arn)
        else:
            role = check_role_arn(role_arn)
    except (DeployError, BundleError, PluginError, ValueError) as exc:
        fail(str(exc))
        return
    if build_only:
        if workdir is None:
            fail("--build-only keeps the zip: pass --workdir DIR to say where")
            return
        _build_only(task, distributions, workdir, declared, no_deps, reward, platform, fail)
        return

    aws = None
    if dry_run:
        resolved_region = region or "<region>"
    else:
        import boto3

        session = boto3.Session(region_name=region)
        resolved_region = region or session.region_name
        if not resolved_region:
            fail("no AWS region: pass --region or set AWS_REGION")
            return
        aws = Aws(session=session, region=resolved_region)
        if not skip_preflight and not _preflight_ok(aws, role):
            fail(
                "preflight failed (nothing was uploaded); fix the rows above, or pass "
                "--skip-preflight to deploy anyway"
            )
            return

    if s3_uri:
        try:
            bucket, prefix = parse_s3_uri(s3_uri)
        except DeployError as exc:
            fail(str(exc))
            return
    else:
        account = aws.account_id() if aws is not None else "<account-id>"
        bucket, prefix = f"sagemaker-{resolved_region}-{account}", CODE_PREFIX
    prefix = prefix or CODE_PREFIX

    own_tmp = None
    if workdir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="agentrft-deploy-")
        workdir = Path(own_tmp.name)
    try:
        plan = plan_bundle(
            task, distributions, workdir, no_deps=no_deps, reward=reward, options=declared
        )
        spec = DeploySpec(
            task=task,
            name=runtime_name,
            role_arn=role,
            region=resolved_region,
            bucket=bucket,
            key=code_key(prefix, task, "<sha256>"),
            reward=reward,
            extra_env=extra_env,
        )
        if dry_run:
            for line in dry_run_report(plan, spec):
                typer.echo(line)
            return
        if no_deps:
            typer.secho(
                "warning: --no-deps bundles agentrft and the plugin only; the runtime will not "
                "start without its dependencies",
                fg="yellow",
                err=True,
            )
        zip_path = build_bundle(plan, echo=typer.echo)
        spec = replace(spec, key=code_key(prefix, task, sha256_file(zip_path)))
        assert aws is not None
        result = deploy(
            spec,
            zip_path,
            control=aws.client("bedrock-agentcore-control"),
            s3=aws.client("s3"),
            sagemaker=aws.sagemaker,
            force=force,
            wait=wait,
            echo=typer.echo,
        )
    except (DeployError, BundleError) as exc:
        fail(str(exc))
        return
    except Exception as exc:
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, (ClientError, BotoCoreError)):
            fail(f"AWS refused the deploy: {exc}")
            return
        raise
    finally:
        if own_tmp is not None:
            own_tmp.cleanup()
    typer.echo(result.arn)
    typer.echo(f"next: agentrft smoke-test --runtime-arn {result.arn}")


def _build_only(
    task: str,
    distributions: list[str],
    workdir: Path,
    declared: list[Any],
    no_deps: bool,
    reward: str | None,
    platform: str,
    fail: Callable[[str], None],
) -> None:
    """Build the bundle into `workdir` and print the zip's path and size (no AWS)."""
    import typer

    try:
        plan = plan_bundle(
            task,
            distributions,
            workdir,
            no_deps=no_deps,
            reward=reward,
            options=declared,
            platform=platform,
        )
        for i, step in enumerate(plan.describe(), 1):
            typer.echo(f"  {i}. {step}")
        zip_path = build_bundle(plan, echo=typer.echo)
    except BundleError as exc:
        fail(str(exc))
        return
    files = sum(1 for p in plan.stage.rglob("*") if p.is_file())
    typer.echo(
        f"built {zip_path} ({zip_path.stat().st_size / 1e6:.1f} MB zipped, {files} files; "
        f"unpacked in {plan.stage})"
    )


def _preflight_ok(aws: Aws, role_arn: str) -> bool:
    """The backend's preflight for a deploy (credentials, region, the runtime role)."""
    from rich.console import Console

    from agentrft.backends.sagemaker.jobs.preflight import run_preflight
    from agentrft.backends.sagemaker.settings import as_sagemaker
    from agentrft.config_model import default_config

    report = run_preflight(
        as_sagemaker(default_config()), purpose="deploy", aws=aws, runtime_role_arn=role_arn
    )
    report.render(Console(stderr=True))
    return bool(report.ok)
