"""The AgentCore runtime app: plays one rollout per /invocations call for any task.

Per invocation: parse the payload, play the ONE agent loop (`run_episode`) against the job
runtime's OpenAI-compatible endpoint (`{endpoint}/v1/chat/completions`, model `default`,
a bearer token, the two `X-Amzn-SageMaker-*` headers, exactly the sampling fields
`inferenceParams` set), score it, report CompleteRollout then UpdateReward, and answer
`{"reward": x}`. UpdateReward carries the task's per-turn rewards when it gave one finite
value per policy call, else the episode's total.

The answer is ALWAYS a reward: a rollout that errors or never reaches the policy model can
fail the whole job, so a bad payload, a prompt the task cannot parse, an unreachable model
or a bug anywhere in here all end with the task's lowest tier.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bedrock_agentcore import BedrockAgentCoreApp
from starlette.responses import JSONResponse, Response

from agentrft.backends.sagemaker.runtime.auth import (
    BearerTokenProvider,
    RolloutToken,
    TokenProviders,
)
from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter, ReportOutcome
from agentrft.backends.sagemaker.runtime.payload import (
    POLICY_MODEL,
    SAMPLING_FIELDS,
    RolloutPayload,
    parse_payload,
)
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.policy import Policy
from agentrft.rollout import RewardFn, run_episode
from agentrft.task import Task
from agentrft.tool_threads import ToolThreads
from agentrft.trajectory import Trajectory

log = logging.getLogger("agentrft.runtime")

#: Builds the policy for one rollout from its payload and the region's token provider.
PolicyFactory = Callable[[RolloutPayload, BearerTokenProvider], Policy]

#: Used only if the task's own lowest_reward() is broken.
_FALLBACK_LOWEST = -1.0
#: One policy request may generate thousands of tokens on a busy job: be patient.
POLICY_TIMEOUT_S = 300.0
#: Retries of 429 / 5xx / timeouts / connection errors (plus one re-sign on 401/403).
POLICY_MAX_RETRIES = 4
#: Threads that send CompleteRollout / UpdateReward (the service's rollout concurrency).
REPORT_THREADS = 64
#: Threads for sync tool calls: one per concurrent rollout, so one never waits for another's.
TOOL_THREADS = REPORT_THREADS


class JobRuntimePolicy(OpenAIPolicy):
    """The core OpenAI-compatible client, sending the job's sampling and no other.

    The agent loop always hands the client a full `Sampling`; the job runtime must get
    only what the job set (`inferenceParams`), so its own settings (`sampling_max_tokens`
    of the job, the recipe's defaults) decide the rest. Every request body passes through
    `job_body`, so neither a default nor a task's own setting reaches it.
    """

    def __init__(
        self, *args: Any, inference_params: Mapping[str, float | int], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.inference_params = dict(inference_params)

    def job_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with the sampling fields replaced by exactly the job's."""
        out = {k: v for k, v in body.items() if k not in SAMPLING_FIELDS}
        out.update(self.inference_params)
        return out

    async def _attempt(self, body: dict[str, Any]) -> Any:
        return await super()._attempt(self.job_body(body))


def openai_policy_factory(
    payload: RolloutPayload,
    tokens: BearerTokenProvider,
    *,
    max_retries: int = POLICY_MAX_RETRIES,
    backoff_base_s: float = 0.5,
    timeout_s: float = POLICY_TIMEOUT_S,
) -> Policy:
    """The job runtime's policy: the core OpenAI-compatible client, bearer-authenticated.

    Requests go to `{endpoint}/v1/chat/completions` with model `default`, the rollout's two
    `X-Amzn-SageMaker-*` headers, the sampling fields `inferenceParams` set (none when it
    is absent) and a bearer token re-signed once on a 401/403.
    """
    return JobRuntimePolicy(
        POLICY_MODEL,
        payload.base_url,
        token_provider=RolloutToken(tokens),
        headers=payload.headers(),
        timeout_s=timeout_s,
        max_retries=max_retries,
        backoff_base_s=backoff_base_s,
        name="sagemaker-job-runtime",
        inference_params=payload.inference_params,
    )


class RolloutRunner:
    """Plays and reports rollouts for one task. Shared by all invocations of the process."""

    def __init__(
        self,
        task: Task[Any],
        *,
        reward_fn: RewardFn | None = None,
        policy_factory: PolicyFactory = openai_policy_factory,
        tokens: TokenProviders | None = None,
        reporter: JobRuntimeReporter | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.task = task
        self.reward_fn = reward_fn
        self.policy_factory = policy_factory
        self.tokens = tokens or TokenProviders()
        self.reporter = reporter or JobRuntimeReporter()
        self.environ = environ
        self.lowest = _lowest_total(task)
        # Reports block on the network (and on botocore's retries): their own threads, so
        # a slow job runtime never queues behind the loop's small default executor.
        self._report_pool = ThreadPoolExecutor(REPORT_THREADS, thread_name_prefix="job-report")
        # Sync tools run here, not on the worker loop every rollout shares: a blocking or
        # hung tool stalls only its own rollout (which its deadline then ends).
        self.tool_threads = ToolThreads(TOOL_THREADS, name="rollout-tool")

    async def handle(self, raw: Any) -> dict[str, Any]:
        """Play, score and report one rollout; always returns `{"reward": float}`."""
        try:
            return await self._handle(raw)
        except Exception:  # the last line of defence: a rollout never crashes a job
            log.exception("rollout failed inside the runtime; answering the lowest reward")
            return {"reward": self.lowest}

    async def _handle(self, raw: Any) -> dict[str, Any]:
        started = time.perf_counter()
        payload = parse_payload(raw, self.environ)
        traj: Trajectory | None = None
        if payload.can_play:
            try:
                traj = await self._play(payload)
            except Exception:  # a broken client factory: still report, still answer
                log.exception("rollout %s could not be played", payload.trajectory_id)

        reached = bool(traj and traj.turns)
        reward = self.lowest
        rewards = [reward]
        if reached and traj is not None and traj.reward is not None:
            reward = _finite_or(traj.reward.total, self.lowest)
            rewards = reported_rewards(traj, reward, payload.trajectory_id)

        outcomes: list[ReportOutcome] = []
        if payload.can_report:
            assert payload.endpoint and payload.region and payload.job_arn
            assert payload.trajectory_id
            report = functools.partial(
                self.reporter.report,
                endpoint=payload.endpoint,
                region=payload.region,
                job_arn=payload.job_arn,
                trajectory_id=payload.trajectory_id,
                rewards=rewards,
                # A rollout that never reached the model has no turns to train on.
                status="ready" if reached else "failed",
            )
            loop = asyncio.get_running_loop()
            outcomes = await loop.run_in_executor(self._report_pool, report)
        self._log(payload, traj, reward, outcomes, time.perf_counter() - started)
        answer: dict[str, Any] = {"reward": reward}
        if payload.diagnose:
            answer["diagnostics"] = _diagnostics(payload, traj, reached, outcomes)
        return answer

    async def _play(self, payload: RolloutPayload) -> Trajectory:
        assert payload.prompt is not None and payload.region
        policy = self.policy_factory(payload, self.tokens.for_region(payload.region))
        try:
            return await run_episode(
                self.task,
                payload.prompt,
                policy,
                sampling=payload.sampling,
                reward_fn=self.reward_fn,
                episode_id=payload.trajectory_id,
                metadata={"job_arn": payload.job_arn, "trajectory_id": payload.trajectory_id},
                tool_threads=self.tool_threads,
            )
        finally:
            try:
                await policy.aclose()
            except Exception:
                log.warning("closing the policy client failed", exc_info=True)

    def _log(
        self,
        payload: RolloutPayload,
        traj: Trajectory | None,
        reward: float,
        outcomes: list[ReportOutcome],
        wall_s: float,
    ) -> None:
        # No prompt, no token: the prompt carries hidden fields, the token is a credential.
        parts = [
            f"rollout={payload.trajectory_id or '-'}",
            f"job={payload.job_arn or '-'}",
            f"reward={reward:.4g}",
            f"turns={len(traj.turns) if traj else 0}",
            f"stop={traj.stop_reason if traj else 'not played'}",
            f"wall={wall_s:.2f}s",
        ]
        if payload.problems:
            parts.append("payload: " + "; ".join(payload.problems))
        if traj is not None and traj.failures:
            first = traj.failures[0]
            parts.append(f"first failure: {first.kind}: {first.detail[:160]}")
        for o in outcomes:
            parts.append(
                f"{o.operation}: ok" if o.ok else f"{o.operation}: {o.status} {o.code}: {o.message}"
            )
        bad = bool(payload.problems) or any(not o.ok for o in outcomes)
        log.log(logging.WARNING if bad else logging.INFO, " | ".join(parts))


def build_app(
    task: Task[Any],
    *,
    reward_fn: RewardFn | None = None,
    policy_factory: PolicyFactory = openai_policy_factory,
    tokens: TokenProviders | None = None,
    reporter: JobRuntimeReporter | None = None,
    environ: Mapping[str, str] | None = None,
) -> BedrockAgentCoreApp:
    """The Starlette app AgentCore runs: POST /invocations plays a rollout, GET /ping."""
    runner = RolloutRunner(
        task,
        reward_fn=reward_fn,
        policy_factory=policy_factory,
        tokens=tokens,
        reporter=reporter,
        environ=environ,
    )
    app = _RolloutApp(runner)

    # The entrypoint decorator must stay OUTERMOST: anything wrapped around it is never
    # registered, and the service times out every invocation after 30 s (the sample's bug).
    @app.entrypoint
    async def invocations(payload: Any) -> dict[str, Any]:
        busy = app.add_async_task("rollout")  # /ping says HealthyBusy while rollouts run
        try:
            return await runner.handle(payload)
        finally:
            app.complete_async_task(busy)

    return app


class _RolloutApp(BedrockAgentCoreApp):
    """BedrockAgentCoreApp that answers a reward even for bodies it cannot hand over.

    The base app rejects a body that is not JSON with a 400 before any handler runs, and
    lets a body nesting past the recursion limit out as a plain-text 500; the service must
    still get a reward, so every error response (and every error) becomes the lowest tier.
    """

    def __init__(self, runner: RolloutRunner) -> None:
        super().__init__()
        self.runner = runner

    async def _handle_invocation(self, request: Any) -> Response:
        try:
            response: Response = await super()._handle_invocation(request)
        except Exception as exc:  # the body's JSON nests past the recursion limit, or an
            # integer passes Python's 4,300 digits: the base app lets both out as a 500
            log.warning(
                "invocation body could not be decoded (%s: %s); answering the lowest reward",
                type(exc).__name__,
                str(exc)[:200],
            )
            return JSONResponse({"reward": self.runner.lowest})
        if response.status_code >= 400:
            log.warning(
                "invocation answered HTTP %s before the rollout ran (body not JSON?); "
                "answering the lowest reward",
                response.status_code,
            )
            return JSONResponse({"reward": self.runner.lowest})
        return response


def reported_rewards(traj: Trajectory, total: float, rollout: str | None = None) -> list[float]:
    """What UpdateReward carries: one reward per policy call, or the episode's total.

    A task's `RewardResult.per_turn` goes as it is when it has exactly one finite value per
    policy call this rollout made (the service trains turn i with reward i, e.g. under
    `advantage_method=group_based_per_turn`); any other list would credit the wrong turns,
    so it becomes `[total]` with a warning.
    """
    per_turn = traj.reward.per_turn if traj.reward is not None else None
    if not per_turn:
        return [total]
    calls = len(traj.turns)
    problem = None
    if len(per_turn) != calls:
        problem = f"{len(per_turn)} per-turn rewards for {calls} policy calls"
    else:
        values = [_finite_or(r, math.nan) for r in per_turn]
        bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
        if bad:
            problem = f"per-turn reward {bad[0]} = {repr(per_turn[bad[0]])[:40]}, not finite"
        else:
            return values
    log.warning(
        "rollout %s: task %r gave %s; reporting the episode total %.4g instead",
        rollout or "-",
        traj.task,
        problem,
        total,
    )
    return [total]


def _diagnostics(
    payload: RolloutPayload,
    traj: Trajectory | None,
    reached: bool,
    outcomes: list[ReportOutcome],
) -> dict[str, Any]:
    """What `agentrft smoke-test` explains: only sent when the payload asks (`diagnose`)."""
    return {
        "problems": list(payload.problems),
        "job_arn": payload.job_arn,
        "trajectory_id": payload.trajectory_id,
        "region": payload.region,
        "endpoint": payload.endpoint,
        "model_reached": reached,
        "turns": len(traj.turns) if traj else 0,
        "stop_reason": traj.stop_reason if traj else "not played",
        "failures": [f"{f.kind}: {f.detail[:300]}" for f in (traj.failures if traj else [])],
        "reports": [o.to_dict() for o in outcomes],
    }


def _lowest_total(task: Task[Any]) -> float:
    try:
        return _finite_or(task.lowest_reward().total, _FALLBACK_LOWEST)
    except Exception:
        log.exception("task %r: lowest_reward() failed; using %s", task.name, _FALLBACK_LOWEST)
        return _FALLBACK_LOWEST


def _finite_or(value: Any, fallback: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return fallback
    return value if math.isfinite(value) else fallback
