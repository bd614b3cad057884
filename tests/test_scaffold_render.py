"""`agentrft new-task` without installing anything: names, rendering, refusals, atomicity.
(The template travelling as package data in a built wheel: tests/test_packaging.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrft.cli import new_task
from agentrft.cli.app import create_app
from agentrft.scaffold import ScaffoldError, TaskNames, create_task, render_files, validate_name

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def cli(*args: str):
    app = create_app(plugins=False)
    new_task.register(app)
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_names_derived_from_the_task_name():
    n = TaskNames.of("my_flow2")
    assert (n.package, n.dist, n.class_name, n.env_class) == (
        "agentrft_my_flow2",
        "agentrft-my-flow2",
        "MyFlow2Task",
        "MyFlow2Env",
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("My-Flow", "not valid: use lowercase letters, digits and underscores"),
        ("MyFlow", "for example 'myflow'"),
        ("2fast", "starting with a letter"),
        ("_private", "starting with a letter"),
        ("my flow", "for example 'my_flow'"),
        ("class", "is a Python keyword"),
        ("match", "is a Python keyword"),
        ("x" * 41, "keep it to 40"),
        ("find_number", "already installed (installed tasks: counter, find_number"),
        ("local", "already taken by entry point 'agentrft.backends.local.plugin'"),
    ],
)
def test_bad_names_are_refused_with_the_fix(name, message):
    with pytest.raises(ScaffoldError, match=message.replace("(", r"\(")):
        validate_name(name, installed_tasks=["counter", "find_number"])


def test_a_name_whose_package_is_importable_is_refused(tmp_path, monkeypatch):
    (tmp_path / "agentrft_taken_name").mkdir()
    (tmp_path / "agentrft_taken_name" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ScaffoldError, match="'agentrft_taken_name' is already importable"):
        validate_name("taken_name", installed_tasks=[])


def test_render_fills_every_placeholder():
    files = render_files(TaskNames.of("my_flow"))
    assert set(map(str, files)) == {
        ".gitignore",
        "README.md",
        "pyproject.toml",
        "src/agentrft_my_flow/__init__.py",
        "src/agentrft_my_flow/plugin.py",
        "src/agentrft_my_flow/task.py",
        "tests/test_my_flow.py",
    }
    for path, text in files.items():
        assert "{{" not in text and "}}" not in text, path
        if path.suffix == ".py":
            compile(text, str(path), "exec")
    meta = tomllib.loads(files[Path("pyproject.toml")])
    assert meta["project"]["name"] == "agentrft-my-flow"
    assert meta["project"]["entry-points"]["agentrft"] == {"my_flow": "agentrft_my_flow.plugin"}
    # The async test of docs/custom-rewards.md works in a new plugin unchanged.
    assert meta["tool"]["pytest"]["ini_options"]["asyncio_mode"] == "auto"
    assert "pytest-asyncio" in " ".join(meta["project"]["optional-dependencies"]["test"])
    assert "async def test_" in files[Path("tests/test_my_flow.py")]
    task = files[Path("src/agentrft_my_flow/task.py")]
    assert (
        "class MyFlowTask(Task[Instance, MyFlowEnv])" in task
        and 'name: ClassVar[str] = "my_flow"' in task
    )
    assert task.count("    @tool\n") == 2


def test_cli_creates_the_plugin_and_prints_next_steps(tmp_path, tiny_plugins):
    result = cli("new-task", "my_flow", "--dir", str(tmp_path / "plugins"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plugins" / "my_flow" / "src" / "agentrft_my_flow" / "task.py").is_file()
    assert "agentrft play --task my_flow --policy expert" in result.output
    # Nothing else in the parent: the staging directory was renamed into place.
    assert os.listdir(tmp_path / "plugins") == ["my_flow"]


def test_cli_refuses_to_overwrite_and_changes_nothing(tmp_path, tiny_plugins):
    target = tmp_path / "my_flow"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    result = cli("new-task", "my_flow", "--dir", str(tmp_path))
    assert result.exit_code == 1
    assert "already exists; new-task never overwrites" in result.output
    assert os.listdir(target) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["my_flow"]


@pytest.mark.parametrize(
    ("name", "message"),
    [("Bad-Name", "is not valid"), ("find_number", "already installed"), ("def", "keyword")],
)
def test_cli_rejects_bad_names_with_exit_1_and_writes_nothing(
    tmp_path, tiny_plugins, name, message
):
    result = cli("new-task", name, "--dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_a_failure_midway_leaves_nothing_behind(tmp_path, monkeypatch):
    written = []
    real_write = Path.write_text

    def flaky_write(self, *args, **kwargs):
        written.append(self)
        if len(written) == 4:
            raise OSError(28, "No space left on device")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", flaky_write)
    with pytest.raises(OSError, match="No space left"):
        create_task("my_flow", tmp_path, installed_tasks=[])
    assert len(written) == 4
    assert os.listdir(tmp_path) == []  # no target, no staging directory


def test_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ScaffoldError, match="is a file, not a directory"):
        create_task("my_flow", f, installed_tasks=[])


@pytest.mark.parametrize(
    "check",
    [
        ["ruff", "check", "--no-cache", "."],
        ["ruff", "format", "--check", "--no-cache", "."],
        ["mypy", "--no-incremental", "--warn-unused-ignores"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_the_rendered_plugin_is_lint_and_type_clean(tmp_path, check):
    """What `new-task` writes passes ruff and mypy under the settings it ships in its own
    pyproject.toml (no `# type: ignore` needed: Task[Instance, Env] types the overrides)."""
    made = create_task("lint_flow", tmp_path, installed_tasks=[])
    text = "\n".join(p.read_text() for p in made.rglob("*.py"))
    assert "type: ignore" not in text and "_run_sync" not in text
    result = subprocess.run(
        [sys.executable, "-m", *check], cwd=made, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
