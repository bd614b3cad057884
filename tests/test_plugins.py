"""Plugin discovery through real entry points: a broken plugin is reported (distribution,
entry point, error) while the others still load; lookups suggest the nearest name."""

from __future__ import annotations

import asyncio
import importlib
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from agentrft import NamedReward, RewardResult, Task, hookimpl, run_sync
from agentrft.cli.app import app
from agentrft.plugins import PluginError, get_plugins, load_plugins, use_plugins
from agentrft.testing import FindNumberTask

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
    assert "Did you mean 'echo_fake'? Plugins that failed to load: " in msg
    assert "fake_broken" in msg and "numpy>=99" in msg and "?." not in msg


def test_a_task_whose_plugin_failed_to_load_is_named_as_that(fake_site: Path) -> None:
    """`--task fake_broken` (the plugin carries the name): the load failure is the answer,
    not a did-you-mean pointing at an unrelated installed task."""
    plugins = load_plugins()
    with pytest.raises(PluginError) as exc:
        plugins.task("fake_broken")
    msg = str(exc.value)
    assert msg.startswith("task 'fake_broken' not found: plugin 'fake_broken'")
    assert "numpy>=99" in msg and "Did you mean" not in msg and "?." not in msg
    assert "(installed tasks: " in msg and "echo_fake" in msg


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


# --- contracts that explain themselves ------------------------------------------------------

MISSPELT_MODULE = """
import agentrft


@agentrft.hookimpl
def agentrft_taks():
    return []
"""

DUPLICATE_MODULE = GOOD_MODULE.replace("Say the word back.", "Another echo.")


def test_a_misspelt_hook_breaks_its_plugin_by_name(fake_site: Path) -> None:
    _fake_distribution(
        fake_site, "agentrft_fake_typo", "fake_typo", "agentrft_fake_typo_mod", MISSPELT_MODULE
    )
    plugins = load_plugins()
    (typo,) = [b for b in plugins.broken if b.entry_point == "fake_typo"]
    assert typo.distribution == "agentrft_fake_typo"
    assert (
        "'agentrft_taks', which is not an agentrft hook; did you mean 'agentrft_tasks'?"
        in typo.error
    )
    assert "echo_fake" in plugins.task_classes()  # the others still load


class NotATask:
    name = "not_a_task"


class HalfTask(Task):  # parse, environment, reward missing (user_prompt has a default)
    name: ClassVar[str] = "half"


class Returns:
    def __init__(self, hook: str, value: Any) -> None:
        setattr(self, hook, hookimpl(lambda: value))
        self.__name__ = f"returns_{hook}"


@pytest.mark.parametrize(
    ("hook", "value", "error"),
    [
        ("agentrft_tasks", [NotATask], "which is not a Task subclass; return the classes"),
        ("agentrft_tasks", [FindNumberTask()], "which is not a Task subclass"),
        (
            "agentrft_tasks",
            [HalfTask],
            "task class HalfTask does not implement environment, parse, reward",
        ),
        ("agentrft_backends", [FindNumberTask], "which is not a Backend subclass"),
        ("agentrft_rewards", {"r": 3}, "reward 'r' is 3, not a NamedReward or callable"),
    ],
)
def test_a_plugin_returning_the_wrong_thing_is_broken_with_the_fix(
    hook: str, value: Any, error: str
) -> None:
    plugins = load_plugins(extra=[Returns(hook, value)], entry_points=False)
    {"agentrft_tasks": plugins.task_classes, "agentrft_backends": plugins.backend_classes,
     "agentrft_rewards": plugins.rewards}[hook]()  # fmt: skip
    (broken,) = plugins.broken
    assert broken.entry_point == f"returns_{hook}" and error in broken.error
    assert f"its {hook} hook" in broken.explain()


def test_function_attributes_on_a_reward_ask_for_a_named_reward() -> None:
    def scored(env: Any, trajectory: Any) -> RewardResult:
        return RewardResult(total=0.0)

    scored.tasks = {"find_number"}  # type: ignore[attr-defined]
    plugins = load_plugins(
        extra=[Returns("agentrft_rewards", {"scored": scored})], entry_points=False
    )
    assert plugins.rewards() == {}
    assert "wrap it instead: NamedReward(scored, tasks=..." in plugins.broken[0].error


def test_a_plain_function_is_a_reward_for_any_task() -> None:
    def anywhere(env: Any, trajectory: Any) -> RewardResult:
        return RewardResult(total=1.0)

    plugins = load_plugins(
        extra=[Returns("agentrft_rewards", {"anywhere": anywhere})], entry_points=False
    )
    reward = plugins.reward("anywhere", "counter")
    assert (
        isinstance(reward, NamedReward)
        and reward.fn is anywhere
        and reward(None, None).total == 1.0
    )
    with pytest.raises(TypeError, match="a set of names"):
        NamedReward(anywhere, tasks="wordle")


def test_two_distributions_with_one_task_name_are_both_named(fake_site: Path) -> None:
    _fake_distribution(
        fake_site, "agentrft_fake_twin", "fake_twin", "agentrft_fake_twin_mod", DUPLICATE_MODULE
    )
    plugins = load_plugins()
    with pytest.raises(PluginError) as info:
        plugins.task("echo_fake")
    msg = str(info.value)
    assert "task 'echo_fake' is provided twice" in msg
    assert "distribution 'agentrft_fake_good' (entry point 'fake_good')" in msg
    assert "distribution 'agentrft_fake_twin' (entry point 'fake_twin')" in msg
    assert msg.endswith("uninstall one of them")
    with use_plugins(plugins):
        listed = CliRunner().invoke(app, ["tasks"], env={"COLUMNS": "300"})
    assert listed.exit_code == 0, listed.output
    assert "conflict: task 'echo_fake' is provided twice" in listed.output
    sys.modules.pop("agentrft_fake_twin_mod", None)


def test_the_same_class_from_two_plugins_is_no_conflict(tiny_plugins: Any) -> None:
    plugins = load_plugins(
        extra=[
            Returns("agentrft_tasks", [FindNumberTask]),
            Returns("agentrft_tasks", [FindNumberTask]),
        ],
        entry_points=False,
    )
    assert list(plugins.task_classes()) == ["find_number"] and plugins.conflicts() == []


async def test_run_sync_works_inside_a_running_loop() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert run_sync(answer()) == 42  # the test itself runs on a loop
