"""The policy interface every chat-model client implements.

`Policy.complete(messages, tools, sampling)` returns one assistant turn. Clients that know
token ids (vLLM, the local sampler) also return them, which is what lets the local trainer
train on exactly what was sampled. A client that needs per-episode state (token-exact
multi-turn) returns a fresh object from `session()`; the loop calls it once per episode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, Field

from agentrft.messages import Message


class Sampling(BaseModel):
    """Sampling parameters, named as the managed service names them where it has a name."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = None
    stop: list[str] | None = None
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Passed through to the server unchanged."
    )


class ReplyTokens(BaseModel):
    """How one reply ended and its tokens, as a policy reports them; a trajectory's `Turn`
    keeps the same record. Ids and logprobs come from clients that return them (vLLM, the
    local sampler), so training sees exactly the sampled tokens."""

    finish_reason: str | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def reply_tokens(self) -> dict[str, Any]:
        """These fields alone (to copy them from a `Completion` into a `Turn`)."""
        return {name: getattr(self, name) for name in ReplyTokens.model_fields}


class Completion(ReplyTokens):
    """One assistant turn as returned by a policy."""

    message: Message
    #: The reply opened a tool call in the model's format and never closed it (a `<tool_call>`
    #: with no `</tool_call>`, not cut off by max_tokens), so no call could be read and the
    #: message is text. The loop records `unterminated_tool_call` on the turn: the text still
    #: goes to the environment as before, but the turn counts as a broken call, which a text
    #: task would otherwise take for an answer.
    unterminated_call: bool = False


class PolicyError(Exception):
    """A policy call failed for good (after the client's own retries).

    `kind` is a `FailureKind` name; the loop records it and ends the episode with a reward.
    """

    def __init__(self, message: str, kind: str = "policy_error", status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status


class Policy(ABC):
    """A chat model the agent loop can call."""

    name: str = "policy"

    @abstractmethod
    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        """Return the next assistant message for `messages`, offering `tools`."""

    def session(self) -> Policy:
        """The object to use for one episode (self unless the client keeps episode state)."""
        return self

    async def aclose(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release connections; safe to call twice."""
