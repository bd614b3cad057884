"""`agentrft new-task NAME --from-mcp CMD|URL`: a task package wired to a live MCP server's
tools, lint- and type-clean, whose own tests pass against that server; a server that cannot
list its tools writes nothing, and a header's secret is never written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentrft.testing import free_port, wait_for_port

BIN = Path(sys.executable).parent
INVENTORY_TOOLS = ["reset", "load_scenario", "audit", "find_item", "check_stock",
                   "list_suppliers", "reserve_stock", "create_purchase_order"]  # fmt: skip
TOKEN = "tok-5d2c9e81a7f04b36"


def run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **env}
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


def new_task(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "agentrft"), "new-task", *args, "--dir", str(tmp)], tmp)


def test_from_a_stdio_server_the_package_is_clean_and_its_tests_pass(tmp_path: Path) -> None:
    made = new_task(tmp_path, "stock_desk", "--from-mcp",
                    f"{sys.executable} -m agentrft_inventory.server")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"the server lists 8 tools: {', '.join(INVENTORY_TOOLS)}" in made.stdout
    target = tmp_path / "stock_desk"
    task_py = (target / "src/agentrft_stock_desk/task.py").read_text()
    assert "command=sys.executable" in task_py and '"agentrft_inventory.server"' in task_py
    for name in INVENTORY_TOOLS:
        assert f"- `{name}`: " in (target / "README.md").read_text()
    assert 'dependencies = ["agentrft[mcp]>=' in (target / "pyproject.toml").read_text()
    for cmd in (["ruff", "check", "--no-cache", "."], ["ruff", "format", "--check", "--no-cache", "."],
                ["mypy", "--no-incremental"]):  # fmt: skip
        done = run([str(BIN / cmd[0]), *cmd[1:]], target, PYTHONPATH="src")
        assert done.returncode == 0, (cmd, done.stdout + done.stderr)
    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], target,
                PYTHONPATH="src")  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout
    assert "JUDGED = False" in task_py


def test_judged_the_judge_decides_and_its_tests_need_no_network(tmp_path: Path) -> None:
    made = new_task(tmp_path, "judged_desk", "--judged", "--from-mcp",
                    f"{sys.executable} -m agentrft_inventory.server")  # fmt: skip
    assert made.returncode == 0, made.stderr
    target = tmp_path / "judged_desk"
    assert "JUDGED = True" in (target / "src/agentrft_judged_desk/task.py").read_text()
    judge_py = (target / "src/agentrft_judged_desk/judge.py").read_text()
    assert "JUDGED_DESK_JUDGE_MODEL" in judge_py
    for cmd in (["ruff", "check", "--no-cache", "."], ["mypy", "--no-incremental"]):
        done = run([str(BIN / cmd[0]), *cmd[1:]], target, PYTHONPATH="src")
        assert done.returncode == 0, (cmd, done.stdout + done.stderr)
    # No key and an unroutable API: a test that reached the judge model would fail.
    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], target,
                PYTHONPATH="src", OPENAI_API_KEY="", OPENAI_BASE_URL="http://127.0.0.1:9")  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout


def test_from_a_url_the_header_is_used_to_list_and_never_written(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrft_inventory.server", "--http", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, timeout_s=10, process=proc)
        url = f"http://127.0.0.1:{port}/mcp"
        made = new_task(tmp_path, "desk", "--from-mcp", url, "--mcp-header",
                        f"Authorization: Bearer {TOKEN}")  # fmt: skip
        assert made.returncode == 0, made.stderr
        target = tmp_path / "desk"
        written = "".join(p.read_text() for p in target.rglob("*") if p.is_file())
        assert TOKEN not in written
        task_py = (target / "src/agentrft_desk/task.py").read_text()
        assert f'url="{url}"' in task_py and 'os.environ.get("DESK_MCP_HEADERS"' in task_py
        for cmd in (["ruff", "check", "--no-cache", "."], ["mypy", "--no-incremental"]):
            done = run([str(BIN / cmd[0]), *cmd[1:]], target, PYTHONPATH="src")
            assert done.returncode == 0, (cmd, done.stdout + done.stderr)
        tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
                     "offers"], target, PYTHONPATH="src")  # fmt: skip
        assert tests.returncode == 0, tests.stdout + tests.stderr
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--from-mcp", f"{sys.executable} -c 'import sys; sys.exit(2)'"],
         "could not list the server's tools: MCP server 'broken' failed to start"),
        (["--from-mcp", "no-such-command-xyz"], "could not list the server's tools"),
        (["--mcp-header", "A: b"], "--mcp-header goes with --from-mcp"),
        (["--judged"], "--judged goes with --from-mcp"),
        (["--from-mcp", "python -m x", "--mcp-header", "A: b"], "--mcp-header goes with"),
    ],
)  # fmt: skip
def test_bad_servers_and_flags_write_nothing(tmp_path: Path, args: list[str], says: str) -> None:
    made = new_task(tmp_path, "broken", *args)
    assert made.returncode == 1, made.stdout
    assert says in made.stderr, made.stderr
    assert not (tmp_path / "broken").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".broken")]
