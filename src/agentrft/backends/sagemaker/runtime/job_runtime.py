"""Reporting a rollout to the job runtime: CompleteRollout, then UpdateReward.

Both go through boto3's `sagemakerjobruntime` client (SigV4, `JobArn` in the
`X-Amzn-SageMaker-Job-Arn` header, a `ClientToken` per call for idempotency). Clients are
built once per (endpoint, region) from the process's one botocore session and shared by
every rollout: creating clients per rollout is what starved the sample's credential provider.

Nothing here raises: each call returns a `ReportOutcome` the runtime logs and, on request,
returns as diagnostics.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentrft.backends.sagemaker.runtime.auth import shared_session

#: botocore retry settings for reporting (throttling and 5xx are retried, same ClientToken).
REPORT_RETRIES = {"mode": "standard", "max_attempts": 4}
REPORT_TIMEOUTS = {"connect_timeout": 10, "read_timeout": 60}
#: Connections per client: every concurrent rollout reports at about the same time.
REPORT_POOL = 64

# Messages meaning "this trajectory was already completed" (a retried invocation) [sdk].
_ALREADY_DONE_MARKERS = ("not in valid status", "Cannot transition trajectory")


@dataclass
class ReportOutcome:
    """How one job-runtime call ended."""

    operation: str
    ok: bool
    status: int | None = None
    code: str | None = None
    message: str = ""

    @property
    def already_done(self) -> bool:
        return any(m in self.message for m in _ALREADY_DONE_MARKERS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "ok": self.ok,
            "status": self.status,
            "code": self.code,
            "message": self.message,
        }


class JobRuntimeReporter:
    """Sends CompleteRollout and UpdateReward for finished rollouts; thread-safe."""

    def __init__(
        self,
        session_factory: Callable[[], Any] = shared_session,
        client_config: dict[str, Any] | None = None,
    ) -> None:
        self._session_factory = session_factory
        self._client_config = client_config or {}
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str], Any] = {}

    def client(self, endpoint: str, region: str) -> Any:
        """The shared `sagemakerjobruntime` client for (endpoint, region)."""
        key = (endpoint, region)
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                import boto3
                from botocore.config import Config

                session = boto3.Session(botocore_session=self._session_factory())
                config = Config(
                    **{
                        "retries": REPORT_RETRIES,
                        "max_pool_connections": REPORT_POOL,
                        **REPORT_TIMEOUTS,
                        **self._client_config,
                    }
                )
                found = session.client(
                    "sagemakerjobruntime", region_name=region, endpoint_url=endpoint, config=config
                )
                self._clients[key] = found
            return found

    def report(
        self,
        *,
        endpoint: str,
        region: str,
        job_arn: str,
        trajectory_id: str,
        rewards: list[float],
        status: str = "ready",
    ) -> list[ReportOutcome]:
        """CompleteRollout(status), then UpdateReward(rewards). Never raises.

        UpdateReward still goes out after CompleteRollout says the trajectory is unknown
        (404) or already completed (a retried invocation); after any other failure it is
        skipped, since the service would refuse it for the same reason.
        """
        rewards = [_finite(r) for r in rewards]
        try:
            client = self.client(endpoint, region)
        except Exception as exc:
            return [
                ReportOutcome("CompleteRollout", False, code=type(exc).__name__, message=str(exc))
            ]
        complete = self._call(
            client,
            "CompleteRollout",
            client_method="complete_rollout",
            JobArn=job_arn,
            TrajectoryId=trajectory_id,
            Status=status,
        )
        outcomes = [complete]
        if complete.ok or complete.status == 404 or complete.already_done:
            outcomes.append(
                self._call(
                    client,
                    "UpdateReward",
                    client_method="update_reward",
                    JobArn=job_arn,
                    TrajectoryId=trajectory_id,
                    Rewards=rewards,
                )
            )
        return outcomes

    @staticmethod
    def _call(client: Any, operation: str, *, client_method: str, **params: Any) -> ReportOutcome:
        from botocore.exceptions import ClientError

        # One token per logical call: botocore reuses it on its own retries.
        params["ClientToken"] = uuid.uuid4().hex
        try:
            getattr(client, client_method)(**params)
            return ReportOutcome(operation, True, status=200)
        except ClientError as exc:
            err = exc.response.get("Error", {})
            meta = exc.response.get("ResponseMetadata", {})
            return ReportOutcome(
                operation,
                False,
                status=meta.get("HTTPStatusCode"),
                code=err.get("Code"),
                message=str(err.get("Message") or exc),
            )
        except Exception as exc:  # connection refused, timeouts, credential errors
            return ReportOutcome(operation, False, code=type(exc).__name__, message=str(exc))


def _finite(value: float) -> float:
    # The service takes doubles; NaN or inf would poison the advantage of the whole group.
    value = float(value)
    return value if math.isfinite(value) else 0.0
