"""Policy clients: OpenAI-compatible HTTP, litellm, and scripted policies."""

from agentrft.policies.scripted import ScriptedPolicy, replay_policy

__all__ = ["ScriptedPolicy", "replay_policy"]
