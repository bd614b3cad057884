"""Process entry point of the runtime app: locally (`agentrft runtime serve`) and in AgentCore.

In the deployed runtime the bundle's `main.py` calls `main()`, which reads the task name from
`AGENTRFT_TASK` (set by `agentrft deploy`; `a,b` for a runtime that serves several tasks) and listens on 0.0.0.0:8080 as AgentCore expects.
Locally the server binds 127.0.0.1 unless `--host` or `AGENTRFT_BIND_ALL=1` says otherwise.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from agentrft.redact import ScrubFilter

TASK_ENV = "AGENTRFT_TASK"
REWARD_ENV = "AGENTRFT_REWARD"
BIND_ALL_ENV = "AGENTRFT_BIND_ALL"
PORT_ENV = "AGENTRFT_PORT"
#: AgentCore sends traffic to this port [model: protocolConfiguration default, sdk].
AGENTCORE_PORT = 8080


def load_app(task_name: str, reward: str | None = None) -> Any:
    """Resolve the task (and optional named reward) through the plugins; build the app."""
    try:
        from agentrft.backends.sagemaker.runtime.app import build_app
    except ImportError as exc:
        raise SystemExit(
            f"the runtime app needs the sagemaker extra ({exc.name or exc} is missing): "
            "pip install 'agentrft[sagemaker]'"
        ) from None
    from agentrft.mixture import MixtureTask
    from agentrft.plugins import get_plugins, resolve_task

    plugins = get_plugins()
    # `wordle,expense_report`: one runtime serves several tasks, each row routed to its
    # own by the task name inside its prompt string (agentrft.mixture).
    task = resolve_task(task_name)
    if reward and isinstance(task, MixtureTask):
        raise SystemExit(
            f"{REWARD_ENV}={reward}: a named reward replaces one task's reward, but this "
            f"runtime serves {task.name}; deploy without --reward"
        )
    reward_fn = plugins.reward(reward, task_name) if reward else None
    return build_app(task, reward_fn=reward_fn)


def resolve_host(host: str | None, environ: dict[str, str] | None = None) -> str:
    """An explicit host wins; else 0.0.0.0 only inside the container (AGENTRFT_BIND_ALL)."""
    if host:
        return host
    env = os.environ if environ is None else environ
    bind_all = env.get(BIND_ALL_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
    return "0.0.0.0" if bind_all else "127.0.0.1"


def serve_forever(
    task: str, port: int = AGENTCORE_PORT, host: str | None = None, reward: str | None = None
) -> None:
    """Build the app for `task` and serve it with uvicorn until interrupted."""
    import uvicorn

    _configure_logging()
    app = load_app(task, reward)
    _scrub_log_handlers()  # building the app gave bedrock_agentcore its handler
    bind = resolve_host(host)
    logging.getLogger("agentrft.runtime").info(
        "serving task %r on http://%s:%d (POST /invocations, GET /ping)", task, bind, port
    )
    uvicorn.run(app, host=bind, port=port, log_level="warning", access_log=False)


def main() -> None:
    """Entry point of the deployed runtime (the bundle's main.py)."""
    task = os.environ.get(TASK_ENV, "").strip()
    if not task:
        sys.exit(
            f"{TASK_ENV} is not set: the runtime does not know which task to play. "
            f"Redeploy with `agentrft deploy --task NAME`, which sets it."
        )
    os.environ.setdefault(BIND_ALL_ENV, "1")  # inside AgentCore the port must be reachable
    serve_forever(
        task,
        port=int(os.environ.get(PORT_ENV, AGENTCORE_PORT)),
        reward=os.environ.get(REWARD_ENV) or None,
    )


def _configure_logging() -> None:
    # One line per rollout from agentrft; bedrock_agentcore logs through its own handler
    # (JSON), so the root logger stays unconfigured to avoid printing its lines twice.
    ours = logging.getLogger("agentrft")
    if not ours.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(ScrubFilter())
        ours.addHandler(handler)
        ours.setLevel(logging.INFO)
        ours.propagate = False
    for noisy in ("httpx", "httpcore", "openai", "botocore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _scrub_log_handlers() -> None:
    """Every handler that writes this process's records scrubs them first (`ScrubFilter`)."""
    names = ("", "agentrft", "bedrock_agentcore", "bedrock_agentcore.app")
    for handler in {h for name in names for h in logging.getLogger(name).handlers}:
        if not any(isinstance(f, ScrubFilter) for f in handler.filters):
            handler.addFilter(ScrubFilter())


if __name__ == "__main__":
    main()
