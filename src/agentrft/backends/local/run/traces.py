"""Episodes as MLflow traces, in the run's own MLflow store (`mlflow ui` shows them).

One trace per episode: a root span `episode TASK` (its input the opening messages, its
output the reward), a `policy turn N` span (LLM) per assistant reply and a span per tool
call (TOOL) under it, with the reply and the tool's answer. The reward is the trace's
`reward` feedback (an MLflow assessment) and the trace's tags say where the episode comes
from: split (train, before, after SFT, after), step, task, outcome tier, solved, failure
kinds. The row's prompt string is never put in a trace (it may hold the answer); hidden
values stay out as they stay out of the policy's messages. Every text goes through
`agentrft.redact` first, as every file a run writes does: a key in a tool reply or a
prompt never reaches the store.

The times of the spans are laid out from what the trajectory recorded (each turn's
latency, the episode's wall time and tool time), ending when the trace is written: a
trajectory keeps durations, not clock times.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from agentrft.redact import scrub, scrub_text
from agentrft.trajectory import Trajectory

__all__ = ["log_episode_traces"]

log = logging.getLogger(__name__)

#: Longest text kept per span input or output (a trace is for reading, not replay:
#: trajectories.jsonl keeps everything).
MAX_TEXT = 8000


def log_episode_traces(
    mlflow: Any, experiment_id: str, trajectories: Sequence[Trajectory], *, split: str,
    step: int | None = None, run_id: str | None = None,
) -> list[str]:  # fmt: skip
    """Log `trajectories` as traces of `experiment_id` (linked to `run_id`); returns their
    ids. A trace that fails to log is a warning: tracing never stops a run."""
    from mlflow import MlflowClient

    client = MlflowClient()
    ids = []
    for t in trajectories:
        try:
            ids.append(_log_one(client, experiment_id, t, split=split, step=step, run_id=run_id))
        except Exception as exc:  # a trace is a view of the run, not the run
            log.warning("episode %s was not logged as an MLflow trace: %s", t.id, exc)
    if ids:
        mlflow.flush_trace_async_logging(terminate=False)  # the feedback needs them stored
        for trace_id, t in zip(ids, trajectories, strict=False):
            if t.reward is not None:
                try:
                    mlflow.log_feedback(trace_id=trace_id, name="reward", value=t.reward.total)
                except Exception as exc:  # the trace stands without it
                    log.warning("trace %s: the reward was not logged: %s", trace_id, exc)
    return ids


def _log_one(
    client: Any, experiment_id: str, t: Trajectory, *, split: str, step: int | None,
    run_id: str | None,
) -> str:  # fmt: skip
    end = time.time_ns()
    wall = max(int(t.wall_s * 1e9), 1_000)
    start = end - wall
    opening = [_message(m) for m in t.messages[: _first_assistant(t)]]
    tags = {
        "agentrft.split": split,
        "agentrft.task": t.task,
        "agentrft.outcome": (t.reward.outcome if t.reward else "") or "-",
        "agentrft.solved": str(bool(t.solved)).lower(),
        "agentrft.failures": ",".join(sorted({f.kind for f in t.failures})) or "-",
        "agentrft.episode": t.id,
    }
    if step is not None:
        tags["agentrft.step"] = str(step)
    if t.instance_id:
        tags["agentrft.instance"] = t.instance_id
    if run_id:
        tags["mlflow.sourceRun"] = run_id
    root = client.start_trace(
        f"episode {t.task}", inputs={"messages": opening}, experiment_id=experiment_id,
        start_time_ns=start, tags=scrub(tags), span_type="AGENT",
    )  # fmt: skip
    trace_id = root.trace_id
    clock = start
    tool_share = (t.tool_s / max(t.tool_calls, 1)) if t.tool_calls else 0.0
    for turn in t.turns:
        took = max(int(turn.latency_s * 1e9), 1_000)
        reply = _message(turn.assistant)
        span = client.start_span(
            f"policy turn {turn.index + 1}", trace_id=trace_id, parent_id=root.span_id,
            span_type="LLM", inputs={"tools_offered": len(turn.tools or t.tools)},
            start_time_ns=clock,
            attributes={"finish_reason": turn.finish_reason or "",
                        "completion_tokens": turn.completion_tokens},
        )  # fmt: skip
        client.end_span(trace_id=trace_id, span_id=span.span_id, outputs=reply,
                        end_time_ns=clock + took)  # fmt: skip
        clock += took
        replies = {m.tool_call_id: m for m in turn.tool_messages}
        for call in turn.assistant.tool_calls or []:
            answer = replies.get(call.id)
            took = max(int(tool_share * 1e9), 1_000)
            span = client.start_span(
                call.name, trace_id=trace_id, parent_id=root.span_id, span_type="TOOL",
                inputs={"arguments": _clip(call.arguments)}, start_time_ns=clock,
            )  # fmt: skip
            client.end_span(trace_id=trace_id, span_id=span.span_id,
                            outputs={"reply": _clip(answer.content or "") if answer else None},
                            end_time_ns=clock + took)  # fmt: skip
            clock += took
    reward = t.reward.model_dump() if t.reward else None
    client.end_trace(trace_id=trace_id, outputs=scrub({"reward": reward, "stop": t.stop_reason}),
                     end_time_ns=max(end, clock))  # fmt: skip
    return str(trace_id)


def _first_assistant(t: Trajectory) -> int:
    return next((i for i, m in enumerate(t.messages) if m.role == "assistant"), len(t.messages))


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": _clip(m.content or "")}
    if m.tool_calls:
        out["tool_calls"] = [{"name": c.name, "arguments": _clip(c.arguments)}
                             for c in m.tool_calls]  # fmt: skip
    return out


def _clip(text: str) -> str:
    """`text` scrubbed of secrets, and cut at `MAX_TEXT` characters."""
    text = scrub_text(text)
    return text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT]} … [{len(text) - MAX_TEXT} more]"
