"""Public helpers for testing agentrft tasks, policies and backends.

- `FakeOpenAIServer`: a loopback OpenAI-compatible chat-completions server driven by a
  script, with fault injection (`http_error`, `rate_limited`, `slow`, `malformed_body`,
  `disconnect`), `sequence` for scripted orders of replies, and request recording.
- `FindNumberTask` and `CounterTask`: tiny tool tasks (with scripts usable by both a
  `ScriptedPolicy` and the fake server); `UnlockTask`, whose environment offers a tool
  mid-episode (`Environment.tools_changed`).
- `free_port`, `wait_for_port`: a loopback port for a server process a test starts, and a
  wait until it listens that fails clearly when the process exits first.
- `group_judge`, `rubric_judge`, `judge_body`, `shown_attempts`, `graded_view`: scripts that make the fake
  server a group-relative or rubric judge with exact token usage.

Nothing here is imported by `agentrft` itself.
"""

from agentrft.testing.fake_server import FakeOpenAIServer, RecordedRequest
from agentrft.testing.judges import (
    graded_view,
    group_judge,
    judge_body,
    rubric_judge,
    shown_attempts,
)
from agentrft.testing.loopback import free_port, wait_for_port
from agentrft.testing.replies import (
    Disconnect,
    HTTPFault,
    RawBody,
    ReplySequence,
    Slow,
    disconnect,
    http_error,
    malformed_body,
    rate_limited,
    sequence,
    slow,
)
from agentrft.testing.tasks import (
    CounterEnv,
    CounterTask,
    FindNumberEnv,
    FindNumberTask,
    UnlockEnv,
    UnlockTask,
    counter_script,
    find_number_expert,
)

__all__ = [
    "CounterEnv",
    "CounterTask",
    "Disconnect",
    "FakeOpenAIServer",
    "FindNumberEnv",
    "FindNumberTask",
    "HTTPFault",
    "RawBody",
    "RecordedRequest",
    "ReplySequence",
    "Slow",
    "UnlockEnv",
    "UnlockTask",
    "counter_script",
    "disconnect",
    "find_number_expert",
    "free_port",
    "graded_view",
    "group_judge",
    "http_error",
    "judge_body",
    "malformed_body",
    "rate_limited",
    "rubric_judge",
    "sequence",
    "shown_attempts",
    "slow",
    "wait_for_port",
]
