"""Every command block of docs/getting-started.md runs, so the page cannot drift from the CLI.

Each command line of the page's ```bash blocks is matched by exactly one rule below, which
says how it runs here: as written; as a dry run (training, which takes minutes or a GPU);
against a loopback OpenAI-compatible server (a model server); or without its API key (a
hosted provider, which must then fail with a clear line naming the key). Setup lines are
checked for what they name (the script, the extras). A new line without a rule fails the
test: add the rule with the line. Nothing leaves the machine: connections other than to
127.0.0.1 are refused and recorded, and AWS credentials are fake.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import call
from agentrft.cli.app import create_app
from agentrft.config_files import read_config_file
from agentrft.plugins import load_plugins, use_plugins
from agentrft.testing import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
EXTRAS = set(read_config_file(ROOT / "pyproject.toml")["project"]["optional-dependencies"])


def page_commands() -> list[str]:
    """The command lines of the page's bash blocks: continuations joined, comments dropped."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                lines.append(re.sub(r"\s+", " ", line))
    return lines


@dataclass
class Run:
    """How one agentrft line runs here, and what must hold afterwards."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    says: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


def wordle_guesser(messages: list[Any], tools: Any) -> Any:
    return call("guess_word", {"guess": "crane"})


def plan(line: str, server_url: str) -> Run | None:
    """The rule for an agentrft line (None: no rule)."""
    argv = shlex.split(line)[1:]
    if argv[:1] == ["train"] and "local" in argv:
        return Run([*argv, "--dry-run"], says=("train_rows:",))  # minutes on CPU, or a GPU
    if "http://127.0.0.1:8000/v1" in argv:  # "vLLM, any server": the loopback fake
        swapped = [server_url if a == "http://127.0.0.1:8000/v1" else a for a in argv]
        return Run(swapped, says=("Guess 1/6: CRANE",))
    if any(a.startswith("openai:") for a in argv):
        env = {"OPENAI_BASE_URL": server_url, "OPENAI_API_KEY": "sk-test-not-a-real-key"}
        return Run(argv, env=env, says=("Guess 1/6: CRANE",))
    if any(a.startswith("litellm:anthropic/") for a in argv):  # no key here: a clear error
        return Run(argv, exit_code=1, says=("the policy never answered", "ANTHROPIC_API_KEY"))
    if argv[:1] == ["eval"]:
        return Run(argv, says=("solve rate",), writes=("report.json", "runs.jsonl"))
    if argv[:2] == ["reward", "check"]:
        return Run(argv, says=("ok: reward order holds",))
    if argv[:1] == ["tasks"]:
        return Run(argv, says=("wordle", "ticket_triage"))
    if argv[:1] == ["play"]:
        return Run(argv, says=("outcome tier",))
    if argv[:1] == ["deploy"] and "--dry-run" in argv:
        return Run(argv, says=("Requests validated against botocore",))
    if argv[:1] == ["train"] and "sagemaker" in argv and "--dry-run" in argv:
        return Run(argv, says=("CreateJob request (dry run", "AcceptEula: true in every job"))
    return None


def check_setup_line(line: str) -> bool:
    """Setup lines name things that must exist (CI runs scripts/setup.sh itself)."""
    if line.startswith(("git clone ", "source .venv/bin/activate")):
        return True
    if m := re.fullmatch(r"(?:AGENTRFT_EXTRAS=(\S+) )?bash scripts/setup.sh", line):
        assert (ROOT / "scripts" / "setup.sh").is_file()
        assert set((m.group(1) or "local").split(",")) <= EXTRAS, line
        return True
    if m := re.fullmatch(r"pip install (?:agentrft|'agentrft\[(\w+)\]')", line):
        assert m.group(1) is None or m.group(1) in EXTRAS, line
        return True
    return False


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Any]]:
    """Fake AWS credentials, no AWS config, and no connection off this machine."""
    monkeypatch.chdir(tmp_path)
    for var in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY", "OPENAI_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTRFTTEST0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    refused: list[Any] = []
    connect = socket.socket.connect

    def local_only(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            refused.append(address)
            raise OSError(f"the test allows no connection off this machine: {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    yield refused


def test_every_command_of_the_page_runs(outside: list[Any], tmp_path: Path) -> None:
    for plugin in ("agentrft_wordle", "agentrft_ticket_triage", "boto3", "torch"):
        pytest.importorskip(plugin)
    lines = page_commands()
    assert len(lines) >= 12, lines
    runner = CliRunner()
    ran: list[str] = []
    with FakeOpenAIServer(wordle_guesser) as server, use_plugins(load_plugins()):
        app = create_app(plugins=True)
        for line in lines:
            if not line.startswith("agentrft "):
                assert check_setup_line(line), f"no rule for the page's line: {line}"
                continue
            run = plan(line, server.base_url)
            assert run is not None, f"no rule for the page's line: {line}"
            result = runner.invoke(
                app, run.argv, env={"COLUMNS": "200", "NO_COLOR": "1", **run.env}
            )
            assert result.exit_code == run.exit_code, (line, result.output)
            for text in run.says:
                assert text in result.output, (line, text, result.output[-2000:])
            for name in run.writes:
                assert (tmp_path / name).stat().st_size > 0, (line, name)
            ran.append(line)
    assert outside == [], outside
    assert any(" --backend sagemaker " in f" {line} " for line in ran)
    assert any(line.startswith("agentrft deploy") for line in ran)
    report = json.loads((tmp_path / "report.json").read_text())
    assert "wordle" in json.dumps(report)
