"""Plugin registration for the sagemaker backend: the backend class and its CLI commands.

Imports stay inside the hooks' bodies' targets: `backend` and the CLI modules import no
boto3 at module level, so `agentrft --help` makes no AWS call.
"""

from __future__ import annotations

from typing import Any

from agentrft.hookspecs import hookimpl


@hookimpl
def agentrft_backends() -> list[type]:
    from agentrft.backends.sagemaker.backend import SageMakerBackend

    return [SageMakerBackend]


@hookimpl
def agentrft_cli(app: Any) -> None:
    from agentrft.backends.sagemaker.cli import jobs, runtime

    runtime.register(app)
    jobs.register(app)
