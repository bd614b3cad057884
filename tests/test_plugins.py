"""Plugin discovery through real entry points: a broken plugin is reported (distribution,
entry point, error) while the others still load; lookups suggest the nearest name."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from agentrft.plugins import PluginError, get_plugins, load_plugins, use_plugins

GOOD_MODULE = '''
import json
from typing import ClassVar

import agentrft
from agentrft import Environment, RewardResult, Task, tool


class EchoEnv(Environment):
    def __init__(self, word):
        super().__init__()
        self.word = word
        self.said = None

    @tool
    def say(self, text: str) -> str:
        """Say a word.

        Args:
            text: the word.
        """
        self.said = text
        self.done = True
        return "ok"


class EchoTask(Task):
    name: ClassVar[str] = "echo_fake"
    description: ClassVar[str] = "Say the word back."

    def parse(self, prompt):
        return prompt

    def environment(self, instance):
        return EchoEnv(instance)

    def user_prompt(self, instance):
        return f"Say {instance}."

    def reward(self, env, trajectory):
        ok = env.said == env.word
        return RewardResult(total=float(ok), solved=ok, outcome="ok" if ok else "wrong")


@agentrft.hookimpl
def agentrft_tasks():
    return [EchoTask]
'''


def _fake_distribution(root: Path, dist: str, entry_point: str, module: str, source: str) -> None:
    """An installed distribution as importlib.metadata sees it: dist-info + entry_points.txt."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[agentrft]\n{entry_point} = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _fake_distribution(
        tmp_path, "agentrft_fake_good", "fake_good", "agentrft_fake_good_mod", GOOD_MODULE
    )
    _fake_distribution(
        tmp_path,
        "agentrft_fake_broken",
        "fake_broken",
        "agentrft_fake_broken_mod",
        "raise ImportError('this plugin needs numpy>=99')\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    for mod in ("agentrft_fake_good_mod", "agentrft_fake_broken_mod"):
        sys.modules.pop(mod, None)


def test_broken_plugin_is_reported_while_others_load(fake_site: Path) -> None:
    plugins = load_plugins()
    assert "echo_fake" in plugins.task_classes()
    assert plugins.task("echo_fake").description == "Say the word back."
    assert plugins.task_sources()["echo_fake"] == "agentrft_fake_good"

    (broken,) = [b for b in plugins.broken if b.entry_point == "fake_broken"]
    assert broken.distribution == "agentrft_fake_broken"
    assert broken.value == "agentrft_fake_broken_mod"
    assert broken.error == "ImportError: this plugin needs numpy>=99"
    text = broken.explain()
    assert "'fake_broken'" in text and "'agentrft_fake_broken'" in text
    assert "pip uninstall agentrft_fake_broken" in text


def test_unknown_task_names_the_broken_plugin_and_suggests(fake_site: Path) -> None:
    plugins = load_plugins()
    with pytest.raises(PluginError) as exc:
        plugins.task("echo_fak")
    msg = str(exc.value)
    assert "task 'echo_fak' not found" in msg
    assert "Did you mean 'echo_fake'?" in msg
    assert "fake_broken" in msg and "numpy>=99" in msg


def test_extra_plugins_without_entry_points(tiny_plugins) -> None:
    assert list(tiny_plugins.task_classes()) == ["counter", "find_number", "inverted_number"]
    assert tiny_plugins.broken == []


def test_use_plugins_swaps_and_restores() -> None:
    before = get_plugins()
    mine = load_plugins(entry_points=False)
    with use_plugins(mine):
        assert get_plugins() is mine
    assert get_plugins() is before


def test_named_rewards_and_their_task_scope(tiny_plugins) -> None:
    assert tiny_plugins.reward("fewest_guesses", "find_number").__name__ == "fewest_guesses"
    with pytest.raises(PluginError, match="applies to tasks \\['find_number'\\], not 'counter'"):
        tiny_plugins.reward("fewest_guesses", "counter")
    with pytest.raises(PluginError, match="Did you mean 'fewest_guesses'"):
        tiny_plugins.reward("fewest_guess")


def test_missing_backend_names_the_extra(tiny_plugins) -> None:
    with pytest.raises(PluginError, match=r"pip install 'agentrft\[sagemaker\]'"):
        tiny_plugins.backend("sagemaker")
