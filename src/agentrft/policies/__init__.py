"""Policy clients: OpenAI-compatible HTTP, litellm, and scripted policies.

`OpenAIPolicy` and `LiteLLMPolicy` are imported on first use: their SDKs are slow to import
and `agentrft --help` must stay fast.
"""

from typing import TYPE_CHECKING, Any

from agentrft.policies.scripted import ScriptedPolicy, replay_policy

if TYPE_CHECKING:
    from agentrft.policies.litellm_client import LiteLLMPolicy
    from agentrft.policies.openai_client import OpenAIPolicy

__all__ = ["LiteLLMPolicy", "OpenAIPolicy", "ScriptedPolicy", "replay_policy"]

_LAZY = {
    "OpenAIPolicy": "agentrft.policies.openai_client",
    "LiteLLMPolicy": "agentrft.policies.litellm_client",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
