"""The token-level sampler interface both local samplers implement (transformers, vLLM).

Tokens in, tokens out: the caller renders the chat template itself and keeps the ids, so
training sees exactly what was sampled (re-tokenizing decoded text changes ids). Adapters
are addressed by name; a new policy version is loaded under a new name (a fresh name also
defeats a prefix cache that would outlive the weights).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentrft.policy import Sampling

FinishReason = Literal["stop", "length"]


class Generation(BaseModel):
    """One sampled continuation of a token prompt."""

    token_ids: list[int] = Field(description="Sampled ids, the stop token included if any.")
    logprobs: list[float] = Field(
        description="Log-probability of each sampled id under the sampling distribution "
        "(after temperature), one per token_ids entry."
    )
    finish_reason: FinishReason = Field(
        description="stop: an end-of-turn/eos token (or a stop string) ended it; "
        "length: max_tokens or the model's context ran out."
    )


class SamplerError(RuntimeError):
    """The sampler could not serve a request (server down, unknown adapter, bad prompt)."""


@runtime_checkable
class TokenSampler(Protocol):
    """Samples completions of token prompts, optionally through a named LoRA adapter."""

    async def generate(
        self, prompt_ids: list[int], sampling: Sampling, *, adapter: str | None = None
    ) -> Generation:
        """Sample one continuation of `prompt_ids`; `adapter=None` means the base model.

        Stops at the tokenizer's end-of-turn / eos ids, at `sampling.stop` strings, or after
        `sampling.max_tokens` tokens.
        """
        ...

    async def load_adapter(self, name: str, path: str) -> None:
        """Make the PEFT adapter saved at `path` available as `name` (replacing it)."""
        ...

    async def unload_adapter(self, name: str) -> None:
        """Forget adapter `name` (no error if unknown)."""
        ...

    async def aclose(self) -> None:
        """Release the model / server; safe to call twice."""
        ...
