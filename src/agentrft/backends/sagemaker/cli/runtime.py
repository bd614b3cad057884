"""CLI commands for the AgentCore runtime side: `runtime serve`, `deploy`, `smoke-test`.

`register(app)` is called by the sagemaker backend's plugin. Keep this module light: it
imports typer only; bedrock_agentcore, boto3 and uvicorn load inside the commands.
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add `runtime serve`, `deploy` and `smoke-test` to the `agentrft` app."""
    from agentrft.cli.errors import handle_errors  # one-line errors, as the jobs commands

    runtime = typer.Typer(
        name="runtime",
        no_args_is_help=True,
        help="The AgentCore runtime app that plays rollouts for SageMaker AI jobs.",
    )
    runtime.command("serve")(handle_errors(serve))
    app.add_typer(runtime, name="runtime")
    app.command("deploy")(handle_errors(deploy))
    app.command("smoke-test")(handle_errors(smoke_test))


def serve(
    task: str = typer.Option(..., "--task", help="Task name (see `agentrft tasks`)."),
    port: int = typer.Option(
        8080, "--port", min=0, max=65535, help="Port (AgentCore expects 8080)."
    ),
    host: str = typer.Option(
        None,
        "--host",
        help="Bind address. Default 127.0.0.1; 0.0.0.0 inside the AgentCore container "
        "(AGENTRFT_BIND_ALL=1).",
    ),
    reward: str = typer.Option(None, "--reward", help="A named reward replacing the task's."),
) -> None:
    """Serve /invocations and /ping for TASK, as the AgentCore runtime does."""
    from agentrft.backends.sagemaker.runtime.main import serve_forever

    serve_forever(task=task, port=port, host=host, reward=reward)


def deploy(
    task: str = typer.Option(..., "--task", help="Task name (see `agentrft tasks`)."),
    role_arn: str = typer.Option(
        None,
        "--role-arn",
        help="Runtime execution role, trusted by bedrock-agentcore.amazonaws.com with "
        "AmazonSageMakerJobRuntimeAccess. Required unless --dry-run.",
    ),
    name: str = typer.Option(None, "--name", help="Runtime name (default agentrft_<task>)."),
    region: str = typer.Option(None, "--region", help="AWS region (default: from the session)."),
    bucket: str = typer.Option(
        None, "--s3", help="s3://bucket/prefix for the code bundle (same region as the job)."
    ),
    reward: str = typer.Option(None, "--reward", help="A named reward replacing the task's."),
    workdir: Path = typer.Option(
        None, "--workdir", help="Where to build the bundle (default: a temporary directory)."
    ),
    no_deps: bool = typer.Option(
        False, "--no-deps", help="Bundle only agentrft and the plugin (offline, for inspection)."
    ),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait until the runtime is READY."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show every step and request without calling AWS."
    ),
    force: bool = typer.Option(
        False, "--force", help="Update even while SageMaker AI jobs run (they may fail)."
    ),
    skip_preflight: bool = typer.Option(
        False, "--skip-preflight", help="Deploy without checking credentials and the role."
    ),
    build_only: bool = typer.Option(
        False, "--build-only", help="Build the zip in --workdir and stop (calls no AWS API)."
    ),
    env: list[str] = typer.Option(
        None,
        "--env",
        help="KEY=VALUE set in the runtime's environment (repeatable), e.g. a task's "
        "simulated-user model. Stored in the runtime's configuration: --dry-run shows "
        "credential-like values as ***.",
    ),
    platform: str = typer.Option(
        "manylinux2014_aarch64",
        "--platform",
        help="Wheel platform of the dependencies. Another one (manylinux2014_x86_64) only "
        "with --build-only, to try the bundle on this machine (scripts/bundle_check.sh).",
    ),
) -> None:
    """Build the code bundle for TASK and create or update its AgentCore runtime.

    Never redeploy while a job uses the runtime: in-flight rollouts lose their sampling
    requests and the service fails the job.
    """
    from agentrft.backends.sagemaker.jobs.deploy_command import deploy_command

    deploy_command(
        task=task,
        role_arn=role_arn,
        name=name,
        region=region,
        s3_uri=bucket,
        reward=reward,
        workdir=workdir,
        no_deps=no_deps,
        wait=wait,
        dry_run=dry_run,
        force=force,
        skip_preflight=skip_preflight,
        build_only=build_only,
        platform=platform,
        env=env,
    )


def smoke_test(
    runtime_arn: str = typer.Option(..., "--runtime-arn", help="The AgentCore runtime ARN."),
    task: str = typer.Option(
        None, "--task", help="Task whose dataset gives the prompt (default: from the ARN name)."
    ),
    region: str = typer.Option(None, "--region", help="Default: the region in the ARN."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for the runtime."),
) -> None:
    """Invoke the runtime with a smoke payload (a fake job in your account) and explain it."""
    from agentrft.backends.sagemaker.jobs.smoke import smoke_test_command

    smoke_test_command(runtime_arn=runtime_arn, task=task, region=region, timeout=timeout)
