"""The local engine's model as a `Policy`, for `agentrft play --backend local [--adapter DIR]`:
play one episode with the model a run trained, turn by turn, through the one agent loop."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft.messages import Message
from agentrft.policy import Completion, Policy, Sampling

if TYPE_CHECKING:
    from agentrft.backends.local.settings import LocalRunConfig

#: The server-side name the played adapter is loaded under.
PLAY_ADAPTER = "play-adapter"


def check_adapter_dir(adapter: str | None) -> None:
    """A LoRA adapter must be a PEFT directory (its adapter_config.json says how to load it)."""
    if adapter and not (Path(adapter) / "adapter_config.json").is_file():
        raise FileNotFoundError(
            f"adapter {adapter} is not a PEFT adapter directory (no adapter_config.json); "
            "pass a run's final_adapter/ or a checkpoint's adapter/"
        )


class EnginePolicy(Policy):
    """`local.model` (the tiny model on CPU when unset) with `local.adapter` loaded.

    The engine (sampler and chat template) starts on the first call, so a bad adapter path
    fails at once and building the policy costs nothing; `aclose()` stops it. Each episode
    gets the engine's token-exact session, as in training and evaluation.
    """

    def __init__(self, config: LocalRunConfig) -> None:
        from agentrft.backends.local.run.spec import eval_config

        # The tiny model on CPU: the same preset as a run's before/after evaluation.
        self.config = eval_config(config)
        self.adapter: str | None = self.config.local.adapter  # type: ignore[attr-defined]
        check_adapter_dir(self.adapter)
        model = self.config.local.model or f"tiny model ({self.config.local.tiny_model})"  # type: ignore[attr-defined]
        self.name = Path(self.adapter).name if self.adapter else Path(model).name
        self._engine: Any = None
        self._policy: Any = None

    async def ready(self) -> Any:
        """The engine's `TokenPolicy`, started on first use."""
        if self._policy is None:
            from agentrft.backends.local.inference.chat_tokens import TokenPolicy
            from agentrft.backends.local.run.engine import SamplerSettings, make_engine

            engine = make_engine(SamplerSettings.of(self.config))
            self._engine = engine
            name = None
            if self.adapter:
                name = PLAY_ADAPTER
                await engine.sampler.load_adapter(name, str(Path(self.adapter).resolve()))
            self._policy = TokenPolicy(
                engine.sampler, engine.chat, adapter=name, seed=self.config.seed + 7
            )
        return self._policy

    def session(self) -> Policy:
        return _Session(self)

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        return await self.session().complete(messages, tools, sampling)

    async def aclose(self) -> None:
        engine, self._engine, self._policy = self._engine, None, None
        if engine is not None:
            await engine.aclose()


class _Session(Policy):
    """One episode: the engine's token session, made once the engine runs."""

    def __init__(self, parent: EnginePolicy) -> None:
        self.parent = parent
        self.name = parent.name
        self._inner: Policy | None = None

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        if self._inner is None:
            self._inner = (await self.parent.ready()).session()
        return await self._inner.complete(messages, tools, sampling)
